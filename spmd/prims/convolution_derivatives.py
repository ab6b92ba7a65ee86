"""conv_general_dilated's jvp, transposes and batching: each a convolution again.

Ignoring the spatial dimensions a convolution is a matrix product, batch by input features
times input features by output features, and its transposes are a matmul's: the lhs
cotangent is the cotangent convolved with the kernel (features swapped, taps reversed), the
kernel's cotangent the lhs (batch and features swapped) convolved with the cotangent. The
spatial parameters trade places: the forward strides dilate the cotangent, and the padding
is what puts every tap back over the element it read. Feature groups move into the
kernel's input features for the lhs transpose and become batch groups for the kernel's (and
batch groups feature groups), as JAX derives them (jax/_src/lax/convolution.py).
"""

from __future__ import annotations

from spmd.core.ad import UndefinedPrimal, zeros
from spmd.core.aval import ShapedArray
from spmd.core.trace import aval_of
from spmd.prims.convolution_shapes import ConvDimensionNumbers, conv_shape, dilate_dim
from spmd.prims.derivatives import bind, convert
from spmd.prims.index_plan import Slice

CONV = "conv_general_dilated"


def conv_jvp(primals, out, tangents, **params):
    """Bilinear: the lhs tangent convolved with the kernel plus the lhs with its tangent."""
    (lhs, rhs), (t_lhs, t_rhs) = primals, tangents
    terms = []
    if t_lhs is not None:
        terms.append(bind(CONV, t_lhs, rhs, **params))
    if t_rhs is not None:
        terms.append(bind(CONV, lhs, t_rhs, **params))
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else bind("add", *terms)


def _swap(spec: tuple[int, ...]) -> tuple[int, ...]:
    """A spec with its first two entries exchanged (batch and features, say)."""
    return (spec[1], spec[0], *spec[2:])


def reshape_axis_into(src: int, dst: int, x):
    """``x`` with dimension ``src`` merged into ``dst`` (numbered without ``src``) as its
    major part."""
    shape = aval_of(x).shape
    order = [d for d in range(len(shape)) if d != src]
    order.insert(dst, src)
    if order != list(range(len(shape))):
        x = bind("transpose", x, permutation=tuple(order))
    merged = [shape[d] for d in range(len(shape)) if d != src]
    merged[dst] *= shape[src]
    return bind("reshape", x, new_sizes=tuple(merged))


def reshape_axis_out_of(src: int, major: int, x):
    """``x`` with dimension ``src`` split into (``major``, the rest)."""
    shape = list(aval_of(x).shape)
    shape[src : src + 1] = [major, shape[src] // major]
    return bind("reshape", x, new_sizes=tuple(shape))


def reverse(x, axes):
    """``x`` with ``axes`` in reverse order."""
    shape = aval_of(x).shape
    index = tuple(
        Slice.resolve(slice(None, None, -1 if d in axes else 1), n) for d, n in enumerate(shape)
    )
    return bind("getitem", x, index=index)


def _lhs_padding(g_lhs, window, strides, out, padding, lhs_dilation, rhs_dilation):
    """The padding of the cotangent (dilated by the strides) that lines each window back up
    with the lhs elements it read."""
    pads = []
    for size, w, s, n, (lo, _), ld, rd in zip(g_lhs, window, strides, out, padding,
                                              lhs_dilation, rhs_dilation, strict=True):  # fmt: skip
        before = dilate_dim(w, rd) - lo - 1
        after = dilate_dim(size, ld) + dilate_dim(w, rd) - 1 - dilate_dim(n, s) - before
        pads.append((before, after))
    return tuple(pads)


def _rhs_padding(g_lhs, window, strides, out, padding, lhs_dilation, rhs_dilation):
    """The padding of the lhs for the kernel's cotangent: the forward's low padding, and a
    high one that leaves exactly the kernel's taps."""
    pads = []
    for size, w, s, n, (lo, _), ld, rd in zip(g_lhs, window, strides, out, padding,
                                              lhs_dilation, rhs_dilation, strict=True):  # fmt: skip
        pads.append((lo, dilate_dim(n, s) - dilate_dim(size, ld) + dilate_dim(w, rd) - lo - 1))
    return tuple(pads)


def _transpose_lhs(ct, rhs, lhs_aval: ShapedArray, params):
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    groups, batches = params["feature_group_count"], params["batch_group_count"]
    rhs_aval = aval_of(rhs)
    spatial = tuple(lhs_aval.shape[d] for d in lhs_spec[2:])
    window = tuple(rhs_aval.shape[d] for d in rhs_spec[2:])
    out = tuple(aval_of(ct).shape[d] for d in out_spec[2:])
    grouped = max(groups, batches)
    if grouped > 1:  # the groups leave the output features for the input features
        rhs = reshape_axis_out_of(rhs_spec[0], grouped, rhs)
        rhs = reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    padding = _lhs_padding(spatial, window, params["window_strides"], out, params["padding"],
                           params["lhs_dilation"], params["rhs_dilation"])  # fmt: skip
    kernel = convert(reverse(rhs, rhs_spec[2:]), aval_of(ct).dtype)
    cotangent = bind(
        CONV,
        ct,
        kernel,
        window_strides=tuple(params["lhs_dilation"]),
        padding=padding,
        lhs_dilation=tuple(params["window_strides"]),
        rhs_dilation=tuple(params["rhs_dilation"]),
        dimension_numbers=ConvDimensionNumbers(out_spec, _swap(rhs_spec), lhs_spec),
        feature_group_count=grouped,
        batch_group_count=1,
        preferred_element_type=None,
    )
    if batches > 1:  # the batch groups come back out of the features, into the batch
        cotangent = reshape_axis_out_of(lhs_spec[1], batches, cotangent)
        cotangent = reshape_axis_into(lhs_spec[1], lhs_spec[0], cotangent)
    return convert(cotangent, lhs_aval.dtype)


def _transpose_rhs(ct, lhs, rhs_aval: ShapedArray, params):
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    groups, batches = params["feature_group_count"], params["batch_group_count"]
    if aval_of(ct).size == 0:
        return zeros(rhs_aval)
    lhs_aval = aval_of(lhs)
    spatial = tuple(lhs_aval.shape[d] for d in lhs_spec[2:])
    window = tuple(rhs_aval.shape[d] for d in rhs_spec[2:])
    out = tuple(aval_of(ct).shape[d] for d in out_spec[2:])
    padding = _rhs_padding(spatial, window, params["window_strides"], out, params["padding"],
                           params["lhs_dilation"], params["rhs_dilation"])  # fmt: skip
    cotangent = bind(
        CONV,
        convert(lhs, aval_of(ct).dtype),
        ct,
        window_strides=tuple(params["rhs_dilation"]),
        padding=padding,
        lhs_dilation=tuple(params["lhs_dilation"]),
        rhs_dilation=tuple(params["window_strides"]),
        dimension_numbers=ConvDimensionNumbers(_swap(lhs_spec), _swap(out_spec), _swap(rhs_spec)),
        feature_group_count=batches,
        batch_group_count=groups,
        preferred_element_type=None,
    )
    return convert(cotangent, rhs_aval.dtype)


def conv_transpose(ct, lhs, rhs, **params):
    """The cotangent of whichever operand is linear (the other is known)."""
    if isinstance(lhs, UndefinedPrimal):
        return [_transpose_lhs(ct, rhs, lhs.aval, params), None]
    return [None, _transpose_rhs(ct, lhs, rhs.aval, params)]


# --- batching --------------------------------------------------------------------------------


def conv_batch(args, dims, **params):
    """The vmapped dimension folds into the convolution's own: into the lhs batch when only
    the lhs has it, into the kernel's output features when only the kernel has it, and into
    feature (or batch) groups when both do, one group per batch member."""
    (lhs, rhs), (lhs_dim, rhs_dim) = args, dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    groups, batches = params["feature_group_count"], params["batch_group_count"]
    size = aval_of(lhs).shape[lhs_dim] if lhs_dim is not None else aval_of(rhs).shape[rhs_dim]
    if size == 0:
        member = conv_shape(_member(lhs, lhs_dim), _member(rhs, rhs_dim), **params)
        return zeros(ShapedArray((0, *member.shape), member.dtype)), 0
    if lhs_dim is not None and rhs_dim is not None:
        if batches > 1:
            lhs = reshape_axis_into(lhs_dim, lhs_spec[0], lhs)
            params = params | {"batch_group_count": batches * size}
        else:
            lhs = reshape_axis_into(lhs_dim, lhs_spec[1], lhs)
            params = params | {"feature_group_count": groups * size}
        rhs = reshape_axis_into(rhs_dim, rhs_spec[0], rhs)
        out = bind(CONV, lhs, rhs, **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    if lhs_dim is not None:
        if batches == 1:
            out = bind(CONV, reshape_axis_into(lhs_dim, lhs_spec[0], lhs), rhs, **params)
            return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
        # Each batch group takes its members' batches: (groups, members x rest), group-major.
        lhs = reshape_axis_out_of(lhs_spec[0] + int(lhs_dim <= lhs_spec[0]), batches, lhs)
        lhs = reshape_axis_into(lhs_dim + int(lhs_spec[0] < lhs_dim), lhs_spec[0] + 1, lhs)
        lhs = reshape_axis_into(lhs_spec[0], lhs_spec[0], lhs)
        out = bind(CONV, lhs, rhs, **params)
        return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    if groups == 1 and batches == 1:
        out = bind(CONV, lhs, reshape_axis_into(rhs_dim, rhs_spec[0], rhs), **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    # Each group's output features take the members' kernels: (groups, members x rest).
    grouped = max(groups, batches)
    rhs = reshape_axis_out_of(rhs_spec[0] + int(rhs_dim <= rhs_spec[0]), grouped, rhs)
    rhs = reshape_axis_into(rhs_dim + int(rhs_spec[0] < rhs_dim), rhs_spec[0] + 1, rhs)
    rhs = reshape_axis_into(rhs_spec[0], rhs_spec[0], rhs)
    out = bind(CONV, lhs, rhs, **params)
    out = reshape_axis_out_of(out_spec[1], grouped, out)
    out = reshape_axis_out_of(out_spec[1] + 1, size, out)
    return reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


def _member(x, dim: int | None) -> ShapedArray:
    aval = aval_of(x)
    if dim is None:
        return aval
    return ShapedArray(aval.shape[:dim] + aval.shape[dim + 1 :], aval.dtype)
