"""Fully sharded data parallelism (ZeRO-3): the batch, the weights and the optimizer state
(momentum) all split over the 8 devices.

Each layer's weights are gathered when the layer runs, and the weights' gradients come back
reduce-scattered, each device keeping the rows it owns. Run: ``python -m examples.fsdp``.
"""

from __future__ import annotations

import functools

import spmd
from examples.model import batches, init, loss
from spmd import NamedSharding, P


@functools.partial(spmd.jit, static_argnames="activations")
def step(params, momentum, x, y, activations=None, learning_rate=0.1, beta=0.9):
    value, grads = spmd.value_and_grad(loss)(params, x, y, activations)
    momentum = spmd.tree_util.tree_map(lambda m, g: beta * m + g, momentum, grads)
    params = spmd.tree_util.tree_map(lambda p, m: p - learning_rate * m, params, momentum)
    return params, momentum, value


def train(mesh: spmd.Mesh | None, steps: int = 20) -> list[float]:
    """The loss at each step; with ``mesh``, everything is split over its axis 'fsdp'
    (weights and momentum by rows, the batch and the activations by examples)."""
    params = init()
    momentum = spmd.tree_util.tree_map(lambda p: 0 * p, params)
    if mesh is not None:
        rows = NamedSharding(mesh, P("fsdp"))
        params, momentum = spmd.device_put((params, momentum), rows)
    activations = None if mesh is None else (NamedSharding(mesh, P("fsdp")),) * len(params)
    losses = []
    for x, y in batches(steps):
        if mesh is not None:
            x, y = spmd.device_put((x, y), NamedSharding(mesh, P("fsdp")))
        params, momentum, value = step(params, momentum, x, y, activations=activations)
        losses.append(float(value))
    return losses


if __name__ == "__main__":
    for i, value in enumerate(train(spmd.make_mesh((8,), ("fsdp",)))):
        print(f"step {i:2d}  loss {value:.6f}")
