"""The pool of large result buffers (spmd/core/buffer_pool.py): a block is given out again
only once nothing refers to it (no array, view, buffer export or DLPack capsule), free
blocks beyond ``config.kept_memory`` are let go, and jit's results stay intact however many
later calls reuse the pool."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.core.buffer_pool import MIN_BYTES, POOL, BufferPool
from spmd.errors import ConfigError

SHAPE = (512, 1024)  # 2 MiB of float32: pooled


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_a_dropped_array_gives_its_block_out_again():
    pool = BufferPool()
    a = pool.empty(SHAPE, np.float32)
    address = _address(a)
    del a
    b = pool.empty((1024, 512), np.float32)  # the same bytes in another shape
    assert _address(b) == address
    assert b.shape == (1024, 512) and b.dtype == np.float32
    assert b.flags.c_contiguous and b.flags.writeable


@pytest.mark.parametrize(
    "keep",
    [
        lambda a: a,
        lambda a: a[::2, 3:],  # a view
        lambda a: a.reshape(-1),
        lambda a: memoryview(a),  # a buffer export
        lambda a: a.__dlpack__(),  # a DLPack capsule
        lambda a: np.frombuffer(a, np.uint8),
    ],
)
def test_a_block_anything_refers_to_is_not_given_out(keep):
    pool = BufferPool()
    a = pool.empty(SHAPE, np.float32)
    a[...] = 7
    kept = keep(a)
    address = _address(a)
    del a
    b = pool.empty(SHAPE, np.float32)
    assert _address(b) != address
    b[...] = -1
    del kept
    c = pool.empty(SHAPE, np.float32)
    assert _address(c) == address


def test_small_arrays_are_not_pooled():
    pool = BufferPool()
    a = pool.empty((MIN_BYTES // 8 - 1,), np.float64)
    assert a.flags.owndata and pool.held_bytes == 0


def test_the_pool_holds_at_most_the_kept_memory():
    pool = BufferPool()
    spmd.config.update("kept_memory", 3 * MIN_BYTES)
    try:
        arrays = [pool.empty((MIN_BYTES,), np.uint8) for _ in range(3)]
        assert pool.held_bytes == 3 * MIN_BYTES
        del arrays
        big = pool.empty((2 * MIN_BYTES,), np.uint8)  # room for it: two free blocks go
        assert pool.held_bytes == 3 * MIN_BYTES
        held = [big, pool.empty((MIN_BYTES,), np.uint8)]  # blocks in use fill the room
        assert pool.empty((MIN_BYTES,), np.uint8).flags.owndata  # so NumPy allocates it
        assert pool.held_bytes == 3 * MIN_BYTES
        del big, held
        spmd.config.update("kept_memory", 0)
        assert pool.empty((MIN_BYTES,), np.uint8).flags.owndata  # off: plain arrays
    finally:
        spmd.config.update("kept_memory", 256 << 20)


@pytest.mark.parametrize("value", [-1, 1.5, "lots", True])
def test_kept_memory_must_be_a_number_of_bytes(value):
    with pytest.raises(ConfigError, match="kept_memory must be a number of bytes"):
        spmd.config.update("kept_memory", value)


def test_threads_never_hold_one_block_at_once():
    pool = BufferPool()
    lock = threading.Lock()
    live: dict[int, int] = {}

    def work(k: int) -> None:
        for step in range(20):
            a = pool.empty(SHAPE, np.float32)
            with lock:
                assert _address(a) not in live, "a block given out twice"
                live[_address(a)] = k
            a[...] = k * 100 + step
            assert np.all(a == k * 100 + step)
            with lock:
                del live[_address(a)]
            del a

    with ThreadPoolExecutor(4) as executor:
        list(executor.map(work, range(8)))


@pytest.mark.parametrize("engine", ["numba", "numpy"])
def test_jit_results_kept_across_calls_stay_intact(engine):
    """Each call's blocks are pooled blocks, not copies; the results a caller keeps are
    never written by later calls, and the ones it drops are written again."""
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    f = spmd.jit(lambda v, s: snp.tanh(v * s) + s)
    x = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
    xs = spmd.device_put(x, NamedSharding(mesh, P("x", "y")))
    spmd.config.update("fusion_engine", engine)
    try:
        kept = [f(xs, np.float32(s)) for s in range(4)]
        for _ in range(3):
            f(xs, np.float32(9)).block_until_ready()  # results dropped at once
    finally:
        spmd.config.update("fusion_engine", "numba")
    for s, result in enumerate(kept):
        np.testing.assert_allclose(np.asarray(result), np.tanh(x * s) + s, rtol=1e-6, atol=1e-6)
        assert all(POOL.owns(np.asarray(shard.data).base) for shard in result.addressable_shards)


@pytest.mark.parametrize("spec", [P("x", None), P(None, "x")])
def test_products_kept_across_calls_stay_intact(spec):
    """A contraction's product is a pool block (jit hands out views of it, not copies); the
    products a caller keeps are never written by later calls. Split rows: one product for
    all devices; split contracted columns: one sum, handed out by the reduction."""
    mesh = spmd.make_mesh((8,), ("x",))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1024, 512)).astype(np.float32)
    w = rng.standard_normal((512, 1024)).astype(np.float32)
    xs = spmd.device_put(x, NamedSharding(mesh, spec))
    w_spec = P() if spec == P("x", None) else P("x", None)  # whole, or split as x's columns

    def weights(scale):
        return spmd.device_put(w * np.float32(scale), NamedSharding(mesh, w_spec))

    f = spmd.jit(lambda v, u: v @ u)
    kept = [f(xs, weights(s)) for s in (1, 2)]
    for _ in range(3):
        f(xs, weights(-5)).block_until_ready()  # products dropped at once
    for s, result in zip((1, 2), kept, strict=True):
        want = x.astype(np.float64) @ (w.astype(np.float64) * s)
        np.testing.assert_allclose(np.asarray(result), want, rtol=1e-4, atol=1e-3 * s)
    if spec == P("x", None):
        assert all(POOL.owns(np.asarray(shard.data).base) for shard in kept[0].addressable_shards)
