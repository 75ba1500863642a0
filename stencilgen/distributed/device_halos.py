"""Halo exchanges between the GPU copies of fields (the CUDA backend on a split grid).

Halos go GPU to GPU: through NCCL (its communicator bootstrapped over the grid's MPI
communicator, CuPy's ``cupy.cuda.nccl``) where every rank has a GPU of its own, else through
the MPI library itself where it says it takes CUDA buffers (asked, never assumed: handing a
device pointer to an MPI without CUDA support crashes it), else staged through pinned host
buffers, the slow way, said in the log.

Kernels run on CUDA's legacy default stream. An exchange runs on a stream of its own, of the
highest priority, after an event recorded there: packing the faces that are not one block (a
2D copy per run of rows, ``region``), moving them, unpacking; the default stream then waits
for it (``wait``). A face spans the dimensions that are not split whole, halos and row pads
included, so a face across whole planes moves as it lies. In overlap mode the interior's
kernel is launched between the two, so it computes while the halos move; in basic mode
nothing is launched between them. CUDA events time each exchange on its stream.
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


@dataclass(frozen=True)
class Span:
    """Part of a device allocation: ``height`` runs of ``width`` elements, ``pitch`` elements
    apart, the first ``offset`` elements in (contiguous where ``height`` is 1 or ``width``
    is ``pitch``)."""

    offset: int
    width: int
    height: int
    pitch: int

    @property
    def size(self) -> int:
        return self.width * self.height

    @property
    def contiguous(self) -> bool:
        return self.height == 1 or self.width == self.pitch


#: a region of more spans than this is packed by one strided copy kernel, not a 2D copy a
#: span (a face cut across the innermost dimension has one span per plane)
SPANS_MAX = 8


@dataclass(frozen=True)
class Region:
    """A box of a device allocation: its ``spans`` (the fewest 2D runs, in row-major order:
    how it packs into a buffer) and the same box as a strided array, ``shape`` elements
    ``strides`` apart from element ``offset`` (its innermost run as one dimension)."""

    spans: tuple
    offset: int
    shape: tuple
    strides: tuple

    @property
    def size(self) -> int:
        return sum(sp.size for sp in self.spans)

    @property
    def contiguous(self) -> bool:
        return len(self.spans) == 1 and self.spans[0].contiguous


def region(layout, index) -> Region:
    """The region ``index`` ((first, count) per dimension of the host shape, a time slot as
    (slot, 1)) of a copy in ``layout`` (``DeviceLayout``). A region of whole rows takes each
    row's pad too, so that consecutive rows make one run: a face of whole planes is one
    contiguous block, moved without packing."""
    strides = layout.strides
    index = [(int(a), int(n)) for a, n in index]
    start = layout.front + sum(a * s for (a, _), s in zip(index, strides))
    run = layout.pitch if index[-1] == (0, layout.width) else index[-1][1]
    k = len(index) - 1            # dimensions k.. make one run
    while k > 0 and run == strides[k - 1]:   # the run fills whole steps of the next one out
        k -= 1
        run *= index[k][1]
    shape = tuple(n for _, n in index[:k]) + (run,)
    box = (start, shape, tuple(strides[:k]) + (1,))
    if k == 0:
        return Region((Span(start, run, 1, run),), *box)
    height, pitch = index[k - 1][1], strides[k - 1]
    outer = [(n, s) for (_, n), s in zip(index[:k - 1], strides[:k - 1])]
    return Region(tuple(Span(start + sum(c * s for c, (_, s) in zip(corner, outer)), run,
                             height, pitch)
                        for corner in np.ndindex(*[n for n, _ in outer])), *box)


@dataclass
class Move:
    """One face of one array: the ``send`` region goes to rank ``dest`` and the ``recv``
    region comes from rank ``source`` (None: no neighbour there), both ``Region`` of the
    device allocation at ``ptr`` of ``itemsize``-byte elements."""

    key: tuple
    ptr: int
    itemsize: int
    send: Region
    recv: Region
    dest: int | None
    source: int | None
    tag: int


def _bytes(cp, ptr: int, nbytes: int):
    """``nbytes`` of device memory at ``ptr`` as a CuPy byte array (no copy)."""
    mem = cp.cuda.UnownedMemory(ptr, nbytes, None)
    return cp.ndarray((nbytes,), np.uint8, cp.cuda.MemoryPointer(mem, 0))


def gpu_where(cp, device: int) -> str:
    """``host/GPU n (PCI bus id)``: where a rank computes, told apart across hosts and GPUs."""
    bus = cp.cuda.Device(device).pci_bus_id.lower()
    return f"{socket.gethostname()}/GPU {device} ({bus})"


def _priority_stream(cp):
    """A non-blocking stream of the highest priority: its kernels (NCCL's) are scheduled
    ahead of the waiting blocks of the interior's kernel, not after its last one (else an
    overlapped exchange starts only once the interior is done)."""
    try:
        # CUDA clamps a priority beyond its range (0 down to -5 on Hopper) to the greatest
        return cp.cuda.Stream(non_blocking=True, priority=-1000)
    except TypeError:   # a CuPy without stream priorities
        return cp.cuda.Stream(non_blocking=True)


class DeviceHalos:
    """The halo moves of one apply between GPUs, through ``transport`` (``TRANSPORTS``):
    ``post`` starts a list of ``Move`` after the kernels launched so far, ``wait`` makes the
    kernels launched next wait for them. ``seconds()`` after the run: how long they took.
    A face that is not one contiguous block is packed into a buffer (and unpacked from
    one) by a 2D copy per span, on the exchange stream."""

    def __init__(self, cp, cart, MPI, transport: str, overlap: bool):
        self.cp, self.cart, self.MPI, self.transport = cp, cart, MPI, transport
        self.stream = _priority_stream(cp)
        self.null = cp.cuda.Stream.null
        self.nccl = communicator(cp, cart) if transport == "nccl" else None
        self.where = gpu_where(cp, cp.cuda.Device().id)
        self._buffers: dict = {}
        self._timed: list = []

    def _event(self, stream):
        e = self.cp.cuda.Event()
        e.record(stream)
        return e

    def _buffer(self, key, nbytes: int, host=False):
        """A contiguous byte buffer kept for ``key`` (pinned host memory for ``host``)."""
        buf = self._buffers.get((key, host))
        if buf is None:
            if host:
                mem = self.cp.cuda.alloc_pinned_memory(nbytes)
                buf = np.frombuffer(mem, np.uint8, nbytes)
            else:
                buf = self.cp.empty(nbytes, np.uint8)
            self._buffers[(key, host)] = buf
        return buf

    def _copy(self, into_array: bool, m, where: Region, buf):
        """Between the region ``where`` of ``m``'s array and the contiguous ``buf``, on the
        exchange stream: a 2D copy per span, or one strided copy kernel for many spans."""
        cp, item = self.cp, m.itemsize
        if len(where.spans) > SPANS_MAX:
            dtype = np.dtype(f"u{item}")
            whole = _bytes(cp, m.ptr + where.offset * item,
                           (1 + sum((n - 1) * s for n, s in zip(where.shape, where.strides)))
                           * item)
            box = cp.ndarray(where.shape, dtype, whole.data,
                             strides=tuple(s * item for s in where.strides))
            packed = buf.view(dtype).reshape(where.shape)
            with self.stream:
                if into_array:
                    box[...] = packed
                else:
                    packed[...] = box
            return
        rt, at = cp.cuda.runtime, buf.data.ptr
        for sp in where.spans:
            array = (m.ptr + sp.offset * item, sp.pitch * item)
            packed = (at, sp.width * item)
            (dst, dpitch), (src, spitch) = (array, packed) if into_array else (packed, array)
            rt.memcpy2DAsync(dst, dpitch, src, spitch, sp.width * item, sp.height,
                             rt.memcpyDeviceToDevice, self.stream.ptr)
            at += sp.size * item

    def _buffer_of(self, m, side: str):
        """Where ``m``'s ``side`` ("send" or "recv") region moves from or lands: the array's
        own bytes where the region is one block, else a buffer kept for it."""
        where = getattr(m, side)
        if where.contiguous:
            return _bytes(self.cp, m.ptr + where.offset * m.itemsize, where.size * m.itemsize)
        return self._buffer(m.key + (side,), where.size * m.itemsize)

    def _packed(self, m):
        buf = self._buffer_of(m, "send")
        if not m.send.contiguous:
            self._copy(False, m, m.send, buf)
        return buf

    def post(self, moves: list):
        """Start ``moves`` on the exchange stream once the kernels launched so far are done."""
        ready = self.cp.cuda.Event(disable_timing=True)
        ready.record(self.null)
        self.stream.wait_event(ready)
        first = self._event(self.stream)
        with self.stream:
            sends = [(m, self._packed(m)) for m in moves if m.dest is not None]
            recvs = [(m, self._buffer_of(m, "recv")) for m in moves if m.source is not None]
            if self.nccl is not None:
                self._nccl_moves(sends, recvs)
                return first, recvs, None
            if self.transport == "staged":
                sends = [(m, self._staged(m, buf, "send")) for m, buf in sends]
        return first, recvs, sends

    def _staged(self, m, buf, side):
        host = self._buffer(m.key + (side,), buf.nbytes, host=True)
        if side == "send":
            buf.get(stream=self.stream, out=host)
        return host

    def _nccl_moves(self, sends, recvs):
        nccl, s = _nccl(self.cp), self.stream.ptr
        nccl.groupStart()
        for m, buf in sends:
            self.nccl.send(buf.data.ptr, buf.nbytes, nccl.NCCL_UINT8, m.dest, s)
        for m, buf in recvs:
            self.nccl.recv(buf.data.ptr, buf.nbytes, nccl.NCCL_UINT8, m.source, s)
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
        for m, buf in recvs:
            if not m.recv.contiguous:
                self._copy(True, m, m.recv, buf)
        done = self._event(self.stream)
        self._timed.append((first, done))
        self.null.wait_event(done)

    def seconds(self) -> float:
        """Seconds the exchanges took on their stream since the last call (read once the
        run has finished)."""
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
