"""Devito's expression helpers (``devito.symbolics``): ``retrieve_functions``, the grid and
sparse functions an expression reads, and ``INT``, a value cast to an integer (truncated
toward zero) in the generated code."""
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


def retrieve_functions(exprs, mode="all"):
    """The function applications (``u(t, x, y)``, ``u(t + dt, x, y)``...) in ``exprs`` (an
    expression, an Eq or a list of them) in the order they appear; ``mode='unique'`` gives
    each once, as a set."""
    if mode not in ("all", "unique"):
        raise InvalidArgument(f"retrieve_functions: mode={mode!r}; use 'all' or 'unique'")
    items = exprs if isinstance(exprs, (list, tuple, set)) else [exprs]
    found = []
    for e in items:
        parts = list(e) if hasattr(e, "lhs") and hasattr(e, "rhs") else [e]
        for part in parts:
            found += [a for a in sympy.preorder_traversal(sympy.sympify(part))
                      if isinstance(a, DiscreteFunction)]
    return set(found) if mode == "unique" else found
