"""Derivatives expanded, the lowering's second stage: lazy derivatives become weighted
shifts (``expand_derivatives``), the argument of an outer space derivative that holds a space
derivative a temporary array (``TempFunction``); compensated 16-bit fields get their rounding
companions' updates (``compensate``, ``compensation_stores``)."""
from __future__ import annotations

from ..symbolic.derivatives import Derivative, expand
from ..symbolic.differentiable import location, placed
from ..symbolic.equations import Eq, SparseEq
from ..symbolic.functions import DiscreteFunction, FieldData, Function
from ..ir.nodes import ROUNDED
from ..ir.names import NameRegistry
from .vetting import value_dtype
from ..symbolic.relocation import at_nodes, at_place
from ..symbolic.rotated import Rotated
from .placement import with_lhs


class TempFunction(Function):
    """A grid array the compiler introduces (gradient temporaries, hoisted invariants)."""

    @classmethod
    def _make_record(cls, name=None, grid=None, dtype=None, staggered=(), backward=(),
                     storage=None) -> FieldData:
        return FieldData(name=name, grid=grid, space_order=2, dtype=dtype, store=storage,
                         halo=(0,) * grid.dim, staggered=staggered, backward=backward)


def _has_space_derivative(expr) -> bool:
    """Whether ``expr`` differentiates along space (an interpolation, order 0, does not)."""
    return any(not d.dim.is_Time and d.deriv_order for d in expr.atoms(Derivative))


class Expander:
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
            out.append(with_lhs(eq, comp.func(*eq.lhs.args), eq.rhs - rounded))
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


def expand_derivatives(eqs, grid, names) -> list[Eq]:
    """Every Eq with derivatives expanded; temporaries' equations precede their users."""
    out = []
    for eq in eqs:
        ex = Expander(grid, names)
        # an interpolation reads its expression at the nodes; an injection adds its
        # expression where the field's values sit, as any equation (Devito's)
        rhs = ex(at_nodes(eq.rhs, grid) if getattr(eq, "kind", None) == "interpolate" else
                 at_place(eq.rhs, eq.lhs))
        out.extend(ex.new_eqs)
        out.append(eq.with_rhs(rhs))
    return out


__all__ = ["TempFunction", "Expander", "compensate", "compensation_stores", "expand_derivatives"]
