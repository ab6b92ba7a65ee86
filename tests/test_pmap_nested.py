"""Nested pmap: maps over grids of devices whose axes are the nested axis names, with
collectives over one axis or several, checked against NumPy loops over the grid."""

import itertools

import numpy as np
import pytest

import spmd
from spmd import P
from tests.pmap_reference import assert_close, sample

lax = spmd.lax

# --- nested pmap ----------------------------------------------------------------------------


def test_nested_pmap_acceptance_case():
    x = np.arange(24).reshape(2, 4, 3)
    inner = spmd.pmap(
        lambda v: spmd.lax.psum(v, "cols") + spmd.lax.axis_index("rows") * 100, "cols"
    )
    out = spmd.pmap(inner, "rows")(x)
    want = np.array([[[18, 22, 26]] * 4, [[166, 170, 174]] * 4])
    np.testing.assert_array_equal(np.asarray(out), want)
    assert out.shape == (2, 4, 3)
    assert out.sharding.mesh.shape == {"rows": 2, "cols": 4}
    assert out.sharding.spec == P("rows", "cols")


def grid_reference(f, x, rows, cols):
    """f(r, c, x[r, c]) for every grid position, stacked back into the (rows, cols) grid."""
    return np.stack([np.stack([f(r, c, x[r, c]) for c in range(cols)]) for r in range(rows)])


@pytest.mark.parametrize("rows, cols", [(2, 4), (4, 2), (1, 8), (3, 2), (2, 3), (1, 1)])
def test_nested_psum_over_both_axes_and_over_the_outer_axis_only(rows, cols):
    rng = np.random.default_rng([rows, cols])
    x = sample(rng, (rows, cols, 3), np.float64)
    everything = np.zeros(3)
    by_col = [np.zeros(3) for _ in range(cols)]
    for r, c in itertools.product(range(rows), range(cols)):
        everything = everything + x[r, c]
        by_col[c] = by_col[c] + x[r, c]

    def body(v):
        return (
            lax.psum(v, ("rows", "cols")),
            lax.psum(v, "rows"),
            lax.axis_index(("rows", "cols")),
            lax.axis_index("cols"),
        )

    both, outer, linear, col = spmd.pmap(spmd.pmap(body, "cols"), "rows")(x)
    np.testing.assert_array_equal(
        np.asarray(both), grid_reference(lambda r, c, v: everything, x, rows, cols)
    )
    np.testing.assert_array_equal(
        np.asarray(outer), grid_reference(lambda r, c, v: by_col[c], x, rows, cols)
    )
    want_linear = np.array([[r * cols + c for c in range(cols)] for r in range(rows)])
    np.testing.assert_array_equal(np.asarray(linear), want_linear)
    np.testing.assert_array_equal(np.asarray(col), np.array([list(range(cols))] * rows))


def test_nested_all_gather_over_the_flattened_grid_reads_rows_major():
    x = np.arange(2 * 4 * 2, dtype=np.float64).reshape(2, 4, 2)
    out = spmd.pmap(spmd.pmap(lambda v: lax.all_gather(v, ("rows", "cols")), "cols"), "rows")(x)
    flat = np.stack([x[r, c] for r in range(2) for c in range(4)])
    np.testing.assert_array_equal(np.asarray(out), grid_reference(lambda r, c, v: flat, x, 2, 4))


def test_nested_ppermute_over_the_inner_axis_stays_within_a_row():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    perm = [(c, (c + 1) % 4) for c in range(4)]
    out = spmd.pmap(spmd.pmap(lambda v: lax.ppermute(v, "cols", perm), "cols"), "rows")(x)
    np.testing.assert_array_equal(
        np.asarray(out), grid_reference(lambda r, c, v: x[r, (c - 1) % 4], x, 2, 4)
    )


def test_outer_function_computes_between_the_two_pmaps():
    rng = np.random.default_rng(7)
    x = sample(rng, (2, 4, 3), np.float64)
    inner = spmd.pmap(lambda v: v * lax.axis_index("cols") + lax.psum(v, "rows"), "cols")

    def outer(block):  # block: (4, 3), the row's slices
        mapped = inner(block * 2)
        return mapped.sum(axis=0) - block[0]

    out = spmd.pmap(outer, "rows")(x)
    want = []
    for r in range(2):
        total = np.zeros(3)
        for c in range(4):
            row_sum = sum(x[rr, c] * 2 for rr in range(2))
            total = total + x[r, c] * 2 * c + row_sum
        want.append(total - x[r, 0])
    np.testing.assert_allclose(np.asarray(out), np.stack(want))
    assert out.sharding.spec == P("rows")


def test_inner_pmap_with_in_axes_1_and_a_broadcast_argument():
    rng = np.random.default_rng(8)
    x = sample(rng, (2, 5, 4), np.int32)  # rows on axis 0, cols on axis 2 of x
    w = sample(rng, (5,), np.int32)

    def outer(block, weight):  # block: (5, 4)
        return spmd.pmap(lambda v, u: v * u + lax.axis_index("rows"), "cols", in_axes=(1, None))(
            block, weight
        )

    out = spmd.pmap(outer, "rows", in_axes=(0, None))(x, w)
    want = np.stack([np.stack([x[r, :, c] * w + r for c in range(4)]) for r in range(2)])
    assert_close(out, want)


@pytest.mark.parametrize("inner_out, outer_out", [(0, 0), (1, 0), (0, 1), (1, 2), (-1, -1)])
def test_nested_out_axes(inner_out, outer_out):
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    inner = spmd.pmap(lambda v: v + lax.axis_index("cols"), "cols", out_axes=inner_out)
    out = spmd.pmap(inner, "rows", out_axes=outer_out)(x)
    rows = [np.stack([x[r, c] + c for c in range(4)], axis=inner_out) for r in range(2)]
    want = np.stack(rows, axis=outer_out)
    np.testing.assert_array_equal(np.asarray(out), want)


def test_nested_inner_out_axes_none_for_a_value_psummed_over_the_inner_axis():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    body = lambda v: lax.psum(v, "cols") + lax.axis_index("rows")  # noqa: E731
    out = spmd.pmap(spmd.pmap(body, "cols", out_axes=None), "rows")(x)
    want = np.stack([x[r, 0] + x[r, 1] + x[r, 2] + x[r, 3] + r for r in range(2)])
    np.testing.assert_array_equal(np.asarray(out), want)
    assert out.shape == (2, 3)


def test_nested_out_axes_none_checks_each_level():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    with pytest.raises(spmd.ShardingError, match="varies over 'cols'"):
        spmd.pmap(spmd.pmap(lambda v: v, "cols", out_axes=None), "rows")(x)
    only_cols = spmd.pmap(lambda v: lax.psum(v, "cols"), "cols", out_axes=None)
    with pytest.raises(spmd.ShardingError, match="varies over 'rows'"):
        spmd.pmap(only_cols, "rows", out_axes=None)(x)
    both = spmd.pmap(lambda v: lax.psum(v, ("rows", "cols")), "cols", out_axes=None)
    out = spmd.pmap(both, "rows", out_axes=None)(x)
    total = np.zeros(3)
    for r, c in itertools.product(range(2), range(4)):
        total = total + x[r, c]
    np.testing.assert_array_equal(np.asarray(out), total)
    assert out.is_fully_replicated


def test_inner_broadcast_argument_that_varies_over_the_outer_axis():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    w = np.arange(2 * 3, dtype=np.float64).reshape(2, 3) - 2

    def outer(block, weight):
        return spmd.pmap(lambda v, u: v * u, "cols", in_axes=(0, None))(block, weight)

    out = spmd.pmap(outer, "rows")(x, w)
    np.testing.assert_array_equal(
        np.asarray(out), grid_reference(lambda r, c, v: v * w[r], x, 2, 4)
    )


def test_sibling_inner_pmaps_feed_each_other():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)

    def outer(block):
        shifted = spmd.pmap(lambda v: v + lax.axis_index("cols"), "cols")(block)
        doubled = spmd.pmap(lambda v: v * 2, "cols")(block)
        summed = spmd.pmap(lambda a, b: lax.psum(a, "cols") - b, "cols")(shifted, doubled)
        return spmd.pmap(lambda v: v + 1, "cols", in_axes=1, out_axes=1)(summed.T)

    out = spmd.pmap(outer, "rows")(x)
    want = np.zeros((2, 3, 4))
    for r in range(2):
        total = np.zeros(3)
        for c in range(4):
            total = total + x[r, c] + c
        for c in range(4):
            want[r, :, c] = total - x[r, c] * 2 + 1
    np.testing.assert_array_equal(np.asarray(out), want)


def test_sibling_inner_pmaps_over_one_name_need_one_size():
    def outer(block):
        return (
            spmd.pmap(lambda v: v, "cols")(block).sum()
            + spmd.pmap(lambda v: v, "cols")(block[:2]).sum()
        )

    with pytest.raises(spmd.ShapeError, match="'cols' have sizes 4 and 2"):
        spmd.pmap(outer, "rows")(np.ones((2, 4, 3)))


def test_nested_collectives_over_tuples_and_the_outer_axis():
    grid = lambda body, x: spmd.pmap(spmd.pmap(body, "cols"), "rows")(x)  # noqa: E731
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    ring = [(i, (i + 1) % 8) for i in range(8)]
    shifted = grid(lambda v: lax.ppermute(v, ("rows", "cols"), ring), x)
    flat = [x[r, c] for r in range(2) for c in range(4)]
    want = grid_reference(lambda r, c, v: flat[(r * 4 + c - 1) % 8], x, 2, 4)
    np.testing.assert_array_equal(np.asarray(shifted), want)

    y = np.arange(2 * 4 * 2, dtype=np.float64).reshape(2, 4, 2)  # dim 0 == rows' size
    exchanged = grid(lambda v: lax.all_to_all(v, "rows", 0, 0), y)
    want = grid_reference(lambda r, c, v: np.array([y[0, c][r], y[1, c][r]]), y, 2, 4)
    np.testing.assert_array_equal(np.asarray(exchanged), want)

    z = np.arange(2 * 4 * 8, dtype=np.float64).reshape(2, 4, 8)  # dim 0 == 2 * 4
    scattered = grid(lambda v: lax.psum_scatter(v, ("rows", "cols")), z)
    total = np.zeros(8)
    for r, c in itertools.product(range(2), range(4)):
        total = total + z[r, c]
    want = np.array([[total[r * 4 + c] for c in range(4)] for r in range(2)])
    np.testing.assert_array_equal(np.asarray(scattered), want)


def test_three_levels_of_pmap_map_over_a_2x2x2_grid():
    rng = np.random.default_rng(9)
    x = sample(rng, (2, 2, 2, 3), np.float64)

    def body(v):
        index = lax.axis_index(("a", "b", "c"))
        return lax.psum(v, ("a", "c")) * 10 + index, lax.pmax(v, "b")

    f = spmd.pmap(spmd.pmap(spmd.pmap(body, "c"), "b"), "a")
    summed, maxed = f(x)
    want_sum = np.zeros_like(x)
    want_max = np.zeros_like(x)
    for a, b, c in itertools.product(range(2), repeat=3):
        total = np.zeros(3)
        for aa, cc in itertools.product(range(2), repeat=2):
            total = total + x[aa, b, cc]
        want_sum[a, b, c] = total * 10 + (a * 4 + b * 2 + c)
        want_max[a, b, c] = np.maximum(x[a, 0, c], x[a, 1, c])
    np.testing.assert_array_equal(np.asarray(summed), want_sum)
    np.testing.assert_array_equal(np.asarray(maxed), want_max)
    assert summed.sharding.mesh.shape == {"a": 2, "b": 2, "c": 2}
    assert summed.sharding.spec == P("a", "b", "c")


# --- chained nested pmaps -------------------------------------------------------------------


def test_chained_nested_pmaps_over_the_same_axes_move_no_data():
    x = np.arange(24.0).reshape(2, 4, 3)
    g = spmd.pmap(spmd.pmap(lambda v: v + 1, "cols"), "rows")
    y = g(x)
    with spmd.debug.count_collectives() as counts:
        z = g(y)
    np.testing.assert_array_equal(np.asarray(z), x + 2)
    assert counts.total == 0


def counted(f, *args):
    with spmd.debug.count_collectives() as counts:
        out = f(*args)
    return out, counts


@pytest.mark.parametrize("rows, cols", [(2, 4), (4, 2), (1, 8), (3, 2), (2, 3)])
def test_chained_nested_pmaps_on_any_grid_move_no_data(rows, cols):
    x = np.arange(rows * cols * 3, dtype=np.float64).reshape(rows, cols, 3)
    body = lambda v: v * 2 + lax.axis_index("cols") - lax.axis_index("rows")  # noqa: E731
    g = spmd.pmap(spmd.pmap(body, "cols"), "rows")
    once = grid_reference(lambda r, c, v: v * 2 + c - r, x, rows, cols)
    y = g(x)
    z, counts = counted(g, y)
    np.testing.assert_array_equal(
        np.asarray(z), grid_reference(lambda r, c, v: v * 2 + c - r, once, rows, cols)
    )
    assert counts.total == 0


def test_chained_nested_pmaps_run_only_the_collectives_their_body_writes():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    body = lambda v: lax.psum(v, "cols") * (lax.axis_index("rows") + 1) + v  # noqa: E731
    g = spmd.pmap(spmd.pmap(body, "cols"), "rows")

    def reference(x):
        return grid_reference(lambda r, c, v: x[r].sum(axis=0) * (r + 1) + v, x, 2, 4)

    y = g(x)
    z, counts = counted(g, y)
    np.testing.assert_array_equal(np.asarray(z), reference(reference(x)))
    assert dict(counts) == {"all-reduce": 1}


def test_chained_outer_work_on_other_operands_and_on_inner_results():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    s = np.arange(2 * 3, dtype=np.float64).reshape(2, 3) - 3
    first = spmd.pmap(spmd.pmap(lambda v: v - 1, "cols"), "rows")
    inner = spmd.pmap(lambda v, u: v * u + lax.axis_index("cols"), "cols", in_axes=(0, None))
    g = spmd.pmap(lambda block, scale: inner(block, scale * 2), "rows")
    y = first(x)
    z, counts = counted(g, y, s)
    np.testing.assert_array_equal(
        np.asarray(z), grid_reference(lambda r, c, v: (v - 1) * s[r] * 2 + c, x, 2, 4)
    )
    assert counts.total == 0

    # the inner results summed over 'cols' must be gathered, the operand need not be
    h = spmd.pmap(lambda block: inner(block, 3.0).sum(axis=0), "rows")
    _, from_host = counted(h, x - 1)
    z, counts = counted(h, y)
    np.testing.assert_array_equal(
        np.asarray(z),
        np.stack([((x[r] - 1) * 3 + np.arange(4)[:, None]).sum(axis=0) for r in range(2)]),
    )
    assert dict(counts) == dict(from_host)


def test_chained_outer_work_before_the_inner_pmap_gathers_and_stays_right():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    first = spmd.pmap(spmd.pmap(lambda v: v + 1, "cols"), "rows")
    inner = spmd.pmap(lambda v: v + lax.axis_index("cols"), "cols")
    g = spmd.pmap(lambda block: inner(block[::-1] * 2), "rows")
    z = g(first(x))
    np.testing.assert_array_equal(
        np.asarray(z), grid_reference(lambda r, c, v: (x[r, 3 - c] + 1) * 2 + c, x, 2, 4)
    )


@pytest.mark.parametrize(
    "outer_axis, inner_axis", [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (-1, -1)]
)
def test_chained_nested_pmaps_with_in_axes_matching_out_axes_move_no_data(outer_axis, inner_axis):
    shape = [3, 3, 3]
    outer_dim = outer_axis % 3
    shape[outer_dim] = 2
    shape[[d for d in range(3) if d != outer_dim][inner_axis]] = 4
    x = np.arange(24, dtype=np.float64).reshape(shape)
    inner = spmd.pmap(lambda v: v * 2 - 1, "cols", in_axes=inner_axis, out_axes=inner_axis)
    g = spmd.pmap(inner, "rows", in_axes=outer_axis, out_axes=outer_axis)
    y = g(x)
    z, counts = counted(g, y)
    np.testing.assert_array_equal(np.asarray(z), (x * 2 - 1) * 2 - 1)
    assert counts.total == 0


def test_chained_nested_pmaps_after_a_different_out_axes_move_data_and_stay_right():
    x = np.arange(2 * 4 * 4, dtype=np.float64).reshape(2, 4, 4)
    first = spmd.pmap(spmd.pmap(lambda v: v + lax.axis_index("cols"), "cols", out_axes=1), "rows")
    g = spmd.pmap(spmd.pmap(lambda v: v * 10 + lax.axis_index("cols"), "cols"), "rows")
    y = first(x)
    want_y = np.stack([np.stack([x[r, c] + c for c in range(4)], axis=1) for r in range(2)])
    np.testing.assert_array_equal(np.asarray(y), want_y)
    z = g(y)
    np.testing.assert_array_equal(
        np.asarray(z), grid_reference(lambda r, c, v: v * 10 + c, want_y, 2, 4)
    )


def test_chained_broadcast_argument_split_over_the_inner_axis_moves_no_data():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    w = np.arange(4 * 3, dtype=np.float64).reshape(4, 3) - 5
    first = spmd.pmap(spmd.pmap(lambda v: v + 1, "cols"), "rows")
    inner = spmd.pmap(lambda v, u: v * u + lax.axis_index("rows"), "cols")
    g = spmd.pmap(lambda block, weight: inner(block, weight), "rows", in_axes=(0, None))
    y = first(x)
    w_split = spmd.device_put(w, spmd.NamedSharding(y.sharding.mesh, P("cols")))
    z, counts = counted(g, y, w_split)
    np.testing.assert_array_equal(
        np.asarray(z), grid_reference(lambda r, c, v: (v + 1) * w[c] + r, x, 2, 4)
    )
    assert counts.total == 0


def test_chained_siblings_reading_the_operand_alike_move_no_data():
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    first = spmd.pmap(spmd.pmap(lambda v: v + 1, "cols"), "rows")

    def outer(block):
        shifted = spmd.pmap(lambda v: v + lax.axis_index("cols"), "cols")(block)
        return spmd.pmap(lambda a, v: a * v, "cols")(shifted, block)

    z, counts = counted(spmd.pmap(outer, "rows"), first(x))
    np.testing.assert_array_equal(
        np.asarray(z), grid_reference(lambda r, c, v: (v + 1 + c) * (v + 1), x, 2, 4)
    )
    assert counts.total == 0


def test_chained_siblings_reading_the_operand_differently_stay_right():
    x = np.arange(2 * 4 * 4, dtype=np.float64).reshape(2, 4, 4)
    first = spmd.pmap(spmd.pmap(lambda v: v + 1, "cols"), "rows")

    def outer(block):  # block: (4, 4), read by rows and by columns
        by_row = spmd.pmap(lambda v: v * 2, "cols")(block)
        by_col = spmd.pmap(lambda v: v + lax.axis_index("cols"), "cols", in_axes=1)(block)
        return by_row, by_col

    by_row, by_col = spmd.pmap(outer, "rows")(first(x))
    np.testing.assert_array_equal(np.asarray(by_row), (x + 1) * 2)
    want = np.stack([np.stack([x[r, :, c] + 1 + c for c in range(4)]) for r in range(2)])
    np.testing.assert_array_equal(np.asarray(by_col), want)


@pytest.mark.parametrize(
    "spec, free",
    [
        (P(), True),
        (P("rows"), True),
        (P(None, "cols"), True),
        (P("rows", "cols"), True),
        (P("cols"), False),
        (P(None, None, "rows"), False),
        (P(("rows", "cols")), False),
        (P(None, ("cols", "rows")), False),
    ],
)
def test_nested_pmap_of_an_array_laid_out_on_its_mesh(spec, free):
    x = np.arange(2 * 4 * 3, dtype=np.float64).reshape(2, 4, 3)
    g = spmd.pmap(spmd.pmap(lambda v: v * 3 + lax.axis_index(("rows", "cols")), "cols"), "rows")
    mesh = g(x).sharding.mesh
    z, counts = counted(g, spmd.device_put(x, spmd.NamedSharding(mesh, spec)))
    np.testing.assert_array_equal(
        np.asarray(z), grid_reference(lambda r, c, v: v * 3 + r * 4 + c, x, 2, 4)
    )
    if free:
        assert counts.total == 0


def test_chained_three_levels_of_pmap_move_only_what_their_body_writes():
    rng = np.random.default_rng(10)
    x = sample(rng, (2, 3, 2, 2), np.float64)  # a on 0, b on 2, c on 3

    def body(v):
        return lax.psum(v, ("a", "c")) + lax.axis_index(("a", "b", "c"))

    f = spmd.pmap(
        spmd.pmap(spmd.pmap(body, "c", in_axes=1, out_axes=1), "b", in_axes=1, out_axes=1), "a"
    )

    def reference(x):
        out = np.zeros_like(x)
        for a, b, c in itertools.product(range(2), repeat=3):
            out[a, :, b, c] = x[:, :, b, :].sum(axis=(0, 2)) + (a * 4 + b * 2 + c)
        return out

    y = f(x)
    np.testing.assert_array_equal(np.asarray(y), reference(x))
    z, counts = counted(f, y)
    np.testing.assert_array_equal(np.asarray(z), reference(reference(x)))
    assert dict(counts) == {"all-reduce": 1}
    elementwise = spmd.pmap(spmd.pmap(spmd.pmap(lambda v: v - 1, "c"), "b"), "a")
    z, counts = counted(elementwise, elementwise(x[:, :2]))
    np.testing.assert_array_equal(np.asarray(z), x[:, :2] - 2)
    assert counts.total == 0


# --- transformations of nested pmaps (shard_map's rules, on the inlined body) ---------------


def test_grad_of_nested_pmap_sums_a_broadcast_argument_over_the_inner_devices():
    rng = np.random.default_rng(21)
    x = rng.normal(size=(2, 4, 3))
    w = rng.normal(size=(2, 3))  # mapped over rows, broadcast to every column

    def f(x, w):
        inner = spmd.pmap(lambda v, u: spmd.numpy.sin(v) * u, "cols", in_axes=(0, None))
        return spmd.pmap(inner, "rows")(x, w).sum()

    gx, gw = spmd.grad(f, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(np.asarray(gx), np.cos(x) * w[:, None, :], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gw), np.sin(x).sum(axis=1), rtol=1e-12)


def test_grad_of_nested_pmap_with_inner_in_axes_1_and_an_inner_psum():
    rng = np.random.default_rng(22)
    x = rng.normal(size=(2, 3, 4))  # rows on 0, cols on 2

    def f(x):
        inner = spmd.pmap(lambda v: lax.psum(v * v, "cols") * v, "cols", in_axes=1, out_axes=1)
        return (spmd.pmap(inner, "rows")(x) * np.arange(24.0).reshape(2, 3, 4)).sum()

    def numpy_f(x):
        total = (x * x).sum(axis=2, keepdims=True)
        return (total * x * np.arange(24.0).reshape(2, 3, 4)).sum()

    t = rng.normal(size=x.shape)
    grad = spmd.jit(spmd.grad(f))(x)
    eps = 1e-6
    want = (numpy_f(x + eps * t) - numpy_f(x - eps * t)) / (2 * eps)
    np.testing.assert_allclose(float(np.sum(np.asarray(grad) * t)), want, rtol=1e-6)


def test_jvp_and_vmap_of_nested_pmap():
    rng = np.random.default_rng(23)
    x = rng.normal(size=(2, 4, 3))
    t = rng.normal(size=x.shape)
    g = spmd.pmap(spmd.pmap(lambda v: lax.psum(v * v, "cols") + v, "cols"), "rows")
    out, tangent = spmd.jvp(g, (x,), (t,))
    np.testing.assert_allclose(np.asarray(out), (x * x).sum(axis=1, keepdims=True) + x, rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(tangent), (2 * x * t).sum(axis=1, keepdims=True) + t, rtol=1e-12
    )
    xs = rng.normal(size=(5, 2, 4, 3))
    body = lambda v: v * 2 + lax.axis_index("cols") - 10 * lax.axis_index("rows")  # noqa: E731
    batched = spmd.vmap(spmd.pmap(spmd.pmap(body, "cols"), "rows"))(xs)
    want = xs * 2 + np.arange(4)[None, None, :, None] - 10 * np.arange(2)[None, :, None, None]
    np.testing.assert_allclose(np.asarray(batched), want, rtol=1e-12)


def test_grad_taken_inside_the_outer_pmap_through_an_inner_pmap():
    x = np.random.default_rng(24).normal(size=(2, 4, 3))

    def outer(block):
        inner = spmd.pmap(lambda v: spmd.numpy.sin(v) * (lax.axis_index("cols") + 1), "cols")
        return spmd.grad(lambda b: inner(b).sum())(block)

    got = spmd.pmap(outer, "rows")(x)
    np.testing.assert_allclose(
        np.asarray(got), np.cos(x) * (np.arange(4) + 1)[None, :, None], rtol=1e-12
    )


def test_grad_taken_inside_the_outer_pmap_sums_a_broadcast_argument_over_the_inner_axis():
    rng = np.random.default_rng(25)
    x = rng.normal(size=(2, 4, 3))
    w = rng.normal(size=(2, 3))
    inner = spmd.pmap(
        lambda v, u: lax.psum(spmd.numpy.sin(v) * u, "cols"), "cols", in_axes=(0, None)
    )

    def outer(block, weight):
        return spmd.grad(lambda u: inner(block, u).sum())(weight)

    got = spmd.pmap(outer, "rows")(x, w)
    np.testing.assert_allclose(np.asarray(got), 4 * np.sin(x).sum(axis=1), rtol=1e-12)
