"""Time tiles by default (issue 62): the ``time-tiling`` setting is ``auto``; the autotuner
keeps a tile only where the whole loop ran faster than the untiled loop in the same trials,
by the backend's margin; a run too short to tune takes ``time_tiling.default_rule`` (the
wave-front tiles where a batch's wave-fronts keep the threads busy, else untiled), chosen in
the generated C at run time; and whatever it takes gives the untiled numbers."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from backends.c import time_tiling as c_timetile
from stencilgen import Eq, Function, Grid, Operator, TimeFunction, platform, solve, switchconfig
from stencilgen.configuration import _SETTINGS, configuration
from stencilgen.runtime import autotune

from test_time_tiling import NT, _shot_run


def test_tiles_are_offered_by_default(monkeypatch):
    monkeypatch.delenv("STENCILGEN_TIME_TILING", raising=False)
    assert _SETTINGS["time-tiling"].default() == "auto"
    assert configuration._parse("time-tiling", "32,0,16") == (32, 0, 16)   # x alone


def _fake(times):
    """A trial runner returning row ``choice[0]`` of ``times`` (per section) for the first
    section's choice, as tune's rounds give every section the same one."""
    times = np.asarray(times, dtype=float)
    return lambda choice: times[min(int(choice[0]), len(times) - 1)]


#: one section choosing tiles: choices 0, 1 the untiled loop (two cache blocks), 2, 3 tiles
LOOP = (0, 2, (0,))


def test_a_tile_slower_than_untiled_is_not_kept():
    """The default tile 3 % slower than the untiled loop (and one 3 % faster, within the 5 %
    margin): the untiled loop kept, at its faster block."""
    run = _fake([[1.00], [0.90], [0.927], [0.873]])
    best = autotune.tune(run, {0: 4}, 1, 1, {0: 0}, 0.05, LOOP)
    assert best[0] == 1
    # without the loop's reference, the fastest entry would have been kept
    assert autotune.tune(run, {0: 4}, 1, 1, {0: 0}, 0.0)[0] == 3


def test_a_tile_faster_by_more_than_the_margin_is_kept():
    run = _fake([[1.00], [0.90], [0.927], [0.81]])   # the second tile 10 % faster
    assert autotune.tune(run, {0: 4}, 1, 1, {0: 0}, 0.05, LOOP)[0] == 3


def test_the_untiled_reference_is_the_whole_loop():
    """Two nests: untiled, the first nest's section times only itself (0.3) and the second
    its own (0.6), each at the best of its blocks; tiled, the first section times the whole
    loop. A tile at 0.86 beats 0.3 but not the loop's 0.9 by 5 %: untiled kept; at 0.8 it
    does. The second nest's block is chosen among the untiled trials only (its timer reads 0
    in the tiled ones)."""
    loop = (0, 2, (0, 1))
    times = [[0.30, 0.70], [0.32, 0.60], [0.87, 0.0], [0.86, 0.0]]
    best = autotune.tune(_fake(times), {0: 4, 1: 2}, 2, 1, {0: 0, 1: 0}, 0.05, loop)
    assert list(best) == [0, 1]
    times[3][0] = 0.80
    best = autotune.tune(_fake(times), {0: 4, 1: 2}, 2, 1, {0: 0, 1: 0}, 0.05, loop)
    assert list(best) == [3, 1]


def test_a_sparse_section_counts_in_the_untiled_loop():
    """A sparse kernel of the step (no shapes of its own) runs in its own section untiled
    and inside the tiles tiled: the untiled reference counts it (0.5 + 0.4)."""
    loop = (0, 1, (0, 1))
    times = [[0.50, 0.40], [0.80, 0.0]]   # tiled 0.8: 11 % faster than the whole 0.9
    assert autotune.tune(_fake(times), {0: 2}, 2, 1, {0: 0}, 0.05, loop)[0] == 1
    times[1][0] = 0.86                    # within 5 % of it
    assert autotune.tune(_fake(times), {0: 2}, 2, 1, {0: 0}, 0.05, loop)[0] == 0


def test_the_untuned_rule_in_numbers():
    """Wave-front tiles of 32 x 32 x 16 (so 8: the boundaries move 4 a step) where a batch's
    wave-fronts keep the threads 80 % busy: 160^3 and 256^3 on 2 threads (7 x 7 tiles in 13
    wave-fronts, 28 rounds of 2: 88 %; 10 x 10: 91 %), not on 16 (24 %, 33 %) nor 4 threads
    (68 %, 76 %), nor for fewer steps than a batch, nor on a grid narrower than 3 tiles
    along x or y."""
    t = c_timetile.Tiling(c_timetile.CHOICES[2], c_timetile.DEFAULT[2], (4, 4), {}, {}, 8)
    assert t.choices[t.default] == (32, 32, 16)
    assert c_timetile.tiles_across(160, 4, 32, 16) == 7
    assert c_timetile.wavefront_rounds(7, 7, 2) == 28
    assert c_timetile.wavefront_rounds(10, 10, 16) == 19
    for n, threads, tiles in ((160, 2, True), (256, 2, True), (160, 16, False),
                              (256, 16, False), (160, 4, False), (256, 4, False),
                              (160, 1, True)):
        want = t.default if tiles else None
        assert c_timetile.untuned(t, (n, n, n), 40, threads) == want, (n, threads)
    assert c_timetile.untuned(t, (160, 160, 160), 15, 2) is None
    assert c_timetile.untuned(t, (160, 160, 160), 16, 2) == t.default
    # narrower than 3 tile widths along x or y
    assert c_timetile.untuned(t, (95, 160, 160), 40, 2) is None
    assert c_timetile.untuned(t, (160, 95, 160), 40, 1) is None
    assert c_timetile.untuned(t, (96, 96, 16), 40, 1) == t.default
    # 2D grids: the untiled loop unless tuned
    t2 = c_timetile.Tiling(c_timetile.CHOICES[1], c_timetile.DEFAULT[1], (4,), {}, {}, 1)
    assert c_timetile.untuned(t2, (4000, 4000), 400, 2) is None


def _threads() -> int:
    """The OpenMP threads a parallel region gets in this process (the generated code's
    omp_get_max_threads)."""
    return platform.openmp_threads()


@pytest.fixture(params=[None, 16], ids=["threads", "16threads"])
def threads(request):
    """This process's thread count, or 16 (omp_set_num_threads: what a parallel region the
    calling thread opens gets), put back after the test."""
    gomp = ctypes.CDLL("libgomp.so.1")
    before = gomp.omp_get_max_threads()
    if request.param is not None:
        gomp.omp_set_num_threads(request.param)
    yield gomp.omp_get_max_threads()
    gomp.omp_set_num_threads(before)


def _two_nests(shape, name):
    """The variable-density program (two nests a step: fluxes, then the update; the second
    nest's timer runs only where the loop runs untiled)."""
    g = Grid(shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    p = TimeFunction(name="p", grid=g, time_order=2, space_order=8)
    m, b = Function(name="m", grid=g, space_order=8), Function(name="b", grid=g,
                                                               space_order=8)
    m.data[:] = 1 / 1.5 ** 2
    b.data[:] = 1.0
    div = sum(getattr(b * getattr(p, f"d{n}")(x0=d + d.spacing / 2), f"d{n}")(
        x0=d - d.spacing / 2) for d, n in zip(g.dimensions, "xyz"))
    return Operator([Eq(p.forward, solve(m * p.dt2 - div, p.forward))], name=name), p


@pytest.mark.parametrize("shape, steps", [((96, 96, 8), 16), ((160, 160, 4), 15),
                                          ((160, 160, 4), 16), ((230, 95, 6), 16),
                                          ((95, 230, 6), 16), ((9, 9, 9), 20)])
def test_the_generated_rule_is_the_documented_one(shape, steps, threads):
    """An untuned run (tuning NULL) takes the tiles where ``c_timetile.untuned`` says, at
    this process's thread count and at 16: the second nest's timer reads 0 where the loop
    ran tiled (timed whole in the first's section)."""
    op, p = _two_nests(shape, "TDrule")
    em = op._emitter
    t = em.tiling()
    assert t is not None and t.untiled
    prog = op.program
    args, keep = op._arguments(time_m=1, time_M=steps, dt=0.5)
    timers = np.zeros(len(prog.kernels))
    args[prog.timers], args[prog.tuning], args[prog.checks_param] = \
        timers.ctypes.data, None, None
    assert op.cfunction(*[args[q.name] for q in prog.parameters()]) == 0
    second = next(k for k in prog.steps if k is not c_timetile.timed_nest(prog))
    tiled = c_timetile.untuned(t, shape, steps, threads) is not None
    assert (timers[second.section.timer] == 0) == tiled, (shape, steps, threads, timers)
    if threads == 16:
        assert not tiled


def test_a_default_run_gives_the_untiled_numbers():
    """The acoustic with its sponge, a source and 100 receivers, no setting forced (its
    extents chosen so that on 1 or 2 threads the rule takes the wave-front tiles): the
    wavefield bit for bit, the records within 1e-6 of their largest, as untiled."""
    build, run = _shot_run((200, 200, 8), so=8, nrec=100)
    op, u, shot = build("TDdefault")
    t = op._emitter.tiling()
    assert t is not None and t.untiled
    extents = [n + 8 for n in (200, 200, 8)]
    if _threads() <= 2:
        assert c_timetile.untuned(t, extents, NT, _threads()) == t.default
    u1, r1 = run(op, u, shot)
    with switchconfig(time_tiling="0"):
        u0, r0 = run(*build("TDuntiled"))
    assert np.abs(u0).max() > 0 and np.array_equal(u0, u1)
    assert np.abs(r0 - r1).max() <= 1e-6 * np.abs(r0).max()


def test_probes_remember_the_fastest_once_each_ran(tmp_path):
    """``autotune.next_probe`` / ``record_probe``: each probe runs once, in order; once every
    one has a time, the fastest's choice is remembered for the size."""
    memory = autotune.Remembered(tmp_path)
    probes = [[5, 0], [0, 0], [9, 0]]
    assert autotune.next_probe(memory, "k", 3) == 0
    assert autotune.record_probe(memory, "k", 0, 2e-3, probes) is None
    assert autotune.next_probe(memory, "k", 3) == 1
    assert autotune.record_probe(memory, "k", 1, 3e-3, probes) is None
    assert memory.get("k") is None
    assert autotune.record_probe(memory, "k", 2, 1.5e-3, probes) == 2
    assert list(memory.get("k")) == [9, 0] and autotune.next_probe(memory, "k", 3) is None


def test_a_short_run_times_its_probes_over_its_applies(caplog):
    """A 3D acoustic too short to tune (8 steps of 40^3): its first apply runs the untuned
    rule, the next each run one probe (the untiled loop with its default block, jamming x
    rows, the same block without, the tiles of x alone: the wave-front tiles need 16
    steps), then the fastest is kept for the size and runs; every apply gives the untiled
    numbers."""
    import logging
    shape, nt = (40, 40, 40), 8

    def build(name):
        g = Grid(shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
        u = TimeFunction(name="u", grid=g, time_order=2, space_order=4)
        m = Function(name="m", grid=g, space_order=4)
        m.data[:] = 1 / 1.5 ** 2
        return Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))],
                        name=name, backend="c"), u

    def run(op, u):
        u.data[:] = 0
        u.data[:, 20, 20, 20] = 1.0
        op.apply(time_M=nt - 1, dt=1.0)
        return np.array(u.data)

    with switchconfig(time_tiling=0):
        want = run(*build("ProbeRef"))
    op, u = build("Probe")
    args, _ = op._arguments(time_M=nt - 1, dt=1.0)
    probes = op._emitter.probes(args, 16)
    offered = next(iter(op._emitter.launch_shapes().values()))
    described = [offered[p[0]] for p in probes]
    assert len(probes) == 3 and described[0].startswith("no time tiles") and \
        described[0].endswith("x rows jammed") and \
        described[1] == described[0].replace(", 2 x rows jammed", "") and \
        described[2] == "time tiles 64 points, 4 steps, x alone, the threads sharing each nest"
    memory = autotune.Remembered(op.source_path.parent)
    key = autotune.size_key(op.program, args)
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        for i in range(5):
            got = run(op, u)
            assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max(), i
            found = memory.get(autotune.probe_key(key))
            assert (found is None) == (i == 0)
            if i == 1:
                assert found[0] > 0 and min(found[1:]) < 0 and memory.get(key) is None
    assert list(memory.get(key)) in [list(p) for p in probes]
    assert "kept for size" in caplog.text and "the fastest of 3 applies" in caplog.text
