"""A 2D acoustic shot as a new user writes it, as Devito 4.8 computes it: so 4, 101 x 81
points over 1000 x 800 m, m = 1/1.5^2 a Python float, nt = 400, dt = 1.2, a Ricker of
f0 = 0.015 kHz delayed by 1/f0 at (503.7, 401.3) injected as ``src * dt**2 / m`` into
``u.forward``, 50 receivers from x = 13.3 to 987.1 at depth 52.9 interpolating ``u``,
``apply(time_m=1, time_M=nt - 2, dt=dt)``; in float32 and in float64.

``PYTHONPATH=/tmp/devito-site python tests/reference/shot2d_program.py`` runs it under
Devito 4.8.23 and writes ``shot2d_program.npz`` beside this file; tests/test_devito_ports.py
runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def shot(api, dtype) -> np.ndarray:
    """The receivers' records (nt x 50) of the shot in ``dtype``."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    grid = api.Grid(shape=(101, 81), extent=(1000., 800.), dtype=dtype)
    m = 1 / 1.5 ** 2
    u = api.TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    nt, dt, f0 = 400, 1.2, 0.015
    r = (np.pi * f0 * (np.arange(nt) * dt - 1 / f0)) ** 2
    src = api.SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [503.7, 401.3]
    src.data[:, 0] = (1 - 2 * r) * np.exp(-r)
    rec = api.SparseTimeFunction(name="rec", grid=grid, npoint=50, nt=nt)
    rec.coordinates.data[:, 0] = np.linspace(13.3, 987.1, 50)
    rec.coordinates.data[:, 1] = 52.9
    stencil = api.Eq(u.forward, api.solve(m * u.dt2 - u.laplace, u.forward))
    op = api.Operator([stencil] + src.inject(field=u.forward, expr=src * dt ** 2 / m)
                      + rec.interpolate(expr=u), name="Shot2D", **extra)
    op.apply(time_m=1, time_M=nt - 2, dt=dt)
    return np.array(rec.data)


def run(api) -> dict:
    return {"float32": shot(api, np.float32), "float64": shot(api, np.float64)}


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))
