"""Fields that stay on the GPU between applies (CUDA and OpenACC), and GPU arrays of other
libraries in and out without a copy through the host: run on the GPU machine."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from stencilgen import (Eq, Function, Grid, Operator, SparseTimeFunction, TimeFunction,
                        clear_cache, platform)
from stencilgen.data import places
from stencilgen.data.interop import DeviceArray

from test_cuda import needs_gpu

pytestmark = [pytest.mark.gpu, needs_gpu]


def _acoustic(backend, name, shape=(48, 40, 36), nt=40):
    """A 3-D acoustic run with a source and two receivers (space order 8: a temporary-free
    nest; the Ricker-like source keeps every step busy)."""
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=8)
    m.data[:] = 1.0 / np.linspace(1.5, 2.5, shape[0])[:, None, None] ** 2
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt + 1,
                             coordinates=[tuple(5.0 * (n - 1) for n in shape)])
    src.data[:, 0] = np.sin(np.arange(nt + 1) * 0.4) * np.exp(-0.05 * np.arange(nt + 1))
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=2, nt=nt + 1,
                             coordinates=[(40.0, 60.0, 50.0), (300.0, 200.0, 150.0)])
    eqs = [Eq(u.forward, 2 * u - u.backward + 1.0 / m * u.laplace * 1.0)]
    eqs += src.inject(u.forward, src * 1.0 / m) + rec.interpolate(u)
    return Operator(eqs, name=name, backend=backend), u, m, src, rec


def _usable_openacc():
    if "host" in platform.toolchain("openacc").name:
        pytest.skip("no offloading OpenACC compiler here")


@pytest.mark.parametrize("backend", ["cuda", "openacc"])
def test_ten_chunks_equal_one_apply_with_no_copies_between(backend):
    if backend == "openacc":
        _usable_openacc()
    ref, ur, _, _, rr = _acoustic("c", "ResidentRefC")
    ref.apply(time_m=1, time_M=40, dt=1.0)
    op, u, m, src, rec = _acoustic(backend, f"ResidentChunks_{backend}")
    op.apply(time_m=1, time_M=4, dt=1.0)
    place = op._place()
    assert place.name == backend
    before = dict(place.moved)
    for c in range(1, 10):
        op.apply(time_m=1 + 4 * c, time_M=4 + 4 * c, dt=1.0)
    assert place.moved == before                        # nothing moved between the chunks
    scale = float(np.abs(ur.data).max())
    assert float(np.abs(u.data - ur.data).max()) <= 1e-4 * scale
    assert float(np.abs(rec.data - rr.data).max()) <= 1e-4 * float(np.abs(rr.data).max())
    assert place.moved["to_host"] - before["to_host"] == u.data_with_halo.nbytes + \
        rec.data_with_halo.nbytes                       # read once each, by the lines above


def test_cupy_in_cupy_out_without_a_host_copy():
    cupy = pytest.importorskip("cupy")
    ref, ur, mr, _, _ = _acoustic("c", "ResidentCupyRef", nt=20)
    ref.apply(time_m=1, time_M=20, dt=1.0)
    op, u, m, src, rec = _acoustic("cuda", "ResidentCupy", nt=20)
    model = cupy.asarray(np.asarray(mr.data))          # the model made on the GPU
    op.apply(time_m=1, time_M=1, dt=1.0)               # built, autotuned, fields resident
    place = op._place()
    before = dict(place.moved)
    m.data = model * 1.0                                # copied on the GPU (no host copy)
    u.data = cupy.zeros(u.shape, dtype=cupy.float32)   # restart from rest, on the GPU
    op.apply(time_m=1, time_M=20, dt=1.0)
    out = cupy.asarray(u.device_data)                  # a view, no copy
    assert isinstance(u.device_data, DeviceArray)
    assert out.data.ptr == u.device_data.ptr
    assert place.moved == before                        # no byte went through the host
    assert float(cupy.abs(out - cupy.asarray(np.asarray(ur.data))).max()) <= \
        1e-4 * float(np.abs(ur.data).max())
    out[0] = 7.0                                         # written on the GPU...
    assert float(u.data[0].min()) == 7.0                # ...and the host's read sees it


def test_no_field_crosses_between_host_and_gpu_as_cupti_sees_it(tmp_path):
    """CUPTI (through PyTorch's profiler) sees every copy of the process: while a CuPy model
    goes in, the operator runs and the wavefield comes out, no more than a few hundred bytes
    (sparse coordinates up, NaN counts down) cross between host and GPU."""
    from stencilgen.seismic.autograd import import_torch
    try:
        torch = import_torch()   # after the compiler's libgomp (OpenACC builds load later)
    except ImportError:
        pytest.skip("torch is not installed")
    cupy = pytest.importorskip("cupy")
    from torch.profiler import ProfilerActivity, profile
    op, u, m, src, rec = _acoustic("cuda", "ResidentObserved", nt=10)
    op.apply(time_m=1, time_M=1, dt=1.0)
    model = cupy.full(m.shape, 0.3, dtype=cupy.float32)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        m.data = model
        op.apply(time_m=2, time_M=10, dt=1.0)
        wave = torch.from_dlpack(u.device_data)
        peak = wave.abs().max()
        torch.cuda.synchronize()
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    import json
    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"
              and ("HtoD" in e["name"] or "DtoH" in e["name"])]
    moved = sum(int(e.get("args", {}).get("bytes", 0)) for e in copies)
    assert any("ResidentObserved" in e["name"] for e in kernels)   # the kernels were seen
    assert moved <= 1024 < u.data_with_halo.nbytes // 1000, [(e["name"], e.get("args"))
                                                             for e in copies]
    assert float(peak) > 0


def test_device_views_have_the_fields_shape_and_halo():
    cupy = pytest.importorskip("cupy")
    grid = Grid(shape=(5, 6, 7))
    f = Function(name="f", grid=grid, space_order=4)
    f.data[:] = np.arange(5 * 6 * 7, dtype=np.float32).reshape(5, 6, 7)
    dom = cupy.asarray(f.device_data)
    assert dom.shape == (5, 6, 7) and np.array_equal(cupy.asnumpy(dom), np.asarray(f.data))
    full = cupy.from_dlpack(f.device_data_with_halo)
    assert full.shape == f.data_with_halo.shape
    assert np.array_equal(cupy.asnumpy(full), np.asarray(f.data_with_halo))
    f.data = cupy.asarray(np.ones((5, 6, 7)), dtype=cupy.float64)   # converted on the GPU
    assert np.all(np.asarray(f.data) == 1.0) and np.all(np.asarray(f.data_with_halo)[0] == 0)


def test_freeing_a_field_frees_its_gpu_memory():
    op, u, m, src, rec = _acoustic("cuda", "ResidentFree", shape=(256, 256, 128), nt=4)
    op.apply(time_m=1, time_M=2, dt=1.0)
    place = op._place()
    size = u.field.storage.device_nbytes
    assert size >= 3 * 264 * 264 * 136 * 4
    free_before = place.meminfo()[0]
    del u, op
    clear_cache()
    gc.collect()
    assert place.meminfo()[0] - free_before >= size - (2 << 20)


def test_the_footprint_check_says_what_is_resident():
    cupy = pytest.importorskip("cupy")
    op, u, m, src, rec = _acoustic("cuda", "ResidentOOM", shape=(64, 256, 256), nt=4)
    op.apply(time_m=1, time_M=1, dt=1.0)
    grid = u.grid
    v = TimeFunction(name="v", grid=grid, time_order=2, space_order=8)
    big = Operator([Eq(v.forward, 2 * v - v.backward + v.laplace)], name="ResidentOOM2",
                   backend="cuda")
    big.cfunction   # noqa: B018
    clear_cache()   # earlier tests' dropped fields: freed now, not by the check's own sweep
    free = places.cuda_place(platform.toolchain("cuda")).meminfo()[0]
    hold = cupy.empty(free - 32 * 2 ** 20, dtype=np.uint8)
    try:
        with pytest.raises(places.DeviceMemoryError,
                           match=r"need (\d+\.\d) MiB on the GPU \((\d+\.\d) MiB of it not "
                                 r"there yet.* resident fields: u "):
            big.apply(time_m=1, time_M=1, dt=0.1)
    finally:
        del hold
        cupy.get_default_memory_pool().free_all_blocks()
    big.apply(time_m=1, time_M=1, dt=0.1)     # once the memory is back, it runs


def test_a_debug_build_reads_the_same_pitched_copies(monkeypatch):
    from stencilgen.configuration import configuration
    ref, ur, _, _, _ = _acoustic("cuda", "ResidentPlain", nt=6)
    ref.apply(time_m=1, time_M=6, dt=1.0)
    monkeypatch.setitem(configuration._values, "debug", True)
    op, u, _, _, _ = _acoustic("cuda", "ResidentDebug", nt=6)
    op.apply(time_m=1, time_M=6, dt=1.0)
    assert float(np.abs(u.data - ur.data).max()) <= 1e-5 * float(np.abs(ur.data).max())
