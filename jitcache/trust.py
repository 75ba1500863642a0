"""Whether a cache entry may be loaded: who owns it, who may write it, and whether its library
is the file that was built (the hash recorded in the entry's manifest); the private cache used
when the user's cannot be trusted or written.

The trust model: only the current user (and root) may write the cache directory and its
entries; directories are 0700 and files 0600 whatever the umask. A library is loaded only if
its entry and the file belong to the user, are not writable by group or others, and hash to
the value recorded when it was built. Anything else is rebuilt, never loaded.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

DIR_MODE, FILE_MODE = 0o700, 0o600
MANIFEST = "manifest.json"

OK, ABSENT, DAMAGED, UNTRUSTED = "ok", "absent", "damaged", "untrusted"

# (device, inode, size, mtime, ctime) of a library -> its sha256, hashed once per process:
# any write to the file changes its ctime, which no user can set back
_VERIFIED: dict[tuple, str] = {}


def sha256_file(fd: int) -> str:
    """The sha256 of the open file ``fd``, read from its start."""
    h = hashlib.sha256()
    with os.fdopen(os.dup(fd), "rb") as f:
        f.seek(0)
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _writers(mode: int) -> str:
    who = [w for w, bit in (("group", stat.S_IWGRP), ("others", stat.S_IWOTH)) if mode & bit]
    return " and ".join(who)


def owner_problem(st: os.stat_result, kind: str) -> str | None:
    """Why a file or directory with status ``st`` is not to be trusted, or None.

    ``kind`` is "dir" or "file"; ``st`` comes from lstat, so a symbolic link is refused."""
    want = stat.S_ISDIR if kind == "dir" else stat.S_ISREG
    if not want(st.st_mode):
        if stat.S_ISLNK(st.st_mode):
            return "it is a symbolic link"
        return "it is not a directory" if kind == "dir" else "it is not a regular file"
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"it belongs to uid {st.st_uid}, not to you (uid {uid})"
    if st.st_mode & 0o022:
        return (f"it is writable by {_writers(st.st_mode)} "
                f"(mode {stat.S_IMODE(st.st_mode):04o})")
    return None


def root_problem(root: Path) -> str | None:
    """Why the cache directory ``root`` (which exists) cannot hold libraries we load, or None.

    It must be yours or root's, and writable by no one else unless sticky (as /tmp is), so that
    no other user can rename an entry away and put their own in its place."""
    st = os.stat(root)
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    uid = os.geteuid()
    if st.st_uid not in (uid, 0):
        return f"it belongs to uid {st.st_uid}, not to you (uid {uid}) or root"
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        return (f"it is writable by {_writers(st.st_mode)} without the sticky bit "
                f"(mode {stat.S_IMODE(st.st_mode):04o}), so they could replace your entries")
    return None


def read_manifest(entry: Path) -> tuple[dict, str | None]:
    """The entry's manifest (library name -> {"sha256", "size"}) and why it is untrusted."""
    try:
        fd = os.open(entry / MANIFEST, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return {}, f"{entry / MANIFEST}: it is a symbolic link"
        raise
    with os.fdopen(fd, "rb") as f:
        why = owner_problem(os.fstat(fd), "file")
        if why:
            return {}, f"{entry / MANIFEST}: {why}"
        try:
            found = json.loads(f.read())
        except ValueError:
            return {}, None
    libraries = found.get("libraries") if isinstance(found, dict) else None
    return (libraries if isinstance(libraries, dict) else {}), None


def check(entry: Path, lib: Path) -> tuple[str, str]:
    """(OK | ABSENT | DAMAGED | UNTRUSTED, why) for loading ``lib`` of ``entry``."""
    try:
        why = owner_problem(os.lstat(entry), "dir")
        if why:
            return UNTRUSTED, f"the entry {entry}: {why}"
        fd = os.open(lib, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)   # a FIFO: no wait
    except FileNotFoundError:
        return ABSENT, ""
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        return UNTRUSTED, f"the library {lib}: it is a symbolic link"
    try:
        st = os.fstat(fd)
        why = owner_problem(st, "file")
        if why:
            return UNTRUSTED, f"the library {lib}: {why}"
        manifest, why = read_manifest(entry)
        if why:
            return UNTRUSTED, f"the manifest {why}"
        return _matches(fd, st, manifest.get(lib.name), lib)
    finally:
        os.close(fd)


def _matches(fd: int, st: os.stat_result, record, lib: Path) -> tuple[str, str]:
    """Whether the open library ``fd`` is the one ``record`` (from the manifest) describes."""
    if not isinstance(record, dict) or "sha256" not in record:
        return DAMAGED, (f"the library {lib} has no hash in {MANIFEST} (built by an older "
                         "stencilgen, or its build was interrupted)")
    if st.st_size != record.get("size"):
        return DAMAGED, (f"the library {lib} has {st.st_size} bytes where {record.get('size')} "
                         "were built (truncated or overwritten)")
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    digest = _VERIFIED.get(key)
    if digest is None:
        digest = sha256_file(fd)
        _VERIFIED[key] = digest
    if digest != record["sha256"]:
        return DAMAGED, (f"the library {lib} does not match the sha256 recorded when it was "
                         "built (its contents changed)")
    return OK, ""


def record(entry: Path, lib: Path, digest: str, size: int, write) -> None:
    """Add ``lib``'s hash to the entry's manifest; ``write(path, bytes)`` writes atomically.
    Called under the entry's lock, so no other writer interleaves."""
    manifest, why = read_manifest(entry)
    if why:
        manifest = {}
    manifest[lib.name] = {"sha256": digest, "size": size}
    data = json.dumps({"libraries": manifest}, indent=1, sort_keys=True).encode()
    write(entry / MANIFEST, data)


def make_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents as 0700 directories, whatever the umask."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for p in reversed(missing):
        try:
            os.mkdir(p, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(p, DIR_MODE)   # the umask may have taken bits away


_PRIVATE: list[Path] = []


def private_dir() -> Path:
    """The user's private temporary cache: ``$TMPDIR/stencilgen-<uid>``, a 0700 directory of
    theirs; if someone else took that name, a fresh directory for this process."""
    base = Path(tempfile.gettempdir())
    path = base / f"stencilgen-{os.geteuid()}"
    make_dirs(path)
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
        if stat.S_IMODE(st.st_mode) != DIR_MODE:
            os.chmod(path, DIR_MODE)
        return path
    if not _PRIVATE or not _PRIVATE[0].is_dir():
        _PRIVATE[:] = [Path(tempfile.mkdtemp(prefix=f"stencilgen-{os.geteuid()}-", dir=base))]
    return _PRIVATE[0]


def tighten(entry: Path) -> None:
    """Make an entry of the user's 0700 (entries of older versions followed the umask)."""
    st = os.lstat(entry)
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != DIR_MODE \
            and stat.S_ISDIR(st.st_mode):
        os.chmod(entry, DIR_MODE)
