"""Resharding plans: the collective steps that turn one value sharding into another.

A plan is printable data: a short list of steps, each an all-reduce, reduce-scatter,
all-gather, all-to-all, permute or local slice over named mesh axes, with the bytes it
moves between devices. Every step is exact on uneven blocks.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from spmd.sharding.layout import Layout, mesh_layout
from spmd.sharding.mesh import Mesh
from spmd.sharding.rules import Dims, ValueSharding
from spmd.sharding.transfer import moved_bytes

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "permute")


@dataclass(frozen=True)
class Step:
    """One collective (or a local slice) from ``src`` to ``dst`` over mesh ``axes``."""

    kind: str
    axes: tuple[str, ...]
    src: ValueSharding
    dst: ValueSharding
    nbytes: int  # bytes that cross from one device to another

    @property
    def is_collective(self) -> bool:
        return self.kind in COLLECTIVES

    def __str__(self) -> str:
        axes = ", ".join(map(repr, self.axes))
        return f"{self.kind} over {axes}: {self.src} -> {self.dst} ({format_bytes(self.nbytes)})"


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def value_layout(mesh: Mesh, dims: Dims, shape: tuple[int, ...]) -> Layout:
    """Which block of a ``shape`` value split as ``dims`` each device of ``mesh`` holds."""
    grid = mesh.devices
    return mesh_layout(grid.shape, tuple(grid.flat), mesh.axis_names, tuple(dims), shape)


def _without(dims: Dims, axes: set[str]) -> Dims:
    return tuple(tuple(a for a in dim if a not in axes) for dim in dims)


@functools.lru_cache(maxsize=4096)
def plan(
    mesh: Mesh, shape: tuple[int, ...], itemsize: int, src: ValueSharding, dst: ValueSharding
) -> tuple[Step, ...]:
    """The steps from ``src`` to ``dst`` (``dst`` may keep ``src``'s pending reduction)."""
    if src.pending and (dst.pending, dst.op) != (src.pending, src.op):
        options = [
            (combine, *_move(mesh, shape, itemsize, combine.dst, dst))
            for combine in _combinations(mesh, shape, itemsize, src, dst)
        ]
        return min(options, key=lambda steps: (sum(s.nbytes for s in steps), len(steps)))
    moves = _move(mesh, shape, itemsize, src, dst)
    if src.pending and any(step.is_collective for step in moves):
        # A collective copies blocks from any device holding them, but partial values of
        # one block differ across the pending axes: the solver keeps partials in place.
        raise ValueError(f"internal error: cannot move partial values from {src} to {dst}")
    return tuple(moves)


def _block_bytes(mesh: Mesh, shape: tuple[int, ...], itemsize: int, dims: Dims) -> int:
    """Bytes over all devices' blocks of a value split as ``dims``."""
    layout = value_layout(mesh, dims, shape)
    return sum(math.prod(layout.block_shape(b)) for b in layout.blocks) * itemsize


def _nested(mesh: Mesh, shape: tuple[int, ...], coarse: Dims, fine: Dims) -> bool:
    """Whether every device's block of ``fine`` lies inside its block of ``coarse``, so that
    it can cut it out of what it holds (uneven splits can break this: 5 split 2 ways holds
    [0, 3) and [3, 5), split 4 ways [0, 2), [2, 4), ...)."""
    if coarse == fine:
        return True
    src, dst = value_layout(mesh, coarse, shape), value_layout(mesh, fine, shape)
    for have, want in zip(src.blocks, dst.blocks, strict=True):
        for (o, e), (a, b) in zip(src.bounds(have), dst.bounds(want), strict=True):
            if a < b and not o <= a <= b <= e:
                return False
    return True


def _combinations(mesh, shape, itemsize, src: ValueSharding, dst: ValueSharding) -> list[Step]:
    """Ways to combine ``src``'s partial values on the way to ``dst``: a reduce-scatter into
    each split of ``_scatter_targets`` whose blocks lie inside the blocks held (the
    communicator cuts each new block out of every member's buffer), and an all-reduce."""
    pending = set(src.pending)
    k = math.prod(mesh.shape[a] for a in pending)
    total = _block_bytes(mesh, shape, itemsize, src.dims)
    found = []
    for target in dict.fromkeys(_scatter_targets(src, dst)):
        placed = {a for dim in target for a in dim} & pending
        if placed and _nested(mesh, shape, src.dims, target):
            parts = math.prod(mesh.shape[a] for a in placed)
            replicas = k // parts  # devices of a group that end up with the same block
            # As a transport does it: scatter over the placed axes, all-reduce the rest.
            scattered = _block_bytes(mesh, shape, itemsize, target)
            moved = total * (parts - 1) // parts + 2 * scattered * (replicas - 1) // replicas
            result = ValueSharding(target)
            found.append(Step("reduce-scatter", src.pending, src, result, moved))
    result = ValueSharding(src.dims)
    found.append(Step("all-reduce", src.pending, src, result, 2 * total * (k - 1) // k))
    return found


def _scatter_targets(src: ValueSharding, dst: ValueSharding) -> list[Dims]:
    """Splits a reduce-scatter of ``src`` may produce on the way to ``dst``: per dimension,
    ``dst``'s own longest prefix of held and pending axes (when it keeps the held ones),
    then the held axes followed by ``dst``'s pending ones (a later exchange reorders)."""
    pending = set(src.pending)
    own, held_first = [], []
    for have, want in zip(src.dims, dst.dims, strict=True):
        prefix = _longest_prefix(want, set(have) | pending)
        own.append(prefix if set(have) <= set(prefix) else have)
        held_first.append((*have, *(a for a in want if a in pending)))
    return [tuple(own), tuple(held_first)]


def _longest_prefix(axes: tuple[str, ...], allowed: set[str]) -> tuple[str, ...]:
    for n, axis in enumerate(axes):
        if axis not in allowed:
            return axes[:n]
    return axes


def _moved_bytes(mesh, shape, itemsize, a: Dims, b: Dims) -> int:
    src, dst = value_layout(mesh, a, shape), value_layout(mesh, b, shape)
    return moved_bytes(src, dst, itemsize)


def _axes_in_order(mesh: Mesh, axes: set[str]) -> tuple[str, ...]:
    return tuple(x for x in mesh.axis_names if x in axes)


def _move(mesh, shape, itemsize, src: ValueSharding, dst: ValueSharding) -> list[Step]:
    """Steps between splits (no pending change): gather the axes ``dst`` drops, move the ones
    it puts elsewhere, then slice locally for the ones it adds.

    A local slice needs each device's new block inside the block it holds: the added axes
    must come after the kept ones in each dimension, and uneven blocks must nest. Where they
    do not, one exchange goes straight to ``dst``."""
    a, b = src.dims, dst.dims
    if a == b:
        return []
    in_a = {x for dim in a for x in dim}
    in_b = {x for dim in b for x in dim}
    removed, added = in_a - in_b, in_b - in_a
    after_gather = _without(a, removed)
    after_move = _without(b, added)
    sliceable = all(w[: len(m)] == m for m, w in zip(after_move, b, strict=True))
    if added and not (sliceable and _nested(mesh, shape, after_move, b)):
        return [_exchange(mesh, shape, itemsize, src, dst)]
    steps = []
    if removed:
        gathered = ValueSharding(after_gather, src.pending, src.op)
        nbytes = _moved_bytes(mesh, shape, itemsize, a, after_gather)
        steps.append(Step("all-gather", _axes_in_order(mesh, removed), src, gathered, nbytes))
    if after_move != after_gather:
        steps.append(
            _exchange(
                mesh,
                shape,
                itemsize,
                ValueSharding(after_gather, src.pending, src.op),
                ValueSharding(after_move, src.pending, src.op),
            )
        )
    if added:
        held = ValueSharding(after_move, src.pending, src.op)
        steps.append(Step("local slice", _axes_in_order(mesh, added), held, dst, 0))
    return steps


def _exchange(mesh, shape, itemsize, src: ValueSharding, dst: ValueSharding) -> Step:
    """One exchange of blocks: a permute where every dimension keeps its set of axes (only
    their order changes), an all-to-all otherwise."""
    pairs = list(zip(src.dims, dst.dims, strict=True))
    moved = {x for have, want in pairs if have != want for x in (*have, *want)}
    kind = "permute" if all(set(h) == set(w) for h, w in pairs) else "all-to-all"
    nbytes = _moved_bytes(mesh, shape, itemsize, src.dims, dst.dims)
    return Step(kind, _axes_in_order(mesh, moved), src, dst, nbytes)


def cost(mesh: Mesh, shape: tuple[int, ...], itemsize: int, src, dst) -> int:
    """Bytes a reshard from ``src`` to ``dst`` moves between devices."""
    if src == dst:
        return 0
    return sum(step.nbytes for step in plan(mesh, shape, itemsize, src, dst))
