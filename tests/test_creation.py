"""Array creation functions against NumPy: values, dtypes and shapes, eagerly and under jit."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp

CASES = [
    ("zeros", lambda m: m.zeros((2, 3))),
    ("zeros int32", lambda m: m.zeros(4, dtype=np.int32)),
    ("ones", lambda m: m.ones((0, 2), dtype=np.float32)),
    ("full", lambda m: m.full((2, 2), 7)),
    ("full float32", lambda m: m.full(3, 1.5, dtype=np.float32)),
    ("empty shape", lambda m: m.zeros(())),
    ("arange stop", lambda m: m.arange(5)),
    ("arange float", lambda m: m.arange(1.0, 3.0, 0.5)),
    ("arange dtype", lambda m: m.arange(0, 10, 3, dtype=np.int32)),
    ("linspace", lambda m: m.linspace(0, 1, 5)),
    ("linspace open", lambda m: m.linspace(0, 1, 4, endpoint=False)),
    ("eye", lambda m: m.eye(3)),
    ("eye offset", lambda m: m.eye(2, 4, k=1, dtype=np.int64)),
    ("array list", lambda m: m.array([[1, 2], [3, 4]])),
    ("array dtype", lambda m: m.array([1, 2], dtype=np.float32)),
    ("asarray", lambda m: m.asarray([True, False])),
    ("zeros_like", lambda m: m.zeros_like(np.ones((2, 3), np.float32))),
    ("ones_like", lambda m: m.ones_like(np.ones(3, np.int32))),
    ("full_like", lambda m: m.full_like(np.ones(2, np.float32), 3)),
]


@pytest.mark.parametrize(("name", "make"), CASES, ids=[c[0] for c in CASES])
def test_creation_matches_numpy(name, make):
    expected = make(np)
    for result in (make(snp), spmd.jit(lambda: make(snp))()):
        assert result.dtype == expected.dtype and result.shape == expected.shape, name
        np.testing.assert_array_equal(np.asarray(result), expected)


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(spmd.SpmdTypeError, match=r"dtype=<U0 is not supported; spmd holds bool"):
        snp.zeros(3, dtype=str)
