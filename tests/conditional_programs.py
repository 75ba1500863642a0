"""Devito programs with ConditionalDimensions that run unchanged under Devito and stencilgen:
each function takes the framework's module (``devito`` or ``stencilgen``) and returns its
results by name. ``python tests/conditional_programs.py`` run with Devito 4.8.23 on the path
(``PYTHONPATH=/tmp/devito-site``) writes its results to tests/data/conditional_devito.npz,
which tests/test_conditional.py compares stencilgen's with."""
from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import sympy

REFERENCE = Path(__file__).resolve().parent / "data" / "conditional_devito.npz"


def snapshots(api, nt=31, factor=4):
    """A 2D wave (so 4) from a Gaussian, saved every ``factor`` steps; then a second Operator
    that reads the snapshots (as an imaging condition does) into a sum over them."""
    grid = api.Grid(shape=(41, 37), extent=(400.0, 360.0))
    x, y = grid.dimensions
    time = grid.time_dim
    t_sub = api.ConditionalDimension("t_sub", parent=time, factor=factor)
    m = api.Function(name="m", grid=grid, space_order=4)
    xs, ys = np.meshgrid(np.arange(41), np.arange(37), indexing="ij")
    m.data[:] = 1.0 / (1.5 + 0.5 * (xs > 20)) ** 2
    u = api.TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    bump = np.exp(-((xs - 18.0) ** 2 + (ys - 15.0) ** 2) / 8.0)
    u.data[0] = bump
    u.data[1] = bump
    usave = api.TimeFunction(name="usave", grid=grid, time_order=0, space_order=4,
                             save=(nt - 2) // factor + 1, time_dim=t_sub)
    pde = m * u.dt2 - u.laplace
    op = api.Operator([api.Eq(u.forward, api.solve(pde, u.forward)), api.Eq(usave, u)])
    op.apply(time_M=nt - 2, dt=2.0)
    image = api.Function(name="image", grid=grid, space_order=4)
    api.Operator([api.Eq(image, image + usave * usave * m)]).apply()
    return {"usave": np.array(usave.data), "u": np.array(u.data), "image": np.array(image.data)}


def conditions(api):
    """The conditions of Devito's ConditionalDimension tutorial, on random data: Gt(f, 0) on
    y, And(Ne(g, 0), Lt(y, 5)), an Or of a factor and an edge on x, a condition on time and
    one on a TimeFunction."""
    grid = api.Grid(shape=(10, 9))
    x, y = grid.dimensions
    time = grid.time_dim
    rng = np.random.default_rng(11)
    f, g, h = (api.Function(name=n, grid=grid) for n in ("f", "g", "h"))
    f.data[:] = rng.standard_normal(grid.shape)
    g.data[:] = rng.integers(-1, 2, grid.shape)
    c1 = api.ConditionalDimension(name="c1", parent=y, condition=api.Gt(f, 0))
    c2 = api.ConditionalDimension(name="c2", parent=y,
                                  condition=sympy.And(api.Ne(g, 0), api.Lt(y, 5)))
    even = api.ConditionalDimension(name="even", parent=x, factor=2, relation=sympy.Or)
    edge = api.ConditionalDimension(name="edge", parent=x, condition=api.CondEq(x, 9),
                                    relation=sympy.Or)
    api.Operator([api.Eq(f, f + 1, implicit_dims=c1), api.Eq(h, f + g, implicit_dims=c2),
                  api.Eq(g, 7, implicit_dims=(even, edge))]).apply()
    u = api.TimeFunction(name="u", grid=grid, space_order=2)
    v = api.TimeFunction(name="v", grid=grid, space_order=2)
    u.data[0] = rng.standard_normal(grid.shape)
    late = api.ConditionalDimension(name="late", parent=time, condition=api.Ge(time, 3))
    positive = api.ConditionalDimension(name="positive", parent=y, condition=api.Gt(u, 0.3))
    api.Operator([api.Eq(u.forward, u + 0.01 * u.laplace + 1, implicit_dims=late),
                  api.Eq(v.forward, v + u, implicit_dims=positive)]).apply(time_M=6, dt=0.1)
    return {"f": np.array(f.data), "g": np.array(g.data), "h": np.array(h.data),
            "u": np.array(u.data), "v": np.array(v.data)}


def rtm(api, nt=50, factor=5):
    """Reverse-time migration's pattern: a shot (a source, receivers) saved every ``factor``
    steps, then the receivers' data injected backwards in time and the image summed from
    the snapshots at the steps that have one (``grad - usave * v.dt2``)."""
    grid = api.Grid(shape=(51, 41), extent=(500.0, 400.0))
    time = grid.time_dim
    m = api.Function(name="m", grid=grid, space_order=4)
    m.data[:] = 1 / 1.5 ** 2
    u = api.TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    t_sub = api.ConditionalDimension("t_sub", parent=time, factor=factor)
    usave = api.TimeFunction(name="usave", grid=grid, time_order=0, space_order=4,
                             save=nt // factor + 1, time_dim=t_sub)
    src = api.SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [[250.0, 200.0]]
    steps = np.arange(nt)
    src.data[:, 0] = np.sin(steps * 0.3) * np.exp(-((steps - 10) / 4.0) ** 2)
    rec = api.SparseTimeFunction(name="rec", grid=grid, npoint=3, nt=nt)
    rec.coordinates.data[:] = [[100.0, 50.0], [200.0, 60.0], [300.0, 70.0]]
    forward = [api.Eq(u.forward, api.solve(m * u.dt2 - u.laplace, u.forward))]
    forward += src.inject(field=u.forward, expr=src * 1.0) + rec.interpolate(expr=u)
    api.Operator(forward + [api.Eq(usave, u)]).apply(time_M=nt - 2, dt=1.5)
    v = api.TimeFunction(name="v", grid=grid, time_order=2, space_order=4)
    grad = api.Function(name="grad", grid=grid)
    adjoint = [api.Eq(v.backward, api.solve(m * v.dt2 - v.laplace, v.backward))]
    adjoint += rec.inject(field=v.backward, expr=rec * 1.0)
    api.Operator(adjoint + [api.Eq(grad, grad - usave * v.dt2)]).apply(time_M=nt - 2, dt=1.5)
    return {"usave": np.array(usave.data), "rec": np.array(rec.data),
            "grad": np.array(grad.data)}


PROGRAMS = {"snapshots": snapshots, "conditions": conditions, "rtm": rtm}


def results(api) -> dict:
    """Every program's results, named ``<program>_<array>``."""
    return {f"{p}_{k}": v for p, run in PROGRAMS.items() for k, v in run(api).items()}


if __name__ == "__main__":
    devito = importlib.import_module("devito")
    REFERENCE.parent.mkdir(exist_ok=True)
    np.savez_compressed(REFERENCE, **results(devito))
    print(f"wrote {REFERENCE} (Devito {devito.__version__})")
