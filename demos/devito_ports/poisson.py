"""Poisson's equation (Devito's CFD tutorial 06) with a positive and a negative point
source, zero on the edges: ``Eq(pd.laplace, b, subdomain=grid.interior)`` solved for pd,
iterated by applies that swap the buffers, ``op(p=_p, pd=_pd)``; then as a TimeFunction in
pseudo-time, ``Eq(p.forward, solve(Eq(p.laplace, b), p))``, all sweeps in one apply."""
import numpy as np

from demos.devito_ports.framework import api

Eq, Function, Grid, Operator, TimeFunction, solve = (
    api.Eq, api.Function, api.Grid, api.Operator, api.TimeFunction, api.solve)


def sources(grid, nx, ny):
    b = Function(name="b", grid=grid)
    b.data[:] = 0.0
    b.data[int(nx / 4), int(ny / 4)] = 100
    b.data[int(3 * nx / 4), int(3 * ny / 4)] = -100
    return b


def run(nx=20, ny=14, nt=30):
    grid = Grid(shape=(nx, ny), extent=(2.0, 1.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    p = Function(name="p", grid=grid, space_order=2)
    pd = Function(name="pd", grid=grid, space_order=2)
    p.data[:] = 0.0
    pd.data[:] = 0.0
    b = sources(grid, nx, ny)
    stencil = solve(Eq(pd.laplace, b, subdomain=grid.interior), pd)
    bc = [Eq(p[x, 0], 0.0), Eq(p[x, ny - 1], 0.0), Eq(p[0, y], 0.0), Eq(p[nx - 1, y], 0.0)]
    op = Operator([Eq(p, stencil)] + bc)
    for i in range(nt):
        _p, _pd = (p, pd) if i % 2 == 0 else (pd, p)
        op(p=_p, pd=_pd)
    out = {"p": np.array(p.data), "pd": np.array(pd.data)}
    q = TimeFunction(name="q", grid=grid, space_order=2)
    q.data[:] = 0.0
    bc = [Eq(q[t + 1, x, 0], 0.0), Eq(q[t + 1, x, ny - 1], 0.0),
          Eq(q[t + 1, 0, y], 0.0), Eq(q[t + 1, nx - 1, y], 0.0)]
    Operator([Eq(q.forward, solve(Eq(q.laplace, b), q))] + bc)(time=nt - 1)
    out["q"] = np.array(q.data[nt % 2])
    return out


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
