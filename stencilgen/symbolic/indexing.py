"""Devito's index notation on functions: ``u[t + 1, 0, y]`` is u one step ahead at the first
x point, for every y (a boundary condition); ``u[t, x + 1, y]`` is the shift ``u(t, x + h_x,
y)``. A number along a space dimension is a ``GridIndex``: the equation whose left-hand side
has one runs only at that index along that dimension."""
from __future__ import annotations

import sympy

from .dimensions import Thickness, bound_symbol
from ..errors import InvalidArgument


class GridIndex(sympy.Expr):
    """Grid point ``value`` (0 the first of the domain; negative or past the last: the halo)
    along ``dim``, written as a number, or as one of the bounds set at apply (``x_M``,
    ``ix.symbolic_max``: ``symbolic``)."""

    is_commutative = True

    def __new__(cls, dim, value):
        value = sympy.sympify(value)
        return sympy.Expr.__new__(cls, dim, value if value.free_symbols else
                                  sympy.Integer(value))

    @property
    def dim(self):
        return self.args[0]

    @property
    def symbolic(self) -> bool:
        return not self.args[1].is_Integer

    @property
    def value(self):
        """The index: an int, or an expression of the bounds where ``symbolic``."""
        return self.args[1] if self.symbolic else int(self.args[1])

    def _sympystr(self, printer):
        return printer.doprint(self.args[1]) if self.symbolic else str(self.value)


def _bound_index(i, d) -> bool:
    """Whether index ``i`` along ``d`` is a sum of whole multiples of the bounds of
    ``d``'s root set at apply (``x_m``, ``x_M``), of SubDimensions' thicknesses and of an
    integer (Devito's ``f[ix.symbolic_max]``)."""
    bounds = {bound_symbol(d, False), bound_symbol(d, True)}
    rest = i.xreplace({t: 0 for t in i.atoms(Thickness)}).free_symbols
    return bool(rest) and rest <= bounds and all(
        t.as_coeff_Mul()[0].is_Integer for t in sympy.Add.make_args(sympy.expand(i)))


def _index(f, d, i, is_time: bool):
    """The argument of ``f`` along ``d`` that index ``i`` stands for (a staggered function's
    ``v[t, x, y]`` is its own point ``v(t, x + h_x/2, y)``)."""
    try:
        i = sympy.sympify(i)
    except (sympy.SympifyError, TypeError):
        raise InvalidArgument(f"{f.name}[...]: index {i!r} along {d} is not a number or an "
                              "expression") from None
    if not is_time and _bound_index(i, d):
        return GridIndex(d, i)
    subs = [s for s in i.free_symbols if getattr(s, "is_Sub", False) and s.parent == d]
    if subs:   # a SubDimension of d: kept until the Operator runs the equation on its part
        k = sympy.expand(i - subs[0])
        if not k.is_Integer:
            raise InvalidArgument(f"{f.name}[...]: index {i} along {d} must be {subs[0]} plus "
                                  f"an integer")
        return subs[0] + (k + f.field.stagger(d)) * d.spacing
    if i.has(d):
        k = sympy.expand(i - d)
        if not k.is_Integer:
            raise InvalidArgument(f"{f.name}[...]: index {i} along {d} must be {d} plus an "
                                  f"integer, e.g. {d} + 1")
        return d + (k + (0 if is_time else f.field.stagger(d))) * d.spacing
    if is_time:
        raise InvalidArgument(f"{f.name}[...]: the time index {i} must be {d} plus an integer "
                              f"({d} + 1 for the next step): fixed time indices are not supported")
    if not i.is_Integer:
        raise InvalidArgument(f"{f.name}[...]: index {i} along {d} must be an integer grid "
                              f"point (0 to {f.grid.shape[f.grid.dimensions.index(d)] - 1}) or "
                              f"{d} plus an integer")
    return GridIndex(d, int(i))


def function_at(f, indices):
    """``f[indices]`` as an application of ``f`` (see the module's docstring)."""
    dims = f.dimensions
    indices = indices if isinstance(indices, tuple) else (indices,)
    if len(indices) != len(dims):
        raise InvalidArgument(f"{f.name}[...]: {len(indices)} indices given, {f.name} has "
                              f"{len(dims)} ({', '.join(map(str, dims))})")
    timed = len(dims) > f.grid.dim
    return f.func(*[_index(f, d, i, timed and n == 0)
                    for n, (d, i) in enumerate(zip(dims, indices))])
