"""JAX 101's "Parallel Evaluation in JAX" (the ``pmap`` tutorial), ported to spmd.

Source: jax-ml/jax docs/jax-101/06-parallelism.md at commit
10eae3f93af898e391248799c0b492ab64291c7b (the latest stored version). Each code cell is copied
with only the imports swapped (``import jax`` -> ``import spmd as jax``, ``import jax.numpy as
jnp`` -> ``import spmd.numpy as jnp``). The expected values are what JAX 0.10 printed for the
same cells on 8 CPU devices (``--xla_force_host_platform_device_count=8``); JAX computes in
float32 where spmd keeps NumPy's float64, so values are compared to float32 rounding.

Not ported: the matplotlib cell that plots the fitted line (it only draws).
"""

import functools

import numpy as np

import spmd as jax
import spmd.numpy as jnp

# What ``convolve`` gives for each row of ``xs`` (JAX prints these for the vmap, pmap and
# in_axes cells alike).
CONVOLVED = np.array(
    [
        [11.0, 20.0, 29.0],
        [56.0, 65.0, 74.0],
        [101.0, 110.0, 119.0],
        [146.0, 155.0, 164.0],
        [191.0, 200.0, 209.0],
        [236.0, 245.0, 254.0],
        [281.0, 290.0, 299.0],
        [326.0, 335.0, 344.0],
    ]
)

# The nested cell ``jax.pmap(convolve)(xs, jax.pmap(convolve)(xs, ws))``.
CONVOLVED_TWICE = np.array(
    [
        [78.0, 138.0, 198.0],
        [1188.0, 1383.0, 1578.0],
        [3648.0, 3978.0, 4308.0],
        [7458.0, 7923.0, 8388.0],
        [12618.0, 13218.0, 13818.0],
        [19128.0, 19863.0, 20598.0],
        [26988.0, 27858.0, 28728.0],
        [36198.0, 37203.0, 38208.0],
    ]
)

EIGHT_CPU_DEVICES = (
    "[CpuDevice(id=0), CpuDevice(id=1), CpuDevice(id=2), CpuDevice(id=3), "
    "CpuDevice(id=4), CpuDevice(id=5), CpuDevice(id=6), CpuDevice(id=7)]"
)


def convolve(x, w):
    output = []
    for i in range(1, len(x) - 1):
        output.append(jnp.dot(x[i - 1 : i + 2], w))
    return jnp.array(output)


def tutorial_batches():
    """The cells that build ``x``, ``w``, ``xs`` and ``ws``."""
    x = np.arange(5)
    w = np.array([2.0, 3.0, 4.0])
    n_devices = jax.local_device_count()
    xs = np.arange(5 * n_devices).reshape(-1, 5)
    ws = np.stack([w] * n_devices)
    return x, w, xs, ws


def assert_one_row_per_device(result):
    """What JAX's pmap output looks like: the leading axis split over the 8 devices, one row
    (a (1, 3) shard) on each, device k holding row k."""
    assert result.shape == (8, 3)
    spec = tuple(result.sharding.spec)
    assert len(spec) == 1 and spec[0] is not None
    assert result.sharding.mesh.shape[spec[0]] == 8
    assert result.sharding.shard_shape(result.shape) == (1, 3)
    assert not result.is_fully_replicated
    assert {d.id for d in result.devices()} == set(range(8))
    shards = sorted(result.addressable_shards, key=lambda s: s.device.id)
    for k, shard in enumerate(shards):
        assert shard.device.id == k
        assert shard.index == (slice(k, k + 1), slice(None))
        np.testing.assert_allclose(np.asarray(shard.data), np.asarray(result)[k : k + 1])


# TPU Setup (the tutorial prints its TPUs; on 8 CPU devices JAX prints the list the tutorial's
# "Aside: hosts and devices in JAX" section shows)
def test_devices_are_eight_cpu_devices():
    devices = jax.devices()
    assert repr(devices) == EIGHT_CPU_DEVICES
    assert jax.local_device_count() == 8


# The basics: convolve on one example, then the batches
def test_convolve_one_example_and_the_batches():
    x, w, xs, ws = tutorial_batches()

    out = convolve(x, w)
    np.testing.assert_allclose(np.asarray(out), [11.0, 20.0, 29.0])
    assert out.shape == (3,)

    np.testing.assert_array_equal(xs, np.arange(40).reshape(8, 5))
    np.testing.assert_array_equal(ws, np.tile([2.0, 3.0, 4.0], (8, 1)))


# The basics: "As before, we can vectorise using jax.vmap"
def test_vmap_convolve_over_the_batch():
    _, _, xs, ws = tutorial_batches()
    out = jax.vmap(convolve)(xs, ws)
    np.testing.assert_allclose(np.asarray(out), CONVOLVED)


# The basics: "just replace jax.vmap with jax.pmap"
def test_pmap_convolve_puts_one_row_on_each_device():
    _, _, xs, ws = tutorial_batches()
    out = jax.pmap(convolve)(xs, ws)
    assert isinstance(out, jax.Array)
    np.testing.assert_allclose(np.asarray(out), CONVOLVED)
    assert_one_row_per_device(out)


# The basics: the outputs of the inner pmap never leave their devices
def test_pmap_of_a_pmap_output_stays_on_the_devices():
    _, _, xs, ws = tutorial_batches()
    out = jax.pmap(convolve)(xs, jax.pmap(convolve)(xs, ws))
    np.testing.assert_allclose(np.asarray(out), CONVOLVED_TWICE)
    assert_one_row_per_device(out)


# Specifying in_axes
def test_pmap_in_axes_none_broadcasts_w():
    _, w, xs, _ = tutorial_batches()
    out = jax.pmap(convolve, in_axes=(0, None))(xs, w)
    np.testing.assert_allclose(np.asarray(out), CONVOLVED)
    assert_one_row_per_device(out)


def normalized_convolution(x, w):
    output = []
    for i in range(1, len(x) - 1):
        output.append(jnp.dot(x[i - 1 : i + 2], w))
    output = jnp.array(output)
    return output / jax.lax.psum(output, axis_name="p")


# Communication between devices: psum over the pmapped axis 'p'
def test_normalized_convolution_psums_over_the_pmapped_axis():
    _, _, xs, ws = tutorial_batches()
    out = jax.pmap(normalized_convolution, axis_name="p")(xs, ws)
    # JAX prints [[0.00816024 0.01408451 0.019437  ] ... [0.24183977 0.2359155 0.230563 ]]:
    # each column divided by its sum over the devices (1348, 1420, 1492).
    np.testing.assert_allclose(np.asarray(out), CONVOLVED / CONVOLVED.sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(out)[0], [0.008160237, 0.014084507, 0.019436996], rtol=1e-6
    )
    np.testing.assert_allclose(np.asarray(out)[-1], [0.24183977, 0.2359155, 0.230563], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out).sum(axis=0), [1.0, 1.0, 1.0], rtol=1e-12)
    assert_one_row_per_device(out)


# Communication between devices: "jax.vmap also supports axis_name"
def test_vmap_with_axis_name_psums_over_the_batch():
    _, _, xs, ws = tutorial_batches()
    out = jax.vmap(normalized_convolution, axis_name="p")(xs, ws)
    np.testing.assert_allclose(np.asarray(out), CONVOLVED / CONVOLVED.sum(axis=0), rtol=1e-6)


# Example: data-parallel linear regression (value_and_grad inside pmap). The tutorial's
# jax.tree_map (removed from JAX itself since) and jax.device_get are kept as written.
# np.random.seed(0) is added so that the data, and hence the printed losses, are fixed.
def test_data_parallel_regression_training_loop(capsys):
    from typing import NamedTuple

    class Params(NamedTuple):
        weight: jnp.ndarray
        bias: jnp.ndarray

    def init(rng) -> Params:
        """Returns the initial model params."""
        weights_key, bias_key = jax.random.split(rng)
        weight = jax.random.normal(weights_key, ())
        bias = jax.random.normal(bias_key, ())
        return Params(weight, bias)

    def loss_fn(params: Params, xs: jnp.ndarray, ys: jnp.ndarray) -> jnp.ndarray:
        """Computes the least squares error of the model's predictions on x against y."""
        pred = params.weight * xs + params.bias
        return jnp.mean((pred - ys) ** 2)

    LEARNING_RATE = 0.005

    @functools.partial(jax.pmap, axis_name="num_devices")
    def update(params: Params, xs: jnp.ndarray, ys: jnp.ndarray) -> tuple[Params, jnp.ndarray]:
        """Performs one SGD update step on params using the given data."""
        loss, grads = jax.value_and_grad(loss_fn)(params, xs, ys)
        grads = jax.lax.pmean(grads, axis_name="num_devices")
        loss = jax.lax.pmean(loss, axis_name="num_devices")
        new_params = jax.tree_map(lambda param, g: param - g * LEARNING_RATE, params, grads)
        return new_params, loss

    np.random.seed(0)
    # Generate true data from y = w*x + b + noise
    true_w, true_b = 2, -1
    xs = np.random.normal(size=(128, 1))
    noise = 0.5 * np.random.normal(size=(128, 1))
    ys = xs * true_w + true_b + noise

    # Initialise parameters and replicate across devices.
    params = init(jax.random.PRNGKey(123))
    n_devices = jax.local_device_count()
    replicated_params = jax.tree_map(lambda x: jnp.array([x] * n_devices), params)

    assert isinstance(replicated_params.weight, jax.Array)

    def split(arr):
        """Splits the first axis of `arr` evenly across the number of devices."""
        return arr.reshape(n_devices, arr.shape[0] // n_devices, *arr.shape[1:])

    x_split = split(xs)
    y_split = split(ys)
    assert type(x_split) is np.ndarray

    def type_after_update(name, obj):
        print(f"after first `update()`, `{name}` is a", type(obj))

    for i in range(1000):
        replicated_params, loss = update(replicated_params, x_split, y_split)
        if i == 0:
            type_after_update("replicated_params.weight", replicated_params.weight)
            type_after_update("loss", loss)
            type_after_update("x_split", x_split)
        if i % 100 == 0:
            print(f"Step {i:3d}, loss: {loss[0]:.3f}")

    params = jax.device_get(jax.tree_map(lambda x: x[0], replicated_params))

    out = capsys.readouterr().out.splitlines()
    # JAX prints jaxlib's ArrayImpl for the first two, numpy.ndarray for x_split.
    assert out[0].startswith("after first `update()`, `replicated_params.weight` is a <class")
    assert out[1].startswith("after first `update()`, `loss` is a <class")
    assert "Array" in out[0] and "Array" in out[1]
    assert out[2] == "after first `update()`, `x_split` is a <class 'numpy.ndarray'>"
    # JAX: 7.030, 1.007, 0.313, 0.226, 0.214, 0.213, then 0.212 from step 600 on.
    assert out[3:] == [
        "Step   0, loss: 7.030",
        "Step 100, loss: 1.007",
        "Step 200, loss: 0.313",
        "Step 300, loss: 0.226",
        "Step 400, loss: 0.214",
        "Step 500, loss: 0.213",
        "Step 600, loss: 0.212",
        "Step 700, loss: 0.212",
        "Step 800, loss: 0.212",
        "Step 900, loss: 0.212",
    ]
    np.testing.assert_allclose(float(params.weight), 2.0209308, rtol=1e-5)
    np.testing.assert_allclose(float(params.bias), -1.0350782, rtol=1e-5)
