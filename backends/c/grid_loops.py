"""The C backend's loop nests: a statement, the loops' bounds, pragmas and headers, conditions
and guards, blocking and jammed rows, a nest timed as its section. A part of ``CBackend``,
mixed into it."""
from __future__ import annotations

import cgen as c
import numpy as np

from . import blocking, time_tiling
from ..common import split, zero_box
from ..common.cprinter import ctype, moved
from .rows import RowPointers


class GridLoops:
    """``CBackend``'s printing of a grid nest's loops."""

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
