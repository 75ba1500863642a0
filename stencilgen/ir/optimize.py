"""Expression passes on indexed equations: factorisation, hoisting of invariants, CSE and
the flop/byte counts that the performance report divides by."""
from __future__ import annotations

from collections import Counter

import numpy as np
import sympy

from . import dtypes

from .accesses import access_map, accesses, shift_accesses, space_offsets


# -- classification helpers ------------------------------------------------------------------

def _is_call(e) -> bool:
    """A math-library call: sin, cos, exp, sqrt (non-integer powers)..."""
    if isinstance(e, sympy.Pow):
        return not e.exp.is_Integer
    return isinstance(e, sympy.Function) and not isinstance(e, sympy.Indexed)


def _varies(e, loop_symbols) -> bool:
    return bool(e.free_symbols & loop_symbols) or e.has(sympy.Indexed)


# -- factorisation ---------------------------------------------------------------------------

class Local(sympy.Function):
    """An invariant recomputed at each point instead of read from an array: one value, so
    expansion does not spread it (``1/(2m + dt*damp)`` times a sum stays one division);
    printers write its argument."""

    nargs = 1


class Literal(sympy.Symbol):
    """A numeric constant kept as an atom, so that ``w * (a + b)`` is not redistributed by
    sympy into ``w*a + w*b``; printers write its value."""

    def __new__(cls, value):
        value = sympy.Rational(value) if sympy.sympify(value).is_Rational else sympy.Float(value)
        obj = sympy.Symbol.__xnew__(cls, f"lit[{value}]", real=True)
        obj.value = value
        return obj

    def __getnewargs_ex__(self):
        return ((self.value,), {})


def _factors(term):
    coeff, rest = term.as_coeff_Mul()
    out = Counter(sympy.Mul.make_args(rest))
    if coeff < 0:
        out[sympy.S.NegativeOne] += 1
        coeff = -coeff
    if coeff != 1:
        out[Literal(coeff)] += 1
    return out


def _product(factors: Counter):
    return sympy.Mul(*[k ** v for k, v in factors.items() if v])


def factorize(expr):
    """Pull the most shared factor out of sums, greedily and recursively.

    After expansion a stencil is a flat sum of ``weight * spacing**-2 * u[x + i]`` terms; this
    turns it back into ``spacing**-2 * (w1*(u[x-1] + u[x+1]) + ...)`` so that symmetric
    weights cost one multiply per pair.
    """
    if not isinstance(expr, sympy.Basic) or not expr.args or isinstance(expr, sympy.Indexed):
        return expr
    if isinstance(expr, sympy.Add):
        return _factor_sum(list(sympy.Add.make_args(expr)))
    return expr.func(*[factorize(a) for a in expr.args])


def _factor_sum(terms):
    if len(terms) == 1:
        return factorize(terms[0])
    facts = [_factors(t) for t in terms]
    counts = Counter()
    for f in facts:
        counts.update(set(k for k in f if k not in (1, -1)))
    n = max(counts.values(), default=0)
    if n >= 2:
        # ties broken by the shortest text, then the largest, never by set order, so the
        # source is the same in every process (printing only the tied: printing is slow)
        texts = {k: str(k) for k, c in counts.items() if c == n}
        best = max(texts, key=lambda k: (-len(texts[k]), texts[k]))
    if n < 2:
        return sympy.Add(*[_product(Counter({factorize(k): v for k, v in f.items()}))
                           for f in facts])
    inside, outside = [], []
    for t, f in zip(terms, facts):
        if best in f:
            f = f.copy()
            f[best] -= 1
            inside.append(_product(f))
        else:
            outside.append(t)
    if isinstance(best, Literal) and all(t.could_extract_minus_sign() for t in inside):
        # -w*(a + b), not w*(-a - b): a negation per term costs an instruction each
        best, inside = Literal(-best.value), [-t for t in inside]
    grouped = sympy.Mul(best, _factor_sum(inside), evaluate=False) if len(inside) > 1 \
        else best * inside[0]
    if not outside:
        return grouped
    return sympy.Add(grouped, _factor_sum(outside), evaluate=False)


def simplify_stencil(expr):
    """Expand into monomials, merge like terms, then factorise (see ``factorize``); a
    ``Local`` is one value for this, not expanded into."""
    held = {v: sympy.Dummy(real=True) for v in expr.atoms(Local)}
    expanded = sympy.expand(expr.xreplace(held), power_exp=False, power_base=False, log=False,
                            multinomial=True, mul=True, deep=True)
    return factorize(expanded).xreplace({d: v for v, d in held.items()})


# -- scalar invariants -----------------------------------------------------------------------

class ScalarHoister:
    """Moves subexpressions of scalars only (dt, spacings, constants) to the prologue."""

    def __init__(self, loop_symbols, names, types=None, real=np.float32):
        self.loop_symbols = set(loop_symbols)
        self.names = names
        self.types = types if types is not None else {}   # name -> dtype (complex values)
        self.real = real
        self.table: dict = {}
        self.prologue: list = []   # (symbol, value, dtype)

    def _symbol(self, expr):
        if expr not in self.table:
            sym, dtype = dtypes.typed_symbol(self.names.counted("c"), expr, self.types,
                                             self.real)
            self.table[expr] = sym
            self.prologue.append((sym, expr, dtype))
        return self.table[expr]

    def _worth(self, e) -> bool:
        return bool(e.args) and not e.is_Number and not (
            isinstance(e, sympy.Mul) and len(e.args) == 2 and e.args[0] == -1 and e.args[1].is_Symbol)

    def __call__(self, expr):
        if not expr.args or expr.is_Number or isinstance(expr, sympy.Indexed):
            return expr
        if not _varies(expr, self.loop_symbols):
            return self._symbol(expr) if self._worth(expr) else expr
        if isinstance(expr, (sympy.Add, sympy.Mul)):
            fixed = [a for a in expr.args if not _varies(a, self.loop_symbols)]
            moving = [self(a) for a in expr.args if _varies(a, self.loop_symbols)]
            fixed_expr = expr.func(*fixed)
            if fixed and self._worth(fixed_expr):
                fixed = [self._symbol(fixed_expr)]
            return expr.func(*(fixed + moving))
        return expr.func(*[self(a) for a in expr.args])


# -- time-invariant arrays ---------------------------------------------------------------------

class InvariantHoister:
    """Finds time-invariant, costly (math-library calls, divisions) subexpressions of
    time-loop equations and replaces them by arrays computed once before the time loop.

    A product of invariant factors is split into clusters: factors that always occur together
    share one array, the others get their own, and the loop multiplies the arrays it needs.
    So ``A*n_x``, ``A*n_y``, ``C*n_x``... cost an array per A, C and per factor of n rather
    than one per product. Shifted copies (``sin(theta[x+1])``, ``sin(theta[x-1])``) share one
    array read at two offsets; it is computed on the domain widened by those offsets.
    """

    def __init__(self, dims, invariant_arrays, halos, scalars):
        self.dims = tuple(dims)
        self.invariant_arrays = set(invariant_arrays)
        self.halos = halos
        self.scalars = set(scalars)
        self.found: dict = {}       # canonical cluster -> [lo, hi] per dim
        self.signature: dict = {}   # canonical factor -> canonical products it occurs in

    def _invariant(self, e) -> bool:
        if e.free_symbols - set(self.dims) - self.scalars - {a.base.label for a in accesses(e)} \
                - {i for a in accesses(e) for i in a.free_symbols}:
            return False
        return all(a.base.name in self.invariant_arrays for a in accesses(e)) and bool(accesses(e))

    def _costly(self, e) -> bool:
        return any(_is_call(n) or (isinstance(n, sympy.Pow) and n.exp.is_negative
                                   and n.base.has(sympy.Indexed))
                   for n in sympy.preorder_traversal(e))

    def _canonical(self, e):
        offs = sorted(space_offsets(a, self.dims) for a in accesses(e))
        if not offs:
            return e, (0,) * len(self.dims)
        shift = offs[0]
        return shift_accesses(e, self.dims, tuple(-s for s in shift)), shift

    def _candidates(self, e, out):
        if not e.args or isinstance(e, sympy.Indexed):
            return
        if self._invariant(e):
            if self._costly(e):
                out.append(e)
            return
        if isinstance(e, (sympy.Add, sympy.Mul)):
            inv = [a for a in e.args if self._invariant(a)]
            if len(inv) > 1 and any(self._costly(a) for a in inv):
                out.append(e.func(*inv))
                for a in e.args:
                    if a not in inv:
                        self._candidates(a, out)
                return
        for a in e.args:
            self._candidates(a, out)

    def _factors(self, c):
        return list(sympy.Mul.make_args(c)) if isinstance(c, sympy.Mul) else [c]

    def _clusters(self, c):
        """``c``'s factors grouped by the set of products they occur in (same set, one group)."""
        groups: dict = {}
        for f in self._factors(c):
            key = self.signature.get(self._canonical(f)[0], frozenset())
            groups.setdefault(key, []).append(f)
        return [sympy.Mul(*fs) for _, fs in sorted(groups.items(), key=lambda kv: str(kv[1]))]

    def scan(self, exprs, beyond=None):
        """First pass: every candidate, its factors' signatures, the offsets each cluster is
        needed at, from the points each expression is computed at (``beyond``: per expression
        the points past the domain's ends, a widened nest's)."""
        found = []
        for i, expr in enumerate(exprs):
            here = []
            self._candidates(expr, here)
            found += [(c, beyond[i] if beyond else ((0, 0),) * len(self.dims)) for c in here]
        for c, _ in found:
            canon = self._canonical(c)[0]
            for f in self._factors(c):
                self.signature.setdefault(self._canonical(f)[0], set()).add(canon)
        self.signature = {k: frozenset(v) for k, v in self.signature.items()}
        for c, wide in found:
            for cluster in self._clusters(c):
                if not self._costly(cluster):
                    continue
                canon, shift = self._canonical(cluster)
                rng = self.found.setdefault(canon, [[0, 0] for _ in self.dims])
                for r, s, (lo, hi) in zip(rng, shift, wide):
                    r[0] = max(r[0], lo - s)
                    r[1] = max(r[1], hi + s)

    def feasible(self):
        """Clusters whose widened evaluation stays inside the halos of what they read."""
        ok = {}
        for canon, rng in self.found.items():
            good = True
            for name, offsets in access_map([canon], self.dims).items():
                halo = self.halos[name]
                for off in offsets:
                    space = off[-len(self.dims):]
                    for axis, o in enumerate(space):
                        if o - rng[axis][0] < -halo[axis] or o + rng[axis][1] > halo[axis]:
                            good = False
            if good:
                ok[canon] = tuple(tuple(r) for r in rng)
        return ok

    def rewrite(self, expr, table):
        """Replace candidates in ``expr``; ``table`` maps canonical cluster -> IndexedBase."""
        found = []
        self._candidates(expr, found)
        subs = {}
        for c in found:
            parts, hit = [], False
            for cluster in self._clusters(c):
                canon, shift = self._canonical(cluster)
                if canon in table:
                    hit = True
                    parts.append(table[canon][tuple(d + s for d, s in zip(self.dims, shift))])
                else:
                    parts.append(cluster)
            if hit:
                subs[c] = sympy.Mul(*parts)
        if not subs:
            return expr
        # Mul/Add groups are not subtrees: rebuild those by hand, plain subtrees by xreplace.
        def visit(e):
            if e in subs:
                return subs[e]
            if not e.args:
                return e
            if isinstance(e, (sympy.Add, sympy.Mul)):
                inv = [a for a in e.args if self._invariant(a)]
                group = e.func(*inv) if len(inv) > 1 else None
                if group is not None and group in subs:
                    rest = [visit(a) for a in e.args if a not in inv]
                    return e.func(subs[group], *rest)
            return e.func(*[visit(a) for a in e.args])
        return visit(expr)


# -- sums equal up to a constant factor ---------------------------------------------------------

def _coefficient(term):
    """``term`` as (numeric coefficient, rest), literals folded into the coefficient and the
    sign of a sum normalised (``w*(b - a)`` -> ``(-w, a - b)``); rest None for a number."""
    coeff, rest = term.as_coeff_Mul()
    if isinstance(rest, Literal):
        return coeff * rest.value, None
    if isinstance(rest, sympy.Mul) and any(isinstance(f, Literal) for f in rest.args):
        kept = []
        for f in rest.args:
            if isinstance(f, Literal):
                coeff *= f.value
            else:
                kept.append(f)
        rest = sympy.Mul(*kept)
    if rest == 1 or not coeff:
        return coeff, None
    if isinstance(rest, sympy.Add) and rest.could_extract_minus_sign():
        rest, coeff = -rest, -coeff
    return coeff, rest


def _terms(add):
    """The terms of a sum, those of sums nested in it unevaluated (``factorize``) included."""
    out = []
    for t in add.args:
        out.extend(_terms(t) if isinstance(t, sympy.Add) else [t])
    return out


def _linear_terms(add):
    """An ``Add``'s terms as {atom: (coefficient, term)} in argument order, and the others
    (numbers); None where two terms share an atom."""
    linear, others = {}, []
    for t in _terms(add):
        coeff, atom = _coefficient(t)
        if atom is None:
            others.append(t)
        elif atom in linear:
            return None
        else:
            linear[atom] = (coeff, t)
    return linear, others


def _scale(ref, vec):
    """``k`` with ``vec == k*ref`` elementwise, or None: exact for rationals; with a float
    among them, to 2**-44 relative (their last digits are round-off already)."""
    k = vec[0] / ref[0]
    for r, v in zip(ref[1:], vec[1:]):
        kr = k * r
        if kr != v and (kr.is_Rational and v.is_Rational
                        or abs(float(kr) - float(v)) > 2.0 ** -44 * abs(float(v))):
            return None
    if k.is_Float and abs(abs(float(k)) - 1) <= 2.0 ** -44:
        return sympy.Integer(1 if k > 0 else -1)
    return k


def _sums(exprs) -> dict:
    """Every sum in ``exprs`` (first-seen order) -> its ``_linear_terms``."""
    nodes: dict = {}
    seen: set = set()

    def scan(e):
        if not e.args or isinstance(e, (sympy.Indexed, Local)) or e in seen:
            return
        seen.add(e)
        if isinstance(e, sympy.Add):
            nodes[e] = _linear_terms(e)
        for a in _terms(e) if isinstance(e, sympy.Add) else e.args:
            scan(a)
    for e in exprs:
        scan(e)
    return nodes


def _holders(nodes) -> dict:
    """Candidate shared sums (the atoms of a linear part that multiplies something by a
    constant other than +-1, in order) -> the sums holding all their atoms."""
    keys: dict = {}             # frozenset of atoms -> atoms in order
    for info in nodes.values():
        if info is not None and len(info[0]) > 1 and \
                any(abs(c) != 1 for c, _ in info[0].values()):
            keys.setdefault(frozenset(info[0]), tuple(info[0]))
    by_atom: dict = {}
    for key in keys:
        for a in key:
            by_atom.setdefault(a, []).append(key)
    found: dict = {key: [] for key in keys}
    for node, info in nodes.items():
        if info is None:
            continue
        hits = Counter(k for a in info[0] for k in by_atom.get(a, ()))
        for key, n in hits.items():
            if n == len(key):
                found[key].append(node)
    return {keys[key]: found[key] for key in keys}


def _proportional(nodes, holders, atoms, used) -> list:
    """The holders of ``atoms`` not yet given these atoms, grouped by proportional
    coefficient vectors: [(reference vector, [(sum, vector)])]."""
    key, groups = frozenset(atoms), []
    for node in holders:
        if used.get(node, frozenset()) & key:
            continue
        vec = [nodes[node][0][a][0] for a in atoms]
        for ref, members in groups:
            if _scale(ref, vec) is not None:
                members.append((node, vec))
                break
        else:
            groups.append((vec, [(node, vec)]))
    return groups


def _plan(nodes) -> tuple[dict, list]:
    """Per sum, the shared sums it becomes a multiple of ([(index, factor, atoms)]), and the
    shared sums (an occurrence as representative, its atoms); largest first, an atom of a
    sum given to one shared sum at most."""
    holders = _holders(nodes)
    used: dict = {}
    plan: dict = {}
    shared: list = []
    for atoms in sorted(holders, key=len, reverse=True):   # stable: ties keep their order
        key = frozenset(atoms)
        for _, members in _proportional(nodes, holders[atoms], atoms, used):
            if len(members) < 2:
                continue
            rep, rvec = min(members, key=lambda m: sum(abs(c) != 1 for c in m[1]))
            shared.append((rep, atoms))
            for node, vec in members:
                used[node] = used.get(node, frozenset()) | key
                plan.setdefault(node, []).append((len(shared) - 1, _scale(rvec, vec), key))
    return plan, shared


def share_scaled_sums(exprs):
    """Linear combinations ``sum(c_i*a_i)`` that are constant multiples of one another (atoms
    up to sign, alone or inside a larger sum) rewritten as ``k*S`` with one ``S``, so that CSE
    computes ``S`` once: SA-TTI's flux has ``w.d``, ``2*w.d``, ``-w.d`` and ``0.85*w.d``.

    ``S`` is an occurrence as written (fewest multiplications first; no new coefficients);
    visits follow argument order, never hashing. ``Local``s and indices are left alone."""
    nodes = _sums(exprs)
    plan, shared = _plan(nodes)
    if not plan:
        return list(exprs)
    memo: dict = {}
    sums: dict = {}

    def common(index):
        if index not in sums:
            rep, atoms = shared[index]
            sums[index] = sympy.Add(*[rebuild(nodes[rep][0][a][1]) for a in atoms])
        return sums[index]

    def scaled(index, k):
        s = common(index)
        return s if k == 1 else sympy.Mul(-1, s, evaluate=False) if k == -1 \
            else sympy.Mul(Literal(k), s)

    def rebuild(e):
        if not e.args or isinstance(e, (sympy.Indexed, Local)):
            return e
        if e not in memo:
            if e in plan:
                linear, others = nodes[e]
                taken = frozenset().union(*(key for _, _, key in plan[e]))
                parts = [scaled(index, k) for index, k, _ in plan[e]]
                parts += [rebuild(t) for a, (_, t) in linear.items() if a not in taken]
                parts += [rebuild(t) for t in others]
                memo[e] = parts[0] if len(parts) == 1 else sympy.Add(*parts, evaluate=False)
            else:
                args = [rebuild(a) for a in e.args]
                memo[e] = e.func(*args) if any(x is not y for x, y in zip(args, e.args)) else e
        return memo[e]
    return [rebuild(e) for e in exprs]


# -- CSE and counting --------------------------------------------------------------------------

def cse(exprs, names, types=None, real=np.float32):
    """Common subexpressions of a kernel's right-hand sides, as (locals, reduced exprs), each
    local with its dtype (``types``: name -> dtype of the complex arrays and scalars, grown by
    the locals); sums equal up to a constant factor are made one sum first
    (``share_scaled_sums``)."""
    def gen():
        while True:
            yield sympy.Symbol(names.counted("r"), real=True)
    replacements, reduced = sympy.cse(share_scaled_sums(exprs), symbols=gen(),
                                      optimizations=None, order="none")
    types = types if types is not None else {}
    typed, renamed = [], {}
    for sym, value in replacements:
        value = value.xreplace(renamed)
        new, dtype = dtypes.typed_symbol(sym.name, value, types, real)
        if new != sym:   # a complex local: no real assumption
            renamed[sym] = new
        typed.append((new, value, dtype))
    return typed, [r.xreplace(renamed) for r in reduced]


def count_flops(expr) -> int:
    """Floating-point operations of one evaluation: + - * / and math calls count one each."""
    if not expr.args or isinstance(expr, sympy.Indexed) or expr.is_Number:
        return 0
    if isinstance(expr, sympy.Add):
        return len(expr.args) - 1 + sum(count_flops(a) for a in expr.args)
    if isinstance(expr, sympy.Mul):
        # a sign (-1 factor) folds into the enclosing addition as a subtraction
        args = [a for a in expr.args if a != -1]
        return max(len(args) - 1, 0) + sum(count_flops(a) for a in args)
    if isinstance(expr, sympy.Pow):
        base = count_flops(expr.base)
        if expr.exp.is_Integer:
            k = abs(int(expr.exp))
            return base + max(k - 1, 0) + (1 if expr.exp < 0 else 0)
        return base + 1 + (1 if expr.exp.is_negative else 0)
    if isinstance(expr, Local):
        return count_flops(expr.args[0])
    return 1 + sum(count_flops(a) for a in expr.args)


def count_bytes(reads, writes, itemsizes) -> int:
    """Compulsory traffic per point: each distinct array slot read once, written once."""
    total = 0
    for table in (reads, writes):
        for name, offsets in table.items():
            size, space_rank = itemsizes[name]
            slots = {o[:len(o) - space_rank] for o in offsets}
            total += len(slots) * size
    return total


def itemsize(dtype) -> int:
    return np.dtype(dtype).itemsize
