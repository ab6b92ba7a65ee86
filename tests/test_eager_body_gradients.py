"""grad and vjp inside shard_map bodies, eager and jitted, on sampled losses that mix values
varying over the mesh axes with unvarying ones (psum, pmean, pmax and all_gather results), on
a 1-D mesh and a 2-D one whose collectives reduce one axis and not the other.

JAX's semantics with varying types: inside a body, grad differentiates the sum of the loss
over the devices holding distinct values of it (its seed varies as the loss does), so an
unvarying value met by a varying one (an implicit pvary) has its cotangent summed over the
devices. The oracle runs the body on every device's block in NumPy (``Simulated``: each value
one block per mesh coordinate and the axes it varies over, by JAX's rules), sums the loss over
one device per distinct value, and differentiates that by central finite differences in
float64. Each loss is written once, over either the NumPy simulation or spmd."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P, lax
from tests.composition_helpers import close, fd_gradient

MESHES = {1: ((8,), ("i",)), 2: ((2, 4), ("i", "j"))}
# Global input shape and its spec, per mesh: split over every axis, or replicated over some.
INPUTS = {
    1: [((16,), P("i")), ((3, 16), P(None, "i")), ((4,), P())],
    2: [((4, 8), P("i", "j")), ((4, 3), P("i", None)), ((3, 8), P(None, "j"))],
}


# --- the NumPy simulation of a body ---------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """A simulated body's value: one block per mesh coordinate, and the axes it varies over."""

    at: dict
    vma: frozenset


class Simulated:
    """The operations a loss uses, on every device's block in NumPy (JAX's vma rules)."""

    def __init__(self, shape: tuple[int, ...], names: tuple[str, ...]) -> None:
        self.shape, self.names = shape, names
        self.coords = list(itertools.product(*(range(n) for n in shape)))

    def split(self, x: np.ndarray, spec) -> Value:
        dims = tuple(spec) + (None,) * (x.ndim - len(tuple(spec)))
        at = {}
        for c in self.coords:
            index = []
            for d, name in enumerate(dims):
                if name is None:
                    index.append(slice(None))
                else:
                    k = self.names.index(name)
                    size = x.shape[d] // self.shape[k]
                    index.append(slice(c[k] * size, (c[k] + 1) * size))
            at[c] = x[tuple(index)]
        return Value(at, frozenset(n for n in dims if n is not None))

    def _map(self, fn, *xs) -> Value:
        vma = frozenset().union(*(x.vma for x in xs))
        return Value({c: fn(*(x.at[c] for x in xs)) for c in self.coords}, vma)

    def sin(self, x):
        return self._map(np.sin, x)

    def cos(self, x):
        return self._map(np.cos, x)

    def mul(self, a, b):
        return self._map(np.multiply, a, b)

    def add(self, a, b):
        return self._map(np.add, a, b)

    def scale(self, x, k):
        return self._map(lambda b: k * b, x)

    def sum(self, x):
        return self._map(np.sum, x)

    def broadcast(self, s, like):
        return Value({c: np.broadcast_to(s.at[c], like.at[c].shape) for c in self.coords}, s.vma)

    def _group(self, c, axes):
        """The coordinates sharing ``c``'s off ``axes``, in the order of ``axes``' indices."""
        ks = [self.names.index(a) for a in axes]
        group = []
        for pos in itertools.product(*(range(self.shape[k]) for k in ks)):
            d = list(c)
            for k, p in zip(ks, pos, strict=True):
                d[k] = p
            group.append(tuple(d))
        return group

    def _collective(self, x, axes, combine):
        at = {c: combine([x.at[d] for d in self._group(c, axes)]) for c in self.coords}
        return Value(at, x.vma - frozenset(axes))

    def psum(self, x, axes):
        return self._collective(x, axes, lambda bs: np.sum(bs, axis=0))

    def pmean(self, x, axes):
        return self._collective(x, axes, lambda bs: np.mean(bs, axis=0))

    def pmax(self, x, axes):
        return self._collective(x, axes, lambda bs: np.max(bs, axis=0))

    def all_gather(self, x, axes):
        return self._collective(x, axes, lambda bs: np.concatenate(bs, axis=0))

    def summed_over_distinct(self, x: Value) -> float:
        """The sum of ``x`` over one device per distinct value (coordinate 0 off its vma)."""
        off = [k for k, a in enumerate(self.names) if a not in x.vma]
        return float(sum(np.sum(x.at[c]) for c in self.coords if all(c[k] == 0 for k in off)))


class Spmd:
    """The same operations on a shard_map body's values."""

    sin, cos, sum = staticmethod(snp.sin), staticmethod(snp.cos), staticmethod(snp.sum)

    def mul(self, a, b):
        return a * b

    def add(self, a, b):
        return a + b

    def scale(self, x, k):
        return k * x

    def broadcast(self, s, like):
        return snp.broadcast_to(s, like.shape)

    def psum(self, x, axes):
        return lax.psum(x, axes)

    def pmean(self, x, axes):
        return lax.pmean(x, axes)

    def pmax(self, x, axes):
        return lax.pmax(x, axes)

    def all_gather(self, x, axes):
        return lax.all_gather(x, axes, axis=0, tiled=True)


# --- terms: each a value of the input's block shape ----------------------------------------

TERMS = {
    "own": lambda o, r, ax: o.mul(o.sin(r), r),
    "zero": lambda o, r, ax: o.scale(r, 0.0),
    "psum_mix": lambda o, r, ax: o.mul(o.psum(o.sin(r), ax), o.cos(r)),
    "psum_whole": lambda o, r, ax: o.psum(o.sin(r), ax),
    "pmean_mix": lambda o, r, ax: o.mul(o.pmean(o.mul(r, r), ax), r),
    "pmean_whole": lambda o, r, ax: o.pmean(o.cos(r), ax),
    "pmax_mix": lambda o, r, ax: o.mul(o.pmax(o.sin(r), ax), r),
    "pmax_whole": lambda o, r, ax: o.mul(o.pmax(r, ax), o.pmax(r, ax)),
    "gather_mix": lambda o, r, ax: o.mul(
        o.broadcast(o.sum(o.mul(o.all_gather(o.sin(r), ax), o.all_gather(r, ax))), r), o.cos(r)
    ),
    "gather_whole": lambda o, r, ax: o.broadcast(o.sum(o.cos(o.all_gather(r, ax))), r),
}
COLLECTIVE_TERMS = [t for t in TERMS if t not in ("own", "zero")]


@dataclass(frozen=True)
class Case:
    rank: int
    shape: tuple[int, ...]
    spec: P
    terms: tuple[tuple[str, tuple[str, ...]], ...]

    def value(self, o, r):
        out = None
        for name, ax in self.terms:
            term = TERMS[name](o, r, ax)
            out = term if out is None else o.add(out, term)
        return out


def sample(seed: int, rank: int) -> Case:
    """A term of a collective over one mesh axis (each in turn), then one or two more of any
    kind, each over a random mesh axis; the input's spec in turn."""
    rng = np.random.default_rng(seed)
    names = MESHES[rank][1]
    shape, spec = INPUTS[rank][seed % len(INPUTS[rank])]
    chosen = [COLLECTIVE_TERMS[seed % len(COLLECTIVE_TERMS)]]
    chosen += [str(t) for t in rng.choice(list(TERMS), size=rng.integers(1, 3))]
    terms = tuple((t, (str(rng.choice(names)),)) for t in chosen)
    return Case(rank, shape, spec, terms)


def _simulated(case: Case) -> Simulated:
    return Simulated(*MESHES[case.rank])


def _mesh(case: Case):
    return spmd.make_mesh(*MESHES[case.rank])


def _varying_rest(case: Case, x: np.ndarray) -> tuple[str, ...]:
    """The mesh axes the case's scalar loss varies over (in mesh order), by the simulation."""
    sim = _simulated(case)
    vma = sim.sum(case.value(sim, sim.split(x, case.spec))).vma
    return tuple(a for a in sim.names if a in vma)


def _loss(case: Case, unvarying_over: tuple[str, ...]):
    def loss(o, r):
        out = o.sum(case.value(o, r))
        return o.psum(out, unvarying_over) if unvarying_over else out

    return loss


def _grad_oracle(case: Case, loss, x):
    sim = _simulated(case)
    return fd_gradient(lambda v: sim.summed_over_distinct(loss(sim, sim.split(v, case.spec))), x)


def _check_eager_and_jit(f, args, want):
    close(f(*args), want, rtol=1e-5, atol=1e-6)
    close(spmd.jit(f)(*args), want, rtol=1e-5, atol=1e-6)


CASES = [(rank, seed) for rank in MESHES for seed in range(12)]


@pytest.mark.parametrize(("rank", "seed"), CASES)
def test_simulation_agrees_with_spmd_on_values_and_how_they_vary(rank, seed):
    # The oracle's trust: each device's loss and the axes it varies over are spmd's.
    case = sample(seed, rank)
    x = np.random.default_rng(seed + 100).normal(size=case.shape)
    sim = _simulated(case)
    want = _loss(case, ())(sim, sim.split(x, case.spec))
    seen = []

    def body(r):
        out = _loss(case, ())(Spmd(), r)
        seen.append(spmd.typeof(out).vma)
        return snp.reshape(out, (1,) * rank)

    f = spmd.shard_map(body, mesh=_mesh(case), in_specs=case.spec, out_specs=P(*sim.names))
    got = np.asarray(f(x))
    assert seen == [want.vma], case
    close(got, np.array([want.at[c] for c in sim.coords]).reshape(sim.shape), rtol=1e-12)


@pytest.mark.parametrize(("rank", "seed"), CASES)
def test_grad_of_a_loss_mixing_varying_and_unvarying_parts(rank, seed):
    case = sample(seed, rank)
    x = np.random.default_rng(seed + 100).normal(size=case.shape)
    loss = _loss(case, ())
    f = spmd.shard_map(
        lambda r: spmd.grad(lambda q: loss(Spmd(), q))(r),
        mesh=_mesh(case),
        in_specs=case.spec,
        out_specs=case.spec,
    )
    _check_eager_and_jit(f, (x,), _grad_oracle(case, loss, x))


@pytest.mark.parametrize(("rank", "seed"), CASES)
def test_grad_of_an_unvarying_loss(rank, seed):
    # The loss summed over the axes it varies over: unvarying, its seed is the total's.
    case = sample(seed, rank)
    x = np.random.default_rng(seed + 200).normal(size=case.shape)
    loss = _loss(case, _varying_rest(case, x))
    f = spmd.shard_map(
        lambda r: spmd.grad(lambda q: loss(Spmd(), q))(r),
        mesh=_mesh(case),
        in_specs=case.spec,
        out_specs=case.spec,
    )
    _check_eager_and_jit(f, (x,), _grad_oracle(case, loss, x))


def _varying_like(case: Case, x: np.ndarray):
    """The value's vma, and a global cotangent shape and spec typed as it (unvarying off it)."""
    sim = _simulated(case)
    vma = case.value(sim, sim.split(x, case.spec)).vma
    dims = tuple(case.spec) + (None,) * (x.ndim - len(tuple(case.spec)))
    shape, spec = [], []
    for n, name in zip(x.shape, dims, strict=True):
        kept = name if name in vma else None
        split = MESHES[case.rank][0][sim.names.index(name)] if name is not None else 1
        shape.append(n if kept is not None or name is None else n // split)
        spec.append(kept)
    return tuple(shape), P(*spec)


@pytest.mark.parametrize(("rank", "seed"), CASES)
def test_vjp_with_a_given_cotangent_typed_as_the_output(rank, seed):
    case = sample(seed, rank)
    rng = np.random.default_rng(seed + 300)
    x = rng.normal(size=case.shape)
    ct_shape, ct_spec = _varying_like(case, x)
    w = rng.normal(size=ct_shape)

    def body(r, ct):
        _, pullback = spmd.vjp(lambda q: case.value(Spmd(), q), r)
        return pullback(ct)[0]

    def pairing(o, r, ct):  # <value, ct> whose gradient is the vjp
        return o.sum(o.mul(case.value(o, r), ct))

    sim = _simulated(case)
    want = fd_gradient(
        lambda v: sim.summed_over_distinct(
            pairing(sim, sim.split(v, case.spec), sim.split(w, ct_spec))
        ),
        x,
    )
    f = spmd.shard_map(body, mesh=_mesh(case), in_specs=(case.spec, ct_spec), out_specs=case.spec)
    _check_eager_and_jit(f, (x, w), want)


def test_the_sampled_cases_cover_each_term_mesh_and_kind_of_loss():
    cases = [sample(seed, rank) for rank, seed in CASES]
    used = {name for c in cases for name, _ in c.terms}
    assert used == set(TERMS)
    for rank in MESHES:
        assert {c.spec for c in cases if c.rank == rank} == {s for _, s in INPUTS[rank]}
    axes = {ax for c in cases if c.rank == 2 for _, ax in c.terms}
    assert axes == {("i",), ("j",)}


def test_grad_of_a_psum_of_a_loss_holding_an_unvarying_part():
    # L = psum(sum(sin r) + sum(pmean(cos r))): the pmean result, pvary'd into the varying
    # sum, counts once per device, so dL/dr = cos(r) - sin(r) (by hand, not the simulation).
    def loss(r):
        return lax.psum(snp.sum(snp.sin(r)) + snp.sum(lax.pmean(snp.cos(r), "i")), "i")

    x = np.random.default_rng(7).normal(size=16)
    mesh = spmd.make_mesh((8,), ("i",))
    f = spmd.shard_map(spmd.grad(loss), mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    _check_eager_and_jit(f, (x,), np.cos(x) - np.sin(x))
