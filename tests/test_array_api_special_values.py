"""The Array API standard's special values of complex expm1 and tanh (spmd/numpy/special_values.py,
where NumPy's ufuncs give others), eagerly, under jit and split over 8 devices, with expm1's
derivative exp(z) dz everywhere; and clip's standard signature."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import SpmdTypeError
from tests.cases import assert_matches
from tests.modes import MODES, run

inf, nan = math.inf, math.nan
EITHER = None  # the standard leaves this zero's sign open

# ((a, b), (real, imaginary) of the result), from the standard's special-case lists (a list:
# as dict keys 0.0 and -0.0 would be one)
EXPM1 = [
    ((0.0, 0.0), (0.0, 0.0)),
    ((-0.0, 0.0), (0.0, 0.0)),
    ((0.0, -0.0), (0.0, -0.0)),  # expm1(conj(z)) == conj(expm1(z))
    ((inf, 0.0), (inf, 0.0)),
    ((inf, -0.0), (inf, -0.0)),
    ((-inf, inf), (-1.0, 0.0)),  # the standard: -1 +- 0i; its test suite: -1 + 0i
    ((inf, inf), (inf, nan)),
    ((-inf, nan), (-1.0, 0.0)),
    ((-inf, -inf), (-1.0, EITHER)),
    ((inf, nan), (inf, nan)),
    ((nan, 0.0), (nan, 0.0)),
    ((nan, -0.0), (nan, -0.0)),
    ((nan, 1.0), (nan, nan)),
    ((2.0, inf), (nan, nan)),
    ((-inf, 2.0), (-1.0, 0.0)),  # -1 + 0 cis(b) (NumPy's complex64: -0.9999999)
    ((-inf, 4.0), (-1.0, -0.0)),
    ((-inf, -0.0), (-1.0, -0.0)),
    ((inf, 2.0), (-inf, inf)),  # inf cis(b)
    ((0.0, inf), (nan, nan)),
]
TANH = [
    ((inf, 4e153), (1.0, 0.0)),  # C99 and NumPy: the sign of sin(2b), here negative
    ((inf, 3.0), (1.0, 0.0)),
    ((inf, -3.0), (1.0, -0.0)),  # tanh(conj(z)) == conj(tanh(z))
    ((-inf, 3.0), (-1.0, 0.0)),  # tanh(-z) == -tanh(z)
    ((-inf, -3.0), (-1.0, -0.0)),
    ((inf, 0.0), (1.0, 0.0)),
]


def _same(value: float, expected: float | None) -> bool:
    if expected is None:
        return value == 0
    if math.isnan(expected):
        return math.isnan(value)
    return value == expected and math.copysign(1, value) == math.copysign(1, expected)


def _check(table: list, result) -> None:
    result = np.asarray(result)
    for (point, (re, im)), value in zip(table, result, strict=True):
        assert _same(value.real, re) and _same(value.imag, im), (point, value, (re, im))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize(("name", "table"), [("expm1", EXPM1), ("tanh", TANH)])
def test_complex_special_values_are_the_standards(mode, dtype, name, table):
    z = np.array([complex(*point) for point, _ in table], dtype)
    result = run(mode, getattr(snp, name), z)
    assert result.dtype == dtype
    _check(table, result)


@pytest.mark.parametrize("mode", MODES)
def test_other_values_are_numpys(mode):
    with np.errstate(all="ignore"):
        z = np.array([1 + 2j, -0.5 - 0.25j, 3e-9 + 1e-9j, 20 - 1j, -0.0 + 2j])
        assert_matches(run(mode, snp.expm1, z), np.expm1(z))
        assert_matches(run(mode, snp.tanh, z), np.tanh(z))
        real = np.array([-0.0, 0.0, 1e-12, -inf, inf])  # real inputs: the primitive's own
        result = np.asarray(run(mode, snp.expm1, real))
        assert all(_same(v, e) for v, e in zip(result, np.expm1(real), strict=True)), result
        assert np.signbit(result[0])  # expm1(-0.0) is -0.0 for floats


def test_python_and_numpy_complex_scalars_keep_numpys_dtypes():
    for x in (complex(-0.0, 0.0), np.complex64(complex(inf, 0.0)), np.complex128(1 + 1j)):
        for name in ("expm1", "tanh"):
            with np.errstate(all="ignore"):
                expected = getattr(np, name)(x)
            result = getattr(snp, name)(x)
            assert result.dtype == expected.dtype, (name, x)
    _check([((-0.0, 0.0), (0.0, 0.0))], [snp.expm1(complex(-0.0, 0.0))])


def test_complex_expm1_has_the_derivative_exp_z_dz_on_the_real_axis_too():
    z = np.array([0j, complex(-0.0, 0.0), 1 + 0j, complex(-0.5, -0.0), 1 + 2j])
    dz = np.full(z.shape, 0.3 + 0.7j)
    out, tangent = spmd.jvp(snp.expm1, (z,), (dz,))
    np.testing.assert_allclose(np.asarray(tangent), np.exp(z) * dz, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(out), np.expm1(z), rtol=1e-12, atol=0)
    h = 1e-7  # the imaginary direction, which the value on the real axis alone would lose
    fd = (np.expm1(z + 1j * h) - np.expm1(z - 1j * h)) / (2 * h)
    _, along_imag = spmd.jvp(snp.expm1, (z,), (np.full(z.shape, 1j),))
    np.testing.assert_allclose(np.asarray(along_imag), fd, rtol=1e-6)
    batched = spmd.vmap(lambda v: spmd.jvp(snp.expm1, (v,), (v,))[1])(z.reshape(5, 1))
    np.testing.assert_allclose(np.asarray(batched).ravel(), np.exp(z) * z, rtol=1e-12)


def test_clip_has_the_standards_signature_and_numpys_keywords():
    parameters = inspect.signature(snp.clip).parameters
    assert list(parameters)[:3] == ["a", "min", "max"]
    assert parameters["min"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    x = np.array([-3.0, 0.5, 4.0])
    assert_matches(snp.clip(x, min=0.0, max=1.0), np.clip(x, 0.0, 1.0))
    assert_matches(snp.clip(x, a_min=0.0), np.clip(x, 0.0, None))
    assert_matches(snp.clip(x, None, 1.0), np.clip(x, None, 1.0))
    with pytest.raises(SpmdTypeError, match=r"both max=1\.0 and a_max=2\.0"):
        snp.clip(x, max=1.0, a_max=2.0)
