"""Array creation beyond the case table (tests/cases/): dtypes spmd does not hold."""

import pytest

import spmd
import spmd.numpy as snp


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(spmd.SpmdTypeError, match=r"dtype=<U0 is not supported; spmd holds bool"):
        snp.zeros(3, dtype=str)


def test_bool_arange_of_more_than_two_values_is_a_clear_error():
    assert snp.arange(2, dtype=bool).tolist() == [False, True]
    with pytest.raises(spmd.SpmdTypeError, match=r"arange\(0, 3, 1, dtype=bool\): .* has 3\. "):
        snp.arange(3, dtype=bool)
    with pytest.raises(spmd.SpmdTypeError, match=r"arange\(0, 'a', 1\): .* must be"):
        snp.arange("a")


def test_full_with_an_array_or_traced_fill_broadcasts_it():
    import numpy as np

    row = np.arange(3, dtype=np.int32)
    for fill in (row, np.float32(1.5)):
        expected = np.full((2, 3), fill)
        for result in (
            snp.full((2, 3), spmd.device_put(fill)),
            spmd.jit(lambda f: snp.full((2, 3), f))(fill),
            spmd.jit(lambda f: snp.full_like(np.ones((2, 3), np.int8), f))(fill),
        ):
            want = expected if result.dtype == expected.dtype else expected.astype(np.int8)
            assert result.dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(result), want)
    assert spmd.jit(lambda f: snp.full(2, f, dtype=np.float64))(row[:1]).dtype == np.float64
    assert spmd.jit(lambda f: snp.full(2, f))(2).dtype == np.full(2, 2).dtype  # made strong
    with pytest.raises(spmd.ShapeError, match=r"full: fill_value i32\[3\] does not fit shape"):
        spmd.jit(lambda f: snp.full((2, 4), f))(row)
