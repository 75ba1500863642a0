"""The source wavelet the seismic ports share (NumPy only, as the tutorials' own helpers)."""
import numpy as np


def ricker(nt, dt, f0):
    """A Ricker wavelet of peak frequency ``f0`` sampled at ``nt`` steps of ``dt``, delayed by
    one period so that it starts near zero."""
    tt = np.arange(nt) * dt - 1.0 / f0
    r = (np.pi * f0 * tt) ** 2
    return ((1 - 2 * r) * np.exp(-r)).astype(np.float32)
