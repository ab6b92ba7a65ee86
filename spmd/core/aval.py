"""Abstract values (shape, dtype, weak type) and NumPy 2 (NEP 50) type promotion.

Named dtypes follow the x64 mode (spmd/core/dtypes.py), and with x64 off a Python int must
fit int32. ``result_dtype`` and Python scalars' types are NumPy's, what an implementation
computes, which ``Primitive.bind`` converts after where the mode wants it narrower."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from spmd.core.dtypes import canonical_dtype, check_python_int, x64_enabled
from spmd.errors import ShapeError, SpmdTypeError, aval_str

_NUMERIC_KINDS = "biufc"
_WEAK_EXAMPLE = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}  # stands for a Python scalar


@dataclass(frozen=True)
class ShapedArray:
    """What tracing knows of a value: its shape, its dtype, whether the dtype is weak, and
    the mesh axes it varies over.

    A weak dtype comes from a Python scalar: it gives way to the other operand's dtype, as in
    NumPy 2 (``float32_array * 2.0`` stays float32). ``vma`` (JAX's name) is empty except in
    the body of a shard_map or pmap, where it names the mesh axes along which devices may
    hold different data (spmd/core/varying.py computes it when a value is made).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False
    vma: frozenset[str] = field(default=frozenset(), kw_only=True)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __str__(self) -> str:
        return aval_str(self.shape, self.dtype)

    def __repr__(self) -> str:
        vma = f", vma={set(sorted(self.vma))}" if self.vma else ""
        return (
            f"ShapedArray(shape={self.shape!r}, dtype={self.dtype!r}, "
            f"weak_type={self.weak_type!r}{vma})"
        )

    def strong(self) -> ShapedArray:
        return replace(self, weak_type=False) if self.weak_type else self

    def varying(self, vma: frozenset[str]) -> ShapedArray:
        """This type, varying over the mesh axes ``vma``."""
        return self if vma == self.vma else replace(self, vma=frozenset(vma))


def check_dtype(dtype: object, argument: str = "dtype") -> np.dtype:
    """``dtype`` as a NumPy dtype spmd can hold, or an error naming ``argument``; with x64
    off, a 64-bit dtype's 32-bit stand-in (``float`` and ``np.float64`` are float32), as JAX
    gives."""
    try:
        result = np.dtype(dtype)
    except TypeError:
        raise SpmdTypeError(f"{argument}={dtype!r} is not a dtype; use e.g. np.float32.") from None
    if result.kind not in _NUMERIC_KINDS:
        raise SpmdTypeError(
            f"{argument}={result} is not supported; spmd holds bool, integer, float and complex "
            f"dtypes."
        )
    return canonical_dtype(result)


def python_scalar_aval(x: bool | int | float | complex) -> ShapedArray:
    """A Python scalar's type: weak int64, float64 or complex128, the dtype NumPy computes it
    in (promotion reads only a weak type's kind); bool is strong. With x64 off an int that
    int32 cannot hold raises, and results of these dtypes are made 32-bit by
    ``Primitive.bind``."""
    if isinstance(x, bool):
        return ShapedArray((), np.dtype(bool))
    if isinstance(x, int):
        if not x64_enabled():
            check_python_int(x, "operand")
        return ShapedArray((), np.dtype(np.int64), weak_type=True)
    return ShapedArray((), np.asarray(x).dtype, weak_type=True)


def result_dtype(*avals: ShapedArray) -> tuple[np.dtype, bool]:
    """The dtype NumPy 2 gives an operation on these operands, and whether it is weak (with
    x64 off too: the implementations compute it, and ``Primitive.bind`` converts after)."""
    strong = [a.dtype for a in avals if not a.weak_type]
    weak = [_WEAK_EXAMPLE[a.dtype.kind] for a in avals if a.weak_type]
    if not strong:
        return np.result_type(*weak), True
    return np.result_type(*strong, *weak), False


def host_array(x: Any, argument: str) -> np.ndarray:
    """``x`` as a NumPy array with a numeric dtype, or a clear error naming ``argument``."""
    try:
        value = np.asarray(x)
    except ValueError as error:
        raise ShapeError(
            f"{argument} cannot become an array: {error}. Nested lists must be rectangular."
        ) from None
    if value.dtype.kind not in _NUMERIC_KINDS:
        raise SpmdTypeError(
            f"{argument} has dtype {value.dtype} ({type(x).__name__}); spmd arrays hold bool, "
            f"integer, float or complex numbers. Convert it first, e.g. np.asarray(x, "
            f"dtype=np.float32)."
        )
    return value
