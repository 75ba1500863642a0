"""Stores the results of ports under ``reference/NAME.npz``, to be run under Devito:

    FRAMEWORK=devito PYTHONPATH=/path/to/devito python -m demos.devito_ports.store_reference \
        convection burgers ...

tests/test_devito_ports.py compares stencilgen's results with what this stored."""
import importlib
import sys
from pathlib import Path

import numpy as np

from demos.devito_ports.framework import api


def store(name: str) -> Path:
    port = importlib.import_module(f"demos.devito_ports.{name}")
    out = {key: np.asarray(value) for key, value in port.run().items()}
    path = Path(__file__).parent / "reference" / f"{name}.npz"
    np.savez_compressed(path, **out)
    return path


if __name__ == "__main__":
    if api.__name__ != "devito":
        sys.exit("run this with FRAMEWORK=devito: the references are Devito's numbers")
    for arg in sys.argv[1:]:
        print(f"{arg}: {store(arg)} (Devito {api.__version__})")
