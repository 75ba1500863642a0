"""Halo exchanges between the GPU copies of fields (the CUDA backend on a split grid).

Halos go GPU to GPU: through NCCL (its communicator bootstrapped over the grid's MPI
communicator, CuPy's ``cupy.cuda.nccl``) where every rank has a GPU of its own, else through
the MPI library itself where it says it takes CUDA buffers (asked, never assumed: handing a
device pointer to an MPI without CUDA support crashes it), else staged through pinned host
buffers, the slow way, said in the log.

Kernels run on CUDA's legacy default stream. An exchange runs on a stream of its own after an
event recorded there: packing the faces that are not contiguous, moving them, unpacking; the
default stream then waits for it (``wait``). In overlap mode the interior's kernel is launched
between the two, so it computes while the halos move; in basic mode nothing is launched
between them. CUDA events time each exchange on its stream.
"""
from __future__ import annotations

import ctypes
import os
import socket
from dataclasses import dataclass

import numpy as np

from .. import logger as log
from ..errors import InvalidArgument

TRANSPORTS = ("nccl", "mpi", "staged")


def import_cupy():
    """CuPy, or our error saying how to install it."""
    try:
        import cupy
    except ImportError:
        raise InvalidArgument(
            "a grid split over MPI ranks on the CUDA backend moves halos between GPUs with "
            "CuPy (its NCCL, or a CUDA-aware MPI): pip install 'stencilgen[mpi-gpu]' (mpi4py "
            "and cupy-cuda12x), or run the split grid on the C backend") from None
    return cupy


def mpi_takes_cuda(MPI) -> bool:
    """Whether the MPI library says it takes CUDA device buffers (Open MPI's and MPICH's
    ``MPIX_Query_cuda_support``, MPICH's ``MPIX_GPU_query_support``); False where it cannot
    say."""
    try:
        lib = ctypes.CDLL(MPI.__file__)   # its dependencies' symbols: the MPI library's
    except OSError:
        return False
    query = getattr(lib, "MPIX_Query_cuda_support", None)
    if query is not None:
        query.restype = ctypes.c_int
        return query() == 1
    query = getattr(lib, "MPIX_GPU_query_support", None)
    if query is not None:
        found = ctypes.c_int(0)
        return query(ctypes.c_int(0), ctypes.byref(found)) == 0 and found.value == 1
    return False


def _nccl(cp):
    """CuPy's NCCL module, or None where CuPy was built without it."""
    try:
        from cupy.cuda import nccl
    except ImportError:
        return None
    return nccl if getattr(nccl, "available", True) else None


def choose(cart, MPI, cp) -> str:
    """The transport every rank of ``cart`` uses: "nccl" where each rank has a GPU of its
    own and NCCL is there, else "mpi" where the MPI library takes device buffers, else
    "staged" (the same answer on every rank)."""
    forced = os.environ.get("STENCILGEN_MPI_GPU", "")
    if forced:
        if forced not in TRANSPORTS:
            raise InvalidArgument(f"STENCILGEN_MPI_GPU={forced!r}: use one of "
                                  f"{', '.join(TRANSPORTS)} (or leave it unset to choose)")
        return forced
    gpus = cart.allgather((socket.gethostname(), cp.cuda.Device().pci_bus_id))
    own = len(set(gpus)) == len(gpus)
    nccl_ok = cart.allreduce(int(own and _nccl(cp) is not None), op=MPI.MIN)
    if nccl_ok:
        return "nccl"
    if cart.allreduce(int(mpi_takes_cuda(MPI)), op=MPI.MIN):
        return "mpi"
    why = "ranks share a GPU" if not own else "NCCL is missing and the MPI library does not " \
        "take CUDA buffers"
    if cart.Get_rank() == 0:
        log.warning(f"halos between GPUs are staged through host memory ({why}): slow; give "
                    "each rank a GPU of its own with NCCL, or use a CUDA-aware MPI")
    return "staged"


@dataclass
class Move:
    """One face of one array: ``send`` goes to rank ``dest`` and ``recv`` comes from rank
    ``source`` (None: no neighbour there), both views of device copies."""

    key: tuple
    send: object
    recv: object
    dest: int | None
    source: int | None
    tag: int


def device_array(cp, copy):
    """A CUDA device copy (``places.CudaCopy``) as a CuPy array of its host shape, each
    element as an unsigned integer of its size (halos move bit for bit)."""
    lay = copy.layout
    mem = cp.cuda.UnownedMemory(copy.ptr, lay.length * lay.itemsize, copy)
    start = cp.cuda.MemoryPointer(mem, lay.front * lay.itemsize)
    return cp.ndarray(lay.shape, np.dtype(f"u{lay.itemsize}"), start,
                      strides=tuple(s * lay.itemsize for s in lay.strides))


class DeviceHalos:
    """The halo moves of one apply between GPUs, through ``transport`` (``TRANSPORTS``):
    ``post`` starts a list of ``Move`` after the kernels launched so far, ``wait`` makes the
    kernels launched next wait for them. ``seconds()`` after the run: how long they took."""

    def __init__(self, cp, cart, MPI, transport: str, overlap: bool):
        self.cp, self.cart, self.MPI, self.transport = cp, cart, MPI, transport
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.null = cp.cuda.Stream.null
        self.nccl = communicator(cp, cart) if transport == "nccl" else None
        self._buffers: dict = {}
        self._timed: list = []

    def _event(self, stream):
        e = self.cp.cuda.Event()
        e.record(stream)
        return e

    def _buffer(self, key, like, host=False):
        """A contiguous buffer shaped as ``like`` kept for ``key`` (pinned host memory for
        ``host``)."""
        buf = self._buffers.get((key, host))
        if buf is None:
            if host:
                mem = self.cp.cuda.alloc_pinned_memory(like.nbytes)
                buf = np.frombuffer(mem, like.dtype, like.size).reshape(like.shape)
            else:
                buf = self.cp.empty(like.shape, like.dtype)
            self._buffers[(key, host)] = buf
        return buf

    def _packed(self, m):
        if m.send.flags.c_contiguous:
            return m.send
        buf = self._buffer(m.key + ("send",), m.send)
        buf[...] = m.send
        return buf

    def _landing(self, m):
        return m.recv if m.recv.flags.c_contiguous else self._buffer(m.key + ("recv",), m.recv)

    def post(self, moves: list):
        """Start ``moves`` on the exchange stream once the kernels launched so far are done."""
        ready = self.cp.cuda.Event(disable_timing=True)
        ready.record(self.null)
        self.stream.wait_event(ready)
        first = self._event(self.stream)
        with self.stream:
            sends = [(m, self._packed(m)) for m in moves if m.dest is not None]
            recvs = [(m, self._landing(m)) for m in moves if m.source is not None]
            if self.nccl is not None:
                self._nccl_moves(sends, recvs)
                return first, recvs, None
            if self.transport == "staged":
                sends = [(m, self._staged(m, buf, "send")) for m, buf in sends]
        return first, recvs, sends

    def _staged(self, m, buf, side):
        host = self._buffer(m.key + (side,), buf, host=True)
        if side == "send":
            buf.get(stream=self.stream, out=host)
        return host

    def _nccl_moves(self, sends, recvs):
        nccl, ptr, s = _nccl(self.cp), (lambda b: b.data.ptr), self.stream.ptr
        nccl.groupStart()
        for m, buf in sends:
            self.nccl.send(ptr(buf), buf.nbytes, nccl.NCCL_UINT8, m.dest, s)
        for m, buf in recvs:
            self.nccl.recv(ptr(buf), buf.nbytes, nccl.NCCL_UINT8, m.source, s)
        nccl.groupEnd()

    def _mpi_moves(self, sends, recvs):
        """The messages of an MPI transport, once what they send is packed."""
        self.stream.synchronize()
        staged = self.transport == "staged"
        landing = [(m, self._staged(m, buf, "recv") if staged else buf) for m, buf in recvs]
        reqs = [self.cart.Irecv(buf, m.source, m.tag) for m, buf in landing]
        reqs += [self.cart.Isend(buf, m.dest, m.tag) for m, buf in sends]
        self.MPI.Request.Waitall(reqs)
        with self.stream:
            for (m, device), (_, host) in zip(recvs, landing):
                if staged:
                    device.set(host, stream=self.stream)

    def wait(self, posted) -> None:
        """Kernels launched from now on wait for the moves ``posted`` (halos unpacked)."""
        first, recvs, sends = posted
        if sends is not None:
            self._mpi_moves(sends, recvs)
        with self.stream:
            for m, buf in recvs:
                if buf is not m.recv:
                    m.recv[...] = buf
        done = self._event(self.stream)
        self._timed.append((first, done))
        self.null.wait_event(done)

    def seconds(self) -> float:
        """Seconds the exchanges took on their stream (read once the run has finished)."""
        self.cp.cuda.Device().synchronize()
        out = 1e-3 * sum(self.cp.cuda.get_elapsed_time(a, b) for a, b in self._timed)
        self._timed.clear()
        return out


_communicators: dict = {}


def communicator(cp, cart):
    """The NCCL communicator over the ranks of ``cart``, made once (collectively)."""
    key = cart.py2f()
    if key not in _communicators:
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")   # NVLink multicast off: shared hosts
        nccl = _nccl(cp)
        uid = cart.bcast(nccl.get_unique_id() if cart.Get_rank() == 0 else None, root=0)
        _communicators[key] = nccl.NcclCommunicator(cart.Get_size(), uid, cart.Get_rank())
    return _communicators[key]
