"""pmap: mapped results equal NumPy loops over the mapped index, collectives follow JAX's
semantics (checked against references that loop over device indices), nested pmaps map over
device grids, results stay on the mapped devices, and bad input raises SpmdError subclasses."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from tests.pmap_reference import DTYPES, assert_close, mapped_reference, sample, stacked, take

lax = spmd.lax

# --- sampled functions x mapped sizes x dtypes x in/out axes ------------------------------

# name -> (spmd body, NumPy body, whether it takes a broadcast weight)
FUNCTIONS = {
    "elementwise": (lambda v: v * 2 + 1, lambda v: v * 2 + 1, False),
    "abs_shift": (lambda v: snp.abs(v - 3), lambda v: np.abs(v - 3), False),
    "max_over_rows": (lambda v: snp.max(v, axis=0), lambda v: np.max(v, axis=0), False),
    "matmul_weight": (lambda v, w: v @ w, lambda v, w: v @ w, True),
}
SLICE_SHAPE = (3, 4)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("name", FUNCTIONS)
def test_sampled_functions_equal_numpy_loops(name, n, dtype):
    rng = np.random.default_rng([n, DTYPES.index(dtype), list(FUNCTIONS).index(name)])
    body, reference, weighted = FUNCTIONS[name]
    in_axis = int(rng.choice([0, 1, 2, -1, -2, -3]))
    shape = list(SLICE_SHAPE)
    shape.insert(in_axis % 3, n)
    x = sample(rng, shape, dtype)
    args, in_axes = [x], [in_axis]
    if weighted:
        args.append(sample(rng, (4, 5), dtype))
        in_axes.append(None)
    out_ndim = np.asarray(
        reference(*[take(a, 0, ax) for a, ax in zip(args, in_axes, strict=True)])
    ).ndim
    out_axis = int(rng.integers(-(out_ndim + 1), out_ndim + 1))
    f = spmd.pmap(body, "i", in_axes=tuple(in_axes), out_axes=out_axis)
    want = mapped_reference(reference, args, in_axes, out_axis, n)
    assert_close(f(*args), want)


@pytest.mark.parametrize("out_axis", [0, 1, 2, -1])
@pytest.mark.parametrize("n", [1, 3, 8])
def test_results_stay_split_over_the_mapped_devices_at_out_axes(n, out_axis):
    x = np.arange(n * 6, dtype=np.float64).reshape(n, 2, 3)
    y = spmd.pmap(lambda v: v - 1, "i", out_axes=out_axis)(x)
    want = np.stack([x[i] - 1 for i in range(n)], axis=out_axis)
    assert isinstance(y, spmd.Array)
    np.testing.assert_array_equal(np.asarray(y), want)
    assert isinstance(y.sharding, NamedSharding)
    entries = [None] * 3
    entries[out_axis % 3] = "i"
    while entries[-1] is None:  # a spec leaves out trailing unsplit dimensions
        entries.pop()
    assert y.sharding.spec == P(*entries)
    assert list(y.sharding.mesh.devices.flat) == spmd.devices()[:n]
    assert y.sharding.mesh.axis_names == ("i",)
    for shard in y.addressable_shards:
        k = spmd.devices().index(shard.device)
        assert shard.index[out_axis % 3].indices(n) == (k, k + 1, 1)
        np.testing.assert_array_equal(shard.data, np.expand_dims(x[k] - 1, out_axis % 3))


def test_pmap_of_an_array_split_unevenly_on_another_mesh():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    data = np.arange(24.0).reshape(6, 4)
    x = spmd.device_put(data, NamedSharding(mesh, P("y", "x")))
    rows = spmd.pmap(lambda v: v.sum(), "i")(x)
    cols = spmd.pmap(lambda v: v.max(), "i", in_axes=1)(x)
    np.testing.assert_array_equal(np.asarray(rows), [data[i].sum() for i in range(6)])
    np.testing.assert_array_equal(np.asarray(cols), [data[:, j].max() for j in range(4)])


def test_chained_pmaps_over_one_axis_name_move_no_data():
    x = np.arange(8 * 5, dtype=np.float64).reshape(8, 5)
    first = spmd.pmap(lambda v: v * 3, "i")
    second = spmd.pmap(lambda v: snp.sin(v) + v, "i")
    y = first(x)
    with spmd.debug.count_collectives() as counts:
        z = second(y)
        w = first(z)
    assert counts.total == 0
    assert z.sharding == y.sharding and w.sharding == y.sharding
    np.testing.assert_allclose(np.asarray(w), (np.sin(x * 3) + x * 3) * 3)


def test_chaining_through_a_non_leading_mapped_axis_moves_no_data():
    x = np.arange(4 * 6, dtype=np.float64).reshape(4, 6)
    y = spmd.pmap(lambda v: v + 1, "i", out_axes=1)(x)  # (6, 4), split on axis 1
    with spmd.debug.count_collectives() as counts:
        z = spmd.pmap(lambda v: v * 2, "i", in_axes=1)(y)
    assert counts.total == 0
    np.testing.assert_array_equal(np.asarray(z), (x + 1) * 2)


def test_pytree_arguments_and_in_axes_prefixes():
    rng = np.random.default_rng(1)
    a = sample(rng, (5, 3), np.float64)
    b = sample(rng, (3, 5), np.float64)  # mapped on axis 1
    c = sample(rng, (3,), np.float64)  # broadcast
    d = sample(rng, (5,), np.int32)

    def f(pair, table):
        first, second = pair
        return {"sum": first + second + table["c"], "count": table["d"] * 2}

    g = spmd.pmap(f, "i", in_axes=((0, 1), {"c": None, "d": 0}))
    out = g((a, b), {"c": c, "d": d})
    assert set(out) == {"sum", "count"}
    want_sum = np.stack([a[i] + b[:, i] + c for i in range(5)])
    want_count = np.stack([np.asarray(d[i] * 2) for i in range(5)])
    assert_close(out["sum"], want_sum)
    assert_close(out["count"], want_count)


def test_dict_argument_with_a_single_in_axes_and_tuple_out_axes():
    rng = np.random.default_rng(2)
    x = {"u": sample(rng, (3, 4), np.float32), "v": sample(rng, (3, 2), np.float32)}
    g = spmd.pmap(lambda t: (t["u"].sum(), t["v"] * t["u"][0]), "i", out_axes=(0, 1))
    total, scaled = g(x)
    assert_close(total, np.stack([x["u"][i].sum() for i in range(3)]))
    assert_close(scaled, np.stack([x["v"][i] * x["u"][i, 0] for i in range(3)], axis=1))


def test_in_axes_list_is_accepted_like_a_tuple():
    x = np.arange(12.0).reshape(4, 3)
    w = np.arange(3.0)
    out = spmd.pmap(lambda v, u: v * u, "i", in_axes=[0, None])(x, w)
    np.testing.assert_array_equal(np.asarray(out), np.stack([x[i] * w for i in range(4)]))


def test_pmap_without_an_axis_name_maps_like_a_named_one():
    x = np.arange(10.0).reshape(5, 2)
    np.testing.assert_array_equal(np.asarray(spmd.pmap(lambda v: v**2)(x)), x**2)


def test_pmap_as_a_decorator_with_options():
    @spmd.pmap
    def double(v):
        return v * 2

    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(np.asarray(double(x)), x * 2)


# --- collectives inside pmap, against references looping over device indices -------------


SIZES = [1, 2, 3, 5, 8]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(
    "name, collective, reduce",
    [
        ("psum", lax.psum, lambda bs: sum(bs[1:], bs[0])),
        ("pmax", lax.pmax, lambda bs: np.maximum.reduce(bs)),
        ("pmin", lax.pmin, lambda bs: np.minimum.reduce(bs)),
    ],
)
def test_reductions_over_the_axis(name, collective, reduce, n):
    rng = np.random.default_rng([n, len(name)])
    x = sample(rng, (n, 2, 3), np.int32)
    blocks = [x[i] for i in range(n)]
    want = stacked([reduce(blocks)] * n)
    assert_close(spmd.pmap(lambda v: collective(v, "i"), "i")(x), want)


@pytest.mark.parametrize("n", SIZES)
def test_pmean_divides_the_sum_by_the_axis_size(n):
    x = np.arange(n * 4, dtype=np.float64).reshape(n, 4)
    total = np.zeros(4)
    for i in range(n):
        total = total + x[i]
    got = spmd.pmap(lambda v: lax.pmean(v, "i"), "i")(x)
    np.testing.assert_allclose(np.asarray(got), stacked([total / n] * n))


def test_psum_of_a_python_constant_is_the_axis_size():
    got = spmd.pmap(lambda v: v + lax.psum(1, "i"), "i")(np.zeros((6, 2)))
    np.testing.assert_array_equal(np.asarray(got), np.full((6, 2), 6.0))


def test_collectives_apply_to_every_leaf_of_a_pytree():
    x = np.arange(8.0).reshape(4, 2)
    out = spmd.pmap(lambda v: lax.psum({"a": v, "b": (v * 2,)}, "i"), "i")(x)
    total = x[0] + x[1] + x[2] + x[3]
    np.testing.assert_array_equal(np.asarray(out["a"]), stacked([total] * 4))
    np.testing.assert_array_equal(np.asarray(out["b"][0]), stacked([total * 2] * 4))


@pytest.mark.parametrize("n", SIZES)
def test_axis_index_counts_the_devices(n):
    got = spmd.pmap(lambda v: v * 0 + lax.axis_index("i"), "i")(np.zeros(n, np.int32))
    assert_close(got, np.arange(n, dtype=np.int32))
    alone = spmd.pmap(lambda v: lax.axis_index("i"), "i")(np.zeros(n))
    assert alone.dtype == np.int32 and np.asarray(alone).tolist() == list(range(n))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("axis, tiled", [(0, False), (1, False), (-1, False), (0, True), (1, True)])
def test_all_gather(n, axis, tiled):
    rng = np.random.default_rng([n, axis + 5, tiled])
    x = sample(rng, (n, 2, 3), np.float64)
    blocks = [x[i] for i in range(n)]
    gathered = np.concatenate(blocks, axis=axis) if tiled else np.stack(blocks, axis=axis)
    got = spmd.pmap(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled), "i")(x)
    assert_close(got, stacked([gathered] * n))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_psum_scatter_untiled_keeps_one_index_and_removes_the_dimension(n, dim):
    rng = np.random.default_rng([n, dim + 3])
    shape = [2, 3]
    shape.insert(dim % 3 if dim >= 0 else 2, n)
    x = sample(rng, (n, *shape), np.int32)
    total = np.zeros(shape, np.int32)
    for i in range(n):
        total = total + x[i]
    want = stacked([np.take(total, i, axis=dim) for i in range(n)])
    got = spmd.pmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim), "i")(x)
    assert_close(got, want)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dim", [0, 1])
def test_psum_scatter_tiled_keeps_one_chunk(n, dim):
    rng = np.random.default_rng([n, dim])
    shape = [3, 2]
    shape[dim] *= n
    x = sample(rng, (n, *shape), np.float64)
    total = np.zeros(shape)
    for i in range(n):
        total = total + x[i]
    chunk = shape[dim] // n
    want = stacked([np.take(total, range(i * chunk, (i + 1) * chunk), axis=dim) for i in range(n)])
    got = spmd.pmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim, tiled=True), "i")(x)
    assert_close(got, want)


def ppermute_reference(blocks, perm):
    out = [np.zeros_like(b) for b in blocks]
    for src, dst in perm:
        out[dst] = blocks[src]
    return stacked(out)


@pytest.mark.parametrize(
    "n, perm",
    [
        (1, [(0, 0)]),
        (2, [(0, 1), (1, 0)]),
        (5, [(i, (i + 1) % 5) for i in range(5)]),  # ring shift
        (8, [(i, (i - 3) % 8) for i in range(8)]),
        (4, [(0, 2), (3, 1)]),  # partial: devices 0 and 3 receive nothing
        (6, [(2, 2), (5, 0)]),
        (3, []),  # nobody receives
    ],
)
def test_ppermute_sends_source_to_destination_and_zeros_the_rest(n, perm):
    rng = np.random.default_rng(n)
    x = sample(rng, (n, 2, 3), np.float32)
    got = spmd.pmap(lambda v: lax.ppermute(v, "i", perm), "i")(x)
    assert_close(got, ppermute_reference([x[i] for i in range(n)], perm))


def all_to_all_reference(blocks, split, concat, tiled):
    n = len(blocks)
    out = []
    for j in range(n):
        if tiled:
            pieces = [np.split(b, n, axis=split)[j] for b in blocks]
            out.append(np.concatenate(pieces, axis=concat))
        else:
            out.append(np.stack([np.take(b, j, axis=split) for b in blocks], axis=concat))
    return stacked(out)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("split, concat", [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (0, 2)])
def test_all_to_all_untiled(n, split, concat):
    rng = np.random.default_rng([n, split, concat])
    shape = [2, 3, 4]
    shape[split] = n
    x = sample(rng, (n, *shape), np.int32)
    want = all_to_all_reference([x[i] for i in range(n)], split, concat, tiled=False)
    expected_shape = tuple(np.insert(np.delete(shape, split), concat, n))
    assert want.shape[1:] == expected_shape
    got = spmd.pmap(lambda v: lax.all_to_all(v, "i", split, concat), "i")(x)
    assert_close(got, want)


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("split, concat", [(0, 0), (0, 1), (1, 0), (2, 1)])
def test_all_to_all_tiled_keeps_the_rank(n, split, concat):
    rng = np.random.default_rng([n, split, concat, 1])
    shape = [2, 3, 2]
    shape[split] *= n
    x = sample(rng, (n, *shape), np.float64)
    want = all_to_all_reference([x[i] for i in range(n)], split, concat, tiled=True)
    got = spmd.pmap(lambda v: lax.all_to_all(v, "i", split, concat, tiled=True), "i")(x)
    assert_close(got, want)


def test_collective_shape_errors_name_the_sizes_and_the_fix():
    x = np.ones((4, 3))
    with pytest.raises(spmd.ShapeError, match=r"size 3.*exactly 4.*tiled=True"):
        spmd.pmap(lambda v: lax.psum_scatter(v, "i"), "i")(x)
    with pytest.raises(spmd.ShapeError, match=r"size 3.*exactly 4"):
        spmd.pmap(lambda v: lax.all_to_all(v, "i", 0, 0), "i")(x)
    with pytest.raises(spmd.ShapeError, match=r"\(0, 5\).*out of range.*\[0, 4\)"):
        spmd.pmap(lambda v: lax.ppermute(v, "i", [(0, 5)]), "i")(x)
    with pytest.raises(spmd.ShapeError, match=r"destination \[1\] more than once"):
        spmd.pmap(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]), "i")(x)


# --- static arguments, devices, out_axes=None -----------------------------------------------


def test_static_broadcasted_argnums_are_python_values():
    x = np.arange(12.0).reshape(4, 3)

    def f(power, v, mode):
        out = v
        for _ in range(power - 1):  # Python control flow on the static values
            out = out * v
        return -out if mode == "negate" else out

    g = spmd.pmap(f, "i", static_broadcasted_argnums=(0, 2))
    np.testing.assert_array_equal(np.asarray(g(3, x, "negate")), -(x**3))
    np.testing.assert_array_equal(np.asarray(g(2, x, "keep")), x**2)
    single = spmd.pmap(lambda v, k: v * k, "i", static_broadcasted_argnums=1)
    np.testing.assert_array_equal(np.asarray(single(x, 5)), x * 5)


@pytest.mark.parametrize(
    "pick",
    [
        lambda d: d[::-1],
        lambda d: d[2:6],
        lambda d: [d[5], d[1], d[7]],
        lambda d: d[4:],
    ],
    ids=["reversed", "middle", "scattered", "upper"],
)
def test_devices_chooses_and_orders_the_mapped_devices(pick):
    chosen = pick(spmd.devices())
    n = len(chosen)
    x = np.arange(n * 2, dtype=np.float64).reshape(n, 2)
    f = spmd.pmap(lambda v: v + 10 * lax.axis_index("i") + lax.psum(v, "i"), "i", devices=chosen)
    out = f(x)
    total = np.zeros(2)
    for i in range(n):
        total = total + x[i]
    want = np.stack([x[i] + 10 * i + total for i in range(n)])
    np.testing.assert_array_equal(np.asarray(out), want)
    assert list(out.sharding.mesh.devices.flat) == list(chosen)
    for shard in out.addressable_shards:
        i = chosen.index(shard.device)
        assert shard.index[0].indices(n) == (i, i + 1, 1)
        np.testing.assert_array_equal(shard.data, want[i : i + 1])
    with spmd.debug.count_collectives() as counts:
        again = f(out)
    assert counts == {"all-reduce": 1}
    assert again.sharding == out.sharding


def test_devices_uses_the_first_devices_of_a_longer_list():
    chosen = spmd.devices()[::-1]
    out = spmd.pmap(lambda v: v * 2, "i", devices=chosen)(np.arange(3.0))
    assert list(out.sharding.mesh.devices.flat) == chosen[:3]
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 4.0])


def test_out_axes_none_returns_a_replicated_psummed_value():
    x = np.arange(15, dtype=np.int32).reshape(5, 3)
    f = spmd.pmap(lambda v: (lax.psum(v, "i"), v * 2), "i", out_axes=(None, 0))
    total, doubled = f(x)
    want = np.zeros(3, np.int32)
    for i in range(5):
        want = want + x[i]
    assert_close(total, want)
    assert total.shape == (3,)
    assert total.is_fully_replicated
    assert_close(doubled, x * 2)


def test_out_axes_none_for_a_varying_value_is_an_error():
    with pytest.raises(spmd.ShardingError, match=r"out_axes is None for result 1.*varies over 'i'"):
        spmd.pmap(lambda v: (lax.psum(v, "i"), v), "i", out_axes=None)(np.ones((4, 2)))
    with pytest.raises(spmd.ShardingError, match="varies over 'i'"):
        spmd.pmap(lambda v: lax.axis_index("i"), "i", out_axes=None)(np.ones(4))


# --- errors ---------------------------------------------------------------------------------


def test_mapped_size_larger_than_the_device_count():
    with pytest.raises(spmd.ShardingError, match=r"9 \('i'\).*8 are available"):
        spmd.pmap(lambda v: v, "i")(np.ones((9, 2)))
    with pytest.raises(spmd.ShardingError, match=r"3 \('r'\) × 3 \('c'\) = 9 devices"):
        spmd.pmap(spmd.pmap(lambda v: v, "c"), "r")(np.ones((3, 3)))
    with pytest.raises(spmd.ShardingError, match="2 are available"):
        spmd.pmap(lambda v: v, "i", devices=spmd.devices()[:2])(np.ones(3))


def test_mismatched_mapped_sizes():
    with pytest.raises(spmd.ShapeError, match=r"different sizes.*argument 0: 4, argument 1: 3"):
        spmd.pmap(lambda a, b: a + b, "i")(np.ones((4, 2)), np.ones((3, 2)))
    with pytest.raises(spmd.ShapeError, match="different sizes"):
        spmd.pmap(lambda a, b: a + b.T, "i", in_axes=(0, 1))(np.ones((4, 2)), np.ones((4, 2)))


def test_collective_over_an_unbound_axis_name_fails_at_trace_time():
    f = spmd.pmap(lambda v: lax.psum(v, "nope"), "i")
    with pytest.raises(spmd.AxisNameError, match=r"'nope' is not bound.*'i'"):
        spmd.jit(f).lower(np.ones((4, 2)))  # lower traces and runs nothing
    with pytest.raises(spmd.AxisNameError, match="'nope'"):
        f(np.ones((4, 2)))
    with pytest.raises(spmd.AxisNameError, match="'j'"):
        spmd.pmap(lambda v: lax.axis_index(("i", "j")), "i")(np.ones(4))


def test_outer_function_cannot_name_the_inner_axis():
    def outer(v):
        return spmd.pmap(lambda u: u, "cols")(v) + lax.axis_index("cols")

    with pytest.raises(spmd.AxisNameError, match="'cols'"):
        spmd.pmap(outer, "rows")(np.ones((2, 4)))


@pytest.mark.parametrize("in_axes", [2, -3, (0, 5)])
def test_in_axes_out_of_range(in_axes):
    args = (np.ones((4, 3)), np.ones((4, 3)))
    with pytest.raises(spmd.ShapeError, match=r"in_axes=(2|-3|5) is out of bounds.*f64\[4,3\]"):
        spmd.pmap(lambda a, b: a + b, "i", in_axes=in_axes)(*args)


def test_out_axes_out_of_range():
    with pytest.raises(spmd.ShapeError, match=r"out_axes=3 is out of bounds"):
        spmd.pmap(lambda v: v, "i", out_axes=3)(np.ones((4, 3)))


def test_in_axes_with_the_wrong_number_of_entries():
    with pytest.raises(spmd.SpmdTypeError, match="in_axes has 1 entries but the call passed 2"):
        spmd.pmap(lambda a, b: a + b, "i", in_axes=(0,))(np.ones(4), np.ones(4))


def test_nothing_mapped_or_a_scalar_mapped():
    with pytest.raises(spmd.ShapeError, match="at least one mapped argument"):
        spmd.pmap(lambda a: a, "i", in_axes=None)(np.ones(4))
    with pytest.raises(spmd.ShapeError, match="no axes"):
        spmd.pmap(lambda a: a, "i")(3.0)


def test_nested_pmap_reusing_the_outer_axis_name():
    with pytest.raises(spmd.ShardingError, match=r"'i' is already bound.*its own axis_name"):
        spmd.pmap(spmd.pmap(lambda v: v, "i"), "i")(np.ones((2, 2, 2)))


def test_pmap_inside_shard_map_is_refused():
    mesh = spmd.make_mesh((2,), ("x",), devices=spmd.devices()[:2])
    inner = spmd.pmap(lambda v: v, "i")
    f = spmd.shard_map(lambda b: inner(b), mesh, in_specs=P("x"), out_specs=P("x"))
    with pytest.raises(spmd.ShardingError, match="inside shard_map"):
        f(np.ones((4, 2)))


# --- jit over pmap --------------------------------------------------------------------------


def test_jit_over_pmap_runs_and_lowers_to_the_collective():
    x = np.arange(12.0).reshape(4, 3)
    f = spmd.pmap(lambda v: v / lax.psum(v, "i"), "i")
    total = x[0] + x[1] + x[2] + x[3]
    want = np.stack([x[i] / total for i in range(4)])
    np.testing.assert_allclose(np.asarray(spmd.jit(f)(x)), want)
    text = spmd.jit(f).lower(x).as_text()
    assert "psum" in text and "'i'" in text


def test_jit_around_pmap_with_work_before_and_after():
    x = np.arange(12.0).reshape(4, 3)
    f = spmd.pmap(lambda v: lax.all_gather(v, "i", tiled=True), "i")
    g = spmd.jit(lambda a: f(a * 2).sum(axis=0) + 1)
    flat = np.concatenate([x[i] * 2 for i in range(4)])
    np.testing.assert_allclose(np.asarray(g(x)), flat * 4 + 1)
    assert "all_gather" in g.lower(x).as_text()
