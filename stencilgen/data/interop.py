"""Zero-copy exchange of field values with GPU array libraries (CuPy, PyTorch, JAX).

Out: a ``DeviceArray`` shows a field's memory through ``__cuda_array_interface__`` (version 3)
and DLPack (``__dlpack__``, legacy and versioned capsules), so ``cupy.asarray(x)``,
``torch.from_dlpack(x)`` and ``jax.dlpack.from_dlpack(x)`` read and write it in place.
In: ``foreign`` and ``foreign_view`` read where another library's GPU array lies (its
``__cuda_array_interface__``, else its DLPack capsule) as a ``Strided``: plain data.

Built on ctypes alone: no GPU library is imported. The DLPack deleter and capsule
destructor are Python (ctypes) callbacks, and CPython cannot hand an exception in flight
through one: where a consumer frees our tensor while an exception propagates (numpy's
``from_dlpack`` refusing a CUDA capsule, or an array from it dropped during unwinding), the
callback still frees the tensor, prints that exception ("Exception ignored on calling ctypes
callback function") and the caller then sees a SystemError instead. Only a C deleter could
avoid it.
"""
from __future__ import annotations

import ctypes
import functools
import math
import weakref
from dataclasses import dataclass

import numpy as np

from stencilgen.errors import InvalidArgument

__all__ = ["Strided", "DeviceArray", "foreign", "foreign_view"]

KDL_CPU, KDL_CUDA, KDL_CUDA_MANAGED = 1, 2, 13        # DLDeviceType
_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_COMPLEX, _KDL_BOOL = 0, 1, 2, 5, 6  # DLDataTypeCode
FLAG_READ_ONLY = 1                                     # DLPACK_FLAG_BITMASK_READ_ONLY
_DEVICE_CODES = {"cpu": KDL_CPU, "cuda": KDL_CUDA}
_DEVICE_KINDS = {KDL_CPU: "cpu", KDL_CUDA: "cuda", KDL_CUDA_MANAGED: "cuda"}

SUPPORTED_DTYPES = tuple(np.dtype(name) for name in (
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128"))
_DL_CODES = {"f": _KDL_FLOAT, "i": _KDL_INT, "u": _KDL_UINT, "b": _KDL_BOOL,
             "c": _KDL_COMPLEX}
_NP_KINDS = {code: kind for kind, code in _DL_CODES.items()}


@dataclass(frozen=True)
class Strided:
    """A view of memory as plain data: where, what shape, which strides (in bytes)."""
    ptr: int                  # address of element [0, 0, ...]
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in BYTES, non-negative, multiples of the item size
    dtype: np.dtype
    device: tuple[str, int]   # ("cuda", device_id) or ("cpu", 0)
    readonly: bool = False

    def __post_init__(self):
        # normalised so that views built from lists, numpy integers or dtype names compare equal
        set_ = object.__setattr__
        set_(self, "ptr", int(self.ptr or 0))
        set_(self, "shape", tuple(int(n) for n in self.shape))
        set_(self, "strides", tuple(int(s) for s in self.strides))
        set_(self, "dtype", np.dtype(self.dtype))
        set_(self, "device", (str(self.device[0]), int(self.device[1])))
        set_(self, "readonly", bool(self.readonly))


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The byte strides of a C-contiguous (row-major, compact) array of this shape."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _is_c_contiguous(shape, strides, itemsize) -> bool:
    """Whether the layout is row-major and compact (dimensions of extent 1 may stride anyhow)."""
    if 0 in shape:
        return True
    return all(n == 1 or s == c for n, s, c in zip(shape, strides, _c_strides(shape, itemsize)))


def _check_dtype(dtype: np.dtype, where: str) -> np.dtype:
    """``dtype`` if stencilgen exchanges it, else our error naming those it does."""
    if dtype not in SUPPORTED_DTYPES:
        names = ", ".join(d.name for d in SUPPORTED_DTYPES)
        raise InvalidArgument(f"{where} has dtype {dtype}, which stencilgen does not exchange "
                              f"with other libraries; convert it to one of: {names}")
    return dtype


def _check_layout(shape, strides, itemsize, where: str) -> None:
    """Refuse shapes and strides a Strided cannot describe (negative or misaligned strides)."""
    if len(shape) != len(strides):
        raise InvalidArgument(f"{where} has {len(shape)} dimensions but {len(strides)} "
                              "strides; give one stride per dimension")
    if any(n < 0 for n in shape):
        raise InvalidArgument(f"{where} has a negative extent in its shape {shape}")
    if any(s < 0 or s % itemsize for s in strides):
        raise InvalidArgument(
            f"{where} has byte strides {strides}: stencilgen takes only non-negative strides "
            f"that are multiples of the item size ({itemsize}); pass a contiguous copy "
            "(e.g. cupy.ascontiguousarray(x) or x.contiguous() in PyTorch)")


def _check_view(view: Strided) -> None:
    """Validate a Strided before a DeviceArray shows it to other libraries."""
    if not isinstance(view, Strided):
        raise InvalidArgument(f"DeviceArray takes a Strided view, not {type(view).__name__}")
    _check_dtype(view.dtype, "the view")
    _check_layout(view.shape, view.strides, view.dtype.itemsize, "the view")
    kind, index = view.device
    if kind not in _DEVICE_CODES or index < 0 or (kind == "cpu" and index != 0):
        raise InvalidArgument(f"the view's device {view.device} is not ('cuda', id >= 0) or "
                              "('cpu', 0)")


# ---------------------------------------------------------------------------------------
# DLPack structures (dlpack.h) and the few CPython capsule functions they travel in

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    """The legacy (unversioned) managed tensor of capsules named "dltensor"."""
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    """The managed tensor of DLPack 1.x, in capsules named "dltensor_versioned"."""
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


def _capsule_api(arg):
    """Our own handles on CPython's capsule functions (argument types set here do not touch
    ``ctypes.pythonapi``, which other libraries configure too); ``arg`` types the capsule."""
    lib = ctypes.PyDLL(None, handle=ctypes.pythonapi._handle)
    types = {"PyCapsule_New": ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p],
                               ctypes.py_object),
             "PyCapsule_GetName": ([arg], ctypes.c_char_p),
             "PyCapsule_GetPointer": ([arg, ctypes.c_char_p], ctypes.c_void_p),
             "PyCapsule_SetName": ([arg, ctypes.c_void_p], ctypes.c_int),
             "PyCapsule_IsValid": ([arg, ctypes.c_char_p], ctypes.c_int),
             "PyErr_Occurred": ([], ctypes.c_void_p)}
    for name, (argtypes, restype) in types.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = argtypes, restype
    return lib


_api = _capsule_api(ctypes.py_object)
# in a capsule's destructor the capsule is being freed: it must be passed by address,
# never as a py_object (which would take a new reference to it)
_raw_api = _capsule_api(ctypes.c_void_p)

# capsule names must outlive the capsules: module-level buffers
_NAMES = {key: ctypes.create_string_buffer(key) for key in (
    b"dltensor", b"used_dltensor", b"dltensor_versioned", b"used_dltensor_versioned")}

_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# address of an exported managed tensor -> what must live until its deleter runs:
# the ctypes struct, shape and strides arrays, and the owner of the memory
_exports: dict[int, tuple] = {}


def _take_in_flight() -> BaseException | None:
    """The exception in flight on this thread, taken (C code may call our callbacks while
    one propagates, and Python code cannot return with one set; see the module doc)."""
    try:
        _raw_api.PyErr_Occurred()   # a Python-API call: ctypes raises what is set
    except BaseException as error:
        return error
    return None


def _release_export(managed: int | None) -> None:
    """Our DLPack deleter: forget the export, freeing its buffers and its owner reference."""
    in_flight = _take_in_flight()
    try:
        _exports.pop(managed, None)
    except Exception:       # interpreter shutdown: the module's globals may be gone
        pass
    if in_flight is not None:
        raise in_flight     # ctypes prints it ("Exception ignored on calling ...")


def _destroy_unconsumed(capsule: int | None) -> None:
    """Capsule destructor: free an export that no consumer took (named as made)."""
    in_flight = _take_in_flight()
    try:
        for name in (b"dltensor", b"dltensor_versioned"):
            if _raw_api.PyCapsule_IsValid(capsule, name):
                _release_export(_raw_api.PyCapsule_GetPointer(capsule, name))
                break
    except Exception:
        pass
    if in_flight is not None:
        raise in_flight


_deleter = _CALLBACK(_release_export)
_destructor = _CALLBACK(_destroy_unconsumed)
_DELETER = ctypes.cast(_deleter, ctypes.c_void_p).value
_DESTRUCTOR = ctypes.cast(_destructor, ctypes.c_void_p).value
# never freed: a consumer may call the deleter while the interpreter tears this module down
for _callback in (_deleter, _destructor):
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_callback))
del _callback


# ---------------------------------------------------------------------------------------
# DLPack out

def _dl_dtype(dtype: np.dtype) -> DLDataType:
    """DLPack's description of a supported numpy dtype (bool: kDLBool of 8 bits)."""
    return DLDataType(_DL_CODES[dtype.kind], dtype.itemsize * 8, 1)


def _fill_tensor(tensor: DLTensor, view: Strided, shape, strides) -> None:
    """Describe ``view`` in ``tensor`` (shape and strides in elements, byte_offset 0)."""
    tensor.data = view.ptr or None
    kind, index = view.device
    tensor.device = DLDevice(_DEVICE_CODES[kind], index)
    tensor.ndim = len(view.shape)
    tensor.dtype = _dl_dtype(view.dtype)
    tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0


def _export_capsule(view: Strided, owner, versioned: bool):
    """A DLPack capsule of ``view`` ("dltensor_versioned", DLPack 1.0, when ``versioned``,
    else legacy "dltensor"); ``owner`` lives until the consumer's deleter call, or until
    the capsule is dropped unconsumed."""
    ndim, itemsize = len(view.shape), view.dtype.itemsize
    shape = (ctypes.c_int64 * ndim)(*view.shape)
    strides = (ctypes.c_int64 * ndim)(*(s // itemsize for s in view.strides))
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    _fill_tensor(managed.dl_tensor, view, shape, strides)
    managed.deleter = _DELETER
    if versioned:
        managed.version = DLPackVersion(1, 0)
        managed.flags = FLAG_READ_ONLY if view.readonly else 0
    address = ctypes.addressof(managed)
    _exports[address] = (managed, shape, strides, owner)
    name = _NAMES[b"dltensor_versioned" if versioned else b"dltensor"]
    try:
        return _api.PyCapsule_New(address, ctypes.addressof(name), _DESTRUCTOR)
    except BaseException:
        _exports.pop(address, None)
        raise


# ---------------------------------------------------------------------------------------
# DLPack in

class _Lease:
    """A consumed DLPack tensor: the producer's deleter runs when this is dropped (or at
    ``release()``), so the memory it describes stays valid while this lives."""
    __slots__ = ("_finalizer", "__weakref__")

    def __init__(self, managed: int, deleter: int | None):
        self._finalizer = weakref.finalize(self, _call_deleter, managed, deleter)
        self._finalizer.atexit = False      # producers may be gone at exit: leak instead

    def release(self) -> None:
        """Hand the tensor back to its producer now."""
        self._finalizer()


def _call_deleter(managed: int, deleter: int | None) -> None:
    if deleter:
        _CALLBACK(deleter)(managed)


def _dl_numpy_dtype(dtype: DLDataType) -> np.dtype:
    """The numpy dtype of a DLPack one, or our error when stencilgen does not take it."""
    kind = _NP_KINDS.get(dtype.code)
    if kind is None or dtype.lanes != 1 or dtype.bits % 8:
        raise InvalidArgument(
            f"the DLPack tensor has type code {dtype.code} with {dtype.bits} bits and "
            f"{dtype.lanes} lanes, which stencilgen does not take; convert the array to "
            "float32 or float64")
    return _check_dtype(np.dtype(f"{kind}{dtype.bits // 8}"), "the DLPack tensor")


def _dl_device(device: DLDevice) -> tuple[str, int]:
    kind = _DEVICE_KINDS.get(device.device_type)
    if kind is None:
        raise InvalidArgument(f"the DLPack tensor lies on device type {device.device_type}; "
                              "stencilgen takes CUDA (2), CUDA managed (13) or CPU (1) memory")
    return kind, device.device_id


def _tensor_view(tensor: DLTensor, readonly: bool) -> Strided:
    """The Strided a DLTensor describes (strides NULL: C-contiguous)."""
    dtype = _dl_numpy_dtype(tensor.dtype)
    ndim, itemsize = tensor.ndim, dtype.itemsize
    shape = tuple(tensor.shape[i] for i in range(ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[i] * itemsize for i in range(ndim))
    else:
        strides = _c_strides(shape, itemsize)
    _check_layout(shape, strides, itemsize, "the DLPack tensor")
    ptr = (tensor.data or 0) + tensor.byte_offset
    return Strided(ptr, shape, strides, dtype, _dl_device(tensor.device), readonly)


def _read_capsule(capsule) -> tuple[Strided, _Lease]:
    """Consume a DLPack capsule (legacy or versioned): its Strided and the lease that keeps
    the producer's memory until dropped. A capsule we refuse is left unconsumed."""
    name = _api.PyCapsule_GetName(capsule) if type(capsule).__name__ == "PyCapsule" else None
    if name not in (b"dltensor", b"dltensor_versioned"):
        used = name is not None and name.startswith(b"used_")
        raise InvalidArgument(
            "this DLPack capsule was consumed already; call __dlpack__() again for a new one"
            if used else f"expected a DLPack capsule, got {type(capsule).__name__} "
            f"{name!r}: __dlpack__() returned something else")
    address = _api.PyCapsule_GetPointer(capsule, name)
    if name == b"dltensor":
        managed, readonly = DLManagedTensor.from_address(address), False
    else:
        managed = DLManagedTensorVersioned.from_address(address)
        if managed.version.major != 1:
            raise InvalidArgument(f"the DLPack capsule has version {managed.version.major}."
                                  f"{managed.version.minor}; stencilgen reads 1.x (and legacy)")
        readonly = bool(managed.flags & FLAG_READ_ONLY)
    view = _tensor_view(managed.dl_tensor, readonly)
    _api.PyCapsule_SetName(capsule, ctypes.addressof(_NAMES[b"used_" + name]))
    return view, _Lease(address, managed.deleter)


def _dlpack_capsule(obj):
    """``obj.__dlpack__`` asking for a versioned capsule, legacy from older producers.
    stream=None: the producer orders its pending work before CUDA's legacy default stream."""
    try:
        return obj.__dlpack__(stream=None, max_version=(1, 0))
    except TypeError:
        return obj.__dlpack__(stream=None)


# ---------------------------------------------------------------------------------------
# __cuda_array_interface__ in (and the CUDA driver, only for its stream and pointer queries)

@functools.lru_cache(maxsize=None)
def _cuda_driver():
    """The initialised CUDA driver library, or None where there is none."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        return driver if driver.cuInit(0) == 0 else None
    except (OSError, AttributeError):
        return None


def _pointer_device(ptr: int) -> int:
    """The GPU holding ``ptr`` (0 where the driver cannot tell)."""
    driver, ordinal = _cuda_driver(), ctypes.c_int(0)
    if driver is not None and ptr:
        device_ordinal = 9      # CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        if driver.cuPointerGetAttribute(ctypes.byref(ordinal), device_ordinal,
                                        ctypes.c_uint64(ptr)) != 0:
            ordinal.value = 0
    return ordinal.value


def _synchronize(stream: int, device: int) -> None:
    """Wait for the work queued on a producer's CUDA stream (CUDA Array Interface v3 asks the
    consumer to); in the current context, else in the device's primary one."""
    driver = _cuda_driver()
    if driver is None:
        raise InvalidArgument(f"the array's __cuda_array_interface__ asks to wait for CUDA "
                              f"stream {stream:#x}, but the CUDA driver cannot be loaded here")
    handle = ctypes.c_void_p(stream)
    code = driver.cuStreamSynchronize(handle)
    if code == 201:             # CUDA_ERROR_INVALID_CONTEXT: none current on this thread
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        driver.cuDeviceGet(ctypes.byref(dev), device)
        code = driver.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        if code == 0:
            driver.cuCtxPushCurrent_v2(ctx)
            code = driver.cuStreamSynchronize(handle)
            driver.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
            driver.cuDevicePrimaryCtxRelease_v2(dev)
    if code != 0:
        raise InvalidArgument(f"waiting for the array's CUDA stream {stream:#x} failed "
                              f"(CUDA error {code}); is the array still valid?")


def _typestr_dtype(typestr) -> np.dtype:
    """The dtype of an array interface's typestr ("<f4"), native byte order only."""
    try:
        dtype = np.dtype(typestr) if isinstance(typestr, str) else None
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.fields is not None:
        raise InvalidArgument(f"__cuda_array_interface__ has typestr {typestr!r}, which is not "
                              "a NumPy type string such as '<f4'")
    if dtype.byteorder not in ("=", "|"):
        raise InvalidArgument(f"__cuda_array_interface__ has typestr {typestr!r}, in the "
                              "non-native byte order; swap the bytes first")
    return _check_dtype(dtype, "the array (__cuda_array_interface__)")


def _ints(value, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in value):
        raise InvalidArgument(f"__cuda_array_interface__ has {what} {value!r}; expected a "
                              "tuple of integers")
    return tuple(int(n) for n in value)


def _from_cai(cai, device: int | None) -> Strided:
    """The Strided a __cuda_array_interface__ dict describes; waits for its stream."""
    if not isinstance(cai, dict) or not {"shape", "typestr", "data"} <= cai.keys():
        raise InvalidArgument("__cuda_array_interface__ must be a dict with at least "
                              f"'shape', 'typestr' and 'data'; got {cai!r}")
    if cai.get("mask") is not None:
        raise InvalidArgument("the array has a mask (__cuda_array_interface__['mask']); "
                              "stencilgen takes plain arrays: fill the masked entries first")
    dtype, shape = _typestr_dtype(cai["typestr"]), _ints(cai["shape"], "shape")
    given = cai.get("strides")
    strides = _c_strides(shape, dtype.itemsize) if given is None else _ints(given, "strides")
    _check_layout(shape, strides, dtype.itemsize, "the array (__cuda_array_interface__)")
    data = cai["data"]
    if not (isinstance(data, (tuple, list)) and len(data) == 2):
        raise InvalidArgument(f"__cuda_array_interface__ has data {data!r}; expected "
                              "(pointer, readonly)")
    ptr = int(data[0] or 0)
    device = _pointer_device(ptr) if device is None else device
    if cai.get("stream") is not None and cai.get("version", 0) >= 3:
        _synchronize(int(cai["stream"]), device)
    return Strided(ptr, shape, strides, dtype, ("cuda", device), bool(data[1]))


# ---------------------------------------------------------------------------------------
# the public import functions

def _dlpack_device(obj) -> tuple[int, int] | None:
    """``obj.__dlpack_device__()`` as two ints, or None when it has none."""
    method = getattr(obj, "__dlpack_device__", None)
    if method is None:
        return None
    kind, index = method()
    return int(kind), int(index)


def foreign(obj) -> tuple[Strided, object] | None:
    """The memory of a GPU array from another library and what keeps it valid: (view,
    keepalive), or None for anything else (numpy arrays, lists, scalars: host data).

    Use this when the view is used after ``obj`` may be gone (e.g. kept for later applies):
    hold ``keepalive`` as long as the view is used. For a DLPack producer ``keepalive`` is a
    lease whose drop hands the tensor back (the producer's deleter runs); for a
    ``__cuda_array_interface__`` producer it is ``obj`` itself. The interface is preferred
    where an object has both; its stream, if any, is waited for here.
    """
    if isinstance(obj, type):
        return None
    device = _dlpack_device(obj)
    if device is not None and device[0] not in (KDL_CUDA, KDL_CUDA_MANAGED):
        return None
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _from_cai(cai, None if device is None else device[1]), obj
    if device is None or not hasattr(obj, "__dlpack__"):
        return None
    view, lease = _read_capsule(_dlpack_capsule(obj))
    if view.device[0] != "cuda":
        lease.release()
        raise InvalidArgument(f"{type(obj).__name__}.__dlpack_device__() says CUDA but its "
                              f"DLPack tensor lies on {view.device[0]}")
    return view, lease


def foreign_view(obj) -> Strided | None:
    """The memory of a GPU array from another library (an object with
    ``__cuda_array_interface__``, or with ``__dlpack__`` and a ``__dlpack_device__`` saying
    CUDA), else None (numpy arrays, lists, scalars: the caller treats them as host data).

    Only for callers that use the view at once while they hold ``obj`` (to copy from it):
    the producer may reuse the memory once ``obj`` is gone. Otherwise use ``foreign``.
    """
    found = foreign(obj)
    return None if found is None else found[0]


# ---------------------------------------------------------------------------------------
# DeviceArray: a field's memory shown to other libraries

class DeviceArray:
    """A zero-copy view of a field's values on the GPU, for CuPy, PyTorch or JAX.

    ``owner`` is kept alive as long as this view, or any DLPack capsule or tensor made from
    it, lives. Writes through the consumer's array change the field.
    """
    __slots__ = ("_view", "_owner", "__weakref__")

    def __init__(self, view: Strided, owner):
        _check_view(view)
        self._view, self._owner = view, owner

    shape = property(lambda self: self._view.shape, doc="extent of each dimension")
    dtype = property(lambda self: self._view.dtype, doc="the numpy dtype of the values")
    strides = property(lambda self: self._view.strides, doc="byte step along each dimension")
    ptr = property(lambda self: self._view.ptr, doc="address of element [0, 0, ...]")
    device = property(lambda self: self._view.device, doc='("cuda", id) or ("cpu", 0)')
    ndim = property(lambda self: len(self._view.shape), doc="number of dimensions")
    size = property(lambda self: math.prod(self._view.shape), doc="number of elements")
    nbytes = property(lambda self: self.size * self._view.dtype.itemsize,
                      doc="bytes of the values (not counting gaps between strided rows)")

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3; an AttributeError for a CPU view, so that no library takes
        host memory for GPU memory. "stream": None means no synchronisation is needed: the
        values are complete when handed out (every apply ends with a device synchronise)."""
        view = self._view
        if view.device[0] != "cuda":
            raise AttributeError("a DeviceArray of host memory has no __cuda_array_interface__")
        contiguous = _is_c_contiguous(view.shape, view.strides, view.dtype.itemsize)
        return {"shape": view.shape, "typestr": view.dtype.str,
                "data": (view.ptr if self.size else 0, view.readonly), "version": 3,
                "strides": None if contiguous else view.strides, "stream": None}

    def __dlpack_device__(self) -> tuple[int, int]:
        kind, index = self._view.device
        return _DEVICE_CODES[kind], index

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the values: versioned (DLPack 1.0, read-only flag) when the
        consumer's ``max_version`` is (1, 0) or later, else legacy. ``stream`` is accepted
        and ignored: the values are complete when handed out (every apply ends with a device
        synchronise), so no consumer stream needs to wait. No copies: ``copy=True`` or
        another ``dl_device`` raise BufferError."""
        if copy:
            raise BufferError("a DeviceArray exports its memory without copying; copy=True "
                              "is not possible: copy the consumer's array instead")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"the values lie on device {self.__dlpack_device__()} "
                              f"(DLPack codes), not {tuple(dl_device)}; move the consumer's "
                              "array after importing it")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        if self._view.readonly and not versioned:
            raise BufferError("these values are read-only, which a legacy DLPack capsule "
                              "cannot say; ask with max_version=(1, 0) or use "
                              "__cuda_array_interface__")
        return _export_capsule(self._view, self._owner, versioned)

    def __array__(self, dtype=None, copy=None):
        """Host values as a numpy array (zero-copy); GPU values raise instead of numpy
        silently wrapping this object in an array of objects."""
        if self._view.device[0] != "cpu":
            raise InvalidArgument(
                f"{self!r} holds GPU memory, which numpy cannot read; copy it to the host "
                "first (cupy.asnumpy(cupy.asarray(x)), torch.from_dlpack(x).cpu().numpy())")
        array = np.from_dlpack(self)
        if dtype is not None and np.dtype(dtype) != array.dtype:
            if copy is False:
                raise ValueError(f"converting {array.dtype} to {np.dtype(dtype)} needs a copy")
            return array.astype(dtype)
        return array.copy() if copy else array

    def __repr__(self) -> str:
        kind, index = self._view.device
        flag = ", readonly" if self._view.readonly else ""
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, {kind}:{index}{flag})"
