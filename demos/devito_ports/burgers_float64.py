"""The scalar Burgers port (burgers.py) with the tutorial's own sizes (41 x 41, sigma =
0.0009) in float64: the two frameworks then agree to 1e-14 (1e-9 where a build reassociates), so what separates them in float32
(a few 1e-6 here) is the round-off of a different operation order, not a different scheme:
Devito's float32 result is as far from its own float64 one."""
import numpy as np

from demos.devito_ports import burgers
from demos.devito_ports.framework import api  # noqa: F401 - the framework the port ran on


def run():
    return burgers.run(nx=41, ny=41, sigma=0.0009, dtype=np.float64)


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))
