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


class BoxReads:
    """``FusedKernel``'s point reads of the arrays zero in their boxes, predicated off inside
    them where the nest is split (mixed into the kernel: it reads the kernel's nest and
    printer)."""

    def _outside_box(self, a) -> str:
        """`` && !(...)``: the test that access ``a`` lies outside its array's zero box
        (``Function.zero_box``, where the nest is split at run time): inside, the value is
        zero by declaration and is not read (the sponge's damping: 4 bytes a point less in
        the interior). Empty for other arrays."""
        box = self._zero_box(a.base.name)
        if box is None:
            return ""
        own = tuple(a.indices[-len(box.lower):])   # the array's own dimensions (``box.axes``)
        tests = self._box_tests(box, own)
        for c in range(self.q):   # at the thread's point: the inner part found once
            if own == self._box_point(box, c):
                streamed = [t for t, axis in zip(tests, box.axes) if axis == 0]
                return f" && !({' && '.join(streamed + [self._box_flag(box, c)])})"
        return f" && !({test(' && '.join(tests))})"

    def _zero_box(self, name: str):
        """The zero box of array ``name`` where the nest is split at run time, else None."""
        split = self.k.split
        if split is None or name not in split.arrays:
            return None
        return next(b for b in self.b.program.zero_boxes if b.array == name)

    def _box_tests(self, box, idx) -> list[str]:
        """Per axis of ``box``, the test that index ``idx`` (sympy, per axis) lies in it."""
        return [f"{self.base.doprint(i)} >= {lo} && {self.base.doprint(i)} <= {hi}"
                for i, lo, hi in zip(idx, box.lower, box.upper)]

    def _box_point(self, box, c: int) -> tuple:
        """The thread's point ``c`` on ``box``'s axes."""
        last = len(self.k.dims) - 1
        return tuple(self.k.dims[axis] + (c if axis == last else 0) for axis in box.axes)

    @staticmethod
    def _box_flag(box, c: int) -> str:
        return f"sg_zb_{box.array}{c}"

    def _box_flags(self) -> list[str]:
        """Per zero box and point of the thread, the test that its inner indices lie in the
        box, found once (``_outside_box``)."""
        split = self.k.split
        out = []
        for name in (split.arrays if split is not None else ()):
            box = self._zero_box(name)
            for c in range(self.q):
                inner = [t for t, axis in zip(self._box_tests(box, self._box_point(box, c)),
                                              box.axes) if axis != 0]
                out.append(f"const bool {self._box_flag(box, c)} = "
                           f"{test(' && '.join(inner) or 'true')};")
        return out
