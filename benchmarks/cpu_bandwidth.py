"""The memory bandwidth a CPU's threads get from each level of its caches: the roofline that a
C/OpenMP stencil's points a second are read against.

    OMP_NUM_THREADS=16 OMP_PROC_BIND=close OMP_PLACES=cores python benchmarks/cpu_bandwidth.py
    python benchmarks/cpu_bandwidth.py --threads 1 2 --sizes 32K 1M 64M 1G

Three kernels over float32 arrays, each thread on its own contiguous part (first touched by
that thread, the same static split every repetition): ``read`` sums one array (eight vector
accumulators, so the adds' latency is not the limit), ``copy`` writes one array from another,
``triad`` one from two (``a = b + s c``). A size is the working set of all threads together
(three arrays of it for copy and triad: the sum reads a third of it); a per-thread size under
the L1 or L2 cache measures that cache, a total under the L3 the L3. Bytes counted are the
bytes a kernel names (a written array once, though without streaming stores the cache also
reads it before writing: a copy moves 3/2 of what is counted to and from memory). Each figure
is the best of ``--best`` timings of repetitions moving at least ``--bytes`` together.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = r"""
#include <omp.h>
#define SPLIT long nth = omp_get_num_threads(), id = omp_get_thread_num(); \
  long lo = n * id / nth, hi = n * (id + 1) / nth;

void sg_touch(float *a, float *b, float *c, long n)
{
  #pragma omp parallel
  {
    SPLIT
    for (long i = lo; i < hi; i++) { a[i] = 1.0f; b[i] = 2.0f; c[i] = 0.5f; }
  }
}

double sg_run(int kind, float *restrict a, const float *restrict b, const float *restrict c,
              long n, long reps)
{
  double total = 0.0;
  const double t0 = omp_get_wtime();
  #pragma omp parallel reduction(+:total)
  {
    SPLIT
    float acc[128] = {0};
    for (long r = 0; r < reps; r++)
    {
      if (kind == 0)
      {
        long i = lo;
        for (; i + 128 <= hi; i += 128)
          #pragma omp simd
          for (long j = 0; j < 128; j++) acc[j] += b[i + j];
        for (; i < hi; i++) acc[0] += b[i];
      }
      else if (kind == 1)
      {
        #pragma omp simd
        for (long i = lo; i < hi; i++) a[i] = b[i];
        acc[0] += a[lo];
      }
      else
      {
        #pragma omp simd
        for (long i = lo; i < hi; i++) a[i] = b[i] + 0.5f * c[i];
        acc[0] += a[lo];
      }
    }
    for (int j = 0; j < 128; j++) total += acc[j];
  }
  const double t1 = omp_get_wtime();
  return total == -1.0 ? -1.0 : t1 - t0;   /* the sum kept alive */
}
"""

KERNELS = (("read", 1), ("copy", 2), ("triad", 3))   # the arrays each names (bytes a point / 4)
UNITS = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30}


def size(text: str) -> int:
    """Bytes of ``text``: a number with an optional K, M or G (binary)."""
    t = text.strip().upper().rstrip("B").rstrip("I")
    unit = UNITS.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if t[-1:] in UNITS else t) * unit)
    except ValueError:
        raise SystemExit(f"cpu_bandwidth: size {text!r}: give a number with K, M or G, e.g. 64M")


def build(compiler: str, flags: list) -> ctypes.CDLL:
    """The kernels compiled into a shared library in a temporary directory."""
    work = Path(tempfile.mkdtemp(prefix="sg-bandwidth-"))
    (work / "bw.c").write_text(SOURCE)
    cmd = [compiler, *flags, "-shared", "-fPIC", "-fopenmp", str(work / "bw.c"),
           "-o", str(work / "bw.so")]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"cpu_bandwidth: {' '.join(cmd)} failed:\n{done.stderr}")
    lib = ctypes.CDLL(str(work / "bw.so"))
    lib.sg_run.restype = ctypes.c_double
    lib.sg_run.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_long, ctypes.c_long]
    lib.sg_touch.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_long]
    return lib


def measure(lib, total_bytes: int, moved: float, best: int) -> list:
    """GB/s of each kernel with a working set of ``total_bytes`` (all threads)."""
    import numpy as np

    n = max(total_bytes // 12, 1024)   # three float32 arrays of n
    arrays = [np.empty(n + 16, dtype=np.float32) for _ in range(3)]
    ptrs = [a.ctypes.data for a in arrays]
    lib.sg_touch(*ptrs, n)
    out = []
    for kind, (_, names) in enumerate(KERNELS):
        per = 4 * n * names
        reps = max(int(moved // per), 1)
        lib.sg_run(kind, *ptrs, n, max(reps // 10, 1))   # warm
        seconds = min(lib.sg_run(kind, *ptrs, n, reps) for _ in range(best))
        out.append(per * reps / seconds / 1e9)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, nargs="+", default=None,
                   help="thread counts (default: OMP_NUM_THREADS, else the cores)")
    p.add_argument("--sizes", nargs="+", default=None,
                   help="working sets of all threads together, e.g. 32K 1M 64M 1G (default: "
                        "24K, 192K and 1M a thread, 64M, 256M, 2G)")
    p.add_argument("--bytes", type=float, default=4e9, help="bytes a timing moves (4e9)")
    p.add_argument("--best", type=int, default=3, help="timings a figure, the best kept (3)")
    p.add_argument("--cc", default=os.environ.get("CC", "gcc"))
    args = p.parse_args(argv)
    flags = ["-O3", "-march=native"]
    lib = build(args.cc, flags)
    threads = args.threads or [int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))]
    env = {k: os.environ[k] for k in ("OMP_PROC_BIND", "OMP_PLACES") if k in os.environ}
    print(f"# {args.cc} {' '.join(flags)} -fopenmp; {os.cpu_count()} logical cpus; {env or ''}")
    print(f"| threads | working set | a thread | {' | '.join(k + ' GB/s' for k, _ in KERNELS)} |")
    print("| ---: | ---: | ---: |" + " ---: |" * len(KERNELS))
    for nt in threads:
        _set_threads(nt)
        sizes = args.sizes or [f"{24 * nt}K", f"{192 * nt}K", f"{nt}M", "64M", "256M", "2G"]
        for s in sizes:
            b = size(s)
            figures = measure(lib, b, args.bytes, args.best)
            print(f"| {nt} | {_human(b)} | {_human(b // nt)} | "
                  + " | ".join(f"{f:.1f}" for f in figures) + " |", flush=True)


def _set_threads(nt: int) -> None:
    """The OpenMP runtime's thread count for the next regions (libgomp's own setter)."""
    try:
        gomp = ctypes.CDLL("libgomp.so.1")
        gomp.omp_set_num_threads(ctypes.c_int(nt))
    except OSError:
        pass


def _human(b: int) -> str:
    for unit, scale in (("G", 2 ** 30), ("M", 2 ** 20), ("K", 2 ** 10)):
        if b >= scale:
            return f"{b / scale:g}{unit}"
    return str(b)


if __name__ == "__main__":
    sys.exit(main())
