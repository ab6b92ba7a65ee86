"""Array creation beyond the case table (tests/cases.py): dtypes spmd does not hold."""

import pytest

import spmd
import spmd.numpy as snp


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(spmd.SpmdTypeError, match=r"dtype=<U0 is not supported; spmd holds bool"):
        snp.zeros(3, dtype=str)
