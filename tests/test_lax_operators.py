"""spmd.lax's general operators beyond the case table's fixed rows: dot_general over sampled
dimension numbers against NumPy's einsum, broadcast_in_dim and pad against index formulas,
sharded inputs (uneven and empty blocks) against the unsharded result with the collectives
they should cost, and the errors bad arguments raise."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
from spmd import P, lax
from spmd.prims.contraction import LETTERS
from tests.cases.lax_reference import NUMPY_LAX_OPERATORS as REF

MESH_SHAPES = [(8,), (2, 4), (4, 2)]


def put(x, mesh, *spec):
    return spmd.device_put(x, spmd.NamedSharding(mesh, P(*spec)))


def mesh_of(shape):
    return spmd.make_mesh(shape, ("a", "b")[: len(shape)])


def close(got, want, rtol=1e-12):
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want), (got, want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


# ---------------------------------------------------------------------------- dot_general


def random_dot(rng):
    """Shapes and dimension numbers of a random dot_general (sizes 0 to 3), with its einsum."""
    nb, nc = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    lf, rf = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    sizes = [int(rng.integers(0, 4)) for _ in range(nb + nc + lf + rf)]
    labels = LETTERS[: len(sizes)]
    batch, contract = labels[:nb], labels[nb : nb + nc]
    lfree, rfree = labels[nb + nc : nb + nc + lf], labels[nb + nc + lf :]
    lhs = list(batch + contract + lfree)
    rhs = list(batch + contract + rfree)
    rng.shuffle(lhs)
    rng.shuffle(rhs)
    size = dict(zip(labels, sizes, strict=True))
    dims = (
        (tuple(lhs.index(c) for c in contract), tuple(rhs.index(c) for c in contract)),
        (tuple(lhs.index(c) for c in batch), tuple(rhs.index(c) for c in batch)),
    )
    subscripts = f"{''.join(lhs)},{''.join(rhs)}->{batch}{''.join(c for c in lhs if c in lfree)}"
    subscripts += "".join(c for c in rhs if c in rfree)
    return [size[c] for c in lhs], [size[c] for c in rhs], dims, subscripts


@pytest.mark.parametrize("jitted", [False, True])
def test_dot_general_equals_einsum_over_sampled_dimension_numbers(jitted):
    rng = np.random.default_rng(3)
    dot = spmd.jit(lax.dot_general, static_argnums=2) if jitted else lax.dot_general
    for _ in range(40):
        lshape, rshape, dims, subscripts = random_dot(rng)
        x, y = rng.standard_normal(lshape), rng.standard_normal(rshape)
        close(dot(x, y, dims), np.einsum(subscripts, x, y))
        ints = rng.integers(-3, 4, lshape).astype(np.int32), rng.integers(-3, 4, rshape)
        got = dot(ints[0], ints[1].astype(np.int32), dims)
        np.testing.assert_array_equal(got, np.einsum(subscripts, *ints).astype(np.int32))


def test_dot_general_dtypes_follow_jax():
    i8 = np.full((2, 3), 100, np.int8)
    wide = lax.dot_general(i8, i8.T, (((1,), (0,)), ((), ())), preferred_element_type=np.int32)
    assert wide.dtype == np.int32 and int(wide[0, 0]) == 30000  # summed in int32, no wrap
    mixed = lax.dot_general(np.ones(3, np.int64), np.ones(3, np.float32), (((0,), (0,)), ((), ())))
    assert mixed.dtype == np.float32  # XLA's order: the float, however wide the integer
    half = np.full(4, 0.1, np.float32)
    acc = lax.dot_general(half, half, (((0,), (0,)), ((), ())), preferred_element_type=np.float64)
    assert acc.dtype == np.float64 and float(acc) == pytest.approx(4 * 0.1**2, rel=1e-7)


def test_dot_general_over_a_sharded_contraction_leaves_one_all_reduce():
    rng = np.random.default_rng(0)
    for shape in MESH_SHAPES:
        mesh = mesh_of(shape)
        x, y = rng.standard_normal((3, 2, 10)), rng.standard_normal((10, 3, 5))  # 10: uneven
        dims = (((2,), (0,)), ((0,), (1,)))
        f = spmd.jit(lambda a, b, d=dims: lax.dot_general(a, b, d))
        xs, ys = put(x, mesh, None, None, "a"), put(y, mesh, "a")
        with spmd.debug.count_collectives() as counts:
            got = f(xs, ys)
        close(got, np.einsum("bik,kbj->bij", x, y))
        assert dict(counts) == {"all-reduce": 1}, counts
        assert "pending sum over 'a'" in f.lower(xs, ys).explain()


def test_dot_general_batch_sharded_runs_per_device_without_collectives():
    mesh = mesh_of((8,))
    x, y = np.random.default_rng(1).standard_normal((2, 11, 3, 4)), np.ones((11, 4, 2))
    f = spmd.jit(lambda a, b: lax.dot_general(a, b, (((3,), (1,)), ((1,), (0,)))))
    with spmd.debug.count_collectives() as counts:
        got = f(put(x, mesh, None, "a"), put(y, mesh, "a"))  # 11 over 8: blocks of 2, one empty
    close(got, np.einsum("pbik,bkq->bpiq", x, y))
    assert not counts, counts
    assert got.sharding.spec[0] == "a"


# ---------------------------------------------------------------- shapes, pad, slices


def test_broadcast_in_dim_matches_index_formula_on_sampled_shapes():
    rng = np.random.default_rng(5)
    for _ in range(40):
        shape = tuple(int(n) for n in rng.integers(0, 4, size=rng.integers(0, 4)))
        dims = tuple(
            sorted(rng.choice(len(shape), size=rng.integers(0, len(shape) + 1), replace=False))
        )
        dims = tuple(int(d) for d in rng.permutation(dims))
        operand = tuple(1 if rng.random() < 0.3 else shape[d] for d in dims)
        x = rng.standard_normal(operand)
        want = REF.broadcast_in_dim(x, shape, dims)
        close(lax.broadcast_in_dim(x, shape, dims), want)
        close(spmd.jit(lambda v, s=shape, d=dims: lax.broadcast_in_dim(v, s, d))(x), want)


def random_config(rng, shape):
    config = []
    for n in shape:
        interior = int(rng.integers(0, 3))
        grown = n + max(n - 1, 0) * interior
        low = int(rng.integers(-grown - 1, 3))
        high = int(rng.integers(max(-grown - low, -2), 3))
        config.append((low, high, interior))
    return config


@pytest.mark.parametrize("mesh_shape", MESH_SHAPES)
def test_pad_equals_index_formula_sharded_and_not(mesh_shape):
    rng = np.random.default_rng(sum(mesh_shape))
    mesh = mesh_of(mesh_shape)
    for _ in range(25):
        shape = tuple(int(n) for n in rng.integers(0, 6, size=rng.integers(1, 3)))
        config = random_config(rng, shape)
        x = rng.standard_normal(shape)
        want = REF.pad(x, -7.5, config)
        close(lax.pad(x, -7.5, config), want)
        spec = [None] * len(shape)
        spec[int(rng.integers(len(shape)))] = "a"
        sharded = spmd.jit(lambda v, c=config: lax.pad(v, -7.5, c))(put(x, mesh, *spec))
        close(sharded, want)


def test_pad_differentiates_in_operand_and_padding_value():
    x = np.arange(6.0).reshape(2, 3)
    config = [(1, -1, 2), (-1, 2, 1)]
    out = lax.pad(x, 0.0, config)
    weights = np.random.default_rng(2).standard_normal(out.shape)
    gx, gv = spmd.grad(lambda a, v: (lax.pad(a, v, config) * weights).sum(), argnums=(0, 1))(x, 2.0)
    placed = np.asarray(REF.pad(np.ones_like(x), 0.0, config))  # 1 where an element landed
    index = np.asarray(REF.pad(np.arange(1.0, 7.0).reshape(2, 3), 0.0, config))
    want_x = np.array([weights[index == k].sum() for k in range(1, 7)]).reshape(2, 3)
    close(gx, want_x)
    close(gv, (weights * (1 - placed)).sum())


def test_slices_and_reversal_equal_numpy_on_sharded_uneven_inputs():
    mesh = mesh_of((2, 4))
    x = np.arange(70.0).reshape(7, 10)
    xs = put(x, mesh, "a", "b")
    close(lax.slice(xs, (1, 0), (6, 10), (2, 3)), x[1:6:2, 0:10:3])
    close(lax.slice_in_dim(xs, -4, None, 2, axis=1), x[:, -4::2])
    close(lax.index_in_dim(xs, -1, 0, keepdims=False), x[-1])
    close(lax.rev(xs, (0, 1)), x[::-1, ::-1])
    close(lax.reshape(xs, (10, 7), (1, 0)), x.T.reshape(10, 7))
    close(lax.expand_dims(lax.squeeze(lax.expand_dims(xs, (0,)), (0,)), (-1,)), x[..., None])
    close(lax.concatenate([xs, xs[:0], xs[:2]], 0), np.concatenate([x, x[:0], x[:2]]))


def test_creation_functions_place_their_results():
    mesh = mesh_of((8,))
    sharding = spmd.NamedSharding(mesh, P("a"))
    counted = lax.broadcasted_iota(np.int32, (10, 3), 0, sharding=sharding)
    np.testing.assert_array_equal(counted, np.indices((10, 3), dtype=np.int32)[0])
    assert counted.sharding.spec[0] == "a"
    np.testing.assert_array_equal(lax.iota(np.float32, 4), np.arange(4, dtype=np.float32))
    assert lax.full((2,), 1.5, np.float32).dtype == np.float32
    filled = spmd.jit(lambda v: lax.full((3, 2), v))(np.float32(2))
    np.testing.assert_array_equal(filled, np.full((3, 2), 2, np.float32))
    converted = lax.convert_element_type(np.array([1.5 - 2j, -2.7 + 1j]), np.int32)
    np.testing.assert_array_equal(converted, [1, -2])  # real part, truncated toward zero


# ---------------------------------------------------------------------------- errors

ERRORS = [  # (call, error class, what the message must say)
    (lambda: lax.dot_general(np.ones((3, 4)), np.ones((5, 6)), (((1,), (0,)), ((), ()))),
     spmd.ShapeError, r"lhs f64\[3,4\] dimension 1 \(size 4\) and rhs f64\[5,6\] dimension 0 "
     r"\(size 5\)"),
    (lambda: lax.dot_general(np.ones((3, 4)), np.ones((4,)), (((2,), (0,)), ((), ()))),
     spmd.ShapeError, r"holds 2, outside \[0, 2\) for lhs f64\[3,4\]"),
    (lambda: lax.dot_general(np.ones(3), np.ones(3), ((0,), (0,))),
     spmd.SpmdTypeError, r"dimension_numbers must be \(\(lhs_contracting"),
    (lambda: lax.dot_general(np.ones(3), np.ones(3), (((0,), (0,)), ((0,), (0,)))),
     spmd.ShapeError, r"names dimension 0 more than once"),
    (lambda: lax.dot_general(np.ones(3, np.int32), np.ones(3, np.int32), (((0,), (0,)), ((), ())),
                             preferred_element_type=np.int8),
     spmd.SpmdTypeError, r"preferred_element_type=int8 is narrower than the operands' int32"),
    (lambda: lax.transpose(np.ones((2, 3)), (1, 1)),
     spmd.ShapeError, r"permutation=\(1, 1\) is not a permutation of the 2 dimensions of "
     r"f64\[2,3\]"),
    (lambda: lax.reshape(np.ones((2, 3)), (4, 2)),
     spmd.ShapeError, r"cannot reshape f64\[2,3\] \(size 6\) to new_sizes=\(4, 2\) \(size 8\)"),
    (lambda: lax.broadcast_in_dim(np.ones(3), (2, 4), (1,)),
     spmd.ShapeError, r"operand f64\[3\] dimension 0 has size 3 but goes to result dimension 1 "
     r"of size 4"),
    (lambda: lax.broadcast_in_dim(np.ones(3), (3,), 0),
     spmd.SpmdTypeError, r"broadcast_dimensions must be a sequence of ints, got 0"),
    (lambda: lax.squeeze(np.ones((2, 3)), (1,)),
     spmd.ShapeError, r"dimension 1 of f64\[2,3\] has size 3, not 1"),
    (lambda: lax.concatenate([np.ones((2, 3)), np.ones((2, 4))], 0),
     spmd.ShapeError, r"differ in dimension 1 \(4 vs 3\)"),
    (lambda: lax.concatenate([np.ones(2), np.ones(2, np.float32)], 0),
     spmd.SpmdTypeError, r"operands\[0\] is f64\[2\] and operands\[1\] is f32\[2\]"),
    (lambda: lax.pad(np.ones(3), 0.0, [(0, 0, -1)]),
     spmd.ShapeError, r"padding_config\[0\] = \(0, 0, -1\) has a negative interior padding"),
    (lambda: lax.pad(np.ones(3), 0.0, [(-3, -1, 0)]),
     spmd.ShapeError, r"crops more than dimension 0 of f64\[3\] holds \(size 3\)"),
    (lambda: lax.pad(np.ones(3, np.int32), 0.5, [(1, 1, 0)]),
     spmd.SpmdTypeError, r"padding_value=0.5 is not a value of the operand's dtype int32"),
    (lambda: lax.slice(np.ones(5), (3,), (2,)),
     spmd.ShapeError, r"dimension 0 of f64\[5\] \(size 5\) has start 3 and limit 2"),
    (lambda: lax.index_in_dim(np.ones((2, 3)), 3, 1),
     spmd.SpmdIndexError, r"index 3 is out of bounds for dimension 1 of f64\[2,3\] \(size 3\)"),
    (lambda: lax.select_n(np.array([0, 1]), np.ones(2), np.ones(3)),
     spmd.ShapeError, r"cases\[1\] is f64\[3\] but cases\[0\] is f64\[2\]"),
    (lambda: lax.iota(np.bool_, 3), spmd.SpmdTypeError, r"dtype=bool is not an integer"),
    (lambda: lax.full((2,), np.ones(2)), spmd.ShapeError, r"fill_value must be a scalar"),
    (lambda: lax.top_k(np.ones((2, 3)), 4),
     spmd.ShapeError, r"k=4 for axis 1 of operand f64\[2,3\] \(size 3\)"),
    (lambda: lax.sort((np.ones(3), np.ones(4))),
     spmd.ShapeError, r"operand\[1\] is f64\[4\] but operand\[0\] is f64\[3\]"),
    (lambda: lax.reduce(np.ones(3), 0.0, lambda a, b: a + b, (0,)),
     spmd.SpmdTypeError, r"computation '<lambda>' over 1 operand\(s\) is not one spmd reduces"),
    (lambda: lax.reduce_sum(np.ones((2, 3), bool), (0,)),
     spmd.SpmdTypeError, r"operand is bool\[2,3\]; lax.reduce_sum takes numbers"),
    (lambda: lax.reduce_max(np.ones((2, 3)), (0, 0)),
     spmd.ShapeError, r"axes=\(0, 0\) names dimension 0 more than once"),
    (lambda: lax.argmax(np.ones((2, 0)), 1, np.int32),
     spmd.ShapeError, r"axis 1 of operand f64\[2,0\] is empty"),
    (lambda: lax.cumsum(np.ones(3), 1),
     spmd.ShapeError, r"axis=1 is out of bounds for operand f64\[3\]"),
    (lambda: lax.cumlogsumexp(np.ones(3, np.int32)), spmd.SpmdTypeError, r"takes floating arrays"),
    (lambda: lax.div(np.ones(2, bool), np.ones(2, bool)), spmd.SpmdTypeError, r"bool\[2\]"),
    (lambda: lax.complex(np.ones(2), np.ones(2, np.float32)),
     spmd.SpmdTypeError, r"x is f64\[2\] and y is f32\[2\]"),
    (lambda: lax.round(np.ones(2), 3),
     spmd.SpmdTypeError, r"rounding_method=3 is not a RoundingMethod"),
    (lambda: lax.population_count(np.ones(2)), spmd.SpmdTypeError, r"takes integer arrays"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "message"), ERRORS, ids=[m[:40] for *_, m in ERRORS])
def test_bad_arguments_raise_spmd_errors_naming_argument_and_sizes(call, error, message):
    with pytest.raises(error, match=message):
        call()
    with pytest.raises(error, match=message):  # at trace time too
        spmd.jit(lambda: call())()
