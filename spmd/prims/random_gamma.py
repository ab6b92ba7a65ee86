"""The gamma sampler as a primitive: Marsaglia and Tsang's rejection method, as JAX runs it.

Element ``i`` draws from its own key, ``split(key, size)[i]`` (its counter is its global flat
index), until its proposal is accepted, so its number depends on nothing else: a device
computes its block alone, and the numbers are JAX's ``random.gamma``'s (up to the last bits
of ``log``). For ``a < 1`` the sample of ``a + 1`` is boosted by ``u ** (1 / a)``;
``log_space`` returns the logarithm, computed without underflow (JAX's ``loggamma``).

Derivatives with respect to ``a`` are implicit (the sample moves with ``a`` at a fixed CDF):
``random_gamma_grad`` gives ``-(dF/da) / f``, with ``dF/da`` of the regularized incomplete
gamma function by central differences in float64.
"""

from __future__ import annotations

import numpy as np
import scipy.special

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.errors import SpmdTypeError
from spmd.prims.derivatives import batch_size, batch_to_front, bind, convert
from spmd.prims.elementwise import broadcasting
from spmd.prims.random import (
    block_params,
    check_bound,
    check_key,
    per_member,
    sampler_sharding,
    split_impl,
)
from spmd.prims.random_draws import normal_each, split_each, uniform_each
from spmd.prims.random_host import on_host


def _gamma_shape(key, a, *, shape, dtype, log_space):
    check_key("gamma", key)
    check_bound("gamma", "a", a, shape)
    return ShapedArray(shape, dtype)


def _marsaglia_tsang(keys, alpha, log_space: bool):
    """One gamma sample per key (uint32[2, n]) and shape ``alpha`` (n,), in alpha's dtype."""
    dtype = alpha.dtype.type
    one, third = dtype(1), dtype(1 / 3)
    boosted = alpha >= one
    alpha_up = np.where(boosted, alpha, alpha + one)
    d = alpha_up - third
    with np.errstate(invalid="ignore", divide="ignore"):
        c = third / np.sqrt(d)
    keys, boost_keys = split_each(keys, 2)
    x_sq, v_cubed, u = np.zeros_like(alpha), np.ones_like(alpha), np.full_like(alpha, 2)
    pending = np.ones(alpha.shape, bool)  # JAX's loop starts from a state its test rejects
    while pending.any():
        idx = np.flatnonzero(pending)
        keys[:, idx], x_keys, u_keys = split_each(keys[:, idx], 3)
        x, v = np.zeros(idx.size, alpha.dtype), np.full(idx.size, -one)
        redraw = np.ones(idx.size, bool)
        while redraw.any():  # a normal draw x with v = 1 + c x > 0
            r = np.flatnonzero(redraw)
            x_keys[:, r], sub = split_each(x_keys[:, r], 2)
            x[r] = normal_each(sub, alpha.dtype)
            v[r] = one + x[r] * c[idx[r]]
            redraw[r] = v[r] <= 0
        x_sq[idx], v_cubed[idx] = x * x, v * v * v
        u[idx] = uniform_each(u_keys, alpha.dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            squeeze = u[idx] >= one - dtype(0.0331) * (x_sq[idx] * x_sq[idx])
            log_test = np.log(u[idx]) >= x_sq[idx] * dtype(0.5) + d[idx] * (
                (one - v_cubed[idx]) + np.log(v_cubed[idx])
            )
        pending[idx] = squeeze & log_test
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if log_space:
            log_u = np.log1p(-uniform_each(boost_keys, alpha.dtype))  # -exponential(k)
            log_boost = np.where(boosted | (log_u == 0), dtype(0), log_u * (one / alpha))
            return (np.log(d) + np.log(v_cubed) + log_boost).astype(alpha.dtype)
        u_boost = one - uniform_each(boost_keys, alpha.dtype)
        boost = np.where(boosted, one, np.power(u_boost, one / alpha))
        return (d * v_cubed * boost).astype(alpha.dtype)


@on_host
def _gamma_impl(xp, key, a, *, shape, dtype, log_space, global_shape=None, start=None):
    keys = split_impl(np, key, shape=shape, global_shape=global_shape, start=start)
    keys = keys.reshape(-1, 2).T.copy()
    alpha = np.broadcast_to(np.asarray(a, dtype), shape).reshape(-1)
    if alpha.size == 0:
        return np.zeros(shape, dtype)
    return _marsaglia_tsang(keys, alpha, log_space).reshape(shape)


def _gamma_jvp(primals, out, tangents, *, shape, dtype, log_space):
    (_, a), (_, t) = primals, tangents
    if t is None:
        return None
    sample = bind("exp", out) if log_space else out
    grad = random_gamma_grad_p.bind(bind("broadcast_to", convert(a, dtype), shape=shape), sample)
    if log_space:
        grad = bind("true_divide", grad, sample)
    return bind("multiply", convert(t, dtype), grad)


random_gamma_p = Primitive(
    "random_gamma",
    Rules(
        shape=_gamma_shape,
        impl=_gamma_impl,
        sharding=sampler_sharding,
        local_params=block_params,
        jvp=_gamma_jvp,
        batch=per_member("random_gamma"),
    ),
)


# --- the implicit derivative d sample / d a ----------------------------------------------


def _gamma_grad_shape(a, sample):
    if a.dtype.kind != "f" or sample.dtype != a.dtype or a.shape != sample.shape:
        raise SpmdTypeError(f"random_gamma_grad takes two float arrays alike, not {a}, {sample}.")
    return ShapedArray(a.shape, a.dtype)


@on_host
def _gamma_grad_impl(xp, a, sample):
    a64, x64 = np.asarray(a, np.float64), np.asarray(sample, np.float64)
    h = 1e-4 * a64  # central differences of the regularized incomplete gamma (a > 0)
    dcdf = (scipy.special.gammainc(a64 + h, x64) - scipy.special.gammainc(a64 - h, x64)) / (2 * h)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_density = (a64 - 1) * np.log(x64) - x64 - scipy.special.gammaln(a64)
        return (-dcdf / np.exp(log_density)).astype(np.asarray(a).dtype)


def _gamma_grad_batch(args, dims):
    size = batch_size(args, dims)
    a, sample = (batch_to_front(x, d, size) for x, d in zip(args, dims, strict=True))
    return random_gamma_grad_p.bind(a, sample), 0


random_gamma_grad_p = Primitive(
    "random_gamma_grad",
    Rules(
        shape=_gamma_grad_shape,
        impl=_gamma_grad_impl,
        sharding=broadcasting(),
        batch=_gamma_grad_batch,
    ),
)
