"""Checks that a Program is well formed: every value defined once before use, avals consistent."""

from __future__ import annotations

from spmd.core.program import Literal, Program
from spmd.errors import SpmdError


class ProgramTypeError(SpmdError, TypeError):
    """A Program breaks its own typing rules (a bug in a rule or a transformation)."""


def typecheck(program: Program) -> None:
    defined = set(program.constvars) | set(program.invars)
    for i, eqn in enumerate(program.equations):
        for atom in eqn.inputs:
            if not isinstance(atom, Literal) and atom not in defined:
                raise ProgramTypeError(f"equation {i} ({eqn.primitive}) reads an undefined value")
        expected = eqn.primitive.rules.shape(*[a.aval for a in eqn.inputs], **eqn.params)
        expected = list(expected) if eqn.primitive.multiple_results else [expected]
        got = [v.aval for v in eqn.outputs]
        if expected != got:
            raise ProgramTypeError(
                f"equation {i} ({eqn.primitive}) declares outputs {[str(a) for a in got]} but "
                f"its shape rule gives {[str(a) for a in expected]}"
            )
        for var in eqn.outputs:
            if var in defined:
                raise ProgramTypeError(f"equation {i} ({eqn.primitive}) redefines a value")
            defined.add(var)
    for atom in program.outvars:
        if not isinstance(atom, Literal) and atom not in defined:
            raise ProgramTypeError("an output of the program is never defined")
