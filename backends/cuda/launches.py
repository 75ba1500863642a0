"""How the host launches the CUDA kernels: the launch shapes offered to the autotuner and their
defaults, the grid counted in blocks (chunks where a grid dimension exceeds its limit), the
index type chosen, the sections timed together. A part of ``CudaBackend``, mixed into it."""
from __future__ import annotations

from . import fused_nests, kernel_text, point_pairs, sparse_kernels, step_passes, zero_split
from ..common.cprinter import tuned_choice
from .kernel_text import (
    PAIRED_ARRAYS_MAX, SHAPES, SHELL_STREAM, SPARSE_BLOCK, indent, extent_text, touched_arrays)
from .launch import early


class Launches:
    """``CudaBackend``'s launches: shapes, defaults, grids, chunks, index types."""

    def launch(self, k, args, shell=False, timed: str | None = None):
        """Host code that launches section ``k`` (when its space is not empty), timed.
        ``shell``: as one slab of a split grid's shell (``shell_launch``): on the region's
        own stream, the timer started by the first slab and stopped after the last.
        ``timed``: C text of whether to time this launch (default: the section's sampling)."""
        name, timer = k.section.function, k.section.timer
        call, r = ", ".join(a.host for a in args), self.points(k)
        stream = SHELL_STREAM if shell else None
        launch = self._calls(k, call, r, stream) + \
            [f'SG_CHECK_AS(cudaGetLastError(), "launch of kernel {name}");']
        if k.is_sparse:
            sizes = [self.program.array(k.sparse).layout.npoint]
            head = [f"const dim3 sg_block({SPARSE_BLOCK});",
                    f"const dim3 sg_grid(sg_blocks(sg_n0, {SPARSE_BLOCK}, "
                    f"{kernel_text.GRID_LIMIT[0]}));"]
        else:
            # one thread deep along the loops a summing nest walks in order
            sizes = [self._extent(k, depth, s) if depth >= k.outer else "1"
                     for depth, s in reversed(list(enumerate(k.dims)))]
            if self.paired(k):   # threads along x: pairs of points
                sizes[0] = point_pairs.pair_count(sizes[0])
        if k.sequential and k.reduces:
            # a sum over the inner loops: threads along the outermost one (sg_n<last>)
            head = [f"const dim3 sg_block({SPARSE_BLOCK});",
                    f"const dim3 sg_grid(sg_blocks(sg_n{len(sizes) - 1}, {SPARSE_BLOCK}, "
                    f"{kernel_text.GRID_LIMIT[0]}));"]
        elif k.sequential:
            # a nest that must run in order: one thread walks it, outermost loop first
            ones = ", ".join("1" for _ in k.dims)
            head = [f"const dim3 sg_block({ones});", f"const dim3 sg_grid({ones});"]
        elif k.fusion:
            pick = step_passes.pass_pick(self.stepped, self.tuning) \
                if self._is_pass(k) else None
            head, launch = [], fused_nests.FusedKernel(self, k).launch(call, timer, pick)
        elif not k.is_sparse:
            head = self._shape(k, timer, r)
            launch = self._chunks(len(k.dims), launch, self._stacked_axis(k))
        start = f"SG_TIMER_START({timer});" if timed is None else \
            f"SG_TIMER_START_IF({timer}, {timed});"
        if shell:   # a timer event between the slabs would order them again
            start = [f"if (!sg_timed) {{ {start} sg_timed = true; }}",
                     f"if (!{stream}) SG_CHECK(cudaStreamCreate(&{stream}));"]
        body = head + ([start] if isinstance(start, str) else start) + launch
        if self.options.debug:
            body += [f'SG_CHECK_AS(cudaDeviceSynchronize(), "cudaDeviceSynchronize() after '
                     f'kernel {name}");',
                     f'if (sg_out_of_bounds("{name}", &sg_status)) goto sg_cleanup;']
        body = self._nvtx(k.name, body + ([] if shell else [f"SG_TIMER_STOP({timer});"]))
        cond = " && ".join(f"sg_n{i} > 0" for i in range(len(sizes)))
        lines = [f"/* {k.name} */"] + [f"const long sg_n{i} = {s};" for i, s in enumerate(sizes)]
        lines += [f"if ({cond}) {{"] + indent(body) + ["}"]
        if k.when is not None:   # a section that runs at some time steps only
            lines = [f"if ({self.expr(k.when)}) {{"] + indent(lines) + ["}"]
        return ["{"] + indent(lines) + ["}"]

    def _extent(self, k, depth, symbol) -> str:
        """C text of the points of loop ``depth`` of grid nest ``k`` (on a split grid, of the
        region it runs over: it may be empty, or negative)."""
        if k.fixed_at(depth) is not None:
            return "1"
        if self.program.split:
            start, stop = self.bounds(k, depth)
            return f"{stop} - {start} + 1"
        return extent_text(self.dims[symbol], k.span(depth))

    def launch_shapes(self) -> dict:
        def describe(k, shape):
            r = min(shape[0], self.points(k))
            where = f" ({r} along {k.dims[self.stacked(k)].name}, 2 along the innermost " \
                "dimension)" \
                if self.paired(k) else ""
            n = 2 * r if where else r
            return f"{n} point{'s' if n > 1 else ''} per thread" \
                f"{where}, {'x'.join(map(str, shape[1:]))} threads"
        def fused(k):
            one = tuple(fused_nests.describe(k, sh) for sh in fused_nests.shapes(k))
            if k is not self.stepped:
                return one
            pk = self.passed   # the pass's shapes after the one-step nest's
            return one + tuple(step_passes.describe(pk, sh) for sh in fused_nests.shapes(pk))
        out = {}
        for k in self.program.kernels:
            if k.is_sparse or k.sequential:
                continue
            own = fused(k) if k.fusion else tuple(describe(k, sh) for sh in SHAPES[len(k.dims)])
            out[k.section.timer] = zero_split.describe(own) if zero_split.offered(self, k) else own
        return out

    @property
    def trial_steps(self) -> int:
        """Steps an autotuning trial needs at least: with a two-step pass, an even number (the
        three of a trial would run a pass and a step alone, the pass's shape paying for the
        step)."""
        return 4 if self.stepped is not None else 0

    def default_shapes(self) -> dict:
        """Section timer -> the shape each offered section runs with when none is tuned (a
        split section: in the half of its default split, ``cuda_zero``)."""
        shapes = self.launch_shapes()
        return {k.section.timer: self.default_shape(k) + (
                    0 if not zero_split.offered(self, k) or zero_split.DEFAULT_ON
                    else len(shapes[k.section.timer]) // 2)
                for k in self.program.kernels if not (k.is_sparse or k.sequential)}

    def default_shape(self, k) -> int:
        """The launch shape of ``k`` when none is tuned: two points per thread for a nest that
        may compute several and touches few arrays (the acoustic so 8 kernel ran 6% faster on
        an H200; SA-TTI's nests, with 10-14 arrays and 90-250 flops per point, 5% slower)."""
        if k.fusion:
            return fused_nests.default_shape(k)
        n = len(k.dims)
        light = self.points(k) > 1 and self.slots(k).touched <= PAIRED_ARRAYS_MAX
        if k.outer:   # the first shape one thread deep along the loops walked in order
            fits = [j for j, shape in enumerate(SHAPES[n])
                    if all(shape[n - d] == 1 for d in range(k.outer))]
            return next((j for j in fits if (SHAPES[n][j][0] > 1) == light), fits[0])
        return 1 if light else 0

    def _shape(self, k, timer, r):
        """The block and points per thread of a grid nest: the tuned shape, else the default
        (a nest shorter than the points per thread along its outermost dimension: one)."""
        n, tuning = len(k.dims), self.tuning
        choices = len(SHAPES[n])
        pick = tuned_choice(tuning, timer, choices, self.default_shape(k))
        points = f"sg_shapes{n}[sg_s][0]"
        return [f"const long sg_s = {pick};",
                f"const long sg_r = {points} <= {r} && sg_n{self._stacked_axis(k)} >= {points} "
                f"? {points} : 1;",
                f"const dim3 sg_block({', '.join(f'sg_shapes{n}[sg_s][{i + 1}]' for i in range(n))});"]

    def _calls(self, k, call, r, stream=None):
        """The launch of ``k``'s instance for the index type chosen (``narrow_flag``), ``sg_r``
        points per thread and the zero split chosen (``cuda_zero``), on ``stream`` (else the
        legacy default stream)."""
        name, narrow = k.section.function, self.narrow_flag(k)

        def both(points, extra):
            return [f"if ({narrow}) {early(f'{name}<int, {points}{extra}>', call, stream=stream)}",
                    f"else {early(f'{name}<long, {points}{extra}>', call, stream=stream)}"]

        def each(extra):
            if r == 1:
                return both(1, extra)
            return [f"if (sg_r == {r}) {{"] + indent(both(r, extra)) + ["} else {"] + \
                indent(both(1, extra)) + ["}"]
        return zero_split.instances(self, k, each)

    @staticmethod
    def _chunks(n, launch, along=None):
        """``launch`` once per chunk of the nest that one grid can cover (almost always one):
        sg_b<axis> is where the chunk starts, sg_grid covers it (sg_r points per thread along
        thread axis ``along``, default the outermost)."""
        along = n - 1 if along is None else along
        per = [f"sg_block.{'xyz'[i]}" + ("*sg_r" if i == along and n > 1 else "")
               for i in range(n)]
        grid = ", ".join(f"sg_blocks(sg_n{i} - sg_b{i}, {p}, {kernel_text.GRID_LIMIT[i]})"
                         for i, p in enumerate(per))
        lines = [f"const dim3 sg_grid({grid});"] + launch
        for i in range(n):
            step = f"{kernel_text.GRID_LIMIT[i]}*{per[i]}"
            lines = [f"for (long sg_b{i} = 0; sg_b{i} < sg_n{i}; sg_b{i} += {step}) {{"] + \
                indent(lines) + ["}"]
        return lines

    def narrow_choice(self):
        """Whether each kernel's 32-bit instantiation may run (``narrow_flag``): every offset
        it computes fits in it. An array read through slot pointers counts one step's plane
        (a saved wavefield of many steps leaves its kernels 32-bit: the 64-bit instances of
        the acoustic gradient's nests ran 1.4x slower on an H200)."""
        prog, types = self.program, self.program.index_types
        lines = ["/* 32-bit index arithmetic in a kernel when every offset it computes fits */"]
        for i, k in enumerate(prog.kernels):
            views = self.slot_views(k)
            touched = touched_arrays(k)
            sizes = []
            for a in prog.arrays:
                if a.name not in touched:
                    continue
                sizes.append(self._device_stride(a, a.layout.strides[0][0])
                             if a.name in views else self._length(a))
                if a.sparse:
                    sizes.append(f"{a.layout.npoint}*{len(prog.dims)}")
            fits = " && ".join(f"{n} <= {types.narrow_limit}L" for n in sizes) or "true"
            lines.append(f"const bool {self.narrow_flag(k)} = {fits if types.narrow else 'false'};")
        return lines[:1] + ["#ifdef STENCILGEN_WIDE_INDEX"] + \
            [ln.split(" = ")[0] + " = false;" for ln in lines[1:]] + ["#else"] + lines[1:] + \
            ["#endif"]

    def timed_together(self) -> dict:
        """The sparse kernels launched with another (``cuda_sparse``), timed as its section."""
        return {k.name: first.name for first, members in self.sparse_groups().items()
                for k in members[1:]}

    def sparse_groups(self) -> dict:
        """First kernel -> the sparse kernels launched with it (``cuda_sparse``), found once."""
        if ("sparse", None) not in self._slots:
            prog, found = self.program, {}
            for kernels in (prog.before, prog.steps, prog.after):
                found.update(sparse_kernels.groups(self, kernels))
            self._slots[("sparse", None)] = found
        return self._slots[("sparse", None)]

    def narrow_flag(self, k) -> str:
        """The host variable saying whether kernel ``k`` runs its 32-bit instance."""
        if self._is_pass(k):   # the pass takes its nest's arrays: its nest's flag
            k = self.stepped
        return f"sg_narrow{self.program.kernels.index(k)}"
