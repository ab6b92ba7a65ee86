"""Sharding propagation: a sharding, and the reason for it, for every value of a Program.

Values that come only from host data (NumPy arguments, constants, and what is computed from
them alone) stay on the host: they are computed once and sliced for free into whatever
layout their consumers want. Every other value gets a ``ValueSharding`` on the program's
mesh from its equation's rule (spmd/sharding/rules.py). Propagation runs forward, then
backward: a value whose consumers all want it split more finely, at no cost, is computed
that way, which frees work downstream of it; the two passes repeat to a fixed point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from spmd.core.program import Equation, Literal, Program, Var
from spmd.sharding.mesh import Mesh
from spmd.sharding.reshard import cost
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


def factors_of(eqn: Equation) -> Factors | Decision:
    """The equation's factors, or the Decision of a primitive that fixes its layouts
    (with_sharding_constraint, shard_map, pmap)."""
    rule = eqn.primitive.rules.sharding
    if rule is None:
        return gathered_factors(eqn)
    ins = [a.aval for a in eqn.inputs]
    return rule(ins, [v.aval for v in eqn.outputs], **eqn.params)


def propagate(
    program: Program, mesh: Mesh, in_shardings: Sequence[ValueSharding | None]
) -> Propagation:
    """Shardings for ``program`` whose arguments lie as ``in_shardings`` (None: host)."""
    result = Propagation(mesh)
    for var in program.constvars:
        result.shardings[var] = None
    for i, (var, sharding) in enumerate(zip(program.invars, in_shardings, strict=True)):
        result.shardings[var] = sharding
        if sharding is not None:
            result.reasons[var] = f"argument {i} is laid out so"
    refined: dict[Var, ValueSharding] = {}
    for _ in range(MAX_ROUNDS):
        _forward(program, mesh, result, refined)
        wanted = _backward(program, mesh, result)
        if not wanted:
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
        if isinstance(rule, Decision):
            decision = rule
        elif all(s is None for s in operands):
            for var in eqn.outputs:
                result.shardings[var] = None
            continue
        else:
            nbytes = [a.aval.size * a.aval.dtype.itemsize for a in eqn.inputs]

            def moved(k, have, want, eqn=eqn):
                aval = eqn.inputs[k].aval
                return cost(mesh, aval.shape, aval.dtype.itemsize, have, want)

            factors = _exactly_linear(eqn, rule, operands)
            decision = solve(factors, operands, nbytes, axis_sizes, moved)
            decision = _apply_refinements(eqn, decision, refined, mesh, operands)
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


def _apply_refinements(eqn, decision: Decision, refined: dict, mesh, operands) -> Decision:
    """Adopt a result layout that backward propagation asked for, re-deriving the operands'
    layouts from it."""
    wants = [refined.get(v) for v in eqn.outputs]
    if not any(wants) or len(eqn.outputs) != 1:
        return decision
    factors = factors_of(eqn)
    if isinstance(factors, Decision) or factors.reduced or factors.blocked:
        return decision
    (want,) = wants
    axis_sizes = dict(mesh.shape)
    assignment = {}
    for axes, dim in zip(want.dims, factors.results[0], strict=True):
        if axes and dim:
            assignment.update(split_dim(axes, dim, factors, axis_sizes))
    assignment = make_valid(assignment, factors, axis_sizes)
    if tuple(project(dim, assignment) for dim in factors.results[0]) != want.dims:
        return decision  # the factors cannot carry that layout (a merged dimension)
    wanted_operands = []
    for k, dims in enumerate(factors.operands):
        split = tuple(project(dim, assignment) for dim in dims)
        have = operands[k]
        if have is not None and (have.pending or not _refines(have.dims, split)):
            return decision  # the operand would have to move: keep the forward choice
        wanted_operands.append(ValueSharding(split))
    reason = "split as its consumers want it, which costs nothing here"
    return Decision(tuple(wanted_operands), (want,), reason)


def _refines(coarse, fine) -> bool:
    """Whether ``fine`` only adds axes after ``coarse``'s on each dimension (a local slice)."""
    return all(f[: len(c)] == c for c, f in zip(coarse, fine, strict=True))


def _backward(program, mesh, result: Propagation) -> dict:
    """Values computed whole (over some axes) whose every consumer wants them split further
    along those axes: ask their equations to compute them split."""
    wants: dict[Var, list] = {}
    for index, eqn in enumerate(program.equations):
        decision = result.decisions.get(index)
        if decision is None:
            continue
        for atom, want in zip(eqn.inputs, decision.operands, strict=True):
            if isinstance(atom, Var) and want is not None:
                wants.setdefault(atom, []).append(want)
    for var in program.outvars:
        if isinstance(var, Var):
            wants.setdefault(var, []).append(None)  # outputs keep their propagated layout
    found = {}
    for var, options in wants.items():
        have = result.shardings.get(var)
        if have is None or have.pending or var in program.invars or None in options:
            continue
        first = options[0]
        same = all(o == first for o in options) and not first.pending
        if same and first.dims != have.dims and _refines(have.dims, first.dims):
            found[var] = first
    producers = {v: eqn for eqn in program.equations for v in eqn.outputs if v in found}
    return {v: s for v, s in found.items() if v in producers and _splits_freely(producers[v])}


def _splits_freely(eqn: Equation) -> bool:
    """Whether ``eqn`` can compute its one result split any way its operands allow."""
    factors = factors_of(eqn)
    if isinstance(factors, Decision):
        return False
    return not factors.reduced and not factors.blocked and len(eqn.outputs) == 1
