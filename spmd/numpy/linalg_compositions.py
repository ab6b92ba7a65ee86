"""The linalg functions that compose from spmd.numpy's own: the Array API's ``diagonal`` and
``trace`` of the last two axes, ``vector_norm``, ``matrix_norm``, ``cross`` and
``matrix_power``, and NumPy's ``cond``, ``tensorinv`` and ``tensorsolve``. The norms that
need singular values (``'nuc'``, ±2), negative powers and the condition numbers and tensor
inverses (an inverse or a solve) call spmd.numpy.linalg's decompositions.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.axes import normalize_axes, normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError


def _snp():
    import spmd.numpy as snp

    return snp


def _matrices(x: Any, who: str) -> Any:
    snp = _snp()
    x = snp.asarray(x)
    aval = aval_of(x)
    if aval.ndim < 2:
        raise ShapeError(
            f"spmd.numpy.linalg.{who}: x is {aval}, but it must be a stack of matrices with at "
            f"least two dimensions; reshape it, e.g. to (1, n) for a row."
        )
    return x


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The Array API's ``linalg.diagonal``: the ``offset`` diagonal of each matrix (the last
    two axes). Example: ``spmd.numpy.linalg.diagonal(x, offset=1)``."""
    return _snp().diagonal(_matrices(x, "diagonal"), offset=offset, axis1=-2, axis2=-1)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """The Array API's ``linalg.trace``: the sum of each matrix's ``offset`` diagonal, in
    ``dtype`` (default: sum's). Example: ``spmd.numpy.linalg.trace(x)``."""
    x = _matrices(x, "trace")
    return _snp().trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def _real_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.kind == "c":
        return np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _floating(x: Any) -> Any:
    """``x`` as an spmd array of a floating or complex dtype (integers and bools: float64)."""
    snp = _snp()
    x = snp.asarray(x)
    if aval_of(x).dtype.kind not in "fc":
        x = snp.astype(x, np.float64)
    return x


def vector_norm(
    x: Any,
    /,
    *,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    ord: float = 2,
) -> Any:
    """The Array API's ``linalg.vector_norm``: the ``ord`` norm over ``axis`` (None: all
    elements), ``ord`` any real but not NaN (``inf``: largest magnitude; ``-inf``: smallest;
    0: the count of nonzeros). Example: ``vector_norm(x, axis=-1, ord=1)``."""
    snp = _snp()
    x = _floating(x)
    aval = aval_of(x)
    who = "spmd.numpy.linalg.vector_norm"
    if isinstance(ord, (bool, str)) or not isinstance(ord, (int, float)) or math.isnan(ord):
        raise SpmdValueError(
            f"{who}: ord={ord!r} must be a real number (inf and -inf included), not NaN."
        )
    axes = (
        tuple(range(aval.ndim)) if axis is None else normalize_axes(axis, aval.ndim, who, str(aval))
    )
    magnitude = snp.abs(x)
    if ord == math.inf:
        norm = snp.max(magnitude, axis=axes, keepdims=keepdims)
    elif ord == -math.inf:
        norm = snp.min(magnitude, axis=axes, keepdims=keepdims)
    elif ord == 0:
        nonzero = snp.astype(snp.not_equal(magnitude, 0), aval_of(magnitude).dtype)
        norm = snp.sum(nonzero, axis=axes, keepdims=keepdims)
    elif ord == 1:
        norm = snp.sum(magnitude, axis=axes, keepdims=keepdims)
    elif ord == 2:
        norm = snp.sqrt(snp.sum(magnitude * magnitude, axis=axes, keepdims=keepdims))
    else:
        powered = snp.sum(snp.power(magnitude, float(ord)), axis=axes, keepdims=keepdims)
        norm = snp.power(powered, 1.0 / float(ord))
    return snp.astype(norm, _real_dtype(aval.dtype))


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """The Array API's ``linalg.matrix_norm`` of each matrix (the last two axes): ``ord``
    'fro', 'nuc' (sum of singular values), 1/-1 (largest/smallest column sum of magnitudes),
    inf/-inf (row sums), 2/-2 (largest/smallest singular value)."""
    snp = _snp()
    x = _floating(_matrices(x, "matrix_norm"))
    magnitude = snp.abs(x)
    if ord == "fro":
        norm = snp.sqrt(snp.sum(magnitude * magnitude, axis=(-2, -1)))
    elif ord == "nuc":
        norm = snp.sum(snp.linalg.svdvals(x), axis=-1)
    elif ord in (1, -1, math.inf, -math.inf) and not isinstance(ord, bool):
        sums = snp.sum(magnitude, axis=-2 if abs(ord) == 1 else -1)
        norm = snp.max(sums, axis=-1) if ord > 0 else snp.min(sums, axis=-1)
    elif ord in (2, -2) and not isinstance(ord, bool):
        values = snp.linalg.svdvals(x)
        norm = snp.max(values, axis=-1) if ord > 0 else snp.min(values, axis=-1)
    else:
        raise SpmdValueError(
            f"spmd.numpy.linalg.matrix_norm: ord={ord!r} is not a matrix norm; use 'fro', "
            f"'nuc', 1, -1, 2, -2, inf or -inf."
        )
    norm = snp.astype(norm, _real_dtype(aval_of(x).dtype))
    return snp.expand_dims(norm, (-2, -1)) if keepdims else norm


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The Array API's ``linalg.cross``: the cross product of 3-vectors along ``axis`` (of
    both operands), the other axes broadcast. Example: ``cross(x, y)``."""
    snp = _snp()
    x1, x2 = snp.asarray(x1), snp.asarray(x2)
    a1, a2 = aval_of(x1), aval_of(x2)
    who = "spmd.numpy.linalg.cross"
    if a1.ndim == 0 or a2.ndim == 0:
        raise ShapeError(f"{who}: x1 is {a1} and x2 {a2}; both need at least one dimension.")
    first = normalize_axis(axis, a1.ndim, who, f"x1 {a1}")
    second = normalize_axis(axis, a2.ndim, who, f"x2 {a2}")
    if a1.shape[first] != 3 or a2.shape[second] != 3:
        raise ShapeError(
            f"{who}: x1 {a1} and x2 {a2} must have size 3 along axis={axis} (3-vectors); "
            f"they have {a1.shape[first]} and {a2.shape[second]}."
        )
    u, v = snp.moveaxis(x1, first, -1), snp.moveaxis(x2, second, -1)
    try:
        np.broadcast_shapes(aval_of(u).shape, aval_of(v).shape)
    except ValueError:
        raise ShapeError(
            f"{who}: x1 {a1} and x2 {a2} do not broadcast together outside axis={axis}."
        ) from None
    parts = [
        u[..., (k + 1) % 3] * v[..., (k + 2) % 3] - u[..., (k + 2) % 3] * v[..., (k + 1) % 3]
        for k in range(3)
    ]
    return snp.moveaxis(snp.stack(parts, axis=-1), -1, axis)


def matrix_power(x: Any, n: int, /) -> Any:
    """The Array API's ``linalg.matrix_power``: ``x`` multiplied by itself ``n`` times by
    repeated squaring (0: the identity; negative: powers of the inverse)."""
    snp = _snp()
    x = _matrices(x, "matrix_power")
    aval = aval_of(x)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise SpmdTypeError(
            f"spmd.numpy.linalg.matrix_power: n={n!r} must be an integer (the power)."
        )
    if aval.shape[-1] != aval.shape[-2]:
        raise ShapeError(
            f"spmd.numpy.linalg.matrix_power: x is {aval}; its matrices must be square."
        )
    if n == 0:
        eye = snp.eye(aval.shape[-1], dtype=aval.dtype)
        return snp.broadcast_to(eye, aval.shape)
    if n < 0:
        x, n = snp.linalg.inv(x), -int(n)
    result, square = None, x
    while n:
        if n & 1:
            result = square if result is None else snp.matmul(result, square)
        n >>= 1
        if n:
            square = snp.matmul(square, square)
    return result


def _matrix_norm_order(p: Any) -> bool:
    """Whether ``p`` names a matrix norm cond takes."""
    if p is None or isinstance(p, str):
        return p in (None, "fro", "nuc")
    numbers = (int, float, np.integer, np.floating)
    return (
        not isinstance(p, bool)
        and isinstance(p, numbers)
        and p in (1, -1, 2, -2, math.inf, -math.inf)
    )


def cond(x: Any, p: Any = None) -> Any:
    """``numpy.linalg.cond``: the condition number ``norm(x, p) * norm(inv(x), p)`` of each
    matrix of ``x`` (..., m, n), ``p`` one of None (= 2: the largest singular value over
    the smallest), -2, 1, -1, inf, -inf, 'fro' or 'nuc' (these need square matrices). A
    singular matrix gives inf (NaN turns to inf unless x holds NaN, as NumPy's does).
    Example: ``spmd.numpy.linalg.cond(x, 'fro')``."""
    snp = _snp()
    who = "spmd.numpy.linalg.cond"
    x = _floating(_matrices(x, "cond"))
    aval = aval_of(x)
    if not _matrix_norm_order(p):
        raise SpmdValueError(
            f"{who}: p={p!r} is not a matrix norm; use None, 1, -1, 2, -2, inf, -inf, "
            f"'fro' or 'nuc'."
        )
    if 0 in aval.shape[-2:]:
        raise ShapeError(
            f"{who}: x is {aval}; the condition number of an empty matrix is not defined "
            f"(NumPy and JAX refuse it too), so each matrix needs at least one row and column."
        )
    with np.errstate(all="ignore"):  # a singular matrix divides by zero, as NumPy's does
        if p is None or (not isinstance(p, str) and p in (2, -2)):
            values = snp.linalg.svdvals(x)
            largest, smallest = values[..., 0], values[..., -1]
            ratio = largest / smallest if p != -2 else smallest / largest
        else:
            if aval.shape[-1] != aval.shape[-2]:
                raise ShapeError(
                    f"{who}: x is {aval}, but with p={p!r} its matrices must be square "
                    f"(only p=None, 2 and -2 take rectangular ones)."
                )
            inverse = snp.linalg.inv(x)
            ratio = snp.linalg.matrix_norm(x, ord=p) * snp.linalg.matrix_norm(inverse, ord=p)
    held_nan = snp.any(snp.isnan(x), axis=(-2, -1))
    return snp.where(snp.isnan(ratio) & ~held_nan, math.inf, ratio)


def _positive_int(value: Any, who: str, name: str) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise SpmdTypeError(f"{who}: {name}={value!r} must be an int.") from None
    if number <= 0:
        raise SpmdValueError(f"{who}: {name}={number} must be a positive integer.")
    return number


def tensorinv(a: Any, ind: int = 2) -> Any:
    """``numpy.linalg.tensorinv``: the inverse of ``a`` under ``tensordot(., ., ind)``, of
    shape ``a.shape[ind:] + a.shape[:ind]``; the first ``ind`` dimensions of a must hold as
    many elements as the rest. Example: ``tensorinv(ones((4, 6, 8, 3)) + ..., ind=2)``."""
    snp = _snp()
    who = "spmd.numpy.linalg.tensorinv"
    ind = _positive_int(ind, who, "ind")
    a = snp.asarray(a)
    shape = aval_of(a).shape
    if not shape:
        raise ShapeError(
            f"{who}: a is 0-d ({aval_of(a)}); it needs at least one dimension (NumPy cannot "
            f"reshape the inverse of a scalar either): reshape it to (1, 1)."
        )
    inner, outer = shape[:ind], shape[ind:]
    rows, cols = math.prod(inner), math.prod(outer)
    if rows != cols:
        raise ShapeError(
            f"{who}: a has shape {shape}; with ind={ind} its first {ind} dimensions "
            f"{inner} hold {rows} elements and the rest {outer} {cols}, which must be equal "
            f"(the tensor must flatten to a square matrix)."
        )
    inverse = snp.linalg.inv(snp.reshape(a, (rows, cols)))
    return snp.reshape(inverse, (*outer, *inner))


def tensorsolve(a: Any, b: Any, axes: Sequence[int] | None = None) -> Any:
    """``numpy.linalg.tensorsolve``: x with ``tensordot(a, x, x.ndim) == b``, where ``a``
    (its ``axes`` moved to the end first, in that order) has shape ``b.shape + x.shape``
    and ``b.size == x.size``. Example: ``tensorsolve(a, b)`` for a (2, 3, 6), b (2, 3)."""
    snp = _snp()
    who = "spmd.numpy.linalg.tensorsolve"
    a, b = snp.asarray(a), snp.asarray(b)
    a_aval, b_aval = aval_of(a), aval_of(b)
    if axes is not None:
        moved = normalize_axes(axes, a_aval.ndim, who, f"a {a_aval}", "axes")
        order = [d for d in range(a_aval.ndim) if d not in moved] + list(moved)
        a = snp.transpose(a, order)
        a_aval = aval_of(a)
    unknown = a_aval.shape[b_aval.ndim :]
    size = math.prod(unknown)
    if a_aval.shape[: b_aval.ndim] != b_aval.shape or b_aval.size != size:
        raise ShapeError(
            f"{who}: a has shape {a_aval.shape} (after moving axes={axes} to the end) and b "
            f"{b_aval.shape}; a must be b.shape + x.shape with x as large as b, so its "
            f"leading dimensions must equal b's and the rest hold {b_aval.size} elements."
        )
    x = snp.linalg.solve(snp.reshape(a, (b_aval.size, size)), snp.reshape(b, (b_aval.size,)))
    return snp.reshape(x, unknown)


__all__ = [
    "cond",
    "cross",
    "diagonal",
    "matrix_norm",
    "matrix_power",
    "tensorinv",
    "tensorsolve",
    "trace",
    "vector_norm",
]
