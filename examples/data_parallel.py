"""Data parallelism: the batch split over 8 devices, the weights replicated.

Each device computes the loss of its part of the batch; jit sees that each weight's gradient
is a sum over the batch and all-reduces it once. Run: ``python -m examples.data_parallel``.
"""

from __future__ import annotations

import functools

import spmd
from examples.model import batches, init, sgd_step
from spmd import NamedSharding, P


def train(mesh: spmd.Mesh | None, steps: int = 20) -> list[float]:
    """The loss at each step; with ``mesh``, the batch (and so every activation) is split
    over its axis 'batch', and the weights and their gradients stay replicated: each
    gradient is all-reduced once."""
    params = init()
    step = spmd.jit(sgd_step)
    if mesh is not None:
        replicated = NamedSharding(mesh, P())
        params = spmd.device_put(params, replicated)
        by_examples = [NamedSharding(mesh, P("batch"))] * len(params)
        step = spmd.jit(
            functools.partial(sgd_step, activations=by_examples, gradients=replicated),
            out_shardings=(replicated, None),
        )
    losses = []
    for x, y in batches(steps):
        if mesh is not None:
            x, y = spmd.device_put((x, y), NamedSharding(mesh, P("batch")))
        params, value = step(params, x, y)
        losses.append(float(value))
    return losses


if __name__ == "__main__":
    for i, value in enumerate(train(spmd.make_mesh((8,), ("batch",)))):
        print(f"step {i:2d}  loss {value:.6f}")
