"""Devito's DRP tutorial (seismic tutorial 07): an acoustic shot at space order 10 with an
absorbing layer (``model.damp * u.dt``), the Laplacian a placeholder ``H`` substituted after
``solve``, then the same shot with custom dispersion-relation-preserving weights, one set per
user SubDomain (upper and lower layers), given as ``weights / x.spacing**2`` and compiled
with ``subs=grid.spacing_map``. The tutorial's model is 2 km square at 10 m plus 10 layers;
the port's is 1 km (the interface and the subdomains scaled with it), the Model helper's
velocity, slowness and damping written out."""
import numpy as np
import sympy as sp

from demos.devito_ports.framework import api
from demos.devito_ports.wavelets import ricker

(Eq, Function, Grid, Operator, SparseTimeFunction, SubDomain, TimeFunction, solve) = (
    api.Eq, api.Function, api.Grid, api.Operator, api.SparseTimeFunction, api.SubDomain,
    api.TimeFunction, api.solve)

H = sp.symbols('H')
h, nbl, order = 10.0, 10, 10
N = 101                       # points of the physical model per side
n = N + 2 * nbl               # with the absorbing layers
interface = 61                # first row of the fast layer, in the physical model

weights_u = np.array([2.00462e-03, -1.63274e-02, 7.72781e-02,
                      -3.15476e-01, 1.77768e+00, -3.05033e+00,
                      1.77768e+00, -3.15476e-01, 7.72781e-02,
                      -1.63274e-02, 2.00462e-03])
weights_l = np.array([0., 0., 0.0274017,
                      -0.223818, 1.64875, -2.90467,
                      1.64875, -0.223818, 0.0274017,
                      0., 0.])


class Upper(SubDomain):
    name = 'upper'

    def define(self, dimensions):
        x, z = dimensions
        return {x: x, z: ('left', interface - 11 + nbl)}


class Lower(SubDomain):
    name = 'lower'

    def define(self, dimensions):
        x, z = dimensions
        return {x: x, z: ('right', n - (interface - 11 + nbl))}


def _damp():
    """Devito's Model damping: per layer dampcoeff*(pos - sin(2 pi pos)/(2 pi)) over nbl
    points on each side, added per dimension."""
    coeff = 1.5 * np.log(1.0 / 0.001) / nbl
    damp = np.zeros((n, n), dtype=np.float32)
    for i in range(nbl):
        pos = abs((nbl - i + 1) / float(nbl))
        val = coeff * (pos - np.sin(2 * np.pi * pos) / (2 * np.pi))
        damp[i, :] += val
        damp[-(i + 1), :] += val
        damp[:, i] += val
        damp[:, -(i + 1)] += val
    return damp


def _shot(grid, name, laplacians, subdomains):
    m = Function(name='m', grid=grid, space_order=order)
    vp = np.full((n, n), 1.5, dtype=np.float32)
    vp[:, interface + nbl:] = 4.0
    m.data[:] = 1.0 / vp ** 2
    damp = Function(name='damp', grid=grid, space_order=order)
    damp.data[:] = _damp()
    u = TimeFunction(name=name, grid=grid, time_order=2, space_order=order)
    dt, tn = 1.0, 300.0
    nt = int(np.ceil(tn / dt)) + 1
    src = SparseTimeFunction(name='src', grid=grid, npoint=1, nt=nt)
    src.coordinates.data[0, :] = [0.5 * (N - 1) * h, 400.0]
    src.data[:, 0] = ricker(nt, dt, 0.025)
    pde = m * u.dt2 - H + damp * u.dt
    stencils = [Eq(u.forward, solve(pde, u.forward).subs({H: lap(u)}), **kw)
                for lap, kw in zip(laplacians, subdomains)]
    src_term = src.inject(field=u.forward, expr=src * dt**2 / m)
    Operator(stencils + src_term, subs=grid.spacing_map)(time=nt - 1, dt=dt)
    return np.array(u.data)


def run():
    extent = ((n - 1) * h, (n - 1) * h)
    grid = Grid(shape=(n, n), extent=extent)
    plain = _shot(grid, "u", [lambda u: u.laplace], [{}])
    grid = Grid(shape=(n, n), extent=extent)
    x, z = grid.dimensions
    ur, lr = Upper(grid=grid), Lower(grid=grid)

    def drp(weights):
        return lambda u: (u.dx2(weights=weights / x.spacing**2)
                          + u.dy2(weights=weights / z.spacing**2))
    custom = _shot(grid, "u_DRP", [drp(weights_u), drp(weights_l)],
                   [dict(subdomain=ur), dict(subdomain=lr)])
    return {"u": plain, "u_drp": custom}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()), float(np.linalg.norm(value)))
