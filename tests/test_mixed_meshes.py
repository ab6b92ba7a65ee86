"""Meshes over one list of devices mix in one call, as in JAX: a 2x4 mesh and an 8-device
mesh of the same devices in the same order are one device assignment. Arguments move onto
the call's mesh, constraints and out_shardings on another mesh pin the nearest split, and
results land on the sharding asked for. Meshes over other devices, or the same devices in
another order, are refused naming both."""

from __future__ import annotations

import re

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.sharding.equivalent import split_on
from spmd.sharding.mesh import Mesh
from tests.tutorials.pictures import device_grids

NUMBER = re.compile(r"-?\d+\.?\d*")


@pytest.fixture
def grid():
    return spmd.make_mesh((2, 4), ("x", "y"))


@pytest.fixture
def line():
    return spmd.make_mesh((8,), ("x",))


def put(data, mesh, *spec):
    return spmd.device_put(data, NamedSharding(mesh, P(*spec)))


def check_shards(x, expected, rtol=0.0):
    assert x.shape == expected.shape
    for shard in x.addressable_shards:
        np.testing.assert_allclose(shard.data, expected[shard.index], rtol=rtol)
    np.testing.assert_allclose(np.asarray(x), expected, rtol=rtol)


def test_sharded_computation_tutorial_constraint_on_an_8_device_mesh(capsys):
    """JAX's "Introduction to parallel programming", "Semi-automated sharding with
    constraints", as first published: the constraint's mesh is 8 devices while the argument
    lies on the 2x4 mesh (imports swapped; ``jax.make_mesh((8,), ('x',))`` as the cell's
    comment writes the mesh)."""
    import spmd as jax
    import spmd.numpy as jnp
    from spmd.sharding import PartitionSpec as P

    arr = jnp.arange(32.0).reshape(4, 8)
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    sharding = jax.sharding.NamedSharding(mesh, P("x", "y"))
    arr_sharded = jax.device_put(arr, sharding)

    @jax.jit
    def f_contract_2(x):
        out = x.sum(axis=0)
        mesh = jax.make_mesh((8,), ("x",))
        sharding = jax.sharding.NamedSharding(mesh, P("x"))
        return jax.lax.with_sharding_constraint(out, sharding)

    result = f_contract_2(arr_sharded)
    jax.debug.visualize_array_sharding(result)
    print(result)
    out = capsys.readouterr().out
    # JAX: one row CPU 0 ... CPU 7, then [48. 52. 56. 60. 64. 68. 72. 76.]
    assert device_grids(out) == [[[f"CPU {i}" for i in range(8)]]]
    printed = out.rsplit("┘", 1)[1]
    assert printed.strip() == "[48. 52. 56. 60. 64. 68. 72. 76.]"
    assert result.sharding == NamedSharding(jax.make_mesh((8,), ("x",)), P("x"))


def test_eager_operands_on_two_meshes_of_the_same_devices(grid, line):
    data = np.arange(35.0).reshape(5, 7)
    x, y = put(data, grid, "x", "y"), put(data * 3, line, None, "x")
    check_shards(x + y, data * 4)
    check_shards(snp.matmul(x, y.T), data @ (3 * data).T, rtol=1e-13)
    z = spmd.lax.with_sharding_constraint(x, NamedSharding(line, P("x")))
    assert z.sharding == NamedSharding(line, P("x"))
    check_shards(z, data)


def test_jit_argument_and_constraint_on_two_meshes_uneven(grid, line):
    """A (5, 7) argument split 2x4 and a constraint splitting it 8 ways on the line: no
    split of either mesh is the other's blocks, so one of them moves."""
    data = np.random.default_rng(0).standard_normal((5, 7))
    x = put(data, grid, "x", "y")

    def f(v):
        w = spmd.lax.with_sharding_constraint(snp.tanh(v) + 1, NamedSharding(line, P(None, "x")))
        return w * 2, w.sum(axis=1)

    doubled, rows = spmd.jit(f)(x)
    # computed on the grid, whose P(None, ('x', 'y')) gives each device the line's block
    assert doubled.sharding.is_equivalent_to(NamedSharding(line, P(None, "x")), 2)
    check_shards(doubled, (np.tanh(data) + 1) * 2, rtol=1e-15)
    check_shards(rows, (np.tanh(data) + 1).sum(axis=1), rtol=1e-14)  # 7 terms


def test_a_split_of_the_other_mesh_moves_nothing(grid, line):
    """An (8,) argument on the line and a constraint on the grid's P(('x', 'y')) give each
    device the same element: the call runs with no collective."""
    x = put(np.arange(8.0), line, "x")
    pinned = NamedSharding(grid, P(("x", "y")))
    f = spmd.jit(lambda v: spmd.lax.with_sharding_constraint(v * 2, pinned))
    text = f.lower(x).as_text()
    assert not any(k in text for k in ("all_gather", "all_to_all", "permute", "reduce")), text
    out = f(x)
    assert out.sharding == NamedSharding(grid, P(("x", "y")))
    check_shards(out, np.arange(8.0) * 2)


def test_grad_through_a_constraint_on_another_mesh(grid, line):
    data = np.random.default_rng(1).standard_normal((6, 5))
    x = put(data, grid, "x", "y")

    def loss(v):
        w = spmd.lax.with_sharding_constraint(snp.sin(v) * 2, NamedSharding(line, P("x")))
        return (w * w).sum()

    expected = 8 * np.sin(data) * np.cos(data)
    for grad in (spmd.jit(spmd.grad(loss))(x), spmd.grad(loss)(x)):
        check_shards(grad, expected, rtol=1e-14)
    value = spmd.jit(loss)(x)
    np.testing.assert_allclose(float(value), (4 * np.sin(data) ** 2).sum(), rtol=1e-14)


def test_in_and_out_shardings_on_another_mesh(grid, line):
    data = np.arange(24.0).reshape(6, 4)
    f = spmd.jit(
        lambda a, b: a * b,
        in_shardings=(NamedSharding(line, P("x")), None),
        out_shardings=NamedSharding(grid, P("y", "x")),
    )
    out = f(put(data, grid, "x", "y"), np.arange(4.0))
    assert out.sharding == NamedSharding(grid, P("y", "x"))
    check_shards(out, data * np.arange(4.0))


def test_shard_map_in_jit_with_an_argument_on_another_mesh(grid, line):
    data = np.arange(16.0).reshape(16, 1)
    body = spmd.shard_map(
        lambda b: b * 2 + spmd.lax.psum(b.sum(), "x"), mesh=line, in_specs=P("x"), out_specs=P("x")
    )
    out = spmd.jit(body)(put(data, grid, ("y", "x")))
    check_shards(out, data * 2 + data.sum())


def test_meshes_over_other_devices_or_another_order_are_refused(grid):
    x = put(np.arange(32.0).reshape(4, 8), grid, "x", "y")
    half = Mesh(np.array(spmd.devices()[:4]), ("x",))
    with pytest.raises(spmd.ShardingError) as error:
        spmd.jit(lambda v: spmd.lax.with_sharding_constraint(v, NamedSharding(half, P("x"))))(x)
    assert "Mesh('x': 4) with device ids [0, 1, 2, 3]" in str(error.value)
    assert "Mesh('x': 2, 'y': 4) with device ids [0, 1, 2, 3, 4, 5, 6, 7]" in str(error.value)
    order = [spmd.devices()[i] for i in (0, 1, 2, 3, 6, 7, 4, 5)]
    shuffled = Mesh(np.array(order), ("x",))
    with pytest.raises(spmd.ShardingError, match=r"\[0, 1, 2, 3, 6, 7, 4, 5\]"):
        x + put(np.ones((4, 8)), shuffled, "x")


def test_split_on_finds_the_same_blocks_or_the_nearest(grid, line):
    assert split_on(grid, NamedSharding(line, P("x")).layout((8,))) == ((("x", "y"),), True)
    assert split_on(line, NamedSharding(grid, P(None, ("x", "y"))).layout((3, 8))) == (
        ((), ("x",)),
        True,
    )
    assert split_on(line, NamedSharding(grid, P()).layout((3, 8))) == (((), ()), True)
    # 2x2 blocks of a (4, 8) array: cutting the rows 8 ways moves 28 elements, the
    # columns 30 (each device keeps what overlaps its block), replicating 56
    dims, exact = split_on(line, NamedSharding(grid, P("x", "y")).layout((4, 8)))
    assert (dims, exact) == ((("x",), ()), False)


def test_device_put_onto_the_same_blocks_of_another_mesh_keeps_the_buffers(grid, line):
    x = put(np.arange(16.0), line, "x")
    y = spmd.device_put(x, NamedSharding(grid, P(("x", "y"))))
    assert y.sharding == NamedSharding(grid, P(("x", "y")))
    mine = {s.device: s.data for s in x.addressable_shards}
    for shard in y.addressable_shards:
        assert np.shares_memory(shard.data, mine[shard.device])
    check_shards(y, np.arange(16.0))
