"""The ``while`` primitive (lax.while_loop, and fori_loop with traced bounds): the body
applied to the carry while the condition holds. Operands: the condition's captured values,
the body's, then the carry."""

from __future__ import annotations

from spmd.core.interpret import compiled
from spmd.core.primitive import Primitive, Rules
from spmd.core.program import Program, Var
from spmd.core.varying import program_varying
from spmd.errors import SpmdTypeError
from spmd.prims.derivatives import batch_size, batch_to_front, bind
from spmd.transforms.control_flow.partitioning import (
    lower_while,
    refuse_collectives,
    while_sharding,
)
from spmd.transforms.control_flow.programs import (
    batch_program,
    close,
    differentiable,
    jvp_program,
    run_program,
    select_members,
    split,
    to_front,
    trace_program,
)


def bind_while(cond: Program, body: Program, cond_consts, body_consts, init) -> list:
    """A while equation (``cond`` and ``body`` take their constants first, then the carry)."""
    return while_p.bind(
        *cond_consts,
        *body_consts,
        *init,
        cond_program=cond,
        body_program=body,
        cond_nconsts=len(cond_consts),
        body_nconsts=len(body_consts),
    )


def _parts(args, cond_nconsts, body_nconsts):
    return split(args, cond_nconsts, body_nconsts)


def _shape(*avals, cond_program, body_program, cond_nconsts, body_nconsts):
    return list(avals[cond_nconsts + body_nconsts :])


def _impl(xp, *args, cond_program, body_program, cond_nconsts, body_nconsts):
    refuse_collectives([cond_program, body_program], "while_loop")
    cond_consts, body_consts, carry = _parts(args, cond_nconsts, body_nconsts)
    run_cond, run_body = compiled(cond_program, xp), compiled(body_program, xp)
    while bool(run_cond(*cond_consts, *carry)[0]):
        carry = run_body(*body_consts, *carry)
    return carry


def _varying(eqn, operands):
    p = eqn.params
    cond_consts, body_consts, carry = _parts(operands, p["cond_nconsts"], p["body_nconsts"])
    carry = [frozenset(v) for v in carry]
    while True:  # the axes a carry may vary over after any number of steps
        (pred,) = program_varying(p["cond_program"], [*cond_consts, *carry])
        outs = program_varying(p["body_program"], [*body_consts, *carry])
        new = [c | o | pred for c, o in zip(carry, outs, strict=True)]
        if new == carry:
            return carry
        carry = new


def _jvp(primals, out, tangents, *, cond_program, body_program, cond_nconsts, body_nconsts):
    cond_consts, body_consts, init = _parts(primals, cond_nconsts, body_nconsts)
    _, body_t, init_t = _parts(tangents, cond_nconsts, body_nconsts)
    n = len(init)
    const_moving = [t is not None for t in body_t]
    carry_moving = [
        t is not None and differentiable(v.aval)
        for t, v in zip(init_t, body_program.invars[body_nconsts:], strict=True)
    ]
    while True:
        joint, has = jvp_program(body_program, const_moving + carry_moving, carry_moving)
        new = [m or h for m, h in zip(carry_moving, has, strict=True)]
        if new == carry_moving:
            break
        carry_moving = new
    # joint: (consts, carry, consts', carry') -> (carry, carry'): its carry is (carry, carry').
    nb, nm = len(body_consts), sum(const_moving)
    joint.invars = [
        *joint.invars[:nb],
        *joint.invars[nb + n : nb + n + nm],
        *joint.invars[nb : nb + n],
        *joint.invars[nb + n + nm :],
    ]
    extra = [
        Var(v.aval.strong())
        for v, m in zip(cond_program.invars[cond_nconsts:], carry_moving, strict=True)
        if m
    ]
    cond = Program([], [*cond_program.invars, *extra], cond_program.equations, cond_program.outvars)
    (body,), lead = close([joint])
    init_tangents = [
        t if t is not None else bind("broadcast_to", v.aval.dtype.type(0), shape=v.aval.shape)
        for t, v, m in zip(init_t, body_program.invars[body_nconsts:], carry_moving, strict=True)
        if m
    ]
    outs = bind_while(
        cond,
        body,
        cond_consts,
        [*lead, *body_consts, *(t for t in body_t if t is not None)],
        [*init, *init_tangents],
    )
    found, rest = [], iter(outs[n:])
    for m in carry_moving:
        found.append(next(rest) if m else None)
    return found


def _transpose(cts, *operands, **params):
    raise SpmdTypeError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
        "dynamic start/stop values: the number of steps is not known in advance, so the "
        "values the backward pass needs cannot be stored. Try lax.scan, or lax.fori_loop with "
        "static (Python int) start/stop, or forward mode (spmd.jvp)."
    )


def _batch(args, dims, *, cond_program, body_program, cond_nconsts, body_nconsts):
    size = batch_size(args, dims)
    args = [to_front(a, d) for a, d in zip(args, dims, strict=True)]
    cond_b, body_b, carry_b = _parts([d is not None for d in dims], cond_nconsts, body_nconsts)
    while True:
        _, pred_b = batch_program(cond_program, cond_b + carry_b, size, [False])
        if pred_b[0]:
            carry_b = [True] * len(carry_b)
        _, out_b = batch_program(body_program, body_b + carry_b, size, carry_b)
        new = [c or o for c, o in zip(carry_b, out_b, strict=True)]
        if new == carry_b:
            break
        carry_b = new
    cond_consts, body_consts, init = _parts(args, cond_nconsts, body_nconsts)
    init = [
        batch_to_front(x, None, size) if b and d is None else x
        for x, b, d in zip(init, carry_b, _parts(dims, cond_nconsts, body_nconsts)[2], strict=True)
    ]
    cond_batched, _ = batch_program(cond_program, cond_b + carry_b, size, [False])
    body_batched, _ = batch_program(body_program, body_b + carry_b, size, carry_b)
    if not pred_b[0]:
        (cond,), cond_lead = close([cond_batched])
        (body,), body_lead = close([body_batched])
        outs = bind_while(cond, body, [*cond_lead, *cond_consts], [*body_lead, *body_consts], init)
        return outs, [0 if b else None for b in carry_b]
    # A batched predicate: run while any member's holds; members that are done keep their carry.
    (cond,), cond_lead = close([cond_batched])
    (body,), body_lead = close([body_batched])
    nc, nb = len(cond_lead) + len(cond_consts), len(body_lead) + len(body_consts)

    def any_cond(*xs):
        (pred,) = _run(cond, xs)
        return [bind("reduce_any", pred, axes=(0,), keepdims=False)]

    def guarded_body(*xs):
        c_consts, b_consts, carry = split(xs, nc, nb)
        (pred,) = _run(cond, [*c_consts, *carry])
        new = _run(body, [*b_consts, *carry])
        return [select_members(pred, n, c) for n, c in zip(new, carry, strict=True)]

    carry_avals = [v.aval for v in body.invars[len(body.invars) - len(init) :]]
    c_avals = [v.aval for v in cond.invars[:nc]]
    b_avals = [v.aval for v in body.invars[:nb]]
    any_program = trace_program(any_cond, c_avals + carry_avals)
    guarded = trace_program(guarded_body, c_avals + b_avals + carry_avals)
    (any_closed,), any_lead = close([any_program])
    (guarded_closed,), guarded_lead = close([guarded])
    outs = bind_while(
        any_closed,
        guarded_closed,
        [*any_lead, *cond_lead, *cond_consts],
        [*guarded_lead, *cond_lead, *cond_consts, *body_lead, *body_consts],
        init,
    )
    return outs, [0] * len(outs)


def _run(program, args):
    return run_program(program, list(args))


while_p = Primitive(
    "while",
    Rules(
        shape=_shape,
        impl=_impl,
        varying=_varying,
        jvp=_jvp,
        transpose=_transpose,
        batch=_batch,
        sharding=while_sharding,
        per_device=lower_while,
    ),
    multiple_results=True,
)
