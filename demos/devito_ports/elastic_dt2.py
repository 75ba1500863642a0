"""The second-order-in-time elastic form of Devito's tutorial 06 with varying parameters,
on elastic_xz.py's grid (dimensions x and z with Constant spacings) and layered model:
``v2.dt2 - ro*div(tau0) + (1 - damp)*v2.dt`` solved for ``v2.forward`` (a
VectorTimeFunction of time order 2), the stress a TensorFunction without time rewritten
every step, ``Eq(tau0, damp*(l*diag(div(v2.forward)) + mu*(grad(v2.forward) +
grad(v2.forward).transpose(inner=False))))``, fed by ``src.dt`` injected into its diagonal;
receivers record v2's components."""
import numpy as np

from demos.devito_ports.elastic_xz import setup, sparse
from demos.devito_ports.framework import api

(Eq, Operator, TensorFunction, VectorTimeFunction, diag, div, grad, solve) = (
    api.Eq, api.Operator, api.TensorFunction, api.VectorTimeFunction, api.diag, api.div,
    api.grad, api.solve)


def run(so=4, nt=80, f0=0.03):
    grid, m, dt = setup(so=so)
    v2 = VectorTimeFunction(name="v2", grid=grid, space_order=so, time_order=2)
    tau0 = TensorFunction(name="t0", grid=grid, space_order=so)
    src, (_, rec2, rec3) = sparse(grid, nt, dt, f0)
    src_xx = src.inject(field=tau0[0, 0], expr=src.dt)
    src_zz = src.inject(field=tau0[1, 1], expr=src.dt)
    l, mu, ro, damp = m["lam"], m["mu"], m["b"], m["damp"]
    pde_v2 = v2.dt2 - ro * div(tau0) + (1 - damp) * v2.dt
    u_v = Eq(v2.forward, solve(pde_v2, v2.forward))
    u_t = Eq(tau0, damp * (l * diag(div(v2.forward))
                           + mu * (grad(v2.forward) + grad(v2.forward).transpose(inner=False))))
    rec_term2 = rec2.interpolate(expr=v2[0])
    rec_term2 += rec3.interpolate(expr=v2[1])
    Operator([u_v] + [u_t] + src_xx + src_zz + rec_term2)(dt=dt, time_M=nt - 3)
    return {"rec2": np.array(rec2.data), "rec3": np.array(rec3.data),
            "txx": np.array(tau0[0, 0].data), "txz": np.array(tau0[0, 1].data),
            "v2x": np.array(v2[0].data), "v2z": np.array(v2[1].data)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()))
