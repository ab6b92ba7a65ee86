"""Derivatives through a shard_map equation: its jvp and its transpose are shard_maps of the
body's jvp and of that jvp's transpose (spmd.transforms.bodies.py), laid out as the
original: tangents like their primals, cotangents like the values they belong to."""

from __future__ import annotations

from spmd.core.ad import UndefinedPrimal, zeros
from spmd.core.aval import ShapedArray
from spmd.core.primitive import primitive_named
from spmd.core.program import Program
from spmd.core.trace import aval_of
from spmd.prims.derivatives import batch_size
from spmd.transforms.bodies import Axes, at_linear, batched_body, jvp_body, transposed_body
from spmd.transforms.shard_map_bodies import close_bodies, split_axes

Dims = tuple[tuple[str, ...], ...]


def _bind(operands: list, in_dims: list, out_dims: list, bodies: list, params: dict) -> list:
    """A shard_map equation over ``bodies`` (their constants become replicated operands)."""
    bodies, consts = close_bodies(bodies, f"shard_map({params['name']})")
    sizes = dict(params["mesh"].shape)
    out_avals = []
    for v, dims in zip(bodies[0].outvars, out_dims, strict=True):
        shape = tuple(n * _count(sizes, d) for n, d in zip(v.aval.shape, dims, strict=True))
        out_avals.append(ShapedArray(shape, v.aval.dtype, v.aval.weak_type))
    return primitive_named("shard_map").bind(
        *consts,
        *operands,
        **{
            **params,
            "in_dims": tuple([((),) * aval_of(c).ndim for c in consts] + list(in_dims)),
            "out_dims": tuple(out_dims),
            "bodies": tuple(bodies),
            "out_avals": tuple(out_avals),
            "unchecked": (),
        },
    )


def _count(sizes: dict, axes: tuple[str, ...]) -> int:
    count = 1
    for a in axes:
        count *= sizes[a]
    return count


def shard_map_jvp(primals, primal_out, tangents, **params):
    mesh, in_dims = params["mesh"], params["in_dims"]
    moving = [i for i, t in enumerate(tangents) if t is not None]
    dims = list(in_dims) + [in_dims[i] for i in moving]
    axes = Axes(dict(mesh.shape), [split_axes(d) for d in dims])
    bodies: list[Program] = [jvp_body(b, moving, axes) for b in params["bodies"]]
    operands = list(primals) + [tangents[i] for i in moving]
    return _bind(operands, dims, list(params["out_dims"]), bodies, params)


def shard_map_transpose(cts, *operands, **params):
    mesh, in_dims, out_dims = params["mesh"], params["in_dims"], params["out_dims"]
    linear = [i for i, x in enumerate(operands) if isinstance(x, UndefinedPrimal)]
    residual = [i for i in range(len(operands)) if i not in linear]
    dims = [in_dims[i] for i in residual] + list(out_dims)
    axes = Axes(dict(mesh.shape), [split_axes(d) for d in dims])
    whole = [tuple(a for a in mesh.axis_names if a not in split_axes(in_dims[i])) for i in linear]
    bodies = [transposed_body(b, linear, whole, axes) for b in params["bodies"]]
    cts = [c if c is not None else zeros(a) for c, a in zip(cts, params["out_avals"], strict=True)]
    found = _bind(
        [operands[i] for i in residual] + cts,
        dims,
        [in_dims[i] for i in linear],
        bodies,
        params,
    )
    return at_linear(linear, found, len(operands))


def shard_map_batch(args, dims, **params):
    """vmap of a shard_map: each batched operand keeps its batch dimension unsplit."""
    size = batch_size(args, dims)
    in_dims = [
        d if b is None else (*d[:b], (), *d[b:])
        for d, b in zip(params["in_dims"], dims, strict=True)
    ]
    axes = Axes(dict(params["mesh"].shape), [split_axes(d) for d in in_dims])
    bodies = [batched_body(body, dims, size, axes) for body in params["bodies"]]
    out_dims = [((), *d) for d in params["out_dims"]]
    outs = _bind(list(args), in_dims, out_dims, bodies, params)
    return outs, [0] * len(outs)
