"""Arrival times in flat-layered models (straight rays bent by Snell's law), to check pictures.

Used to draw the expected arrivals over a shot record: the direct wave in the top layer and
the primary reflection from each interface, for a source and receivers inside the top layer.
"""
from __future__ import annotations

import numpy as np


def direct_times(offsets, velocity: float, dz: float = 0.0) -> np.ndarray:
    """Travel time (ms) of the direct wave over horizontal ``offsets`` (m) at ``velocity`` (km/s);
    ``dz`` the depth difference between source and receiver."""
    offsets = np.asarray(offsets, dtype=np.float64)
    return np.hypot(offsets, dz) / velocity


def reflection_times(offsets, interface: int, interfaces, velocities, zs: float,
                     zr: float) -> np.ndarray:
    """Travel times (ms) of the primary reflection from ``interfaces[interface]`` (depths in m)
    at horizontal ``offsets`` (m), for a source at depth ``zs`` and receivers at ``zr``, both in
    the top layer. NaN where no pre-critical ray reaches that offset.

    A ray of horizontal slowness p crosses a layer of thickness h and velocity v over
    h p v / sqrt(1 - p**2 v**2) horizontally in h / (v sqrt(1 - p**2 v**2)); the legs are the
    way down from zs and the way up to zr through the layers above the interface.
    """
    offsets = np.abs(np.asarray(offsets, dtype=np.float64))
    interfaces = [float(d) for d in interfaces]
    velocities = [float(v) for v in velocities]
    k = int(interface)
    tops = [-np.inf] + interfaces
    if not (zs < interfaces[0] and zr < interfaces[0]):
        raise ValueError("reflection_times: source and receivers must be in the top layer")
    legs = []                                   # (thickness, velocity) of each leg
    for z in (zs, zr):
        for i in range(k + 1):
            top = max(tops[i], z)
            legs.append((interfaces[i] - top, velocities[i]))
    h = np.array([leg[0] for leg in legs])[:, None]
    v = np.array([leg[1] for leg in legs])[:, None]
    pmax = 1.0 / v.max()
    p = np.linspace(0.0, pmax, 20001)[None, :-1]        # up to (not at) critical incidence
    c = np.sqrt(1.0 - (p * v) ** 2)
    x = np.sum(h * p * v / c, axis=0)
    t = np.sum(h / (v * c), axis=0)
    out = np.interp(offsets, x, t, right=np.nan)
    return out
