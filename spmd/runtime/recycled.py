"""Arrays over memory kept for the next step that needs as many bytes.

The products and stacked operands of contractions run once for all devices
(spmd/runtime/stacked.py) are a few MiB each, made and let go step after step. The C
allocator returns such blocks to the system when they are freed, so each step faulted
their pages in again: a 20-step training loop on 8 devices (benchmarks/control_flow.py
train) took some 20,000 page faults per call, a sixth of its time. Here each array lies
in a ``bytearray`` kept in a pool; the arrays viewing it hold an export of its buffer,
which a ``bytearray`` refuses to be resized under, so a failed resize tells a block still
in use from a free one whatever views of it went where. A block is handed out again once
free; free blocks beyond ``LIMIT`` bytes are let go.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

LIMIT = 256 << 20  # bytes of blocks kept beyond those in use
SMALLEST = 1 << 16  # smaller arrays come from NumPy: the allocator keeps those itself

_lock = threading.Lock()
_blocks: OrderedDict[int, list[bytearray]] = OrderedDict()  # by size, most recent last


def empty(shape: tuple[int, ...], dtype) -> np.ndarray:
    """A writeable C-ordered array of ``shape`` and ``dtype``, its contents undefined."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < SMALLEST or dtype.hasobject:
        return np.empty(shape, dtype)
    with _lock:
        block = _free_block(nbytes)
        array = np.frombuffer(block, np.uint8, nbytes)  # holds an export until it dies
    return array.view(dtype).reshape(shape)


def _free_block(nbytes: int) -> bytearray:
    found = _blocks.get(nbytes)
    if found is not None:
        for block in found:
            if not _in_use(block):
                _blocks.move_to_end(nbytes)
                return block
    block = bytearray(nbytes + 1)  # a spare byte: a resize probe never moves the data
    del block[-1]
    _blocks.setdefault(nbytes, []).append(block)
    _blocks.move_to_end(nbytes)
    _trim(block)
    return block


def _in_use(block: bytearray) -> bool:
    try:
        block.append(0)
    except BufferError:  # an array still views it
        return True
    del block[-1]
    return False


def _trim(new: bytearray) -> None:
    """Let go of the least recently asked-for free blocks beyond LIMIT bytes (``new``: the
    block about to be handed out)."""
    free = [
        (size, b)
        for size, blocks in _blocks.items()
        for b in blocks
        if b is not new and not _in_use(b)
    ]
    excess = sum(size for size, _ in free) - LIMIT
    for size, block in free:
        if excess <= 0:
            break
        _blocks[size].remove(block)
        if not _blocks[size]:
            del _blocks[size]
        excess -= size
