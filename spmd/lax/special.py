"""spmd.lax's special functions, as jax.lax names them: erf, erfc, erf_inv, lgamma, digamma,
polygamma (spmd/prims/special.py holds the primitives)."""

from __future__ import annotations

import operator
from typing import Any

from spmd.errors import SpmdTypeError, SpmdValueError
from spmd.prims.special import digamma_p, erf_inv_p, erf_p, erfc_p, lgamma_p, polygamma_p

__all__ = ["digamma", "erf", "erf_inv", "erfc", "lgamma", "polygamma"]


def erf(x: Any) -> Any:
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``. Example: ``erf(x)``."""
    return erf_p.bind(x)


def erfc(x: Any) -> Any:
    """The complementary error function ``1 - erf(x)``, accurate where erf(x) nears 1."""
    return erfc_p.bind(x)


def erf_inv(x: Any) -> Any:
    """The inverse of ``erf`` on (-1, 1); +-inf at +-1, NaN outside [-1, 1]."""
    return erf_inv_p.bind(x)


def lgamma(x: Any) -> Any:
    """``log(abs(gamma(x)))``; +inf at 0 and the negative integers."""
    return lgamma_p.bind(x)


def digamma(x: Any) -> Any:
    """The derivative of ``lgamma``, ``gamma'(x) / gamma(x)``."""
    return digamma_p.bind(x)


def polygamma(m: Any, x: Any) -> Any:
    """The ``m``-th derivative of ``digamma`` (``m = 0`` is digamma itself).

    ``m`` must be a concrete non-negative integer (a Python int or a 0-d integer array that
    is not traced): it picks the function, e.g. ``polygamma(1, x)`` is the trigamma function.
    """
    try:
        order = operator.index(m)
    except TypeError:
        raise SpmdTypeError(
            f"spmd.lax.polygamma: m must be a concrete non-negative int (which derivative of "
            f"digamma), not {type(m).__name__}; pass a Python int, or mark it static under jit."
        ) from None
    if order < 0:
        raise SpmdValueError(
            f"spmd.lax.polygamma: m={order} is negative; m counts derivatives of digamma, so "
            f"it is 0 (digamma), 1 (trigamma), 2, ..."
        )
    return polygamma_p.bind(x, order=order)
