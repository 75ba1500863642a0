"""Where an indexed equation runs: the subsampling of its ConditionalDimensions (their factors
and the indices of functions on them), its conditions on the time step and at each point,
and the part of its subdomain it iterates. A part of the indexer (``indexer._Indexer``),
mixed into it."""
from __future__ import annotations

from dataclasses import replace

import sympy

from ..errors import InvalidEquation
from ..ir.nodes import Subsampling
from ..symbolic import conditions
from ..symbolic.differentiable import plain
from ..symbolic.functions import Constant, DiscreteFunction
from .expansion import Expander


class Regions:
    """The indexer's subsampling, conditions and subdomain regions."""

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
        ex = Expander(self.grid, self.names)
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
