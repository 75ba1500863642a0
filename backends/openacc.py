"""The OpenACC backend: the C backend's loop nests with OpenACC directives, for nvc++ or GCC.

One data region around all sections copies each array in once and the written ones out once,
unless the caller made it present (``stencilgen_acc_enter``: fields kept on the device between
applies, ``stencilgen.data.places``), when it moves nothing;
every loop nest is a ``parallel loop`` (collapsed, gang vector) with ``present`` clauses, and
sparse injection adds with ``atomic update``. Arrays are indexed from their base pointer
(``u_vec[u_o + ...]``) so the data clauses name exactly what the kernels touch. The source is
valid C and C++ (nvc++ compiles it as C++), and exports ``stencilgen_acc_device`` so the
Operator can report where compute regions really ran.
"""
from __future__ import annotations

import cgen as c

from .common import interrupt
from .c.backend import CBackend
from .common.cprinter import COMPLEX_C, COMPLEX_CXX, CPrinter, is_complex
from .common.options import EmitOptions

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

/* Fields kept on the device between applies: n bytes from p enter the present table (copied
   in), are copied either way, and leave it (the device copy freed, nothing copied back). */
STENCILGEN_EXPORT int stencilgen_acc_enter(char *p, size_t n)
{
  stencilgen_acc_select();
  #pragma acc enter data copyin(p[0:n])
  return 0;
}

STENCILGEN_EXPORT int stencilgen_acc_update(char *p, size_t n, int to_device)
{
  if (to_device) {
    #pragma acc update device(p[0:n])
  } else {
    #pragma acc update self(p[0:n])
  }
  return 0;
}

STENCILGEN_EXPORT int stencilgen_acc_exit(char *p, size_t n)
{
  #pragma acc exit data delete(p[0:n])
  return 0;
}

/* free and total bytes of the current device (0 where the runtime cannot say) */
STENCILGEN_EXPORT int stencilgen_acc_meminfo(size_t *free_bytes, size_t *total_bytes)
{
  *free_bytes = *total_bytes = 0;
#if defined(_OPENACC) && _OPENACC >= 201711
  if (acc_get_device_type() != acc_device_host) {
    const int dev = acc_get_device_num(acc_get_device_type());
    *free_bytes = acc_get_property(dev, acc_get_device_type(), acc_property_free_memory);
    *total_bytes = acc_get_property(dev, acc_get_device_type(), acc_property_memory);
  }
#endif
  return 0;
}
"""


class _BasePrinter(CPrinter):
    """Prints accesses from the base pointer plus the origin offset: ``u_vec[u_o + ...]``."""

    def __init__(self, dtype, strides, bases):
        super().__init__(dtype, strides)
        self.bases = bases    # array name -> (base pointer, origin offset or None)

    def access(self, name, flat):
        vec, origin = self.bases[name]
        return f"{vec}[{origin} + {flat}]" if origin else f"{vec}[{flat}]"


class OpenACCBackend(CBackend):
    """Prints a Program as C with OpenACC directives (the C backend's printer and loop nests)."""

    cache_blocking = False   # the OpenACC compiler maps the loops (gang, vector)
    row_pointers = False     # accesses stay offsets of the arrays the data clauses name
    openmp_threads = False   # no OpenMP team in the calling process
    ZERO_SPLIT = True        # a test a point, as since the split came (not measured again)

    name = "openacc"
    language = "OpenACC"
    splits = False   # halos of device copies are moved by the CUDA backend's exchange only
    #: arrays the caller put on the device with ``acc enter data`` (``stencilgen_acc_enter``)
    #: are present: the data clauses then move nothing
    residency = "openacc"
    source_suffix = ".c"     # nvc++ builds take ``.cpp`` from their toolchain

    def __init__(self, program, options: EmitOptions = EmitOptions()):
        super().__init__(program, options)
        bases = {a.name: (a.layout.vec, None if a.sparse else a.layout.origin[0])
                 for a in program.arrays}
        self.printer = _BasePrinter(program.dtype, self.printer.strides, bases)
        self.printer.stored = self.stored

    # -- data ------------------------------------------------------------------------------
    def array_views(self):
        """Strides, origin offset (first domain point) and length of every array."""
        lines = []
        for a in self.program.arrays:
            lay = a.layout
            lines += self.strides(a)
            lines.append(c.Initializer(c.Value("const long", lay.count[0]),
                                       self.printer.index_expr(lay.count[1])))
            if not a.sparse:
                lines.append(c.Initializer(c.Value("const long", lay.origin[0]),
                                           self.printer.index_expr(lay.origin[1])))
        return lines

    def _section(self, name):
        lay = self.program.array(name).layout
        return f"{lay.vec}[0:{lay.count[0]}]"

    def _coords(self, sparse):
        a = self.program.array(sparse)
        return f"{a.layout.coords}[0:{a.layout.npoint}*{a.coords_width(len(self.program.dims))}]"

    def _present(self, kernel):
        """The ``present`` clause naming every array (and coordinate list) the kernel touches."""
        names = set(kernel.reads) | set(kernel.writes)
        extra = []
        if kernel.is_sparse:
            names.add(kernel.sparse)
            extra.append(self._coords(kernel.sparse))
        order = [a.name for a in self.program.arrays if a.name in names]
        return f"present({', '.join([self._section(n) for n in order] + extra)})"

    def data_clauses(self):
        """copyin for arrays only read (and temporaries, whose zero halo must reach the device),
        copy for written arrays; sparse coordinates copyin."""
        written = set()
        for k in self.program.kernels:
            written |= set(k.writes)
        arrays = self.program.arrays
        copy = [self._section(a.name) for a in arrays if a.name in written and not a.temporary]
        copyin = [self._section(a.name) for a in arrays if a.name not in written or a.temporary]
        copyin += [self._coords(a.name) for a in arrays if a.sparse]
        clauses = []
        if copyin:
            clauses.append(f"copyin({', '.join(copyin)})")
        if copy:
            clauses.append(f"copy({', '.join(copy)})")
        return " ".join(clauses)

    # -- pragma hooks ------------------------------------------------------------------------
    def includes(self):
        return [c.Include(h) for h in ("math.h", "stddef.h", "stdlib.h", "time.h", "openacc.h")] \
            + self.storage_includes() + self.complex_includes()

    def complex_includes(self):
        """The complex types in the language the compiler reads the source as (nvc++: C++)."""
        if not self.complex:
            return []
        return [c.Line(f"#ifdef __cplusplus\n#define SG_HD\n{COMPLEX_CXX}#else\n{COMPLEX_C}"
                       f"#endif")]

    def storage_includes(self):
        """The bfloat16 conversions as device routines, where an array is stored so."""
        found = super().storage_includes()
        return found[:1] + [c.Line(line.text.replace(
            "static inline", "#pragma acc routine seq\nstatic inline")) for line in found[1:]]

    def signature(self, export="STENCILGEN_EXPORT "):
        return super().signature(export)

    time_tiles = False   # time-skewed tiles are the C backend's (c_timetile)

    #: a zero-box split tested at each point: the collapsed nest stays one parallel loop
    split_style = "points"

    def loop_pragmas(self, kernel, depth):
        # a sum over the outer loops (``Kernel.outer``): they run in order on the host, each
        # iteration a parallel loop over the others
        if depth != kernel.outer:
            return []
        if kernel.sequential:
            return [c.Pragma(f"acc serial {self._present(kernel)}")]
        n = len(kernel.dims) - kernel.outer
        collapse = f" collapse({n})" if n > 1 else ""
        length = self.options.vector_length
        vl = f" vector_length({length})" if length else ""
        return [c.Pragma(f"acc parallel loop{collapse} gang vector{vl} {self._present(kernel)}")]

    def sparse_pragmas(self, kernel):
        return [c.Pragma(f"acc parallel loop gang vector {self._present(kernel)}")]

    def check_pragmas(self, a):
        return [c.Pragma(f"acc parallel loop reduction(+:sg_n) present({self._section(a.name)})")]

    def corner_pragmas(self):
        return [c.Pragma("acc loop seq")]

    def refusal(self):
        """A split grid (``splits``), and an injection into bfloat16: OpenACC has no atomic
        update of a bfloat16 element (no such C type)."""
        base = super().refusal()
        if base:
            return base
        stored = [k.target.base.name for k in self.program.kernels if k.is_sparse
                  and k.kind == "inject" and self.stored.get(k.target.base.name) == "bfloat16"]
        if stored:
            return (f"injecting into {stored[0]}, stored as bfloat16, needs an atomic update "
                    "that OpenACC does not have; store it as float16, or use the C or CUDA "
                    "backend")
        return super().refusal()

    def atomic_add(self, target, value, fmt=None, dtype=None):
        if dtype is not None and is_complex(dtype):
            return self.complex_atomic_add(target, value, dtype)
        return [c.Pragma("acc atomic update"), c.Statement(f"{target} += {value}")]

    clock = "stencilgen_wtime()"

    def settle(self):
        return [c.Pragma("acc wait")]

    def body(self):
        return (self.array_views() + self.complex_scalars() + self.prologue() +
                [c.Statement("stencilgen_acc_select()"),
                 c.Comment("arrays not already present (stencilgen_acc_enter) move to the device "
                           "once, and the written ones back once"),
                 c.Pragma(f"acc data {self.data_clauses()}"),
                 c.Block(self.sections_in_order() + self.finite_checks()),
                 c.Statement("return 0")])

    def emit(self) -> str:
        fn = c.FunctionBody(self.signature(), c.Block(self.body()))
        return str(c.Module([self.header()] + self.includes()
                            + [c.Line(), c.Line(_PREAMBLE),
                               c.Line(interrupt.handler("STENCILGEN_EXPORT ")), fn])) + "\n"
