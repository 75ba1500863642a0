"""The host program of the CUDA backend: the entry point's signature and layouts, the setup, the
time loop with its launches (one step or two a pass, halo exchanges, shells), the finite
checks, the timers read back and the cleanup, and the source put together (``emit``). A part
of ``CudaBackend``, mixed into it."""
from __future__ import annotations

import cgen as c
import numpy as np

from . import fused_nests, kernel_text, sparse_kernels, step_passes, zero_split
from ..common import device_layout, interrupt, split
from ..common.cprinter import COMPLEX_CXX, time_loop_header
from .kernel_text import (
    EVENT_SLOTS, SHAPES, SPARSE_BLOCK, TIMER_SAMPLE, DEBUG_PRELUDE, OOB_REPORT, PRELUDE,
    RECIPROCAL_PRELUDE, STICKY, indent, format_prelude)


class HostProgram:
    """``CudaBackend``'s host program: setup, time loop, checks, timers, cleanup, the source."""

    def param_type(self, p) -> str:
        return super().param_type(p).replace("restrict", "__restrict__")

    def signature(self, export='extern "C" '):
        return super().signature(export)

    def layouts(self):
        """Host-side strides, element counts and origins of each array, its device layout and
        the pointer to its first domain point."""
        lines = []
        for a in self.program.arrays:
            lay, real = a.layout, self.ctypes[a.name]
            lines += [str(s) for s in self.strides(a)]
            lines += [f"const long {n} = {self.printer.index_expr(v)};"
                      for n, v in (lay.count, lay.origin)]
            if a.sparse:
                lines.append(f"double *{lay.device_coords} = NULL;")
            start = f"{lay.origin[0]}"
            if self.pitched(a):
                lines += device_layout.declarations(a, self.program.dims[-1].size,
                                                    self.printer.index_expr)
                start = device_layout.origin(a, self._inner_first(a))
            if self.options.debug:   # offsets from the first domain point, in the allocation
                lines += [f"const long sg_{a.name}_lo = -({start});",
                          f"const long sg_{a.name}_hi = {self._length(a)} - ({start});"]
            lines.append(f"{real} *const {a.name} = {lay.vec} + {start};")
        return lines

    def _inner_first(self, a) -> str | None:
        """The global index of this rank's first point along the innermost dimension, where
        the split array ``a`` is indexed from it (its origin is then not a whole row)."""
        d = self.program.dims[-1]
        return d.first if a.split and d.first is not None else None

    def _length(self, a) -> str:
        """Elements of the device copy of ``a``."""
        return device_layout.Pitched(a.name).length if self.pitched(a) else a.layout.count[0]

    def _coord_bytes(self, a):
        return f"(size_t){a.layout.npoint}*{a.coords_width(len(self.program.dims))}*sizeof(double)"

    def _nvtx(self, name, lines):
        if not self.options.nvtx:
            return lines
        return [f'nvtxRangePushA("{name}");'] + lines + ["nvtxRangePop();"]

    def setup(self):
        """The sparse coordinates to the GPU (the arrays are there already)."""
        lines = []
        if self.options.debug:
            lines += ["const sg_oob_record sg_clear = {};",
                      "SG_CHECK(cudaMemcpyToSymbol(sg_oob, &sg_clear, sizeof(sg_clear)));"]
        copies = []
        for a in self.program.arrays:
            if a.sparse:
                lay = a.layout
                dc, nb = lay.device_coords, self._coord_bytes(a)
                copies += [f"SG_CHECK(cudaMalloc((void **)&{dc}, {nb}));",
                           f"SG_CHECK(cudaMemcpy({dc}, {lay.coords}, {nb}, "
                           "cudaMemcpyHostToDevice));"]
        for k in self.program.kernels + ((self.passed,) if self.passed else ()):
            if k.fusion:
                lines += fused_nests.FusedKernel(self, k).attributes()
        return lines + self._nvtx("coordinates", copies)

    def _is_pass(self, k) -> bool:
        """Whether ``k`` is the two-step pass (``cuda_steps``)."""
        return self.passed is not None and k.name == self.passed.name

    def time_loop_lines(self, launches):
        prog = self.program
        lines = ["for ({}; {}; {}) {{".format(*time_loop_header(prog))]
        lines += indent([str(s) for s in self.time_slots()])
        for k in prog.steps:
            lines += indent(self.exchanged(k, launches[k.section.timer], prog.time.name))
        # the steps launched are the steps done: the copies back wait for all of them
        lines += indent([interrupt.step_end(prog)]) + ["}"]
        if self.stepped is None:
            return lines
        k = self.stepped
        return step_passes.setup(self, k) + ["if (sg_two) {"] + \
            indent(step_passes.loop(self, k)) + ["} else {"] + indent(lines) + ["}"]

    def stepped_launches(self) -> tuple:
        """The launch lines of the loop of passes (``step_passes.loop``), through the level
        table: the pass, the one-step nest, the one-step nest again after a pass (timed where
        the pass was: with the two alternating, one launch in SG_SAMPLE sampled would hold
        passes alone), the sparse kernels of a step in order."""
        k, pk, grouped = self.stepped, self.passed, self.sparse_groups()
        with self.leveled():
            one = self.launch(pk, self.kernel_args(pk))
            args = self.kernel_args(k)
            step = self.launch(k, args)
            again = self.launch(k, args, timed="sg_pass_timed")
            sparse, grouped_in = [], {m.name for ms in grouped.values() for m in ms}
            for o in self.program.steps:
                if o in grouped:
                    members = grouped[o]
                    sparse += sparse_kernels.launch(self, members, sparse_kernels.parameters(
                        self, members), SPARSE_BLOCK, kernel_text.GRID_LIMIT[0])
                elif o.is_sparse and o.name not in grouped_in:
                    sparse += self.launch(o, self.kernel_args(o))
        return one, step, again, sparse

    def exchanged(self, k, launches, time: str) -> list[str]:
        """The launch lines of kernel ``k`` (``launches``: the plain ones and the shell's) with
        the halo exchanges it needs around it (a split grid, ``split.nest``): posted, the
        interior launched, waited for, the shell."""
        launch, shell = launches
        if shell is not None:
            shell = ([c.Line("bool sg_timed = false;")], c.Line("\n".join(shell)),
                     [c.Line(f"if (sg_timed) SG_TIMER_STOP({k.section.timer});")])
        parts = split.nest(self.program, k, time, c.Line("\n".join(launch)), shell)
        if len(parts) == 1:
            return launch
        return [ln for p in parts for ln in str(p).splitlines()]

    def shell_launch(self, k, args):
        """The lines that launch a slab of nest ``k``'s shell on a split grid, or None (no
        split, or a nest launched otherwise). The shell's slabs run side by side, each on a
        blocking stream of its own: a slab a few points thin fills a fraction of the GPU,
        and one after another each paid its launch and its last wave (overlap mode: 5 % of
        a (2, 2, 1) SA-TTI step on 4 H200s). Blocking streams follow the kernels before them
        on the legacy stream, and those after wait for them."""
        if not self.program.split or k.is_sparse or k.sequential or k.fusion:
            return None
        return self.launch(k, args, shell=True)

    def finish(self):
        """Wait for the last kernel, read the remaining timer events, count NaN/Inf."""
        nk = max(len(self.program.kernels), 1)
        lines = [
            'SG_CHECK_AS(cudaDeviceSynchronize(), "cudaDeviceSynchronize() after the last kernel '
            '(an earlier kernel failed)");',
            f"for (int sg_i = 0; sg_i < {nk}; ++sg_i) {{",
            "  for (long sg_k = sg_used[sg_i] > SG_SLOTS ? sg_used[sg_i] - SG_SLOTS : 0; "
            "sg_k < sg_used[sg_i]; ++sg_k) {",
            "    float sg_ms = 0.0f;",
            "    SG_CHECK(cudaEventElapsedTime(&sg_ms, sg_events[sg_i][sg_k % SG_SLOTS][0], "
            "sg_events[sg_i][sg_k % SG_SLOTS][1]));",
            "    sg_sampled[sg_i] += 1.0e-3*sg_ms;",
            "  }",
            "  if (sg_used[sg_i])",
            f"    {self.program.timers}[sg_i] += sg_sampled[sg_i]*sg_launched[sg_i]/sg_used[sg_i];",
            "}",
        ]
        return lines + self.finite_checks()

    def finite_checks(self):
        """Where the caller asks: NaN/Inf counted on the GPU in each checked array's range."""
        prog, ck, n = self.program, self.program.checks_param, len(self.program.checks)
        if not n:
            return []
        lines = [f"if ({ck}) {{",
                 f"  SG_CHECK(cudaMalloc((void **)&sg_d_checks, {n}*sizeof(unsigned long long)));",
                 f"  SG_CHECK(cudaMemset(sg_d_checks, 0, {n}*sizeof(unsigned long long)));"]
        for i, name in enumerate(prog.checks):
            a = prog.array(name)
            if np.dtype(a.dtype).kind in "iu":   # integers are always finite: the count stays 0
                continue
            start, count = f"{ck}[{3 * i}]", f"{ck}[{3 * i + 1}]"
            if self.pitched(a):   # whole rows on the host: the same rows, pads included
                p = device_layout.Pitched(name)
                start, count = p.offset(start), f"{count}/{p.width}*{p.pitch}"
            lines += [f"  if ({ck}[{3 * i + 1}] > 0)",
                      f"    sg_nonfinite<<<sg_blocks({count}, 256, 4096L), 256>>>"
                      f"({a.layout.vec} + {start}, {count}, sg_d_checks + {i});"]
        lines += ['  SG_CHECK_AS(cudaGetLastError(), "launch of the NaN/Inf count");',
                  "  unsigned long long sg_counts[%d];" % n,
                  "  SG_CHECK(cudaMemcpy(sg_counts, sg_d_checks, sizeof(sg_counts), "
                  "cudaMemcpyDeviceToHost));"]
        lines += [f"  {ck}[{3 * i + 2}] = (long)sg_counts[{i}];" for i in range(n)]
        return lines + ["}"]

    def cleanup(self):
        nk = max(len(self.program.kernels), 1)
        lines = [
            "sg_cleanup:",
            f"for (int sg_i = 0; sg_i < {nk}; ++sg_i)",
            "  for (int sg_k = 0; sg_k < SG_SLOTS; ++sg_k)",
            "    for (int sg_j = 0; sg_j < 2; ++sg_j)",
            "      if (sg_events[sg_i][sg_k][sg_j])",
            "        sg_release(cudaEventDestroy(sg_events[sg_i][sg_k][sg_j]), "
            "\"cudaEventDestroy\", &sg_status);",
        ]
        lines.append('if (sg_d_checks) sg_release(cudaFree(sg_d_checks), "cudaFree(sg_d_checks)", '
                     "&sg_status);")
        if self.stepped is not None:
            lines += step_passes.cleanup(self.stepped)
        if self.program.split:
            lines += [f"for (int sg_i = 0; sg_i < {split.region_count(self.program) - 1}; ++sg_i)",
                      "  if (sg_shells[sg_i]) sg_release(cudaStreamDestroy(sg_shells[sg_i]), "
                      "\"cudaStreamDestroy\", &sg_status);"]
        for a in self.program.arrays:
            ptr = a.layout.device_coords
            if ptr:
                lines.append(f"if ({ptr}) sg_release(cudaFree({ptr}), \"cudaFree({ptr})\", "
                             "&sg_status);")
        return lines + ["return sg_status;"]

    def host_body(self, launches):
        prog = self.program
        nk = max(len(prog.kernels), 1)
        lines = ["int sg_status = 0;", "sg_error_text[0] = '\\0';"] + self.layouts()
        lines += self.narrow_choice()
        lines += zero_split.host_lines(self, self.launch_shapes(), prog.tuning)
        lines += [f"cudaEvent_t sg_events[{nk}][SG_SLOTS][2] = {{}};", f"long sg_used[{nk}] = {{}};",
                  f"long sg_launched[{nk}] = {{}};", f"double sg_sampled[{nk}] = {{}};",
                  "bool sg_timing = false;",
                  "unsigned long long *sg_d_checks = NULL;"]
        if self.stepped is not None:
            k = self.stepped
            lines += step_passes.declarations(k, self.ctypes[k.steps.field])
        if prog.split:   # the shell's slabs, each on a stream of its own (``shell_launch``)
            lines.append(f"cudaStream_t sg_shells[{split.region_count(prog) - 1}] = {{}};")
        lines += [str(s) for s in self.complex_scalars() + self.prologue()]
        lines += [str(s) for s in split.start(prog)]
        main = self.setup()
        start, end = prog.time_bounds if prog.has_time_loop else ("0", "0")
        for k in prog.before:
            main += self.exchanged(k, launches[k.section.timer], start)
        if prog.has_time_loop:
            main += self.time_loop_lines(launches)
        for k in prog.after:
            main += self.exchanged(k, launches[k.section.timer], end)
        main += self.finish()
        if prog.split:   # an exchange failed: the time loop stopped
            main.append(f"if ({split.FAILED} && !sg_status) sg_status = {split.EXCHANGE_FAILED};")
        return lines + ["{"] + indent(main) + ["}"] + self.cleanup()

    def shape_tables(self) -> str:
        """The launch shapes of the grid nests, indexed by the tuning argument (``SHAPES``)."""
        ranks = sorted({len(k.dims) for k in self.program.kernels
                        if not (k.is_sparse or k.sequential or k.fusion)})
        lines = ["/* launch shapes: points per thread along the outermost dimension, then "
                 "threads per block (x, y, z) */"] if ranks else []
        for n in ranks:
            rows = ", ".join("{" + ", ".join(map(str, sh)) + "}" for sh in SHAPES[n])
            lines.append(f"static const int sg_shapes{n}[{len(SHAPES[n])}][{n + 1}] = {{{rows}}};")
        return "\n".join(lines) + "\n"

    def emit(self) -> str:
        """The whole translation unit: prelude, one kernel per section, the host entry point."""
        header = (f"/* {self.program.name}: generated by stencilgen ({self.language} backend) */\n"
                  "#include <cuda_runtime.h>\n#include <math.h>\n#include <stdio.h>\n"
                  "#include <stddef.h>\n")
        if self.options.nvtx:
            header += "#include <nvtx3/nvToolsExt.h>\n"
        header += "".join(format_prelude(f) for f in sorted(set(self.stored.values())))
        header += RECIPROCAL_PRELUDE
        if self.complex:
            header += "#define SG_HD __host__ __device__\n" + COMPLEX_CXX
        fused = [k for k in self.program.kernels if k.fusion is not None]
        fused += [self.passed] if self.passed is not None else []
        if any(k.fusion.pair > 1 for k in fused):
            header += fused_nests.PAIR_PRELUDE
        if any(k.fusion.interleave for k in fused):
            header += fused_nests.QUAD_PRELUDE
        parts = [header, PRELUDE % {"sticky": ", ".join(STICKY), "slots": EVENT_SLOTS,
                                     "sample": TIMER_SAMPLE},
                 self.shape_tables(), interrupt.handler('extern "C" ')]
        if self.program.split or self.program.zero_boxes:
            parts.append(split.helpers("static inline __host__ __device__") + "\n")
        if self.options.debug:
            names = ", ".join(f'"{a.name}"' for a in self.program.arrays)
            parts += [DEBUG_PRELUDE, OOB_REPORT % {"names": names}]
        launches, grouped = {}, self.sparse_groups()
        for first, members in grouped.items():
            args = sparse_kernels.parameters(self, members)
            parts.append(sparse_kernels.device_kernel(self, members, args, SPARSE_BLOCK))
            launches[first.section.timer] = (
                sparse_kernels.launch(self, members, args, SPARSE_BLOCK,
                                      kernel_text.GRID_LIMIT[0]), None)
            launches.update({k.section.timer: ([], None) for k in members[1:]})
        for k in self.program.kernels:
            if k.section.timer in launches:
                continue
            args = self.kernel_args(k)
            parts.append(self.device_kernel(k, args))
            launches[k.section.timer] = (self.launch(k, args), self.shell_launch(k, args))
        if self.stepped is not None:
            parts.append(self.device_kernel(self.passed, self.kernel_args(self.passed)))
        body = self.host_body(launches)
        parts.append(str(self.signature()).rstrip(";") + "\n{\n" +
                     "\n".join("  " + ln if ln and not ln.endswith(":") and not ln.startswith("#")
                               else ln for ln in body)
                     + "\n}\n")
        return "\n".join(parts)
