"""Tolerances that follow the dtype and the summation length, so that tests pass on any BLAS
and any order of summation (a sharded contraction sums in another order by design).

The bound on a length-``k`` sum of products computed in floating point, in any order, is
``k * eps * (|a| @ |b|)`` entrywise (to first order); ``slack`` allows a few roundings more
(the two results compared are each off by up to the bound). Nothing here is a fixed number:
a float32 test and a float64 test of the same contraction get tolerances ``2**29`` apart.
"""

from __future__ import annotations

import numpy as np


def product_error_bound(a, b, *, slack: float = 4.0) -> np.ndarray:
    """Entrywise bound on the rounding error of ``a @ b`` summed in any order, in float64:
    ``slack * k * eps * (|a| @ |b|)``, with ``eps`` the dtype's and ``k`` the contraction
    length (``a``'s last axis)."""
    a, b = np.asarray(a), np.asarray(b)
    eps = np.finfo(np.result_type(a.dtype, b.dtype)).eps
    length = a.shape[-1]
    return slack * length * eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))


def assert_close_product(got, expected, a, b, *, slack: float = 4.0) -> None:
    """``got`` equals ``expected`` (both ``a @ b`` summed in some order) to within the
    rounding error bound of a length-``k`` sum: ``slack * k * eps * (|a| @ |b|)`` entrywise,
    with ``eps`` the dtype's and ``k`` the contraction length."""
    bound = product_error_bound(a, b, slack=slack)
    error = np.abs(np.asarray(got, np.float64) - np.asarray(expected, np.float64))
    assert error.shape == bound.shape, f"shapes {error.shape} and {bound.shape}"
    worst = np.max(error - bound, initial=-np.inf)
    assert worst <= 0, (
        f"off by more than {slack} * {np.asarray(a).shape[-1]} * eps * (|a| @ |b|): excess {worst}"
    )


def assert_close_sigmoid_layer(got, x, w, b, *, slack: float = 4.0) -> None:
    """``got`` is ``sigmoid(x @ w + b)`` computed in the inputs' float dtype, in any order of
    summation, against the float64 value: the logits' error (``x @ w + b``: a sum of
    ``k + 1`` terms) times the sigmoid's slope ``y (1 - y)``, plus the sigmoid's own
    rounding (``slack * eps * y``)."""
    x, w, b = np.asarray(x), np.asarray(w), np.asarray(b)
    ones = np.ones((*x.shape[:-1], 1), x.dtype)
    logits_bound = product_error_bound(  # the bias as one more term of the sum
        np.concatenate([x, ones], axis=-1), np.concatenate([w, b[None]], axis=0), slack=slack
    )
    eps = np.finfo(np.result_type(x.dtype, w.dtype, b.dtype)).eps
    logits = x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64)
    want = 1 / (1 + np.exp(-logits))
    bound = want * (1 - want) * logits_bound + slack * eps * want
    error = np.abs(np.asarray(got, np.float64) - want)
    assert error.shape == bound.shape, f"shapes {error.shape} and {bound.shape}"
    worst = np.max(error - bound, initial=-np.inf)
    assert worst <= 0, f"off by more than the logits' rounding through the sigmoid: {worst}"
