"""CUDA printing of a fused nest (``stencilgen/ir/fusion``): one kernel that streams along the
outermost dimension, its producer's temporaries kept on chip, in shared memory.

A block owns a tile of the inner dimensions and a chunk of planes of the outer one. Its threads
are the points the producer runs on: the tile and the halo rows of the temporaries read across
the first inner dimension, as whole rows (warps along the innermost), then the halo columns of
those read across the innermost, after them. Each staged input lives in a shared ring of
planes over the tile and the halo its reads reach, one plane more than the reads span (so the
consumer may read it while the next plane is stored), or, queued, two planes and the thread's
column in registers (``staged_rings``, ``column_queues``); every thread stores its own point
and the points around that no thread owns load by all, in turns over that band. A temporary read only along the streamed
dimension lives in a private ring of the tile thread's column, one read across the tile in a
shared ring of planes. One barrier a plane: iteration ``sg_p`` (1) runs the consumer on the
tile's threads ``lag + 1`` planes behind, from temporaries produced in earlier iterations,
(2) stores the plane after the farthest one the producer reads of every staged input, (3)
runs the producer on every thread's point (the tile: every temporary; the halo: the
temporaries read across it) from planes stored in earlier iterations; then the barrier. A
shared temporary's ring holds one plane more than the consumer's reach for it, so the plane
produced does not land where a slower thread's consumer still reads. The plane loop is not
unrolled: a ring's slot offsets are registers rotated a step an iteration (rings of one depth
and plane size share them), and the kernel's code stays small (the unrolled register queues
of an earlier form spilled and thrashed the instruction cache: docs/performance.md, issue
47; a queued column shifts by moves). The tile is a template parameter, so every
extent and shared-memory offset is a constant.
"""
from __future__ import annotations

from . import column_queues, zero_split
from ..common.cprinter import CPrinter, ctype, tuned_choice
from .kernel_text import indent as _indent
from .ring_names import ring as _ring
from .staged_rings import StagedRings
from .launch import GRID_WAIT, early

#: chunks of the streamed dimension a launch shape may cut it in (more blocks, more warm-up)
CHUNKS = (4, 2, 1, 8)
#: the chunks of the default shape: four keep 4x the blocks of the plane grid busy
DEFAULT_CHUNKS = 4


def shapes(k) -> list[tuple[int, tuple[int, ...]]]:
    """The launch shapes of fused nest ``k``: (chunks along the streamed dimension, tile)."""
    return [(n, t) for t in k.fusion.tiles for n in CHUNKS]


def default_shape(k) -> int:
    return shapes(k).index((DEFAULT_CHUNKS, k.fusion.tiles[0]))


def describe(k, shape) -> str:
    n, tile = shape
    return f"fused, tile {'x'.join(map(str, tile))}, {n} chunk{'s' if n > 1 else ''} of " \
           f"{k.dims[0]}"


class _Context:
    """What the fused printer needs: the fusion, the loop symbols and the phase printed."""

    def __init__(self, k, real: str):
        self.dims = k.dims
        self.real = real           # the rings' element type
        self.temps = {t.name: t for t in k.fusion.onchip}
        self.staged = {(s.name, s.slot): s for s in k.fusion.staged}
        self.pair = k.fusion.pair   # points a thread along the innermost
        self.mates = interleaved(k.fusion)   # ring -> (members, member, the shared ring)
        # rings of one depth and plane turn together: one set of slot offsets for them all
        self.families: dict = {}   # (depth, place, halo) -> (index, depth, plane size)
        for st in k.fusion.staged:
            self._family((st.ring, "st", st.halo), _ring(st), f"{_ring(st)}_pl")
        for t in k.fusion.onchip:
            ring = _onchip_ring(t)
            plane = f"{ring}_pl" if t.place == "shared" else "sg_ntile"
            self._family((t.depth, t.place, t.halo if t.place == "shared" else None), ring,
                         plane)
        self.phase = "produce"     # or "consume": which plane the loop symbols stand for
        self.behind = k.fusion.lag + 1   # the consumer's plane, behind the producer's
        self.point = False         # printing the thread's own point: its global reads from
        self.loads: dict = {}      # registers loaded before the barrier, (phase, read) -> name

    def _family(self, key, ring, plane):
        key = key + (self.scale(ring),)   # interleaved rings' planes are longer: apart
        if key not in self.families:
            self.families[key] = (len(self.families), key[0], self.stride(ring, plane))

    def scale(self, ring: str) -> int:
        """Rings interleaved into ``ring``'s: a pair of each a place (``interleaved``)."""
        return self.mates[ring][0] if ring in self.mates else 1

    def stride(self, ring: str, plane: str) -> str:
        """The elements from one plane of ``ring`` to the next (``plane`` a member's)."""
        g = self.scale(ring)
        return plane if g == 1 else f"{g}*{plane}"

    def place(self, ring: str, index: str) -> str:
        """The element of ``ring`` holding point ``index`` of a member's plane (interleaved:
        pair ``index/2`` of the shared ring's, the member's half of it)."""
        g = self.scale(ring)
        return index if g == 1 else f"({g}*({index}) - {g - 1}*(({index}) & 1))"

    def slot(self, key, c: int, ring: str) -> str:
        """The offset in bytes in its ring of the plane in slot ``c`` (from the iteration's
        first): ``sg_so<family>_<c>`` hold ``((sg_t + c) mod depth)*plane*size`` for the
        iteration ``sg_t``, rotated a step at its end (a move each, where the modulo and the
        product cost every ring read several integer instructions). In bytes, block-uniform,
        a read is one shared load at [thread's cell + slot + constant] (``at``)."""
        i, depth, _ = self.families[key + (self.scale(ring),)]
        return f"sg_so{i}_{c % depth}"

    def slot_lines(self) -> tuple[list[str], list[str]]:
        """The slot offsets' declarations (before the plane loop) and their rotation (at the
        end of an iteration)."""
        decls, turn = [], []
        for i, depth, plane in self.families.values():
            decls.append("int " + ", ".join(f"sg_so{i}_{c} = {c}*{plane}*(int)sizeof({self.real})"
                                            for c in range(depth)) + ";")
            turn.append(f"{{ const int sg_r = sg_so{i}_0; "
                        + " ".join(f"sg_so{i}_{c} = sg_so{i}_{c + 1};" for c in range(depth - 1))
                        + f" sg_so{i}_{depth - 1} = sg_r; }}")
        return decls, turn

    def at(self, ring: str, slot: str, index: str) -> str:
        """A pointer to element ``index`` of the plane in ``slot`` (bytes) of ``ring``."""
        return f"(({self.real} *)((char *)({ring} + {index}) + {slot}))"

    def offsets(self, expr):
        n = len(self.dims)
        return tuple(int(i - d) for i, d in zip(expr.indices[-n:], self.dims))


def fused_printer(base, ctx):
    """A copy of printer ``base`` reading temporaries and staged values on chip."""
    class Fused(type(base)):
        # IEEE division, not sg_rcp: with it the staged acoustic's plane loop executed fewer
        # instructions but waited on its loads (an H200, one call: 149.2 against 165.2 GPts/s;
        # Nsight Compute 17.5 against 12.0 cycles an issued instruction), where the unstaged
        # nests gained 16 % (docs/performance.md, acoustic)
        reciprocal = CPrinter.reciprocal

        def _print_Indexed(self, expr):
            name = expr.base.name
            if name in ctx.temps:
                return self._temp(ctx.temps[name], ctx.offsets(expr))
            key = (name, expr.indices[0] if len(expr.indices) > len(ctx.dims) else None)
            s = ctx.staged.get(key)
            if s is not None:
                got = self._staged(s, ctx.offsets(expr))
                if got is not None:
                    return got
            if ctx.point:
                key = (ctx.phase, expr)
                if key not in ctx.loads:
                    ctx.loads[key] = f"sg_ld{len(ctx.loads)}"
                reg = ctx.loads[key]
                if not self.stored.get(name):
                    return reg
                # kept as stored, widened here: a conversion right after the load would wait
                # for it, where the loop means to hide its latency
                parts = [self.widened(name, f"{reg}_{c}") for c in range(ctx.pair)]
                return parts[0] if ctx.pair == 1 else f"sg_f2{{{parts[0]}, {parts[1]}}}"
            return super()._print_Indexed(expr)

        def _read(self, ring, slot, offs, halo):
            """The value at inner offsets ``offs`` from the thread's point in plane ``slot`` of
            ``ring``; a pair: the aligned pair at an even offset, at an odd one the middle of
            the pairs around it."""
            b, g = f"{ring}_b", ctx.scale(ring)
            if ctx.pair == 1:
                return "*" + ctx.at(ring, slot, f"{ring}_c{_moved(offs, b)}")
            whole, middle = _PAIR_READS[ctx.mates[ring][1] if g > 1 else None]
            if offs[-1] % 2:
                mid = _moved(offs[:-1] + (offs[-1] - 1,), b, g)
                return f"{middle}({ctx.at(ring, slot, f'{ring}_c{mid}')})"
            return f"{whole}({ctx.at(ring, slot, f'{ring}_c{_moved(offs, b, g)}')})"

        def _staged(self, s, offs):
            """A producer's staged read from the ring (the planes it reads, at any inner offset
            its halo holds); None for other reads (from global memory)."""
            o, inner = offs[0], offs[1:]
            if ctx.phase == "consume" or not s.reach[0] <= o <= s.reach[1]:
                return None   # the consumer's: the slot may be the one being stored into
            ring = _ring(s)
            if s.queued and not any(inner):   # along the column: from its queue
                return column_queues.register(ring, o - s.reach[0])
            # queued, the ring holds the producer's own plane alone (reads lie on the axes)
            plane = 0 if s.queued else o - s.reach[0]
            return self._read(ring, ctx.slot((s.ring, "st", s.halo), plane, ring), inner,
                              s.halo)

        def _temp(self, t, offs):
            o = offs[0] - ctx.behind    # the plane read, from the producer's
            ring = _onchip_ring(t)
            if t.place == "queue":
                slot = ctx.slot((t.depth, t.place, None), o + t.depth - 1, ring)
                at = ctx.at(ring, slot, ctx.place(ring, "sg_ti"))
                if ctx.pair == 1:
                    return f"*{at}"
                return f"{_PAIR_READS[ctx.mates[ring][1] if ring in ctx.mates else None][0]}({at})"
            return self._read(ring, ctx.slot((t.depth, t.place, t.halo), o, ring), offs[1:],
                              t.halo)

    p = Fused.__new__(Fused)
    p.__dict__.update(base.__dict__)
    return p


def _moved(offs, row, scale: int = 1) -> str:
    """`` + <constant>``: the index in a plane of rows ``row`` of the point at inner offsets
    ``offs`` from the thread's own cell (``<ring>_c``, found once a thread: a read then costs
    the slot's add, its offset an immediate of the load); empty at the cell itself. ``scale``:
    rings interleaved in pairs (the point at an even offset)."""
    terms = [f"{q * scale}*{row}" if j < len(offs) - 1 else str(q * scale)
             for j, q in enumerate(offs) if q]
    return f" + ({' + '.join(terms)})" if terms else ""


def _onchip_ring(t) -> str:
    """The ring of on-chip temporary ``t``: shared planes, or a private queue."""
    return f"sg_sh_{t.name}" if t.place == "shared" else f"sg_pr_{t.name}"


#: the reads of a pair (whole, across two) by member of interleaved rings (None: a ring alone)
_PAIR_READS = {None: ("sg_pair_ld", "sg_pair_mid"), 0: ("sg_quad_lo", "sg_quad_mid_lo"),
               1: ("sg_quad_hi", "sg_quad_mid_hi")}


def interleaved(f) -> dict:
    """Rings of fused nest ``f`` interleaved two by two, a pair of each at a time (SA-TTI's P
    and M, and their fluxes): one 128-bit shared load then reads both members' pairs
    (docs/performance.md, issue 63). Exactly two rings of one geometry (a staged group,
    ``_groups``, is then interleaved alike throughout), in 3D nests computing two points a
    thread, where the target asks for it (``Fusion.interleave``); ring -> (2, member, the
    first member's ring)."""
    if f.pair != 2 or not f.interleave:
        return {}
    groups: dict = {}
    for s in f.staged:
        groups.setdefault(("st", s.halo, s.reads, s.reach), []).append(_ring(s))
    for t in f.onchip:
        groups.setdefault((t.place, t.depth, t.halo), []).append(_onchip_ring(t))
    out = {}
    for rings in groups.values():
        if len(rings) == 2:
            out.update({rings[0]: (2, 0, rings[0]), rings[1]: (2, 1, rings[0])})
    return out


def _cell(offs, halo, row, scale: int = 1) -> str:
    """The index in a plane of the point at inner offsets ``offs`` from the thread's
    (``sg_i<j>``, tile-relative), in a plane of ``halo`` around the tile with rows ``row``
    (``scale``: of rings interleaved in pairs, at an even point)."""
    if scale != 1:
        return f"{scale}*({_cell(offs, halo, row)})"
    terms = []
    n = len(offs)
    for j, (q, (lo, _)) in enumerate(zip(offs, halo)):
        idx = f"sg_i{j} + {q + lo}" if q + lo else f"sg_i{j}"
        terms.append(f"({idx})*{row}" if j < n - 1 and n > 1 else f"({idx})")
    return " + ".join(terms)


#: blocks an SM a nest with register queues asks nvcc to keep resident: its queues took the
#: staged acoustic's 256-thread blocks to 66 registers and 3 blocks an SM (976 us a step,
#: against 849 from rings); held to 64 registers, 4 blocks, it ran 164.5 GPts/s against 158.0
#: from rings on an H200 (issue 65)
RESIDENT_BLOCKS = 4
#: threads an SM holds (compute capability 9.0)
SM_THREADS = 2048


def resident_blocks(f) -> str:
    """``, <blocks>``: the second argument of ``__launch_bounds__`` of fused nest ``f``,
    ``RESIDENT_BLOCKS`` where its staged inputs are queued and every tile's block leaves room
    for them (empty elsewhere, a two-step pass's wide blocks: asking for one block is not
    asking nothing, nvcc then spends up to 255 registers a thread)."""
    if not any(s.queued for s in f.staged) or \
            any(RESIDENT_BLOCKS * n > SM_THREADS for n in f.threads):
        return ""
    return f", {RESIDENT_BLOCKS}"


def _threads_text(f) -> str:
    """The thread count of a block of fused nest ``f``, a constant expression of its tile
    (``sg_T<j>``; ``Fusion.threads`` counts the same)."""
    (l0, h0), (l1, h1) = f.bands
    if len(f.tiles[0]) == 1:
        return f"sg_T0 + {l0 + h0}"
    q, w = f.pair, l1 + h1
    return f"(sg_T0 + {l0 + h0})*(sg_T1/{q}) + (sg_T0*{w // q} + 31)/32*32"


def thread_count(f, tile) -> int:
    """Threads a block of ``tile``, as the pass counted them (``Fusion.threads``: the halo
    columns rounded up to whole warps; ``_threads`` prints the same count for the template)."""
    return f.threads[f.tiles.index(tile)]


#: the pair type of fused nests computing two points a thread (``Fusion.pair``): the
#: arithmetic of one point, component by component, and the aligned 8-byte shared accesses
PAIR_PRELUDE = r"""
struct __align__(8) sg_f2 { float x, y; };
#define SG_F2 static __device__ __forceinline__ sg_f2
SG_F2 operator-(sg_f2 a) { return {-a.x, -a.y}; }
#define SG_F2_OP(op) \
  SG_F2 operator op(sg_f2 a, sg_f2 b) { return {a.x op b.x, a.y op b.y}; } \
  SG_F2 operator op(sg_f2 a, float b) { return {a.x op b, a.y op b}; } \
  SG_F2 operator op(float a, sg_f2 b) { return {a op b.x, a op b.y}; }
SG_F2_OP(+) SG_F2_OP(-) SG_F2_OP(*) SG_F2_OP(/)
#define SG_F2_FN(fn) SG_F2 fn(sg_f2 a) { return {fn(a.x), fn(a.y)}; }
SG_F2_FN(sqrtf) SG_F2_FN(sinf) SG_F2_FN(cosf) SG_F2_FN(tanf) SG_F2_FN(expf) SG_F2_FN(logf)
SG_F2_FN(fabsf) SG_F2_FN(sg_rcp)
SG_F2 powf(sg_f2 a, float b) { return {powf(a.x, b), powf(a.y, b)}; }
SG_F2 powf(sg_f2 a, sg_f2 b) { return {powf(a.x, b.x), powf(a.y, b.y)}; }
/* the pair at p (8-byte aligned); the pair across two (p: the first, aligned); a store */
SG_F2 sg_pair_ld(const float *p) { return *(const sg_f2 *)p; }
SG_F2 sg_pair_mid(const float *p) { const sg_f2 a = sg_pair_ld(p), b = sg_pair_ld(p + 2); return {a.y, b.x}; }
static __device__ __forceinline__ void sg_pair_st(float *p, sg_f2 v) { *(sg_f2 *)p = v; }
"""

#: the reads of rings interleaved in pairs (``interleaved``), after ``PAIR_PRELUDE``
QUAD_PRELUDE = r"""
/* rings interleaved a pair of each of two members at a time: a member's pair at p (the
   first member's 16-byte aligned), read as the whole 16 bytes, so that the compiler loads
   them once for both members; the pair across two */
SG_F2 sg_quad_lo(const float *p) { const float4 v = *(const float4 *)p; return {v.x, v.y}; }
SG_F2 sg_quad_hi(const float *p) { const float4 v = *(const float4 *)(p - 2); return {v.z, v.w}; }
SG_F2 sg_quad_mid_lo(const float *p) { return {sg_quad_lo(p).y, sg_quad_lo(p + 4).x}; }
SG_F2 sg_quad_mid_hi(const float *p) { return {sg_quad_hi(p).y, sg_quad_hi(p + 4).x}; }
"""


class FusedKernel(StagedRings, zero_split.BoxReads):
    """The text of one fused nest for ``backend`` (a CudaBackend)."""

    def __init__(self, backend, k):
        self.b, self.k, self.f = backend, k, k.fusion
        self.base = backend.printer   # the kernel's own printer (slot pointers, checks)
        self.real = ctype(backend.program.dtype)
        self.ctx = _Context(k, self.real)
        self.inner = k.dims[1:]
        self.m = len(self.inner)
        (self.l0, self.h0), (self.l1, self.h1) = self.f.bands
        self.q = self.f.pair
        self.vt = "sg_f2" if self.q > 1 else self.real   # a thread's value at its points
        self.zero = "sg_f2{0.0F, 0.0F}" if self.q > 1 else f"({self.real})0"

    # -- pieces ----------------------------------------------------------------------------
    def _bound(self, depth, produce: bool = False):
        """First and last point of loop ``depth`` of the consumer, or of the producer (wider
        where its temporaries are computed past the domain's edges)."""
        return self.b.bounds(self.f.producer if produce else self.k, depth)

    def _stmt(self, a, produce: bool = False) -> str:
        """A statement at the thread's point(s): a producer's temporary into its ``sg_v_*``
        register, a local of the value type."""
        if produce and not a.is_local and a.lhs.base.name in self.ctx.temps:
            t = self.ctx.temps[a.lhs.base.name]
            value = self.b.expr(a.rhs)
            if t.store:   # unfused, it was stored in 16 bits: round it the same way
                _, load, store = self.b.printer.FORMATS[t.store]
                value = load.format(store.format(value))
            return f"sg_v_{t.name} = {value};"
        if self.q > 1 and a.is_local:
            return f"const sg_f2 {a.lhs.name} = {self.b.expr(a.rhs)};"
        return str(self.b.statement(a))

    def _shift(self, names, c: int) -> list:
        """Loop names with the innermost moved ``c`` points on (a pair's second point)."""
        return list(names[:-1]) + [f"({names[-1]} + {c})" if c else names[-1]]

    def _second(self, e):
        """Access ``e`` at the second point of a pair (innermost index one on)."""
        z = self.k.dims[-1]
        return e.xreplace({z: z + 1})

    def _parts(self, values: list[str]) -> str:
        """A value of the thread's type from one text a point."""
        return values[0] if self.q == 1 else f"sg_f2{{{values[0]}, {values[1]}}}"

    def _x_inside(self, x: str, produce: bool = False) -> str:
        """The test that plane ``x`` lies in the producer's range, or the consumer's (the
        same for every thread of the block; the inner part is ``_flag``'s)."""
        lo, hi = self._bound(0, produce)
        return f"{x} >= {lo} && {x} <= {hi}"

    @staticmethod
    def _flag(produce: bool, c: int) -> str:
        """The thread's test that its point ``c`` lies in the producer's or the consumer's
        range along the inner dimensions (``_flags``)."""
        return f"sg_{'p' if produce else 'c'}in{c}"

    def _flags(self) -> list[str]:
        """The inner dimensions' part of each range test, found once a thread: inside the
        plane loop only the streamed index changes (nvcc does not hoist the part of an ``&&``
        chain after a changing term), and the consumer's plane always lies in its range."""
        names = [d.name for d in self.inner]
        out = []
        for produce, who in ((True, "sg_kind != 3"), (False, "sg_kind == 0")):
            for c in range(self.q):
                tests = []
                for depth, v in enumerate(self._shift(names, c)):
                    lo, hi = self._bound(depth + 1, produce)
                    tests.append(f"{v} >= {lo} && {v} <= {hi}")
                out.append(f"const bool {self._flag(produce, c)} = {who} && "
                           + " && ".join(tests) + ";")
        return out

    def _point(self) -> list[str]:
        """The thread's point: tile-relative ``sg_i<j>``, its kind (0 the tile, 1 a halo row,
        2 a halo column, 3 none) and its inner coordinates."""
        m, w = self.m, self.l1 + self.h1
        lines = ["int sg_i0, sg_kind;"] if m == 1 else ["int sg_i0, sg_i1, sg_kind;"]
        if m == 1:
            lines += [f"sg_i0 = sg_tid - {self.l0};",
                      "sg_kind = sg_i0 >= 0 && sg_i0 < sg_T0 ? 0 : 1;"]
        else:
            q = self.q
            row, col = f"(sg_T1/{q})", f"{q}*(sg_tid%(sg_T1/{q}))"
            w //= q   # threads a halo row: a point each, or a pair
            lines += ["if (sg_tid < sg_main) {",
                      f"  sg_i0 = sg_tid/{row} - {self.l0};", f"  sg_i1 = {col};",
                      "  sg_kind = sg_i0 >= 0 && sg_i0 < sg_T0 ? 0 : 1;", "} else {"]
            if w:
                first = f"{q}*sg_c"
                lines += ["  const int sg_e = sg_tid - sg_main;",
                          f"  const int sg_c = sg_e%{w};",
                          f"  sg_i0 = sg_e/{w};",
                          f"  sg_i1 = sg_c < {self.l1 // q} ? {first} - {self.l1} : "
                          f"sg_T1 + {first} - {self.l1};",
                          f"  sg_kind = sg_e < sg_T0*{w} ? 2 : 3;",
                          "  if (sg_kind == 3) sg_i0 = sg_i1 = 0;"]
            else:
                lines += ["  sg_i0 = sg_i1 = 0;", "  sg_kind = 3;"]
            lines.append("}")
        lines += [f"const sg_int {d.name} = sg_o{j} + sg_i{j};" for j, d in enumerate(self.inner)]
        return lines

    def _produce_point(self, body, temps, test) -> list[str]:
        """The producer ``body`` at the thread's point(s): its temporaries into ``sg_v_*``
        (zero outside the producer's range), then into their queue slot or shared ring.
        ``test``: the loop names of the point, tested in turn for each of a pair (computed
        together)."""
        lines = [f"{self.vt} {', '.join(f'sg_v_{t} = {self.zero}' for t in temps)};"]
        stmts = [self._stmt(a, True) for a in body]
        tests = [f"{self._x_inside(test[0], True)} && {self._flag(True, c)}"
                 for c in range(self.q)]
        if self.q == 1:
            lines += [f"if ({tests[0]}) {{"] + _indent(stmts) + ["}"]
        else:
            for c, part in enumerate("xy"):
                stmts += [f"if (!({tests[c]})) {{ " +
                          " ".join(f"sg_v_{t}.{part} = 0.0F;" for t in temps) + " }"]
            lines += [f"if (({tests[0]}) || ({tests[1]})) {{"] + _indent(stmts) + ["}"]
        for t in temps:
            oc = self.ctx.temps[t]
            ring = _onchip_ring(oc)
            if oc.place == "queue":
                slot = self.ctx.slot((oc.depth, oc.place, None), oc.depth - 1, ring)
                at = self.ctx.at(ring, slot, self.ctx.place(ring, "sg_ti"))
            else:
                slot = self.ctx.slot((oc.depth, oc.place, oc.halo), 0, ring)
                at = self.ctx.at(ring, slot, f"{ring}_c")
            lines.append(self._put_at(at, f"sg_v_{t}"))
        return ["{"] + _indent(lines) + ["}"]

    def _producer(self) -> list[str]:
        """The producer at plane sg_p by the thread's kind: the tile point every temporary,
        a halo point those of the halo parts whose box holds it."""
        test = ["x"] + [d.name for d in self.inner]
        temps = [t.name for t in self.f.onchip]
        lines = ["if (sg_kind == 0) {"]
        lines += _indent(self._produce_point(self.f.producer.body, temps, test))
        for kind, axis in ((1, 0), (2, 1))[:self.m]:
            # a part read across both dimensions (a two-step pass's next level) runs on the
            # halo rows and the halo columns (a cross)
            parts = [p for p in self.f.parts if any(p.halo[axis])]
            if not parts:
                continue
            lines.append(f"}} else if (sg_kind == {kind}) {{")
            for p in parts:
                lo, hi = p.halo[axis]
                box = f"sg_i{axis} >= {-lo} && sg_i{axis} < sg_T{axis} + {hi}"
                lines += [f"  if ({box}) {{"]
                lines += _indent(self._produce_point(p.body, p.temps, test), "    ")
                lines += ["  }"]
        return lines + ["}"]

    def _loads(self, phase: str, x: str) -> list[str]:
        """The global reads at the thread's own point(s) of ``phase`` (the producer's or the
        consumer's) at plane ``x`` (zero outside the nest). Each is issued right after the
        last use of its register, an iteration ahead of its own: the loop hides its latency."""
        reads = [(e, name) for (ph, e), name in self.ctx.loads.items() if ph == phase]
        if not reads:
            return []
        block = [f"const sg_int x = {x};"]
        block += [f"const bool sg_in{c} = {self._x_inside('x', phase == 'produce')} && "
                  f"{self._flag(phase == 'produce', c)};" for c in range(self.q)]
        for e, name in reads:
            at = [e, self._second(e)][:self.q]
            arr = e.base.name
            if self.base.stored.get(arr):   # kept as stored (widened at the use)
                block += [f"{name}_{c} = sg_in{c}{self._outside_box(a)} ? "
                          f"{self.base.target(a)} : {self._zero(arr)};" for c, a in enumerate(at)]
                continue
            block.append(f"{name} = " + self._parts(
                [f"sg_in{c}{self._outside_box(a)} ? {self.base.doprint(a)} : ({self.real})0"
                 for c, a in enumerate(at)]) + ";")
        return ["{"] + _indent(block) + ["}"]

    def _consumer(self) -> list[str]:
        """The consumer at the tile thread's point(s), ``lag + 1`` planes behind, where the
        point lies in the nest's range and the block's chunk (a pair: computed together, each
        point stored where it lies in the range)."""
        k = self.k
        out = [f"const sg_int x = sg_p - {self.ctx.behind};"]
        if self.q == 1:
            return out + [f"if ({self._flag(False, 0)} && x >= sg_xs) {{"] + \
                _indent([self._stmt(a) for a in k.body]) + ["}"]
        body = []
        for i, a in enumerate(k.body):
            if a.is_local:
                body.append(self._stmt(a))
                continue
            name = a.lhs.base.name
            body.append(f"const sg_f2 sg_w{i} = {self.b.expr(a.rhs)};")
            for c, part in enumerate("xy"):
                target = self.b.printer.target(a.lhs if c == 0 else self._second(a.lhs))
                body.append(f"if ({self._flag(False, c)}) {target} = "
                            f"{self.b.printer.rounded(name, f'sg_w{i}.{part}')};")
        return out + ["if (sg_kind == 0 && x >= sg_xs) {"] + _indent(body) + ["}"]

    def _shared_decls(self) -> list[str]:
        """Constant extents of every ring and the pointers into dynamic shared memory: the
        staged inputs' and the shared temporaries' rings of planes, then the private rings
        (a slot a tile thread) of the temporaries read along the streamed dimension only."""
        lines = ["extern __shared__ __align__(16) unsigned char sg_smem[];",
                 f"constexpr int sg_ntile = {' * '.join(f'sg_T{j}' for j in range(self.m))};"]
        prev = None
        ctx = self.ctx
        rings = [(_ring(s), s.ring, s.halo) for s in self.f.staged]
        rings += [(f"sg_sh_{t.name}", t.depth, t.halo) for t in self.f.onchip
                  if t.place == "shared"]
        rings += [(f"sg_pr_{t.name}", t.depth, None) for t in self.f.onchip
                  if t.place == "queue"]
        for name, depth, halo in rings:
            if halo is not None:
                ext = [f"(sg_T{j} + {lo + hi})" for j, (lo, hi) in enumerate(halo)]
                lines.append(f"constexpr int {name}_b = {ext[-1]};")
                lines.append(f"constexpr int {name}_pl = {' * '.join(ext)};")
                plane = f"{name}_pl"
            else:
                plane = "sg_ntile"
            if name in ctx.mates and ctx.mates[name][1]:   # in the first member's ring
                lines.append(f"{self.real} *const {name} = {ctx.mates[name][2]} + "
                             f"{ctx.mates[name][1] * self.q};")
                continue
            size = f"{depth}*{ctx.stride(name, plane)}"
            start = f"({self.real} *)sg_smem" if prev is None else f"{prev} + {prev_size}"
            lines.append(f"{self.real} *const {name} = {start};")
            prev, prev_size = name, size
        return lines

    def _cells(self) -> list[str]:
        """Each plane's index of the thread's own point (``<ring>_c``), found once."""
        rings = {_ring(s): s.halo for s in self.f.staged}
        rings.update({f"sg_sh_{t.name}": t.halo for t in self.f.onchip if t.place == "shared"})
        return [f"const int {name}_c = "
                f"{_cell((0,) * self.m, halo, f'{name}_b', self.ctx.scale(name))};"
                for name, halo in rings.items()]

    def _threads(self) -> str:
        """The block's thread count, a constant expression of the tile."""
        return _threads_text(self.f)

    # -- the kernel ------------------------------------------------------------------------
    def text(self, args) -> str:
        """The ``__global__`` template over the index type and the tile."""
        self.b.printer = fused_printer(self.base, self.ctx)
        try:
            return self._text(args)
        finally:
            self.b.printer = self.base

    def _text(self, args) -> str:
        k, f, ctx = self.k, self.f, self.ctx
        params = ",\n    ".join(f"{a.ctype} {a.name}" for a in args)
        tparams = ", ".join(f"int sg_T{j}" for j in range(self.m))
        lo_x, hi_x = self._bound(0)
        first = min(t.reach[0] for t in f.onchip)
        lines = [f"constexpr int sg_nt = {self._threads()};"]
        if self.m == 2:
            lines.append(f"constexpr int sg_main = (sg_T0 + {self.l0 + self.h0})*"
                         f"(sg_T1/{self.q});")
        lines += self._shared_decls()
        lines.append("const int sg_tid = (int)threadIdx.x;")
        axes = ["x", "y"] if self.m == 2 else ["x"]
        for j in range(self.m):
            lo, _ = self._bound(j + 1)
            base, blk = f"sg_base{self.m - 1 - j}", f"blockIdx.{axes[self.m - 1 - j]}"
            lines.append(f"const sg_int sg_o{j} = {lo} + {base} + (sg_int){blk}*sg_T{j};")
        lines += [f"const sg_int sg_xs = {lo_x} + sg_base{self.m} + "
                  f"(sg_int)blockIdx.{'xyz'[self.m]}*sg_planes;",
                  f"const sg_int sg_xe = sg_xs + sg_planes - 1 < {hi_x} ? "
                  f"sg_xs + sg_planes - 1 : {hi_x};",
                  f"const sg_int sg_pa = sg_xs + {first};"]
        lines += self._point() + self._flags() + self._box_flags() + self._cells()
        tile_index = "sg_i0*sg_T1 + sg_i1" if self.m == 2 else "sg_i0"
        lines.append(f"const int sg_ti = {tile_index};   // a tile thread's slot in private rings")
        lines += self._staged_setup()
        # the body of one plane, printed first: it names the registers loaded at its top
        ctx.phase, ctx.point = "produce", True
        prod = ["const sg_int x = sg_p;"] + self._producer()
        ctx.phase = "consume"
        cons = self._consumer()
        ctx.point = False
        for (_, e), name in ctx.loads.items():
            a = e.base.name
            lines.append(f"{self._elem(a)} {name}_0{', ' + name + '_1' if self.q > 1 else ''};"
                         if self.base.stored.get(a) else f"{self.vt} {name};")
        behind = ctx.behind
        plane = ["{"] + _indent(cons) + ["}"] + \
            self._loads("consume", f"sg_p + 1 - {behind}") + self._stage()
        decls, turn = ctx.slot_lines()
        plane += ["{"] + _indent(prod) + ["}"] + self._loads("produce", "sg_p + 1") + \
            ["__syncthreads();"] + turn
        lines += self._loads("produce", "sg_pa") + self._loads("consume", f"sg_pa - {behind}")
        lines += ["__syncthreads();   // the staged rings filled"] + decls + ["#pragma unroll 1",
                  f"for (sg_int sg_p = sg_pa; sg_p <= sg_xe + {ctx.behind}; ++sg_p) {{"]
        lines += _indent(plane) + ["}"]
        return (f"/* {k.name}: fused with {f.producer.name}, {k.flops} flops, {k.bytes} bytes "
                f"per point */\n"
                f"template <typename sg_int, {tparams}{zero_split.template_param(k)}>\n"
                f"static __global__ void __launch_bounds__({self._threads()}"
                f"{resident_blocks(f)})\n"
                f"{k.section.function}({params},\n    const sg_int sg_planes)\n{{\n"
                + "\n".join(_indent([GRID_WAIT] + lines)) + "\n}\n")

    # -- the launch ------------------------------------------------------------------------
    def shared_bytes(self, tile) -> int:
        return self.f.shared[self.f.tiles.index(tile)]

    def attributes(self) -> list[str]:
        """Host lines, once a call: every instance may take its tile's shared memory (beyond
        the 48 KiB a launch gets without asking)."""
        return [f"SG_CHECK(cudaFuncSetAttribute({self.k.section.function}<{itype}, "
                f"{', '.join(map(str, tile))}{zs}>, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                f"{self.shared_bytes(tile)}));"
                for tile in self.f.tiles for itype in ("int", "long")
                for zs in self._instances()]

    def _instances(self) -> tuple[str, ...]:
        """The zero-split template arguments of the instances launched (``cuda_zero``)."""
        if not zero_split.templated(self.k):
            return ("",)
        return (", true", ", false") if zero_split.offered(self.b, self.k) else (", true",)

    def launch(self, call, timer, pick: str | None = None) -> list[str]:
        """Host lines that launch the nest with the shape tuned (or the default; ``pick``: the
        C text of the shape's index instead); ``sg_n<i>`` are the points per dimension,
        innermost first."""
        b, k = self.b, self.k
        table = shapes(k)
        if pick is None:
            pick = tuned_choice(b.tuning, timer, len(table), default_shape(k))
        name = k.section.function
        n = len(k.dims)
        lines = [f"const long sg_s = {pick};",
                 f"static const int sg_fshape[{len(table)}][{1 + self.m}] = {{"
                 + ", ".join("{" + ", ".join(map(str, (c,) + t)) + "}" for c, t in table) + "};",
                 f"const long sg_r = (sg_n{n - 1} + sg_fshape[sg_s][0] - 1)/sg_fshape[sg_s][0];"]
        for i, tile in enumerate(k.fusion.tiles):
            targs = ", ".join(map(str, tile))
            nbytes = self.shared_bytes(tile)
            # sg_block: the points a block covers per dimension (the grid is counted in it)
            block = ", ".join(map(str, reversed(tile)))
            test = " && ".join(f"sg_fshape[sg_s][{j + 1}] == {v}" for j, v in enumerate(tile))

            def calls(zs):
                out = []
                for itype in ("int", "long"):
                    head = f"if ({b.narrow_flag(k)})" if itype == "int" else "else"
                    out.append(f"{head} " + early(f"{name}<{itype}, {targs}{zs}>",
                                                  f"{call}, sg_r", block="sg_threads",
                                                  shared=str(nbytes)))
                return out
            launch = zero_split.instances(b, k, calls) + \
                [f'SG_CHECK_AS(cudaGetLastError(), "launch of kernel {name}");']
            chunked = b._chunks(n, launch)
            head = "if" if i == 0 else "} else if"
            lines += [f"{head} ({test}) {{", f"  const dim3 sg_block({block});",
                      f"  const dim3 sg_threads({thread_count(self.f, tile)});"] + \
                _indent(chunked)
        return lines + ["}"]
