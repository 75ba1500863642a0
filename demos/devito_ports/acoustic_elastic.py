"""Devito's userapi tutorial 07, its acoustic-elastic coupling (shorter in time): a pressure
field on the upper subdomain and a staggered velocity and stress on the lower one
(VectorTimeFunction and TensorTimeFunction on a SubDomain), coupled through transition
strips, a source in the water and receivers on the stress. float64, 900 steps (the wave is
crossing into the elastic layers), so that the comparison is not Devito's own float32 drift
(-ffast-math: 3e-4 of its float64 run after 900 steps; stencilgen's 4e-5)."""
import numpy as np

from demos.devito_ports.framework import api
from demos.devito_ports.wavelets import ricker

(Eq, Function, Grid, Operator, SparseTimeFunction, SubDomain, TensorTimeFunction,
 TimeFunction, VectorTimeFunction, diag, div, grad, solve) = (
    api.Eq, api.Function, api.Grid, api.Operator, api.SparseTimeFunction, api.SubDomain,
    api.TensorTimeFunction, api.TimeFunction, api.VectorTimeFunction, api.diag, api.div,
    api.grad, api.solve)

SO = 8


def strip(grid, name, span):
    """A SubDomain spanning x and ``span`` of y."""
    class Strip(SubDomain):
        def define(self, dimensions):
            x, y = dimensions
            return {x: x, y: span}
    Strip.name = name
    return Strip(grid=grid)


def medium(grid, lowerfield):
    """P velocity everywhere, S velocity and density on the lower field, a sponge of 20."""
    damp = Function(name="damp", grid=grid, space_order=SO)
    cp = Function(name="cp", grid=grid, space_order=SO)
    cs = Function(name="cs", grid=lowerfield, space_order=SO)
    ro = Function(name="ro", grid=lowerfield, space_order=SO)
    ro.data[:] = 1
    cp.data[:] = 1.5
    for depth, vp, vs in ((100, 2.5, 1.5), (75, 3.0, 2.0), (50, 3.5, 2.5), (25, 4.0, 3.0)):
        cp.data[:, -depth:] = vp
        cs.data[:, -depth:] = vs
    taper = 0.5 * (0.5 - 0.5 * np.cos(np.linspace(0., np.pi, 20)))
    damp.data[-20:] += taper[:, None]
    damp.data[:20] += taper[::-1, None]
    damp.data[:, -20:] += taper
    damp.data[:, :20] += taper[::-1]
    return damp, cp, cs, ro


def run(nt=900):
    grid = Grid(shape=(241, 241), extent=(1200., 1200.), origin=(-100., -100.),
                dtype=np.float64)
    upper, lower = strip(grid, "upper", ("middle", 0, 121)), strip(grid, "lower",
                                                                   ("middle", 120, 0))
    up_tr = strip(grid, "uppertransition", ("middle", 116, 121))
    low_tr = strip(grid, "lowertransition", ("middle", 120, 117))
    upperfield = strip(grid, "upperfields", ("middle", 0, 117))
    lowerfield = strip(grid, "lowerfields", ("middle", 116, 0))
    damp, cp, cs, ro = medium(grid, lowerfield)
    p = TimeFunction(name="p", grid=upperfield, space_order=SO, time_order=2)
    tau = TensorTimeFunction(name="tau", grid=lowerfield, space_order=SO)
    v = VectorTimeFunction(name="v", grid=lowerfield, space_order=SO)
    dt = float(0.1 * np.amin(grid.spacing) / np.amax(cp.data))
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[0, :] = [500., 350.]
    src.data[:, 0] = ricker(nt, dt, 0.030)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=101, nt=nt)
    rec.coordinates.data[:, 0] = np.linspace(0., 1000., 101)
    rec.coordinates.data[:, 1] = 600.
    b, mu = 1 / ro, cs ** 2 * ro
    lam = cp ** 2 * ro - 2 * mu
    pde_p = p.dt2 - cp ** 2 * p.laplace + damp * p.dt
    pde_v = v.dt - b * div(tau) + damp * v.forward
    pde_tau = (tau.dt - lam * diag(div(v.forward))
               - mu * (grad(v.forward) + grad(v.forward).transpose(inner=False))
               + damp * tau.forward)
    eqs = [Eq(v.forward, solve(pde_v, v.forward), subdomain=lowerfield),
           Eq(p.forward, solve(pde_p, p.forward), subdomain=upper),
           Eq(tau.forward, solve(pde_tau, tau.forward), subdomain=lower),
           Eq(p.forward, (tau[0, 0].forward + tau[1, 1].forward) / 2, subdomain=low_tr),
           Eq(tau[0, 0].forward, p.forward, subdomain=up_tr),
           Eq(tau[1, 1].forward, p.forward, subdomain=up_tr)]
    eqs += src.inject(field=p.forward, expr=src)
    eqs += rec.interpolate(expr=tau[0, 0].forward + tau[1, 1].forward)
    Operator(eqs).apply(time_M=nt - 2, dt=dt)
    return {"rec": np.array(rec.data), "p": np.array(p.data),
            "txx": np.array(tau[0, 0].data), "v_y": np.array(v[1].data)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()))
