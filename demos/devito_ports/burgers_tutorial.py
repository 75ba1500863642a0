"""The scalar Burgers port (burgers.py) with the tutorial's own run in float32 (41 x 41,
sigma = 0.0009, five batches of 640 steps). Devito's result is 1.8e-4 of the largest value
from its own float64 one (burgers_float64.py), stencilgen's 4e-5: Devito computes the update
as ``solve`` writes it, ``dt*(u/dt + ...)``, so every step rounds u through u/dt and back;
stencilgen's simplified form adds dt*(...) to u."""
import numpy as np

from demos.devito_ports import burgers
from demos.devito_ports.framework import api  # noqa: F401 - the framework the port ran on


def run():
    return burgers.tutorial(np.float32)


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
