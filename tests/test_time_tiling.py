"""Time-skewed tiles of the C backend (``backends/c/time_tiling.py``): every program below gives
the untiled run's fields bit for bit and its receiver samples to round-off, for tiles of
several widths and depths; the programs it cannot tile say why."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from backends.c import time_tiling as c_timetile
from stencilgen import (ConditionalDimension, Eq, Function, Grid, Inc, Operator,
                        TimeFunction, solve, switchconfig)
from stencilgen.seismic.geometry import make_shot
from stencilgen.seismic.model import Model
from stencilgen.seismic.propagators import acoustic_imaging_operators, acoustic_operator
from stencilgen.seismic.wavelets import TimeAxis

TILES = ["1,1", "3,2", "4,5", "64,64"]
NT = 17


def _notes(caplog) -> str:
    return " ".join(r.getMessage() for r in caplog.records if "time tiles" in r.getMessage())


def _both(build, run, tiles, caplog=None):
    """(untiled, tiled) results of ``run(*build(name))``, the tiles' decision checked."""
    out = []
    for tt in ("0", tiles):
        with switchconfig(time_tiling=tt):
            made = build(f"T{tt.replace(',', 'x')}")
        out.append(run(*made))
    if caplog is not None:
        width, depth = tiles.split(",")
        assert f"time tiles of {width} " in _notes(caplog)
        assert f"points, {depth} steps" in _notes(caplog)
    return out


def _shot_run(shape, so=8, nbl=4, nrec=100):
    model = Model(vp=np.full(shape, 1.5, dtype=np.float32), spacing=10.0, nbl=nbl,
                  space_order=so, dtype=np.float32)
    dt = float(model.critical_dt)
    axis = TimeAxis(start=0.0, stop=(NT - 1) * dt, step=dt, num=NT)
    ext = model.extent
    src = [0.37 * ext[0]] + [0.5 * e for e in ext[1:-1]] + [0.3 * ext[-1]]
    rec = np.array([[x] + [0.45 * e for e in ext[1:-1]] + [0.2 * ext[-1]]
                    for x in np.linspace(0.0, 1.0, nrec) * ext[0]])

    def build(name):
        shot = make_shot(model, axis, 0.03, src, rec)
        op, u = acoustic_operator(model, shot, name=name)
        return op, u, shot

    def run(op, u, shot):
        op.apply(time_m=0, time_M=NT - 1, dt=dt)
        return np.array(u.data), np.array(shot.rec.data)
    return build, run


@pytest.mark.parametrize("tiles", TILES)
@pytest.mark.parametrize("shape", [(23, 19, 11), (31, 17)])
def test_a_shot_with_100_receivers_gives_the_untiled_numbers(shape, tiles, caplog):
    """The acoustic with its sponge, a source off the grid and 100 receivers (some at the
    domain's edges): the wavefield bit for bit, the records within 1e-6 of their largest."""
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        (u0, r0), (u1, r1) = _both(*_shot_run(shape), tiles, caplog)
    assert np.abs(u0).max() > 0 and np.array_equal(u0, u1)
    assert np.abs(r0 - r1).max() <= 1e-6 * np.abs(r0).max()


def _impulse(u):
    u.data[:] = 0
    u.data[(slice(None),) + tuple(n // 2 for n in u.grid.shape)] = 1.0


@pytest.mark.parametrize("tiles", ["2,3", "5,4"])
def test_the_variable_density_program(tiles):
    """Nested staggered derivatives (a temporary without time slots written and read in each
    step, computed past the domain's edges): bit for bit."""
    shape = (21, 18, 15)

    def build(name):
        g = Grid(shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
        p = TimeFunction(name="p", grid=g, time_order=2, space_order=4)
        m, b = Function(name="m", grid=g, space_order=4), Function(name="b", grid=g,
                                                                   space_order=4)
        m.data[:] = 1 / 1.5 ** 2
        b.data[:] = np.linspace(0.8, 1.2, shape[0])[:, None, None]
        div = sum(getattr(b * getattr(p, f"d{n}")(x0=d + d.spacing / 2), f"d{n}")(
            x0=d - d.spacing / 2) for d, n in zip(g.dimensions, "xyz"))
        op = Operator([Eq(p.forward, solve(m * p.dt2 - div, p.forward))], name=name)
        _impulse(p)
        return op, p

    def run(op, p):
        op.apply(time_M=NT, dt=1.0)
        return np.array(p.data)
    a, b = _both(build, run, tiles)
    assert np.abs(a).max() > 0 and np.array_equal(a, b)


@pytest.mark.parametrize("tiles", ["1,2", "3,4"])
def test_two_nests_a_step_staggered_first_order(tiles):
    """v.forward from p, then p.forward from v.forward (time_order 1: two slots each), the
    second nest reading what the first wrote in the same step: bit for bit."""
    shape = (37, 13)

    def build(name):
        g = Grid(shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
        x = g.dimensions[0]
        p = TimeFunction(name="p", grid=g, time_order=1, space_order=4)
        v = TimeFunction(name="v", grid=g, time_order=1, space_order=4, staggered=x)
        dt = g.stepping_dim.spacing
        op = Operator([Eq(v.forward, v - dt * p.dx(x0=x + x.spacing / 2)),
                       Eq(p.forward, p - dt * 2.25 * v.forward.dx(x0=x))], name=name)
        _impulse(p)
        v.data[:] = 0
        return op, p, v

    def run(op, p, v):
        op.apply(time_M=NT, dt=2.0)
        return np.array(p.data), np.array(v.data)
    (p0, v0), (p1, v1) = _both(build, run, tiles)
    assert np.abs(v0).max() > 0 and np.array_equal(p0, p1) and np.array_equal(v0, v1)


def test_snapshots_of_a_conditional_dimension():
    """Every third step saved (a nest under the step's condition): the snapshots equal."""
    shape = (25, 21)

    def build(name):
        g = Grid(shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
        u = TimeFunction(name="u", grid=g, time_order=2, space_order=4)
        sub = ConditionalDimension("ts", parent=g.time_dim, factor=3)
        snap = TimeFunction(name="snap", grid=g, time_order=0, save=NT // 3 + 1, time_dim=sub)
        op = Operator([Eq(u.forward, solve(u.dt2 - u.laplace, u.forward)), Eq(snap, u)],
                      name=name)
        _impulse(u)
        return op, snap

    def run(op, snap):
        op.apply(time_m=0, time_M=NT - 1, dt=2.0)
        return np.array(snap.data)
    a, b = _both(build, run, "4,3")
    assert np.abs(a[-1]).max() > 0 and np.array_equal(a, b)


def test_the_adjoint_runs_backward_in_tiles():
    """The acoustic adjoint (time running down, receivers injected, sources sampled, the
    gradient summed at each step from the kept wavefield, folded into the adjoint's nest
    with the receivers' share injected into it): the adjoint field and the gradient bit for
    bit, the source samples to round-off."""
    shape = (26, 22)
    model = Model(vp=np.full(shape, 1.5, dtype=np.float32), spacing=10.0, nbl=4,
                  space_order=4, dtype=np.float32)
    dt = float(model.critical_dt)
    axis = TimeAxis(start=0.0, stop=(NT - 1) * dt, step=dt, num=NT)
    ext = model.extent

    def build(name):
        fwd_shot = make_shot(model, axis, 0.05, [0.4 * ext[0], 0.3 * ext[1]],
                             np.array([[x * ext[0], 0.2 * ext[1]] for x in (0.2, 0.5, 0.8)]))
        adj_shot = make_shot(model, axis, 0.05, [0.4 * ext[0], 0.3 * ext[1]],
                             np.array([[x * ext[0], 0.2 * ext[1]] for x in (0.2, 0.5, 0.8)]))
        fwd, adj, fields, grad, _ = acoustic_imaging_operators(
            model, fwd_shot.src, fwd_shot.rec, adj_shot.rec, adj_shot.src, "c", name,
            checkpoints=None)
        return fwd, adj, fields, grad, fwd_shot, adj_shot

    def run(fwd, adj, fields, grad, fwd_shot, adj_shot):
        fwd.apply(time_m=0, time_M=NT - 1, dt=dt)
        # the same adjoint source for both (the records differ by round-off)
        adj_shot.rec.data[:] = np.sin(np.arange(adj_shot.rec.data.size) / 3.0).reshape(
            adj_shot.rec.data.shape)
        adj.apply(time_m=0, time_M=NT - 1, dt=dt)
        return np.array(grad.data), np.array(fields[2].data), np.array(adj_shot.src.data)
    (g0, v0, s0), (g1, v1, s1) = _both(build, run, "3,4")
    assert np.abs(g0).max() > 0 and np.array_equal(v0, v1) and np.array_equal(g0, g1)
    assert np.abs(s0 - s1).max() <= 1e-6 * np.abs(s0).max()


def test_what_cannot_be_tiled_says_why(caplog):
    """A sum over a dimension (a nest that runs in order) keeps one step at a time, and the
    log says so; with the setting off nothing is said."""
    g = Grid((12, 10))
    u = TimeFunction(name="u", grid=g, space_order=2)
    s = Function(name="s", grid=g, dimensions=(g.dimensions[0],), shape=(12,))
    eqs = [Eq(u.forward, u + 1), Inc(s, u)]
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        with switchconfig(time_tiling="4,4"):
            Operator(eqs, name="TTsum")
        assert "no time tiles:" in _notes(caplog) and "runs in order" in _notes(caplog)
        caplog.clear()
        with switchconfig(time_tiling="0"):
            Operator(eqs, name="TToff")
        assert not _notes(caplog)
        # a sum over the outer loop (x): the nest walks x in order, which tiles would cut
        t = Function(name="t", grid=g, dimensions=(g.dimensions[1],), shape=(10,))
        with switchconfig(time_tiling="4,4"):
            Operator([Eq(u.forward, u + 1), Inc(t, u)], name="TTouter")
        assert "sums over its outer loops" in _notes(caplog)


def test_bad_tile_sizes_are_refused():
    for bad in ("4", "0,3", "a,b", "4,0", "0,4,3", "4,-1,3"):
        with pytest.raises(Exception, match="time-tiling"):
            with switchconfig(time_tiling=bad):
                pass


def test_the_autotuner_picks_the_tile_sizes(caplog):
    """time_tiling on: the autotuner times the untiled loop (one choice per cache block of
    its first nest) and each offered size on the tiled loop (trials of a whole batch of the
    deepest), keeps one, and the run gives the untiled numbers."""
    from backends.c import blocking as c_blocking
    build, run = _shot_run((24, 20, 12), so=4)

    def tuned(op, u, shot):
        op.apply(time_m=0, time_M=NT - 1, dt=shot.time.step, autotune=True)
        return np.array(u.data), np.array(shot.rec.data)
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        with switchconfig(time_tiling="on"):
            op, u, shot = build("TTtuned")
        timer = c_timetile.timed_nest(op.program).section.timer
        offered = op._emitter.launch_shapes()[timer]
        untiled = len(c_blocking.BLOCKS)
        assert len(offered) == untiled + len(c_timetile.CHOICES[2])
        assert all(s.startswith("no time tiles, ") for s in offered[:untiled])
        assert all(s.startswith("time tiles") for s in offered[untiled:])
        assert sum("x alone" in s for s in offered) == \
            sum(len(ch) == 2 for ch in c_timetile.CHOICES[2]) >= 3
        assert op._emitter.trial_steps == 16
        assert op._emitter.tuned_loop()[:2] == (timer, untiled)
        u1, r1 = tuned(op, u, shot)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "autotuned" in said and "time tiles" in said.split("autotuned")[1]
    with switchconfig(time_tiling="0"):
        op0, u0, shot0 = build("TTuntuned")
    u2, r2 = tuned(op0, u0, shot0)
    assert np.array_equal(u1, u2) and np.abs(r1 - r2).max() <= 1e-6 * np.abs(r2).max()


def test_every_offered_choice_gives_the_untiled_numbers(tmp_path, monkeypatch):
    """time_tiling on in 3D: each choice the autotuner may keep (the untiled loop at each
    cache block, x alone with the threads sharing each nest, x and y a tile a thread) run as
    if tuned gives the untiled fields bit for bit and the receivers to round-off."""
    from stencilgen import configuration
    from stencilgen.runtime import autotune
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    build, run = _shot_run((21, 18, 11), so=4)
    with switchconfig(time_tiling="0"):
        u0, r0 = run(*build("TTchoices0"))
    with switchconfig(time_tiling="on"):
        op, u, shot = build("TTchoices")
    timer = c_timetile.timed_nest(op.program).section.timer
    offered = op._emitter.launch_shapes()[timer]
    for choice in range(len(offered)):
        u.data[:] = 0
        shot.rec.data[:] = 0
        args, _ = op._arguments(time_m=0, time_M=NT - 1, dt=shot.time.step)
        autotune.Remembered(op.source_path.parent).put(
            autotune.size_key(op.program, args), [choice] * len(op.program.kernels))
        assert op._launch_shapes(args, [], False, {})[timer] == choice   # what the run gets
        op.apply(time_m=0, time_M=NT - 1, dt=shot.time.step, autotune=False)
        assert np.array_equal(np.array(u.data), u0), offered[choice]
        assert np.abs(np.array(shot.rec.data) - r0).max() <= 1e-6 * np.abs(r0).max()


def test_sa_tti_in_tiles():
    """The SA-TTI system as benchmarks/vs_devito.py writes it (fluxes in temporaries without
    time slots, two state fields): bit for bit."""
    import stencilgen
    from benchmarks import vs_devito

    def build(name):
        eqs, P = vs_devito.sa_tti(stencilgen, (23, 19, 13), 8)
        op = Operator(eqs, backend="c", name=name)
        vs_devito._impulse(P)
        return op, P

    def run(op, P):
        op.apply(time_m=1, time_M=NT, dt=0.5)
        return np.array(P.data)
    a, b = _both(build, run, "5,4")
    assert np.abs(a).max() > 0 and np.array_equal(a, b)
