"""The numeric type of each value in a program: real arithmetic in the grid's float type,
complex values (Devito's ``dtype=np.complex64``) where a complex array, scalar or ``I`` enters.

A complex value keeps its precision: ``complex64`` pairs two float32, so float32 code stays
float32; a ``complex128`` operand makes the whole value ``complex128``.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

#: complex dtype -> the real type of its parts
COMPLEX_PARTS = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}
#: real type -> the complex type of that precision
COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def is_complex(dtype) -> bool:
    return dtype is not None and np.dtype(dtype).kind == "c"


def part_type(dtype):
    """The real type of one part of ``dtype`` (a real dtype is its own)."""
    return COMPLEX_PARTS.get(np.dtype(dtype), np.dtype(dtype).type)


def _real_valued(e) -> bool:
    """Whether function application ``e`` is real whatever its argument: ``Abs`` (C's
    cabs), the real or imaginary part (``symbolic.expressions.Real``/``Imag``, C's creal
    and cimag)."""
    return isinstance(e, sympy.Abs) or getattr(e, "part", None) in ("real", "imag") or \
        getattr(e, "real_valued", False)


def value_type(expr, types: dict, real) -> type:
    """The numpy type of ``expr``: ``real`` unless a complex operand enters (an array or
    symbol whose name ``types`` maps to a complex dtype, or ``I``), then the complex type
    of the widest complex operand (``I`` counts as ``real``'s)."""
    found = _complex_width(sympy.sympify(expr), types, np.dtype(real))
    return np.dtype(real).type if found is None else found


def _complex_width(e, types, real):
    if _real_valued(e):
        return None
    if isinstance(e, sympy.Indexed):
        return _named(types.get(e.base.name))
    if isinstance(e, sympy.Symbol):
        return _named(types.get(e.name))
    if e is sympy.I or (e.is_Atom and e.is_number and e.is_real is False):
        return COMPLEX_OF[real]
    if isinstance(e, (sympy.core.relational.Relational, sympy.logic.boolalg.Boolean)):
        return None
    widest = None
    for a in e.args:
        t = _complex_width(a, types, real)
        if t is not None and (widest is None or np.dtype(t).itemsize > np.dtype(widest).itemsize):
            widest = t
    return widest


def _named(dtype):
    return np.dtype(dtype).type if is_complex(dtype) else None


def typed_symbol(name: str, value, types: dict, real) -> tuple:
    """A local ``name`` holding ``value``, and its dtype (recorded in ``types``): a complex
    local carries no real assumption, which would let sympy simplify it as real."""
    dtype = value_type(value, types, real)
    if is_complex(dtype):
        types[name] = dtype
        return sympy.Symbol(name), dtype
    return sympy.Symbol(name, real=True), dtype


def program_types(arrays, scalars) -> dict:
    """Name -> dtype of the complex arrays and scalars (the names ``value_type`` looks up)."""
    return {a.name: np.dtype(a.dtype).type for a in tuple(arrays) + tuple(scalars)
            if is_complex(a.dtype)}


def scalar_parts(name: str) -> tuple[str, str]:
    """The entry point's two real arguments that carry complex scalar ``name`` (a complex
    value by value has no portable calling convention through ctypes)."""
    return f"sg_{name}_re", f"sg_{name}_im"


class ComplexCall(sympy.Function):
    """A call of C99's complex math (``cexpf``, ``crealf``...): ``complex_calls`` names each
    function of a complex argument so the printers write ``c_name`` as it is."""

    c_name = ""
    real_valued = False   # creal, cimag, cabs: a real value


#: sympy's functions of complex arguments -> C99's names (<complex.h>)
_COMPLEX_NAMES = {sympy.exp: "cexp", sympy.log: "clog", sympy.sin: "csin", sympy.cos: "ccos",
                  sympy.tan: "ctan", sympy.sinh: "csinh", sympy.cosh: "ccosh",
                  sympy.tanh: "ctanh"}
_REAL_VALUED = ("creal", "cimag", "cabs")

# one class per C function, made here so that programs pickle (Dask workers) by reference
_CALLS = {}
for _base in tuple(_COMPLEX_NAMES.values()) + _REAL_VALUED + ("conj", "csqrt", "cpow"):
    for _suffix in ("f", ""):
        _cls = type(f"Call_{_base}{_suffix}", (ComplexCall,),
                    {"c_name": f"{_base}{_suffix}", "real_valued": _base in _REAL_VALUED,
                     "__module__": __name__})
        _CALLS[_cls.c_name] = globals()[_cls.__name__] = _cls


def _call(name: str, dtype):
    """The ComplexCall class of C function ``name`` for ``dtype`` (``f`` suffix: complex64)."""
    return _CALLS[f"{name}{'f' if np.dtype(dtype) == np.complex64 else ''}"]


def complex_calls(st):
    """``st`` (Stencils) with each math function of a complex argument a ComplexCall (cexpf,
    cabsf, csqrtf, cpowf...), Real/Imag/Conj of complex values C99's creal/cimag/conj and of
    real values what they are: the printers then need no types."""
    types = program_types(st.arrays, st.scalars)
    sides = [s for e in st.eqs for s in (e.rhs, e.guard) if s is not None]
    if not types and not any(s.has(sympy.I) or any(getattr(f, "part", None) for f in
                                                   s.atoms(sympy.Function)) for s in sides):
        return st
    real = np.dtype(st.dtype).type
    memo: dict = {}

    def walk(e):
        if not e.args or isinstance(e, sympy.Indexed):
            return e
        if e in memo:
            return memo[e]
        args = [walk(a) for a in e.args]
        t = value_type(sympy.Add(*args, evaluate=False) if len(args) > 1 else args[0],
                       types, real) if isinstance(e, (sympy.Function, sympy.Pow)) else None
        if t is None or not is_complex(t):
            part = getattr(e, "part", None)
            out = (args[0] if part != "imag" else sympy.S.Zero) if part else e.func(*args)
        elif getattr(e, "part", None):
            out = _call({"real": "creal", "imag": "cimag", "conj": "conj"}[e.part], t)(*args)
        elif isinstance(e, sympy.Abs):
            out = _call("cabs", t)(*args)
        elif isinstance(e, sympy.Pow) and not (args[1].is_Integer and 0 < abs(int(args[1])) <= 8):
            out = _call("csqrt", t)(args[0]) if args[1] == sympy.S.Half else _call("cpow", t)(*args)
        elif type(e) in _COMPLEX_NAMES:
            out = _call(_COMPLEX_NAMES[type(e)], t)(*args)
        else:
            out = e.func(*args)
        memo[e] = out
        return out

    return replace(st, eqs=tuple(replace(e, rhs=walk(e.rhs), guard=None if e.guard is None
                                         else walk(e.guard)) for e in st.eqs))
