"""Value tests of the Array API and NumPy functions added for issue 25 that have no case-table
rows yet (sets, statistics, binning, products), against NumPy, eagerly and under jit."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import SpmdError

RNG = np.random.default_rng(0)
X = np.round(RNG.normal(size=(4, 5)) * 3) / 2  # ties, so unique and sorts have work to do
XN = np.where(RNG.random((4, 5)) < 0.25, np.nan, X)

# (name, fn(m, x) for m = numpy or spmd.numpy, input)
FUNCTIONS = [
    ("nansum", lambda m, x: m.nansum(x, axis=0), XN),
    ("nanprod", lambda m, x: m.nanprod(x, axis=1), XN),
    ("nanmax", lambda m, x: m.nanmax(x, axis=1), XN),
    ("nanmin", lambda m, x: m.nanmin(x), XN),
    ("nanmean", lambda m, x: m.nanmean(x, axis=0), XN),
    ("nanvar", lambda m, x: m.nanvar(x, axis=1, ddof=1), XN),
    ("nanstd", lambda m, x: m.nanstd(x), XN),
    ("median", lambda m, x: m.median(x, axis=1), X),
    ("median-nan", lambda m, x: m.median(x, axis=0), XN),
    ("quantile", lambda m, x: m.quantile(x, [0.1, 0.5, 0.93], axis=0), X),
    ("percentile", lambda m, x: m.percentile(x, 30, axis=1, keepdims=True), X),
    ("quantile-lower", lambda m, x: m.quantile(x, 0.3, method="lower"), X),
    ("quantile-nearest", lambda m, x: m.quantile(x, 0.6, method="nearest"), X),
    ("quantile-midpoint", lambda m, x: m.quantile(x, 0.6, axis=1, method="midpoint"), X),
    ("cov", lambda m, x: m.cov(x), X),
    ("cov-cols", lambda m, x: m.cov(x, rowvar=False, ddof=0), X),
    ("corrcoef", lambda m, x: m.corrcoef(x), X),
    ("nan_to_num", lambda m, x: m.nan_to_num(x / np.where(x == 0, 0.0, 1.0), nan=-1.0), X),
    ("cumulative_sum", lambda m, x: m.cumulative_sum(x, axis=1, include_initial=True), X),
    ("searchsorted", lambda m, x: m.searchsorted(m.sort(x[0]), x, side="right"), X),
    ("searchsorted-nan", lambda m, x: m.searchsorted(m.sort(x[0]), x), XN),
    ("isin", lambda m, x: m.isin(x, X[0, :3]), X),
    ("interp", lambda m, x: m.interp(x, np.array([-2.0, 0, 1, 3]), np.array([1.0, 2, -1, 0])), X),
    ("convolve-full", lambda m, x: m.convolve(x[0], x[1, :3]), X),
    ("convolve-same", lambda m, x: m.convolve(x[0, :2], x[1], mode="same"), X),
    ("convolve-valid", lambda m, x: m.convolve(x[0], x[1, :3], mode="valid"), X),
    ("kron", lambda m, x: m.kron(x[:2, :3], x[2:, 3:]), X),
    ("inner", lambda m, x: m.inner(x, x[:3]), X),
    ("vecdot", lambda m, x: m.vecdot(x, x[:, :1], axis=0), X),
    ("histogram", lambda m, x: m.histogram(x, bins=4), X),
    ("histogram-range", lambda m, x: m.histogram(x, bins=3, range=(-1, 2), density=True), X),
    ("bincount", lambda m, x: m.bincount(np.abs(X[0]).astype(int), minlength=9), X),
]


def _check(result, expected):
    results = result if isinstance(result, tuple | list) else (result,)
    expecteds = expected if isinstance(expected, tuple | list) else (expected,)
    assert len(results) == len(expecteds)
    for r, e in zip(results, expecteds, strict=True):
        assert np.shape(r) == np.shape(e)
        assert np.asarray(r).dtype == np.asarray(e).dtype, (
            np.asarray(r).dtype,
            np.asarray(e).dtype,
        )
        np.testing.assert_allclose(np.asarray(r), e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("name", "fn", "x"), FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_matches_numpy_eagerly_and_under_jit(name, fn, x):
    expected = fn(np, x)
    _check(fn(snp, snp.asarray(x)), expected)
    _check(spmd.jit(lambda a: fn(snp, a))(snp.asarray(x)), expected)


@pytest.mark.parametrize("x", [X, XN, X.astype(int), np.zeros((0, 3))])
def test_unique_family_matches_numpy(x):
    values, index, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True
    )
    _check(snp.unique(snp.asarray(x), True, True, True), (values, index, inverse, counts))
    strict = np.unique(x, True, True, True, equal_nan=False)  # the Array API's: NaNs distinct
    _check(tuple(snp.unique_all(snp.asarray(x))), (strict[0], strict[1], strict[2], strict[3]))
    _check(
        snp.unique_values(snp.asarray(x)), np.unique(x, equal_nan=False)
    )  # NumPy's may be unsorted
    size = len(values) + 3
    jitted = spmd.jit(lambda a: snp.unique(a, True, True, True, size=size, fill_value=7))(
        snp.asarray(x)
    )
    pad = np.zeros(3, np.intp)
    padded = np.concatenate([values, np.full(3, 7, x.dtype)])
    _check(jitted, (padded, np.concatenate([index, pad]), inverse, np.concatenate([counts, pad])))


def test_data_dependent_shapes_under_jit_ask_for_size():
    with pytest.raises(SpmdError, match="size="):
        spmd.jit(snp.unique)(snp.asarray(X))
    with pytest.raises(SpmdError, match="length="):
        spmd.jit(snp.bincount)(snp.asarray([1, 2]))


def test_array_api_keywords_and_errors():
    x = snp.asarray(X)
    with pytest.raises(SpmdError, match="copy=False"):
        snp.asarray(X, copy=False)
    assert snp.asarray(x, copy=False) is x
    with pytest.raises(IndexError):
        snp.expand_dims(x, 5)
    np.testing.assert_array_equal(snp.sort(x, axis=1, descending=True), -np.sort(-X, axis=1))
    order = snp.argsort(x, axis=0, descending=True)
    np.testing.assert_array_equal(order, np.argsort(-X, axis=0, kind="stable"))
    assert type(snp.finfo(np.float32).eps) is float and type(snp.iinfo(np.int8).max) is int
    assert snp.__array_api_version__ == "2023.12" and snp.bool is np.bool_
    info = snp.__array_namespace_info__()
    assert info.default_device() in info.devices()
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert snp.zeros(3, device=spmd.devices()[1]).devices() == {spmd.devices()[1]}
