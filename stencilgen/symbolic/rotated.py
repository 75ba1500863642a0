"""Devito's rotated staggered finite differences (RSFD: ``u.dx45``, ``div45``, ``grad45``,
``curl45``): a first derivative along a grid dimension as a weighted sum of first differences
along the grid's diagonals (two in 2D, four in 3D), taken where the equation needs it.

A ``Rotated`` derivative stays unevaluated until its point is known: an equation takes it at
its left-hand side's place (``relocation``), otherwise at the operand's own. Its taps follow
Devito 4.8's ``drot``: the first-derivative weights on the operand's own points around that
point, each tap moved along every dimension by the diagonal's sign, and where the point lies
half a spacing from the operand's (a staggered stencil) by Devito's shift of the negative
diagonals. The one mixed case Devito's own exactness test fails (an operand staggered along
some dimensions only: its taps along the others lean one way) is taken as Devito takes it.
"""
from __future__ import annotations

import itertools

import sympy

from .differentiable import DMul, DPow, Evaluated, PlacedDerivative, evaluate, location
from ..errors import InvalidArgument, InvalidEquation, UnsupportedDerivative
from .fd_weights import fornberg_weights
from .shifts import shift

HALF = sympy.Rational(1, 2)


def _directions(ndim: int) -> list:
    """The diagonals as signs per dimension, the first dimension's always +1 (Devito's order)."""
    return [(1,) + s for s in itertools.product((1, -1), repeat=ndim - 1)]


class Rotated(PlacedDerivative):
    """The rotated first derivative of ``expr`` along ``dim`` at order ``order``."""

    is_commutative = True

    def __new__(cls, expr, dim, order):
        return sympy.Expr.__new__(cls, sympy.sympify(expr), dim, sympy.Integer(order))

    @property
    def expr(self):
        return self.args[0]

    @property
    def dim(self):
        return self.args[1]

    @property
    def order(self) -> int:
        return int(self.args[2])

    @property
    def grid(self):
        return self.expr.grid

    @property
    def place(self) -> dict:
        """Grid dimension -> where the operand's values sit (0 or 1/2 spacings)."""
        return {d: (location(self.expr, d) or (sympy.S.Zero,))[0] for d in self.grid.dimensions}

    def _sympystr(self, printer):
        return (f"Derivative({printer.doprint(self.expr)}, {self.dim}, "
                f"fd_order={self.order}, method='RSFD')")

    def at(self, target: dict):
        """The taps, at ``target`` (dimension -> 0 or 1/2 spacings from the node; {}: at the
        operand's own place)."""
        dims = list(self.grid.dimensions)
        ndim = len(dims)
        if ndim not in (2, 3):
            raise InvalidEquation(f"{self}: rotated derivatives need a 2D or 3D grid")
        own = self.place
        x0 = {d: sympy.nsimplify(target[d]) for d in dims if d in target}
        if x0 and len(set(x0.values())) > 1:
            # Devito's check_staggering: the diagonals meet only at a node or a cell centre
            raise InvalidEquation(
                f"{self} is taken at {tuple(x0.values())} spacings from the node along "
                f"{', '.join(map(str, x0))}: a rotated derivative is taken at a node or at a "
                f"cell centre (every dimension staggered alike), as Devito's")
        mid = own[self.dim]
        start = x0.get(self.dim, mid)
        half = self.order // 2
        if start == mid:   # centred on the operand's own points
            points = [mid + k for k in range(-half, half + 1)]
        else:              # staggered: the operand's points around the target
            points = [start + sympy.Rational(2 * k - 1, 2) for k in range(-half + 1, half + 1)]
        weights = fornberg_weights(points, start, 1)
        inner = evaluate(self.expr)
        terms = []
        axis = dims.index(self.dim)
        for signs in _directions(ndim):
            w = signs[axis]   # a diagonal counts by its sign along the axis (dir_weights)
            for p, c in zip(points, weights):
                if c == 0:
                    continue
                i = p - mid
                moved = inner
                for d, sign in zip(dims, signs):
                    lean = 0 if (mid == start or sign > 0) else (-1 if mid == 0 else 1)
                    moved = shift(moved, d, sign * i - lean)
                terms.append(DMul(w * c, moved))
        return DMul(Evaluated(*terms), sympy.Rational(1, 2 ** (ndim - 1)),
                    DPow(self.dim.spacing, sympy.S.NegativeOne))


def rotated(expr, dim, order=None, name="rotated derivative"):
    """``Rotated(expr, dim, order)``, order defaulting to ``expr``'s space order."""
    try:
        grid = expr.grid
    except Exception:
        raise UnsupportedDerivative(f"{name}: {expr} involves no Function, so it has no "
                                    f"grid") from None
    if grid.dim not in (2, 3):
        raise UnsupportedDerivative(f"{name}: a rotated derivative needs a grid of 2 or 3 "
                                    f"dimensions; on a {grid.dim}D grid write u.d{dim}")
    order = expr.space_order if order is None else int(order)
    if order < 2 or order % 2:
        raise InvalidArgument(f"{name}: order {order}; give an even order of 2 or more")
    return Rotated(expr, dim, order)
