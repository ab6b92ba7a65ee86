"""spmd.nn.dot_product_attention: scaled dot-product attention, JAX's reference (XLA)
implementation, written over spmd.numpy.

Shapes as jax.nn.dot_product_attention's: query [B, T, N, H], key and value [B, S, K, H]
(K divides N: grouped-query attention shares each key/value head among N // K query heads),
bias and mask broadcastable to [B, N, T, S]; unbatched [T, N, H] inputs are taken too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.nn.functions import _inexact, softmax

__all__ = ["dot_product_attention"]


def _shape_error(message: str) -> ShapeError:
    return ShapeError(f"spmd.nn.dot_product_attention: {message}")


def _check(query, key, value) -> tuple[int, int, int, int, int, int]:
    """B, T, N, H, S, K of the 4-d query, key and value, or a ShapeError naming them."""
    q, k, v = (aval_of(a) for a in (query, key, value))
    if not q.ndim == k.ndim == v.ndim == 4:
        raise _shape_error(
            f"query {q}, key {k} and value {v} must all be [B, T, N, H] (or all [T, N, H]); "
            f"reshape them to one of those ranks."
        )
    (b, t, n, h), (kb, s, kn, kh) = q.shape, k.shape
    if k.shape != v.shape or kb != b or kh != h:
        raise _shape_error(
            f"key {k} and value {v} must have the same shape [B, S, K, H], with query {q}'s "
            f"batch B={b} and head size H={h}."
        )
    if kn == 0 or n % kn:
        raise _shape_error(
            f"query {q} has N={n} heads, which key {k}'s K={kn} heads must divide (each key "
            f"head serves N // K query heads); give key and value K dividing N."
        )
    return b, t, n, h, s, kn


def _batched(name: str, x: Any, unbatched: bool) -> Any:
    """A bias or mask as [B or 1, N or 1, T or 1, S or 1] (lower ranks take 1s in front)."""
    if x is None:
        return None
    ndim = aval_of(x).ndim
    if ndim > 4 or (unbatched and ndim > 3):
        raise _shape_error(
            f"{name} {aval_of(x)} must be broadcastable to [B, N, T, S] ([N, T, S] for "
            f"unbatched inputs); give it at most that many dimensions."
        )
    if unbatched and ndim == 3:
        return snp.expand_dims(x, 0)
    return snp.reshape(x, (1,) * (4 - ndim) + aval_of(x).shape)


def dot_product_attention(
    query: Any,
    key: Any,
    value: Any,
    bias: Any = None,
    mask: Any = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    implementation: str | None = None,
) -> Any:
    """``softmax(query . key * scale + bias, masked) . value`` per head, as jax.nn's.

    Example: ``dot_product_attention(q, k, v, is_causal=True)`` with q f32[B, T, N, H] and
    k, v f32[B, S, N, H] gives f32[B, T, N, H]. ``scale`` defaults to ``1 / sqrt(H)``;
    ``mask`` (bool) keeps the logits where True, ``is_causal`` keeps key positions at or
    before each query position; the rest get a large negative logit (``-0.7 *`` the dtype's
    max), so a fully masked row attends uniformly, as JAX's. The softmax is computed in
    float32 (or float64 for float64 inputs). Bool and integer query, key and value are
    converted first to the float NumPy's ufuncs give them (float16 for bool, float64 for int32
    and int64), where JAX would round the probabilities to the integer dtype.
    ``implementation``: None or "xla" (the only one).
    """
    if implementation not in (None, "xla"):
        raise SpmdValueError(
            f"spmd.nn.dot_product_attention: implementation={implementation!r} is not "
            f"available; spmd has only the reference one: pass None or 'xla'."
        )
    unbatched = aval_of(query).ndim == 3
    if unbatched:
        query, key, value = (snp.expand_dims(a, 0) for a in (query, key, value))
    b, t, n, h, s, k = _check(query, key, value)  # before any cast: shapes are checked first
    query, key, value = (_inexact(a) for a in (query, key, value))
    bias, mask = _batched("bias", bias, unbatched), _batched("mask", mask, unbatched)
    if mask is not None and aval_of(mask).dtype != np.bool_:
        raise SpmdTypeError(
            f"spmd.nn.dot_product_attention: mask must be bool (True: attend), not "
            f"{aval_of(mask)}; pass mask.astype(bool) or use bias for additive masking."
        )
    scale = 1 / math.sqrt(h) if scale is None else scale
    logits_dtype = np.promote_types(aval_of(query).dtype, np.float32)
    # [B, T, K, G, H] x [B, S, K, H] -> [B, K, G, T, S], the query heads grouped per key head
    grouped = snp.reshape(query, (b, t, k, n // k, h))
    logits = snp.einsum("BTKGH,BSKH->BKGTS", grouped, key)
    logits = snp.reshape(snp.astype(logits, logits_dtype), (b, n, t, s)) * scale
    if bias is not None:
        logits = snp.astype(logits + bias, logits_dtype)
    keep = mask
    if is_causal:
        causal = np.tril(np.ones((t, s), bool))
        keep = causal if keep is None else snp.logical_and(keep, causal)
    if keep is not None:
        logits = snp.where(keep, logits, -0.7 * float(np.finfo(logits_dtype).max))
    probs = softmax(snp.astype(logits, np.promote_types(logits_dtype, np.float32)), axis=-1)
    probs = snp.astype(probs, aval_of(key).dtype)
    probs = snp.reshape(probs, (b, k, n // k, t, s))
    encoded = snp.einsum("BKGTS,BSKH->BTKGH", probs, value)
    encoded = snp.reshape(encoded, (b, t, n, h))
    return snp.squeeze(encoded, 0) if unbatched else encoded
