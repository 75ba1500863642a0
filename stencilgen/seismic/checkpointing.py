"""Optimal binomial checkpointing ("revolve", Griewank & Walther) for reversing a time loop.

A forward computation passes through states 0..n-1 (state k: after k steps); an adjoint needs
them in the order n-1, ..., 0, but memory holds only ``ncheckpoints`` states. ``schedule``
gives the advance/save/restore/reverse actions with the fewest forward steps (``cost``);
``reverse_with_checkpoints`` runs them through callbacks, so this module knows nothing of
operators or fields; ``Reversal`` runs them in two parts (the sweep to the last state, then
the reversal), for callers that must hand the forward results out in between.

Model: ``advance(a, b)`` moves the current state from a to b > a (b - a forward steps);
``save(k, slot)`` copies the current state k into checkpoint slot ``slot`` (0 <= slot < c);
``restore(slot)`` makes the state stored there current again (the slot keeps it);
``reverse(k)`` runs the adjoint step of state k while the current state is k, and may change
the current state (the schedule always restores after it). State 0 is saved in slot 0 first.

With s = c - 1 free slots, beta(S, t) = C(S + t, S) states can be reversed with S = s + 1
checkpoints and t forward sweeps; the least cost of n states is t*n - beta(S + 1, t - 1) with t
the smallest such that beta(S, t) >= n (n(n-1)/2 for c = 1): Griewank & Walther, "Algorithm
799: revolve", ACM TOMS 26 (2000). The tests check it, and every split, against a brute-force
minimum.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from math import comb

from stencilgen.errors import InvalidArgument

__all__ = ["Action", "Reversal", "Stats", "cost", "reverse_with_checkpoints", "schedule"]


@dataclass(frozen=True)
class Action:
    """One step of a schedule: ``advance`` a -> b, ``save`` state a into ``slot``, ``restore``
    ``slot`` (which holds state a), or ``reverse`` state a."""

    kind: str
    a: int = 0
    b: int = 0
    slot: int = -1


@dataclass(frozen=True)
class Stats:
    """What one reversal did: forward steps, saves, restores, reverses (= the number of
    states) and the most checkpoint slots in use at once."""

    forward_steps: int
    saves: int
    restores: int
    reverses: int
    peak_slots: int

    @property
    def recompute_factor(self) -> float:
        """Forward steps relative to one plain sweep from state 0 to the last state."""
        return self.forward_steps / max(self.reverses - 1, 1)


def _count(value, name: str) -> int:
    """``value`` as an int >= 1, or InvalidArgument naming ``name`` and what to pass."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidArgument(
            f"{name} must be an integer >= 1 (got {value!r}); pass e.g. {name}=10")
    return int(value)


def _beta(S: int, t: int) -> int:
    """States reversible with S checkpoints (the one holding the first state included) and t
    forward sweeps."""
    return comb(S + t, S) if t >= 0 else 0


def _sweeps(length: int, S: int) -> int:
    """The smallest t with beta(S, t) >= length."""
    t, b = 0, 1
    while b < length:
        t += 1
        b = b * (S + t) // t  # C(S+t, t) from C(S+t-1, t-1), exactly
    return t


def _steps(length: int, free: int) -> int:
    """Least forward steps to reverse ``length`` states whose first is saved, with ``free``
    more slots."""
    if length <= 1:
        return 0
    if free == 0:
        return length * (length - 1) // 2
    S = min(free, length - 1) + 1
    t = _sweeps(length, S)
    return t * length - _beta(S + 1, t - 1)


def _split(length: int, free: int) -> int:
    """An optimal first step j (advance by j, save, reverse the last length - j states with one
    slot fewer, then the first j with as many); needs length >= 2, free >= 1."""
    S = min(free, length - 1) + 1
    t = _sweeps(length, S)
    lo = max(1, length - _beta(S - 1, t), _beta(S, t - 2) if t >= 2 else 1)
    hi = min(length - 1, _beta(S, t - 1), length - _beta(S - 1, t - 1))
    return max(lo, hi)


def cost(nstates: int, ncheckpoints: int) -> int:
    """Least forward steps to visit states nstates-1, ..., 0 in turn holding at most
    ``ncheckpoints`` states (nstates - 1 when ncheckpoints >= nstates)."""
    n, c = _count(nstates, "nstates"), _count(ncheckpoints, "ncheckpoints")
    return _steps(n, c - 1)


def _sweep_back(a: int, length: int, slot: int, current):
    """Reverse states a+length-1, ..., a from state a in ``slot`` alone, advancing from a each
    time (no restore while the current state is already a)."""
    for k in range(a + length - 1, a - 1, -1):
        if current != a:
            yield Action("restore", a, slot=slot)
        if k > a:
            yield Action("advance", a, k)
        yield Action("reverse", k)
        current = None


def _actions(n: int, c: int):
    """Yield the optimal schedule; an explicit stack of (first state, length, free slots, slot
    of the first state) keeps the Python recursion depth constant for any c and n."""
    yield Action("save", 0, slot=0)
    current, stack = 0, [(0, n, c - 1, 0)]
    while stack:
        a, length, free, slot = stack.pop()
        if length == 1 or free == 0:
            yield from _sweep_back(a, length, slot, current)
            current = None
            continue
        j = _split(length, free)
        if current != a:
            yield Action("restore", a, slot=slot)
        yield Action("advance", a, a + j)
        current = a + j
        if length - j > 1:  # a single state is reversed at once: no need to keep it
            yield Action("save", a + j, slot=slot + 1)
        stack.append((a, j, free, slot))
        stack.append((a + j, length - j, free - 1, slot + 1))


def schedule(nstates: int, ncheckpoints: int) -> list[Action]:
    """The actions, in order, of an optimal reversal of ``nstates`` states with
    ``ncheckpoints`` slots; its forward steps add up to ``cost(nstates, ncheckpoints)``."""
    n, c = _count(nstates, "nstates"), _count(ncheckpoints, "ncheckpoints")
    return list(_actions(n, c))


def _callables(**callbacks) -> None:
    """InvalidArgument unless every callback given is callable."""
    for name, f in callbacks.items():
        if not callable(f):
            raise InvalidArgument(
                f"{name} must be a callable (got {f!r}); pass a function, e.g. "
                f"{name}=lambda *args: ...")


def reverse_with_checkpoints(nstates, ncheckpoints, advance, save, restore, reverse,
                             first_reverse=None) -> Stats:
    """Run the optimal schedule through the callbacks ``advance(a, b)``, ``save(k, slot)``,
    ``restore(slot)`` and ``reverse(k)``; ``first_reverse()`` runs once before the first."""
    n, c = _count(nstates, "nstates"), _count(ncheckpoints, "ncheckpoints")
    _callables(advance=advance, save=save, restore=restore, reverse=reverse)
    if first_reverse is not None:
        _callables(first_reverse=first_reverse)
    steps = saves = restores = reverses = peak = 0
    for act in _actions(n, c):
        if act.kind == "advance":
            advance(act.a, act.b)
            steps += act.b - act.a
        elif act.kind == "save":
            save(act.a, act.slot)
            saves, peak = saves + 1, max(peak, act.slot + 1)
        elif act.kind == "restore":
            restore(act.slot)
            restores += 1
        else:
            if reverses == 0 and first_reverse is not None:
                first_reverse()
            reverse(act.a)
            reverses += 1
    return Stats(steps, saves, restores, reverses, peak)


class Reversal:
    """An optimal schedule run in two parts through the callbacks of
    ``reverse_with_checkpoints``: ``forward()`` advances to the last state (saving the
    checkpoints on the way) and takes the last forward step, so that whatever the forward run
    records is complete; ``backward()`` then reverses every state. A torch Function's forward
    returns the records in between, its backward runs the reversal."""

    def __init__(self, nstates, ncheckpoints, advance, save, restore, reverse):
        n, c = _count(nstates, "nstates"), _count(ncheckpoints, "ncheckpoints")
        _callables(advance=advance, save=save, restore=restore, reverse=reverse)
        actions = list(_actions(n, c))
        first = next(i for i, act in enumerate(actions) if act.kind == "reverse")
        self.nstates, self.ncheckpoints = n, c
        self._head, self._tail = actions[:first], actions[first:]
        self._advance, self._save, self._restore, self._reverse = advance, save, restore, reverse
        self._counts = [0, 0, 0, 0, 0]     # steps, saves, restores, reverses, peak slots
        self.swept = False                 # forward() ran and backward() not yet

    def _run(self, actions):
        counts = self._counts
        for act in actions:
            if act.kind == "advance":
                self._advance(act.a, act.b)
                counts[0] += act.b - act.a
            elif act.kind == "save":
                self._save(act.a, act.slot)
                counts[1], counts[4] = counts[1] + 1, max(counts[4], act.slot + 1)
            elif act.kind == "restore":
                self._restore(act.slot)
                counts[2] += 1
            else:
                self._reverse(act.a)
                counts[3] += 1

    def forward(self):
        """States 0 .. n-1 from state 0 (the caller's), then the last step n-1 -> n."""
        self._counts = [0, 0, 0, 0, 0]
        self._run(self._head)
        self._advance(self.nstates - 1, self.nstates)
        self._counts[0] += 1
        self.swept = True

    def backward(self) -> Stats:
        """Reverse states n-1 .. 0 (after ``forward``); returns what the whole reversal did."""
        if not self.swept:
            raise InvalidArgument("Reversal.backward: run forward() first (each backward "
                                  "consumes the states its forward() left)")
        self._run(self._tail)
        self.swept = False
        return Stats(*self._counts)

    @property
    def forward_steps(self) -> int:
        """Forward steps of one forward() and backward() together."""
        return cost(self.nstates, self.ncheckpoints) + 1
