"""Launch-shape autotuning: each shape a backend offers is timed for a few steps, the fastest
kept per section and remembered beside the build, per problem size.

A run is tuned when asked (``apply(autotune=True)``), or by itself when nothing is remembered
for its size yet and the ``autotuning`` setting is ``on``, or ``auto`` (the default) and the
run is large enough that a few trial steps per shape cost little next to it. Trials run on the
caller's data; what they write is put back before the real run.
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np

from .. import logger as log

#: steps timed per shape
TRIAL_STEPS = 3
#: point updates (points x steps) from which a run is tuned by itself: about 100^3 points
#: for 2000 steps, or 412x423x476 for 25; the trials then cost a few percent of the run
AUTO_FROM = 2.0e9


def wanted(asked, setting: str, remembered: bool, updates: float) -> bool:
    """Whether this apply tunes: ``asked`` (the apply's autotune=) wins, then the setting."""
    if asked is not None:
        return bool(asked)
    if remembered or setting == "off":
        return False
    return setting == "on" or updates >= AUTO_FROM


def probe_key(key: str) -> str:
    """The remembered entry of the probes of a size: each one's nanoseconds a step, -1 where
    it has not run yet."""
    return f"probe {key}"


def _probe_times(memory, key: str, count: int) -> list:
    """The nanoseconds a step of each of ``count`` probes of size ``key`` (-1: not run)."""
    found = memory.get(probe_key(key))
    return list(found) if found is not None and len(found) == count else [-1] * count


def next_probe(memory, key: str, count: int) -> int | None:
    """Which of ``count`` probes an apply of size ``key`` runs: the first not timed yet
    (None: every one was).

    A run too short to tune by itself (below ``AUTO_FROM``: the trials of every shape would
    cost more than the run) still learns: from the second apply of a size in a process on
    (the first pays loading and first touches), each apply runs one of the few choices the
    backend names for it (its ``probes``) and is timed as it runs; once each has run, the
    fastest is remembered as a tuned choice is (``record_probe``)."""
    return next((i for i, t in enumerate(_probe_times(memory, key, count)) if t < 0), None)


def record_probe(memory, key: str, index: int, seconds: float, probes: list) -> int | None:
    """Notes that probe ``index`` of size ``key`` ran ``seconds`` a step; once every probe
    has, remembers the fastest's choice for ``key`` and returns its index."""
    times = _probe_times(memory, key, len(probes))
    times[index] = max(1, int(round(seconds * 1e9)))
    memory.put(probe_key(key), times)
    if min(times) < 0:
        return None
    best = int(np.argmin(times))
    memory.put(key, probes[best])
    return best


#: a fused nest keeps running fused unless its nests apart ran faster by more than this
#: fraction (fused moves fewer bytes and needs no temporaries in global memory)
FUSION_MARGIN = 0.02


def apart_key(key: str) -> str:
    """The remembered entry of the choice between fused nests and the nests apart."""
    return f"apart {key}"


def keep_apart(fused: float, apart: float) -> bool:
    """Whether the nests apart run instead of fused: ``apart`` seconds against ``fused`` for
    the same trial steps, each at its own tuned launch shapes."""
    return apart < (1.0 - FUSION_MARGIN) * fused


def size_key(prog, args) -> str:
    """What tuning depends on besides the code: the sizes and iteration bounds."""
    values = [args[d.size] for d in prog.dims]
    values += [args[b] for d in prog.dims for b in (d.lower, d.upper)]
    return "x".join(str(int(v)) for v in values)


class Remembered:
    """The shapes chosen for each size, in ``tuning.json`` beside the built library."""

    def __init__(self, directory: Path):
        self.path = Path(directory) / "tuning.json"

    def load(self) -> dict:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):   # none yet, or unreadable: tune again
            return {}

    def get(self, key: str):
        found = self.load().get(key)
        return np.asarray(found, dtype=np.int64) if found is not None else None

    def put(self, key: str, choice) -> None:
        table = self.load()
        table[key] = [int(c) for c in choice]
        tmp = self.path.with_name(f".tuning-{os.getpid()}.json")
        try:
            # 0600 as every file of the build cache (jitcache.trust), whatever the umask
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(json.dumps(table, indent=1))
            os.replace(tmp, self.path)   # readers never see half a file
        except OSError as exc:           # a read-only cache still runs, tuned or not
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            log.warning(f"could not remember the tuned launch shapes in {self.path}: {exc}")


def tune(run, shapes: dict, sections: int, rounds: int = 1, defaults: dict | None = None,
         margin: float = 0.0, loop: tuple | None = None) -> np.ndarray:
    """The fastest shape per section: ``run(choice)`` runs the trial steps with
    ``choice[section]`` and returns the section timers. ``shapes``: section -> number of
    shapes; sections not in it keep 0. With several ``rounds`` every shape is timed that many
    times (interleaved) and its best time counts: CPU timers of a few steps vary by tens of
    percent from one run to the next. A section keeps its shape of ``defaults`` unless
    another ran faster by more than ``margin`` (a fraction of its time).

    ``loop``: (section, untiled, members) where the time loop may run in tiles (the C
    backend's ``tuned_loop``): ``section``'s first ``untiled`` shapes run the loop untiled,
    each of its nests (the ``members`` sections) timed on its own, its other shapes the
    tiled loop, timed whole in ``section``. The untiled loop is the reference: its nests'
    shapes are chosen among the untiled trials, and a tile is kept only where the whole
    loop ran faster than that untiled loop (each nest at the shape kept for it) by more than
    ``margin``; so never a tile slower than untiled in the same trials."""
    count = max(shapes.values())
    times = np.full((count, sections), np.inf)
    for _ in range(rounds):
        for r in range(count):
            choice = np.array([min(r, shapes.get(s, 1) - 1) for s in range(sections)],
                              dtype=np.int64)
            times[r] = np.minimum(times[r], run(choice))
    untiled = {s: loop[1] for s in loop[2]} if loop is not None else {}
    best = np.zeros(sections, dtype=np.int64)
    for s, n in shapes.items():
        n = min(n, untiled.get(s, n))   # a section of the loop: among the untiled trials
        best[s] = int(np.argmin(times[:n, s]))
        d = (defaults or {}).get(s)
        if d is not None and d < n and times[best[s], s] > (1.0 - margin) * times[d, s]:
            best[s] = d
    if loop is not None:
        best[loop[0]] = _tile_or_not(times, shapes, best, loop, margin)
    return best


def _tile_or_not(times, shapes, best, loop, margin) -> int:
    """``tune``'s choice for the section choosing time tiles: the fastest tile where the
    whole loop ran faster than untiled by more than ``margin``, else its untiled choice."""
    section, untiled, members = loop
    members = list(members)
    # the untiled loop's time a trial: each nest at its shape kept (a nest without shapes,
    # a sparse one, at its best untiled trial)
    plain = sum(float(times[best[g], g]) if g in shapes else float(np.min(times[:untiled, g]))
                for g in members)
    tiled = times[untiled:shapes[section]][:, members].sum(axis=1)
    if not len(tiled):
        return int(best[section])
    r = int(np.argmin(tiled))
    return untiled + r if tiled[r] < (1.0 - margin) * plain else int(best[section])
