"""spmd.scipy.special: jax.scipy.special's functions, over spmd.numpy and spmd.lax.

erf, erfc, erfinv, gammaln, digamma and polygamma are primitives (spmd/prims/special.py); the
rest are compositions. Bools and integers are converted to the float dtype NumPy's float
ufuncs give them (float16 for bool, int8 and uint8; float32 for int16 and uint16; float64 for
wider integers); floats keep their dtype.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import spmd.lax as lax
import spmd.numpy as snp
from spmd.core.aval import result_dtype
from spmd.core.axes import normalize_axes
from spmd.core.trace import aval_of
from spmd.custom_derivatives import custom_jvp
from spmd.errors import SpmdTypeError
from spmd.nn import functions as nn
from spmd.prims.elementwise import logistic_p
from spmd.prims.special import float_dtype

__all__ = ["digamma", "erf", "erfc", "erfinv", "expit", "gammaln", "log_ndtr", "log_softmax",
           "logit", "logsumexp", "ndtr", "ndtri", "polygamma", "softmax", "xlog1py",
           "xlogy"]  # fmt: skip

Axis = int | Sequence[int] | None

erf = lax.erf
erfc = lax.erfc
erfinv = lax.erf_inv
gammaln = lax.lgamma
digamma = lax.digamma
polygamma = lax.polygamma


def _inexact(name: str, *args: Any) -> list[Any]:
    """``args`` converted to one float dtype: their result type's (bools and integers: the
    float NumPy's ufuncs give them). Python scalars stay weak unless all are scalars."""
    dtype, _ = result_dtype(*(aval_of(a) for a in args))
    if dtype.kind == "c":
        raise SpmdTypeError(
            f"spmd.scipy.special.{name} does not support {dtype}: it is defined for real "
            f"numbers only here. Take the real part first, e.g. {name}(x.real)."
        )
    dtype = float_dtype(dtype)
    return [snp.astype(a, dtype) for a in args]


def expit(x: Any) -> Any:
    """The logistic sigmoid ``1 / (1 + exp(-x))``. Example: ``expit(logits)``."""
    dtype, _ = result_dtype(aval_of(x))
    if dtype.kind in "biu":  # as the other functions here: bool -> float16, as NumPy's ufuncs
        x = snp.astype(x, float_dtype(dtype))
    return logistic_p.bind(x)


def logit(x: Any) -> Any:
    """The inverse of expit, ``log(x / (1 - x))``: -inf at 0, +inf at 1, NaN outside [0, 1]."""
    (x,) = _inexact("logit", x)
    return snp.log(x / (1 - x))


def ndtr(x: Any) -> Any:
    """The standard normal CDF, ``erfc(-x / sqrt(2)) / 2`` (accurate in the lower tail)."""
    (x,) = _inexact("ndtr", x)
    return 0.5 * erfc(x * -math.sqrt(0.5))


def log_ndtr(x: Any) -> Any:
    """``log(ndtr(x))``, accurate in both tails: above 0 ``log1p(-ndtr(-x))``; below -20
    (-10 for float32 and float16), where ndtr underflows, the log of the
    asymptotic series ``exp(-x**2/2) / (-x sqrt(2 pi)) (1 - 1/x**2 + 3/x**4 - 15/x**6)``."""
    (x,) = _inexact("log_ndtr", x)
    lower = -20 if aval_of(x).dtype == np.float64 else -10
    far = snp.minimum(x, lower)
    inverse_square = 1 / (far * far)
    series = snp.log1p(inverse_square * (inverse_square * (3 - 15 * inverse_square) - 1))
    tail = -0.5 * far * far - snp.log(-far) - 0.5 * math.log(2 * math.pi) + series
    middle = snp.log(ndtr(snp.clip(x, lower, 0)))
    high = snp.log1p(-ndtr(-snp.maximum(x, 0)))
    return snp.where(x < lower, tail, snp.where(x > 0, high, middle))


def ndtri(p: Any) -> Any:
    """The inverse of ndtr (the standard normal quantile), ``sqrt(2) * erfinv(2p - 1)``:
    -inf at 0, +inf at 1, NaN outside [0, 1]."""
    (p,) = _inexact("ndtri", p)
    return math.sqrt(2) * erfinv(2 * p - 1)


def _xlog_rule(name: str, log, log_derivative):
    """``x * log(y)`` (``log`` is log or log1p), 0 wherever ``x`` is 0, with JAX's derivative
    ``dx * log(y) + dy * x * log'(y)`` (NaN and inf where y is 0 and x is too)."""

    @custom_jvp
    def fn(x, y):
        zero = x == 0
        return snp.where(zero, 0, x * log(snp.where(zero, 1, y)))

    @fn.defjvp
    def _jvp(primals, tangents):
        (x, y), (dx, dy) = primals, tangents
        return fn(x, y), dx * log(y) + dy * x * log_derivative(y)

    def public(x: Any, y: Any) -> Any:
        x, y = _inexact(name, x, y)
        return fn(x, y)

    public.__name__ = public.__qualname__ = name
    return public


xlogy = _xlog_rule("xlogy", snp.log, lambda y: 1 / y)
xlogy.__doc__ = "``x * log(y)``, and 0 where ``x`` is 0 (also where y is 0), as JAX's."
xlog1py = _xlog_rule("xlog1py", snp.log1p, lambda y: 1 / (1 + y))
xlog1py.__doc__ = "``x * log1p(y)``, and 0 where ``x`` is 0 (also where y is -1), as JAX's."


def softmax(x: Any, axis: Axis = None) -> Any:
    """``exp(x) / sum(exp(x))`` over ``axis`` (all axes by default, as SciPy's)."""
    return nn.softmax(x, axis=axis)


def log_softmax(x: Any, axis: Axis = None) -> Any:
    """``x - logsumexp(x)`` over ``axis`` (all axes by default, as SciPy's)."""
    return nn.log_softmax(x, axis=axis)


def logsumexp(
    a: Any,
    axis: Axis = None,
    b: Any = None,
    keepdims: bool = False,
    return_sign: bool = False,
    where: Any = None,
) -> Any:
    """``log(sum(b * exp(a)))`` over ``axis`` (all axes by default), computed stably.

    Example: ``logsumexp(logits, axis=-1)``; ``logsumexp(a, b=w, return_sign=True)`` gives
    ``(log(abs(s)), sign(s))`` of the sum ``s``. Without return_sign a negative sum gives NaN.
    Entries where ``b`` is 0, or ``where`` is False, are left out (an all-left-out slice gives
    -inf, as JAX's).
    """
    if b is None:
        (a,) = _inexact("logsumexp", a)
    else:
        a, b = _inexact("logsumexp", a, b)
        a = snp.where(b != 0, a, -np.inf)
    if where is not None:
        a = snp.where(where, a, -np.inf)
    aval = aval_of(a)
    axes = tuple(range(aval.ndim)) if axis is None else axis
    axes = normalize_axes(axes, aval.ndim, "spmd.scipy.special.logsumexp", str(aval))
    if all(aval.shape[d] for d in axes):
        amax = snp.max(a, axis=axes, keepdims=True)
        amax = lax.stop_gradient(snp.where(snp.isfinite(amax), amax, 0))
    else:  # a sum over nothing: the shift does not matter
        amax = snp.zeros([1 if d in axes else n for d, n in enumerate(aval.shape)], aval.dtype)
    exp_a = snp.exp(a - amax)
    if b is not None:
        exp_a = exp_a * b
    total = snp.sum(exp_a, axis=axes, keepdims=keepdims)
    shift = amax if keepdims else snp.squeeze(amax, axes)
    out = snp.log(snp.abs(total)) + shift
    if return_sign:
        return out, snp.sign(total)
    return out if b is None else snp.where(total < 0, np.nan, out)
