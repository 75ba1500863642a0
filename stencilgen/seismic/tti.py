"""The self-adjoint, variable-density, pseudo-acoustic TTI system (Bube, Washbourne, Ergas &
Nemeth, SEG 2016), written in stencilgen's DSL.

Two fields P and M; parameters V (P velocity, km/s), b (buoyancy, 1/density), epsilon, delta,
f = 1 - Vs**2/Vp**2, the tilt theta and azimuth phi of the symmetry axis
n = (sin(theta) cos(phi), sin(theta) sin(phi), cos(theta)) (2D: (sin(theta), cos(theta)) in
(x, z)), eta = sqrt(2 (epsilon - delta) / (f + 2 epsilon)), and an optional attenuation w/Q:

    (b/V^2) (P_tt + (w/Q) P_t) = Div{ b [ (1+2eps) G P - (2eps + f eta^2) n (n.G P)
                                          + f eta sqrt(1-eta^2) n (n.G M) ] }
    (b/V^2) (M_tt + (w/Q) M_t) = Div{ b [ (1-f) G M + f eta^2 n (n.G M)
                                          + f eta sqrt(1-eta^2) n (n.G P) ] }

G is the gradient of forward-staggered first derivatives (x0 = x + h/2), Div the divergence of
backward-staggered ones (x0 = x - h/2), so Div = -G^T and the spatial operator is
self-adjoint. The 2x2 coupling is symmetric. Time stepping is second-order centred (the
attenuation term too), obtained with ``solve``. An optional sponge adds ``b * damp * P_t``
(``damp`` as in ``model.py``; with b = 1 it is the acoustic demo's term).

Everything that makes it fast (the flux temporaries, sin/cos/sqrt of the parameters hoisted
out of the time loop, common subexpressions) is the compiler's job; this file only writes
the physics.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy

from stencilgen import Eq, Function, Operator, TimeFunction, solve

from .model import SAFETY

#: the benchmark's constant ("dummy") medium
DUMMY_MEDIUM = dict(V=1.5, b=1.0, epsilon=0.1, delta=0.05, theta=math.pi / 6,
                    phi=math.pi / 4, f=0.85)


@dataclass(eq=False)
class TTIMedium:
    """The TTI parameters as Functions on one grid (``qinv`` = w/Q and ``damp`` optional),
    stored as ``storage`` (None: the grid's dtype; or 16 bits with scale 1: every parameter
    lies well inside float16's range in km/s, g/cc and radians); ``limits``: the largest V
    and epsilon as given (16-bit storage rounds them, and dt must not depend on that)."""

    grid: object
    V: Function
    b: Function
    epsilon: Function
    delta: Function
    theta: Function
    phi: Function | None
    f: float
    qinv: Function | None = None
    damp: Function | None = None
    storage: object = None
    limits: tuple | None = None

    @property
    def vmax(self) -> float:
        return self.limits[0] if self.limits else float(np.max(self.V.data))

    @property
    def epsmax(self) -> float:
        return self.limits[1] if self.limits else float(np.max(self.epsilon.data))


def tti_medium(grid, space_order: int, V=1.5, b=1.0, epsilon=0.1, delta=0.05,
               theta=math.pi / 6, phi=math.pi / 4, f=0.85, qinv=None, damp=None,
               storage=None) -> TTIMedium:
    """Functions filled from scalars or arrays of the grid's shape (halos edge-padded), stored
    as ``storage`` (None, numpy.float16 or "bfloat16").

    Checks that the medium is physical: V > 0, b > 0, epsilon >= delta, 0 < f <= 1 and
    f + 2 epsilon > 0 (so that eta is real and eta <= 1)."""
    if not 0 < float(f) <= 1:
        raise ValueError(f"tti_medium: f = 1 - Vs^2/Vp^2 = {f} must be in (0, 1]")

    def make(name, value):
        fn = Function(name=name, grid=grid, space_order=space_order, storage=storage)
        value = np.asarray(value, dtype=np.float64)
        if not np.all(np.isfinite(value)):
            raise ValueError(f"tti_medium: {name} has non-finite values")
        if value.ndim == 0:   # a constant: no array of the (maybe huge, split) grid's shape
            fn.data_with_halo[:] = value
            return fn, value
        arr = np.broadcast_to(value, grid.shape)
        fn.data_with_halo[:] = np.pad(arr, fn.halo, mode="edge")
        return fn, arr

    V, v = make("V", V)
    b, bb = make("b", b)
    eps, e = make("epsilon", epsilon)
    dlt, d = make("delta", delta)
    if np.any(v <= 0) or np.any(bb <= 0):
        raise ValueError("tti_medium: V and b must be positive everywhere")
    if np.any(e < d):
        raise ValueError(f"tti_medium: epsilon >= delta must hold everywhere (min of "
                         f"epsilon - delta is {float(np.min(e - d)):g}); eta would be imaginary")
    if np.any(f + 2 * e <= 0):
        raise ValueError("tti_medium: f + 2 epsilon must be positive everywhere")
    th, _ = make("theta", theta)
    ph = make("phi", phi)[0] if grid.dim == 3 else None
    q = make("qinv", qinv)[0] if qinv is not None else None
    dm = make("damp", damp)[0] if damp is not None else None
    return TTIMedium(grid, V, b, eps, dlt, th, ph, float(f), q, dm, storage,
                     (float(np.max(v)), float(np.max(e))))


def symmetry_axis(medium: TTIMedium):
    """n, the unit symmetry axis, one component per grid dimension."""
    th = medium.theta
    if medium.grid.dim == 2:
        return [sympy.sin(th), sympy.cos(th)]
    ph = medium.phi
    return [sympy.sin(th) * sympy.cos(ph), sympy.sin(th) * sympy.sin(ph), sympy.cos(th)]


def gradient(u):
    """G u: forward-staggered first derivatives, at x + h/2 along each axis."""
    return [u.diff(d, x0=d + d.spacing / 2) for d in u.grid.dimensions]


def divergence(v, grid):
    """Div v: backward-staggered first derivatives (x0 = x - h/2), minus G's transpose."""
    return sum(c.diff(d, x0=d - d.spacing / 2) for c, d in zip(v, grid.dimensions))


def sa_tti_rhs(P, M, medium: TTIMedium):
    """The spatial operator: (Div{b [...]} for P, Div{b [...]} for M)."""
    eps, dlt, f, b = medium.epsilon, medium.delta, medium.f, medium.b
    eta = sympy.sqrt(2 * (eps - dlt) / (f + 2 * eps))
    cross = f * eta * sympy.sqrt(1 - eta ** 2)
    n = symmetry_axis(medium)
    gp, gm = gradient(P), gradient(M)
    ngp = sum(a * g for a, g in zip(n, gp))
    ngm = sum(a * g for a, g in zip(n, gm))
    flux_p = [b * ((1 + 2 * eps) * gp[i] - (2 * eps + f * eta ** 2) * n[i] * ngp
                   + cross * n[i] * ngm) for i in range(len(n))]
    flux_m = [b * ((1 - f) * gm[i] + f * eta ** 2 * n[i] * ngm + cross * n[i] * ngp)
              for i in range(len(n))]
    return divergence(flux_p, medium.grid), divergence(flux_m, medium.grid)


def sa_tti_equations(P, M, medium: TTIMedium, backward: bool = False):
    """The two update equations P.forward = ..., M.forward = ... (centred in time); with
    ``backward`` the adjoint scheme, solved for P.backward and M.backward: the same but for
    the sign of the first time derivative (attenuation and sponge), whose transpose is minus
    itself, so that the adjoint damps running backward as the forward does running forward
    (the spatial operator is self-adjoint, the second difference symmetric)."""
    rp, rm = sa_tti_rhs(P, M, medium)
    V, b = medium.V, medium.b
    eqs = []
    for u, r in ((P, rp), (M, rm)):
        ut = (u.forward - u.backward) / (2 * u.grid.stepping_dim.spacing)   # centred u_t
        if backward:
            ut = -ut
        damping = u.dt2
        if medium.qinv is not None:
            damping = damping + medium.qinv * ut
        pde = b / V ** 2 * damping - r
        if medium.damp is not None:
            pde = pde + b * medium.damp * ut
        unknown = u.backward if backward else u.forward
        eqs.append(Eq(unknown, solve(pde, unknown)))
    return eqs


def leapfrog_weight(medium: TTIMedium, dt):
    """C+, the factor of u.forward in the scheme: b/V^2/dt^2 + (b qinv/V^2 + b damp)/(2 dt)
    (the adjoint injects with 1/C+ what the forward injects with dt^2 V^2/b)."""
    b, V = medium.b, medium.V
    out = b / V ** 2 / dt ** 2
    if medium.qinv is not None:
        out = out + b * medium.qinv / V ** 2 / (2 * dt)
    if medium.damp is not None:
        out = out + b * medium.damp / (2 * dt)
    return out


def tti_stability_limit(spacing, vmax: float, epsmax: float, space_order: int) -> float:
    """The largest stable leapfrog dt (ms) of the SA-TTI scheme, from a bound on its spectrum.

    The operator is -G^T (B x C) G with C, per point, the symmetric 6x6 (4x4 in 2D) coupling
    of (G P, G M). In n's frame C has eigenvalues 1 + 2 eps and 1 - f across n and 1, 1 - f
    along it (the 2x2 block along n has trace 2 - f and determinant 1 - f), so
    |C| <= max(1, 1 + 2 eps). ||G||^2 <= sum_d (S1 / h_d)^2, S1 = sum_i |w_i| of the
    staggered first-derivative stencil (its symbol at the Nyquist wavenumber, the weights
    alternating in sign). Leapfrog is stable iff dt^2 V^2 lambda_max <= 4, hence

        dt_max = 2 / (V_max sqrt(max(1, 1 + 2 eps_max)) sqrt(sum_d (S1 / h_d)^2)).

    The bound is attained (up to the finite grid) when eps = 0.
    """
    from stencilgen.symbolic.fd_weights import fornberg_weights
    p = space_order // 2
    s1 = sum(abs(float(w)) for w in fornberg_weights([k + 0.5 for k in range(-p, p)], 0, 1))
    lam = sum((s1 / float(h)) ** 2 for h in spacing)
    return 2.0 / (vmax * math.sqrt(max(1.0, 1.0 + 2.0 * epsmax)) * math.sqrt(lam))


def tti_critical_dt(medium: TTIMedium, space_order: int, safety: float = SAFETY) -> float:
    """The time step the demos use: ``safety`` (0.8) times ``tti_stability_limit``."""
    return safety * tti_stability_limit(medium.grid.spacing, medium.vmax, medium.epsmax,
                                        space_order)


def sa_tti_operator(medium: TTIMedium, space_order: int, shot=None, backend=None,
                    name: str = "SATTI", storage=None, compensated: bool = False,
                    nested: str = "domain"):
    """(op, P, M): the SA-TTI time stepper; with a shot, ``src * dt^2 V^2 / b`` is injected
    into P.forward and ``rec`` records P. P and M are stored as ``storage`` (default: the
    medium's), with ``compensated`` stepping if asked (16-bit storage). ``nested``: the
    Operator's; "domain" (the fluxes zero beyond the domain: -G^T B G with G onto the domain)
    is 5 % faster than Devito's "extended" (the fluxes computed past the edges too, 5 % more
    of them at 412x423x476) and as exactly self-adjoint."""
    grid = medium.grid
    if storage is None:
        storage = medium.storage
    P, M = (TimeFunction(name=n, grid=grid, time_order=2, space_order=space_order,
                         storage=storage, compensated=compensated) for n in "PM")
    eqs = sa_tti_equations(P, M, medium)
    if shot is not None:
        dt = grid.stepping_dim.spacing
        eqs += shot.src.inject(field=P.forward, expr=shot.src * dt ** 2 * medium.V ** 2 / medium.b)
        eqs += shot.rec.interpolate(expr=P)
    return Operator(eqs, name=name, backend=backend, nested=nested), P, M
