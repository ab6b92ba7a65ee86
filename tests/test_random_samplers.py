"""spmd.random's samplers beyond bits/uniform/normal: shapes and ranges, JAX's algorithms as
identities between samplers, sharded == unsharded, jit == eager, vmap over keys, and errors
for bad input (their statistics: tests/test_random_sampler_statistics.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special

import spmd
import spmd.random as sr
from spmd import NamedSharding, P
from spmd.debug import count_collectives
from tests.test_backends import BACKENDS, run_with_backend

KEY = sr.key(2024)


def draw(f, *args, **kwargs) -> np.ndarray:
    return np.asarray(f(KEY, *args, **kwargs))


# --- shapes, dtypes and ranges -----------------------------------------------------------

F32, I32 = np.dtype(np.float32), np.dtype(np.int32)
SAMPLERS = {  # id: (function of (key, shape), dtype, range check)
    "bernoulli": (lambda k, s: sr.bernoulli(k, 0.3, s), np.dtype(bool), None),
    "rademacher": (lambda k, s: sr.rademacher(k, s), I32, lambda x: np.isin(x, [-1, 1]).all()),
    "randint": (
        lambda k, s: sr.randint(k, s, -3, 7),
        I32,
        lambda x: (x >= -3).all() & (x < 7).all(),
    ),
    "randint-u8": (
        lambda k, s: sr.randint(k, s, 250, 256, np.uint8),
        np.dtype(np.uint8),
        lambda x: (x >= 250).all(),
    ),
    "exponential": (lambda k, s: sr.exponential(k, s), F32, lambda x: (x >= 0).all()),
    "gumbel": (lambda k, s: sr.gumbel(k, s), F32, np.isfinite),
    "gumbel-high": (lambda k, s: sr.gumbel(k, s, mode="high"), F32, np.isfinite),
    "laplace": (lambda k, s: sr.laplace(k, s, np.float64), np.dtype(np.float64), np.isfinite),
    "logistic": (lambda k, s: sr.logistic(k, s), F32, np.isfinite),
    "cauchy": (lambda k, s: sr.cauchy(k, s), F32, np.isfinite),
    "truncated_normal": (
        lambda k, s: sr.truncated_normal(k, -0.5, 1.5, s),
        F32,
        lambda x: (x > -0.5).all() & (x < 1.5).all(),
    ),
    "gamma": (lambda k, s: sr.gamma(k, 0.4, s), F32, lambda x: (x >= 0).all()),
    "beta": (lambda k, s: sr.beta(k, 2.0, 3.0, s), F32, lambda x: (x >= 0).all() & (x <= 1).all()),
    "t": (lambda k, s: sr.t(k, 3.0, s), F32, np.isfinite),
    "poisson": (lambda k, s: sr.poisson(k, 4.0, s), I32, lambda x: (x >= 0).all()),
    "categorical": (
        lambda k, s: sr.categorical(k, np.zeros(5, np.float32), shape=s),
        I32,
        lambda x: (x >= 0).all() & (x < 5).all(),
    ),
    "choice": (lambda k, s: sr.choice(k, 6, s), I32, lambda x: (x >= 0).all() & (x < 6).all()),
}


@pytest.mark.parametrize("name", SAMPLERS)
@pytest.mark.parametrize("shape", [(), (0,), (7, 5)])
def test_samplers_give_their_shape_dtype_and_range(name, shape):
    sample, dtype, in_range = SAMPLERS[name]
    x = np.asarray(sample(KEY, shape))
    assert x.shape == shape and x.dtype == dtype
    if in_range is not None and x.size:
        assert np.all(in_range(x)), x


def test_vector_samplers_give_their_shapes():
    assert draw(sr.dirichlet, np.ones(4), (3,)).shape == (3, 4)
    assert draw(sr.multivariate_normal, np.zeros(3), np.eye(3)).shape == (3,)
    assert draw(sr.multivariate_normal, np.zeros((2, 3)), np.eye(3), (5, 2)).shape == (5, 2, 3)
    assert draw(sr.orthogonal, 3, (2,)).shape == (2, 3, 3)
    assert draw(sr.orthogonal, 2, m=4).shape == (2, 4)
    assert draw(sr.ball, 3, 1.5, (4,)).shape == (4, 3)
    assert draw(sr.permutation, 0).shape == (0,)
    assert draw(sr.choice, np.ones((3, 4)), (2, 5), axis=1).shape == (3, 2, 5)
    assert draw(sr.choice, np.ones((3, 4)), (0,)).shape == (0, 4)
    assert draw(sr.categorical, np.zeros((2, 6)), 0, (4, 6)).shape == (4, 6)
    assert draw(sr.truncated_normal, np.zeros(3), np.ones((2, 1))).shape == (2, 3)


# --- JAX's algorithms, as identities between samplers ------------------------------------


def test_samplers_are_jax_formulas_over_the_same_uniform_draw():
    u = draw(sr.uniform, (1000,))
    np.testing.assert_array_equal(draw(sr.bernoulli, 0.3, (1000,)), u < np.float32(0.3))
    np.testing.assert_array_equal(draw(sr.exponential, (1000,)), -np.log1p(-u))
    tiny = np.finfo(np.float32).tiny
    u_tiny = draw(sr.uniform, (1000,), minval=tiny)
    np.testing.assert_array_equal(draw(sr.gumbel, (1000,)), -np.log(-np.log(u_tiny)))
    logits = np.log(np.array([[0.2, 0.5, 0.3]] * 4, np.float32))
    g = draw(sr.gumbel, (6, 4, 3))
    np.testing.assert_array_equal(
        draw(sr.categorical, logits, shape=(6, 4)), np.argmax(g + logits, axis=-1)
    )
    np.testing.assert_array_equal(draw(sr.rademacher, (1000,)), np.where(u < 0.5, 1, -1))


def test_truncated_normal_is_the_inverse_cdf_of_a_uniform_between_the_bounds():
    lo, hi = np.float64(-0.5), np.float64(1.5)
    a, b = scipy.special.erf(lo / np.sqrt(2)), scipy.special.erf(hi / np.sqrt(2))
    u = draw(sr.uniform, (1000,), np.float64, a, b)
    expected = np.sqrt(2) * scipy.special.erfinv(u)
    np.testing.assert_allclose(draw(sr.truncated_normal, lo, hi, (1000,), np.float64), expected)


def test_randint_is_two_words_of_bits_modulo_the_span():
    """JAX's scheme in uint32 arithmetic, which wraps (so for spans above 2**16 the
    multiplier 2**32 % span is computed as 0): ((hi % span) * multiplier + lo % span) % span,
    with hi and lo the bits of split(key)'s two keys."""
    k1, k2 = sr.split(KEY)
    hi, lo = (np.asarray(sr.bits(k, (500,))).astype(object) for k in (k1, k2))
    for lo_val, hi_val in [(0, 10), (-7, 1_000_003), (-(2**31), 2**31 - 1)]:
        span, word = hi_val - lo_val, 2**32
        multiplier = (2**16 % span) ** 2 % word % span
        offset = (((hi % span) * multiplier) % word + lo % span) % word % span
        got = np.asarray(sr.randint(KEY, (500,), lo_val, hi_val))
        assert got.tolist() == (lo_val + offset).tolist()
    assert (draw(sr.randint, (9,), 5, 3) == 5).all()  # an empty range gives minval


def test_randint_reaches_the_top_of_a_narrow_dtype():
    x = draw(sr.randint, (5000,), 0, 256, np.uint8)
    assert x.min() == 0 and x.max() == 255
    assert set(draw(sr.randint, (2000,), -128, 128, np.int8).tolist()) == set(range(-128, 128))


def test_permutation_sorts_by_random_keys_and_permutes_slices():
    n = 1000  # one round of sorting (JAX runs ceil(3 ln n / ln 2**32) rounds)
    sort_keys = np.asarray(sr.bits(sr.split(KEY)[1], (n,)))
    np.testing.assert_array_equal(draw(sr.permutation, n), np.argsort(sort_keys, kind="stable"))
    big = draw(sr.permutation, 5000)  # two rounds
    assert sorted(big.tolist()) == list(range(5000))
    x = np.arange(24).reshape(4, 6)
    rows = draw(sr.permutation, x)
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, x.tolist()))
    columns = draw(sr.permutation, x, axis=1)
    np.testing.assert_array_equal(columns, x[:, draw(sr.permutation, 6)])
    independent = draw(sr.permutation, x, 1, True)
    assert all(sorted(r) == list(x[i]) for i, r in enumerate(independent.tolist()))
    assert len({tuple(r - r.min()) for r in independent}) > 1  # rows shuffled differently


def test_shuffle_is_deprecated_and_equals_an_independent_permutation():
    x = np.arange(12).reshape(3, 4)
    with pytest.warns(FutureWarning, match="permutation.*independent=True"):
        shuffled = sr.shuffle(KEY, x, axis=1)
    np.testing.assert_array_equal(np.asarray(shuffled), draw(sr.permutation, x, 1, True))


def test_choice_takes_its_draws_from_a():
    np.testing.assert_array_equal(draw(sr.choice, 10, (5,)), draw(sr.randint, (5,), 0, 10))
    distinct = draw(sr.choice, 10, (10,), replace=False)
    assert sorted(distinct.tolist()) == list(range(10))
    np.testing.assert_array_equal(distinct[:4], draw(sr.choice, 10, (4,), replace=False))
    p = np.array([0.0, 0.5, 0.0, 0.5], np.float32)
    assert set(draw(sr.choice, 4, (200,), p=p).tolist()) == {1, 3}
    assert sorted(draw(sr.choice, 4, (2,), False, p).tolist()) == [1, 3]
    a = np.arange(20.0).reshape(4, 5)
    picked = draw(sr.choice, a, (3,), axis=1)
    np.testing.assert_array_equal(picked, a[:, draw(sr.randint, (3,), 0, 5)])


def test_an_element_of_gamma_depends_on_its_index_alone():
    whole = draw(sr.gamma, np.float32(0.8), (50,))
    np.testing.assert_array_equal(draw(sr.gamma, np.float32(0.8), (20,)), whole[:20])
    a = np.linspace(0.1, 5, 50).astype(np.float32)
    np.testing.assert_array_equal(draw(sr.gamma, a)[:20], draw(sr.gamma, a[:20], (20,)))
    np.testing.assert_allclose(np.exp(draw(sr.loggamma, a)), draw(sr.gamma, a), rtol=2e-5)


def test_poisson_of_rate_zero_is_zero_and_rates_broadcast():
    lam = np.array([0.0, 2.0, 30.0], np.float32)
    x = draw(sr.poisson, lam, (1000, 3))
    assert (x[:, 0] == 0).all()
    np.testing.assert_allclose(x.mean(axis=0), lam, atol=0.5)


def test_vector_samplers_have_their_structure():
    d = draw(sr.dirichlet, np.array([0.5, 1.0, 2.0]), (500,))
    np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-5)
    q = draw(sr.orthogonal, 4, (3,), np.float64)
    np.testing.assert_allclose(
        q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), q.shape), atol=1e-12
    )
    wide = draw(sr.orthogonal, 2, (), np.float64, 5)
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-12)
    points = draw(sr.ball, 4, 1.0, (500,))
    assert (np.abs(points).sum(-1) <= 1).all()


def test_key_data_and_wrap_key_data_round_trip():
    keys = sr.split(KEY, (2, 3))
    data = sr.key_data(keys)
    assert data.shape == (2, 3, 2) and data.dtype == np.uint32
    wrapped = sr.wrap_key_data(np.asarray(data), impl="threefry2x32")
    np.testing.assert_array_equal(np.asarray(wrapped), np.asarray(keys))
    np.testing.assert_array_equal(
        np.asarray(sr.normal(wrapped[1, 2], (3,))), np.asarray(sr.normal(keys[1, 2], (3,)))
    )


# --- sharding, jit and vmap --------------------------------------------------------------

SHAPED = {  # id: function of (key, shape) for a 2-d shape
    "bernoulli": lambda k, s: sr.bernoulli(k, 0.3, s),
    "randint": lambda k, s: sr.randint(k, s, -5, 1000),
    "gumbel": lambda k, s: sr.gumbel(k, s),
    "exponential": lambda k, s: sr.exponential(k, s),
    "cauchy": lambda k, s: sr.cauchy(k, s),
    "truncated_normal": lambda k, s: sr.truncated_normal(k, -1.0, np.linspace(0, 2, s[-1]), s),
    "categorical": lambda k, s: sr.categorical(k, np.zeros((s[-1], 4), np.float32), shape=s),
    "permutation": lambda k, s: sr.permutation(k, np.arange(math.prod(s)).reshape(s), axis=1),
    "choice": lambda k, s: sr.choice(k, 9, s, p=np.linspace(0.1, 1, 9)),
    "gamma": lambda k, s: sr.gamma(k, np.linspace(0.2, 3, s[-1], dtype=np.float32), s),
    "beta": lambda k, s: sr.beta(k, 0.5, 2.0, s),
    "poisson": lambda k, s: sr.poisson(k, np.float32(20), s),
}


@pytest.mark.parametrize("name", SHAPED)
@pytest.mark.parametrize("shape", [(7, 5), (0, 3)])
def test_sharded_results_hold_the_unsharded_numbers(name, shape):
    sample = SHAPED[name]
    expected = np.asarray(sample(KEY, shape))
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    key = spmd.device_put(KEY, NamedSharding(mesh, P()))
    for spec in (P("x", "y"), P(None, ("y", "x")), P("y")):
        target = NamedSharding(mesh, spec)
        f = spmd.jit(
            lambda k, target=target: spmd.lax.with_sharding_constraint(sample(k, shape), target)
        )
        result = f(key)
        assert result.sharding == target
        np.testing.assert_array_equal(np.asarray(result), expected)
        for shard in result.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), expected[shard.index])


def test_elementwise_samplers_compute_their_blocks_with_no_collective():
    mesh = spmd.make_mesh((8,), ("x",))
    target = NamedSharding(mesh, P("x"))
    key = spmd.device_put(KEY, NamedSharding(mesh, P()))
    for name in ("bernoulli", "randint", "gumbel", "truncated_normal", "gamma"):
        f = spmd.jit(
            lambda k, name=name: spmd.lax.with_sharding_constraint(SHAPED[name](k, (16, 4)), target)
        )
        with count_collectives() as ran:
            result = f(key)
        assert ran.total == 0, name
        np.testing.assert_array_equal(np.asarray(result), np.asarray(SHAPED[name](KEY, (16, 4))))


@pytest.mark.parametrize("name", SHAPED)
def test_jit_gives_the_eager_numbers_and_vmap_each_keys_numbers(name):
    sample = SHAPED[name]
    eager = np.asarray(sample(KEY, (4, 3)))
    np.testing.assert_array_equal(np.asarray(spmd.jit(lambda k: sample(k, (4, 3)))(KEY)), eager)
    keys = sr.split(KEY, 3)
    batched = np.asarray(spmd.vmap(lambda k: sample(k, (4, 3)))(keys))
    for i in range(3):
        np.testing.assert_array_equal(batched[i], np.asarray(sample(keys[i], (4, 3))))


BACKEND_DRAWS = """
import numpy as np, spmd, spmd.random as sr
from spmd import NamedSharding, P
key = sr.key(5)
target = NamedSharding(spmd.make_mesh((8,), ("x",)), P("x"))
sharded = spmd.jit(lambda k: spmd.lax.with_sharding_constraint(sr.gamma(k, 2.0, (16,)), target))
draws = [sr.truncated_normal(key, -1.0, 1.0, (16,)), sr.gamma(key, 0.5, (16,)), sharded(key),
         sr.poisson(key, 20.0, (16,)), sr.bernoulli(key, 0.3, (16,)), sr.permutation(key, 16),
         sr.categorical(key, np.zeros((16, 3)))]
draws = [np.asarray(d).tolist() for d in draws]
"""


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_every_backend_draws_the_numpy_backends_numbers(backend):
    here: dict = {}
    exec(BACKEND_DRAWS, here)  # this process computes with NumPy
    assert run_with_backend(backend, BACKEND_DRAWS + "print(draws)") == f"{here['draws']}\n"


# --- bad input ---------------------------------------------------------------------------


def test_bernoulli_takes_probabilities_outside_0_1_as_jax_does():
    p = np.array([-0.5, 0.0, 1.0, 1.5, np.nan], np.float32)
    x = draw(sr.bernoulli, p, (1000, 5))
    assert x[:, :2].sum() == 0 and x[:, 2:4].all() and x[:, 4].sum() == 0


MISUSE = [  # (call, error, message pattern)
    (
        lambda: sr.bernoulli(KEY, 1, (3,)),
        spmd.SpmdTypeError,
        r"bernoulli: p must be floats.*i64\[\]",
    ),
    (
        lambda: sr.bernoulli(KEY, np.full(3, 0.5), (4,)),
        spmd.ShapeError,
        r"bernoulli: p of shape \(3,\) does not broadcast to shape=\(4,\)",
    ),
    (
        lambda: sr.bernoulli(sr.split(KEY, 3), 0.5),
        spmd.ShapeError,
        r"bernoulli: .*u32\[3,2\].*keys\[0\]",
    ),
    (
        lambda: sr.randint(KEY, (3,), 0, 5, np.float32),
        spmd.SpmdTypeError,
        "randint: dtype=float32.*int32",
    ),
    (lambda: sr.randint(KEY, (3,), 0, 5, bool), spmd.SpmdTypeError, "randint: dtype=bool"),
    (
        lambda: sr.randint(KEY, (3,), np.zeros(4, int), 5),
        spmd.ShapeError,
        r"randint: minval of shape \(4,\) does not broadcast to shape=\(3,\)",
    ),
    (
        lambda: sr.choice(KEY, 5, (6,), replace=False),
        spmd.SpmdValueError,
        r"choice: cannot take 6 draws .* population of 5; ask for at most 5, or pass replace=True",
    ),
    (
        lambda: sr.choice(KEY, 5, 3),
        spmd.SpmdTypeError,
        r"choice: shape must be a sequence.*shape=\(3,\)",
    ),
    (
        lambda: sr.choice(KEY, 5, (3,), p=np.full(4, 0.25)),
        spmd.ShapeError,
        r"choice: p has shape \(4,\).*\(5,\)",
    ),
    (lambda: sr.choice(KEY, 0, (3,)), spmd.SpmdValueError, "choice: the population is empty"),
    (
        lambda: spmd.jit(lambda n: sr.choice(KEY, n, (3,)))(5),
        spmd.SpmdTypeError,
        "choice: a must be a concrete int.*static_argnums",
    ),
    (
        lambda: sr.categorical(KEY, np.zeros(3, int)),
        spmd.SpmdTypeError,
        r"categorical: logits must be floats",
    ),
    (
        lambda: sr.categorical(KEY, np.zeros(3, np.float32), shape=(4,), replace=False),
        spmd.SpmdValueError,
        "categorical: 4 draws without replacement .* 3 categories",
    ),
    (
        lambda: sr.categorical(KEY, np.zeros((2, 3), np.float32), shape=(4, 3)),
        spmd.ShapeError,
        r"categorical: shape=\(4, 3\) must end with .* \(2,\).*shape=\(4, 2\)",
    ),
    (
        lambda: sr.permutation(KEY, 2.5),
        spmd.SpmdTypeError,
        "permutation: x must be an int or an array",
    ),
    (
        lambda: spmd.jit(lambda n: sr.permutation(KEY, n))(5),
        spmd.SpmdTypeError,
        "permutation: x must be a concrete int",
    ),
    (lambda: sr.permutation(KEY, np.zeros((2, 3)), axis=2), spmd.ShapeError, "permutation: axis=2"),
    (
        lambda: sr.truncated_normal(KEY, np.zeros(3), np.ones(4)),
        spmd.ShapeError,
        r"truncated_normal: .*lower \(3,\), upper \(4,\)",
    ),
    (lambda: sr.truncated_normal(KEY, 0.0, 1.0, (2,), np.int32), spmd.SpmdTypeError, "dtype=int32"),
    (lambda: sr.gumbel(KEY, (2,), mode="highest"), spmd.SpmdValueError, "gumbel: mode='highest'"),
    (
        lambda: sr.exponential(KEY, (2, -1)),
        spmd.ShapeError,
        r"exponential\(shape=\(2, -1\)\).*negative",
    ),
    (
        lambda: sr.multivariate_normal(KEY, np.zeros(3), np.eye(2)),
        spmd.ShapeError,
        r"multivariate_normal: mean must be \(..., n\) and cov \(..., n, n\).*f64\[3\].*f64\[2,2\]",
    ),
    (
        lambda: sr.dirichlet(KEY, 1.0),
        spmd.ShapeError,
        "dirichlet: alpha f64.* at least one dimension",
    ),
    (lambda: sr.gamma(KEY, np.ones(3), (2,)), spmd.ShapeError, r"gamma: a of shape \(3,\)"),
    (lambda: sr.poisson(KEY, 1.0, (2,), np.float32), spmd.SpmdTypeError, "poisson: dtype=float32"),
    (
        lambda: sr.wrap_key_data(np.zeros(2, np.float32)),
        spmd.SpmdTypeError,
        "wrap_key_data: .*uint32",
    ),
    (lambda: sr.wrap_key_data(np.zeros(3, np.uint32)), spmd.ShapeError, "trailing dimension of 2"),
    (
        lambda: sr.wrap_key_data(np.zeros(2, np.uint32), impl="rbg"),
        spmd.SpmdValueError,
        "impl='rbg' is not supported",
    ),
]


@pytest.mark.parametrize(("call", "error", "pattern"), MISUSE)
def test_bad_input_raises_an_error_naming_the_argument_and_the_fix(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()
