"""Tracing a Python function of pytrees into a Program, for the transformations that hold one
(``checkpoint``, ``custom_jvp``/``custom_vjp``, ``closure_convert``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spmd.core.program import Program
from spmd.core.trace import ProgramTrace, aval_of, tracing
from spmd.tree_util import tree_flatten


def trace_leaves(fn: Callable[[list], Any], leaves: Sequence[Any]) -> tuple[Program, Any]:
    """``fn`` applied to one tracer per leaf (of that leaf's type) and traced: its Program,
    the values it closes over as the Program's constants, and the tree of what it returned."""
    trace = ProgramTrace()
    tracers = [trace.new_arg(aval_of(x)) for x in leaves]
    with tracing(trace):
        out = fn(tracers)
    out_leaves, out_tree = tree_flatten(out)
    return trace.finish([t.node for t in tracers], out_leaves), out_tree


def hoisted(program: Program) -> tuple[Program, list]:
    """``program`` with its constants as its first inputs, and those constants."""
    inputs = program.constvars + program.invars
    return Program([], inputs, program.equations, program.outvars), list(program.consts)
