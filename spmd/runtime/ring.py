"""All-reduce across processes on a ring of point-to-point messages.

The processes of a group stand in a ring in the group's order, and the value (this
process's partial, flattened) is cut into one chunk per process. In ``count - 1``
reduce-scatter steps each process passes a chunk to the next process, which combines it
with its own piece of that chunk and passes it on; after them each process holds one chunk
fully combined. In ``count - 1`` all-gather steps the combined chunks go round once more.
Each process sends ``2 (count - 1) / count`` times the data, where sending every partial to
every other process sends ``count - 1`` times.

**Summation order**: chunk ``c`` is combined starting with the partial of the group's
``c``-th process, each next process in ring order adding its own (``acc op mine``), and it
travels to every process only once combined. So every replica holds the same bits, and the
order is fixed by the group alone.

**Why point-to-point, not MPI's collectives.** MPI's non-blocking collectives
(``Iallreduce`` on a communicator per group, polled with ``Test``) were the other way.
Measured on MPICH 5.0.2 (ch4, shared memory), 2 busy cores, 100 MB of float32 per process,
medians in ms (``benchmarks/multiprocess.py psum``, three runs; for 4 processes, a
prototype of this ring on raw ``Isend``/``Irecv``, oversubscribed):

    2 processes: this ring 68 / 78 / 78, every partial sent whole 118 / 128 / 136,
                 Allreduce 159 / 148 / 166, Iallreduce polled 168 / 166 / 179
    4 processes: this ring 113, Allreduce 200, Iallreduce polled 230

The ring on point-to-point messages is about twice as fast (likely because MPICH moves a
large point-to-point message between processes of one host in one copy, and its
collectives through its shared-memory cells). It also keeps every message behind the
transport's checked header (a disagreement names both sides), needs no communicator per
group (made by a blocking, untimed collective call), combines with NumPy's own ufuncs
(MPICH's MAX drops a NaN where ``np.maximum`` keeps it: checked) and takes any dtype NumPy
has, float16 and bool included.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from spmd.errors import DistributedError
from spmd.runtime.cores import core_count
from spmd.runtime.pool import parallel_map

# Partials of at least this many bytes go round a ring; smaller ones travel whole to every
# process in one round: there a round's latency costs more than the bytes saved (with 2
# processes the ring saves none, only half the combining). On 2 busy cores the crossover
# for 2 processes lay between 256 KiB and 1 MiB, in noisy timings.
RING_BYTES = 1 << 18


def even_chunks(n: int, parts: int) -> list[slice]:
    """``parts`` consecutive slices of ``range(n)`` whose lengths differ by at most one (the
    first ones longer); some are empty when ``n < parts``."""
    bounds = [(n * i) // parts for i in range(parts + 1)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


class RingJob:
    """One group's all-reduce around its processes, seen from this process.

    ``partial`` is this process's combination of its own devices' blocks; ``processes``
    the group's processes in order, ``here`` among them. ``result`` (a new C-ordered
    array) holds the group's total once every step ran.
    """

    def __init__(self, partial: np.ndarray, processes: Sequence[int], here: int) -> None:
        count = len(processes)
        self.here = here
        self.position = processes.index(here)
        self.count = count
        self.right = processes[(self.position + 1) % count]
        self.left = processes[(self.position - 1) % count]
        self.source = np.ascontiguousarray(partial).reshape(-1)
        self.result = np.empty(np.shape(partial), self.source.dtype)
        self.flat = self.result.reshape(-1)  # also where chunks land mid-way
        self.chunks = even_chunks(self.source.size, count)
        self.steps = 2 * (count - 1)

    def messages(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """What this process sends to ``right`` and receives from ``left`` at ``step``."""
        r, k = self.position, self.count
        if step < k - 1:  # reduce-scatter: pass on chunk r - step, combined so far
            sent = self.chunks[(r - step) % k]
            outgoing = self.source[sent] if step == 0 else self.flat[sent]
            return outgoing, self.flat[self.chunks[(r - step - 1) % k]]
        step -= k - 1  # all-gather: pass on the combined chunks
        return self.flat[self.chunks[(r + 1 - step) % k]], self.flat[self.chunks[(r - step) % k]]

    def landed(self, step: int) -> tuple[np.ndarray, np.ndarray] | None:
        """After ``step``: the ``(chunk so far, this process's piece of it)`` to combine in
        place, or None when the step only moved combined chunks."""
        if step >= self.count - 1:
            return None
        chunk = self.chunks[(self.position - step - 1) % self.count]
        return self.flat[chunk], self.source[chunk]


Exchange = Callable[[list, list], None]


def run_rings(
    jobs: list[RingJob], exchange: Exchange, combine: Callable, first: tuple[list, list]
) -> None:
    """Run ``jobs`` side by side, one ``exchange(sends, recvs)`` per step for all of them;
    the messages ``first`` (sends, recvs) travel in the first one. Between two processes,
    messages are listed in job order on both sides, so they match."""
    steps = max((job.steps for job in jobs), default=0)
    for step in range(max(steps, 1)):
        sends, recvs = first if step == 0 else ([], [])
        pairs = []
        for job in jobs:
            if step < job.steps:
                outgoing, incoming = job.messages(step)
                sends.append((job.right, outgoing))
                recvs.append((job.left, incoming))
        if sends or recvs:
            try:
                exchange(sends, recvs)
            except DistributedError as error:
                raise _on_the_ring(error, jobs, step) from None
        for job in jobs:
            if step < job.steps and (pair := job.landed(step)) is not None:
                pairs.append(pair)
        accumulate(pairs, combine)


def _on_the_ring(error: DistributedError, jobs: list[RingJob], step: int) -> DistributedError:
    """``error``, saying where on which ring this process was when the ring has more than two
    processes (whose neighbours may be waiting for a third, the one to blame)."""
    wide = [job for job in jobs if job.count > 2]
    if not wide:
        return error
    rings = "; ".join(f"{job.left} -> {job.here} -> {job.right}" for job in wide)
    return DistributedError(
        f"{error} (step {step + 1} of a ring all-reduce, neighbours {rings}: a process waits "
        f"only for its neighbours, so one named here may itself be waiting for another.)"
    )


def accumulate(pairs: list[tuple[np.ndarray, np.ndarray]], combine: Callable) -> None:
    """``combine(target, addend, out=target)`` for each pair, split across the pool when
    large (1-D arrays)."""
    nbytes = sum(t.nbytes + a.nbytes for t, a in pairs)
    parts = max(1, core_count())
    pieces = [
        (target[s], addend[s])
        for target, addend in pairs
        for s in (even_chunks(target.size, parts) if target.size >= parts * 4096 else [slice(None)])
    ]
    parallel_map(lambda p: combine(p[0], p[1], out=p[0]), pieces, nbytes)
