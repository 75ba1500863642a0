"""The symbolic layer: expressions with derivative shorthands and the lazy Derivative node.

Functions, derivatives and the sums/products/powers built from them carry ``.dx``,
``.dy``, ``.dz``, ``.dx2``... ``.laplace``, which wrap the expression in a lazy Derivative,
so ``(b * u.dx).dx`` works like ``u.dx.dx``. The two know each other, hence one module.
"""
from __future__ import annotations

import re

import numpy as np
import sympy
from sympy.core.decorators import call_highest_priority
from sympy.core.function import AppliedUndef

from sympy.core.symbol import Str

from .dimensions import Dimension
from ..errors import InvalidArgument, InvalidEquation, UnsupportedDerivative
from .fd_sides import side_name
from .fd_weights import custom_offsets
from .shifts import expand, shift


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
        if isinstance(other, sympy.MatrixBase):   # entry by entry, a Matrix (Devito's ADER)
            return other.applyfunc(lambda e: DMul(self, e))
        return DMul(self, other)

    @call_highest_priority("__mul__")
    def __rmul__(self, other):
        if isinstance(other, sympy.MatrixBase):
            return other.applyfunc(lambda e: DMul(e, self))
        return DMul(other, self)

    @call_highest_priority("__rtruediv__")
    def __truediv__(self, other):
        return DMul(self, DPow(other, sympy.S.NegativeOne))

    @call_highest_priority("__truediv__")
    def __rtruediv__(self, other):
        if isinstance(other, sympy.MatrixBase):
            return other.applyfunc(lambda e: DMul(e, DPow(self, sympy.S.NegativeOne)))
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
        grids = {id(f.grid): f.grid for f in _grid_functions(self)}
        if not grids:
            raise InvalidEquation(f"{self} involves no Function, so it has no grid to "
                                  "differentiate on")
        if len(grids) > 1:
            raise InvalidEquation(f"{self} mixes Functions of different Grids; "
                                  "build all Functions of one expression on the same Grid")
        return next(iter(grids.values()))

    @property
    def space_order(self) -> int:
        """The smallest space order of the functions involved (the derivatives' default order);
        functions of space order 0 (never differentiated) do not count unless alone."""
        orders = [f.space_order for f in _grid_functions(self)]
        return min([o for o in orders if o] or orders or [2])

    @property
    def time_order(self) -> int:
        orders = [f.time_order for f in _grid_functions(self) if f.is_TimeFunction]
        return min(orders) if orders else 0

    # -- derivative shorthands -------------------------------------------------------------
    def _space_dim(self, name: str):
        """The grid dimension called ``name`` (``.dz`` on a grid of x and z is along z)."""
        dims = {d.name: d for d in self.grid.dimensions}
        if name not in dims:
            raise UnsupportedDerivative(
                f"d{name}: the grid of {self} has no dimension {name!r} (its dimensions are "
                f"{', '.join(dims)}); differentiate along one of them")
        return dims[name]

    def _d(self, dim, order):
        return Derivative(self, (dim, order))

    def diff(self, *specs, fd_order=None, x0=None):
        """The lazy finite-difference derivative, as Devito's ``u.diff(x)``:
        ``u.diff(x)``, ``u.diff(x, 2)``, ``u.diff(x, y)``, with ``fd_order=`` and ``x0=``."""
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
        return self._d(self._space_dim("x"), 1)

    @property
    def dy(self):
        return self._d(self._space_dim("y"), 1)

    @property
    def dz(self):
        return self._d(self._space_dim("z"), 1)

    @property
    def dx2(self):
        return self._d(self._space_dim("x"), 2)

    @property
    def dy2(self):
        return self._d(self._space_dim("y"), 2)

    @property
    def dz2(self):
        return self._d(self._space_dim("z"), 2)

    @property
    def dt(self):
        return self._d(self.grid.stepping_dim, 1)

    @property
    def dt2(self):
        return self._d(self.grid.stepping_dim, 2)

    @property
    def laplace(self):
        return DAdd(*[self._d(d, 2) for d in self.grid.dimensions])

    # Devito's calculus as methods (``f.laplacian()``, ``f.grad()``, ``f.div()``)
    def laplacian(self, shift=None, order=None, method="FD", w=None, side=None):
        """The Laplacian (``calculus.laplace``); ``w=`` (Devito's weights) is refused."""
        if w is not None:
            raise InvalidArgument("laplacian: w= (custom weights) is not supported; give "
                                  "weights to each second derivative, u.dx2(weights=...)")
        return CALCULUS["laplace"](self, shift, order, method, side)

    def grad(self, shift=None, order=None, method="FD", side=None):
        """The gradient (``calculus.grad``)."""
        return CALCULUS["grad"](self, shift, order, method, side)

    def div(self, shift=None, order=None, method="FD", side=None):
        """The divergence of a scalar: the sum of its first derivatives (``calculus.div``)."""
        return CALCULUS["div"](self, shift, order, method, side)

    @property
    def dxl(self):
        return self._sided("x", "left")

    @property
    def dxr(self):
        return self._sided("x", "right")

    @property
    def dxc(self):
        return self._sided("x", "centered")

    def _sided(self, index, side):
        return Derivative(self, self._space_dim(index), side=side)

    def __getattr__(self, name):
        """Devito's other derivative shorthands (``dyl``, ``dx3``, ``dxdy``, ``dt2dx``, ``dx45``),
        parsed from the name; a Devito name this expression cannot offer is an
        UnsupportedDerivative saying what to write, any other name a plain AttributeError."""
        if name == "T":
            raise UnsupportedDerivative(
                f".T is the adjoint of one Derivative (u.dx.T, u.dxl.T); {self} is not one. "
                "Transpose each derivative in it, e.g. -u.dx45 for the adjoint of u.dx45")
        if not _SHORTHAND.fullmatch(name):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return _shorthand(self, name)

    @property
    def evaluate(self):
        """This expression with every derivative expanded into weighted shifts: a property, as
        Devito's (``u.dx.evaluate``); ``u.dx.evaluate()`` gives the same (see ``__call__``)."""
        e = evaluate(self)
        cls = _DIFFERENTIABLE.get(type(e)) or (DPow if type(e) is sympy.Pow else None)
        return cls._from_args(e.args) if cls is not None else e

    def __call__(self, *args, **kwargs):
        """Called with nothing, the expression itself: ``expr.evaluate()`` works as well as
        Devito's ``expr.evaluate``."""
        if args or kwargs:
            raise TypeError(f"{self} is an expression, not a function: it takes no arguments")
        return self


# Devito's shorthand names: one dimension (t, x, y, z) with a side (l, r, c) or the rotated
# 45 suffix, or "d" before each of up to four dimensions in order, each with an optional order.
_SHORTHAND = re.compile(r"d[txyz](?:l|r|c|45)|(?:dt(?:[2-9]|[1-9]\d+)?)?(?:dx(?:[2-9]|[1-9]\d+)?)?"
                        r"(?:dy(?:[2-9]|[1-9]\d+)?)?(?:dz(?:[2-9]|[1-9]\d+)?)?")
_TOKEN = re.compile(r"d([txyz])(l|r|c|45|\d*)")
_SIDES = {"l": "left", "r": "right", "c": "centered"}


def _shorthand(expr, name):
    """The derivative that Devito's shorthand ``name`` (already matched) stands for on ``expr``."""
    tokens = _TOKEN.findall(name)
    if not tokens:
        raise AttributeError(f"{type(expr).__name__!r} object has no attribute {name!r}")
    try:
        grid = expr.grid
    except InvalidEquation:
        raise UnsupportedDerivative(f"{name}: {expr} involves no Function, so it has no grid "
                                    "to differentiate on") from None
    specs = []
    for letter, suffix in tokens:
        dim = _shorthand_dim(grid, name, letter)
        if suffix == "45":
            return CALCULUS["rotated"](expr, dim, name=name)
        if suffix in _SIDES:
            return Derivative(expr, dim, side=_SIDES[suffix])
        specs.append((dim, _shorthand_order(expr, name, dim, suffix)))
    return Derivative(expr, *specs)   # several dimensions: one cross derivative


def _shorthand_dim(grid, name, letter):
    """The grid dimension a shorthand's letter names; UnsupportedDerivative if there is none."""
    if letter == "t":
        return grid.stepping_dim
    dims = {d.name: d for d in grid.dimensions}
    # as Devito's, a coarse grid's dimension by its root's name too (u2.dx along xsub)
    dims.update({d.root.name: d for d in grid.dimensions
                 if getattr(d, "is_Conditional", False) and d.root.name not in dims})
    if letter not in dims:
        names = ", ".join(dims)
        raise UnsupportedDerivative(
            f"{name}: this grid has no dimension {letter!r} (its dimensions are {names}); "
            f"differentiate along one of them, e.g. Derivative(u, {next(iter(dims))})")
    return dims[letter]


def _shorthand_order(expr, name, dim, suffix):
    """The derivative order a shorthand asks for, if the expression's order allows it."""
    n = int(suffix) if suffix else 1
    limit = (2 if expr.time_order >= 2 else 1) if dim.is_Time else max(expr.space_order, 2)
    if n < 1 or n > limit:
        if dim.is_Time:
            raise UnsupportedDerivative(
                f"{name}: time derivatives go up to order {limit} here (time_order "
                f"{expr.time_order}); write higher ones as differences of u.forward, u, u.backward")
        raise UnsupportedDerivative(
            f"{name}: a derivative of order {n} along {dim} is not offered at space_order "
            f"{limit} (shorthands go up to order {limit}); write Derivative(u, ({dim}, {n}), "
            f"fd_order={n + n % 2}) or raise the Function's space_order")
    return n


def _keep_differentiable(e):
    """``e`` as a DAdd/DMul where sympy's evaluation built its own class (a number times a sum
    distributes: ``(u + 1) / 2`` is an Add), so that the shorthands stay available."""
    cls = _DIFFERENTIABLE.get(type(e))
    return cls._from_args(e.args) if cls is not None else e


class DAdd(Differentiable, sympy.Add):
    def __new__(cls, *args, **kwargs):
        return _keep_differentiable(super().__new__(cls, *args, **kwargs))


class DMul(Differentiable, sympy.Mul):
    def __new__(cls, *args, **kwargs):
        return _keep_differentiable(super().__new__(cls, *args, **kwargs))


class DPow(Differentiable, sympy.Pow):
    pass


class Evaluated(DAdd):
    """A right-hand side ``Eq.evaluate`` expanded at its left-hand side's place: each
    function sits where its stencil put it, and an equation built from it (Devito's
    free-surface recipe rewrites its indices) is not moved again, as Devito evaluates an
    expression once."""

    def __new__(cls, *args, **kwargs):
        return sympy.Add.__new__(cls, *args, **kwargs)


def evaluated(expr):
    """``expr`` (an evaluated right-hand side) marked ``Evaluated`` where it is a sum."""
    return Evaluated._from_args(expr.args) if isinstance(expr, sympy.Add) else expr


_DIFFERENTIABLE = {sympy.Add: DAdd, sympy.Mul: DMul}


def _grid_functions(expr):
    """The grid functions in ``expr``: its applied functions that are Differentiable (the
    DiscreteFunctions of functions.py, which builds on this module and so is not imported)."""
    return {f for f in expr.atoms(AppliedUndef) if isinstance(f, Differentiable)}


# -- the lazy derivative ----------------------------------------------------------------
def _as_spec(spec):
    dim = spec[0] if isinstance(spec, (tuple, list)) and spec else spec
    if getattr(dim, "is_Batch", False):
        raise InvalidArgument(f"Derivative: {dim} is a BatchDimension, whose entries are "
                              f"independent copies (shots); differentiate along the others")
    if isinstance(spec, Dimension):
        return spec, 1
    if isinstance(spec, (tuple, list)) and len(spec) == 2 and isinstance(spec[0], Dimension):
        order = spec[1]
        if isinstance(order, bool) or not isinstance(order, (int, np.integer, sympy.Integer)) \
                or int(order) < 0:
            raise InvalidArgument(f"Derivative: derivative order must be an integer from 0, "
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


#: Devito's vector calculus by name (``grad``, ``div``, ``curl``, ``laplace``, and
#: ``rotated`` for ``u.dx45``), registered by ``calculus``: the methods of expressions and
#: tensors (``f.grad()``, ``v.div()``) call it from here, without importing the modules that
#: build on this one
CALCULUS: dict = {}


class PlacedDerivative(Differentiable, sympy.Expr):
    """A derivative whose taps depend on the point an equation takes it at (Devito's rotated
    ones: ``rotated.Rotated``): unevaluated until then, its taps from ``at(target)``."""

    def at(self, target: dict):
        raise NotImplementedError


class Derivative(Differentiable, sympy.Expr):
    """The lazy n-th derivative of an expression along one dimension, evaluated at ``x0``.

    It stays symbolic until lowering (or ``.evaluate()``), so the compiler sees the nesting and
    can materialise inner derivatives as temporaries. Args are ``(expr, dim, n, fd_order, x0)``
    and, for a side, user weights or a transpose, a sixth ``(side, transposed, weights)``;
    the user forms ``Derivative(u, x)``, ``Derivative(u, (x, 2))``, ``Derivative(u, x, y)`` and
    ``Derivative(u, (x, 1), (y, 1))`` nest one Derivative per dimension. Those inner levels
    are ``cross``: parts of one cross derivative, as Devito's single Derivative over several
    dimensions (``u.dxdy``), so an argument given to the whole (``fd_order={x: 2, y: 2}``,
    ``side=``, ``x0={...}``) reaches every level, and in an equation every level is taken
    where the left-hand side sits; ``u.dx.dy`` nests two derivatives of their own.
    """

    is_commutative = True

    def __new__(cls, expr, *specs, fd_order=None, x0=None, side=None, weights=None,
                deriv_order=None):
        if (len(specs) in (4, 5) and fd_order is None and x0 is None and side is None
                and weights is None and deriv_order is None and isinstance(specs[0], Dimension)
                and isinstance(specs[1], sympy.Integer) and isinstance(specs[2], sympy.Integer)):
            return sympy.Expr.__new__(cls, sympy.sympify(expr), *specs)
        if not specs:
            raise InvalidArgument("Derivative: give at least one dimension, e.g. Derivative(u, x)")
        if deriv_order is not None:   # Devito's Derivative(u, x, y, deriv_order=(2, 1))
            orders = tuple(deriv_order) if isinstance(deriv_order, (tuple, list)) else \
                (deriv_order,) * len(specs)
            if len(orders) != len(specs) or not all(isinstance(d, Dimension) for d in specs):
                raise InvalidArgument(
                    f"Derivative: deriv_order={deriv_order!r} for {specs!r}: give the "
                    f"dimensions alone and one order each (or one for all)")
            specs = tuple(zip(specs, orders))
        merged: dict = {}
        for spec in specs:
            dim, n = _as_spec(spec)
            merged[dim] = merged.get(dim, 0) + n
        # order 0: the expression itself, or with an x0 along that dimension Devito's
        # interpolation there (Fornberg's weights of order 0 on fd_order nodes); beside other
        # orders a level of its own, as Devito's (interpolating where an x0 moves it later)
        given = set(x0) if isinstance(x0, dict) else set(merged) if x0 is not None else set()
        some = any(merged.values())
        merged = {d: n for d, n in merged.items() if n or some or d in given}
        if isinstance(x0, dict):
            expr = _interpolated_at(expr, x0, merged)
        if not merged:
            return sympy.sympify(expr)
        if len(merged) > 1 and weights is not None:
            raise InvalidArgument("Derivative: weights= apply to one dimension; nest one "
                                  "Derivative per dimension instead")
        if len(merged) > 1 and fd_order is not None and not isinstance(fd_order, dict):
            raise InvalidArgument(
                f"Derivative: fd_order={fd_order!r} for a derivative along "
                f"{', '.join(d.name for d in merged)}: give one order a dimension, e.g. "
                f"fd_order={{{', '.join(f'{d.name}: {fd_order}' for d in merged)}}} (Devito "
                f"4.8 stops on an integer there)")
        result, last = expr, len(merged) - 1
        for i, (dim, n) in enumerate(merged.items()):
            result = cls._build(result, dim, n, fd_order, x0, side, weights, cross=i < last)
        return result

    @classmethod
    def _build(cls, expr, dim, n, fd_order, x0, side=None, weights=None, transposed=False,
               cross=False):
        expr = sympy.sympify(expr)
        if isinstance(fd_order, dict):
            fd_order = fd_order.get(dim)
        if isinstance(x0, dict):
            x0 = x0.get(dim)
        explicit = x0 is not None
        x0 = dim if x0 is None else sympy.sympify(x0)
        if dim.is_Time:   # x0 in the other time dimension (u.dt(x0=time - dt/2)): the same time
            x0 = x0.xreplace({s: dim for s in x0.free_symbols
                              if isinstance(s, Dimension) and s.is_Time and s != dim
                              and getattr(s, "root", s) == getattr(dim, "root", dim)})
        shift = _shift_of(dim, x0)
        side, weights = _check_scheme(dim, n, shift, side, weights)
        if weights:
            fd_order = len(weights) - (1 if shift.is_Integer else 0)
        else:
            if fd_order is None:
                fd_order = _default_order(expr, dim, n)
            _check_fd_order(expr, dim, n, fd_order, dim.is_Time)
        args = [expr, dim, sympy.Integer(n), sympy.Integer(fd_order), dim + shift * dim.spacing]
        if side or weights or transposed or explicit or cross:
            args.append(sympy.Tuple(Str(side or ""), sympy.Integer(bool(transposed)),
                                    sympy.Tuple(*weights), sympy.Integer(explicit),
                                    sympy.Integer(bool(cross))))
        return sympy.Expr.__new__(cls, *args)

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
    def point(self):
        """Where it is evaluated: ``dim + s*h``."""
        return self.args[4]

    @property
    def x0(self) -> dict:
        """Devito's: the points given, by dimension, those of a cross derivative's other
        dimensions included ({} where none was: it sits where its operand's values do, or
        in an equation where the left-hand side's do)."""
        out = dict(self.expr.x0) if isinstance(self.expr, Derivative) and self.expr.cross \
            else {}
        if self.explicit_x0:
            out[self.dim] = self.point
        return out

    @property
    def shift(self) -> sympy.Rational:
        return _shift_of(self.dim, self.point)

    @property
    def explicit_x0(self) -> bool:
        """Whether x0 was given; if not, the derivative sits where its operand's values do, or
        where an Eq's left-hand side does (``stencilgen.symbolic.relocation``)."""
        return bool(self.args[5][3]) if len(self.args) > 5 else False

    @property
    def side(self):
        """'left', 'right', 'centered' or None (the default stencil)."""
        return (str(self.args[5][0]) or None) if len(self.args) > 5 else None

    @property
    def cross(self) -> bool:
        """Whether this is an inner level of a cross derivative (see the class)."""
        return len(self.args) > 5 and len(self.args[5]) > 4 and bool(self.args[5][4])

    @property
    def transposed(self) -> bool:
        return bool(self.args[5][1]) if len(self.args) > 5 else False

    @property
    def weights(self) -> tuple:
        """The user's weights, leftmost node first; () for exact Fornberg weights."""
        return tuple(self.args[5][2]) if len(self.args) > 5 else ()

    @property
    def T(self):
        """The adjoint (transpose) of this derivative, as Devito defines ``.T``: the stencil read
        mirrored, so that <D u, v> = <u, D.T v> for fields vanishing near the boundary."""
        return Derivative._build(self.expr, self.dim, self.deriv_order, self.fd_order,
                                 self.point if self.explicit_x0 else None, self.side,
                                 self.weights or None, not self.transposed, self.cross)

    def __call__(self, x0=None, fd_order=None, side=None, weights=None):
        """A copy evaluated at ``x0``, with accuracy ``fd_order``, on a ``side`` or with custom
        ``weights`` (Devito's ``u.dx(x0=...)``, ``u.dx(weights=...)``)."""
        own_x0 = self.point if self.explicit_x0 else None
        new_x0 = x0.get(self.dim, own_x0) if isinstance(x0, dict) else (
            x0 if x0 is not None else own_x0)
        new_order = fd_order.get(self.dim, self.fd_order) if isinstance(fd_order, dict) else (
            fd_order if fd_order is not None else self.fd_order)
        if weights is None and fd_order is None and self.weights:
            weights = self.weights
        elif weights is not None:
            new_order = None
        inner = self.expr
        if isinstance(inner, Derivative) and inner.cross:
            # the other dimensions of one cross derivative (Devito's u.dxdy(...))
            if fd_order is not None and not isinstance(fd_order, dict):
                dims = [d.name for d in self._cross_dims()]
                example = ", ".join(f"{d}: {fd_order}" for d in dims)
                raise InvalidArgument(
                    f"fd_order={fd_order!r} for the cross derivative along {', '.join(dims)}: "
                    f"give one order a dimension, e.g. fd_order={{{example}}} (Devito 4.8 "
                    f"stops on an integer there)")
            inner = inner(x0=_without(x0, self.dim) if isinstance(x0, dict) else None,
                          fd_order=fd_order if isinstance(fd_order, dict) else None, side=side)
        elif isinstance(x0, dict) and isinstance(inner, Derivative):
            inner = inner(x0=_without(x0, self.dim))
        if isinstance(x0, dict):
            taken, level = {self.dim}, self.expr
            while isinstance(level, Derivative):
                taken.add(level.dim)
                level = level.expr
            inner = _interpolated_at(inner, x0, taken)
        return Derivative._build(inner, self.dim, self.deriv_order, new_order, new_x0,
                                 side if side is not None else self.side, weights,
                                 self.transposed, self.cross)

    def _cross_dims(self) -> list:
        """The dimensions of the cross derivative this is the outer level of, innermost first."""
        inner = self.expr
        dims = [inner.dim] if isinstance(inner, Derivative) and inner.cross else []
        while isinstance(inner, Derivative) and inner.cross and \
                isinstance(inner.expr, Derivative) and inner.expr.cross:
            inner = inner.expr
            dims.insert(0, inner.dim)
        return dims + [self.dim]

    @property
    def variables(self) -> tuple:
        """sympy's: the dimension once per order (``u.dx2``: (x, x))."""
        return (self.dim,) * self.deriv_order

    @property
    def variable_count(self) -> tuple:
        """sympy's: ((dimension, order),)."""
        return ((self.dim, sympy.Integer(self.deriv_order)),)

    @property
    def derivative_count(self) -> int:
        return self.deriv_order

    def _as_sympy(self):
        """sympy's own unevaluated Derivative of the same expression, for its printers."""
        return sympy.Derivative(self.expr, (self.dim, self.deriv_order), evaluate=False)

    def _latex(self, printer):
        # a partial derivative (sympy writes d for integer symbols such as the dimensions)
        n = self.deriv_order
        power = f"^{{{n}}}" if n > 1 else ""
        inner = printer._print(self.expr)
        if isinstance(self.expr, sympy.Add):
            inner = rf"\left({inner}\right)"
        return rf"\frac{{\partial{power}}}{{\partial {printer._print(self.dim)}{power}}} {inner}"

    def _pretty(self, printer):
        return printer._print(self._as_sympy())

    def _sympystr(self, printer):
        extra = f", x0={printer.doprint(self.point)}" if self.explicit_x0 else ""
        if self.side:
            extra += f", side={self.side}"
        if self.weights:
            extra += f", weights={printer.doprint(self.weights)}"
        text = (f"Derivative({printer.doprint(self.expr)}, ({self.dim}, {self.deriv_order}), "
                f"fd_order={self.fd_order}{extra})")
        return text + ".T" if self.transposed else text

    def _eval_derivative(self, s):
        # sympy's own diff treats a lazy derivative as opaque unless it contains s.
        if self.has(s):
            raise InvalidArgument(f"cannot differentiate {self} symbolically with respect to {s}")
        return sympy.S.Zero


def _check_scheme(dim, n, shift, side, weights):
    """(side name or None, tuple of weights) after checking they fit this derivative."""
    try:
        side = side_name(side)
    except ValueError as e:
        raise InvalidArgument(f"Derivative along {dim}: {e}") from None
    if side is not None and n != 1:
        raise InvalidArgument(f"Derivative along {dim}: side={side} applies to first "
                              f"derivatives only (this one has order {n}); drop side=")
    if weights is None:
        return side, ()
    if side is not None:
        raise InvalidArgument(f"Derivative along {dim}: give side= or weights=, not both")
    weights = tuple(sympy.sympify(w) for w in _as_list(weights))
    try:
        custom_offsets(len(weights), shift)
    except ValueError as e:
        raise InvalidArgument(f"Derivative along {dim}: {e}") from None
    if len(weights) <= n:
        raise InvalidArgument(f"Derivative along {dim}: {len(weights)} weights cannot form a "
                              f"derivative of order {n}; give at least {n + 1}")
    return side, weights


def _as_list(weights):
    """The user's weights (a list, tuple, numpy array or sympy Tuple) as a list."""
    try:
        return [w.item() if hasattr(w, "item") else w for w in weights]
    except TypeError:
        raise InvalidArgument(f"weights={weights!r} must be a sequence of numbers, leftmost "
                              "node first") from None


def _without(x0: dict, dim) -> dict:
    return {d: v for d, v in x0.items() if d != dim}


def _interpolated_at(expr, x0: dict, taken):
    """``expr`` interpolated to the points ``x0`` gives along space dimensions other than
    those ``taken`` by the derivative (Devito: second order, two points around a half
    spacing): a zero-order level each, read back in the derivative's ``.x0``."""
    for d, point in x0.items():
        if d not in taken and isinstance(d, Dimension) and not d.is_Time:
            expr = Derivative._build(expr, d, 0, 2, point, cross=True)
    return expr


def _default_order(expr, dim, n):
    """Devito's default fd_order: the expression's time or space order (a first derivative of
    order 2 is then the two-point difference, ``shifts.weights_of``)."""
    if dim.is_Time:
        order = expr.time_order if isinstance(expr, Differentiable) else 0
        return max(order, 1) if n == 1 else 2
    order = expr.space_order if isinstance(expr, Differentiable) else 2
    if order == 0:
        raise InvalidArgument(f"{expr} has space_order=0 (no halo), so no space derivatives "
                              "(Devito offers none either); build it with space_order >= 1")
    # space_order 1: Devito's two-point first derivatives; second ones take three points
    return order if n == 1 else max(order, 2)


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
    elif not (fd_order == 1 and n == 1) and fd_order < 2:
        raise InvalidArgument(f"Derivative along {dim}: fd_order={fd_order} is not supported; "
                              "use 1 (first derivatives only) or an order >= 2")


def _fields(expr) -> list:
    """The grid functions ``expr`` reads (a derivative's operand's too), sparse ones aside."""
    return [a for a in expr.atoms(AppliedUndef)
            if hasattr(type(a), "_field") and not getattr(a, "is_Sparse", False)]


def _priority(f) -> tuple:
    """Devito's ``_fd_priority`` of function ``f``, then its dimension count: a function in
    time before one without, on the nodes before staggered."""
    rec = f.field
    return (2 if rec.is_time else 1) + (0.2 if not rec.staggered else 0.1), len(f.args)


def highest(expr):
    """The function whose place a combination of differently placed values is taken at
    (Devito's ``highest_priority``); None if two of the highest priority sit at different
    places (Devito then takes whichever sympy orders first: stencilgen will not guess)."""
    fields = _fields(expr)
    if not fields:
        return None
    best = max(map(_priority, fields))
    tops = [f for f in fields if _priority(f) == best]
    if len({f.field.staggered for f in tops}) > 1:
        return None
    return tops[0]


def location(expr, dim):
    """(where ``expr``'s values sit along ``dim`` in spacings from the node, whether their
    function was given staggered=): what a derivative of ``expr`` with no x0 is centred on and
    how its two-point stencil leans (Devito's rule). Values at different places: those of its
    highest-priority function (``highest``), each of the others read at its own index, as
    Devito; None where that function is ambiguous."""
    if dim.is_Time:
        return sympy.S.Zero, False
    fields = _fields(expr)
    if not fields:
        return sympy.S.Zero, False
    best = max(map(_priority, fields))
    tops = [f for f in fields if _priority(f) == best]
    if len({f.field.stagger(dim) for f in fields}) > 1:
        top = highest(expr)
        return None if top is None else (top.field.stagger(dim), top.field.stagger_given)
    # one place: the lean is the highest-priority function's (either, where two tie)
    return fields[0].field.stagger(dim), any(f.field.stagger_given for f in tops)


def placed(d, inner_place):
    """``inner_place`` (``location`` of a derivative's operand), or an error if there is none."""
    if inner_place is None:
        raise InvalidEquation(
            f"{d}: its operand mixes functions staggered differently along {d.dim} with none "
            "of them first by Devito's priority (a function in time before one without, on the "
            "nodes before staggered, then more dimensions), so where to take it is ambiguous; "
            "differentiate each function separately, or store the product in a Function first")
    return inner_place


def evaluate(expr):
    """``expr`` with every Derivative (and PlacedDerivative, at its operand's place)
    expanded, innermost first."""
    if isinstance(expr, Derivative):
        return expand(expr, evaluate(expr.expr), placed(expr, location(expr.expr, expr.dim)))
    if isinstance(expr, PlacedDerivative):
        return expr.at({})
    if not expr.args or not expr.has(Derivative, PlacedDerivative):
        return expr
    return expr.func(*[evaluate(a) for a in expr.args])


def plain(expr):
    """``expr`` rebuilt with sympy's own Add/Mul/Pow (for printing and simplification)."""
    mapping = {DAdd: sympy.Add, Evaluated: sympy.Add, DMul: sympy.Mul, DPow: sympy.Pow}

    def rebuild(e):
        if not e.args:
            return e
        args = [rebuild(a) for a in e.args]
        cls = mapping.get(type(e))
        if cls is not None:
            return cls(*args)
        return e.func(*args) if any(a is not b for a, b in zip(args, e.args)) else e
    return rebuild(expr)
