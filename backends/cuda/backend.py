"""The CUDA C++ backend: one ``__global__`` kernel per loop nest, the time loop on the host.

The ``extern "C"`` entry point takes the same arguments as the C backend's, but its arrays are
device allocations in the layout of ``device_layout`` (made, filled and read back by the
caller, ``stencilgen.data.places``): it runs all sections there (the contiguous dimension on
``threadIdx.x``, sparse points with ``atomicAdd``) and copies nothing but the sparse
coordinates, so fields stay on the GPU between applies. Each CUDA call is checked; a failure
returns a nonzero status and leaves a message in ``stencilgen_error()``. Section times come
from CUDA events.
"""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager

import cgen as c
import numpy as np
import sympy

from ..c.backend import CBackend
from . import fused_nests, point_pairs, sparse_kernels, step_passes, zero_split
from ..common import device_layout, interrupt, split, zero_box
from .launch import GRID_WAIT, early
from ..common.device_layout import DeviceLayout
from ..common.cprinter import COMPLEX_CXX, CPrinter, ctype, is_complex, time_loop_header, tuned_choice
from ..common.options import EmitOptions

# Threads per block for 1, 2 and 3 loop dimensions, innermost (contiguous) dimension first.
# The launch shapes a grid nest may run with, per number of loop dimensions: points per thread
# along the outermost dimension, then threads per block, innermost (contiguous) dimension
# first. The first of each list is the default of a kernel that computes one point per thread,
# the second of one that may compute two; the autotuner picks among them per section.
SHAPES = {
    1: ((1, 256), (1, 128)),
    2: ((1, 32, 8), (2, 32, 8), (1, 64, 4), (2, 64, 4), (1, 128, 2), (2, 128, 2)),
    3: ((1, 32, 4, 2), (2, 32, 4, 2), (1, 32, 8, 1), (2, 32, 8, 1), (1, 64, 4, 1),
        (2, 64, 4, 1), (1, 128, 2, 1), (2, 128, 2, 1)),
}
THREADS = 256          # per block, in every shape (the kernels' __launch_bounds__)
PAIRED_ARRAYS_MAX = 6  # a nest touching more arrays (slots) than this: one point per thread
SPARSE_BLOCK = 128
GRID_LIMIT = ("2147483647L", "65535L", "65535L")   # gridDim.x, .y, .z maxima
SHELL_STREAM = "sg_shells[sg_region - 1]"   # the stream of a split grid's shell region
EVENT_SLOTS = 8   # event pairs per section: the host runs at most this many launches ahead
TIMER_SAMPLE = 16  # past the first EVENT_SLOTS, a section's launches timed one in this many

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

/* NaN/Inf test on the bits, so that --use_fast_math cannot fold it away */
static __device__ __forceinline__ bool sg_finite(const float v)
{ return (__float_as_uint(v) & 0x7f800000u) != 0x7f800000u; }
static __device__ __forceinline__ bool sg_finite(const double v)
{ return (__double_as_longlong(v) & 0x7ff0000000000000LL) != 0x7ff0000000000000LL; }

/* Adds the NaN/Inf among p[0..n) to *count (a warp's sum, one atomic per warp). */
template <typename T>
static __global__ void __launch_bounds__(256)
sg_nonfinite(const T *__restrict__ p, const long n, unsigned long long *count)
{
  unsigned long long mine = 0;
  for (long i = (long)blockIdx.x*blockDim.x + threadIdx.x; i < n; i += (long)blockDim.x*gridDim.x)
    mine += !sg_finite(p[i]);
  for (int o = 16; o > 0; o /= 2)
    mine += __shfl_down_sync(0xffffffffu, mine, o);
  if ((threadIdx.x & 31) == 0 && mine)
    atomicAdd(count, mine);
}

#define SG_CHECK_AS(call, text) do { const cudaError_t sg_e = (call); \
  if (sg_e != cudaSuccess) { sg_status = sg_fail(sg_e, text); goto sg_cleanup; } } while (0)
#define SG_CHECK(call) SG_CHECK_AS(call, #call)
#define SG_SLOTS %(slots)d
#define SG_SAMPLE %(sample)d
/* Section i's launches are timed by CUDA events: the first SG_SLOTS and every SG_SAMPLE-th after
   (sg_launched counts them, sg_used the timed ones); its time is the timed launches' sum scaled
   by launched/timed. Events between two kernels keep the second from starting early (sg_early),
   so sampling leaves most launches without them. The events live in a ring of SG_SLOTS pairs; a
   pair is read back before it is reused and at the end, so timings hold with or without
   CUDA_LAUNCH_BLOCKING and the host never waits on the kernel it just launched. */
#define SG_TIMER_START(i) SG_TIMER_START_IF(i, sg_launched[i] < SG_SLOTS || sg_launched[i] %% SG_SAMPLE == 0)
/* a launch timed where ``timed`` holds: one that always follows another of the section (a
   two-step pass's second step again around the sources) timed with it, so the samples hold
   as many of each as the launches (cuda_steps) */
#define SG_TIMER_START_IF(i, timed) do { \
  sg_timing = (timed); sg_launched[i] += 1; \
  if (sg_timing) { const long sg_slot = sg_used[i] %% SG_SLOTS; \
    if (sg_used[i] >= SG_SLOTS) { float sg_ms = 0.0f; \
      SG_CHECK(cudaEventSynchronize(sg_events[i][sg_slot][1])); \
      SG_CHECK(cudaEventElapsedTime(&sg_ms, sg_events[i][sg_slot][0], sg_events[i][sg_slot][1])); \
      sg_sampled[i] += 1.0e-3*sg_ms; } \
    if (!sg_events[i][sg_slot][0]) { SG_CHECK(cudaEventCreate(&sg_events[i][sg_slot][0])); \
      SG_CHECK(cudaEventCreate(&sg_events[i][sg_slot][1])); } \
    SG_CHECK(cudaEventRecord(sg_events[i][sg_slot][0], 0)); } } while (0)
#define SG_TIMER_STOP(i) do { if (sg_timing) { \
  SG_CHECK(cudaEventRecord(sg_events[i][sg_used[i] %% SG_SLOTS][1], 0)); \
  sg_used[i] += 1; } } while (0)

#ifdef __CUDACC__
/* A kernel launched early: it may start while the kernel before it on the stream finishes (a
   programmatic dependent launch, compute capability 9.0 and later: older GPUs launch as usual),
   its threads waiting in SG_GRID_WAIT, before they touch memory, for that kernel's writes.
   Back-to-back launches then overlap one's tail with the next one's start (an H200 idled about
   5 us between the kernels of a step otherwise). */
template <typename... P, typename... A>
static cudaError_t sg_early(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared,
                            cudaStream_t stream, A... args)
{
  static int sg_capable = -1;
  if (sg_capable < 0) {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
      major = 0;
    sg_capable = major >= 9;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  cudaLaunchAttribute early[1];
  early[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = early;
  config.numAttrs = sg_capable ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, args...);
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define SG_GRID_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define SG_GRID_WAIT() do {} while (0)
#endif
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


#: per 16-bit format: its header, NaN/Inf test on the bits (exponent all ones) and the atomic
#: add of a float whose sum is rounded once (a compare-and-swap loop on the 16-bit word: an
#: atomicAdd of the increment rounded first would round twice)
_FORMAT_PRELUDE = r"""#include <%(header)s>
static __device__ __forceinline__ bool sg_finite(const %(type)s v)
{ return (%(bits)s(v) & %(exponent)s) != %(exponent)s; }
static __device__ __forceinline__ void sg_atomic_add(%(type)s *target, const float v)
{
  unsigned short *word = (unsigned short *)target;
  unsigned short seen = *word, old;
  do {
    old = seen;
    seen = atomicCAS(word, old, %(bits)s(%(store)s(%(load)s(%(word)s(old)) + v)));
  } while (seen != old);
}
"""
_FORMAT_NAMES = {
    "float16": {"header": "cuda_fp16.h", "bits": "__half_as_ushort", "exponent": "0x7c00u",
                "word": "__ushort_as_half"},
    "bfloat16": {"header": "cuda_bf16.h", "bits": "__bfloat16_as_ushort", "exponent": "0x7f80u",
                 "word": "__ushort_as_bfloat16"},
}


class CudaPrinter(CPrinter):
    """The shared printer with CUDA's 16-bit types (``cuda_fp16.h``, ``cuda_bf16.h``): loads
    widen to float, stores round to nearest even."""

    FORMATS = {"float16": ("__half", "__half2float({})", "__float2half_rn({})"),
               "bfloat16": ("__nv_bfloat16", "__bfloat162float({})", "__float2bfloat16_rn({})")}


def format_prelude(fmt: str) -> str:
    """What kernels storing in ``fmt`` need: the header, the NaN/Inf test, the atomic add."""
    elem, load, store = CudaPrinter.FORMATS[fmt]
    return _FORMAT_PRELUDE % dict(_FORMAT_NAMES[fmt], type=elem, load=load.split("(")[0],
                                  store=store.split("(")[0])


class CheckedPrinter(CudaPrinter):
    """The shared printer, with each array subscript wrapped in a device-side bounds check."""

    def __init__(self, dtype, strides, names):
        super().__init__(dtype, strides)
        self.ids = {n: i for i, n in enumerate(names)}

    def access(self, name, flat):
        return (f"{name}[sg_checked({flat}, sg_{name}_lo, sg_{name}_hi, {self.ids[name]}, "
                "__LINE__)]")


class SlotPrinter(CudaPrinter):
    """The shared printer, reading a time-buffered array through the kernel's pointer to the
    slot (``sg_u_t0[...]`` for ``u[t0][...]``)."""

    def __init__(self, dtype, strides, slots):
        super().__init__(dtype, strides)
        self.slots = slots   # array name -> {slot symbol: whether the kernel writes it}

    def target(self, expr):
        name = expr.base.name
        if name not in self.slots:
            return super().target(expr)
        rest = self.offset(expr.indices[1:], self.strides[name][1:])
        return self.access(slot_pointer(name, expr.indices[0]), rest)


def slot_pointer(array, slot) -> str:
    """The kernel parameter that points at time slot ``slot`` of ``array``: a ring slot
    symbol (``sg_u_t0``) or a direct index ``time + c`` (``sg_usave_time_p1``)."""
    if isinstance(slot, sympy.Symbol):
        return f"sg_{array}_{slot}"
    symbol, shift = _direct(slot)
    return f"sg_{array}_{symbol}_{'p' if shift > 0 else 'm'}{abs(shift)}"


def _factor(index) -> str:
    """C text of a time index as a factor of a product."""
    return str(index) if isinstance(index, sympy.Symbol) else f"({index})"


def _direct(index):
    """(symbol, c) of a time index ``symbol + c`` (c an integer), else None."""
    if isinstance(index, sympy.Symbol):
        return index, 0
    if isinstance(index, sympy.Add) and len(index.args) == 2:
        c, s = index.as_coeff_Add()
        if c.is_Integer and isinstance(s, sympy.Symbol):
            return s, int(c)
    return None


def statements(k) -> tuple:
    """The statements of grid nest ``k``: a fused nest's producer's, then its own."""
    return (k.fusion.producer.body if k.fusion else ()) + k.body


def _accesses(lhs, rhs):
    """(Indexed, stored?) of one statement, or of a sparse kernel (its target and value)."""
    out = [(lhs, True)] if isinstance(lhs, sympy.Indexed) else []
    return out + [(a, False) for a in sympy.preorder_traversal(rhs)
                  if isinstance(a, sympy.Indexed)]


def _touched(k) -> set:
    """The arrays kernel ``k`` reads or writes (a sparse kernel: its sparse function too)."""
    return set(k.reads) | set(k.writes) | ({k.sparse} if k.is_sparse else set())


def _symbols(e, views):
    """The symbols ``e`` prints with: a slot read through its own pointer needs no slot index."""
    if isinstance(e, sympy.Indexed):
        indices = e.indices[1:] if e.base.name in views else e.indices
        return {e.base.label}.union(*(i.free_symbols for i in indices))
    if isinstance(e, sympy.Symbol):
        return {e}
    return set().union(*(_symbols(a, views) for a in e.args))


@dataclasses.dataclass(frozen=True)
class Slots:
    """How a kernel touches time-buffered arrays (see ``time_slots``)."""

    views: dict      # array -> {slot symbol: written?}, for those read through slot pointers
    rereads: frozenset   # the arrays some of whose elements the kernel reads and writes
    touched: int     # distinct arrays, counting each time slot as one


def time_slots(k, prog) -> Slots:
    """The time-buffered arrays kernel ``k`` can read through one pointer per slot, with the
    slots it uses, and what else the launch choices need to know of its accesses.

    An array qualifies when every access names a slot symbol and no two of its slots are the
    same element: then the slot pointers alias nothing and may all be ``__restrict__``, which
    lets nvcc batch the loads of several points and share those they have in common. A saved
    array (a time axis indexed directly) qualifies when every access is at ``s + c`` for one
    per-step symbol ``s`` (the time loop's, or a subsampling's) and constants ``c``: its
    pointers are then a step's plane apart, and offsets within a plane fit the 32-bit index
    type where offsets into the whole array (every saved step) would not."""
    ring = {ti.symbol: ti for ti in prog.time_indices}
    steps = {prog.time.name} | {s.symbol.name for s in prog.subsamplings if s.symbol is not None}
    slots, mixed, read, written = {}, set(), set(), set()
    guard = [] if k.guard is None else [(a, False) for a in k.guard.atoms(sympy.Indexed)]
    fused = {t.name for t in k.fusion.onchip} if k.fusion else set()
    # a sparse kernel: the node written (injection) or the sample, and what the value reads
    accesses = [_accesses(k.target, k.expr)] if k.is_sparse else \
        [_accesses(a.lhs, a.rhs) for a in statements(k)]
    for found in accesses + [guard]:
        for acc, store in found:
            name = acc.base.name
            if k.fusion and name in fused:
                continue   # kept on chip
            arr = prog.array(name)
            key = (name, acc.indices[0] if arr.time_size is not None else None)
            (written if store else read).add(key)
            if arr.time_size is None:
                continue
            index = acc.indices[0]
            direct = None if index in ring else _direct(index)
            if index not in ring and (direct is None or direct[0].name not in steps):
                mixed.add(name)
                continue
            used = slots.setdefault(name, {})
            used[index] = used.get(index, False) or store
    views = {}
    for name, used in slots.items():
        if all(s in ring for s in used):
            distinct = len({ring[s].shift % ring[s].modulo for s in used}) == len(used)
        else:   # saved steps: one symbol, distinct shifts (keys), no ring slot beside them
            distinct = len({_direct(s)[0] if s not in ring else None for s in used}) == 1
        if name not in mixed and distinct:
            views[name] = used
    return Slots(views, frozenset(name for name, _ in read & written), len(read | written))


@dataclasses.dataclass(frozen=True)
class _Arg:
    """A value a kernel takes: its name inside the kernel, C type and host expression."""

    name: str
    ctype: str
    host: str


def _group_start(stop: str) -> c.Initializer:
    """sg_start: the first of a thread's sg_r points from sg_first, the last group shifted back
    to end at ``stop`` (overlapping the group before it)."""
    last = f"{stop} - (sg_r - 1)"
    return c.Initializer(c.Value("const sg_int", "sg_start"),
                         f"sg_first < {last} ? sg_first : {last}")


def _each_point(name: str, body: list) -> list:
    """``body`` at each of a thread's sg_r points along ``name`` from sg_start, unrolled."""
    return [c.Pragma("unroll"),
            c.For("int sg_k = 0", "sg_k < sg_r", "++sg_k",
                  c.Block([c.Initializer(c.Value("const sg_int", name), "sg_start + sg_k")]
                          + body))]


def _thread(axis):
    """This thread's global index along ``axis``, in signed arithmetic of the index type."""
    return f"(sg_int)blockIdx.{axis}*(sg_int)blockDim.{axis} + (sg_int)threadIdx.{axis}"


def _stride(axis):
    return f"(sg_int)blockDim.{axis}*(sg_int)gridDim.{axis}"


def _indent(lines, by="  "):
    return [by + ln for ln in lines]


def _size(dim, span) -> str:
    """C text of the points of a loop over ``dim`` from ``span`` (``Kernel.span``)."""
    (first, lo), (last, hi) = span
    if first == last:
        return str(1 + hi - lo)
    return f"{getattr(dim, last)} - {getattr(dim, first)} + {1 + hi - lo}"


def field_layout(shape, itemsize: int, halo_last: int | None) -> DeviceLayout:
    """A device copy's layout: pitched rows (``device_layout``) for a grid array of innermost
    halo ``halo_last``, the host's for others (None)."""
    return DeviceLayout.of(shape, itemsize, halo_last)


class CudaBackend(CBackend):
    """Prints a Program as CUDA C++: kernels for the loop nests, a host driver for the rest."""

    name = "cuda"
    language = "CUDA C++"
    tuning_rounds = 1   # CUDA events: a shape's trial times agree to 0.1 % between runs
    tuning_margin = 0.0
    source_suffix = ".cu"
    openmp_threads = False   # no OpenMP team in the calling process
    printer_class = CudaPrinter
    #: whether grid nests over 16-bit arrays compute two points a thread from paired loads
    #: (``cuda_pairs``); False: one point a thread, each 16-bit read alone
    pair_loads = True
    STORAGE_PROBES = {}      # nvcc always has cuda_fp16.h and cuda_bf16.h
    #: split nests at run time: the split is the autotuner's choice (``cuda_zero``)
    ZERO_SPLIT = True
    #: what fused nests (``stencilgen/ir/fusion``) may use: Hopper's 227 KiB of shared memory
    #: a block; a thread per producer point, at most 1024 a block less the 31 its halo columns'
    #: rounding to a warp may add; tiles of the inner dimensions (innermost last, a warp along
    #: it): 16x32 recomputes the least halo (864 threads at so 8), 8x32 the most.
    #: P and M not interleaved (``interleave``): the 128-bit loads halve the shared loads but
    #: hold 4 registers a quad; at 432 threads a block (128 registers) the SA-TTI kernel
    #: spilled and lost 12 % on an H200 (docs/performance.md, issue 63). An SM's 228 KiB, 1 KiB
    #: of it kept a block: two points a thread only where two blocks fit an SM (``_layout``)
    # queue: a staged nest's inputs along the streamed dimension from registers (4 blocks an
    # SM kept resident: ``fused_nests.resident_blocks``): the acoustic so 8 at 512^3 on an
    # H200 164.5 against 158.0 GPts/s from rings (docs/performance.md, issue 65)
    FUSION = dict(shared_bytes=227 * 1024, points=1024, pair=2, warp=32, interleave=False,
                  queue=True,
                  sm_shared_bytes=228 * 1024, block_reserve=1024,
                  tiles={2: ((16, 32), (12, 32), (8, 32)), 1: ((256,), (128,))},
                  # two steps a pass: wider tiles, the first step's halo a smaller share
                  step_tiles={2: ((32, 32), (24, 32), (16, 64), (16, 32))})

    def __init__(self, program, options: EmitOptions = EmitOptions()):
        super().__init__(program, options)
        self._slots: dict = {}
        # the nest running two time steps a pass, if any (``cuda_steps``), its pass; while the
        # pass's loop is printed, the field its launches reach through the level table
        self.stepped = next((k for k in program.steps if getattr(k, "steps", None)), None)
        self.passed = step_passes.pass_kernel(self.stepped) if self.stepped else None
        self._leveled = False
        # where the host reads the launch shapes: the tuning argument, or its copy with the
        # zero split's choice taken out (``cuda_zero``)
        self.tuning = zero_split.TUNED if any(zero_split.offered(self, k)
                                             for k in program.kernels) else program.tuning
        # device code is a template over its index type: 32-bit where every array fits
        self.index = "sg_int"
        if options.debug:
            self.printer = CheckedPrinter(program.dtype, self.printer.strides,
                                          [a.name for a in program.arrays])
            self.printer.stored = self.stored

    # -- what kernels take --------------------------------------------------------------------
    residency = "cuda"   # arrays are device copies the caller keeps (stencilgen.data.places)

    time_tiles = False   # time-skewed tiles are the C backend's (c_timetile)

    split_style = "points"   # a zero-box split tested by each thread

    def pitched(self, a) -> bool:
        """Whether ``a``'s device copy has pitched rows (``device_layout``): grid arrays,
        except those spanning fewer dimensions than the loops (``a.axes``) or with sizes of
        their own along some (``a.factors``: on a subsampling ConditionalDimension; ``a.offsets``:
        on a SubDomain) or a leading axis beyond the grid's (``a.extra``)."""
        return not (a.sparse or a.axes or a.factors or a.offsets or a.extra)

    def device_layout(self, a, shape, itemsize, halo) -> DeviceLayout:
        """The layout of the device copy the entry point expects for array ``a`` whose host
        shape is ``shape`` (halo widths ``halo``), in elements of its stored size (that of a
        16-bit format where it has one, whatever ``itemsize`` the host array has)."""
        size = 2 if a.store else itemsize
        return field_layout(shape, size, halo[-1] if self.pitched(a) and halo else None)

    def _device_stride(self, a, name) -> str:
        return device_layout.Pitched(a.name).stride(name) if self.pitched(a) else name

    def _array_args(self, a, const, slots=None) -> list[_Arg]:
        lay, real = a.layout, self.ctypes[a.name]
        strides = [_Arg(n, "const sg_int", self._device_stride(a, n)) for n, _ in lay.strides if n]
        if slots:
            # one pointer per time slot, computed on the host; the time stride is not needed
            step = self._device_stride(a, lay.strides[0][0])
            out = [_Arg(slot_pointer(a.name, s), f"{'' if w else 'const '}{real} *__restrict__",
                        self._level(a, s) or f"{a.name} + {_factor(s)}*{step}")
                   for s, w in slots.items()]
            return out + (self._points_args(a) if a.sparse else strides[1:])
        out = [_Arg(a.name, f"{const}{real} *__restrict__", a.name)]
        out += self._points_args(a) if a.sparse else strides
        if self.options.debug:
            out += [_Arg(f"sg_{a.name}_{b}", "const sg_int", f"sg_{a.name}_{b}")
                    for b in ("lo", "hi")]
        return out

    def _level(self, a, slot) -> str | None:
        """Where the loop of passes prints: the level table's buffer of ``a``'s ``slot``
        (``cuda_steps``), else None."""
        k = self.stepped
        if not self._leveled or a.name != k.steps.field:
            return None
        s = k.steps
        return step_passes.level(k, s.level(slot) if s.has(slot) else _direct(slot)[1],
                                self.program.time.name)

    @contextmanager
    def leveled(self):
        """Launch arguments printed through the level table (``_level``)."""
        self._leveled = True
        try:
            yield
        finally:
            self._leveled = False

    @staticmethod
    def _points_args(a) -> list[_Arg]:
        """A sparse function's point count and (device) coordinates."""
        lay = a.layout
        return [_Arg(lay.npoint, "const sg_int", lay.npoint),
                _Arg(lay.coords, "const double *__restrict__", lay.device_coords)]

    def kernel_args(self, k) -> list[_Arg]:
        """The values kernel ``k`` reads, in the program's order of declaration."""
        prog = self.program
        touched = _touched(k)
        exprs = [k.expr, k.target] if k.is_sparse else \
            [e for a in statements(k) for e in (a.lhs, a.rhs)]
        exprs += [k.guard] if k.guard is not None else []
        views = self.slot_views(k)
        free = {s.name for e in exprs for s in _symbols(e, views)}
        out = []
        for a in prog.arrays:
            if a.name in touched:
                out += self._array_args(a, "" if a.name in k.writes else "const ",
                                        views.get(a.name))
        for d in prog.dims:
            out += [_Arg(n, "const sg_int", n) for n in (d.lower, d.upper)]
        out += self._split_args(k)
        if k.split is not None:
            out += [_Arg(n, "const sg_int", n) for n in zero_box.params(k)]
        scalars = {d.origin for d in prog.dims} | {d.spacing for d in prog.dims} \
            if k.is_sparse else set()
        out += [_Arg(s.name, f"const {ctype(s.dtype)}", s.name) for s in prog.scalars
                if s.name in free or s.name in scalars]
        out += [_Arg(a.lhs.name, f"const {ctype(a.dtype)}", a.lhs.name) for a in prog.prologue
                if a.lhs.name in free]
        out += [_Arg(ti.symbol.name, "const sg_int", ti.symbol.name) for ti in prog.time_indices
                if ti.symbol.name in free]
        out += [_Arg(s.symbol.name, "const sg_int", s.symbol.name) for s in prog.subsamplings
                if s.symbol is not None and s.symbol.name in free]
        out += [_Arg(s.factor, "const sg_int", s.factor) for s in prog.subsamplings
                if s.factor in free]
        if prog.time.name in free:
            out.append(_Arg(prog.time.name, "const sg_int", prog.time.name))
        if not (k.is_sparse or k.sequential):
            out += [_Arg(f"sg_base{i}", "const sg_int", f"sg_b{i}") for i in range(len(k.dims))]
        return out

    def _split_args(self, k) -> list[_Arg]:
        """On a split grid: the region a grid nest runs over (``split.clip``), or the block a
        sparse kernel adds or gathers in (``split.owned``)."""
        prog = self.program
        if not prog.split:
            return []
        if k.is_sparse:
            names = [n for d in prog.dims for n in (d.first, d.size)]
        else:
            names = [n for d in prog.dims for n in split.clip(prog, d.symbol)]
        return [_Arg(n, "const long", n) for n in names]

    def refusal(self):
        """A CPU backend's refusals, and an injection into an integer field of a width CUDA
        has no atomicAdd for (it has them for 32-bit ones)."""
        base = super().refusal()
        if base:
            return base
        narrow = [k.target.base.name for k in self.program.kernels if k.is_sparse
                  and k.kind == "inject" and np.dtype(self.program.array(
                      k.target.base.name).dtype).name in ("int8", "int16", "int64", "uint8",
                                                          "uint16")]
        if narrow:
            return (f"injecting into {narrow[0]}, an integer field of a width CUDA has no "
                    f"atomic add for; give it dtype=numpy.int32 (or a float type), or use the "
                    f"C backend")
        return None

    def atomic_add(self, target, value, fmt=None, dtype=None):
        """``target += value`` against other points adding there (a 16-bit ``fmt``: the sum
        rounded once, ``format_prelude``; a complex ``dtype``: part by part)."""
        if dtype is not None and is_complex(dtype):
            return self.complex_atomic_add(target, value, dtype)
        if fmt:
            return [c.Statement(f"sg_atomic_add(&{target}, (float)({value}))")]
        return [c.Statement(f"atomicAdd(&{target}, ({ctype(dtype or self.program.dtype)})"
                            f"({value}))")]

    def sparse_pragmas(self, kernel):
        return []

    # -- device code ------------------------------------------------------------------------
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
            return (f"{self.index} {name} = {start} + {_thread('x')}", f"{name} <= {stop}",
                    f"{name} += {_stride('x')}")
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
            here = f"{start} + sg_base{i} + {_thread('xyz'[i])}"
            if pairs and depth == n - 1:   # two points a thread from an even index
                decls.append(c.Initializer(c.Value("const sg_int", point_pairs.START),
                                           point_pairs.first(start, _thread("x"))))
                inside.append(f"{point_pairs.START} <= {stop}")
                continue
            if depth != self.stacked(k) or n == 1:
                decls.append(c.Initializer(c.Value("const sg_int", name), here))
                inside.append(f"{name} <= {stop}")
                continue
            decls.append(c.Initializer(c.Value("const sg_int", "sg_first"),
                                       f"{start} + sg_base{i} + sg_r*({_thread('xyz'[i])})"))
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
                inside.append(f"{_thread('xyz'[i])} == 0")
                continue
            start, stop = self.bounds(k, depth)
            name = k.dims[depth].name
            if many and depth == along:
                decls.append(c.Initializer(c.Value("const sg_int", "sg_first"),
                                           f"{start} + sg_base{i} + sg_r*({_thread('xyz'[i])})"))
                inside.append(f"sg_first <= {stop}")
                continue
            decls.append(c.Initializer(c.Value("const sg_int", name),
                                       f"{start} + sg_base{i} + {_thread('xyz'[i])}"))
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
            return _each_point(name, [inner])
        body = c.Block(each_point(body))
        for depth in reversed(range(m)):
            name, (start, stop) = k.dims[depth].name, self.bounds(k, depth)
            body = c.For(f"sg_int {name} = {start}", f"{name} <= {stop}", f"++{name}", body)
        real = ctype(self.program.dtype)
        head = [c.Initializer(c.Value(real, f"{acc}[sg_r]" if many else acc),
                              "{}" if many else "0") for acc in sums.values()]
        if many:
            head.append(_group_start(self.bounds(k, along)[1]))
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
            _group_start(stop)] + _each_point(name, body)

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
            loops = "\n".join(_indent(str(self.kernel_loops(k)).splitlines()))
        return (f"/* {k.name}: {k.flops} flops, {k.bytes} bytes per point */\n"
                f"template <typename sg_int, int sg_r{zero_split.template_param(k)}>\n"
                f"static __global__ void __launch_bounds__({self.threads(k)})\n"
                f"{k.section.function}({params})\n{{\n  {GRID_WAIT}\n{loops}\n}}\n")

    # -- host code --------------------------------------------------------------------------
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
                    f"const dim3 sg_grid(sg_blocks(sg_n0, {SPARSE_BLOCK}, {GRID_LIMIT[0]}));"]
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
                    f"{GRID_LIMIT[0]}));"]
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
        lines += [f"if ({cond}) {{"] + _indent(body) + ["}"]
        if k.when is not None:   # a section that runs at some time steps only
            lines = [f"if ({self.expr(k.when)}) {{"] + _indent(lines) + ["}"]
        return ["{"] + _indent(lines) + ["}"]

    def _extent(self, k, depth, symbol) -> str:
        """C text of the points of loop ``depth`` of grid nest ``k`` (on a split grid, of the
        region it runs over: it may be empty, or negative)."""
        if k.fixed_at(depth) is not None:
            return "1"
        if self.program.split:
            start, stop = self.bounds(k, depth)
            return f"{stop} - {start} + 1"
        return _size(self.dims[symbol], k.span(depth))

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
            return [f"if (sg_r == {r}) {{"] + _indent(both(r, extra)) + ["} else {"] + \
                _indent(both(1, extra)) + ["}"]
        return zero_split.instances(self, k, each)

    @staticmethod
    def _chunks(n, launch, along=None):
        """``launch`` once per chunk of the nest that one grid can cover (almost always one):
        sg_b<axis> is where the chunk starts, sg_grid covers it (sg_r points per thread along
        thread axis ``along``, default the outermost)."""
        along = n - 1 if along is None else along
        per = [f"sg_block.{'xyz'[i]}" + ("*sg_r" if i == along and n > 1 else "")
               for i in range(n)]
        grid = ", ".join(f"sg_blocks(sg_n{i} - sg_b{i}, {p}, {GRID_LIMIT[i]})"
                         for i, p in enumerate(per))
        lines = [f"const dim3 sg_grid({grid});"] + launch
        for i in range(n):
            step = f"{GRID_LIMIT[i]}*{per[i]}"
            lines = [f"for (long sg_b{i} = 0; sg_b{i} < sg_n{i}; sg_b{i} += {step}) {{"] + \
                _indent(lines) + ["}"]
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
            touched = _touched(k)
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

    def _is_pass(self, k) -> bool:
        """Whether ``k`` is the two-step pass (``cuda_steps``)."""
        return self.passed is not None and k.name == self.passed.name

    def time_loop_lines(self, launches):
        prog = self.program
        lines = ["for ({}; {}; {}) {{".format(*time_loop_header(prog))]
        lines += _indent([str(s) for s in self.time_slots()])
        for k in prog.steps:
            lines += _indent(self.exchanged(k, launches[k.section.timer], prog.time.name))
        # the steps launched are the steps done: the copies back wait for all of them
        lines += _indent([interrupt.step_end(prog)]) + ["}"]
        if self.stepped is None:
            return lines
        k = self.stepped
        return step_passes.setup(self, k) + ["if (sg_two) {"] + \
            _indent(step_passes.loop(self, k)) + ["} else {"] + _indent(lines) + ["}"]

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
                        self, members), SPARSE_BLOCK, GRID_LIMIT[0])
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
        return lines + ["{"] + _indent(main) + ["}"] + self.cleanup()

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
        if self.complex:
            header += "#define SG_HD __host__ __device__\n" + COMPLEX_CXX
        fused = [k for k in self.program.kernels if k.fusion is not None]
        fused += [self.passed] if self.passed is not None else []
        if any(k.fusion.pair > 1 for k in fused):
            header += fused_nests.PAIR_PRELUDE
        if any(k.fusion.interleave for k in fused):
            header += fused_nests.QUAD_PRELUDE
        parts = [header, _PRELUDE % {"sticky": ", ".join(_STICKY), "slots": EVENT_SLOTS,
                                     "sample": TIMER_SAMPLE},
                 self.shape_tables(), interrupt.handler('extern "C" ')]
        if self.program.split or self.program.zero_boxes:
            parts.append(split.helpers("static inline __host__ __device__") + "\n")
        if self.options.debug:
            names = ", ".join(f'"{a.name}"' for a in self.program.arrays)
            parts += [_DEBUG_PRELUDE, _OOB_REPORT % {"names": names}]
        launches, grouped = {}, self.sparse_groups()
        for first, members in grouped.items():
            args = sparse_kernels.parameters(self, members)
            parts.append(sparse_kernels.device_kernel(self, members, args, SPARSE_BLOCK))
            launches[first.section.timer] = (
                sparse_kernels.launch(self, members, args, SPARSE_BLOCK, GRID_LIMIT[0]), None)
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
