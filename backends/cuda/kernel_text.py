"""What the CUDA backend's source is made of below its emitter: the printers (checked, with
slot pointers), the launch shapes and limits, the preludes of C text, a nest's time slots and
statements, the device layout of a field."""
from __future__ import annotations

import dataclasses

import cgen as c
import sympy

from ..common.cprinter import CPrinter, ctype
from ..common.device_layout import DeviceLayout

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
STICKY = ("cudaErrorIllegalAddress", "cudaErrorAssert", "cudaErrorLaunchFailure",
           "cudaErrorIllegalInstruction", "cudaErrorMisalignedAddress",
           "cudaErrorHardwareStackError", "cudaErrorInvalidPc", "cudaErrorLaunchTimeout")

PRELUDE = r"""
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

DEBUG_PRELUDE = r"""
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


OOB_REPORT = r"""static const char *sg_array_names[] = {%(names)s};

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
    widen to float, stores round to nearest even; float reciprocals through ``sg_rcp``."""

    FORMATS = {"float16": ("__half", "__half2float({})", "__float2half_rn({})"),
               "bfloat16": ("__nv_bfloat16", "__bfloat162float({})", "__float2bfloat16_rn({})")}

    def reciprocal(self, text: str, product: bool) -> str:
        return f"sg_rcp({text})" if self.single else super().reciprocal(text, product)


#: float 1/x without the IEEE division's range test and slow path (a call-like branch that
#: cost the staged acoustic 16 of its 128 SASS instructions a point): the hardware's
#: approximation refined by one Newton step is correctly rounded but for quotients within
#: 2^-46 of a rounding midpoint (then 1 ulp off); 0, inf and NaN as IEEE; subnormals flush to
#: zero, as under --use_fast_math (a subnormal x gives inf, an x over 2^126 gives 0; keeping
#: them costs 6 more instructions a point). The host (and the tests' CPU emulator) divides.
RECIPROCAL_PRELUDE = r"""
static __host__ __device__ __forceinline__ float sg_rcp(const float x)
{
#ifdef __CUDA_ARCH__
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  const float n = fmaf(r, fmaf(-x, r, 1.0f), r);
  return n == n ? n : r;   /* x = 0, inf, or so small that 1/x overflows: r is 1/x */
#else
  return 1.0f/x;
#endif
}
"""


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
    symbol, shift = direct_index(slot)
    return f"sg_{array}_{symbol}_{'p' if shift > 0 else 'm'}{abs(shift)}"


def index_factor(index) -> str:
    """C text of a time index as a factor of a product."""
    return str(index) if isinstance(index, sympy.Symbol) else f"({index})"


def direct_index(index):
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


def touched_arrays(k) -> set:
    """The arrays kernel ``k`` reads or writes (a sparse kernel: its sparse function too)."""
    return set(k.reads) | set(k.writes) | ({k.sparse} if k.is_sparse else set())


def symbols_in(e, views):
    """The symbols ``e`` prints with: a slot read through its own pointer needs no slot index."""
    if isinstance(e, sympy.Indexed):
        indices = e.indices[1:] if e.base.name in views else e.indices
        return {e.base.label}.union(*(i.free_symbols for i in indices))
    if isinstance(e, sympy.Symbol):
        return {e}
    return set().union(*(symbols_in(a, views) for a in e.args))


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
            direct = None if index in ring else direct_index(index)
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
            distinct = len({direct_index(s)[0] if s not in ring else None for s in used}) == 1
        if name not in mixed and distinct:
            views[name] = used
    return Slots(views, frozenset(name for name, _ in read & written), len(read | written))


@dataclasses.dataclass(frozen=True)
class KernelArg:
    """A value a kernel takes: its name inside the kernel, C type and host expression."""

    name: str
    ctype: str
    host: str


def group_start(stop: str) -> c.Initializer:
    """sg_start: the first of a thread's sg_r points from sg_first, the last group shifted back
    to end at ``stop`` (overlapping the group before it)."""
    last = f"{stop} - (sg_r - 1)"
    return c.Initializer(c.Value("const sg_int", "sg_start"),
                         f"sg_first < {last} ? sg_first : {last}")


def point_loop(name: str, body: list) -> list:
    """``body`` at each of a thread's sg_r points along ``name`` from sg_start, unrolled."""
    return [c.Pragma("unroll"),
            c.For("int sg_k = 0", "sg_k < sg_r", "++sg_k",
                  c.Block([c.Initializer(c.Value("const sg_int", name), "sg_start + sg_k")]
                          + body))]


def thread_index(axis):
    """This thread's global index along ``axis``, in signed arithmetic of the index type."""
    return f"(sg_int)blockIdx.{axis}*(sg_int)blockDim.{axis} + (sg_int)threadIdx.{axis}"


def thread_stride(axis):
    return f"(sg_int)blockDim.{axis}*(sg_int)gridDim.{axis}"


def indent(lines, by="  "):
    return [by + ln for ln in lines]


def extent_text(dim, span) -> str:
    """C text of the points of a loop over ``dim`` from ``span`` (``Kernel.span``)."""
    (first, lo), (last, hi) = span
    if first == last:
        return str(1 + hi - lo)
    return f"{getattr(dim, last)} - {getattr(dim, first)} + {1 + hi - lo}"


def field_layout(shape, itemsize: int, halo_last: int | None) -> DeviceLayout:
    """A device copy's layout: pitched rows (``device_layout``) for a grid array of innermost
    halo ``halo_last``, the host's for others (None)."""
    return DeviceLayout.of(shape, itemsize, halo_last)
