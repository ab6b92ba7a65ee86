"""Manual parallelism beside JAX and NumPy: a psum inside shard_map, and a tiny pmap call.

Run: ``python benchmarks/manual_parallel.py`` (JAX is timed in the same run when installed,
on as many host devices). The psum adds one float32 block of 16 MiB per device (8 devices:
128 MiB in all), and every device gets the sum; NumPy adds the same blocks in one process.
The tiny pmap maps ``v + 1`` over the devices on an input already on them. Each row is the
median of several calls after a warm-up. ``--devices N`` (8 by default), ``--cores K`` and
``--scaling`` (1 to 16 devices) are described in benchmarks/scaling.py.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from scaling import configure, report

ARGS = configure()

import numpy as np  # noqa: E402  (after configure() set the device count)
from timing import median_ms, tiny_call_ms  # noqa: E402

BLOCK = 4 * 1024 * 1024  # float32 elements: 16 MiB per device
DEVICES = ARGS.devices


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "blocks": rng.standard_normal(DEVICES * BLOCK, dtype=np.float32),
        "tiny": np.arange(DEVICES, dtype=np.float32),
    }


def times(lib, shard_map, psum, sharding, spec, line, data: dict) -> dict[str, float]:
    """Both cases for ``lib`` (spmd or jax)."""
    x = lib.device_put(data["blocks"], sharding(line, spec("x")))
    total = lib.jit(
        shard_map(lambda b: psum(b, "x"), mesh=line, in_specs=spec("x"), out_specs=spec())
    )
    step = lib.pmap(lambda v: v + 1, axis_name="i")
    on_devices = lib.pmap(lambda v: v, axis_name="i")(data["tiny"])
    return {
        "psum, 16 MiB per device (shard_map)": median_ms(lambda: total(x).block_until_ready()),
        "tiny pmap call (1 el. per device)": tiny_call_ms(
            lambda: step(on_devices).block_until_ready()
        ),
    }


def spmd_times(data: dict) -> dict[str, float]:
    import spmd
    from spmd import NamedSharding, P

    line = spmd.make_mesh((DEVICES,), ("x",))
    return times(spmd, spmd.shard_map, spmd.lax.psum, NamedSharding, P, line, data)


def jax_times(data: dict) -> dict[str, float] | None:
    try:
        import jax
        from jax.sharding import AxisType, NamedSharding
        from jax.sharding import PartitionSpec as P
    except ImportError:
        return None
    line = jax.make_mesh((DEVICES,), ("x",), axis_types=(AxisType.Auto,))
    return times(jax, jax.shard_map, jax.lax.psum, NamedSharding, P, line, data)


def numpy_sum_ms(data: dict) -> float:
    blocks = data["blocks"].reshape(DEVICES, BLOCK)

    def add_blocks() -> np.ndarray:
        total = blocks[0].copy()
        for block in blocks[1:]:
            np.add(total, block, out=total)
        return total

    return median_ms(add_blocks)


def measure() -> dict[str, dict[str, float]]:
    """Each case's time in ms, per library (spmd, jax, numpy)."""
    data = inputs()
    ours = spmd_times(data)
    theirs = jax_times(data) or {}
    rows = {name: {"spmd": ms} for name, ms in ours.items()}
    for name, ms in theirs.items():
        rows[name]["jax"] = ms
    psum = next(name for name in rows if name.startswith("psum"))
    rows[psum]["numpy"] = numpy_sum_ms(data)
    return rows


def print_rows(rows: dict[str, dict[str, float]]) -> None:
    print(
        f"{'':32} {'spmd ms':>10} {'JAX ms':>10} {'JAX/spmd':>9} {'NumPy ms':>9} {'spmd/NumPy':>10}"
    )
    for name, ms in rows.items():
        mine, other = ms["spmd"], ms.get("jax")
        jax_text = f"{other:10.3f}" if other is not None else f"{'-':>10}"
        ratio = f"{other / mine:9.2f}" if other is not None else f"{'-':>9}"
        numpy_text = f"{ms['numpy']:9.1f} {mine / ms['numpy']:10.2f}" if "numpy" in ms else ""
        print(f"{name:32} {mine:10.3f} {jax_text} {ratio} {numpy_text}")


if __name__ == "__main__":
    report(ARGS, __file__, measure, print_rows)
