"""SA-TTI over many GPUs on paper, calibrated on a measured scaling table.

    python benchmarks/mpi_model.py benchmarks/records/mpi_scaling_float32.md \
        benchmarks/records/mpi_scaling_float32_streams.md --gpus 8 64 512

From the rows ``benchmarks/mpi_scaling.py`` printed (one GPU, weak 2 (2,1,1) and 4 (2,2,1),
strong 4 (4,1,1), basic and overlap), per step: the one-GPU step ``T1``; in basic mode, where
the exchange is the wait, its fixed cost (two exchanges a step: before the flux nest and
before the divergence nest), the cost of each face moved over NVLink, and of packing a face
that is not one block; in overlap mode the shell slabs' cost per split dimension and the
wait left. Then, for each topology of ``--gpus`` ranks placed ``--per-node`` to a node in
rank order, the slowest rank's step: basic ``T1 + T_x``, overlap ``max(T1, T_x) + shells +
rest``, with ``T_x`` its fixed cost, its faces on the node, its packed faces and its faces
off the node over InfiniBand (``--ib-gbs``, ``--ib-us``: assumed, not measured here; faces
through one port one after the other). Weak scaling: every rank keeps the one-GPU block.
"""
from __future__ import annotations

import argparse
import ast
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen.distributed.decomposition import topology  # noqa: E402

#: bytes of one face of the benchmark's 412x423x476 block: P, M and the two flux temporaries
#: read across it, 4 points deep (space order 8), float32, rows of 476 + 2 x 8 halo points
#: pitched to 512
FACE_BYTES = 4 * 4 * 439 * 512 * 4


@dataclass
class Row:
    kind: str
    ranks: int
    topology: tuple
    mode: str
    compute: float
    wait: float


def rows(text: str) -> list[Row]:
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 12 or cells[0] not in ("weak", "strong"):
            continue
        out.append(Row(cells[0], int(cells[1]), ast.literal_eval(cells[3]), cells[4],
                       float(cells[9]), float(cells[11])))
    return out


def calibrate(table: list[Row], nt: int) -> dict:
    """Seconds per step of the model's terms, from the measured rows."""
    def pick(kind, ranks, mode):
        for r in table:
            if (r.kind, r.ranks, r.mode) == (kind, ranks, mode):
                return r
        raise SystemExit(f"the model is calibrated on the {kind} {ranks}-rank {mode} row "
                         "(one GPU, weak 2 and 4, strong 4; basic and overlap): not in the tables")
    one = pick("weak", 1, "-")
    t1 = (one.compute + one.wait) / nt
    w2, s4, w4 = (pick(k, n, "basic").wait / nt for k, n in
                  (("weak", 2), ("strong", 4), ("weak", 4)))
    face = s4 - w2                      # a middle rank of (4,1,1): a second whole face
    fixed = w2 - face                   # (2,1,1): one face
    packed = (w4 - fixed - 2 * face) / 2   # (2,2,1): two faces, both packed
    shells = [(pick("weak", 2, "overlap").compute - pick("weak", 2, "basic").compute) / nt,
              (pick("weak", 4, "overlap").compute - pick("weak", 4, "basic").compute) / nt / 2]
    rest = [pick(k, n, "overlap").wait / nt for k, n in (("weak", 2), ("weak", 4),
                                                          ("strong", 4))]
    return {"t1": t1, "fixed": fixed, "face": face, "packed": packed,
            "shell": sum(shells) / len(shells), "rest": sum(rest) / len(rest)}


def faces(topo, per_node: int):
    """For the slowest rank of ``topo`` (ranks in row-major order, ``per_node`` a node):
    (faces on its node, faces off it, faces packed, split dimensions)."""
    split, strides = [n > 1 for n in topo], _strides(topo)
    worst, found = (-1, -1, -1), (0, 0, 0)
    for coords in itertools.product(*[range(n) for n in topo]):
        rank = sum(c * s for c, s in zip(coords, strides))
        on = off = packed = 0
        for d, n in enumerate(topo):
            for step in (-1, 1):
                c = coords[d] + step
                if not 0 <= c < n:
                    continue
                other = rank + step * strides[d]
                same = other // per_node == rank // per_node
                on, off = on + same, off + (not same)
                # one block only across whole planes: the outermost dimension, nothing else cut
                packed += not (d == 0 and sum(split) == 1)
        key = (off, on + off, packed)
        if key > worst:
            worst = key
            found = (on, off, packed)
    return found + (sum(split),)


def _strides(topo):
    out, step = [], 1
    for n in reversed(topo):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def predict(m: dict, topo, per_node: int, ib_gbs: float, ib_us: float) -> dict:
    on, off, packed, dims = faces(topo, per_node)
    ib = FACE_BYTES / (ib_gbs * 1e9) + ib_us * 1e-6
    tx = m["fixed"] + on * m["face"] + packed * m["packed"] + off * ib
    basic = m["t1"] / (m["t1"] + tx)
    overlap = m["t1"] / (max(m["t1"], tx) + dims * m["shell"] + m["rest"])
    return {"on": on, "off": off, "packed": packed, "dims": dims, "tx": tx,
            "basic": basic, "overlap": overlap}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tables", nargs="+", help="tables as benchmarks/mpi_scaling.py prints "
                   "them; a row of a later one replaces an earlier one's of the same run")
    p.add_argument("--nt", type=int, default=200, help="the table's time steps")
    p.add_argument("--gpus", type=int, nargs="+", default=[8, 64, 512])
    p.add_argument("--per-node", type=int, default=8)
    p.add_argument("--ib-gbs", type=float, default=40.0,
                   help="InfiniBand GB/s a GPU (400 Gb/s less protocol; assumed)")
    p.add_argument("--ib-us", type=float, default=20.0,
                   help="InfiniBand latency a face beyond NVLink's, microseconds (assumed)")
    args = p.parse_args(argv)
    merged = {}
    for path in args.tables:
        merged.update({(r.kind, r.ranks, r.mode): r for r in rows(Path(path).read_text())})
    m = calibrate(list(merged.values()), args.nt)
    us = {k: v * 1e6 for k, v in m.items()}
    print(f"Calibrated per step: one GPU {us['t1']:.0f} us; exchange fixed {us['fixed']:.0f} us "
          f"(2 exchanges), a whole face over NVLink {us['face']:.0f} us "
          f"({FACE_BYTES / m['face'] / 1e9:.0f} GB/s for {FACE_BYTES / 1e6:.1f} MB each way), "
          f"packing a face {us['packed']:.0f} us; overlap: shells {us['shell']:.0f} us a split "
          f"dimension, wait left {us['rest']:.0f} us. Assumed: InfiniBand {args.ib_gbs:g} GB/s, "
          f"+{args.ib_us:g} us a face.")
    print("| GPUs | topology | slowest rank's faces: NVLink / InfiniBand / packed | T_x ms | "
          "weak efficiency, basic | overlap |")
    print("| ---: | --- | --- | ---: | ---: | ---: |")
    for n in args.gpus:
        topos = {(n, 1, 1), topology((412, 423, 476), n)}
        cube = round(n ** (1 / 3))
        if cube ** 3 == n:
            topos.add((cube,) * 3)
        for topo in sorted(topos, reverse=True):
            r = predict(m, topo, args.per_node, args.ib_gbs, args.ib_us)
            print(f"| {n} | {topo} | {r['on']} / {r['off']} / {r['packed']} | "
                  f"{r['tx'] * 1e3:.2f} | {r['basic']:.1%} | {r['overlap']:.1%} |")


if __name__ == "__main__":
    main()
