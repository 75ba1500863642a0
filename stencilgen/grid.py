"""The Grid: a rectangular, uniformly spaced domain in one to three dimensions."""
from __future__ import annotations

import numpy as np

from .subdomains import builtin as builtin_subdomains
from .dimensions import space_dimension, stepping_dimension, time_dimension
from .errors import InvalidArgument

_DIM_NAMES = ("x", "y", "z")
SUPPORTED_DTYPES = (np.float32, np.float64)


def as_int(value, what: str, hint: str) -> int:
    """``value`` as an int if it is an integer (numpy integers too, not bools), else an
    InvalidArgument saying ``what`` was wrong and ``hint``, what to pass."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise InvalidArgument(f"{what} is {value!r} ({type(value).__name__}), not an integer; {hint}")


def check_dtype(dtype, owner: str) -> np.dtype:
    """The numpy dtype for ``dtype`` if stencilgen supports it, else an InvalidArgument."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.type not in SUPPORTED_DTYPES:
        raise InvalidArgument(f"{owner}: dtype {dtype!r} is not supported; "
                              f"use numpy.float32 or numpy.float64")
    return dt


def _check_shape(shape) -> tuple[int, ...]:
    """``shape`` as a tuple of ints, 1 to 3 of them, each >= 2; else an InvalidArgument."""
    try:
        entries = tuple(shape) if not isinstance(shape, str) else None
    except TypeError:
        entries = None
    if entries is None:
        raise InvalidArgument(f"Grid: shape must be a tuple of integers, e.g. "
                              f"Grid(shape=(101, 101)); got {shape!r}")
    entries = tuple(as_int(n, f"Grid: an entry of shape {entries}", "give whole numbers of "
                           "points, e.g. Grid(shape=(101, 101))") for n in entries)
    if not 1 <= len(entries) <= 3:
        raise InvalidArgument(f"Grid: shape {entries} has {len(entries)} dimensions; "
                              "stencilgen supports 1, 2 and 3")
    if any(n < 2 for n in entries):
        raise InvalidArgument(f"Grid: every dimension needs at least 2 points, got shape {entries}")
    return entries


class Grid:
    """A uniform grid of ``shape`` points spanning ``extent`` from ``origin`` (Devito's meaning).

    ``extent`` defaults to the unit cube (spacing ``1 / (n - 1)``, as Devito), ``origin`` to zeros.
    """

    def __init__(self, shape, extent=None, origin=None, dtype=np.float32, **unknown):
        if unknown:
            raise InvalidArgument(f"Grid: {', '.join(sorted(unknown))} not supported (Grid takes "
                                  "shape, extent, origin and dtype; its subdomains are "
                                  "grid.interior and grid.subdomains['domain'], its dimensions "
                                  "x, y, z)")
        self.shape = shape = _check_shape(shape)
        self.extent = self._vector("extent", extent, (1.0,) * len(shape))
        if any(e <= 0 for e in self.extent):
            raise InvalidArgument(f"Grid: extent must be positive in every dimension, got {self.extent}")
        self.origin = self._vector("origin", origin, (0.0,) * len(shape))
        self.dtype = check_dtype(dtype, "Grid").type
        self.dimensions = tuple(space_dimension(n) for n in _DIM_NAMES[:len(shape)])
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
    def dim(self) -> int:
        return len(self.shape)

    @property
    def spacing(self) -> tuple[float, ...]:
        return tuple(e / (n - 1) for e, n in zip(self.extent, self.shape))

    @property
    def spacing_symbols(self):
        return tuple(d.spacing for d in self.dimensions)

    @property
    def subdomains(self) -> dict:
        """Devito's built-in subdomains: 'domain' and 'interior' (``stencilgen.subdomains``)."""
        if getattr(self, "_subdomains", None) is None:
            self._subdomains = builtin_subdomains(self)
        return self._subdomains

    @property
    def interior(self):
        """The domain less one point on every side."""
        return self.subdomains["interior"]

    @property
    def spacing_map(self) -> dict:
        """Spacing symbol -> value, in the grid's dtype."""
        return {d.spacing: self.dtype(h) for d, h in zip(self.dimensions, self.spacing)}

    def __repr__(self) -> str:
        return f"Grid(shape={self.shape}, extent={self.extent}, dtype={np.dtype(self.dtype).name})"
