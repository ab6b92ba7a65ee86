"""The Program IR: typed, single-assignment equations over global shapes, and its printer."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spmd.core.aval import ShapedArray

_ids = itertools.count()


@dataclass(eq=False)
class Var:
    """A value computed once in a Program."""

    aval: ShapedArray
    id: int = field(default_factory=lambda: next(_ids))


@dataclass(eq=False)
class Literal:
    """A scalar constant written into an equation."""

    value: Any
    aval: ShapedArray


Atom = Var | Literal


@dataclass(eq=False)
class Equation:
    primitive: Any  # a Primitive (spmd/core/primitive.py, which lies above this module)
    inputs: list[Atom]
    outputs: list[Var]
    params: dict[str, Any]


@dataclass(eq=False)
class Program:
    """``constvars`` (bound to ``consts``) and ``invars`` in, ``outvars`` out."""

    constvars: list[Var]
    invars: list[Var]
    equations: list[Equation]
    outvars: list[Atom]
    consts: list[Any] = field(default_factory=list)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self) -> str:
        return pretty(self)

    __repr__ = __str__


def _names() -> dict[Var, str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    counter = itertools.count()
    names: dict[Var, str] = {}

    class Namer(dict):
        def __missing__(self, var: Var) -> str:
            i = next(counter)
            name = letters[i % 26] + ("" if i < 26 else str(i // 26))
            self[var] = name
            return name

    return Namer(names)


def _atom(names, atom: Atom) -> str:
    if isinstance(atom, Literal):
        value = np.asarray(atom.value).item()
        return f"{value}:{atom.aval}"
    return names[atom]


def _binder(names, var: Var) -> str:
    return f"{names[var]}:{var.aval}"


def _params(params: dict[str, Any]) -> str:
    if not params:
        return ""
    return "[" + " ".join(f"{k}={v!r}" for k, v in sorted(params.items())) + "]"


def pretty(program: Program) -> str:
    """Print a Program the way ``jax.make_jaxpr`` prints a jaxpr."""
    names = _names()
    consts = " ".join(_binder(names, v) for v in program.constvars)
    args = " ".join(_binder(names, v) for v in program.invars)
    lines = [f"{{ lambda {consts}; {args}. let"]
    for eqn in program.equations:
        outs = " ".join(_binder(names, v) for v in eqn.outputs)
        ins = " ".join(_atom(names, a) for a in eqn.inputs)
        lines.append(f"    {outs} = {eqn.primitive.name}{_params(eqn.params)} {ins}")
    outs = ", ".join(_atom(names, a) for a in program.outvars)
    lines.append(f"  in ({outs},) }}" if len(program.outvars) == 1 else f"  in ({outs}) }}")
    return "\n".join(lines)
