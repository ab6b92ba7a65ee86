"""Random small programs (chains of 5-20 rows of the case table) agree with NumPy under jit."""

import numpy as np
import pytest

import spmd
from tests.cases import assert_matches, make_input, shape_preserving

SHAPE = (3, 4)
STEPS = shape_preserving(SHAPE)  # ("map" | "center", row), in the table's order
NAMES = sorted({case.name for _, case in STEPS})


def into_domain(m, v, domain):
    """``v`` squashed into the values the row is checked on: bounded, and >= 1 or in [-1, 1]."""
    bounded = v / (1 + m.abs(v))  # in (-1, 1), smooth
    if domain == "unit":
        return bounded
    if domain in ("positive", "nonzero"):
        return 1 + 5 * m.abs(bounded)
    return 5 * bounded


def program(seed: int):
    """A chain of 5-20 steps: each a function drawn uniformly, then one of its rows."""
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(rng.integers(5, 21)):
        name = NAMES[rng.integers(len(NAMES))]
        rows = [step for step in STEPS if step[1].name == name]
        steps.append(rows[rng.integers(len(rows))])

    def run(m, x, w):
        for kind, case in steps:
            v = into_domain(m, x, case.domain)
            args = [v, into_domain(m, w, case.domain)][: len(case.shapes)]
            out = case.fn(m, *args)
            x = out if kind == "map" else v - out
        return x

    return [case.id for _, case in steps], run


def test_the_steps_cover_every_family_that_preserves_shapes():
    families = {case.family for _, case in STEPS}
    assert {"elementwise", "reduction", "shape", "contraction", "nn"} <= families
    assert {len(case.shapes) for _, case in STEPS} == {1, 2}
    assert {kind for kind, _ in STEPS} == {"map", "center"}
    assert len(NAMES) > 40


@pytest.mark.parametrize("seed", range(60))
def test_random_program_matches_numpy_under_jit(seed):
    ids, run = program(seed)
    dtype = (np.float32, np.float64)[seed % 2]
    x, w = (make_input(SHAPE, dtype, 1000 + 2 * seed + i) for i in range(2))
    with np.errstate(all="ignore"):
        expected = run(np, x, w)
    assert np.isfinite(expected).all(), ids  # the domains keep every step meaningful
    got = spmd.jit(lambda a, b: run(spmd.numpy, a, b))(x, w)
    try:  # to rounding, which a chain amplifies (spmd.nn's float32 formulas are not NumPy's)
        assert_matches(got, expected, scale=10)
    except AssertionError as error:
        raise AssertionError(f"program {ids}: {error}") from None
