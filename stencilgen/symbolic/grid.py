"""The Grid: a rectangular, uniformly spaced domain in one to three dimensions."""
from __future__ import annotations

import numpy as np

from .dimensions import (Dimension, SpaceDimension, space_dimension, stepping_dimension,
                         time_dimension)
from .dimensions import time_dimension as time_dimension_of
from .subdomains import attach as attach_subdomains, builtin as builtin_subdomains
from ..distributed.decomposition import SINGLE_PROCESS, Decomposition
from ..errors import InvalidArgument
from ..distributed import mpi

_DIM_NAMES = ("x", "y", "z")
SUPPORTED_DTYPES = (np.float32, np.float64)
#: what a field may hold besides: complex values in two parts of the grid's precision or wider
COMPLEX_DTYPES = (np.complex64, np.complex128)
#: the integer types a Function, TimeFunction or Constant may hold (Devito's counts, masks
#: and factors): stored as such, read into the arithmetic's type, a store truncated as C does
INTEGER_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32)


def as_int(value, what: str, hint: str) -> int:
    """``value`` as an int if it is an integer (numpy integers too, not bools), else an
    InvalidArgument saying ``what`` was wrong and ``hint``, what to pass."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise InvalidArgument(f"{what} is {value!r} ({type(value).__name__}), not an integer; {hint}")


def check_dtype(dtype, owner: str, complex_ok: bool = False) -> np.dtype:
    """The numpy dtype for ``dtype`` if stencilgen supports it (with ``complex_ok``, for a
    field's values, complex64, complex128 and the integer types too), else an
    InvalidArgument."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is not None and dt.type in COMPLEX_DTYPES and not complex_ok:
        raise InvalidArgument(f"{owner}: dtype {dt.name} is complex, but a grid's dtype is "
                              f"that of its coordinates and spacings, which are real; give "
                              f"dtype=numpy.float32 or numpy.float64 here and "
                              f"dtype=numpy.{dt.name} to the Functions that hold complex values")
    values = COMPLEX_DTYPES + INTEGER_DTYPES if complex_ok else ()
    if dt is None or dt.type not in SUPPORTED_DTYPES + values:
        more = (", numpy.float64, numpy.complex64, numpy.complex128 or an integer type "
                "(numpy.int8 to int64, uint8 to uint32)") if complex_ok else " or numpy.float64"
        raise InvalidArgument(f"{owner}: dtype {dtype!r} is not supported; use numpy.float32"
                              f"{more}")
    return dt


def _check_shape(shape, owner: str = "Grid", least: int = 2) -> tuple[int, ...]:
    """``shape`` as a tuple of ints, 1 to 3 of them, each >= ``least``; else an
    InvalidArgument."""
    try:
        entries = tuple(shape) if not isinstance(shape, str) else None
    except TypeError:
        entries = None
    if entries is None:
        raise InvalidArgument(f"{owner}: shape must be a tuple of integers, e.g. "
                              f"Grid(shape=(101, 101)); got {shape!r}")
    entries = tuple(as_int(n, f"{owner}: an entry of shape {entries}", "give whole numbers of "
                           "points, e.g. Grid(shape=(101, 101))") for n in entries)
    if not 1 <= len(entries) <= 3:
        raise InvalidArgument(f"{owner}: shape {entries} has {len(entries)} dimensions; "
                              "stencilgen supports 1, 2 and 3")
    if any(n < least for n in entries):
        raise InvalidArgument(f"{owner}: every dimension needs at least {least} points, got "
                              f"shape {entries}")
    return entries


def _check_dimensions(dimensions, shape, owner: str, implicit: bool) -> tuple:
    """The grid's dimensions: x, y, z by default, else the user's (SpaceDimensions of distinct
    names, or ConditionalDimensions of them with a whole factor, one per entry of shape; any
    Dimension but time for a Function's own)."""
    if dimensions is None:
        return tuple(space_dimension(n) for n in _DIM_NAMES[:len(shape)])
    dims = tuple(dimensions) if isinstance(dimensions, (tuple, list)) else (dimensions,)
    kind = Dimension if implicit else SpaceDimension
    for d in dims:
        if getattr(d, "is_Conditional", False) and not implicit:
            if not isinstance(d.parent, SpaceDimension) or \
                    not isinstance(d.factor, (int, np.integer)) or d.condition is not None:
                raise InvalidArgument(
                    f"{owner}: {d!r} is a ConditionalDimension of {d.parent} with factor "
                    f"{d.factor!r} and condition {d.condition}; a Grid takes those of a "
                    f"SpaceDimension with a whole factor and no condition (every factor-th "
                    f"point: ConditionalDimension('xsub', parent=x, factor=2))")
            continue
        if not isinstance(d, kind) or d.is_Time:
            raise InvalidArgument(f"{owner}: dimensions must be stencilgen "
                                  f"{kind.__name__}s (e.g. SpaceDimension(name='z')), got "
                                  f"{d!r} ({type(d).__name__})")
    if len(dims) != len(shape) or len({d.name for d in dims}) != len(dims):
        raise InvalidArgument(f"{owner}: dimensions {dims} must be {len(shape)} of distinct "
                              f"names, one per entry of shape {shape}")
    if len({getattr(d, "root", d) for d in dims}) != len(dims):
        raise InvalidArgument(f"{owner}: dimensions {dims} subsample one dimension twice; "
                              f"give one per dimension of the grid they are points of")
    taken = {d.name for d in dims} & {"t", "time"}
    if taken:
        raise InvalidArgument(f"{owner}: a space dimension named {taken.pop()!r} would clash "
                              "with the time dimensions (time, t); name it otherwise")
    return dims


def subsampled(d) -> bool:
    """Whether ``d`` is a ConditionalDimension of a space (or plain) dimension: some of the
    points of its parent, which the loops run over."""
    return getattr(d, "is_Conditional", False) and not d.is_Time


class Grid:
    """A uniform grid of ``shape`` points spanning ``extent`` from ``origin`` (Devito's meaning).

    ``extent`` defaults to the unit cube (spacing ``1 / (n - 1)``, as Devito), ``origin`` to zeros.
    ``dimensions`` are x, y, z unless given (SpaceDimensions, kept in order and name; one
    built with ``spacing=Constant(...)`` differentiates with that Constant's value, as
    Devito); ``subdomains`` adds user SubDomains to ``grid.subdomains`` (Devito 4.8's way).
    ``comm`` (an mpi4py communicator; MPI.COMM_WORLD by default where STENCILGEN_MPI is on)
    splits the grid into one block per rank (``topology``: ranks per dimension, chosen when
    not given; see ``stencilgen.distributed.decomposition``).
    """

    implicit = False   # True: the grid of a Function built without one (its shape, dimensions)
                       # or a coarse one: its functions are placed on the Operator's loops
    coarse = False     # a Grid on ConditionalDimensions (Devito's subsampled grid): every
                       # factor-th point of its dimensions' parents, the loops run over those
    given = None       # an implicit grid's: the Grid its Function was built on (some of its
                       # dimensions, or ConditionalDimensions of them), else None
    decomposition = None   # this rank's block where the grid is split over MPI ranks
    subdomain = None     # a Function on a SubDomain: the grid of its points (``of_subdomain``)

    @property
    def distributor(self):
        """Devito's ``grid.distributor``: the grid's ``Decomposition`` over MPI ranks, or on
        one process a ``SingleProcess`` (``is_parallel`` False, ``nprocs`` 1), as Devito's."""
        return self.decomposition if self.decomposition is not None else SINGLE_PROCESS

    def __init__(self, shape, extent=None, origin=None, dimensions=None, dtype=np.float32,
                 subdomains=None, comm=None, topology=None, time_dimension=None, **unknown):
        if time_dimension is not None and time_dimension != time_dimension_of():
            raise InvalidArgument(f"Grid: time_dimension={time_dimension!r}; stencilgen's grids "
                                  f"share one time dimension, {time_dimension_of()} (its "
                                  f"stepping one t), its spacing dt given at apply: pass another "
                                  f"grid's grid.time_dim, or leave time_dimension out")
        if unknown:
            raise InvalidArgument(f"Grid: {', '.join(sorted(unknown))} not supported (Grid takes "
                                  "shape, extent, origin, dimensions, dtype, subdomains, comm, "
                                  "topology and time_dimension)")
        self._setup(shape, extent, origin, dtype, dimensions, "Grid")
        self.coarse = self.implicit = any(map(subsampled, self.dimensions))
        comm = comm if comm is not None else mpi.default_comm()
        if self.coarse and comm is not None:
            if comm.Get_size() > 1:
                raise InvalidArgument("Grid: a grid on ConditionalDimensions is not split "
                                      "over MPI ranks; run it on one rank (comm=None)")
            comm = None
        if comm is not None and any(d.is_Batch for d in self.dimensions) and \
                comm.Get_size() > 1:
            raise InvalidArgument("Grid: a grid with a BatchDimension is not split over MPI "
                                  "ranks; give each rank its own batch (comm=None)")
        if comm is not None:
            self.decomposition = Decomposition.of(self.shape, comm, topology)
            if self.decomposition.size > 1:
                mpi.abort_on_error()
        elif topology is not None:
            raise InvalidArgument("Grid: topology= splits a grid over MPI ranks; give comm= "
                                  "too, or run with STENCILGEN_MPI=1")
        self._subdomains = builtin_subdomains(self)
        if subdomains is not None:
            self._subdomains.update(attach_subdomains(self, subdomains))

    @classmethod
    def of_subdomain(cls, sub, owner: str) -> "Grid":
        """The grid of a Function on SubDomain ``sub`` (Devito's ``Function(grid=sub)``): the
        subdomain's points, on its grid's dimensions and spacing; an Operator loops over
        that grid, the function's values are its own."""
        parent = sub._attached()
        if parent.decomposition is not None and parent.decomposition.size > 1:
            raise InvalidArgument(f"{owner}: a function on a SubDomain of a grid split over "
                                  f"MPI ranks is not supported; use a function on the grid")
        shape = sub.shape
        if any(n < 2 for n in shape):
            raise InvalidArgument(f"{owner}: {sub!r} has shape {shape}; a function on it "
                                  f"needs at least 2 points a dimension")
        h = parent.spacing
        grid = cls.__new__(cls)
        grid._setup(shape, tuple((n - 1) * d for n, d in zip(shape, h)),
                    tuple(o + t[0] * d for o, t, d in zip(parent.origin, sub.thickness, h)),
                    parent.dtype, parent.dimensions, owner)
        grid.subdomain, grid._subdomains = sub, {}
        return grid

    @classmethod
    def of_function(cls, shape, dimensions, dtype, owner: str) -> "Grid":
        """The grid of a Function built without one (Devito's ``Function(shape=,
        dimensions=)``): its shape and dimensions, no geometry of its own."""
        grid = cls.__new__(cls)
        grid.implicit = True
        # one point is a whole function of a Dimension beyond a grid's (one frequency)
        grid._setup(shape, None, None, dtype, dimensions, owner, least=1)
        grid._subdomains = {}
        return grid

    @classmethod
    def of_parents(cls, grids) -> "Grid":
        """The grid an Operator loops over where every function is on a coarse grid of
        ``grids``: their dimensions' parents, ``n * factor`` points along each (Devito's
        default bound, the fewest any function takes), spaced ``h / factor``."""
        first = grids[0]
        shape = tuple(min(g.shape[i] * (g.dimensions[i].factor if subsampled(g.dimensions[i])
                                        else 1) for g in grids) for i in range(first.dim))
        dims = tuple(d.root if subsampled(d) else d for d in first.dimensions)
        factors = [d.factor if subsampled(d) else 1 for d in first.dimensions]
        h = [s / f for s, f in zip(first.spacing, factors)]
        grid = cls.__new__(cls)
        grid._setup(shape, tuple((n - 1) * d for n, d in zip(shape, h)), first.origin,
                    first.dtype, dims, "Operator")
        grid._subdomains = builtin_subdomains(grid)
        return grid

    def _setup(self, shape, extent, origin, dtype, dimensions, owner, least=2):
        self.shape = shape = _check_shape(shape, owner, least)
        self.extent = self._vector("extent", extent, (1.0,) * len(shape))
        if any(e <= 0 for e in self.extent):
            raise InvalidArgument(f"Grid: extent must be positive in every dimension, got {self.extent}")
        self.origin = self._vector("origin", origin, (0.0,) * len(shape))
        self.dtype = check_dtype(dtype, owner).type
        self.dimensions = _check_dimensions(dimensions, shape, owner, self.implicit)
        self.time_dim = time_dimension()
        self.stepping_dim = stepping_dimension()

    def _vector(self, what, value, default):
        if value is None:
            return default
        try:
            vec = tuple(float(v) for v in value)
        except (TypeError, ValueError):
            raise InvalidArgument(f"Grid: {what} must be a tuple of numbers, got {value!r}") from None
        if len(vec) != len(self.shape):
            raise InvalidArgument(f"Grid: {what} {vec} has {len(vec)} entries but shape "
                                  f"{self.shape} has {len(self.shape)}")
        if not np.isfinite(vec).all():
            raise InvalidArgument(f"Grid: {what} {vec} is not finite; give finite numbers")
        return vec

    @property
    def shape_local(self) -> tuple[int, ...]:
        """The points of this rank's block (the whole shape where the grid is not split)."""
        return self.shape if self.decomposition is None else self.decomposition.local_shape

    @property
    def comm(self):
        """The communicator the grid is split over, or None."""
        return None if self.decomposition is None else self.decomposition.comm

    @property
    def dim(self) -> int:
        return len(self.shape)

    @property
    def spacing(self) -> tuple[float, ...]:
        return tuple(e / max(n - 1, 1) for e, n in zip(self.extent, self.shape))

    @property
    def spacing_symbols(self):
        """The spacing symbols (a coarse grid's: its dimensions' roots', as Devito's)."""
        return tuple(d.root.spacing if subsampled(d) else d.spacing for d in self.dimensions)

    @property
    def subdomains(self) -> dict:
        """The subdomains by name: 'domain', 'interior' and those of ``Grid(subdomains=)``
        (as Devito, not those built with ``MySubDomain(grid=grid)``)."""
        return dict(self._subdomains)

    @property
    def interior(self):
        """The domain less one point on every side."""
        return self._subdomains["interior"]

    @property
    def spacing_map(self) -> dict:
        """Spacing symbol -> value, in the grid's dtype (a coarse grid's, as Devito's: the
        root's spacing, ``h / factor``)."""
        return {s: self.dtype(h / (d.factor if subsampled(d) else 1)) for d, s, h in
                zip(self.dimensions, self.spacing_symbols, self.spacing)}

    def __repr__(self) -> str:
        if self.implicit and not self.coarse:
            return f"the grid of shape {self.shape} on dimensions {self.dimensions}"
        split = "" if self.decomposition is None else \
            f", over {self.decomposition.size} ranks as {self.decomposition.dims}"
        return (f"Grid(shape={self.shape}, extent={self.extent}, "
                f"dtype={np.dtype(self.dtype).name}{split})")
