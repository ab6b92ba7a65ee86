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
from spmd.core.trace import Tracer, aval_of, current_trace
from spmd.core.varying import program_varying
from spmd.errors import SpmdValueError
from spmd.transforms.control_flow.partitioning import lower_call, refuse_collectives
from spmd.transforms.control_flow.programs import close, jvp_program
from spmd.transforms.custom_calls import batch_program, transpose_call
from spmd.transforms.remat_saved import jvp_with_saved, with_saved_outputs
from spmd.transforms.traced import hoisted, trace_leaves
from spmd.tree_util import tree_flatten, tree_unflatten


def _impl(xp, *args, call: Program, name: str, num_saved: int):
    refuse_collectives([call], name)
    return compiled(call, xp)(*args)


def _jvp(primals, primal_out, tangents, *, call: Program, name: str, num_saved: int):
    moving = [t is not None for t in tangents]
    if num_saved:
        saved = list(primal_out[len(primal_out) - num_saved :])
        program, has = jvp_with_saved(call, num_saved, moving)
    else:
        saved = []
        program, has = jvp_program(call, moving, [False] * len(call.outvars), primals_out=False)
    operands = [*primals, *saved, *(t for t in tangents if t is not None)]
    rest = iter(_bind_closed(program, operands, name, 0))
    return [next(rest) if h else None for h in has]


def _batch(args, dims, *, call: Program, name: str, num_saved: int):
    size = next(aval_of(a).shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
    outs = _bind_closed(batch_program(call, dims, size), args, name, num_saved)
    return outs, [0] * len(outs)


def _bind_closed(program: Program, operands, name: str, num_saved: int) -> list:
    """A ``remat_call`` of a traced ``program`` (the values it captured lead its operands)."""
    (closed,), consts = close([program])
    return remat_call_p.bind(*consts, *operands, call=closed, name=name, num_saved=num_saved)


def _transpose(cotangents, *operands, call: Program, name: str, num_saved: int):
    return transpose_call(cotangents, *operands, call=call)


remat_call_p = Primitive(
    "remat_call",
    Rules(
        shape=lambda *avals, call, name, num_saved: [v.aval for v in call.outvars],
        impl=_impl,
        jvp=_jvp,
        transpose=_transpose,
        batch=_batch,
        per_device=lower_call,
        varying=lambda eqn, operands: program_varying(eqn.params["call"], operands),
        inline=lambda params: params["call"],
    ),
    multiple_results=True,
)


def checkpoint(
    fun: Callable,
    *,
    prevent_cse: bool = True,
    policy: Callable | None = None,
    static_argnums: int | Sequence[int] = (),
) -> Callable:
    """``fun``, differentiated by recomputing its intermediates in the backward pass instead
    of keeping them (``jax.checkpoint`` / ``jax.remat``): only its inputs are saved, also
    per step inside a ``lax.scan`` body. ``policy`` (see ``spmd.checkpoint_policies``)
    names intermediates to keep as well; ``static_argnums`` are Python values fixed into the
    traced function; ``prevent_cse`` is accepted for JAX code.
    Example: ``grad(lambda w: checkpoint(layer)(w, x).sum())(w)``.
    """
    del prevent_cse  # each remat_call is its own equation: nothing merges it with another
    static = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)
    name = getattr(fun, "__name__", "checkpoint")

    @functools.wraps(fun)
    def rematerialized(*args: Any, **kwargs: Any) -> Any:
        _check_static(static, len(args), name)
        fixed = {k % len(args) for k in static}
        dynamic = tuple(a for k, a in enumerate(args) if k not in fixed)
        leaves, in_tree = tree_flatten((dynamic, kwargs))
        if not _differentiated(leaves):
            return fun(*args, **kwargs)

        def flat(dynamic_args, kw):
            it = iter(dynamic_args)
            full = [args[k] if k in fixed else next(it) for k in range(len(args))]
            return fun(*full, **kw)

        traced, out_tree = trace_leaves(lambda xs: flat(*tree_unflatten(in_tree, xs)), leaves)
        program, consts = hoisted(traced)
        program, num_saved = with_saved_outputs(program, policy)
        outs = remat_call_p.bind(*consts, *leaves, call=program, name=name, num_saved=num_saved)
        return tree_unflatten(out_tree, outs[: len(outs) - num_saved])

    return rematerialized


def _check_static(static: set[int], count: int, name: str) -> None:
    wrong = sorted(k for k in static if not -count <= k < count)
    if wrong:
        raise SpmdValueError(
            f"checkpoint({name}): static_argnums {wrong} name no positional argument of the "
            f"{count} it was called with; give indices below {count}, or pass those arguments."
        )


def _differentiated(leaves: list) -> bool:
    """Whether a derivative may pass through: some operand is traced (outside every
    transformation there is nothing to recompute)."""
    trace = current_trace()
    return isinstance(trace, JVPTrace) or any(isinstance(x, Tracer) for x in leaves)


remat = checkpoint

__all__ = ["checkpoint", "remat", "remat_call_p"]
