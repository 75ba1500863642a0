"""Lowering: symbolic equations -> indexed equations on arrays.

``check_equations`` validates; ``register_names`` gives every user object its C name;
``expand_derivatives`` turns lazy derivatives into weighted shifts, the argument of an outer
space derivative that holds a space derivative becoming a temporary; ``index_equations``
turns ``u(t + dt, x + 2*h_x)`` into ``u[t1, x + 2]`` and collects what the code takes.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

import numpy as np
import sympy

from ..symbolic import conditions
from ..symbolic.derivatives import Derivative, expand
from ..symbolic.differentiable import location, placed, plain
from ..symbolic.dimensions import (Dimension, Thickness, bound_symbol, stepping_dimension,
                                  time_dimension)
from ..symbolic.equations import Eq, SparseEq
from ..symbolic.subdomains import SubDimensionRegion, SubDomainSet
from ..errors import HaloError, InvalidEquation
from ..symbolic.functions import Constant, DiscreteFunction, FieldData, Function
from ..ir.nodes import (ROUNDED, ArrayParam, IndexedEq, LoopDim, Quotient, ScalarParam,
                        Stencils, Subsampling, TimeIndex)
from ..symbolic.indexing import GridIndex
from ..symbolic.grid import Grid, subsampled
from ..ir.names import NameRegistry
from ..ir import dtypes
from .vetting import check_terms, check_types, value_dtype
from ..symbolic.relocation import at_nodes, at_place
from ..symbolic.rotated import Rotated
from ..symbolic.staggering import natural_index
from ..symbolic.sparse import Injection, Interpolation


class TempFunction(Function):
    """A grid array the compiler introduces (gradient temporaries, hoisted invariants)."""

    @classmethod
    def _make_record(cls, name=None, grid=None, dtype=None, staggered=(), backward=(),
                     storage=None) -> FieldData:
        return FieldData(name=name, grid=grid, space_order=2, dtype=dtype, store=storage,
                         halo=(0,) * grid.dim, staggered=staggered, backward=backward)


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


def _one_extra(f) -> int:
    """The size of ``f``'s Dimension beyond the grid's (0: none); one at most."""
    extra = f.field.extra
    if len(extra) > 1:
        raise InvalidEquation(f"{f.name} has {len(extra)} Dimensions beyond its grid's "
                              f"({', '.join(str(d) for d, _ in extra)}); stencilgen takes one")
    dist = f.grid.decomposition
    if extra and dist is not None and any(dist.decomposed or ()):
        raise InvalidEquation(f"{f.name} has a Dimension beyond its grid's on a grid split "
                              f"over MPI ranks; run it on one rank")
    return extra[0][1] if extra else 0


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
            out.append(_with_lhs(e, e.lhs.xreplace(at), rhs.xreplace(at)))
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
            e = _with_lhs(e, rebuilt(e.lhs), rebuilt(e.rhs))
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
    new = _with_lhs(eq, eq.lhs.xreplace(back), sympy.sympify(eq.rhs).xreplace(back))
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
        eq = _with_lhs(eq, eq.lhs.xreplace(thick), sympy.sympify(eq.rhs).xreplace(thick))
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
    new = _with_lhs(eq, eq.lhs.xreplace(back), sympy.sympify(eq.rhs).xreplace(back))
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
        key=lambda g: (g.dim, not any(map(_subsampled, g.dimensions))))
    if any(map(_subsampled, grid.dimensions)):
        coarse = [f.grid for f in functions if f.grid.coarse and f.grid.dim == grid.dim]
        if not coarse or any(tuple(map(looped, g.dimensions)) !=
                             tuple(map(looped, coarse[0].dimensions)) for g in coarse):
            d = next(filter(_subsampled, grid.dimensions))
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
            if _subsampled(d) and _subsampled(d.parent):
                raise InvalidEquation(f"Operator: {f.name} is on {d}, a ConditionalDimension "
                                      f"of another ({d.parent}); build it on one whose parent "
                                      f"is {d.root}, with the factors multiplied")
            need = _points_along(d, grid.shape[axis])
            if need is None:
                continue
            factored = _subsampled(d) and d.factor is not None   # more points are harmless
            if n < need or (n != need and not factored):
                raise InvalidEquation(f"Operator: {f.name} has {n} points along {d} but the "
                                      f"equations loop over {grid.shape[axis]} (the shape of "
                                      f"{grid!r}), which index {need} of them; give it shape "
                                      f"{need} along {d}")
    return grid


_subsampled = subsampled


def looped(d):
    """The loop dimension a function's dimension ``d`` is indexed along: a space
    ConditionalDimension's root (its points are some of the parent's), else ``d``."""
    return d.root if _subsampled(d) else d


def _points_along(d, n: int) -> int | None:
    """The points a function on dimension ``d`` needs where the loop along it has ``n``:
    ``n``, or for a factor the indices ``parent / factor`` takes (None for a Constant
    factor: checked at apply)."""
    if _subsampled(d) and d.factor is not None:
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


def fixed_indices(lhs, dims) -> dict:
    """Axis -> index of the left-hand side's fixed indices (``u[t + 1, 0, y]``: {0: 0}); one
    written with the bounds set at apply (``f[x_M]``) in their C names (``x_M`` -> the
    parameter ``dims[axis].upper``)."""
    args = lhs.args[-len(dims):] if isinstance(lhs, DiscreteFunction) else ()
    return {axis: bound_value(a, dims[axis]) for axis, a in enumerate(args)
            if isinstance(a, GridIndex)}


def bound_value(index: GridIndex, ld):
    """A fixed index's value along loop ``ld``: its number, or its expression of the bounds
    of ``ld`` (``x_m``, ``x_M`` of its dimension's root) in their C names."""
    if not index.symbolic:
        return index.value
    names = {bound_symbol(index.dim, False): sympy.Symbol(ld.lower, integer=True),
             bound_symbol(index.dim, True): sympy.Symbol(ld.upper, integer=True)}
    value = index.value.xreplace(names)
    unknown = value.free_symbols - set(names.values())
    if unknown:
        raise InvalidEquation(f"index {index} along {index.dim}: {', '.join(map(str, unknown))} "
                              f"bound no dimension this equation runs over")
    return value


# -- derivatives --------------------------------------------------------------------------

def _axis_offset(arg, dim) -> sympy.Rational:
    if arg.has(GridIndex):
        raise InvalidEquation(f"index {arg} along {dim}: a fixed index (u[t, 0, y]) cannot be "
                              "shifted or differentiated; write the neighbour's index instead")
    off = sympy.expand((arg - dim) / dim.spacing)
    if not off.is_Rational:
        raise InvalidEquation(f"index {arg} is not {dim} plus a multiple of {dim.spacing}")
    return off


def _computed(arg, dim) -> bool:
    """Whether index ``arg`` along ``dim`` is computed (a function of ``dim`` such as
    ``INT(Abs(y - 2*h_y))``), not ``dim`` plus a multiple of its spacing."""
    return not arg.has(GridIndex) and arg.has(dim) and \
        not sympy.expand((arg - dim) / dim.spacing).is_Rational


def _has_space_derivative(expr) -> bool:
    """Whether ``expr`` differentiates along space (an interpolation, order 0, does not)."""
    return any(not d.dim.is_Time and d.deriv_order for d in expr.atoms(Derivative))


class _Expander:
    """Expands derivatives; the argument of a space derivative that itself holds a space
    derivative becomes a zero-halo temporary, so the outer derivative always sees the inner
    expression as zero outside the domain (the discrete -G^T B G form, exactly self-adjoint)."""

    def __init__(self, grid, names):
        self.grid = grid
        self.names = names
        self.new_eqs: list[Eq] = []

    def temp(self, expr):
        """A temporary for ``expr``, its values sitting where ``expr``'s do."""
        places = {d: location(expr, d) for d in self.grid.dimensions}
        staggered = tuple(d for d, p in places.items() if p is not None and p[0] != 0)
        backward = tuple(d for d in staggered if places[d][0] < 0)
        temp = TempFunction(name=self.names.counted("r"), grid=self.grid,
                            dtype=value_dtype(expr, self.grid.dtype),
                            staggered=staggered, backward=backward, storage=_temp_store(expr))
        self.names.bind(temp.field, temp.name)
        return temp

    def __call__(self, expr):
        if isinstance(expr, Rotated):   # not taken at a left-hand side's place: its own
            return self(expr.at({}))
        if isinstance(expr, Derivative):
            inner = self(expr.expr)
            place = placed(expr, location(expr.expr, expr.dim))
            if not expr.dim.is_Time and _has_space_derivative(expr.expr):
                t = self.temp(expr.expr)
                self.new_eqs.append(Eq(t, inner))
                inner = t
            return expand(expr, inner, place)
        if isinstance(expr, DiscreteFunction) or not expr.args or \
                not expr.has(Derivative, Rotated):
            return expr
        return expr.func(*[self(a) for a in expr.args])


def _temp_store(expr) -> str | None:
    """A temporary's storage: the 16-bit format of the fields in time it is made of, where
    they share one (a derivative of a float16 wavefield is stored as float16)."""
    formats = {f.field.store for f in expr.atoms(DiscreteFunction) if f.field.is_time}
    return formats.pop() if len(formats) == 1 else None


def _companion(eq):
    comp = getattr(getattr(eq.lhs, "field", None), "companion", None)
    return None if isinstance(eq, SparseEq) else comp


def compensate(eqs, names: NameRegistry) -> list[Eq]:
    """Compensated stepping (Gao and Harms), first half: where a field keeps a companion of
    what its 16-bit stores round off, the time-stepping sum (its reads at the point it
    writes, outside space derivatives) adds the companion back. Space derivatives read the
    stored values alone: a correction at one point of their stencil only would add noise."""
    out = []
    for eq in eqs:
        comp = _companion(eq)
        if comp is not None:
            names.user(comp.field, comp.name)
            eq = eq.with_rhs(_add_companion(eq.rhs, eq.lhs, comp))
        out.append(eq)
    return out


def compensation_stores(eqs) -> list[Eq]:
    """Second half, after derivative expansion (so both stores share its temporaries): the
    companion stores what the field's store rounds off (exact in float32: the two values
    are close)."""
    out = []
    for eq in eqs:
        out.append(eq)
        comp = _companion(eq)
        if comp is not None:
            rounded = ROUNDED[eq.lhs.field.store](eq.rhs)
            out.append(_with_lhs(eq, comp.func(*eq.lhs.args), eq.rhs - rounded))
    return out


def _add_companion(expr, lhs, comp):
    """``expr`` with each read of ``lhs``'s field at its point, outside space derivatives,
    plus the companion there."""
    if isinstance(expr, Derivative) and not expr.dim.is_Time:
        return expr
    if isinstance(expr, DiscreteFunction):
        if expr.field is lhs.field and expr.args[1:] == lhs.args[1:]:
            return expr + comp.func(*expr.args)
        return expr
    if not expr.args:
        return expr
    return expr.func(*[_add_companion(a, lhs, comp) for a in expr.args])


def _with_lhs(eq, lhs, rhs):
    """A copy of ``eq`` (its subdomain, conditions) writing ``rhs`` into ``lhs``."""
    new = eq.with_rhs(rhs)
    new.lhs = lhs
    return new


def expand_derivatives(eqs, grid, names) -> list[Eq]:
    """Every Eq with derivatives expanded; temporaries' equations precede their users."""
    out = []
    for eq in eqs:
        ex = _Expander(grid, names)
        # an interpolation reads its expression at the nodes; an injection adds its
        # expression where the field's values sit, as any equation (Devito's)
        rhs = ex(at_nodes(eq.rhs, grid) if getattr(eq, "kind", None) == "interpolate" else
                 at_place(eq.rhs, eq.lhs))
        out.extend(ex.new_eqs)
        out.append(eq.with_rhs(rhs))
    return out


# -- names ----------------------------------------------------------------------------------

def _functions(eqs) -> list:
    """The functions of ``eqs``, those their ConditionalDimensions' conditions read too."""
    found = set()
    for e in eqs:
        found |= e.lhs.atoms(DiscreteFunction) | e.rhs.atoms(DiscreteFunction)
        for d in conditions.conditional_dims(e):
            if d.condition is not None:
                found |= d.condition.atoms(DiscreteFunction)
        if isinstance(e, SparseEq):
            found.add(e.sparse)
    return sorted((f.origin for f in found), key=lambda f: f.name)


def register_names(eqs, grid, operator: str, names: NameRegistry) -> NameRegistry:
    """Every user name first, so each keeps its spelling where it is safe: the dimensions,
    the Functions and Constants (by name), then the Operator."""
    for d in grid.dimensions + (time_dimension(),):
        names.user(d, d.name)
    conditional = {d for e in eqs for d in conditions.conditional_dims(e)}
    for d in sorted(conditional, key=str):
        names.user(d, d.name)
    seen = {}
    for f in _functions(eqs):
        other = seen.setdefault(f.name, f.field)
        if other is not f.field:
            raise InvalidEquation(f"two different functions are both named {f.name!r}; "
                                  "give every Function of an Operator its own name")
        names.user(f.field, f.name)
    constants = set().union(*(e.rhs.atoms(Constant) | sympy.sympify(e.lhs).atoms(Constant)
                              for e in eqs))
    constants |= {c for d in conditional if d.condition is not None
                  for c in sympy.sympify(d.condition).atoms(Constant)}
    constants |= {d.spacing for d in grid.dimensions if isinstance(d.spacing, Constant)}
    for c in sorted(constants, key=lambda c: c.name):
        if c.name in seen:   # apply(c=...) could mean only one of them
            raise InvalidEquation(f"two different functions are both named {c.name!r}; "
                                  "give every Function of an Operator its own name")
        names.user(c, c.name)
    names.user("operator", operator)
    return names


# -- indexing -----------------------------------------------------------------------------

@dataclass
class Bindings:
    """What the Operator binds to the program's parameters: the user objects by C name."""

    grid: object
    functions: dict = field(default_factory=dict)   # array C name -> DiscreteFunction
    constants: dict = field(default_factory=dict)   # scalar C name -> Constant
    factors: dict = field(default_factory=dict)     # factor C name -> ConditionalDimension
    scales: dict = field(default_factory=dict)      # scale C name -> [FieldData] sharing it
    spacings: dict = field(default_factory=dict)    # axis -> the spacing Operator(subs=) gave
    elements: dict = field(default_factory=dict)    # scalar C name -> the function (of
                                                    # Dimensions beyond the grid's) it reads


def _loop_dim(d, names: NameRegistry) -> LoopDim:
    c = names.cname(d)
    # a function's own SubDimension (built without a Grid) loops under its parent's bounds,
    # as Devito names them (x_m, x_M)
    user = d.root.name if getattr(d, "is_Sub", False) else d.name
    return LoopDim(symbol=sympy.Symbol(c, integer=True), user=user,
                   size=names.fresh(f"{c}_size"), lower=names.fresh(f"{c}_m"),
                   upper=names.fresh(f"{c}_M"), spacing=names.fresh(f"h_{c}"),
                   origin=names.fresh(f"o_{c}"), exact=getattr(d, "is_Batch", False))


class _Indexer:
    """The state of one indexing pass: arrays, scalars and time slots met so far."""

    def __init__(self, grid, names: NameRegistry, groups=None):
        self.grid, self.names = grid, names
        self.groups = groups or {}     # FieldData -> its scale scalar's C name
        self.dims = tuple(_loop_dim(d, names) for d in grid.dimensions)
        self.time = sympy.Symbol(names.cname(time_dimension()), integer=True)
        self.point = sympy.Symbol(names.fresh("p"), integer=True)
        self.dt = sympy.Symbol(names.fresh("dt"), real=True, positive=True)
        self.arrays: dict = {}         # FieldData -> ArrayParam
        self.scalars: dict = {}        # name -> ScalarParam
        self.time_indices: dict = {}   # (shift, modulo) -> TimeIndex
        self.subsamplings: dict = {}   # ConditionalDimension -> Subsampling
        self.bindings = Bindings(grid)
        self.fixed, self.room = {}, ()   # the equation being indexed: fixed indices, room
        self.symbols = {time_dimension(): self.time, stepping_dimension(): self.time}
        for d, ld in zip(grid.dimensions, self.dims):
            self.symbols[d] = ld.symbol
            self.symbols[d.symbolic_min] = sympy.Symbol(ld.lower, integer=True)
            self.symbols[d.symbolic_max] = sympy.Symbol(ld.upper, integer=True)

    def array(self, f: DiscreteFunction) -> ArrayParam:
        rec = f.field
        if rec not in self.arrays:
            sparse = bool(f.is_Sparse)
            temporary = isinstance(f, TempFunction)
            cname = self.names.cname(rec)
            axes = () if sparse else self.axes(f)
            halo = () if sparse else tuple(
                rec.halo[axes.index(i)] if i in axes else 0 for i in range(len(self.dims)))
            factors = () if sparse else self.factors(f)
            self.arrays[rec] = ArrayParam(
                name=cname, user=rec.name, dtype=rec.dtype, ndim=1 if sparse else len(self.dims),
                time_size=rec.time_size, modulo=rec.is_time and rec.save is None and not sparse,
                extra=_one_extra(f),
                temporary=temporary, sparse=sparse, halo=halo,
                axes=() if axes == tuple(range(len(self.dims))) else axes,
                factors=factors if any(factors) else (),
                store=rec.store, scale=self.scale_of(rec, temporary),
                support=getattr(rec, "support", 0) if sparse else 0,
                zero=getattr(rec, "zero_box", None) is not None and not sparse
                and not temporary and not any(factors) and rec.grid.subdomain is None,
                offsets=tuple(left for left, _ in rec.grid.subdomain.thickness)
                if not sparse and rec.grid.subdomain is not None else ())
            if not temporary:
                self.bindings.functions[cname] = f.origin
        return self.arrays[rec]

    def scale_of(self, rec, temporary):
        """A field's scale: its group's run-time scale (fields in time stored in 16 bits),
        the power of two it was given (others), None for a temporary (from its equation)."""
        if temporary:
            return None
        if rec in self.groups:
            return sympy.Symbol(self.groups[rec], positive=True)
        return sympy.Rational(rec.scale) if rec.scale is not None else sympy.S.One

    def axes(self, f) -> tuple:
        """The loop dimensions ``f`` spans, by position (all, but for a Function built
        without a grid on fewer dimensions: its array has strides 0 along the others)."""
        return tuple(self.grid.dimensions.index(looped(d)) for d in f.grid.dimensions)

    def factors(self, f) -> tuple:
        """Per loop dimension, the factor parameter ``f``'s index along it is divided by (a
        function on a ConditionalDimension with a factor), or None."""
        out = [None] * len(self.dims)
        for d in f.grid.dimensions:
            if _subsampled(d) and d.factor is not None:
                out[self.grid.dimensions.index(looped(d))] = self.subsampling(d).factor
        return tuple(out)

    def time_index(self, shift: int, modulo: int | None):
        if modulo is None:
            return self.time + shift
        key = (shift % modulo, modulo)
        if key not in self.time_indices:
            sym = sympy.Symbol(self.names.counted("t"), integer=True)
            self.time_indices[key] = TimeIndex(sym, key[0], modulo)
        ti = self.time_indices[key]
        if shift not in ti.offsets:
            self.time_indices[key] = replace(ti, offsets=tuple(sorted(ti.offsets + (shift,))))
        return ti.symbol

    def scalar(self, name, dtype, role):
        parts = dtypes.scalar_parts(name) if dtypes.is_complex(dtype) else ()
        self.scalars.setdefault(name, ScalarParam(name, dtype, role, parts))

    def access(self, f: DiscreteFunction):
        """``f`` (a function at shifted indices) as an array access."""
        if f.grid.implicit and not f.is_Sparse and all(isinstance(a, sympy.Integer)
                                                       for a in f.args):
            return self.element(f)
        arr = self.array(f)
        self.timed |= arr.time_size is not None
        if arr.sparse:
            return self.sparse_access(f, arr)
        idx = []
        if arr.extra:   # the index along the Dimension beyond the grid's (``_per_index``)
            if not isinstance(f.args[0], sympy.Integer):
                raise InvalidEquation(f"{f}: read at {f.args[0]} along {f.field.extra[0][0]}; "
                                      f"read it at {f.field.extra[0][0]} itself")
            idx.append(f.args[0])
        if arr.time_size is not None:
            sub = f.field.time_dim
            shifted = self.snapshot_shift(f, sub) if sub is not None else None
            if shifted is not None:   # Devito's usave.subs(t_sub, t_sub - c), c a Constant
                idx.append(self.subsampling(sub, True).symbol + shifted)
            else:
                k = _axis_offset(f.args[0], _time_root(f))
                if not k.is_Integer:
                    raise InvalidEquation(f"{f}: time index {f.args[0]} is not a whole number "
                                          f"of steps")
                if sub is not None and arr.modulo:   # a buffer of snapshots (save=None)
                    idx.append(sympy.Mod(self.subsampling(sub, True).symbol + int(k),
                                         arr.time_size))
                else:
                    idx.append(self.subsampling(sub, True).symbol + int(k) if sub is not None
                               else self.time_index(int(k),
                                                    arr.time_size if arr.modulo else None))
        own = f.grid.dimensions
        args = dict(zip(map(looped, own), f.args[-len(own):]))
        conditional = {looped(d): d for d in own if _subsampled(d)}
        for axis, (d, ld) in enumerate(zip(self.grid.dimensions, self.dims)):
            if d not in args:          # a dimension f does not span: any index reads the same
                idx.append(ld.symbol)
                continue
            if d in conditional:
                idx.append(self.subsampled_index(f, conditional[d], args[d], ld,
                                                  arr.halo[axis]))
                continue
            if axis in self.fixed or isinstance(args[d], GridIndex):
                idx.append(ld.symbol + self.fixed_offset(f, axis, args[d], arr.halo[axis]))
                continue
            if _computed(args[d], d):
                idx.append(self.computed_index(f, args[d], d, ld))
                continue
            o = _axis_offset(args[d], d) - f.field.stagger(d)
            if not o.is_Integer:
                raise InvalidEquation(
                    f"{f} is read at {d}{o:+} {d.spacing}, between grid points: evaluate "
                    f"staggered derivatives with x0= so that the result lands on a node")
            # a subdomain's points stay clear of the domain's edges: reads reach that far
            # within the domain before they need the halo (one block: no exchange to size)
            room = self.room[axis] if self.room else (0, 0)
            if f.grid.subdomain is not None:   # its own values end at its subdomain's edges
                own = f.grid.subdomain.thickness[axis]
                room = (room[0] - own[0], room[1] - own[1])
            if not arr.temporary and abs(o) > arr.halo[axis] + room[1 if o > 0 else 0]:
                raise HaloError(
                    f"{f.name} is read at {d}{int(o):+d} but its halo is {arr.halo[axis]} points "
                    f"wide (space_order={f.space_order}): the stencil is wider than the halo; raise "
                    f"space_order to at least {abs(int(o)) + abs(int(o)) % 2} or lower the "
                    f"derivatives' fd_order")
            idx.append(ld.symbol + int(o))
        return arr.base[tuple(idx)]

    def snapshot_shift(self, f, sub):
        """The snapshot index ``f`` is read at less ``sub`` in snapshots, where it is moved by
        integer Constants (``t_sub - t_sub_shift``); None for the usual forms."""
        shift = sympy.expand(f.args[0] - sub)
        consts = shift.free_symbols
        terms = sympy.Add.make_args(shift)
        if not consts or not all(isinstance(c, Constant) and np.dtype(c.dtype).kind in "iu"
                                 for c in consts) or shift.has(sympy.Float) or \
                not all(t.is_Integer or t.is_Mul or t.is_Symbol for t in terms):
            return None
        return shift.xreplace(self.scalars_of(shift, f))

    def element(self, f):
        """A value of a function of Dimensions beyond the grid's only (``frequencies[2]``):
        a scalar read from its data at apply (``op.apply(frequencies=other)`` too)."""
        index = tuple(int(a) for a in f.args)
        shape = f.field.grid.shape
        if any(not 0 <= k < n for k, n in zip(index, shape)):
            raise InvalidEquation(f"{f}: index {index} outside {f.name}'s shape {shape}")
        key = ("element", f.name, index)
        name = next((n for n, s in self.scalars.items() if s.role == key), None)
        if name is None:
            name = self.names.fresh(f"{self.names.cname(f.field)}_{'_'.join(map(str, index))}")
            self.scalar(name, f.dtype, key)
            self.bindings.elements[name] = f.origin
        return sympy.Symbol(name) if dtypes.is_complex(f.dtype) else sympy.Symbol(name, real=True)

    def computed_index(self, f, arg, d, ld):
        """A computed index along ``d`` (the free-surface mirror ``INT(Abs(y - 2*h_y))``):
        the expression in points, ``d`` moved back by ``f``'s staggering first (Devito's
        rule: ``v_y`` at ``INT(Abs(y - 5*h_y/2))`` is ``v_y[INT(Abs(y - 3))]``). Its reach is
        not known before the run: the caller keeps it inside the domain and the halo."""
        dist = self.grid.decomposition
        if dist is not None and any(dist.decomposed or ()):
            raise InvalidEquation(f"{f}: a computed index along {d} ({arg}) on a grid split "
                                  f"over MPI ranks; its reach across ranks is not known "
                                  f"before the run: run on one rank")
        shifted = arg.xreplace({d: d - f.field.stagger(d) * d.spacing})
        points = sympy.sympify(shifted).subs(d.spacing, 1).xreplace({d: ld.symbol})
        leftover = points.free_symbols - {ld.symbol} - set(self.symbols.values())
        if any(isinstance(s, Dimension) for s in leftover):
            raise InvalidEquation(f"{f}: index {arg} along {d} holds {min(map(str, leftover))}; "
                                  f"a computed index is a function of {d} alone")
        return points.xreplace(self.symbols)

    def subsampled_index(self, f, d, arg, ld, halo: int):
        """The index of ``f`` along ConditionalDimension ``d`` of a space dimension: the
        loop counter, divided by the factor where ``d`` has one, moved by the whole steps of
        ``d`` (its spacing) that ``arg`` is from ``d`` (a derivative on a coarse grid)."""
        k = sympy.expand((arg - d) / d.spacing)
        if not k.is_Integer or (k and d.factor is None):
            raise InvalidEquation(f"{f} is indexed by {arg} along {d}: a function on a "
                                  f"ConditionalDimension is read and written at {d} itself "
                                  f"or, with a factor, whole steps of {d.spacing} from it")
        if abs(int(k)) > halo:
            raise HaloError(f"{f.name} is read at {d}{int(k):+d} but its halo is {halo} points "
                            f"wide (space_order={f.space_order}): raise space_order to at "
                            f"least {abs(int(k)) + abs(int(k)) % 2} or lower the "
                            f"derivatives' fd_order")
        if d.factor is None:
            return ld.symbol
        return Quotient(ld.symbol, sympy.Symbol(self.subsampling(d).factor, integer=True)) + k

    def subsampling(self, d, indexed=False) -> Subsampling:
        """The factor parameter of ConditionalDimension ``d`` (and, ``indexed``, the time
        loop's ``time / factor`` that functions on ``d`` are indexed by), registered."""
        sub = self.subsamplings.get(d)
        if sub is None:
            cname = self.names.cname(d)
            # a Constant factor by its name, an int one by Devito's ``<name>f`` (both
            # overridable at apply)
            constant = d.factor.name if isinstance(d.factor, Constant) else \
                d.symbolic_factor.name if d.factor is not None else None
            sub = Subsampling(self.names.fresh(f"{cname}f"), d.name, constant=constant,
                              start=conditions.first_step(d))
            self.bindings.factors[sub.factor] = d
        if indexed and sub.symbol is None:
            sub = replace(sub, symbol=sympy.Symbol(self.names.cname(d), integer=True))
            self.symbols[d] = sub.symbol
        self.subsamplings[d] = sub
        return sub

    def condition(self, expr, eq):
        """A user condition (Gt(f, 0), Lt(y, 5)...) over the program's arrays and symbols."""
        ex = _Expander(self.grid, self.names)
        expr = ex(expr)
        if ex.new_eqs:
            raise InvalidEquation(f"{eq}: a condition holds a derivative of a derivative; "
                                  "compute it into a Function first and compare that")
        found = sorted(expr.atoms(DiscreteFunction), key=lambda a: (a.name, str(a)))
        expr = expr.xreplace({f: self.access(f) for f in found})
        return plain(expr.xreplace({**self.symbols, **self.scalars_of(expr, eq)}))

    def conditions(self, eq):
        """(condition on the time step, condition at each point) of ``eq``, or None each."""
        dims = conditions.conditional_dims(eq)
        # Devito's iteration space holds the dimensions named and the conditions' parents
        self.timed |= any(d.root.is_Time for d in getattr(eq, "implicit_dims", ()) + dims)
        if not dims:
            return None, None
        # Devito's relation='strict': those dimensions' conditions alone decide
        strict = tuple(d for d in dims if d.relation == "strict")
        dims = strict or dims
        parts = []
        for d in dims:
            tests = [self.condition(d.condition, eq)] if d.condition is not None else []
            if d.factor is not None:
                parent = self.time if d.parent.is_Time else self.symbols.get(d.parent)
                if parent is None:
                    raise InvalidEquation(
                        f"{eq}: ConditionalDimension {d.name} counts {d.parent}, which is not a "
                        f"dimension of the grid {self.grid.dimensions}; give it "
                        "parent=grid.time_dim or one of grid.dimensions")
                tests.append(conditions.factor_test(
                    parent, sympy.Symbol(self.subsampling(d).factor, integer=True)))
            own = sympy.And if d.relation == "strict" else d.relation
            parts.append(tests[0] if len(tests) == 1 else own(*tests))
        mode = sympy.Or if all(d.relation is sympy.Or for d in dims) else sympy.And
        loops = set(self.symbols.values()) - {self.time} - \
            {s.symbol for s in self.subsamplings.values()}
        when, guard = conditions.split(
            eq, parts, mode, lambda c: bool(c.atoms(sympy.Indexed) or c.free_symbols & loops))
        self.timed |= any(c is not None and c.has(self.time) for c in (when, guard))
        return when, guard

    def region(self, eq) -> tuple[tuple, tuple]:
        """The iteration of ``eq`` on its subdomain: per dimension a widening (negative: the
        points left out) and the bound both ends count from (``Kernel.span``), or ((), ())."""
        sub = getattr(eq, "subdomain", None)
        if sub is None:
            return (), ()
        if sub.grid is not self.grid:
            raise InvalidEquation(f"{eq}: its subdomain {sub.name!r} belongs to another Grid; "
                                  "use a subdomain of the grid of its functions")
        extent, anchors = [], []
        for side, *width in sub.spans:
            if side == "middle":
                extent.append((-width[0], -width[1]))
            else:              # the first or last n points: both ends from x_m or from x_M
                extent.append((0, width[0] - 1) if side == "left" else (width[0] - 1, 0))
            anchors.append({"left": "lower", "right": "upper"}.get(side))
        if not any(anchors):
            return (tuple(extent) if any(lo or hi for lo, hi in extent) else ()), ()
        return tuple(extent), tuple(anchors)

    def fixed_offset(self, f, axis, arg, h) -> int:
        """The offset of a read at fixed index ``arg`` from the left-hand side's fixed index
        along ``axis`` (checked: both fixed, the read inside the domain and halo ``h``)."""
        d, n = self.grid.dimensions[axis], self.grid.shape[axis]
        if axis not in self.fixed:
            raise InvalidEquation(f"{f} is read at the fixed index {arg} along {d} while the "
                                  f"equation runs over every {d}: write {d} plus an integer, "
                                  f"or fix {d} in the left-hand side too")
        if not isinstance(arg, GridIndex):
            raise InvalidEquation(f"{f} is read at {arg} along {d} while the left-hand side "
                                  f"fixes {d} = {self.fixed[axis]}: index {d} by numbers on "
                                  f"the right-hand side too (u[t, {self.fixed[axis]} + 1, ...])")
        if arg.symbolic or not isinstance(self.fixed[axis], int):   # checked at apply
            off = sympy.expand(bound_value(arg, self.dims[axis]) - self.fixed[axis])
            if not off.is_Integer:
                raise InvalidEquation(f"{f} is read at {arg} along {d} while the left-hand "
                                      f"side fixes {d} = {self.fixed[axis]}: read it at that "
                                      f"index plus a number")
            return int(off)
        if not -h <= arg.value <= n - 1 + h:
            raise HaloError(f"{f} is read at index {arg.value} along {d}, outside its domain "
                            f"0..{n - 1} and halo of {h} points")
        return arg.value - self.fixed[axis]

    def sparse_access(self, f, arr):
        """``src(time + k*dt, p_src)`` -> ``src[time + k, p]``."""
        idx = []
        if arr.time_size is not None:
            k = _axis_offset(f.args[0], time_dimension())
            if not k.is_Integer:
                raise InvalidEquation(f"{f}: time index {f.args[0]} is not a whole number of steps")
            idx.append(self.time + int(k))
        elif arr.extra:   # the row of a Dimension before the points (one equation a row)
            if not (f.args[0].is_Integer and 0 <= int(f.args[0]) < arr.extra):
                raise InvalidEquation(f"{f}: read at {f.args[0]} along "
                                      f"{f.field.extra[0][0]}; read it at a row, 0 to "
                                      f"{arr.extra - 1}, or inside its own interpolation or "
                                      f"injection")
            idx.append(f.args[0])
        if f.args[-1] != f.origin.args[-1]:
            raise InvalidEquation(f"{f}: a sparse function is read at its own points only")
        return arr.base[tuple(idx) + (self.point,)]

    def scalars_of(self, rhs, eq) -> dict:
        """The C symbols of the scalars ``rhs`` reads (Constants, spacings, dt), registered."""
        out = {}
        skip = set(self.grid.dimensions) | {time_dimension(), stepping_dimension()}
        skip |= set(self.symbols)
        skip |= {a.base.label for a in rhs.atoms(sympy.Indexed)} | {self.point, self.time}
        skip |= {ti.symbol for ti in self.time_indices.values()} | set(self.symbols.values())
        skip |= {sympy.Symbol(s.factor, integer=True) for s in self.subsamplings.values()}
        skip |= {s for s in rhs.free_symbols if getattr(s, "name", None) in self.scalars and
                 self.scalars[s.name].role[0] == "element"}   # read by ``element``
        # scalars lowered already (a snapshot's shift ``t_sub - c`` in a read's index)
        skip |= {s for s in rhs.free_symbols if type(s) is sympy.Symbol and
                 s.name in self.scalars and self.scalars[s.name].role[0] == "constant"}
        for s in rhs.free_symbols - skip:
            if isinstance(s, sympy.Indexed):
                continue
            if isinstance(s, Constant):
                cname = self.names.cname(s)
                # a grid's spacing binds the grid's Constant: sympy's cache may hand back an
                # equal one (same name) from an older expression
                own = [d.spacing for d in self.grid.dimensions if d.spacing == s]
                self.scalar(cname, s.dtype, ("constant", s.name))
                self.bindings.constants[cname] = own[0] if own else s
                out[s] = sympy.Symbol(cname) if dtypes.is_complex(s.dtype) \
                    else sympy.Symbol(cname, real=True)
            elif s == time_dimension().spacing:
                self.scalar(self.dt.name, self.grid.dtype, ("dt",))
                out[s] = self.dt
            elif any(s == d.spacing for d in self.grid.dimensions):
                axis = [d.spacing for d in self.grid.dimensions].index(s)
                if self.grid.implicit:
                    raise InvalidEquation(
                        f"{eq}: a derivative along {self.grid.dimensions[axis]} of functions "
                        "built without a Grid has no spacing; build them on a Grid(shape=..., "
                        "extent=..., dimensions=...) or give the dimension spacing=Constant(...)")
                name = self.dims[axis].spacing
                self.scalar(name, self.grid.dtype, ("spacing", axis))
                out[s] = sympy.Symbol(name, real=True, positive=True)
            elif getattr(s, "is_Conditional", False) and s.factor is not None and \
                    s.parent.is_Time:
                # a subsampled time dimension as a value (Devito's t_sub * u): its index,
                # time / factor, at the steps it keeps (the equation runs under it)
                out[s] = self.subsampling(s, True).symbol
            else:
                raise InvalidEquation(f"{eq}: the symbol {s} is neither a grid dimension, a "
                                      "spacing, dt nor a Constant; use stencilgen.Constant for "
                                      "run-time scalars")
        return out

    def __call__(self, eq: Eq) -> IndexedEq:
        # sorted: the parameter order (and so the source text and its cache key) must not
        # depend on set iteration order, which changes between processes
        found = eq.lhs.atoms(DiscreteFunction) | eq.rhs.atoms(DiscreteFunction)
        reduces = ()
        if getattr(eq, "kind", None) != "interpolate" and \
                tuple(map(looped, eq.lhs.grid.dimensions)) != self.grid.dimensions:
            own = set(map(looped, eq.lhs.grid.dimensions))
            if getattr(eq, "is_Increment", False) and eq.lhs.grid.implicit and \
                    own < set(self.grid.dimensions):
                reduces = tuple(i for i, d in enumerate(self.grid.dimensions)
                                if d not in own)
                dist = self.grid.decomposition
                if dist is not None and dist.size > 1:   # each rank would sum its block only
                    summed = ", ".join(str(self.grid.dimensions[i]) for i in reduces)
                    raise InvalidEquation(
                        f"{eq}: a sum over {summed} on a grid split "
                        f"over MPI ranks is not supported; sum with NumPy on the field "
                        f"gathered by stencilgen.distributed.mpi.gather, or on an unsplit "
                        f"grid")
            else:
                raise InvalidEquation(
                    f"{eq}: {eq.lhs.name} spans {eq.lhs.grid.dimensions} but the Operator "
                    f"loops over {self.grid.dimensions}; stencilgen writes a Function only in "
                    f"an Operator over its own dimensions (or sums into one with Inc): build "
                    f"a separate Operator for {eq.lhs.name}")
        self.timed = False
        self.fixed = fixed_indices(eq.lhs, self.dims) if getattr(eq, "kind", None) is None \
            else {}
        # a sparse operation on functions on a subdomain visits its nodes only
        sub = getattr(eq, "subdomain", None) or getattr(eq, "region", None)
        split = self.grid.decomposition is not None and self.grid.decomposition.size > 1
        self.room = sub.thickness if sub is not None and sub.grid is self.grid and \
            not split else ()
        mapping = {f: self.access(f)
                   for f in sorted(found, key=lambda a: (a.name, sympy.default_sort_key(a)))}
        when, guard = self.conditions(eq)
        rhs = eq.rhs.xreplace(mapping)
        symbols = {**self.symbols, **self.scalars_of(rhs, eq)}
        lhs, rhs = mapping[eq.lhs].xreplace(symbols), plain(rhs.xreplace(symbols))
        kind = getattr(eq, "kind", None)
        if kind is None:
            fixed = tuple(self.fixed.get(axis) for axis in range(len(self.dims)))
            extent, anchors = self.region(eq)
            return IndexedEq(lhs, rhs, self.timed, extent=extent, anchors=anchors,
                             fixed=fixed if self.fixed else (), when=when, guard=guard,
                             reduces=reduces)
        self.array(eq.sparse)
        for axis, (d, ld) in enumerate(zip(self.grid.dimensions, self.dims)):
            self.scalar(ld.origin, np.float64, ("origin", axis))
            if isinstance(d.spacing, Constant):   # as Devito: its value, whatever the extent
                self.scalar(ld.spacing, self.grid.dtype, ("constant", d.spacing.name))
                self.bindings.constants[ld.spacing] = d.spacing
            else:
                self.scalar(ld.spacing, self.grid.dtype, ("spacing", axis))
        stagger = tuple(float(eq.lhs.field.stagger(d)) for d in self.grid.dimensions) \
            if kind == "inject" else ()
        region = getattr(eq, "region", None)
        if guard is not None:
            raise InvalidEquation(f"{eq}: an injection or interpolation runs under conditions "
                                  f"on time only (a ConditionalDimension of time in "
                                  f"implicit_dims), not at some points ({guard})")
        return IndexedEq(lhs, rhs, self.timed, sparse_kind=kind, when=when,
                         sparse=self.names.cname(eq.sparse.field),
                         stagger=stagger if any(stagger) else (),
                         increment=getattr(eq, "increment", False),
                         region=region.thickness if region else ())


def _time_root(f):
    """The dimension ``f``'s time index counts along: ``t``, ``time`` or a subsampled one."""
    if f.field.time_dim is not None:
        return f.field.time_dim
    root = f.args[0].free_symbols & {stepping_dimension(), time_dimension()}
    return root.pop() if root else time_dimension()


def _time_step(eqs) -> int:
    """+1, or -1 when the equations write ``.backward`` (time then runs from time_M down)."""
    shifts = set()
    for e in eqs:
        lhs = e.lhs
        if isinstance(lhs, DiscreteFunction) and lhs.field.is_time and not lhs.is_Sparse \
                and lhs.field.time_dim is None:
            k = _axis_offset(lhs.args[0], _time_root(lhs))
            shifts.add(int(sympy.sign(k)))
    if {1, -1} <= shifts:
        raise InvalidEquation("Operator: the equations write both .forward and .backward time "
                              "levels; build one Operator for each time direction")
    return -1 if -1 in shifts else 1


def scale_groups(eqs, names: NameRegistry) -> dict:
    """FieldData -> the C name of its run-time scale, for the 16-bit fields in time: one
    scale for the fields an equation couples (SA-TTI's p and m), so it cancels there."""
    parent: dict = {}

    def root(r):
        while parent[r] is not r:
            r = parent[r]
        return r
    for e in eqs:
        if isinstance(e, SparseEq) and e.kind == "interpolate":
            continue
        # by name: a set's order changes between processes, and the group's head names it
        found = sorted({f.field for f in {e.lhs} | e.rhs.atoms(DiscreteFunction)
                        if isinstance(f, DiscreteFunction) and f.field.is_time and f.field.store
                        and not isinstance(f, TempFunction)}, key=lambda r: r.name)
        for r in found:
            parent.setdefault(r, r)
        for r in found[1:]:
            parent[root(r)] = root(found[0])
    heads = {}
    for r in sorted(parent, key=lambda r: r.name):
        heads.setdefault(root(r), names.fresh(f"scale_{root(r).name}"))
    return {r: heads[root(r)] for r in parent}


def _check_subsampled(indexed, arrays, eqs) -> None:
    """A function on a ConditionalDimension with a factor is read at ``parent / factor``,
    which other points share: reading it in an equation other than the one writing it
    would read across points of the nest, so that takes a second Operator."""
    sub = {a.name for a in arrays if a.factors}
    writers = {}
    for e, eq in zip(indexed, eqs):
        if e.lhs.base.name in sub:
            writers.setdefault(e.lhs.base.name, []).append(eq)
    for e, eq in zip(indexed, eqs):
        for name in sorted({a.base.name for a in e.rhs.atoms(sympy.Indexed)} & set(writers)):
            if any(w is not eq for w in writers[name]):
                raise InvalidEquation(
                    f"{eq}: reads {name}, which another equation of this Operator writes at "
                    "the points of a ConditionalDimension with a factor; several points of the "
                    "loop share each of its values: read it in a second Operator")


def index_equations(eqs, grid, names: NameRegistry):
    """The equations on arrays, as ``Stencils``, and the ``Bindings`` of their parameters."""
    groups = scale_groups(eqs, names)
    ix = _Indexer(grid, names, groups)
    for rec, name in groups.items():
        ix.scalar(name, grid.dtype, ("scale",))
        ix.bindings.scales.setdefault(name, []).append(rec)
    indexed = tuple(ix(e) for e in eqs)
    arrays = tuple(ix.arrays.values())
    _check_subsampled(indexed, arrays, eqs)
    return Stencils(eqs=indexed, dims=ix.dims, time=ix.time, point=ix.point, arrays=arrays,
                    time_step=_time_step(eqs),
                    scalars=tuple(sorted(ix.scalars.values(), key=lambda s: s.name)),
                    time_indices=tuple(sorted(ix.time_indices.values(),
                                              key=lambda t: t.symbol.name)),
                    dtype=grid.dtype,
                    subsamplings=tuple(sorted(ix.subsamplings.values(), key=lambda s: s.factor))
                    ), ix.bindings


__all__ = ["Bindings", "TempFunction", "check_equations", "expand_derivatives",
           "index_equations", "register_names", "thickness_arguments", "with_thickness"]
