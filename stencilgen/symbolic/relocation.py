"""A right-hand side evaluated where its left-hand side's values sit (Devito's staggered
semantics): a derivative without x0 is taken at the left-hand side's point, and a function
that sits elsewhere is averaged onto it from its two neighbours along each dimension where it
differs. ``Eq.evaluate`` and the lowering apply ``at_place`` before expanding derivatives."""
from __future__ import annotations

import sympy
from sympy.core.function import AppliedUndef

from .differentiable import DAdd, DMul, DPow, Derivative, Evaluated, highest, location, placed
from .rotated import Rotated
from ..errors import InvalidEquation
from .shifts import shift
from .staggering import HALF, natural_index


def _is_field(e) -> bool:
    return isinstance(e, AppliedUndef) and hasattr(type(e), "_field") and not e.is_Sparse


def target_of(lhs) -> dict:
    """Space dimension -> where ``lhs``'s values sit (0 or 1/2); {} if it has no grid."""
    if not _is_field(lhs):
        return {}
    return {d: lhs.field.stagger(d) for d in lhs.grid.dimensions}


class SafeInv(sympy.Function):
    """``1/value``, or 0 where ``value`` or ``base`` lies below 1e-12 (zero, negative): the
    inverse of Devito's safe harmonic average (``avg_mode='safe_harmonic'``); printed by the
    backends as a test and a division."""

    nargs = 2
    EPS = 1e-12   # numpy.finfo(float32).resolution**2, Devito's threshold


def _inverse(value, base, safe: bool):
    return SafeInv(value, base) if safe else DPow(value, sympy.S.NegativeOne)


def _mean_onto(expr, rec, dims, target: dict, keep=(), mode=None):
    """``expr``, whose values sit where ``rec``'s do, averaged from its two neighbours along
    every dimension of ``dims`` (but ``keep``) where ``target`` sits half a spacing away: the
    mean, or with ``rec.avg_mode`` (or ``mode``) harmonic the inverse of the mean of the
    inverses (Devito's: each inverse safe with ``safe_harmonic``, the last one tested against
    the value at the first neighbour)."""
    moves = [(d, target.get(d, rec.stagger(d)) - rec.stagger(d)) for d in dims]
    moves = [(d, delta) for d, delta in moves if delta != 0 and d not in keep]
    if not moves:
        return expr
    mode = mode or getattr(rec, "avg_mode", "arithmetic")
    harmonic, safe = mode != "arithmetic", mode == "safe_harmonic"
    mean = _inverse(expr, expr, safe) if harmonic else expr
    for d, delta in moves:
        lo = delta - HALF
        mean = DAdd(DMul(HALF, shift(mean, d, lo)), DMul(HALF, shift(mean, d, lo + 1)))
    if not harmonic:
        return mean
    base = expr   # the value at the first neighbour: Devito's test of the last inverse
    for d, delta in moves:
        base = shift(base, d, delta - HALF)
    return _inverse(mean, base, safe)


def _averaged(f, target: dict):
    """``f`` at its own point, averaged onto ``target`` along every dimension where it sits
    half a spacing away; unchanged where it is read at another point (``v[t, x + 1]``)."""
    rec, dims = f.field, f.grid.dimensions
    moved = tuple(d for d, a in zip(dims, f.args[-len(dims):])
                  if a != natural_index(d, rec))
    return _mean_onto(f, rec, dims, target, keep=moved)


def _interpolated(expr, target: dict):
    """``expr`` with its mislocated values brought to ``target`` (Devito's ``interp_for_fd``:
    in a product, the factors that need it are averaged together)."""
    if _is_field(expr):
        return _averaged(expr, target)
    if isinstance(expr, Derivative):
        if expr.cross:   # a level of one cross derivative: taken where the equation sits
            return _derivative_at(expr, target, None)
        rest = {d: t for d, t in target.items() if d != expr.dim}
        return expr.func(_interpolated(expr.expr, rest), *expr.args[1:])
    if isinstance(expr, sympy.Mul):
        needs = [a for a in expr.args if _is_field(a) and _averaged(a, target) != a]
        if len(needs) > 1:
            keep = [a for a in expr.args if a not in needs]
            return DMul(_averaged_product(DMul(*needs), target), *keep)
    if not expr.args:
        return expr
    return expr.func(*[_interpolated(a, target) for a in expr.args])


def _averaged_product(prod, target: dict):
    """A product of functions that sit together, averaged onto ``target`` as one value."""
    first = next(a for a in prod.args if _is_field(a))
    return _mean_onto(prod, first.field, first.grid.dimensions, target)


def _split_by_place(expr):
    """An Add's terms grouped by where (and how) their values sit, or None if all agree."""
    if not isinstance(expr, sympy.Add):
        return None
    groups: dict = {}
    for term in expr.args:
        key = tuple(location(term, d) for d in _space_dims(term))
        groups.setdefault(key, []).append(term)
    return list(groups.values()) if len(groups) > 1 else None


def _space_dims(expr) -> tuple:
    fields = [a for a in expr.atoms(AppliedUndef) if _is_field(a)]
    return fields[0].grid.dimensions if fields else ()


def _derivative_at(d, target: dict, lhs_field):
    """Derivative ``d`` taken at ``target`` unless its x0 or side is the user's own (Devito's
    ``Derivative._eval_at``)."""
    if d.explicit_x0 or d.side is not None or d.dim.is_Time:
        return d
    if _is_field(d.expr) and d.expr.field is lhs_field:
        return d
    top = highest(d.expr)
    if lhs_field is not None and not lhs_field.stagger_given and top is not None and \
            not top.field.stagger_given:
        # neither the left-hand side nor the operand's first function was given staggered=:
        # Devito leaves the derivative as it is, every function read at its own index
        return d
    groups = _split_by_place(d.expr)
    if groups is not None:
        return DAdd(*[_derivative_at(d.func(DAdd(*g), *d.args[1:]), target, lhs_field)
                      for g in groups])
    for dim in _space_dims(d.expr):
        placed(d.func(d.expr, dim), location(d.expr, dim))   # an ambiguous place: the error
    others = {k: t for k, t in target.items() if k != d.dim}
    mixed = _mixed_product(d.expr)
    inner = _gathered(d.expr, top, others) if mixed else _interpolated(d.expr, others)
    return Derivative._build(inner, d.dim, d.deriv_order, d.fd_order,
                             d.dim + target.get(d.dim, 0) * d.dim.spacing, d.side,
                             d.weights or None, d.transposed, d.cross)


def _mixed_product(expr) -> bool:
    """Whether ``expr`` is a product of functions staggered differently."""
    return isinstance(expr, sympy.Mul) and len(
        {f.field.staggered for f in expr.atoms(AppliedUndef) if _is_field(f)}) > 1


def _moved(expr, home: dict):
    """``expr`` with every function outside derivatives averaged onto ``home``."""
    if _is_field(expr):
        return _averaged(expr, home)
    if isinstance(expr, Derivative) or not expr.args:
        return expr
    return expr.func(*[_moved(a, home) for a in expr.args])


def _gathered(prod, top, others: dict):
    """A product of differently staggered functions as Devito takes it under a derivative
    (``Mul._gather_for_diff``, then ``interp_for_fd``): every factor but its derivatives
    averaged onto where ``top`` (its highest-priority function) sits, then those factors,
    as one value, averaged from there onto ``others`` (the place along the dimensions other
    than the derivative's)."""
    dims = top.grid.dimensions
    home = {d: top.field.stagger(d) for d in dims}
    factors = [_moved(a, home) for a in prod.args]
    moving = [a for a in factors if not isinstance(a, Derivative) and a.has(AppliedUndef)]
    if not moving or all(others.get(d, home[d]) == home[d] for d in dims):
        return DMul(*factors)
    rest = [a for a in factors if not any(a is m for m in moving)]
    mean = _mean_onto(DMul(*moving), top.field, dims, others, mode="arithmetic")
    return DMul(mean, *rest)


def at_place(expr, lhs):
    """``expr`` (a right-hand side) evaluated where ``lhs``'s values sit."""
    target = target_of(lhs)
    if not target or not _staggered_anywhere(expr, lhs):
        return expr
    return _at(sympy.sympify(expr), target, lhs.field)


def at_nodes(expr, grid):
    """``expr`` evaluated at the grid's nodes (what a sparse interpolation reads, as Devito)."""
    if not _staggered_anywhere(expr, None):
        return expr
    return _at(sympy.sympify(expr), {d: sympy.S.Zero for d in grid.dimensions}, None)


def _staggered_anywhere(expr, lhs) -> bool:
    fields = [a for a in sympy.sympify(expr).atoms(AppliedUndef) if _is_field(a)]
    return any(f.field.staggered for f in fields + ([lhs] if lhs is not None else []))


def _rotated_at(r, target, lhs_field):
    """A rotated derivative at ``target``, or at its operand's own place where that is the
    left-hand side's function or sits where it does (Devito's ``_eval_at``)."""
    own = r.place
    if (_is_field(r.expr) and r.expr.field is lhs_field) or \
            all(at == target.get(d, at) for d, at in own.items()):
        return r.at({})
    return r.at(target)


def _at(expr, target, lhs_field):
    if isinstance(expr, Derivative):
        return _derivative_at(expr, target, lhs_field)
    if isinstance(expr, Rotated):
        return _rotated_at(expr, target, lhs_field)
    if _is_field(expr):
        return expr if expr.field is lhs_field else _averaged(expr, target)
    if not expr.args or isinstance(expr, Evaluated):
        return expr
    args = [_at(a, target, lhs_field) for a in expr.args]
    return expr.func(*args) if any(a is not b for a, b in zip(args, expr.args)) else expr
