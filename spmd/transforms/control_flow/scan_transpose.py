"""Reverse mode of a scan: the transpose of a scan that is linear in some of its operands
(the joint jvp scan: linear in the tangents, not in the primal carry).

The body splits into its known part (equations that read no linear value) and its linear
part. A forward scan runs the known part and stacks the residuals (the known values the
linear part reads; those of the constants are passed whole, and slices of known ``xs`` are
read from ``xs`` itself); a reversed scan then runs the
linear part's transpose on them, carrying the carry's cotangent and summing the constants'.
"""

from __future__ import annotations

from spmd.core.ad import UndefinedPrimal, add_cotangents, transpose, zeros
from spmd.core.program import Program, Var
from spmd.transforms.control_flow.programs import cotangent_as, split, trace_program


def scan_transpose(cts, operands, bind_scan, *, body, num_consts, num_carry, length, reverse):
    """The cotangents of a scan's linear operands; ``bind_scan(body, consts, init, xs,
    length, reverse)`` binds the forward and the reversed scans."""
    linear_in = [isinstance(x, UndefinedPrimal) for x in operands]
    const_vars, carry_vars, xs_vars = split(body.invars, num_consts, num_carry)
    carry_out, ys_out = body.outvars[:num_carry], body.outvars[num_carry:]
    while True:  # a carry whose body output is linear is linear (a known zero tangent, say)
        linear, known_eqns, linear_eqns = _partition(body, linear_in)
        carry_lin = linear_in[num_consts : num_consts + num_carry]
        grown = [
            lin or (isinstance(a, Var) and a in linear)
            for lin, a in zip(carry_lin, carry_out, strict=True)
        ]
        if grown == carry_lin:
            break
        linear_in[num_consts : num_consts + num_carry] = grown
    read = {a for e in linear_eqns for a in e.inputs if isinstance(a, Var) and a not in linear}
    const_known = [v for v, lin in zip(const_vars, linear_in[:num_consts], strict=True) if not lin]
    const_res = [v for v in const_known if v in read]
    stacked_res = [v for v in _ordered(read, body) if v not in set(const_res)]

    consts, init, xs = split(operands, num_consts, num_carry)
    known_vars = [v for v, lin in zip(body.invars, linear_in, strict=True) if not lin]
    # A residual that is a slice of a known xs operand is read from that operand, not stacked.
    xs_known = {
        v: x for v, x, lin in zip(xs_vars, xs, linear_in[num_consts + num_carry :], strict=True)
        if not lin
    }  # fmt: skip
    made_res = [v for v in stacked_res if v not in xs_known]
    known_program = Program(
        [],
        known_vars,
        known_eqns,
        [a for a, lin in zip(carry_out, carry_lin, strict=True) if not lin] + made_res,
    )
    k_consts, k_init, k_xs = _known_parts(consts, init, xs, linear_in, num_consts, num_carry)
    # Nothing to carry or stack (every residual read from xs): no forward scan at all.
    forward = (
        bind_scan(known_program, k_consts, k_init, k_xs, length, reverse)
        if known_program.outvars
        else []
    )
    made = iter(forward[len(k_init) :])
    residuals = [xs_known[v] if v in xs_known else next(made) for v in stacked_res]

    lin_const = [v for v, lin in zip(const_vars, linear_in[:num_consts], strict=True) if lin]
    lin_carry = [v for v, lin in zip(carry_vars, carry_lin, strict=True) if lin]
    lin_xs = [v for v, lin in zip(xs_vars, linear_in[num_consts + num_carry :], strict=True) if lin]
    ys_lin = [isinstance(a, Var) and a in linear for a in ys_out]
    lin_outs = [a for a, lin in zip(carry_out, carry_lin, strict=True) if lin]
    lin_outs += [a for a, lin in zip(ys_out, ys_lin, strict=True) if lin]
    linear_program = Program(
        const_res + stacked_res, lin_const + lin_carry + lin_xs, linear_eqns, lin_outs
    )
    nr, na, nl = len(const_res), len(lin_const), len(lin_carry)

    def backward(*args):
        c_res, acc, ct_carry, s_res, ct_ys = split(args, nr, na, nl, len(stacked_res))
        found = transpose(linear_program, [*c_res, *s_res], [*ct_carry, *ct_ys])
        found = [
            cotangent_as(ct, v.aval) if ct is not None else zeros(v.aval.strong())
            for ct, v in zip(found, linear_program.invars, strict=True)
        ]
        sums = [add_cotangents(a, f) for a, f in zip(acc, found[:na], strict=True)]
        return [*sums, *found[na:]]

    avals = [v.aval for v in const_res] + [v.aval.strong() for v in lin_const + lin_carry]
    avals += [v.aval for v in stacked_res] + [_aval(a).strong() for a in lin_outs[nl:]]
    program = trace_program(backward, avals)
    carry_cts = [
        cotangent_as(c, v.aval)
        for c, v, lin in zip(cts[:num_carry], carry_vars, carry_lin, strict=True)
        if lin
    ]
    ys_cts = [
        cotangent_as(c, _aval(a))
        for c, a, lin in zip(cts[num_carry:], ys_out, ys_lin, strict=True)
        if lin
    ]
    const_vals = [consts[i] for i, v in enumerate(const_vars) if v in set(const_res)]
    outs = bind_scan(
        program,
        const_vals,
        [*(zeros(v.aval.strong()) for v in lin_const), *carry_cts],
        [*residuals, *ys_cts],
        length,
        not reverse,
    )
    found = iter([*outs[:na], *outs[na : na + nl], *outs[na + nl :]])
    cts_in = [next(found) if lin else None for lin in linear_in]
    # A known operand treated as linear (a carry's zero tangent) has no cotangent.
    return [
        ct if isinstance(x, UndefinedPrimal) else None
        for ct, x in zip(cts_in, operands, strict=True)
    ]


def _partition(body: Program, linear_in: list[bool]):
    """The body's linear values (those that read a linear input), its known equations and
    its linear ones."""
    linear: set[Var] = {v for v, lin in zip(body.invars, linear_in, strict=True) if lin}
    known_eqns, linear_eqns = [], []
    for eqn in body.equations:
        if any(isinstance(a, Var) and a in linear for a in eqn.inputs):
            linear.update(eqn.outputs)
            linear_eqns.append(eqn)
        else:
            known_eqns.append(eqn)
    return linear, known_eqns, linear_eqns


def _aval(atom):
    return atom.aval


def _ordered(values: set, body: Program) -> list:
    """``values`` in the order the body defines them (its inputs, then its equations)."""
    order = list(body.invars) + [v for e in body.equations for v in e.outputs]
    return [v for v in order if v in values]


def _known_parts(consts, init, xs, linear_in, num_consts, num_carry):
    masks = split(linear_in, num_consts, num_carry)
    return [
        [x for x, lin in zip(values, mask, strict=True) if not lin]
        for values, mask in zip((consts, init, xs), masks, strict=True)
    ]
