"""Freeing the data of the Functions a user drops.

A Function is a sympy object, and sympy's cache (up to 1000 results per cached constructor)
holds every expression built from it, so a Function the user drops stays reachable, with
its data, until later expressions push it out. Its data belongs to its applications (its
class, in reference cycles like every class, refers to it weakly: ``symbolic/functions``),
so it goes by reference counting as soon as nothing holds an application. Hence, as
Devito does, every allocation first clears sympy's cache (cheap): a field the user dropped
is freed then, at once, before the next one takes its place. What sits in a reference cycle
(a user's own, an exception's traceback) waits for the collector: ``reserve`` also collects
once the bytes allocated since the last collection exceed the larger of ``SWEEP_FROM`` and
the bytes still held after it, so that cost stays in proportion to the memory allocated.
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
    """Note that ``record`` is about to allocate ``nbytes`` of host memory (0: a device
    copy): sympy's cache cleared first (the fields only it held go, with their device
    copies), and a full sweep if it is time."""
    global _since
    with _lock:
        due = _since + nbytes > max(SWEEP_FROM, _held)
    if due:
        sweep()
    else:
        _clear_sympy_cache()
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


def resident() -> list[tuple[str, int]]:
    """(name, bytes) of every field with a copy on a device, largest first."""
    found = [(r.name, r.device_nbytes) for r in list(_records) if r.device_nbytes]
    return sorted(found, key=lambda item: -item[1])
