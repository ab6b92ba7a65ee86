"""DLPack: Array.__dlpack__ / __dlpack_device__ (spmd/runtime/dlpack.py) and
spmd.numpy.from_dlpack (spmd/numpy/interchange.py), against NumPy's own consumer and
producer: values, when memory is shared and when copied, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P, SpmdError, SpmdTypeError

VERSIONED = np.lib.NumpyVersion(np.__version__) >= "2.1.0"  # NumPy asks for DLPack 1.0


def _block(x):
    """The one block of an Array on one device (or the first of a replicated one)."""
    return np.asarray(next(iter(x._buffers.values())))


class Legacy:
    """A DLPack 0.x consumer's view of ``x``: ``__dlpack__()`` with no keywords, as
    NumPy 2.0 and older libraries call it."""

    def __init__(self, x, **keywords):
        self.x, self.keywords = x, keywords

    def __dlpack__(self, stream=None):
        return self.x.__dlpack__(**self.keywords)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def _sharded(values, spec):
    mesh = spmd.make_mesh((4,), ("x",))
    return spmd.device_put(values, NamedSharding(mesh, spec))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, np.float32, np.complex64])
def test_numpy_reads_an_array_on_one_device(dtype):
    x = snp.asarray(np.arange(6).reshape(2, 3).astype(dtype))
    assert x.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(x)
    np.testing.assert_array_equal(y, np.asarray(x))
    assert y.dtype == dtype
    if VERSIONED:  # a DLPack 1.0 capsule shares the block and says it is read-only
        assert np.shares_memory(y, _block(x)) and not y.flags.writeable


def test_a_dlpack_0_consumer_gets_a_copy_and_copy_false_is_refused():
    x = snp.arange(4.0)
    y = np.from_dlpack(Legacy(x))  # a capsule without a read-only flag: of a copy
    assert not np.shares_memory(y, _block(x))
    np.testing.assert_array_equal(y, np.arange(4.0))
    with pytest.raises(BufferError, match="copy=False") as refusal:
        x.__dlpack__(copy=False)
    assert isinstance(refusal.value, SpmdError)


@pytest.mark.skipif(not VERSIONED, reason="DLPack 1.0 capsules from NumPy 2.1 on")
def test_copy_keywords_of_a_dlpack_1_capsule():
    x = snp.arange(4.0)
    shared = np.from_dlpack(x, copy=False)
    assert np.shares_memory(shared, _block(x))
    copied = np.from_dlpack(x, copy=True)
    assert not np.shares_memory(copied, _block(x))
    np.testing.assert_array_equal(copied, np.arange(4.0))
    assert x.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False) is not None


def test_streams_and_other_devices_are_refused():
    x = snp.arange(3)
    with pytest.raises(BufferError, match="no streams"):
        x.__dlpack__(stream=1)
    with pytest.raises(BufferError, match=r"dl_device=\(2, 0\)"):
        x.__dlpack__(dl_device=(2, 0))


def test_a_sharded_array_is_gathered_and_a_replicated_one_shares_a_block():
    values = np.arange(8.0)
    sharded = _sharded(values, P("x"))
    assert sharded.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(sharded), values)
    np.testing.assert_array_equal(np.from_dlpack(Legacy(sharded)), values)
    with pytest.raises(BufferError, match="sharded"):
        sharded.__dlpack__(copy=False, max_version=(1, 0))
    replicated = _sharded(values, P())
    y = np.from_dlpack(replicated)
    np.testing.assert_array_equal(y, values)
    if VERSIONED:
        assert np.shares_memory(y, _block(replicated))


def test_from_dlpack_copies_other_libraries_data():
    source = np.arange(6.0).reshape(2, 3)
    y = snp.from_dlpack(source)
    assert isinstance(y, spmd.Array) and y.device == spmd.devices()[0]
    source[0, 0] = 99.0  # the producer writes its buffer: the Array does not change
    np.testing.assert_array_equal(np.asarray(y), np.arange(6.0).reshape(2, 3))
    legacy = snp.from_dlpack(Legacy(np.arange(3, dtype=np.int16)))  # a NumPy 2.0 producer
    assert legacy.dtype == np.int16 and np.asarray(legacy).tolist() == [0, 1, 2]
    on_two = snp.from_dlpack(np.ones(2), device=spmd.devices()[2])
    assert on_two.device == spmd.devices()[2]
    with pytest.raises(BufferError, match="copy=False"):
        snp.from_dlpack(np.ones(2), copy=False)
    with pytest.raises(SpmdTypeError, match="no __dlpack__"):
        snp.from_dlpack([1, 2])


def test_from_dlpack_of_an_spmd_array_is_that_array_or_a_move():
    x = snp.arange(5)
    assert snp.from_dlpack(x) is x
    assert snp.from_dlpack(x, copy=False, device=x.device) is x
    moved = snp.from_dlpack(x, device=spmd.devices()[3])
    assert moved.device == spmd.devices()[3]
    np.testing.assert_array_equal(np.asarray(moved), np.arange(5))
    with pytest.raises(BufferError, match="copy=False"):
        snp.from_dlpack(x, device=spmd.devices()[3], copy=False)
    sharding = NamedSharding(spmd.make_mesh((4,), ("x",)), P("x"))
    assert snp.from_dlpack(np.arange(8.0), device=sharding).sharding == sharding
    doubled = spmd.jit(lambda v: snp.from_dlpack(v) * 2)(x)
    np.testing.assert_array_equal(np.asarray(doubled), np.arange(5) * 2)


def test_torch_reads_spmd_arrays_and_spmd_reads_torch_tensors():
    torch = pytest.importorskip("torch")
    x = snp.arange(6.0).reshape(2, 3)
    assert torch.from_dlpack(x).tolist() == np.arange(6.0).reshape(2, 3).tolist()
    assert torch.from_dlpack(_sharded(np.arange(8.0), P("x"))).tolist() == list(range(8))
    t = torch.arange(4, dtype=torch.int32)
    y = snp.from_dlpack(t)
    t[0] = 7
    assert y.dtype == np.int32 and np.asarray(y).tolist() == [0, 1, 2, 3]
