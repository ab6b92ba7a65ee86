"""spmd.numpy.fft against numpy.fft (every norm, n and s shorter and longer than the axes,
several axes, empty axes), the fft primitive's transposes by the dot-product test, its jvp
and gradients against finite differences, vmap against a loop, and sharded runs: a split
batch axis stays split with no communication, a split transformed axis is gathered."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
import spmd.numpy.fft as sfft
from spmd import NamedSharding, P, ShapeError, SpmdTypeError, SpmdValueError
from spmd.debug import count_collectives
from spmd.prims.fft import fft_p

NORMS = (None, "backward", "ortho", "forward")
TOL = {np.dtype(np.complex64): 2e-5, np.dtype(np.float32): 2e-5}


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _check(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want.dtype, want.shape)
    tol = TOL.get(want.dtype, 1e-12) * max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


ONE_AXIS = [  # (function, input dtype, shape, n, axis)
    *[
        (f, d, (4, 6), n, a)
        for f in ("fft", "ifft")
        for d in (np.complex64, np.complex128)
        for n in (None, 3, 9)
        for a in (-1, 0)
    ],
    *[("fft", d, (5,), None, -1) for d in (np.float32, np.float64, np.int32)],
    *[("rfft", d, (3, 7), n, -1) for d in (np.float32, np.float64) for n in (None, 4, 11)],
    ("rfft", np.int64, (6,), None, 0),
    *[("irfft", d, (3, 5), n, -1) for d in (np.complex64, np.complex128) for n in (None, 4, 9)],
    ("irfft", np.float64, (4,), 5, 0),
    *[("hfft", np.complex128, (2, 5), n, 1) for n in (None, 7, 3)],
    *[("ihfft", np.float64, (2, 6), n, 1) for n in (None, 5)],
    ("ihfft", np.float32, (7,), None, 0),
]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(("name", "dtype", "shape", "n", "axis"), ONE_AXIS)
def test_one_axis_transforms_match_numpy_eagerly_and_under_jit(name, dtype, shape, n, axis, norm):
    x = _data(shape, dtype)
    want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    fn = getattr(sfft, name)
    _check(fn(x, n=n, axis=axis, norm=norm), want)
    _check(spmd.jit(lambda v: fn(v, n=n, axis=axis, norm=norm))(x), want)


MANY_AXES = [  # (function, input dtype, shape, s, axes)
    *[
        (f, np.complex128, (3, 4, 5), s, a)
        for f in ("fftn", "ifftn")
        for s, a in [
            (None, None),
            (None, (0, 2)),
            ((2, 6), (2, 0)),
            ((4, 3, 7), None),
            ((-1, 8), (1, 2)),
        ]
    ],
    ("fftn", np.complex64, (4, 6), None, None),
    ("fftn", np.float32, (4, 6), (3, 3), (0, 1)),
    ("fftn", np.complex128, (4, 6), None, (1, 1)),  # an axis named twice: transformed twice
    *[
        (f, np.float64, (3, 4, 6), s, a)
        for f in ("rfftn",)
        for s, a in [(None, None), (None, (2, 0)), ((5, 3), (1, 2)), ((3, 4, 7), None)]
    ],
    ("rfftn", np.float32, (4, 5), None, None),
    *[
        (f, np.complex128, (3, 4, 5), s, a)
        for f in ("irfftn",)
        for s, a in [(None, None), (None, (2, 0)), ((5, 7), (0, 1)), ((3, 4, 6), None)]
    ],
    ("irfftn", np.complex64, (4, 5), None, None),
    *[
        (f, np.complex128, (2, 4, 6), s, None)
        for f in ("fft2", "ifft2", "irfft2")
        for s in (None, (3, 5))
    ],
    *[("rfft2", np.float64, (2, 4, 6), s, None) for s in (None, (3, 5))],
]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(("name", "dtype", "shape", "s", "axes"), MANY_AXES)
def test_transforms_over_several_axes_match_numpy(name, dtype, shape, s, axes, norm):
    x = _data(shape, dtype)
    kwargs = {"s": s, "norm": norm, **({} if axes is None else {"axes": axes})}
    if axes is None and s is not None and not name.endswith("2"):
        kwargs["axes"] = tuple(range(len(shape) - len(s), len(shape)))  # NumPy 2's wish
    want = getattr(np.fft, name)(x, **kwargs)
    fn = getattr(sfft, name)
    _check(fn(x, **kwargs), want)
    _check(spmd.jit(lambda v: fn(v, **kwargs))(x), want)


@pytest.mark.parametrize(
    ("name", "shape", "kwargs"),
    [
        ("fft", (0, 4), {"axis": 1}),
        ("ifft", (2, 0, 4), {"n": 6}),
        ("rfft", (0, 5), {}),
        ("irfft", (3, 0, 4), {"axis": -1, "n": 5}),
        ("fftn", (0, 3, 4), {"axes": (1, 2)}),
        ("rfftn", (2, 0, 6), {"axes": (0, 2)}),
        ("fftshift", (0, 3), {}),
    ],
)
def test_empty_arrays_transform_along_their_nonempty_axes(name, shape, kwargs):
    dtype = np.float64 if name.startswith("r") or name == "fftshift" else np.complex128
    x = np.zeros(shape, dtype)
    _check(getattr(sfft, name)(x, **kwargs), getattr(np.fft, name)(x, **kwargs))


def test_frequencies_and_shifts_match_numpy():
    for n, d in itertools.product((1, 2, 7, 8), (1.0, 0.25)):
        _check(sfft.fftfreq(n, d), np.fft.fftfreq(n, d))
        _check(sfft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    assert sfft.fftfreq(5, dtype=np.float32).dtype == np.float32
    np.testing.assert_allclose(sfft.rfftfreq(6, 0.5, dtype=np.float32), np.fft.rfftfreq(6, 0.5))
    x = _data((3, 4, 5), np.float64)
    for axes in (None, 0, (2, 1), -1):
        _check(sfft.fftshift(x, axes), np.fft.fftshift(x, axes))
        _check(sfft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
        _check(spmd.jit(lambda v, a=axes: sfft.fftshift(v, a))(x), np.fft.fftshift(x, axes))


def test_the_module_is_an_attribute_and_a_submodule():
    import importlib

    assert snp.fft is importlib.import_module("spmd.numpy.fft")
    assert snp.fft.fft is sfft.fft and "fft" not in snp.__all__


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: sfft.fft(np.ones(4, complex), n=0), SpmdValueError, "n=0"),
        (lambda: sfft.irfft(np.ones(1, complex)), SpmdValueError, "n=0"),
        (lambda: sfft.fft(np.ones(4), norm="bogus"), SpmdValueError, "norm='bogus'"),
        (lambda: sfft.fft(np.ones((2, 3)), axis=2), ShapeError, "axis=2"),
        (lambda: sfft.fft(np.float64(3.0)), ShapeError, "no axes"),
        (lambda: sfft.rfft(np.ones(4, complex)), SpmdTypeError, "real part"),
        (lambda: sfft.fftn(np.ones((2, 3)), s=(2, 3), axes=(0,)), ShapeError, "one length"),
        (lambda: sfft.fftn(np.ones((2, 3)), s=(2, 3, 4)), ShapeError, "s=(2, 3, 4)"),
        (lambda: sfft.fft(np.ones(4), n=2.5), SpmdTypeError, "n must be an integer"),
        (lambda: sfft.fftfreq(0), SpmdValueError, "n=0"),
        (lambda: sfft.fftfreq(4, dtype=np.int32), SpmdTypeError, "int32"),
    ],
)
def test_bad_arguments_raise_errors_that_name_them(call, error, words):
    with pytest.raises(error, match=None) as info:
        call()
    assert words in str(info.value), info.value


# --- derivatives -----------------------------------------------------------------------------

PRIMITIVE_CASES = [  # (params, operand shape, operand dtype)
    *[
        (
            {
                "kind": "c2c",
                "axes": axes,
                "lengths": tuple(shape[a] for a in axes),
                "inverse": inverse,
            },
            shape,
            np.complex128,
        )
        for shape, axes in [((5,), (0,)), ((3, 4), (1, 0)), ((2, 3, 4), (0, 2))]
        for inverse in (False, True)
    ],
    *[
        ({"kind": "r2c", "axes": axes, "lengths": lengths, "inverse": False}, shape, np.float64)
        for shape, axes, lengths in [
            ((6,), (0,), (6,)),
            ((7,), (0,), (7,)),
            ((3, 5), (0, 1), (3, 5)),
            ((4, 3, 2), (2, 0), (2, 4)),
        ]
    ],
    *[
        ({"kind": "c2r", "axes": axes, "lengths": lengths, "inverse": True}, shape, np.complex128)
        for shape, axes, lengths in [
            ((4,), (0,), (6,)),
            ((4,), (0,), (7,)),
            ((3, 3), (0, 1), (3, 5)),
            ((3, 3, 2), (2, 0), (2, 4)),
        ]
    ],
]


def _pairing(u, v) -> float:
    """JAX's pairing of a value and a cotangent: Re(sum(u * v)), no conjugate."""
    return float(np.real(np.sum(np.asarray(u) * np.asarray(v))))


@pytest.mark.parametrize("norm", NORMS[1:])
@pytest.mark.parametrize(("params", "shape", "dtype"), PRIMITIVE_CASES)
def test_transpose_passes_the_dot_product_test(params, shape, dtype, norm):
    def transform(v):
        return fft_p.bind(v, norm=norm, **params)

    x = _data(shape, dtype, seed=1)
    y = transform(snp.asarray(x))
    ct = _data(y.shape, y.dtype, seed=2)
    for wrap in (lambda f: f, spmd.jit):
        out, pullback = spmd.vjp(wrap(transform), x)
        (x_ct,) = pullback(ct)
        assert x_ct.dtype == dtype and x_ct.shape == shape
        np.testing.assert_allclose(_pairing(out, ct), _pairing(x, x_ct), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("params", "shape", "dtype"), PRIMITIVE_CASES)
def test_jvp_matches_finite_differences(params, shape, dtype):
    def transform(v):
        return fft_p.bind(v, norm="ortho", **params)

    x, t = _data(shape, dtype, seed=3), _data(shape, dtype, seed=4)
    _, tangent = spmd.jvp(transform, (x,), (t,))
    eps = 1e-6
    plus, minus = (
        np.asarray(transform(snp.asarray(x + eps * t))),
        np.asarray(transform(snp.asarray(x - eps * t))),
    )
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "loss",
    [
        lambda v: snp.sum(snp.abs(sfft.fft(v, n=7)) ** 2),
        lambda v: snp.sum(snp.real(sfft.rfftn(v, s=(3, 6), norm="ortho")) * snp.arange(4.0)),
        lambda v: snp.sum(sfft.irfft(sfft.rfft(v, axis=0) * 1j, n=5, axis=0) ** 3),
        lambda v: snp.sum(sfft.hfft(v[0], norm="forward") * snp.arange(8.0)),
        lambda v: snp.sum(snp.imag(sfft.ihfft(v[:, 1:]) ** 2)),
        lambda v: snp.sum(sfft.fftshift(v, 1) * snp.arange(5.0)),
    ],
)
def test_gradients_of_real_losses_match_finite_differences(loss):
    x = _data((4, 5), np.float64, seed=5)
    grad = np.asarray(spmd.grad(loss)(x))
    np.testing.assert_allclose(spmd.jit(spmd.grad(loss))(x), grad, rtol=1e-10, atol=1e-10)
    eps = 1e-6
    numeric = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        numeric[index] = (float(loss(x + step)) - float(loss(x - step))) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-5)


def test_gradient_of_a_complex_input_matches_jax_convention():
    """grad of a real loss of a complex input is the conjugate of dL/dRe + i dL/dIm, as JAX's."""
    z = _data((6,), np.complex128, seed=6)
    weights = np.arange(6.0)

    def loss(v):
        return snp.sum(snp.real(sfft.fft(v) * weights))

    def real_loss(re, im):
        return float(np.sum(np.real(np.fft.fft(re + 1j * im) * weights)))

    eps, numeric = 1e-6, np.zeros(6, complex)
    for i in range(6):
        e = np.eye(6)[i] * eps
        d_re = (real_loss(z.real + e, z.imag) - real_loss(z.real - e, z.imag)) / (2 * eps)
        d_im = (real_loss(z.real, z.imag + e) - real_loss(z.real, z.imag - e)) / (2 * eps)
        numeric[i] = d_re - 1j * d_im
    np.testing.assert_allclose(spmd.grad(loss)(z), numeric, rtol=1e-6, atol=1e-6)


# --- vmap and sharding --------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda v: sfft.fft(v, n=6, axis=0),
        lambda v: sfft.rfftn(v.real, axes=(1, 0)),
        lambda v: sfft.irfftn(v, s=(4, 5)),
        lambda v: sfft.ifft2(v, norm="ortho"),
    ],
)
@pytest.mark.parametrize("in_axis", (0, 1, 2))
def test_vmap_matches_a_loop(fn, in_axis):
    x = _data((3, 4, 5), np.complex128, seed=7)
    got = spmd.vmap(fn, in_axes=in_axis)(x)
    want = np.stack([np.asarray(fn(m)) for m in np.moveaxis(x, in_axis, 0)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _rows_over(x, mesh_size=8):
    mesh = spmd.make_mesh((mesh_size,), ("x",))
    return spmd.device_put(x, NamedSharding(mesh, P("x")))


@pytest.mark.parametrize(
    ("fn", "oracle"),
    [
        (lambda v: sfft.fft(v), lambda v: np.fft.fft(v)),
        (
            lambda v: sfft.irfft(sfft.rfft(v.real), n=16),
            lambda v: np.fft.irfft(np.fft.rfft(v.real), n=16),
        ),
        (lambda v: sfft.fftn(v, axes=(1,), s=(9,)), lambda v: np.fft.fftn(v, axes=(1,), s=(9,))),
    ],
)
def test_a_split_batch_axis_stays_split_with_no_communication(fn, oracle):
    x = _data((13, 16), np.complex64, seed=8)  # 13 rows over 8 devices: uneven
    with count_collectives() as counts:
        result = spmd.jit(fn)(_rows_over(x))
    assert counts.total == 0, counts
    assert result.sharding.spec == P("x")
    _check(result, oracle(x).astype(result.dtype))
    assert "none: every operand already lies" in spmd.jit(fn).lower(_rows_over(x)).explain()


def test_a_split_transformed_axis_is_gathered_first():
    x = _data((13, 3), np.complex128, seed=9)
    f = spmd.jit(lambda v: sfft.fft(v, axis=0, norm="ortho"))
    with count_collectives() as counts:
        result = f(_rows_over(x))
    assert counts.total >= 1, counts
    _check(result, np.fft.fft(x, axis=0, norm="ortho"))
    explained = f.lower(_rows_over(x)).explain()
    assert "all-gather" in explained and "fft (operand 0) reads it as P()" in explained
    grad = spmd.jit(spmd.grad(lambda v: snp.sum(snp.abs(sfft.rfft(v, axis=0)) ** 2)))
    real = x.real.copy()
    want = spmd.grad(lambda v: snp.sum(snp.abs(sfft.rfft(v, axis=0)) ** 2))(real)
    np.testing.assert_allclose(grad(_rows_over(real)), want, rtol=1e-12, atol=1e-12)
