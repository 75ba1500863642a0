"""The CUDA C++ backend: one ``__global__`` kernel per loop nest, the time loop on the host.

The ``extern "C"`` entry point takes the same arguments as the C backend's (host pointers).
It copies every array to the GPU once, runs all sections there (the contiguous dimension on
``threadIdx.x``, sparse points with ``atomicAdd``), copies the arrays it wrote back once, and
frees everything on every path. Each CUDA call is checked; a failure returns a nonzero status
and leaves a message in ``stencilgen_error()``. Section times come from CUDA events.
"""
from __future__ import annotations

import dataclasses
import re

import cgen as c

from stencilgen.ir.nodes import SparseKernel

from .c import CBackend
from .cprinter import CPrinter
from .options import EmitOptions

# Threads per block for 1, 2 and 3 loop dimensions, innermost (contiguous) dimension first.
BLOCK = {1: (256,), 2: (32, 8), 3: (32, 4, 2)}
SPARSE_BLOCK = 128
GRID_LIMIT = ("2147483647L", "65535L", "65535L")   # gridDim.x, .y, .z maxima
EVENT_SLOTS = 8   # event pairs per section: the host runs at most this many launches ahead

# Errors after which the CUDA context of the process cannot be used again.
_STICKY = ("cudaErrorIllegalAddress", "cudaErrorAssert", "cudaErrorLaunchFailure",
           "cudaErrorIllegalInstruction", "cudaErrorMisalignedAddress",
           "cudaErrorHardwareStackError", "cudaErrorInvalidPc", "cudaErrorLaunchTimeout")

_PRELUDE = r"""
static char sg_error_text[2048];

/* The message of the last failure of this library's entry points ("" if none). */
extern "C" const char *stencilgen_error(void) { return sg_error_text; }

static int sg_fail(const cudaError_t err, const char *call)
{
  const cudaError_t sticky[] = {%(sticky)s};
  const char *hint = "";
  for (size_t i = 0; i < sizeof(sticky)/sizeof(sticky[0]); ++i)
    if (err == sticky[i])
      hint = "; this error is sticky: the CUDA context of this process can no longer be used "
             "(restart Python); rerun with STENCILGEN_DEBUG=1 (bounds checks) or "
             "CUDA_LAUNCH_BLOCKING=1 to find the failing kernel";
  snprintf(sg_error_text, sizeof(sg_error_text), "CUDA call %%s failed: %%s (%%s)%%s",
           call, cudaGetErrorString(err), cudaGetErrorName(err), hint);
  return 1;
}

/* Frees on the way out; the first failure is kept, later ones are not reported over it. */
static void sg_release(const cudaError_t err, const char *call, int *status)
{
  if (err != cudaSuccess && *status == 0)
    *status = sg_fail(err, call);
}

static unsigned int sg_blocks(const long n, const long threads, const long limit)
{
  const long b = (n + threads - 1)/threads;
  return (unsigned int)(b < limit ? b : limit);
}

#define SG_CHECK_AS(call, text) do { const cudaError_t sg_e = (call); \
  if (sg_e != cudaSuccess) { sg_status = sg_fail(sg_e, text); goto sg_cleanup; } } while (0)
#define SG_CHECK(call) SG_CHECK_AS(call, #call)
#define SG_SLOTS %(slots)d
#define SG_NARROW_MAX (1L << 30)   /* so that index + grid stride cannot overflow */
/* Section i's CUDA events live in a ring of SG_SLOTS pairs; a pair is read back (and its time
   added to timers[i]) before it is reused and at the end, so timings hold with or without
   CUDA_LAUNCH_BLOCKING and the host never waits on the kernel it just launched. */
#define SG_TIMER_START(i) do { const long sg_slot = sg_used[i] %% SG_SLOTS; \
  if (sg_used[i] >= SG_SLOTS) { float sg_ms = 0.0f; \
    SG_CHECK(cudaEventSynchronize(sg_events[i][sg_slot][1])); \
    SG_CHECK(cudaEventElapsedTime(&sg_ms, sg_events[i][sg_slot][0], sg_events[i][sg_slot][1])); \
    timers[i] += 1.0e-3*sg_ms; } \
  if (!sg_events[i][sg_slot][0]) { SG_CHECK(cudaEventCreate(&sg_events[i][sg_slot][0])); \
    SG_CHECK(cudaEventCreate(&sg_events[i][sg_slot][1])); } \
  SG_CHECK(cudaEventRecord(sg_events[i][sg_slot][0], 0)); } while (0)
#define SG_TIMER_STOP(i) do { \
  SG_CHECK(cudaEventRecord(sg_events[i][sg_used[i] %% SG_SLOTS][1], 0)); sg_used[i] += 1; } while (0)
"""

_DEBUG_PRELUDE = r"""
/* Debug builds: every array subscript is checked against the allocation it points into. The
   first violation is recorded (the access is redirected to a valid element, so nothing is
   corrupted and the CUDA context survives) and the host turns it into an error. */
struct sg_oob_record { int hit, array, line; long index, lo, hi; };
static __device__ sg_oob_record sg_oob;

static __device__ __forceinline__ long sg_checked(const long i, const long lo, const long hi,
                                                  const int array, const int line)
{
  if (i >= lo && i < hi)
    return i;
  if (atomicCAS(&sg_oob.hit, 0, 1) == 0) {
    sg_oob.array = array; sg_oob.line = line; sg_oob.index = i; sg_oob.lo = lo; sg_oob.hi = hi;
  }
  return lo;
}
"""


_OOB_REPORT = r"""static const char *sg_array_names[] = {%(names)s};

/* After a kernel (debug builds): nonzero, with the message set, if it reached outside an array. */
static int sg_out_of_bounds(const char *kernel, int *status)
{
  sg_oob_record r;
  const cudaError_t err = cudaMemcpyFromSymbol(&r, sg_oob, sizeof(r));
  if (err != cudaSuccess) {
    *status = sg_fail(err, "cudaMemcpyFromSymbol(&r, sg_oob, sizeof(r))");
    return 1;
  }
  if (!r.hit)
    return 0;
  snprintf(sg_error_text, sizeof(sg_error_text), "out-of-bounds access %%s[%%ld] in kernel %%s "
           "(line %%d of the generated source; valid offsets from the array's first domain "
           "point are %%ld..%%ld): the halo widths, sizes or iteration bounds passed to the "
           "operator do not fit the arrays", sg_array_names[r.array], r.index, kernel, r.line,
           r.lo, r.hi - 1);
  *status = 3;
  return 1;
}
"""


class CheckedPrinter(CPrinter):
    """The shared printer, with each array subscript wrapped in a device-side bounds check."""

    def __init__(self, dtype, strides, names):
        super().__init__(dtype, strides)
        self.ids = {n: i for i, n in enumerate(names)}

    def _print_Indexed(self, expr):
        text = super()._print_Indexed(expr)
        name = expr.base.name
        inner = text[len(name) + 1:-1]
        return f"{name}[sg_checked({inner}, {name}_lo, {name}_hi, {self.ids[name]}, __LINE__)]"


@dataclasses.dataclass(frozen=True)
class _Arg:
    """A value a kernel may take: its name inside the kernel, C type and host expression."""

    name: str
    ctype: str
    host: str


def _thread(axis):
    """This thread's global index along ``axis``, in signed arithmetic of the index type."""
    return f"(long)blockIdx.{axis}*(long)blockDim.{axis} + (long)threadIdx.{axis}"


def _stride(axis):
    return f"(long)blockDim.{axis}*(long)gridDim.{axis}"


class CudaBackend(CBackend):
    """Prints a Program as CUDA C++: kernels for the loop nests, a host driver for the rest."""

    name = "cuda"
    language = "CUDA C++"
    source_suffix = ".cu"

    def __init__(self, program, options: EmitOptions = EmitOptions()):
        super().__init__(program, options)
        if options.debug:
            self.printer = CheckedPrinter(program.dtype, self._strides(),
                                          [a.name for a in program.arrays])

    # -- what kernels can take --------------------------------------------------------------
    def kernel_args(self) -> list[_Arg]:
        """Every value a kernel may read, in a fixed order; each kernel takes those it names."""
        prog = self.program
        out = []
        for a in prog.arrays:
            out.append(_Arg(a.name, f"{self.ctype(a.dtype)} *__restrict__", a.name))
            if a.sparse:
                out += [_Arg(f"{a.name}_np", "const long", f"{a.name}_np"),
                        _Arg(f"{a.name}_coords", "const double *__restrict__",
                             f"d_{a.name}_coords")]
            else:
                out += [_Arg(f"{a.name}_s{i}", "const long", f"{a.name}_s{i}")
                        for i in range(len(prog.dims) - 1)]
                if a.time_size is not None:
                    out.append(_Arg(f"{a.name}_st", "const long", f"{a.name}_st"))
            out += [_Arg(f"{a.name}_lo", "const long", f"{a.name}_lo"),
                    _Arg(f"{a.name}_hi", "const long", f"{a.name}_hi")]
        for d in prog.dims:
            out += [_Arg(f"{d.name}_{s}", "const long", f"{d.name}_{s}") for s in ("m", "M")]
        out += [_Arg(s.name, f"const {self.ctype(s.dtype)}", s.name) for s in prog.scalars]
        out += [_Arg(a.lhs.name, f"const {self.real}", a.lhs.name) for a in prog.prologue]
        out += [_Arg(ti.symbol.name, "const long", ti.symbol.name) for ti in prog.time_indices]
        out.append(_Arg("time", "const long", "time"))
        return out

    def _used(self, text: str) -> list[_Arg]:
        tokens = set(re.findall(r"[A-Za-z_]\w*", text))
        return [a for a in self._args if a.name in tokens]

    # -- device code ------------------------------------------------------------------------
    def atomic_add(self, target, value):
        return [c.Statement(f"atomicAdd(&{target}, ({self.real})({value}))")]

    def sparse_pragmas(self, kernel):
        return []

    def kernel_loops(self, k):
        """The nest as grid-stride loops: innermost dimension on x, then y, then z."""
        if isinstance(k, SparseKernel):
            loop = self.sparse_loop(k).contents[-1]
            p = k.point.name
            return c.For(f"long {p} = {_thread('x')}", f"{p} < {k.sparse}_np",
                         f"{p} += {_stride('x')}", loop.body)
        body = c.Block([self.statement(a) for a in k.body])
        n = len(k.dims)
        for depth in reversed(range(n)):
            d = k.dims[depth]
            lo, hi = k.widened[depth]
            axis = "xyz"[n - 1 - depth]
            start = f"{d.name}_m - {lo}" if lo else f"{d.name}_m"
            stop = f"{d.name}_M + {hi}" if hi else f"{d.name}_M"
            body = c.For(f"long {d.name} = {start} + {_thread(axis)}", f"{d.name} <= {stop}",
                         f"{d.name} += {_stride(axis)}", body)
        return body

    def kernel_name(self, k) -> str:
        return f"{self.program.name}_{k.name}"

    def threads(self, k) -> int:
        if isinstance(k, SparseKernel):
            return SPARSE_BLOCK
        t = 1
        for b in BLOCK[len(k.dims)]:
            t *= b
        return t

    def device_kernel(self, k):
        """The ``__global__`` function of one section and the arguments it takes."""
        loops = str(self.kernel_loops(k))
        used = self._used(loops)
        # arrays this kernel only reads are const (read through the read-only data cache)
        arrays = {a.name for a in self.program.arrays} - set(k.writes)
        params = ",\n    ".join(f"{'const ' if a.name in arrays else ''}{a.ctype} {a.name}"
                               for a in used)
        text = (f"static __global__ void __launch_bounds__({self.threads(k)})\n"
                f"{self.kernel_name(k)}({params})\n{{\n"
                + "\n".join("  " + line for line in loops.splitlines()) + "\n}\n")
        # index arithmetic in 32 bits where every array fits (much faster), else in 64
        text = re.sub(r"\blong\b", "sg_int", text)
        return (f"/* {k.name}: {k.flops} flops, {k.bytes} bytes per point */\n"
                f"template <typename sg_int>\n{text}"), used

    # -- host code --------------------------------------------------------------------------
    def signature(self):
        decl = super().signature()
        args = [c.Value(a.typename.replace("restrict", "__restrict__"), a.name)
                for a in decl.arg_decls]
        return c.FunctionDeclaration(c.Value('extern "C" int', self.program.name), args)

    def layouts(self):
        """Host-side strides, element counts and origins of each array, and its device pointers."""
        dims = self.program.dims
        lines = []
        for a in self.program.arrays:
            n, t = a.name, self.ctype(a.dtype)
            if a.sparse:
                slots = f"{a.time_size}*" if a.time_size is not None else ""
                lines += [f"const long {n}_count = {slots}{n}_np;", f"const long {n}_origin = 0;",
                          f"double *d_{n}_coords = NULL;"]
            else:
                extents = [f"({d.name}_size + 2*{n}_h{i})" for i, d in enumerate(dims)]
                strides, stride = [], "1"
                for ext in reversed(extents):
                    strides.append(stride)
                    stride = ext if stride == "1" else f"{stride}*{ext}"
                strides.reverse()
                lines += [f"const long {n}_s{i} = {s};" for i, s in enumerate(strides[:-1])]
                origin = " + ".join(f"{n}_h{i}*" + (f"{n}_s{i}" if i < len(dims) - 1 else "1")
                                    for i in range(len(dims)))
                if a.time_size is not None:
                    lines += [f"const long {n}_st = {stride};",
                              f"const long {n}_count = {a.time_size}*{n}_st;"]
                else:
                    lines.append(f"const long {n}_count = {stride};")
                lines.append(f"const long {n}_origin = {origin};")
            if self.options.debug:
                lines += [f"const long {n}_lo = -{n}_origin;",
                          f"const long {n}_hi = {n}_count - {n}_origin;"]
            lines += [f"{t} *d_{n}_vec = NULL;", f"{t} *{n} = NULL;"]
        return lines

    def _bytes(self, a):
        return f"(size_t){a.name}_count*sizeof({self.ctype(a.dtype)})"

    def _coord_bytes(self, a):
        return f"(size_t){a.name}_np*{len(self.program.dims)}*sizeof(double)"

    def setup(self):
        """Check the footprint against free memory, allocate, copy in (temporaries: zero)."""
        arrays = self.program.arrays
        need = " + ".join([self._bytes(a) for a in arrays] +
                          [self._coord_bytes(a) for a in arrays if a.sparse]) or "0"
        lines = [
            "size_t sg_free = 0, sg_total = 0;",
            "SG_CHECK(cudaMemGetInfo(&sg_free, &sg_total));",
            f"const size_t sg_need = {need};",
            "if (sg_need > sg_free) {",
            "  snprintf(sg_error_text, sizeof(sg_error_text), \"not enough GPU memory: the "
            "operator's arrays need %.1f MiB on the GPU but only %.1f MiB of its %.1f MiB are "
            "free; use a smaller grid or float32 data, or end other processes that hold GPU "
            "memory\", sg_need/1048576.0, sg_free/1048576.0, sg_total/1048576.0);",
            "  sg_status = 2;",
            "  goto sg_cleanup;",
            "}",
        ]
        if self.options.debug:
            lines += ["const sg_oob_record sg_clear = {};",
                      "SG_CHECK(cudaMemcpyToSymbol(sg_oob, &sg_clear, sizeof(sg_clear)));"]
        if self.options.nvtx:
            lines.append('nvtxRangePushA("copy-in");')
        for a in arrays:
            n = a.name
            lines.append(f"SG_CHECK(cudaMalloc((void **)&d_{n}_vec, {self._bytes(a)}));")
            if a.temporary:
                lines.append(f"SG_CHECK(cudaMemset(d_{n}_vec, 0, {self._bytes(a)}));")
            else:
                lines.append(f"SG_CHECK(cudaMemcpy(d_{n}_vec, {n}_vec, {self._bytes(a)}, "
                             "cudaMemcpyHostToDevice));")
            if a.sparse:
                lines += [f"SG_CHECK(cudaMalloc((void **)&d_{n}_coords, {self._coord_bytes(a)}));",
                          f"SG_CHECK(cudaMemcpy(d_{n}_coords, {n}_coords, {self._coord_bytes(a)}, "
                          "cudaMemcpyHostToDevice));"]
            lines.append(f"{n} = d_{n}_vec + {n}_origin;")
        if self.options.nvtx:
            lines.append("nvtxRangePop();")
        return lines

    def launch(self, index, k, used):
        """Host code that launches section ``k`` (when its space is not empty), timed."""
        name = self.kernel_name(k)
        lines = [f"/* {k.name} */"]
        if isinstance(k, SparseKernel):
            sizes = [f"{k.sparse}_np"]
            block = (SPARSE_BLOCK,)
        else:
            sizes = []
            for d, (lo, hi) in zip(reversed(k.dims), reversed(k.widened)):
                sizes.append(f"{d.name}_M - {d.name}_m + {1 + lo + hi}")
            block = BLOCK[len(k.dims)]
        lines += [f"const long sg_n{i} = {s};" for i, s in enumerate(sizes)]
        grid = ", ".join(f"sg_blocks(sg_n{i}, {b}, {GRID_LIMIT[i]})" for i, b in enumerate(block))
        call = ", ".join(a.host for a in used)
        body = [f"const dim3 sg_block({', '.join(map(str, block))});",
                f"const dim3 sg_grid({grid});"]
        if self.options.nvtx:
            body.append(f'nvtxRangePushA("{k.name}");')
        body += [f"SG_TIMER_START({index});",
                 f"if (sg_narrow) {name}<int><<<sg_grid, sg_block>>>({call});",
                 f"else {name}<long><<<sg_grid, sg_block>>>({call});",
                 f'SG_CHECK_AS(cudaGetLastError(), "launch of kernel {name}");']
        if self.options.debug:
            body += [f'SG_CHECK_AS(cudaDeviceSynchronize(), "cudaDeviceSynchronize() after '
                     f'kernel {name}");',
                     f'if (sg_out_of_bounds("{name}", &sg_status)) goto sg_cleanup;']
        body.append(f"SG_TIMER_STOP({index});")
        if self.options.nvtx:
            body.append("nvtxRangePop();")
        cond = " && ".join(f"sg_n{i} > 0" for i in range(len(sizes)))
        lines += [f"if ({cond}) {{"] + ["  " + b for b in body] + ["}"]
        return ["{"] + ["  " + ln for ln in lines] + ["}"]

    def host_body(self, launches):
        prog = self.program
        nk = max(len(prog.kernels), 1)
        nb, ns = len(prog.before), len(prog.steps)
        lines = ["int sg_status = 0;", "sg_error_text[0] = '\\0';"]
        lines += self.layouts()
        sizes = [f"{a.name}_count" for a in prog.arrays]
        sizes += [f"{a.name}_np*{len(prog.dims)}" for a in prog.arrays if a.sparse]
        lines += ["/* 32-bit index arithmetic in the kernels when every offset fits in it */",
                  "#ifdef STENCILGEN_WIDE_INDEX", "const bool sg_narrow = false;", "#else",
                  "const bool sg_narrow = " +
                  " && ".join(f"{n} <= SG_NARROW_MAX" for n in sizes) + ";", "#endif"]
        lines += [f"cudaEvent_t sg_events[{nk}][SG_SLOTS][2] = {{}};", f"long sg_used[{nk}] = {{}};"]
        lines += [str(s) for s in self.prologue()]
        main = self.setup()
        for i in range(nb):
            main += launches[i]
        if prog.has_time_loop:
            main.append("for (long time = time_m; time <= time_M; time += 1) {")
            for ti in prog.time_indices:
                if ti.modulo is not None:
                    main.append(f"  const long {ti.symbol.name} = (time + {ti.shift}) % {ti.modulo};")
            for i in range(nb, nb + ns):
                main += ["  " + ln for ln in launches[i]]
            main.append("}")
        for i in range(nb + ns, len(prog.kernels)):
            main += launches[i]
        main += [
            'SG_CHECK_AS(cudaDeviceSynchronize(), "cudaDeviceSynchronize() after the last kernel '
            '(an earlier kernel failed)");',
            f"for (int sg_i = 0; sg_i < {nk}; ++sg_i) {{",
            "  for (long sg_k = sg_used[sg_i] > SG_SLOTS ? sg_used[sg_i] - SG_SLOTS : 0; "
            "sg_k < sg_used[sg_i]; ++sg_k) {",
            "    float sg_ms = 0.0f;",
            "    SG_CHECK(cudaEventElapsedTime(&sg_ms, sg_events[sg_i][sg_k % SG_SLOTS][0], "
            "sg_events[sg_i][sg_k % SG_SLOTS][1]));",
            "    timers[sg_i] += 1.0e-3*sg_ms;",
            "  }",
            "}",
        ]
        written = {n for k in prog.kernels for n in k.writes}
        if self.options.nvtx:
            main.append('nvtxRangePushA("copy-out");')
        for a in prog.arrays:
            if a.name in written and not a.temporary:
                main.append(f"SG_CHECK(cudaMemcpy({a.name}_vec, d_{a.name}_vec, {self._bytes(a)}, "
                            "cudaMemcpyDeviceToHost));")
        if self.options.nvtx:
            main.append("nvtxRangePop();")
        lines += ["{"] + ["  " + ln for ln in main] + ["}"]
        cleanup = ["sg_cleanup:"]
        cleanup += [
            f"for (int sg_i = 0; sg_i < {nk}; ++sg_i)",
            "  for (int sg_k = 0; sg_k < SG_SLOTS; ++sg_k)",
            "    for (int sg_j = 0; sg_j < 2; ++sg_j)",
            "      if (sg_events[sg_i][sg_k][sg_j])",
            "        sg_release(cudaEventDestroy(sg_events[sg_i][sg_k][sg_j]), "
            "\"cudaEventDestroy\", &sg_status);",
        ]
        for a in prog.arrays:
            cleanup.append(f"if (d_{a.name}_vec) sg_release(cudaFree(d_{a.name}_vec), "
                           f"\"cudaFree(d_{a.name}_vec)\", &sg_status);")
            if a.sparse:
                cleanup.append(f"if (d_{a.name}_coords) sg_release(cudaFree(d_{a.name}_coords), "
                               f"\"cudaFree(d_{a.name}_coords)\", &sg_status);")
        cleanup.append("return sg_status;")
        return lines + cleanup

    def emit(self) -> str:
        """The whole translation unit: prelude, one kernel per section, the host entry point."""
        self._args = self.kernel_args()
        header = (f"/* {self.program.name}: generated by stencilgen ({self.language} backend) */\n"
                  "#include <cuda_runtime.h>\n#include <math.h>\n#include <stdio.h>\n"
                  "#include <stddef.h>\n")
        if self.options.debug:
            header += "#include <assert.h>\n"
        if self.options.nvtx:
            header += "#include <nvtx3/nvToolsExt.h>\n"
        sticky = ", ".join(_STICKY)
        parts = [header, _PRELUDE % {"sticky": sticky, "slots": EVENT_SLOTS}]
        if self.options.debug:
            names = ", ".join(f'"{a.name}"' for a in self.program.arrays)
            parts += [_DEBUG_PRELUDE, _OOB_REPORT % {"names": names}]
        launches = []
        for i, k in enumerate(self.program.kernels):
            text, used = self.device_kernel(k)
            parts.append(text)
            launches.append(self.launch(i, k, used))
        body = self.host_body(launches)
        parts.append(str(self.signature()).rstrip(";") + "\n{\n" +
                     "\n".join("  " + ln if ln and not ln.endswith(":") and not ln.startswith("#")
                               else ln for ln in body)
                     + "\n}\n")
        return "\n".join(parts)
