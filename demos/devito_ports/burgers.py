"""Burgers' equation in 2D (Devito's CFD tutorial 04): ``u.dt + u*u_dx + v*u_dy =
a*u.laplace`` and likewise for v, where ``u_dx = first_derivative(u, dim=x, side=left,
fd_order=1)`` is the upwind difference taken from a space-order-2 field (whose ``.dxl``
would take three points), the viscosity a Constant given at apply time, each equation on
``grid.interior`` solved for its ``.forward``, the edges held at 1 by boundary rows, run in
batches of applies. The tutorial's VectorTimeFunction version is vector_burgers.py."""
import numpy as np

from demos.devito_ports.cfd_tools import hat_grid, init_hat
from demos.devito_ports.framework import api

Constant, Eq, Grid, Operator, TimeFunction, first_derivative, left, solve = (
    api.Constant, api.Eq, api.Grid, api.Operator, api.TimeFunction, api.first_derivative,
    api.left, api.solve)


def run(nx=31, ny=31, batches=3, batch_size=40, nu=0.01, sigma=0.009, dtype=np.float32):
    dx, dy = hat_grid(nx, ny)
    grid = Grid(shape=(nx, ny), extent=(2.0, 2.0), dtype=dtype)
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=2)
    v = TimeFunction(name="v", grid=grid, space_order=2)
    init_hat(u.data[0], dx, dy, value=2.0)
    init_hat(v.data[0], dx, dy, value=2.0)
    a = Constant(name="a", dtype=dtype)
    u_dx = first_derivative(u, dim=x, side=left, fd_order=1)
    u_dy = first_derivative(u, dim=y, side=left, fd_order=1)
    v_dx = first_derivative(v, dim=x, side=left, fd_order=1)
    v_dy = first_derivative(v, dim=y, side=left, fd_order=1)
    eq_u = Eq(u.dt + u * u_dx + v * u_dy, a * u.laplace, subdomain=grid.interior)
    eq_v = Eq(v.dt + u * v_dx + v * v_dy, a * v.laplace, subdomain=grid.interior)
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


def tutorial(dtype):
    """The tutorial's own run: 41 x 41, sigma = 0.0009, five batches of 640 steps."""
    return run(nx=41, ny=41, batches=5, batch_size=640, sigma=0.0009, dtype=dtype)


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
