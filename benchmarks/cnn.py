"""One data-parallel CNN training step beside JAX: conv 3x3 (32 channels), relu, 2x2 max
pooling, conv 3x3 (64 channels), relu, 2x2 max pooling, dense 10, softmax cross-entropy, on a
batch of 256 32x32x3 float32 images split over the devices (NHWC, kernels HWIO, weights
replicated): forward, backward (gradients all-reduced) and an SGD update, under jit.

Run: ``python benchmarks/cnn.py`` (JAX is timed in the same run when installed, on as many
host devices). ``ratio`` is JAX's time over ours (above 1: spmd is faster). ``--pool``
picks the pooling: ``reshape`` (a reshape and a max over the 2x2 blocks, exact for 2x2
windows of stride 2) or ``reduce_window`` (lax.reduce_window, both libraries); the default
takes reduce_window where spmd.lax has it. ``--devices N``, ``--cores K`` and ``--scaling``
are described in benchmarks/scaling.py.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(__file__))

from scaling import configure, report

POOLS = ("auto", "reshape", "reduce_window")
_pool_arg = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--pool=")), "auto")
sys.argv = [a for a in sys.argv if not a.startswith("--pool=")]
ARGS = configure()

import numpy as np  # noqa: E402  (after configure() set the device count)
from timing import interleaved_ms  # noqa: E402

BATCH, SIDE, CLASSES = 256, 32, 10
CHANNELS = (3, 32, 64)
DN = ("NHWC", "HWIO", "NHWC")
ROW = "CNN training step"


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    data = {
        "x": rng.standard_normal((BATCH, SIDE, SIDE, CHANNELS[0]), dtype=np.float32),
        "y": np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, BATCH)],
    }
    for k, (c_in, c_out) in enumerate(itertools.pairwise(CHANNELS)):
        scale = np.float32(1 / np.sqrt(9 * c_in))
        data[f"conv{k}"] = rng.standard_normal((3, 3, c_in, c_out), dtype=np.float32) * scale
        data[f"bias{k}"] = np.zeros(c_out, np.float32)
    flat = (SIDE // 4) ** 2 * CHANNELS[-1]
    data["dense"] = rng.standard_normal((flat, CLASSES), dtype=np.float32) / np.float32(
        np.sqrt(flat)
    )
    data["dense_bias"] = np.zeros(CLASSES, np.float32)
    return data


def pooling(lib, numpy, how: str) -> Callable:
    """2x2 max pooling of stride 2 over NHWC images."""
    if how == "reduce_window":
        maximum = getattr(lib.lax, "max", numpy.maximum)  # JAX's monoid, or spmd.numpy's

        def pool(h):
            return lib.lax.reduce_window(h, -numpy.inf, maximum, (1, 2, 2, 1), (1, 2, 2, 1),
                                         "VALID")  # fmt: skip

        return pool

    def pool(h):
        n, rows, cols, c = h.shape
        return numpy.max(h.reshape(n, rows // 2, 2, cols // 2, 2, c), axis=(2, 4))

    return pool


def step_call(lib, numpy, nn, mesh, sharding, spec, data, pool_kind: str) -> Callable:
    """A call of one jitted training step of ``lib`` (spmd or jax) that waits for it."""
    pool = pooling(lib, numpy, pool_kind)

    def loss(params, x, y):
        h = x
        for w, b in params[:2]:
            h = lib.lax.conv_general_dilated(h, w, (1, 1), "SAME", dimension_numbers=DN)
            h = pool(nn.relu(h + b))
        w, b = params[2]
        logits = h.reshape(h.shape[0], -1) @ w + b
        return -numpy.mean(numpy.sum(nn.log_softmax(logits) * y, axis=-1))

    @lib.jit
    def step(params, x, y):
        value, grads = lib.value_and_grad(loss)(params, x, y)
        pairs = zip(params, grads, strict=True)
        new = [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in pairs]
        return new, value

    replicated = sharding(mesh, spec())
    names = [("conv0", "bias0"), ("conv1", "bias1"), ("dense", "dense_bias")]
    params = [tuple(lib.device_put(data[n], replicated) for n in pair) for pair in names]
    batch = sharding(mesh, spec("batch"))
    x, y = lib.device_put(data["x"], batch), lib.device_put(data["y"], batch)

    def call():
        new, value = step(params, x, y)
        value.block_until_ready()
        new[0][0].block_until_ready()

    return call


def measure() -> dict[str, dict[str, float]]:
    data = inputs()
    calls = {}
    import spmd
    import spmd.nn
    import spmd.numpy as snp

    kind = _pool_arg
    if kind == "auto":
        kind = "reduce_window" if hasattr(spmd.lax, "reduce_window") else "reshape"
    line = spmd.make_mesh((ARGS.devices,), ("batch",))
    calls["spmd"] = step_call(spmd, snp, spmd.nn, line, spmd.NamedSharding, spmd.P, data, kind)
    try:
        import jax
        import jax.numpy as jnp
        from jax.sharding import AxisType, NamedSharding
        from jax.sharding import PartitionSpec as P
    except ImportError:
        pass
    else:
        mesh = jax.make_mesh((ARGS.devices,), ("batch",), axis_types=(AxisType.Auto,))
        calls["jax"] = step_call(jax, jnp, jax.nn, mesh, NamedSharding, P, data, kind)
    return {f"{ROW} ({kind})": interleaved_ms(calls, rounds=5)}


def print_rows(rows: dict[str, dict[str, float]]) -> None:
    print(f"{'':32} {'spmd ms':>10} {'JAX ms':>10} {'ratio':>7}")
    for name, ms in rows.items():
        row = f"{name:32} {ms['spmd']:10.1f}"
        row += f" {ms['jax']:10.1f} {ms['jax'] / ms['spmd']:7.2f}" if "jax" in ms else ""
        print(row)


if __name__ == "__main__":
    report(ARGS, __file__, measure, print_rows)
