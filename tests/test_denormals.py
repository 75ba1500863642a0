"""Denormal floats in the C backend: flushed to zero inside a run (x86 cores are many times
slower on them), the caller's floating-point mode untouched after it, IEEE on request."""
from __future__ import annotations

import platform as host

import numpy as np
import pytest

from stencilgen import Eq, Grid, Operator, TimeFunction, configuration

x86 = pytest.mark.skipif(host.machine().lower() not in ("x86_64", "amd64", "i386", "i686"),
                         reason="flush-to-zero is set through x86's MXCSR")

TINY = np.float32(1e-36)


def _decay(name):
    """u shrinks a thousandfold a step: from 1e-36 it is denormal (< 1.18e-38) after one."""
    grid = Grid(shape=(16, 16, 16), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[:] = TINY
    return Operator([Eq(u.forward, 1e-3 * u)], name=name, backend="c"), u


@x86
def test_denormals_are_flushed_inside_a_run_and_the_caller_keeps_its_mode():
    op, u = _decay("Flush")
    op.apply(time_M=0)
    assert np.all(u.data[1] == 0), "a denormal result should be flushed to zero"
    # NumPy on the calling thread still computes with denormals: the mode was restored
    assert np.float32(1e-39) * np.float32(1.0) > 0
    assert TINY * np.float32(1e-3) > 0


def test_ieee_denormals_on_request(monkeypatch):
    monkeypatch.setitem(configuration._values, "flush-denormals", False)
    op, u = _decay("Keep")
    assert "sg_flush_denormals" not in op.ccode
    op.apply(time_M=0)
    expected = TINY * np.float32(1e-3)
    assert expected > 0 and np.allclose(u.data[1], expected, rtol=1e-6, atol=0)
