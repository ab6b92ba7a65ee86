"""Arrays over kept memory (spmd/runtime/recycled.py): a block is handed out again only
once nothing views it, whatever views of it went where."""

import gc

import numpy as np
import pytest

from spmd.runtime import recycled


@pytest.fixture(autouse=True)
def empty_pool(monkeypatch):
    monkeypatch.setattr(recycled, "_blocks", type(recycled._blocks)())


def _memory(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_a_freed_block_is_handed_out_again():
    a = recycled.empty((256, 128), np.float32)
    where = _memory(a)
    del a
    gc.collect()
    b = recycled.empty((128, 256), np.float32)  # as many bytes, another shape
    assert _memory(b) == where and b.flags.writeable and b.flags.c_contiguous


@pytest.mark.parametrize(
    "keep",
    [
        lambda a: a[3],  # a view of a row
        lambda a: a.T[::2],  # a view of a view
        lambda a: np.lib.stride_tricks.as_strided(a, (2, 2), (8, 4)),
        lambda a: memoryview(a),  # a buffer export of its own
    ],
)
def test_a_block_something_still_views_is_not_handed_out(keep):
    a = recycled.empty((256, 128), np.float32)
    a[...] = 7
    kept = keep(a)
    where = _memory(a)
    del a
    gc.collect()
    b = recycled.empty((256, 128), np.float32)
    assert _memory(b) != where
    b[...] = 0
    assert np.all(np.asarray(kept) == 7)


def test_small_arrays_come_from_numpy():
    a = recycled.empty((4, 4), np.float64)
    assert a.shape == (4, 4) and not recycled._blocks


def test_free_blocks_beyond_the_limit_are_let_go(monkeypatch):
    monkeypatch.setattr(recycled, "LIMIT", 3 << 20)
    for size in range(1, 6):
        recycled.empty((size << 20,), np.uint8)  # each freed at once
    kept = sum(size * len(blocks) for size, blocks in recycled._blocks.items())
    assert kept <= (3 << 20) + (5 << 20)  # the newest block, in use when trimmed, and 3 MiB
    assert 5 << 20 in recycled._blocks  # the most recent stays
    assert 1 << 20 not in recycled._blocks  # the oldest went


def test_dtypes_and_shapes():
    for dtype in (np.float32, np.float64, np.complex128, np.int8, np.bool_):
        a = recycled.empty((64, 33, 7), dtype)
        assert a.dtype == dtype and a.shape == (64, 33, 7)
        a[...] = 1
        assert np.all(a == 1)
