"""Placing data on devices: device_put, resharding, and building Arrays from shards or callbacks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.aval import host_array
from spmd.core.dtypes import canonical_host, check_python_int, x64_enabled
from spmd.errors import ShapeError, ShardingError, SpmdTypeError, aval_str
from spmd.runtime import array as _array_module
from spmd.runtime.array import Array
from spmd.runtime.buffers import host_views, on_device, on_devices
from spmd.runtime.communicator import communicator_for
from spmd.runtime.messages import Speaker, speaking_for
from spmd.runtime.pool import parallel_map
from spmd.sharding.device import Device, default_device, process_index
from spmd.sharding.layout import Layout, bounds_to_slices
from spmd.sharding.mesh import current_mesh
from spmd.sharding.named import NamedSharding, Sharding, SingleDeviceSharding
from spmd.sharding.spec import PartitionSpec
from spmd.tree_util import (
    keystr,
    tree_broadcast_prefix,
    tree_map,
    tree_map_with_path,
    tree_structure,
)

_SCALARS = (bool, int, float, complex, np.generic)


def frozen(block: np.ndarray) -> np.ndarray:
    copy = np.array(block, copy=True, order="C")
    copy.flags.writeable = False
    return copy


def local_holders(layout: Layout) -> dict[tuple[int, ...], list[Device]]:
    """Block → the holders of that block in this process (blocks held here only)."""
    here = process_index()
    blocks: dict[tuple[int, ...], list[Device]] = {}
    for device, block in zip(layout.devices, layout.blocks, strict=True):
        if device.process_index == here:
            blocks.setdefault(block, []).append(device)
    return blocks


def layout_for(sharding: Sharding, shape: tuple[int, ...], who: str | Callable[[], str]) -> Layout:
    """``sharding``'s layout of ``shape``; errors say which call and argument it was for."""
    try:
        return sharding.layout(shape)
    except (ShardingError, ShapeError, SpmdTypeError) as error:
        raise type(error)(f"{who() if callable(who) else who}: {error}") from None


def as_sharding(target: Any, who: str) -> Sharding:
    """A Sharding from a Sharding, a Device, or a PartitionSpec inside ``with mesh:``."""
    if isinstance(target, Sharding):
        return target
    if isinstance(target, Device):
        return SingleDeviceSharding(target)
    if isinstance(target, PartitionSpec):
        mesh = current_mesh()
        if mesh is None:
            raise ShardingError(
                f"{who}: a bare {target!r} needs a mesh; use NamedSharding(mesh, {target!r}) "
                f"or call it inside `with mesh:`."
            )
        return NamedSharding(mesh, target)
    raise SpmdTypeError(
        f"{who}: the sharding must be a Sharding, a Device or a PartitionSpec, got "
        f"{type(target).__name__} {target!r}."
    )


def _is_target(x: Any) -> bool:
    return x is None or isinstance(x, (Sharding, Device, PartitionSpec))


def _is_python_data(x: Any) -> bool:
    """Whether ``x`` is a (nested) list of numbers: array data, not a pytree of leaves."""
    if type(x) is list:
        return all(type(item) is list or isinstance(item, _SCALARS) for item in x) and all(
            _is_python_data(item) for item in x if type(item) is list
        )
    return False


def device_get(x: Any) -> Any:
    """``x`` (an Array or a pytree of them) as NumPy arrays on the host; other leaves stay
    as they are. Example: ``spmd.device_get({'w': w})['w']`` is a NumPy array."""
    return tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def device_put(x: Any, device_or_sharding: Any = None) -> Any:
    """Place ``x`` (an array, scalar, list or pytree of them) on devices as a sharded Array;
    with jax_enable_x64 off, 64-bit host data becomes 32-bit (as in JAX).

    ``device_or_sharding`` is a Device, a Sharding, a PartitionSpec (inside ``with mesh:``),
    None (the default device; an Array stays as it is), or a pytree prefix of those. A
    (nested) list of numbers is data, one Array; tuples, dicts and other lists are pytrees,
    as in JAX. An Array
    given a new sharding is resharded, moving only the pieces its devices lack.

    Example: ``device_put(np.arange(32.).reshape(4, 8), NamedSharding(mesh, P('x', 'y')))``.
    """
    if _is_target(device_or_sharding):
        targets = None
    else:
        full = tree_map(lambda _: None, x, is_leaf=_is_python_data)
        try:
            targets = tree_broadcast_prefix(device_or_sharding, full, is_leaf=_is_target)
        except ValueError as error:
            raise ShardingError(
                f"device_put: device_or_sharding must be one Device or Sharding, or a pytree "
                f"prefix of x; x is {tree_structure(full)} but the targets are "
                f"{tree_structure(device_or_sharding, is_leaf=_is_target)} ({error})."
            ) from None

    def put(path, leaf, target=device_or_sharding):
        argument = keystr(path, "x")
        sharding = None if target is None else as_sharding(target, f"device_put({argument})")
        return _put_one(leaf, sharding, argument)

    if targets is None:
        return tree_map_with_path(put, x, is_leaf=_is_python_data)
    return tree_map_with_path(put, x, targets, is_leaf=_is_python_data)


def _put_one(x: Any, sharding: Sharding | None, argument: str) -> Array:
    if isinstance(x, Array):
        if sharding is None:
            return x
        if x.is_fully_addressable and not sharding.is_fully_addressable:
            x = np.asarray(x)  # this process's own data, which every process holds alike
        else:
            return reshard(x, sharding, argument)
    value = host_value(x, argument)
    if sharding is None:
        sharding = SingleDeviceSharding(default_device())
    layout = layout_for(
        sharding,
        value.shape,
        lambda: f"device_put({argument}: {aval_str(value.shape, value.dtype)})",
    )
    holders = local_holders(layout)
    blocks = _copies(value, [bounds_to_slices(layout.bounds(block)) for block in holders])
    buffers = {}
    for devices, buffer in zip(holders.values(), blocks, strict=True):
        buffers.update((d, on_device(d, buffer)) for d in devices)
    return Array._from_buffers(sharding, buffers, value.shape, value.dtype)


def _copies(value: np.ndarray, indices: list[tuple[slice, ...]]) -> list[np.ndarray]:
    """A read-only copy of each block of ``value``. Where the blocks are runs of its C-order
    memory that together make it up (a split of the leading axis), they are views of one copy,
    one after another: a contraction stacks the devices' blocks without copying them."""
    if sum(value[index].size for index in indices) == value.size and all(
        _is_run(value.shape, index) for index in indices
    ):
        whole = np.empty(value.shape, value.dtype)
        parallel_map(lambda i: np.copyto(whole[(*i, ...)], value[i]), indices, value.nbytes)
        whole.flags.writeable = False
        return [whole[(*index, ...)] for index in indices]
    return parallel_map(lambda index: frozen(value[index]), indices, value.nbytes)


def _is_run(shape: tuple[int, ...], index: tuple[slice, ...]) -> bool:
    """Whether ``index`` selects consecutive elements of a C-ordered array of ``shape``:
    single positions along leading axes, then one range, then whole axes."""
    lengths = [len(range(*part.indices(n))) for part, n in zip(index, shape, strict=True)]
    ranged = next((axis for axis, length in enumerate(lengths) if length != 1), len(lengths))
    return lengths[ranged + 1 :] == list(shape[ranged + 1 :])


def host_value(x: Any, argument: str) -> np.ndarray:
    """Host data as a NumPy array of a numeric dtype spmd holds, in the dtype mode's type
    (with x64 off, 64-bit data becomes 32-bit: spmd/core/dtypes.py)."""
    if not x64_enabled() and type(x) is int:
        check_python_int(x, argument)
    return canonical_host(host_array(x, argument), argument)


Placement = list[tuple[tuple[slice, ...] | None, list[Device]]]


def placement(layout: Layout) -> Placement:
    """For each block held here: its index (None for the whole array) and its devices."""
    whole = len(layout.holders) == 1
    return [
        (None if whole else bounds_to_slices(layout.bounds(block)), devices)
        for block, devices in local_holders(layout).items()
    ]


def adopt(value: np.ndarray, sharding: Sharding, where: Placement, foreign: Sequence = ()) -> Array:
    """An Array over a freshly computed result, taking ownership of it instead of copying.

    ``foreign`` lists arrays the result might be (inputs, constants): those are copied, since
    their owners may still write to them. Shards are read-only views of the one result.
    """
    flags = value.flags
    if flags.writeable:
        if flags.owndata and all(value is not f for f in foreign):
            flags.writeable = False
        else:
            value = frozen(value)
    buffers = {}
    for index, devices in where:
        buffer = value if index is None else value[index]
        for device in devices:
            buffers[device] = on_device(device, buffer)
    return Array._from_buffers(sharding, buffers, value.shape, value.dtype)


def reshard(x: Array, sharding: Sharding, argument: str = "x") -> Array:
    """``x`` laid out by ``sharding``: each device keeps what it has and fetches what it lacks
    (from another process if need be)."""
    if sharding == x.sharding:
        return x
    src = x.sharding.layout(x.shape)
    who = f"device_put({argument}: {aval_str(x.shape, x.dtype)})"
    dst = layout_for(sharding, x.shape, who)
    if src == dst or _same_blocks(src, dst):  # only the memory kind or the mesh changed
        return Array._from_buffers(sharding, x._buffers, x.shape, x.dtype)
    devices = tuple(dict.fromkeys((*src.devices, *dst.devices)))
    with speaking_for(Speaker("device_put", operation="reshard", value=aval_str(x.shape, x.dtype))):
        moved = communicator_for(devices).exchange(host_views(x._buffers), src, dst, x.dtype)
    here = process_index()
    buffers = on_devices({d: moved[d] for d in dst.devices if d.process_index == here})
    return Array._from_buffers(sharding, buffers, x.shape, x.dtype)


def _same_blocks(src: Layout, dst: Layout) -> bool:
    """Whether every device holds the same block under both layouts (a sharding on another
    mesh of the same devices that splits the array alike)."""
    if len(src.devices) != len(dst.devices) or set(src.devices) != set(dst.devices):
        return False
    return all(src.device_bounds(d) == dst.device_bounds(d) for d in dst.devices)


_array_module.device_put = device_put  # Array.__iter__ places its rows with it
