"""The mesh one jit call computes on, and the other meshes' shardings expressed on it.

Arguments, constraints and out_shardings may name different meshes over one list of
devices (a 2x4 mesh and an 8-device mesh of the same devices in the same order, as JAX
allows): the call computes on one of them, chosen so that as many of those shardings as
possible are splits of its axes. Arguments on another mesh move onto it at the boundary
(for free where their blocks are already a split of it), constraints on another mesh pin
the split nearest to theirs, and results pinned on another mesh move there after. Meshes
over other devices, or the same devices in another order, cannot mix, except that
out_shardings may move results anywhere and per-device programs gather arguments from any
device.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from spmd.core.inline import inline_calls
from spmd.core.program import Program, Var
from spmd.errors import ShardingError
from spmd.prims.sharding_constraint import sharding_constraint_p
from spmd.runtime.array import Array
from spmd.sharding.equivalent import devices_text, same_devices, split_on
from spmd.sharding.mesh import Mesh
from spmd.sharding.named import NamedSharding
from spmd.sharding.rules import ValueSharding


def _named(sharding: Any) -> bool:
    return isinstance(sharding, NamedSharding)


def program_mesh(name: str, leaves, program: Program, targets) -> Mesh | None:
    """The mesh a call computes on: that of its per-device programs (shard_map, pmap), else
    the one of its constraints', arguments' and out_shardings' meshes on which most of their
    shardings are splits of its axes (the first on a tie). None: no mesh is named."""
    pinned, per_device, items = [], [], []
    for eqn in inline_calls(program).equations:
        if eqn.primitive is sharding_constraint_p:
            sharding = eqn.params["sharding"]
            pinned.append(("with_sharding_constraint", sharding.mesh))
            items.append((sharding, eqn.outputs[0].aval.shape))
        elif eqn.primitive.rules.per_device is not None and "mesh" in eqn.params:
            pinned.append((eqn.primitive.name, eqn.params["mesh"]))
            per_device.append(pinned[-1])
    arguments, outputs = [], []
    for i, leaf in enumerate(leaves):
        sharding = leaf.sharding if type(leaf) is Array else None
        if _named(sharding) and sharding.mesh.size > 1:
            arguments.append((f"argument leaf {i}", sharding.mesh))
            items.append((sharding, leaf.shape))
    for i, (target, aval) in enumerate(zip(targets, program.out_avals, strict=True)):
        if _named(target) and target.mesh.size > 1:
            outputs.append((f"out_shardings leaf {i}", target.mesh))
            items.append((target, aval.shape))
    if not pinned and not arguments and not outputs:
        return None
    # Per-device programs gather arguments from anywhere; elsewhere arguments are moved.
    checked = pinned + ([] if per_device else arguments)
    first_where, first = (checked or outputs)[0]
    for where, other in checked[1:]:
        if not same_devices(other, first):
            raise ShardingError(
                f"{name}: {where} is on {devices_text(other)} but {first_where} is on "
                f"{devices_text(first)}; one call computes on one list of devices (meshes may "
                f"differ in shape and axis names, not in their devices or the devices' order "
                f"once flattened). device_put the arguments onto {first_where}'s mesh first."
            )
    if per_device:
        where, mesh = per_device[0]
        for other_where, other in per_device[1:]:
            if other != mesh:
                raise ShardingError(
                    f"{name}: {other_where} runs on mesh {other!r} but {where} on mesh "
                    f"{mesh!r}; the per-device programs of one call share one mesh. Give "
                    f"them the same mesh, or call them from separate jitted functions."
                )
        return mesh
    candidates = [m for _, m in checked or outputs if same_devices(m, first)]
    return min(dict.fromkeys(candidates), key=lambda m: _misses(m, items))


def _misses(mesh: Mesh, items: list) -> int:
    """How many of ``items`` (sharding, shape) are not splits of ``mesh``'s axes."""
    return sum(
        not express(sharding, mesh, shape)[1]
        for sharding, shape in items
        if sharding.mesh != mesh and same_devices(sharding.mesh, mesh)
    )


def express(sharding: NamedSharding, mesh: Mesh, shape: tuple[int, ...]):
    """``sharding``'s blocks of ``shape`` as a split of ``mesh``'s axes (whose devices are
    its mesh's), and whether exactly so (else the split moving fewest bytes)."""
    if sharding.mesh == mesh:
        return sharding.spec.dims(len(shape)), True
    return split_on(mesh, sharding.layout(shape))


def on_mesh(leaf: Any, mesh: Mesh) -> ValueSharding | None:
    """How an argument lies on ``mesh`` (None: host data, sliced for free)."""
    if type(leaf) is Array and _named(leaf.sharding) and leaf.sharding.mesh == mesh:
        return ValueSharding(leaf.sharding.spec.dims(leaf.ndim))
    return None


def arrivals(leaves, mesh: Mesh) -> list[NamedSharding | None]:
    """Per argument leaf: the sharding on ``mesh`` it moves to before the call (None: it
    stays), for Arrays on another mesh over the same devices."""
    found = []
    for leaf in leaves:
        sharding = leaf.sharding if type(leaf) is Array else None
        if _named(sharding) and sharding.mesh != mesh and same_devices(sharding.mesh, mesh):
            dims, _ = express(sharding, mesh, leaf.shape)
            found.append(NamedSharding(mesh, ValueSharding(dims).spec, sharding.memory_kind))
        else:
            found.append(None)
    return found


def constraints_onto(program: Program, mesh: Mesh) -> tuple[Program, dict[Var, NamedSharding]]:
    """``program``, its calls inlined, with constraints on other meshes over ``mesh``'s devices
    pinning their split on ``mesh`` (or the nearest one), and each such constraint's result →
    the sharding it asked for (where that result is returned, it is moved there)."""
    asked: dict[Var, NamedSharding] = {}
    equations = []
    program = inline_calls(program)
    for eqn in program.equations:
        sharding = eqn.params.get("sharding") if eqn.primitive is sharding_constraint_p else None
        if sharding is not None and sharding.mesh != mesh and same_devices(sharding.mesh, mesh):
            dims, _ = express(sharding, mesh, eqn.outputs[0].aval.shape)
            there = NamedSharding(mesh, ValueSharding(dims).spec, sharding.memory_kind)
            eqn = dataclasses.replace(eqn, params={**eqn.params, "sharding": there})
            asked[eqn.outputs[0]] = sharding
        equations.append(eqn)
    if not asked:
        return program, asked
    return dataclasses.replace(program, equations=equations), asked
