"""benchmarks/cpu_bandwidth.py: its sizes, and a small run whose figures are real rates."""
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import cpu_bandwidth  # noqa: E402


def test_sizes_are_read_in_binary_units():
    assert cpu_bandwidth.size("32K") == 32 * 1024
    assert cpu_bandwidth.size("1.5M") == 3 * 2 ** 19
    assert cpu_bandwidth.size("2GiB") == 2 * 2 ** 30
    assert cpu_bandwidth.size("4096") == 4096
    with pytest.raises(SystemExit, match="give a number with K, M or G"):
        cpu_bandwidth.size("lots")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc with OpenMP")
def test_a_small_run_prints_a_rate_per_kernel(capsys):
    """Each row: threads, sizes, and one GB/s per kernel, each a positive number; the same
    threads' rate in cache is above 1 GB/s (a wrong byte count or a loop the compiler
    removed shows as 0 or an absurd figure)."""
    cpu_bandwidth.main(["--threads", "1", "--sizes", "48K", "3M", "--bytes", "2e7", "--best", "1"])
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| 1 |")]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        rates = [float(c) for c in cells[3:]]
        assert len(rates) == len(cpu_bandwidth.KERNELS)
        assert all(1.0 < r < 1e5 for r in rates), row
