"""Rotated staggered finite differences (RSFD) as Devito 4.8 computes them: ``dx45``,
``dy45``, ``dz45`` of functions on the nodes, at cell centres and staggered along one
dimension, taken at a node or a cell centre; ``div45``, ``grad45`` and ``curl45`` of
vector and tensor functions; a 2D elastic scheme of Devito's rotated-staggered form (stresses
on the nodes, velocities at cell centres) stepped 8 times. Random values, halos included.

``PYTHONPATH=/tmp/devito-site python tests/reference/rotated_program.py`` runs it under
Devito 4.8.23 and writes ``rotated_program.npz`` beside this file; tests/test_rotated.py runs
it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def _fill(fs, seed):
    rng = np.random.default_rng(seed)
    for f in fs:
        f.data_with_halo[:] = rng.standard_normal(f.data_with_halo.shape)


def _cases2d(api, so, extra, out):
    grid = api.Grid(shape=(10, 9), extent=(9., 16.))
    x, y = grid.dimensions
    cell = api.CELL
    f = api.Function(name="f", grid=grid, space_order=so)
    fc = api.Function(name="fc", grid=grid, space_order=so, staggered=cell)
    fx = api.Function(name="fx", grid=grid, space_order=so, staggered=x)
    g = api.Function(name="g", grid=grid, space_order=so)
    gc = api.Function(name="gc", grid=grid, space_order=so, staggered=cell)
    v = api.VectorFunction(name="v", grid=grid, space_order=so)
    vc = api.VectorFunction(name="vc", grid=grid, space_order=so, staggered=(cell, cell))
    t = api.TensorFunction(name="t", grid=grid, space_order=so, symmetric=False,
                           staggered=((api.NODE, api.NODE), (api.NODE, api.NODE)))
    w = api.VectorFunction(name="w", grid=grid, space_order=so, staggered=(cell, cell))
    _fill([f, fc, fx] + list(v) + list(vc) + list(t), 11 + so)
    cases = {"f.dx45 at node": (g, f.dx45), "f.dy45 at node": (g, f.dy45),
             "f.dx45 at cell": (gc, f.dx45), "f.dy45 at cell": (gc, f.dy45),
             "fc.dx45 at node": (g, fc.dx45), "fc.dy45 at node": (g, fc.dy45),
             "fc.dx45 at cell": (gc, fc.dx45), "fx.dx45 at node": (g, fx.dx45),
             "fx.dy45 at node": (g, fx.dy45), "div45(v) at node": (g, api.div45(v)),
             "div45(vc) at node": (g, api.div45(vc))}
    for name, (lhs, rhs) in cases.items():
        api.Operator(api.Eq(lhs, rhs), name="Rot", **extra).apply()
        out[f"2D so{so} {name}"] = np.array(lhs.data)
    api.Operator([api.Eq(a, b) for a, b in zip(w, api.div45(t))], name="RotDiv", **extra).apply()
    out[f"2D so{so} div45(t) at cells"] = np.array([np.array(c.data) for c in w])
    api.Operator([api.Eq(a, b) for a, b in zip(w, api.grad45(f))], name="RotGrad",
                 **extra).apply()
    out[f"2D so{so} grad45(f) at cells"] = np.array([np.array(c.data) for c in w])


def _cases3d(api, so, extra, out):
    grid = api.Grid(shape=(7, 6, 8), extent=(6., 10., 7.))
    cell = api.CELL
    f = api.Function(name="f", grid=grid, space_order=so)
    g = api.Function(name="g", grid=grid, space_order=so)
    gc = api.Function(name="gc", grid=grid, space_order=so, staggered=cell)
    vc = api.VectorFunction(name="vc", grid=grid, space_order=so, staggered=(cell,) * 3)
    vn = api.VectorFunction(name="vn", grid=grid, space_order=so,
                            staggered=(api.NODE,) * 3)
    _fill([f] + list(vc), 23 + so)
    for name, (lhs, rhs) in {"f.dx45 at node": (g, f.dx45), "f.dy45 at cell": (gc, f.dy45),
                             "f.dz45 at cell": (gc, f.dz45),
                             "div45(vc) at node": (g, api.div45(vc))}.items():
        api.Operator(api.Eq(lhs, rhs), name="Rot3", **extra).apply()
        out[f"3D so{so} {name}"] = np.array(lhs.data)
    api.Operator([api.Eq(a, b) for a, b in zip(vn, api.curl45(vc))], name="RotCurl",
                 **extra).apply()
    out[f"3D so{so} curl45(vc) at nodes"] = np.array([np.array(c.data) for c in vn])


def _elastic(api, extra, out):
    """Devito's rotated-staggered elastic form: v at cell centres, tau on the nodes."""
    grid = api.Grid(shape=(21, 19), extent=(200., 180.))
    cell, so, dt = api.CELL, 4, 0.8
    v = api.VectorTimeFunction(name="v", grid=grid, space_order=so, staggered=(cell, cell))
    tau = api.TensorTimeFunction(name="tau", grid=grid, space_order=so, symmetric=False,
                                 staggered=((api.NODE, api.NODE), (api.NODE, api.NODE)))
    rng = np.random.default_rng(5)
    for c in list(v) + list(tau):
        c.data[0] = rng.standard_normal(c.data[0].shape) * 0.01
    lam, mu, b = 2.0, 1.0, 1.0
    eq_v = api.Eq(v.forward, v + dt * b * api.div45(tau))
    grad = api.grad45(v.forward)
    eq_tau = api.Eq(tau.forward, tau + dt * (lam * api.diag(api.div45(v.forward))
                                             + mu * (grad + grad.transpose(inner=False))))
    api.Operator([eq_v, eq_tau], name="RotElastic", **extra).apply(time_M=7)
    out["elastic vx"] = np.array(v[0].data[0])
    out["elastic tau_xy"] = np.array(tau[0, 1].data[0])
    out["elastic tau_yy"] = np.array(tau[1, 1].data[0])


def run(api) -> dict:
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    out = {}
    for so in (2, 4):
        _cases2d(api, so, extra, out)
        _cases3d(api, so, extra, out)
    _elastic(api, extra, out)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))
