"""The one contraction primitive, ``einsum`` over explicit subscripts, behind dot, matmul,
tensordot, outer and einsum.

Its static parameter is a canonical subscripts string with one or two operands and an
explicit output, such as ``"abc,acd->abd"`` (a batched matmul). Every label has one size
(no broadcasting: the wrappers in spmd/numpy/linalg.py turn broadcast size-1 dimensions
into labels of their own that are summed away). A label missing from the output is
summed over; a label repeated inside one operand takes its diagonal.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from spmd.core.ad import UndefinedPrimal
from spmd.core.aval import ShapedArray
from spmd.core.buffer_pool import POOL
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, aval_str
from spmd.prims import namespace
from spmd.prims.derivatives import bind, convert
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


@dataclass(frozen=True)
class _Plan:
    """How to contract two operands with one matmul: each operand's diagonal/sum subscripts
    (None: none), its transpose and its ([batch,] rows, columns) shape (None: as it is);
    the product's shape (None: as matmul gives it) and the transpose that gives the output
    order (None: the identity)."""

    reduce_x: str | None
    reduce_y: str | None
    order_x: tuple[int, ...] | None
    order_y: tuple[int, ...] | None
    grouped_x: tuple[int, ...] | None
    grouped_y: tuple[int, ...] | None
    matmul: tuple[int, ...]
    product: tuple[int, ...] | None
    order_out: tuple[int, ...] | None


def _kept(labels: str, keep: str) -> str:
    return "".join(dict.fromkeys(label for label in labels if label in keep))


@functools.lru_cache(maxsize=1024)
def _plan(subscripts: str, shape_x: tuple[int, ...], shape_y: tuple[int, ...]) -> _Plan:
    (lx, ly), output = parse(subscripts)
    size = dict(zip(lx, shape_x, strict=True)) | dict(zip(ly, shape_y, strict=True))
    kx, ky = _kept(lx, ly + output), _kept(ly, lx + output)
    batch = [c for c in kx if c in ky and c in output]
    contracted = [c for c in kx if c in ky and c not in output]
    free_x = [c for c in kx if c not in ky]
    free_y = [c for c in ky if c not in kx]

    def order(labels: str, groups: list[list[str]]):
        perm = tuple(labels.index(c) for group in groups for c in group)
        return None if perm == tuple(range(len(perm))) else perm

    def matmul_shape(groups: list[list[str]]) -> tuple[int, ...]:
        """An operand or the product as matmul has it: batch (where there is one), rows,
        columns."""
        return tuple(
            math.prod(size[c] for c in group) for group in groups if group is not batch or batch
        )

    def grouped(groups: list[list[str]]) -> tuple[int, ...] | None:
        shape = matmul_shape(groups)
        return None if shape == tuple(size[c] for group in groups for c in group) else shape

    labels = batch + free_x + free_y
    out_order = tuple(labels.index(c) for c in output)
    product = tuple(size[c] for c in labels)
    matmul = matmul_shape([batch, free_x, free_y])
    return _Plan(
        reduce_x=None if kx == lx else f"{lx}->{kx}",
        reduce_y=None if ky == ly else f"{ly}->{ky}",
        order_x=order(kx, [batch, free_x, contracted]),
        order_y=order(ky, [batch, contracted, free_y]),
        grouped_x=grouped([batch, free_x, contracted]),
        grouped_y=grouped([batch, contracted, free_y]),
        matmul=matmul,
        product=None if matmul == product else product,
        order_out=None if out_order == tuple(range(len(out_order))) else out_order,
    )


def _einsum_impl(xp, *arrays, subscripts: str):
    # NumPy casts every operand to the result dtype before it multiplies and sums: a bool
    # operand summed on its own would otherwise be reduced with ``or`` (True + True is True).
    numpy = xp is np
    if numpy:
        arrays = tuple(np.asarray(a) for a in arrays)
        dtype = np.result_type(*(a.dtype for a in arrays))
        arrays = tuple(a.astype(dtype, copy=False) for a in arrays)
    else:
        dtype = np.result_type(*(namespace.numpy_dtype(xp, a) for a in arrays))
        arrays = tuple(namespace.asarray(xp, a, dtype) for a in arrays)
    one = np.einsum if numpy else functools.partial(namespace.einsum_one, xp)
    if len(arrays) == 1:
        return one(subscripts, arrays[0])
    x, y = arrays
    plan = _plan(subscripts, tuple(x.shape), tuple(y.shape))
    if plan.reduce_x is not None:
        x = one(plan.reduce_x, x)
    if plan.reduce_y is not None:
        y = one(plan.reduce_y, y)
    transpose = np.transpose if numpy else xp.permute_dims
    if plan.order_x is not None:
        x = transpose(x, plan.order_x)
    if plan.order_y is not None:
        y = transpose(y, plan.order_y)
    if plan.grouped_x is not None:
        x = xp.reshape(x, plan.grouped_x)
    if plan.grouped_y is not None:
        y = xp.reshape(y, plan.grouped_y)
    if numpy:  # a large product in a pool block: no fresh pages to fault in
        product = np.matmul(x, y, out=POOL.empty(plan.matmul, dtype))
    else:
        product = namespace.matmul(xp, x, y)
    if plan.product is not None:
        product = xp.reshape(product, plan.product)
    return product if plan.order_out is None else transpose(product, plan.order_out)


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


# --- derivatives and batching ----------------------------------------------------------------


def _einsum_jvp(primals, out, tangents, *, subscripts: str):
    """The product rule: one einsum per operand with a tangent, in its place."""
    terms = [
        einsum_p.bind(*primals[:k], t, *primals[k + 1 :], subscripts=subscripts)
        for k, t in enumerate(tangents)
        if t is not None
    ]
    return terms[0] if len(terms) == 1 else bind("add", *terms)


def _fresh(used: str) -> str:
    """A label that ``used`` does not hold."""
    return next(c for c in LETTERS if c not in used)


def _einsum_transpose(ct, *operands, subscripts: str):
    """The cotangent of the one linear operand: ``ct`` contracted with the other operand
    onto that operand's labels; labels only it has (summed inside it) are broadcast back, and
    a label it repeats (a diagonal) is spread onto the diagonal, zero elsewhere."""
    inputs, output = parse(subscripts)
    k = next(i for i, x in enumerate(operands) if isinstance(x, UndefinedPrimal))
    aval, labels = operands[k].aval, inputs[k]
    others = "".join(inputs[:k] + inputs[k + 1 :])
    reached = _kept(labels, output + others)  # the labels the cotangent carries
    if len(operands) == 2:
        ct = einsum_p.bind(ct, operands[1 - k], subscripts=f"{output},{others}->{reached}")
    elif output != reached:
        ct = bind("transpose", ct, permutation=tuple(output.index(c) for c in reached))
    # Each repeat of a label gets a fresh one; identity tensors tie the repeats together.
    renamed, seen = "", set()
    for c in labels:
        renamed += c if c not in seen else _fresh(subscripts + renamed)
        seen.add(c)
    size = dict(zip(renamed, aval.shape, strict=True))
    if renamed != labels:
        ties = "".join(c + r for c, r in zip(labels, renamed, strict=True) if c != r)
        eye = functools.reduce(np.multiply.outer, [np.eye(size[c]) for c in ties[::2]])
        tied = reached + "".join(dict.fromkeys(c for c in ties[::2] if c not in reached))
        tied += ties[1::2]
        ct = einsum_p.bind(
            ct, eye.astype(aval_of(ct).dtype), subscripts=f"{reached},{ties}->{tied}"
        )
        reached = tied
    missing = "".join(c for c in renamed if c not in reached)
    if missing:
        shape = tuple(size[c] for c in missing + reached)
        ct = bind("broadcast_to", ct, shape=shape)
        reached = missing + reached
    if reached != renamed:
        ct = bind("transpose", ct, permutation=tuple(reached.index(c) for c in renamed))
    if aval_of(ct).dtype.kind == "c" and aval.dtype.kind != "c":
        ct = bind("real", ct)
    return [convert(ct, aval.dtype) if i == k else None for i in range(len(operands))]


def _einsum_batch(args, dims, *, subscripts: str):
    """A fresh label for the batch dimension, in each batched operand and first in the output."""
    inputs, output = parse(subscripts)
    b = _fresh(subscripts)
    inputs = [
        labels if d is None else labels[:d] + b + labels[d:]
        for labels, d in zip(inputs, dims, strict=True)
    ]
    return einsum_p.bind(*args, subscripts=f"{','.join(inputs)}->{b}{output}"), 0


# Output dimensions follow ``output``; labels absent from it are contracted (summed).
einsum_p = Primitive(
    "einsum",
    Rules(
        shape=_einsum_shape,
        impl=_einsum_impl,
        sharding=einsum_sharding,
        calls_blas=True,
        jvp=_einsum_jvp,
        transpose=_einsum_transpose,
        batch=_einsum_batch,
    ),
)
