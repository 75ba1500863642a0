"""Nested derivatives that Devito 4.8 and stencilgen must take alike, over the whole domain:
the inner derivative is evaluated wherever the outer stencil reaches, past the domain's
edges too, from the halos of what it reads. Each case is written into a node function over a
14x12 grid at space order 4 from random data in the domain and the halos: the self-adjoint
example's ``(b * u.dx(x0=x + h/2)).dx(x0=x - h/2)``, ``div(b * grad(u, shift=.5),
shift=-.5)``, the centred ``u.dx.dx``, a TTI-style rotated nest, a cross nest ``u.dx.dy``,
the biharmonic ``u.laplace.laplace`` and the TTI example's ``Gzz`` (its sums of terms at
different staggered points under each outer derivative). Then a variable-density self-adjoint acoustic run
(the self-adjoint example's scheme, space order 8, 240 steps) whose waves reach the edges,
the buoyancy's halo holding its edge values.

``PYTHONPATH=/tmp/devito-site python tests/reference/nested_program.py`` runs it under
Devito 4.8.23 and writes ``nested_program.npz`` beside this file; tests/test_devito_derivatives.py
runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def cases(api, u, b, th, x, y):
    """name -> the expression, built with ``api``'s objects."""
    hx, hy = x.spacing, y.spacing
    rot = api.cos(th) * u.dx + api.sin(th) * u.dy
    # Devito's TTI example (Gzz_centered_2d, unit buoyancy): staggered first derivatives of
    # half the space order, each direction's term at its own staggered point
    gz = (api.sin(th) * u.dx(fd_order=2, x0=x + hx / 2) +
          api.cos(th) * u.dy(fd_order=2, x0=y + hy / 2))
    gzz = ((gz * api.cos(th)).dy(fd_order=2, x0=y - hy / 2) +
           (gz * api.sin(th)).dx(fd_order=2, x0=x - hx / 2))
    return {
        "(b*u.dx(x0=x+h/2)).dx(x0=x-h/2)":
            (b * u.dx(x0=x + hx / 2)).dx(x0=x - hx / 2),
        "(b*u.dy(x0=y+h/2)).dy(x0=y-h/2)":
            (b * u.dy(x0=y + hy / 2)).dy(x0=y - hy / 2),
        "div(b*grad(u, shift=.5), shift=-.5)": api.div(b * api.grad(u, shift=.5), shift=-.5),
        "u.dx.dx": u.dx.dx,
        "rotated": (api.cos(th) * rot).dx + (api.sin(th) * rot).dy,
        "u.dx.dy": u.dx.dy,
        "u.laplace.laplace": u.laplace.laplace,
        "tti Gzz": gzz,
    }


def _random(f, rng):
    f.data_with_halo[:] = rng.random(f.data_with_halo.shape).astype(np.float32)


def run(api) -> dict:
    """Each case's values and the acoustic run's last state, with ``api`` (the devito or
    stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    grid = api.Grid(shape=(14, 12), extent=(1.3, 1.1), dtype=np.float32)
    x, y = grid.dimensions
    rng = np.random.default_rng(7)
    u, b, th = (api.Function(name=n, grid=grid, space_order=4) for n in ("u", "b", "th"))
    for f in (u, b, th):
        _random(f, rng)
    out = {}
    for i, (name, expr) in enumerate(cases(api, u, b, th, x, y).items()):
        g = api.Function(name="g", grid=grid, space_order=4)
        api.Operator(api.Eq(g, expr), name=f"Case{i}", **extra).apply()
        out[name] = np.array(g.data)
    out["acoustic"] = acoustic(api, extra)
    return out


def acoustic(api, extra) -> np.ndarray:
    """The self-adjoint example's variable-density acoustic update (no attenuation), a
    Gaussian pulse near a corner, 240 steps: the last state."""
    grid = api.Grid(shape=(61, 53), extent=(600., 520.), dtype=np.float32)
    x, y = grid.dimensions
    t = grid.stepping_dim
    p = api.TimeFunction(name="p", grid=grid, time_order=2, space_order=8)
    b = api.Function(name="b", grid=grid, space_order=8)
    X, Y = np.meshgrid(np.arange(61.), np.arange(53.), indexing="ij")
    b.data[:] = 1.0 + 0.5 * np.sin(X / 7.) * np.cos(Y / 5.)
    b.data_with_halo[:] = np.pad(np.array(b.data), 8, mode="edge")
    p.data[0] = p.data[1] = np.exp(-((X - 8.) ** 2 + (Y - 10.) ** 2) / 6.)
    v, dt = 1.5, 2.0
    lap = ((b * p.dx(x0=x + x.spacing / 2)).dx(x0=x - x.spacing / 2) +
           (b * p.dy(x0=y + y.spacing / 2)).dy(x0=y - y.spacing / 2))
    update = 2 * p - p.backward + dt ** 2 * v ** 2 / b * lap
    api.Operator(api.Eq(p.forward, update), name="Acoustic", **extra).apply(
        time_m=1, time_M=240, dt=dt)
    return np.array(p.data[241 % 3])


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))
