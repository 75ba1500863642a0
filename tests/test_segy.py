"""stencilgen.seismic.segy: models and gathers through SEG-Y files that segyio writes and
reads, a shot on a model read from SEG-Y against the same shot in memory, and the bad inputs
each with our error."""
import sys

import numpy as np
import pytest

segyio = pytest.importorskip("segyio", reason="SEG-Y needs segyio: pip install '.[segy]'")

from stencilgen import seismic  # noqa: E402
from stencilgen.seismic import segy  # noqa: E402
from stencilgen.seismic.segy import SegyError  # noqa: E402

TF, BF = segyio.TraceField, segyio.BinField


def _raw_file(path, traces, interval, headers, binary=None):
    """A SEG-Y file written with segyio itself: ``traces`` (n, ns), per-trace header dicts."""
    spec = segyio.spec()
    spec.format, spec.samples, spec.tracecount = 5, list(range(traces.shape[1])), len(traces)
    with segyio.create(str(path), spec) as f:
        f.bin.update({BF.Interval: interval, BF.Samples: traces.shape[1], **(binary or {})})
        for i, tr in enumerate(traces):
            f.header[i] = headers(i)
            f.trace[i] = tr.astype(np.float32)
    return path


def test_a_2d_model_round_trip(tmp_path):
    vp = np.full((30, 20), 1.5)
    vp[:, 8:] = 2.5
    vp[10:14, 12:] = 3.25
    path = segy.write_model(tmp_path / "m.sgy", vp, (12.5, 5.0), origin=(100.0, 20.0))
    got = segy.read_model(path)
    assert got.shape == (30, 20) and np.array_equal(got.vp, vp)   # m/s, exact in float32
    assert got.spacing == (12.5, 5.0) and got.origin == (100.0, 20.0) and got.unit == "m/s"
    assert got.said == {"spacing x": "headers", "origin x": "headers",
                        "spacing z": "headers", "origin z": "headers"}
    with segyio.open(str(path), ignore_geometry=True) as f:   # the headers as segyio reads them
        assert f.bin[BF.Interval] == 5000 and len(f.samples) == 20 and f.tracecount == 30
        assert f.header[3][TF.CDP_X] == (100 + 3 * 12.5) * 100
        assert f.header[3][TF.SourceGroupScalar] == -100


def test_a_3d_model_round_trip_and_x_along_the_crosslines(tmp_path):
    rng = np.random.default_rng(3)
    vp = rng.uniform(1.5, 4.5, (6, 5, 7))
    path = segy.write_model(tmp_path / "m3.sgy", vp, (10.0, 12.5, 4.0), origin=(0, 50, 8),
                            unit="km/s")
    got = segy.read_model(path)
    assert got.shape == vp.shape and got.unit == "km/s"
    assert np.abs(got.vp - vp).max() <= 4.5 * 2 ** -23
    assert got.spacing == (10.0, 12.5, 4.0) and got.origin == (0.0, 50.0, 8.0)
    # the same model with x along the crosslines: inline numbers walk y
    nx, ny, nz = vp.shape

    def headers(i):
        iy, ix = divmod(i, nx)
        return {TF.INLINE_3D: iy + 1, TF.CROSSLINE_3D: ix + 1, TF.SourceGroupScalar: -10,
                TF.CDP_X: int(ix * 10.0 * 10), TF.CDP_Y: int((50 + iy * 12.5) * 10),
                TF.DelayRecordingTime: 8}
    traces = np.stack([vp[i % nx, i // nx] * 1000 for i in range(nx * ny)])
    got = segy.read_model(_raw_file(tmp_path / "t.sgy", traces, 4000, headers))
    assert got.shape == vp.shape and np.abs(got.vp - vp).max() <= 4.5 * 2 ** -23
    assert got.spacing == (10.0, 12.5, 4.0) and got.origin == (0.0, 50.0, 8.0)


def test_spacing_given_where_the_headers_do_not_say_it(tmp_path):
    """No coordinates and no sample interval: spacing= is required, then used; feet said in
    the binary header convert lengths."""
    vp = np.linspace(1500, 3000, 8 * 6).reshape(8, 6)
    path = _raw_file(tmp_path / "bare.sgy", vp, 0, lambda i: {TF.TRACE_SEQUENCE_LINE: i + 1})
    with pytest.raises(SegyError, match="do not say the spacing along x: give spacing="):
        segy.read_model(path)
    got = segy.read_model(path, spacing=(10.0, 5.0))
    assert got.spacing == (10.0, 5.0) and got.origin == (0.0, 0.0)
    assert got.said["spacing x"] == "given" and got.said["origin x"] == "default"
    assert np.allclose(got.vp, vp / 1000)
    feet = _raw_file(tmp_path / "ft.sgy", vp, 10000,
                     lambda i: {TF.CDP_X: 25 * i, TF.SourceGroupScalar: 1},
                     {BF.MeasurementSystem: 2})
    got = segy.read_model(feet, unit="ft/s")
    assert got.spacing == pytest.approx((25 * 0.3048, 10 * 0.3048))
    assert np.allclose(got.vp, vp * 0.3048e-3)


def test_a_shot_on_a_model_read_from_segy_equals_the_shot_in_memory(tmp_path):
    vp = np.full((41, 31), 1.5)
    vp[:, 15:] = 2.5
    segy.write_model(tmp_path / "m.sgy", vp, 10.0)

    def shot_on(model):
        time = seismic.time_axis(0, 150, model.critical_dt)
        shot = seismic.make_shot(model, time, 0.02, seismic.source_at(model),
                                 seismic.receiver_line(model, 21))
        op, u = seismic.acoustic_operator(model, shot, backend="c")
        seismic.run_shot(model, shot, op, u, progress=None)
        return shot.rec.data.copy()
    from_file = shot_on(segy.read_model(tmp_path / "m.sgy").model(nbl=10))
    in_memory = shot_on(seismic.Model(vp=vp, spacing=(10.0, 10.0), nbl=10))
    assert np.abs(from_file).max() > 0 and np.array_equal(from_file, in_memory)


def _shot(tmp_path, dim=2, dt=None):
    shape = (41, 31) if dim == 2 else (21, 17, 15)
    model = seismic.homogeneous_model(shape, 10.0, velocity=2.0, nbl=6)
    dt = model.critical_dt if dt is None else dt
    time = seismic.time_axis(0, 120, dt)
    src = seismic.source_at(model)
    rec = seismic.receiver_line(model, 13)
    if dim == 3:
        rec[:, 1] += np.arange(13) * 2.5   # a slanted line: receivers' y differ
    shot = seismic.make_shot(model, time, 0.02, src, rec)
    op, u = seismic.acoustic_operator(model, shot, backend="c")
    seismic.run_shot(model, shot, op, u, progress=None)
    return model, shot


@pytest.mark.parametrize("dim", [2, 3])
def test_a_gather_round_trip_with_its_headers(tmp_path, dim):
    """A run whose step is a whole number of microseconds: the traces as run (float32), the
    headers segyio reads as a processing package would, and read_gather's geometry."""
    model, shot = _shot(tmp_path, dim, dt=0.8 if dim == 2 else 0.5)
    path = segy.write_gather(tmp_path / "g.sgy", shot, field_record=7)
    src = shot.src.coordinates.data[0]
    rec = shot.rec.coordinates.data
    with segyio.open(str(path), ignore_geometry=True) as f:
        assert f.tracecount == 13 and len(f.samples) == shot.time.num
        assert f.bin[BF.Interval] == (800 if dim == 2 else 500) and f.bin[BF.Format] == 5
        for i in (0, 6, 12):
            h = f.header[i]
            assert h[TF.FieldRecord] == 7 and h[TF.TraceNumber] == i + 1
            assert h[TF.TRACE_SAMPLE_COUNT] == shot.time.num
            assert h[TF.TRACE_SAMPLE_INTERVAL] == f.bin[BF.Interval]
            assert h[TF.SourceGroupScalar] == -100 and h[TF.ElevationScalar] == -100
            assert h[TF.SourceX] == round(src[0] * 100) and h[TF.GroupX] == round(rec[i, 0] * 100)
            if dim == 3:
                assert h[TF.GroupY] == round(rec[i, 1] * 100)
            assert h[TF.SourceDepth] == round(src[-1] * 100)
            assert h[TF.ReceiverGroupElevation] == -round(rec[i, -1] * 100)
            horizontal = np.linalg.norm(rec[i, :-1] - src[:-1])
            assert abs(h[TF.offset]) == round(horizontal)
        assert np.array_equal(f.trace[6], shot.rec.data[:, 6])
    g = segy.read_gather(path, step=shot.time.step)
    assert g.field_record == 7 and g.time.num == shot.time.num
    assert np.array_equal(g.data, shot.rec.data)
    assert np.allclose(g.src_coordinates, src[None], atol=0.005)
    assert np.allclose(g.rec_coordinates, rec, atol=0.005)
    again = g.make_shot(model, 0.02)   # observed data of an inversion, on the same geometry
    assert np.array_equal(again.rec.data, shot.rec.data)


def test_a_gather_of_a_run_step_off_the_microsecond_is_resampled(tmp_path):
    """The run's step (1/critical_dt: not a whole microsecond) is rounded and the traces
    resampled; resampling back to the run's step gives its samples within 1e-5 of the
    largest amplitude (float32 storage and two interpolations)."""
    model, shot = _shot(tmp_path)
    step = shot.time.step
    assert abs(step * 1000 - round(step * 1000)) > 1e-3
    path = segy.write_gather(tmp_path / "g.sgy", shot)
    g = segy.read_gather(path)
    assert g.time.step == round(step * 1000) / 1000
    back = g.resample(step, num=shot.time.num)
    covered = int((g.time.num - 1) * g.time.step / step)
    err = np.abs(back.data[:covered] - shot.rec.data[:covered]).max()
    assert err <= 1e-5 * np.abs(shot.rec.data).max()
    with pytest.raises(SegyError, match=r"the interval \(ms\) 0.0005 is not a whole number of "
                                        "thousandths"):
        segy.write_gather(tmp_path / "h.sgy", shot, interval=0.0005)
    with pytest.raises(SegyError, match=r"the depth spacing \(m, written as the sample interval "
                                        r"in mm\) 0.0005 is not a whole number"):
        segy.write_model(tmp_path / "m.sgy", np.full((4, 4), 2.0), (10.0, 0.0005))


def test_resampling_a_band_limited_signal():
    t = seismic.TimeAxis(start=0.0, stop=999 * 0.37, step=0.37, num=1000)
    f = 0.02   # kHz: 25 samples a period at 2 ms
    x = np.sin(2 * np.pi * f * t.values)[:, None]
    y, axis = segy.resample(x, t, 2.0)
    expect = np.sin(2 * np.pi * f * axis.values)
    assert axis.step == 2.0 and axis.num == int(999 * 0.37 / 2) + 1
    assert np.abs(y[:, 0] - expect).max() < 1e-9   # ends included
    # from 9 samples a period: the polynomial's fit is poorer, as its error bound says
    tc = seismic.TimeAxis(start=0.0, stop=59 * 50 / 9, step=50 / 9, num=60)
    fine, ax = segy.resample(np.sin(2 * np.pi * f * tc.values), tc, 0.37)
    assert 1e-6 < np.abs(fine - np.sin(2 * np.pi * f * ax.values)).max() < 1e-2


def test_bad_inputs_get_our_errors(tmp_path):
    text = tmp_path / "notes.sgy"
    text.write_text("not a seismic file\n" * 400)
    with pytest.raises(SegyError, match="is not a SEG-Y file"):
        segy.read_model(text)
    tiny = tmp_path / "tiny.sgy"
    tiny.write_bytes(b"\0" * 100)
    with pytest.raises(SegyError, match="fewer than the 3600-byte file header"):
        segy.read_gather(tiny)
    with pytest.raises(SegyError, match="no such file"):
        segy.read_model(tmp_path / "missing.sgy")
    vp = np.full((10, 8), 2000.0)
    vp[3, 5] = 0.0
    vp[4, 1] = -1500.0
    bad = segy.write_model(tmp_path / "bad.sgy", vp / 1000, 10.0)
    with pytest.raises(SegyError, match=r"2 velocities are zero, negative or not finite \(the "
                                        r"first at index \(3, 5\)"):
        segy.read_model(bad)
    good = segy.write_model(tmp_path / "good.sgy", np.full((10, 8), 2.0), (12.5, 5.0))
    with pytest.raises(SegyError, match="the headers say dx = 12.5 m, the argument 10 m"):
        segy.read_model(good, spacing=10.0)
    assert segy.read_model(good, spacing=(12.5, 5.0)).spacing == (12.5, 5.0)   # agreeing
    _, shot = _shot(tmp_path, dt=0.8)
    path = segy.write_gather(tmp_path / "g.sgy", shot)
    with pytest.raises(SegyError, match="samples are 0.8 ms apart, the run steps 0.5 ms"):
        segy.read_gather(path, step=0.5)


def test_without_segyio_the_error_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "segyio", None)
    with pytest.raises(ImportError, match=r"pip install 'stencilgen\[segy\]'"):
        segy.read_model(tmp_path / "m.sgy")
