"""The classic pmap training step: each device computes the gradient of its share of the
batch, and ``pmean`` averages the gradients over the devices before the update.
Run: ``python -m examples.pmap_training``.
"""

from __future__ import annotations

import functools

import numpy as np

import spmd
from examples.model import batches, init, loss, sgd_step


@functools.partial(spmd.pmap, axis_name="devices")
def step(params, x, y, learning_rate=0.1):
    value, grads = spmd.value_and_grad(loss)(params, x, y)
    grads = spmd.lax.pmean(grads, "devices")
    value = spmd.lax.pmean(value, "devices")
    new = [(w - learning_rate * gw, b - learning_rate * gb)
           for (w, b), (gw, gb) in zip(params, grads, strict=True)]  # fmt: skip
    return new, value


def train(devices: int | None, steps: int = 20) -> list[float]:
    """The loss at each step; with ``devices``, the batch is split over that many devices
    (params replicated on each, as pmap takes them: with a leading device axis)."""
    params = init()
    losses = []
    if devices is None:
        one = spmd.jit(sgd_step)
        for x, y in batches(steps):
            params, value = one(params, x, y)
            losses.append(float(value))
        return losses
    stacked = spmd.tree_util.tree_map(lambda p: np.stack([p] * devices), params)
    for x, y in batches(steps):
        split = lambda a: a.reshape(devices, -1, *a.shape[1:])  # noqa: E731
        stacked, value = step(stacked, split(x), split(y))
        losses.append(float(np.asarray(value)[0]))
    return losses


if __name__ == "__main__":
    for i, value in enumerate(train(8)):
        print(f"step {i:2d}  loss {value:.6f}")
