"""2D diffusion of a hat function with fixed edges (the CFD tutorials' diffusion step):
``u.dt = nu * u.laplace`` solved for ``u.forward`` on the interior, boundary rows in index
notation."""
import numpy as np

from demos.devito_ports.framework import api

Eq, Grid, Operator, TimeFunction, solve = (api.Eq, api.Grid, api.Operator, api.TimeFunction,
                                           api.solve)


def run(nx=31, ny=27, nt=40, nu=0.5):
    grid = Grid(shape=(nx, ny), extent=(2.0, 2.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[:] = 1.0
    u.data[:, nx // 4:nx // 2, ny // 4:ny // 2] = 2.0
    dt = 0.2 * (2.0 / (nx - 1)) ** 2 / nu
    stencil = Eq(u.forward, solve(u.dt - nu * u.laplace, u.forward), subdomain=grid.interior)
    bc = [Eq(u[t + 1, 0, y], 1.0), Eq(u[t + 1, nx - 1, y], 1.0),
          Eq(u[t + 1, x, 0], 1.0), Eq(u[t + 1, x, ny - 1], 1.0)]
    Operator([stencil] + bc)(time=nt - 1, dt=dt)
    return {"u": np.array(u.data[nt % 2])}


if __name__ == "__main__":
    print(run()["u"].sum())
