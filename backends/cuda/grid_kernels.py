"""The CUDA kernels of grid nests: a thread a point (or two along the outermost, ``point_pairs``),
the loops over the launch's threads, the time slots' pointers, sums over a dimension, a nest
split at its zero box. A part of ``CudaBackend``, mixed into it."""
from __future__ import annotations

from contextlib import contextmanager
import dataclasses

import cgen as c
import numpy as np

from . import fused_nests, point_pairs, zero_split
from ..common import zero_box
from ..common.cprinter import ctype
from .kernel_text import (
    SHAPES, SPARSE_BLOCK, SlotPrinter, Slots, THREADS, group_start, indent, point_loop,
    thread_stride, thread_index, time_slots)
from .launch import GRID_WAIT


class GridKernels:
    """``CudaBackend``'s printing of a grid nest's kernel."""

    def slots(self, k) -> Slots:
        """``time_slots`` of kernel ``k``, computed once (the launch code asks it often)."""
        if k.name not in self._slots:
            self._slots[k.name] = time_slots(k, self.program)
        return self._slots[k.name]

    def slot_views(self, k) -> dict:
        """The arrays kernel ``k`` reads through a pointer per time slot (not in debug builds,
        whose bounds checks are relative to each array's origin)."""
        if self.options.debug:
            return {}
        return self.slots(k).views

    def points(self, k) -> int:
        """The most consecutive points along ``stacked(k)`` a thread of ``k`` may compute: two
        where the kernel reads nothing it writes (a point computed twice stores the same
        values); four ran slower than two on every workload measured. A paired kernel
        computes two along the innermost dimension at each of them."""
        if k.is_sparse or k.sequential or k.fusion or len(k.dims) < 2:
            return 1
        # a summing nest's sums are registers: a point computed twice is added once
        summed = {t.base.name for t in self._sums(k)} if k.outer else set()
        if self.slots(k).rereads - summed:
            return 1
        return max(shape[0] for shape in SHAPES[len(k.dims)])

    def stacked(self, k) -> int:
        """The loop (depth) along which a thread's ``sg_r`` points lie: the outermost one that
        is neither summed nor a batch's copies (``LoopDim.exact``: no stencil reaches across
        them, so points there share no loads; the batch nest's x does), never the innermost
        (a warp's threads stay on consecutive points)."""
        if ("stacked", k.name) not in self._slots:
            batch = {d.name for d in self.program.dims if d.exact}
            n, depth = len(k.dims), k.outer
            while depth < n - 2 and k.dims[depth].name in batch:
                depth += 1
            self._slots[("stacked", k.name)] = depth
        return self._slots[("stacked", k.name)]

    def _stacked_axis(self, k) -> int:
        """The thread axis (0: x, the innermost loop) of ``stacked(k)``."""
        return len(k.dims) - 1 - self.stacked(k)

    def paired(self, k):
        """The ``point_pairs.Plan`` of grid nest ``k`` (None: one point a thread), found once."""
        if ("pairs", k.name) not in self._slots:
            # global indices on a grid split along the innermost dimension: an even index
            # need not lie on an even address, which aligned pairs of 16-bit reads rely on
            inner_split = self.program.split and self.program.split[-1]
            self._slots[("pairs", k.name)] = None if inner_split or k.fusion or k.outer \
                else point_pairs.plan(self, k)
        return self._slots[("pairs", k.name)]

    @contextmanager
    def _printing(self, k):
        """The printer of kernel ``k``'s body: slots through their own pointers."""
        views, saved = self.slot_views(k), self.printer
        if views:
            self.printer = SlotPrinter(self.program.dtype, saved.strides, views)
            self.printer.stored = self.stored
        try:
            yield
        finally:
            self.printer = saved

    def loop_header(self, kernel, depth):
        """A sum over the inner loops (``Kernel.reduces``): the threads share the outermost
        loop, each walking the rest in order for its own indices (its own points)."""
        if kernel.reduces and depth == 0:
            name = kernel.dims[0].name
            start, stop = self.bounds(kernel, 0)
            return (f"{self.index} {name} = {start} + {thread_index('x')}", f"{name} <= {stop}",
                    f"{name} += {thread_stride('x')}")
        return super().loop_header(kernel, depth)

    def loop_pragmas(self, kernel, depth):
        return []   # device code: the launch shape is the parallelism

    def kernel_loops(self, k):
        """The nest as one thread per point (a few along the outermost dimension), innermost
        dimension on x, then y, then z."""
        if k.is_sparse:
            return self.sparse_part(k, "(sg_int)blockIdx.x", "(sg_int)gridDim.x")
        if k.sequential:
            return self.loop_nest(k)     # one thread walks the nest in order (a sum: some)
        if k.outer:
            return self._summing_loops(k)
        # no grid-stride loop: the launch covers the nest (in chunks of at most the grid's
        # limit, each starting at sg_base<axis>), which saves the integer work of grid-stride
        # loops (the acoustic so 8 kernel ran 1.6x faster on an H200)
        n, decls, inside = len(k.dims), [], []
        pairs = self.paired(k)
        body = self._split_body(k, pairs, point_pairs.body(self, k, pairs) if pairs else
                                self.guarded(k, [self.statement(a) for a in k.body]))
        for depth in range(n):
            name, i = k.dims[depth].name, n - 1 - depth
            start, stop = self.bounds(k, depth)
            here = f"{start} + sg_base{i} + {thread_index('xyz'[i])}"
            if pairs and depth == n - 1:   # two points a thread from an even index
                decls.append(c.Initializer(c.Value("const sg_int", point_pairs.START),
                                           point_pairs.first(start, thread_index("x"))))
                inside.append(f"{point_pairs.START} <= {stop}")
                continue
            if depth != self.stacked(k) or n == 1:
                decls.append(c.Initializer(c.Value("const sg_int", name), here))
                inside.append(f"{name} <= {stop}")
                continue
            decls.append(c.Initializer(c.Value("const sg_int", "sg_first"),
                                       f"{start} + sg_base{i} + sg_r*({thread_index('xyz'[i])})"))
            inside.append(f"sg_first <= {stop}")
            body = self._pairs(name, stop, body)
        return c.Block(decls + [c.If(" && ".join(inside), c.Block(body))])

    def sparse_part(self, k, block: str, blocks: str):
        """Sparse kernel ``k`` as a grid-stride loop over its points, this block being number
        ``block`` of ``blocks`` (C text: a launch of its own, or its part of a group's)."""
        p, npoint = k.point.name, self.program.array(k.sparse).layout.npoint
        return c.For(f"sg_int {p} = {block}*(sg_int)blockDim.x + (sg_int)threadIdx.x",
                     f"{p} < {npoint}", f"{p} += (sg_int)blockDim.x*{blocks}",
                     c.Block(self.sparse_body(k)))

    def _summing_loops(self, k):
        """A nest summing over its ``k.outer`` outermost loops (a batch's shots into a
        model-sized gradient): a thread per point of the other loops (``sg_r`` of them along
        ``stacked``) walks the summed ones in order, each sum kept in a register and added to
        its array once (a point two threads compute, by the one whose group it starts in). The
        launch is one thread deep along the summed axes."""
        n, m, along = len(k.dims), k.outer, self.stacked(k)
        many = self.points(k) > 1
        decls, inside = [], []
        for depth in range(n):
            i = n - 1 - depth
            if depth < m:
                inside.append(f"{thread_index('xyz'[i])} == 0")
                continue
            start, stop = self.bounds(k, depth)
            name = k.dims[depth].name
            if many and depth == along:
                decls.append(c.Initializer(c.Value("const sg_int", "sg_first"),
                                           f"{start} + sg_base{i} + sg_r*({thread_index('xyz'[i])})"))
                inside.append(f"sg_first <= {stop}")
                continue
            decls.append(c.Initializer(c.Value("const sg_int", name),
                                       f"{start} + sg_base{i} + {thread_index('xyz'[i])}"))
            inside.append(f"{name} <= {stop}")
        sums = self._sums(k)
        regs = {t: f"{acc}[sg_k]" if many else acc for t, acc in sums.items()}
        own = self.guarded(k, [self._summed(a, regs) for a in k.body])
        body = self._split_body(k, None, own, lambda a: self._summed(a, regs))

        def each_point(lines, mine=False):
            """``lines`` at each of the thread's points along ``along``; ``mine``: only at
            those the group before does not also compute."""
            if not many:
                return lines
            name = k.dims[along].name
            inner = c.If(f"{name} >= sg_first", c.Block(lines)) if mine else c.Block(lines)
            return point_loop(name, [inner])
        body = c.Block(each_point(body))
        for depth in reversed(range(m)):
            name, (start, stop) = k.dims[depth].name, self.bounds(k, depth)
            body = c.For(f"sg_int {name} = {start}", f"{name} <= {stop}", f"++{name}", body)
        real = ctype(self.program.dtype)
        head = [c.Initializer(c.Value(real, f"{acc}[sg_r]" if many else acc),
                              "{}" if many else "0") for acc in sums.values()]
        if many:
            head.append(group_start(self.bounds(k, along)[1]))
        tail = []
        for target, acc in sums.items():
            name = target.base.name
            place = self.printer.target(target)
            tail.append(c.Assign(place, self.printer.rounded(
                name, f"{self.printer.widened(name, place)} + {regs[target]}")))
        return c.Block(decls + [c.If(" && ".join(inside),
                                     c.Block(head + [body] + each_point(tail, True)))])

    def _sums(self, k) -> dict:
        """Store -> register name of each sum of nest ``k`` over its outer loops: a store into
        an array that does not span them, written as the array plus a term (an Inc) of a real
        type; the others stay read-modify-writes in the loop."""
        out, summed = {}, set(range(k.outer))
        bodies = k.body + (k.split.body if k.split is not None else ())
        for a in bodies:
            if a.is_local or a.lhs in out:
                continue
            arr = self.program.array(a.lhs.base.name)
            if arr.axes and not summed & set(arr.axes) and np.dtype(arr.dtype).kind == "f" \
                    and not (a.rhs - a.lhs).has(a.lhs):
                out[a.lhs] = f"sg_sum{len(out)}"
        return out

    def _summed(self, a, sums):
        """Statement ``a`` of a summing nest: its term added to the register of its sum."""
        if a.is_local or a.lhs not in sums:
            return self.statement(a)
        return c.Statement(f"{sums[a.lhs]} += {self.expr(a.rhs - a.lhs)}")

    def _split_body(self, k, pairs, own, statement=None):
        """``own`` (a point's or a pair's statements), or where ``k`` is split at run time a
        test of the point (both points of a pair) against its zero box, the split body
        inside it; ``own`` alone where the split body would not pair as ``own`` does.
        ``statement``: how a statement prints (a summing nest's: ``_summed``)."""
        if k.split is None:
            return own
        inner = dataclasses.replace(k, body=k.split.body, split=None)
        names = [d.name for d in k.dims]
        if pairs:
            plan = point_pairs.plan(self, inner)
            if plan is None:
                return own
            first = names[:-1] + [point_pairs.START]
            test = zero_split.test(" && ".join([
                zero_box.inside(k, first),
                zero_box.inside(k, names[:-1] + [f"{point_pairs.START} + 1"])]))
            split_body = point_pairs.body(self, inner, plan)
        else:
            test = zero_split.test(zero_box.inside(k, names))
            split_body = self.guarded(k, [(statement or self.statement)(a)
                                          for a in k.split.body])
        return [c.Comment("inside the zero box: the split body"),
                c.If(test, c.Block(split_body), c.Block(own))]

    @staticmethod
    def _pairs(name, stop, body):
        """``body`` at sg_r consecutive points along dimension ``name`` (``stacked``)."""
        return [
            c.Comment(f"sg_r consecutive points along {name} (nvcc loads what they share once); "
                      f"the last group ends at {stop}, overlapping the one before it: those "
                      "points are computed twice, to the same values"),
            group_start(stop)] + point_loop(name, body)

    def threads(self, k) -> int:
        if k.is_sparse or k.sequential and k.reduces:
            return SPARSE_BLOCK
        if k.sequential:
            return 1
        return THREADS

    def device_kernel(self, k, args):
        """The ``__global__`` function of one section, a template over its index type."""
        params = ",\n    ".join(f"{a.ctype} {a.name}" for a in args)
        if k.fusion:
            with self._printing(k):
                return fused_nests.FusedKernel(self, k).text(args)
        with self._printing(k):
            loops = "\n".join(indent(str(self.kernel_loops(k)).splitlines()))
        return (f"/* {k.name}: {k.flops} flops, {k.bytes} bytes per point */\n"
                f"template <typename sg_int, int sg_r{zero_split.template_param(k)}>\n"
                f"static __global__ void __launch_bounds__({self.threads(k)})\n"
                f"{k.section.function}({params})\n{{\n  {GRID_WAIT}\n{loops}\n}}\n")
