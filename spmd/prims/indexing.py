"""The indexing primitive: NumPy basic and integer-array indexing with a static index plan.

The ``index`` parameter has one entry per entry of a normalized NumPy index (Ellipsis
expanded, trailing full slices added): a non-negative ``int``, a ``Slice`` (bounds resolved
against the axis size), ``None`` (a new axis), ``IndexArray(k)`` (the k-th index-array
operand), or ``Ellipsis`` where an ellipsis stood for no axes at all: NumPy still counts it
as separating two advanced indices. Index arrays are operands (traced or constant);
everything else is static.
"""

from __future__ import annotations

import math

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdError, SpmdTypeError, shape_str
from spmd.prims import namespace
from spmd.prims.derivatives import batch_size, batch_to_front, bind, moveaxis
from spmd.prims.index_plan import Entry, IndexArray, Slice, take_index
from spmd.sharding.rules import Factors


class SpmdIndexError(SpmdError, IndexError):
    """An index is out of range for its axis, or indexes more axes than the array has."""


def out_of_range(axis: int, index: int, size: int) -> SpmdIndexError:
    return SpmdIndexError(
        f"spmd.numpy indexing: index {index} is out of bounds for axis {axis} with size {size}; "
        f"valid indices are {-size} to {size - 1}."
        if size
        else f"spmd.numpy indexing: index {index} is out of bounds for axis {axis} with size 0; "
        f"an empty axis has no elements to index."
    )


def _advanced_shape(entries: tuple[Entry, ...], index_avals: tuple[ShapedArray, ...]):
    shapes = [index_avals[e.position].shape if isinstance(e, IndexArray) else () for e in entries]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        arrays = ", ".join(shape_str(s) for s in shapes)
        raise ShapeError(
            f"spmd.numpy indexing: the index arrays (and integers among them) could not be "
            f"broadcast together; their shapes are {arrays}. Reshape them so that each "
            f"dimension matches or is 1."
        ) from None


def _getitem_shape(x: ShapedArray, *index_avals: ShapedArray, index: tuple) -> ShapedArray:
    axis, basic, advanced = 0, [], []  # basic: (entry position, dims); advanced: positions
    for position, entry in enumerate(index):
        if entry is None or entry is Ellipsis:
            basic.append((position, (1,) if entry is None else ()))
            continue
        if axis >= x.ndim:
            raise SpmdIndexError(f"spmd.numpy indexing: too many indices for {x}.")
        size = x.shape[axis]
        if isinstance(entry, Slice):
            basic.append((position, (len(entry),)))
        elif isinstance(entry, IndexArray):
            aval = index_avals[entry.position]
            if aval.dtype.kind not in "iu":
                raise SpmdTypeError(
                    f"spmd.numpy indexing: index arrays must hold integers; the one for axis "
                    f"{axis} is {aval}."
                )
            if size == 0 and aval.size:
                raise out_of_range(axis, 0, 0)
            advanced.append(position)
        elif not 0 <= entry < size:
            raise out_of_range(axis, entry, size)
        axis += 1
    if axis != x.ndim:
        raise SpmdIndexError(f"spmd.numpy indexing: index plan {index} does not cover {x}.")
    if not any(isinstance(e, IndexArray) for e in index):
        return ShapedArray(tuple(d for _, dims in basic for d in dims), x.dtype)
    advanced += [p for p, e in enumerate(index) if isinstance(e, int)]
    advanced.sort()
    middle = _advanced_shape(tuple(index[p] for p in advanced), index_avals)
    if advanced == list(range(advanced[0], advanced[-1] + 1)):  # adjacent: stays in place
        before = [d for p, dims in basic if p < advanced[0] for d in dims]
        after = [d for p, dims in basic if p > advanced[-1] for d in dims]
        return ShapedArray((*before, *middle, *after), x.dtype)
    return ShapedArray((*middle, *(d for _, dims in basic for d in dims)), x.dtype)


def _key(xp, shape: tuple[int, ...], indices, index: tuple) -> tuple:
    """The NumPy index for the plan on an array of ``shape``. Index arrays wrap negative
    entries and clip the rest into range (as JAX does under jit); the wrappers have already
    rejected out-of-range values they could see."""
    key, axis = [], 0
    for entry in index:
        if isinstance(entry, IndexArray):
            size = shape[axis]
            i = xp.asarray(indices[entry.position])
            i = xp.clip(xp.where(i < 0, i + size, i), 0, max(size - 1, 0))
            key.append(i)
        else:
            key.append(entry.to_slice() if isinstance(entry, Slice) else entry)
        axis += entry is not None and entry is not Ellipsis
    return tuple(key)


def _getitem_impl(xp, x, *indices, index: tuple):
    if xp is np:
        x = np.asarray(x)
        return x[_key(np, x.shape, indices, index)]
    return take_index(xp, namespace.asarray(xp, x), indices, index)


def _getitem_sharding(ins, outs, *, index: tuple) -> Factors:
    """Dimensions taken whole (``:``) pass through; indexed ones are blocked, and so is every
    dimension when index arrays move dimensions around."""
    x, *index_avals = ins
    sizes = {f"d{i}": n for i, n in enumerate(x.shape)}
    sizes |= {f"out{i}": n for i, n in enumerate(outs[0].shape)}
    if any(isinstance(e, IndexArray) for e in index):
        operands = [tuple((f"d{i}",) for i in range(x.ndim))]
        operands += [
            tuple((f"#{k}_{i}",) for i in range(a.ndim)) for k, a in enumerate(index_avals)
        ]
        sizes |= {f"#{k}_{i}": n for k, a in enumerate(index_avals) for i, n in enumerate(a.shape)}
        results = (tuple((f"out{i}",) for i in range(outs[0].ndim)),)
        return Factors(tuple(operands), results, sizes, blocked=frozenset(sizes))
    out, axis = [], 0
    for entry in index:
        if entry is None:
            out.append(())
        elif isinstance(entry, Slice):
            whole = (entry.start, entry.stop, entry.step) == (0, x.shape[axis], 1)
            out.append((f"d{axis}",) if whole else (f"out{len(out)}",))
        if entry is not None and entry is not Ellipsis:
            axis += 1
    blocked = {f for f in sizes if f not in {d[0] for d in out if d}} | {
        f for f in sizes if f.startswith("out")
    }
    return Factors(
        (tuple((f"d{i}",) for i in range(x.ndim)),),
        (tuple(out),),
        sizes,
        blocked=frozenset(blocked),
    )


# --- scatter_add: the transpose of getitem --------------------------------------------------


def _scatter_add_shape(
    updates: ShapedArray, *index_avals: ShapedArray, index: tuple, shape: tuple[int, ...]
) -> ShapedArray:
    taken = _getitem_shape(ShapedArray(tuple(shape), updates.dtype), *index_avals, index=index)
    if taken.shape != updates.shape:
        raise ShapeError(
            f"scatter_add: updates {updates} do not fit index plan {index} of an array of "
            f"shape {shape_str(shape)}, which takes {taken}."
        )
    return ShapedArray(tuple(shape), updates.dtype)


def _scatter_add_impl(xp, updates, *indices, index: tuple, shape: tuple[int, ...]):
    """Zeros of ``shape`` with ``updates`` added where ``x[index]`` reads, summed where an
    index names a position more than once."""
    if xp is not np:
        updates = namespace.asarray(xp, updates)
        n = math.prod(shape)
        where = namespace.device_of(updates)
        positions = xp.reshape(xp.arange(n, dtype=xp.int64, device=where), tuple(shape))
        positions = xp.reshape(take_index(xp, positions, indices, index), (-1,))
        out = namespace.scatter_add_flat(xp, n, positions, xp.reshape(updates, (-1,)))
        return xp.reshape(out, tuple(shape))
    updates = np.asarray(updates)
    out = np.zeros(shape, dtype=updates.dtype)
    key = _key(np, shape, indices, index)
    if any(isinstance(e, IndexArray) for e in index):
        np.add.at(out, key, updates)
    else:  # basic indexing names each position at most once
        out[key] = updates
    return out


def _scatter_add_sharding(ins, outs, *, index: tuple, shape: tuple[int, ...]) -> Factors:
    """getitem's factors with operand and result swapped: dimensions taken whole pass
    through (each device scatters its block), the others are blocked."""
    updates, *index_avals = ins
    taken = _getitem_sharding([outs[0], *index_avals], [updates], index=index)
    operands = (taken.results[0], *taken.operands[1:])
    return Factors(operands, (taken.operands[0],), taken.sizes, blocked=taken.blocked)


def _scatter_add_block(params, in_shapes, out_shapes, in_dtypes, out_bounds) -> dict:
    """A device makes its block of the result, of the block's shape (the dimensions it is
    split along are taken whole, so the index plan holds as it is)."""
    return {**params, "shape": tuple(out_shapes[0])}


# --- derivatives and batching of getitem ----------------------------------------------------


def _getitem_jvp(primals, out, tangents, *, index):
    if tangents[0] is None:
        return None
    return getitem_p.bind(tangents[0], *primals[1:], index=index)


def _getitem_transpose(ct, x, *indices, index):
    spread = scatter_add_p.bind(ct, *indices, index=index, shape=x.aval.shape)
    return [spread, *(None for _ in indices)]


def _batched_plan(index: tuple, indices, dims, size: int, operand_batched: bool):
    """How to index a whole batch at once: the index plan, the index arrays, where the batch
    dimension lands in the result, and the permutation (or None) that takes that result to
    the members' layout. A batched operand has its batch dimension first.

    Unbatched index arrays: a full slice takes the operand's batch dimension. Batched ones:
    their batch dimension goes first and they broadcast one rank higher; a batched operand is
    then also indexed by ``arange(size)`` along its batch dimension, so member ``b`` reads its
    own slice. That extra index array comes first, so the advanced dimensions come first in
    the result even where the members keep them in place: the permutation moves them back."""
    arrays = [e for e in index if isinstance(e, IndexArray)]
    avals = [aval_of(i) for i in indices]
    if all(d is None for d in dims):
        index = (Slice(0, size, 1), *index)
        if not arrays or _adjacent(index):
            return index, list(indices), 0, None
        middle = np.broadcast_shapes(*(avals[e.position].shape for e in arrays))
        return index, list(indices), len(middle), None
    rank = max(a.ndim - (d is not None) for a, d in zip(avals, dims, strict=True))
    lined = []
    for i, d in zip(indices, dims, strict=True):
        if d is not None:
            i = moveaxis(i, d, 0)
            rest = aval_of(i).shape[1:]
            i = bind("reshape", i, new_sizes=(size, *(1,) * (rank - len(rest)), *rest))
        lined.append(i)
    before = 0  # the members' dimensions before the advanced ones, where those stay in place
    if _adjacent(index):
        first = next(p for p, e in enumerate(index) if _advanced(e))
        before = sum(isinstance(e, Slice) or e is None for e in index[:first])
    if not operand_batched:
        return index, lined, before, None
    members = np.arange(size, dtype=np.intp).reshape((size,) + (1,) * rank)
    plan = (IndexArray(len(lined)), *index)
    order = None
    if before:  # (batch, advanced, before, after) -> (batch, before, advanced, after)
        order = (0, *range(1 + rank, 1 + rank + before), *range(1, 1 + rank))
    return plan, [*lined, members], 0, order


def _advanced(entry) -> bool:
    return isinstance(entry, IndexArray | int)


def _adjacent(index: tuple) -> bool:
    """Whether the advanced entries (index arrays, and integers among them) are adjacent, so
    that their dimensions stay in place in the result."""
    positions = [p for p, e in enumerate(index) if _advanced(e)]
    return positions == list(range(positions[0], positions[-1] + 1))


def _full_order(order: tuple[int, ...] | None, ndim: int) -> tuple[int, ...] | None:
    return None if order is None else (*order, *range(len(order), ndim))


def _getitem_batch(args, dims, *, index):
    (x, *indices), (x_dim, *index_dims) = args, dims
    size = batch_size(args, dims)
    if x_dim is not None:
        x = moveaxis(x, x_dim, 0)
    plan, lined, out_dim, order = _batched_plan(index, indices, index_dims, size, x_dim is not None)
    out = getitem_p.bind(x, *lined, index=plan)
    order = _full_order(order, aval_of(out).ndim)
    return (out if order is None else bind("transpose", out, permutation=order)), out_dim


def _scatter_add_batch(args, dims, *, index, shape):
    """As getitem's with a batched operand: the result has the batch dimension first, and the
    updates are laid out as that getitem's result."""
    (updates, *indices), (u_dim, *index_dims) = args, dims
    size = batch_size(args, dims)
    plan, lined, out_dim, order = _batched_plan(index, indices, index_dims, size, True)
    updates = moveaxis(batch_to_front(updates, u_dim, size), 0, out_dim)
    order = _full_order(order, aval_of(updates).ndim)
    if order is not None:
        inverse = tuple(int(k) for k in np.argsort(order))
        updates = bind("transpose", updates, permutation=inverse)
    return scatter_add_p.bind(updates, *lined, index=plan, shape=(size, *shape)), 0


def _scatter_add_jvp(primals, out, tangents, *, index, shape):
    if tangents[0] is None:
        return None
    return scatter_add_p.bind(tangents[0], *primals[1:], index=index, shape=shape)


def _scatter_add_transpose(ct, updates, *indices, index, shape):
    return [getitem_p.bind(ct, *indices, index=index), *(None for _ in indices)]


getitem_p = Primitive(
    "getitem",
    Rules(
        shape=_getitem_shape,
        impl=_getitem_impl,
        sharding=_getitem_sharding,
        jvp=_getitem_jvp,
        transpose=_getitem_transpose,
        batch=_getitem_batch,
    ),
)

# scatter_add(updates, *index arrays, index, shape): zeros of ``shape`` with ``updates`` added
# at ``[index]``: the transpose of getitem.
scatter_add_p = Primitive(
    "scatter_add",
    Rules(
        shape=_scatter_add_shape,
        impl=_scatter_add_impl,
        sharding=_scatter_add_sharding,
        local_params=_scatter_add_block,
        jvp=_scatter_add_jvp,
        transpose=_scatter_add_transpose,
        batch=_scatter_add_batch,
    ),
)
