"""Long runs (issue 15): dropped Functions are freed, Ctrl-C stops apply between time steps
with the fields as a run to the last step done leaves them, a process forked after an OpenMP
apply is told to use spawn instead of hanging, and long runs report their progress."""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
import weakref
from pathlib import Path

import numpy as np
import pytest

import stencilgen
from stencilgen import ApplyInterrupted, Eq, Grid, Operator, SparseTimeFunction, TimeFunction, solve
from stencilgen.runtime import longrun
from stencilgen.data import memory
from stencilgen import Function as Func

from test_cuda import needs_gpu, needs_nvcc

ROOT = Path(__file__).resolve().parents[1]
MiB = 1 << 20



def _pythonpath() -> str:
    """The project root first, then whatever the caller's PYTHONPATH holds (wheels that a
    machine without an install step puts there)."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)

def _rss() -> int:
    """Resident bytes of this process (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# -- memory of dropped Functions --------------------------------------------------------------

BIG = (160, 160, 170)   # a time_order=2, space_order=2 float32 TimeFunction of 54 MiB


def _shot(grid, m, op=None):
    """One shot: a fresh 54 MiB wavefield and a source, run for three steps by ``op`` (an
    Operator of the first shot, the new ones passed as overrides) or by a new Operator."""
    u = TimeFunction(name="u", grid=grid, space_order=2, time_order=2)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=3)
    src.coordinates.data[:] = 500.0
    src.data[:] = 1.0
    u.data[:] = 0.0
    if op is None:
        eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]
        op = Operator(eqs + src.inject(field=u.forward, expr=src * 0.1), backend="c")
    op.apply(time_M=1, dt=0.5, u=u, src=src)
    assert np.abs(u.data[2]).max() > 0   # the run wrote the field
    return weakref.ref(u.data_with_halo), op


def test_dropped_time_functions_are_freed():
    """Eight 54 MiB TimeFunctions built, filled and dropped in turn: at most two arrays are
    alive at a time (sympy's cache alone held all eight before), and the resident memory
    grows by at most three of them."""
    grid = Grid(shape=BIG)
    memory.sweep()
    start, refs = _rss(), []
    for i in range(8):
        u = TimeFunction(name="u", grid=grid, space_order=2, time_order=2)
        u.data[:] = float(i)
        refs.append(weakref.ref(u.data_with_halo))
        del u
        assert sum(r() is not None for r in refs) <= 2
    assert _rss() - start < 3 * 54 * MiB
    stencilgen.clear_cache()            # Devito's name: frees what no one holds, now
    assert all(r() is None for r in refs)


def test_shot_loop_frees_every_shot():
    """A shot loop, with one Operator and overrides (8 shots) and with an Operator per shot
    (3): the wavefields and sources of the shots done are freed (the Operator of the first
    way keeps its own first shot's), and the memory held stays bounded."""
    grid = Grid(shape=BIG, extent=(1000.0,) * 3)
    m = Func(name="m", grid=grid, space_order=2)
    m.data[:] = 1 / 1.5**2
    memory.sweep()
    refs, op = [], None
    for _ in range(8):
        ref, op = _shot(grid, m, op)
        refs.append(ref)
        assert sum(r() is not None for r in refs) <= 2
        assert memory.held() < 4 * 54 * MiB
    for _ in range(3):
        ref, op = _shot(grid, m)
        refs.append(ref)
        assert sum(r() is not None for r in refs) <= 2
    del op
    memory.sweep()
    assert all(r() is None for r in refs)


SMALL = (64, 64, 40)   # a time_order=2, space_order=2 float32 TimeFunction of 2.1 MiB


def _fields_one_at_a_time(backend, count, measure):
    """``count`` shots of a fresh TimeFunction passed to one Operator as an override, each
    also read in an expression sympy caches, then dropped; the cyclic collector off, so
    only reference counting frees. Returns how many were alive at most and ``measure()``
    after the first few and at the end."""
    import gc
    grid = Grid(shape=SMALL)
    first = TimeFunction(name="u", grid=grid, space_order=2, time_order=2)
    op = Operator(Eq(first.forward, 2 * first - first.backward + 0.1 * first.laplace),
                  backend=backend)
    memory.sweep()
    refs, most, marks = [], 0, []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(count):
            u = TimeFunction(name="u", grid=grid, space_order=2, time_order=2)
            u.data[1, 30, 30, 20] = 1.0
            kept = u.forward + u.laplace           # sympy's cache holds this, and u with it
            op.apply(u=u, time_m=1, time_M=2)
            refs.append(weakref.ref(u.field))
            most = max(most, sum(r() is not None for r in refs))
            del u, kept
            if i == 9:
                marks.append(measure())
        marks.append(measure())
    finally:
        if enabled:
            gc.enable()
    return most, marks


def test_each_dropped_field_goes_before_the_next_is_allocated():
    """300 fields of 2 MiB, each an override of one Operator and read in a cached
    expression: with the cyclic collector off, at most the current and the one just dropped
    are alive (the next allocation clears sympy's cache and reference counting frees the
    rest), and the resident memory after 300 is what it was after 10, within 4 fields."""
    most, (after10, after300) = _fields_one_at_a_time("c", 300, _rss)
    assert most <= 2
    assert after300 - after10 < 4 * 2.2 * MiB


@pytest.mark.gpu
@needs_gpu
def test_dropped_fields_give_back_their_gpu_memory():
    """The same on CUDA: free device memory (cudaMemGetInfo) after 200 fields is what it
    was after 10, within 4 fields' copies."""
    from stencilgen import platform
    from stencilgen.data import places
    place = places.cuda_place(platform.toolchain("cuda"))

    def free():
        return place.meminfo()[0]
    most, (after10, after200) = _fields_one_at_a_time("cuda", 200, free)
    assert most <= 2
    assert after10 - after200 < 4 * 2.2 * MiB


def test_sweep_waits_for_enough_allocations(monkeypatch):
    """Small allocations do not sweep: a sweep follows SWEEP_FROM bytes (or as many as were
    held after the last one), so its cost stays in proportion to the memory allocated."""
    threshold = memory.sweep() + MiB     # what this process holds, plus 1 MiB
    monkeypatch.setattr(memory, "SWEEP_FROM", threshold)
    sweeps, real = [], memory.sweep
    monkeypatch.setattr(memory, "sweep", lambda: sweeps.append(1) or real())
    grid = Grid(shape=(64, 64))    # 17 KiB a Function
    each = 66 * 66 * 4
    for i in range(-(-7 * threshold // (2 * each))):   # 3.5 thresholds' worth
        Func(name=f"f{i}", grid=grid).data[:] = 1.0
    assert len(sweeps) == 3


# -- Ctrl-C -------------------------------------------------------------------------------------

_INTERRUPTED = textwrap.dedent("""
    import json, signal, sys, time
    import numpy as np
    from stencilgen import ApplyInterrupted, Eq, Grid, Operator, TimeFunction
    backend, direction = sys.argv[1], sys.argv[2]
    grid = Grid(shape=(48, 48))

    def field():
        u = TimeFunction(name="u", grid=grid, space_order=2, time_order=2, save=None)
        u.data[:, 20:28, 20:28] = 1.0
        return u

    u = field()
    c = 0.2 * grid.spacing[0] ** 2
    if direction == "forward":
        eq = Eq(u.forward, 2 * u - u.backward + c * u.laplace)
    else:
        eq = Eq(u.backward, 2 * u - u.forward + c * u.laplace)
    op = Operator([eq], name="Long", backend=backend)
    op.apply(time_m=1, time_M=3, autotune=True)   # tuned for this size: the long run steps at once
    u = field()
    print("READY", flush=True)
    start = time.perf_counter()
    try:
        op.apply(time_m=1, time_M=10**12, u=u)
        print(json.dumps({"finished": True}))
        sys.exit()
    except KeyboardInterrupt as e:
        took = time.perf_counter() - start
        out = {"type": type(e).__name__, "took": took, "message": str(e),
               "done": e.steps_done, "last": e.last_step, "slots": e.slots,
               "summary_steps": e.summary.timesteps}
    v = field()   # the same run, to the last step done
    if direction == "forward":
        op.apply(time_m=1, time_M=out["last"], u=v)
    else:
        op.apply(time_m=out["last"], time_M=10**12, u=v)
    out["same"] = bool(np.array_equal(u.data, v.data))
    out["moved"] = float(np.abs(u.data - field().data).max())
    if direction == "forward":   # going on from the step after equals not having stopped
        last = out["last"]
        op.apply(time_m=last + 1, time_M=last + 5, u=u)
        w = field()
        op.apply(time_m=1, time_M=last + 5, u=w)
        out["continued"] = bool(np.array_equal(u.data, w.data))
    out["python_handler"] = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    print(json.dumps(out))
""")


def _interrupt(tmp_path, backend, direction, delay=0.5):
    """Run the script above, send SIGINT ``delay`` s after it is ready; its JSON result
    (``took``: from the start of the apply to the exception, in the child)."""
    script = tmp_path / "interrupted.py"
    script.write_text(_INTERRUPTED)
    env = dict(os.environ, PYTHONPATH=_pythonpath(), STENCILGEN_LOGGING="WARNING",
               STENCILGEN_CACHE_DIR=stencilgen.configuration["cache-dir"])
    proc = subprocess.Popen([sys.executable, str(script), backend, direction],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _check_interrupted(result):
    assert result["type"] == "ApplyInterrupted", result
    assert result["took"] < 5    # not the 10**12 steps: the signal came after about 0.5 s
    assert result["done"] > 0 and result["summary_steps"] == result["done"]
    assert result["same"], "the fields differ from a run to the last step done"
    assert result["moved"] > 0   # and the run did move them
    assert result["python_handler"]
    assert f"after {result['done']} of 1000000000000 time steps" in result["message"]


@pytest.mark.parametrize("backend", ["c", "openacc"])
def test_ctrl_c_stops_apply_between_steps(tmp_path, backend):
    """SIGINT during a run of 10**12 steps: apply raises ApplyInterrupted (a
    KeyboardInterrupt) at once; the field equals a run to the step it reports, in the slot
    it names."""
    result = _interrupt(tmp_path, backend, "forward")
    _check_interrupted(result)
    assert result["last"] == result["done"]          # time_m=1: steps 1..done
    assert result["slots"] == {"u": [(result["last"] + 1) % 3]}
    assert result["continued"]   # apply(time_m=last + 1) goes on where it stopped
    assert f"u.data[{(result['last'] + 1) % 3}]" in result["message"]


def test_ctrl_c_stops_a_backward_run(tmp_path):
    """Counting down from time_M: the last step done is time_M - done + 1."""
    result = _interrupt(tmp_path, "c", "backward")
    _check_interrupted(result)
    assert result["last"] == 10**12 - result["done"] + 1
    assert "apply(time_m=" in result["message"]


def test_ctrl_c_while_autotuning_puts_the_trials_writes_back(monkeypatch):
    """Ctrl-C landing as a tuning trial's call returns (a KeyboardInterrupt there): the
    trial's writes go back and apply raises ApplyInterrupted with no step done."""
    grid = Grid(shape=(16, 16, 16))
    u = TimeFunction(name="u", grid=grid, space_order=2, time_order=2)
    u.data[:, 6:10, 6:10, 6:10] = 1.0
    before = np.array(u.data)
    op = Operator([Eq(u.forward, 2 * u - u.backward + 0.1 * u.laplace)], name="TunedStop",
                  backend="c")
    real, calls = op.cfunction, []
    assert op._emitter.launch_shapes(), "the C nest offers no blocks to tune"

    def interrupted(*args):
        status = real(*args)
        calls.append(status)
        raise KeyboardInterrupt   # as Python raises a SIGINT that came during the call

    monkeypatch.setattr(op, "_cfunction", interrupted)
    with pytest.raises(ApplyInterrupted, match="while autotuning") as info:
        op.apply(time_m=1, time_M=50, autotune=True)
    assert calls, "no trial ran"
    assert info.value.steps_done == 0 and info.value.last_step is None
    assert (info.value.time_m, info.value.time_M) == (1, 50)
    np.testing.assert_array_equal(u.data, before)


@pytest.mark.gpu
@needs_gpu
def test_ctrl_c_stops_a_cuda_run(tmp_path):
    """On the GPU: the host loop stops launching, the steps launched finish, and the copies
    back leave the fields of the last step done."""
    result = _interrupt(tmp_path, "cuda", "forward")
    _check_interrupted(result)
    assert result["last"] == result["done"]


@pytest.mark.gpu
@needs_gpu
def test_ctrl_c_stops_an_openacc_gpu_run(tmp_path):
    """OpenACC offloaded: the time loop on the host stops, the data region copies back."""
    result = _interrupt(tmp_path, "openacc", "forward")
    _check_interrupted(result)


def _small(backend, time_order=2, name="Small"):
    grid = Grid(shape=(24, 20))
    u = TimeFunction(name="u", grid=grid, space_order=2, time_order=time_order)
    u.data[:, 10:14, 8:12] = 1.0
    c = 0.2 * grid.spacing[0] ** 2
    return Operator([Eq(u.forward, 2 * u - u.backward + c * u.laplace)], backend=backend,
                    name=name), u


@pytest.mark.parametrize("backend", ["c", "openacc"])
def test_control_block_counts_steps_and_stops(backend):
    """The entry point's control argument: [1] counts the steps done, a set [0] stops the
    loop after the step under way (so after one here), and the field is that of one step."""
    op, u = _small(backend)
    prog = op.program
    outcome = {}
    for stop in (0, 1):
        u.data[:] = 0.0
        u.data[:, 10:14, 8:12] = 1.0
        args, keep = op._arguments(time_m=1, time_M=7)
        timers, control = np.zeros(max(len(prog.kernels), 1)), np.array([stop, 0])
        args.update({prog.timers: timers.ctypes.data, prog.checks_param: None,
                     prog.tuning: None, prog.control: control.ctypes.data})
        assert op.cfunction(*[args[p.name] for p in prog.parameters()]) == 0
        outcome[stop] = int(control[1]), u.data.copy()
    assert outcome[0][0] == 7 and outcome[1][0] == 1
    u.data[:] = 0.0
    u.data[:, 10:14, 8:12] = 1.0
    op.apply(time_m=1, time_M=1)
    assert np.array_equal(outcome[1][1], u.data)


def _sigint_action() -> int:
    """The address of SIGINT's C handler now (libc's sigaction)."""
    libc = ctypes.CDLL(None, use_errno=True)
    action = (ctypes.c_char * 256)()   # struct sigaction; its handler comes first
    assert libc.sigaction(signal.SIGINT, None, action) == 0
    return ctypes.c_void_p.from_buffer(action).value or 0


def test_sigint_handler_put_back_after_apply():
    """apply swaps Python's C-level SIGINT handler for the library's during a long run and
    puts it back: the same address after it, another one during it (read just before the
    entry point); a short run leaves it alone."""
    op, u = _small("c", name="Handler")
    op.apply(time_m=1, time_M=2)      # 960 point updates: a short run, no handler
    before, during = _sigint_action(), []
    original = longrun.Run.call

    def spy(run, cfunction, sigint, values):
        def call(*args):
            during.append(_sigint_action())
            return cfunction(*args)
        return original(run, call, sigint, values)
    longrun.Run.call = spy
    try:
        op.apply(time_m=1, time_M=2)
        op.apply(time_m=1, time_M=-(-longrun.LONG_FROM // 480))   # 480 points: a long run
    finally:
        longrun.Run.call = original
    assert _sigint_action() == before and len(during) == 2
    assert during[0] == before and during[1] != before
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@needs_nvcc
def test_cuda_source_with_the_interrupt_compiles():
    """The CUDA entry point takes the control block, its host time loop counts and stops,
    and nvcc compiles the handler (C++ host code)."""
    op, _ = _small("cuda", name="CudaCtrl")
    src = op.ccode
    assert "volatile long * control" in src and "control[1] += 1" in src
    assert op.cfunction is not None   # nvcc through jitcache, then loaded
    assert longrun.sigint_functions(op._build.library) is not None


# -- fork after OpenMP --------------------------------------------------------------------------

_FORK = textwrap.dedent("""
    import json, multiprocessing, sys
    import numpy as np
    from stencilgen import Eq, ExecutionError, Grid, Operator, TimeFunction
    grid = Grid(shape=(32, 32))
    u = TimeFunction(name="u", grid=grid, space_order=2)
    op = Operator([Eq(u.forward, u + 0.1 * grid.spacing[0] ** 2 * u.laplace)], name="Forked",
                  backend="c")

    def work(seed):
        u.data[:] = 0.0
        u.data[0, 10:20, 10:20] = seed
        try:
            op.apply(time_M=4)
        except ExecutionError as e:
            return str(e)
        return float(np.abs(u.data).sum())

    if __name__ == "__main__":
        expected = work(1.0)   # an OpenMP run in the parent
        with multiprocessing.get_context(sys.argv[1]).Pool(1) as pool:
            got = pool.apply_async(work, (1.0,)).get(timeout=60)
        print(json.dumps({"expected": expected, "got": got}))
""")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_fork_after_openmp_apply(tmp_path, method):
    """GNU OpenMP's team does not survive a fork: a forked child's apply raises our error
    naming the spawn method (it hung before); a spawned child runs and agrees."""
    script = tmp_path / "forked.py"
    script.write_text(_FORK)
    env = dict(os.environ, PYTHONPATH=_pythonpath(), STENCILGEN_LOGGING="WARNING",
               OMP_NUM_THREADS="2", STENCILGEN_CACHE_DIR=stencilgen.configuration["cache-dir"])
    done = subprocess.run([sys.executable, str(script), method], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if method == "fork":
        assert "forked" in result["got"] and "'spawn'" in result["got"]
    else:
        assert result["got"] == result["expected"] > 0


# -- progress -----------------------------------------------------------------------------------

def test_progress_line_from_the_step_count(restore_settings, stencilgen_log):
    """A fake clock: the lines say the steps done, GPts/s and the time left from the step
    count, and come after progress-after seconds, then at doubling times."""
    restore_settings["progress-after"] = 5
    op, _ = _small("c", name="Progress")
    args, _ = op._arguments(time_m=1, time_M=1000)
    run = longrun.Run("Progress", op.program, args)
    run.start, run.next_report = 100.0, 105.0
    run.control[1] = 250
    points = 24 * 20
    expected = (f"Operator `Progress`: 250 of 1000 time steps (25%) in 10.0 s, "
                f"{250 * points / 10 / 1e9:.2f} GPts/s, about 30 s left")
    assert run.describe(110.0) == expected
    stencilgen_log.take()
    for now in (104.0, 105.0, 108.0, 110.0, 119.0, 120.0):
        run.poll(now)
    lines = [ln for ln in stencilgen_log.take() if "time steps" in ln]
    assert [ln.split(" in ")[1].split(" s")[0] for ln in lines] == ["5.0", "10.0", "20.0"]
    run.control[1] = 0
    assert run.describe(110.0).endswith("(the first step is still running)")


def test_progress_bar_with_tqdm(restore_settings, monkeypatch):
    """progress=tqdm: a bar (a stand-in for tqdm here) moved to the steps done and closed."""
    bars = []

    class Bar:
        def __init__(self, total, desc, unit):
            self.total, self.n, self.closed, self.postfix = total, 0, False, None
            bars.append(self)

        def update(self, k):
            self.n += k

        def set_postfix_str(self, text):
            self.postfix = text

        def close(self):
            self.closed = True
    monkeypatch.setattr(longrun, "_TQDM", [Bar])
    restore_settings["progress"] = "tqdm"
    op, _ = _small("c", name="Bar")
    args, _ = op._arguments(time_m=1, time_M=40)
    run = longrun.Run("Bar", op.program, args)
    run.start, run.next_report = 0.0, 5.0
    run.control[1] = 10
    run.poll(6.0)
    run.control[1] = 40
    run.finish()
    (bar,) = bars
    assert bar.total == 40 and bar.n == 40 and bar.closed and bar.postfix.endswith("GPts/s")


def _stopped_after(op, seconds, monkeypatch):
    """Run ``op`` for 10**9 steps and stop it after ``seconds`` from another thread, as the
    SIGINT handler would (the control block's flag); the ApplyInterrupted."""
    runs, original = [], longrun.Run.__init__

    def init(run, *args):
        original(run, *args)
        runs.append(run)
    monkeypatch.setattr(longrun.Run, "__init__", init)

    def stop():   # the run may still be tuning when the time is up (a busy machine)
        while not runs:
            time.sleep(0.01)
        runs[-1].control[0] = 1
    timer = threading.Timer(seconds, stop)
    timer.start()
    with pytest.raises(ApplyInterrupted) as caught:
        op.apply(time_m=1, time_M=10**9)
    timer.join()
    return caught.value


def test_progress_during_a_real_run(restore_settings, stencilgen_log, monkeypatch):
    """progress-after 0.05 s and a run stopped after 0.6 s: lines appear while it runs (at
    0.05, 0.1, 0.2 and 0.4 s), with step counts that grow and stay within those done;
    progress=off: none."""
    op, u = _small("c", name="Live")
    op.apply(time_m=1, time_M=2)
    restore_settings["progress-after"] = 0.05
    stencilgen_log.take()
    stop = _stopped_after(op, 0.6, monkeypatch)
    lines = [ln for ln in stencilgen_log.take() if "time steps" in ln]
    done = [int(ln.split(": ")[1].split(" of ")[0]) for ln in lines]
    assert len(lines) >= 3 and done == sorted(done) and done[-1] <= stop.steps_done
    assert all("of 1000000000 time steps" in ln for ln in lines)
    restore_settings["progress"] = "off"
    _stopped_after(op, 0.3, monkeypatch)
    assert not [ln for ln in stencilgen_log.take() if "time steps" in ln]


def test_progress_settings_are_checked(restore_settings):
    with pytest.raises(stencilgen.ConfigurationError, match="progress"):
        restore_settings["progress"] = "bar"
    with pytest.raises(stencilgen.ConfigurationError, match="seconds"):
        restore_settings["progress-after"] = -1


def test_a_busy_machine_is_said_once_before_openmp_runs(monkeypatch):
    """Other processes' running threads and ours exceeding the cores: one warning naming the
    fix; none where they fit, none a second time, none where the user chose a wait policy;
    the count read from the kernel is a number of threads."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.setattr(longrun, "_load_said", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        longrun.check_load("Idle", threads=2, others=0, cores=2)   # fits: nothing said
    monkeypatch.setattr(longrun, "_load_said", False)
    with pytest.warns(UserWarning, match=r"Operator `Busy`: 1 thread\(s\) of other processes are "
                      r"running on this machine's 2 cores beside this run's 2 OpenMP threads"
                      r".*OMP_WAIT_POLICY=passive") as caught:
        longrun.check_load("Busy", threads=2, others=1, cores=2)
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        longrun.check_load("Busy", threads=2, others=1, cores=2)   # said once a process
        monkeypatch.setattr(longrun, "_load_said", False)
        monkeypatch.setenv("OMP_WAIT_POLICY", "active")
        longrun.check_load("Chosen", threads=2, others=5, cores=2)
    # threads placed by OpenMP: the main thread's mask is one core, the machine's count is
    # what the threads share (a 16-core machine with OMP_PROC_BIND=close warned "1 cores")
    monkeypatch.setattr(longrun, "_load_said", False)
    monkeypatch.delenv("OMP_WAIT_POLICY")
    monkeypatch.setattr(longrun.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(longrun.os, "cpu_count", lambda: 16)
    monkeypatch.setenv("OMP_PROC_BIND", "close")
    assert longrun._cores() == 16
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        longrun.check_load("Placed", threads=16, others=0)
    monkeypatch.delenv("OMP_PROC_BIND")
    assert longrun._cores() == 1
    monkeypatch.setenv("OMP_PLACES", "cores")
    assert longrun._cores() == 16
    monkeypatch.undo()
    if Path("/proc/loadavg").exists():   # Linux: a count of threads, this reader left out
        others = longrun._others_running(samples=1)
        assert isinstance(others, int) and others >= 0
    else:
        assert longrun._others_running() is None
