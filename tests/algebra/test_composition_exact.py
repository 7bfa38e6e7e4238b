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

from layoutproof import InadmissibleError, Layout, composition, flatten, ops
from layoutproof.errors import UndecidableConditionError


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


def test_overlap_refusals_of_the_cute_walk_always_carry_a_confirmed_witness():
    """Where every leaf took C++'s walk, the overlap refusal's witness is the prefix argument's
    (sym.composition-exact): the shortest prefix of the leaves landing in the mode reaching its
    extent, each at the coordinate reaching its footprint -- A(B(w)) differs from the by-mode
    result there, for any number of leaves (no search needed)."""
    import random

    rng = random.Random(11)
    seen = 0
    for _ in range(4000):
        ra, rb = rng.randint(2, 4), rng.randint(3, 4)
        A = Layout(tuple(rng.randint(2, 6) for _ in range(ra)), tuple(rng.randint(-4, 12) for _ in range(ra)))
        B = Layout(
            tuple(rng.randint(1, 6) for _ in range(rb)),
            tuple(rng.choice([0, 1, 2, 3, 4, 6, 8, 12, 16, 24]) for _ in range(rb)),
        )
        try:
            ops.composition(A, B)
        except InadmissibleError as e:
            if e.condition != "disjointness of B's modes in A":
                continue
            w = e.witness
            assert type(w) is int and 0 <= w < B.size, (A, B, e)
            crd, rem = [], w
            for s_ in B.shape:
                crd.append(rem % s_)
                rem //= s_
            fs, fd = (list(m) for m in A.flat_modes())  # A extended along its last mode
            whole = ops.ext_eval(fs, fd, sum(c * d for c, d in zip(crd, B.stride)))
            bymode = sum(ops.ext_eval(fs, fd, c * d) for c, d in zip(crd, B.stride))
            assert whole != bymode, (A, B, w)
            seen += 1
    assert seen > 30


def test_past_the_exact_limit_an_undecided_disjointness_is_no_refusal():
    """A leaf decided by evaluation (6 vs A's extent 4: C++'s conditions fail) and a domain of
    B too large to check the by-mode result everywhere: undecided, not inadmissible -- the
    same B with 8 in place of 2^15 composes."""
    A = Layout((4, 8, 100000), (1, 5, 1000))
    assert str(ops.composition(A, Layout((4, 8), (6, 32)))) == "((2,2),8):((7,15),1000)"
    with pytest.raises(UndecidableConditionError) as ei:
        ops.composition(A, Layout((4, 1 << 15), (6, 32)))
    assert not isinstance(ei.value, InadmissibleError) and "undecided" in str(ei.value)
