"""Compile generated C/CUDA source once, keep the library on disk, and load it with ctypes.

``build(source, gcc(), "name", cache_dir=...)`` returns a :class:`BuildResult`; the cache is
keyed by source, compiler, version and flags, and is safe to share between processes.
"""
from .cache import BuildResult, build, cache_key, clear, entries
from .errors import (BackdoorError, CompilationError, CompilerNotFoundError,
                     EditedSourceWarning, JitCacheError)
from .toolchains import (Toolchain, gcc, gcc_offloads, gcc_openacc, nvcc, nvhpc,
                         openacc)

__all__ = [
    "Toolchain", "gcc", "nvcc", "openacc", "gcc_openacc", "nvhpc", "gcc_offloads",
    "build", "BuildResult", "cache_key", "entries", "clear",
    "JitCacheError", "CompilerNotFoundError", "CompilationError", "BackdoorError",
    "EditedSourceWarning",
]
