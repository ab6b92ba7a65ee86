"""Random small programs (chains of 5-20 ops from the case table) agree with NumPy under jit."""

import numpy as np
import pytest

import spmd

# Each step maps (namespace, value, other) to a new value of the same shape, so steps chain.
STEPS = {
    "sin": lambda m, v, w: m.sin(v),
    "tanh": lambda m, v, w: m.tanh(v),
    "abs": lambda m, v, w: m.abs(v),
    "negative": lambda m, v, w: -v,
    "scale": lambda m, v, w: v * 0.5,
    "add": lambda m, v, w: m.add(v, w),
    "maximum": lambda m, v, w: m.maximum(v, w),
    "where": lambda m, v, w: m.where(v > 0, v, w),
    "center": lambda m, v, w: v - m.mean(v, axis=0, keepdims=True),
    "squash": lambda m, v, w: v / (1 + m.abs(v)),
    "transpose twice": lambda m, v, w: m.transpose(m.transpose(v)),
    "reshape round trip": lambda m, v, w: m.reshape(m.reshape(v, (12,)), (3, 4)),
    "matmul": lambda m, v, w: v @ (m.ones((4, 4)) / 4),
    "clip": lambda m, v, w: m.clip(v, -1, 1),
    "cumsum": lambda m, v, w: m.cumsum(v, axis=1) / 4,
    "sqrt abs": lambda m, v, w: m.sqrt(m.abs(v)),
    "exp": lambda m, v, w: m.exp(-m.abs(v)),
    "max broadcast": lambda m, v, w: v + m.max(v, axis=1, keepdims=True),
    "row slice": lambda m, v, w: m.concatenate([v[1:], v[:1]], axis=0),
    "power": lambda m, v, w: m.abs(v) ** 1.5,
}


def program(seed: int):
    rng = np.random.default_rng(seed)
    names = list(rng.choice(sorted(STEPS), size=rng.integers(5, 21)))

    def run(m, x, w):
        for name in names:
            x = STEPS[name](m, x, w)
        return x

    return names, run


@pytest.mark.parametrize("seed", range(60))
def test_random_program_matches_numpy_under_jit(seed):
    names, run = program(seed)
    rng = np.random.default_rng(1000 + seed)
    dtype = (np.float32, np.float64)[seed % 2]
    x, w = (rng.standard_normal((3, 4)).astype(dtype) for _ in range(2))
    expected = run(np, x, w)
    got = spmd.jit(lambda a, b: run(spmd.numpy, a, b))(x, w)
    assert got.dtype == expected.dtype, names
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=rtol, err_msg=str(names))
