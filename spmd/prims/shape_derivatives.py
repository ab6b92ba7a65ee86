"""The jvp, transpose and batch rules of the shape primitives (spmd/prims/shape.py).

Every shape primitive but convert_element_type (from or to integers) is linear: its jvp is
itself on the tangent (``linear_jvp``), and its transpose the inverse shape operation.
"""

from __future__ import annotations

import numpy as np

from spmd.core.ad import UndefinedPrimal, add_cotangents, zeros
from spmd.core.aval import ShapedArray
from spmd.core.primitive import primitive_named
from spmd.core.trace import aval_of
from spmd.prims.derivatives import (
    batch_size,
    batch_to_front,
    bind,
    convert,
    instantiate,
    linear_jvp,
    member_aval,
    moveaxis,
    sum_to_shape,
    unary_batch,
)


def _reshape_transpose(ct, x, *, new_sizes):
    return [bind("reshape", ct, new_sizes=x.aval.shape)]


def _reshape_batch(args, dims, *, new_sizes):
    x = moveaxis(args[0], dims[0], 0)
    return bind("reshape", x, new_sizes=(aval_of(x).shape[0], *new_sizes)), 0


def _transpose_transpose(ct, x, *, permutation):
    return [bind("transpose", ct, permutation=tuple(int(i) for i in np.argsort(permutation)))]


def _transpose_batch(args, dims, *, permutation):
    x = moveaxis(args[0], dims[0], 0)
    return bind("transpose", x, permutation=(0, *(p + 1 for p in permutation))), 0


def _broadcast_to_transpose(ct, x, *, shape):
    return [sum_to_shape(ct, x.aval.shape)]


def _broadcast_to_batch(args, dims, *, shape):
    """The operand's batch dimension goes first, then size-1 dimensions line it up with
    ``shape`` from the right."""
    x = moveaxis(args[0], dims[0], 0)
    size, *rest = aval_of(x).shape
    lined = (size, *(1,) * (len(shape) - len(rest)), *rest)
    if lined != aval_of(x).shape:
        x = bind("reshape", x, new_sizes=lined)
    return bind("broadcast_to", x, shape=(size, *shape)), 0


def _concatenate_jvp(primals, out, tangents, *, axis):
    dtype = aval_of(out).dtype
    return bind(
        "concatenate",
        *(convert(instantiate(t, p), dtype) for p, t in zip(primals, tangents, strict=True)),
        axis=axis,
    )


def _concatenate_transpose(ct, *operands, axis):
    """Each linear operand's piece of the cotangent (flat pieces reshaped when axis=None)."""
    avals = [o.aval if isinstance(o, UndefinedPrimal) else aval_of(o) for o in operands]
    along = 0 if axis is None else axis
    bounds, start = [], 0
    for aval in avals:
        stop = start + (aval.size if axis is None else aval.shape[axis])
        bounds.append((start, stop))
        start = stop
    pieces = bind("split", ct, bounds=tuple(bounds), axis=along)
    return [
        convert(bind("reshape", piece, new_sizes=aval.shape), aval.dtype)
        if isinstance(o, UndefinedPrimal)
        else None
        for o, aval, piece in zip(operands, avals, pieces, strict=True)
    ]


def _concatenate_batch(args, dims, *, axis):
    """Operands get the batch dimension first (flattened behind it when axis=None) and the
    result's dtype, which a Python scalar among them would otherwise change."""
    size = batch_size(args, dims)
    members = [member_aval(aval_of(a), d) for a, d in zip(args, dims, strict=True)]
    dtype = primitive_named("concatenate").rules.shape(*members, axis=axis).dtype
    lined = []
    for a, d in zip(args, dims, strict=True):
        a = batch_to_front(convert(a, dtype), d, size)
        if axis is None:
            a = bind("reshape", a, new_sizes=(size, aval_of(a).size // size if size else 0))
        lined.append(a)
    return bind("concatenate", *lined, axis=1 if axis is None else axis + 1), 0


def _split_transpose(cts, x, *, bounds, axis):
    """The pieces' cotangents in place along ``axis``: concatenated where the pieces tile the
    axis in order, otherwise each padded with zeros and summed (pieces may overlap)."""
    shape, n = x.aval.shape, x.aval.shape[axis]

    def zeros_along(width):
        return zeros(ShapedArray((*shape[:axis], width, *shape[axis + 1 :]), x.aval.dtype))

    starts = [start for start, _ in bounds]
    if starts[:1] == [0] and [stop for _, stop in bounds] == [*starts[1:], n]:
        return [bind("concatenate", *cts, axis=axis)]
    total = None
    for (start, stop), ct in zip(bounds, cts, strict=True):
        before = [zeros_along(start)] if start else []
        after = [zeros_along(n - stop)] if stop < n else []
        total = add_cotangents(total, bind("concatenate", *before, ct, *after, axis=axis))
    return [total if total is not None else zeros(x.aval)]


def _split_batch(args, dims, *, bounds, axis):
    x = moveaxis(args[0], dims[0], 0)
    outs = bind("split", x, bounds=bounds, axis=axis + 1)
    return outs, [0] * len(outs)


def _repeat_transpose(ct, x, *, repeats, axis):
    """Each element's copies summed: by a reshape for one count, else group by group."""
    shape = x.aval.shape
    if isinstance(repeats, int):
        grouped = (*shape[:axis], shape[axis], repeats, *shape[axis + 1 :])
        ct = bind("reshape", ct, new_sizes=grouped)
        return [bind("reduce_sum", ct, axes=(axis + 1,), keepdims=False, dtype=None)]
    if not repeats:
        return [zeros(x.aval)]
    stops = np.cumsum(repeats).tolist()
    bounds = tuple(zip([0, *stops[:-1]], stops, strict=True))
    groups = bind("split", ct, bounds=bounds, axis=axis)
    sums = [bind("reduce_sum", g, axes=(axis,), keepdims=True, dtype=None) for g in groups]
    return [bind("concatenate", *sums, axis=axis)]


def _repeat_batch(args, dims, *, repeats, axis):
    x = moveaxis(args[0], dims[0], 0)
    return bind("repeat", x, repeats=repeats, axis=axis + 1), 0


def _diagonal_transpose(ct, x, *, offset, axis1, axis2):
    """The cotangent scattered onto the diagonal of zeros: with ``axis1`` and ``axis2`` moved
    last, the diagonal is ``[..., i, i + offset]``, laid out as ``ct``."""
    from spmd.prims.indexing import IndexArray, Slice, scatter_add_p

    shape = x.aval.shape
    rest = [i for i in range(len(shape)) if i not in (axis1, axis2)]
    order = (*rest, axis1, axis2)
    length = aval_of(ct).shape[-1]
    rows = np.arange(length, dtype=np.intp) + max(0, -offset)
    index = (*(Slice(0, shape[i], 1) for i in rest), IndexArray(0), IndexArray(1))
    moved = tuple(shape[i] for i in order)
    spread = scatter_add_p.bind(ct, rows, rows + offset, index=index, shape=moved)
    return [bind("transpose", spread, permutation=tuple(int(i) for i in np.argsort(order)))]


def _diagonal_batch(args, dims, *, offset, axis1, axis2):
    x = moveaxis(args[0], dims[0], 0)
    return bind("diagonal", x, offset=offset, axis1=axis1 + 1, axis2=axis2 + 1), 0


def _convert_jvp(primals, out, tangents, *, new_dtype, weak_type=False):
    """Between inexact dtypes the tangent converts too; to or from integers and booleans
    the result is piecewise constant (or the operand has no tangent): zero."""
    source, target = aval_of(primals[0]).dtype, np.dtype(new_dtype)
    if source.kind not in "fc" or target.kind not in "fc" or tangents[0] is None:
        return None
    return bind("convert_element_type", tangents[0], new_dtype=target, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type=False):
    """``ct`` back in the operand's dtype; a complex cotangent of a real operand keeps its
    real part (as JAX's conversion does), taken explicitly rather than by a lossy cast."""
    if aval_of(ct).dtype.kind == "c" and x.aval.dtype.kind != "c":
        ct = bind("real", ct)
    return [convert(ct, x.aval.dtype)]


DERIVATIVES = {  # the jvp, transpose and batch fields of each shape primitive's Rules
    "reshape": dict(jvp=linear_jvp("reshape"), transpose=_reshape_transpose, batch=_reshape_batch),
    "transpose": dict(
        jvp=linear_jvp("transpose"), transpose=_transpose_transpose, batch=_transpose_batch
    ),
    "broadcast_to": dict(
        jvp=linear_jvp("broadcast_to"),
        transpose=_broadcast_to_transpose,
        batch=_broadcast_to_batch,
    ),
    "concatenate": dict(
        jvp=_concatenate_jvp, transpose=_concatenate_transpose, batch=_concatenate_batch
    ),
    "split": dict(jvp=linear_jvp("split"), transpose=_split_transpose, batch=_split_batch),
    "repeat": dict(jvp=linear_jvp("repeat"), transpose=_repeat_transpose, batch=_repeat_batch),
    "diagonal": dict(
        jvp=linear_jvp("diagonal"), transpose=_diagonal_transpose, batch=_diagonal_batch
    ),
    "convert_element_type": dict(
        jvp=_convert_jvp,
        transpose=_convert_transpose,
        batch=unary_batch("convert_element_type"),
    ),
}
