"""A 2D elastic shot on a staggered grid (the seismic tutorials' velocity-stress system):
velocity a VectorTimeFunction, stress a symmetric TensorTimeFunction, Lame parameters and
buoyancy varying in space, an explosive source in the normal stresses, an absorbing layer."""
import numpy as np

from demos.devito_ports.framework import api
from demos.devito_ports.wavelets import ricker

(Eq, Function, Grid, Operator, SparseTimeFunction, TensorTimeFunction, VectorTimeFunction,
 diag, div, grad, solve) = (api.Eq, api.Function, api.Grid, api.Operator,
                            api.SparseTimeFunction, api.TensorTimeFunction,
                            api.VectorTimeFunction, api.diag, api.div, api.grad, api.solve)


def damping(n, nbl, h):
    """A profile that is 1 inside and decays over ``nbl`` points at every edge."""
    d = np.ones((n, n), dtype=np.float32)
    for i in range(nbl):
        val = 1.0 - 0.06 * ((nbl - i) / nbl) ** 2
        d[i, :] *= val
        d[-1 - i, :] *= val
        d[:, i] *= val
        d[:, -1 - i] *= val
    return d


def run(n=61, nt=90, so=4):
    h = 10.0
    grid = Grid(shape=(n, n), extent=(h * (n - 1), h * (n - 1)))
    vp = np.full((n, n), 2.0, dtype=np.float32)
    vp[:, 2 * n // 3:] = 2.6
    vs = 0.5 * vp
    rho = np.full((n, n), 1.0, dtype=np.float32)
    rho[:, 2 * n // 3:] = 1.5
    lam = Function(name="lam", grid=grid, space_order=so)
    mu = Function(name="mu", grid=grid, space_order=so)
    b = Function(name="b", grid=grid, space_order=so)
    damp = Function(name="damp", grid=grid, space_order=so)
    lam.data[:] = rho * (vp ** 2 - 2 * vs ** 2)
    mu.data[:] = rho * vs ** 2
    b.data[:] = 1.0 / rho
    damp.data[:] = damping(n, 10, h)
    v = VectorTimeFunction(name="v", grid=grid, space_order=so, time_order=1)
    tau = TensorTimeFunction(name="t", grid=grid, space_order=so, time_order=1)
    dt = 0.4 * h / 2.6 / np.sqrt(2)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [[300.0, 200.0]]
    src.data[:, 0] = ricker(nt, dt, 0.02)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=9, nt=nt)
    rec.coordinates.data[:, 0] = np.linspace(60.0, 540.0, 9)
    rec.coordinates.data[:, 1] = 100.0
    pde_v = v.dt - b * div(tau)
    pde_tau = (tau.dt - lam * diag(div(v.forward))
               - mu * (grad(v.forward) + grad(v.forward).transpose(inner=False)))
    u_v = Eq(v.forward, damp * solve(pde_v, v.forward))
    u_t = Eq(tau.forward, damp * solve(pde_tau, tau.forward))
    src_xx = src.inject(field=tau.forward[0, 0], expr=src * dt)
    src_yy = src.inject(field=tau.forward[1, 1], expr=src * dt)
    rec_term = rec.interpolate(expr=tau[0, 0] + tau[1, 1])
    Operator([u_v] + [u_t] + src_xx + src_yy + rec_term)(time_M=nt - 2, dt=dt)
    last = (nt - 1) % 2
    return {"rec": np.array(rec.data), "vx": np.array(v[0].data[last]),
            "vy": np.array(v[1].data[last]), "txx": np.array(tau[0, 0].data[last]),
            "txy": np.array(tau[0, 1].data[last])}


if __name__ == "__main__":
    print(np.abs(run()["rec"]).max())
