"""Snapshots read and written at a run-time shift, as Devito 4.8 computes them: a
TimeFunction saved on a ConditionalDimension of time read at ``t_sub - save_shift`` in an
update and written at ``t_sub - save_shift`` (``usave.subs(t_sub, t_sub - save_shift)``,
``save_shift`` an int32 Constant given at apply; Devito's test_conddim_w_shifting and
test_save_w_shifting, with values that differ from snapshot to snapshot and point to point).

``PYTHONPATH=/tmp/devito-site python tests/reference/snapshot_shift_program.py`` runs it under
Devito 4.8.23 and writes ``snapshot_shift_program.npz`` beside this file;
tests/test_devito_data.py runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def run(api) -> dict:
    """The fields each case writes, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    out = {}
    nt = 50
    grid = api.Grid(shape=(5, 6))
    time = grid.time_dim
    factor = api.Constant(name="factor", value=5, dtype=np.int32)
    t_sub = api.ConditionalDimension("t_sub", parent=time, factor=factor)
    save_shift = api.Constant(name="save_shift", dtype=np.int32)
    u = api.TimeFunction(name="u", grid=grid, time_order=0)
    usave = api.TimeFunction(name="usave", grid=grid, space_order=0, time_order=0,
                             save=nt // 5, time_dim=t_sub)
    ramp = np.arange(30, dtype=np.float32).reshape(5, 6) / 7
    for i in range(usave.save):
        usave.data[i, :] = i * (1 + ramp)
    op = api.Operator(api.Eq(u.forward, u + usave.subs(t_sub, t_sub - save_shift)),
                      name="ReadShifted", **extra)
    op.apply(time_m=15, time_M=35, save_shift=1)
    out["read at t_sub - 1"] = np.array(u.data[0])
    u.data[:] = 0
    op.apply(time_m=15, time_M=35, save_shift=2)
    out["read at t_sub - 2"] = np.array(u.data[0])

    grid = api.Grid(shape=(7, 6))
    time = grid.time_dim
    ts = api.ConditionalDimension("t_sub", parent=time, factor=4)
    u = api.TimeFunction(name="u", grid=grid)
    u.data[:] = ramp[0, 0]
    u.data[0, :3] = 0.5
    w = api.TimeFunction(name="w", grid=grid, save=2, time_dim=ts)
    shift = api.Constant(name="save_shift", dtype=np.int32)
    api.Operator([api.Eq(u.forward, u + 1.), api.Eq(w.subs(ts, ts - shift), 2 * u)],
                 name="WriteShifted", **extra).apply(time_m=10, time_M=17, save_shift=3)
    out["u"] = np.array(u.data)
    out["written at t_sub - 3"] = np.array(w.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))
