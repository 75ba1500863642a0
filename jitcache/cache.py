"""The on-disk build cache: one directory per (source, toolchain), shared safely between processes.

An entry ``<cache_dir>/<name>-<key[:16]>/`` holds ``<name><suffix>`` (the source a user may edit
for the JIT backdoor), ``lib<name>-<sha of the compiled text[:16]>.so``, ``manifest.json`` (each
library's sha256, checked before it is loaded: see ``trust``), ``meta.json`` and ``.lock``.
Writes are atomic and happen under the entry's lock; the user's source is never overwritten.
A cache that cannot be trusted or written gives way to a private one, with a CacheWarning.
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Iterator

from . import trust
from .errors import (BackdoorError, CacheDirError, CacheWarning, CompilationError,
                     CompilerKilledError, CompilerNotFoundError, EditedSourceWarning,
                     JitCacheError, user_stacklevel)
from .locking import locked
from .signature import check as _check_signature
from .toolchains import Toolchain

logger = logging.getLogger("jitcache")

SETTING = "STENCILGEN_CACHE_DIR"   # the variable that names the cache directory
LOCK_TIMEOUT = 600.0               # seconds a build waits for another process's build

_NAME = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9_.+-]*")
_ENTRY = re.compile(r"(?P<name>.+)-(?P<key>[0-9a-f]{16})")
# errors that make a cache directory unusable (not a fault of the build)
_UNUSABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT,
             errno.ENOTDIR, errno.EEXIST, errno.ELOOP}
# what a compiler says when the disk it writes to is full
_FULL = {"No space left on device": errno.ENOSPC, "Disk quota exceeded": errno.EDQUOT}
# what gcc's driver says when the compiler proper was killed
_KILLED = re.compile(r"(?:Killed signal terminated program|terminated with signal (\d+))")


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
    # the file whose code the library holds: source_path (None where fetched and not edited),
    # or the private copy of the generated source when the user edited source_path with the
    # backdoor off (what the log names as built or fetched)
    compiled_from: Path | None = None


@dataclass(frozen=True)
class _Job:
    """What one build() call builds: its source, toolchain, names and limits."""

    source: str
    toolchain: Toolchain
    name: str
    key: str
    entry_point: str | None
    lock_timeout: float

    def paths(self, root: Path) -> tuple[Path, Path, Path]:
        """(entry, source, generated library) under the cache directory ``root``."""
        entry = root / f"{self.name}-{self.key[:16]}"
        src = entry / f"{self.name}{self.toolchain.source_suffix}"
        return entry, src, entry / f"lib{self.name}-{_sha(self.source.encode())[:16]}.so"


class _Unusable(Exception):
    """The cache directory ``root`` cannot be used: ``why``, and what the user can do."""

    def __init__(self, root: Path, why: str, remedy: str):
        super().__init__(why)
        self.root, self.why, self.remedy = root, why, remedy


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


# -- files: written atomically, 0600, no temporary left behind ---------------------------------

def _temp_name(path: Path) -> Path:
    return path.with_name(f".tmp-{os.getpid()}-{secrets.token_hex(4)}-{path.name}")


def _put(fd: int, data: bytes) -> None:
    """Write ``data`` to the new file ``fd`` and close it (the one place cache files are
    written: tests simulate a full disk here)."""
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _write_temp(path: Path, data: bytes) -> Path:
    tmp = _temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, trust.FILE_MODE)
    try:
        os.fchmod(fd, trust.FILE_MODE)   # the umask may have taken bits away
        _put(fd, data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = _write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


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


def _install(entry: Path, lib: Path, tmp: Path) -> None:
    """Move the compiled ``tmp`` to ``lib`` with its hash in the manifest (written first: a
    reader seeing the new library finds its hash)."""
    try:
        os.chmod(tmp, trust.FILE_MODE)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            digest, size = trust.sha256_file(fd), os.fstat(fd).st_size
        finally:
            os.close(fd)
        trust.record(entry, lib, digest, size, _write_atomic)
        os.replace(tmp, lib)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def _writing(root: Path) -> Iterator[None]:
    """Turn the errors of a cache directory that cannot be written into _Unusable."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _UNUSABLE or isinstance(exc, JitCacheError):
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        raise _Unusable(root, f"{exc.strerror or exc}{where}", _remedy(exc.errno, root)) \
            from exc


def _remedy(code: int | None, root: Path) -> str:
    if code in (errno.ENOSPC, errno.EDQUOT):
        return (f"free space there (`python -m jitcache clear` empties the cache) or set "
                f"{SETTING} to a directory on another disk")
    if code in (errno.ENOTDIR, errno.EEXIST):
        return f"set {SETTING} to a directory (it names a file)"
    if code is None:
        return (f"set {SETTING} to a directory of your own that no one else can write "
                f"(`chmod go-w {root}` if it is yours)")
    return f"make {root} writable, or set {SETTING} to a directory you can write"


def _entry_remedy(entry: Path, name: str) -> str:
    return (f"remove {entry} if it is yours (`python -m jitcache clear {name}`), or set "
            f"{SETTING} to a directory of your own")


def _root_problem(root: Path) -> None:
    """Raise _Unusable if the cache directory ``root`` cannot be trusted (absent is fine)."""
    with _writing(root):
        if not os.path.lexists(root):
            return
        why = trust.root_problem(root)
    if why == "it is not a directory":
        raise _Unusable(root, why, _remedy(errno.ENOTDIR, root))
    if why:
        raise _Unusable(root, why, _remedy(None, root))


# -- loading and compiling ----------------------------------------------------------------------

def _load(path: Path, job: _Job, backdoor_source: Path | None = None) -> ctypes.CDLL:
    """dlopen ``path`` (verified by the caller) and check that it exports the entry point."""
    try:
        library = ctypes.CDLL(str(path))
    except OSError as exc:
        raise JitCacheError(f"could not load the compiled library {path}: {exc}") from exc
    if job.entry_point:
        try:
            library[job.entry_point]
        except AttributeError:
            _missing_entry_point(path, job, backdoor_source)
    return library


def _missing_entry_point(path: Path, job: _Job, backdoor_source: Path | None):
    if backdoor_source is None:
        raise JitCacheError(f"the library {path} built from the generated source does not "
                            f"export its entry point `{job.entry_point}`")
    raise BackdoorError(
        f"the JIT backdoor built your edited source {backdoor_source}, but its library does "
        f"not export the entry point `{job.entry_point}` that the caller runs: the edit renamed "
        "it, made it static, or hid it behind a macro or #if. Keep a function named "
        f"`{job.entry_point}` with external linkage and its generated parameters, or unset "
        "STENCILGEN_JIT_BACKDOOR (or delete the file) to use the generated code.",
        source_path=str(backdoor_source))


def _generated_copy(job: _Job, entry: Path, text: bytes) -> Path:
    """The private copy of the generated source beside an entry whose source the user edited
    (``.Name.generated.c``): what the library's code is, written if it is not there yet."""
    path = entry / f".{job.name}.generated{job.toolchain.source_suffix}"
    if not path.exists() or path.read_bytes() != text:
        _write_atomic(path, text)
    return path


def _warn_edited(src: Path) -> None:
    warnings.warn(
        f"{src} was edited by hand; it is kept as it is but NOT used, because the JIT backdoor "
        "is off (the generated code runs). Set STENCILGEN_JIT_BACKDOOR=1 to build from the "
        "edited file, or delete it to get the generated source back.",
        EditedSourceWarning, stacklevel=user_stacklevel())


class _Failed(Exception):
    def __init__(self, returncode: int, command: list[str], log: str, killed: str | None):
        super().__init__(returncode)
        self.returncode, self.command, self.log, self.killed = returncode, command, log, killed


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _killed(returncode: int, log: str) -> str | None:
    """The signal that stopped the compiler (or the compiler proper, per gcc's driver)."""
    if returncode < 0:
        return _signal_name(-returncode)
    found = _KILLED.search(log)
    if found is None:
        return None
    return _signal_name(int(found[1])) if found[1] else "SIGKILL"


def _compile(toolchain: Toolchain, source: Path, lib: Path) -> tuple[Path, float, list[str], str]:
    """Compile ``source`` to a temporary file next to ``lib``: (temp, seconds, command, log).

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
        full = next((code for text, code in _FULL.items() if text in log), None)
        if full is not None:
            raise OSError(full, os.strerror(full), str(lib.parent))
        raise _Failed(done.returncode, shown, log, _killed(done.returncode, log))
    return tmp, seconds, shown, log


def _failure(exc: _Failed, toolchain: Toolchain, source: Path, edited: bool) -> CompilationError:
    """Our error for a failed compile of ``source`` (the user's edit when ``edited``)."""
    tail = f"\nCommand: {shlex.join(exc.command)}\nCompiler output:\n{exc.log}"
    info = dict(source_path=str(source), log=exc.log, command=exc.command)
    if exc.killed:
        return CompilerKilledError(
            f"{toolchain.name} was killed by {exc.killed} while compiling {source}: the system "
            "or a user stopped it (SIGKILL is most often the out-of-memory killer: build fewer "
            "operators at once or give it more memory; SIGTERM or SIGINT a kill or a time "
            "limit). This is no fault of the source; run again." + tail,
            signal=exc.killed, **info)
    if edited:
        return BackdoorError(
            f"the JIT backdoor could not build your edited source {source}: "
            f"{toolchain.name} failed (exit status {exc.returncode}). Your edit is left "
            "on disk unchanged; fix it and run again, or unset STENCILGEN_JIT_BACKDOOR "
            "to use the generated code." + tail, **info)
    return CompilationError(
        f"{toolchain.name} failed to compile the generated source {source} "
        f"(exit status {exc.returncode}). The source is kept there to inspect; the "
        "cause is a code-generator bug or a compiler flag the compiler rejects." + tail, **info)


# -- build: fetch, or compile under the lock; elsewhere if the cache cannot be used -------------

def build(source: str, toolchain: Toolchain, name: str, *, cache_dir: str | os.PathLike,
          backdoor: bool = False, entry_point: str | None = None,
          lock_timeout: float = LOCK_TIMEOUT) -> BuildResult:
    """Compile ``source`` with ``toolchain`` (or fetch it from the cache) and load it.

    With ``backdoor=True`` the source file already in the entry is compiled as the user left it;
    ``entry_point`` names the function the library must export, whose parameters that edit must
    keep (else BackdoorError). A build waits at most ``lock_timeout`` s for another's.
    """
    if not _NAME.fullmatch(name):
        raise JitCacheError(f"bad build name {name!r}: use letters, digits and _ . + - only")
    job = _Job(source, toolchain, name, cache_key(source, toolchain), entry_point, lock_timeout)
    root = Path(cache_dir).expanduser()
    if backdoor:
        return _build_backdoor(job, root)
    try:
        return _build_into(job, root)
    except _Unusable as exc:
        refused = exc
    try:
        private = trust.private_dir()
    except OSError as exc:
        raise _dir_error(refused, f"nor a private one in the temporary directory: {exc}")
    if private == root:
        raise _dir_error(refused, "and it is the private temporary cache")
    warnings.warn(f"stencilgen's build cache {root} ({SETTING}) was not used: {refused.why}. "
                  f"Built in the private temporary cache {private} instead; to keep builds "
                  f"between runs, {refused.remedy}.", CacheWarning, stacklevel=2)
    try:
        return _build_into(job, private)
    except _Unusable as exc:
        raise _dir_error(refused, f"nor the private temporary cache {private}: {exc.why}")


def _dir_error(refused: _Unusable, more: str) -> CacheDirError:
    return CacheDirError(f"cannot use the build cache {refused.root} ({SETTING}): {refused.why}; "
                         f"{more}. To fix it, {refused.remedy}.")


def _build_into(job: _Job, root: Path) -> BuildResult:
    """Fetch the generated build from the cache ``root``, or compile it there (_Unusable if
    the directory or the entry cannot be trusted or written)."""
    entry, src, lib = job.paths(root)
    text = job.source.encode()
    result = dict(library_path=lib, source_path=src, key=job.key,
                  compiler=job.toolchain.name, backdoor=False)
    _root_problem(root)
    with _writing(root):
        state, why = trust.check(entry, lib)
        if state == trust.OK and src.exists():
            runs = None
            if src.read_bytes() != text:
                _warn_edited(src)
                runs = _generated_copy(job, entry, text)
            try:
                library = _load(lib, job)
            except JitCacheError:
                if os.path.lexists(lib):
                    raise      # else clear() removed it just now: built below
            else:
                logger.debug("fetched %s from the cache", lib)
                return BuildResult(library=library, compiled=False, seconds=0.0,
                                   compiled_from=runs, **result)
        if state == trust.UNTRUSTED:
            raise _Unusable(root, why, _entry_remedy(entry, job.name))
        if state == trust.DAMAGED:
            warnings.warn(f"{why}: it is not loaded but rebuilt", CacheWarning, stacklevel=3)
        with locked(entry, job.lock_timeout):
            return _build_locked(job, root, text, result)


def _build_locked(job: _Job, root: Path, text: bytes, result: dict) -> BuildResult:
    """The part of a build under the entry's lock: another process may have built it since."""
    entry, src, lib = job.paths(root)
    trust.tighten(entry)
    _create_atomic(src, text)
    compile_from = src
    if src.read_bytes() != text:
        _warn_edited(src)
        compile_from = _generated_copy(job, entry, text)
    state, why = trust.check(entry, lib)
    if state == trust.OK:
        fetched = dict(result, compiled_from=None if compile_from == src else compile_from)
        return BuildResult(library=_load(lib, job), compiled=False, seconds=0.0, **fetched)
    if state == trust.UNTRUSTED:
        raise _Unusable(root, why, _entry_remedy(entry, job.name))
    try:
        tmp, seconds, command, output = _compile(job.toolchain, compile_from, lib)
    except _Failed as exc:
        raise _failure(exc, job.toolchain, compile_from, edited=False) from None
    _install(entry, lib, tmp)
    tc = job.toolchain
    meta = {"name": job.name, "key": job.key, "compiler": tc.name, "version": tc.version(),
            "cc": tc.cc, "cflags": list(tc.cflags), "ldflags": list(tc.ldflags),
            "libraries": list(tc.libraries), "command": command,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "source": src.name, "source_sha256": _sha(text)}
    _write_atomic(entry / "meta.json", json.dumps(meta, indent=1).encode())
    logger.debug("compiled %s in %.2f s", lib, seconds)
    return BuildResult(library=_load(lib, job), compiled=True, seconds=seconds, log=output,
                       compiled_from=compile_from, **result)


def _build_backdoor(job: _Job, root: Path) -> BuildResult:
    """Build from the user's edited source, which is only ever read, in its own entry (never
    elsewhere: the edit lives there); the entry and the library are checked as for a fetch."""
    entry, src, _ = job.paths(root)
    if not src.is_file():
        raise BackdoorError(
            f"the JIT backdoor is on but {src} does not exist. Run once without "
            "STENCILGEN_JIT_BACKDOOR to generate it, edit it, then run again with "
            "STENCILGEN_JIT_BACKDOOR=1.", source_path=str(src))
    try:
        _root_problem(root)
        with _writing(root):
            return _backdoor_attempts(job, entry, src)
    except _Unusable as exc:
        raise BackdoorError(
            f"the JIT backdoor cannot use {src}: {exc.why}. It builds only in a cache "
            f"directory of yours that no one else can write; {exc.remedy}.",
            source_path=str(src)) from None


def _fetch_verified(job: _Job, entry: Path, lib: Path, edited: Path | None,
                    warn: bool) -> ctypes.CDLL | None:
    """The library ``lib`` of ``entry`` loaded if it checks out; None if it must be built."""
    state, why = trust.check(entry, lib)
    if state == trust.UNTRUSTED:
        raise _Unusable(entry.parent, why, _entry_remedy(entry, job.name))
    if state == trust.OK:
        return _load(lib, job, edited)
    if state == trust.DAMAGED and warn:
        warnings.warn(f"{why}: it is not loaded but rebuilt", CacheWarning, stacklevel=5)
    return None


def _backdoor_attempts(job: _Job, entry: Path, src: Path) -> BuildResult:
    result = dict(source_path=src, key=job.key, compiler=job.toolchain.name, backdoor=True)
    for _ in range(5):  # retried only if the user saves the file again while it compiles
        text = src.read_bytes()
        if job.entry_point:
            _check_signature(job.source, text.decode(errors="replace"), job.entry_point, src)
        lib = entry / f"lib{job.name}-{_sha(text)[:16]}.so"
        fetched = dict(library_path=lib, compiled=False, seconds=0.0, **result)
        library = _fetch_verified(job, entry, lib, src, warn=True)
        if library is not None:
            return BuildResult(library=library, **fetched)
        with locked(entry, job.lock_timeout):
            library = _fetch_verified(job, entry, lib, src, warn=False)
            if library is not None:
                return BuildResult(library=library, **fetched)
            try:
                tmp, seconds, _, output = _compile(job.toolchain, src, lib)
            except _Failed as exc:
                raise _failure(exc, job.toolchain, src, edited=True) from None
            if src.read_bytes() != text:
                tmp.unlink()
                continue
            _install(entry, lib, tmp)
        logger.debug("backdoor: compiled %s in %.2f s", lib, seconds)
        return BuildResult(library=_load(lib, job, src), library_path=lib, compiled=True,
                           seconds=seconds, log=output, compiled_from=src, **result)
    raise BackdoorError(f"{src} kept changing while it was being compiled; run again",
                        source_path=str(src))


def entries(cache_dir: str | os.PathLike) -> list[dict]:
    """One dict per cache entry: name, key, path, compiler, version, created, size, edited,
    source."""
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
        except PermissionError:    # another user's entry: listed, its size unknown
            pass
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
        try:
            with locked(entry, LOCK_TIMEOUT, create=False) as present:
                if present:
                    shutil.rmtree(entry)
                    removed += 1
        except OSError as exc:     # e.g. another user's entry in a shared directory
            logger.warning("jitcache: could not remove %s: %s", entry, exc)
    logger.debug("removed %d entries from %s", removed, cache_dir)
    return removed
