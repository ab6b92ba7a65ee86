"""The ``pmap`` primitive of nested pmaps: one equation over a grid whose axes are the nested
axis names. The outer body holds values whole over the inner axes and splits them only where it
hands them to an inner pmap, which shard_map's bodies (every mesh axis per device) cannot say;
a pmap without nested pmaps binds shard_map instead (spmd/transforms/pmap.py). Its layouts are
fixed (``_fixed``), and its lowering keeps each value split as the pmaps that read it need.
"""

from __future__ import annotations

import numpy as np

from spmd.core.primitive import Primitive, Rules
from spmd.core.program import Literal, Var
from spmd.core.varying import program_varying
from spmd.prims.collective import no_impl
from spmd.sharding.rules import Decision, ValueSharding
from spmd.transforms.per_device_lowering import Held, Splits, splits_to_dims
from spmd.transforms.pmap_rules import pmap_batch, pmap_jvp, pmap_transpose


def result_splits(params: dict) -> list[Splits]:
    """How each result of a pmap equation lies at its level: split along its out axis over
    the pmap's axis, and along nested pmaps' out axes over theirs."""
    body, axis = params["body"], params["axis_name"]
    produced = {
        v: (eqn, j)
        for eqn in body.equations
        if eqn.primitive is pmap_p
        for j, v in enumerate(eqn.outputs)
    }
    found = []
    for atom, out_axis in zip(body.outvars, params["out_axes"], strict=True):
        inner: Splits = ()
        if isinstance(atom, Var) and atom in produced:
            eqn, j = produced[atom]
            inner = result_splits(eqn.params)[j]
        if out_axis is None:
            found.append(inner)
        else:
            shifted = tuple((d + (d >= out_axis), a) for d, a in inner)
            found.append(((out_axis, axis), *shifted))
    return found


def operand_splits(params: dict) -> list[Splits]:
    """How a pmap equation reads each operand at its level: split along its in axis over the
    pmap's axis, and, where the body only passes it on to nested pmaps that all read it one
    way, as they read it."""
    body, axis = params["body"], params["axis_name"]
    ways: dict[Var, set] = {v: {None} for v in body.outvars if isinstance(v, Var)}
    for eqn in body.equations:
        read = operand_splits(eqn.params) if eqn.primitive is pmap_p else None
        for k, atom in enumerate(eqn.inputs):
            if isinstance(atom, Var):
                ways.setdefault(atom, set()).add(None if read is None else read[k])
    found = []
    for v, in_axis in zip(body.invars, params["in_axes"], strict=True):
        reads = ways.get(v, {()})
        inner = next(iter(reads)) if len(reads) == 1 and None not in reads else ()
        if in_axis is None:
            found.append(inner)
        else:
            shifted = tuple((d + (d >= in_axis), a) for d, a in inner)
            found.append(((in_axis, axis), *shifted))
    return found


def _fixed(ins, outs, **params) -> Decision:
    operands = tuple(
        ValueSharding(splits_to_dims(s, aval.ndim))
        for s, aval in zip(operand_splits(params), ins, strict=True)
    )
    results = tuple(
        ValueSharding(splits_to_dims(s, aval.ndim))
        for s, aval in zip(result_splits(params), outs, strict=True)
    )
    return Decision(operands, results, f"pmap({params['name']}) maps it over devices")


def _keep(lowering, held: Held, splits: Splits) -> Held:
    """``held`` with only ``splits`` left: its other splits gathered."""
    if not splits:
        return Held(lowering.whole_value(held))
    atom = held.atom
    for dim, axis in held.splits:
        if (dim, axis) not in splits:
            atom = lowering.gather(atom, dim, axis)
    return Held(atom, tuple(s for s in held.splits if s in splits))


def _lower(lowering, eqn, inputs: list[Held]) -> list[Held]:
    params = eqn.params
    axis = params["axis_name"]
    inner = []
    root = params.get("mesh") is not None  # the partitioner laid operands out as _fixed says
    for held, in_axis, splits in zip(
        inputs, params["in_axes"], operand_splits(params), strict=True
    ):
        if root:
            held = Held(held.atom, splits)
        if in_axis is None:
            inner.append(_keep(lowering, held, splits))
        elif (in_axis, axis) in held.splits:
            held = _keep(lowering, held, splits)
            split = {d for d, _ in held.splits}
            shape = tuple(  # a root operand's atom has the value's shape, not its block's
                1 if d in split else n for d, n in enumerate(held.atom.aval.shape) if d != in_axis
            )
            rest = tuple((d - (d > in_axis), a) for d, a in held.splits if d != in_axis)
            inner.append(Held(lowering.reshape(held.atom, shape), rest))
        else:
            inner.append(Held(lowering.own_slice(lowering.whole_value(held), in_axis, axis)))
    body = params["body"]
    results = lowering.run([body], (0,) * lowering.count, inner)
    found = []
    for held, out_axis in zip(results, params["out_axes"], strict=True):
        if out_axis is None:
            found.append(held)
            continue
        atom = held.atom
        if isinstance(atom, Literal):
            value = np.asarray(atom.value, atom.aval.dtype)
            atom = lowering.per_device(atom.aval, [value] * lowering.count)
        shape = (*atom.aval.shape[:out_axis], 1, *atom.aval.shape[out_axis:])
        shifted = tuple((d + (d >= out_axis), a) for d, a in held.splits)
        found.append(Held(lowering.reshape(atom, shape), ((out_axis, axis), *shifted)))
    return found


def _varying(eqn, operands: list[frozenset]) -> list[frozenset]:
    """A nested pmap's results vary as its body's do, less its own axis where stacked."""
    params = eqn.params
    axis = params["axis_name"]
    inner = [
        v if a is None else v | {axis} for v, a in zip(operands, params["in_axes"], strict=True)
    ]
    outs = program_varying(params["body"], inner)
    return [v if o is None else v - {axis} for v, o in zip(outs, params["out_axes"], strict=True)]


pmap_p = Primitive(
    "pmap",
    Rules(
        shape=lambda *avals, out_avals, **params: list(out_avals),
        impl=no_impl("pmap"),
        sharding=_fixed,
        per_device=_lower,
        varying=_varying,
        jvp=pmap_jvp,
        transpose=pmap_transpose,
        batch=pmap_batch,
    ),
    multiple_results=True,
)
