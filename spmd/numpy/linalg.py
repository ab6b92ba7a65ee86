"""Contractions of spmd.numpy (dot, matmul, einsum, tensordot), all through one einsum
primitive so that the partitioner has a single contraction rule, and outer, a broadcast
multiply."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from spmd.core.aval import ShapedArray, host_array
from spmd.core.axes import normalize_axes
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, shape_str
from spmd.numpy.creation import zeros_like
from spmd.numpy.elementwise import conjugate, multiply  # type: ignore[attr-defined]
from spmd.numpy.linalg_compositions import (  # noqa: F401 (spmd.numpy.linalg's, not spmd.numpy's)
    cond,
    cross,
    diagonal,
    matrix_norm,
    matrix_power,
    tensorinv,
    tensorsolve,
    trace,
    vector_norm,
)
from spmd.numpy.linalg_decompositions import (  # noqa: F401 (spmd.numpy.linalg's, not spmd.numpy's)
    cholesky,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    inv,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from spmd.numpy.manipulation import matrix_transpose  # noqa: F401
from spmd.numpy.placement import takes_out_sharding
from spmd.numpy.products import vecdot  # noqa: F401
from spmd.numpy.shaping import astype, reshape
from spmd.prims.contraction import LETTERS, einsum_p

Labels = Sequence[Hashable]


def _operand(x: Any, argument: str) -> Any:
    """Python scalars and lists as NumPy arrays: NumPy's contractions treat them as strong."""
    if isinstance(x, (bool, int, float, complex, list, tuple)):
        return host_array(x, argument)
    return x


def _bind(operands: Sequence[Any], labels: Sequence[Labels], output: Labels, who: str):
    """Bind einsum_p with its labels renamed to letters in order of first appearance."""
    names: dict[Hashable, str] = {}
    for token in [t for group in labels for t in group] + list(output):
        if token not in names:
            if len(names) == len(LETTERS):
                raise ShapeError(
                    f"spmd.numpy.{who}: this contraction needs more than {len(LETTERS)} distinct "
                    f"dimensions; reshape the operands to fewer dimensions first."
                )
            names[token] = LETTERS[len(names)]
    spell = lambda group: "".join(names[t] for t in group)  # noqa: E731
    subscripts = ",".join(spell(group) for group in labels) + "->" + spell(output)
    return einsum_p.bind(*operands, subscripts=subscripts)


def _broadcast_batch(who: str, avals: Sequence[ShapedArray], batches: Sequence[tuple[int, ...]]):
    """Labels for right-aligned batch dimensions that broadcast as NumPy does: a size-1
    dimension facing a larger one gets a label of its own, summed away (a sum over one term)."""
    rank = max(len(b) for b in batches)
    labels: list[list[Hashable]] = [[] for _ in batches]
    output: list[Hashable] = []
    for p in range(rank):
        sizes = [b[p - rank + len(b)] if p >= rank - len(b) else None for b in batches]
        larger = {s for s in sizes if s is not None} - {1}
        target = larger.pop() if len(larger) == 1 else 1
        if larger:
            operands = ", ".join(f"x{k + 1} {a}" for k, a in enumerate(avals))
            raise ShapeError(
                f"spmd.numpy.{who}: batch dimensions {' and '.join(map(shape_str, batches))} "
                f"cannot be broadcast together ({operands}); each must match or be 1, counting "
                f"from the right."
            )
        for k, size in enumerate(sizes):
            if size is not None:
                labels[k].append(("batch", p) if size == target else ("one", k, p))
        output.append(("batch", p))
    return labels, output


@takes_out_sharding
def matmul(x1: Any, x2: Any):
    """``numpy.matmul`` (the ``@`` operator). Example: ``matmul(ones((2, 3)), ones((3, 4)))``."""
    x1, x2 = _operand(x1, "x1"), _operand(x2, "x2")
    a, b = aval_of(x1), aval_of(x2)
    for k, aval in enumerate((a, b)):
        if aval.ndim == 0:
            raise ShapeError(
                f"spmd.numpy.matmul: x{k + 1} is {aval}, a scalar; matmul needs at least one "
                f"dimension on each operand. Use spmd.numpy.multiply (or *) to scale by a scalar."
            )
    axis_b = max(b.ndim - 2, 0)
    if a.shape[-1] != b.shape[axis_b]:
        where_b = "its only axis" if b.ndim == 1 else "its second-to-last axis"
        raise ShapeError(
            f"spmd.numpy.matmul: shapes {shape_str(a.shape)} and {shape_str(b.shape)} do not "
            f"align: the contracted dimension is the last axis of x1 (axis {a.ndim - 1}, size "
            f"{a.shape[-1]}) and {where_b} of x2 (axis {axis_b}, size {b.shape[axis_b]}). "
            f"Transpose or reshape an operand so that these sizes match."
        )
    batches = [a.shape[:-2], b.shape[:-2]]
    (batch_a, batch_b), output = _broadcast_batch("matmul", (a, b), batches)
    core_a = ["i", "j"] if a.ndim >= 2 else ["j"]
    core_b = ["j", "k"] if b.ndim >= 2 else ["j"]
    output += (["i"] if a.ndim >= 2 else []) + (["k"] if b.ndim >= 2 else [])
    return _bind([x1, x2], [batch_a + core_a, batch_b + core_b], output, "matmul")


@takes_out_sharding
def dot(a: Any, b: Any):
    """``numpy.dot``: sum over the last axis of ``a`` and the second-to-last of ``b``.

    Example: ``dot(ones(3), ones(3))`` is 3.0.
    """
    a, b = _operand(a, "a"), _operand(b, "b")
    x, y = aval_of(a), aval_of(b)
    labels_a: list[Hashable] = [("a", i) for i in range(x.ndim)]
    labels_b: list[Hashable] = [("b", i) for i in range(y.ndim)]
    if x.ndim and y.ndim:
        axis_b = max(y.ndim - 2, 0)
        if x.shape[-1] != y.shape[axis_b]:
            raise ShapeError(
                f"spmd.numpy.dot: shapes {shape_str(x.shape)} and {shape_str(y.shape)} do not "
                f"align: the last axis of a (axis {x.ndim - 1}, size {x.shape[-1]}) is "
                f"contracted with axis {axis_b} of b (size {y.shape[axis_b]}); make these match."
            )
        labels_a[-1] = labels_b[axis_b] = "sum"
    output = [t for t in labels_a + labels_b if t != "sum"]
    return _bind([a, b], [labels_a, labels_b], output, "dot")


def vdot(a: Any, b: Any):
    """``numpy.vdot``: the dot product of the flattened arrays, the first conjugated.

    Example: ``vdot([1j, 2], [1j, 2])`` is 5.
    """
    a, b = _operand(a, "a"), _operand(b, "b")
    x, y = aval_of(a), aval_of(b)
    if x.size != y.size:
        raise ShapeError(
            f"spmd.numpy.vdot: a has {x.size} elements ({shape_str(x.shape)}) and b has "
            f"{y.size} ({shape_str(y.shape)}); vdot flattens both, so their sizes must match."
        )
    if x.dtype.kind == "c":
        a = conjugate(a)
    return dot(reshape(a, (x.size,)), reshape(b, (y.size,)))


@takes_out_sharding
def tensordot(a: Any, b: Any, axes: int | Sequence[Any] = 2):
    """``numpy.tensordot``: sum products over ``axes`` (an int N: last N of a, first N of b).

    Example: ``tensordot(ones((2, 3, 4)), ones((3, 4, 5)), axes=2)`` has shape (2, 5).
    """
    a, b = _operand(a, "a"), _operand(b, "b")
    x, y = aval_of(a), aval_of(b)
    if isinstance(axes, int):
        if not 0 <= axes <= min(x.ndim, y.ndim):
            raise ShapeError(
                f"spmd.numpy.tensordot: axes={axes} must be between 0 and the smaller rank of "
                f"a {x} and b {y}."
            )
        axes_a, axes_b = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    else:
        if len(axes) != 2:
            raise SpmdTypeError(
                "spmd.numpy.tensordot: axes must be an int or a pair (axes_a, axes_b)."
            )
        fn = "spmd.numpy.tensordot"
        axes_a = list(normalize_axes(axes[0], x.ndim, fn, f"a {x}", "axes[0]"))
        axes_b = list(normalize_axes(axes[1], y.ndim, fn, f"b {y}", "axes[1]"))
        if len(axes_a) != len(axes_b):
            raise ShapeError(
                f"spmd.numpy.tensordot: axes pair {len(axes_a)} axes of a with {len(axes_b)} "
                f"axes of b; give the same number of each."
            )
    labels_a: list[Hashable] = [("a", i) for i in range(x.ndim)]
    labels_b: list[Hashable] = [("b", i) for i in range(y.ndim)]
    for n, (i, j) in enumerate(zip(axes_a, axes_b, strict=True)):
        if x.shape[i] != y.shape[j]:
            raise ShapeError(
                f"spmd.numpy.tensordot: axis {i} of a (size {x.shape[i]}) is contracted with "
                f"axis {j} of b (size {y.shape[j]}), but the sizes differ; shapes "
                f"{shape_str(x.shape)} and {shape_str(y.shape)}."
            )
        labels_a[i] = labels_b[j] = ("sum", n)
    output = [t for t in labels_a + labels_b if t[0] != "sum"]
    return _bind([a, b], [labels_a, labels_b], output, "tensordot")


def outer(a: Any, b: Any):
    """``numpy.outer``: ``out[i, j] = a.ravel()[i] * b.ravel()[j]``. Example: ``outer(x, y)``.

    A product with nothing summed, so it multiplies elementwise as NumPy does (a contraction
    would add each product to zero and turn ``-0.0`` into ``0.0``).
    """
    a, b = _operand(a, "a"), _operand(b, "b")
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def _einsum_terms(subscripts: str, avals: Sequence[ShapedArray]):
    """Each operand's labels, with ``...`` expanded to right-aligned ("...", p) labels."""
    terms = subscripts.replace(" ", "").partition("->")[0].split(",")
    if len(terms) != len(avals):
        raise ShapeError(
            f"spmd.numpy.einsum: subscripts {subscripts!r} describe {len(terms)} operands but "
            f"{len(avals)} were given."
        )
    parsed = []
    for k, (term, aval) in enumerate(zip(terms, avals, strict=True)):
        before, ellipsis, after = term.partition("...")
        if any(c not in LETTERS for c in before + after):
            raise ShapeError(
                f"spmd.numpy.einsum: subscripts {term!r} of operand {k} may hold only letters "
                f"and one '...'."
            )
        extra = aval.ndim - len(before) - len(after)
        if extra < 0 or (extra and not ellipsis):
            raise ShapeError(
                f"spmd.numpy.einsum: operand {k} is {aval} ({aval.ndim} dimensions) but its "
                f"subscripts {term!r} name {len(before) + len(after)}; give one label per "
                f"dimension (or '...' for the rest)."
            )
        parsed.append((list(before), extra, list(after)))
    rank = max([extra for _, extra, _ in parsed], default=0)
    return [b + [("...", rank - e + p) for p in range(e)] + a for b, e, a in parsed], rank


def _einsum_broadcast(labels: list[list[Hashable]], avals: Sequence[ShapedArray]) -> None:
    """Rename size-1 occurrences of a label that is larger elsewhere (NumPy broadcasts them)."""
    sizes: dict[Hashable, set[int]] = {}
    for group, aval in zip(labels, avals, strict=True):
        for token, size in zip(group, aval.shape, strict=True):
            sizes.setdefault(token, set()).add(size)
    for token, found in sizes.items():
        if len(found - {1}) > 1:
            name = "..." if isinstance(token, tuple) else repr(token)
            raise ShapeError(
                f"spmd.numpy.einsum: label {name} stands for dimensions of sizes "
                f"{sorted(found)} in the operands "
                f"{', '.join(str(a) for a in avals)}; they must match (or be 1)."
            )
    for k, (group, aval) in enumerate(zip(labels, avals, strict=True)):
        for axis, (token, size) in enumerate(zip(group, aval.shape, strict=True)):
            if size == 1 and sizes[token] != {1}:
                group[axis] = ("one", k, axis)


def _einsum_output(subscripts: str, labels: list[list[Hashable]], rank: int) -> list[Hashable]:
    spec = subscripts.replace(" ", "")
    ellipsis = [("...", p) for p in range(rank)]
    if "->" not in spec:
        letters = [c for c in spec if c in LETTERS]
        return ellipsis + sorted(c for c in set(letters) if letters.count(c) == 1)
    before, has_ellipsis, after = spec.partition("->")[2].partition("...")
    output = list(before) + (ellipsis if has_ellipsis else []) + list(after)
    known = {t for group in labels for t in group}
    if len(set(output)) != len(output) or not set(output) <= known or (rank and not has_ellipsis):
        raise ShapeError(
            f"spmd.numpy.einsum: the output of {subscripts!r} must name distinct labels that "
            f"appear in the inputs, and must contain '...' if an input does."
        )
    return output


def _sums_nothing(labels: Sequence[Labels], avals: Sequence[ShapedArray], output: Labels) -> bool:
    """Whether a label summed over has size 0: NumPy's result is then 0, even where another
    operand (which the pairwise contraction would multiply by that empty sum) holds NaN."""
    return any(
        n == 0 and t not in output
        for group, aval in zip(labels, avals, strict=True)
        for t, n in zip(group, aval.shape, strict=True)
    )


@takes_out_sharding
def einsum(subscripts: str, *operands: Any, optimize: Any = False):
    """``numpy.einsum`` with explicit or implicit output, ``...`` and broadcasting.

    Example: ``einsum("bij,bjk->bik", x, y)`` is a batched matmul. ``optimize`` is accepted
    and ignored; three or more operands are contracted pairwise from the left.
    """
    if not isinstance(subscripts, str):
        raise SpmdTypeError(
            "spmd.numpy.einsum: pass the subscripts string first, as in einsum('ij,jk', a, b); "
            "the interleaved form einsum(a, [0, 1], b, [1, 2]) is not supported."
        )
    if not operands:
        raise SpmdTypeError("spmd.numpy.einsum: give at least one operand.")
    ops = [_operand(x, f"operand {k}") for k, x in enumerate(operands)]
    avals = [aval_of(x) for x in ops]
    labels, rank = _einsum_terms(subscripts, avals)
    _einsum_broadcast(labels, avals)
    output = _einsum_output(subscripts, labels, rank)
    if len(ops) == 1:
        return _bind(ops, labels, output, "einsum")
    if _sums_nothing(labels, avals, output):  # each element sums no products: 0, NaNs or not
        ops = [zeros_like(x) for x in ops]
    if len(ops) > 2:  # NumPy multiplies and sums every operand in their common dtype
        dtype = np.result_type(*(a.dtype for a in avals))
        ops = [x if a.dtype == dtype else astype(x, dtype) for x, a in zip(ops, avals, strict=True)]
    result, current = ops[0], labels[0]
    for k in range(1, len(ops)):
        needed = set(output).union(*map(set, labels[k + 1 :]))
        pair = current + labels[k]
        keep = output if k == len(ops) - 1 else [t for t in dict.fromkeys(pair) if t in needed]
        result = _bind([result, ops[k]], [current, labels[k]], keep, "einsum")
        current = keep
    return result


__all__ = ["dot", "einsum", "matmul", "outer", "tensordot"]
