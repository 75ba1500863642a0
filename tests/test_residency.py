"""Fields that stay where an operator ran: the rules of ``stencilgen/data/storage.py``, checked on
any machine with an emulated device (C kernels reading "device" copies that are separate host
buffers, every copy between them counted). The GPU tests are in test_residency_gpu.py."""
from __future__ import annotations

import gc
import pickle
import weakref

import numpy as np
import pytest

from stencilgen import Eq, Function, Grid, Operator, SparseTimeFunction, TimeFunction
from stencilgen.data import memory, places
from stencilgen.data.storage import HostArray


class EmuCopy:
    """A "device" copy: a host buffer of its own."""

    def __init__(self, place, layout, dtype, host):
        self.place, self.layout = place, layout
        self.buf = np.zeros(layout.shape, dtype=dtype)
        self.ptr, self.nbytes = self.buf.ctypes.data, self.buf.nbytes
        if host is not None:
            self.upload(host)

    def upload(self, host):
        self.buf[...] = host
        self.place.moved["to_device"] += host.nbytes

    def download(self, host):
        host[...] = self.buf
        self.place.moved["to_host"] += host.nbytes


class EmuPlace(places._DevicePlace):
    name = "emulated"

    def __init__(self, free=1 << 40):
        self.moved = {"to_device": 0, "to_host": 0}
        self.free = free

    def meminfo(self):
        return self.free, self.free

    def allocate(self, storage, layout, host):
        memory.reserve(storage, 0)   # as the real places do
        return EmuCopy(self, layout, storage.dtype, host)

    def reset(self):
        self.moved = {"to_device": 0, "to_host": 0}


def _bytes(f) -> int:
    """Bytes of ``f``'s values (asked without reading them)."""
    st = f.field.storage
    return int(np.prod(st.shape)) * st.dtype.itemsize


def _acoustic(place=None, name="ResidentAcoustic"):
    """A 2-D acoustic run with a source, a receiver and a compiler temporary."""
    grid = Grid(shape=(24, 20), extent=(230.0, 190.0))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    m = Function(name="m", grid=grid, space_order=4)
    m.data[:] = 1.0 / 1.5 ** 2
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=41,
                             coordinates=[(110.0, 90.0)])
    src.data[:, 0] = np.sin(np.arange(41) * 0.3)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=2, nt=41,
                             coordinates=[(50.0, 50.0), (170.0, 120.0)])
    eqs = [Eq(u.forward, 2 * u - u.backward + (u.dt2 * 0 + u.laplace) / m * 0.5)]
    eqs += src.inject(u.forward, src * 0.5) + rec.interpolate(u)
    op = Operator(eqs, name=name, backend="c")
    op.cfunction   # noqa: B018 - built, so that the place can be set
    if place is not None:
        op._where = place
    return op, u, m, src, rec


def _run(op, chunks, nt=40, dt=0.5):
    step = nt // chunks
    for c in range(chunks):
        op.apply(time_m=1 + c * step, time_M=(c + 1) * step, dt=dt)


def test_chunked_applies_move_nothing_and_equal_one_apply():
    place = EmuPlace()
    op, u, m, src, rec = _acoustic(place)
    _run(op, 1)
    whole = (np.array(u.data), np.array(rec.data))
    op2, u2, m2, src2, rec2 = _acoustic(place)
    place.reset()
    op2.apply(time_m=1, time_M=4, dt=0.5)
    first = dict(place.moved)
    assert first["to_host"] == 0
    # the arrays the host wrote (m, src) went up once; u and rec, never touched, did not
    assert first["to_device"] == sum(_bytes(f) for f in (m2, src2))
    place.reset()
    for c in range(1, 10):
        op2.apply(time_m=1 + 4 * c, time_M=4 + 4 * c, dt=0.5)
    assert place.moved == {"to_device": 0, "to_host": 0}   # ten chunks: no copies between
    assert np.array_equal(np.asarray(u2.data), whole[0])   # read: copied back once
    assert np.array_equal(np.asarray(rec2.data), whole[1])
    assert place.moved["to_host"] == _bytes(u2) + _bytes(rec2)
    assert place.moved["to_device"] == 0


def test_a_field_the_host_never_touched_is_never_copied():
    place = EmuPlace()
    op, u, m, src, rec = _acoustic(place, "ResidentUntouched")
    op.apply(time_m=1, time_M=10, dt=0.5)
    assert u.field.storage.nbytes == 0        # no host array was ever needed
    assert u.field.storage.device_nbytes > 0
    assert float(np.abs(u.data).max()) > 0    # now it is made, and filled from the device
    assert u.field.storage.nbytes == _bytes(u)


def test_arrays_held_across_an_apply_see_the_new_values():
    place = EmuPlace()
    op, u, m, src, rec = _acoustic(place, "ResidentHeld")
    held, row = u.data, u.data[1]
    op.apply(time_m=1, time_M=10, dt=0.5)
    assert place.moved["to_host"] == 0
    assert isinstance(row, HostArray) and row._storage is u.field.storage
    assert float(np.abs(row).max()) > 0        # a ufunc on a held row copies back first
    assert np.array_equal(held[1], row)
    assert place.moved["to_host"] == _bytes(u)
    op.apply(time_m=11, time_M=12, dt=0.5)
    total = float(held.sum())                  # a method on the held array: fresh again
    assert total == float(np.asarray(u.data).sum())
    assert str(held) == str(np.asarray(u.data))


@pytest.mark.parametrize("write", [
    lambda d: d.__setitem__((0, 3, 3), 1.0),
    lambda d: d.__iadd__(1.0),
    lambda d: np.copyto(d, 2.0),
    lambda d: d.fill(3.0),
    lambda d: np.add(d, 1.0, out=d),
    lambda d: np.put(d, [0], [5.0]),
    lambda d: [row.__setitem__(0, 1.0) for row in d],
], ids=["setitem", "iadd", "copyto", "fill", "ufunc-out", "put", "rows"])
def test_writes_through_data_are_uploaded_before_the_next_apply(write):
    place = EmuPlace()
    results = []
    for where in (place, places.HOST):
        op, u, m, src, rec = _acoustic(where, "ResidentWrites")
        op.apply(time_m=1, time_M=4, dt=0.5)
        write(u.data)
        assert where is places.HOST or u.field.storage.newer == "host"
        place.reset()
        op.apply(time_m=5, time_M=6, dt=0.5)
        if where is place:
            assert place.moved == {"to_device": _bytes(u), "to_host": 0}
        results.append(np.array(u.data))
    assert np.array_equal(*results)   # the kernels read what the host wrote


def test_reads_upload_nothing_and_copies_are_plain():
    place = EmuPlace()
    op, u, m, src, rec = _acoustic(place, "ResidentReads")
    op.apply(time_m=1, time_M=4, dt=0.5)
    d = u.data
    _ = d[1, 3:5].copy(), d.max(), np.sum(d), d.tolist(), d * 2, repr(d), list(d[0, 0])
    assert u.field.storage.newer is None
    assert type(d.copy()) is np.ndarray and type(d * 2) is np.ndarray
    back = pickle.loads(pickle.dumps(d))
    assert type(back) is np.ndarray and np.array_equal(back, np.asarray(d))
    ro = u.data_ro_domain
    with pytest.raises(ValueError):
        ro[0, 0, 0] = 1.0
    place.reset()
    op.apply(time_m=5, time_M=5, dt=0.5)
    assert place.moved["to_device"] == 0


def test_a_host_backend_after_a_device_one_sees_the_device_values():
    place = EmuPlace()
    op, u, m, src, rec = _acoustic(place, "ResidentMixed")
    op.apply(time_m=1, time_M=5, dt=0.5)
    on_device = np.array(u.field.storage.copy.buf)
    assert u.field.storage.newer == "device"
    host_op = Operator([Eq(u.forward, u + 1.0)], name="ResidentHostStep", backend="c")
    host_op.apply(time_m=6, time_M=6)          # reads the device's values (copied back)
    h = [left for left, _ in u.halo[1:]]
    inner = (slice(h[0], -h[0]), slice(h[1], -h[1]))
    assert np.array_equal(np.asarray(u.data_with_halo[1][inner]), on_device[0][inner] + 1.0)
    assert u.field.storage.newer == "host"     # the host wrote: the device copy is stale
    place.reset()
    op.apply(time_m=7, time_M=7, dt=0.5)
    assert place.moved["to_device"] == _bytes(u)


def test_autotuning_trials_leave_the_device_copies_as_they_were():
    place = EmuPlace()
    op, u, m, src, rec = _acoustic(place, "ResidentTuned")
    ref_op, ref_u, _, _, ref_rec = _acoustic(EmuPlace(), "ResidentTunedRef")
    op.apply(time_m=1, time_M=6, dt=0.5, autotune=True)
    ref_op.apply(time_m=1, time_M=6, dt=0.5, autotune=False)
    assert np.array_equal(np.asarray(u.data), np.asarray(ref_u.data))
    assert np.array_equal(np.asarray(rec.data), np.asarray(ref_rec.data))


def test_the_footprint_check_names_what_is_resident():
    place = EmuPlace()
    op, u, m, src, rec = _acoustic(place, "ResidentFull")
    op.apply(time_m=1, time_M=2, dt=0.5)
    grid = u.grid
    v = TimeFunction(name="v", grid=grid, time_order=2, space_order=4)
    op2 = Operator([Eq(v.forward, v + 0.1 * v.laplace)], name="ResidentFull2", backend="c")
    op2.cfunction  # noqa: B018
    op2._where = place
    place.free = 1000
    with pytest.raises(places.DeviceMemoryError,
                       match=r"need \d+\.\d MiB on the GPU \(\d+\.\d MiB of it not there yet; "
                             r"largest v .* but only 0\.0 MiB .* resident fields: u \(.* MiB\)"):
        op2.apply(time_m=1, time_M=2, dt=0.5)


def test_release_device_frees_the_copy_and_keeps_the_values():
    place = EmuPlace()
    op, u, m, src, rec = _acoustic(place, "ResidentRelease")
    op.apply(time_m=1, time_M=8, dt=0.5)
    copy = weakref.ref(u.field.storage.copy)
    u.release_device()
    gc.collect()
    assert copy() is None and u.field.storage.copy is None
    assert place.moved["to_host"] == _bytes(u)   # its values came back first
    assert float(np.abs(u.data).max()) > 0


def test_a_dropped_field_frees_its_device_copy():
    place = EmuPlace()
    op, u, m, src, rec = _acoustic(place, "ResidentDropped")
    op.apply(time_m=1, time_M=2, dt=0.5)
    copy = weakref.ref(u.field.storage.copy)
    del op, u
    memory.clear_cache()
    assert copy() is None


def test_values_of_the_wrong_shape_name_the_field_and_the_shapes():
    grid = Grid(shape=(20, 20))
    m = Function(name="m", grid=grid)
    with pytest.raises(ValueError, match=r"m\.data\[:\] has shape \(20, 20\) \(m\.data: "
                       r"\(20, 20\), its halo not included\) and the values given \(30, 30\)"):
        m.data[:] = np.ones((30, 30))
    u = TimeFunction(name="u", grid=grid)
    with pytest.raises(ValueError, match=r"u\.data\[0, 2:5\] has shape \(3, 20\)"):
        u.data[0, 2:5] = np.ones((30, 30))
    m.data[:] = np.ones((20, 20))   # values that fit are written as before
    u.data[0, 2:5] = 2.0
    assert m.data.sum() == 400 and u.data[0].sum() == 120
