"""The windowed reductions' implementations, on any array namespace.

The operand is padded and dilated into a fresh buffer filled with the reduction's identity
(only where padding or base dilation asks for one). Each *tap* of the window (one offset in
it) then reads a strided slice of the buffer holding that offset's element of every window,
of the result's shape, and the result folds the taps elementwise: one pass over the output
per tap, which for small windows (2x2 pooling: four taps) is several times faster than
reducing a view of the windows over its window axes. Windows that do not overlap (window
equal to stride, or one window, without padding or dilation) and have many taps take the
other way: the operand reshaped to (windows, taps) pairs and reduced over the taps.

Max and min's derivatives choose, per window, the tap holding the extreme element (the first
one in window order among equals, or the first NaN, which the reduction gives):
``select_and_gather_add`` reads the tangent there, ``select_and_scatter_add`` adds a
cotangent back there, and ``reduce_window_sum_transpose`` adds every window's cotangent to
each of its taps.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from spmd.prims import namespace
from spmd.prims.windows_shapes import PARAMS, dilate, identity, window_shape

# Up to this many taps, even non-overlapping windows fold tap by tap.
FEW_TAPS = 16


@dataclass(frozen=True)
class Plan:
    """Where a window reduction of an operand of ``in_shape`` reads."""

    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    buffer: tuple[int, ...] | None  # the padded, dilated operand's shape (None: the operand)
    place: tuple[slice, ...]  # where the operand's elements lie in the buffer
    taps: tuple[tuple[slice, ...], ...]  # each tap's elements of every window, in the buffer
    blocks: tuple[int, ...] | None  # non-overlapping: the used operand as (out0, w0, out1, ...)
    used: tuple[slice, ...]  # the part of the operand those blocks cover

    @property
    def empty(self) -> bool:
        return math.prod(self.out_shape) == 0

    @property
    def covered(self) -> bool:
        """Whether the blocks cover the whole operand (no elements past the last window)."""
        return self.blocks is not None and tuple(u.stop for u in self.used) == self.in_shape

    @property
    def many_blocks(self) -> bool:
        """Whether to reduce over the blocks' tap axes rather than fold tap by tap."""
        return self.blocks is not None and len(self.taps) > FEW_TAPS


def params_key(params: dict) -> tuple:
    return tuple(params[key] for key in PARAMS)


@lru_cache(maxsize=512)
def plan(in_shape: tuple[int, ...], key: tuple) -> Plan:
    window, strides, padding, base, window_dilation = key
    out = window_shape(in_shape, **dict(zip(PARAMS, key, strict=True)))
    buffer, place, start = [], [], []
    for n, (lo, hi), b in zip(in_shape, padding, base, strict=True):
        buffer.append(dilate(n, b) + max(lo, 0) + max(hi, 0))
        place.append(slice(max(lo, 0), max(lo, 0) + dilate(n, b), b))
        start.append(max(-lo, 0))  # negative padding crops the buffer's start
    taps = []
    for tap in itertools.product(*map(range, window)):
        index = []
        for k, s, d, first, count in zip(tap, strides, window_dilation, start, out, strict=True):
            begin = first + k * d
            index.append(slice(begin, begin + s * (count - 1) + 1, s))
        taps.append((*index, Ellipsis))  # a 0-d operand's tap is a view too, not a scalar
    blocks, used = [], []
    for w, s, pad, b, d, count in zip(window, strides, padding, base, window_dilation, out,
                                      strict=True):  # fmt: skip
        if b != 1 or pad != (0, 0) or (w > 1 and d != 1) or (w != s and count > 1):
            blocks = None
            break
        blocks += [count, w]
        used.append(slice(0, count * w))
    return Plan(
        in_shape=tuple(in_shape),
        out_shape=out,
        buffer=tuple(buffer) if tuple(buffer) != tuple(in_shape) else None,
        place=(*place, Ellipsis),
        taps=tuple(taps),
        blocks=None if blocks is None else tuple(blocks),
        used=tuple(used),
    )


# --- helpers -----------------------------------------------------------------------------


def _zeros(xp, shape, dtype, like):
    if namespace.is_numpy(xp):
        return np.zeros(shape, dtype)
    return xp.zeros(shape, dtype=namespace.dtype_for(xp, dtype), device=like.device)


def _buffer(xp, x, p: Plan, fill):
    """``x`` padded and dilated with ``fill`` (``x`` itself when nothing is added)."""
    if p.buffer is None:
        return x
    dtype = namespace.numpy_dtype(xp, x)
    if namespace.is_numpy(xp):
        buffer = np.full(p.buffer, fill, dtype)
    else:
        fill = namespace.scalar_of(dtype, fill)
        buffer = xp.full(p.buffer, fill, dtype=namespace.dtype_for(xp, dtype), device=x.device)
    buffer[p.place] = x
    return buffer


def _combine(xp, op: str, dtype: np.dtype):
    """The elementwise fold of ``op`` (bools: or for max, and for min)."""
    if op == "sum":
        return xp.add
    if dtype == np.bool_:
        return xp.logical_or if op == "max" else xp.logical_and
    return xp.maximum if op == "max" else xp.minimum


def _block_axes(p: Plan) -> tuple[int, ...]:
    return tuple(range(1, 2 * len(p.in_shape), 2))


def _taps_last(xp, x, p: Plan):
    """The used operand as (windows..., taps): each window's elements in window order."""
    y = xp.reshape(x[p.used], p.blocks)
    taps = _block_axes(p)
    y = xp.permute_dims(y, (*range(0, 2 * len(p.in_shape), 2), *taps))
    return xp.reshape(y, (*p.out_shape, len(p.taps)))


def _fresh(xp, x):
    if namespace.is_numpy(xp):
        return np.array(x, copy=True)
    return xp.asarray(x, copy=True)


# --- reductions --------------------------------------------------------------------------


def reduce_impl(op: str):
    """``reduce_window_<op>``'s implementation."""

    def impl(xp, x, **params):
        numpy = namespace.is_numpy(xp)
        x = np.asarray(x) if numpy else x
        dtype = namespace.numpy_dtype(xp, x)
        p = plan(tuple(x.shape), params_key(params))
        if p.empty:
            return _zeros(xp, p.out_shape, dtype, x)
        if p.many_blocks:
            y = xp.reshape(x[p.used], p.blocks)
            axes = _block_axes(p)
            if op == "sum":
                return xp.sum(y, axis=axes, dtype=y.dtype)
            if dtype == np.bool_:
                return (xp.any if op == "max" else xp.all)(y, axis=axes)
            return (xp.max if op == "max" else xp.min)(y, axis=axes)
        buffer = _buffer(xp, x, p, identity(op, dtype))
        combine = _combine(np if numpy else xp, op, dtype)
        if len(p.taps) == 1:
            return _fresh(xp, buffer[p.taps[0]])
        out = combine(buffer[p.taps[0]], buffer[p.taps[1]])
        for tap in p.taps[2:]:
            out = combine(out, buffer[tap], out=out) if numpy else combine(out, buffer[tap])
        return out

    return impl


# --- the extreme element's tap -----------------------------------------------------------


def _wins(xp, piece, best, select: str, dtype: np.dtype, nan: bool = True):
    """Where ``piece`` displaces the best so far: strictly beyond it, or the first NaN
    (``nan``: the operand may hold NaN; a NaN best stays, as it does in the reduction)."""
    if dtype == np.bool_:
        return xp.logical_and(piece, xp.logical_not(best)) if select == "max" else \
            xp.logical_and(best, xp.logical_not(piece))  # fmt: skip
    wins = xp.greater(piece, best) if select == "max" else xp.less(piece, best)
    if nan and dtype.kind == "f":
        first_nan = xp.logical_and(xp.not_equal(piece, piece), xp.equal(best, best))
        wins = xp.logical_or(wins, first_nan)
    return wins


def _may_hold_nan(x) -> bool:
    """Whether the NumPy array ``x`` may hold NaN: its sum is NaN (or overflowed to one)."""
    with np.errstate(all="ignore"):
        return x.dtype.kind == "f" and bool(np.isnan(np.sum(x)))


def _fold_choice(xp, x, p: Plan, select: str):
    """Per window, the index of the tap holding the extreme element (the first NaN if any,
    else the first extreme one), folding tap by tap."""
    dtype = namespace.numpy_dtype(xp, x)
    xs = _buffer(xp, x, p, identity(select, dtype))
    best = _fresh(xp, xs[p.taps[0]])
    extreme = _combine(np if namespace.is_numpy(xp) else xp, select, dtype)
    if namespace.is_numpy(xp):
        kind = np.int16 if len(p.taps) < 2**15 else np.int64
        chosen = np.zeros(p.out_shape, kind)
        nan = _may_hold_nan(x)
        for k, tap in enumerate(p.taps[1:], 1):
            piece = xs[tap]
            wins = _wins(np, piece, best, select, dtype, nan)
            extreme(best, piece, out=best)  # a NaN best stays: nothing displaces it
            np.maximum(chosen, wins * kind(k), out=chosen)  # k is past every earlier tap
        return chosen
    chosen = xp.zeros(p.out_shape, dtype=xp.int64, device=x.device)
    for k, tap in enumerate(p.taps[1:], 1):
        piece = xs[tap]
        wins = _wins(xp, piece, best, select, dtype)
        best = extreme(best, piece)
        chosen = xp.where(wins, xp.full_like(chosen, k), chosen)
    return chosen


def _block_choice(xp, x, p: Plan, select: str):
    """Per window, the index of the tap holding the extreme element, from the blocks."""
    y = _taps_last(xp, x, p)
    if namespace.numpy_dtype(xp, x) == np.bool_:
        y = xp.astype(y, xp.int8)
    if namespace.is_numpy(xp):  # NumPy's argmax and argmin take the first NaN
        return (np.argmax if select == "max" else np.argmin)(y, axis=-1)
    nan = xp.isnan(y) if namespace.numpy_dtype(xp, y).kind == "f" else None
    found = (xp.argmax if select == "max" else xp.argmin)(y, axis=-1)
    if nan is not None:
        found = xp.where(xp.any(nan, axis=-1), xp.argmax(xp.astype(nan, xp.int8), axis=-1), found)
    return found


_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _masked(xp, values, mask, out=None):
    """``values`` where ``mask`` holds (None: everywhere), else zeros; NumPy: by their bits,
    exactly and without a branch per element, into ``out`` if given."""
    if not namespace.is_numpy(xp):
        return xp.where(mask, values, xp.zeros_like(values))
    if mask is None:
        return values if out is None else np.copyto(out, values)
    bits = _BITS.get(values.dtype.itemsize)
    if bits is None or values.dtype == np.bool_:
        found = np.where(mask, values, values.dtype.type(0))
        return found if out is None else np.copyto(out, found)
    ones = np.negative(mask.view(np.int8), dtype=bits)  # all bits set where the mask holds
    if out is not None:
        return np.bitwise_and(values.view(bits), ones, out=out.view(bits))
    return np.bitwise_and(values.view(bits), ones).view(values.dtype)


def gather_impl(xp, tangent, x, *, select, **params):
    """``select_and_gather_add``: each window's tangent at its extreme element."""
    numpy = namespace.is_numpy(xp)
    if numpy:
        tangent, x = np.asarray(tangent), np.asarray(x)
    p = plan(tuple(x.shape), params_key(params))
    dtype = namespace.numpy_dtype(xp, tangent)
    if p.empty:
        return _zeros(xp, p.out_shape, dtype, tangent)
    if p.many_blocks:
        index = xp.reshape(_block_choice(xp, x, p, select), (*p.out_shape, 1))
        taken = namespace.take_along_axis(xp, _taps_last(xp, tangent, p), index, -1)
        return xp.reshape(taken, p.out_shape)
    chosen = _fold_choice(xp, x, p, select)
    ts = _buffer(xp, tangent, p, 0)
    out = None
    for k, tap in enumerate(p.taps):
        part = _masked(xp, ts[tap], chosen == k)
        out = part if out is None else out + part  # one part is nonzero: exact
    return out


def _spread(xp, source, p: Plan, chosen=None):
    """A buffer-shaped array with each window's ``source`` added at its taps (``chosen``:
    only at the tap it names), cut back to the operand's elements."""
    dtype = namespace.numpy_dtype(xp, source)
    numpy = namespace.is_numpy(xp)
    disjoint = p.blocks is not None  # windows that do not overlap: each element in one tap
    if numpy and disjoint and not p.many_blocks and p.buffer is None and p.covered:
        out = np.empty(p.in_shape, dtype)  # every element is written once below
    else:
        out = _zeros(xp, p.buffer or p.in_shape, dtype, source)
    if p.empty:
        return out[p.place] if p.buffer is not None else out
    if p.many_blocks:
        taps = len(p.taps)
        if chosen is None:
            spread = xp.broadcast_to(xp.reshape(source, (*p.out_shape, 1)), (*p.out_shape, taps))
        else:
            hit = xp.reshape(chosen, (*p.out_shape, 1)) == xp.reshape(
                xp.arange(taps, dtype=chosen.dtype, device=namespace.device_of(chosen)),
                (1,) * len(p.out_shape) + (taps,),
            )
            zero = _zeros(xp, (), dtype, source)
            spread = xp.where(hit, xp.reshape(source, (*p.out_shape, 1)), zero)
        ndim = len(p.in_shape)
        split = (*p.out_shape, *p.blocks[1::2])
        order = [0] * (2 * ndim)
        for i in range(ndim):
            order[2 * i], order[2 * i + 1] = i, ndim + i
        block = xp.reshape(xp.permute_dims(xp.reshape(spread, split), tuple(order)),
                           tuple(c.stop for c in p.used))  # fmt: skip
        if p.covered:  # a copy: the reshapes may have kept a broadcast view of the source
            return np.ascontiguousarray(block) if numpy else block
        out[p.used] = block
        return out
    for k, tap in enumerate(p.taps):
        if numpy and disjoint:
            _masked(np, source, None if chosen is None else chosen == k, out=out[tap])
            continue
        part = source if chosen is None else _masked(xp, source, chosen == k)
        if numpy:
            view = out[tap]
            np.add(view, part, out=view)
        else:
            out[tap] = out[tap] + part
    if p.buffer is None:
        return out
    return np.ascontiguousarray(out[p.place]) if numpy else out[p.place]


def scatter_impl(xp, source, x, *, select, **params):
    """``select_and_scatter_add``: each window's ``source`` added at its extreme element."""
    if namespace.is_numpy(xp):
        source, x = np.asarray(source), np.asarray(x)
    p = plan(tuple(x.shape), params_key(params))
    if p.empty:
        return _spread(xp, source, p)
    chosen = _block_choice(xp, x, p, select) if p.many_blocks else _fold_choice(xp, x, p, select)
    return _spread(xp, source, p, chosen)


def sum_transpose_impl(xp, source, *, operand_shape, **params):
    """``reduce_window_sum_transpose``: each window's ``source`` added at all its taps."""
    if namespace.is_numpy(xp):
        source = np.asarray(source)
    return _spread(xp, source, plan(tuple(operand_shape), params_key(params)))
