"""Shardings: how an array's global shape maps onto devices (named, or on a single device)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from spmd.errors import ShardingError, SpmdTypeError, plural, shape_str
from spmd.sharding.device import Device, check_device, process_index
from spmd.sharding.layout import Layout, canonical_shape, mesh_layout, whole_layout
from spmd.sharding.mesh import Mesh
from spmd.sharding.spec import PartitionSpec

MEMORY_KINDS = ("device", "pinned_host")


def _check_memory_kind(memory_kind: str | None) -> str:
    if memory_kind is None:
        return "device"
    if memory_kind not in MEMORY_KINDS:
        raise ShardingError(
            f"memory_kind={memory_kind!r} does not exist; use one of "
            f"{', '.join(map(repr, MEMORY_KINDS))} (or None for 'device')."
        )
    return memory_kind


class Sharding:
    """How an array of any global shape is laid out over a set of devices."""

    __slots__ = ()
    memory_kind: str

    def _layout(self, global_shape: tuple[int, ...]) -> Layout:
        raise NotImplementedError

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        raise NotImplementedError

    @property
    def is_fully_replicated(self) -> bool:
        raise NotImplementedError

    def with_memory_kind(self, kind: str) -> Sharding:
        raise NotImplementedError

    @property
    def device_set(self) -> set[Device]:
        return set(self._device_assignment)

    @property
    def num_devices(self) -> int:
        return len(self._device_assignment)

    @property
    def addressable_devices(self) -> set[Device]:
        here = process_index()
        return {d for d in self._device_assignment if d.process_index == here}

    @property
    def is_fully_addressable(self) -> bool:
        return len(self.addressable_devices) == self.num_devices

    def layout(self, global_shape: Sequence[int]) -> Layout:
        """The block layout of an array of ``global_shape`` (uneven blocks included)."""
        return self._layout(canonical_shape(global_shape, "global_shape"))

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict[Device, tuple[slice, ...]]:
        """Device → the index (a tuple of slices) of the global array it holds.

        Unsplit dimensions get ``slice(None)``, as in JAX. Example: on a (2, 4) mesh with
        ``P('x', 'y')``, a (4, 8) array puts ``(slice(2, 4), slice(2, 4))`` on device 5.
        """
        layout = self.layout(global_shape)
        indices = {}
        for device, block in zip(layout.devices, layout.blocks, strict=True):
            bounds = layout.bounds(block)
            indices[device] = tuple(
                slice(None) if parts == 1 else slice(start, stop)
                for parts, (start, stop) in zip(layout.parts, bounds, strict=True)
            )
        return indices

    def addressable_devices_indices_map(
        self, global_shape: Sequence[int]
    ) -> dict[Device, tuple[slice, ...]]:
        here = process_index()
        return {
            d: index
            for d, index in self.devices_indices_map(global_shape).items()
            if d.process_index == here
        }

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """Shape of the largest shard: ``ceil(n / k)`` along a dimension split ``k`` ways.

        With uneven splits the tail shards are smaller (see ``devices_indices_map``).
        """
        layout = self.layout(global_shape)
        return layout.block_shape((0,) * len(layout.shape))

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether both lay out every array of rank ``ndim`` identically on the same devices."""
        if not isinstance(other, Sharding) or self.memory_kind != other.memory_kind:
            return False
        shape = (1,) * ndim  # the block assignment does not depend on sizes
        mine, theirs = self.layout(shape), other.layout(shape)
        return (
            mine.devices == theirs.devices
            and mine.parts == theirs.parts
            and mine.blocks == theirs.blocks
        )


class NamedSharding(Sharding):
    """Lays an array over a mesh: dimension ``i`` is split over the mesh axes ``spec[i]``.

    Example: ``NamedSharding(mesh, P('x', 'y'))`` splits rows over ``x`` and columns over ``y``.
    """

    __slots__ = ("_dims_key", "_memory_kind", "_mesh", "_spec")

    def __init__(self, mesh: Mesh, spec: PartitionSpec, memory_kind: str | None = None) -> None:
        if not isinstance(mesh, Mesh):
            raise SpmdTypeError(
                f"NamedSharding mesh must be a Mesh, got {type(mesh).__name__}; build one with "
                f"spmd.make_mesh((2, 4), ('x', 'y'))."
            )
        if isinstance(spec, (tuple, list)):
            spec = PartitionSpec(*spec)
        if not isinstance(spec, PartitionSpec):
            raise SpmdTypeError(
                f"NamedSharding spec must be a PartitionSpec, got {spec!r}; write P(...) "
                f"(P() for a fully replicated array)."
            )
        for name in spec.axis_names:
            if name not in mesh.axis_names:
                raise ShardingError(
                    f"NamedSharding spec {spec!r} names mesh axis {name!r}, which is not in "
                    f"the mesh {mesh!r}. Use one of the mesh axes {mesh.axis_names}, or build "
                    f"the mesh with an axis named {name!r}."
                )
        self._mesh = mesh
        self._spec = spec
        self._memory_kind = _check_memory_kind(memory_kind)
        entries = tuple(spec)
        while entries and entries[-1] is None:
            entries = entries[:-1]
        self._dims_key = entries

    @property
    def mesh(self) -> Mesh:
        return self._mesh

    @property
    def spec(self) -> PartitionSpec:
        return self._spec

    @property
    def memory_kind(self) -> str:
        return self._memory_kind

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return tuple(self._mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(self._mesh.axis_size(a) == 1 for a in self._spec.axis_names)

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return NamedSharding(self._mesh, self._spec, kind)

    def with_spec(self, spec: PartitionSpec) -> NamedSharding:
        return NamedSharding(self._mesh, spec, self._memory_kind)

    def _layout(self, global_shape: tuple[int, ...]) -> Layout:
        if len(self._spec) > len(global_shape):
            raise ShardingError(
                f"{self._spec!r} has {plural(len(self._spec), 'entry', 'entries')} but the array "
                f"of shape {shape_str(global_shape)} has only "
                f"{plural(len(global_shape), 'dimension')}; a spec "
                f"needs at most one entry per dimension. Drop the extra entries "
                f"(P() for a scalar), or reshape the array."
            )
        mesh = self._mesh
        return mesh_layout(
            mesh.devices.shape,
            self._device_assignment,
            mesh.axis_names,
            self._spec.dims(len(global_shape)),
            global_shape,
        )

    def _key(self) -> tuple:
        return (self._mesh, self._dims_key, self._memory_kind)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSharding) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"NamedSharding(mesh={self._mesh!r}, spec={self._spec!r}, "
            f"memory_kind={self._memory_kind})"
        )

    def replication_axes(self) -> tuple[str, ...]:
        """The mesh axes over which every shard is repeated."""
        used = set(self._spec.axis_names)
        return tuple(a for a in self._mesh.axis_names if a not in used)

    @property
    def replication_factor(self) -> int:
        """How many devices hold each element."""
        return math.prod(self._mesh.axis_size(a) for a in self.replication_axes())


class SingleDeviceSharding(Sharding):
    """The whole array on one device. Example: ``SingleDeviceSharding(spmd.devices()[0])``."""

    __slots__ = ("_device", "_memory_kind")

    def __init__(self, device: Device, memory_kind: str | None = None) -> None:
        self._device = check_device(device, "SingleDeviceSharding device")
        self._memory_kind = _check_memory_kind(memory_kind)

    @property
    def memory_kind(self) -> str:
        return self._memory_kind

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return (self._device,)

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def with_memory_kind(self, kind: str) -> SingleDeviceSharding:
        return SingleDeviceSharding(self._device, kind)

    def _layout(self, global_shape: tuple[int, ...]) -> Layout:
        return whole_layout(self._device, global_shape)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SingleDeviceSharding)
            and self._device == other._device
            and self._memory_kind == other._memory_kind
        )

    def __hash__(self) -> int:
        return hash((self._device, self._memory_kind))

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self._memory_kind})"
