"""References for the pmap tests: NumPy loops over the mapped index, and comparisons."""

import numpy as np

DTYPES = (np.int32, np.float32, np.float64)


def sample(rng, shape, dtype):
    """Small integers (exact under sums in every dtype), cast to ``dtype``."""
    return rng.integers(-9, 10, size=shape).astype(dtype)


def take(x, index, axis):
    return x if axis is None else np.take(x, index, axis=axis)


def mapped_reference(f, args, in_axes, out_axis, n):
    """``f`` applied to slice ``i`` of every mapped argument, for i < n, stacked at out_axis."""
    outs = [f(*[take(a, i, ax) for a, ax in zip(args, in_axes, strict=True)]) for i in range(n)]
    return np.stack([np.asarray(o) for o in outs], axis=out_axis)


def stacked(blocks):
    """Per-device results stacked along the mapped axis (pmap's default out_axes=0)."""
    return np.stack([np.asarray(b) for b in blocks])


def assert_close(got, want):
    got = np.asarray(got)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    if want.dtype == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)
