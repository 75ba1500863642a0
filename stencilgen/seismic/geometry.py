"""Where the source and the receivers are, and the sparse functions that hold them.

Coordinates are physical (m), an (npoint, ndim) array, the last dimension depth. The helpers
take a ``Model`` (then "the domain" is its physical domain, without the absorbing layer) or a
plain ``Grid`` (then the domain is the whole grid).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stencilgen import Grid, SparseTimeFunction

from .wavelets import TimeAxis, ricker


def _bounds(where) -> tuple:
    """((lo, hi) per dimension) of the domain of a Model or a Grid."""
    if hasattr(where, "domain_bounds"):
        return tuple(where.domain_bounds)
    if isinstance(where, Grid):
        return tuple((o, o + e) for o, e in zip(where.origin, where.extent))
    raise TypeError(f"expected a Model or a Grid, got {type(where).__name__}")


def _grid(where) -> Grid:
    return where.grid if hasattr(where, "domain_bounds") else where


def _check_inside(what: str, coords: np.ndarray, bounds) -> None:
    lo = np.array([b[0] for b in bounds])
    hi = np.array([b[1] for b in bounds])
    tol = 1e-9 * np.maximum(np.abs(hi - lo), 1.0)
    for p, c in enumerate(coords):
        if not np.all(np.isfinite(c)):
            raise ValueError(f"{what}: point {p} has a non-finite coordinate {tuple(c)}")
        if np.any(c < lo - tol) or np.any(c > hi + tol):
            raise ValueError(f"{what}: point {p} at {tuple(float(v) for v in c)} lies outside "
                             f"the domain {tuple(map(float, lo))} .. {tuple(map(float, hi))}")


def source_at(where, position=None, depth: float | None = None) -> np.ndarray:
    """The (1, ndim) coordinates of one source.

    ``position``: the full coordinates (m). Without it the source is at the horizontal centre
    of the domain, at ``depth`` (default: two grid spacings below the top of the domain).
    """
    bounds = _bounds(where)
    ndim = len(bounds)
    if position is None:
        hz = _grid(where).spacing[-1]
        z = bounds[-1][0] + (2 * hz if depth is None else float(depth))
        position = [0.5 * (lo + hi) for lo, hi in bounds[:-1]] + [z]
    coords = np.asarray(position, dtype=np.float64).reshape(1, -1)
    if coords.shape[1] != ndim:
        raise ValueError(f"source_at: position {tuple(coords[0])} has {coords.shape[1]} "
                         f"coordinates; the domain has {ndim} dimensions")
    _check_inside("source_at", coords, bounds)
    return coords


def receiver_line(where, n: int, depth: float | None = None, start: float | None = None,
                  end: float | None = None) -> np.ndarray:
    """(n, ndim) coordinates: ``n`` receivers evenly along x from ``start`` to ``end``
    (default: across the domain), at ``depth`` (default two grid spacings below the top);
    in 3D along the centre line in y."""
    n = int(n)
    if n < 1:
        raise ValueError(f"receiver_line: n={n} must be at least 1")
    bounds = _bounds(where)
    ndim = len(bounds)
    if ndim < 2:
        raise ValueError("receiver_line: needs a domain with a depth axis (2D or 3D)")
    hz = _grid(where).spacing[-1]
    start = bounds[0][0] if start is None else float(start)
    end = bounds[0][1] if end is None else float(end)
    coords = np.empty((n, ndim))
    coords[:, 0] = np.linspace(start, end, n)
    for d in range(1, ndim - 1):
        coords[:, d] = 0.5 * (bounds[d][0] + bounds[d][1])
    coords[:, -1] = bounds[-1][0] + (2 * hz if depth is None else float(depth))
    _check_inside("receiver_line", coords, bounds)
    return coords


@dataclass
class Shot:
    """One shot: the source (a Ricker wavelet) and the receivers, on ``time``."""

    src: SparseTimeFunction
    rec: SparseTimeFunction
    time: TimeAxis
    f0: float

    @property
    def nt(self) -> int:
        return self.time.num


def make_shot(model, time: TimeAxis, f0: float, src_coordinates,
              rec_coordinates) -> Shot:
    """The sparse functions ``src`` (a Ricker of peak frequency ``f0``, in every source) and
    ``rec`` (zeros) with ``time.num`` samples, on the model's grid."""
    src_coordinates = np.atleast_2d(np.asarray(src_coordinates, dtype=np.float64))
    rec_coordinates = np.atleast_2d(np.asarray(rec_coordinates, dtype=np.float64))
    grid = _grid(model)
    src = SparseTimeFunction(name="src", grid=grid, npoint=len(src_coordinates), nt=time.num,
                             coordinates=src_coordinates)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=len(rec_coordinates), nt=time.num,
                             coordinates=rec_coordinates)
    src.data[:] = ricker(f0, time)[:, np.newaxis]
    return Shot(src=src, rec=rec, time=time, f0=float(f0))
