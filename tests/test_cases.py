"""Every row of the case table (tests/cases/) against NumPy, eagerly and under jit.

One test per (function, dtype) runs all of that function's rows on that dtype and lists every
row that differs; rows in ``KNOWN_BUGS`` run alone, marked xfail(strict=True).
"""

import inspect
import warnings

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.numpy import linalg_compositions, linalg_decompositions
from tests import x64_mode
from tests.backend import needs_missing_dtype, refused_by_backend
from tests.cases import (
    CASES,
    DTYPES,
    KNOWN_BUGS,
    LAX_CONTROL_FLOW,
    Case,
    assert_matches,
    data_dependent,
    make_inputs,
    numpy_result,
)


def run_eagerly(case: Case, inputs):
    return case.fn(snp, *[spmd.device_put(x) for x in inputs])


def run_jitted(case: Case, inputs):
    return spmd.jit(lambda *xs: case.fn(snp, *xs))(*inputs)


def refuses_jit(case: Case, inputs) -> None:
    """An eager-only row (EAGER_ONLY says why) raises SpmdTypeError under jit, as JAX does."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            run_jitted(case, inputs)
        except spmd.SpmdTypeError:
            return
        except Exception as error:
            raise AssertionError(
                f"jit: an eager-only row must raise SpmdTypeError, got {type(error).__name__}: "
                f"{error}"
            ) from error
    raise AssertionError("jit: an eager-only row gave a result; take eager_only off the row")


def check_case(case: Case, dtype, seed: int = 0) -> None:
    """The row's result eagerly and under jit equals NumPy's, or both raise (AssertionError).
    Where the backend lacks a dtype the row needs, SpmdTypeError is a right answer too. An
    eager-only row runs eagerly, and under jit must refuse (EAGER_ONLY)."""
    inputs = make_inputs(case, dtype, seed)
    expected = None  # NumPy's result, for a row that expects one
    if case.error is None:
        expected = numpy_result(case, inputs)
    elif case.numpy_too:
        try:
            numpy_result(case, inputs)
        except Exception:  # NumPy's own exception types vary
            pass
        else:
            raise AssertionError("NumPy accepts the input, but the row expects an error")
    for mode, run in (("eager", run_eagerly), ("jit", run_jitted)):
        if mode == "jit" and case.eager_only and case.error is None:
            refuses_jit(case, inputs)
            continue
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                result = run(case, inputs)
            except Exception as error:
                if not _expected_refusal(case, error, inputs, expected):
                    raise AssertionError(
                        f"{mode}: raised {type(error).__name__}: {error}"
                    ) from error
                continue  # the refusal is the row's outcome: nothing to compare
        if case.error is not None:
            raise AssertionError(f"{mode}: expected {case.error.__name__}, got a result")
        try:
            assert_matches(result, expected, case.values)
        except AssertionError as error:
            raise AssertionError(f"{mode}: {error}") from None


def _expected_refusal(case: Case, error: Exception, inputs, expected) -> bool:
    """Whether ``error`` is what the row expects: its own error, or the backend's refusal of
    a dtype it lacks (on array_api_strict or torch) where the row needs one."""
    if case.error is not None:
        return isinstance(error, case.error)
    return refused_by_backend(error) and needs_missing_dtype(inputs, expected)


def dtype_id(dtype) -> str:
    return "nodtype" if dtype is None else np.dtype(dtype).name


GROUPS: dict[tuple[str, object], list[Case]] = {}
BUGS = []  # (row, the dtypes it fails on, why)
for _case in CASES:
    _bug_dtypes, _reason = KNOWN_BUGS.get(_case.id, ((), ""))
    if _bug_dtypes:
        BUGS.append(
            pytest.param(
                _case,
                _bug_dtypes,
                id=_case.id,
                marks=pytest.mark.xfail(strict=True, reason=_reason),
            )
        )
    for _dtype in _case.dtypes:
        if _dtype not in _bug_dtypes:
            GROUPS.setdefault((_case.name, _dtype), []).append(_case)


@pytest.mark.parametrize(
    ("name", "dtype"), list(GROUPS), ids=[f"{n}-{dtype_id(d)}" for n, d in GROUPS]
)
def test_rows_match_numpy_eagerly_and_under_jit(name, dtype):
    rows = GROUPS[name, dtype]
    failures = []
    for case in rows:
        try:
            check_case(case, dtype)
        except Exception as error:  # a row NumPy fails on is listed too
            failures.append(f"{case.id}: {type(error).__name__}: {error}")
    if failures:
        pytest.fail(
            f"{len(failures)} of {len(rows)} rows of {name} on {dtype_id(dtype)} differ "
            "from NumPy:\n" + "\n".join(failures),
            pytrace=False,
        )


X64_OFF_GROUPS = x64_mode.sample(GROUPS, fraction=0.25)


@pytest.mark.parametrize(
    ("name", "dtype"), X64_OFF_GROUPS, ids=[f"{n}-{dtype_id(d)}" for n, d in X64_OFF_GROUPS]
)
def test_sampled_rows_with_x64_off(name, dtype):
    """A quarter of the (function, dtype) groups with jax_enable_x64 off: 32-bit dtypes,
    NumPy's values on 32-bit inputs (tests/x64_mode.py); the mode is restored after."""
    failures = []
    for case in GROUPS[name, dtype]:
        try:
            x64_mode.check_case_32(case, dtype)
        except Exception as error:
            failures.append(f"{case.id}: {type(error).__name__}: {error}")
    assert spmd.config.jax_enable_x64, "the mode was not restored"
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


@pytest.mark.parametrize(("case", "dtypes"), BUGS)
def test_known_bugs(case, dtypes):
    """Rows spmd gets wrong on some dtypes (KNOWN_BUGS): strict xfail, one test per row."""
    failures = []
    for dtype in dtypes:
        try:
            check_case(case, dtype)
        except AssertionError as error:
            failures.append(f"{dtype_id(dtype)}: {error}")
    assert not failures, "\n".join(failures)


def test_known_bugs_name_rows_of_the_table():
    ids = {case.id: case for case in CASES}
    for row_id, (dtypes, _) in KNOWN_BUGS.items():
        assert row_id in ids and set(dtypes) <= set(ids[row_id].dtypes), row_id


# ------------------------------------------------------------------ the table itself


# Public names that take and give no arrays (shapes, strings, named tuples of them): no row
# can compare them with NumPy; tests/test_convolution.py uses them.
NOT_ARRAY_FUNCTIONS = {
    "lax.ConvDimensionNumbers",
    "lax.conv_dimension_numbers",
    "lax.conv_general_permutations",
    "lax.padtype_to_pads",
}
# spmd.lax's modules whose names have no rows of their own: their results depend on a mapped
# axis or a layout, not on values alone, or their own tests take them.
LAX_WITHOUT_ROWS = {
    "spmd.lax.collectives": "named mapped axes (tests/test_collectives.py)",
    # (stop_gradient has none: its zero derivative is not the slope the derivative rows check)
    "spmd.lax.control": "rows under LAX_CONTROL_FLOW's names",
    "spmd.lax.resharding": "layouts (tests/test_sharding_api.py, tests/test_reshard.py)",
    "spmd.lax.slicing": "traced offsets (tests/test_lax_slicing.py)",
}


def lax_array_modules() -> list:
    """spmd.lax's modules whose names join spmd.lax.__all__ (elementwise, special,
    convolution, windows, operators and the modules they grow into), not LAX_WITHOUT_ROWS."""
    exported = set(spmd.lax.__all__)
    return [
        module
        for module in vars(spmd.lax).values()
        if inspect.ismodule(module)
        and module.__name__.startswith("spmd.lax.")
        and module.__name__ not in LAX_WITHOUT_ROWS
        and set(getattr(module, "__all__", ())) <= exported
    ]


def _defined_functions(module) -> set[str]:
    """The public functions ``module`` itself defines, whether or not its __all__ lists them."""
    return {
        name
        for name, value in vars(module).items()
        if inspect.isfunction(value) and value.__module__ == module.__name__ and name[0] != "_"
    }


def public_names() -> set[str]:
    """Every name the case table must have rows for, as the rows name them."""
    functions = set(snp.__all__) - set(snp.constants.__all__)  # NumPy's own dtypes and constants
    public = functions | {f"nn.{name}" for name in spmd.nn.__all__}
    public |= {f"fft.{name}" for name in snp.fft.__all__}
    linalg = {*linalg_decompositions.__all__, *linalg_compositions.__all__}
    public |= {f"linalg.{name}" for name in linalg | _defined_functions(linalg_compositions)}
    public |= {f"lax.linalg.{name}" for name in spmd.lax.linalg.__all__}
    lax = set(LAX_CONTROL_FLOW)
    for module in lax_array_modules():
        lax |= set(getattr(module, "__all__", ()))
    public |= {f"lax.{name}" for name in lax}
    public |= {f"scipy.special.{name}" for name in spmd.scipy.special.__all__}
    public |= {f"scipy.linalg.{name}" for name in spmd.scipy.linalg.__all__}
    public |= {f"scipy.stats.norm.{name}" for name in spmd.scipy.stats.norm.__all__}
    return public - NOT_ARRAY_FUNCTIONS


def test_every_public_function_has_rows_and_every_row_a_public_function():
    names, public = {case.name for case in CASES}, public_names()
    assert not public - names, f"public functions without rows: {sorted(public - names)}"
    assert not names - public, f"rows of no public function: {sorted(names - public)}"


def test_the_eager_only_rows_are_the_data_dependent_functions():
    eager = {case.name for case in CASES if case.eager_only}
    assert eager == {"unique_all", "unique_counts", "unique_inverse", "unique_values", "nonzero"}
    assert all(not case.eager_only for case in CASES if case.name == "unique")  # size= given


def test_row_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def _touches(case: Case):
    """The shapes of the row's inputs and (where NumPy gives one) its result."""
    dtype = case.dtypes[0]
    inputs = make_inputs(case, dtype)
    shapes = [x.shape for x in inputs]
    if case.error is None:
        result = numpy_result(case, inputs)
        results = result if isinstance(result, list | tuple) else [result]
        shapes += [np.shape(r) for r in results]
    return shapes


def test_every_function_is_checked_on_every_dtype_on_scalars_and_on_size_0():
    dtypes, scalars, empties, works = {}, set(), set(), set()
    for case in CASES:
        dtypes.setdefault(case.name, set()).update(d for d in case.dtypes if d is not None)
        shapes = _touches(case)
        if any(len(s) == 0 for s in shapes):
            scalars.add(case.name)
        if any(0 in s for s in shapes):
            empties.add(case.name)
        if case.error is None:
            works.add(case.name)
    names = {case.name for case in CASES}
    # The standard's names for NumPy's functions (acos is arccos) share the dtypes' rows.
    same = {}
    for n in names:
        same.setdefault(id(getattr(snp, n, n)), set()).add(n)
    for group in same.values():
        covered = set().union(*(dtypes[n] for n in group))
        for n in group:
            dtypes[n] = covered
    assert {n for n in names if not set(DTYPES) <= dtypes[n]} == set()
    # NumPy 2.0 still reads a 0-d nonzero as 1-d, so the 0-d error row needs NumPy >= 2.1
    scalars |= set() if data_dependent._NUMPY_REFUSES_0D_NONZERO else {"nonzero"}
    assert names - scalars == set()
    assert names - empties == set()
    assert names - works == set()


def test_a_wrong_result_fails_the_check():
    """The check is not vacuous: wrong values, dtypes, shapes, NaNs and errors all fail it."""
    row = next(c for c in CASES if c.id == "sin[]@2x3")
    spmd_sin = snp.sin

    def mutant(fn):
        return Case("sin", lambda m, x: spmd_sin(x) if m is snp else fn(x), ((2, 3),))

    wrong = [
        lambda x: np.sin(x) + 1e-3,  # values
        lambda x: np.sin(x).astype(np.float64) if x.dtype == np.float32 else np.sin(x) + 1,
        lambda x: np.sin(x)[:1],  # shape
        lambda x: np.where(x > 0, np.nan, np.sin(x)),  # NaN positions
    ]
    check_case(row, np.float32)
    for fn in wrong:
        with pytest.raises(AssertionError):
            check_case(mutant(fn), np.float32)
    with pytest.raises(AssertionError, match="expected ShapeError"):  # a missing error
        check_case(
            Case("sin", row.fn, ((2, 3),), error=spmd.ShapeError, numpy_too=False), np.float64
        )
    with pytest.raises(AssertionError, match="NumPy accepts"):
        check_case(Case("sin", row.fn, ((2, 3),), error=spmd.ShapeError), np.float64)
    with pytest.raises(AssertionError, match="take eager_only off"):  # a row that traces
        check_case(Case("sin", row.fn, ((2, 3),), eager_only=True), np.float64)
    integer = next(c for c in CASES if c.id == "add[]@2x3,2x3")
    with pytest.raises(AssertionError):  # integers compare exactly
        check_case(Case("add", lambda m, x, y: m.add(x, y) + (m is np), ((2, 3), (2, 3))), np.int32)
    check_case(integer, np.int32)
