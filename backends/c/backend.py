"""The C/OpenMP backend: one OpenMP-parallel loop nest per kernel, a SIMD innermost loop.

The entry point takes every array with its run-time halo widths, the domain sizes, the
iteration bounds, the time bounds and scalars, and accumulates each section's wall time
into the timers. Emission goes through cgen; every name comes from the Program.
"""
from __future__ import annotations

import cgen as c
import numpy as np
import sympy

from . import blocking, fusion, time_tiling
from ..common import split, interrupt, zero_box
from .rows import RowPointers
from ..common.device_layout import DeviceLayout
from ..common.cprinter import (BFLOAT16_C, COMPLEX_C, INDEX_CTYPES, CPrinter, complex_value, ctype,
                       has_complex, is_complex, moved, part_dtype, stride_table,
                       time_loop_header)
from ..common.options import EmitOptions

_PARAM_TYPES = {"index": "const long", "coords": "const double *restrict",
                "regions": "const long *restrict",
                "timers": "double *restrict", "checks": "long *restrict",
                "tuning": "const long *restrict", "control": "volatile long *"}


# x86 cores take a slow path on each denormal float, and a wave fading into an absorbing layer
# or ahead of its front leaves many (a 96^3 acoustic run: 0.93 s per 50 steps while 12 % of the
# points were denormal, 0.06 s without). MXCSR is per thread: every OpenMP thread of the team
# sets flush-to-zero and denormals-are-zero on entry and gets its own mode back on return, so
# the caller's floating-point mode (NumPy's) is what it was.
_DENORMALS = r"""#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
static void *sg_flush_denormals(void)
{
  unsigned int *saved = (unsigned int *)malloc((size_t)omp_get_max_threads()*sizeof(unsigned int));
  if (saved) {
#pragma omp parallel
    {
      saved[omp_get_thread_num()] = _mm_getcsr();
      _mm_setcsr(saved[omp_get_thread_num()] | 0x8040u);   /* FTZ (bit 15), DAZ (bit 6) */
    }
  }
  return saved;   /* NULL: not enough memory for the modes; the run keeps IEEE denormals */
}
static void sg_restore_denormals(void *saved)
{
  if (!saved)
    return;
#pragma omp parallel
  _mm_setcsr(((unsigned int *)saved)[omp_get_thread_num()]);
  free(saved);
}
#else
static void *sg_flush_denormals(void) { return NULL; }
static void sg_restore_denormals(void *saved) { (void)saved; }
#endif
"""


class CBackend:
    """Prints a Program as C99 with OpenMP; also the base of the other C-like backends."""

    name = "c"
    language = "C"
    source_suffix = ".c"
    printer_class = CPrinter

    def __init__(self, program, options: EmitOptions = EmitOptions()):
        self.program = program
        self.options = options
        self.notes: list[str] = []   # what the backend chose and why (the Operator logs them)
        self.dims = {d.symbol: d for d in program.dims}
        self.index = INDEX_CTYPES[program.index_types.wide]   # loop counters and offsets
        self.printer = self.printer_class(program.dtype, stride_table(program.arrays))
        self.printer.stored = self.stored = {a.name: a.store for a in program.arrays if a.store}
        self.ctypes = {a.name: self.printer.element_type(a.name, a.dtype)
                       for a in program.arrays}
        self.complex = has_complex(program)

    #: whether ``zero-split`` auto splits the nests reading a zero-box array at run time: not
    #: on CPUs, where it lost in 7 of 8 measurements (the acoustic so 8 with a 20-point sponge,
    #: 40 steps, split / unsplit: 0.92x and 0.94x at 160^3 and 256^3 on 2 cores, 0.92x and
    #: 0.97x untiled on 16; each row's three loops cost more than the damping's bytes:
    #: docs/performance.md, issue 62)
    ZERO_SPLIT = False

    #: whether 3D nests are cache-blocked (``c_blocking``); not where pragmas offload them
    cache_blocking = True
    #: times the autotuner runs each shape (keeping the best): wall-clock timers of a few
    #: steps on a loaded multicore vary by tens of percent between runs
    tuning_rounds = 3

    #: whether grid nests read their arrays through row pointers (``c_rows``)
    row_pointers = True

    #: whether the code runs a GNU OpenMP thread pool in the calling process: a process forked
    #: after such a run hangs in its own first parallel region
    openmp_threads = True

    #: where the entry point's arrays are (``stencilgen.data.places``): host memory
    residency = "host"

    def device_layout(self, a, shape, itemsize, halo) -> DeviceLayout:
        """The layout of array ``a``'s copy where the entry point reads it: the host's."""
        return DeviceLayout.of(shape, itemsize, None)

    def blocked(self, k) -> bool:
        return (self.cache_blocking and not (k.is_sparse or k.sequential) and len(k.dims) == 3
                and not k.fixed and not k.outer and not self.in_tile)

    #: how much faster than the default block a tuned one must have run to replace it: the
    #: best of a few steps' wall clock still varies by several percent
    tuning_margin = 0.05

    def launch_shapes(self) -> dict:
        """Section timer -> descriptions of the shapes the generated code can run that section
        with (chosen by the tuning argument): here the cache blocks of the 3D nests (a fused
        producer runs in its reader's), and with time tiles offered (``time-tiling`` auto)
        the first nest's entry picks the untiled loop (its first ``Tiling.untiled`` choices:
        the first nest's cache block there) or the tiles' sizes."""
        fused, t = self.fused(), self.tiling()
        always = set(self.program.steps) if t is not None and not t.untiled else set()
        shapes = {k.section.timer: tuple(blocking.describe(b) for b in blocking.BLOCKS)
                  for k in self.program.kernels
                  if self.blocked(k) and k not in fused and k not in always}
        if t is not None and t.untiled:
            timer = time_tiling.timed_nest(self.program).section.timer
            own = shapes.get(timer, ())
            untiled = tuple(f"no time tiles, {own[i]}" if i < len(own) else "no time tiles"
                            for i in range(t.untiled))
            shapes[timer] = untiled + tuple(f"time tiles {t.describe(ch)}" for ch in t.choices)
        return shapes

    @property
    def trial_steps(self) -> int:
        """Steps an autotuning trial needs at least: a whole batch of the deepest time tiles."""
        t = self.tiling()
        return t.deepest if t is not None else 0

    def default_shapes(self) -> dict:
        """Section timer -> the shape each offered section runs with when none is tuned (the
        section choosing time tiles: its untiled choice, the reference a tile must beat in
        the autotuner's trials; an untuned run takes ``time_tiling.default_rule``'s)."""
        consumers, t = set(self.fused().values()), self.tiling()
        timer = time_tiling.timed_nest(self.program).section.timer \
            if t is not None and t.untiled else None
        return {k.section.timer: self.untiled_choice() if k.section.timer == timer else
                fusion.FUSED_DEFAULT if k in consumers
                else blocking.default_choice(self.nest_body(k)[0])
                for k in self.program.kernels if k.section.timer in self.launch_shapes()}

    def untiled_choice(self) -> int:
        """The choice of the section choosing time tiles that runs the untiled loop with its
        first nest's default cache block (0 where that nest is not blocked on its own)."""
        first = time_tiling.timed_nest(self.program)   # never a fused reader: the first
        if not self.blocked(first) or first in self.fused():
            return 0
        return blocking.default_choice(self.nest_body(first)[0])

    def probes(self, args, threads: int) -> list:
        """The few choices a run too short to tune tries, one an apply (``autotune``'s
        probes), where time tiles are offered: what ``time_tiling.untuned`` takes, the untiled
        loop (its default block, and that block without jammed rows) and the tiles of x
        alone (``time_tiling.PROBED``), those of no more steps than the run (``args``, on
        ``threads`` threads); each as the tuning argument."""
        t = self.tiling()
        if t is None or not t.untiled:
            return []
        prog = self.program
        lo, hi = prog.time_bounds
        steps = int(args[hi] - args[lo] + 1)
        extents = [int(args[d.upper] - args[d.lower] + 1) for d in prog.dims]
        rule = time_tiling.untuned(t, extents[:t.dims], steps, threads)
        alone = time_tiling.PROBED.get(t.dims)
        # the untiled loop with its default block, and the same block with no rows jammed
        # (where jamming loses on a machine, its second apply finds out)
        untiled = self.untiled_choice()
        picks = [None if rule is None else t.untiled + rule, untiled, blocking.unjammed(untiled),
                 None if alone not in t.choices else t.untiled + t.choices.index(alone)]
        timer = time_tiling.timed_nest(prog).section.timer
        defaults, out = self.default_shapes(), []
        for pick in dict.fromkeys(p for p in picks if p is not None):
            if pick >= t.untiled and t.choices[pick - t.untiled][-1] > steps:
                continue   # fewer steps than a batch
            choice = [0] * max(len(prog.kernels), 1)
            for section, d in {**defaults, timer: pick}.items():
                choice[section] = d
            out.append(choice)
        return out

    def tuned_loop(self):
        """For the autotuner (``autotune.tune``'s ``loop``): (the section choosing time tiles,
        how many of its choices run the untiled loop, the sections of the loop's nests),
        where time tiles are offered; else None."""
        t = self.tiling()
        if t is None or not t.untiled:
            return None
        return (time_tiling.timed_nest(self.program).section.timer, t.untiled,
                tuple(sorted({k.section.timer for k in self.program.steps})))

    def expr(self, e) -> str:
        return self.printer.doprint(e)

    #: whether this backend runs programs on grids split over MPI ranks (``backends/split``)
    splits = True

    def refusal(self) -> str | None:
        """Why this backend cannot run the program (None: it can)."""
        if self.program.split and not self.splits:
            return (f"a grid split over MPI ranks runs on the C and CUDA backends in this "
                    f"version, not the {self.language} one; pass backend='c' or 'cuda' (or "
                    f"STENCILGEN_BACKEND)")
        return None

    #: per 16-bit storage format, a translation unit the compiler must build to store it, and
    #: what that takes
    STORAGE_PROBES = {"float16": ("_Float16 sg_h; float sg_widen(void) { return (float)sg_h; }\n",
                                  "_Float16: gcc >= 12 on x86-64 or aarch64")}

    def storage_probes(self) -> dict:
        """Format -> (probe source, what it needs), for the formats this program stores."""
        return {f: self.STORAGE_PROBES[f] for f in sorted(set(self.stored.values()))
                if f in self.STORAGE_PROBES}

    # -- pieces ----------------------------------------------------------------------------
    def includes(self):
        return [c.Include("math.h"), c.Include("stdlib.h"), c.Include("omp.h")] + \
            self.storage_includes() + self.complex_includes()

    def complex_includes(self):
        """The complex types, where the program holds complex values (``cprinter.COMPLEX_C``)."""
        return [c.Line(COMPLEX_C)] if self.complex else []

    def complex_scalars(self):
        """Each complex scalar made from the two real arguments that carry it."""
        return [c.Initializer(c.Value(f"const {ctype(s.dtype)}", s.name),
                              complex_value(s.dtype, *s.parts))
                for s in self.program.scalars if s.parts]

    #: per 16-bit format, the C functions its loads and stores call
    CONVERSIONS = {"bfloat16": BFLOAT16_C}

    def storage_includes(self):
        """What 16-bit storage needs: the conversions of the formats stored."""
        found = [self.CONVERSIONS[f] for f in sorted(set(self.stored.values()))
                 if self.CONVERSIONS.get(f)]
        return [c.Include("stdint.h")] + [c.Line(text) for text in found] if found else []

    def param_type(self, p) -> str:
        if p.kind == "array":
            return f"{self.printer.FORMATS[p.store][0] if p.store else ctype(p.dtype)} *restrict"
        if p.kind == "scalar":
            return f"const {ctype(p.dtype)}"
        return _PARAM_TYPES[p.kind]

    def signature(self, export=""):
        args = [c.Value("int", f"(*{p.name})(long, long)") if p.kind == "exchange"
                else c.Value(self.param_type(p), p.name) for p in self.program.parameters()]
        return c.FunctionDeclaration(c.Value(f"{export}int", self.program.entry), args)

    def strides(self, a):
        """Declarations of an array's named strides (sparse arrays use the point count)."""
        if a.sparse:
            return []
        return [c.Initializer(c.Value("const long", n), self.printer.index_expr(v))
                for n, v in a.layout.strides if n]

    def array_views(self):
        """Strides and the origin pointer (first domain point) of every array."""
        lines = []
        for a in self.program.arrays:
            lay = a.layout
            lines += self.strides(a)
            origin = self.printer.index_expr(lay.origin[1])
            start = lay.vec if origin == "0" else f"{lay.vec} + {origin}"
            lines.append(c.Initializer(c.Value(f"{self.ctypes[a.name]} *restrict", a.name), start))
        return lines

    def prologue(self):
        return [self.statement(a) for a in self.program.prologue]

    def statement(self, assign):
        rhs = self._wide(assign) if self.printer.single and self._integer_store(assign) \
            else self.expr(assign.rhs)
        if assign.is_local:
            return c.Initializer(c.Value(f"const {ctype(assign.dtype)}", assign.lhs.name), rhs)
        name = assign.lhs.base.name
        return c.Assign(self.printer.target(assign.lhs), self.printer.rounded(name, rhs))

    def _integer_store(self, assign) -> bool:
        """Whether ``assign`` stores into an integer array, or is a float64 local of a
        float32 program (one of a nest storing integers: ``optimize_kernels``)."""
        if assign.is_local:
            return assign.dtype is not None and np.dtype(assign.dtype) == np.float64
        return np.dtype(self.program.array(assign.lhs.base.name).dtype).kind in "iu"

    def _wide(self, assign) -> str:
        """``assign``'s right-hand side printed in float64 (its literals double)."""
        self.printer.single = False
        try:
            return self.expr(assign.rhs)
        finally:
            self.printer.single = True

    def loop_pragmas(self, kernel, depth):
        """Pragmas before loop ``depth`` of ``kernel`` (0 = outermost); none for a nest that
        must run in order."""
        n = len(kernel.dims)
        if self.in_tile:   # a thread runs the whole tile
            return [c.Pragma("omp simd")] if depth == n - 1 and not kernel.sequential else []
        if kernel.sequential and kernel.reduces and depth == 0:
            # a sum over the inner loops: each thread sums the points of its outer indices
            kept = n - kernel.reduces
            collapse = f" collapse({kept})" if kept > 1 else ""
            return [c.Pragma(f"omp parallel for{collapse} schedule(static)")]
        if kernel.sequential:
            return []
        # a sum over the outer loops: they run in order, the threads share the others
        first, rest = kernel.outer, n - kernel.outer
        if depth < first:
            return []
        if rest == 1:
            return [c.Pragma("omp parallel for simd schedule(static)")]
        if depth == first:
            collapse = " collapse(2)" if rest == 3 else ""
            return [c.Pragma(f"omp parallel for{collapse} schedule(static)")]
        if depth == n - 1:
            return [c.Pragma("omp simd")]
        return []

    def bounds(self, kernel, depth):
        """First and last point of loop ``depth``, as C text; on a split grid (MPI) cut to
        this rank's block (``split.owned``), widened as the kernel is."""
        d = self.dims[kernel.dims[depth]]
        if self.tile_ranges is not None and depth in self.tile_ranges:   # a time tile's
            return self.tile_ranges[depth]
        at = kernel.fixed_at(depth)
        if at is not None:
            start = stop = str(at)
        else:
            (first, lo), (last, hi) = kernel.span(depth)
            start, stop = moved(getattr(d, first), lo), moved(getattr(d, last), hi)
        if not self.program.split:
            return start, stop
        wlo, whi = kernel.widened[depth] if at is None else (0, 0)
        lo, hi = split.clip(self.program, kernel.dims[depth])
        return f"sg_maxl({start}, {moved(lo, -wlo)})", f"sg_minl({stop}, {moved(hi, whi)})"

    def guarded(self, kernel, statements) -> list:
        """``statements`` under the kernel's condition at each point, where it has one."""
        if kernel.guard is None:
            return statements
        return [c.If(self.expr(kernel.guard), c.Block(statements))]

    def when(self, kernel, block):
        """``block`` under the kernel's test of the time step, where it runs at some only."""
        return block if kernel.when is None else c.If(self.expr(kernel.when), block)

    #: whether the time loop may run in time-skewed tiles (``c_timetile``), and while one is
    #: printed: the nest's range per tiled dimension (C text), the test of a sparse node's
    #: indices, and whether a thread runs the tile alone (nests serial inside)
    time_tiles = True
    tile_ranges = None
    tile_nodes = None
    in_tile = False

    def tiling(self):
        """The program's ``time_tiling.Tiling`` (None: one step at a time), decided once; the
        decision and its reason go to ``notes`` (the Operator logs them)."""
        if not hasattr(self, "_tiling"):
            t, why = time_tiling.plan(self) if self.time_tiles else (None, "")
            if t is not None and t.untiled:
                self.notes.append(f"time tiles offered to the autotuner ({len(t.choices)} "
                                  f"sizes and the untiled loop); untuned: {t.untuned_text()}; "
                                  f"skew {', '.join(map(str, t.skews))}")
            elif t is not None:
                self.notes.append(f"time tiles of {t.describe(t.choices[0])}, skew "
                                  f"{', '.join(map(str, t.skews))}")
            elif why:
                self.notes.append(f"no time tiles: {why}")
            self._tiling = t
        return self._tiling

    #: how a nest split at run time is printed (``zero_box``): "rows", each row of the
    #: innermost loop cut in three; "points", a test at each point (GPUs)
    split_style = "rows"

    def nest_body(self, kernel, jam: int = 1):
        """The innermost loop's body, the row pointers it reads through (``c_rows``; None but
        for a parallel nest of two or more dimensions), and the split body where the nest is
        split at run time and printed by rows (else None: a "points" split is in the body);
        with ``jam``, the body of that many consecutive outermost rows (``blocking.jammed``),
        read through the first row's pointers."""
        written = {a.lhs.base.name for a in kernel.body if not a.is_local}
        rows = None
        if self.row_pointers and not kernel.sequential and len(kernel.dims) >= 2:
            rows = RowPointers(kernel.dims[-1], self.ctypes, written)
        self.printer.rows = rows
        try:
            body = blocking.jammed(kernel, jam) if jam > 1 else kernel.body
            own = c.Block(self.guarded(kernel, [self.statement(a) for a in body]))
            if kernel.split is None:
                return rows, own, None
            inner = c.Block(self.guarded(kernel, [self.statement(a)
                                                  for a in kernel.split.body]))
        finally:
            self.printer.rows = None
        if self.split_style == "rows":
            return rows, own, inner
        test = zero_box.inside(kernel, [d.name for d in kernel.dims])
        return rows, c.Block([c.Comment("the zero box: the split body"),
                              c.If(test, inner, own)]), None

    def loop_header(self, kernel, depth) -> tuple[str, str, str]:
        """Loop ``depth``'s (start, condition, step): down where an in-place nest sweeps
        down (``Kernel.directions``), else up."""
        name = kernel.dims[depth].name
        start, stop = self.bounds(kernel, depth)
        if kernel.directions and kernel.directions[depth] < 0:
            return f"{self.index} {name} = {stop}", f"{name} >= {start}", f"{name} -= 1"
        return f"{self.index} {name} = {start}", f"{name} <= {stop}", f"{name} += 1"

    def loop_nest(self, kernel):
        if self.in_tile and len(kernel.dims) == 3 and not kernel.fixed and \
                not kernel.outer and not kernel.directions and not kernel.sequential:
            # a thread's nest of a time tile: its rows jammed as its default block's are
            printed = self.nest_body(kernel)
            return blocking.block_loops(self, kernel, self.bounds(kernel, 0),
                                          self.bounds(kernel, 1), printed,
                                          blocking.default_choice(printed[0]))
        rows, body, inner = self.nest_body(kernel)
        rows = rows.declarations() if rows is not None else []
        last = len(kernel.dims) - 1
        for depth in reversed(range(len(kernel.dims))):
            if depth == last and inner is not None:   # a row cut at the zero box
                start, stop = self.bounds(kernel, depth)
                body = c.Block(zero_box.rows(kernel, self.index, kernel.dims[depth].name,
                                             start, stop, body, inner,
                                             self.loop_pragmas(kernel, depth)))
            else:
                loop = c.For(*self.loop_header(kernel, depth), body)
                body = c.Module(self.loop_pragmas(kernel, depth) + [loop])
            if depth == last and rows:
                body = c.Block(rows + [body])
        return body

    #: the wall clock the section timers read
    clock = "omp_get_wtime()"

    def settle(self):
        """Statements that make a section's work finished before its timer is read."""
        return []

    def timed(self, kernel, block):
        sec = kernel.section
        return c.Block([
            c.Comment(f"{kernel.name}: {kernel.flops} flops, {kernel.bytes} bytes per point"),
            c.Initializer(c.Value("const double", sec.clock), self.clock),
            block,
            *self.settle(),
            c.Statement(f"{self.program.timers}[{sec.timer}] += {self.clock} - {sec.clock}"),
        ])

    #: sparse points from which their loop is shared among threads: below it, waking the team
    #: (and waiting for the slowest thread of a loaded machine) costs more than the loop
    SPARSE_PARALLEL_FROM = 1024

    def sparse_pragmas(self, kernel):
        if self.in_tile:
            return []
        npoint = self.program.array(kernel.sparse).layout.npoint
        return [c.Pragma(f"omp parallel for schedule(static) "
                         f"if({npoint} >= {self.SPARSE_PARALLEL_FROM})")]

    def corner_pragmas(self):
        """Pragmas before each loop over a point's cell corners."""
        return []

    def atomic_add(self, target, value, fmt=None, dtype=None):
        """``target += value`` safe against other points adding to the same node (in a 16-bit
        format ``fmt``: the sum rounded once; bfloat16, held as its bits, in a critical
        section; a complex ``dtype``: each part on its own, as atomics take real values)."""
        if dtype is not None and is_complex(dtype):
            return self.complex_atomic_add(target, value, dtype)
        if fmt == "bfloat16":
            _, load, store = self.printer.FORMATS[fmt]
            total = store.format(f"{load.format(target)} + {value}")
            return [c.Pragma(f"omp critical (sg_{fmt})"), c.Statement(f"{target} = {total}")]
        return [c.Pragma("omp atomic update"), c.Statement(f"{target} += {value}")]

    def complex_atomic_add(self, target, value, dtype):
        """The parts of complex ``value`` added, each atomically, to the parts of ``target``."""
        part = part_dtype(dtype)
        suffix = "f" if part == np.float32 else ""
        out = [c.Initializer(c.Value(f"const {ctype(dtype)}", "sg_v"), value)]
        for i, fn in enumerate(("creal", "cimag")):
            out += self.atomic_add(f"(({ctype(part)} *)&{target})[{i}]", f"{fn}{suffix}(sg_v)",
                                   None, part)
        return [c.Block(out)]

    def locate(self, k):
        """Per dimension: the point's position in cells, its cell and the fraction inside it
        (a precomputed sparse function: its first node, given)."""
        loc, arr = self.program.sparse_locals, self.program.array(k.sparse)
        lay = arr.layout
        real, n, out = ctype(self.program.dtype), len(k.dims), []
        if arr.support:
            width = arr.coords_width(n)
            return [c.Initializer(c.Value(f"const {self.index}", loc.cell[i]),
                                  f"({self.index}){lay.coords}[{k.point}*{width} + "
                                  f"{i * (1 + arr.support)}]") for i in range(n)]
        for i, sym in enumerate(k.dims):
            d, pos, cell = self.dims[sym], loc.position[i], loc.cell[i]
            if d.exact:   # the copy of a batch the point belongs to: its nearest node
                out.append(c.Initializer(
                    c.Value(f"const {self.index}", cell),
                    f"({self.index})floor(({lay.coords}[{k.point}*{n} + {i}] - {d.origin})/"
                    f"{d.spacing} + 0.5)"))
                continue
            # a staggered target's values sit half a cell ahead of the nodes; the position in
            # the arithmetic's type, the half cell taken off before dividing, as Devito's (in
            # float32 a point on a node then lies on it: 0.5/0.1 rounds to 5, not below)
            ahead = f" - ({real}){k.stagger[i]!r}*{d.spacing}" if k.stagger and k.stagger[i] \
                else ""
            out += [
                c.Initializer(c.Value(f"const {real}", pos),
                              f"(({real}){lay.coords}[{k.point}*{n} + {i}] - {d.origin}{ahead})/"
                              f"{d.spacing}"),
                c.Initializer(c.Value(f"const {self.index}", cell),
                              f"({self.index})floor({pos})"),
                c.Initializer(c.Value(f"const {real}", loc.fraction[i]), f"({real})({pos} - {cell})"),
            ]
        return out

    def corners(self, k, action):
        """The loops over the 2**ndim corners of the point's cell, ``action`` at each inside
        (a precomputed sparse function: its r**ndim nodes from the first, each weight the
        product of the given ones, nodes up to r/2 into the halo taken, as Devito's)."""
        loc, real = self.program.sparse_locals, ctype(self.program.dtype)
        arr = self.program.array(k.sparse)
        dims = [self.dims[s] for s in k.dims]
        body = [c.Initializer(c.Value(f"const {self.index}", d.name), f"{cell} + {corner}")
                for d, cell, corner in zip(dims, loc.cell, loc.corner)]
        last, reach = 1, 0
        if arr.support:
            width, step, last, reach = (arr.coords_width(len(dims)), 1 + arr.support,
                                        arr.support - 1, arr.support // 2)
            weights = [f"{arr.layout.coords}[{k.point}*{width} + {i * step + 1} + {corner}]"
                       for i, corner in enumerate(loc.corner)]
            body.append(c.Initializer(c.Value(f"const {real}", loc.weight),
                                      "*".join(f"({real}){w}" for w in weights)))
        else:
            body.append(c.Initializer(c.Value(f"const {real}", loc.weight), "*".join(
                f"({corner} ? {f} : 1 - {f})" for corner, f, d in
                zip(loc.corner, loc.fraction, dims) if not d.exact) or f"({real})1"))
        # nodes as far beyond the domain (or a subdomain of the functions) as the weights
        # reach, into the halos, as Devito's: one for the multilinear weights (a staggered
        # field's point within half a cell of the edge), r/2 for precomputed ones; no
        # further than the halos of the arrays read or written there
        halos = [self.program.array(n).halo for n in self._grid_arrays(k)]
        near = [min([max(reach, 1)] + [h[i] for h in halos]) for i in range(len(dims))]
        cut = k.region or ((0, 0),) * len(dims)
        inside = " && ".join(f"{d.name} >= {d.lower}{left - w:+d} && "
                             f"{d.name} <= {d.upper}{w - right:+d}"
                             if w or left or right else
                             f"{d.name} >= {d.lower} && {d.name} <= {d.upper}"
                             for d, (left, right), w in zip(dims, cut, near))
        if self.program.split:
            # a rank adds or gathers only at the points of its block, and the one at the
            # domain's edge at those beyond it
            for d in dims:
                lo, hi = split.owned(self.program, d.symbol)
                inside += (f" && ({d.name} >= {lo} || ({d.name} < {d.lower} && {lo} <= "
                           f"{d.lower})) && ({d.name} <= {hi} || ({d.name} > {d.upper} && "
                           f"{hi} >= {d.upper}))")
        if self.tile_nodes is not None:   # a time tile's share of the nodes
            inside += " && " + self.tile_nodes([d.name for d in dims])
        inner = c.Block(body + [c.If(inside, c.Block(action))])
        for corner, d in reversed(list(zip(loc.corner, dims))):
            if d.exact and not arr.support:   # one node along a batch's copies
                inner = c.Block([c.Initializer(c.Value("const int", corner), "0"), inner])
                continue
            inner = c.Module(self.corner_pragmas() + [
                c.For(f"int {corner} = 0", f"{corner} <= {last}", f"{corner} += 1", inner)])
        return inner

    def _grid_arrays(self, k) -> list:
        """The grid arrays sparse kernel ``k`` reads or writes at a point's nodes."""
        names = {a.base.name for a in sympy.sympify(k.expr).atoms(sympy.Indexed)}
        if k.kind == "inject":
            names.add(k.target.base.name)
        return sorted(n for n in names if not self.program.array(n).sparse)

    def sparse_body(self, k):
        """The statements for one point: locate it, visit its corners, add or gather."""
        loc = self.program.sparse_locals
        value, body = self.expr(k.expr), self.locate(k)
        if k.kind == "inject":
            name = k.target.base.name
            action = self.atomic_add(self.printer.target(k.target), f"{loc.weight}*({value})",
                                     self.stored.get(name), self.program.array(name).dtype)
        else:
            # a complex sample sums complex values (a real one takes no complex ones)
            sample = self.program.array(k.sparse).dtype
            body.append(c.Initializer(c.Value(ctype(sample if is_complex(sample) else
                                                    self.program.dtype), loc.total), "0"))
            action = [c.Statement(f"{loc.total} += {loc.weight}*({value})")]
        body.append(self.corners(k, action))
        if k.kind == "interpolate":
            target = self.printer.target(k.target)
            name = k.target.base.name
            if self.tile_nodes is not None:   # a time tile's part of the sum (row zeroed)
                body += self.atomic_add(target, loc.total)
                return body
            total = f"{self.printer.widened(name, target)} + {loc.total}" if k.increment \
                else loc.total
            body.append(c.Assign(target, self.printer.rounded(name, total)))
        return body

    def timed_together(self) -> dict:
        """Kernel name -> the kernel whose section timer also measures it: with time tiles,
        every nest of a step runs inside the tiled loop its first grid nest times (where the
        untiled loop ran instead, each its own: the summary keeps them apart)."""
        if self.tiling() is None:
            return {}
        first = time_tiling.timed_nest(self.program)
        return {k.name: first.name for k in self.program.steps if k is not first}

    def sparse_loop(self, k):
        """One iteration per point of the sparse function."""
        p, npoint = k.point.name, self.program.array(k.sparse).layout.npoint
        loop = c.For(f"{self.index} {p} = 0", f"{p} < {npoint}", f"{p} += 1",
                     c.Block(self.sparse_body(k)))
        return c.Module(self.sparse_pragmas(k) + [loop])

    #: whether a nest computing only temporaries runs block by block inside their reader's
    #: blocks (``c_fusion``)
    fuse_temporaries = True

    def fused(self) -> dict:
        """Producer -> consumer of the fused nests (``fusion.pairs``), found once."""
        if getattr(self, "_fused", None) is None:
            # not on a split grid: a fused producer's blocks would stop at the rank's edge
            # (the untiled loop of a tiled program's choices fuses; fixed tiles never run it)
            t = self.tiling()
            self._fused = fusion.pairs(self) \
                if self.fuse_temporaries and not self.program.split and \
                (t is None or t.untiled) else {}
        return self._fused

    def sections(self, kernels, time="0"):
        """The kernels' code in order, each after the halo exchange it needs (MPI) and under
        its test of the time step."""
        fused = self.fused()
        producers = {k2: k1 for k1, k2 in fused.items()}
        out = []
        for k in kernels:
            if k in fused:
                continue
            code = self.timed(k, self.sparse_loop(k) if k.is_sparse else
                              fusion.nest(self, producers[k], k) if k in producers else
                              blocking.nest(self, k) if self.blocked(k) else
                              self.loop_nest(k))
            parts = split.nest(self.program, k, time, code)
            out.append(self.when(k, c.Block(parts) if len(parts) > 1 else code))
        return out

    def time_slots(self):
        """The time-slot locals of one step: ``t0 = (time + shift) % modulo``, and the
        snapshot indices ``t_sub = time / t_subf``."""
        t = self.program.time.name
        return [c.Initializer(c.Value("const long", ti.symbol.name),
                              f"({t} + {ti.shift}) % {ti.modulo}")
                for ti in self.program.time_indices] + \
            [c.Initializer(c.Value("const long", s.symbol.name),
                           f"({t} - {s.start}) / {s.factor}" if s.start else f"{t} / {s.factor}")
             for s in self.program.subsamplings if s.symbol is not None]

    def time_loop(self, body):
        end = [c.Line(interrupt.step_end(self.program))]   # count the step; stop if asked
        return c.For(*time_loop_header(self.program), c.Block(self.time_slots() + body + end))

    def sections_in_order(self):
        """Every section, the time-loop ones inside the time loop."""
        prog = self.program
        start, end = prog.time_bounds if prog.has_time_loop else ("0", "0")
        parts = split.start(prog) + self.sections(prog.before, start)
        if prog.has_time_loop and self.tiling() is not None:
            parts.append(time_tiling.time_loop(self, self.tiling()))
        elif prog.has_time_loop:
            parts.append(self.time_loop(self.sections(prog.steps, prog.time.name)))
        return parts + self.sections(prog.after, end)

    def check_pragmas(self, a):
        """Pragmas before the loop that counts NaN/Inf in array ``a``."""
        return [c.Pragma("omp parallel for reduction(+:sg_n) schedule(static)")]

    def nonfinite(self, a, at: str) -> str:
        """C text, 1 where element ``at`` of array ``a`` is NaN or Inf (a complex one: either
        part), else 0."""
        vec = a.layout.vec
        if is_complex(a.dtype):
            parts = f"(({ctype(part_dtype(a.dtype))} *){vec})"
            return f"!(isfinite({parts}[2*({at})]) && isfinite({parts}[2*({at}) + 1]))"
        return f"!isfinite({self.printer.widened(a.name, f'{vec}[{at}]')})"

    def finite_checks(self):
        """Where the caller asks (a non-NULL checks argument): the NaN/Inf in each checked
        array's range (start, length), counted into the range's third place."""
        prog, ck = self.program, self.program.checks_param
        blocks = []
        for i, name in enumerate(prog.checks):
            if np.dtype(prog.array(name).dtype).kind in "iu":   # integers are always finite
                blocks.append(c.Statement(f"{ck}[{3 * i + 2}] = 0"))
                continue
            loop = c.For("long sg_i = 0", "sg_i < sg_len", "sg_i += 1",
                         c.Statement(f"sg_n += {self.nonfinite(prog.array(name), 'sg_from + sg_i')}"))
            # the range is read into scalars here: on a device, the caller's array is not there
            blocks.append(c.Block([c.Initializer(c.Value("const long", "sg_from"),
                                                 f"{ck}[{3 * i}]"),
                                   c.Initializer(c.Value("const long", "sg_len"),
                                                 f"{ck}[{3 * i + 1}]"),
                                   c.Initializer(c.Value("long", "sg_n"), "0"),
                                   *self.check_pragmas(prog.array(name)), loop,
                                   c.Statement(f"{ck}[{3 * i + 2}] = sg_n")]))
        return [c.If(ck, c.Block(blocks))] if blocks else []

    def body(self):
        fused = self.fused()
        start = [c.Initializer(c.Value("void *", "sg_modes"), "sg_flush_denormals()")] \
            if self.options.flush_denormals else []
        end = [c.Statement("sg_restore_denormals(sg_modes)")] \
            if self.options.flush_denormals else []
        setup = fusion.setup(self, fused) if fused else []
        end += [c.Statement("free(sg_fuse)")] if fused else []
        return (start + self.array_views() + self.complex_scalars() + self.prologue() + setup
                + self.sections_in_order()
                + self.finite_checks() + end + [c.Statement(split.status(self.program))])

    def header(self):
        return c.Comment(f"{self.program.name}: generated by stencilgen ({self.language} backend)")

    def emit(self) -> str:
        """The whole translation unit."""
        fn = c.FunctionBody(self.signature(), c.Block(self.body()))
        denormals = [c.Line(_DENORMALS), c.Line()] if self.options.flush_denormals else []
        if any(self.blocked(k) for k in self.program.kernels):
            denormals += [c.Line(blocking.table()), c.Line()]
        if self.fused():
            denormals += [c.Line(fusion.HELPER), c.Line()]
        if self.program.split or self.program.zero_boxes or self.tiling() is not None:
            denormals += [c.Line(split.helpers()), c.Line()]
        denormals += [c.Line(interrupt.handler())]
        return str(c.Module([self.header()] + self.includes() + [c.Line()] + denormals
                            + [fn])) + "\n"
