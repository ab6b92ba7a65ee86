"""The partitioner: a global Program plus shardings → per-device steps with explicit collectives.

Equations on host values run once on the host. Every other equation runs on each device's
blocks; before it, each operand is brought to the sharding the equation's decision wants,
by slicing host values (free) or by a resharding plan of collective steps. Results are
brought to the output shardings last. ``as_text`` prints the per-device program and
``explain`` says why every value is laid out as it is and what every collective costs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from spmd.core.program import Equation, Literal, Program, Var
from spmd.sharding.layout import bounds_to_slices
from spmd.sharding.mesh import Mesh
from spmd.sharding.propagate import Propagation, propagate
from spmd.sharding.reshard import Step, format_bytes, plan, value_layout
from spmd.sharding.rules import ValueSharding


@dataclass(frozen=True, eq=False)
class Compute:
    """Run ``eqn`` on every device's blocks; ``params`` per device position."""

    eqn: Equation
    inputs: tuple  # Var (a device value) or Literal per operand
    outputs: tuple[Var, ...]
    shardings: tuple[ValueSharding, ...]
    params: tuple[dict, ...]
    reusable: bool = True  # may write its result into a dying operand's buffer


@dataclass(frozen=True, eq=False)
class Collective:
    """A collective a per-device program wrote (psum, all_gather, ...), over mesh axes."""

    name: str
    params: dict
    input: Var | Literal
    output: Var
    nbytes: int  # bytes it moves between devices
    reason: str = "written in the per-device program"

    @property
    def kind(self) -> str:
        return COLLECTIVE_KINDS[self.name]


COLLECTIVE_KINDS = {
    "psum": "all-reduce",
    "all_gather": "all-gather",
    "psum_scatter": "reduce-scatter",
    "all_to_all": "all-to-all",
    "ppermute": "permute",
    "broadcast": "broadcast",
}


@dataclass(frozen=True, eq=False)
class PerDevice:
    """A value that differs by device and is known when the program is built."""

    var: Var
    values: tuple  # per device position


@dataclass(frozen=True, eq=False)
class Alias:
    """``dst`` names the buffers of ``src``."""

    src: Var
    dst: Var


@dataclass(frozen=True, eq=False)
class FromHost:
    """Each device takes its block of host value ``host`` (a view: nothing is copied)."""

    host: Var
    var: Var
    sharding: ValueSharding
    slices: tuple[tuple[slice, ...], ...]  # per device position


@dataclass(frozen=True, eq=False)
class Reshard:
    """Bring ``src`` to ``dst``'s sharding through ``steps``."""

    src: Var
    dst: Var
    steps: tuple[Step, ...]
    reason: str


@dataclass(eq=False)
class Partitioned:
    program: Program
    mesh: Mesh
    propagation: Propagation
    in_shardings: list[ValueSharding | None]
    host_equations: list[Equation] = field(default_factory=list)
    steps: list = field(default_factory=list)
    outputs: list = field(default_factory=list)  # per output: (atom, ValueSharding or None)

    @property
    def collectives(self) -> list:
        """Every collective: resharding Steps and per-device programs' Collectives."""
        found = []
        for step in self.steps:
            if isinstance(step, Reshard):
                found.extend(s for s in step.steps if s.is_collective)
            elif isinstance(step, Collective):
                found.append(step)
        return found

    def as_text(self) -> str:
        return _as_text(self)

    def explain(self) -> str:
        return _explain(self)


def partition(
    program: Program,
    mesh: Mesh,
    in_shardings: list[ValueSharding | None],
    out_targets: list[ValueSharding | None],
) -> Partitioned:
    """Per-device steps for ``program`` with arguments laid out as ``in_shardings`` (None:
    host data) and results wanted as ``out_targets`` (None: as propagated)."""
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
        from spmd.transforms.manual import Held, Lowering

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


# --- printing ----------------------------------------------------------------------------------


class _Names(dict):
    def __missing__(self, var) -> str:
        i = len(self)
        self[var] = "abcdefghijklmnopqrstuvwxyz"[i % 26] + ("" if i < 26 else str(i // 26))
        return self[var]


def _short_aval(var: Var, shape) -> str:
    text = str(var.aval)
    return text[: text.index("[")] + "[" + ",".join(map(str, shape)) + "]"


def _as_text(part: Partitioned) -> str:
    names = _Names()
    mesh = part.mesh

    def binder(var: Var, sharding: ValueSharding | None) -> str:
        if sharding is None:
            return f"{names[var]}:{var.aval}"
        layout = value_layout(mesh, sharding.dims, var.aval.shape)
        block = layout.block_shape((0,) * len(layout.parts))
        note = f"{{{sharding}}}" if any(sharding.dims) or sharding.pending else ""
        return f"{names[var]}:{_short_aval(var, block)}{note}"

    def atom(a) -> str:
        if isinstance(a, Literal):
            return repr(np.asarray(a.value).item())
        return names[a]

    args = " ".join(
        binder(v, s) for v, s in zip(part.program.invars, part.in_shardings, strict=True)
    )
    lines = [f"{{ per-device program on mesh {dict(mesh.shape)}; {args}. let"]
    for eqn in part.host_equations:
        outs = " ".join(binder(v, None) for v in eqn.outputs)
        ins = " ".join(atom(a) for a in eqn.inputs)
        lines.append(
            f"    {outs} = {eqn.primitive.name}{_params(eqn.params)} {ins}   # on the host"
        )
    for step in part.steps:
        if isinstance(step, Compute):
            outs = " ".join(binder(v, s) for v, s in zip(step.outputs, step.shardings, strict=True))
            ins = " ".join(atom(a) for a in step.inputs)
            lines.append(f"    {outs} = {step.eqn.primitive.name}{_params(step.eqn.params)} {ins}")
        elif isinstance(step, FromHost):
            lines.append(
                f"    {binder(step.var, step.sharding)} = slice_from_host {atom(step.host)}"
            )
        elif isinstance(step, Collective):
            out = binder(step.output, None)
            lines.append(f"    {out} = {step.name}{_params(step.params)} {atom(step.input)}")
        elif isinstance(step, PerDevice):
            shown = ", ".join(str(np.asarray(v).item()) if np.ndim(v) == 0 else "…"
                              for v in step.values)  # fmt: skip
            lines.append(f"    {binder(step.var, None)} = per_device[{shown}]")
        elif isinstance(step, Alias):
            names[step.dst] = names[step.src]
        else:
            current = names[step.src]
            for k, s in enumerate(step.steps):
                target = step.dst if k == len(step.steps) - 1 else Var(step.dst.aval)
                axes = ", ".join(map(repr, s.axes))
                op = f" op={s.src.op}" if s.kind in ("all-reduce", "reduce-scatter") else ""
                kind = s.kind.replace("-", "_").replace(" ", "_")
                lines.append(f"    {binder(target, s.dst)} = {kind}[axes=({axes}){op}] {current}")
                current = names[target]
    outs = ", ".join(atom(a) for a, _ in part.outputs)
    lines.append(f"  in ({outs}) }}")
    return "\n".join(lines)


def _params(params: dict) -> str:
    shown = {k: v for k, v in params.items() if k != "sharding"}
    if not shown:
        return ""
    return "[" + " ".join(f"{k}={v!r}" for k, v in sorted(shown.items())) + "]"


def _explain(part: Partitioned) -> str:
    names = _Names()
    prop = part.propagation
    lines = [f"Mesh {dict(part.mesh.shape)}", "Values:"]
    for var, sharding in zip(part.program.invars, part.in_shardings, strict=True):
        where = "on the host (sliced for free where needed)" if sharding is None else sharding
        lines.append(f"  {names[var]}: {var.aval} argument, {where}")
    for eqn in part.program.equations:
        for var in eqn.outputs:
            sharding = prop.shardings.get(var)
            if sharding is None:
                lines.append(f"  {names[var]}: {var.aval} = {eqn.primitive.name}, on the host")
            else:
                reason = prop.reasons.get(var, "")
                lines.append(
                    f"  {names[var]}: {var.aval} = {eqn.primitive.name} -> {sharding} — {reason}"
                )
    lines.append("Collectives:")
    total = 0
    found = False
    for step in part.steps:
        if isinstance(step, Collective):
            found = True
            total += step.nbytes
            axes = ", ".join(map(repr, step.params["axes"]))
            lines.append(
                f"  {step.kind} over ({axes}) of {names[step.input]}: {step.name}, "
                f"{format_bytes(step.nbytes)} moved — {step.reason}"
            )
            continue
        if not isinstance(step, Reshard):
            continue
        for s in step.steps:
            if not s.is_collective:
                continue
            found = True
            total += s.nbytes
            axes = ", ".join(map(repr, s.axes))
            lines.append(
                f"  {s.kind} over ({axes}) of {names[step.src]}: {s.src} -> {s.dst}, "
                f"{format_bytes(s.nbytes)} moved — {step.reason}"
            )
    if not found:
        lines.append("  none: every operand already lies where its equation runs")
    else:
        lines.append(f"  total {format_bytes(total)} moved between devices")
    return "\n".join(lines)
