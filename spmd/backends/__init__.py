"""Backends: the array library each device computes with (NumPy, PyTorch, CuPy, or
array_api_strict for tests), chosen with ``SPMD_BACKEND`` or ``spmd.config.update("backend",
...)`` before devices are first listed."""

from spmd.backends.base import BACKEND_NAMES, Backend, backend_named, gpu_backend

__all__ = ["BACKEND_NAMES", "Backend", "backend_named", "gpu_backend"]
