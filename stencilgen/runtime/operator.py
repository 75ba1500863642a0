"""The Operator: equations in, a compiled and cached loop program out, run by ``apply``."""
from __future__ import annotations

import ctypes
import threading
import time as _time
from contextlib import contextmanager

import numpy as np

from .. import logger as log
from ..user_warnings import warn_user
from . import finite
from . import longrun
from . import operator_options as options
from .. import platform as targets
from .arguments import bind, ndarray_arguments
from ..compiler.placement import thickness_arguments, with_thickness
from ..compiler.pipeline import compile_program
from ..configuration import configuration
from ..errors import ApplyInterrupted, ExecutionError, InvalidArgument, InvalidOperator
from ..symbolic.functions import DiscreteFunction
from ..distributed.halo_exchange import HaloExchange, SparseSums, ranks_timed
from ..distributed import mpi
from .operator_build import Building
from .operator_tuning import _APART, Tuning
from .profiling import PerformanceSummary, summarize


class Operator(Building, Tuning):
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
            longrun.check_load(self.name)   # spinning threads on a busy machine
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
            try:
                shapes = self._launch_shapes(args, written, autotune, bound, asked)
            except ApplyInterrupted:
                raise
            except KeyboardInterrupt:
                span = [args[b] for b in prog.time_bounds] if prog.has_time_loop else [None] * 2
                raise longrun.interrupted_tuning(self.name, *span) from None
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
