"""Differential tests (issue 22): every public spmd.numpy, spmd.nn and spmd.lax slicing function
against NumPy over hypothesis-generated calls (tests/differential/ holds the table).

Each example draws one call (shapes of rank 0-4 with 0- and 1-sized axes, negative axes,
keepdims, all 14 dtypes, Python scalars against arrays, the keyword forms of NumPy's signature)
and one placement (raw NumPy operands, device_put ones, ``spmd.jit``, or operands on a random
mesh with random, uneven specs, eagerly or under jit). spmd must give NumPy's dtype, shape and
values (integers exactly, floats to eps-and-length scaled tolerances), or raise where NumPy
raises, with an SpmdError subclass.

Profiles (the environment picks one; both are reproducible unless said otherwise):

- ``SPMD_DIFFERENTIAL_PROFILE=ci`` (the default): 80 examples per function, derandomized,
  about two minutes on 2 cores.
- ``SPMD_DIFFERENTIAL_PROFILE=long``: 500 examples per function, a fresh random search per run.
- ``SPMD_DIFFERENTIAL_EXAMPLES=N`` sets the examples per function in either profile.

For example: ``SPMD_DIFFERENTIAL_PROFILE=long .venv/bin/pytest tests/test_differential.py``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import spmd
import spmd.numpy as snp
from tests.differential import signatures, signatures_more, signatures_namespace
from tests.differential.calls import make_call
from tests.differential.compare import Placement, check, fixed_mesh, placements
from tests.differential.known_bugs import KNOWN_BUGS

_HEALTH = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
settings.register_profile(
    "differential-ci", max_examples=80, derandomize=True, deadline=None,
    suppress_health_check=_HEALTH, database=None, print_blob=True,
)  # fmt: skip
settings.register_profile(
    "differential-long", max_examples=500, derandomize=False, deadline=None,
    suppress_health_check=_HEALTH, print_blob=True,
)  # fmt: skip
_PROFILE = settings.get_profile(f"differential-{os.environ.get('SPMD_DIFFERENTIAL_PROFILE', 'ci')}")
if "SPMD_DIFFERENTIAL_EXAMPLES" in os.environ:
    _PROFILE = settings(_PROFILE, max_examples=int(os.environ["SPMD_DIFFERENTIAL_EXAMPLES"]))

SIGNATURES = (*signatures.SIGS, *signatures_more.SIGS, *signatures_namespace.SIGS)
TABLE = {sig.key: sig for sig in SIGNATURES}
NAMES = {sig.name for sig in TABLE.values()}

# Public names the table leaves out, and why (the coverage test below keeps this honest).
EXCLUDED = {
    **{name: "NumPy's own dtypes, constants and dtype queries" for name in snp.constants.__all__},
    "nn.dot_product_attention": "three arrays whose axes must match, which random calls "
    "rarely draw; the case table checks it against a float64 NumPy formula (tests/cases/nn.py)",
}


def _public() -> set[str]:
    """spmd.numpy's functions: ``__all__``, and the public attributes that join it once the case
    table (tests/cases/) has rows for them (``np.shape(x)`` dispatches to ``snp.shape``);
    spmd.nn's; spmd.lax's slicing."""
    attributes = {n for n, v in vars(snp).items() if callable(v) and not n.startswith("_")}
    names = set(snp.__all__) | attributes | {f"nn.{n}" for n in spmd.nn.__all__}
    lax = {n for n in dir(spmd.lax) if n.startswith("dynamic_")}
    return names | {f"lax.{n}" for n in lax}


def test_every_public_function_is_in_the_table_or_excluded_with_a_reason():
    public = _public()
    assert public - NAMES - set(EXCLUDED) == set(), "add a Sig (or an EXCLUDED reason)"
    assert NAMES - public == set(), "the table names functions spmd does not export"
    assert NAMES & set(EXCLUDED) == set()


@pytest.mark.parametrize("name", sorted(TABLE))
@_PROFILE
@given(data=st.data())
def test_matches_numpy(name, data):
    sig = TABLE[name]
    call = data.draw(sig.calls(), label="call")
    placement = data.draw(placements(call).filter(lambda p: p.mode in sig.modes))
    assume(not any(bug.applies(call, placement) for bug in KNOWN_BUGS.values()))
    check(call, placement, frozenset(sig.plain_errors))


# ------------------------------------------------------------------------- regressions

MESH8 = ((8,), spmd.P("x"))
_U8 = np.array([200, 100], np.uint8)
REGRESSIONS = {  # issue 22's bugs the generated search found (or must find): call, placement
    "pad-per-axis-width": (
        make_call("pad", np.array([[0.0], [8.0]]), [(0, 0), (0, 1)]),
        Placement("numpy_in"),
    ),
    "max-complex-size-1-on-8-devices": (
        make_call("max", np.array([-1 + 1j], np.complex64)),
        Placement("sharded", fixed_mesh((8,)), (spmd.P("x"),)),
    ),
    "einsum-3-operands-common-dtype": (
        make_call("einsum", "i,,->", np.array([True] * 3), np.array(True), np.array(1.0)),
        Placement("numpy_in"),
    ),
    "einsum-3-operands-uint8-no-wrap": (
        make_call("einsum", "i,,->", _U8, np.array(True), np.array(1.0)),
        Placement("jit"),
    ),
}


@pytest.mark.parametrize("case", list(REGRESSIONS))
def test_issue_22_regressions(case):
    call, placement = REGRESSIONS[case]
    check(call, placement)


@pytest.mark.parametrize(
    "bug",
    [
        pytest.param(bug, id=key, marks=pytest.mark.xfail(strict=True, reason=bug.reason))
        for key, bug in KNOWN_BUGS.items()
    ],
)
def test_known_bugs(bug):
    """Open bugs (tests/differential/known_bugs.py): each fails until fixed, then XPASSes."""
    assert bug.applies(bug.call, bug.placement), "the reproduction lies outside its region"
    check(bug.call, bug.placement)


def test_the_check_fails_on_wrong_results():
    """Not vacuous: a wrong value, dtype, NaN, missing error or plain error all fail."""
    x = np.array([1.0, 2.0, np.nan], np.float32)
    check(make_call("sin", x), Placement("eager"))
    wrong = [
        lambda m, a: m.sin(a) + (1e-3 if m is np else 0),
        lambda m, a: m.sin(a).astype(np.float64) if m is np else m.sin(a),
        lambda m, a: np.where(np.isnan(a), 0, np.sin(a)) if m is np else m.sin(a),
        lambda m, a: m.sin(a) if m is np else m.sin(a[:2]),
    ]
    for fn in wrong:
        call = make_call("sin", x)
        call.fn = fn
        with pytest.raises(AssertionError):
            check(call, Placement("eager"))
    integers = make_call("add", np.array([1, 2], np.int64), 1)
    integers.fn = lambda m, a, b: m.add(a, b) + (m is np)
    with pytest.raises(AssertionError, match="differs"):
        check(integers, Placement("jit"))
    refused = make_call("sin", x)
    refused.fn = lambda m, a: m.sin(a) if m is snp else m.reshape(a, (7,))
    with pytest.raises(AssertionError, match="NumPy raises"):
        check(refused, Placement("eager"))  # spmd gives a result where NumPy raises
    refused.fn = lambda m, a: m.reshape(a, (7,)) if m is np else [][0]
    with pytest.raises(AssertionError, match="not an SpmdError"):
        check(refused, Placement("eager"))
