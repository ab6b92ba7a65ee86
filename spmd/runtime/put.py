"""Placing data on devices: device_put, resharding, and building Arrays from shards or callbacks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.errors import DistributedError, ShapeError, ShardingError, SpmdTypeError, aval_str
from spmd.runtime.array import Array
from spmd.runtime.device import Device, default_device, process_count, process_index
from spmd.runtime.pool import parallel_map
from spmd.sharding.layout import Layout, bounds_to_slices
from spmd.sharding.mesh import current_mesh
from spmd.sharding.named import NamedSharding, Sharding, SingleDeviceSharding
from spmd.sharding.spec import PartitionSpec
from spmd.sharding.transfer import Copy, plan_transfer
from spmd.tree_util import keystr, tree_broadcast_prefix, tree_map, tree_map_with_path

_NUMERIC_KINDS = "biufc"  # bool, signed, unsigned, float, complex


def host_array(x: Any, argument: str) -> np.ndarray:
    """``x`` as a NumPy array with a numeric dtype, or a clear error naming ``argument``."""
    try:
        value = np.asarray(x)
    except ValueError as error:
        raise ShapeError(
            f"{argument} cannot become an array: {error}. Nested lists must be rectangular."
        ) from None
    if value.dtype.kind not in _NUMERIC_KINDS:
        raise SpmdTypeError(
            f"{argument} has dtype {value.dtype} ({type(x).__name__}); spmd arrays hold bool, "
            f"integer, float or complex numbers. Convert it first, e.g. np.asarray(x, "
            f"dtype=np.float32)."
        )
    return value


def _frozen(block: np.ndarray) -> np.ndarray:
    copy = np.array(block, copy=True, order="C")
    copy.flags.writeable = False
    return copy


def _local_holders(layout: Layout) -> dict[tuple[int, ...], list[Device]]:
    """Block → the holders of that block in this process (blocks held here only)."""
    here = process_index()
    blocks: dict[tuple[int, ...], list[Device]] = {}
    for device, block in zip(layout.devices, layout.blocks, strict=True):
        if device.process_index == here:
            blocks.setdefault(block, []).append(device)
    return blocks


def _layout_for(sharding: Sharding, shape: tuple[int, ...], who: str) -> Layout:
    try:
        return sharding.layout(shape)
    except ShardingError as error:
        raise ShardingError(f"{who}: {error}") from None


def _target(spec: Any, argument: str) -> Sharding | None:
    if spec is None or isinstance(spec, Sharding):
        return spec
    if isinstance(spec, Device):
        return SingleDeviceSharding(spec)
    if isinstance(spec, PartitionSpec):
        mesh = current_mesh()
        if mesh is None:
            raise ShardingError(
                f"device_put({argument}, {spec!r}): a bare PartitionSpec needs a mesh; use "
                f"NamedSharding(mesh, {spec!r}) or call device_put inside `with mesh:`."
            )
        return NamedSharding(mesh, spec)
    raise SpmdTypeError(
        f"device_put target for {argument} must be a Device, a Sharding, a PartitionSpec or "
        f"None, got {type(spec).__name__} {spec!r}."
    )


def _is_target(x: Any) -> bool:
    return x is None or isinstance(x, (Sharding, Device, PartitionSpec))


def _is_python_data(x: Any) -> bool:
    """Whether ``x`` is a (nested) list or tuple of Python numbers: array data, not a pytree."""
    if type(x) in (list, tuple):
        return all(_is_python_data(item) for item in x)
    return isinstance(x, (bool, int, float, complex))


def device_put(x: Any, device_or_sharding: Any = None) -> Any:
    """Place ``x`` (an array, scalar, list or pytree of them) on devices as a sharded Array.

    ``device_or_sharding`` is a Device, a Sharding, a PartitionSpec (inside ``with mesh:``),
    None (the default device; an Array stays as it is), or a pytree prefix of those. Nested
    lists of Python numbers are data (one Array); other containers are pytrees. An Array
    given a new sharding is resharded, moving only the pieces its devices lack.

    Example: ``device_put(np.arange(32.).reshape(4, 8), NamedSharding(mesh, P('x', 'y')))``.
    """
    if _is_target(device_or_sharding):
        targets = None
    else:
        full = tree_map(lambda _: None, x, is_leaf=_is_python_data)
        targets = tree_broadcast_prefix(device_or_sharding, full, is_leaf=_is_target)

    def put(path, leaf, target=device_or_sharding):
        argument = keystr(path, "x")
        return _put_one(leaf, _target(target, argument), argument)

    if targets is None:
        return tree_map_with_path(put, x, is_leaf=_is_python_data)
    return tree_map_with_path(put, x, targets, is_leaf=_is_python_data)


def _put_one(x: Any, sharding: Sharding | None, argument: str) -> Array:
    if isinstance(x, Array):
        return x if sharding is None else reshard(x, sharding, argument)
    value = host_array(x, argument)
    if sharding is None:
        sharding = SingleDeviceSharding(default_device())
    who = f"device_put({argument}: {aval_str(value.shape, value.dtype)})"
    layout = _layout_for(sharding, value.shape, who)
    holders = _local_holders(layout)
    blocks = parallel_map(
        lambda block: _frozen(value[bounds_to_slices(layout.bounds(block))]), holders, value.nbytes
    )
    buffers = {}
    for devices, buffer in zip(holders.values(), blocks, strict=True):
        buffers.update(dict.fromkeys(devices, buffer))
    return Array._from_buffers(sharding, buffers, value.shape)


def reshard(x: Array, sharding: Sharding, argument: str = "x") -> Array:
    """``x`` laid out by ``sharding``: each device keeps what it has and fetches what it lacks."""
    if sharding == x.sharding:
        return x
    src = x.sharding.layout(x.shape)
    who = f"device_put({argument}: {aval_str(x.shape, x.dtype)})"
    dst = _layout_for(sharding, x.shape, who)
    if src == dst:
        return Array._from_buffers(sharding, x._buffers, x.shape)  # only the memory kind changed
    plan = plan_transfer(src, dst, x.dtype.itemsize)
    holders = _local_holders(dst).values()  # replicas here share the buffer their first builds
    built = {devices[0]: np.empty(plan.dst_shapes[devices[0]], x.dtype) for devices in holders}

    def run(copy: Copy) -> None:  # the pieces of one buffer are disjoint: copies may overlap
        built[copy.dst][copy.dst_index] = x._buffers[copy.src][copy.src_index]

    parallel_map(run, [copy for copy in plan.copies if copy.dst in built], x.nbytes)
    buffers = {}
    for devices in holders:
        built[devices[0]].flags.writeable = False
        buffers.update(dict.fromkeys(devices, built[devices[0]]))
    return Array._from_buffers(sharding, buffers, x.shape)


def make_array_from_callback(
    shape: Sequence[int], sharding: Sharding, data_callback: Callable[[tuple[slice, ...]], Any]
) -> Array:
    """An Array whose shards come from ``data_callback(index)``, called once per distinct shard.

    Example: ``make_array_from_callback(x.shape, sharding, lambda index: x[index])``.
    """
    shape = tuple(shape)
    layout = _layout_for(sharding, shape, "make_array_from_callback")
    indices = sharding.devices_indices_map(shape)
    buffers = {}
    dtype = None
    for block, devices in _local_holders(layout).items():
        index = indices[devices[0]]
        argument = f"data_callback({_index_str(index)})"
        value = host_array(data_callback(index), argument)
        expected = layout.block_shape(block)
        if value.shape != expected:
            raise ShapeError(
                f"make_array_from_callback: {argument} returned shape {value.shape} for "
                f"{devices[0]}, but that shard has shape {expected} (global shape {shape}). "
                f"Return global_data[index] for the index it is given."
            )
        if dtype is not None and value.dtype != dtype:
            raise SpmdTypeError(
                f"make_array_from_callback: {argument} returned dtype {value.dtype}, but earlier "
                f"shards were {dtype}; every shard must have the same dtype."
            )
        dtype = value.dtype
        buffers.update(dict.fromkeys(devices, _frozen(value)))
    return _assemble(sharding, buffers, shape)


def make_array_from_single_device_arrays(
    shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any]
) -> Array:
    """An Array from one array per addressable device of ``sharding``.

    Single-device spmd Arrays are matched to their devices; other arrays are taken in the
    sharding's device order. Example: ``make_array_from_single_device_arrays(x.shape,
    x.sharding, [s.data for s in x.addressable_shards])``.
    """
    shape = tuple(shape)
    layout = _layout_for(sharding, shape, "make_array_from_single_device_arrays")
    here = [d for d in layout.devices if d.process_index == process_index()]
    arrays = list(arrays)
    if len(arrays) != len(here):
        raise ShapeError(
            f"make_array_from_single_device_arrays got {len(arrays)} arrays, but the sharding "
            f"has {len(here)} addressable devices; pass one array per device."
        )
    placed = _match_devices(arrays, here)
    buffers = {}
    dtype = None
    for device, array in placed.items():
        value = host_array(array, f"the array for {device}")
        expected = layout.block_shape(layout.blocks[layout.position[device]])
        if value.shape != expected:
            raise ShapeError(
                f"make_array_from_single_device_arrays: the array for {device} has shape "
                f"{value.shape}, but its shard of global shape {shape} has shape {expected}."
            )
        if dtype is not None and value.dtype != dtype:
            raise SpmdTypeError(
                f"make_array_from_single_device_arrays: the array for {device} has dtype "
                f"{value.dtype}, others {dtype}; every shard must have the same dtype."
            )
        dtype = value.dtype
        buffers[device] = _frozen(value)
    return _assemble(sharding, buffers, shape)


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
    global_shape = tuple(global_shape)
    layout = _layout_for(sharding, global_shape, "make_array_from_process_local_data")
    holders = _local_holders(layout)
    boxes = [layout.bounds(block) for block in holders]
    origin = tuple(min(b[i][0] for b in boxes) for i in range(len(global_shape)))
    extent = tuple(max(b[i][1] for b in boxes) - origin[i] for i in range(len(global_shape)))
    if value.shape != extent:
        raise ShapeError(
            f"make_array_from_process_local_data: local_data has shape {value.shape}, but this "
            f"process's shards of global shape {global_shape} span {extent}."
        )
    buffers = {}
    for block, devices in holders.items():
        local = tuple(
            slice(a - o, b - o) for (a, b), o in zip(layout.bounds(block), origin, strict=True)
        )
        buffers.update(dict.fromkeys(devices, _frozen(value[local])))
    return _assemble(sharding, buffers, global_shape)


def _assemble(sharding: Sharding, buffers: dict, shape: tuple[int, ...]) -> Array:
    if not buffers:
        raise ShardingError("the sharding has no device in this process to hold data")
    return Array._from_buffers(sharding, buffers, shape)


def _index_str(index: tuple[slice, ...]) -> str:
    def one(s: slice) -> str:
        return ":" if s.start is None and s.stop is None else f"{s.start}:{s.stop}"

    return "[" + ", ".join(one(s) for s in index) + "]"
