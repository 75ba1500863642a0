"""Pointwise accumulations folded into the nest that produces their operand (ir/folding): the
acoustic gradient ``grad - u * v.dt2`` and SA-TTI's image and gradient join the adjoint's
stencil nest, the receivers' injection compensated; the numbers are the unfolded ones to
round-off (float64: 1e-13), on C and in the emulated CUDA source."""
from __future__ import annotations

import numpy as np
import pytest

from stencilgen import Eq, Function, Grid, Operator, SparseTimeFunction, TimeFunction
from stencilgen.seismic import autograd
from stencilgen.seismic.model import Model
from stencilgen.seismic.tti import tti_medium

from test_cuda import needs_nvcc


def _shot(dtype, backend="c", name="Fold", **options):
    shape, nt = (44, 36), 160
    inner = tuple(n - 16 for n in shape)
    z = np.linspace(0, 1, inner[-1])[None, :]
    model = Model(vp=np.broadcast_to(1.5 + z, inner), spacing=10.0, nbl=8, space_order=8,
                  dtype=dtype)
    ex, ez = (10.0 * (n - 1) for n in inner)
    shot = autograd.AcousticShot(model, [(0.5 * ex, 0.2 * ez)],
                                 [(x * ex, 0.1 * ez) for x in np.linspace(0.1, 0.9, 7)], nt,
                                 0.5 * model.critical_dt, backend=backend, name=name, **options)
    m = np.array(model.m.data)
    xx, zz = np.meshgrid(*[np.arange(n) for n in m.shape], indexing="ij")
    slower = m * (1 + 0.05 * np.exp(-((xx - 22) ** 2 + (zz - 20) ** 2) / 20.0))
    wavelet = np.exp(-((np.arange(nt) - 25) / 7.0) ** 2).astype(dtype)
    return shot, m, slower, wavelet


def _gradient(shot, m, slower, wavelet):
    observed = shot.forward(slower, wavelet)
    data = shot.forward(m, wavelet)
    return shot.backward(data - observed)[0]


def _grid_nests(op):
    return [list(k.writes) for k in op.program.steps if not k.is_sparse]


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-4)])
def test_the_acoustic_gradient_folds_into_the_adjoint_stencil(dtype, tol):
    """One grid nest a step fewer: v and the gradient in one nest, the receivers' injection
    also adding into the gradient; the gradient the unfolded one's (float32: the additions'
    order, 3e-5 of the largest value measured; float64 1e-13)."""
    folded, m, slower, w = _shot(dtype, name=f"Fold{np.dtype(dtype).name}")
    unfolded = _shot(dtype, name=f"Unfold{np.dtype(dtype).name}", _unfolded=True)[0]
    assert _grid_nests(folded.adj) == [["v", "grad"]]
    assert _grid_nests(unfolded.adj) == [["v"], ["grad"]]
    injections = [k for k in folded.adj.program.steps if k.is_sparse and k.kind == "inject"]
    assert sorted(k.target.base.name for k in injections) == ["grad", "v"]
    a, b = _gradient(folded, m, slower, w), _gradient(unfolded, m, slower, w)
    assert np.abs(a - b).max() <= tol * np.abs(b).max()


def test_sa_tti_image_and_gradient_fold_too():
    grid = Grid(shape=(30, 28), extent=(290., 270.), dtype=np.float64)
    shots = [autograd.SATTIShot(tti_medium(grid, 8), [(150., 40.)],
                                [(x, 30.) for x in (50., 150., 250.)], 60, 0.5, backend="c",
                                name=name) for name in ("TTIFold", "TTIUnfold")]
    op = getattr(shots[0].adj, "op", shots[0].adj)
    assert ["Pa", "Ma", "image", "grad"] in _grid_nests(op)
    unfolded = Operator(getattr(shots[1].adj, "op", shots[1].adj)._expressions, backend="c",
                        name="TTIUnfold2", _unfolded=True)
    assert ["image", "grad"] in _grid_nests(unfolded)


def test_a_nonlinear_accumulation_stays_in_its_own_nest():
    """``g + v.backward**2`` after an injection into v.backward: the injection cannot be
    compensated, so the accumulation keeps its nest after it (the unfolded numbers)."""
    grid = Grid(shape=(12, 10), extent=(11., 9.))
    v = TimeFunction(name="v", grid=grid, time_order=2, space_order=2)
    g = Function(name="g", grid=grid)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=8, coordinates=[(5.5, 4.2)])
    src.data[:] = 1.
    eqs = [Eq(v.backward, 0.5 * v + 0.1 * v.laplace)]
    eqs += src.inject(field=v.backward, expr=src)
    eqs += [Eq(g, g + v.backward ** 2)]
    op = Operator(eqs, backend="c")
    assert _grid_nests(op) == [["v"], ["g"]]
    op.apply(time_m=1, time_M=6)
    assert g.data.max() > 0


@needs_nvcc
def test_the_emulated_cuda_source_gives_the_unfolded_gradient(tmp_path):
    """The folded adjoint's CUDA source, emulated on the host, against C unfolded."""
    import cuda_emulation
    reference, m, slower, w = _shot(np.float32, name="FoldRef", _unfolded=True)
    want = _gradient(reference, m, slower, w)
    data = reference.forward(m, w) - reference.forward(slower, w)
    reference.forward(m, w)
    cuda = _shot(np.float32, backend="cuda", name="FoldCuda")[0]
    assert _grid_nests(cuda.adj) == [["v", "grad"]]
    cuda._set(m, w)
    for f in cuda.fields[:2] + (cuda.rec,):
        f.zero()
    assert cuda_emulation.run(cuda.fwd, str(tmp_path), time_m=0, time_M=cuda.nt - 1,
                              dt=cuda.dt) == 0
    cuda.rec_adj.data[:] = cuda._data_columns(data)
    for f in (cuda.fields[2], cuda.src_adj, cuda.gradient):
        f.zero()
    assert cuda_emulation.run(cuda.adj, str(tmp_path), time_m=0, time_M=cuda.nt - 1,
                              dt=cuda.dt) == 0
    got = np.array(cuda.gradient.data)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
