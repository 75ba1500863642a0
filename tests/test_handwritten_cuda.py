"""benchmarks/sa_tti_handwritten.cu, the hand-fused SA-TTI kernel the fused printer is to reach:
it builds with nvcc and, on a GPU, its fused kernels (plain, tuned and rings) agree with its
two-kernel reference after 200 steps on a grid that leaves partial tiles, uneven chunks and an
odd innermost extent (a pair of z-points of the rings kernel straddling the grid's edge)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from test_cuda import needs_gpu, needs_nvcc

SOURCE = Path(__file__).resolve().parents[1] / "benchmarks" / "sa_tti_handwritten.cu"


@pytest.fixture(scope="module")
def exe(tmp_path_factory) -> Path:
    """The program, built once for the module."""
    out = tmp_path_factory.mktemp("handwritten") / "sa_tti_handwritten"
    done = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", str(out), str(SOURCE)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


@needs_nvcc
def test_builds(exe):
    assert exe.exists()


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("mode", [1, 2, 3])
@pytest.mark.parametrize("planes,rows", [(0, 16), (16, 16), (9, 12)])
def test_fused_matches_reference(exe, mode, planes, rows):
    done = subprocess.run([str(exe), "61", "70", "83", "200", str(mode), str(planes), str(rows)],
                          capture_output=True, text=True)
    rel = float(re.search(r"rel (\S+)", done.stdout).group(1))
    assert done.returncode == 0 and rel <= 1e-4, done.stdout
