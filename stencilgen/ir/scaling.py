"""Range scales of 16-bit arrays folded into the equations.

An array stored with scale ``s`` holds ``value / s`` (``ArrayParam.scale``). Each expression is
rewritten over the stored values as ``factor * expr'``, the factor (a product of scales) carried
outward instead of multiplied in at every read: a term's factor meets the others only where
they differ (then it joins the term's coefficient), and the equation's store divides by the
target's scale once. A linear wave equation of fields sharing one scale so comes out unchanged;
only what is not proportional to the fields (an injected source, a receiver's reading) gets a
multiply. Scales are powers of two, so the rewrite rounds nothing.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

import sympy

from .nodes import IndexedEq, Rounded, Stencils


def _fold(factor, expr):
    """``factor * expr``, the factor joining numeric coefficients of a sum's terms."""
    if factor == 1:
        return expr
    if isinstance(expr, sympy.Add) and factor.is_Number:
        return sympy.Add(*[_fold(factor, t) for t in expr.args])
    return factor * expr


def _sum(parts):
    """A sum of (expr, factor) terms as one (expr, factor): the most common factor kept."""
    factors = Counter(f for _, f in parts)
    common = factors.most_common(1)[0][0]
    return sympy.Add(*[_fold(f / common, e) for e, f in parts]), common


def _push(expr, scales):
    """(expr', factor) with ``expr == factor * expr'`` where arrays hold value / scale."""
    if isinstance(expr, sympy.Indexed):
        return expr, scales.get(expr.base.name, sympy.S.One)
    if not expr.args or expr.is_Number or isinstance(expr, sympy.Symbol):
        return expr, sympy.S.One
    if isinstance(expr, sympy.Add):
        return _sum([_push(a, scales) for a in expr.args])
    if isinstance(expr, sympy.Mul):
        parts = [_push(a, scales) for a in expr.args]
        return sympy.Mul(*[e for e, _ in parts]), sympy.Mul(*[f for _, f in parts])
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer:
        base, f = _push(expr.base, scales)
        return base ** expr.exp, f ** expr.exp
    if isinstance(expr, Rounded):   # rounding commutes with a power of two
        inner, f = _push(expr.args[0], scales)
        return expr.func(inner), f
    # anything else (sqrt, sin, a comparison) sees the values themselves
    return expr.func(*[_fold(f, e) for e, f in (_push(a, scales) for a in expr.args)]), \
        sympy.S.One


def _equation(eq: IndexedEq, scales: dict) -> IndexedEq:
    rhs, factor = _push(eq.rhs, scales)
    name = eq.lhs.base.name
    if eq.sparse_kind is None and scales.get(name, 1) is None:
        scales[name] = factor        # a temporary holds its expression as it comes
        return replace(eq, rhs=rhs)
    target = sympy.S.One if eq.sparse_kind == "interpolate" else scales.get(name, 1)
    # a condition compares values: _push leaves it over them, its factor 1
    guard = None if eq.guard is None else _push(eq.guard, scales)[0]
    return replace(eq, rhs=_fold(factor / target, rhs), guard=guard)


def fold_scales(st: Stencils) -> Stencils:
    """The equations over stored values; temporaries get the scale their equation gives."""
    scales = {a.name: a.scale for a in st.arrays if a.scale != 1}
    if not scales:
        return st
    eqs = tuple(_equation(e, scales) for e in st.eqs)
    arrays = tuple(replace(a, scale=scales.get(a.name, sympy.S.One)) for a in st.arrays)
    return replace(st, eqs=eqs, arrays=arrays)
