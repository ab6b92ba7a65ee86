"""The executor: runs a partitioned program on this process's devices' blocks at once.

Every process runs the same program; each holds and computes only the blocks of its own
mesh positions (``{position: buffer}``), and collectives go through the Communicator of the
mesh's processes. Host equations run once per process. Runs of consecutive per-device
equations run as one task per device on the thread pool (NumPy and BLAS release the GIL),
inline when the blocks are small; contractions share BLAS threads so that devices do not
oversubscribe the cores (spmd/runtime/cores.py). A contraction with an operand every
device shares, one whose partial sums only a reduction reads, and a step on buffers every
device shares run once for all of this process's devices instead
(spmd/runtime/stacked.py). Each device's values are dropped after
their last use, inside such runs too, so their memory returns while the program runs.
Before a program first runs across processes, the processes check that they all run the
same one.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spmd.core.interpret import apply
from spmd.core.program import Literal, Var
from spmd.runtime.array import Array
from spmd.runtime.buffers import host_view, on_device
from spmd.runtime.communicator import Communicator, communicator_for
from spmd.runtime.control_steps import run_branch, run_loop
from spmd.runtime.counting import record
from spmd.runtime.messages import EAGER, Speaker, fingerprint, speaking_for
from spmd.runtime.segments import PYTHON_SCALARS, Plan, drop, on, plan_of, run_segment
from spmd.runtime.stacked import Once, plan_for
from spmd.sharding.device import process_index
from spmd.sharding.device_program import (
    Alias,
    Block,
    Branch,
    Collective,
    Compute,
    FromHost,
    Loop,
    Partitioned,
    PerDevice,
    Reshard,
)
from spmd.sharding.device_program_text import as_text
from spmd.sharding.layout import bounds_to_slices
from spmd.sharding.mesh import Mesh, device_groups
from spmd.sharding.named import NamedSharding
from spmd.sharding.plans import value_layout


def local_positions(mesh: Mesh) -> tuple[int, ...]:
    """The mesh positions (flat device order) whose devices belong to this process."""
    here = process_index()
    return tuple(p for p, d in enumerate(mesh.devices.flat) if d.process_index == here)


def device_buffers(x: Array, mesh: Mesh, positions: Sequence[int]) -> dict[int, np.ndarray]:
    devices = mesh.devices.flat
    return {p: x._buffers[devices[p]] for p in positions}


def execute(
    part: Partitioned,
    args: Sequence[Any],
    consts: Sequence[Any],
    memory_kinds: Sequence[str | None],
    name: str = "a compiled program",
) -> list:
    """Run ``part`` on ``args``: results are Arrays on the mesh (or host values for outputs
    that never touched it, as NumPy arrays). ``name`` (``jit(f)``) is what messages to
    other processes say they belong to."""
    program, mesh = part.program, part.mesh
    prepared = _prepared(part)
    positions, comm = prepared.positions, prepared.comm
    if prepared.speakers is None:
        prepared.speakers = {}
        if comm.transport is not None:
            text = _fingerprint(part, memory_kinds)
            comm.agree(text, mesh.devices.flat, "the program to run")
            prepared.speakers = _speakers(part, name, fingerprint(text))
    host: dict[Var, Any] = dict(zip(program.constvars, consts, strict=True))
    env: dict[Var, dict] = {}
    for var, arg, sharding in zip(program.invars, args, part.in_shardings, strict=True):
        if sharding is None:
            host[var] = np.asarray(arg) if isinstance(arg, Array) else arg
        else:
            env[var] = device_buffers(arg, mesh, positions)
    _run_host(part.host_equations, host)
    if positions:  # none: no device here
        run = _Run(mesh, positions, comm, prepared.speakers)
        run.steps(part.steps, prepared.plan, env, host, None)
    results = []
    for (atom, sharding), kind in zip(part.outputs, memory_kinds, strict=True):
        if sharding is None:
            value = atom.value if isinstance(atom, Literal) else host[atom]
            results.append(np.asarray(value))
            continue
        if isinstance(atom, Literal):
            value = np.asarray(atom.value, atom.aval.dtype)
            buffers = _literal_blocks(value, sharding, mesh, positions)
        else:
            buffers = env.get(atom, {})
        target = NamedSharding(mesh, sharding.spec, kind)
        results.append(_as_array(target, buffers, atom.aval, mesh))
    return results


def _run_host(equations, host: dict) -> None:
    for eqn in equations:
        values = [a.value if isinstance(a, Literal) else host[a] for a in eqn.inputs]
        host.update(zip(eqn.outputs, apply(eqn.primitive, np, values, eqn.params), strict=True))


def _literal_blocks(value: np.ndarray, sharding, mesh: Mesh, positions) -> dict:
    layout = value_layout(mesh, sharding.dims, value.shape)
    return {p: value[bounds_to_slices(layout.bounds(layout.blocks[p]))] for p in positions}


@dataclass(eq=False)
class _Run:
    """One run of a program here: the mesh, this process's positions, the communicator and
    what each of the program's steps' messages say they are. It runs the program's steps
    and, through spmd/runtime/control_steps.py, its loop and branch bodies'."""

    mesh: Mesh
    positions: tuple[int, ...]
    comm: Communicator
    speakers: dict[int, Speaker]

    def steps(self, steps, plan: Plan, env: dict, host: dict, speaker: Speaker | None) -> None:
        """Run ``steps`` on ``env`` (``{var: {position: buffer}}``); their messages say
        ``speaker`` (None: each step of the program its own)."""
        mesh, positions, comm = self.mesh, self.positions, self.comm
        devices = mesh.devices.flat
        segment: list[tuple[Compute, Any]] = []
        once = self._once(steps, plan)
        for index, step in enumerate(steps):
            if isinstance(step, Compute):
                if once is not None and once.plan.runs(index):
                    run_segment(segment, env, positions)  # its inputs' blocks, at hand
                    segment = []
                    if once.compute(index, step, env):
                        _drop_dying(step, env, plan.last_use, index)
                        continue
                segment.append((step, plan.calls[index]))
                continue
            run_segment(segment, env, positions)
            segment = []
            if isinstance(step, Reshard) and once is not None and once.reshard(step, env):
                drop(env, plan.last_use, index)
                continue
            says = speaker or self.speakers.get(index, EAGER)
            if isinstance(step, Collective):
                with speaking_for(says):
                    env[step.output] = _collective(step, env, mesh, positions, comm)
            elif isinstance(step, PerDevice):
                env[step.var] = {p: on(devices[p], step.values[p]) for p in positions}
            elif isinstance(step, Alias):
                env[step.dst] = dict(env[step.src])  # each lets go of its blocks on its own
            elif isinstance(step, FromHost):
                value = host[step.host]
                if type(value) in PYTHON_SCALARS:  # keeps its weak type: 2.5 * f32 stays f32
                    env[step.var] = dict.fromkeys(positions, value)
                else:
                    value = np.asarray(value)
                    env[step.var] = {
                        p: on_device(devices[p], value[step.slices[p]]) for p in positions
                    }
            elif isinstance(step, Loop):
                run_loop(self, step, env, says)
            elif isinstance(step, Branch):
                run_branch(self, step, env, says)
            else:
                with speaking_for(says):
                    env[step.dst] = _reshard(step, env[step.src], mesh, comm)
            drop(env, plan.last_use, index)
        run_segment(segment, env, positions)

    def _once(self, steps, plan: Plan) -> Once | None:
        """What runs the steps that may run once for all devices (spmd/runtime/stacked.py):
        with several devices here, all of them NumPy's."""
        if len(self.positions) < 2 or self.mesh.devices.flat[0].library.xp is not np:
            return None
        return Once(self, plan_for(plan, steps, plan.last_use), plan.calls, plan.last_use)

    def block(self, block: Block, values: list[dict], speaker: Speaker) -> list[dict]:
        """Run a loop's or branch's body on ``values`` (per invar, by position)."""
        env = {var: dict(v) for var, v in zip(block.invars, values, strict=True)}
        host: dict = {}
        _run_host(block.host_equations, host)
        library = self.mesh.devices.flat[0].library
        plan = plan_of(block, block.steps, block.outvars, library)
        self.steps(block.steps, plan, env, host, speaker)
        # A copy per output: a body may give one value twice, and each of the caller's values
        # lets go of its blocks on its own.
        return [
            dict(self.read(atom, sharding, env))
            for atom, sharding in zip(block.outvars, block.out_shardings, strict=True)
        ]

    def read(self, atom, sharding, env: dict) -> dict:
        """``atom``'s blocks by position: a value's, or a literal's laid out as
        ``sharding`` (None: whole on every device)."""
        if isinstance(atom, Var):
            return env[atom]
        if type(atom.value) in PYTHON_SCALARS:
            return dict.fromkeys(self.positions, atom.value)
        value = np.asarray(atom.value, atom.aval.dtype)
        devices = self.mesh.devices.flat
        if sharding is None or not value.ndim:
            return {p: on_device(devices[p], value) for p in self.positions}
        blocks = _literal_blocks(value, sharding, self.mesh, self.positions)
        return {p: on_device(devices[p], b) for p, b in blocks.items()}


def _drop_dying(step: Compute, env: dict, last_use: dict, index: int) -> None:
    """Let go of the values that die at step ``index`` (``step``'s own)."""
    for atom in (*step.inputs, *step.outputs):
        if isinstance(atom, Var) and last_use.get(atom, -1) <= index:
            env.pop(atom, None)


def _speakers(part: Partitioned, name: str, digest: int) -> dict[int, Speaker]:
    """What the messages of each step that talks to other processes say they are."""
    speakers = {}
    for index, step in enumerate(part.steps):
        if isinstance(step, Collective):
            aval = step.input.aval
            speakers[index] = Speaker(name, digest, index, step.written, f"{aval}")
        elif isinstance(step, Reshard):
            aval = step.src.aval
            speakers[index] = Speaker(name, digest, index, "reshard", f"{aval}")
        elif isinstance(step, Loop | Branch):
            what = step.kind if isinstance(step, Loop) else "cond"
            speakers[index] = Speaker(name, digest, index, what, "its body")
    return speakers


def _fingerprint(part: Partitioned, memory_kinds) -> str:
    """What every process must agree on: the per-device program with its shapes, dtypes and
    shardings, and the mesh."""
    devices = [(d.id, d.process_index) for d in part.mesh.devices.flat]
    return f"{as_text(part)}\nmemory kinds {list(memory_kinds)}\nmesh devices {devices}"


@dataclass(eq=False)
class _Prepared:
    """What a partitioned program needs to run here, worked out once: this process's mesh
    positions, the communicator, the plan of its steps, and, once the processes agreed on
    the program, what each step's messages say they are (spmd/runtime/messages.py)."""

    positions: tuple[int, ...]
    comm: Communicator
    plan: Plan
    speakers: dict[int, Speaker] | None = None  # set once the processes agreed


_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _prepared(part: Partitioned) -> _Prepared:
    found = _PREPARED.get(part)
    if found is None:
        library = part.mesh.devices.flat[0].library
        plan = plan_of(part, part.steps, [atom for atom, _ in part.outputs], library)
        comm = communicator_for(tuple(part.mesh.devices.flat))
        found = _PREPARED[part] = _Prepared(local_positions(part.mesh), comm, plan)
    return found


def _as_array(sharding: NamedSharding, buffers: dict, aval, mesh) -> Array:
    owned = {}
    devices = mesh.devices.flat
    for position, buffer in buffers.items():
        device = devices[position]
        kept = device.library.result(buffer, aval.dtype, device.local_index)
        if kept is None:
            raise RuntimeError(
                f"internal error: a device computed {device.library.dtype_of(buffer)}"
                f"{list(buffer.shape)} for {aval}; please report this."
            )
        owned[device] = kept
    return Array._from_buffers(sharding, owned, aval.shape, aval.dtype)


def _by_device(buffers: dict, mesh: Mesh) -> dict:
    """This process's blocks by device, as NumPy arrays (the Communicator's)."""
    devices = mesh.devices.flat
    return {devices[p]: host_view(devices[p], b) for p, b in buffers.items()}


def _by_position(buffers: dict, mesh: Mesh, positions: Sequence[int]) -> dict:
    """The Communicator's results back on their devices, by mesh position."""
    devices = mesh.devices.flat
    return {p: on_device(devices[p], buffers[devices[p]]) for p in positions}


def _reshard(step: Reshard, buffers: dict, mesh: Mesh, comm: Communicator) -> dict:
    shape, dtype = step.src.aval.shape, step.src.aval.dtype
    positions = tuple(buffers)
    held = _by_device(buffers, mesh)
    for s in step.steps:
        src = value_layout(mesh, s.src.dims, shape)
        dst = value_layout(mesh, s.dst.dims, shape)
        if s.kind == "all-reduce":
            held = comm.all_reduce(held, device_groups(mesh, s.axes), s.src.op)
        elif s.kind == "reduce-scatter":
            held = comm.reduce_scatter(held, device_groups(mesh, s.axes), s.src.op, src, dst)
        elif s.kind == "local slice":
            held = _local_slice(held, src, dst)
        else:
            held = comm.exchange(held, src, dst, dtype)
        if s.is_collective:
            record(s.kind, s.nbytes)
    return _by_position(held, mesh, positions)


def _collective(step: Collective, env: dict, mesh: Mesh, positions, comm: Communicator) -> dict:
    atom = step.input
    devices = mesh.devices.flat
    if isinstance(atom, Literal):
        value = np.asarray(atom.value, atom.aval.dtype)
        held = {devices[p]: value for p in positions}
    else:
        held = {
            devices[p]: np.asarray(host_view(devices[p], b), atom.aval.dtype)
            for p, b in env[atom].items()
        }
    out = step.collective.run(comm, mesh, held, step.shapes, step.params)
    record(step.kind, step.nbytes)
    return _by_position(out, mesh, positions)


def _local_slice(buffers: dict, src, dst) -> dict:
    out = {}
    for device, buffer in buffers.items():
        origin = src.bounds(src.blocks[src.position[device]])
        bounds = dst.bounds(dst.blocks[dst.position[device]])
        index = tuple(slice(a - o, b - o) for (a, b), (o, _) in zip(bounds, origin, strict=True))
        out[device] = buffer[index]
    return out
