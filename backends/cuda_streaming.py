"""CUDA kernels streamed along the outermost dimension (2.5D blocking, Micikevicius 2009).

A block covers a TZ x TY tile of the two inner dimensions and walks a chunk of planes along
the outermost one. Each array the kernel reads in a star (every access offset along one axis
at most) is loaded once per plane: along the walk it moves through a queue of registers, across
the tile it is shared through shared memory with its halo. A point then reads one new value of
it from memory instead of one per stencil coefficient.
"""
from __future__ import annotations

from dataclasses import dataclass

import cgen as c
import sympy

from .cprinter import CPrinter

TZ, TY = 32, 8          # threads of a block along the innermost and the middle dimension
CHUNKS = (16, 64)       # planes a block walks, the choices the autotuner times
MIN_POINTS = 5          # an array read at fewer offsets is read from memory as it is


@dataclass(frozen=True)
class Source:
    """An array (one time slot of it) read in a star: its queue and tile names and radii."""

    pointer: str        # the kernel parameter it is read through
    tag: str            # the stem of its queue and tile names
    radius: tuple       # largest offset along (x, y, z)
    strides: tuple      # C text of the strides of (x, y), the innermost is 1

    def queue(self, i) -> str:
        return f"sg_q_{self.tag}_{i}"

    @property
    def tile(self) -> str:
        return f"sg_t_{self.tag}"


def _offsets(acc, dims, sliced):
    """The access's offsets from the point (x, y, z), or None if it is not a plain shift."""
    idx = acc.indices[1:] if sliced else acc.indices
    if len(idx) != len(dims):
        return None
    offs = [i - d for i, d in zip(idx, dims)]
    return tuple(int(o) for o in offs) if all(o.is_Integer for o in offs) else None


def plan(k, prog, views, rereads, strides) -> dict:
    """The star-read arrays of a 3D kernel worth streaming: key (array, slot or None) ->
    Source. Empty when the kernel cannot be streamed (it reads what it writes, or runs
    sparse or in order)."""
    if k.is_sparse or k.sequential or len(k.dims) != 3 or rereads:
        return {}
    dims = tuple(k.dims)
    written = {(a.lhs.base.name, a.lhs.indices[0] if prog.array(a.lhs.base.name).time_size
                is not None else None) for a in k.body if isinstance(a.lhs, sympy.Indexed)}
    found, bad = {}, set()
    for a in k.body:
        for acc in sympy.preorder_traversal(a.rhs):
            if not isinstance(acc, sympy.Indexed):
                continue
            name = acc.base.name
            arr = prog.array(name)
            sliced = arr.time_size is not None
            key = (name, acc.indices[0] if sliced else None)
            offs = _offsets(acc, dims, sliced)
            if key in written or arr.sparse or (sliced and name not in views) or offs is None \
                    or sum(o != 0 for o in offs) > 1:
                bad.add(key)
                continue
            found.setdefault(key, set()).add(offs)
    out = {}
    for key, offs in found.items():
        if key in bad or len(offs) < MIN_POINTS:
            continue
        name, slot = key
        radius = tuple(max(abs(o[i]) for o in offs) for i in range(3))
        pointer = f"sg_{name}_{slot}" if slot is not None else name
        tag = f"{name}_{slot}" if slot is not None else name
        row = strides[name][1:] if slot is not None else strides[name]
        out[key] = Source(pointer, tag, radius, tuple(row[:2]))
    return out


class StreamPrinter(CPrinter):
    """Reads the streamed arrays from their queue (offsets along x) or tile (along y, z)."""

    def __init__(self, base: CPrinter, sources: dict, dims, dtype):
        super().__init__(dtype, base.strides)
        self.base, self.sources, self.dims = base, sources, dims

    def _print_Indexed(self, expr):
        arr = expr.base.name
        slot = expr.indices[0] if (arr, expr.indices[0]) in self.sources else None
        src = self.sources.get((arr, slot))
        if src is None:
            return self.base._print_Indexed(expr)
        a, b, cz = _offsets(expr, self.dims, slot is not None)
        if b == 0 and cz == 0:
            return src.queue(src.radius[0] + a)
        return f"{src.tile}[threadIdx.y + {src.radius[1] + b}][threadIdx.x + {src.radius[2] + cz}]"


def _at(src, x, y, z) -> str:
    return f"{src.pointer}[({x})*{src.strides[0]} + ({y})*{src.strides[1]} + {z}]"


def _guarded(src, x, y, z, cond) -> str:
    return f"({cond}) ? {_at(src, x, y, z)} : 0"


def walk(sources, bounds, body, real) -> c.Block:
    """The streamed kernel's body: the tile's point, the queues primed, then the walk."""
    (x0, x1), (y0, y1), (z0, z1) = bounds
    lines = [
        c.Initializer(c.Value("const sg_int", "y"),
                      f"{y0} + sg_base1 + (sg_int)blockIdx.y*{TY} + (sg_int)threadIdx.y"),
        c.Initializer(c.Value("const sg_int", "z"),
                      f"{z0} + sg_base0 + (sg_int)blockIdx.x*{TZ} + (sg_int)threadIdx.x"),
        c.Initializer(c.Value("const sg_int", "sg_x0"),
                      f"{x0} + sg_base2 + (sg_int)blockIdx.z*sg_chunk"),
        c.Initializer(c.Value("const sg_int", "sg_x1"),
                      f"sg_x0 + sg_chunk - 1 < {x1} ? sg_x0 + sg_chunk - 1 : {x1}"),
        c.Initializer(c.Value("const bool", "sg_in"), f"y <= {y1} && z <= {z1}"),
    ]
    loads, steps = [], []
    for s in sources.values():
        rx, ry, rz = s.radius
        if ry or rz:
            lines.append(c.Value("__shared__ " + real, f"{s.tile}[{TY + 2 * ry}][{TZ + 2 * rz}]"))
        # the queue holds x-rx .. x+rx; before the walk, the first 2 rx of them
        for i in range(2 * rx + 1):
            shift = i - 1 - rx
            at = f"sg_x0 - {-shift}" if shift < 0 else f"sg_x0 + {shift}"
            init = _guarded(s, at, "y", "z", "sg_in") if i else "0"
            lines.append(c.Initializer(c.Value(real, s.queue(i)), init))
        steps += [c.Assign(s.queue(i), s.queue(i + 1)) for i in range(2 * rx)]
        steps.append(c.Assign(s.queue(2 * rx), _guarded(s, f"x + {rx}", "y", "z", "sg_in")))
        if ry or rz:
            loads += _tile_loads(s, (y1, z1))
    walk_body = steps
    if loads:
        walk_body += [c.Statement("__syncthreads()")] + loads + [c.Statement("__syncthreads()")]
    walk_body.append(c.If("sg_in", c.Block(body)))
    lines.append(c.For("sg_int x = sg_x0", "x <= sg_x1", "++x", c.Block(walk_body)))
    return c.Block(lines)


def _tile_loads(s, upper):
    """This thread's share of plane x of the tile: its own point, and the halo rows and columns
    the threads at the edge load (what lies past the domain is read from the array's halo)."""
    rx, ry, rz = s.radius
    y1, z1 = upper
    ty, tz = f"threadIdx.y + {ry}", f"threadIdx.x + {rz}"
    inside = f"y <= {y1} + {ry} && z <= {z1} + {rz}"
    out = [c.Assign(f"{s.tile}[{ty}][{tz}]",
                    f"sg_in ? {s.queue(rx)} : ({_guarded(s, 'x', 'y', 'z', inside)})")]
    if ry:
        out.append(c.If(f"threadIdx.y < {ry}", c.Block([
            c.Assign(f"{s.tile}[threadIdx.y][{tz}]",
                     _guarded(s, "x", f"y - {ry}", "z", f"z <= {z1} + {rz}")),
            c.Assign(f"{s.tile}[threadIdx.y + {TY + ry}][{tz}]",
                     _guarded(s, "x", f"y + {TY}", "z", f"y + {TY} <= {y1} + {ry} && "
                              f"z <= {z1} + {rz}"))])))
    if rz:
        out.append(c.If(f"threadIdx.x < {rz}", c.Block([
            c.Assign(f"{s.tile}[{ty}][threadIdx.x]",
                     _guarded(s, "x", "y", f"z - {rz}", f"y <= {y1} + {ry}")),
            c.Assign(f"{s.tile}[{ty}][threadIdx.x + {TZ + rz}]",
                     _guarded(s, "x", "y", f"z + {TZ}", f"y <= {y1} + {ry} && "
                              f"z + {TZ} <= {z1} + {rz}"))])))
    return out
