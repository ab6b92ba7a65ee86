"""Printing per-device programs: ``as_text`` (the steps, collectives included) and ``explain``
(every value's sharding and why; every collective's kind, axes, bytes and reason)."""

from __future__ import annotations

import numpy as np

from spmd.core.fused import fused_elementwise_p
from spmd.core.program import Literal, Var
from spmd.sharding.device_program import (
    Alias,
    Branch,
    Collective,
    Compute,
    FromHost,
    Loop,
    Partitioned,
    PerDevice,
    Reshard,
    blocks_of,
)
from spmd.sharding.plans import format_bytes, value_layout
from spmd.sharding.rules import ValueSharding


class _Names(dict):
    def __missing__(self, var) -> str:
        i = len(self)
        self[var] = "abcdefghijklmnopqrstuvwxyz"[i % 26] + ("" if i < 26 else str(i // 26))
        return self[var]


def _short_aval(var: Var, shape) -> str:
    text = str(var.aval)
    return text[: text.index("[")] + "[" + ",".join(map(str, shape)) + "]"


def as_text(part: Partitioned) -> str:
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
    lines.extend(_step_lines(part.steps, names, binder, atom, "    "))
    outs = ", ".join(atom(a) for a, _ in part.outputs)
    lines.append(f"  in ({outs}) }}")
    return "\n".join(lines)


def _step_lines(steps, names, binder, atom, indent: str) -> list[str]:
    """The printed steps, each line starting with ``indent``; bodies nested deeper."""
    lines = []
    for step in steps:
        if isinstance(step, Compute) and is_fused(step):
            lines.extend(_fused_lines(step, names, binder, atom, indent))
        elif isinstance(step, Compute):
            outs = " ".join(binder(v, s) for v, s in zip(step.outputs, step.shardings, strict=True))
            ins = " ".join(atom(a) for a in step.inputs)
            lines.append(
                f"{indent}{outs} = {step.eqn.primitive.name}{_params(step.eqn.params)} {ins}"
            )
        elif isinstance(step, FromHost):
            lines.append(
                f"{indent}{binder(step.var, step.sharding)} = slice_from_host {atom(step.host)}"
            )
        elif isinstance(step, Collective):
            out = binder(step.output, None)
            lines.append(f"{indent}{out} = {step.name}{_params(step.params)} {atom(step.input)}")
        elif isinstance(step, PerDevice):
            shown = ", ".join(str(np.asarray(v).item()) if np.ndim(v) == 0 else "…"
                              for v in step.values)  # fmt: skip
            lines.append(f"{indent}{binder(step.var, None)} = per_device[{shown}]")
        elif isinstance(step, Alias):
            names[step.dst] = names[step.src]
        elif isinstance(step, Loop | Branch):
            lines.extend(_control_lines(step, names, binder, atom, indent))
        else:
            current = names[step.src]
            for k, s in enumerate(step.steps):
                target = step.dst if k == len(step.steps) - 1 else Var(step.dst.aval)
                axes = ", ".join(map(repr, s.axes))
                op = f" op={s.src.op}" if s.kind in ("all-reduce", "reduce-scatter") else ""
                kind = s.kind.replace("-", "_").replace(" ", "_")
                lines.append(
                    f"{indent}{binder(target, s.dst)} = {kind}[axes=({axes}){op}] {current}"
                )
                current = names[target]
    return lines


def is_fused(step: Compute) -> bool:
    return step.eqn.primitive is fused_elementwise_p


def _fused_lines(step: Compute, names, binder, atom, indent: str) -> list[str]:
    """A fused step: its results, then its members one a line, in braces (the values only
    members read are chunks of a kernel, never arrays)."""
    kernel = step.eqn.params["kernel"]
    outs = " ".join(binder(v, s) for v, s in zip(step.outputs, step.shardings, strict=True))
    ins = " ".join(atom(a) for a in step.inputs)
    lines = [f"{indent}{outs} = fused_elementwise[steps={len(kernel.members)}] {ins} {{"]
    for member in kernel.members:
        operands = " ".join(atom(a) for a in member.inputs)
        name = f"{names[member.output]}:{str(member.output.aval).split('[')[0]}"
        lines.append(
            f"{indent}    {name} = {member.primitive.name}{_params(member.params)} {operands}"
        )
    lines[-1] += " }"
    return lines


def _control_lines(step, names, binder, atom, indent: str) -> list[str]:
    """A Loop or Branch: its equation line, then each body's steps nested in braces."""
    outs = " ".join(binder(v, s) for v, s in zip(step.outputs, step.shardings, strict=True))
    if isinstance(step, Loop):
        shown = {"counts": step.counts}
        if step.kind == "scan":
            shown.update(length=step.length, reverse=step.reverse)
        ins = " ".join(atom(a) for a in step.operands)
        lines = [f"{indent}{outs} = {step.kind}{_params(shown)} {ins}"]
    else:
        ins = " ".join(atom(a) for a in (step.index, *step.operands))
        lines = [f"{indent}{outs} = cond[branches={len(step.branches)}] {ins}"]
    for name, block in blocks_of(step):
        shardings = block.in_shardings or (None,) * len(block.invars)
        args = " ".join(binder(v, s) for v, s in zip(block.invars, shardings, strict=True))
        lines.append(f"{indent}  {name} {{ {args}. let")
        for eqn in block.host_equations:
            host_outs = " ".join(binder(v, None) for v in eqn.outputs)
            host_ins = " ".join(atom(a) for a in eqn.inputs)
            lines.append(
                f"{indent}      {host_outs} = {eqn.primitive.name} {host_ins}   # on the host"
            )
        lines.extend(_step_lines(block.steps, names, binder, atom, indent + "      "))
        lines.append(f"{indent}    in ({', '.join(atom(a) for a in block.outvars)}) }}")
    return lines


def _collective_lines(steps, names, where: str) -> list[tuple[str, int]]:
    """Each collective of ``steps`` as (line, bytes), those of loop and branch bodies
    nested (``where``: which body, in words; their bytes are per iteration)."""
    found = []
    for step in steps:
        if isinstance(step, Collective):
            axes = ", ".join(map(repr, step.params["axes"]))
            line = (
                f"  {step.kind} over ({axes}) of {names[step.input]}: {step.name}, "
                f"{format_bytes(step.nbytes)} moved — {step.reason}{where}"
            )
            found.append((line, step.nbytes))
        elif isinstance(step, Reshard):
            for s in step.steps:
                if not s.is_collective:
                    continue
                axes = ", ".join(map(repr, s.axes))
                line = (
                    f"  {s.kind} over ({axes}) of {names[step.src]}: {s.src} -> {s.dst}, "
                    f"{format_bytes(s.nbytes)} moved — {step.reason}{where}"
                )
                found.append((line, s.nbytes))
        for name, block in blocks_of(step):
            what = step.kind if isinstance(step, Loop) else "cond"
            each = " (each iteration)" if isinstance(step, Loop) else ""
            inner = f", in the {name} of {what}{each}{where}"
            found.extend(_collective_lines(block.steps, names, inner))
    return found


def _fused_explained(steps, names, where: str) -> list[str]:
    """Each fused step of ``steps`` (loop and branch bodies' included): which equations it
    computes and which of their values it gives back as arrays."""
    found = []
    for step in steps:
        if isinstance(step, Compute) and is_fused(step):
            kernel = step.eqn.params["kernel"]
            members = ", ".join(f"{names[m.output]} = {m.primitive.name}" for m in kernel.members)
            given = ", ".join(names[v] for v in kernel.outputs)
            found.append(
                f"  {len(kernel.members)} steps fused into one: {members}; "
                f"arrays made: {given}{where}"
            )
        for name, block in blocks_of(step):
            what = step.kind if isinstance(step, Loop) else "cond"
            found.extend(_fused_explained(block.steps, names, f", in the {name} of {what}{where}"))
    return found


def _params(params: dict) -> str:
    shown = {k: v for k, v in params.items() if k != "sharding"}
    if not shown:
        return ""
    return "[" + " ".join(f"{k}={v!r}" for k, v in sorted(shown.items())) + "]"


def explain(part: Partitioned) -> str:
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
    fused = _fused_explained(part.steps, names, "")
    if fused:
        lines.append("Fused (each a single pass over each device's blocks, no temporaries):")
        lines.extend(fused)
    lines.append("Collectives:")
    found = _collective_lines(part.steps, names, "")
    lines.extend(line for line, _ in found)
    total = sum(nbytes for _, nbytes in found)  # a loop body's: once
    if not found:
        lines.append("  none: every operand already lies where its equation runs")
    else:
        lines.append(f"  total {format_bytes(total)} moved between devices")
    return "\n".join(lines)
