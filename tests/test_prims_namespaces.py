"""Every row of the case table, traced once, runs through the core interpreter on other array
namespaces than NumPy (array_api_strict, PyTorch through array-api-compat) and equals NumPy's
result, dtypes included.

Each primitive implementation takes its array namespace ``xp`` (spmd/core/primitive.py): here
the row's Program runs with ``eval_program(program, consts, args, xp=xp)`` on ``xp``'s arrays,
so a NumPy call leaking into an implementation fails (array_api_strict accepts nothing else).
A row runs on a namespace where every dtype its program holds is in ``dtypes_held(xp)``; the
others are left out at collection, and ``test_rows_each_namespace_runs`` counts both.
"""

from __future__ import annotations

import warnings

import array_api_strict
import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.core.interpret import eval_program
from spmd.prims.namespace import dtypes_held
from spmd.tree_util import tree_unflatten
from tests.cases import CASES, Case, assert_matches, make_inputs, numpy_result

try:
    import array_api_compat.torch as torch_namespace
except ImportError:  # CI's oldest-Python pass has no torch
    torch_namespace = None

NAMESPACES = {"array_api_strict": array_api_strict, "torch": torch_namespace}
MISSING = {"torch": "torch or array-api-compat is not installed (the torch extra installs both)"}

# The only dtypes each namespace may leave rows out for, and the share of the table's runs it
# must take at least (the count depends on the installed NumPy: 10467 and 10613 on NumPy 2.4):
# a namespace that loses rows (a dtype dropped from dtypes_held) fails
# test_rows_each_namespace_runs.
MAY_LACK = {"array_api_strict": {"float16"}, "torch": {"uint16", "uint32", "uint64"}}
AT_LEAST_SHARE = 0.97  # the rows of bool inputs NumPy takes to float16 grow with the table


def _quiet():
    warnings.simplefilter("ignore")
    return np.errstate(all="ignore")


def _trace(case: Case, dtype):
    """The row's Program and output tree for its inputs on ``dtype``, or the error tracing
    raised (an error row raises before any implementation runs: it is not run here)."""
    inputs = make_inputs(case, dtype)
    with warnings.catch_warnings(), _quiet():
        try:
            traced, _ = spmd.jit(lambda *xs: case.fn(snp, *xs)).trace(*inputs)
        except Exception as error:  # the row's own error, or a bug test_cases.py shows too
            return inputs, None, None, error
    return inputs, traced.program, traced.out_tree, None


def _program_dtypes(program) -> set[np.dtype]:
    """Every dtype a value of ``program`` has, and every dtype a parameter names."""
    avals = [v.aval for v in (*program.constvars, *program.invars, *program.outvars)]
    dtypes = {a.dtype for a in avals}
    for eqn in program.equations:
        dtypes.update(v.aval.dtype for v in eqn.outputs)
        dtypes.update(a.aval.dtype for a in eqn.inputs)
        dtypes.update(np.dtype(v) for v in eqn.params.values() if isinstance(v, np.dtype))
    return dtypes


RUNS: dict[str, list] = {name: [] for name in NAMESPACES}  # (case, dtype, traced) per namespace
LEFT_OUT: dict[str, dict[str, int]] = {name: {} for name in NAMESPACES}  # dtype name -> runs
TRACED: list = []  # (case, dtype, inputs, program, out_tree) of every row that runs somewhere
for _case in CASES:
    if _case.error is not None or _case.eager_only:  # eager-only rows cannot be traced
        continue
    for _dtype in _case.dtypes:
        _inputs, _program, _tree, _error = _trace(_case, _dtype)
        _entry = (_case, _dtype, _inputs, _program, _tree, _error)
        _dtypes = set() if _program is None else _program_dtypes(_program)
        for _name, _xp in NAMESPACES.items():
            _held = dtypes_held(_xp) if _xp is not None else frozenset(_dtypes)
            _missing = _dtypes - _held
            if _missing:
                _key = ",".join(sorted(d.name for d in _missing))
                LEFT_OUT[_name][_key] = LEFT_OUT[_name].get(_key, 0) + 1
            else:
                RUNS[_name].append(_entry)

GROUPS: dict[tuple[str, str, object], list] = {}
for _name, _runs in RUNS.items():
    for _entry in _runs:
        GROUPS.setdefault((_name, _entry[0].name, _entry[1]), []).append(_entry)


def to_host(x) -> np.ndarray:
    """A result of the namespace as a NumPy array (on the host)."""
    if hasattr(x, "cpu"):  # a torch tensor, maybe on a GPU
        x = x.cpu()
    return np.asarray(x)


def run_on(xp, program, out_tree, inputs, case: Case):
    """The program evaluated on ``xp``'s arrays, its results as spmd Arrays in the row's tree."""
    # NumPy constants, and Arrays the trace closed over (lax.clamp's bounds), as the
    # runtime gives them to a device of that namespace
    consts = [xp.asarray(np.asarray(c)) if isinstance(c, np.ndarray | np.generic | spmd.Array)
              else c for c in program.consts]  # fmt: skip
    args = [xp.asarray(x) for x in inputs]
    with warnings.catch_warnings(), _quiet():
        outs = eval_program(program, consts, args, xp=xp)
    arrays = []
    for out, aval in zip(outs, program.out_avals, strict=True):
        host = to_host(out)
        assert (host.dtype, host.shape) == (aval.dtype, aval.shape), (
            f"{case.id}: the implementation gave {host.dtype}{list(host.shape)} for {aval}"
        )
        arrays.append(spmd.device_put(host))
    return tree_unflatten(out_tree, arrays)


def _dtype_id(dtype) -> str:
    return "nodtype" if dtype is None else np.dtype(dtype).name


def _params():
    params = []
    for name, fn, dtype in GROUPS:
        marks = ()
        if NAMESPACES[name] is None:
            marks = (pytest.mark.skip(reason=MISSING[name]),)
        params.append(pytest.param(name, fn, dtype, id=f"{name}-{fn}-{_dtype_id(dtype)}",
                                   marks=marks))  # fmt: skip
    return params


@pytest.mark.parametrize(("namespace", "name", "dtype"), _params())
def test_rows_match_numpy_on_namespace(namespace, name, dtype):
    xp = NAMESPACES[namespace]
    rows = GROUPS[namespace, name, dtype]
    failures = []
    for case, _, inputs, program, out_tree, error in rows:
        try:
            if error is not None:
                raise AssertionError(f"tracing raised {type(error).__name__}: {error}")
            expected = numpy_result(case, inputs)
            result = run_on(xp, program, out_tree, inputs, case)
            assert_matches(result, expected, case.values)
        except Exception as failure:  # every row's failure is listed, none hidden
            failures.append(f"{case.id}: {type(failure).__name__}: {failure}")
    if failures:
        pytest.fail(
            f"{len(failures)} of {len(rows)} rows of {name} on {_dtype_id(dtype)} differ from "
            f"NumPy on {namespace}:\n" + "\n".join(failures),
            pytrace=False,
        )


@pytest.mark.parametrize("namespace", list(NAMESPACES))
def test_rows_each_namespace_runs(namespace, capsys):
    """Lists how many runs (row, dtype) each namespace takes, and which dtypes keep the
    others out; fails when a row is left out for another dtype than ``MAY_LACK`` says, or
    the runs fall below ``AT_LEAST_SHARE`` of the table's."""
    if NAMESPACES[namespace] is None:
        pytest.skip(MISSING[namespace])
    runs, left_out = len(RUNS[namespace]), LEFT_OUT[namespace]
    with capsys.disabled():
        print(
            f"\n{namespace}: {runs} runs of case-table rows; left out (dtypes not held): "
            + (", ".join(f"{k}: {v}" for k, v in sorted(left_out.items())) or "none")
        )
    lacking = {name for key in left_out for name in key.split(",")}
    assert lacking <= MAY_LACK[namespace], (namespace, lacking)
    assert runs >= AT_LEAST_SHARE * (runs + sum(left_out.values())), (namespace, runs, left_out)
