"""How an Operator tunes itself: the launch shapes timed in trial runs and remembered per size,
the fused nests timed against their twin built apart, the probes of blocked rows. A part of
``Operator``, mixed into it."""
from __future__ import annotations

import time as _time

import numpy as np

from . import arguments, autotune as tuning
from .. import logger as log, platform as targets
from ..configuration import configuration
from ..distributed import mpi
from ..errors import ExecutionError
from .arguments import bind, ndarray_arguments

#: ``_launch_shapes``'s answer where a fused Operator's nests apart ran faster
_APART = object()


def _best_of_two(run, choice) -> float:
    """The seconds of the sections of the faster of two trial runs at launch shapes
    ``choice`` (``Operator._trial``)."""
    return min(float(np.sum(run(choice))) for _ in range(2))


class Tuning:
    """``Operator``'s tuning: launch shapes, fused or apart, probes."""

    def _fused(self) -> bool:
        return any(k.fusion is not None for k in self.program.steps)

    def _fusion_twin(self):
        """This fused Operator's twin with its nests apart, built once (on first use)."""
        if self._twin is None:
            self._twin = type(self)(self._expressions, **self._settings, _apart=True)
        return self._twin

    def _runs_apart(self, kwargs) -> bool:
        """Whether the autotuner measured the nests apart faster than fused for this run's
        sizes (remembered beside the build); fused where nothing is remembered."""
        if not self._fused() or configuration["fusion"] != "auto":
            return False
        args = {}
        names = arguments.dimension_names(self.program, kwargs, self.name,
                                          self._bindings.grid.stepping_dim.name)
        arguments.bounds(self.program, self._bindings.grid, names, args)
        key = tuning.size_key(self.program, args)
        if key not in self._apart_sizes:   # read once a size (an apply is a hot path)
            found = tuning.Remembered(self._build.source_path.parent).get(tuning.apart_key(key))
            self._apart_sizes[key] = found is not None and bool(found[0])
        return self._apart_sizes[key]

    def _trial_steps(self, args) -> int:
        """Steps a trial runs: ``TRIAL_STEPS``, or more where the backend needs them for a
        representative trial (a batch of time tiles, an even count for two-step passes), no
        more than the run's (``args``' time bounds, where given)."""
        prog = self.program
        if not prog.has_time_loop:
            return 1
        n = max(tuning.TRIAL_STEPS, self._emitter.trial_steps)
        lo, hi = prog.time_bounds
        return min(n, args[hi] - args[lo] + 1) if lo in args and hi in args else n

    def _trial_seconds(self, kwargs) -> float:
        """Tunes the launch shapes for the run ``kwargs`` describes (kept as any tuning's) and
        returns the seconds the sections take a step of the trial at the shapes kept, the
        best of two runs (the run's arrays put back)."""
        self._ensure_built()
        prog = self.program
        kwargs, _ = ndarray_arguments(prog, self._bindings, kwargs)
        with self._temps.borrow() as temps:
            bound = {}
            args, keep = bind(prog, self._bindings, kwargs, temps, self.name,
                              self._attacher(bound))
            written = [bound[n] for n in prog.checks]
            args[prog.checks_param] = None
            shapes = self._launch_shapes(args, written, True, bound)
            if shapes is None:
                shapes = np.zeros(max(len(prog.kernels), 1), dtype=np.int64)
            seconds = _best_of_two(self._trial(args, written, bound), shapes)
            steps = self._trial_steps(args)
            del keep
        return seconds / steps

    def _choose_fusion(self, args, written, bound, choice, key, kwargs) -> bool:
        """Times the fused nests (at the launch shapes just tuned) against the twin with the
        nests apart (at its own), keeps the faster for this size and says which; True: apart.
        Both by the step: the two trials may run different step counts (``_trial_steps``)."""
        fused = _best_of_two(self._trial(args, written, bound), choice) / self._trial_steps(args)
        apart = self._fusion_twin()._trial_seconds(kwargs)
        chosen = tuning.keep_apart(fused, apart)
        tuning.Remembered(self._build.source_path.parent).put(tuning.apart_key(key),
                                                              [int(chosen)])
        self._apart_sizes[key] = chosen
        log.info(f"Operator `{self.name}`: fused nests {1e3 * fused:.2f} ms, apart "
                 f"{1e3 * apart:.2f} ms a step of size {key}: "
                 f"{'apart' if chosen else 'fused'} kept")
        return chosen

    def _launch_shapes(self, args, written, asked, bound, kwargs=None):
        """The tuning argument: the launch shapes kept for this size or tuned now (None:
        the backend's defaults; ``_APART``: a fused Operator tuned now whose nests apart ran
        faster, given the run's ``kwargs``). On a split grid every rank tunes or none does,
        with the slowest rank's trial times, and all keep rank 0's shapes (trials exchange
        halos)."""
        offered = self._emitter.launch_shapes()
        if not offered:
            return None
        prog = self.program
        memory = tuning.Remembered(self._build.source_path.parent)
        key = tuning.size_key(prog, args)
        choice = memory.get(key)
        points = np.prod([args[d.upper] - args[d.lower] + 1 for d in prog.dims])
        steps = args[prog.time_bounds[1]] - args[prog.time_bounds[0]] + 1 \
            if prog.has_time_loop else 1
        want = tuning.wanted(asked, configuration["autotuning"], choice is not None,
                             float(points) * steps)
        dist = self.grid.decomposition if prog.split else None
        if dist is not None:
            choice, want = dist.comm.bcast((choice, want), root=0)
        if want:
            start = _time.perf_counter()
            em = self._emitter
            choice = tuning.tune(self._trial(args, written, bound),
                                 {s: len(v) for s, v in offered.items()},
                                 max(len(prog.kernels), 1), em.tuning_rounds,
                                 em.default_shapes(), em.tuning_margin, em.tuned_loop())
            if dist is None or dist.comm.Get_rank() == 0:
                memory.put(key, choice)
            log.info(f"Operator `{self.name}` autotuned for size {key} in "
                     f"{_time.perf_counter() - start:.2f} s: {self._described(choice, offered)}")
            auto = configuration["fusion"] == "auto"
            if kwargs is not None and auto and self._fused() and \
                    self._choose_fusion(args, written, bound, choice, key, kwargs):
                return _APART
        if choice is None or len(choice) != max(len(prog.kernels), 1):
            return None
        return choice

    def _probe(self, args, asked):
        """(size key, index, probes) of the choice this apply of a size too short to tune
        runs to time it (``autotune.next_probe``), or None: a tuning asked for or refused,
        a split grid, the size's first apply here, fewer than two probes, all timed."""
        prog = self.program
        if asked is not None or configuration["autotuning"] == "off" or prog.split or \
                not prog.has_time_loop:
            return None
        key = tuning.size_key(prog, args)
        if key not in self._probes:   # the first apply: nothing asked of the backend yet
            self._probes[key] = None
            return None
        if self._probes[key] is None:   # found once a size: applies are a hot path
            self._probes[key] = self._emitter.probes(args, targets.openmp_threads())
        probes = self._probes[key]
        if len(probes) < 2:
            return None
        index = tuning.next_probe(tuning.Remembered(self._build.source_path.parent), key,
                                  len(probes))
        return None if index is None else (key, index, probes)

    def _probed(self, probe, args, timers):
        """Notes the seconds a step of the probe this apply ran; once every probe has run,
        says which is kept for the size."""
        key, index, probes = probe
        prog = self.program
        lo, hi = prog.time_bounds
        seconds = float(np.sum(timers)) / max(1, args[hi] - args[lo] + 1)
        memory = tuning.Remembered(self._build.source_path.parent)
        best = tuning.record_probe(memory, key, index, seconds, probes)
        offered = self._emitter.launch_shapes()
        log.debug(f"Operator `{self.name}`: probe {index + 1} of {len(probes)} for size {key} "
                  f"({self._described(probes[index], offered)}): {1e3 * seconds:.3f} ms a step")
        if best is not None:
            log.info(f"Operator `{self.name}`: {self._described(probes[best], offered)} kept "
                     f"for size {key}, the fastest of {len(probes)} applies timed as they ran")

    def _described(self, choice, offered) -> str:
        """The shapes of tuning argument ``choice`` in words, section by section (``offered``:
        the backend's ``launch_shapes()``)."""
        return "; ".join(f"{k.name} {offered[k.section.timer][choice[k.section.timer]]}"
                         for k in self.program.kernels if k.section.timer in offered)

    def _trial(self, args, written, bound):
        """A function that runs a few steps with the launch shapes it is given and returns the
        section timers (on a split grid, the slowest rank's), then puts back every array the
        run wrote (``written``)."""
        prog, trial = self.program, dict(args)
        halos = self._trial_halos(trial, bound)
        if prog.has_time_loop:
            lo, hi = prog.time_bounds
            n = self._trial_steps(args)
            if prog.time_step > 0:
                trial[hi] = args[lo] + n - 1
            else:
                trial[lo] = args[hi] - n + 1
        trial[prog.checks_param] = None
        restore = self._place().preserve(written)

        def run(choice):
            timers = np.zeros(max(len(prog.kernels), 1), dtype=np.float64)
            trial[prog.timers], trial[prog.tuning] = timers.ctypes.data, choice.ctypes.data
            try:
                status = self._cfunction(*[trial[p.name] for p in prog.parameters()])
            finally:   # Ctrl-C lands as the call returns: what the trial wrote goes back first
                restore()
            if halos is not None:
                halos.close()
                if halos.error is not None:
                    halos.raise_error(self.name)
                MPI = mpi.import_mpi()
                halos.dist.cart.Allreduce(MPI.IN_PLACE, timers, op=MPI.MAX)
            if status != 0:
                raise ExecutionError(f"Operator `{self.name}` failed while autotuning: "
                                      f"{self._error_text(status)}")
            return timers
        return run

    def _trial_halos(self, trial, bound):
        """On a split grid: the halo exchange of the tuning trials, in ``trial``."""
        if not self.program.split:
            return None
        halos = self._halos(bound, trial)
        trial[self.program.exchange] = halos.pointer
        trial[self.program.regions] = halos.regions.ctypes.data
        return halos
