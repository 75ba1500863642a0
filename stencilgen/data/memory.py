"""Freeing the data of the Functions a user drops.

A Function is a sympy object, and sympy's cache (up to 1000 results per cached constructor)
holds every expression built from it, so a Function the user drops stays reachable, with
its data, until later expressions push it out; its class (one per Function, a sympy
``UndefinedFunction``) also sits in a reference cycle that only the cyclic collector frees.
A shot loop that makes a large TimeFunction per shot grew by one field per shot. So before
a large array is allocated, ``reserve`` sweeps (clears sympy's cache, then collects) once
the bytes allocated since the last sweep exceed the larger of ``SWEEP_FROM`` and the bytes
still held after it: sweeps cost time in proportion to the memory allocated, and the
memory held stays within about twice what the user keeps (plus ``SWEEP_FROM``).
"""
from __future__ import annotations

import gc
import threading
import weakref

from sympy.core.cache import clear_cache as _clear_sympy_cache

#: bytes allocated between two sweeps at least (smaller runs never sweep)
SWEEP_FROM = 64 << 20

_records: weakref.WeakSet = weakref.WeakSet()   # the records that hold data
_lock = threading.Lock()
_since = 0      # bytes allocated since the last sweep
_held = 0       # bytes held by live records right after it


def reserve(record, nbytes: int):
    """Note that ``record`` is about to allocate ``nbytes``; sweep first if it is time."""
    global _since
    with _lock:
        due = _since + nbytes > max(SWEEP_FROM, _held)
    if due:
        sweep()
    with _lock:
        _since += nbytes
        _records.add(record)


def held() -> int:
    """Bytes of Function data alive now (those the cache or a cycle holds included)."""
    return sum(r.nbytes for r in list(_records))


def sweep() -> int:
    """Free what only sympy's cache and reference cycles hold; returns the bytes still held."""
    global _since, _held
    _clear_sympy_cache()
    gc.collect()
    now = held()
    with _lock:
        _since, _held = 0, now
    return now


def clear_cache():
    """Devito's ``clear_cache()``: drop sympy's cache and free the Functions no one holds."""
    sweep()


def track(record):
    """Count ``record`` among those holding memory (one that got a device copy first)."""
    with _lock:
        _records.add(record)


def resident() -> list[tuple[str, int]]:
    """(name, bytes) of every field with a copy on a device, largest first."""
    found = [(r.name, r.device_nbytes) for r in list(_records) if r.device_nbytes]
    return sorted(found, key=lambda item: -item[1])
