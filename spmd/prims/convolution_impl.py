"""conv_general_dilated's implementation: the lhs cut into windows (im2col) and one matrix
product with the kernel, on any array namespace.

The lhs is dilated and padded into a fresh buffer (only where it must be), then viewed as
its windows: one axis per output position along each spatial dimension and one per tap of
the kernel (NumPy's ``sliding_window_view``: no copy; other namespaces stack strided slices,
looping over the taps or the output positions, whichever are fewer). Every axis carries a
label: ``n`` (batch), ``c`` (input features), ``grp`` (the group of grouped features or
batches), ``o`` (output features), ``s<i>`` (output positions) and ``k<i>`` (taps). Reshaped
to a matrix of windows by taps and features (the one copy), one matmul with the kernel
gives the result: either windows as rows (``(grp, windows, taps) @ (grp, taps, o)``) or, when
the result keeps its spatial dimensions last after its features (NCHW), the kernel as rows,
batched over the batch (``(o, taps) @ (n, taps, positions)``), which writes the result in its
own layout. A window matrix larger than the budget is built and multiplied in pieces along
the first spatial dimension's taps, and the pieces summed.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.prims import namespace
from spmd.prims.convolution_shapes import conv_shape, geometry

# Window matrices up to this many elements (or twice the operand and result) in one piece.
BUDGET = 2**23


@dataclass(frozen=True)
class _Plan:
    out_shape: tuple[int, ...]
    empty: bool  # no result elements, or nothing summed: the result is zeros
    buffer: tuple[int, ...] | None  # the dilated, padded lhs's buffer (None: the lhs itself)
    place: tuple[slice, ...]  # where the lhs lies in the buffer
    crop: tuple[slice, ...] | None  # negative padding
    spatial_axes: tuple[int, ...]
    dilated_window: tuple[int, ...]
    window_slices: tuple[slice, ...]  # of the sliding windows: strides and kernel dilation
    strides: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    out: tuple[int, ...]
    window: tuple[int, ...]
    windows_split: tuple[int, ...]  # the windows with grouped axes split (labels below)
    windows_labels: tuple[str, ...]
    kernel_split: tuple[int, ...]
    kernel_labels: tuple[str, ...]
    windows_order: tuple[int, ...]  # the matrix's axes, grouped as windows_groups say
    windows_groups: tuple[int, ...]
    kernel_order: tuple[int, ...]
    kernel_groups: tuple[int, ...]
    kernel_rows: bool  # the kernel is the left factor
    product_labels: tuple[str, ...]
    product_split: tuple[int, ...]
    out_order: tuple[int, ...] | None  # product_labels to the result's (None: as they are)
    chunks: tuple[tuple[int, int], ...]  # ranges of the first spatial dimension's taps


def _group_labels(lhs_spec, rhs_spec, out_spec, ndim, groups, batches):
    k = ndim - 2
    grouped = ["grp"] if max(groups, batches) > 1 else []
    lhs = [[] for _ in range(ndim)]
    lhs[lhs_spec[0]] = ["grp", "n"] if batches > 1 else ["n"]
    lhs[lhs_spec[1]] = ["grp", "c"] if groups > 1 else ["c"]
    rhs = [[] for _ in range(ndim)]
    rhs[rhs_spec[0]], rhs[rhs_spec[1]] = [*grouped, "o"], ["c"]
    out = [[] for _ in range(ndim)]
    out[out_spec[0]], out[out_spec[1]] = ["n"], [*grouped, "o"]
    for s in range(k):
        lhs[lhs_spec[2 + s]], out[out_spec[2 + s]] = [f"s{s}"], [f"s{s}"]
        rhs[rhs_spec[2 + s]] = [f"k{s}"]
    flat = lambda groups_: tuple(label for group in groups_ for label in group)  # noqa: E731
    return flat(lhs) + tuple(f"k{s}" for s in range(k)), flat(rhs), flat(out)


@functools.lru_cache(maxsize=512)
def _plan(lhs_shape, rhs_shape, params: tuple) -> _Plan:
    params = dict(params) | {"preferred_element_type": None}
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    groups, batches = params["feature_group_count"], params["batch_group_count"]
    lhs_aval = ShapedArray(lhs_shape, np.dtype(np.float32))
    rhs_aval = ShapedArray(rhs_shape, lhs_aval.dtype)
    g = geometry(lhs_aval, rhs_aval, **params)
    out_shape = conv_shape(lhs_aval, rhs_aval, **params).shape
    ndim, k = len(lhs_shape), len(lhs_shape) - 2
    strides, rhs_dilation = tuple(params["window_strides"]), tuple(params["rhs_dilation"])
    spatial_axes = tuple(lhs_spec[2:])
    # The buffer holds the dilated lhs with its positive padding; negative padding crops.
    buffer, place, crop = list(lhs_shape), [slice(None)] * ndim, [slice(None)] * ndim
    for axis, size, d, (lo, hi) in zip(spatial_axes, g.spatial, params["lhs_dilation"],
                                       params["padding"], strict=True):  # fmt: skip
        dilated = max(0, 1 + d * (size - 1))
        buffer[axis] = dilated + max(lo, 0) + max(hi, 0)
        place[axis] = slice(max(lo, 0), max(lo, 0) + dilated, d)
        crop[axis] = slice(max(-lo, 0), buffer[axis] - max(-hi, 0))
    needs_buffer = tuple(buffer) != lhs_shape
    slices = [slice(None)] * (ndim + k)
    for s, axis in enumerate(spatial_axes):
        slices[axis] = slice(None, None, strides[s])
        slices[ndim + s] = slice(None, None, rhs_dilation[s])
    window_slices = tuple(slices)

    windows_labels, kernel_labels, out_labels = _group_labels(
        lhs_spec, rhs_spec, out_spec, ndim, groups, batches
    )
    grouped = max(groups, batches)
    size = {"n": g.n // batches, "c": g.i, "grp": grouped, "o": g.o // grouped}
    size |= {f"s{s}": n for s, n in enumerate(g.out)} | {f"k{s}": n for s, n in enumerate(g.window)}
    # Taps and features, ordered as the lhs lays them out (the copy then reads along rows).
    source = {"c": lhs_spec[1]} | {f"k{s}": lhs_spec[2 + s] for s in range(k)}
    contracted = sorted(source, key=source.get)
    batch = ["grp"] if grouped > 1 else []
    lead = list(out_labels[: out_labels.index("o")])
    tail = list(out_labels[out_labels.index("o") + 1 :])
    positions = math.prod(g.out)
    kernel_rows = (
        bool(tail)
        and all(label.startswith("s") for label in tail)
        and lead in (["n"], ["n", "grp"])
        and (positions >= 32 or size["n"] == 1)
    )
    if kernel_rows:
        windows_axes = [*([x] for x in lead), contracted, tail]
        kernel_axes = [batch, ["o"], contracted]
        product_labels = (*lead, "o", *tail)
    else:
        free = [label for label in out_labels if label == "n" or label.startswith("s")]
        windows_axes = [batch, free, contracted]
        kernel_axes = [batch, contracted, ["o"]]
        product_labels = (*batch, *free, "o")
    order = lambda labels, axes: tuple(labels.index(x) for group in axes for x in group)  # noqa: E731
    out_order = tuple(product_labels.index(x) for x in out_labels)
    terms = g.c * math.prod(g.window)
    matrix = math.prod(size[x] for x in windows_labels)
    chunks = ((0, g.window[0]),) if k else ((0, 1),)
    budget = max(BUDGET, 2 * (math.prod(lhs_shape) + math.prod(out_shape)))
    if k and matrix > budget:
        pieces = min(g.window[0], -(-matrix // budget))
        step = -(-g.window[0] // pieces)
        chunks = tuple((lo, min(lo + step, g.window[0])) for lo in range(0, g.window[0], step))
    return _Plan(
        out_shape=out_shape,
        empty=math.prod(out_shape) == 0 or terms == 0,
        buffer=tuple(buffer) if needs_buffer else None,
        place=tuple(place),
        crop=tuple(crop) if any(c != slice(None) for c in crop) else None,
        spatial_axes=spatial_axes,
        dilated_window=g.dilated_window,
        window_slices=window_slices,
        strides=strides,
        rhs_dilation=rhs_dilation,
        out=g.out,
        window=g.window,
        windows_split=tuple(size[x] for x in windows_labels),
        windows_labels=windows_labels,
        kernel_split=tuple(size[x] for x in kernel_labels),
        kernel_labels=kernel_labels,
        windows_order=order(windows_labels, windows_axes),
        windows_groups=tuple(map(len, windows_axes)),
        kernel_order=order(kernel_labels, kernel_axes),
        kernel_groups=tuple(map(len, kernel_axes)),
        kernel_rows=kernel_rows,
        product_labels=product_labels,
        product_split=tuple(size[x] for x in product_labels),
        out_order=None if out_order == tuple(range(len(out_order))) else out_order,
        chunks=chunks,
    )


def _matrix(xp, x, order: tuple[int, ...], groups: tuple[int, ...]):
    """``x`` with its axes in ``order``, each run of ``groups`` of them merged into one."""
    x = xp.permute_dims(x, order) if order != tuple(range(len(order))) else x
    shape, start = [], 0
    for count in groups:
        if count:
            shape.append(math.prod(x.shape[start : start + count]))
        start += count
    return xp.reshape(x, tuple(shape))


def _padded(xp, lhs, plan: _Plan, dtype: np.dtype):
    if plan.buffer is not None:
        if namespace.is_numpy(xp):
            buffer = np.zeros(plan.buffer, dtype)
        else:
            buffer = xp.zeros(plan.buffer, dtype=namespace.dtype_for(xp, dtype), device=lhs.device)
        buffer[plan.place] = lhs
        lhs = buffer
    return lhs if plan.crop is None else lhs[plan.crop]


def _windows(xp, x, plan: _Plan):
    """The windows of the padded lhs ``x``: its axes with output positions along the
    spatial ones, then one axis per tap."""
    if not plan.spatial_axes:
        return x
    if namespace.is_numpy(xp):
        view = np.lib.stride_tricks.sliding_window_view(
            x, plan.dilated_window, axis=plan.spatial_axes
        )
        return view[plan.window_slices]
    taps, positions = math.prod(plan.window), math.prod(plan.out)
    ndim = x.ndim
    if taps <= positions:  # one strided slice per tap, each reading every output position
        parts = []
        for tap in itertools.product(*map(range, plan.window)):
            index = [slice(None)] * ndim
            for s, axis in enumerate(plan.spatial_axes):
                start, step = tap[s] * plan.rhs_dilation[s], plan.strides[s]
                index[axis] = slice(start, start + step * (plan.out[s] - 1) + 1, step)
            parts.append(x[tuple(index)])
        stacked = xp.stack(parts, axis=-1)
        return xp.reshape(stacked, (*stacked.shape[:-1], *plan.window))
    parts = []  # one slice per output position, reading its whole window
    for position in itertools.product(*map(range, plan.out)):
        index = [slice(None)] * ndim
        for s, axis in enumerate(plan.spatial_axes):
            start, step = position[s] * plan.strides[s], plan.rhs_dilation[s]
            index[axis] = slice(start, start + step * (plan.window[s] - 1) + 1, step)
        parts.append(x[tuple(index)])
    stacked = xp.stack(parts, axis=-1)
    stacked = xp.reshape(stacked, (*stacked.shape[:-1], *plan.out))
    # The spatial axes hold taps and the trailing ones positions: swap them.
    order = list(range(ndim))
    for s, axis in enumerate(plan.spatial_axes):
        order[axis] = ndim + s
    return xp.permute_dims(stacked, (*order, *plan.spatial_axes))


def _take_taps(x, labels: tuple[str, ...], lo: int, hi: int, whole: int):
    if (lo, hi) == (0, whole) or "k0" not in labels:
        return x
    index = [slice(None)] * len(labels)
    index[labels.index("k0")] = slice(lo, hi)
    return x[tuple(index)]


def conv_impl(xp, lhs, rhs, **params):
    numpy = namespace.is_numpy(xp)
    if numpy:
        lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    dtype = namespace.numpy_dtype(xp, lhs)
    if params["preferred_element_type"] is not None:
        dtype = np.dtype(params["preferred_element_type"])
    plan = _plan(tuple(lhs.shape), tuple(rhs.shape), tuple(sorted(params.items())))
    if plan.empty:
        if numpy:
            return np.zeros(plan.out_shape, dtype)
        return xp.zeros(plan.out_shape, dtype=namespace.dtype_for(xp, dtype), device=lhs.device)
    lhs, rhs = namespace.astype(xp, lhs, dtype), namespace.astype(xp, rhs, dtype)
    windows = xp.reshape(_windows(xp, _padded(xp, lhs, plan, dtype), plan), plan.windows_split)
    kernel = xp.reshape(rhs, plan.kernel_split)
    matmul = np.matmul if numpy else functools.partial(namespace.matmul, xp)
    product = None
    whole = plan.window[0] if plan.window else 1
    for lo, hi in plan.chunks:
        a = _matrix(xp, _take_taps(windows, plan.windows_labels, lo, hi, whole),
                    plan.windows_order, plan.windows_groups)  # fmt: skip
        b = _matrix(xp, _take_taps(kernel, plan.kernel_labels, lo, hi, whole),
                    plan.kernel_order, plan.kernel_groups)  # fmt: skip
        part = matmul(b, a) if plan.kernel_rows else matmul(a, b)
        if product is None:
            product = part
        elif dtype == np.bool_:
            product = product | part
        else:
            product = product + part
    product = xp.reshape(product, plan.product_split)
    if plan.out_order is not None:
        product = xp.permute_dims(product, plan.out_order)
    return xp.reshape(product, plan.out_shape)
