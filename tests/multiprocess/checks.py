"""Reading results the multi-process way: every process checks that it holds exactly its
devices' shards, at the indices tests/test_shard_map.py's coordinate reference gives, each
equal to its slice of the whole value gathered with ``process_allgather``. Also the seeding
that draws inputs alike on every process."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

import spmd
from spmd import NamedSharding
from spmd.multihost_utils import process_allgather
from tests import test_shard_map as shard_map_tests


def spans_every_process(devices) -> bool:
    return {d.process_index for d in devices} == set(range(spmd.process_count()))


def device_order(sharding) -> list:
    if isinstance(sharding, NamedSharding):
        return list(sharding.mesh.devices.flat)
    return list(sharding.device_set)


def reference_index(sharding, device, shape) -> tuple[slice, ...]:
    """Where ``device``'s block of a ``shape`` value lies, by tests/test_shard_map.py's
    coordinate reference (ceil-sized blocks, mesh axes major to minor)."""
    if not isinstance(sharding, NamedSharding):
        return tuple(slice(0, n) for n in shape)
    mesh = sharding.mesh
    coord = next(c for c, d in np.ndenumerate(mesh.devices) if d == device)
    return shard_map_tests.block_slices(mesh, coord, sharding.spec, shape)


def same_index(a, b, shape) -> bool:
    return all(
        range(*x.indices(n)) == range(*y.indices(n)) for x, y, n in zip(a, b, shape, strict=True)
    )


def check_shards(result, whole: np.ndarray, values: bool = True) -> None:
    """This process holds exactly its devices' shards of ``result``, in the sharding's device
    order, each at its reference index and (if ``values``) equal to that slice of ``whole``."""
    here = spmd.process_index()
    mine = [d for d in device_order(result.sharding) if d.process_index == here]
    shards = result.addressable_shards
    held = [s.device for s in shards]
    assert held == mine, f"process {here} holds shards on {held}, its devices are {mine}"
    for shard in shards:
        index = reference_index(result.sharding, shard.device, result.shape)
        assert same_index(shard.index, index, result.shape), (shard.device, shard.index, index)
        data = np.asarray(shard.data)
        assert data.shape == whole[index].shape, (shard.device, data.shape, whole[index].shape)
        if values:
            np.testing.assert_array_equal(data, whole[index], err_msg=str(shard.device))


def gathered(results: Sequence, values: bool = True) -> list[np.ndarray]:
    """The whole value of each result Array, on every process, after checking its shards
    here. Every process must call it alike: ``process_allgather`` is a collective."""
    wholes = process_allgather(list(results))
    for result, whole in zip(results, wholes, strict=True):
        check_shards(result, whole, values)
    return wholes


def seeded(*key) -> np.random.Generator:
    """A generator from ``key`` alone (not ``hash``, which differs between processes)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))
