"""The Communicator: the fixed set of collectives an executor calls, in one process or many.

A communicator works on one value's blocks held by this process's devices
(``{device: buffer}``). Every process computes the same plan from the same layouts, so each
collective is a fixed, symmetric exchange: blocks that stay inside this process are copied
(or shared, read-only) in memory, and only pieces another process needs cross a Transport
(MPI). In one process there is no transport and nothing crosses: the one-process run is the
one-process case of the same code.

Sums across processes are deterministic: each process first combines its own devices'
blocks in group order; then a small partial travels to every process of the group, each
combining them in process order, and a large one goes round a ring (spmd/runtime/ring.py),
each chunk combined in a fixed order and sent out only once combined. Either way all
replicas of a result are the same bits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from spmd.errors import DistributedError
from spmd.runtime import ring
from spmd.runtime.cores import core_count
from spmd.runtime.pool import INLINE_BYTES, parallel_map
from spmd.sharding.device import Device, process_index
from spmd.sharding.layout import Layout
from spmd.sharding.transfer import plan_builds

COMBINE = {
    "sum": np.add,
    "prod": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
    "and": np.logical_and,
    "or": np.logical_or,
}

Buffers = dict[Device, np.ndarray]
Groups = Sequence[Sequence[Device]]


class Transport(Protocol):
    """Moves whole contiguous buffers between processes (an MPI communicator does)."""

    index: int
    count: int

    def exchange(
        self, sends: list[tuple[int, np.ndarray]], recvs: list[tuple[int, np.ndarray]], what: str
    ) -> None:
        """Send each ``(process, buffer)`` of ``sends`` and fill each of ``recvs``; messages
        between two processes match in the order both list them."""
        ...

    def agree(self, text: str, processes: Sequence[int], what: str) -> None:
        """Raise DistributedError on every one of ``processes`` unless all hold ``text``."""
        ...


_transport: Transport | None = None


def set_transport(transport: Transport | None) -> None:
    """Install the connection to the other processes (``spmd.distributed.initialize``)."""
    global _transport
    _transport = transport


def communicator_for(devices: Sequence[Device]) -> Communicator:
    """The communicator for collectives among ``devices``: in memory when they are all this
    process's, across processes otherwise."""
    here = process_index()
    if all(d.process_index == here for d in devices):
        return _LOCAL
    if _transport is None:
        raise DistributedError(
            "these devices belong to several processes, but spmd.distributed.initialize() "
            "has not connected them; call it first, under mpiexec."
        )
    return _communicator(_transport)


@functools.cache
def _communicator(transport: Transport) -> Communicator:
    return Communicator(transport)


def _chunks(n: int, parts: int) -> list[slice]:
    step = -(-n // parts) if n else 1
    return [slice(i, min(i + step, n)) for i in range(0, n, step)] or [slice(0, 0)]


def _combined(members: Sequence[np.ndarray], combine: Callable, split: bool = True) -> np.ndarray:
    """A new array: ``combine`` over ``members`` in order, split by rows across the pool
    unless ``split`` is False (inside a pool task: a task never waits on the pool)."""
    first = np.asarray(members[0])
    if len(members) == 1:
        return np.array(first, copy=True, order="C")
    arrays = [np.asarray(m) for m in members]
    # Members all in one contiguous order (column-major: transposed products, as gradients
    # of a weight are) are combined as flat views in that order, and so is the result.
    order = next((o for o in "CF" if all(a.flags[f"{o}_CONTIGUOUS"] for a in arrays)), None)
    result = np.empty(first.shape, first.dtype, order=order or "C")
    if order or result.ndim == 0:
        arrays = [a.reshape(-1, order=order or "C") for a in arrays]  # views
        target = result.reshape(-1, order=order or "C")
    else:  # members in mixed layouts: split by the first axis, so that the ufunc reads
        target = result  # each in place instead of copying it first

    def run(rows: slice) -> None:
        combine(arrays[0][rows], arrays[1][rows], out=target[rows])
        for m in arrays[2:]:
            combine(target[rows], m[rows], out=target[rows])

    nbytes = result.nbytes * len(members)
    if not split or nbytes < INLINE_BYTES:
        run(slice(None))
        return result
    parallel_map(run, _chunks(len(target), core_count()), nbytes)
    return result


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _processes(devices: Sequence[Device]) -> list[int]:
    """The processes holding ``devices``, in the order they first appear."""
    return list(dict.fromkeys(d.process_index for d in devices))


class _Round:
    """The messages of one collective: posted together, matched in listing order."""

    def __init__(self) -> None:
        self.sends: list[tuple[int, np.ndarray]] = []
        self.recvs: list[tuple[int, np.ndarray]] = []

    def expect(self, peer: int, shape, dtype) -> np.ndarray:
        buffer = np.empty(shape, dtype)
        self.recvs.append((peer, buffer))
        return buffer


class Communicator:
    """Collectives over the blocks of the devices of one or several processes."""

    def __init__(self, transport: Transport | None = None) -> None:
        self.transport = transport
        self.here = process_index()

    def _send(self, round_: _Round, what: str) -> None:
        if round_.sends or round_.recvs:
            self.transport.exchange(round_.sends, round_.recvs, what)

    # --- reductions -----------------------------------------------------------------------

    def all_reduce(self, buffers: Buffers, groups: Groups, op: str) -> Buffers:
        """Every member of each group gets the ``op`` of the group's blocks.

        Across processes, a partial of at least ``ring.RING_BYTES`` goes round a ring
        (spmd/runtime/ring.py: 2 (P - 1) / P times the data sent per process); a smaller
        one travels whole to every other process in one round and each combines them in
        process order."""
        combine = COMBINE[op]
        out: Buffers = dict(buffers)
        round_ = _Round()
        pending, rings = [], []
        for group in groups:
            mine = [d for d in group if d in buffers]
            if not mine:
                continue
            processes = _processes(group)
            if len(processes) == 1:
                total = _frozen(_combined([buffers[d] for d in mine], combine))
                out.update(dict.fromkeys(mine, total))
                continue
            members = [buffers[d] for d in mine]
            partial = members[0] if len(members) == 1 else _combined(members, combine)
            if partial.nbytes >= ring.RING_BYTES:
                job = ring.RingJob(partial, processes, self.here)
                rings.append(job)
                pending.append((mine, [job.result]))
                continue
            partials = {self.here: partial}
            for p in processes:
                if p != self.here:
                    round_.sends.append((p, partial))
                    partials[p] = round_.expect(p, partial.shape, partial.dtype)
            pending.append((mine, [partials[p] for p in processes]))
        what = f"all-reduce ({op})"
        if rings:
            exchange = functools.partial(self.transport.exchange, what=what)
            ring.run_rings(rings, exchange, combine, (round_.sends, round_.recvs))
        else:
            self._send(round_, what)
        for mine, parts in pending:
            total = parts[0] if len(parts) == 1 else _combined(parts, combine)
            out.update(dict.fromkeys(mine, _frozen(total)))
        return out

    def reduce_scatter(
        self, buffers: Buffers, groups: Groups, op: str, src: Layout, dst: Layout
    ) -> Buffers:
        """Each member of each group gets the ``op`` over the group of the piece of its
        ``src`` block that its ``dst`` block covers."""
        combine = COMBINE[op]
        out: Buffers = dict(buffers)
        jobs = []  # (holders here, contributors, the pieces of my devices)
        for group in groups:
            origin = src.bounds(src.blocks[src.position[group[0]]])
            built: dict[tuple, list[Device]] = {}
            for d in group:
                built.setdefault(dst.blocks[dst.position[d]], []).append(d)
            mine = [d for d in group if d in buffers]
            contributors = _processes(group)
            for block, holders in built.items():
                receivers = _processes(holders)
                if self.here not in receivers and not mine:
                    continue
                bounds = dst.bounds(block)
                index = tuple(
                    slice(a - o, b - o) for (a, b), (o, _) in zip(bounds, origin, strict=True)
                )
                here = [d for d in holders if d.process_index == self.here]
                jobs.append((here, receivers, contributors, [buffers[d][index] for d in mine]))

        partials = parallel_map(
            lambda job: _combined(job[3], combine, split=False) if job[3] else None,
            jobs,
            sum(b.nbytes for b in buffers.values()),
        )
        round_ = _Round()
        totals = []
        for (here, receivers, contributors, _), partial in zip(jobs, partials, strict=True):
            if partial is not None:
                for p in receivers:
                    if p != self.here:
                        round_.sends.append((p, partial))
            if not here:
                continue
            shape, dtype = dst.block_shape(dst.blocks[dst.position[here[0]]]), partial.dtype
            parts = {self.here: partial}
            for p in contributors:
                if p != self.here:
                    parts[p] = round_.expect(p, shape, dtype)
            totals.append((here, [parts[p] for p in contributors]))
        self._send(round_, f"reduce-scatter ({op})")
        for here, parts in totals:
            total = parts[0] if len(parts) == 1 else _combined(parts, combine)
            out.update(dict.fromkeys(here, _frozen(total)))
        return out

    # --- moving blocks --------------------------------------------------------------------

    def exchange(self, buffers: Buffers, src: Layout, dst: Layout, dtype) -> Buffers:
        """This process's ``dst`` blocks, assembled from the ``src`` blocks of every process.

        Replicas in one process share one read-only buffer. A block that is one whole piece
        of a local source buffer is a view of it; pieces for or from another process travel
        packed, one message per pair of processes.
        """
        dtype = np.dtype(dtype)
        transfer = plan_builds(src, dst, dtype.itemsize)
        builder = dst.builders
        local: dict[Device, list] = {}
        outgoing: dict[int, list[np.ndarray]] = {}
        incoming: dict[int, list] = {}
        for c in transfer.copies:
            to, of = c.dst.process_index, c.src.process_index
            if to == self.here and of == self.here:
                local.setdefault(c.dst, []).append(c)
            elif to == self.here:
                incoming.setdefault(of, []).append(c)
            elif of == self.here:
                outgoing.setdefault(to, []).append(_piece(buffers[c.src], c.src_index))
        built: dict[Device, np.ndarray] = {}
        jobs = []
        for (process, _), device in builder.items():
            if process != self.here:
                continue
            copies = local.get(device, [])
            shape = transfer.dst_shapes[device]
            whole = _piece(buffers[copies[0].src], copies[0].src_index) if copies else None
            if len(copies) == 1 and whole.shape == shape:
                built[device] = whole
            else:
                built[device] = np.empty(shape, dtype)
                jobs.append((built[device], copies))

        if len(jobs) < core_count():  # too few blocks to go round: copy piece by piece
            jobs = [(target, [c]) for target, copies in jobs for c in copies]

        def run(job) -> None:
            target, copies = job  # the pieces of one block are disjoint
            for c in copies:
                target[c.dst_index] = buffers[c.src][c.src_index]

        parallel_map(run, jobs, sum(target.nbytes for target, _ in jobs))
        if outgoing or incoming:
            self._move_pieces(outgoing, incoming, built, transfer, dtype)
        for target in built.values():
            if target.flags.writeable:
                target.flags.writeable = False
        out: Buffers = dict(buffers)
        for device, block in zip(dst.devices, dst.blocks, strict=True):
            if device.process_index == self.here:
                out[device] = built[builder[(self.here, block)]]
        return out

    def _move_pieces(self, outgoing, incoming, built, transfer, dtype) -> None:
        round_ = _Round()
        for peer, pieces in outgoing.items():
            if len(pieces) == 1:
                round_.sends.append((peer, np.ascontiguousarray(pieces[0])))
            else:
                round_.sends.append((peer, np.concatenate([p.reshape(-1) for p in pieces])))
        unpack = []
        for peer, copies in incoming.items():
            sizes = [_size(c.dst_index, transfer.dst_shapes[c.dst]) for c in copies]
            unpack.append((round_.expect(peer, (sum(sizes),), dtype), copies, sizes))
        self._send(round_, "block exchange")
        for flat, copies, sizes in unpack:
            offset = 0
            for c, size in zip(copies, sizes, strict=True):
                target = built[c.dst]
                piece = target[c.dst_index]
                target[c.dst_index] = flat[offset : offset + size].reshape(piece.shape)
                offset += size

    all_gather = all_to_all = permute = exchange  # each is a change of layout

    def broadcast(self, buffers: Buffers, groups: Groups, root: int) -> Buffers:
        """Every member of each group gets the block of the group's ``root``-th member."""
        out: Buffers = dict(buffers)
        round_ = _Round()
        for group in groups:
            source = group[root]
            mine = [d for d in group if d in buffers]
            if source in buffers:
                value = buffers[source]
                out.update(dict.fromkeys(mine, value))
                for p in _processes(group):
                    if p != self.here:
                        round_.sends.append((p, np.ascontiguousarray(value)))
            elif mine:
                like = buffers[mine[0]]
                value = round_.expect(source.process_index, like.shape, like.dtype)
                out.update(dict.fromkeys(mine, value))
        self._send(round_, "broadcast")
        return out

    def agree(self, text: str, devices: Sequence[Device], what: str) -> None:
        """Raise DistributedError unless every process of ``devices`` holds ``text``."""
        if self.transport is not None:
            self.transport.agree(text, sorted(_processes(devices)), what)


def _piece(buffer: np.ndarray, index: tuple[slice, ...]) -> np.ndarray:
    """``buffer[index]`` as an array (a 0-d view, not a scalar, for 0-d buffers)."""
    return buffer[index] if index else buffer[...]


def _size(index: tuple[slice, ...], shape) -> int:
    size = 1
    for s, n in zip(index, shape, strict=True):
        start, stop, _ = s.indices(n)
        size *= max(stop - start, 0)
    return size


_LOCAL = Communicator()
