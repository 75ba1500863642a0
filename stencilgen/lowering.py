"""Lowering: symbolic equations -> indexed equations on arrays.

Two passes: ``expand_derivatives`` turns lazy derivatives into weighted shifts, turning the
argument of an outer space derivative that holds a space derivative into a temporary (nested
staggered derivatives, cross derivatives); ``index`` turns ``u(t + dt, x + 2*h_x)`` into
``u[t1, x + 2]`` and collects the parameters the generated code needs.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import sympy

from .derivatives import Derivative, expand
from .dimensions import stepping_dimension, time_dimension
from .equations import Eq
from .errors import HaloError, InvalidEquation
from .functions import Constant, DiscreteFunction, FieldData, Function
from .ir.nodes import POINT, ArrayParam, ScalarParam, TimeIndex


@dataclass
class IndexedEq:
    """An equation on arrays: ``lhs`` an Indexed store, ``rhs`` over Indexed reads."""

    lhs: sympy.Indexed
    rhs: sympy.Expr
    time_dependent: bool = False
    extent: tuple = ()         # iteration widened by (lo, hi) per dimension (hoisted arrays)
    sparse_kind: str | None = None   # "inject" / "interpolate" for sparse operations
    sparse: str | None = None        # the sparse array visited


class TempFunction(Function):
    """A grid array the compiler introduces (gradient temporaries, hoisted invariants)."""

    @classmethod
    def _make_record(cls, name=None, grid=None, dtype=None) -> FieldData:
        return FieldData(name=name, grid=grid, space_order=2, dtype=dtype,
                         halo=(0,) * grid.dim)


def check_equations(eqs) -> tuple:
    """Flatten and validate a list of Eq; return (eqs, grid)."""
    flat = []
    for e in (eqs if isinstance(eqs, (list, tuple)) else [eqs]):
        if isinstance(e, (list, tuple)):
            flat.extend(e)
        else:
            flat.append(e)
    if not flat:
        raise InvalidEquation("Operator: no equations given")
    from .equations import SparseEq
    from .sparse import Injection, Interpolation
    for i, e in enumerate(flat):
        if isinstance(e, Injection):
            flat[i] = SparseEq("inject", e.field, e.expr, e.sparse)
        elif isinstance(e, Interpolation):
            flat[i] = SparseEq("interpolate", e.sparse.origin, e.expr, e.sparse)
    grids = {}
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
        for f in (e.lhs.atoms(DiscreteFunction) | e.rhs.atoms(DiscreteFunction)):
            grids.setdefault(id(f.grid), (f.grid, f.name))
    if len(grids) > 1:
        names = ", ".join(f"{n!r} on {g!r}" for g, n in grids.values())
        raise InvalidEquation(f"Operator: the equations mix Functions of different Grids ({names}); "
                              "build every Function of one Operator on the same Grid")
    return flat, next(iter(grids.values()))[0]


def _check_lhs(eq: Eq):
    lhs = eq.lhs
    if not isinstance(lhs, DiscreteFunction):
        raise InvalidEquation(f"{eq}: the left-hand side must be a Function or TimeFunction "
                              f"access such as u.forward, got {lhs}")
    dims = lhs.grid.dimensions
    if tuple(lhs.args[-len(dims):]) != dims:
        raise InvalidEquation(f"{eq}: the left-hand side must be written at the grid point "
                              f"{dims}, not at shifted indices {lhs.args[-len(dims):]}")


# -- derivatives --------------------------------------------------------------------------

def _axis_offset(arg, dim) -> sympy.Rational:
    off = sympy.expand((arg - dim) / dim.spacing)
    if not off.is_Rational:
        raise InvalidEquation(f"index {arg} is not {dim} plus a multiple of {dim.spacing}")
    return off


def _space_offsets(access: DiscreteFunction) -> dict:
    dims = access.grid.dimensions
    return {d: _axis_offset(a, d) for d, a in zip(dims, access.args[-len(dims):])}


def _has_space_derivative(expr) -> bool:
    return any(not d.dim.is_Time for d in expr.atoms(Derivative))


class _Expander:
    """Expands derivatives; the argument of a space derivative that itself holds a space
    derivative becomes a zero-halo temporary, so the outer derivative always sees the inner
    expression as zero outside the domain (the discrete -G^T B G form, exactly self-adjoint)."""

    def __init__(self, grid, names):
        self.grid = grid
        self.names = names
        self.new_eqs: list[Eq] = []

    def temp(self, prefix="r"):
        for i in itertools.count():
            name = f"{prefix}{i}"
            if name not in self.names:
                self.names.add(name)
                return TempFunction(name=name, grid=self.grid, dtype=self.grid.dtype)

    def __call__(self, expr):
        if isinstance(expr, Derivative):
            inner = self(expr.expr)
            if not expr.dim.is_Time and _has_space_derivative(expr.expr):
                t = self.temp()
                self.new_eqs.append(Eq(t, inner))
                inner = t
            return expand(expr, inner)
        if isinstance(expr, DiscreteFunction) or not expr.args or not expr.has(Derivative):
            return expr
        return expr.func(*[self(a) for a in expr.args])


def expand_derivatives(eqs, grid, names) -> list[Eq]:
    """Every Eq with derivatives expanded; temporaries' equations precede their users."""
    out = []
    for eq in eqs:
        ex = _Expander(grid, names)
        rhs = ex(eq.rhs)
        out.extend(ex.new_eqs)
        out.append(eq.with_rhs(rhs))
    return out


# -- indexing -----------------------------------------------------------------------------

@dataclass
class Registry:
    """The parameters an operator's code takes, collected while indexing."""

    grid: object
    arrays: dict = field(default_factory=dict)       # FieldData -> ArrayParam
    functions: dict = field(default_factory=dict)    # FieldData -> DiscreteFunction (origin)
    scalars: dict = field(default_factory=dict)      # name -> ScalarParam
    constants: dict = field(default_factory=dict)    # name -> Constant
    time_indices: dict = field(default_factory=dict)  # (shift, modulo) -> TimeIndex
    reach: dict = field(default_factory=dict)         # array name -> max |offset| per dim

    def array(self, f: DiscreteFunction) -> ArrayParam:
        rec = f.field
        if rec not in self.arrays:
            for other in self.arrays:
                if other.name == rec.name:
                    raise InvalidEquation(f"two different functions are both named {rec.name!r}; "
                                          "give every Function of an Operator its own name")
            sparse = bool(f.is_Sparse)
            self.arrays[rec] = ArrayParam(
                name=rec.name, dtype=rec.dtype, ndim=1 if sparse else rec.grid.dim,
                time_size=rec.time_size, modulo=rec.is_time and rec.save is None and not sparse,
                temporary=isinstance(f, TempFunction), sparse=sparse)
            self.functions[rec] = f.origin
        return self.arrays[rec]

    def time_index(self, shift: int, modulo: int | None):
        if modulo is None:
            return time_dimension() + shift
        key = (shift % modulo, modulo)
        if key not in self.time_indices:
            sym = sympy.Symbol(f"t{len(self.time_indices)}", integer=True)
            self.time_indices[key] = TimeIndex(sym, key[0], modulo)
        return self.time_indices[key].symbol


def index(eq: Eq, reg: Registry) -> IndexedEq:
    """``eq`` on arrays: accesses become ``Indexed``; halos are checked."""
    grid = reg.grid
    dims = grid.dimensions
    mapping = {}
    time_dependent = False
    # sorted: the parameter order (and so the source text and its cache key) must not depend
    # on set iteration order, which changes between processes
    found = eq.lhs.atoms(DiscreteFunction) | eq.rhs.atoms(DiscreteFunction)
    for f in sorted(found, key=lambda a: (a.name, sympy.default_sort_key(a))):
        arr = reg.array(f)
        if arr.sparse:
            mapping[f] = _sparse_access(f, arr, reg)
            time_dependent |= arr.time_size is not None
            continue
        offs = _space_offsets(f)
        idx = []
        if arr.time_size is not None:
            time_dependent = True
            tdim = f.args[0]
            root = tdim.free_symbols & {stepping_dimension(), time_dimension()}
            base = root.pop() if root else time_dimension()
            k = _axis_offset(f.args[0], base)
            if not k.is_Integer:
                raise InvalidEquation(f"{f}: time index {f.args[0]} is not a whole number of steps")
            idx.append(reg.time_index(int(k), arr.time_size if arr.modulo else None))
        for axis, d in enumerate(dims):
            o = offs[d]
            if not o.is_Integer:
                raise InvalidEquation(
                    f"{f} is read at {d}{o:+} {d.spacing}, between grid points: evaluate "
                    f"staggered derivatives with x0= so that the result lands on a node")
            o = int(o)
            if arr.temporary:
                reach = reg.reach.setdefault(arr.name, [0] * len(dims))
                reach[axis] = max(reach[axis], abs(o))
            elif abs(o) > f.halo[axis]:
                raise HaloError(
                    f"{f.name} is read at {d}{o:+d} but its halo is {f.halo[axis]} points wide "
                    f"(space_order={f.space_order}): the stencil is wider than the halo; raise "
                    f"space_order to at least {2 * abs(o)} or lower the derivatives' fd_order")
            idx.append(d + o)
        mapping[f] = arr.base[tuple(idx)]
    lhs = mapping[eq.lhs]
    rhs = eq.rhs.xreplace(mapping).xreplace({stepping_dimension(): time_dimension()})
    _collect_scalars(rhs, reg, eq)
    kind = getattr(eq, "kind", None)
    if kind is not None:
        reg.array(eq.sparse)
        for d in reg.grid.dimensions:
            reg.scalars[f"o_{d.name}"] = ScalarParam(f"o_{d.name}", np.float64)
            reg.scalars[d.spacing.name] = ScalarParam(d.spacing.name, reg.grid.dtype)
    return IndexedEq(lhs, _plain(rhs), time_dependent, sparse_kind=kind,
                     sparse=eq.sparse.name if kind else None)


def _sparse_access(f, arr, reg):
    """``src(time + k*dt, p_src)`` -> ``src[time + k, p]``."""
    idx = []
    if arr.time_size is not None:
        k = _axis_offset(f.args[0], time_dimension())
        if not k.is_Integer:
            raise InvalidEquation(f"{f}: time index {f.args[0]} is not a whole number of steps")
        idx.append(time_dimension() + int(k))
    if f.args[-1] != f.origin.args[-1]:
        raise InvalidEquation(f"{f}: a sparse function is read at its own points only")
    return arr.base[tuple(idx) + (POINT,)]


def _plain(expr):
    from .differentiable import plain
    return plain(expr)


def _collect_scalars(rhs, reg: Registry, eq):
    skip = set(reg.grid.dimensions) | {time_dimension()}
    skip |= {ti.symbol for ti in reg.time_indices.values()}
    skip |= {a.base.label for a in rhs.atoms(sympy.Indexed)} | {POINT}
    for s in rhs.free_symbols:
        if isinstance(s, sympy.Indexed) or s in skip:
            continue
        if isinstance(s, Constant):
            reg.scalars[s.name] = ScalarParam(s.name, s.dtype)
            reg.constants[s.name] = s
        elif s.name == "dt" or any(s == d.spacing for d in reg.grid.dimensions):
            reg.scalars[s.name] = ScalarParam(s.name, reg.grid.dtype)
        else:
            raise InvalidEquation(f"{eq}: the symbol {s} is neither a grid dimension, a spacing, "
                                  "dt nor a Constant; use stencilgen.Constant for run-time scalars")


def finalize_temporaries(reg: Registry):
    """Give each temporary the halo its readers reach."""
    for rec, arr in reg.arrays.items():
        if arr.temporary:
            rec.halo = tuple(reg.reach.get(arr.name, [0] * rec.grid.dim))


__all__ = ["IndexedEq", "Registry", "TempFunction", "check_equations", "expand_derivatives",
           "index", "finalize_temporaries"]
