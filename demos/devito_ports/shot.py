"""A 2D acoustic shot (the seismic tutorials' modelling step): a Ricker source injected at
one point, receivers interpolating the wavefield along a line, both at off-grid positions."""
import numpy as np

from demos.devito_ports.framework import api
from demos.devito_ports.wavelets import ricker

(Eq, Function, Grid, Operator, SparseTimeFunction, TimeFunction,
 solve) = (api.Eq, api.Function, api.Grid, api.Operator, api.SparseTimeFunction,
           api.TimeFunction, api.solve)


def run(n=81, nt=120, nrec=11):
    grid = Grid(shape=(n, n), extent=(800.0, 800.0))
    vp = Function(name="vp", grid=grid, space_order=8)
    vp.data[:] = 1.5
    vp.data[:, n // 2:] = 2.0
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    dt = 0.4 * 10.0 / 2.0 / np.sqrt(2)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [[403.0, 97.0]]
    src.data[:, 0] = ricker(nt, dt, 0.01)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=nrec, nt=nt)
    rec.coordinates.data[:, 0] = np.linspace(55.0, 745.0, nrec)
    rec.coordinates.data[:, 1] = 203.0
    pde = u.dt2 / vp ** 2 - u.laplace
    stencil = Eq(u.forward, solve(pde, u.forward))
    src_term = src.inject(field=u.forward, expr=src * dt ** 2 * vp ** 2)
    rec_term = rec.interpolate(expr=u)
    Operator([stencil] + src_term + rec_term)(time_M=nt - 2, dt=dt)
    return {"rec": np.array(rec.data), "u": np.array(u.data[(nt - 1) % 3])}


if __name__ == "__main__":
    print(np.abs(run()["rec"]).max())
