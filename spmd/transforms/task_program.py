"""One block's task: the program rewritten for the block's shapes, and where its results go.

A task is plain data. ``TaskFunction`` holds a Program (primitives pickle by name) and
interprets it wherever it is called; ``BlockWriter`` holds the output blocks
as bounds. Neither closes over the caller's function, so both pickle with the standard
library and run in another process or on another machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.interpret import eval_program
from spmd.core.program import Equation, Literal, Program, Var
from spmd.errors import ShapeError
from spmd.prims.sharding_constraint import inspect_sharding_p, sharding_constraint_p
from spmd.tree_util import tree_leaves

Bounds = tuple[tuple[int, int], ...]  # (start, stop) per dimension


def without_annotations(program: Program) -> Program:
    """``program`` without sharding constraints and inspections: a task runs on one device,
    where they mean nothing."""
    renamed: dict[Var, Var] = {}

    def read(atom):
        return renamed.get(atom, atom) if isinstance(atom, Var) else atom

    equations = []
    for eqn in program.equations:
        if eqn.primitive is sharding_constraint_p:
            renamed[eqn.outputs[0]] = read(eqn.inputs[0])
        elif eqn.primitive is not inspect_sharding_p:
            inputs = [read(a) for a in eqn.inputs]
            equations.append(Equation(eqn.primitive, inputs, eqn.outputs, eqn.params))
    outvars = [read(a) for a in program.outvars]
    return Program(program.constvars, program.invars, equations, outvars, program.consts)


def without_dead_code(program: Program) -> Program:
    """``program`` without the equations no result depends on (which would otherwise tie or
    mix dimensions for nothing)."""
    equations = needed_equations(program, program.outvars)
    return Program(program.constvars, program.invars, equations, program.outvars, program.consts)


def needed_equations(program: Program, outvars: Sequence) -> list[Equation]:
    """The equations that ``outvars`` depend on, in program order."""
    needed = {a for a in outvars if isinstance(a, Var)}
    kept = []
    for eqn in reversed(program.equations):
        if any(v in needed for v in eqn.outputs):
            kept.append(eqn)
            needed.update(a for a in eqn.inputs if isinstance(a, Var))
    return kept[::-1]


def block_program(
    program: Program,
    equations: list[Equation],
    outvars: Sequence,
    bounds_of: Callable[[Var], Bounds],
) -> tuple[Program, list[int]]:
    """The program computing the blocks ``bounds_of`` gives ``outvars``, from the blocks it
    gives the values they depend on; and the indices of the arguments it reads."""
    local: dict[Var, Var] = {}

    def block(var: Var) -> Var:
        if var not in local:
            shape = tuple(b - a for a, b in bounds_of(var))
            local[var] = Var(ShapedArray(shape, var.aval.dtype, var.aval.weak_type))
        return local[var]

    used = {a for eqn in equations for a in eqn.inputs if isinstance(a, Var)}
    used.update(a for a in outvars if isinstance(a, Var))
    constvars = [v for v in program.constvars if v in used]
    consts = [
        np.asarray(c)[_slices(bounds_of(v))]
        for v, c in zip(program.constvars, program.consts, strict=True)
        if v in used
    ]
    args = [i for i, v in enumerate(program.invars) if v in used]
    new_constvars = [block(v) for v in constvars]
    new_invars = [block(program.invars[i]) for i in args]
    new_equations = []
    for eqn in equations:
        inputs = [a if isinstance(a, Literal) else block(a) for a in eqn.inputs]
        outputs = [block(v) for v in eqn.outputs]
        params = eqn.params
        rewrite = eqn.primitive.rules.local_params
        if rewrite is not None:
            params = rewrite(
                eqn.params,
                [a.aval.shape for a in inputs],
                [v.aval.shape for v in outputs],
                [a.aval.dtype for a in inputs],
                [bounds_of(v) for v in eqn.outputs],
            )
        new_equations.append(Equation(eqn.primitive, inputs, outputs, params))
    new_outvars = [a if isinstance(a, Literal) else block(a) for a in outvars]
    local_program = Program(new_constvars, new_invars, new_equations, new_outvars, consts)
    return local_program, args


def _slices(bounds: Bounds) -> tuple[slice, ...]:
    return tuple(slice(a, b) for a, b in bounds)


class TaskFunction:
    """Computes one block: ``task_fun(*task_args)`` returns the block of each output it
    writes (one array, or a tuple of them). It reads ``reads``: (argument index, bounds).

    The program is interpreted, not compiled: a task runs once, on blocks large enough
    that a compilation would cost more than it saves."""

    def __init__(self, program: Program, reads: tuple[tuple[int, Bounds], ...], name: str):
        self.program = program
        self.reads = reads
        self.name = name

    def __repr__(self) -> str:
        return f"TaskFunction({self.name})"

    def __call__(self, *args):
        if len(args) != len(self.reads):
            raise ShapeError(
                f"{self.name} takes {len(self.reads)} argument slice(s), got {len(args)}; "
                f"call it as task.fun(*task.args)."
            )
        for (index, bounds), var, arg in zip(self.reads, self.program.invars, args, strict=True):
            if np.shape(arg) != var.aval.shape:
                raise ShapeError(
                    f"{self.name}: the slice of argument {index} has shape {np.shape(arg)}, "
                    f"but this task reads [{bounds_text(bounds)}], of shape {var.aval.shape}."
                )
        out = eval_program(self.program, self.program.consts, args)
        return out[0] if len(out) == 1 else tuple(out)


@dataclass(frozen=True)
class BlockWriter:
    """``write(result, holder)`` puts a task's result into ``holder`` (the output holder) and
    returns it: block ``blocks[k]`` of output leaf ``leaves[k]``."""

    leaves: tuple[int, ...]
    blocks: tuple[Bounds, ...]

    def __call__(self, result, holder):
        values = (result,) if len(self.leaves) == 1 else tuple(result)
        targets = tree_leaves(holder)
        for leaf, bounds, value in zip(self.leaves, self.blocks, values, strict=True):
            shape = tuple(b - a for a, b in bounds)
            if np.shape(value) != shape:
                raise ShapeError(
                    f"a task's result for output {leaf} has shape {np.shape(value)}, but its "
                    f"block [{bounds_text(bounds)}] has shape {shape}; pass write the result of "
                    f"the same task's fun."
                )
            targets[leaf][_slices(bounds)] = value
        return holder


def bounds_text(bounds: Bounds) -> str:
    """``0:2, 4:6``: the bounds as slices are written."""
    return ", ".join(f"{a}:{b}" for a, b in bounds)
