"""The case table's fft rows: spmd.numpy.fft's transforms over each axis and norm, with n and s
shorter and longer than the axes, empty arrays, bool and integer inputs (NumPy casts them to
float64 / complex128), 0-d inputs (NumPy rejects them, but fftn and ifftn transform no axes and
give them back), the frequencies and the shifts."""

from __future__ import annotations

import numpy as np

from spmd import ShapeError, SpmdTypeError, SpmdValueError
from tests.cases.table import BOOL, DTYPES, FLOATS, INTS, _label, add, rejects

COMPLEX = (np.complex64, np.complex128)
RED = {"family": "reduction"}  # the transformed axes are blocked from splitting, as a cumsum's


def transform(name: str, **kwargs):
    """fn(m, x) = m.fft.name(x, **kwargs)."""
    return lambda m, x: getattr(m.fft, name)(x, **kwargs)


ONE_AXIS = [  # (kwargs, shapes)
    ({}, [(5,), (2, 3), (2, 0, 3), (3, 4, 2)]),
    ({"axis": 0}, [(4, 3), (4, 0)]),
    ({"n": 3}, [(2, 6)]),
    ({"n": 8, "axis": -2}, [(5, 3)]),
    ({"norm": "ortho"}, [(3, 4)]),
    ({"norm": "forward", "n": 5, "axis": 1}, [(2, 4, 3)]),
]
MANY_AXES = [  # (kwargs, shapes)
    ({}, [(3, 4), (2, 3, 4)]),
    ({"axes": (0,)}, [(4, 3)]),
    ({"axes": (1, 0), "s": (3, 6)}, [(4, 5)]),
    ({"axes": (2, 0), "norm": "ortho"}, [(3, 2, 4), (3, 0, 4)]),
    ({"axes": (0, 1), "s": (-1, 3), "norm": "forward"}, [(2, 5, 2)]),
]


# name: the float dtypes its other rows run on (complex-input transforms take real ones too)
REAL_INPUTS = {"fft": (), "rfft": (), "ihfft": (), "fftn": (), "rfftn": (), "fft2": (),
               "rfft2": (), "ifft": FLOATS, "irfft": FLOATS, "hfft": FLOATS, "ifftn": FLOATS,
               "irfftn": FLOATS, "ifft2": FLOATS, "irfft2": FLOATS}  # fmt: skip


def _fft():
    _transforms()
    _real_and_scalar_inputs()
    _frequencies_and_shifts()
    _errors()


def _transforms():
    for kwargs, shapes in ONE_AXIS:
        for name, dtypes in (("fft", FLOATS + COMPLEX), ("ifft", COMPLEX), ("rfft", FLOATS),
                             ("irfft", COMPLEX), ("hfft", COMPLEX), ("ihfft", FLOATS)):  # fmt: skip
            args = {**kwargs}
            if name in ("irfft", "hfft") and "n" not in args:
                args["n"] = 6  # a length of its own, whatever the input's
            add(f"fft.{name}", transform(name, **args), *[(s,) for s in shapes],
                label=_label(**args), dtypes=dtypes, **RED)  # fmt: skip
    add("fft.irfft", transform("irfft"), ((3, 5),), ((4,),), label="default n", dtypes=FLOATS,
        **RED)  # fmt: skip
    for kwargs, shapes in MANY_AXES:
        for name, dtypes in (("fftn", FLOATS + COMPLEX), ("ifftn", COMPLEX), ("rfftn", FLOATS),
                             ("irfftn", COMPLEX)):  # fmt: skip
            add(f"fft.{name}", transform(name, **kwargs), *[(s,) for s in shapes],
                label=_label(**kwargs), dtypes=dtypes, **RED)  # fmt: skip
    for name, dtypes in (("fft2", COMPLEX), ("ifft2", COMPLEX), ("rfft2", FLOATS),
                         ("irfft2", COMPLEX)):  # fmt: skip
        add(f"fft.{name}", transform(name), ((3, 4),), ((2, 3, 4),), ((0, 3, 4),), dtypes=dtypes,
            **RED)  # fmt: skip
        add(f"fft.{name}", transform(name, s=(4, 6)), ((3, 5),), label="s=(4,6)",
            dtypes=dtypes, **RED)  # fmt: skip


def _real_and_scalar_inputs():
    for name, floats in REAL_INPUTS.items():
        add(f"fft.{name}", transform(name), ((3, 4),), label="real input",
            dtypes=BOOL + INTS + floats, **RED)  # fmt: skip
    for name in ("fftn", "ifftn"):  # no axes to transform: the input back, in its dtype
        add(f"fft.{name}", transform(name), ((),), dtypes=DTYPES + COMPLEX, **RED)


def _frequencies_and_shifts():
    for name in ("fftshift", "ifftshift"):
        for kwargs in ({}, {"axes": 0}, {"axes": (1, 0)}):
            add(f"fft.{name}", transform(name, **kwargs), ((5,),) if not kwargs else ((4, 5),),
                ((3, 0),) if kwargs.get("axes") == 0 else ((2, 3, 5),), label=_label(**kwargs),
                family="shape")  # fmt: skip
        # 0-d: no axes to shift, the input back, as JAX's (NumPy's roll fails on no axes);
        # random programs (tests/test_partition.py) apply the row to other shapes too
        add(f"fft.{name}", lambda m, x, f=name: getattr(m.fft, f)(x) if m is not np or x.ndim
            else x.copy(),
            ((),), label="0-d", family="shape")  # fmt: skip
    for n, d in ((1, 1.0), (8, 0.5), (7, 2.0)):
        for name in ("fftfreq", "rfftfreq"):
            add(f"fft.{name}", lambda m, n=n, d=d, f=name: getattr(m.fft, f)(n, d), (),
                label=_label(n, d), dtypes=(None,), family="creation")  # fmt: skip
    for name in ("fftfreq", "rfftfreq"):  # d a 0-d array of each dtype (NumPy: float64)
        add(f"fft.{name}", lambda m, d, f=name: getattr(m.fft, f)(5, d), ((),), label="5,d",
            domain="positive", family="creation")  # fmt: skip
        add(f"fft.{name}", lambda m, x, f=name: getattr(m.fft, f)(len(x)), ((0,),),
            label="len(empty)", error=SpmdValueError, family="creation")  # fmt: skip


def _errors():
    errors = [
        ("fft", {"n": 0}, (4,), SpmdValueError),
        ("fft", {}, (0,), SpmdValueError),  # a transform of no points
        ("fft", {"axis": 2}, (2, 3), ShapeError),
        ("fft", {"norm": "bogus"}, (4,), SpmdValueError),
        ("irfft", {}, (1,), SpmdValueError),  # n = 2 * (1 - 1) = 0
        ("fftn", {"s": (2, 3), "axes": (0,)}, (2, 3), ShapeError),
    ]
    for name, kwargs, shape, error in errors:
        reject = rejects(FLOATS, error, label=_label(**kwargs) or "rejects")
        add(f"fft.{name}", transform(name, **kwargs), ((shape,)), **reject, **RED)
    reject = rejects(COMPLEX, SpmdTypeError, label="complex input")
    add("fft.rfft", transform("rfft"), ((4,),), **reject, **RED)
    for name in REAL_INPUTS:  # NumPy: IndexError, no axis to transform
        if name not in ("fftn", "ifftn"):
            add(f"fft.{name}", transform(name), ((),), **rejects(DTYPES, ShapeError, "0-d"),
                **RED)  # fmt: skip
    for name in ("fft2", "ifft2", "rfft2", "irfft2"):  # a transform of no points
        add(f"fft.{name}", transform(name), ((3, 0),), **rejects(FLOATS, SpmdValueError, "empty"),
            **RED)  # fmt: skip
