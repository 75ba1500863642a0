"""Compile generated C/CUDA source once, keep the library on disk, and load it with ctypes.

``build(source, gcc(), "name", cache_dir=...)`` returns a :class:`BuildResult`; the cache is
keyed by source, compiler, version and flags, and is safe to share between processes of one
user; a library is loaded only from an entry of the user's whose hash checks out (``trust``).
jitcache knows nothing of its callers: they choose the toolchain (and the GPU it targets) and
the cache.
"""
import os
from pathlib import Path

from .cache import LOCK_TIMEOUT, SETTING, BuildResult, build, cache_key, clear, entries
from .errors import (BackdoorError, CacheDirError, CacheWarning, CompilationError,
                     CompilerKilledError, CompilerNotFoundError, EditedSourceWarning,
                     JitCacheError, LockTimeoutError)
from .toolchains import (Toolchain, compile_failure, gcc, gcc_offloads, gcc_openacc, nvcc,
                         nvcc_archs, nvhpc, openacc)


def default_cache_dir() -> str:
    """Where builds are kept unless told otherwise: ``$XDG_CACHE_HOME`` (or ``~/.cache``), then
    ``stencilgen``; the one place this rule is written."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return os.path.join(base, "stencilgen")


__all__ = [
    "Toolchain", "compile_failure", "gcc", "nvcc", "nvcc_archs", "openacc", "gcc_openacc", "nvhpc", "gcc_offloads",
    "build", "BuildResult", "cache_key", "entries", "clear", "default_cache_dir",
    "JitCacheError", "CompilerNotFoundError", "CompilationError", "BackdoorError",
    "EditedSourceWarning", "CompilerKilledError", "CacheDirError", "LockTimeoutError",
    "CacheWarning", "SETTING", "LOCK_TIMEOUT",
]
