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


#: the C names of the complex types; each backend's preamble defines them in its language
#: (C99 ``float _Complex``, or a C++ class with the same arithmetic, ``COMPLEX_CXX``)
COMPLEX_CTYPES = {"complex64": "sg_cfloat", "complex128": "sg_cdouble"}


def is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def has_complex(prog) -> bool:
    """Whether program ``prog`` holds complex values: arrays, scalars or locals."""
    locals_ = tuple(prog.prologue) + tuple(a for k in prog.kernels for a in getattr(k, "body", ()))
    return any(is_complex(x.dtype) for x in tuple(prog.arrays) + tuple(prog.scalars)) or \
        any(a.dtype is not None and is_complex(a.dtype) for a in locals_)


def part_dtype(dtype) -> np.dtype:
    """The numpy type of one part of a complex dtype (complex64 -> float32)."""
    return np.empty(0, dtype).real.dtype


def complex_value(dtype, re: str, im: str) -> str:
    """C text of the complex ``dtype`` value of parts ``re`` and ``im`` (C text)."""
    return f"SG_C{'FLOAT' if np.dtype(dtype) == np.complex64 else 'DOUBLE'}({re}, {im})"


def ctype(dtype) -> str:
    """The C type of a value's dtype (float32 -> float, float64 -> double, complex64 ->
    sg_cfloat, complex128 -> sg_cdouble)."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return COMPLEX_CTYPES[dt.name]
    if dt.kind in "iu":
        return INTEGER_CTYPES[dt.name]
    return "float" if dt == np.float32 else "double"


#: C's names of the integer types a field may hold (of their widths on every target we build for)
INTEGER_CTYPES = {"int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
                  "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int"}


#: C99's complex types under the names the generated code uses
COMPLEX_C = """#include <complex.h>
typedef float _Complex sg_cfloat;
typedef double _Complex sg_cdouble;
#define SG_CFLOAT(re, im) CMPLXF(re, im)
#define SG_CDOUBLE(re, im) CMPLX(re, im)
"""

#: the same types as a C++ class (CUDA device code, nvc++): C99's arithmetic with real
#: operands of any type, and C99's function names (cexpf, crealf...), so one printer serves
#: both languages; SG_HD marks what device code may call
COMPLEX_CXX = r"""template <typename T> struct sg_complex
{
  T re, im;
  SG_HD sg_complex() : re(0), im(0) {}
  template <typename S> SG_HD sg_complex(S r) : re((T)r), im(0) {}
  SG_HD sg_complex(T r, T i) : re(r), im(i) {}
  template <typename U> SG_HD sg_complex(const sg_complex<U> &z) : re((T)z.re), im((T)z.im) {}
  SG_HD sg_complex &operator+=(const sg_complex &b) { re += b.re; im += b.im; return *this; }
  SG_HD sg_complex &operator-=(const sg_complex &b) { re -= b.re; im -= b.im; return *this; }
};
typedef sg_complex<float> sg_cfloat;
typedef sg_complex<double> sg_cdouble;
#define SG_CFLOAT(r, i) sg_cfloat((float)(r), (float)(i))
#define SG_CDOUBLE(r, i) sg_cdouble((double)(r), (double)(i))
template <typename T> SG_HD sg_complex<T> operator+(sg_complex<T> a, sg_complex<T> b)
{ return sg_complex<T>(a.re + b.re, a.im + b.im); }
template <typename T> SG_HD sg_complex<T> operator-(sg_complex<T> a, sg_complex<T> b)
{ return sg_complex<T>(a.re - b.re, a.im - b.im); }
template <typename T> SG_HD sg_complex<T> operator*(sg_complex<T> a, sg_complex<T> b)
{ return sg_complex<T>(a.re*b.re - a.im*b.im, a.re*b.im + a.im*b.re); }
template <typename T> SG_HD sg_complex<T> operator/(sg_complex<T> a, sg_complex<T> b)
{
  const T d = b.re*b.re + b.im*b.im;
  return sg_complex<T>((a.re*b.re + a.im*b.im)/d, (a.im*b.re - a.re*b.im)/d);
}
template <typename T> SG_HD sg_complex<T> operator-(sg_complex<T> a)
{ return sg_complex<T>(-a.re, -a.im); }
template <typename T> SG_HD sg_complex<T> operator+(sg_complex<T> a) { return a; }
#define SG_MIXED(op) \
template <typename T, typename S> SG_HD sg_complex<T> operator op(sg_complex<T> a, S b) \
{ return a op sg_complex<T>(b); } \
template <typename T, typename S> SG_HD sg_complex<T> operator op(S a, sg_complex<T> b) \
{ return sg_complex<T>(a) op b; } \
template <typename T, typename U> SG_HD sg_complex<decltype(T()*U())> \
operator op(sg_complex<T> a, sg_complex<U> b) \
{ return sg_complex<decltype(T()*U())>(a) op sg_complex<decltype(T()*U())>(b); }
SG_MIXED(+) SG_MIXED(-) SG_MIXED(*) SG_MIXED(/)
#undef SG_MIXED
#define SG_CFUNCS(T, s) \
SG_HD inline T creal##s(sg_complex<T> z) { return z.re; } \
SG_HD inline T cimag##s(sg_complex<T> z) { return z.im; } \
SG_HD inline T cabs##s(sg_complex<T> z) { return hypot##s(z.re, z.im); } \
SG_HD inline T carg##s(sg_complex<T> z) { return atan2##s(z.im, z.re); } \
SG_HD inline sg_complex<T> conj##s(sg_complex<T> z) { return sg_complex<T>(z.re, -z.im); } \
SG_HD inline sg_complex<T> cexp##s(sg_complex<T> z) \
{ const T m = exp##s(z.re); return sg_complex<T>(m*cos##s(z.im), m*sin##s(z.im)); } \
SG_HD inline sg_complex<T> clog##s(sg_complex<T> z) \
{ return sg_complex<T>(log##s(cabs##s(z)), carg##s(z)); } \
SG_HD inline sg_complex<T> csqrt##s(sg_complex<T> z) \
{ \
  const T r = cabs##s(z); \
  const T a = sqrt##s((r + fabs##s(z.re))/2); \
  if (a == 0) return sg_complex<T>(0, 0); \
  const T b = z.im/(2*a); \
  return z.re >= 0 ? sg_complex<T>(a, b) : sg_complex<T>(fabs##s(b), z.im >= 0 ? a : -a); \
} \
SG_HD inline sg_complex<T> cpow##s(sg_complex<T> a, sg_complex<T> b) \
{ return (a.re == 0 && a.im == 0) ? sg_complex<T>(0, 0) : cexp##s(b*clog##s(a)); } \
SG_HD inline sg_complex<T> csin##s(sg_complex<T> z) \
{ return sg_complex<T>(sin##s(z.re)*cosh##s(z.im), cos##s(z.re)*sinh##s(z.im)); } \
SG_HD inline sg_complex<T> ccos##s(sg_complex<T> z) \
{ return sg_complex<T>(cos##s(z.re)*cosh##s(z.im), -sin##s(z.re)*sinh##s(z.im)); } \
SG_HD inline sg_complex<T> csinh##s(sg_complex<T> z) \
{ return sg_complex<T>(sinh##s(z.re)*cos##s(z.im), cosh##s(z.re)*sin##s(z.im)); } \
SG_HD inline sg_complex<T> ccosh##s(sg_complex<T> z) \
{ return sg_complex<T>(cosh##s(z.re)*cos##s(z.im), sinh##s(z.re)*sin##s(z.im)); } \
SG_HD inline sg_complex<T> ctan##s(sg_complex<T> z) { return csin##s(z)/ccos##s(z); } \
SG_HD inline sg_complex<T> ctanh##s(sg_complex<T> z) { return csinh##s(z)/ccosh##s(z); }
template <typename T> SG_HD bool sg_finite(const sg_complex<T> z)
{ return isfinite(z.re) && isfinite(z.im); }
SG_CFUNCS(float, f)
SG_CFUNCS(double, )
#undef SG_CFUNCS
"""


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


def moved(bound: str, points: int) -> str:
    """C text of ``bound`` moved by ``points`` (a nest widened, or narrowed to a subdomain)."""
    return bound if not points else f"{bound} + {points}" if points > 0 else f"{bound} - {-points}"


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

    # -- complex values: C99 <complex.h> names (``COMPLEX_CXX`` gives C++ the same) ---------
    def _print_ImaginaryUnit(self, expr):
        return complex_value(np.complex64 if self.single else np.complex128, "0",
                             "1.0F" if self.single else "1.0")

    def _print_Function(self, expr):
        """A C function the compiler named (``c_name``: the IR's complex calls), else
        sympy's."""
        name = getattr(expr, "c_name", None)
        if name:
            return f"{name}({', '.join(self._print(a) for a in expr.args)})"
        return super()._print_Function(expr)

    def _print_SafeInv(self, expr):
        """Devito's safe inverse (``relocation.SafeInv``): 0 where the value or its base lies
        below the threshold, else one over the value."""
        value, base = (self._print(a) for a in expr.args)
        eps, one = self.literal(expr.EPS), "1.0F" if self.single else "1.0"
        return f"((({value}) < {eps} || ({base}) < {eps}) ? {self.literal(0)} : " \
               f"{one}/({value}))"

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
            return self.reciprocal(prod if int(exp) != -1 else b, int(exp) != -1)
        if exp == sympy.Rational(-1, 2):
            one = "1.0F" if self.single else "1.0"
            return f"{one}/{self._print(sympy.sqrt(base))}"
        return super()._print_Pow(expr)

    def reciprocal(self, text: str, product: bool) -> str:
        """1/``text`` (``product``: a product of factors, parenthesised here)."""
        one = "1.0F" if self.single else "1.0"
        return f"{one}/({text})" if product else f"{one}/{text}"

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
