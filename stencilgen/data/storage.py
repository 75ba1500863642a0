"""A field's values on the host and, once a GPU operator has used it, on the GPU: which copy
is newer, and when one is copied to the other.

The rule: an apply on the GPU leaves the values it wrote there, and a later one finds them
there; the host copy is brought up to date when the host reads it (through ``.data`` or any
numpy operation on an array taken from it), and the GPU copy when an apply needs it after the
host wrote it. A field never touched on the host holds zeros and is never copied up at all.

``HostArray`` (what ``.data`` returns) is how the host side is watched: reading through it
brings its field's values back first, writing through it marks the host copy newer.
"""
from __future__ import annotations

import threading

import numpy as np

from . import memory
from ..errors import ExecutionError


class Storage:
    """One field's values: a host array (None until needed: zeros), at most one device copy
    (made by a place, ``stencilgen.data.places``), and which of them is newer (None: they agree)."""

    def __init__(self, name: str, shape: tuple, dtype, halo: tuple = ()):
        self.name, self.shape, self.dtype = name, tuple(shape), np.dtype(dtype)
        self.halo = tuple(halo)   # per space axis (none for sparse values)
        self._host: np.ndarray | None = None
        self.copy = None          # the device copy, or None
        self.newer: str | None = None   # "host", "device" or None
        self.external = False     # the host array is the caller's (DataReference): kept
                                  # up to date after every apply that writes it
        self.writes = 0           # host or device writes seen: what was checked of the
                                  # values (a Function's zero box) holds until this moves
        self._lock = threading.RLock()

    # -- the host side ---------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        """Bytes of host memory held (0 before the first access)."""
        return 0 if self._host is None else self._host.nbytes

    @property
    def device_nbytes(self) -> int:
        return 0 if self.copy is None else self.copy.nbytes

    def adopt(self, array: np.ndarray) -> None:
        """Hold ``array`` (the caller's, of this shape and dtype) as the host values."""
        with self._lock:
            memory.reserve(self, array.nbytes)
            self._host, self.external = array, True

    def host_buffer(self) -> np.ndarray:
        """The host array as it is (allocated, zeros, on first use), not brought up to date."""
        if self._host is None:
            with self._lock:
                if self._host is None:
                    memory.reserve(self, int(np.prod(self.shape)) * self.dtype.itemsize)
                    self._host = np.zeros(self.shape, dtype=self.dtype)
        return self._host

    def host(self) -> np.ndarray:
        """The host array, with the device's newer values copied back first."""
        if self.newer == "device":
            with self._lock:
                if self.newer == "device":
                    self.copy.download(self.host_buffer())
                    self.newer = None
        return self.host_buffer()

    def view(self) -> "HostArray":
        """The host array (up to date) as a watched view: what ``.data_with_halo`` returns."""
        out = self.host().view(HostArray)
        out._storage = self
        return out

    def host_written(self):
        """The host copy was written: the device's copy is stale."""
        self.writes += 1
        if self.copy is not None:
            self.newer = "host"

    def holds(self, arr: np.ndarray) -> bool:
        """Whether ``arr`` lies in this storage's host array (a view of it, not a copy)."""
        if self._host is None or arr.size == 0:
            return False
        lo = self._host.__array_interface__["data"][0]
        at = arr.__array_interface__["data"][0]
        return lo <= at < lo + self._host.nbytes

    # -- the device side -------------------------------------------------------------------
    def on_device(self, place, layout):
        """The device copy made by ``place`` in ``layout``, up to date (made, or remade in
        another place or layout, and written from the host where the host is newer)."""
        with self._lock:
            if self.copy is not None and (self.copy.place is not place or
                                          self.copy.layout != layout):
                self.release()
            if self.copy is None:
                self.copy = place.allocate(self, layout, self._host)
                self.newer = None
            elif self.newer == "host":
                self.copy.upload(self._host)
                self.newer = None
            return self.copy

    def device_written(self):
        """The device copy was written (by a kernel, or through a view handed out)."""
        self.writes += 1
        self.newer = "device"

    def release(self):
        """Bring the host up to date and drop the device copy (its memory is freed once no
        view handed out of it is left)."""
        with self._lock:
            if self.copy is None:
                return
            self.host()
            self.copy, self.newer = None, None

    def zero(self):
        """Every value zero, where the values are: a device copy is zeroed on its device
        (no copy through the host), and the host array (if any) is left to be brought up to
        date on its next read (a wavefield kept for a gradient is gigabytes: zeroing its host
        array as well at every run would cost more than the run)."""
        with self._lock:
            if self.copy is not None and hasattr(self.copy.place, "zero"):
                self.copy.place.zero(self.copy)
                self.newer = "device" if self._host is not None else None
                return
            if self._host is not None:
                self._host[...] = 0
                self.host_written()

    def checkpoint(self):
        """A copy of the values as they are now, kept where they are newest (a device copy
        on a place that can duplicate one, else a host array): for ``restore``."""
        with self._lock:
            copy = self.copy
            if copy is not None and self.newer != "host" and hasattr(copy.place, "duplicate"):
                return copy.place.duplicate(copy)
            return self.host().copy()

    def restore(self, saved):
        """Put back the values of a ``checkpoint``."""
        with self._lock:
            if isinstance(saved, np.ndarray):
                self.host_buffer()[...] = saved
                self.newer = "host" if self.copy is not None else None
            elif self.copy is not None and self.copy.place is saved.place and \
                    self.copy.layout == saved.layout:
                saved.place.copy_device(self.copy, saved)
                self.newer = "device"
            else:
                saved.download(self.host_buffer())
                self.newer = "host" if self.copy is not None else None

    def lose_device(self, why: str):
        """Forget the device copy without reading it (its CUDA context failed)."""
        with self._lock:
            lost = self.newer == "device"
            self.copy, self.newer = None, None
        if lost:
            raise ExecutionError(f"{self.name}: its values on the GPU are lost ({why}); its "
                                 f"host copy holds those of its last copy back")

    def __repr__(self):
        where = "host" if self.copy is None else f"host and {self.copy.place.name}"
        return f"Storage({self.name}, {self.shape}, {self.dtype.name}, {where})"


def _sync(x):
    """``x`` itself, or for a watched array a plain view of it, brought up to date."""
    if isinstance(x, HostArray):
        st = x._storage
        if st is not None and st.newer == "device":
            st.host()
        return x.view(np.ndarray)
    if isinstance(x, (tuple, list)):
        return type(x)(_sync(v) for v in x)
    return x


def _mark(x):
    if isinstance(x, HostArray) and x._storage is not None:
        x._storage.host_written()


# numpy functions that write into their first argument
_WRITERS = {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis}


def _index(key):
    """A list of slices (and integers) indexes one axis each, as a tuple does: Devito's Data
    takes ``f.data[[slice(1, 3), slice(0, 2)]]`` so, where numpy would read a list as an
    index array."""
    if isinstance(key, list) and key and any(isinstance(k, slice) for k in key) and \
            all(isinstance(k, (slice, int, np.integer)) or k is Ellipsis for k in key):
        return tuple(key)
    return key


def _wrapped(key, modulo: int | None):
    """``key`` with an integer index along the first axis taken modulo ``modulo`` (a ring
    buffer's time slots, as Devito's Data: ``u.data[2]`` of two slots is slot 0)."""
    if not modulo:
        return key
    first = key[0] if isinstance(key, tuple) and key else key
    if isinstance(first, (int, np.integer)) and not isinstance(first, bool):
        first = int(first) % modulo
        return (first,) + key[1:] if isinstance(key, tuple) else first
    return key


def _key_text(key) -> str:
    """An index as the user wrote it, roughly: ``[:]``, ``[0, 2:5]``."""
    parts = key if isinstance(key, tuple) else (key,)

    def one(k):
        if isinstance(k, slice):
            return (f"{'' if k.start is None else k.start}:{'' if k.stop is None else k.stop}"
                    + ("" if k.step is None else f":{k.step}"))
        return "..." if k is Ellipsis else str(k) if np.isscalar(k) else "[...]"
    return "[" + ", ".join(one(k) for k in parts) + "]"


class HostArray(np.ndarray):
    """A numpy view of a field's host values that keeps them in step with its GPU copy.

    Arrays taken from it (slices, views) do the same; copies are plain arrays. What numpy
    cannot report (a C extension writing into its buffer, ``np.asarray`` of an array held
    across an apply) is not seen: take ``f.data`` again after an apply, and write through it.
    A ring buffer's ``data`` wraps integer time indices (``modulo``: its slots).
    """

    _storage: Storage | None = None
    modulo: int | None = None

    def __array_finalize__(self, obj):
        st = getattr(obj, "_storage", None)
        self._storage = st if st is not None and st.holds(self) else None

    def _fresh(self):
        st = self._storage
        if st is not None and st.newer == "device":
            st.host()

    def __getitem__(self, key):
        self._fresh()
        return super().__getitem__(_wrapped(_index(key), self.modulo))

    def __setitem__(self, key, value):
        key = _wrapped(_index(key), self.modulo)
        if hasattr(value, "__cuda_array_interface__") or _on_gpu(value):
            raise TypeError("a GPU array cannot be written into part of a field's host "
                            "values; assign the whole field (f.data = array: copied on the "
                            "GPU), or bring it to the host first (cupy.asnumpy(array))")
        self._fresh()
        try:
            super().__setitem__(key, _sync(value))
        except ValueError as exc:
            if self._storage is None or "broadcast" not in str(exc):
                raise
            name, part = self._storage.name, np.shape(super().__getitem__(key))
            raise ValueError(
                f"{name}.data{_key_text(key)} has shape {part} ({name}.data: {self.shape}, "
                f"its halo not included) and the values given {np.shape(value)}: {exc}; give "
                f"values of shape {part} (or that broadcast to it)") from None
        _mark(self)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        args = _sync(list(inputs))
        if out is not None:
            kwargs["out"] = _sync(tuple(out))
        result = getattr(ufunc, method)(*args, **kwargs)
        for o in (out or ()) + ((inputs[0],) if method == "at" else ()):
            _mark(o)
        if out is None or result is None:
            return result
        return out[0] if len(out) == 1 else out

    def __array_function__(self, func, types, args, kwargs):
        result = func._implementation(*_sync(list(args)), **{k: _sync(v)
                                                               for k, v in kwargs.items()})
        if func in _WRITERS and args:
            _mark(args[0])
        _mark(kwargs.get("out"))
        return result

    def __reduce_ex__(self, protocol):
        self._fresh()
        return self.view(np.ndarray).__reduce_ex__(protocol)

    def __repr__(self):
        self._fresh()
        return repr(self.view(np.ndarray))

    def __str__(self):
        self._fresh()
        return str(self.view(np.ndarray))

    def __iter__(self):
        self._fresh()
        if self.ndim > 1:   # rows stay watched
            return (self[i] for i in range(self.shape[0]))
        return super().__iter__()


def _on_gpu(value) -> bool:
    """Whether ``value`` says (DLPack) that its memory is on a CUDA device."""
    device = getattr(value, "__dlpack_device__", None)
    try:
        return device is not None and device()[0] in (2, 13)
    except Exception:   # noqa: BLE001 - an object that cannot say is not a GPU array
        return False


def _reading(name):
    def method(self, *args, **kwargs):
        self._fresh()
        return getattr(np.ndarray, name)(self.view(np.ndarray), *args, **kwargs)
    method.__name__ = name
    return method


def _writing(name):
    def method(self, *args, **kwargs):
        self._fresh()
        out = getattr(np.ndarray, name)(self, *args, **kwargs)
        _mark(self)
        return out
    method.__name__ = name
    return method


for _name in ("tolist", "tobytes", "item", "copy", "astype", "flatten", "dot", "tofile",
              "__copy__", "__deepcopy__", "__float__", "__int__", "__bool__", "__index__",
              "__format__", "__contains__", "__complex__"):
    setattr(HostArray, _name, _reading(_name))
for _name in ("fill", "sort", "put", "partition", "setfield", "byteswap", "itemset"):
    if hasattr(np.ndarray, _name):
        setattr(HostArray, _name, _writing(_name))
