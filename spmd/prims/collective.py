"""Collective primitives of per-device programs (shard_map and pmap bodies).

Each names the mesh axes it spans (``axes``) and the number of devices in a group
(``size``). They have no single-device implementation: the partitioner turns them into
Collective steps that the executor runs through its Communicator with the runner of the
collective's record (``rules.collective``, spmd/prims/collective_records.py, which also
holds its kind and bytes). Each one's ``varying`` rule says how it changes the set of
mesh axes a value differs over, which shard_map's replication check follows.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.axis_env import group_size
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, aval_str
from spmd.prims.collective_records import ALL_GATHER, ALL_TO_ALL, PPERMUTE, PSUM, PSUM_SCATTER
from spmd.prims.derivatives import batch_size, batch_to_front, bind, convert, linear_jvp, moveaxis


def no_impl(name: str):
    """The impl of a primitive that only the partitioner runs (lowered to per-device steps)."""

    def impl(xp, *args, **params):
        raise RuntimeError(
            f"internal error: {name} ran outside the partitioner; please report this."
        )

    return impl


def _drops_axes(eqn, operands: list[frozenset]) -> list[frozenset]:
    """Every device of a group holds the same result: it no longer varies over the axes."""
    return [frozenset().union(*operands) - set(eqn.params["axes"])]


def _adds_axes(eqn, operands: list[frozenset]) -> list[frozenset]:
    """Each device of a group holds its own result: it varies over the axes."""
    return [frozenset().union(*operands) | set(eqn.params["axes"])]


def _same(x: ShapedArray, **params) -> ShapedArray:
    return x


def _all_gather_shape(x: ShapedArray, *, axes, size, axis, tiled) -> ShapedArray:
    shape = list(x.shape)
    if tiled:
        shape[axis] *= size
    else:
        shape.insert(axis, size)
    return dataclasses.replace(x, shape=tuple(shape))


def _divisible(who: str, x: ShapedArray, dim: int, size: int, axes, tiled: bool) -> None:
    n = x.shape[dim]
    ok = n % size == 0 if tiled else n == size
    if not ok:
        need = f"a multiple of {size}" if tiled else f"exactly {size}"
        raise ShapeError(
            f"{who}: dimension {dim} of {aval_str(x.shape, x.dtype)} has size {n}, but over "
            f"axes {axes!r} ({size} devices) it must be {need}"
            + ("." if tiled else "; pass tiled=True to split it into equal chunks instead.")
        )


def _psum_scatter_shape(
    x: ShapedArray, *, axes, size, scatter_dimension, tiled, **_
) -> ShapedArray:
    _divisible("psum_scatter", x, scatter_dimension, size, axes, tiled)
    shape = list(x.shape)
    if tiled:
        shape[scatter_dimension] //= size
    else:
        del shape[scatter_dimension]
    return dataclasses.replace(x, shape=tuple(shape))


def _all_to_all_shape(x: ShapedArray, *, axes, size, split_axis, concat_axis, tiled):
    _divisible("all_to_all", x, split_axis, size, axes, tiled)
    shape = list(x.shape)
    if tiled:
        shape[split_axis] //= size
        shape[concat_axis] *= size
    else:
        del shape[split_axis]
        shape.insert(concat_axis, size)
    return dataclasses.replace(x, shape=tuple(shape))


def _axis_index_shape(*, axes, size) -> ShapedArray:
    return ShapedArray((), np.dtype(np.int32))


def _collective(name: str, shape, varying, **rules) -> Primitive:
    return Primitive(name, Rules(shape=shape, impl=no_impl(name), varying=varying, **rules))


# --- over a vmap's own axis ----------------------------------------------------------------
# A collective whose axes include the vmap's axis name acts on the batch dimension
# (spmd/core/batching.py); None: not supported.


def _rest(trace, params) -> tuple[str, ...]:
    return tuple(a for a in params["axes"] if a != trace.axis_name)


def _psum_own_axis(trace, values, dims, params):
    x = batch_to_front(values[0], dims[0], trace.size)
    reduce = {"sum": "reduce_sum", "max": "reduce_max", "min": "reduce_min"}[params["op"]]
    out = bind(reduce, x, axes=(0,), keepdims=False)
    rest = _rest(trace, params)
    if rest:
        out = psum_p.bind(out, axes=rest, size=params["size"] // trace.size, op=params["op"])
    return out, None


def _all_gather_own_axis(trace, values, dims, params):
    if _rest(trace, params):
        return None
    x = batch_to_front(values[0], dims[0], trace.size)
    if not params["tiled"]:
        return moveaxis(x, 0, params["axis"]), None
    shape = aval_of(x).shape[1:]
    x = moveaxis(x, 0, params["axis"])
    merged = list(shape)
    merged[params["axis"]] *= trace.size
    return bind("reshape", x, new_sizes=tuple(merged)), None


def _axis_index_own_axis(trace, values, dims, params):
    if _rest(trace, params):
        return None
    return bind("iota", size=trace.size, start=0, step=1, dtype=np.dtype(np.int32)), 0


# --- derivatives -----------------------------------------------------------------------------
# Inside a shard_map body a cotangent either varies over a mesh axis (one value per device)
# or not (one value for the whole axis): the transpose of a sum over devices gives every
# device the sum of the varying cotangents, and an unvarying one as it is. An operand that
# did not vary over an axis was, in effect, copied to every device first (``pvary``), whose
# transpose sums again.


def _vma(x: Any) -> frozenset[str]:
    return x._vma() if isinstance(x, Tracer) else frozenset()


def _psum_jvp(primals, out, tangents, *, axes, size, op, **params):
    (x,), (t,) = primals, tangents
    varying = frozenset(_vma(x))
    if op == "sum":
        return psum_p.bind(t, axes=axes, size=size, op=op, operand_varying=varying)
    at_extreme = convert(bind("equal", x, out), aval_of(t).dtype)
    count = psum_p.bind(at_extreme, axes=axes, size=size, op="sum", operand_varying=varying)
    picked = bind("multiply", t, at_extreme)
    total = psum_p.bind(picked, axes=axes, size=size, op="sum", operand_varying=varying)
    return bind("true_divide", total, count)


def sum_where_varying(ct: Any, axes: tuple[str, ...], size: int | None = None) -> Any:
    """``ct`` summed over those of ``axes`` it varies over: the cotangent of a value that
    every device along ``axes`` shares (psum's and pvary's transpose, and that of a value
    handed whole to every device). ``size``: the devices along all of ``axes``, where known
    (a nested pmap's axis is no longer bound where its enclosing body is transposed)."""
    summed = tuple(a for a in axes if a in _vma(ct))
    if not summed:
        return ct
    return psum_p.bind(ct, axes=summed, size=_count(summed, axes, size), op="sum")


def _count(some: tuple[str, ...], axes: tuple[str, ...], size: int | None) -> int:
    """The devices along ``some`` of ``axes`` (``size``: along all of them, if known)."""
    return size if size is not None and some == tuple(axes) else group_size(some)


def _psum_transpose(ct, x, *, axes, size, op, operand_varying=None):
    return [_times_copies(sum_where_varying(ct, axes, size), axes, operand_varying, size)]


def _times_copies(ct: Any, axes: tuple[str, ...], operand_varying, size: int) -> Any:
    """An operand that did not vary over some of ``axes`` entered the collective once per
    device along them: its cotangent counts that many times."""
    varying = frozenset(axes) if operand_varying is None else operand_varying
    copied = tuple(a for a in axes if a not in varying)
    if not copied:
        return ct
    return bind("multiply", ct, aval_of(ct).dtype.type(_count(copied, axes, size)))


def _all_gather_transpose(ct, x, *, axes, size, axis, tiled):
    if set(axes) <= _vma(ct):
        return [psum_scatter_p.bind(ct, axes=axes, size=size, scatter_dimension=axis, tiled=tiled)]
    # An unvarying cotangent: each device takes its own chunk (picked by a one-hot sum).
    shape = aval_of(ct).shape
    chunk = x.aval.shape[axis] if tiled else 1
    split = (*shape[:axis], size, chunk, *shape[axis + 1 :])
    ones = (1,) * axis + (size, 1) + (1,) * (len(shape) - axis - 1)
    index = axis_index_p.bind(axes=axes, size=size)
    iota = bind("iota", size=size, start=0, step=1, dtype=np.dtype(np.int32))
    hot = convert(bind("equal", bind("reshape", iota, new_sizes=ones), index), aval_of(ct).dtype)
    picked = bind("multiply", bind("reshape", ct, new_sizes=split), hot)
    piece = bind("reduce_sum", picked, axes=(axis,), keepdims=False)
    return [bind("reshape", piece, new_sizes=x.aval.shape)]


def _psum_scatter_jvp(primals, out, tangents, **params):
    return psum_scatter_p.bind(tangents[0], **params, operand_varying=_vma(primals[0]))


def _psum_scatter_transpose(ct, x, *, axes, size, scatter_dimension, tiled, operand_varying=None):
    gathered = all_gather_p.bind(ct, axes=axes, size=size, axis=scatter_dimension, tiled=tiled)
    return [_times_copies(gathered, axes, operand_varying, size)]


def _ppermute_transpose(ct, x, *, axes, size, perm):
    back = tuple((d, s) for s, d in perm)
    return [ppermute_p.bind(ct, axes=axes, size=size, perm=back)]


def _all_to_all_transpose(ct, x, *, axes, size, split_axis, concat_axis, tiled):
    return [
        all_to_all_p.bind(
            ct, axes=axes, size=size, split_axis=concat_axis, concat_axis=split_axis, tiled=tiled
        )
    ]


def _pvary_transpose(ct, x, *, axes, size=None):
    return [sum_where_varying(ct, axes, size)]


def _same_dim(primitive_name: str):
    """Batching for a collective that combines whole values: the batch rides along."""

    def batch(args, dims, **params):
        return bind(primitive_name, args[0], **params), dims[0]

    return batch


def _shifted(primitive_name: str, *axis_params: str):
    """Batching for a collective with axis parameters: the batch goes first, axes shift."""

    def batch(args, dims, **params):
        x = batch_to_front(args[0], dims[0], batch_size(args, dims))
        moved = {k: params[k] + 1 for k in axis_params}
        return bind(primitive_name, x, **{**params, **moved}), 0

    return batch


# op: "sum", "max" or "min"
psum_p = _collective(
    "psum",
    _same,
    _drops_axes,
    jvp=_psum_jvp,
    transpose=_psum_transpose,
    batch=_same_dim("psum"),
    own_axis=_psum_own_axis,
    collective=PSUM,
)
all_gather_p = _collective(
    "all_gather",
    _all_gather_shape,
    _drops_axes,
    jvp=linear_jvp("all_gather"),
    transpose=_all_gather_transpose,
    batch=_shifted("all_gather", "axis"),
    own_axis=_all_gather_own_axis,
    collective=ALL_GATHER,
)
psum_scatter_p = _collective(
    "psum_scatter",
    _psum_scatter_shape,
    _adds_axes,
    jvp=_psum_scatter_jvp,
    transpose=_psum_scatter_transpose,
    batch=_shifted("psum_scatter", "scatter_dimension"),
    collective=PSUM_SCATTER,
)
# perm: (source, destination) pairs of linear indices over ``axes`` in mesh order
ppermute_p = _collective(
    "ppermute",
    _same,
    _adds_axes,
    jvp=linear_jvp("ppermute"),
    transpose=_ppermute_transpose,
    batch=_same_dim("ppermute"),
    collective=PPERMUTE,
)
all_to_all_p = _collective(
    "all_to_all",
    _all_to_all_shape,
    _adds_axes,
    jvp=linear_jvp("all_to_all"),
    transpose=_all_to_all_transpose,
    batch=_shifted("all_to_all", "split_axis", "concat_axis"),
    collective=ALL_TO_ALL,
)
axis_index_p = _collective(
    "axis_index", _axis_index_shape, _adds_axes, own_axis=_axis_index_own_axis
)
# The same value, now typed as varying over ``axes`` (JAX's pvary): it moves no data.
# ``size`` (optional): the devices along ``axes``, for a transpose where they are not bound.
pvary_p = Primitive(
    "pvary",
    Rules(
        shape=_same,
        impl=lambda xp, x, *, axes, size=None: x,
        varying=_adds_axes,
        jvp=linear_jvp("pvary"),
        transpose=_pvary_transpose,
        batch=_same_dim("pvary"),
    ),
)


def _axis_slice_shape(x: ShapedArray, *, axis: int, axes=(), size=1, index=None) -> ShapedArray:
    return dataclasses.replace(x, shape=x.shape[:axis] + x.shape[axis + 1 :])


def _axis_slice_impl(xp, x, *, axis: int, axes=(), size=1, index=None):
    if index is None:
        raise RuntimeError(
            "internal error: axis_slice ran without its device's index (only the partitioner's "
            "lowering gives it one); please report this."
        )
    return x[(slice(None),) * axis + (index, ...)]


def _axis_slice_transpose(ct, x, *, axis: int, axes, size, index=None):
    """Each device's slice put back in place and summed over the devices: the gathered
    cotangent (whole). Where the operand itself varies over ``axes``, each device keeps only
    its own slice's place."""
    gathered = all_gather_p.bind(ct, axes=axes, size=size, axis=axis, tiled=False)
    if not set(axes) & x.aval.vma:
        return [gathered]
    ones = (1,) * axis + (size,) + (1,) * (aval_of(ct).ndim - axis)
    own = axis_index_p.bind(axes=axes, size=size)
    iota = bind("reshape", bind("iota", size=size, start=0, step=1, dtype=np.dtype(np.int32)),
                new_sizes=ones)  # fmt: skip
    hot = convert(bind("equal", iota, own), aval_of(ct).dtype)
    return [bind("multiply", gathered, hot)]


def _axis_slice_batch(args, dims, *, axis: int, **params):
    x = batch_to_front(args[0], dims[0], batch_size(args, dims))
    return axis_slice_p.bind(x, axis=axis + 1, **params), 0


# Each device's own index along dimension ``axis``: its linear index over the mesh ``axes``
# (``size`` devices; a nested pmap's mapped operand, spmd/transforms/pmap.py). The lowering
# gives each device its ``index`` (spmd/transforms/per_device_lowering.py), or reads it
# with no data moved where the value is already split so.
axis_slice_p = Primitive(
    "axis_slice",
    Rules(
        shape=_axis_slice_shape,
        impl=_axis_slice_impl,
        varying=_adds_axes,
        jvp=linear_jvp("axis_slice"),
        transpose=_axis_slice_transpose,
        batch=_axis_slice_batch,
    ),
)
