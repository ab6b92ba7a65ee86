"""Contractions beyond the case table (tests/cases/): scalars, messages, one einsum primitive."""

import itertools

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.prims.contraction import einsum_factors


def check(result, expected):
    """Same dtype and shape; integers and bools exact, floats to rounding (BLAS order)."""
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if expected.dtype.kind in "fc":
        tolerance = 1e-5 if expected.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(np.asarray(result), expected, rtol=tolerance, atol=tolerance)
    else:
        np.testing.assert_array_equal(np.asarray(result), expected)


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


def test_dot_with_python_scalars_promotes_as_numpy_does():
    x = np.arange(3, dtype=np.int32)
    for scalar in (2, 2.5, True):
        check(snp.dot(scalar, x), np.asarray(np.dot(scalar, x)))
    assert snp.dot(2, x).dtype == np.int64  # NumPy's dot makes Python scalars strong
    with pytest.raises(spmd.ShapeError, match=r"\(2, 3\) and \(4,\) do not align"):
        snp.dot(np.ones((2, 3)), np.ones(4))


def test_tensordot_errors_name_axes_and_sizes():
    with pytest.raises(spmd.ShapeError, match=r"axis 1 of a \(size 3\).*axis 0 of b \(size 4\)"):
        snp.tensordot(np.ones((2, 3)), np.ones((4, 3)), ([1], [0]))
    with pytest.raises(spmd.ShapeError, match="axes=3 must be between 0"):
        snp.tensordot(np.ones((2, 3)), np.ones((2, 3)), 3)
    with pytest.raises(spmd.ShapeError, match="2 axes of a with 1 axes of b"):
        snp.tensordot(np.ones((2, 3)), np.ones((2, 3)), ([0, 1], [0]))


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
