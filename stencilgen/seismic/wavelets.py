"""Source wavelets and the time axis of a shot.

Units follow the demos: time in milliseconds, hence frequency in kHz (10 Hz = 0.010 kHz).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TimeAxis:
    """``num`` samples ``start, start + step, ..., stop`` (ms); ``values`` is the array."""

    start: float
    stop: float
    step: float
    num: int

    @property
    def values(self) -> np.ndarray:
        return self.start + self.step * np.arange(self.num, dtype=np.float64)

    def __len__(self) -> int:
        return self.num


def time_axis(t0: float, tn: float, dt: float) -> TimeAxis:
    """Samples from ``t0`` every ``dt`` up to (at least) ``tn``, as Devito's ``TimeAxis``.

    The number of samples is ``ceil((tn - t0) / dt) + 1`` (a tolerance absorbs round-off), so the
    last sample, ``stop = t0 + (num - 1) * dt``, is ``tn`` or at most one step after it.
    """
    t0, tn, dt = float(t0), float(tn), float(dt)
    if not (math.isfinite(t0) and math.isfinite(tn) and math.isfinite(dt)):
        raise ValueError(f"time_axis: t0={t0}, tn={tn}, dt={dt} must be finite")
    if dt <= 0:
        raise ValueError(f"time_axis: dt={dt} must be positive")
    if tn < t0:
        raise ValueError(f"time_axis: tn={tn} is before t0={t0}")
    steps = math.ceil((tn - t0) / dt - 1e-9)
    num = steps + 1
    return TimeAxis(start=t0, stop=t0 + steps * dt, step=dt, num=num)


def ricker(f0: float, t, t0: float | None = None, amplitude: float = 1.0) -> np.ndarray:
    """The Ricker wavelet of peak frequency ``f0`` at times ``t`` (kHz and ms, or Hz and s).

        r(t) = amplitude * (1 - 2 a) * exp(-a),   a = (pi * f0 * (t - t0))**2

    ``t0``, the time of the peak, defaults to ``1 / f0``: at t = 0 the wavelet is then
    (1 - 2 pi**2) exp(-pi**2) ~ -1e-3 of its peak, so a source starting at rest is not a jump.
    The wavelet (the second derivative of a Gaussian) has zero mean.
    """
    f0 = float(f0)
    if not (math.isfinite(f0) and f0 > 0):
        raise ValueError(f"ricker: peak frequency f0={f0!r} must be positive")
    t0 = 1.0 / f0 if t0 is None else float(t0)
    t = np.asarray(t.values if isinstance(t, TimeAxis) else t, dtype=np.float64)
    a = (np.pi * f0 * (t - t0)) ** 2
    return amplitude * (1.0 - 2.0 * a) * np.exp(-a)
