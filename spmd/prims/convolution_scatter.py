"""conv_general_dilated by scattering (col2im): the lhs times the kernel for every tap in one
matmul, each tap's products then added into the output positions that read them.

``out[s] = sum over taps k of Z[p(s, k), k]`` with ``Z[p, k] = lhs[p] @ kernel[k]`` over the
input features and ``p(s, k) = (s * stride + k * rhs_dilation - low padding) / lhs_dilation``
where that is a whole lhs position. The products are made on the undilated lhs, so a
dilated lhs (the lhs cotangent of a strided convolution) costs no work for its holes, and
the matrix is positions by (taps x output features): smaller than the windows matrix where
the output features are fewer than the input ones (a cotangent convolved back to a few
input channels). The positions a tap reaches along one dimension form an arithmetic
progression, so each tap's sum is one strided add.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from spmd.prims import namespace
from spmd.prims.convolution_labels import Labels, merged, order_of


@dataclass(frozen=True)
class ScatterPlan:
    lhs_split: tuple[int, ...]
    lhs_order: tuple[int, ...]  # to (grp, positions, features)
    lhs_groups: tuple[int, ...]
    batched: bool  # one matmul batched over the taps (else one over taps x outputs, regrouped)
    # the kernel to (taps, grp, features, outputs), or to (grp, features, taps x outputs)
    kernel_order: tuple[int, ...]
    kernel_groups: tuple[int, ...]
    flat_split: tuple[int, ...]  # the products as (grp, positions, taps..., outputs)
    regroup: tuple[int, ...]  # those to (taps..., grp, positions, outputs)
    products_split: tuple[int, ...]  # (taps, grp, n, p..., o)
    acc_shape: tuple[int, ...]  # the output's labels, expanded
    # per tap that reaches any output position: (flat tap, indices into its products
    # permuted as the output, indices into the output)
    taps: tuple[tuple[int, tuple, tuple], ...]
    product_order: tuple[int, ...]  # one tap's products to the output's label order


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _reach(stride: int, rhs_dilation: int, lhs_dilation: int, low: int, out: int, size: int,
           tap: int) -> tuple[slice, slice] | None:  # fmt: skip
    """The output positions ``s`` that tap ``tap`` reads a whole lhs position ``p`` from, as
    (slice of s, slice of p); None when it reads only padding and holes."""
    offset = low - tap * rhs_dilation  # s * stride - offset = p * lhs_dilation
    g = math.gcd(stride, lhs_dilation)
    if offset % g:
        return None
    first = next(s for s in range(lhs_dilation // g) if (s * stride - offset) % lhs_dilation == 0)
    p0 = (first * stride - offset) // lhs_dilation
    ds, dp = lhs_dilation // g, stride // g
    j0 = max(0, _ceil_div(-p0, dp))
    j1 = min(_ceil_div(out - first, ds), _ceil_div(size - p0, dp))
    if j1 <= j0:
        return None
    s, p = first + j0 * ds, p0 + j0 * dp
    count = j1 - j0
    return slice(s, s + (count - 1) * ds + 1, ds), slice(p, p + (count - 1) * dp + 1, dp)


@functools.lru_cache(maxsize=256)
def scatter_plan(labels: Labels, geometry, params: tuple) -> ScatterPlan:
    params = dict(params)
    k = len(geometry.window)
    positions = {f"s{i}": f"p{i}" for i in range(k)}
    lhs_labels = tuple(positions.get(x, x) for x in labels.lhs)
    batch = ["grp"] if "grp" in lhs_labels else []
    rows = [x for x in lhs_labels if x == "n" or x.startswith("p")]
    taps = [f"k{i}" for i in range(k)]
    sizes = labels.size | {f"p{i}": n for i, n in enumerate(geometry.spatial)}
    lhs_axes = [batch, rows, ["c"]]
    # Few outputs per tap make skinny products: one matmul over taps x outputs instead,
    # regrouped taps-first so that each tap's products are one contiguous block.
    batched = sizes["o"] >= 16
    kernel_axes = [taps, batch, ["c"], ["o"]] if batched else [batch, ["c"], [*taps, "o"]]
    flat = (*batch, "rows", *taps, "o")
    rows_size = math.prod(sizes[x] for x in rows)
    regroup = tuple(flat.index(x) for x in (*taps, *batch, "rows", "o"))
    products = (*taps, *batch, *rows, "o")
    one_tap = products[k:]
    out_as_positions = [positions.get(x, x) for x in labels.out]
    reached = []
    for flat_tap, tap in enumerate(itertools.product(*map(range, geometry.window))):
        index_out, index_products = [slice(None)] * len(labels.out), [slice(None)] * len(labels.out)
        for i in range(k):
            found = _reach(params["window_strides"][i], params["rhs_dilation"][i],
                           params["lhs_dilation"][i], params["padding"][i][0],
                           geometry.out[i], geometry.spatial[i], tap[i])  # fmt: skip
            if found is None:
                break
            axis = labels.out.index(f"s{i}")
            index_out[axis], index_products[axis] = found
        else:
            reached.append((flat_tap, tuple(index_products), tuple(index_out)))
    return ScatterPlan(
        lhs_split=tuple(sizes[x] for x in lhs_labels),
        lhs_order=order_of(lhs_labels, lhs_axes),
        lhs_groups=tuple(map(len, lhs_axes)),
        batched=batched,
        kernel_order=order_of(labels.kernel, kernel_axes),
        kernel_groups=(k, len(batch), 1, 1) if batched else tuple(map(len, kernel_axes)),
        flat_split=(*(sizes[x] for x in batch), rows_size, *geometry.window, sizes["o"]),
        regroup=regroup,
        products_split=(math.prod(geometry.window), *(sizes[x] for x in products[k:])),
        acc_shape=tuple(sizes[x] for x in labels.out),
        taps=tuple(reached),
        product_order=tuple(one_tap.index(x) for x in out_as_positions),
    )


def scatter_conv(xp, lhs, kernel, plan: ScatterPlan, zeros, matmul, is_bool: bool):
    """The output (its labels expanded) of ``lhs`` with the ``kernel`` (split by labels)."""
    numpy = namespace.is_numpy(xp)
    x = merged(xp, xp.reshape(lhs, plan.lhs_split), plan.lhs_order, plan.lhs_groups)
    w = merged(xp, kernel, plan.kernel_order, plan.kernel_groups)
    products = matmul(x, w)  # batched: (taps, grp, features, outputs), x broadcast
    if not plan.batched:  # (grp, positions, taps x outputs), regrouped taps first
        products = xp.permute_dims(xp.reshape(products, plan.flat_split), plan.regroup)
        if numpy:
            products = np.ascontiguousarray(products)
    products = xp.reshape(products, plan.products_split)
    acc = zeros(plan.acc_shape)
    for tap, index_products, index_out in plan.taps:
        part = xp.permute_dims(products[tap, ...], plan.product_order)[index_products]
        if numpy:  # in place, through a view
            view = acc[index_out]
            (np.logical_or if is_bool else np.add)(view, part, out=view)
        else:
            acc[index_out] = acc[index_out] | part if is_bool else acc[index_out] + part
    return acc
