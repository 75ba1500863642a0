"""Linear convection (Devito's CFD tutorial 01): a hat function carried by
``u.dt + c*u.dxl + c*u.dyl = 0``, first-order upwind differences (Devito's default
space order 1, where ``.dxl`` takes two points). The equation is one ``Eq`` with no
right-hand side, solved for ``u.forward``; once on ``grid.interior`` (the
edges keep their start), once everywhere with boundary rows holding the edges at 1 (built
as the tutorial does, ``Operator(expressions=..., opt=None, language='C')``). Last,
a square wave in 1D at CFL 1, which upwinding shifts by one point a step, exactly."""
import numpy as np

from demos.devito_ports.cfd_tools import hat_grid, init_hat
from demos.devito_ports.framework import api

Eq, Grid, Operator, TimeFunction, solve = (api.Eq, api.Grid, api.Operator, api.TimeFunction,
                                           api.solve)


def hat(nx=21, ny=21, nt=20, c=1.0, sigma=0.2):
    dx, dy = hat_grid(nx, ny)
    grid = Grid(shape=(nx, ny), extent=(2.0, 2.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid)
    eq = Eq(u.dt + c * u.dxl + c * u.dyl, subdomain=grid.interior)
    stencil = solve(eq, u.forward)
    out = {}
    for label, eqs in (("interior", [Eq(u.forward, stencil, subdomain=grid.interior)]),
                       ("rows", [Eq(u.forward, stencil), Eq(u[t + 1, 0, y], 1.0),
                                 Eq(u[t + 1, nx - 1, y], 1.0), Eq(u[t + 1, x, ny - 1], 1.0),
                                 Eq(u[t + 1, x, 0], 1.0)])):
        init_hat(u.data[0], dx, dy, value=2.0)
        init_hat(u.data[1], dx, dy, value=2.0)
        Operator(expressions=eqs, opt=None, language="C")(time=nt, dt=sigma * dx)
        out[f"u_{label}"] = np.array(u.data)
    return out


def square_wave(n=40, steps=12):
    """Unit spacing, c = 1, dt = 1: u(x) at step k is the start at x - k."""
    grid = Grid(shape=(n,), extent=(n - 1.0,))
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid)
    u.data[:] = 1.0
    u.data[:, 5:12] = 2.0
    update = Eq(u.forward, solve(Eq(u.dt + u.dxl), u.forward), subdomain=grid.interior)
    Operator([update, Eq(u[t + 1, 0], 1.0)])(time=steps - 1, dt=1.0)
    return {"wave": np.array(u.data[steps % 2])}


def run():
    return {**hat(), **square_wave()}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
