"""Cache blocking of the C backend's 3D loop nests: the two outer loops walk blocks of
(x, y) points, the threads take blocks in turn, and each block sweeps the contiguous z rows.

A so 8 star stencil reads nine x-planes around each point; unblocked, a thread's share of
planes no longer fits its core's cache once a plane is large (256^2 points: 256 KB), so each
plane is read from memory about once per neighbour. A block of a few rows keeps the nine
planes' rows in cache. The block is chosen at run time from ``BLOCKS`` by the tuning
argument, the same way the CUDA backend's launch shapes are (and autotuned the same way).

Some blocks also jam ``JAM`` consecutive x rows into one z loop (unroll-and-jam): the rows'
stencils then share the loads of the x-planes between them (a so 8 star reads rows x-4..x+5
for two points instead of 9 rows for each), which the plain loop reads from L2 each time.
"""
from __future__ import annotations

from dataclasses import replace

import cgen as c
import sympy

from ..common import zero_box
from ..common.cprinter import tuned_choice

#: (x, y) points of a block, 0 the whole extent (the first entry is no blocking: one x-plane
#: a block, the threads taking planes in turn), and the x rows jammed a z loop (1: none)
BLOCKS = ((1, 0, 1), (4, 16, 1), (8, 8, 1), (8, 16, 1), (16, 16, 1), (8, 32, 1), (16, 32, 1),
          (32, 32, 1), (8, 32, 2), (16, 32, 2), (32, 32, 2))
#: the x rows a jamming block computes together (2-core Xeon, so 8 acoustic 160^3: 1 row
#: 1.73-1.75 GPts/s, 2 rows 1.94-1.96, 4 rows 1.96-2.02: two, whose source gcc compiles in
#: half the time of four's), in nests of at most JAM_ROWS_MAX row pointers (SA-TTI's 10-14
#: would hold several points' arithmetic live at once, and gcc takes 2.5x longer on it)
JAM, JAM_ROWS_MAX = 2, 8
#: the block of a nest without a tuned one: 16x32 for a nest reading and writing at most
#: LIGHT_ROWS_MAX rows a point (a so 8 acoustic kernel: 6.4 -> 6.9-7.5 GPts/s on a 16-core
#: Xeon), 8x16 for heavier ones (SA-TTI's, 10-14 rows: 0.70-0.74 against 0.63-0.70)
DEFAULT, DEFAULT_LIGHT, LIGHT_ROWS_MAX = 3, 9, 5


def table() -> str:
    rows = ", ".join(f"{{{bx}, {by}, {jam}}}" for bx, by, jam in BLOCKS)
    return (f"/* cache blocks of the 3D nests: (x, y) points, 0 the whole extent, x rows "
            f"jammed */\nstatic const long sg_blocks3[{len(BLOCKS)}][3] = {{{rows}}};")


def describe(block) -> str:
    bx, by, jam = block
    if not by:
        return f"{bx} x-plane{'s' if bx > 1 else ''} a block"
    return f"blocks of {bx}x{by} (x, y) points" + (f", {jam} x rows jammed" if jam > 1 else "")


def jammable(k, rows) -> bool:
    """Whether ``k`` (read through ``rows``) computes its x rows ``JAM`` at a time in one z
    loop: a parallel nest (no point reads what another writes) without a condition or a
    split body, light enough (``JAM_ROWS_MAX``)."""
    return k.guard is None and k.split is None and not k.sequential and rows is not None \
        and len(rows.rows) <= JAM_ROWS_MAX


def jammed(k, jam: int) -> tuple:
    """``k``'s statements for ``jam`` consecutive x rows, row j's at x + j, its locals
    renamed apart (row-major: each row's statements in order, rows one after another)."""
    x = k.dims[0]
    out = []
    for j in range(jam):
        renamed = {a.lhs: a.lhs.func(f"{a.lhs.name}_{j}", **a.lhs.assumptions0)
                   for a in k.body if a.is_local} if j else {}
        subs = {x: x + j, **renamed}
        out += [replace(a, lhs=a.lhs.xreplace(renamed) if a.is_local else a.lhs.xreplace(subs),
                        rhs=sympy.sympify(a.rhs).xreplace(subs)) for a in k.body]
    return tuple(out)


def unjammed(choice: int) -> int:
    """The block of ``BLOCKS`` with ``choice``'s (x, y) points and no rows jammed."""
    bx, by, _ = BLOCKS[choice]
    return BLOCKS.index((bx, by, 1))


def default_choice(rows) -> int:
    """The block of a nest read through ``rows`` (``rows.RowPointers``; None: unknown)
    when none is tuned."""
    return DEFAULT_LIGHT if rows is not None and len(rows.rows) <= LIGHT_ROWS_MAX else DEFAULT


def block_loops(backend, k, xr, yr, printed, pick: int | None = None) -> c.Statement:
    """Kernel ``k``'s loops over x in ``xr``, y in ``yr`` (C text, inclusive) and its whole z
    range; ``printed``: its body and row pointers (``nest_body``), declared before the SIMD
    loop. Where ``k`` is ``jammable``, a block whose entry says so runs its x rows ``JAM`` at
    a time (the rows left one at a time); ``pick``: the block where it is known here (inside
    time tiles), whose loops alone are printed."""
    if not jammable(k, printed[0]) or (pick is not None and BLOCKS[pick][2] == 1):
        return _rows_loops(backend, k, xr, yr, printed, 1)
    x = k.dims[0].name
    jammed = _rows_loops(backend, k, (None, f"{xr[1]} - {JAM - 1}"), yr,
                         backend.nest_body(k, JAM), JAM, start=False)
    return c.Block([   # the rows the jammed loop leaves, or all, one at a time
        c.Initializer(c.Value(backend.index, x), xr[0]),
        jammed if pick is not None else c.If("sg_blocks3[sg_s][2] > 1", jammed),
        _rows_loops(backend, k, (None, xr[1]), yr, printed, 1, start=False)])


def _rows_loops(backend, k, xr, yr, printed, step, start=True) -> c.For:
    """The x, y and z loops of ``k`` on its block, x advancing ``step`` rows (``start``:
    x declared and set to ``xr[0]`` here; else the running x, set where ``xr[0]`` is given)."""
    rows, body, split = printed
    (zs, ze), idx = backend.bounds(k, 2), backend.index
    x, y, z = (d.name for d in k.dims)
    if split is not None:   # the row cut at the zero box
        inner = c.Block(zero_box.rows(k, idx, z, zs, ze, body, split, [c.Pragma("omp simd")]))
    else:
        inner = c.Module([c.Pragma("omp simd"),
                          c.For(f"{idx} {z} = {zs}", f"{z} <= {ze}", f"{z} += 1", body)])
    if rows is not None:
        inner = c.Block(rows.declarations() + [inner])
    init = f"{idx} {x} = {xr[0]}" if start else (f"{x} = {xr[0]}" if xr[0] is not None else "")
    return c.For(init, f"{x} <= {xr[1]}", f"{x} += {step}",
                 c.For(f"{idx} {y} = {yr[0]}", f"{y} <= {yr[1]}", f"{y} += 1", inner))


def choice(backend, k, default) -> list:
    """sg_s, sg_bx, sg_by: the block the tuning argument (else ``default``) gives ``k``."""
    (ys, ye) = backend.bounds(k, 1)
    # inside time tiles the nest's tuning entry picks the tiles: its block is the default
    pick = default if backend.tile_ranges is not None else \
        tuned_choice(backend.program.tuning, k.section.timer, len(BLOCKS), default)
    return [c.Initializer(c.Value("const long", "sg_s"), pick),
            c.Initializer(c.Value("const long", "sg_bx"), "sg_blocks3[sg_s][0]"),
            c.Initializer(c.Value("const long", "sg_by"),
                          f"sg_blocks3[sg_s][1] ? sg_blocks3[sg_s][1] : {ye} - ({ys}) + 1")]


def strips(backend, k, default) -> list:
    """sg_s, sg_bx, sg_by inside a time tile of x alone: block ``default``'s rows jammed, one
    block along the tile's x range and the y range cut in a strip a thread, which a static
    schedule gives the same thread every step of the tile, so the strip's rows stay in its
    core's L2 between the steps (blocks went to whichever thread was free. 160^3, 48 steps,
    both in one run: on 2 cores every tile size 3-25 % faster; on 16 the small tiles 1.8-2.5x,
    the best sizes level; docs/performance-log.md, sixteenth session)."""
    (xs, xe), (ys, ye) = backend.bounds(k, 0), backend.bounds(k, 1)
    return [c.Initializer(c.Value("const long", "sg_s"), default),
            c.Initializer(c.Value("const long", "sg_bx"), f"{xe} - ({xs}) + 1"),
            c.Initializer(c.Value("const long", "sg_by"),
                          f"({ye} - ({ys}) + omp_get_max_threads()) / omp_get_max_threads()")]


def blocks(backend, k, head, body, schedule="dynamic, 1") -> c.Block:
    """``head`` (which sets sg_bx, sg_by), then the threads taking the blocks of ``k``'s
    (x, y) range in turn (``schedule``), each running ``body`` on its block
    [sg_x0..sg_x1]x[sg_y0..sg_y1]."""
    (xs, xe), (ys, ye) = backend.bounds(k, 0), backend.bounds(k, 1)
    idx = backend.index
    block = c.Block([
        c.Initializer(c.Value(f"const {idx}", "sg_x1"),
                      f"sg_x0 + sg_bx - 1 < {xe} ? sg_x0 + sg_bx - 1 : {xe}"),
        c.Initializer(c.Value(f"const {idx}", "sg_y1"),
                      f"sg_y0 + sg_by - 1 < {ye} ? sg_y0 + sg_by - 1 : {ye}"),
        *body])
    return c.Block(head + [
        c.Pragma(f"omp parallel for collapse(2) schedule({schedule})"),
        c.For(f"{idx} sg_x0 = {xs}", f"sg_x0 <= {xe}", "sg_x0 += sg_bx",
              c.For(f"{idx} sg_y0 = {ys}", f"sg_y0 <= {ye}", "sg_y0 += sg_by", block))])


def nest(backend, k) -> c.Block:
    """Kernel ``k``'s 3D nest blocked over its two outer loops (inside a time tile of x
    alone, in ``strips`` that each thread keeps)."""
    printed = backend.nest_body(k)
    default = default_choice(printed[0])
    tiled = backend.tile_ranges is not None
    loops = [block_loops(backend, k, ("sg_x0", "sg_x1"), ("sg_y0", "sg_y1"), printed,
                         default if tiled else None)]
    if tiled:
        return blocks(backend, k, strips(backend, k, default), loops, "static")
    return blocks(backend, k, choice(backend, k, default), loops)
