"""JAX's examples/spmd_mnist_classifier_fromscratch.py, ported with its imports swapped, run
on synthetic MNIST-shaped data (examples/datasets.py) in both dtype modes, against the same
model trained in plain NumPy: same initial parameters, same batches in the same order, same
SGD updates with a hand-written backward pass (itself checked by finite differences)."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(REPO, "examples", "spmd_mnist_classifier_fromscratch.py")
sys.path.insert(0, os.path.join(REPO, "examples"))

import datasets  # noqa: E402  (examples/datasets.py, the example's own data module)

# The example's constants (its __main__ block). 300 samples make 3 batches, the last one of 44
# rows padded with its own rows to 88 (the example pads with at most the batch itself), which
# the example's schedule reaches in its second epoch; 1/88 is not exact in binary.
LAYER_SIZES = [784, 1024, 1024, 10]
PARAM_SCALE = 0.1
STEP_SIZE = 0.001
NUM_EPOCHS = 10
BATCH_SIZE = 128
NUM_TRAIN, NUM_TEST = 300, 100

# Runs the example as __main__ in a fresh process (dtype mode is process-wide), then saves
# its final parameters with their dtypes as the spmd Arrays report them.
DRIVER = """
import json, runpy, sys
import numpy as np
import spmd
example, mode, out, num_train, num_test = sys.argv[1:]
if mode == "x64_off":
    spmd.config.update("jax_enable_x64", False)
sys.path.insert(0, __import__("os").path.dirname(example))
sys.argv = [example, "--num-train", num_train, "--num-test", num_test]
params = runpy.run_path(example, run_name="__main__")["replicated_params"]
arrays = {f"{i}_{j}": a for i, layer in enumerate(params) for j, a in enumerate(layer)}
np.savez(out, **{name: np.asarray(a) for name, a in arrays.items()})
print("PARAM_DTYPES " + json.dumps({name: str(a.dtype) for name, a in arrays.items()}))
"""


def init_params(dtype):
    rng = np.random.RandomState(0)
    return [
        ((PARAM_SCALE * rng.randn(m, n)).astype(dtype), (PARAM_SCALE * rng.randn(n)).astype(dtype))
        for m, n in itertools.pairwise(LAYER_SIZES)
    ]


def forward(params, inputs):
    """The hidden activations and the log-probabilities."""
    activations = [inputs]
    for w, b in params[:-1]:
        activations.append(np.tanh(activations[-1] @ w + b))
    final_w, final_b = params[-1]
    logits = activations[-1] @ final_w + final_b
    top = logits.max(axis=1, keepdims=True)
    log_norm = top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
    return activations, logits - log_norm


def loss(params, inputs, targets):
    return -np.mean(np.sum(forward(params, inputs)[1] * targets, axis=1))


def gradients(params, inputs, targets):
    """d loss / d params, by hand: softmax cross-entropy, then tanh layers backwards."""
    activations, preds = forward(params, inputs)
    d_preds = -targets.astype(preds.dtype) / inputs.shape[0]  # preds * targets: preds' dtype
    d_out = d_preds - np.exp(preds) * d_preds.sum(axis=1, keepdims=True)
    grads = []
    for layer in reversed(range(len(params))):
        w, _ = params[layer]
        a = activations[layer]
        grads.append((a.T @ d_out, d_out.sum(axis=0)))
        if layer:
            d_out = (d_out @ w.T) * (1 - a * a)
    return grads[::-1]


def train_step(params, batch):
    grads = gradients(params, *batch)
    return [
        (w - STEP_SIZE * dw, b - STEP_SIZE * db)
        for (w, b), (dw, db) in zip(params, grads, strict=True)
    ]


def accuracy(params, images, labels):
    predicted = np.argmax(forward(params, images)[1], axis=1)
    return np.mean(predicted == np.argmax(labels, axis=1))


def data_stream(images, labels, num_batches):
    """The example's batches: a fresh permutation each pass, the last batch padded with the
    first rows of itself."""
    rng = np.random.RandomState(0)
    while True:
        perm = rng.permutation(images.shape[0])
        for i in range(num_batches):
            idx = perm[i * BATCH_SIZE : (i + 1) * BATCH_SIZE]
            x, y = images[idx], labels[idx]
            pad = BATCH_SIZE - x.shape[0]
            yield np.concatenate([x, x[:pad]]), np.concatenate([y, y[:pad]])


def numpy_training(dtype):
    """The example's schedule in NumPy: each epoch takes num_batches - 1 steps from the
    stream, then (but after the last epoch) the stream restarts and one step takes its first
    batch. Returns the per-epoch (train, test) accuracies and the final parameters."""
    train_images, train_labels, test_images, test_labels = datasets.mnist(
        num_train=NUM_TRAIN, num_test=NUM_TEST
    )
    num_batches = -(-NUM_TRAIN // BATCH_SIZE)
    params = init_params(dtype)
    batches = data_stream(train_images, train_labels, num_batches)
    accuracies = []
    for epoch in range(NUM_EPOCHS):
        for _ in range(num_batches - 1):
            params = train_step(params, next(batches))
        accuracies.append(
            (
                accuracy(params, train_images, train_labels),
                accuracy(params, test_images, test_labels),
            )
        )
        if epoch < NUM_EPOCHS - 1:
            batches = data_stream(train_images, train_labels, num_batches)
            params = train_step(params, next(batches))
    return accuracies, params


def run_example(mode, tmp_path):
    out = tmp_path / "params.npz"
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, EXAMPLE, mode, str(out), str(NUM_TRAIN), str(NUM_TEST)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    text = result.stdout
    train = [float(v) for v in re.findall(r"^Training set accuracy (\S+)$", text, re.M)]
    test = [float(v) for v in re.findall(r"^Test set accuracy (\S+)$", text, re.M)]
    dtypes = json.loads(re.search(r"^PARAM_DTYPES (.*)$", text, re.M).group(1))
    with np.load(out) as saved:
        params = [(saved[f"{i}_0"], saved[f"{i}_1"]) for i in range(len(LAYER_SIZES) - 1)]
    return list(zip(train, test, strict=True)), params, dtypes


def check_against_numpy(mode, dtype, rtol, atol, tmp_path):
    accuracies, params, dtypes = run_example(mode, tmp_path)
    expected_accuracies, expected_params = numpy_training(dtype)
    assert len(accuracies) == NUM_EPOCHS
    # an accuracy is a count over the set: a float-level difference may flip one near tie
    for (train, test), (expected_train, expected_test) in zip(
        accuracies, expected_accuracies, strict=True
    ):
        assert abs(train - expected_train) <= 1 / NUM_TRAIN + 1e-7
        assert abs(test - expected_test) <= 1 / NUM_TEST + 1e-7
    assert set(dtypes.values()) == {np.dtype(dtype).name}
    for (w, b), (expected_w, expected_b) in zip(params, expected_params, strict=True):
        assert w.dtype == b.dtype == dtype
        np.testing.assert_allclose(w, expected_w, rtol=rtol, atol=atol)
        np.testing.assert_allclose(b, expected_b, rtol=rtol, atol=atol)
    # the parameters moved from their start far beyond the tolerance: the updates count
    start = init_params(dtype)
    moves = [np.abs(p - s).max() for p, s in zip(sum(params, ()), sum(start, ()), strict=True)]
    assert min(moves) > 1e-4
    return accuracies


def test_reference_gradients_match_finite_differences():
    global LAYER_SIZES
    sizes, LAYER_SIZES = LAYER_SIZES, [6, 5, 4, 3]
    try:
        params = init_params(np.float64)
        rng = np.random.RandomState(1)
        inputs = rng.rand(7, 6)
        targets = np.eye(3)[rng.randint(0, 3, 7)]
        grads = gradients(params, inputs, targets)
    finally:
        LAYER_SIZES = sizes
    eps = 1e-6
    for layer, (w, b) in enumerate(params):
        for which, value in ((0, w), (1, b)):
            numeric = np.zeros_like(value)
            for index in np.ndindex(value.shape):
                saved = value[index]
                value[index] = saved + eps
                up = loss(params, inputs, targets)
                value[index] = saved - eps
                down = loss(params, inputs, targets)
                value[index] = saved
                numeric[index] = (up - down) / (2 * eps)
            np.testing.assert_allclose(grads[layer][which], numeric, rtol=1e-6, atol=1e-9)


def test_synthetic_mnist_has_mnist_shapes_and_a_fixed_seed():
    train_images, train_labels, test_images, test_labels = datasets.mnist(num_train=20, num_test=10)
    assert train_images.shape == (20, 784) and test_images.shape == (10, 784)
    assert train_labels.shape == (20, 10) and test_labels.shape == (10, 10)
    assert {a.dtype for a in (train_images, train_labels, test_images, test_labels)} == {
        np.dtype(np.float32)
    }
    assert np.all(train_labels.sum(axis=1) == 1) and 0 <= train_images.min() < 1
    np.testing.assert_array_equal(datasets.mnist(num_train=20, num_test=10)[0], train_images)


def test_example_with_x64_on_trains_as_numpy_does_in_float64(tmp_path):
    check_against_numpy("x64_on", np.float64, rtol=1e-10, atol=1e-13, tmp_path=tmp_path)


def test_example_with_x64_off_trains_as_numpy_does_in_float32(tmp_path):
    check_against_numpy("x64_off", np.float32, rtol=2e-4, atol=2e-6, tmp_path=tmp_path)
