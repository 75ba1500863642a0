"""CUDA printing of a fused nest (``stencilgen/ir/fusion``): one kernel that streams along the
outermost dimension, its producer's temporaries kept in registers and shared memory.

A block owns a tile of the inner dimensions (threads: innermost dimension on x) and a chunk of
planes of the outer one. Each iteration of its plane loop (1) stages the next plane of every
staged input in its shared ring, (2) runs the producer at plane ``p`` on the tile (every
temporary) and on the halo parts (those read across the tile), (3) runs the consumer at plane
``p - lag``; two barriers apart. The tile is a template parameter, so the rings' extents and
every shared-memory offset are constants.
"""
from __future__ import annotations

import sympy

from .cprinter import ctype, tuned_choice

#: chunks of the streamed dimension a launch shape may cut it in (more blocks, more warm-up)
CHUNKS = (2, 4, 1, 8)
#: the chunks of the default shape: two halves keep 2x the blocks of the plane grid busy
DEFAULT_CHUNKS = 2


def shapes(k) -> list[tuple[int, tuple[int, ...]]]:
    """The launch shapes of fused nest ``k``: (chunks along the streamed dimension, tile)."""
    return [(n, t) for t in k.fusion.tiles for n in CHUNKS]


def default_shape(k) -> int:
    return shapes(k).index((DEFAULT_CHUNKS, k.fusion.tiles[0]))


def describe(k, shape) -> str:
    n, tile = shape
    return f"fused, tile {'x'.join(map(str, tile))}, {n} chunk{'s' if n > 1 else ''} of " \
           f"{k.dims[0]}"


def _tag(slot) -> str:
    return "n" if slot is None else str(slot)


def _ring(s) -> str:
    return f"sg_st_{s.name}_{_tag(s.slot)}"


class _Context:
    """What the fused printer needs: the fusion, the loop symbols and the phase printed."""

    def __init__(self, k):
        self.dims = k.dims
        self.temps = {t.name: t for t in k.fusion.onchip}
        self.staged = {(s.name, s.slot): s for s in k.fusion.staged}
        self.phase = "produce"     # or "consume": which plane the loop symbols stand for
        self.planes: dict = {}     # (ring, streamed offset from sg_p) -> plane pointer name
        self.lag = k.fusion.lag
        self.tile = False          # printing the thread's own tile point
        self.prefetched: dict = {}   # (phase, global read at the tile point) -> register

    def offsets(self, expr):
        n = len(self.dims)
        return tuple(int(i - d) for i, d in zip(expr.indices[-n:], self.dims))

    def staged_read(self, s, offs) -> bool:
        """Whether a read at ``offs`` (from the point printed) comes from ``s``'s ring: in the
        producer always; in the consumer where the plane is held and the point was loaded."""
        if self.phase == "produce":
            return True
        o = offs[0]
        inner = all(lo <= q <= hi for q, (lo, hi) in zip(offs[1:], s.reads))
        # the plane at the ring's first offset is overwritten by the next iteration's load,
        # which no barrier keeps from the consumers still reading it: that one from global
        return inner and s.reach[0] <= o <= s.reach[1] and \
            s.reach[0] < o - self.lag <= s.reach[1]

    def plane(self, ring: str, depth: int, first: int, o: int) -> str:
        """The pointer to the plane of ``ring`` at streamed offset ``o`` from the producer's
        plane, declared once per phase."""
        key = (ring, o)
        if key not in self.planes:
            self.planes[key] = (f"{ring}_p{'m' if o < 0 else ''}{abs(o)}", depth, first)
        return self.planes[key][0]


def fused_printer(base, ctx):
    """A copy of printer ``base`` reading temporaries and staged planes on chip."""
    class Fused(type(base)):
        def _print_Indexed(self, expr):
            name = expr.base.name
            if name in ctx.temps:
                return self._temp(ctx.temps[name], ctx.offsets(expr))
            key = (name, expr.indices[0] if len(expr.indices) > len(ctx.dims) else None)
            s = ctx.staged.get(key)
            if s is not None:
                offs = ctx.offsets(expr)
                if ctx.staged_read(s, offs):
                    return self._staged(s, offs)
            if ctx.tile:
                key = (ctx.phase, expr)
                if key not in ctx.prefetched:
                    ctx.prefetched[key] = f"sg_pf{len(ctx.prefetched)}"
                return ctx.prefetched[key]
            return super()._print_Indexed(expr)

        def _staged(self, s, offs):
            o = offs[0] if ctx.phase == "produce" else offs[0] - ctx.lag
            ptr = ctx.plane(_ring(s), s.depth, s.reach[0], o)
            row = f"{_ring(s)}_b"
            return f"{ptr}[{_cell(offs[1:], s.halo, row)}]"

        def _temp(self, t, offs):
            o = offs[0]
            if t.place == "queue":
                return f"sg_q_{t.name}[{o - t.reach[0]}]"
            ptr = ctx.plane(f"sg_sh_{t.name}", t.depth, 0, o - ctx.lag)
            return f"{ptr}[{_cell(offs[1:], t.halo, f'sg_sh_{t.name}_b')}]"

    p = Fused.__new__(Fused)
    p.__dict__.update(base.__dict__)
    return p


def _cell(offs, halo, row) -> str:
    """The index in a plane of the point at inner offsets ``offs`` from the one printed
    (``sg_i<j>``, tile-relative), in a plane of ``halo`` around the tile with rows ``row``."""
    terms = []
    n = len(offs)
    for j, (q, (lo, _)) in enumerate(zip(offs, halo)):
        idx = f"sg_i{j} + {q + lo}" if q + lo else f"sg_i{j}"
        terms.append(f"({idx})*{row}" if j < n - 1 and n > 1 else f"({idx})")
    return " + ".join(terms)


def _plane_decls(ctx, real) -> list[str]:
    """Pointers to the planes the phase just printed reads, from the iteration's counter."""
    out = []
    for (ring, o), (name, depth, first) in sorted(ctx.planes.items()):
        out.append(f"{real} *const {name} = {ring} + "
                   f"((unsigned)(sg_it + {o - first + depth * 4}) % {depth}u)*{ring}_pl;")
    ctx.planes = {}
    return out


def _indent(lines, by="  "):
    return [by + ln for ln in lines]


class FusedKernel:
    """The text of one fused nest for ``backend`` (a CudaBackend)."""

    def __init__(self, backend, k):
        self.b, self.k, self.f = backend, k, k.fusion
        self.base = backend.printer   # the kernel's own printer (slot pointers, checks)
        self.ctx = _Context(k)
        self.real = ctype(backend.program.dtype)
        self.inner = k.dims[1:]
        self.m = len(self.inner)

    # -- pieces ----------------------------------------------------------------------------
    def _bound(self, depth):
        return self.b.bounds(self.k, depth)

    def _stmt(self, a, produce: bool) -> str:
        if produce and not a.is_local and a.lhs.base.name in self.ctx.temps:
            t = self.ctx.temps[a.lhs.base.name]
            value = self.b.expr(a.rhs)
            if t.store:   # unfused, it was stored in 16 bits: round it the same way
                _, load, store = self.b.printer.FORMATS[t.store]
                value = load.format(store.format(value))
            return f"sg_v_{t.name} = {value};"
        return str(self.b.statement(a))

    def _inside(self, names) -> str:
        """The test that the point (``names`` per dimension) lies in the producer's range."""
        parts = []
        for depth, v in enumerate(names):
            if v is None:
                continue
            lo, hi = self._bound(depth)
            parts.append(f"{v} >= {lo} && {v} <= {hi}")
        return " && ".join(parts) or "true"

    def _locate(self, tile_rel) -> list[str]:
        """Declarations of the inner coordinates of a point at tile-relative indices."""
        out = [f"const int sg_i{j} = {tile_rel[j]};" for j in range(self.m)]
        out += [f"const sg_int {d.name} = sg_o{j} + sg_i{j};" for j, d in enumerate(self.inner)]
        return out

    def _tile_test(self, x: bool) -> str:
        """The test that the thread's tile point lies in the nest (never below the tile's
        origin, so only the upper bounds), with ``x``'s range where ``x`` is asked."""
        ends = [f"{d.name} <= {self._bound(j + 1)[1]}" for j, d in enumerate(self.inner)]
        return " && ".join(([self._inside(["x"])] if x else []) + ends)

    def _produce_point(self, body, temps, where, check_low: bool) -> list[str]:
        """The producer ``body`` at the point located by ``where``: its temporaries into
        ``sg_v_*`` (zero outside the producer's range), then kept on chip."""
        test = self._inside(["x"] + [d.name for d in self.inner]) if check_low else \
            self._tile_test(True)
        lines = where + [f"{self.real} {', '.join(f'sg_v_{t} = 0' for t in temps)};"]
        stmts = [self._stmt(a, True) for a in body]
        lines += [f"if ({test}) {{"] + _indent(stmts) + ["}"]
        for t in temps:
            oc = self.ctx.temps[t]
            if oc.place == "queue":
                lines += [f"#pragma unroll",
                          f"for (int sg_j = 0; sg_j < {oc.depth - 1}; ++sg_j) "
                          f"sg_q_{t}[sg_j] = sg_q_{t}[sg_j + 1];",
                          f"sg_q_{t}[{oc.depth - 1}] = sg_v_{t};"]
            else:
                ptr = self.ctx.plane(f"sg_sh_{t}", oc.depth, 0, 0)
                lines.append(f"{ptr}[{_cell((0,) * self.m, oc.halo, f'sg_sh_{t}_b')}] = "
                             f"sg_v_{t};")
        return ["{"] + _indent(lines) + ["}"]

    def _rectangles(self, halo) -> list[tuple]:
        """The halo around the tile as rectangles of (first, count) per inner dimension
        (tile-relative, written with the tile's template constants)."""
        if self.m == 1:
            (lo, hi), = halo
            return [r for r in [((f"{-lo}", lo),), ((f"sg_T0", hi),)] if r[0][1]]
        (l0, h0), (l1, h1) = halo
        full = (f"{-l1}", f"sg_T1 + {l1 + h1}")
        rects = [((f"{-l0}", l0), full), (("sg_T0", h0), full),
                 (("0", "sg_T0"), (f"{-l1}", l1)), (("0", "sg_T0"), ("sg_T1", h1))]
        return [r for r in rects if r[0][1] != 0 and r[1][1] != 0]

    def _halo_parts(self) -> list[str]:
        """The producer's halo parts in one index space: each part's rectangles in turn, one
        copy of its statements (the point located from the index first)."""
        cases, start = [], "0"
        for part in self.f.parts:
            locate = [f"const int sg_h = sg_e - ({start});",
                      "int " + ", ".join(f"sg_h{j}" for j in range(self.m)) + ";"]
            rects, first = self._rectangles(part.halo), "0"
            for i, rect in enumerate(rects):
                size = " * ".join(f"({c})" for _, c in rect)
                local = f"(sg_h - ({first}))"
                if self.m == 1:
                    set_ = [f"sg_h0 = {rect[0][0]} + {local};"]
                else:
                    w = f"({rect[1][1]})"
                    set_ = [f"sg_h0 = {rect[0][0]} + {local}/{w};",
                            f"sg_h1 = {rect[1][0]} + {local}%{w};"]
                last = f"{first} + {size}"
                if i == len(rects) - 1:
                    locate += (["} else {"] if i else ["{"]) + _indent(set_) + ["}"]
                else:
                    locate += [f"{'} else ' if i else ''}if (sg_h < {last}) {{"] + _indent(set_)
                first = last
            end = f"{start} + {first}"
            rel = [f"sg_h{j}" for j in range(self.m)]
            body = self._produce_point(part.body, part.temps, locate + self._locate(rel), True)
            cases.append((end, body))
            start = end
        if not cases:
            return []
        lines = [f"for (int sg_e = sg_tid; sg_e < {start}; sg_e += sg_nt) {{"]
        for i, (end, body) in enumerate(cases):
            head = "if" if i == 0 else "} else if"
            lines += [f"  {head} (sg_e < {end}) {{"] + _indent(body, "    ")
        return lines + ["  }", "}"]

    def _staged_load(self, s) -> tuple[str, str]:
        """The load of staged ``s`` at plane ``sg_X`` and inner point ``sg_g<j>`` from global
        memory (not from its ring), and the test that its point is one the reads reach
        (zero elsewhere)."""
        lo_x, hi_x = self._bound(0)
        cond = [f"sg_X >= {lo_x} + {s.reach[0]}", f"sg_X <= {hi_x} + {s.reach[1]}"]
        idx = [sympy.Symbol("sg_X")] + [sympy.Symbol(f"sg_g{j}") for j in range(self.m)]
        access = sympy.IndexedBase(s.name)[(s.slot,) + tuple(idx) if s.slot is not None
                                           else tuple(idx)]
        return self.base.doprint(access), " && ".join(cond)

    def _stage_setup(self) -> list[str]:
        """Per staged input, the elements of a plane this thread moves (their inner points and
        whether a read reaches them, fixed for the block) and the registers that hold the next
        plane's values; then the first plane's loads."""
        out = []
        for s in self.f.staged:
            ring, n = _ring(s), f"{_ring(s)}_n"
            inner = []
            for j in range(self.m):
                lo, hi = self._bound(j + 1)
                inner += [f"sg_g{j} >= {lo} + {s.reads[j][0]}",
                          f"sg_g{j} <= {hi} + {s.reads[j][1]}"]
            if self.m == 1:
                locate = [f"const sg_int sg_g0 = sg_o0 - {s.halo[0][0]} + sg_e;"]
            else:
                locate = [f"const sg_int sg_g0 = sg_o0 - {s.halo[0][0]} + sg_e/{ring}_b;",
                          f"const sg_int sg_g1 = sg_o1 - {s.halo[1][0]} + sg_e%{ring}_b;"]
            keep = [f"{ring}_g{j}[sg_k] = sg_g{j};" for j in range(self.m)]
            out += [f"constexpr int {n} = ({ring}_pl + sg_nt - 1)/sg_nt;",
                    f"sg_int {', '.join(f'{ring}_g{j}[{n}]' for j in range(self.m))};",
                    f"bool {ring}_in[{n}];", f"{self.real} {ring}_v[{n}];",
                    "#pragma unroll", f"for (int sg_k = 0; sg_k < {n}; ++sg_k) {{",
                    "  const int sg_e = sg_tid + sg_k*sg_nt;"] + _indent(locate + keep) + \
                [f"  {ring}_in[sg_k] = sg_e < {ring}_pl && {' && '.join(inner)};", "}"]
        return out + ["{", "  const sg_int sg_p = sg_p0 - 1;"] + \
            _indent(self._stage_loads()) + ["}"]

    def _stage_loads(self) -> list[str]:
        """The loads of each staged input's plane for the next iteration (sg_p + 1)."""
        out = []
        for s in self.f.staged:
            ring, n = _ring(s), f"{_ring(s)}_n"
            load, xok = self._staged_load(s)
            out += ["{", f"  const sg_int sg_X = sg_p + 1 + {s.reach[1]};",
                    f"  const bool sg_xok = {xok};", "  #pragma unroll",
                    f"  for (int sg_k = 0; sg_k < {n}; ++sg_k) {{"]
            out += [f"    const sg_int sg_g{j} = {ring}_g{j}[sg_k];" for j in range(self.m)]
            out += [f"    {ring}_v[sg_k] = sg_xok && {ring}_in[sg_k] ? {load} : "
                    f"({self.real})0;", "  }", "}"]
        return out

    def _stage(self) -> list[str]:
        """Each staged input's plane sg_p + (its reach) into its ring, from the registers
        loaded an iteration earlier (so no load's latency sits before a barrier), then the
        loads of the next plane."""
        out = []
        for s in self.f.staged:
            ring, n = _ring(s), f"{_ring(s)}_n"
            out += ["{", f"  {self.real} *const sg_dst = {ring} + "
                    f"((sg_it + {s.depth - 1}u) % {s.depth}u)*{ring}_pl;", "  #pragma unroll",
                    f"  for (int sg_k = 0; sg_k < {n}; ++sg_k) {{",
                    "    const int sg_e = sg_tid + sg_k*sg_nt;",
                    f"    if (sg_e < {ring}_pl) sg_dst[sg_e] = {ring}_v[sg_k];", "  }", "}"]
        return out + self._stage_loads()

    def _prefetch(self) -> list[str]:
        """The global reads of the tile point's producer and consumer for the next iteration,
        into their registers (zero where the point lies outside the nest)."""
        out = []
        for phase, shift in (("produce", "1"), ("consume", f"1 - {self.f.lag}")):
            reads = [(e, name) for (ph, e), name in self.ctx.prefetched.items() if ph == phase]
            if not reads:
                continue
            block = [f"const sg_int x = sg_p + {shift};"]
            block += self._locate([f"sg_t{j}" for j in range(self.m)])
            block += [f"const bool sg_in = {self._tile_test(True)};"]
            block += [f"{name} = sg_in ? {self.base.doprint(e)} : ({self.real})0;"
                      for e, name in reads]
            out += ["{"] + _indent(block) + ["}"]
        return out

    def _shared_decls(self) -> list[str]:
        """Constant extents of every ring and the pointers into dynamic shared memory."""
        lines = [f"extern __shared__ __align__(16) unsigned char sg_smem[];"]
        prev = None
        rings = [(_ring(s), s.depth, s.halo) for s in self.f.staged]
        rings += [(f"sg_sh_{t.name}", t.depth, t.halo) for t in self.f.onchip
                  if t.place == "shared"]
        for name, depth, halo in rings:
            ext = [f"(sg_T{j} + {lo + hi})" for j, (lo, hi) in enumerate(halo)]
            if self.m > 1:
                lines.append(f"constexpr int {name}_b = {ext[-1]};")
            lines.append(f"constexpr int {name}_pl = {' * '.join(ext)};")
            start = f"({self.real} *)sg_smem" if prev is None else f"{prev} + {prev_size}"
            lines.append(f"{self.real} *const {name} = {start};")
            prev, prev_size = name, f"{depth}*{name}_pl"
        return lines

    # -- the kernel ------------------------------------------------------------------------
    def text(self, args) -> str:
        """The ``__global__`` template over the index type and the tile."""
        self.b.printer = fused_printer(self.base, self.ctx)
        try:
            return self._text(args)
        finally:
            self.b.printer = self.base

    def _text(self, args) -> str:
        b, k, f, ctx = self.b, self.k, self.f, self.ctx
        params = ",\n    ".join(f"{a.ctype} {a.name}" for a in args)
        tparams = ", ".join(f"int sg_T{j}" for j in range(self.m))
        threads = " * ".join(f"sg_T{j}" for j in range(self.m))
        lo_x, hi_x = self._bound(0)
        first = min(t.reach[0] for t in f.onchip)
        warm = max((s.depth - 1 for s in f.staged), default=0)
        lines = [f"constexpr int sg_nt = {threads};"] + self._shared_decls()
        axes = ["x", "y"] if self.m == 2 else ["x"]
        # tile-relative thread coordinates: the innermost dimension on threadIdx.x
        tid = [f"(int)threadIdx.{axes[self.m - 1 - j]}" for j in range(self.m)]
        lines += [f"const int sg_t{j} = {tid[j]};" for j in range(self.m)]
        lines.append("const int sg_tid = " + (f"sg_t0*sg_T1 + sg_t1;" if self.m == 2
                                              else "sg_t0;"))
        for j in range(self.m):
            lo, _ = self._bound(j + 1)
            base, blk = f"sg_base{self.m - 1 - j}", f"blockIdx.{axes[self.m - 1 - j]}"
            lines.append(f"const sg_int sg_o{j} = {lo} + {base} + (sg_int){blk}*sg_T{j};")
        lines += [f"const sg_int sg_xs = {lo_x} + sg_base{self.m} + "
                  f"(sg_int)blockIdx.{'xyz'[self.m]}*sg_planes;",
                  f"const sg_int sg_xe = sg_xs + sg_planes - 1 < {hi_x} ? "
                  f"sg_xs + sg_planes - 1 : {hi_x};"]
        for t in f.onchip:
            if t.place == "queue":
                lines.append(f"{self.real} sg_q_{t.name}[{t.depth}] = {{}};")
        lines.append(f"const sg_int sg_p0 = sg_xs + {first} - {warm};")
        lines += self._stage_setup()
        loop = [f"const unsigned sg_it = (unsigned)(sg_p - sg_p0);"] + self._stage()
        loop.append("__syncthreads();")
        # (2) the producer at plane sg_p
        ctx.phase = "produce"
        temps = [t.name for t in f.onchip]
        prod = [f"const sg_int x = sg_p;"]
        ctx.tile = True
        body = self._produce_point(f.producer.body, temps,
                                   self._locate([f"sg_t{j}" for j in range(self.m)]), False)
        ctx.tile = False
        body += self._halo_parts()
        prod += _plane_decls(ctx, self.real) + body
        loop += [f"if (sg_p >= sg_xs + {first}) {{"] + _indent(prod) + ["}", "__syncthreads();"]
        # (3) the consumer at plane sg_p - lag
        ctx.phase = "consume"
        cons = [f"const sg_int x = sg_p - {f.lag};"]
        cons += self._locate([f"sg_t{j}" for j in range(self.m)])
        inside = self._tile_test(False)
        ctx.tile = True
        stmts = [self._stmt(a, False) for a in k.body]
        ctx.tile = False
        cons += _plane_decls(ctx, self.real) + [f"if ({inside}) {{"] + _indent(stmts) + ["}"]
        loop += [f"if (sg_p >= sg_xs + {f.lag}) {{"] + _indent(cons) + ["}"]
        prefetch = self._prefetch()
        loop += prefetch
        lines += [f"{self.real} {name};" for name in ctx.prefetched.values()]
        lines += ["{", "  const sg_int sg_p = sg_p0 - 1;"] + _indent(prefetch) + ["}"]
        lines += [f"for (sg_int sg_p = sg_p0; sg_p <= sg_xe + {f.lag}; ++sg_p) {{"] + \
            _indent(loop) + ["}"]
        return (f"/* {k.name}: fused with {f.producer.name}, {k.flops} flops, {k.bytes} bytes "
                f"per point */\n"
                f"template <typename sg_int, {tparams}>\n"
                f"static __global__ void __launch_bounds__({threads})\n"
                f"{k.section.function}({params},\n    const sg_int sg_planes)\n{{\n"
                + "\n".join(_indent(lines)) + "\n}\n")

    # -- the launch ------------------------------------------------------------------------
    def shared_bytes(self, tile) -> int:
        return self.f.shared[self.f.tiles.index(tile)]

    def attributes(self) -> list[str]:
        """Host lines, once a call: every instance may take its tile's shared memory (beyond
        the 48 KiB a launch gets without asking)."""
        return [f"SG_CHECK(cudaFuncSetAttribute({self.k.section.function}<{itype}, "
                f"{', '.join(map(str, tile))}>, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                f"{self.shared_bytes(tile)}));"
                for tile in self.f.tiles for itype in ("int", "long")]

    def launch(self, call, timer) -> list[str]:
        """Host lines that launch the nest with the shape tuned (or the default); ``sg_n<i>``
        are the points per dimension, innermost first."""
        b, k = self.b, self.k
        table = shapes(k)
        pick = tuned_choice(b.program.tuning, timer, len(table), default_shape(k))
        name = k.section.function
        n = len(k.dims)
        lines = [f"const long sg_s = {pick};",
                 f"static const int sg_fshape[{len(table)}][{1 + self.m}] = {{"
                 + ", ".join("{" + ", ".join(map(str, (c,) + t)) + "}" for c, t in table) + "};",
                 f"const long sg_r = (sg_n{n - 1} + sg_fshape[sg_s][0] - 1)/sg_fshape[sg_s][0];"]
        for i, tile in enumerate(k.fusion.tiles):
            targs = ", ".join(map(str, tile))
            nbytes = self.shared_bytes(tile)
            block = ", ".join(map(str, reversed(tile)))
            test = " && ".join(f"sg_fshape[sg_s][{j + 1}] == {v}" for j, v in enumerate(tile))
            launch = []
            for itype in ("int", "long"):
                head = "if (sg_narrow)" if itype == "int" else "else"
                launch.append(f"{head} {name}<{itype}, {targs}><<<sg_grid, sg_block, "
                              f"{nbytes}>>>({call}, sg_r);")
            launch.append(f'SG_CHECK_AS(cudaGetLastError(), "launch of kernel {name}");')
            chunked = b._chunks(n, launch)
            head = "if" if i == 0 else "} else if"
            lines += [f"{head} ({test}) {{", f"  const dim3 sg_block({block});"] + \
                _indent(chunked)
        return lines + ["}"]
