"""Lid-driven cavity flow (Devito's CFD tutorial 07): momentum equations for u, v with
``.dx``, the centred ``.dxc``/``.dyc`` and ``.laplace`` on ``grid.interior``, and a pressure
Poisson equation solved for p (``solve(eq_p, p)``) iterated in pseudo-time by a second
Operator; the lid moves at u = 1, the pressure has zero gradient on the walls and p = 0 in
one corner (a boundary row fixing both indices). Two Operators share the fields, applied
in turn with ``time_m``/``time_M``."""
import numpy as np

from demos.devito_ports.framework import api

Eq, Grid, Operator, TimeFunction, solve = (api.Eq, api.Grid, api.Operator, api.TimeFunction,
                                           api.solve)


def run(nx=17, ny=17, nt=8, nit=10, rho=1.0, nu=0.1, dt=0.001):
    grid = Grid(shape=(nx, ny), extent=(1.0, 1.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=2)
    v = TimeFunction(name="v", grid=grid, space_order=2)
    p = TimeFunction(name="p", grid=grid, space_order=2)
    for f in (u, v, p):
        f.data[:] = 0.0
    eq_u = Eq(u.dt + u * u.dx + v * u.dy, -1.0 / rho * p.dxc + nu * u.laplace,
              subdomain=grid.interior)
    eq_v = Eq(v.dt + u * v.dx + v * v.dy, -1.0 / rho * p.dyc + nu * v.laplace,
              subdomain=grid.interior)
    eq_p = Eq(p.laplace, rho * (1.0 / dt * (u.dxc + v.dyc) - u.dxc * u.dxc
                                - 2 * u.dyc * v.dxc - v.dyc * v.dyc),
              subdomain=grid.interior)
    update_u = Eq(u.forward, solve(eq_u, u.forward))
    update_v = Eq(v.forward, solve(eq_v, v.forward))
    update_p = Eq(p.forward, solve(eq_p, p))
    bc_u = [Eq(u[t + 1, 0, y], 0), Eq(u[t + 1, nx - 1, y], 0),
            Eq(u[t + 1, x, 0], 0), Eq(u[t + 1, x, ny - 1], 1)]   # the lid
    bc_v = [Eq(v[t + 1, 0, y], 0), Eq(v[t + 1, nx - 1, y], 0),
            Eq(v[t + 1, x, ny - 1], 0), Eq(v[t + 1, x, 0], 0)]
    bc_p = [Eq(p[t + 1, 0, y], p[t + 1, 1, y]), Eq(p[t + 1, nx - 1, y], p[t + 1, nx - 2, y]),
            Eq(p[t + 1, x, 0], p[t + 1, x, 1]), Eq(p[t + 1, x, ny - 1], p[t + 1, x, ny - 2]),
            Eq(p[t + 1, 0, 0], 0)]
    optime = Operator([update_u, update_v] + bc_u + bc_v)
    oppres = Operator([update_p] + bc_p)
    for step in range(nt):
        if step > 0:
            oppres(time_M=nit)
        optime(time_m=step, time_M=step, dt=dt)
    return {"u": np.array(u.data), "v": np.array(v.data), "p": np.array(p.data)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).sum()))
