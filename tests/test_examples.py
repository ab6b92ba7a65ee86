"""The training examples: each strategy's losses equal the unsharded run's to 1e-12 in
float64, and the step runs exactly the collectives the strategy should."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
from examples import data_parallel, fsdp, pmap_training, tensor_parallel

STEPS = 6


def decreasing(losses: list[float]) -> bool:
    return losses[-1] < losses[0]


@pytest.mark.parametrize(
    ("example", "mesh"),
    [
        (data_parallel, ((8,), ("batch",))),
        (fsdp, ((8,), ("fsdp",))),
        (tensor_parallel, ((4, 2), ("data", "model"))),
    ],
    ids=["data_parallel", "fsdp", "tensor_parallel"],
)
def test_sharded_training_equals_the_unsharded_run(example, mesh):
    sharded = example.train(spmd.make_mesh(*mesh), STEPS)
    plain = example.train(None, STEPS)
    np.testing.assert_allclose(sharded, plain, rtol=1e-12)
    assert decreasing(plain)


def test_pmap_training_equals_the_unsharded_run():
    np.testing.assert_allclose(pmap_training.train(8, STEPS), pmap_training.train(None, STEPS),
                               rtol=1e-12)  # fmt: skip
