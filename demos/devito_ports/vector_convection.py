"""Nonlinear convection as one vector (the second half of Devito's CFD tutorial 02): the
velocity a VectorTimeFunction ``U`` at the default space order 1, its components staggered
half a cell along their own dimensions, ``Eq(U.dt + grad(U)*U)`` with no right-hand side
solved for ``U.forward`` and updated on ``grid.interior``, the edges held at 1 by boundary
rows on each component ``U[0][t+1, 0, y]``. At space order 1 each entry of ``grad(U)`` is
the difference of two neighbours behind, so the vector form upwinds as the scalar one."""
import numpy as np

from demos.devito_ports.cfd_tools import hat_grid, init_hat
from demos.devito_ports.framework import api

Eq, Grid, Operator, VectorTimeFunction, grad, solve = (
    api.Eq, api.Grid, api.Operator, api.VectorTimeFunction, api.grad, api.solve)


def run(nx=23, ny=27, nt=14, sigma=0.2):
    dx, dy = hat_grid(nx, ny)
    grid = Grid(shape=(nx, ny), extent=(2.0, 2.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    U = VectorTimeFunction(name="U", grid=grid)
    init_hat(U[0].data[0], dx, dy, value=2.0)
    init_hat(U[1].data[0], dx, dy, value=1.5)
    update = Eq(U.forward, solve(Eq(U.dt + grad(U) * U), U.forward), subdomain=grid.interior)
    rows = []
    for c in (U[0], U[1]):
        rows += [Eq(c[t + 1, 0, y], 1.0), Eq(c[t + 1, nx - 1, y], 1.0),
                 Eq(c[t + 1, x, ny - 1], 1.0), Eq(c[t + 1, x, 0], 1.0)]
    Operator([update] + rows)(time=nt, dt=sigma * min(dx, dy))
    return {"Ux": np.array(U[0].data), "Uy": np.array(U[1].data)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
