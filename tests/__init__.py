import numpy as _np

if not hasattr(_np, "cumulative_sum"):  # NumPy < 2.1 (the oldest CI pass): the oracle for it

    def _cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
        x = _np.asarray(x)
        if axis is None:
            if x.ndim > 1:
                raise ValueError("cumulative_sum: axis must be given for more than one axis")
            axis = 0
        x = x.reshape(1) if x.ndim == 0 else x
        total = _np.cumsum(x, axis=axis, dtype=dtype)
        if not include_initial:
            return total
        shape = list(total.shape)
        shape[axis] = 1
        return _np.concatenate([_np.zeros(shape, total.dtype), total], axis=axis)

    _np.cumulative_sum = _cumulative_sum

if not hasattr(_np, "unstack"):  # NumPy < 2.1, likewise

    def _unstack(x, /, *, axis=0):
        return tuple(_np.moveaxis(_np.asarray(x), axis, 0))

    _np.unstack = _unstack
