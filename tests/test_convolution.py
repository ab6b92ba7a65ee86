"""spmd.lax's convolutions against a direct loop over output positions in exact arithmetic
(reference_conv of tests/cases/convolution.py) on sampled strides, padding, dilations,
dimension numbers, feature and batch groups, 1-D to 3-D; the simple cases against
scipy.signal; gradients against finite differences; vmap against a loop; sharded runs
against unsharded ones (batch, features, output features, spatial dimensions; uneven and
empty blocks); and the errors bad arguments raise."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P, ShapeError, SpmdError, SpmdTypeError, SpmdValueError, lax
from spmd.debug import count_collectives
from spmd.prims import convolution_impl
from tests.cases.convolution import reference_conv

DN = ("NHWC", "HWIO", "NHWC")
LAYOUTS = {  # spatial dimensions -> dimension numbers
    1: [None, ("NWC", "WIO", "NWC"), ("CNW", "OWI", "WNC")],
    2: [None, ("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NHWC"), ("HNCW", "WHIO", "CWNH")],
    3: [None, ("NDHWC", "DHWIO", "NDHWC")],
}


def _draw(seed: int):
    """A random convolution: operands (float64) and conv_general_dilated's arguments."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 4))
    layout = LAYOUTS[k][int(rng.integers(len(LAYOUTS[k])))]
    groups = int(rng.choice([1, 1, 2, 3]))
    batches = 1 if groups > 1 else int(rng.choice([1, 1, 2]))
    n, per_group = batches * int(rng.integers(1, 3)), int(rng.integers(1, 3))
    o = max(groups, batches) * int(rng.integers(1, 3))
    sides = 6 if k == 1 else 5 if k == 2 else 3
    spatial = tuple(int(v) for v in rng.integers(1, sides + 1, k))
    window = tuple(int(v) for v in rng.integers(1, 4, k))
    strides = tuple(int(v) for v in rng.integers(1, 3, k))
    lhs_dilation = tuple(int(v) for v in rng.integers(1, 3, k))
    rhs_dilation = tuple(int(v) for v in rng.integers(1, 3, k))
    if rng.random() < 0.3 and lhs_dilation == (1,) * k:
        padding = str(rng.choice(["SAME", "VALID", "SAME_LOWER"]))
    else:
        pairs = [tuple(int(v) for v in rng.integers(-1, 3, 2)) for _ in range(k)]
        dilated = [(size - 1) * d + 1 for size, d in zip(spatial, lhs_dilation, strict=True)]
        padding = [(lo, max(hi, -size - lo)) for (lo, hi), size in zip(pairs, dilated, strict=True)]
    canonical_lhs, canonical_rhs = (n, groups * per_group, *spatial), (o, per_group, *window)
    dnums = lax.conv_dimension_numbers((0,) * (k + 2), (0,) * (k + 2), layout)
    lhs_shape, rhs_shape = [0] * (k + 2), [0] * (k + 2)
    for size, d in zip(canonical_lhs, dnums.lhs_spec, strict=True):
        lhs_shape[d] = size
    for size, d in zip(canonical_rhs, dnums.rhs_spec, strict=True):
        rhs_shape[d] = size
    lhs, rhs = rng.standard_normal(lhs_shape), rng.standard_normal(rhs_shape)
    kwargs = dict(window_strides=strides, padding=padding, lhs_dilation=lhs_dilation,
                  rhs_dilation=rhs_dilation, dimension_numbers=layout,
                  feature_group_count=groups, batch_group_count=batches)  # fmt: skip
    return lhs, rhs, kwargs


def _reference(lhs, rhs, kwargs):
    dnums = lax.conv_dimension_numbers(lhs.shape, rhs.shape, kwargs["dimension_numbers"])
    padding = kwargs["padding"]
    if isinstance(padding, str):
        spatial = [lhs.shape[d] for d in dnums.lhs_spec[2:]]
        window = [rhs.shape[d] for d in dnums.rhs_spec[2:]]
        reach = [(k - 1) * r + 1 for k, r in zip(window, kwargs["rhs_dilation"], strict=True)]
        padding = lax.padtype_to_pads(spatial, reach, kwargs["window_strides"], padding)
    return reference_conv(lhs, rhs, kwargs["window_strides"], padding, kwargs["lhs_dilation"],
                          kwargs["rhs_dilation"], dnums, kwargs["feature_group_count"],
                          kwargs["batch_group_count"])  # fmt: skip


@pytest.fixture(params=[None, "gather", "scatter"])
def way(request, monkeypatch):
    """Each implementation (windows gathered, products scattered) on every draw, and the
    choice between them."""
    monkeypatch.setattr(convolution_impl, "FORCE", request.param)
    return request.param


@pytest.mark.parametrize("seed", range(60))
def test_matches_the_loop_reference_eagerly_and_under_jit(seed, way):
    lhs, rhs, kwargs = _draw(seed)
    want = _reference(lhs, rhs, kwargs)
    got = lax.conv_general_dilated(lhs, rhs, **kwargs)
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    jitted = spmd.jit(lambda a, b: lax.conv_general_dilated(a, b, **kwargs))(lhs, rhs)
    np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.complex64, np.bool_])
def test_dtypes_follow_the_operands_and_preferred_element_type(dtype, way):
    rng = np.random.default_rng(3)
    lhs = rng.integers(-3, 4, (2, 3, 6)).astype(dtype)
    rhs = rng.integers(-3, 4, (4, 3, 2)).astype(dtype)
    got = lax.conv(lhs, rhs, (1,), "VALID")
    want = reference_conv(lhs, rhs, (1,), [(0, 0)], (1,), (1,), ((0, 1, 2),) * 3)
    if dtype == np.bool_:  # or of ands, as NumPy's matmul of booleans
        want = reference_conv(lhs.astype(int), rhs.astype(int), (1,), [(0, 0)], (1,), (1,),
                              ((0, 1, 2),) * 3) > 0  # fmt: skip
    assert got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), want.astype(got.dtype), rtol=1e-6)
    if np.dtype(dtype).kind == "i":
        wide = lax.conv(lhs, rhs, (1,), "VALID", preferred_element_type=np.float64)
        assert wide.dtype == np.float64
        np.testing.assert_array_equal(np.asarray(wide), want)


def test_one_and_two_dimensional_cases_match_scipy_signal():
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal(11), rng.standard_normal(4)
    for mode, padding in (("valid", "VALID"), ("full", [(3, 3)])):
        got = lax.conv(x[None, None], w[None, None], (1,), padding)[0, 0]
        np.testing.assert_allclose(got, scipy.signal.correlate(x, w, mode), rtol=1e-12)
    flipped = np.ascontiguousarray(w[::-1])
    got = lax.conv(x[None, None], flipped[None, None], (1,), [(3, 3)])[0, 0]
    np.testing.assert_allclose(got, scipy.signal.convolve(x, w, "full"), rtol=1e-12)
    image, kernel = rng.standard_normal((7, 9)), rng.standard_normal((3, 3))
    got = lax.conv(image[None, None], kernel[None, None], (1, 1), "SAME")[0, 0]
    np.testing.assert_allclose(got, scipy.signal.correlate(image, kernel, "same"), atol=1e-12)
    got = lax.conv_with_general_padding(image[None, None], kernel[None, None], (1, 1),
                                        [(2, 2), (2, 2)], None, None)[0, 0]  # fmt: skip
    np.testing.assert_allclose(got, scipy.signal.correlate(image, kernel, "full"), atol=1e-12)
    strided = lax.conv(image[None, None], kernel[None, None], (2, 3), "VALID")[0, 0]
    np.testing.assert_allclose(strided, scipy.signal.correlate(image, kernel, "valid")[::2, ::3],
                               atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize(("n", "m"), [(7, 3), (3, 7), (4, 6), (6, 4), (1, 5), (5, 5)])
def test_numpy_correlate_and_convolve_match_numpy(n, m, mode):
    rng = np.random.default_rng(n * 10 + m)
    a, v = rng.standard_normal(n) + 1j * rng.standard_normal(n), rng.standard_normal(m) + 0.5j
    for name in ("correlate", "convolve"):
        want = getattr(np, name)(a, v, mode)
        np.testing.assert_allclose(getattr(snp, name)(a, v, mode), want, atol=1e-12)
        got = spmd.jit(lambda x, y, name=name: getattr(snp, name)(x, y, mode))(a.real, v.real)
        np.testing.assert_allclose(got, getattr(np, name)(a.real, v.real, mode), atol=1e-12)


def test_numpy_correlate_of_a_long_signal_works_in_pieces():
    """A window matrix over the budget is built and multiplied piecewise: same numbers."""
    rng = np.random.default_rng(5)
    a, v = rng.standard_normal(40_000), rng.standard_normal(300)
    np.testing.assert_allclose(snp.correlate(a, v, "same"), np.correlate(a, v, "same"),
                               rtol=1e-9, atol=1e-9)  # fmt: skip


# ------------------------------------------------------------------------- derivatives


def _pairing(u, v) -> float:
    return float(np.sum(np.asarray(u) * np.asarray(v)))


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_jvp_matches_finite_differences_and_vjp_passes_the_dot_product_test(seed, way):
    lhs, rhs, kwargs = _draw(seed)
    rng = np.random.default_rng(seed + 1000)
    t_lhs, t_rhs = rng.standard_normal(lhs.shape), rng.standard_normal(rhs.shape)

    def f(a, b):
        return lax.conv_general_dilated(a, b, **kwargs)

    out, tangent = spmd.jvp(f, (lhs, rhs), (t_lhs, t_rhs))
    eps = 1e-6
    plus = np.asarray(f(lhs + eps * t_lhs, rhs + eps * t_rhs))
    minus = np.asarray(f(lhs - eps * t_lhs, rhs - eps * t_rhs))
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-6)
    ct = rng.standard_normal(out.shape)
    for wrap in (lambda g: g, spmd.jit):
        _, pullback = spmd.vjp(wrap(f), lhs, rhs)
        ct_lhs, ct_rhs = pullback(ct)
        assert ct_lhs.shape == lhs.shape and ct_rhs.shape == rhs.shape
        np.testing.assert_allclose(_pairing(ct, tangent),
                                   _pairing(ct_lhs, t_lhs) + _pairing(ct_rhs, t_rhs),
                                   rtol=1e-9, atol=1e-9)  # fmt: skip


def test_gradient_of_a_cnn_loss_matches_finite_differences():
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((2, 5, 5, 2)), rng.standard_normal((3, 3, 2, 3))
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(w):
        y = lax.conv_general_dilated(x, w, (2, 1), "SAME", dimension_numbers=dn)
        return snp.sum(snp.tanh(y) ** 2)

    grad = np.asarray(spmd.grad(loss)(w))
    eps, numeric = 1e-6, np.zeros_like(w)
    for index in np.ndindex(w.shape):
        step = np.zeros_like(w)
        step[index] = eps
        numeric[index] = (float(loss(w + step)) - float(loss(w - step))) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_conv_transpose_with_transposed_kernel_is_the_gradient_of_conv(padding):
    rng = np.random.default_rng(7)
    rows = 8 if padding == "SAME" else 7  # whole strides: the transpose gives the lhs shape
    x, w = rng.standard_normal((2, rows, 6, 3)), rng.standard_normal((3, 2, 3, 4))
    dn = ("NHWC", "HWIO", "NHWC")
    y, pullback = spmd.vjp(
        lambda v: lax.conv_general_dilated(v, w, (2, 2), padding, dimension_numbers=dn), x
    )
    ct = rng.standard_normal(y.shape)
    (want,) = pullback(ct)
    got = lax.conv_transpose(ct, w, (2, 2), padding, dimension_numbers=dn, transpose_kernel=True)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("groups", "batches"), [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (2, 1)])
def test_vmap_matches_a_loop(in_axes, groups, batches):
    rng = np.random.default_rng(8)
    lhs = rng.standard_normal((2 * batches, 5, 4, 2 * groups))
    rhs = rng.standard_normal((2, 3, 2, 2 * max(groups, batches)))
    kwargs = dict(window_strides=(1, 2), padding="SAME", feature_group_count=groups,
                  batch_group_count=batches, dimension_numbers=DN)  # fmt: skip
    size = 3
    lhs_b, rhs_b = lhs, rhs
    if in_axes[0] is not None:
        lhs_b = np.stack([lhs * (1 + j) for j in range(size)], in_axes[0])
    if in_axes[1] is not None:
        rhs_b = np.stack([rhs - j for j in range(size)], in_axes[1])
    member = lambda x, axis, j: x if axis is None else np.take(x, j, axis)  # noqa: E731
    want = np.stack([
        np.asarray(lax.conv_general_dilated(member(lhs_b, in_axes[0], j),
                                            member(rhs_b, in_axes[1], j), **kwargs))
        for j in range(size)
    ])  # fmt: skip
    fn = spmd.vmap(lambda a, b: lax.conv_general_dilated(a, b, **kwargs), in_axes=in_axes)
    np.testing.assert_allclose(fn(lhs_b, rhs_b), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(spmd.jit(fn)(lhs_b, rhs_b), want, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- sharded


def _put(x, *spec):
    mesh = spmd.make_mesh((8,), ("x",))
    return spmd.device_put(x, NamedSharding(mesh, P(*spec)))


def _conv(**extra):
    def conv(a, b):
        return lax.conv_general_dilated(a, b, (1, 1), "SAME", dimension_numbers=DN, **extra)

    return spmd.jit(conv)


@pytest.mark.parametrize("batch", [13, 3])  # uneven blocks; empty blocks
def test_a_split_batch_runs_on_each_device_with_no_communication(batch):
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((batch, 6, 5, 3)), rng.standard_normal((3, 3, 3, 4))
    want = np.asarray(_conv()(x, w))
    with count_collectives() as counts:
        got = _conv()(_put(x, "x"), w)
    assert counts.total == 0, counts
    assert got.sharding.spec == P("x")
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    assert "none: every operand already lies" in _conv().lower(_put(x, "x"), w).explain()
    loss = lambda a, b: snp.sum(_conv()(a, b) ** 2)  # noqa: E731
    grads = spmd.jit(spmd.grad(loss, (0, 1)))(_put(x, "x"), w)
    for got_grad, want_grad in zip(grads, spmd.grad(loss, (0, 1))(x, w), strict=True):
        np.testing.assert_allclose(np.asarray(got_grad), np.asarray(want_grad), rtol=1e-10,
                                   atol=1e-10)  # fmt: skip


@pytest.mark.parametrize("features", [16, 5])
def test_split_input_features_leave_a_pending_sum_reduced_once(features):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 6, 5, features))
    w = rng.standard_normal((3, 3, features, 6))
    want = np.asarray(_conv()(x, w))
    with count_collectives() as counts:
        got = _conv()(_put(x, None, None, None, "x"), _put(w, None, None, "x"))
    assert counts["all-reduce"] == 1 and counts.total == 1, counts
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    explained = _conv().lower(_put(x, None, None, None, "x"), _put(w, None, None, "x")).explain()
    assert "pending sum over 'x'" in explained


def test_split_output_features_stay_split():
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((4, 6, 5, 3)), rng.standard_normal((3, 3, 3, 13))
    with count_collectives() as counts:
        got = _conv()(x, _put(w, None, None, None, "x"))
    assert counts.total == 0
    assert got.sharding.spec == P(None, None, None, "x")
    np.testing.assert_allclose(np.asarray(got), np.asarray(_conv()(x, w)), atol=1e-12)


def test_depthwise_groups_split_over_devices_with_no_communication():
    rng = np.random.default_rng(12)
    x, w = rng.standard_normal((2, 6, 5, 16)), rng.standard_normal((3, 3, 1, 32))
    conv = _conv(feature_group_count=16)
    with count_collectives() as counts:
        got = conv(_put(x, None, None, None, "x"), _put(w, None, None, None, "x"))
    assert counts.total == 0 and got.sharding.spec == P(None, None, None, "x")
    np.testing.assert_allclose(np.asarray(got), np.asarray(conv(x, w)), atol=1e-12)


def test_batch_groups_split_over_devices_with_no_communication():
    rng = np.random.default_rng(14)
    x, w = rng.standard_normal((16, 5, 4, 3)), rng.standard_normal((3, 2, 3, 16))
    conv = _conv(batch_group_count=8)
    with count_collectives() as counts:
        got = conv(_put(x, "x"), _put(w, None, None, None, "x"))
    assert counts.total == 0 and got.sharding.spec == P(None, None, None, "x")
    np.testing.assert_allclose(np.asarray(got), np.asarray(conv(x, w)), atol=1e-12)


def test_a_split_spatial_dimension_is_gathered_first():
    rng = np.random.default_rng(13)
    x, w = rng.standard_normal((2, 16, 5, 3)), rng.standard_normal((3, 3, 3, 4))
    with count_collectives() as counts:
        got = _conv()(_put(x, None, "x"), w)
    assert counts["all-gather"] >= 1, counts
    np.testing.assert_allclose(np.asarray(got), np.asarray(_conv()(x, w)), atol=1e-12)
    explained = _conv().lower(_put(x, None, "x"), w).explain()
    assert "all-gather" in explained
    assert "conv_general_dilated (operand 0) reads it as P()" in explained
    assert "dimension 1 of operand 0 is gathered: a convolution's spatial dimension" in explained


# ------------------------------------------------------------------------------ errors

ERRORS = [
    # (lhs shape, rhs shape, keyword arguments, error, words the message holds)
    ((2, 3, 5), (4, 2, 2), {}, ShapeError, ["3 features", "2 input features"]),
    ((2, 4, 5), (4, 2, 2), {"feature_group_count": 3}, ShapeError, ["feature_group_count=3"]),
    ((2, 4, 5), (3, 2, 2), {"feature_group_count": 2}, ShapeError, ["3 output features"]),
    ((3, 2, 5), (4, 2, 2), {"batch_group_count": 2}, ShapeError, ["batch of 3"]),
    ((2, 2, 5), (4, 1, 2), {"feature_group_count": 2, "batch_group_count": 2}, SpmdValueError,
     ["at most one"]),
    ((2, 2, 3), (4, 2, 2), {"padding": [(-3, -1)]}, ShapeError, ["crops", "(-1,)"]),
    ((2, 2, 5), (4, 2, 0), {}, ShapeError, ["spatial size 0"]),
    ((2, 2, 5, 5), (4, 2, 2), {}, ShapeError, ["same number of dimensions"]),
    ((2, 2, 5), (4, 2, 2), {"window_strides": (0,)}, SpmdValueError, ["window_strides=(0,)"]),
    ((2, 2, 5), (4, 2, 2), {"window_strides": (1, 1)}, SpmdValueError, ["window_strides"]),
    ((2, 2, 5), (4, 2, 2), {"padding": "FULL"}, SpmdValueError, ["'FULL'"]),
    ((2, 2, 5), (4, 2, 2), {"padding": [(1, 1), (1, 1)]}, SpmdValueError, ["padding"]),
    ((2, 2, 5), (4, 2, 2), {"dimension_numbers": ("NCW", "OIW")}, SpmdTypeError, ["three"]),
    ((2, 2, 5), (4, 2, 2), {"dimension_numbers": ("NCC", "OIW", "NCW")}, SpmdValueError,
     ["'NCC'"]),
    ((2, 2, 5), (4, 2, 2), {"dimension_numbers": ("NCW", "OIH", "NCW")}, SpmdValueError,
     ["spatial letters"]),
    ((2, 2, 5), (4, 2, 2), {"dimension_numbers": ("NCHW", "OIHW", "NCHW")}, ShapeError,
     ["names 4 dimensions"]),
    ((2, 2, 5), (4, 2, 2), {"lhs_dilation": (2,), "padding": "SAME"}, SpmdValueError,
     ["lhs_dilation"]),
]  # fmt: skip


@pytest.mark.parametrize(("lhs", "rhs", "kwargs", "error", "words"), ERRORS)
def test_bad_arguments_raise_errors_naming_them(lhs, rhs, kwargs, error, words):
    kwargs = {"window_strides": (1,) * (len(lhs) - 2), "padding": "VALID"} | kwargs
    x, w = np.ones(lhs, np.float32), np.ones(rhs, np.float32)

    def conv(a, b):
        return lax.conv_general_dilated(a, b, **kwargs)

    for run in (conv, spmd.jit(conv)):
        with pytest.raises(error) as info:
            run(x, w)
        assert isinstance(info.value, SpmdError)
        for word in words:
            assert word in str(info.value), (word, str(info.value))


def test_operands_of_two_dtypes_or_a_narrower_preferred_type_are_refused():
    x, w = np.ones((1, 2, 5), np.float32), np.ones((3, 2, 2), np.float64)
    with pytest.raises(SpmdTypeError, match=r"f32\[1,2,5\] and rhs f64"):
        lax.conv(x, w, (1,), "VALID")
    with pytest.raises(SpmdTypeError, match="preferred_element_type=int16"):
        lax.conv(x.astype(np.int32), w.astype(np.int32), (1,), "VALID",
                 preferred_element_type=np.int16)  # fmt: skip


def test_numpy_correlate_refuses_what_numpy_refuses():
    with pytest.raises(SpmdValueError, match="empty"):
        snp.correlate(np.ones(3), np.ones(0))
    with pytest.raises(ShapeError, match="1-D"):
        snp.correlate(np.ones((2, 2)), np.ones(2))
    with pytest.raises(SpmdValueError, match="mode"):
        snp.convolve(np.ones(3), np.ones(2), mode="circular")
