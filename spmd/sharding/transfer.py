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


def _relative(piece: Bounds, origin: Bounds) -> tuple[slice, ...]:
    return bounds_to_slices(
        tuple((a - o, b - o) for (a, b), (o, _) in zip(piece, origin, strict=True))
    )


@functools.lru_cache(maxsize=1024)
def plan_transfer(src: Layout, dst: Layout, itemsize: int) -> TransferPlan:
    """The copies that rebuild ``dst``'s blocks from ``src``'s blocks of the same array.

    A piece the destination device already holds is copied locally; other pieces come from
    one of their holders in the destination's process if there is one, chosen round-robin by
    destination so that replicas share the load.
    """
    if src.shape != dst.shape:
        raise ValueError(f"layouts of different shapes: {src.shape} vs {dst.shape}")
    copies = []
    dst_shapes = {}
    for position, (device, block) in enumerate(zip(dst.devices, dst.blocks, strict=True)):
        target = dst.bounds(block)
        dst_shapes[device] = tuple(stop - start for start, stop in target)
        own = src.blocks[src.position[device]] if device in src.position else None
        ranges = [
            blocks_overlapping(n, k, start, stop)
            for n, k, (start, stop) in zip(src.shape, src.parts, target, strict=True)
        ]
        for src_block in itertools.product(*ranges):
            if src_block == own:
                holder = device
            else:
                holders = src.holders[src_block]
                near = [h for h in holders if h.process_index == device.process_index]
                holders = near or holders
                holder = holders[position % len(holders)]
            source = src.bounds(src_block)
            piece = tuple(
                (max(a, c), min(b, d)) for (a, b), (c, d) in zip(target, source, strict=True)
            )
            nbytes = math.prod(b - a for a, b in piece) * itemsize
            copies.append(
                Copy(holder, device, _relative(piece, source), _relative(piece, target), nbytes)
            )
    return TransferPlan(dst_shapes, tuple(copies))
