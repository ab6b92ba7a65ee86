"""What a backend is: an array namespace for device buffers, and the moves between them and
NumPy on the host.

The executor runs a primitive's implementation with ``backend.xp`` on the device's own
buffers. Everything that lays blocks out (device_put, the Communicator, gathering an Array)
works on NumPy arrays: ``to_numpy`` and ``from_numpy`` share memory where the buffer is in
host memory (NumPy, PyTorch's CPU tensors, array_api_strict) and copy across a bus otherwise.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np

from spmd.errors import ConfigError

BACKEND_NAMES = ("numpy", "torch", "cupy", "array_api_strict")
_MODULES = {
    "numpy": "spmd.backends.numpy_backend",
    "torch": "spmd.backends.torch_backend",
    "cupy": "spmd.backends.cupy_backend",
    "array_api_strict": "spmd.backends.strict_backend",
}
_PACKAGES = {"torch": "torch", "cupy": "cupy", "array_api_strict": "array-api-strict"}


class Backend:
    """One array library on one kind of device (``platform``: "cpu" or "gpu")."""

    name: str = ""
    platform: str = "cpu"
    xp: Any = None  # the array namespace implementations compute with

    def device_count(self) -> int:
        """How many devices of this backend's platform there are (CPU backends: None, the
        count is ``num_cpu_devices``)."""
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray, index: int) -> Any:
        """``array`` as a buffer on device ``index`` (of this backend's platform); it may
        share memory with ``array``, which nobody writes to after."""
        raise NotImplementedError

    def to_numpy(self, buffer: Any) -> np.ndarray:
        """``buffer`` as a NumPy array, sharing its memory where it is on the host. The
        caller only reads it."""
        raise NotImplementedError

    def result(self, value: Any, dtype: np.dtype, index: int) -> Any:
        """A value device ``index`` computed, as an Array holds it: this library's array (a
        scalar made one), frozen; None if its dtype is not ``dtype`` (a broken rule)."""
        if not self.is_buffer(value):
            value = self.from_numpy(np.asarray(value, dtype), index)
        return self.freeze(value) if self.dtype_of(value) == dtype else None

    def freeze(self, buffer: Any) -> Any:
        """``buffer`` kept read-only from now on. Buffers are immutable by ownership: the
        executor writes only into buffers it made in the same run, so only a library that
        can mark memory read-only (NumPy) does more than return the buffer."""
        return buffer

    def is_buffer(self, value: Any) -> bool:
        """Whether ``value`` is one of this backend's arrays."""
        raise NotImplementedError

    def dtype_of(self, buffer: Any) -> np.dtype:
        """The NumPy dtype of ``buffer``."""
        return _dtypes(self)[buffer.dtype]

    def native_dtype(self, dtype: np.dtype) -> Any:
        """This library's dtype holding NumPy's ``dtype``."""
        return _native_dtypes(self)[np.dtype(dtype)]

    def astype(self, buffer: Any, dtype: np.dtype) -> Any:
        """``buffer`` converted to NumPy's ``dtype`` (a new buffer)."""
        return self.xp.astype(buffer, self.native_dtype(dtype))

    def dtypes_stored(self) -> frozenset[np.dtype]:
        """spmd's dtypes this library has arrays of (which it may not compute every
        operation on: PyTorch stores uint32 but cannot add it)."""
        return _stored(self)

    def __repr__(self) -> str:
        return f"<spmd backend {self.name} ({self.platform})>"


_SPMD_DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)  # fmt: skip


@functools.cache
def _dtypes(backend: Backend) -> dict[Any, np.dtype]:
    """The backend's dtype objects, each mapped to the NumPy dtype it holds."""
    found = {}
    for name in _SPMD_DTYPES:
        dtype = np.dtype(name)
        try:
            found[backend.from_numpy(np.empty(0, dtype), 0).dtype] = dtype
        except (TypeError, ValueError):
            continue  # a dtype this library has no arrays of
    return found


@functools.cache
def _native_dtypes(backend: Backend) -> dict[np.dtype, Any]:
    return {dtype: native for native, dtype in _dtypes(backend).items()}


@functools.cache
def _stored(backend: Backend) -> frozenset[np.dtype]:
    return frozenset(_native_dtypes(backend))


@functools.cache
def backend_named(name: str) -> Backend:
    """The backend called ``name``; ConfigError naming the choices, or the missing package."""
    if name not in _MODULES:
        raise ConfigError(
            f"SPMD_BACKEND / config 'backend' is {name!r}; choose one of "
            f"{', '.join(BACKEND_NAMES)}."
        )
    try:
        module = importlib.import_module(_MODULES[name])
    except ImportError as error:
        raise ConfigError(
            f"the {name} backend needs {_PACKAGES.get(name, name)}, which is not installed "
            f"({error}). Install it (pip install 'spmd[{name}]'), or choose another backend "
            f"with SPMD_BACKEND."
        ) from None
    return module.BACKEND


def gpu_backend(preferred: str) -> Backend | None:
    """The backend whose GPUs spmd lists: ``preferred``'s if it has any, else CuPy's, else
    PyTorch's CUDA devices; None where no GPU (or no library for one) is here."""
    names = [preferred] if preferred in ("torch", "cupy") else []
    for name in [*names, "cupy", "torch"]:
        try:
            module = importlib.import_module(_MODULES[name])
        except ImportError:
            continue
        if module.GPU_BACKEND.device_count() > 0:
            return module.GPU_BACKEND
    return None
