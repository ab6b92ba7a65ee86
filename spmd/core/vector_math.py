"""float32 ``exp``, ``tanh`` and ``logistic`` for compiled kernels (spmd/core/fused_compiled.py),
written as arithmetic that LLVM vectorizes: a call of the C library's ``expf`` inside a loop
keeps the loop scalar, about five times slower than NumPy's own SIMD loops.

``exp`` is within 1 ulp of the correctly rounded result, ``tanh`` and ``logistic`` within 2
(NumPy's float32 ``exp`` is within 2, its ``tanh`` within 1); NaN, the infinities, signed
zeros, overflow to inf and underflow through the subnormals come out as NumPy's. ``exp`` is
Cephes' ``expf``: ``x = n ln2 + r`` with ``|r| <= ln2/2``,
``e^r`` by a degree-7 polynomial, and the scale ``2^n`` applied as two float32 powers of two
so that a subnormal result is rounded once. The functions need numba; importing this
module imports it.
"""

from __future__ import annotations

import math

import numba
import numpy as np

F = np.float32
_JIT = {"fastmath": {"contract"}, "error_model": "numpy", "nogil": True}


@numba.njit(**_JIT)
def exp32(x):
    clamped = min(max(x, F(-110.0)), F(100.0))  # beyond these, 0 and inf once scaled
    n = np.floor(clamped * F(1.44269504088896341) + F(0.5))
    r = clamped - n * F(0.693359375)
    r = r - n * F(-2.12194440e-4)
    p = F(1.9875691500e-4)
    p = p * r + F(1.3981999507e-3)
    p = p * r + F(8.3334519073e-3)
    p = p * r + F(4.1665795894e-2)
    p = p * r + F(1.6666665459e-1)
    p = p * r + F(5.0000001201e-1)
    p = p * r * r + r + F(1.0)
    k = np.int32(n)
    half = k >> 1
    low = np.int32((half + 127) << 23).view(np.float32)
    high = np.int32((k - half + 127) << 23).view(np.float32)
    y = (p * low) * high
    return y if x == x else x


@numba.njit(**_JIT)
def tanh32(x):
    """Below 0.625 in magnitude, Cephes' odd polynomial; above, ``(1 - e) / (1 + e)``
    with ``e = exp(-2|x|)``, signed as ``x``."""
    a = abs(x)
    z = x * x
    p = F(-5.70498872745e-3)
    p = p * z + F(2.06390887954e-2)
    p = p * z + F(-5.37397155531e-2)
    p = p * z + F(1.33314422036e-1)
    p = p * z + F(-3.33332819422e-1)
    small = x * (F(1.0) + z * p)  # x * (...), so that -0.0 stays -0.0
    e = exp32(F(-2.0) * a)
    large = math.copysign((F(1.0) - e) / (F(1.0) + e), x)
    return small if a < F(0.625) else large


@numba.njit(**_JIT)
def logistic32(x):
    """``1 / (1 + exp(-x))``, JAX's formula and spmd's NumPy one."""
    return F(1.0) / (F(1.0) + exp32(-x))
