"""Boundary conditions in Devito's index notation, ``Eq(u[t + 1, 0, y], 1.)``: the equation
runs at that one index along x, after the equations written before it, and reads other
fixed indices (``u[t + 1, x, ny - 2]``) as the neighbours they are. ``subdomain=
grid.interior`` runs an equation on the domain less one point on every side."""
from __future__ import annotations

import numpy as np
import pytest

from stencilgen import (Eq, Function, Grid, HaloError, InvalidArgument, InvalidEquation,
                        Operator, SparseFunction, TimeFunction, platform)
from test_cuda import needs_gpu

NX, NY = 13, 10


def _channel(backend, name="Channel", interior=False):
    """2D diffusion with Dirichlet values on x's ends and zero-gradient on y's (the update
    on the interior only, or everywhere)."""
    grid = Grid(shape=(NX, NY), extent=(1.2, 0.9))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[0] = np.random.default_rng(3).standard_normal((NX, NY))
    eqs = [Eq(u.forward, u + 0.002 * u.laplace, subdomain=grid.interior if interior else None),
           Eq(u[t + 1, 0, y], 1.0), Eq(u[t + 1, NX - 1, y], -0.5),
           Eq(u[t + 1, x, NY - 1], u[t + 1, x, NY - 2]), Eq(u[t + 1, x, 0], u[t + 1, x, 1])]
    return Operator(eqs, backend=backend, name=name), u


def _reference(start, steps):
    """Every edge point is set by the boundary rows, so the update's reach (everywhere or
    the interior) does not change the numbers."""
    a = start.astype(np.float64)
    hx, hy = 1.2 / (NX - 1), 0.9 / (NY - 1)
    for _ in range(steps):
        p = np.pad(a, 1)
        lap = ((p[2:, 1:-1] - 2 * a + p[:-2, 1:-1]) / hx ** 2
               + (p[1:-1, 2:] - 2 * a + p[1:-1, :-2]) / hy ** 2)
        a = a + 0.002 * lap
        a[0, :], a[-1, :] = 1.0, -0.5
        a[:, -1] = a[:, -2]
        a[:, 0] = a[:, 1]
    return a


@pytest.mark.parametrize("interior", [False, True])
def test_dirichlet_and_neumann_rows_match_numpy(interior):
    op, u = _channel("c", f"Channel{int(interior)}", interior)
    start = u.data[0].copy()
    u.data[1] = 0.0
    op.apply(time_M=4)
    assert np.allclose(u.data[5 % 2], _reference(start, 5), rtol=1e-5, atol=1e-5)
    assert "for (long x = 0; x <= 0; x += 1)" in op.ccode
    assert ("for (long x = x_m + 1; x <= x_M - 1; x += 1)" in op.ccode) == interior


def test_a_face_of_a_3d_grid():
    grid = Grid(shape=(9, 8, 11))
    x, y, z = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=4)
    c = Function(name="c", grid=grid)
    u.data[0] = np.random.default_rng(1).standard_normal(grid.shape)
    c.data[:] = np.random.default_rng(2).standard_normal(grid.shape)
    op = Operator([Eq(u.forward, 0.5 * u), Eq(u[t + 1, x, y, 10], c[x, y, 9] + u[t + 1, x, y, 8])],
                  backend="c")
    start = u.data[0].copy()
    op.apply(time_M=0)
    want = 0.5 * start
    want[:, :, 10] = c.data[:, :, 9] + want[:, :, 8]
    assert np.allclose(u.data[1], want, rtol=1e-6)


def test_index_notation_is_checked():
    grid = Grid(shape=(6, 5))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=2)
    with pytest.raises(InvalidArgument, match="2 indices given, u has 3"):
        u[t, x]
    with pytest.raises(InvalidArgument, match="must be x plus an integer"):
        u[t, x / 2, y]
    with pytest.raises(InvalidArgument, match="time index"):
        u[0, x, y]
    with pytest.raises(InvalidArgument, match="sparse functions are not indexed"):
        SparseFunction(name="s", grid=grid, npoint=2)[0]
    with pytest.raises(InvalidEquation, match="runs over every y"):
        Operator([Eq(u.forward, u[t, x, 0])], backend="c")
    with pytest.raises(InvalidEquation, match="fixes x = 0"):
        Operator([Eq(u[t + 1, 0, y], u[t, x + 1, y])], backend="c")
    with pytest.raises(HaloError, match="outside its domain"):
        Operator([Eq(u[t + 1, 0, y], u[t, 3 + 6, y])], backend="c")
    with pytest.raises(InvalidEquation, match="subdomain must be one of the grid's"):
        Eq(u.forward, u, subdomain="interior")
    with pytest.raises(InvalidEquation, match="coefficients not supported"):
        Eq(u.forward, u, coefficients=(x,))
    other = Grid(shape=(6, 5))
    with pytest.raises(InvalidEquation, match="another Grid"):
        Operator([Eq(u.forward, u, subdomain=other.interior)], backend="c")
    assert np.array_equal(u[t + 1, x + 1, y].args, u.forward.subs(x, x + x.spacing).args)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("backend", ["cuda", "openacc"])
@pytest.mark.parametrize("interior", [False, True])
def test_boundary_rows_on_the_gpu_equal_c(backend, interior):
    if backend == "openacc" and "host" in platform.toolchain("openacc").name:
        pytest.skip("no offloading OpenACC compiler")
    op_c, u_c = _channel("c", f"ChannelC{int(interior)}", interior)
    op_g, u_g = _channel(backend, f"Channel{backend.upper()}{int(interior)}", interior)
    op_c.apply(time_M=6)
    op_g.apply(time_M=6)
    assert np.allclose(u_g.data, u_c.data, rtol=1e-6, atol=1e-6)


def test_interior_leaves_the_edges():
    grid = Grid(shape=(7, 6, 5))
    f = Function(name="f", grid=grid)
    Operator([Eq(f, 1.0, subdomain=grid.interior)], backend="c").apply()
    want = np.zeros(grid.shape)
    want[1:-1, 1:-1, 1:-1] = 1.0
    assert np.array_equal(f.data, want)
    assert grid.subdomains["domain"].thickness == ((0, 0),) * 3
    with pytest.raises(InvalidArgument, match="mpi4py communicator"):
        Grid(shape=(4, 4), comm="world")
