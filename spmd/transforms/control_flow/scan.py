"""The ``scan`` primitive (lax.scan, lax.map, fori_loop with static bounds): the body
``(consts, carry, x) -> (carry, y)`` over the leading axis of the xs, the ys stacked.
Operands: ``num_consts`` constants (the body's captured values first), ``num_carry`` initial
carries, then the xs. Reverse mode is spmd/transforms/control_flow/scan_transpose.py's."""

from __future__ import annotations

import dataclasses

from spmd.core.ad import zeros
from spmd.core.interpret import compiled
from spmd.core.primitive import Primitive, Rules
from spmd.core.program import Program
from spmd.core.varying import program_varying
from spmd.errors import ShapeError
from spmd.prims.derivatives import batch_size, batch_to_front, moveaxis
from spmd.runtime.buffers import Stacked
from spmd.transforms.control_flow.partitioning import lower_scan, refuse_collectives, scan_sharding
from spmd.transforms.control_flow.programs import (
    batch_program,
    close,
    differentiable,
    jvp_program,
    split,
    to_front,
)
from spmd.transforms.control_flow.scan_transpose import scan_transpose


def bind_scan(body: Program, consts, init, xs, length: int, reverse: bool) -> list:
    """A scan equation over ``body`` (not closed: its constants lead the operands)."""
    (closed,), lead = close([body])
    return scan_p.bind(
        *lead,
        *consts,
        *init,
        *xs,
        body=closed,
        num_consts=len(lead) + len(consts),
        num_carry=len(init),
        length=length,
        reverse=reverse,
    )


def _shape(*avals, body, num_consts, num_carry, length, reverse):
    for k, x in enumerate(avals[num_consts + num_carry :]):
        if x.ndim == 0 or x.shape[0] != length:
            raise ShapeError(f"scan: xs operand {k} ({x}) has no leading axis of length {length}.")
    carry = list(avals[num_consts : num_consts + num_carry])
    ys = [dataclasses.replace(a, shape=(length, *a.shape)) for a in body.out_avals[num_carry:]]
    return carry + ys


def _impl(xp, *args, body, num_consts, num_carry, length, reverse):
    refuse_collectives([body], "scan")
    consts, carry, xs = split(args, num_consts, num_carry)
    stacked = [Stacked(xp, length) for _ in body.outvars[num_carry:]]
    run_body = compiled(body, xp)
    for i in reversed(range(length)) if reverse else range(length):
        outs = run_body(*consts, *carry, *(x[i, ...] for x in xs))
        carry = outs[:num_carry]
        for ys, y in zip(stacked, outs[num_carry:], strict=True):
            ys.put(i, y)
    ys = [
        found.result(a.shape, a.dtype)
        for found, a in zip(stacked, body.out_avals[num_carry:], strict=True)
    ]
    return [*carry, *ys]


def _varying(eqn, operands):
    p = eqn.params
    consts, carry, xs = split(operands, p["num_consts"], p["num_carry"])
    carry = [frozenset(v) for v in carry]
    while True:  # the axes a carry may vary over after any number of steps
        outs = program_varying(p["body"], [*consts, *carry, *xs])
        new = [c | o for c, o in zip(carry, outs[: p["num_carry"]], strict=True)]
        if new == carry:
            return carry + outs[p["num_carry"] :]
        carry = new


def _jvp(primals, out, tangents, *, body, num_consts, num_carry, length, reverse):
    consts, init, xs = split(primals, num_consts, num_carry)
    consts_t, init_t, xs_t = split(tangents, num_consts, num_carry)
    carry_avals = [v.aval for v in body.invars[num_consts : num_consts + num_carry]]
    const_moving = [t is not None for t in consts_t]
    xs_moving = [t is not None for t in xs_t]
    carry_moving = [
        t is not None and differentiable(a) for t, a in zip(init_t, carry_avals, strict=True)
    ]
    ys_wanted = [differentiable(a) for a in body.out_avals[num_carry:]]
    while True:
        joint, has = jvp_program(
            body, const_moving + carry_moving + xs_moving, carry_moving + [False] * len(ys_wanted)
        )
        new = [m or h for m, h in zip(carry_moving, has[:num_carry], strict=True)]
        if new == carry_moving:
            break
        carry_moving = new
    ys_moving = has[num_carry:]
    nc, n, nx = num_consts, num_carry, len(xs)
    mc, mn = sum(const_moving), sum(carry_moving)
    v = joint.invars
    primal_c, primal_n, primal_x = v[:nc], v[nc : nc + n], v[nc + n : nc + n + nx]
    tan = v[nc + n + nx :]
    joint.invars = [*primal_c, *tan[:mc], *primal_n, *tan[mc : mc + mn], *primal_x, *tan[mc + mn :]]
    o = joint.outvars
    ny = len(ys_wanted)
    joint.outvars = [*o[:n], *o[n + ny : n + ny + mn], *o[n : n + ny], *o[n + ny + mn :]]
    init_tangents = [
        t if t is not None else zeros(a.strong())
        for t, a, m in zip(init_t, carry_avals, carry_moving, strict=True)
        if m
    ]
    outs = bind_scan(
        joint,
        [*consts, *(t for t in consts_t if t is not None)],
        [*init, *init_tangents],
        [*xs, *(t for t in xs_t if t is not None)],
        length,
        reverse,
    )
    carry_t, ys_t = outs[n : n + mn], outs[n + mn + ny :]
    found = []
    for moving, ts in ((carry_moving, iter(carry_t)), (ys_moving, iter(ys_t))):
        found += [next(ts) if m else None for m in moving]
    return found


def _batch(args, dims, *, body, num_consts, num_carry, length, reverse):
    size = batch_size(args, dims)
    consts, init, xs = split(args, num_consts, num_carry)
    const_d, init_d, xs_d = split(dims, num_consts, num_carry)
    const_b = [d is not None for d in const_d]
    xs_b = [d is not None for d in xs_d]
    carry_b = [d is not None for d in init_d]
    while True:
        program, out_b = batch_program(
            body,
            const_b + carry_b + xs_b,
            size,
            carry_b + [False] * (len(body.outvars) - num_carry),
        )
        new = [c or o for c, o in zip(carry_b, out_b[:num_carry], strict=True)]
        if new == carry_b:
            break
        carry_b = new
    consts = [to_front(c, d) for c, d in zip(consts, const_d, strict=True)]
    init = [
        batch_to_front(c, d, size) if b else c
        for c, d, b in zip(init, init_d, carry_b, strict=True)
    ]
    xs = [x if d is None else moveaxis(x, d, 1) for x, d in zip(xs, xs_d, strict=True)]
    outs = bind_scan(program, consts, init, xs, length, reverse)
    out_dims = [0 if b else None for b in carry_b]
    out_dims += [1 if b else None for b in out_b[num_carry:]]
    return outs, out_dims


def _transpose(cts, *operands, **params):
    return scan_transpose(cts, operands, bind_scan, **params)


scan_p = Primitive(
    "scan",
    Rules(
        shape=_shape,
        impl=_impl,
        varying=_varying,
        jvp=_jvp,
        transpose=_transpose,
        batch=_batch,
        sharding=scan_sharding,
        per_device=lower_scan,
    ),
    multiple_results=True,
)
