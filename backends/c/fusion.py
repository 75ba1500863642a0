"""Fused nests of the C backend: a nest that only computes temporaries (the fluxes of a
staggered or SA-TTI update) runs block by block just before the nest that reads them, its
temporaries kept in a per-thread buffer the size of a block and its halo.

Unfused, each temporary goes to memory and back: the staggered so 8 update moves 48 bytes a
point, 20 of them for the three fluxes. Fused, a block's fluxes stay in the core's cache;
the price is recomputing them on the block's halo (Devito's blocked temporaries do the same).
Inside a block the temporary's name and strides are shadowed by the buffer's, so both
nests print as they do unfused; the buffer's points the producer does not compute (outside
its range: the temporary's zero halo) are zeroed first, so results are the unfused ones bit
for bit.
"""
from __future__ import annotations

from dataclasses import replace

import cgen as c

from . import blocking

#: the block of a fused section when none is tuned: 16x32 (larger blocks recompute less of
#: the temporaries' halo)
FUSED_DEFAULT = 9

HELPER = r"""#include <stdio.h>
static char sg_error_text[256];
/* what went wrong when the entry point returned a nonzero status */
const char *stencilgen_error(void) { return sg_error_text; }
/* zero the points of a block's temporary [bx0..bx1]x[by0..by1]x[bz0..bz1] that its
   producer does not compute (outside [cx0..cx1]x[cy0..cy1]x[cz0..cz1]) */
static void sg_fuse_zero(float *t, long s0, long s1, long bx0, long bx1, long by0, long by1,
                         long bz0, long bz1, long cx0, long cx1, long cy0, long cy1,
                         long cz0, long cz1)
{
  for (long x = bx0; x <= bx1; x++)
    for (long y = by0; y <= by1; y++) {
      float *row = t + x*s0 + y*s1;
      const int all = x < cx0 || x > cx1 || y < cy0 || y > cy1;
      for (long z = bz0; z <= (all ? bz1 : cz0 - 1); z++)
        row[z] = 0.0F;
      for (long z = all ? bz1 + 1 : cz1 + 1; z <= bz1; z++)
        row[z] = 0.0F;
    }
}
"""


def pairs(backend) -> dict:
    """Producer kernel -> the consumer it fuses into: consecutive blocked steps where the
    first writes only float temporaries that only the second reads, computed apart from
    each other (``producers``), and the second writes no time slot the first reads."""
    prog, out = backend.program, {}
    steps = list(prog.steps)
    arrays = {a.name: a for a in prog.arrays}
    for k1, k2 in zip(steps, steps[1:]):
        if k1 in out.values() or not (backend.blocked(k1) and backend.blocked(k2)):
            continue
        if any(k.when is not None or k.guard is not None for k in (k1, k2)):
            continue
        temps = set(k1.writes)
        if not temps or any(not arrays[t].temporary or backend.ctypes[t] != "float"
                            for t in temps) or k1.dims != k2.dims:
            continue
        others = [k for k in prog.kernels if k is not k1 and k is not k2]
        if any(t in k.reads or t in k.writes for k in others for t in temps) \
                or temps & set(k2.writes) or not temps <= set(k2.reads):
            continue
        apart = all(_apart(arrays[a], k1.reads[a], k2.writes[a])
                    for a in set(k1.reads) & set(k2.writes))
        # a producer that only splits by repeating most of itself (SA-TTI's six fluxes
        # from shared gradients) would compute all on every halo: measured slower than
        # unfused (2-core EPYC, 160^3: 0.094 against 0.135 GPts/s)
        if apart and producers(k1, [arrays[t] for t in sorted(temps)]):
            out[k1] = k2
    return out


def _apart(array, read, written) -> bool:
    """Whether the time slots ``written`` are all other than those ``read``."""
    if array.time_size is None:
        return False
    slots_read = {off[0] for off in read}
    return all(off[0].is_Symbol and off[0] not in slots_read for off in written)


def _halo(temps) -> tuple:
    return tuple(max(t.halo[d] for t in temps) for d in range(3))


def setup(backend, fused) -> list:
    """Before the time loop: one buffer region per thread, as large as the largest fused
    section's temporaries for its block; an error status if it cannot be allocated."""
    lines = [c.Line("/* the block-local temporaries of the fused nests, one region per thread */"),
             c.Initializer(c.Value("long", "sg_fuse_each"), "0")]
    for k1, k2 in fused.items():
        temps = [backend.program.array(t) for t in sorted(k1.writes)]
        lines.append(c.Block(_geometry(backend, k1, k2, temps) + [
            c.Statement(f"if ({len(temps)}*sg_one > sg_fuse_each) sg_fuse_each = "
                        f"{len(temps)}*sg_one")]))
    lines += [
        c.Initializer(c.Value("float *", "sg_fuse"),
                      "(float *)malloc((size_t)omp_get_max_threads()*sg_fuse_each*sizeof(float))"),
        c.If("!sg_fuse", c.Block([
            c.Statement('snprintf(sg_error_text, sizeof(sg_error_text), "out of memory for the '
                        'fused nests\' block temporaries (%ld bytes a thread)", '
                        'sg_fuse_each*(long)sizeof(float))'),
            *([c.Statement("sg_restore_denormals(sg_modes)")]
              if backend.options.flush_denormals else []),
            c.Statement("return 1")]))]
    return lines


def _geometry(backend, k1, k2, temps) -> list:
    """sg_s, sg_bx, sg_by of the consumer's section; the buffer's z range (sg_bz0, sg_bz1)
    and the points of one temporary's block (sg_one)."""
    hx, hy, hz = _halo(temps)
    (zs2, ze2), (zs1, ze1) = backend.bounds(k2, 2), backend.bounds(k1, 2)
    return blocking.choice(backend, k2, FUSED_DEFAULT) + [
        c.Initializer(c.Value("const long", "sg_bz0"),
                      f"({zs2}) - {hz} < ({zs1}) ? ({zs2}) - {hz} : ({zs1})"),
        c.Initializer(c.Value("const long", "sg_bz1"),
                      f"({ze2}) + {hz} > ({ze1}) ? ({ze2}) + {hz} : ({ze1})"),
        c.Initializer(c.Value("const long", "sg_one"),
                      f"(sg_bx + {2 * hx})*(sg_by + {2 * hy})*(sg_bz1 - sg_bz0 + 1)"),
    ]


def _shift(v, h) -> str:
    return v if not h else f"{v} + {h}" if h > 0 else f"{v} - {-h}"


def _widen(v, h, limit) -> str:
    """``v`` moved by ``h`` points, clamped to the producer's range ending at ``limit``."""
    if not h:
        return v
    cmp = ">" if h < 0 else "<"
    return f"{_shift(v, h)} {cmp} ({limit}) ? {_shift(v, h)} : ({limit})"


#: a producer whose split repeats more than this share of its statements (SA-TTI's six
#: fluxes from shared gradients) is not fused
SPLIT_MAX_GROWTH = 1.5


def producers(k1, temps) -> list:
    """``k1`` split into one nest per temporary of ``temps`` (its stores and the locals they
    use), each then computed only on the halo its reader needs of it; [] where the split
    would repeat much of ``k1``."""
    local = {a.lhs: a for a in k1.body if a.is_local}
    out = []
    for t in temps:
        stores = [a for a in k1.body if not a.is_local and a.lhs.base.name == t.name]
        need, todo = set(), [s.rhs for s in stores]
        while todo:
            for sym in todo.pop().free_symbols & set(local) - need:
                need.add(sym)
                todo.append(local[sym].rhs)
        body = tuple(a for a in k1.body if (a.is_local and a.lhs in need) or a in stores)
        out.append(replace(k1, body=body, writes={t.name: k1.writes[t.name]}, split=None))
    return out if sum(len(p.body) for p in out) <= SPLIT_MAX_GROWTH * len(k1.body) else []


def nest(backend, k1, k2) -> c.Block:
    """Kernels ``k1`` (producer) and ``k2`` blocked together over ``k2``'s (x, y) range."""
    temps = [backend.program.array(t) for t in sorted(k1.writes)]
    hx, hy, _ = _halo(temps)
    (xs1, xe1), (ys1, ye1), (zs1, ze1) = (backend.bounds(k1, d) for d in range(3))
    local = [c.Initializer(c.Value("float *const", "sg_mine"),
                           "sg_fuse + omp_get_thread_num()*sg_fuse_each")]
    pick = FUSED_DEFAULT if backend.tile_ranges is not None else None   # inside time tiles
    for i, (t, part) in enumerate(zip(temps, producers(k1, temps))):
        tx, ty = t.halo[0], t.halo[1]
        ext = (_widen("sg_x0", -tx, xs1), _widen("sg_x1", tx, xe1),
               _widen("sg_y0", -ty, ys1), _widen("sg_y1", ty, ye1))
        names = [f"sg_{t.name}_{e}" for e in ("x0", "x1", "y0", "y1")]
        local += [c.Initializer(c.Value(f"const {backend.index}", n), e)
                  for n, e in zip(names, ext)]
        local += _buffer(t, i, (hx, hy), names, (zs1, ze1))
        local.append(blocking.block_loops(backend, part, names[:2], names[2:],
                                            backend.nest_body(part), pick))
    consume = blocking.block_loops(backend, k2, ("sg_x0", "sg_x1"), ("sg_y0", "sg_y1"),
                                     backend.nest_body(k2), pick)
    return blocking.blocks(backend, k2, _geometry(backend, k1, k2, temps), local + [consume])


def _buffer(t, i, halo, computed, zrange) -> list:
    """Temporary ``t`` (the ``i``-th) in this thread's buffer: its strides and origin
    shadowing the array's, and its points the producer leaves (``computed``: the names of
    its x and y range) zeroed."""
    (s0, _), (s1, _) = t.layout.strides[:2]
    tx, ty = t.halo[0], t.halo[1]
    return [
        c.Initializer(c.Value("const long", s1), "sg_bz1 - sg_bz0 + 1"),
        c.Initializer(c.Value("const long", s0), f"(sg_by + {2 * halo[1]})*{s1}"),
        c.Initializer(c.Value("float *const", t.name),
                      f"sg_mine{f' + {i}*sg_one' if i else ''} - ({_shift('sg_x0', -halo[0])})"
                      f"*{s0} - ({_shift('sg_y0', -halo[1])})*{s1} - sg_bz0"),
        c.Statement(f"sg_fuse_zero({t.name}, {s0}, {s1}, {_shift('sg_x0', -tx)}, "
                    f"{_shift('sg_x1', tx)}, {_shift('sg_y0', -ty)}, {_shift('sg_y1', ty)}, "
                    f"sg_bz0, sg_bz1, {', '.join(computed)}, {zrange[0]}, {zrange[1]})")]
