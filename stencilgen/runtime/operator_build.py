"""How an Operator builds: its toolchain, the source compiled and cached through ``jitcache``
(or the user's edited file, through the JIT backdoor), its storage formats checked, the
library loaded and its entry point typed, where its fields live. A part of ``Operator``,
mixed into it."""
from __future__ import annotations

import ctypes
import jitcache

import numpy as np

from . import longrun
from .. import logger as log, platform as targets
from ..configuration import configuration
from ..data import places
from ..errors import ExecutionError, InvalidOperator

_CTYPES = {"array": ctypes.c_void_p, "coords": ctypes.c_void_p, "timers": ctypes.c_void_p,
           "checks": ctypes.c_void_p, "tuning": ctypes.c_void_p, "control": ctypes.c_void_p,
           "index": ctypes.c_long, "exchange": ctypes.c_void_p,
           "regions": ctypes.c_void_p}


class Building:
    """``Operator``'s build: toolchain, library, entry point, residency."""

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
            log.info(f"Operator `{self.name}` fetched `{b.compiled_from or b.source_path}` "
                     "from jit-cache")
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
