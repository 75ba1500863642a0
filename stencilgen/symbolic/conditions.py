"""Devito's ConditionalDimensions in equations: the conditions an equation runs under.

An equation runs where the conditions of its ConditionalDimensions hold: those of its
``implicit_dims``, those its functions are indexed by (a snapshot ``usave`` on ``t_sub``, a
Function on ``(x, ci)``) and those it names. A dimension with a factor adds ``parent % factor == 0``. The conditions are
joined by And (by Or where every dimension says ``relation=Or``), then split into the part
that depends on the time step only, tested once a step before the loop nest, and the part
tested at each point.
"""
from __future__ import annotations

import sympy

from ..errors import InvalidEquation
from .functions import DiscreteFunction
from ..ir.nodes import Remainder


def CondEq(lhs, rhs):   # noqa: N802 - Devito's name
    """Devito's ``CondEq(a, b)``: the condition ``a == b``, kept unevaluated (stencilgen's
    ``Eq`` is an equation, not a condition)."""
    return sympy.Eq(lhs, rhs, evaluate=False)


def CondNe(lhs, rhs):   # noqa: N802 - Devito's name
    """Devito's ``CondNe(a, b)``: the condition ``a != b``, kept unevaluated."""
    return sympy.Ne(lhs, rhs, evaluate=False)


def conditional_dims(eq) -> tuple:
    """The ConditionalDimensions ``eq`` runs under, each once, in a fixed order."""
    found = [d for d in getattr(eq, "implicit_dims", ()) if d.is_Conditional]
    functions = eq.lhs.atoms(DiscreteFunction) | eq.rhs.atoms(DiscreteFunction)
    for f in sorted(functions, key=lambda f: f.name):
        d = getattr(f.field, "time_dim", None)
        if d is not None:
            found.append(d)
        # a function on a ConditionalDimension of space: written and read where it holds
        found += [d for d in getattr(f.grid, "dimensions", ())
                  if getattr(d, "is_Conditional", False)]
    found += sorted((s for s in eq.rhs.free_symbols if getattr(s, "is_Conditional", False)),
                    key=lambda s: s.name)
    out = []
    for d in found:
        if d not in out:
            out.append(d)
    timed = all(d.parent.is_Time and (d.condition is None or not sympy.sympify(
        d.condition).atoms(DiscreteFunction)) for d in out)
    if out and getattr(eq, "kind", None) is not None and not timed:
        raise InvalidEquation(f"{eq}: sparse injection and interpolation run under "
                              f"ConditionalDimensions of time only, on the time step "
                              f"({', '.join(d.name for d in out)} is not); interpolate a "
                              f"Function on the grid's own time dimension")
    return tuple(out)


def first_step(d) -> int:
    """The first step a ConditionalDimension of time with a factor keeps by its condition's
    lower bounds on time (``Ge(time, 10)``: 10; ``Gt(time, 9)``: 10), 0 without one: Devito
    indexes its snapshots from there, ``(time - first) / factor``."""
    if d.condition is None or d.factor is None or not d.parent.is_Time:
        return 0
    terms = d.condition.args if isinstance(d.condition, sympy.And) else (d.condition,)
    out = 0
    for c in terms:
        if isinstance(c, (sympy.GreaterThan, sympy.StrictGreaterThan)) and \
                c.lhs == d.parent and c.rhs.is_Integer:
            out = max(out, int(c.rhs) + isinstance(c, sympy.StrictGreaterThan))
        elif isinstance(c, (sympy.LessThan, sympy.StrictLessThan)) and \
                c.rhs == d.parent and c.lhs.is_Integer:
            out = max(out, int(c.lhs) + isinstance(c, sympy.StrictLessThan))
    return out


def factor_test(parent, factor):
    """``parent % factor == 0`` over C symbols."""
    return sympy.Eq(Remainder(parent, factor), 0, evaluate=False)


def _join(op, terms):
    """``op`` of ``terms``, None where it always holds."""
    if op is sympy.Or and sympy.true in terms:
        return None
    terms = [t for t in terms if t is not sympy.true]
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else op(*terms)


def split(eq, parts, mode, at_points):
    """(condition on the time step, condition at each point) of ``parts`` joined by ``mode``
    (And, Or); ``at_points(c)`` says whether ``c`` reads arrays or loop counters. Under And,
    each term goes where it can be tested first; under Or, all at the points if any must."""
    if mode is sympy.And:
        terms = [t for p in parts for t in sympy.And.make_args(p)]
        when = _join(sympy.And, [t for t in terms if not at_points(t)])
        guard = _join(sympy.And, [t for t in terms if at_points(t)])
    elif any(at_points(p) for p in parts):
        when, guard = None, _join(sympy.Or, parts)
    else:
        when, guard = _join(sympy.Or, parts), None
    if sympy.false in (when, guard) or sympy.false in (_join(mode, parts),):
        raise InvalidEquation(f"{eq}: its conditions never hold, so it would never run; check "
                              "the ConditionalDimensions' conditions")
    return when, guard
