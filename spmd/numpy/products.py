"""Products of spmd.numpy built from its multiplies, sums and contractions: the Array API's
``vecdot``, and NumPy's ``inner``, ``kron`` and 1-D ``convolve`` and ``correlate`` (one
conv_general_dilated each, spmd/prims/convolution.py).

Each is exact up to the order of a sum, and shards as the broadcasts, multiplies, sums and
contractions it is made of.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.axes import normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdValueError
from spmd.numpy.creation import asarray
from spmd.prims.convolution import ConvDimensionNumbers, conv_general_dilated_p


def _snp():
    import spmd.numpy as snp

    return snp


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The Array API's ``vecdot``: ``sum(conj(x1) * x2)`` over each operand's ``axis`` (its
    own axis, as NumPy's and JAX's), the other axes broadcast; in the operands' common dtype
    (booleans: whether any pair is both true)."""
    snp = _snp()
    x1, x2 = asarray(x1), asarray(x2)
    a1, a2 = aval_of(x1), aval_of(x2)
    if a1.ndim == 0 or a2.ndim == 0:
        raise ShapeError(
            f"spmd.numpy.vecdot: x1 is {a1} and x2 {a2}; both need at least one dimension."
        )
    axis1 = normalize_axis(axis, a1.ndim, "spmd.numpy.vecdot", f"x1 {a1}")
    axis2 = normalize_axis(axis, a2.ndim, "spmd.numpy.vecdot", f"x2 {a2}")
    if a1.shape[axis1] != a2.shape[axis2]:
        raise ShapeError(
            f"spmd.numpy.vecdot: x1 {a1} and x2 {a2} must have the same size along axis={axis}."
        )
    x1, x2 = snp.moveaxis(x1, axis1, -1), snp.moveaxis(x2, axis2, -1)
    try:
        np.broadcast_shapes(aval_of(x1).shape[:-1], aval_of(x2).shape[:-1])
    except ValueError:
        raise ShapeError(
            f"spmd.numpy.vecdot: x1 {a1} and x2 {a2} do not broadcast together outside axis={axis}."
        ) from None
    dtype = np.result_type(a1.dtype, a2.dtype)
    if dtype == np.bool_:
        return snp.any(snp.logical_and(x1, x2), axis=-1)
    return snp.sum(snp.conjugate(x1) * x2, axis=-1, dtype=dtype)


def inner(a: Any, b: Any) -> Any:
    """``numpy.inner``: the sum product over the last axes (a product with a scalar)."""
    snp = _snp()
    a, b = asarray(a), asarray(b)
    if aval_of(a).ndim == 0 or aval_of(b).ndim == 0:
        return a * b
    if aval_of(a).shape[-1] != aval_of(b).shape[-1]:
        raise ShapeError(
            f"spmd.numpy.inner: a is {aval_of(a)} and b {aval_of(b)}; their last axes must "
            f"have one size."
        )
    return snp.tensordot(a, b, axes=([-1], [-1]))


def kron(a: Any, b: Any) -> Any:
    """``numpy.kron``: the Kronecker product, blocks of ``b`` scaled by ``a``'s elements."""
    snp = _snp()
    a, b = asarray(a), asarray(b)
    ndim = max(aval_of(a).ndim, aval_of(b).ndim)
    sa = (1,) * (ndim - aval_of(a).ndim) + aval_of(a).shape
    sb = (1,) * (ndim - aval_of(b).ndim) + aval_of(b).shape
    left = snp.reshape(a, tuple(d for n in sa for d in (n, 1)))
    right = snp.reshape(b, tuple(d for n in sb for d in (1, n)))
    return snp.reshape(left * right, tuple(p * q for p, q in zip(sa, sb, strict=True)))


def _sliding_products(name: str, a: Any, v: Any, mode: str, reverse: bool) -> Any:
    """``name`` (numpy.convolve or numpy.correlate) of 1-D ``a`` and ``v``: the kernel (``v``
    reversed for a convolution, conjugated for a correlation) slid over ``a`` as one
    conv_general_dilated, its padding picking the window ``mode`` keeps: "full" (every
    overlap), "same" (the length of the longer, centred as NumPy centres it) or "valid"
    (complete overlaps only)."""
    snp = _snp()
    who = f"spmd.numpy.{name}"
    if mode not in ("full", "same", "valid"):
        raise SpmdValueError(f"{who}: mode={mode!r}; pass 'full', 'same' or 'valid'.")
    a, v = asarray(a), asarray(v)
    lowest = 0 if reverse else 1  # NumPy's convolve reads a 0-d operand as one element
    if not lowest <= aval_of(a).ndim <= 1 or not lowest <= aval_of(v).ndim <= 1:
        raise ShapeError(f"{who}: a is {aval_of(a)} and v {aval_of(v)}; both must be 1-D.")
    n, m = aval_of(a).size, aval_of(v).size
    if n == 0 or m == 0:
        raise SpmdValueError(
            f"{who}: {'a' if n == 0 else 'v'} is empty; pass at least one element."
        )
    dtype = np.result_type(aval_of(a).dtype, aval_of(v).dtype)
    a, v = snp.reshape(a, (1, 1, n)).astype(dtype), snp.reshape(v, (1, 1, m)).astype(dtype)
    if reverse:
        v = snp.flip(v, axis=2)
    elif dtype.kind == "c":
        v = snp.conjugate(v)
    short, long = min(n, m), max(n, m)
    if mode == "full":
        start, length = 0, n + m - 1
    elif mode == "valid":
        start, length = short - 1, long - short + 1
    else:  # NumPy's correlate slides the longer along the shorter, which centres it late
        start = short // 2 if not reverse and n < m else (short - 1) // 2
        length = long
    padding = ((m - 1 - start, start + length - n),)
    out = conv_general_dilated_p.bind(
        a,
        v,
        window_strides=(1,),
        padding=padding,
        lhs_dilation=(1,),
        rhs_dilation=(1,),
        dimension_numbers=ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2)),
        feature_group_count=1,
        batch_group_count=1,
        preferred_element_type=None,
    )
    return snp.reshape(out, (length,))


def convolve(a: Any, v: Any, mode: str = "full") -> Any:
    """``numpy.convolve``: the discrete 1-D convolution ``sum_i a[i] v[k - i]``, ``mode``
    "full" (every overlap), "same" (the length of the longer, centred) or "valid" (complete
    overlaps only). Example: ``convolve(x, np.ones(3) / 3, "same")``."""
    return _sliding_products("convolve", a, v, mode, reverse=True)


def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    """``numpy.correlate``: the 1-D cross-correlation ``c[k] = sum_n a[n + k] conj(v[n])``,
    ``mode`` "valid" (complete overlaps only, the default), "same" or "full".
    Example: ``correlate(signal, template)``."""
    return _sliding_products("correlate", a, v, mode, reverse=False)


__all__ = [
    "convolve",
    "correlate",
    "inner",
    "kron",
    "vecdot",
]
