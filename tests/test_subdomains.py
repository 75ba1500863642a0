"""User SubDomains, as Devito 4.8.23's: ``define()`` maps each dimension to itself, to
``('left', n)`` (x_m .. x_m + n - 1), ``('right', n)`` (x_M - n + 1 .. x_M) or
``('middle', l, r)`` (x_m + l .. x_M - r); an equation on a subdomain loops over it only and
its derivatives read outside it as usual. Both of Devito's ways to attach one to a grid work,
and a Devito-computed reference (tests/reference/subdomain_program.npz) is matched."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import stencilgen
from stencilgen import (Eq, Function, Grid, InvalidArgument, InvalidEquation, Operator,
                        SubDomain, TimeFunction, platform)
from test_cuda import needs_gpu, needs_nvcc

REFERENCE = Path(__file__).resolve().parent / "reference"
sys.path.insert(0, str(REFERENCE))


def _subdomain(spans, name="sd"):
    """A SubDomain class mapping the grid's dimensions, in order, to ``spans`` (None: all)."""
    class Region(SubDomain):
        def define(self, dimensions):
            return {d: d if s is None else s for d, s in zip(dimensions, spans)}
    Region.name = name
    return Region


def _slices(spans, shape):
    """The numpy slices of ``spans`` at the full bounds."""
    out = []
    for s, n in zip(spans, shape):
        if s is None:
            out.append(slice(0, n))
        elif s[0] == "left":
            out.append(slice(0, s[1]))
        elif s[0] == "right":
            out.append(slice(n - s[1], n))
        else:
            out.append(slice(s[1], n - s[2]))
    return tuple(out)


def _laplace(a, h):
    """The 3-point Laplacian of ``a`` with zero outside (the halo of space_order 2)."""
    p, out = np.pad(a, 1), np.zeros_like(a)
    for axis, hk in enumerate(h):
        lo = tuple(slice(0, -2) if k == axis else slice(1, -1) for k in range(a.ndim))
        hi = tuple(slice(2, None) if k == axis else slice(1, -1) for k in range(a.ndim))
        out += (p[lo] - 2 * a + p[hi]) / hk ** 2
    return out


CASES_2D = {
    "left-right": (("left", 3), ("right", 4)),
    "middle-all": (("middle", 2, 5), None),
    "right-middle": (("right", 1), ("middle", 0, 3)),
}


def _diffusion(spans, backend, name, shape=(11, 9), steps=3):
    """u.forward = u + a*u.laplace on the subdomain; the points outside keep the older slot."""
    grid = Grid(shape=shape, extent=tuple(0.1 * (n - 1) for n in shape))
    sub = _subdomain(spans)(grid=grid)
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[:] = np.random.default_rng(5).standard_normal(u.data.shape)
    op = Operator([Eq(u.forward, u + 0.002 * u.laplace, subdomain=sub)], backend=backend,
                  name=name)
    return op, u, grid


@pytest.mark.parametrize("case", sorted(CASES_2D))
def test_2d_subdomain_updates_match_numpy(case):
    spans = CASES_2D[case]
    op, u, grid = _diffusion(spans, "c", f"Sub{case.replace('-', '_')}")
    slots = [u.data[0].astype(np.float64), u.data[1].astype(np.float64)]
    op.apply(time_M=2)
    region = _slices(spans, grid.shape)
    for t in range(3):
        new = slots[(t + 1) % 2].copy()   # outside: the slot's older value stays
        new[region] = (slots[t % 2] + 0.002 * _laplace(slots[t % 2], grid.spacing))[region]
        slots[(t + 1) % 2] = new
    for k in range(2):
        assert np.allclose(u.data[k], slots[k], rtol=1e-5, atol=1e-5), (case, k)


def test_3d_subdomain_with_every_kind_of_span():
    spans = (("left", 3), ("middle", 1, 2), ("right", 4))
    grid = Grid(shape=(7, 8, 9))
    sub = _subdomain(spans, "mixed")(grid=grid)
    f = Function(name="f", grid=grid, space_order=4)
    g = Function(name="g", grid=grid)
    f.data[:] = np.random.default_rng(2).standard_normal(grid.shape)
    g.data[:] = -7.0
    Operator([Eq(g, f.laplace, subdomain=sub)], backend="c").apply()
    want = np.full(grid.shape, -7.0)
    a, h = f.data.astype(np.float64), grid.spacing
    p, lap = np.pad(a, 2), np.zeros_like(a)
    for axis in range(3):   # the 5-point second derivative of space order 4
        def at(k):
            return p[tuple(slice(2 + k, 2 + k + n) if j == axis else slice(2, 2 + n)
                           for j, n in enumerate(a.shape))]
        lap += (-at(-2) + 16 * at(-1) - 30 * a + 16 * at(1) - at(2)) / (12 * h[axis] ** 2)
    region = _slices(spans, grid.shape)
    want[region] = lap[region]
    assert np.allclose(g.data, want, rtol=1e-4, atol=1e-4 * np.abs(lap).max())


def test_both_ways_of_attaching_and_grid_subdomains():
    """Devito 4.8: Grid(subdomains=) lists the subdomain in grid.subdomains; Middle(grid=grid)
    does not; both run the equation on the same points."""
    Middle = _subdomain((("middle", 3, 4), None), "middle")
    grid = Grid(shape=(10, 10), subdomains=(Middle(),))
    mid = Middle(grid=grid)
    assert list(grid.subdomains) == ["domain", "interior", "middle"]
    assert grid.subdomains["middle"].shape == mid.shape == (3, 10)
    assert grid.subdomains["middle"].grid is grid and mid.grid is grid
    f = Function(name="f", grid=grid)
    for sub in (grid.subdomains["middle"], mid):
        f.data[:] = 0.0
        Operator([Eq(f, 1.0, subdomain=sub)], backend="c").apply()
        assert f.data.sum() == 30 and f.data[3:6].min() == 1.0


def test_bounds_move_the_ends_as_devito():
    """A left span counts from x_m, a right one up to x_M (Devito's SubDimension.left/right)."""
    Ends = _subdomain((("left", 2), ("right", 3)), "ends")
    grid = Grid(shape=(10, 10))
    f = Function(name="f", grid=grid)
    op = Operator([Eq(f, f + 1.0, subdomain=Ends(grid=grid))], backend="c")
    op.apply(x_m=3, y_M=6)
    assert np.argwhere(f.data == 1.0).tolist() == [[3, 4], [3, 5], [3, 6], [4, 4], [4, 5],
                                                   [4, 6]]
    assert "x <= x_m + 1" in op.ccode and "y = y_M - 2" in op.ccode
    with pytest.raises(InvalidArgument, match="x = 9..10, outside 0..9"):
        op.apply(x_m=9)


def test_derivatives_read_outside_the_subdomain():
    Inner = _subdomain((("middle", 2, 2), ("middle", 2, 2)), "inner")
    grid = Grid(shape=(8, 8))
    u = Function(name="u", grid=grid)
    v = Function(name="v", grid=grid)
    u.data[:] = np.arange(64, dtype=np.float32).reshape(8, 8) ** 2
    Operator([Eq(v, u.dx2, subdomain=Inner(grid=grid))], backend="c").apply()
    a, h = u.data.astype(np.float64), grid.spacing[0]
    want = (a[1:-3, 2:-2] - 2 * a[2:-2, 2:-2] + a[3:-1, 2:-2]) / h ** 2
    assert np.allclose(v.data[2:-2, 2:-2], want, rtol=1e-5)
    assert v.data[:2].max() == v.data[-2:].max() == 0.0


def test_devito_reference_program():
    """tests/reference/subdomain_program.py run under Devito 4.8.23 (stored) and stencilgen."""
    import subdomain_program
    ref = np.load(REFERENCE / "subdomain_program.npz")
    out = subdomain_program.run(stencilgen)
    for key in ("u", "rec"):
        scale = np.abs(ref[key]).max()
        assert scale > 0 and out[key].shape == ref[key].shape
        assert np.abs(out[key] - ref[key]).max() <= 1e-5 * scale, key


@pytest.mark.parametrize("spans, match", [
    ((("left", 12), None), r"\('left', 12\) along x, which has only 10 points"),
    ((("middle", 1), None), "map each dimension to x \\(all of it\\)"),
    ((("top", 1), None), "map each dimension to"),
    ((("left", -1), None), "non-negative integer"),
    ((("left", 2.0), None), "non-negative integer"),
])
def test_bad_definitions(spans, match):
    with pytest.raises(InvalidArgument, match=match):
        _subdomain(spans)(grid=Grid(shape=(10, 10)))


def test_misuse_is_reported():
    grid, other = Grid(shape=(6, 6)), Grid(shape=(6, 6))

    class OneDim(SubDomain):
        name = "one"

        def define(self, dimensions):
            return {dimensions[0]: ("left", 2)}
    with pytest.raises(InvalidArgument, match=r"missing \[y\]"):
        OneDim(grid=grid)
    with pytest.raises(InvalidArgument, match="override define"):
        SubDomain(grid=grid)
    Left = _subdomain((("left", 2), None), "left")
    f = Function(name="f", grid=grid)
    with pytest.raises(InvalidEquation, match=r"Region\(grid=grid\)"):
        Eq(f, 1.0, subdomain=Left())
    with pytest.raises(InvalidEquation, match="belongs to another Grid"):
        Operator([Eq(f, 1.0, subdomain=Left(grid=other))], backend="c")
    with pytest.raises(InvalidEquation, match="or a SubDomain"):
        Eq(f, 1.0, subdomain="left")
    sub = Left(grid=grid)
    with pytest.raises(InvalidArgument, match="one SubDomain object per Grid"):
        Grid(shape=(6, 6), subdomains=(sub,))
    with pytest.raises(InvalidArgument, match="two subdomains are named 'left'"):
        Grid(shape=(6, 6), subdomains=(Left(), Left()))
    x, y = grid.dimensions
    assert sub.dimensions[1] is y and sub.dimensions[0].thickness == (2, None)   # Devito's
    with pytest.raises(InvalidArgument, match="belongs to no Grid yet"):
        Left().dimensions
    assert stencilgen.MultiSubDimension.is_MultiSub   # a SubDomainSet's dimensions


# -- CUDA and OpenACC ----------------------------------------------------------------------

def _mixed_3d(backend):
    """The 3D case with every span and a 2D coefficient without a grid, on ``backend``."""
    spans = (("left", 3), ("middle", 1, 2), ("right", 4))
    grid = Grid(shape=(9, 10, 11))
    sub = _subdomain(spans, "mixed")(grid=grid)
    x, _, z = grid.dimensions
    c = Function(name="c", shape=(9, 11), dimensions=(x, z))
    c.data[:] = np.random.default_rng(4).uniform(0.5, 1.0, c.shape)
    u = TimeFunction(name="u", grid=grid, space_order=4)
    u.data[:] = np.random.default_rng(6).standard_normal(u.data.shape)
    op = Operator([Eq(u.forward, u + 1e-3 * c * u.laplace, subdomain=sub)], backend=backend,
                  name=f"SubMixed_{backend}")
    return op, u


def test_openacc_on_the_host_equals_c():
    op_c, u_c = _mixed_3d("c")
    op_a, u_a = _mixed_3d("openacc")
    op_c.apply(time_M=3)
    op_a.apply(time_M=3)
    assert np.allclose(u_a.data, u_c.data, rtol=1e-6, atol=1e-6)


def _staggered_3d(backend):
    """A self-adjoint update (temporaries of staggered derivatives) on a subdomain."""
    grid = Grid(shape=(12, 13, 14))
    sub = _subdomain((("left", 5), ("right", 6), ("middle", 2, 1)), "stag")(grid=grid)
    x, y, _ = grid.dimensions
    u = TimeFunction(name="u", grid=grid, space_order=4)
    b = Function(name="b", grid=grid, space_order=4)
    b.data[:] = np.random.default_rng(3).uniform(1.0, 2.0, grid.shape)
    u.data[:] = np.random.default_rng(1).standard_normal(u.data.shape)
    hx, hy = x.spacing, y.spacing
    e = ((b * u.dx(x0=x + hx / 2)).dx(x0=x - hx / 2)
         + (b * u.dy(x0=y + hy / 2)).dy(x0=y - hy / 2))
    return Operator([Eq(u.forward, u + 1e-4 * e, subdomain=sub)], backend=backend,
                    name=f"SubStag_{backend}"), u


def test_fused_c_nests_on_a_subdomain_equal_openacc():
    """The C backend fuses the temporaries' nests into the subdomain's blocks (c_fusion);
    OpenACC on the host does not: the same numbers."""
    (op_c, u_c), (op_a, u_a) = _staggered_3d("c"), _staggered_3d("openacc")
    assert "sg_fuse" in op_c.ccode
    op_c.apply(time_M=3)
    op_a.apply(time_M=3)
    assert np.allclose(u_a.data, u_c.data, rtol=1e-6, atol=1e-6)


@needs_nvcc
def test_cuda_source_of_a_subdomain_compiles():
    op, _ = _mixed_3d("cuda")
    assert "const long sg_n0 = 4;" in op.ccode and "const long sg_n2 = 3;" in op.ccode
    assert op.cfunction is not None


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("backend", ["cuda", "openacc"])
@pytest.mark.parametrize("case", sorted(CASES_2D) + ["mixed3d", "staggered3d"])
def test_subdomains_on_the_gpu_equal_c(backend, case):
    if backend == "openacc" and "host" in platform.toolchain("openacc").name:
        pytest.skip("no offloading OpenACC compiler")
    if case in ("mixed3d", "staggered3d"):
        make = _mixed_3d if case == "mixed3d" else _staggered_3d
        (op_c, u_c), (op_g, u_g) = make("c"), make(backend)
    else:
        tag = case.replace("-", "_")
        op_c, u_c, _ = _diffusion(CASES_2D[case], "c", f"SubC{tag}")
        op_g, u_g, _ = _diffusion(CASES_2D[case], backend, f"Sub{backend}{tag}")
    op_c.apply(time_M=5)
    op_g.apply(time_M=5)
    assert np.allclose(u_g.data, u_c.data, rtol=1e-6, atol=1e-6)
