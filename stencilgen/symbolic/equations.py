"""Equations and the linear ``solve`` that isolates the unknown (usually ``u.forward``)."""
from __future__ import annotations

import sympy

from .derivatives import Derivative, evaluate
from .differentiable import evaluated
from .dimensions import Dimension
from ..errors import InvalidEquation
from .functions import DiscreteFunction
from .relocation import at_place
from .subdomains import SubDomain
from .tensors import Tensor, equations


class Eq:
    """``lhs = rhs``: the left side is written at every point of the grid (Devito's ``Eq``),
    or of ``subdomain`` (``grid.interior``, ``grid.subdomains[name]``, a user SubDomain); with
    ``implicit_dims`` holding ConditionalDimensions, only where their conditions hold."""

    def __init__(self, lhs, rhs=0, subdomain=None, implicit_dims=None, **unknown):
        if unknown:
            raise InvalidEquation(f"Eq: {', '.join(sorted(unknown))} not supported (Eq takes "
                                  "lhs, rhs, subdomain= (e.g. grid.interior) and implicit_dims)")
        if subdomain is not None and not isinstance(subdomain, SubDomain):
            raise InvalidEquation(f"Eq: subdomain must be one of the grid's subdomains "
                                  f"(grid.interior, grid.subdomains[...]) or a SubDomain "
                                  f"(MySubDomain(grid=grid)), got {subdomain!r}")
        if subdomain is not None and subdomain.grid is None:
            raise InvalidEquation(f"Eq: {subdomain!r} belongs to no Grid; create it with "
                                  f"{type(subdomain).__name__}(grid=grid) or pass it to "
                                  "Grid(subdomains=...)")
        self.subdomain = subdomain
        self.implicit_dims = _implicit_dims(implicit_dims)
        self.components = None
        if isinstance(lhs, Tensor):
            # a vector or tensor equation: one Eq per distinct entry of the left-hand side
            self.lhs, self.rhs = lhs, rhs
            self.components = equations(lhs, rhs, lambda l, r: Eq(
                l, r, subdomain=subdomain, implicit_dims=implicit_dims))
            return
        if isinstance(rhs, Tensor):
            raise InvalidEquation(f"Eq: the right-hand side is a vector or tensor but the "
                                  f"left-hand side {lhs} is a scalar; write one Eq per entry")
        self.lhs = sympy.sympify(lhs)
        self.rhs = sympy.sympify(rhs)

    def __call__(self) -> "Eq":
        """The equation itself: ``eq.evaluate()`` works as well as Devito's ``eq.evaluate``."""
        return self

    def __iter__(self):
        yield self.lhs
        yield self.rhs

    def __repr__(self) -> str:
        return f"Eq({self.lhs}, {self.rhs})"

    # sympy's printers (pprint, latex) and a notebook's display show ``lhs = rhs``, with
    # derivatives as fractions, as Devito's sympy Eq is shown
    def _as_sympy(self):
        try:
            return sympy.Eq(self.lhs, self.rhs, evaluate=False)
        except (TypeError, ValueError, AttributeError):
            return None   # a vector or tensor equation: its text

    def _latex(self, printer):
        eq = self._as_sympy()
        return printer._print(eq) if eq is not None else printer._print_str(repr(self))

    def _pretty(self, printer):
        eq = self._as_sympy()
        return printer._print(eq) if eq is not None else printer._print_str(repr(self))

    def _repr_latex_(self) -> str:
        return f"$\\displaystyle {sympy.latex(self)}$"

    @property
    def evaluate(self) -> "Eq":
        """The equation with its right-hand side taken where the left-hand side's values sit
        and its derivatives expanded (each entry's, for a vector or tensor equation): a
        property, as Devito's; ``eq.evaluate()`` gives the same."""
        if self.components is not None:
            import copy
            new = copy.copy(self)
            new.components = [e.evaluate for e in self.components]
            return new
        return self.with_rhs(evaluated(evaluate(at_place(self.rhs, self.lhs))))

    @property
    def args(self) -> tuple:
        """(lhs, rhs), as Devito's sympy Eq holds them (``lhs, rhs = eq.evaluate.args``); a
        vector or tensor equation's right-hand side as a tensor of its entries' ones."""
        if self.components is None:
            return self.lhs, self.rhs
        rhs = {c.lhs: c.rhs for c in self.components}
        return self.lhs, self.lhs.applyfunc(lambda target: rhs[target])

    def subs(self, *args, **kwargs) -> "Eq":
        """The equation with sympy's ``subs`` applied to both sides (Devito's Eq is a sympy
        Eq): ``eq.subs({x: ix, y: iy})`` runs it on a SubDomainSet's boxes."""
        return self._both("subs", *args, **kwargs)

    def xreplace(self, rule) -> "Eq":
        """The equation with sympy's ``xreplace`` applied to both sides (Devito's Eq is a sympy
        Eq): exact replacement, no matching."""
        return self._both("xreplace", rule)

    def _both(self, method, *args, **kwargs) -> "Eq":
        import copy
        new = copy.copy(self)
        new.lhs = getattr(self.lhs, method)(*args, **kwargs)
        new.rhs = getattr(sympy.sympify(self.rhs), method)(*args, **kwargs)
        if self.components is not None:
            new.components = [getattr(c, method)(*args, **kwargs) for c in self.components]
        return new

    def with_rhs(self, rhs) -> "Eq":
        """A copy with another right-hand side (keeps the kind of equation)."""
        import copy
        new = copy.copy(self)
        new.rhs = rhs
        return new

    def __add__(self, other):
        if isinstance(other, list):
            return [self] + other
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, list):
            return other + [self]
        return NotImplemented


def _implicit_dims(dims) -> tuple:
    """``implicit_dims`` as a tuple of Dimensions (one alone, or a tuple or list of them)."""
    if dims is None:
        return ()
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    for d in dims:
        if not isinstance(d, Dimension):
            raise InvalidEquation(f"Eq: implicit_dims must hold Dimensions (a "
                                  f"ConditionalDimension, or the grid's), got {d!r}")
    return dims


class Inc(Eq):
    """Devito's ``Inc``: ``lhs += rhs`` wherever it runs (an accumulation over the time steps,
    a frequency-domain sum). The left-hand side spans the Operator's dimensions: a
    reduction into a function of fewer is refused at the Operator."""

    is_Increment = True

    def __init__(self, lhs, rhs=0, subdomain=None, implicit_dims=None, **unknown):
        super().__init__(lhs, rhs, subdomain=subdomain, implicit_dims=implicit_dims,
                         **unknown)
        if self.components is not None:   # a vector or tensor: one Inc per entry
            self.components = equations(lhs, rhs, lambda l, r: Inc(
                l, r, subdomain=subdomain, implicit_dims=implicit_dims))
            return
        self.increment = self.rhs
        self.rhs = self.lhs + self.rhs

    def __repr__(self) -> str:
        return f"Inc({self.lhs}, {self.increment})"


class SparseEq(Eq):
    """An injection (``lhs`` the grid field) or interpolation (``lhs`` the sparse function)."""

    def __init__(self, kind, lhs, rhs, sparse, increment=False):
        super().__init__(lhs, rhs)
        self.kind = kind
        self.sparse = sparse
        self.increment = increment   # an interpolation adding to the values there

    def __repr__(self) -> str:
        op = "+=" if self.kind == "inject" or self.increment else "<-"
        return f"{self.kind.capitalize()}({self.lhs} {op} {self.rhs} at {self.sparse.name})"


def _expand_where(expr, target):
    """Expand the derivatives whose expansion contains ``target``; keep the others lazy."""
    if isinstance(expr, Derivative):
        inner = _expand_where(expr.expr, target)
        expanded = evaluate(expr.func(inner, *expr.args[1:]))
        return expanded if expanded.has(target) else expr.func(inner, *expr.args[1:])
    if not expr.args or not expr.has(Derivative):
        return expr
    return expr.func(*[_expand_where(a, target) for a in expr.args])


def solve(eq, target):
    """The expression for ``target`` that makes ``eq`` hold (eq: an Eq or an expression = 0).

    The equation must be linear in ``target`` with a non-zero coefficient. Spatial
    derivatives that do not involve ``target`` stay lazy for the compiler to schedule.
    """
    if isinstance(target, Tensor):
        expr = eq
        if isinstance(eq, Eq):    # Eq(U.dt + grad(U)*U) has the scalar 0 on its right
            zero = not isinstance(eq.rhs, Tensor) and eq.rhs == 0
            expr = eq.lhs if zero else eq.lhs - eq.rhs
        if not isinstance(expr, Tensor) or expr.shape != target.shape:
            raise InvalidEquation(f"solve: the unknown {target!r} is a vector or tensor; the "
                                  "equation must be one of the same shape")
        return target.like(_solve_entries(expr, target))
    if not isinstance(target, DiscreteFunction):
        raise InvalidEquation(f"solve: the unknown must be a Function access such as u.forward, "
                              f"got {target!r}")
    expr = (eq.lhs - eq.rhs) if isinstance(eq, Eq) else sympy.sympify(eq)
    expr = _expand_where(expr, target)
    opaque = {d: sympy.Dummy("d") for d in expr.atoms(Derivative)}
    unknown = sympy.Dummy("unknown")
    flat = expr.xreplace(opaque).xreplace({target: unknown})
    flat = sympy.expand(flat, deep=False, mul=True, multinomial=False, power_exp=False,
                        power_base=False, log=False)
    coeff = sympy.together(sympy.diff(flat, unknown))
    if coeff == 0:
        raise InvalidEquation(f"solve: {target} does not appear in the equation, so there is "
                              "no unique solution; check the unknown (e.g. u.forward)")
    if coeff.has(unknown):
        raise InvalidEquation(f"solve: the equation is not linear in {target}; stencilgen "
                              "solves for unknowns that appear linearly")
    rest = flat.subs(unknown, 0)
    back = {v: k for k, v in opaque.items()}
    return (-rest / coeff).xreplace(back)


def _solve_entries(expr, target):
    """Entry by entry ``solve`` of a vector or tensor equation (zero entries stay zero)."""
    import numpy as np
    out = np.zeros(target.shape, dtype=object)
    for idx in np.ndindex(target.shape):
        if target.entries[idx] != 0:
            out[idx] = solve(expr.entries[idx], target.entries[idx])
    return out
