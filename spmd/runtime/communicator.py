"""Communicators: the fixed set of collectives an executor calls, and the in-process one.

A communicator works on one value's per-device buffers, listed in the mesh's device order.
``groups`` lists, for a collective over some mesh axes, the positions that take part
together. The in-process communicator shares memory: an all-reduce computes each group's
result once and every member holds the same read-only buffer. An MPI communicator will
implement the same methods across processes.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from spmd.runtime.pool import parallel_map, worker_count
from spmd.sharding.layout import Layout
from spmd.sharding.mesh import Mesh
from spmd.sharding.transfer import plan_transfer

COMBINE = {
    "sum": np.add,
    "prod": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
    "and": np.logical_and,
    "or": np.logical_or,
}

Buffers = list[np.ndarray]


class Communicator(Protocol):
    def all_reduce(self, buffers: Buffers, groups: list[list[int]], op: str) -> Buffers: ...

    def reduce_scatter(
        self, buffers: Buffers, groups: list[list[int]], op: str, src: Layout, dst: Layout
    ) -> Buffers: ...

    def all_gather(self, buffers: Buffers, src: Layout, dst: Layout) -> Buffers: ...

    def all_to_all(self, buffers: Buffers, src: Layout, dst: Layout) -> Buffers: ...

    def permute(self, buffers: Buffers, src: Layout, dst: Layout) -> Buffers: ...

    def broadcast(self, buffers: Buffers, groups: list[list[int]], root: int) -> Buffers: ...

    def barrier(self) -> None: ...


@functools.lru_cache(maxsize=1024)
def groups(mesh: Mesh, axes: tuple[str, ...]) -> list[list[int]]:
    """Positions (in the mesh's flat device order) that differ only along ``axes``."""
    shape = mesh.devices.shape
    keep = [i for i, name in enumerate(mesh.axis_names) if name not in axes]
    found: dict[tuple, list[int]] = {}
    for position, coords in enumerate(itertools.product(*map(range, shape))):
        found.setdefault(tuple(coords[i] for i in keep), []).append(position)
    return list(found.values())


def _chunks(n: int, parts: int) -> list[slice]:
    step = -(-n // parts) if n else 1
    return [slice(i, min(i + step, n)) for i in range(0, n, step)] or [slice(0, 0)]


class InProcessCommunicator:
    """Collectives over buffers that live in this process's memory."""

    def all_reduce(self, buffers: Buffers, groups: list[list[int]], op: str) -> Buffers:
        out: Buffers = list(buffers)
        combine = COMBINE[op]
        for group in groups:
            members = [buffers[p] for p in group]
            total = self._reduce(members, combine)
            total.flags.writeable = False
            for p in group:
                out[p] = total
        return out

    @staticmethod
    def _reduce(members: Sequence[np.ndarray], combine) -> np.ndarray:
        """``combine`` over ``members``, split by rows across the pool's threads."""
        first = np.asarray(members[0])
        result = np.array(first, copy=True, order="C")  # C order: ``target`` below is a view
        if len(members) == 1:
            return result
        flat = [np.asarray(m).reshape(-1) for m in members]
        target = result.reshape(-1)

        def run(rows: slice) -> None:
            combine(flat[0][rows], flat[1][rows], out=target[rows])
            for m in flat[2:]:
                combine(target[rows], m[rows], out=target[rows])

        nbytes = result.nbytes * len(members)
        parallel_map(run, _chunks(target.size, worker_count()), nbytes)
        return result

    def reduce_scatter(
        self, buffers: Buffers, groups: list[list[int]], op: str, src: Layout, dst: Layout
    ) -> Buffers:
        out: Buffers = list(buffers)
        combine = COMBINE[op]
        jobs = []
        for group in groups:
            origin = src.bounds(src.blocks[group[0]])
            built: dict[tuple, list[int]] = {}
            for p in group:
                built.setdefault(dst.blocks[p], []).append(p)
            for block, positions in built.items():
                bounds = dst.bounds(block)
                index = tuple(
                    slice(a - o, b - o) for (a, b), (o, _) in zip(bounds, origin, strict=True)
                )
                jobs.append((positions, [buffers[p][index] for p in group]))

        def run(job) -> None:
            positions, pieces = job
            total = np.array(pieces[0], copy=True)
            for piece in pieces[1:]:
                combine(total, piece, out=total)
            total.flags.writeable = False
            for p in positions:
                out[p] = total

        nbytes = sum(b.nbytes for b in buffers)
        parallel_map(run, jobs, nbytes)
        return out

    def _exchange(self, buffers: Buffers, src: Layout, dst: Layout) -> Buffers:
        """Each device assembles its ``dst`` block from the ``src`` blocks (one buffer per
        distinct block: replicas share it). A block that is one piece of a source buffer is
        a view of it."""
        itemsize = buffers[0].dtype.itemsize
        transfer = plan_transfer(src, dst, itemsize)
        by_device: dict = {}
        for copy in transfer.copies:
            by_device.setdefault(copy.dst, []).append(copy)
        position = {device: i for i, device in enumerate(dst.devices)}
        out: Buffers = list(buffers)
        built: dict[tuple, np.ndarray] = {}
        jobs = []
        for device, block in zip(dst.devices, dst.blocks, strict=True):
            p = position[device]
            if block in built:
                out[p] = built[block]
                continue
            copies = by_device.get(device, [])
            shape = transfer.dst_shapes[device]
            whole = len(copies) == 1 and buffers[src.position[copies[0].src]][
                copies[0].src_index
            ].shape == tuple(shape)
            if whole:
                c = copies[0]
                built[block] = buffers[src.position[c.src]][c.src_index]
            else:
                built[block] = np.empty(shape, buffers[0].dtype)
                jobs.append((built[block], copies))
            out[p] = built[block]

        def run(job) -> None:
            target, copies = job
            for c in copies:
                target[c.dst_index] = buffers[src.position[c.src]][c.src_index]
            target.flags.writeable = False

        parallel_map(run, jobs, sum(b.nbytes for b, _ in jobs))
        return out

    all_gather = _exchange
    all_to_all = _exchange
    permute = _exchange

    def broadcast(self, buffers: Buffers, groups: list[list[int]], root: int) -> Buffers:
        out: Buffers = list(buffers)
        for group in groups:
            for p in group:
                out[p] = buffers[group[root]]
        return out

    def barrier(self) -> None:
        return None
