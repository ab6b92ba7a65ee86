"""Pure index math of block layouts, uneven blocks included: which device holds which block.

A dimension of size ``n`` split ``k`` ways has blocks of ``ceil(n / k)`` elements; the tail
block is smaller, and blocks past the end are empty.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from spmd.errors import ShapeError, SpmdTypeError

Bounds = tuple[tuple[int, int], ...]  # (start, stop) per dimension


def block_bounds(size: int, parts: int, block: int) -> tuple[int, int]:
    """Start and stop of block ``block`` of a dimension of ``size`` split ``parts`` ways."""
    chunk = -(-size // parts)
    start = min(block * chunk, size)
    return start, min(start + chunk, size)


def blocks_overlapping(size: int, parts: int, start: int, stop: int) -> range:
    """The blocks of a ``size``/``parts`` split that hold elements of ``[start, stop)``."""
    if stop <= start:
        return range(0)
    chunk = -(-size // parts)
    return range(start // chunk, (stop - 1) // chunk + 1)


def canonical_shape(shape: object, argument: str) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative Python ints, or an error naming ``argument``."""
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise SpmdTypeError(
            f"{argument} must be a tuple of non-negative ints, got {shape!r}."
        ) from None
    if any(d < 0 for d in dims):
        raise ShapeError(f"{argument} {dims} has a negative dimension; sizes must be >= 0.")
    return dims


@dataclass(frozen=True)
class Layout:
    """How one array shape is cut into blocks, and which block each device holds."""

    shape: tuple[int, ...]
    parts: tuple[int, ...]  # number of blocks along each dimension
    devices: tuple  # every device of the sharding, in its device order
    blocks: tuple[tuple[int, ...], ...]  # block coordinates of each device, same order

    def bounds(self, block: Sequence[int]) -> Bounds:
        return tuple(
            block_bounds(n, k, b) for n, k, b in zip(self.shape, self.parts, block, strict=True)
        )

    def device_bounds(self, device) -> Bounds:
        return self.bounds(self.blocks[self.position[device]])

    @functools.cached_property
    def position(self) -> dict:
        """Device → its position in ``devices``."""
        return {d: i for i, d in enumerate(self.devices)}

    @functools.cached_property
    def holders(self) -> dict[tuple[int, ...], tuple]:
        """Block coordinates → the devices holding that block, in device order."""
        holders: dict[tuple[int, ...], list] = {}
        for device, block in zip(self.devices, self.blocks, strict=True):
            holders.setdefault(block, []).append(device)
        return {block: tuple(devices) for block, devices in holders.items()}

    @functools.cached_property
    def holders_by_process(self) -> dict[tuple[int, ...], dict[int, tuple]]:
        """Block coordinates → process index → the devices there holding that block."""
        found: dict[tuple[int, ...], dict[int, tuple]] = {}
        for block, devices in self.holders.items():
            by_process: dict[int, list] = {}
            for device in devices:
                by_process.setdefault(device.process_index, []).append(device)
            found[block] = {p: tuple(ds) for p, ds in by_process.items()}
        return found

    @functools.cached_property
    def builders(self) -> dict[tuple[int, tuple[int, ...]], object]:
        """(process index, block coordinates) → the first device there holding that block:
        the one that builds it, for the others to share."""
        found: dict = {}
        for device, block in zip(self.devices, self.blocks, strict=True):
            found.setdefault((device.process_index, block), device)
        return found

    @functools.cached_property
    def replica_ids(self) -> tuple[int, ...]:
        """For each device, its rank among the devices that hold the same block."""
        pairs = zip(self.devices, self.blocks, strict=True)
        return tuple(self.holders[block].index(device) for device, block in pairs)

    @property
    def replication(self) -> int:
        """How many devices hold each block."""
        return len(self.devices) // math.prod(self.parts)

    def block_shape(self, block: Sequence[int]) -> tuple[int, ...]:
        return tuple(stop - start for start, stop in self.bounds(block))


@functools.lru_cache(maxsize=4096)
def mesh_layout(
    device_grid_shape: tuple[int, ...],
    devices: tuple,
    axis_names: tuple[str, ...],
    dims: tuple[tuple[str, ...], ...],
    shape: tuple[int, ...],
) -> Layout:
    """Layout of ``shape`` whose dimension ``i`` is split over mesh axes ``dims[i]``.

    ``devices`` is the mesh's device grid flattened in row-major order; the block index along
    a dimension split over several axes reads their mesh coordinates major to minor.
    """
    sizes = dict(zip(axis_names, device_grid_shape, strict=True))
    parts = tuple(math.prod(sizes[a] for a in axes) for axes in dims)
    blocks = []
    for coords in np.ndindex(*device_grid_shape):
        coord = dict(zip(axis_names, coords, strict=True))
        block = []
        for axes in dims:
            index = 0
            for a in axes:
                index = index * sizes[a] + coord[a]
            block.append(index)
        blocks.append(tuple(block))
    return Layout(shape, parts, devices, tuple(blocks))


def whole_layout(device, shape: tuple[int, ...]) -> Layout:
    """Layout of ``shape`` held whole by one device."""
    return Layout(shape, (1,) * len(shape), (device,), ((0,) * len(shape),))


def bounds_to_slices(bounds: Bounds) -> tuple[slice, ...]:
    return tuple(slice(start, stop) for start, stop in bounds)
