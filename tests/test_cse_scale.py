"""Sums equal up to a constant factor are computed once (``share_scaled_sums`` before CSE)."""
import sympy

from stencilgen.ir.optimize import (Literal, count_flops, cse, share_scaled_sums,
                                    simplify_stencil)
from stencilgen.ir.names import NameRegistry

a, b, c, d, e, f = sympy.symbols("a b c d e f", real=True)
x = sympy.Symbol("x", integer=True)
u = sympy.IndexedBase("u")


def _cse(exprs):
    temps, reduced = cse([simplify_stencil(v) for v in exprs], NameRegistry(lambda name: False))
    return [(s, v) for s, v, _ in temps], reduced


def _flops(temps, reduced):
    return sum(count_flops(v) for _, v in temps) + sum(count_flops(r) for r in reduced)


def _plain_flops(exprs):
    """Flops of the same kernel through sympy's CSE alone (no sharing of scaled sums)."""
    temps, reduced = sympy.cse([simplify_stencil(v) for v in exprs], optimizations=None,
                               order="none")
    return _flops(temps, reduced)


def _inline(temps, reduced):
    """The reduced expressions with every local substituted back and literals as numbers."""
    out = list(reduced)
    for sym, value in reversed(temps):
        out = [r.xreplace({sym: value}) for r in out]
    return [r.xreplace({s: s.value for s in r.atoms(Literal)}) for r in out]


def _sums(expr):
    """The sums of ``expr`` with at least three terms (the linear combinations)."""
    return [n for n in sympy.preorder_traversal(expr)
            if isinstance(n, sympy.Add) and len(n.args) >= 3]


def _scaled(expr):
    """(factor, sum) of each ``Literal * sum`` product in ``expr``, sums of three terms up."""
    out = []
    for n in sympy.preorder_traversal(expr):
        if isinstance(n, sympy.Mul):
            lits = [m for m in n.args if isinstance(m, Literal)]
            sums = [m for m in n.args if isinstance(m, sympy.Add) and len(m.args) >= 3]
            if len(lits) == 1 and len(sums) == 1:
                out.append((lits[0].value, sums[0]))
    return out


def test_proportional_sums_share_one_sum_with_the_exact_factor():
    exprs = [3 * a + 5 * b + 7 * c + e * f, d * (6 * a + 10 * b + 14 * c)]
    temps, reduced = _cse(exprs)
    # one sum over a, b, c is computed; the second expression is 2 * that sum * d
    sums = [v for _, v in temps if isinstance(v, sympy.Add) and v.has(a) and v.has(c)]
    assert len(sums) == 1
    local = next(s for s, v in temps if v == sums[0])
    lits = reduced[1].atoms(Literal)
    assert reduced[1] == Literal(2) * d * local
    assert [lit.value for lit in lits] == [sympy.Integer(2)]
    assert _flops(temps, reduced) < _plain_flops(exprs)
    inlined = _inline(temps, reduced)
    for orig, new in zip(exprs, inlined):
        assert sympy.expand(orig - new) == 0


def test_sign_flipped_operands_and_rational_factor():
    d1, d2, d3 = u[x + 1] - u[x], u[x + 2] - u[x - 1], u[x + 3] - u[x - 2]
    w = (sympy.Rational(1225, 1024), sympy.Rational(-245, 3072), sympy.Rational(49, 5120))
    first = w[0] * d1 + w[1] * d2 + w[2] * d3
    # the same sum written on the negated differences, times -3/7, inside a product
    second = e * (sympy.Rational(3, 7) * w[0] * -d1 + sympy.Rational(3, 7) * w[1] * -d2
                  + sympy.Rational(3, 7) * w[2] * -d3)
    exprs = [first * f, second]
    shared = share_scaled_sums([simplify_stencil(v) for v in exprs])
    # the second is -3/7 times the first's sum, the differences' signs flipped back
    assert _scaled(shared[1]) == [(sympy.Rational(-3, 7), _sums(shared[0])[0])], shared
    temps, reduced = _cse(exprs)
    assert len([v for _, v in temps if len(_sums(v))]) == 1
    assert sum(len(_sums(r)) for r in reduced) == 0
    assert _flops(temps, reduced) < _plain_flops(exprs)
    for orig, new in zip(exprs, _inline(temps, reduced)):
        assert sympy.expand(orig - new) == 0


def test_non_proportional_sums_are_left_alone():
    exprs = [3 * a + 5 * b + 7 * c, d * (6 * a + 10 * b + 15 * c),
             e * (3 * a + 5 * b + 7 * f)]
    simplified = [simplify_stencil(v) for v in exprs]
    assert share_scaled_sums(simplified) == simplified
    temps, reduced = _cse(exprs)
    assert _flops(temps, reduced) == _plain_flops(exprs)
    for orig, new in zip(exprs, _inline(temps, reduced)):
        assert sympy.expand(orig - new) == 0


def test_float_coefficients_merge_only_to_their_precision():
    w = (sympy.Rational(1225, 1024), sympy.Rational(245, 3072), sympy.Rational(49, 5120))
    big = sum(sympy.Float(0.85) * wi * s for wi, s in zip(w, (a, b, c)))
    small = sum(sympy.Float(0.15) * wi * s for wi, s in zip(w, (a, b, c)))
    off = sum(sympy.Float(0.15 * (1 + 1e-9 * i)) * wi * s
              for i, (wi, s) in enumerate(zip(w, (a, b, c))))
    merged = share_scaled_sums([simplify_stencil(big), d * simplify_stencil(small)])
    [(factor, common)] = _scaled(merged[1])
    assert common == merged[0] and abs(float(factor) - 3 / 17) < 1e-14
    kept = [simplify_stencil(big), d * simplify_stencil(off)]
    assert share_scaled_sums(kept) == kept


def test_rewrite_is_deterministic_and_exact_on_a_stencil():
    """Proportional staggered-derivative sums as the TTI flux has them."""
    def diff(g, s):
        return (sympy.Rational(1225, 1024) * (g[x + 1] - g[x]) * s
                - sympy.Rational(245, 3072) * (g[x + 2] - g[x - 1]) * s
                + sympy.Rational(49, 5120) * (g[x + 3] - g[x - 2]) * s)
    p, m = sympy.IndexedBase("p"), sympy.IndexedBase("m")
    exprs = [diff(p, 1) + 2 * e * diff(p, 1) + f * diff(m, 1),
             a * diff(p, -1) + b * diff(m, sympy.Rational(3, 17))]
    first, second = _cse(exprs), _cse(exprs)
    assert first == second
    temps, reduced = first
    assert _flops(temps, reduced) < _plain_flops(exprs)
    for orig, new in zip(exprs, _inline(temps, reduced)):
        assert sympy.expand(orig - new) == 0
