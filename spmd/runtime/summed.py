"""A contraction whose partial sums only an all-reduce or a reduce-scatter reads, run as
one sum over the devices' stacked blocks.

A weight's gradient in data-parallel training is ``sum_d x_d.T @ g_d``: each device writes
a whole partial that the all-reduce then reads again. Stacking the devices' blocks along a
contracted label gives the sum in one contraction (one per core), and the collective becomes
a hand-out of the sum's blocks. Steps between the two that are linear in the pending value
(``0.01 * gradient``: its sharding stays pending) run once on the sum. Within one process
only: across processes the Communicator's fixed order of summation stands.

The sum replaces the partials: a value that holds it is recorded as a total (``Totals``),
and if a step that should run on it cannot, the partials come back as the total on each
group's first device and zeros on the others, which sum to the same.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from spmd.core.program import Var
from spmd.runtime.cores import core_count
from spmd.runtime.counting import record
from spmd.runtime.pool import parallel_map
from spmd.runtime.stacking import (
    by_cores,
    einsum,
    fresh_label,
    frozen,
    insert,
    same_params,
    subscripts_of,
)
from spmd.sharding.device_program import Alias, Branch, Collective, Compute, Loop, Reshard
from spmd.sharding.layout import bounds_to_slices
from spmd.sharding.mesh import groups as mesh_groups
from spmd.sharding.plans import value_layout

REDUCTIONS = ("all-reduce", "reduce-scatter")


@dataclass(frozen=True)
class Chain:
    """An einsum's pending sum, the steps linear in it and the Reshard that reduces it (by
    index)."""

    links: tuple[int, ...]
    reshard: int


def chain_of(index: int, steps, last_use: dict) -> Chain | None:
    """The Chain from the einsum at ``index``, where nothing else reads its values."""
    step = steps[index]
    (value,), (sharding,) = step.outputs, step.shardings
    if not sharding.pending or sharding.op != "sum":
        return None
    links, at = [], index
    while True:
        end = last_use.get(value, -1)
        if end <= at or end >= len(steps):
            return None
        if any(value in _reads(s) for s in steps[at + 1 : end]):
            return None
        reader = steps[end]
        if isinstance(reader, Reshard):
            return Chain(tuple(links), end) if _reduces(reader, value, sharding) else None
        if not isinstance(reader, Compute) or len(reader.outputs) != 1:
            return None
        if reader.inputs.count(value) != 1 or reader.shardings[0] != sharding:
            return None
        if not same_params(reader.params):
            return None
        links.append(end)
        value, at = reader.outputs[0], end


def _reduces(reshard: Reshard, value: Var, sharding) -> bool:
    if reshard.src is not value or len(reshard.steps) != 1:
        return False
    (only,) = reshard.steps
    return (
        only.kind in REDUCTIONS
        and only.src.op == "sum"
        and set(only.axes) == set(sharding.pending)
        and only.src.dims == sharding.dims
    )


def _reads(step) -> tuple:
    if isinstance(step, Compute):
        return step.inputs
    if isinstance(step, Reshard | Alias):
        return (step.src,)
    if isinstance(step, Collective):
        return (step.input,)
    if isinstance(step, Loop):
        return step.operands
    if isinstance(step, Branch):
        return (step.index, *step.operands)
    return ()


class Totals:
    """Values whose blocks hold their group's whole sum rather than a partial, with the
    groups (lists of indices into the run's positions)."""

    def __init__(self) -> None:
        self.groups: dict[Var, list[list[int]]] = {}

    def partials(self, var: Var, env: dict, positions) -> None:
        """Turn ``var``'s totals back into partials: the total on each group's first
        device, zeros on the others."""
        for group in self.groups.pop(var):
            total = env[var][positions[group[0]]]
            zeros = np.zeros_like(total)
            frozen(zeros)
            for i in group[1:]:
                env[var][positions[i]] = zeros


def local_groups(run, axes) -> list[list[int]] | None:
    """The groups over mesh ``axes`` as indices into ``run.positions``, or None where a
    group reaches another process (or the run is across processes)."""
    if run.comm.transport is not None:
        return None
    order = {p: i for i, p in enumerate(run.positions)}
    groups = [[order.get(p) for p in g] for g in mesh_groups(run.mesh, tuple(axes))]
    if any(i is None for group in groups for i in group):
        return None
    return groups


def contract(step: Compute, values: list, groups: list[list[int]], positions, stacks) -> dict:
    """The einsum ``step`` summed over each group's devices: ``{position: the group's sum}``
    (one array per group, shared read-only by its devices)."""
    subscripts, (x, y), output = subscripts_of(step.params[0])
    label = fresh_label(subscripts)
    contracted = [c for c in x if c in y and c not in output]
    first = contracted[0] if contracted else None
    lx, ly = insert(x, label, first), insert(y, label, first)
    summed = f"{lx},{ly}->{output}"
    axes = lx.index(label), ly.index(label)
    out = step.outputs[0].aval
    out_bytes = math.prod(out.shape) * out.dtype.itemsize
    totals = {}
    for group in groups:
        members = [[v[i] for i in group] for v in values]

        def product(devices: slice, on_caller: bool, members=members, group=group):
            indices = tuple(group[devices])
            pair = [
                stacks.get(var, m[devices], indices, a, on_caller)
                for var, m, a in zip(step.inputs, members, axes, strict=True)
            ]
            return einsum(pair, summed)

        nbytes = sum(b.nbytes for m in members for b in m) + out_bytes
        total = _added(by_cores(product, len(group), nbytes))
        totals.update(dict.fromkeys((positions[i] for i in group), frozen(total)))
    return totals


def _added(parts: list[np.ndarray]) -> np.ndarray:
    """The first of ``parts`` with the others added into it, its pieces on the cores."""
    total = parts[0]
    if len(parts) == 1:
        return total
    order = next((o for o in "CF" if all(p.flags[f"{o}_CONTIGUOUS"] for p in parts)), None)
    if order is not None or total.ndim == 0:  # flat views in that order
        parts = [p.reshape(-1, order=order or "C") for p in parts]
    size = -(-len(parts[0]) // (4 * core_count()))
    pieces = [slice(i, i + size) for i in range(0, len(parts[0]), size)]

    def add(rows: slice) -> None:
        for part in parts[1:]:
            np.add(parts[0][rows], part[rows], out=parts[0][rows])

    parallel_map(add, pieces, total.nbytes * len(parts))
    return total


def hand_out(run, reshard: Reshard, totals: dict) -> dict:
    """Each device's block of the reduction ``reshard`` of values whose blocks hold their
    group's sum: the sum itself (all-reduce) or its piece (reduce-scatter)."""
    (only,) = reshard.steps
    record(only.kind, only.nbytes)
    if only.kind == "all-reduce":
        return dict(totals)
    pieces = _pieces(reshard, run.mesh)
    return {p: frozen(total[pieces[p]]) for p, total in totals.items()}


_PIECES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _pieces(reshard: Reshard, mesh) -> dict[int, tuple[slice, ...]]:
    """Where each mesh position's block of a reduce-scatter lies in its group's sum (the
    block of the value before it), worked out once per step."""
    found = _PIECES.get(reshard)
    if found is None or found[0] is not mesh:
        (only,) = reshard.steps
        shape = reshard.src.aval.shape
        src = value_layout(mesh, only.src.dims, shape)
        dst = value_layout(mesh, only.dst.dims, shape)
        pieces = {}
        for position, device in enumerate(mesh.devices.flat):
            origin = src.bounds(src.blocks[src.position[device]])
            bounds = dst.bounds(dst.blocks[dst.position[device]])
            moved = tuple((a - o, b - o) for (a, b), (o, _) in zip(bounds, origin, strict=True))
            pieces[position] = bounds_to_slices(moved)
        found = _PIECES[reshard] = (mesh, pieces)
    return found[1]
