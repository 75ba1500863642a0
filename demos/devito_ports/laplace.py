"""Laplace's equation (Devito's CFD tutorial 05) by pseudo-time (Jacobi) iteration:
``Eq(pn.laplace, subdomain=grid.interior)`` solved for pn gives p from its neighbours in
pn; boundary rows set p = 0 at x = 0, p = y at x = 2 (the dimension y as a value) and
zero gradient along y. Each apply swaps the two buffers, ``op(p=_p, pn=_pn)``, and the
tutorial's measure of the change is kept. Then the same iteration as a TimeFunction
stepping in pseudo-time, all sweeps in one apply, with p = 1 at x = 2: the solution is
known, p = x/2."""
import numpy as np

from demos.devito_ports.cfd_tools import relative_change
from demos.devito_ports.framework import api

Eq, Function, Grid, Operator, TimeFunction, solve = (
    api.Eq, api.Function, api.Grid, api.Operator, api.TimeFunction, api.solve)


def swapping(nx, ny, sweeps):
    """The tutorial's loop: p from pn, then pn from p, ...; the last written buffer and the
    change each apply made."""
    grid = Grid(shape=(nx, ny), extent=(2.0, 1.0))
    x, y = grid.dimensions
    p = Function(name="p", grid=grid, space_order=2)
    pn = Function(name="pn", grid=grid, space_order=2)
    stencil = solve(Eq(pn.laplace, subdomain=grid.interior), pn)
    bc = [Eq(p[0, y], 0.0), Eq(p[nx - 1, y], y * y.spacing),
          Eq(p[x, 0], p[x, 1]), Eq(p[x, ny - 1], p[x, ny - 2])]
    op = Operator([Eq(p, stencil)] + bc)
    for f in (p, pn):
        f.data[:] = 0.0
        f.data[-1, :] = np.linspace(0, 1, ny)
    changes = []
    for count in range(sweeps):
        _p, _pn = (p, pn) if count % 2 == 0 else (pn, p)
        op(p=_p, pn=_pn)
        changes.append(relative_change(_p.data, _pn.data))
    return np.array(_p.data), np.array(changes)


def linear(nx, ny, sweeps):
    """Every sweep in one apply; p's last state."""
    grid = Grid(shape=(nx, ny), extent=(2.0, 1.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    p = TimeFunction(name="p", grid=grid, space_order=2)
    p.data[:] = 0.0
    stencil = solve(Eq(p.laplace), p)
    bc = [Eq(p[t + 1, 0, y], 0.0), Eq(p[t + 1, nx - 1, y], 1.0),
          Eq(p[t + 1, x, 0], p[t + 1, x, 1]), Eq(p[t + 1, x, ny - 1], p[t + 1, x, ny - 2])]
    Operator([Eq(p.forward, stencil)] + bc)(time=sweeps - 1)
    return np.array(p.data[sweeps % 2])


def run(nx=16, ny=11, sweeps=24):
    p, changes = swapping(nx, ny, sweeps)
    return {"p": p, "changes": changes, "linear": linear(11, 6, 1200)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
