"""The Devito-style programs of demos/devito_ports run under stencilgen and give Devito
4.8.23's numbers (stored in demos/devito_ports/reference by store_reference.py, run with
FRAMEWORK=devito) to float32 round-off; where the answer is known (an exact shift, a
Gaussian's spreading, a linear potential) or NumPy can compute it, against that too."""
from __future__ import annotations

import functools
import importlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the largest difference from Devito allowed, relative to the largest value: the shot's
#: 120 steps of float32 (Devito builds with -ffast-math) drift further than a few steps
TOLERANCE = {"diffusion": 1e-5, "channel": 1e-5, "shot": 2e-4, "apply": 1e-6,
             "convection": 1e-5, "nonlinear_convection": 1e-5, "heat": 1e-5, "burgers": 1e-5,
             "laplace": 1e-5, "poisson": 1e-5, "cavity": 1e-5, "staggered_acoustic": 2e-5,
             "elastic": 2e-5}


@functools.lru_cache(maxsize=None)
def results(name):
    """What port ``name`` returns under stencilgen (run once per test session)."""
    saved = os.environ.get("FRAMEWORK")
    os.environ["FRAMEWORK"] = "stencilgen"
    try:
        for mod in ("demos.devito_ports.framework", f"demos.devito_ports.{name}"):
            sys.modules.pop(mod, None)
        port = importlib.import_module(f"demos.devito_ports.{name}")
        assert port.api.__name__ == "stencilgen"
        return port.run()
    finally:
        if saved is None:
            os.environ.pop("FRAMEWORK")
        else:
            os.environ["FRAMEWORK"] = saved


@pytest.mark.parametrize("name", sorted(TOLERANCE))
def test_port_gives_devitos_numbers(name):
    out = results(name)
    ref = np.load(ROOT / "demos" / "devito_ports" / "reference" / f"{name}.npz")
    assert set(out) == set(ref.files)
    for key, value in out.items():
        scale = np.abs(ref[key]).max()
        assert scale > 0 and value.shape == ref[key].shape
        assert np.abs(value - ref[key]).max() <= TOLERANCE[name] * scale, (name, key)


def test_upwinding_at_cfl_1_shifts_the_square_wave_exactly():
    want = np.ones(40)
    want[5 + 12:12 + 12] = 2.0
    assert np.abs(results("convection")["wave"] - want).max() < 1e-6


def test_a_gaussian_spreads_as_the_heat_equation_says():
    """Variance s0**2 + 2*nu*t per axis; the second apply of 21 steps restarts from the
    first's step 20, so the last state is 41 steps in (slot 1), the one before 40."""
    heat = importlib.import_module("demos.devito_ports.heat")
    out = results("heat")
    for slot, steps in ((1, 41), (0, 40)):
        want = heat.gaussian(41, 41, 2 * 0.5 * steps * float(out["dt"]))
        # second-order discretisation error: 1.6e-3 of a 0.22 peak here, 4e-4 at twice the
        # resolution; a step more or fewer moves the peak by 4e-3
        assert np.abs(out["u2"][slot] - want).max() < 2.5e-3


def test_laplace_matches_numpy_and_its_linear_solution():
    out = results("laplace")
    nx, ny = out["p"].shape
    dx, dy = 2.0 / (nx - 1), 1.0 / (ny - 1)
    p = np.zeros((nx, ny))
    p[-1, :] = np.linspace(0, 1, ny)
    changes = []
    for _ in range(len(out["changes"])):
        pn = p.copy()
        p[1:-1, 1:-1] = ((dy ** 2 * (pn[2:, 1:-1] + pn[:-2, 1:-1])
                          + dx ** 2 * (pn[1:-1, 2:] + pn[1:-1, :-2])) / (2 * (dx ** 2 + dy ** 2)))
        p[0, :], p[-1, :] = 0.0, np.linspace(0, 1, ny)
        p[:, 0], p[:, -1] = p[:, 1], p[:, -2]
        changes.append(np.sum(np.abs(p) - np.abs(pn)) / np.sum(np.abs(pn)))
    assert np.abs(out["p"] - p).max() < 1e-6
    assert np.allclose(out["changes"], changes, rtol=1e-4, atol=1e-7)
    x = np.linspace(0, 2, out["linear"].shape[0])
    assert np.abs(out["linear"] - x[:, None] / 2).max() < 1e-5


def test_poisson_matches_numpy():
    out = results("poisson")
    nx, ny = out["p"].shape
    dx, dy = 2.0 / (nx - 1), 1.0 / (ny - 1)
    b = np.zeros((nx, ny))
    b[int(nx / 4), int(ny / 4)], b[int(3 * nx / 4), int(3 * ny / 4)] = 100, -100
    p = np.zeros((nx, ny))
    for _ in range(30):
        pd = p.copy()
        p[1:-1, 1:-1] = (((pd[1:-1, 2:] + pd[1:-1, :-2]) * dx ** 2
                          + (pd[2:, 1:-1] + pd[:-2, 1:-1]) * dy ** 2
                          - b[1:-1, 1:-1] * dx ** 2 * dy ** 2) / (2 * (dx ** 2 + dy ** 2)))
    # 30 applies alternate the buffers: the last (the 30th) wrote pd
    scale = np.abs(p).max()
    assert np.abs(out["pd"] - p).max() < 1e-5 * scale
    assert np.abs(out["q"] - p).max() < 1e-5 * scale


def test_ports_import_only_through_the_framework():
    """Each port names its framework in one place (framework.py): no other import of
    stencilgen or devito."""
    for path in (ROOT / "demos" / "devito_ports").glob("*.py"):
        text = path.read_text()
        if path.name != "framework.py":
            assert "import stencilgen" not in text and "import devito" not in text, path
            assert "from stencilgen" not in text and "from devito " not in text, path
    assert os.path.exists(ROOT / "demos" / "devito_ports" / "reference" / "shot.npz")
