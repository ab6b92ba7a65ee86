"""The one interpreter: evaluate a Program equation by equation over an environment."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.program import Literal, Program, Var

_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Program → buffer_reuse


def eval_program(program: Program, consts: Sequence[Any], args: Sequence[Any], xp=np) -> list:
    """Run ``program`` on ``consts`` and ``args`` with the array namespace ``xp``.

    Each value is let go at its last use, and an elementwise equation writes its result into
    an operand that dies there when ``buffer_reuse`` allows it (NumPy only: ``out=``), so
    that a chain of steps holds two arrays at a time, not one per step. Python scalars stay
    Python scalars, so NumPy gives them its weak (NEP 50) promotion; a NumPy literal becomes
    an array of ``xp`` when ``xp`` is not NumPy.
    """
    env: dict = {}
    env.update(zip(program.constvars, consts, strict=True))
    env.update(zip(program.invars, args, strict=True))
    plan = _PLANS.get(program)
    if plan is None:
        plan = _PLANS[program] = buffer_reuse(program)
    last_use, reuse = plan
    if xp is not np:
        reuse = {}  # ``out=`` is NumPy's

        def read(atom):
            return literal_value(atom.value, xp) if isinstance(atom, Literal) else env[atom]

    else:

        def read(atom):
            return atom.value if isinstance(atom, Literal) else env[atom]

    for index, eqn in enumerate(program.equations):
        inputs = [read(a) for a in eqn.inputs]
        if index in reuse:
            out = eqn.primitive.rules.impl(xp, *inputs, out=inputs[reuse[index]], **eqn.params)
        else:
            out = eqn.primitive.rules.impl(xp, *inputs, **eqn.params)
        outs = out if eqn.primitive.multiple_results else (out,)
        env.update(zip(eqn.outputs, outs, strict=True))
        for atom in eqn.inputs:
            if isinstance(atom, Var) and last_use.get(atom) == index:
                env.pop(atom, None)
    return [read(atom) for atom in program.outvars]


def literal_value(value: Any, xp) -> Any:
    """A Literal's value for the namespace ``xp``: Python scalars as they are (weakly typed),
    NumPy scalars and arrays as arrays of ``xp`` of their dtype (NumPy: as they are)."""
    if xp is np or not isinstance(value, np.ndarray | np.generic):
        return value
    name = "bool" if value.dtype == np.bool_ else value.dtype.name
    return xp.asarray(value, dtype=getattr(xp, name))


def buffer_reuse(program: Program) -> tuple[dict[Var, int], dict[int, int]]:
    """Each value's last use (an equation index; the program's results are never let go),
    and, per equation index, the operand whose buffer it may write its result into: a value
    an elementwise equation made (a fresh array that nothing else views), dying there, with
    the result's shape and dtype (and at least one dimension)."""
    last_use: dict[Var, int] = {}
    for index, eqn in enumerate(program.equations):
        last_use.update((a, index) for a in eqn.inputs if isinstance(a, Var))
    for atom in program.outvars:
        last_use.pop(atom, None)
    fresh: set[Var] = set()
    viewed: set[Var] = set()
    for eqn in program.equations:
        if eqn.primitive.rules.writes_into:
            fresh.update(eqn.outputs)
        else:
            viewed.update(a for a in eqn.inputs if isinstance(a, Var))
    reuse = {}
    for index, eqn in enumerate(program.equations):
        result = eqn.outputs[0].aval if len(eqn.outputs) == 1 else None
        if not eqn.primitive.rules.writes_into or result is None or not result.ndim:
            continue  # NumPy gives scalars, not arrays, for 0-d results
        for k, atom in enumerate(eqn.inputs):
            if (
                atom in fresh
                and atom not in viewed
                and last_use.get(atom) == index
                and (atom.aval.shape, atom.aval.dtype) == (result.shape, result.dtype)
            ):
                reuse[index] = k
                break
    return last_use, reuse


def compile_program(program: Program, xp=np) -> Callable[..., list]:
    """``program`` as one straight-line Python function ``run(*consts, *args) -> outputs``.

    The same evaluation as ``eval_program``, without its per-equation bookkeeping: each
    equation becomes one call, and values live in local variables.
    """
    names: dict = {}
    scope: dict[str, Any] = {"xp": xp}

    def name_of(atom) -> str:
        if isinstance(atom, Literal):
            key = f"lit{len(scope)}"
            scope[key] = literal_value(atom.value, xp)
            return key
        return names[atom]

    for var in (*program.constvars, *program.invars):
        names[var] = f"v{len(names)}"
    lines = [f"def run({', '.join(names.values())}):"]
    for i, eqn in enumerate(program.equations):
        rules = eqn.primitive.rules
        direct = xp is np and rules.ufunc is not None and not eqn.params
        scope[f"impl{i}"] = rules.ufunc if direct else rules.impl
        scope[f"params{i}"] = eqn.params
        for var in eqn.outputs:
            names[var] = f"v{len(names)}"
        args = ", ".join([*([] if direct else ["xp"]), *(name_of(a) for a in eqn.inputs)])
        call = f"impl{i}({args}, **params{i})" if eqn.params else f"impl{i}({args})"
        outs = ", ".join(names[v] for v in eqn.outputs)
        if eqn.primitive.multiple_results:
            lines.append(f"    ({outs},) = {call}")
        else:
            lines.append(f"    {outs} = {call}")
    lines.append(f"    return [{', '.join(name_of(a) for a in program.outvars)}]")
    exec(compile("\n".join(lines), f"<spmd program {id(program):x}>", "exec"), scope)
    return scope["run"]
