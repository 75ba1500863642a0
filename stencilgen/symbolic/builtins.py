"""Devito's data helpers for Functions: ``norm``, ``initialize_function``,
``gaussian_smooth`` and the reductions ``sum``, ``sumall``, ``inner``, ``mmax``, ``mmin``,
computed with NumPy on the host (they touch each value a few times; no Operator is worth
building for them)."""
from __future__ import annotations

import builtins as _python

import numpy as np

from ..errors import InvalidArgument
from .functions import Constant


def norm(f, order=2):
    """The ``order``-norm of ``f``'s values in the domain (every time slot of a TimeFunction,
    every sample of a sparse function), summed in float64 and returned in ``f``'s dtype (a
    complex function's: its parts' type, a norm being real)."""
    if not hasattr(f, "data"):
        raise InvalidArgument(f"norm: expected a Function, TimeFunction or sparse function, "
                              f"got {type(f).__name__}")
    if not np.isscalar(order) or order <= 0:
        raise InvalidArgument(f"norm: order must be a positive number, got {order!r}")
    values = np.abs(np.asarray(f.data, dtype=_wide(f.dtype)))
    total = np.sum(values ** order)
    return np.dtype(np.abs(np.dtype(f.dtype).type(0))).type(total ** (1.0 / order))


def _wide(dtype):
    """What sums of ``dtype`` values run in: float64, or complex128 for complex values."""
    return np.complex128 if np.dtype(dtype).kind == "c" else np.float64


def _widths(nbl, ndim):
    """``nbl`` (an int, per-dimension ints, or per-dimension (left, right) pairs) as pairs."""
    if np.isscalar(nbl):
        nbl = (nbl,) * ndim
    if len(nbl) != ndim:
        raise InvalidArgument(f"initialize_function: nbl={nbl!r} needs one entry per dimension "
                              f"({ndim})")
    pairs = [tuple(n) if isinstance(n, (tuple, list)) else (n, n) for n in nbl]
    if any(int(a) != a or a < 0 for p in pairs for a in p):
        raise InvalidArgument(f"initialize_function: nbl={nbl!r} must be non-negative integers")
    return [(int(a), int(b)) for a, b in pairs]


def initialize_function(function, data, nbl, mapper=None, mode="constant", name=None,
                        pad_halo=True, **kwargs):
    """``function``'s domain set to ``data`` extended by ``nbl`` layers on each side (the
    absorbing layers): ``mode='constant'`` repeats the edge values, ``'reflect'`` mirrors the
    data including its edge; with ``pad_halo`` the halo repeats the edges too. ``function``
    and ``data`` may be lists of the same length."""
    if isinstance(function, (list, tuple)):
        if not isinstance(data, (list, tuple)) or len(data) != len(function):
            raise InvalidArgument("initialize_function: a list of functions needs a list of "
                                  "data of the same length")
        for f, d in zip(function, data):
            initialize_function(f, d, nbl, mapper, mode, name, pad_halo)
        return
    if mapper is not None:
        raise InvalidArgument("initialize_function: mapper= (extra equations per dimension) is "
                              "not supported; set the values with an Operator after this call")
    if mode not in ("constant", "reflect"):
        raise InvalidArgument(f"initialize_function: mode={mode!r}; use 'constant' or 'reflect'")
    if getattr(function, "is_TimeFunction", False) or not hasattr(function, "data_with_halo"):
        raise InvalidArgument("initialize_function: expected a Function (TimeFunctions and "
                              "sparse functions are not supported, as in Devito)")
    values = np.asarray(getattr(data, "data", data))
    widths = _widths(nbl, values.ndim)
    padded = np.pad(values, widths, mode="edge" if mode == "constant" else "symmetric")
    if padded.shape != function.shape:
        raise InvalidArgument(f"initialize_function: data of shape {values.shape} padded by "
                              f"{widths} is {padded.shape}, not {function.name}'s domain "
                              f"{function.shape}")
    function.data[:] = padded
    if pad_halo:
        function.data_with_halo[:] = np.pad(padded, function.halo, mode="edge")


def gaussian_smooth(f, sigma=1, truncate=4.0, mode="reflect"):
    """``f`` (a Function or a NumPy array) smoothed in place by a Gaussian of standard
    deviation ``sigma`` points (one, or one per dimension), cut ``truncate`` deviations out,
    as Devito's: one axis after another, each a normalised kernel of 2*round(truncate*sigma)
    + 1 points over the values mirrored at the edges (Devito reflects whatever ``mode``
    says). Returns ``f``."""
    values = np.asarray(f.data if hasattr(f, "data") else f)
    sigmas = (sigma,) * values.ndim if np.isscalar(sigma) else tuple(sigma)
    if len(sigmas) != values.ndim or any(not np.isscalar(s) or s <= 0 for s in sigmas):
        raise InvalidArgument(f"gaussian_smooth: sigma={sigma!r} must be a positive number or "
                              f"one per dimension ({values.ndim})")
    if mode not in ("reflect", "constant"):
        raise InvalidArgument(f"gaussian_smooth: mode={mode!r}; use 'reflect' or 'constant'")
    out = values.astype(np.float64)
    for axis, s in enumerate(sigmas):
        width = int(truncate * float(s) + 0.5)
        if width == 0:
            continue
        kernel = np.exp(-0.5 / s ** 2 * np.linspace(-width, width, 2 * width + 1) ** 2)
        kernel /= kernel.sum()
        pad = [(0, 0)] * out.ndim
        pad[axis] = (width, width)
        padded = np.pad(out, pad, mode="symmetric")
        n = out.shape[axis]
        out = _python.sum(w * np.take(padded, range(k, k + n), axis=axis)
                          for k, w in enumerate(kernel))
    if hasattr(f, "data"):
        f.data[:] = out
    else:
        f[...] = out
    return f


def smooth(f, g, axis=None):
    """Devito's ``smooth``: ``f`` (a Function) set to the simple moving average of ``g``
    along ``axis`` (a Dimension or a list of them; default ``g``'s innermost), as Devito's
    ``Eq(f, g.avg(dims=axis))``: along each axis the points from as many before as ``g``'s
    halo is wide to as many after less one (``g[x - 1] + g[x]`` at space order 1), read from
    ``g``'s halo where they lie beyond the domain, a point named twice counted once in the
    divisor (Devito divides by the terms of its sum). A Constant ``g`` gives 0.9 of its
    value. Returns ``f``."""
    if isinstance(g, Constant):
        f.data[...] = 0.9 * np.asarray(g.data)
        return f
    dims = list(g.dimensions)
    space = [d for d in dims if not d.is_Time]
    axes = [space[-1]] if axis is None else list(axis) if isinstance(axis, (list, tuple)) \
        else [axis]
    for a in axes:
        if a not in space:
            raise InvalidArgument(f"smooth: axis {a} is not a space dimension of {g.name} "
                                  f"({', '.join(d.name for d in space)})")
    halo = dict(zip(dims, g.halo))
    values = np.asarray(g.data_with_halo, dtype=np.float64)
    terms: dict = {}
    for a in axes:
        before, after = halo[a]
        for k in range(-before, after):
            key = tuple(k if d is a else 0 for d in dims)
            terms[key] = terms.get(key, 0) + 1
    inner = tuple(slice(lo, values.shape[i] - hi) for i, (lo, hi) in enumerate(g.halo))
    total = np.zeros(np.asarray(g.data).shape)
    for offsets, count in terms.items():
        moved = tuple(slice(s.start + o, s.stop + o) for s, o in zip(inner, offsets))
        total += count * values[moved]
    f.data[...] = total / len(terms)
    return f


# -- reductions --------------------------------------------------------------------------

def _values(f, what: str) -> np.ndarray:
    if not hasattr(f, "data") or getattr(f, "is_Sparse", False) and what == "sum":
        raise InvalidArgument(f"{what}: expected a Function or TimeFunction, got "
                              f"{type(f).__name__} (a sparse function's values: NumPy on "
                              f"its .data)")
    return np.asarray(f.data)


def sumall(f):
    """The sum of ``f``'s values (every time slot), in float64, returned in its dtype."""
    return np.dtype(f.dtype).type(np.sum(_values(f, "sumall"), dtype=_wide(f.dtype)))


def _ordered(f, what: str) -> np.ndarray:
    values = _values(f, what)
    if values.dtype.kind == "c":
        raise InvalidArgument(f"{what}: {f.name} holds complex values, which have no order; "
                              f"take {what} of numpy.abs({f.name}.data) (or of its real part)")
    return values


def mmax(f):
    """The largest of ``f``'s values."""
    return _ordered(f, "mmax").max()


def mmin(f):
    """The smallest of ``f``'s values."""
    return _ordered(f, "mmin").min()


def inner(f, g):
    """The inner product of ``f``'s and ``g``'s values, in float64, returned in f's dtype."""
    a, b = _values(f, "inner"), _values(g, "inner")
    if a.shape != b.shape:
        raise InvalidArgument(f"inner: {f.name} has shape {a.shape}, {g.name} {b.shape}; give "
                              f"two functions of one shape")
    return np.dtype(f.dtype).type(np.sum(a * b, dtype=_wide(np.result_type(a, b))))


def _time_dimensions(f) -> set:
    """The dimensions that name ``f``'s time axis: its snapshots' ConditionalDimension, the
    grid's time and stepping dimensions."""
    return {d for d in (f.field.time_dim, f.grid.time_dim, f.grid.stepping_dim) if d is not None}


def sum(f, dims=None, **kwargs):   # noqa: A001 (Devito's name)
    """Devito's ``sum(f, dims)``: a new function (``f.name + 'sum'``) of ``f``'s other
    dimensions holding its values summed over ``dims`` (all of them: ``sumall``). Anything
    but a function goes to Python's ``sum``, which ``from stencilgen import *`` hides."""
    if not hasattr(f, "field"):
        return _python.sum(f, *(() if dims is None else (dims,)), **kwargs)
    from .functions import Function, TimeFunction
    from .grid import Grid
    values = _values(f, "sum")
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (() if dims is None else (dims,))
    space = f.grid.dimensions
    timed = f.is_TimeFunction and any(d in _time_dimensions(f) for d in dims)
    if timed:   # over the time axis (Devito's sum(usave, dims=t_sub)): a Function of space
        values = values.sum(axis=0, dtype=_wide(f.dtype))
        dims = tuple(d for d in dims if d not in _time_dimensions(f))
        if not dims:
            out = Function(name=f"{f.name}sum", grid=f.grid, space_order=f.space_order,
                           dtype=f.dtype)
            out.data[:] = values
            return out
    if not dims or set(dims) >= set(space):
        return sumall(f) if not timed else f.dtype(np.sum(values, dtype=_wide(f.dtype)))
    unknown = [d for d in dims if d not in space]
    if unknown:
        raise InvalidArgument(f"sum: {f.name} has no dimension {unknown[0]} among {space}; "
                              f"sum over some of them")
    axes = tuple(space.index(d) + (values.ndim - len(space)) for d in dims)
    kept = [i for i, d in enumerate(space) if d not in dims]
    total = values.sum(axis=axes, dtype=_wide(f.dtype))
    name = f"{f.name}sum"
    if f.is_TimeFunction and not timed:
        g = f.grid
        grid = Grid(shape=tuple(g.shape[i] for i in kept), dtype=g.dtype,
                    extent=tuple(g.extent[i] for i in kept),
                    origin=tuple(g.origin[i] for i in kept),
                    dimensions=tuple(space[i] for i in kept))
        out = TimeFunction(name=name, grid=grid, time_order=f.time_order,
                           space_order=f.space_order, save=f.field.save, dtype=f.dtype)
    else:
        out = Function(name=name, grid=f.grid, space_order=f.space_order, dtype=f.dtype,
                       dimensions=tuple(space[i] for i in kept),
                       shape=tuple(f.grid.shape[i] for i in kept))
    out.data[:] = total
    return out
