"""Devices and processes: every process's virtual CPU devices and its GPUs, each computing with
its backend (spmd/backends/), and the queries over them."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from spmd.backends import Backend, backend_named, gpu_backend
from spmd.config import config
from spmd.errors import ShardingError, SpmdTypeError


@dataclass
class _ProcessInfo:
    """Which process this is, how many devices each process contributes (None: this
    process alone, with ``num_cpu_devices``), and how many of them share this host."""

    index: int = 0
    count: int = 1
    device_counts: tuple[int, ...] | None = None
    on_this_host: int = 1


_process = _ProcessInfo()


def join_processes(index: int, device_counts: tuple[int, ...], on_this_host: int = 1) -> None:
    """Make this process ``index`` of ``len(device_counts)``, each contributing its count of
    devices, ``on_this_host`` of them on this host (``spmd.distributed.initialize``); only
    before devices were first listed."""
    if devices_listed():
        raise RuntimeError("devices were listed before the processes joined")
    _process.index, _process.count = index, len(device_counts)
    _process.device_counts, _process.on_this_host = device_counts, on_this_host


def processes_on_this_host() -> int:
    """How many processes of this job run on this host (they share its cores)."""
    return _process.on_this_host


def devices_listed() -> bool:
    """Whether the device list exists already (it never changes after)."""
    return _cpu_devices.cache_info().currsize > 0


class Device:
    """One device of the mesh: holds shard buffers and runs one copy of the per-device program,
    with its ``library`` (the Backend; ``backend`` is its name, as "numpy" or "torch")."""

    platform: str = ""
    device_kind: str = ""
    __slots__ = ("_hash", "backend", "id", "library", "local_index", "process_index")

    def __init__(
        self, id: int, process_index: int = 0, library: Backend | None = None, local_index: int = 0
    ) -> None:
        self.id = id
        self.process_index = process_index
        self.library = library if library is not None else backend_named("numpy")
        self.backend = self.library.name
        self.local_index = local_index  # which of this process's devices of its platform
        self._hash = hash((self.platform, id))  # devices key every buffer lookup

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and self.platform == other.platform and self.id == other.id

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Device) -> bool:
        return (self.platform, self.id) < (other.platform, other.id)

    @property
    def label(self) -> str:
        """Short name used in pictures, as JAX draws it: ``CPU 3``."""
        return f"{self.platform.upper()} {self.id}"


class CpuDevice(Device):
    """A virtual CPU device; several of them share this process's cores and memory."""

    platform = "cpu"
    device_kind = "cpu"
    __slots__ = ()


class GpuDevice(Device):
    """One GPU of this process, computing with CuPy or PyTorch's CUDA tensors."""

    platform = "gpu"
    device_kind = "gpu"
    __slots__ = ()


def _backend_choice() -> str:
    return config._freeze("backend")


@functools.cache
def _cpu_devices() -> tuple[CpuDevice, ...]:
    count = config._freeze("num_cpu_devices")
    chosen = _backend_choice()
    library = backend_named("numpy" if chosen == "cupy" else chosen)
    counts = _process.device_counts or (count,)
    owners = [p for p, n in enumerate(counts) for _ in range(n)]
    first = {p: owners.index(p) for p in set(owners)}
    return tuple(CpuDevice(i, p, library, i - first[p]) for i, p in enumerate(owners))


@functools.cache
def _gpu_devices() -> tuple[GpuDevice, ...]:
    """This process's GPUs (a job of several processes lists each process's own only)."""
    library = gpu_backend(_backend_choice())
    if library is None:
        return ()
    return tuple(GpuDevice(i, _process.index, library, i) for i in range(library.device_count()))


def devices(platform: str | None = None) -> list[Device]:
    """All devices of all processes, ordered by id (process by process): those of the chosen
    backend's platform, or of ``platform`` ("cpu" or "gpu").

    Example: ``spmd.devices()`` → ``[CpuDevice(id=0), …, CpuDevice(id=7)]``.
    """
    if platform is None:
        platform = "gpu" if _backend_choice() == "cupy" else "cpu"
    if platform == "cpu":
        return list(_cpu_devices())
    found = list(_gpu_devices()) if platform == "gpu" else []
    if not found:
        here = "'cpu' and 'gpu'" if _gpu_devices() else "'cpu' (no GPU with CuPy or PyTorch)"
        raise SpmdTypeError(
            f"devices(platform={platform!r}): no such platform here. Available platforms: {here}."
        )
    return found


def local_devices(process_index: int | None = None) -> list[Device]:
    """The devices attached to this process (or to ``process_index``)."""
    index = _process.index if process_index is None else process_index
    return [d for d in devices() if d.process_index == index]


def device_count() -> int:
    """Number of devices across all processes."""
    return len(devices())


def local_device_count() -> int:
    """Number of devices attached to this process."""
    return len(local_devices())


def process_index() -> int:
    """Index of this process among all processes (0 when running alone)."""
    return _process.index


def process_count() -> int:
    """Number of processes taking part (1 when running alone)."""
    return _process.count


def default_device() -> Device:
    """Where unsharded data goes when no device is named: the first local device."""
    return local_devices()[0]


def check_device(value: object, argument: str) -> Device:
    """Return ``value`` if it is one of ``devices()``, else raise naming ``argument``."""
    if not isinstance(value, Device):
        raise SpmdTypeError(
            f"{argument} must be a Device such as spmd.devices()[0], got {type(value).__name__} "
            f"{value!r}."
        )
    if value not in _known_devices():
        raise ShardingError(
            f"{argument} is {value!r}, which does not exist here: this run has "
            f"{device_count()} devices, ids 0 to {device_count() - 1} (spmd.devices())."
        )
    return value


@functools.cache
def _known_devices() -> frozenset[Device]:
    return frozenset((*_cpu_devices(), *_gpu_devices()))
