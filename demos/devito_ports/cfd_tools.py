"""What the CFD ports share besides the framework: the tutorials' hat function, their grid
spacings and their stopping measure."""
import numpy as np


def init_hat(field, dx, dy, value=2.0, background=1.0):
    """``field`` = ``background`` with ``value`` on 0.5 <= x, y <= 1 (the tutorials' start)."""
    field[:] = background
    field[int(0.5 / dx):int(1 / dx + 1), int(0.5 / dy):int(1 / dy + 1)] = value
    return field


def hat_grid(nx, ny):
    """The spacings of an (nx, ny) grid on the tutorials' [0, 2] x [0, 2]."""
    return 2.0 / (nx - 1), 2.0 / (ny - 1)


def relative_change(p, pn):
    """The tutorials' stopping measure of a pseudo-time iteration."""
    return np.sum(np.abs(p) - np.abs(pn)) / np.sum(np.abs(pn))
