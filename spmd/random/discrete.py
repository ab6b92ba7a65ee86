"""spmd.random's discrete samplers: bits, bernoulli, rademacher, randint, categorical and
poisson.

Each follows JAX's algorithm over the bits/uniform primitives and spmd.numpy (poisson is a
primitive of its own), so the numbers equal ``jax.random``'s for the same key, shape and
dtype, and sharding, jit and vmap come with the primitives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.core.aval import check_dtype
from spmd.core.axes import normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.prims.random import UINT_DTYPES, random_bits_p
from spmd.prims.random_poisson import random_poisson_p
from spmd.random.arguments import (
    DEFAULT_FLOAT,
    DEFAULT_INT,
    broadcasts_to,
    dtype_arg,
    int_dtype_arg,
    one_key,
    real_param,
    result_shape,
    shape_arg,
)
from spmd.random.continuous import gumbel, uniform
from spmd.random.keys import split

Shape = int | Sequence[int]


def bits(key: Any, shape: Shape = (), dtype: Any = np.uint32) -> Any:
    """Uniform random bits of an unsigned dtype. Example: ``bits(key, (4,), np.uint8)``."""
    dtype = dtype_arg("bits", dtype, UINT_DTYPES)
    return random_bits_p.bind(key, shape=shape_arg("bits", shape), dtype=dtype)


def _probability_dtype(name: str, p: Any) -> np.dtype:
    """The float dtype ``p`` is compared in: its own, float32 for a Python float (as JAX)."""
    aval = aval_of(p)
    if aval.dtype.kind != "f":
        raise SpmdTypeError(
            f"spmd.random.{name}: p must be floats (as in JAX), not {aval}; pass e.g. "
            f"np.float32(p) or an array of floats."
        )
    return DEFAULT_FLOAT if aval.weak_type else aval.dtype


def bernoulli(key: Any, p: Any = 0.5, shape: Shape | None = None, mode: str = "low") -> Any:
    """Booleans that are True with probability ``p``: ``uniform < p``. Example:
    ``bernoulli(key, 0.3, (100,))``.

    ``shape`` defaults to ``p``'s shape. As in JAX, ``p`` outside [0, 1] is not an error:
    ``p <= 0`` gives False and ``p >= 1`` True (NaN gives False). ``mode="high"`` compares
    against two uniforms' bits, correct for ``p`` below about 1e-7 (JAX's modes).
    """
    key = one_key("bernoulli", key)
    if mode not in ("low", "high"):
        raise SpmdValueError(f"spmd.random.bernoulli: mode={mode!r}; use 'low' or 'high'.")
    dtype = _probability_dtype("bernoulli", p)
    shape = result_shape("bernoulli", shape, p=p)
    p = snp.asarray(p, dtype)
    if mode == "low":
        return uniform(key, shape, dtype) < p
    pair = uniform(key, (2, *shape), dtype)
    return pair[1] * float(2.0 ** -np.finfo(dtype).nmant) < p - pair[0]


def rademacher(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """-1 or 1 with equal probability (int32 by default). Example: ``rademacher(key, (8,))``."""
    dtype = check_dtype(np.int32 if dtype is None else dtype)
    draws = bernoulli(one_key("rademacher", key), 0.5, shape_arg("rademacher", shape))
    return (2 * draws.astype(dtype) - 1).astype(dtype)


def _as_int(x: Any) -> Any:
    x = snp.asarray(x)
    return x if x.dtype.kind in "iu" else x.astype(check_dtype(int))


def _clip_to(x: Any, dtype: np.dtype) -> Any:
    """Integers ``x`` converted to ``dtype``, clipped to its range rather than wrapped."""
    lo = max(np.iinfo(dtype).min, np.iinfo(x.dtype).min)
    hi = min(np.iinfo(dtype).max, np.iinfo(x.dtype).max)
    return snp.clip(x, lo, hi).astype(dtype)


def _rem(x: Any, span: Any) -> Any:
    """``x % span`` with XLA's unsigned remainder by 0, which is ``x``."""
    return snp.where(span == 0, x, x % snp.where(span == 0, 1, span).astype(span.dtype))


def randint(key: Any, shape: Shape, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in ``[minval, maxval)`` (int32 by default). Example:
    ``randint(key, (3,), 0, 10)``.

    JAX's scheme: two words of random bits per element, ``(hi * 2**nbits + lo) mod span``
    (a bias of about ``span / 2**nbits``), in at least 32 bits; ``maxval <= minval`` gives
    ``minval``, and bounds beyond ``dtype``'s range are clipped to it (``maxval=256`` with
    uint8 reaches 255).
    """
    key = one_key("randint", key)
    dtype = int_dtype_arg("randint", dtype)
    for what, value in (("minval", minval), ("maxval", maxval)):
        real_param("randint", what, value)
    shape = result_shape("randint", shape_arg("randint", shape), minval=minval, maxval=maxval)
    info = np.iinfo(dtype)
    if info.bits >= 32:
        return _randint(key, shape, _as_int(minval), _as_int(maxval), dtype)
    # Narrow dtypes are sampled in int32 (less bias), then converted.
    int32 = np.dtype(np.int32)
    lo = snp.clip(_clip_to(_as_int(minval), int32), int(info.min), int(info.max))
    hi = snp.clip(_clip_to(_as_int(maxval), int32), int(info.min), int(info.max) + 1)
    return _randint(key, shape, lo, hi, int32).astype(dtype)


def _randint(key, shape, minval, maxval, dtype):
    nbits = np.iinfo(dtype).bits
    unsigned = np.dtype(f"uint{nbits}")
    out_of_range = maxval > min(np.iinfo(dtype).max, np.iinfo(maxval.dtype).max)
    minval, maxval = _clip_to(minval, dtype), _clip_to(maxval, dtype)
    keys = split(key)
    k1, k2 = keys[0], keys[1]
    higher, lower = bits(k1, shape, unsigned), bits(k2, shape, unsigned)
    span = maxval.astype(unsigned) - minval.astype(unsigned)
    span = snp.where(maxval <= minval, unsigned.type(1), span)
    span = snp.where(out_of_range & (maxval > minval), span + unsigned.type(1), span)
    multiplier = _rem(snp.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = _rem(multiplier * multiplier, span)
    offset = _rem(_rem(higher, span) * multiplier + _rem(lower, span), span)
    return minval + offset.astype(dtype)


def categorical(
    key: Any,
    logits: Any,
    axis: int = -1,
    shape: Shape | None = None,
    replace: bool = True,
    mode: str | None = None,
) -> Any:
    """Indices drawn with probabilities ``softmax(logits, axis)``: the Gumbel-max trick,
    ``argmax(logits + gumbel)``. Example: ``categorical(key, logits, shape=(4, batch))``.

    ``shape`` defaults to logits' shape without ``axis``; it may add leading dimensions
    (independent draws). ``replace=False`` draws distinct indices along those leading
    dimensions by the Gumbel top-k trick.
    """
    key = one_key("categorical", key)
    logits = snp.asarray(logits)
    aval = aval_of(logits)
    if aval.dtype.kind != "f":
        raise SpmdTypeError(
            f"spmd.random.categorical: logits must be floats, not {aval}; convert them, "
            f"e.g. logits.astype(np.float32)."
        )
    if aval.ndim == 0:
        raise ShapeError(
            f"spmd.random.categorical: logits {aval} has no axis of categories; pass at least "
            f"a 1-d array."
        )
    axis = normalize_axis(axis, aval.ndim, "spmd.random.categorical", str(aval))
    n = aval.shape[axis]
    batch = aval.shape[:axis] + aval.shape[axis + 1 :]
    shape = batch if shape is None else shape_arg("categorical", shape)
    if not broadcasts_to(batch, shape):
        raise ShapeError(
            f"spmd.random.categorical: shape={shape} must end with the logits' shape without "
            f"axis {axis}, {batch} (or a shape it broadcasts to); e.g. shape={(4, *batch)} "
            f"for 4 draws from each distribution."
        )
    prefix = shape[: len(shape) - len(batch)]
    if replace:
        drawn = (*prefix, *shape[len(prefix) : len(prefix) + axis], n, *shape[len(prefix) + axis :])
        noise = gumbel(key, drawn, aval.dtype, mode)
        logits = snp.expand_dims(logits, tuple(range(len(prefix))))
        return snp.argmax(noise + logits, axis=axis - aval.ndim).astype(DEFAULT_INT)
    k = math.prod(prefix)
    if k > n:
        raise SpmdValueError(
            f"spmd.random.categorical: {k} draws without replacement (shape={shape}) cannot "
            f"exceed the {n} categories along axis {axis}; draw at most {n}, or replace=True."
        )
    if tuple(shape[len(prefix) :]) != tuple(batch):
        raise ShapeError(
            f"spmd.random.categorical: with replace=False, shape={shape} must end with "
            f"{batch} exactly."
        )
    perturbed = snp.moveaxis(logits + gumbel(key, aval.shape, aval.dtype, mode), axis, -1)
    top = snp.argsort(perturbed, axis=-1, descending=True)[..., :k]
    return snp.reshape(snp.moveaxis(top, -1, 0), shape).astype(DEFAULT_INT)


def poisson(key: Any, lam: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Poisson counts with rate ``lam`` (int32 by default). Example: ``poisson(key, 3.0, (5,))``.

    JAX's algorithms: Knuth's for ``lam < 10``, Hörmann's transformed rejection above; rates
    are float32; ``lam == 0`` gives 0. ``shape`` defaults to ``lam``'s shape.
    """
    key = one_key("poisson", key)
    dtype = int_dtype_arg("poisson", dtype)
    real_param("poisson", "lam", lam)
    shape = result_shape("poisson", shape, lam=lam)
    return random_poisson_p.bind(key, lam, shape=shape, dtype=dtype)
