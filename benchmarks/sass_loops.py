"""Static SASS of a fused CUDA nest's plane loop, per kind of thread, without a GPU.

    python benchmarks/sass_loops.py                       # SA-TTI so 8, tile 16x32
    python benchmarks/sass_loops.py --program vd3d --tile 8x32
    python benchmarks/sass_loops.py --source kernel.cu --tile 16x32   # a source of your own

The fused kernel (``backends/cuda/fused_nests.py``) runs one plane loop whose branches depend on the
thread's kind: 0 the tile, 1 a halo row, 2 a halo column. For each kind the source is
compiled with the kind fixed (nvcc -arch=sm_90, the 32-bit index instance of the tile), so
the other kinds' code drops out, and the instructions of the loop that holds the barrier are
counted (nvdisasm), with their opcodes and ptxas' registers and spills. The counts weighted
by the threads of each kind give the instructions a point: within 10 % of Nsight Compute's
figure for SA-TTI (613 against 667 on an H200, issue 63), close enough to rank changes
before spending GPU time. Needs nvcc and nvdisasm (``NVDISASM``, on the PATH, beside nvcc,
or ``pip install nvidia-cuda-nvdisasm``).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

KINDS = ("tile", "halo rows", "halo columns")
#: where the fixed kind goes: after the thread's point is found, before its coordinates
_HOOK = re.compile(r"^(\s*)const sg_int \w+ = sg_o0 \+ sg_i0;$", re.M)


def nvdisasm() -> str:
    """The nvdisasm to use, or SystemExit saying where to get one."""
    found = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    nvcc = shutil.which("nvcc")
    if not found and nvcc and (Path(nvcc).parent / "nvdisasm").exists():
        found = str(Path(nvcc).parent / "nvdisasm")
    if not found:
        try:
            import nvidia.cu13   # noqa: F401  (pip install nvidia-cuda-nvdisasm)
            found = str(Path(sys.modules["nvidia.cu13"].__path__[0]) / "bin" / "nvdisasm")
        except ImportError:
            pass
    if not found or not Path(found).exists():
        raise SystemExit("sass_loops: no nvdisasm (set NVDISASM, put it on the PATH or "
                         "pip install nvidia-cuda-nvdisasm)")
    return found


def loop_counts(sass: str, function: str) -> tuple[int, dict]:
    """(instructions, per opcode) of the loop holding the last barrier of the function whose
    section name contains ``function``, in nvdisasm text (the widest backward branch around
    that barrier)."""
    parts = re.split(r"\n\s*\.text\.(\S+):", sass)
    bodies = [parts[i + 1] for i in range(1, len(parts), 2) if function in parts[i]]
    if not bodies:
        raise ValueError(f"no function named like {function!r} in the SASS")
    ins, labels, label = [], {}, None
    for line in bodies[0].splitlines():
        m = re.match(r"\s*\.L_x_(\d+):", line)
        if m:
            label = m.group(1)
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m:
            at = int(m.group(1), 16)
            ins.append((at, m.group(2)))
            if label is not None:
                labels[label], label = at, None
    barriers = [at for at, text in ins if "BAR.SYNC" in text]
    if not barriers:
        raise ValueError(f"{function}: no barrier, so no plane loop")
    loops = []
    for at, text in ins:
        m = re.search(r"\bBRA\b.*\.L_x_(\d+)", text)
        if m and labels.get(m.group(1), at) < at:
            loops.append((labels[m.group(1)], at))
    around = [lp for lp in loops if lp[0] <= barriers[-1] <= lp[1]]
    if not around:
        raise ValueError(f"{function}: its last barrier is in no loop")
    lo, hi = max(around, key=lambda lp: lp[1] - lp[0])
    ops: dict = {}
    for at, text in ins:
        if lo <= at <= hi:
            words = text.split()
            op = (words[1] if words[0].startswith("@") else words[0]).split(".")[0]
            ops[op] = ops.get(op, 0) + 1
    return sum(ops.values()), ops


def _source(program: str) -> tuple[str, object]:
    """The CUDA source of ``program`` (fused) and its fused nest's kernel."""
    from stencilgen import configuration
    configuration["fusion"] = "on"
    if program == "tti3d":
        from demos.dummy_benchmark.run import setup
        op = setup((64, 64, 64), backend="cuda")[0]
    else:
        from fusion_check import variable_density
        op = variable_density((40, 36, 44), "cuda")[0]
    fused = [k for k in op.program.kernels if k.fusion is not None]
    if not fused:
        raise SystemExit(f"sass_loops: {program} fused no nest")
    return op.ccode, fused[0]


def measure(source: str, function: str, tile, kinds=(0, 1, 2)) -> dict:
    """Per kind: (loop instructions, per opcode, registers, spill bytes)."""
    if not _HOOK.search(source):
        raise SystemExit("sass_loops: the source has no fused kernel's point (sg_o0 + sg_i0)")
    src = _HOOK.sub(lambda m: f"{m.group(1)}#ifdef SG_FORCE_KIND\n{m.group(1)}sg_kind = "
                    f"SG_FORCE_KIND;\n{m.group(1)}#endif\n{m.group(0)}", source, count=1)
    name = f"{function}IiLi{tile[0]}ELi{tile[1]}E" if len(tile) == 2 else \
        f"{function}IiLi{tile[0]}E"
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cu"
        path.write_text(src)
        for kind in kinds:
            cubin = Path(tmp) / f"k{kind}.cubin"
            run = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v",
                                  f"-DSG_FORCE_KIND={kind}", "-o", str(cubin), str(path)],
                                 capture_output=True, text=True)
            if run.returncode:
                raise SystemExit(f"sass_loops: nvcc failed:\n{run.stderr[-3000:]}")
            m = re.search(rf"{name}.*?\n.*?\n\s*\d+ bytes stack frame, (\d+) bytes spill "
                          rf"stores.*?\n.*?Used (\d+) registers", run.stderr)
            sass = subprocess.run([nvdisasm(), "-c", str(cubin)], capture_output=True,
                                  text=True, check=True).stdout
            count, ops = loop_counts(sass, name)
            out[kind] = (count, ops, int(m.group(2)) if m else None,
                         int(m.group(1)) if m else None)
    return out


def threads(fusion, tile) -> list[int]:
    """Threads of each kind a block of ``tile`` holds (3D: tile, halo rows, halo columns)."""
    q = fusion.pair
    (l0, h0), (l1, h1) = fusion.bands
    if len(tile) == 1:
        return [tile[0], l0 + h0, 0]
    return [tile[0] * tile[1] // q, (l0 + h0) * tile[1] // q, tile[0] * (l1 + h1) // q]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks/sass_loops.py", description=__doc__.split("\n")[0])
    p.add_argument("--program", choices=("tti3d", "vd3d"), default="tti3d")
    p.add_argument("--tile", default="16x32", help="the instance counted, e.g. 16x32")
    p.add_argument("--source", help="count this CUDA source's fused kernel instead (its "
                                    "nest is the program's: --program gives the threads)")
    args = p.parse_args(argv)
    tile = tuple(int(n) for n in args.tile.split("x"))
    source, k = _source(args.program)
    if args.source:
        source = Path(args.source).read_text()
    if tile not in k.fusion.tiles:
        raise SystemExit(f"sass_loops: tile {args.tile} is not one of "
                         f"{', '.join('x'.join(map(str, t)) for t in k.fusion.tiles)}")
    n = threads(k.fusion, tile)
    found = measure(source, k.section.function, tile, [i for i in range(3) if n[i]])
    points = 1
    for size in tile:
        points *= size
    print(f"{args.program}, tile {args.tile}: the plane loop's SASS instructions per thread")
    print("| kind | threads | instructions | registers | spill bytes | top opcodes |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    total = 0
    for kind, (count, ops, regs, spill) in found.items():
        total += n[kind] * count
        top = " ".join(f"{o} {c}" for o, c in sorted(ops.items(), key=lambda kv: -kv[1])[:8])
        print(f"| {KINDS[kind]} | {n[kind]} | {count} | {regs} | {spill} | {top} |")
    print(f"estimated instructions a point: {total / points:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
