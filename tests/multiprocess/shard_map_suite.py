"""The ``shard_map`` suite: tests/test_shard_map.py's sampled local functions and every
collective, checked by its coordinate-loop reference on meshes spanning the processes, each
called eagerly (every process runs the body on its own devices' blocks) and under jit."""

from __future__ import annotations

import numpy as np

import spmd
from spmd import NamedSharding, P
from tests import test_shard_map as shard_map_tests
from tests.multiprocess.checks import gathered, seeded
from tests.multiprocess.tally import Tally

MODES = ("eager", "jit")


def run(tally: Tally) -> None:
    for i, param in enumerate(shard_map_tests.local_cases(60)):
        if tally.sampled(i):
            mode = MODES[i % 2]
            tally.covered[f"local {param.values[3]}"] += 1
            tally.covered[mode] += 1
            tally.check(f"local {param.id} {mode}", run_local_function, *param.values, mode)
    for i, param in enumerate(shard_map_tests.collective_cases(120)):
        if tally.sampled(i):
            name, params, reduce_first = param.values[3:]
            mode = MODES[(i // 2) % 2]
            tally.covered[name] += 1
            tally.covered["uneven"] += int(reduce_first)
            tally.covered[mode] += 1
            tally.check(f"collective {param.id} {params} {mode}", run_collective, *param.values,
                        mode)  # fmt: skip


def run_local_function(mesh_key, shape, spec, name, mode) -> None:
    mesh = shard_map_tests.mesh_of(mesh_key)
    rng = seeded(shape, name)  # the test seeds with hash(), which varies between processes
    x = rng.integers(-5, 9, size=shape).astype(np.float32)
    if name == "two_args":
        y = rng.integers(-5, 9, size=shape).astype(np.float32)
        f = spmd.shard_map(lambda a, b: a * b - a, mesh, in_specs=(spec, spec), out_specs=spec)
        got = shard_map_tests.called(f, mode)(x, y)
        blocks = shard_map_tests.device_blocks(mesh, [spec, spec], [x, y])
        want = shard_map_tests.assemble(mesh, spec, {c: a * b - a for c, (a, b) in blocks.items()})
    else:
        ours, oracle = shard_map_tests.LOCAL_FUNCTIONS[name]
        f = spmd.shard_map(ours, mesh, in_specs=spec, out_specs=spec)
        got = shard_map_tests.called(f, mode)(x)
        blocks = shard_map_tests.device_blocks(mesh, [spec], [x])
        want = shard_map_tests.assemble(mesh, spec, {c: oracle(b) for c, (b,) in blocks.items()})
    assert isinstance(got, spmd.Array)
    assert got.sharding == NamedSharding(mesh, spec)
    (whole,) = gathered([got])
    np.testing.assert_array_equal(whole, want)


def run_collective(mesh_key, shape, spec, name, params, reduce_first, mode) -> None:
    mesh = shard_map_tests.mesh_of(mesh_key)
    everyone = tuple(mesh.axis_names)
    x = np.random.default_rng(len(shape) + 7 * sum(shape)).integers(-9, 10, size=shape)
    x = x.astype(np.float64)

    def pre(b):
        return b.sum(axis=0) if reduce_first else b * 3 - 1

    def body(b):
        return shard_map_tests.call_collective(name, pre(b), params)[None]

    f = spmd.shard_map(body, mesh, in_specs=spec, out_specs=P(everyone))
    result = shard_map_tests.called(f, mode)(x)
    (got,) = gathered([result])
    blocks = shard_map_tests.device_blocks(mesh, [spec], [x])
    values = {c: pre(b) for c, (b,) in blocks.items()}
    outs = shard_map_tests.reference_collective(mesh, name, params, values)
    if name == "axis_index":
        outs = {c: values[c] + outs[c] for c in values}
    want = np.stack([outs[c] for c in shard_map_tests.coords_of(mesh)])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
