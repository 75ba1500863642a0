"""The run-time zero split (``Kernel.split``, ``ir/zero_split``) as the autotuner's choice on
CUDA.

A split nest's kernel is a template over ``sg_zs``: true, each point tests its zero box (a
plain nest then runs the split body inside it, a staged one skips the zero arrays' reads
there); false, the test is compiled out and every point runs the nest's own body (the same
values: the arrays are zero there). The test costs instructions a point and saves the zero
arrays' bytes in the box: on an H200 it cost the unstaged acoustic nest 14 % in float16
storage and 5 % in float32 (docs/performance.md), where a nest reading more zero arrays, or a
grid more of whose points lie in the box, may gain. So the section's launch shapes are
offered twice in the tuning argument, with the split first, then the same shapes without it
(a two-step pass's shapes are among them); the host splits the entry once a call into the
flag ``sg_zs<section>`` and the shape's own index in ``sg_tuned``. The setting
``zero-split=on`` offers the split alone (every launch instantiates ``true``).
"""
from __future__ import annotations

#: the host copy of the tuning argument with each split section's entry reduced to its shape
TUNED = "sg_tuned"


def templated(k) -> bool:
    """Whether nest ``k``'s kernel is a template over ``sg_zs`` (it is split at run time)."""
    return k.split is not None


def offered(backend, k) -> bool:
    """Whether the tuning argument chooses ``k``'s split (else it always runs split)."""
    return templated(k) and backend.options.zero_split == "auto"


#: the split where nothing is tuned: off. On an H200 (512^3, so 8, its sponge) the autotuner
#: kept the nests without it, staged float32 and unstaged float16 alike (docs/performance.md)
DEFAULT_ON = False


def flag(k) -> str:
    """The host flag: whether section ``k`` runs its split instance."""
    return f"sg_zs{k.section.timer}"


def test(text: str) -> str:
    """C text of a point's box test as compiled in the instance (``sg_zs`` false: none)."""
    return f"sg_zs && ({text})"


def template_param(k) -> str:
    return ", bool sg_zs" if templated(k) else ""


def instances(backend, k, lines_for) -> list[str]:
    """Launch lines of ``k``'s instances: ``lines_for(extra)`` gives the lines with the extra
    template arguments ``extra`` (``", true"``); the flag picks the instance where the split
    is offered."""
    if not templated(k):
        return lines_for("")
    if not offered(backend, k):
        return lines_for(", true")
    return [f"if ({flag(k)}) {{"] + ["  " + ln for ln in lines_for(", true")] + \
        ["} else {"] + ["  " + ln for ln in lines_for(", false")] + ["}"]


def describe(shapes: tuple) -> tuple:
    """The descriptions of a split section's offered shapes: with the split, then without."""
    return tuple(f"{s}, zero split" for s in shapes) + \
        tuple(f"{s}, no zero split" for s in shapes)


def host_lines(backend, shapes: dict, tuning: str) -> list[str]:
    """Declarations at the top of the entry point: ``sg_tuned`` (the tuning argument with each
    offered section's entry reduced to its shape, -1 where none is given or it is out of
    range: the default shape) and each section's flag. ``shapes``: the backend's
    ``launch_shapes()`` (a split section's: both halves)."""
    kernels = [k for k in backend.program.kernels if offered(backend, k)]
    if not kernels:
        return []
    n = max(len(backend.program.kernels), 1)
    lines = ["/* the zero split, the tuner's choice: a split section's shapes with it, then "
             "without it */",
             f"long {TUNED}[{n}];",
             f"for (int sg_i = 0; sg_i < {n}; ++sg_i) {TUNED}[sg_i] = {tuning} ? "
             f"{tuning}[sg_i] : -1;"]
    for k in kernels:
        t, half = k.section.timer, len(shapes[k.section.timer]) // 2
        given = f"{TUNED}[{t}] >= 0 && {TUNED}[{t}] < {2 * half}"
        lines += [f"const bool {flag(k)} = {given} ? {TUNED}[{t}] < {half} : "
                  f"{'true' if DEFAULT_ON else 'false'};",
                  f"{TUNED}[{t}] = {given} ? {TUNED}[{t}] % {half} : -1;"]
    return lines
