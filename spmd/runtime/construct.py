"""Building Arrays from per-shard data: callbacks, single-device arrays, process-local data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.aval import host_array
from spmd.errors import DistributedError, ShapeError, ShardingError, SpmdTypeError
from spmd.runtime.array import Array
from spmd.runtime.put import as_sharding, frozen, layout_for, local_holders
from spmd.sharding.device import Device, process_count, process_index
from spmd.sharding.layout import canonical_shape
from spmd.sharding.named import Sharding


def make_array_from_callback(
    shape: Sequence[int], sharding: Sharding, data_callback: Callable[[tuple[slice, ...]], Any]
) -> Array:
    """An Array whose shards come from ``data_callback(index)``, called once per distinct shard.

    Example: ``make_array_from_callback(x.shape, sharding, lambda index: x[index])``.
    """
    shape = canonical_shape(shape, "make_array_from_callback shape")
    sharding = as_sharding(sharding, "make_array_from_callback")
    layout = layout_for(sharding, shape, "make_array_from_callback")
    indices = sharding.devices_indices_map(shape)
    check = _ShardCheck("make_array_from_callback", shape)
    buffers = {}
    for block, devices in local_holders(layout).items():
        index = indices[devices[0]]
        what = f"data_callback({_index_str(index)}) for {devices[0]}"
        value = check(data_callback(index), what, layout.block_shape(block))
        buffers.update(dict.fromkeys(devices, value))
    return _assemble(sharding, buffers, shape)


def make_array_from_single_device_arrays(
    shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any]
) -> Array:
    """An Array from one array per addressable device of ``sharding``.

    Single-device spmd Arrays are matched to their devices; other arrays are taken in the
    sharding's device order. Example: ``make_array_from_single_device_arrays(x.shape,
    x.sharding, [s.data for s in x.addressable_shards])``.
    """
    shape = canonical_shape(shape, "make_array_from_single_device_arrays shape")
    sharding = as_sharding(sharding, "make_array_from_single_device_arrays")
    layout = layout_for(sharding, shape, "make_array_from_single_device_arrays")
    here = [d for d in layout.devices if d.process_index == process_index()]
    if not isinstance(arrays, (list, tuple)):
        raise SpmdTypeError(
            f"make_array_from_single_device_arrays: arrays must be a list with one array per "
            f"device, got {type(arrays).__name__}."
        )
    arrays = list(arrays)
    if len(arrays) != len(here):
        raise ShapeError(
            f"make_array_from_single_device_arrays got {len(arrays)} arrays, but the sharding "
            f"has {len(here)} addressable devices; pass one array per device."
        )
    check = _ShardCheck("make_array_from_single_device_arrays", shape)
    buffers = {}
    for device, array in _match_devices(arrays, here).items():
        expected = layout.block_shape(layout.blocks[layout.position[device]])
        buffers[device] = check(array, f"the array for {device}", expected)
    return _assemble(sharding, buffers, shape)


class _ShardCheck:
    """Checks each shard's shape against the layout, and that all shards share one dtype."""

    def __init__(self, who: str, shape: tuple[int, ...]) -> None:
        self.who, self.shape, self.dtype = who, shape, None

    def __call__(self, data: Any, what: str, expected: tuple[int, ...]) -> np.ndarray:
        value = host_array(data, what)
        if value.shape != expected:
            raise ShapeError(
                f"{self.who}: {what} has shape {value.shape}, but that shard of global shape "
                f"{self.shape} has shape {expected}. Give each device exactly its index's data "
                f"(global_data[index])."
            )
        if self.dtype is not None and value.dtype != self.dtype:
            raise SpmdTypeError(
                f"{self.who}: {what} has dtype {value.dtype}, but earlier shards have "
                f"{self.dtype}; every shard must have the same dtype."
            )
        self.dtype = value.dtype
        return frozen(value)


def _match_devices(arrays: list, devices: list[Device]) -> dict[Device, Any]:
    committed = [a for a in arrays if isinstance(a, Array)]
    if not committed:
        return dict(zip(devices, arrays, strict=True))
    placed = {}
    for i, array in enumerate(arrays):
        owners = array.devices() if isinstance(array, Array) else set()
        if len(owners) != 1:
            raise ShardingError(
                f"make_array_from_single_device_arrays: arrays[{i}] must live on one device; "
                f"pass all single-device Arrays (e.g. shard.data) or all NumPy arrays."
            )
        (device,) = owners
        if device not in devices or device in placed:
            raise ShardingError(
                f"make_array_from_single_device_arrays: arrays[{i}] lives on {device}, which "
                f"is {'taken twice' if device in placed else 'not in the sharding'}; "
                f"give exactly one array per device of the sharding."
            )
        placed[device] = np.asarray(array)
    return placed


def make_array_from_process_local_data(
    sharding: Sharding, local_data: Any, global_shape: Sequence[int] | None = None
) -> Array:
    """An Array from the block of data this process's devices hold.

    In one process the local data is the whole array. With several processes, pass
    ``global_shape``; ``local_data`` is the box spanned by this process's shards.
    """
    value = host_array(local_data, "local_data")
    if global_shape is None:
        if process_count() > 1:
            raise DistributedError(
                "make_array_from_process_local_data needs global_shape when several processes "
                "take part: each holds only its slice."
            )
        global_shape = value.shape
    who = "make_array_from_process_local_data"
    global_shape = canonical_shape(global_shape, f"{who} global_shape")
    sharding = as_sharding(sharding, who)
    layout = layout_for(sharding, global_shape, who)
    holders = local_holders(layout)
    if not holders:
        raise ShardingError(
            f"{who}: the sharding's devices {sorted(d.id for d in layout.devices)} include none "
            f"of process {process_index()}'s; call it on the processes whose devices take part."
        )
    boxes = [layout.bounds(block) for block in holders]
    origin = tuple(min(b[i][0] for b in boxes) for i in range(len(global_shape)))
    extent = tuple(max(b[i][1] for b in boxes) - origin[i] for i in range(len(global_shape)))
    if value.shape != extent:
        raise ShapeError(
            f"make_array_from_process_local_data: local_data of process {process_index()} has "
            f"shape {value.shape}, but its shards of global shape {global_shape} span {extent}: "
            f"pass exactly the rows and columns of this process's devices."
        )
    buffers = {}
    for block, devices in holders.items():
        local = tuple(
            slice(a - o, b - o) for (a, b), o in zip(layout.bounds(block), origin, strict=True)
        )
        buffers.update(dict.fromkeys(devices, frozen(value[local])))
    return _assemble(sharding, buffers, global_shape)


def _assemble(sharding: Sharding, buffers: dict, shape: tuple[int, ...]) -> Array:
    if not buffers:
        raise ShardingError("the sharding has no device in this process to hold data")
    return Array._from_buffers(sharding, buffers, shape)


def _index_str(index: tuple[slice, ...]) -> str:
    def one(s: slice) -> str:
        return ":" if s.start is None and s.stop is None else f"{s.start}:{s.stop}"

    return "[" + ", ".join(one(s) for s in index) + "]"
