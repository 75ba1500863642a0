"""The performance charts (benchmarks/charts.py, roofline.py --plot, scaling.py --plot): made at
tiny sizes, of the expected pixel size, with the points drawn equal to the figures printed.
The scripts set the log level: each test puts the settings back."""
from __future__ import annotations

import builtins
import re
import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import charts, roofline, scaling  # noqa: E402

try:
    import matplotlib  # noqa: F401
    MISSING = None
except ImportError:
    MISSING = "matplotlib is not installed (pip install 'stencilgen[plot]')"
needs_matplotlib = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@needs_matplotlib
def test_roofline_chart_draws_the_printed_nests(tmp_path, capsys, restore_settings):
    out = tmp_path / "roofline.png"
    drawn = roofline.main(["--backend", "c", "--tti", "16", "16", "16", "--acoustic",
                           "88", "88", "88", "--nt", "2", "--plot", str(out)])
    printed = re.findall(r"^(SA-TTI|acoustic)\s+(section\d+)\s+\S+\s+\S+\s+\S+\s+\S+%\s+"
                         r"(\S+)\s+(\S+)$", capsys.readouterr().out, flags=re.M)
    assert out.exists() and _png_size(out) == (800, 550)
    assert len(drawn) == len(printed) >= 4
    for (label, backend, oi, gflops), (work, nest, p_oi, p_gflops) in zip(drawn, printed):
        assert label == f"{work} {nest}" and backend == "c"
        assert oi == pytest.approx(float(p_oi), rel=1e-3)
        assert gflops == pytest.approx(float(p_gflops), rel=1e-5)


@needs_matplotlib
def test_scaling_chart_draws_the_printed_figures(tmp_path, capsys, restore_settings):
    out = tmp_path / "scaling.png"
    drawn = scaling.main(["--backend", "c", "--sizes", "16", "24", "--space-orders", "4", "8",
                          "--nt", "2", "--plot", str(out)])
    rows = re.findall(r"^c\s+(\d+)\^3\s+(\d+)\s+(\d+)\s+(\S+)$", capsys.readouterr().out,
                      flags=re.M)
    assert out.exists() and _png_size(out) == (1200, 480)
    sizes = [(float(pts), float(g)) for n, so, pts, g in rows[:2]]
    orders = [(float(so), float(g)) for n, so, pts, g in rows[2:]]
    assert [x for x, _ in drawn["size"]["c"]] == [x for x, _ in sizes] == [16.0 ** 3, 24.0 ** 3]
    assert [x for x, _ in drawn["order"]["c"]] == [4.0, 8.0]
    for (x, y), (px, py) in zip(drawn["size"]["c"] + drawn["order"]["c"], sizes + orders):
        assert y == pytest.approx(py, rel=1e-5)


def test_a_missing_matplotlib_says_how_to_install_it(monkeypatch):
    real = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", refuse)
    with pytest.raises(SystemExit, match=r"pip install 'stencilgen\[plot\]'"):
        charts.pyplot()


def test_compute_ceilings():
    assert charts.gpu_peak("NVIDIA H200 (sm_90)")[0] == charts.GPU_PEAKS["H200"]
    assert charts.gpu_peak("unknown board") is None
    gflops, note = charts.cpu_peak()
    assert gflops > 0 and "cores" in note


_TABLE = """GPUs: 4 x NVIDIA H200
| scaling | ranks | grid | topology | mode | halos | GPts/s | vs 1 rank | max \\|P\\| | compute s | exchange s | wait s | calls s |
| --- | ---: | --- | --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |
| weak | 1 | 412x423x476 | (1, 1, 1) | - | none | 25.25 | 100.0% | 2.0285e-02 | 0.654 | 0.000 | 0.003 | 0.000 |
| weak | 2 | 824x423x476 | (2, 1, 1) | basic | nccl | 48.65 | 96.3% | 2.0285e-02 | 0.655 | 0.023 | 0.027 | 0.022 |
| weak | 2 | 824x423x476 | (2, 1, 1) | overlap | nccl | 49.19 | 97.4% | 2.0285e-02 | 0.669 | 0.037 | 0.005 | 0.034 |
| strong | 1 | 824x423x476 | (1, 1, 1) | - | none | 25.19 | 1.00x | 2.0285e-02 | 1.313 | 0.000 | 0.004 | 0.000 |
| strong | 4 | 824x423x476 | (4, 1, 1) | overlap | nccl | 94.01 | 3.73x | 2.0285e-02 | 0.347 | 0.112 | 0.006 | 0.026 |
"""


@needs_matplotlib
def test_mpi_scaling_chart_draws_the_recorded_rows(tmp_path, capsys):
    from benchmarks import mpi_scaling
    table = tmp_path / "table.md"
    table.write_text(_TABLE)
    out = tmp_path / "mpi.png"
    mpi_scaling.main(["--chart", str(out), "--from", f"float32={table}"])
    assert out.exists() and _png_size(out) == (1200, 480)
    drawn = mpi_scaling.series({"float32": _TABLE})
    assert drawn["weak"] == {"float32, basic": [(1, 100.0), (2, 96.3)],
                             "float32, overlap": [(1, 100.0), (2, 97.4)]}
    assert drawn["strong"] == {"float32, overlap": [(1, 1.0), (4, 3.73)]}
    printed = capsys.readouterr().out
    assert "weak float32, overlap [(1.0, 100.0), (2.0, 97.4)]" in printed
