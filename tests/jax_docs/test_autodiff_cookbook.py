"""JAX's "The Autodiff Cookbook" notebook, ported to spmd.

Source: jax-ml/jax docs/notebooks/autodiff_cookbook.md at commit
cec06d116c05f0d52adfceee3d3b730fdbcb0ce5. Each code cell is copied with only the imports
swapped (``from jax import ...`` -> ``from spmd import ...`` and so on). Where a cell prints
a value, the test checks it against an oracle written here: a closed form in NumPy or
central finite differences in float64, never JAX's printout. Cells build on each other, so
each test first runs the cells it depends on (``logistic_regression`` and friends below,
copied from the page). ``%timeit`` lines are replaced by one call each: timing says nothing
about correctness.
"""

# The page's code is kept as written: lambdas bound to names, redefined functions, str.format.
# ruff: noqa: E731, F811, UP032, B023, RUF005, RUF059

import numpy as np
import pytest

import spmd.numpy as jnp
from spmd import grad, jit, random, vmap
from tests.jax_docs.oracles import host, numerical_gradient, numerical_jacobian

INPUTS = np.array(
    [[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]]
)
TARGETS = np.array([True, True, False, True])


def numpy_predict(W, b, inputs=INPUTS):
    return 1 / (1 + np.exp(-(inputs @ np.asarray(W, np.float64) + np.float64(b))))


def numpy_loss(W, b):
    preds = numpy_predict(W, b)
    return -np.sum(np.log(preds * TARGETS + (1 - preds) * (1 - TARGETS)))


def numpy_jacobian_of_predict(W, b):
    """d predict / d W: s (1 - s) * inputs, shape (4, 3)."""
    s = numpy_predict(W, b)
    return (s * (1 - s))[:, None] * INPUTS


def numpy_hessian_of_predict(W, b):
    """d^2 predict / d W^2: s (1 - s) (1 - 2 s) * inputs_j inputs_k, shape (4, 3, 3)."""
    s = numpy_predict(W, b)
    return (s * (1 - s) * (1 - 2 * s))[:, None, None] * INPUTS[:, :, None] * INPUTS[:, None, :]


def close(got, expected, tol=1e-5):
    np.testing.assert_allclose(host(got), expected, rtol=tol, atol=tol)


def logistic_regression():
    """The setup cell and the logistic regression cell, as the page has them."""
    key = random.key(0)

    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    # Outputs probability of a label being true.
    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    # Build a toy dataset.
    inputs = jnp.array(
        [[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]]
    )
    targets = jnp.array([True, True, False, True])

    # Training loss is the negative log-likelihood of the training examples.
    def loss(W, b):
        preds = predict(W, b, inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    # Initialize random model coefficients
    key, W_key, b_key = random.split(key, 3)
    W = random.normal(W_key, (3,))
    b = random.normal(b_key, ())
    return key, predict, inputs, loss, W, b


# Gradients: starting with grad
def test_grad_of_tanh():
    grad_tanh = grad(jnp.tanh)
    print(grad_tanh(2.0))
    close(grad_tanh(2.0), 1 - np.tanh(2.0) ** 2, 1e-12)


def test_higher_derivatives_of_tanh():
    print(grad(grad(jnp.tanh))(2.0))
    print(grad(grad(grad(jnp.tanh)))(2.0))
    t, sech2 = np.tanh(2.0), 1 - np.tanh(2.0) ** 2
    close(grad(grad(jnp.tanh))(2.0), -2 * t * sech2, 1e-12)
    close(grad(grad(grad(jnp.tanh)))(2.0), -2 * sech2**2 + 4 * t**2 * sech2, 1e-12)


def test_logistic_regression_setup():
    key, predict, inputs, loss, W, b = logistic_regression()
    assert W.shape == (3,) and b.shape == ()
    close(loss(W, b), numpy_loss(W, b))


def test_grad_with_argnums():
    _, _, _, loss, W, b = logistic_regression()

    # Differentiate `loss` with respect to the first positional argument:
    W_grad = grad(loss, argnums=0)(W, b)
    print("W_grad", W_grad)
    close(W_grad, numerical_gradient(lambda w: numpy_loss(w, b), W))

    # Since argnums=0 is the default, this does the same thing:
    W_grad = grad(loss)(W, b)
    print("W_grad", W_grad)
    close(W_grad, numerical_gradient(lambda w: numpy_loss(w, b), W))

    # But we can choose different values too, and drop the keyword:
    b_grad = grad(loss, 1)(W, b)
    print("b_grad", b_grad)
    close(b_grad, numerical_gradient(lambda c: numpy_loss(W, c), b))

    # Including tuple values
    W_grad, b_grad = grad(loss, (0, 1))(W, b)
    print("W_grad", W_grad)
    print("b_grad", b_grad)
    close(W_grad, numerical_gradient(lambda w: numpy_loss(w, b), W))
    close(b_grad, numerical_gradient(lambda c: numpy_loss(W, c), b))


def test_grad_with_respect_to_a_dict():
    _, predict, inputs, _, W, b = logistic_regression()
    targets = jnp.array([True, True, False, True])

    def loss2(params_dict):
        preds = predict(params_dict["W"], params_dict["b"], inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    print(grad(loss2)({"W": W, "b": b}))
    grads = grad(loss2)({"W": W, "b": b})
    assert set(grads) == {"W", "b"}
    close(grads["W"], numerical_gradient(lambda w: numpy_loss(w, b), W))
    close(grads["b"], numerical_gradient(lambda c: numpy_loss(W, c), b))


def test_value_and_grad():
    _, _, _, loss, W, b = logistic_regression()

    from spmd import value_and_grad

    loss_value, Wb_grad = value_and_grad(loss, (0, 1))(W, b)
    print("loss value", loss_value)
    print("loss value", loss(W, b))
    close(loss_value, numpy_loss(W, b))
    close(Wb_grad[0], numerical_gradient(lambda w: numpy_loss(w, b), W))
    close(Wb_grad[1], numerical_gradient(lambda c: numpy_loss(W, c), b))


def test_checking_against_numerical_differences():
    key, _, _, loss, W, b = logistic_regression()

    # Set a step size for finite differences calculations
    eps = 1e-4

    # Check b_grad with scalar finite differences
    b_grad_numerical = (loss(W, b + eps / 2.0) - loss(W, b - eps / 2.0)) / eps
    print("b_grad_numerical", b_grad_numerical)
    print("b_grad_autodiff", grad(loss, 1)(W, b))
    close(b_grad_numerical, numerical_gradient(lambda c: numpy_loss(W, c), b), 1e-3)
    close(grad(loss, 1)(W, b), numerical_gradient(lambda c: numpy_loss(W, c), b))

    # Check W_grad with finite differences in a random direction
    key, subkey = random.split(key)
    vec = random.normal(subkey, W.shape)
    unitvec = vec / jnp.sqrt(jnp.vdot(vec, vec))
    W_grad_numerical = (loss(W + eps / 2.0 * unitvec, b) - loss(W - eps / 2.0 * unitvec, b)) / eps
    print("W_dirderiv_numerical", W_grad_numerical)
    print("W_dirderiv_autodiff", jnp.vdot(grad(loss)(W, b), unitvec))
    direction = host(vec).astype(np.float64) / np.linalg.norm(host(vec))
    expected = numerical_gradient(lambda w: numpy_loss(w, b), W) @ direction
    close(W_grad_numerical, expected, 1e-3)
    close(jnp.vdot(grad(loss)(W, b), unitvec), expected)


def test_check_grads_up_to_second_order():
    _, _, _, loss, W, b = logistic_regression()

    from spmd.test_util import check_grads

    check_grads(loss, (W, b), order=2)  # check up to 2nd order derivatives

    # check_grads must be able to fail: a wrong derivative rule is caught.
    from spmd import custom_jvp

    @custom_jvp
    def wrong_sin(x):
        return jnp.sin(x)

    wrong_sin.defjvps(lambda t, ans, x: 2.0 * jnp.cos(x) * t)
    with pytest.raises(AssertionError):
        check_grads(wrong_sin, (0.5,), order=1)


def test_hessian_vector_product_by_grad_of_grad():
    def hvp(f, x, v):
        return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)

    # The page checks hvp later against hessian; here: f = sum(x**3) has Hessian diag(6 x).
    x = jnp.array([1.0, -2.0, 0.5])
    v = jnp.array([0.3, 0.7, -1.1])
    close(hvp(lambda x: jnp.sum(x**3), x, v), 6 * host(x) * host(v), 1e-12)


def test_jacfwd_and_jacrev():
    _, predict, inputs, _, W, b = logistic_regression()

    from spmd import jacfwd, jacrev

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    J = jacfwd(f)(W)
    print("jacfwd result, with shape", J.shape)
    print(J)
    assert J.shape == (4, 3)
    close(J, numpy_jacobian_of_predict(W, b))
    close(J, numerical_jacobian(lambda w: numpy_predict(w, b), W))

    J = jacrev(f)(W)
    print("jacrev result, with shape", J.shape)
    print(J)
    assert J.shape == (4, 3)
    close(J, numpy_jacobian_of_predict(W, b))


def test_jacrev_of_a_dict():
    _, predict, inputs, _, W, b = logistic_regression()
    from spmd import jacrev

    def predict_dict(params, inputs):
        return predict(params["W"], params["b"], inputs)

    J_dict = jacrev(predict_dict)({"W": W, "b": b}, inputs)
    for k, v in J_dict.items():
        print("Jacobian from {} to logits is".format(k))
        print(v)
    assert set(J_dict) == {"W", "b"}
    close(J_dict["W"], numpy_jacobian_of_predict(W, b))
    close(J_dict["b"], numerical_jacobian(lambda c: numpy_predict(W, c), b))


def test_hessian_as_jacfwd_of_jacrev():
    _, predict, inputs, _, W, b = logistic_regression()
    from spmd import jacfwd, jacrev

    f = lambda W: predict(W, b, inputs)

    def hessian(f):
        return jacfwd(jacrev(f))

    H = hessian(f)(W)
    print("hessian, with shape", H.shape)
    print(H)
    assert H.shape == (4, 3, 3)
    close(H, numpy_hessian_of_predict(W, b))


def test_jvp_pushes_a_tangent_forward():
    key, predict, inputs, _, W, b = logistic_regression()

    from spmd import jvp

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    key, subkey = random.split(key)
    v = random.normal(subkey, W.shape)

    # Push forward the vector `v` along `f` evaluated at `W`
    y, u = jvp(f, (W,), (v,))

    close(y, numpy_predict(W, b))
    close(u, numpy_jacobian_of_predict(W, b) @ host(v))


def test_vjp_pulls_a_covector_back():
    key, predict, inputs, _, W, b = logistic_regression()

    from spmd import vjp

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    y, vjp_fun = vjp(f, W)

    key, subkey = random.split(key)
    u = random.normal(subkey, y.shape)

    # Pull back the covector `u` along `f` evaluated at `W`
    v = vjp_fun(u)

    assert isinstance(v, tuple) and len(v) == 1
    close(y, numpy_predict(W, b))
    close(v[0], host(u) @ numpy_jacobian_of_predict(W, b))


def test_vector_valued_gradients_with_vjp():
    from spmd import vjp

    def vgrad(f, x):
        y, vjp_fn = vjp(f, x)
        return vjp_fn(jnp.ones(y.shape))[0]

    print(vgrad(lambda x: 3 * x**2, jnp.ones((2, 2))))
    close(vgrad(lambda x: 3 * x**2, jnp.ones((2, 2))), 6 * np.ones((2, 2)), 1e-12)


def forward_over_reverse_hvp():
    from spmd import grad, jvp

    # forward-over-reverse
    def hvp(f, primals, tangents):
        return jvp(grad(f), primals, tangents)[1]

    return hvp


def tanh_squared_problem():
    key = random.key(1)

    def f(X):
        return jnp.sum(jnp.tanh(X) ** 2)

    key, subkey1, subkey2 = random.split(key, 3)
    X = random.normal(subkey1, (30, 40))
    V = random.normal(subkey2, (30, 40))
    # The Hessian of sum(tanh(X)**2) is diagonal: d^2/dx^2 tanh(x)^2 = 2 sech^4 - 4 tanh^2 sech^2.
    t = np.tanh(host(X).astype(np.float64))
    sech2 = 1 - t**2
    expected = (2 * sech2**2 - 4 * t**2 * sech2) * host(V)
    return f, X, V, expected


def test_forward_over_reverse_hvp_matches_the_dense_hessian():
    from spmd import jacfwd, jacrev

    def hessian(f):
        return jacfwd(jacrev(f))

    def hvp(f, x, v):
        return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)

    hvp = forward_over_reverse_hvp()
    f, X, V, expected = tanh_squared_problem()

    ans1 = hvp(f, (X,), (V,))
    ans2 = jnp.tensordot(hessian(f)(X), V, 2)

    print(jnp.allclose(ans1, ans2, 1e-4, 1e-4))
    assert bool(jnp.allclose(ans1, ans2, 1e-4, 1e-4))
    close(ans1, expected, 1e-4)
    close(ans2, expected, 1e-4)


def test_reverse_over_forward_and_reverse_over_reverse_hvp():
    from spmd import jacfwd, jacrev, jvp

    def hessian(f):
        return jacfwd(jacrev(f))

    hvp = forward_over_reverse_hvp()
    f, X, V, expected = tanh_squared_problem()

    # reverse-over-forward
    def hvp_revfwd(f, primals, tangents):
        g = lambda primals: jvp(f, primals, tangents)[1]
        return grad(g)(primals)

    # reverse-over-reverse, only works for single arguments
    def hvp_revrev(f, primals, tangents):
        (x,) = primals
        (v,) = tangents
        return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)

    # The page times the four with %timeit; each runs once here.
    print("Forward over reverse")
    close(hvp(f, (X,), (V,)), expected, 1e-4)
    print("Reverse over forward")
    (revfwd,) = hvp_revfwd(f, (X,), (V,))
    close(revfwd, expected, 1e-4)
    print("Reverse over reverse")
    close(hvp_revrev(f, (X,), (V,)), expected, 1e-4)
    print("Naive full Hessian materialization")
    close(jnp.tensordot(hessian(f)(X), V, 2), expected, 1e-4)


def test_matrix_jacobian_products_by_loop_and_by_vmap():
    _, predict, inputs, _, W, b = logistic_regression()
    from spmd import vjp

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)
    y = f(W)

    # Pull back the covectors `m_i` along `f`, evaluated at `W`, for all `i`.
    # First, use a list comprehension to loop over rows in the matrix M.
    def loop_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        return jnp.vstack([jnp.asarray(vjp_fun(mi)) for mi in M])

    # Now, use vmap to build a computation that does a single fast matrix-matrix
    # multiply, rather than an outer loop over vector-matrix multiplies.
    def vmap_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        (outs,) = vmap(vjp_fun)(M)
        return outs

    key = random.key(0)
    num_covecs = 128
    U = random.normal(key, (num_covecs,) + y.shape)

    loop_vs = loop_mjp(f, W, M=U)
    print("Non-vmapped Matrix-Jacobian product")
    # %timeit -n10 -r3 loop_mjp(f, W, M=U)  (timing only)

    print("\nVmapped Matrix-Jacobian product")
    vmap_vs = vmap_mjp(f, W, M=U)
    # %timeit -n10 -r3 vmap_mjp(f, W, M=U)  (timing only)

    assert jnp.allclose(loop_vs, vmap_vs), (
        "Vmap and non-vmapped Matrix-Jacobian Products should be identical"
    )
    close(vmap_vs, host(U) @ numpy_jacobian_of_predict(W, b))
    assert loop_vs.shape == (num_covecs, 3)


def test_jacobian_matrix_products_by_loop_and_by_vmap():
    key, predict, inputs, _, W, b = logistic_regression()
    key = random.key(0)
    from spmd import jvp

    f = lambda W: predict(W, b, inputs)

    def loop_jmp(f, W, M):
        # jvp immediately returns the primal and tangent values as a tuple,
        # so we'll compute and select the tangents in a list comprehension
        return jnp.vstack([jvp(f, (W,), (mi,))[1] for mi in M])

    def vmap_jmp(f, W, M):
        _jvp = lambda s: jvp(f, (W,), (s,))[1]
        return vmap(_jvp)(M)

    num_vecs = 128
    S = random.normal(key, (num_vecs,) + W.shape)

    loop_vs = loop_jmp(f, W, M=S)
    print("Non-vmapped Jacobian-Matrix product")
    # %timeit -n10 -r3 loop_jmp(f, W, M=S)  (timing only)
    vmap_vs = vmap_jmp(f, W, M=S)
    print("\nVmapped Jacobian-Matrix product")
    # %timeit -n10 -r3 vmap_jmp(f, W, M=S)  (timing only)

    assert jnp.allclose(loop_vs, vmap_vs), (
        "Vmap and non-vmapped Jacobian-Matrix products should be identical"
    )
    close(vmap_vs, host(S) @ numpy_jacobian_of_predict(W, b).T)
    assert loop_vs.shape == (num_vecs, 4)


def test_our_jacrev_matches_the_builtin():
    _, predict, inputs, _, W, b = logistic_regression()
    from spmd import vjp

    f = lambda W: predict(W, b, inputs)

    from spmd import jacrev as builtin_jacrev

    def our_jacrev(f):
        def jacfun(x):
            y, vjp_fun = vjp(f, x)
            # Use vmap to do a matrix-Jacobian product.
            # Here, the matrix is the Euclidean basis, so we get all
            # entries in the Jacobian at once.
            (J,) = vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
            return J

        return jacfun

    assert jnp.allclose(builtin_jacrev(f)(W), our_jacrev(f)(W)), (
        "Incorrect reverse-mode Jacobian results!"
    )
    close(our_jacrev(f)(W), numpy_jacobian_of_predict(W, b))


def test_our_jacfwd_matches_the_builtin():
    _, predict, inputs, _, W, b = logistic_regression()
    from spmd import jvp

    f = lambda W: predict(W, b, inputs)

    from spmd import jacfwd as builtin_jacfwd

    def our_jacfwd(f):
        def jacfun(x):
            _jvp = lambda s: jvp(f, (x,), (s,))[1]
            Jt = vmap(_jvp, in_axes=1)(jnp.eye(len(x)))
            return jnp.transpose(Jt)

        return jacfun

    assert jnp.allclose(builtin_jacfwd(f)(W), our_jacfwd(f)(W)), (
        "Incorrect forward-mode Jacobian results!"
    )
    close(our_jacfwd(f)(W), numpy_jacobian_of_predict(W, b))


def test_jit_of_the_linear_part_of_a_python_dynamic_function():
    from spmd import vjp

    def f(x):
        try:
            if x < 3:
                return 2 * x**3
            else:
                raise ValueError
        except ValueError:
            return jnp.pi * x

    y, f_vjp = vjp(f, 4.0)
    print(jit(f_vjp)(1.0))
    (out,) = jit(f_vjp)(1.0)
    close(out, np.pi, 1e-12)
    close(y, 4.0 * np.pi, 1e-12)


# Complex numbers and differentiation
def test_complex_function_as_a_pair_of_real_functions():
    def f(z):
        x, y = jnp.real(z), jnp.imag(z)
        return u(x, y) + v(x, y) * 1j

    def g(x, y):
        return (u(x, y), v(x, y))

    # The page defines f and g for some u and v; take u = x * y and v = x - y.
    u = lambda x, y: x * y
    v = lambda x, y: x - y
    z = 1.5 - 0.5j
    close(f(z), 1.5 * -0.5 + (1.5 - -0.5) * 1j, 1e-12)
    close(g(1.5, -0.5)[0], -0.75, 1e-12)


def test_complex_jvp_is_the_real_jacobian_on_pairs(capsys):
    def check(seed):
        key = random.key(seed)

        # random coeffs for u and v
        key, subkey = random.split(key)
        a, b, c, d = random.uniform(subkey, (4,))

        def fun(z):
            x, y = jnp.real(z), jnp.imag(z)
            return u(x, y) + v(x, y) * 1j

        def u(x, y):
            return a * x + b * y

        def v(x, y):
            return c * x + d * y

        # primal point
        key, subkey = random.split(key)
        x, y = random.uniform(subkey, (2,))
        z = x + y * 1j

        # tangent vector
        key, subkey = random.split(key)
        c, d = random.uniform(subkey, (2,))
        z_dot = c + d * 1j

        # check jvp
        _, ans = jvp(fun, (z,), (z_dot,))
        expected = (
            grad(u, 0)(x, y) * c
            + grad(u, 1)(x, y) * d
            + grad(v, 0)(x, y) * c * 1j
            + grad(v, 1)(x, y) * d * 1j
        )
        print(jnp.allclose(ans, expected))
        # NumPy: fun is linear, so its JVP is fun applied to the tangent.
        a, b, c, d = (float(t) for t in (a, b, c, d))
        cd = complex(z_dot)
        np.testing.assert_allclose(
            complex(ans), (a * cd.real + b * cd.imag) + (c * cd.real + d * cd.imag) * 1j, 1e-5
        )

    from spmd import jvp

    check(0)
    check(1)
    check(2)
    assert capsys.readouterr().out.split() == ["True", "True", "True"]


def test_complex_vjp_rule():
    from spmd import vjp

    def check(seed):
        key = random.key(seed)

        # random coeffs for u and v
        key, subkey = random.split(key)
        a, b, c, d = random.uniform(subkey, (4,))

        def fun(z):
            x, y = jnp.real(z), jnp.imag(z)
            return u(x, y) + v(x, y) * 1j

        def u(x, y):
            return a * x + b * y

        def v(x, y):
            return c * x + d * y

        # primal point
        key, subkey = random.split(key)
        x, y = random.uniform(subkey, (2,))
        z = x + y * 1j

        # cotangent vector
        key, subkey = random.split(key)
        c, d = random.uniform(subkey, (2,))
        z_bar = jnp.array(c + d * 1j)  # for dtype control

        # check vjp
        _, fun_vjp = vjp(fun, z)
        (ans,) = fun_vjp(z_bar)
        expected = (
            grad(u, 0)(x, y) * c
            + grad(v, 0)(x, y) * (-d)
            + grad(u, 1)(x, y) * c * (-1j)
            + grad(v, 1)(x, y) * (-d) * (-1j)
        )
        assert jnp.allclose(ans, expected, atol=1e-5, rtol=1e-5)
        # NumPy: [c, -d] J [1, -i]^T with J = [[a, b], [c, d]] (c and d are the cotangent's).
        a, b, c, d = (float(t) for t in (a, b, c, d))
        row = np.array([c, -d]) @ np.array([[a, b], [c, d]])
        np.testing.assert_allclose(complex(ans), row[0] - 1j * row[1], 1e-5)

    check(0)
    check(1)
    check(2)


def real_part_gradient(f, z, eps=1e-6):
    """JAX's grad convention for a complex input, from float64 finite differences of the
    output's real part: d Re f / dx - i d Re f / dy."""
    dx = (np.real(f(z + eps)) - np.real(f(z - eps))) / (2 * eps)
    dy = (np.real(f(z + 1j * eps)) - np.real(f(z - 1j * eps))) / (2 * eps)
    return dx - 1j * dy


def test_grad_of_a_complex_to_real_function():
    def f(z):
        x, y = jnp.real(z), jnp.imag(z)
        return x**2 + y**2

    z = 3.0 + 4j
    out = grad(f)(z)
    close(out, real_part_gradient(lambda z: abs(z) ** 2, z))


def test_grad_holomorphic_of_sin():
    def f(z):
        return jnp.sin(z)

    z = 3.0 + 4j
    out = grad(f, holomorphic=True)(z)
    close(out, np.cos(z), 1e-10)
    close(out, real_part_gradient(np.sin, z), 1e-6)


def test_grad_holomorphic_of_a_non_holomorphic_function():
    def f(z):
        return jnp.conjugate(z)

    z = 3.0 + 4j
    out = grad(f, holomorphic=True)(z)  # f is not actually holomorphic!
    close(out, real_part_gradient(np.conjugate, z), 1e-6)


def test_grad_through_a_complex_cholesky():
    A = jnp.array([[5.0, 2.0 + 3j, 5j], [2.0 - 3j, 7.0, 1.0 + 7j], [-5j, 1.0 - 7j, 12.0]])

    def f(X):
        L = jnp.linalg.cholesky(X)
        return jnp.sum((L - jnp.sin(L)) ** 2)

    out = grad(f, holomorphic=True)(A)

    # holomorphic=True on a function that is not: the gradient of the output's real part.
    # JAX's cholesky reads (X + X^H) / 2, so the oracle does too.
    def numpy_f(X):
        X = (X + X.conj().T) / 2
        L = np.linalg.cholesky(X)
        return np.sum((L - np.sin(L)) ** 2)

    a = host(A).astype(np.complex128)
    expected = np.zeros_like(a)
    for index in np.ndindex(a.shape):
        one_hot = np.zeros_like(a)
        one_hot[index] = 1.0
        expected[index] = real_part_gradient(lambda t: numpy_f(a + t * one_hot), 0.0)
    close(out, expected, 1e-4)
