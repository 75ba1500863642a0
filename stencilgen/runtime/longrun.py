"""Long runs: Ctrl-C stops ``apply`` between time steps, runs longer than a few seconds
report their progress, and a process forked after an OpenMP run is told to use spawn.

Every entry point takes ``control``, a ``long[2]`` the caller owns (``backends/common/interrupt.py``):
the time loop adds one to ``control[1]`` after each step and leaves when ``control[0]`` is
set. ``apply`` makes one per run (``Run``). In the main thread, while Python's own SIGINT
handler is in place (``signal.default_int_handler``), the library's C handler replaces it for
the duration of the call and sets ``control[0]``; the previous one is put back exactly, and
``apply`` raises ``ApplyInterrupted``. Python's handler cannot do this itself: it runs only
when the call has returned. One daemon thread (``_Monitor``) reads ``control[1]`` of the
runs under way and logs their progress, or moves a tqdm bar.
"""
from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

from .. import logger as log
from .. import platform
from ..configuration import configuration
from ..errors import ApplyInterrupted, ExecutionError
from ..user_warnings import warn_user

#: the clock of the progress reports (tests replace it)
clock = time.monotonic

#: the longest gap between two progress lines, in seconds (the gaps double up to it)
REPORT_GAP_MAX = 60.0
#: seconds between two updates of a progress bar
BAR_UPDATE = 0.2
#: point updates (points times steps) from which a run may last more than a few milliseconds
#: (the heaviest CPU kernels: about 50 ms on 2 cores): Ctrl-C and progress watch it
LONG_FROM = 1_000_000

#: said once a process: the machine's load left no core for this process's OpenMP threads
_load_said = False


def _others_running(samples=3, gap=0.02) -> int | None:
    """Threads of other processes running now (the fewest of a few reads of /proc/loadavg's
    running count, less this reader), or None where the kernel does not say (not Linux)."""
    seen = []
    for i in range(samples):
        try:
            with open("/proc/loadavg") as f:
                seen.append(int(f.read().split()[3].split("/")[0]) - 1)
        except (OSError, IndexError, ValueError):
            return None
        if i + 1 < samples:
            time.sleep(gap)
    return min(seen)


def check_load(op_name, threads=None, others=None, cores=None) -> None:
    """Before the first OpenMP run of the process: where other processes' running threads
    and ours exceed the cores and the user chose no wait policy, warn that OpenMP's spinning
    threads will fight them. libgomp's idle threads spin 300000 turns before they sleep: the
    RTM demo (201x121, 1 shot, C) on 2 cores beside one busy process took 14.8-18.9 s, 6.8
    with OMP_WAIT_POLICY=passive; idle, spinning is worth up to 5 % (the so 8 acoustic at
    160^3: 1.78 against 1.69 GPts/s at 10000 turns), so it stays the default."""
    global _load_said
    if _load_said or "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    _load_said = True
    cores = _cores() if cores is None else cores
    if cores is None:   # no affinity here (not Linux)
        return
    others = _others_running() if others is None else others
    threads = platform.openmp_threads() if threads is None else threads
    if others is not None and threads > 1 and others + threads > cores:
        warn_user(
            f"Operator `{op_name}`: {others} thread(s) of other processes are running on this "
            f"machine's {cores} cores beside this run's {threads} OpenMP threads; OpenMP's "
            "idle threads spin and take time the others need (2-3x slower runs measured). "
            "Set OMP_WAIT_POLICY=passive before starting Python (or OMP_NUM_THREADS lower); "
            "OMP_WAIT_POLICY=active, or any choice of yours, silences this")


def _cores() -> int | None:
    """The cores this process's threads may run on. Where OpenMP places its threads
    (OMP_PROC_BIND, OMP_PLACES) the runtime has bound the main thread to the first place, so
    its own mask says one core: the machine's count is taken there."""
    try:
        own = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    bind = os.environ.get("OMP_PROC_BIND", "").strip().lower()
    if (bind and bind != "false") or os.environ.get("OMP_PLACES", "").strip():
        return max(own, os.cpu_count() or own)
    return own


def sigint_functions(library):
    """The library's (install, restore) pair for the SIGINT handler, or None (a library
    built without them, e.g. an old hand-edited source through the JIT backdoor)."""
    try:
        install = library["stencilgen_sigint_install"]
        restore = library["stencilgen_sigint_restore"]
    except (AttributeError, KeyError):
        return None
    install.argtypes, install.restype = [ctypes.c_void_p], ctypes.c_int
    restore.argtypes, restore.restype = [], ctypes.c_int
    return install, restore


def _handler_wanted() -> bool:
    """Whether Ctrl-C should stop the run: in the main thread, where SIGINT means Python's
    KeyboardInterrupt (not where the program ignores it or handles it itself)."""
    return (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)


class Run:
    """One ``apply``'s control block (stop flag, steps done) and what its reports need."""

    def __init__(self, op_name, prog, args):
        self.name, self.prog, self.args = op_name, prog, args
        self.control = (ctypes.c_int64 * 2)()
        args[prog.control] = self.address = ctypes.addressof(self.control)
        self.start = self.next_report = None
        self.bar = None

    @property
    def steps(self) -> int:
        lo, hi = self.prog.time_bounds
        return self.args[hi] - self.args[lo] + 1

    @property
    def points(self) -> int:
        """Grid points updated per step (the summary's count)."""
        n = 1
        for d in self.prog.dims:
            n *= self.args[d.upper] - self.args[d.lower] + 1
        return n

    @property
    def stopped(self) -> bool:
        return bool(self.control[0])

    @property
    def done(self) -> int:
        return int(self.control[1])

    def call(self, cfunction, sigint, values):
        """``cfunction(*values)`` with Ctrl-C stopping it between steps and progress reported;
        returns its status. A short run (under ``LONG_FROM`` point updates) is just called:
        a Ctrl-C waits for it (milliseconds at most) as for any other call."""
        if not self.prog.has_time_loop or self.steps * self.points < LONG_FROM:
            return cfunction(*values)
        watched = configuration["progress"] != "off"
        if watched:
            self.start = clock()
            self.next_report = self.start + configuration["progress-after"]
            _monitor.add(self)
        handled = sigint is not None and _handler_wanted()
        try:
            if handled and sigint[0](self.address) != 0:
                handled = False   # sigaction refused: the run goes on without it
            return cfunction(*values)
        finally:
            if handled:
                sigint[1]()
            if watched:
                _monitor.remove(self)

    # -- progress -------------------------------------------------------------------------
    def describe(self, now) -> str:
        """One progress line: steps done, rate and the time left."""
        done, total, elapsed = self.done, self.steps, now - self.start
        head = f"Operator `{self.name}`: {done} of {total} time steps ({100 * done // total}%)" \
            f" in {elapsed:.1f} s"
        if done == 0:
            return head + " (the first step is still running)"
        rate = done * self.points / elapsed / 1e9
        left = elapsed * (total - done) / done
        return f"{head}, {rate:.2f} GPts/s, about {_duration(left)} left"

    def poll(self, now):
        """Report if due (called by the monitor thread)."""
        if now < self.next_report:
            return
        if configuration["progress"] == "tqdm" and _tqdm() is not None:
            self._bar(now)
            self.next_report = now + BAR_UPDATE
            return
        log.info(self.describe(now))
        elapsed = now - self.start
        self.next_report = self.start + min(2 * elapsed, elapsed + REPORT_GAP_MAX)

    def _bar(self, now):
        if self.bar is None:
            self.bar = _tqdm()(total=self.steps, desc=f"Operator `{self.name}`", unit="step")
        done = self.done
        self.bar.update(done - self.bar.n)
        if done:
            self.bar.set_postfix_str(f"{done * self.points / (now - self.start) / 1e9:.2f} GPts/s")

    def finish(self):
        """Close a progress bar (the run has returned)."""
        if self.bar is not None:
            self.bar.update(self.done - self.bar.n)
            self.bar.close()
            self.bar = None

    # -- Ctrl-C ---------------------------------------------------------------------------
    def last_step(self):
        """The last time step done (None: none), counting down for a backward loop."""
        done, (lo, hi) = self.done, self.prog.time_bounds
        if not done:
            return None
        return self.args[lo] + done - 1 if self.prog.time_step > 0 else self.args[hi] - done + 1


def _duration(seconds) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


_TQDM = []


def _tqdm():
    """tqdm's bar class, or None where tqdm is not installed (said once, then log lines)."""
    if not _TQDM:
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
            log.warning("the progress setting is tqdm but tqdm is not installed "
                        "(pip install tqdm): progress is reported as log lines")
        _TQDM.append(tqdm)
    return _TQDM[0]


def interrupted(run, summary, fields, written) -> ApplyInterrupted:
    """The KeyboardInterrupt of a run stopped by Ctrl-C: where it stopped and where the last
    step's values are (``written``: C name -> slots of the last step, from finite)."""
    prog, last = run.prog, run.last_step()
    lo, hi = (run.args[b] for b in prog.time_bounds)
    slots = {fields[n].name: s for n, s in written.items() if s is not None}
    if last is None:
        state = "no time step ran; the fields hold what the steps before the time loop left"
    else:
        where = ", ".join(f"{f}.data[{', '.join(map(str, s))}]" for f, s in slots.items())
        state = (f"the fields hold the state after time step {last}, as apply(time_"
                 f"{'M' if prog.time_step > 0 else 'm'}={last}) would leave them"
                 + (f" (the newest values in {where})" if where else ""))
    return ApplyInterrupted(
        f"Operator `{run.name}` stopped by Ctrl-C after {run.done} of {run.steps} time steps "
        f"({lo}..{hi}): {state}", steps_done=run.done, last_step=last, time_m=lo, time_M=hi,
        slots=slots, summary=summary)


def interrupted_tuning(name, time_m, time_M) -> ApplyInterrupted:
    """The KeyboardInterrupt of an apply Ctrl-C stopped while the autotuner's trials ran,
    before its first time step: each trial puts back what it wrote."""
    return ApplyInterrupted(
        f"Operator `{name}` stopped by Ctrl-C while autotuning, before its first time step: "
        "no time step ran; the fields hold what they held before apply (the trials' writes "
        "were put back)", steps_done=0, last_step=None, time_m=time_m, time_M=time_M)


class _Monitor:
    """One daemon thread that reports the progress of the runs under way. It wakes when the
    next report is due, and at least every ``POLL`` seconds, so a new run is seen in time
    without waking it: an apply costs a set insertion and removal. After ``IDLE`` seconds
    without runs it sleeps until the next one (then woken once)."""

    POLL = 1.0
    IDLE = 60.0

    def __init__(self):
        self._runs: set = set()
        self._cond = threading.Condition(threading.Lock())
        self._thread = None
        self._wake = float("inf")   # when the thread wakes next (clock time)

    def add(self, run):
        with self._cond:
            self._runs.add(run)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="stencilgen-progress")
                self._thread.start()
            elif run.next_report < self._wake:
                self._cond.notify()

    def remove(self, run):
        with self._cond:
            self._runs.discard(run)
            run.finish()

    def _loop(self):
        seen = clock()   # when a run was last registered
        with self._cond:
            while True:
                now = clock()
                for run in tuple(self._runs):
                    run.poll(now)
                if self._runs:
                    seen = now
                poll = min(self.POLL, max(0.005, configuration["progress-after"] / 4))
                due = min((r.next_report for r in self._runs), default=now + poll)
                self._wake = float("inf") if now - seen > self.IDLE else min(due, now + poll)
                self._cond.wait(None if self._wake == float("inf")
                                else max(0.002, self._wake - clock()))


_monitor = _Monitor()

# -- fork after OpenMP -----------------------------------------------------------------------
_openmp_ran = False        # an apply ran OpenMP code in this process
_team_at_fork = False      # ... with a GNU OpenMP team of several threads, seen at fork
_forked_after_team = False


def openmp_ran():
    """Note that an apply ran OpenMP code (the fork check reads it)."""
    global _openmp_ran
    _openmp_ran = True


def _gnu_openmp_team() -> bool:
    """Whether GNU OpenMP (libgomp) is loaded and runs teams of several threads: its threads
    do not survive a fork, and the child's first parallel region waits for them forever."""
    try:
        with open("/proc/self/maps") as maps:
            if "libgomp" not in maps.read():
                return False
        return platform.openmp_threads() > 1
    except OSError:
        return True   # cannot tell: assume it does


def _before_fork():
    global _team_at_fork
    _team_at_fork = _openmp_ran and _gnu_openmp_team()


def _after_fork_in_child():
    global _forked_after_team, _monitor
    _forked_after_team = _forked_after_team or _team_at_fork
    _monitor = _Monitor()   # the parent's thread is not in the child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def check_fork(op_name):
    """ExecutionError in a process forked after an OpenMP apply of its parent, where this
    apply would hang (call before running OpenMP code)."""
    if not _forked_after_team:
        return
    raise ExecutionError(
        f"Operator `{op_name}`: this process was forked (os.fork, or multiprocessing's 'fork' "
        "start method, the default on Linux before Python 3.14) after its parent ran an "
        "OpenMP operator, and GNU OpenMP's threads do not survive a fork: this apply would "
        "hang. Start worker processes with the 'spawn' (or 'forkserver') method: "
        "multiprocessing.get_context('spawn').Pool(...), or ProcessPoolExecutor(mp_context="
        "multiprocessing.get_context('spawn')); or run the parent's applies after the fork, "
        "or with OMP_NUM_THREADS=1")
