"""Shape functions beyond the case table (tests/cases/): scalars, methods, programs, messages."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp


def assert_same(result, expected):
    """``result`` (an spmd Array or a list of them) equals NumPy's in dtype, shape and values."""
    if isinstance(expected, list):
        assert isinstance(result, list) and len(result) == len(expected)
        for r, e in zip(result, expected, strict=True):
            assert_same(r, e)
        return
    assert isinstance(result, spmd.Array)
    assert (result.dtype, result.shape) == (expected.dtype, expected.shape)
    np.testing.assert_array_equal(np.asarray(result), expected)


def test_concatenate_with_axis_none_promotes_python_scalars_weakly():
    x = np.arange(3, dtype=np.float32)
    expected = np.concatenate([x, 1.5], axis=None)
    assert expected.dtype == np.float32
    assert_same(snp.concatenate([spmd.device_put(x), 1.5], axis=None), expected)
    assert_same(spmd.jit(lambda v, s: snp.concatenate([v, s], axis=None))(x, 1.5), expected)
    assert_same(snp.concatenate([1, 2.0], axis=None), np.concatenate([1, 2.0], axis=None))


def test_stack_turns_python_scalars_into_arrays_as_numpy_does():
    x = np.float32(2)
    assert_same(snp.stack([x, 1.0]), np.stack([x, 1.0]))  # float64: the scalar is strong here
    assert_same(snp.stack([1, 2]), np.array([1, 2]))


def test_array_methods_forward_to_the_shape_functions():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    a = spmd.device_put(x)

    def methods(v):
        return {
            "reshape": v.reshape(2, -1),
            "reshape_tuple": v.reshape((4, 6)),
            "T": v.T,
            "astype": v.astype(np.float32),
            "transpose": v.transpose(),
            "transpose_axes": v.transpose(1, 0, 2),
            "transpose_tuple": v.transpose((2, 0, 1)),
            "squeeze": v.reshape(1, 24, 1).squeeze(),
            "flatten": v.flatten(),
            "ravel": v.ravel(),
        }

    expected = methods(x)
    assert expected["astype"].dtype == np.float32 and expected["T"].shape == (4, 3, 2)
    for result in (methods(a), spmd.jit(methods)(x)):
        for key, value in expected.items():
            assert_same(result[key], value)


def test_one_split_equation_has_several_results_under_jit():
    text = str(spmd.make_jaxpr(lambda v: snp.split(v, [1], axis=-1))(np.ones((2, 3), np.float32)))
    assert "f32[2,1] c:f32[2,2] = split[axis=1 bounds=((0, 1), (1, 3))] a" in text


def test_tile_is_built_from_reshape_and_broadcast():
    text = str(spmd.make_jaxpr(lambda v: snp.tile(v, 2))(np.ones(3, np.float32)))
    assert [line.split(" = ")[1].split("[")[0] for line in text.splitlines()[1:-1]] == [
        "reshape",
        "broadcast_to",
        "reshape",
    ]


def f32(*shape):
    return np.ones(shape, np.float32)


ERRORS = [
    (lambda: snp.reshape(f32(2, 3), (4, 2)), spmd.ShapeError,
     r"reshape: cannot reshape f32\[2,3\] \(size 6\) into shape \(4, 2\)"),
    (lambda: snp.reshape(f32(2, 3), (4, -1)), spmd.ShapeError,
     r"cannot reshape f32\[2,3\] \(size 6\) into shape \(4, -1\)"),
    (lambda: snp.reshape(f32(0, 3), (0, -1)), spmd.ShapeError, r"into shape \(0, -1\)"),
    (lambda: snp.reshape(f32(6), (-1, -1)), spmd.ShapeError, "at most one -1"),
    (lambda: snp.reshape(f32(6), (2.0, 3)), spmd.SpmdTypeError, "shape must be an integer"),
    (lambda: snp.reshape(f32(6), (2, 3), order="K"), spmd.SpmdValueError,
     r"order must be one of 'C', 'F', 'A' \(got 'K'\)"),
    (lambda: snp.transpose(f32(2, 3), (0,)), spmd.ShapeError,
     r"axes=\(0,\) has 1 entries but f32\[2,3\] has 2 dimensions"),
    (lambda: snp.transpose(f32(2, 3), (0, -2)), spmd.ShapeError,
     r"axes=\(0, -2\) names axis 0 twice"),
    (lambda: snp.swapaxes(f32(2, 3), 3, 0), spmd.ShapeError,
     r"axis1=3 is out of bounds for f32\[2,3\], which has 2 dimension\(s\); use an axis in "
     r"\[-2, 2\)"),
    (lambda: snp.moveaxis(f32(2, 3, 4), [0, 1], [1]), spmd.ShapeError,
     r"same number of elements \(2 vs 1\)"),
    (lambda: snp.squeeze(f32(2, 1), 0), spmd.ShapeError,
     r"cannot squeeze axis 0 of f32\[2,1\]: its size is 2, not 1"),
    (lambda: snp.squeeze(f32(2, 1), (1, -1)), spmd.ShapeError,
     r"axis=\(1, -1\) names axis 1 twice"),
    (lambda: snp.expand_dims(f32(2, 3), 3), spmd.ShapeError,
     r"axis=3 is out of bounds for the result \(rank 3\)"),
    (lambda: snp.broadcast_to(f32(2), (3,)), spmd.ShapeError,
     r"cannot broadcast f32\[2\] to shape \(3,\): axis 0 has size 2, but the target's "
     r"dimension 0 is 3"),
    (lambda: snp.broadcast_to(f32(2, 1), (3,)), spmd.ShapeError, "fewer dimensions"),
    (lambda: snp.broadcast_to(f32(1), (2, -1)), spmd.ShapeError, "negative size"),
    (lambda: snp.concatenate([f32(2, 2), f32(2, 3)]), spmd.ShapeError,
     r"arrays\[1\] f32\[2,3\] does not match arrays\[0\] f32\[2,2\] along dimension 1 "
     r"\(3 vs 2\)"),
    (lambda: snp.concatenate([f32(2, 2), f32(2)]), spmd.ShapeError,
     r"arrays\[1\] f32\[2\] has 1 dimension\(s\) but arrays\[0\] f32\[2,2\] has 2"),
    (lambda: snp.concatenate([f32(2), 1.0]), spmd.ShapeError,
     r"arrays\[1\] is zero-dimensional"),
    (lambda: snp.concatenate([f32(2), f32(2)], axis=1), spmd.ShapeError,
     r"axis=1 is out of bounds for arrays\[0\] f32\[2\]"),
    (lambda: snp.concatenate([]), spmd.ShapeError, "need at least one array to concatenate"),
    (lambda: snp.concatenate(3.0), spmd.SpmdTypeError, "arrays must be a sequence"),
    (lambda: snp.stack([f32(2), f32(3)]), spmd.ShapeError,
     r"same shape, but arrays\[1\] is f32\[3\] and arrays\[0\] is f32\[2\]"),
    (lambda: snp.split(f32(5), 2), spmd.ShapeError,
     r"does not result in an equal division: axis 0 of f32\[5\] has size 5"),
    (lambda: snp.split(f32(5), 0), spmd.ShapeError, "equal division"),
    (lambda: snp.split(f32(), 1), spmd.ShapeError, "it has no axes"),
    (lambda: snp.split(f32(4), [1.5]), spmd.SpmdTypeError, "indices_or_sections"),
    (lambda: snp.tile(f32(3), -1), spmd.ShapeError, r"reps=\(-1,\) has a negative size"),
    (lambda: snp.repeat(f32(3), [1, 2], axis=0), spmd.ShapeError,
     r"repeats has 2 entries but axis 0 of f32\[3\] has size 3"),
    (lambda: snp.repeat(f32(3), -1), spmd.ShapeError, "negative counts"),
    (lambda: snp.repeat(f32(3), 2, axis=1), spmd.ShapeError, "axis=1 is out of bounds"),
    (lambda: snp.astype(f32(3), "foo"), spmd.SpmdTypeError, "dtype='foo' is not a dtype"),
    (lambda: snp.astype(f32(3), np.str_), spmd.SpmdTypeError, "dtype=<U0 is not supported"),
    (lambda: spmd.device_put(f32(3)).astype(object), spmd.SpmdTypeError, "object"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "message"), ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_misuse_raises_an_error_naming_the_argument_and_sizes(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_errors_are_raised_at_trace_time_under_jit():
    with pytest.raises(spmd.ShapeError, match=r"cannot reshape f32\[3\] \(size 3\)"):
        spmd.jit(lambda v: snp.reshape(v, (2, 2)))(f32(3))
    with pytest.raises(spmd.ShapeError, match=r"arrays\[1\] f32\[4,3\] does not match"):
        spmd.jit(lambda a, b: snp.concatenate([a, b], axis=1))(f32(2, 3), f32(4, 3))
