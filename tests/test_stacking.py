"""spmd.numpy's vstack, hstack, dstack, column_stack and vdot against NumPy."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P

OPERANDS = [
    [1.0, 2.0],
    [np.arange(3.0), np.arange(3.0) + 1],
    [np.ones((2, 3)), np.zeros((2, 3))],
    [np.ones((2, 3, 2)), np.arange(12.0).reshape(2, 3, 2)],
    [np.ones((1, 3)), np.arange(3.0)],
]


@pytest.mark.parametrize("name", ["vstack", "hstack", "dstack", "column_stack"])
@pytest.mark.parametrize("case", range(len(OPERANDS)))
def test_stacking_matches_numpy(name, case):
    arrays = OPERANDS[case]
    try:
        expected = getattr(np, name)(arrays)
    except ValueError:
        with pytest.raises(spmd.SpmdError):
            getattr(snp, name)(arrays)
        return
    got = np.asarray(getattr(snp, name)(arrays))
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_stacking_sharded_arrays_and_dtype():
    mesh = spmd.make_mesh((8,), ("x",))
    x = spmd.device_put(np.arange(8.0), NamedSharding(mesh, P("x")))
    np.testing.assert_array_equal(np.asarray(snp.vstack([x, x])), np.vstack([np.arange(8.0)] * 2))
    out = snp.hstack([np.arange(2), np.arange(2)], dtype=np.float32)
    assert out.dtype == np.float32
    with pytest.raises(spmd.SpmdValueError, match="at least one array"):
        snp.vstack([])


def test_vdot_conjugates_the_first_operand_and_flattens():
    a = np.array([[1 + 2j, 3 - 1j], [0.5j, 2]])
    b = np.array([[2 - 1j, 1j], [1, -1 + 1j]])
    np.testing.assert_allclose(complex(np.asarray(snp.vdot(a, b))), np.vdot(a, b))
    assert float(np.asarray(snp.vdot(np.ones((2, 3)), np.arange(6.0)))) == np.vdot(
        np.ones((2, 3)), np.arange(6.0)
    )
    with pytest.raises(spmd.ShapeError, match="sizes must match"):
        snp.vdot(np.ones(3), np.ones(4))
