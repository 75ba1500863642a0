"""The on-disk build cache: one directory per (source, toolchain), shared safely between processes.

An entry ``<cache_dir>/<name>-<key[:16]>/`` holds ``<name><suffix>`` (the source a user may edit
for the JIT backdoor), ``lib<name>-<sha of the compiled text[:16]>.so``, ``meta.json`` and
``.lock``. Writes are atomic and happen under the entry's ``flock``; the user's source is
never overwritten.
"""
from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import subprocess
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Iterator

from .errors import (BackdoorError, CompilationError, CompilerNotFoundError,
                     EditedSourceWarning, JitCacheError)
from .signature import check as _check_signature
from .toolchains import Toolchain

logger = logging.getLogger("jitcache")

_NAME = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9_.+-]*")
_ENTRY = re.compile(r"(?P<name>.+)-(?P<key>[0-9a-f]{16})")


@dataclass(frozen=True)
class BuildResult:
    """A loaded library and where it came from."""

    library: ctypes.CDLL
    library_path: Path
    source_path: Path
    compiled: bool
    seconds: float
    key: str
    compiler: str
    backdoor: bool
    log: str = ""        # what the compiler printed while building it (warnings, reports)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cache_key(source: str, toolchain: Toolchain) -> str:
    """sha256 over the source, the compiler (name, resolved path, version) and every flag."""
    cc = os.path.realpath(shutil.which(toolchain.cc) or toolchain.cc)
    payload = json.dumps({
        "source": source, "compiler": toolchain.name, "cc": cc,
        "version": toolchain.version_text(), "cflags": toolchain.cflags,
        "ldflags": toolchain.ldflags, "libraries": toolchain.libraries,
        "suffix": toolchain.source_suffix}, sort_keys=True)
    return _sha(payload.encode())


@contextmanager
def _locked(entry: Path, create: bool = True) -> Iterator[bool]:
    """Hold ``entry/.lock`` exclusively; yields False (without create) if the entry is gone."""
    lock = entry / ".lock"
    while True:
        if create:
            entry.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:
            if create:
                continue
            yield False
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # clear() may have removed the entry while we waited: then our lock guards nothing.
            held = os.fstat(fd)
            try:
                now = os.stat(lock)
                current = (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev)
            except FileNotFoundError:
                current = False
            if current or not create:
                yield current
                return
        finally:
            os.close(fd)


def _temp_name(path: Path) -> Path:
    return path.with_name(f".tmp-{os.getpid()}-{secrets.token_hex(4)}-{path.name}")


def _write_temp(path: Path, data: bytes) -> Path:
    tmp = _temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return tmp


def _write_atomic(path: Path, data: bytes) -> None:
    os.replace(_write_temp(path, data), path)


def _create_atomic(path: Path, data: bytes) -> bool:
    """Write ``path`` atomically unless it exists (then leave it alone); True if written."""
    tmp = _write_temp(path, data)
    try:
        os.link(tmp, path)  # fails if path exists, so a file the user made is never clobbered
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


def _load(path: Path) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(str(path))
    except OSError as exc:
        raise JitCacheError(f"could not load the compiled library {path}: {exc}") from exc


def _warn_edited(src: Path) -> None:
    warnings.warn(
        f"{src} was edited by hand; it is kept as it is but NOT used, because the JIT backdoor "
        "is off (the generated code runs). Set STENCILGEN_JIT_BACKDOOR=1 to build from the "
        "edited file, or delete it to get the generated source back.",
        EditedSourceWarning, stacklevel=3)


def _compile(toolchain: Toolchain, source: Path, lib: Path) -> tuple[Path, float, list[str], str]:
    """Compile ``source`` to a temporary file next to ``lib``; returns (temp, seconds, command, log).

    The command returned names ``lib``, so it can be rerun by hand.
    """
    tmp = _temp_name(lib)
    shown = toolchain.command(str(source), str(lib))
    logger.debug("compiling: %s", shlex.join(shown))
    start = time.perf_counter()
    try:
        done = subprocess.run(toolchain.command(str(source), str(tmp)),
                              capture_output=True, text=True, errors="replace")
    except OSError as exc:
        raise CompilerNotFoundError(
            f"could not run the {toolchain.name} compiler {toolchain.cc!r}: {exc}") from exc
    seconds = time.perf_counter() - start
    log = "\n".join(s.strip() for s in (done.stdout, done.stderr) if s.strip())
    if done.returncode != 0 or not tmp.exists():
        tmp.unlink(missing_ok=True)
        raise _Failed(done.returncode, shown, log)
    return tmp, seconds, shown, log


class _Failed(Exception):
    def __init__(self, returncode: int, command: list[str], log: str):
        super().__init__(returncode)
        self.returncode, self.command, self.log = returncode, command, log


def build(source: str, toolchain: Toolchain, name: str, *, cache_dir: str | os.PathLike,
          backdoor: bool = False, entry_point: str | None = None) -> BuildResult:
    """Compile ``source`` with ``toolchain`` (or fetch it from the cache) and load it.

    With ``backdoor=True`` the source file already in the entry is compiled as the user left it;
    ``entry_point`` names a function whose parameters that edit must keep (else BackdoorError).
    """
    if not _NAME.fullmatch(name):
        raise JitCacheError(f"bad build name {name!r}: use letters, digits and _ . + - only")
    key = cache_key(source, toolchain)
    entry = Path(cache_dir).expanduser() / f"{name}-{key[:16]}"
    src = entry / f"{name}{toolchain.source_suffix}"
    if backdoor:
        return _build_backdoor(toolchain, name, key, entry, src, (source, entry_point))

    text = source.encode()
    lib = entry / f"lib{name}-{_sha(text)[:16]}.so"
    result = dict(library_path=lib, source_path=src, key=key, compiler=toolchain.name,
                  backdoor=False)
    if lib.exists() and src.exists():
        if src.read_bytes() != text:
            _warn_edited(src)
        try:
            library = _load(lib)
        except JitCacheError:
            if lib.exists():
                raise  # else clear() removed it just now: rebuild below
        else:
            logger.debug("fetched %s from the cache", lib)
            return BuildResult(library=library, compiled=False, seconds=0.0, **result)

    with _locked(entry):
        _create_atomic(src, text)
        compile_from = src
        if src.read_bytes() != text:
            _warn_edited(src)
            compile_from = entry / f".{name}.generated{toolchain.source_suffix}"
        if lib.exists():
            return BuildResult(library=_load(lib), compiled=False, seconds=0.0, **result)
        if compile_from != src:
            _write_atomic(compile_from, text)
        try:
            tmp, seconds, command, output = _compile(toolchain, compile_from, lib)
        except _Failed as exc:
            raise CompilationError(
                f"{toolchain.name} failed to compile the generated source {compile_from} "
                f"(exit status {exc.returncode}). The source is kept there to inspect; the "
                "cause is a code-generator bug or a compiler flag the compiler rejects.\n"
                f"Command: {shlex.join(exc.command)}\nCompiler output:\n{exc.log}",
                source_path=str(compile_from), log=exc.log, command=exc.command) from None
        os.replace(tmp, lib)
        meta = {"name": name, "key": key, "compiler": toolchain.name,
                "version": toolchain.version(), "cc": toolchain.cc,
                "cflags": list(toolchain.cflags), "ldflags": list(toolchain.ldflags),
                "libraries": list(toolchain.libraries), "command": command,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "source": src.name, "source_sha256": _sha(text)}
        _write_atomic(entry / "meta.json", json.dumps(meta, indent=1).encode())
        logger.debug("compiled %s in %.2f s", lib, seconds)
        return BuildResult(library=_load(lib), compiled=True, seconds=seconds, log=output, **result)


def _build_backdoor(toolchain: Toolchain, name: str, key: str, entry: Path,
                    src: Path, generated: tuple[str, str | None]) -> BuildResult:
    """Build from the user's edited ``src``, which is only ever read; ``generated`` is the
    generated source and the entry point whose parameters the edit must keep."""
    if not src.is_file():
        raise BackdoorError(
            f"the JIT backdoor is on but {src} does not exist. Run once without "
            "STENCILGEN_JIT_BACKDOOR to generate it, edit it, then run again with "
            "STENCILGEN_JIT_BACKDOOR=1.", source_path=str(src))
    result = dict(source_path=src, key=key, compiler=toolchain.name, backdoor=True)
    for _ in range(5):  # retried only if the user saves the file again while it compiles
        text = src.read_bytes()
        if generated[1]:
            _check_signature(generated[0], text.decode(errors="replace"), generated[1], src)
        lib = entry / f"lib{name}-{_sha(text)[:16]}.so"
        if lib.exists():
            return BuildResult(library=_load(lib), library_path=lib, compiled=False,
                               seconds=0.0, **result)
        with _locked(entry):
            if lib.exists():
                return BuildResult(library=_load(lib), library_path=lib, compiled=False,
                                   seconds=0.0, **result)
            try:
                tmp, seconds, _, output = _compile(toolchain, src, lib)
            except _Failed as exc:
                raise BackdoorError(
                    f"the JIT backdoor could not build your edited source {src}: "
                    f"{toolchain.name} failed (exit status {exc.returncode}). Your edit is left "
                    "on disk unchanged; fix it and run again, or unset STENCILGEN_JIT_BACKDOOR "
                    "to use the generated code.\n"
                    f"Command: {shlex.join(exc.command)}\nCompiler output:\n{exc.log}",
                    source_path=str(src), log=exc.log, command=exc.command) from None
            if src.read_bytes() != text:
                tmp.unlink()
                continue
            os.replace(tmp, lib)
            logger.debug("backdoor: compiled %s in %.2f s", lib, seconds)
            return BuildResult(library=_load(lib), library_path=lib, compiled=True,
                               seconds=seconds, log=output, **result)
    raise BackdoorError(f"{src} kept changing while it was being compiled; run again",
                        source_path=str(src))


def entries(cache_dir: str | os.PathLike) -> list[dict]:
    """One dict per cache entry: name, key, path, compiler, version, created, size, edited, source."""
    root = Path(cache_dir).expanduser()
    if not root.is_dir():
        return []
    found = []
    for entry in sorted(root.iterdir()):
        match = _ENTRY.fullmatch(entry.name)
        if not match or not entry.is_dir():
            continue
        try:
            meta = json.loads((entry / "meta.json").read_text())
        except (OSError, ValueError):
            meta = {}
        name = match["name"]
        src = entry / meta["source"] if "source" in meta else next(
            (p for p in sorted(entry.glob(f"{name}.*")) if p.is_file()), None)
        size, edited = 0, False
        try:
            size = sum(p.stat().st_size for p in entry.iterdir() if p.is_file())
            if src is not None and src.is_file() and "source_sha256" in meta:
                edited = _sha(src.read_bytes()) != meta["source_sha256"]
        except FileNotFoundError:  # removed by a concurrent clear()
            continue
        found.append({"name": name, "key": meta.get("key", match["key"]), "path": str(entry),
                      "compiler": meta.get("compiler"), "version": meta.get("version"),
                      "created": meta.get("created"), "size": size, "edited": edited,
                      "source": str(src) if src is not None else None, "meta": meta})
    return found


def clear(cache_dir: str | os.PathLike, name: str | None = None) -> int:
    """Remove all entries, or those whose name matches ``name`` (a glob); returns how many."""
    removed = 0
    for info in entries(cache_dir):
        if name is not None and not fnmatchcase(info["name"], name):
            continue
        entry = Path(info["path"])
        with _locked(entry, create=False) as present:
            if present:
                shutil.rmtree(entry)
                removed += 1
    logger.debug("removed %d entries from %s", removed, cache_dir)
    return removed
