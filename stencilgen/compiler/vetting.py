"""What an equation may hold, checked before anything is generated.

The backends print only what the compiler produced from terms it knows: stencilgen's
functions, derivatives and Constants, dimensions and their spacings, finite real numbers,
sums, products and powers, and the math functions below. Anything else a user can build
with sympy (an ``IndexedBase``, an undefined ``sympy.Function('f')``, ``I``, ``oo``, ``nan``,
an ``Integral``, a ``Piecewise``...) would reach the C printer or the C compiler, so it is
refused here with ``InvalidEquation`` naming the term and what to write instead.
"""
from __future__ import annotations

import sympy
from sympy.core.function import AppliedUndef
from sympy.logic.boolalg import Boolean

from ..errors import InvalidEquation
from ..symbolic.differentiable import Derivative
from ..symbolic.expressions import INT
from ..symbolic.functions import DiscreteFunction

#: the math functions every backend prints (C99 <math.h>, CUDA's device library)
MATH = (sympy.sin, sympy.cos, sympy.tan, sympy.asin, sympy.acos, sympy.atan, sympy.atan2,
        sympy.sinh, sympy.cosh, sympy.tanh, sympy.exp, sympy.log, sympy.Abs, sympy.Min,
        sympy.Max, sympy.sign, sympy.floor, sympy.ceiling, sympy.erf, sympy.gamma, sympy.Mod,
        INT)
_NAMES = ", ".join(f.__name__ for f in MATH)
_ARITHMETIC = (sympy.Add, sympy.Mul, sympy.Pow, sympy.Symbol, sympy.Tuple)
_CONDITIONS = (sympy.core.relational.Relational, sympy.And, sympy.Or, sympy.Not,
               sympy.logic.boolalg.BooleanAtom)


def _number(term) -> str | None:
    """Why number ``term`` cannot be computed, or None."""
    if term.is_finite is False or term is sympy.nan:
        return ("is not a finite number; write a large finite value, or put it in a "
                "Function's data")
    if term.is_real is False:
        return ("is a complex number: stencilgen computes in real floating point; keep the "
                "real and imaginary parts in two Functions")
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
    if isinstance(term, MATH + _ARITHMETIC):
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


def check_terms(expr, eq, condition: bool = False) -> None:
    """Refuse the first term of ``expr`` (a side of ``eq``, or with ``condition`` one of
    its ConditionalDimensions' conditions) that the compiler does not know."""
    todo = [sympy.sympify(expr)]
    while todo:
        term = todo.pop()
        if isinstance(term, DiscreteFunction):   # its indices are checked when indexed
            continue
        if isinstance(term, Derivative):
            todo.append(term.expr)
            continue
        why = _why(term, condition)
        if why is not None:
            raise InvalidEquation(f"{eq}: {term} {why}")
        todo += list(term.args)
