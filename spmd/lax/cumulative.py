"""jax.lax's cumulative reductions along one axis: cumsum, cumprod, cummax, cummin and
cumlogsumexp, each with ``reverse`` (accumulate from the end).

cumsum and cumprod bind spmd.numpy's (in the operand's dtype, as lax keeps it). cummax,
cummin and cumlogsumexp are parallel prefix scans (Hillis and Steele): log2(n) steps, each
combining every element with the one ``2**step`` before it (lax.pad shifts in the identity)
by spmd.numpy's maximum, minimum or logaddexp; exact for max and min, and JAX's own way to
differentiate all three (its associative_scan). Derivatives, batching and sharding come
from those functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.lax import operator_checks as check
from spmd.lax.padding import pad
from spmd.numpy import asarray, flip, logaddexp, maximum, minimum
from spmd.numpy import cumprod as numpy_cumprod
from spmd.numpy import cumsum as numpy_cumsum
from spmd.prims.reduction import identity

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


def _prefix_scan(combine: Callable, unit: Any) -> Callable:
    """The inclusive scan of ``combine`` along an axis by doubling strides."""

    def scan(x: Any, axis: int) -> Any:
        aval = aval_of(x)
        n, stride = aval.shape[axis], 1
        while stride < n:
            config = [(0, 0, 0)] * aval.ndim
            config[axis] = (stride, -stride, 0)  # x shifted ``stride`` on, the unit shifted in
            x = combine(x, pad(x, unit, config))
            stride *= 2
        return x

    return scan


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


def _extreme(name: str, combine: Callable, operand: Any, axis: int, reverse: bool) -> Any:
    operand, axis = _operand(f"cum{name}", operand, axis, "iufc", "numbers (not bools)")
    unit = np.array(identity(name, aval_of(operand).dtype)).astype(aval_of(operand).dtype)
    return _directed(_prefix_scan(combine, unit), operand, axis, reverse)


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running maxima along ``axis`` (a NaN stays to the end). Example: ``cummax(x)``."""
    return _extreme("max", maximum, operand, axis, reverse)


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running minima along ``axis`` (a NaN stays to the end)."""
    return _extreme("min", minimum, operand, axis, reverse)


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """Running ``log(sum(exp(x)))`` along ``axis``, without overflow, for floating
    operands. Example: ``cumlogsumexp(log_probs, 1)``."""
    operand, axis = _operand("cumlogsumexp", operand, axis, "f", "floating arrays")
    unit = np.array(-np.inf, aval_of(operand).dtype)
    return _directed(_prefix_scan(logaddexp, unit), operand, axis, reverse)
