"""One launch for a step's independent sparse operations (CUDA).

A seismic step injects its sources and samples its receivers in small kernels of a few
thousand threads each: a few microseconds of work, and as much again between two launches
(the 2D batch gradient of 32 shots spent a quarter of its time between kernels on an H200).
Consecutive sparse kernels of which none touches what another writes (at the slot level:
injecting into u[t2] while sampling u[t0] is independent; two injections into one array
commute, their adds being atomic) run as one kernel whose blocks are split between them, each
part a grid-stride loop over its own points. The group is timed as its first section.
"""
from __future__ import annotations

import sympy

from .launch import GRID_WAIT, early

SPARSE_GROUP_MIN = 2


def groups(backend, kernels) -> dict:
    """First kernel -> the kernels launched with it, for each run of ``kernels`` (in program
    order) that can share a launch; a kernel found in no group runs alone."""
    prog = backend.program
    if prog.split or backend.options.debug:
        return {}
    out, run = {}, []

    def close():
        if len(run) >= SPARSE_GROUP_MIN:
            out[run[0]] = tuple(run)
    for k in kernels:
        if k.is_sparse and run and run[0].when == k.when and \
                all(_independent(prog, other, k) for other in run):
            run.append(k)
            continue
        close()
        run = [k] if k.is_sparse else []
    close()
    return out


def _touches(prog, k):
    """(reads, writes) of sparse kernel ``k`` (its counted accesses): (array name, time
    index or None) pairs."""
    def keys(table):
        return {(name, o[0] if prog.array(name).time_size is not None else None)
                for name, offsets in table.items() for o in offsets}
    return keys(k.reads), keys(k.writes)


def _same(ring, a, b) -> bool:
    """Whether accesses ``a`` and ``b`` ((name, time index)) may reach one element (``ring``:
    the program's time slot symbols)."""
    if a[0] != b[0]:
        return False
    if a[1] is None or b[1] is None:
        return True
    if a[1] in ring and b[1] in ring:
        ta, tb = ring[a[1]], ring[b[1]]
        return ta.modulo != tb.modulo or ta.shift % ta.modulo == tb.shift % tb.modulo
    diff = sympy.simplify(a[1] - b[1])
    return not (diff.is_Integer and diff != 0)


def _independent(prog, k1, k2) -> bool:
    """Whether ``k1`` and ``k2`` may run at once: neither writes what the other touches, but
    for two injections adding into one place."""
    (r1, w1), (r2, w2) = _touches(prog, k1), _touches(prog, k2)
    ring = {ti.symbol: ti for ti in prog.time_indices}
    both_add = k1.kind == "inject" and k2.kind == "inject"
    for a in w1:
        if any(_same(ring, a, b) for b in r2) or \
                (not both_add and any(_same(ring, a, b) for b in w2)):
            return False
    return not any(_same(ring, a, b) for a in w2 for b in r1)


def parameters(backend, members) -> list:
    """The group kernel's parameters: each member's, once (writable where one writes)."""
    out, seen = [], {}
    for k in members:
        for a in backend.kernel_args(k):
            if a.name not in seen:
                seen[a.name] = len(out)
                out.append(a)
            elif out[seen[a.name]].ctype != a.ctype and not a.ctype.startswith("const "):
                out[seen[a.name]] = a
    return out


def function_name(members) -> str:
    first = members[0].section.function
    return first + "".join(f"_{k.name}" for k in members[1:])


def device_kernel(backend, members, args, threads: int) -> str:
    """The ``__global__`` function: block b runs the part whose range of blocks holds it."""
    params = ",\n    ".join([f"{a.ctype} {a.name}" for a in args] +
                            [f"const sg_int sg_part{i}" for i in range(1, len(members))])
    lines = ["  const sg_int sg_bx = (sg_int)blockIdx.x;"]
    for i, k in enumerate(members):
        lo = f"sg_part{i}" if i else "0"
        hi = f"sg_part{i + 1}" if i + 1 < len(members) else "(sg_int)gridDim.x"
        test = f"sg_bx < {hi}" if i + 1 < len(members) else None
        with backend._printing(k):
            loop = backend.sparse_part(k, f"(sg_bx - {lo})" if i else "sg_bx", f"({hi} - {lo})"
                                       if i else hi)
        body = ["    " + ln for ln in str(loop).splitlines()]
        head = ("if" if i == 0 else "} else if") + f" ({test}) {{" if test else "} else {"
        lines += ["  " + head] + body
    lines.append("  }")
    names = " + ".join(k.name for k in members)
    return (f"/* {names}: one launch, blocks split between them */\n"
            f"template <typename sg_int, int sg_r>\n"
            f"static __global__ void __launch_bounds__({threads})\n"
            f"{function_name(members)}({params})\n{{\n  {GRID_WAIT}\n" + "\n".join(lines)
            + "\n}\n")


def launch(backend, members, args, threads: int, limit: str) -> list[str]:
    """Host lines launching the group, timed as its first section."""
    prog = backend.program
    timer = members[0].section.timer
    counts = [prog.array(k.sparse).layout.npoint for k in members]
    blocks = [f"sg_blocks({n}, {threads}, {limit})" for n in counts]
    lines = [f"/* {' + '.join(k.name for k in members)} */"]
    lines += [f"const long sg_g{i} = {b};" for i, b in enumerate(blocks)]
    ends = [" + ".join(f"sg_g{j}" for j in range(i + 1)) for i in range(len(members))]
    call = ", ".join([a.host for a in args] + [f"(long)({e})" for e in ends[:-1]])
    narrow = " && ".join(backend.narrow_flag(k) for k in members)
    name = function_name(members)
    body = [f"const dim3 sg_block({threads});", f"const dim3 sg_grid({ends[-1]});",
            f"SG_TIMER_START({timer});",
            f"if ({narrow}) {early(f'{name}<int, 1>', call)}",
            f"else {early(f'{name}<long, 1>', call)}",
            f'SG_CHECK_AS(cudaGetLastError(), "launch of kernel {name}");',
            f"SG_TIMER_STOP({timer});"]
    lines += [f"if ({ends[-1]} > 0) {{"] + ["  " + ln for ln in body] + ["}"]
    if members[0].when is not None:
        lines = [f"if ({backend.expr(members[0].when)}) {{"] + ["  " + ln for ln in lines] + ["}"]
    return ["{"] + ["  " + ln for ln in lines] + ["}"]
