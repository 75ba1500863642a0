"""The sha1 of generated sources, one line each, to show a refactoring changed no generated
code: run it on two trees and diff the outputs.

    python benchmarks/source_hashes.py > after.txt
    git archive BASE | tar -x -C /tmp/base && python benchmarks/source_hashes.py /tmp/base > before.txt

What it hashes (nothing is compiled): every program of tests/programs.py on C, CUDA and
OpenACC; the acoustic, variable-density and SA-TTI programs of benchmarks/vs_devito.py on C
and CUDA; ``sa_tti_operator`` on CUDA in 3D (float32 and float16 storage) and 2D; the FWI
batch nests (``AcousticShot(batch=True)``'s forward and adjoint Operators, 2D, 4 shots) on C
and CUDA; and, where mpiexec and mpi4py are there, rank 0's source of each program of
tests/mpi_programs.py split over 2 ranks, basic and overlap, on C and CUDA (``--mpi``, run
by this script under mpiexec).
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path


def hashes(tree: Path) -> dict:
    """Name -> the first 12 hex digits of the sha1 of its generated source, from ``tree``."""
    sys.path[:0] = [str(tree), str(tree / "tests"), str(tree / "benchmarks")]
    os.environ["STENCILGEN_CACHE_DIR"] = tempfile.mkdtemp()
    import numpy as np
    import programs
    import stencilgen as sg
    import vs_devito
    from stencilgen.seismic import tti
    sg.configuration["log-level"] = "ERROR"
    out = {}

    def put(key, op):
        op = op[0] if isinstance(op, tuple) else op
        out[key] = hashlib.sha1(op.ccode.encode()).hexdigest()[:12]
    for name in programs.PROGRAMS:
        for backend in ("c", "cuda", "openacc"):
            put(f"{name}-{backend}",
                sg.Operator(programs.build(name, np.float32).eqs, backend=backend, name="P"))
    for program in ("acoustic", "staggered", "sa-tti"):
        for backend in ("c", "cuda"):
            eqs, _ = vs_devito.PROGRAMS[program](sg, (48, 40, 36), 8)
            put(f"{program}-{backend}", sg.Operator(eqs, backend=backend, name="B"))
    grid = sg.Grid(shape=(48, 40, 36), extent=(470., 390., 350.))
    for storage in (None, np.float16):
        medium = tti.tti_medium(grid, 8, storage=storage)
        put(f"sa-tti-operator-{np.dtype(storage or np.float32).name}",
            tti.sa_tti_operator(medium, 8, backend="cuda", storage=storage))
    flat = sg.Grid(shape=(200, 180), extent=(1990., 1790.))
    put("sa-tti-operator-2d", tti.sa_tti_operator(tti.tti_medium(flat, 8), 8, backend="cuda"))
    _batch_hashes(put)
    out.update(_mpi_hashes(tree))
    return out


def _batch_hashes(put) -> None:
    """The FWI batch nests: a 2D gradient of 4 shots as one batch, forward and adjoint."""
    import numpy as np
    from stencilgen.seismic import Model
    from stencilgen.seismic.autograd import AcousticShot
    vp = np.linspace(1.5, 3.0, 60 * 50, dtype=np.float32).reshape(60, 50)
    model = Model(vp=vp, spacing=(10.0, 10.0), nbl=10, space_order=8, dtype=np.float32)
    src = np.array([[[200.0 + 100.0 * k, 20.0]] for k in range(4)])
    rec = np.array([[[10.0 * i, 20.0] for i in range(5, 55, 5)]] * 4)
    for backend in ("c", "cuda"):
        shot = AcousticShot(model, src, rec, 40, 1.0, backend=backend, batch=True,
                            name="BatchHash")
        put(f"fwi-batch-forward-{backend}", shot.fwd)
        put(f"fwi-batch-adjoint-{backend}", shot.adj)


def _mpi_hashes(tree: Path) -> dict:
    """Rank 0's sources of tests/mpi_programs.py split over 2 ranks (empty where mpiexec or
    mpi4py is missing: the listing then says so)."""
    import shutil
    import subprocess
    near = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(near) if near.exists() else shutil.which("mpiexec")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        mpiexec = None
    if mpiexec is None:
        return {"mpi-programs": "not-hashed"}
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, __file__, "--mpi", str(tree)],
                          capture_output=True, text=True, timeout=900)
    if done.returncode:
        raise SystemExit(f"source_hashes: the MPI programs failed:\n{done.stderr[-3000:]}")
    return dict(line.split() for line in done.stdout.splitlines() if line.strip())


class _Built(Exception):
    """Stops an MPI program once its Operator is built (nothing runs)."""


def mpi_child(tree: Path) -> None:
    """Under mpiexec: each program of tests/mpi_programs.py built on 2 ranks, basic and
    overlap, C and CUDA; rank 0 prints the sha1s."""
    sys.path[:0] = [str(tree), str(tree / "tests")]
    os.environ["STENCILGEN_CACHE_DIR"] = tempfile.mkdtemp()
    from mpi4py import MPI
    import mpi_programs
    from stencilgen import Operator, configuration
    configuration["log-level"] = "ERROR"
    seen = {}

    def capture(op, *args, **kwargs):
        seen["source"] = op.ccode
        raise _Built
    Operator.apply = capture   # this process only builds
    for name in sorted(mpi_programs.PROGRAMS):
        for mode in ("basic", "overlap"):
            for backend in ("c", "cuda"):
                configuration["mpi"] = mode
                mpi_programs.BACKEND["name"] = backend
                try:
                    mpi_programs.PROGRAMS[name](MPI.COMM_WORLD)
                except _Built:
                    pass
                if MPI.COMM_WORLD.Get_rank() == 0:
                    digest = hashlib.sha1(seen.pop("source").encode()).hexdigest()[:12]
                    print(f"mpi-{name}-{mode}-{backend}", digest)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--mpi"]:
        mpi_child(Path(sys.argv[2]).resolve())
        sys.exit(0)
    tree = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    for key, digest in sorted(hashes(tree.resolve()).items()):
        print(key, digest)
