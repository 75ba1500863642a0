"""A 2D staggered-grid acoustic shot (the seismic tutorials' first-order velocity-pressure
system): pressure on the nodes, particle velocity a VectorTimeFunction staggered half a cell,
``grad`` and ``div`` taken where each updated field sits, buoyancy and modulus varying in
space (averaged onto the velocity points)."""
import numpy as np

from demos.devito_ports.framework import api
from demos.devito_ports.wavelets import ricker

(Eq, Function, Grid, NODE, Operator, SparseTimeFunction, TimeFunction, VectorTimeFunction,
 div, grad, solve) = (api.Eq, api.Function, api.Grid, api.NODE, api.Operator,
                      api.SparseTimeFunction, api.TimeFunction, api.VectorTimeFunction,
                      api.div, api.grad, api.solve)


def run(n=61, nt=100, so=4):
    grid = Grid(shape=(n, n), extent=(600.0, 600.0))
    ro = Function(name="ro", grid=grid, space_order=so)      # buoyancy 1/rho
    l2m = Function(name="l2m", grid=grid, space_order=so)    # rho * vp^2
    vp = np.full((n, n), 1.5, dtype=np.float32)
    vp[:, n // 2:] = 2.2
    rho = np.full((n, n), 1.0, dtype=np.float32)
    rho[n // 3:, :] = 1.8
    ro.data[:] = 1.0 / rho
    l2m.data[:] = rho * vp ** 2
    p = TimeFunction(name="p", grid=grid, staggered=NODE, space_order=so, time_order=1)
    v = VectorTimeFunction(name="v", grid=grid, space_order=so, time_order=1)
    dt = 0.5 * 10.0 / 2.2 / np.sqrt(2)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [[300.0, 150.0]]
    src.data[:, 0] = ricker(nt, dt, 0.015)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=9, nt=nt)
    rec.coordinates.data[:, 0] = np.linspace(60.0, 540.0, 9)
    rec.coordinates.data[:, 1] = 420.0
    u_v = Eq(v.forward, solve(v.dt - ro * grad(p), v.forward))
    u_p = Eq(p.forward, solve(p.dt - l2m * div(v.forward), p.forward))
    src_p = src.inject(field=p.forward, expr=src * dt)
    rec_p = rec.interpolate(expr=p)
    Operator([u_v, u_p] + src_p + rec_p)(time_M=nt - 2, dt=dt)
    last = (nt - 1) % 2
    return {"rec": np.array(rec.data), "p": np.array(p.data[last]),
            "vx": np.array(v[0].data[last]), "vy": np.array(v[1].data[last])}


if __name__ == "__main__":
    print(np.abs(run()["rec"]).max())
