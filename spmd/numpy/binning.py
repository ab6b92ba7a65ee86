"""Searching sorted arrays and counting into bins, as compositions of comparisons and sums:
``searchsorted``, ``bincount`` (JAX's ``length=``), ``histogram`` and ``interp``.

``searchsorted`` counts, for each query, the sorted elements that come before it in NumPy's order
(NaN last), which is exact and has no data-dependent shape; ``bincount`` and ``histogram`` sum an
indicator of each bin. Their sharding is that of the comparisons and sums they are made of.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.axes import as_int
from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy.creation import asarray


def _snp():
    import spmd.numpy as snp

    return snp


def _before(sorted_values: Any, queries: Any, side: str) -> Any:
    """Whether each sorted element comes before each query (the last axis runs over the
    sorted elements) in NumPy's order, which puts NaN last."""
    snp = _snp()
    a, v = sorted_values, snp.expand_dims(queries, -1)
    if side == "left":
        less = a < v
        if aval_of(a).dtype.kind in "fc" or aval_of(queries).dtype.kind in "fc":
            less = less | (snp.isnan(v) & ~snp.isnan(a))
        return less
    not_after = a <= v
    if aval_of(a).dtype.kind in "fc" or aval_of(queries).dtype.kind in "fc":
        not_after = not_after | snp.isnan(v)
    return not_after


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *, method: Any = None):
    """``numpy.searchsorted``: where each ``v`` would go in the sorted 1-D ``a`` to keep it
    sorted (side "left": before equal elements, "right": after). Example:
    ``searchsorted(edges, x, side="right")``."""
    snp = _snp()
    if side not in ("left", "right"):
        raise SpmdValueError(f"spmd.numpy.searchsorted: side={side!r}; pass 'left' or 'right'.")
    a, v = (w if isinstance(w, np.ndarray) else asarray(w) for w in (a, v))  # as in interp
    if aval_of(a).ndim != 1:
        raise ShapeError(
            f"spmd.numpy.searchsorted: a is {aval_of(a)}; it must be 1-D (sorted ascending)."
        )
    if sorter is not None:
        a = a[asarray(sorter)]
    counts = snp.sum(_before(a, v, side), axis=-1, dtype=np.intp)
    return counts


def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None):
    """``numpy.bincount``: how many times each non-negative integer occurs in the 1-D ``x``
    (or the sum of ``weights`` there). Inside jit, JAX's ``length=`` gives the static number of
    bins (values at or past it are dropped)."""
    snp = _snp()
    x = asarray(x)
    aval = aval_of(x)
    if aval.ndim != 1:
        raise ShapeError(f"spmd.numpy.bincount: x is {aval}; it must be 1-D.")
    if aval.dtype.kind not in "iub":
        raise SpmdTypeError(
            f"spmd.numpy.bincount: x is {aval.dtype}; it must hold non-negative integers."
        )
    minlength = as_int(minlength, "spmd.numpy.bincount", "minlength")
    if minlength < 0:
        raise SpmdValueError(f"spmd.numpy.bincount: minlength={minlength} must be >= 0.")
    if length is None:
        if isinstance(x, Tracer):
            raise SpmdTypeError(
                f"spmd.numpy.bincount: x is a traced {aval}, so the number of bins (its "
                f"largest value + 1) is not known while tracing; pass length= (JAX's static "
                f"number of bins), or call it outside jit."
            )
        host = np.asarray(x)
        if host.size and host.min() < 0:
            raise SpmdValueError(
                f"spmd.numpy.bincount: x holds {host.min()}; its values must be >= 0."
            )
        length = max(int(host.max()) + 1 if host.size else 0, minlength)
    length = as_int(length, "spmd.numpy.bincount", "length")
    hits = snp.expand_dims(x, -1) == snp.arange(length)
    if weights is None or aval.size == 0:  # NumPy counts no elements in intp, weighed or not
        return snp.sum(hits, axis=0, dtype=np.intp)
    weights = asarray(weights)
    if aval_of(weights).shape != aval.shape:
        raise ShapeError(
            f"spmd.numpy.bincount: weights are {aval_of(weights)} and x {aval}; give one "
            f"weight per element of x."
        )
    wanted = np.result_type(aval_of(weights).dtype, np.float64)
    weighted = snp.where(hits, snp.expand_dims(weights.astype(wanted), -1), np.zeros((), wanted))
    return snp.sum(weighted, axis=0)


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None):
    """``numpy.histogram``: counts (or ``weights`` summed, or a density) of ``a`` in ``bins``
    equal bins over ``range`` (default: ``a``'s min to max), or between given edges; each bin
    holds its left edge, the last one both. Returns ``(hist, bin_edges)``: as NumPy's, the
    counts are intp (the weights' dtype when weighted) and equal bins' edges ``a``'s floating
    dtype (float64 for integers)."""
    snp = _snp()
    a = snp.reshape(asarray(a), (-1,))
    if aval_of(a).dtype == np.bool_:  # NumPy counts booleans as uint8
        a = a.astype(np.uint8)
    if np.ndim(bins) == 0 and not isinstance(bins, Tracer):
        count = as_int(bins, "spmd.numpy.histogram", "bins")
        if count < 1:
            raise SpmdValueError(f"spmd.numpy.histogram: bins={bins} must be >= 1.")
        dtype = aval_of(a).dtype
        dtype = np.result_type(dtype, np.float64) if dtype.kind in "iu" else dtype
        if range is None:
            if aval_of(a).size == 0:
                low, high = np.asarray(0, dtype), np.asarray(1, dtype)
            else:
                low, high = snp.min(a).astype(dtype), snp.max(a).astype(dtype)
        else:
            low, high = (np.asarray(r, dtype) for r in range)
            if low > high:
                raise SpmdValueError(f"spmd.numpy.histogram: range={range} must be (low, high).")
        same = low == high
        half = np.asarray(0.5, dtype)
        low, high = snp.where(same, low - half, low), snp.where(same, high + half, high)
        edges = snp.linspace(low, high, count + 1, dtype=dtype)
    else:
        edges = asarray(bins)
        count = aval_of(edges).shape[0] - 1
    position = searchsorted(edges, a, side="right") - 1
    position = snp.where(a == edges[-1], count - 1, position)
    inside = (position >= 0) & (position < count)
    if weights is None:
        weights_used = inside.astype(np.intp)
    else:
        weights = snp.reshape(asarray(weights), (-1,))
        weights_used = snp.where(inside, weights, np.zeros((), aval_of(weights).dtype))
    hits = snp.expand_dims(position, -1) == snp.arange(count)
    hist = snp.sum(snp.where(hits, snp.expand_dims(weights_used, -1), 0), axis=0)
    if weights is not None:
        hist = hist.astype(aval_of(weights).dtype)
    if density:
        widths = (edges[1:] - edges[:-1]).astype(np.float64)
        hist = hist / widths / snp.sum(hist)
    return hist, edges


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None):
    """``numpy.interp``: the piecewise-linear interpolant through (``xp``, ``fp``) (``xp``
    increasing) at ``x``; ``left``/``right`` (default ``fp[0]``/``fp[-1]``) outside."""
    snp = _snp()
    if period is not None:
        raise SpmdValueError("spmd.numpy.interp: period= is not supported; drop it.")
    # NumPy samples stay NumPy constants of the trace; the interval's ends are taken, not
    # indexed, as the interval is traced
    x, xp, fp = (v if isinstance(v, np.ndarray) else asarray(v) for v in (x, xp, fp))
    if aval_of(xp).ndim != 1 or aval_of(fp).shape != aval_of(xp).shape or aval_of(xp).size == 0:
        raise ShapeError(
            f"spmd.numpy.interp: xp is {aval_of(xp)} and fp {aval_of(fp)}; they must be 1-D, "
            f"non-empty and of one length."
        )
    dtype = np.result_type(aval_of(fp).dtype, np.float64)
    x, xp, fp = x.astype(np.float64), xp.astype(np.float64), fp.astype(dtype)
    n = aval_of(xp).shape[0]
    if n == 1:
        inner = snp.broadcast_to(fp[0], aval_of(x).shape)
    else:
        j = snp.clip(searchsorted(xp, x, side="right") - 1, 0, n - 2)
        x0, x1, f0, f1 = (snp.take(v, k) for v in (xp, fp) for k in (j, j + 1))
        slope = (f1 - f0) / (x1 - x0)
        inner = snp.where(x == x1, f1, slope * (x - x0) + f0)
    low = fp[0] if left is None else np.asarray(left, dtype)
    high = fp[-1] if right is None else np.asarray(right, dtype)
    result = snp.where(x < xp[0], low, snp.where(x > xp[-1], high, inner))
    return snp.where(snp.isnan(x), np.asarray(np.nan, dtype), result)


__all__ = [
    "bincount",
    "histogram",
    "interp",
    "searchsorted",
]
