"""SEG-Y in and out, through segyio (``pip install 'stencilgen[segy]'``): velocity models read
into a ``Model`` and written back; a shot's records written as a gather with the trace headers
processing packages read, and a gather read back into a geometry and data.

Conventions (SEG-Y rev 1, as segyio numbers the fields):

- A model is one trace a column of depth samples. The depth spacing is the sample interval
  read as millimetres (bytes 3217 / 117, the field that holds microseconds in time data: a
  file with 1.25 m samples says 1250), the depth of the first sample the delay recording time
  read as metres (byte 109), feet where the binary header's measurement system says so
  (byte 3255 = 2). A 2D model is one trace an x position, in the order of their CDP_X
  (181, scaled by byte 71); a 3D model has inline and crossline numbers (189, 193), the axis
  along which CDP_X changes being x. Where the headers do not say a spacing or an origin,
  ``spacing=`` and ``origin=`` say it; where both say one they must agree.
- A gather is one trace a receiver of one shot (field record number byte 9), its samples at
  the trace's sample interval (microseconds, a whole number), source and receiver x and y in
  bytes 73-88 and their depths in 49 (source depth) and 41 (receiver elevation, negative
  below the datum), each with its scalar (71, 69: negative divides), the offset in 37, the
  midpoint in 181-188; IEEE float32 samples (format 5).

Units are the toolkit's: metres, km/s, ms. A model file's samples are in m/s or km/s (told
apart by their size unless ``unit=`` says), and what was read is said in ``SegyModel.said``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stencilgen import logger as log
from stencilgen.errors import StencilgenError

from .wavelets import TimeAxis

#: the error where segyio is missing
SEGYIO_HINT = "SEG-Y needs segyio: pip install 'stencilgen[segy]' (or pip install segyio)"
#: feet in a metre's unit, for files whose binary header says feet
FOOT = 0.3048
#: the coordinate scalar written: coordinates kept to the centimetre
COORDINATE_SCALAR = -100
#: the samples of the polynomial that resamples a record (``resample``)
RESAMPLE_POINTS = 8
#: a relative difference of spacings or sample intervals within which they agree
TOLERANCE = 1e-4


class SegyError(StencilgenError, ValueError):
    """A SEG-Y file that cannot be read as asked, or arguments that disagree with it."""


def _segyio():
    try:
        import segyio
    except ImportError as e:
        raise ImportError(SEGYIO_HINT) from e
    return segyio


@dataclass
class SegyModel:
    """A velocity model read from SEG-Y: ``vp`` (km/s; (nx, nz) or (nx, ny, nz), the last
    axis depth), its ``spacing`` and ``origin`` (m), the ``unit`` the file's samples were in,
    and ``said``: for each of spacing and origin per axis, where it came from ("headers",
    "given", "default")."""

    vp: np.ndarray
    spacing: tuple
    origin: tuple
    unit: str
    said: dict = field(default_factory=dict)

    @property
    def shape(self) -> tuple:
        return self.vp.shape

    def model(self, **kwargs):
        """A ``Model`` of this velocity, spacing and origin (``kwargs``: nbl, space_order,
        dtype, storage... as ``Model`` takes them)."""
        from .model import Model
        return Model(vp=self.vp, spacing=self.spacing, origin=self.origin, **kwargs)


@dataclass
class Gather:
    """One shot's traces read from SEG-Y: ``data`` (nt, ntraces), ``time`` (its samples, ms),
    the source's and receivers' coordinates (m; (1, dim) and (ntraces, dim), depth last),
    the ``field_record`` number."""

    data: np.ndarray
    time: TimeAxis
    src_coordinates: np.ndarray
    rec_coordinates: np.ndarray
    field_record: int

    def resample(self, step: float, num: int | None = None) -> "Gather":
        """This gather at samples ``step`` ms apart (``num`` of them: default, to the last
        sample's time), each trace interpolated (``resample``)."""
        data, time = resample(self.data, self.time, step, num)
        return Gather(data, time, self.src_coordinates, self.rec_coordinates,
                      self.field_record)

    def make_shot(self, model, f0: float):
        """A ``Shot`` on ``model`` at this gather's geometry and samples, its ``rec`` holding
        the gather (the observed data of an inversion or a migration)."""
        from .geometry import make_shot
        shot = make_shot(model, self.time, f0, self.src_coordinates, self.rec_coordinates)
        shot.rec.data[:] = self.data
        return shot


# -- reading ------------------------------------------------------------------------------

def _open(path, segyio):
    """The file opened as unstructured traces, or a SegyError saying why it is not SEG-Y."""
    path = Path(path)
    if not path.is_file():
        raise SegyError(f"{path}: no such file")
    if path.stat().st_size < 3600 + 240:
        raise SegyError(f"{path} is not a SEG-Y file: {path.stat().st_size} bytes, fewer than "
                        "the 3600-byte file header and one 240-byte trace header")
    try:
        f = segyio.open(str(path), "r", ignore_geometry=True)
    except Exception as e:   # segyio raises RuntimeError, ValueError... on a foreign file
        raise SegyError(f"{path} is not a SEG-Y file segyio can read ({e}); check that it is "
                        "SEG-Y (a 3200-byte text header, a 400-byte binary header, traces)")
    if f.tracecount < 1 or len(f.samples) < 1:
        f.close()
        raise SegyError(f"{path}: a SEG-Y file with no traces or no samples")
    return f


def _scaled(values, scalars) -> np.ndarray:
    """Header integers ``values`` with their SEG-Y scalars applied (negative divides, 0 = 1)."""
    s = np.asarray(scalars, dtype=np.float64)
    factor = np.where(s > 0, s, np.where(s < 0, -1.0 / np.where(s == 0, 1, s), 1.0))
    return np.asarray(values, dtype=np.float64) * factor


def _header(f, segyio, name) -> np.ndarray:
    return np.asarray(f.attributes(getattr(segyio.TraceField, name))[:], dtype=np.int64)


def _uniform_step(values, what: str, path):
    """The step of evenly spaced ``values`` (sorted), None where they are all equal."""
    v = np.unique(np.round(values, 6))
    if len(v) < 2:
        return None
    steps = np.diff(v)
    if not np.allclose(steps, steps[0], rtol=1e-3, atol=1e-6):
        raise SegyError(f"{path}: the traces' {what} are not evenly spaced (steps "
                        f"{steps.min():g} .. {steps.max():g} m): a model must be on a regular "
                        "grid; give spacing= and origin= to read the traces in file order")
    return float(steps[0])


def _layout(f, segyio, path):
    """(order of the traces, the horizontal shape, per horizontal axis its coordinates'
    step and first value or None where the headers do not say)."""
    n = f.tracecount
    il, xl = _header(f, segyio, "INLINE_3D"), _header(f, segyio, "CROSSLINE_3D")
    scal = _header(f, segyio, "SourceGroupScalar")
    cx = _scaled(_header(f, segyio, "CDP_X"), scal)
    cy = _scaled(_header(f, segyio, "CDP_Y"), scal)
    if not cx.any() and not cy.any():
        cx = _scaled(_header(f, segyio, "GroupX"), scal)
        cy = _scaled(_header(f, segyio, "GroupY"), scal)
    ni, nx = len(np.unique(il)), len(np.unique(xl))
    if ni > 1 and nx > 1:
        if ni * nx != n:
            raise SegyError(f"{path}: {n} traces over {ni} inlines and {nx} crosslines: a 3D "
                            "model needs every (inline, crossline) once")
        order = np.lexsort((xl, il))
        gx, gy = cx[order].reshape(ni, nx), cy[order].reshape(ni, nx)
        if np.ptp(gx[:, 0]) == 0 and np.ptp(gx[0, :]) > 0:   # x changes along the crosslines
            order = order.reshape(ni, nx).T.ravel()
            ni, nx = nx, ni
            gx, gy = gx.T, gy.T
        if (np.ptp(gx[0, :]) > 0 or np.ptp(gy[:, 0]) > 0):
            return order, (ni, nx), None   # a rotated grid: the headers cannot say its axes
        axes = [(_uniform_step(gx[:, 0], "CDP_X", path), float(gx.min())),
                (_uniform_step(gy[0, :], "CDP_Y", path), float(gy.min()))]
        return order, (ni, nx), axes
    if np.ptp(cx) > 0:
        order = np.argsort(cx, kind="stable")
        return order, (n,), [(_uniform_step(cx, "CDP_X", path), float(cx.min()))]
    return np.arange(n), (n,), [(None, None)]


def _agree(header, given, what: str, path, said: dict, key: str, default=None):
    """The value of ``what`` (headers', given, or ``default``), an error where the headers'
    and the given disagree."""
    if header is not None and given is not None:
        if not math.isclose(header, given, rel_tol=TOLERANCE, abs_tol=1e-9):
            raise SegyError(f"{path}: the headers say {what} = {header:g} m, the argument "
                            f"{given:g} m: drop the argument to take the headers', or fix the "
                            "file's headers")
    if given is not None:
        said[key] = "given"
        return float(given)
    if header is not None:
        said[key] = "headers"
        return float(header)
    said[key] = "default"
    return default


def _per_axis(value, ndim: int, what: str):
    if value is None:
        return [None] * ndim
    values = list(np.atleast_1d(np.asarray(value, dtype=np.float64)))
    if len(values) == 1:
        return values * ndim
    if len(values) != ndim:
        raise SegyError(f"{what} has {len(values)} values; the file holds a {ndim}D model")
    return values


def _velocity(values, unit, path):
    """``values`` in km/s and the unit they were read in."""
    finite = values[np.isfinite(values)]
    if unit is None:
        unit = "m/s" if finite.size and np.median(np.abs(finite)) > 100 else "km/s"
    scale = {"m/s": 1e-3, "km/s": 1.0, "ft/s": FOOT * 1e-3}.get(unit)
    if scale is None:
        raise SegyError(f"unit={unit!r}: give 'm/s', 'km/s' or 'ft/s'")
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise SegyError(f"{path}: {int(bad.sum())} velocities are zero, negative or not "
                        f"finite (the first at index {where}, {values[where]!r}): a velocity "
                        "model needs v > 0 everywhere; is this a velocity file, or does it "
                        "hold another property (density, a mask)?")
    return values.astype(np.float64) * scale, unit


def read_model(path, spacing=None, origin=None, unit: str | None = None) -> SegyModel:
    """The velocity model in SEG-Y file ``path`` (module docstring: its axes and headers).
    ``spacing``, ``origin``: one value or one per axis (x, [y,] z; m), taken where the headers
    do not say and checked against them where they do; ``unit``: the samples' unit, 'm/s',
    'km/s' or 'ft/s' (default: m/s where their median exceeds 100, else km/s)."""
    segyio = _segyio()
    with _open(path, segyio) as f:
        order, hshape, axes = _layout(f, segyio, path)
        traces = np.asarray(f.trace.raw[:], dtype=np.float64)[order]
        interval = int(f.bin[segyio.BinField.Interval]) or \
            int(f.header[0][segyio.TraceField.TRACE_SAMPLE_INTERVAL])
        delay = int(f.header[0][segyio.TraceField.DelayRecordingTime])
        feet = int(f.bin[segyio.BinField.MeasurementSystem]) == 2
    length = FOOT if feet else 1.0
    ndim = len(hshape) + 1
    if axes is None:   # rotated: the headers say no axis of the grid
        if spacing is None:
            raise SegyError(f"{path}: the traces' coordinates lie on a rotated grid: give "
                            "spacing= (and origin=) in the grid's own axes (x along the "
                            "inlines, y along the crosslines)")
        axes = [(None, None)] * len(hshape)
    headers = [(s * length if s is not None else None, o * length if o is not None else None)
               for s, o in axes]
    headers.append((interval / 1000.0 * length if interval > 0 else None, delay * length))
    spacing, origin = _per_axis(spacing, ndim, "spacing"), _per_axis(origin, ndim, "origin")
    names = "xyz" if ndim == 3 else "xz"
    said, h, o = {}, [], []
    for d, ((hs, ho), gs, go) in enumerate(zip(headers, spacing, origin)):
        h.append(_agree(hs, gs, f"d{names[d]}", path, said, f"spacing {names[d]}"))
        if h[-1] is None:
            raise SegyError(f"{path}: the headers do not say the spacing along {names[d]}: "
                            "give spacing=")
        o.append(_agree(ho if hs is not None or d == ndim - 1 else None, go,
                        f"{names[d]} origin", path, said, f"origin {names[d]}", 0.0))
    vp, unit = _velocity(traces.reshape(*hshape, -1), unit, path)
    log.info(f"read_model: {path}: {vp.shape} points, spacing {tuple(h)} m, origin "
             f"{tuple(o)} m, samples in {unit}" + (", lengths in feet" if feet else ""))
    return SegyModel(vp=vp, spacing=tuple(h), origin=tuple(o), unit=unit, said=said)


# -- writing ------------------------------------------------------------------------------

def _micro(step_ms: float, what: str) -> int:
    us = step_ms * 1000.0
    if us < 1 or us > 65535 or not math.isclose(us, round(us), rel_tol=0, abs_tol=1e-6 * us):
        raise SegyError(f"{what} {step_ms:g} is not a whole number of thousandths from 1 "
                        "to 65535 (SEG-Y stores the sample interval as such an integer)")
    return int(round(us))


def write_model(path, vp, spacing, origin=None, unit: str = "m/s") -> Path:
    """``vp`` (km/s; (nx, nz) or (nx, ny, nz)) as a SEG-Y model file ``path`` that
    ``read_model`` reads back (the module docstring's conventions), samples in ``unit``
    ('m/s' or 'km/s'), IEEE float32. A depth spacing must be a whole number of millimetres."""
    segyio = _segyio()
    vp = np.asarray(vp, dtype=np.float64)
    if vp.ndim not in (2, 3):
        raise SegyError(f"write_model: vp has {vp.ndim} dimensions; give 2 or 3")
    spacing = [float(s) for s in _per_axis(spacing, vp.ndim, "spacing")]
    origin = [float(s) for s in _per_axis(0.0 if origin is None else origin, vp.ndim, "origin")]
    scale = {"m/s": 1e3, "km/s": 1.0}.get(unit)
    if scale is None:
        raise SegyError(f"write_model: unit={unit!r}: give 'm/s' or 'km/s'")
    interval = _micro(spacing[-1], "write_model: the depth spacing (m, written as the sample "
                      "interval in mm)")
    if origin[-1] != round(origin[-1]) or not 0 <= origin[-1] < 32768:
        raise SegyError(f"write_model: the depth origin {origin[-1]:g} m must be a whole "
                        "number of metres from 0 to 32767 (the delay recording time field)")
    hshape = vp.shape[:-1]
    spec = segyio.spec()
    spec.format, spec.samples = 5, list(range(vp.shape[-1]))
    spec.tracecount = int(np.prod(hshape))
    grid = np.indices(hshape).reshape(len(hshape), -1).T
    with segyio.create(str(path), spec) as f:
        f.bin.update({segyio.BinField.Interval: interval,
                      segyio.BinField.Samples: vp.shape[-1],
                      segyio.BinField.MeasurementSystem: 1})
        for i, idx in enumerate(grid):
            x = origin[0] + idx[0] * spacing[0]
            y = origin[1] + idx[1] * spacing[1] if len(hshape) == 2 else 0.0
            f.header[i] = {
                segyio.TraceField.TRACE_SEQUENCE_LINE: i + 1,
                segyio.TraceField.TRACE_SEQUENCE_FILE: i + 1,
                segyio.TraceField.CDP: i + 1,
                segyio.TraceField.SourceGroupScalar: COORDINATE_SCALAR,
                segyio.TraceField.CDP_X: int(round(x * -COORDINATE_SCALAR)),
                segyio.TraceField.CDP_Y: int(round(y * -COORDINATE_SCALAR)),
                segyio.TraceField.INLINE_3D: int(idx[0]) + 1,
                segyio.TraceField.CROSSLINE_3D: int(idx[1]) + 1 if len(hshape) == 2 else 1,
                segyio.TraceField.DelayRecordingTime: int(origin[-1]),
                segyio.TraceField.TRACE_SAMPLE_COUNT: vp.shape[-1],
                segyio.TraceField.TRACE_SAMPLE_INTERVAL: interval}
            f.trace[i] = (vp[tuple(idx)] * scale).astype(np.float32)
    return Path(path)


def resample(data, time: TimeAxis, step: float, num: int | None = None):
    """``data`` ((nt, ...) on ``time``) at ``num`` samples ``step`` ms apart from the same
    start (default: up to the last sample's time; samples past it are 0), and their TimeAxis.

    Each new sample is the polynomial through the ``RESAMPLE_POINTS`` samples around it
    (Lagrange; the window kept inside the record at its ends). A run's records are sampled
    far finer than their band needs (the stability limit's step: a 10 Hz Ricker at 1 ms has
    30 samples in its shortest period), where this is exact to about (2 pi f dt)^8 / 8!:
    1e-10 of the amplitude at 30 samples a period; a band reaching the coarser Nyquist
    frequency must be low-passed first."""
    data = np.asarray(data)
    n = RESAMPLE_POINTS
    if step <= 0:
        raise SegyError(f"resample: step {step:g} ms must be positive")
    if time.num < n:
        raise SegyError(f"resample: {time.num} samples; resampling needs at least {n}")
    if num is None:
        num = int(math.floor((time.num - 1) * time.step / step + 1e-9)) + 1
    t = np.arange(num) * step / time.step   # the new samples, in old samples
    first = np.clip(np.floor(t).astype(np.int64) - (n // 2 - 1), 0, time.num - n)
    u = t - first   # where each new sample lies among its window's nodes 0 .. n-1
    flat = data.reshape(time.num, -1).astype(np.float64)
    acc = np.zeros((num, flat.shape[1]))
    for j in range(n):
        w = np.ones(num)
        for m in range(n):
            if m != j:
                w *= (u - m) / (j - m)
        acc += w[:, None] * flat[first + j]
    acc[t > time.num - 1 + 1e-9] = 0.0
    axis = TimeAxis(start=time.start, stop=time.start + (num - 1) * step, step=step, num=num)
    return acc.reshape((num,) + data.shape[1:]).astype(data.dtype, copy=False), axis


def _split(coords: np.ndarray):
    """x, y and depth columns of (n, dim) coordinates (y 0 in 2D)."""
    coords = np.atleast_2d(np.asarray(coords, dtype=np.float64))
    y = coords[:, 1] if coords.shape[1] == 3 else np.zeros(len(coords))
    return coords[:, 0], y, coords[:, -1]


def write_gather(path, shot, data=None, interval: float | None = None,
                 field_record: int = 1) -> Path:
    """Shot ``shot``'s records (``data``, (nt, nrec): default its ``rec.data``) as a SEG-Y
    gather ``path``, one trace a receiver with the headers of the module docstring
    (``write_traces``, which ``interval`` and ``field_record`` go to)."""
    data = np.asarray(shot.rec.data if data is None else data)
    return write_traces(path, data, shot.time, shot.src.coordinates.data,
                        shot.rec.coordinates.data, interval, field_record)


def write_traces(path, data, time, src, rec, interval: float | None = None,
                 field_record: int = 1) -> Path:
    """Traces ``data`` ((nt, nrec) on ``time``, a TimeAxis or the step in ms) of one source
    at ``src`` ((1, dim)) recorded at ``rec`` ((nrec, dim)) as a SEG-Y gather ``path``.

    ``interval``: the sample interval written (ms, a whole number of microseconds); default,
    the run's time step where it is one, else that step rounded to a whole microsecond. Where
    it differs from the run's step the traces are resampled (``resample``) and the log says
    so. Written under a temporary name and renamed: a gather there is a whole one."""
    segyio = _segyio()
    data = np.asarray(data)
    if not isinstance(time, TimeAxis):
        time = TimeAxis(start=0.0, stop=(len(data) - 1) * float(time), step=float(time),
                        num=len(data))
    if data.ndim != 2 or data.shape[0] != time.num:
        raise SegyError(f"write_gather: data has shape {data.shape}; the shot's records are "
                        f"({time.num}, nrec)")
    src = np.atleast_2d(np.asarray(src, dtype=np.float64))
    rec = np.atleast_2d(np.asarray(rec, dtype=np.float64))
    if len(src) != 1:
        raise SegyError(f"write_gather: the shot has {len(src)} sources; a gather's traces "
                        "name one source position (write each source's shot apart)")
    if rec.shape[0] != data.shape[1]:
        raise SegyError(f"write_gather: {data.shape[1]} traces for {rec.shape[0]} receivers")
    if interval is None:
        interval = round(time.step * 1000.0) / 1000.0
    us = _micro(interval, "write_gather: the interval (ms)")
    if not math.isclose(interval, time.step, rel_tol=1e-9):
        data, _ = resample(data, time, interval)
        log.info(f"write_gather: the record resampled from {time.step:g} ms to {interval:g} "
                 f"ms ({data.shape[0]} samples) for {path}")
    path = Path(path)
    part = path.with_name(f".{path.name}.part")
    try:
        _gather_file(segyio, part, data, us, src, rec, int(field_record))
        part.replace(path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return path


def _gather_file(segyio, path, data, us, src, rec, field_record) -> None:
    sx, sy, sz = (v[0] for v in _split(src))
    gx, gy, gz = _split(rec)
    c = -COORDINATE_SCALAR
    spec = segyio.spec()
    spec.format, spec.samples = 5, list(range(data.shape[0]))
    spec.tracecount = data.shape[1]
    with segyio.create(str(path), spec) as f:
        f.bin.update({segyio.BinField.Interval: us, segyio.BinField.Samples: data.shape[0],
                      segyio.BinField.Traces: data.shape[1], segyio.BinField.SortingCode: 1,
                      segyio.BinField.MeasurementSystem: 1, segyio.BinField.Format: 5})
        for i in range(data.shape[1]):
            f.header[i] = {
                segyio.TraceField.TRACE_SEQUENCE_LINE: i + 1,
                segyio.TraceField.TRACE_SEQUENCE_FILE: i + 1,
                segyio.TraceField.FieldRecord: field_record,
                segyio.TraceField.TraceNumber: i + 1,
                segyio.TraceField.EnergySourcePoint: field_record,
                segyio.TraceField.TraceIdentificationCode: 1,
                segyio.TraceField.offset: int(round(math.copysign(
                    math.hypot(gx[i] - sx, gy[i] - sy), gx[i] - sx))),
                segyio.TraceField.ElevationScalar: COORDINATE_SCALAR,
                segyio.TraceField.ReceiverGroupElevation: int(round(-gz[i] * c)),
                segyio.TraceField.SourceDepth: int(round(sz * c)),
                segyio.TraceField.SourceGroupScalar: COORDINATE_SCALAR,
                segyio.TraceField.SourceX: int(round(sx * c)),
                segyio.TraceField.SourceY: int(round(sy * c)),
                segyio.TraceField.GroupX: int(round(gx[i] * c)),
                segyio.TraceField.GroupY: int(round(gy[i] * c)),
                segyio.TraceField.CoordinateUnits: 1,
                segyio.TraceField.CDP_X: int(round((sx + gx[i]) / 2 * c)),
                segyio.TraceField.CDP_Y: int(round((sy + gy[i]) / 2 * c)),
                segyio.TraceField.TRACE_SAMPLE_COUNT: data.shape[0],
                segyio.TraceField.TRACE_SAMPLE_INTERVAL: us}
            f.trace[i] = np.ascontiguousarray(data[:, i], dtype=np.float32)


def read_gather(path, dim: int | None = None, step: float | None = None) -> Gather:
    """The shot gather in SEG-Y file ``path``: its traces, samples, source and receivers.
    ``dim``: 2 or 3 (default: 3 where a source or receiver y is not 0, else 2); ``step``: the
    run's time step (ms), which the gather's sample interval must equal (``Gather.resample``
    makes it so)."""
    segyio = _segyio()
    with _open(path, segyio) as f:
        records = np.unique(_header(f, segyio, "FieldRecord"))
        if len(records) > 1:
            raise SegyError(f"{path} holds {len(records)} shots (field records "
                            f"{records[0]} .. {records[-1]}); read_gather reads one shot's "
                            "gather: split the file by field record")
        scal = _header(f, segyio, "SourceGroupScalar")
        escal = _header(f, segyio, "ElevationScalar")
        sx, sy = (_scaled(_header(f, segyio, n), scal) for n in ("SourceX", "SourceY"))
        gx, gy = (_scaled(_header(f, segyio, n), scal) for n in ("GroupX", "GroupY"))
        sz = _scaled(_header(f, segyio, "SourceDepth"), escal)
        gz = -_scaled(_header(f, segyio, "ReceiverGroupElevation"), escal)
        us = int(f.header[0][segyio.TraceField.TRACE_SAMPLE_INTERVAL]) or \
            int(f.bin[segyio.BinField.Interval])
        delay = int(f.header[0][segyio.TraceField.DelayRecordingTime])
        data = np.asarray(f.trace.raw[:], dtype=np.float32).T.copy()
    if us <= 0:
        raise SegyError(f"{path}: the headers give no sample interval (bytes 117 and 3217)")
    sources = np.unique(np.stack([sx, sy, sz]), axis=1).shape[1]
    if sources > 1:
        raise SegyError(f"{path}: the traces name {sources} source positions; a shot gather "
                        "has one")
    dim = (3 if (sy.any() or gy.any()) else 2) if dim is None else int(dim)
    if dim not in (2, 3):
        raise SegyError(f"read_gather: dim={dim}: give 2 or 3")
    cols = (lambda x, y, z: np.stack([x, y, z] if dim == 3 else [x, z], axis=1))
    nt = data.shape[0]
    time = TimeAxis(start=float(delay), stop=delay + (nt - 1) * us / 1000.0, step=us / 1000.0,
                    num=nt)
    if step is not None and not math.isclose(time.step, step, rel_tol=TOLERANCE):
        raise SegyError(f"{path}: the gather's samples are {time.step:g} ms apart, the run "
                        f"steps {step:g} ms: resample it to the run's step "
                        f"(read_gather(path).resample({step:g}, num=nt)) or run at its interval")
    return Gather(data=data, time=time, src_coordinates=cols(sx, sy, sz)[:1],
                  rec_coordinates=cols(gx, gy, gz), field_record=int(records[0]))
