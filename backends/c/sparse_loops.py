"""The C backend's sparse nests: each point located in its cell, the corners of its
interpolation or injection visited, sums into the grid made atomic where threads share a
node. A part of ``CBackend``, mixed into it."""
from __future__ import annotations

import cgen as c
import numpy as np
import sympy

from ..common import split
from ..common.cprinter import ctype, is_complex, part_dtype


class SparseLoops:
    """``CBackend``'s printing of a sparse nest."""

    def sparse_pragmas(self, kernel):
        if self.in_tile:
            return []
        npoint = self.program.array(kernel.sparse).layout.npoint
        return [c.Pragma(f"omp parallel for schedule(static) "
                         f"if({npoint} >= {self.SPARSE_PARALLEL_FROM})")]

    def corner_pragmas(self):
        """Pragmas before each loop over a point's cell corners."""
        return []

    def atomic_add(self, target, value, fmt=None, dtype=None):
        """``target += value`` safe against other points adding to the same node (in a 16-bit
        format ``fmt``: the sum rounded once; bfloat16, held as its bits, in a critical
        section; a complex ``dtype``: each part on its own, as atomics take real values)."""
        if dtype is not None and is_complex(dtype):
            return self.complex_atomic_add(target, value, dtype)
        if fmt == "bfloat16":
            _, load, store = self.printer.FORMATS[fmt]
            total = store.format(f"{load.format(target)} + {value}")
            return [c.Pragma(f"omp critical (sg_{fmt})"), c.Statement(f"{target} = {total}")]
        return [c.Pragma("omp atomic update"), c.Statement(f"{target} += {value}")]

    def complex_atomic_add(self, target, value, dtype):
        """The parts of complex ``value`` added, each atomically, to the parts of ``target``."""
        part = part_dtype(dtype)
        suffix = "f" if part == np.float32 else ""
        out = [c.Initializer(c.Value(f"const {ctype(dtype)}", "sg_v"), value)]
        for i, fn in enumerate(("creal", "cimag")):
            out += self.atomic_add(f"(({ctype(part)} *)&{target})[{i}]", f"{fn}{suffix}(sg_v)",
                                   None, part)
        return [c.Block(out)]

    def locate(self, k):
        """Per dimension: the point's position in cells, its cell and the fraction inside it
        (a precomputed sparse function: its first node, given)."""
        loc, arr = self.program.sparse_locals, self.program.array(k.sparse)
        lay = arr.layout
        real, n, out = ctype(self.program.dtype), len(k.dims), []
        if arr.support:
            width = arr.coords_width(n)
            return [c.Initializer(c.Value(f"const {self.index}", loc.cell[i]),
                                  f"({self.index}){lay.coords}[{k.point}*{width} + "
                                  f"{i * (1 + arr.support)}]") for i in range(n)]
        for i, sym in enumerate(k.dims):
            d, pos, cell = self.dims[sym], loc.position[i], loc.cell[i]
            if d.exact:   # the copy of a batch the point belongs to: its nearest node
                out.append(c.Initializer(
                    c.Value(f"const {self.index}", cell),
                    f"({self.index})floor(({lay.coords}[{k.point}*{n} + {i}] - {d.origin})/"
                    f"{d.spacing} + 0.5)"))
                continue
            # a staggered target's values sit half a cell ahead of the nodes; the position in
            # the arithmetic's type, the half cell taken off before dividing, as Devito's (in
            # float32 a point on a node then lies on it: 0.5/0.1 rounds to 5, not below)
            ahead = f" - ({real}){k.stagger[i]!r}*{d.spacing}" if k.stagger and k.stagger[i] \
                else ""
            out += [
                c.Initializer(c.Value(f"const {real}", pos),
                              f"(({real}){lay.coords}[{k.point}*{n} + {i}] - {d.origin}{ahead})/"
                              f"{d.spacing}"),
                c.Initializer(c.Value(f"const {self.index}", cell),
                              f"({self.index})floor({pos})"),
                c.Initializer(c.Value(f"const {real}", loc.fraction[i]), f"({real})({pos} - {cell})"),
            ]
        return out

    def corners(self, k, action):
        """The loops over the 2**ndim corners of the point's cell, ``action`` at each inside
        (a precomputed sparse function: its r**ndim nodes from the first, each weight the
        product of the given ones, nodes up to r/2 into the halo taken, as Devito's)."""
        loc, real = self.program.sparse_locals, ctype(self.program.dtype)
        arr = self.program.array(k.sparse)
        dims = [self.dims[s] for s in k.dims]
        body = [c.Initializer(c.Value(f"const {self.index}", d.name), f"{cell} + {corner}")
                for d, cell, corner in zip(dims, loc.cell, loc.corner)]
        last, reach = 1, 0
        if arr.support:
            width, step, last, reach = (arr.coords_width(len(dims)), 1 + arr.support,
                                        arr.support - 1, arr.support // 2)
            weights = [f"{arr.layout.coords}[{k.point}*{width} + {i * step + 1} + {corner}]"
                       for i, corner in enumerate(loc.corner)]
            body.append(c.Initializer(c.Value(f"const {real}", loc.weight),
                                      "*".join(f"({real}){w}" for w in weights)))
        else:
            body.append(c.Initializer(c.Value(f"const {real}", loc.weight), "*".join(
                f"({corner} ? {f} : 1 - {f})" for corner, f, d in
                zip(loc.corner, loc.fraction, dims) if not d.exact) or f"({real})1"))
        # nodes as far beyond the domain (or a subdomain of the functions) as the weights
        # reach, into the halos, as Devito's: one for the multilinear weights (a staggered
        # field's point within half a cell of the edge), r/2 for precomputed ones; no
        # further than the halos of the arrays read or written there
        halos = [self.program.array(n).halo for n in self._grid_arrays(k)]
        near = [min([max(reach, 1)] + [h[i] for h in halos]) for i in range(len(dims))]
        cut = k.region or ((0, 0),) * len(dims)
        inside = " && ".join(f"{d.name} >= {d.lower}{left - w:+d} && "
                             f"{d.name} <= {d.upper}{w - right:+d}"
                             if w or left or right else
                             f"{d.name} >= {d.lower} && {d.name} <= {d.upper}"
                             for d, (left, right), w in zip(dims, cut, near))
        if self.program.split:
            # a rank adds or gathers only at the points of its block, and the one at the
            # domain's edge at those beyond it
            for d in dims:
                lo, hi = split.owned(self.program, d.symbol)
                inside += (f" && ({d.name} >= {lo} || ({d.name} < {d.lower} && {lo} <= "
                           f"{d.lower})) && ({d.name} <= {hi} || ({d.name} > {d.upper} && "
                           f"{hi} >= {d.upper}))")
        if self.tile_nodes is not None:   # a time tile's share of the nodes
            inside += " && " + self.tile_nodes([d.name for d in dims])
        inner = c.Block(body + [c.If(inside, c.Block(action))])
        for corner, d in reversed(list(zip(loc.corner, dims))):
            if d.exact and not arr.support:   # one node along a batch's copies
                inner = c.Block([c.Initializer(c.Value("const int", corner), "0"), inner])
                continue
            inner = c.Module(self.corner_pragmas() + [
                c.For(f"int {corner} = 0", f"{corner} <= {last}", f"{corner} += 1", inner)])
        return inner

    def _grid_arrays(self, k) -> list:
        """The grid arrays sparse kernel ``k`` reads or writes at a point's nodes."""
        names = {a.base.name for a in sympy.sympify(k.expr).atoms(sympy.Indexed)}
        if k.kind == "inject":
            names.add(k.target.base.name)
        return sorted(n for n in names if not self.program.array(n).sparse)

    def sparse_body(self, k):
        """The statements for one point: locate it, visit its corners, add or gather."""
        loc = self.program.sparse_locals
        value, body = self.expr(k.expr), self.locate(k)
        if k.kind == "inject":
            name = k.target.base.name
            action = self.atomic_add(self.printer.target(k.target), f"{loc.weight}*({value})",
                                     self.stored.get(name), self.program.array(name).dtype)
        else:
            # a complex sample sums complex values (a real one takes no complex ones)
            sample = self.program.array(k.sparse).dtype
            body.append(c.Initializer(c.Value(ctype(sample if is_complex(sample) else
                                                    self.program.dtype), loc.total), "0"))
            action = [c.Statement(f"{loc.total} += {loc.weight}*({value})")]
        body.append(self.corners(k, action))
        if k.kind == "interpolate":
            target = self.printer.target(k.target)
            name = k.target.base.name
            if self.tile_nodes is not None:   # a time tile's part of the sum (row zeroed)
                body += self.atomic_add(target, loc.total)
                return body
            total = f"{self.printer.widened(name, target)} + {loc.total}" if k.increment \
                else loc.total
            body.append(c.Assign(target, self.printer.rounded(name, total)))
        return body

    def sparse_loop(self, k):
        """One iteration per point of the sparse function."""
        p, npoint = k.point.name, self.program.array(k.sparse).layout.npoint
        loop = c.For(f"{self.index} {p} = 0", f"{p} < {npoint}", f"{p} += 1",
                     c.Block(self.sparse_body(k)))
        return c.Module(self.sparse_pragmas(k) + [loop])
