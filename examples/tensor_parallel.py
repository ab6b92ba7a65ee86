"""Tensor parallelism in the manner of Megatron on a 4×2 mesh: the batch split over 'data',
each hidden layer's weights split over 'model', the first of a pair by columns and the
second by rows, so the activations between them stay split and one all-reduce joins each
pair. Run: ``python -m examples.tensor_parallel``.
"""

from __future__ import annotations

import spmd
from examples.model import batches, init, sgd_step
from spmd import NamedSharding, P

step = spmd.jit(sgd_step, static_argnums=3)


def placements(mesh: spmd.Mesh, count: int) -> list[tuple[NamedSharding, NamedSharding]]:
    """Column split for even layers (bias split too), row split for odd ones."""
    column = (NamedSharding(mesh, P(None, "model")), NamedSharding(mesh, P("model")))
    row = (NamedSharding(mesh, P("model", None)), NamedSharding(mesh, P()))
    return [column if k % 2 == 0 else row for k in range(count)]


def train(mesh: spmd.Mesh | None, steps: int = 20) -> list[float]:
    """The loss at each step; with ``mesh`` (axes 'data' and 'model'), split as above."""
    params = init()
    activations = None
    if mesh is not None:
        params = spmd.device_put(params, placements(mesh, len(params)))
        column, row = NamedSharding(mesh, P("data", "model")), NamedSharding(mesh, P("data"))
        activations = tuple(column if k % 2 == 0 else row for k in range(len(params)))
    losses = []
    for x, y in batches(steps):
        if mesh is not None:
            x, y = spmd.device_put((x, y), NamedSharding(mesh, P("data")))
        params, value = step(params, x, y, activations)
        losses.append(float(value))
    return losses


if __name__ == "__main__":
    for i, value in enumerate(train(spmd.make_mesh((4, 2), ("data", "model")))):
        print(f"step {i:2d}  loss {value:.6f}")
