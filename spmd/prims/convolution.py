"""The convolution primitive, ``conv_general_dilated``, in the manner of
jax.lax.conv_general_dilated: behind spmd.lax's convolutions and spmd.numpy's convolve and
correlate.

Its operands are ``lhs`` (batch, feature and spatial dimensions, in any order) and ``rhs``
(the kernel: output feature, input feature and spatial dimensions); ``dimension_numbers``
(a ``ConvDimensionNumbers``) gives each operand's and the result's dimensions in the order
(batch or output feature, feature or input feature, spatial...). In that order, with the
lhs dilated (``lhs_dilation - 1`` zeros between elements) and padded (``padding``, a
negative amount crops), and the kernel's taps ``rhs_dilation`` apart::

    out[n, o, s] = sum over c, k of lhs[n, c, s * window_strides + k * rhs_dilation] * rhs[o, c, k]

a correlation (the kernel is not flipped). With ``feature_group_count`` G the lhs features
and the kernel's output features split into G groups, group-major, and group g of the result
reads group g of the features only; with ``batch_group_count`` B it is the lhs batch that
splits into B groups (group-major), group g of the output features reading batch group g.
``preferred_element_type`` is the result's dtype (the operands share one).

Its shapes and checks are in convolution_shapes.py; its implementation, one matrix product
per device that either gathers the lhs's windows or scatters its products with every tap,
in convolution_impl.py and convolution_scatter.py (axis labels in convolution_labels.py);
its derivatives and batching in convolution_derivatives.py. Sharded, the batch and the
features pass through (a contraction over split input features leaves a pending sum, as a
matmul's does); spatial dimensions are gathered, since each output position reads a window
reaching into its neighbours' blocks (there is no halo exchange).
"""

from __future__ import annotations

from spmd.core.primitive import Primitive, Rules
from spmd.prims.convolution_derivatives import conv_batch, conv_jvp, conv_transpose
from spmd.prims.convolution_impl import conv_impl
from spmd.prims.convolution_shapes import ConvDimensionNumbers, conv_shape
from spmd.sharding.rules import Factors

# --- sharding --------------------------------------------------------------------------------


def conv_sharding(ins, outs, *, dimension_numbers, feature_group_count, batch_group_count,
                  **_) -> Factors:  # fmt: skip
    """The batch (``n``), the input features (``c``, summed: split, they leave a pending
    sum) and the output features (``o``) are factors; with groups, the group (``grp``) is the
    major factor of the grouped dimensions, so splitting it evenly keeps whole groups on a
    device. Spatial dimensions are blocked: an operand split there is gathered."""
    (lhs, rhs), (out,) = ins, outs
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    sizes: dict[str, int] = {}
    grouped = max(feature_group_count, batch_group_count)

    def dim(*factors: tuple[str, int]) -> tuple[str, ...]:
        for name, size in factors:
            sizes[name] = size
        if len(factors) == 1 and factors[0][1] == 1:
            return ()  # a size-1 dimension takes no factor, as parse_factors has it
        return tuple(name for name, _ in factors)

    n, c = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    o, i = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    batch = ("n", n // batch_group_count)
    lhs_batch = dim(("grp", grouped), batch) if batch_group_count > 1 else dim(batch)
    lhs_features = dim(("grp", grouped), ("c", i)) if feature_group_count > 1 else dim(("c", c))
    out_features = (("grp", grouped), ("o", o // grouped)) if grouped > 1 else (("o", o),)
    operands = [[()] * lhs.ndim, [()] * rhs.ndim]
    result = [()] * out.ndim
    operands[0][lhs_spec[0]], operands[0][lhs_spec[1]] = lhs_batch, lhs_features
    operands[1][rhs_spec[0]], operands[1][rhs_spec[1]] = dim(*out_features), dim(("c", i))
    result[out_spec[0]], result[out_spec[1]] = dim(batch), dim(*out_features)
    blocked = []
    for s, (ld, rd, od) in enumerate(zip(lhs_spec[2:], rhs_spec[2:], out_spec[2:], strict=True)):
        for tag, side, d, shape in (("in", operands[0], ld, lhs.shape),
                                    ("window", operands[1], rd, rhs.shape),
                                    ("out", result, od, out.shape)):  # fmt: skip
            side[d] = dim((f"{tag}{s}", shape[d]))
            blocked.append(f"{tag}{s}")
    summed = "or" if out.dtype.kind == "b" else "sum"
    reduced = {"c": summed} | {f"window{s}": summed for s in range(lhs.ndim - 2)}
    return Factors(
        (tuple(operands[0]), tuple(operands[1])),
        (tuple(result),),
        sizes,
        reduced,
        frozenset(blocked),
        None if summed == "or" else "one",
        dict.fromkeys(
            blocked,
            "a convolution's spatial dimension stays whole (its windows reach across block edges)",
        ),
    )


def conv_block_params(params, in_shapes, out_shapes, in_dtypes, out_bounds) -> dict:
    """A device's group counts: its blocks hold whole groups (the group factor splits
    evenly), ``lhs features / kernel input features`` of them (feature groups) or ``lhs batch
    / result batch`` (batch groups); blocks without elements keep the counts (their result
    is empty or zeros either way)."""
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    (lhs, rhs), (out,) = in_shapes, out_shapes
    local = dict(params)
    if params["feature_group_count"] > 1 and rhs[rhs_spec[1]]:
        local["feature_group_count"] = lhs[lhs_spec[1]] // rhs[rhs_spec[1]]
    if params["batch_group_count"] > 1 and out[out_spec[0]]:
        local["batch_group_count"] = lhs[lhs_spec[0]] // out[out_spec[0]]
    return local


__all__ = ["ConvDimensionNumbers", "conv_general_dilated_p"]

conv_general_dilated_p = Primitive(
    "conv_general_dilated",
    Rules(
        shape=conv_shape,
        impl=conv_impl,
        sharding=conv_sharding,
        local_params=conv_block_params,
        calls_blas=True,
        jvp=conv_jvp,
        transpose=conv_transpose,
        batch=conv_batch,
    ),
)
