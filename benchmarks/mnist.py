"""The training step of JAX's examples/spmd_mnist_classifier_fromscratch.py beside JAX's own:
an MLP 784-1024-1024-10 (tanh, log-softmax cross-entropy), a batch of 128 split over the
devices, the parameters replicated and donated, one SGD update, under jit with an Explicit
'batch' mesh axis set.

Run: ``python benchmarks/mnist.py`` in an environment with JAX (e.g. ``pip install
.[bench]``). spmd runs the ported example's own ``train_step``
(examples/spmd_mnist_classifier_fromscratch.py); JAX runs the same functions written with
``jax``. Each call is one step whose new parameters feed the next (they are donated), timed
until every output parameter is ready (``block_until_ready``; the example's epoch timer only
times dispatch); each time is the median over steps, the two libraries taking turns.
Rows: both with x64 off (float32 parameters, JAX's default), and spmd with x64 on (NumPy's
rules: the example's float64 parameters), measured in a child process as the mode is
process-wide. ``ratio`` is JAX's time over spmd's (above 1: spmd is faster).
``--devices N``, ``--cores K`` and ``--json`` are described in benchmarks/scaling.py.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
)

from scaling import configure, cores

X64_CHILD = "--x64-child" in sys.argv  # the child process that times spmd with x64 on
if X64_CHILD:
    sys.argv.remove("--x64-child")
ARGS = configure()

import numpy as np  # noqa: E402  (after configure() set the device count)
from timing import interleaved_ms  # noqa: E402

LAYER_SIZES = [784, 1024, 1024, 10]
PARAM_SCALE = 0.1
STEP_SIZE = 0.001
BATCH = 128
ROUNDS = 5


def host_data() -> tuple[list, tuple[np.ndarray, np.ndarray]]:
    """The example's initial parameters (float64, as numpy.random draws them) and one batch
    of synthetic MNIST-shaped data."""
    rng = np.random.RandomState(0)
    params = [
        (PARAM_SCALE * rng.randn(m, n), PARAM_SCALE * rng.randn(n))
        for m, n in itertools.pairwise(LAYER_SIZES)
    ]
    images = np.random.RandomState(1).rand(BATCH, LAYER_SIZES[0]).astype(np.float32)
    labels = np.eye(LAYER_SIZES[-1], dtype=np.float32)[np.arange(BATCH) % LAYER_SIZES[-1]]
    return params, (images, labels)


def jax_train_step(jax) -> Callable:
    """The example's predict, loss and train_step, written with ``jax``."""
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    def predict(params, inputs):
        activations = inputs
        for w, b in params[:-1]:
            activations = jnp.tanh(jnp.dot(activations, w) + b)
        final_w, final_b = params[-1]
        logits = jnp.dot(activations, final_w) + final_b
        return logits - logsumexp(logits, axis=1, keepdims=True)

    def loss(params, batch):
        inputs, targets = batch
        return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))

    @jax.jit(donate_argnums=0)
    def train_step(params, batch):
        grads = jax.grad(loss)(params, batch)
        pairs = zip(params, grads, strict=True)
        return [(w - STEP_SIZE * dw, b - STEP_SIZE * db) for (w, b), (dw, db) in pairs]

    return train_step


def spmd_train_step() -> Callable:
    import spmd_mnist_classifier_fromscratch as example

    example.step_size = STEP_SIZE  # the example sets it in its __main__ block
    return example.train_step


def step_call(lib, train_step: Callable, params, batch) -> tuple[Callable, Callable]:
    """A call of one training step of ``lib`` (spmd or jax) that waits for its outputs, and
    a function giving the current parameters."""
    from_lib = __import__(f"{lib.__name__}.sharding", fromlist=["AxisType"])
    mesh = lib.make_mesh((ARGS.devices,), ("batch",), axis_types=(from_lib.AxisType.Explicit,))
    state = [lib.device_put(params, lib.NamedSharding(mesh, from_lib.PartitionSpec()))]
    batch = lib.device_put(batch, lib.NamedSharding(mesh, from_lib.PartitionSpec("batch")))

    def call():
        with lib.set_mesh(mesh):
            state[0] = train_step(state[0], batch)
        for w, b in state[0]:
            w.block_until_ready()
            b.block_until_ready()

    return call, lambda: state[0]


def x64_off(spmd) -> str:
    """Turn spmd's x64 mode off; where spmd lacks the switch, its parameters are cast to
    float32 by hand (the same computation: every operand float32). Says which."""
    try:
        spmd.config.update("jax_enable_x64", False)
    except spmd.errors.ConfigError:
        return "x64 off (spmd: no switch yet, f32 params)"
    return "x64 off"


def measure_x64_on() -> dict[str, dict[str, float]]:
    import spmd

    params, batch = host_data()
    call, current = step_call(spmd, spmd_train_step(), params, batch)
    times = interleaved_ms({"spmd": call}, rounds=ROUNDS)
    assert current()[0][0].dtype == np.float64
    return {"x64 on (spmd f64 params)": times}


def measure() -> dict[str, dict[str, float]]:
    import jax

    import spmd

    row = x64_off(spmd)
    params, batch = host_data()
    params32 = [(w.astype(np.float32), b.astype(np.float32)) for w, b in params]
    spmd_params = params if row == "x64 off" else params32
    spmd_call, spmd_params_now = step_call(spmd, spmd_train_step(), spmd_params, batch)
    jax_call, jax_params_now = step_call(jax, jax_train_step(jax), params, batch)
    spmd_call()  # one step each from the same start: the same numbers, in float32
    jax_call()
    for ours, theirs in zip(spmd_params_now(), jax_params_now(), strict=True):
        for a, b in zip(ours, theirs, strict=True):
            assert a.dtype == b.dtype == np.float32, (a.dtype, b.dtype)
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
    rows = {row: interleaved_ms({"spmd": spmd_call, "jax": jax_call}, rounds=ROUNDS)}
    child = [sys.executable, __file__, "--x64-child", "--devices", str(ARGS.devices)]
    if ARGS.cores is not None:
        child += ["--cores", str(ARGS.cores)]
    done = subprocess.run(child, capture_output=True, text=True, check=True)
    rows.update(json.loads(done.stdout.splitlines()[-1]))
    return rows


def print_rows(rows: dict[str, dict[str, float]]) -> None:
    print(f"MNIST MLP {LAYER_SIZES} training step, batch {BATCH}, on {ARGS.devices} devices")
    print(f"{'':42} {'spmd ms':>10} {'JAX ms':>10} {'ratio':>7}")
    for name, ms in rows.items():
        line = f"{name:42} {ms['spmd']:10.2f}"
        line += f" {ms['jax']:10.2f} {ms['jax'] / ms['spmd']:7.2f}" if "jax" in ms else ""
        print(line)
    print(f"devices: {ARGS.devices}, cores: {cores()}")


if __name__ == "__main__":
    if ARGS.scaling:
        raise SystemExit("benchmarks/mnist.py has no --scaling table; run it with --devices N.")
    if X64_CHILD:
        print(json.dumps(measure_x64_on()))
    elif ARGS.json:
        print(json.dumps(measure()))
    else:
        print_rows(measure())
