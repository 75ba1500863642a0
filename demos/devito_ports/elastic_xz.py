"""Devito's elastic tutorials (seismic 06 and 06 with varying parameters) on dimensions
named x and z: ``SpaceDimension``s with Constant spacings of their own (10 m across, 8 m
down) on a rectangular grid, Lame parameters and buoyancy in layers down z under a fluid
layer (mu = 0), velocity a VectorTimeFunction and stress a symmetric TensorTimeFunction at
space order 4, ``div(tau)``, ``diag(div(v.forward))`` and
``grad(v.forward).transpose(inner=False)``, the updates damped towards the edges, the source
``s*src`` (``s`` the time step) injected into both normal stresses, receivers recording
``tau[0, 0] + tau[1, 1]``, ``v[1]`` and ``v[0]`` joined with ``rec_term += ...``. The
tutorial's second-order-in-time form is elastic_dt2.py."""
import numpy as np

from demos.devito_ports.framework import api

(Constant, Eq, Function, Grid, Operator, SpaceDimension, SparseTimeFunction,
 TensorTimeFunction, VectorTimeFunction, diag, div, grad, solve) = (
    api.Constant, api.Eq, api.Function, api.Grid, api.Operator, api.SpaceDimension,
    api.SparseTimeFunction, api.TensorTimeFunction, api.VectorTimeFunction, api.diag,
    api.div, api.grad, api.solve)


def ricker(t, f0):
    r = (np.pi * f0 * (t - 1.0 / f0)) ** 2
    return (1 - 2 * r) * np.exp(-r)


def model(grid, so, nbl=8):
    """Layered lam, mu, buoyancy b and a damping profile (1 inside, less near the edges)."""
    nx, nz = grid.shape
    vp = np.full((nx, nz), 1.5, dtype=np.float32)
    vp[:, nz // 3:] = 2.0
    vp[:, 2 * nz // 3:] = 2.5
    vs = np.where(vp > 1.6, vp / 1.8, 0.0).astype(np.float32)    # a fluid top layer
    rho = 0.3 * vp + 1.4
    fields = {}
    for name, value in (("lam", rho * (vp ** 2 - 2 * vs ** 2)), ("mu", rho * vs ** 2),
                        ("b", 1.0 / rho)):
        fields[name] = Function(name=name, grid=grid, space_order=so)
        fields[name].data[:] = value
    ramp = 1.0 - 0.08 * (np.maximum(0, nbl - np.arange(nx)) / nbl) ** 2
    rampz = 1.0 - 0.08 * (np.maximum(0, nbl - np.arange(nz)) / nbl) ** 2
    fields["damp"] = Function(name="damp", grid=grid, space_order=so)
    fields["damp"].data[:] = (ramp * ramp[::-1])[:, None] * (rampz * rampz[::-1])[None, :]
    return fields


def sparse(grid, nt, dt, f0):
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [200.0, 90.0]
    src.data[:, 0] = ricker(np.arange(nt) * dt, f0)
    recs = []
    for name, depth in (("rec", 20.0), ("rec2", 160.0), ("rec3", 160.0)):
        rec = SparseTimeFunction(name=name, grid=grid, npoint=9, nt=nt)
        rec.coordinates.data[:, 0] = np.linspace(40.0, 360.0, 9)
        rec.coordinates.data[:, -1] = depth
        recs.append(rec)
    return src, recs


def first_order(grid, m, so, nt, dt, f0):
    s = grid.time_dim.spacing
    v = VectorTimeFunction(name="v", grid=grid, space_order=so, time_order=1)
    tau = TensorTimeFunction(name="t", grid=grid, space_order=so, time_order=1)
    src, (rec, rec2, rec3) = sparse(grid, nt, dt, f0)
    src_xx = src.inject(field=tau.forward[0, 0], expr=s * src)
    src_zz = src.inject(field=tau.forward[1, 1], expr=s * src)
    rec_term = rec.interpolate(expr=tau[0, 0] + tau[1, 1])
    rec_term += rec2.interpolate(expr=v[1])
    rec_term += rec3.interpolate(expr=v[0])
    l, mu, ro = m["lam"], m["mu"], m["b"]
    pde_v = v.dt - ro * div(tau)
    pde_tau = (tau.dt - l * diag(div(v.forward))
               - mu * (grad(v.forward) + grad(v.forward).transpose(inner=False)))
    u_v = Eq(v.forward, m["damp"] * solve(pde_v, v.forward))
    u_t = Eq(tau.forward, m["damp"] * solve(pde_tau, tau.forward))
    Operator([u_v] + [u_t] + src_xx + src_zz + rec_term)(dt=dt, time_M=nt - 2)
    last = (nt - 1) % 2
    return {"rec": np.array(rec.data), "rec2": np.array(rec2.data),
            "rec3": np.array(rec3.data), "vx": np.array(v[0].data[last]),
            "vz": np.array(v[1].data[last]), "txz": np.array(tau[0, 1].data[last]),
            "tzz": np.array(tau[1, 1].data[last])}


def setup(shape=(41, 31), spacing=(10.0, 8.0), so=4):
    """The grid on x and z, the layered model and a stable time step."""
    x = SpaceDimension(name="x", spacing=Constant(name="h_x", value=spacing[0]))
    z = SpaceDimension(name="z", spacing=Constant(name="h_z", value=spacing[1]))
    extent = tuple(h * (n - 1) for h, n in zip(spacing, shape))
    grid = Grid(extent=extent, shape=shape, dimensions=(x, z))
    return grid, model(grid, so), 0.35 * min(spacing) / 2.5


def run(so=4, nt=80, f0=0.03):
    grid, m, dt = setup(so=so)
    return first_order(grid, m, so, nt, dt, f0)


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()))
