"""lax.scan and lax.fori_loop against Python loops; scan's carry-type check (shapes,
dtypes, varying axes) and pcast, which fixes the varying axes; device_get."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P
from spmd.lax import fori_loop, pcast, pvary, scan


def cumulative(c, x):
    c = c * 0.5 + x
    return c, c.sum()


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("jitted", [False, True])
def test_scan_matches_a_python_loop(reverse, jitted):
    rng = np.random.default_rng(0)
    xs, init = rng.normal(size=(5, 3)), rng.normal(size=3)

    def run(i, x):
        return scan(cumulative, i, x, reverse=reverse)

    carry, ys = (spmd.jit(run) if jitted else run)(init, xs)
    want_c, want_ys = init, []
    for x in xs[::-1] if reverse else xs:
        want_c, y = cumulative(want_c, x)
        want_ys.append(y)
    np.testing.assert_allclose(carry, want_c, rtol=1e-12)
    np.testing.assert_allclose(ys, want_ys[::-1] if reverse else want_ys, rtol=1e-12)


def test_scan_over_pytrees_and_with_length_only():
    xs = {"a": np.arange(4.0), "b": np.ones((4, 2))}
    carry, ys = scan(lambda c, x: (c + x["a"], (x["b"] * c, c)), 0.0, xs)
    assert float(carry) == 6.0
    np.testing.assert_array_equal(ys[1], [0.0, 0.0, 1.0, 3.0])
    np.testing.assert_array_equal(ys[0], np.outer([0.0, 0.0, 1.0, 3.0], [1.0, 1.0]))
    count, none = scan(lambda c, _: (c + 1, ()), 0, None, length=3)
    assert int(count) == 3 and none == ()


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (lambda c, x: (snp.ones(4), x), "input carry has type float64\\[3\\]"),
        (lambda c, x: (c.astype(np.float32), x), "float32\\[3\\]"),
        (lambda c, x: ([c], x), "same pytree structure"),
        (lambda c, x: c, "must return a pair"),
    ],
)
def test_scan_rejects_a_carry_that_changes_type(body, match):
    with pytest.raises(spmd.SpmdTypeError, match=match):
        scan(body, np.zeros(3), np.zeros((2, 3)))


def test_scan_lengths_must_agree():
    with pytest.raises(spmd.ShapeError, match=r"sizes \[2, 3\]"):
        scan(lambda c, x: (c, x), 0.0, (np.zeros(2), np.zeros(3)))
    with pytest.raises(spmd.ShapeError, match="give length="):
        scan(lambda c, x: (c, x), 0.0, None)


@pytest.mark.parametrize("jitted", [False, True])
def test_a_carry_that_starts_replicated_needs_pcast_inside_shard_map(jitted):
    mesh = spmd.make_mesh((2,), ("i",))

    def swap(carry, _):
        return (carry[1], carry[0]), ()

    def broken(x, y):
        (a, b), _ = scan(swap, (x, y), None, length=2)
        return a, b

    def fixed(x, y):
        return broken(x, pcast(y, "i", to="varying"))

    def call(f):
        g = spmd.shard_map(f, mesh=mesh, in_specs=(P("i"), P()), out_specs=P("i"))
        return (spmd.jit(g) if jitted else g)(np.arange(6.0), np.arange(3.0))

    with pytest.raises(
        spmd.SpmdTypeError, match=r"\{V:i\}.*pcast\(\.\.\., \('i',\), to='varying'\)"
    ):
        call(broken)
    a, b = call(fixed)
    np.testing.assert_array_equal(a, np.arange(6.0))
    np.testing.assert_array_equal(b, [0.0, 1.0, 2.0, 0.0, 1.0, 2.0])


def test_pvary_outside_shard_map_and_unknown_casts_are_errors():
    with pytest.raises(spmd.AxisNameError, match="'i' is not bound"):
        pvary(np.ones(2), "i")
    mesh = spmd.make_mesh((2,), ("i",))
    f = spmd.shard_map(lambda b: pcast(b, "i", to="unreduced"), mesh=mesh, in_specs=P("i"),
                       out_specs=P("i"))  # fmt: skip
    with pytest.raises(spmd.SpmdValueError, match="to='unreduced'"):
        f(np.ones(2))


def test_fori_loop_matches_a_python_loop_eagerly_and_under_jit():
    def body(i, v):
        return v * 2 + i

    want = np.arange(3.0)
    for i in range(2, 6):
        want = body(i, want)
    np.testing.assert_array_equal(fori_loop(2, 6, body, np.arange(3.0)), want)
    np.testing.assert_array_equal(
        spmd.jit(lambda v: fori_loop(2, 6, body, v))(np.arange(3.0)), want
    )
    with pytest.raises(spmd.SpmdTypeError, match="loop value"):
        fori_loop(0, 2, lambda i, v: v[None], np.zeros(2))


def test_device_get_returns_numpy_leaves():
    tree = {"w": spmd.device_put(np.arange(4.0)), "n": 3}
    got = spmd.device_get(tree)
    assert type(got["w"]) is np.ndarray and got["n"] == 3
    np.testing.assert_array_equal(got["w"], np.arange(4.0))
