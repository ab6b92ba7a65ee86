"""Which values of a per-device body stay *split* over mesh axes its body does not map.

A nested pmap runs inside its enclosing pmap's body: it reads each mapped operand with
``axis_slice`` (this device's index along the inner axis) and stacks each result with an
untiled ``all_gather`` over that axis (spmd/transforms/pmap.py). The lowering
(spmd/transforms/per_device_lowering.py) keeps such values split instead of moving data: for
each ``(dimension, axis)`` of a value's splits a device holds only the index its coordinate
along ``axis`` names, that dimension kept with size 1. A gather over one axis then only
marks the value split, a slice of a value split so only drops the dimension, and a reshape
that inserts or removes size-1 dimensions keeps the splits; anything else gathers first.

The functions below are those rules, shared by the lowering and by ``call_splits``, which
reads a shard_map equation's body to say which operands it wants split (every use slices
them so, through such reshapes) and which results leave split (the lowering then holds them
exactly so), so that the partitioner lays values out as the lowering holds them.
"""

from __future__ import annotations

from spmd.core.program import Program, Var
from spmd.prims.collective import all_gather_p, axis_slice_p, pvary_p
from spmd.prims.shape import reshape_p

Splits = tuple[tuple[int, str], ...]


def gathered(splits: Splits, dim: int, axes: tuple[str, ...], tiled: bool) -> Splits | None:
    """The splits of an untiled gather over one axis at ``dim`` held lazily (None: it
    gathers now)."""
    if tiled or len(axes) != 1 or any(a == axes[0] for _, a in splits):
        return None
    return ((dim, axes[0]), *((d + (d >= dim), a) for d, a in splits))


def sliced(splits: Splits, dim: int, axes: tuple[str, ...]) -> Splits | None:
    """The splits of a value's slice at ``dim`` over ``axes`` where the value is split so
    there (None: the device takes its slice of the whole value)."""
    if len(axes) != 1 or (dim, axes[0]) not in splits:
        return None
    return tuple((d - (d > dim), a) for d, a in splits if d != dim)


def reshaped(splits: Splits, old: tuple[int, ...], new: tuple[int, ...]) -> Splits | None:
    """The splits through a reshape from ``old`` to ``new`` that inserts or removes one
    size-1 dimension, not a split one (None: another reshape, which needs the whole value)."""
    if old == new:
        return splits
    split = {d for d, _ in splits}
    if len(new) == len(old) + 1:
        for p in range(len(new)):
            if new[p] == 1 and new[:p] + new[p + 1 :] == old:
                return tuple((d + (d >= p), a) for d, a in splits)
    if len(new) == len(old) - 1:
        for p in range(len(old)):
            if old[p] == 1 and p not in split and old[:p] + old[p + 1 :] == new:
                return tuple((d - (d > p), a) for d, a in splits)
    return None


def held_shape(shape: tuple[int, ...], splits: Splits) -> tuple[int, ...]:
    """The shape a device holds of a value of ``shape`` split as ``splits``."""
    split = {d for d, _ in splits}
    return tuple(1 if d in split else n for d, n in enumerate(shape))


def lazy_splits(eqn, held: Splits) -> Splits | None:
    """The splits of ``eqn``'s result when its operand is held split as ``held`` and the
    lowering keeps it split (None: the lowering works on whole values)."""
    params = eqn.params
    if eqn.primitive is all_gather_p:
        return gathered(held, params["axis"], params["axes"], params["tiled"])
    if not held:
        return None
    if eqn.primitive is axis_slice_p:
        return sliced(held, params["axis"], params["axes"])
    if eqn.primitive is reshape_p:
        return reshaped(held, eqn.inputs[0].aval.shape, eqn.outputs[0].aval.shape)
    if eqn.primitive is pvary_p:  # the same data, typed anew
        return held
    return None


def result_splits(body: Program, in_splits: list[Splits]) -> list[Splits]:
    """How the lowering holds each result of ``body`` given its operands held so."""
    held: dict[Var, Splits] = dict(zip(body.invars, in_splits, strict=True))
    for eqn in body.equations:
        if len(eqn.outputs) != 1 or not eqn.inputs or not isinstance(eqn.inputs[0], Var):
            continue
        found = lazy_splits(eqn, held.get(eqn.inputs[0], ()))
        if found:
            held[eqn.outputs[0]] = found
    return [held.get(v, ()) if isinstance(v, Var) else () for v in body.outvars]


def operand_requests(body: Program) -> list[Splits]:
    """How ``body`` would have each operand split: as every use of it reads it, where each
    use slices it over one axis (through unit reshapes), else whole."""
    ways: dict[Var, set[Splits]] = {v: {()} for v in body.outvars if isinstance(v, Var)}
    for eqn in reversed(body.equations):
        wanted = [_one(ways.get(v, {()})) for v in eqn.outputs]
        for k, atom in enumerate(eqn.inputs):
            if isinstance(atom, Var):
                ways.setdefault(atom, set()).add(_request(eqn, k, wanted))
    return [_one(ways.get(v, {()})) for v in body.invars]


def _one(ways: set[Splits]) -> Splits:
    return next(iter(ways)) if len(ways) == 1 else ()


def _request(eqn, k: int, wanted: list[Splits]) -> Splits:
    if k != 0 or len(eqn.outputs) != 1:
        return ()
    params, out = eqn.params, wanted[0]
    if eqn.primitive is axis_slice_p and len(params["axes"]) == 1:
        axis, dim = params["axes"][0], params["axis"]
        if any(a == axis for _, a in out):
            return ()
        return ((dim, axis), *((d + (d >= dim), a) for d, a in out))
    if eqn.primitive is pvary_p:
        return out
    if eqn.primitive is reshape_p and out:
        back = reshaped(out, eqn.outputs[0].aval.shape, eqn.inputs[0].aval.shape)
        if back is not None and reshaped(back, eqn.inputs[0].aval.shape,
                                         eqn.outputs[0].aval.shape) == out:  # fmt: skip
            return back
    return ()


def call_splits(params: dict) -> tuple[list[Splits], list[Splits]]:
    """How a shard_map equation's lowering holds its operands and results beyond its
    in_dims and out_dims: split as the body wants them (operands) and leaves them (results;
    a pmap's only, as ``split_results`` says: a user's shard_map returns what out_specs
    say). An operand already split over an axis keeps its in_dims alone."""
    bodies = params["bodies"]
    ins: list[Splits] = [()] * len(params["in_dims"])
    outs: list[Splits] = [()] * len(params["out_dims"])
    if len(bodies) != 1:  # uneven blocks: every device's own shapes, values whole
        return ins, outs
    body = bodies[0]
    ins = _apart(operand_requests(body), params["in_dims"])
    if params.get("split_results"):
        outs = _apart(result_splits(body, ins), params["out_dims"])
    return ins, outs


def _apart(found: list[Splits], layouts) -> list[Splits]:
    """Each of ``found``, or none where it names an axis its layout already splits over."""
    kept = []
    for splits, dims in zip(found, layouts, strict=True):
        taken = {a for d in dims for a in d}
        kept.append(() if any(a in taken for _, a in splits) else splits)
    return kept


def with_splits(dims: tuple[tuple[str, ...], ...], splits: Splits) -> tuple:
    """A layout's ``dims`` with each of ``splits`` split further over its axis."""
    out = list(dims)
    for d, a in splits:
        out[d] = (*out[d], a)
    return tuple(out)
