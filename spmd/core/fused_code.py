"""The code of a fused kernel (spmd/core/fused.py): its chunk loop and its whole-operand
path, generated once per kernel as Python functions that call NumPy's ufuncs directly.

In the chunk loop, each member writes into a register (a chunk-sized buffer; a member may
write over an operand that dies there) or, for a value the kernel gives back, straight into
that array's chunk. ``where`` of values or literals of its result's dtype selects bits:
``y ^ ((x ^ y) & mask)`` in the unsigned integers of that size, the mask all ones where the
condition holds, which is what NumPy's ``where`` copies, without a branch per element.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spmd.core.program import Literal, Var

IMPL_WITH_OUT = frozenset({"power", "logistic", "cbrt", "nextafter"})  # NumPy impl, out=
# reductions a kernel may end with, over trailing axes, each row of a chunk reduced whole
REDUCTIONS = frozenset({"reduce_sum", "reduce_prod", "reduce_max", "reduce_min",
                        "reduce_all", "reduce_any"})  # fmt: skip
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def loop_dtypes(ufunc: np.ufunc, inputs: Sequence) -> tuple[np.dtype, ...] | None:
    """The dtypes of ``ufunc``'s loop for ``inputs`` as the executor passes them (Python
    scalars weakly typed, NumPy values by their dtype): the operands', then the result's."""
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
        return tuple(map(np.dtype, ufunc.resolve_dtypes((*operands, None))))
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True, eq=False)
class Member:
    """One equation of a kernel: ``output = primitive(*inputs, **params)``."""

    primitive: Any
    inputs: tuple  # Var or Literal
    output: Var
    params: dict


class KernelCode:
    """A kernel's chunk loop as one generated Python function: registers (chunk buffers)
    assigned so that a member writes over an operand that dies there, members as direct
    ufunc calls."""

    def __init__(self, members: Sequence[Member], inputs: Sequence, outputs: Sequence, name: str):
        self.scope: dict[str, Any] = {"np": np, "copyto": np.copyto, "asarray": np.asarray}
        self.registers: list[np.dtype] = []  # slot → dtype
        self.scratch: list[type] = []  # unsigned dtypes of where's masks
        self.names: dict[Var, str] = {}
        self.prologue: list[str] = []  # lines before the chunk loop
        body = self._body(members, inputs, outputs)
        ins = ", ".join(f"I{k}" for k in range(len(inputs)))
        outs = ", ".join(f"O{k}" for k in range(len(outputs)))
        regs = [f"R{s}" for s in range(len(self.registers))]
        regs += [f"U{s}" for s in range(len(self.registers))]
        regs += [f"M{s}" for s in range(len(self.scratch))]
        regs += [f"T{s}" for s in range(len(self.scratch))]
        keys = [f"K{k}" for k in range(len(inputs))] + ["KO"]
        lines = ["def run(chunks, ins, outs, views, split):"]
        lines += self.prologue
        lines.append(f"    ({ins}{',' if ins else ''}) = ins")
        lines.append(f"    ({outs},) = outs")
        lines.append(f"    for rows, {', '.join(keys)} in chunks:")
        lines.append(f"        ({', '.join(regs)}{',' if regs else ''}) = views[rows]")
        lines += [f"        i{k} = I{k}[K{k}]" for k in range(len(inputs))]
        lines += [f"        o{k} = O{k}[KO]" for k in range(len(outputs))]
        lines += [f"        {line}" for line in body]
        lines += self._whole(members, inputs, outputs)
        exec(compile("\n".join(lines), f"<spmd {name}>", "exec"), self.scope)
        self.run, self.whole = self.scope["run"], self.scope["whole"]
        self.text = "\n".join(lines)

    def _whole(self, members, inputs, outputs) -> list[str]:
        """``whole(*operands)``: each member as the unfused program calls it, on the whole
        operands (for results of one chunk or less, where chunks gain nothing)."""
        names = {var: f"i{k}" for k, var in enumerate(inputs)}
        lines = [f"def whole({', '.join(names.values())}):"]
        for index, member in enumerate(members):
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
        lines.append(f"    return ({', '.join(names[v] for v in outputs)},)")
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

    def _body(self, members, inputs, outputs) -> list[str]:
        given = {v: f"o{k}" for k, v in enumerate(outputs)}
        for k, var in enumerate(inputs):
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
        if primitive.name in IMPL_WITH_OUT:
            self.scope[f"f{index}"] = primitive.rules.impl
            return [f"r = f{index}(np, {args}, out={out})", f"if r is not {out}: copyto({out}, r)"]
        if primitive.name == "convert_element_type":
            return [f"copyto({out}, asarray({args}), casting='unsafe')"]
        if primitive.name in REDUCTIONS:  # the chunk's axes: the kernel's from the split on
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
