"""The Operator: equations in, a compiled and cached loop program out, run by ``apply``."""
from __future__ import annotations

import ctypes
import threading
import time as _time
import warnings
from contextlib import contextmanager

import numpy as np
import sympy

import jitcache

from . import logger as log
from . import platform
from .arguments import bind
from .compiler import compile_program
from .configuration import configuration
from .errors import InvalidArgument, NumericalWarning, StencilgenError
from .functions import DiscreteFunction
from .profiling import PerformanceSummary, summarize

_CTYPES = {"array": ctypes.c_void_p, "coords": ctypes.c_void_p, "timers": ctypes.c_void_p,
           "index": ctypes.c_long}


class Operator:
    """Compiles equations into one entry point; ``apply`` binds data and runs it.

    ``Operator(eqs, name="Kernel", backend="c", check_finite=None)``; ``str(op)`` /
    ``op.ccode`` is the source. ``apply`` may run from several threads at once.
    """

    def __init__(self, expressions, name="Kernel", backend=None, cflags=None,
                 check_finite=None):
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgument(f"Operator: name must be an identifier, got {name!r}")
        if check_finite not in (None, True, False):
            raise InvalidArgument(f"Operator: check_finite must be True, False or None (the "
                                  f"check-finite setting), got {check_finite!r}")
        self._check_finite = check_finite
        self.name = name
        self._target = platform.select(backend)
        self._cflags = cflags
        start = _time.perf_counter()
        self.program, self._bindings = compile_program(expressions, name,
                                                       self._target.narrow_index)
        self.grid = self._bindings.grid
        self.ccode = self._target.emitter(
            self.program, options=platform.emit_options(self._target.name)).emit()
        self.codegen_seconds = _time.perf_counter() - start
        log.perf(f"Operator `{name}` generated in {self.codegen_seconds:.2f} s")
        self._build = None
        self._build_lock = threading.Lock()
        self._temps = _Temporaries()

    def __str__(self) -> str:
        return self.ccode

    # -- building ------------------------------------------------------------------------------
    def _toolchain(self):
        # cflags None: the backend's defaults (STENCILGEN_CFLAGS applies to C-language backends)
        return platform.toolchain(self._target.name, self._cflags)

    def _ensure_built(self):
        if self._build is not None:
            return False
        with self._build_lock:   # two threads' first applies build once
            if self._build is not None:
                return False
            return self._build_and_load()

    def _build_and_load(self):
        b = jitcache.build(self.ccode, self._toolchain(), self.name,
                           cache_dir=configuration["cache-dir"],
                           backdoor=configuration["jit-backdoor"],
                           entry_point=self.program.entry)
        if b.compiled:
            extra = " (JIT backdoor: edited source)" if b.backdoor else ""
            log.info(f"Operator `{self.name}` jit-compiled `{b.source_path}` in "
                     f"{b.seconds:.2f} s with `{b.compiler}`{extra}")
        else:
            log.info(f"Operator `{self.name}` fetched `{b.source_path}` from jit-cache")
        # the platform may say what the loaded build does at run time (e.g. where it runs)
        where = platform.describe(self._target.name, b.library)
        if where:
            log.info(f"Operator `{self.name}` {where}")
        fn = b.library[self.program.entry]   # item access: a name like `_name` is a CDLL attribute
        fn.restype = ctypes.c_int
        fn.argtypes = [_CTYPES.get(p.kind) or np.ctypeslib.as_ctypes_type(p.dtype)
                       for p in self.program.parameters()]
        self._cfunction = fn
        self._build = b
        return b.compiled

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
    def arguments(self, **kwargs):
        """Every argument of the entry point by C name after defaults and overrides, and the
        arrays that must stay alive while it runs (temporaries fresh, the caller's own)."""
        return bind(self.program, self._bindings, kwargs, {}, self.name)

    def apply(self, **kwargs) -> PerformanceSummary:
        """Run the operator; returns the performance summary (printed at STENCILGEN_LOGGING=PERF)."""
        t0 = _time.perf_counter()
        compiled = self._ensure_built()
        with self._temps.borrow() as temps:   # never shared by two applies running at once
            args, keep = bind(self.program, self._bindings, kwargs, temps, self.name)
            timers = np.zeros(max(len(self.program.kernels), 1), dtype=np.float64)
            args[self.program.timers] = timers.ctypes.data
            status = self._cfunction(*[args[p.name] for p in self.program.parameters()])
            del keep
        if status != 0:
            raise StencilgenError(f"Operator `{self.name}` failed: {self._error_text(status)}")
        summary = summarize(self.program, args, timers, _time.perf_counter() - t0, compiled)
        for line in summary.report():
            log.perf(line)
        check = self._check_finite
        if configuration["check-finite"] if check is None else check:
            self._check_written(kwargs, args)
        return summary

    def _check_written(self, kwargs, args):
        """Warn (NumericalWarning and a log WARNING) where a field the run wrote holds NaN/Inf."""
        prog = self.program
        span = (args[prog.time_bounds[0]], args[prog.time_bounds[1]]) \
            if prog.has_time_loop else None
        written = last_written(prog, span)
        fields = {}
        for name in written:
            f = kwargs.get(prog.array(name).user)
            fields[name] = f if isinstance(f, DiscreteFunction) else self._bindings.functions[name]
        start = _time.perf_counter()
        bad = FINITE_CHECKS.get(self._target.name, host_nonfinite)(self, written, fields)
        log.debug(f"Operator `{self.name}` checked {', '.join(f.name for f in fields.values())} "
                  f"for NaN/Inf in {_time.perf_counter() - start:.4f} s")
        if bad:
            text = _blowup_message(self.name, prog, bad, fields, written, span, kwargs.get("dt"))
            log.warning(text)
            warnings.warn(text, NumericalWarning, stacklevel=3)

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


# -- the check for blow-ups after apply ----------------------------------------------------------

def _slot(arr, index, step, modulo, time):
    """The time slot of ``arr`` that ``index`` (a written access's time index) is at ``step``;
    None where there is no time axis or it cannot be told (then all of ``arr`` is checked)."""
    if arr.time_size is None or step is None or index is None:
        return None
    if index in modulo:
        return (step + modulo[index].shift) % modulo[index].modulo
    value = sympy.sympify(index).subs(time, step)
    return int(value) % arr.time_size if value.is_Integer else None


def last_written(program, span) -> dict:
    """The user arrays ``program`` writes (by C name) with the time slots its last step (of
    ``span`` = (time_m, time_M)) wrote, or None for the whole array (no time axis)."""
    step = None if span is None else span[0] if getattr(program, "time_step", 1) < 0 else span[1]
    modulo = {ti.symbol: ti for ti in program.time_indices}
    out: dict = {}
    for k in program.kernels:
        for name, offsets in k.writes.items():
            arr = program.array(name)
            if arr.temporary:
                continue
            slots = out.setdefault(name, set())
            slots |= {_slot(arr, o[0] if o else None, step, modulo, program.time) for o in offsets}
    return {n: None if None in s else tuple(sorted(s)) for n, s in out.items()}


def _nonfinite_count(view) -> int:
    """NaN/Inf values in ``view``: one sum, which NaN and Inf reach; counted only when the sum
    is not finite (finite data may overflow it)."""
    if view.dtype.kind != "f":
        return 0
    with np.errstate(all="ignore"):
        if np.isfinite(np.add.reduce(view, axis=None)):
            return 0
    return int(view.size - np.count_nonzero(np.isfinite(view)))


def host_nonfinite(op, written, fields) -> dict:
    """The host check: per written array (C name) the NaN/Inf values in its last slots."""
    bad = {}
    for name, slots in written.items():
        data = fields[name].data_with_halo
        count = sum(_nonfinite_count(v) for v in
                    ([data] if slots is None else [data[s] for s in slots]))
        if count:
            bad[name] = count
    return bad


# backend name -> check(op, written, fields) -> {C name: NaN/Inf count}, with the arguments of
# host_nonfinite; a backend that reduces on the device registers its own, the rest use the host's
FINITE_CHECKS: dict = {}


def _blowup_message(op_name, prog, bad, fields, written, span, dt) -> str:
    names = []
    for name, count in bad.items():
        f, user, slots = fields[name], prog.array(name).user, written[name]
        shown = user if f.name == user else f"{user}={f.name}"
        where = "" if slots is None else \
            " in " + ", ".join(f"{f.name}.data[{s}]" for s in slots) + " (the last state)"
        names.append(f"{shown} ({count} values{where})")
    when = f"time steps {span[0]}..{span[1]}" + (f" with dt={dt}" if dt is not None else "") \
        if span else "the run"
    verb = "holds" if len(names) == 1 else "hold"
    return (f"Operator `{op_name}`: after {when}, {', '.join(names)} {verb} NaN or Inf: the run "
            "blew up or read non-finite input. Check that dt is below the scheme's stability "
            "limit and that every input holds finite values (np.isfinite(f.data).all()); "
            "Operator(..., check_finite=False) or STENCILGEN_CHECK_FINITE=0 turns this check off.")
