"""An entry's lock: ``flock`` on ``entry/.lock``, whose text says who holds it (pid, host, since),
so that a waiter can say whom it waits for, give up after a timeout, and take the lock over
from a holder that is dead (the lock outlives it where a child process inherited the file)."""
from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Iterator

from .errors import LockTimeoutError
from .trust import FILE_MODE, make_dirs

logger = logging.getLogger("jitcache")

LOCK = ".lock"
NOTICE_AFTER = 5.0      # seconds of waiting before the first warning naming the holder
NOTICE_EVERY = 30.0     # then one every this many seconds
TAKEOVER_AFTER = 1.0    # a dead holder's record must stay this long before the lock is taken


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as its holder wrote it."""

    pid: int
    host: str
    since: float

    def __str__(self) -> str:
        when = datetime.fromtimestamp(self.since).isoformat(sep=" ", timespec="seconds")
        return (f"pid {self.pid} on {self.host} since {when} "
                f"({max(time.time() - self.since, 0):.0f} s ago)")

    def dead(self) -> bool:
        """The holder ran on this host and its process is gone."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:       # another user's process: alive
            return False
        return False


def holder(fd: int) -> Holder | None:
    """The holder recorded in the lock file ``fd`` (None: none or unreadable)."""
    try:
        found = json.loads(os.pread(fd, 4096, 0) or b"null")
        return Holder(int(found["pid"]), str(found["host"]), float(found["since"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _record(fd: int) -> None:
    text = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, text.encode(), 0)
    except OSError:   # the record only informs waiters; a full disk must not stop the build
        pass


def _same_file(fd: int, path: Path) -> bool:
    held = os.fstat(fd)
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    return (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev)


class _Wait:
    """Waiting for one lock: the deadline, the notices logged, dead holders seen."""

    def __init__(self, lock: Path, timeout: float):
        self.lock, self.timeout = lock, timeout
        self.start = time.monotonic()
        self.next_notice = self.start + NOTICE_AFTER
        self.dead_since: dict[Holder, float] = {}

    def acquire(self, fd: int) -> bool:
        """Lock ``fd``; False when the lock was taken over from a dead holder (reopen it)."""
        pause = 0.01
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                pass
            who, now = holder(fd), time.monotonic()
            if who is not None and who.dead() and self._dead_long(who, now):
                if _same_file(fd, self.lock):
                    os.unlink(self.lock)
                logger.warning("jitcache: taking over the lock %s: its holder, %s, is gone",
                               self.lock, who)
                return False
            if now - self.start >= self.timeout:
                raise LockTimeoutError(self._timeout_text(who), lock_path=str(self.lock),
                                       holder=None if who is None else str(who))
            self._notice(who, now)
            time.sleep(min(pause, max(self.start + self.timeout - now, 0.001)))
            pause = min(pause * 2, 0.5)

    def _dead_long(self, who: Holder, now: float) -> bool:
        return now - self.dead_since.setdefault(who, now) >= TAKEOVER_AFTER

    def _notice(self, who: Holder | None, now: float) -> None:
        if now < self.next_notice:
            return
        self.next_notice = now + NOTICE_EVERY
        logger.warning("jitcache: waited %.0f s for the lock %s, held by %s, which is building "
                       "the same entry; still waiting (gives up after %.0f s, Ctrl-C stops). "
                       "If that process is hung, stop it%s; if it is gone, delete %s",
                       now - self.start, self.lock, who or "a process that left no record",
                       self.timeout, f" (kill {who.pid})" if who is not None else "", self.lock)

    def _timeout_text(self, who: Holder | None) -> str:
        held = f"held by {who}" if who else "held by a process that left no record"
        return (f"gave up after {self.timeout:.0f} s waiting for the lock {self.lock}, {held}. "
                "That process is building the same entry or is hung: if it is hung, stop it "
                f"(its pid is in {LOCK}); if it is gone, delete {self.lock} and run again.")


@contextmanager
def locked(entry: Path, timeout: float, create: bool = True) -> Iterator[bool]:
    """Hold ``entry/.lock`` exclusively, waiting at most ``timeout`` seconds; yields False
    (without ``create``) if the entry is gone, e.g. removed by clear() while we waited."""
    lock = entry / LOCK
    wait = _Wait(lock, timeout)
    while True:
        if create:
            make_dirs(entry)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
        except FileNotFoundError:
            if create:
                continue
            yield False
            return
        try:
            if not wait.acquire(fd):
                continue
            _record(fd)
            current = _same_file(fd, lock)  # checked after the record: see _Wait.acquire
            if current or not create:
                try:
                    yield current
                finally:
                    if current:
                        os.ftruncate(fd, 0)
                return
        finally:
            os.close(fd)
