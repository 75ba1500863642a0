"""Runs a CUDA Operator's generated source on the host, where no GPU is: the source is built as
plain C++ (``nvcc -x c++``, so that cuda_fp16.h and cuda_bf16.h give their host conversions)
against a stand-in for the CUDA runtime, and each launch runs its blocks one after another.
Fields are laid out as the CUDA backend's device copies (pitched rows, pads), so the kernels'
index arithmetic, the device layout and the launch sizes are all exercised.

A kernel without ``__syncthreads()`` runs its threads one after another, to the end, in any
order. A kernel with barriers (its ``__global__`` function's text calls ``__syncthreads``) runs
the threads of a block as coroutines (ucontext, a stack of ``STACK_KIB`` each with a guard page
below it) that switch at each ``__syncthreads()``: once every thread of the block reached it, all
go on; within one interval between barriers the threads run in turn, forward or, with
``run(reverse=True)``, backward, so that a race between two threads tends to change the results
from one order to the other. A thread that returns while others wait at a barrier makes the
launch fail (``cudaGetLastError``), as does a barrier reached outside the coroutines.

Dynamic shared memory (``extern __shared__ ... name[];``, sized by a launch's third argument) is
one buffer per block, filled with 0xFF bytes before the block starts (NaN as float, double, half
and bfloat16), so a read of an element no thread wrote shows up. ``cudaFuncSetAttribute`` keeps
each kernel's ``cudaFuncAttributeMaxDynamicSharedMemorySize``; a launch asking for more than
48 KiB without it, or more than ``SHARED_MAX`` bytes (an H100's opt-in limit), fails instead of
running. Static ``__shared__`` arrays are not emulated.

Atomics are plain updates (one thread at a time). The warp reductions of the NaN/Inf count are
not emulated (runs pass no checks).
"""
from __future__ import annotations

import ctypes
import hashlib
import mmap
import os
import re
import subprocess
import tempfile

import numpy as np

from stencilgen.runtime.arguments import bind

#: the stack of each emulated thread of a kernel with barriers (the kernels have big locals)
STACK_KIB = 256
#: the most dynamic shared memory a block may ask for (an H100's opt-in limit, 227 KiB)
SHARED_MAX = 227 * 1024

_FAKES = ("Malloc", "Free", "Memset", "Memcpy", "EventCreate", "EventRecord",
          "EventSynchronize", "EventDestroy", "EventElapsedTime", "DeviceSynchronize",
          "GetLastError", "GetErrorString", "GetErrorName")
_RUNTIME = r"""
#include <cuda_runtime_api.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <vector_types.h>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __align__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
static uint3 blockIdx, threadIdx;
static dim3 blockDim, gridDim;
/* the launch error cudaGetLastError returns next (and clears) */
static cudaError_t sg_emu_error = cudaSuccess;
static void sg_emu_fail(cudaError_t e, const char *why)
{ if (sg_emu_error == cudaSuccess) { sg_emu_error = e; fprintf(stderr, "emulation: %%s\n", why); } }
static const char *sg_emu_GetErrorString(cudaError_t) { return "emulated"; }
static const char *sg_emu_GetErrorName(cudaError_t) { return "emulated"; }
/* allocations of more bytes than this fail as out of memory (``run(malloc_max=)``) */
extern "C" unsigned long sg_emu_malloc_max;
unsigned long sg_emu_malloc_max = ~0UL;
/* the allocations made */
extern "C" long sg_emu_mallocs;
long sg_emu_mallocs = 0;
static cudaError_t sg_emu_Malloc(void **p, size_t n)
{ if (n > sg_emu_malloc_max) { *p = NULL; return cudaErrorMemoryAllocation; }
  ++sg_emu_mallocs; *p = calloc(n, 1); return cudaSuccess; }
static cudaError_t sg_emu_Free(void *p) { free(p); return cudaSuccess; }
static cudaError_t sg_emu_Memset(void *p, int v, size_t n)
{ memset(p, v, n); return cudaSuccess; }
static cudaError_t sg_emu_Memcpy(void *d, const void *s, size_t n, int)
{ memcpy(d, s, n); return cudaSuccess; }
static cudaError_t sg_emu_EventCreate(cudaEvent_t *e) { *e = (cudaEvent_t)1; return cudaSuccess; }
/* event records made, and the milliseconds every timed pair reports */
extern "C" long sg_emu_records;
long sg_emu_records = 0;
extern "C" double sg_emu_event_ms;
double sg_emu_event_ms = 0;
static cudaError_t sg_emu_EventRecord(cudaEvent_t, int) { ++sg_emu_records; return cudaSuccess; }
static cudaError_t sg_emu_EventSynchronize(cudaEvent_t) { return cudaSuccess; }
static cudaError_t sg_emu_EventDestroy(cudaEvent_t) { return cudaSuccess; }
static cudaError_t sg_emu_EventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t)
{ *ms = (float)sg_emu_event_ms; return cudaSuccess; }
static cudaError_t sg_emu_DeviceSynchronize(void) { return cudaSuccess; }
static cudaError_t sg_emu_GetLastError(void)
{ const cudaError_t e = sg_emu_error; sg_emu_error = cudaSuccess; return e; }
/* the dynamic shared memory each kernel may use, set by cudaFuncSetAttribute (the kernel's
   text, its template arguments included, without spaces) */
static std::map<std::string, int> sg_emu_smem_max;
static cudaError_t sg_emu_FuncSetAttribute(const char *kernel, cudaFuncAttribute attr, int value)
{
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || value > %(shared_max)d) return cudaErrorInvalidValue;
  sg_emu_smem_max[kernel] = value;
  return cudaSuccess;
}
%(renames)s
template <typename T> static T atomicAdd(T *p, const T v) { const T old = *p; *p += v; return old; }
static unsigned short atomicCAS(unsigned short *p, unsigned short cmp, unsigned short v)
{ const unsigned short old = *p; if (old == cmp) *p = v; return old; }
static unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }
template <typename T> static T __shfl_down_sync(unsigned, T, int) { return 0; }
/* the current block's dynamic shared memory */
static unsigned char *sg_emu_smem = NULL;
static size_t sg_emu_smem_size = 0;
/* the threads of a block with barriers, as coroutines */
enum { SG_EMU_READY, SG_EMU_BARRIER, SG_EMU_DONE };
struct sg_emu_thread { ucontext_t ctx; int state; };
static ucontext_t sg_emu_main;
static std::vector<sg_emu_thread> sg_emu_threads;
static std::vector<char *> sg_emu_stacks;
static size_t sg_emu_cur = 0;
static bool sg_emu_coroutines = false;
static const std::function<void()> *sg_emu_body = NULL;
/* 1: the threads of a block run in turn from the last one */
extern "C" int sg_emu_reverse;
int sg_emu_reverse = 0;
static void __syncthreads(void)
{
  if (!sg_emu_coroutines) {
    sg_emu_fail(cudaErrorLaunchFailure, "__syncthreads() in a kernel run without coroutines");
    return;
  }
  sg_emu_threads[sg_emu_cur].state = SG_EMU_BARRIER;
  swapcontext(&sg_emu_threads[sg_emu_cur].ctx, &sg_emu_main);
}
static void sg_emu_thread_main(void)
{
  (*sg_emu_body)();
  sg_emu_threads[sg_emu_cur].state = SG_EMU_DONE;   /* uc_link: back to sg_emu_main */
}
static char *sg_emu_stack(size_t i)
{
  const size_t page = 4096, size = %(stack_kib)dUL * 1024;
  while (sg_emu_stacks.size() <= i) {
    char *p = (char *)mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) { perror("emulation: mmap"); abort(); }
    mprotect(p, page, PROT_NONE);   /* an overflow faults rather than corrupts */
    sg_emu_stacks.push_back(p + page);
  }
  return sg_emu_stacks[i];
}
static void sg_emu_set_thread(size_t i, const dim3 b)
{
  threadIdx.x = i %% b.x; threadIdx.y = (i / b.x) %% b.y; threadIdx.z = i / (b.x * b.y);
}
/* one block whose threads meet at barriers: each round resumes every thread not done; a
   round ends with all of them at the barrier (the next round releases them) or done */
static void sg_emu_block(const dim3 b, const std::function<void()> &kernel)
{
  const size_t n = (size_t)b.x * b.y * b.z;
  if (sg_emu_threads.size() < n) sg_emu_threads.resize(n);
  for (size_t i = 0; i < n; ++i) {
    sg_emu_thread &t = sg_emu_threads[i];
    getcontext(&t.ctx);
    t.ctx.uc_stack.ss_sp = sg_emu_stack(i);
    t.ctx.uc_stack.ss_size = %(stack_kib)dUL * 1024;
    t.ctx.uc_link = &sg_emu_main;
    makecontext(&t.ctx, sg_emu_thread_main, 0);
    t.state = SG_EMU_READY;
  }
  sg_emu_body = &kernel;
  sg_emu_coroutines = true;
  for (;;) {
    size_t waiting = 0, done = 0;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = sg_emu_reverse ? n - 1 - k : k;
      sg_emu_thread &t = sg_emu_threads[i];
      if (t.state == SG_EMU_DONE) { ++done; continue; }
      t.state = SG_EMU_READY;
      sg_emu_cur = i;
      sg_emu_set_thread(i, b);
      swapcontext(&sg_emu_main, &t.ctx);
      if (t.state == SG_EMU_BARRIER) ++waiting; else ++done;
    }
    if (waiting == 0) break;
    if (done) sg_emu_fail(cudaErrorLaunchFailure,
                          "a thread returned while others of its block wait at a barrier");
  }
  sg_emu_coroutines = false;
}
static void sg_launch(const dim3 g, const dim3 b, const size_t smem, const bool barriers,
                      const char *fn, const std::function<void()> &kernel)
{
  if (smem > %(shared_max)dUL || (smem > 48 * 1024 && (!sg_emu_smem_max.count(fn)
                                                       || (size_t)sg_emu_smem_max[fn] < smem))) {
    sg_emu_fail(cudaErrorInvalidValue, "more dynamic shared memory than the kernel may use");
    return;
  }
  if (smem > sg_emu_smem_size) {
    free(sg_emu_smem);
    sg_emu_smem = (unsigned char *)aligned_alloc(256, (smem + 255) / 256 * 256);
    sg_emu_smem_size = smem;
  }
  gridDim = g; blockDim = b;
  for (unsigned bz = 0; bz < g.z; ++bz) for (unsigned by = 0; by < g.y; ++by)
  for (unsigned bx = 0; bx < g.x; ++bx) {
    blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
    if (smem) memset(sg_emu_smem, 0xff, smem);
    if (barriers) { sg_emu_block(b, kernel); continue; }
    const size_t n = (size_t)b.x * b.y * b.z;
    for (size_t k = 0; k < n; ++k) {
      sg_emu_set_thread(sg_emu_reverse ? n - 1 - k : k, b);
      kernel();
    }
  }
}
"""


def _split_top(text: str) -> list[str]:
    """``text`` split at its commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


_KERNEL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)\s*)?"
                     r"(\w+)\s*\(")


def _barrier_kernels(src: str) -> set[str] | None:
    """The names of the kernels whose text calls ``__syncthreads`` (None: all of them, as a
    function before the first kernel calls it). A kernel's text runs to the next kernel or the
    entry point."""
    found = list(_KERNEL.finditer(src))
    if not found:
        return set()
    if "__syncthreads" in src[:found[0].start()]:
        return None
    entry = src.find('extern "C"', found[-1].end())
    ends = [m.start() for m in found[1:]] + [entry if entry >= 0 else len(src)]
    return {m.group(1) for m, end in zip(found, ends) if "__syncthreads" in src[m.end():end]}


def _key(kernel: str) -> str:
    """A kernel's text as the emulated ``cudaFuncSetAttribute`` keeps it: without spaces."""
    return re.sub(r"\s+", "", kernel)


def _launches(src: str, barriers: set[str] | None) -> str:
    """``k<<<grid, block[, bytes]>>>(args);`` -> ``sg_launch(dim3(grid), dim3(block), bytes,
    barriers, "k", [&]{ k(args); });``, barriers: whether kernel ``k`` calls
    ``__syncthreads``: its name is in ``barriers`` (None: every kernel)."""

    def one(m):
        grid, block, *rest = _split_top(m.group(2))
        smem = rest[0].strip() if rest else "0"
        kernel = m.group(1)
        sync = barriers is None or kernel.split("<")[0] in barriers
        return (f"sg_launch(dim3({grid}), dim3({block}), (size_t)({smem}), "
                f"{'true' if sync else 'false'}, \"{_key(kernel)}\", "
                f"[&]{{ {kernel}({m.group(3)}); }});")
    return re.sub(r"(\w+(?:<[^<>]*>)?)<<<(.*?)>>>\((.*)\);", one, src)


def _early(src: str) -> str:
    """``sg_early(k, grid, block, bytes, stream, args);`` (a launch of the generated code) ->
    ``k<<<grid, block, bytes>>>(args);``: the emulation runs launches in order."""
    def one(m):
        grid, block, shared, _stream, *args = _split_top(m.group(2))
        return f"{m.group(1)}<<<{grid}, {block}, {shared}>>>({','.join(args)});"
    return re.sub(r"\bsg_early\((\w+(?:<[^<>]*>)?), (.*)\);", one, src)


def _shared(src: str) -> str:
    """``extern __shared__ [__align__(n)] T name[];`` -> a pointer ``name`` to the emulated
    block's dynamic shared memory."""
    return re.sub(r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([\w\s]*?\w)\s+(\w+)"
                  r"\s*\[\s*\]\s*;", r"\1 *const \2 = (\1 *)sg_emu_smem;", src)


def host_source(cuda_source: str) -> str:
    """The generated CUDA source as host C++ (see the module docstring)."""
    runtime = _RUNTIME % {"renames": "\n".join(f"#define cuda{f} sg_emu_{f}" for f in _FAKES),
                          "stack_kib": STACK_KIB, "shared_max": SHARED_MAX}
    host = _shared(cuda_source.replace("#include <cuda_runtime.h>", runtime))
    host = re.sub(r"cudaFuncSetAttribute\((\w+(?:<[^<>]*>)?),",
                  lambda m: f'sg_emu_FuncSetAttribute("{_key(m.group(1))}",', host)
    return _launches(_early(host), _barrier_kernels(cuda_source))


def build(cuda_source: str, where: str):
    """The host build of ``cuda_source`` (a shared library in directory ``where``)."""
    src = host_source(cuda_source)
    tag = hashlib.sha1(src.encode()).hexdigest()[:16]
    lib = os.path.join(where, f"emulated_{tag}.so")
    if not os.path.exists(lib):
        path = os.path.join(where, f"emulated_{tag}.cpp")
        with open(path, "w") as fh:
            fh.write(src)
        done = subprocess.run(["nvcc", "-x", "c++", "-std=c++17", "-O1", "-shared",
                               "-Xcompiler", "-fPIC", "-w", path, "-o", lib],
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"host build of {path} failed:\n{done.stderr[-4000:]}")
    return ctypes.CDLL(lib)


def _rows(dev: np.ndarray, lay) -> np.ndarray:
    """The host shape's rows inside a device buffer of layout ``lay``."""
    return dev[lay.front:lay.front + lay.rows * lay.pitch].reshape(lay.rows, lay.pitch)[
        :, :lay.width]


_PROT_NONE = 0


def _fenced(nbytes: int, at: str) -> np.ndarray:
    """``nbytes`` zeroed bytes with an inaccessible page right before them (``at="start"``)
    or right after them (``"end"``): a read beyond that side faults. Kept until exit."""
    page = mmap.PAGESIZE
    span = -(-nbytes // page) * page
    buf = mmap.mmap(-1, span + 2 * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    for where in (base, base + page + span):
        if libc.mprotect(ctypes.c_void_p(where), ctypes.c_size_t(page), _PROT_NONE):
            raise OSError(ctypes.get_errno(), "mprotect failed")
    first = base + page if at == "start" else base + page + span - nbytes
    _FENCES.append(buf)
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(first))


_FENCES: list = []


def run(op, where: str | None = None, fence: str | None = None,
        tuning: list[int] | None = None, reverse: bool = False, timed: dict | None = None,
        malloc_max: int | None = None, control: list | None = None, **kwargs) -> int:
    """``op.apply(**kwargs)`` for CUDA Operator ``op``, emulated on the host; the fields get
    the results. Returns the entry point's status. ``fence`` ("start" or "end"): each device
    copy sits against an inaccessible page on that side (``_fenced``). ``tuning``: the launch
    shape of each section timer (an index into ``op._emitter.launch_shapes()[timer]``; None:
    the defaults). ``reverse``: the threads of each block run in turn from the last one.
    ``timed``: every pair of timing events reports ``timed["ms"]`` milliseconds (default 0);
    the run leaves the section timers in ``timed["timers"]`` and the event records made in
    ``timed["records"]``, the allocations made in ``timed["mallocs"]``. ``malloc_max``: the entry point's allocations of more bytes fail
    (out of memory). ``control``: the stop flag and step count the entry point takes
    (``backends/interrupt``), updated in place."""
    where = where or tempfile.gettempdir()
    lib = build(op.ccode, where)
    prog, em, copies = op.program, op._emitter, []

    def attach(items):
        out = []
        for arr, st, halo in items:
            lay = em.device_layout(arr, st.shape, st.dtype.itemsize, halo)
            nbytes = max(lay.length, 1) * lay.itemsize
            dev = _fenced(nbytes, fence) if fence else np.zeros(nbytes, dtype=np.uint8)
            if st.dtype.itemsize == lay.itemsize:   # a temporary kept wider: no values yet
                dev = dev.view(st.dtype)
                _rows(dev, lay)[:] = st.host().reshape(lay.rows, lay.width)
                copies.append((st, lay, dev))
            out.append(dev.ctypes.data)
            copies.append((None, None, dev))       # alive until the run ends
        return out
    args, keep = bind(prog, op._bindings, kwargs, {}, op.name, attach)
    timers = np.zeros(max(len(prog.kernels), 1))
    args[prog.timers] = timers.ctypes.data
    args[prog.checks_param] = args[prog.tuning] = None
    block = None
    if control is not None:
        block = (ctypes.c_long * 2)(*control)
        args[prog.control] = ctypes.addressof(block)
    if tuning is not None:
        shapes = np.asarray(tuning, dtype=np.int64)
        if shapes.shape != timers.shape:
            raise ValueError(f"tuning: {len(timers)} launch shapes wanted, not {shapes.size}")
        args[prog.tuning] = shapes.ctypes.data
    ctypes.c_int.in_dll(lib, "sg_emu_reverse").value = int(reverse)
    ctypes.c_double.in_dll(lib, "sg_emu_event_ms").value = (timed or {}).get("ms", 0.0)
    ctypes.c_long.in_dll(lib, "sg_emu_records").value = 0
    ctypes.c_long.in_dll(lib, "sg_emu_mallocs").value = 0
    ctypes.c_ulong.in_dll(lib, "sg_emu_malloc_max").value = \
        (1 << 64) - 1 if malloc_max is None else malloc_max
    fn = lib[prog.entry]
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_long if p.kind == "index" else
                   np.ctypeslib.as_ctypes_type(p.dtype) if p.kind == "scalar" else
                   ctypes.c_void_p for p in prog.parameters()]
    status = fn(*[args[p.name] for p in prog.parameters()])
    if block is not None:
        control[:] = list(block)
    for st, lay, dev in copies:
        if st is not None:
            st.host()[...] = _rows(dev, lay).reshape(st.shape)
            st.host_written()
    del keep
    if timed is not None:
        timed.update(timers=timers, records=ctypes.c_long.in_dll(lib, "sg_emu_records").value,
                     mallocs=ctypes.c_long.in_dll(lib, "sg_emu_mallocs").value)
    return status
