"""What an equation may hold, checked before anything is generated.

The backends print only what the compiler produced from terms it knows: stencilgen's
functions, derivatives and Constants, dimensions and their spacings, finite numbers (``I``
and complex ones where the value is complex), sums, products and powers, and the math
functions below. Anything else a user can build
with sympy (an ``IndexedBase``, an undefined ``sympy.Function('f')``, ``oo``, ``nan``,
an ``Integral``, a ``Piecewise``...) would reach the C printer or the C compiler, so it is
refused here with ``InvalidEquation`` naming the term and what to write instead.
"""
from __future__ import annotations

import numpy as np
import sympy
from sympy.core.function import AppliedUndef
from sympy.logic.boolalg import Boolean

from ..errors import InvalidEquation
from ..symbolic.differentiable import Derivative
from ..symbolic.rotated import Rotated
from ..symbolic.expressions import INT, ComplexPart
from ..symbolic.functions import DiscreteFunction
from ..symbolic.relocation import SafeInv

#: the math functions every backend prints (C99 <math.h>, CUDA's device library)
MATH = (sympy.sin, sympy.cos, sympy.tan, sympy.asin, sympy.acos, sympy.atan, sympy.atan2,
        sympy.sinh, sympy.cosh, sympy.tanh, sympy.exp, sympy.log, sympy.Abs, sympy.Min,
        sympy.Max, sympy.sign, sympy.floor, sympy.ceiling, sympy.erf, sympy.gamma, sympy.Mod,
        INT, SafeInv)
_NAMES = ", ".join(f.__name__ for f in MATH)
#: the math functions of complex arguments too (C99 <complex.h>: cexp, csin, cabs...)
COMPLEX_MATH = (sympy.sin, sympy.cos, sympy.tan, sympy.sinh, sympy.cosh, sympy.tanh, sympy.exp,
                sympy.log, sympy.Abs)
_ARITHMETIC = (sympy.Add, sympy.Mul, sympy.Pow, sympy.Symbol, sympy.Tuple)
_CONDITIONS = (sympy.core.relational.Relational, sympy.And, sympy.Or, sympy.Not,
               sympy.logic.boolalg.BooleanAtom)


def _number(term) -> str | None:
    """Why number ``term`` cannot be computed, or None."""
    if term.is_finite is False or term is sympy.nan:
        return ("is not a finite number; write a large finite value, or put it in a "
                "Function's data")
    return None


def _why(term, condition: bool) -> str | None:
    """Why ``term`` (not below a known function) cannot appear, or None."""
    if isinstance(term, (sympy.Indexed, sympy.IndexedBase)):
        return ("is a sympy Indexed, which stencilgen does not know; use a Function and "
                "index it (f[x + 1, y]) or shift it (f.subs(x, x + x.spacing))")
    if term.is_Atom and term.is_number:   # numbers, pi, E, I, oo, zoo, nan
        return _number(term)
    if isinstance(term, AppliedUndef):
        return (f"is an undefined sympy function: build it as a stencilgen Function "
                f"(Function(name={term.func.__name__!r}, grid=grid)) or use one of the math "
                f"functions ({_NAMES})")
    if isinstance(term, sympy.Piecewise):
        return ("is a Piecewise; write the cases as equations under ConditionalDimensions, "
                "or as a mask Function (f*mask + g*(1 - mask))")
    if isinstance(term, MATH + _ARITHMETIC + (ComplexPart,)):
        return None
    if isinstance(term, sympy.Function):
        return f"({type(term).__name__}) has no counterpart in the generated code; use {_NAMES}"
    if condition and isinstance(term, _CONDITIONS):
        return None
    if isinstance(term, (Boolean, sympy.core.relational.Relational)):
        return ("is a condition, not a value; put conditions in a ConditionalDimension "
                "(Eq(..., implicit_dims=ConditionalDimension(..., condition=...)))")
    return (f"({type(term).__name__}) is not something stencilgen can compute; write it with "
            f"Functions, Constants, + - * / ** and {_NAMES}")


def complex_valued(expr) -> bool:
    """Whether ``expr`` has a complex value: ``I``, a complex number, Function or Constant
    enters, other than under ``Abs``, ``Real`` or ``Imag``."""
    if isinstance(expr, (sympy.Abs,)) or getattr(expr, "part", None) in ("real", "imag"):
        return False
    if isinstance(expr, DiscreteFunction) or isinstance(expr, sympy.Symbol):
        return getattr(expr, "dtype", None) is not None and np.dtype(expr.dtype).kind == "c"
    if expr.is_Atom:
        return bool(expr.is_number and expr.is_real is False)
    if isinstance(expr, (Derivative, Rotated)):
        return complex_valued(expr.expr)
    return any(complex_valued(a) for a in expr.args)


def value_dtype(expr, real) -> type:
    """The numpy type of ``expr``'s values: ``real``, or where it is complex the complex
    type of its widest complex function or Constant (of ``real``'s precision at least)."""
    if not complex_valued(expr):
        return np.dtype(real).type
    found = [np.dtype(f.dtype) for f in sympy.sympify(expr).atoms(DiscreteFunction, sympy.Symbol)
             if np.dtype(getattr(f, "dtype", real)).kind == "c"]
    return np.result_type(np.dtype(real).type(0) * 1j, *found).type


def _complex_misuse(term, condition: bool) -> str | None:
    """Why complex-valued arguments cannot enter ``term``, or None."""
    if isinstance(term, sympy.core.function.Application) \
            and not isinstance(term, COMPLEX_MATH + (ComplexPart, DiscreteFunction)) \
            and any(complex_valued(a) for a in term.args):
        names = ", ".join(f.__name__ for f in COMPLEX_MATH)
        return (f"takes a complex value, and {type(term).__name__} is defined for real ones "
                f"only; apply it to Real(...) or Imag(...), or use {names}, Real, Imag, Conj")
    if condition and isinstance(term, _CONDITIONS) and complex_valued(term):
        return ("compares complex values, which have no order; compare Real(...), "
                "Imag(...) or Abs(...)")
    return None


def check_terms(expr, eq, condition: bool = False) -> None:
    """Refuse the first term of ``expr`` (a side of ``eq``, or with ``condition`` one of
    its ConditionalDimensions' conditions) that the compiler does not know."""
    todo = [sympy.sympify(expr)]
    while todo:
        term = todo.pop()
        if isinstance(term, DiscreteFunction):   # its indices are checked when indexed
            continue
        if isinstance(term, (Derivative, Rotated)):
            todo.append(term.expr)
            continue
        why = _why(term, condition) or _complex_misuse(term, condition)
        if why is not None:
            raise InvalidEquation(f"{eq}: {term} {why}")
        todo += list(term.args)


def check_types(eq) -> None:
    """Refuse a complex value stored into a real function (Devito refuses it too): the
    imaginary part would be lost without a word."""
    lhs = eq.lhs
    if complex_valued(sympy.sympify(eq.rhs)) and not complex_valued(lhs):
        raise InvalidEquation(f"{eq}: the right-hand side is complex and {lhs.name} holds real "
                              f"values ({np.dtype(lhs.dtype).name}); store Real(...), Imag(...) "
                              f"or Abs(...) of it, or build {lhs.name} with "
                              f"dtype=numpy.complex64 (or complex128)")
