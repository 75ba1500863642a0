"""The Operator: equations in, a compiled and cached loop program out, run by ``apply``."""
from __future__ import annotations

import ctypes
import threading
import time as _time
from contextlib import contextmanager

import numpy as np

import jitcache

from .. import logger as log
from ..user_warnings import warn_user
from . import arguments
from . import autotune as tuning
from . import finite
from . import longrun
from . import operator_options as options
from ..data import places
from .. import platform as targets
from .arguments import bind, ndarray_arguments
from ..compiler.placement import thickness_arguments, with_thickness
from ..compiler.pipeline import compile_program
from ..configuration import configuration
from ..errors import ExecutionError, InvalidArgument, InvalidOperator
from ..symbolic.functions import DiscreteFunction
from ..distributed.halo_exchange import HaloExchange, SparseSums, ranks_timed
from ..distributed import mpi
from .profiling import PerformanceSummary, summarize

#: ``_launch_shapes``'s answer where a fused Operator's nests apart ran faster
_APART = object()


def _best_of_two(run, choice) -> float:
    """The seconds of the sections of the faster of two trial runs at launch shapes
    ``choice`` (``Operator._trial``)."""
    return min(float(np.sum(run(choice))) for _ in range(2))

_CTYPES = {"array": ctypes.c_void_p, "coords": ctypes.c_void_p, "timers": ctypes.c_void_p,
           "checks": ctypes.c_void_p, "tuning": ctypes.c_void_p, "control": ctypes.c_void_p,
           "index": ctypes.c_long, "exchange": ctypes.c_void_p,
           "regions": ctypes.c_void_p}


class Operator:
    """Compiles equations into one entry point; ``apply`` binds data and runs it.

    ``Operator(eqs, name="Kernel", backend="c", check_finite=None, nested="extended")``;
    ``nested="domain"`` takes inner derivatives of nested ones as zero beyond the domain
    (Devito evaluates them there from the halos). ``str(op)`` / ``op.ccode`` is the source.
    ``apply`` may run from several threads at once.
    """

    def __init__(self, expressions, name="Kernel", backend=None, cflags=None,
                 check_finite=None, *, language=None, platform=None, opt=None, subs=None,
                 nested="extended", _apart=False, _unfolded=False, **unknown):
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgument(f"Operator: name must be an identifier, got {name!r}")
        if unknown:   # Devito's Operator takes any keyword (its solvers pass theirs through)
            warn_user(f"Operator `{name}`: ignored unknown argument(s) "
                          f"{', '.join(f'{k}={v!r}' for k, v in sorted(unknown.items()))}; "
                          f"they have no meaning here (Devito ignores them too)")
        if check_finite not in (None, True, False):
            raise InvalidArgument(f"Operator: check_finite must be True, False or None (the "
                                  f"check-finite setting), got {check_finite!r}")
        if nested not in options.NESTED:
            raise InvalidArgument(f"Operator: nested must be one of "
                                  f"{', '.join(map(repr, options.NESTED))} (where an inner "
                                  f"derivative of a nested one is evaluated), got {nested!r}")
        self._check_finite = check_finite
        self.name = name
        # what a thickness override at apply rebuilds the Operator from (SubDimensions)
        self._expressions = expressions
        self._settings = dict(name=name, backend=backend, cflags=cflags,
                              check_finite=check_finite, language=language,
                              platform=platform, opt=opt, subs=subs, nested=nested)
        self._thickness = thickness_arguments(expressions)
        self._variants = {}
        self._primed: set = set()   # communicators whose halos have moved once (``_halos``)
        backend = options.backend_of(name, backend, language, platform)
        options.check_opt(name, opt)
        self._target = targets.select(backend)
        self._cflags = cflags
        start = _time.perf_counter()
        # _apart: the twin of a fused Operator, its nests apart (``_fusion_twin``)
        self.program, self._bindings = compile_program(
            expressions, name, self._target.narrow_index, self._target.flops_per_byte,
            None if _apart else self._target.fusion, nested, not _unfolded,
            self._target.zero_split)
        self._twin = None
        self._apart_sizes: dict = {}   # size key -> the nests apart run (remembered choice)
        # size key -> the backend's probes for it (None until the size's second apply here)
        self._probes: dict = {}
        self.grid = self._bindings.grid
        self._bindings.spacings = options.spacing_subs(name, subs, self.grid)
        self._emitter = self._target.emitter(
            self.program, options=targets.emit_options(self._target.name))
        refused = self._emitter.refusal()
        if refused:
            raise InvalidOperator(f"Operator `{name}`: {refused}")
        self.ccode = self._emitter.emit()
        for note in self._emitter.notes:   # what the backend chose, and why
            log.info(f"Operator `{name}`: {note}")
        self.codegen_seconds = _time.perf_counter() - start
        log.perf(f"Operator `{name}` generated in {self.codegen_seconds:.2f} s")
        self._build = None
        self._where = None
        self._build_lock = threading.Lock()
        self._temps = _Temporaries()

    def __str__(self) -> str:
        return self.ccode

    # -- building ------------------------------------------------------------------------------
    def _toolchain(self):
        # cflags None: the backend's defaults (STENCILGEN_CFLAGS applies to C-language backends)
        return targets.toolchain(self._target.name, self._cflags)

    def _ensure_built(self):
        if self._build is not None:
            return False
        with self._build_lock:   # two threads' first applies build once
            if self._build is not None:
                return False
            return self._build_and_load()

    def _check_storage(self):
        """A clear error where the compiler cannot store a 16-bit format the program uses."""
        tc = self._toolchain()
        for fmt, (probe, needs) in self._emitter.storage_probes().items():
            failed = jitcache.compile_failure(tc, probe)
            if failed:
                users = ", ".join(a.user for a in self.program.arrays if a.store == fmt)
                raise InvalidOperator(
                    f"Operator `{self.name}` stores {users} as {fmt}, which the "
                    f"{self._target.name} compiler {tc.cc} ({tc.version()}) cannot build (it "
                    f"needs {needs}); store them as float32 or bfloat16, or use another "
                    f"compiler. The compiler said:\n{failed[-1500:]}")

    def _build_and_load(self):
        self._check_storage()
        try:
            b = jitcache.build(self.ccode, self._toolchain(), self.name,
                               cache_dir=configuration["cache-dir"],
                               backdoor=configuration["jit-backdoor"],
                               entry_point=self.program.entry)
        except jitcache.JitCacheError as exc:
            if "GOACC" not in str(exc):
                raise
            # another library's libgomp.so.1, without OpenACC, was loaded first (PyTorch's)
            raise ExecutionError(
                f"Operator `{self.name}`: its OpenACC build needs the compiler's libgomp, but "
                f"this process loaded another libgomp.so.1 first, without OpenACC ({exc}). "
                "PyTorch's wheels bring one: import torch through "
                "stencilgen.seismic.autograd.import_torch() (it loads the compiler's first), "
                "or build OpenACC Operators before importing torch, or use backend='c' or "
                "'cuda'") from exc
        if b.compiled:
            extra = " (JIT backdoor: edited source)" if b.backdoor else ""
            # the file the compiler read: the generated copy when the user's edit is not used
            log.info(f"Operator `{self.name}` jit-compiled `{b.compiled_from or b.source_path}` "
                     f"in {b.seconds:.2f} s with `{b.compiler}`{extra}")
            if configuration["debug"] and b.log:   # e.g. gcc's vectorisation report
                log.info(f"Operator `{self.name}`: the compiler said:\n{b.log}")
        else:
            log.info(f"Operator `{self.name}` fetched `{b.source_path}` from jit-cache")
        # the platform may say what the loaded build does at run time (e.g. where it runs)
        where = targets.describe(self._target.name, b.library)
        if where:
            log.info(f"Operator `{self.name}` {where}")
        fn = b.library[self.program.entry]   # item access: a name like `_name` is a CDLL attribute
        fn.restype = ctypes.c_int
        fn.argtypes = [_CTYPES.get(p.kind) or np.ctypeslib.as_ctypes_type(p.dtype)
                       for p in self.program.parameters()]
        self._cfunction = fn
        self._sigint = longrun.sigint_functions(b.library)   # Ctrl-C between time steps
        self._build = b
        return b.compiled

    def _place(self):
        """Where the build's arrays live while it runs (``stencilgen.data.places``), found on
        first use: a GPU place needs the GPU, which building does not."""
        if self._where is None:
            try:
                self._where = places.place_for(self._emitter.residency, self._build.library,
                                               self._toolchain())
            except ExecutionError as exc:
                raise ExecutionError(f"Operator `{self.name}` failed: {exc}") from None
        return self._where

    @property
    def residency(self) -> str:
        """Where its fields live while it runs: "host", "cuda" or "openacc"."""
        return self._emitter.residency

    @property
    def cfunction(self):
        """The loaded entry point (compiling or fetching it on first use)."""
        self._ensure_built()
        return self._cfunction

    @property
    def source_path(self):
        self._ensure_built()
        return self._build.source_path

    # -- running ---------------------------------------------------------------------------------
    def arguments(self, **kwargs) -> dict:
        """Devito's ``op.arguments(...)``: every argument of the entry point after defaults
        and overrides, by name (``time_M``, ``x_m``, ``dt``, the Constants' and factors'
        names; arrays as the addresses the code reads)."""
        return dict(self._arguments(**kwargs)[0])

    def _arguments(self, **kwargs):
        """Every argument of the entry point by C name after defaults and overrides (arrays
        where the backend reads them: on the GPU for CUDA), and what must stay alive while it
        runs (temporaries fresh, the caller's own)."""
        self._ensure_built()
        return bind(self.program, self._bindings, kwargs, {}, self.name, self._attacher({}))

    def _attacher(self, bound: dict):
        """The ``attach`` of ``bind``: the pointers of the arrays where the backend reads them
        (device copies made and brought up to date), noting each storage in ``bound``."""
        em, place = self._emitter, self._place()

        def attach(items):
            bound.update({arr.name: st for arr, st, _ in items})
            for _, st, _ in items:   # a DataReference's array may have been written directly
                if st.external and st.newer != "device":
                    st.host_written()
            return place.attach([(st, em.device_layout(arr, st.shape, st.dtype.itemsize, h))
                                 for arr, st, h in items])
        return attach

    def __call__(self, **kwargs) -> PerformanceSummary:
        """``op(...)`` is ``op.apply(...)``."""
        return self.apply(**kwargs)

    def apply(self, autotune=None, **kwargs) -> PerformanceSummary:
        """Run the operator; returns the performance summary (printed at STENCILGEN_LOGGING=PERF).

        ``autotune``: True times the launch shapes the backend offers first (a few steps
        each) and keeps the fastest for this size; False uses those kept or the defaults;
        None (default) tunes by itself a large run of a size not tuned yet (see
        ``stencilgen.runtime.autotune``)."""
        variant = self._variant(kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k not in self._thickness}
        if variant is not None:
            return variant.apply(autotune=autotune, **kwargs)
        t0 = _time.perf_counter()
        compiled = self._ensure_built()
        if autotune is not True and self._runs_apart(kwargs):
            return self._fusion_twin().apply(autotune=autotune, **kwargs)
        asked = dict(kwargs)
        if self._emitter.openmp_threads:
            longrun.check_fork(self.name)   # a forked child would hang in GNU OpenMP
        prog, check = self.program, self._check_finite
        check = configuration["check-finite"] if check is None else check
        kwargs, arrays = ndarray_arguments(prog, self._bindings, kwargs)
        with self._temps.borrow() as temps:   # never shared by two applies running at once
            bound = {}
            args, keep = bind(prog, self._bindings, kwargs, temps, self.name,
                              self._attacher(bound))
            written = [bound[n] for n in prog.checks]
            timers = np.zeros(max(len(prog.kernels), 1), dtype=np.float64)
            args[prog.timers] = timers.ctypes.data
            span = (args[prog.time_bounds[0]], args[prog.time_bounds[1]]) \
                if prog.has_time_loop else None
            fields = self._written_fields(kwargs)
            checks = finite.check_ranges(prog, span, fields) if check and prog.checks else None
            args[prog.checks_param] = None if checks is None else checks.ctypes.data
            shapes = self._launch_shapes(args, written, autotune, bound, asked)
            if shapes is _APART:
                del keep
                return self._fusion_twin().apply(autotune=False, **asked)
            probe = self._probe(args, autotune) if shapes is None else None
            if probe is not None:
                shapes = np.asarray(probe[2][probe[1]], dtype=np.int64)
            args[prog.tuning] = None if shapes is None else shapes.ctypes.data
            keep.append(shapes)
            split = self._split(args, bound, kwargs) if prog.split else None
            run = self._run(args, written, split)
            if probe is not None and not run.stopped:
                self._probed(probe, args, timers)
            del keep
        for array, values in arrays:
            array[...] = values()
        for st in written:   # a DataReference's array is the values: brought up to date
            if st.external:
                st.host()
        if run.stopped:
            raise self._interrupted(run, timers, _time.perf_counter() - t0, compiled, fields)
        wall, ranks = _time.perf_counter() - t0, ()
        if prog.split:
            wall, ranks = ranks_timed(self.grid.decomposition, timers, wall, split[0])
        summary = summarize(prog, args, timers, wall, compiled, ranks,
                            self._emitter.timed_together())
        for line in summary.report():
            log.perf(line)
        if checks is not None:
            finite.report(self.name, prog, checks[:, 2], fields, span, kwargs.get("dt"))
        return summary

    def _variant(self, kwargs):
        """The Operator for the SubDimension thicknesses ``kwargs`` set (Devito's
        ``x_ltkn0=``), built once per set of values; None where they are the built ones."""
        given = {k: kwargs[k] for k in self._thickness if k in kwargs}
        changed = {}
        for key, value in given.items():
            d, side = self._thickness[key]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or \
                    value < 0:
                raise InvalidArgument(f"apply: {key}={value!r}; give a non-negative integer "
                                      f"(the thickness of {d.name})")
            if int(value) != d.thickness[0 if side == "l" else 1]:
                changed[key] = int(value)
        if not changed:
            return None
        key = tuple(sorted(changed.items()))
        if key not in self._variants:
            log.info(f"Operator `{self.name}`: built again for "
                     f"{', '.join(f'{k}={v}' for k, v in key)}")
            self._variants[key] = Operator(
                with_thickness(self._expressions, changed, self._thickness), **self._settings)
        return self._variants[key]

    def _split(self, args, bound, kwargs):
        """On a split grid: the halo exchange the entry point calls (arrays never written
        exchanged now) and the receivers' sums over the ranks, their rows cleared."""
        prog, dist = self.program, self.grid.decomposition
        exchange = self._halos(bound, args)
        args[prog.exchange] = exchange.pointer
        args[prog.regions] = exchange.regions.ctypes.data
        functions = {a.name: kwargs.get(a.user, self._bindings.functions.get(a.name))
                     for a in prog.arrays if a.sparse}
        sums = SparseSums(prog, dist, functions, args)
        sums.clear()
        exchange.start(args[prog.time_bounds[0]] if prog.has_time_loop else 0)
        return exchange, sums

    def _run(self, args, written, split=None) -> longrun.Run:
        """Call the entry point with ``args`` (Ctrl-C stops it between time steps, a long run
        reports its progress) and note that the storages ``written`` changed where it ran;
        raises if it failed. ``split``: the halo exchange and receivers' sums (MPI)."""
        run = longrun.Run(self.name, self.program, args)
        t0 = _time.perf_counter()
        status = run.call(self._cfunction, self._sigint,
                          [args[p.name] for p in self.program.parameters()])
        if split is not None:   # a GPU run's entry point returns after its last kernel
            split[0].elapsed = _time.perf_counter() - t0
        if self._emitter.openmp_threads:
            longrun.openmp_ran()   # a process forked from now on is checked
        place = self._place()
        for st in written:
            place.written(st)
        if split is not None:
            exchange, sums = split
            exchange.close()
            if exchange.error is not None:
                exchange.raise_error(self.name)
            sums.sum()
        if status != 0:
            text = self._error_text(status) + place.settle(written)
            raise ExecutionError(f"Operator `{self.name}` failed: {text}")
        return run

    def _interrupted(self, run, timers, wall, compiled, fields):
        """The ApplyInterrupted of a run Ctrl-C stopped, with the summary of its steps."""
        prog, last, summary, span = self.program, run.last_step(), None, None
        if last is not None:
            part = dict(run.args)
            part[prog.time_bounds[1 if prog.time_step > 0 else 0]] = last
            summary = summarize(prog, part, timers, wall, compiled,
                                together=self._emitter.timed_together())
            span = tuple(part[b] for b in prog.time_bounds)
        written = finite.last_written(prog, span) if span else {}
        return longrun.interrupted(run, summary, fields, written)

    # -- fused nests or apart: the autotuner's choice ------------------------------------------
    def _fused(self) -> bool:
        return any(k.fusion is not None for k in self.program.steps)

    def _fusion_twin(self):
        """This fused Operator's twin with its nests apart, built once (on first use)."""
        if self._twin is None:
            self._twin = Operator(self._expressions, **self._settings, _apart=True)
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
            status = self._cfunction(*[trial[p.name] for p in prog.parameters()])
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

    def _halos(self, bound, args) -> HaloExchange:
        """The halo exchange of a run (or of tuning trials) with ``args``. The first on a
        communicator moves every halo once before anything is timed: a transport's first
        messages set it up (NCCL connects its peers, CuPy builds its packing kernels), and
        that second or so belongs to no time step (without it a run's figures depended on
        whether tuning trials had run before it in the same process)."""
        prog, dist = self.program, self.grid.decomposition
        halos = HaloExchange(prog, dist, bound, mpi.mode() == "overlap", self._place())
        key = dist.cart.py2f()
        if key not in self._primed:
            halos.prime(args[prog.time_bounds[0]] if prog.has_time_loop else 0)
            self._primed.add(key)
        return halos

    def _written_fields(self, kwargs) -> dict:
        """The Functions (the overrides where given) of the arrays the run writes, by C name."""
        out = {}
        for name in self.program.checks:
            f = kwargs.get(self.program.array(name).user)
            out[name] = f if isinstance(f, DiscreteFunction) else self._bindings.functions[name]
        return out

    def _error_text(self, status):
        """The message the generated code left in ``stencilgen_error`` (if it has one)."""
        try:
            fn = self._build.library.stencilgen_error
        except AttributeError:
            return f"error status {status}"
        fn.restype = ctypes.c_char_p
        fn.argtypes = []
        text = fn()
        return text.decode(errors="replace") if text else f"error status {status}"


class _Temporaries:
    """Sets of temporary arrays, one per apply running at that moment: reused by later
    applies (no reallocation in a single thread), never shared by two at once."""

    def __init__(self):
        self._free: list[dict] = []
        self._lock = threading.Lock()

    @contextmanager
    def borrow(self):
        with self._lock:
            temps = self._free.pop() if self._free else {}
        try:
            yield temps
        finally:
            with self._lock:
                self._free.append(temps)


last_written = finite.last_written   # where tests and tools look for it
