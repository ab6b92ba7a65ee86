"""Backends (spmd/backends/): choosing one through the environment, what a device says of
its backend, and the same program on NumPy, PyTorch and array_api_strict devices."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

import spmd
from spmd.backends import backend_named

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_STRICT = importlib.util.find_spec("array_api_strict") is not None
BACKENDS = [
    "numpy",
    pytest.param("torch", marks=pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")),
    pytest.param(
        "array_api_strict",
        marks=pytest.mark.skipif(not HAS_STRICT, reason="array_api_strict not installed"),
    ),
]


def run_with_backend(backend: str, code: str, devices: int = 8) -> str:
    """Run ``code`` in a fresh interpreter with SPMD_BACKEND=``backend``; its stdout."""
    env = {**os.environ, "SPMD_BACKEND": backend, "SPMD_NUM_CPU_DEVICES": str(devices)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_devices_compute_with_the_chosen_backend():
    chosen = os.environ.get("SPMD_BACKEND", "numpy")
    device = spmd.devices()[0]
    assert (device.platform, device.backend) == ("cpu", chosen)
    assert device.library is backend_named(chosen)


def test_an_unknown_or_missing_backend_is_a_clear_error():
    with pytest.raises(spmd.ConfigError, match="choose one of numpy, torch, cupy"):
        backend_named("jax")
    with pytest.raises(spmd.ConfigError, match="must be one of numpy, torch, cupy"):
        spmd.config.update("backend", "tensorflow")
    if importlib.util.find_spec("cupy") is None:
        with pytest.raises(spmd.ConfigError, match=r"needs cupy, which is not installed"):
            backend_named("cupy")


def test_choosing_the_backend_after_devices_exist_is_refused():
    other = "array_api_strict" if spmd.devices()[0].backend != "array_api_strict" else "numpy"
    with pytest.raises(spmd.ConfigError, match="came too late: devices were created"):
        spmd.config.update("backend", other)


def test_gpu_devices_are_listed_or_refused_with_the_reason():
    try:
        gpus = spmd.devices("gpu")
    except spmd.SpmdTypeError as error:
        assert "no GPU with CuPy or PyTorch" in str(error)
        print("no GPU here: GPU backends are not exercised")
        return
    assert all(d.platform == "gpu" and d.backend in ("cupy", "torch") for d in gpus)


PROGRAM = """
import numpy as np
import spmd, spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.lax import psum

device = spmd.devices()[0]
print("backend", device.backend, device.platform)
mesh = spmd.make_mesh((4, 2), ("x", "y"))
rng = np.random.default_rng(0)
a, b = rng.standard_normal((9, 6)), rng.standard_normal((6, 5))
x = spmd.device_put(a, NamedSharding(mesh, P("x", "y")))   # uneven: 9 rows on 4 devices
w = spmd.device_put(b, NamedSharding(mesh, P("y", None)))
print("type", type(x.addressable_shards[0].data._buffers[x.addressable_shards[0].device]).__name__)
f = spmd.jit(lambda x, w: snp.tanh(x @ w).sum(axis=0) * 2.0 + 1)
np.testing.assert_allclose(np.asarray(f(x, w)), np.tanh(a @ b).sum(axis=0) * 2 + 1, rtol=1e-12)
np.testing.assert_allclose(np.asarray(snp.exp(x[1:4]) - 1), np.exp(a[1:4]) - 1, rtol=1e-12)
g = spmd.shard_map(lambda v: psum(v.sum(0), "x"), mesh=mesh, in_specs=P("x", None),
                   out_specs=P())
c = np.arange(16.0).reshape(8, 2)
np.testing.assert_array_equal(np.asarray(spmd.jit(g)(c)), c.sum(0))
np.testing.assert_array_equal(np.asarray(g(c)), c.sum(0))
print("ok")
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_program_on_every_backend(backend):
    out = run_with_backend(backend, PROGRAM)
    assert f"backend {backend} cpu" in out and out.rstrip().endswith("ok"), out
    expected = {"numpy": "ndarray", "torch": "Tensor", "array_api_strict": "Array"}[backend]
    assert f"type {expected}" in out


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_torch_sees_a_shard_without_a_copy():
    out = run_with_backend(
        "torch",
        """
        import numpy as np, torch, spmd
        from spmd import NamedSharding, P
        mesh = spmd.make_mesh((4,), ("x",))
        x = spmd.device_put(np.arange(8.0), NamedSharding(mesh, P("x")))
        shard = x.addressable_shards[1]
        t = torch.from_dlpack(shard.data)
        assert t.tolist() == [2.0, 3.0]
        assert t.data_ptr() == shard.data._buffers[shard.device].data_ptr()
        print("ok")
        """,
        devices=4,
    )
    assert "ok" in out
