"""The fusion pass over per-device programs: runs of elementwise Compute steps become one
``fused_elementwise`` step each (spmd/core/fusion.py plans them, spmd/core/fused.py runs
them), on NumPy devices and while ``config.fusion`` is on (``SPMD_FUSION=0`` turns it off).

A member step computes one elementwise equation on blocks of the kernel's layout (its
result's shape and sharding); steps that read no value of the kernel (other Compute steps,
slices from the host, per-device constants) move before it, and any other step ends it.
"""

from __future__ import annotations

import numpy as np

from spmd.config import config
from spmd.core.fused import fused_equation, kernel_member
from spmd.core.fusion import Candidate, Group, plan
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
)


def fuse(part: Partitioned) -> None:
    """Replace ``part``'s runs of elementwise steps by fused steps, where fusion is on."""
    if not config.fusion or part.mesh.devices.flat[0].library.xp is not np:
        return
    part.steps = fused_steps(part.steps, [atom for atom, _ in part.outputs])


def fused_steps(steps: list, results: list) -> list:
    """``steps`` with their runs of elementwise Compute steps fused; ``results`` are the
    atoms read after them (a program's outputs, a body's results)."""
    order = plan([_candidate(step) for step in steps], results)
    return [_fused(entry, steps) if isinstance(entry, Group) else steps[entry] for entry in order]


def _candidate(step) -> Candidate:
    if isinstance(step, Compute):
        member, final = _member(step)
        return Candidate(step.inputs, step.outputs, member, _key(step), True, final)
    if isinstance(step, FromHost | PerDevice):
        return Candidate((), (step.var,), movable=True)
    if isinstance(step, Reshard | Alias):
        return Candidate((step.src,), (step.dst,))
    if isinstance(step, Collective):
        return Candidate((step.input,), (step.output,))
    if isinstance(step, Loop):
        return Candidate(step.operands, step.outputs)
    if isinstance(step, Branch):
        return Candidate((step.index, *step.operands), step.outputs)
    raise TypeError(f"internal error: the fusion pass met a {type(step).__name__} step")


def _member(step: Compute) -> tuple:
    """The step's equation as a kernel member, and whether it may only end a kernel: one
    result, the same parameters on every device, and block shapes that relate alike on
    every device (``reusable``)."""
    params = step.params[0]
    if len(step.outputs) != 1 or not step.reusable or any(p != params for p in step.params):
        return None, False
    return kernel_member(step.eqn.primitive, params, step.inputs, step.outputs[0])


def _key(step: Compute):
    return (step.outputs[0].aval.shape, step.shardings[0]) if len(step.outputs) == 1 else None


def _fused(group: Group, steps: list) -> Compute:
    kernel = group.kernel
    members = [steps[i] for i in group.indices]
    sharding_of = {
        var: sharding
        for step in members
        for var, sharding in zip(step.outputs, step.shardings, strict=True)
    }
    eqn = fused_equation(kernel)
    return Compute(
        eqn,
        kernel.inputs,
        kernel.outputs,
        tuple(sharding_of[v] for v in kernel.outputs),
        (eqn.params,) * len(members[0].params),
    )
