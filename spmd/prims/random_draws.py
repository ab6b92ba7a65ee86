"""Draws from one key per element, for the random primitives that run a sampler of their own
(gamma).

A sampler that loops until each element is accepted (gamma) gives element ``i`` its own key,
``split(key, size)[i]``, as JAX does; its scalar draws are then those of JAX's scalar
samplers for that key (``uniform(k, ())`` is the bits of counter 0), computed here for all
elements at once, one array of keys (uint32[2, n]) at a time.
"""

from __future__ import annotations

import math

import numpy as np

from spmd.prims.random import erfinv, scale, threefry2x32, unit_floats


def split_each(keys, num: int) -> list:
    """``split(k, num)`` for each key ``k`` of ``keys`` (uint32[2, n]): ``num`` arrays of keys."""
    n = keys.shape[1]
    zeros = np.zeros(n, np.uint32)
    return [np.stack(threefry2x32(np, keys, zeros, np.full(n, j, np.uint32))) for j in range(num)]


def bits_each(keys, dtype: np.dtype):
    """``bits(k, (), dtype)`` for each key: the bits of counter 0."""
    n = keys.shape[1]
    zeros = np.zeros(n, np.uint32)
    y0, y1 = threefry2x32(np, keys, zeros, zeros)
    if np.dtype(dtype).itemsize == 8:
        return (y0.astype(np.uint64) << np.uint64(32)) | y1.astype(np.uint64)
    return (y0 ^ y1).astype(dtype)


def uniform_each(keys, dtype: np.dtype, minval=0.0, maxval=1.0):
    """``uniform(k, (), dtype, minval, maxval)`` for each key."""
    dtype = np.dtype(dtype)
    width = np.dtype(f"uint{dtype.itemsize * 8}")
    return scale(unit_floats(bits_each(keys, width), dtype), minval, maxval)


def normal_each(keys, dtype: np.dtype):
    """``normal(k, (), dtype)`` for each key."""
    dtype = np.dtype(dtype)
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform_each(keys, dtype, lo, 1.0)
    return (erfinv(u) * dtype.type(math.sqrt(2))).astype(dtype)
