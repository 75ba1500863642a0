"""stencilgen.data.interop: DLPack and CUDA Array Interface exchange. Here (no GPU) DeviceArrays
over host memory are read back by numpy and by our own importer; views labelled as CUDA
memory are only described, never dereferenced. The CuPy/PyTorch/JAX round trips need a GPU."""
from __future__ import annotations

import ctypes
import gc
import os
import sys
import weakref

import numpy as np
import pytest

from stencilgen.data import interop
from stencilgen.errors import InvalidArgument
from stencilgen.data.interop import DeviceArray, Strided, foreign, foreign_view


class Owner:
    """Stands for a field's storage: holds the buffer; a weakref tells when it is freed."""

    def __init__(self, array):
        self.array = array


def _view(array, device=("cpu", 0), readonly=False):
    return Strided(array.ctypes.data, array.shape, array.strides, array.dtype, device,
                   readonly)


def _device_array(array, device=("cpu", 0), readonly=False):
    """A DeviceArray over ``array``, owned by an Owner that only it references."""
    owner = Owner(array)
    return DeviceArray(_view(array, device, readonly), owner), weakref.ref(owner)


def _collected(ref) -> bool:
    gc.collect()
    return ref() is None


class LegacyOnly:
    """A producer of the DLPack of before 2023: __dlpack__ takes only ``stream``."""

    def __init__(self, inner):
        self.inner = inner

    def __dlpack__(self, stream=None):
        return self.inner.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()


class DLPackOnly:
    """A GPU array that offers DLPack but no __cuda_array_interface__."""

    def __init__(self, inner):
        self.inner = inner

    def __dlpack__(self, **kwargs):
        return self.inner.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()


class CaiOnly:
    """An object carrying just a __cuda_array_interface__ (as Numba's device arrays do)."""

    def __init__(self, interface, dlpack_device=None):
        self.__cuda_array_interface__ = interface
        if dlpack_device is not None:
            self.__dlpack_device__ = lambda: dlpack_device


def _base(dtype):
    return (np.arange(3 * 5 * 6) * 3 - 7).astype(dtype).reshape(3, 5, 6)


LAYOUTS = {
    "contiguous": lambda a: a,
    "strided": lambda a: a[::2, 1:],
    "transposed": lambda a: a.transpose(2, 0, 1),
    "every-other": lambda a: a[:, ::2, ::3],
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "float16", "uint8", "bool",
                                   "complex64", "complex128"])
def test_numpy_reads_the_same_memory(dtype, layout):
    source = LAYOUTS[layout](_base(dtype))
    array, _ = _device_array(source)
    result = np.from_dlpack(array)
    assert np.shares_memory(result, source)
    assert result.dtype == source.dtype and result.strides == source.strides
    np.testing.assert_array_equal(result, source)
    result[0, 0, 0] = 1            # writes reach the field's memory
    assert source[0, 0, 0] == 1


def test_the_owner_lives_as_long_as_the_consumers_array():
    before = len(interop._exports)
    source = _base("float64")[::2, 1:]
    expected = source.copy()
    array, owner = _device_array(source)
    result = np.from_dlpack(array)
    del array, source
    assert not _collected(owner)
    np.testing.assert_array_equal(result, expected)   # still readable after the rest is gone
    del result
    assert _collected(owner)
    assert len(interop._exports) == before        # the ctypes buffers went with it


def test_legacy_consumer_path():
    source = _base("int64").transpose(1, 2, 0)
    array, owner = _device_array(source)
    result = np.from_dlpack(LegacyOnly(array))       # numpy falls back to the legacy capsule
    assert np.shares_memory(result, source)
    np.testing.assert_array_equal(result, source)
    del array, result
    assert _collected(owner)


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_capsules_read_back_to_the_same_view(versioned):
    source = _base("float32")[:, 1::2, ::3]
    array, owner = _device_array(source)
    capsule = array.__dlpack__(max_version=(1, 0)) if versioned else array.__dlpack__()
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert name(capsule) == (b"dltensor_versioned" if versioned else b"dltensor")
    view, lease = interop._read_capsule(capsule)
    assert view == _view(source)
    assert name(capsule) == (b"used_dltensor_versioned" if versioned else b"used_dltensor")
    with pytest.raises(InvalidArgument, match="consumed already"):
        interop._read_capsule(capsule)
    del array, capsule
    assert not _collected(owner)       # the lease still holds the tensor
    lease.release()
    assert _collected(owner)


def test_numpy_capsules_are_read_and_released():
    """Our importer against another producer (numpy): layout, read-only flag, deleter."""
    base = np.arange(24.0).reshape(4, 6)
    base.setflags(write=False)
    part = base[1:, ::2]
    alive = weakref.ref(part)
    view, lease = interop._read_capsule(part.__dlpack__(max_version=(1, 0)))
    assert view == Strided(part.ctypes.data, (3, 3), (48, 16), np.float64, ("cpu", 0), True)
    del part
    assert not _collected(alive)
    del lease
    assert _collected(alive)


def test_a_refused_capsule_is_left_to_its_producer():
    capsule = np.zeros(3, np.float32).__dlpack__()
    pointer = ctypes.pythonapi.PyCapsule_GetPointer
    pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    managed = interop.DLManagedTensor.from_address(pointer(capsule, b"dltensor"))
    managed.dl_tensor.dtype.code = 4     # kDLBfloat, a type stencilgen does not take
    with pytest.raises(InvalidArgument, match="does not take"):
        interop._read_capsule(capsule)
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert name(capsule) == b"dltensor"                # not consumed: numpy frees it


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_an_unconsumed_capsule_frees_the_owner(versioned):
    before = len(interop._exports)
    array, owner = _device_array(_base("float64"))
    capsule = array.__dlpack__(max_version=(1, 0) if versioned else None)
    del array
    assert not _collected(owner)
    del capsule
    assert _collected(owner)
    assert len(interop._exports) == before


def test_read_only_views():
    source = _base("float32")
    array, _ = _device_array(source, readonly=True)
    result = np.from_dlpack(array)
    assert np.shares_memory(result, source) and not result.flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        array.__dlpack__()                             # a legacy capsule cannot say so
    view, lease = interop._read_capsule(array.__dlpack__(max_version=(1, 0)))
    assert view.readonly
    lease.release()
    cuda, _ = _device_array(source, ("cuda", 0), readonly=True)
    assert cuda.__cuda_array_interface__["data"] == (source.ctypes.data, True)


def test_dlpack_arguments():
    array, _ = _device_array(_base("float64"))
    with pytest.raises(BufferError, match="copy=True"):
        array.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="not \\(2, 0\\)"):
        array.__dlpack__(dl_device=(2, 0))
    for kwargs in ({"copy": False}, {"dl_device": (1, 0)}, {"max_version": (1, 3)},
                   {"max_version": (0, 8)}):
        interop._read_capsule(array.__dlpack__(**kwargs))[1].release()
    assert array.__dlpack_device__() == (1, 0)
    gpu, _ = _device_array(_base("float64"), ("cuda", 3))
    assert gpu.__dlpack_device__() == (2, 3)
    view, lease = interop._read_capsule(gpu.__dlpack__(stream=7))   # stream: ignored
    assert view.device == ("cuda", 3)
    lease.release()


def test_properties_and_repr():
    source = _base("float32")[::2, 1:]
    array, _ = _device_array(source, ("cuda", 1))
    assert (array.shape, array.dtype, array.strides) == (source.shape, source.dtype,
                                                         source.strides)
    assert (array.ptr, array.device) == (source.ctypes.data, ("cuda", 1))
    assert (array.ndim, array.size, array.nbytes) == (3, source.size, source.nbytes)
    assert repr(array) == "DeviceArray(shape=(2, 4, 6), dtype=float32, cuda:1)"
    host, _ = _device_array(np.zeros((3, 4), np.float64))
    assert repr(host) == "DeviceArray(shape=(3, 4), dtype=float64, cpu:0)"


def test_cuda_array_interface():
    source = _base("float64")
    host, _ = _device_array(source)
    assert not hasattr(host, "__cuda_array_interface__")
    whole, _ = _device_array(source, ("cuda", 0))
    assert whole.__cuda_array_interface__ == {
        "shape": (3, 5, 6), "typestr": "<f8", "data": (source.ctypes.data, False),
        "version": 3, "strides": None, "stream": None}
    part = source[::2, 1:]
    sliced, _ = _device_array(part, ("cuda", 0))
    interface = sliced.__cuda_array_interface__
    assert interface["strides"] == (480, 48, 8) and interface["shape"] == (2, 4, 6)
    assert interface["data"] == (part.ctypes.data, False)
    flags, _ = _device_array(np.zeros((2, 1, 3), bool), ("cuda", 0))
    assert flags.__cuda_array_interface__["typestr"] == "|b1"
    row, _ = _device_array(source[1:2, 1:], ("cuda", 0))   # extent 1: contiguous all the same
    assert row.__cuda_array_interface__["strides"] is None
    empty, _ = _device_array(np.zeros((0, 3), np.float32), ("cuda", 0))
    assert empty.__cuda_array_interface__["data"] == (0, False)


@pytest.fixture
def no_driver(monkeypatch):
    """As on a machine without the CUDA driver (and no test initialises CUDA in pytest's
    process, which would break children forked later)."""
    monkeypatch.setattr(interop, "_cuda_driver", lambda: None)


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_foreign_view_of_an_interface_round_trips(layout, no_driver):
    source = LAYOUTS[layout](_base("float32"))
    array, _ = _device_array(source, ("cuda", 2), readonly=True)
    interface = array.__cuda_array_interface__
    assert foreign_view(CaiOnly(interface, (2, 2))) == array._view
    # without __dlpack_device__ the driver tells the device; with no driver: device 0
    assert foreign_view(CaiOnly(interface)) == Strided(
        source.ctypes.data, source.shape, source.strides, source.dtype, ("cuda", 0), True)
    view, keep = foreign(array)                       # our own DeviceArray, through CAI
    assert view == array._view and keep is array


def test_foreign_reads_dlpack_when_there_is_no_interface():
    for wrap in (DLPackOnly, LegacyOnly):
        array, owner = _device_array(_base("int64")[:, ::2], ("cuda", 0))
        view, lease = foreign(wrap(array))
        assert view == array._view
        del array
        assert not _collected(owner)
        del lease
        assert _collected(owner)


def test_a_cuda_claim_with_a_host_tensor_is_refused():
    host, owner = _device_array(_base("float64"))

    class Liar(DLPackOnly):
        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(InvalidArgument, match="says CUDA"):
        foreign(Liar(host))
    del host
    assert _collected(owner)


def test_host_data_is_not_foreign():
    host, _ = _device_array(_base("float32"))
    for value in (np.zeros(3), [1.0, 2.0], 3.5, np.float32(2), host, np.ndarray, None):
        assert foreign_view(value) is None and foreign(value) is None


@pytest.mark.parametrize("typestr, match", [
    ("<q9", "not a NumPy type string"), (7, "not a NumPy type string"),
    (">f4", "byte order"), (">c8", "byte order"), ("|V8", "V8|void")])
def test_bad_typestr(typestr, match):
    interface = {"shape": (3,), "typestr": typestr, "data": (4096, False), "version": 3}
    with pytest.raises(InvalidArgument, match=match):
        foreign_view(CaiOnly(interface, (2, 0)))


@pytest.mark.parametrize("change, match", [
    ({"mask": CaiOnly({})}, "mask"),
    ({"strides": (-8,)}, "non-negative"),
    ({"strides": (6,)}, "multiples of the item size"),
    ({"strides": (8, 8)}, "1 dimensions but 2 strides"),
    ({"shape": (3.0,)}, "tuple of integers"),
    ({"data": 4096}, r"\(pointer, readonly\)"),
    ({"typestr": None}, "not a NumPy type string")])
def test_bad_interface(change, match):
    interface = {"shape": (3,), "typestr": "<f8", "data": (4096, False), "version": 3}
    interface.update(change)
    with pytest.raises(InvalidArgument, match=match):
        foreign_view(CaiOnly(interface, (2, 0)))
    with pytest.raises(InvalidArgument, match="at least 'shape'"):
        foreign_view(CaiOnly({"shape": (3,)}, (2, 0)))


def test_an_interface_stream_needs_the_driver(no_driver):
    interface = {"shape": (3,), "typestr": "<f8", "data": (4096, False), "version": 3,
                 "stream": 1}
    with pytest.raises(InvalidArgument, match="CUDA driver cannot be loaded"):
        foreign_view(CaiOnly(interface, (2, 0)))
    interface["version"] = 2                          # before v3 there was no stream
    assert foreign_view(CaiOnly(interface, (2, 0))).ptr == 4096


@pytest.mark.parametrize("view, match", [
    (Strided(4096, (3,), (16,), np.longdouble, ("cuda", 0)), "longdouble|float128"),
    (Strided(4096, (3,), (6,), np.float64, ("cuda", 0)), "multiples of the item size"),
    (Strided(4096, (3, 2), (8,), np.float64, ("cuda", 0)), "2 dimensions but 1 strides"),
    (Strided(4096, (3,), (8,), np.float64, ("tpu", 0)), "device"),
    (Strided(4096, (3,), (8,), np.float64, ("cpu", 1)), "device")])
def test_bad_views_are_refused(view, match):
    with pytest.raises(InvalidArgument, match=match):
        DeviceArray(view, None)


def test_numpy_asarray():
    source = _base("float64")[:, 1:]
    host, _ = _device_array(source)
    result = np.asarray(host)
    assert np.shares_memory(result, source)
    assert np.asarray(host, dtype=np.float32).dtype == np.float32
    gpu, _ = _device_array(source, ("cuda", 0))
    with pytest.raises(InvalidArgument, match="GPU memory"):
        np.asarray(gpu)            # not a silent 0-d array of objects


def test_zero_size_and_scalar_views():
    for source in (np.zeros((0, 4), np.float32), np.array(2.5)):
        array, _ = _device_array(source)
        result = np.from_dlpack(array)
        assert result.shape == source.shape
        np.testing.assert_array_equal(result, source)
        view, lease = interop._read_capsule(array.__dlpack__(max_version=(1, 0)))
        assert view.shape == source.shape
        lease.release()


def test_a_consumer_failing_in_flight_still_frees(monkeypatch):
    """numpy refuses a CUDA capsule after taking it: our destructor runs with numpy's error
    in flight. It frees the export and reports that error (the caller then sees a
    SystemError: CPython cannot pass an exception through a Python callback)."""
    before, reported = len(interop._exports), []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    gpu, owner = _device_array(_base("float32"), ("cuda", 0))
    with pytest.raises(Exception):
        np.from_dlpack(gpu)
    del gpu
    assert _collected(owner) and len(interop._exports) == before
    if reported:            # (a numpy that refused before taking the capsule reports nothing)
        assert any("device" in str(r.exc_value).lower() for r in reported)


# ---------------------------------------------------------------------------------------
# with a GPU library and a GPU (the GPU machine)

def _gpu_library(name):
    if name == "torch":   # after the compiler's libgomp: later OpenACC builds keep loading
        from stencilgen.seismic.autograd import import_torch
        try:
            import_torch()
        except ImportError:
            pytest.skip("torch is not installed")
    module = pytest.importorskip(name, reason=f"{name} is not installed")
    try:
        if name == "cupy" and module.cuda.runtime.getDeviceCount() > 0:
            return module
        if name == "torch" and module.cuda.is_available():
            return module
        if name == "jax" and module.devices("gpu"):
            return module
    except Exception as error:          # no driver or no device
        pytest.skip(f"{name} sees no GPU: {error}")
    pytest.skip(f"{name} sees no GPU")


@pytest.mark.gpu
def test_cupy_round_trip():
    cupy = _gpu_library("cupy")
    base = cupy.arange(60, dtype=cupy.float32).reshape(3, 4, 5)
    source = base[::2, 1:]
    view = Strided(source.data.ptr, source.shape, source.strides, np.float32,
                   ("cuda", source.device.id))
    array = DeviceArray(view, base)
    through_interface, through_dlpack = cupy.asarray(array), cupy.from_dlpack(array)
    for result in (through_interface, through_dlpack):
        assert result.data.ptr == source.data.ptr and result.strides == source.strides
        assert bool((result == source).all())
    through_dlpack[0, 0, 0] = -1
    assert float(source[0, 0, 0]) == -1
    _reads_back(source, view)


def _reads_back(source, view):
    """``source`` (another library's GPU array) read through its interface and through DLPack
    alone gives ``view``."""
    assert foreign_view(source) == view
    imported, lease = foreign(DLPackOnly(source))
    assert imported == view
    lease.release()


@pytest.mark.gpu
def test_torch_round_trip():
    torch = _gpu_library("torch")
    base = torch.arange(60, dtype=torch.float32, device="cuda").reshape(3, 4, 5)
    source = base[::2, 1:]
    view = Strided(source.data_ptr(), tuple(source.shape),
                   tuple(4 * s for s in source.stride()), np.float32,
                   ("cuda", source.device.index))
    result = torch.from_dlpack(DeviceArray(view, base))
    assert result.data_ptr() == source.data_ptr() and result.stride() == source.stride()
    assert torch.equal(result, source)
    result[0, 0, 0] = -1
    assert float(source[0, 0, 0]) == -1
    _reads_back(source, view)


@pytest.mark.gpu
def test_jax_reads_a_device_array():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # leave the GPU to others
    jax = _gpu_library("jax")
    cupy = _gpu_library("cupy")
    source = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    view = Strided(source.data.ptr, source.shape, source.strides, np.float32,
                   ("cuda", source.device.id))
    result = jax.dlpack.from_dlpack(DeviceArray(view, source))
    np.testing.assert_array_equal(np.asarray(result), cupy.asnumpy(source))
