"""Names the fused printer and its register queues share: a staged input's shared ring and
its thread's column."""
from __future__ import annotations


def _tag(slot) -> str:
    return "n" if slot is None else str(slot)


def ring(s) -> str:
    """The shared plane of staged ``s``."""
    return f"sg_st_{s.name}_{_tag(s.slot)}"


def column(s) -> str:
    """The prefix of staged ``s``'s values in the thread's own column (its next value, the
    test that its reads reach the column)."""
    return f"sg_col_{s.name}_{_tag(s.slot)}"
