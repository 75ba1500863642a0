"""Binding ``apply``'s keywords to the entry point's parameters, checked, by each one's role."""
from __future__ import annotations

import cmath

import numpy as np
import sympy

from ..user_warnings import warn_user
from ..configuration import configuration
from ..errors import InvalidArgument
from ..symbolic.functions import Constant, DiscreteFunction, Function, TimeFunction
from ..symbolic.grid import as_int
from ..symbolic.sparse import (SparseFunction, SparseTimeFunction, check_coordinates,
                               first_nodes)
from ..data.storage import Storage
from ..data import precision
from ..ir import dtypes


def _steering(prog) -> set:
    """The keywords with a fixed meaning (time step, bounds); a Function or Constant of the
    same name keeps its own data."""
    return {"dt", "time_m", "time_M"} | {f"{d.user}_{s}" for d in prog.dims for s in "mM"}


def _accepted(prog) -> set:
    known = {a.user for a in prog.arrays if not a.temporary}
    known |= {s.role[1] for s in prog.scalars if s.role[0] in ("constant", "element")}
    known |= {s.constant for s in prog.subsamplings if s.constant}
    return known | _steering(prog)


def _kind(f) -> str:
    if f.is_Sparse:
        return "SparseTimeFunction" if f.field.time_size is not None else "SparseFunction"
    if f.field.time_size is None:
        return "Function"
    return "TimeFunction(save=...)" if f.field.save is not None else "TimeFunction"


def _override_mismatch(arr, f, override) -> str | None:
    """What keeps ``override`` from standing in for ``f`` and what to pass instead (None: it
    may stand in)."""
    got, like = override.field, f"pass a {_kind(f)} built like {f.name}"
    if (got.time_size is None) != (f.field.time_size is None) or \
            bool(override.is_Sparse) != arr.sparse:
        return f"is a {_kind(override)}, {f.name} a {_kind(f)}; {like}"
    if [n for _, n in got.extra] != [n for _, n in f.field.extra]:
        return (f"has shape {override.shape}, {f.name} {f.shape} (its Dimensions beyond the "
                f"grid's are built into the code); {like}")
    if override.grid.shape != f.grid.shape:
        return (f"lies on a grid of shape {override.grid.shape}, {f.name} on {f.grid.shape}; "
                f"{like} on a grid of that shape, or build an Operator for the other grid")
    if np.dtype(override.dtype) != np.dtype(f.dtype):
        return (f"holds {np.dtype(override.dtype).name}, the Operator was built for "
                f"{np.dtype(f.dtype).name}; {like} with dtype={np.dtype(f.dtype).name}")
    if arr.modulo and got.time_size != arr.time_size:
        how = f"save={got.save}" if got.save is not None else f"time_order={override.time_order}"
        return (f"has {got.time_size} time slots ({how}), but the Operator cycles through "
                f"{f.name}'s {arr.time_size} (time_order={f.time_order}, save=None); build "
                f"{override.name} with time_order={f.time_order} and no save, or build an "
                f"Operator for {override.name}")
    return None


def _override(arr, f, override):
    """The data of ``override`` standing in for ``f`` (the function compiled), checked.
    A saved or sampled time axis may have any length (a run-time argument); a ring buffer's
    slots, the grid's shape and the dtype are those built into the code."""
    if not isinstance(override, DiscreteFunction):
        raise InvalidArgument(f"apply: {f.name} must be overridden with a Function of the same "
                              f"kind, got {type(override).__name__}")
    wrong = _override_mismatch(arr, f, override)
    if wrong:
        raise InvalidArgument(f"apply: {f.name}={override.name} does not match {f.name}: it "
                              f"{wrong}")
    if not arr.sparse and any(h < r for h, r in zip(override.field.halo, arr.reach)):
        raise InvalidArgument(f"apply: {f.name}={override.name} has halo "
                              f"{override.field.halo}, narrower than the stencils read "
                              f"({arr.reach} points); give it a space_order of at least "
                              f"{max(arr.reach)}")
    return override


def ndarray_arguments(prog, bindings, kwargs) -> tuple[dict, list]:
    """Devito's ``op.apply(rec=ndarray)`` and ``op.apply(dm=ndarray)`` for a function the
    Operator was built with: the array's values as a function built like it (returned in
    ``kwargs`` in the array's place), and (array, values) pairs: after the run each array
    takes back what its function then holds, where the run writes it."""
    out, pairs = dict(kwargs), []
    for arr in prog.arrays:
        value = kwargs.get(arr.user)
        if arr.temporary or not isinstance(value, np.ndarray):
            continue
        f = bindings.functions[arr.name]
        given, values = (_sparse_like if arr.sparse else _grid_like)(arr, f, value)
        out[arr.user] = given
        if arr.name in prog.checks:   # the run writes it: the values go back
            pairs.append((value, values))
    return out, pairs


def _sparse_like(arr, f, value):
    """The values of a sparse function's array: (npoint,) or (nt, npoint)."""
    time = f.is_TimeFunction
    want = f.shape   # not f.data: a GPU-resident function's values stay there
    if value.ndim != len(want) or value.shape[time:] != want[time:] or \
            value.dtype.kind not in "biuf":
        axes = "(nt, npoint)" if time else "(npoint,)"
        raise InvalidArgument(f"apply: {arr.user}= an array of shape {value.shape} "
                              f"({value.dtype}); give real numbers of shape {axes} = "
                              f"{('nt',) + want[1:] if time else want}, or a "
                              f"{type(f).__name__}")
    extra = {"nt": value.shape[0]} if time else {}
    kind = SparseTimeFunction if time else SparseFunction
    given = kind(name=f.name, grid=f.grid, npoint=f.npoint, dtype=f.dtype,
                 coordinates=f.coordinates.data, **extra)
    given.data[:] = value
    return given, lambda: given.data


def _grid_like(arr, f, value):
    """The values of a grid function's array, its halo included (Devito's rule: an array
    of ``data_with_halo``'s shape), in a function built like it."""
    rec = f.field
    if rec.extra or rec.store or rec.companion is not None or rec.time_dim is not None or \
            f.grid.decomposition is not None or f.grid.subdomain is not None:
        raise InvalidArgument(f"apply: {arr.user}= an array for {f.name}, which is not a plain "
                              f"Function or TimeFunction on one process (its extra axes, 16-bit "
                              f"storage, snapshots, subdomain or split grid); pass a Function "
                              f"built like {f.name}")
    want = f.shape_with_halo if rec.save is None or value.ndim != len(f.shape) else \
        (value.shape[0],) + f.shape_with_halo[1:]
    if value.shape != want:
        raise InvalidArgument(f"apply: {arr.user}= an array of shape {value.shape}; give one of "
                              f"{f.name}.data_with_halo's shape {f.shape_with_halo} (the halo "
                              f"included, as Devito takes it), or a {type(f).__name__}")
    kw = dict(name=f.name, grid=f.grid, space_order=f.space_order, dtype=f.dtype,
              staggered=f.staggered if rec.stagger_given else None, avg_mode=rec.avg_mode)
    if rec.is_time:
        kw.update(time_order=f.time_order, save=None if rec.save is None else want[0])
    given = (TimeFunction if rec.is_time else Function)(**kw)
    given.data_with_halo[:] = value
    return given, lambda: given.data_with_halo


def _sparse_coordinates(arr, f, bindings) -> np.ndarray:
    """A sparse function's "coords" argument: its coordinates (checked), or for precomputed
    weights its first nodes and weights (``sparse.first_nodes``)."""
    if not arr.support:
        check_coordinates(f)
        return np.ascontiguousarray(f.coordinates.data, dtype=np.float64)
    if bindings.grid.decomposition is not None and bindings.grid.decomposition.size > 1:
        raise InvalidArgument(f"apply: {f.name} is a precomputed sparse function, which "
                              f"stencilgen does not run on a grid split over MPI ranks; "
                              f"use a SparseFunction there")
    return first_nodes(f)


def _storage(arr, bindings, overrides, temps, shape, args, keep):
    """The storage of ``arr`` for this apply and its halo widths (a temporary's own, sized
    to the grid; a sparse function's coordinates bound on the way)."""
    if arr.temporary:
        full = tuple(n + 2 * h for n, h in zip(shape, arr.halo))
        st = temps.get(arr.name)
        if st is None or st.shape != full:
            st = temps[arr.name] = Storage(arr.name, full,
                                           precision.host_dtype(arr.store, arr.dtype), arr.halo)
        return st, arr.halo
    f = bindings.functions[arr.name]
    if arr.user in overrides:
        f = _override(arr, f, overrides[arr.user])
    if arr.split and f.grid.decomposition is not bindings.grid.decomposition:
        raise InvalidArgument(f"apply: {f.name} is not on the split grid of the Operator "
                              f"({bindings.grid!r}); build it on that grid")
    if arr.sparse:
        coords = _sparse_coordinates(arr, f, bindings)
        keep.append(coords)
        args[arr.layout.coords], args[arr.layout.npoint] = coords.ctypes.data, f.npoint
    return f.field.storage, f.field.halo


def _array_args(prog, bindings, overrides, temps, args, keep, attach):
    """Data pointers (from ``attach``: where the backend reads them), halo widths, point
    counts, time lengths and coordinates of every array; returns the length of each
    directly indexed time axis bound, by C name."""
    lengths, bound = {}, []
    for arr in prog.arrays:
        lay = arr.layout
        st, halo = _storage(arr, bindings, overrides, temps, bindings.grid.shape_local, args,
                            keep)
        bound.append((arr, st, halo))
        for name, h in zip(lay.halo, halo):
            args[name] = int(h)
        space = st.shape[len(st.shape) - len(halo):]
        for name, n, h in zip(lay.sizes, space, halo):
            if name:
                args[name] = int(n) - 2 * int(h)
        if lay.nt:
            args[lay.nt] = lengths[arr.name] = int(st.shape[0])
    for (arr, st, _), ptr in zip(bound, attach(bound)):
        args[arr.layout.vec] = ptr
        keep.append(st)
    return lengths


def _time_accesses(prog):
    """The time offsets of every access to a time array, relative to the time counter,
    (array, offset) of each access to a directly indexed one (saved or sparse), and (array,
    offset, Subsampling) of each access to a snapshot array (indexed ``time / factor``)."""
    slots = {ti.symbol: ti.offsets for ti in prog.time_indices}
    sampled = {s.symbol: s for s in prog.subsamplings if s.symbol is not None}
    offsets, direct, snapshots = set(), [], []
    for k in prog.kernels:
        for table in (k.reads, k.writes):
            for name, offs in table.items():
                arr = prog.array(name)
                if arr.time_size is None:
                    continue
                for o in offs:
                    if arr.modulo:   # a buffer: of the time loop (a slot), or of snapshots
                        offsets.update(slots.get(o[0], ()))
                        continue
                    sub = set(sampled) & sympy.sympify(o[0]).free_symbols
                    if sub:
                        sym = sub.pop()
                        shift = sympy.sympify(o[0] - sym)
                        if shift.is_Integer:   # a Constant's shift: no default from it
                            snapshots.append((arr, int(shift), sampled[sym]))
                        continue
                    s = int(o[0] - prog.time)
                    offsets.add(s)
                    direct.append((arr, s))
    return offsets, direct, snapshots


def _given(kwargs, key, default):
    """``kwargs[key]``, or ``default`` where it is absent or None (as Devito)."""
    value = kwargs.get(key)
    return default if value is None else value


def _time_defaults(offsets, direct, snapshots, args, lengths):
    """Devito's defaults: time_m = -(lowest offset), time_M = (fewest saved steps or sparse
    samples of the functions bound) - 1 - (highest offset), or the last step a snapshot array
    has room for (factor * snapshots - 1), over every access in the time loop (None: no
    default)."""
    lower, upper = min(offsets | {0}), max(offsets | {0})
    limits = [lengths[arr.name] - 1 - upper for arr, _ in direct]
    limits += [sub.start + args[sub.factor] * (lengths[arr.name] - s) - 1
               for arr, s, sub in snapshots]
    return -lower, min(limits) if limits else None


def _time_bounds(prog, kwargs, op_name, args, lengths):
    """time_m and time_M, given or Devito's defaults, checked against the length of every
    directly indexed time axis bound (``lengths``, by C name) and every snapshot array."""
    offsets, direct, snapshots = _time_accesses(prog)
    default_m, default_M = _time_defaults(offsets, direct, snapshots, args, lengths)
    if _given(kwargs, "time_M", None) is None and default_M is None:
        raise InvalidArgument(f"Operator `{op_name}`.apply: missing time bounds; pass "
                              f"time_M (the last step; time_m defaults to {default_m}), e.g. "
                              "op.apply(time_M=100, dt=0.5)")
    time_m = as_int(_given(kwargs, "time_m", default_m), "apply: time_m",
                    f"pass the first time step as an integer, e.g. time_m={default_m}")
    time_M = as_int(_given(kwargs, "time_M", default_M), "apply: time_M",
                    "pass the last time step as an integer, e.g. time_M=100")
    if time_m < 0 or time_M < time_m:
        raise InvalidArgument(f"apply: time_m={time_m}, time_M={time_M} must satisfy "
                              "0 <= time_m <= time_M")
    for arr, s in direct:
        n = lengths[arr.name]
        if time_M + s > n - 1 or time_m + s < 0:
            held = f"has nt={n} time samples" if arr.sparse else f"saves {n} time steps"
            raise InvalidArgument(
                f"apply: {arr.user} {held} but time steps {time_m}..{time_M} access index "
                f"{time_m + s if time_m + s < 0 else time_M + s}; use time_M <= {n - 1 - s} "
                f"or a larger {'nt' if arr.sparse else 'save='}")
    return time_m, time_M


def _factors(prog, bindings, overrides, args):
    """Each subsampling factor: the ConditionalDimension's int, or its Constant's value now
    (or the value apply gives the Constant by name)."""
    for s in prog.subsamplings:
        d = _bound_dimension(prog, bindings, overrides, bindings.factors[s.factor])
        value = _value(overrides.get(s.constant, d.factor)) if isinstance(d.factor, int) \
            else _value(overrides.get(s.constant, d.factor.data))
        if not (np.isscalar(value) and float(value).is_integer() and value > 0):
            raise InvalidArgument(f"apply: the factor of ConditionalDimension {d.name} is "
                                  f"{d.factor.name}={float(value):g}; set it to a positive integer")
        args[s.factor] = int(value)


def _zero_boxes(prog, bindings, overrides, args):
    """The box of each zero-box array (``Function.zero_box`` of the Function bound to it;
    empty where it has none), checked against its values once after each write."""
    for b in prog.zero_boxes:
        a = prog.array(b.array)
        f = overrides.get(a.user, bindings.functions.get(a.name))
        box = getattr(getattr(f, "field", None), "zero_box", None)
        if box is not None:
            _check_zero_box(f, box)
        for i, (lo, hi) in enumerate(box or ((1, 0),) * len(b.lower)):   # (1, 0): empty
            # (the box of a Function on fewer dimensions than the loops: its own ones)
            args[b.lower[i]], args[b.upper[i]] = lo, hi


def _check_zero_box(f, box):
    """InvalidArgument where ``f`` is not zero in ``box``: checked after each write of its
    values (not for values last written on the GPU, which stay there)."""
    rec, st = f.field, f.field.storage
    if getattr(rec, "_zero_checked", None) == (box, st.writes) or st.newer == "device":
        return
    inside = np.asarray(f.data)[tuple(slice(lo, hi + 1) for lo, hi in box)]
    bad = np.flatnonzero(inside)
    if bad.size:
        at = tuple(int(i) + lo for i, (lo, _) in zip(np.unravel_index(bad[0], inside.shape),
                                                     box))
        raise InvalidArgument(f"apply: {f.name}.zero_box is {box}, but {f.name} is not zero "
                              f"there ({f.name}.data[{at}] = {inside.flat[bad[0]]:g}, "
                              f"{bad.size} such points); set zero_box to a box where it is "
                              f"zero, or to None")
    rec._zero_checked = (box, st.writes)


def _bound_dimension(prog, bindings, overrides, d):
    """ConditionalDimension ``d``, or that of a snapshot function bound in place of one on
    ``d`` (its own factor: Devito's ``op.apply(usave=usave2)``)."""
    for arr in prog.arrays:
        f = bindings.functions.get(arr.name)
        given = overrides.get(arr.user)
        if f is None or getattr(f.field, "time_dim", None) is not d or \
                not isinstance(given, DiscreteFunction):
            continue
        other = given.field.time_dim
        if other is not None and other is not d and other.factor is not None:
            return other
    return d


def _subsampled_sizes(prog, args):
    """A function on a ConditionalDimension with a factor holds an index for every point
    of the loop along its parent that the factor keeps (index ``parent / factor``)."""
    for arr in prog.arrays:
        for j, name in enumerate(arr.layout.sizes):
            axis = (arr.axes or tuple(range(len(prog.dims))))[j]
            if not name or not (arr.factors and arr.factors[axis]):
                continue
            d, factor = prog.dims[axis], args[arr.factors[axis]]
            need = (args[d.size] - 1) // factor + 1
            if args[name] < need:
                raise InvalidArgument(
                    f"apply: {arr.user} has {args[name]} points along its ConditionalDimension "
                    f"of {d.user}, but {d.user} runs over {args[d.size]} points and the factor "
                    f"is {factor}: it needs {need}; build it with shape {need} there")


def bounds(prog, grid, kwargs, args):
    """The points and the first and last index of every dimension in ``args`` (kwargs's
    ``x_m``, ``x_M``... or the whole grid)."""
    for d, n in zip(prog.dims, grid.shape):
        lo, hi = (as_int(_given(kwargs, key, default), f"apply: {key}",
                         f"pass a grid index from 0 to {n - 1}, e.g. {key}={default}")
                  for key, default in ((f"{d.user}_m", 0), (f"{d.user}_M", n - 1)))
        if not 0 <= lo <= hi <= n - 1:
            raise InvalidArgument(f"apply: {d.user}_m={lo} and {d.user}_M={hi} must satisfy "
                                  f"0 <= {d.user}_m <= {d.user}_M <= {n - 1}")
        args[d.size], args[d.lower], args[d.upper] = n, lo, hi
    if prog.split:   # this rank's block: the arrays' sizes, where global indices start
        for d, lo, n in zip(prog.dims, grid.decomposition.starts, grid.shape_local):
            args[d.size], args[d.first] = n, lo
    _subdomain_ends(prog, grid, args)
    _fixed_at_bounds(prog, grid, args)


def _fixed_at_bounds(prog, grid, args):
    """A left-hand side fixed at an index written with the bounds (Devito's
    ``f[ix.symbolic_max]``) must land inside the domain at the bounds and thicknesses given."""
    dims = {d.symbol: (d, n) for d, n in zip(prog.dims, grid.shape)}
    for k in prog.kernels:
        for depth, at in enumerate(getattr(k, "fixed", ()) or ()):
            if not isinstance(at, sympy.Expr) or not at.free_symbols:
                continue
            value = int(at.xreplace({s: args[s.name] for s in at.free_symbols}))
            d, n = dims[k.dims[depth]]
            if not 0 <= value <= n - 1:
                raise InvalidArgument(
                    f"apply: {d.user}_m={args[d.lower]}, {d.user}_M={args[d.upper]} put an "
                    f"equation's fixed index {at} at {d.user} = {value}, outside 0..{n - 1}; "
                    f"move the bounds or the thickness")


def _subdomain_ends(prog, grid, args):
    """A subdomain's left or right end (n points from x_m, or up to x_M, as Devito) must
    stay inside the domain at the bounds given."""
    for k in prog.kernels:
        for depth, anchor in enumerate(getattr(k, "anchors", ()) or ()):
            if not anchor:
                continue
            d, n, at = prog.dims[depth], grid.shape[depth], args[getattr(prog.dims[depth], anchor)]
            (_, lo), (_, hi) = k.span(depth)
            if lo <= hi and not 0 <= at + lo <= at + hi <= n - 1:
                raise InvalidArgument(
                    f"apply: {d.user}_m={args[d.lower]}, {d.user}_M={args[d.upper]} put an "
                    f"equation's subdomain at {d.user} = {at + lo}..{at + hi}, outside "
                    f"0..{n - 1}; move the bounds")


def _same_geometry(a, b) -> bool:
    """Whether grids ``a`` and ``b`` have one spacing and origin (to round-off)."""
    if a is b or (a.spacing == b.spacing and a.origin == b.origin):
        return True   # the common case, without numpy's cost on each apply
    h = np.array(a.spacing)
    return (np.allclose(h, b.spacing, rtol=1e-9, atol=0)
            and np.allclose(a.origin, b.origin, rtol=0, atol=1e-9 * h.min()))


def _geometry(prog, bindings, overrides):
    """The grid whose spacing and origin this call uses: that of every function bound (the
    overrides and the compiled ones), which must agree; else an InvalidArgument."""
    bound = [overrides.get(a.user, bindings.functions[a.name])
             for a in prog.arrays if not a.temporary]
    # Functions without a grid, or on a SubDomain: their geometry is the grid's
    bound = [f for f in bound if not f.grid.implicit and f.grid.subdomain is None]
    if not bound:
        return bindings.grid
    ref = bound[0].grid
    odd = [f for f in bound if not _same_geometry(ref, f.grid)]
    if not odd:
        return ref
    same = [f for f in bound if _same_geometry(ref, f.grid)]

    def describe(fs):
        return (f"{', '.join(f.name for f in fs)} (spacing {fs[0].grid.spacing}, "
                f"origin {fs[0].grid.origin})")
    raise InvalidArgument(
        f"apply: the functions bound disagree on the grid: {describe(same)} but "
        f"{', '.join(describe([f]) for f in odd)}; bind functions on grids of one spacing "
        "and origin (override the others too, or build the overrides on grids with the same "
        "extent and origin)")


def _value(given):
    """A number given for a Constant: itself, or the value of a Constant passed in its place
    (Devito's ``op.apply(c=other_constant)``)."""
    return given.data if isinstance(given, Constant) else given


def _scalar(s, bindings, geometry, kwargs, overrides, op_name):
    kind = s.role[0]
    if kind == "spacing":
        return bindings.spacings.get(s.role[1], geometry.spacing[s.role[1]])
    if kind == "origin":
        return geometry.origin[s.role[1]]
    if kind == "constant":
        return _value(overrides.get(s.role[1], bindings.constants[s.name].value))
    if kind == "element":   # a value of a function of Dimensions beyond the grid's
        given = overrides.get(s.role[1], bindings.elements[s.name])
        values = given.data if isinstance(given, DiscreteFunction) else np.asarray(given)
        if values.shape != bindings.elements[s.name].shape:
            raise InvalidArgument(f"apply: {s.role[1]} has shape {values.shape}; the "
                                  f"Operator reads {bindings.elements[s.name].shape}")
        return values[s.role[2]]
    if "dt" not in kwargs:
        raise InvalidArgument(f"Operator `{op_name}`.apply: the equations use dt; "
                              "pass it, e.g. op.apply(time_M=100, dt=0.5)")
    return kwargs["dt"]


def dimension_names(prog, kwargs, op_name, stepping: str = "t") -> dict:
    """Devito's shorthands: a dimension's name stands for its last index (``time=100`` is
    ``time_M=100``, ``x=10`` is ``x_M=10``), and the stepping dimension's bounds for the time
    loop's (``t_M=100`` is ``time_M=100``), where no Function or Constant has that name."""
    dims = (["time"] if prog.has_time_loop else []) + [d.user for d in prog.dims]
    own = _accepted(prog) - _steering(prog)
    out = dict(kwargs)
    if prog.has_time_loop and stepping != "time":
        for alias, name in ((f"{stepping}_M", "time_M"), (f"{stepping}_m", "time_m"),
                            (stepping, "time")):
            if alias in out and alias not in own:
                if out.get(name) is not None:
                    raise InvalidArgument(f"Operator `{op_name}`.apply: {alias}= and {name}= "
                                          f"both given; {alias}= means {name}=, pass one")
                out[name] = out.pop(alias)
    for dim in dims:
        if dim in out and dim not in own:
            if out.get(f"{dim}_M") is not None:
                raise InvalidArgument(f"Operator `{op_name}`.apply: {dim}= and {dim}_M= both "
                                      f"given; {dim}= means {dim}_M=, pass one of them")
            out[f"{dim}_M"] = out.pop(dim)
    return out


def bind(prog, bindings, kwargs, temps, op_name, attach) -> tuple[dict, list]:
    """Every argument of the entry point by C name, and what to keep alive meanwhile.
    ``attach`` turns [(array, storage, halo)] into the pointers the entry point reads."""
    kwargs = dimension_names(prog, kwargs, op_name, bindings.grid.stepping_dim.name)
    unknown = set(kwargs) - _accepted(prog)
    if unknown and configuration["ignore-unknowns"]:   # Devito's setting: ignored, aloud
        warn_user(f"Operator `{op_name}`.apply: ignored unknown argument(s) "
                      f"{', '.join(sorted(unknown))} (ignore-unknowns is set)")
        kwargs = {k: v for k, v in kwargs.items() if k not in unknown}
    elif unknown:
        raise InvalidArgument(f"Operator `{op_name}`.apply: unknown argument(s) "
                              f"{', '.join(sorted(unknown))}; it accepts "
                              f"{', '.join(sorted(_accepted(prog)))} (Devito's "
                              f"configuration['ignore-unknowns'] = 1 ignores them)")
    # a Function or Constant named like a steering keyword keeps its own data
    steering = _steering(prog)
    overrides = {k: v for k, v in kwargs.items() if k not in steering}
    args, keep = {prog.control: None}, []   # no stop flag or step count: apply sets one
    lengths = _array_args(prog, bindings, overrides, temps, args, keep, attach)
    bounds(prog, bindings.grid, kwargs, args)
    _factors(prog, bindings, overrides, args)
    _zero_boxes(prog, bindings, overrides, args)
    _subsampled_sizes(prog, args)
    if prog.has_time_loop:
        args[prog.time_bounds[0]], args[prog.time_bounds[1]] = \
            _time_bounds(prog, kwargs, op_name, args, lengths)
    geometry = _geometry(prog, bindings, overrides)
    for s in prog.scalars:
        if s.role[0] == "scale":
            continue
        value = _scalar(s, bindings, geometry, kwargs, overrides, op_name)
        label = s.role[1] if s.role[0] == "constant" else s.name
        kind = complex if dtypes.is_complex(s.dtype) else float
        if kind is float and np.iscomplexobj(value):
            raise InvalidArgument(f"apply: {label}={value!r} is complex, and {label} is real; "
                                  f"build the Constant with dtype=numpy.complex64")
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise InvalidArgument(f"apply: {label}={value!r} is not a "
                                  f"{'complex ' if kind is complex else ''}number") from None
        if not cmath.isfinite(number):
            raise InvalidArgument(f"apply: {label}={value!r} is not finite")
        if kind is complex:
            args[s.parts[0]], args[s.parts[1]] = number.real, number.imag
        elif np.dtype(s.dtype).kind in "iu":   # an integer Constant: truncated, as C does
            args[s.name] = int(number)
        else:
            args[s.name] = number
    _scales(prog, bindings, overrides, args)
    return args, keep


def _scales(prog, bindings, overrides, args):
    """The run-time scales of 16-bit fields (``stencilgen.data.precision``), chosen at the first
    apply that needs them."""
    for s in prog.scalars:
        if s.role[0] != "scale":
            continue
        members = [overrides[r.name].field if r.name in overrides else r
                   for r in bindings.scales[s.name]]
        args[s.name] = precision.choose_scale(
            s.name, members, lambda: _largest_increment(prog, s.name, bindings, overrides, args))


def _largest_increment(prog, scale, bindings, overrides, args) -> float:
    """``precision.largest_increment`` into the arrays of run-time scale ``scale``."""
    names = {a.name for a in prog.arrays if getattr(a.scale, "name", None) == scale}
    functions = {a.name: overrides.get(a.user, bindings.functions.get(a.name))
                 for a in prog.arrays if not a.temporary}
    return precision.largest_increment(prog, names, functions, args)
