"""The one contraction primitive, ``einsum`` over explicit subscripts, behind dot, matmul,
tensordot, outer and einsum.

Its static parameter is a canonical subscripts string with one or two operands and an
explicit output, such as ``"abc,acd->abd"`` (a batched matmul). Every label has one size
(no broadcasting: the wrappers in spmd/numpy/linalg.py turn broadcast size-1 dimensions
into labels of their own that are summed away). A label missing from the output is
summed over; a label repeated inside one operand takes its diagonal.
"""

from __future__ import annotations

import math

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.errors import ShapeError, SpmdTypeError, aval_str
from spmd.sharding.rules import Factors, parse_factors

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def parse(subscripts: str) -> tuple[list[str], str]:
    """``"ab,bc->ac"`` → ``(["ab", "bc"], "ac")``."""
    inputs, _, output = subscripts.partition("->")
    return inputs.split(","), output


def _label_sizes(operands: list[str], avals: tuple[ShapedArray, ...]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    seen: dict[str, tuple[int, int]] = {}
    for k, (labels, aval) in enumerate(zip(operands, avals, strict=True)):
        if len(labels) != aval.ndim:
            raise ShapeError(
                f"spmd.numpy.einsum: operand {k} is {aval} ({aval.ndim} dimensions) but its "
                f"subscripts {labels!r} name {len(labels)}; give one label per dimension."
            )
        for axis, (label, size) in enumerate(zip(labels, aval.shape, strict=True)):
            if label in sizes and sizes[label] != size:
                first_operand, first_axis = seen[label]
                raise ShapeError(
                    f"spmd.numpy.einsum: label {label!r} has size {sizes[label]} in operand "
                    f"{first_operand} (axis {first_axis}) but size {size} in operand {k} "
                    f"{aval} (axis {axis}); contracted and batch dimensions must agree."
                )
            sizes.setdefault(label, size)
            seen.setdefault(label, (k, axis))
    return sizes


def _einsum_shape(*avals: ShapedArray, subscripts: str) -> ShapedArray:
    operands, output = parse(subscripts)
    if not 1 <= len(avals) <= 2 or len(operands) != len(avals):
        raise SpmdTypeError(
            f"spmd.numpy.einsum: the einsum primitive takes one or two operands matching its "
            f"subscripts {subscripts!r}, got {len(avals)}."
        )
    sizes = _label_sizes(operands, avals)
    if len(set(output)) != len(output) or not set(output) <= set(sizes):
        raise ShapeError(
            f"spmd.numpy.einsum: output subscripts {output!r} must name distinct labels that "
            f"appear in an operand ({subscripts!r})."
        )
    for aval in avals:
        if aval.dtype.kind not in "biufc":
            raise SpmdTypeError(f"spmd.numpy.einsum does not support {aval_str((), aval.dtype)}")
    dtype = np.result_type(*(a.dtype for a in avals))
    return ShapedArray(tuple(sizes[label] for label in output), dtype)


def _reduce_operand(xp, x, labels: str, keep: str):
    """Take diagonals and sum away the labels of ``x`` that nothing else needs."""
    kept = "".join(dict.fromkeys(label for label in labels if label in keep))
    if kept == labels:
        return x, labels
    return xp.einsum(f"{labels}->{kept}", x), kept


def _einsum_impl(xp, *arrays, subscripts: str):
    operands, output = parse(subscripts)
    arrays = tuple(xp.asarray(a) for a in arrays)
    if len(arrays) == 1:
        return xp.einsum(subscripts, arrays[0])
    (x, y), (lx, ly) = arrays, operands
    x, lx = _reduce_operand(xp, x, lx, ly + output)
    y, ly = _reduce_operand(xp, y, ly, lx + output)
    batch = [c for c in lx if c in ly and c in output]
    contracted = [c for c in lx if c in ly and c not in output]
    free_x = [c for c in lx if c not in ly]
    free_y = [c for c in ly if c not in lx]
    size = dict(zip(lx, x.shape, strict=True)) | dict(zip(ly, y.shape, strict=True))

    def grouped(a, labels: str, groups: list[list[str]]):
        order = [labels.index(c) for group in groups for c in group]
        shape = [math.prod(size[c] for c in group) for group in groups]
        return xp.reshape(xp.transpose(a, order), shape)

    product = xp.matmul(
        grouped(x, lx, [batch, free_x, contracted]), grouped(y, ly, [batch, contracted, free_y])
    )
    labels = batch + free_x + free_y
    product = xp.reshape(product, [size[c] for c in labels])
    return xp.transpose(product, [labels.index(c) for c in output])


def einsum_factors(*, subscripts: str) -> tuple[str, tuple[str, ...]]:
    """The sharding factors: ``subscripts="abc,acd->abd"`` → ``("a b c, a c d -> a b d",
    ("c",))``, the factor string and the factors summed over (a sharded one leaves a
    pending sum)."""
    operands, output = parse(subscripts)
    spec = ", ".join(" ".join(labels) for labels in operands) + " -> " + " ".join(output)
    summed = tuple(dict.fromkeys(c for labels in operands for c in labels if c not in output))
    return spec, summed


def einsum_sharding(ins, outs, *, subscripts: str) -> Factors:
    """Factors are the labels; contracted ones leave a pending sum where they are split (on
    booleans a pending ``or``, which no other equation may carry on: it is not linear)."""
    spec, _ = einsum_factors(subscripts=subscripts)
    if outs[0].dtype.kind == "b":
        return parse_factors(spec, [a.shape for a in ins], reduce="or")
    return parse_factors(spec, [a.shape for a in ins], reduce="sum", linear="one")


# Output dimensions follow ``output``; labels absent from it are contracted (summed).
einsum_p = Primitive(
    "einsum", Rules(shape=_einsum_shape, impl=_einsum_impl, sharding=einsum_sharding)
)
