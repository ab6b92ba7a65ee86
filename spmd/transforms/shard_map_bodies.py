"""The bodies shard_map traces, one per distinct set of block shapes (uneven splits give the
tail devices smaller blocks): their constants become shared leading operands, and they must
differ only in shapes, parameters and literal values, with collectives over blocks of one
shape."""

from __future__ import annotations

import dataclasses
from typing import Any

from spmd.core.program import Equation, Literal, Program, Var
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, aval_str
from spmd.prims.shape import reshape_p
from spmd.sharding.mesh import Mesh, groups


def close_bodies(programs: list[Program], where: str) -> tuple[list[Program], list]:
    """The programs with their constants as leading invars, in one shared order, after
    checking that they differ only in shapes, parameters and literal values."""
    consts: dict[int, Any] = {}
    for p in programs:
        for c in p.consts:
            consts.setdefault(id(c), c)
    order = list(consts)
    closed = []
    for p in programs:
        own = {id(c): v for c, v in zip(p.consts, p.constvars, strict=True)}
        lead = [own[i] if i in own else Var(_const_aval(consts[i])) for i in order]
        closed.append(Program([], lead + list(p.invars), p.equations, p.outvars))
    first = _skeleton(closed[0])
    for p in closed[1:]:
        if _skeleton(p) != first:
            raise ShapeError(
                f"{where}: the function traces to different programs for different block "
                f"shapes (uneven splits give the last devices smaller blocks). Make every split "
                f"dimension a multiple of its mesh axes' size, or write the function so that "
                f"only shapes change with the block."
            )
    return closed, list(consts.values())


def _const_aval(x: Any):
    """A constant's type in a body: the same on every device (spmd/core/trace.py's too)."""
    return aval_of(x).strong().varying(frozenset())


def check_collectives(mesh: Mesh, bodies: list[Program], body_of) -> None:
    if len(bodies) == 1:
        return
    for index, eqn in enumerate(bodies[0].equations):
        if eqn.primitive.rules.collective is not None:
            avals = [bodies[b].equations[index].inputs[0].aval for b in body_of]
            _check_groups(mesh, eqn.primitive.name, eqn.params["axes"], avals)


def _check_groups(mesh: Mesh, name: str, axes, avals) -> None:
    """A collective combines blocks of one shape: ``avals[p]`` is device position ``p``'s."""
    for group in groups(mesh, axes):
        found = {avals[p].shape for p in group}
        if len(found) > 1:
            shown = " and ".join(aval_str(s, avals[group[0]].dtype) for s in sorted(found))
            raise ShapeError(
                f"{name} over {axes!r} combines blocks of different shapes ({shown}): the "
                f"shard_map inputs are split unevenly. Make each split dimension a multiple "
                f"of its mesh axes' size (pad the input), or move the collective to values "
                f"of one shape, such as a block's sum."
            )


def _skeleton(program: Program) -> tuple:
    """A program's structure: its primitives and how values flow, without shapes."""
    ids: dict[Var, tuple] = {v: ("in", i) for i, v in enumerate(program.invars)}

    def ref(atom) -> tuple:
        return ("literal", str(atom.aval.dtype)) if isinstance(atom, Literal) else ids[atom]

    equations = []
    for k, eqn in enumerate(program.equations):
        equations.append((eqn.primitive, tuple(map(ref, eqn.inputs)), len(eqn.outputs)))
        ids.update((v, ("eqn", k, j)) for j, v in enumerate(eqn.outputs))
    return tuple(equations), tuple(map(ref, program.outvars))


def split_axes(dims: tuple[tuple[str, ...], ...]) -> frozenset[str]:
    """The mesh axes a value laid out as ``dims`` is split over (and so varies over)."""
    return frozenset(a for dim in dims for a in dim)


def mapped_body(body: Program, in_axes, out_axes) -> Program:
    """``body`` (a pmap's, written for one index of the mapped axis) on shard_map's blocks: a mapped
    input's block keeps that axis with size 1, removed before the body runs; a mapped
    result gets it back."""
    invars, equations = [], []
    for v, axis in zip(body.invars, in_axes, strict=True):
        if axis is None:
            invars.append(v)
            continue
        block = Var(dataclasses.replace(v.aval, shape=_with_axis(v.aval.shape, axis)))
        invars.append(block)
        equations.append(Equation(reshape_p, [block], [v], {"new_sizes": v.aval.shape}))
    equations.extend(body.equations)
    outvars: list = []
    for atom, axis in zip(body.outvars, out_axes, strict=True):
        if axis is None:
            outvars.append(atom)
            continue
        shape = _with_axis(atom.aval.shape, axis)
        out = Var(dataclasses.replace(atom.aval, shape=shape))
        equations.append(Equation(reshape_p, [atom], [out], {"new_sizes": shape}))
        outvars.append(out)
    return Program([], invars, equations, outvars)


def _with_axis(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return (*shape[:axis], 1, *shape[axis:])
