"""spmd.random's samplers against their distributions, with fixed keys: each sample passes a
Kolmogorov-Smirnov or chi-square test (p > 1e-3) that a neighbouring distribution (a wrong
parameter) fails (p < 1e-3), so the tests are deterministic and can fail; and gamma's
implicit derivative against SciPy's inverse incomplete gamma function."""

from __future__ import annotations

from itertools import permutations as all_orders

import numpy as np
import pytest
import scipy.special
import scipy.stats as st

import spmd
import spmd.random as sr

KEY = sr.key(2024)
N = 20_000
P_OK, P_WRONG = 1e-3, 1e-3  # a right distribution passes at P_OK, a wrong one fails below


def draw(f, *args, **kwargs) -> np.ndarray:
    return np.asarray(f(KEY, *args, **kwargs))


# --- statistics with a fixed key ---------------------------------------------------------


def assert_ks(sample, right, wrong) -> None:
    """The sample fits the CDF ``right`` and is told apart from ``wrong`` (a neighbour)."""
    sample = np.asarray(sample, np.float64).ravel()
    assert st.kstest(sample, right).pvalue > P_OK
    assert st.kstest(sample, wrong).pvalue < P_WRONG


def assert_chi2(counts, right, wrong) -> None:
    counts = np.asarray(counts, np.float64)
    for probabilities, passes in ((right, True), (wrong, False)):
        expected = np.asarray(probabilities, np.float64) * counts.sum()
        assert (st.chisquare(counts, expected).pvalue > P_OK) == passes, probabilities


CONTINUOUS = {  # id: (sample, right CDF, wrong CDF)
    "exponential": (lambda: draw(sr.exponential, (N,)), st.expon.cdf, st.expon(scale=1.05).cdf),
    "exponential-f64": (
        lambda: draw(sr.exponential, (N,), np.float64),
        st.expon.cdf,
        st.expon(scale=1.05).cdf,
    ),
    "gumbel": (lambda: draw(sr.gumbel, (N,)), st.gumbel_r.cdf, st.gumbel_r(0.05).cdf),
    "gumbel-high": (
        lambda: draw(sr.gumbel, (N,), mode="high"),
        st.gumbel_r.cdf,
        st.gumbel_r(0.05).cdf,
    ),
    "laplace": (lambda: draw(sr.laplace, (N,)), st.laplace.cdf, st.laplace(scale=1.08).cdf),
    "logistic": (lambda: draw(sr.logistic, (N,)), st.logistic.cdf, st.logistic(scale=1.1).cdf),
    "cauchy": (lambda: draw(sr.cauchy, (N,)), st.cauchy.cdf, st.cauchy(scale=1.1).cdf),
    "truncated_normal": (
        lambda: draw(sr.truncated_normal, -1.0, 2.0, (N,)),
        st.truncnorm(-1, 2).cdf,
        st.truncnorm(-1, 1.8).cdf,
    ),
    "truncated_normal-tail": (
        lambda: draw(sr.truncated_normal, 2.0, np.inf, (N,), np.float64),
        st.truncnorm(2, np.inf).cdf,
        st.truncnorm(2.03, np.inf).cdf,
    ),
    "gamma": (lambda: draw(sr.gamma, 2.5, (N,)), st.gamma(2.5).cdf, st.gamma(2.6).cdf),
    "gamma-small": (lambda: draw(sr.gamma, 0.3, (N,)), st.gamma(0.3).cdf, st.gamma(0.32).cdf),
    "gamma-f64": (
        lambda: draw(sr.gamma, 7.0, (N,), np.float64),
        st.gamma(7).cdf,
        st.gamma(7.2).cdf,
    ),
    "loggamma": (
        lambda: draw(sr.loggamma, 0.01, (N,)),
        lambda x: st.gamma(0.01).cdf(np.exp(x)),
        lambda x: st.gamma(0.0107).cdf(np.exp(x)),
    ),
    "beta": (lambda: draw(sr.beta, 2.0, 5.0, (N,)), st.beta(2, 5).cdf, st.beta(2, 5.4).cdf),
    "t": (lambda: draw(sr.t, 5.0, (N,)), st.t(5).cdf, st.t(5, scale=1.05).cdf),
    "dirichlet": (  # a component of Dirichlet(1, 2, 3) is Beta(alpha_i, sum - alpha_i)
        lambda: draw(sr.dirichlet, np.array([1.0, 2.0, 3.0]), (N,))[:, 0],
        st.beta(1, 5).cdf,
        st.beta(1.08, 5).cdf,
    ),
    "generalized_normal": (
        lambda: draw(sr.generalized_normal, 1.5, (N,)),
        st.gennorm(1.5).cdf,
        st.gennorm(1.5, scale=1.08).cdf,
    ),
    "ball": (  # the radius of a uniform point in the unit 3-ball has CDF r**3
        lambda: np.linalg.norm(draw(sr.ball, 3, 2, (N,)), axis=-1),
        lambda r: np.clip(r, 0, 1) ** 3,
        lambda r: np.clip(r, 0, 1) ** 2.8,
    ),
    "multivariate_normal": (  # the squared Mahalanobis distance is chi-square(2)
        lambda: mahalanobis(draw(sr.multivariate_normal, np.ones(2), COV, (N,)) - 1, COV),
        st.chi2(2).cdf,
        lambda d: st.chi2(2).cdf(d / 1.05),
    ),
    "orthogonal": (  # Q[0, 0] of a Haar O(3) matrix is uniform on [-1, 1]
        lambda: draw(sr.orthogonal, 3, (N // 4,))[:, 0, 0],
        st.uniform(-1, 2).cdf,
        st.beta(1.2, 1.2, loc=-1, scale=2).cdf,
    ),
}
COV = np.array([[2.0, 0.6], [0.6, 1.0]], np.float32)


def mahalanobis(x, cov):
    return np.einsum("...i,ij,...j->...", x, np.linalg.inv(cov), x)


@pytest.mark.parametrize("name", CONTINUOUS)
def test_continuous_samples_fit_their_distribution_and_not_a_neighbour(name):
    sample, right, wrong = CONTINUOUS[name]
    assert_ks(sample(), right, wrong)


def test_multivariate_normal_methods_agree_on_the_distribution():
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    for method in ("eigh", "svd"):
        x = draw(sr.multivariate_normal, np.zeros(2), singular, (N,), method=method)
        np.testing.assert_allclose(x[:, 0], x[:, 1], atol=1e-5)
        assert_ks(x[:, 0], st.norm.cdf, st.norm(scale=1.05).cdf)


def test_discrete_samples_fit_their_distribution_and_not_a_neighbour():
    x = draw(sr.bernoulli, 0.3, (N,))
    assert_chi2(np.bincount(x, minlength=2), [0.7, 0.3], [0.68, 0.32])
    x = draw(sr.rademacher, (N,))
    assert_chi2([(x == -1).sum(), (x == 1).sum()], [0.5, 0.5], [0.48, 0.52])
    x = draw(sr.randint, (5 * N,), -2, 8)
    assert_chi2(np.bincount(x + 2), np.full(10, 0.1), [0.11] + [0.89 / 9] * 9)
    x = draw(sr.randint, (N,), 0, 100, np.int8)
    assert_chi2(np.bincount(x), np.full(100, 0.01), np.r_[0.02, np.full(99, 0.98 / 99)])
    probabilities = np.array([0.1, 0.2, 0.7], np.float32)
    x = draw(sr.categorical, np.log(probabilities), shape=(N,))
    assert_chi2(np.bincount(x), probabilities, [0.1, 0.22, 0.68])
    x = draw(sr.choice, 3, (N,), p=probabilities)
    assert_chi2(np.bincount(x), probabilities, [0.1, 0.22, 0.68])
    x = draw(sr.choice, 4, (N,))
    assert_chi2(np.bincount(x), np.full(4, 0.25), [0.27, 0.25, 0.25, 0.23])


@pytest.mark.parametrize(("lam", "wrong"), [(3.0, 3.1), (40.0, 40.8)])
def test_poisson_fits_its_distribution_on_both_algorithms(lam, wrong):
    x = draw(sr.poisson, lam, (N,))
    edges = np.arange(max(1, int(lam - 3 * lam**0.5)), int(lam + 3 * lam**0.5))
    counts = [np.sum(x < edges[0]), *(np.sum(x == k) for k in edges), np.sum(x > edges[-1])]

    def probabilities(rate):
        pmf = st.poisson(rate)
        return [pmf.cdf(edges[0] - 1), *pmf.pmf(edges), pmf.sf(edges[-1])]

    assert_chi2(counts, probabilities(lam), probabilities(wrong))


def test_permutations_are_uniform_over_all_orders():
    rows = draw(sr.permutation, np.tile(np.arange(4), (24 * 500, 1)), axis=1, independent=True)
    orders = {order: i for i, order in enumerate(all_orders(range(4)))}
    counts = np.bincount([orders[tuple(r)] for r in rows.tolist()], minlength=24)
    wrong = np.r_[2.0, np.ones(23)]
    assert_chi2(counts, np.full(24, 1 / 24), wrong / wrong.sum())


def test_draws_without_replacement_follow_the_gumbel_top_k_law():
    p = np.array([0.5, 0.3, 0.2])
    pairs = draw(sr.categorical, np.log(np.tile(p, (N, 1))), shape=(2, N), replace=False)
    assert (pairs[0] != pairs[1]).all()
    ordered = list(all_orders(range(3), 2))
    counts = [np.sum((pairs[0] == i) & (pairs[1] == j)) for i, j in ordered]
    law = [p[i] * p[j] / (1 - p[i]) for i, j in ordered]
    assert_chi2(counts, law, [p[i] * p[j] / (1 - p[j]) for i, j in ordered])


def test_gamma_gradient_is_the_implicit_reparameterization():
    a = 1.7
    x = np.asarray(sr.gamma(KEY, np.float64(a), (200,), np.float64))
    _, tangent = spmd.jvp(lambda a: sr.gamma(KEY, a, (200,), np.float64), (a,), (1.0,))
    q = scipy.special.gammainc(a, x)  # the sample at a fixed CDF value, moved with a
    h = 1e-6
    expected = (scipy.special.gammaincinv(a + h, q) - scipy.special.gammaincinv(a - h, q)) / 2 / h
    np.testing.assert_allclose(np.asarray(tangent), expected, rtol=1e-5)
    log_grad = spmd.grad(lambda a: sr.loggamma(KEY, a, (200,), np.float64).sum())(a)
    np.testing.assert_allclose(float(log_grad), np.sum(expected / x), rtol=1e-5)
