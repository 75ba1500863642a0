"""The benchmark suite (benchmarks/suite.py): its quick form runs on the C backend and writes a
record whose JSON block holds the machine and a figure for each workload; drops are found
against the newest record of the same machine kind only; an unknown --only name says which
names exist; the autotuner's log lines it parses are the ones the Operator writes."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import suite  # noqa: E402

SCRIPT = ROOT / "benchmarks" / "suite.py"


@pytest.mark.slow
def test_quick_suite_writes_its_record(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(tmp_path),
                           "--records", str(tmp_path)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    written = list(tmp_path.glob("suite-*.md"))
    assert len(written) == 1, done.stdout
    record = suite.read_record(written[0])
    machine = record["machine"]
    assert written[0].name == suite.record_name(record)
    assert machine["kind"].startswith(f"cpu{machine['cores']}-") or machine["gpus"]
    for key in ("gpu", "driver", "nvcc", "gcc", "cores", "cpu", "python"):
        assert key in machine
    assert record["commit"] and record["date"] and "--quick" in record["command"]
    assert record["mode"] == "quick" and record["cost_s"] > 0
    figures = {f["name"]: f for f in record["figures"]}
    for name in ("sa-tti", "sa-tti-f16", "acoustic", "acoustic-f16", "staggered"):
        assert figures[name]["median"] > 0, (name, figures.get(name), done.stdout)
        assert figures[name]["runs"] and figures[name]["compare"] == "none"
    skipped = {s["name"] for s in record["skipped"]}
    assert {"fwi", "pystencils"} <= skipped
    text = written[0].read_text()
    for field in ("machine kind", "nvcc", "gcc", "cores", "commit", "date", "command"):
        assert f"| {field} |" in text
    assert "suite cost:" in done.stdout


def _record(kind, commit, date, figures, mode="full"):
    return {"format": suite.FORMAT, "machine": {"kind": kind}, "commit": commit, "date": date,
            "mode": mode, "figures": [
                {"name": name, "unit": unit, "compare": "rate" if unit == "GPts/s" else "ratio",
                 "setup": f"setup of {name}", "median": value, "runs": [value]}
                for name, unit, value in figures]}


def test_drops_against_the_newest_record_of_the_same_kind():
    older = _record("h200", "aaaaaaa", "2026-11-20T10:00:00Z",
                    [("acoustic-f16", "GPts/s", 100.0), ("sa-tti", "GPts/s", 10.0),
                     ("vs-devito-acoustic", "x Devito", 2.0)])
    base = _record("h200", "b414cf9", "2026-11-26T10:00:00Z",
                   [("acoustic-f16", "GPts/s", 181.7), ("sa-tti", "GPts/s", 25.0),
                    ("vs-devito-acoustic", "x Devito", 1.15),
                    ("vs-devito-staggered", "x Devito", 1.15)])
    other_kind = _record("h100", "ccccccc", "2026-11-27T10:00:00Z",
                         [("acoustic-f16", "GPts/s", 500.0), ("sa-tti", "GPts/s", 500.0)])
    head = _record("h200", "bb755cb", "2026-11-28T10:00:00Z",
                   [("acoustic-f16", "GPts/s", 156.3), ("sa-tti", "GPts/s", 24.5),
                    ("vs-devito-acoustic", "x Devito", 0.95),
                    ("vs-devito-staggered", "x Devito", 1.14)])
    records = [(Path("a.md"), older), (Path("b.md"), base), (Path("c.md"), other_kind),
               (Path("d.md"), head)]
    drops = suite.drops_against_records(head, records)
    assert drops == [
        "DROP acoustic-f16: 156.3 GPts/s at bb755cb against 181.7 at b414cf9 (-14.0 %)",
        "DROP vs-devito-acoustic: 0.95x Devito at bb755cb against 1.15x at b414cf9 (-17.4 %)"]
    # the record being written is excluded by its path too, and another mode is not compared
    quick = dict(base, mode="quick")
    assert suite.drops_against_records(head, [(Path("b.md"), quick)]) == []
    assert suite.drops_against_records(head, [(Path("d.md"), dict(base))],
                                       exclude=Path("d.md")) == []
    # CPU rates (--quick) are never compared with records
    head["figures"][0]["compare"] = "none"
    assert len(suite.drops_against_records(head, records)) == 1


def test_drops_against_the_base_of_the_same_call():
    head = _record("h200", "bb755cb", "2026-11-28T10:00:00Z",
                   [("acoustic", "GPts/s", 152.4), ("acoustic-f16", "GPts/s", 156.3)])
    head["base"] = "b414cf9"
    head["figures"][0]["base"] = {"median": 126.9}
    head["figures"][1]["base"] = {"median": 181.7}
    assert suite.drops_against_base(head) == [
        "DROP acoustic-f16: 156.3 GPts/s at bb755cb against 181.7 at b414cf9 (-14.0 %)"]


def test_record_round_trip_and_table(tmp_path):
    record = _record("h200", "bb755cb", "2026-11-28T10:00:00Z",
                     [("acoustic", "GPts/s", 152.4), ("fwi-3d", "x deepwave", 3.29)])
    record.update(machine={"kind": "h200", "gpu": "NVIDIA H200", "gpus": 1, "driver": "580",
                           "nvcc": "13.0", "gcc": "13", "cores": 16, "cpu": "Xeon",
                           "python": "3.12"},
                  command="python benchmarks/suite.py", repeats=3, budget_s=600, cost_s=400,
                  base=None, skipped=[{"name": "pystencils", "reason": "no pystencils"}],
                  drops=[], base_drops=None, transcribed=None)
    for f in record["figures"]:
        f.update(workload=f["name"], choices=[
            "Operator `AcousticBench`: fused nests 0.88 ms, apart 1.12 ms a step of size "
            "(512, 512, 512): fused kept"])
    path = tmp_path / suite.record_name(record)
    path.write_text(suite.render_record(record))
    assert path.name == "suite-h200-2026-11-28-bb755cb.md"
    assert suite.read_record(path) == json.loads(json.dumps(record))
    text = path.read_text()
    assert "AcousticBench: fused kept (fused 0.88 ms, apart 1.12 ms a step)" in text
    assert "- pystencils: no pystencils" in text
    table = suite.standing_table(suite.load_records(tmp_path))
    assert re.search(r"\| acoustic \| h200 \| 152.4 GPts/s \| 2026-11-28 \| bb755cb \|", table)
    assert "3.29x deepwave" in table and path.name in table


def test_unknown_only_name_lists_the_known_ones():
    done = subprocess.run([sys.executable, str(SCRIPT), "--only", "acoustic,nosuch"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "unknown workload nosuch" in done.stderr
    for name in ("sa-tti", "sa-tti-f16", "acoustic", "acoustic-f16", "staggered", "fwi",
                 "pystencils", "vs-devito"):
        assert name in done.stderr
    assert [w.name for w in suite.select(["acoustic-f16 sa-tti", "vs-devito-staggered"])] == \
        ["sa-tti", "acoustic", "vs-devito"]


def test_parsers_read_what_the_scripts_and_the_autotuner_print():
    # the wording the Operator logs (stencilgen/runtime/operator_tuning.py) is what the suite
    # parses
    source = (ROOT / "stencilgen" / "runtime" / "operator_tuning.py").read_text()
    assert "autotuned for size {key} in" in source and "a step of size {key}: " in source
    log = ("Operator `AcousticBench` autotuned for size (512, 512, 512) in 0.14 s: "
           "section0 (32, 4, 2)\n"
           "Operator `AcousticBench`: fused nests 0.88 ms, apart 1.12 ms a step of size "
           "(512, 512, 512): fused kept\n"
           "Operator `AcousticBench` autotuned for size (512, 512, 512) in 0.10 s: x\n"
           "Operator `AcousticBench`: fused nests 2.70 ms, apart 2.58 ms a step of size "
           "(512, 512, 512): apart kept\n")
    lines = suite.autotuner_lines(log)
    assert len(lines) == 4
    split = suite.split_choices(lines, ["acoustic", "acoustic-f16"])
    assert split["acoustic"] == lines[:2] and split["acoustic-f16"] == lines[2:]
    devito = ("program    Devito GPts/s  stencilgen GPts/s  ratio\n"
              "acoustic            1.149              1.488   1.29\n"
              "staggered           0.480              0.552   1.15\n")
    got = suite.devito_ratios(devito)
    assert got["vs-devito-acoustic"].value == 1.29 and got["vs-devito-staggered"].value == 1.15
    more = "acoustic   1.0   1.5   1.50   2.0   2.00\n"   # several stencilgen settings
    assert suite.devito_ratios(more)["vs-devito-acoustic"].value == 1.5
    ran = "shape (32, 32, 32), x\nRan 5 steps (10.9 ms) in 0.080 s: 0.002 GPts/s; max |P|"
    assert suite.ran_rate("sa-tti")(ran)["sa-tti"].value == pytest.approx(32 ** 3 * 5 / 0.08e9)
    assert suite.deepwave_ratio("fwi-3d")("stencilgen / deepwave: 3.29x; max")["fwi-3d"].value \
        == 3.29
    assert suite.gpu_slug("NVIDIA H200") == "h200"
    assert suite.gpu_slug("NVIDIA H100 80GB HBM3") == "h100"
    assert suite.machine_kind([("NVIDIA H200", "580")] * 4, 64, "Xeon") == "h200x4"
    assert suite.machine_kind([], 2, "AMD EPYC 7B13 64-Core Processor") == "cpu2-epyc"
    assert suite.machine_kind([], 2, "Intel(R) Xeon(R) Processor") == "cpu2-xeon"


def test_a_hung_run_is_killed_at_its_timeout(tmp_path):
    tree = suite.Tree("head", ROOT, "test", tmp_path / "cache")
    hung = suite.Command(("-c", "import time; print('started', flush=True); time.sleep(60)"),
                         None, suite.staggered_rate)
    output, seconds, error = suite.run_command(hung, tree, ROOT, 2.0, tmp_path / "hung.log")
    assert error == "timed out after 2 s" and seconds < 30
    assert "started" in output and "started" in (tmp_path / "hung.log").read_text()
