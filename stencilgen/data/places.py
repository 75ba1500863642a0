"""Where an operator's arrays are while it runs: host memory (C, OpenACC on the host), CUDA
device memory (the CUDA backend) or the OpenACC runtime's device copies.

A place makes, fills, reads back and frees device copies; ``Storage`` decides when. Every
array of an apply is bound through ``attach``, which first checks that the copies still to
be made fit in the GPU's free memory and says what is resident when they do not.
"""
from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

import jitcache
from backends.cuda import runtime as cuda_runtime
from backends.common.device_layout import DeviceLayout

from . import interop
from .. import logger as log
from . import memory
from ..distributed import mpi
from ..configuration import configuration
from ..errors import ExecutionError, InvalidArgument, StencilgenError


class DeviceMemoryError(StencilgenError, MemoryError):
    """The GPU has no room for the copies an apply needs."""


def _mib(n: int) -> str:
    return f"{n / 2 ** 20:.1f} MiB"


class HostPlace:
    """Arrays in host memory: the pointer of the up-to-date host array."""

    name = "host"

    def attach(self, bound) -> list[int]:
        """The pointers of ``bound`` ((storage, layout) pairs) for the entry point."""
        return [st.host().ctypes.data for st, _ in bound]

    def written(self, storage):
        storage.host_written()

    def preserve(self, storages):
        """A function that puts back the values ``storages`` have now (autotuning trials)."""
        saved = [(data, data.copy()) for data in (st.host() for st in storages)]

        def restore():
            for data, copy in saved:
                np.copyto(data, copy)
        return restore

    def settle(self, storages) -> str:
        """After a failed run: '' (host arrays need nothing)."""
        return ""


HOST = HostPlace()


class _DevicePlace:
    """What CUDA and OpenACC places share: binding, marking and the footprint check."""

    def attach(self, bound) -> list[int]:
        self.check_room(bound)
        return [st.on_device(self, layout).ptr for st, layout in bound]

    def written(self, storage):
        storage.device_written()

    def preserve(self, storages):
        """A function putting back the values ``storages`` have now (after autotuning's
        trials): kept on the device where it has room (a kept wavefield is gigabytes, each
        trial would upload it again through the host), else on the host."""
        saved = []
        for st in storages:
            if st.copy is not None and st.newer != "host" and hasattr(self, "duplicate"):
                try:
                    saved.append((st, self.duplicate(st.copy)))
                    continue
                except DeviceMemoryError:
                    pass
            saved.append((st, st.host()))

        def restore():
            for st, data in saved:
                if isinstance(data, np.ndarray):
                    st.copy.upload(data)
                else:
                    self.copy_device(st.copy, data)
        return restore

    def settle(self, storages) -> str:
        """After a failed run: copy the written fields back while the device still answers;
        where it does not, forget their device copies. Returns what was lost, if anything."""
        lost = []
        for st in storages:
            try:
                st.host()
            except StencilgenError as exc:
                try:
                    st.lose_device(str(exc))
                except ExecutionError:
                    lost.append(st.name)
        if not lost:
            return ""
        return (f"; the GPU values of {', '.join(lost)} are lost with it (their host arrays "
                f"hold the values of their last copy back)")

    def missing(self, bound) -> int:
        """Bytes still to allocate for ``bound``."""
        return sum(layout.length * layout.itemsize for st, layout in bound
                   if st.copy is None or st.copy.place is not self or st.copy.layout != layout)

    def check_room(self, bound):
        """Raise DeviceMemoryError, before anything is allocated, where the copies ``bound``
        still needs do not fit in the GPU's free memory."""
        need = self.missing(bound)
        if not need:
            return
        free, total = self.meminfo()
        if need > free:
            memory.sweep()   # dropped Functions' copies go first
            need, (free, total) = self.missing(bound), self.meminfo()
        if need > free:
            raise DeviceMemoryError(out_of_memory(bound, need, free, total))


def _size(n: int) -> str:
    """Bytes in MiB, or GiB from 4 GiB up."""
    return _mib(n) if n < 4 * 2 ** 30 else f"{n / 2 ** 30:.2f} GiB"


def out_of_memory(bound, need: int, free: int, total: int) -> str:
    """What an apply whose arrays ``bound`` need ``need`` more bytes on a GPU with ``free``
    of ``total`` bytes free is told: the bytes, the largest arrays, and the ways out (more
    GPUs, each with its block of the grid; 16-bit storage)."""
    sizes = sorted(((st.name, layout.length * layout.itemsize) for st, layout in bound),
                   key=lambda item: -item[1])
    whole = sum(b for _, b in sizes)
    largest = ", ".join(f"{n} {_size(b)}" for n, b in sizes[:6])
    # a rank keeps its block and halos of every array; about a tenth of a GPU goes to the
    # CUDA context, halo buffers and the tuning trials' copies
    ranks = max(2, -(-whole // int(0.9 * total)))
    held = ", ".join(f"{n} ({_size(b)})" for n, b in memory.resident()[:8])
    return (f"not enough GPU memory: the operator's arrays need {_size(whole)} on the GPU "
            f"({_size(need)} of it not there yet; largest {largest}), but only {_size(free)} of "
            f"its {_size(total)} are free{'; resident fields: ' + held if held else ''}. "
            f"Nothing was allocated for this run. Ways out: split the grid over {ranks} GPUs "
            f"or more, a rank each (mpirun -n {ranks} ..., docs/mpi.md); store the fields in "
            f"16 bits (storage=numpy.float16 or 'bfloat16', half their bytes; "
            f"docs/precision.md); drop fields you no longer need (del f, or "
            f"f.release_device()); or use a smaller grid")


class CudaCopy:
    """A field's copy in CUDA device memory, in ``layout`` (freed when dropped)."""

    def __init__(self, place: "CudaPlace", layout: DeviceLayout, ptr: int):
        self.place, self.layout, self.ptr = place, layout, ptr
        self.nbytes = layout.length * layout.itemsize
        self._free = weakref.finalize(self, place.free_pointer, ptr)
        self._free.atexit = False   # at exit the driver frees everything itself

    def _rows(self, host: np.ndarray, to_device: bool):
        lay, item = self.layout, self.layout.itemsize
        dev = (self.ptr + lay.front * item, lay.pitch * item)
        src = (host.ctypes.data, lay.width * item)
        (dst, dpitch), (frm, spitch) = (dev, src) if to_device else (src, dev)
        self.place.call("sg_rt_copy2d", ctypes.c_void_p(dst), ctypes.c_size_t(dpitch),
                        ctypes.c_void_p(frm), ctypes.c_size_t(spitch),
                        ctypes.c_size_t(lay.width * item), ctypes.c_size_t(lay.rows),
                        ctypes.c_int(1 if to_device else 2))
        self.place.count(to_device, lay.width * lay.rows * item)

    def upload(self, host):
        self._rows(np.ascontiguousarray(host), True)

    def download(self, host):
        if not host.flags.c_contiguous:
            raise ExecutionError("internal: a field's host array is not contiguous")
        self._rows(host, False)

    def strided(self, dtype, shape=None, offset=()) -> interop.Strided:
        """The copy's elements as a strided view of the host shape, or of ``shape`` elements
        from index ``offset``."""
        lay = self.layout
        start = lay.front + sum(int(o) * s for o, s in zip(offset, lay.strides))
        return interop.Strided(self.ptr + start * lay.itemsize, tuple(shape or lay.shape),
                               tuple(s * lay.itemsize for s in lay.strides), np.dtype(dtype),
                               ("cuda", self.place.device))


class CudaPlace(_DevicePlace):
    """CUDA device memory, through the runtime library (``backends.cuda.runtime``)."""

    name = "cuda"

    def __init__(self, library):
        self.lib = library
        for fn in ("sg_rt_alloc", "sg_rt_free", "sg_rt_memset", "sg_rt_copy2d", "sg_rt_meminfo",
                   "sg_rt_synchronize", "sg_rt_device", "sg_rt_strided_copy", "sg_rt_select"):
            getattr(library, fn).restype = ctypes.c_int
        library.sg_rt_error.restype = ctypes.c_char_p
        self.moved = {"to_device": 0, "to_host": 0}   # bytes copied, for reports and tests
        self._select(mpi.local_rank())
        device = ctypes.c_int(0)
        self.call("sg_rt_device", ctypes.byref(device))
        self.device = device.value

    def _select(self, local: int | None):
        """One GPU per MPI rank on a host: the ``local``-th (modulo the GPUs there); None:
        not an MPI run of several ranks, the current GPU stays."""
        if local is None:
            return
        count = ctypes.c_int(0)
        self.call("sg_rt_select", ctypes.c_int(local), ctypes.byref(count))
        log.info(f"MPI rank {local} on this host: GPU {local % count.value} of {count.value}")

    def call(self, fn, *args):
        status = getattr(self.lib, fn)(*args)
        if status:
            text = (self.lib.sg_rt_error() or b"").decode(errors="replace")
            raise ExecutionError(f"the CUDA runtime: {text}")

    def count(self, to_device: bool, nbytes: int):
        self.moved["to_device" if to_device else "to_host"] += nbytes

    def meminfo(self) -> tuple[int, int]:
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self.call("sg_rt_meminfo", ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    def allocate(self, storage, layout: DeviceLayout, host) -> CudaCopy:
        """A zeroed device copy of ``storage`` in ``layout``, holding ``host`` if given."""
        memory.reserve(storage, 0)   # the device copies of dropped fields go first
        ptr = ctypes.c_void_p()
        self.call("sg_rt_alloc", ctypes.byref(ptr),
                  ctypes.c_size_t(layout.length * layout.itemsize))
        copy = CudaCopy(self, layout, ptr.value)
        if host is not None:
            copy.upload(host)
        return copy

    def free_pointer(self, ptr: int):
        self.lib.sg_rt_free(ctypes.c_void_p(ptr))

    def duplicate(self, copy: CudaCopy) -> CudaCopy:
        """Another device copy with the same values (a checkpoint kept on the GPU)."""
        free, total = self.meminfo()
        if copy.nbytes > free:
            memory.sweep()
            free, total = self.meminfo()
        if copy.nbytes > free:
            raise DeviceMemoryError(f"not enough GPU memory for a checkpoint of "
                                    f"{_mib(copy.nbytes)}: {_mib(free)} of {_mib(total)} free; "
                                    f"use fewer checkpoints")
        ptr = ctypes.c_void_p()
        self.call("sg_rt_alloc", ctypes.byref(ptr), ctypes.c_size_t(copy.nbytes))
        out = CudaCopy(self, copy.layout, ptr.value)
        self.copy_device(out, copy)
        return out

    def zero(self, copy: CudaCopy):
        """Every element of ``copy`` (and its pads) zero, on the GPU."""
        self.call("sg_rt_memset", ctypes.c_void_p(copy.ptr), ctypes.c_size_t(copy.nbytes))

    def copy_device(self, dst: CudaCopy, src: CudaCopy):
        """``dst``'s allocation = ``src``'s, on the GPU."""
        n = ctypes.c_size_t(src.nbytes)
        self.call("sg_rt_copy2d", ctypes.c_void_p(dst.ptr), n, ctypes.c_void_p(src.ptr), n, n,
                  ctypes.c_size_t(1), ctypes.c_int(3))

    def strided_copy(self, dst: interop.Strided, src: interop.Strided):
        """``dst[...] = src`` on the GPU, for any strides, converting the element type."""
        codes = [cuda_runtime.type_code(v.dtype) for v in (dst, src)]
        if None in codes or len(dst.shape) != len(src.shape):
            raise ExecutionError(f"internal: strided copy {src} -> {dst}")
        longs = lambda vals: (ctypes.c_long * max(len(vals), 1))(*vals)   # noqa: E731
        elems = [tuple(s // v.dtype.itemsize for s in v.strides) for v in (dst, src)]
        self.call("sg_rt_strided_copy", ctypes.c_void_p(dst.ptr), longs(elems[0]),
                  ctypes.c_char(codes[0].encode()), ctypes.c_void_p(src.ptr), longs(elems[1]),
                  ctypes.c_char(codes[1].encode()), longs(dst.shape),
                  ctypes.c_int(len(dst.shape)))

    def synchronize(self):
        self.call("sg_rt_synchronize")


_lock = threading.Lock()
_cuda_places: list = []


def cuda_place(toolchain) -> CudaPlace:
    """The process's CUDA place, its runtime built (or fetched) with ``toolchain`` once."""
    with _lock:
        if not _cuda_places:
            b = jitcache.build(cuda_runtime.source(), toolchain, cuda_runtime.NAME,
                               cache_dir=configuration["cache-dir"],
                               entry_point="sg_rt_alloc")
            _cuda_places.append(CudaPlace(b.library))
        return _cuda_places[0]


class AccCopy:
    """A host array's copy in the OpenACC runtime's device memory (the runtime finds it by
    the host address: every compute region's data clause then moves nothing)."""

    def __init__(self, place: "AccPlace", layout: DeviceLayout, host: np.ndarray):
        self.place, self.layout, self.nbytes = place, layout, host.nbytes
        self.ptr = host.ctypes.data
        place.lib.stencilgen_acc_enter(ctypes.c_void_p(self.ptr), ctypes.c_size_t(self.nbytes))
        place.count(True, self.nbytes)
        # the host array stays alive until the runtime has forgotten it
        self._free = weakref.finalize(self, place.exit, host)
        self._free.atexit = False

    def upload(self, host):
        self.place.update(host, True)

    def download(self, host):
        self.place.update(host, False)


class AccPlace(_DevicePlace):
    """The OpenACC runtime's device copies, made and moved by an OpenACC build's helpers."""

    name = "openacc"

    def __init__(self, library):
        self.lib = library
        self.moved = {"to_device": 0, "to_host": 0}
        for fn in ("stencilgen_acc_enter", "stencilgen_acc_update", "stencilgen_acc_exit",
                   "stencilgen_acc_meminfo"):
            getattr(library, fn).restype = ctypes.c_int

    def count(self, to_device: bool, nbytes: int):
        self.moved["to_device" if to_device else "to_host"] += nbytes

    def meminfo(self) -> tuple[int, int]:
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self.lib.stencilgen_acc_meminfo(ctypes.byref(free), ctypes.byref(total))
        return (free.value, total.value) if total.value else (1 << 62, 1 << 62)

    def allocate(self, storage, layout, host) -> AccCopy:
        memory.reserve(storage, 0)
        return AccCopy(self, layout, storage.host_buffer() if host is None else host)

    def update(self, host: np.ndarray, to_device: bool):
        self.lib.stencilgen_acc_update(ctypes.c_void_p(host.ctypes.data),
                                       ctypes.c_size_t(host.nbytes), ctypes.c_int(to_device))
        self.count(to_device, host.nbytes)

    def exit(self, host: np.ndarray):
        self.lib.stencilgen_acc_exit(ctypes.c_void_p(host.ctypes.data),
                                     ctypes.c_size_t(host.nbytes))


_acc: list = []


def acc_place(library) -> AccPlace:
    """The process's OpenACC place (the runtime's present table is the process's: the helpers
    of the first OpenACC build loaded serve every other)."""
    with _lock:
        if not _acc:
            _acc.append(AccPlace(library))
        return _acc[0]


def place_for(residency: str, library, toolchain):
    """Where the arrays of a build with ``residency`` (its backend's) live: the CUDA place
    (runtime built with ``toolchain``), the OpenACC place where the build's compute regions
    run on a device, else the host."""
    if residency == "cuda":
        return cuda_place(toolchain)
    if residency == "openacc" and _acc_on_device(library):
        return acc_place(library)
    return HOST


def _acc_on_device(library) -> bool:
    try:   # a backdoor edit may drop the helpers: then the data clauses move everything
        probe = library.stencilgen_acc_device
        for fn in ("stencilgen_acc_enter", "stencilgen_acc_update", "stencilgen_acc_exit",
                   "stencilgen_acc_meminfo"):
            getattr(library, fn)
    except AttributeError:
        return False
    probe.restype = ctypes.c_int
    return bool(probe())


def gpu_memory() -> tuple[int, int, int] | None:
    """(bytes of field copies, bytes in use, bytes in all) on this process's GPU, None where
    no CUDA operator has run here: what a run holds on its GPU."""
    if not _cuda_places:
        return None
    free, total = _cuda_places[0].meminfo()
    return sum(b for _, b in memory.resident()), total - free, total


# -- a field's values on the GPU, for other libraries ------------------------------------------

def _cuda_here() -> CudaPlace:
    if _cuda_places:   # made already: no toolchain probe on every view
        return _cuda_places[0]
    from .. import platform   # the toolchain of the CUDA backend, as its operators get it
    ok, why = platform.usable("cuda")
    if not ok:
        raise ExecutionError(f"a field's GPU values need the CUDA backend, which cannot run "
                             f"here: {why}")
    return cuda_place(platform.toolchain("cuda"))


def _on_cuda(storage):
    """``storage``'s CUDA copy, up to date (made in the CUDA backend's layout if it has none)."""
    place = _cuda_here()
    copy = storage.copy
    if copy is not None and copy.place is place:
        return storage.on_device(place, copy.layout)
    return storage.on_device(place, cuda_field_layout(storage))


def cuda_field_layout(storage) -> DeviceLayout:
    """The layout the CUDA backend gives a field's copy: pitched rows for grid functions."""
    from backends.cuda.backend import field_layout
    return field_layout(storage.shape, storage.dtype.itemsize,
                        storage.halo[-1] if storage.halo else None)


def foreign(value) -> bool:
    """Whether ``value`` is another library's GPU array (CuPy, PyTorch, JAX, Numba)."""
    return interop.foreign_view(value) is not None


def device_view(storage, start, shape) -> interop.DeviceArray:
    """A view of ``storage``'s GPU copy (``shape`` elements from index ``start``; None: all)
    for another library; the copy counts as written from now on."""
    copy = _on_cuda(storage)
    storage.device_written()
    return interop.DeviceArray(copy.strided(storage.dtype, shape, start or ()), owner=copy)


def write_device(storage, start, shape, value, name: str):
    """``f.data = value`` for a GPU array ``value``: copied on the GPU into the field's copy."""
    found = interop.foreign(value)
    src, keep = found
    shape = tuple(shape)
    if src.shape != shape:
        raise _bad_input(name, f"has shape {src.shape}, the field's values {shape}")
    if cuda_runtime.type_code(src.dtype) is None:
        raise _bad_input(name, f"holds {src.dtype}, which the GPU copy cannot convert")
    copy = _on_cuda(storage)
    if src.device[1] != copy.place.device:
        raise _bad_input(name, f"lies on GPU {src.device[1]}, the field on GPU "
                               f"{copy.place.device}")
    copy.place.synchronize()   # the producer's stream may still be writing it
    copy.place.strided_copy(copy.strided(storage.dtype, shape, start), src)
    storage.device_written()
    del keep


def _bad_input(name, what):
    return InvalidArgument(f"{name}.data = <GPU array>: the array {what}; give one of the "
                           f"field's shape on its GPU, of a real type")
