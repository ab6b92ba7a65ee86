"""Large result buffers taken again once nothing holds them (fused kernels' results and
contractions' products on NumPy).

A fresh large NumPy array is memory the C allocator maps anew, and the kernel faults in
and zeroes every page of it before writing a byte: a third of an elementwise kernel's time,
and page faults in one thread stall the others of the process. The pool hands out arrays
as views of blocks it owns. Every view of such an array, and every buffer or DLPack export,
refers to the block, so a block whose only reference is the pool's is free: ``empty``
gives it out again. Blocks of at least ``MIN_BYTES`` are pooled, all of them together
(free or in use) at most ``config.kept_memory`` bytes (256 MiB by default; 0 turns the pool
off): to make room, free blocks are let go, the least recently used first, and past that
an array is allocated as NumPy allocates it. So the pool never keeps more than that much
memory that nothing else uses.
"""

from __future__ import annotations

import math
import sys
import threading
from collections import OrderedDict

import numpy as np

from spmd.config import config

MIN_BYTES = 1 << 20


def _refcounts(blocks: OrderedDict, nbytes: int | None = None) -> dict[int, int]:
    """Each block's reference count (only those of ``nbytes`` bytes, if given)."""
    return {
        key: sys.getrefcount(block)
        for key, block in blocks.items()
        if nbytes is None or block.nbytes == nbytes
    }


# A free block's count, measured as the pool measures (it differs across Python versions)
_FREE = _refcounts(OrderedDict({0: np.empty(1)}))[0]


class BufferPool:
    def __init__(self) -> None:
        self._blocks: OrderedDict[int, np.ndarray] = OrderedDict()  # id → block, oldest first
        self._lock = threading.Lock()

    def empty(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """An uninitialized C-contiguous array, of a free block where one fits exactly."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < MIN_BYTES:  # every small contraction asks: the short way out first
            return np.empty(shape, dtype)
        kept = config.kept_memory
        if nbytes > kept:
            return np.empty(shape, dtype)
        with self._lock:
            block = self._take(nbytes)
            if block is None:
                if self._let_go(kept - nbytes) + nbytes > kept:
                    return np.empty(shape, dtype)
                block = np.empty(nbytes, np.uint8)
                self._blocks[id(block)] = block
            self._blocks.move_to_end(id(block))
            return block.view(dtype).reshape(shape)

    def _free(self, nbytes: int | None = None) -> list[int]:
        """The keys of the blocks (of ``nbytes`` bytes, if given) nothing but the pool
        refers to, oldest first."""
        counts = _refcounts(self._blocks, nbytes)
        return [key for key, count in counts.items() if count == _FREE]

    def _take(self, nbytes: int) -> np.ndarray | None:
        return next((self._blocks[key] for key in self._free(nbytes)), None)

    def _let_go(self, room: int) -> int:
        """Drop free blocks, oldest first, until all the blocks fit in ``room`` bytes; the
        bytes of the blocks left."""
        held = self.held_bytes
        for key in self._free():
            if held <= room:
                break
            held -= self._blocks.pop(key).nbytes
        return held

    def owns(self, block: object) -> bool:
        """Whether ``block`` (an array's base) is one of the pool's blocks: only the pool
        writes to it, once no array refers to it."""
        return block is not None and self._blocks.get(id(block)) is block

    @property
    def held_bytes(self) -> int:
        """Bytes of the blocks the pool tracks, free or in use."""
        return sum(block.nbytes for block in self._blocks.values())


POOL = BufferPool()
