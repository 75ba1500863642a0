"""Imaging with the SA-TTI propagator (``tti.py``): its adjoint, the forward wavefield kept
three ways, the RTM image and the FWI gradient with respect to the squared slowness m = 1/V^2.

The adjoint is exact for the discrete scheme. The forward steps t = 0 .. nt-1 compute P^{t+1}
(then add ``src[t] dt^2 V^2 / b`` into it) and record ``rec[t] = R P^t``. The adjoint steps
t = nt-1 .. 0 compute psi^{t-1} from psi^t and psi^{t+1} with the same stencil (``u.backward``),
add ``rec_adj[t] / C+`` into it (C+ = ``tti.leapfrog_weight``) and record
``src_adj[t] = I^T(C+ dt^2 V^2 / b psi^t)``. Then <F s, d> = <s, F^T d> to round-off.

Summing by parts the derivative of the scheme in m (b m multiplies u.dt2, and qinv u_t), the
gradient of J(m) = 1/2 |R P - d|^2 is the sum over steps and over both fields of
``-b u^t (psi.dt2 + qinv psi_t)`` at step t, psi the adjoint of the residual: the forward
wavefield at step t is what the adjoint step t needs. (A source inside the sponge adds a
term this leaves out: keep sources out of it.) The wavefield is kept in memory (every step),
as snapshots every k steps (a ConditionalDimension: the image of those steps), or recomputed
from binomial checkpoints (``stencilgen.seismic.checkpointing``: the same image as in memory,
exactly).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stencilgen import (ConditionalDimension, Eq, Function, Operator, SparseTimeFunction,
                        TimeFunction)

from .tti import TTIMedium, leapfrog_weight, sa_tti_equations

KEEP = ("memory", "snapshots", "checkpoints")


@dataclass(eq=False)
class Forward:
    """The forward Operator of one medium and geometry, with what it keeps of P and M."""

    op: Operator
    P: TimeFunction
    M: TimeFunction
    src: SparseTimeFunction
    rec: SparseTimeFunction
    keep: str | None
    kept: tuple = ()                # (P, M) as kept: saved every step, or snapshots
    sub: ConditionalDimension | None = None
    factor: int = 1

    @property
    def wavefield(self) -> tuple:
        """What the adjoint reads at step t: the kept copies, or P and M themselves (their
        newest slot, where checkpointing recomputes them)."""
        return self.kept or (self.P, self.M)


def _space_order(medium: TTIMedium) -> int:
    return medium.V.space_order


def forward_operator(medium: TTIMedium, src, rec, keep: str | None = None, factor: int = 1,
                     backend=None, name: str = "TTIForward") -> Forward:
    """The SA-TTI forward run from ``src`` to ``rec``, keeping P and M for imaging: ``keep``
    None (nothing), "memory" (every step), "snapshots" (every ``factor`` steps) or
    "checkpoints" (nothing kept: recomputed)."""
    if keep not in (None,) + KEEP:
        raise ValueError(f"forward_operator: keep={keep!r}; use one of {KEEP} or None")
    grid, so = medium.grid, _space_order(medium)
    P = TimeFunction(name="P", grid=grid, time_order=2, space_order=so)
    M = TimeFunction(name="M", grid=grid, time_order=2, space_order=so)
    dt = grid.stepping_dim.spacing
    eqs = sa_tti_equations(P, M, medium)
    eqs += src.inject(field=P.forward, expr=src * dt ** 2 * medium.V ** 2 / medium.b)
    eqs += rec.interpolate(expr=P)
    nt, kept, sub = src.data.shape[0], (), None
    if keep == "memory":
        kept = tuple(TimeFunction(name=f"{u.name}keep", grid=grid, time_order=0,
                                  space_order=so, save=nt) for u in (P, M))
    elif keep == "snapshots":
        sub = ConditionalDimension("tsub", parent=grid.time_dim, factor=int(factor))
        kept = tuple(TimeFunction(name=f"{u.name}snap", grid=grid, time_order=0,
                                  space_order=so, save=(nt - 1) // int(factor) + 1,
                                  time_dim=sub) for u in (P, M))
    eqs += [Eq(k, u) for k, u in zip(kept, (P, M))]
    op = Operator(eqs, name=name, backend=backend)
    return Forward(op, P, M, src, rec, keep, kept, sub, int(factor))


@dataclass(eq=False)
class Adjoint:
    """The adjoint Operator: ``rec_adj`` in, ``src_adj`` out, and the image and gradient
    summed from the forward wavefield it was built against."""

    op: Operator
    P: TimeFunction
    M: TimeFunction
    rec_adj: SparseTimeFunction
    src_adj: SparseTimeFunction | None
    image: Function | None = None
    gradient: Function | None = None
    extra: dict = field(default_factory=dict)


def adjoint_operator(medium: TTIMedium, rec, src=None, forward: Forward | None = None,
                     backend=None, name: str = "TTIAdjoint", **options) -> Adjoint:
    """The adjoint run: ``rec``'s data (the adjoint source: data or residual, one sample per
    forward step) injected backward in time; with ``src``, F^T d recorded at its points;
    with ``forward``, the cross-correlation image of P and the gradient in m summed from
    ``forward.wavefield`` (under its snapshots' condition when it keeps snapshots).
    ``options``: the Operator's other keyword arguments."""
    grid, so = medium.grid, _space_order(medium)
    P = TimeFunction(name="Pa", grid=grid, time_order=2, space_order=so)
    M = TimeFunction(name="Ma", grid=grid, time_order=2, space_order=so)
    dt = grid.stepping_dim.spacing
    cplus = leapfrog_weight(medium, dt)
    eqs = sa_tti_equations(P, M, medium, backward=True)
    eqs += rec.inject(field=P.backward, expr=rec / cplus)
    if src is not None:
        eqs += src.interpolate(expr=P * cplus * dt ** 2 * medium.V ** 2 / medium.b)
    image = gradient = None
    if forward is not None:
        image = Function(name="image", grid=grid, space_order=so)
        gradient = Function(name="grad", grid=grid, space_order=so)
        eqs += _imaging(medium, (P, M), forward, image, gradient, dt)
    op = Operator(eqs, name=name, backend=backend, **options)
    return Adjoint(op, P, M, rec, src, image, gradient)


def _imaging(medium, adjoint, forward: Forward, image, gradient, dt):
    """The image (P^t psi_P^t) and gradient terms of one adjoint step."""
    dims = {"implicit_dims": forward.sub} if forward.sub is not None else {}
    u_p, u_m = forward.wavefield
    b = medium.b
    terms = []
    for u, v in zip((u_p, u_m), adjoint):
        term = v.dt2
        if medium.qinv is not None:
            term = term - medium.qinv * (v.forward - v.backward) / (2 * dt)
        terms.append(u * term)
    return [Eq(image, image + u_p * adjoint[0], **dims),
            Eq(gradient, gradient - b * (terms[0] + terms[1]), **dims)]


def misfit(rec_data, observed) -> float:
    """J = 1/2 |rec - observed|^2 (float64 sum)."""
    diff = np.asarray(rec_data, dtype=np.float64) - np.asarray(observed, dtype=np.float64)
    return 0.5 * float(np.sum(diff * diff))


def laplace_filter(image: np.ndarray, spacing) -> np.ndarray:
    """The Laplacian of an image (second differences, zero at the edges): it keeps the
    reflectors and removes the smooth backscatter of the imaging condition."""
    out = np.zeros_like(image, dtype=np.float64)
    inner = tuple(slice(1, -1) for _ in image.shape)
    for axis, h in enumerate(spacing):
        up = [slice(1, -1)] * image.ndim
        down = [slice(1, -1)] * image.ndim
        up[axis], down[axis] = slice(2, None), slice(None, -2)
        out[inner] += (image[tuple(up)] - 2 * image[inner] + image[tuple(down)]) / h ** 2
    return out


# -- running ------------------------------------------------------------------------------

def zero(*functions):
    """Zeros where the values are (on the GPU for GPU runs: no copy through the host)."""
    for f in functions:
        if f is not None:
            f.zero()


def run_forward(fwd: Forward, dt: float, **kwargs):
    """Steps t = 0 .. nt-1 from rest; returns the performance summary."""
    zero(fwd.P, fwd.M, fwd.rec)   # the kept steps are all written again
    nt = fwd.src.data.shape[0]
    return fwd.op.apply(time_m=0, time_M=nt - 1, dt=dt, **kwargs)


def run_adjoint(adj: Adjoint, dt: float, **kwargs):
    """Steps t = nt-1 .. 0 from rest, with ``adj.rec_adj``'s data as the adjoint source (the
    image and gradient start from zero)."""
    zero(adj.P, adj.M, adj.src_adj, adj.image, adj.gradient)
    nt = adj.rec_adj.data.shape[0]
    return adj.op.apply(time_m=0, time_M=nt - 1, dt=dt, **kwargs)


@dataclass
class Migration:
    """One shot's imaging: the misfit, the image, the gradient, and what it cost."""

    misfit: float
    image: np.ndarray
    gradient: np.ndarray
    forward_seconds: float       # the forward run(s), recomputation included
    adjoint_seconds: float
    forward_steps: int           # forward steps taken (nt without checkpoints)
    checkpoints: int | None = None


def migrate(fwd: Forward, adj: Adjoint, observed: np.ndarray, dt: float,
            checkpoints: int | None = None) -> Migration:
    """The forward run of ``fwd`` (kept as it keeps), the residual ``rec - observed`` sent
    back by ``adj``, which sums the image and the gradient. With ``fwd.keep ==
    "checkpoints"``, ``checkpoints`` states at most are stored (binomial checkpointing)."""
    nt = fwd.src.data.shape[0]
    if fwd.keep == "checkpoints":
        return _migrate_checkpointed(fwd, adj, observed, dt, nt, checkpoints)
    f = run_forward(fwd, dt)
    adj.rec_adj.data[:] = np.asarray(fwd.rec.data) - observed
    a = run_adjoint(adj, dt)
    return Migration(misfit(fwd.rec.data, observed), np.array(adj.image.data),
                     np.array(adj.gradient.data), f.globals_with_setup.time,
                     a.globals_with_setup.time, nt)


def _migrate_checkpointed(fwd, adj, observed, dt, nt, checkpoints):
    """``migrate`` recomputing the forward states from at most ``checkpoints`` stored ones:
    the adjoint runs one step at a time, each with the forward state of that step."""
    from .checkpointing import Reversal
    if checkpoints is None:
        raise ValueError("migrate: give the number of checkpoints for keep='checkpoints'")
    zero(fwd.P, fwd.M, fwd.rec, adj.P, adj.M, adj.src_adj, adj.image, adj.gradient)
    slots, clock = {}, {"forward": 0.0, "adjoint": 0.0}
    states = (fwd.P.field.storage, fwd.M.field.storage)

    def timed(kind, op, lo, hi):
        clock[kind] += op.apply(time_m=lo, time_M=hi, dt=dt).globals_with_setup.time

    reversal = Reversal(
        nt, checkpoints,
        advance=lambda a, b: timed("forward", fwd.op, a, b - 1),
        save=lambda k, slot: slots.__setitem__(slot, [s.checkpoint() for s in states]),
        restore=lambda slot: [s.restore(c) for s, c in zip(states, slots[slot])],
        reverse=lambda k: timed("adjoint", adj.op, k, k))
    with _quiet():
        reversal.forward()   # the records complete: the residual is known
        adj.rec_adj.data[:] = np.asarray(fwd.rec.data) - observed
        stats = reversal.backward()
    return Migration(misfit(fwd.rec.data, observed), np.array(adj.image.data),
                     np.array(adj.gradient.data), clock["forward"], clock["adjoint"],
                     stats.forward_steps, checkpoints)


def _quiet():
    """Holds back the per-apply performance reports of many small applies."""
    from .propagators import _no_perf_report
    return _no_perf_report()
