"""Pictures of a shot: the shot record and a wavefield snapshot (matplotlib is optional).

``have_matplotlib()`` says whether the pictures can be drawn; without matplotlib the functions
raise ImportError carrying ``MATPLOTLIB_HINT``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

MATPLOTLIB_HINT = ("matplotlib is not installed: install matplotlib "
                   "(pip install 'stencilgen[plot]') to get the pictures")


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError(MATPLOTLIB_HINT) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def clip_value(data, percentile: float = 98.0) -> float:
    """The ``percentile`` of |data| (a colour range that lets weak events show), never 0."""
    a = np.abs(np.asarray(data, dtype=np.float64))
    a = a[np.isfinite(a)]
    v = float(np.percentile(a, percentile)) if a.size else 0.0
    return v if v > 0 else (float(a.max()) if a.size and a.max() > 0 else 1.0)


def plot_shot_record(data, times, rec_x, path, title: str = "Shot record",
                     percentile: float = 98.0, cmap: str = "gray", arrivals=()) -> Path:
    """An image of ``data`` (nt, nrec): receivers (x, m) across, time (ms) down, the colour
    range clipped at ``percentile`` of |data|. With ``arrivals``, (label, x, t) curves of
    expected arrival times, a second panel shows the same record with the curves over it."""
    plt = _pyplot()
    data = np.asarray(data)
    times = np.asarray(times, dtype=np.float64)
    rec_x = np.asarray(rec_x, dtype=np.float64)
    vmax = clip_value(data, percentile)
    npanel = 2 if arrivals else 1
    fig, axes = plt.subplots(1, npanel, figsize=(6 * npanel + 1, 8), squeeze=False,
                             constrained_layout=True)
    extent = (rec_x[0], rec_x[-1], times[-1], times[0])
    styles = ["tab:red", "tab:cyan", "tab:orange", "tab:green", "tab:purple"]
    for k, ax in enumerate(axes[0]):
        im = ax.imshow(data, aspect="auto", cmap=cmap, vmin=-vmax, vmax=vmax, extent=extent,
                       interpolation="bilinear")
        if k == 1:
            for i, (label, x, t) in enumerate(arrivals):
                ax.plot(x, t, "--", lw=1.0, color=styles[i % len(styles)], label=label)
            ax.legend(loc="lower left", fontsize=8, framealpha=0.7)
            ax.set_xlim(rec_x[0], rec_x[-1])
            ax.set_ylim(times[-1], times[0])
            ax.set_title("expected arrivals (ray theory, wavelet peak delay included)",
                         fontsize=9)
        else:
            ax.set_title(f"{title}\n(clipped at the {percentile:g}th percentile of |u|)",
                         fontsize=10)
        ax.set_xlabel("receiver x (m)")
        ax.set_ylabel("time (ms)")
    fig.colorbar(im, ax=list(axes[0]), shrink=0.6, label="u")
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_snapshot(field, model, path, time_ms: float | None = None, src=None, rec=None,
                  percentile: float = 99.0, show_layer: bool = True,
                  label: str = "wavefield u") -> Path:
    """The velocity model and a 2D wavefield ``field`` (x across, depth down) side by side
    (or any other field of the grid: an image, named by ``label``).

    ``field`` and the model's velocity are on the padded grid (2D arrays; for 3D pass a slice
    and ``model`` still describes the x and z axes through its first and last dimension).
    The physical domain is outlined; ``src``/``rec`` (n, ndim) coordinates are marked.
    """
    plt = _pyplot()
    field = np.asarray(field, dtype=np.float64)
    grid = model.grid
    x0, z0 = grid.origin[0], grid.origin[-1]
    x1, z1 = x0 + grid.extent[0], z0 + grid.extent[-1]
    extent = (x0, x1, z1, z0)
    vp = model.vp
    if vp.ndim == 3:
        vp = vp[:, vp.shape[1] // 2, :]
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2))
    im0 = axes[0].imshow(vp.T, cmap="viridis", extent=extent, aspect="equal")
    fig.colorbar(im0, ax=axes[0], shrink=0.8, label="v (km/s)")
    axes[0].set_title("velocity model (with the absorbing layer)", fontsize=10)
    vmax = clip_value(field, percentile)
    im1 = axes[1].imshow(field.T, cmap="seismic", vmin=-vmax, vmax=vmax, extent=extent,
                         aspect="equal", interpolation="bilinear")
    bar = "u" if label == "wavefield u" else "amplitude"
    fig.colorbar(im1, ax=axes[1], shrink=0.8, label=bar)
    when = f" at t = {time_ms:.1f} ms" if time_ms is not None else ""
    axes[1].set_title(f"{label}{when}", fontsize=10)
    (lx, hx), (lz, hz) = model.domain_bounds[0], model.domain_bounds[-1]
    for ax in axes:
        if show_layer and model.nbl:
            ax.plot([lx, hx, hx, lx, lx], [lz, lz, hz, hz, lz], "k:", lw=0.8)
        if src is not None:
            s = np.atleast_2d(src)
            ax.plot(s[:, 0], s[:, -1], "r*", ms=9)
        if rec is not None:
            r = np.atleast_2d(rec)
            ax.plot(r[:, 0], r[:, -1], "v", color="orange", ms=2)
        ax.set_xlabel("x (m)")
        ax.set_ylabel("depth (m)")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
