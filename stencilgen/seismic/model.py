"""Velocity models with an absorbing (sponge) layer, and the stable time step.

Units: lengths in metres, velocity in km/s (= m/ms), time in ms. The physical domain starts at
``origin`` (default 0) and has ``shape`` points ``spacing`` apart; the Model's grid adds ``nbl``
points on every side, so its origin is ``origin - nbl * spacing`` and physical coordinates
(sources, receivers) are the same numbers in both. The last dimension is depth (z, downwards).

The acoustic PDE with the sponge is ``m * u.dt2 - u.laplace + damp * u.dt = 0``, m = 1/v**2.

The sponge: a plane wave crossing the layer loses amplitude at the rate damp / (2 m) per ms,
i.e. damp * v / 2 per metre travelled. ``damp`` is 0 in the physical domain and, at depth
p = (distance into the layer) / (nbl * h) in 0..1 of a layer along one dimension,

    damp = (2 ln(1/R) / (nbl * h)) * (p - sin(2 pi p) / (2 pi)) / v

(the ramp of Devito's seismic examples, which starts with zero value and slope; summed over
dimensions in the corners). Its integral across the layer and back, int damp * v dx, is
ln(1/R): the wave that reaches the grid edge and returns at normal incidence is attenuated by
the factor R (default 1e-3, 60 dB); obliquely, more. Dividing by the local v makes the
attenuation the same for every velocity.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from stencilgen import Function, Grid
from stencilgen.symbolic.fd_weights import fornberg_weights

#: the fraction of the leapfrog stability limit that ``Model.critical_dt`` uses
SAFETY = 0.8


def laplacian_weight_sum(space_order: int) -> float:
    """sum_i |w_i| of the centred second-derivative stencil of ``space_order`` (unit spacing).

    The weights alternate in sign (w_0 < 0), so this is also -(the stencil's symbol at the
    Nyquist wavenumber): the largest eigenvalue of -d2/dx2 is sum|w_i| / h**2.
    """
    if space_order < 2 or space_order % 2:
        raise ValueError(f"space_order={space_order}: use an even number >= 2")
    p = space_order // 2
    return float(sum(abs(w) for w in fornberg_weights(list(range(-p, p + 1)), 0, 2)))


def stability_limit(spacing, vmax: float, space_order: int) -> float:
    """The largest stable leapfrog time step for m u_tt = laplace(u) (von Neumann), in ms.

    Leapfrog for u_tt = -v**2 lambda u is stable iff dt**2 v**2 lambda <= 4; the largest
    eigenvalue of the discrete -Laplacian is lambda = sum_d sum_i |w_i| / h_d**2, so

        dt_max = 2 / (v_max * sqrt(sum_d S / h_d**2)),   S = sum_i |w_i|.

    The damping term (discretised centred) only adds dissipation and does not lower it.
    """
    s = laplacian_weight_sum(space_order)
    return 2.0 / (float(vmax) * math.sqrt(sum(s / float(h) ** 2 for h in spacing)))


def layered_velocity(shape, spacing, velocities=(1.5, 2.5, 3.5), interfaces=None,
                     origin=None) -> np.ndarray:
    """v (km/s) on ``shape`` points: horizontal layers, ``velocities`` from the top down.

    ``interfaces`` are the depths (m, same frame as ``origin``) of the layer boundaries, one
    fewer than the velocities, increasing; by default the depth extent is split evenly.
    Each node gets the slowness squared m = 1/v**2 averaged over its cell [z - h/2, z + h/2],
    so an interface between nodes keeps its depth to within a fraction of a cell (a node
    exactly on an interface gets the mean of the two layers' m). Without the averaging the
    effective interface of the staircase lies halfway between the nodes around it.
    """
    shape = tuple(int(n) for n in shape)
    spacing = _per_dim(spacing, len(shape), "spacing")
    origin = _per_dim(0.0 if origin is None else origin, len(shape), "origin")
    velocities = tuple(float(v) for v in velocities)
    if not velocities or any(not (math.isfinite(v) and v > 0) for v in velocities):
        raise ValueError(f"layered_velocity: velocities {velocities} must be positive (km/s)")
    z0, hz, nz = origin[-1], spacing[-1], shape[-1]
    if interfaces is None:
        depth = (nz - 1) * hz
        interfaces = [z0 + depth * k / len(velocities) for k in range(1, len(velocities))]
    interfaces = [float(d) for d in interfaces]
    if len(interfaces) != len(velocities) - 1:
        raise ValueError(f"layered_velocity: {len(velocities)} velocities need "
                         f"{len(velocities) - 1} interfaces, got {len(interfaces)}")
    if any(b <= a for a, b in zip(interfaces, interfaces[1:])):
        raise ValueError(f"layered_velocity: interfaces {interfaces} must increase")
    z = z0 + hz * np.arange(nz)
    lo, hi = z - hz / 2, z + hz / 2
    bounds = [-np.inf] + interfaces + [np.inf]
    m = np.zeros(nz)
    for top, bottom, v in zip(bounds, bounds[1:], velocities):
        overlap = np.clip(np.minimum(hi, bottom) - np.maximum(lo, top), 0.0, None)
        m += overlap / hz / v ** 2
    column = 1.0 / np.sqrt(m)
    return np.broadcast_to(column, shape).copy()


def damping_profile(shape, spacing, nbl: int, vp: np.ndarray | None = None,
                    reflection: float = 1e-3) -> np.ndarray:
    """The sponge coefficient on the padded grid of ``shape`` points (``nbl`` of each side
    are layer); see the module docstring. ``vp`` (padded, km/s) scales it by 1/v; without
    it v = 1."""
    shape = tuple(int(n) for n in shape)
    spacing = _per_dim(spacing, len(shape), "spacing")
    damp = np.zeros(shape, dtype=np.float64)
    if nbl <= 0:
        return damp
    if not 0 < reflection < 1:
        raise ValueError(f"damping_profile: reflection={reflection} must be in (0, 1)")
    if any(n <= 2 * nbl for n in shape):
        raise ValueError(f"damping_profile: shape {shape} has no interior with nbl={nbl}")
    p = (nbl - np.arange(nbl)) / nbl                  # 1 at the grid edge .. 1/nbl inside
    ramp = p - np.sin(2 * np.pi * p) / (2 * np.pi)
    for d, (n, h) in enumerate(zip(shape, spacing)):
        coeff = 2.0 * math.log(1.0 / reflection) / (nbl * h)
        prof = np.zeros(n)
        prof[:nbl] = coeff * ramp
        prof[n - nbl:] = coeff * ramp[::-1]
        view = [np.newaxis] * len(shape)
        view[d] = slice(None)
        damp += prof[tuple(view)]
    if vp is not None:
        damp /= np.asarray(vp, dtype=np.float64)
    return damp


@dataclass(eq=False)
class Model:
    """A velocity model on a grid padded by an absorbing layer of ``nbl`` points per side.

    ``vp``: velocity (km/s) on the physical domain, shape ``shape``. Attributes: ``grid`` (the
    padded grid), ``m`` (Function, 1/v**2), ``damp`` (Function, the sponge), ``vp`` (the
    padded velocity as a numpy array), ``critical_dt`` (ms); ``layers``, the (velocities,
    interfaces) of a ``layered_model`` (None for any other). ``storage``: what m and damp are
    stored as (None: ``dtype``; numpy.float16 or "bfloat16": 16 bits, float32 arithmetic, scale
    1: m is 0.08..0.44 s^2/km^2 for 1.5..3.5 km/s and damp below 0.1, inside float16's range).
    """

    vp: np.ndarray
    spacing: tuple
    origin: tuple = None
    nbl: int = 40
    space_order: int = 8
    dtype: type = np.float32
    reflection: float = 1e-3
    safety: float = SAFETY
    layers: tuple | None = None   # (velocities, interface depths) when built by layered_model
    storage: object = None        # m and damp: None (dtype), numpy.float16 or "bfloat16"
    grid: Grid = field(init=False)
    m: Function = field(init=False)
    damp: Function = field(init=False)

    def __post_init__(self):
        vp = np.asarray(self.vp, dtype=np.float64)
        if vp.ndim not in (1, 2, 3):
            raise ValueError(f"Model: vp has {vp.ndim} dimensions; give 1, 2 or 3")
        if not np.all(np.isfinite(vp)) or np.any(vp <= 0):
            raise ValueError("Model: vp must be finite and positive (km/s) everywhere")
        ndim = vp.ndim
        self.shape = vp.shape
        self.spacing = _per_dim(self.spacing, ndim, "spacing")
        self.origin = _per_dim(0.0 if self.origin is None else self.origin, ndim, "origin")
        self.nbl = int(self.nbl)
        if self.nbl < 0:
            raise ValueError(f"Model: nbl={self.nbl} must be >= 0")
        nbl = self.nbl
        padded_shape = tuple(n + 2 * nbl for n in self.shape)
        self.grid = Grid(shape=padded_shape,
                         extent=tuple((n - 1) * h for n, h in zip(padded_shape, self.spacing)),
                         origin=tuple(o - nbl * h for o, h in zip(self.origin, self.spacing)),
                         dtype=self.dtype)
        self.vp = np.pad(vp, nbl, mode="edge") if nbl else vp.copy()
        self.m = Function(name="m", grid=self.grid, space_order=self.space_order,
                          storage=self.storage)
        self.m.data[:] = 1.0 / self.vp ** 2
        self.damp = Function(name="damp", grid=self.grid, space_order=self.space_order,
                             storage=self.storage)
        self.damp.data[:] = damping_profile(padded_shape, self.spacing, nbl, self.vp,
                                            self.reflection)
        if nbl and self.grid.decomposition is None:
            # zero off the layer: nests reading it run without its term there (ir/zero_split)
            self.damp.zero_box = tuple((nbl, nbl + n - 1) for n in self.shape)

    # -- geometry -----------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return len(self.shape)

    @property
    def extent(self) -> tuple:
        """The physical domain's extent (m), without the absorbing layer."""
        return tuple((n - 1) * h for n, h in zip(self.shape, self.spacing))

    @property
    def domain_bounds(self) -> tuple:
        """((lo, hi) per dimension) of the physical domain, in m."""
        return tuple((o, o + e) for o, e in zip(self.origin, self.extent))

    @property
    def interior(self) -> tuple:
        """Index slices of the physical domain in the padded arrays (``m.data[interior]``)."""
        return tuple(slice(self.nbl, self.nbl + n) for n in self.shape)

    def physical(self, array) -> np.ndarray:
        """The physical-domain part of a padded array (the last ``dim`` axes)."""
        return np.asarray(array)[(Ellipsis,) + self.interior]

    # -- time step ----------------------------------------------------------------------
    @property
    def vmax(self) -> float:
        return float(self.vp.max())

    @property
    def stability_limit(self) -> float:
        """dt_max (ms) of the leapfrog scheme at this space order; see ``stability_limit``."""
        return stability_limit(self.spacing, self.vmax, self.space_order)

    @property
    def critical_dt(self) -> float:
        """The time step the demos use: ``safety`` (0.8) times the stability limit, in ms."""
        return self.safety * self.stability_limit

    def __repr__(self) -> str:
        return (f"Model(shape={self.shape}, spacing={self.spacing}, nbl={self.nbl}, "
                f"v={float(self.vp.min()):g}..{self.vmax:g} km/s, "
                f"critical_dt={self.critical_dt:.4g} ms)")


def layered_model(shape, spacing=10.0, velocities=(1.5, 2.5, 3.5), interfaces=None,
                  nbl: int = 40, space_order: int = 8, dtype=np.float32, origin=None,
                  **kwargs) -> Model:
    """A Model of horizontal layers (see ``layered_velocity``) with an ``nbl``-point sponge."""
    shape = tuple(int(n) for n in shape)
    spacing = _per_dim(spacing, len(shape), "spacing")
    velocities = tuple(float(v) for v in velocities)
    if interfaces is None:
        z0 = 0.0 if origin is None else _per_dim(origin, len(shape), "origin")[-1]
        depth = (shape[-1] - 1) * spacing[-1]
        interfaces = [z0 + depth * k / len(velocities) for k in range(1, len(velocities))]
    interfaces = tuple(float(d) for d in interfaces)
    vp = layered_velocity(shape, spacing, velocities, interfaces, origin)
    return Model(vp=vp, spacing=spacing, origin=origin, nbl=nbl, space_order=space_order,
                 dtype=dtype, layers=(velocities, interfaces), **kwargs)


def homogeneous_model(shape, spacing=10.0, velocity: float = 1.5, **kwargs) -> Model:
    """A Model with one velocity everywhere."""
    return layered_model(shape, spacing, velocities=(velocity,), interfaces=(), **kwargs)


def _per_dim(value, ndim: int, what: str) -> tuple:
    if np.ndim(value) == 0:
        return (float(value),) * ndim
    vec = tuple(float(v) for v in value)
    if len(vec) != ndim:
        raise ValueError(f"{what} {vec} has {len(vec)} entries for {ndim} dimensions")
    return vec
