"""The error hierarchy of spmd, and helpers that write sizes, avals and pytree paths in messages."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class SpmdError(Exception):
    """Base class of every error spmd raises on bad input."""


class ShardingError(SpmdError, ValueError):
    """A mesh, partition spec or sharding is invalid, or does not fit an array."""


class AxisNameError(SpmdError, NameError):
    """A collective or spec names a mesh axis that is not bound."""


class ShapeError(SpmdError, ValueError):
    """Shapes do not agree: an argument, a shard or a callback result has the wrong shape."""


class DistributedError(SpmdError, RuntimeError):
    """Processes disagree, or a multi-process setting is used wrongly."""


class ConfigError(SpmdError, RuntimeError):
    """A configuration option is unknown, invalid, or changed after it took effect."""


class SpmdTypeError(SpmdError, TypeError):
    """An argument has a type (or dtype) spmd cannot use."""


class SpmdValueError(SpmdError, ValueError):
    """An argument's value is outside what the operation accepts."""


class SpmdOverflowError(SpmdError, OverflowError):
    """A Python integer does not fit the integer dtype it meets (NumPy 2's rule)."""


class SpmdMemoryError(SpmdError, MemoryError):
    """An array is too big to allocate in this process; the message gives its size."""


class SpmdBufferError(SpmdError, BufferError):
    """A DLPack export or import that cannot be done as asked (``copy=False`` where a copy
    is needed, a device or stream the buffer is not on)."""


class SpmdZeroDivisionError(SpmdError, ZeroDivisionError):
    """A step or divisor that must not be zero is zero (``arange(0, 10, 0)``), as in NumPy."""


class TaskError(SpmdError, RuntimeError):
    """A task from ``shard_tasks`` failed; ``original`` is what it raised, ``index`` and
    ``block`` say which task."""

    def __init__(self, message: str, index: int, block, original: BaseException) -> None:
        super().__init__(message)
        self.index = index
        self.block = block
        self.original = original

    def __reduce__(self):
        return type(self), (self.args[0], self.index, self.block, self.original)


_DTYPE_SHORT = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
}


def aval_str(shape: Sequence[int], dtype) -> str:
    """Write a shape and dtype the way JAX does: ``f32[4,8]``."""
    name = np.dtype(dtype).name
    return f"{_DTYPE_SHORT.get(name, name)}[{','.join(str(int(d)) for d in shape)}]"


def shape_str(shape: Sequence[int]) -> str:
    """Write a shape as a tuple, ``(4, 8)``, also for rank 0 and 1."""
    return repr(tuple(int(d) for d in shape))


def byte_str(count: int) -> str:
    """A byte count in binary units: ``byte_str(3 * 2**30)`` → ``3.0 GiB``, ``512 B``."""
    size, units = float(count), ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    while size >= 1024 and len(units) > 1:
        size, units = size / 1024, units[1:]
    return f"{int(count)} B" if units[0] == "B" else f"{size:.1f} {units[0]}"


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``plural(1, 'entry', 'entries')`` → ``1 entry``; ``plural(2, 'device')`` → ``2 devices``."""
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"
