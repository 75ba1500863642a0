"""Devito's ADER-FD tutorial (seismic tutorial 16): the acoustic first-order system advanced
by a fourth-order Taylor series in time, its time derivatives rewritten as space derivatives
up to fourth order at space order 16 (``dx3``, ``dxdy2``, ``dx2dy2``...), the vector
updates written as sympy Matrices added to a node-centred VectorTimeFunction
(``staggered=(None, None)``); beside it the staggered leapfrog scheme at the same time step.
The tutorial's grid is 201 x 201 over 450 ms; the suite runs 101 x 101 over the same
kilometre for 200 ms (``run(201, 450.0)`` is the tutorial's)."""
import numpy as np
import sympy as sp

from demos.devito_ports.framework import api
from demos.devito_ports.wavelets import ricker

dv = api


def graddiv(f):
    return sp.Matrix([[f[0].dx2 + f[1].dxdy],
                      [f[0].dxdy + f[1].dy2]])


def lapdiv(f):
    return f[0].dx3 + f[0].dxdy2 + f[1].dx2dy + f[1].dy3


def gradlap(f):
    return sp.Matrix([[f.dx3 + f.dxdy2],
                      [f.dx2dy + f.dy3]])


def gradlapdiv(f):
    return sp.Matrix([[f[0].dx4 + f[0].dx2dy2 + f[1].dx3dy + f[1].dxdy3],
                      [f[0].dx3dy + f[0].dxdy3 + f[1].dx2dy2 + f[1].dy4]])


def biharmonic(f):
    return f.dx4 + 2*f.dx2dy2 + f.dy4


def run(n=101, tn=200.0):
    grid = dv.Grid(shape=(n, n), extent=(1000., 1000.))
    p = dv.TimeFunction(name='p', grid=grid, space_order=16)
    v = dv.VectorTimeFunction(name='v', grid=grid, space_order=16, staggered=(None, None))
    c = dv.Function(name='c', grid=grid)
    rho = dv.Function(name='rho', grid=grid)
    c.data[:] = 1.5
    c.data[:, :3 * n // 4] = 1.25
    c.data[:, :n // 2] = 1.
    c.data[:, :n // 4] = 0.75
    rho.data[:] = c.data[:]
    b = 1/rho
    c2 = c**2
    c4 = c**4
    pdt = rho*c2*dv.div(v)
    vdt = b*dv.grad(p)
    pdt2 = c2*p.laplace
    vdt2 = c2*graddiv(v)
    pdt3 = rho*c4*lapdiv(v)
    vdt3 = c2*b*gradlap(p)
    pdt4 = c4*biharmonic(p)
    vdt4 = c4*gradlapdiv(v)
    dt = grid.stepping_dim.spacing
    eq_p = dv.Eq(p.forward, p + dt*pdt + (dt**2/2)*pdt2 + (dt**3/6)*pdt3 + (dt**4/24)*pdt4)
    eq_v = dv.Eq(v.forward, v + dt*vdt + (dt**2/2)*vdt2 + (dt**3/6)*vdt3 + (dt**4/24)*vdt4)
    # Courant number 0.5: the staggered scheme is stable there too (0.85 is ADER's alone)
    op_dt = 0.5*np.amin(grid.spacing)/np.amax(c.data)
    nt = int(np.ceil(tn / op_dt)) + 1
    src = dv.SparseTimeFunction(name='src', grid=grid, npoint=1, nt=nt)
    src.coordinates.data[0, :] = np.array(grid.extent) * .5
    src.data[:, 0] = ricker(nt, op_dt, 0.020)
    op = dv.Operator([eq_p, eq_v] + src.inject(field=p.forward, expr=src))
    op.apply(dt=op_dt)
    ps = dv.TimeFunction(name='ps', grid=grid, space_order=16, staggered=dv.NODE)
    vs = dv.VectorTimeFunction(name='vs', grid=grid, space_order=16)
    eq_ps = dv.Eq(ps.forward, ps + dt*rho*c2*dv.div(vs.forward))
    eq_vs = dv.Eq(vs.forward, vs + dt*b*dv.grad(ps))
    ops = dv.Operator([eq_vs, eq_ps] + src.inject(field=ps.forward, expr=src))
    ops.apply(dt=op_dt)
    return {"p": np.array(p.data), "vx": np.array(v[0].data), "vy": np.array(v[1].data),
            "ps": np.array(ps.data), "vsx": np.array(vs[0].data)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()), float(np.linalg.norm(value)))
