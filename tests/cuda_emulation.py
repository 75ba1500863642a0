"""Runs a CUDA Operator's generated source on the host, where no GPU is: the source is built as
plain C++ (``nvcc -x c++``, so that cuda_fp16.h and cuda_bf16.h give their host conversions)
against a stand-in for the CUDA runtime, and each launch runs its blocks and threads one after
another. Fields are laid out as the CUDA backend's device copies (pitched rows, pads), so the
kernels' index arithmetic, the device layout and the launch sizes are all exercised.

Kernels here have no shared memory or barriers: threads run in any order. Atomics are plain
updates (one thread at a time). The warp reductions of the NaN/Inf count are not emulated
(runs pass no checks).
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

from stencilgen.arguments import bind

_FAKES = ("Malloc", "Free", "Memset", "Memcpy", "EventCreate", "EventRecord",
          "EventSynchronize", "EventDestroy", "EventElapsedTime", "DeviceSynchronize",
          "GetLastError", "GetErrorString", "GetErrorName")
_RUNTIME = r"""
#include <cuda_runtime_api.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <vector_types.h>
#include <functional>
#include <stdlib.h>
#include <string.h>
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(n)
static uint3 blockIdx, threadIdx;
static dim3 blockDim, gridDim;
static const char *sg_emu_GetErrorString(cudaError_t) { return "emulated"; }
static const char *sg_emu_GetErrorName(cudaError_t) { return "emulated"; }
static cudaError_t sg_emu_Malloc(void **p, size_t n) { *p = calloc(n, 1); return cudaSuccess; }
static cudaError_t sg_emu_Free(void *p) { free(p); return cudaSuccess; }
static cudaError_t sg_emu_Memset(void *p, int v, size_t n)
{ memset(p, v, n); return cudaSuccess; }
static cudaError_t sg_emu_Memcpy(void *d, const void *s, size_t n, int)
{ memcpy(d, s, n); return cudaSuccess; }
static cudaError_t sg_emu_EventCreate(cudaEvent_t *e) { *e = (cudaEvent_t)1; return cudaSuccess; }
static cudaError_t sg_emu_EventRecord(cudaEvent_t, int) { return cudaSuccess; }
static cudaError_t sg_emu_EventSynchronize(cudaEvent_t) { return cudaSuccess; }
static cudaError_t sg_emu_EventDestroy(cudaEvent_t) { return cudaSuccess; }
static cudaError_t sg_emu_EventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t)
{ *ms = 0; return cudaSuccess; }
static cudaError_t sg_emu_DeviceSynchronize(void) { return cudaSuccess; }
static cudaError_t sg_emu_GetLastError(void) { return cudaSuccess; }
%(renames)s
template <typename T> static T atomicAdd(T *p, const T v) { const T old = *p; *p += v; return old; }
static unsigned short atomicCAS(unsigned short *p, unsigned short cmp, unsigned short v)
{ const unsigned short old = *p; if (old == cmp) *p = v; return old; }
static unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }
template <typename T> static T __shfl_down_sync(unsigned, T, int) { return 0; }
static void sg_launch(const dim3 g, const dim3 b, const std::function<void()> &kernel)
{
  gridDim = g; blockDim = b;
  for (unsigned bz = 0; bz < g.z; ++bz) for (unsigned by = 0; by < g.y; ++by)
  for (unsigned bx = 0; bx < g.x; ++bx) for (unsigned tz = 0; tz < b.z; ++tz)
  for (unsigned ty = 0; ty < b.y; ++ty) for (unsigned tx = 0; tx < b.x; ++tx) {
    blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
    threadIdx.x = tx; threadIdx.y = ty; threadIdx.z = tz;
    kernel();
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


def _launches(src: str) -> str:
    """``k<<<grid, block>>>(args);`` -> ``sg_launch(dim3(grid), dim3(block), [&]{ k(args); });``"""
    def one(m):
        grid, block = _split_top(m.group(2))
        return f"sg_launch(dim3({grid}), dim3({block}), [&]{{ {m.group(1)}({m.group(3)}); }});"
    return re.sub(r"(\w+(?:<[^<>]*>)?)<<<(.*?)>>>\((.*)\);", one, src)


def host_source(cuda_source: str) -> str:
    """The generated CUDA source as host C++ (see the module docstring)."""
    runtime = _RUNTIME % {"renames": "\n".join(f"#define cuda{f} sg_emu_{f}" for f in _FAKES)}
    return _launches(cuda_source.replace("#include <cuda_runtime.h>", runtime))


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


def run(op, where: str | None = None, fence: str | None = None, **kwargs) -> int:
    """``op.apply(**kwargs)`` for CUDA Operator ``op``, emulated on the host; the fields get
    the results. Returns the entry point's status. ``fence`` ("start" or "end"): each device
    copy sits against an inaccessible page on that side (``_fenced``)."""
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
    fn = lib[prog.entry]
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_long if p.kind == "index" else
                   np.ctypeslib.as_ctypes_type(p.dtype) if p.kind == "scalar" else
                   ctypes.c_void_p for p in prog.parameters()]
    status = fn(*[args[p.name] for p in prog.parameters()])
    for st, lay, dev in copies:
        if st is not None:
            st.host()[...] = _rows(dev, lay).reshape(st.shape)
            st.host_written()
    del keep
    return status
