"""jit's static arguments, with JAX's rules: static_argnums and static_argnames name the
same parameters through the signature, so a static argument is static however it is passed."""

import functools

import numpy as np
import pytest

import spmd


def counted(fun):
    """``fun`` and the list of the types it was called with (one entry per trace)."""
    seen = []

    @functools.wraps(fun)  # the signature, through which argnames find their positions
    def wrapped(*args, **kwargs):
        seen.append((tuple(type(a).__name__ for a in args), sorted(kwargs)))
        return fun(*args, **kwargs)

    return wrapped, seen


def scaled(x, n=2):
    if n > 1:  # Python control flow: fails if n is traced
        return x * n
    return x


@pytest.mark.parametrize("option", [{"static_argnames": "n"}, {"static_argnums": 1}])
def test_static_argument_is_static_however_it_is_passed(option):
    f = spmd.jit(scaled, **option)
    x = np.ones(2)
    np.testing.assert_array_equal(np.asarray(f(x, 3)), [3.0, 3.0])  # by position
    np.testing.assert_array_equal(np.asarray(f(x, n=4)), [4.0, 4.0])  # by keyword
    np.testing.assert_array_equal(np.asarray(f(x)), [2.0, 2.0])  # its default
    np.testing.assert_array_equal(np.asarray(f(x, 0)), [1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(f(x, n=0)), [1.0, 1.0])


def test_each_static_value_traces_once():
    fun, seen = counted(scaled)
    f = spmd.jit(fun, static_argnames="n")
    x = np.ones(2)
    f(x, 3)
    f(x, 3)
    f(x, 5)
    assert len(seen) == 2


def test_both_argnums_and_argnames_are_kept_as_given():
    def f(x, a, b):
        return x * (a + b) if a > 0 and b > 0 else x

    g = spmd.jit(f, static_argnums=1, static_argnames="b")
    np.testing.assert_array_equal(np.asarray(g(np.ones(2), 1, b=2)), [3.0, 3.0])
    with pytest.raises(spmd.SpmdError):  # b by position is not static: JAX traces it too
        g(np.ones(2), 1, 2)


def test_negative_argnums_count_from_the_end_and_name_the_parameter():
    f = spmd.jit(scaled, static_argnums=-1)
    np.testing.assert_array_equal(np.asarray(f(np.ones(2), 3)), [3.0, 3.0])
    with pytest.raises(spmd.SpmdTypeError, match="static_argnums has -5"):
        spmd.jit(scaled, static_argnums=-5)(np.ones(2), 3)


def test_varargs_and_kwargs_functions():
    def f(x, *args, **kwargs):
        out = x
        for a in args:
            out = out * a if a > 1 else out
        return out + (kwargs["k"] if kwargs.get("k", 0) > 1 else 0)

    g = spmd.jit(f, static_argnums=(1, 2), static_argnames="k")
    np.testing.assert_array_equal(np.asarray(g(np.ones(2), 2, 3, k=5)), [11.0, 11.0])
    np.testing.assert_array_equal(np.asarray(g(np.ones(2), 2)), [2.0, 2.0])  # 2 not passed


def test_keyword_only_static_argname():
    def f(x, *, mode):
        return x + 1 if mode == "inc" else x - 1

    g = spmd.jit(f, static_argnames="mode")
    np.testing.assert_array_equal(np.asarray(g(np.zeros(1), mode="inc")), [1.0])
    np.testing.assert_array_equal(np.asarray(g(np.zeros(1), mode="dec")), [-1.0])


def test_invalid_static_options_raise_at_jit_time():
    with pytest.raises(spmd.SpmdValueError, match="takes no such argument"):
        spmd.jit(scaled, static_argnames="m")
    with pytest.raises(spmd.SpmdValueError, match="only 2 positional"):
        spmd.jit(scaled, static_argnums=2)
    with pytest.raises(spmd.SpmdValueError, match="positional-only"):
        spmd.jit(lambda x, n, /: x, static_argnames="n")
    with pytest.raises(spmd.SpmdTypeError, match="must be ints"):
        spmd.jit(scaled, static_argnums="n")


def test_unhashable_static_value_names_the_argument():
    f = spmd.jit(scaled, static_argnames="n")
    with pytest.raises(spmd.SpmdTypeError, match=r"static argument 1 is list.*not hashable"):
        f(np.ones(2), [3])
    with pytest.raises(spmd.SpmdTypeError, match=r"static argument 'n' is list.*not hashable"):
        f(np.ones(2), n=[3])
