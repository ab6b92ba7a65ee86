"""conv_general_dilated's implementation on any array namespace: one matmul per device, by
gathering windows (im2col, here) or scattering products (col2im, convolution_scatter.py),
whichever moves less memory for the shapes at hand.

Gathering: the lhs is dilated and padded into a fresh buffer (only where it must be), then
viewed as its windows, one axis per output position along each spatial dimension and one
per tap of the kernel (NumPy's ``sliding_window_view``: no copy; other namespaces stack
strided slices, looping over the taps or the output positions, whichever are fewer).
Reshaped to a matrix of windows by taps and features (the one copy, laid out so that it
reads the lhs along its rows), one matmul with the kernel gives the result: windows as rows
(``(grp, windows, taps) @ (grp, taps, o)``, the matrix possibly read transposed) or, when
the result keeps its spatial dimensions after its features (NCHW), the kernel as rows,
batched over the batch (``(o, taps) @ (n, taps, positions)``), which writes the result in
its own layout. A windows matrix over the budget is built and multiplied in pieces along
the first spatial dimension's taps, and the pieces summed. Axes carry the labels of
convolution_labels.py.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.prims import namespace
from spmd.prims.convolution_labels import Labels, conv_labels, merged, order_of
from spmd.prims.convolution_scatter import scatter_conv, scatter_plan
from spmd.prims.convolution_shapes import Geometry, conv_shape, geometry

# Windows matrices up to this many elements (or twice the operand and result) in one piece.
BUDGET = 2**23
# What a multiply-add costs beside copying an element, in the choice between the two ways.
FLOP_WEIGHT = 1 / 16
# "gather" or "scatter" to take one way whatever the shapes (tests check both); None: choose.
FORCE: str | None = None


@dataclass(frozen=True)
class Setting:
    """What both ways need: sizes, labels, the result's shape, and whether it is all zeros."""

    geometry: Geometry
    labels: Labels
    out_shape: tuple[int, ...]
    empty: bool  # no result elements, or nothing summed
    scatter: bool  # scattering products moves less memory than gathering windows


@dataclass(frozen=True)
class GatherPlan:
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
    windows_split: tuple[int, ...]
    windows_order: tuple[int, ...]  # the matrix's axes, merged as windows_groups say
    windows_groups: tuple[int, ...]
    columns: bool  # the windows matrix is built taps by windows, and read transposed
    kernel_split: tuple[int, ...]
    kernel_order: tuple[int, ...]
    kernel_groups: tuple[int, ...]
    kernel_rows: bool  # the kernel is the left factor
    product_split: tuple[int, ...]
    out_order: tuple[int, ...] | None  # the product's labels to the result's (None: as they are)
    chunks: tuple[tuple[int, int], ...]  # ranges of the first spatial dimension's taps
    tap_axes: tuple[int, int]  # the first tap axis in the windows and in the kernel


@functools.lru_cache(maxsize=512)
def setting(lhs_shape, rhs_shape, params: tuple) -> Setting:
    params = dict(params) | {"preferred_element_type": None}
    lhs = ShapedArray(lhs_shape, np.dtype(np.float32))
    rhs = ShapedArray(rhs_shape, lhs.dtype)
    g = geometry(lhs, rhs, **params)
    out_shape = conv_shape(lhs, rhs, **params).shape
    groups, batches = params["feature_group_count"], params["batch_group_count"]
    labels = conv_labels(params["dimension_numbers"], groups, batches, g)
    terms = g.i * math.prod(g.window)
    rows = (g.n // batches) * groups
    windows = rows * math.prod(g.out) * terms
    gather_cost = windows * (1 + g.o / groups * FLOP_WEIGHT)
    products = rows * math.prod(g.spatial) * math.prod(g.window) * g.o / groups
    scatter_cost = products * (1.5 + g.i * FLOP_WEIGHT)
    budget = max(BUDGET, 2 * (math.prod(lhs_shape) + math.prod(out_shape)))
    scatter = scatter_cost < gather_cost and products <= budget  # gathering goes in pieces
    return Setting(g, labels, out_shape, math.prod(out_shape) == 0 or terms == 0, scatter)


@functools.lru_cache(maxsize=512)
def gather_plan(lhs_shape, params: tuple, s: Setting) -> GatherPlan:
    params = dict(params)
    g, labels = s.geometry, s.labels
    lhs_spec = params["dimension_numbers"].lhs_spec
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
    slices = [slice(None)] * (ndim + k)
    for i, axis in enumerate(spatial_axes):
        slices[axis] = slice(None, None, strides[i])
        slices[ndim + i] = slice(None, None, rhs_dilation[i])

    size = labels.size
    # Where each label reads the lhs from: the later its axis, the nearer its elements.
    grouped_batch = params["batch_group_count"] > 1
    source = {"n": lhs_spec[0], "grp": lhs_spec[0] if grouped_batch else lhs_spec[1]}
    source |= {"c": lhs_spec[1]} | {f"k{i}": lhs_spec[2 + i] for i in range(k)}
    source |= {f"s{i}": lhs_spec[2 + i] for i in range(k)}
    contracted = sorted(["c", *(f"k{i}" for i in range(k))], key=source.get)
    batch = ["grp"] if "grp" in labels.out else []
    out = list(labels.out)
    lead, tail = out[: out.index("o")], out[out.index("o") + 1 :]
    kernel_rows = (
        bool(tail)
        and all(label.startswith("s") for label in tail)
        and lead in (["n"], ["n", "grp"])
        and (math.prod(g.out) >= 32 or size["n"] == 1)
    )
    columns = False
    if kernel_rows:
        windows_axes = [*([x] for x in lead), contracted, tail]
        kernel_axes = [batch, ["o"], contracted]
        product = (*lead, "o", *tail)
    else:
        free = [label for label in out if label == "n" or label.startswith("s")]
        columns = bool(free) and source[contracted[-1]] < source[free[-1]]
        windows_axes = [batch, contracted, free] if columns else [batch, free, contracted]
        kernel_axes = [batch, contracted, ["o"]]
        product = (*batch, *free, "o")
    out_order = tuple(product.index(x) for x in out)
    matrix = math.prod(size[x] for x in labels.windows)
    budget = max(BUDGET, 2 * (math.prod(lhs_shape) + math.prod(s.out_shape)))
    chunks = ((0, g.window[0]),) if k else ((0, 1),)
    if k and matrix > budget:
        pieces = min(g.window[0], -(-matrix // budget))
        step = -(-g.window[0] // pieces)
        chunks = tuple((lo, min(lo + step, g.window[0])) for lo in range(0, g.window[0], step))
    return GatherPlan(
        buffer=tuple(buffer) if tuple(buffer) != lhs_shape else None,
        place=tuple(place),
        crop=tuple(crop) if any(c != slice(None) for c in crop) else None,
        spatial_axes=spatial_axes,
        dilated_window=g.dilated_window,
        window_slices=tuple(slices),
        strides=strides,
        rhs_dilation=rhs_dilation,
        out=g.out,
        window=g.window,
        windows_split=tuple(size[x] for x in labels.windows),
        windows_order=order_of(labels.windows, windows_axes),
        windows_groups=tuple(map(len, windows_axes)),
        columns=columns,
        kernel_split=tuple(size[x] for x in labels.kernel),
        kernel_order=order_of(labels.kernel, kernel_axes),
        kernel_groups=tuple(map(len, kernel_axes)),
        kernel_rows=kernel_rows,
        product_split=tuple(size[x] for x in product),
        out_order=None if out_order == tuple(range(len(out_order))) else out_order,
        chunks=chunks,
        tap_axes=(labels.windows.index("k0"), labels.kernel.index("k0")) if k else (0, 0),
    )


def _padded(xp, lhs, plan: GatherPlan, zeros):
    if plan.buffer is not None:
        buffer = zeros(plan.buffer)
        buffer[plan.place] = lhs
        lhs = buffer
    return lhs if plan.crop is None else lhs[plan.crop]


def _windows(xp, x, plan: GatherPlan):
    """The windows of the padded lhs ``x``: its axes with output positions along the
    spatial ones, then one axis per tap."""
    if not plan.spatial_axes:
        return x
    if namespace.is_numpy(xp):
        view = np.lib.stride_tricks.sliding_window_view(
            x, plan.dilated_window, axis=plan.spatial_axes
        )
        return view[plan.window_slices]
    ndim = x.ndim
    by_tap = math.prod(plan.window) <= math.prod(plan.out)
    # One strided slice per tap reading every output position, or per position reading
    # its whole window (then the spatial axes hold taps and the trailing ones positions).
    count, step, reach = (plan.window, plan.strides, plan.out) if by_tap else (
        plan.out, plan.rhs_dilation, plan.window)  # fmt: skip
    move = plan.rhs_dilation if by_tap else plan.strides
    parts = []
    for point in itertools.product(*map(range, count)):
        index = [slice(None)] * ndim
        for i, axis in enumerate(plan.spatial_axes):
            start = point[i] * move[i]
            index[axis] = slice(start, start + step[i] * (reach[i] - 1) + 1, step[i])
        parts.append(x[tuple(index)])
    stacked = xp.stack(parts, axis=-1)
    stacked = xp.reshape(stacked, (*stacked.shape[:-1], *count))
    if by_tap:
        return stacked
    order = list(range(ndim))
    for i, axis in enumerate(plan.spatial_axes):
        order[axis] = ndim + i
    return xp.permute_dims(stacked, (*order, *plan.spatial_axes))


def _taps(x, axis: int, lo: int, hi: int, whole: int):
    if (lo, hi) == (0, whole):
        return x
    index = [slice(None)] * x.ndim
    index[axis] = slice(lo, hi)
    return x[tuple(index)]


def _gather(xp, lhs, kernel, plan: GatherPlan, zeros, matmul, is_bool: bool):
    windows = _windows(xp, _padded(xp, lhs, plan, zeros), plan)
    windows = xp.reshape(windows, plan.windows_split)
    product = None
    whole = plan.window[0] if plan.window else 1
    for lo, hi in plan.chunks:
        a = merged(xp, _taps(windows, plan.tap_axes[0], lo, hi, whole), plan.windows_order,
                   plan.windows_groups)  # fmt: skip
        b = merged(xp, _taps(kernel, plan.tap_axes[1], lo, hi, whole), plan.kernel_order,
                   plan.kernel_groups)  # fmt: skip
        if plan.columns:
            a = xp.permute_dims(a, (*range(a.ndim - 2), a.ndim - 1, a.ndim - 2))
        part = matmul(b, a) if plan.kernel_rows else matmul(a, b)
        if product is not None:  # the sum over pieces of taps
            part = product | part if is_bool else product + part
        product = part
    product = xp.reshape(product, plan.product_split)
    return product if plan.out_order is None else xp.permute_dims(product, plan.out_order)


def conv_impl(xp, lhs, rhs, **params):
    numpy = namespace.is_numpy(xp)
    if numpy:
        lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    dtype = namespace.numpy_dtype(xp, lhs)
    if params["preferred_element_type"] is not None:
        dtype = np.dtype(params["preferred_element_type"])
    if numpy:
        zeros = functools.partial(np.zeros, dtype=dtype)
    else:
        zeros = functools.partial(xp.zeros, dtype=namespace.dtype_for(xp, dtype),
                                  device=lhs.device)  # fmt: skip
    key = tuple(sorted(params.items()))
    s = setting(tuple(lhs.shape), tuple(rhs.shape), key)
    if s.empty:
        return zeros(s.out_shape)
    lhs, rhs = namespace.astype(xp, lhs, dtype), namespace.astype(xp, rhs, dtype)
    matmul = np.matmul if numpy else functools.partial(namespace.matmul, xp)
    kernel = xp.reshape(rhs, tuple(s.labels.size[x] for x in s.labels.kernel))
    if s.scatter if FORCE is None else FORCE == "scatter":
        plan = scatter_plan(s.labels, s.geometry, key)
        out = scatter_conv(xp, lhs, kernel, plan, zeros, matmul, dtype == np.bool_)
    else:
        plan = gather_plan(tuple(lhs.shape), key, s)
        out = _gather(xp, lhs, kernel, plan, zeros, matmul, dtype == np.bool_)
    return xp.reshape(out, s.out_shape)
