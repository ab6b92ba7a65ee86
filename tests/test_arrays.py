"""Arrays: metadata, conversion, display, immutability, and the ways to build them."""

import numpy as np
import pytest

import spmd
from spmd import NamedSharding, P, SingleDeviceSharding


@pytest.fixture
def mesh():
    return spmd.make_mesh((2, 4), ("x", "y"))


def test_array_metadata(mesh):
    x = spmd.device_put(np.zeros((4, 8), np.float32), NamedSharding(mesh, P("x", "y")))
    assert (x.shape, x.dtype, x.ndim, x.size, x.nbytes) == ((4, 8), np.float32, 2, 32, 128)
    assert x.devices() == set(spmd.devices()) and not x.is_fully_replicated
    assert x.block_until_ready() is x
    assert [s.device.id for s in x.addressable_shards] == list(range(8))


def test_python_data_follows_numpy_defaults():
    assert spmd.device_put(1.5).dtype == np.float64
    assert spmd.device_put(3).dtype == np.asarray(3).dtype
    assert spmd.device_put(True).dtype == np.bool_
    assert spmd.device_put([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    x = spmd.device_put(np.arange(3))
    assert x.sharding == SingleDeviceSharding(spmd.devices()[0])


def test_device_put_on_a_device_and_of_a_pytree(mesh):
    d3 = spmd.devices()[3]
    assert spmd.device_put(np.ones(2), d3).devices() == {d3}
    tree = {"w": np.ones((4, 2)), "b": [np.zeros(8), np.ones(2)]}
    placed = spmd.device_put(tree, NamedSharding(mesh, P("x")))
    assert placed["w"].sharding.spec == P("x") and placed["b"][1].shape == (2,)
    prefix = {"w": NamedSharding(mesh, P("x")), "b": d3}
    placed = spmd.device_put(tree, prefix)
    assert placed["b"][0].devices() == {d3} and placed["w"].sharding.mesh == mesh


def test_repr_reads_like_jax():
    x = spmd.device_put(np.array([1.0, 2.0], np.float32))
    assert repr(x) == "Array([1., 2.], dtype=float32)"
    assert repr(spmd.device_put(np.int32(7))) == "Array(7, dtype=int32)"
    assert repr(spmd.device_put(np.zeros((0, 3), np.float32))) == (
        "Array([], shape=(0, 3), dtype=float32)"
    )
    assert str(x) == "[1. 2.]" and f"{spmd.device_put(2.5):.2f}" == "2.50"


def test_len_iter_tolist_and_scalars(mesh):
    x = spmd.device_put(np.arange(12).reshape(4, 3), NamedSharding(mesh, P("x")))
    assert len(x) == 4 and x.tolist() == np.arange(12).reshape(4, 3).tolist()
    rows = list(x)
    assert [r.tolist() for r in rows] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    assert rows[0].sharding == NamedSharding(mesh, P())
    s = spmd.device_put(np.float32(2.5))
    assert float(s) == 2.5 and int(s) == 2 and bool(s) and s.item() == 2.5
    with pytest.raises(TypeError, match="0-d"):
        len(s)
    with pytest.raises(TypeError, match="0-d"):
        iter(s)


def test_arrays_are_immutable_and_independent_of_their_source(mesh):
    data = np.arange(8.0)
    x = spmd.device_put(data, NamedSharding(mesh, P()))
    data[0] = 100.0
    assert np.asarray(x)[0] == 0.0
    with pytest.raises(spmd.SpmdTypeError, match="immutable"):
        x[0] = 1.0
    with pytest.raises(ValueError):
        np.asarray(x)[0] = 1.0
    for shard in x.addressable_shards:  # NumPy marks buffers read-only; other libraries
        if shard.device.backend == "numpy":  # cannot, and buffers are immutable by ownership
            with pytest.raises(ValueError):
                shard._buffer[0] = 1.0
    with pytest.raises(spmd.SpmdTypeError, match="device_put"):
        spmd.Array()


def test_resharding_to_the_same_sharding_returns_the_array(mesh):
    s = NamedSharding(mesh, P("x"))
    x = spmd.device_put(np.ones((4, 4)), s)
    assert spmd.device_put(x, s) is x
    assert spmd.device_put(x) is x


def test_make_array_from_callback_calls_once_per_distinct_block(mesh):
    data = np.arange(40.0).reshape(5, 8)
    seen = []

    def cb(index):
        seen.append(index)
        return data[index]

    x = spmd.make_array_from_callback((5, 8), NamedSharding(mesh, P("x")), cb)
    np.testing.assert_array_equal(np.asarray(x), data)
    assert seen == [(slice(0, 3), slice(None)), (slice(3, 5), slice(None))]


def test_make_array_from_single_device_arrays(mesh):
    s = NamedSharding(mesh, P("x", "y"))
    x = spmd.device_put(np.arange(45).reshape(5, 9), s)
    shards = [shard.data for shard in x.addressable_shards]
    rebuilt = spmd.make_array_from_single_device_arrays((5, 9), s, shards[::-1])
    np.testing.assert_array_equal(np.asarray(rebuilt), np.arange(45).reshape(5, 9))
    from_numpy = spmd.make_array_from_single_device_arrays(
        (5, 9), s, [np.asarray(a) for a in shards]
    )
    np.testing.assert_array_equal(np.asarray(from_numpy), np.arange(45).reshape(5, 9))


def test_make_array_from_process_local_data_in_one_process(mesh):
    data = np.arange(24).reshape(6, 4)
    x = spmd.make_array_from_process_local_data(NamedSharding(mesh, P("y")), data)
    assert x.shape == (6, 4) and x.sharding.spec == P("y")
    np.testing.assert_array_equal(np.asarray(x), data)


def test_shard_data_is_an_array_on_its_device(mesh):
    x = spmd.device_put(np.arange(8), NamedSharding(mesh, P(("x", "y"))))
    shard = x.addressable_shards[6]
    assert shard.data.devices() == {spmd.devices()[6]} and shard.data.tolist() == [6]
    assert shard.index == (slice(6, 7),) and shard.replica_id == 0


def test_large_arrays_copied_on_the_thread_pool_stay_exact(mesh):
    x = np.random.default_rng(1).standard_normal((601, 701))  # 3.4 MB: above the inline limit
    uneven = spmd.device_put(x, NamedSharding(mesh, P("y", "x")))
    np.testing.assert_array_equal(np.asarray(uneven), x)
    for spec in (P("x", "y"), P(None, ("y", "x")), P()):
        moved = spmd.device_put(uneven, NamedSharding(mesh, spec))
        np.testing.assert_array_equal(np.asarray(moved), x)
        for shard in moved.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
    single = spmd.device_put(uneven, spmd.devices()[7])
    np.testing.assert_array_equal(np.asarray(single), x)


@pytest.mark.parametrize(
    ("spec", "one_buffer"),
    [(P(("x", "y")), True), (P("x"), True), (P(None, "y"), False), (P("x", "y"), False)],
)
def test_blocks_of_split_leading_rows_lie_one_after_another_in_one_buffer(mesh, spec, one_buffer):
    """Blocks that are runs of the array's memory, together the whole array, are views of
    one read-only copy, in device order (a contraction then stacks them without copying);
    other blocks are copies of their own. Uneven blocks included."""
    if mesh.devices.flat[0].backend != "numpy":
        pytest.skip("another library's buffers are its own copies (runtime/buffers.py)")
    data = np.arange(7.0 * 9).reshape(7, 9)
    x = spmd.device_put(data, NamedSharding(mesh, spec))
    blocks = [shard._buffer for shard in x.addressable_shards]
    for shard, block in zip(x.addressable_shards, blocks, strict=True):
        np.testing.assert_array_equal(block, data[shard.index])
        assert not block.flags.writeable
    if one_buffer:
        whole = blocks[0].base
        assert whole is not data and all(block.base is whole for block in blocks)
        assert whole.size == data.size
        with pytest.raises(ValueError):  # a view of a read-only array stays read-only
            blocks[1].flags.writeable = True
    else:
        assert all(block.base is None for block in blocks)
    data[:] = -1  # the source stays the caller's
    assert np.asarray(x)[0, 1] == 1.0


def test_gathered_values_cannot_be_made_writeable(mesh):
    for spec in (P(), P("x")):
        x = spmd.device_put(np.zeros(8), NamedSharding(mesh, spec))
        for value in (np.asarray(x), np.asarray(x.addressable_shards[5].data)):
            with pytest.raises(ValueError, match="WRITEABLE"):
                value.flags.writeable = True
        assert np.asarray(x, copy=True).flags.writeable


def test_lists_of_numbers_are_data_and_other_containers_are_pytrees():
    assert spmd.device_put([1, 2]).shape == (2,)
    assert spmd.device_put([[np.float32(1), 2.0]]).shape == (1, 2)
    pair = spmd.device_put((0, 0.1))
    assert isinstance(pair, tuple) and [a.shape for a in pair] == [(), ()]
    assert spmd.device_put({"a": ()}) == {"a": ()}
    d0, d1 = spmd.devices()[:2]
    placed = spmd.device_put([np.ones(2), np.zeros(3)], [d0, d1])
    assert [a.devices() for a in placed] == [{d0}, {d1}]


def test_shard_data_keeps_the_memory_kind(mesh):
    x = spmd.device_put(np.ones(8), NamedSharding(mesh, P("x"), memory_kind="pinned_host"))
    assert x.addressable_shards[0].data.sharding.memory_kind == "pinned_host"


def test_config_accepts_numpy_integers():
    before = spmd.config.collective_timeout
    spmd.config.update("collective_timeout", np.int64(7))
    try:
        assert spmd.config.collective_timeout == 7.0
        assert type(spmd.config.collective_timeout) is float
    finally:
        spmd.config.update("collective_timeout", before)
    spmd.config.update("num_cpu_devices", np.int64(spmd.device_count()))
    assert spmd.config.num_cpu_devices == spmd.device_count()
