"""Burgers' equation as one vector (the second half of Devito's CFD tutorial 04): a
space-order-2 VectorTimeFunction ``U``, the update written directly as
``Eq(U.forward, U - s*(grad(U)*U - a*U.laplace), subdomain=grid.interior)`` with ``s`` the
time step symbol and ``a`` a Constant given at apply time, the edges of each component held
at 1 by boundary rows, run in batches of applies."""
import numpy as np

from demos.devito_ports.cfd_tools import hat_grid, init_hat
from demos.devito_ports.framework import api

Constant, Eq, Grid, Operator, VectorTimeFunction, grad = (
    api.Constant, api.Eq, api.Grid, api.Operator, api.VectorTimeFunction, api.grad)


def run(nx=29, ny=25, batches=2, batch_size=30, nu=0.02, sigma=0.009):
    dx, dy = hat_grid(nx, ny)
    grid = Grid(shape=(nx, ny), extent=(2.0, 2.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    s = grid.time_dim.spacing
    a = Constant(name="a")
    U = VectorTimeFunction(name="U", grid=grid, space_order=2)
    init_hat(U[0].data[0], dx, dy, value=2.0)
    init_hat(U[1].data[0], dx, dy, value=2.5)
    update = Eq(U.forward, U - s * (grad(U) * U - a * U.laplace), subdomain=grid.interior)
    rows = []
    for c in (U[0], U[1]):
        rows += [Eq(c[t + 1, 0, y], 1.0), Eq(c[t + 1, nx - 1, y], 1.0),
                 Eq(c[t + 1, x, ny - 1], 1.0), Eq(c[t + 1, x, 0], 1.0)]
    op = Operator([update] + rows)
    out = {}
    for batch in range(batches):
        op(time=batch_size, dt=sigma * dx * dy / nu, a=nu)
        out[f"Ux{batch}"] = np.array(U[0].data[0])
    out["Uy"] = np.array(U[1].data)
    return out


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
