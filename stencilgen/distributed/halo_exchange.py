"""The halo exchanges of one apply on a split grid (MPI), and the receivers' sums.

The entry point calls ``exchange(hook, time)`` before each kernel that reads a neighbour's
values (``ir/halos``); ``HaloExchange`` answers it with non-blocking messages through mpi4py:
for each direction the reads reach, this rank's halo on that side is received from the
neighbour there, and its own edge is sent the other way. Messages name the region of the
array they move (MPI subarray types), so nothing is packed by hand.

Interpolation on a split grid gives each rank the sum over the corners it owns; the ranks'
sums are added after the run (``SparseSums``), so every rank ends with the whole record.
"""
from __future__ import annotations

import ctypes
import socket
from dataclasses import dataclass
from time import perf_counter

import numpy as np
import sympy

from .device_halos import DeviceHalos, Move, choose, gpu_where, import_cupy, region
from .. import logger as log
from ..errors import ExecutionError, InvalidArgument
from .mpi import import_mpi

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_long, ctypes.c_long)



@dataclass(frozen=True)
class RankTimes:
    """One rank's seconds in a split run: the run (its entry point, the last kernel waited
    for), its kernels, and its halo exchanges (on a GPU they may run beside the kernels).
    ``wait``: the run less its kernels, the time not spent computing. ``device``: where
    the rank computed (``host/GPU 1 (0000:2a:00.0)`` or ``host/CPU``), ``transport``: how
    its halos moved (``HaloExchange.transport``); ``calls``: the seconds the entry point
    spent in exchange calls, on a GPU the host's share (posting, packing, waiting for
    nothing: the kernels go on meanwhile)."""

    step: float
    compute: float
    exchange: float
    device: str = ""
    transport: str = ""
    calls: float = 0.0   # seconds the entry point spent in exchange calls (on the host)

    @property
    def wait(self) -> float:
        return max(self.step - self.compute, 0.0)

def _regions(direction, halo, width, n, split):
    """(received, sent) index ranges of a block with ``halo`` and ``n`` points per dimension:
    the ``width`` points of halo next to the domain on the side ``direction`` points to, and
    this rank's edge of that width on the opposite side (what the neighbour there keeps as
    its halo towards us). The rest of a wider halo is never read, so never moved. Across the
    dimensions that are not ``split`` the face is whole, halos included: those are the same
    global points on both ranks, and whole rows and planes move as one block, unpacked."""
    recv, send = [], []
    for d, h, w, m, cut in zip(direction, halo, width, n, split):
        across = (h, m) if cut else (0, m + 2 * h)
        recv.append((h - w, w) if d < 0 else (h + m, w) if d > 0 else across)
        send.append((h + m - w, w) if d < 0 else (h, w) if d > 0 else across)
    return recv, send


class HaloExchange:
    """The ``exchange`` and ``regions`` arguments of one apply (``pointer``, ``regions``);
    ``error`` holds what went wrong if the exchange returned nonzero. In ``overlap`` mode a
    hook's messages are posted by ``exchange(hook)`` and waited for by ``exchange(-1 -
    hook)``, the interior computed in between; in basic mode the first does both."""

    def __init__(self, prog, dist, storages: dict, overlap: bool, place=None):
        self.prog, self.dist, self.storages, self.overlap = prog, dist, storages, overlap
        self.MPI = import_mpi()
        self.error: BaseException | None = None
        self._types: dict = {}
        self._slots: dict = {}
        self._pending: dict = {}
        self._planned: dict = {}
        self._callback = _CALLBACK(self._call)
        # seconds the exchanges took (on the host: posting and waiting; on a GPU: on their
        # stream), and the whole run's (set by the caller)
        self.seconds = {"exchange": 0.0, "calls": 0.0}
        self.elapsed = 0.0
        self.regions = regions(prog, dist, overlap)
        self.place = place
        gpu = getattr(place, "name", "") == "cuda" and prog.exchanges
        self.device = device_halos(dist, place, overlap) if gpu else None

    @property
    def pointer(self) -> int:
        return ctypes.cast(self._callback, ctypes.c_void_p).value

    def _call(self, hook: int, time: int) -> int:
        t0 = perf_counter()
        try:
            if hook >= 0:
                self._pending[hook] = self.post(self.prog.exchanges[hook], time)
                if not self.overlap:
                    self._wait(self._pending.pop(hook))
            elif -1 - hook in self._pending:
                self._wait(self._pending.pop(-1 - hook))
            self.seconds["calls"] += perf_counter() - t0
            return 0
        except BaseException as exc:   # noqa: BLE001 - raised again by the Operator
            self.error = exc
            return 1

    def _slot_of(self, index, time: int) -> int:
        """The time slot ``index`` (a ring's slot symbol or an expression in time) is at."""
        fn = self._slots.get(index)
        if fn is None:
            ring = {ti.symbol: ti for ti in self.prog.time_indices}
            if index in ring:
                ti = ring[index]
                fn = (lambda t, s=ti.shift, m=ti.modulo: (t + s) % m)
            else:
                fn = sympy.lambdify(self.prog.time, index, "math")
            self._slots[index] = fn
        return int(fn(time))

    def _type(self, buf, slot, region):
        key = (buf.shape, buf.dtype.itemsize, slot, tuple(region))
        t = self._types.get(key)
        if t is None:
            MPI = self.MPI
            element = MPI.BYTE.Create_contiguous(buf.dtype.itemsize).Commit()
            lead = () if slot is None else (slot,)
            sizes = list(buf.shape)
            sub = ([1] if lead else []) + [n for _, n in region]
            starts = list(lead) + [a for a, _ in region]
            t = element.Create_subarray(sizes, sub, starts).Commit()
            element.Free()
            self._types[key] = t
        return t

    def messages(self, exchange, time: int):
        """Per message of ``exchange`` at time step ``time``: the array, its time slot (None:
        no time axis), the direction, the regions received and sent, the neighbours the
        halo comes from and the edge goes to (None: none there), and the tag."""
        for item, (name, index, directions, width) in enumerate(exchange.items):
            st = self.storages[name]
            shape, halo = st.shape, st.halo
            n = [s - 2 * h for s, h in zip(shape[-len(halo):], halo)]
            if index is not None:
                slots = [self._slot_of(index, time)]
            else:
                slots = list(range(shape[0])) if len(shape) > len(halo) else [None]
            for k, slot in enumerate(slots):
                for direction in directions:
                    recv, send = _regions(direction, halo, width, n, self.prog.split)
                    # the same on both ends: the item, the slot, the direction in base 3
                    tag = (item * len(slots) + k) * 27 + \
                        sum((d + 1) * 3 ** i for i, d in enumerate(direction))
                    yield (name, slot, direction, recv, send, self.dist.neighbour(direction),
                           self.dist.neighbour(tuple(-d for d in direction)), tag)

    def post(self, exchange, time: int):
        """Start every message of ``exchange`` at time step ``time``: their MPI requests, or
        what the device halos' ``wait`` takes."""
        if self.device is not None:
            return self.device.post(self._moves(exchange, time))
        comm, requests = self.dist.cart, []
        for name, slot, _, recv, send, source, dest, tag in self.messages(exchange, time):
            buf = self.storages[name].host_buffer()
            if source is not None:
                requests.append(comm.Irecv([buf, 1, self._type(buf, slot, recv)], source, tag))
            if dest is not None:
                requests.append(comm.Isend([buf, 1, self._type(buf, slot, send)], dest, tag))
        return requests

    def _moves(self, exchange, time: int) -> list:
        """The messages of ``exchange`` at ``time`` as spans of the device copies
        (``device_halos``), made once per time slot they touch."""
        slots = tuple(self._slot_of(index, time) for _, index, _, _ in exchange.items
                      if index is not None)
        key = (exchange.hook, slots)
        out = self._planned.get(key)
        if out is not None:
            return out
        out = []
        for name, slot, direction, recv, send, source, dest, tag in \
                self.messages(exchange, time):
            copy = self.storages[name].copy
            lead = () if slot is None else ((slot, 1),)
            out.append(Move((name, slot, direction), copy.ptr, copy.layout.itemsize,
                            region(copy.layout, lead + tuple(send)),
                            region(copy.layout, lead + tuple(recv)), dest, source, tag))
        self._planned[key] = out
        return out

    @property
    def transport(self) -> str:
        """How halos move: a GPU transport, ``mpi-host`` (host arrays), or ``none`` (a
        communicator of one, or a program that reads no neighbour)."""
        if self.device is not None:
            return self.device.transport
        return "mpi-host" if self.prog.exchanges else "none"

    @property
    def where(self) -> str:
        """Where this rank computes: its host and GPU, or its host's CPU."""
        if self.device is not None:
            return self.device.where
        if getattr(self.place, "name", "") == "cuda":   # a GPU that exchanges nothing
            try:
                return gpu_where(import_cupy(), self.place.device)
            except InvalidArgument:   # no CuPy, which a run without exchanges does not need
                return f"{socket.gethostname()}/GPU {self.place.device}"
        return f"{socket.gethostname()}/CPU"

    def prime(self, time: int) -> None:
        """Move every halo of the program once (values from the neighbours, as any exchange
        brings): the transport's one-time setup happens here, not in a timed step (logged
        with its seconds)."""
        t0 = perf_counter()
        for e in self.prog.exchanges:
            self._wait(self.post(e, time))
        if self.device is not None:
            self.device.seconds()   # waits for the moves; their time is no step's
        seconds = perf_counter() - t0
        log.perf(f"halos through {self.transport}: first exchange of every halo (the "
                 f"transport's setup) {seconds:.3f} s")

    def _wait(self, posted) -> None:
        if self.device is not None:
            self.device.wait(posted)
        else:
            self.MPI.Request.Waitall(posted)

    def start(self, time: int) -> None:
        """The exchanges of arrays the program never writes, once per apply."""
        for e in self.prog.exchanges:
            if e.before is None:
                self._wait(self.post(e, time))

    def close(self) -> None:
        """After the run: the MPI types freed, the device exchanges' times read."""
        for t in self._types.values():
            t.Free()
        self._types.clear()
        self.seconds["exchange"] = self.device.seconds() if self.device is not None \
            else self.seconds["calls"]

    def raise_error(self, name: str):
        raise ExecutionError(f"Operator `{name}` failed while exchanging halos with the "
                             f"neighbouring MPI ranks: {self.error!r}") from self.error


_transports: dict = {}


def device_halos(dist, place, overlap: bool) -> DeviceHalos:
    """The GPU halo moves of a run on the CUDA place ``place`` (its transport chosen once per
    communicator, with every rank)."""
    cp, MPI = import_cupy(), import_mpi()
    cp.cuda.Device(place.device).use()
    key = dist.cart.py2f()
    if key not in _transports:
        _transports[key] = choose(dist.cart, MPI, cp)
    return DeviceHalos(cp, dist.cart, MPI, _transports[key], overlap)


def regions(prog, dist, overlap: bool) -> np.ndarray:
    """(regions, dimensions, 2) first and last global index of each region of this rank's
    block a nest with an exchange runs over (``backends/split``): basic mode, the block in
    region 0 and the others empty; overlap, the interior (``w`` points from the block's
    edges along each split dimension, ``w`` the farthest the exchanged reads reach) and the slabs around
    it, none sharing a point."""
    n = len(prog.dims)
    out = np.zeros((1 + 2 * sum(prog.split), n, 2), dtype=np.int64)
    out[1:, :, 1] = -1   # empty
    owned = [list(b) for b in dist.owned]
    out[0] = owned
    if not overlap:
        return out
    w = [0] * n
    for e in prog.exchanges:
        for _, _, _, width in e.items:
            w = [max(a, b) for a, b in zip(w, width)]
    inner = [[lo + w[i], hi - w[i]] if prog.split[i] else [lo, hi]
             for i, (lo, hi) in enumerate(owned)]
    out[0] = inner
    r = 1
    for i in (i for i in range(n) if prog.split[i]):
        lo, hi = owned[i]
        low = [lo, min(lo + w[i] - 1, hi)]
        high = [max(hi - w[i] + 1, lo + w[i]), hi]
        for side in (low, high):
            # earlier split dimensions: their interior only (their slabs hold the rest)
            out[r] = [side if j == i else inner[j] if j < i and prog.split[j] else owned[j]
                      for j in range(n)]
            r += 1
    return out


class SparseSums:
    """Interpolation into sparse arrays on a split grid: before the run, ranks other than 0
    clear the rows the run writes (an increment then counts the old values once); after it,
    the rows are summed over the ranks."""

    def __init__(self, prog, dist, functions: dict, args: dict):
        self.dist, self.rows = dist, []
        t = prog.time
        span = (args[prog.time_bounds[0]], args[prog.time_bounds[1]]) \
            if prog.has_time_loop else None
        for k in prog.kernels:
            if not (k.is_sparse and k.kind == "interpolate"):
                continue
            f = functions[k.target.base.name]
            if len(f.field.storage.shape) == 1 or span is None:
                self.rows.append((f, slice(None)))
                continue
            index = k.target.indices[0]
            at = [int(index.subs(t, s)) for s in span]
            self.rows.append((f, slice(min(at), max(at) + 1)))

    def clear(self) -> None:
        if self.dist.cart.Get_rank() != 0:
            for f, rows in self.rows:
                st = f.field.storage
                st.host()[rows] = 0
                st.host_written()
                if st.copy is not None:   # already on the device for this run: sent again
                    st.on_device(st.copy.place, st.copy.layout)

    def sum(self) -> None:
        MPI = import_mpi()
        for f, rows in self.rows:
            host = f.field.storage.host()
            part = np.ascontiguousarray(host[rows])
            self.dist.cart.Allreduce(MPI.IN_PLACE, part, op=MPI.SUM)
            host[rows] = part
            f.field.storage.host_written()


def ranks_timed(dist, timers: np.ndarray, wall: float, halos: HaloExchange):
    """Each rank's ``RankTimes``; ``timers`` become the slowest rank's per section, and the
    wall time is the slowest rank's (global figures of a split run)."""
    MPI = import_mpi()
    mine = RankTimes(halos.elapsed, float(timers.sum()), halos.seconds["exchange"],
                     halos.where, halos.transport, halos.seconds["calls"])
    ranks = dist.cart.allgather(mine)
    dist.cart.Allreduce(MPI.IN_PLACE, timers, op=MPI.MAX)
    return dist.cart.allreduce(wall, op=MPI.MAX), tuple(ranks)
