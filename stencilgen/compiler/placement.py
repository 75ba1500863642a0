"""The equations checked and placed, the lowering's first stage: flattened (vector and
tensor equations, nested lists), their left-hand sides checked, equations on subdomains,
SubDimensions and ConditionalDimensions of space moved onto the parents' loops with their
regions, one equation per index of a Dimension beyond the grid's, injections and
interpolations as ``SparseEq``; and the grid the Operator loops over (``_operator_grid``)."""
from __future__ import annotations

import copy

import numpy as np
import sympy

from ..symbolic import conditions
from ..symbolic.dimensions import Thickness
from ..symbolic.equations import Eq, SparseEq
from ..symbolic.subdomains import SubDimensionRegion, SubDomainSet
from ..errors import HaloError, InvalidEquation
from ..symbolic.functions import DiscreteFunction
from ..symbolic.indexing import GridIndex
from ..symbolic.grid import Grid, subsampled
from .vetting import check_terms, check_types
from ..symbolic.staggering import natural_index
from ..symbolic.sparse import Injection, Interpolation


def check_equations(eqs) -> tuple:
    """Flatten and validate a list of Eq; return (eqs, grid)."""
    flat = _per_box([_on_set(e) for e in _flatten(eqs)])
    if not flat:
        raise InvalidEquation("Operator: no equations given")
    extra = _extra_sizes(flat)
    flat = _per_index(flat, extra) if extra else flat
    for i, e in enumerate(flat):
        if isinstance(e, (Injection, Interpolation)):
            flat[i] = _sparse_eq(e)
        elif isinstance(e, Eq) and not isinstance(e, SparseEq):
            flat[i] = _on_subdomain_functions(_on_parents(e))
    found = {}
    for e in flat:
        if not isinstance(e, Eq):
            raise InvalidEquation(f"Operator: expected Eq objects, got {type(e).__name__}: {e!r}")
        if not (isinstance(e, SparseEq) and e.kind == "interpolate"):
            _check_lhs(e)
        foreign = e.rhs.atoms(sympy.Derivative)
        if foreign:
            raise InvalidEquation(f"{e}: holds a sympy derivative ({min(foreign, key=str)}), which "
                                  "has no finite-difference meaning; write u.dx, u.diff(x) or "
                                  "stencilgen.Derivative(u, x) instead")
        check_terms(e.rhs, e)
        check_types(e)
        touched = e.lhs.atoms(DiscreteFunction) | e.rhs.atoms(DiscreteFunction)
        for d in conditions.conditional_dims(e):
            if d.condition is not None:
                check_terms(d.condition, e, condition=True)
                # the functions a condition reads are the Operator's too (its grid among them)
                touched |= sympy.sympify(d.condition).atoms(DiscreteFunction)
        for f in touched:
            found.setdefault(f.name, f)
    return flat, _operator_grid([found[n] for n in sorted(found)
                                 if not _element_only(found[n], extra)])


def _extra_sizes(eqs) -> dict:
    """Dimension -> size of each Dimension beyond a grid's that a function of ``eqs`` has
    (``Function(dimensions=(f, x, y))``: Devito's frequency axis)."""
    out = {}
    for e in eqs:
        if not isinstance(e, Eq) or isinstance(e, SparseEq):
            continue
        for f in sympy.sympify(e.lhs).atoms(DiscreteFunction) | \
                sympy.sympify(e.rhs).atoms(DiscreteFunction):
            for d, n in f.field.extra:
                if out.setdefault(d, n) != n:
                    raise InvalidEquation(f"{e}: {f.name} has {n} points along {d}, another "
                                          f"function {out[d]}; give them one size")
    return out


def _element_only(f, extra) -> bool:
    """Whether ``f`` is a function of Dimensions beyond the grid's only (Devito's
    ``Function(dimensions=(f,), shape=(n,))`` of the frequencies): each of its values is a
    scalar of the equations that read it."""
    return bool(extra) and f.grid.implicit and not f.is_Sparse and \
        all(d in extra for d in f.grid.dimensions)


def _per_index(eqs, extra) -> list:
    """Each equation on Dimensions beyond the grid's once per index of them (a function
    on them is read at that index): Devito's loop over a frequency axis, unrolled, so the
    indices share one nest and its reads (the wavefield read once for every mode)."""
    out = []
    for e in eqs:
        if not isinstance(e, Eq) or isinstance(e, SparseEq):
            out.append(e)
            continue
        rhs = sympy.sympify(e.rhs)
        found = [d for d in extra if d in sympy.sympify(e.lhs).free_symbols | rhs.free_symbols]
        if not found:
            out.append(e)
            continue
        lhs_dims = {d for d, _ in e.lhs.field.extra} if isinstance(e.lhs, DiscreteFunction) \
            else set()
        if any(d not in lhs_dims for d in found) and not getattr(e, "is_Increment", False):
            d = next(d for d in found if d not in lhs_dims)
            raise InvalidEquation(f"{e}: the right-hand side runs over {d} and the left-hand "
                                  f"side {e.lhs} does not; write Inc to sum over {d}, or "
                                  f"give {getattr(e.lhs, 'name', e.lhs)} the dimension {d}")
        for index in np.ndindex(*(extra[d] for d in found)):
            at = {d: sympy.Integer(k) for d, k in zip(found, index)}
            out.append(with_lhs(e, e.lhs.xreplace(at), rhs.xreplace(at)))
    return out


def _subdimensions(eq) -> set:
    """The SubDimensions indexing ``eq`` (a fixed index names its dimension: not counted)."""
    def seen(side):
        side = sympy.sympify(side)
        return side.xreplace({g: g.args[1] for g in side.atoms(GridIndex)}).free_symbols
    return {d for side in (eq.lhs, eq.rhs) for d in seen(side) if getattr(d, "is_Sub", False)}


def thickness_arguments(eqs) -> dict:
    """The apply arguments that set the thickness of the SubDimensions in ``eqs``, Devito's
    names: ``<parent>_ltkn<k>`` and ``<parent>_rtkn<k>``, k counting a parent's
    SubDimensions in the order the equations name them -> (SubDimension, side)."""
    out, order = {}, {}
    for e in _flatten(eqs):
        if not isinstance(e, Eq) or isinstance(e, SparseEq):
            continue
        for d in sorted(_subdimensions(e), key=lambda s: s.name):
            seen = order.setdefault(d.parent, [])
            if d not in seen:
                seen.append(d)
            k = seen.index(d)
            for side, value in zip("lr", d.thickness):
                if value is not None:
                    out[f"{d.parent.name}_{side}tkn{k}"] = (d, side)
    return out


def with_thickness(eqs, values: dict, names: dict) -> list:
    """``eqs`` with the SubDimensions that ``values`` (thickness arguments, ``names`` as
    ``thickness_arguments`` gives) name rebuilt with those thicknesses."""
    new = {}
    for key, value in values.items():
        d, side = names[key]
        left, right = new[d].thickness if d in new else d.thickness
        thickness = (value, right) if side == "l" else (left, value)
        new[d] = type(d)(d.name, d.parent, thickness)
    def rebuilt(side):
        # a fixed index keeps its dimension (the function's own): its bounds' thicknesses move
        side = sympy.sympify(side)
        fixed = {g: GridIndex(g.dim, g.args[1].xreplace(new)) for g in side.atoms(GridIndex)}
        return side.xreplace({**new, **fixed})
    out = []
    for e in _flatten(eqs):
        if isinstance(e, Eq) and not isinstance(e, SparseEq):
            e = with_lhs(e, rebuilt(e.lhs), rebuilt(e.rhs))
        out.append(e)
    return out


def _on_set(eq):
    """An equation indexed by a SubDomainSet's MultiSubDimensions (``eq.subs({x: ix})``) as
    one on their parents with ``subdomain=`` the set."""
    if not isinstance(eq, Eq) or isinstance(eq, SparseEq):
        return eq
    found = {d for side in (eq.lhs, eq.rhs) for d in sympy.sympify(side).free_symbols
             if getattr(d, "is_MultiSub", False)}
    if not found:
        return eq
    sets = {id(d.subdomain): d.subdomain for d in found}
    if len(sets) > 1 or (eq.subdomain is not None and id(eq.subdomain) not in sets):
        names = ", ".join(sorted({repr(s) for s in sets.values()} |
                                 ({repr(eq.subdomain)} if eq.subdomain is not None else set())))
        raise InvalidEquation(f"{eq}: indexed by the dimensions of {names}; an equation "
                              f"runs on one SubDomainSet")
    back = {d: d.parent for d in found}
    new = with_lhs(eq, eq.lhs.xreplace(back), sympy.sympify(eq.rhs).xreplace(back))
    new.subdomain = next(iter(sets.values()))
    return new


def _per_box(eqs) -> list:
    """Equations on a SubDomainSet, one per box; consecutive ones on the same set run box
    by box (Devito's order: each box runs them all before the next)."""
    out, i = [], 0
    while i < len(eqs):
        sub = getattr(eqs[i], "subdomain", None)
        if not isinstance(sub, SubDomainSet):
            out.append(eqs[i])
            i += 1
            continue
        j = i
        while j < len(eqs) and getattr(eqs[j], "subdomain", None) is sub:
            j += 1
        for box in sub.boxes:
            for e in eqs[i:j]:
                boxed = copy.copy(e)
                boxed.subdomain = box
                out.append(boxed)
        i = j
    return out


def _on_subdomain_functions(eq: Eq) -> Eq:
    """An equation touching functions on SubDomains runs on their subdomain (the one they
    share, unless it names one within theirs); a point outside a function's subdomain has
    no value of it."""
    found = {f.grid.subdomain for side in (eq.lhs, eq.rhs)
             for f in sympy.sympify(side).atoms(DiscreteFunction)
             if f.grid.subdomain is not None}
    if not found:
        return eq
    sub = eq.subdomain
    if sub is None:
        if len(found) > 1:
            names = ", ".join(sorted(s.name for s in found))
            raise InvalidEquation(f"{eq}: touches functions on the subdomains {names}; give "
                                  f"subdomain= one inside all of them")
        sub = next(iter(found))
    for own in found:
        if any(r[0] < f[0] or r[1] < f[1] for r, f in zip(sub.thickness, own.thickness)):
            raise InvalidEquation(f"{eq}: runs on {sub!r}, which reaches outside {own!r} "
                                  f"where some of its functions live; run it on a subdomain "
                                  f"inside it")
    if sub is eq.subdomain:
        return eq
    new = copy.copy(eq)
    new.subdomain = sub
    return new


def _on_parents(eq: Eq) -> Eq:
    """An equation indexed by SubDimensions as one on their parents that runs on their part
    of the grid (a ``SubDimensionRegion``); its ConditionalDimensions' conditions and
    parents (``parent=subdomain.dimensions[1]``) taken on the parents too."""
    thick = {t: t.value for side in (eq.lhs, eq.rhs) for t in
             sympy.sympify(side).atoms(Thickness)}
    if thick:   # the thicknesses in bounds (``ix.symbolic_max``): numbers from here on
        eq = with_lhs(eq, eq.lhs.xreplace(thick), sympy.sympify(eq.rhs).xreplace(thick))
    found = _subdimensions(eq) | _conditional_subdimensions(eq)
    if not found:
        return eq
    subs = {}
    for d in sorted(found, key=lambda s: s.name):
        other = subs.setdefault(d.parent, d)
        if other is not d:
            raise InvalidEquation(f"{eq}: indexed by {other} and {d}, two SubDimensions of "
                                  f"{d.parent}; use one")
    grid = getattr(eq.lhs, "grid", None)
    if grid is not None and grid.implicit and any(
            getattr(d, "is_Sub", False) or getattr(getattr(d, "parent", None), "is_Sub", False)
            for d in grid.dimensions):
        raise InvalidEquation(f"{eq}: {eq.lhs.name} is built on a subdomain's SubDimensions "
                              f"(shape= and dimensions=); build it with grid=the subdomain "
                              f"(Devito's Function(grid=subdomain)), or on the grid with the "
                              f"equation's subdomain= set")
    if grid is None or any(p not in grid.dimensions for p in subs):
        raise InvalidEquation(f"{eq}: SubDimensions of a Grid's dimensions (or of a function's "
                              f"own, built without a Grid) index a function of them on the "
                              f"left-hand side")
    region = SubDimensionRegion(grid, subs, eq.subdomain)
    back = {d: d.parent for d in found}
    new = with_lhs(eq, eq.lhs.xreplace(back), sympy.sympify(eq.rhs).xreplace(back))
    new.subdomain = region
    new.implicit_dims = tuple(_on_parent_dims(d, back) for d in eq.implicit_dims)
    return new


def _conditional_subdimensions(eq) -> set:
    """The SubDimensions in ``eq``'s implicit ConditionalDimensions (parents, conditions)."""
    out = set()
    for d in getattr(eq, "implicit_dims", ()):
        if getattr(d, "is_Conditional", False):
            out |= {s for s in ({d.parent} | (d.condition.free_symbols if d.condition
                                              is not None else set()))
                    if getattr(s, "is_Sub", False)}
    return out


def _on_parent_dims(d, back):
    """ConditionalDimension ``d`` with the SubDimensions of ``back`` (-> their parents) in
    its parent and condition replaced."""
    if not getattr(d, "is_Conditional", False):
        return d
    parent = back.get(d.parent, d.parent)
    condition = d.condition.xreplace(back) if d.condition is not None else None
    if parent is d.parent and condition == d.condition:
        return d
    return type(d)(d.name, parent=parent, factor=d.factor, condition=condition,
                   relation=d.relation)


def _sparse_eq(term) -> SparseEq:
    """An injection or interpolation as the equation the lowering takes, checked, with the
    subdomain whose nodes it visits (``region``)."""
    touched = sorted((f for f in sympy.sympify(term.expr).atoms(DiscreteFunction) |
                      ({term.field} if isinstance(term, Injection) else set())
                      if not f.is_Sparse), key=lambda f: f.name)
    _check_support(term, touched)
    if isinstance(term, Injection):
        eq = SparseEq("inject", term.field, term.expr, term.sparse)
    else:
        at = term.sparse.origin if term.at is None else term.at
        eq = SparseEq("interpolate", at, term.expr, term.sparse, increment=term.increment)
    eq.region = _sparse_region(term, touched)
    eq.implicit_dims = term.implicit_dims
    return eq


def _sparse_region(term, touched):
    """The subdomain an injection or interpolation visits nodes in: that of the functions on
    a SubDomain it touches (they have values on its points only), or None (the domain)."""
    on = [f for f in touched if f.grid.subdomain is not None]
    subs = {f.grid.subdomain for f in on}
    if len(subs) > 1:
        raise InvalidEquation(f"{term.sparse.name}: injection or interpolation with functions "
                              f"on the subdomains {', '.join(sorted(s.name for s in subs))}; "
                              f"use functions on one of them (or on the grid)")
    near = max(term.sparse.field.support // 2, 1)   # nodes this far beyond the subdomain
    for f in on:
        if min(f.field.halo) < near:
            raise HaloError(f"{term.sparse.name} visits nodes {near} beyond the subdomain of "
                            f"{f.name}, whose halo is {f.field.halo}: give it a space_order "
                            f"of at least {near}")
    return subs.pop() if subs else None


def _check_support(term, touched):
    """A precomputed sparse function reaches r/2 nodes beyond the domain: the grid
    functions it touches need halos as wide."""
    reach = term.sparse.field.support // 2
    if not reach:
        return
    staggered = [f.name for f in touched if any(f.field.staggered)]
    if staggered:
        raise InvalidEquation(f"{term.sparse.name}: precomputed weights with staggered "
                              f"{', '.join(staggered)} are not supported (the weights "
                              f"would have to be given at its points); use a SparseFunction")
    for f in touched:
        widths = [h for d, h in zip(f.grid.dimensions, f.field.halo) if not d.is_Batch]
        if min(widths, default=reach) < reach:
            raise HaloError(f"{term.sparse.name} has {2 * reach} nodes a dimension, {reach} "
                            f"beyond the domain; {f.name}'s halo is {f.field.halo}: give it "
                            f"a space_order of at least {reach}")


def _operator_grid(functions):
    """The grid the equations loop over: the one Grid of their functions or, where every one
    is built without a grid, the largest of their own; each function without a grid must lie
    on it (its dimensions among the grid's, in order, with the grid's sizes)."""
    real = {id(g): (g, f.name) for f in functions
            for g in (f.grid.given if f.grid.implicit else
                      f.grid.subdomain.grid if f.grid.subdomain is not None else f.grid,)
            if g is not None}
    if len(real) > 1:
        names = ", ".join(f"{n!r} on {g!r}" for g, n in real.values())
        raise InvalidEquation(f"Operator: the equations mix Functions of different Grids ({names}); "
                              "build every Function of one Operator on the same Grid")
    # the loops run over parents: a grid of ConditionalDimensions only if no other is there
    grid = next(iter(real.values()))[0] if real else max(
        (f.grid for f in functions),
        key=lambda g: (g.dim, not any(map(subsampled, g.dimensions))))
    if any(map(subsampled, grid.dimensions)):
        coarse = [f.grid for f in functions if f.grid.coarse and f.grid.dim == grid.dim]
        if not coarse or any(tuple(map(looped, g.dimensions)) !=
                             tuple(map(looped, coarse[0].dimensions)) for g in coarse):
            d = next(filter(subsampled, grid.dimensions))
            raise InvalidEquation(f"Operator: every function is on ConditionalDimension "
                                  f"{d.name}, whose points are some of {d.parent}'s; the "
                                  f"loops run over {d.parent}: read or write a function on "
                                  f"{d.parent} too, or build them on a Grid of "
                                  f"ConditionalDimensions (its spacing sets {d.parent}'s)")
        grid = Grid.of_parents(coarse)
    for f in functions:
        if not f.grid.implicit:
            continue
        dims = f.grid.dimensions
        loops = [looped(d) for d in dims]
        axes = [grid.dimensions.index(d) if d in grid.dimensions else -1 for d in loops]
        if -1 in axes or axes != sorted(axes):
            raise InvalidEquation(f"Operator: {f.name} has dimensions {dims}, which are not "
                                  f"among the loop dimensions {grid.dimensions} in that order; "
                                  "build it on the dimensions of the other functions")
        for d, n, axis in zip(dims, f.grid.shape, axes):
            if subsampled(d) and subsampled(d.parent):
                raise InvalidEquation(f"Operator: {f.name} is on {d}, a ConditionalDimension "
                                      f"of another ({d.parent}); build it on one whose parent "
                                      f"is {d.root}, with the factors multiplied")
            need = _points_along(d, grid.shape[axis])
            if need is None:
                continue
            factored = subsampled(d) and d.factor is not None   # more points are harmless
            if n < need or (n != need and not factored):
                raise InvalidEquation(f"Operator: {f.name} has {n} points along {d} but the "
                                      f"equations loop over {grid.shape[axis]} (the shape of "
                                      f"{grid!r}), which index {need} of them; give it shape "
                                      f"{need} along {d}")
    return grid


def looped(d):
    """The loop dimension a function's dimension ``d`` is indexed along: a space
    ConditionalDimension's root (its points are some of the parent's), else ``d``."""
    return d.root if subsampled(d) else d


def _points_along(d, n: int) -> int | None:
    """The points a function on dimension ``d`` needs where the loop along it has ``n``:
    ``n``, or for a factor the indices ``parent / factor`` takes (None for a Constant
    factor: checked at apply)."""
    if subsampled(d) and d.factor is not None:
        return (n - 1) // d.factor + 1 if isinstance(d.factor, int) else None
    return n


def _flatten(eqs) -> list:
    """Nested lists of equations, and vector or tensor Eqs, as one list of scalar ones."""
    if isinstance(eqs, (list, tuple)):
        return [e for item in eqs for e in _flatten(item)]
    if getattr(eqs, "components", None) is not None:
        return list(eqs.components)
    return [eqs]


def _check_lhs(eq: Eq):
    lhs = eq.lhs
    if not isinstance(lhs, DiscreteFunction):
        raise InvalidEquation(f"{eq}: the left-hand side must be a Function or TimeFunction "
                              f"access such as u.forward, got {lhs}")
    dims = lhs.grid.dimensions
    for d, a in zip(dims, lhs.args[-len(dims):]):
        if a != natural_index(d, lhs.field) and \
                not (isinstance(a, GridIndex) and a.dim == d):
            raise InvalidEquation(f"{eq}: the left-hand side must be written at the grid point "
                                  f"{dims} (or at a fixed index along some, u[t + 1, 0, y]), not "
                                  f"at shifted indices {lhs.args[-len(dims):]}")


def with_lhs(eq, lhs, rhs):
    """A copy of ``eq`` (its subdomain, conditions) writing ``rhs`` into ``lhs``."""
    new = eq.with_rhs(rhs)
    new.lhs = lhs
    return new


__all__ = ["check_equations", "looped", "thickness_arguments", "with_lhs", "with_thickness"]
