"""A convolution's shapes: its dimension numbers, the sizes it works with (``Geometry``),
its result's shape and dtype, and the checks that name what does not fit (the primitive
itself is in convolution.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError

WHO = "spmd.lax.conv_general_dilated"


class ConvDimensionNumbers(NamedTuple):
    """The dimensions of a convolution's operands and result, as in JAX: ``lhs_spec`` is
    (batch, feature, spatial...), ``rhs_spec`` (output feature, input feature, spatial...)
    and ``out_spec`` (batch, feature, spatial...), each a tuple of dimension positions."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def dilate_dim(size: int, dilation: int) -> int:
    """The size of ``size`` elements with ``dilation - 1`` zeros between neighbours."""
    return max(0, 1 + dilation * (size - 1))


@dataclass(frozen=True)
class Geometry:
    """A convolution's sizes in (batch, feature, spatial...) order: the lhs batch ``n`` and
    features ``c``, the kernel's output features ``o`` and input features ``i``, the lhs
    spatial sizes, the kernel's ``window``, the dilated and padded lhs (``padded``), the
    dilated window and the result's spatial sizes (``out``)."""

    n: int
    c: int
    o: int
    i: int
    spatial: tuple[int, ...]
    window: tuple[int, ...]
    padded: tuple[int, ...]
    dilated_window: tuple[int, ...]
    out: tuple[int, ...]


def _check_spec(name: str, spec, ndim: int, aval: ShapedArray | None) -> None:
    if tuple(sorted(spec)) != tuple(range(ndim)):
        of = f" of {aval} ({ndim} dimensions)" if aval is not None else ""
        raise SpmdValueError(
            f"{WHO}: dimension_numbers' {name} is {tuple(spec)}, not a permutation of the "
            f"dimensions{of}; give each dimension exactly once, e.g. ('NCHW', 'OIHW', 'NCHW')."
        )


def _check_ints(name: str, values, count: int, least: int) -> None:
    if len(values) != count or any(int(v) != v or v < least for v in values):
        raise SpmdValueError(
            f"{WHO}: {name}={tuple(values)}; give {count} integers (one per spatial dimension), "
            f"each at least {least}."
        )


def geometry(
    lhs: ShapedArray,
    rhs: ShapedArray,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    **_,
) -> Geometry:
    """The convolution's sizes, raising ShapeError or SpmdValueError on operands and
    parameters that do not fit together."""
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise ShapeError(
            f"{WHO}: lhs is {lhs} and rhs {rhs}; both need the same number of dimensions, at "
            f"least 2 (batch and feature, then the spatial ones)."
        )
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    for name, spec, aval in (("lhs_spec", lhs_spec, lhs), ("rhs_spec", rhs_spec, rhs),
                             ("out_spec", out_spec, None)):  # fmt: skip
        _check_spec(name, spec, lhs.ndim, aval)
    k = lhs.ndim - 2
    _check_ints("window_strides", window_strides, k, 1)
    _check_ints("lhs_dilation", lhs_dilation, k, 1)
    _check_ints("rhs_dilation", rhs_dilation, k, 1)
    if len(padding) != k or any(len(p) != 2 for p in padding):
        raise SpmdValueError(
            f"{WHO}: padding={tuple(padding)}; give {k} (low, high) pairs, one per spatial "
            f"dimension, or 'SAME', 'SAME_LOWER' or 'VALID'."
        )
    groups, batches = feature_group_count, batch_group_count
    for name, count in (("feature_group_count", groups), ("batch_group_count", batches)):
        if int(count) != count or count < 1:
            raise SpmdValueError(f"{WHO}: {name}={count}; it must be a positive integer.")
    if groups > 1 and batches > 1:
        raise SpmdValueError(
            f"{WHO}: feature_group_count={groups} and batch_group_count={batches}; at most one "
            f"of them may exceed 1."
        )
    n, c = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    o, i = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    if c % groups or c // groups != i:
        raise ShapeError(
            f"{WHO}: lhs {lhs} has {c} features (dimension {lhs_spec[1]}) and rhs {rhs} takes "
            f"{i} input features (dimension {rhs_spec[1]}); with feature_group_count={groups} "
            f"the lhs features must be {groups} x {i} = {groups * i}."
        )
    for name, count in (("feature_group_count", groups), ("batch_group_count", batches)):
        if o % count:
            raise ShapeError(
                f"{WHO}: rhs {rhs} has {o} output features (dimension {rhs_spec[0]}), not a "
                f"multiple of {name}={count}."
            )
    if n % batches:
        raise ShapeError(
            f"{WHO}: lhs {lhs} has a batch of {n} (dimension {lhs_spec[0]}), not a multiple of "
            f"batch_group_count={batches}."
        )
    spatial = tuple(lhs.shape[d] for d in lhs_spec[2:])
    window = tuple(rhs.shape[d] for d in rhs_spec[2:])
    if 0 in window:
        raise ShapeError(
            f"{WHO}: rhs {rhs} has a spatial size 0 (window {window}); a window needs at least "
            f"one element along each spatial dimension."
        )
    padded = tuple(
        dilate_dim(size, d) + lo + hi
        for size, d, (lo, hi) in zip(spatial, lhs_dilation, padding, strict=True)
    )
    if any(p < 0 for p in padded):
        raise ShapeError(
            f"{WHO}: padding={tuple(padding)} crops more than lhs {lhs} holds along its spatial "
            f"dimensions {spatial} (dilated by {tuple(lhs_dilation)}): the padded sizes would be "
            f"{padded}; make each negative padding at most the dimension's size."
        )
    dilated_window = tuple(dilate_dim(w, d) for w, d in zip(window, rhs_dilation, strict=True))
    out = tuple(
        max(0, (p - w) // s + 1)
        for p, w, s in zip(padded, dilated_window, window_strides, strict=True)
    )
    return Geometry(n, c, o, i, spatial, window, padded, dilated_window, out)


def out_dtype(lhs: ShapedArray, rhs: ShapedArray, preferred_element_type) -> np.dtype:
    """The result's dtype: the operands' one, or ``preferred_element_type`` where it is
    given and at least as wide, of a compatible kind (integers may widen to floats)."""
    if lhs.dtype != rhs.dtype:
        raise SpmdTypeError(
            f"{WHO}: lhs is {lhs} and rhs {rhs}; they must have one dtype, as in JAX (cast one "
            f"of them)."
        )
    if lhs.dtype.kind not in "biufc":
        raise SpmdTypeError(f"{WHO}: cannot convolve {lhs.dtype} operands (lhs {lhs}).")
    if preferred_element_type is None:
        return lhs.dtype
    want, have = np.dtype(preferred_element_type), lhs.dtype
    integer_to_float = have.kind in "iu" and want.kind == "f"
    same_kind = have.kind == want.kind or (have.kind == "u" and want.kind == "i")
    if not (integer_to_float or same_kind) or want.itemsize < have.itemsize:
        raise SpmdTypeError(
            f"{WHO}: preferred_element_type={want} for {have} operands; it must be of their "
            f"kind (integers may also become floats) and at least as wide."
        )
    return want


def conv_shape(lhs: ShapedArray, rhs: ShapedArray, **params) -> ShapedArray:
    dtype = out_dtype(lhs, rhs, params["preferred_element_type"])
    g = geometry(lhs, rhs, **params)
    canonical = (g.n // params["batch_group_count"], g.o, *g.out)
    out_spec = params["dimension_numbers"].out_spec
    shape = [0] * len(canonical)
    for size, d in zip(canonical, out_spec, strict=True):
        shape[d] = size
    return ShapedArray(tuple(shape), dtype)
