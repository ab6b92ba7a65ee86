"""Tolerances that follow the dtype and the summation length, so that tests pass on any BLAS
and any order of summation (a sharded contraction sums in another order by design)."""

from __future__ import annotations

import numpy as np


def assert_close_product(got, expected, a, b, *, slack: float = 4.0) -> None:
    """``got`` equals ``expected`` (both ``a @ b`` summed in some order) to within the
    rounding error bound of a length-``k`` sum: ``slack * k * eps * (|a| @ |b|)`` entrywise,
    with ``eps`` the dtype's and ``k`` the contraction length."""
    a, b = np.asarray(a), np.asarray(b)
    dtype = np.result_type(a.dtype, b.dtype)
    eps = np.finfo(dtype).eps
    length = a.shape[-1]
    bound = slack * length * eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    error = np.abs(np.asarray(got, np.float64) - np.asarray(expected, np.float64))
    worst = np.max(error - bound, initial=-np.inf)
    assert worst <= 0, f"off by more than {slack} * {length} * eps * (|a| @ |b|): excess {worst}"
