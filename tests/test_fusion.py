"""C backend: a nest computing only temporaries, fused into the blocks of the nest reading
them (backends/c_fusion.py), gives the unfused numbers bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from backends.c import blocking as c_blocking
from backends.c.backend import CBackend
from stencilgen import Eq, Function, Grid, Operator, TimeFunction, solve
from stencilgen.runtime import autotune


def _variable_density(shape):
    """m p_tt = sum over axes of (b p_d(x0=d+h/2))_d(x0=d-h/2): three flux temporaries."""
    grid = Grid(shape=shape, extent=tuple(0.1 * (n - 1) for n in shape), dtype=np.float32)
    p = TimeFunction(name="p", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=8)
    b = Function(name="b", grid=grid, space_order=8)
    rng = np.random.default_rng(11)
    m.data[:] = rng.uniform(0.3, 0.5, shape)
    b.data[:] = rng.uniform(0.5, 2.0, shape)
    p.data[0] = rng.standard_normal(shape)
    p.data[1] = rng.standard_normal(shape)
    div = 0
    for d, name in zip(grid.dimensions, ("dx", "dy", "dz")):
        div += getattr(b * getattr(p, name)(x0=d + d.spacing / 2), name)(x0=d - d.spacing / 2)
    return [Eq(p.forward, solve(m * p.dt2 - div, p.forward))], p


def _run(shape, fuse, block, monkeypatch):
    monkeypatch.setattr(CBackend, "fuse_temporaries", fuse)
    eqs, p = _variable_density(shape)
    op = Operator(eqs, backend="c", name=f"Fused{int(fuse)}")
    kwargs = dict(time_m=1, time_M=5, dt=0.002)
    if block is not None:
        args, _ = op._arguments(**kwargs)
        autotune.Remembered(op.source_path.parent).put(
            autotune.size_key(op.program, args), [block] * len(op.program.kernels))
    op.apply(autotune=False, **kwargs)
    return op, p.data_with_halo.copy()


@pytest.mark.parametrize("shape", [(21, 19, 23), (9, 40, 7)])
def test_fused_fluxes_equal_unfused_for_every_block(shape, tmp_path, monkeypatch):
    """Blocks cut the domain unevenly (and one is a single x-plane): the fluxes' halo the
    producer recomputes in each block, and the points it leaves zero, are the unfused
    nests' values exactly."""
    from stencilgen import configuration
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    plain, ref = _run(shape, False, None, monkeypatch)
    assert "sg_fuse" not in plain.ccode and np.abs(ref).max() > 0
    for block in [None] + list(range(len(c_blocking.BLOCKS))):
        op, got = _run(shape, True, block, monkeypatch)
        assert "sg_fuse_zero(" in op.ccode
        assert np.array_equal(got, ref), (shape, block)


def test_fused_section_counts_its_time_once(tmp_path, monkeypatch):
    """The fused nests are timed as one section (the reader's); the producer's reads 0 s."""
    from stencilgen import configuration
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    monkeypatch.setattr(CBackend, "fuse_temporaries", True)
    eqs, _ = _variable_density((12, 12, 12))
    summary = Operator(eqs, backend="c", name="FusedTimes").apply(time_m=1, time_M=3, dt=0.002)
    times = sorted(s.time for s in summary.sections.values())
    assert times[0] == 0.0 and times[-1] > 0.0
