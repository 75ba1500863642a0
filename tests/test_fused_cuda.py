"""Fused CUDA kernels (backends/cuda_fused.py): a nest computing only temporaries runs inside
the nest reading them, streaming along the outermost dimension with its values in registers
and shared memory, block-wide barriers between the phases.

The programs (SA-TTI in 3D and 2D on a smooth random medium, the variable-density acoustic with
staggered fluxes) are emulated on the host (tests/cuda_emulation.py: shared memory filled with
NaNs, the threads of a block as coroutines meeting at each ``__syncthreads()``, in turn forward
or backward so that a race between two threads changes the numbers) against the C backend, on
odd grids leaving partial tiles and several chunks along the streamed dimension, with every
launch shape the fused section offers. Without nvcc they skip; the IR checks run anywhere.
Fusion runs where nothing is remembered (``configuration["fusion"]``, auto by default); the
module turns it on outright.
"""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest

import cuda_emulation
from stencilgen import Grid, Operator, configuration
from test_cuda import needs_nvcc
from test_fusion import _variable_density

from stencilgen.seismic.tti import sa_tti_operator, tti_critical_dt, tti_medium

#: the largest difference from the C backend relative to the field's largest value (float32
#: round-off over a few steps; a wrong or missing point is of the order of the values)
TOL = 1e-5
SHAPE3 = (23, 21, 37)   # tiles 16x32, 8x32, 8x64 all leave partial ones along y and z
SHAPE2 = (45, 150)      # tiles 256 and 128 along y: one partial, two tiles
NT = 6


@pytest.fixture(scope="module", autouse=True)
def _fusion_on():
    """Fusion (off by default) on for the module's operators, put back afterwards."""
    previous = configuration["fusion"]
    configuration["fusion"] = True
    try:
        yield
    finally:
        configuration["fusion"] = previous


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """One directory for the host builds of the module (a source built once)."""
    return str(tmp_path_factory.mktemp("fused-emulated"))


def _smooth(rng, shape, lo, hi):
    """A smooth random field in [lo, hi]."""
    a = rng.standard_normal(shape)
    for ax in range(len(shape)):
        for _ in range(3):
            a = (np.roll(a, 1, ax) + 2 * a + np.roll(a, -1, ax)) / 4
    a = (a - a.min()) / (a.max() - a.min())
    return lo + (hi - lo) * a


@functools.lru_cache(maxsize=None)
def _tti(shape, backend):
    """(op, P, M, dt): SA-TTI at space order 8 on a smooth random medium (V, b, epsilon,
    delta, theta, phi all varying), P and M starting from smooth random fields (built once a
    shape and backend: ``_start`` puts the fields back to their start)."""
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    rng = np.random.default_rng(7)
    eps = _smooth(rng, shape, 0.05, 0.2)
    medium = dict(V=_smooth(rng, shape, 1.5, 2.5), b=_smooth(rng, shape, 0.5, 1.5),
                  epsilon=eps, delta=eps * _smooth(rng, shape, 0.2, 0.8),
                  theta=_smooth(rng, shape, 0.1, 1.2))
    if len(shape) == 3:
        medium["phi"] = _smooth(rng, shape, 0.2, 1.4)
    med = tti_medium(grid, 8, **medium)
    name = f"FusedTTI{len(shape)}{'G' if backend == 'cuda' else 'C'}"
    op, P, M = sa_tti_operator(med, 8, backend=backend, name=name)
    _STARTS[id(P)] = _smooth(rng, shape, -1.0, 1.0)
    _STARTS[id(M)] = _smooth(rng, shape, -1.0, 1.0)
    return op, P, M, tti_critical_dt(med, 8)


_STARTS: dict = {}


def _start(*fields):
    """Each field of ``fields`` (P, M of ``_tti``) back at its start: the first two time
    slots its smooth random values, the third zero."""
    for f in fields:
        f.data[:] = 0
        f.data[0] = f.data[1] = _STARTS[id(f)]


@functools.lru_cache(maxsize=None)
def _tti_reference(shape, nt):
    """P and M after ``nt`` steps on the C backend."""
    op, P, M, dt = _tti(shape, "c")
    _start(P, M)
    op.apply(time_m=1, time_M=nt, dt=dt)
    return np.array(P.data), np.array(M.data)


@functools.lru_cache(maxsize=None)
def _vd(backend):
    """(op, p, start): the variable-density acoustic on SHAPE3, p's start."""
    eqs, p = _variable_density(SHAPE3)
    op = Operator(eqs, backend=backend, name=f"FusedVD{'G' if backend == 'cuda' else 'C'}")
    return op, p, np.array(p.data)


@functools.lru_cache(maxsize=None)
def _vd_reference(nt):
    op, p, start = _vd("c")
    p.data[:] = start
    op.apply(time_m=1, time_M=nt, dt=0.002)
    return np.array(p.data)


def _differs(name, ref, got) -> str | None:
    """None where ``got`` is ``ref`` within TOL of its largest value; else what differs."""
    ref, got = np.asarray(ref, np.float64), np.asarray(got, np.float64)
    scale = float(np.abs(ref).max())
    assert scale > 0
    diff = np.abs(got - ref)
    diff[~np.isfinite(diff)] = np.inf
    worst = float(diff.max()) / scale
    if worst <= TOL:
        return None
    at = tuple(int(i) for i in np.unravel_index(np.argmax(diff), diff.shape))
    bad = int((diff > TOL * scale).sum())
    return (f"{name}: {bad} of {diff.size} values differ, worst {worst:.2e} of max |{name}| "
            f"at [time slot, x, y, z...] {at}: {got[at]!r} instead of {ref[at]!r}")


def _fused(op):
    """The section timer of the fused nest of ``op`` (its only one)."""
    fused = [k.section.timer for k in op.program.kernels if k.fusion is not None]
    assert len(fused) == 1, "the CUDA backend no longer fuses this program"
    return fused[0]


def _tuning(op, fused_shape):
    """The tuning argument: every section at its default launch shape, the fused one at
    ``fused_shape``."""
    defaults = op._emitter.default_shapes()
    shapes = [defaults.get(t, 0) for t in range(max(len(op.program.kernels), 1))]
    shapes[_fused(op)] = fused_shape
    return shapes


def _emulated_tti(shape, nt, builds, fused_shape=None, reverse=False):
    op, P, M, dt = _tti(shape, "cuda")
    _start(P, M)
    tuning = None if fused_shape is None else _tuning(op, fused_shape)
    status = cuda_emulation.run(op, builds, tuning=tuning, reverse=reverse,
                                time_m=1, time_M=nt, dt=dt)
    assert status == 0
    return op, np.array(P.data), np.array(M.data)


# -- the IR and the source, anywhere ------------------------------------------------------------

def _kernels_in_time_loop(op):
    """The grid (not sparse) kernels the entry point launches inside its time loop."""
    src = op.ccode
    start = src.index("for (long time =")
    loop = src[start:src.index("cudaDeviceSynchronize()", start)]
    grid = {k.section.function for k in op.program.kernels if not k.is_sparse}
    return {m.group(1) for m in re.finditer(r"sg_early\((\w+)(?:<[^<>]*>)?,", loop)} & grid


def test_sa_tti_is_one_fused_kernel_a_step(restore_settings):
    """SA-TTI is one step, fused, with one kernel in the time loop and no temporary arrays
    (r0..r5 live in registers and shared memory); without fusion, two steps again."""
    op, _, _, _ = _tti(SHAPE3, "cuda")
    prog = op.program
    assert len(prog.steps) == 1 and prog.steps[0].fusion is not None
    temps = [a.name for a in prog.arrays if re.fullmatch(r"r[0-5]", a.name)]
    assert not temps, f"temporaries still arrays: {temps}"
    assert len(_kernels_in_time_loop(op)) == 1, _kernels_in_time_loop(op)
    assert "__syncthreads()" in op.ccode and "extern __shared__" in op.ccode
    restore_settings["fusion"] = False
    plain, _, _, _ = _tti.__wrapped__(SHAPE3, "cuda")
    assert len(plain.program.steps) == 2
    assert all(s.fusion is None for s in plain.program.steps)
    assert len(_kernels_in_time_loop(plain)) == 2
    assert "__syncthreads" not in plain.ccode


# -- emulated against the C backend ---------------------------------------------------------

@needs_nvcc
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "backward"])
def test_sa_tti_3d_equals_c(builds, reverse):
    """The default launch shape, the threads of each block in turn one way and the other."""
    ref_p, ref_m = _tti_reference(SHAPE3, NT)
    op, got_p, got_m = _emulated_tti(SHAPE3, NT, builds, reverse=reverse)
    assert op.program.steps[0].fusion is not None
    bad = [d for d in (_differs("P", ref_p, got_p), _differs("M", ref_m, got_m)) if d]
    assert not bad, "\n".join(bad)


def _assert_emulated_equals_c(op, P, M, dt, builds, reverse):
    """``op`` (the 3D SA-TTI, built here) emulated from the standard start gives C's P and M."""
    ref_p, ref_m = _tti_reference(SHAPE3, NT)
    _start(P, M)
    status = cuda_emulation.run(op, builds, reverse=reverse, time_m=1, time_M=NT, dt=dt)
    assert status == 0
    bad = [d for d in (_differs("P", ref_p, np.array(P.data)),
                       _differs("M", ref_m, np.array(M.data))) if d]
    assert not bad, "\n".join(bad)


@needs_nvcc
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "backward"])
def test_sa_tti_3d_paired_equals_c(builds, monkeypatch, reverse):
    """Two points a thread, as where its rings leave room for a second block an SM (by
    default SA-TTI runs a point a thread on CUDA: ``_layout``)."""
    from backends.cuda.backend import CudaBackend
    monkeypatch.setitem(CudaBackend.FUSION, "sm_shared_bytes", 0)
    op, P, M, dt = _tti.__wrapped__(SHAPE3, "cuda")
    assert op.program.steps[0].fusion.pair == 2
    _assert_emulated_equals_c(op, P, M, dt, builds, reverse)


@needs_nvcc
def test_sa_tti_3d_interleaved_rings_equal_c(builds, monkeypatch):
    """P and M, and the fluxes of each pair of axes, interleaved a pair at a time in their
    rings (``Limits.interleave``, off on CUDA by measurement): the 128-bit reads of both
    members give C's results, the threads in reverse order."""
    from backends.cuda.backend import CudaBackend
    monkeypatch.setitem(CudaBackend.FUSION, "interleave", True)
    monkeypatch.setitem(CudaBackend.FUSION, "sm_shared_bytes", 0)   # pairs, SA-TTI's rings or not
    op, P, M, dt = _tti.__wrapped__(SHAPE3, "cuda")
    f = op.program.steps[0].fusion
    assert f.interleave and "sg_quad_lo(" in op.ccode and "sg_quad_mid_hi(" in op.ccode
    _assert_emulated_equals_c(op, P, M, dt, builds, reverse=True)


@needs_nvcc
def test_sa_tti_3d_every_fused_launch_shape_equals_c(builds):
    """Every tile (16x32, 8x32, 8x64: partial ones along y and z) and number of chunks along
    x (1 to 8: chunks of 3 to 23 planes, the last one shorter), three steps each, the threads
    in turn forward for even shapes and backward for odd ones."""
    nt = 3
    ref_p, ref_m = _tti_reference(SHAPE3, nt)
    op = _tti(SHAPE3, "cuda")[0]
    offered = op._emitter.launch_shapes()[_fused(op)]
    assert len(offered) > 1
    bad = []
    for s, what in enumerate(offered):
        _, got_p, got_m = _emulated_tti(SHAPE3, nt, builds, fused_shape=s, reverse=bool(s % 2))
        bad += [f"shape {s} ({what}): {d}" for d in
                (_differs("P", ref_p, got_p), _differs("M", ref_m, got_m)) if d]
    assert not bad, "\n".join(bad)


@needs_nvcc
def test_sa_tti_2d_equals_c(builds):
    """A 2D SA-TTI (tiles along y only), every fused launch shape, three steps."""
    nt = 3
    op = _tti(SHAPE2, "cuda")[0]
    if not any(s.fusion is not None for s in op.program.steps):
        pytest.skip("the CUDA backend does not fuse the 2D SA-TTI")
    ref_p, ref_m = _tti_reference(SHAPE2, nt)
    bad = []
    for s, what in enumerate(op._emitter.launch_shapes()[_fused(op)]):
        _, got_p, got_m = _emulated_tti(SHAPE2, nt, builds, fused_shape=s, reverse=bool(s % 2))
        bad += [f"shape {s} ({what}): {d}" for d in
                (_differs("P", ref_p, got_p), _differs("M", ref_m, got_m)) if d]
    assert not bad, "\n".join(bad)


@needs_nvcc
@pytest.mark.parametrize("fused_shape, reverse", [(None, False), (None, True), (7, False)],
                         ids=["default-forward", "default-backward", "tile8x32-8chunks"])
def test_variable_density_fluxes_equal_c(builds, fused_shape, reverse):
    """The variable-density acoustic: three staggered flux temporaries fused into the update,
    the pressure staged in shared memory."""
    nt = 5
    ref = _vd_reference(nt)
    op, p, start = _vd("cuda")
    p.data[:] = start
    assert len(op.program.steps) == 1 and op.program.steps[0].fusion is not None
    offered = op._emitter.launch_shapes()[_fused(op)]
    tuning = None if fused_shape is None else _tuning(op, fused_shape % len(offered))
    status = cuda_emulation.run(op, builds, tuning=tuning, reverse=reverse,
                                time_m=1, time_M=nt, dt=0.002)
    assert status == 0
    bad = _differs("p", ref, p.data)
    assert bad is None, bad


# -- the emulation itself ---------------------------------------------------------------------

_BARRIER_SOURCE = r"""
#include <cuda_runtime.h>
/* each thread adds its right neighbour's value, staged in shared memory; with RACY, without
   the barriers */
template <typename T, int N>
static __global__ void __launch_bounds__(N) neighbour(const T *in, T *out)
{
  extern __shared__ __align__(16) unsigned char sg_smem[];
  T *const s = (T *)sg_smem;
  const int t = threadIdx.x + blockDim.x*threadIdx.y;
  const int g = blockIdx.x*N + t;
  T acc = 0;
  for (int it = 0; it < 3; ++it) {
    s[t] = in[g] + it;
    SYNC;
    acc += s[(t + 1) % N];
    SYNC;
  }
  out[g] = acc;
}
static __global__ void unwritten(float *out)
{
  extern __shared__ float sg_smem[];
  out[threadIdx.x] = sg_smem[threadIdx.x];
}
static __global__ void divergent(float *out)
{
  if (threadIdx.x == 0) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
extern "C" int entry(const float *in, float *out, int bytes, int attribute)
{
  if (attribute)
    cudaFuncSetAttribute(neighbour<float, 64>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         attribute);
  neighbour<float, 64><<<dim3(3), dim3(16, 4), bytes>>>(in, out);
  return (int)cudaGetLastError();
}
extern "C" int unwritten_entry(float *out)
{
  unwritten<<<1, 32, 32*sizeof(float)>>>(out);
  return (int)cudaGetLastError();
}
extern "C" int divergent_entry(float *out)
{
  divergent<<<1, 32>>>(out);
  return (int)cudaGetLastError();
}
"""


@needs_nvcc
@pytest.mark.parametrize("racy", [False, True], ids=["barriers", "racy"])
def test_emulated_barriers_order_the_threads(builds, racy):
    """With barriers both orders of the threads give the right numbers; without them the
    forward order reads the neighbours' unwritten (NaN) values, the backward one their last.
    A launch of more than 48 KiB needs cudaFuncSetAttribute first, and more than 227 KiB
    fails; an unwritten shared element reads NaN; a thread returning while the others wait at
    a barrier fails the launch."""
    import ctypes
    sync = "" if racy else "__syncthreads()"
    lib = cuda_emulation.build(_BARRIER_SOURCE.replace("SYNC", sync), builds)
    vec = np.arange(192, dtype=np.float32)
    right = 3 * np.roll(vec.reshape(3, 64), -1, axis=1).ravel() + 3
    ptr = ctypes.c_void_p
    lib.entry.argtypes = [ptr, ptr, ctypes.c_int, ctypes.c_int]
    for reverse in (0, 1):
        ctypes.c_int.in_dll(lib, "sg_emu_reverse").value = reverse
        out = np.zeros(192, np.float32)
        assert lib.entry(vec.ctypes.data, out.ctypes.data, 256, 0) == 0
        assert np.array_equal(out, right) != racy, (racy, reverse)
    ctypes.c_int.in_dll(lib, "sg_emu_reverse").value = 0
    out = np.zeros(192, np.float32)
    assert lib.entry(vec.ctypes.data, out.ctypes.data, 60000, 0) != 0
    assert lib.entry(vec.ctypes.data, out.ctypes.data, 60000, 60000) == 0
    assert lib.entry(vec.ctypes.data, out.ctypes.data, 240000, 240000) != 0
    assert lib.entry(vec.ctypes.data, out.ctypes.data, 60000, 0) == 0   # the attribute stays
    lib.unwritten_entry.argtypes = lib.divergent_entry.argtypes = [ptr]
    out = np.zeros(32, np.float32)
    assert lib.unwritten_entry(out.ctypes.data) == 0 and np.isnan(out).all()
    if not racy:
        assert lib.divergent_entry(out.ctypes.data) != 0
