"""Discrete functions on a Grid: Function, TimeFunction and the scalar Constant.

A Function *is* a sympy expression, ``u(t, x, y, z)``: a shift is a substitution of its
arguments (``u.forward`` is ``u(t + dt, x, y, z)``), so derivatives of whole expressions are
plain substitutions too. Each Function gets its own sympy class, which refers weakly to a
``FieldData`` record (the grid, orders, halo and the data) that every application of it holds:
the data lives exactly as long as some expression of the Function does.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field as dc_field

import numpy as np
import sympy
from sympy.core.function import AppliedUndef, UndefinedFunction

from .. import logger as log
from ..user_warnings import warn_user
from ..data import places
from ..data.allocators import DataReference, check_allocator
from .differentiable import Differentiable
from .dimensions import Dimension, SpaceDimension
from ..errors import InvalidArgument
from .grid import Grid, as_int, check_dtype
from .indexing import function_at
from .staggering import CELL, HALF, Staggering, natural_index, staggered_dims
from ..data.distributed_data import DistributedArray
from ..data.storage import Storage
from ..data import precision
from ..ir import dtypes


@dataclass(eq=False)
class FieldData:
    """What a discrete function is: identity (by object), shape, halo and storage."""

    name: str
    grid: Grid
    space_order: int
    dtype: type
    halo: tuple[int, ...]
    time_order: int = 0
    save: int | None = None
    is_time: bool = False
    staggered: tuple = ()          # space dimensions along which values sit at d + h_d/2
    backward: tuple = ()           # those of them where they sit at d - h_d/2 (staggered=-x)
    allocator: object = None       # stencilgen.data.allocators' (DataReference: its array)
    sides: tuple | None = None     # a custom halo's (left, right) points per dimension (the
                                   # arrays hold ``halo``, the larger, each side; the user
                                   # sees these); None: ``halo`` each side
    stagger_given: bool = False    # staggered= was given (even NODE): Devito's two-point rule
    stagger_cell: bool = False     # staggered=CELL: Devito's f.staggered is 1 on every axis
    avg_mode: str = "arithmetic"   # how its values are averaged onto a staggered point
                                   # (Devito's: arithmetic, harmonic, safe_harmonic)
    time_dim: object = None        # a ConditionalDimension the time axis counts (snapshots)
    store: str | None = None       # 16-bit storage format ("float16", "bfloat16"), None: dtype
    scale: float | None = None     # stored = value / scale (a power of two); None: not chosen
    companion: object = None       # compensated=True: the TimeFunction keeping what each
                                   # 16-bit store rounds off
    extra: tuple = ()              # leading Dimensions beyond the grid's, (dimension, size)
                                   # each (Devito's Function(dimensions=(f, x, y)): a frequency
                                   # axis); equations on them run once per index
    zero_box: tuple | None = None  # per dimension (first, last) domain indices of a box where
                                   # the values are zero (``Function.zero_box``); None: none
    _storage: Storage | None = dc_field(default=None, repr=False)

    @property
    def time_size(self) -> int | None:
        if not self.is_time:
            return None
        return self.save if self.save is not None else self.time_order + 1

    @property
    def lead(self) -> tuple[int, ...]:
        """The sizes of the axes before the space ones: the time axis, or the extra ones."""
        return (self.time_size,) if self.is_time else tuple(n for _, n in self.extra)

    @property
    def shape_with_halo(self) -> tuple[int, ...]:
        space = tuple(n + 2 * h for n, h in zip(self.grid.shape_local, self.halo))
        return self.lead + space

    def stagger(self, d) -> sympy.Rational:
        """Where the values sit along ``d``, in spacings from the node (0, 1/2 or -1/2)."""
        if d not in self.staggered:
            return sympy.S.Zero
        return -HALF if d in self.backward else HALF

    @property
    def storage(self) -> Storage:
        """The values, on the host and (after a GPU apply) on the GPU (``storage.py``); a
        ``DataReference``'s array where the Function was given one."""
        if self._storage is None:
            st = Storage(self.name, self.shape_with_halo,
                         precision.host_dtype(self.store, self.dtype), self.halo)
            if isinstance(self.allocator, DataReference):
                st.adopt(self.allocator.adopt(f"Function {self.name!r}", st.shape, st.dtype))
            self._storage = st
        return self._storage

    @property
    def nbytes(self) -> int:
        """Bytes of host data allocated (0 before the first access)."""
        return 0 if self._storage is None else self._storage.nbytes


def _read_only(view: np.ndarray) -> np.ndarray:
    view.flags.writeable = False
    return view


def _check_order(owner: str, value, what: str, allowed: str, valid) -> int:
    """``value`` as an int if it is an integer (not a bool) that ``valid`` accepts."""
    value = as_int(value, f"{owner}: {what}", allowed)
    if not valid(value):
        raise InvalidArgument(f"{owner}: {what}={value!r} is not supported; {allowed}")
    return value


class DiscreteFunction(Differentiable, AppliedUndef):
    """Base of the grid functions; instances are applied sympy functions ``u(x, y, z)``."""

    is_TimeFunction = False
    is_Sparse = False

    def __new__(cls, *args, **kwargs):
        if "_field" in cls.__dict__:
            if kwargs and not args:   # Devito's u.func(name="v"): another one built alike
                return _built_like(cls._field(), cls, kwargs)
            # sympy rebuilding an application (subs, xreplace): args are indices; the record
            # is alive, held by the application rebuilt
            obj = super().__new__(cls, *args, **kwargs)
            if isinstance(obj, DiscreteFunction) and "_record" not in obj.__dict__:
                obj._record = cls._field()
            return obj
        initializer = kwargs.pop("initializer", None)
        record = cls._make_record(*args, **kwargs)
        # the class (a sympy UndefinedFunction, in reference cycles like every class) holds
        # the record weakly, each application strongly: once the user and sympy's cache drop
        # the applications, the data goes at once, without waiting for the cyclic collector
        klass = UndefinedFunction(record.name, bases=(cls,), _field=weakref.ref(record))
        obj = klass(*cls._indices(record))   # the branch above gives it the record
        if initializer is not None:
            _initialize(obj, initializer)
        return obj

    @classmethod
    def _make_record(cls, *args, **kwargs) -> FieldData:
        raise NotImplementedError

    @classmethod
    def _indices(cls, record: FieldData):
        return tuple(d for d, _ in record.extra) + \
            tuple(natural_index(d, record) for d in record.grid.dimensions)

    # -- identity ----------------------------------------------------------------------
    @property
    def field(self) -> FieldData:
        return self.__dict__["_record"]

    @property
    def name(self) -> str:
        return self.field.name

    @property
    def grid(self) -> Grid:
        return self.field.grid

    @property
    def space_order(self) -> int:
        return self.field.space_order

    @property
    def time_order(self) -> int:
        return self.field.time_order

    @property
    def dtype(self):
        return self.field.dtype

    @property
    def halo(self) -> tuple[tuple[int, int], ...]:
        """Devito's halo: (left, right) points per dimension of ``data_with_halo``, the time
        axis (none) included; ``space_order`` each side of a space dimension."""
        space = self.field.sides or tuple((h, h) for h in self.field.halo)
        rest = len(self.field.shape_with_halo) - len(space)
        return ((0, 0),) * rest + space

    @property
    def dimensions(self):
        return tuple(a if isinstance(a, Dimension) else
                     next(s for s in a.free_symbols if isinstance(s, Dimension))
                     for a in self.origin.args)

    @property
    def avg_mode(self) -> str:
        """How its values are averaged onto a point between them (Devito's)."""
        return self.field.avg_mode

    @property
    def staggered(self) -> Staggering:
        """Devito's staggering: per dimension 1 where the values sit half a spacing ahead, else
        0 (all 1 for CELL, time included; () when no staggered= was given)."""
        rec = self.field
        if not rec.stagger_given:
            return Staggering((), ())
        dims = self.dimensions
        return Staggering((1 if rec.stagger_cell else int(2 * rec.stagger(d)) for d in dims),
                          dims)

    @property
    def indices(self):
        return self.args

    @property
    def origin(self):
        """This function at its unshifted indices (``u(t, x)`` for ``u(t + dt, x)``)."""
        return self.func(*self._indices(self.field))

    def __getitem__(self, indices):
        """Devito's index notation: ``u[t + 1, 0, y]`` (see ``stencilgen.symbolic.indexing``)."""
        if self.is_Sparse:
            raise InvalidArgument(f"{self.name}[...]: sparse functions are not indexed; use "
                                  f"{self.name}.data, inject() or interpolate()")
        return function_at(self, indices)

    # -- data --------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.field.lead + self.grid.shape

    @property
    def shape_with_halo(self) -> tuple[int, ...]:
        """Devito's: the shape of ``data_with_halo`` (the whole grid's, on a split one)."""
        return tuple(n + lo + hi for n, (lo, hi) in zip(self.shape, self.halo))

    @property
    def size(self) -> int:
        """Devito's: the number of values held, halos included."""
        return int(np.prod(self.shape_with_halo))

    @property
    def data_with_halo(self) -> np.ndarray:
        """The values, halo included, on the host (copied back from the GPU first where an
        apply left newer values there); writing through it marks the host copy newer. On a
        split grid, this rank's block and its halo, indexed in the global array with halo
        (the blocks' halos overlap their neighbours)."""
        local = self._wrapping(self.field.storage.view())
        sides = getattr(self.field, "sides", None)
        if sides:   # a custom halo: the arrays hold the larger side on both
            lead = (slice(None),) * len(self.field.lead)
            local = local[lead + tuple(slice(h - lo, h + n + hi) for h, n, (lo, hi)
                                       in zip(self.field.halo, self.grid.shape, sides))]
            return self._wrapping(local)
        if self.grid.decomposition is None or self.is_Sparse:   # sparse values: every rank's
            return local
        return self._global(local, self.field.halo)

    def _wrapping(self, view):
        """``view`` wrapping integer time indices where the time axis is a ring buffer."""
        rec = self.field
        if getattr(rec, "is_time", False) and rec.save is None and hasattr(view, "modulo"):
            view.modulo = rec.time_size
        return view

    def _global(self, local, halo):
        """``local`` as a DistributedArray: along space axes it starts at the rank's first
        index in the global array, which has ``halo`` points more each side."""
        dist = self.grid.decomposition
        time = tuple((0, n) for n in self.field.lead)
        return DistributedArray.of(local, time + tuple(
            (lo, n + 2 * h) for lo, n, h in zip(dist.starts, dist.shape, halo)))

    @property
    def shape_local(self) -> tuple[int, ...]:
        """The shape of this rank's block (``shape`` where the grid is not split)."""
        return self.field.lead + self.grid.shape_local

    def _domain(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Where the domain starts in ``data_with_halo``, and its shape (this rank's)."""
        return (0,) * len(self.field.lead) + tuple(self.field.halo), self.shape_local

    @property
    def data(self) -> np.ndarray:
        """A writable view of the domain, the halo hidden (``data_with_halo`` shows it); on a
        split grid this rank's block, indexed in global terms (``distributed_data``)."""
        start, shape = self._domain()
        local = self.field.storage.view()[tuple(slice(a, a + n) for a, n in zip(start, shape))]
        if self.grid.decomposition is None:
            return self._wrapping(local)
        return self._global(local, (0,) * len(self.field.halo))

    @data.setter
    def data(self, value):
        if places.foreign(value):
            places.write_device(self.field.storage, *self._domain(), value, self.name)
            return
        view = self.data
        arr = np.asarray(value)
        if arr.dtype.kind not in ("biufc" if view.dtype.kind == "c" else "biuf") \
                and arr.dtype != view.dtype:
            what = "numbers" if view.dtype.kind == "c" else "real numbers (or build the " \
                "function with dtype=numpy.complex64 for complex values)"
            raise InvalidArgument(f"{self.name}.data: got data of dtype {arr.dtype}; "
                                  f"give {what} (stored as {view.dtype.name})")
        try:
            np.broadcast_shapes(arr.shape, self.shape)
        except ValueError:
            raise InvalidArgument(f"{self.name}.data: got shape {arr.shape} but the domain has "
                                  f"shape {self.shape} (data_with_halo: "
                                  f"{self.field.shape_with_halo})") from None
        if np.broadcast_shapes(arr.shape, self.shape) != self.shape:
            raise InvalidArgument(f"{self.name}.data: shape {arr.shape} does not fit the "
                                  f"domain shape {self.shape}")
        view[...] = arr

    data_domain = data

    # -- storage ------------------------------------------------------------------------
    @property
    def storage_format(self) -> str:
        """What each value is stored as: "float32", "float64", "float16" or "bfloat16"."""
        return self.field.store or np.dtype(self.dtype).name

    @property
    def storage_scale(self) -> float:
        """``data`` holds the field divided by this power of two (16-bit storage keeps its
        values in range so; 1.0 otherwise, and until a first apply chooses it)."""
        return 1.0 if self.field.scale is None else self.field.scale

    @property
    def compensation(self):
        """The TimeFunction of compensated stepping (what the stores rounded off), or None."""
        return self.field.companion

    @property
    def data_unscaled(self) -> np.ndarray:
        """The domain's values in the arithmetic's type, the scale (and a compensation)
        applied: a copy (``data`` is the stored array)."""
        out = np.asarray(self.data, dtype=self.dtype)
        if self.field.companion is not None:
            out = out + np.asarray(self.field.companion.data, dtype=self.dtype)
        return out * self.dtype(self.storage_scale)

    @property
    def data_ro_domain(self) -> np.ndarray:
        """A read-only view of the domain (Devito's name)."""
        return _read_only(self.data)

    @property
    def data_ro_with_halo(self) -> np.ndarray:
        return _read_only(self.data_with_halo)

    @property
    def device_data(self):
        """The domain's values on the GPU, without a copy: a view for ``cupy.asarray``,
        ``torch.from_dlpack`` or ``jax.dlpack`` (``stencilgen.data.interop.DeviceArray``). The
        GPU copy is made (or brought up to date) first, and counts as written: the host's
        next read copies it back."""
        return places.device_view(self.field.storage, *self._domain())

    @property
    def device_data_with_halo(self):
        """``device_data`` with the halo."""
        return places.device_view(self.field.storage, None, None)

    def zero(self):
        """Set every value, halo included, to zero where the values are (on the GPU: there,
        with no copy through the host; a field never written stays unallocated)."""
        self.field.storage.zero()

    def release_device(self):
        """Copy the values back to the host if the GPU has newer ones, and free the GPU copy
        (the next GPU apply makes it again)."""
        self.field.storage.release()

    def _sympystr(self, printer):
        return f"{self.name}({', '.join(printer.doprint(a) for a in self.args)})"


#: Devito's ways of averaging a function's values onto a point between them (``avg_mode``):
#: the mean; the inverse of the mean of the inverses; the same with an inverse of a value
#: below 1e-12 (zero, negative) taken as zero (``relocation.SafeInv``)
AVERAGES = ("arithmetic", "harmonic", "safe_harmonic")


class Function(DiscreteFunction):
    """A field on the grid, constant in time (velocity, density...), Devito's ``Function``."""

    @classmethod
    def _make_record(cls, name=None, grid=None, space_order=1, dtype=None, shape=None,
                     dimensions=None, staggered=None, storage=None, storage_scale=None,
                     avg_mode="arithmetic", allocator=None, **unknown) -> FieldData:
        owner = f"{cls.__name__} {name!r}"
        if avg_mode not in AVERAGES:
            raise InvalidArgument(f"{owner}: avg_mode={avg_mode!r}; give one of "
                                  f"{', '.join(repr(m) for m in AVERAGES)}")
        dtype, store = precision.storage_format(storage, dtype, owner)
        grid = _on_subdomain(grid, owner)
        extra, shape, dimensions = _extra_dimensions(owner, grid, shape, dimensions)
        grid = _own_grid(owner, grid, shape, dimensions,
                         None if dtype is None else dtypes.part_type(dtype))
        _common_checks(owner, name, grid, unknown)
        space_order, sides = _custom_halo(owner, space_order, grid)
        so = _check_order(owner, space_order, "space_order",
                          "use 0, 1 or an even integer from 2 to 32 (the halo is as wide)",
                          lambda v: v in (0, 1) or (2 <= v <= 32 and v % 2 == 0))
        dtype = check_dtype(dtype if dtype is not None else grid.dtype, owner, True).type
        if store is not None and dtype is not np.float32:
            raise InvalidArgument(f"{owner}: {store} storage computes in float32, but the grid "
                                  f"is {np.dtype(dtype).name}; give dtype=numpy.float32")
        moved, back = staggered_dims(grid, staggered, owner)
        halo = tuple(max(lr) for lr in sides) if sides else \
            tuple(0 if d.is_Batch else so for d in grid.dimensions)
        allocator = check_allocator(owner, allocator)
        if isinstance(allocator, DataReference) and (sides or store or grid.decomposition):
            raise InvalidArgument(f"{owner}: DataReference with a custom halo, 16-bit storage "
                                  f"or a split grid; give it an integer space_order, float "
                                  f"storage and one process")
        return FieldData(name=name, grid=grid, space_order=so, dtype=dtype, extra=extra,
                         halo=halo, sides=sides, allocator=allocator,
                         staggered=moved, backward=back,
                         stagger_given=staggered is not None, stagger_cell=staggered is CELL,
                         avg_mode=avg_mode, store=store,
                         scale=precision.check_scale(storage_scale, store, owner))


    @property
    def zero_box(self) -> tuple | None:
        """Per dimension (first, last) domain indices of a box where the values are zero (a
        sponge's damping inside its layer), or None. Declared before an Operator is built,
        its nests that read the function run at run time without the terms it zeroes inside
        the box (``ir/zero_split``; the box may change between applies, no rebuild); each
        apply after the values were written checks that they are zero there."""
        return self.field.zero_box

    @zero_box.setter
    def zero_box(self, box):
        owner = f"{type(self).__name__} {self.name!r}"
        if box is None:
            self.field.zero_box = None
            return
        if self.field.is_time or self.field.extra or self.grid.decomposition is not None:
            raise InvalidArgument(f"{owner}: a zero box is for a Function on the grid alone "
                                  f"(no time axis, no extra dimensions, one process)")
        try:
            pairs = tuple((int(lo), int(hi)) for lo, hi in box)
        except (TypeError, ValueError):
            raise InvalidArgument(f"{owner}: zero_box={box!r}; give (first, last) domain "
                                  f"indices per dimension, e.g. ((10, 89), (10, 89))") from None
        shape = self.grid.shape
        if len(pairs) != len(shape) or any(not 0 <= lo <= hi < n
                                           for (lo, hi), n in zip(pairs, shape)):
            raise InvalidArgument(f"{owner}: zero_box={box!r} is not a box inside the domain "
                                  f"{shape}; give (first, last) with 0 <= first <= last < n "
                                  f"for each of its {len(shape)} dimensions")
        self.field.zero_box = pairs


class TimeFunction(Function):
    """A field that evolves in time: a buffer of time_order+1 slots, or ``save`` slots."""

    is_TimeFunction = True

    @classmethod
    def _make_record(cls, name=None, grid=None, space_order=1, time_order=1, save=None,
                     time_dim=None, dtype=None, staggered=None, compensated=False,
                     **unknown) -> FieldData:
        owner = f"TimeFunction {name!r}"
        grid = _on_subdomain(grid, owner)
        if not isinstance(grid, Grid) or "shape" in unknown or "dimensions" in unknown:
            raise InvalidArgument(f"{owner}: a TimeFunction needs grid= (a stencilgen Grid of "
                                  "its space dimensions: Grid(shape=..., dimensions=...)) and "
                                  "takes no shape= or dimensions=; a series in time alone "
                                  "(Devito's TimeFunction(shape=(nt,), dimensions=(time,))) "
                                  "has no space for an Operator to loop over: keep it in a "
                                  "NumPy array or a one-point SparseTimeFunction")
        record = super()._make_record(name=name, grid=grid, space_order=space_order,
                                      dtype=dtype, staggered=staggered, **unknown)
        record.time_order = _check_order(owner, time_order, "time_order", "use 0, 1 or 2",
                                         lambda v: v in (0, 1, 2))
        if save is not None:
            # as Devito, any number of steps (one snapshot, save=1, too): a run reading or
            # writing past them is refused at apply
            record.save = _check_order(owner, save, "save",
                                       "use None or a number of time steps >= 1",
                                       lambda v: v >= 1)
        record.time_dim = _check_time_dim(owner, time_dim, grid)
        record.is_time = True
        if compensated not in (True, False):
            raise InvalidArgument(f"{owner}: compensated must be True or False")
        if compensated and record.store is None:
            raise InvalidArgument(f"{owner}: compensated=True keeps what 16-bit stores round "
                                  "off; give storage=numpy.float16 or 'bfloat16' too")
        if compensated:
            record.companion = TimeFunction(
                name=f"{name}_rounding", grid=grid, space_order=space_order, time_order=time_order,
                save=save, time_dim=time_dim, staggered=staggered, storage=record.store)
        return record

    @classmethod
    def _indices(cls, record):
        time = record.grid.time_dim if record.save is not None else record.grid.stepping_dim
        return (record.time_dim or time,) + super()._indices(record)

    @property
    def time_dim(self):
        return self.origin.args[0]

    def _shifted(self, steps: int):
        t = self.time_dim
        args = list(self.args)
        args[0] = args[0] + steps * t.spacing
        return self.func(*args)

    @property
    def forward(self):
        return self._shifted(1)

    @property
    def backward(self):
        return self._shifted(-1)

    @property
    def save(self):
        return self.field.save


def _on_subdomain(grid, owner):
    """``grid=`` a SubDomain (Devito's functions on subdomains): the grid of its points."""
    from .subdomains import SubDomain
    if isinstance(grid, SubDomain):
        return Grid.of_subdomain(grid, owner)
    return grid


def _extra_dimensions(owner, grid, shape, dimensions) -> tuple:
    """(extra, shape, dimensions): a Function on a Grid with Dimensions before the grid's
    (Devito's ``Function(grid=grid, dimensions=(f, *grid.dimensions), shape=(n, *grid.shape))``)
    keeps them as ``extra`` ((dimension, size) each) and the rest for the grid."""
    if not isinstance(grid, Grid) or shape is None or dimensions is None:
        return (), shape, dimensions
    dims = tuple(dimensions) if isinstance(dimensions, (tuple, list)) else (dimensions,)
    sizes = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    k = len(dims) - grid.dim
    if k <= 0 or dims[k:] != grid.dimensions or len(sizes) != len(dims):
        return (), shape, dimensions
    lead = dims[:k]
    if any(isinstance(d, SpaceDimension) or getattr(d, "is_Time", False) or
           getattr(d, "is_Conditional", False) or d in grid.dimensions for d in lead):
        return (), shape, dimensions
    extra = tuple((d, as_int(n, f"{owner}: the size along {d}", "give a whole number"))
                  for d, n in zip(lead, sizes[:k]))
    if any(n < 1 for _, n in extra):
        raise InvalidArgument(f"{owner}: sizes {sizes[:k]} along {lead}; give at least 1")
    return extra, sizes[k:], dims[k:]


def _own_grid(owner, grid, shape, dimensions, dtype):
    """The grid of a Function: ``grid``, or for Devito's ``Function(shape=, dimensions=)``
    (with or without a grid) one of its own shape and dimensions (``Grid.of_function``),
    which an Operator places on the loop dimensions it shares with other functions."""
    if shape is None and dimensions is None:
        return grid
    if shape is None or dimensions is None:
        raise InvalidArgument(f"{owner}: give shape= and dimensions= together (a Function "
                              "without a grid), or grid= alone")
    if grid is not None and not isinstance(grid, Grid):
        return grid   # _common_checks says what is wrong
    if grid is not None:
        dims = tuple(dimensions) if isinstance(dimensions, (tuple, list)) else (dimensions,)
        if dims == grid.dimensions and tuple(shape) == grid.shape:
            return grid
        for d, n in zip(dims, tuple(shape)):
            if getattr(d, "is_Conditional", False) and d.root in grid.dimensions:
                continue   # some points of a grid dimension: the Operator checks its size
            if d not in grid.dimensions or grid.shape[grid.dimensions.index(d)] != n:
                raise InvalidArgument(f"{owner}: dimension {d} with {n} points is not one of "
                                      f"{grid!r}'s; use its dimensions and sizes, or no grid")
        dtype = grid.dtype if dtype is None else dtype
    # an integer function's own grid is a real one (its coordinates): the values' type aside
    real = np.float32 if dtype is None or np.dtype(dtype).kind in "iub" else dtype
    own = Grid.of_function(shape, dimensions, real, owner)
    own.given = grid
    return own


def _check_time_dim(owner, time_dim, grid):
    """A ConditionalDimension of time with a factor (snapshots: ``save=`` of them, or a
    buffer of ``time_order + 1`` without), or None for the grid's own."""
    if time_dim is None or time_dim in (grid.time_dim, grid.stepping_dim):
        return None
    if not getattr(time_dim, "is_Conditional", False) or not time_dim.parent.is_Time \
            or time_dim.factor is None:
        raise InvalidArgument(
            f"{owner}: time_dim must be the grid's time dimension or a ConditionalDimension "
            f"of it with a factor (ConditionalDimension('t_sub', parent=grid.time_dim, "
            f"factor=4)), got {time_dim!r}")
    # save=None: a buffer of time_order + 1 snapshots, its slot the snapshot's index modulo
    # their number (Devito allocates them too, but indexes them without the modulo)
    return time_dim


def _initialize(f, initializer):
    """Devito's ``initializer=``: a callable given the values with their halo (or, if it
    cannot take them, the domain's), or an array copied in (the halo's shape or the
    domain's)."""
    if callable(initializer):
        try:
            initializer(f.data_with_halo)
        except ValueError:
            initializer(f.data)
        return
    if not isinstance(initializer, (np.ndarray, list, tuple)):
        raise InvalidArgument(f"{f.name}: initializer must be a callable or an array, got "
                              f"{type(initializer).__name__}")
    values = np.asarray(initializer)
    for target in (f.data_with_halo, f.data):
        if values.shape == target.shape or values.ndim == 0:
            target[...] = values
            return
    raise InvalidArgument(f"{f.name}: initializer of shape {values.shape} fits neither the "
                          f"values with their halo {f.data_with_halo.shape} nor the domain "
                          f"{f.data.shape}")


def _built_like(rec, cls, changes: dict):
    """A new Function or TimeFunction built as ``rec``'s was, but for ``changes`` (Devito's
    ``f.func(name="g")``); its values its own (zeros)."""
    kind = next((b for b in cls.__mro__ if b in (TimeFunction, Function)), None)
    if kind is None or getattr(rec, "extra", ()) or rec.companion is not None:
        raise InvalidArgument(f"{rec.name}.func({', '.join(changes)}=...): rebuilds plain "
                              f"Functions and TimeFunctions; build this one anew")
    own = rec.grid.implicit and not rec.grid.coarse   # built with shape= and dimensions=
    grid = rec.grid.given if own else rec.grid
    kw = dict(name=rec.name, dtype=rec.dtype, storage=rec.store,
              space_order=(rec.space_order, rec.sides) if rec.sides else rec.space_order)
    if own:
        kw.update(shape=rec.grid.shape, dimensions=rec.grid.dimensions, grid=grid)
    else:
        kw["grid"] = rec.grid
    if rec.stagger_given:
        kw["staggered"] = Staggering(
            (1 if rec.stagger_cell else int(2 * rec.stagger(d)) for d in rec.grid.dimensions),
            rec.grid.dimensions)
    if kind is TimeFunction:
        kw.update(time_order=rec.time_order, save=rec.save, time_dim=rec.time_dim)
    else:
        kw["avg_mode"] = rec.avg_mode
    return kind(**{**kw, **changes})


def _custom_halo(owner, space_order, grid):
    """Devito's ``space_order=(order, left, right)`` or ``(order, ((l, r), ...))``, and
    ``(order, (left, right))`` for every dimension (which Devito 4.8.23 refuses): the order
    of the derivatives and the halo's points before and after the domain per dimension
    (None: ``order`` each side)."""
    if not isinstance(space_order, (tuple, list)):
        return space_order, None
    example = "space_order=(4, 2, 3), (4, (2, 3)) or (4, ((2, 3), (1, 1)))"
    spec = tuple(space_order)
    def ints(values):
        return all(isinstance(v, (int, np.integer)) for v in values)
    if len(spec) == 3 and ints(spec):
        sides = ((int(spec[1]), int(spec[2])),) * grid.dim
    elif len(spec) == 2 and isinstance(spec[1], (tuple, list)) and len(spec[1]) == 2 \
            and ints(spec[1]):
        sides = ((int(spec[1][0]), int(spec[1][1])),) * grid.dim
    elif len(spec) == 2 and isinstance(spec[1], (tuple, list)) and \
            len(spec[1]) == grid.dim and all(isinstance(p, (tuple, list)) and len(p) == 2
                                             for p in spec[1]):
        sides = tuple((int(lo), int(hi)) for lo, hi in spec[1])
    else:
        raise InvalidArgument(f"{owner}: space_order={space_order!r}; give an integer, or "
                              f"the order and the halo's (left, right) points: {example} "
                              f"(one pair per dimension of the grid, {grid.dim})")
    if any(v < 0 for lr in sides for v in lr):
        raise InvalidArgument(f"{owner}: space_order={space_order!r} has a negative halo")
    if grid.decomposition is not None:
        raise InvalidArgument(f"{owner}: a custom halo ({space_order!r}) on a grid split over "
                              f"MPI ranks; give an integer space_order there")
    return spec[0], sides


def _common_checks(owner, name, grid, unknown):
    if unknown:   # Devito ignores them (its own tests pass time_order1=): so do we, aloud
        names = ", ".join(f"{k}={v!r}" for k, v in sorted(unknown.items()))
        warn_user(f"{owner}: ignored unknown argument(s) {names}; check the spelling "
                      f"(Devito ignores them too)")
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidArgument(f"{owner}: name must be a valid identifier, got {name!r}")
    if not isinstance(grid, Grid):
        raise InvalidArgument(f"{owner}: grid must be a stencilgen Grid, got "
                              f"{type(grid).__name__} (or give shape= and dimensions=)")


class Constant(Differentiable, sympy.Symbol):
    """A scalar known at run time (``apply(c=2.0)`` overrides its value)."""

    is_Constant = True   # Devito's flag

    def __new__(cls, name, value=0.0, dtype=np.float32):
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgument(f"Constant: name must be a valid identifier, got {name!r}")
        dt = check_dtype(dtype, f"Constant {name!r}", True).type
        # a complex value has no real assumption: sympy would simplify it as real
        obj = sympy.Symbol.__xnew__(cls, name, **({} if dtypes.is_complex(dt) else {"real": True}))
        obj.value = value
        obj.dtype = dt
        return obj

    @property
    def data(self):
        return self.dtype(self.value)

    @data.setter
    def data(self, value):
        self.value = value

    def __getnewargs_ex__(self):
        return ((self.name, self.value, self.dtype), {})
