"""Inlining calls of traced functions (custom_jvp, custom_vjp) before partitioning.

A call equation whose primitive has an ``inline`` rule holds a Program of its own; the
partitioner sees plain equations instead: the body's equations, with fresh variables,
reading the call's operands, and every later reader of the call's results reading the
body's results. Bodies are inlined recursively.
"""

from __future__ import annotations

from spmd.core.program import Equation, Literal, Program, Var


def inline_calls(program: Program) -> Program:
    """``program`` with every call that can be inlined replaced by its body's equations (the
    program itself when there is none)."""
    if not any(eqn.primitive.rules.inline is not None for eqn in program.equations):
        return program
    renamed: dict[Var, Var | Literal] = {}
    equations: list[Equation] = []
    for eqn in program.equations:
        inputs = [_read(renamed, a) for a in eqn.inputs]
        if eqn.primitive.rules.inline is None:
            equations.append(Equation(eqn.primitive, inputs, eqn.outputs, eqn.params))
            continue
        results = _emit(inline_calls(eqn.primitive.rules.inline(eqn.params)), inputs, equations)
        renamed.update(zip(eqn.outputs, results, strict=True))
    outvars = [_read(renamed, a) for a in program.outvars]
    return Program(program.constvars, program.invars, equations, outvars, program.consts)


def _read(renamed: dict, atom):
    return atom if isinstance(atom, Literal) else renamed.get(atom, atom)


def _emit(body: Program, inputs: list, equations: list[Equation]) -> list:
    """Append ``body``'s equations on ``inputs`` with fresh variables; its results."""
    env: dict[Var, Var | Literal] = dict(zip(body.invars, inputs, strict=True))
    for eqn in body.equations:
        outputs = [Var(v.aval) for v in eqn.outputs]
        env.update(zip(eqn.outputs, outputs, strict=True))
        equations.append(
            Equation(eqn.primitive, [_read(env, a) for a in eqn.inputs], outputs, eqn.params)
        )
    return [_read(env, a) for a in body.outvars]
