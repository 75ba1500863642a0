"""Off-grid points: sources and receivers (Devito's SparseFunction / SparseTimeFunction).

A sparse function holds values at ``npoint`` physical coordinates. ``inject`` spreads an
expression onto a grid field with multilinear weights; ``interpolate`` samples a grid
expression at the points with the same weights, so the two are exact adjoints.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy

from ..data import places
from .dimensions import Dimension
from ..errors import InvalidArgument
from .functions import DiscreteFunction, FieldData, _check_order, _common_checks
from .grid import check_dtype
from ..ir import dtypes


class SparseDimension(Dimension):
    """The point index of a sparse function."""


class Coordinates:
    """``src.coordinates.data``: an (npoint, ndim) float64 array of physical positions."""

    def __init__(self, owner: str, npoint: int, ndim: int):
        self._owner = owner
        self._data = np.zeros((npoint, ndim), dtype=np.float64)

    @property
    def data(self) -> np.ndarray:
        return self._data

    @data.setter
    def data(self, value):
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != self._data.shape:
            raise InvalidArgument(
                f"{self._owner}: coordinates of shape {arr.shape} given, expected "
                f"(npoint, ndim) = {self._data.shape}")
        self._data[...] = arr


@dataclass(eq=False)
class SparseData(FieldData):
    """A sparse function's record: the number of points and their coordinates."""

    npoint: int = 0
    nt: int | None = None
    coordinates: Coordinates | None = None
    point: Dimension | None = None   # the point dimension given (Devito's dimensions=)
    support: int = 0                 # precomputed: nodes per dimension (0: multilinear)
    coefficients: "Given | None" = None   # precomputed: (npoint, ndim, support) weights
    gridpoints: "Given | None" = None     # precomputed: (npoint, ndim) cells, if given

    @property
    def shape_with_halo(self) -> tuple[int, ...]:
        lead = (self.nt,) if self.nt is not None else tuple(n for _, n in self.extra)
        return lead + (self.npoint,)

    @property
    def time_size(self):
        return self.nt


class SparseFunction(DiscreteFunction):
    """Values at off-grid points, constant in time (Devito's ``SparseFunction``)."""

    is_Sparse = True

    @classmethod
    def _make_record(cls, name=None, grid=None, npoint=None, coordinates=None, dtype=None,
                     space_order=None, nt=None, dimensions=None, shape=None,
                     **unknown) -> SparseData:
        owner = f"{cls.__name__} {name!r}"
        _common_checks(owner, name, grid, unknown)
        point, extra = None, ()
        if dimensions is not None or shape is not None:
            point, npoint, nt, extra = _own_axes(cls, owner, grid, dimensions, shape, npoint,
                                                 nt)
        npoint = _check_order(owner, npoint, "npoint", "give the number of points (>= 1)",
                              lambda v: v >= 1)
        if not cls.is_TimeFunction:
            nt = None   # Devito's SparseFunction takes nt and ignores it: no time axis
        if nt is not None:
            nt = _check_order(owner, nt, "nt", "give the number of time samples (>= 1)",
                              lambda v: v >= 1)
        dtype = check_dtype(dtype if dtype is not None else grid.dtype, owner, True).type
        shared = isinstance(coordinates, Coordinates)   # another's (Devito shares them)
        if shared and coordinates.data.shape != (npoint, grid.dim):
            raise InvalidArgument(f"{owner}: the coordinates given hold "
                                  f"{coordinates.data.shape[0]} points of "
                                  f"{coordinates.data.shape[1]} dimensions, not npoint={npoint} "
                                  f"of {grid.dim}")
        rec = SparseData(name=name, grid=grid, space_order=2, dtype=dtype, halo=(),
                         npoint=npoint, nt=nt, is_time=nt is not None, extra=extra,
                         coordinates=coordinates if shared else
                         Coordinates(owner, npoint, grid.dim), point=point)
        if coordinates is not None and not shared:
            rec.coordinates.data = coordinates
        return rec

    @classmethod
    def _indices(cls, record):
        p = record.point or SparseDimension(f"p_{record.name}", integer=True)
        lead = (record.grid.time_dim,) if record.nt is not None else \
            tuple(d for d, _ in record.extra)
        return lead + (p,)

    @property
    def npoint(self) -> int:
        return self.field.npoint

    @property
    def coordinates(self) -> Coordinates:
        return self.field.coordinates

    @property
    def data(self) -> np.ndarray:
        return self.data_with_halo

    def _domain(self):
        """A sparse function has no halo: its values start at 0 and fill its array."""
        return (0,) * len(self.shape), self.shape

    @data.setter
    def data(self, value):
        if places.foreign(value):
            places.write_device(self.field.storage, *self._domain(), value, self.name)
            return
        arr = np.asarray(value)
        if arr.dtype.kind not in ("biufc" if dtypes.is_complex(self.dtype) else "biuf"):
            raise InvalidArgument(f"{self.name}.data: got dtype {arr.dtype}; give real numbers "
                                  f"(or build it with dtype=numpy.complex64 for complex values)")
        try:
            self.data_with_halo[...] = arr
        except ValueError:
            axes = "(nt, npoint)" if self.is_TimeFunction else \
                "(rows, npoint)" if self.field.extra else "(npoint,)"
            raise InvalidArgument(f"{self.name}.data: shape {arr.shape} does not fit "
                                  f"{self.data_with_halo.shape} {axes}") from None

    @property
    def shape(self):
        return self.field.shape_with_halo

    def inject(self, field, expr, implicit_dims=None):
        """``[Injection]``: add ``expr`` (at each point) into ``field`` with multilinear
        weights; a tuple of fields takes one expression each, or the same one (Devito's);
        ``implicit_dims``: ConditionalDimensions of time it runs under."""
        fields, exprs = _tuple(field), _tuple(expr)
        if len(exprs) == 1:
            exprs *= len(fields)
        if len(exprs) != len(fields):
            raise InvalidArgument(f"{self.name}.inject: {len(fields)} fields and {len(exprs)} "
                                  f"expressions; give one expression, or one per field")
        for f in fields:
            if not isinstance(f, DiscreteFunction) or f.is_Sparse:
                raise InvalidArgument(f"{self.name}.inject: field must be a grid Function "
                                      f"access such as u.forward, got {f!r}")
        return [Injection(self, f, e, _implicit(implicit_dims))
                for f, ex in zip(fields, exprs) for e in self._rows(sympy.sympify(ex))]

    def _rows(self, expr) -> list:
        """``expr``, or with a Dimension before the points one copy a row of it, that
        Dimension (a value in ``expr``, ``p.indices[0]``) replaced by the row's index."""
        if not self.field.extra:
            return [expr]
        d, n = self.field.extra[0]
        return [expr.xreplace({d: sympy.Integer(k)}) for k in range(n)]

    def interpolate(self, expr, increment=False, implicit_dims=None):
        """An ``Interpolation``: store the multilinear interpolation of ``expr`` at each point
        (``increment=True``: add it to the values there), an equation for ``Operator``; lists
        take it with ``+``, as Devito's."""
        expr = sympy.sympify(expr)
        if self.field.extra:   # one interpolation a row, each written at its row
            p = self.indices[-1]
            return [Interpolation(self, e, bool(increment), at=self.func(k, p),
                                  implicit_dims=_implicit(implicit_dims))
                    for k, e in enumerate(self._rows(expr))]
        return Interpolation(self, expr, bool(increment),
                             implicit_dims=_implicit(implicit_dims))


def _implicit(dims) -> tuple:
    """``implicit_dims`` as a tuple of Dimensions."""
    dims = () if dims is None else _tuple(dims)
    for d in dims:
        if not isinstance(d, Dimension):
            raise InvalidArgument(f"implicit_dims must hold Dimensions (ConditionalDimensions "
                                  f"of time), got {d!r}")
    return dims


def _tuple(value) -> tuple:
    """One field or expression, or a tuple or list of them, as a tuple (Devito's as_tuple)."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _own_axes(cls, owner, grid, dimensions, shape, npoint, nt):
    """Devito's ``SparseFunction(dimensions=(p,), shape=(npoint,))`` (a time series's
    ``(time, p)``, ``(nt, npoint)``): the point dimension, npoint and nt they give."""
    timed = cls.is_TimeFunction
    want = "(time, p) and shape (nt, npoint)" if timed else \
        "(p,) and shape (npoint,), or (d, p) and (n, npoint) with one Dimension d before the points"
    dims, sizes = _tuple(dimensions), _tuple(shape)
    lead = len(dims) - 1 - timed   # a Dimension before the points (Devito's custom layouts)
    fits = len(dims) == len(sizes) and lead in ((0, 1) if not timed else (0,)) and \
        all(isinstance(d, Dimension) for d in dims)
    if fits and timed:
        fits = dims[0] == grid.time_dim and not dims[1].is_Time
    if fits and lead:
        fits = not dims[0].is_Time and dims[0] not in grid.dimensions
    if not fits or not all(isinstance(n, (int, np.integer)) and n >= 1 for n in sizes):
        raise InvalidArgument(f"{owner}: dimensions={dimensions!r}, shape={shape!r}; give "
                              f"dimensions {want} (a sparse function with more dimensions "
                              f"is not supported)")
    if npoint is not None and npoint != sizes[-1]:
        raise InvalidArgument(f"{owner}: npoint={npoint} but shape {sizes} has {sizes[-1]} "
                              f"points; give one of them, or both the same")
    if timed and nt is not None and nt != sizes[0]:
        raise InvalidArgument(f"{owner}: nt={nt} but shape {sizes} has {sizes[0]} samples")
    extra = ((dims[0], int(sizes[0])),) if lead else ()
    return dims[-1], int(sizes[-1]), (int(sizes[0]) if timed else nt), extra


class SparseTimeFunction(SparseFunction):
    """Time series at off-grid points, ``data[time, point]`` (Devito's ``SparseTimeFunction``)."""

    is_TimeFunction = True

    @classmethod
    def _make_record(cls, name=None, grid=None, npoint=None, nt=None, coordinates=None,
                     dtype=None, time_order=None, **kwargs) -> SparseData:
        # Devito's time_order only orders .dt of a sparse series, which stencilgen does not
        # take: any order it accepts is accepted
        if time_order is not None and time_order not in (1, 2):
            raise InvalidArgument(f"SparseTimeFunction {name!r}: time_order={time_order!r}; "
                                  "use 1 or 2")
        shape = kwargs.get("shape")
        if nt is None and isinstance(shape, (tuple, list)) and len(shape) == 2:
            nt = shape[0]   # Devito's dimensions=(time, p), shape=(nt, npoint)
        if nt is None:
            raise InvalidArgument(f"SparseTimeFunction {name!r}: give nt, the number of time "
                                  "samples")
        return super()._make_record(name=name, grid=grid, npoint=npoint, nt=nt,
                                    coordinates=coordinates, dtype=dtype, **kwargs)

    @property
    def nt(self) -> int:
        return self.field.nt

    def _time_index(self, value, what: str):
        """A ``u_t``/``p_t`` as an index: ``time`` or ``t`` plus whole steps (Devito's
        ``t + 1``, read as ``t + dt``) or plus multiples of dt."""
        value = sympy.sympify(value)
        for d in (self.grid.time_dim, self.grid.stepping_dim):
            if value.has(d):
                shift = sympy.simplify(value - d)
                if shift.is_Integer:
                    return d + shift * d.spacing
                if (shift / d.spacing).is_Integer:
                    return value
        raise InvalidArgument(f"{self.name}: {what}={value} is not time (or t) plus a whole "
                              f"number of steps, e.g. {what}=time + 1")

    def inject(self, field, expr, u_t=None, p_t=None, implicit_dims=None):
        """``SparseFunction.inject``, ``u_t`` the time index of the field written (in place
        of its own, ``t`` or ``time``), ``p_t`` the sample of this function injected
        (Devito's)."""
        fields, exprs = _tuple(field), _tuple(expr)
        time = self.grid.time_dim
        if u_t is not None:
            at = self._time_index(u_t, "u_t")
            fields = [f.subs({time: at, self.grid.stepping_dim: at}) for f in fields]
        if p_t is not None:
            at = self._time_index(p_t, "p_t")
            exprs = [sympy.sympify(e).subs({time: at}) for e in exprs]
        return super().inject(tuple(fields), tuple(exprs), implicit_dims)

    def interpolate(self, expr, u_t=None, p_t=None, increment=False, implicit_dims=None):
        """``SparseFunction.interpolate``, ``u_t`` the time index the expression is taken at
        (in place of ``time`` and ``t``), ``p_t`` the sample it is stored into (Devito's)."""
        expr = sympy.sympify(expr)
        if u_t is not None:
            grid, at = self.grid, self._time_index(u_t, "u_t")
            expr = expr.subs({grid.time_dim: at, grid.stepping_dim: at})
        term = super().interpolate(expr, increment, implicit_dims)
        if p_t is not None:
            term.at = self.origin.subs({self.grid.time_dim: self._time_index(p_t, "p_t")})
        return term


class Given:
    """``f.gridpoints`` and ``f.interpolation_coeffs`` of a precomputed sparse function: the
    values given, ``.data`` (read at every apply, so they may be changed between runs)."""

    def __init__(self, data: np.ndarray):
        self._data = data

    @property
    def data(self) -> np.ndarray:
        return self._data


class PrecomputedSparseFunction(SparseFunction):
    """Devito's ``PrecomputedSparseFunction``: points whose interpolation weights are given.
    Per point its cell (``gridpoints``, (npoint, ndim) node indices, or the cell of its
    ``coordinates``) and per dimension the weights of ``r`` nodes, from r/2 - 1 before that
    cell to r/2 after (``interpolation_coeffs``, (npoint, ndim, r); Devito's ``r`` may also
    be half of that, the radius); a node's weight is the product of its dimensions'. Nodes up
    to r/2 beyond the domain are in the halo, which must be as wide."""

    @classmethod
    def _make_record(cls, name=None, grid=None, npoint=None, r=None, gridpoints=None,
                     coordinates=None, interpolation_coeffs=None, **kwargs) -> SparseData:
        owner = f"{cls.__name__} {name!r}"
        if gridpoints is None and coordinates is None:
            raise InvalidArgument(f"{owner}: give gridpoints= (the (npoint, ndim) cells of the "
                                  f"points) or coordinates=")
        if interpolation_coeffs is None:
            raise InvalidArgument(f"{owner}: give interpolation_coeffs=, the weights of "
                                  f"shape (npoint, ndim, r)")
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r <= 0:
            raise InvalidArgument(f"{owner}: r={r!r}; give the nodes per dimension, a "
                                  f"positive even integer")
        coeffs = np.asarray(interpolation_coeffs, dtype=np.float64)
        n = coeffs.shape[-1] if coeffs.ndim == 3 else None
        nodes = n if n in (r, 2 * r) else None
        dim = getattr(grid, "dim", None)
        if nodes is None or nodes % 2 or coeffs.shape[:2] != (npoint, dim):
            raise InvalidArgument(f"{owner}: interpolation_coeffs of shape {coeffs.shape}; "
                                  f"give (npoint, ndim, r) = ({npoint}, {dim}, {r}) with r even")
        cells = None
        if gridpoints is not None:
            cells = np.asarray(gridpoints)
            # whole numbers given as floats are cast, as Devito does
            whole = cells.dtype.kind in "iu" or (
                cells.dtype.kind == "f" and np.all(np.isfinite(cells)) and
                np.array_equal(cells, np.round(cells)))
            if cells.shape != (npoint, dim) or not whole:
                raise InvalidArgument(f"{owner}: gridpoints of shape {cells.shape} "
                                      f"({cells.dtype}); give ({npoint}, {dim}) whole numbers, "
                                      f"the first node of each point per dimension")
            cells = cells.astype(np.int64)
            coordinates = np.asarray(grid.origin) + cells * np.asarray(grid.spacing)
        rec = super()._make_record(name=name, grid=grid, npoint=npoint,
                                   coordinates=coordinates, **kwargs)
        rec.support = nodes
        rec.coefficients = Given(coeffs.astype(dtypes.part_type(rec.dtype)))   # real weights
        rec.gridpoints = None if cells is None else Given(cells.astype(np.int32))
        return rec

    @property
    def r(self) -> int:
        return self.field.support

    @property
    def interpolation_coeffs(self) -> Given:
        return self.field.coefficients

    @property
    def gridpoints(self) -> Given | None:
        return self.field.gridpoints


class PrecomputedSparseTimeFunction(PrecomputedSparseFunction, SparseTimeFunction):
    """Devito's ``PrecomputedSparseTimeFunction``: a ``PrecomputedSparseFunction``'s points
    with a time series each, ``data[time, point]``."""


def first_nodes(f) -> np.ndarray:
    """A precomputed sparse function's "coords" argument: per point and dimension the first
    of its nodes, then their weights (float64, (npoint, ndim, 1 + r))."""
    rec, grid = f.field, f.grid
    if rec.gridpoints is not None:
        cells = rec.gridpoints.data
    else:
        cells = np.floor((rec.coordinates.data - np.asarray(grid.origin))
                         / np.asarray(grid.spacing))
    first = cells - (rec.support // 2 - 1)
    return np.ascontiguousarray(np.concatenate(
        [first[..., None].astype(np.float64), rec.coefficients.data.astype(np.float64)],
        axis=2))


class _Term:
    """An injection or interpolation joins equation lists with ``+`` and evaluates to itself,
    as Devito's do."""

    def __radd__(self, other):
        return other + [self] if isinstance(other, list) else NotImplemented

    def __add__(self, other):   # term + [eqs], and term + term (rec_term += rec2.interpolate)
        return [self] + list(other) if isinstance(other, (list, _Term)) else NotImplemented

    def __iter__(self):   # eqs += rec.interpolate(expr=u)
        yield self

    @property
    def evaluate(self) -> list:
        """The equations this stands for: itself."""
        return [self]


@dataclass
class Injection(_Term):
    """``field += w_corner * expr`` at the 2**ndim grid nodes around each point."""

    sparse: SparseFunction
    field: DiscreteFunction
    expr: sympy.Expr
    implicit_dims: tuple = ()


@dataclass
class Interpolation(_Term):
    """``sparse[time, p] = sum_corner w_corner * expr(corner)`` (``+=`` with ``increment``;
    ``at``: the sample written, ``sparse[time, p]`` unless given)."""

    sparse: SparseFunction
    expr: sympy.Expr
    increment: bool = False
    at: sympy.Expr | None = None
    implicit_dims: tuple = ()


def _plain(values) -> str:
    """A point or a corner as plain numbers, ``(1.7, -0.3)``, not numpy scalars' reprs."""
    return "(" + ", ".join(f"{float(v):.6g}" for v in values) + ")"


def check_coordinates(f: SparseFunction):
    """Every point inside the grid and finite; otherwise an error naming the point."""
    grid = f.grid
    coords = f.coordinates.data
    lo = np.array(grid.origin)
    hi = lo + np.array(grid.extent)
    bad_nan = np.flatnonzero(~np.isfinite(coords).all(axis=1))
    if bad_nan.size:
        p = int(bad_nan[0])
        raise InvalidArgument(f"{f.name}: point {p} has a non-finite coordinate "
                              f"{_plain(coords[p])}; set {f.name}.coordinates.data[{p}]")
    tol = 1e-9 * np.maximum(np.abs(hi), 1.0)
    outside = np.flatnonzero(((coords < lo - tol) | (coords > hi + tol)).any(axis=1))
    if outside.size:
        p = int(outside[0])
        raise InvalidArgument(
            f"{f.name}: point {p} at {_plain(coords[p])} lies outside the domain "
            f"{_plain(lo)} .. {_plain(hi)} ({outside.size} point(s) outside); move it "
            "inside the grid")
