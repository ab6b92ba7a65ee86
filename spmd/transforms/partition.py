"""The partitioner: a global Program plus shardings → per-device steps with explicit collectives.

Equations on host values run once on the host. Every other equation runs on each device's
blocks; before it, each operand is brought to the sharding the equation's decision wants,
by slicing host values (free) or by a resharding plan of collective steps. Results are
brought to the output shardings last. ``as_text`` prints the per-device program and
``explain`` says why every value is laid out as it is and what every collective costs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from spmd.core.inline import inline_calls
from spmd.core.program import Equation, Literal, Program, Var
from spmd.sharding.device_program import (
    Alias,
    Compute,
    FromHost,
    Partitioned,
    Reshard,
)
from spmd.sharding.layout import bounds_to_slices
from spmd.sharding.mesh import Mesh
from spmd.sharding.plans import plan, value_layout
from spmd.sharding.propagate import BodiesDecision, propagate
from spmd.sharding.rules import ValueSharding
from spmd.transforms.fusion import fuse


def partition(
    program: Program,
    mesh: Mesh,
    in_shardings: list[ValueSharding | None],
    out_targets: list[ValueSharding | None],
) -> Partitioned:
    """Per-device steps for ``program`` with arguments laid out as ``in_shardings`` (None:
    host data) and results wanted as ``out_targets`` (None: as propagated)."""
    program = inline_calls(program)
    propagation = propagate(program, mesh, in_shardings, out_targets)
    part = Partitioned(program, mesh, propagation, list(in_shardings))
    builder = _Builder(part)
    for index, eqn in enumerate(program.equations):
        decision = propagation.decisions.get(index)
        if decision is None:
            part.host_equations.append(eqn)
            continue
        inputs = []
        for k, (atom, want) in enumerate(zip(eqn.inputs, decision.operands, strict=True)):
            if isinstance(atom, Literal):
                inputs.append(atom)
            else:
                inputs.append(builder.get(atom, want, f"{eqn.primitive.name} (operand {k})"))
        if isinstance(decision, BodiesDecision):  # control flow: control_flow/partitioning.py
            part.steps.append(decision.lower(inputs, eqn.outputs))
            builder.have.update(zip(eqn.outputs, decision.results, strict=True))
            continue
        if eqn.primitive.rules.per_device is not None:
            builder.lower_call(eqn, inputs, decision.results)
            continue
        params = builder.local_params(eqn, inputs, decision.results)
        part.steps.append(Compute(eqn, tuple(inputs), tuple(eqn.outputs), decision.results, params))
        for var, sharding in zip(eqn.outputs, decision.results, strict=True):
            builder.have[var] = sharding
    for i, (atom, target) in enumerate(zip(program.outvars, out_targets, strict=True)):
        have = None if isinstance(atom, Literal) else propagation.shardings.get(atom)
        if have is None and target is None:
            part.outputs.append((atom, None))
            continue
        want = target if target is not None else have.without_pending()
        if isinstance(atom, Literal):
            part.outputs.append((atom, want))
            continue
        who = f"output {i}" + (" (out_shardings)" if target is not None else "")
        part.outputs.append((builder.get(atom, want, who), want))
    fuse(part)
    return part


class _Builder:
    def __init__(self, part: Partitioned) -> None:
        self.part = part
        self.have: dict[Var, ValueSharding | None] = {
            var: sharding
            for var, sharding in zip(part.program.invars, part.in_shardings, strict=True)
        }
        self.versions: dict[tuple[Var, ValueSharding], Var] = {}

    def get(self, var: Var, want: ValueSharding, who: str) -> Var:
        """``var`` laid out as ``want``: itself, or a new value made by slicing or resharding."""
        have = self.have.get(var)
        if have == want:
            return var
        key = (var, want)
        if key in self.versions:
            return self.versions[key]
        mesh, aval = self.part.mesh, var.aval
        new = Var(aval)
        if have is None:
            layout = value_layout(mesh, want.dims, aval.shape)
            slices = tuple(bounds_to_slices(layout.bounds(b)) for b in layout.blocks)
            self.part.steps.append(FromHost(var, new, want, slices))
        else:
            steps = plan(mesh, aval.shape, aval.dtype.itemsize, have, want)
            self.part.steps.append(Reshard(var, new, steps, _why(who, have, want)))
        self.have[new] = want
        self.versions[key] = new
        return new

    def lower_call(self, eqn: Equation, inputs: list, results) -> None:
        """Emit the steps of a per-device program's call (shard_map, pmap)."""
        from spmd.transforms.per_device_lowering import Held, Lowering

        lowering = Lowering(self.part.mesh, self.part.steps)
        held = eqn.primitive.rules.per_device(lowering, eqn, [Held(a) for a in inputs])
        renamed: dict[Var, Var] = {}
        for var, out, sharding in zip(eqn.outputs, held, results, strict=True):
            atom = out.atom
            if isinstance(atom, Literal):
                value = np.asarray(atom.value, atom.aval.dtype)
                atom = lowering.per_device(atom.aval, [value] * self.part.mesh.size)
            if not self._rename_last_output(atom, var, sharding):
                self.part.steps.append(Alias(renamed.get(atom, atom), var))
            renamed.setdefault(atom, var)
            self.have[var] = sharding

    def _rename_last_output(self, atom, var: Var, sharding: ValueSharding) -> bool:
        """Let the last step, when it computed ``atom``, write ``var`` instead (no step
        after it can read ``atom``), so that no Alias ends its run of device work."""
        last = self.part.steps[-1] if self.part.steps else None
        if not isinstance(last, Compute) or not any(v is atom for v in last.outputs):
            return False
        outputs = tuple(var if v is atom else v for v in last.outputs)
        shardings = tuple(
            sharding if v is atom else s for v, s in zip(last.outputs, last.shardings, strict=True)
        )
        self.part.steps[-1] = dataclasses.replace(last, outputs=outputs, shardings=shardings)
        return True

    def local_params(self, eqn: Equation, inputs: list, results) -> tuple[dict, ...]:
        count = self.part.mesh.size
        local = eqn.primitive.rules.local_params
        if local is None:
            return (eqn.params,) * count
        mesh = self.part.mesh

        def layouts(atom, sharding):
            if isinstance(atom, Literal):
                return None
            return value_layout(mesh, sharding.dims, atom.aval.shape)

        def blocks(layout) -> list[tuple[int, ...]]:
            if layout is None:
                return [()] * count
            return [layout.block_shape(b) for b in layout.blocks]

        ins = [layouts(a, self.have[a] if isinstance(a, Var) else None) for a in inputs]
        outs = [layouts(v, s) for v, s in zip(eqn.outputs, results, strict=True)]
        in_blocks, out_blocks = [blocks(x) for x in ins], [blocks(x) for x in outs]
        out_bounds = [[x.bounds(b) for b in x.blocks] for x in outs]
        dtypes = [a.aval.dtype for a in inputs]
        return tuple(
            local(
                eqn.params,
                [b[i] for b in in_blocks],
                [b[i] for b in out_blocks],
                dtypes,
                [b[i] for b in out_bounds],
            )
            for i in range(count)
        )


def _why(who: str, have: ValueSharding, want: ValueSharding) -> str:
    """Why a value is resharded, in words: ``who`` is the equation or output that reads it."""
    if have.pending and (want.pending, want.op) != (have.pending, have.op):
        where = f", split as {want.spec_text()}" if any(want.dims) else " on every device"
        return f"{who} needs the full value, not a pending {have.op}{where}"
    return f"{who} reads it as {want.spec_text()}, and it lies as {have.spec_text()}"
