"""16-bit storage over 2000 time steps: how far float16 and bfloat16 storage (without and with
compensated stepping) take the shot record and the final wavefield from float32 storage.

Two workloads of ``benchmarks/precision.py`` on small grids, C backend, space order 8: the
acoustic demo's shot (2D, three layers, sponge, Ricker source, a receiver per grid point in
x) and the SA-TTI shot of demos/tti (3D). The wavefields and the medium are stored in 16 bits,
as the demos' ``--storage`` does. Pinned per case: the record's relative L2 error
||rec - rec32|| / ||rec32|| and the wavefield's energy error over the run, the largest
|E - E32| after each of ten chunks relative to the largest E32 (E = sum u^2 from
``data_unscaled``; TTI: P^2 + M^2), about twice the values measured (gcc 12.2, x86-64; in
the comments). On these small grids the sponge has absorbed nearly all of the wave by step
2000, so the final energy alone would measure a residue. For bfloat16 without compensation
on SA-TTI the energy error is the growth of a spurious M field (rounding noise the slow M
waves pick up faster than the sponge takes it out). Then the orderings that must hold whatever the
grid: compensation lowers both errors, float16 (11 significant bits) beats bfloat16 (8).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import precision  # noqa: E402

NT = 2000
SO = 8
SETUPS = {"acoustic": ((61, 41), 10), "tti": ((16, 16, 16), 6)}   # physical grid, sponge
CASES = [("float16", False), ("float16", True), ("bfloat16", False), ("bfloat16", True)]

#: (workload, storage, compensated) -> upper bounds of (record L2 error, final energy error)
BOUNDS = {   # record L2 error, energy error over the run (of the peak energy); measured:
    ("acoustic", "float16", False): (1.6e-2, 1.1e-2),    # 7.77e-03, 5.37e-03
    ("acoustic", "float16", True): (3.2e-3, 1.8e-3),     # 1.57e-03, 8.65e-04
    ("acoustic", "bfloat16", False): (1.9e-1, 9.8e-2),   # 9.55e-02, 4.90e-02
    ("acoustic", "bfloat16", True): (2.5e-2, 2.1e-2),    # 1.22e-02, 1.06e-02
    ("tti", "float16", False): (7.2e-3, 9.4e-3),         # 3.60e-03, 4.67e-03
    ("tti", "float16", True): (3.6e-3, 3.5e-3),          # 1.81e-03, 1.72e-03
    ("tti", "bfloat16", False): (1.3e-1, 4.2e+0),        # 6.48e-02, 2.06e+00 (M grows)
    ("tti", "bfloat16", True): (2.6e-2, 2.2e-2),         # 1.28e-02, 1.11e-02
}


def _needs(storage):
    if storage == "bfloat16":
        pytest.importorskip("ml_dtypes", reason="bfloat16 storage shows its values through "
                            "ml_dtypes (pip install ml_dtypes)")


@pytest.fixture(scope="module")
def runs():
    """run(workload, storage, compensated, backend): each shot run once per module."""
    done = {}

    def run(workload, storage="float32", compensated=False, backend="c"):
        key = (workload, storage, compensated, backend)
        if key not in done:
            _needs(storage)
            shape, nbl = SETUPS[workload]
            done[key] = precision.run_case(workload, shape, NT, SO, nbl, backend, storage,
                                           compensated)
        return done[key]
    return run


def _row(runs, workload, storage, compensated, backend="c"):
    return precision.compare(runs(workload, storage, compensated, backend), runs(workload),
                             storage, compensated)


@pytest.mark.parametrize("storage, compensated", CASES)
@pytest.mark.parametrize("workload", list(SETUPS))
def test_error_against_float32_is_bounded(runs, workload, storage, compensated):
    row = _row(runs, workload, storage, compensated)
    l2, energy = BOUNDS[workload, storage, compensated]
    print(f"{workload} {storage} compensated={compensated}: record L2 {row.record_l2:.3e}, "
          f"energy over the run {row.energy_peak:.3e}, bytes/point {row.bytes_per_point:.1f}, "
          f"scale {row.scale}")
    assert 0 < row.record_l2 <= l2
    assert 0 < row.energy_peak <= energy
    ref = runs(workload)
    assert np.all(np.isfinite(runs(workload, storage, compensated).record))
    # 16 bits a value: fewer bytes than float32, the companion's reads and writes added back
    assert row.bytes_per_point < ref.bytes_per_point
    if compensated:
        assert row.bytes_per_point > runs(workload, storage).bytes_per_point


@pytest.mark.parametrize("storage", ["float16", "bfloat16"])
@pytest.mark.parametrize("workload", list(SETUPS))
def test_compensation_lowers_the_error(runs, workload, storage):
    plain = _row(runs, workload, storage, False)
    comp = _row(runs, workload, storage, True)
    assert comp.record_l2 < plain.record_l2
    assert comp.energy_peak < plain.energy_peak


@pytest.mark.parametrize("compensated", [False, True])
@pytest.mark.parametrize("workload", list(SETUPS))
def test_float16_beats_bfloat16(runs, workload, compensated):
    half = _row(runs, workload, "float16", compensated)
    brain = _row(runs, workload, "bfloat16", compensated)
    assert half.record_l2 < brain.record_l2
    assert half.energy_peak < brain.energy_peak


@pytest.mark.parametrize("compensated", [False, True])
def test_openacc_host_build_matches_c(runs, compensated):
    """The OpenACC build (on the host in CI) of the float16 acoustic shot: within the C
    backend's bounds and, the arithmetic being float32 in both, the C record to within a few
    float16 roundings (measured: identical)."""
    row = _row(runs, "acoustic", "float16", compensated, backend="openacc")
    l2, energy = BOUNDS["acoustic", "float16", compensated]
    assert 0 < row.record_l2 <= l2 and 0 < row.energy_peak <= energy
    acc = runs("acoustic", "float16", compensated, "openacc").record
    c = runs("acoustic", "float16", compensated).record
    assert np.abs(acc - c).max() <= 2e-3 * np.abs(c).max()
