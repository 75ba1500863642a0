"""The fusion pass (stencilgen/ir/fusion.py): which nests it fuses, what it keeps where, and the
reasons it gives when it leaves two nests apart. Code generation only: no compiler runs."""
from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest

from backends.cuda.backend import CudaBackend
from stencilgen import Eq, Function, Grid, TimeFunction, configuration, solve, switchconfig
from stencilgen.compiler.pipeline import compile_program
from stencilgen.errors import ConfigurationError
from stencilgen.ir.fusion import Limits, _pair_halo, fuse, producer_threads, shared_bytes

CUDA = Limits(**CudaBackend.FUSION)   # two points a thread along the innermost in 3D
SINGLE = replace(CUDA, pair=1)        # one: the geometry of most tests below
PAIRED = replace(CUDA, sm_shared_bytes=0)   # two even where the rings hold one block an SM


def _variable_density(shape=(24, 20, 28), so=8, dtype=np.float32):
    """m p_tt = sum over axes of (b p_d(x0=d+h/2))_d(x0=d-h/2): three flux temporaries."""
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=dtype)
    p = TimeFunction(name="p", grid=grid, time_order=2, space_order=so)
    m = Function(name="m", grid=grid, space_order=so)
    b = Function(name="b", grid=grid, space_order=so)
    div = 0
    for d, name in zip(grid.dimensions, ("dx", "dy", "dz")[:len(shape)]):
        div += getattr(b * getattr(p, name)(x0=d + d.spacing / 2), name)(x0=d - d.spacing / 2)
    return [Eq(p.forward, solve(m * p.dt2 - div, p.forward))]


def _sa_tti(shape=(20, 18, 22)):
    from stencilgen.seismic.tti import sa_tti_equations, tti_medium
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    medium = tti_medium(grid, 8)
    P, M = (TimeFunction(name=n, grid=grid, time_order=2, space_order=8) for n in "PM")
    return sa_tti_equations(P, M, medium)


def _program(eqs, limits=SINGLE):
    prog, _ = compile_program(eqs, "Fuse", narrow_index=True, flops_per_byte=14, fusion=limits)
    return prog


def test_sa_tti_fuses_into_one_time_step_nest_with_the_fluxes_on_chip():
    unfused = _program(_sa_tti(), None)
    assert len(unfused.steps) == 2
    temps = set(unfused.steps[0].writes)
    assert len(temps) == 6
    prog = _program(_sa_tti())
    assert len(prog.steps) == 1
    k = prog.steps[0]
    f = k.fusion
    assert f is not None and f.producer.writes.keys() == temps
    assert not temps & {a.name for a in prog.arrays}   # no flux array in global memory
    # so 8: the divergence reads each flux at -4..+3 along its own axis, so the producer
    # runs 3 planes ahead; the x-fluxes queue 8 planes (private rings), the others sit in
    # shared rings
    assert f.lag == 3
    places = {t.name: t.place for t in f.onchip}
    queued = [t for t in f.onchip if t.place == "queue"]
    assert len(queued) == 2 and all(t.reach == (-4, 3) and t.depth == 8 for t in queued)
    shared = [t for t in f.onchip if t.place == "shared"]
    assert len(shared) == 4 and all(t.depth == 5 and t.reach == (0, 0) for t in shared)
    assert sorted(t.halo for t in shared) == [((0, 0), (4, 3))] * 2 + [((4, 3), (0, 0))] * 2
    assert sorted(places.values()) == ["queue"] * 2 + ["shared"] * 4
    # P and M (time slot t0) staged: read at -3..+4 along every axis, and the halo parts
    # (y- and z-fluxes on the tile's halo) reach 7 points beyond the tile
    assert sorted(s.name for s in f.staged) == ["M", "P"]
    for s in f.staged:
        assert s.reach == (-3, 4) and s.reads == ((-3, 4), (-3, 4))
        assert s.halo == ((7, 7), (7, 7))
    # one halo part per axis, computing only the two fluxes read along it
    assert sorted(len(p.temps) for p in f.parts) == [2, 2]
    assert all(len(p.body) < len(f.producer.body) for p in f.parts)
    # the fused nest's compulsory bytes leave out the six fluxes (written and read: 48) and
    # count P and M at t0 once (both nests read them: 8)
    assert k.bytes == sum(s.bytes for s in unfused.steps) - 2 * 4 * 6 - 2 * 4 == 60
    assert k.flops == sum(s.flops for s in unfused.steps)


def test_shared_memory_per_tile_counts_every_ring():
    f = _program(_sa_tti()).steps[0].fusion
    for tile, nbytes in zip(f.tiles, f.shared):
        ty, tz = tile
        staged = 2 * 9 * (ty + 14) * (tz + 14)   # a ring of 8 + 1 planes each
        rings = 2 * 5 * (ty + 7) * tz + 2 * 5 * ty * (tz + 7)   # 4 planes read, 1 produced
        private = 2 * 8 * ty * tz                # the x-fluxes, 8 slots a tile point
        assert nbytes == 4 * (staged + rings + private) == \
            shared_bytes(tile, f.onchip, f.staged, 4)
    assert f.tiles == CUDA.tiles[2]
    # the 16x32 tile recomputes 7 halo rows of y-fluxes and 7 columns of z-fluxes
    assert 1.3 < f.recompute[0] < 1.7


def _acoustic(shape=(20, 18, 22)):
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=8)
    return [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]


def test_a_register_queue_keeps_two_planes_of_each_staged_ring():
    """With ``Limits.queue`` a staged nest's reads along x come from the thread's column
    (nine registers: offsets -4..4) and its shared ring holds the plane read across and the
    one stored beside it, 2 planes instead of 10; a fusion of temporaries (SA-TTI) keeps its
    rings."""
    ringed = _program(_acoustic(), replace(SINGLE, queue=False)).steps[0].fusion
    queued = _program(_acoustic(), replace(SINGLE, queue=True)).steps[0].fusion
    assert [(s.name, s.ring, s.queue) for s in ringed.staged] == [("u", 10, 0)]
    assert [(s.name, s.ring, s.queue, s.queued) for s in queued.staged] == [("u", 2, 9, True)]
    for tile, before, after in zip(queued.tiles, ringed.shared, queued.shared):
        ty, tz = tile
        assert before - after == 4 * (10 - 2) * (ty + 8) * (tz + 8)
    tti = _program(_sa_tti(), replace(SINGLE, queue=True)).steps[0].fusion
    assert [(s.ring, s.queued) for s in tti.staged] == [(9, False)] * 2
    # a column read only behind the point still queues the next plane (stored a step ahead)
    behind = replace(queued.staged[0], reach=(-4, 0))
    assert behind.queue == 6 and behind.ring == 2 and behind.depth == 5


def test_the_register_queue_setting_reaches_the_limits():
    from stencilgen.platform import select
    assert configuration["register-queue"] == "auto"
    assert select("cuda").fusion.queue is True   # auto: CUDA takes it
    with switchconfig(register_queue="off"):
        assert select("cuda").fusion.queue is False
    with pytest.raises(ConfigurationError, match="register-queue"):
        configuration["register-queue"] = "sometimes"


def test_variable_density_fuses_in_3d_and_2d():
    prog = _program(_variable_density())
    assert len(prog.steps) == 1 and prog.steps[0].fusion.lag == 3
    prog = _program(_variable_density((30, 26)))
    f = prog.steps[0].fusion
    assert [t.place for t in f.onchip] == ["queue", "shared"]


@switchconfig(staging=False)   # the unstaged kernel's code (staged: tests/test_staging.py)
def test_tiles_that_do_not_fit_are_dropped_and_none_fitting_refuses(caplog):
    eqs = _sa_tti()
    f = _program(eqs).steps[0].fusion
    small = Limits(shared_bytes=min(f.shared), tiles=CUDA.tiles)
    g = _program(eqs, small).steps[0].fusion
    assert g.tiles == (f.tiles[f.shared.index(min(f.shared))],)
    tiny = Limits(shared_bytes=min(f.shared) - 1, tiles=CUDA.tiles)
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        prog = _program(eqs, tiny)
    assert len(prog.steps) == 2 and all(k.fusion is None for k in prog.steps)
    assert "stay apart: its shared memory" in caplog.text
    assert f"exceeds the {min(f.shared) - 1} a block may use" in caplog.text


def test_deeper_stencils_grow_the_rings_and_refuse_by_shared_memory(caplog):
    """Space order 16 reads 16 planes of P and M and keeps 16 x-flux planes: rings of 17
    staged planes and 16 private slots, 424 KB a block for the smallest tile (8x32), more than
    Hopper's 227 KiB: the nests stay apart and the log gives the figure."""
    from stencilgen.seismic.tti import sa_tti_equations, tti_medium
    grid = Grid(shape=(40, 36, 44), extent=(390.0, 350.0, 430.0), dtype=np.float32)
    P, M = (TimeFunction(name=n, grid=grid, time_order=2, space_order=16) for n in "PM")
    eqs = sa_tti_equations(P, M, tti_medium(grid, 16))
    unlimited = Limits(shared_bytes=1 << 30, tiles=CUDA.tiles)
    f = _program(eqs, unlimited).steps[0].fusion
    assert all(s.depth == 16 for s in f.staged)
    assert sorted(t.depth for t in f.onchip if t.place == "queue") == [16, 16]
    smallest = min(f.shared)
    assert smallest == shared_bytes((8, 32), f.onchip, f.staged, 4) > CUDA.shared_bytes
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        prog = _program(eqs)
    assert len(prog.steps) == 2
    assert f"its shared memory, {smallest} bytes a block for the smallest tile" in caplog.text


def test_producer_points_count_the_halo_rows_and_columns():
    """A thread a producer point: the 16x32 tile with 7 rows of y-fluxes and, on its 16 rows,
    7 columns of z-fluxes (SA-TTI so 8); too few threads a block refuses."""
    f = _program(_sa_tti()).steps[0].fusion
    assert producer_threads((16, 32), f.bands) == 23 * 32 + 16 * 7
    assert producer_threads((8, 32), f.bands) == 15 * 32 + 8 * 7
    # CUDA's blocks round the halo columns' threads up to whole warps: 112 -> 128
    g = _program(_sa_tti(), replace(SINGLE, warp=32)).steps[0].fusion
    assert g.threads[g.tiles.index((16, 32))] == 23 * 32 + 128
    limits = Limits(shared_bytes=CUDA.shared_bytes, tiles=CUDA.tiles,
                    points=15 * 32 + 8 * 7)
    assert _program(_sa_tti(), limits).steps[0].fusion.tiles == ((8, 32),)
    few = Limits(shared_bytes=CUDA.shared_bytes, tiles=CUDA.tiles, points=500)
    prog = _program(_variable_density(), few)
    assert len(prog.steps) == 2


def test_staged_reads_off_the_axes_refuse(caplog):
    """The x-derivatives of a staged input come from each thread's column, the inner ones
    from one shared plane: a read at x+1 and y+1 at once has neither."""
    prog = _program(_variable_density(), None)
    k1, k2 = prog.steps
    name = next(n for n, o in k1.reads.items() if any(any(q[1:]) for q in o))
    slot = next(iter(k1.reads[name]))[0]
    k1r = replace(k1, reads=dict(k1.reads, **{name: set(k1.reads[name]) | {(slot, 1, 1, 0)}}))
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        out = fuse(replace(prog, steps=(k1r, k2)), CUDA)
    assert len(out.steps) == 2
    assert "off the axes (along x and an inner dimension at once)" in caplog.text


def test_a_temporary_read_off_the_inner_axes_refuses(caplog):
    """Its halo would have corners, which no thread of the fused layout owns."""
    prog = _program(_variable_density(), None)
    k1, k2 = prog.steps
    temp = next(t for t in sorted(k1.writes) if any(o[2] for o in k2.reads[t]))
    k2r = replace(k2, reads=dict(k2.reads, **{temp: set(k2.reads[temp]) | {(0, 1, 1)}}))
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        out = fuse(replace(prog, steps=(k1, k2r)), CUDA)
    assert len(out.steps) == 2
    assert f"{temp} would be read across two inner dimensions" in caplog.text


def test_a_temporary_read_along_both_inner_axes_runs_on_a_cross():
    """Read along y and along z (never both at once, a star): its producer runs on the halo
    rows and the halo columns, no corners (a two-step pass's next level)."""
    prog = _program(_variable_density(), None)
    k1, k2 = prog.steps
    temp = next(t for t in sorted(k1.writes) if any(o[2] for o in k2.reads[t]))
    k2r = replace(k2, reads=dict(k2.reads, **{temp: set(k2.reads[temp]) | {(0, 2, 0)}}))
    out = fuse(replace(prog, steps=(k1, k2r)), SINGLE)
    (f,) = [k.fusion for k in out.steps]
    (cross,) = [p for p in f.parts if temp in p.temps]
    assert cross.halo[0] == (0, 2) and any(cross.halo[1])
    rows, cols = f.bands
    assert rows[1] >= 2 and cols == tuple(max(p.halo[1][i] for p in f.parts) for i in (0, 1))
    # the producer's statements of the cross part on its rows and columns, no corners
    ty, tz = f.tiles[0]
    extra = sum((sum(p.halo[0]) * tz + sum(p.halo[1]) * ty) * len(p.body) for p in f.parts)
    assert f.recompute[0] == pytest.approx(1 + extra / (ty * tz * len(f.producer.body)))


def test_no_tiles_for_the_dimension_count_refuses(caplog):
    limits = Limits(shared_bytes=CUDA.shared_bytes, tiles={2: ((16, 32),)})
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        prog = _program(_variable_density((30, 26)), limits)
    assert len(prog.steps) == 2
    assert "no tiles for 2-dimensional nests" in caplog.text


def test_a_split_grid_is_not_fused(caplog):
    prog = _program(_variable_density(), None)
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        same = fuse(prog, CUDA, split=True)
    assert same is prog
    assert "stay apart: the grid is split over MPI ranks" in caplog.text


def test_a_temporary_read_by_another_nest_is_not_fused(caplog):
    """A third nest reading the fluxes: fusing would drop arrays it needs."""
    prog = _program(_variable_density(), None)
    k1, k2 = prog.steps
    third = replace(k2, name="again")
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        out = fuse(replace(prog, steps=(k1, k2, third)), CUDA)
    assert [k.fusion for k in out.steps] == [None] * 3
    assert f"stay apart: another nest reads a temporary of {k1.name}" in caplog.text
    assert out.arrays == prog.arrays


def test_a_producer_reading_what_the_consumer_writes_is_not_fused(caplog):
    """The consumer writing the slot the producer reads would change it under the producer,
    which runs planes ahead in the fused nest."""
    prog = _program(_variable_density(), None)
    k1, k2 = prog.steps
    written = next(iter(k2.writes))
    k1r = replace(k1, reads=dict(k1.reads, **{written: set(k2.writes[written])}))
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        out = fuse(replace(prog, steps=(k1r, k2)), CUDA)
    assert len(out.steps) == 2
    assert f"{k2.name} writes {written}, which {k1.name} reads" in caplog.text


@switchconfig(staging=False)   # the unstaged kernel's code (staged: tests/test_staging.py)
def test_programs_without_the_pattern_compile_as_before():
    grid = Grid(shape=(16, 18, 20), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=8)
    eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]
    assert _program(eqs) == _program(eqs, None)


def test_the_setting_turns_fusion_on_for_cuda_only():
    from stencilgen import Operator
    saved = configuration["fusion"]
    try:
        configuration["fusion"] = True
        op = Operator(_variable_density(), backend="cuda", name="FusedOn")
        assert len(op.program.steps) == 1 and op.program.steps[0].fusion is not None
        assert "extern __shared__" in op.ccode and op.ccode.count("__syncthreads()") == 2
        op_c = Operator(_variable_density(), backend="c", name="FusedC")
        assert len(op_c.program.steps) == 2
        configuration["fusion"] = False
        op = Operator(_variable_density(), backend="cuda", name="FusedOff")
        assert len(op.program.steps) == 2 and "__syncthreads" not in op.ccode
    finally:
        configuration["fusion"] = saved


@pytest.mark.parametrize("tile", [(16, 32), (12, 32), (8, 32)])
def test_recompute_counts_the_halo_parts_statements(tile):
    """Producer statements a point: the tile's, plus each halo part's on its rows (y) or
    columns (z) of 7 points beyond the tile."""
    f = _program(_sa_tti()).steps[0].fusion
    ty, tz = tile
    extra = {((4, 3), (0, 0)): 7 * tz, ((0, 0), (4, 3)): 7 * ty}
    statements = sum(extra[p.halo] * len(p.body) for p in f.parts)
    expected = 1 + statements / (ty * tz * len(f.producer.body))
    assert f.recompute[f.tiles.index(tile)] == pytest.approx(expected, rel=1e-12)
    assert f.recompute[f.tiles.index((8, 32))] > f.recompute[f.tiles.index((16, 32))]


def test_pairs_widen_the_innermost_halos_to_aligned_pairs():
    """Two points a thread along z (CUDA's limits): the z-fluxes' ring holds the columns the
    tile's pairs touch (reads at -4..+3, an odd offset reading the two pairs around it:
    (4, 4)); P and M hold those the producer's pairs over that band touch (reads at -3..+4:
    (8, 8)); nothing changes along y. Every ring row has an even length, so every pair is an
    aligned 8-byte access."""
    f = _program(_sa_tti(), PAIRED).steps[0].fusion
    assert f.pair == 2
    shared = sorted(t.halo for t in f.onchip if t.place == "shared")
    assert shared == [((0, 0), (4, 4))] * 2 + [((4, 3), (0, 0))] * 2
    for s in f.staged:
        assert s.halo == ((7, 7), (8, 8)) and s.reads == ((-3, 4), (-3, 4))
    assert f.bands == ((4, 3), (4, 4))
    for tile, nbytes in zip(f.tiles, f.shared):
        ty, tz = tile
        staged = 2 * 9 * (ty + 14) * (tz + 16)
        rings = 2 * 5 * (ty + 7) * tz + 2 * 5 * ty * (tz + 8)
        private = 2 * 8 * ty * tz
        assert nbytes == 4 * (staged + rings + private)
    # a thread a pair: 23 rows of 16 pairs, and on the tile's 16 rows 4 pairs of columns
    assert producer_threads((16, 32), f.bands, f.pair) == 23 * 16 + 16 * 4
    assert f.threads[f.tiles.index((16, 32))] == 23 * 16 + 64   # whole warps already


def test_pair_halo_counts_the_pairs_reads_touch():
    """Pairs start at even columns 0..T-2 (plus ``around`` beyond); a read at an even offset
    is one pair, at an odd one the two around it; the halo is rounded up to even."""
    assert _pair_halo((0, 0), (-4, 2)) == (4, 2)
    assert _pair_halo((0, 0), (-3, 3)) == (4, 4)
    assert _pair_halo((4, 4), (-3, 4)) == (8, 8)
    assert _pair_halo((0, 0), (-1, 1)) == (2, 2)
    assert _pair_halo((0, 0), (0, 0)) == (0, 0)


def test_pairs_only_where_the_pair_type_computes_everything():
    """One point a thread in 2D, in float64, and where a statement uses what the pair type
    lacks (here an arctangent)."""
    import sympy
    assert _program(_variable_density(), CUDA).steps[0].fusion.pair == 2
    assert _program(_variable_density((30, 26)), CUDA).steps[0].fusion.pair == 1
    assert _program(_variable_density(dtype=np.float64), CUDA).steps[0].fusion.pair == 1
    prog = _program(_variable_density(), None)
    k1, k2 = prog.steps
    i = next(i for i, a in enumerate(k1.body) if not a.is_local)
    body = k1.body[:i] + (replace(k1.body[i], rhs=sympy.atan(k1.body[i].rhs)),) + k1.body[i + 1:]
    out = fuse(replace(prog, steps=(replace(k1, body=body), k2)), CUDA)
    assert len(out.steps) == 1 and out.steps[0].fusion.pair == 1


def test_a_point_a_thread_where_paired_rings_hold_one_block_an_sm():
    """Two points a thread only where two blocks of the favoured tile fit an SM's shared
    memory (CUDA's 228 KiB, 1 KiB kept a block): SA-TTI's paired rings (187 KiB at 16x32)
    hold one, so it runs a point a thread, twice the warps in the one block; the
    variable-density program's (93 KiB) leave room for two and keep pairs. The bound is
    exact: a byte less and pairs go."""
    from stencilgen.ir.fusion import _blocks_fit
    paired = _program(_sa_tti(), PAIRED).steps[0].fusion
    tti = _program(_sa_tti(), CUDA).steps[0].fusion
    assert paired.pair == 2 and tti.pair == 1
    assert 2 * (paired.shared[0] + CUDA.block_reserve) > CUDA.sm_shared_bytes
    assert tti.threads[0] == 2 * paired.threads[0] and tti.threads[0] <= CUDA.points
    assert tti.tiles == paired.tiles
    vd = _program(_variable_density(), CUDA).steps[0].fusion
    assert vd.pair == 2 and _blocks_fit(vd.shared[0], 2, CUDA)
    exact = replace(CUDA, sm_shared_bytes=2 * (vd.shared[0] + CUDA.block_reserve))
    assert _program(_variable_density(), exact).steps[0].fusion.pair == 2
    short = replace(exact, sm_shared_bytes=exact.sm_shared_bytes - 1)
    assert _program(_variable_density(), short).steps[0].fusion.pair == 1
    assert _blocks_fit(1 << 40, 2, PAIRED)   # unknown capacity: pairs as before
    # a point a thread only where the favoured tile's threads still fit a block (864 at
    # 16x32): else pairs, the tile kept (the acoustic's two-step passes at 32x32)
    few = replace(CUDA, points=tti.threads[0] - 1)
    kept = _program(_sa_tti(), few).steps[0].fusion
    assert kept.pair == 2 and kept.tiles[0] == (16, 32)


def test_interleaving_pairs_rings_of_one_geometry_where_asked():
    """Interleaved rings (``Limits.interleave``): two points a thread only; P with M, and
    each pair of fluxes read along one axis (x: the private queues; y; z); asked by no target
    today (the SA-TTI kernel spilled at 128 registers), so off by default."""
    from backends.cuda.fused_nests import interleaved
    assert not _program(_sa_tti(), PAIRED).steps[0].fusion.interleave
    f = _program(_sa_tti(), replace(PAIRED, interleave=True)).steps[0].fusion
    assert f.interleave
    mates = interleaved(f)
    groups = {}
    for ring, (size, member, first) in mates.items():
        assert size == 2
        groups.setdefault(first, {})[member] = ring
    assert sorted(sorted(g.values()) for g in groups.values()) == [
        ["sg_pr_r0", "sg_pr_r3"], ["sg_sh_r1", "sg_sh_r4"], ["sg_sh_r2", "sg_sh_r5"],
        ["sg_st_M_t0", "sg_st_P_t0"]]
    # one point a thread: nothing to interleave
    single = _program(_sa_tti(), replace(SINGLE, interleave=True)).steps[0].fusion
    assert not single.interleave and interleaved(single) == {}
