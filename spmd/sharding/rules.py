"""Sharding rules as factors, and the solver that picks how one equation runs on a mesh.

A primitive's rule names a *factor* for every dimension of its operands and results
(``"i j, j k -> i k"``): dimensions that share a factor must be split over the same mesh
axes. A factor missing from the results is reduced, so splitting it leaves a *pending*
reduction (a partial value). A dimension may be several factors, major to minor (a reshape
merging (4, 8) into (32,)), and a factor may be *blocked* (never split: a cumsum axis).
The solver turns the operands' shardings into one assignment of mesh axes to factors,
preferring the one that moves fewer bytes, and says why.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from spmd.sharding.spec import PartitionSpec

Dims = tuple[tuple[str, ...], ...]  # mesh axes splitting each dimension, major to minor
Dim = tuple[str, ...]  # the factors of one dimension, major to minor; () for a size-1 one

REDUCE_OPS = ("sum", "prod", "max", "min", "and", "or")


@dataclass(frozen=True)
class ValueSharding:
    """How a value lies on the program's mesh: split ``dims``, plus a pending reduction.

    A value pending over axes ``pending`` holds, on each device, a partial result; the true
    value is the ``op`` (sum, max, ...) of the partials across those axes.
    """

    dims: Dims
    pending: tuple[str, ...] = ()
    op: str = "sum"

    @staticmethod
    def replicated(ndim: int) -> ValueSharding:
        return ValueSharding(((),) * ndim)

    @property
    def used_axes(self) -> frozenset[str]:
        return frozenset(a for axes in self.dims for a in axes) | frozenset(self.pending)

    def without_pending(self) -> ValueSharding:
        return ValueSharding(self.dims)

    def _entries(self) -> list:
        entries = [None if not axes else axes[0] if len(axes) == 1 else axes for axes in self.dims]
        while entries and entries[-1] is None:
            entries.pop()
        return entries

    @property
    def spec(self) -> PartitionSpec:
        """The split as a PartitionSpec (trailing unsplit dimensions left out)."""
        return PartitionSpec(*self._entries())

    def spec_text(self) -> str:
        """``P('x', None)``-style text; inside the compiler an operand may repeat an axis (the
        diagonal of ``einsum('ii->i')`` splits both dimensions alike), which no spec allows."""
        return f"P({', '.join(map(repr, self._entries()))})"

    def __str__(self) -> str:
        text = self.spec_text()
        if self.pending:
            text += f" pending {self.op} over {', '.join(map(repr, self.pending))}"
        return text


@dataclass(frozen=True)
class Factors:
    """Factors of each operand and result dimension, their sizes, and how reduced ones combine.

    ``reduced`` maps each factor absent from every result to the op that combines partial
    results over it (``"sum"``, ``"max"``, ...) or None when partials cannot be combined (a
    mean, an argmax): such factors are blocked. ``linear`` names the operands a pending sum
    may pass through unresolved: ``"one"`` (at most one operand pending, as in a product),
    ``"first"`` (only the first, as in a quotient) or ``"all"`` (every operand pending over
    the same axes, as in a sum). ``notes`` says, for the explanation, why a blocked factor
    stays whole (a convolution's window reaches across block edges).
    """

    operands: tuple[tuple[Dim, ...], ...]
    results: tuple[tuple[Dim, ...], ...]
    sizes: dict[str, int]
    reduced: dict[str, str | None] = field(default_factory=dict)
    blocked: frozenset[str] = frozenset()
    linear: str | None = None
    notes: dict[str, str] = field(default_factory=dict)  # why a blocked factor stays whole

    def splittable(self, factor: str) -> bool:
        return factor not in self.blocked and self.reduced.get(factor, "sum") is not None


def parse_factors(
    text: str,
    shapes: Sequence[tuple[int, ...]],
    reduce: str | None = "sum",
    blocked: Sequence[str] = (),
    linear: str | None = None,
) -> Factors:
    """``"i j, j k -> i k"`` for operands of ``shapes``; ``1`` marks a size-1 dimension."""
    left, right = text.split("->")

    def dims(part: str) -> tuple[Dim, ...]:
        return tuple(() if t == "1" else (t,) for t in part.split())

    operands = tuple(dims(p) for p in left.split(","))
    results = tuple(dims(p) for p in right.split(",")) if right.strip() else ((),)
    sizes: dict[str, int] = {}
    for operand, shape in zip(operands, shapes, strict=True):
        for dim, size in zip(operand, shape, strict=True):
            if dim:
                sizes[dim[0]] = size
    in_results = {f for r in results for d in r for f in d}
    reduced = {f: reduce for f in sizes if f not in in_results}
    return Factors(operands, results, sizes, reduced, frozenset(blocked), linear)


def broadcast_factors(
    in_shapes: Sequence[tuple[int, ...]], out_shape: tuple[int, ...], linear: str | None = None
) -> Factors:
    """Elementwise with NumPy broadcasting: operand dimensions line up from the right, and a
    size-1 dimension broadcast against a larger one has no factor."""
    names = [f"d{i}" for i in range(len(out_shape))]
    operands = []
    for shape in in_shapes:
        offset = len(out_shape) - len(shape)
        operands.append(
            tuple(
                (names[offset + i],) if size == out_shape[offset + i] else ()
                for i, size in enumerate(shape)
            )
        )
    sizes = dict(zip(names, out_shape, strict=True))
    return Factors(tuple(operands), (tuple((n,) for n in names),), sizes, linear=linear)


def reshape_factors(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> Factors:
    """Factors of a reshape: runs of dimensions with equal products share factors, refined so
    that every dimension is a run of them ((4, 6) → (8, 3) is f4 (f2 f3) → (f4 f2) f3); runs
    with no common refinement ((6, 4) → (4, 6)) are blocked, and so is an empty array."""
    shapes = (in_shape, out_shape)
    sizes: dict[str, int] = {}
    blocked: set[str] = set()
    dims: tuple[list[Dim], list[Dim]] = ([()] * len(in_shape), [()] * len(out_shape))
    counter = itertools.count()

    def new(size: int, block: bool = False) -> str:
        name = f"r{next(counter)}"
        sizes[name] = size
        if block:
            blocked.add(name)
        return name

    def factors() -> Factors:
        return Factors((tuple(dims[0]),), (tuple(dims[1]),), sizes, {}, frozenset(blocked), "one")

    if 0 in in_shape or 0 in out_shape:
        for side in (0, 1):
            dims[side][:] = [(new(n, True),) if n != 1 else () for n in shapes[side]]
        return factors()
    big = [[d for d, n in enumerate(shape) if n != 1] for shape in shapes]
    cursor = [0, 0]
    while cursor[0] < len(big[0]):
        group: list[list[int]] = [[], []]
        products = [1, 1]
        for side in (0, 1):
            group[side].append(big[side][cursor[side]])
            products[side] = shapes[side][group[side][0]]
            cursor[side] += 1
        while products[0] != products[1]:
            side = 0 if products[0] < products[1] else 1
            index = big[side][cursor[side]]
            cursor[side] += 1
            group[side].append(index)
            products[side] *= shapes[side][index]
        runs = [
            list(itertools.accumulate((shapes[s][d] for d in group[s]), operator.mul))
            for s in (0, 1)
        ]
        bounds = sorted(set(runs[0]) | set(runs[1]))
        if all(b % a == 0 for a, b in itertools.pairwise(bounds)):
            names = [new(b // a) for a, b in zip([1, *bounds], bounds, strict=False)]
            for side in (0, 1):
                start = 0
                for index, bound in zip(group[side], runs[side], strict=True):
                    stop = bounds.index(bound) + 1
                    dims[side][index] = tuple(names[start:stop])
                    start = stop
        else:
            for side in (0, 1):
                for index in group[side]:
                    dims[side][index] = (new(shapes[side][index], True),)
    return factors()


# --- the solver ----------------------------------------------------------------------------


Assignment = dict[str, tuple[str, ...]]  # factor → mesh axes splitting it, major to minor


def split_dim(axes: Sequence[str], dim: Dim, factors: Factors, axis_sizes: dict) -> Assignment:
    """The assignment a dimension split over ``axes`` implies for its factors, as far as it
    holds without moving data: a plain dimension takes every axis (uneven or not); in a
    dimension of several factors, each but the last split one must be split fully and
    evenly."""
    if len(dim) == 1:
        return {dim[0]: tuple(axes)}
    out: Assignment = {}
    axes = list(axes)
    for factor in dim:
        size, taken, parts = factors.sizes[factor], [], 1
        while axes and size % (parts * axis_sizes[axes[0]]) == 0:
            parts *= axis_sizes[axes[0]]
            taken.append(axes.pop(0))
        if taken:
            out[factor] = tuple(taken)
        if not axes or parts != size:
            break
    return out


def project(dim: Dim, assignment: Assignment) -> tuple[str, ...]:
    """The mesh axes splitting a dimension made of ``dim``'s factors, major to minor."""
    return tuple(a for factor in dim for a in assignment.get(factor, ()))


def _valid(dim: Dim, assignment: Assignment, factors: Factors, axis_sizes: dict) -> int:
    """How many leading factors of ``dim`` may keep their axes (all of them when valid)."""
    if len(dim) <= 1:
        return len(dim)
    for k, factor in enumerate(dim):
        parts = math.prod(axis_sizes[a] for a in assignment.get(factor, ()))
        if factors.sizes[factor] % parts:
            return k  # an uneven split inside a merged dimension: blocks would not line up
        if parts != factors.sizes[factor] and any(assignment.get(f) for f in dim[k + 1 :]):
            return k + 1  # a minor factor may be split only under fully split major ones
    return len(dim)


@dataclass(frozen=True)
class Decision:
    """How one equation runs: the sharding each operand must have, and its results'."""

    operands: tuple[ValueSharding | None, ...]
    results: tuple[ValueSharding, ...]
    reason: str


def solve(
    factors: Factors,
    operands: Sequence[ValueSharding | None],
    nbytes: Sequence[int],
    axis_sizes: dict[str, int],
    cost: Callable[[int, ValueSharding, ValueSharding], int],
    reduce_cost: Callable[[int, ValueSharding], int] | None = None,
) -> Decision:
    """Pick the assignment of mesh axes to factors that moves the fewest bytes.

    ``operands`` holds each operand's sharding (None for one that lies on the host and can be
    sliced any way for free); ``cost(k, have, want)`` is the bytes resharding operand ``k``
    moves; ``reduce_cost(j, result)`` the bytes that combining result ``j``'s pending sum
    will move later (a pending result is not free: it must still be reduced). Candidates seed
    the assignment from each operand in turn, then fold in the rest.
    """
    pending_ok = _pending_passes(factors, operands)
    found = _best(factors, operands, nbytes, axis_sizes, cost, pending_ok, reduce_cost)
    if found is None and pending_ok:  # the partial values would have to move: combine them
        found = _best(factors, operands, nbytes, axis_sizes, cost, False, reduce_cost)
    if found is None:
        return _decide(factors, {}, operands, False, axis_sizes, "no operand is on devices")
    moved, lead, count, decision = found
    reason = f"follows operand {lead} ({operands[lead]})"
    if moved:
        choices = f", the least of {count} layouts tried" if count > 1 else ""
        reason += f"; bringing its operands there moves {moved} bytes{choices}"
    reason += "".join(f"; {why}" for why in _kept_whole(factors, operands, decision.operands))
    return Decision(decision.operands, decision.results, reason)


def _kept_whole(factors: Factors, have: Sequence, want: Sequence) -> list[str]:
    """Why each operand dimension that arrives split but cannot stay split is gathered."""
    found = []
    for k, (now, wanted) in enumerate(zip(have, want, strict=True)):
        if now is None or wanted is None:
            continue
        for d, (axes, dim) in enumerate(zip(now.dims, factors.operands[k], strict=True)):
            whole = [f for f in dim if not factors.splittable(f)]
            if axes and whole and axes != wanted.dims[d]:
                note = next((factors.notes[f] for f in whole if f in factors.notes), None)
                because = note or "this operation needs that dimension whole on each device"
                found.append(f"dimension {d} of operand {k} is gathered: {because}")
    return found


def _best(factors, operands, nbytes, axis_sizes, cost, pending_ok: bool, reduce_cost=None):
    """The cheapest decision, as (bytes moved, leading operand, choices, decision); None when
    no operand is on devices or, with ``pending_ok``, when every choice would move a partial
    value: partial values may only stay where they are (a collective that copies blocks
    between devices cannot tell the partials of one reduction group from another's)."""
    proposals = []
    for k, sharding in enumerate(operands):
        if sharding is None:
            continue
        proposal: Assignment = {}
        for axes, dim in zip(sharding.dims, factors.operands[k], strict=True):
            if axes and dim:
                for factor, taken in split_dim(axes, dim, factors, axis_sizes).items():
                    if factors.splittable(factor):
                        proposal[factor] = taken
        wish = _scatter_wish(factors, k, sharding, axis_sizes) if not pending_ok else {}
        proposals.append((k, proposal, wish))
    if not proposals:
        return None
    best = None
    for order in _orders(proposals, nbytes):
        assignment = _merge([proposals[i] for i in order], factors, axis_sizes, operands)
        decision = _decide(factors, assignment, operands, pending_ok, axis_sizes, "")
        pairs = list(zip(operands, decision.operands, strict=True))
        if pending_ok and any(have is not None and have.pending and want != have
                              for have, want in pairs):  # fmt: skip
            continue
        moved = sum(cost(k, have, want) for k, (have, want) in enumerate(pairs)
                    if have is not None and want is not None)  # fmt: skip
        if reduce_cost is not None:  # a pending result passed on by its operand costs nothing new
            moved += sum(reduce_cost(j, r) for j, r in enumerate(decision.results)
                         if r.pending and not any(o is not None and o.pending
                                                  for o in operands))  # fmt: skip
        if best is None or moved < best[0]:
            best = (moved, proposals[order[0]][0], len(proposals), decision)
    return best


def _orders(proposals: list, nbytes: Sequence[int]) -> list[list[int]]:
    """Each proposal first in turn, the rest largest operand first."""
    by_size = sorted(range(len(proposals)), key=lambda i: -nbytes[proposals[i][0]])
    return [[first, *(i for i in by_size if i != first)] for first in by_size]


def _merge(proposals: list, factors: Factors, axis_sizes: dict, operands) -> Assignment:
    assignment: Assignment = {}
    used: set[str] = set()
    for _, proposal, _ in proposals:
        for factor, axes in proposal.items():
            if factor not in assignment and not used & set(axes):
                assignment[factor] = axes
                used |= set(axes)
    for _, _, wish in proposals:  # pending sums to scatter where a free factor can take them
        for factor, axes in wish.items():
            if factor not in assignment and not used & set(axes):
                assignment[factor] = axes
                used |= set(axes)
    return make_valid(assignment, factors, axis_sizes)


def make_valid(assignment: Assignment, factors: Factors, axis_sizes: dict) -> Assignment:
    """Drop axes from factors of multi-factor dimensions whose blocks would not line up."""
    changed = True
    while changed:
        changed = False
        for dims in (*factors.operands, *factors.results):
            for dim in dims:
                keep = _valid(dim, assignment, factors, axis_sizes)
                for factor in dim[keep:]:
                    if factor in assignment:
                        del assignment[factor]
                        changed = True
    return assignment


def _scatter_wish(factors: Factors, k: int, sharding: ValueSharding, axis_sizes) -> Assignment:
    """Where operand ``k``'s pending axes could go: its largest free single-factor dimension,
    so that the reduction becomes a reduce-scatter and what follows stays split."""
    if not sharding.pending:
        return {}
    taken = {f for axes, dim in zip(sharding.dims, factors.operands[k], strict=True) if axes
             for f in dim}  # fmt: skip
    candidates = [
        dim[0]
        for axes, dim in zip(sharding.dims, factors.operands[k], strict=True)
        if len(dim) == 1 and not axes and dim[0] not in taken and factors.splittable(dim[0])
        and dim[0] not in factors.reduced
    ]  # fmt: skip
    parts = math.prod(axis_sizes[a] for a in sharding.pending)
    candidates = [f for f in candidates if factors.sizes[f] >= parts]
    if not candidates:
        return {}
    best = max(candidates, key=lambda f: factors.sizes[f])
    return {best: tuple(sharding.pending)}


def _pending_passes(factors: Factors, operands: Sequence[ValueSharding | None]) -> bool:
    """Whether pending sums on the operands may flow through this equation unresolved."""
    pending = [s for s in operands if s is not None and s.pending]
    if not pending or factors.linear is None:
        return False
    if any(s.op != "sum" for s in pending) or set(factors.reduced.values()) - {"sum"}:
        return False
    if factors.linear == "one":
        return len(pending) == 1
    if factors.linear == "first":
        return len(pending) == 1 and operands[0] is pending[0]
    return len(pending) == len(operands) and len({s.pending for s in pending}) == 1


def _decide(factors, assignment, operands, pending_ok, axis_sizes, reason) -> Decision:
    inherited: tuple[str, ...] = ()
    if pending_ok:
        inherited = next(s.pending for s in operands if s is not None and s.pending)
        assignment = {f: a for f, a in assignment.items() if not set(a) & set(inherited)}
    wanted = []
    for k, dims in enumerate(factors.operands):
        split = tuple(project(dim, assignment) for dim in dims)
        keep = inherited if operands[k] is not None and operands[k].pending and pending_ok else ()
        wanted.append(ValueSharding(split, keep))
    reduced_axes: dict[str, list[str]] = {}
    for factor, op in factors.reduced.items():
        if op is not None and factor in assignment:
            reduced_axes.setdefault(op, []).extend(assignment[factor])
    results = []
    for dims in factors.results:
        split = tuple(project(dim, assignment) for dim in dims)
        if inherited:
            summed = tuple(reduced_axes.get("sum", ()))
            results.append(ValueSharding(split, (*inherited, *summed), "sum"))
        elif reduced_axes:
            ((op, axes),) = reduced_axes.items()
            results.append(ValueSharding(split, tuple(axes), op))
        else:
            results.append(ValueSharding(split))
    return Decision(tuple(wanted), tuple(results), reason)
