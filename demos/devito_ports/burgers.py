"""Burgers' equation in 2D (Devito's CFD tutorial 04): ``u.dt + u*u.dx + v*u.dy =
a*u.laplace`` and likewise for v, upwind first differences for the convection, the
viscosity a Constant given at apply time, each equation on ``grid.interior`` solved for its
``.forward``, the edges held at 1 by boundary rows, run in batches of applies. (The
tutorial's VectorTimeFunction version needs what stencilgen does not have yet.)"""
import numpy as np

from demos.devito_ports.cfd_tools import backward, hat_grid, init_hat
from demos.devito_ports.framework import api

Constant, Eq, Grid, Operator, TimeFunction, solve = (
    api.Constant, api.Eq, api.Grid, api.Operator, api.TimeFunction, api.solve)


def run(nx=31, ny=31, batches=3, batch_size=40, nu=0.01, sigma=0.009):
    dx, dy = hat_grid(nx, ny)
    grid = Grid(shape=(nx, ny), extent=(2.0, 2.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=2)
    v = TimeFunction(name="v", grid=grid, space_order=2)
    init_hat(u.data[0], dx, dy, value=2.0)
    init_hat(v.data[0], dx, dy, value=2.0)
    a = Constant(name="a")
    eq_u = Eq(u.dt + u * backward(u, x) + v * backward(u, y), a * u.laplace,
              subdomain=grid.interior)
    eq_v = Eq(v.dt + u * backward(v, x) + v * backward(v, y), a * v.laplace,
              subdomain=grid.interior)
    updates = [Eq(u.forward, solve(eq_u, u.forward)), Eq(v.forward, solve(eq_v, v.forward))]
    rows = []
    for f in (u, v):
        rows += [Eq(f[t + 1, 0, y], 1.0), Eq(f[t + 1, nx - 1, y], 1.0),
                 Eq(f[t + 1, x, ny - 1], 1.0), Eq(f[t + 1, x, 0], 1.0)]
    op = Operator(updates + rows)
    out = {}
    for batch in range(batches):
        op(time=batch_size, dt=sigma * dx * dy / nu, a=nu)
        out[f"u{batch}"] = np.array(u.data[0])
    out["v"] = np.array(v.data)
    return out


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
