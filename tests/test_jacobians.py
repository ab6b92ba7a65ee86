"""jacfwd, jacrev, hessian, linearize, linear_transpose, holomorphic grad and check_grads:
finite differences in float64 and complex128 (and NumPy) as the oracles."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.test_util import check_grads

RNG = np.random.default_rng(0)


def fd_jacobian(f, x, eps=1e-6):
    """Central differences: shape f(x).shape + x.shape."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = eps
        step = step.reshape(x.shape)
        cols.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps))
    out = np.stack(cols, axis=-1)
    return out.reshape(out.shape[:-1] + x.shape)


def f_vec(x):
    return snp.stack([x[0], 5 * x[2], 4 * x[1] ** 2 - 2 * x[2], x[2] * snp.sin(x[0])])


@pytest.mark.parametrize("jac", [spmd.jacfwd, spmd.jacrev])
def test_jacobian_of_a_vector_function_matches_finite_differences(jac):
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(jac(f_vec)(x)), fd_jacobian(f_vec, x), atol=1e-7)


@pytest.mark.parametrize("jac", [spmd.jacfwd, spmd.jacrev])
def test_jacobian_of_matrix_in_matrix_out_has_out_shape_then_in_shape(jac):
    w = RNG.normal(size=(3, 4))
    x = RNG.normal(size=(2, 3))

    def f(x):
        return snp.tanh(x @ w)

    got = np.asarray(jac(f)(x))
    assert got.shape == (2, 4, 2, 3)
    np.testing.assert_allclose(got, fd_jacobian(f, x), atol=1e-7)


@pytest.mark.parametrize("jac", [spmd.jacfwd, spmd.jacrev])
def test_pytree_inputs_and_outputs_nest_output_tree_over_input_tree(jac):
    params = {"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}
    x = RNG.normal(size=3)

    def f(p, x):
        y = snp.sin(x @ p["w"] + p["b"])
        return {"y": y, "s": (y**2).sum()}

    got = jac(f)(params, x)
    assert set(got) == {"y", "s"} and set(got["y"]) == {"w", "b"}
    for out in ("y", "s"):
        for name in ("w", "b"):

            def g(v, out=out, name=name):
                return np.asarray(f({**params, name: v}, x)[out])

            np.testing.assert_allclose(
                np.asarray(got[out][name]), fd_jacobian(g, params[name]), atol=1e-7
            )


@pytest.mark.parametrize("jac", [spmd.jacfwd, spmd.jacrev])
def test_argnums_tuple_gives_a_tuple_per_output_and_kwargs_pass_through(jac):
    a, b = RNG.normal(size=3), RNG.normal(size=3)

    def f(a, b, scale=1.0):
        return scale * a * b**2

    da, db = jac(f, argnums=(0, 1))(a, b, scale=3.0)
    np.testing.assert_allclose(np.asarray(da), np.diag(3 * b**2), atol=1e-12)
    np.testing.assert_allclose(np.asarray(db), np.diag(6 * a * b), atol=1e-12)
    only_b = jac(f, argnums=-2)(a, b)  # negative argnums count from the end
    np.testing.assert_allclose(np.asarray(only_b), np.diag(b**2), atol=1e-12)


@pytest.mark.parametrize("jac", [spmd.jacfwd, spmd.jacrev])
def test_has_aux_returns_the_aux_value_undifferentiated(jac):
    x = RNG.normal(size=3)
    got, aux = jac(lambda x: (x**3, {"n": x.sum()}), has_aux=True)(x)
    np.testing.assert_allclose(np.asarray(got), np.diag(3 * x**2), atol=1e-12)
    np.testing.assert_allclose(np.asarray(aux["n"]), x.sum())
    with pytest.raises(spmd.SpmdTypeError, match="pair"):
        jac(lambda x: x, has_aux=True)(x)


def test_hessian_matches_finite_differences_of_the_gradient():
    def g(x):
        return x[0] ** 3 - 2 * x[0] * x[1] - x[1] ** 6 + snp.exp(x[0] * x[1])

    x = np.array([0.7, -0.4])
    grad = spmd.grad(g)
    expected = fd_jacobian(lambda v: np.asarray(grad(v)), x)
    np.testing.assert_allclose(np.asarray(spmd.hessian(g)(x)), expected, atol=1e-6)


def test_hessian_of_pytrees_is_output_by_input_by_input():
    def f(d):
        return {"c": snp.power(d["a"], d["b"])}

    d = {"a": np.arange(2.0) + 1.0, "b": np.arange(2.0) + 2.0}
    h = spmd.hessian(f)(d)
    assert set(h["c"]) == {"a", "b"} and set(h["c"]["a"]) == {"a", "b"}
    assert np.asarray(h["c"]["a"]["b"]).shape == (2, 2, 2)
    # d²(a^b)/da db = a^(b-1) (1 + b log a), on the diagonal
    a, b = d["a"], d["b"]
    expected = np.zeros((2, 2, 2))
    for i in range(2):
        expected[i, i, i] = a[i] ** (b[i] - 1) * (1 + b[i] * np.log(a[i]))
    np.testing.assert_allclose(np.asarray(h["c"]["a"]["b"]), expected, atol=1e-12)


def test_jacfwd_of_a_sharded_array_under_jit_matches_unsharded():
    mesh = spmd.make_mesh((4, 2), ("x", "y"))
    x = RNG.normal(size=(8,))
    sharded = spmd.device_put(x, NamedSharding(mesh, P("x")))

    def f(x):
        return snp.sin(x) * x.sum()

    expected = fd_jacobian(f, x)
    for jac in (spmd.jacfwd, spmd.jacrev):
        got = spmd.jit(jac(f))(sharded)
        np.testing.assert_allclose(np.asarray(got), expected, atol=1e-7)


def test_holomorphic_grad_is_the_complex_derivative():
    z = np.complex128(0.3 + 0.8j)
    got = spmd.grad(lambda z: snp.sin(z) * z**2, holomorphic=True)(z)
    h = 1e-6
    fd = (np.sin(z + h) * (z + h) ** 2 - np.sin(z - h) * (z - h) ** 2) / (2 * h)
    np.testing.assert_allclose(complex(np.asarray(got)), fd, rtol=1e-8)
    value, g = spmd.value_and_grad(lambda z: z**3, holomorphic=True)(z)
    np.testing.assert_allclose(complex(np.asarray(g)), 3 * z**2, rtol=1e-12)
    np.testing.assert_allclose(complex(np.asarray(value)), z**3, rtol=1e-12)


@pytest.mark.parametrize("jac", [spmd.jacfwd, spmd.jacrev])
def test_holomorphic_jacobian_is_the_complex_derivative(jac):
    z = np.array([0.3 + 0.8j, -1.1 + 0.2j])
    got = np.asarray(jac(lambda z: snp.exp(z) * z, holomorphic=True)(z))
    np.testing.assert_allclose(got, np.diag(np.exp(z) * (z + 1)), rtol=1e-12)


def test_grad_of_a_real_function_of_complex_input_is_jax_conjugate_convention():
    z = np.complex128(3.0 + 4.0j)
    got = spmd.grad(lambda z: snp.real(z) ** 2 + snp.imag(z) ** 2)(z)
    # JAX's convention: the gradient of f(x + iy) is df/dx - i df/dy
    assert complex(np.asarray(got)) == pytest.approx(6.0 - 8.0j)


def test_complex_dtype_errors_name_the_fix():
    z = np.complex128(1 + 1j)
    with pytest.raises(spmd.SpmdTypeError, match="holomorphic=True"):
        spmd.grad(lambda z: z**2)(z)
    with pytest.raises(spmd.SpmdTypeError, match="requires inputs with complex dtype"):
        spmd.grad(lambda x: x**2, holomorphic=True)(1.0)
    with pytest.raises(spmd.SpmdTypeError, match="requires outputs with complex dtype"):
        spmd.grad(lambda z: snp.real(z), holomorphic=True)(z)
    with pytest.raises(spmd.SpmdTypeError, match="jacfwd requires real-valued inputs"):
        spmd.jacfwd(lambda z: z)(np.ones(2, complex))
    with pytest.raises(spmd.SpmdTypeError, match="jacrev requires real-valued outputs"):
        spmd.jacrev(lambda z: z * 1j)(np.ones(2))
    with pytest.raises(spmd.SpmdTypeError, match="argnums"):
        spmd.jacrev(lambda a: a, argnums=3)(np.ones(2))


COMPLEX_FUNCTIONS = {
    "mul": lambda z: z * z * np.array([1 + 2j, 3 - 1j]),
    "conj": lambda z: snp.conj(z) * z,
    "abs": snp.abs,
    "real": lambda z: snp.real(z) * z,
    "imag": lambda z: snp.imag(z) * z,
    "divide": lambda z: 1 / z,
    "exp": snp.exp,
    "log": snp.log,
    "sqrt": snp.sqrt,
    "tanh": snp.tanh,
    "power": lambda z: z**z,
    "sum": lambda z: (z * snp.conj(z)).sum(),
    "prod": snp.prod,
    "dot": lambda z: snp.dot(z, z * np.array([2 - 1j, 1j])),
    "matmul": lambda z: snp.outer(z, snp.conj(z)) @ z,
    "einsum": lambda z: snp.einsum("i,j->ij", z, snp.conj(z)),
    "vdot": lambda z: snp.vdot(z, z * 1j),
    "cumsum": snp.cumsum,
    "real_cast": lambda z: snp.real(z).astype(np.complex128) * z,
}


@pytest.mark.parametrize("name", sorted(COMPLEX_FUNCTIONS))
def test_complex_derivative_rules_match_finite_differences(name):
    z = np.array([0.5 + 0.2j, 1.2 - 0.7j])
    check_grads(COMPLEX_FUNCTIONS[name], (z,), order=2, modes=("fwd", "rev"))


def test_check_grads_catches_a_wrong_derivative():
    @spmd.custom_jvp
    def wrong(x):
        return snp.sin(x)

    @wrong.defjvp
    def wrong_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return snp.sin(x), 1.01 * snp.cos(x) * t

    x = np.array([0.3, 1.0])
    check_grads(snp.sin, (x,), order=2, modes=("fwd", "rev", "lin"))
    with pytest.raises(AssertionError, match="tangent"):
        check_grads(wrong, (x,), order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="cotangent projection"):
        check_grads(wrong, (x,), order=1, modes=("rev",))


def test_linearize_gives_the_jvp_without_rerunning_the_function():
    calls = []

    def f(x, y):
        calls.append(1)
        return {"a": snp.sin(x) * y, "b": x**2}

    x, y = RNG.normal(size=3), RNG.normal(size=3)
    out, f_jvp = spmd.linearize(f, x, y)
    ran = len(calls)
    tx, ty = RNG.normal(size=3), RNG.normal(size=3)
    t = f_jvp(tx, ty)
    assert len(calls) == ran
    _, expected = spmd.jvp(f, (x, y), (tx, ty))
    for k in ("a", "b"):
        np.testing.assert_allclose(np.asarray(t[k]), np.asarray(expected[k]), atol=1e-12)
    np.testing.assert_allclose(np.asarray(out["a"]), np.sin(x) * y)
    with pytest.raises(spmd.ShapeError, match="tangent leaf 0"):
        f_jvp(np.ones(2), ty)
    with pytest.raises(spmd.ShapeError, match="one tangent per primal"):
        f_jvp(tx)
    # under vmap: a batch of tangents
    batch = spmd.vmap(lambda a, b: f_jvp(a, b)["a"])(np.eye(3), np.zeros((3, 3)))
    np.testing.assert_allclose(np.asarray(batch), np.diag(np.cos(x) * y), atol=1e-12)


def test_linear_transpose_is_the_matrix_transpose():
    m = RNG.normal(size=(4, 3))

    def f(x, y):
        return m @ x + 2.0 * y.sum() * np.ones(4)

    x_struct = spmd.ShapeDtypeStruct((3,), np.float64)
    transposed = spmd.linear_transpose(f, x_struct, np.zeros(2))
    ct = RNG.normal(size=4)
    ct_x, ct_y = transposed(ct)
    np.testing.assert_allclose(np.asarray(ct_x), m.T @ ct, atol=1e-12)
    np.testing.assert_allclose(np.asarray(ct_y), np.full(2, 2.0 * ct.sum()), atol=1e-12)
    with pytest.raises(spmd.SpmdTypeError, match="cotangent leaf 0"):
        transposed(np.ones(4, np.float32))
    with pytest.raises(spmd.SpmdTypeError, match="float or complex"):
        spmd.linear_transpose(lambda i: i, np.ones(2, np.int32))


def test_linear_transpose_of_complex_linear_maps_does_not_conjugate():
    a = np.array([1 + 2j, -0.5j])
    (ct,) = spmd.linear_transpose(lambda z: a * z, np.zeros(2, complex))(np.ones(2, complex))
    np.testing.assert_allclose(np.asarray(ct), a)
