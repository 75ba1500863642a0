"""The C/OpenMP backend: one OpenMP-parallel loop nest per kernel, a SIMD innermost loop.

The entry point takes every array with its run-time halo widths, the domain sizes, the
iteration bounds, the time bounds and scalars, and accumulates each section's wall time
into ``timers``. Emission goes through cgen.
"""
from __future__ import annotations

import cgen as c

from stencilgen.ir.nodes import SparseKernel

from .cprinter import CPrinter
from .options import EmitOptions


class CBackend:
    """Prints a Program as C99 with OpenMP; also the base of the other C-like backends."""

    name = "c"
    language = "C"
    source_suffix = ".c"

    def __init__(self, program, options: EmitOptions = EmitOptions()):
        self.program = program
        self.options = options
        self.real = program.real
        self.printer = CPrinter(program.dtype, self._strides())

    # -- names ---------------------------------------------------------------------------
    def _strides(self):
        """Per array: the C expression of each index's stride (innermost is 1)."""
        out = {}
        for a in self.program.arrays:
            if a.sparse:
                out[a.name] = ([f"{a.name}_np"] if a.time_size is not None else []) + ["1"]
                continue
            names = [f"{a.name}_s{i}" for i in range(a.ndim)]
            names[-1] = "1"
            if a.time_size is not None:
                names = [f"{a.name}_st"] + names
            out[a.name] = names
        return out

    def ctype(self, dtype) -> str:
        import numpy as np
        return "float" if np.dtype(dtype) == np.float32 else "double"

    # -- pieces ----------------------------------------------------------------------------
    def includes(self):
        return [c.Include("math.h"), c.Include("stdlib.h"), c.Include("omp.h")]

    def signature(self):
        args = []
        for p in self.program.parameters():
            if p.kind == "array":
                args.append(c.Value(f"{self.ctype(p.dtype)} *restrict", p.name))
            elif p.kind == "index":
                args.append(c.Value("const long", p.name))
            elif p.kind == "coords":
                args.append(c.Value("const double *restrict", p.name))
            elif p.kind == "scalar":
                args.append(c.Value(f"const {self.ctype(p.dtype)}", p.name))
            else:
                args.append(c.Value("double *restrict", p.name))
        return c.FunctionDeclaration(c.Value("int", self.program.name), args)

    def array_views(self):
        """Strides and the origin pointer (first domain point) of every array."""
        lines = []
        dims = self.program.dims
        for a in self.program.arrays:
            if a.sparse:
                lines.append(c.Initializer(c.Value(f"{self.ctype(a.dtype)} *restrict", a.name),
                                           f"{a.name}_vec"))
                continue
            extents = [f"({d.name}_size + 2*{a.name}_h{i})" for i, d in enumerate(dims)]
            stride = "1"
            strides = []
            for ext in reversed(extents):
                strides.append(stride)
                stride = f"{stride}*{ext}" if stride != "1" else ext
            strides.reverse()
            for i, s in enumerate(strides[:-1]):
                lines.append(c.Initializer(c.Value("const long", f"{a.name}_s{i}"), s))
            if a.time_size is not None:
                lines.append(c.Initializer(c.Value("const long", f"{a.name}_st"), stride))
            origin = " + ".join(f"{a.name}_h{i}*" + (f"{a.name}_s{i}" if i < len(dims) - 1 else "1")
                                for i in range(len(dims)))
            lines.append(c.Initializer(c.Value(f"{self.ctype(a.dtype)} *restrict", a.name),
                                       f"{a.name}_vec + {origin}"))
        return lines

    def prologue(self):
        return [c.Initializer(c.Value(f"const {self.real}", a.lhs.name), self.printer.doprint(a.rhs))
                for a in self.program.prologue]

    def statement(self, assign):
        rhs = self.printer.doprint(assign.rhs)
        if assign.is_local:
            return c.Initializer(c.Value(f"const {self.real}", assign.lhs.name), rhs)
        return c.Assign(self.printer.doprint(assign.lhs), rhs)

    def loop_pragmas(self, kernel, depth):
        """Pragmas before loop ``depth`` of ``kernel`` (0 = outermost)."""
        n = len(kernel.dims)
        if n == 1:
            return [c.Pragma("omp parallel for simd schedule(static)")]
        if depth == 0:
            collapse = " collapse(2)" if n == 3 else ""
            return [c.Pragma(f"omp parallel for{collapse} schedule(static)")]
        if depth == n - 1:
            return [c.Pragma("omp simd")]
        return []

    def loop_nest(self, kernel):
        body = c.Block([self.statement(a) for a in kernel.body])
        for depth in reversed(range(len(kernel.dims))):
            d = kernel.dims[depth]
            lo, hi = kernel.widened[depth]
            start = f"{d.name}_m - {lo}" if lo else f"{d.name}_m"
            stop = f"{d.name}_M + {hi}" if hi else f"{d.name}_M"
            loop = c.For(f"long {d.name} = {start}", f"{d.name} <= {stop}", f"{d.name} += 1", body)
            body = c.Module(self.loop_pragmas(kernel, depth) + [loop])
        return body

    #: the wall clock the section timers read, and what must precede the second reading
    clock = "omp_get_wtime()"

    def settle(self):
        """Statements that make a section's work finished before its timer is read."""
        return []

    def timed(self, index, kernel, block):
        return c.Block([
            c.Comment(f"{kernel.name}: {kernel.flops} flops, {kernel.bytes} bytes per point"),
            c.Initializer(c.Value("const double", f"start_{kernel.name}"), self.clock),
            block,
            *self.settle(),
            c.Statement(f"timers[{index}] += {self.clock} - start_{kernel.name}"),
        ])

    def sparse_pragmas(self, kernel):
        return [c.Pragma("omp parallel for schedule(static)")]

    def atomic_add(self, target, value):
        """``target += value`` safe against other points adding to the same node."""
        return [c.Pragma("omp atomic update"), c.Statement(f"{target} += {value}")]

    def sparse_loop(self, k):
        """One iteration per point: locate its cell, visit the 2**ndim corners with weights."""
        real, dims, n = self.real, k.dims, len(k.dims)
        p = k.point.name
        body = []
        for i, d in enumerate(dims):
            body += [
                c.Initializer(c.Value("const double", f"pos_{d.name}"),
                              f"({k.sparse}_coords[{p}*{n} + {i}] - o_{d.name})/h_{d.name}"),
                c.Initializer(c.Value("const long", f"i_{d.name}"), f"(long)floor(pos_{d.name})"),
                c.Initializer(c.Value(f"const {real}", f"f_{d.name}"),
                              f"({real})(pos_{d.name} - i_{d.name})"),
            ]
        value = self.printer.doprint(k.expr)
        corner = [c.Initializer(c.Value("const long", d.name), f"i_{d.name} + c_{d.name}")
                  for d in dims]
        weight = "*".join(f"(c_{d.name} ? f_{d.name} : 1 - f_{d.name})" for d in dims)
        inside = " && ".join(f"{d.name} >= {d.name}_m && {d.name} <= {d.name}_M" for d in dims)
        corner.append(c.Initializer(c.Value(f"const {real}", "w"), weight))
        if k.kind == "inject":
            act = self.atomic_add(self.printer.doprint(k.target), f"w*({value})")
        else:
            body.append(c.Initializer(c.Value(real, "acc"), "0"))
            act = [c.Statement(f"acc += w*({value})")]
        inner = c.Block(corner + [c.If(inside, c.Block(act))])
        for d in reversed(dims):
            inner = c.For(f"int c_{d.name} = 0", f"c_{d.name} <= 1", f"c_{d.name} += 1", inner)
        body.append(inner)
        if k.kind == "interpolate":
            body.append(c.Assign(self.printer.doprint(k.target), "acc"))
        loop = c.For(f"long {p} = 0", f"{p} < {k.sparse}_np", f"{p} += 1", c.Block(body))
        return c.Module(self.sparse_pragmas(k) + [loop])

    def sections(self, kernels, first_index):
        return [self.timed(first_index + i, k,
                           self.sparse_loop(k) if isinstance(k, SparseKernel)
                           else self.loop_nest(k))
                for i, k in enumerate(kernels)]

    def time_loop(self, body):
        idx = [c.Initializer(c.Value("const long", ti.symbol.name),
                             f"(time + {ti.shift}) % {ti.modulo}")
               for ti in self.program.time_indices if ti.modulo is not None]
        return c.For("long time = time_m", "time <= time_M", "time += 1", c.Block(idx + body))

    def body(self):
        prog = self.program
        nb, ns = len(prog.before), len(prog.steps)
        parts = self.array_views() + self.prologue()
        parts += self.sections(prog.before, 0)
        if prog.has_time_loop:
            parts.append(self.time_loop(self.sections(prog.steps, nb)))
        parts += self.sections(prog.after, nb + ns)
        parts.append(c.Statement("return 0"))
        return parts

    def emit(self) -> str:
        """The whole translation unit."""
        header = c.Comment(f"{self.program.name}: generated by stencilgen ({self.language} backend)")
        fn = c.FunctionBody(self.signature(), c.Block(self.body()))
        return str(c.Module([header] + self.includes() + [c.Line(), fn])) + "\n"
