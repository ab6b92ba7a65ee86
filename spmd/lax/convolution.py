"""lax's convolutions: conv_general_dilated and its shorthands, with JAX's arguments.

Each binds the one primitive of spmd/prims/convolution.py, whose docstring gives the
formula. Sharded, a convolution runs on each device's block where the batch or the features
are split (split input features leave a pending sum, as a matmul's contraction does);
spatial dimensions are gathered first (``explain()`` shows the all-gather). ``precision`` is
accepted for JAX's signatures and has no effect: NumPy computes in the operands' dtype.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.lax.padtype import padding_pairs, padtype_to_pads
from spmd.numpy.creation import asarray
from spmd.numpy.manipulation import flip
from spmd.numpy.shaping import swapaxes
from spmd.prims.convolution import conv_general_dilated_p
from spmd.prims.convolution_shapes import ConvDimensionNumbers, dilate_dim

WHO = "spmd.lax.conv_general_dilated"


def conv_general_permutations(
    dimension_numbers: tuple[str, str, str],
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``("NHWC", "HWIO", "NHWC")`` → each string's (batch or output feature, feature or input
    feature, spatial...) positions; spatial letters are matched by name and ordered as the
    kernel's string has them."""
    rhs = dimension_numbers[1]
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for k, (spec, (a, b)) in enumerate(zip(dimension_numbers, pairs, strict=True)):
        if spec.count(a) != 1 or spec.count(b) != 1 or len(set(spec)) != len(spec):
            raise SpmdValueError(
                f"{WHO}: dimension_numbers[{k}]={spec!r} must hold {a!r} and {b!r} once each "
                f"and no letter twice, e.g. ('NCHW', 'OIHW', 'NCHW')."
            )
    spatial = [set(spec) - set(pair) for spec, pair in zip(dimension_numbers, pairs, strict=True)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise SpmdValueError(
            f"{WHO}: dimension_numbers={tuple(dimension_numbers)} name different spatial "
            f"letters ({', '.join(''.join(sorted(s)) for s in spatial)}); lhs, rhs and out "
            f"must share them."
        )
    order = [c for c in rhs if c not in "OI"]

    def permutation(spec: str, pair: tuple[str, str]) -> tuple[int, ...]:
        return (spec.index(pair[0]), spec.index(pair[1]), *(spec.index(c) for c in order))

    return tuple(permutation(s, p) for s, p in zip(dimension_numbers, pairs, strict=True))


def conv_dimension_numbers(
    lhs_shape: Sequence[int], rhs_shape: Sequence[int], dimension_numbers: Any
) -> ConvDimensionNumbers:
    """``dimension_numbers`` (None, three strings such as ``("NHWC", "HWIO", "NHWC")``, or a
    ConvDimensionNumbers) as a ConvDimensionNumbers for operands of these shapes; None is
    ``NCHW``-like: batch, features, then the spatial dimensions in order.
    Example: ``conv_dimension_numbers((8, 32, 32, 3), (3, 3, 3, 16), ("NHWC", "HWIO", "NHWC"))``.
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(map(int, spec)) for spec in dimension_numbers))
    ndim = len(lhs_shape)
    if ndim != len(rhs_shape):
        raise ShapeError(
            f"{WHO}: lhs has shape {tuple(lhs_shape)} and rhs {tuple(rhs_shape)}; they need the "
            f"same number of dimensions."
        )
    if dimension_numbers is None:
        identity = tuple(range(ndim))
        return ConvDimensionNumbers(identity, identity, identity)
    if not isinstance(dimension_numbers, list | tuple) or len(dimension_numbers) != 3:
        raise SpmdTypeError(
            f"{WHO}: dimension_numbers={dimension_numbers!r}; pass None, a ConvDimensionNumbers "
            f"or three strings such as ('NHWC', 'HWIO', 'NHWC')."
        )
    if not all(isinstance(spec, str) for spec in dimension_numbers):
        raise SpmdTypeError(
            f"{WHO}: dimension_numbers={tuple(dimension_numbers)!r} must be three strings."
        )
    for k, spec in enumerate(dimension_numbers):
        if len(spec) != ndim:
            raise ShapeError(
                f"{WHO}: dimension_numbers[{k}]={spec!r} names {len(spec)} dimensions, but lhs "
                f"has shape {tuple(lhs_shape)} and rhs {tuple(rhs_shape)} ({ndim} each)."
            )
    return ConvDimensionNumbers(*conv_general_permutations(tuple(dimension_numbers)))


def _ints(name: str, values: Any, count: int) -> tuple[int, ...]:
    try:
        values = tuple(operator.index(v) for v in values)
    except TypeError:
        raise SpmdTypeError(f"{WHO}: {name}={values!r}; give {count} integers.") from None
    if len(values) != count:
        raise SpmdValueError(
            f"{WHO}: {name}={values}; give {count} integers, one per spatial dimension."
        )
    return values


def conv_general_dilated(
    lhs: Any,
    rhs: Any,
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """``jax.lax.conv_general_dilated``: the n-D convolution (a correlation: the kernel is not
    flipped) of ``lhs`` with the kernel ``rhs``, with strides, padding ('SAME', 'SAME_LOWER',
    'VALID' or (low, high) pairs), lhs dilation (a transposed convolution), kernel dilation
    (atrous), dimension numbers, feature and batch groups.
    Example: ``conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO",
    "NHWC"))``."""
    lhs, rhs = asarray(lhs), asarray(rhs)
    lhs_aval, rhs_aval = aval_of(lhs), aval_of(rhs)
    dnums = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    k = lhs_aval.ndim - 2
    if k < 0:
        raise ShapeError(
            f"{WHO}: lhs is {lhs_aval} and rhs {rhs_aval}; each needs at least 2 dimensions "
            f"(batch and features)."
        )
    window_strides = _ints("window_strides", window_strides, k)
    lhs_dilation = (1,) * k if lhs_dilation is None else _ints("lhs_dilation", lhs_dilation, k)
    rhs_dilation = (1,) * k if rhs_dilation is None else _ints("rhs_dilation", rhs_dilation, k)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise SpmdValueError(
                f"{WHO}: padding={padding!r} with lhs_dilation={lhs_dilation}; string padding "
                f"is for unit lhs dilation: give (low, high) pairs, or use conv_transpose."
            )
        spatial = [lhs_aval.shape[d] for d in dnums.lhs_spec[2:]] if k else []
        window = [dilate_dim(rhs_aval.shape[d], r)
                  for d, r in zip(dnums.rhs_spec[2:], rhs_dilation, strict=True)]  # fmt: skip
        padding = padtype_to_pads(spatial, window, window_strides, padding, WHO)
    padding = padding_pairs(padding, k, WHO)
    if preferred_element_type is not None:
        preferred_element_type = np.dtype(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs,
        rhs,
        window_strides=window_strides,
        padding=padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dnums,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        preferred_element_type=preferred_element_type,
    )


def conv(
    lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any, precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:  # fmt: skip
    """``jax.lax.conv``: conv_general_dilated in NCHW / OIHW layout, no dilation.
    Example: ``conv(x, w, (1, 1), "SAME")``."""
    return conv_general_dilated(lhs, rhs, window_strides, padding,
                                preferred_element_type=preferred_element_type)  # fmt: skip


def conv_with_general_padding(
    lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
    lhs_dilation: Sequence[int] | None, rhs_dilation: Sequence[int] | None,
    precision: Any = None, preferred_element_type: Any = None,
) -> Any:  # fmt: skip
    """``jax.lax.conv_with_general_padding``: conv_general_dilated in NCHW / OIHW layout with
    dilations. Example: ``conv_with_general_padding(x, w, (1, 1), [(1, 1), (1, 1)], None,
    (2, 2))``."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                preferred_element_type=preferred_element_type)  # fmt: skip


def _conv_transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
    """The transposed convolution's padding along one dimension (dilated kernel size k,
    stride s), for the forward convolution's ``padding``."""
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        before = k - 1
    else:
        pads = tuple(k - p - 1 for p in padding)
        before, total = pads[0], sum(pads)
    return before, total - before


_TRANSPOSE_DEFAULTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                       4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}  # fmt: skip


def conv_transpose(
    lhs: Any,
    rhs: Any,
    strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    transpose_kernel: bool = False,
    precision: Any = None,
    preferred_element_type: Any = None,
    use_consistent_padding: bool = False,
) -> Any:
    """``jax.lax.conv_transpose``: the fractionally strided convolution (the lhs dilated by
    ``strides``), channels-last by default; ``transpose_kernel`` flips the kernel's spatial
    dimensions and swaps its features, which makes it the gradient of conv_general_dilated.
    Example: ``conv_transpose(x, w, (2, 2), "SAME")``."""
    lhs, rhs = asarray(lhs), asarray(rhs)
    ndim = aval_of(lhs).ndim
    if dimension_numbers is None:
        if ndim not in _TRANSPOSE_DEFAULTS:
            raise ShapeError(
                f"spmd.lax.conv_transpose: lhs is {aval_of(lhs)}; without dimension_numbers it "
                f"needs 2 to 5 dimensions."
            )
        dimension_numbers = _TRANSPOSE_DEFAULTS[ndim]
    dnums = conv_dimension_numbers(aval_of(lhs).shape, aval_of(rhs).shape, dimension_numbers)
    k = ndim - 2
    strides = _ints("strides", strides, k)
    rhs_dilation = (1,) * k if rhs_dilation is None else _ints("rhs_dilation", rhs_dilation, k)
    window = [aval_of(rhs).shape[d] for d in dnums.rhs_spec[2:]]
    if use_consistent_padding or padding in ("SAME", "VALID"):
        forward = [padding] * k if isinstance(padding, str) else list(padding)
        sizes = [dilate_dim(w, r) for w, r in zip(window, rhs_dilation, strict=True)]
        padding = [_conv_transpose_padding(w, s, p)
                   for w, s, p in zip(sizes, strides, forward, strict=True)]  # fmt: skip
    if transpose_kernel:
        rhs = swapaxes(flip(rhs, dnums.rhs_spec[2:]), dnums.rhs_spec[0], dnums.rhs_spec[1])
    return conv_general_dilated(lhs, rhs, (1,) * k, padding, strides, rhs_dilation, dnums,
                                preferred_element_type=preferred_element_type)  # fmt: skip


__all__ = [
    "ConvDimensionNumbers",
    "conv",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "conv_general_permutations",
    "conv_transpose",
    "conv_with_general_padding",
    "padtype_to_pads",
]
