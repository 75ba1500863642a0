"""The CUDA backend's section timers: the first launches of a section and one in
``TIMER_SAMPLE`` after them are timed by events (the others start early, ``sg_early``), and a
section's time is the timed launches' scaled to all of them (the CUDA source run by the
emulation, whose every event pair reports a set time)."""
from __future__ import annotations

import pytest

from backends.cuda.backend import EVENT_SLOTS, TIMER_SAMPLE
from stencilgen import Eq, Grid, Operator, TimeFunction
from test_cuda import needs_nvcc


def _timed_launches(n: int) -> int:
    return sum(1 for j in range(n) if j < EVENT_SLOTS or j % TIMER_SAMPLE == 0)


@needs_nvcc
@pytest.mark.parametrize("steps", [3, EVENT_SLOTS + 1, 100])
def test_a_section_counts_every_launch_though_few_are_timed(steps, tmp_path):
    import cuda_emulation
    grid = Grid(shape=(12, 10))
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[0, 5, 5] = 1.0
    op = Operator([Eq(u.forward, u + 0.1 * u.laplace)], name="Sampled", backend="cuda")
    timed = {"ms": 1.0}
    assert cuda_emulation.run(op, str(tmp_path), timed=timed, time_M=steps - 1) == 0
    (k,) = op.program.kernels
    # each timed pair reports 1 ms: the section's time is 1 ms a launch, for every launch
    assert timed["timers"][k.section.timer] == pytest.approx(steps * 1e-3, rel=1e-12)
    assert timed["records"] == 2 * _timed_launches(steps)
    if steps > EVENT_SLOTS + TIMER_SAMPLE:   # most launches of a long run go untimed
        assert timed["records"] < 2 * steps / 4
