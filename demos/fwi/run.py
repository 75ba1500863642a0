#!/usr/bin/env python
"""Full-waveform inversion from PyTorch with the acoustic propagator: the squared slowness
is a torch tensor, the misfit a loss, the optimiser torch.optim.Adam, and
``stencilgen.seismic.autograd.AcousticShot`` the differentiable propagator in the middle.

    python demos/fwi/run.py -d 81 41 --nshots 6 --batch 3 --iterations 20

The true model: velocity rising with depth (1.5 to 2.3 km/s) with a fast and a slow
anomaly. The start: the same gradient without the anomalies. Shots spread along x near the
surface, receivers along the surface. Each iteration takes the next batch of shots (one
``AcousticShot(batch=True)``: its shots share each kernel launch), their misfit
1/2 |F(m) - d|^2 summed over them, and steps Adam on m (updates kept off the absorbing layer and
the rows of the sources, m kept between the slowest and fastest velocities'). Prints per
iteration the misfit, the model's relative L2 error against the true one (the physical
domain) and the iteration's time, then the start's and the recovered model's errors, and
writes ``fwi_models.png`` (true, start and recovered side by side).
Needs PyTorch (``pip install 'stencilgen[torch]'``); runs on CPU tensors.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# the checkout this script lives in: stencilgen (installed or not) and demos/cli.py
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from stencilgen.seismic.model import Model  # noqa: E402
from stencilgen.seismic.wavelets import ricker  # noqa: E402
from demos import cli  # noqa: E402

SPACING, NBL, F0 = 10.0, 20, 0.012   # m, absorbing points per side, kHz
PICTURE = "fwi_models.png"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="demos/fwi/run.py",
        description="Full-waveform inversion with torch.optim and the acoustic propagator; "
                    f"writes {PICTURE}.")
    cli.add_common(p, (81, 41), "number of time steps; default: twice the depth and once "
                   "the width crossed at the slowest velocity")
    p.add_argument("--nshots", type=cli.positive, default=6, help="number of shots; default 6")
    p.add_argument("--batch", type=cli.positive, default=3,
                   help="shots per iteration (taken in turn); default 3")
    p.add_argument("--iterations", type=cli.positive, default=20,
                   help="optimiser steps; default 20")
    p.add_argument("--lr", type=float, default=0.01,
                   help="Adam's step, as a fraction of the mean squared slowness; default 0.01")
    p.add_argument("--outdir", type=Path, default=Path("."),
                   help=f"where to write {PICTURE}; default the current directory")
    p.add_argument("--no-picture", action="store_true", help=f"do not write {PICTURE}")
    return p


def models(shape):
    """(true, start) velocities on the physical grid, km/s."""
    nx, nz = shape
    z = np.linspace(0.0, 1.0, nz)[None, :]
    start = np.broadcast_to(1.5 + 0.8 * z, shape).copy()
    xx, zz = np.meshgrid(np.arange(nx), np.arange(nz), indexing="ij")
    true = start.copy()
    for cx, cz, dv in ((0.35, 0.55, 0.25), (0.68, 0.6, -0.2)):
        r2 = ((xx - cx * (nx - 1)) ** 2 + (zz - cz * (nz - 1)) ** 2) / (0.08 * nx) ** 2
        true += dv * np.exp(-r2)
    return true, start


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from stencilgen.seismic.autograd import AcousticShot, import_torch
    try:
        torch = import_torch()
    except ImportError:
        print("demos/fwi/run.py needs PyTorch: pip install 'stencilgen[torch]'",
              file=sys.stderr)
        return 2
    if len(args.shape) != 2:
        print("demos/fwi/run.py: give a 2D shape, -d NX NZ", file=sys.stderr)
        return 2
    shape = tuple(args.shape)
    dtype = cli.DTYPES[args.dtype]
    true_v, start_v = models(shape)
    model = Model(vp=start_v, spacing=SPACING, nbl=NBL, space_order=args.space_order,
                  dtype=dtype)
    dt = model.critical_dt
    width, depth = ((n - 1) * SPACING for n in shape)
    nt = args.nt or int((2 * depth + width) / 1.5 / dt)
    t = np.arange(nt) * dt
    wavelet = torch.tensor(ricker(F0, t), dtype=torch.float64)
    sources = [(x, 2 * SPACING) for x in np.linspace(0.1, 0.9, args.nshots) * width]
    receivers = [(x, 2 * SPACING) for x in np.linspace(0.0, 1.0, shape[0]) * width]
    # fixed batches of shots, each batch stepped together in the same kernel launches
    batches = [list(range(k, min(k + args.batch, len(sources))))
               for k in range(0, len(sources), args.batch)]
    shots = [AcousticShot(model, [[sources[i]] for i in group], [receivers] * len(group), nt,
                          dt, backend=args.backend, name="FWI", batch=True)
             for group in batches]

    def padded(v):
        return torch.tensor(np.pad(1.0 / v ** 2, NBL, mode="edge"), dtype=torch.float64)
    m_true, m_start = padded(true_v), padded(start_v)
    t0 = time.perf_counter()
    with torch.no_grad():
        observed = [shot(m_true, wavelet) for shot in shots]
    print(f"FWI: {shape[0]}x{shape[1]} points (+{NBL} absorbing each side), {nt} steps of "
          f"{dt:.3f} ms, {len(sources)} shots, batches of {args.batch}, {args.iterations} "
          f"iterations; observed data in {time.perf_counter() - t0:.1f} s")
    # updates inside the physical domain, below the sources' rows
    mask = torch.zeros_like(m_start)
    mask[NBL:-NBL, NBL + 4:-NBL] = 1.0
    m = m_start.clone().requires_grad_(True)
    m.register_hook(lambda g: g * mask)
    opt = torch.optim.Adam([m], lr=args.lr * float(m_start.mean()))
    low, high = 1.0 / float(true_v.max()) ** 2, 1.0 / float(true_v.min()) ** 2
    inner = (slice(NBL, -NBL), slice(NBL, -NBL))

    def error(mm):
        """The model's relative L2 error against the true one, in the physical domain."""
        return float(torch.linalg.norm(mm[inner] - m_true[inner]) /
                     torch.linalg.norm(m_true[inner]))
    for it in range(args.iterations):
        tick = time.perf_counter()
        k = it % len(batches)
        opt.zero_grad()
        loss = 0.5 * torch.sum((shots[k](m, wavelet) - observed[k]) ** 2)
        loss.backward()
        opt.step()
        with torch.no_grad():
            m.clamp_(low, high)
        print(f"  iteration {it + 1:3d}  loss {float(loss.detach()):.6e}  model error "
              f"{error(m.detach()):.4e}  {time.perf_counter() - tick:.2f} s  "
              f"(shots {', '.join(str(i) for i in batches[k])})")
    before, after = error(m_start), error(m.detach())
    print(f"relative L2 error of m against the true model: start {before:.4e}, "
          f"recovered {after:.4e} ({100 * (1 - after / before):.1f} % lower) in "
          f"{time.perf_counter() - t0:.1f} s")
    if not args.no_picture:
        write_picture(args.outdir / PICTURE, true_v, start_v,
                      1.0 / np.sqrt(m.detach().numpy()[inner]))
    return 0 if after < before else 1


def write_picture(path: Path, true_v, start_v, recovered_v) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), constrained_layout=True)
    lo, hi = float(true_v.min()), float(true_v.max())
    for ax, v, title in zip(axes, (true_v, start_v, recovered_v),
                            ("true", "start", "recovered")):
        im = ax.imshow(v.T, vmin=lo, vmax=hi, cmap="viridis", aspect="equal")
        ax.set_title(f"{title} velocity (km/s)")
        ax.set_xlabel("x (points)")
    axes[0].set_ylabel("z (points)")
    fig.colorbar(im, ax=axes, shrink=0.8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
