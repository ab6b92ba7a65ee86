"""What a ``checkpoint`` policy saves: the region's Program given the saved intermediates as
extra outputs, and its JVP program that takes them as inputs instead of recomputing them.

``remat_call``'s primal call computes the saved values along with its outputs; its tangent
call (the only equation a linear program holds for the region) reads the region's inputs and
those values, so the backward pass recomputes only the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spmd.core.ad import JVPTrace
from spmd.core.program import Literal, Program, Var
from spmd.core.trace import aval_of, current_trace, tracing
from spmd.transforms.control_flow.programs import differentiable, tangent_aval, trace_program


def with_saved_outputs(program: Program, policy: Callable | None) -> tuple[Program, int]:
    """``program`` with the results of the equations ``policy`` calls saveable as trailing
    outputs, and how many those are (none without a policy)."""
    if policy is None:
        return program, 0
    saved = [
        v
        for eqn in program.equations
        if policy(eqn.primitive, *(a.aval for a in eqn.inputs), **eqn.params)
        for v in eqn.outputs
    ]
    extended = Program([], program.invars, program.equations, [*program.outvars, *saved])
    return extended, len(saved)


def jvp_with_saved(
    call: Program, num_saved: int, moving: Sequence[bool]
) -> tuple[Program, list[bool]]:
    """The JVP program of ``call`` (whose last ``num_saved`` outputs are saved values):
    (inputs..., saved values..., tangents of the ``moving`` inputs...) -> tangents of the
    outputs that have one. An equation whose results are all saved is not run again; its
    derivative rule reads the saved results. The saved values' own tangents are outputs too
    (a derivative of the derivative moves them). Returns it and which outputs have one."""
    count, kept = len(call.invars), len(call.outvars) - num_saved
    saved_vars = call.outvars[kept:]
    has: list[bool] = []

    def fn(*args):
        trace = JVPTrace(current_trace(), current_trace())
        rest = iter(args[count + num_saved :])
        env: dict[Var, Any] = {
            v: trace.wrap(p, next(rest) if m else None)
            for v, p, m in zip(call.invars, args[:count], moving, strict=True)
        }
        saved = dict(zip(saved_vars, args[count : count + num_saved], strict=True))

        def read(atom):
            return atom.value if isinstance(atom, Literal) else env[atom]

        try:
            for eqn in call.equations:
                ins = [read(a) for a in eqn.inputs]
                if eqn.outputs and all(o in saved for o in eqn.outputs):
                    outs = _from_saved(trace, eqn, ins, [saved[o] for o in eqn.outputs])
                else:
                    with tracing(trace):
                        out = eqn.primitive.bind(*ins, **eqn.params)
                    outs = out if eqn.primitive.multiple_results else [out]
                env.update(zip(eqn.outputs, outs, strict=True))
            pairs = [trace.pair(read(a)) for a in call.outvars]
        finally:
            trace.active = False
        has[:] = [t is not None and differentiable(aval_of(p)) for p, t in pairs]
        return [t for (_, t), h in zip(pairs, has, strict=True) if h]

    avals = [v.aval for v in call.invars] + [v.aval for v in saved_vars]
    avals += [tangent_aval(v.aval) for v, m in zip(call.invars, moving, strict=True) if m]
    return _pruned(trace_program(fn, avals)), list(has)


def _from_saved(trace: JVPTrace, eqn, ins: list, outs: list) -> list:
    """``eqn``'s results (the saved ``outs``) with their tangents from its jvp rule."""
    pairs = [trace.pair(x) for x in ins]
    tangents = [t for _, t in pairs]
    if all(t is None for t in tangents):
        return outs
    if eqn.primitive.rules.jvp is None:
        return _bound(trace, eqn, ins)  # raises the usual error: no derivative rule
    primal_out = outs if eqn.primitive.multiple_results else outs[0]
    with tracing(trace.tangent_trace):
        t_out = eqn.primitive.rules.jvp([p for p, _ in pairs], primal_out, tangents, **eqn.params)
    t_outs = t_out if eqn.primitive.multiple_results else [t_out]
    return [trace.wrap(p, t) for p, t in zip(outs, t_outs, strict=True)]


def _bound(trace: JVPTrace, eqn, ins: list) -> list:
    with tracing(trace):
        out = eqn.primitive.bind(*ins, **eqn.params)
    return out if eqn.primitive.multiple_results else [out]


def _pruned(program: Program) -> Program:
    """``program`` without the equations none of its outputs depend on (the recomputation
    that only fed a saved value)."""
    live = {a for a in program.outvars if isinstance(a, Var)}
    kept = []
    for eqn in reversed(program.equations):
        if any(o in live for o in eqn.outputs):
            kept.append(eqn)
            live.update(a for a in eqn.inputs if isinstance(a, Var))
    kept.reverse()
    return Program(program.constvars, program.invars, kept, program.outvars, program.consts)


__all__ = ["jvp_with_saved", "with_saved_outputs"]
