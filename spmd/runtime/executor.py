"""The executor: runs a partitioned program on this process's devices' blocks at once.

Every process runs the same program; each holds and computes only the blocks of its own
mesh positions (``{position: buffer}``), and collectives go through the Communicator of the
mesh's processes. Host equations run once per process. Runs of consecutive per-device
equations run as one task per device on the thread pool (NumPy and BLAS release the GIL),
inline when the blocks are small; contractions share BLAS threads so that devices do not
oversubscribe the cores (spmd/runtime/cores.py). Each device's values are dropped after
their last use, inside such runs too, so their memory returns while the program runs.
Before a program first runs across processes, the processes check that they all run the
same one.
"""

from __future__ import annotations

import functools
import itertools
import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spmd.core.interpret import Access, apply, last_uses, literal_value, reuse_plan, runner
from spmd.core.program import Literal, Var
from spmd.runtime.array import Array
from spmd.runtime.buffers import host_view, on_device
from spmd.runtime.communicator import Communicator, communicator_for
from spmd.runtime.cores import blas_threads, contractions_one_at_a_time, core_count, observed
from spmd.runtime.counting import record
from spmd.runtime.messages import EAGER, Speaker, fingerprint, speaking_for
from spmd.runtime.pool import INLINE_BYTES, parallel_map
from spmd.sharding.device import process_index
from spmd.sharding.device_program import (
    Alias,
    Collective,
    Compute,
    FromHost,
    Partitioned,
    PerDevice,
    Reshard,
)
from spmd.sharding.device_program_text import as_text
from spmd.sharding.layout import bounds_to_slices
from spmd.sharding.mesh import Mesh, device_groups
from spmd.sharding.named import NamedSharding
from spmd.sharding.reshard import value_layout

_PYTHON_SCALARS = frozenset({bool, int, float, complex})


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
    devices = mesh.devices.flat
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
    for eqn in part.host_equations:
        values = [a.value if isinstance(a, Literal) else host[a] for a in eqn.inputs]
        host.update(zip(eqn.outputs, apply(eqn.primitive, np, values, eqn.params), strict=True))
    last_use, calls = prepared.last_use, prepared.calls
    segment: list[tuple[Compute, Any]] = []
    for index, step in enumerate(part.steps if positions else ()):  # none: no device here
        if isinstance(step, Compute):
            segment.append((step, calls[index]))
            continue
        _run_segment(segment, env, positions)
        segment = []
        if isinstance(step, Collective):
            with speaking_for(prepared.speakers.get(index, EAGER)):
                env[step.output] = _collective(step, env, mesh, positions, comm)
        elif isinstance(step, PerDevice):
            env[step.var] = {p: _on(devices[p], step.values[p]) for p in positions}
        elif isinstance(step, Alias):
            env[step.dst] = env[step.src]
        elif isinstance(step, FromHost):
            value = host[step.host]
            if type(value) in _PYTHON_SCALARS:  # keeps its weak type: 2.5 * f32 stays f32
                env[step.var] = dict.fromkeys(positions, value)
            else:
                value = np.asarray(value)
                env[step.var] = {p: on_device(devices[p], value[step.slices[p]]) for p in positions}
        else:
            with speaking_for(prepared.speakers.get(index, EAGER)):
                env[step.dst] = _reshard(step, env[step.src], mesh, comm)
        _drop(env, last_use, index)
    _run_segment(segment, env, positions)
    results = []
    for (atom, sharding), kind in zip(part.outputs, memory_kinds, strict=True):
        if sharding is None:
            value = atom.value if isinstance(atom, Literal) else host[atom]
            results.append(np.asarray(value))
            continue
        if isinstance(atom, Literal):
            value = np.asarray(atom.value, atom.aval.dtype)
            layout = value_layout(mesh, sharding.dims, value.shape)
            buffers = {
                p: value[bounds_to_slices(layout.bounds(layout.blocks[p]))] for p in positions
            }
        else:
            buffers = env.get(atom, {})
        target = NamedSharding(mesh, sharding.spec, kind)
        results.append(_as_array(target, buffers, atom.aval, mesh))
    return results


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
    return speakers


def _fingerprint(part: Partitioned, memory_kinds) -> str:
    """What every process must agree on: the per-device program with its shapes, dtypes and
    shardings, and the mesh."""
    devices = [(d.id, d.process_index) for d in part.mesh.devices.flat]
    return f"{as_text(part)}\nmemory kinds {list(memory_kinds)}\nmesh devices {devices}"


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


def _accesses(part: Partitioned) -> list[Access]:
    """What each step reads and writes, for core's one last-use and reuse analysis: an
    elementwise Compute step makes fresh buffers keyed by their sharding; a Reshard, an
    Alias or a collective may give back (views of) what it reads."""
    accesses = []
    for step in part.steps:
        if isinstance(step, Compute):
            writes = step.eqn.primitive.rules.writes_into
            accesses.append(
                Access(step.inputs, step.outputs, writes, writes and step.reusable, step.shardings)
            )
        elif isinstance(step, Reshard | Alias):
            accesses.append(Access((step.src,), (step.dst,)))
        elif isinstance(step, Collective):
            accesses.append(Access((step.input,), (step.output,)))
        else:  # PerDevice, FromHost: from the host
            accesses.append(Access((), (step.var,)))
    return accesses


def _drop(env: dict, last_use: dict, index: int) -> None:
    for var in [v for v in env if last_use.get(v, -1) <= index]:
        del env[var]


@dataclass(eq=False)
class _Prepared:
    """What a partitioned program needs to run here, worked out once: this process's mesh
    positions, the communicator, each value's last use, each Compute step's per-device call
    (by step index), and, once the processes agreed on the program, what each step's
    messages say they are (spmd/runtime/messages.py)."""

    positions: tuple[int, ...]
    comm: Communicator
    last_use: dict[Var, int]
    calls: dict[int, Any]
    speakers: dict[int, Speaker] | None = None  # set once the processes agreed


_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _prepared(part: Partitioned) -> _Prepared:
    found = _PREPARED.get(part)
    if found is None:
        accesses = _accesses(part)
        last_use = last_uses(accesses, [atom for atom, _ in part.outputs])
        reuse = reuse_plan(accesses, last_use)
        library = part.mesh.devices.flat[0].library
        calls = {
            index: _call(step, index, reuse.get(index), last_use, library)
            for index, step in enumerate(part.steps)
            if isinstance(step, Compute)
        }
        comm = communicator_for(tuple(part.mesh.devices.flat))
        found = _PREPARED[part] = _Prepared(local_positions(part.mesh), comm, last_use, calls)
    return found


def _call(step: Compute, index: int, reuse: int | None, last_use: dict[Var, int], library):
    """``(env, position) -> None``: run step ``index`` for one device with its backend's
    array namespace, its dispatch decided once, and let go of that device's values that die
    there."""
    primitive = step.eqn.primitive
    run = runner(
        primitive,
        library.xp,
        library.name,
        params=any(step.params),
        out=reuse is not None,
        wrap=observed if primitive.rules.calls_blas else None,
    )
    getters = [
        _constant(literal_value(a.value, library.xp))
        if isinstance(a, Literal)
        else (lambda env, position, var=a: env[var][position])
        for a in step.inputs
    ]
    used = [a for a in step.inputs if isinstance(a, Var)] + list(step.outputs)
    dying = [var for var in dict.fromkeys(used) if last_use.get(var, -1) <= index]

    def call(env: dict, position: int) -> None:
        values = [get(env, position) for get in getters]
        params = step.params[position]
        if reuse is not None:
            target = values[reuse]
            if type(target) is np.ndarray and target.flags.writeable and target.ndim:
                params = {**params, "out": target}
        for var, value in zip(step.outputs, run(values, params), strict=True):
            env[var][position] = value
        for var in dying:
            del env[var][position]

    return call


def _on(device, value: Any) -> Any:
    """A host value as ``device``'s code takes it: a Python scalar stays one (it promotes
    weakly), anything else becomes the device's array."""
    return value if type(value) in _PYTHON_SCALARS else on_device(device, value)


def _constant(value: Any):
    return lambda env, position: value


def _run_segment(segment: list[tuple[Compute, Any]], env: dict, positions: tuple[int, ...]) -> None:
    """Run consecutive per-device equations for this process's devices: one task per
    device on the thread pool when there is enough data, inline otherwise. Contractions
    share the cores as spmd/runtime/cores.py says."""
    if not segment or not positions:
        return
    count = len(positions)
    first = positions[0]
    first_inputs = [a for s, _ in segment for a in s.inputs if isinstance(a, Var) and a in env]
    nbytes = count * sum(
        math.prod(np.shape(env[v][first])) * v.aval.dtype.itemsize
        for v in dict.fromkeys(first_inputs)
    )
    for step, _ in segment:
        for var in step.outputs:
            env[var] = {}

    def side_by_side(steps: list) -> None:
        parallel_map(functools.partial(_run_calls, steps, env), positions, nbytes)

    if not any(_calls_blas(item) for item in segment):
        side_by_side(segment)  # inline if there is too little to share out
    elif nbytes < INLINE_BYTES:
        for position in positions:
            _run_calls(segment, env, position)
    elif contractions_one_at_a_time(count):
        with blas_threads(core_count()):
            for blas, run in itertools.groupby(segment, _calls_blas):
                if not blas:
                    side_by_side(list(run))
                    continue
                for _, call in run:  # one device at a time, each call on every core
                    for position in positions:
                        call(env, position)
    else:
        with blas_threads(1):  # devices side by side, one BLAS thread each
            side_by_side(segment)


def _calls_blas(item: tuple[Compute, Any]) -> bool:
    return item[0].eqn.primitive.rules.calls_blas


def _run_calls(segment: list[tuple[Compute, Any]], env: dict, position: int) -> None:
    for _, call in segment:
        call(env, position)


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
