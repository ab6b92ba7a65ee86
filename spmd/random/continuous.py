"""spmd.random's continuous samplers of one variable: uniform, normal, truncated_normal,
exponential, gumbel, laplace, logistic and cauchy.

All but uniform, normal and truncated_normal (primitives) are JAX's formulas over a uniform
draw, so they get sharding, jit and vmap from the uniform primitive and spmd.numpy, and equal
``jax.random``'s numbers up to the last bits of ``log``/``tan``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.errors import SpmdValueError
from spmd.prims.random import random_normal_p, random_uniform_p
from spmd.prims.random_truncated import random_truncated_normal_p
from spmd.random.arguments import (
    float_dtype_arg,
    one_key,
    real_param,
    result_shape,
    shape_arg,
)

Shape = int | Sequence[int]


def uniform(
    key: Any,
    shape: Shape = (),
    dtype: Any = np.float32,
    minval: Any = 0.0,
    maxval: Any = 1.0,
) -> Any:
    """Uniform floats in ``[minval, maxval)``. Example: ``uniform(key, (3,), minval=-1.)``.

    The top mantissa bits of the random bits under the exponent of 1.0 give a float in
    [1, 2), minus 1; ``minval``/``maxval`` (cast to ``dtype``) may broadcast to ``shape``.
    """
    dtype = float_dtype_arg("uniform", dtype)
    return random_uniform_p.bind(
        key, minval, maxval, shape=shape_arg("uniform", shape), dtype=dtype
    )


def normal(key: Any, shape: Shape = (), dtype: Any = np.float32) -> Any:
    """Standard normal floats. Example: ``spmd.random.normal(key, (1024,))``.

    By the inverse error function, as JAX: ``sqrt(2) * erfinv(u)`` with ``u`` uniform in
    (-1, 1) (Giles' polynomial approximation of erfinv).
    """
    dtype = float_dtype_arg("normal", dtype)
    return random_normal_p.bind(key, shape=shape_arg("normal", shape), dtype=dtype)


def truncated_normal(
    key: Any, lower: Any, upper: Any, shape: Shape | None = None, dtype: Any = None
) -> Any:
    """Standard normal floats conditioned on ``lower < x < upper`` (open interval). Example:
    ``truncated_normal(key, -2.0, 2.0, (128, 64))``.

    By the inverse CDF, as JAX: ``sqrt(2) * erfinv(u)`` with ``u`` uniform between
    ``erf(lower / sqrt 2)`` and ``erf(upper / sqrt 2)``. ``shape`` defaults to the bounds'
    broadcast shape.
    """
    dtype = float_dtype_arg("truncated_normal", dtype)
    real_param("truncated_normal", "lower", lower)
    real_param("truncated_normal", "upper", upper)
    shape = result_shape("truncated_normal", shape, lower=lower, upper=upper)
    return random_truncated_normal_p.bind(key, lower, upper, shape=shape, dtype=dtype)


def exponential(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Exponential floats (rate 1): ``-log1p(-u)``. Example: ``exponential(key, (10,))``."""
    dtype = float_dtype_arg("exponential", dtype)
    shape = shape_arg("exponential", shape)
    u = uniform(one_key("exponential", key), shape, dtype)
    return -snp.log1p(-u)


def gumbel(key: Any, shape: Shape = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel floats: ``-log(-log(u))``. Example: ``gumbel(key, (5,))``.

    ``mode="low"`` (the default) draws ``u`` in ``[tiny, 1)``, so the largest value is about
    16 in float32; ``mode="high"`` adds a second uniform's bits below the first's for
    ``u < 1/2``, reaching about 32 at twice the cost (JAX's modes).
    """
    dtype = float_dtype_arg("gumbel", dtype)
    shape = shape_arg("gumbel", shape)
    key = one_key("gumbel", key)
    mode = "low" if mode is None else mode
    info = np.finfo(dtype)
    if mode == "low":
        u = uniform(key, shape, dtype, minval=float(info.tiny), maxval=1.0)
        return -snp.log(-snp.log(u))
    if mode == "high":
        pair = uniform(key, (2, *shape), dtype)
        high, low = pair[0], pair[1]
        x = snp.where(high >= 0.5, high, high + float(2.0**-info.nmant) * low + float(info.tiny))
        return -snp.log(-snp.log1p(-x))
    raise SpmdValueError(
        f"spmd.random.gumbel: mode={mode!r} is not supported; use 'low' or 'high' (JAX's "
        f"'highest' is not implemented)."
    )


def laplace(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Laplace floats (density ``exp(-|x|) / 2``). Example: ``laplace(key, (4,))``."""
    dtype = float_dtype_arg("laplace", dtype)
    shape = shape_arg("laplace", shape)
    lo = -1.0 + float(np.finfo(dtype).epsneg)
    u = uniform(one_key("laplace", key), shape, dtype, minval=lo, maxval=1.0)
    return snp.sign(u) * snp.log1p(-snp.abs(u))


def logistic(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard logistic floats: ``log(u) - log1p(-u)``. Example: ``logistic(key, (4,))``."""
    dtype = float_dtype_arg("logistic", dtype)
    shape = shape_arg("logistic", shape)
    tiny = float(np.finfo(dtype).tiny)
    x = uniform(one_key("logistic", key), shape, dtype, minval=tiny, maxval=1.0)
    return snp.log(x) - snp.log1p(-x)


def cauchy(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard Cauchy floats: ``tan(pi (u - 1/2))``. Example: ``cauchy(key, (4,))``."""
    dtype = float_dtype_arg("cauchy", dtype)
    shape = shape_arg("cauchy", shape)
    eps = float(np.finfo(dtype).eps)
    u = uniform(one_key("cauchy", key), shape, dtype, minval=eps, maxval=1.0)
    return snp.tan(np.pi * (u - 0.5))
