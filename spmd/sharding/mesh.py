"""Mesh: an n-dimensional grid of devices with named axes, and the mesh in scope."""

from __future__ import annotations

import contextlib
import contextvars
import enum
import functools
import itertools
import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence

import numpy as np

from spmd.errors import ShardingError, SpmdTypeError
from spmd.sharding.device import Device, check_device, process_index
from spmd.sharding.device import devices as all_devices

_mesh_stack: contextvars.ContextVar[tuple[Mesh, ...]] = contextvars.ContextVar(
    "spmd_mesh_stack", default=()
)


def _device_grid(devices: object) -> np.ndarray:
    grid = np.array(devices, dtype=object)
    if grid.size == 0:
        raise ShardingError(
            f"Mesh devices is empty (shape {grid.shape}); a mesh needs at least one device."
        )
    for index, item in np.ndenumerate(grid):
        if not isinstance(item, Device):
            raise ShardingError(
                f"Mesh devices must all be Device objects, but the entry at {index} is "
                f"{item!r} ({type(item).__name__}). Build meshes from spmd.devices()."
            )
        check_device(item, f"Mesh device at {index}")
    return grid


def _types(axis_types: object, count: int) -> tuple[AxisType, ...]:
    if axis_types is None:
        return (AxisType.Auto,) * count
    types = (axis_types,) if isinstance(axis_types, AxisType) else tuple(axis_types)
    if len(types) != count or not all(isinstance(t, AxisType) for t in types):
        raise ShardingError(
            f"Mesh axis_types {axis_types!r} must be one spmd.sharding.AxisType per axis "
            f"({count} of them), e.g. (AxisType.Auto,) * {count}."
        )
    return types


def _names(axis_names: object, who: str) -> tuple:
    if isinstance(axis_names, str):
        return (axis_names,)
    if not isinstance(axis_names, (tuple, list)):
        raise SpmdTypeError(
            f"{who} axis_names must be a tuple of strings such as ('x', 'y'), got {axis_names!r}."
        )
    return tuple(axis_names)


class AxisType(enum.Enum):
    """How a mesh axis shards values, as in JAX: ``Auto`` (jit propagates shardings),
    ``Explicit`` (JAX carries the sharding in each value's type; spmd propagates it as for
    Auto, so far) and ``Manual`` (inside shard_map)."""

    Auto = "Auto"
    Explicit = "Explicit"
    Manual = "Manual"


class Mesh:
    """Devices laid out on a grid whose axes have names (and types, Auto by default).

    Example: ``Mesh(np.array(spmd.devices()).reshape(2, 4), ('x', 'y'))``.
    """

    __slots__ = ("_axis_names", "_axis_types", "_devices", "_hash", "_key")

    def __init__(
        self,
        devices: np.ndarray | Sequence,
        axis_names: str | Sequence[str],
        axis_types: Sequence[AxisType] | AxisType | None = None,
    ) -> None:
        axis_names = _names(axis_names, "Mesh")
        self._axis_types = _types(axis_types, len(axis_names))
        for name in axis_names:
            if not isinstance(name, str):
                raise ShardingError(
                    f"Mesh axis_names must be strings, got {name!r} ({type(name).__name__}) in "
                    f"{axis_names!r}."
                )
        if len(set(axis_names)) != len(axis_names):
            twice = sorted({n for n in axis_names if axis_names.count(n) > 1})
            raise ShardingError(
                f"Mesh axis_names {axis_names!r} repeat {', '.join(map(repr, twice))}; each "
                f"axis needs its own name."
            )
        grid = _device_grid(devices)
        if grid.ndim != len(axis_names):
            raise ShardingError(
                f"Mesh got a device array of shape {grid.shape} ({grid.ndim} dimensions) but "
                f"{len(axis_names)} axis_names {axis_names!r}; give one name per dimension, or "
                f"reshape the devices, e.g. np.array(devices).reshape(...)."
            )
        ids = [d.id for d in grid.flat]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise ShardingError(
                f"Mesh devices repeat device ids {twice}; a device can appear once in a mesh."
            )
        grid.flags.writeable = False
        self._devices = grid
        self._axis_names = axis_names
        self._key = (tuple(grid.flat), grid.shape, axis_names, self._axis_types)
        self._hash = hash(self._key)

    @property
    def devices(self) -> np.ndarray:
        """The device grid (read-only), one array dimension per mesh axis."""
        return self._devices

    @property
    def axis_names(self) -> tuple[str, ...]:
        return self._axis_names

    @property
    def axis_types(self) -> tuple[AxisType, ...]:
        return self._axis_types

    @property
    def shape(self) -> OrderedDict[str, int]:
        """Axis name → size, in axis order."""
        return OrderedDict(zip(self._axis_names, self._devices.shape, strict=True))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return self._devices.shape

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self._axis_names, self._devices.shape, strict=True))

    @property
    def size(self) -> int:
        return self._devices.size

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self._devices)

    @property
    def local_devices(self) -> list[Device]:
        here = process_index()
        return [d for d in self._devices.flat if d.process_index == here]

    @property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self._devices.flat}) > 1

    def axis_size(self, name: str) -> int:
        return self._devices.shape[self.axis_index(name)]

    def axis_index(self, name: str) -> int:
        """Position of axis ``name`` in ``axis_names``; raises ShardingError if absent."""
        try:
            return self._axis_names.index(name)
        except ValueError:
            raise ShardingError(
                f"Mesh axis {name!r} does not exist; this mesh has axes {self._describe()}."
            ) from None

    def _describe(self) -> str:
        return ", ".join(f"{n!r} (size {s})" for n, s in self.shape_tuple) or "none"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mesh) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape_tuple)
        if any(t is not AxisType.Auto for t in self._axis_types):
            axes += f", axis_types=({', '.join(t.name for t in self._axis_types)})"
        return f"Mesh({axes})"

    def __enter__(self) -> Mesh:
        _mesh_stack.set((*_mesh_stack.get(), self))
        return self

    def __exit__(self, *exc) -> None:
        _mesh_stack.set(_mesh_stack.get()[:-1])


_set_mesh: list[Mesh | None] = [None]  # the mesh spmd.set_mesh set, outside any `with`


def current_mesh() -> Mesh | None:
    """The mesh of the innermost ``with mesh:`` (or ``use_mesh``/``set_mesh``) block, else
    the one ``set_mesh`` set, or None."""
    stack = _mesh_stack.get()
    return stack[-1] if stack else _set_mesh[0]


class _MeshSetting:
    """What ``set_mesh`` returns: the mesh is set at once; leaving a ``with`` block over it
    sets back the one before."""

    def __init__(self, mesh: Mesh | None) -> None:
        if mesh is not None and not isinstance(mesh, Mesh):
            raise SpmdTypeError(f"set_mesh takes a Mesh (or None), got {type(mesh).__name__}.")
        self.mesh, self.previous = mesh, _set_mesh[0]
        _set_mesh[0] = mesh

    def __enter__(self) -> Mesh | None:
        return self.mesh

    def __exit__(self, *exc) -> None:
        _set_mesh[0] = self.previous


def set_mesh(mesh: Mesh | None) -> _MeshSetting:
    """Make ``mesh`` the current mesh, as ``jax.set_mesh`` does: bare PartitionSpecs (in
    device_put, jit's shardings, with_sharding_constraint, reshard) and shard_map without
    ``mesh=`` use it. Call it, or use it as ``with spmd.set_mesh(mesh):``."""
    return _MeshSetting(mesh)


@contextlib.contextmanager
def use_mesh(mesh: Mesh) -> Iterator[Mesh]:
    """``with use_mesh(mesh):``: the current mesh inside the block (``jax.sharding.use_mesh``)."""
    with mesh:
        yield mesh


get_mesh = current_mesh


def make_mesh(
    axis_shapes: Sequence[int],
    axis_names: Sequence[str],
    axis_types: Sequence[AxisType] | None = None,
    *,
    devices: Sequence[Device] | None = None,
) -> Mesh:
    """A mesh of the given shape over ``devices`` (default: the first devices, in id order,
    as many as the shape holds, as JAX takes them).

    Example: ``spmd.make_mesh((2, 4), ('x', 'y'))``.
    """
    if not isinstance(axis_shapes, (tuple, list)):
        raise SpmdTypeError(
            f"make_mesh axis_shapes must be a tuple of ints such as (2, 4), got {axis_shapes!r}."
        )
    axis_shapes = tuple(axis_shapes)
    axis_names = _names(axis_names, "make_mesh")
    if len(axis_shapes) != len(axis_names):
        raise ShardingError(
            f"make_mesh got {len(axis_shapes)} axis_shapes {axis_shapes} but {len(axis_names)} "
            f"axis_names {axis_names}; give one name per axis."
        )
    for size in axis_shapes:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ShardingError(
                f"make_mesh axis_shapes {axis_shapes} must be positive integers; {size!r} is not."
            )
    needed = math.prod(axis_shapes)
    given = devices is not None
    if devices is None:  # the first devices, as JAX takes them
        devices = all_devices()[:needed]
    devices = list(np.asarray(devices, dtype=object).flat)
    if needed != len(devices):
        fix = (
            f"Choose axis sizes whose product is {len(devices)}, or pass "
            f"devices=spmd.devices()[:{needed}]"
            if given
            else f"Choose axis sizes whose product is at most {len(devices)}, or start with "
            f"more devices (SPMD_NUM_CPU_DEVICES={needed})"
        )
        raise ShardingError(
            f"make_mesh: axis_shapes {axis_shapes} need {needed} devices, but {len(devices)} "
            f"{'were given' if given else 'exist'}. {fix}."
        )
    grid = np.empty(len(devices), dtype=object)
    grid[:] = devices
    return Mesh(grid.reshape(axis_shapes), axis_names, axis_types)


@functools.lru_cache(maxsize=1024)
def groups(mesh: Mesh, axes: tuple[str, ...]) -> list[list[int]]:
    """Positions (in the mesh's flat device order) that differ only along ``axes``."""
    shape = mesh.devices.shape
    keep = [i for i, name in enumerate(mesh.axis_names) if name not in axes]
    found: dict[tuple, list[int]] = {}
    for position, coords in enumerate(itertools.product(*map(range, shape))):
        found.setdefault(tuple(coords[i] for i in keep), []).append(position)
    return list(found.values())


@functools.lru_cache(maxsize=1024)
def device_groups(mesh: Mesh, axes: tuple[str, ...]) -> tuple[tuple[Device, ...], ...]:
    """``groups(mesh, axes)`` with each position's device in place of the position."""
    devices = mesh.devices.flat
    return tuple(tuple(devices[p] for p in group) for group in groups(mesh, axes))
