"""The staged inputs of a fused CUDA nest (``Fusion.staged``): their shared rings of planes, the
band of points around the tile that no thread owns (each thread's share loaded in turns over
the band alone), the thread's own column (its next value loaded an iteration ahead) and, for
queued inputs, the column's register queue (``column_queues``). A part of ``FusedKernel``
(``fused_nests``), which it is mixed into: it reads the kernel's fusion, context and point
tests."""
from __future__ import annotations

import sympy

from . import column_queues
from .kernel_text import indent as _indent
from .ring_names import column as _column, ring as _ring


class StagedRings:
    """``FusedKernel``'s printing of the staged inputs' rings, columns and band."""

    def _owned(self, r: str, c: str | None) -> str:
        """The test that tile-relative point (r, c) is some thread's own point."""
        rows = f"{r} >= {-self.l0} && {r} < sg_T0 + {self.h0}"
        if self.m == 1:
            return rows
        out = f"({rows} && {c} >= 0 && {c} < sg_T1)"
        if self.l1 + self.h1:
            out += f" || ({r} >= 0 && {r} < sg_T0 && {c} >= {-self.l1} && " \
                   f"{c} < sg_T1 + {self.h1})"
        return out

    def _reach_test(self, s, names) -> str:
        """The test that inner point ``names`` is one the staged reads reach (their values
        elsewhere are never used and may lie beyond the array: zero there)."""
        out = []
        for j, v in enumerate(names):
            lo, hi = self._bound(j + 1, True)
            out += [f"{v} >= {lo} + {s.reads[j][0]}", f"{v} <= {hi} + {s.reads[j][1]}"]
        return " && ".join(out)

    def _elem(self, name: str) -> str:
        """The element type array ``name`` is stored in (16 bits, or the arithmetic's)."""
        return self.base.element_type(name, self.b.program.array(name).dtype)

    def _zero(self, name: str) -> str:
        """Zero as array ``name`` stores it."""
        return self.base.rounded(name, f"({self.real})0") if self.base.stored.get(name) \
            else f"({self.real})0"

    # the thread's own column of staged ``s``, its next plane's value(s) loaded an iteration
    # ahead: a register of the thread's value type, or where ``s`` is stored in 16 bits one
    # register a point as stored (widened when it goes into the ring; a float32 column kept
    # as two registers cost the loop 12 instructions and 7 %)
    def _column_decl(self, s) -> str:
        q = _column(s)
        if not self.base.stored.get(s.name):
            return f"{self.vt} {q}_next = {self.zero};"
        return f"{self._elem(s.name)} " + ", ".join(
            f"{q}_next{c} = {self._zero(s.name)}" for c in range(self.q)) + ";"

    def _column_set(self, s, values) -> str:
        """The column's next value(s) set from one text a point (as stored)."""
        q = _column(s)
        if not self.base.stored.get(s.name):
            return f"{q}_next = {self._parts(values)};"
        return " ".join(f"{q}_next{c} = {v};" for c, v in enumerate(values))

    def _column_now(self, s) -> str:
        """The value(s) loaded an iteration ago, widened."""
        q = _column(s)
        if not self.base.stored.get(s.name):
            return f"{q}_next"
        return self._parts([self.base.widened(s.name, f"{q}_next{c}") for c in range(self.q)])

    def _column_value(self, s, c: int, x: str, place: str) -> str:
        """Point ``c`` of the column at plane ``x`` as stored, read at ``place`` (zero where
        no read reaches it)."""
        return f"{_column(s)}_ok{c} && {self._x_test(s, x)} ? {place} : {self._zero(s.name)}"

    def _raw(self, s, x: str, names) -> str:
        """The element of staged ``s`` at plane ``x`` and inner point ``names`` (C text of
        the place, unconverted)."""
        idx = [sympy.Symbol(x)] + [sympy.Symbol(n) for n in names]
        access = sympy.IndexedBase(s.name)[(s.slot,) + tuple(idx) if s.slot is not None
                                           else tuple(idx)]
        return self.base.target(access)

    def _offset(self, s, names) -> str:
        """The offset in a plane of staged ``s`` of inner point ``names`` (found once: a
        plane's read is then the plane's pointer, ``_plane``, and the offset)."""
        zero = ["0"] * self.m
        return f"(int)(&{self._raw(s, '0', names)} - &{self._raw(s, '0', zero)})"

    def _plane(self, s, i: int, x: str) -> str:
        """The declaration of ``sg_gb<i>``, the first element of plane ``x`` of staged
        ``s`` (block-uniform: the plane's reads add the thread's offsets to it)."""
        return f"const auto *const sg_gb{i} = &{self._raw(s, x, ['0'] * self.m)};"

    def _x_test(self, s, x: str) -> str:
        lo, hi = self._bound(0, True)
        return f"{x} >= {lo} + {s.reach[0]} && {x} <= {hi} + {s.reach[1]}"

    def _gnames(self) -> list[str]:
        return [f"sg_g{j}" for j in range(self.m)]

    def _band_point(self, s, e: str) -> list[str]:
        """The tile-relative point (sg_r, sg_c) and inner coordinates (sg_g<j>) of element
        ``e`` of staged ``s``'s plane."""
        b = f"{_ring(s)}_b"
        if self.m == 1:
            return [f"const int sg_r = {e} - {s.halo[0][0]};",
                    "const sg_int sg_g0 = sg_o0 + sg_r;"]
        return [f"const int sg_r = {e}/{b} - {s.halo[0][0]};",
                f"const int sg_c = {e}%{b} - {s.halo[1][0]};",
                "const sg_int sg_g0 = sg_o0 + sg_r;", "const sg_int sg_g1 = sg_o1 + sg_c;"]

    @staticmethod
    def _band_size(s) -> str:
        """The points of staged ``s``'s plane around the tile (a constant expression of the
        tile): the halo rows, whole, then the halo columns beside the tile's rows."""
        (l0, h0), *rest = s.halo
        if not rest:
            return str(l0 + h0)
        (l1, h1), = rest
        return f"{l0 + h0}*{_ring(s)}_b + sg_T0*{l1 + h1}"

    @staticmethod
    def _band_element(s, j: str, e: str) -> list[str]:
        """``e``, the index in staged ``s``'s plane of the ``j``-th point around the tile
        (``_band_size``): the band's loads take as many turns as it has points over the
        block's threads, not as the whole plane has (issue 65)."""
        (l0, h0), *rest = s.halo
        if not rest:
            return [f"const int {e} = {j} < {l0} ? {j} : sg_T0 + {j};"]
        (l1, h1), = rest
        b = f"{_ring(s)}_b"
        row = f"(sg_w < {l0} ? sg_w : sg_T0 + sg_w)*{b} + {j}%{b}"
        if not l1 + h1:
            return [f"const int sg_w = {j}/{b};", f"const int {e} = {row};"]
        w = l1 + h1
        return [f"const int sg_rows = {l0 + h0}*{b};", f"int {e};",
                f"if ({j} < sg_rows) {{ const int sg_w = {j}/{b}; {e} = {row}; }}",
                f"else {{ const int sg_h = {j} - sg_rows, sg_w = sg_h%{w}; "
                f"{e} = ({l0} + sg_h/{w})*{b} + (sg_w < {l1} ? sg_w : sg_T1 + sg_w); }}"]

    def _band_each(self, lead, body, indent="") -> list[str]:
        """``body`` (lines) for each point of the staged planes of ``lead``'s group this
        thread loads, with its plane index ``sg_e``, its inner point ``sg_g<j>`` and its slot
        ``sg_k`` in the thread's band registers (all fixed for the block: found once, in
        ``_staged_setup``)."""
        ring, n = _ring(lead), f"{_ring(lead)}_n"
        lines = ["#pragma unroll", f"for (int sg_k = 0; sg_k < {n}; ++sg_k) {{",
                 f"  const int sg_e = {ring}_at[sg_k];", "  if (sg_e >= 0) {"]
        point = [f"const sg_int sg_g{j} = {ring}_g{j}[sg_k];" for j in range(self.m)]
        lines += _indent(point + body, "    ") + ["  }", "}"]
        return _indent(lines, indent)

    def _groups(self) -> list[list]:
        """The staged inputs by geometry (halo, reads, reach): one group's planes have the same
        band points, found and loaded in one loop (SA-TTI's P and M)."""
        groups: dict = {}
        for s in self.f.staged:
            groups.setdefault((s.halo, s.reads, s.reach), []).append(s)
        return list(groups.values())

    def _needed(self, s, r: str, c: str) -> str:
        """The test that tile-relative point (r, c) of staged ``s``'s plane is one a producer
        point reads: along the first inner dimension from the rows (and in 3D the halo
        columns) the producer runs on, along the innermost across them (a pair: the pairs
        its reads touch)."""
        (ry0, ry1) = s.reads[0]
        rows = f"{r} >= {-self.l0 + ry0} && {r} <= sg_T0 + {self.h0 - 1 + ry1}"
        if self.m == 1:
            return rows
        rz0, rz1 = s.reads[1]
        e0, e1 = (rz0 % 2, rz1 % 2) if self.q > 1 else (0, 0)
        L, H = self.l1, self.h1
        return " || ".join([
            f"({c} >= 0 && {c} < sg_T1 && {rows})",
            f"({c} >= {-L} && {c} < sg_T1 + {H} && {r} >= {ry0} && {r} <= sg_T0 + {ry1 - 1})",
            f"({r} >= {-self.l0} && {r} < sg_T0 + {self.h0} && {c} >= {rz0 - e0} && "
            f"{c} <= sg_T1 + {rz1 + e1 - 1})",
            f"({r} >= 0 && {r} < sg_T0 && {c} >= {-L + rz0 - e0} && "
            f"{c} <= sg_T1 + {H + rz1 + e1 - 1})"])

    def _staged_setup(self) -> list[str]:
        """Per group of staged inputs (``_groups``): the points around the tile that no thread
        owns and a producer point reads, which this thread loads (their inner points fixed
        for the block; those the reads do not reach along the inner dimensions are zero in
        every slot, stored once), then each ring filled with the planes the first iteration's
        producer reads (the thread's own point(s) and those around), and the values of the
        plane the first iteration stores."""
        out = []
        names = [d.name for d in self.inner]
        for group in self._groups():
            lead = group[0]
            lr, n = _ring(lead), f"{_ring(lead)}_n"
            for s in group:
                q = _column(s)
                out += [f"const bool {q}_ok{c} = sg_kind != 3 && "
                        f"{self._reach_test(s, self._shift(names, c))};" for c in range(self.q)]
                out += [self._column_decl(s), f"const int {q}_go = {self._offset(s, names)};"]
            out += [f"constexpr int {lr}_nb = {self._band_size(lead)};",
                    f"constexpr int {n} = ({lr}_nb + sg_nt - 1)/sg_nt;", f"int {lr}_at[{n}];"]
            out += [f"sg_int {lr}_g{j}[{n}];" for j in range(self.m)]
            out += [f"{self._elem(s.name)} {_ring(s)}_v[{n}];" for s in group]
            out += [f"int {_ring(s)}_go[{n}];" for s in group]
            ctx = self.ctx
            zero = [f"    for (int sg_i = 0; sg_i < {s.ring}; ++sg_i) "
                    f"{_ring(s)}[sg_i*{ctx.stride(_ring(s), f'{_ring(s)}_pl')} + "
                    f"{ctx.place(_ring(s), 'sg_e')}] = ({self.real})0;" for s in group]
            out += ["#pragma unroll", f"for (int sg_k = 0; sg_k < {n}; ++sg_k) {{",
                    "  const int sg_j = sg_tid + sg_k*sg_nt;"] + \
                _indent(self._band_element(lead, "sg_j", "sg_e")) + \
                _indent(self._band_point(lead, "sg_e")) + \
                [f"  const bool sg_mine = sg_j < {lr}_nb && !({self._owned('sg_r', 'sg_c')}) "
                 f"&& ({self._needed(lead, 'sg_r', 'sg_c')});",
                 f"  const bool sg_reached = {self._reach_test(lead, self._gnames())};",
                 # the point's element in the rings (interleaved ones: its place in the pair)
                 f"  {lr}_at[sg_k] = sg_mine && sg_reached ? "
                 f"{ctx.place(lr, 'sg_e')} : -1;"] + \
                [f"  {lr}_g{j}[sg_k] = sg_g{j};" for j in range(self.m)] + \
                [f"  {_ring(s)}_go[sg_k] = {self._offset(s, self._gnames())};" for s in group] + \
                ["  if (sg_mine && !sg_reached) {"] + zero + ["  }", "}"]
            fill, band = [], []
            for i, s in enumerate(group):
                ring, q = _ring(s), _column(s)
                own = f"{ring}_c"
                raw = [self._column_value(s, c, "sg_X",
                                          self._raw(s, "sg_X", self._shift(names, c)))
                       for c in range(self.q)]
                stride = ctx.stride(ring, f"{ring}_pl")
                fill += [f"  {{ {self.real} *const sg_pl = {ring} + sg_i*{stride};"]
                fill += [f"    const {self._elem(s.name)} sg_own{c} = {v};"
                         for c, v in enumerate(raw)]
                own_value = self._parts([self.base.widened(s.name, f"sg_own{c}")
                                         for c in range(self.q)])
                fill += [f"    if (sg_i < {s.depth} && sg_kind != 3) "
                         f"{self._put('sg_pl', own, own_value)}",
                         f"    if (sg_i == {s.depth}) {{ "
                         f"{self._column_set(s, [f'sg_own{c}' for c in range(self.q)])} }} }}"]
                band += [f"{{ const {self._elem(s.name)} sg_v = {self._x_test(s, 'sg_X')} ? "
                         f"{self._raw(s, 'sg_X', self._gnames())} : {self._zero(s.name)};",
                         f"  if (sg_i < {s.depth}) {ring}[sg_i*{stride} + sg_e] = "
                         f"{self.base.widened(s.name, 'sg_v')}; else {ring}_v[sg_k] = sg_v; }}"]
            if lead.queued:
                out += column_queues.fill(self, group)
                continue
            out += [f"for (int sg_i = 0; sg_i <= {lead.depth}; ++sg_i) {{",
                    f"  const sg_int sg_X = sg_pa + {lead.reach[0]} + sg_i;"] + fill + \
                self._band_each(lead, band, "  ") + ["}"]
        return out

    def _stage(self) -> list[str]:
        """Each staged input's plane after the farthest the producer reads at sg_p into its
        ring slot (the one the previous iteration's producer read last): the thread's own
        point(s) and the points around, loaded an iteration ago; then the next plane's values
        loaded (a group's band points in one loop)."""
        out = []
        for group in self._groups():
            lead = group[0]
            if lead.queued:
                out += column_queues.stage(self, group)
                continue
            out += ["{", f"  const sg_int sg_X = sg_p + {lead.reach[1] + 2};"]
            band = []
            for i, s in enumerate(group):
                ring, q = _ring(s), _column(s)
                slot = self.ctx.slot((s.ring, "st", s.halo), s.depth, ring)
                own = f"{ring}_c"
                test = self._x_test(s, "sg_X")
                out += [f"  {self.real} *const sg_pl{i} = {self.ctx.at(ring, slot, '0')};",
                        "  " + self._plane(s, i, "sg_X"),
                        f"  if (sg_kind != 3) {self._put(f'sg_pl{i}', own, self._column_now(s))}"]
                out.append("  " + self._column_set(s, [
                    self._column_value(s, c, "sg_X", f"sg_gb{i}[{q}_go + {c}]")
                    for c in range(self.q)]))
                band += [f"sg_pl{i}[sg_e] = {self.base.widened(s.name, f'{ring}_v[sg_k]')};",
                         f"{ring}_v[sg_k] = {test} ? sg_gb{i}[{ring}_go[sg_k]] : "
                         f"{self._zero(s.name)};"]
            out += self._band_each(lead, band, "  ") + ["}"]
        return out

    def _put(self, ring: str, index: str, value: str) -> str:
        """The statement storing the thread's ``value`` at ``index`` of ``ring``."""
        return self._put_at(f"({ring} + {index})", value)

    def _put_at(self, ptr: str, value: str) -> str:
        """The statement storing the thread's ``value`` at pointer ``ptr`` (a pair: an
        aligned 8-byte store)."""
        return f"*{ptr} = {value};" if self.q == 1 else f"sg_pair_st({ptr}, {value});"
