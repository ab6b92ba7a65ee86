"""``checkpoint`` / ``remat``: a function whose intermediates the backward pass recomputes
instead of keeping, as JAX's ``jax.checkpoint``.

A call traces the function into a Program and binds ``remat_call`` with it. Its jvp binds a
second ``remat_call`` holding the function's JVP program, from the primal inputs and their
tangents to the output tangents, so that a linear program (grad's, or the backward scan of a
``lax.scan``) holds one equation whose only known operands are the function's inputs: those
are all that is saved. Transposing it runs the JVP program's primal part forward again, then
its linear part backward (spmd/core/ad.py ``transpose``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from spmd.core.ad import JVPTrace
from spmd.core.interpret import compiled
from spmd.core.primitive import Primitive, Rules
from spmd.core.program import Program
from spmd.core.trace import ProgramTrace, Tracer, aval_of, current_trace, tracing
from spmd.core.varying import program_varying
from spmd.transforms.control_flow.partitioning import lower_call, refuse_collectives
from spmd.transforms.control_flow.programs import jvp_program
from spmd.transforms.custom_calls import _transpose_call, batch_program
from spmd.tree_util import tree_flatten, tree_unflatten


def _impl(xp, *args, call: Program, name: str):
    refuse_collectives([call], name)
    return compiled(call, xp)(*args)


def _jvp(primals, primal_out, tangents, *, call: Program, name: str):
    moving = [t is not None for t in tangents]
    program, has = jvp_program(call, moving, [False] * len(call.outvars), primals_out=False)
    found = remat_call_p.bind(
        *primals, *(t for t in tangents if t is not None), call=program, name=name
    )
    rest = iter(found)
    return [next(rest) if h else None for h in has]


def _batch(args, dims, *, call: Program, name: str):
    size = next(aval_of(a).shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
    outs = remat_call_p.bind(*args, call=batch_program(call, dims, size), name=name)
    return outs, [0] * len(outs)


remat_call_p = Primitive(
    "remat_call",
    Rules(
        shape=lambda *avals, call, name: [v.aval for v in call.outvars],
        impl=_impl,
        jvp=_jvp,
        transpose=lambda cts, *operands, call, name: _transpose_call(cts, *operands, call=call),
        batch=_batch,
        per_device=lower_call,
        varying=lambda eqn, operands: program_varying(eqn.params["call"], operands),
        inline=lambda params: params["call"],
    ),
    multiple_results=True,
)


def _traced(fun: Callable, leaves: list, in_tree) -> tuple[Program, list, Any]:
    """``fun`` traced on ``leaves``' types: its Program with the values it closes over as
    its first inputs, those values, and its output tree."""
    trace = ProgramTrace()
    tracers = [trace.new_arg(aval_of(x)) for x in leaves]
    with tracing(trace):
        out = fun(*tree_unflatten(in_tree, tracers))
    out_leaves, out_tree = tree_flatten(out)
    program = trace.finish([t.node for t in tracers], out_leaves)
    hoisted = Program([], program.constvars + program.invars, program.equations, program.outvars)
    return hoisted, list(program.consts), out_tree


def checkpoint(
    fun: Callable,
    *,
    prevent_cse: bool = True,
    policy: Callable | None = None,
    static_argnums: int | Sequence[int] = (),
) -> Callable:
    """``fun``, differentiated by recomputing its intermediates in the backward pass instead
    of keeping them (``jax.checkpoint`` / ``jax.remat``): only its inputs are saved, also
    per step inside a ``lax.scan`` body. ``static_argnums`` are Python values fixed into the
    traced function; ``policy`` and ``prevent_cse`` are accepted for JAX code (every
    intermediate is recomputed). Example: ``grad(lambda w: checkpoint(layer)(w, x).sum())(w)``.
    """
    del prevent_cse, policy
    static = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)
    name = getattr(fun, "__name__", "checkpoint")

    @functools.wraps(fun)
    def rematerialized(*args: Any, **kwargs: Any) -> Any:
        fixed = {k % len(args) for k in static} if args else set()
        dynamic = tuple(a for k, a in enumerate(args) if k not in fixed)
        leaves, in_tree = tree_flatten((dynamic, kwargs))
        if not _differentiated(leaves):
            return fun(*args, **kwargs)

        def flat(dynamic_args, kw):
            it = iter(dynamic_args)
            full = [args[k] if k in fixed else next(it) for k in range(len(args))]
            return fun(*full, **kw)

        program, consts, out_tree = _traced(flat, leaves, in_tree)
        outs = remat_call_p.bind(*consts, *leaves, call=program, name=name)
        return tree_unflatten(out_tree, outs)

    return rematerialized


def _differentiated(leaves: list) -> bool:
    """Whether a derivative may pass through: some operand is traced (outside every
    transformation there is nothing to recompute)."""
    trace = current_trace()
    return isinstance(trace, JVPTrace) or any(isinstance(x, Tracer) for x in leaves)


remat = checkpoint

__all__ = ["checkpoint", "remat", "remat_call_p"]
