"""Two time steps a pass (``STENCILGEN_TIME_STEPS``, ``ir/steps``, ``backends/cuda_steps``): a
staged CUDA nest stepping one buffered field also offers a pass computing steps t+1 and t+2
(the first kept in a shared ring for the second). Its decisions (planned, refused with a
reason), and its results against one step at a time: the CUDA source run by the emulation
(each tile of the pass, the threads of a block in turn forward and backward) with a sponge, a
source and receivers, an odd and an even number of steps, a source on the domain's edge (the
run goes one step at a time), float32 and float16 storage; on a GPU, a shot with 200
receivers."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import cuda_emulation
from stencilgen import (Eq, Grid, Operator, SparseTimeFunction, TimeFunction,
                        solve, switchconfig)
from stencilgen.runtime import autotune
from test_cuda import needs_gpu, needs_nvcc
from test_staging import _shot, sponge_shot


def _nest(op):
    (k,) = [k for k in op.program.kernels if not k.is_sparse]
    return k


def _pass_shapes(op) -> list[int]:
    """The tuning indices of the pass's launch shapes (after the one-step nest's)."""
    offered = op._emitter.launch_shapes()[_nest(op).section.timer]
    return [i for i, what in enumerate(offered) if what.startswith("two time steps a pass")]


def test_the_staged_acoustic_may_run_two_steps_a_pass(caplog):
    """The pass of the acoustic: step t+1 produced over the tile and a cross of 4 points
    around it (the laplacian's reach) into a shared ring, u[t] staged with twice that halo,
    levels t+1 and t+2 stored; four buffers (u's three slots and one more)."""
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        op, _, _ = _shot("StepsPlanned")
    k = _nest(op)
    s = k.steps
    assert s is not None and s.field == "u" and s.buffers == 4
    assert sorted(lv for _, lv in s.levels) == [-1, 0, 1]
    assert s.reach == ((-4, 4),) * 3
    f = s.kernel.fusion
    (v,) = f.onchip
    assert v.place == "shared" and v.halo[0] == (4, 4) and v.reach == (-4, 4) and f.lag == 4
    (u,) = f.staged
    assert u.name == "u" and u.halo[0] == (8, 8) and u.reach == (-4, 4)
    time = op.program.time
    assert {o[0] for o in s.kernel.writes["u"]} == {time + 1, time + 2}
    # the first step on the tile and its cross: 1 + 2*(4 + 4)/32 on a 32x32 tile
    assert f.recompute[f.tiles.index((32, 32))] == pytest.approx(1.5)
    assert "section0 may run two time steps a pass (tiles 32x32" in caplog.text
    offered = op._emitter.launch_shapes()[k.section.timer]
    assert len(_pass_shapes(op)) == 4 * len(f.tiles) and len(offered) > len(_pass_shapes(op))
    with switchconfig(**{"time-steps": False}):
        op, _, _ = _shot("StepsOff")
    assert _nest(op).steps is None and not _pass_shapes(op)


def _eqs(kind, grid):
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    lap = u.laplace
    if kind == "backward":
        return [Eq(u.backward, solve(u.dt2 - lap, u.backward))]
    if kind == "second field":
        w = TimeFunction(name="w", grid=grid, time_order=2, space_order=4)
        return [Eq(u.forward, solve(u.dt2 - lap - w, u.forward))]
    if kind == "two fields":
        w = TimeFunction(name="w", grid=grid, time_order=2, space_order=4)
        return [Eq(u.forward, solve(u.dt2 - lap, u.forward)),
                Eq(w.forward, solve(w.dt2 - w.laplace - u, w.forward))]
    if kind == "injected first":
        src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=9,
                                 coordinates=[(50.0, 50.0, 50.0)])
        return src.inject(field=u.forward, expr=src) + \
            [Eq(u.forward, solve(u.dt2 - lap, u.forward))]
    if kind == "current step":
        src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=9,
                                 coordinates=[(50.0, 50.0, 50.0)])
        return [Eq(u.forward, solve(u.dt2 - lap, u.forward))] + \
            src.inject(field=u, expr=src)
    raise ValueError(kind)


@pytest.mark.parametrize("kind, why", [
    ("backward", "its time loop runs backward"),
    ("second field", "it reads w, a second time-varying field"),
    ("two fields", "it writes u, w (two steps a pass step one field)"),
    ("current step", "writes u at another step than the one computed"),
    ("injected first", "touches u at the step computed before the nest runs"),
])
def test_two_steps_refused_with_reasons(kind, why, caplog):
    grid = Grid(shape=(12, 14, 16), extent=(110.0, 130.0, 150.0))
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        op = Operator(_eqs(kind, grid), name=f"StepsNo{kind.title().replace(' ', '')}",
                      backend="cuda")
    assert all(getattr(k, "steps", None) is None for k in op.program.kernels)
    assert "runs one time step a pass: " in caplog.text and why in caplog.text


def _run(op, tmp_path, nt, shape=None, reverse=False, **kw):
    tuning = None
    if shape is not None:
        tuning = [0] * len(op.program.kernels)
        tuning[_nest(op).section.timer] = shape
    assert cuda_emulation.run(op, str(tmp_path), time_M=nt, dt=1.0, tuning=tuning,
                              reverse=reverse, **kw) == 0


@needs_nvcc
@pytest.mark.parametrize("storage", [None, "float16"])
def test_two_steps_equal_one_step(storage, tmp_path):
    """Each tile of the pass (a chunk count each, the threads forward and backward), an odd
    and an even number of steps (the odd last one a step alone): the field's three slots and
    the records equal one step at a time's, the source injected and the receivers sampled at
    their steps."""
    for nt in (6, 7):
        ref, u0, rec0 = _shot(f"StepsRef{storage}", storage=storage)
        _run(ref, tmp_path, nt)
        want_u, want_r = np.array(u0.data, dtype=np.float32), np.array(rec0.data)
        assert np.abs(want_r).max() > 1e-3
        op = ref
        for i, s in enumerate(_pass_shapes(op)[::5]):
            op, u, rec = _shot(f"StepsRef{storage}", storage=storage)
            _run(op, tmp_path, nt, s, reverse=bool(i % 2))
            got = np.array(u.data, dtype=np.float32)
            assert np.abs(got - want_u).max() <= 1e-6 * np.abs(want_u).max(), (nt, s)
            assert np.abs(np.array(rec.data) - want_r).max() <= 1e-6 * np.abs(want_r).max()


@needs_nvcc
def test_a_source_on_the_edge_runs_one_step_at_a_time(tmp_path):
    """A source within two nodes of the domain's edge injects into the field's halo, which no
    step rewrites: the run goes one step at a time (the same results)."""
    results = []
    for at in ((101.0, 97.3, 181.7), (5.0, 97.3, 181.7)):
        for two in (False, True):
            op, u, rec = _shot("StepsEdge", src_at=at)
            timed = {}
            _run(op, tmp_path, 6, _pass_shapes(op)[0] if two else None, timed=timed)
            results.append((np.array(u.data), np.array(rec.data), timed["mallocs"]))
    (_, _, inside1), (_, _, inside2), (u0, r0, edge1), (u1, r1, edge2) = results
    assert np.abs(u0).max() > 0
    assert np.array_equal(u0, u1) and np.array_equal(r0, r1)
    # the pass's buffer more is allocated for the source inside, not for the one on the edge
    assert inside2 == inside1 + 1 and edge2 == edge1


@needs_nvcc
def test_a_run_stopped_after_a_pass_leaves_its_levels_in_the_slots(tmp_path):
    """A stop asked before the run (Ctrl-C's flag): one step at a time stops after a step,
    the pass after a pass (two steps, counted so); the field's slots then hold what a run of
    that many steps leaves."""
    counts, fields = [], []
    for two in (False, True):
        op, u, _ = _shot("StepsStopped")
        control = [1, 0]
        _run(op, tmp_path, 6, _pass_shapes(op)[0] if two else None, control=control)
        counts.append(control[1])
        fields.append(np.array(u.data))
        ref, u0, _ = _shot("StepsStopped")
        _run(ref, tmp_path, control[1])   # time_m is 1: steps 1 .. control[1]
        assert np.array_equal(fields[-1], np.array(u0.data)), two
    assert counts == [1, 2] and np.abs(fields[1]).max() > 0


@needs_nvcc
def test_no_memory_for_the_buffer_more_runs_one_step_at_a_time(tmp_path):
    """The pass needs a buffer of one of the field's slots more: where the GPU has no memory
    for it, the run goes one step at a time (the same results, no error)."""
    results = []
    for limit in (None, 1024):
        op, u, rec = _shot("StepsNoMemory")
        timed = {}
        _run(op, tmp_path, 6, _pass_shapes(op)[0], malloc_max=limit, timed=timed)
        results.append((np.array(u.data), np.array(rec.data), timed["mallocs"]))
    (u0, r0, n0), (u1, r1, n1) = results
    assert np.array_equal(u0, u1) and np.array_equal(r0, r1)
    assert n0 == n1 + 1   # the buffer more, allocated where there was memory for it


@needs_nvcc
def test_the_seismic_shot_with_its_sponge_runs_two_steps_a_pass(tmp_path):
    """The seismic acoustic (its sponge a zero box, the nest split at run time): the pass keeps
    the split; fields and records equal one step at a time's."""
    out = []
    for two in (False, True):
        op, u, shot, dt = sponge_shot("StepsSponge")
        k = _nest(op)
        assert k.steps is not None and k.steps.kernel.split is not None
        tuning = None
        if two:
            tuning = [0] * len(op.program.kernels)
            tuning[k.section.timer] = _pass_shapes(op)[0]
        assert cuda_emulation.run(op, str(tmp_path), time_m=0, time_M=10, dt=dt,
                                  tuning=tuning) == 0
        out.append((np.array(u.data), np.array(shot.rec.data)))
    (u0, r0), (u1, r1) = out
    assert np.abs(r0).max() > 0.1
    assert np.abs(u1 - u0).max() <= 1e-6 * np.abs(u0).max()
    assert np.abs(r1 - r0).max() <= 1e-6 * np.abs(r0).max()


@pytest.mark.gpu
@needs_gpu
def test_a_shot_with_200_receivers_through_the_pass_on_the_gpu():
    """A shot of 120x110x100 points, 60 steps, a source and 200 receivers, run one step at a
    time and with the pass (remembered as tuned): records equal within 1e-5 of their
    maximum, the field too."""
    from stencilgen.seismic.geometry import make_shot
    from stencilgen.seismic.model import Model
    from stencilgen.seismic.propagators import acoustic_operator
    from stencilgen.seismic.wavelets import TimeAxis
    out = []
    for two in (False, True):
        shape = (120, 110, 100)
        rng = np.random.RandomState(5)
        vp = (1.5 + rng.rand(*shape) * 0.5).astype(np.float32)
        model = Model(vp=vp, spacing=10.0, nbl=10, space_order=8, dtype=np.float32)
        dt = float(model.critical_dt)
        axis = TimeAxis(start=0.0, stop=60 * dt, step=dt, num=61)
        ext = model.extent
        rec = np.array([[x, y, 0.2 * ext[2]] for x in np.linspace(0.1, 0.9, 20) * ext[0]
                        for y in np.linspace(0.1, 0.9, 10) * ext[1]])
        shot = make_shot(model, axis, 0.03, [0.5 * ext[0], 0.5 * ext[1], 0.25 * ext[2]], rec)
        op, u = acoustic_operator(model, shot, name=f"StepsGpu{int(two)}", backend="cuda")
        k = _nest(op)
        kwargs = dict(time_m=0, time_M=59, dt=dt)
        args, _ = op._arguments(**kwargs)
        key = autotune.size_key(op.program, args)
        choice = [0] * max(len(op.program.kernels), 1)
        choice[k.section.timer] = _pass_shapes(op)[0] if two else 0
        autotune.Remembered(op.source_path.parent).put(key, choice)
        op.apply(autotune=False, **kwargs)
        out.append((np.array(u.data), np.array(shot.rec.data)))
    (u0, r0), (u1, r1) = out
    assert np.abs(r0).max() > 0
    assert np.abs(r1 - r0).max() <= 1e-5 * np.abs(r0).max()
    assert np.abs(u1 - u0).max() <= 1e-5 * np.abs(u0).max()
