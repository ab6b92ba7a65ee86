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
# ruff: noqa: E731, RUF059

import numpy as np

import spmd.numpy as jnp
from spmd import grad, jit, random
from tests.jax_docs.oracles import host, numerical_gradient

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
