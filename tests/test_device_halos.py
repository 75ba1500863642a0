"""Halo moves between GPU copies (stencilgen.distributed.device_halos): the transport chosen, and each
transport moving faces, contiguous and strided, bit for bit (a rank sending to itself)."""
from __future__ import annotations

import shutil
import subprocess
import types

import numpy as np
import pytest

from stencilgen.distributed.device_halos import (DeviceHalos, Move, choose, communicator,
                                                 mpi_takes_cuda)
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


def _loopback(cp, transport, overlap):
    """Faces of a 3D array sent by this rank to itself: the x face (contiguous), the z face
    (strided); returns the array before and after."""
    rng = np.random.default_rng(7)
    host = rng.integers(0, 2 ** 16, size=(2, 12, 10, 9), dtype=np.uint16)
    a = cp.asarray(host)
    halos = DeviceHalos(cp, MPI.COMM_SELF, MPI, transport, overlap)
    moves = [Move(("a", 1, "x"), a[1, 8:10], a[1, 0:2], 0, 0, 1),
             Move(("a", 0, "z"), a[0, :, :, 5:7], a[0, :, :, 0:2], 0, 0, 2)]
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
    want[0, :, :, 0:2] = host[0, :, :, 5:7]
    assert np.array_equal(got, want)
    assert seconds > 0
