"""Sharding propagation: a sharding, and the reason for it, for every value of a Program.

Values that come only from host data (NumPy arguments, constants, and what is computed from
them alone) stay on the host: they are computed once and sliced for free into whatever
layout their consumers want. Every other value gets a ``ValueSharding`` on the program's
mesh from its equation's rule (spmd/sharding/rules.py). Propagation runs forward, then
backward: a value whose users (its consumers, constraints on it, out_shardings) all want it
laid out one way is computed that way when that is free (split more finely, which saves the
work of blocks a device would throw away) or moves its operands for no more bytes than
moving it would take (so data moves where it is smallest); the passes repeat to a fixed
point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from spmd.core.program import Equation, Literal, Program, Var
from spmd.sharding.mesh import Mesh
from spmd.sharding.plans import cost
from spmd.sharding.rules import (
    Decision,
    Factors,
    ValueSharding,
    make_valid,
    project,
    solve,
    split_dim,
)

MAX_ROUNDS = 8


@dataclass
class Propagation:
    """Each value's sharding (None: on the host) and why; each equation's decision."""

    mesh: Mesh
    shardings: dict[Var, ValueSharding | None] = field(default_factory=dict)
    reasons: dict[Var, str] = field(default_factory=dict)
    decisions: dict[int, Decision] = field(default_factory=dict)


@dataclass(frozen=True)
class Deferred:
    """The sharding rule of a primitive whose layouts follow from its operands' (control
    flow: its bodies are propagated with them): ``decide(operands, mesh)`` returns the
    Decision, given each operand's sharding (None: on the host; not all None)."""

    decide: Callable[[list, Mesh], Decision]


@dataclass(frozen=True)
class BodiesDecision(Decision):
    """A Decision that also builds its equation's step: ``lower(inputs, outputs)`` returns
    the step (a Loop or a Branch, its bodies partitioned) on the operands laid out as
    decided."""

    lower: Callable[[list, list], object] | None = None


def gathered_factors(eqn: Equation) -> Factors:
    """The rule of a primitive without one: every operand whole on every device."""
    sizes: dict[str, int] = {}
    blocked = []

    def dims(aval, tag: str) -> tuple:
        names = [f"{tag}_{d}" for d in range(aval.ndim)]
        sizes.update(zip(names, aval.shape, strict=True))
        blocked.extend(names)
        return tuple((n,) for n in names)

    operands = tuple(dims(a.aval, f"in{k}") for k, a in enumerate(eqn.inputs))
    results = tuple(dims(v.aval, f"out{k}") for k, v in enumerate(eqn.outputs))
    return Factors(operands, results, sizes, blocked=frozenset(blocked))


def factors_of(eqn: Equation) -> Factors | Decision | Deferred:
    """The equation's factors, the Decision of a primitive that fixes its layouts
    (with_sharding_constraint, shard_map, pmap), or the Deferred rule of one whose layouts
    follow from its operands' (control flow)."""
    rule = eqn.primitive.rules.sharding
    if rule is None:
        return gathered_factors(eqn)
    ins = [a.aval for a in eqn.inputs]
    return rule(ins, [v.aval for v in eqn.outputs], **eqn.params)


def propagate(
    program: Program,
    mesh: Mesh,
    in_shardings: Sequence[ValueSharding | None],
    out_targets: Sequence[ValueSharding | None] | None = None,
) -> Propagation:
    """Shardings for ``program`` whose arguments lie as ``in_shardings`` (None: host) and
    whose results are wanted as ``out_targets`` (None: wherever they come out)."""
    result = Propagation(mesh)
    for var in program.constvars:
        result.shardings[var] = None
    for i, (var, sharding) in enumerate(zip(program.invars, in_shardings, strict=True)):
        result.shardings[var] = sharding
        if sharding is not None:
            result.reasons[var] = f"argument {i} is laid out so"
    targets = list(out_targets) if out_targets is not None else [None] * len(program.outvars)
    refined: dict[Var, tuple[ValueSharding, str]] = {}
    for _ in range(MAX_ROUNDS):
        _forward(program, mesh, result, refined)
        wanted = _backward(program, mesh, result, targets)
        if all(refined.get(var) == want for var, want in wanted.items()):
            break
        refined.update(wanted)
    return result


def _operand(result: Propagation, atom) -> ValueSharding | None:
    return None if isinstance(atom, Literal) else result.shardings[atom]


def _forward(program, mesh, result: Propagation, refined: dict) -> None:
    axis_sizes = dict(mesh.shape)
    for index, eqn in enumerate(program.equations):
        operands = [_operand(result, a) for a in eqn.inputs]
        rule = factors_of(eqn)
        want = refined.get(eqn.outputs[0]) if len(eqn.outputs) == 1 else None
        if isinstance(rule, Decision):
            decision = rule
        elif isinstance(rule, Deferred) and any(s is not None for s in operands):
            decision = rule.decide(operands, mesh)
        elif all(s is None for s in operands):
            decision = _better_decision(eqn, *want, mesh, operands, None) if want else None
            if decision is None:
                for var in eqn.outputs:
                    result.shardings[var] = None
                continue
        else:
            nbytes = [a.aval.size * a.aval.dtype.itemsize for a in eqn.inputs]

            def moved(k, have, want, eqn=eqn):
                aval = eqn.inputs[k].aval
                return cost(mesh, aval.shape, aval.dtype.itemsize, have, want)

            def reduced(j, sharding, eqn=eqn):
                aval = eqn.outputs[j].aval
                full = sharding.without_pending()
                return cost(mesh, aval.shape, aval.dtype.itemsize, sharding, full)

            factors = _exactly_linear(eqn, rule, operands)
            decision = solve(factors, operands, nbytes, axis_sizes, moved, reduced)
            if want:
                have = decision.results[0]
                decision = _better_decision(eqn, *want, mesh, operands, have) or decision
        result.decisions[index] = decision
        for var, sharding in zip(eqn.outputs, decision.results, strict=True):
            result.shardings[var] = sharding
            result.reasons[var] = f"{eqn.primitive.name} {decision.reason}"


def _exactly_linear(eqn: Equation, factors: Factors, operands) -> Factors:
    """``factors``, no longer letting a pending sum through where that would not be exact.

    Partial values pass a product or quotient by finite, non-zero constants exactly, but not
    one by a traced operand: an infinity there meets a partial that is 0 (a device whose
    block is empty, or whose terms cancel) and gives NaN where the whole sum gives
    infinity, and so does a zero divisor. Such equations take the combined value."""
    if factors.linear not in ("one", "first") or len(eqn.inputs) == 1:
        return factors
    for atom, sharding in zip(eqn.inputs, operands, strict=True):
        if sharding is not None and sharding.pending:
            continue
        constant = isinstance(atom, Literal) and np.ndim(atom.value) == 0
        if not constant or not np.isfinite(atom.value) or atom.value == 0:
            return dataclasses.replace(factors, linear=None)
    return factors


def _decision_for(eqn, want: ValueSharding, why: str, mesh, operands) -> Decision | None:
    """How ``eqn`` computes its one result laid out as ``want``, each operand sliced from
    what it has or, where it must, moved (None: the factors cannot carry that layout)."""
    factors = factors_of(eqn)
    if isinstance(factors, Decision | Deferred):
        return None
    axis_sizes = dict(mesh.shape)
    assignment = {}
    for axes, dim in zip(want.dims, factors.results[0], strict=True):
        if axes and dim:
            assignment.update(split_dim(axes, dim, factors, axis_sizes))
    assignment = make_valid(assignment, factors, axis_sizes)
    if not all(factors.splittable(factor) for factor in assignment):
        return None  # e.g. a cumsum's own axis
    if tuple(project(dim, assignment) for dim in factors.results[0]) != want.dims:
        return None  # a merged dimension that cannot carry that layout
    wanted_operands = []
    for k, dims in enumerate(factors.operands):
        have = operands[k]
        if have is not None and have.pending:
            return None
        wanted_operands.append(ValueSharding(tuple(project(dim, assignment) for dim in dims)))
    return Decision(tuple(wanted_operands), (want,), f"laid out as {why} wants it")


def _operand_moves(eqn, decision: Decision, mesh, operands) -> int:
    """Bytes that moving ``eqn``'s operands into ``decision``'s layouts would take."""
    moved = 0
    for atom, have, want in zip(eqn.inputs, operands, decision.operands, strict=True):
        if have is not None and not _refines(have.dims, want.dims):
            aval = atom.aval
            moved += cost(mesh, aval.shape, aval.dtype.itemsize, have, want)
    return moved


def _refines(coarse, fine) -> bool:
    """Whether ``fine`` only adds axes after ``coarse``'s on each dimension (a local slice)."""
    return all(f[: len(c)] == c for c, f in zip(coarse, fine, strict=True))


def _backward(program, mesh, result: Propagation, targets) -> dict:
    """Values whose every user (consumers and out_shardings) wants them laid out one way
    that their equation can give cheaply (see _better_decision): ask for it. One pass from
    the last equation to the first carries such wishes up whole chains. A value on the host
    moves to the mesh only to be split over every mesh axis, so that no device repeats
    another's work."""
    wants: dict[Var, list[tuple[ValueSharding | None, str]]] = {}

    def wish(atom, sharding: ValueSharding | None, who: str) -> None:
        if isinstance(atom, Var):
            wants.setdefault(atom, []).append((sharding, who))

    for i, (var, target) in enumerate(zip(program.outvars, targets, strict=True)):
        wish(var, target, f"output {i}'s out_sharding")
    found = {}
    for index in reversed(range(len(program.equations))):
        eqn = program.equations[index]
        decision = result.decisions.get(index)
        if len(eqn.outputs) == 1 and _lays_out_freely(eqn):
            want = _agreed_layout(wants.get(eqn.outputs[0], []), result, eqn, mesh)
            if want:
                operands = [_operand(result, a) for a in eqn.inputs]
                have = result.shardings.get(eqn.outputs[0])
                better = _better_decision(eqn, *want, mesh, operands, have)
                if better:
                    found[eqn.outputs[0]] = want
                    decision = better
        for k, atom in enumerate(eqn.inputs):
            wish(atom, decision.operands[k] if decision else None, "every consumer")
    return found


def _agreed_layout(wants, result: Propagation, eqn, mesh):
    """The (layout, who) every user wants, if it is not the value's layout already."""
    var = eqn.outputs[0]
    if not wants or any(w is None for w, _ in wants):
        return None
    first, who = wants[0]
    if first.pending or any(w != first for w, _ in wants):
        return None
    have = result.shardings.get(var)
    if have is None:
        on_every_axis = first.used_axes >= {a for a, n in mesh.shape.items() if n > 1}
        return (first, who) if on_every_axis else None
    if have.pending or first.dims == have.dims:
        return None
    return first, who if len(wants) == 1 else "every consumer"


def _better_decision(
    eqn, want: ValueSharding, who: str, mesh, operands, have: ValueSharding | None
) -> Decision | None:
    """``eqn`` computing its result as ``want`` rather than ``have``, if that is free (a
    local slice of what it has) or moves no more bytes than moving the result afterwards."""
    decision = _decision_for(eqn, want, who, mesh, operands)
    if decision is None:
        return None
    if have is not None and have.pending:
        return None
    moves = _operand_moves(eqn, decision, mesh, operands)
    if have is None or _refines(have.dims, want.dims):
        free = dataclasses.replace(decision, reason=f"{decision.reason}, at no cost")
        return free if moves == 0 else None
    aval = eqn.outputs[0].aval
    instead = cost(mesh, aval.shape, aval.dtype.itemsize, have, want)
    if moves > instead:  # a tie moves the data earlier, where an earlier step may avoid it
        return None
    reason = (
        f"{decision.reason}: moving its operands ({moves} B) costs no more than it ({instead} B)"
    )
    return dataclasses.replace(decision, reason=reason)


def _lays_out_freely(eqn: Equation) -> bool:
    """Whether ``eqn`` computes one result by a rule that may lay it out any way (not one
    that fixes its layouts, as a constraint or shard_map does)."""
    return len(eqn.outputs) == 1 and not isinstance(factors_of(eqn), Decision | Deferred)
