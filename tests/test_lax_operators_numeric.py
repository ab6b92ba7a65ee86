"""spmd.lax's elementwise names, reductions, sorts and running reductions beyond the case
table's rows: exact integer and rounding rules against Python's arithmetic on every integer
width, sampled shapes (sizes 0 and 1 included) against NumPy, sharded inputs with the
collectives they should cost, vmap, and derivatives against float64 finite differences."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P, lax
from tests.cases.lax_reference import NUMPY_LAX_OPERATORS as REF
from tests.cases.lax_reference import SAME_AS_NUMPY

INTEGERS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def put(x, *spec, mesh_shape=(8,)):
    mesh = spmd.make_mesh(mesh_shape, ("a", "b")[: len(mesh_shape)])
    return spmd.device_put(x, spmd.NamedSharding(mesh, P(*spec)))


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


def integers(rng, dtype, shape=(64,)):
    """Values of ``dtype`` across its range, its extremes, 0 and +-1 included."""
    info = np.iinfo(dtype)
    edges = [info.min, info.max, 0, 1, info.max // 2 + 1] + ([-1, info.min + 1] if info.min else [])
    spread = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return np.concatenate([np.array(edges, dtype), spread.ravel()])


def from_ints(values, dtype):
    """Python ints as ``dtype``, wrapped to its width (two's complement), exactly."""
    width = 8 * np.dtype(dtype).itemsize
    unsigned = np.array([v % (1 << width) for v in values], np.dtype(f"u{width // 8}"))
    return unsigned.astype(dtype)


def test_lax_names_for_numpy_functions_are_those_functions():
    for name, numpy_name in SAME_AS_NUMPY.items():
        assert getattr(lax, name) is getattr(snp, numpy_name), name


@pytest.mark.parametrize("dtype", INTEGERS)
def test_div_and_rem_truncate_toward_zero_as_c_on_every_integer_width(dtype):
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    x, y = integers(rng, dtype), integers(rng, dtype)[::-1]
    y = np.where(y == 0, dtype(3), y)
    info = np.iinfo(dtype)
    keep = ~((x == info.min) & (y == -1)) if info.min else np.ones(x.shape, bool)  # overflow
    x, y = x[keep], y[keep]
    quotients = [int(a) // int(b) if (a < 0) == (b < 0) else -(abs(int(a)) // abs(int(b)))
                 for a, b in zip(x, y, strict=True)]  # fmt: skip
    same(lax.div(x, y), from_ints(quotients, dtype))
    same(lax.rem(x, y), from_ints([int(a) - q * int(b) for a, b, q in
                                   zip(x, y, quotients, strict=True)], dtype))  # fmt: skip
    same(spmd.jit(lax.rem)(put(x, "a"), put(y, "a")), np.fmod(x, y))


def test_float_rem_is_fmod_on_special_values():
    x = np.array([5.3, -5.3, -0.0, 0.0, np.inf, -7.0, 1e-300, 7.5, np.nan, 3.0])
    y = np.array([0.1, 2.0, 3.0, -3.0, 2.0, np.inf, 1e300, -0.0, 1.0, -2.0])
    for dtype in (np.float32, np.float64):
        a, b = x.astype(dtype), y.astype(dtype)
        want = [math.fmod(p, q) if q != 0 and math.isfinite(p) and not math.isnan(q) else math.nan
                for p, q in zip(a.tolist(), b.tolist(), strict=True)]  # fmt: skip
        got = np.asarray(lax.rem(a, b))
        np.testing.assert_array_equal(got, np.array(want, dtype))
        assert np.array_equal(np.signbit(got), np.signbit(np.array(want, dtype)))  # -0.0 kept


def test_round_breaks_ties_away_from_zero_exactly():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, 4503599627370495.5,
                  2.0**52 + 1, -0.0, -0.4, 1e300, np.inf, -np.inf, np.nan])  # fmt: skip
    halves = [Fraction(1, 2) + abs(Fraction(v)) for v in x[:11].tolist()]
    want = [math.copysign(math.floor(h), v) for h, v in zip(halves, x[:11].tolist(), strict=True)]
    got = np.asarray(lax.round(x))
    np.testing.assert_array_equal(got[:11], want)
    assert np.array_equal(np.signbit(got[:11]), np.signbit(want))
    np.testing.assert_array_equal(got[11:], x[11:])
    same(lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), np.round(x))
    same(lax.round(x.astype(np.float32)), REF.round(x.astype(np.float32)))


@pytest.mark.parametrize("dtype", INTEGERS)
def test_bit_counts_and_logical_shifts_on_every_integer_width(dtype):
    rng = np.random.default_rng(5)
    x = integers(rng, dtype)
    width = 8 * np.dtype(dtype).itemsize
    bits = [int(v) % (1 << width) for v in x]  # two's complement as an unsigned int
    same(lax.population_count(x), from_ints([b.bit_count() for b in bits], dtype))
    same(lax.clz(x), from_ints([width - b.bit_length() for b in bits], dtype))
    for shift in (0, 1, width - 1, width, width + 3):
        logical = [b >> shift if shift < width else 0 for b in bits]
        want = from_ints(logical, dtype)
        same(lax.shift_right_logical(x, dtype(shift)), want)
        same(spmd.jit(lax.shift_right_logical)(x, np.full(x.shape, shift, dtype)), want)


def test_cbrt_nextafter_and_complex_are_exact():
    same(lax.cbrt(np.array([-27.0, 8.0, 0.0, -0.0, np.inf])), np.cbrt([-27.0, 8, 0, -0.0, np.inf]))
    for dtype in (np.float32, np.float64):
        a = np.array([0.0, 1.0, -1.0, np.inf, np.nan, 1.0], dtype)
        b = np.array([1.0, 2.0, -np.inf, 0.0, 1.0, 1.0], dtype)
        same(lax.nextafter(a, b), np.nextafter(a, b))
    z = lax.complex(np.array([np.inf, -0.0, 1.0]), np.array([-0.0, np.inf, np.nan]))
    parts = np.stack([np.real(z), np.imag(z)])
    np.testing.assert_array_equal(parts, [[np.inf, -0.0, 1.0], [-0.0, np.inf, np.nan]])
    assert np.signbit(parts[0, 1]) and np.signbit(parts[1, 0])


def test_reductions_keep_the_dtype_and_reduce_empty_axes_to_the_identity():
    big = np.full((3, 4), 2**30, np.int32)
    same(lax.reduce_sum(big, (1,)), np.add.reduce(big, axis=1, dtype=np.int32))  # wraps as lax
    same(lax.reduce_max(np.zeros((2, 0), np.int8), (1,)), np.full(2, -128, np.int8))
    same(lax.reduce_min(np.zeros((0, 2)), (0,)), np.full(2, np.inf))
    same(lax.reduce_and(np.zeros((2, 0), bool), (1,)), np.ones(2, bool))
    rng = np.random.default_rng(2)
    for dtype in (np.int32, np.uint64, np.int8):
        x = integers(rng, dtype, (7, 9))[:63].reshape(7, 9)
        for name, ufunc in (("and", np.bitwise_and), ("or", np.bitwise_or),
                            ("xor", np.bitwise_xor)):  # fmt: skip
            reduce = getattr(lax, f"reduce_{name}")
            same(reduce(x, (0, 1)), ufunc.reduce(x, axis=(0, 1)))
            same(spmd.jit(reduce, static_argnums=1)(put(x, "a"), (0,)), ufunc.reduce(x, axis=0))


def test_reduce_starts_from_init_values_once():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(lax.reduce(x, 5.0, lax.add, (0,)), x.sum(0) + 5)
    traced = spmd.jit(lambda v, s: lax.reduce(v, s, lax.max, (1,)))(x, 6.5)
    np.testing.assert_array_equal(traced, np.maximum(x.max(1), 6.5))
    tree = lax.reduce({"a": x}, {"a": 1.0}, snp.multiply, (0, 1))
    assert set(tree) == {"a"} and float(tree["a"]) == 0.0


def random_keys(rng, shape):
    return rng.integers(-2, 3, size=shape), rng.integers(0, 2, size=shape).astype(bool)


@pytest.mark.parametrize("jitted", [False, True])
def test_sorting_by_keys_equals_lexsort_on_sampled_shapes(jitted):
    rng = np.random.default_rng(11)
    for _ in range(25):
        shape = tuple(int(n) for n in rng.integers(0, 5, size=rng.integers(1, 4)))
        dimension = int(rng.integers(-len(shape), len(shape)))
        first, second = random_keys(rng, shape)
        values = rng.standard_normal(shape)
        for keys in (1, 2):
            f = lambda *a, k=keys, d=dimension: lax.sort(a, d, num_keys=k)  # noqa: E731
            got = (spmd.jit(f) if jitted else f)(first, second, values)
            for g, w in zip(got, REF.sort((first, second, values), dimension, num_keys=keys),
                            strict=True):  # fmt: skip
                same(g, w)


def test_top_k_takes_ties_by_index_and_nan_first():
    rng = np.random.default_rng(4)
    for _ in range(25):
        shape = tuple(int(n) for n in rng.integers(1, 6, size=rng.integers(1, 4)))
        x = rng.integers(-2, 3, size=shape).astype(np.float64)
        x[rng.random(shape) < 0.1] = np.nan
        k = int(rng.integers(0, shape[-1] + 1))
        for g, w in zip(lax.top_k(x, k), REF.top_k(x, k), strict=True):
            same(g, w)


def test_top_k_and_sorts_keep_batch_dimensions_on_their_devices():
    x = np.random.default_rng(0).standard_normal((11, 6))  # 11 rows over 8: one block empty
    sharded = put(x, "a")
    for f, want in (
        (lambda a: lax.top_k(a, 3), REF.top_k(x, 3)),
        (lambda a: lax.sort((a, -a), 1), REF.sort((x, -x), 1)),
        (lambda a: lax.cummax(a, 1, reverse=True), REF.cummax(x, 1, reverse=True)),
        (lambda a: lax.cumlogsumexp(a, 1), REF.cumlogsumexp(x, 1)),
    ):
        with spmd.debug.count_collectives() as counts:
            got = spmd.jit(f)(sharded)
        assert not counts, counts
        for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple)
                        else [want], strict=True):  # fmt: skip
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)


def test_an_axis_split_along_the_sorted_dimension_is_gathered_once_and_explained():
    x = np.random.default_rng(1).standard_normal((3, 10))
    for f in (lambda a: lax.top_k(a, 4), lambda a: lax.cummin(a, 1)):
        sharded = put(x, None, "a")
        with spmd.debug.count_collectives() as counts:
            spmd.jit(f)(sharded)
        assert dict(counts) == {"all-gather": 1}, counts
        explained = spmd.jit(f).lower(sharded).explain()
        assert "reads it as P(), and it lies as P(None, 'a')" in explained


def test_vmap_of_top_k_and_sorts_by_keys_equals_a_loop():
    x = np.random.default_rng(3).standard_normal((4, 3, 5))
    values, indices = spmd.vmap(lambda a: lax.top_k(a, 2), in_axes=1)(x)
    for i in range(3):
        want = REF.top_k(x[:, i], 2)
        same(values[i], want[0])
        same(indices[i], want[1])
    keys = np.round(x)
    got = spmd.vmap(lambda k, v: lax.sort_key_val(k, v, 0), in_axes=2, out_axes=1)(keys, x)
    for i in range(5):
        for g, w in zip(got, REF.sort((keys[..., i], x[..., i]), 0), strict=True):
            same(np.asarray(g)[:, i], w)


def check_derivatives(f, *args, seed=0):
    """jvp against central differences in float64 along random directions, and vjp against
    jvp (the dot-product test), eagerly and under jit."""
    rng = np.random.default_rng(seed)
    directions = [rng.standard_normal(np.shape(a)) for a in args]
    eps = 1e-6
    plus = f(*(a + eps * d for a, d in zip(args, directions, strict=True)))
    minus = f(*(a - eps * d for a, d in zip(args, directions, strict=True)))
    numeric = (np.asarray(plus) - np.asarray(minus)) / (2 * eps)
    for g in (f, spmd.jit(f)):
        out, tangent = spmd.jvp(g, args, tuple(directions))
        np.testing.assert_allclose(np.asarray(tangent), numeric, rtol=1e-6, atol=1e-7)
        weights = rng.standard_normal(np.shape(out))
        _, pullback = spmd.vjp(g, *args)
        cotangents = pullback(weights)
        left = sum(float(np.sum(np.asarray(c) * d)) for c, d in zip(cotangents, directions,
                                                                      strict=True))  # fmt: skip
        assert left == pytest.approx(float(np.sum(weights * np.asarray(tangent))), rel=1e-9)


DERIVATIVES = {
    "dot_general": (lambda a, b: lax.dot_general(a, b, (((2,), (0,)), ((1,), (1,)))),
                    ((2, 3, 4), (4, 3, 5))),
    "cummax": (lambda a: lax.cummax(a, 1), ((3, 7),)),
    "cummin-reverse": (lambda a: lax.cummin(a, 0, reverse=True), ((6, 2),)),
    "cumlogsumexp": (lambda a: lax.cumlogsumexp(a, 1), ((2, 9),)),
    "cumlogsumexp-reverse": (lambda a: lax.cumlogsumexp(a * 30, 0, reverse=True), ((5, 3),)),
    "top_k": (lambda a: lax.top_k(a, 3)[0], ((4, 6),)),
    "sort-values": (lambda k, v: lax.sort((k, v), 1)[1], ((3, 5), (3, 5))),
    "rem": (lax.rem, ((8,), (8,))),
    "div": (lax.div, ((8,), (8,))),
    "cbrt": (lambda a: lax.cbrt(a * a + 1), ((6,),)),
    "nextafter": (lambda a, b: lax.nextafter(a, b), ((5,), (5,))),
    "complex": (lambda a, b: snp.abs(lax.complex(a, b) ** 3), ((4,), (4,))),
    "pad": (lambda a, v: lax.pad(a, v, [(2, -1, 1), (0, 1, 2)]), ((3, 2), ())),
    "broadcast_in_dim": (lambda a: lax.broadcast_in_dim(a, (3, 4, 2), (2, 0)), ((2, 3),)),
    "select_n": (lambda a, b: lax.select_n(np.array([1, 0, 1, 1]), a, b), ((4,), (4,))),
    "reduce_max": (lambda a: lax.reduce_max(a, (0, 2)), ((3, 2, 4),)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(DERIVATIVES))
def test_derivatives_match_finite_differences(name):
    f, shapes = DERIVATIVES[name]
    rng = np.random.default_rng(len(name))
    args = [rng.standard_normal(s) + (0.0 if s else 0.3) for s in shapes]
    check_derivatives(f, *args)
