"""The Poisson sampler as a primitive: JAX's two algorithms, Knuth's for rates below 10 and
Hörmann's transformed rejection above, both run over the whole result and then selected.

Each iteration draws a whole array from the next key of a chain, and the rejection loop
runs until every element has been accepted, keeping an element's last accepted proposal:
an element's number depends on how long the others took, as in JAX. So the result is
computed whole (no sharding rule: a sharded result is sliced from it), which is what makes
it the same numbers on any mesh. Rates are float32, as JAX makes them.
"""

from __future__ import annotations

import numpy as np
import scipy.special

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.prims.random import (
    bits_for_counters,
    check_bound,
    check_key,
    per_member,
    scale,
    split_impl,
    uniform_impl,
    unit_floats,
)
from spmd.prims.random_host import on_host

_F32 = np.dtype(np.float32)


def _poisson_shape(key, lam, *, shape, dtype):
    check_key("poisson", key)
    check_bound("poisson", "lam", lam, shape)
    return ShapedArray(shape, dtype)


def _split(key, num: int):
    return list(split_impl(np, key, shape=(num,)))


def _uniform(key, shape):
    return uniform_impl(np, key, 0.0, 1.0, shape=shape, dtype=_F32)


def _knuth(key, lam, shape, dtype):
    """Count uniforms until their product falls to exp(-lam); each iteration draws only for
    the elements still counting (element ``i``'s uniform is counter ``i``'s, so the others'
    draws, which JAX makes and discards, change nothing)."""
    lam = lam.reshape(-1)
    k, log_product = np.zeros(lam.shape, dtype), np.zeros(lam.shape, _F32)
    counting = log_product > -lam
    while counting.any():
        key, subkey = _split(key, 2)
        idx = np.flatnonzero(counting)
        k[idx] += dtype.type(1)
        u = scale(unit_floats(bits_for_counters(subkey, idx.astype(np.uint64)), _F32), 0.0, 1.0)
        with np.errstate(divide="ignore"):
            log_product[idx] += np.log(u)
        counting[idx] = log_product[idx] > -lam[idx]
    return (k - dtype.type(1)).astype(dtype).reshape(shape)


def _rejection(key, lam, shape, dtype):
    """Hörmann's PTRS: a proposal from two uniforms, accepted by a squeeze or the log-pmf."""
    log_lam = np.log(lam)
    b = 0.931 + 2.53 * np.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    k_out, accepted = np.full(shape, -1, _F32), np.zeros(shape, bool)
    while not accepted.all():
        key, subkey_u, subkey_v = _split(key, 3)
        u = _uniform(subkey_u, shape) - _F32.type(0.5)
        v = _uniform(subkey_v, shape)
        u_shifted = _F32.type(0.5) - np.abs(u)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            k = np.floor((2 * a / u_shifted + b) * u + lam + _F32.type(0.43))
            s = np.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
            t = -lam + k * log_lam - scipy.special.gammaln(k + _F32.type(1)).astype(_F32)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        k_out = np.where(accept, k, k_out)
        accepted |= accept
    with np.errstate(invalid="ignore"):
        return k_out.astype(dtype)


@on_host
def _poisson_impl(xp, key, lam, *, shape, dtype):
    lam = np.broadcast_to(np.asarray(lam, _F32), shape)
    use_knuth = np.isnan(lam) | (lam < 10)
    result = np.zeros(shape, dtype)
    if use_knuth.any():  # each algorithm runs only if some element needs it: the other's
        knuth = _knuth(key, np.where(use_knuth, lam, _F32.type(0)), shape, dtype)
        result = np.where(use_knuth, knuth, result)
    if not use_knuth.all():  # loop would be discarded whole
        rejection = _rejection(key, np.where(use_knuth, _F32.type(1e5), lam), shape, dtype)
        result = np.where(use_knuth, result, rejection)
    return np.where(lam == 0, dtype.type(0), result)


random_poisson_p = Primitive(
    "random_poisson",
    Rules(
        shape=_poisson_shape,
        impl=_poisson_impl,
        sharding=None,
        batch=per_member("random_poisson"),
    ),
)
