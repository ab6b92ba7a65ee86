"""The ``partition`` suite: rows of the case table on every mesh of tests/test_partition.py
(the one-device mesh too, whose work only the first process takes part in), with the random
specs, host inputs and out_shardings that test_rows_match_numpy_on_sharded_inputs draws.

Eager-only rows (EAGER_ONLY in tests/cases/table.py) run eagerly: their result equals NumPy's,
or, where an input has blocks held by other processes alone, they may raise DistributedError
(they read the whole input on the host, and JAX's eager calls cannot fetch such an array
either); inputs this process holds entirely must give the result."""

from __future__ import annotations

import numpy as np

import spmd
import spmd.numpy as snp
from spmd import NamedSharding
from tests import test_partition
from tests.cases import FAMILIES, assert_matches
from tests.multiprocess.checks import check_shards, gathered
from tests.multiprocess.tally import Tally


def run(tally: Tally) -> None:
    for m, mesh_id in enumerate(test_partition.MESHES):
        mesh = test_partition.mesh_of(mesh_id)
        for family in FAMILIES:
            for i, (case, draw) in enumerate(test_partition.sampled_rows(mesh_id, family)):
                if tally.sampled(i, m):
                    count_row(tally, mesh, family, draw)
                    check = run_eager_row if case.eager_only else run_row
                    tally.check(f"mesh {mesh_id} {case.id} {draw}", check, case, draw, mesh)


def count_row(tally: Tally, mesh, family: str, draw) -> None:
    tally.covered[family] += 1
    found = [
        test_partition.splits(mesh, x.shape, spec)
        for x, spec, on_host in zip(draw.inputs, draw.specs, draw.host, strict=True)
        if not on_host
    ]
    tally.covered["uneven"] += any(u for u, _ in found)
    tally.covered["empty blocks"] += any(e for _, e in found)
    tally.covered["out_shardings"] += draw.out is not None


def run_eager_row(case, draw, mesh) -> None:
    args = [
        x if on_host else test_partition.put(x, mesh, spec)
        for x, spec, on_host in zip(draw.inputs, draw.specs, draw.host, strict=True)
    ]
    try:
        result = case.fn(snp, *args)
    except spmd.DistributedError:
        if all(isinstance(a, np.ndarray) or a.is_fully_addressable for a in args):
            raise  # every block is here: nothing stops reading them
        return
    assert_matches(
        result, draw.expected, case.values, test_partition.tolerance_scale(draw.expected)
    )


def run_row(case, draw, mesh) -> None:
    """tests/test_partition.py's run_sharded_row and assert_valid_array, reading the results
    across processes."""
    args = [
        x if on_host else test_partition.put(x, mesh, spec)
        for x, spec, on_host in zip(draw.inputs, draw.specs, draw.host, strict=True)
    ]
    target = None if draw.out is None else NamedSharding(mesh, draw.out)
    result = spmd.jit(lambda *a: case.fn(snp, *a), out_shardings=target)(*args)
    scale = test_partition.tolerance_scale(draw.expected)
    assert_matches(result, draw.expected, values=False)  # container, dtypes and shapes
    results, expected = test_partition.leaves(result), test_partition.leaves(draw.expected)
    on_mesh = draw.out is not None or not all(draw.host)
    if on_mesh:
        wholes = gathered(results, case.values)
    else:  # host inputs only: each process computed the whole value on its own device
        wholes = [np.asarray(r) for r in results]
        for result, whole in zip(results, wholes, strict=True):
            check_shards(result, whole, case.values)
    for got, whole, want in zip(results, wholes, expected, strict=True):
        want = np.asarray(want)
        if on_mesh:
            assert isinstance(got.sharding, NamedSharding), got.sharding
            assert got.sharding.mesh == mesh, got.sharding
        # assert_matches reads an Array: the whole value, on this process's first device
        assert_matches(spmd.device_put(whole, spmd.local_devices()[0]), want, case.values, scale)
        if case.values:
            for shard in got.addressable_shards:
                assert_matches(shard.data, want[shard.index], True, scale)
    if draw.out is not None:
        assert result.sharding.spec.dims(result.ndim) == draw.out.dims(result.ndim)
