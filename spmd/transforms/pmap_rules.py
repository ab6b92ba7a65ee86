"""Derivatives through a pmap equation: its jvp and its transpose are pmaps of the body's jvp
and of that jvp's transpose (spmd.transforms.bodies.py), mapped as the original: tangents
like their primals, cotangents like the values they belong to."""

from __future__ import annotations

from spmd.core.ad import UndefinedPrimal, zeros
from spmd.core.aval import ShapedArray
from spmd.core.primitive import primitive_named
from spmd.core.trace import Tracer
from spmd.prims.derivatives import batch_size
from spmd.transforms.bodies import Axes, at_linear, batched_body, jvp_body, transposed_body


def _axes(params: dict, in_axes: list, operands: list) -> Axes:
    """The body's axis, and what each input varies over: the pmap's axis where it is
    mapped, and the enclosing pmaps' axes its operand varies over (nested pmaps)."""
    name = params["axis_name"]
    varying = [
        _vma(x) | (frozenset() if a is None else frozenset({name}))
        for a, x in zip(in_axes, operands, strict=True)
    ]
    return Axes({name: params["axis_size"]}, varying)


def _vma(x) -> frozenset[str]:
    return x._vma() if isinstance(x, Tracer) else frozenset()


def pmap_jvp(primals, primal_out, tangents, **params):
    moving = [i for i, t in enumerate(tangents) if t is not None]
    in_axes = list(params["in_axes"]) + [params["in_axes"][i] for i in moving]
    like = list(primals) + [primals[i] for i in moving]  # a tangent varies as its primal
    body = jvp_body(params["body"], moving, _axes(params, in_axes, like))
    operands = list(primals) + [tangents[i] for i in moving]
    return primitive_named("pmap").bind(
        *operands, **{**params, "body": body, "in_axes": tuple(in_axes)}
    )


def pmap_transpose(cts, *operands, **params):
    linear = [i for i, x in enumerate(operands) if isinstance(x, UndefinedPrimal)]
    residual = [i for i in range(len(operands)) if i not in linear]
    in_axes = [params["in_axes"][i] for i in residual] + list(params["out_axes"])
    whole = [(params["axis_name"],) if params["in_axes"][i] is None else () for i in linear]
    cts = [c if c is not None else zeros(a) for c, a in zip(cts, params["out_avals"], strict=True)]
    given = [operands[i] for i in residual] + cts
    body = transposed_body(params["body"], linear, whole, _axes(params, in_axes, given))
    found = primitive_named("pmap").bind(
        *[operands[i] for i in residual],
        *cts,
        **{
            **params,
            "body": body,
            "in_axes": tuple(in_axes),
            "out_axes": tuple(params["in_axes"][i] for i in linear),
            "out_avals": tuple(operands[i].aval for i in linear),
        },
    )
    return at_linear(linear, found, len(operands))


def pmap_batch(args, dims, **params):
    """vmap of a pmap: the batch dimension rides along inside each device's value."""
    size = batch_size(args, dims)
    in_axes, inside = [], []
    for axis, dim in zip(params["in_axes"], dims, strict=True):
        if dim is None or axis is None:
            in_axes.append(axis)
            inside.append(dim)
            continue
        mapped = axis + (axis >= dim)  # the mapped axis, in the batched operand
        in_axes.append(mapped)
        inside.append(dim - (mapped < dim))
    body = batched_body(params["body"], inside, size, _axes(params, in_axes, list(args)))
    out_avals = tuple(
        ShapedArray((size, *a.shape), a.dtype, a.weak_type) for a in params["out_avals"]
    )
    outs = primitive_named("pmap").bind(
        *args,
        **{
            **params,
            "body": body,
            "in_axes": tuple(in_axes),
            "out_axes": tuple(None if o is None else o + 1 for o in params["out_axes"]),
            "out_avals": out_avals,
        },
    )
    return outs, [0] * len(outs)
