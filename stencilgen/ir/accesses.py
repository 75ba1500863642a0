"""Reading the array accesses of indexed expressions: which array, at which offsets."""
from __future__ import annotations

import sympy

from .nodes import Quotient


def space_offsets(access: sympy.Indexed, dims) -> tuple[int, ...]:
    """Integer offsets of an access's trailing (space) indices from the loop dimensions (0
    for ``d / factor``, a function on a ConditionalDimension: it is read only by the
    equation writing it, at the same point; ``compiler.indexer._check_subsampled``)."""
    idx = access.indices[-len(dims):]
    return tuple(0 if isinstance(i, Quotient) else _offset(i - d) for i, d in zip(idx, dims))


def _offset(diff) -> int:
    """A constant offset, or 1 for a computed index (``INT(Abs(y - 3))``): some other point
    of the axis, a neighbour as far as scheduling knows (the nest that writes the array
    finishes before one that reads it so)."""
    return int(diff) if diff.is_Integer else 1


def accesses(expr) -> set:
    return expr.atoms(sympy.Indexed)


def access_map(exprs, dims) -> dict[str, set[tuple]]:
    """array name -> set of (time index, space offsets...) read by ``exprs``."""
    out: dict[str, set[tuple]] = {}
    for e in exprs:
        for a in accesses(e):
            time = a.indices[:-len(dims)]
            out.setdefault(a.base.name, set()).add(tuple(time) + space_offsets(a, dims))
    return out


def shift_accesses(expr, dims, shift: tuple[int, ...]):
    """``expr`` with every access moved by ``shift`` along the space dimensions."""
    subs = {d: d + s for d, s in zip(dims, shift) if s}
    if not subs:
        return expr
    return expr.xreplace({a: a.func(a.base, *(a.indices[:-len(dims)] + tuple(
        i.xreplace(subs) for i in a.indices[-len(dims):]))) for a in accesses(expr)})
