"""spmd.random: Threefry known answers, JAX's numbers, statistics, jit, and per-shard counters."""

import numpy as np
import pytest

import spmd
import spmd.random as sr
from spmd.prims.random import bits_for_counters, counters, erfinv, scale, threefry2x32

U32 = np.uint32


@pytest.mark.parametrize(
    ("key", "counter", "expected"),
    [  # Random123's known-answer vectors for threefry2x32_20
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 2, (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ],
)
def test_threefry2x32_matches_random123_known_answers(key, counter, expected):
    y0, y1 = threefry2x32(
        np, np.array(key, U32), np.array(counter[:1], U32), np.array(counter[1:], U32)
    )
    assert (int(y0[0]), int(y1[0])) == expected
    assert y0.dtype == y1.dtype == np.uint32


@pytest.mark.parametrize(
    ("seed", "words"),
    [
        (0, [0, 0]),
        (42, [0, 42]),
        (2**40 + 5, [256, 5]),
        (-1, [2**32 - 1] * 2),
        (2**64 - 1, [2**32 - 1] * 2),
    ],
)
def test_key_splits_a_64_bit_seed_into_two_words(seed, words):
    k = sr.key(seed)
    assert isinstance(k, spmd.Array) and k.dtype == np.uint32 and k.shape == (2,)
    assert np.asarray(k).tolist() == words


def test_numbers_equal_jax_partitionable_threefry_for_key_0():
    # Values printed by jax 0.10.2 (jax_threefry_partitionable=True) for jax.random.key(0).
    k = sr.key(0)
    assert np.asarray(sr.bits(k, (4,))).tolist() == [4070199207, 4202968722, 1427181096, 2012915765]
    assert np.asarray(sr.bits(k, (4,), np.uint8)).tolist() == [167, 146, 40, 53]
    assert np.asarray(sr.split(k, 3)).tolist() == [
        [1797259609, 2579123966],
        [928981903, 3453687069],
        [4146024105, 2718843009],
    ]
    assert np.asarray(sr.fold_in(k, 7)).tolist() == [2716826189, 292468403]
    np.testing.assert_array_equal(
        np.asarray(sr.uniform(k, (4,))),
        np.array(
            [0.9476670026779175, 0.9785798788070679, 0.33229148387908936, 0.46866846084594727],
            np.float32,
        ),
    )
    np.testing.assert_allclose(
        np.asarray(sr.normal(k, (4,))),
        [1.622642159461975, 2.0252647399902344, -0.4335944354534149, -0.07861734926700592],
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        np.asarray(sr.uniform(sr.key(1), (2, 3), minval=-1, maxval=1)),
        [[-0.12273502349853516, 0.0675058364868164, -0.10816335678100586],
         [-0.12320733070373535, 0.7947256565093994, 0.11789202690124512]],
        rtol=1e-6,
    )  # fmt: skip


def test_same_key_same_numbers_and_different_keys_differ():
    a, b = sr.normal(sr.key(7), (64,)), sr.normal(sr.key(7), (64,))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(a), np.asarray(sr.normal(sr.key(8), (64,))))


def test_split_keys_differ_from_each_other_and_from_the_parent():
    k = sr.key(0)
    keys = np.asarray(sr.split(k, 5))
    assert keys.shape == (5, 2) and keys.dtype == np.uint32
    rows = {tuple(r) for r in keys.tolist()} | {tuple(np.asarray(k).tolist())}
    assert len(rows) == 6
    first, second = sr.split(k)
    assert np.asarray(sr.split(k, (2, 3))).shape == (2, 3, 2)
    assert not np.array_equal(
        np.asarray(sr.uniform(first, (8,))), np.asarray(sr.uniform(second, (8,)))
    )
    assert not np.array_equal(np.asarray(sr.fold_in(k, 1)), np.asarray(sr.fold_in(k, 2)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_uniform_lies_in_its_range_with_mean_one_half(dtype):
    u = np.asarray(sr.uniform(sr.key(1), (100_000,), dtype))
    assert u.dtype == dtype and u.shape == (100_000,)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.astype(np.float64).mean() - 0.5) < 0.01
    assert abs(u.astype(np.float64).var() - 1 / 12) < 0.005
    v = np.asarray(sr.uniform(sr.key(2), (10_000,), dtype, minval=-3.0, maxval=-2.0))
    assert v.min() >= -3 and v.max() < -2


def test_uniform_bounds_broadcast_and_default_dtype_is_float32():
    u = np.asarray(
        sr.uniform(sr.key(3), (1000, 3), minval=np.array([0.0, 10.0, 20.0]), maxval=[1, 11, 21])
    )
    assert u.dtype == np.float32
    for column in range(3):
        assert 10 * column <= u[:, column].min() and u[:, column].max() < 10 * column + 1


def test_scaling_never_rounds_up_to_maxval():
    largest = np.array([1 - 2**-23], np.float32)  # the largest float uniform draws
    hi = np.float32(1 + 2**-22)
    assert largest * (hi - 1) + 1 == hi  # plain scaling would return maxval
    assert scale(largest, 1.0, hi)[0] < hi


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normal_has_mean_zero_and_std_one(dtype):
    z = np.asarray(sr.normal(sr.key(4), (100_000,), dtype))
    assert z.dtype == dtype and np.isfinite(z).all()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.01  # the normal's mass within one std


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfinv_inverts_erf(dtype):
    from math import erf

    x = np.linspace(-0.999999, 0.999999, 2001).astype(dtype)
    roundtrip = np.array([erf(v) for v in erfinv(x).astype(np.float64)])
    np.testing.assert_allclose(roundtrip, x, rtol=2e-6 if dtype == np.float32 else 1e-14)
    assert erfinv(np.array([1.0, -1.0], dtype)).tolist() == [np.inf, -np.inf]


def test_random_functions_give_the_same_numbers_eagerly_and_under_jit():
    def draw(k, i):
        return (
            sr.uniform(k, (2, 3)),
            sr.normal(k, (5,), np.float64),
            sr.bits(k, (4,), np.uint64),
            sr.split(k, 3),
            sr.fold_in(k, i),
            sr.uniform(k, (3,), minval=np.zeros(3), maxval=2.0),
        )

    k = sr.key(11)
    for eager, jitted in zip(draw(k, 7), spmd.jit(draw)(k, 7), strict=True):
        assert eager.dtype == jitted.dtype and eager.shape == jitted.shape
        np.testing.assert_array_equal(np.asarray(eager), np.asarray(jitted))


@pytest.mark.parametrize(
    ("shape", "block"),
    [
        ((12,), (slice(4, 8),)),
        ((6, 10), (slice(3, 6), slice(5, 10))),
        ((4, 5, 6), (slice(1, 3),)),
        ((5,), (slice(4, 5),)),
        ((3, 4), (slice(2, 2), slice(None))),
    ],
)
def test_a_block_of_counters_gives_the_block_of_the_whole(shape, block):
    key = np.asarray(sr.key(5))
    np.testing.assert_array_equal(
        counters(shape, block), np.arange(np.prod(shape), dtype=np.uint64).reshape(shape)[block]
    )
    for dtype in (np.uint32, np.uint64):
        whole = np.asarray(sr.bits(sr.key(5), shape, dtype))
        np.testing.assert_array_equal(
            bits_for_counters(key, counters(shape, block), dtype), whole[block]
        )


def test_scalar_and_empty_shapes():
    k = sr.key(0)
    assert sr.uniform(k).shape == () and sr.normal(k, 0).shape == (0,)
    assert sr.bits(k, (2, 0)).shape == (2, 0) and sr.split(k, 0).shape == (0, 2)
    assert float(np.asarray(sr.uniform(k))) == np.float32(0.947667)  # element 0 of uniform(k, (4,))


def test_misuse_raises_errors_that_name_the_problem():
    k = sr.key(0)
    with pytest.raises(spmd.ShapeError, match=r"uniform: .*u32\[3,2\].*keys\[0\]"):
        sr.uniform(sr.split(k, 3), (2,))
    with pytest.raises(spmd.SpmdTypeError, match=r"normal: .*f32\[2\]"):
        sr.normal(np.zeros(2, np.float32), (2,))
    with pytest.raises(spmd.SpmdTypeError, match="uniform: dtype=int32"):
        sr.uniform(k, (2,), np.int32)
    with pytest.raises(spmd.SpmdTypeError, match="bits: dtype=float32"):
        sr.bits(k, (2,), np.float32)
    with pytest.raises(spmd.ShapeError, match="negative"):
        sr.normal(k, (2, -1))
    with pytest.raises(spmd.SpmdTypeError, match="shape="):
        sr.normal(k, (2.5,))
    with pytest.raises(spmd.ShapeError, match=r"minval f64\[4\] does not broadcast .*\(3,\)"):
        sr.uniform(k, (3,), minval=np.zeros(4))
    with pytest.raises(spmd.SpmdTypeError, match="fold_in: data must be one integer"):
        sr.fold_in(k, 1.5)
    with pytest.raises(spmd.SpmdTypeError, match="seed must be a Python int"):
        sr.key(1.5)
    with pytest.raises(spmd.SpmdTypeError, match="64 bits"):
        sr.key(2**64)
