"""The last passes: where each array's elements lie, the entry point's parameters, the index
types and the timed sections. After them a printer has every decision it needs."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from . import dtypes
from .names import NameRegistry
from .nodes import (ArrayLayout, ArrayParam, IndexTypes, Parameter, Program, Section,
                    element_size)


def _index(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True)


def _time_length(a: ArrayParam, names: NameRegistry) -> str | None:
    """The parameter holding the length of a directly indexed time axis (saved steps, sparse
    samples): run-time, so apply may bind a function of another length; a ring buffer's
    length is in its slots' modulo, fixed at build time (None)."""
    if a.time_size is None or a.modulo:
        return None
    return names.fresh(f"{a.name}_nt")


def _grid_layout(a: ArrayParam, dims, names: NameRegistry) -> ArrayLayout:
    """Row-major with the halo around the domain, innermost dimension contiguous; an array
    spanning fewer loop dimensions (``a.axes``) has stride 0 along the others."""
    axes = a.axes or tuple(range(len(dims)))
    own = [dims[i] for i in axes]
    halo = tuple(names.fresh(f"{a.name}_h{i}") for i in range(len(own)))
    # along a subsampled axis (a ConditionalDimension with a factor) the array has its own size
    # (a function on a SubDomain has its own size along every axis)
    sizes = tuple(names.fresh(f"{a.name}_n{j}") if a.offsets or a.factors and a.factors[i]
                  else None for j, i in enumerate(axes))
    extents = [_index(n or d.size) + 2 * _index(h) for d, n, h in zip(own, sizes, halo)]
    strides, stride = [], sympy.Integer(1)
    for i in reversed(range(len(own))):
        strides.append((names.fresh(f"{a.name}_s{i}") if i < len(own) - 1 else None, stride))
        stride = stride * extents[i]
    strides.reverse()
    named = [_index(n) if n else v for n, v in strides]
    nt = _time_length(a, names)
    strides = [strides[axes.index(i)] if i in axes else (None, sympy.Integer(0))
               for i in range(len(dims))]
    if a.time_size is not None or a.extra:
        strides.insert(0, (names.fresh(f"{a.name}_st"), stride))
        count = (_index(nt) if nt else a.time_size or a.extra) * _index(strides[0][0])
    else:
        count = stride
    # a split array is this rank's block: global index i lies at i - first (MPI); a
    # function on a SubDomain holds its points only: index i at i - (points before them)
    offsets = [a.offsets[i] if a.offsets else 0 for i in axes]
    origin = sum(((_index(h) - (_index(d.first) if a.split else 0) - k) * s
                  for h, s, d, k in zip(halo, named, own, offsets)), sympy.Integer(0))
    vec = names.fresh(f"{a.name}_vec")
    return ArrayLayout(vec=vec, halo=halo, strides=tuple(strides),
                       origin=(names.fresh(f"{a.name}_o"), origin),
                       count=(names.fresh(f"{a.name}_len"), count),
                       sizes=sizes if any(sizes) else (),
                       padding=(0,) * len(own),
                       alignment=element_size(a), nt=nt)


def _sparse_layout(a: ArrayParam, ndim: int, names: NameRegistry) -> ArrayLayout:
    """(nt, npoint) or (npoint,) values, and the (npoint, ndim) coordinates beside them."""
    npoint, vec = names.fresh(f"{a.name}_np"), names.fresh(f"{a.name}_vec")
    coords = names.fresh(f"{a.name}_coords")
    strides = ((None, sympy.Integer(1)),)
    count = _index(npoint)
    nt = _time_length(a, names)
    if nt:
        strides = ((npoint, _index(npoint)),) + strides
        count = _index(nt) * count
    elif a.extra:   # rows of a Dimension before the points
        strides = ((npoint, _index(npoint)),) + strides
        count = a.extra * count
    return ArrayLayout(vec=vec, halo=(), strides=strides,
                       origin=(names.fresh(f"{a.name}_o"), sympy.Integer(0)),
                       count=(names.fresh(f"{a.name}_len"), count),
                       npoint=npoint, coords=coords,
                       device_coords=names.fresh(f"d_{coords}"), padding=(),
                       alignment=element_size(a), nt=nt)


def _parameters(prog: Program, timers: str, checks: str, tuning: str,
                control: str) -> tuple[Parameter, ...]:
    """The entry point's arguments: arrays, sizes and bounds (run-time values), scalars."""
    params = []
    for a in prog.arrays:
        lay = a.layout
        params.append(Parameter(lay.vec, "array", a.dtype, ("data", a.name), a.store))
        if a.sparse:
            params += [Parameter(lay.coords, "coords", np.float64, ("coords", a.name)),
                       Parameter(lay.npoint, "index", None, ("npoint", a.name))]
        else:
            params += [Parameter(h, "index", None, ("halo", a.name, i))
                       for i, h in enumerate(lay.halo)]
            params += [Parameter(n, "index", None, ("points", a.name, i))
                       for i, n in enumerate(lay.sizes) if n]
        if lay.nt:
            params.append(Parameter(lay.nt, "index", None, ("time_size", a.name)))
    params += [Parameter(d.size, "index", None, ("size", i)) for i, d in enumerate(prog.dims)]
    params += [Parameter(d.first, "index", None, ("first", i))
               for i, d in enumerate(prog.dims) if d.first]
    for i, d in enumerate(prog.dims):
        params += [Parameter(d.lower, "index", None, ("lower", i)),
                   Parameter(d.upper, "index", None, ("upper", i))]
    if prog.has_time_loop:
        params += [Parameter(prog.time_bounds[0], "index", None, ("time_m",)),
                   Parameter(prog.time_bounds[1], "index", None, ("time_M",))]
    params += [Parameter(s.factor, "index", None, ("factor", s.user)) for s in prog.subsamplings]
    params += [Parameter(n, "index", None, ("zero_box", b.array, i, end))
               for b in prog.zero_boxes for i, pair in enumerate(zip(b.lower, b.upper))
               for end, n in enumerate(pair)]
    for s in prog.scalars:
        if s.parts:   # a complex scalar: its two real parts
            params += [Parameter(n, "scalar", dtypes.part_type(s.dtype), s.role + (part,))
                       for n, part in zip(s.parts, ("re", "im"))]
        else:
            params.append(Parameter(s.name, "scalar", s.dtype, s.role))
    params.append(Parameter(timers, "timers", np.float64, ("timers",)))
    params.append(Parameter(checks, "checks", None, ("checks",)))
    params.append(Parameter(tuning, "tuning", None, ("tuning",)))
    params.append(Parameter(control, "control", None, ("control",)))
    if prog.split:
        params += [Parameter(prog.exchange, "exchange", None, ("exchange",)),
                   Parameter(prog.regions, "regions", None, ("regions",))]
    return tuple(params)


def layout(prog: Program, names: NameRegistry) -> Program:
    """Every array's layout, then the parameter list that carries its run-time part."""
    ndim = len(prog.dims)
    arrays = tuple(replace(a, layout=_sparse_layout(a, ndim, names) if a.sparse
                           else _grid_layout(a, prog.dims, names)) for a in prog.arrays)
    t = prog.time.name
    prog = _clip_snapshots(replace(prog, arrays=arrays,
                                   time_bounds=(names.fresh(f"{t}_m"), names.fresh(f"{t}_M"))))
    timers, checks, tuning = names.fresh("timers"), names.fresh("checks"), names.fresh("tuning")
    # control[0]: set (by the SIGINT handler) to stop after the current time step; control[1]:
    # the steps done so far, read by the caller's progress reports
    control = names.fresh("control")
    # the user arrays the run writes: the entry point counts NaN/Inf in the ranges of them
    # the Operator asks for (their last state), where the data lies (on the GPU, there)
    written = {n for k in prog.kernels for n in k.writes}
    checked = tuple(a.name for a in arrays if a.name in written and not a.temporary)
    return replace(prog, params=_parameters(prog, timers, checks, tuning, control),
                   timers=timers, checks=checked, checks_param=checks, tuning=tuning,
                   control=control)


def _clip_snapshots(prog: Program) -> Program:
    """A nest storing or reading a snapshot (``usave[time/factor + s]``) runs at the steps
    whose snapshot lies in the array (its length a run-time argument), as Devito clips them:
    a run longer than the snapshots leaves the later ones unwritten."""
    subs = {s.symbol for s in prog.subsamplings if s.symbol is not None}
    if not subs:
        return prog

    def clipped(k):
        if k.is_sparse:
            return k
        tests = []
        for table in (k.writes, k.reads):
            for name, offs in table.items():
                a = prog.array(name)
                if a.time_size is None or a.modulo or not a.layout.nt:
                    continue
                for o in offs:
                    index = sympy.sympify(o[0])
                    sym = index.free_symbols & subs
                    if not sym:
                        continue
                    tests.append(sympy.Lt(index, _index(a.layout.nt)))
                    shift = index - sym.pop()
                    if not (shift.is_number and shift >= 0):   # time / factor is never < 0
                        tests.append(sympy.Ge(index, 0))
        if not tests:
            return k
        test = sympy.And(*sorted(set(tests), key=sympy.default_sort_key))
        return replace(k, when=test if k.when is None else sympy.And(k.when, test))

    return replace(prog, before=tuple(map(clipped, prog.before)),
                   steps=tuple(map(clipped, prog.steps)), after=tuple(map(clipped, prog.after)))


def index_types(prog: Program, narrow: bool) -> Program:
    """64-bit index arithmetic; with ``narrow`` (GPUs, where 32-bit arithmetic is much
    faster) also a 32-bit variant, chosen at run time when every array is small enough."""
    return replace(prog, index_types=IndexTypes(narrow="int32" if narrow else None))


def sections(prog: Program, names: NameRegistry) -> Program:
    """A timer slot per kernel, in program order, and the names its timing code uses."""
    out, i = {}, 0
    for stage in ("before", "steps", "after"):
        kernels = []
        for k in getattr(prog, stage):
            sec = Section(timer=i, clock=names.fresh(f"start_{k.name}"),
                          function=names.fresh(f"{prog.entry}_{k.name}"))
            kernels.append(replace(k, section=sec))
            i += 1
        out[stage] = tuple(kernels)
    return replace(prog, **out)
