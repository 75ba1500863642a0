"""Devito's seismic tutorial 05 (staggered acoustic) in its own form: dimensions ``x`` and
``z`` made by hand, ``SpaceDimension(name='x', spacing=Constant(name='h_x', value=...))``,
and passed to ``Grid(extent=, shape=, dimensions=(x, z))``; the pressure a TimeFunction with
``staggered=NODE``, the particle velocity a VectorTimeFunction (each component half a cell
along its own dimension), ``v.dt = ro*grad(p)`` and ``p.dt = l2m*div(v.forward)`` each
solved for its ``.forward``, at space orders 2 and 4, driven by a derivative-of-Gaussian
source injected into ``p.forward``. Our own source (the tutorial's comes from
examples.seismic), on a smaller grid for fewer steps; receivers on a line in z record p
and ``v[1].dz`` (the vertical strain rate, a derivative along the dimension named z)."""
import numpy as np

from demos.devito_ports.framework import api

(Constant, Eq, Grid, NODE, Operator, SpaceDimension, SparseTimeFunction, TimeFunction,
 VectorTimeFunction, div, grad, norm, solve) = (
    api.Constant, api.Eq, api.Grid, api.NODE, api.Operator, api.SpaceDimension,
    api.SparseTimeFunction, api.TimeFunction, api.VectorTimeFunction, api.div, api.grad,
    api.norm, api.solve)


def dgauss(t, f0, a):
    """The derivative of a Gaussian centred on 1/f0 (the tutorial's source wavelet)."""
    return -2.0 * a * (t - 1.0 / f0) * np.exp(-a * (t - 1.0 / f0) ** 2)


def propagate(grid, so, dt, nt, f0=0.02, a=0.003, V_p=4.0, density=1.0):
    """One shot at space order ``so``: the last p, v and what the receivers heard."""
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [400.0, 380.0]
    src.data[:, 0] = dgauss(np.arange(nt) * dt, f0, a)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=7, nt=nt)
    rec.coordinates.data[:, 0] = 250.0
    rec.coordinates.data[:, 1] = np.linspace(150.0, 650.0, 7)
    p = TimeFunction(name="p", grid=grid, staggered=NODE, space_order=so, time_order=1)
    v = VectorTimeFunction(name="v", grid=grid, space_order=so, time_order=1)
    ro, l2m = 1 / density, V_p * V_p * density
    u_v = Eq(v.forward, solve(v.dt - ro * grad(p), v.forward))
    u_p = Eq(p.forward, solve(p.dt - l2m * div(v.forward), p.forward))
    src_p = src.inject(field=p.forward, expr=src)
    rec_p = rec.interpolate(expr=p + 100.0 * v[1].dz)
    Operator([u_v, u_p] + src_p + rec_p)(time=nt - 1, dt=dt)
    return {f"p{so}": np.array(p.data[0]), f"vx{so}": np.array(v[0].data[0]),
            f"vz{so}": np.array(v[1].data[0]), f"rec{so}": np.array(rec.data),
            f"norm{so}": np.array(norm(p))}


def run(shape=(41, 41), extent=(800.0, 800.0), tn=90.0):
    x = SpaceDimension(name="x", spacing=Constant(name="h_x", value=extent[0] / (shape[0] - 1)))
    z = SpaceDimension(name="z", spacing=Constant(name="h_z", value=extent[1] / (shape[1] - 1)))
    grid = Grid(extent=extent, shape=shape, dimensions=(x, z))
    h = min(e / (n - 1) for e, n in zip(extent, shape))
    dt = 0.4 * h / (4.0 * np.sqrt(2.0))   # a Courant number of 0.4 at V_p = 4
    nt = int(np.ceil(tn / dt)) + 1
    return {**propagate(grid, 2, dt, nt), **propagate(grid, 4, dt, nt)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()))
