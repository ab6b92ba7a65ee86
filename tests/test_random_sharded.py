"""Random numbers under jit over meshes: each device computes only its block, with no
collective, and the sharded result equals the unsharded one bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
from spmd import NamedSharding, P
from spmd.debug import count_collectives
from spmd.sharding.device_program import Compute
from spmd.sharding.plans import value_layout

MESHES = {"8": ((8,), ("x",)), "2x4": ((2, 4), ("x", "y")), "2x2x2": ((2, 2, 2), ("x", "y", "z"))}
SHAPES = [(16, 8), (7, 5), (3,), (0, 4), (0,), ()]
SAMPLERS = {  # id: function of (key, shape), unsharded
    "bits-u8": lambda k, s: spmd.random.bits(k, s, np.uint8),
    "bits-u32": lambda k, s: spmd.random.bits(k, s),
    "bits-u64": lambda k, s: spmd.random.bits(k, s, np.uint64),
    "uniform-f16": lambda k, s: spmd.random.uniform(k, s, np.float16, -2.0, 3.0),
    "uniform-f32": lambda k, s: spmd.random.uniform(k, s),
    "uniform-f64": lambda k, s: spmd.random.uniform(k, s, np.float64),
    "normal-f32": lambda k, s: spmd.random.normal(k, s),
    "normal-f64": lambda k, s: spmd.random.normal(k, s, np.float64),
    "split": lambda k, s: spmd.random.split(k, s),
}


def specs_for(mesh: spmd.Mesh, ndim: int) -> list[P]:
    """Specs of every kind for an ``ndim`` result: one axis, several (out of mesh order),
    every axis on one dimension, and unsplit."""
    names = mesh.axis_names
    if ndim == 0:
        return [P()]
    if ndim == 1:
        return [P(names[-1]), P(tuple(reversed(names)))]
    return [P(names[0], names[1:] or None), P(None, tuple(reversed(names))), P(names[-1])]


CASES = [
    pytest.param(mesh_id, shape, sampler, id=f"{mesh_id}-{shape}-{sampler}")
    for mesh_id in MESHES
    for shape in SHAPES
    for sampler in SAMPLERS
]


def assert_same_bits(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    assert got.tobytes() == want.tobytes()


def random_computes(lowered) -> list[Compute]:
    return [
        step
        for step in lowered.partitioned.steps
        if isinstance(step, Compute) and step.eqn.primitive.name.startswith(("random", "threefry"))
    ]


@pytest.mark.parametrize(("mesh_id", "shape", "sampler"), CASES)
def test_each_device_computes_its_block_of_the_unsharded_numbers(mesh_id, shape, sampler):
    mesh = spmd.make_mesh(*MESHES[mesh_id])
    sample = SAMPLERS[sampler]
    key = spmd.random.key(42)
    expected = np.asarray(sample(key, shape))
    on_mesh = spmd.device_put(key, NamedSharding(mesh, P()))
    for spec in specs_for(mesh, len(shape)):
        target = NamedSharding(mesh, spec)

        def f(k, target=target):
            return spmd.lax.with_sharding_constraint(sample(k, shape), target)

        with count_collectives() as ran:
            result = spmd.jit(f)(on_mesh)
        assert ran.total == 0, spec
        assert result.sharding == target
        assert_same_bits(result, expected)
        for shard in result.addressable_shards:
            assert_same_bits(shard.data, expected[shard.index])
        (compute,) = random_computes(spmd.jit(f).lower(on_mesh))
        computed = compute.shardings[0].dims
        assert computed[: len(shape)] == spec.dims(len(shape)), spec  # not sliced after
        layout = value_layout(mesh, computed, expected.shape)
        blocks = [layout.block_shape(b) for b in layout.blocks]
        sizes = [params["shape"] for params in compute.params]
        assert sizes == [b[:-1] if sampler == "split" else b for b in blocks], spec


def test_out_shardings_take_blocks_of_the_numbers_with_no_collective():
    key = spmd.random.key(7)
    expected = np.asarray(spmd.random.uniform(key, (16, 8)))
    for shape, names in MESHES.values():
        mesh = spmd.make_mesh(shape, names)
        target = NamedSharding(mesh, P(names[-1]))
        f = spmd.jit(lambda k: spmd.random.uniform(k, (16, 8)), out_shardings=target)
        for k in (key, spmd.device_put(key, NamedSharding(mesh, P()))):
            with count_collectives() as ran:
                result = f(k)
            assert ran.total == 0 and result.sharding == target
            assert_same_bits(result, expected)


def test_the_lowered_program_samples_a_block_on_each_device():
    mesh = spmd.make_mesh((8,), ("x",))
    key = spmd.device_put(spmd.random.key(0), NamedSharding(mesh, P()))

    def f(k):
        x = spmd.random.uniform(k, (16, 8))
        return spmd.lax.with_sharding_constraint(x, NamedSharding(mesh, P("x")))

    lowered = spmd.jit(f).lower(key)
    (line,) = [line for line in lowered.as_text().splitlines() if "random_uniform" in line]
    assert line.strip().startswith("b:f32[2,8]{P('x')} = random_uniform")
    assert "on the host" not in line and "local_slice" not in lowered.as_text()
    (compute,) = random_computes(lowered)
    assert [p["start"] for p in compute.params] == [(2 * i, 0) for i in range(8)]
    assert {(p["shape"], p["global_shape"]) for p in compute.params} == {((2, 8), (16, 8))}


def test_uniform_bounds_split_with_the_result():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    key = spmd.random.key(3)
    low = np.linspace(-4.0, 0.0, 5, dtype=np.float32)
    expected = np.asarray(spmd.random.uniform(key, (7, 5), minval=low, maxval=1.0))
    target = NamedSharding(mesh, P("x", "y"))

    def f(k, lo):
        x = spmd.random.uniform(k, (7, 5), minval=lo, maxval=1.0)
        return spmd.lax.with_sharding_constraint(x, target)

    args = (
        spmd.device_put(key, NamedSharding(mesh, P())),
        spmd.device_put(low, NamedSharding(mesh, P("y"))),
    )
    with count_collectives() as ran:
        result = spmd.jit(f)(*args)
    assert ran.total == 0 and result.sharding == target
    assert_same_bits(result, expected)
    (compute,) = random_computes(spmd.jit(f).lower(*args))
    # 7 split 2 ways is 4 + 3 rows, 5 split 4 ways 2 + 2 + 1 + 0 columns
    assert sorted({p["shape"] for p in compute.params}) == [
        (3, 0),
        (3, 1),
        (3, 2),
        (4, 0),
        (4, 1),
        (4, 2),
    ]


def test_a_sharded_key_is_gathered_whole_before_sampling():
    mesh = spmd.make_mesh((8,), ("x",))
    key = spmd.random.key(5)
    expected = np.asarray(spmd.random.normal(key, (6, 3)))
    target = NamedSharding(mesh, P(None, "x"))
    f = spmd.jit(lambda k: spmd.lax.with_sharding_constraint(spmd.random.normal(k, (6, 3)), target))
    with count_collectives() as ran:
        result = f(spmd.device_put(key, NamedSharding(mesh, P("x"))))
    assert dict(ran) == {"all-gather": 1}
    assert_same_bits(result, expected)
