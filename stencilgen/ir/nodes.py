"""IR node types. Expressions inside are sympy trees over ``Indexed`` array accesses whose
indices are the loop dimensions plus integer offsets (and a time-slot symbol first)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy


POINT = sympy.Symbol("p", integer=True)   # the point index of sparse kernels


@dataclass(frozen=True)
class ArrayParam:
    """An array argument: a user function's buffer or a compiler temporary.

    Halo widths and sizes are run-time arguments (``<name>_h<dim>``), never baked into the
    source, so one build serves any grid size and future domain decompositions.
    """

    name: str
    dtype: type
    ndim: int
    time_size: int | None = None   # slots of the leading time axis (None: no time axis)
    modulo: bool = False           # time slot = (time + k) % time_size (buffered TimeFunction)
    temporary: bool = False        # allocated by the Operator, invisible to the user
    sparse: bool = False           # point values (npoint,) or (nt, npoint): no halo, no grid axes

    @property
    def base(self) -> sympy.IndexedBase:
        return sympy.IndexedBase(self.name)


@dataclass(frozen=True)
class ScalarParam:
    """A scalar argument: dt, a grid spacing, a Constant."""

    name: str
    dtype: type


@dataclass(frozen=True)
class TimeIndex:
    """A time-slot variable of the time loop: ``symbol = (time + shift) % modulo``."""

    symbol: sympy.Symbol
    shift: int
    modulo: int | None  # None: direct index (saved TimeFunction)


@dataclass
class Assign:
    """``lhs = rhs``; a Symbol lhs declares a local scalar, an Indexed lhs stores to an array."""

    lhs: sympy.Expr
    rhs: sympy.Expr

    @property
    def is_local(self) -> bool:
        return isinstance(self.lhs, sympy.Symbol)


@dataclass
class Kernel:
    """One loop nest over the grid: its iteration space, statements and access summary."""

    name: str
    dims: tuple                                   # loop dimensions, outermost first
    body: list[Assign]
    extent: tuple[tuple[int, int], ...] = ()      # iteration widened by (lo, hi) points per dim
    reads: dict[str, set[tuple]] = field(default_factory=dict)   # array -> offsets read
    writes: dict[str, set[tuple]] = field(default_factory=dict)
    flops: int = 0                                # per point
    bytes: int = 0                                # compulsory traffic per point
    stage: str = "time"                           # "before", "time" or "after"

    @property
    def widened(self) -> tuple[tuple[int, int], ...]:
        return self.extent or tuple((0, 0) for _ in self.dims)


@dataclass
class SparseKernel:
    """Injection into or interpolation from a grid at a sparse function's points.

    For each point p the 2**ndim surrounding nodes are visited with multilinear weights;
    inside ``expr`` (and ``target`` for injection) the loop dimensions name that node.
    """

    name: str
    kind: str                      # "inject" or "interpolate"
    sparse: str                    # the sparse array whose points are visited
    point: sympy.Symbol            # the point index symbol
    dims: tuple
    target: sympy.Indexed          # inject: grid access at the node; interpolate: sparse[.., p]
    expr: sympy.Expr
    flops: int = 0                 # per point and corner
    bytes: int = 0
    stage: str = "time"
    reads: dict = field(default_factory=dict)
    writes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Parameter:
    """One argument of the generated entry point, in order.

    kind: "array" (pointer to the array with its halo), "coords" (double* to a sparse
    function's (npoint, ndim) coordinates), "index" (64-bit integer: halo widths, sizes,
    loop bounds, point counts), "scalar" (the real type of ``dtype``), "timers" (double*).
    """

    name: str
    kind: str
    dtype: type | None = None


@dataclass
class Program:
    """A whole operator: parameters, hoisted scalars, and kernels around the time loop."""

    name: str
    dtype: type
    dims: tuple
    arrays: list[ArrayParam]
    scalars: list[ScalarParam]
    prologue: list[Assign]
    before: list[Kernel]
    steps: list[Kernel]
    after: list[Kernel]
    time_indices: list[TimeIndex]
    has_time_loop: bool

    def parameters(self) -> list[Parameter]:
        """The entry point's arguments; halos, sizes and bounds are run-time values."""
        params = []
        for a in self.arrays:
            params.append(Parameter(f"{a.name}_vec", "array", a.dtype))
            if a.sparse:
                params += [Parameter(f"{a.name}_coords", "coords", np.float64),
                           Parameter(f"{a.name}_np", "index")]
            else:
                params += [Parameter(f"{a.name}_h{i}", "index") for i in range(a.ndim)]
        params += [Parameter(f"{d.name}_size", "index") for d in self.dims]
        for d in self.dims:
            params += [Parameter(f"{d.name}_m", "index"), Parameter(f"{d.name}_M", "index")]
        if self.has_time_loop:
            params += [Parameter("time_m", "index"), Parameter("time_M", "index")]
        params += [Parameter(s.name, "scalar", s.dtype) for s in self.scalars]
        params.append(Parameter("timers", "timers"))
        return params

    @property
    def kernels(self) -> list[Kernel]:
        return self.before + self.steps + self.after

    def array(self, name: str) -> ArrayParam:
        for a in self.arrays:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def real(self) -> str:
        return "float" if np.dtype(self.dtype) == np.float32 else "double"
