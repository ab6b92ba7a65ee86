"""Transfer plans: the block copies that turn one layout of an array into another.

A plan is data: each destination device assembles its block from pieces, and a piece is
taken from the destination's own source block whenever it holds one, so only bytes that
must cross devices do.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

from spmd.sharding.layout import Bounds, Layout, blocks_overlapping, bounds_to_slices


@dataclass(frozen=True)
class Copy:
    """Copy ``src_index`` of ``src``'s buffer into ``dst_index`` of ``dst``'s new buffer."""

    src: object
    dst: object
    src_index: tuple[slice, ...]
    dst_index: tuple[slice, ...]
    nbytes: int

    @property
    def is_local(self) -> bool:
        return self.src == self.dst


@dataclass(frozen=True)
class TransferPlan:
    """Every copy needed to build each destination device's block."""

    dst_shapes: dict  # destination device → its block shape
    copies: tuple[Copy, ...]

    @property
    def bytes_moved(self) -> int:
        """Bytes that cross from one device to another."""
        return sum(c.nbytes for c in self.copies if not c.is_local)

    @property
    def bytes_copied_locally(self) -> int:
        return sum(c.nbytes for c in self.copies if c.is_local)

    def __str__(self) -> str:
        lines = [f"TransferPlan: {len(self.copies)} copies, {self.bytes_moved} bytes moved"]
        for c in self.copies:
            where = f"{c.src} (local)" if c.is_local else f"{c.src} -> {c.dst}"
            lines.append(f"  {where}: {_fmt(c.src_index)} -> {_fmt(c.dst_index)}, {c.nbytes} B")
        return "\n".join(lines)


def _fmt(index: tuple[slice, ...]) -> str:
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in index) + "]"


def moved_bytes(src: Layout, dst: Layout, itemsize: int) -> int:
    """Bytes that cross devices when every ``dst`` device fetches what it lacks: its block
    less the part of it that its own ``src`` block covers (``plan_transfer``'s
    ``bytes_moved``, in time linear in the devices)."""
    total = 0
    for device, block in zip(dst.devices, dst.blocks, strict=True):
        target = dst.bounds(block)
        size = math.prod(b - a for a, b in target)
        if device in src.position:
            own = src.device_bounds(device)
            size -= math.prod(
                max(0, min(b, d) - max(a, c)) for (a, b), (c, d) in zip(target, own, strict=True)
            )
        total += size
    return total * itemsize


@functools.lru_cache(maxsize=1024)
def plan_transfer(src: Layout, dst: Layout, itemsize: int) -> TransferPlan:
    """The copies that rebuild every ``dst`` device's block from ``src``'s blocks of the
    same array.

    A piece the destination device already holds is copied locally; other pieces come from
    one of their holders in the destination's process if there is one, chosen round-robin by
    destination so that replicas share the load.
    """
    return _plan(src, dst, itemsize, range(len(dst.devices)))


@functools.lru_cache(maxsize=1024)
def plan_builds(src: Layout, dst: Layout, itemsize: int) -> TransferPlan:
    """``plan_transfer`` for the devices that build each ``dst`` block, one per block and
    process (``dst.builders``); the other holders there share what it builds."""
    builders = set(dst.builders.values())
    return _plan(src, dst, itemsize, [p for p, d in enumerate(dst.devices) if d in builders])


def _plan(src: Layout, dst: Layout, itemsize: int, positions) -> TransferPlan:
    if src.shape != dst.shape:
        raise ValueError(f"layouts of different shapes: {src.shape} vs {dst.shape}")
    copies = []
    dst_shapes = {}
    pieces = functools.cache(functools.partial(_pieces, src, dst, itemsize))
    near = src.holders_by_process
    for position in positions:
        device, block = dst.devices[position], dst.blocks[position]
        own = src.blocks[src.position[device]] if device in src.position else None
        dst_shapes[device] = dst.block_shape(block)
        for src_block, src_index, dst_index, nbytes in pieces(block):
            if src_block == own:
                holder = device
            else:
                holders = near[src_block].get(device.process_index) or src.holders[src_block]
                holder = holders[position % len(holders)]
            copies.append(Copy(holder, device, src_index, dst_index, nbytes))
    return TransferPlan(dst_shapes, tuple(copies))


def _pieces(src: Layout, dst: Layout, itemsize: int, block: tuple[int, ...]) -> list:
    """The ``src`` blocks that overlap ``dst`` block ``block``, each with the piece they
    share as indices into either block, and its bytes."""
    target = dst.bounds(block)
    ranges = [
        blocks_overlapping(n, k, start, stop)
        for n, k, (start, stop) in zip(src.shape, src.parts, target, strict=True)
    ]
    found = []
    for src_block in itertools.product(*ranges):
        source = src.bounds(src_block)
        piece = tuple((max(a, c), min(b, d)) for (a, b), (c, d) in zip(target, source, strict=True))
        nbytes = math.prod(b - a for a, b in piece) * itemsize
        found.append((src_block, _relative(piece, source), _relative(piece, target), nbytes))
    return found


def _relative(piece: Bounds, origin: Bounds) -> tuple[slice, ...]:
    return bounds_to_slices(
        tuple((a - o, b - o) for (a, b), (o, _) in zip(piece, origin, strict=True))
    )
