"""stencilgen/seismic: wavelet, models, the sponge, the time step, geometry; the shot demo.

The sponge acceptance (issue 3): in 2D, with a source and a receiver near one edge of a
homogeneous model, the reflection from that edge must be at least 20 dB below the direct
arrival with the absorbing layer, and (the control) much stronger without it.
"""
from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from stencilgen import seismic  # noqa: E402
from stencilgen.seismic import (Model, homogeneous_model, layered_model, layered_velocity,  # noqa: E402
                           make_shot, receiver_line, ricker, source_at, time_axis)

DEMO = ROOT / "demos" / "acoustic" / "run.py"


# -- wavelet and time axis --------------------------------------------------------------------

@pytest.mark.parametrize("f0", [0.010, 0.025])
def test_ricker_peaks_at_one_over_f0_and_has_zero_mean(f0):
    dt = 0.01 / f0 / 10                                  # 1000 samples per period
    t = np.arange(0, 4 / f0, dt)
    r = ricker(f0, t)
    assert t[np.argmax(r)] == pytest.approx(1 / f0, abs=dt)
    assert r.max() == pytest.approx(1.0, abs=1e-6)
    assert abs(r[0]) < 2e-3                              # starts (nearly) at rest
    # the zero crossings of (1 - 2a) e^-a, a = (pi f0 (t - t0))^2, at t0 +- 1/(pi f0 sqrt 2)
    assert ricker(f0, [1 / f0 + 1 / (math.pi * f0 * math.sqrt(2))])[0] == pytest.approx(0, abs=1e-12)
    assert abs(np.sum(r) * dt) < 1e-3 * np.sum(np.abs(r)) * dt
    assert ricker(f0, t, amplitude=3.0) == pytest.approx(3 * r)


def test_ricker_rejects_nonpositive_frequency():
    with pytest.raises(ValueError, match="f0"):
        ricker(0.0, [0.0])


def test_time_axis():
    ta = time_axis(0.0, 100.0, 0.3)
    assert ta.num == 335 and ta.stop == pytest.approx(334 * 0.3) and ta.stop >= 100.0
    np.testing.assert_allclose(np.diff(ta.values), 0.3)
    exact = time_axis(0.0, 100.0, 0.5)                   # round-off does not add a sample
    assert exact.num == 201 and exact.values[-1] == pytest.approx(100.0)
    with pytest.raises(ValueError):
        time_axis(0.0, 10.0, 0.0)


# -- models -----------------------------------------------------------------------------------

def test_layered_velocity_puts_interfaces_at_their_depth():
    v = layered_velocity((5, 11), 10.0, (1.5, 2.5, 3.5), interfaces=(30.0, 72.0))
    col = v[2]
    assert np.all(v == col)                              # horizontal layers
    assert np.all(col[:3] == 1.5) and np.all(col[4:7] == 2.5) and np.all(col[8:] == 3.5)
    # cells cut by an interface average m = 1/v^2: z = 30 half and half, z = 70 (cell 65..75)
    assert col[3] == pytest.approx((0.5 / 1.5 ** 2 + 0.5 / 2.5 ** 2) ** -0.5)
    assert col[7] == pytest.approx((0.7 / 2.5 ** 2 + 0.3 / 3.5 ** 2) ** -0.5)
    default = layered_velocity((4, 31), 10.0)            # evenly: interfaces at 100 and 200 m
    assert default[0, 5] == 1.5 and default[0, 15] == 2.5 and default[0, 25] == 3.5
    model = layered_model((4, 31), 10.0, nbl=3)
    assert model.layers == ((1.5, 2.5, 3.5), (100.0, 200.0))
    assert homogeneous_model((4, 31), 10.0, 2.0, nbl=3).layers == ((2.0,), ())
    assert Model(vp=np.ones((4, 4)), spacing=1.0, nbl=0).layers is None


def test_model_grid_is_padded_and_origin_shifted():
    model = layered_model((30, 20), 10.0, nbl=7, space_order=4)
    assert model.grid.shape == (44, 34)
    assert model.grid.origin == (-70.0, -70.0)
    assert model.grid.spacing == pytest.approx((10.0, 10.0))
    assert model.extent == (290.0, 190.0)
    vp = model.physical(model.vp)
    assert vp.shape == (30, 20)
    np.testing.assert_allclose(model.physical(model.m.data), 1 / vp ** 2, rtol=1e-6)
    np.testing.assert_allclose(model.vp[:7, 10], model.vp[7, 10])       # edge-padded
    assert isinstance(model, Model) and "critical_dt" in repr(model)


def test_damp_is_zero_inside_and_grows_monotonically_in_the_layer():
    nbl, n = 20, (60, 50)
    model = homogeneous_model(n, 10.0, 2.0, nbl=nbl)
    damp = model.damp.data.astype(np.float64)
    assert np.all(model.physical(damp) == 0)
    layer = np.ones(damp.shape, bool)
    layer[model.interior] = False
    assert np.all(damp[layer] > 0)
    cx, cz = damp.shape[0] // 2, damp.shape[1] // 2
    for line in (damp[:nbl + 1, cz][::-1], damp[-nbl - 1:, cz], damp[cx, :nbl + 1][::-1],
                 damp[cx, -nbl - 1:]):
        assert line[0] == 0 and np.all(np.diff(line) > 0)   # from the domain to the grid edge
    assert damp[0, 0] == pytest.approx(damp[0, cz] + damp[cx, 0])   # corners add up
    # amplitude decays by damp * v / 2 per metre: there and back, exp(-int damp v dx) = R
    # (1e-3 by default; the Riemann sum over the nodes adds ramp(1) / nbl)
    exponent = 2 * np.sum(damp[:nbl, cz] * 2.0 / 2) * 10.0
    assert exponent == pytest.approx(math.log(1e3) * (1 + 1 / nbl), rel=1e-3)


def test_damp_scales_with_slowness_and_vanishes_without_layer():
    fast = homogeneous_model((30, 30), 10.0, 3.0, nbl=10).damp.data
    slow = homogeneous_model((30, 30), 10.0, 1.5, nbl=10).damp.data
    np.testing.assert_allclose(2 * fast, slow, rtol=1e-6)
    assert np.all(homogeneous_model((30, 30), 10.0, 1.5, nbl=0).damp.data == 0)


def test_stability_limit_formula():
    # space order 2: S = 1 + 2 + 1 = 4; dt = 2 / (v sqrt(ndim S / h^2))
    assert seismic.laplacian_weight_sum(2) == pytest.approx(4.0)
    assert seismic.stability_limit((10.0, 10.0), 2.0, 2) == pytest.approx(1 / math.sqrt(0.08))
    s8 = 205 / 72 + 2 * (8 / 5 + 1 / 5 + 8 / 315 + 1 / 560)
    assert seismic.laplacian_weight_sum(8) == pytest.approx(s8)
    # S is the largest eigenvalue of the periodic -d2/dx2 stencil (h = 1)
    p, n = 4, 64
    w = [float(c) for c in seismic.model.fornberg_weights(list(range(-p, p + 1)), 0, 2)]
    col = np.zeros(n)
    for k, wk in zip(range(-p, p + 1), w):
        col[k % n] += wk
    eig = np.fft.fft(col).real
    assert -eig.min() == pytest.approx(s8)
    model = layered_model((20, 20), (10.0, 5.0), nbl=5, space_order=8)
    assert model.critical_dt == pytest.approx(
        seismic.SAFETY * 2 / (3.5 * math.sqrt(s8 / 100 + s8 / 25)))


# -- time step: stable at critical_dt, unstable above the limit -------------------------------

@pytest.fixture(scope="module")
def stability_setup():
    model = layered_model((81, 81), 10.0, nbl=10, space_order=8)
    nt = 401
    ta = time_axis(0.0, (nt - 1) * model.critical_dt, model.critical_dt)
    shot = make_shot(model, ta, 0.015, source_at(model), receiver_line(model, 11))
    op, u = seismic.acoustic_operator(model, shot, backend="c", name="Stability")
    return model, shot, op, u


def _max_after(setup, dt, steps=400):
    model, shot, op, u = setup
    u.data[:] = 0
    with np.errstate(all="ignore"):
        op.apply(time_m=0, time_M=steps - 1, dt=dt)
        field = u.data[steps % 3].astype(np.float64)
        return float(np.max(np.abs(field))) if np.all(np.isfinite(field)) else math.inf


def test_critical_dt_is_stable_and_one_and_a_half_times_it_is_not(stability_setup):
    model = stability_setup[0]
    stable = _max_after(stability_setup, model.critical_dt)
    assert 0 < stable < 10.0                      # the shot's amplitude (~2), bounded
    assert _max_after(stability_setup, 1.5 * model.critical_dt) > 1e6 * stable


def test_the_derived_limit_is_sharp(stability_setup):
    """Just below the von Neumann limit it stays bounded, just above it blows up."""
    model = stability_setup[0]
    limit = model.stability_limit
    below = _max_after(stability_setup, 0.98 * limit)
    assert 0 < below < 10.0
    assert _max_after(stability_setup, 1.05 * limit) > 1e6 * below


# -- the sponge acceptance ----------------------------------------------------------------------

SPONGE = dict(n=200, h=5.0, v=1.5, f0=0.03, xs=200.0, xr=80.0)


def _edge_test(nbl: int):
    """Direct and left-edge-reflected amplitudes at a receiver between the source and the edge.

    Source at x = xs, receiver at x = xr, same depth (the centre); the edge is x = 0 (the
    physical domain's; the grid ends there when nbl = 0). Direct path xs - xr, edge path (via
    the image source at -xs) xs + xr; each amplitude is max |trace| in a window around its
    arrival (peak delay 1/f0 included); the windows do not overlap.
    """
    c = SPONGE
    model = homogeneous_model((c["n"], c["n"]), c["h"], c["v"], nbl=nbl, space_order=8)
    z = (c["n"] - 1) * c["h"] / 2
    d_direct, d_edge = c["xs"] - c["xr"], c["xs"] + c["xr"]
    t_direct = 1 / c["f0"] + d_direct / c["v"]
    t_edge = 1 / c["f0"] + d_edge / c["v"]
    before, after = 0.8 / c["f0"], 1.2 / c["f0"]
    assert t_direct + after < t_edge - before             # the windows are separate
    # the next arrivals (top and bottom edges) come after the edge window
    assert 1 / c["f0"] + math.hypot(d_direct, 2 * z) / c["v"] - before > t_edge + after
    ta = time_axis(0.0, t_edge + after, model.critical_dt)
    shot = make_shot(model, ta, c["f0"], [[c["xs"], z]], [[c["xr"], z]])
    op, u = seismic.acoustic_operator(model, shot, backend="c", name="Sponge")
    op.apply(time_m=0, time_M=ta.num - 1, dt=ta.step)
    trace, t = shot.rec.data[:, 0].astype(np.float64), ta.values

    def amplitude(t_arrival):
        window = (t > t_arrival - before) & (t < t_arrival + after)
        return float(np.max(np.abs(trace[window])))

    return amplitude(t_direct), amplitude(t_edge)


def _db(direct, reflection):
    return 20 * math.log10(direct / reflection)


@pytest.fixture(scope="module")
def no_sponge():
    return _edge_test(nbl=0)


def test_sponge_reflection_is_20_db_below_the_direct_arrival(no_sponge):
    direct, reflection = _edge_test(nbl=40)
    db = _db(direct, reflection)
    print(f"with the sponge (nbl=40): direct {direct:.4g}, edge {reflection:.4g}: {db:.1f} dB")
    assert db >= 20.0
    assert direct == pytest.approx(no_sponge[0], rel=1e-3)     # the sponge leaves it alone


def test_control_without_sponge_the_edge_reflects_strongly(no_sponge):
    direct, reflection = no_sponge
    db = _db(direct, reflection)
    print(f"without the sponge (nbl=0): direct {direct:.4g}, edge {reflection:.4g}: {db:.1f} dB")
    assert db < 10.0


# -- reflections where the model puts them ----------------------------------------------------

def test_interface_reflection_has_the_right_time_and_coefficient():
    """Zero-offset reflection from one interface = R x the direct wave of the image source.

    The reflection is the difference between the layered and the homogeneous record at the
    source; it must match, in time (to one step) and amplitude, R = (v2 - v1)/(v2 + v1) times
    the homogeneous record at the image point, 2 (d - zs) below the source.
    """
    h, shape, f0, zs, d, xs = 10.0, (161, 141), 0.012, 300.0, 600.0, 800.0
    v1, v2 = 1.5, 2.5
    layered = layered_model(shape, h, velocities=(v1, v2), interfaces=(d,), nbl=40)
    homogeneous = homogeneous_model(shape, h, v1, nbl=40)
    dt = layered.critical_dt
    ta = time_axis(0.0, 1 / f0 + 2 * (d - zs) / v1 + 2.5 / f0, dt)
    records = {}
    for name, model in (("layered", layered), ("homogeneous", homogeneous)):
        shot = make_shot(model, ta, f0, [[xs, zs]], [[xs, zs], [xs, zs + 2 * (d - zs)]])
        op, _ = seismic.acoustic_operator(model, shot, backend="c", name="Reflection")
        op.apply(time_m=0, time_M=ta.num - 1, dt=dt)
        records[name] = shot.rec.data.astype(np.float64)
    reflected = records["layered"][:, 0] - records["homogeneous"][:, 0]
    image = records["homogeneous"][:, 1]
    lag = np.argmax(np.correlate(reflected, image, "full")) - (ta.num - 1)
    assert abs(lag) <= 1                       # half a cell off (3.3 ms) would be 2+ steps
    ratio = np.dot(reflected, image) / np.dot(image, image)
    assert ratio == pytest.approx((v2 - v1) / (v2 + v1), rel=0.15)


def test_reflection_traveltimes():
    x = np.array([0.0, 100.0, 400.0])
    t = seismic.reflection_times(x, 0, [500.0], [2.0, 3.0], 20.0, 40.0)
    np.testing.assert_allclose(t, np.hypot(x, 500 - 20 + 500 - 40) / 2.0, rtol=1e-6)
    t0 = seismic.reflection_times([0.0], 1, [300.0, 700.0], [1.5, 2.5, 3.5], 0.0, 0.0)
    assert t0[0] == pytest.approx(2 * (300 / 1.5 + 400 / 2.5))
    far = seismic.reflection_times([1e6], 1, [300.0, 700.0], [1.5, 2.5, 3.5], 0.0, 0.0)
    assert np.isnan(far[0])                    # beyond the critical offset: no primary ray
    assert seismic.direct_times([30.0], 1.5, 40.0)[0] == pytest.approx(50 / 1.5)


# -- geometry -----------------------------------------------------------------------------------

def test_receiver_line_and_source_in_the_physical_domain():
    model = layered_model((51, 41), 10.0, nbl=10)
    rec = receiver_line(model, 11, depth=30.0)
    assert rec.shape == (11, 2)
    np.testing.assert_allclose(rec[:, 0], np.linspace(0, 500, 11))
    assert np.all(rec[:, 1] == 30.0)
    assert np.all(receiver_line(model, 3)[:, 1] == 20.0)      # default: two spacings deep
    np.testing.assert_allclose(source_at(model), [[250.0, 20.0]])
    np.testing.assert_allclose(source_at(model, (10.0, 390.0)), [[10.0, 390.0]])
    with pytest.raises(ValueError, match="point 0 .* outside"):
        source_at(model, (-50.0, 10.0))                        # in the sponge, not the model
    with pytest.raises(ValueError, match="outside"):
        receiver_line(model, 5, depth=401.0)
    with pytest.raises(ValueError, match="non-finite"):
        source_at(model, (np.nan, 10.0))
    model3 = layered_model((21, 11, 16), 10.0, nbl=4)
    rec3 = receiver_line(model3, 5)
    assert rec3.shape == (5, 3) and np.all(rec3[:, 1] == 50.0) and np.all(rec3[:, 2] == 20.0)
    np.testing.assert_allclose(source_at(model3), [[100.0, 50.0, 20.0]])
    # a plain Grid: the whole grid is the domain
    np.testing.assert_allclose(receiver_line(model3.grid, 2)[:, 0], [-40.0, 240.0])


def test_make_shot_fills_the_source_with_a_ricker():
    model = homogeneous_model((21, 21), 10.0, 1.5, nbl=4)
    ta = time_axis(0, 200, 1.0)
    shot = make_shot(model, ta, 0.01, source_at(model), receiver_line(model, 7))
    assert shot.src.data.shape == (201, 1) and shot.rec.data.shape == (201, 7)
    np.testing.assert_allclose(shot.src.data[:, 0], ricker(0.01, ta.values), atol=1e-7)
    assert shot.nt == 201 and shot.f0 == 0.01


# -- chunked runs: same answer, one summed report -------------------------------------------------

def test_run_chunked_equals_one_apply_and_sums_the_summaries():
    model = layered_model((41, 31), 10.0, nbl=8)
    ta = time_axis(0, 300 * model.critical_dt, model.critical_dt)
    shot = make_shot(model, ta, 0.015, source_at(model), receiver_line(model, 9))
    op, u = seismic.acoustic_operator(model, shot, backend="c", name="Chunks")
    whole = op.apply(time_m=0, time_M=ta.num - 1, dt=ta.step)
    ref_rec, ref_u = shot.rec.data.copy(), u.data.copy()
    u.data[:] = 0
    shot.rec.data[:] = 0
    seen, next_steps = [], []
    summary = seismic.run_chunked(op, 0, ta.num - 1, ta.step, chunks=4,
                                  progress=lambda *a: seen.append(a),
                                  on_chunk=next_steps.append, split_at=(100,))
    np.testing.assert_array_equal(shot.rec.data, ref_rec)
    np.testing.assert_array_equal(u.data, ref_u)
    assert [a[0] for a in seen][-1] == ta.num and 100 in next_steps and len(seen) == 5
    assert summary.timesteps == whole.timesteps == ta.num
    assert summary.globals.points == pytest.approx(whole.globals.points)
    # the time loop's sections add up exactly; the sections before it (hoisted invariants)
    # run once per apply, so once per chunk
    chunks = len(seen)
    for k in op.program.kernels:
        repeat = 1 if k.stage == "time" else chunks
        assert summary[k.name].points == pytest.approx(repeat * whole[k.name].points)
        assert summary[k.name].flops == pytest.approx(repeat * whole[k.name].flops)


# -- the demo -------------------------------------------------------------------------------------

def _load_demo():
    spec = importlib.util.spec_from_file_location("stencilgen_demo_acoustic_shot", DEMO)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


demo = _load_demo()
SMALL = ["-d", "41", "31", "--nbl", "10", "-so", "4", "--nrec", "21"]


@pytest.fixture
def perf_logging(monkeypatch):
    import stencilgen
    monkeypatch.delenv("STENCILGEN_LOGGING", raising=False)
    level = stencilgen.configuration["log-level"]
    yield
    stencilgen.configuration["log-level"] = level


def test_demo_shot_writes_pictures_and_one_report(tmp_path, capsys, perf_logging):
    pytest.importorskip("matplotlib")
    outdir = tmp_path / "pictures"
    assert demo.main(SMALL + ["--outdir", str(outdir), "--f0", "0.02"]) == 0
    out = capsys.readouterr().out
    for name in ("shot_record.png", "wavefield_snapshot.png"):
        data = (outdir / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
        assert f"Wrote {outdir / name}" in out
    assert "Shot: Ricker wavelet, f0 = 20 Hz" in out and "21 receivers" in out
    progress = re.findall(r"^\[\s*\d+%\] step (\d+)/(\d+)", out, re.M)
    assert len(progress) >= 2 and progress[-1][0] == progress[-1][1]
    assert len(re.findall(r"^Global performance: ", out, re.M)) == 1    # summed, printed once
    assert re.search(r"^Final wavefield .* finite: yes$", out, re.M)


def test_demo_without_matplotlib_says_how_to_get_it(tmp_path, capsys, monkeypatch, perf_logging):
    monkeypatch.setitem(sys.modules, "matplotlib", None)       # import matplotlib -> ImportError
    assert demo.main(SMALL + ["-nt", "20", "--outdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "install matplotlib (pip install 'stencilgen[plot]') to get the pictures" in out
    assert not list(tmp_path.glob("*.png"))
    assert "Global performance" in out


def test_demo_no_plot(tmp_path, capsys, perf_logging):
    assert demo.main(SMALL + ["-nt", "20", "--outdir", str(tmp_path), "--no-plot"]) == 0
    assert "--no-plot: no pictures written" in capsys.readouterr().out
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize("argv, message", [
    (["--nbl", "-1"], "must be at least 0"),
    (["--f0", "0"], "positive frequency in kHz"),
    (["--nrec", "0"], "must be at least 1"),
    (["--clip", "0"], "percentile"),
])
def test_demo_bad_new_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        demo.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_demo_default_duration_reaches_the_deepest_reflection():
    model = demo.make_shot_model((41, 61), nbl=5)             # interfaces at 200 and 400 m
    shot, _, _ = demo.build_shot(model, f0=0.01)
    deepest = 1 / 0.01 + 2 * (180 / 1.5 + 200 / 2.5)           # source and receivers at 20 m
    assert shot.time.stop > deepest + 1 / 0.01
    curves = dict((label, t) for label, _, t in demo.expected_arrivals(model, shot))
    assert min(curves["reflection, interface at 400 m"]) == pytest.approx(deepest, rel=1e-3)
