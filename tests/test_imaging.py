"""Imaging with the SA-TTI propagator (stencilgen/seismic/imaging.py, demos/rtm/run.py): the adjoint
identity, the FWI gradient's Taylor test, the same image from the three ways of keeping the
forward wavefield, and the RTM demo's reflector at its depth."""
from __future__ import annotations

import dataclasses
import functools
import re

import numpy as np
import pytest

from stencilgen import ConditionalDimension, Grid, SparseTimeFunction

from stencilgen.seismic import imaging
from stencilgen.seismic.tti import tti_critical_dt, tti_medium

from test_cuda import needs_gpu

SO = 8
SRC = (0.5, 0.33)                     # fractions of the extent across and in depth
RECS = [(x, 0.17) for x in (0.2, 0.375, 0.51, 0.65, 0.825)]


def _medium(shape=(41, 31), dtype=np.float64, damp=True, qinv=True, so=SO):
    """A medium varying with depth (V, b), anisotropic and tilted, with a sponge along x
    (away from the source) and attenuation."""
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=dtype)
    z = np.linspace(0, 1, shape[-1]).reshape((1,) * (len(shape) - 1) + (-1,))
    sponge = None
    if damp:
        x = np.arange(shape[0])
        ramp = np.maximum(0, 8 - np.minimum(x, shape[0] - 1 - x)) / 8
        sponge = np.broadcast_to(0.2 * ramp.reshape((-1,) + (1,) * (len(shape) - 1)) ** 2,
                                 shape)
    return tti_medium(grid, so, V=np.broadcast_to(1.5 + z, shape), b=1 / (1 + 0.5 * z),
                      epsilon=0.12, delta=0.04, theta=0.4, phi=0.3, f=0.85,
                      qinv=0.02 if qinv else None, damp=sponge)


def _sparse(grid, name, points, nt):
    return SparseTimeFunction(name=name, grid=grid, npoint=len(points), nt=nt,
                              coordinates=points)


def _geometry(medium, nt, src=SRC, recs=RECS):
    g = medium.grid
    ex, ez, extra = g.extent[0], g.extent[-1], [0.5 * e for e in g.extent[1:-1]]
    src = [tuple([src[0] * ex] + extra + [src[1] * ez])]
    recs = [tuple([r[0] * ex] + extra + [r[1] * ez]) for r in recs]
    return (_sparse(g, "src", src, nt), _sparse(g, "rec", recs, nt),
            _sparse(g, "reca", recs, nt), _sparse(g, "srca", src, nt))


@pytest.mark.parametrize("shape, so, qinv, backend", [
    ((41, 31), 8, True, "c"), ((21, 19, 17), 4, False, "c"),
    pytest.param((41, 31), 8, True, "cuda", marks=[pytest.mark.gpu, needs_gpu])])
def test_adjoint_identity(shape, so, qinv, backend):
    """<F s, d> = <s, F^T d> in float64, with the sponge and attenuation on."""
    medium = _medium(shape, qinv=qinv, so=so)
    nt = 120
    src, rec, reca, srca = _geometry(medium, nt)
    dt = tti_critical_dt(medium, so)
    rng = np.random.default_rng(7)
    s, d = rng.standard_normal(src.data.shape), rng.standard_normal(rec.data.shape)
    fwd = imaging.forward_operator(medium, src, rec, backend=backend, name=f"AdjF{len(shape)}")
    adj = imaging.adjoint_operator(medium, reca, srca, backend=backend, name=f"AdjA{len(shape)}")
    src.data[:] = s
    imaging.run_forward(fwd, dt)
    reca.data[:] = d
    imaging.run_adjoint(adj, dt)
    lhs = float(np.sum(np.asarray(rec.data) * d))
    rhs = float(np.sum(s * np.asarray(srca.data)))
    assert abs(lhs) > 1e-3
    assert abs(lhs - rhs) <= 1e-6 * abs(lhs)


def _taylor_setup(backend="c"):
    medium = _medium()
    nt = 150
    src, rec, reca, _ = _geometry(medium, nt)
    src.data[:, 0] = np.exp(-((np.arange(nt) - 30) / 8.0) ** 2)
    fwd = imaging.forward_operator(medium, src, rec, "memory", backend=backend, name="GradF")
    adj = imaging.adjoint_operator(medium, reca, forward=fwd, backend=backend, name="GradA")
    return medium, fwd, adj, 0.9 * tti_critical_dt(medium, SO)


def test_gradient_passes_the_taylor_test():
    """|J(m + h dm) - J(m)| falls as h, |J(m + h dm) - J(m) - h <g, dm>| as h^2 (Devito's
    test_gradient); and <g, dm> equals the central difference of J to 1e-6."""
    medium, fwd, adj, dt = _taylor_setup()
    V = medium.V
    m0 = 1.0 / np.asarray(V.data_with_halo, dtype=np.float64) ** 2
    xx, zz = np.meshgrid(*[np.arange(n) for n in m0.shape], indexing="ij")
    bump = np.exp(-((xx - 24) ** 2 + (zz - 24) ** 2) / 20.0)

    def J(m, observed=None):
        V.data_with_halo[:] = 1.0 / np.sqrt(m)
        imaging.run_forward(fwd, dt)
        return imaging.misfit(fwd.rec.data, observed if observed is not None else 0.0)

    J(m0 * (1 + 0.05 * bump))
    observed = np.array(fwd.rec.data)
    J = functools.partial(J, observed=observed)
    V.data_with_halo[:] = 1.0 / np.sqrt(m0)
    base = imaging.migrate(fwd, adj, observed, dt)
    dm = 0.05 * bump * m0
    h = [left for left, _ in V.halo]
    gdm = float(np.sum(base.gradient * dm[h[0]:-h[0], h[1]:-h[1]]))
    hs = [2.0 ** -k for k in range(2, 8)]
    values = [J(m0 + t * dm) for t in hs]
    first = [abs(v - base.misfit) for v in values]
    second = [abs(v - base.misfit - t * gdm) for t, v in zip(hs, values)]
    assert abs(np.polyfit(np.log(hs), np.log(first), 1)[0] - 1.0) < 0.1
    assert abs(np.polyfit(np.log(hs), np.log(second), 1)[0] - 2.0) < 0.1
    step = 1e-4
    central = (J(m0 + step * dm) - J(m0 - step * dm)) / (2 * step)
    assert abs(central - gdm) <= 1e-6 * abs(gdm)


def _three_ways(backend, factor=4, checkpoints=6, dtype=np.float32):
    """The image and gradient from the wavefield in memory (all steps, and the snapshot
    steps only), from snapshots every ``factor`` steps and from checkpoints."""
    medium = _medium(dtype=dtype)
    nt = 120
    src, rec, reca, _ = _geometry(medium, nt)
    src.data[:, 0] = np.exp(-((np.arange(nt) - 30) / 8.0) ** 2)
    observed = 0.5 * np.sin(np.arange(nt) / 7.0)[:, None] * np.ones(len(RECS))
    dt = tti_critical_dt(medium, SO)
    out = {}
    for keep in imaging.KEEP:
        fwd = imaging.forward_operator(medium, src, rec, keep, factor, backend=backend,
                                       name=f"Keep{keep}")
        adj = imaging.adjoint_operator(medium, reca, forward=fwd, backend=backend,
                                       name=f"KeepA{keep}")
        out[keep] = imaging.migrate(fwd, adj, observed, dt, checkpoints)
        if keep == "memory":   # the same kept wavefield, imaged at the snapshot steps only
            sub = ConditionalDimension("tsub", parent=medium.grid.time_dim, factor=factor)
            adj = imaging.adjoint_operator(medium, reca,
                                           forward=dataclasses.replace(fwd, sub=sub),
                                           backend=backend, name="KeepAsub")
            out["memory/sub"] = imaging.migrate(fwd, adj, observed, dt)
    return out, nt


def test_three_ways_of_keeping_the_wavefield_give_the_same_image():
    out, nt = _three_ways("c")
    mem, chk = out["memory"], out["checkpoints"]
    assert np.array_equal(mem.image, chk.image)          # exact: the same arithmetic
    assert np.array_equal(mem.gradient, chk.gradient)
    assert mem.misfit == chk.misfit
    assert np.abs(mem.image).max() > 0
    sub, snap = out["memory/sub"], out["snapshots"]
    scale = np.abs(sub.image).max()
    assert np.abs(snap.image - sub.image).max() <= 1e-6 * scale
    # the snapshot image is a coarser sum of the same integrand
    corr = np.sum(snap.image * mem.image) / np.linalg.norm(snap.image) / \
        np.linalg.norm(mem.image)
    assert corr > 0.9
    assert chk.forward_steps > nt and chk.checkpoints == 6
    from stencilgen.seismic.checkpointing import cost
    assert chk.forward_steps == cost(nt, 6) + 1


@pytest.mark.gpu
@needs_gpu
def test_cuda_images_equal_c_and_checkpoints_equal_memory_on_the_gpu():
    gpu, _ = _three_ways("cuda")
    cpu, _ = _three_ways("c")
    assert np.array_equal(gpu["memory"].image, gpu["checkpoints"].image)
    assert np.array_equal(gpu["memory"].gradient, gpu["checkpoints"].gradient)
    for keep in ("memory", "snapshots", "checkpoints"):
        scale = np.abs(cpu[keep].image).max()
        assert np.abs(gpu[keep].image - cpu[keep].image).max() <= 1e-4 * scale


def test_rtm_demo_puts_the_reflector_at_its_depth(tmp_path, capsys):
    from demos.rtm import run
    code = run.main(["-d", "61", "41", "--nshots", "2", "--nbl", "10", "-so", "4",
                     "--f0", "0.025", "--checkpoints", "8", "--outdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    depth, reflector = map(float, re.search(r"strongest at depth ([\d.]+) m, reflector at "
                                            r"([\d.]+) m", out).groups())
    assert abs(depth - reflector) <= 3 * run.SPACING
    assert len(re.findall(r"\[shot \d/2\]", out)) == 2
    assert "recompute factor" in out
