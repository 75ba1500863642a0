"""The on-paper model of SA-TTI over many GPUs (benchmarks/mpi_model.py): calibrated on the
recorded 4-GPU table, it gives back the measured rows it was fitted on, and counts the faces
of a rank placed 8 to a node as the topology has them."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import mpi_model  # noqa: E402

RECORDS = ROOT / "benchmarks" / "records"


def _table():
    merged = {}
    for name in ("mpi_scaling_float32.md", "mpi_scaling_float32_streams.md"):
        merged.update({(r.kind, r.ranks, r.mode): r
                       for r in mpi_model.rows((RECORDS / name).read_text())})
    return merged


def test_the_model_gives_back_the_rows_it_was_fitted_on():
    """Weak scaling at 2 and 4 GPUs, basic and overlap: the model's efficiency against the
    measured one (the one-GPU step over the slowest rank's)."""
    table = _table()
    m = mpi_model.calibrate(list(table.values()), 200)
    one = table[("weak", 1, "-")]
    for ranks, topo in ((2, (2, 1, 1)), (4, (2, 2, 1))):
        got = mpi_model.predict(m, topo, 8, 40.0, 20.0)
        for mode, tolerance in (("basic", 0.005), ("overlap", 0.015)):
            run = table[("weak", ranks, mode)]
            measured = (one.compute + one.wait) / (run.compute + run.wait)
            assert got[mode] == pytest.approx(measured, abs=tolerance), (ranks, mode)
    assert 0 < m["fixed"] < m["t1"] / 10 and m["face"] > 0 and m["packed"] > 0


@pytest.mark.parametrize("topo, want", [((2, 1, 1), (1, 0, 0, 1)), ((64, 1, 1), (1, 1, 0, 1)),
                                        ((2, 2, 1), (2, 0, 2, 2)), ((4, 4, 4), (3, 3, 6, 3))])
def test_faces_of_the_slowest_rank(topo, want):
    """(4, 4, 4), ranks in row-major order 8 a node: a node is 1 x 2 x 4 blocks, so x faces
    leave it, one y face of two does, z faces stay; every face is packed (3 dimensions cut)."""
    assert mpi_model.faces(topo, 8) == want
