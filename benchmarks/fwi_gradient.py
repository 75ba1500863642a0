"""One gradient of a seismic misfit through PyTorch (the forward run keeping its wavefield, then
the adjoint run): how fast stencilgen's differentiable acoustic propagator
(``stencilgen.seismic.autograd.AcousticShot``) gives it, alone and against deepwave's scalar
propagator on the same GPU in the same run.

    python benchmarks/fwi_gradient.py batches -d 400 400 -nt 800 --batches 1 8 32
    python benchmarks/fwi_gradient.py deepwave -d 400 400 -nt 800 --nshots 32
    python benchmarks/fwi_gradient.py deepwave -d 200 200 200 -nt 300 --nshots 1
    python benchmarks/fwi_gradient.py keeping -d 256 256 256 -nt 2000 --checkpoints 100 400

``batches``: shots per second of a gradient for each batch size, two ways of running a batch
on one GPU: the batch as a dimension of the generated kernels (``AcousticShot(batch=True)``:
every shot in each launch), and one CUDA stream per shot (a thread per shot, each with its
own Operators built with ``--default-stream per-thread``, launching concurrently).

``deepwave``: the same gradient (grid, shots, steps, space order 8, float32, a source and a
line of receivers per shot on grid points, no absorbing layer on either side, the time step
within both codes' stability limits) with stencilgen and with deepwave's ``scalar``
(accuracy 8), seconds and GPts/s (shots x steps x points x 2 runs / s), and how far apart
the two codes' data and gradients in v are (deepwave's source term has the other sign). deepwave comes from the trimmed
build of ../shared/deepwave (its ``src`` on PYTHONPATH).

``--breakdown`` (with ``deepwave``, on a GPU): one more gradient of each code under
torch.profiler: each GPU kernel's time a step (CUPTI), the kernels' total, the wall time and
the difference, the GPU idle between and around kernels.

``keeping``: one shot's gradient with the forward wavefield kept as the shot plans it from
the free memory (every step where it fits, else checkpoints: a model larger than the GPU),
then recomputed from each ``--checkpoints`` count and kept one step in each ``--snapshots``
factor: the bytes held, the forward steps, seconds, and how far each gradient is from the
first row's where that kept every step.

Each figure is the median of ``--repeat`` timed runs after one warm-up (builds, first
allocations).
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen.errors import InvalidArgument  # noqa: E402
from stencilgen.seismic.autograd import AcousticShot, import_torch  # noqa: E402
from stencilgen.seismic.keeping import size  # noqa: E402
from stencilgen.seismic.model import Model  # noqa: E402
from stencilgen.seismic.wavelets import ricker  # noqa: E402

SPACING = 10.0   # m
#: where the runs go: the CUDA backend and CUDA tensors, or (``--backend c``) the CPU
_ON = {"backend": "cuda", "device": "cuda"}


def _empty_cache(torch):
    gc.collect()   # the last way's fields, and their GPU copies
    if _ON["device"] == "cuda":
        torch.cuda.empty_cache()


def _synchronize(torch):
    if _ON["device"] == "cuda":
        torch.cuda.synchronize()


def _model(shape, nbl: int, so: int) -> Model:
    """Velocity rising with depth (1.5 to 3.5 km/s) with a fast and a slow anomaly."""
    grid = np.meshgrid(*[np.linspace(0, 1, n) for n in shape], indexing="ij")
    depth = grid[-1]
    vp = 1.5 + 2.0 * depth
    centre = sum((g - 0.5) ** 2 for g in grid)
    off = sum((g - 0.3) ** 2 for g in grid)
    vp = vp + 0.4 * np.exp(-centre / 0.01) - 0.3 * np.exp(-off / 0.005)
    return Model(vp=vp.astype(np.float32), spacing=SPACING, nbl=nbl, space_order=so,
                 dtype=np.float32)


def _device_name(torch) -> str:
    return torch.cuda.get_device_name() if _ON["device"] == "cuda" else "CPU (C backend)"


def _survey(model: Model, nshots: int):
    """Grid-point indices (of the padded grid) of each shot's source and receivers: sources
    spread along the first axis, two points down; receivers every fourth point there."""
    padded, nbl = model.grid.shape, model.nbl
    across = padded[0] - 2 * nbl
    rest = tuple(n // 2 for n in padded[1:-1])   # 3D: the middle of the second axis
    src = [[(nbl + (k + 1) * across // (nshots + 1),) + rest + (nbl + 2,)]
           for k in range(nshots)]
    line = [(i,) + rest + (nbl + 2,) for i in range(nbl, nbl + across, 4)]
    return np.array(src), np.array([line] * nshots)


def _coordinates(model: Model, index):
    return np.asarray(model.grid.origin) + np.asarray(index) * SPACING


def _timed(run, repeat: int) -> float:
    run()   # warm-up: builds, allocations, first copies
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _wavelet(torch, nt: int, dt: float):
    return torch.tensor(ricker(0.010, np.arange(nt) * dt), device=_ON["device"],
                        dtype=torch.float32)


def _stencilgen_gradient(torch, model, src, rec, nt, dt, batch_size, weights):
    """A function running the gradient of ``len(src)`` shots in batches of ``batch_size``
    with CUDA tensors through torch's autograd: the misfit sum(data * weights), weights
    (nshots, nt, nreceivers)."""
    nshots = len(src)
    shots = []
    for first in range(0, nshots, batch_size):
        part = slice(first, first + batch_size)
        many = batch_size > 1
        coords = [_coordinates(model, src[part]), _coordinates(model, rec[part])]
        if not many:
            coords = [c[0] for c in coords]
        shots.append(AcousticShot(model, *coords, nt, dt, backend=_ON["backend"], batch=many,
                                  name=f"FWIBench{batch_size}"))
    m = torch.tensor(np.array(model.m.data), device=_ON["device"], requires_grad=True)
    wavelet = _wavelet(torch, nt, dt)
    parts = [weights[k:k + batch_size] if batch_size > 1 else weights[k]
             for k in range(0, nshots, batch_size)]

    data = []

    def run():
        m.grad = None
        for shot, w in zip(shots, parts):
            data[:] = [shot(m, wavelet)]
            torch.sum(data[0] * w).backward()
        _synchronize(torch)
    return run, m, data


def _streams(torch, model, src, rec, nt, dt):
    """A function running each shot's gradient on its own thread and CUDA stream (direct
    forward and backward calls: torch's autograd runs every CUDA backward on one thread)."""
    shots = [AcousticShot(model, _coordinates(model, s), _coordinates(model, r), nt, dt,
                          backend=_ON["backend"], name="FWIStream",
                          cflags=["-O3", "--default-stream", "per-thread"])
             for s, r in zip(src, rec)]
    m = torch.tensor(np.array(model.m.data), device=_ON["device"])
    wavelet = _wavelet(torch, nt, dt)
    weights = torch.rand((nt, rec.shape[1]), device=_ON["device"])
    errors = []

    def one(shot):
        try:
            shot.forward_device(m, wavelet, torch)
            shot.backward_device(weights, torch)
        except Exception as exc:   # reported by the caller
            errors.append(exc)

    def run():
        threads = [threading.Thread(target=one, args=(s,)) for s in shots]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _synchronize(torch)
        if errors:
            raise errors[0]
    return run


def batches(args, torch):
    model = _model(args.shape, args.nbl, args.space_order)
    dt = float(model.critical_dt)
    points = int(np.prod(model.grid.shape))
    print(f"# 2D gradient, {model.grid.shape} points (sponge of {args.nbl}), {args.nt} steps, "
          f"space order {args.space_order}, float32, {_device_name(torch)}")
    print("| shots | way | s per gradient | shots/s | GPts/s |")
    print("|---:|---|---:|---:|---:|")
    for n in args.batches:
        src, rec = _survey(model, n)
        weights = torch.rand((n, args.nt, rec.shape[1]), device=_ON["device"])
        ways = [("batch dimension", lambda: _stencilgen_gradient(torch, model, src, rec,
                                                                   args.nt, dt, n, weights)[0])]
        if n > 1 and n in args.streams and _ON["device"] == "cuda":
            ways.append(("one stream per shot", lambda: _streams(torch, model, src, rec,
                                                                 args.nt, dt)))
        for way, make in ways:
            try:
                seconds = _timed(make(), args.repeat)
            except Exception as exc:   # a way that fails is a finding too
                print(f"| {n} | {way} | failed: {type(exc).__name__}: {exc} | | |")
                continue
            rate = 2 * n * args.nt * points / seconds / 1e9
            print(f"| {n} | {way} | {seconds:.3f} | {n / seconds:.1f} | {rate:.1f} |")
            _empty_cache(torch)


def _breakdown(torch, name, run, steps):
    """Print where one call of ``run`` spends the GPU's time: per kernel (a step: ``steps``
    forward and adjoint steps in all), the kernels' sum and the wall time."""
    from torch.profiler import ProfilerActivity, profile
    if _ON["device"] != "cuda":
        print("--breakdown: kernel times need the GPU (--backend cuda)")
        return
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        run()
        wall = time.perf_counter() - start
    def device_us(e):   # torch >= 2.4 names it device_time_total
        value = getattr(e, "device_time_total", None)
        return getattr(e, "cuda_time_total", 0) if value is None else value
    rows = [(e.key, device_us(e), e.count) for e in prof.key_averages()]
    rows = sorted((r for r in rows if r[1] > 0), key=lambda r: -r[1])
    total = sum(r[1] for r in rows) / 1e6
    print(f"## {name}: kernels {total * 1e3:.2f} ms, wall {wall * 1e3:.2f} ms (profiled), "
          f"GPU idle {(wall - total) * 1e3:.2f} ms")
    print("| kernel | launches | us a launch | ms in all |")
    print("|---|---:|---:|---:|")
    for key, us, count in rows[:8]:
        print(f"| {key.split('(')[0][:60]} | {count} | {us / count:.1f} | {us / 1e3:.2f} |")
    print(f"({steps} steps)")


def versus_deepwave(args, torch):
    import warnings

    import deepwave
    from deepwave import scalar
    from deepwave.discretisation import cfl_condition_n
    warnings.filterwarnings("ignore", category=deepwave.ZeroWidthFaceWarning)
    model = _model(args.shape, 0, 8)   # no sponge: the same scheme as deepwave's
    src, rec = _survey(model, args.nshots)
    v = np.asarray(model.vp, dtype=np.float32)   # km/s
    points = int(np.prod(model.grid.shape))
    # deepwave halves a step it finds unstable: both run at its limit where it is lower
    inner, _ = cfl_condition_n([SPACING] * len(args.shape), float(model.critical_dt) / 1000,
                               float(v.max()) * 1000)
    dt = min(float(model.critical_dt), inner * 1000)   # ms
    _, ratio = cfl_condition_n([SPACING] * len(args.shape), dt / 1000, float(v.max()) * 1000)
    print(f"# gradient, {model.grid.shape} points, {args.nshots} shot(s) at once, {args.nt} "
          f"steps of {dt:.4f} ms, space order 8, float32, {_device_name(torch)}; "
          f"deepwave {deepwave.__version__} scalar (accuracy 8, no PML, {ratio} inner "
          f"step(s) a step)")
    weights = torch.rand((args.nshots, args.nt, rec.shape[1]), device=_ON["device"])
    run, m, data = _stencilgen_gradient(torch, model, src, rec, args.nt, dt, args.nshots,
                                        weights)
    ours = _timed(run, args.repeat)
    ours_grad, ours_data = m.grad.detach().clone(), data[-1].detach()
    if args.breakdown:
        _breakdown(torch, "stencilgen", run, 2 * args.nt)
    del run, m, data
    _empty_cache(torch)

    vel = torch.tensor(v * 1000, device=_ON["device"], requires_grad=True)   # m/s
    amplitudes = _wavelet(torch, args.nt, dt).repeat(args.nshots, 1, 1)
    src_t = torch.tensor(src, device=_ON["device"], dtype=torch.long)
    rec_t = torch.tensor(rec, device=_ON["device"], dtype=torch.long)
    theirs_data = []

    def theirs_run():
        vel.grad = None
        out = scalar(vel, SPACING, dt / 1000, source_amplitudes=amplitudes,
                     source_locations=src_t, receiver_locations=rec_t, accuracy=8,
                     pml_width=0, pml_freq=10.0)
        # deepwave's source term has the other sign: the same misfit is -sum(data * w)
        torch.sum(-out[-1] * weights.transpose(1, 2)).backward()
        _synchronize(torch)
        theirs_data[:] = [-out[-1].detach().transpose(1, 2)]
    theirs = _timed(theirs_run, args.repeat)
    if args.breakdown:
        _breakdown(torch, "deepwave", theirs_run, 2 * args.nt)
    # m = 1/v^2 (v in km/s; deepwave's in m/s): dJ/dv = -2 dJ/dm / v^3 / 1000
    in_v = ours_grad * (-2.0 / torch.tensor(v, device=_ON["device"]) ** 3) / 1000

    def apart(a, b):
        return float((a.reshape(b.shape) - b).abs().max() / b.abs().max())
    work = 2 * args.nshots * args.nt * points / 1e9
    print("| code | s per gradient | GPts/s |")
    print("|---|---:|---:|")
    print(f"| stencilgen AcousticShot | {ours:.3f} | {work / ours:.1f} |")
    print(f"| deepwave scalar | {theirs:.3f} | {work / theirs:.1f} |")
    print(f"stencilgen / deepwave: {theirs / ours:.2f}x; max |difference| / max |value|: "
          f"data {apart(ours_data, theirs_data[0]):.1e}, gradient in v "
          f"{apart(in_v, vel.grad):.1e}")


def keeping(args, torch):
    model = _model(args.shape, args.nbl, args.space_order)
    dt = float(model.critical_dt)
    src, rec = _survey(model, 1)
    coords = (_coordinates(model, src[0]), _coordinates(model, rec[0]))
    points = int(np.prod(model.grid.shape))
    print(f"# one shot's gradient, {model.grid.shape} points (sponge of {args.nbl}), {args.nt} "
          f"steps, space order {args.space_order}, float32, {_device_name(torch)}")
    print("| kept | held | forward steps | s per gradient | GPts/s | gradient off |")
    print("|---|---:|---:|---:|---:|---:|")
    wavelet = _wavelet(torch, args.nt, dt)
    # a residual in the wavelet's band (white noise would alias any snapshot interval): the
    # wavelet delayed by a random lag at each receiver
    lags = np.random.default_rng(0).integers(0, args.nt // 2, rec.shape[1])
    weights = torch.stack([torch.roll(wavelet, int(k)) for k in lags], dim=1)
    ways = [("as planned", {})] + [("checkpoints", {"checkpoints": c}) for c in args.checkpoints]
    ways += [("snapshots", {"snapshots": k}) for k in args.snapshots]
    reference = None
    for way, kw in ways:
        try:
            shot = AcousticShot(model, *coords, args.nt, dt, backend=_ON["backend"],
                                name="FWIKeep", **kw)
        except InvalidArgument as exc:   # a choice that does not fit is a finding too
            print(f"| {way} {kw} | refused: {exc} | | | | |")
            continue
        m = torch.tensor(np.array(model.m.data), device=_ON["device"], requires_grad=True)

        def run():
            m.grad = None
            torch.sum(shot(m, wavelet) * weights).backward()
            _synchronize(torch)
        seconds = _timed(run, args.repeat)
        grad, plan = m.grad.detach().clone(), shot.keeping
        if reference is None and plan.mode == "memory":
            reference = grad
        off = "" if reference is None or grad is reference else \
            f"{float((grad - reference).abs().max() / reference.abs().max()):.1e}"
        label = plan.mode if plan.mode == "memory" else \
            f"{plan.checkpoints} checkpoints" if plan.mode == "checkpoints" else \
            f"one step in {plan.factor}"
        work = (plan.forward_steps + args.nt) * points / 1e9   # forward and adjoint steps
        print(f"| {way}: {label} | {size(plan.nbytes)} | {plan.forward_steps} | "
              f"{seconds:.3f} | {work / seconds:.1f} | {off} |")
        del shot, m, run
        _empty_cache(torch)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["batches", "deepwave", "keeping"])
    parser.add_argument("-d", "--shape", type=int, nargs="+", default=[400, 400])
    parser.add_argument("-nt", type=int, default=800)
    parser.add_argument("-so", "--space-order", type=int, default=8)
    parser.add_argument("--nbl", type=int, default=20)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--streams", type=int, nargs="*", default=[8, 32],
                        help="batch sizes also run as one CUDA stream per shot")
    parser.add_argument("--nshots", type=int, default=32)
    parser.add_argument("--checkpoints", type=int, nargs="*", default=[],
                        help="keeping: checkpoint counts to time")
    parser.add_argument("--snapshots", type=int, nargs="*", default=[],
                        help="keeping: snapshot factors to time")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--breakdown", action="store_true",
                        help="deepwave: each code's kernels a step, under torch.profiler")
    parser.add_argument("--backend", choices=["cuda", "c"], default="cuda",
                        help="c: the C backend with CPU tensors (a check of the script)")
    args = parser.parse_args(argv)
    torch = import_torch()
    _ON.update(backend=args.backend, device="cuda" if args.backend == "cuda" else "cpu")
    if args.backend == "cuda" and not torch.cuda.is_available():
        print("fwi_gradient: --backend cuda needs a GPU (PyTorch sees none)")
        return 2
    {"batches": batches, "deepwave": versus_deepwave, "keeping": keeping}[args.what](args, torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
