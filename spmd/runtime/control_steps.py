"""Running loops and branches: a Loop step's body (and condition) or a Branch step's chosen
body run as sub-steps through the executor's own step runner, with their values bound
afresh each time.

A predicate or branch index is read on this process's devices, which must agree: every
device, and every process, then runs the same number of iterations and the same branch,
so the collectives inside the bodies meet. Partitioning makes it so (a predicate is
reduced before the loop reads it, a per-device program's must not vary over the mesh); a
disagreement found here is an error, never a hang.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.errors import SpmdValueError
from spmd.runtime.buffers import Stacked, host_view
from spmd.sharding.device_program import Branch, Loop


def run_loop(run, step: Loop, env: dict, speaker) -> None:
    """Run ``step`` on ``env`` (``run``: the executor's _Run), binding its outputs."""
    values = [run.read(a, None, env) for a in step.operands]
    first, second = step.counts
    if step.kind == "while":
        cond_consts, body_consts, carry = (
            values[:first],
            values[first : first + second],
            values[first + second :],
        )
        while _decided(run, run.block(step.cond, cond_consts + carry, speaker)[0], "while"):
            carry = run.block(step.body, body_consts + carry, speaker)
        env.update(zip(step.outputs, carry, strict=True))
        return
    consts, carry, xs = values[:first], values[first : first + second], values[first + second :]
    devices = run.mesh.devices.flat
    ys = [
        {p: Stacked(devices[p].library.xp, step.length, devices[p]) for p in run.positions}
        for _ in step.y_blocks
    ]
    order = reversed(range(step.length)) if step.reverse else range(step.length)
    for i in order:
        slices = [{p: x[p][i, ...] for p in x} for x in xs]
        outs = run.block(step.body, consts + carry + slices, speaker)
        carry = outs[:second]
        for found, y in zip(ys, outs[second:], strict=True):
            for p in run.positions:
                found[p].put(i, y[p])
    stacked = [
        {p: found[p].result(blocks[p], var.aval.dtype) for p in run.positions}
        for found, blocks, var in zip(ys, step.y_blocks, step.outputs[second:], strict=True)
    ]
    env.update(zip(step.outputs, carry + stacked, strict=True))


def run_branch(run, step: Branch, env: dict, speaker) -> None:
    index = _decided(run, run.read(step.index, None, env), "cond")
    chosen = step.branches[min(max(int(index), 0), len(step.branches) - 1)]
    values = [run.read(a, None, env) for a in step.operands]
    env.update(zip(step.outputs, run.block(chosen, values, speaker), strict=True))


def _decided(run, buffers: dict[int, Any], who: str):
    """The one value every device of this process holds in ``buffers`` (a predicate or an
    index); devices that disagree would run different iterations: an error."""
    devices = run.mesh.devices.flat
    found = {
        p: np.asarray(b if isinstance(b, bool | int) else host_view(devices[p], b)).item()
        for p, b in buffers.items()
    }
    distinct = set(found.values())
    if len(distinct) > 1:
        raise SpmdValueError(
            f"{who}: the devices disagree on the {'predicate' if who == 'while' else 'index'} "
            f"({found} by mesh position), so they would run different numbers of iterations "
            f"or different branches and their collectives would not meet. Make it the same on "
            f"every device: reduce it with psum or pmax over the mesh axes it varies over."
        )
    (value,) = distinct
    return value
