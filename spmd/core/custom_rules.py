"""Running a user's derivative rule (custom_jvp's jvp, custom_vjp's fwd) directly under a JVP
trace, as JAX's ``JVPTrace.process_custom_jvp_call`` does.

The rule gets the primals and tangents of the call's arguments. It runs under a ``RuleTrace``
that sends each primitive to the JVP trace's tangent trace when one of its operands is a
tangent there, and to the parent trace otherwise: the rule's primal work runs on the primals
as they are (concrete values under grad, so Python may branch on them), its tangent work is
recorded in grad's linear program. A value of the JVP trace itself reaching the rule means
the function closed over a value being differentiated, which a rule cannot account for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spmd.core.ad import JVPTrace, JVPTracer, zeros
from spmd.core.trace import Trace, Tracer, aval_of, current_trace, tracing
from spmd.errors import SpmdTypeError


def closed_over_error(name: str) -> SpmdTypeError:
    return SpmdTypeError(
        f"{name} closes over a value that is being differentiated (a traced value from "
        f"outside the function); a custom derivative rule cannot account for it. Pass that "
        f"value to {name} as an argument instead."
    )


class RuleTrace(Trace):
    """While a rule of the JVP trace ``jvp`` runs: each primitive goes to ``jvp``'s tangent
    trace or to its parent, by its operands."""

    def __init__(self, jvp: JVPTrace, name: str) -> None:
        self.jvp = jvp
        self.name = name

    def target(self, args: Sequence[Any]) -> Trace:
        """The trace that a primitive applied to ``args`` runs in."""
        for x in args:
            if isinstance(x, JVPTracer) and x._trace is self.jvp:
                raise closed_over_error(self.name)
        tangent_trace = self.jvp.tangent_trace
        if tangent_trace is not self.jvp.parent and any(
            isinstance(x, Tracer) and x._trace is tangent_trace for x in args
        ):
            return tangent_trace
        return self.jvp.parent

    def process(self, primitive, args: tuple, params: dict) -> Any:
        with tracing(self.target(args)):
            return primitive.bind(*args, **params)


def home_trace(leaves: Sequence[Any]) -> Trace:
    """The trace that a call on ``leaves`` belongs to: the current one, or, inside a rule,
    the trace its primitives would run in."""
    trace = current_trace()
    while isinstance(trace, RuleTrace):
        trace = trace.target(leaves)
    return trace


def holds_any(trace: Trace, leaves: Sequence[Any]) -> bool:
    """Whether ``trace`` is a JVP trace and some of ``leaves`` are its values."""
    return isinstance(trace, JVPTrace) and any(
        isinstance(x, JVPTracer) and x._trace is trace for x in leaves
    )


def apply_rule(
    trace: JVPTrace,
    rule: Callable[[list, list], tuple[list, list]],
    args: Sequence[Any],
    name: str,
    instantiate: Sequence[bool] | None = None,
) -> list:
    """``rule(primals, tangents) -> (outs, out_tangents)`` (None: a zero tangent) applied to
    ``args``, values of ``trace`` or not, under a RuleTrace; returns the outputs as values of
    ``trace``. Where ``instantiate[i]``, a zero tangent of argument ``i`` is made as zeros in
    the tangent trace rather than given as None."""
    pairs = [trace.pair(x) for x in args]
    primals = [p for p, _ in pairs]
    tangents = [t for _, t in pairs]
    if instantiate is not None:
        with tracing(trace.tangent_trace):
            tangents = [
                zeros(aval_of(p).strong()) if t is None and fill else t
                for p, t, fill in zip(primals, tangents, instantiate, strict=True)
            ]
    with tracing(RuleTrace(trace, name)):
        outs, out_tangents = rule(primals, tangents)
    if any(isinstance(x, JVPTracer) and x._trace is trace for x in [*outs, *out_tangents]):
        raise closed_over_error(name)
    return [trace.wrap(o, t) for o, t in zip(outs, out_tangents, strict=True)]
