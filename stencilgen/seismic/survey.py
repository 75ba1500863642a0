"""Surveys of many shots: a per-shot computation mapped over shot geometries on a Dask
cluster (``dask.distributed``), records written to disk as shots finish, images summed on the
workers, shots of lost workers run again, and a rerun skipping the shots already on disk.

``run_survey(setup, shoot, shots, inputs=...)``: each worker calls ``setup(inputs)`` once
(build the Operator and its fields there: ``inputs``, the model's arrays, are scattered to
every worker once) and ``shoot(state, shot)`` per shot, which returns a ``ShotResult``. The
client writes each record to ``out/shot_NNNNN.npz`` (NumPy: the record with its source and
receiver coordinates and the result's metadata beside it, readable without extra packages,
coordinates exact where SEG-Y would scale them to integers; written to a temporary name and
renamed, so a file there is a finished shot) and holds one record at a time; with
``gathers=True`` also as a SEG-Y gather, ``out/shot_NNNNN.sgy`` (``segy``).
"""
from __future__ import annotations

import contextlib
import operator
import os
import signal
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .. import logger as log
from ..errors import InvalidArgument

RECORD = "shot_{:05d}.npz"
GATHER = "shot_{:05d}.sgy"


def import_distributed():
    """dask.distributed, or our error naming the extra that installs it."""
    try:
        import distributed
    except ImportError:
        raise InvalidArgument("surveys run on Dask: pip install 'stencilgen[survey]' "
                              "(dask[distributed])") from None
    return distributed


@dataclass(frozen=True, eq=False)
class Shot:
    """One shot's geometry: its index in the survey, source and receiver coordinates
    (points x dimensions, in the model's units)."""

    index: int
    src: np.ndarray
    rec: np.ndarray


@dataclass(eq=False)
class ShotResult:
    """What a shot gives: its receiver record (time x receivers), an image or gradient to
    sum over the survey (or None), and numbers to keep beside the record (dt, t0, ...)."""

    record: np.ndarray
    image: np.ndarray | None = None
    meta: dict = field(default_factory=dict)


@dataclass(eq=False)
class SurveyResult:
    """The survey's outcome: shots run now, found on disk, failed (index -> message), the
    summed image (None where shots gave none), where the records are, seconds taken, and
    the seconds to each shot's end (the first's holds the workers' start and first build)."""

    done: list
    skipped: list
    failed: dict
    image: np.ndarray | None
    out: str
    seconds: float
    ends: list = field(default_factory=list)   # seconds to each shot's end, in order

    @property
    def first(self) -> float | None:
        """Seconds to the first shot's end (None: no shot ran)."""
        return self.ends[0] if self.ends else None

    def rates(self, after: int = 1) -> tuple[float, float | None]:
        """Shots per minute over the whole survey, and over the shots after the ``after``-th
        shot's end: after the first (the issue's measure), or after as many as there are
        workers (every worker past its start, none of their first shots counted; None with
        too few shots)."""
        n = len(self.done)
        whole = 60 * n / self.seconds if self.seconds > 0 else 0.0
        ends = self.ends
        if len(ends) < after or n <= after or self.seconds <= ends[after - 1]:
            return whole, None
        return whole, 60 * (n - after) / (self.seconds - ends[after - 1])

    def record(self, index: int) -> np.ndarray:
        """Shot ``index``'s record, read from disk."""
        with np.load(record_path(self.out, index)) as f:
            return np.array(f["record"])


def record_path(out, index: int) -> str:
    return os.path.join(str(out), RECORD.format(index))


# -- on the workers ---------------------------------------------------------------------------

_STATES: dict = {}   # per worker process: (setup, inputs' key) -> what setup built


def _shoot(setup, shoot, inputs, key, shot: Shot) -> ShotResult:
    """Run one shot on a worker, building its state on the worker's first shot."""
    state_key = (getattr(setup, "__qualname__", repr(setup)), key)
    if state_key not in _STATES:
        _STATES[state_key] = setup(inputs)
    result = shoot(_STATES[state_key], shot)
    if not isinstance(result, ShotResult):
        result = ShotResult(record=np.asarray(result))
    return result


def _add(a, b):
    if a is None:
        return b
    return a if b is None else a + b


# -- on the client ----------------------------------------------------------------------------

def gather_path(out, index: int) -> str:
    return os.path.join(str(out), GATHER.format(index))


def _write_gather(out, shot: Shot, result: ShotResult) -> None:
    """The record as a SEG-Y gather (``segy.write_traces``; field record = index + 1)."""
    from .segy import SegyError, write_traces
    if "dt" not in result.meta:
        raise SegyError(f"survey: shot {shot.index}'s result has no meta['dt'], the time step "
                        "its gather's samples need: return ShotResult(record, meta={'dt': "
                        "dt, ...}) from the shot function")
    write_traces(gather_path(out, shot.index), result.record, float(result.meta["dt"]),
                 shot.src, shot.rec, field_record=shot.index + 1)


def _write(out, shot: Shot, result: ShotResult, gathers: bool = False) -> None:
    """The record and its geometry, under a hidden temporary name renamed once written (an
    interrupted write leaves nothing behind); with ``gathers``, its SEG-Y gather first (the
    .npz, written last, says the shot is done)."""
    if gathers:
        _write_gather(out, shot, result)
    final = record_path(out, shot.index)
    tmp = os.path.join(str(out), "." + RECORD.format(shot.index) + ".part")
    meta = {f"meta_{k}": np.asarray(v) for k, v in result.meta.items()}
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, record=result.record, src=shot.src, rec=shot.rec, index=shot.index,
                     **meta)
        os.replace(tmp, final)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


class _Progress:
    """Shots done of the total, shots per minute and the time left, in the log."""

    def __init__(self, total: int, t0: float | None = None):
        self.total, self.count = total, 0
        self.t0 = time.perf_counter() if t0 is None else t0
        self.ends: list = []   # seconds from t0 to each shot's end

    def step(self, failed: int) -> None:
        self.count += 1
        self.ends.append(time.perf_counter() - self.t0)
        minutes = (time.perf_counter() - self.t0) / 60
        rate = self.count / minutes if minutes > 0 else 0.0
        left = (self.total - self.count) / rate if rate > 0 else float("inf")
        log.info(f"survey: {self.count}/{self.total} shots ({failed} failed), "
                 f"{rate:.1f} shots/min, {left:.1f} min left")


def _tree(client, images: list, future):
    """Add ``future`` (a shot's image, on its worker) to the pending sums: two sums of the
    same depth are added on a worker, so the survey's image is a tree of sums."""
    level = 0
    while len(images) > level and images[level] is not None:
        future = client.submit(_add, images[level], future, pure=False)
        images[level] = None
        level += 1
    if len(images) == level:
        images.append(None)
    images[level] = future


class _Interrupt:
    """Ctrl-C, remembered: Python raises KeyboardInterrupt in whatever the main thread runs,
    which can be a finalizer of Dask's (``Future.__del__``) that swallows it; the flag makes
    the survey stop at the next shot's end even then."""

    def __init__(self):
        self.seen = False

    def _handler(self, signum, frame):
        self.seen = True
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.seen:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def installed(self):
        """Our handler while the survey runs, where a handler can be set (the main thread,
        SIGINT not ignored)."""
        if threading.current_thread() is not threading.main_thread() or \
                signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            yield self
            return
        signal.signal(signal.SIGINT, self._handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _collect(client, futures: dict, out, failed: dict, progress: _Progress,
             interrupt: _Interrupt, gathers: bool = False):
    """Write records as shots finish; returns the summed image's future (or None)."""
    distributed = import_distributed()
    images = []
    for fut in distributed.as_completed(list(futures)):
        interrupt.check()
        shot = futures.pop(fut)
        if fut.status == "error":
            exc = fut.exception()
            failed[shot.index] = f"{type(exc).__name__}: {exc}"
            log.warning(f"survey: shot {shot.index} failed: {failed[shot.index]}")
        else:
            record = client.submit(operator.attrgetter("record"), fut, pure=False)
            meta = client.submit(operator.attrgetter("meta"), fut, pure=False)
            _write(out, shot, ShotResult(record.result(), None, meta.result()), gathers)
            _tree(client, images, client.submit(operator.attrgetter("image"), fut,
                                                pure=False))
        fut.release()
        progress.step(len(failed))
        interrupt.check()
    pending = [f for f in images if f is not None]
    while len(pending) > 1:
        pending.append(client.submit(_add, pending.pop(0), pending.pop(0), pure=False))
    return pending[0] if pending else None


def run_survey(setup, shoot, shots, inputs=None, out="survey", client=None,
               scheduler: str | None = None, workers: int | None = None,
               gpus: int | None = None, gathers: bool = False) -> SurveyResult:
    """Run ``shoot`` for every ``Shot`` of ``shots`` whose record is not in ``out`` yet, on
    ``client`` (a dask.distributed Client), else on the scheduler at ``scheduler``, else on
    a local cluster (``local_cluster(workers, gpus)``, closed at the end). A shot that
    raises is reported with its index and the others go on; Ctrl-C cancels what is left,
    keeping the records written. ``gathers``: each record also written as a SEG-Y gather,
    ``out/shot_NNNNN.sgy``, as its shot finishes (``segy.write_traces``, field record
    index + 1; its samples at ``meta['dt']``, which the shot function must return)."""
    distributed = import_distributed()
    shots = list(shots)
    if len({s.index for s in shots}) != len(shots):
        raise InvalidArgument("run_survey: two shots have the same index; number them apart")
    os.makedirs(out, exist_ok=True)
    todo = [s for s in shots if not os.path.exists(record_path(out, s.index))]
    skipped = [s.index for s in shots if s not in todo]
    if skipped:
        log.info(f"survey: {len(skipped)} of {len(shots)} records already in {out}: skipped")
    own = None
    if client is None:
        own = local_cluster(workers, gpus) if scheduler is None else None
        client = distributed.Client(own if own is not None else scheduler)
    t0, failed, image = time.perf_counter(), {}, None
    progress = _Progress(len(todo), t0)
    try:
        image = _map(client, setup, shoot, todo, inputs, out, failed, progress, gathers)
    except KeyboardInterrupt:
        log.warning(f"survey interrupted: the records written are in {out}; run it again to "
                    "do the others")
        raise
    finally:
        if own is not None:
            client.close()
            own.close()
    done = sorted(s.index for s in todo if s.index not in failed)
    return SurveyResult(done, skipped, failed, image, str(out), time.perf_counter() - t0,
                        progress.ends)


def _map(client, setup, shoot, todo, inputs, out, failed, progress, gathers=False):
    """Submit the shots (the inputs scattered once) and collect them; cancels on Ctrl-C."""
    if not todo:
        return None
    # one future for the whole of ``inputs`` (a dict or list would be scattered item by item)
    scattered = client.scatter([inputs], broadcast=True, hash=False)[0] \
        if inputs is not None else None
    key = scattered.key if scattered is not None else None
    futures = {client.submit(_shoot, setup, shoot, scattered, key, s, pure=False): s
               for s in todo}
    interrupt = _Interrupt()
    try:
        with interrupt.installed():
            image = _collect(client, futures, out, failed, progress, interrupt, gathers)
            return None if image is None else image.result()
    except BaseException:
        client.cancel(list(futures))
        raise


def default_gpus() -> int:
    """The GPUs a local cluster gives a worker each: all the machine has where the backend
    setting is (or ``auto`` chooses) CUDA, else none."""
    from .. import platform
    from ..configuration import configuration
    name = configuration["backend"]
    if name == "auto":
        name = platform.choose_auto()[0]
    return platform.gpu_count() if name == "cuda" else 0


def cluster_size(workers: int | None = None, gpus: int | None = None) -> tuple[int, int]:
    """(GPU workers, CPU workers) of ``local_cluster(workers, gpus)``: one worker per GPU
    where ``gpus`` > 0 (None: ``default_gpus()`` unless ``workers`` is given), else
    ``workers`` (default: a group of 4 cores each)."""
    if gpus is None:
        gpus = 0 if workers else default_gpus()
    if gpus:
        return gpus, 0
    return 0, workers or max(1, (os.cpu_count() or 1) // 4)


def local_cluster(workers: int | None = None, gpus: int | None = None):
    """A cluster of worker processes on this machine, one thread each: one worker per GPU
    (``gpus`` > 0; None: ``default_gpus()``), each seeing only its own
    (CUDA_VISIBLE_DEVICES), or ``workers`` workers sharing the cores (OMP_NUM_THREADS,
    default: groups of 4 cores)."""
    distributed = import_distributed()
    gpus, n = cluster_size(workers, gpus)
    if gpus:
        envs = [{"CUDA_VISIBLE_DEVICES": str(i), "OMP_NUM_THREADS": "1"} for i in range(gpus)]
    else:
        envs = [{"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // n))}] * n
    spec = {i: {"cls": distributed.Nanny,
                "options": {"nthreads": 1, "env": env, "memory_limit": 0}}
            for i, env in enumerate(envs)}
    return distributed.SpecCluster(
        workers=spec, scheduler={"cls": distributed.Scheduler,
                                 "options": {"dashboard": False, "dashboard_address": ":0"}},
        silence_logs=40)


__all__ = ["Shot", "ShotResult", "SurveyResult", "run_survey", "local_cluster", "cluster_size",
           "record_path"]
