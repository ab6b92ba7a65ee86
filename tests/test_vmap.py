"""vmap of every row of the case table against a Python loop over the batch, with in_axes
and out_axes sampled per row, eagerly and under jit; and vmap's own API."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.lax import axis_index, pmean, psum
from tests.cases import CASES, RTOL, make_inputs, numpy_result

BATCH = 3


def batchable(case) -> bool:
    """Rows with array inputs and values to compare; not the eager-only ones (EAGER_ONLY in
    tests/cases/table.py: vmap traces, and their result's shape depends on the values)."""
    return (
        case.error is None
        and case.values
        and len(case.shapes) > 0
        and case.family != "creation"
        and not case.eager_only
    )


ROWS = [c for c in CASES if batchable(c)]


def dtype_of(case):
    return np.float64 if np.float64 in case.dtypes else case.dtypes[-1]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", ROWS, ids=[c.id for c in ROWS])
def test_vmap_matches_a_python_loop(case, jitted):
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    members = [make_inputs(case, dtype_of(case), seed) for seed in range(BATCH)]
    count = len(case.shapes)
    in_axes, stacked = [], []
    for i in range(count):
        ndim = len(case.shapes[i])
        axis = None if i > 0 and rng.integers(4) == 0 else int(rng.integers(0, ndim + 1))
        in_axes.append(axis)
        if axis is None:
            stacked.append(members[0][i])
            for m in members:
                m[i] = members[0][i]
        else:
            stacked.append(np.stack([m[i] for m in members], axis=axis))
    indices = members[0][count:]
    for m in members:
        m[count:] = indices
    try:
        expected = [numpy_result(case, m) for m in members]
    except Exception:
        pytest.skip("NumPy rejects these inputs")
    if not all(isinstance(e, np.ndarray | np.generic) for e in expected):
        pytest.skip("the result is not one array")
    out_ndim = np.ndim(expected[0])
    out_axis = int(rng.integers(0, out_ndim + 1))

    def f(*xs):
        return case.fn(snp, *xs, *indices)

    vmapped = spmd.vmap(f, in_axes=tuple(in_axes), out_axes=out_axis)
    got = (spmd.jit(vmapped) if jitted else vmapped)(*stacked)
    want = np.stack([np.asarray(e) for e in expected], axis=out_axis)
    assert np.asarray(got).dtype == want.dtype
    # Batched reductions may add in another order than one member at a time: allow the
    # dtype's rounding, a little amplified.
    rtol = 1e-12 if want.dtype.kind not in "fc" else max(1e-12, 10 * RTOL[want.dtype.char])
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=rtol, equal_nan=True)


def test_vmap_over_pytrees_with_unmapped_arguments():
    xs = {"a": np.arange(6.0).reshape(3, 2), "b": np.ones(3)}
    w = np.array([2.0, 3.0])
    out = spmd.vmap(lambda d, w: d["a"] * w + d["b"], in_axes=({"a": 0, "b": 0}, None))(xs, w)
    np.testing.assert_array_equal(out, np.arange(6.0).reshape(3, 2) * w + 1)


def test_collectives_over_the_vmap_axis_name():
    x = np.arange(12.0).reshape(4, 3)
    out = spmd.vmap(lambda r: r - pmean(r, "b") + axis_index("b"), axis_name="b")(x)
    np.testing.assert_allclose(out, x - x.mean(0) + np.arange(4)[:, None])
    total = spmd.vmap(lambda r: psum(r, "b"), axis_name="b", out_axes=None)(x)
    np.testing.assert_array_equal(total, x.sum(0))


def test_vmap_errors_name_the_problem():
    with pytest.raises(spmd.ShapeError, match="different sizes"):
        spmd.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(spmd.ShapeError, match="out of range"):
        spmd.vmap(lambda a: a, in_axes=2)(np.ones(3))
    with pytest.raises(spmd.SpmdTypeError, match="out_axes=None"):
        spmd.vmap(lambda a: a, out_axes=None)(np.ones(3))
    with pytest.raises(spmd.SpmdTypeError, match="axis_size"):
        spmd.vmap(lambda a: a, in_axes=None)(np.ones(3))
