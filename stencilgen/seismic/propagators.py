"""The acoustic propagator with the sponge, and running it in chunks with a progress line."""
from __future__ import annotations

import logging
import time as _time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import numpy as np

from stencilgen import (BatchDimension, ConditionalDimension, Derivative, Eq, Function, Grid,
                        Inc, Operator, TimeFunction, solve)
from stencilgen.distributed.mpi import allreduce_max, gather
from stencilgen.runtime.profiling import PerfEntry, PerformanceSummary

from .keeping import field_bytes, plan, step_bytes


def acoustic_pde(model, u):
    """m * u.dt2 - u.laplace + damp * u_t (= 0), u_t centred: (u.forward - u.backward) / (2 dt)
    (Devito's u.dt, the forward difference, would make the sponge first order in time); the
    Laplacian along the model's dimensions (not a batch's shot axis)."""
    ut = (u.forward - u.backward) / (2 * u.grid.stepping_dim.spacing)
    return model.m * u.dt2 - _laplacian(u, model.grid) + model.damp * ut


def _laplacian(u, grid):
    if u.grid is grid:
        return u.laplace
    return sum(Derivative(u, (d, 2)) for d in grid.dimensions)


def batched_grid(grid, nshots: int) -> Grid:
    """``grid`` with a BatchDimension ``shot`` of ``nshots`` ahead of its dimensions (shot k
    at coordinate k): wavefields on it hold a batch of independent shots, which every
    kernel launch steps together."""
    return Grid(shape=(nshots,) + tuple(grid.shape), dtype=grid.dtype,
                extent=(nshots - 1.0,) + tuple(grid.extent), origin=(0.0,) + tuple(grid.origin),
                dimensions=(BatchDimension("shot"),) + tuple(grid.dimensions))


@dataclass
class BatchModel:
    """What a batch of shots on a model reads: its m and damp as Functions of the model's
    dimensions alone (copies, set by the batch's owner), which every shot of
    ``wavefield_grid`` (the model's ``batched_grid``) shares."""
    grid: Grid             # the model's
    space_order: int
    m: Function
    damp: Function
    wavefield_grid: Grid


def batch_model(model, nshots: int) -> BatchModel:
    """``model``'s BatchModel for ``nshots`` shots, m and damp copied from it."""
    def shared(f):
        own = Function(name=f.name, dimensions=model.grid.dimensions, shape=model.grid.shape,
                       space_order=model.space_order, dtype=model.grid.dtype)
        own.data_with_halo[:] = f.data_with_halo
        own.zero_box = f.zero_box   # the sponge's: every shot's nest splits as the model's
        return own
    return BatchModel(model.grid, model.space_order, shared(model.m), shared(model.damp),
                      batched_grid(model.grid, nshots))


def acoustic_operator(model, shot=None, space_order: int | None = None,
                      backend: str | None = None, name: str = "Acoustic",
                      storage=None, compensated: bool = False):
    """The wavefield ``u`` and the Operator that steps the acoustic PDE with the sponge,
    injecting ``shot.src * dt**2 / m`` into u.forward and recording ``rec`` = u; returns
    (op, u). ``storage``: what u is stored as (default: the model's ``storage``, if any);
    ``compensated``: u keeps what its 16-bit stores round off (compensated stepping)."""
    so = model.space_order if space_order is None else space_order
    if storage is None:
        storage = getattr(model, "storage", None)
    u = TimeFunction(name="u", grid=model.grid, time_order=2, space_order=so, storage=storage,
                     compensated=compensated)
    eqs = [Eq(u.forward, solve(acoustic_pde(model, u), u.forward))]
    if shot is not None:
        dt = model.grid.stepping_dim.spacing
        eqs += shot.src.inject(field=u.forward, expr=shot.src * dt ** 2 / model.m)
        eqs += shot.rec.interpolate(expr=u)
    return Operator(eqs, name=name, backend=backend), u


def acoustic_imaging_operators(model, src, rec, rec_adj, src_adj, backend=None,
                               name: str = "Acoustic", keep=None, who: str | None = None,
                               checkpoints=None, snapshots=None, memory=None, **options):
    """(forward, adjoint, (u, kept u, v), gradient, keeping) for the model gradient of the
    acoustic scheme.

    The forward steps inject ``src * dt^2 / m``, record ``rec = u`` and keep u as
    ``keeping`` (``keeping.plan``: every step where it fits, else recomputed from binomial
    checkpoints; ``checkpoints=`` or ``snapshots=`` choose, ``memory=`` caps the bytes). The
    adjoint is the exact transpose of that discrete run (``seismic/imaging``'s form with
    b = 1 and no attenuation): the same stencil solved for v.backward, the sponge's centred
    first derivative with its sign turned, ``rec_adj / C+`` injected (C+ = m/dt^2 +
    damp/(2 dt), the factor of u.forward), ``src_adj = C+ dt^2/m v`` recorded, and the
    gradient in m summed as ``-u v.dt2`` (m multiplies u.dt2 only: the sponge does not
    scale with it) from the kept u (from u itself, one adjoint step at a time, where the
    states are recomputed; over the snapshots' steps only, which the caller scales).
    ``model`` a BatchModel: the wavefields and the sparse functions on its
    ``wavefield_grid``, the gradient on the model's grid, summed over the shots in the
    adjoint's nest (each point's shots walked in order: the gradient read and written once
    a step for all of them). ``keep``: the kept wavefield's storage (None: the grid's dtype;
    numpy.float16 or "bfloat16": half the memory and traffic, the gradient within the error
    docs/imaging.md states). ``options``: the Operators' other keyword arguments
    (``cflags=``...)."""
    grid, so = getattr(model, "wavefield_grid", model.grid), model.space_order
    dt = grid.stepping_dim.spacing
    nt = src.data.shape[0]
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=so)
    v = TimeFunction(name="v", grid=grid, time_order=2, space_order=so)
    batch = grid is not model.grid
    gradient = Function(name="grad", dimensions=model.grid.dimensions, shape=model.grid.shape,
                        space_order=so, dtype=grid.dtype) if batch else \
        Function(name="grad", grid=grid, space_order=so)
    others = sum(field_bytes(f) for f in (u, v, gradient, model.m, model.damp))
    keeping = plan(who or name, nt, step_bytes(u, keep), field_bytes(u), others, backend,
                   checkpoints, snapshots, memory)
    stencil = Eq(u.forward, solve(acoustic_pde(model, u), u.forward))
    kept, dims = None, {}
    if keeping.mode == "memory":
        kept = TimeFunction(name="ukeep", grid=grid, time_order=0, space_order=so, save=nt,
                            storage=keep)
    elif keeping.mode == "snapshots":
        dims["implicit_dims"] = sub = ConditionalDimension(
            "tsnap", parent=grid.time_dim, factor=keeping.factor)
        kept = TimeFunction(name="usnap", grid=grid, time_order=0, space_order=so,
                            save=(nt - 1) // keeping.factor + 1, time_dim=sub, storage=keep)
    # u kept first: a step does not write u(t), so the copy shares the stencil's nest (one
    # nest and a read of u fewer a step than a copy after the sparse sections)
    fwd = ([Eq(kept, u)] if kept is not None else []) + [stencil]
    fwd += src.inject(field=u.forward, expr=src * dt ** 2 / model.m)
    fwd += rec.interpolate(expr=u)
    vt = (v.forward - v.backward) / (2 * dt)
    pde = model.m * v.dt2 - _laplacian(v, model.grid) - model.damp * vt
    cplus = model.m / dt ** 2 + model.damp / (2 * dt)
    adj = [Eq(v.backward, solve(pde, v.backward))]
    adj += rec_adj.inject(field=v.backward, expr=rec_adj / cplus)
    adj += src_adj.interpolate(expr=v * cplus * dt ** 2 / model.m)
    term = -(u if kept is None else kept) * v.dt2
    adj += [Inc(gradient, term, **dims) if batch else Eq(gradient, gradient + term, **dims)]
    return (Operator(fwd, name=f"{name}F", backend=backend, **options),
            Operator(adj, name=f"{name}A", backend=backend, **options), (u, kept, v), gradient,
            keeping)


# -- chunked runs --------------------------------------------------------------------------

@contextmanager
def _no_perf_report():
    """Holds back stencilgen's per-apply performance report (level PERF) for a while."""
    from stencilgen.logger import PERF, logger

    class _Drop(logging.Filter):
        def filter(self, record):
            return record.levelno != PERF

    flt = _Drop()
    logger.addFilter(flt)
    try:
        yield
    finally:
        logger.removeFilter(flt)


def combine_summaries(summaries) -> PerformanceSummary:
    """One PerformanceSummary for consecutive applies of the same Operator: times, flops,
    points and bytes add up, so the rates are those of the whole run."""
    summaries = list(summaries)
    if not summaries:
        raise ValueError("combine_summaries: no summaries")

    def add(entries, name):
        return PerfEntry(name, sum(e.time for e in entries), sum(e.flops for e in entries),
                         sum(e.points for e in entries), sum(e.traffic for e in entries))

    first = summaries[0]
    sections = {k: add([s.sections[k] for s in summaries], k) for k in first.sections}
    return PerformanceSummary(
        first.name, sections, add([s.globals for s in summaries], first.globals.name),
        add([s.globals_with_setup for s in summaries], first.globals_with_setup.name),
        any(s.compiled for s in summaries), sum(s.timesteps for s in summaries))


def default_progress(done: int, total: int, time_ms: float, elapsed: float) -> None:
    """Prints ``[ 40%] step 240/600, t = 360.0 ms, 1.2 s elapsed, ~1.8 s left``."""
    left = elapsed * (total - done) / done if done else float("nan")
    print(f"[{100 * done / total:3.0f}%] step {done}/{total}, t = {time_ms:.1f} ms, "
          f"{elapsed:.1f} s elapsed, ~{left:.1f} s left", flush=True)


def run_chunked(op, time_m: int, time_M: int, dt: float, chunks: int = 10,
                progress: Callable | None = default_progress,
                on_chunk: Callable | None = None, split_at=(), **kwargs) -> PerformanceSummary:
    """``op.apply(time_m=.., time_M=.., dt=dt)`` in ``chunks`` pieces of consecutive steps.

    Pieces also end before each step in ``split_at``. After each piece
    ``progress(done, total, t_ms, elapsed_s)`` and ``on_chunk(next_step)`` are called (u then
    holds the wavefield at time ``next_step * dt``). The per-piece performance reports are held back and the combined one
    (``combine_summaries``) is logged once at the end, as a single apply would.
    """
    from stencilgen.logger import perf

    total = time_M - time_m + 1
    if total < 1:
        raise ValueError(f"run_chunked: time_m={time_m}, time_M={time_M}: nothing to run")
    chunks = max(1, min(int(chunks), total))
    bounds = {time_m + (total * k) // chunks for k in range(chunks + 1)}
    bounds = sorted(bounds | {int(s) for s in split_at if time_m < s <= time_M})
    summaries = []
    t0 = _time.perf_counter()
    with _no_perf_report():
        for lo, hi in zip(bounds, bounds[1:]):
            summaries.append(op.apply(time_m=lo, time_M=hi - 1, dt=dt, **kwargs))
            if progress is not None:
                progress(hi - time_m, total, hi * dt, _time.perf_counter() - t0)
            if on_chunk is not None:
                on_chunk(hi)
    summary = combine_summaries(summaries)
    for line in summary.report():
        perf(line)
    return summary


# -- one shot -------------------------------------------------------------------------------

def field_values(f, slot: int) -> np.ndarray:
    """Time slot ``slot`` of TimeFunction ``f`` in physical units: what ``f.data`` holds
    times its storage scale, plus what compensated stepping kept (16-bit storage), else
    ``f.data[slot]`` itself."""
    if f.storage_format in ("float32", "float64"):
        return f.data[slot]
    return f.data_unscaled[slot]


def bytes_per_point(summary) -> float:
    """The bytes a run moved per grid point and time step, as the summary counts them (each
    array's element size: 2 for a 16-bit field)."""
    g = summary.globals
    return g.traffic / g.points if g.points else 0.0


def global_values(f, slot: int):
    """``field_values(f, slot)`` of the whole grid: on rank 0 only (None on the others)
    where the grid is split over MPI ranks."""
    if f.grid.decomposition is None:
        return np.array(field_values(f, slot))
    whole = gather(f, root=0)
    if whole is None:
        return None
    values = whole[slot].astype(f.dtype) * f.dtype(f.storage_scale)
    if f.compensation is not None:
        values += gather(f.compensation, root=0)[slot].astype(f.dtype) * f.storage_scale
    return values


class FinalWavefield:
    """Properties of a run's last wavefield, for results holding ``u`` and ``final_slot``
    (on a split grid, over every rank)."""

    @property
    def wavefield(self) -> np.ndarray:
        """This rank's block of the last wavefield (the whole of it without MPI)."""
        return field_values(self.u, self.final_slot)

    @property
    def max_amplitude(self) -> float:
        local = self.wavefield
        return allreduce_max(float(np.max(np.abs(local))) if local.size else 0.0, self.u.grid)

    @property
    def finite(self) -> bool:
        bad = float(not np.all(np.isfinite(self.wavefield)))
        return allreduce_max(bad, self.u.grid) == 0.0


@dataclass
class ShotResult(FinalWavefield):
    """What ``run_shot`` returns: the record, a snapshot, the final wavefield, the summary."""

    model: object
    shot: object
    u: object                    # the recorded TimeFunction
    summary: object              # the PerformanceSummary of the whole run (chunks summed)
    snapshot: np.ndarray         # u (padded grid) at snapshot_time
    snapshot_time: float         # ms
    final_slot: int              # u's slot holding u(t = nt * dt)

    @property
    def record(self) -> np.ndarray:
        return self.shot.rec.data

    @property
    def finite(self) -> bool:
        return super().finite and bool(np.all(np.isfinite(self.record)))


def run_shot(model: object, shot: object, op, u,
             chunks: int | None = None, snapshot_step: int | None = None,
             progress=default_progress) -> ShotResult:
    """Steps time = 0 .. nt-1 (every receiver sample), in ``chunks`` pieces (default: one per
    50 steps, at most 10) with a progress line each; keeps u at ``snapshot_step`` (default
    halfway)."""
    nt = shot.nt
    dt = shot.time.step
    chunks = min(10, max(1, nt // 50)) if chunks is None else chunks
    snapshot_step = max(1, nt // 2) if snapshot_step is None else snapshot_step
    u.data[:] = 0
    if u.compensation is not None:
        u.compensation.data[:] = 0
    shot.rec.data[:] = 0
    kept = {}

    def keep(step):
        if step == snapshot_step:
            kept["u"] = global_values(u, step % 3)

    summary = run_chunked(op, 0, nt - 1, dt, chunks=chunks, progress=progress,
                                  on_chunk=keep, split_at=(snapshot_step,))
    snapshot = kept["u"] if "u" in kept else global_values(u, nt % 3)
    when = snapshot_step if "u" in kept else nt
    return ShotResult(model=model, shot=shot, u=u, summary=summary, snapshot=snapshot,
                      snapshot_time=when * dt, final_slot=nt % 3)
