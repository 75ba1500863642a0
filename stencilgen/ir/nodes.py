"""IR node types: plain data that every pass reads and returns anew, and printers only print.

Expressions inside are sympy trees over ``Indexed`` array accesses whose indices are the loop
counters plus integer offsets (a time-slot symbol first); every symbol carries the C name the
Operator's name registry gave it, so a printer writes names as they are.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass, field

import numpy as np
import sympy


@dataclass(frozen=True)
class LoopDim:
    """A space dimension of the grid: its loop counter and the C names of its bounds."""

    symbol: sympy.Symbol   # the loop counter, in expressions and in the source
    user: str              # the user's name of the dimension (apply's x_m / x_M)
    size: str              # parameter: points of the domain along it
    lower: str             # parameter: first point to compute (x_m)
    upper: str             # parameter: last point to compute (x_M)
    spacing: str           # scalar: grid spacing (h_x)
    origin: str            # scalar: physical coordinate of the first point (sparse kernels)
    first: str | None = None   # split grid (MPI): parameter, global index of this rank's
                               # first point; ``size`` is then the points of its block
    exact: bool = False        # a batch's copies: a sparse point sits on a node along it
                               # (its nearest), never spread between two

    @property
    def name(self) -> str:
        return self.symbol.name


@dataclass(frozen=True)
class Exchange:
    """Halos filled from the neighbouring ranks before kernel ``before`` runs (split grids):
    per item an array, the time index of the slot (None: no time axis), the directions
    (-1, 0 or +1 per dimension) its reads reach into and how far they reach per dimension
    (the points moved: a halo may be wider than the stencils read, as Devito's is)."""

    hook: int
    before: str
    items: tuple[tuple[str, object, tuple, tuple[int, ...]], ...]


@dataclass(frozen=True)
class ArrayLayout:
    """Where an array's elements lie: decided once, by the layout pass, for every backend.

    Elements are ``vec[origin + sum(index_k * stride_k)]``; the names are the source's
    variables, the values sympy expressions over parameter symbols. ``padding`` pads the
    innermost axis beyond the halo; ``alignment`` (bytes) is what the row starts are aligned to.
    """

    vec: str                                  # parameter: pointer to the allocation
    halo: tuple[str, ...]                     # parameters: halo width per space axis
    strides: tuple[tuple[str, sympy.Expr], ...]   # per index (time first), innermost last
    origin: tuple[str, sympy.Expr]            # offset of the first domain point
    count: tuple[str, sympy.Expr]             # elements in the allocation
    npoint: str | None = None                 # sparse: parameter, number of points
    coords: str | None = None                 # sparse: parameter, (npoint, ndim) coordinates
    device_coords: str | None = None          # sparse: the coordinates' copy on a GPU
    nt: str | None = None                     # saved or sampled time axis: parameter, its length
    sizes: tuple = ()                         # per space axis, None (the loop's size) or a
                                              # parameter: the array's own points along it
    padding: tuple[int, ...] = ()
    alignment: int = 0


@dataclass(frozen=True)
class ArrayParam:
    """An array argument: a user function's buffer or a compiler temporary.

    Halo widths and sizes are run-time arguments, never baked into the source, so one build
    serves any grid size and future domain decompositions.
    """

    name: str                      # C name of the array (its first domain point)
    user: str                      # the user's name (apply overrides, messages)
    dtype: type
    ndim: int
    time_size: int | None = None   # slots of the time axis as built (None: none); see layout.nt
    modulo: bool = False           # time slot = (time + k) % time_size (buffered TimeFunction)
    temporary: bool = False        # allocated by the Operator, invisible to the user
    sparse: bool = False           # point values (npoint,) or (nt, npoint): no halo, no grid axes
    halo: tuple[int, ...] = ()     # widths the code may read: the function's, or a temporary's reach
    reach: tuple[int, ...] = ()    # the farthest the code reads it from a point it computes, per
                                   # dimension (a function standing in for it needs this halo)
    split: bool = False            # one block per MPI rank, indexed in global terms (its origin
                                   # moved back by the rank's first index)
    axes: tuple[int, ...] = ()     # the loop dimensions it spans where fewer than all (strides 0
                                   # along the others: a Function without a grid, e.g. c(x))
    factors: tuple = ()            # per loop dimension, None or the factor parameter its index
                                   # is divided by (a function on a subsampling
                                   # ConditionalDimension: its own size along it)
    layout: ArrayLayout | None = None
    store: str | None = None       # a 16-bit storage format (STORAGE_FORMATS): loads widen to
                                   # ``dtype``, stores round to nearest; None: stored as dtype
    scale: sympy.Expr | None = sympy.S.One   # stored = value / scale: a power of two, or a
                                   # "scale" scalar's symbol; None: a temporary's, from its eq
    offsets: tuple = ()            # a function on a SubDomain: per loop dimension the points
                                   # before its first (its own sizes along every one)
    extra: int = 0                 # the size of a leading axis beyond the grid's (a Function on
                                   # Dimension f of frequencies, say), read at constant indices
    support: int = 0               # sparse: 0 multilinear (coordinates); r > 0 precomputed, r
                                   # nodes a dimension (per point and dimension the "coords"
                                   # hold its first node, then its r weights)
    zero: bool = False             # zero on a box given at run time (``Function.zero_box``)

    @property
    def base(self) -> sympy.IndexedBase:
        return sympy.IndexedBase(self.name)

    def coords_width(self, ndim: int) -> int:
        """Values of the "coords" parameter per point."""
        return ndim * (1 + self.support) if self.support else ndim


@dataclass(frozen=True)
class ScalarParam:
    """A scalar argument: the time step, a grid spacing or origin, a Constant."""

    name: str
    dtype: type
    role: tuple    # what the Operator binds: ("dt",), ("spacing", axis), ("origin", axis), ("constant", user name)
    parts: tuple[str, ...] = ()   # a complex scalar: the two real arguments (real, imaginary
                                  # part) it comes in by, a complex value by value having no
                                  # portable calling convention through ctypes


@dataclass(frozen=True)
class TimeIndex:
    """A time-slot variable of the time loop: ``symbol = (time + shift) % modulo``; ``offsets``
    are the signed time offsets the equations wrote for it (``u.backward`` is -1, not 2)."""

    symbol: sympy.Symbol
    shift: int
    modulo: int
    offsets: tuple[int, ...] = ()


@dataclass(frozen=True)
class Subsampling:
    """A ConditionalDimension's factor: the run-time index parameter ``factor``, bound from
    the dimension called ``user``; where functions are indexed by the dimension, the time
    loop's local ``symbol = time / factor`` (C integer division) is their time index."""

    factor: str
    user: str
    symbol: sympy.Symbol | None = None
    constant: str | None = None    # the Constant the factor is (apply may override it by name)
    start: int = 0                 # the first step its condition keeps (Devito indexes from
                                   # it: symbol = (time - start) / factor)


#: the 16-bit formats an array may be stored in while its arithmetic runs in ``dtype``
STORAGE_FORMATS = ("float16", "bfloat16")


def element_size(a) -> int:
    """Bytes of one stored element of array ``a``."""
    return 2 if a.store else int(np.dtype(a.dtype).itemsize)


class Rounded(sympy.Function):
    """``x`` rounded to nearest in a 16-bit storage format and widened back: what a store
    keeps of ``x`` (compensated stepping stores the difference)."""

    nargs = 1
    fmt = ""


class RoundedFloat16(Rounded):
    fmt = "float16"


class RoundedBfloat16(Rounded):
    fmt = "bfloat16"


ROUNDED = {"float16": RoundedFloat16, "bfloat16": RoundedBfloat16}


class Remainder(sympy.Function):
    """``a % b`` of non-negative integers (C's ``%``): the test of a subsampling factor."""

    nargs = 2
    is_integer = True


class Quotient(sympy.Function):
    """``a / b`` of non-negative integers (C's integer ``/``): the index of a function on a
    ConditionalDimension with a factor, along its parent."""

    nargs = 2
    is_integer = True


@dataclass(frozen=True)
class IndexedEq:
    """An equation on arrays: ``lhs`` an Indexed store, ``rhs`` over Indexed reads."""

    lhs: sympy.Indexed
    rhs: sympy.Expr
    time_dependent: bool = False
    extent: tuple = ()               # iteration widened by (lo, hi) per dimension (hoisted arrays)
    fixed: tuple = ()                # per dimension: the one index it runs at, or None (all)
    anchors: tuple = ()              # per dimension: None, or the bound both ends count from
    sparse_kind: str | None = None   # "inject" / "interpolate" for sparse operations
    sparse: str | None = None        # the sparse array visited
    stagger: tuple = ()              # inject: where the target's values sit per dimension (cells)
    increment: bool = False          # interpolate: add to the sample instead of storing it
    region: tuple = ()               # sparse: per dimension (left, right) points of the domain
                                     # it visits no nodes in (functions on a subdomain)
    reduces: tuple = ()              # an Inc summing over these loop axes (its function spans
                                     # the others): its nest runs in order, but for
                                     # ``outer_sum``
    when: sympy.Basic | None = None  # condition on the time step: the step runs it or not
    guard: sympy.Basic | None = None  # condition at each point (reads arrays, loop counters)

    def outer_sum(self, ndim: int) -> int:
        """How many outermost loops of ``ndim`` the equation sums over, where they are all it
        sums over and the innermost is not one (a batch's shots summed into a model-sized
        gradient): the points of the other loops are then independent, each running the
        summed ones in order; 0 otherwise."""
        k = len(self.reduces)
        return k if k and set(self.reduces) == set(range(k)) and k < ndim else 0

    def beyond(self, ndim: int) -> tuple[tuple[int, int], ...]:
        """Points past the domain's (lo, hi) ends the equation computes, per dimension: its
        widening where positive; an extent anchored to one end stays inside the domain."""
        if not self.extent:
            return ((0, 0),) * ndim
        anchors = self.anchors or (None,) * ndim
        return tuple((0, 0) if a else (max(lo, 0), max(hi, 0))
                     for (lo, hi), a in zip(self.extent, anchors))


@dataclass(frozen=True)
class Stencils:
    """The indexed equations of an Operator with the arrays, scalars and loops they use."""

    eqs: tuple[IndexedEq, ...]
    dims: tuple[LoopDim, ...]
    time: sympy.Symbol                # the time loop counter
    point: sympy.Symbol               # the point index of sparse loops
    arrays: tuple[ArrayParam, ...]
    scalars: tuple[ScalarParam, ...]
    time_indices: tuple[TimeIndex, ...]
    dtype: type
    time_step: int = 1                # -1: time runs from time_M down to time_m (.backward)
    subsamplings: tuple[Subsampling, ...] = ()

    @property
    def loop_symbols(self) -> tuple:
        return tuple(d.symbol for d in self.dims)

    @property
    def has_time_loop(self) -> bool:
        """Whether any array has a time axis, or any equation runs at every time step (its
        ConditionalDimension counts time steps, or it names time in ``implicit_dims``)."""
        return any(a.time_size is not None for a in self.arrays) or any(
            e.time_dependent for e in self.eqs)


@dataclass(frozen=True)
class Assign:
    """``lhs = rhs``; a Symbol lhs declares a local of type ``dtype``, an Indexed lhs stores."""

    lhs: sympy.Expr
    rhs: sympy.Expr
    dtype: type | None = None

    @property
    def is_local(self) -> bool:
        return isinstance(self.lhs, sympy.Symbol)


@dataclass(frozen=True)
class Section:
    """A timed part of the program: its slot in the timers array and its labels."""

    timer: int
    clock: str        # local holding the section's start time
    function: str     # name of the section's own function, where a backend makes one


@dataclass(frozen=True)
class ZeroBox:
    """The run-time box where array ``array`` is zero: per dimension of its own (the loop
    dimensions ``axes``) the index parameters of its first and last point
    (``Function.zero_box``; an empty box where none is given)."""

    array: str
    axes: tuple[int, ...]
    lower: tuple[str, ...]
    upper: tuple[str, ...]


@dataclass(frozen=True)
class ZeroSplit:
    """A nest's body where arrays it reads are zero (``ir/zero_split``): ``body`` without the
    terms they zero, valid over the region that starts, per dimension, at the largest of
    ``lower``'s (parameter, offset) sums and ends at the smallest of ``upper``'s (none: the
    whole dimension, which no box bounds); the nest's own body elsewhere."""

    body: tuple
    arrays: tuple[str, ...]
    lower: tuple[tuple[tuple[str, int], ...], ...]
    upper: tuple[tuple[tuple[str, int], ...], ...]


@dataclass(frozen=True)
class Kernel:
    """One loop nest over the grid: its iteration space, statements and access summary."""

    name: str
    dims: tuple                                   # loop counters, outermost first
    body: tuple[Assign, ...]
    extent: tuple[tuple[int, int], ...] = ()      # iteration widened by (lo, hi) points per dim
    fixed: tuple = ()                             # per dim: the one index it runs at, or None
    reads: dict = field(default_factory=dict, compare=False)   # array -> offsets read
    writes: dict = field(default_factory=dict, compare=False)
    flops: int = 0                                # per point
    bytes: int = 0                                # compulsory traffic per point
    stage: str = "time"                           # "before", "time" or "after"
    section: Section | None = None
    sequential: str | None = None                 # why the nest must run in order, if it must
    directions: tuple[int, ...] = ()              # in order: +1 up or -1 down, per dimension
    reduces: int = 0                              # a sum over the innermost this many loops
                                                  # (an Inc into fewer dimensions, sequential)
    outer: int = 0                                # a sum over the outermost this many loops
                                                  # (``IndexedEq.outer_sum``): each point of
                                                  # the others runs them in order
    anchors: tuple = ()                           # per dim: None, "lower" or "upper" (below)
    when: sympy.Basic | None = None               # run at the steps where it holds (host test)
    guard: sympy.Basic | None = None              # run the body at the points where it holds
    fusion: object = None                         # ir/fusion.Fusion: a producer nest fused in
    split: ZeroSplit | None = None                # another body inside a run-time zero box
    steps: object = None                          # ir/steps.Steps: two time steps a pass

    @property
    def widened(self) -> tuple[tuple[int, int], ...]:
        return self.extent or tuple((0, 0) for _ in self.dims)

    def span(self, depth: int) -> tuple[tuple[str, int], tuple[str, int]]:
        """First and last point of loop ``depth`` as (bound, offset), the bound "lower" (x_m)
        or "upper" (x_M): (x_m - lo, x_M + hi) for a widening (lo, hi); a subdomain's left or
        right end counts both from one bound (anchor), e.g. (x_m, x_m + n - 1)."""
        lo, hi = self.widened[depth]
        anchor = self.anchors[depth] if self.anchors else None
        return (anchor or "lower", -lo), (anchor or "upper", hi)

    def fixed_at(self, depth: int):
        """The one index loop ``depth`` runs at (a boundary equation), or None."""
        return self.fixed[depth] if self.fixed else None

    @property
    def is_sparse(self) -> bool:
        return False


@dataclass(frozen=True)
class SparseLocals:
    """Names of the locals of sparse loops: per dimension the position in cells, the cell,
    the fraction and the corner counter; the corner weight and the interpolation sum."""

    position: tuple[str, ...]
    cell: tuple[str, ...]
    fraction: tuple[str, ...]
    corner: tuple[str, ...]
    weight: str
    total: str


@dataclass(frozen=True)
class SparseKernel:
    """Injection into or interpolation from a grid at a sparse function's points.

    For each point p the 2**ndim surrounding nodes are visited with multilinear weights;
    inside ``expr`` (and ``target`` for injection) the loop counters name that node.
    """

    name: str
    kind: str                      # "inject" or "interpolate"
    sparse: str                    # the sparse array whose points are visited
    point: sympy.Symbol            # the point index
    dims: tuple
    target: sympy.Indexed          # inject: grid access at the node; interpolate: sparse[.., p]
    expr: sympy.Expr
    flops: int = 0                 # per point (all corners)
    bytes: int = 0
    stage: str = "time"
    reads: dict = field(default_factory=dict, compare=False)
    writes: dict = field(default_factory=dict, compare=False)
    section: Section | None = None
    stagger: tuple = ()            # inject: the target's values sit this many cells ahead
    increment: bool = False        # interpolate: the sample += the sum (Devito's increment)
    region: tuple = ()             # per dimension (left, right) points of the domain it visits
                                   # no nodes in (functions on a subdomain), else ()
    when: sympy.Basic | None = None   # run at the steps where it holds (host test)
    sequential = None              # points run in parallel (injection adds atomically)
    outer = 0                      # no sum over outer loops
    fusion = None                  # no producer nest is fused into it
    split = None                   # nor split at run time
    guard = None                   # no test at each point
    when = None                    # runs at every step
    guard = None                   # and at every point

    @property
    def is_sparse(self) -> bool:
        return True


@dataclass(frozen=True)
class Parameter:
    """One argument of the generated entry point, in order.

    kind: "array" (pointer to the array with its halo), "coords" (double* to a sparse
    function's (npoint, ndim) coordinates), "index" (64-bit integer: halo widths, sizes,
    loop bounds, point counts), "scalar" (of ``dtype``), "timers" (double*). ``role`` says
    what the Operator binds to it.
    """

    name: str
    kind: str
    dtype: type | None = None
    role: tuple = ()
    store: str | None = None   # an array's 16-bit storage format (ArrayParam.store)


@dataclass(frozen=True)
class IndexTypes:
    """The integer types index arithmetic is instantiated for: ``narrow`` (32-bit) where every
    array holds at most ``narrow_limit`` elements (so that index + grid stride cannot
    overflow), else ``wide`` (64-bit)."""

    wide: str = "int64"
    narrow: str | None = None
    narrow_limit: int = 1 << 30


@dataclass(frozen=True)
class Program:
    """A whole operator: parameters, hoisted scalars, and kernels around the time loop."""

    name: str                      # the Operator's name
    entry: str                     # C name of the entry point
    dtype: type
    dims: tuple[LoopDim, ...]
    time: sympy.Symbol             # the time loop counter
    point: sympy.Symbol            # the point index of sparse loops
    arrays: tuple[ArrayParam, ...]
    scalars: tuple[ScalarParam, ...]
    prologue: tuple[Assign, ...]
    before: tuple
    steps: tuple
    after: tuple
    time_indices: tuple[TimeIndex, ...]
    has_time_loop: bool
    params: tuple[Parameter, ...] = ()
    time_bounds: tuple[str, str] = ("time_m", "time_M")
    timers: str = "timers"
    sparse_locals: SparseLocals | None = None
    index_types: IndexTypes = IndexTypes()
    time_step: int = 1             # -1: time runs from time_M down to time_m (.backward)
    checks: tuple[str, ...] = ()   # arrays whose last state the run counts NaN/Inf in
    checks_param: str = "checks"   # (start, length, count) per checked array, or NULL
    tuning: str = "tuning"         # the launch choice per section (backends that have them)
    control: str = "control"       # the caller's stop flag and step count (a long[2]), or NULL
    subsamplings: tuple[Subsampling, ...] = ()   # factors and the time loop's `time / factor`
    split: tuple[bool, ...] = ()   # per dimension: split over MPI ranks (() : not split)
    exchanges: tuple[Exchange, ...] = ()   # halo exchanges before kernels (``ir/halos``)
    exchange: str = "exchange"     # the caller's function that exchanges: int (*)(long, long)
    regions: str = "regions"       # per region of a block, its (first, last) per dimension
    zero_boxes: tuple[ZeroBox, ...] = ()   # the run-time boxes split nests read (ir/zero_split)

    def parameters(self) -> list[Parameter]:
        """The entry point's arguments in order (decided by the layout pass)."""
        return list(self.params)

    @property
    def kernels(self) -> tuple:
        return self.before + self.steps + self.after

    @property
    def loop_symbols(self) -> tuple:
        return tuple(d.symbol for d in self.dims)

    @functools.cached_property
    def _arrays_by_name(self) -> dict:
        return {a.name: a for a in self.arrays}

    def array(self, name: str) -> ArrayParam:
        return self._arrays_by_name[name]   # looked up many times by every apply


def real_type(dtype) -> type:
    """The floating type of a grid's arithmetic: float32 stays float32, all else is float64."""
    return np.float32 if np.dtype(dtype) == np.float32 else np.float64
