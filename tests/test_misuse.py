"""Misuse raises an SpmdError that names the argument; and contractions match NumPy where a
case-table row cannot tell (the sign of zero)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import Mesh, NamedSharding, P


def mesh_of(count: int = 4, reverse: bool = False) -> Mesh:
    devices = spmd.devices()[:count]
    return Mesh(np.array(devices[::-1] if reverse else devices), ("x",))


def sharded(mesh: Mesh, spec: P | None = None):
    return spmd.device_put(np.arange(8.0), NamedSharding(mesh, spec or P("x")))


# ------------------------------------------------------------------ contractions (NumPy)


def test_outer_keeps_the_sign_of_zero():
    for a, b in [(-2.0, False), (np.array([-2.0, 3.0]), np.array([0.0, -0.0]))]:
        expected = np.outer(a, b)
        for run in (snp.outer, spmd.jit(snp.outer)):
            got = np.asarray(run(a, b))
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def test_einsum_sums_bool_operands_in_the_result_dtype():
    x = [[True, True], [True, False]]
    assert int(snp.einsum("ij,j->", x, [1, 1])) == np.einsum("ij,j->", x, [1, 1]) == 3
    mesh = mesh_of()
    split = spmd.device_put(np.ones((4, 2), bool), NamedSharding(mesh, P("x")))
    ones = np.ones(2, np.int32)
    assert int(spmd.jit(lambda a, b: snp.einsum("ij,j->", a, b))(split, ones)) == 8
    assert bool(spmd.jit(lambda a: snp.einsum("ij,j->", a, a[0]))(split)) is True


# ----------------------------------------------------------------------------- tracing


def test_a_leaked_tracer_raises_unexpected_tracer_error():
    leaked = []
    spmd.jit(lambda x: leaked.append(x) or x)(np.ones(3))
    tracer = leaked[0]
    uses = [
        lambda: tracer + 1,
        lambda: snp.sin(tracer),
        lambda: np.add(tracer, 1),
        lambda: spmd.jit(lambda y: y + tracer)(np.ones(3)),
        lambda: bool(tracer[0]),
        lambda: np.asarray(tracer),
    ]
    for use in uses:
        with pytest.raises(spmd.UnexpectedTracerError, match=r"f64\[3\].*trace.*finished"):
            use()


# --------------------------------------------------------------------------------- jit


def test_nested_jit_applies_the_inner_out_shardings():
    mesh = mesh_of()
    inner = spmd.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P("x")))
    outer = spmd.jit(lambda a: inner(a))
    result = outer(sharded(mesh, P()))
    assert result.sharding.spec == P("x")
    np.testing.assert_array_equal(np.asarray(result), np.arange(8.0) * 2)
    assert "sharding_constraint" in str(spmd.make_jaxpr(outer)(np.arange(8.0)))


def test_nested_jit_checks_the_inner_out_shardings():
    mesh = mesh_of()
    inner = spmd.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P("x", None)))
    with pytest.raises(spmd.ShardingError, match=r"jit\(<lambda>\) out_shardings.*output 0"):
        spmd.jit(lambda a: inner(a))(np.arange(8.0))


def test_out_shardings_of_the_wrong_length():
    mesh = mesh_of()
    f = spmd.jit(lambda a: (a, a), out_shardings=(NamedSharding(mesh, P()),) * 3)
    with pytest.raises(spmd.ShardingError, match=r"out_shardings.*returns 2 outputs"):
        f(sharded(mesh))


@pytest.mark.parametrize("on_mesh", [True, False])
def test_out_shardings_longer_than_the_output_rank(on_mesh):
    mesh = mesh_of()
    f = spmd.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P("x", None)))
    with pytest.raises(
        spmd.ShardingError, match=r"out_shardings for output 0 \(f64\[8\]\).*'x', None.*1 dim"
    ):
        f(sharded(mesh) if on_mesh else np.arange(8.0))


def test_static_argnums_out_of_range():
    f = spmd.jit(lambda a, n: a * n, static_argnums=-5)
    with pytest.raises(spmd.SpmdTypeError, match=r"static_argnums has -5.*2 positional"):
        f(np.ones(2), 3)
    g = spmd.jit(lambda a, n: a * n, static_argnums=-1)
    np.testing.assert_array_equal(np.asarray(g(np.ones(2), 3)), [3.0, 3.0])


def test_in_shardings_of_the_wrong_length_names_jit():
    mesh = mesh_of()
    f = spmd.jit(lambda a, b: a + b, in_shardings=(NamedSharding(mesh, P()),) * 3)
    with pytest.raises(spmd.ShardingError, match=r"jit\(<lambda>\) in_shardings has 3 entries"):
        f(np.ones(8), np.ones(8))
    g = spmd.jit(lambda a: a, in_shardings=(NamedSharding(mesh, P("x", None)),))
    with pytest.raises(spmd.ShardingError, match=r"jit\(<lambda>\) in_shardings\[0\]"):
        g(np.ones(8))


def test_meshes_over_other_device_orders_show_their_device_ids():
    mesh, backwards = mesh_of(), mesh_of(reverse=True)
    x, y = sharded(mesh), sharded(backwards)
    ids = r"device ids \[3, 2, 1, 0\].*device ids \[0, 1, 2, 3\]"
    with pytest.raises(spmd.ShardingError, match=rf"^jit\(<lambda>\): argument leaf 1.*{ids}"):
        spmd.jit(lambda a, b: a + b)(x, y)
    with pytest.raises(spmd.ShardingError, match=rf"^add: argument leaf 1.*{ids}"):
        x + y


# -------------------------------------------------------------------- shard_map and pmap


@pytest.mark.parametrize(
    ("body", "out_specs", "message"),
    [
        (lambda a: None, P("x"), r"returned nothing \(None\).*out_specs"),
        (lambda a: (a, None), (P("x"), P("x")), r"returned 1 array.*out_specs.*2 specs"),
        (lambda a: (a, a), (P("x"),) * 3, r"out_specs.*structure of the results"),
    ],
)
def test_shard_map_results_that_do_not_match_out_specs(body, out_specs, message):
    mesh = mesh_of()
    f = spmd.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=out_specs)
    with pytest.raises(spmd.ShardingError, match=rf"shard_map\(<lambda>\): .*{message}"):
        f(sharded(mesh))


def test_pmap_static_broadcasted_argnums_errors_name_pmap():
    x = np.ones((4, 2))
    with pytest.raises(spmd.SpmdTypeError, match=r"^pmap.*static_broadcasted_argnums has 5"):
        spmd.pmap(lambda a, n: a * n, static_broadcasted_argnums=5)(x, 2)
    with pytest.raises(spmd.SpmdTypeError, match=r"^pmap.*static_broadcasted_argnums has -4"):
        spmd.pmap(lambda a, n: a * n, static_broadcasted_argnums=-4)(x, 2)
    with pytest.raises(spmd.SpmdTypeError, match=r"^pmap.*static_broadcasted_argnums.*hashable"):
        spmd.pmap(lambda a, n: a, static_broadcasted_argnums=1)(x, [2])
    twice = spmd.pmap(lambda a, n: a * n, static_broadcasted_argnums=-1)(x, 2)
    np.testing.assert_array_equal(np.asarray(twice), 2 * x)


# ---------------------------------------------------------------------------- creation


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: snp.arange(0, 10, 0), spmd.SpmdZeroDivisionError, r"arange.*step=0"),
        (lambda: snp.arange(0.0, 1.0, 0.0), ZeroDivisionError, r"arange.*step=0\.0"),
        (lambda: snp.eye(-2), spmd.ShapeError, r"eye: \(N, M\)=\(-2, -2\).*negative"),
        (lambda: snp.eye(2, -1), spmd.ShapeError, r"eye: \(N, M\)=\(2, -1\).*negative"),
        (lambda: snp.eye(2, k=0.5), spmd.SpmdTypeError, r"eye: k must be an integer"),
        (lambda: snp.linspace(0, 1, -3), spmd.SpmdValueError, r"linspace: num=-3.*negative"),
        (lambda: snp.linspace(0, 1, 2.5), spmd.SpmdTypeError, r"linspace: num must be an int"),
    ],
)
def test_creation_arguments_out_of_range(make, error, message):
    for run in (make, spmd.jit(make)):
        with pytest.raises(error, match=message) as caught:
            run()
        assert isinstance(caught.value, spmd.SpmdError)


@pytest.mark.parametrize(
    "convert, shape, builtin",
    [(len, (), TypeError), (iter, (), TypeError), (bool, (3,), ValueError),
     (bool, (0,), ValueError), (float, (3,), TypeError), (int, (2, 2), TypeError)],
)  # fmt: skip
def test_python_conversions_refuse_as_numpy_does_with_spmd_errors(convert, shape, builtin):
    x = spmd.numpy.ones(shape)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 2.0: bool of empty
            expected = convert(np.ones(shape))
    except builtin:
        with pytest.raises(spmd.errors.SpmdError) as refusal:
            convert(x)
        assert isinstance(refusal.value, builtin), refusal.value
    else:  # the installed NumPy still converts (bool of an empty array before NumPy 2.2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert convert(x) == expected
