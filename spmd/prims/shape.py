"""Shape primitives: reshape, transpose, broadcast, concatenate, split, repeat, diagonal and
dtype casts."""

from __future__ import annotations

import functools
import math

import numpy as np

from spmd.core.aval import ShapedArray, result_dtype
from spmd.core.primitive import Primitive, Rules
from spmd.errors import ShapeError
from spmd.prims import namespace, ufuncs
from spmd.prims.shape_derivatives import DERIVATIVES
from spmd.sharding.rules import Factors, broadcast_factors, reshape_factors


def reshape_error(x: ShapedArray, new_sizes: tuple[int, ...]) -> ShapeError:
    """The error for a reshape whose sizes do not multiply to the array's size."""
    return ShapeError(
        f"spmd.numpy.reshape: cannot reshape {x} (size {x.size}) into shape {tuple(new_sizes)}: "
        f"the sizes must multiply to {x.size}. Give a shape with the same number of elements, "
        f"or use -1 for one dimension to infer it."
    )


def _reshape_shape(x: ShapedArray, *, new_sizes: tuple[int, ...]) -> ShapedArray:
    if any(d < 0 for d in new_sizes) or math.prod(new_sizes) != x.size:
        raise reshape_error(x, new_sizes)
    return ShapedArray(tuple(new_sizes), x.dtype)


def _transpose_shape(x: ShapedArray, *, permutation: tuple[int, ...]) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise ShapeError(
            f"spmd.numpy.transpose: axes={tuple(permutation)} is not a permutation of the "
            f"{x.ndim} axes of {x}; give each axis in range({x.ndim}) exactly once."
        )
    return ShapedArray(tuple(x.shape[i] for i in permutation), x.dtype)


def _broadcast_to_shape(x: ShapedArray, *, shape: tuple[int, ...]) -> ShapedArray:
    fix = "Each dimension must equal the target's or be 1, counting from the right."
    if len(shape) < x.ndim:
        raise ShapeError(
            f"spmd.numpy.broadcast_to: cannot broadcast {x} to shape {tuple(shape)}, which has "
            f"fewer dimensions ({len(shape)} < {x.ndim}). {fix}"
        )
    if any(d < 0 for d in shape):
        raise ShapeError(
            f"spmd.numpy.broadcast_to: shape={tuple(shape)} has a negative size; every size "
            f"of the target shape must be >= 0."
        )
    offset = len(shape) - x.ndim
    for axis, size in enumerate(x.shape):
        if size not in (1, shape[offset + axis]):
            raise ShapeError(
                f"spmd.numpy.broadcast_to: cannot broadcast {x} to shape {tuple(shape)}: axis "
                f"{axis} has size {size}, but the target's dimension {offset + axis} is "
                f"{shape[offset + axis]}. {fix}"
            )
    return ShapedArray(tuple(shape), x.dtype)


def _concatenate_shape(*avals: ShapedArray, axis: int | None) -> ShapedArray:
    if not avals:
        raise ShapeError("spmd.numpy.concatenate: need at least one array to concatenate.")
    dtype, _ = result_dtype(*avals)  # Python scalars (axis=None only) promote weakly
    if axis is None:
        return ShapedArray((sum(a.size for a in avals),), dtype)
    first = avals[0]
    for i, a in enumerate(avals):
        if a.ndim == 0:
            raise ShapeError(
                f"spmd.numpy.concatenate: arrays[{i}] is zero-dimensional ({a}) and cannot be "
                f"concatenated; use stack, or pass axis=None to flatten."
            )
        if a.ndim != first.ndim:
            raise ShapeError(
                f"spmd.numpy.concatenate: arrays[{i}] {a} has {a.ndim} dimension(s) but "
                f"arrays[0] {first} has {first.ndim}; all arrays need the same rank. Reshape "
                f"or expand_dims them first."
            )
        for d in range(a.ndim):
            if d != axis and a.shape[d] != first.shape[d]:
                raise ShapeError(
                    f"spmd.numpy.concatenate: arrays[{i}] {a} does not match arrays[0] {first} "
                    f"along dimension {d} ({a.shape[d]} vs {first.shape[d]}); all dimensions "
                    f"except the concatenation axis {axis} must match."
                )
    if not 0 <= axis < first.ndim:
        raise ShapeError(
            f"spmd.numpy.concatenate: axis={axis} is out of bounds for arrays of rank {first.ndim}."
        )
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in avals)
    return ShapedArray(tuple(shape), dtype)


def _concatenate_impl(xp, *arrays, axis: int | None):
    if xp is np:
        return np.concatenate(arrays, axis=axis)
    dtype = ufuncs.result_dtype(xp, *arrays)
    return xp.concat(namespace.asarrays(xp, dtype, *arrays), axis=axis)


def _split_shape(
    x: ShapedArray, *, bounds: tuple[tuple[int, int], ...], axis: int
) -> list[ShapedArray]:
    if not 0 <= axis < x.ndim:
        raise ShapeError(f"spmd.numpy.split: axis={axis} is out of bounds for {x}.")
    n = x.shape[axis]
    outs = []
    for start, stop in bounds:
        if not 0 <= start <= stop <= n:
            raise ShapeError(
                f"spmd.numpy.split: piece [{start}:{stop}] does not lie within axis {axis} of "
                f"{x} (size {n})."
            )
        shape = list(x.shape)
        shape[axis] = stop - start
        outs.append(ShapedArray(tuple(shape), x.dtype))
    return outs


def _split_impl(xp, x, *, bounds: tuple[tuple[int, int], ...], axis: int) -> list:
    x = np.asarray(x) if xp is np else namespace.asarray(xp, x)
    before = (slice(None),) * axis
    after = () if xp is np else (...,)  # the standard asks for every axis, or an ellipsis
    return [x[(*before, slice(start, stop), *after)] for start, stop in bounds]


def _repeat_shape(x: ShapedArray, *, repeats: int | tuple[int, ...], axis: int) -> ShapedArray:
    if not 0 <= axis < x.ndim:
        raise ShapeError(f"spmd.numpy.repeat: axis={axis} is out of bounds for {x}.")
    n = x.shape[axis]
    if isinstance(repeats, int):
        total = n * repeats
    elif len(repeats) == n:
        total = sum(repeats)
    else:
        raise ShapeError(
            f"spmd.numpy.repeat: repeats has {len(repeats)} entries but axis {axis} of {x} has "
            f"size {n}; give one count per element along the axis, or a single int."
        )
    if (repeats if isinstance(repeats, int) else min(repeats, default=0)) < 0:
        raise ShapeError(f"spmd.numpy.repeat: repeats={repeats} may not contain negative counts.")
    shape = list(x.shape)
    shape[axis] = total
    return ShapedArray(tuple(shape), x.dtype)


def _diagonal_length(n1: int, n2: int, offset: int) -> int:
    """How many elements the ``offset`` diagonal of an ``n1`` × ``n2`` matrix has."""
    return max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))


def _diagonal_shape(x: ShapedArray, *, offset: int, axis1: int, axis2: int) -> ShapedArray:
    if x.ndim < 2 or axis1 == axis2 or not (0 <= axis1 < x.ndim and 0 <= axis2 < x.ndim):
        raise ShapeError(
            f"spmd.numpy.diagonal: axis1={axis1} and axis2={axis2} must be two different axes "
            f"in range({x.ndim}) of {x}; give a matrix's two axes, e.g. axis1=0, axis2=1."
        )
    rest = tuple(d for i, d in enumerate(x.shape) if i not in (axis1, axis2))
    length = _diagonal_length(x.shape[axis1], x.shape[axis2], offset)
    return ShapedArray((*rest, length), x.dtype)


def _convert_shape(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool = False) -> ShapedArray:
    if weak_type and x.ndim:
        raise ShapeError(f"convert_element_type: only a scalar can be weakly typed, not {x}.")
    return ShapedArray(x.shape, np.dtype(new_dtype), weak_type)


# --- implementations (NumPy, or any array namespace) -----------------------------------------


def _reshape_impl(xp, x, *, new_sizes):
    if xp is np:
        return np.reshape(x, new_sizes)
    return xp.reshape(namespace.asarray(xp, x), tuple(new_sizes))


def _transpose_impl(xp, x, *, permutation):
    if xp is np:
        return np.transpose(x, permutation)
    return xp.permute_dims(namespace.asarray(xp, x), tuple(permutation))


def _broadcast_to_impl(xp, x, *, shape):
    if xp is np:
        return np.broadcast_to(x, shape)
    return xp.broadcast_to(namespace.asarray(xp, x), tuple(shape))


def _repeat_impl(xp, x, *, repeats, axis):
    if xp is np:
        return np.repeat(x, repeats, axis=axis)
    x = namespace.asarray(xp, x)
    if not isinstance(repeats, int):
        repeats = xp.asarray(repeats, dtype=xp.int64, device=namespace.device_of(x))
    return xp.repeat(x, repeats, axis=axis)


def _diagonal_impl(xp, x, *, offset, axis1, axis2):
    if xp is np:
        return np.diagonal(x, offset, axis1, axis2).copy()
    return namespace.diagonal(xp, namespace.asarray(xp, x), offset, axis1, axis2)


def _convert_impl(xp, x, *, new_dtype, weak_type=False):
    if weak_type:  # a Python scalar, which every array library promotes weakly
        cast = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[np.dtype(new_dtype).kind]
        return cast(x.item() if hasattr(x, "item") else x)
    if xp is np:
        return np.asarray(x).astype(new_dtype)
    return namespace.asarray(xp, x, np.dtype(new_dtype))


# --- sharding --------------------------------------------------------------------------------


def _reshape_sharding(ins, outs, *, new_sizes) -> Factors:
    return reshape_factors(ins[0].shape, outs[0].shape)


def _block_shape(params: dict, in_shapes, out_shapes, in_dtypes, out_bounds, *, name: str) -> dict:
    """A shape-valued parameter becomes the device's block shape of the result."""
    return {**params, name: out_shapes[0]}


def _transpose_sharding(ins, outs, *, permutation) -> Factors:
    names = [f"d{i}" for i in range(ins[0].ndim)]
    return Factors(
        (tuple((f,) for f in names),),
        (tuple((names[p],) for p in permutation),),
        dict(zip(names, ins[0].shape, strict=True)),
        linear="one",
    )


def _broadcast_to_sharding(ins, outs, *, shape) -> Factors:
    return broadcast_factors([ins[0].shape], outs[0].shape, linear="one")


def along_axis(ins, outs, axis: int | None) -> Factors:
    """Every dimension but ``axis`` is shared by all operands and results; ``axis`` (every
    dimension when None: the arrays are flattened) is blocked."""
    sizes: dict[str, int] = {}
    blocked = set()

    def dims(aval, tag: str) -> tuple:
        out = []
        for d, size in enumerate(aval.shape):
            name = f"d{d}" if axis is not None and d != axis else f"{tag}_{d}"
            if name.startswith(tag):
                blocked.add(name)
            sizes[name] = size
            out.append((name,))
        return tuple(out)

    operands = tuple(dims(a, f"in{k}") for k, a in enumerate(ins))
    results = tuple(dims(a, f"out{k}") for k, a in enumerate(outs))
    return Factors(operands, results, sizes, blocked=frozenset(blocked))


def _diagonal_sharding(ins, outs, *, offset: int, axis1: int, axis2: int) -> Factors:
    """The other dimensions pass through. The main diagonal of square matrices is one factor
    (``"i i -> i"``, as einsum's): split alike, each block holds its own part of the diagonal.
    Any other diagonal runs across blocks, so both axes and the result's last are blocked."""
    (x,) = ins
    names = [f"d{i}" for i in range(x.ndim)]
    sizes = dict(zip(names, x.shape, strict=True))
    rest = [(f,) for i, f in enumerate(names) if i not in (axis1, axis2)]
    operand = [(f,) for f in names]
    if offset == 0 and x.shape[axis1] == x.shape[axis2]:
        operand[axis2] = (names[axis1],)
        del sizes[names[axis2]]
        result = (*rest, (names[axis1],))
        return Factors((tuple(operand),), (result,), sizes, linear="one")
    sizes["diagonal"] = outs[0].shape[-1]
    blocked = frozenset({names[axis1], names[axis2], "diagonal"})
    result = (*rest, ("diagonal",))
    return Factors((tuple(operand),), (result,), sizes, blocked=blocked, linear="one")


reshape_p = Primitive(
    "reshape",
    Rules(
        shape=_reshape_shape,
        impl=_reshape_impl,
        sharding=_reshape_sharding,
        local_params=functools.partial(_block_shape, name="new_sizes"),
        **DERIVATIVES["reshape"],
    ),
)
transpose_p = Primitive(
    "transpose",
    Rules(
        shape=_transpose_shape,
        impl=_transpose_impl,
        sharding=_transpose_sharding,
        **DERIVATIVES["transpose"],
    ),
)
broadcast_to_p = Primitive(
    "broadcast_to",
    Rules(
        shape=_broadcast_to_shape,
        impl=_broadcast_to_impl,
        sharding=_broadcast_to_sharding,
        local_params=functools.partial(_block_shape, name="shape"),
        **DERIVATIVES["broadcast_to"],
    ),
)
concatenate_p = Primitive(
    "concatenate",
    Rules(
        shape=_concatenate_shape,
        impl=_concatenate_impl,
        sharding=lambda ins, outs, *, axis: along_axis(ins, outs, axis),
        **DERIVATIVES["concatenate"],
    ),
)
split_p = Primitive(
    "split",
    Rules(
        shape=_split_shape,
        impl=_split_impl,
        sharding=lambda ins, outs, *, axis, bounds: along_axis(ins, outs, axis),
        **DERIVATIVES["split"],
    ),
    multiple_results=True,
)
repeat_p = Primitive(
    "repeat",
    Rules(
        shape=_repeat_shape,
        impl=_repeat_impl,
        sharding=lambda ins, outs, *, axis, repeats: along_axis(ins, outs, axis),
        **DERIVATIVES["repeat"],
    ),
)

# A copy, not NumPy's read-only view: the view would keep the whole operand alive.
diagonal_p = Primitive(
    "diagonal",
    Rules(
        shape=_diagonal_shape,
        impl=_diagonal_impl,
        sharding=_diagonal_sharding,
        **DERIVATIVES["diagonal"],
    ),
)


def _convert_sharding(ins, outs, *, new_dtype, weak_type=False) -> Factors:
    """A pending sum passes a conversion between inexact dtypes that does not narrow the
    range: a partial may overflow a narrower one where the sum would not."""
    source, target = ins[0].dtype, outs[0].dtype
    inexact = source.kind in "fc" and target.kind in "fc"
    linear = "one" if inexact and np.finfo(target).max >= np.finfo(source).max else None
    return broadcast_factors([ins[0].shape], outs[0].shape, linear)


convert_element_type_p = Primitive(
    "convert_element_type",
    Rules(
        shape=_convert_shape,
        impl=_convert_impl,
        sharding=_convert_sharding,
        **DERIVATIVES["convert_element_type"],
    ),
)
