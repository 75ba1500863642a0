"""Surveys of many shots on a local Dask cluster of 2 worker processes (stencilgen.seismic.survey):
the same records as a serial loop, a worker killed mid-shot, a shot that fails, Ctrl-C and
the rerun that skips what is on disk, images summed on the workers."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen.seismic import survey  # noqa: E402
from stencilgen.errors import InvalidArgument  # noqa: E402
from stencilgen.seismic.survey import Shot, ShotResult, run_survey  # noqa: E402
from test_cuda import needs_gpu  # noqa: E402

distributed = pytest.importorskip("distributed", reason="surveys need Dask: pip install "
                                  "'stencilgen[survey]'")

SHAPE, SPACING, NT = (41, 31), 10.0, 120


@pytest.fixture(scope="module")
def client():
    cluster = survey.local_cluster(workers=2)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _acoustic(nshots=4):
    from stencilgen import seismic
    from stencilgen.seismic import shots
    model = seismic.layered_model(SHAPE, SPACING, velocities=(1.5, 2.5), nbl=10, space_order=4)
    rec = seismic.receiver_line(model, 9, depth=2 * SPACING)
    xs = np.linspace(60.0, 340.0, nshots)
    geometry = [Shot(i, np.array([[x, 2 * SPACING]]), rec) for i, x in enumerate(xs)]
    inputs = {"vp": model.physical(model.vp), "spacing": model.spacing, "nbl": 10,
              "space_order": 4, "nt": NT, "f0": 0.02, "nrec": len(rec), "backend": "c"}
    return shots.acoustic_setup, shots.acoustic_shoot, geometry, inputs


def _serial(setup, shoot, geometry, inputs):
    state = setup(inputs)
    return {s.index: np.array(shoot(state, s).record) for s in geometry}


def _records(result, geometry):
    return {s.index: result.record(s.index) for s in geometry}


def _same(got, want):
    assert sorted(got) == sorted(want)
    for i, ref in want.items():
        assert np.abs(ref).max() > 0
        np.testing.assert_allclose(got[i], ref, rtol=0, atol=1e-6 * np.abs(ref).max())


@pytest.fixture(scope="module")
def serial():
    return _serial(*_acoustic())


def test_four_shots_equal_the_serial_loop(client, serial, tmp_path):
    setup, shoot, geometry, inputs = _acoustic()
    result = run_survey(setup, shoot, geometry, inputs=inputs, out=tmp_path, client=client)
    assert result.done == [0, 1, 2, 3] and not result.failed and not result.skipped
    _same(_records(result, geometry), serial)
    with np.load(survey.record_path(tmp_path, 2)) as f:   # the geometry beside the record
        np.testing.assert_array_equal(f["src"], geometry[2].src)
        assert float(f["meta_dt"]) > 0


def test_gathers_written_as_shots_finish(client, serial, tmp_path):
    """gathers=True: a SEG-Y gather beside each record, its traces the record (resampled to a
    whole microsecond and back: within 1e-3 here, where the run's step leaves 9 samples in the
    period of the Ricker's highest frequencies, 3 f0), its field record the index + 1, its
    source the shot's; a shot function returning no dt gets our error naming it."""
    segy = pytest.importorskip("stencilgen.seismic.segy")
    pytest.importorskip("segyio", reason="SEG-Y needs segyio: pip install '.[segy]'")
    setup, shoot, geometry, inputs = _acoustic()
    result = run_survey(setup, shoot, geometry[:2], inputs=inputs, out=tmp_path, client=client,
                        gathers=True)
    assert result.done == [0, 1]
    for shot in geometry[:2]:
        g = segy.read_gather(survey.gather_path(tmp_path, shot.index))
        assert g.field_record == shot.index + 1
        np.testing.assert_allclose(g.src_coordinates, shot.src, atol=0.005)
        np.testing.assert_allclose(g.rec_coordinates, shot.rec, atol=0.005)
        with np.load(survey.record_path(tmp_path, shot.index)) as f:
            dt = float(f["meta_dt"])
        back = g.resample(dt, num=NT).data
        ref = serial[shot.index]
        covered = int((g.time.num - 1) * g.time.step / dt)
        assert np.abs(back[:covered] - ref[:covered]).max() <= 1e-3 * np.abs(ref).max()
    with pytest.raises(segy.SegyError, match=r"shot 0's result has no meta\['dt'\]"):
        survey._write(tmp_path / "x", geometry[0], ShotResult(record=serial[0]), gathers=True)


def killing_shoot(state, shot):
    """The acoustic shot, but the first try of shot 1 kills its worker process mid-run."""
    marker = Path(state["marker"])
    if shot.index == 1 and not marker.exists():
        marker.write_text("killed once")
        os.kill(os.getpid(), signal.SIGKILL)
    return state["shoot"](state, shot)


def killing_setup(inputs):
    from stencilgen.seismic import shots
    state = shots.acoustic_setup(inputs)
    state.update(marker=inputs["marker"], shoot=shots.acoustic_shoot)
    return state


def test_rates_count_from_the_first_shots_ends():
    """Shots per minute: over the whole survey, after the first shot's end, and after as many
    ends as workers (their first shots, which ran mostly before, not counted)."""
    result = survey.SurveyResult(list(range(8)), [], {}, None, "out", 20.0,
                                 [5.0, 6.0, 8.0, 10.0, 12.0, 14.0, 17.0, 20.0])
    assert result.first == 5.0
    # the workers the demo counts are the local cluster's
    assert survey.cluster_size(3, None) == (0, 3) and survey.cluster_size(None, 2) == (2, 0)
    assert survey.cluster_size(3, 0) == (0, 3)
    assert result.rates() == (pytest.approx(60 * 8 / 20), pytest.approx(60 * 7 / 15))
    assert result.rates(2)[1] == pytest.approx(60 * 6 / 14)
    assert result.rates(8)[1] is None and result.rates(9)[1] is None
    # the demo's line as benchmarks/survey_scaling.py reads it
    sys.path.insert(0, str(ROOT))
    from benchmarks.survey_scaling import RAN
    line = ("Ran 32 shots (0 already on disk, 0 failed) in 19.1 s: 100.6 shots/min, 392.3 "
            "shots/min after the first shot's end (8.9 s), 357.0 after the first 4 (9.2 s)")
    assert RAN.search(line).groups() == ("32", "0", "0", "19.1", "100.6", "392.3", "8.9",
                                         "357.0", "9.2")


def test_a_worker_killed_mid_shot_loses_no_shot(client, serial, tmp_path):
    _, _, geometry, inputs = _acoustic()
    inputs = dict(inputs, marker=str(tmp_path / "killed"))
    result = run_survey(killing_setup, killing_shoot, geometry, inputs=inputs,
                        out=tmp_path / "out", client=client)
    assert (tmp_path / "killed").exists()   # it did die
    assert result.done == [0, 1, 2, 3] and not result.failed
    _same(_records(result, geometry), serial)


def test_a_source_outside_the_model_fails_that_shot_only(client, tmp_path):
    setup, shoot, geometry, inputs = _acoustic()
    geometry[2] = Shot(2, np.array([[5000.0, 20.0]]), geometry[2].rec)
    result = run_survey(setup, shoot, geometry, inputs=inputs, out=tmp_path, client=client)
    assert result.done == [0, 1, 3]
    assert list(result.failed) == [2]
    assert "shot 2" in result.failed[2] and "outside the domain" in result.failed[2]
    assert not os.path.exists(survey.record_path(tmp_path, 2))


def image_setup(inputs):
    return inputs


def image_shoot(state, shot):
    """A cheap shot: a record and an image that depend on the shot."""
    k = shot.index + 1
    return ShotResult(record=np.full((3, 2), float(k)), image=k * state["base"])


def test_images_are_summed_on_the_workers_and_ctrl_c_keeps_the_records(client, tmp_path,
                                                                       monkeypatch):
    base = np.arange(12.0).reshape(3, 4)
    geometry = [Shot(i, np.zeros((1, 2)), np.zeros((2, 2))) for i in range(7)]
    calls = {"n": 0}

    def interrupt_after_three(self, failed):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
    with monkeypatch.context() as m:
        m.setattr(survey._Progress, "step", interrupt_after_three)
        with pytest.raises(KeyboardInterrupt):
            run_survey(image_setup, image_shoot, geometry, inputs={"base": base},
                       out=tmp_path, client=client)
    kept = sorted(p.name for p in tmp_path.glob("shot_*.npz"))
    assert len(kept) == 3 and not list(tmp_path.glob(".*.part"))
    rerun = run_survey(image_setup, image_shoot, geometry, inputs={"base": base},
                       out=tmp_path, client=client)
    assert len(rerun.skipped) == 3 and len(rerun.done) == 4
    # the image of the shots run now: (k = index + 1) summed over them
    want = sum(s.index + 1 for s in geometry if s.index in rerun.done) * base
    np.testing.assert_array_equal(rerun.image, want)
    for i in range(7):
        assert rerun.record(i)[0, 0] == i + 1


def test_without_dask_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(InvalidArgument, match=r"stencilgen\[survey\]"):
        survey.import_distributed()


def test_shots_need_distinct_indices(client, tmp_path):
    shots = [Shot(0, np.zeros((1, 2)), np.zeros((1, 2)))] * 2
    with pytest.raises(InvalidArgument, match="same index"):
        run_survey(image_setup, image_shoot, shots, out=tmp_path, client=client)


@needs_gpu
@pytest.mark.gpu
def test_gpu_workers_give_the_records_of_one_gpu(tmp_path):
    from stencilgen import platform
    setup, shoot, geometry, inputs = _acoustic(nshots=3)
    inputs = dict(inputs, backend="cuda")
    want = _serial(setup, shoot, geometry, inputs)
    result = run_survey(setup, shoot, geometry, inputs=inputs, out=tmp_path,
                        gpus=platform.gpu_count())
    assert result.done == [0, 1, 2]
    _same(_records(result, geometry), want)


def test_the_demo_stacks_rtm_images_at_the_reflector(tmp_path, capsys):
    from demos.survey import run
    code = run.main(["--nshots", "3", "--workers", "2", "-d", "81", "61", "--backend", "c",
                     "--rtm", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "Ran 3 shots" in out
    depth = float(out.split("strongest at depth ")[1].split(" m")[0])
    reflector = 0.6 * (61 - 1) * run.SPACING   # the RTM demo's default reflector depth
    assert abs(depth - reflector) <= 3 * run.SPACING
    assert (tmp_path / "image.npy").exists() and len(list(tmp_path.glob("shot_*.npz"))) == 3


def counting_setup(inputs):
    """``image_setup``, leaving a file per call in ``inputs["calls"]``."""
    import uuid
    Path(inputs["calls"], uuid.uuid4().hex).write_text(str(os.getpid()))
    return inputs


def test_each_worker_builds_once(client, tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    geometry = [Shot(i, np.zeros((1, 2)), np.zeros((2, 2))) for i in range(8)]
    result = run_survey(counting_setup, image_shoot, geometry,
                        inputs={"base": np.ones(3), "calls": str(calls)},
                        out=tmp_path / "out", client=client)
    assert len(result.done) == 8
    builds = [p.read_text() for p in calls.iterdir()]
    assert 1 <= len(builds) <= len(client.scheduler_info()["workers"])
    assert len(set(builds)) == len(builds)   # never twice in one worker


def test_ctrl_c_stops_the_demo_and_a_rerun_finishes(tmp_path):
    import subprocess
    import time
    cmd = [sys.executable, str(ROOT / "demos/survey/run.py"), "--nshots", "8", "--workers",
           "2", "-d", "201", "151", "-nt", "6000", "--backend", "c", "--out", str(tmp_path)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    deadline = time.time() + 240
    while not list(tmp_path.glob("shot_*.npz")) and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    kept = list(tmp_path.glob("shot_*.npz"))
    assert proc.returncode == 130 and "Interrupted" in out, out[-2000:]
    assert 1 <= len(kept) < 8 and not list(tmp_path.glob(".*.part"))
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"({len(kept)} already on disk, 0 failed)" in done.stdout
    assert len(list(tmp_path.glob("shot_*.npz"))) == 8


class _SignalsInFinalizer:
    """Sends SIGINT to this process from ``__del__``, where Python only prints what the
    handler raises (as in Dask's ``Future.__del__``)."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):   # bytecodes: the handler runs here, inside the finalizer
            pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_swallowed_by_a_finalizer_still_stops_the_survey():
    interrupt = survey._Interrupt()
    with interrupt.installed():
        interrupt.check()   # nothing yet
        _SignalsInFinalizer()   # dropped at once: its finalizer swallows the interrupt
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
