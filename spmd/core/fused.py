"""Fused elementwise kernels: a run of elementwise equations computed in one pass over their
operands, chunk by chunk, with no temporary array as large as the result.

A ``Kernel`` holds its member equations in order, its operands and the values it gives back.
A call walks the result's index space in chunks of about ``CHUNK_BYTES`` per value: each
member runs on the chunk with NumPy's own ufunc (or the primitive's NumPy implementation),
writing into a chunk-sized buffer that stays in the core's cache, and a value the kernel
gives back is written straight into its array. The engine is NumPy itself: every element
goes through the same ufunc loop, with the same operand dtypes and Python scalars, as in the
unfused equation, so integer arithmetic, NaN propagation and dtype promotion are NumPy's
(only which SIMD lane computes an element may differ, for transcendental functions).
``where`` on operands of the result's dtype selects bits with integer operations, as
NumPy's own ``where`` branches on every element. A result of at least ``COMPILE_ELEMENTS``
runs instead as one compiled loop where numba is installed and every member compiles
(spmd/core/fused_compiled.py).

``fused_elementwise`` is the primitive whose equation runs a kernel: the executor's
Compute steps, last-use and buffer-reuse plans run it as any other equation.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.config import config
from spmd.core.buffer_pool import POOL
from spmd.core.fused_code import IMPL_WITH_OUT, REDUCTIONS, KernelCode, Member, loop_dtypes
from spmd.core.fused_compiled import COMPILE_ELEMENTS, compiled_code
from spmd.core.primitive import Primitive, Rules
from spmd.core.program import Equation, Var

CHUNK_BYTES = 1 << 18  # per value of a chunk: the values of one chunk stay in L2


def fusible(primitive, params: dict, inputs: Sequence, output: Var) -> bool:
    """Whether an equation may run chunk by chunk in a kernel: an elementwise primitive
    whose NumPy implementation gives each result element from the operands' elements at
    the same (broadcast) index alone, with one result of at least one dimension (a ufunc's
    of the dtype its loop gives, so that writing into a buffer of that dtype casts nothing)."""
    if primitive.multiple_results or output.aval.ndim == 0 or output.aval.weak_type:
        return False
    ufunc = primitive.rules.ufunc
    if ufunc is not None:
        return not params and ufunc.nout == 1 and _result_dtype(ufunc, inputs) == output.aval.dtype
    if primitive.name in IMPL_WITH_OUT:
        return not params
    if primitive.name == "where":
        return True
    if primitive.name == "convert_element_type":
        return not params.get("weak_type", False)
    return False


def kernel_member(primitive, params: dict, inputs: Sequence, output: Var) -> tuple:
    """``(member, final)``: the equation as a kernel member (None when it may not run in
    one), and whether it may only end a kernel (a reduction)."""
    if fusible(primitive, params, inputs, output):
        return Member(primitive, tuple(inputs), output, params), False
    if final_reduction(primitive, params, inputs, output):
        return Member(primitive, tuple(inputs), output, params), True
    return None, False


def final_reduction(primitive, params: dict, inputs: Sequence, output: Var) -> bool:
    """Whether an equation may end a kernel whose values include its operand: a reduction
    over the operand's trailing axes, not its first, with NumPy's parameters. Chunks then
    hold whole rows of those axes, which NumPy reduces as it reduces the whole array's."""
    if primitive.name not in REDUCTIONS or output.aval.weak_type:
        return False
    (operand,) = inputs
    if not isinstance(operand, Var):
        return False
    axes, ndim = tuple(params.get("axes", ())), getattr(operand.aval, "ndim", 0)
    return bool(axes) and axes[0] >= 1 and axes == tuple(range(axes[0], ndim))


def _result_dtype(ufunc: np.ufunc, inputs: Sequence) -> np.dtype | None:
    dtypes = loop_dtypes(ufunc, inputs)
    return None if dtypes is None else dtypes[-1]


class _Same:
    """A scalar operand: every chunk of it is itself."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __getitem__(self, key: Any) -> Any:
        return self.value


class Kernel:
    """Members computed in one pass; see the module docstring. ``inputs`` are the operands
    (Vars, in call order), ``outputs`` the values given back (in result order)."""

    def __init__(self, members: Sequence[Member], inputs: Sequence[Var], outputs: Sequence[Var]):
        self.members = tuple(members)
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.out_avals = tuple(v.aval for v in outputs)
        self.ndim = self.members[0].output.aval.ndim
        last = self.members[-1]
        self.reduction = last if last.primitive.name in REDUCTIONS else None
        self.max_split = (
            self.ndim - 1 if self.reduction is None else self.reduction.params["axes"][0] - 1
        )
        itemsizes = [a.aval.dtype.itemsize for a in (*inputs, *(m.output for m in members))]
        self.chunk_elements = max(1, CHUNK_BYTES // max(itemsizes))
        self._code = KernelCode(self.members, self.inputs, self.outputs, repr(self))
        self._compiled = None if self.reduction else compiled_code(members, inputs, outputs)
        self._layouts: dict = {}

    @property
    def names(self) -> str:
        """The members' primitives, in order: ``sin·multiply·add``."""
        return "·".join(m.primitive.name for m in self.members)

    def __repr__(self) -> str:
        return f"Kernel({self.names})"

    def __call__(self, *operands: Any, out: np.ndarray | None = None) -> tuple:
        shapes = tuple(np.shape(v) for v in operands)
        layout = self._layouts.get(shapes)
        if layout is None:
            if len(self._layouts) > 64:
                self._layouts.clear()
            layout = self._layouts[shapes] = self._layout(shapes)
        shape, chunks, inner = layout
        if chunks is None:  # one chunk or none: the members on the whole operands
            return self._code.whole(*operands)
        if self._compiled is not None and self._compiles(shape):
            results = self._compiled(operands, shape, out)
            if results is not None:
                return results
        results = [
            out
            if k == 0 and out is not None
            else POOL.empty(self._shape_of(var, shape), var.aval.dtype)
            for k, var in enumerate(self.outputs)
        ]
        wrapped = [v if np.ndim(v) and isinstance(v, np.ndarray) else _Same(v) for v in operands]
        split = self.ndim - 1 - len(inner)
        self._code.run(chunks, wrapped, results, self._code.views(chunks, inner), split)
        return tuple(results)

    @staticmethod
    def _compiles(shape: tuple) -> bool:
        return config.fusion_engine == "numba" and int(np.prod(shape)) >= COMPILE_ELEMENTS

    def _shape_of(self, var: Var, shape: tuple) -> tuple:
        """The block shape of result ``var`` when the kernel runs over ``shape``."""
        if self.reduction is None or var is not self.reduction.output:
            return shape
        axes, keepdims = self.reduction.params["axes"], self.reduction.params["keepdims"]
        return tuple(
            1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes
        )

    def _layout(self, shapes: tuple) -> tuple:
        """The result's shape for operands of ``shapes``, and its chunks (None when it
        fits one)."""
        shape = np.broadcast_shapes(*shapes)
        if len(shape) != self.ndim:
            raise RuntimeError(f"internal error: a {self} computed on {shapes}")
        if int(np.prod(shape)) <= self.chunk_elements:
            return shape, None, None
        return (shape, *_chunks(shape, shapes, self.chunk_elements, self.max_split))


def _chunks(shape: tuple, shapes: tuple, elements: int, max_split: int | None = None) -> tuple:
    """The chunks of ``shape``: per chunk, its row count then each operand's index (for
    ``shapes``, aligned from the right as broadcasting aligns them) and the result's. Chunks
    split the outermost axis whose inner axes fit ``elements``, with whole inner axes, and
    every index of the axes outside it, splitting no axis after ``max_split``; ``inner`` is
    the chunk shape after its rows."""
    n = len(shape)
    split = next((j for j in range(n) if int(np.prod(shape[j + 1 :])) <= elements), n - 1)
    split = split if max_split is None else min(split, max_split)
    inner = tuple(shape[split + 1 :])
    step = max(1, elements // max(1, int(np.prod(inner))))
    chunks = []
    for outer in itertools.product(*(range(d) for d in shape[:split])):
        for start in range(0, shape[split], step):
            stop = min(start + step, shape[split])
            keys = [_key(s, n, split, outer, start, stop) for s in shapes]
            keys.append((*outer, slice(start, stop)))
            chunks.append((stop - start, *keys))
    return chunks, inner


def _key(operand: tuple, n: int, split: int, outer: tuple, start: int, stop: int) -> tuple:
    """An operand's index for one chunk: axes before the split by one index (broadcast axes
    at 0), the split axis by the chunk's rows, the inner axes whole."""
    key = []
    for q, size in enumerate(operand):
        k = n - len(operand) + q
        if k < split:
            key.append(0 if size == 1 else outer[k])
        elif k == split:
            key.append(slice(0, 1) if size == 1 else slice(start, stop))
        else:
            key.append(slice(None))
    return tuple(key)


def _fused_shape(*avals, kernel: Kernel):
    return kernel.out_avals


def _fused_impl(xp, *operands, kernel: Kernel, out=None):
    return kernel(*operands, out=out)


fused_elementwise_p = Primitive(
    "fused_elementwise",
    Rules(shape=_fused_shape, impl=_fused_impl, writes_into=True),
    multiple_results=True,
)


def fused_equation(kernel: Kernel) -> Equation:
    """The equation that runs ``kernel``."""
    params = {"kernel": kernel}
    return Equation(fused_elementwise_p, list(kernel.inputs), list(kernel.outputs), params)
