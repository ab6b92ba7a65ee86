"""JAX's x64-off mode in tests: fixtures that set it and restore it, and the case table's
oracle in that mode (NumPy on 32-bit inputs, its result brought to 32 bits).

With jax_enable_x64 off a row's result must have the 32-bit stand-in of NumPy's dtype
(float64 -> float32, int64 -> int32, uint64 -> uint32, complex128 -> complex64) and NumPy's
values computed on the 32-bit inputs, to float32's tolerance (spmd computes some steps in
32 bits where NumPy keeps 64). Integers are compared exactly.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import spmd
from spmd import NamedSharding, P
from spmd.experimental import disable_x64
from tests.backend import needs_missing_dtype, refused_by_backend
from tests.cases import Case, assert_matches, make_inputs, numpy_result

TO_32 = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}
SCALE_32 = 20  # float32 results may differ from NumPy's (computed in float64) by this many ulps


def to_32(dtype) -> np.dtype:
    return TO_32.get(np.dtype(dtype), np.dtype(dtype))


@pytest.fixture
def x64_off():
    """The test runs with x64 off (a ``disable_x64`` block); the mode comes back after."""
    with disable_x64():
        yield


@pytest.fixture
def restore_x64():
    """For tests that call ``spmd.config.update("jax_enable_x64", ...)``: the process-wide
    value they found is put back after them."""
    before = spmd.config.jax_enable_x64
    yield
    spmd.config.update("jax_enable_x64", before)


def sample(groups, fraction: float, seed: int = 25) -> list:
    """A reproducible ``fraction`` of ``groups`` (at least one)."""
    groups = sorted(groups, key=repr)
    return random.Random(seed).sample(groups, max(1, round(len(groups) * fraction)))


def inputs_32(inputs: list) -> list:
    """The row's inputs as spmd holds them with x64 off."""
    return [np.asarray(x).astype(to_32(np.asarray(x).dtype)) for x in inputs]


def expected_32(result):
    """NumPy's result brought to the 32-bit mode's dtypes (wrapping integers as a cast
    does: spmd computes NumPy's 64-bit result and converts it)."""
    if isinstance(result, list | tuple):
        converted = [expected_32(r) for r in result]
        return type(result)(*converted) if hasattr(result, "_fields") else type(result)(converted)
    result = np.asarray(result)
    return result.astype(to_32(result.dtype))


def split(inputs: list) -> list:
    """The inputs' first dimensions split over two devices (blocks may be uneven or empty);
    0-d inputs stay on the host."""
    mesh = spmd.make_mesh((2,), ("x",))
    return [x if x.ndim == 0 else spmd.device_put(x, NamedSharding(mesh, P("x"))) for x in inputs]


def check_case_32(case: Case, dtype, seed: int = 0) -> None:
    """The row, eagerly and under jit with x64 off, gives NumPy's result on 32-bit inputs in
    32-bit dtypes; a row that expects an error raises it in this mode too, where its inputs
    are the same in both modes (an error about 64-bit inputs may not apply to 32-bit ones).
    An eager-only row runs eagerly (test_cases checks that jit refuses it)."""
    given = make_inputs(case, dtype, seed)
    inputs = inputs_32(given)
    if case.error is not None and any(
        x.dtype != y.dtype for x, y in zip(given, inputs, strict=True)
    ):
        return
    expected = None if case.error is not None else expected_32(numpy_result(case, inputs))
    runs = {"eager": lambda: case.fn(spmd.numpy, *[spmd.device_put(x) for x in inputs])}
    if not case.eager_only:
        runs["jit"] = lambda: spmd.jit(lambda *xs: case.fn(spmd.numpy, *xs))(*inputs)
        runs["jit, split over 2 devices"] = lambda: spmd.jit(lambda *xs: case.fn(spmd.numpy, *xs))(
            *split(inputs)
        )
    for mode, run in runs.items():
        with disable_x64(), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if case.error is not None:
                with pytest.raises(case.error):
                    run()
                continue
            try:
                result = run()
            except spmd.SpmdTypeError as error:  # a dtype the backend lacks, said clearly
                if refused_by_backend(error) and needs_missing_dtype(inputs, expected):
                    continue
                raise
        try:
            assert_matches(result, expected, case.values, SCALE_32)
        except AssertionError as error:
            raise AssertionError(f"x64 off, {mode}: {error}") from None
