"""Errors of the build cache: a failed compile names its source file and carries the log."""
from __future__ import annotations


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
