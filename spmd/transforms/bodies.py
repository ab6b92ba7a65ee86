"""Transforming the body of a call equation (shard_map, pmap): the body of its jvp, of that
jvp's transpose, and of its batched form, each traced as a per-device program over named
axes.

A jvp body takes the primal operands and the tangents of those that move, and returns the
tangents of every output (it runs the primal body again for them, so the only residuals of
the call are its operands). A transposed body takes the residual operands and the outputs'
cotangents, and returns the cotangents of the linear operands; an operand that every device
along some axes holds whole gets the sum of its varying cotangents along them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spmd.core.ad import jvp_call, transpose, zeros
from spmd.core.aval import ShapedArray
from spmd.core.axis_env import binding
from spmd.core.program import Literal, Program
from spmd.core.trace import ProgramTrace, aval_of, current_trace, tracing
from spmd.prims.collective import sum_where_varying
from spmd.transforms.typeof import VaryingTypes
from spmd.transforms.vmap import vmap


def run_program(program: Program, args: Sequence[Any]) -> list:
    """``program`` (no constants) applied to ``args`` by binding each equation in the
    current trace."""
    env = dict(zip(program.invars, args, strict=True))

    def read(atom):
        return atom.value if isinstance(atom, Literal) else env[atom]

    for eqn in program.equations:
        out = eqn.primitive.bind(*map(read, eqn.inputs), **eqn.params)
        env.update(zip(eqn.outputs, out if eqn.primitive.multiple_results else [out], strict=True))
    return [read(a) for a in program.outvars]


class Axes:
    """The named axes a body runs over: their sizes, in order, and which each input varies
    over."""

    def __init__(self, sizes: dict[str, int], in_varying: Sequence[frozenset[str]]) -> None:
        self.sizes = sizes
        self.in_varying = list(in_varying)

    def trace(self, fn: Callable, avals: Sequence[ShapedArray]) -> Program:
        trace = ProgramTrace()
        tracers = [trace.new_arg(a.varying(v)) for a, v in zip(avals, self.in_varying, strict=True)]
        trace.types = VaryingTypes(tuple(self.sizes))
        with tracing(trace), binding(self.sizes):
            outs = fn(*tracers)
        return trace.finish([t.node for t in tracers], list(outs))


def jvp_body(body: Program, moving: Sequence[int], axes: Axes) -> Program:
    """Body (primals..., tangents of ``moving`` operands...) -> every output's tangent."""
    count = len(body.invars)

    def fn(*args):
        tangents: list = [None] * count
        for i, t in zip(moving, args[count:], strict=True):
            tangents[i] = t
        outs, out_tangents = jvp_call(
            lambda *xs: run_program(body, xs), args[:count], tangents, current_trace()
        )
        return [
            t if t is not None else zeros(aval_of(o).strong())
            for o, t in zip(outs, out_tangents, strict=True)
        ]

    avals = [v.aval for v in body.invars] + [body.invars[i].aval for i in moving]
    return axes.trace(fn, avals)


def transposed_body(
    body: Program, linear: Sequence[int], held_whole: Sequence[tuple[str, ...]], axes: Axes
) -> Program:
    """Body (residual operands..., output cotangents...) -> the cotangents of the ``linear``
    operands; ``held_whole[k]`` names the axes along which linear operand k is not split."""
    residual = [i for i in range(len(body.invars)) if i not in linear]
    split = Program(
        [body.invars[i] for i in residual],
        [body.invars[i] for i in linear],
        body.equations,
        body.outvars,
    )

    def fn(*args):
        found = transpose(split, args[: len(residual)], args[len(residual) :])
        out = []
        for i, ct, whole in zip(linear, found, held_whole, strict=True):
            ct = ct if ct is not None else zeros(body.invars[i].aval)
            out.append(sum_where_varying(ct, whole))
        return out

    avals = [body.invars[i].aval for i in residual] + [v.aval for v in body.outvars]
    return axes.trace(fn, avals)


def at_linear(linear: Sequence[int], found: Sequence[Any], count: int) -> list:
    """A transpose rule's result: ``found[k]`` for operand ``linear[k]``, None elsewhere."""
    result: list = [None] * count
    for i, ct in zip(linear, found, strict=True):
        result[i] = ct
    return result


def batched_body(body: Program, dims: Sequence[int | None], size: int, axes: Axes) -> Program:
    """Body with each input batched along ``dims[i]`` (None: not batched) by ``size``; every
    output is batched along dimension 0."""

    def fn(*args):
        mapped = vmap(lambda *xs: run_program(body, xs), in_axes=tuple(dims), axis_size=size)
        return list(mapped(*args))

    avals = []
    for v, d in zip(body.invars, dims, strict=True):
        shape = v.aval.shape if d is None else (*v.aval.shape[:d], size, *v.aval.shape[d:])
        avals.append(ShapedArray(shape, v.aval.dtype, v.aval.weak_type))
    return axes.trace(fn, avals)
