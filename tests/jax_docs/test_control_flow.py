"""JAX's "Control flow and logical operators with JIT" page, ported to spmd.

Source: jax-ml/jax docs/control-flow.md at commit cec06d116c05f0d52adfceee3d3b730fdbcb0ce5.
Each code cell is copied with only the imports swapped (``from jax import ...`` ->
``from spmd import ...`` and so on); where a cell prints a value, the test checks it against
plain Python or NumPy, not against JAX's printout. Cells the page marks
``raises-exception`` must raise an ``SpmdError`` (or the builtin type JAX raises) whose
message says what went wrong.
"""

# The page's code is kept as written: lambdas bound to names, redefined functions.
# ruff: noqa: E731, B007

import numpy as np
import pytest

import spmd.numpy as jnp
from spmd import grad, jit
from spmd.errors import SpmdError


def raised(call):
    """Call ``call``; return the exception it raises, failing the test if it raises none or
    one that is neither an ``SpmdError`` nor a ``TypeError``/``ValueError`` (what JAX
    raises for these cells)."""
    with pytest.raises((SpmdError, TypeError, ValueError)) as info:
        call()
    return info.value


def test_python_for_loop_unrolls_under_jit():
    @jit
    def f(x):
        for i in range(3):
            x = 2 * x
        return x

    print(f(3))
    assert int(f(3)) == 3 * 2**3


def test_loop_over_a_static_shape_under_jit():
    @jit
    def g(x):
        y = 0.0
        for i in range(x.shape[0]):
            y = y + x[i]
        return y

    print(g(jnp.array([1.0, 2.0, 3.0])))
    assert float(g(jnp.array([1.0, 2.0, 3.0]))) == 1.0 + 2.0 + 3.0


def test_if_on_a_traced_value_fails_under_jit():
    @jit
    def f(x):
        if x < 3:
            return 3.0 * x**2
        else:
            return -4 * x

    # This will fail!
    error = raised(lambda: f(2))
    message = str(error).lower()
    assert "bool" in message or "concrete" in message or "traced" in message, message


def test_python_and_on_traced_values_fails_under_jit():
    @jit
    def g(x):
        return (x > 0) and (x < 3)

    # This will fail!
    error = raised(lambda: g(2))
    message = str(error).lower()
    assert "bool" in message or "concrete" in message or "traced" in message, message


def test_static_argnames_lets_python_if_branch():
    def f(x):
        if x < 3:
            return 3.0 * x**2
        else:
            return -4 * x

    f = jit(f, static_argnames="x")

    print(f(2.0))
    assert float(f(2.0)) == 3.0 * 2.0**2
    assert float(f(4.0)) == -4 * 4.0


def test_static_argnames_unrolls_a_loop():
    def f(x, n):
        y = 0.0
        for i in range(n):
            y = y + x[i]
        return y

    f = jit(f, static_argnames="n")

    out = f(jnp.array([2.0, 3.0, 4.0]), 2)
    assert float(out) == 2.0 + 3.0


def example_fun(length, val):
    return jnp.ones((length,)) * val


def test_value_dependent_shape_works_eagerly():
    def example_fun(length, val):
        return jnp.ones((length,)) * val

    # un-jit'd works fine
    print(example_fun(5, 4))
    np.testing.assert_array_equal(example_fun(5, 4), np.full(5, 4.0))


def test_value_dependent_shape_fails_under_jit():
    bad_example_jit = jit(example_fun)
    # this will fail:
    error = raised(lambda: bad_example_jit(10, 4))
    assert "static" in str(error).lower() or "concrete" in str(error).lower(), str(error)


def test_static_argnames_recompiles_for_each_length():
    # static_argnames tells JAX to recompile on changes at these argument positions:
    good_example_jit = jit(example_fun, static_argnames="length")
    # first compile
    print(good_example_jit(10, 4))
    # recompiles
    print(good_example_jit(5, 4))
    np.testing.assert_array_equal(good_example_jit(10, 4), np.full(10, 4.0))
    np.testing.assert_array_equal(good_example_jit(5, 4), np.full(5, 4.0))


def test_print_inside_jit_runs_at_trace_time(capsys):
    @jit
    def f(x):
        print(x)
        y = 2 * x
        print(y)
        return y

    out = f(2)
    assert int(out) == 4
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2, printed
    # Traced values are printed, not the concrete 2 and 4.
    assert printed[0].strip() != "2" and printed[1].strip() != "4", printed
    f(3)
    assert capsys.readouterr().out == "", "a second call of the same shape does not retrace"


def test_lax_cond():
    from spmd import lax

    operand = jnp.array([0.0])
    taken = lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand)
    # --> array([1.], dtype=float32)
    not_taken = lax.cond(False, lambda x: x + 1, lambda x: x - 1, operand)
    # --> array([-1.], dtype=float32)
    np.testing.assert_array_equal(taken, [1.0])
    np.testing.assert_array_equal(not_taken, [-1.0])


def test_lax_while_loop():
    from spmd import lax

    init_val = 0
    cond_fun = lambda x: x < 10
    body_fun = lambda x: x + 1
    out = lax.while_loop(cond_fun, body_fun, init_val)
    # --> array(10, dtype=int32)
    val = 0
    while val < 10:
        val = val + 1
    assert int(out) == val
    assert np.issubdtype(np.asarray(out).dtype, np.integer)


def test_lax_fori_loop():
    from spmd import lax

    init_val = 0
    start = 0
    stop = 10
    body_fun = lambda i, x: x + i
    out = lax.fori_loop(start, stop, body_fun, init_val)
    # --> array(45, dtype=int32)
    assert int(out) == sum(range(start, stop))
    assert np.issubdtype(np.asarray(out).dtype, np.integer)


def python_check_positive_even(x):
    is_even = x % 2 == 0
    # `and` short-circults, so when `is_even` is `False`, `x > 0` is not evaluated.
    return is_even and (x > 0)


@jit
def jax_check_positive_even(x):
    is_even = x % 2 == 0
    # `logical_and` does not short circuit, so `x > 0` is always evaluated.
    return jnp.logical_and(is_even, x > 0)


def test_logical_and_matches_python_and_on_a_scalar():
    print(python_check_positive_even(24))
    print(jax_check_positive_even(24))
    assert python_check_positive_even(24) is True
    assert bool(jax_check_positive_even(24)) is True
    assert bool(jax_check_positive_even(-24)) is False
    assert bool(jax_check_positive_even(7)) is False


def test_logical_and_is_elementwise_on_an_array():
    x = jnp.array([-1, 2, 5])
    print(jax_check_positive_even(x))
    values = np.array([-1, 2, 5])
    np.testing.assert_array_equal(
        jax_check_positive_even(x), np.logical_and(values % 2 == 0, values > 0)
    )


def test_python_and_on_an_array_fails_as_in_numpy():
    x = jnp.array([-1, 2, 5])
    error = raised(lambda: print(python_check_positive_even(x)))
    assert "ambiguous" in str(error) or "more than one element" in str(error), str(error)
    with pytest.raises(ValueError):  # NumPy's own behaviour, the page's reference
        python_check_positive_even(np.array([-1, 2, 5]))


def test_grad_through_python_control_flow():
    def f(x):
        if x < 3:
            return 3.0 * x**2
        else:
            return -4 * x

    print(grad(f)(2.0))  # ok!
    print(grad(f)(4.0))  # ok!
    assert float(grad(f)(2.0)) == pytest.approx(6.0 * 2.0)  # d/dx 3x^2 = 6x
    assert float(grad(f)(4.0)) == pytest.approx(-4.0)
