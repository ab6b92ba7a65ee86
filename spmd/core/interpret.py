"""The one interpreter: evaluate a Program equation by equation over an environment."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.program import Literal, Program


def eval_program(program: Program, consts: Sequence[Any], args: Sequence[Any], xp=np) -> list:
    """Run ``program`` on ``consts`` and ``args`` with the array namespace ``xp``.

    Python scalars stay Python scalars, so NumPy gives them its weak (NEP 50) promotion.
    """
    env: dict = {}
    env.update(zip(program.constvars, consts, strict=True))
    env.update(zip(program.invars, args, strict=True))

    def read(atom):
        return atom.value if isinstance(atom, Literal) else env[atom]

    for eqn in program.equations:
        out = eqn.primitive.rules.impl(xp, *map(read, eqn.inputs), **eqn.params)
        outs = out if eqn.primitive.multiple_results else (out,)
        env.update(zip(eqn.outputs, outs, strict=True))
    return [read(atom) for atom in program.outvars]


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
            scope[key] = atom.value
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
