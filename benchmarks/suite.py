#!/usr/bin/env python
"""The standing benchmark table, run on the machine it finds within a time budget, written as a
record and compared with earlier records or with another commit run beside it.

    python benchmarks/suite.py                         # every workload this machine can run
    python benchmarks/suite.py --only acoustic sa-tti  # a subset (space- or comma-separated)
    python benchmarks/suite.py --compare b414cf9       # that commit beside this tree, alternately
    python benchmarks/suite.py --quick --out DIR       # small sizes on the C backend (CI)
    python benchmarks/suite.py --plan                  # what would run, and its estimated cost
    python benchmarks/suite.py --table                 # the standing table of the records

Workloads, in the standing order (GPU ones only where nvidia-smi finds a GPU and nvcc exists):
``sa-tti``/``sa-tti-f16`` (demos/dummy_benchmark/run.py at the README's 412x423x476 x 200,
float32 and float16 storage), ``acoustic`` (figures ``acoustic``, ``acoustic-f16``: the
so 8 at 512^3 with its sponge, 200 steps, one benchmarks/roofline.py run giving both storages),
``staggered`` (the variable-density program of vs_devito.py at 512^3 x 200 on CUDA, run from
this file through the public API so that any commit runs the same), ``fwi`` (``fwi-3d``,
``fwi-2d``: benchmarks/fwi_gradient.py against deepwave, where torch and deepwave import),
``pystencils`` (../shared/pystencils/compare.py, where pystencils and CuPy import); CPU, where
Devito imports: ``vs-devito`` (``vs-devito-acoustic``, ``vs-devito-staggered``: the same-run
ratios stencilgen / Devito of benchmarks/vs_devito.py at its defaults, 160^3 x 40, each its
own best of 3).

Each workload runs as a subprocess of the tree under test (its own scripts, PYTHONPATH and cwd
that tree), with STENCILGEN_LOGGING=PERF and a fresh STENCILGEN_CACHE_DIR per tree per suite run,
so that the autotuner tunes as a user's first run would; its choices are read from the log.
Every figure is the median of ``--repeats`` runs (3; 1 with ``--quick``); ratios are same-run
ratios (both codes in each run). With ``--compare`` the base commit is checked out as a git
worktree and each workload runs base, head, base, head, ... in the same call.

A workload whose estimated cost (ESTIMATES, or the costs measured in the newest record of this
machine kind) no longer fits the budget is skipped with the reason; each subprocess gets a
timeout. The record ``suite-<machine>-<date>-<commit>.md`` holds a header, the table and a
```json block with everything; comparisons read that block. A drop of more than 3 % against
the newest record of the same machine kind (GPU figures as GPts/s, CPU figures as same-run
ratios only), or against the base commit, is printed as ``DROP name: ...`` with both commits.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "benchmarks" / "records"
FORMAT = "stencilgen-suite/1"
DROP_LIMIT = 3.0   # per cent
DEFAULT_BUDGET = 600.0   # seconds: one 10-minute call of the device machine
NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"

#: Seconds a run costs (first run in a fresh cache: builds and tuning; later runs), by mode.
#: Estimates from the H200 log (nvcc a few s an Operator, tuning trials, Python and the medium's
#: setup) and, for --quick, measured on the 2-core development machine; the costs measured in
#: the newest record of the same machine kind replace them (``measured_estimates``).
ESTIMATES = {
    "full": {"sa-tti": (75.0, 25.0), "sa-tti-f16": (75.0, 25.0), "acoustic": (120.0, 45.0),
             "staggered": (50.0, 20.0), "fwi": (120.0, 60.0), "pystencils": (150.0, 100.0),
             "vs-devito": (90.0, 60.0)},
    "quick": {"sa-tti": (6.0, 3.0), "sa-tti-f16": (6.0, 3.0), "acoustic": (10.0, 5.0),
              "staggered": (4.0, 2.0), "fwi": (0.0, 0.0), "pystencils": (0.0, 0.0),
              "vs-devito": (40.0, 25.0)},
}

#: The variable-density program of benchmarks/vs_devito.py (its ``staggered``), written against
#: the public API only: a copy by design, so that the two commits compared run this one text
#: (each tree's vs_devito.py may differ). argv: n, nt, backend.
STAGGERED_PROGRAM = '''
import sys
import numpy as np
from stencilgen import Eq, Function, Grid, Operator, TimeFunction, solve

n, nt, backend = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
shape = (n, n, n)
grid = Grid(shape=shape, extent=tuple(10.0 * (k - 1) for k in shape), dtype=np.float32)
p = TimeFunction(name="p", grid=grid, time_order=2, space_order=8)
m = Function(name="m", grid=grid, space_order=8)
b = Function(name="b", grid=grid, space_order=8)
m.data[:] = 1 / 1.5 ** 2
b.data[:] = 1.0
div = 0
for d, name in zip(grid.dimensions, ("dx", "dy", "dz")):
    inner = getattr(p, name)(x0=d + d.spacing / 2)
    div += getattr(b * inner, name)(x0=d - d.spacing / 2)
op = Operator([Eq(p.forward, solve(m * p.dt2 - div, p.forward))], name="StaggeredSuite",
              backend=backend)
p.data[(slice(None),) + tuple(k // 2 for k in shape)] = 1.0
summary = op.apply(time_m=1, time_M=nt, dt=0.5 * 10.0 / 1.5 / np.sqrt(3) / 3)
print(f"staggered {n}^3 x {nt} steps on {backend}: {summary.gpointss:.6g} GPts/s")
'''


# -- the machine ---------------------------------------------------------------------------------

def _output(argv, timeout=30) -> str | None:
    """The stripped stdout of a command, or None where it is missing or fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def gpus() -> list[tuple[str, str]]:
    """(name, driver) of each GPU nvidia-smi finds; empty without a GPU or nvidia-smi."""
    text = _output(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    rows = [line.rsplit(",", 1) for line in (text or "").splitlines() if "," in line]
    return [(name.strip(), driver.strip()) for name, driver in rows]


def gpu_slug(name: str) -> str:
    """``h200`` of "NVIDIA H200", ``a100`` of "NVIDIA A100-SXM4-80GB", ``rtx4090`` of "NVIDIA
    GeForce RTX 4090": the words up to the first with a digit, vendor and brand left out."""
    words = [w for w in name.split() if w.lower() not in ("nvidia", "tesla", "geforce")]
    kept = []
    for w in words:
        kept.append(w.split("-")[0])
        if any(c.isdigit() for c in w):
            break
    return re.sub(r"[^a-z0-9]", "", "".join(kept).lower()) or "gpu"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def cpu_slug(model: str) -> str:
    """``epyc`` of "AMD EPYC 7B13", ``xeon`` of "Intel(R) Xeon(R) Processor": the model's first
    word that is not a vendor, a mark or a generic word."""
    generic = {"intel", "amd", "r", "tm", "cpu", "processor", "genuine", "authentic", "unknown"}
    for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", model):
        if word.lower() not in generic:
            return word.lower()
    return "cpu"


def machine_kind(found_gpus, cores: int, model: str) -> str:
    """The hostname-independent kind records are compared by: ``h200``, ``h200x4`` (4 GPUs),
    else ``cpu<cores>-<model>``, e.g. ``cpu2-epyc``."""
    if found_gpus:
        slug = gpu_slug(found_gpus[0][0])
        return slug if len(found_gpus) == 1 else f"{slug}x{len(found_gpus)}"
    return f"cpu{cores}-{cpu_slug(model)}"


def nvcc_version() -> str | None:
    """``13.0.88`` from ``nvcc --version``, or None without nvcc."""
    text = _output(["nvcc", "--version"])
    found = re.search(r"V(\d+(?:\.\d+)+)", text or "")
    return found.group(1) if found else None


def gcc_version() -> str | None:
    text = _output(["gcc", "-dumpfullversion"])
    return text.splitlines()[0] if text else None


def commit_of(tree: Path) -> str:
    """``git rev-parse --short HEAD`` of ``tree``, with ``+dirty`` where tracked files differ."""
    sha = _output(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = _output(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"])
    return sha + ("+dirty" if dirty else "")


def detect_machine() -> dict:
    """Every field of a record's header that describes this machine."""
    found, cores, model = gpus(), os.cpu_count() or 1, cpu_model()
    return {"kind": machine_kind(found, cores, model),
            "gpu": found[0][0] if found else None, "gpus": len(found),
            "driver": found[0][1] if found else None, "nvcc": nvcc_version(),
            "gcc": gcc_version(), "cores": cores, "cpu": model,
            "python": sys.version.split()[0]}


# -- the trees under test ------------------------------------------------------------------------

@dataclass
class Tree:
    """A checkout the workloads run in: this one ("head") or a --compare commit ("base")."""
    label: str
    root: Path
    commit: str
    cache: Path

    def env(self, head: Path) -> dict:
        """The environment of a run in this tree: the tree first on PYTHONPATH (the head's
        root, which .device/activate.sh puts there, left out of a base run), deepwave's
        trimmed build where the head has one, the suite's logging and a cache of its own."""
        env = dict(os.environ)
        keep = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                if p and Path(p).resolve() not in (head.resolve(), self.root.resolve())]
        extra = [str(p) for p in sorted(head.glob(".dwave/deepwave-*/src"))]
        env["PYTHONPATH"] = os.pathsep.join([str(self.root)] + keep + extra)
        env.update(STENCILGEN_LOGGING="PERF", STENCILGEN_CACHE_DIR=str(self.cache),
                   PYTHONUNBUFFERED="1")
        return env


def resolve_commit(commit: str) -> str:
    """The full hash of ``commit`` in this repository, or a SystemExit saying what to do."""
    sha = _output(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                   f"{commit}^{{commit}}"])
    if not sha:
        raise SystemExit(f"suite.py: --compare {commit}: no such commit in {ROOT} (git "
                         "rev-parse cannot resolve it); give a commit of this repository "
                         "(git log --oneline), fetching it first if it is only on a remote")
    return sha


@contextlib.contextmanager
def base_tree(commit: str | None, copy: Path | None, scratch: Path):
    """The --compare tree: None without one; ``copy`` as it is (a folder holding ``commit``'s
    files, for a machine without the repository's history); else ``git worktree add --detach``
    of ``commit`` under ``scratch``, removed on the way out (failures included)."""
    if commit is None:
        yield None
        return
    if copy is not None:
        if not (copy / "stencilgen").is_dir():
            raise SystemExit(f"suite.py: --base-tree {copy}: no stencilgen/ there; make it "
                             f"with `mkdir -p {copy} && git archive {commit} | tar -x -C {copy}`")
        yield Tree("base", copy.resolve(), commit, scratch / "base-cache")
        return
    sha = resolve_commit(commit)
    where = scratch / "base"
    done = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where),
                           sha], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"suite.py: git worktree add of {commit} failed: "
                         f"{done.stderr.strip()}")
    try:
        yield Tree("base", where, commit_of(where), scratch / "base-cache")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)],
                       capture_output=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True)


# -- reading the scripts' output -----------------------------------------------------------------

@dataclass
class Reading:
    """One figure read from a run's output, with what else the output says of it."""
    value: float
    note: str = ""


def _last(pattern: str, text: str):
    found = re.findall(pattern, text, flags=re.MULTILINE)
    return found[-1] if found else None


def ran_rate(name: str) -> Callable[[str], dict]:
    """demos/dummy_benchmark/run.py: ``Ran 200 steps (...) in 0.661 s: 25.160 GPts/s``; below
    0.1 GPts/s (small --quick runs: few digits printed) recomputed from the shape, the steps
    and the seconds."""
    def parse(text):
        ran = re.findall(rf"^Ran (\d+) steps .*? in ({NUMBER}) s: ({NUMBER}) GPts/s", text,
                         flags=re.MULTILINE)
        if not ran:
            return {}
        steps, seconds, value = int(ran[-1][0]), float(ran[-1][1]), float(ran[-1][2])
        shape = _last(r"shape \(([\d, ]+)\)", text)
        if value < 0.1 and shape and seconds > 0:
            points = 1.0
            for n in shape.split(","):
                points *= int(n)
            value = points * steps / seconds / 1e9
        return {name: Reading(value)}
    return parse


def roofline_rates(text: str) -> dict:
    """benchmarks/roofline.py's first table: the acoustic rows of float32 and float16."""
    out = {}
    for storage, name in (("float32", "acoustic"), ("float16", "acoustic-f16")):
        value = _last(rf"^acoustic {storage}\s+\S+\s+\d+\s+({NUMBER})", text)
        if value:
            out[name] = Reading(float(value))
    return out


def staggered_rate(text: str) -> dict:
    value = _last(rf"^staggered .*: ({NUMBER}) GPts/s", text)
    return {"staggered": Reading(float(value))} if value else {}


def deepwave_ratio(name: str) -> Callable[[str], dict]:
    """benchmarks/fwi_gradient.py deepwave: ``stencilgen / deepwave: 3.29x``, and both codes'
    seconds a gradient."""
    def parse(text):
        value = _last(rf"stencilgen / deepwave: ({NUMBER})x", text)
        if not value:
            return {}
        ours = _last(rf"^\| stencilgen AcousticShot \| ({NUMBER})", text)
        theirs = _last(rf"^\| deepwave scalar \| ({NUMBER})", text)
        return {name: Reading(float(value), f"{ours} s against {theirs} s a gradient")}
    return parse


def pystencils_ratio(text: str) -> dict:
    """compare.py's table: stencilgen's median GPts/s over the best pystencils variant's."""
    ours = _last(rf"^stencilgen Global performance \(median\).*?({NUMBER})\s*$", text)
    theirs = re.findall(rf"^pystencils (.+?) \(events, best\).*?({NUMBER})\s*$", text,
                        flags=re.MULTILINE)
    if not ours or not theirs:
        return {}
    variant, best = max(theirs, key=lambda v: float(v[1]))
    return {"pystencils": Reading(float(ours) / float(best),
                                  f"stencilgen {ours} GPts/s, pystencils {best} ({variant})")}


def devito_ratios(text: str) -> dict:
    """benchmarks/vs_devito.py's rows ``program  Devito  stencilgen  ratio [stencilgen ratio
    ...]``: the ratio of the default stencilgen setting, the first column pair after Devito's
    (where a row has no ratio column, computed from the two rates)."""
    out = {}
    for program in ("acoustic", "staggered"):
        row = _last(rf"^{program}\s+(.*)$", text)
        values = [float(v) for v in re.findall(rf"({NUMBER})x?(?=\s|$)", row or "")]
        if len(values) < 2 or values[0] <= 0:
            continue
        ratio = values[2] if len(values) >= 3 else values[1] / values[0]
        out[f"vs-devito-{program}"] = Reading(
            ratio, f"Devito {values[0]:g} GPts/s, stencilgen {values[1]:g}")
    return out


_TUNED = re.compile(r"Operator `([^`]+)` autotuned for size (.+?) in (" + NUMBER + r") s: (.*)$")
_FUSED = re.compile(r"Operator `([^`]+)`: fused nests (" + NUMBER + r") ms, apart (" + NUMBER +
                    r") ms a step of size (.+?): (\w+) kept")
_KEPT = re.compile(r"Operator `[^`]+`.*\bkept\b")


def autotuner_lines(text: str) -> list[str]:
    """The autotuner's lines of a run's log (launch shapes tuned, fused or apart kept, and any
    other ``Operator `X` ... kept`` choice), in order."""
    return [line.strip() for line in text.splitlines()
            if _TUNED.search(line) or _FUSED.search(line) or _KEPT.search(line)]


def short_choice(line: str) -> str:
    """A log line of the autotuner as the table shows it."""
    tuned = _TUNED.search(line)
    if tuned:
        return f"{tuned.group(1)} {tuned.group(2)}: {tuned.group(4)}"
    fused = _FUSED.search(line)
    if fused:
        return (f"{fused.group(1)}: {fused.group(5)} kept (fused {fused.group(2)} ms, apart "
                f"{fused.group(3)} ms a step)")
    return line


def split_choices(lines: list[str], names: list[str]) -> dict[str, list[str]]:
    """The choices of a run that yields several figures one after the other (roofline.py's
    storages): each tuning closes with its ``kept`` line; where the groups do not match the
    figures, every figure gets every line."""
    groups, current = [], []
    for line in lines:
        current.append(line)
        if _FUSED.search(line) or _KEPT.search(line):
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    if len(groups) != len(names):
        return {name: list(lines) for name in names}
    return dict(zip(names, groups))


# -- the workloads -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Command:
    """One subprocess of a workload: its arguments after ``python``, the path the tree must
    have for it (None: it needs none), what it yields."""
    argv: tuple[str, ...]
    needs: str | None
    parse: Callable[[str], dict]
    setup: str = ""

    def describe(self) -> str:
        return self.setup or " ".join(self.argv)


@dataclass(frozen=True)
class Workload:
    name: str
    figures: tuple[str, ...]
    units: tuple[str, ...]
    device: str   # "gpu" or "cpu"
    commands: Callable[[bool], list[Command]]
    needs_import: str | None = None   # Python code that must run in the head's environment
    split: bool = False   # the figures come one after the other in one log (their choices split)

    def compare_kind(self, unit: str, quick: bool) -> str:
        """How its figures are compared with records: GPU rates as rates, ratios as ratios;
        CPU rates (--quick) not at all (2-core machines move 1.5x from hour to hour)."""
        if unit != "GPts/s":
            return "ratio"
        return "none" if quick else "rate"


def _sa_tti(storage: str | None) -> Callable[[bool], list[Command]]:
    def commands(quick):
        size = ["-d", "32", "32", "32", "-nt", "5", "--backend", "c"] if quick else \
            ["-d", "412", "423", "476", "-nt", "200", "--backend", "cuda"]
        extra = ["--storage", storage] if storage else []
        name = "sa-tti" + ("-f16" if storage else "")
        return [Command(("demos/dummy_benchmark/run.py", *size, *extra),
                        "demos/dummy_benchmark/run.py", ran_rate(name))]
    return commands


def _acoustic(quick):
    size = ["--backend", "c", "--tti", "16", "16", "16", "--acoustic", "96", "96", "96",
            "--nt", "10"] if quick else \
        ["--backend", "cuda", "--tti", "64", "64", "64", "--acoustic", "512", "512", "512",
         "--nt", "200"]
    return [Command(("benchmarks/roofline.py", *size, "--storage", "float32", "float16"),
                    "benchmarks/roofline.py", roofline_rates)]


def _staggered(quick):
    n, nt, backend = ("48", "10", "c") if quick else ("512", "200", "cuda")
    return [Command(("-c", STAGGERED_PROGRAM, n, nt, backend), None, staggered_rate,
                    f"suite.py's staggered program, {n}^3 x {nt} steps, --backend {backend}")]


def _fwi(quick):
    script = "benchmarks/fwi_gradient.py"
    return [Command((script, "deepwave", *shape), script, deepwave_ratio(name))
            for name, shape in (("fwi-3d", ("-d", "200", "200", "200", "-nt", "300",
                                            "--nshots", "1")),
                                ("fwi-2d", ("-d", "400", "400", "-nt", "800", "--nshots", "32")))]


def pystencils_script() -> Path | None:
    """compare.py of ../shared/pystencils, or of a copy carried to the device machine."""
    for where in (ROOT.parent / "shared", ROOT / "shared", ROOT / ".psw"):
        if (where / "pystencils" / "compare.py").is_file():
            return where / "pystencils" / "compare.py"
    return None


def _pystencils(quick):
    script = pystencils_script()
    args = ("--n", "512", "--nt", "200", "--reps", "3", "--variants", "fixed_int32,m_fixed_int32")
    return [Command((str(script), *args), None, pystencils_ratio,
                    "pystencils/compare.py " + " ".join(args))]


def _vs_devito(quick):
    size = ["--shape", "48", "48", "48", "--nt", "10", "--repeats", "1"] if quick else []
    return [Command(("benchmarks/vs_devito.py", "--programs", "acoustic", "staggered", *size),
                    "benchmarks/vs_devito.py", devito_ratios)]


WORKLOADS = [
    Workload("sa-tti", ("sa-tti",), ("GPts/s",), "gpu", _sa_tti(None)),
    Workload("sa-tti-f16", ("sa-tti-f16",), ("GPts/s",), "gpu", _sa_tti("float16")),
    Workload("acoustic", ("acoustic", "acoustic-f16"), ("GPts/s", "GPts/s"), "gpu", _acoustic,
             split=True),
    Workload("staggered", ("staggered",), ("GPts/s",), "gpu", _staggered),
    Workload("fwi", ("fwi-3d", "fwi-2d"), ("x deepwave", "x deepwave"), "gpu", _fwi,
             "import torch, deepwave; assert torch.cuda.is_available(), 'torch sees no GPU'"),
    Workload("pystencils", ("pystencils",), ("x pystencils",), "gpu", _pystencils,
             "import pystencils, cupy"),
    Workload("vs-devito", ("vs-devito-acoustic", "vs-devito-staggered"),
             ("x Devito", "x Devito"), "cpu", _vs_devito, "import devito"),
]
QUICK = ("sa-tti", "sa-tti-f16", "acoustic", "staggered", "vs-devito")
FIGURE_ORDER = [f for w in WORKLOADS for f in w.figures]


def select(names: list[str] | None) -> list[Workload]:
    """The workloads ``--only`` names (workload or figure names, space- or comma-separated), in
    the standing order; ValueError listing the known names for an unknown one."""
    if not names:
        return list(WORKLOADS)
    wanted = [n for item in names for n in re.split(r"[,\s]+", item) if n]
    by_name = {w.name: w for w in WORKLOADS} | {f: w for w in WORKLOADS for f in w.figures}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        known = ", ".join(dict.fromkeys(list(by_name)))
        raise ValueError(f"unknown workload {', '.join(unknown)}; known: {known}")
    chosen = {by_name[n].name for n in wanted}
    return [w for w in WORKLOADS if w.name in chosen]


# -- running -------------------------------------------------------------------------------------

@dataclass
class Figure:
    """One figure of the table as it is being measured, per tree."""
    name: str
    workload: str
    unit: str
    compare: str
    setup: str
    runs: dict = field(default_factory=lambda: {"head": [], "base": []})
    choices: dict = field(default_factory=lambda: {"head": [], "base": []})
    notes: dict = field(default_factory=lambda: {"head": [], "base": []})
    errors: dict = field(default_factory=lambda: {"head": [], "base": []})

    def entry(self, label: str) -> dict:
        runs = self.runs[label]
        return {"runs": runs, "median": statistics.median(runs) if runs else None,
                "choices": list(dict.fromkeys(self.choices[label])),
                "notes": list(dict.fromkeys(self.notes[label])), "errors": self.errors[label]}


def run_command(cmd: Command, tree: Tree, head: Path, timeout: float, log_to: Path | None):
    """Runs one command in ``tree``; (output, seconds, error or None). A run past ``timeout``
    is killed with its process group (the compilers it started)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *cmd.argv], cwd=tree.root, env=tree.env(head),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
        error = None if proc.returncode == 0 else f"exit status {proc.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        error = f"timed out after {timeout:.0f} s"
    seconds = time.perf_counter() - start
    if log_to is not None:
        log_to.parent.mkdir(parents=True, exist_ok=True)
        log_to.write_text(f"$ python {shlex.join(cmd.argv)[:300]}\n{output}")
    return output, seconds, error


def _tail(text: str, lines=1) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return " / ".join(kept[-lines:])[:300]


class Suite:
    """Runs the chosen workloads in the trees within the budget and gathers the figures."""

    def __init__(self, trees, head: Path, repeats: int, budget: float, quick: bool,
                 estimates: dict, logs: Path | None, machine: dict):
        self.trees, self.head, self.repeats, self.budget = trees, head, repeats, budget
        self.quick, self.estimates, self.logs, self.machine = quick, estimates, logs, machine
        self.start = time.perf_counter()
        self.date = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.figures: dict[str, Figure] = {}
        self.skipped: list[dict] = []
        self.costs: dict[str, dict] = {}
        self.runs_done: dict[tuple, int] = {}

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def skip(self, name: str, reason: str) -> None:
        self.skipped.append({"name": name, "reason": reason})
        print(f"skip {name}: {reason}", flush=True)

    def unavailable(self, w: Workload) -> str | None:
        """Why ``w`` cannot run here, or None."""
        if self.quick and w.name not in QUICK:
            return "a GPU workload without a small C form: not in --quick"
        if w.device == "gpu" and not self.quick:
            if not self.machine["gpus"]:
                return "no GPU (nvidia-smi finds none)"
            if not self.machine["nvcc"]:
                return "no nvcc on PATH"
        if w.name == "pystencils" and pystencils_script() is None:
            return "no pystencils/compare.py in ../shared, shared/ or .psw/"
        if w.needs_import:
            probe = Tree("head", self.head, "", self.trees[-1].cache)
            done = subprocess.run([sys.executable, "-c", w.needs_import], cwd=self.head,
                                  env=probe.env(self.head), capture_output=True, text=True)
            if done.returncode != 0:
                return f"`{w.needs_import}` fails here: {_tail(done.stderr)}"
        return None

    def estimate(self, w: Workload, tree: Tree) -> float:
        first, later = self.estimates.get(w.name, (60.0, 30.0))
        return later if self.runs_done.get((w.name, tree.label)) else first

    def planned(self, w: Workload, trees) -> float:
        first, later = self.estimates.get(w.name, (60.0, 30.0))
        return len(trees) * (first + (self.repeats - 1) * later)

    def run(self, workloads: list[Workload], after_each=lambda: None) -> None:
        """Runs each workload in turn (or skips it with the reason), ``after_each`` after it."""
        for w in workloads:
            self.run_or_skip(w)
            after_each()

    def run_or_skip(self, w: Workload) -> None:
        """Runs ``w`` in the trees that have its scripts, or says why not (here, budget)."""
        reason = self.unavailable(w)
        if reason:
            self.skip(w.name, reason)
            return
        trees = self.trees_for(w)
        if not trees:
            return
        need, left = self.planned(w, trees), self.budget - self.elapsed()
        if need > left:
            self.skip(w.name, f"budget exhausted: needs about {need:.0f} s "
                              f"({self.repeats} run(s) x {len(trees)} tree(s)), "
                              f"{max(left, 0):.0f} s of {self.budget:.0f} left")
            return
        self.run_workload(w, trees)

    def trees_for(self, w: Workload) -> list[Tree]:
        """The trees that have ``w``'s scripts (a base lacking one skips its base figures)."""
        kept = []
        for tree in self.trees:
            missing = [c.needs for c in w.commands(self.quick)
                       if c.needs and not (tree.root / c.needs).is_file()]
            if not missing:
                kept.append(tree)
                continue
            what = f"{', '.join(missing)} missing in the {tree.label} tree ({tree.commit})"
            self.skip(w.name if tree.label == "head" else f"{w.name} (base)", what)
            if tree.label == "head":
                return []
        return kept

    def run_workload(self, w: Workload, trees: list[Tree]) -> None:
        commands = w.commands(self.quick)
        for name, unit, cmd in zip(w.figures, w.units, self.sources(w, commands)):
            self.figures[name] = Figure(name, w.name, unit, w.compare_kind(unit, self.quick),
                                        cmd.describe())
        for r in range(self.repeats):
            for tree in trees:   # base first: base, head, base, head, ...
                est = self.estimate(w, tree)
                left = self.budget - self.elapsed()
                if est > left:
                    self.skip(f"{w.name} ({tree.label} run {r + 1})",
                              f"budget exhausted: about {est:.0f} s needed, {left:.0f} s left")
                    return
                self.run_once(w, commands, tree, r,
                              self.elapsed() + min(left, max(60.0, 3 * est)))

    @staticmethod
    def sources(w: Workload, commands: list[Command]) -> list[Command]:
        """The command each figure of ``w`` comes from: the one command, or one a figure."""
        return list(commands) if len(commands) > 1 else [commands[0]] * len(w.figures)

    def run_once(self, w: Workload, commands, tree: Tree, r: int, deadline: float) -> None:
        """One run of every command of ``w`` in ``tree``, each killed at ``deadline`` (seconds
        of the suite): its figures, choices and cost."""
        spent, said = 0.0, []
        for i, cmd in enumerate(commands):
            log = self.logs / f"{w.name}-{tree.label}-{r + 1}-{i + 1}.log" if self.logs else None
            timeout = max(1.0, deadline - self.elapsed())
            output, seconds, error = run_command(cmd, tree, self.head, timeout, log)
            spent += seconds
            readings = cmd.parse(output)
            if not readings:
                error = error or "no figure in its output"
            names = [f for f, c in zip(w.figures, self.sources(w, commands)) if c is cmd]
            choices = autotuner_lines(output)
            split = split_choices(choices, names) if w.split else {n: choices for n in names}
            for name in names:
                fig = self.figures[name]
                if name in readings:
                    fig.runs[tree.label].append(readings[name].value)
                    if readings[name].note:
                        fig.notes[tree.label].append(readings[name].note)
                    said.append(f"{name} {readings[name].value:.4g} {fig.unit}")
                fig.choices[tree.label] += split.get(name, [])
                if error:
                    fig.errors[tree.label].append(f"run {r + 1}: {error}: {_tail(output)}")
            if error:
                said.append(f"{cmd.describe()[:60]}: {error}: {_tail(output)}")
        self.runs_done[(w.name, tree.label)] = self.runs_done.get((w.name, tree.label), 0) + 1
        self.costs.setdefault(w.name, {}).setdefault(tree.label, []).append(round(spent, 1))
        print(f"{w.name} {tree.label} ({tree.commit}) run {r + 1}/{self.repeats}, "
              f"{spent:.0f} s: {'; '.join(said)}", flush=True)


# -- records -------------------------------------------------------------------------------------

def build_record(machine: dict, commit: str, command: str, mode: str, repeats: int,
                 budget: float, cost: float, suite: Suite, base: Tree | None) -> dict:
    """The record of a suite run: everything the markdown shows, and the costs measured."""
    figures = []
    for name in FIGURE_ORDER:
        fig = suite.figures.get(name)
        if fig is None:
            continue
        entry = {"name": name, "workload": fig.workload, "unit": fig.unit,
                 "compare": fig.compare, "setup": fig.setup, **fig.entry("head")}
        if base is not None:
            entry["base"] = fig.entry("base")
        figures.append(entry)
    return {"format": FORMAT, "machine": machine, "commit": commit,
            "date": suite.date,
            "command": command, "mode": mode, "repeats": repeats, "budget_s": budget,
            "cost_s": round(cost, 1), "base": base.commit if base else None,
            "transcribed": None, "figures": figures, "skipped": suite.skipped,
            "costs": suite.costs, "drops": [], "base_drops": []}


def record_name(record: dict) -> str:
    """``suite-<machine>-<YYYY-MM-DD>-<commit>.md`` (``+dirty`` written ``-dirty``)."""
    commit = record["commit"].replace("+", "-")
    return f"suite-{record['machine']['kind']}-{record['date'][:10]}-{commit}.md"


def record_path(out: Path, record: dict) -> Path:
    """Where to write ``record`` in ``out``: its name, ``-2``, ``-3``, ... where taken."""
    path = out / record_name(record)
    n = 2
    while path.exists():
        path = out / record_name(record).replace(".md", f"-{n}.md")
        n += 1
    return path


def fmt(value, unit: str) -> str:
    """156.3 GPts/s, 1.21x pystencils."""
    if value is None:
        return "-"
    if unit == "GPts/s":
        return f"{value:.4g} GPts/s"
    if unit.startswith("%"):
        return f"{value:.1f} {unit}"
    return f"{value:.2f}{unit}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _runs(values) -> str:
    return ", ".join(f"{v:.4g}" for v in values) or "-"


def header_rows(record: dict) -> list[tuple[str, str]]:
    m = record["machine"]
    gpu = f"{m['gpu']} x {m['gpus']}, driver {m['driver']}" if m.get("gpu") else "none"
    mode = record["mode"] + (f": each figure the median of {record['repeats']} run(s); ratios "
                             "are same-run ratios, each run the script's own best or median "
                             "of its repeats" if record.get("repeats") else "")
    rows = [("machine kind", m["kind"]), ("GPU", gpu), ("nvcc", m.get("nvcc") or "none"),
            ("gcc", m.get("gcc") or "none"), ("cores", str(m.get("cores"))),
            ("CPU", m.get("cpu") or "unknown"), ("python", m.get("python") or "unknown"),
            ("commit", record["commit"]), ("date", record["date"]),
            ("command", f"`{record['command']}`"), ("mode", mode)]
    if record.get("base"):
        rows.append(("base", f"{record['base']} (--compare: checked out beside, run "
                             "alternately in the same call)"))
    if record.get("cost_s") is not None:
        rows.append(("cost", f"{record['cost_s']:.0f} s wall (budget {record['budget_s']:.0f} "
                             "s); on a GPU machine its device time"))
    return rows


def render_record(record: dict) -> str:
    """The markdown of a record: header, table, skipped workloads, drops, the JSON block."""
    lines = [f"# Benchmark suite: {record['machine']['kind']}, {record['commit']}, "
             f"{record['date'][:10]}", ""]
    if record.get("transcribed"):
        lines += [f"Transcribed: {record['transcribed']}", ""]
    if record.get("partial"):
        lines += ["Partial: written after a workload; the suite had not ended (a call cut "
                  "short leaves this).", ""]
    lines += ["| field | value |", "| --- | --- |"]
    lines += [f"| {k} | {_cell(v)} |" for k, v in header_rows(record)]
    base = record.get("base")
    cols = ["workload", "figure", "unit", "runs", "median", "autotuner's choices"]
    if base:
        cols += [f"runs at {base}", f"median at {base}", "head / base"]
    lines += ["", "| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for f in record["figures"]:
        choices = "; ".join(short_choice(c) for c in f["choices"]) or "-"
        extra = "; ".join(f.get("notes", []) + f.get("errors", []))
        row = [f["workload"], f["name"], f["unit"], _runs(f["runs"]),
               fmt(f["median"], f["unit"]), choices + (f" ({extra})" if extra else "")]
        if base:
            b = f.get("base") or {}
            ratio = f["median"] / b["median"] if f["median"] and b.get("median") else None
            row += [_runs(b.get("runs", [])), fmt(b.get("median"), f["unit"]),
                    f"{ratio:.3f}" if ratio else "-"]
        lines.append("| " + " | ".join(_cell(str(c)) for c in row) + " |")
    setups = {}
    for f in record["figures"]:
        setups.setdefault(f["setup"], []).append(f["name"])
    lines += ["", "Setups:" if record.get("transcribed") else
              "Setups (each run a subprocess of the tree under test):", ""]
    lines += [f"- {', '.join(names)}: `{setup.splitlines()[0]}`" for setup, names in
              setups.items()]
    if record.get("skipped"):
        lines += ["", "Skipped:", ""] + [f"- {s['name']}: {s['reason']}" for s in
                                         record["skipped"]]
    unchecked = [f["name"] for f in record["figures"] if f["compare"] == "none"]
    none = "- none" + (f" ({', '.join(unchecked)}: CPU rates, not compared with records; "
                       "--compare runs a base beside)" if unchecked else "")
    for key, title in (("base_drops", f"Drops against {base}, same call"),
                       ("drops", "Drops against the newest records of this machine kind")):
        if record.get(key) is not None and not (record.get("transcribed") and key == "drops"):
            lines += ["", f"{title}:", ""] + ([f"- {d}" for d in record[key]] or [none])
    lines += ["", "```json", json.dumps(record, indent=1), "```", ""]
    return "\n".join(lines)


def read_record(path: Path) -> dict | None:
    """The JSON block of a suite record (the last ```json block), or None if it has none."""
    blocks = re.findall(r"^```json\n(.*?)^```", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    if not blocks:
        return None
    try:
        record = json.loads(blocks[-1])
    except json.JSONDecodeError:
        return None
    return record if record.get("format") == FORMAT else None


def load_records(*dirs: Path) -> list[tuple[Path, dict]]:
    """Every suite record in ``dirs`` (each file once)."""
    seen, out = set(), []
    for d in dirs:
        for path in sorted(Path(d).glob("suite-*.md")) if Path(d).is_dir() else []:
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            record = read_record(path)
            if record is not None:
                out.append((path, record))
    return out


# -- comparisons ---------------------------------------------------------------------------------

def drop_line(name, unit, value, commit, old, old_commit) -> str:
    change = 100.0 * (value - old) / old
    return (f"DROP {name}: {fmt(value, unit)} at {commit} against {fmt(old, unit).split()[0]} "
            f"at {old_commit} ({change:+.1f} %)")


def _dropped(value, old, limit) -> bool:
    return value is not None and old and value < old * (1 - limit / 100.0)


def drops_against_records(record: dict, records, limit=DROP_LIMIT, exclude=None) -> list[str]:
    """Each figure of ``record`` that fell by more than ``limit`` % against the newest other
    record of the same machine kind and mode holding that figure with the same setup. GPU
    rates compare as rates, ratios as ratios; figures marked "none" (CPU rates) not at all."""
    kind, mode = record["machine"]["kind"], record["mode"]
    others = sorted((r for p, r in records if r["machine"]["kind"] == kind and
                     r.get("mode") == mode and r is not record and
                     (exclude is None or Path(p).resolve() != Path(exclude).resolve())),
                    key=lambda r: r["date"], reverse=True)
    out = []
    for f in record["figures"]:
        if f["compare"] == "none" or f["median"] is None:
            continue
        for other in others:
            old = next((g for g in other["figures"] if g["name"] == f["name"] and
                        g["setup"] == f["setup"] and g["median"] is not None), None)
            if old is None:
                continue
            if _dropped(f["median"], old["median"], limit):
                out.append(drop_line(f["name"], f["unit"], f["median"], record["commit"],
                                     old["median"], other["commit"]))
            break
    return out


def drops_against_base(record: dict, limit=DROP_LIMIT) -> list[str]:
    """Each figure whose head median fell by more than ``limit`` % against the base's, same
    call (every kind of figure: both trees ran alternately on this machine)."""
    out = []
    for f in record["figures"]:
        b = f.get("base") or {}
        if _dropped(f["median"], b.get("median"), limit):
            out.append(drop_line(f["name"], f["unit"], f["median"], record["commit"],
                                 b["median"], record["base"]))
    return out


def measured_estimates(records, kind: str, mode: str) -> dict:
    """ESTIMATES for ``mode``, each workload's replaced by the costs measured in the newest
    record of machine ``kind`` that ran it: (first run, median of the later runs)."""
    out = dict(ESTIMATES[mode])
    for _, r in sorted(records, key=lambda pr: pr[1]["date"]):
        if r["machine"]["kind"] != kind or r.get("mode") != mode:
            continue
        for name, per_tree in (r.get("costs") or {}).items():
            seconds = per_tree.get("head") or []
            if seconds:
                out[name] = (seconds[0], statistics.median(seconds[1:] or seconds))
    return out


# -- the standing table --------------------------------------------------------------------------

def standing_table(records) -> str:
    """The markdown table of the newest figure of each workload on each machine kind (full
    runs, transcribed records included), each row naming its record."""
    newest: dict[tuple, tuple] = {}
    for path, r in records:
        if r.get("mode") != "full":
            continue
        for f in r["figures"]:
            if f["median"] is None:
                continue
            key = (f["name"], r["machine"]["kind"])
            if key not in newest or r["date"] > newest[key][1]["date"]:
                newest[key] = (path, r, f)
    order = {name: i for i, name in enumerate(FIGURE_ORDER)}
    rows = sorted(newest.values(), key=lambda v: (order.get(v[2]["name"], len(order)),
                                                  v[2]["name"], v[1]["machine"]["kind"]))
    ours = {name: cmd.describe() for w in WORKLOADS
            for name, cmd in zip(w.figures, Suite.sources(w, w.commands(False)))}
    lines = ["| figure | machine | value | date | commit | setup | record |",
             "| --- | --- | ---: | --- | --- | --- | --- |"]
    for path, r, f in rows:
        setup = f["setup"].splitlines()[0]
        lines.append("| " + " | ".join(_cell(c) for c in (
            f["name"], r["machine"]["kind"], fmt(f["median"], f["unit"]), r["date"][:10],
            r["commit"], "the suite's" if ours.get(f["name"]) == setup else f"`{setup}`",
            f"[{path.name}](../benchmarks/records/{path.name})")) + " |")
    missing = [n for n in FIGURE_ORDER if not any(k[0] == n for k in newest)]
    if missing:
        lines += ["", f"No record yet: {', '.join(missing)}."]
    return "\n".join(lines)


# -- the command ---------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="benchmarks/suite.py", description=__doc__.split("\n\n")[0],
        epilog="Every figure is the median of --repeats runs (3 by default, 1 with --quick); "
               "ratios (vs-devito, fwi, pystencils) are same-run ratios, each run the script's "
               "own best or median of its repeats. Known workloads: " +
               ", ".join(w.name + (f" ({', '.join(w.figures)})" if len(w.figures) > 1 else "")
                         for w in WORKLOADS))
    p.add_argument("--only", nargs="+", metavar="NAMES",
                   help="workloads or figures to run (space- or comma-separated)")
    p.add_argument("--repeats", type=int, default=None,
                   help="runs of each workload, the figure their median (default 3; --quick 1)")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET, metavar="SECONDS",
                   help="wall seconds the suite may take; a workload whose estimate no longer "
                        "fits is skipped (default 600: one 10-minute device call)")
    p.add_argument("--compare", metavar="COMMIT",
                   help="check COMMIT out beside this tree (git worktree) and run each "
                        "workload in both alternately; print the head's drops against it")
    p.add_argument("--base-tree", type=Path, metavar="DIR",
                   help="with --compare: DIR holds that commit's files (for a machine without "
                        "the repository's history, e.g. a GPU machine sent a copy of the tree: "
                        "git archive COMMIT | tar -x -C DIR here, and carry DIR)")
    p.add_argument("--commit", metavar="LABEL",
                   help="this tree's commit where git cannot tell (a copy without .git): e.g. "
                        "the output of git rev-parse --short HEAD here")
    p.add_argument("--quick", action="store_true",
                   help="small sizes on the C backend (no GPU needed), 1 run each")
    p.add_argument("--out", type=Path, default=RECORDS, metavar="DIR",
                   help="where the record is written (default benchmarks/records)")
    p.add_argument("--records", type=Path, default=RECORDS, metavar="DIR",
                   help="earlier records to compare with and to draw --table from "
                        "(default benchmarks/records; --out is read too)")
    p.add_argument("--logs", type=Path, metavar="DIR", help="keep each run's output there")
    p.add_argument("--drop", type=float, default=DROP_LIMIT, metavar="PERCENT",
                   help="a fall of more than this is a drop (default 3)")
    p.add_argument("--plan", action="store_true",
                   help="print what would run here and its estimated cost, run nothing")
    p.add_argument("--table", action="store_true",
                   help="print the standing table (markdown) of the newest records and exit")
    return p


def plan(workloads, suite: Suite, n_trees: int) -> float:
    """Prints each workload's fate here and estimated cost; returns the total."""
    total = 0.0
    for w in workloads:
        reason = suite.unavailable(w)
        cost = 0.0 if reason else suite.planned(w, [None] * n_trees)
        total += cost
        print(f"{w.name:12s} {'skip: ' + reason if reason else f'about {cost:.0f} s'}")
    print(f"total about {total:.0f} s of a {suite.budget:.0f} s budget")
    return total


def record_writer(out: Path, records, drop: float, make: Callable[[], dict]):
    """A function that (re)writes the record at one path, with its drops: after each workload
    (so that a call cut short still leaves what finished, marked partial) and at the end."""
    where: list[Path] = []

    def write(final: bool = False) -> tuple[Path, dict]:
        record = make()
        record["partial"] = not final
        if not where:
            out.mkdir(parents=True, exist_ok=True)
            where.append(record_path(out, record))
        record["drops"] = drops_against_records(record, records, drop, exclude=where[0])
        record["base_drops"] = drops_against_base(record, drop) if record["base"] else None
        where[0].write_text(render_record(record))
        return where[0], record
    return write


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        workloads = select(args.only)
    except ValueError as exc:
        p.error(f"--only: {exc}")
    if args.base_tree and not args.compare:
        p.error("--base-tree DIR needs --compare COMMIT: the commit whose files DIR holds")
    records = load_records(args.records, args.out)
    if args.table:
        print(standing_table(records))
        return 0
    repeats = args.repeats or (1 if args.quick else 3)
    if repeats < 1 or args.budget <= 0:
        p.error("--repeats and --budget must be positive")
    mode = "quick" if args.quick else "full"
    machine = detect_machine()
    estimates = measured_estimates(records, machine["kind"], mode)
    command = " ".join(["python", *map(shlex.quote, sys.argv)]) if argv is None else \
        shlex.join(["python", "benchmarks/suite.py", *argv])
    head_commit = args.commit or commit_of(ROOT)
    scratch = Path(tempfile.mkdtemp(prefix="sgsuite-"))
    try:
        head = Tree("head", ROOT, head_commit, scratch / "head-cache")
        if args.plan:
            if args.compare and not args.base_tree:
                resolve_commit(args.compare)
            plan(workloads, Suite([head], ROOT, repeats, args.budget, args.quick, estimates,
                                  None, machine), 2 if args.compare else 1)
            return 0
        with base_tree(args.compare, args.base_tree, scratch) as base:
            trees = [base, head] if base else [head]
            suite = Suite(trees, ROOT, repeats, args.budget, args.quick, estimates, args.logs,
                          machine)
            write = record_writer(args.out, records, args.drop, lambda: build_record(
                machine, head_commit, command, mode, repeats, args.budget, suite.elapsed(),
                suite, base))
            print(f"suite on {machine['kind']} at {head_commit}"
                  + (f" against {base.commit}" if base else "")
                  + f", {mode}, {repeats} run(s) each, budget {args.budget:.0f} s", flush=True)
            suite.run(workloads, after_each=write)
            path, record = write(final=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nwrote {path}")
    for line in (record["base_drops"] or []) + record["drops"]:
        print(line)
    if base and not record["base_drops"]:
        print(f"no drop of more than {args.drop:g} % against {base.commit}")
    print(f"suite cost: {record['cost_s']:.0f} s wall (on a GPU machine, its device time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
