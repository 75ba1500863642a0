"""The OpenACC backend: the C backend's loop nests with OpenACC directives, for nvc++ or GCC.

One data region around all sections copies each array in once and the written ones out once;
every loop nest is a ``parallel loop`` (collapsed, gang vector) with ``present`` clauses, and
sparse injection adds with ``atomic update``. Arrays are indexed from their base pointer
(``u_vec[u_o + ...]``) so the data clauses name exactly what the kernels touch. The source is
valid C and C++ (nvc++ compiles it as C++), and exports ``stencilgen_acc_device`` so the
Operator can report where compute regions really ran.
"""
from __future__ import annotations

import cgen as c
import sympy

from stencilgen.ir.nodes import SparseKernel

from .c import CBackend
from .cprinter import CPrinter
from .options import EmitOptions

_PREAMBLE = """\
#ifdef __cplusplus
#define restrict __restrict
#define STENCILGEN_EXPORT extern "C"
#else
#define STENCILGEN_EXPORT
#endif

/* wall-clock seconds; compute regions are synchronous, so a section's time includes the device's */
static double stencilgen_wtime(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1.0e-9*(double)ts.tv_nsec;
}

/* Host builds (STENCILGEN_ACC_HOST: gcc -foffload=disable) hold no device code, so they select
   the host even where the runtime finds a GPU; device builds take the GPU back if one is there. */
static void stencilgen_acc_select(void)
{
#ifdef STENCILGEN_ACC_HOST
  acc_set_device_type(acc_device_host);
#else
  if (acc_get_device_type() == acc_device_host && acc_get_num_devices(acc_device_not_host) > 0)
    acc_set_device_type(acc_device_not_host);
#endif
}

/* 1 when compute regions run on an accelerator, as the OpenACC runtime reports it from inside one */
STENCILGEN_EXPORT int stencilgen_acc_device(void)
{
  int on = 0;
  stencilgen_acc_select();
  #pragma acc parallel num_gangs(1) copy(on)
  {
    on = acc_on_device(acc_device_not_host);
  }
  return on;
}

/* how many non-host devices the OpenACC runtime sees */
STENCILGEN_EXPORT int stencilgen_acc_devices(void)
{
  return acc_get_num_devices(acc_device_not_host);
}
"""


class _BasePrinter(CPrinter):
    """Prints grid-array accesses from the base pointer plus the origin offset: ``u_vec[u_o + ...]``."""

    def __init__(self, dtype, strides, sparse):
        super().__init__(dtype, strides)
        self.sparse = sparse

    def _print_Indexed(self, expr):
        text = super()._print_Indexed(expr)
        name = expr.base.name
        inner = text[len(name) + 1:]
        if name in self.sparse:
            return f"{name}_vec[{inner}"
        return f"{name}_vec[{name}_o + {inner}"


class OpenACCBackend(CBackend):
    """Prints a Program as C with OpenACC directives (the C backend's printer and loop nests)."""

    name = "openacc"
    language = "OpenACC"
    source_suffix = ".c"     # nvc++ builds take ``.cpp`` from their toolchain

    def __init__(self, program, options: EmitOptions = EmitOptions()):
        super().__init__(program, options)
        sparse = {a.name for a in program.arrays if a.sparse}
        self.printer = _BasePrinter(program.dtype, self._strides(), sparse)

    # -- data ------------------------------------------------------------------------------
    def array_views(self):
        """Strides, origin offset (``u_o``, first domain point) and length of every array."""
        lines = []
        dims = self.program.dims
        for a in self.program.arrays:
            if a.sparse:
                n = f"{a.name}_np"
                lines.append(c.Initializer(c.Value("const long", f"{a.name}_len"),
                                           f"{a.time_size}*{n}" if a.time_size else n))
                continue
            extents = [f"({d.name}_size + 2*{a.name}_h{i})" for i, d in enumerate(dims)]
            for i in range(len(dims) - 1):
                lines.append(c.Initializer(c.Value("const long", f"{a.name}_s{i}"),
                                           "*".join(extents[i + 1:][::-1])))
            volume = "*".join(extents[::-1])
            if a.time_size is not None:
                lines.append(c.Initializer(c.Value("const long", f"{a.name}_st"), volume))
                volume = f"{a.time_size}*{a.name}_st"
            lines.append(c.Initializer(c.Value("const long", f"{a.name}_len"), volume))
            origin = " + ".join(f"{a.name}_h{i}*" + (f"{a.name}_s{i}" if i < len(dims) - 1 else "1")
                                for i in range(len(dims)))
            lines.append(c.Initializer(c.Value("const long", f"{a.name}_o"), origin))
        return lines

    @staticmethod
    def _section(name):
        return f"{name}_vec[0:{name}_len]"

    def _coords(self, sparse):
        return f"{sparse}_coords[0:{sparse}_np*{len(self.program.dims)}]"

    @staticmethod
    def _arrays_in(exprs):
        names = set()
        for e in exprs:
            names |= {a.base.name for a in e.atoms(sympy.Indexed)}
            if isinstance(e, sympy.Indexed):
                names.add(e.base.name)
        return names

    def _present(self, kernel):
        """The ``present`` clause naming every array (and coordinate list) the kernel touches."""
        if isinstance(kernel, SparseKernel):
            names = self._arrays_in([kernel.target, kernel.expr]) | {kernel.sparse}
            extra = [self._coords(kernel.sparse)]
        else:
            names = self._arrays_in([e for a in kernel.body for e in (a.lhs, a.rhs)])
            extra = []
        order = [a.name for a in self.program.arrays if a.name in names]
        return f"present({', '.join([self._section(n) for n in order] + extra)})"

    def data_clauses(self):
        """copyin for arrays only read (and temporaries, whose zero halo must reach the device),
        copy for written arrays; sparse coordinates copyin."""
        written = set()
        for k in self.program.kernels:
            written |= set(k.writes)
        copy = [self._section(a.name) for a in self.program.arrays
                if a.name in written and not a.temporary]
        copyin = [self._section(a.name) for a in self.program.arrays
                  if a.name not in written or a.temporary]
        copyin += [self._coords(a.name) for a in self.program.arrays if a.sparse]
        clauses = []
        if copyin:
            clauses.append(f"copyin({', '.join(copyin)})")
        if copy:
            clauses.append(f"copy({', '.join(copy)})")
        return " ".join(clauses)

    # -- pragma hooks ------------------------------------------------------------------------
    def includes(self):
        return [c.Include(h) for h in ("math.h", "stdlib.h", "time.h", "openacc.h")]

    def signature(self):
        decl = super().signature()
        return c.FunctionDeclaration(c.Value("STENCILGEN_EXPORT int", self.program.name),
                                     decl.arg_decls)

    def loop_pragmas(self, kernel, depth):
        if depth != 0:
            return []
        n = len(kernel.dims)
        collapse = f" collapse({n})" if n > 1 else ""
        length = self.options.vector_length
        vl = f" vector_length({length})" if length else ""
        return [c.Pragma(f"acc parallel loop{collapse} gang vector{vl} {self._present(kernel)}")]

    def sparse_pragmas(self, kernel):
        return [c.Pragma(f"acc parallel loop gang vector {self._present(kernel)}")]

    def atomic_add(self, target, value):
        return [c.Pragma("acc atomic update"), c.Statement(f"{target} += {value}")]

    def sparse_loop(self, k):
        """The C backend's point loop, its 2**ndim corner loops marked sequential per point."""
        module = super().sparse_loop(k)
        point_loop = module.contents[-1]
        point_loop.body.contents = [_seq(s) for s in point_loop.body.contents]
        return module

    clock = "stencilgen_wtime()"

    def settle(self):
        return [c.Pragma("acc wait")]

    def body(self):
        prog = self.program
        nb, ns = len(prog.before), len(prog.steps)
        inside = self.sections(prog.before, 0)
        if prog.has_time_loop:
            inside.append(self.time_loop(self.sections(prog.steps, nb)))
        inside += self.sections(prog.after, nb + ns)
        return (self.array_views() + self.prologue() +
                [c.Statement("stencilgen_acc_select()"),
                 c.Comment("arrays move to the device once, and the written ones back once"),
                 c.Pragma(f"acc data {self.data_clauses()}"), c.Block(inside),
                 c.Statement("return 0")])

    def emit(self) -> str:
        header = c.Comment(f"{self.program.name}: generated by stencilgen ({self.language} backend)")
        fn = c.FunctionBody(self.signature(), c.Block(self.body()))
        return str(c.Module([header] + self.includes() + [c.Line(), c.Line(_PREAMBLE), fn])) + "\n"


def _seq(node):
    """``node`` with ``#pragma acc loop seq`` before it (and its nested loops) if it is a loop."""
    if isinstance(node, c.For):
        node.body = _seq(node.body)
        return c.Module([c.Pragma("acc loop seq"), node])
    return node
