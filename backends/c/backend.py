"""The C/OpenMP backend: one OpenMP-parallel loop nest per kernel, a SIMD innermost loop.

The entry point takes every array with its run-time halo widths, the domain sizes, the
iteration bounds, the time bounds and scalars, and accumulates each section's wall time
into the timers. Emission goes through cgen; every name comes from the Program.

The emitter is ``CBackend``, put together from its parts: ``grid_loops`` (the loop nests),
``sparse_loops`` (sparse nests) and ``tuning`` (launch shapes and probes), the entry point and
its sections here.
"""
from __future__ import annotations

import cgen as c
import numpy as np

from . import blocking, fusion, time_tiling
from ..common import split, interrupt
from ..common.cprinter import (BFLOAT16_C, COMPLEX_C, INDEX_CTYPES, CPrinter, complex_value, ctype,
                       has_complex, is_complex, part_dtype, stride_table,
                       time_loop_header)
from ..common.options import EmitOptions
from .grid_loops import GridLoops
from .sparse_loops import SparseLoops
from .tuning import Tuning

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

class CBackend(Tuning, GridLoops, SparseLoops):
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

    #: how much faster than the default block a tuned one must have run to replace it: the
    #: best of a few steps' wall clock still varies by several percent
    tuning_margin = 0.05

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

    #: whether the time loop may run in time-skewed tiles (``c_timetile``), and while one is
    #: printed: the nest's range per tiled dimension (C text), the test of a sparse node's
    #: indices, and whether a thread runs the tile alone (nests serial inside)
    time_tiles = True
    tile_ranges = None
    tile_nodes = None
    in_tile = False

    #: how a nest split at run time is printed (``zero_box``): "rows", each row of the
    #: innermost loop cut in three; "points", a test at each point (GPUs)
    split_style = "rows"

    #: the wall clock the section timers read
    clock = "omp_get_wtime()"

    #: sparse points from which their loop is shared among threads: below it, waking the team
    #: (and waiting for the slowest thread of a loaded machine) costs more than the loop
    SPARSE_PARALLEL_FROM = 1024

    def timed_together(self) -> dict:
        """Kernel name -> the kernel whose section timer also measures it: with time tiles,
        every nest of a step runs inside the tiled loop its first grid nest times (where the
        untiled loop ran instead, each its own: the summary keeps them apart)."""
        if self.tiling() is None:
            return {}
        first = time_tiling.timed_nest(self.program)
        return {k.name: first.name for k in self.program.steps if k is not first}

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
