"""The one interpreter: evaluate a Program equation by equation over an environment."""

from __future__ import annotations

from collections.abc import Sequence
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
