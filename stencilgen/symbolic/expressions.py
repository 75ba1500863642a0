"""Devito's expression helpers (``devito.symbolics``): ``retrieve_functions``, the grid and
sparse functions an expression reads, ``INT``, a value cast to an integer (truncated
toward zero) in the generated code, and ``Real``, ``Imag``, ``Conj`` of complex values."""
from __future__ import annotations

import sympy

from ..errors import InvalidArgument
from .functions import DiscreteFunction


class INT(sympy.Function):
    """``INT(e)``: ``e`` truncated toward zero, as C's ``(int)`` cast (Devito's)."""

    nargs = 1

    @classmethod
    def eval(cls, arg):
        if arg.is_Number:
            return sympy.Integer(int(arg))
        return None

    def _eval_is_integer(self):
        return True


class ComplexPart(sympy.Function):
    """The real part, imaginary part or conjugate of a value (Devito's ``Real``, ``Imag``,
    ``Conj``); the compiler types and prints them by ``part``."""

    nargs = 1
    part = ""

    @classmethod
    def eval(cls, arg):
        if arg.is_Number and arg.is_real:
            return arg if cls.part != "imag" else sympy.S.Zero
        return None


class Real(ComplexPart):
    """The real part of an expression (Devito's ``Real``)."""
    part = "real"
    is_extended_real = True


class Imag(ComplexPart):
    """The imaginary part of an expression (Devito's ``Imag``)."""
    part = "imag"
    is_extended_real = True


class Conj(ComplexPart):
    """The complex conjugate of an expression (Devito's ``Conj``)."""
    part = "conj"


def retrieve_functions(exprs, mode="all"):
    """The function applications (``u(t, x, y)``, ``u(t + dt, x, y)``...) in ``exprs`` (an
    expression, an Eq or a list of them) in the order they appear; ``mode='unique'`` gives
    each once, as a set."""
    if mode not in ("all", "unique"):
        raise InvalidArgument(f"retrieve_functions: mode={mode!r}; use 'all' or 'unique'")
    items = list(exprs) if isinstance(exprs, (list, tuple, set)) else \
        list(exprs.entries.flat) if hasattr(exprs, "entries") else [exprs]
    found = []
    for e in items:
        parts = list(e) if hasattr(e, "lhs") and hasattr(e, "rhs") else [e]
        for part in parts:
            found += [a for a in sympy.preorder_traversal(sympy.sympify(part))
                      if isinstance(a, DiscreteFunction)]
    return set(found) if mode == "unique" else found
