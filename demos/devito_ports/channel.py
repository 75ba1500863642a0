"""A 2D channel: diffusion with a fixed inflow value, zero-gradient walls and outflow (the
CFD tutorials' Neumann rows, ``u[t + 1, x, ny - 1] = u[t + 1, x, ny - 2]``), and a
Constant viscosity changed at apply time."""
import numpy as np

from demos.devito_ports.framework import api

Constant, Eq, Grid, Operator, TimeFunction = (api.Constant, api.Eq, api.Grid, api.Operator,
                                              api.TimeFunction)


def run(nx=41, ny=21, nt=60):
    grid = Grid(shape=(nx, ny), extent=(4.0, 1.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    nu = Constant(name="nu", value=0.1)
    u = TimeFunction(name="u", grid=grid, space_order=4)
    u.data[:] = 0.0
    update = Eq(u.forward, u + 0.001 * nu * u.laplace - 0.001 * u.dx, subdomain=grid.interior)
    bc = [Eq(u[t + 1, 0, y], 1.0),                        # inflow
          Eq(u[t + 1, nx - 1, y], u[t + 1, nx - 2, y]),  # outflow
          Eq(u[t + 1, x, 0], u[t + 1, x, 1]),            # walls
          Eq(u[t + 1, x, ny - 1], u[t + 1, x, ny - 2])]
    op = Operator([update] + bc)
    op.apply(time_M=nt - 1, nu=0.4)
    return {"u": np.array(u.data[nt % 2])}


if __name__ == "__main__":
    print(run()["u"].sum())
