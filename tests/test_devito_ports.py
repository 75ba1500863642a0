"""The Devito-style programs of demos/devito_ports run under stencilgen and give Devito
4.8.23's numbers (stored in demos/devito_ports/reference, computed with FRAMEWORK=devito)
to float32 round-off."""
from __future__ import annotations

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
TOLERANCE = {"diffusion": 1e-5, "channel": 1e-5, "shot": 2e-4, "staggered_acoustic": 2e-5,
             "elastic": 2e-5}


@pytest.mark.parametrize("name", sorted(TOLERANCE))
def test_port_gives_devitos_numbers(name, monkeypatch):
    monkeypatch.setenv("FRAMEWORK", "stencilgen")
    for mod in ("demos.devito_ports.framework", f"demos.devito_ports.{name}"):
        sys.modules.pop(mod, None)
    port = importlib.import_module(f"demos.devito_ports.{name}")
    assert port.api.__name__ == "stencilgen"
    out = port.run()
    ref = np.load(ROOT / "demos" / "devito_ports" / "reference" / f"{name}.npz")
    assert set(out) == set(ref.files)
    for key, value in out.items():
        scale = np.abs(ref[key]).max()
        assert scale > 0 and value.shape == ref[key].shape
        assert np.abs(value - ref[key]).max() <= TOLERANCE[name] * scale, (name, key)


def test_ports_import_only_through_the_framework():
    """Each port names its framework in one place (framework.py): no other import of
    stencilgen or devito."""
    for path in (ROOT / "demos" / "devito_ports").glob("*.py"):
        text = path.read_text()
        if path.name != "framework.py":
            assert "import stencilgen" not in text and "import devito" not in text, path
            assert "from stencilgen" not in text and "from devito " not in text, path
    assert os.path.exists(ROOT / "demos" / "devito_ports" / "reference" / "shot.npz")
