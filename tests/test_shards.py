"""The Nx-style list API: shard cuts an array into one block per device, pmap_shards runs a
function on every device's arguments and leaves each result on its device, stack gathers
blocks back; expected values come from NumPy slicing and loops."""

import math

import numpy as np
import pytest

import spmd
from spmd import SingleDeviceSharding

lax = spmd.lax


def ceil_blocks(x, k, axis):
    """x cut along ``axis`` into k blocks of ceil(size / k), the tail smaller or empty."""
    size = x.shape[axis]
    chunk = math.ceil(size / k)
    blocks = []
    for i in range(k):
        start, stop = min(i * chunk, size), min((i + 1) * chunk, size)
        blocks.append(np.take(x, range(start, stop), axis=axis))
    return blocks


def device_of(array):
    assert isinstance(array.sharding, SingleDeviceSharding)
    (device,) = array.sharding.device_set
    return device


def test_num_shards_is_the_local_device_count():
    assert spmd.num_shards() == len(spmd.local_devices()) == 8


# --- shard ----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 5, 8, 10, 17])
@pytest.mark.parametrize("count", [1, 3, 8])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_shard_cuts_ceil_sized_blocks_one_per_device(size, count, axis):
    rng = np.random.default_rng([size, count, axis + 2])
    shape = [3, 2]
    shape[axis] = size
    x = rng.standard_normal(shape)
    devices = spmd.devices()[:count]
    blocks = spmd.shard(x, axis=axis, devices=devices)
    want = ceil_blocks(x, count, axis % 2)
    assert len(blocks) == count
    for block, expected, device in zip(blocks, want, devices, strict=True):
        assert isinstance(block, spmd.Array)
        assert block.sharding == SingleDeviceSharding(device)
        assert block.shape == expected.shape and block.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(block), expected)


def test_shard_defaults_to_every_local_device_along_axis_0():
    x = np.arange(20, dtype=np.int32).reshape(10, 2)
    blocks = spmd.shard(x)
    assert [b.shape for b in blocks] == [(2, 2)] * 5 + [(0, 2)] * 3
    assert [device_of(b) for b in blocks] == spmd.local_devices()
    for block, expected in zip(blocks, ceil_blocks(x, 8, 0), strict=True):
        np.testing.assert_array_equal(np.asarray(block), expected)


def test_shard_follows_the_order_of_the_devices_given():
    chosen = [spmd.devices()[i] for i in (6, 2, 7, 0)]
    x = np.arange(16.0)
    blocks = spmd.shard(x, devices=chosen)
    assert [device_of(b) for b in blocks] == chosen
    for i, block in enumerate(blocks):
        np.testing.assert_array_equal(np.asarray(block), x[4 * i : 4 * i + 4])


def test_shard_of_a_sharded_array():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    data = np.arange(24).reshape(6, 4)
    x = spmd.device_put(data, spmd.NamedSharding(mesh, spmd.P("y", "x")))
    blocks = spmd.shard(x, axis=1, devices=spmd.devices()[:2])
    np.testing.assert_array_equal(np.asarray(blocks[0]), data[:, :2])
    np.testing.assert_array_equal(np.asarray(blocks[1]), data[:, 2:])
    assert [device_of(b) for b in blocks] == spmd.devices()[:2]


def test_shard_errors():
    with pytest.raises(spmd.ShapeError, match="at least one dimension"):
        spmd.shard(3.0)
    with pytest.raises(spmd.ShapeError, match=r"axis 1 is out of range.*rank 1"):
        spmd.shard(np.ones(3), axis=1)
    with pytest.raises(spmd.ShapeError, match=r"axis -3 is out of range.*rank 2"):
        spmd.shard(np.ones((3, 2)), axis=-3)
    with pytest.raises(spmd.ShardingError, match="once"):
        spmd.shard(np.ones(4), devices=[spmd.devices()[0]] * 2)
    with pytest.raises(spmd.ShardingError, match="empty"):
        spmd.shard(np.ones(4), devices=[])


# --- pmap_shards ----------------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 5, 8])
def test_pmap_shards_runs_f_on_each_devices_arguments(count):
    rng = np.random.default_rng(count)
    xs = [rng.integers(-9, 9, size=(3, 4)).astype(np.float64) for _ in range(count)]
    ws = [rng.integers(-9, 9, size=(4,)).astype(np.float64) for _ in range(count)]
    results = spmd.pmap_shards(
        lambda x, w: x @ w + 1, [(x, w) for x, w in zip(xs, ws, strict=True)]
    )
    assert isinstance(results, list) and len(results) == count
    for i, result in enumerate(results):
        assert device_of(result) == spmd.devices()[i]
        np.testing.assert_array_equal(np.asarray(result), xs[i] @ ws[i] + 1)


def test_pmap_shards_keeps_results_on_the_devices_of_the_shards():
    x = np.arange(32, dtype=np.int32).reshape(8, 4)
    blocks = spmd.shard(x, devices=spmd.devices()[:4])
    results = spmd.pmap_shards(lambda v: v * v, [(b,) for b in blocks])
    assert [device_of(r) for r in results] == [device_of(b) for b in blocks]
    for result, block in zip(results, ceil_blocks(x, 4, 0), strict=True):
        np.testing.assert_array_equal(np.asarray(result), block * block)
        assert result.dtype == np.int32


def test_pmap_shards_accepts_single_arguments_without_a_tuple():
    results = spmd.pmap_shards(lambda v: v - 1, [np.full(2, 3.0), np.full(2, 7.0)])
    np.testing.assert_array_equal(np.asarray(results[0]), [2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(results[1]), [6.0, 6.0])


@pytest.mark.parametrize("count", [1, 3, 8])
def test_collectives_over_the_axis_name_span_the_shards(count):
    rng = np.random.default_rng([count, 1])
    xs = [rng.integers(-9, 9, size=(2, 3)).astype(np.float64) for _ in range(count)]

    def f(v):
        return lax.psum(v, "d"), v * 0 + lax.axis_index("d"), lax.all_gather(v, "d")

    results = spmd.pmap_shards(f, [(x,) for x in xs], axis_name="d")
    total = np.zeros((2, 3))
    for x in xs:
        total = total + x
    for i, (summed, index, gathered) in enumerate(results):
        np.testing.assert_array_equal(np.asarray(summed), total)
        np.testing.assert_array_equal(np.asarray(index), np.full((2, 3), float(i)))
        np.testing.assert_array_equal(np.asarray(gathered), np.stack(xs))
        assert {device_of(summed), device_of(index), device_of(gathered)} == {spmd.devices()[i]}


def test_ppermute_between_shards_rotates_the_blocks():
    xs = [np.full(3, float(i)) for i in range(4)]
    perm = [(i, (i + 1) % 4) for i in range(4)]
    results = spmd.pmap_shards(lambda v: lax.ppermute(v, "ring", perm), xs, axis_name="ring")
    for i, result in enumerate(results):
        np.testing.assert_array_equal(np.asarray(result), xs[(i - 1) % 4])


def test_pmap_shards_with_pytree_arguments_and_results():
    shards = [({"a": np.full(2, float(i)), "b": (np.arange(2.0), i * 1.0)},) for i in range(3)]

    def f(tree):
        return {"sum": tree["a"] + tree["b"][0], "scaled": [tree["a"] * tree["b"][1]]}

    results = spmd.pmap_shards(f, shards)
    for i, result in enumerate(results):
        assert set(result) == {"sum", "scaled"}
        np.testing.assert_array_equal(
            np.asarray(result["sum"]), np.full(2, float(i)) + np.arange(2.0)
        )
        np.testing.assert_array_equal(np.asarray(result["scaled"][0]), np.full(2, float(i * i)))
        assert device_of(result["sum"]) == spmd.devices()[i]


def test_pmap_shards_with_scalar_results():
    results = spmd.pmap_shards(lambda v: v.sum(), [np.full(2, 1.0), np.full(2, 2.0)])
    assert [r.shape for r in results] == [(), ()]
    np.testing.assert_array_equal(np.asarray(results[0]), 2.0)
    np.testing.assert_array_equal(np.asarray(results[1] + 1), 5.0)
    np.testing.assert_array_equal(np.asarray(spmd.stack(results)), [2.0, 4.0])


def test_chained_pmap_shards_move_no_data():
    x = np.arange(48.0).reshape(8, 6)
    blocks = spmd.shard(x)
    first = spmd.pmap_shards(lambda v: v * 2, [(b,) for b in blocks])
    with spmd.debug.count_collectives() as counts:
        second = spmd.pmap_shards(lambda v: v + 1, [(r,) for r in first])
        third = spmd.pmap_shards(lambda v, w: v * w, list(zip(second, first, strict=True)))
    assert counts.total == 0
    assert [device_of(r) for r in third] == [device_of(b) for b in blocks]
    for i, result in enumerate(third):
        block = x[i : i + 1]
        np.testing.assert_array_equal(np.asarray(result), (block * 2 + 1) * (block * 2))


def test_numpy_arguments_join_the_device_of_their_shard():
    on_device = [spmd.device_put(np.full(2, float(i)), spmd.devices()[i]) for i in range(3)]
    shards = [(a, np.full(2, 10.0)) for a in on_device]
    results = spmd.pmap_shards(lambda a, b: a + b, shards)
    for i, result in enumerate(results):
        assert device_of(result) == spmd.devices()[i]
        np.testing.assert_array_equal(np.asarray(result), np.full(2, 10.0 + i))


def test_pmap_shards_on_reversed_devices_returns_each_result_in_its_place():
    x = np.arange(8.0)
    blocks = spmd.shard(x, devices=spmd.devices()[::-1])
    results = spmd.pmap_shards(lambda v: v + 1, [(b,) for b in blocks])
    assert [device_of(r) for r in results] == spmd.devices()[::-1]
    assert [np.asarray(r).tolist() for r in results] == [[x[i] + 1] for i in range(8)]


def test_pmap_shards_on_devices_other_than_the_first_ones():
    blocks = spmd.shard(np.arange(8.0), devices=spmd.devices()[4:])
    results = spmd.pmap_shards(lambda v: v * 3, [(b,) for b in blocks])
    assert [device_of(r) for r in results] == spmd.devices()[4:]
    want = [[0.0, 3.0], [6.0, 9.0], [12.0, 15.0], [18.0, 21.0]]
    assert [np.asarray(r).tolist() for r in results] == want


def test_pmap_shards_errors():
    ones = np.ones(2)
    with pytest.raises(spmd.ShapeError, match=r"int64\[0\] on device 5 but int64\[2\] on device 0"):
        spmd.pmap_shards(lambda v: v, [(b,) for b in spmd.shard(np.arange(10))])
    with pytest.raises(spmd.ShapeError, match=r"int32\[2\] on device 1.*float64\[2\] on device 0"):
        spmd.pmap_shards(lambda v: v, [(ones,), (np.ones(2, np.int32),)])
    with pytest.raises(spmd.ShapeError, match="9 shards but this process has 8 devices"):
        spmd.pmap_shards(lambda v: v, [(ones,)] * 9)
    block = spmd.device_put(ones, spmd.devices()[0])
    with pytest.raises(spmd.ShapeError, match="each shard needs its own device"):
        spmd.pmap_shards(lambda v: v, [(block,), (block,)])
    with pytest.raises(spmd.SpmdTypeError, match="non-empty list"):
        spmd.pmap_shards(lambda v: v, [])
    with pytest.raises(spmd.SpmdTypeError, match="non-empty list"):
        spmd.pmap_shards(lambda v: v, ones)
    with pytest.raises(spmd.SpmdTypeError, match="arguments of one structure"):
        spmd.pmap_shards(lambda *v: v[0], [(ones,), (ones, ones)])
    with pytest.raises(spmd.AxisNameError, match="'nope'"):
        spmd.pmap_shards(lambda v: lax.psum(v, "nope"), [(ones,), (ones,)], axis_name="d")


# --- stack ----------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack_has_numpy_stack_semantics(axis):
    rng = np.random.default_rng(axis + 3)
    parts = [rng.standard_normal((2, 3)) for _ in range(4)]
    on_devices = [spmd.device_put(p, spmd.devices()[7 - i]) for i, p in enumerate(parts)]
    out = spmd.stack(on_devices, axis=axis)
    assert isinstance(out, spmd.Array)
    want = np.stack(parts, axis=axis)
    np.testing.assert_array_equal(np.asarray(out), want)
    assert out.shape == want.shape


def test_stack_gathers_the_results_of_pmap_shards():
    x = np.arange(24.0).reshape(8, 3)
    results = spmd.pmap_shards(lambda v: v.sum(axis=0), [(b,) for b in spmd.shard(x)])
    out = spmd.stack(results)
    np.testing.assert_array_equal(np.asarray(out), [x[i] for i in range(8)])  # blocks of 1 row
    assert out.shape == (8, 3)


def test_stack_of_scalars_and_numpy_values():
    out = spmd.stack([spmd.device_put(np.float64(1.5), spmd.devices()[3]), np.float64(2.5)])
    np.testing.assert_array_equal(np.asarray(out), [1.5, 2.5])
    assert out.dtype == np.float64


def test_stack_errors():
    with pytest.raises(spmd.ShapeError, match="at least one array"):
        spmd.stack([])
    with pytest.raises(spmd.ShapeError, match=r"one shape.*\[\(2,\), \(3,\)\]"):
        spmd.stack([np.ones(2), np.ones(3)])
    with pytest.raises(spmd.ShapeError, match="one shape"):
        spmd.stack(spmd.shard(np.arange(10)))


def test_stack_with_an_out_of_range_axis_raises_an_spmd_error():
    with pytest.raises(spmd.SpmdError, match="axis"):
        spmd.stack([np.ones(2), np.ones(2)], axis=3)
