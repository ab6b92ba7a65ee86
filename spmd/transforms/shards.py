"""The list API of Nx's pmap proposal: one block per device in, one result per device out.

``shard`` cuts an array into per-device blocks, ``pmap_shards`` runs a function on each
device's arguments (as a pmap over the devices, so collectives work) and leaves every
result on its device, and ``stack`` gathers blocks into one array. Blocks enter and leave
as views of the devices' buffers: chained calls move no data.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.errors import ShapeError, SpmdTypeError
from spmd.runtime.array import Array
from spmd.runtime.buffers import on_device
from spmd.runtime.put import device_put
from spmd.sharding.device import default_device, local_devices
from spmd.sharding.mesh import Mesh
from spmd.sharding.named import NamedSharding, SingleDeviceSharding
from spmd.sharding.spec import PartitionSpec
from spmd.transforms.pmap import pmap
from spmd.tree_util import tree_flatten, tree_unflatten

SHARD_AXIS = "shards"


def num_shards() -> int:
    """How many devices this process can put shards on."""
    return len(local_devices())


def shard(x: Any, axis: int = 0, devices: Sequence | None = None) -> list[Array]:
    """``x`` cut along ``axis`` into one block per device (the last blocks smaller when the
    size does not divide), each block an Array on its device.

    Example: ``spmd.shard(np.arange(16), devices=spmd.devices()[:4])`` → 4 blocks of 4.
    """
    devices = list(local_devices() if devices is None else devices)
    x = np.asarray(x) if not isinstance(x, Array) else x
    if x.ndim == 0:
        raise ShapeError("spmd.shard needs an array with at least one dimension, got a scalar.")
    axis = _axis(axis, x.ndim, "spmd.shard")
    mesh = _mesh(devices)
    spec = PartitionSpec(*([None] * axis), SHARD_AXIS)
    placed = device_put(x, NamedSharding(mesh, spec))
    return [_on_device(placed._buffers[d], d) for d in devices]


def stack(arrays: Sequence[Any], axis: int = 0) -> Array:
    """The blocks of ``arrays`` (from any devices) stacked into one array on the default
    device, like ``numpy.stack``."""
    if not arrays:
        raise ShapeError("spmd.stack needs at least one array.")
    values = [np.asarray(a) for a in arrays]
    shapes = {v.shape for v in values}
    ndim = values[0].ndim + 1
    if not -ndim <= axis < ndim:
        raise ShapeError(
            f"spmd.stack: axis {axis} is out of range for stacking arrays of rank {ndim - 1}; "
            f"use an axis in [{-ndim}, {ndim})."
        )
    if len(shapes) > 1:
        raise ShapeError(
            f"spmd.stack needs arrays of one shape, got shapes {sorted(shapes)}; cut blocks "
            f"evenly (a size the device count divides) or pad them first."
        )
    return device_put(np.stack(values, axis=axis), default_device())


def pmap_shards(f: Callable, shards: Sequence, axis_name: str | None = None) -> list:
    """Run ``f`` on each device: ``shards[i]`` is the tuple of arguments for device ``i``
    (an argument on a device is used there; others go to ``spmd.devices()[i]``). Returns
    one result per device, each left on its device, so calls chain without transfers.
    Collectives over ``axis_name`` span the devices."""
    if not isinstance(shards, (list, tuple)) or not shards:
        raise SpmdTypeError(
            "pmap_shards needs a non-empty list with one tuple of arguments per device."
        )
    per_device = [s if isinstance(s, tuple) else (s,) for s in shards]
    devices = _devices_of(per_device)
    trees = [tree_flatten(args) for args in per_device]
    first_leaves, in_tree = trees[0]
    for i, (_, tree) in enumerate(trees):
        if tree != in_tree:
            raise SpmdTypeError(
                f"pmap_shards: device {i}'s arguments have structure {tree}, device 0's "
                f"{in_tree}; every device needs arguments of one structure."
            )
    mesh = _mesh(devices)
    stacked = [
        _stacked([leaves[k] for leaves, _ in trees], devices, mesh, k)
        for k in range(len(first_leaves))
    ]
    out = _pmapped(f, axis_name, tuple(devices))(*tree_unflatten(in_tree, stacked))
    out_leaves, out_tree = tree_flatten(out)
    results = []
    for d in devices:
        blocks = [_on_device(leaf._buffers[d][0, ...], d) for leaf in out_leaves]
        results.append(tree_unflatten(out_tree, blocks))
    return results


@functools.lru_cache(maxsize=256)
def _pmapped(f: Callable, axis_name: str | None, devices: tuple):
    return pmap(f, axis_name if axis_name is not None else SHARD_AXIS, devices=devices)


def _axis(axis: int, ndim: int, who: str) -> int:
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{who}: axis {axis} is out of range for an array of rank {ndim}.")
    return axis % ndim


def _mesh(devices: list) -> Mesh:
    grid = np.empty(len(devices), dtype=object)
    grid[:] = devices
    return Mesh(grid, (SHARD_AXIS,))


def _on_device(buffer: np.ndarray, device) -> Array:
    return Array._from_buffers(SingleDeviceSharding(device), {device: buffer}, buffer.shape)


def _devices_of(per_device: list[tuple]) -> list:
    available = local_devices()
    if len(per_device) > len(available):
        raise ShapeError(
            f"pmap_shards got {len(per_device)} shards but this process has "
            f"{len(available)} devices; give at most one shard per device."
        )
    devices = []
    for i, args in enumerate(per_device):
        held = {
            next(iter(a.sharding.device_set))
            for a in tree_flatten(args)[0]
            if isinstance(a, Array) and len(a.sharding.device_set) == 1
        }
        devices.append(held.pop() if len(held) == 1 else available[i])
    if len(set(devices)) != len(devices):
        raise ShapeError(
            f"pmap_shards: shards lie on devices {devices}; each shard needs its own device."
        )
    return devices


def _stacked(blocks: list, devices: list, mesh: Mesh, k: int) -> Array:
    """One Array of shape (devices, *block) whose device ``i`` holds ``blocks[i]``."""
    buffers = {}
    for i, (block, device) in enumerate(zip(blocks, devices, strict=True)):
        held = isinstance(block, Array) and block.sharding.device_set == {device}
        value = block._buffers[device] if held else on_device(device, np.array(block))
        buffers[device] = device.library.freeze(value)
        kind = (tuple(value.shape), device.library.dtype_of(value))
        first = buffers[devices[0]]
        first_kind = (tuple(first.shape), devices[0].library.dtype_of(first))
        if kind != first_kind:
            raise ShapeError(
                f"pmap_shards: argument {k} is {kind[1]}{list(kind[0])} on device {i} "
                f"but {first_kind[1]}{list(first_kind[0])} on device 0; every device needs "
                f"blocks of one shape and dtype."
            )
    first = buffers[devices[0]]
    views = {d: d.library.xp.reshape(v, (1, *v.shape)) for d, v in buffers.items()}
    shape = (len(devices), *first.shape)
    sharding = NamedSharding(mesh, PartitionSpec(SHARD_AXIS))
    return Array._from_buffers(sharding, views, shape, devices[0].library.dtype_of(first))
