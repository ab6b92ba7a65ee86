"""Fused elementwise kernels: a run of elementwise equations computed in one pass over their
operands, chunk by chunk, with no temporary array as large as the result.

A ``Kernel`` holds its member equations in order, its operands and the values it gives back.
A call walks the result's index space in chunks of about ``CHUNK_BYTES`` per value: each
member runs on the chunk with NumPy's own ufunc (or the primitive's NumPy implementation),
writing into a chunk-sized buffer that stays in the core's cache, and a value the kernel
gives back is written straight into its array. The engine is NumPy itself: every element
goes through the same ufunc loop, with the same operand dtypes and Python scalars, as in the
unfused equation, so integer arithmetic, NaN propagation and dtype promotion are NumPy's
(only which SIMD lane computes an element may differ, for transcendental functions). NumPy's
vectorized sin, exp and tanh ran 5 to 20 times faster than numexpr's and numba's on the
machines measured (docs/ARCHITECTURE.md). ``where`` on operands of the result's dtype
selects bits with integer operations, as NumPy's own ``where`` branches on every element.

``fused_elementwise`` is the primitive whose equation runs a kernel: the executor's
Compute steps, last-use and buffer-reuse plans run it as any other equation.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spmd.core.primitive import Primitive, Rules
from spmd.core.program import Equation, Literal, Var

CHUNK_BYTES = 1 << 18  # per value of a chunk: the values of one chunk stay in L2
_IMPL_WITH_OUT = frozenset({"power", "logistic", "cbrt", "nextafter"})  # NumPy impl, out=
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# reductions a kernel may end with, over trailing axes, each row of a chunk reduced whole
_REDUCTIONS = frozenset({"reduce_sum", "reduce_prod", "reduce_max", "reduce_min",
                         "reduce_all", "reduce_any"})  # fmt: skip


@dataclass(frozen=True, eq=False)
class Member:
    """One equation of a kernel: ``output = primitive(*inputs, **params)``."""

    primitive: Any
    inputs: tuple  # Var or Literal
    output: Var
    params: dict


def fusible(primitive, params: dict, inputs: Sequence, output: Var) -> bool:
    """Whether an equation may run chunk by chunk in a kernel: an elementwise primitive
    whose NumPy implementation gives each result element from the operands' elements at
    the same (broadcast) index alone, with one result of at least one dimension (a ufunc's
    of the dtype its loop gives, so that writing into a buffer of that dtype casts nothing)."""
    if primitive.multiple_results or output.aval.ndim == 0 or output.aval.weak_type:
        return False
    ufunc = primitive.rules.ufunc
    if ufunc is not None:
        return not params and ufunc.nout == 1 and _loop_dtype(ufunc, inputs) == output.aval.dtype
    if primitive.name in _IMPL_WITH_OUT:
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
    if primitive.name not in _REDUCTIONS or output.aval.weak_type:
        return False
    (operand,) = inputs
    if not isinstance(operand, Var):
        return False
    axes, ndim = tuple(params.get("axes", ())), getattr(operand.aval, "ndim", 0)
    return bool(axes) and axes[0] >= 1 and axes == tuple(range(axes[0], ndim))


def _loop_dtype(ufunc: np.ufunc, inputs: Sequence) -> np.dtype | None:
    """The result dtype of ``ufunc``'s loop for ``inputs`` as the executor passes them:
    Python scalars weakly typed, NumPy values by their dtype."""
    operands = []
    for atom in inputs:
        value = atom.value if isinstance(atom, Literal) else None
        if type(value) in (int, float, complex):
            operands.append(type(value))
        elif isinstance(atom, Literal):
            operands.append(np.asarray(value).dtype)
        elif atom.aval.weak_type and atom.aval.dtype.kind in "iufc":
            operands.append({"i": int, "u": int, "f": float, "c": complex}[atom.aval.dtype.kind])
        else:
            operands.append(atom.aval.dtype)
    try:
        return ufunc.resolve_dtypes((*operands, None))[-1]
    except (TypeError, ValueError):
        return None


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
        self.reduction = last if last.primitive.name in _REDUCTIONS else None
        self.max_split = (
            self.ndim - 1 if self.reduction is None else self.reduction.params["axes"][0] - 1
        )
        itemsizes = [a.aval.dtype.itemsize for a in (*inputs, *(m.output for m in members))]
        self.chunk_elements = max(1, CHUNK_BYTES // max(itemsizes))
        self._code = _Code(self)
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
        results = [
            out
            if k == 0 and out is not None
            else np.empty(self._shape_of(var, shape), var.aval.dtype)
            for k, var in enumerate(self.outputs)
        ]
        wrapped = [v if np.ndim(v) and isinstance(v, np.ndarray) else _Same(v) for v in operands]
        split = self.ndim - 1 - len(inner)
        self._code.run(chunks, wrapped, results, self._code.views(chunks, inner), split)
        return tuple(results)

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


class _Code:
    """A kernel's chunk loop as one generated Python function: registers (chunk buffers)
    assigned so that a member writes over an operand that dies there, members as direct
    ufunc calls."""

    def __init__(self, kernel: Kernel) -> None:
        self.scope: dict[str, Any] = {"np": np, "copyto": np.copyto, "asarray": np.asarray}
        self.registers: list[np.dtype] = []  # slot → dtype
        self.scratch: list[type] = []  # unsigned dtypes of where's masks
        self.names: dict[Var, str] = {}
        self.prologue: list[str] = []  # lines before the chunk loop
        body = self._body(kernel)
        ins = ", ".join(f"I{k}" for k in range(len(kernel.inputs)))
        outs = ", ".join(f"O{k}" for k in range(len(kernel.outputs)))
        regs = [f"R{s}" for s in range(len(self.registers))]
        regs += [f"U{s}" for s in range(len(self.registers))]
        regs += [f"M{s}" for s in range(len(self.scratch))]
        regs += [f"T{s}" for s in range(len(self.scratch))]
        keys = [f"K{k}" for k in range(len(kernel.inputs))] + ["KO"]
        lines = ["def run(chunks, ins, outs, views, split):"]
        lines += self.prologue
        lines.append(f"    ({ins}{',' if ins else ''}) = ins")
        lines.append(f"    ({outs},) = outs")
        lines.append(f"    for rows, {', '.join(keys)} in chunks:")
        lines.append(f"        ({', '.join(regs)}{',' if regs else ''}) = views[rows]")
        lines += [f"        i{k} = I{k}[K{k}]" for k in range(len(kernel.inputs))]
        lines += [f"        o{k} = O{k}[KO]" for k in range(len(kernel.outputs))]
        lines += [f"        {line}" for line in body]
        lines += self._whole(kernel)
        exec(compile("\n".join(lines), f"<spmd {kernel!r}>", "exec"), self.scope)
        self.run, self.whole = self.scope["run"], self.scope["whole"]
        self.text = "\n".join(lines)

    def _whole(self, kernel: Kernel) -> list[str]:
        """``whole(*operands)``: each member as the unfused program calls it, on the whole
        operands (for results of one chunk or less, where chunks gain nothing)."""
        names = {var: f"i{k}" for k, var in enumerate(kernel.inputs)}
        lines = [f"def whole({', '.join(names.values())}):"]
        for index, member in enumerate(kernel.members):
            args = [self._atom(a) if isinstance(a, Literal) else names[a] for a in member.inputs]
            names[member.output] = f"w{index}"
            rules = member.primitive.rules
            if rules.ufunc is not None:
                call = f"f{index}({', '.join(args)})"
            else:
                self.scope[f"impl{index}"] = rules.impl
                self.scope[f"params{index}"] = member.params
                call = f"impl{index}(np, {', '.join(args)}, **params{index})"
            lines.append(f"    w{index} = {call}")
        lines.append(f"    return ({', '.join(names[v] for v in kernel.outputs)},)")
        return lines

    def views(self, chunks: list, inner: tuple) -> dict:
        """Per row count of the chunks, the registers' and scratch buffers' views."""
        rows = {c[0] for c in chunks}
        size = max(rows) * int(np.prod(inner))
        typed = [np.empty(size, d) for d in self.registers]
        unsigned = [b.view(_UNSIGNED[b.dtype.itemsize]) if b.dtype.itemsize in _UNSIGNED else b
                    for b in typed]  # fmt: skip
        masks = [np.empty(size, u) for u in self.scratch]
        temps = [np.empty(size, u) for u in self.scratch]
        found = {}
        for r in rows:
            shape, count = (r, *inner), r * int(np.prod(inner))
            found[r] = tuple(b[:count].reshape(shape) for b in (*typed, *unsigned, *masks, *temps))
        return found

    def _body(self, kernel: Kernel) -> list[str]:
        members = kernel.members
        given = {v: f"o{k}" for k, v in enumerate(kernel.outputs)}
        for k, var in enumerate(kernel.inputs):
            self.names[var] = f"i{k}"
        last = {}
        for index, member in enumerate(members):
            last.update((a, index) for a in member.inputs if isinstance(a, Var))
        free: dict[np.dtype, list[int]] = {}
        slot_of: dict[Var, int] = {}
        lines = []
        for index, member in enumerate(members):
            dying = [a for a in dict.fromkeys(member.inputs)
                     if a in slot_of and last.get(a) == index]  # fmt: skip
            for var in dying:
                free.setdefault(var.aval.dtype, []).append(slot_of.pop(var))
            out = member.output
            if out in given:
                self.names[out] = given[out]
            else:
                pool = free.get(out.aval.dtype)
                slot = pool.pop() if pool else self._register(out.aval.dtype)
                slot_of[out] = slot
                self.names[out] = f"R{slot}"
            lines += self._member(index, member)
        return lines

    def _register(self, dtype: np.dtype) -> int:
        self.registers.append(dtype)
        return len(self.registers) - 1

    def _atom(self, atom) -> str:
        if isinstance(atom, Literal):
            name = f"c{len(self.scope)}"
            self.scope[name] = atom.value
            return name
        return self.names[atom]

    def _member(self, index: int, member: Member) -> list[str]:
        primitive, out = member.primitive, self.names[member.output]
        args = ", ".join(self._atom(a) for a in member.inputs)
        if primitive.rules.ufunc is not None:
            self.scope[f"f{index}"] = primitive.rules.ufunc
            return [f"f{index}({args}, out={out})"]
        if primitive.name in _IMPL_WITH_OUT:
            self.scope[f"f{index}"] = primitive.rules.impl
            return [f"r = f{index}(np, {args}, out={out})", f"if r is not {out}: copyto({out}, r)"]
        if primitive.name == "convert_element_type":
            return [f"copyto({out}, asarray({args}), casting='unsafe')"]
        if primitive.name in _REDUCTIONS:  # the chunk's axes: the kernel's from the split on
            self.scope[f"f{index}"] = primitive.rules.impl
            self.scope[f"params{index}"] = member.params
            self.prologue.append(
                f"    axes{index} = tuple(a - split for a in params{index}['axes'])"
            )
            return [
                f"copyto({out}, f{index}(np, {args}, **{{**params{index}, 'axes': axes{index}}}))"
            ]
        return self._where(member, out)

    def _where(self, member: Member, out: str) -> list[str]:
        """``where(c, x, y)``: bits selected by a mask of c when c is a boolean value and x
        and y are values or literals of the result's dtype; else NumPy's where."""
        c, x, y = member.inputs
        dtype = member.output.aval.dtype
        unsigned = _UNSIGNED.get(dtype.itemsize)
        selects = (
            unsigned is not None
            and isinstance(c, Var)
            and c.aval.dtype == np.bool_
            and c.aval.ndim > 0
        )
        sides = [self._bits(a, b, dtype, unsigned) for a, b in ((x, y), (y, x))]
        if not selects or None in sides:
            self.scope["where"] = np.where
            names = ", ".join(self._atom(a) for a in (c, x, y))
            return [f"copyto({out}, where({names}))"]
        if unsigned not in self.scratch:
            self.scratch.append(unsigned)
        s = self.scratch.index(unsigned)
        cond = self.names[c]
        mask = (
            [f"np.negative({cond}.view(np.uint8), out=M{s})"]
            if dtype.itemsize == 1
            else [f"copyto(M{s}, {cond}.view(np.uint8), casting='unsafe')",
                  f"np.negative(M{s}, out=M{s})"]
        )  # fmt: skip
        target = f"U{out[1:]}" if out.startswith("R") else f"{out}.view(np.{unsigned.__name__})"
        xb, yb = sides
        return [
            *mask,
            f"np.bitwise_xor({xb}, {yb}, out=T{s})",
            f"np.bitwise_and(T{s}, M{s}, out=T{s})",
            f"np.bitwise_xor(T{s}, {yb}, out={target})",
        ]

    def _bits(self, atom, other, dtype: np.dtype, unsigned) -> str | None:
        """``atom`` as its bits in ``unsigned`` when it holds ``dtype`` (a literal as NumPy's
        where converts it beside ``other``), else None."""
        if unsigned is None:
            return None
        if isinstance(atom, Literal):
            beside = np.zeros(1, other.aval.dtype)
            probe = np.where(np.zeros(1, np.bool_), beside, atom.value)
            if probe.dtype != dtype:
                return None
            name = f"c{len(self.scope)}"
            self.scope[name] = probe.reshape(()).view(unsigned)
            return name
        if atom.aval.dtype != dtype or atom.aval.weak_type or atom.aval.ndim == 0:
            return None
        name = self.names[atom]
        if name.startswith("R"):
            return f"U{name[1:]}"
        return f"{name}.view(np.{unsigned.__name__})"


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
