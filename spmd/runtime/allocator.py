"""Freed memory kept for the next array: glibc malloc's settings for programs that allocate
and free the same sizes of arrays step after step.

glibc gives each large allocation (above 128 KiB, a threshold it then adapts) pages of its
own, mapped fresh and unmapped when freed, so a program that runs again faults every page
of its arrays in again. A 20-step training loop on 8 devices (benchmarks/control_flow.py
train) took 24,000 page faults and 0.1 s of system time per call, a fifth of its time, where
JAX's allocator reuses its buffers; with the settings below, none. Blocks up to
``MMAP_THRESHOLD`` then come from the heap and return to it when freed, and the heap keeps
up to ``TRIM_THRESHOLD`` of free memory at its top instead of giving it back at once, so a
process's resident memory stays near its peak (larger blocks still go back when freed).

``keep_freed_memory()`` applies them once (the executor calls it when it first runs a
program on several NumPy devices), with glibc only, and not where the process chose malloc
settings of its own (``MALLOC_*_`` environment variables, ``GLIBC_TUNABLES``) or sets
``SPMD_KEEP_FREED_MEMORY=0``.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # the largest glibc allows on 64-bit systems
TRIM_THRESHOLD = 128 << 20

_OWN_SETTINGS = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
    "GLIBC_TUNABLES",
)


@functools.cache
def keep_freed_memory() -> bool:
    """Apply the settings once; whether they are in force."""
    if os.environ.get("SPMD_KEEP_FREED_MEMORY", "1") == "0":
        return False
    if any(name in os.environ for name in _OWN_SETTINGS):
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
