"""Lowering per-device programs (the bodies of shard_map and pmap) into partition steps.

A body already says what each device computes, collectives included, so its equations
become steps one for one: Compute for local work (with each device's own parameters when
uneven blocks gave devices different bodies), Collective for collectives, PerDevice for
values that differ by device (``axis_index``, constants of uneven bodies).

A nested pmap's body runs inside its enclosing one's, reading its operands with
``axis_slice`` and stacking its results with ``all_gather`` over its axis. A value is held
whole by every device, or *split* (spmd/transforms/body_splits.py): for each ``(dimension,
axis)`` of its splits a device holds only the index its coordinate along ``axis`` names,
that dimension kept with size 1. Such a gather only marks its result split, a slice of a
value split so only drops the dimension, and a consumer that needs the whole value gathers
it, so chained nested pmaps move no data.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np

from spmd.core.program import Equation, Literal, Program, Var
from spmd.prims.collective import all_gather_p, axis_index_p, axis_slice_p
from spmd.prims.collective_records import BROADCAST
from spmd.prims.shape import reshape_p
from spmd.sharding.device_program import Collective, Compute, PerDevice
from spmd.sharding.mesh import Mesh
from spmd.sharding.rules import ValueSharding
from spmd.transforms.body_splits import Splits, held_shape, lazy_splits


@dataclass(frozen=True)
class Held:
    """A body value on the devices: ``atom`` holds it, or its slices along ``splits``."""

    atom: Var | Literal
    splits: Splits = ()


def whole(aval) -> ValueSharding:
    """The sharding a per-device value has in printed steps: its own block, whole."""
    return ValueSharding(((),) * aval.ndim)


class Lowering:
    """Emits the steps of per-device programs on ``mesh`` into ``steps``."""

    def __init__(self, mesh: Mesh, steps: list) -> None:
        self.mesh = mesh
        self.steps = steps
        self.count = mesh.size
        self.coords = list(itertools.product(*map(range, mesh.devices.shape)))
        self._whole: dict[Var, Var] = {}

    # --- one body (or one per device position) ------------------------------------------

    def run(self, bodies: list[Program], body_of: tuple[int, ...], inputs: list[Held]) -> list:
        """Emit ``bodies`` (body ``body_of[p]`` on device position ``p``; they differ only in
        shapes, parameters and literals) on ``inputs``; returns the Held outputs."""
        base = bodies[0]
        env: dict[Var, Held] = dict(zip(base.invars, inputs, strict=True))
        for index, eqn in enumerate(base.equations):
            per_body = [b.equations[index] for b in bodies]
            outs = self._equation(eqn, per_body, body_of, env)
            env.update(zip(eqn.outputs, outs, strict=True))
        results = []
        for k, atom in enumerate(base.outvars):
            if isinstance(atom, Var):
                results.append(env[atom])
            else:
                literals = [b.outvars[k] for b in bodies]
                results.append(Held(self._literal(literals, body_of)))
        return results

    def _equation(self, eqn: Equation, per_body, body_of, env) -> list[Held]:
        primitive = eqn.primitive
        lower_call = primitive.rules.per_device
        if lower_call is not None:
            uneven = any(e.params != eqn.params for e in per_body)
            held = lower_call(self, eqn, [self._input(a, env) for a in eqn.inputs], uneven)
            if held is not None:
                return held
        if primitive is axis_index_p:
            values = [np.int32(self.index_along(eqn.params["axes"], p)) for p in range(self.count)]
            return [Held(self.per_device(eqn.outputs[0].aval, values))]
        if len(per_body) == 1 and len(eqn.inputs) == 1:
            lazy = self._lazy(eqn, self._input(eqn.inputs[0], env))
            if lazy is not None:
                return [lazy]
        if primitive is axis_slice_p:
            held = self._input(eqn.inputs[0], env)
            atom = self.whole_value(held) if isinstance(held.atom, Var) else self._var(held.atom)
            return [Held(self.own_slice(atom, eqn.params["axis"], eqn.params["axes"]))]
        inputs = []
        for k, atom in enumerate(eqn.inputs):
            if isinstance(atom, Literal):
                inputs.append(self._literal([e.inputs[k] for e in per_body], body_of))
            else:
                inputs.append(self.whole_value(env[atom]))
        outputs = [Var(v.aval) for v in eqn.outputs]
        collective = primitive.rules.collective
        if collective is not None:  # blocks of one shape per group: shard_map checked that
            avals = [per_body[b].inputs[0].aval for b in body_of]
            nbytes = collective.bytes(eqn.params, avals)
            shapes = tuple(a.shape for a in avals)
            self.steps.append(
                Collective(collective, eqn.params, inputs[0], outputs[0], shapes, nbytes)
            )
        else:
            params = tuple(per_body[b].params for b in body_of)
            self.steps.append(
                Compute(
                    eqn,
                    tuple(inputs),
                    tuple(outputs),
                    tuple(whole(v.aval) for v in outputs),
                    params,
                    reusable=_same_shape_relations(per_body),
                )
            )
        return [Held(v) for v in outputs]

    def _lazy(self, eqn: Equation, held: Held) -> Held | None:
        """The result of a gather, slice or unit reshape kept split, with no data moved
        (body_splits.py's rules); None where the equation needs the whole value."""
        splits = lazy_splits(eqn, held.splits)
        if splits is None:
            return None
        shape = held_shape(eqn.outputs[0].aval.shape, splits)
        if splits == held.splits and shape == held_shape(eqn.inputs[0].aval.shape, splits):
            return Held(self._var(held.atom), splits)  # the same data (pvary)
        return Held(self.reshape(self._var(held.atom), shape), splits)

    def _var(self, atom) -> Var:
        """``atom`` as a value on the devices (a literal: the same on every device)."""
        if isinstance(atom, Var):
            return atom
        return self.per_device(atom.aval, [np.asarray(atom.value, atom.aval.dtype)] * self.count)

    def _input(self, atom, env) -> Held:
        return Held(atom) if isinstance(atom, Literal) else env[atom]

    def _literal(self, literals: list[Literal], body_of) -> Var | Literal:
        """One literal, or a per-device value where uneven bodies wrote different ones."""
        first = literals[0]
        if all(_same_value(x.value, first.value) for x in literals):
            return first
        return self.per_device(first.aval, [literals[b].value for b in body_of])  # stay weak

    def per_device(self, aval, values: list) -> Var:
        var = Var(aval)
        self.steps.append(PerDevice(var, tuple(values)))
        return var

    def index_along(self, axes: tuple[str, ...], position: int) -> int:
        """The device's linear index over ``axes`` (read major to minor)."""
        sizes = dict(self.mesh.shape)
        coord = dict(zip(self.mesh.axis_names, self.coords[position], strict=True))
        index = 0
        for a in axes:
            index = index * sizes[a] + coord[a]
        return index

    # --- splits (nested pmap, spmd/transforms/body_splits.py) ---------------------------

    def whole_value(self, held: Held):
        """The value whole on every device: its splits gathered (once per value)."""
        if not held.splits:
            return held.atom
        cached = self._whole.get(held.atom)
        if cached is not None:
            return cached
        atom = held.atom
        for dim, axis in held.splits:
            atom = self.gather(atom, dim, axis)
        self._whole[held.atom] = atom
        return atom

    def gather(self, atom: Var, dim: int, axis: str) -> Var:
        size = self.mesh.shape[axis]
        params = dict(axes=(axis,), size=size, axis=dim, tiled=True)
        out = Var(all_gather_p.rules.shape(atom.aval, **params))
        collective = all_gather_p.rules.collective
        nbytes = collective.bytes(params, [atom.aval] * self.count)
        shapes = (atom.aval.shape,) * self.count
        self.steps.append(Collective(collective, params, atom, out, shapes, nbytes))
        return out

    def reshape(self, atom, shape: tuple[int, ...]) -> Var:
        out = Var(dataclasses.replace(atom.aval, shape=shape))
        eqn = Equation(reshape_p, [atom], [out], {"new_sizes": shape})
        self.steps.append(
            Compute(eqn, (atom,), (out,), (whole(out.aval),), (eqn.params,) * self.count)
        )
        return out

    def own_slice(self, atom: Var, dim: int, axes: tuple[str, ...]) -> Var:
        """Each device's index along ``dim`` of a value it holds whole: its linear index
        over ``axes``."""
        out = Var(axis_slice_p.rules.shape(atom.aval, axis=dim))
        eqn = Equation(axis_slice_p, [atom], [out], {"axis": dim, "axes": axes})
        params = tuple(
            {"axis": dim, "axes": axes, "index": self.index_along(axes, p)}
            for p in range(self.count)
        )
        self.steps.append(Compute(eqn, (atom,), (out,), (whole(out.aval),), params))
        return out

    def broadcast_from_first(self, atom: Var, axes: tuple[str, ...]) -> Var:
        """Every device of each group along ``axes`` takes the first one's value."""
        out = Var(atom.aval)
        params = {"axes": axes}
        nbytes = BROADCAST.bytes(params, [atom.aval] * self.count)
        shapes = (atom.aval.shape,) * self.count
        self.steps.append(Collective(BROADCAST, params, atom, out, shapes, nbytes))
        return out


def _same_value(a, b) -> bool:
    return type(a) is type(b) and np.array_equal(a, b)


def _same_shape_relations(per_body: list[Equation]) -> bool:
    """Whether every body's equation relates operand and result shapes as the first's does
    (so a dead operand's buffer may hold the result on every device, or on none)."""

    def relation(eqn: Equation) -> tuple:
        out = eqn.outputs[0].aval.shape if eqn.outputs else None
        return tuple(a.aval.shape == out for a in eqn.inputs)

    first = relation(per_body[0])
    return all(relation(e) == first for e in per_body[1:])
