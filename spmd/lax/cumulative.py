"""jax.lax's cumulative reductions along one axis: cumsum, cumprod, cummax, cummin and
cumlogsumexp, each with ``reverse`` (accumulate from the end).

cumsum and cumprod bind spmd.numpy's (in the operand's dtype, as lax keeps it); cummax,
cummin and cumlogsumexp bind primitives of their own (spmd/prims/cumulative.py). Each
gathers the axis where it is split and keeps every other dimension where it lies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.lax import operator_checks as check
from spmd.numpy import asarray, flip
from spmd.numpy import cumprod as numpy_cumprod
from spmd.numpy import cumsum as numpy_cumsum
from spmd.prims.cumulative import cumlogsumexp_p, cummax_p, cummin_p

__all__ = ["cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum"]


def _operand(fn: str, operand: Any, axis: Any, kinds: str, described: str):
    operand = asarray(operand)
    aval = aval_of(operand)
    if aval.dtype.kind not in kinds:
        raise SpmdTypeError(
            f"spmd.lax.{fn}: operand is {aval}; lax.{fn} takes {described}. Convert first, "
            f"e.g. operand.astype(np.float32)."
        )
    axis = check.static_int(axis, fn, "axis")
    if not -aval.ndim <= axis < aval.ndim:
        raise ShapeError(
            f"spmd.lax.{fn}: axis={axis} is out of bounds for operand {aval} "
            f"({aval.ndim} dimension(s)); use an axis in [{-aval.ndim}, {aval.ndim})."
        )
    return operand, axis % aval.ndim


def _directed(scan: Callable, operand: Any, axis: int, reverse: bool) -> Any:
    if not reverse:
        return scan(operand, axis)
    return flip(scan(flip(operand, axis), axis), axis)


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running sums along ``axis``, in the operand's dtype. Example: ``cumsum(x, 1)``."""
    operand, axis = _operand("cumsum", operand, axis, "iufc", "numbers (not bools)")
    dtype = aval_of(operand).dtype
    return _directed(lambda x, a: numpy_cumsum(x, axis=a, dtype=dtype), operand, axis, reverse)


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running products along ``axis``, in the operand's dtype."""
    operand, axis = _operand("cumprod", operand, axis, "iufc", "numbers (not bools)")
    dtype = aval_of(operand).dtype
    return _directed(lambda x, a: numpy_cumprod(x, axis=a, dtype=dtype), operand, axis, reverse)


def _scan(name: str, primitive, operand: Any, axis: int, reverse: bool, kinds: str, what: str):
    operand, axis = _operand(name, operand, axis, kinds, what)
    return primitive.bind(operand, axis=axis, reverse=bool(reverse))


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running maxima along ``axis`` (a NaN stays to the end). Example: ``cummax(x)``."""
    return _scan("cummax", cummax_p, operand, axis, reverse, "iufc", "numbers (not bools)")


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running minima along ``axis`` (a NaN stays to the end)."""
    return _scan("cummin", cummin_p, operand, axis, reverse, "iufc", "numbers (not bools)")


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running ``log(sum(exp(x)))`` along ``axis``, without overflow, for floating
    operands. Example: ``cumlogsumexp(log_probs, 1)``."""
    return _scan("cumlogsumexp", cumlogsumexp_p, operand, axis, reverse, "f", "floating arrays")
