"""One launch for a step's independent sparse operations (``backends/cuda_sparse``): when it is
taken, when refused, and the results against the C backend's (the CUDA source run by the
emulation, and on a GPU where there is one)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_cases
from stencilgen import (Eq, Function, Grid, Operator, SparseTimeFunction, TimeFunction, solve,
                        switchconfig)
from test_cuda import needs_gpu, needs_nvcc

NT = 24


def _shot(backend, name, sample_forward=False, second_source=False):
    """A 2D acoustic step: sources injected into u.forward, receivers sampling u (or
    u.forward: what the injection writes), optionally a second source set."""
    grid = Grid(shape=(30, 28), extent=(290.0, 270.0))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    m = Function(name="m", grid=grid, space_order=4)
    m.data[:] = 1 / np.linspace(1.5, 2.5, 28) ** 2
    src = SparseTimeFunction(name="src", grid=grid, npoint=2, nt=NT,
                             coordinates=[(101.3, 133.7), (150.0, 61.2)])
    src.data[:] = np.sin(np.arange(NT) / 3.0)[:, None] * [1.0, -0.5]
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=5, nt=NT,
                             coordinates=[(20.0 + 50.5 * i, 40.3) for i in range(5)])
    eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]
    eqs += src.inject(field=u.forward, expr=src * 0.25)
    if second_source:
        more = SparseTimeFunction(name="more", grid=grid, npoint=1, nt=NT,
                                  coordinates=[(101.3, 133.7)])   # a node src adds to too
        more.data[:] = np.cos(np.arange(NT) / 2.0)[:, None]
        eqs += more.inject(field=u.forward, expr=more)
    eqs += rec.interpolate(expr=u.forward if sample_forward else u)
    return Operator(eqs, name=name, backend=backend), u, rec


@needs_nvcc
def test_independent_sparse_sections_share_a_launch():
    """Injecting into u.forward and sampling u (another slot) share one kernel, two
    injections into one field too (their adds are atomic); sampling u.forward, which the
    injection writes, is launched after it."""
    src = _shot("cuda", "SparseOne")[0].ccode
    assert "/* section1 + section2: one launch, blocks split between them */" in src
    assert src.count("__global__ void") == 3            # the nest, the group, the NaN count
    two = _shot("cuda", "SparseTwo", second_source=True)[0].ccode
    assert "section1 + section2 + section3: one launch" in two
    apart = _shot("cuda", "SparseApart", sample_forward=True)[0].ccode
    assert "one launch" not in apart and apart.count("__global__ void") == 4


@pytest.mark.parametrize("case", backend_cases.backends())
@pytest.mark.parametrize("variant", [{}, {"sample_forward": True}, {"second_source": True}])
def test_sparse_launches_give_the_c_numbers(case, variant, tmp_path):
    """The shot's receivers and wavefield, grouped or not, against the C backend's."""
    key = "".join(variant) or "plain"
    op, u, rec = _shot(backend_cases.target(case), f"SparseRun_{case}_{key}", **variant)
    backend_cases.run(op, case, tmp_path, time_M=NT - 2, dt=1.0)
    ref, u_c, rec_c = _shot("c", f"SparseRef_{key}", **variant)
    ref.apply(time_M=NT - 2, dt=1.0)
    scale = float(np.abs(rec_c.data).max())
    assert scale > 1e-3
    assert np.abs(rec.data - rec_c.data).max() <= 1e-5 * scale
    assert np.abs(u.data - u_c.data).max() <= 1e-5 * float(np.abs(u_c.data).max())


def test_sections_timed_together_share_an_entry():
    """With time tiles the C backend times the whole tiled loop as the step's first nest:
    the summary shows one entry for the step's sections, named after all of them, its
    points and flops their sum, and each section's name finds it."""
    with switchconfig(time_tiling="8,2"):
        op, _, _ = _shot("c", "SparseTiledSummary")
    summary = op.apply(time_M=NT - 2, dt=1.0)
    names = [k.name for k in op.program.steps]
    entry = summary.sections[names[0]]
    assert entry.name == "+".join(names) and entry.time > 0
    assert all(summary[n] is entry for n in names)
    apart = _shot("c", "SparseUntiledSummary")[0].apply(time_M=NT - 2, dt=1.0)
    assert [e.name for e in apart.entries()] == names
    assert entry.points == sum(apart[n].points for n in names) > 0
    assert entry.flops == sum(apart[n].flops for n in names)
    assert [e.name for e in summary.entries()] == [entry.name]
    assert len(summary.timings) == 1


@pytest.mark.gpu
@needs_gpu
def test_a_group_is_timed_as_one_entry_on_the_gpu():
    op, _, rec = _shot("cuda", "SparseGpuSummary")
    summary = op.apply(time_M=NT - 2, dt=1.0)
    assert summary["section1"] is summary["section2"]
    assert summary["section1"].name == "section1+section2" and summary["section1"].time > 0
    assert summary["section0"].time > 0 and float(np.abs(rec.data).max()) > 0
