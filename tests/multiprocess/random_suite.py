"""The ``random`` suite: tests/test_random_sharded.py's cases across processes. Each
sampler, shape, mesh and spec computes its blocks with no collective, equal bit for bit to
the unsharded numbers; the key goes in as spmd.random.key made it on this process, and put
replicated on the mesh as the test puts it."""

from __future__ import annotations

import itertools

import numpy as np

import spmd
from spmd import NamedSharding, P
from spmd.debug import count_collectives
from tests import test_random_sharded
from tests.multiprocess.checks import gathered
from tests.multiprocess.tally import Tally


def run(tally: Tally) -> None:
    for i, param in enumerate(test_random_sharded.CASES):
        if tally.sampled(i):
            tally.covered[param.values[2]] += 1
            tally.check(f"random {param.id}", run_sampler, *param.values)
    for mesh_id in test_random_sharded.MESHES:
        tally.check(f"random out_shardings on {mesh_id}", run_out_shardings, mesh_id)


def keys(key, mesh) -> tuple:
    """``key`` as made, and put replicated on ``mesh``."""
    return key, spmd.device_put(key, NamedSharding(mesh, P()))


def run_sampler(mesh_id, shape, sampler) -> None:
    """test_each_device_computes_its_block_of_the_unsharded_numbers, reading the results
    across processes."""
    mesh = spmd.make_mesh(*test_random_sharded.MESHES[mesh_id])
    draw = test_random_sharded.SAMPLERS[sampler]
    key = spmd.random.key(42)
    expected = np.asarray(draw(key, shape))  # unsharded, on this process's first device
    specs = test_random_sharded.specs_for(mesh, len(shape))
    for spec, k in itertools.product(specs, keys(key, mesh)):
        target = NamedSharding(mesh, spec)

        def f(k, target=target):
            return spmd.lax.with_sharding_constraint(draw(k, shape), target)

        with count_collectives() as ran:
            result = spmd.jit(f)(k)
        assert ran.total == 0, (spec, dict(ran))
        assert result.sharding == target
        (whole,) = gathered([result])
        test_random_sharded.assert_same_bits(whole, expected)
        for shard in result.addressable_shards:
            test_random_sharded.assert_same_bits(shard.data, expected[shard.index])


def run_out_shardings(mesh_id) -> None:
    """test_out_shardings_take_blocks_of_the_numbers_with_no_collective on one mesh."""
    shape, names = test_random_sharded.MESHES[mesh_id]
    mesh = spmd.make_mesh(shape, names)
    key = spmd.random.key(7)
    expected = np.asarray(spmd.random.uniform(key, (16, 8)))
    target = NamedSharding(mesh, P(names[-1]))
    f = spmd.jit(lambda k: spmd.random.uniform(k, (16, 8)), out_shardings=target)
    for k in keys(key, mesh):
        with count_collectives() as ran:
            result = f(k)
        assert ran.total == 0 and result.sharding == target
        (whole,) = gathered([result])
        test_random_sharded.assert_same_bits(whole, expected)
