"""JAX's "Introduction to parallel programming" tutorial, ported to spmd.

Source: jax-ml/jax docs/sharded-computation.md at commit
b05089d176fc20ad1baa92afab63d2b8b0f59269. Each code cell is copied with only the imports
swapped (``import jax`` -> ``import spmd as jax`` and so on). The expected values are what
JAX 0.10 printed for the same cells, run with ``make_mesh`` meshes of Auto axes (the default
when the tutorial was written; JAX 0.10 defaults to Explicit axes). No sizes were shrunk.
"""

import re
from functools import partial

import numpy as np
import pytest

import spmd as jax
import spmd.numpy as jnp
from tests.tutorials.pictures import device_grids

NUMBER = re.compile(r"-?\d+\.?\d*(?:e[-+]?\d+)?")

# JAX's 2 * sin(arange(32)) + 1 (float32), as the f_elementwise cells print it.
ELEMENTWISE = [
    1.0, 2.682942, 2.818595, 1.28224, -0.513605, -0.9178486, 0.44116902, 2.3139732,
    2.9787164, 1.824237, -0.08804226, -0.99998045, -0.07314587, 1.840334, 2.9812148,
    2.3005757, 0.42419338, -0.92279494, -0.50197446, 1.2997544, 2.8258905, 2.6733112,
    0.98229736, -0.69244087, -0.81115675, 0.7352965, 2.525117, 2.912752, 1.5418116,
    -0.32726777, -0.97606325, 0.19192469,
]  # fmt: skip
# JAX's sigmoid(x @ weights + bias) for the "Comparing the three approaches" inputs.
LAYER = [0.02138916, 0.8931118, 0.5989196, 0.9774251]


def numbers_in(text):
    return [float(n) for n in NUMBER.findall(text)]


# Key concept: data sharding
def test_arrays_start_on_one_device_and_device_put_shards_them(capsys):
    assert repr(jax.devices()) == "[" + ", ".join(f"CpuDevice(id={i})" for i in range(8)) + "]"

    arr = jnp.arange(32.0).reshape(4, 8)
    assert arr.devices() == {jax.devices()[0]}
    assert repr(arr.devices()) == "{CpuDevice(id=0)}"

    assert arr.sharding == jax.sharding.SingleDeviceSharding(jax.devices()[0])
    assert repr(arr.sharding) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"

    jax.debug.visualize_array_sharding(arr)
    assert device_grids(capsys.readouterr().out) == [[["CPU 0"]]]

    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2, 4), ("x", "y"))
    sharding = jax.sharding.NamedSharding(mesh, P("x", "y"))
    print(sharding)
    # JAX: NamedSharding(mesh=Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto)),
    #                    spec=P('x', 'y'), memory_kind=device)
    out = capsys.readouterr().out
    assert out.startswith("NamedSharding(mesh=Mesh('x': 2, 'y': 4")
    assert "('x', 'y'), memory_kind=device)" in out

    arr_sharded = jax.device_put(arr, sharding)

    print(arr_sharded)
    jax.debug.visualize_array_sharding(arr_sharded)
    out = capsys.readouterr().out
    printed, picture = out.split("┌", 1)
    # JAX: [[ 0.  1.  2.  3.  4.  5.  6.  7.]
    #       [ 8.  9. 10. 11. 12. 13. 14. 15.] ...
    assert printed.startswith("[[ 0.  1.  2.")
    assert numbers_in(printed) == list(range(32))
    assert device_grids("┌" + picture) == [
        [["CPU 0", "CPU 1", "CPU 2", "CPU 3"], ["CPU 4", "CPU 5", "CPU 6", "CPU 7"]]
    ]
    assert arr_sharded.sharding.shard_shape(arr_sharded.shape) == (2, 2)


@pytest.fixture
def arr_sharded():
    from spmd.sharding import PartitionSpec as P

    arr = jnp.arange(32.0).reshape(4, 8)
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    sharding = jax.sharding.NamedSharding(mesh, P("x", "y"))
    return jax.device_put(arr, sharding), mesh


@jax.jit
def f_elementwise(x):
    return 2 * jnp.sin(x) + 1


# 1. Automatic parallelism via jit
def test_jit_elementwise_keeps_the_input_sharding(capsys, arr_sharded):
    arr_sharded, _ = arr_sharded

    result = f_elementwise(arr_sharded)

    print("shardings match:", result.sharding == arr_sharded.sharding)
    assert capsys.readouterr().out == "shardings match: True\n"
    np.testing.assert_allclose(np.asarray(result).ravel(), ELEMENTWISE, rtol=1e-6, atol=1e-6)


# 1. Automatic parallelism via jit
def test_jit_sum_over_leading_axis_is_partially_replicated(capsys, arr_sharded):
    from spmd.sharding import PartitionSpec as P

    arr_sharded, mesh = arr_sharded

    @jax.jit
    def f_contract(x):
        return x.sum(axis=0)

    result = f_contract(arr_sharded)
    jax.debug.visualize_array_sharding(result)
    print(result)
    out = capsys.readouterr().out
    printed = out.rsplit("┘", 1)[1]
    assert device_grids(out) == [[["CPU 0,4", "CPU 1,5", "CPU 2,6", "CPU 3,7"]]]
    # JAX: [48. 52. 56. 60. 64. 68. 72. 76.]
    assert printed.strip().startswith("[48. 52.")
    assert numbers_in(printed) == [48, 52, 56, 60, 64, 68, 72, 76]
    assert result.sharding == jax.sharding.NamedSharding(mesh, P("y"))


# 2. Semi-automated sharding with constraints
def test_with_sharding_constraint_shards_the_sum_over_x(capsys, arr_sharded):
    from spmd.sharding import PartitionSpec as P

    arr_sharded, mesh = arr_sharded

    @jax.jit
    def f_contract_2(x):
        out = x.sum(axis=0)
        sharding = jax.sharding.NamedSharding(mesh, P("x"))
        return jax.lax.with_sharding_constraint(out, sharding)

    result = f_contract_2(arr_sharded)
    jax.debug.visualize_array_sharding(result)
    print(result)
    out = capsys.readouterr().out
    printed = out.rsplit("┘", 1)[1]
    assert device_grids(out) == [[["CPU 0,1,2,3", "CPU 4,5,6,7"]]]
    assert numbers_in(printed) == [48, 52, 56, 60, 64, 68, 72, 76]
    assert result.sharding == jax.sharding.NamedSharding(mesh, P("x"))


# 3. Manual parallelism with shard_map
def test_shard_map_runs_the_function_per_shard(capsys):
    from spmd.experimental.shard_map import shard_map
    from spmd.sharding import PartitionSpec as P

    mesh = jax.make_mesh((8,), ("x",))

    f_elementwise_sharded = shard_map(f_elementwise, mesh=mesh, in_specs=P("x"), out_specs=P("x"))

    arr = jnp.arange(32)
    result = f_elementwise_sharded(arr)
    np.testing.assert_allclose(np.asarray(result), ELEMENTWISE, rtol=1e-6, atol=1e-6)
    assert result.sharding == jax.sharding.NamedSharding(mesh, P("x"))

    x = jnp.arange(32)
    print(f"global shape: {x.shape=}")

    def f(x):
        print(f"device local shape: {x.shape=}")
        return x * 2

    y = shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)
    # JAX prints the local shape once: the body runs once, on every block at the same time.
    assert capsys.readouterr().out.splitlines() == [
        "global shape: x.shape=(32,)",
        "device local shape: x.shape=(4,)",
    ]
    np.testing.assert_array_equal(np.asarray(y), np.arange(32) * 2)

    def f(x):
        return jnp.sum(x, keepdims=True)

    result = shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)
    np.testing.assert_array_equal(np.asarray(result), [6, 22, 38, 54, 70, 86, 102, 118])
    assert result.shape == (8,)

    def f(x):
        sum_in_shard = x.sum()
        return jax.lax.psum(sum_in_shard, "x")

    result = shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P())(x)
    assert result.shape == ()
    assert int(result) == 496
    assert result.sharding == jax.sharding.NamedSharding(mesh, P())


# Comparing the three approaches
@jax.jit
def layer(x, weights, bias):
    return jax.nn.sigmoid(x @ weights + bias)


@pytest.fixture
def layer_inputs():
    rng = np.random.default_rng(0)

    x = rng.normal(size=(32,))
    weights = rng.normal(size=(32, 4))
    bias = rng.normal(size=(4,))
    return x, weights, bias


# Comparing the three approaches: jit on single-device and on sharded inputs
def test_layer_on_sharded_inputs_gives_the_single_device_result(layer_inputs):
    from spmd.sharding import PartitionSpec as P

    x, weights, bias = layer_inputs

    result = layer(x, weights, bias)
    np.testing.assert_allclose(np.asarray(result), LAYER, rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(result), 1 / (1 + np.exp(-(x @ weights + bias))), rtol=1e-6
    )
    assert result.sharding == jax.sharding.SingleDeviceSharding(jax.devices()[0])

    mesh = jax.make_mesh((8,), ("x",))
    sharding = jax.sharding.NamedSharding(mesh, P("x"))

    x_sharded = jax.device_put(x, sharding)
    weights_sharded = jax.device_put(weights, sharding)

    result = layer(x_sharded, weights_sharded, bias)
    np.testing.assert_allclose(np.asarray(result), LAYER, rtol=1e-6)
    # JAX: the contraction over the sharded axis leaves a replicated result.
    assert result.sharding == jax.sharding.NamedSharding(mesh, P())


# Comparing the three approaches: with_sharding_constraint on unsharded inputs
def test_layer_with_sharding_constraints_on_unsharded_inputs(layer_inputs):
    from spmd.sharding import PartitionSpec as P

    x, weights, bias = layer_inputs
    mesh = jax.make_mesh((8,), ("x",))
    sharding = jax.sharding.NamedSharding(mesh, P("x"))

    @jax.jit
    def layer_auto(x, weights, bias):
        x = jax.lax.with_sharding_constraint(x, sharding)
        weights = jax.lax.with_sharding_constraint(weights, sharding)
        return layer(x, weights, bias)

    result = layer_auto(x, weights, bias)  # pass in unsharded inputs
    np.testing.assert_allclose(np.asarray(result), LAYER, rtol=1e-6)
    assert result.sharding == jax.sharding.NamedSharding(mesh, P())


# Comparing the three approaches: shard_map with psum under jit
def test_layer_as_shard_map_with_psum(layer_inputs):
    from spmd.experimental.shard_map import shard_map
    from spmd.sharding import PartitionSpec as P

    x, weights, bias = layer_inputs
    mesh = jax.make_mesh((8,), ("x",))

    @jax.jit
    @partial(shard_map, mesh=mesh, in_specs=(P("x"), P("x", None), P(None)), out_specs=P(None))
    def layer_sharded(x, weights, bias):
        return jax.nn.sigmoid(jax.lax.psum(x @ weights, "x") + bias)

    result = layer_sharded(x, weights, bias)
    np.testing.assert_allclose(np.asarray(result), LAYER, rtol=1e-6)
    assert result.sharding == jax.sharding.NamedSharding(mesh, P(None))
