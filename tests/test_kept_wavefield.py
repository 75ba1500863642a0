"""How a shot keeps its forward wavefield for the gradient (``seismic.keeping``): every step,
snapshots, or recomputed from binomial checkpoints, chosen before it runs from the memory it
may use; the checkpointed gradient is the kept one to round-off."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from stencilgen import Grid, InvalidArgument
from stencilgen.seismic import autograd, keeping
from stencilgen.seismic.checkpointing import cost
from stencilgen.seismic.model import Model
from stencilgen.seismic.tti import tti_critical_dt, tti_medium

from test_cuda import needs_gpu

try:
    torch = autograd.import_torch()
except ImportError:
    pytest.skip("needs PyTorch: pip install 'stencilgen[torch]'", allow_module_level=True)

NT = 90


def _acoustic(name, dtype=np.float64, backend="c", shape=(30, 26), nt=NT, batch=False, **kw):
    inner = tuple(n - 8 for n in shape)
    z = np.linspace(0, 1, inner[-1])[None, :]
    model = Model(vp=np.broadcast_to(1.5 + z, inner), spacing=10.0, nbl=4, space_order=4,
                  dtype=dtype)
    ex, ez = (10.0 * (n - 1) for n in inner)
    src, rec = [(0.4 * ex, 0.6 * ez)], [(x * ex, 0.2 * ez) for x in (0.2, 0.5, 0.8)]
    if batch:
        src, rec = [src, [(0.7 * ex, 0.5 * ez)]], [rec, rec]
    shot = autograd.AcousticShot(model, src, rec, nt, 0.5 * model.critical_dt, backend=backend,
                                 name=name, batch=batch, **kw)
    return shot, torch.tensor(np.array(model.m.data))


def _tti(name, nt=NT, **kw):
    shape = (21, 19)
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float64)
    z = np.linspace(0, 1, shape[-1])[None, :]
    medium = tti_medium(grid, 4, V=np.broadcast_to(1.5 + z, shape), b=1 / (1 + 0.5 * z),
                        epsilon=0.12, delta=0.04, theta=0.4, phi=0.3, f=0.85, qinv=0.02)
    ex, ez = grid.extent
    shot = autograd.SATTIShot(medium, [(0.5 * ex, 0.6 * ez)],
                              [(x * ex, 0.25 * ez) for x in (0.3, 0.5, 0.7)], nt,
                              0.9 * tti_critical_dt(medium, 4), name=name, **kw)
    return shot, torch.tensor(1.0 / (1.5 + np.broadcast_to(z, shape)) ** 2)


def _wavelet(nt=NT, dtype=torch.float64):
    return torch.tensor(np.exp(-((np.arange(nt) - 12) / 5.0) ** 2), dtype=dtype)


def _gradients(shot, m0, w, repeat=1):
    """(data, d/dm, d/dwavelet) of sum(data * weights), ``repeat`` backwards of one forward
    (the graph kept: a checkpointed shot recomputes its states for the later ones)."""
    m, wv = m0.clone().requires_grad_(True), w.clone().requires_grad_(True)
    data = shot(m, wv)
    weights = torch.linspace(-1, 2, data.numel(), dtype=data.dtype,
                             device=data.device).reshape(data.shape)
    for k in range(repeat):
        torch.sum(data * weights).backward(retain_graph=k < repeat - 1)
    return data.detach(), m.grad / repeat, wv.grad / repeat


def _close(a, b, rel):
    scale = float(b.abs().max())
    return scale > 0 and float((a - b).abs().max()) <= rel * scale


@pytest.mark.parametrize("dtype, rel", [(np.float64, 1e-13), (np.float32, 1e-6)])
def test_checkpoints_give_the_kept_gradient(dtype, rel):
    """Recomputed from 4 binomial checkpoints, the data are those of the shot keeping every
    step, the gradients in m and in the wavelet the same to round-off; the states were
    recomputed as the schedule says (cost(nt, 4) + 1 forward steps)."""
    w = _wavelet(dtype=torch.float64 if dtype == np.float64 else torch.float32)
    kept, m0 = _acoustic("KeptAll", dtype)
    chk, _ = _acoustic("KeptChk", dtype, checkpoints=4)
    assert kept.keeping.mode == "memory" and chk.keeping.mode == "checkpoints"
    assert chk.fields[1] is None and chk.keeping.nbytes == 4 * keeping.field_bytes(chk.fields[0])
    a, b = _gradients(kept, m0, w), _gradients(chk, m0, w)
    assert torch.equal(a[0], b[0])
    assert _close(b[1], a[1], rel) and _close(b[2], a[2], rel)
    assert chk.reversed.forward_steps == cost(NT, 4) + 1 == chk.keeping.forward_steps
    assert chk.reversed.forward_steps > NT and chk.reversed.peak_slots <= 4


def test_a_checkpointed_backward_twice_and_after_another_forward():
    """A second backward of the same forward (its states consumed by the first) and the
    backward of an earlier forward (another ran since) each run their forward again: the
    gradients those of the kept shot."""
    w = _wavelet()
    kept, m0 = _acoustic("Twice")
    chk, _ = _acoustic("TwiceChk", checkpoints=3)
    assert _close(_gradients(chk, m0, w, repeat=2)[1], _gradients(kept, m0, w)[1], 1e-13)
    m1 = m0 * 1.05
    ma, mb = m0.clone().requires_grad_(True), m1.clone().requires_grad_(True)
    first, second = chk(ma, w), chk(mb, w)
    (first.sum() + 0 * second.sum()).backward()
    mk = m0.clone().requires_grad_(True)
    kept(mk, w).sum().backward()
    assert _close(ma.grad, mk.grad, 1e-13)


def test_a_shot_larger_than_its_memory_checkpoints_and_says_so(caplog):
    """With ``memory`` a third of what keeping every step needs, the shot says before it runs
    that it recomputes, from as many checkpoints as fit, and gives the kept gradient."""
    w = _wavelet()
    kept, m0 = _acoustic("Fits")
    need = kept.keeping.nbytes
    with caplog.at_level(logging.WARNING, logger="stencilgen"):
        small, _ = _acoustic("Small", memory=need // 3)
    state = keeping.field_bytes(small.fields[0])
    assert small.keeping.mode == "checkpoints"
    assert small.keeping.checkpoints == (need // 3) // state
    said = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert f"keeping all {NT} steps" in said and \
        f"{small.keeping.checkpoints} binomial checkpoints" in said
    assert _close(_gradients(small, m0, w)[1], _gradients(kept, m0, w)[1], 1e-13)


def test_snapshots_sample_the_gradient():
    """snapshots=1 is the kept gradient (to round-off); every 3rd step kept (a third of the memory)
    the gradient is 3 times their sum, an approximation of the full one: measured 6.8 % off
    in L2 and 0.9977 in direction (cosine) for this wavelet (a Gaussian 5 steps wide)."""
    w = _wavelet()
    kept, m0 = _acoustic("SnapAll")
    one, _ = _acoustic("Snap1", snapshots=1)
    three, _ = _acoustic("Snap3", snapshots=3)
    assert three.keeping.nbytes == ((NT - 1) // 3 + 1) * keeping.step_bytes(kept.fields[0])
    assert three.fields[1].data.shape[0] == (NT - 1) // 3 + 1
    full = _gradients(kept, m0, w)[1]
    assert _close(_gradients(one, m0, w)[1], full, 1e-13)
    approx = _gradients(three, m0, w)[1]
    norm = torch.linalg.norm
    assert float(norm(approx - full) / norm(full)) < 0.1
    assert float(torch.sum(approx * full) / norm(approx) / norm(full)) > 0.995


def test_a_batch_and_the_sa_tti_shot_checkpoint_too():
    """A batch of two shots and the SA-TTI shot, recomputed from checkpoints: the kept
    gradients to round-off."""
    w = _wavelet()
    for build in (lambda n, **kw: _acoustic(n, batch=True, **kw), _tti):
        kept, m0 = build("BothKept")
        chk, _ = build("BothChk", checkpoints=5)
        assert chk.keeping.mode == "checkpoints"
        a, b = _gradients(kept, m0, w), _gradients(chk, m0, w)
        assert torch.equal(a[0], b[0]) and _close(b[1], a[1], 1e-12)


def test_keeping_says_what_to_give():
    """Both choices at once, a bad count, checkpoints or snapshots that do not fit in the
    memory given, and a memory too small for a single checkpoint: each an error naming it."""
    kept, _ = _acoustic("Told")
    state = keeping.field_bytes(kept.fields[0])
    for kw, words in (
            (dict(checkpoints=3, snapshots=2), "not both"),
            (dict(checkpoints=0), "checkpoints=0; give a positive integer"),
            (dict(snapshots=2.5), "snapshots=2.5"),
            (dict(checkpoints=10, memory=3 * state), "use fewer checkpoints"),
            (dict(snapshots=2, memory=3 * state), "a larger snapshots="),
            (dict(memory=state // 2), "not even one checkpoint")):
        with pytest.raises(InvalidArgument, match=words):
            _acoustic("Told", **kw)


@pytest.mark.gpu
@needs_gpu
def test_the_cuda_shot_checkpoints_to_the_kept_gradient():
    """On the GPU (checkpoints kept there), a float32 shot recomputed from 6 checkpoints
    gives the kept shot's data and its gradient to round-off."""
    w = _wavelet(dtype=torch.float32).cuda()
    kept, m0 = _acoustic("GpuKept", np.float32, backend="cuda")
    chk, _ = _acoustic("GpuChk", np.float32, backend="cuda", checkpoints=6)
    a, b = _gradients(kept, m0.cuda(), w), _gradients(chk, m0.cuda(), w)
    assert torch.equal(a[0], b[0]) and _close(b[1], a[1], 1e-6) and _close(b[2], a[2], 1e-6)


@pytest.mark.gpu
@needs_gpu
def test_a_3d_shot_larger_than_the_gpu_runs():
    """A 3D shot whose every kept step would need more than the GPU has free: the shot plans
    checkpoints that fit (said before it runs), runs, and gives a finite, non-zero gradient
    (its agreement with the kept gradient is the test above's, on a size where both fit)."""
    free = keeping.free_memory("cuda")[0]
    shape = (256, 256, 256)
    points = np.prod([n + 2 * 8 for n in (s + 2 * 10 for s in shape)])
    nt = int(1.2 * free / (4 * points)) + 1      # every step kept: 1.2 times the free memory
    model = Model(vp=np.full(shape, 2.0, dtype=np.float32), spacing=10.0, nbl=10,
                  space_order=8, dtype=np.float32)
    ex, ey, ez = (10.0 * (n - 1) for n in shape)
    shot = autograd.AcousticShot(model, [(0.5 * ex, 0.5 * ey, 0.1 * ez)],
                                 [(x * ex, 0.5 * ey, 0.1 * ez) for x in (0.3, 0.7)], nt,
                                 0.4 * model.critical_dt, backend="cuda", name="Huge")
    assert shot.keeping.mode == "checkpoints" and shot.keeping.nbytes < free
    m = torch.tensor(np.array(model.m.data)).cuda().requires_grad_(True)
    data = shot(m, _wavelet(nt, torch.float32).cuda())
    data.square().sum().backward()
    g = m.grad
    assert bool(torch.isfinite(g).all()) and float(g.abs().max()) > 0


def test_the_keeping_benchmark_runs_on_c(capsys):
    """benchmarks/fwi_gradient.py keeping, small, on C: a row per way, the checkpointed
    gradient within round-off of the kept one."""
    import re
    from benchmarks import fwi_gradient
    assert fwi_gradient.main(["keeping", "-d", "30", "24", "-nt", "40", "--checkpoints", "5",
                              "--snapshots", "2", "--repeat", "1", "--backend", "c",
                              "--nbl", "4"]) == 0
    out = capsys.readouterr().out
    assert "| as planned: memory |" in out and "| snapshots: one step in 2 |" in out
    off = float(re.search(r"\| checkpoints: 5 checkpoints \|[^\n]*\| ([\d.e+-]+) \|", out)[1])
    assert off <= 1e-6
