"""The model the training examples share: a tanh MLP fit to a random teacher, SGD steps.

Every example trains it from the same start on the same batches, so its losses can be
compared with the unsharded run's (``train(None)`` in each example).
"""

from __future__ import annotations

import itertools

import numpy as np

import spmd
import spmd.numpy as snp

WIDTHS = (16, 64, 64, 8)


def init(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        (rng.normal(size=(m, n)) / np.sqrt(m), np.zeros(n)) for m, n in itertools.pairwise(WIDTHS)
    ]


def batches(steps: int, batch: int = 64, seed: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    teacher = rng.normal(size=(WIDTHS[0], WIDTHS[-1]))
    out = []
    for _ in range(steps):
        x = rng.normal(size=(batch, WIDTHS[0]))
        out.append((x, np.tanh(x @ teacher)))
    return out


def loss(params, x, y, activations=None):
    """The mean squared error; ``activations`` (one sharding per layer, or None) pins how each
    layer's output lies, as a parallelism strategy prescribes."""
    for k, (w, b) in enumerate(params):
        x = x @ w
        if activations is not None:  # before the bias, as Megatron reduces a row layer
            x = spmd.lax.with_sharding_constraint(x, activations[k])
        x = x + b
        if k < len(params) - 1:
            x = snp.tanh(x)
    return snp.mean((x - y) ** 2)


def sgd_step(params, x, y, activations=None, gradients=None, learning_rate: float = 0.1):
    """One SGD step; ``gradients`` (shardings shaped like ``params``, or None) pins how the
    gradients lie, which decides how they are reduced over the batch."""
    value, grads = spmd.value_and_grad(loss)(params, x, y, activations)
    if gradients is not None:
        grads = spmd.lax.with_sharding_constraint(grads, gradients)
    new = [(w - learning_rate * gw, b - learning_rate * gb)
           for (w, b), (gw, gb) in zip(params, grads, strict=True)]  # fmt: skip
    return new, value
