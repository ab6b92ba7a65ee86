"""dot, matmul, einsum, tensordot and outer against NumPy: shapes, dtypes, eager and jit."""

import itertools

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.prims.contraction import einsum_factors
from tests.cases import DTYPES, make_input


def check(result, expected):
    """Same dtype and shape; integers and bools exact, floats to rounding (BLAS order)."""
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if expected.dtype.kind in "fc":
        tolerance = 1e-5 if expected.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(np.asarray(result), expected, rtol=tolerance, atol=tolerance)
    else:
        np.testing.assert_array_equal(np.asarray(result), expected)


def both_ways(fn, *args, **kwargs):
    """``fn`` applied eagerly to spmd Arrays and under jit."""
    arrays = [spmd.device_put(a) if isinstance(a, np.ndarray) else a for a in args]
    return fn(*arrays, **kwargs), spmd.jit(lambda *xs: fn(*xs, **kwargs))(*arrays)


MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((2, 2, 3), (2, 3, 4)),
    ((1, 2, 3), (5, 3, 4)),
    ((4, 2, 3), (3, 2)),
    ((3,), (2, 3, 4)),
    ((2, 1, 2, 3), (4, 3, 1)),
    ((0, 3), (3, 4)),
    ((2, 0), (0, 4)),
    ((0, 2, 3), (1, 3, 0)),
]


@pytest.mark.parametrize(("shape_a", "shape_b"), MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize(
    ("dtype_a", "dtype_b"),
    [(d, d) for d in DTYPES] + [(np.int32, np.float32), (np.bool_, np.int32), (np.int8, np.uint8)],
    ids=lambda d: np.dtype(d).name,
)
def test_matmul_matches_numpy(shape_a, shape_b, dtype_a, dtype_b):
    a, b = make_input(shape_a, dtype_a, 0), make_input(shape_b, dtype_b, 1)
    expected = np.matmul(a, b)
    for result in both_ways(snp.matmul, a, b):
        check(result, expected)
    check(spmd.device_put(a) @ spmd.device_put(b), expected)
    check(spmd.jit(lambda x, y: x @ y)(a, b), expected)


def test_matmul_rejects_scalars_like_numpy():
    for x1, x2 in [(2, np.ones(3)), (np.ones(3), 2.0), (np.float32(2), np.ones((2, 2)))]:
        with pytest.raises(spmd.ShapeError, match="scalar; matmul needs at least one dimension"):
            snp.matmul(x1, x2)


def test_matmul_shape_mismatch_names_shapes_and_contracted_dimension():
    pattern = r"\(3, 4\) and \(5, 6\) do not align.*axis 1, size 4.*axis 0, size 5"
    with pytest.raises(spmd.ShapeError, match=pattern):
        snp.matmul(np.ones((3, 4)), np.ones((5, 6)))
    with pytest.raises(spmd.ShapeError, match="its only axis of x2 \\(axis 0, size 3\\)"):
        spmd.jit(lambda x, y: x @ y)(np.ones((2, 4)), np.ones(3))


def test_matmul_batch_dimensions_that_do_not_broadcast_are_named():
    with pytest.raises(spmd.ShapeError, match=r"batch dimensions \(2,\) and \(3,\) cannot"):
        snp.matmul(np.ones((2, 4, 5)), np.ones((3, 5, 6)))


@pytest.mark.parametrize(
    ("shape_a", "shape_b"),
    [
        *[((), ()), ((), (3,)), ((2, 3), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4))],
        *[((2, 3), (3, 4)), ((2, 3, 4), (5, 4, 2)), ((2, 0), (0, 3)), ((4,), (2, 4, 3))],
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_dot_matches_numpy(shape_a, shape_b, dtype):
    a, b = make_input(shape_a, dtype, 2), make_input(shape_b, np.int32, 3)
    expected = np.dot(a, b)
    for result in both_ways(snp.dot, a, b):
        check(result, np.asarray(expected))


def test_dot_with_python_scalars_promotes_as_numpy_does():
    x = np.arange(3, dtype=np.int32)
    for scalar in (2, 2.5, True):
        check(snp.dot(scalar, x), np.asarray(np.dot(scalar, x)))
    assert snp.dot(2, x).dtype == np.int64  # NumPy's dot makes Python scalars strong
    with pytest.raises(spmd.ShapeError, match=r"\(2, 3\) and \(4,\) do not align"):
        snp.dot(np.ones((2, 3)), np.ones(4))


@pytest.mark.parametrize(
    ("shape_a", "shape_b", "axes"),
    [
        ((2, 3, 4), (3, 4, 5), 2),
        ((2, 3), (3, 4), 1),
        ((2, 3), (4,), 0),
        ((3, 4, 2), (4, 5, 3), ([0, 1], [2, 0])),
        ((3, 4, 2), (4, 5, 3), ((-3, -2), (-1, 0))),
        ((2, 3), (3, 2), ([0, 1], [1, 0])),
        ((0, 3), (3, 0), 1),
        ((2, 3), (2, 3), 2),
        ((), (), 0),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32], ids=lambda d: d.__name__)
def test_tensordot_matches_numpy(shape_a, shape_b, axes, dtype):
    a, b = make_input(shape_a, dtype, 4), make_input(shape_b, dtype, 5)
    expected = np.asarray(np.tensordot(a, b, axes))
    for result in both_ways(snp.tensordot, a, b, axes=axes):
        check(result, expected)


def test_tensordot_errors_name_axes_and_sizes():
    with pytest.raises(spmd.ShapeError, match=r"axis 1 of a \(size 3\).*axis 0 of b \(size 4\)"):
        snp.tensordot(np.ones((2, 3)), np.ones((4, 3)), ([1], [0]))
    with pytest.raises(spmd.ShapeError, match="axes=3 must be between 0"):
        snp.tensordot(np.ones((2, 3)), np.ones((2, 3)), 3)
    with pytest.raises(spmd.ShapeError, match="2 axes of a with 1 axes of b"):
        snp.tensordot(np.ones((2, 3)), np.ones((2, 3)), ([0, 1], [0]))


@pytest.mark.parametrize(("shape_a", "shape_b"), [((3,), (4,)), ((2, 2), (3,)), ((), (0,))])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_outer_matches_numpy(shape_a, shape_b, dtype):
    a, b = make_input(shape_a, dtype, 6), make_input(shape_b, np.float32, 7)
    for result in both_ways(snp.outer, a, b):
        check(result, np.outer(a, b))


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ba", [(2, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(0,), (0,)]),
    ("i,i->i", [(1,), (3,)]),
    ("i,i->i", [(1,), (0,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("ij,j->i", [(2, 3), (3,)]),
    ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
    ("ii,ij->j", [(3, 3), (3, 2)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (1, 3, 4)]),
    ("...ij,jk", [(2, 2, 3), (3, 4)]),
    ("i...->...", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,i,i->", [(3,), (3,), (3,)]),
    (",ij->ij", [(), (2, 3)]),
]


@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM_CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_einsum_matches_numpy(subscripts, shapes, dtype):
    operands = [make_input(s, dtype, seed) for seed, s in enumerate(shapes)]
    expected = np.asarray(np.einsum(subscripts, *operands))
    for result in both_ways(lambda *xs: snp.einsum(subscripts, *xs), *operands):
        check(result, expected)


def test_einsum_errors_name_labels_operands_and_sizes():
    with pytest.raises(spmd.ShapeError, match=r"label 'j' stands for dimensions of sizes \[3, 4\]"):
        snp.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(spmd.ShapeError, match=r"operand 1 is f64\[3\] \(1 dimensions\).*'jk'"):
        snp.einsum("ij,jk", np.ones((2, 3)), np.ones(3))
    with pytest.raises(spmd.ShapeError, match="describe 2 operands but 1 were given"):
        snp.einsum("ij,jk", np.ones((2, 3)))
    with pytest.raises(spmd.ShapeError, match="must name distinct labels"):
        snp.einsum("ij->iq", np.ones((2, 3)))
    with pytest.raises(spmd.SpmdTypeError, match="interleaved form"):
        snp.einsum(np.ones(3), [0])


def test_all_contractions_bind_one_einsum_primitive_with_its_factor_string():
    x, y = np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32)
    for fn in (snp.matmul, lambda a, b: snp.einsum("bij,bjk->bik", a, b)):
        program = spmd.make_jaxpr(fn)(x, y)
        assert [e.primitive.name for e in program.equations] == ["einsum"]
        assert program.equations[0].params == {"subscripts": "abc,acd->abd"}
        assert str(program.out_avals[0]) == "f32[2,3,5]"
    assert einsum_factors(subscripts="abc,acd->abd") == ("a b c, a c d -> a b d", ("c",))
    assert einsum_factors(subscripts="ab,cd->abcd") == ("a b, c d -> a b c d", ())
    program = spmd.make_jaxpr(snp.tensordot)(np.ones((3, 4)), np.ones((3, 4)))
    assert program.equations[0].params == {"subscripts": "ab,ab->"}


def test_jit_of_matmul_chain_matches_numpy_for_many_random_shapes():
    rng = np.random.default_rng(0)
    for m, k, n in itertools.islice(itertools.product(range(0, 4), repeat=3), 0, None, 3):
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        c = rng.standard_normal((n, 2))
        check(spmd.jit(lambda x, y, z: (x @ y) @ z)(a, b, c), (a @ b) @ c)
    assert m * k * n > 0  # the loop reached non-empty shapes
