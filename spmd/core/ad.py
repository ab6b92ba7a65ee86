"""Forward and reverse differentiation over any trace: JVP tracing, linearization, transposition.

A ``JVPTrace`` carries a primal value and a tangent for each value of the function. Each
primitive runs on the primals in the enclosing (parent) trace, and its ``jvp`` rule computes
the output tangent in the *tangent* trace: the parent itself for forward mode, or a fresh
ProgramTrace for reverse mode. There the tangent computation is recorded as a linear Program
whose constants are the primal values it needs (the residuals); ``transpose`` walks that
Program backwards with each primitive's ``transpose`` rule, binding in whatever trace is
current, so the backward pass is traced, sharded and partitioned like any program.

Rule signatures (fields of a primitive's Rules):

- ``jvp(primals, primal_out, tangents, **params) -> tangent_out``: ``tangents[i]`` is None
  for a zero tangent; ``primal_out`` (a list for multiple results) is already computed.
  Return None for a zero tangent out.
- ``transpose(cotangent, *operands, **params) -> list``: the operands the program is linear
  in are ``UndefinedPrimal`` (their aval only); return one cotangent (or None) per operand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spmd.core.aval import ShapedArray
from spmd.core.axis_env import group_size
from spmd.core.primitive import Primitive, primitive_named
from spmd.core.program import Literal, Program, Var
from spmd.core.trace import ProgramTrace, Trace, Tracer, aval_of, current_trace, tracing
from spmd.errors import SpmdTypeError


class JVPTrace(Trace):
    """Values are (primal, tangent) pairs; primitives apply their ``jvp`` rules."""

    def __init__(self, parent: Trace, tangent_trace: Trace) -> None:
        self.parent = parent
        self.tangent_trace = tangent_trace
        self.active = True

    def pair(self, x: Any) -> tuple[Any, Any]:
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        return x, None  # a value of an enclosing trace, or a constant: no tangent here

    def process(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        pairs = [self.pair(a) for a in args]
        primals = [p for p, _ in pairs]
        tangents = [t for _, t in pairs]
        with tracing(self.parent):
            out = primitive.bind(*primals, **params)
        if all(t is None for t in tangents):
            return out
        rule = primitive.rules.jvp
        if rule is None:
            raise SpmdTypeError(
                f"{primitive.name} has no derivative rule (jvp), so it cannot be "
                f"differentiated; add one to its Rules in spmd/prims/, or stop the gradient "
                f"before it (spmd.lax.stop_gradient)."
            )
        with tracing(self.tangent_trace):
            t_out = rule(primals, out, tangents, **params)
        if primitive.multiple_results:
            return [self.wrap(p, t) for p, t in zip(out, t_out, strict=True)]
        return self.wrap(out, t_out)

    def wrap(self, primal: Any, tangent: Any) -> Any:
        return primal if tangent is None else JVPTracer(self, primal, tangent)


class JVPTracer(Tracer):
    """A primal value and its tangent, while a function is differentiated."""

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any) -> None:
        super().__init__(trace, Var(aval_of(primal)))
        self.primal = primal
        self.tangent = tangent

    def __repr__(self) -> str:
        return f"JVPTracer<{self.aval}>"

    def _why_not_concrete(self) -> str:
        return (
            f"a value being differentiated {self.aval} stands for a whole neighbourhood of "
            f"values, so Python cannot branch on it. Use spmd.numpy.where(cond, a, b)."
        )


def jvp_call(fun, primals: Sequence[Any], tangents: Sequence[Any | None], tangent_trace: Trace):
    """``fun(*primals)`` (a list of outputs) with tangents (None: zero), the tangents computed
    in ``tangent_trace``: returns the primal outputs and their tangents (None: zero)."""
    trace = JVPTrace(current_trace(), tangent_trace)
    tracers = [
        JVPTracer(trace, p, t) if t is not None else p
        for p, t in zip(primals, tangents, strict=True)
    ]
    try:
        with tracing(trace):
            outs = fun(*tracers)
    finally:
        trace.active = False
    pairs = [trace.pair(o) for o in outs]
    return [p for p, _ in pairs], [t for _, t in pairs]


def linearize(fun, primals: Sequence[Any], linear_in: Sequence[bool]):
    """``fun(*primals)`` and its derivative as a linear Program: (primal outputs, the Program
    from the tangents of the ``linear_in`` inputs to the tangents of the outputs that have
    one, and which outputs those are). The Program's constants are its residuals."""
    tangent_trace = ProgramTrace()
    tangents = [
        tangent_trace.new_arg(aval_of(p).strong()) if lin else None
        for p, lin in zip(primals, linear_in, strict=True)
    ]
    outs, out_tangents = jvp_call(fun, primals, tangents, tangent_trace)
    has_tangent = [t is not None for t in out_tangents]
    program = tangent_trace.finish(
        [t.node for t in tangents if t is not None], [t for t in out_tangents if t is not None]
    )
    return outs, program, has_tangent


@dataclass(frozen=True)
class UndefinedPrimal:
    """An operand the program is linear in: only its type is known when transposing."""

    aval: ShapedArray


def zeros(aval: ShapedArray) -> Any:
    """Zeros of ``aval``'s type, made where they are needed (no constant carried along)."""
    return primitive_named("broadcast_to").bind(aval.dtype.type(0), shape=aval.shape)


def add_cotangents(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return primitive_named("add").bind(a, b)


def transpose(program: Program, consts: Sequence[Any], cotangents: Sequence[Any | None]) -> list:
    """The cotangents of ``program``'s inputs (it is linear in them) for ``cotangents`` of its
    outputs (None: zero), computed in the current trace. Equations that read only constants
    (residuals) run forward first; the rest are transposed from the last to the first."""
    env: dict[Var, Any] = dict(zip(program.constvars, consts, strict=True))
    linear = set(program.invars)
    backward = []
    for eqn in program.equations:
        if any(isinstance(a, Var) and a in linear for a in eqn.inputs):
            linear.update(eqn.outputs)
            backward.append(eqn)
            continue
        args = [a.value if isinstance(a, Literal) else env[a] for a in eqn.inputs]
        out = eqn.primitive.bind(*args, **eqn.params)
        env.update(zip(eqn.outputs, out if eqn.primitive.multiple_results else [out], strict=True))
    cts: dict[Var, Any] = {}
    for var, ct in zip(program.outvars, cotangents, strict=True):
        if isinstance(var, Var) and var in linear and ct is not None:
            _accumulate(cts, var, ct)
    for eqn in reversed(backward):
        outs = [cts.pop(v, None) for v in eqn.outputs]
        if all(ct is None for ct in outs):
            continue
        rule = eqn.primitive.rules.transpose
        if rule is None:
            raise SpmdTypeError(
                f"{eqn.primitive.name} has no transpose rule, so reverse-mode derivatives "
                f"(grad, vjp) cannot pass through it; add one to its Rules in spmd/prims/, "
                f"or use spmd.jvp (forward mode)."
            )
        operands = [_operand(a, linear, env) for a in eqn.inputs]
        if eqn.primitive.multiple_results:
            outs = [
                ct if ct is not None else zeros(v.aval)
                for ct, v in zip(outs, eqn.outputs, strict=True)
            ]
            in_cts = rule(outs, *operands, **eqn.params)
        else:
            in_cts = rule(outs[0], *operands, **eqn.params)
        for atom, ct in zip(eqn.inputs, in_cts, strict=True):
            if ct is not None and isinstance(atom, Var) and atom in linear:
                _accumulate(cts, atom, ct)
    return [cts.get(v) for v in program.invars]


def _accumulate(cts: dict, var: Var, ct: Any) -> None:
    """Add ``ct`` to ``var``'s cotangent. Inside shard_map bodies a cotangent that varies
    over an axis its (unvarying) primal does not holds each device's part of the total
    (psum's transpose sums it), while an unvarying one is the total itself: before two such
    are added, the parts are summed. A varying primal's cotangent varies as it does, as in
    JAX, where an unvarying value's (grad's seed, psum's transpose's) is each device's own."""
    ct = _varying_as(ct, var.aval.vma)
    old = cts.get(var)
    if old is not None and _vma(old) != _vma(ct):
        old, ct = _summed_to(old, var.aval.vma), _summed_to(ct, var.aval.vma)
    cts[var] = add_cotangents(old, ct)


def _vma(x: Any) -> frozenset[str]:
    return x._vma() if isinstance(x, Tracer) else frozenset()


def _varying_as(ct: Any, vma: frozenset[str]) -> Any:
    """A cotangent of a value varying over ``vma`` typed as varying over them (pvary moves no
    data): each device's is its own, a part of the total where it meets an unvarying value
    (an implicit pvary, whose transpose sums it), not the total itself."""
    missing = tuple(sorted(vma - _vma(ct)))
    if not missing:
        return ct
    return primitive_named("pvary").bind(ct, axes=missing)


def _summed_to(ct: Any, vma: frozenset[str]) -> Any:
    extra = tuple(sorted(_vma(ct) - vma))
    if not extra:
        return ct
    return primitive_named("psum").bind(ct, axes=extra, size=group_size(extra), op="sum")


def _operand(atom: Any, linear: set, env: dict) -> Any:
    if isinstance(atom, Literal):
        return atom.value
    if atom in linear:
        return UndefinedPrimal(atom.aval)
    return env[atom]
