"""The truncated normal sampler as a primitive: JAX's inverse-CDF method, element by element.

``u`` uniform between ``erf(lower / sqrt 2)`` and ``erf(upper / sqrt 2)``, then
``sqrt(2) * erfinv(u)`` (Giles' erfinv, as the normal sampler's) clipped to the open interval
``(lower, upper)`` with ``nextafter``. It is a primitive because spmd.numpy has no
``nextafter`` for traced bounds; each element depends on its counter alone, so a device
computes its block as the uniform and normal samplers do.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.prims.random import (
    block_params,
    check_bound,
    check_key,
    erfinv,
    per_member,
    sampler_sharding,
    uniform_impl,
)
from spmd.prims.random_host import on_host


def _truncated_normal_shape(key, lower, upper, *, shape, dtype):
    check_key("truncated_normal", key)
    check_bound("truncated_normal", "lower", lower, shape)
    check_bound("truncated_normal", "upper", upper, shape)
    return ShapedArray(shape, dtype)


def _erf(x):
    compute = np.float32 if x.dtype == np.float16 else x.dtype
    return scipy.special.erf(x.astype(compute)).astype(x.dtype)


@on_host
def _truncated_normal_impl(xp, key, lower, upper, *, shape, dtype, global_shape=None, start=None):
    sqrt2 = dtype.type(math.sqrt(2))
    lower, upper = np.asarray(lower, dtype), np.asarray(upper, dtype)
    a, b = _erf(lower / sqrt2), _erf(upper / sqrt2)
    u = uniform_impl(
        np, key, a, b, shape=shape, dtype=dtype, global_shape=global_shape, start=start
    )
    out = (sqrt2 * erfinv(u)).astype(dtype)
    above = np.nextafter(lower, dtype.type(np.inf))
    below = np.nextafter(upper, dtype.type(-np.inf))
    return np.minimum(np.maximum(out, above), below).astype(dtype)


random_truncated_normal_p = Primitive(
    "random_truncated_normal",
    Rules(
        shape=_truncated_normal_shape,
        impl=_truncated_normal_impl,
        sharding=sampler_sharding,
        local_params=block_params,
        batch=per_member("random_truncated_normal"),
    ),
)
