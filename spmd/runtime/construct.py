"""Building Arrays from per-shard data: callbacks, single-device arrays, process-local data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.aval import host_array
from spmd.errors import DistributedError, ShapeError, ShardingError, SpmdTypeError
from spmd.runtime.array import Array
from spmd.runtime.buffers import on_devices
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

    ``local_data`` is the box spanned by this process's shards (in one process, the whole
    array). Without ``global_shape`` it is inferred as JAX does: along each dimension split
    over several processes, the processes' local sizes add up in mesh order; along the
    others it is the local size. Every process must pass the same ``global_shape`` (or
    none) and data of one dtype.
    """
    value = host_array(local_data, "local_data")
    who = "make_array_from_process_local_data"
    sharding = as_sharding(sharding, who)
    if global_shape is not None:
        global_shape = canonical_shape(global_shape, f"{who} global_shape")
    here = process_index()
    if process_count() > 1 and any(d.process_index == here for d in sharding.device_set):
        global_shape = _agreed_global_shape(sharding, value, global_shape)
    elif global_shape is None:
        global_shape = value.shape
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
    return Array._from_buffers(sharding, on_devices(buffers), shape)


def _index_str(index: tuple[slice, ...]) -> str:
    def one(s: slice) -> str:
        return ":" if s.start is None and s.stop is None else f"{s.start}:{s.stop}"

    return "[" + ", ".join(one(s) for s in index) + "]"


def _agreed_global_shape(
    sharding: Sharding, value: np.ndarray, global_shape: tuple[int, ...] | None
) -> tuple[int, ...]:
    """``global_shape`` once every process of ``sharding`` has checked that all pass the
    same one and the same dtype (DistributedError on all otherwise), or inferred from their
    local shapes when none is given."""
    from spmd.runtime.communicator import communicator_for

    devices = sorted(sharding.device_set, key=lambda d: d.id)
    comm = communicator_for(devices)
    given = "not given (inferred)" if global_shape is None else str(global_shape)
    text = f"global_shape {given}\nlocal_data dtype {value.dtype}, rank {value.ndim}"
    comm.agree(text, devices, "make_array_from_process_local_data's global_shape and dtype")
    if global_shape is not None:
        return global_shape
    return _inferred_shape(sharding, value.shape, _local_shapes(comm, devices, value.shape))


def _local_shapes(comm, devices, shape: tuple[int, ...]) -> dict[int, tuple[int, ...]]:
    """Each process of ``devices`` → the shape of its local data (all of one rank)."""
    from spmd.runtime.messages import Speaker, speaking_for

    here = process_index()
    shapes = {here: shape}
    if comm.transport is None:
        return shapes
    peers = sorted({d.process_index for d in devices} - {here})
    mine = np.array(shape, np.int64)
    theirs = {p: np.empty(len(shape), np.int64) for p in peers}
    with speaking_for(Speaker("make_array_from_process_local_data", operation="local shapes")):
        comm.transport.exchange(
            [(p, mine) for p in peers], list(theirs.items()), "local data shapes"
        )
    shapes.update({p: tuple(int(n) for n in s) for p, s in theirs.items()})
    return shapes


def _inferred_shape(
    sharding: Sharding, shape: tuple[int, ...], shapes: dict[int, tuple[int, ...]]
) -> tuple[int, ...]:
    """The global shape whose blocks the processes' local data (``shapes``) are: along each
    dimension, the sizes of the processes' distinct runs of blocks, added in block order."""
    who = "make_array_from_process_local_data"
    layout = layout_for(sharding, shape, who)  # block coordinates do not depend on sizes
    runs: list[dict[int, set]] = [{} for _ in shape]
    for device, block in zip(layout.devices, layout.blocks, strict=True):
        for dim, index in enumerate(block):
            runs[dim].setdefault(device.process_index, set()).add(index)
    inferred = []
    for dim, held in enumerate(runs):
        slabs: dict[tuple[int, ...], list[int]] = {}
        for process, indices in held.items():
            slabs.setdefault(tuple(sorted(indices)), []).append(process)
        sizes = []
        for _, processes in sorted(slabs.items()):
            local = {p: shapes[p][dim] for p in processes}
            if len(set(local.values())) > 1:
                raise DistributedError(
                    f"{who}: processes {processes} hold the same blocks along dimension {dim} "
                    f"but their local_data sizes there differ ({_per_process(local)}); give "
                    f"them equal sizes along dimension {dim}, or pass global_shape."
                )
            sizes.append(local[processes[0]])
        if sum(map(len, slabs)) != len(set().union(*slabs)):
            raise DistributedError(
                f"{who}: along dimension {dim} the processes hold overlapping runs of blocks "
                f"({_per_process({p: sorted(i) for p, i in held.items()})}), so their local "
                f"sizes do not add up to a global size; pass global_shape."
            )
        inferred.append(sum(sizes))
    return tuple(inferred)


def _per_process(values: dict) -> str:
    return ", ".join(f"process {p}: {v}" for p, v in sorted(values.items()))
