"""The sha1 of generated sources, one line each, to show a refactoring changed no generated
code: run it on two trees and diff the outputs.

    python benchmarks/source_hashes.py > after.txt
    git archive BASE | tar -x -C /tmp/base && python benchmarks/source_hashes.py /tmp/base > before.txt

What it hashes (nothing is compiled): every program of tests/programs.py on C, CUDA and
OpenACC; the acoustic, variable-density and SA-TTI programs of benchmarks/vs_devito.py on C
and CUDA; ``sa_tti_operator`` on CUDA in 3D (float32 and float16 storage) and 2D.
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
    return out


if __name__ == "__main__":
    tree = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    for key, digest in sorted(hashes(tree.resolve()).items()):
        print(key, digest)
