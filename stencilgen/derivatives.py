"""Lazy derivatives and their expansion into weighted shifts (exact Fornberg weights).

``Derivative(expr, (x, n), fd_order=k, x0=x + s*h_x)`` stands for the n-th derivative of
``expr`` along x evaluated at x + s*h (s integer or half-integer), to accuracy k. It stays
symbolic until lowering (or ``.evaluate()``), so the compiler sees the nesting and can
materialise inner derivatives as temporaries.
"""
from __future__ import annotations

import sympy

from .differentiable import Differentiable
from .dimensions import Dimension
from .errors import InvalidArgument
from .fd_weights import derivative_weights


def _as_spec(spec):
    if isinstance(spec, Dimension):
        return spec, 1
    if isinstance(spec, (tuple, list)) and len(spec) == 2 and isinstance(spec[0], Dimension):
        order = spec[1]
        if isinstance(order, bool) or not isinstance(order, (int, sympy.Integer)) or int(order) < 1:
            raise InvalidArgument(f"Derivative: derivative order must be a positive integer, "
                                  f"got {order!r} for {spec[0]}")
        return spec[0], int(order)
    raise InvalidArgument(f"Derivative: expected a dimension or (dimension, order), got {spec!r}")


def _shift_of(dim, x0) -> sympy.Rational:
    """The s of ``x0 = dim + s*h``; an InvalidArgument if x0 is not of that form."""
    s = sympy.nsimplify(sympy.simplify((sympy.sympify(x0) - dim) / dim.spacing))
    if not s.is_Rational or (2 * s).q != 1:
        raise InvalidArgument(
            f"Derivative: x0={x0} is not a node or midpoint along {dim}; write it as "
            f"{dim} + k*{dim}.spacing/2 with an integer k")
    return sympy.Rational(s)


class Derivative(Differentiable, sympy.Expr):
    """The lazy n-th derivative of an expression along one dimension.

    Args are ``(expr, dim, n, fd_order, x0)``; the user forms ``Derivative(u, x)``,
    ``Derivative(u, (x, 2))``, ``Derivative(u, x, y)`` and ``Derivative(u, (x, 1), (y, 1))``
    nest one Derivative per dimension.
    """

    is_commutative = True

    def __new__(cls, expr, *specs, fd_order=None, x0=None):
        if (len(specs) == 4 and fd_order is None and x0 is None
                and isinstance(specs[0], Dimension) and isinstance(specs[1], sympy.Integer)
                and isinstance(specs[2], sympy.Integer)):
            return sympy.Expr.__new__(cls, sympy.sympify(expr), *specs)
        if not specs:
            raise InvalidArgument("Derivative: give at least one dimension, e.g. Derivative(u, x)")
        merged: dict = {}
        for spec in specs:
            dim, n = _as_spec(spec)
            merged[dim] = merged.get(dim, 0) + n
        result = expr
        for dim, n in merged.items():
            result = cls._build(result, dim, n, fd_order, x0)
        return result

    @classmethod
    def _build(cls, expr, dim, n, fd_order, x0):
        expr = sympy.sympify(expr)
        if isinstance(fd_order, dict):
            fd_order = fd_order.get(dim)
        if isinstance(x0, dict):
            x0 = x0.get(dim)
        is_time = dim.is_Time
        if fd_order is None:
            fd_order = _default_order(expr, dim, n)
        _check_fd_order(expr, dim, n, fd_order, is_time)
        x0 = dim if x0 is None else sympy.sympify(x0)
        shift = _shift_of(dim, x0)
        return sympy.Expr.__new__(cls, expr, dim, sympy.Integer(n), sympy.Integer(fd_order),
                                  dim + shift * dim.spacing)

    # -- accessors -------------------------------------------------------------------------
    @property
    def expr(self):
        return self.args[0]

    @property
    def dim(self) -> Dimension:
        return self.args[1]

    @property
    def deriv_order(self) -> int:
        return int(self.args[2])

    @property
    def fd_order(self) -> int:
        return int(self.args[3])

    @property
    def x0(self):
        return self.args[4]

    @property
    def shift(self) -> sympy.Rational:
        return _shift_of(self.dim, self.x0)

    def __call__(self, x0=None, fd_order=None):
        """A copy evaluated at ``x0`` and/or with accuracy ``fd_order`` (Devito's ``u.dx(x0=...)``)."""
        new_x0 = x0.get(self.dim, self.x0) if isinstance(x0, dict) else (x0 if x0 is not None else self.x0)
        new_order = fd_order.get(self.dim, self.fd_order) if isinstance(fd_order, dict) else (
            fd_order if fd_order is not None else self.fd_order)
        inner = self.expr
        if isinstance(x0, dict) and isinstance(inner, Derivative):
            inner = inner(x0=x0)
        return Derivative._build(inner, self.dim, self.deriv_order, new_order, new_x0)

    def _sympystr(self, printer):
        extra = "" if self.shift == 0 else f", x0={printer.doprint(self.x0)}"
        return (f"Derivative({printer.doprint(self.expr)}, ({self.dim}, {self.deriv_order}), "
                f"fd_order={self.fd_order}{extra})")

    def _eval_derivative(self, s):
        # sympy's own diff treats a lazy derivative as opaque unless it contains s.
        if self.has(s):
            raise InvalidArgument(f"cannot differentiate {self} symbolically with respect to {s}")
        return sympy.S.Zero


def _default_order(expr, dim, n):
    if dim.is_Time:
        order = expr.time_order if isinstance(expr, Differentiable) else 0
        return max(order, 1) if n == 1 else 2
    return expr.space_order if isinstance(expr, Differentiable) else 2


def _check_fd_order(expr, dim, n, fd_order, is_time):
    if isinstance(fd_order, bool) or not isinstance(fd_order, (int, sympy.Integer)):
        raise InvalidArgument(f"Derivative along {dim}: fd_order must be an integer, got {fd_order!r}")
    fd_order = int(fd_order)
    if is_time:
        if n == 2 and isinstance(expr, Differentiable) and 0 < expr.time_order < 2:
            raise InvalidArgument(f"the second time derivative of {expr} needs time_order=2 "
                                  f"(it has time_order={expr.time_order}): three time levels")
        if fd_order not in (1, 2) or (n == 2 and fd_order != 2):
            raise InvalidArgument(f"Derivative along {dim}: time derivatives take fd_order 1 "
                                  f"(forward, first derivative only) or 2 (centred); got {fd_order}")
    elif fd_order < 2 or fd_order % 2:
        raise InvalidArgument(f"Derivative along {dim}: fd_order={fd_order} is not supported; "
                              "use an even order >= 2")


def shift(expr, dim, steps):
    """``expr`` moved by ``steps`` grid spacings along ``dim`` (every index along it)."""
    if steps == 0:
        return expr
    if dim.is_Time:
        from .dimensions import stepping_dimension, time_dimension
        dims = (stepping_dimension(), time_dimension())
    else:
        dims = (dim,)
    return expr.xreplace({d: d + steps * d.spacing for d in dims})


def weights_of(d: Derivative):
    """(offsets, weights) of derivative ``d``: the sample points in spacings, exact weights."""
    if d.dim.is_Time and d.fd_order == 1:
        return (sympy.Integer(0), sympy.Integer(1)), (sympy.Integer(-1), sympy.Integer(1))
    offsets, weights = derivative_weights(d.deriv_order, d.fd_order, d.shift)
    return tuple(offsets), tuple(weights)


def expand(d: Derivative, inner):
    """The weighted-shift sum for derivative ``d`` applied to the (already expanded) ``inner``."""
    offsets, weights = weights_of(d)
    h = d.dim.spacing
    return sympy.Add(*[w * shift(inner, d.dim, o) for o, w in zip(offsets, weights) if w != 0]) \
        / h ** d.deriv_order


def evaluate(expr):
    """``expr`` with every Derivative expanded, innermost first."""
    if isinstance(expr, Derivative):
        return expand(expr, evaluate(expr.expr))
    if not expr.args or not expr.has(Derivative):
        return expr
    return expr.func(*[evaluate(a) for a in expr.args])
