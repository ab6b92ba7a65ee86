"""Property tests of layouts: replication, round trips, shard shapes, resharding, transfer plans."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import spmd
from spmd.sharding.transfer import moved_bytes, plan_builds, plan_transfer
from tests.strategies import any_shardings, arrays, shapes, shardings


def chunks(n: int, k: int) -> list[range]:
    """Oracle for one dimension: ceil(n/k)-sized chunks of range(n), the tail short or empty."""
    size = -(-n // k)
    return [range(n)[i * size : (i + 1) * size] for i in range(k)]


def coverage(shape, indices) -> np.ndarray:
    counts = np.zeros(shape, dtype=np.int64)
    for index in indices:
        counts[index] += 1
    return counts


@given(st.integers(0, 40), st.integers(1, 9))
def test_block_bounds_are_ceil_sized_chunks(n, k):
    from spmd.sharding.layout import block_bounds

    got = [range(*block_bounds(n, k, i)) for i in range(k)]
    assert got == chunks(n, k)


@st.composite
def placed(draw):
    shape = draw(shapes)
    return draw(arrays(shape)), draw(shardings(len(shape)))


@given(placed())
def test_every_element_is_held_by_as_many_devices_as_the_replication_factor(case):
    x, sharding = case
    counts = coverage(x.shape, sharding.devices_indices_map(x.shape).values())
    factor = sharding.mesh.size // math.prod(
        sharding.mesh.axis_size(a) for a in sharding.spec.axis_names
    )
    assert factor == sharding.replication_factor
    assert (counts == factor).all()


@given(placed())
def test_device_put_round_trips_exactly_and_each_shard_holds_its_index(case):
    x, sharding = case
    a = spmd.device_put(x, sharding)
    back = np.asarray(a)
    assert back.dtype == x.dtype and back.shape == x.shape
    np.testing.assert_array_equal(back, x)
    assert a.sharding == sharding
    assert len(a.addressable_shards) == sharding.num_devices
    for shard in a.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
        assert not shard._buffer.flags.writeable
        assert not np.shares_memory(shard._buffer, x)


@given(placed())
def test_shard_shape_is_the_leading_shard_and_bounds_every_other(case):
    x, sharding = case
    a = spmd.device_put(x, sharding)
    largest = sharding.shard_shape(x.shape)
    shard_shapes = [s.data.shape for s in a.addressable_shards]
    layout = sharding.layout(x.shape)
    for dim, (n, k) in enumerate(zip(x.shape, layout.parts, strict=True)):
        assert largest[dim] == len(chunks(n, k)[0])
        sizes = {shape[dim] for shape in shard_shapes}
        assert max(sizes) == largest[dim]
        assert sizes <= {len(c) for c in chunks(n, k)}
        if n % k == 0:
            assert sizes == {n // k}


@given(placed())
def test_replica_ids_number_the_holders_of_each_block_from_zero(case):
    x, sharding = case
    a = spmd.device_put(x, sharding)
    by_index: dict = {}
    for shard in a.addressable_shards:
        key = tuple((s.start, s.stop) for s in shard.index)
        by_index.setdefault(key, []).append(shard.replica_id)
    factor = sharding.replication_factor
    for ids in by_index.values():  # empty blocks of several devices share one index
        assert sorted(ids) == sorted(list(range(factor)) * (len(ids) // factor))


@st.composite
def resharded(draw):
    shape = draw(shapes)
    return draw(arrays(shape)), draw(any_shardings(len(shape))), draw(any_shardings(len(shape)))


@given(resharded())
def test_resharding_between_any_two_shardings_round_trips(case):
    x, first, second = case
    a = spmd.device_put(spmd.device_put(x, first), second)
    assert a.sharding == second
    np.testing.assert_array_equal(np.asarray(a), x)
    for shard in a.addressable_shards:
        assert shard.data.shape == x[shard.index].shape
        np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
        assert not shard._buffer.flags.writeable


@given(resharded())
def test_transfer_plan_tiles_each_block_and_moves_only_what_the_device_lacks(case):
    x, first, second = case
    src, dst = first.layout(x.shape), second.layout(x.shape)
    plan = plan_transfer(src, dst, x.itemsize)
    src_index = first.devices_indices_map(x.shape)
    expected_moved = 0
    for device, index in second.devices_indices_map(x.shape).items():
        block = np.zeros(x.shape, dtype=bool)
        block[index] = True
        own = np.zeros(x.shape, dtype=bool)
        if device in src_index:
            own[src_index[device]] = True
        expected_moved += int((block & ~own).sum()) * x.itemsize
        pieces = [c for c in plan.copies if c.dst == device]
        counts = coverage(plan.dst_shapes[device], [c.dst_index for c in pieces])
        assert (counts == 1).all(), "pieces must tile the destination block exactly once"
    assert plan.bytes_moved == expected_moved
    assert moved_bytes(src, dst, x.itemsize) == expected_moved
    builds = plan_builds(src, dst, x.itemsize)
    assert set(builds.dst_shapes) == set(dst.builders.values())
    assert all(c in plan.copies for c in builds.copies)


def test_gathering_a_row_split_vector_moves_what_each_device_lacks():
    mesh = spmd.make_mesh((8,), ("x",))
    x = spmd.device_put(np.arange(8.0), spmd.NamedSharding(mesh, spmd.P("x")))
    replicated = spmd.NamedSharding(mesh, spmd.P())
    plan = plan_transfer(x.sharding.layout((8,)), replicated.layout((8,)), 8)
    assert plan.bytes_moved == 8 * 7 * 8  # each of 8 devices fetches 7 float64s
    assert plan.bytes_copied_locally == 8 * 8
    assert str(plan).splitlines()[0] == "TransferPlan: 64 copies, 448 bytes moved"
    np.testing.assert_array_equal(np.asarray(spmd.device_put(x, replicated)), np.arange(8.0))
