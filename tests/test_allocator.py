"""glibc malloc's settings for arrays that come and go step after step
(spmd/runtime/allocator.py): applied where nothing said otherwise, and only there."""

import platform
import resource

import numpy as np
import pytest

import spmd
from spmd import NamedSharding, P
from spmd.runtime import allocator

apply = allocator.keep_freed_memory.__wrapped__  # uncached: each call decides afresh
GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


@pytest.mark.parametrize(
    "setting",
    [
        ("SPMD_KEEP_FREED_MEMORY", "0"),
        ("MALLOC_MMAP_THRESHOLD_", "65536"),
        ("MALLOC_TRIM_THRESHOLD_", "0"),
        ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0"),
    ],
)
def test_a_process_that_chose_its_own_settings_keeps_them(monkeypatch, setting):
    for name in allocator._OWN_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(*setting)
    assert apply() is False


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_freed_arrays_come_back_without_page_faults(monkeypatch):
    for name in (*allocator._OWN_SETTINGS, "SPMD_KEEP_FREED_MEMORY"):
        monkeypatch.delenv(name, raising=False)
    assert apply() is True
    mesh = spmd.make_mesh((8,), ("x",))
    x = spmd.device_put(np.ones((1024, 512), np.float32), NamedSharding(mesh, P("x")))
    step = spmd.jit(lambda v: (v * 2 + 1) @ (v.T * 3))
    for _ in range(3):
        step(x).block_until_ready()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        step(x).block_until_ready()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    pages = 5 * 8 * 1024 * 1024 * 4 // 4096  # the product alone, if each call faulted it in
    assert faults < pages / 10, faults
