"""Checks that a Program is well formed: every value defined once before use, and each
equation's results of the types (shape, dtype, weak type, varying axes) its primitive's rules
give its operands' types. Programs held in parameters (shard_map and pmap bodies) are checked
too.

Nothing calls it in production; the test suite runs it on every Program a trace finishes
(``spmd.core.trace.PROGRAM_CHECKS``, set in tests/conftest.py).
"""

from __future__ import annotations

from spmd.core.program import Literal, Program
from spmd.core.varying import typed_results
from spmd.errors import SpmdError


class ProgramTypeError(SpmdError, TypeError):
    """A Program breaks its own typing rules (a bug in a rule or a transformation)."""


def typecheck(program: Program, where: str = "program") -> None:
    defined = set(program.constvars) | set(program.invars)
    for i, eqn in enumerate(program.equations):
        at = f"{where}: equation {i} ({eqn.primitive})"
        for atom in eqn.inputs:
            if not isinstance(atom, Literal) and atom not in defined:
                raise ProgramTypeError(f"{at} reads an undefined value")
        for name, value in eqn.params.items():
            for k, body in enumerate(value if isinstance(value, tuple) else (value,)):
                if isinstance(body, Program):
                    typecheck(body, f"{at} {name}[{k}]")
        expected = typed_results(eqn.primitive, [a.aval for a in eqn.inputs], eqn.params)
        got = [v.aval for v in eqn.outputs]
        if expected != got:
            raise ProgramTypeError(
                f"{at} declares outputs {[repr(a) for a in got]} but its rules give "
                f"{[repr(a) for a in expected]}"
            )
        for var in eqn.outputs:
            if var in defined:
                raise ProgramTypeError(f"{at} redefines a value")
            defined.add(var)
    for atom in program.outvars:
        if not isinstance(atom, Literal) and atom not in defined:
            raise ProgramTypeError(f"{where}: an output of the program is never defined")
