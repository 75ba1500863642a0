"""The Operator: equations in, a compiled and cached loop program out, run by ``apply``."""
from __future__ import annotations

import ctypes
import math
import time as _time

import numpy as np
import sympy

import jitcache

from . import logger as log
from . import platform
from .configuration import configuration
from .dimensions import time_dimension
from .errors import InvalidArgument, StencilgenError
from .functions import DiscreteFunction
from .ir.nodes import Assign, Program
from .ir.optimize import InvariantHoister, ScalarHoister
from .ir.nodes import POINT, SparseKernel
from .ir.schedule import build_kernel, build_sparse_kernel, classify, fuse
from .lowering import (IndexedEq, Registry, TempFunction, check_equations, expand_derivatives,
                       finalize_temporaries, index)
from .profiling import PerfEntry, PerformanceSummary
from .sparse import check_coordinates


class Operator:
    """Compiles equations into one C entry point; ``apply`` binds data and runs it.

    ``Operator(eqs, name="Kernel", backend="c")``; ``str(op)`` / ``op.ccode`` is the source.
    """

    def __init__(self, expressions, name="Kernel", backend=None, cflags=None):
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgument(f"Operator: name must be a C identifier, got {name!r}")
        self.name = name
        self._target = platform.select(backend)
        self._cflags = cflags
        start = _time.perf_counter()
        self.program, self._registry = self._lower(expressions)
        self.ccode = self._target.emitter(
            self.program, options=platform.emit_options(self._target.name)).emit()
        self.codegen_seconds = _time.perf_counter() - start
        log.perf(f"Operator `{name}` generated in {self.codegen_seconds:.2f} s")
        self._build = None
        self._temps: dict = {}

    # -- the compiler, pass by pass ------------------------------------------------------------
    def _lower(self, expressions):
        eqs, grid = check_equations(expressions)
        dims = grid.dimensions
        names = {f.name for e in eqs for f in (e.lhs.atoms(DiscreteFunction) |
                                                 e.rhs.atoms(DiscreteFunction))}
        names |= {d.name for d in dims} | {"time", "dt", "timers"}
        # 1. derivatives -> weighted shifts (nested space derivatives through temporaries)
        eqs = expand_derivatives(eqs, grid, names)
        # 2. function accesses -> array accesses, parameters collected, halos checked
        reg = Registry(grid)
        indexed = [index(e, reg) for e in eqs]
        has_time = any(a.time_size is not None for a in reg.arrays.values())
        # 3. which equations run every time step
        classify(indexed, has_time)
        before = [e for e in indexed if not e.time_dependent]
        steps = [e for e in indexed if e.time_dependent]
        # 4. time-invariant costly subexpressions -> arrays computed before the time loop
        before += self._hoist_invariants(steps, before, reg, grid, names)
        finalize_temporaries(reg)
        # 5. loop nests, each optimised (factorisation, scalar hoisting, CSE, counts)
        arrays = list(reg.arrays.values())
        hoister = ScalarHoister(set(dims) | {time_dimension(), POINT} |
                                {ti.symbol for ti in reg.time_indices.values()}, names)
        counter = iter(range(10 ** 6))
        kernels = {}
        for stage, stage_eqs in (("before", before), ("time", steps)):
            kernels[stage] = []
            # sparse operations keep their place; the equations between them are fused
            runs, run = [], []
            for e in stage_eqs:
                if e.sparse_kind:
                    runs += [run, e]
                    run = []
                else:
                    run.append(e)
            runs.append(run)
            for item in runs:
                if isinstance(item, list):
                    kernels[stage] += [build_kernel(f"section{next(counter)}", g, dims, stage,
                                                    names, hoister, arrays)
                                       for g in fuse(item, dims)]
                else:
                    kernels[stage].append(build_sparse_kernel(
                        f"section{next(counter)}", item, dims, stage, hoister, arrays))
        prologue = [Assign(s, v) for s, v in hoister.prologue]
        program = Program(name=self.name, dtype=grid.dtype, dims=dims, arrays=arrays,
                          scalars=sorted(reg.scalars.values(), key=lambda s: s.name),
                          prologue=prologue, before=kernels["before"], steps=kernels["time"],
                          after=[], time_indices=sorted(reg.time_indices.values(),
                                                        key=lambda t: t.symbol.name),
                          has_time_loop=has_time)
        self.grid = grid
        return program, reg

    def _hoist_invariants(self, steps, before, reg, grid, names):
        dims = grid.dimensions
        varying = {e.lhs.base.name for e in steps}
        invariant = {a.name for a in reg.arrays.values()
                     if a.time_size is None and a.name not in varying and not a.sparse}
        halos = {rec.name: rec.halo for rec in reg.arrays}
        scalars = {sympy.Symbol(n, real=True) for n in reg.scalars} | set(reg.constants.values())
        scalars |= {d.spacing for d in dims} | {time_dimension().spacing}
        hoister = InvariantHoister(dims, invariant, halos, scalars)
        hoister.scan([e.rhs for e in steps if not e.sparse_kind])
        table, new_eqs = {}, []
        for i, (canon, rng) in enumerate(hoister.feasible().items()):
            name = _fresh(names, "inv")
            temp = TempFunction(name=name, grid=grid, dtype=grid.dtype)
            arr = reg.array(temp)
            temp.field.halo = tuple(max(lo, hi) for lo, hi in rng)
            reg.reach[name] = list(temp.field.halo)
            table[canon] = arr.base
            new_eqs.append(IndexedEq(arr.base[dims], canon, False, extent=rng))
        for e in steps:
            if not e.sparse_kind:
                e.rhs = hoister.rewrite(e.rhs, table)
        return new_eqs

    def __str__(self) -> str:
        return self.ccode

    # -- building ------------------------------------------------------------------------------
    def _toolchain(self):
        # None: the backend's defaults (STENCILGEN_CFLAGS applies to the C-language backends)
        return platform.toolchain(self._target.name, self._cflags)

    def _ensure_built(self):
        if self._build is not None:
            return False
        toolchain = self._toolchain()
        backdoor = configuration["jit-backdoor"]
        self._build = jitcache.build(self.ccode, toolchain, self.name,
                                     cache_dir=configuration["cache-dir"], backdoor=backdoor)
        b = self._build
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
        fn = getattr(b.library, self.name)
        fn.restype = ctypes.c_int
        fn.argtypes = [self._ctype(p) for p in self.program.parameters()]
        self._cfunction = fn
        return b.compiled

    @staticmethod
    def _ctype(p):
        if p.kind in ("array", "coords", "timers"):
            return ctypes.c_void_p
        if p.kind == "index":
            return ctypes.c_long
        return ctypes.c_float if np.dtype(p.dtype) == np.float32 else ctypes.c_double

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
        """Every argument of the entry point by name, after defaults and overrides."""
        prog, reg = self.program, self._registry
        known = {rec.name for rec in reg.arrays if not isinstance(reg.functions[rec], TempFunction)}
        known |= set(reg.constants) | {"dt", "time_m", "time_M"}
        known |= {f"{d.name}_{s}" for d in prog.dims for s in ("m", "M")}
        unknown = set(kwargs) - known
        if unknown:
            raise InvalidArgument(f"Operator `{self.name}`.apply: unknown argument(s) "
                                  f"{', '.join(sorted(unknown))}; it accepts "
                                  f"{', '.join(sorted(known))}")
        args, keep = {}, []
        for rec, arr in reg.arrays.items():
            data = self._array_data(rec, arr, kwargs.get(rec.name))
            keep.append(data)
            args[f"{arr.name}_vec"] = data.ctypes.data
            if arr.sparse:
                f = kwargs.get(rec.name, reg.functions[rec])
                check_coordinates(f)
                coords = np.ascontiguousarray(f.coordinates.data, dtype=np.float64)
                keep.append(coords)
                args[f"{arr.name}_coords"] = coords.ctypes.data
                args[f"{arr.name}_np"] = f.npoint
                continue
            halo = (np.array(data.shape[-len(prog.dims):]) - np.array(self.grid.shape)) // 2
            for i, h in enumerate(halo):
                args[f"{arr.name}_h{i}"] = int(h)
        for d, n in zip(prog.dims, self.grid.shape):
            args[f"{d.name}_size"] = n
            args[f"{d.name}_m"] = int(kwargs.get(f"{d.name}_m", 0))
            args[f"{d.name}_M"] = int(kwargs.get(f"{d.name}_M", n - 1))
            if not 0 <= args[f"{d.name}_m"] <= args[f"{d.name}_M"] <= n - 1:
                raise InvalidArgument(f"apply: {d.name}_m={args[f'{d.name}_m']} and "
                                      f"{d.name}_M={args[f'{d.name}_M']} must satisfy "
                                      f"0 <= {d.name}_m <= {d.name}_M <= {n - 1}")
        if prog.has_time_loop:
            args["time_m"], args["time_M"] = self._time_bounds(kwargs)
        spacing = dict(zip((d.spacing.name for d in prog.dims), self.grid.spacing))
        spacing.update({f"o_{d.name}": o for d, o in zip(prog.dims, self.grid.origin)})
        for s in prog.scalars:
            if s.name in spacing:
                value = spacing[s.name]
            elif s.name in reg.constants:
                value = kwargs.get(s.name, reg.constants[s.name].value)
            elif s.name == "dt":
                if "dt" not in kwargs:
                    raise InvalidArgument(f"Operator `{self.name}`.apply: the equations use dt; "
                                          "pass it, e.g. op.apply(time_M=100, dt=0.5)")
                value = kwargs["dt"]
            else:
                value = kwargs[s.name]
            try:
                args[s.name] = float(value)
            except (TypeError, ValueError):
                raise InvalidArgument(f"apply: {s.name}={value!r} is not a number") from None
            if not math.isfinite(args[s.name]):
                raise InvalidArgument(f"apply: {s.name}={value!r} is not finite")
        return args, keep

    def _array_data(self, rec, arr, override):
        f = self._registry.functions[rec]
        if arr.temporary:
            halo = rec.halo
            shape = tuple(n + 2 * h for n, h in zip(self.grid.shape, halo))
            data = self._temps.get(rec.name)
            if data is None or data.shape != shape:
                data = self._temps[rec.name] = np.zeros(shape, dtype=arr.dtype)
            return data
        if override is None:
            return f.data_with_halo
        if isinstance(override, DiscreteFunction):
            ok = (override.grid.shape == rec.grid.shape and override.dtype == rec.dtype
                  and override.field.time_size == rec.time_size
                  and (not arr.sparse
                       or override.field.shape_with_halo == rec.shape_with_halo))
            if not ok:
                raise InvalidArgument(
                    f"apply: {rec.name}={override.name} does not match {rec.name} (grid shape "
                    f"{rec.grid.shape}, dtype {np.dtype(rec.dtype).name}, time slots "
                    f"{rec.time_size}); pass a function built like {rec.name}")
            data = override.data_with_halo
            if not arr.sparse and any(h < r for h, r in zip(override.halo, rec.halo)):
                raise InvalidArgument(f"apply: {rec.name}={override.name} has halo "
                                      f"{override.halo}, narrower than the stencil needs {rec.halo}")
            return data
        raise InvalidArgument(f"apply: {rec.name} must be overridden with a Function of the same "
                              f"kind, got {type(override).__name__}")

    def _saved_shifts(self):
        """Each access of a directly indexed time array: (name, slots, time shift)."""
        out = []
        t = time_dimension()
        for k in self.program.kernels:
            for table in (k.reads, k.writes):
                for name, offs in table.items():
                    arr = self.program.array(name)
                    if arr.time_size is None or arr.modulo:
                        continue
                    for o in offs:
                        out.append((name, arr.time_size, int(o[0] - t)))
        return out

    def _time_bounds(self, kwargs):
        saved = self._saved_shifts()
        lo_default = max([-s for _, _, s in saved] + [0])
        time_m = kwargs.get("time_m", lo_default)
        if "time_M" in kwargs:
            time_M = kwargs["time_M"]
        elif saved:
            time_M = min(n - 1 - s for _, n, s in saved)
        else:
            raise InvalidArgument(f"Operator `{self.name}`.apply: missing time bounds; pass "
                                  "time_M (the last step; time_m defaults to 0), e.g. "
                                  "op.apply(time_M=100, dt=0.5)")
        for key, v in (("time_m", time_m), ("time_M", time_M)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise InvalidArgument(f"apply: {key}={v!r} must be an integer")
        if time_m < 0 or time_M < time_m:
            raise InvalidArgument(f"apply: time_m={time_m}, time_M={time_M} must satisfy "
                                  "0 <= time_m <= time_M")
        for name, n, s in saved:
            if time_M + s > n - 1 or time_m + s < 0:
                sparse = self.program.array(name).sparse
                held = f"has nt={n} time samples" if sparse else f"saves {n} time steps"
                raise InvalidArgument(
                    f"apply: {name} {held} but time steps {time_m}..{time_M} access index "
                    f"{time_m + s if time_m + s < 0 else time_M + s}; use time_M <= {n - 1 - s} "
                    f"or a larger {'nt' if sparse else 'save='}")
        return int(time_m), int(time_M)

    def apply(self, **kwargs) -> PerformanceSummary:
        """Run the operator; returns the performance summary (printed at STENCILGEN_LOGGING=PERF)."""
        t0 = _time.perf_counter()
        compiled = self._ensure_built()
        args, keep = self.arguments(**kwargs)
        timers = np.zeros(max(len(self.program.kernels), 1), dtype=np.float64)
        args["timers"] = timers.ctypes.data
        ordered = [args[p.name] for p in self.program.parameters()]
        status = self._cfunction(*ordered)
        del keep
        if status != 0:
            raise StencilgenError(f"Operator `{self.name}` failed: {self._error_text(status)}")
        summary = self._summary(args, timers, _time.perf_counter() - t0, compiled)
        for line in summary.report():
            log.perf(line)
        return summary

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

    def _summary(self, args, timers, wall, compiled):
        prog = self.program
        dims = prog.dims
        steps = (args["time_M"] - args["time_m"] + 1) if prog.has_time_loop else 1
        sections = {}
        for i, k in enumerate(prog.kernels):
            if isinstance(k, SparseKernel):
                pts = args[f"{k.sparse}_np"]
            else:
                pts = 1
                for d, (lo, hi) in zip(dims, k.widened):
                    pts *= args[f"{d.name}_M"] - args[f"{d.name}_m"] + 1 + lo + hi
            pts *= steps if k.stage == "time" else 1
            sections[k.name] = PerfEntry(k.name, float(timers[i]), float(pts * k.flops),
                                         float(pts), float(pts * k.bytes))
        domain = 1
        for d in dims:
            domain *= args[f"{d.name}_M"] - args[f"{d.name}_m"] + 1
        flops = sum(s.flops for s in sections.values())
        traffic = sum(s.traffic for s in sections.values())
        kernel_time = float(timers.sum())
        glob = PerfEntry("global", kernel_time, flops, float(domain * steps), traffic)
        setup = PerfEntry("global+setup", wall, flops, float(domain * steps), traffic)
        return PerformanceSummary(self.name, sections, glob, setup, compiled, steps)


def _fresh(names, prefix):
    i = 0
    while f"{prefix}{i}" in names:
        i += 1
    names.add(f"{prefix}{i}")
    return f"{prefix}{i}"
