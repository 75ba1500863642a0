"""Halo moves between GPU copies (stencilgen.distributed.device_halos): the transport chosen, and each
transport moving faces, contiguous and strided, bit for bit (a rank sending to itself)."""
from __future__ import annotations

import shutil
import subprocess
import types

import numpy as np
import pytest

from backends.common.device_layout import DeviceLayout
from stencilgen.distributed.device_halos import (DeviceHalos, Move, Span, choose, communicator,
                                                 mpi_takes_cuda, region)
from stencilgen.errors import InvalidArgument
from test_cuda import needs_gpu

MPI = pytest.importorskip("mpi4py.MPI", reason="needs mpi4py: pip install 'stencilgen[mpi]'")


_QUERIES = {
    "open_mpi_yes": "int MPIX_Query_cuda_support(void) { return 1; }",
    "open_mpi_no": "int MPIX_Query_cuda_support(void) { return 0; }",
    "mpich_yes": "int MPIX_GPU_query_support(int t, int *ok) { *ok = t == 0; return 0; }",
    "mpich_failing": "int MPIX_GPU_query_support(int t, int *ok) { *ok = 1; return 1; }",
    "neither": "int MPI_Init(int *c, char ***v) { return 0; }",
}


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build stand-in libraries")
@pytest.mark.parametrize("name, says", [("open_mpi_yes", True), ("open_mpi_no", False),
                                        ("mpich_yes", True), ("mpich_failing", False),
                                        ("neither", False)])
def test_the_mpi_library_is_asked_about_cuda_buffers(tmp_path, name, says):
    """Stand-ins for an MPI library with each query (the answer read from the library that
    the module named by ``__file__`` loads), and one without any."""
    src = tmp_path / f"{name}.c"
    src.write_text(_QUERIES[name] + "\n")
    lib = tmp_path / f"lib{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    assert mpi_takes_cuda(types.SimpleNamespace(__file__=str(lib))) is says
    assert mpi_takes_cuda(types.SimpleNamespace(__file__=str(tmp_path / "missing.so"))) is False


def test_a_forced_transport_is_checked(monkeypatch):
    monkeypatch.setenv("STENCILGEN_MPI_GPU", "pigeon")
    with pytest.raises(InvalidArgument, match="nccl, mpi, staged"):
        choose(MPI.COMM_SELF, MPI, None)
    monkeypatch.setenv("STENCILGEN_MPI_GPU", "staged")
    assert choose(MPI.COMM_SELF, MPI, None) == "staged"


def _copy_spans(flat, spans_, into=None):
    """What a 2D copy per span does, in NumPy: the spans of ``flat`` packed in order (or
    ``into`` unpacked into them)."""
    out, at = [], 0
    for sp in spans_:
        rows = np.lib.stride_tricks.as_strided(
            flat[sp.offset:], (sp.height, sp.width), (sp.pitch * flat.itemsize, flat.itemsize))
        if into is None:
            out.append(rows.copy().ravel())
        else:
            rows[...] = into[at:at + sp.size].reshape(rows.shape)
        at += sp.size
    return np.concatenate(out) if into is None else None


def _host_view(flat, layout):
    """The host-shaped view of a device allocation in ``layout`` (a NumPy stand-in)."""
    return np.lib.stride_tricks.as_strided(flat[layout.front:], layout.shape,
                                           tuple(s * flat.itemsize for s in layout.strides))


@pytest.mark.parametrize("itemsize", [2, 4, 8])
@pytest.mark.parametrize("halo", [None, 4])
def test_spans_move_exactly_the_region(itemsize, halo):
    """Packed from one pitched allocation and unpacked into another, a region's spans
    carry its values to the same points and change nothing else but rows' pads."""
    rng = np.random.default_rng(itemsize)
    dtype = np.dtype(f"u{itemsize}")
    shape = (3, 14, 11, 13)   # time slots, x, y, z (halos included)
    layout = DeviceLayout.of(shape, itemsize, halo)
    regions = [((1, 1), (4, 4), (0, 11), (0, 13)),     # whole planes: an x face
               ((0, 1), (4, 6), (0, 4), (0, 13)),      # whole rows: a y face
               ((2, 1), (4, 6), (4, 3), (0, 4)),       # strided everywhere: a z face
               ((0, 3), (0, 14), (0, 11), (0, 13)),    # the whole array
               ((1, 1), (2, 4), (4, 3), (4, 5))]       # a corner
    for box in regions:
        src = rng.integers(0, 2 ** (8 * itemsize - 1), size=layout.length, dtype=dtype)
        dst = rng.integers(0, 2 ** (8 * itemsize - 1), size=layout.length, dtype=dtype)
        before = dst.copy()
        where = region(layout, box)
        got = where.spans
        packed = _copy_spans(src, got)
        # the box as one strided array packs the same way (the many-span path)
        strided = np.lib.stride_tricks.as_strided(
            src[where.offset:], where.shape, tuple(s * src.itemsize for s in where.strides))
        assert np.array_equal(strided.ravel(), packed) and where.size == packed.size
        _copy_spans(dst, got, packed)
        window = tuple(slice(a, a + n) for a, n in box)
        assert np.array_equal(_host_view(dst, layout)[window], _host_view(src, layout)[window])
        moved = np.zeros(layout.length, bool)
        _host_view(moved, layout)[window] = True
        pads = np.ones(layout.length, bool)
        _host_view(pads, layout)[...] = False
        changed = dst != before
        assert not np.any(changed & ~moved & ~pads)
        assert sum(sp.size for sp in got) <= layout.length


def test_faces_of_whole_planes_need_no_packing():
    """A face across whole planes is one contiguous block; one of whole rows is one 2D
    copy; a face cut in the innermost dimension takes one 2D copy per plane."""
    layout = DeviceLayout.of((3, 20, 18, 17), 4, 4)
    x = region(layout, ((1, 1), (4, 4), (0, 18), (0, 17)))
    assert x.contiguous and x.size == 4 * 18 * layout.pitch
    y = region(layout, ((1, 1), (4, 12), (14, 4), (0, 17))).spans
    assert y == (Span(y[0].offset, 4 * layout.pitch, 12, 18 * layout.pitch),)
    z = region(layout, ((1, 1), (4, 12), (4, 10), (13, 4)))
    assert len(z.spans) == 12 and all(sp.width == 4 and sp.height == 10 for sp in z.spans)
    assert z.shape == (1, 12, 10, 4)   # packed by one strided copy (SPANS_MAX)


def _loopback(cp, transport, overlap):
    """Faces of a 3D array sent by this rank to itself: the x face (contiguous), the z face
    (strided); returns the array before and after."""
    rng = np.random.default_rng(7)
    host = rng.integers(0, 2 ** 16, size=(2, 12, 10, 9), dtype=np.uint16)
    a = cp.asarray(host)
    halos = DeviceHalos(cp, MPI.COMM_SELF, MPI, transport, overlap)
    lay = DeviceLayout.of(host.shape, 2, None)
    moves = [Move(("a", 1, "x"), a.data.ptr, 2, region(lay, ((1, 1), (8, 2), (0, 10), (0, 9))),
                  region(lay, ((1, 1), (0, 2), (0, 10), (0, 9))), 0, 0, 1),     # contiguous
             Move(("a", 1, "y"), a.data.ptr, 2, region(lay, ((1, 1), (2, 8), (7, 2), (0, 9))),
                  region(lay, ((1, 1), (2, 8), (0, 2), (0, 9))), 0, 0, 3),      # one 2D copy
             Move(("a", 0, "z"), a.data.ptr, 2, region(lay, ((0, 1), (0, 12), (0, 10), (5, 2))),
                  region(lay, ((0, 1), (0, 12), (0, 10), (0, 2))), 0, 0, 2)]    # a kernel
    # the exchange stream is of the highest priority (negative: above the kernels' 0)
    assert cp.cuda.runtime.streamGetPriority(halos.stream.ptr) < 0
    posted = halos.post(moves)
    if overlap:   # kernels launched between post and wait run beside the exchange
        cp.cuda.Stream.null.synchronize()
    halos.wait(posted)
    seconds = halos.seconds()
    return host, cp.asnumpy(a), seconds


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("transport", ["nccl", "staged", "mpi"])
@pytest.mark.parametrize("overlap", [False, True])
def test_faces_move_bit_for_bit(transport, overlap):
    cp = pytest.importorskip("cupy", reason="GPU halos need CuPy")
    if transport == "mpi" and not mpi_takes_cuda(MPI):
        pytest.skip("this MPI library does not take CUDA buffers")
    if transport == "nccl":
        communicator(cp, MPI.COMM_SELF)
    host, got, seconds = _loopback(cp, transport, overlap)
    want = host.copy()
    want[1, 0:2] = host[1, 8:10]
    want[1, 2:10, 0:2] = host[1, 2:10, 7:9]
    want[0, :, :, 0:2] = host[0, :, :, 5:7]
    assert np.array_equal(got, want)
    assert seconds > 0
