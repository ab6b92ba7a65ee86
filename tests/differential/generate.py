"""Hypothesis strategies for the differential suite: dtypes, values, shapes, axes, scalars.

Values come from a small palette per dtype (shrinking goes to its first entry, 0), with the
dtype's extremes (integer min/max, values whose sum wraps) and NaN, +-inf and -0.0 drawn in for
a whole array at a time, so most examples hold well-behaved numbers and some the edge cases.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

BOOL = np.dtype(bool)
SIGNED = tuple(np.dtype(f"int{b}") for b in (8, 16, 32, 64))
UNSIGNED = tuple(np.dtype(f"uint{b}") for b in (8, 16, 32, 64))
FLOATS = tuple(np.dtype(f"float{b}") for b in (16, 32, 64))
COMPLEX = (np.dtype("complex64"), np.dtype("complex128"))
ALL_DTYPES = (BOOL, *SIGNED, *UNSIGNED, *FLOATS, *COMPLEX)
MAX_SIZE = 96  # elements per generated array: hypothesis draws them one at a time

dtypes = st.sampled_from(ALL_DTYPES)


def small_values(dtype: np.dtype) -> list:
    """Well-behaved values of ``dtype`` (exact in every dtype, no overflow in short sums)."""
    if dtype.kind == "b":
        return [False, True]
    if dtype.kind == "u":
        return [0, 1, 2, 3, 5, 7]
    if dtype.kind == "i":
        return [0, 1, -1, 2, -3, 5, -7]
    reals = [0.0, 1.0, -1.0, 0.5, 2.5, -3.25, 6.0, -0.125]
    if dtype.kind == "f":
        return reals
    return [0j, 1 + 0j, -1 + 1j, 0.5 - 2j, 2.5j, -3.25 + 0.5j, 6 - 1j]


def edge_values(dtype: np.dtype) -> list:
    """The dtype's extremes: integer min/max and halves whose doubling wraps; NaN, inf, -0."""
    if dtype.kind == "b":
        return []
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        extra = [200, 100] if dtype == np.uint8 else [info.max // 2 + 1]
        return [int(info.max), int(info.min), *extra] if info.min else [int(info.max), *extra]
    specials = [np.nan, np.inf, -np.inf, -0.0]
    if dtype.kind == "f":
        return specials
    return [complex(s, 1) for s in specials] + [complex(1, s) for s in specials[:3]]


@st.composite
def arrays(draw, dtype: np.dtype, shape: tuple[int, ...], *, edges: bool = True) -> np.ndarray:
    """An array of ``dtype`` and ``shape``; with ``edges``, sometimes holding extreme values."""
    dtype = np.dtype(dtype)
    palette = small_values(dtype)
    if edges and edge_values(dtype) and draw(st.integers(0, 3)) == 0:
        palette = palette + edge_values(dtype)
    return draw(hnp.arrays(dtype, shape, elements=st.sampled_from(palette)))


def _fits(shape) -> bool:
    return int(np.prod(shape)) <= MAX_SIZE


def shapes(min_dims: int = 0, max_dims: int = 4, min_side: int = 0, max_side: int = 5):
    """Shapes of rank ``min_dims..max_dims`` with sides 0..5 (0- and 1-sized axes included)."""
    return hnp.array_shapes(
        min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    ).filter(_fits)


@st.composite
def broadcast_shapes(draw, count: int, max_dims: int = 4) -> list[tuple[int, ...]]:
    """``count`` shapes that broadcast together (mostly); now and then a pair that does not."""
    found = draw(hnp.mutually_broadcastable_shapes(num_shapes=count, max_dims=max_dims, max_side=4))
    result = [tuple(s) for s in found.input_shapes]
    if draw(st.integers(0, 15)) == 0:  # a mismatch both libraries must refuse
        result[-1] = (*result[-1], 3) if result[-1][-1:] != (3,) else (*result[-1], 2)
        result[0] = (*result[0], 2)
    return result if all(_fits(s) for s in result) else [s[-2:] for s in result]


def axis(ndim: int, *, invalid: bool = True) -> st.SearchStrategy:
    """An axis of an ``ndim``-d array, negative ones included; with ``invalid`` now and then
    one out of range (both libraries must raise)."""
    valid = st.integers(-ndim, ndim - 1) if ndim else st.nothing()
    if not invalid:
        return valid
    # a 0-d array: NumPy 2's ufunc reductions, take, repeat and squeeze take axis 0 and -1
    return (
        st.one_of(valid, st.sampled_from([ndim, -ndim - 1]))
        if ndim
        else st.sampled_from([0, -1, 1])
    )


@st.composite
def axes(draw, ndim: int, *, none: bool = True, tuples: bool = True):
    """None, one axis, or a tuple of distinct axes (in any order, negative ones included)."""
    kind = draw(st.sampled_from(["none", "int", "tuple"][(0 if none else 1) : 3 if tuples else 2]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(axis(ndim))
    chosen = draw(st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim))
    return tuple(a - ndim if draw(st.booleans()) else a for a in chosen)


def python_scalars(kinds: str = "bifc") -> st.SearchStrategy:
    """A Python bool, int, float or complex (NEP 50's weak scalars)."""
    options = {
        "b": st.booleans(),
        "i": st.sampled_from([0, 1, -1, 2, 3, -5, 7, 300]),
        "f": st.sampled_from([0.0, 1.0, -0.5, 2.5, -3.25, 1e3, float("nan"), float("inf")]),
        "c": st.sampled_from([0j, 1j, 1 - 1j, -2.5 + 0.5j]),
    }
    return st.one_of(*[options[k] for k in kinds])


@st.composite
def operand(draw, shape: tuple[int, ...], dtype: np.dtype | None = None, *, scalar: bool = True):
    """An array of ``shape`` (of ``dtype``, or a random one) or, for a 0-d shape and with
    ``scalar``, sometimes a Python scalar."""
    if scalar and shape == () and draw(st.integers(0, 3)) == 0:
        return draw(python_scalars())
    return draw(arrays(dtype if dtype is not None else draw(dtypes), shape))


def a_dtype_keyword(none: bool = True) -> st.SearchStrategy:
    """A ``dtype=`` value: None, a NumPy dtype, or one of Python's ``bool``/``int``/``float``/
    ``complex``."""
    choices = [*ALL_DTYPES, bool, int, float, complex]
    return st.sampled_from([None, *choices] if none else choices)
