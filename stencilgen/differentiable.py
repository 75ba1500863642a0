"""Arithmetic that keeps derivative shorthands: ``(b * u.dx).dx`` works like ``u.dx.dx``.

Functions, derivatives and the sums/products/powers built from them carry ``.dx``,
``.dy``, ``.dz``, ``.dx2``... ``.laplace``, which wrap the expression in a lazy Derivative.
"""
from __future__ import annotations

import sympy
from sympy.core.decorators import call_highest_priority

from .errors import InvalidArgument, InvalidEquation


class Differentiable:
    """Mixin for sympy expressions that know their grid and offer derivative shorthands."""

    _op_priority = 100.0

    # -- arithmetic: results stay Differentiable ------------------------------------------
    @call_highest_priority("__radd__")
    def __add__(self, other):
        return DAdd(self, other)

    @call_highest_priority("__add__")
    def __radd__(self, other):
        return DAdd(other, self)

    @call_highest_priority("__rsub__")
    def __sub__(self, other):
        return DAdd(self, DMul(sympy.S.NegativeOne, other))

    @call_highest_priority("__sub__")
    def __rsub__(self, other):
        return DAdd(other, DMul(sympy.S.NegativeOne, self))

    @call_highest_priority("__rmul__")
    def __mul__(self, other):
        return DMul(self, other)

    @call_highest_priority("__mul__")
    def __rmul__(self, other):
        return DMul(other, self)

    @call_highest_priority("__rtruediv__")
    def __truediv__(self, other):
        return DMul(self, DPow(other, sympy.S.NegativeOne))

    @call_highest_priority("__truediv__")
    def __rtruediv__(self, other):
        return DMul(other, DPow(self, sympy.S.NegativeOne))

    @call_highest_priority("__rpow__")
    def __pow__(self, other, mod=None):
        return DPow(self, other)

    @call_highest_priority("__pow__")
    def __rpow__(self, other):
        return DPow(other, self)

    def __neg__(self):
        return DMul(sympy.S.NegativeOne, self)

    def __pos__(self):
        return self

    # -- what the expression lives on ------------------------------------------------------
    @property
    def grid(self):
        from .functions import DiscreteFunction
        grids = {id(f.grid): f.grid for f in self.atoms(DiscreteFunction)}
        if not grids:
            raise InvalidEquation(f"{self} involves no Function, so it has no grid to "
                                  "differentiate on")
        if len(grids) > 1:
            raise InvalidEquation(f"{self} mixes Functions of different Grids; "
                                  "build all Functions of one expression on the same Grid")
        return next(iter(grids.values()))

    @property
    def space_order(self) -> int:
        """The smallest space order of the functions involved (the derivatives' default order)."""
        from .functions import DiscreteFunction
        orders = [f.space_order for f in self.atoms(DiscreteFunction)]
        return min(orders) if orders else 2

    @property
    def time_order(self) -> int:
        from .functions import DiscreteFunction
        orders = [f.time_order for f in self.atoms(DiscreteFunction) if f.is_TimeFunction]
        return min(orders) if orders else 0

    # -- derivative shorthands -------------------------------------------------------------
    def _space_dim(self, index: int):
        dims = self.grid.dimensions
        if index >= len(dims):
            raise AttributeError(f"the grid of {self} has {len(dims)} dimension(s)")
        return dims[index]

    def _d(self, dim, order):
        from .derivatives import Derivative
        return Derivative(self, (dim, order))

    def diff(self, *specs, fd_order=None, x0=None):
        """The lazy finite-difference derivative, as Devito's ``u.diff(x)``:
        ``u.diff(x)``, ``u.diff(x, 2)``, ``u.diff(x, y)``, with ``fd_order=`` and ``x0=``."""
        from .derivatives import Derivative
        from .dimensions import Dimension
        if specs and isinstance(specs[0], (int, float, str)):
            raise InvalidArgument(f"diff: expected grid dimensions (and orders), got "
                                  f"{specs[0]!r}; e.g. u.diff(x), u.diff(x, 2), u.diff(x, y)")
        if not specs or not isinstance(specs[0], Dimension):
            # sympy's own differentiation by a symbol, a function or (symbol, n): solve uses it
            return super().diff(*specs)
        rest, merged = list(specs), []
        while rest:
            dim = rest.pop(0)
            if not isinstance(dim, Dimension):
                raise InvalidArgument(f"diff: expected grid dimensions (and orders), got {dim!r}; "
                                      "e.g. u.diff(x), u.diff(x, 2), u.diff(x, y)")
            order = 1
            if rest and isinstance(rest[0], (int, sympy.Integer)) and not isinstance(rest[0], bool):
                order = rest.pop(0)
            merged.append((dim, order))
        return Derivative(self, *merged, fd_order=fd_order, x0=x0)

    @property
    def dx(self):
        return self._d(self._space_dim(0), 1)

    @property
    def dy(self):
        return self._d(self._space_dim(1), 1)

    @property
    def dz(self):
        return self._d(self._space_dim(2), 1)

    @property
    def dx2(self):
        return self._d(self._space_dim(0), 2)

    @property
    def dy2(self):
        return self._d(self._space_dim(1), 2)

    @property
    def dz2(self):
        return self._d(self._space_dim(2), 2)

    @property
    def dt(self):
        return self._d(self.grid.stepping_dim, 1)

    @property
    def dt2(self):
        return self._d(self.grid.stepping_dim, 2)

    @property
    def laplace(self):
        return DAdd(*[self._d(d, 2) for d in self.grid.dimensions])

    def evaluate(self):
        """This expression with every derivative expanded into weighted shifts."""
        from .derivatives import evaluate
        return evaluate(self)


class DAdd(Differentiable, sympy.Add):
    pass


class DMul(Differentiable, sympy.Mul):
    pass


class DPow(Differentiable, sympy.Pow):
    pass


def plain(expr):
    """``expr`` rebuilt with sympy's own Add/Mul/Pow (for printing and simplification)."""
    mapping = {DAdd: sympy.Add, DMul: sympy.Mul, DPow: sympy.Pow}

    def rebuild(e):
        if not e.args:
            return e
        args = [rebuild(a) for a in e.args]
        cls = mapping.get(type(e))
        if cls is not None:
            return cls(*args)
        return e.func(*args) if any(a is not b for a, b in zip(args, e.args)) else e
    return rebuild(expr)
