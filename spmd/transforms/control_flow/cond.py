"""The ``cond`` primitive (lax.cond and lax.switch): ``branches[index]`` applied to the
operands. Operands: the index (an int32 scalar, already clamped), then every branch's
inputs (the values the branches capture, then the arguments)."""

from __future__ import annotations

from spmd.core.ad import UndefinedPrimal, transpose, zeros
from spmd.core.interpret import compiled
from spmd.core.primitive import Primitive, Rules
from spmd.core.program import Program
from spmd.core.varying import program_varying
from spmd.prims.derivatives import batch_size, bind
from spmd.transforms.bodies import at_linear
from spmd.transforms.control_flow.partitioning import cond_sharding, lower_cond, refuse_collectives
from spmd.transforms.control_flow.programs import (
    batch_program,
    close,
    cotangent_as,
    differentiable,
    jvp_program,
    run_program,
    select_members,
    to_front,
    trace_program,
)


def bind_cond(index, operands: list, branches: list[Program]) -> list:
    """A cond equation over ``branches`` (not closed: their constants lead the operands)."""
    closed, consts = close(branches)
    return cond_p.bind(index, *consts, *operands, branches=tuple(closed))


def _shape(index, *avals, branches):
    return list(branches[0].out_avals)


def _impl(xp, index, *operands, branches):
    refuse_collectives(branches, "cond")
    chosen = min(max(int(index), 0), len(branches) - 1)
    return compiled(branches[chosen], xp)(*operands)


def _varying(eqn, operands):
    branches = eqn.params["branches"]
    found = [frozenset(operands[0])] * len(branches[0].outvars)
    for branch in branches:
        outs = program_varying(branch, operands[1:])
        found = [a | b for a, b in zip(found, outs, strict=True)]
    return found


def _jvp(primals, out, tangents, *, branches):
    index, operands = primals[0], primals[1:]
    moving = [t is not None for t in tangents[1:]]
    wanted = [differentiable(a) for a in branches[0].out_avals]
    bodies = [jvp_program(b, moving, wanted, primals_out=False)[0] for b in branches]
    found = bind_cond(index, [*operands, *(t for t in tangents[1:] if t is not None)], bodies)
    result, rest = [], iter(found)
    for w in wanted:
        result.append(next(rest) if w else None)
    return result


def _transpose(cts, index, *operands, branches):
    linear = [i for i, x in enumerate(operands) if isinstance(x, UndefinedPrimal)]
    residual = [i for i in range(len(operands)) if i not in linear]
    bodies = [_transposed(b, linear, residual) for b in branches]
    cts = [
        ct if ct is None else cotangent_as(ct, aval)
        for ct, aval in zip(cts, branches[0].out_avals, strict=True)
    ]
    found = bind_cond(index, [operands[i] for i in residual] + cts, bodies)
    return [None, *at_linear(linear, found, len(operands))]


def _transposed(branch: Program, linear: list[int], residual: list[int]) -> Program:
    """(residual operands..., output cotangents...) -> the linear operands' cotangents."""
    split = Program(
        [branch.invars[i] for i in residual],
        [branch.invars[i] for i in linear],
        branch.equations,
        branch.outvars,
    )

    def fn(*args):
        found = transpose(split, args[: len(residual)], args[len(residual) :])
        return [
            cotangent_as(ct, branch.invars[i].aval)
            if ct is not None
            else zeros(branch.invars[i].aval.strong())
            for i, ct in zip(linear, found, strict=True)
        ]

    avals = [branch.invars[i].aval for i in residual] + [a.strong() for a in branch.out_avals]
    return trace_program(fn, avals)


def _batch(args, dims, *, branches):
    size = batch_size(args, dims)
    index, operands = args[0], [to_front(a, d) for a, d in zip(args[1:], dims[1:], strict=True)]
    batched = [d is not None for d in dims[1:]]
    count = len(branches[0].outvars)
    if dims[0] is None:
        bodies = [batch_program(b, batched, size, [True] * count)[0] for b in branches]
        return bind_cond(index, operands, bodies), [0] * count
    # A batched index: every branch runs on the whole batch, and each member takes its own.
    index = to_front(index, dims[0])
    results = None
    for k, branch in enumerate(branches):
        program, _ = batch_program(branch, batched, size, [True] * count)
        closed, consts = close([program])
        outs = run_program(closed[0], [*consts, *operands])
        if results is None:
            results = outs
            continue
        chosen = bind("equal", index, k)
        results = [select_members(chosen, o, r) for o, r in zip(outs, results, strict=True)]
    return results, [0] * count


cond_p = Primitive(
    "cond",
    Rules(
        shape=_shape,
        impl=_impl,
        varying=_varying,
        jvp=_jvp,
        transpose=_transpose,
        batch=_batch,
        sharding=cond_sharding,
        per_device=lower_cond,
    ),
    multiple_results=True,
)
