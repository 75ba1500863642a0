"""Host code of two time steps a pass (``stencilgen/ir/steps``): the field's levels in a table
of buffers, the time loop that runs the pass, the step's sparse kernels after it and the
second step again around the sources, and the levels put back into the field's slots.

The pass writes levels ``t+1`` and ``t+2`` while other blocks still read ``t-1`` and ``t``
around their tiles: the field's slots and one buffer more hold the levels, ``sg_<u>_lv[L mod
B]`` the buffer of level ``L`` (B buffers). Every kernel of the loop reads the field through
that table, the one-step kernels too (an odd last step, the second step again where a source
was injected). At the end the last levels are copied into the slots the field's ring puts
them in (``(L mod slots)``), as a run one step at a time leaves them.

The pass is the autotuner's choice: its launch shapes follow the one-step nest's in the tuning
argument. It runs where every source's injection lies two nodes or more inside the domain (a
node beyond the edge is one of the field's halo, which the nest reads and no step rewrites).
"""
from __future__ import annotations

from dataclasses import replace

from . import fused_nests
from ..common import device_layout, interrupt


def pass_kernel(k):
    """The pass of nest ``k`` (``k.steps.kernel``) as its own section: ``<function>_steps``,
    timed as ``k``."""
    pk = k.steps.kernel
    return replace(pk, section=replace(k.section, function=f"{k.section.function}_steps"))


def table(k) -> str:
    return f"sg_{k.steps.field}_lv"


def level(k, c, time: str) -> str:
    """C text of the buffer of level ``time + c`` of ``k``'s field (``time``: the loop's
    counter)."""
    b = k.steps.buffers
    return f"{table(k)}[(({time} + {c}) % {b} + {b}) % {b}]"


def one_step_shapes(k) -> int:
    return len(fused_nests.shapes(k))


def describe(pk, shape) -> str:
    return "two time steps a pass, " + fused_nests.describe(pk, shape)


def chosen(k, tuning: str) -> str:
    """The host test that the tuning argument picks a pass shape for ``k``."""
    n1, n2 = one_step_shapes(k), len(fused_nests.shapes(k.steps.kernel))
    at = f"{tuning}[{k.section.timer}]"
    return f"{tuning} && {at} >= {n1} && {at} < {n1 + n2}"


def pass_pick(k, tuning: str) -> str:
    """The pass's launch shape: the tuning argument's entry less the one-step shapes."""
    return f"{tuning}[{k.section.timer}] - {one_step_shapes(k)}"


def _geometry(backend, a) -> tuple[str, str]:
    """(elements of a slot's buffer, elements before the first slot) of the field's device
    copy."""
    if backend.pitched(a):
        p = device_layout.Pitched(a.name)
        return p.stride(a.layout.strides[0][0]), p.front
    return a.layout.strides[0][0], "0"


def _sources(backend, k) -> list:
    """The sparse kernels of the loop that inject into ``k``'s field."""
    return [o for o in backend.program.steps if o.is_sparse and k.steps.field in o.writes]


def setup(backend, k) -> list[str]:
    """Before the loop: whether the pass runs (tuned so, at least two steps, every source
    inside), the box around the sources, and the level table (the slots and a buffer more,
    zeroed: its halo is read as the slots' is, zero)."""
    prog, s = backend.program, k.steps
    a = prog.array(s.field)
    real = backend.ctypes[a.name]
    st, front = _geometry(backend, a)
    lo, hi = prog.time_bounds
    n = len(prog.dims)
    lines = [f"/* {k.name}: two time steps a pass where tuned so (ir/steps) */",
             f"bool sg_two = ({chosen(k, backend.tuning)}) && {hi} >= {lo} + 1;",
             f"long sg_fix[{2 * n}];   /* the box the second step is computed again on */"]
    for i, d in enumerate(prog.dims):
        lines.append(f"sg_fix[{2 * i}] = {d.upper} + 1; sg_fix[{2 * i + 1}] = {d.lower} - 1;")
    for o in _sources(backend, k):
        sp = prog.array(o.sparse).layout
        lines += [f"for (long sg_q = 0; sg_q < {sp.npoint}; ++sg_q) {{"]
        for i, d in enumerate(prog.dims):
            ahead = f" - {o.stagger[i]!r}" if o.stagger and o.stagger[i] else ""
            # the cell in double precision: a node either side for the kernel's rounding
            cell = f"(long)floor(({sp.coords}[sg_q*{n} + {i}] - {d.origin})/{d.spacing}{ahead})"
            lines += [f"  {{ const long sg_c = {cell};",
                      f"    if (sg_c - 1 < sg_fix[{2 * i}]) sg_fix[{2 * i}] = sg_c - 1;",
                      f"    if (sg_c + 2 > sg_fix[{2 * i + 1}]) sg_fix[{2 * i + 1}] = sg_c + 2; }}"]
        lines.append("}")
    for i, d in enumerate(prog.dims):
        rl, rh = s.reach[i]
        lines += [f"if (sg_fix[{2 * i}] <= sg_fix[{2 * i + 1}]) {{",
                  f"  if (sg_fix[{2 * i}] < {d.lower} || sg_fix[{2 * i + 1}] > {d.upper}) "
                  "sg_two = false;   /* a source on the edge: its halo nodes */",
                  f"  sg_fix[{2 * i}] = sg_fix[{2 * i}] - {rh} > {d.lower} ? "
                  f"sg_fix[{2 * i}] - {rh} : {d.lower};",
                  f"  sg_fix[{2 * i + 1}] = sg_fix[{2 * i + 1}] - {rl} < {d.upper} ? "
                  f"sg_fix[{2 * i + 1}] - {rl} : {d.upper};", "}"]
    b, slots = s.buffers, a.time_size
    t = table(k)
    first = [f"{t}[(({lo} + {c}) % {b} + {b}) % {b}] = {a.name} + "
             f"(({lo} + {c}) % {slots} + {slots}) % {slots}*{st};"
             for c in range(2 - slots, 2)]
    size = f"({front} + {st})*sizeof({real})"
    lines += [f"{real} *{t}[{b}] = {{}};",
              "/* no memory for the buffer more: one step at a time (the same results) */",
              f"if (sg_two && cudaMalloc((void **)&{extra(k)}, {size}) != cudaSuccess) {{",
              f"  (void)cudaGetLastError(); {extra(k)} = NULL; sg_two = false;", "}",
              "if (sg_two) {",
              f"  SG_CHECK(cudaMemset({extra(k)}, 0, {size}));"]
    lines += ["  " + ln for ln in first]
    lines += [f"  {t}[(({lo} + 2) % {b} + {b}) % {b}] = {extra(k)} + ({a.name} - "
              f"{a.layout.vec});", "}"]
    return lines


def extra(k) -> str:
    return f"sg_{k.steps.field}_extra"


def declarations(k, real: str) -> list[str]:
    """Declared at the top of the entry point (freed at its cleanup label)."""
    return [f"{real} *{extra(k)} = NULL;"]


def cleanup(k) -> list[str]:
    e = extra(k)
    return [f'if ({e}) sg_release(cudaFree({e}), "cudaFree({e})", &sg_status);']


def loop(backend, k) -> list[str]:
    """The time loop that runs passes: the pass, the sparse kernels of its first step, the
    second step again on the box around the sources, the sparse kernels of the second; an
    odd last step one step at a time. Every launch reaches the field through the level table
    (``CudaBackend.stepped_launches``)."""
    prog = backend.program
    pass_launch, one_step, again, sparse = backend.stepped_launches()
    slot_lines = [str(s) for s in backend.time_slots()]
    lo, hi = prog.time_bounds
    t = prog.time.name
    n = len(prog.dims)

    def at(c, body):   # ``body`` with ``time`` standing for step ``time + c``
        return ["{", f"  const long sg_tp = {t} + {c};", "  {",
                f"    const long {t} = sg_tp;"] + \
            ["    " + ln for ln in slot_lines + body] + ["  }", "}"]
    box = [f"const long {d.lower} = sg_fix[{2 * i}], {d.upper} = sg_fix[{2 * i + 1}];"
           for i, d in enumerate(prog.dims)]
    fix = [f"if ({' && '.join(f'sg_fix[{2 * i}] <= sg_fix[{2 * i + 1}]' for i in range(n))}) {{"] \
        + ["  " + ln for ln in box + again] + ["}"]
    # the second step again is timed where its pass was (the section's timer samples a launch
    # in SG_SAMPLE: the pass's launches alone would stand for both)
    two = pass_launch + ["const bool sg_pass_timed = sg_timing;"] + at(0, sparse) + \
        at(1, fix + sparse)
    lines = ["/* the loop of passes (cuda_steps) */", f"long sg_next = {lo};",
             f"for (long {t} = {lo}; {t} <= {hi}; ) {{",
             f"  if ({t} + 1 <= {hi}) {{"] + ["    " + ln for ln in two] + \
        [f"    sg_next = {t} + 2;", f"    {t} += 2;", "    " + interrupt.step_end(prog, 2), "  } else {"] + \
        ["    " + ln for ln in at(0, one_step + sparse)] + \
        [f"    sg_next = {t} + 1;", f"    {t} += 1;", "    " + interrupt.step_end(prog), "  }", "}"]
    return lines + restore(backend, k) + ["/* end of the loop of passes */"]


def restore(backend, k) -> list[str]:
    """The field's last levels (``sg_next`` the last written) copied from the level table
    into the slots of its ring, the spare buffer taking a level where they form a cycle."""
    prog, s = backend.program, k.steps
    a = prog.array(s.field)
    real = backend.ctypes[a.name]
    st, front = _geometry(backend, a)
    slots, b, t = a.time_size, s.buffers, table(k)
    return [
        f"/* the last {slots} levels into the field's slots, as one step at a time leaves them */",
        f"{real} *sg_from[{slots}], *sg_to[{slots}];",
        f"for (int sg_j = 0; sg_j < {slots}; ++sg_j) {{",
        "  const long sg_l = sg_next - sg_j;",
        f"  const long sg_at = (sg_l % {slots} + {slots}) % {slots};",
        f"  sg_from[sg_at] = {t}[(sg_l % {b} + {b}) % {b}];",
        f"  sg_to[sg_at] = {a.name} + sg_at*{st};",
        "}",
        f"const long sg_in = ({a.name} - {a.layout.vec}) - ({front});",
        f"for (int sg_round = 0; sg_round < {2 * slots}; ++sg_round) {{",
        "  int sg_moved = 0, sg_left = -1;",
        f"  for (int sg_j = 0; sg_j < {slots}; ++sg_j) {{",
        "    if (sg_from[sg_j] == sg_to[sg_j]) continue;",
        "    bool sg_busy = false;   /* another level still to be read from that slot */",
        f"    for (int sg_i = 0; sg_i < {slots}; ++sg_i)",
        "      sg_busy = sg_busy || (sg_i != sg_j && sg_from[sg_i] == sg_to[sg_j]);",
        "    if (sg_busy) { sg_left = sg_j; continue; }",
        f"    SG_CHECK(cudaMemcpy(sg_to[sg_j] - sg_in, sg_from[sg_j] - sg_in, "
        f"{st}*sizeof({real}), cudaMemcpyDeviceToDevice));",
        "    sg_from[sg_j] = sg_to[sg_j];",
        "    ++sg_moved;",
        "  }",
        "  if (!sg_moved && sg_left >= 0) {   /* a cycle: one slot's level to the spare */",
        f"    {real} *sg_spare = NULL;",
        f"    for (int sg_i = 0; sg_i < {b} && !sg_spare; ++sg_i) {{",
        "      bool sg_used = false;",
        f"      for (int sg_j = 0; sg_j < {slots}; ++sg_j) "
        f"sg_used = sg_used || sg_from[sg_j] == {t}[sg_i];",
        f"      if (!sg_used) sg_spare = {t}[sg_i];",
        "    }",
        f"    SG_CHECK(cudaMemcpy(sg_spare - sg_in, sg_to[sg_left] - sg_in, {st}*sizeof({real}), "
        "cudaMemcpyDeviceToDevice));",
        f"    for (int sg_i = 0; sg_i < {slots}; ++sg_i)",
        "      if (sg_from[sg_i] == sg_to[sg_left]) sg_from[sg_i] = sg_spare;",
        "  }",
        "}",
    ]
