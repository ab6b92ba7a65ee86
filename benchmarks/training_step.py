"""One data-parallel training step beside JAX: an MLP (widths 1024-4096-1024, float32) on a
batch of 4096 split over the devices, weights replicated: forward, backward (gradients
all-reduced) and an SGD update, under jit.

Run: ``python benchmarks/training_step.py`` (JAX is timed in the same run when installed,
on as many host devices). ``ratio`` is JAX's time over ours (above 1: spmd is faster).
``--devices N``, ``--cores K`` and ``--scaling`` are described in benchmarks/scaling.py.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(__file__))

from scaling import configure, report

ARGS = configure()

import numpy as np  # noqa: E402  (after configure() set the device count)
from timing import interleaved_ms  # noqa: E402

WIDTHS = (1024, 4096, 1024)
BATCH = 4096
ROW = "MLP training step"


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    data = {
        "x": rng.standard_normal((BATCH, WIDTHS[0]), dtype=np.float32),
        "y": rng.standard_normal((BATCH, WIDTHS[-1]), dtype=np.float32),
    }
    for k, (m, n) in enumerate(itertools.pairwise(WIDTHS)):
        data[f"w{k}"] = rng.standard_normal((m, n), dtype=np.float32) / np.float32(np.sqrt(m))
        data[f"b{k}"] = np.zeros(n, np.float32)
    return data


def step_call(lib, numpy, mesh, sharding, spec, data) -> Callable:
    """A call of one jitted training step of ``lib`` (spmd or jax) that waits for it."""

    def loss(params, x, y):
        h = x
        for k, (w, b) in enumerate(params):
            h = h @ w + b
            if k < len(params) - 1:
                h = numpy.tanh(h)
        return numpy.mean((h - y) ** 2)

    @lib.jit
    def step(params, x, y):
        value, grads = lib.value_and_grad(loss)(params, x, y)
        pairs = zip(params, grads, strict=True)
        new = [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in pairs]
        return new, value

    replicated = sharding(mesh, spec())
    params = [
        (lib.device_put(data[f"w{k}"], replicated), lib.device_put(data[f"b{k}"], replicated))
        for k in range(len(WIDTHS) - 1)
    ]
    batch = sharding(mesh, spec("batch"))
    x, y = lib.device_put(data["x"], batch), lib.device_put(data["y"], batch)

    def call():
        new, value = step(params, x, y)
        value.block_until_ready()
        new[-1][0].block_until_ready()

    return call


def measure() -> dict[str, dict[str, float]]:
    data = inputs()
    calls = {}
    import spmd
    import spmd.numpy as snp

    line = spmd.make_mesh((ARGS.devices,), ("batch",))
    calls["spmd"] = step_call(spmd, snp, line, spmd.NamedSharding, spmd.P, data)
    try:
        import jax
        import jax.numpy as jnp
        from jax.sharding import AxisType, NamedSharding
        from jax.sharding import PartitionSpec as P
    except ImportError:
        pass
    else:
        mesh = jax.make_mesh((ARGS.devices,), ("batch",), axis_types=(AxisType.Auto,))
        calls["jax"] = step_call(jax, jnp, mesh, NamedSharding, P, data)
    return {ROW: interleaved_ms(calls, rounds=5)}


def print_rows(rows: dict[str, dict[str, float]]) -> None:
    print(f"{'':20} {'spmd ms':>10} {'JAX ms':>10} {'ratio':>7}")
    for name, ms in rows.items():
        row = f"{name:20} {ms['spmd']:10.1f}"
        row += f" {ms['jax']:10.1f} {ms['jax'] / ms['spmd']:7.2f}" if "jax" in ms else ""
        print(row)


if __name__ == "__main__":
    report(ARGS, __file__, measure, print_rows)
