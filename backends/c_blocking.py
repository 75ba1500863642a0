"""Cache blocking of the C backend's 3D loop nests: the two outer loops walk blocks of
(x, y) points, the threads take blocks in turn, and each block sweeps the contiguous z rows.

A so 8 star stencil reads nine x-planes around each point; unblocked, a thread's share of
planes no longer fits its core's cache once a plane is large (256^2 points: 256 KB), so each
plane is read from memory about once per neighbour. A block of a few rows keeps the nine
planes' rows in cache. The block is chosen at run time from ``BLOCKS`` by the tuning
argument, the same way the CUDA backend's launch shapes are (and autotuned the same way).
"""
from __future__ import annotations

import cgen as c

from . import zero_box
from .cprinter import tuned_choice

#: (x, y) points of a block; 0 means the whole extent (the first entry is no blocking: one
#: x-plane a block, the threads taking planes in turn)
BLOCKS = ((1, 0), (4, 16), (8, 8), (8, 16), (16, 16), (8, 32), (16, 32), (32, 32))
#: the block of a nest without a tuned one: 16x32 for a nest reading and writing at most
#: LIGHT_ROWS_MAX rows a point (a so 8 acoustic kernel: 6.4 -> 6.9-7.5 GPts/s on a 16-core
#: Xeon), 8x16 for heavier ones (SA-TTI's, 10-14 rows: 0.70-0.74 against 0.63-0.70)
DEFAULT, DEFAULT_LIGHT, LIGHT_ROWS_MAX = 3, 6, 5


def table() -> str:
    rows = ", ".join(f"{{{bx}, {by}}}" for bx, by in BLOCKS)
    return (f"/* cache blocks of the 3D nests: (x, y) points, 0 the whole extent */\n"
            f"static const long sg_blocks3[{len(BLOCKS)}][2] = {{{rows}}};")


def describe(block) -> str:
    bx, by = block
    if not by:
        return f"{bx} x-plane{'s' if bx > 1 else ''} a block"
    return f"blocks of {bx}x{by} (x, y) points"


def default_choice(rows) -> int:
    """The block of a nest read through ``rows`` (``c_rows.RowPointers``; None: unknown)
    when none is tuned."""
    return DEFAULT_LIGHT if rows is not None and len(rows.rows) <= LIGHT_ROWS_MAX else DEFAULT


def block_loops(backend, k, xr, yr, printed) -> c.For:
    """Kernel ``k``'s loops over x in ``xr``, y in ``yr`` (C text, inclusive) and its whole z
    range; ``printed``: its body and row pointers (``nest_body``), declared before the SIMD
    loop."""
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
    return c.For(f"{idx} {x} = {xr[0]}", f"{x} <= {xr[1]}", f"{x} += 1",
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


def blocks(backend, k, head, body) -> c.Block:
    """``head`` (which sets sg_bx, sg_by), then the threads taking the blocks of ``k``'s
    (x, y) range in turn, each running ``body`` on its block [sg_x0..sg_x1]x[sg_y0..sg_y1]."""
    (xs, xe), (ys, ye) = backend.bounds(k, 0), backend.bounds(k, 1)
    idx = backend.index
    block = c.Block([
        c.Initializer(c.Value(f"const {idx}", "sg_x1"),
                      f"sg_x0 + sg_bx - 1 < {xe} ? sg_x0 + sg_bx - 1 : {xe}"),
        c.Initializer(c.Value(f"const {idx}", "sg_y1"),
                      f"sg_y0 + sg_by - 1 < {ye} ? sg_y0 + sg_by - 1 : {ye}"),
        *body])
    return c.Block(head + [
        c.Pragma("omp parallel for collapse(2) schedule(dynamic, 1)"),
        c.For(f"{idx} sg_x0 = {xs}", f"sg_x0 <= {xe}", "sg_x0 += sg_bx",
              c.For(f"{idx} sg_y0 = {ys}", f"sg_y0 <= {ye}", "sg_y0 += sg_by", block))])


def nest(backend, k) -> c.Block:
    """Kernel ``k``'s 3D nest blocked over its two outer loops."""
    printed = backend.nest_body(k)
    return blocks(backend, k, choice(backend, k, default_choice(printed[0])),
                  [block_loops(backend, k, ("sg_x0", "sg_x1"), ("sg_y0", "sg_y1"), printed)])
