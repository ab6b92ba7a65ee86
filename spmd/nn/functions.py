"""spmd.nn: neural-network functions with jax.nn's semantics, written over spmd.numpy.

Each function is a composition of spmd.numpy functions, so it runs eagerly and inside
spmd.jit, and float32 stays float32 (constants are Python scalars, which promote weakly).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.core.aval import check_dtype
from spmd.core.axes import normalize_axes, normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.prims.elementwise import logistic_p

__all__ = ["elu", "gelu", "glu", "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp",
           "one_hot", "relu", "sigmoid", "silu", "softmax", "softplus", "standardize",
           "swish"]  # fmt: skip

Axis = int | Sequence[int] | None

# Cephes' rational approximations of erf (|x| <= 1) and erfc (1 < |x| < 8, and beyond),
# highest power first, as XLA's Erf/Erfc use them.
# fmt: off
_ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
          7.00332514112805075473e3, 5.55923013010394962768e4)
_ERF_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4)
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
_ERFC_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2)
_ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
           6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)
_ERFC_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
           1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)
# fmt: on


def _polynomial(coefficients: Sequence[float], x: Any) -> Any:
    p = coefficients[0] * x + coefficients[1]
    for c in coefficients[2:]:
        p = p * x + c
    return p


def _erfc(x: Any) -> Any:
    """The complementary error function, elementwise (Cephes' approximations): 2 at -inf,
    0 at +inf. Each branch is evaluated where it is finite (the tail's rational functions
    are clamped where ``exp(-x * x)`` is 0 anyway, the series to ``|x| <= 1``)."""
    ax = snp.abs(x)
    gauss = snp.exp(-(x * x))
    far = snp.minimum(ax, 32)
    tail = snp.where(
        far < 8,
        gauss * _polynomial(_ERFC_P, far) / _polynomial(_ERFC_Q, far),
        gauss * _polynomial(_ERFC_R, far) / _polynomial(_ERFC_S, far),
    )
    tail = snp.where(x < 0, 2 - tail, tail)
    near = snp.clip(x, -1, 1)
    x2 = near * near
    return snp.where(ax > 1, tail, 1 - near * _polynomial(_ERF_T, x2) / _polynomial(_ERF_U, x2))


def _axes(name: str, axis: Axis, x: Any) -> tuple[int, ...]:
    """``axis`` (None: all of them) as a tuple of non-negative axes of ``x``."""
    aval = aval_of(x)
    if axis is None:
        return tuple(range(aval.ndim))
    return normalize_axes(axis, aval.ndim, f"spmd.nn.{name}", str(aval))


def _max(x: Any, axes: tuple[int, ...]) -> Any:
    """The max of ``x`` over ``axes`` (kept, size 1), a stabilizing shift; 0 where an axis is
    empty, which JAX's ``max(..., initial=-inf)`` gives too once the shift drops non-finite
    values (and the result, a sum over nothing, is empty or -inf whatever the shift)."""
    aval = aval_of(x)
    if all(aval.shape[axis] for axis in axes):
        return snp.max(x, axis=axes, keepdims=True)
    return snp.zeros([1 if d in axes else n for d, n in enumerate(aval.shape)], aval.dtype)


def _inexact(x: Any) -> Any:
    """``x``, with bools and integers converted to the float dtype NumPy's float ufuncs (and
    ``sigmoid``) give them: float16 for bool, int8 and uint8, float32 for int16 and uint16,
    float64 for wider integers. Floats and complex numbers are kept."""
    dtype = aval_of(x).dtype
    return x if dtype.kind in "fc" else snp.astype(x, np.promote_types(dtype, np.float16))


def _real_numbers(name: str, x: Any) -> Any:
    """``x`` as floats (``_inexact``) for the softmax family, which subtracts a max: in an
    integer dtype that wraps. Bools are refused, as NumPy refuses ``x - max(x)`` of them."""
    aval = aval_of(x)
    if aval.dtype == np.bool_:
        raise SpmdTypeError(
            f"spmd.nn.{name} does not support {aval}: x - max(x) is undefined for booleans (as "
            f"in NumPy). Convert first, e.g. {name}(x.astype(np.float32))."
        )
    return _inexact(x)


def sigmoid(x: Any) -> Any:
    """Logistic sigmoid ``1 / (1 + exp(-x))``, without overflow warnings. Example:
    ``sigmoid(x)``."""
    return logistic_p.bind(x)


def relu(x: Any) -> Any:
    """Rectified linear unit ``max(x, 0)``. Example: ``spmd.nn.relu(x)``."""
    return snp.maximum(x, 0)


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit; the tanh approximation unless ``approximate=False``.

    Example: ``spmd.nn.gelu(x, approximate=False)`` is ``x * Phi(x)`` computed with erfc.
    Bools and integers are converted to a float first in either form, the one NumPy's float
    ufuncs give them (float16 for bool and int8, float32 for int16, float64 for int32).
    """
    x = _inexact(x)
    if aval_of(x).dtype == np.float16:  # as XLA does: float16's range cannot hold the series
        return snp.astype(gelu(snp.astype(x, np.float32), approximate), np.float16)
    # the limit at -inf is 0 (-inf times a CDF of 0 would be nan)
    scale = snp.where(x == -np.inf, 0, x)
    if approximate:  # 0.5 * (1 + tanh(u)) is sigmoid(2u), which keeps its accuracy for x << 0
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * (x**3))
        return scale * sigmoid(2 * inner)
    return 0.5 * scale * _erfc(-x * math.sqrt(0.5))


def softmax(x: Any, axis: Axis = -1) -> Any:
    """``exp(x) / sum(exp(x))`` along ``axis``, shifted by the max for stability.

    Example: ``spmd.nn.softmax(logits, axis=-1)``.
    """
    axes = _axes("softmax", axis, x)
    x = _real_numbers("softmax", x)
    unnormalized = snp.exp(x - _max(x, axes))
    return unnormalized / snp.sum(unnormalized, axis=axes, keepdims=True)


def log_softmax(x: Any, axis: Axis = -1) -> Any:
    """``x - logsumexp(x)`` along ``axis``. Example: ``spmd.nn.log_softmax(logits)``."""
    axes = _axes("log_softmax", axis, x)
    x = _real_numbers("log_softmax", x)
    shifted = x - _max(x, axes)
    return shifted - snp.log(snp.sum(snp.exp(shifted), axis=axes, keepdims=True))


def logsumexp(a: Any, axis: Axis = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(a)))`` over ``axis`` (all axes by default), computed stably.

    Example: ``spmd.nn.logsumexp(x, axis=1)``. An all ``-inf`` slice gives ``-inf``. Bools and
    integers are converted first to the float dtype NumPy's ``exp`` gives them.
    """
    axes = _axes("logsumexp", axis, a)
    a = _inexact(a)
    amax = _max(a, axes)
    amax = snp.where(snp.isfinite(amax), amax, 0)
    total = snp.sum(snp.exp(a - amax), axis=axes, keepdims=keepdims)
    return snp.log(total) + (amax if keepdims else snp.squeeze(amax, axes))


def one_hot(x: Any, num_classes: int, dtype: Any = np.float32, axis: int = -1) -> Any:
    """Indices to one-hot vectors along a new ``axis``; out-of-range indices give all zeros.

    Example: ``spmd.nn.one_hot(labels, 10)`` turns int[n] into float32[n, 10].
    """
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise SpmdTypeError(
            f"spmd.nn.one_hot: num_classes must be a concrete int (the size of the new axis), "
            f"not {type(num_classes).__name__}; mark it static under jit."
        ) from None
    dtype = check_dtype(dtype)
    ndim = aval_of(x).ndim + 1
    axis = normalize_axis(axis, ndim, "spmd.nn.one_hot", f"the result (rank {ndim})")
    classes = np.arange(num_classes).reshape([num_classes if d == axis else 1 for d in range(ndim)])
    return snp.astype(snp.equal(snp.expand_dims(x, axis), classes), dtype)


def silu(x: Any) -> Any:
    """The sigmoid linear unit (swish) ``x * sigmoid(x)``. Example: ``spmd.nn.silu(x)``."""
    x = _inexact(x)
    return x * sigmoid(x)


swish = silu


def softplus(x: Any) -> Any:
    """``log(1 + exp(x))``, as ``log1p(exp(-|x|)) + max(x, 0)`` (no overflow for large x)."""
    x = _inexact(x)
    return snp.log1p(snp.exp(-snp.abs(x))) + snp.maximum(x, 0)


def log_sigmoid(x: Any) -> Any:
    """``log(sigmoid(x))``, as ``-softplus(-x)``. Example: ``spmd.nn.log_sigmoid(logits)``."""
    return -softplus(-_inexact(x))


def elu(x: Any, alpha: Any = 1.0) -> Any:
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere. Example: ``elu(x, 0.5)``."""
    x = _inexact(x)
    positive = x > 0
    return snp.where(positive, x, alpha * snp.expm1(snp.where(positive, 0, x)))


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """``x`` where ``x >= 0``, ``negative_slope * x`` elsewhere. Example:
    ``leaky_relu(x, negative_slope=0.2)``."""
    x = _inexact(x)
    return snp.where(x >= 0, x, negative_slope * x)


def glu(x: Any, axis: int = -1) -> Any:
    """The gated linear unit: ``x`` split in two halves along ``axis``, ``a * sigmoid(b)``.

    Example: ``spmd.nn.glu(x)`` turns f32[n, 2k] into f32[n, k]; ``axis`` must have an even size.
    """
    aval = aval_of(x)
    axis = normalize_axis(axis, aval.ndim, "spmd.nn.glu", str(aval))
    size = aval.shape[axis]
    if size % 2:
        raise ShapeError(
            f"spmd.nn.glu: axis={axis} of {aval} has odd size {size}; glu splits it into two "
            f"equal halves (value and gate), so give it an even size."
        )
    x = _inexact(x)
    first, second = snp.split(x, 2, axis=axis)
    return first * sigmoid(second)


def standardize(
    x: Any,
    axis: Axis = -1,
    mean: Any = None,
    variance: Any = None,
    epsilon: Any = 1e-5,
) -> Any:
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis``, as jax.nn.standardize: the
    mean and ``mean(x**2) - mean**2`` over ``axis`` unless given. Example:
    ``standardize(activations, axis=-1)``."""
    axes = _axes("standardize", axis, x)
    x = _inexact(x)
    if variance is None and mean is None:  # JAX's formula below cancels: var is closer
        variance = snp.var(x, axis=axes, keepdims=True)
    if mean is None:
        mean = snp.mean(x, axis=axes, keepdims=True)
    if variance is None:
        variance = snp.mean(x * x, axis=axes, keepdims=True) - mean * mean
    return (x - mean) / snp.sqrt(variance + epsilon)
