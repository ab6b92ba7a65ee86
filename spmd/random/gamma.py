"""spmd.random's samplers built on the gamma distribution: gamma, loggamma, beta, dirichlet,
t, generalized_normal and ball.

gamma is a primitive (spmd.prims.random_gamma: each element loops until accepted, from its
own key); the others are JAX's compositions of it with normal, rademacher and exponential.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import spmd.numpy as snp
from spmd.core.trace import aval_of
from spmd.errors import ShapeError
from spmd.prims.random_gamma import random_gamma_p
from spmd.random.arguments import (
    broadcasts_to,
    concrete_int,
    float_dtype_arg,
    one_key,
    real_param,
    result_shape,
    shape_arg,
)
from spmd.random.continuous import exponential, normal
from spmd.random.discrete import rademacher
from spmd.random.keys import split

Shape = int | Sequence[int]


def _gamma(name: str, key, a, shape, dtype, log_space: bool):
    key = one_key(name, key)
    dtype = float_dtype_arg(name, dtype)
    real_param(name, "a", a)
    shape = result_shape(name, shape, a=a)
    return random_gamma_p.bind(key, a, shape=shape, dtype=dtype, log_space=log_space)


def gamma(key: Any, a: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Gamma floats of shape parameter ``a`` (rate 1), by Marsaglia and Tsang's method as in
    JAX; differentiable in ``a`` (implicitly). Example: ``gamma(key, 2.0, (100,))``."""
    return _gamma("gamma", key, a, shape, dtype, log_space=False)


def loggamma(key: Any, a: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """The logarithm of gamma floats, accurate where ``a`` is small and samples underflow.
    Example: ``loggamma(key, 0.01, (100,))``."""
    return _gamma("loggamma", key, a, shape, dtype, log_space=True)


def beta(key: Any, a: Any, b: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Beta floats: ``Ga / (Ga + Gb)`` of two gamma draws, computed in log space. Example:
    ``beta(key, 2.0, 5.0, (100,))``."""
    key = one_key("beta", key)
    dtype = float_dtype_arg("beta", dtype)
    shape = result_shape("beta", shape, a=real_param("beta", "a", a), b=real_param("beta", "b", b))
    keys = split(key)
    log_a = loggamma(keys[0], snp.broadcast_to(snp.asarray(a, dtype), shape), shape, dtype)
    log_b = loggamma(keys[1], snp.broadcast_to(snp.asarray(b, dtype), shape), shape, dtype)
    log_max = snp.maximum(log_a, log_b)
    scaled_a, scaled_b = snp.exp(log_a - log_max), snp.exp(log_b - log_max)
    return scaled_a / (scaled_a + scaled_b)


def dirichlet(key: Any, alpha: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Dirichlet vectors (last axis, summing to 1) of concentrations ``alpha`` (``(..., n)``):
    normalized gamma draws. Example: ``dirichlet(key, np.ones(3), (10,))`` is f32[10,3]."""
    key = one_key("dirichlet", key)
    dtype = float_dtype_arg("dirichlet", dtype)
    aval = aval_of(real_param("dirichlet", "alpha", alpha))
    if aval.ndim == 0:
        raise ShapeError(
            f"spmd.random.dirichlet: alpha {aval} must have at least one dimension (the "
            f"categories); pass e.g. alpha=np.ones(3)."
        )
    batch = aval.shape[:-1]
    shape = batch if shape is None else shape_arg("dirichlet", shape)
    if not broadcasts_to(batch, shape):
        raise ShapeError(
            f"spmd.random.dirichlet: alpha's batch shape {batch} (all but its last axis) does "
            f"not broadcast to shape={shape}; pass a shape it broadcasts to."
        )
    log_gamma = loggamma(key, snp.asarray(alpha, dtype), (*shape, aval.shape[-1]), dtype)
    unnormalized = snp.exp(log_gamma - snp.max(log_gamma, axis=-1, keepdims=True))
    return unnormalized / snp.sum(unnormalized, axis=-1, keepdims=True)


def t(key: Any, df: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Student's t floats with ``df`` degrees of freedom: ``n * sqrt(df / 2 / g)``, ``g``
    gamma of ``df / 2``. Example: ``t(key, 5.0, (100,))``."""
    key = one_key("t", key)
    dtype = float_dtype_arg("t", dtype)
    shape = result_shape("t", shape, df=real_param("t", "df", df))
    keys = split(key)
    half_df = snp.asarray(df, dtype) / 2
    g = gamma(keys[1], half_df, shape, dtype)
    return normal(keys[0], shape, dtype) * snp.sqrt(half_df / g)


def generalized_normal(key: Any, p: float, shape: Shape = (), dtype: Any = None) -> Any:
    """Floats of density proportional to ``exp(-|x|**p)``: a signed gamma draw of ``1/p`` to
    the power ``1/p``. Example: ``generalized_normal(key, 1.5, (100,))``."""
    key = one_key("generalized_normal", key)
    dtype = float_dtype_arg("generalized_normal", dtype)
    shape = shape_arg("generalized_normal", shape)
    keys = split(key)
    g = gamma(keys[0], 1 / p, shape, dtype)
    return rademacher(keys[1], shape, dtype) * g ** (1 / p)


def ball(key: Any, d: int, p: float = 2, shape: Shape = (), dtype: Any = None) -> Any:
    """Points uniform in the unit Lp ball of dimension ``d``, shape ``(*shape, d)``.
    Example: ``ball(key, 3, shape=(100,))``."""
    key = one_key("ball", key)
    dtype = float_dtype_arg("ball", dtype)
    d = concrete_int("ball", "d", d)
    shape = shape_arg("ball", shape)
    keys = split(key)
    g = generalized_normal(keys[0], p, (*shape, d), dtype)
    e = exponential(keys[1], shape, dtype)
    return g / ((snp.sum(snp.abs(g) ** p, axis=-1) + e) ** (1 / p))[..., None]
