"""demos/acoustic/run.py: the command line, the printed report, and a wave that stays bounded."""
from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stencilgen import configuration

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demos" / "acoustic" / "run.py"

REPORT = [r"^Operator `Acoustic` ran in \d+\.\d+ s$",
          r"^Global performance: \[OI=\d+\.\d+, \d+\.\d+ GFlops/s, \d+\.\d+ GPts/s\]$",
          r"^  \* section\d+ ran in \d+\.\d+ s \[OI=\d+\.\d+, .* GPts/s\]$"]
FINAL = re.compile(r"^Final wavefield u\(t = (?P<t>\S+) ms\): max \|u\| = (?P<amp>\S+), "
                   r"finite: (?P<finite>yes|NO)$", re.M)
DT = re.compile(r"^dt = (?P<dt>\S+) ms \(CFL", re.M)


def _shot_dt(ndim: int, h: float = 10.0, vmax: float = 3.5) -> float:
    """The shot's time step at space order 8: 0.8 x the leapfrog limit 2/(vmax sqrt(ndim S/h^2)),
    S = sum|w| of the 8th-order second-derivative stencil (v_max = 3.5 km/s, the bottom layer)."""
    s = 205 / 72 + 2 * (8 / 5 + 1 / 5 + 8 / 315 + 1 / 560)
    return 0.8 * 2 / (vmax * math.sqrt(ndim * s / h ** 2))


def _load_demo():
    spec = importlib.util.spec_from_file_location("stencilgen_demo_acoustic", DEMO)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


demo = _load_demo()


@pytest.fixture(autouse=True)
def isolated_config(tmp_path, monkeypatch, restore_settings):
    """A private cache and working directory (the demo writes its PNGs there) per test; the
    settings the demo or the test change are put back."""
    monkeypatch.chdir(tmp_path)
    configuration["cache-dir"] = str(tmp_path / "cache")
    configuration["jit-backdoor"] = False
    return tmp_path / "cache"


def _assert_report(text: str):
    for pattern in REPORT:
        assert re.search(pattern, text, re.M), f"no line matching {pattern!r} in:\n{text}"
    assert "GPts/s" in text


def _final(text: str):
    match = FINAL.search(text)
    assert match, f"no final amplitude line in:\n{text}"
    return float(match["amp"]), match["finite"] == "yes"


def _run_script(args, cache_dir, **env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STENCILGEN_")}
    env.update(STENCILGEN_CACHE_DIR=str(cache_dir), OMP_NUM_THREADS="2", **env_extra)
    done = subprocess.run([sys.executable, str(DEMO), *args], cwd=cache_dir.parent, env=env,
                          capture_output=True, text=True, timeout=120)
    return done


# -- the script as a user runs it -------------------------------------------------------------

def test_script_prints_report_and_finite_amplitude(isolated_config):
    done = _run_script(["-d", "24", "24", "24", "-nt", "10"], isolated_config)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    _assert_report(out)
    assert re.search(r"^Operator `Acoustic` jit-compiled `.*Acoustic\.c` in \S+ s with `GCC`$",
                     out, re.M), out
    dt = float(DT.search(out)["dt"])
    assert dt == pytest.approx(_shot_dt(3), rel=1e-5)
    amplitude, finite = _final(out)
    assert finite and 0 < amplitude <= 1.0


def test_script_respects_user_log_level(isolated_config):
    """With STENCILGEN_LOGGING set by the user, the script does not raise it to PERF."""
    done = _run_script(["-d", "16", "16", "-tn", "3"], isolated_config,
                       STENCILGEN_LOGGING="WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Global performance" not in done.stdout and "jit-compiled" not in done.stdout
    assert _final(done.stdout)[1]


@pytest.mark.parametrize("argv, message", [
    (["-d", "10"], "expected 2 values (2D) or 3 values (3D), got 1"),
    (["-d", "10", "10", "10", "10"], "expected 2 values (2D) or 3 values (3D), got 4"),
    (["-d", "-4", "10", "10"], "-4 grid points: each dimension needs at least 2"),
    (["-d", "1", "10"], "1 grid points: each dimension needs at least 2"),
    (["-d", "ten", "10"], "'ten' is not an integer"),
    (["-nt", "0"], "0 must be at least 1"),
    (["-so", "7"], "use an even number from 2 to 32"),
    (["--dtype", "float16"], "invalid choice"),
    (["--storage", "float8"], "invalid choice"),
    (["--compensated"], "give --storage float16 or --storage bfloat16 too"),
    (["--storage", "float16", "--dtype", "float64"],
     "float16 storage computes in float32; leave --dtype float64 out"),
])
def test_bad_arguments_are_argparse_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        demo.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and message in err


def test_tn_is_a_synonym_of_nt():
    assert demo.parse_args(["-tn", "7"]).nt == demo.parse_args(["-nt", "7"]).nt == 7
    assert demo.parse_args([]).shape == [64, 64, 64]


# -- main() in-process ------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [("24", "24", "24"), ("30", "26")])
def test_main_in_process(shape, capsys, stencilgen_log, monkeypatch):
    monkeypatch.delenv("STENCILGEN_LOGGING", raising=False)
    assert demo.main(["-d", *shape, "-nt", "10"]) == 0
    # print() output goes to capsys; the stencilgen logger writes to the stdout it saw when it was
    # imported, so its lines are read from a handler (see test_capsys_sees_the_report below).
    out = capsys.readouterr().out
    log = "\n".join(stencilgen_log.lines)
    _assert_report(log)
    assert f"Acoustic {len(shape)}D" in out
    dt = float(DT.search(out)["dt"])
    assert dt == pytest.approx(_shot_dt(len(shape)), rel=1e-5)
    amplitude, finite = _final(out)
    assert finite and 0 < amplitude <= 1.0


STORAGE = re.compile(r"^Storage (?P<fmt>\w+)(?P<comp>, compensated)?(?: \(u stored in units of "
                     r"2\*\*(?P<exp>-?\d+)\))?: (?P<bytes>\S+) bytes per grid point per time "
                     r"step", re.M)


def test_storage_flag_is_reported_and_halves_the_bytes(capsys):
    """--storage float16 stores u, m and damp in 16 bits: the header and the storage line name
    it with u's scale, the run stays close to float32's (max |u| within 1 %), and the bytes per
    point the summary counts (u at three times, m, damp: 20 in float32; plus the sparse
    kernels' share) drop by 10, the companion (u's roundings at three times) adding 6."""
    found = {}
    for argv in ([], ["--storage", "float16"], ["--storage", "float16", "--compensated"]):
        assert demo.main(["-d", "30", "26", "-nt", "60", "--nbl", "6", "--no-plot",
                          "--backend", "c", *argv]) == 0
        out = capsys.readouterr().out
        line = STORAGE.search(out)
        assert line, out
        amplitude, finite = _final(out)
        assert finite
        found[" ".join(argv)] = (line, amplitude, out)
    line, reference, out = found[""]
    assert line["fmt"] == "float32" and line["exp"] is None and not line["comp"]
    assert "space order 8, float32" in out
    float32 = float(line["bytes"])
    assert 20 < float32 < 21
    for argv, label, saved in (("--storage float16", "storage float16,", 10),
                               ("--storage float16 --compensated",
                                "storage float16 (compensated),", 4)):
        line, amplitude, out = found[argv]
        assert line["fmt"] == "float16" and bool(line["comp"]) == ("compensated" in argv)
        assert f"space order 8, {label} float32 arithmetic" in out
        assert line["exp"] is not None and f"u stored in units of 2**{line['exp']}" in out
        assert float(line["bytes"]) == pytest.approx(float32 - saved, abs=0.25)
        assert amplitude == pytest.approx(reference, rel=1e-2)


def test_capsys_sees_the_report(capsys, monkeypatch):
    monkeypatch.delenv("STENCILGEN_LOGGING", raising=False)
    demo.main(["-d", "12", "12", "-nt", "2"])
    _assert_report(capsys.readouterr().out)


# -- the numbers: a leapfrog wave conserves its discrete energy --------------------------------

def _laplacian(u_halo: np.ndarray, halo: int, spacing, space_order: int) -> np.ndarray:
    """The centred Laplacian of the domain, zero outside it (what the halo holds), float64."""
    p = space_order // 2
    w = [2 * (-1) ** (k + 1) * math.factorial(p) ** 2 /
         (k * k * math.factorial(p - k) * math.factorial(p + k)) for k in range(1, p + 1)]
    w0 = -2 * sum(w)
    u_halo = u_halo.astype(np.float64)
    ndim = u_halo.ndim
    inner = tuple(slice(halo, -halo) for _ in range(ndim))
    out = np.zeros(u_halo[inner].shape)
    for axis, h in enumerate(spacing):
        acc = w0 * u_halo[inner]
        for k, wk in enumerate(w, start=1):
            for s in (k, -k):
                idx = list(inner)
                idx[axis] = slice(halo + s, u_halo.shape[axis] - halo + s)
                acc = acc + wk * u_halo[tuple(idx)]
        out += acc / h ** 2
    return out


def _energy(model, u, n: int, space_order: int) -> float:
    """E(n+1/2) = sum m ((u[n+1]-u[n])/dt)^2 - sum u[n+1] L u[n], constant for the leapfrog scheme."""
    halo = u.halo[1][0]
    new, old = u.data[(n + 1) % 3].astype(np.float64), u.data[n % 3].astype(np.float64)
    m = model.m.data.astype(np.float64)
    lap_old = _laplacian(u.data_with_halo[n % 3], halo, model.spacing, space_order)
    return float(np.sum(m * ((new - old) / model.dt) ** 2) - np.sum(new * lap_old))


@pytest.mark.parametrize("shape, dtype, rtol", [((41, 37), np.float64, 1e-12),
                                                ((20, 22, 18), np.float32, 1e-4)])
def test_energy_is_conserved_and_amplitude_bounded(shape, dtype, rtol):
    so = 8
    model = demo.make_model(shape, dtype=dtype, space_order=so)
    op, u = demo.build_operator(model, space_order=so, backend="c")
    demo.initial_condition(model, u)
    e0 = _energy(model, u, 0, so)
    assert e0 > 0
    energies, amplitudes = [], []
    time_m = 1
    for _ in range(8):                     # 8 x 25 = 200 steps, reflections from every side
        result = demo.run(model, op, u, 25, time_m=time_m)
        time_m += 25
        assert result.finite
        energies.append(_energy(model, u, time_m - 1, so))
        amplitudes.append(result.max_amplitude)
    np.testing.assert_allclose(energies, e0, rtol=rtol)
    assert max(amplitudes) <= 1.0 and min(amplitudes) > 1e-3


def test_energy_check_detects_an_unstable_time_step():
    """The control: twice the demo's Courant number exceeds the stability limit and blows up."""
    model = demo.make_model((41, 37), dtype=np.float64, space_order=8, courant=1.0)
    op, u = demo.build_operator(model, space_order=8, backend="c")
    demo.initial_condition(model, u)
    result = demo.run(model, op, u, 100)
    assert not result.finite or result.max_amplitude > 1e6


def test_sa_tti_benchmark_takes_the_storage(capsys):
    """demos/dummy_benchmark with --storage bfloat16 --compensated: P, M and the medium in 16
    bits, named in the report, max |P| within 1 % of float32's after 30 steps, fewer bytes."""
    spec = importlib.util.spec_from_file_location(
        "stencilgen_demo_sa_tti", ROOT / "demos" / "dummy_benchmark" / "run.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    peak = re.compile(r"max \|P\| = (\S+), finite: yes")
    found = {}
    for argv in ([], ["--storage", "bfloat16", "--compensated"]):
        assert bench.main(["-d", "24", "20", "22", "-tn", "30", "--backend", "c", *argv]) == 0
        out = capsys.readouterr().out
        line = STORAGE.search(out)       # P holds its data before the run: scale 1
        assert line and peak.search(out), out
        found[bool(argv)] = (float(peak.search(out)[1]), float(line["bytes"]), out)
    assert "30 time steps, storage bfloat16 (compensated), float32 arithmetic" in found[True][2]
    assert "Storage bfloat16, compensated" in found[True][2]
    assert found[True][0] == pytest.approx(found[False][0], rel=1e-2)
    assert found[True][1] < found[False][1]


def test_sa_tti_benchmark_says_when_the_gpu_is_too_small(capsys, monkeypatch):
    """A grid the GPU cannot hold: the benchmark prints the footprint message, no traceback,
    and exits 2 (the check itself raises before anything is allocated: test_cuda)."""
    from stencilgen.data.places import DeviceMemoryError
    from stencilgen.runtime.operator import Operator
    spec = importlib.util.spec_from_file_location(
        "stencilgen_demo_sa_tti_oom", ROOT / "demos" / "dummy_benchmark" / "run.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def too_small(self, *args, **kwargs):
        raise DeviceMemoryError("not enough GPU memory: the operator's arrays need 252.67 GiB")
    monkeypatch.setattr(Operator, "apply", too_small)
    assert bench.main(["-d", "16", "14", "12", "-nt", "2", "--backend", "c"]) == 2
    err = capsys.readouterr().err
    assert "Stopped before the run: not enough GPU memory" in err and "Traceback" not in err


def test_a_model_from_segy_and_the_gather_written(tmp_path, capsys):
    """--model reads the SEG-Y model (its origin and spacing, -d ignored), --gather writes
    the record: segyio reads one trace a receiver at the receivers' x, from the model's
    origin on."""
    segy = pytest.importorskip("stencilgen.seismic.segy")
    pytest.importorskip("segyio", reason="SEG-Y needs segyio: pip install '.[segy]'")
    vp = np.full((41, 26), 1.8)
    vp[:, 13:] = 2.6
    segy.write_model(tmp_path / "m.sgy", vp, 12.5, origin=(500.0, 0.0))
    argv = ["--model", str(tmp_path / "m.sgy"), "--gather", str(tmp_path / "g.sgy"),
            "-d", "99", "99", "--nbl", "6", "--no-plot", "--backend", "c", "-nt", "60"]
    assert demo.main(argv) == 0
    out = capsys.readouterr().out
    assert "shape (41, 26)" in out and f"Model: {tmp_path / 'm.sgy'}, v = 1.8 .. 2.6 km/s" in out
    g = segy.read_gather(tmp_path / "g.sgy")
    assert g.data.shape[1] == 41 and np.abs(g.data).max() > 0
    assert g.rec_coordinates[0, 0] == 500.0 and g.rec_coordinates[-1, 0] == 1000.0
