"""Nonlinear convection (Devito's CFD tutorial 02): velocities u, v carry themselves,
``u.dt + u*u.dxl + v*u.dyl = 0`` and likewise for v, first-order upwind differences at
Devito's default space order 1; each equation one ``Eq`` without a right-hand side, solved
for its ``.forward`` and updated on ``grid.interior``, the edges held at 1 by boundary rows.
The tutorial's second half, the same flow as one VectorTimeFunction, is
vector_convection.py."""
import numpy as np

from demos.devito_ports.cfd_tools import hat_grid, init_hat
from demos.devito_ports.framework import api

Eq, Grid, Operator, TimeFunction, solve = (api.Eq, api.Grid, api.Operator, api.TimeFunction,
                                           api.solve)


def run(nx=25, ny=25, nt=16, sigma=0.2):
    dx, dy = hat_grid(nx, ny)
    grid = Grid(shape=(nx, ny), extent=(2.0, 2.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid)
    v = TimeFunction(name="v", grid=grid)
    init_hat(u.data[0], dx, dy, value=2.0)
    init_hat(v.data[0], dx, dy, value=2.0)
    eq_u = Eq(u.dt + u * u.dxl + v * u.dyl)
    eq_v = Eq(v.dt + u * v.dxl + v * v.dyl)
    updates = [Eq(f.forward, solve(eq, f.forward), subdomain=grid.interior)
               for f, eq in ((u, eq_u), (v, eq_v))]
    rows = [Eq(f[t + 1, i, y], 1.0) for f in (u, v) for i in (0, nx - 1)]
    rows += [Eq(f[t + 1, x, j], 1.0) for f in (u, v) for j in (0, ny - 1)]
    Operator(updates + rows)(time=nt, dt=sigma * dx)
    return {"u": np.array(u.data), "v": np.array(v.data)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
