"""Errors of the build cache: a failed compile names its source file and carries the log;
and where a warning points: the user's line."""
from __future__ import annotations

import sys
from pathlib import Path

#: the project's packages, whose frames a warning is walked out of to reach the user's line
#: (jitcache is called through stencilgen's Operator and the backends)
_OURS = tuple(Path(__file__).resolve().parent.parent / n
              for n in ("jitcache", "stencilgen", "backends"))


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes the caller's ``warnings.warn`` point at the first frame
    outside this project's packages (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and any(Path(frame.f_code.co_filename).resolve().is_relative_to(o)
                                    for o in _OURS):
        frame, level = frame.f_back, level + 1
    return level


class JitCacheError(Exception):
    """Base class of jitcache's errors."""


class CompilerNotFoundError(JitCacheError, RuntimeError):
    """No usable compiler executable was found."""


class CompilationError(JitCacheError, RuntimeError):
    """The compiler rejected a source file; ``source_path`` and ``log`` say where and why."""

    def __init__(self, message: str, source_path: str | None = None, log: str = "",
                 command: list[str] | None = None):
        super().__init__(message)
        self.source_path = source_path
        self.log = log
        self.command = command or []


class BackdoorError(CompilationError):
    """The JIT backdoor could not use the user's edited source (missing file or bad edit)."""


class EditedSourceWarning(UserWarning):
    """The cached source was edited by hand but the backdoor is off, so the edit is not used."""


class CompilerKilledError(CompilationError):
    """The compiler was stopped by a signal (out of memory, a kill, a time limit): no fault of
    the source; ``signal`` names it (e.g. ``SIGKILL``)."""

    def __init__(self, message: str, signal: str, **kwargs):
        super().__init__(message, **kwargs)
        self.signal = signal


class CacheDirError(JitCacheError, OSError):
    """The cache directory (STENCILGEN_CACHE_DIR) cannot be used, nor the private fallback."""


class LockTimeoutError(JitCacheError, TimeoutError):
    """An entry's lock was held longer than the timeout; ``holder`` says by whom (or None)."""

    def __init__(self, message: str, lock_path: str, holder: str | None):
        super().__init__(message)
        self.lock_path, self.holder = lock_path, holder


class CacheWarning(UserWarning):
    """A cache entry or directory was not used (not yours, writable by others, damaged or not
    writable): the build was redone, in place or in the private temporary cache."""
