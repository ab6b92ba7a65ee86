"""Bodies of control-flow primitives: functions traced into closed Programs (values they
capture become leading inputs, supplied as operands of the equation), run again in the
current trace, differentiated (joint primal and tangent bodies) and batched."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from spmd.core.ad import jvp_call, zeros
from spmd.core.aval import ShapedArray
from spmd.core.axis_env import bound_axes
from spmd.core.batching import BatchTrace
from spmd.core.program import Literal, Program, Var
from spmd.core.trace import ProgramTrace, Tracer, aval_of, current_trace, tracing
from spmd.errors import SpmdError
from spmd.prims.collective import sum_where_varying
from spmd.prims.derivatives import batch_to_front, bind, moveaxis
from spmd.transforms.typeof import VaryingTypes


def operand_aval(x: Any) -> ShapedArray:
    """``x``'s abstract value with the mesh axes it varies over (an eager shard_map body's
    blocks keep them beside their aval)."""
    aval = aval_of(x)
    vma = x._vma() if isinstance(x, Tracer) else frozenset()
    return aval if aval.vma == vma else dataclasses.replace(aval, vma=frozenset(vma))


class _BodyTrace(ProgramTrace):
    """A ProgramTrace whose captured values of enclosing traces keep their types (a value of a
    shard_map body varies as it does there)."""

    def atom(self, x: Any):
        if isinstance(x, Tracer) and x._trace is not self and getattr(x._trace, "active", False):
            var = self._const_ids.get(id(x))
            if var is None:
                var = Var(operand_aval(x))
                self._const_ids[id(x)] = var
                self.constvars.append(var)
                self.consts.append(x)
            return var
        return super().atom(x)


def trace_program(fn: Callable[..., Sequence[Any]], avals: Sequence[ShapedArray]) -> Program:
    """``fn`` (flat arguments -> flat results) traced on ``avals``: a Program whose constants
    are the values it captured (close them with ``close``)."""
    trace = _BodyTrace()
    sizes = bound_axes()
    trace.types = VaryingTypes(tuple(sizes)) if sizes else None
    tracers = [trace.new_arg(a) for a in avals]
    try:
        with tracing(trace):
            outs = list(fn(*tracers))
    except BaseException:
        trace.active = False
        raise
    return trace.finish([t.node for t in tracers], outs)


def close(programs: Sequence[Program]) -> tuple[list[Program], list]:
    """The programs with their constants as leading inputs in one shared order (every program
    takes all of them), and those constants: the operands that lead the equation's."""
    consts: dict[int, Any] = {}
    for p in programs:
        for c in p.consts:
            consts.setdefault(id(c), c)
    closed = []
    for p in programs:
        own = {id(c): v for c, v in zip(p.consts, p.constvars, strict=True)}
        lead = [own[i] if i in own else Var(operand_aval(c)) for i, c in consts.items()]
        closed.append(Program([], lead + list(p.invars), p.equations, p.outvars))
    return closed, list(consts.values())


def run_program(program: Program, args: Sequence[Any]) -> list:
    """A closed ``program`` applied to ``args``, binding each equation in the current trace."""
    env = dict(zip(program.invars, args, strict=True))

    def read(atom):
        return atom.value if isinstance(atom, Literal) else env[atom]

    for eqn in program.equations:
        out = eqn.primitive.bind(*map(read, eqn.inputs), **eqn.params)
        env.update(zip(eqn.outputs, out if eqn.primitive.multiple_results else [out], strict=True))
    return [read(a) for a in program.outvars]


def cotangent_as(ct: Any, aval: ShapedArray) -> Any:
    """``ct`` typed as its primal ``aval``: summed over the mesh axes it varies over and the
    primal does not (such a cotangent holds each device's part of the total). A transposed
    body types its cotangents as its primals, so they must arrive, and leave, that way."""
    extra = tuple(sorted(operand_aval(ct).vma - aval.vma))
    return sum_where_varying(ct, extra) if extra else ct


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    return aval.strong()


def differentiable(aval: ShapedArray) -> bool:
    return aval.dtype.kind in "fc"


def jvp_program(
    program: Program,
    moving: Sequence[bool],
    instantiate: Sequence[bool],
    *,
    primals_out: bool = True,
) -> tuple[Program, list[bool]]:
    """The joint body of a closed ``program``: (inputs..., tangents of the ``moving``
    inputs...) -> (outputs... if ``primals_out``, tangents of the outputs that have one or
    are ``instantiate``d...). Returns it (not closed) and which outputs have a tangent."""
    count = len(program.invars)
    has: list[bool] = []

    def fn(*args):
        tangents: list = [None] * count
        rest = iter(args[count:])
        for i, m in enumerate(moving):
            if m:
                tangents[i] = next(rest)
        outs, out_tangents = jvp_call(
            lambda *xs: run_program(program, xs), args[:count], tangents, current_trace()
        )
        kept = []
        has.clear()
        for o, t, inst in zip(outs, out_tangents, instantiate, strict=True):
            if not differentiable(aval_of(o)):
                t = None  # integers and bools have no tangent
            elif t is None and inst:
                t = zeros(tangent_aval(aval_of(o)))
            has.append(t is not None)
            if t is not None:
                kept.append(t)
        return (list(outs) if primals_out else []) + kept

    avals = [v.aval for v in program.invars]
    avals += [tangent_aval(v.aval) for v, m in zip(program.invars, moving, strict=True) if m]
    return trace_program(fn, avals), list(has)


def batched_aval(aval: ShapedArray, size: int) -> ShapedArray:
    return dataclasses.replace(aval, shape=(size, *aval.shape))


def batch_program(
    program: Program, batched: Sequence[bool], size: int, force: Sequence[bool]
) -> tuple[Program, list[bool]]:
    """A closed ``program`` with its ``batched`` inputs batched along a leading dimension of
    ``size``: (its batched outputs at dimension 0 (those ``force``d too, broadcast), which
    outputs are batched). The Program is not closed."""
    found: list[bool] = []

    def fn(*args):
        trace = BatchTrace(current_trace(), size, None)
        ins = [trace.wrap(a, 0 if b else None) for a, b in zip(args, batched, strict=True)]
        try:
            with tracing(trace):
                outs = run_program(program, ins)
        finally:
            trace.active = False
        found.clear()
        results = []
        for o, f in zip(outs, force, strict=True):
            value, dim = trace.pair(o)
            if dim is not None or f:
                value = batch_to_front(value, dim, size)
            found.append(dim is not None or f)
            results.append(value)
        return results

    avals = [
        batched_aval(v.aval, size) if b else v.aval
        for v, b in zip(program.invars, batched, strict=True)
    ]
    return trace_program(fn, avals), list(found)


def to_front(x: Any, dim: int | None) -> Any:
    """A batched operand with its batch dimension first (None: as it is)."""
    return x if dim is None else moveaxis(x, dim, 0)


def split(seq: Sequence[Any], *counts: int) -> list[list]:
    """``seq`` cut into consecutive pieces of ``counts`` (the rest is the last piece)."""
    pieces, start = [], 0
    for n in counts:
        pieces.append(list(seq[start : start + n]))
        start += n
    pieces.append(list(seq[start:]))
    return pieces


class CollectiveInBodyError(SpmdError):
    """A loop or branch whose body holds collectives, run whole on each device's values (an
    eager shard_map's blocks), where only its compiled steps can meet the other devices."""


def select_members(chosen, on_true, on_false):
    """Per batch member (the leading dimension), ``on_true`` where ``chosen`` holds, else
    ``on_false``: the batched form of a predicate that differs between members."""
    ndim = aval_of(on_true).ndim
    shaped = bind("reshape", chosen, new_sizes=(aval_of(chosen).shape[0],) + (1,) * (ndim - 1))
    return bind("where", shaped, on_true, on_false)
