"""Array: an immutable global array whose data lives in per-device shard buffers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spmd.core.methods import ArrayMethods
from spmd.errors import DistributedError, SpmdTypeError, SpmdValueError, aval_str
from spmd.runtime import dlpack
from spmd.runtime.buffers import host_view
from spmd.runtime.pool import parallel_map
from spmd.sharding.device import Device, process_index
from spmd.sharding.layout import bounds_to_slices
from spmd.sharding.named import NamedSharding, Sharding, SingleDeviceSharding

# device_put, installed by spmd/runtime/put.py (which builds Arrays, so an import of it here
# would be a circle); rows of an Array are placed with it.
device_put: Any = None


@dataclass(frozen=True)
class Shard:
    """One device's piece of an Array: where it sits in the global array, and its data."""

    device: Device
    index: tuple[slice, ...]
    replica_id: int
    _buffer: np.ndarray = field(repr=False)
    _memory_kind: str = field(default="device", repr=False)

    @property
    def data(self) -> Array:
        """This shard as an Array committed to its device (in the same memory kind)."""
        sharding = SingleDeviceSharding(self.device, self._memory_kind)
        return Array._from_buffers(sharding, {self.device: self._buffer}, self._buffer.shape)


class Array(ArrayMethods):
    """A global array split into shards, each held by one device.

    Build one with ``spmd.device_put(x, sharding)``. Arrays never change: operations make new
    ones. ``np.asarray(a)`` gathers the global value.
    """

    __slots__ = ("__weakref__", "_buffers", "_dtype", "_npy_value", "_shape", "_sharding")
    __array_priority__ = 100

    @classmethod
    def _from_buffers(
        cls,
        sharding: Sharding,
        buffers: dict[Device, np.ndarray],
        shape: tuple[int, ...],
        dtype: np.dtype | None = None,
    ) -> Array:
        """Wrap read-only per-device buffers (one per addressable device of ``sharding``)."""
        self = object.__new__(cls)
        self._sharding = sharding
        self._buffers = buffers
        self._shape = tuple(shape)
        if dtype is None:
            device, buffer = next(iter(buffers.items()))
            dtype = device.library.dtype_of(buffer)
        self._dtype = dtype
        self._npy_value = None
        return self

    def __init__(self, *args, **kwargs) -> None:
        raise SpmdTypeError(
            "spmd.Array is not built directly; use spmd.device_put(x, sharding) or "
            "spmd.make_array_from_callback(shape, sharding, callback)."
        )

    # ---- metadata -----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def sharding(self) -> Sharding:
        return self._sharding

    @property
    def is_fully_replicated(self) -> bool:
        return self._sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        return self._sharding.is_fully_addressable

    def devices(self) -> set[Device]:
        return self._sharding.device_set

    @property
    def device(self) -> Device | Sharding:
        """Where the array lives (the Array API's ``x.device``): its Device if it is on one,
        else its Sharding, as in JAX."""
        devices = self._sharding.device_set
        return next(iter(devices)) if len(devices) == 1 else self._sharding

    def to_device(self, device: Device | Sharding, /, *, stream: Any = None) -> Array:
        """This array on ``device`` (a Device or a Sharding), as ``spmd.device_put``."""
        if stream is not None:
            raise SpmdValueError(
                f"to_device: stream={stream!r}, but spmd has no streams; leave stream=None."
            )
        return device_put(self, device)

    # ---- shards -------------------------------------------------------------------
    def _shards(self, devices) -> list[Shard]:
        layout = self._sharding.layout(self._shape)
        indices = self._sharding.devices_indices_map(self._shape)
        return [
            Shard(
                d,
                indices[d],
                layout.replica_ids[layout.position[d]],
                self._buffers[d],
                self._sharding.memory_kind,
            )
            for d in layout.devices
            if d in devices
        ]

    @property
    def addressable_shards(self) -> list[Shard]:
        """The shards held by this process's devices, in the sharding's device order."""
        return self._shards(self._buffers)

    @property
    def global_shards(self) -> list[Shard]:
        if not self.is_fully_addressable:
            raise SpmdTypeError("global_shards needs every shard here; use addressable_shards.")
        return self._shards(self._buffers)

    def block_until_ready(self) -> Array:
        return self

    # ---- conversion to host values -----------------------------------------------
    def _value(self) -> np.ndarray:
        if self._npy_value is None:
            layout = self._sharding.layout(self._shape)
            held = {}  # block → a holder of it in this process
            for block, holders in layout.holders.items():
                here = [h for h in holders if h in self._buffers]
                if not here:
                    raise DistributedError(
                        f"Array {aval_str(self._shape, self._dtype)} spans several processes "
                        f"and process {process_index()} holds only some of its shards; gather "
                        f"it with spmd.multihost_utils.process_allgather(x), or read "
                        f"x.addressable_shards."
                    )
                held[block] = here[0]
            if len(held) == 1:
                device = next(iter(held.values()))
                value = np.asarray(host_view(device, self._buffers[device]))
                if value.flags.writeable:  # a host copy (of a GPU buffer), or another library's
                    value.flags.writeable = False
            else:
                value = np.empty(self._shape, self._dtype)

                def fill(block: tuple[int, ...]) -> None:
                    device = held[block]
                    piece = host_view(device, self._buffers[device])
                    value[bounds_to_slices(layout.bounds(block))] = piece

                parallel_map(fill, held, self.nbytes)
                value.flags.writeable = False
            self._npy_value = value
        return self._npy_value

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        value = self._value()
        if copy is False and dtype is not None and np.dtype(dtype) != self._dtype:
            raise ValueError("converting the dtype needs a copy, but copy=False was given")
        if copy or (dtype is not None and np.dtype(dtype) != self._dtype):
            return np.array(value, dtype=dtype, copy=True)
        return value.view()  # a view of a read-only owner can never be made writeable

    def __dlpack__(
        self,
        /,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule for ``from_dlpack`` (spmd.numpy's, ``torch.from_dlpack``, ...):
        the block of an Array on one device or fully replicated, without a copy; a sharded
        Array gathered to the host first (spmd/runtime/dlpack.py says when it copies)."""
        return dlpack.export(
            self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(DLPack device type, id)`` of the block ``__dlpack__`` exports: (1, 0), the
        host, for NumPy blocks and gathered sharded Arrays."""
        return dlpack.dlpack_device(self)

    def _scalar(self, kind: type) -> Any:
        """``kind(self)`` as the installed NumPy converts, its refusal as an SpmdError."""
        try:
            return kind(self._value())
        except (TypeError, ValueError) as refusal:
            error = SpmdValueError if isinstance(refusal, ValueError) else SpmdTypeError
            raise error(
                f"{kind.__name__}() of an spmd.Array of shape {self._shape}: {refusal}. "
                f"Reduce it first (x.any(), x.all(), x.sum()) or index one element (x[0])."
            ) from None

    def __bool__(self) -> bool:
        return self._scalar(bool)

    def __int__(self) -> int:
        return self._scalar(int)

    def __float__(self) -> float:
        return self._scalar(float)

    def __complex__(self) -> complex:
        return self._scalar(complex)

    def __index__(self) -> int:
        return self._value().__index__()

    # ---- sequence protocol ---------------------------------------------------------
    def __len__(self) -> int:
        if not self._shape:
            raise SpmdTypeError("len() of unsized object: a 0-d spmd.Array has no length")
        return self._shape[0]

    def __iter__(self) -> Iterator[Array]:
        """Rows as Arrays, laid out as this array's trailing dimensions are."""
        if not self._shape:
            raise SpmdTypeError("iteration over a 0-d spmd.Array; use it as a scalar instead")
        sharding = _row_sharding(self._sharding)
        value = self._value()
        return (device_put(value[i], sharding) for i in range(self._shape[0]))

    def __setitem__(self, index, value) -> None:
        raise SpmdTypeError(
            "spmd.Array is immutable: its shards cannot be assigned to. Build a new array "
            "instead, for example with np.asarray(a).copy() and spmd.device_put."
        )

    __hash__ = None  # arrays compare elementwise, so, as in NumPy, they are unhashable

    @property
    def weak_type(self) -> bool:
        return False

    # ---- display -------------------------------------------------------------------
    def __repr__(self) -> str:
        if not self._held_here():
            return self._summary()
        value = self._value()
        if value.size == 0:
            return f"Array([], shape={self._shape}, dtype={self._dtype.name})"
        body = np.array2string(value, separator=", ", prefix="Array(")
        return f"Array({body}, dtype={self._dtype.name})"

    def __str__(self) -> str:
        return str(self._value()) if self._held_here() else self._summary()

    def _held_here(self) -> bool:
        """Whether this process holds every block, so that the values can be shown."""
        if self._npy_value is not None or self.is_fully_addressable:
            return True
        holders = self._sharding.layout(self._shape).holders.values()
        return all(any(h in self._buffers for h in hs) for hs in holders)

    def _summary(self) -> str:
        """What an Array spanning processes shows where its values are elsewhere (as JAX)."""
        return (
            f"Array(shape={self._shape}, dtype={self._dtype.name}, sharding={self._sharding!r}; "
            f"process {process_index()} holds {len(self._buffers)} of "
            f"{self._sharding.mesh.size} shards: gather the values with "
            f"spmd.multihost_utils.process_allgather)"
        )

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self._value().item(), spec)
        return format(str(self), spec)

    def _repr_html_(self) -> str:
        from spmd.sharding.visualize import sharding_html

        return sharding_html(self._shape, self._dtype, self._sharding)


def _row_sharding(sharding: Sharding) -> Sharding:
    """The sharding of ``x[i]`` given ``x``'s: the leading dimension's split is dropped."""
    if isinstance(sharding, NamedSharding):
        return NamedSharding(
            sharding.mesh, type(sharding.spec)(*sharding.spec[1:]), sharding.memory_kind
        )
    return sharding
