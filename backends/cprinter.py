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


#: C conversions of bfloat16 (the high 16 bits of a float32), rounding to nearest even and
#: keeping NaNs NaN, with masks rather than branches so that loops vectorise; OpenACC marks
#: them device routines
BFLOAT16_C = r"""
static inline float sg_bf16_load(const uint16_t b)
{ union { uint32_t i; float f; } v; v.i = (uint32_t)b << 16; return v.f; }
static inline uint16_t sg_bf16_store(const float f)
{
  union { uint32_t i; float f; } v; v.f = f;
  const uint32_t nan = -(uint32_t)((v.i & 0x7fffffffu) > 0x7f800000u);
  const uint32_t r = (v.i + 0x7fffu + ((v.i >> 16) & 1u)) >> 16;
  return (uint16_t)((r & ~nan) | (((v.i >> 16) | 0x40u) & nan));
}
"""


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
    """Prints IR expressions; ``Indexed`` accesses become flat offsets from each array's origin.

    An array stored in a 16-bit format is read widened to the arithmetic's type and written
    rounded to nearest: ``FORMATS`` holds, per format, the element type and the conversions.
    gcc >= 12 has ``_Float16`` (IEEE binary16, F16C instructions on x86); bfloat16 is the top
    half of a float32, converted by bit operations (``BFLOAT16_C``) where no type exists.
    """

    #: format -> (C element type, widening load, rounding store); {} is the value's text.
    #: (gcc 12 does not vectorise loops over _Float16, "unsupported data-type": the acoustic
    #: so 8 kernel runs at 0.18x of float32 on x86; integer conversions vectorised ran no
    #: faster, their instructions taking the time the bytes saved)
    FORMATS = {"float16": ("_Float16", "(float){}", "(_Float16)({})"),
               "bfloat16": ("uint16_t", "sg_bf16_load({})", "sg_bf16_store({})")}

    def __init__(self, dtype, strides):
        single = np.dtype(dtype) == np.float32
        super().__init__(settings={"type_aliases": {real: float32 if single else float64}})
        self.single = single
        self.strides = strides   # array name -> list of stride expressions (C text)
        self.rows = None         # the nest's row pointers while one is printed (c_rows)
        self.stored = {}         # array name -> its 16-bit storage format (ArrayParam.store)

    def element_type(self, name: str, dtype) -> str:
        """The C type of one stored element of array ``name`` (arithmetic type ``dtype``)."""
        fmt = self.stored.get(name)
        return self.FORMATS[fmt][0] if fmt else ctype(dtype)

    def widened(self, name: str, text: str) -> str:
        """A read of array ``name`` (C text ``text``) in the arithmetic's type."""
        fmt = self.stored.get(name)
        return self.FORMATS[fmt][1].format(text) if fmt else text

    def rounded(self, name: str, text: str) -> str:
        """Value ``text`` as stored in array ``name``."""
        fmt = self.stored.get(name)
        return self.FORMATS[fmt][2].format(text) if fmt else text

    def target(self, expr) -> str:
        """An access as the place a store (or an atomic update) writes."""
        row = self.rows.access(self, expr) if self.rows is not None else None
        return row or self.access(expr.base.name, self.flat_index(expr))

    def _print_Rounded(self, expr):
        load, store = self.FORMATS[expr.fmt][1:]
        return load.format(store.format(self._print(expr.args[0])))

    # sympy's printer skips methods named after intermediate Function subclasses
    _print_RoundedFloat16 = _print_RoundedBfloat16 = _print_Rounded

    def _print_INT(self, expr):
        """Devito's INT(e): the value truncated toward zero, an int in the expression."""
        return f"(int)({self._print(expr.args[0])})"

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

    def _print_Quotient(self, expr):
        a, b = (self.parenthesize(x, sympy.printing.precedence.PRECEDENCE["Mul"])
                for x in expr.args)
        return f"({a}/{b})"

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
        return self.widened(expr.base.name, self.target(expr))

    def index_expr(self, expr) -> str:
        """An integer expression of the layout (strides, origins, counts)."""
        return self._print(sympy.sympify(expr))
