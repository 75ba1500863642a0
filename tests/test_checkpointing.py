"""Binomial checkpointing (stencilgen/seismic/checkpointing.py): every schedule is run on a fake
state machine that checks each action; its forward steps match a brute-force minimum."""
import math
import time

import pytest

from stencilgen.seismic.checkpointing import (Action, Stats, _split, _steps, cost,
                                      reverse_with_checkpoints, schedule)
from stencilgen.errors import InvalidArgument


def brute_force(lmax, smax):
    """dp[s][l]: least forward steps to reverse l states from the first, saved, with s more
    slots, by trying every first step j."""
    dp = [[0] * (lmax + 1) for _ in range(smax + 1)]
    for length in range(2, lmax + 1):
        dp[0][length] = length * (length - 1) // 2
    for s in range(1, smax + 1):
        for length in range(2, lmax + 1):
            dp[s][length] = min(j + dp[s - 1][length - j] + dp[s][j] for j in range(1, length))
    return dp


class Machine:
    """A forward computation whose state is a mutable [k]; each callback checks its contract."""

    def __init__(self, n, c):
        self.n, self.c = n, c
        self.state, self.slots = [0], {}
        self.steps, self.reversed, self.events = 0, [], []

    def advance(self, a, b):
        assert self.state == [a] and a < b <= self.n - 1
        self.steps += b - a
        self.state[0] = b  # in place: a slot aliasing the current state would change too
        self.events.append(("advance", a, b))

    def save(self, k, slot):
        assert self.state == [k] and 0 <= slot < self.c
        self.slots[slot] = list(self.state)
        self.events.append(("save", k, slot))

    def restore(self, slot):
        self.state = list(self.slots[slot])
        self.events.append(("restore", slot))

    def reverse(self, k):
        assert self.state == [k]
        assert k == self.n - 1 - len(self.reversed), "reverse out of order"
        self.reversed.append(k)
        self.state = ["spent"]  # the schedule must not rely on the state after a reverse
        self.events.append(("reverse", k))

    def run(self, **kwargs):
        return reverse_with_checkpoints(self.n, self.c, self.advance, self.save, self.restore,
                                        self.reverse, **kwargs)


def test_every_small_schedule_is_valid_and_optimal():
    """n = 1..80, c = 1..6: right order, right states, slots in range, cost = the minimum."""
    dp = brute_force(80, 5)
    for n in range(1, 81):
        for c in range(1, 7):
            m = Machine(n, c)
            stats = m.run()
            assert m.reversed == list(range(n - 1, -1, -1))
            assert stats.forward_steps == m.steps == cost(n, c) == dp[min(c - 1, 5)][n]
            assert stats.reverses == n and stats.peak_slots <= c and len(m.slots) <= c
            assert stats.saves == sum(e[0] == "save" for e in m.events)
            assert stats.restores == sum(e[0] == "restore" for e in m.events)


def test_schedule_actions_match_the_callbacks():
    """``schedule`` lists what ``reverse_with_checkpoints`` does; restores name their state."""
    m = Machine(23, 3)
    m.run()
    acts = schedule(23, 3)
    assert all(isinstance(x, Action) for x in acts)
    held = {}
    for act, event in zip(acts, m.events, strict=True):
        if act.kind == "advance":
            assert event == ("advance", act.a, act.b)
        elif act.kind == "save":
            assert event == ("save", act.a, act.slot)
            held[act.slot] = act.a
        elif act.kind == "restore":
            assert event == ("restore", act.slot) and held[act.slot] == act.a
        else:
            assert event == ("reverse", act.a)


def test_closed_form_and_splits_against_brute_force():
    """The closed-form cost and each split the schedule takes are optimal up to 250 states
    and 8 free slots."""
    dp = brute_force(250, 8)
    for s in range(9):
        for length in range(1, 251):
            assert _steps(length, s) == dp[s][length]
            if s and length >= 2:
                j = _split(length, s)
                assert 1 <= j < length
                assert j + dp[s - 1][length - j] + dp[s][j] == dp[s][length]


def test_cost_values():
    """A few values by hand: c = 1 is the triangle number, enough slots is one sweep, and a
    binomial boundary n = C(c + t, c) costs t*n - C(c + t, c + 1)."""
    assert cost(1, 1) == 0 and cost(5, 1) == 10 and cost(5, 5) == 4 and cost(5, 99) == 4
    assert cost(3, 2) == 2 and cost(6, 2) == 2 * 6 - 4
    n = math.comb(10 + 3, 10)
    assert cost(n, 10) == 3 * n - math.comb(13, 11)


def test_store_everything_when_slots_suffice():
    """c >= n: each state is advanced to once and restored once (the last reversed at once)."""
    m = Machine(12, 12)
    stats = m.run()
    assert stats == Stats(forward_steps=11, saves=11, restores=11, reverses=12, peak_slots=11)
    assert stats.recompute_factor == 1.0


def test_large_schedule_is_fast_and_optimal():
    """n = 10000, c = 20 in well under two seconds, in order, at the closed-form cost."""
    start = time.perf_counter()
    order, steps = [], 0
    for act in schedule(10000, 20):
        if act.kind == "advance":
            steps += act.b - act.a
        elif act.kind == "reverse":
            order.append(act.a)
    assert time.perf_counter() - start < 2.0
    assert order == list(range(9999, -1, -1))
    assert steps == cost(10000, 20)
    # t = 4 sweeps: C(20 + 3, 20) = 1771 < 10000 <= C(20 + 4, 20) = 10626
    assert steps == 4 * 10000 - math.comb(21 + 3, 21) == 37976


def test_reversal_of_a_recurrence_is_bitwise_equal():
    """d x_{n-1} / d x_0 of x_{k+1} = sin(x_k) + 0.01 k, reversed with 4 checkpoints, equals
    the product over stored states exactly."""
    n, c = 300, 4
    xs = [0.7]
    for k in range(n - 1):
        xs.append(math.sin(xs[-1]) + k * 0.01)
    stored = 1.0
    for k in range(n - 2, -1, -1):
        stored *= math.cos(xs[k])

    state, slots, grad = {"k": 0, "x": 0.7}, {}, [1.0]

    def advance(a, b):
        for k in range(a, b):
            state["x"] = math.sin(state["x"]) + k * 0.01
        state["k"] = b

    def reverse(k):
        assert state["k"] == k and state["x"] == xs[k]
        if k < n - 1:
            grad[0] *= math.cos(state["x"])

    def save(k, slot):
        slots[slot] = dict(state)

    stats = reverse_with_checkpoints(n, c, advance, save, lambda s: state.update(slots[s]),
                                     reverse)
    assert grad[0] == stored and grad[0] != 0.0
    assert stats.forward_steps == cost(n, c) and stats.recompute_factor > 1.0


def test_first_reverse_once_before_the_first_reverse():
    """first_reverse runs once, with the forward computation in state n-1, before reverse."""
    for n, c in [(1, 1), (2, 1), (17, 3), (17, 40)]:
        m = Machine(n, c)
        m.run(first_reverse=lambda m=m: m.events.append(("first", list(m.state))))
        firsts = [i for i, e in enumerate(m.events) if e[0] == "first"]
        reverses = [i for i, e in enumerate(m.events) if e[0] == "reverse"]
        assert len(firsts) == 1 and firsts[0] + 1 == reverses[0]
        assert m.events[firsts[0]][1] == [n - 1]


@pytest.mark.parametrize("n, c, name", [(0, 3, "nstates"), (5, 0, "ncheckpoints"),
                                         (2.0, 3, "nstates"), (5, "3", "ncheckpoints"),
                                         (True, 3, "nstates"), (-4, 3, "nstates")])
def test_bad_counts(n, c, name):
    for call in (cost, schedule):
        with pytest.raises(InvalidArgument, match=f"{name} must be an integer >= 1"):
            call(n, c)
    with pytest.raises(InvalidArgument, match=name):
        reverse_with_checkpoints(n, c, print, print, print, print)


def test_bad_callbacks():
    with pytest.raises(InvalidArgument, match="restore must be a callable"):
        reverse_with_checkpoints(5, 2, print, print, None, print)
    with pytest.raises(InvalidArgument, match="first_reverse must be a callable"):
        reverse_with_checkpoints(5, 2, print, print, print, print, first_reverse=3)
