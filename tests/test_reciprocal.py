"""CUDA float reciprocals through ``sg_rcp`` (backends/cuda/kernel_text.RECIPROCAL_PRELUDE):
printed for float programs only; where the source runs on the host, the host's division; on a
GPU, numpy's 1/x but for a rare unit in the last place, IEEE's special values, subnormals
flushed as documented."""
from __future__ import annotations

import numpy as np
import pytest

import cuda_emulation
from stencilgen import Eq, Function, Grid, Operator
from test_cuda import needs_gpu, needs_nvcc


def _reciprocal(values, dtype=np.float32, name="Rcp"):
    """1/v over ``values`` (a 1D float array), computed by a CUDA Operator (not yet applied)."""
    grid = Grid(shape=values.shape, extent=(1.0,), dtype=dtype)
    v = Function(name="v", grid=grid)
    w = Function(name="w", grid=grid)
    v.data[:] = values
    return Operator([Eq(w, 1 / v)], name=name, backend="cuda"), w


def _values():
    """Mantissas in [1, 2) at every normal binary exponent, both signs, the special values and
    two subnormals."""
    rng = np.random.default_rng(7)
    exps = np.arange(-126, 127)
    mant = rng.uniform(1.0, 2.0, size=(exps.size, 40))
    normal = (mant * 2.0 ** exps[:, None]).astype(np.float32).ravel()
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, 1.5 * 2.0 ** -127,
                        1e-40], np.float32)
    return np.concatenate([normal, -normal[::7], special])


def test_float_reciprocals_print_through_sg_rcp_and_double_ones_divide():
    op32, _ = _reciprocal(np.ones(8, np.float32), name="Rcp32")
    op64, _ = _reciprocal(np.ones(8), dtype=np.float64, name="Rcp64")
    assert "w[" in op32.ccode and "sg_rcp(v[" in op32.ccode
    assert "sg_rcp(" not in op64.ccode.split("sg_rcp(const float x)")[-1]
    assert "1.0/v[" in op64.ccode


@needs_nvcc
def test_emulated_reciprocal_is_the_hosts_division(tmp_path):
    values = _values()
    op, w = _reciprocal(values, name="RcpEmu")
    assert cuda_emulation.run(op, str(tmp_path)) == 0
    with np.errstate(divide="ignore"):
        expected = np.float32(1) / values
    np.testing.assert_array_equal(w.data, expected)


@pytest.mark.gpu
@needs_gpu
def test_gpu_reciprocal_is_ieees_but_for_a_rare_last_place():
    values = _values()
    op, w = _reciprocal(values, name="RcpGpu")
    op.apply()
    with np.errstate(divide="ignore"):
        expected = np.float32(1) / values
    got = np.asarray(w.data)
    normal = (np.abs(values) >= 2.0 ** -126) & (np.abs(values) < 2.0 ** 126)
    finite = np.isfinite(expected) & normal
    ulps = np.abs(got[finite] - expected[finite]) / np.spacing(np.abs(expected[finite]))
    assert ulps.max() <= 1.0
    assert np.count_nonzero(ulps) <= 4   # midpoint cases: about one quotient in 2^22
    special = ~np.isfinite(values) | (values == 0)
    np.testing.assert_array_equal(got[special], expected[special])   # 0, -0, inf, NaN as IEEE
    huge = np.isfinite(values) & (np.abs(values) > 2.0 ** 126)
    assert huge.any() and np.all(got[huge] == 0)   # a subnormal result flushes to zero
    tiny = (values != 0) & (np.abs(values) < 2.0 ** -126)
    assert tiny.sum() == 2 and np.all(got[tiny] == np.inf)   # a subnormal input as zero
