"""Composition is sound AND complete on an exhaustive small family.

For every A among a fixed set of layouts and every single-mode B = n:r with
n, r small, composition(A, B) must either return R with R(j) == Ahat(r*j) for all j, or
raise InadmissibleError — and it may raise only when NO layout has that function.  The
"no layout" side is decided here by an independent brute force: a function on [0, n) is
a layout's iff, for some ordered factorization n = n0*n1*..., the strides forced by
e_k = f(n0*...*n(k-1)) reproduce it.
"""

from __future__ import annotations

import itertools
from functools import cache

import pytest

from layoutproof import InadmissibleError, Layout, composition, flatten


def ahat(A: Layout, x: int) -> int:
    """A evaluated at any x >= 0 with its last flat mode unbounded (CuTe C++)."""
    shp, std = flatten(A.shape), flatten(A.stride)
    off = 0
    for s, d in zip(shp[:-1], std[:-1]):
        off += (x % s) * d
        x //= s
    return off + x * std[-1]


@cache
def factorizations(n: int) -> list:
    if n == 1:
        return [()]
    out = []
    for f in range(2, n + 1):
        if n % f == 0:
            out += [(f,) + rest for rest in factorizations(n // f)]
    return out


def is_layout_function(f: list) -> bool:
    n = len(f)
    for fac in factorizations(n):
        strides, p = [], 1
        for m in fac:
            strides.append(f[p] if p < n else 0)
            p *= m
        if all(f[j] == Layout(fac or (1,), tuple(strides) or (0,))(j) for j in range(n)):
            return True
    return n == 1


A_FAMILY = [
    Layout((4, 6), (1, 5)),
    Layout((6, 2), (1, 7)),
    Layout((5, 3), (9, 3)),
    Layout((4, 6), (1, 10)),
    Layout((2, 3, 4), (1, 8, 3)),
    Layout((3, 4), (4, 1)),
    Layout((6, 8), (1, 2)),
    Layout((4, 6, 8, 10), (2, 3, 5, 7)),
    Layout((2, 2, 2), (2, 1, 16)),
    Layout(12, 3),
    Layout((4, 1), (1, 0)),
    Layout((3, (1, 4), 1), (2, (5, 6), 7)),
]


@pytest.mark.parametrize("A", A_FAMILY, ids=str)
def test_single_mode_composition_sound_and_complete(A):
    raised = returned = 0
    for n, r in itertools.product(range(1, 13), range(0, 13)):
        truth = [ahat(A, r * j) for j in range(n)]
        try:
            R = composition(A, Layout(n, r))
        except InadmissibleError as e:
            raised += 1
            assert not is_layout_function(truth), (
                f"{A} o {n}:{r} raised ({e.condition}) but a layout has values {truth}"
            )
            assert e.witness is not None and 0 < e.witness < n, (A, n, r, e.witness)
            continue
        returned += 1
        assert R.size == n
        assert [int(v) for v in R.eval_all()] == truth, f"{A} o {n}:{r} = {R} is wrong"
    assert returned > 0


def test_beyond_cute_conditions():
    # CuTe's stride divisibility fails here, yet a layout exists: we return it.
    assert composition(Layout((5, 3), (9, 3)), Layout(5, 6)) == Layout(5, 12)
    R = composition(Layout((4, 6), (1, 10)), Layout(4, 6))
    assert [int(v) for v in R.eval_all()] == [0, 12, 30, 42]
    # ... and here no layout exists: raised, with the coordinate where it breaks.
    with pytest.raises(InadmissibleError) as ei:
        composition(Layout((4, 6), (1, 5)), Layout(6, 1))
    assert ei.value.condition == "shape divisibility" and ei.value.witness == 4


def test_multi_mode_with_exact_leaves_is_checked_whole():
    A = Layout((5, 3), (9, 3))
    with pytest.raises(InadmissibleError) as ei:
        composition(A, Layout((5, 2), (6, 1)))
    w = ei.value.witness
    B = Layout((5, 2), (6, 1))
    assert ahat(A, B(w)) != ahat(A, 6 * (w % 5)) + ahat(A, w // 5)


def test_extension_past_size_uses_the_own_last_mode():
    # CuTe C++: A's own last mode extends, a trailing size-1 mode included
    assert composition(Layout((4, 1), (1, 0)), Layout(8, 1)) == Layout((4, 2), (1, 0))
    assert composition(Layout(4, 3), Layout(8, 1)) == Layout(8, 3)
    assert composition(Layout(1, 2), Layout(4, 1)) == Layout(4, 2)


def test_huge_strides_use_exact_integers():
    big = 2**70
    R = composition(Layout((5, 3), (9 * big, 3 * big)), Layout(5, 6))
    assert R == Layout(5, 12 * big)
