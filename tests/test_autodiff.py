"""Derivatives of every differentiable row of the case table, in float64: jvp against central
finite differences, vjp against jvp (the dot-product test), eagerly and under jit (a row whose
``reverse_raises`` names the mode: vjp raises JAX's error there); and the meta-test that a
differentiable row's primitives all have rules."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from tests.cases import CASES, DISCONTINUOUS, make_inputs, numpy_result
from tests.test_partition import SHARDED, mesh_of, put, random_spec, rng_for

EPS = 1e-6
# Rows whose derivative is zero almost everywhere, or not a function of the inputs' values
# (indices, shapes): their jvp must be zero, which finite differences confirm away from jumps.
PIECEWISE_CONSTANT = DISCONTINUOUS - {"where", "_getitem", "take", "nn.relu", "remainder", "mod"}
PIECEWISE_CONSTANT -= {"lax.rem", "lax.select_n", "lax.top_k", "lax.linalg.lu"}  # slopes between


def differentiable(case) -> bool:
    """Not the eager-only rows (EAGER_ONLY in tests/cases/table.py): jvp and vjp trace, and
    their result's shape depends on the values."""
    return (
        not case.eager_only
        and case.error is None
        and case.values
        and np.float64 in case.dtypes
        and case.domain != "special"
        and case.family != "creation"
        and len(case.shapes) > 0
    )


def jittered(case, seed: int = 0) -> tuple[list, list]:
    """The row's float64 inputs moved off ties, zeros and integers (kinks and jumps), and its
    index inputs."""
    inputs = make_inputs(case, np.float64, seed)
    data, indices = inputs[: len(case.shapes)], inputs[len(case.shapes) :]
    rng = np.random.default_rng(seed + 1)
    moved = []
    for x in data:
        if x.dtype != np.float64:
            moved.append(x)
            continue
        x = np.asarray(
            x + rng.uniform(1e-3, 4e-3, size=x.shape) * rng.choice([-1, 1], size=x.shape)
        )
        if case.domain == "unit":
            x = np.clip(x, -0.99, 0.99)
        if case.domain == "positive":
            x = np.abs(x)
        moved.append(x)
    return moved, indices


def finite_difference(case, data, indices, tangents):
    def f(shift):
        xs = [np.asarray(x + shift * t) if t is not None else x
              for x, t in zip(data, tangents, strict=True)]  # fmt: skip
        return np.asarray(numpy_result(case, [*xs, *indices]), dtype=np.float64)

    return (f(EPS) - f(-EPS)) / (2 * EPS)


def float64_result(case) -> bool:
    """Whether the row gives a float64 array (not an index, a bool or a shape) to
    differentiate."""
    data, indices = jittered(case)
    out = numpy_result(case, [*data, *indices])
    return isinstance(out, np.ndarray | np.generic) and np.asarray(out).dtype == np.float64


ROWS = [c for c in CASES if differentiable(c) and float64_result(c)]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", ROWS, ids=[c.id for c in ROWS])
def test_jvp_matches_finite_differences_and_vjp_matches_jvp(case, jitted):
    check_derivatives(case, jitted, lambda x, i: x)


SHARDED_ROWS = ROWS[::3]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", SHARDED_ROWS, ids=[c.id for c in SHARDED_ROWS])
def test_derivatives_on_sharded_inputs_uneven_included(case, jitted):
    """The same checks with each input split by a random spec over a random mesh (the
    table's shapes split unevenly, and into empty blocks, on 2-, 4- and 8-way axes)."""
    rng = rng_for("autodiff", case.id)
    mesh = mesh_of(SHARDED[int(rng.integers(len(SHARDED)))])

    def place(x, i):
        return put(x, mesh, random_spec(rng, mesh, x.ndim))

    check_derivatives(case, jitted, place)


def check_derivatives(case, jitted: bool, place) -> None:
    data, indices = jittered(case)
    out = numpy_result(case, [*data, *indices])
    rng = np.random.default_rng(7)
    floats = [x.dtype == np.float64 for x in data]
    tangents = [rng.normal(size=x.shape) if f else None for x, f in zip(data, floats, strict=True)]
    positions = [i for i, f in enumerate(floats) if f]

    def f(*xs):
        full = list(data)
        for i, x in zip(positions, xs, strict=True):
            full[i] = x
        return case.fn(snp, *full, *indices)

    primals = [place(data[i], i) for i in positions]
    chosen = [tangents[i] for i in positions]

    def both(*xs):
        return spmd.jvp(f, xs, chosen)

    value, t_out = (spmd.jit(both) if jitted else both)(*primals)
    np.testing.assert_allclose(np.asarray(value), out, rtol=1e-12, atol=1e-12)
    want = (
        np.zeros(np.shape(out))
        if case.name in PIECEWISE_CONSTANT
        else finite_difference(case, data, indices, tangents)
    )
    defined = np.isfinite(want) & np.isfinite(out)  # outside the domain (log of -1): no check
    np.testing.assert_allclose(np.asarray(t_out)[defined], want[defined], rtol=1e-5, atol=1e-6)

    ct = rng.normal(size=np.shape(out))

    def pulled(*xs):
        _, back = spmd.vjp(f, *xs)
        return back(ct)

    if ("jit" if jitted else "eager") in case.reverse_raises:
        with pytest.raises(spmd.SpmdTypeError, match="Reverse-mode differentiation does not"):
            (spmd.jit(pulled) if jitted else pulled)(*primals)
        return
    cts = (spmd.jit(pulled) if jitted else pulled)(*primals)
    lhs = float(np.sum(ct * np.asarray(t_out)))
    rhs = sum(float(np.sum(np.asarray(c) * t)) for c, t in zip(cts, chosen, strict=True))
    if np.isfinite(lhs):  # a NaN derivative (the mean of nothing) has no finite pairing
        np.testing.assert_allclose(lhs, rhs, rtol=1e-9, atol=1e-9)


def primitives_of(program) -> set:
    found = set()
    for eqn in program.equations:
        found.add(eqn.primitive)
        for body in eqn.params.get("bodies", ()) or (
            [eqn.params["body"]] if "body" in eqn.params else []
        ):
            found |= primitives_of(body)
    return found


# Differentiable rows that cannot be traced with abstract inputs because they need concrete
# values, by case id: id -> (the error tracing raises, why). Every other row must trace, and a
# listed row must still raise that error (one that starts tracing is taken off the list), so a
# tracing regression fails the meta-test below instead of shrinking its coverage. None today.
NEEDS_CONCRETE_VALUES: dict[str, tuple[type[Exception], str]] = {}


def test_rows_said_to_need_concrete_values_exist():
    ids = {c.id for c in ROWS}
    assert not set(NEEDS_CONCRETE_VALUES) - ids, "listed rows that are not differentiable rows"


def test_every_differentiable_row_has_jvp_and_batch_rules():
    """A primitive a differentiable row uses without a jvp or batch rule is named here."""
    from spmd.core.trace import ProgramTrace, tracing

    missing = {}
    for case in ROWS:
        data, indices = jittered(case)
        trace = ProgramTrace()
        tracers = [trace.new_arg(spmd.typeof(x).strong()) for x in data]
        if case.id in NEEDS_CONCRETE_VALUES:
            error, why = NEEDS_CONCRETE_VALUES[case.id]
            try:
                with tracing(trace):
                    case.fn(snp, *tracers, *indices)
            except error:
                continue
            pytest.fail(f"{case.id} traces now ({why}): take it off NEEDS_CONCRETE_VALUES")
        with tracing(trace):
            out = case.fn(snp, *tracers, *indices)
        program = trace.finish([t.node for t in tracers], spmd.tree_util.tree_leaves(out))
        for primitive in primitives_of(program):
            for rule in ("jvp", "batch"):
                if getattr(primitive.rules, rule) is None:
                    missing.setdefault(f"{primitive.name}.{rule}", case.id)
    assert not missing, f"primitives without rules (and a row that uses them): {missing}"
