"""The primitives behind ``custom_jvp`` and ``custom_vjp``: calls of a traced function that
carry the user's derivative rule, so that the rule survives being recorded into a Program
and run again under jvp, vmap, shard_map and loop bodies.

- ``custom_jvp_call``: operands → the function's results. Its ``jvp`` runs the user's rule
  (``params["jvp"]``, a ``JvpRule`` or its batched form) in the tangent trace.
- ``custom_vjp_call``: likewise; its ``jvp`` runs ``fwd`` for the residuals and emits
  ``custom_lin`` on them and the tangents.
- ``custom_lin``: linear in its tangent operands; its transpose calls ``bwd``. Running it
  (forward mode) raises JAX's error: a custom_vjp function has no forward-mode derivative.

Each call's ``call`` parameter is the function's Program, with the values it closed over as
its first operands; the partitioner inlines it (spmd/core/inline.py); inside shard_map
bodies each device runs it on its blocks (``impl``), or, where it holds collectives, its
equations are emitted in place (``per_device``; an eager shard_map then runs compiled).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from spmd.core.ad import UndefinedPrimal, transpose, zeros
from spmd.core.custom_rules import closed_over_error
from spmd.core.interpret import compiled
from spmd.core.primitive import Primitive, Rules
from spmd.core.program import Program
from spmd.core.trace import ProgramTrace, aval_of, tracing
from spmd.core.varying import program_varying
from spmd.errors import SpmdTypeError
from spmd.prims.derivatives import bind, moveaxis
from spmd.transforms.bodies import run_program
from spmd.transforms.control_flow.partitioning import lower_call, refuse_collectives
from spmd.transforms.control_flow.programs import cotangent_as, operand_aval
from spmd.transforms.vmap import vmap


def batch_program(program: Program, dims: Sequence[int | None], size: int) -> Program:
    """``program`` with each input batched along ``dims[i]`` (None: not) by ``size``; every
    output batched along dimension 0."""
    trace = ProgramTrace()
    tracers = []
    for v, d in zip(program.invars, dims, strict=True):
        shape = v.aval.shape if d is None else (*v.aval.shape[:d], size, *v.aval.shape[d:])
        tracers.append(trace.new_arg(dataclasses.replace(v.aval, shape=shape)))
    mapped = vmap(lambda *xs: run_program(program, xs), in_axes=tuple(dims), axis_size=size)
    with tracing(trace):
        outs = mapped(*tracers)
    return trace.finish([t.node for t in tracers], list(outs))


def transpose_call(cotangents, *operands, call: Program, **params) -> list:
    """A call in a linear program: its body transposed (the operands that are not linear
    are its residuals)."""
    linear = [i for i, x in enumerate(operands) if isinstance(x, UndefinedPrimal)]
    rest = [i for i in range(len(operands)) if i not in linear]
    split = Program(
        [call.invars[i] for i in rest], [call.invars[i] for i in linear], call.equations,
        call.outvars,
    )  # fmt: skip
    found = iter(transpose(split, [operands[i] for i in rest], list(cotangents)))
    linear_set = set(linear)
    return [next(found) if i in linear_set else None for i in range(len(operands))]


def _vjp_call_transpose(cotangents, *operands, call, rule, name):
    raise SpmdTypeError(
        f"{name} (a custom_vjp function) was applied to a tangent, inside another function's "
        f"derivative rule; its bwd rule is for its own inputs' cotangents, so it cannot be "
        f"transposed there. Apply it to primal values only, or make it a custom_jvp function."
    )


def _call_impl(xp, *args, call, name, **params):
    refuse_collectives([call], name)
    return compiled(call, xp)(*args)


def _common_rules(**rules) -> Rules:
    return Rules(
        shape=lambda *avals, call, **params: [v.aval for v in call.outvars],
        impl=_call_impl,
        per_device=lower_call,
        varying=lambda eqn, operands: program_varying(eqn.params["call"], operands),
        inline=lambda params: params["call"],
        **rules,
    )


# --- custom_jvp -----------------------------------------------------------------------------


def _jvp_call_jvp(primals, primal_out, tangents, *, call, jvp, **params):
    _, out_tangents = jvp(list(primals), list(tangents))
    return out_tangents


def _jvp_call_batch(args, dims, *, call, jvp, **params):
    size = next(aval_of(a).shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
    outs = custom_jvp_call_p.bind(
        *args,
        call=batch_program(call, dims, size),
        jvp=BatchedJvpRule(jvp, tuple(dims), size),
        **params,
    )
    return outs, [0] * len(outs)


class BatchedJvpRule:
    """A flat jvp rule (``rule(operands, tangents) -> (outs, out_tangents)``, None for a zero
    tangent) applied to operands batched along ``dims``; results batched along 0."""

    def __init__(self, inner, dims: tuple, size: int) -> None:
        self.inner, self.dims, self.size = inner, dims, size

    def __repr__(self) -> str:
        return f"vmap({self.inner!r})"

    def __call__(self, operands: list, tangents: list) -> tuple[list, list]:
        moving = [i for i, t in enumerate(tangents) if t is not None]

        def member(ops, ts):
            full: list = [None] * len(ops)
            for i, t in zip(moving, ts, strict=True):
                full[i] = t
            outs, out_tangents = self.inner(list(ops), full)
            out_tangents = [
                t if t is not None else zeros(aval_of(o).strong())
                for o, t in zip(outs, out_tangents, strict=True)
            ]
            return list(outs), out_tangents

        in_axes = (list(self.dims), [self.dims[i] for i in moving])
        mapped = vmap(member, in_axes=in_axes, axis_size=self.size)
        return mapped(list(operands), [tangents[i] for i in moving])


custom_jvp_call_p = Primitive(
    "custom_jvp_call",
    _common_rules(jvp=_jvp_call_jvp, batch=_jvp_call_batch, transpose=transpose_call),
    multiple_results=True,
)


# --- custom_vjp -----------------------------------------------------------------------------


def diff_tangents(rule, primals: list, tangents: list) -> list:
    """The tangents of a custom function's differentiable operands (zeros for None). The
    values it closed over (its first ``rule.num_consts`` operands) must have none; those of
    its ``nondiff_argnums`` are not differentiated."""
    if any(t is not None for t in tangents[: rule.num_consts]):
        raise closed_over_error(rule.name)
    return [
        t if t is not None else zeros(aval_of(p).strong())
        for p, t in zip(primals[rule.num_static :], tangents[rule.num_static :], strict=True)
    ]


def _vjp_call_jvp(primals, primal_out, tangents, *, call, rule, name):
    # fwd runs here in the tangent trace, where the primals are constants (unvarying): the
    # outputs' mesh axes are those of the call's outputs, computed in the parent trace.
    return vjp_rule_jvp(rule, name, list(primals), list(tangents), primal_out)[1]


def vjp_rule_jvp(rule, name: str, primals: list, tangents: list, typed_as=None):
    """A custom_vjp function's outputs (``rule.fwd`` on ``primals``) and their tangents:
    ``custom_lin`` on the residuals and ``tangents`` (None: zero), which bwd transposes and
    whose cotangents are typed as the outputs (or as ``typed_as``, where given)."""
    outs, residuals, res_tree = rule.fwd(primals)
    moving = diff_tangents(rule, primals, tangents)
    return outs, custom_lin_p.bind(
        *residuals,
        *moving,
        rule=rule,
        res_tree=res_tree,
        num_res=len(residuals),
        out_avals=tuple(aval_of(o).strong() for o in outs),
        out_vma=tuple(operand_aval(o).vma for o in (outs if typed_as is None else typed_as)),
        name=name,
    )


def _vjp_call_batch(args, dims, *, call, rule, name):
    size = next(aval_of(a).shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
    outs = custom_vjp_call_p.bind(
        *args,
        call=batch_program(call, dims, size),
        rule=BatchedVjpRule(rule, tuple(dims), size),
        name=name,
    )
    return outs, [0] * len(outs)


class BatchedVjpRule:
    """A flat fwd/bwd pair (see custom_derivatives.VjpRule) for operands batched along
    ``dims``: outputs, residuals and cotangents batched along 0, each cotangent then laid
    out as its operand (summed over the batch for an operand that is not batched)."""

    def __init__(self, inner, dims: tuple, size: int) -> None:
        self.inner, self.dims, self.size = inner, dims, size
        self.num_consts, self.num_static = inner.num_consts, inner.num_static
        self.name = inner.name

    def __repr__(self) -> str:
        return f"vmap({self.inner!r})"

    def fwd(self, operands: list):
        store: dict = {}

        def member(ops):
            outs, residuals, store["tree"] = self.inner.fwd(list(ops))
            return list(outs), list(residuals)

        outs, residuals = vmap(member, in_axes=(list(self.dims),), axis_size=self.size)(
            list(operands)
        )
        return outs, residuals, store["tree"]

    def bwd(self, residuals: list, res_tree, cotangents: list) -> list:
        diff_dims = self.dims[self.num_static :]

        def member(res, cts):
            found = self.inner.bwd(list(res), res_tree, list(cts))
            return [
                ct if ct is not None else zeros(aval)
                for ct, aval in zip(found, self.inner.member_avals(), strict=True)
            ]

        found = vmap(member, in_axes=(0, 0), axis_size=self.size)(list(residuals), list(cotangents))
        return [
            bind("reduce_sum", ct, axes=(0,), keepdims=False, dtype=None)
            if d is None
            else moveaxis(ct, 0, d)
            for ct, d in zip(found, diff_dims, strict=True)
        ]

    def member_avals(self) -> list:
        return [
            a
            if d is None
            else dataclasses.replace(a, shape=(*a.shape[:d], self.size, *a.shape[d:]))
            for a, d in zip(self.inner.member_avals(), self.dims[self.num_static :], strict=True)
        ]


custom_vjp_call_p = Primitive(
    "custom_vjp_call",
    _common_rules(jvp=_vjp_call_jvp, batch=_vjp_call_batch, transpose=_vjp_call_transpose),
    multiple_results=True,
)


# --- custom_lin: the linear part of a custom_vjp function -----------------------------------


def forward_mode_error(name: str) -> SpmdTypeError:
    return SpmdTypeError(
        f"can't apply forward-mode autodiff (jvp) to a custom_vjp function: {name} has only a "
        f"reverse-mode rule (defvjp). Use spmd.grad or spmd.vjp (reverse mode), or define it "
        f"with spmd.custom_jvp instead."
    )


def _lin_forward(*args, name, **params):
    raise forward_mode_error(name)


def _lin_transpose(cotangents, *operands, rule, res_tree, num_res, out_avals, out_vma, name):
    # bwd is written for cotangents typed as the outputs (JAX's): one that varies where its
    # output does not holds each device's part, and is summed first.
    cotangents = [
        ct if ct is None else cotangent_as(ct, aval.varying(vma))
        for ct, aval, vma in zip(cotangents, out_avals, out_vma, strict=True)
    ]
    found = rule.bwd(list(operands[:num_res]), res_tree, cotangents)
    return [None] * num_res + list(found)


def _lin_shape(*avals, out_avals, **params):
    return list(out_avals)


custom_lin_p = Primitive(
    "custom_lin",
    Rules(
        shape=_lin_shape,
        impl=lambda xp, *args, **params: _lin_forward(**params),
        jvp=lambda primals, out, tangents, **params: _lin_forward(**params),
        batch=lambda args, dims, **params: _lin_forward(**params),
        transpose=_lin_transpose,
    ),
    multiple_results=True,
)
