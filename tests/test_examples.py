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


def counted_step(example, mesh) -> spmd.debug.CollectiveCounts:
    example.train(mesh, 1)  # compiled outside the count
    with spmd.debug.count_collectives() as counts:
        example.train(mesh, 1)
    return counts


def test_data_parallel_all_reduces_each_gradient_once():
    counts = counted_step(data_parallel, spmd.make_mesh((8,), ("batch",)))
    # six gradients (three weights, three biases) and the loss; nothing is gathered
    assert dict(counts) == {"all-reduce": 7}


def test_fsdp_reduce_scatters_gradients_instead_of_all_reducing_them():
    counts = counted_step(fsdp, spmd.make_mesh((8,), ("fsdp",)))
    # each of the six parameters gathered where it is used and its gradient reduce-scattered
    # into the rows each device owns; the loss (a scalar) all-reduced; nothing else
    assert dict(counts) == {"all-gather": 6, "reduce-scatter": 6, "all-reduce": 1}
    assert counts.bytes["all-reduce"] < 1024


def test_tensor_parallel_reduces_weight_gradients_over_data_and_activations_over_model():
    counts = counted_step(tensor_parallel, spmd.make_mesh((4, 2), ("data", "model")))
    # all-reduces: the six gradients over 'data', the row layer's output over 'model' (as
    # Megatron does), the loss; the backward activation gradient is reduce-scattered and
    # gathered, and a row-split bias gradient gathered: no all-to-all, nothing else
    assert dict(counts) == {"all-reduce": 8, "reduce-scatter": 1, "all-gather": 2}
