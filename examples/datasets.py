"""Synthetic stand-in for JAX's ``examples/datasets.py``: ``mnist()`` returns arrays of
MNIST's shapes and dtypes (images float32 in [0, 1), 784 pixels; labels one-hot float32 over
10 classes) drawn from a fixed seed, as this machine cannot download MNIST.

The labels are those of a fixed random linear teacher, so a model can learn them and its
accuracy moves. The sample counts are MNIST's (60000 train, 10000 test) unless the command
line says ``--num-train N`` / ``--num-test N`` (or ``mnist`` is called with them), so that a
test can run an example that calls ``datasets.mnist()`` on a small set.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

NUM_PIXELS = 28 * 28
NUM_CLASSES = 10
SEED = 0


def _counts_from_command_line() -> tuple[int, int]:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--num-train", type=int, default=60000)
    parser.add_argument("--num-test", type=int, default=10000)
    known, _ = parser.parse_known_args(sys.argv[1:])
    for name, value in (("--num-train", known.num_train), ("--num-test", known.num_test)):
        if value < 1:
            raise SystemExit(f"{name} must be a positive sample count, got {value}.")
    return known.num_train, known.num_test


def _one_hot(x: np.ndarray, k: int, dtype=np.float32) -> np.ndarray:
    return np.array(x[:, None] == np.arange(k), dtype)


def mnist(
    permute_train: bool = False, num_train: int | None = None, num_test: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(train_images, train_labels, test_images, test_labels)``, synthetic, deterministic.

    Example: ``mnist(num_train=256, num_test=64)[0].shape == (256, 784)``.
    """
    default_train, default_test = _counts_from_command_line()
    num_train = default_train if num_train is None else num_train
    num_test = default_test if num_test is None else num_test
    rng = np.random.RandomState(SEED)
    teacher = rng.randn(NUM_PIXELS, NUM_CLASSES).astype(np.float32)
    images = rng.rand(num_train + num_test, NUM_PIXELS).astype(np.float32)
    labels = _one_hot(np.argmax((images - 0.5) @ teacher, axis=1), NUM_CLASSES)
    train_images, test_images = images[:num_train], images[num_train:]
    train_labels, test_labels = labels[:num_train], labels[num_train:]
    if permute_train:
        perm = np.random.RandomState(0).permutation(num_train)
        train_images, train_labels = train_images[perm], train_labels[perm]
    return train_images, train_labels, test_images, test_labels
