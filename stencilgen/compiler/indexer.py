"""Names and indices, the lowering's last stage: ``register_names`` gives every user object
its C name; ``index_equations`` turns ``u(t + dt, x + 2*h_x)`` into ``u[t1, x + 2]`` and
collects what the generated code takes (arrays, scalars, time slots, subsamplings) as the
``Bindings`` of its parameters."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import sympy

from ..symbolic import conditions
from ..symbolic.differentiable import plain
from ..symbolic.dimensions import Dimension, bound_symbol, stepping_dimension, time_dimension
from ..symbolic.equations import Eq, SparseEq
from ..errors import HaloError, InvalidEquation
from ..symbolic.functions import Constant, DiscreteFunction
from ..ir.nodes import (ArrayParam, IndexedEq, LoopDim, Quotient, ScalarParam, Stencils, TimeIndex)
from ..symbolic.indexing import GridIndex
from ..symbolic.grid import subsampled
from ..ir.names import NameRegistry
from ..ir import dtypes
from .expansion import TempFunction
from .placement import looped
from .regions import Regions


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


def _loop_dim(d, names: NameRegistry) -> LoopDim:
    c = names.cname(d)
    # a function's own SubDimension (built without a Grid) loops under its parent's bounds,
    # as Devito names them (x_m, x_M)
    user = d.root.name if getattr(d, "is_Sub", False) else d.name
    return LoopDim(symbol=sympy.Symbol(c, integer=True), user=user,
                   size=names.fresh(f"{c}_size"), lower=names.fresh(f"{c}_m"),
                   upper=names.fresh(f"{c}_M"), spacing=names.fresh(f"h_{c}"),
                   origin=names.fresh(f"o_{c}"), exact=getattr(d, "is_Batch", False))

class _Indexer(Regions):
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
            if subsampled(d) and d.factor is not None:
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
        conditional = {looped(d): d for d in own if subsampled(d)}
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


__all__ = ["Bindings", "bound_value", "fixed_indices", "index_equations", "register_names"]
