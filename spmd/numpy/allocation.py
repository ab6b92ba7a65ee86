"""Host allocations of spmd.numpy's creation functions, and the error when one is too big.

NumPy raises its own MemoryError (``_ArrayMemoryError``) for ``zeros(10**12)`` and a bare
ValueError for a size no address space holds; spmd raises SpmdMemoryError (a MemoryError) and
SpmdValueError (a ValueError) instead, naming the function, shape, dtype and byte size, and
saying how to make the array fit.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from spmd.errors import SpmdError, SpmdMemoryError, SpmdValueError, byte_str

_FIX = (
    "Shard it across devices, so that each device holds only its block: create it with "
    "out_sharding=NamedSharding(mesh, P('x')) (each device then makes just its block, eagerly "
    "or inside spmd.jit), or device_put it in pieces with a NamedSharding; or make it smaller, "
    "with a smaller dtype (e.g. dtype=np.float32) or shape."
)


def too_big(fn: str, shape: Sequence[int] | None, dtype: Any, why: str) -> str:
    """The message for an array of ``shape`` and ``dtype`` that ``fn`` cannot allocate."""
    if shape is None or dtype is None:
        return f"spmd.numpy.{fn}: the result is too big: {why}. {_FIX}"
    dtype = np.dtype(dtype)
    nbytes = math.prod(int(d) for d in shape) * dtype.itemsize
    return (
        f"spmd.numpy.{fn}: an array of shape {tuple(int(d) for d in shape)} and dtype {dtype} "
        f"needs {byte_str(nbytes)} ({nbytes:,} bytes), {why}. {_FIX}"
    )


@contextlib.contextmanager
def allocating(fn: str, shape: Sequence[int] | None = None, dtype: Any = None) -> Iterator[None]:
    """Runs the allocation of a ``shape`` and ``dtype`` result of ``spmd.numpy.{fn}`` (either
    None when not known before: NumPy's error then names them).

    Example: ``with allocating("zeros", (10**12,), np.float64): ...`` raises SpmdMemoryError.
    """
    if shape is not None and dtype is not None:
        nbytes = math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize
        if nbytes > np.iinfo(np.intp).max:  # NumPy: "array is too big" (a ValueError)
            raise SpmdValueError(too_big(fn, shape, dtype, "more than any address space holds"))
    try:
        yield
    except MemoryError as error:
        if isinstance(error, SpmdError):
            raise
        shape = shape if shape is not None else getattr(error, "shape", None)
        dtype = dtype if dtype is not None else getattr(error, "dtype", None)
        raise SpmdMemoryError(
            too_big(fn, shape, dtype, "more than this process can allocate")
        ) from None
