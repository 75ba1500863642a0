"""Staging (``STENCILGEN_STAGING``, ``ir/fusion._staging``): a CUDA nest reading arrays at
neighbours becomes a producer of its values, from shared rings of the input planes, fused with
a consumer that stores them. Its decisions (taken, refused with a reason, off by default), and
its results against the unstaged nest's: the CUDA source run by the emulation (every launch
shape, the threads of a block in turn forward and backward) with a sponge, a source and
receivers, stored in float32 and in float16; on a GPU, the same against C."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import cuda_emulation
from stencilgen import (Eq, Function, Grid, Operator, SparseTimeFunction, TimeFunction,
                        configuration, solve, switchconfig)
from stencilgen.seismic.propagators import batched_grid
from test_cuda import needs_gpu, needs_nvcc

NT = 7


def _shot(name, backend="cuda", stage=True, storage=None, shape=(23, 21, 37),
          src_at=(101.0, 97.3, 181.7), save=None):
    """The acoustic with a damping term, a source (at ``src_at``) and three receivers
    (``stage`` None: the configuration's setting; ``save``: u keeps that many steps)."""
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8, storage=storage,
                     save=save)
    m = Function(name="m", grid=grid, space_order=8)
    m.data[:] = 1 / (1.5 + 0.5 * np.random.RandomState(3).rand(*shape)) ** 2
    d = Function(name="d", grid=grid, space_order=8)
    d.data[:] = np.linspace(0.0, 0.02, shape[0])[:, None, None]
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=NT + 1,
                             coordinates=[src_at])
    src.data[:] = np.sin(np.arange(NT + 1) / 2.0)[:, None]
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=3, nt=NT + 1,
                             coordinates=[(92.0 + 9.5 * i, 95.0, 186.0) for i in range(3)])
    eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace + d * u.dt, u.forward))]
    eqs += src.inject(field=u.forward, expr=src * 0.5)
    eqs += rec.interpolate(expr=u)
    with switchconfig(**({} if stage is None else {"staging": stage})):
        op = Operator(eqs, name=name, backend=backend)
    return op, u, rec


def _run(op, backend, tmp_path, **kw):
    if backend == "cuda":
        assert cuda_emulation.run(op, str(tmp_path), time_M=NT - 1, dt=1.0, **kw) == 0
    else:
        op.apply(time_M=NT - 1, dt=1.0)


def test_staging_is_on_by_default_and_turns_off():
    assert configuration["staging"] is True
    op, _, _ = _shot("StagedDefault", stage=None)
    assert sum(k.fusion is not None for k in op.program.kernels) == 1
    with switchconfig(staging=False):
        op, _, _ = _shot("StagedOff", stage=None)
    assert all(k.fusion is None for k in op.program.kernels)


def test_staging_is_taken_and_refused_with_reasons(caplog):
    """The 3D nest is staged (one kernel, u in a shared ring); a 2D nest, a batch's nest and
    a nest reading nothing at neighbours are not, the log says why."""
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        op, _, _ = _shot("StagedTaken")
        said = " ".join(r.getMessage() for r in caplog.records)
    (k,) = [k for k in op.program.kernels if not k.is_sparse]
    assert k.fusion is not None and [s.name for s in k.fusion.staged] == ["u"]
    assert "section0 staged, streaming along x (in shared rings: u" in said
    caplog.clear()
    v = TimeFunction(name="v", grid=Grid(shape=(30, 40)), space_order=4)
    batch = batched_grid(Grid(shape=(20, 24)), 3)
    q = TimeFunction(name="q", grid=batch, space_order=4)
    w = TimeFunction(name="w", grid=Grid(shape=(10, 12, 14)))
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        with switchconfig(staging=True):
            for name, eq in (("Staged2D", Eq(v.forward, v + v.laplace)),
                             ("StagedBatch", Eq(q.forward, q + q.dx2 + q.dy2)),
                             ("StagedPoint", Eq(w.forward, 2 * w))):
                op = Operator([eq], name=name, backend="cuda")
                assert all(k.fusion is None for k in op.program.kernels), name
        said = " ".join(r.getMessage() for r in caplog.records)
    assert "Staged2D`: section0 is not staged: a 2D nest" in said
    assert "StagedBatch`: section0 is not staged: it spans a batch's copies" in said
    assert "StagedPoint`: section0 is not staged: it reads nothing at neighbours" in said


@needs_nvcc
@pytest.mark.parametrize("storage", [None, "float16"])
def test_staged_equals_unstaged(storage, tmp_path):
    """Every launch shape of the staged nest, the threads in turn forward for even shapes and
    backward for odd ones: fields and records equal the unstaged nest's (the same arithmetic:
    to round-off, float16 storage included)."""
    ref, u0, rec0 = _shot(f"Unstaged{storage}", stage=False, storage=storage)
    _run(ref, "cuda", tmp_path)
    want_u, want_r = np.array(u0.data, dtype=np.float32), np.array(rec0.data)
    assert np.abs(want_r).max() > 1e-3
    op = _shot(f"Staged{storage}", storage=storage)[0]
    (k,) = [k for k in op.program.kernels if k.fusion is not None]
    offered = op._emitter.launch_shapes()[k.section.timer]
    assert len(offered) > 1
    for s in range(len(offered)):
        op, u, rec = _shot(f"Staged{storage}", storage=storage)
        tuning = [0] * len(op.program.kernels)
        tuning[k.section.timer] = s
        _run(op, "cuda", tmp_path, tuning=tuning, reverse=bool(s % 2))
        got = np.array(u.data, dtype=np.float32)
        assert np.abs(got - want_u).max() <= 1e-6 * np.abs(want_u).max(), offered[s]
        assert np.abs(np.array(rec.data) - want_r).max() <= 1e-6 * np.abs(want_r).max()


@needs_nvcc
@pytest.mark.parametrize("storage", [None, "float16"])
def test_the_rings_without_the_register_queue_equal_it(storage, tmp_path):
    """Staged nests queue their inputs' columns by default (``STENCILGEN_REGISTER_QUEUE``,
    checked over every launch shape above); off, u's ring holds its ten planes: the default
    launch shape and another, the threads forward and backward, give the unstaged nest's
    fields and records."""
    ref, u0, rec0 = _shot(f"RingRef{storage}", stage=False, storage=storage)
    _run(ref, "cuda", tmp_path)
    want_u, want_r = np.array(u0.data, dtype=np.float32), np.array(rec0.data)
    queued = _shot(f"Queued{storage}", storage=storage)[0]
    assert "sg_q_sg_st_u_t0_8 = " in queued.ccode and ", 4)\n" in queued.ccode
    for s in (0, 3):
        with switchconfig(register_queue="off"):
            op, u, rec = _shot(f"Ringed{storage}", storage=storage)
        (k,) = [k for k in op.program.kernels if k.fusion is not None]
        assert [(st.ring, st.queue) for st in k.fusion.staged] == [(10, 0)]
        assert "sg_q_" not in op.ccode
        tuning = [0] * len(op.program.kernels)
        tuning[k.section.timer] = s
        _run(op, "cuda", tmp_path, tuning=tuning, reverse=bool(s % 2))
        got = np.array(u.data, dtype=np.float32)
        assert np.abs(got - want_u).max() <= 1e-6 * np.abs(want_u).max()
        assert np.abs(np.array(rec.data) - want_r).max() <= 1e-6 * np.abs(want_r).max()


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("storage", [None, "float16"])
def test_staged_on_the_gpu_equals_c(storage):
    ref, u0, rec0 = _shot(f"StagedRefC{storage}", backend="c", stage=False, storage=storage)
    ref.apply(time_M=NT - 1, dt=1.0)
    op, u, rec = _shot(f"StagedGpu{storage}", storage=storage)
    op.apply(time_M=NT - 1, dt=1.0)
    want = np.array(u0.data, dtype=np.float32)
    tol = 1e-5 if storage is None else 1e-3
    assert np.abs(np.array(u.data, dtype=np.float32) - want).max() <= tol * np.abs(want).max()
    assert np.abs(np.array(rec.data) - np.array(rec0.data)).max() <= \
        tol * np.abs(np.array(rec0.data)).max()


@needs_nvcc
def test_a_saved_field_is_staged(tmp_path, caplog):
    """A field that keeps every step (a forward run of imaging), written at time + 1 and read
    at time and time - 1, is staged (distinct steps: no slot read is written); fields and
    records equal the unstaged nest's. Two steps a pass are refused for it (its levels are
    its own steps: no ring to keep them in)."""
    out = []
    for stage in (False, True):
        with caplog.at_level(logging.INFO, logger="stencilgen"):
            op, u, rec = _shot(f"StagedSaved{int(stage)}", stage=stage, save=NT + 1)
        assert sum(k.fusion is not None for k in op.program.kernels) == int(stage)
        _run(op, "cuda", tmp_path)
        out.append((np.array(u.data), np.array(rec.data)))
    assert "section0 runs one time step a pass: u keeps every step" in caplog.text
    (u0, r0), (u1, r1) = out
    assert np.abs(r0).max() > 1e-3 and np.abs(u0[NT]).max() > 1e-3
    assert np.abs(u1 - u0).max() <= 1e-6 * np.abs(u0).max()
    assert np.abs(r1 - r0).max() <= 1e-6 * np.abs(r0).max()


def sponge_shot(name):
    """The seismic acoustic shot of 19x17x23 points and a sponge of 6 (its damping a zero
    box: the nest split at run time), a source and five receivers, 12 steps, on CUDA:
    (Operator, u, shot, dt)."""
    from stencilgen.seismic.geometry import make_shot
    from stencilgen.seismic.model import Model
    from stencilgen.seismic.propagators import acoustic_operator
    from stencilgen.seismic.wavelets import TimeAxis
    shape = (19, 17, 23)
    model = Model(vp=np.full(shape, 1.5, dtype=np.float32), spacing=10.0, nbl=6,
                  space_order=8, dtype=np.float32)
    dt = float(model.critical_dt)
    axis = TimeAxis(start=0.0, stop=11 * dt, step=dt, num=12)
    ext = model.extent
    rec = [[x, 0.45 * ext[1], 0.3 * ext[2]] for x in np.linspace(0.3, 0.7, 5) * ext[0]]
    shot = make_shot(model, axis, 0.05, [0.5 * ext[0], 0.5 * ext[1], 0.3 * ext[2]],
                     np.array(rec))
    op, u = acoustic_operator(model, shot, name=name, backend="cuda")
    return op, u, shot, dt


@needs_nvcc
def test_a_staged_nest_with_a_sponge_skips_the_damping_in_its_box(tmp_path):
    """The seismic acoustic shot (its sponge a zero box: the unstaged nest splits at run time):
    staged, the nest keeps the split and runs one body, its read of the damping predicated off
    inside the box (zero there by declaration); fields and records equal to the split unstaged
    nest's."""
    out = []
    for stage in (False, True):
        with switchconfig(staging=stage):
            op, u, shot, dt = sponge_shot(f"StagedSponge{int(stage)}")
        (k,) = [k for k in op.program.kernels if not k.is_sparse]
        assert (k.fusion is not None, k.split is not None) == (stage, True)
        if stage:   # the damping's load tests the box (its bounds are the kernel's arguments)
            src = op.ccode
            assert "damp_zlo0 && x <= damp_zhi0" in src and "inside the zero box" not in src
        assert cuda_emulation.run(op, str(tmp_path), time_m=0, time_M=10, dt=dt) == 0
        out.append((np.array(u.data), np.array(shot.rec.data)))
    (u0, r0), (u1, r1) = out
    assert np.abs(r0).max() > 0.1
    assert np.abs(u1 - u0).max() <= 1e-6 * np.abs(u0).max()
    assert np.abs(r1 - r0).max() <= 1e-6 * np.abs(r0).max()
