"""Reverse-time migration in the seismic RTM tutorial's pattern, on a small 2D model: for
each shot a forward Operator models the data of the true model (a flat reflector under
water-speed rock) and of the smooth one (no reflector), saving the wavefield every
``factor`` steps through a ``ConditionalDimension`` (the smooth run, second, leaves its
own); a second Operator propagates the residual backwards in time (``v.backward``, the
damping's adjoint ``v.dt.T``) and sums the imaging condition
``Eq(image, image - usave * v.dt2)`` at the steps that have a snapshot. Both Operators are
built once and applied to each shot's functions with overrides (``u=``, ``m=``, ``rec=``,
``v=``). As in the tutorial, the forward wavefield is also saved at every step
(``save=nt``): the snapshots must be every ``factor``-th of its steps, and the backward
Operator sums the same imaging condition from it under ``implicit_dims=t_sub``, which must
give the same image."""
import numpy as np

from demos.devito_ports.framework import api
from demos.devito_ports.wavelets import ricker

(ConditionalDimension, Eq, Function, Grid, Operator, SparseTimeFunction, TimeFunction,
 solve) = (api.ConditionalDimension, api.Eq, api.Function, api.Grid, api.Operator,
           api.SparseTimeFunction, api.TimeFunction, api.solve)

SPACING = 10.0           # m
REFLECTOR = 200.0        # depth of the reflector, m


def models(grid, nbl=10):
    """Squared slownesses (km/s: 1.5 above the reflector, 2.5 below; 1.5 everywhere for the
    smooth model) and a damping growing quadratically into the left, right and bottom
    ``nbl`` points."""
    nx, nz = grid.shape
    vp = np.full((nx, nz), 1.5, dtype=np.float32)
    vp[:, int(REFLECTOR / SPACING):] = 2.5
    fields = {}
    for name, value in (("m", 1.0 / vp ** 2), ("m0", np.full((nx, nz), 1.0 / 1.5 ** 2))):
        fields[name] = Function(name=name, grid=grid, space_order=4)
        fields[name].data[:] = value
    ramp = np.maximum(0, nbl - np.arange(nx)) / nbl
    depth = np.maximum(0, np.arange(nz) - (nz - 1 - nbl)) / nbl
    profile = np.maximum((ramp + ramp[::-1])[:, None], depth[None, :])
    fields["damp"] = Function(name="damp", grid=grid, space_order=4)
    fields["damp"].data[:] = 0.05 * profile ** 2
    return fields


def forward_operator(grid, u, m, damp, src, rec, dt, factor, nsnaps):
    """The modelling step: the wave, the source, the receivers and the snapshots; returns
    the Operator and the snapshot function it writes."""
    t_sub = ConditionalDimension("t_sub", parent=grid.time_dim, factor=factor)
    usave = TimeFunction(name="usave", grid=grid, time_order=0, space_order=4, save=nsnaps,
                         time_dim=t_sub)
    stencil = Eq(u.forward, solve(m * u.dt2 - u.laplace + damp * u.dt, u.forward))
    src_term = src.inject(field=u.forward, expr=src * dt ** 2 / m)
    rec_term = rec.interpolate(expr=u)
    return Operator([stencil] + src_term + rec_term + [Eq(usave, u)]), usave, t_sub


def imaging_operator(grid, m, damp, usave, ufull, t_sub, residual, image, image_full, dt):
    """The residual propagated backwards and the imaging condition from the snapshots (and,
    as a check, from the fully saved wavefield at the same steps)."""
    v = TimeFunction(name="v", grid=grid, time_order=2, space_order=4)
    stencil = Eq(v.backward, solve(m * v.dt2 - v.laplace + damp * v.dt.T, v.backward))
    res_term = residual.inject(field=v.backward, expr=residual * dt ** 2 / m)
    image_update = Eq(image, image - usave * v.dt2)
    full_update = Eq(image_full, image_full - ufull * v.dt2, implicit_dims=t_sub)
    return Operator([stencil] + res_term + [image_update, full_update])


def receivers(grid, name, nt, nrec):
    rec = SparseTimeFunction(name=name, grid=grid, npoint=nrec, nt=nt)
    rec.coordinates.data[:, 0] = np.linspace(20.0, SPACING * (grid.shape[0] - 1) - 20.0, nrec)
    rec.coordinates.data[:, 1] = 20.0
    return rec


def run(shape=(61, 46), nt=301, factor=4, shots=(150.0, 420.0), nrec=25, f0=0.015):
    grid = Grid(shape=shape, extent=tuple(SPACING * (n - 1) for n in shape))
    f = models(grid)
    dt = 0.4 * SPACING / 2.5
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.data[:, 0] = ricker(nt, dt, f0)
    rec = receivers(grid, "rec", nt, nrec)
    nsnaps = (nt - 2) // factor + 1
    ufull = TimeFunction(name="u", grid=grid, time_order=2, space_order=4, save=nt)
    fwd, usave, t_sub = forward_operator(grid, ufull, f["m"], f["damp"], src, rec, dt, factor,
                                         nsnaps)
    residual = receivers(grid, "residual", nt, nrec)
    image = Function(name="image", grid=grid, space_order=4)
    image_full = Function(name="image_full", grid=grid, space_order=4)
    img = imaging_operator(grid, f["m"], f["damp"], usave, ufull, t_sub, residual, image,
                           image_full, dt)
    out = {}
    for i, xs in enumerate(shots):
        src.coordinates.data[:] = [[xs, 20.0]]
        true_d = receivers(grid, "true_d", nt, nrec)
        smooth_d = receivers(grid, "smooth_d", nt, nrec)
        u_true = TimeFunction(name="u_true", grid=grid, time_order=2, space_order=4, save=nt)
        fwd.apply(u=u_true, m=f["m"], rec=true_d, dt=dt, time_M=nt - 2)
        ufull.data[:] = 0.0
        fwd.apply(u=ufull, m=f["m0"], rec=smooth_d, dt=dt, time_M=nt - 2)
        residual.data[:] = smooth_d.data - true_d.data
        v = TimeFunction(name="v0", grid=grid, time_order=2, space_order=4)
        img.apply(v=v, m=f["m0"], dt=dt, time_M=nt - 2)
        out[f"residual{i}"] = np.array(residual.data)
    # every 15th snapshot, and the same steps of the full run
    out.update(usave=np.array(usave.data[::15]),
               ufull=np.array(ufull.data[:nsnaps * factor:15 * factor]),
               image=np.array(image.data), image_full=np.array(image_full.data))
    return out


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()))
