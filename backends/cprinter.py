"""The C expression printer shared by every backend, and the one table of C types.

float32 programs stay float32: literals carry ``F``, math calls are ``sinf``/``sqrtf``, and
integer powers become multiplications instead of ``pow``.
"""
from __future__ import annotations

import numpy as np
import sympy
from sympy.codegen.ast import float32, float64, real
from sympy.printing.c import C99CodePrinter

#: the C spelling of the IR's index types
INDEX_CTYPES = {"int64": "long", "int32": "int"}


def ctype(dtype) -> str:
    """The C type of a floating dtype (float32 -> float, float64 -> double)."""
    return "float" if np.dtype(dtype) == np.float32 else "double"


def time_loop_header(prog) -> tuple[str, str, str]:
    """Start, condition and update of the time loop: up from time_m, or down from time_M
    for an operator that writes ``.backward``."""
    t, (lo, hi) = prog.time.name, prog.time_bounds
    if prog.time_step < 0:
        return f"long {t} = {hi}", f"{t} >= {lo}", f"{t} -= 1"
    return f"long {t} = {lo}", f"{t} <= {hi}", f"{t} += 1"


def tuned_choice(tuning: str, timer: int, count: int, default: int) -> str:
    """C text of section ``timer``'s entry of the tuning argument, when it is given and one
    of the ``count`` choices; else ``default``."""
    at = f"{tuning}[{timer}]"
    return f"{tuning} && {at} >= 0 && {at} < {count} ? {at} : {default}"


def stride_table(arrays) -> dict:
    """Per array, the C text of each index's stride (the layout's names; innermost is 1)."""
    return {a.name: [n or str(v) for n, v in a.layout.strides] for a in arrays}


class CPrinter(C99CodePrinter):
    """Prints IR expressions; ``Indexed`` accesses become flat offsets from each array's origin."""

    def __init__(self, dtype, strides):
        single = np.dtype(dtype) == np.float32
        super().__init__(settings={"type_aliases": {real: float32 if single else float64}})
        self.single = single
        self.strides = strides   # array name -> list of stride expressions (C text)
        self.rows = None         # the nest's row pointers while one is printed (c_rows)

    def literal(self, value) -> str:
        v = float(value)
        if self.single:
            # the shortest text that reads back as the same float32
            return f"{np.format_float_scientific(np.float32(v), unique=True)}F"
        return repr(v)

    def _print_Rational(self, expr):
        return self.literal(expr)

    def _print_Integer(self, expr):
        return str(int(expr))

    def _print_Float(self, expr):
        return self.literal(expr)

    def _print_Literal(self, expr):
        return self.literal(expr.value)

    def _print_Pow(self, expr):
        base, exp = expr.base, expr.exp
        if exp.is_Integer and 0 < abs(int(exp)) <= 8:
            b = self.parenthesize(base, sympy.printing.precedence.PRECEDENCE["Mul"] + 1)
            prod = "*".join([b] * abs(int(exp)))
            if exp > 0:
                return prod if int(exp) == 1 else f"({prod})"
            one = "1.0F" if self.single else "1.0"
            return f"{one}/({prod})" if int(exp) != -1 else f"{one}/{b}"
        if exp == sympy.Rational(-1, 2):
            one = "1.0F" if self.single else "1.0"
            return f"{one}/{self._print(sympy.sqrt(base))}"
        return super()._print_Pow(expr)

    def _print_Remainder(self, expr):
        a, b = (self.parenthesize(x, sympy.printing.precedence.PRECEDENCE["Mul"])
                for x in expr.args)
        return f"{a} % {b}"

    def _print_Local(self, expr):
        return f"({self._print(expr.args[0])})"

    def flat_index(self, expr) -> str:
        """The offset of an access from its array's origin, as C text."""
        return self.offset(expr.indices, self.strides[expr.base.name])

    def offset(self, indices, strides) -> str:
        """``indices`` times ``strides`` (C text), summed."""
        parts = []
        for idx, stride in zip(indices, strides):
            if stride == "0":   # a dimension the array does not span
                continue
            i = self._print(idx)
            parts.append(f"({i})*{stride}" if stride != "1" else f"({i})" if idx.is_Add else i)
        return " + ".join(parts) or "0"

    def access(self, name: str, flat: str) -> str:
        """An element of array ``name`` at offset ``flat`` (backends may read it otherwise)."""
        return f"{name}[{flat}]"

    def _print_Indexed(self, expr):
        row = self.rows.access(self, expr) if self.rows is not None else None
        return row or self.access(expr.base.name, self.flat_index(expr))

    def index_expr(self, expr) -> str:
        """An integer expression of the layout (strides, origins, counts)."""
        return self._print(sympy.sympify(expr))
