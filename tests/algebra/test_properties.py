"""Property tests: every operation's post-condition, checked by brute force over the whole
domain (numpy, ``eval_all``) on hypothesis-generated layouts.

Only the library's evaluation (``eval_all`` / ``L(c)``) is trusted here, and that is itself
checked against the definition (inner product of the natural coordinate with the stride)
in ``test_evaluation_forms``.  ``Ahat`` (A extended past its size along its last coalesced
mode, CuTe's semantics for B reaching past size(A)) is computed here from its definition.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest
from conftest import examples, layouts, shapes
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from layoutproof import (
    InadmissibleError,
    Layout,
    LayoutError,
    _,
    blocked_product,
    coalesce,
    compatible,
    complement,
    composition,
    filter,
    flat_divide,
    flat_product,
    idx2crd,
    inner_product,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    product_each,
    raked_product,
    right_inverse,
    size,
    slice_,
    slice_and_offset,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from layoutproof.inttuple import flatten, prefix_product, product, shape_div, unflatten

COMPOSITION_CONDITIONS = {
    "stride divisibility",
    "shape divisibility",
    "non-negative strides of B",
    "disjointness of B's modes in A",
}
COMPLEMENT_CONDITIONS = {"complement admissibility (stride chain)", "non-negative strides"}


# ----------------------------------------------------------------------------- brute-force helpers
def ev(L: Layout) -> np.ndarray:
    return np.asarray(L.eval_all(), dtype=np.int64)


def flat(L: Layout):
    return flatten(L.shape), flatten(L.stride)


def ref_coalesce(L: Layout):
    """The coalesced flat shape/stride, from the definition: drop size-1 modes, merge a
    mode into its left neighbour when s_prev * d_prev == d."""
    rs, rd = [], []
    for s, d in zip(*flat(L)):
        if s == 1:
            continue
        if rs and rs[-1] * rd[-1] == d:
            rs[-1] *= s
        else:
            rs.append(s)
            rd.append(d)
    return (rs, rd) if rs else ([1], [0])


def ref_coalesce_x(L: Layout):
    """Coalesced as composition sees its left operand: like ``ref_coalesce`` but the last
    leaf stays the last mode (merged into its predecessor only when it continues it), even
    with extent 1, since A's *own* last mode is the one that extends (CuTe C++)."""
    fs, fd = flat(L)
    rs, rd = [], []
    for k, (s, d) in enumerate(zip(fs, fd)):
        if s == 1 and k != len(fs) - 1:
            continue
        if rs and rs[-1] * rd[-1] == d:
            rs[-1] *= s
        else:
            rs.append(s)
            rd.append(d)
    return (rs, rd) if rs else ([1], [0])


def ahat(A: Layout, x) -> np.ndarray:
    """A at any x >= 0, its own last mode unbounded:
    sum_{i<last} ((x // P_i) % s_i) d_i + (x // P_last) d_last over ``ref_coalesce_x(A)``."""
    s, d = ref_coalesce_x(A)
    x = np.asarray(x, dtype=np.int64)
    out = np.zeros_like(x)
    for i in range(len(s) - 1):
        out = out + (x % s[i]) * d[i]
        x = x // s[i]
    return out + x * d[-1]


def mode(L: Layout, i: int) -> Layout:
    return L[i]


def modes(L: Layout) -> list:
    return list(L) if isinstance(L.shape, tuple) else [L]


def is_injective(L: Layout) -> bool:
    v = ev(L)
    return len(np.unique(v)) == len(v)


@cache
def ordered_factorizations(n: int) -> tuple:
    if n == 1:
        return ((),)
    out = []
    for f in range(2, n + 1):
        if n % f == 0:
            out += [(f,) + rest for rest in ordered_factorizations(n // f)]
    return tuple(out)


def representable(vals: np.ndarray) -> bool:
    """Is ``i -> vals[i]`` the function of some layout of size len(vals)?  Every layout
    function of size n is that of a flat layout whose shape is an ordered factorization of
    n (hierarchy does not change the function), and its strides are then forced: the value
    at the prefix products."""
    n = len(vals)
    for fs in ordered_factorizations(n):
        if not fs:
            return True
        pp = prefix_product(fs)
        cand = Layout(fs, tuple(int(vals[p]) for p in pp))
        if np.array_equal(ev(cand), vals):
            return True
    return False


def check_composition(A: Layout, B: Layout, R: Layout) -> None:
    """The composition post-condition, by brute force over B's whole domain."""
    assert R.size == B.size, (A, B, R)
    assert compatible(B, R), (A, B, R)
    np.testing.assert_array_equal(ev(R), ahat(A, ev(B)), err_msg=f"{A} o {B} -> {R}")


def check_inadmissible(e: InadmissibleError, conditions, domain: int | None = None) -> None:
    assert isinstance(e.condition, str) and e.condition in conditions, e.condition
    if domain is not None and e.witness is not None:
        assert isinstance(e.witness, int) and 0 <= e.witness < domain, e.witness


# ----------------------------------------------------------------------------- evaluation
@settings(max_examples=examples(150))
@given(layouts(max_size=96))
def test_evaluation_forms(L):
    v = L.eval_all()
    assert len(v) == L.size
    fs, fd = flat(L)
    ms = modes(L)
    for i in range(L.size):
        nat = idx2crd(i, L.shape)
        expect = inner_product(nat, L.stride) if isinstance(L.shape, tuple) else i * L.stride
        assert v[i] == expect == L(i) == L(nat)
        if L.rank >= 2:  # the "2-D" form: a 1-D coordinate per top-level mode
            per_mode = idx2crd(i, tuple(m.size for m in ms))
            assert L(*per_mode) == expect
    assert L.cosize == 1 + sum((s - 1) * abs(d) for s, d in zip(fs, fd))


# ----------------------------------------------------------------------------- coalesce / filter
@settings(max_examples=examples(300))
@given(layouts())
def test_coalesce(L):
    C = coalesce(L)
    assert C.size == L.size
    np.testing.assert_array_equal(ev(C), ev(L))
    assert C.depth <= 1
    assert coalesce(C) == C
    cs, cd = flat(C)
    assert (list(cs), list(cd)) == ref_coalesce(L)
    # maximally coalesced: no size-1 mode (unless 1:0), no mergeable neighbours
    if C.size == 1:
        assert C == Layout(1, 0)
    else:
        assert all(s > 1 for s in cs)
        assert all(cs[i] * cd[i] != cd[i + 1] for i in range(len(cs) - 1))
        assert isinstance(C.shape, int) == (len(cs) == 1)


@settings(max_examples=examples(200))
@given(st.data())
def test_coalesce_by_mode(data):
    L = data.draw(layouts(max_size=256))
    k = data.draw(st.integers(0, L.rank))
    profile = tuple(data.draw(st.sampled_from([1, 0, (1,)])) for _ in range(k))
    R = coalesce(L, profile)
    if isinstance(L.shape, tuple):
        assert R.rank == L.rank
        for i in range(L.rank):
            assert R[i] == (coalesce(L[i], profile[i]) if i < k else L[i])
        assert R[0] == coalesce(L[0]) or k == 0 or isinstance(profile[0], tuple)
    np.testing.assert_array_equal(ev(R), ev(L))
    assert R.size == L.size


@settings(max_examples=examples(300))
@given(layouts())
def test_filter(L):
    F = filter(L)
    assert set(ev(F).tolist()) == set(ev(L).tolist())
    assert filter(F) == F
    assert coalesce(F) == F
    fs, fd = flat(F)
    if F.size == 1:
        assert F == Layout(1, 0)
    else:
        assert all(d != 0 for d in fd) and all(s > 1 for s in fs)
    if is_injective(L):
        assert F.size == L.size


# ----------------------------------------------------------------------------- composition
@settings(max_examples=examples(600))
@given(layouts(max_size=256, kind="mixed"), layouts(max_size=64, kind="mixed"))
def test_composition_sound_random(A, B):
    """Either a typed refusal, or the post-condition holds on all of B's domain."""
    try:
        R = composition(A, B)
    except InadmissibleError as e:
        check_inadmissible(e, COMPOSITION_CONDITIONS, B.size)
        if e.condition == "non-negative strides of B":
            assert (ev(B) < 0).any()
        return
    check_composition(A, B, R)


@settings(max_examples=examples(400))
@given(st.data())
def test_composition_sound_small_strides(data):
    """Dense in the interesting region: flat A and B with small extents and strides."""
    ka = data.draw(st.integers(1, 4))
    kb = data.draw(st.integers(1, 3))
    A = Layout(
        tuple(data.draw(st.integers(1, 6)) for _ in range(ka)),
        tuple(data.draw(st.integers(-3, 16)) for _ in range(ka)),
    )
    B = Layout(
        tuple(data.draw(st.integers(1, 6)) for _ in range(kb)),
        tuple(data.draw(st.integers(0, 12)) for _ in range(kb)),
    )
    try:
        R = composition(A, B)
    except InadmissibleError as e:
        check_inadmissible(e, COMPOSITION_CONDITIONS, B.size)
        if e.condition == "disjointness of B's modes in A" and e.witness is not None:
            # the witness is where adding the modes' images separately goes wrong
            crd = idx2crd(e.witness, B.shape)
            truth = int(ahat(A, B(e.witness)))
            naive = sum(int(ahat(A, c * d)) for c, d in zip(flatten(crd), flatten(B.stride)))
            assert truth != naive
        return
    check_composition(A, B, R)


@settings(max_examples=examples(200))
@given(layouts(max_size=256), st.integers(1, 64))
def test_composition_int_and_none(A, n):
    assert composition(A, None) == A
    assert composition(A, _) == A
    try:
        R = composition(A, n)
    except InadmissibleError:
        with pytest.raises(InadmissibleError):
            composition(A, Layout(n))
        return
    assert R == composition(A, Layout(n))
    check_composition(A, Layout(n), R)


@settings(max_examples=examples(200))
@given(st.data())
def test_composition_tuple_tiler(data):
    """A tuple tiler composes mode by mode; modes of A beyond the tuple are dropped."""
    A = data.draw(layouts(max_size=256, kind="nonneg"))
    assume(isinstance(A.shape, tuple) and A.rank >= 1)
    k = data.draw(st.integers(1, A.rank))
    tiler = []
    for i in range(k):
        m = A[i]
        t = data.draw(st.sampled_from(["none", "int", "layout"]))
        if t == "none":
            tiler.append(None)
        elif t == "int":
            tiler.append(data.draw(st.sampled_from([d for d in range(1, m.size + 1) if m.size % d == 0])))
        else:
            tiler.append(data.draw(layouts(max_size=16, kind="nonneg", max_depth=1)))
    try:
        R = composition(A, tuple(tiler))
    except InadmissibleError as e:
        check_inadmissible(e, COMPOSITION_CONDITIONS)
        return
    assert R.rank == k
    for i, t in enumerate(tiler):
        if t is None:
            assert R[i] == A[i]
        else:
            B = t if isinstance(t, Layout) else Layout(t)
            check_composition(A[i], B, R[i])


@st.composite
def prefix_admissible(draw):
    """(A, n:r) with r a prefix product of coalesce(A)'s shape and n reaching an exact
    divisor of the mode it ends in: admissible by construction."""
    A = draw(layouts(max_size=256, kind="mixed"))
    cs, _cd = ref_coalesce_x(A)
    pp = prefix_product(tuple(cs))
    j = draw(st.integers(0, len(cs) - 1))
    k = draw(st.integers(j, len(cs) - 1))
    whole = 1
    for s in cs[j:k]:
        whole *= s
    if k == len(cs) - 1:
        m = draw(st.integers(1, 8))  # the last mode is unbounded
    else:
        m = draw(st.sampled_from([d for d in range(1, cs[k] + 1) if cs[k] % d == 0]))
    return A, Layout(whole * m, pp[j] if len(cs) > 1 else draw(st.sampled_from([1, 2, 3])))


@settings(max_examples=examples(300))
@given(prefix_admissible())
def test_composition_admissible_prefix(pair):
    A, B = pair
    R = composition(A, B)  # must not raise
    check_composition(A, B, R)


@st.composite
def refinement_admissible(draw):
    """(A, B) where B is a bijection of [0, size(A)) that refines A's flat shape: each leaf
    s of A is split into factors, laid out compactly in a random order inside the leaf."""
    A = draw(layouts(max_size=256, kind="mixed"))
    fs = flatten(A.shape)
    base = prefix_product(fs) if isinstance(A.shape, tuple) else (1,)
    base = flatten(base)
    bs, bd = [], []
    for s, p in zip(fs, base):
        factors = []
        rest = s
        while rest > 1 and draw(st.booleans()):
            f = draw(st.sampled_from([d for d in range(2, rest + 1) if rest % d == 0]))
            factors.append(f)
            rest //= f
        factors.append(rest)
        order = draw(st.permutations(range(len(factors))))
        strides = [0] * len(factors)
        cur = p
        for i in order:
            strides[i] = cur
            cur *= factors[i]
        if len(factors) == 1:
            bs.append(factors[0])
            bd.append(strides[0])
        else:
            bs.append(tuple(factors))
            bd.append(tuple(strides))
    return A, Layout(tuple(bs), tuple(bd))


@settings(max_examples=examples(300))
@given(refinement_admissible())
def test_composition_admissible_refinement(pair):
    A, B = pair
    assert sorted(ev(B).tolist()) == list(range(A.size))  # B permutes A's domain
    R = composition(A, B)  # must not raise
    check_composition(A, B, R)
    assert sorted(ev(R).tolist()) == sorted(ev(A).tolist())


@st.composite
def prefix_tiles(draw, shape):
    """A tile size per top-level mode: the product of the mode's first leaves times a
    divisor of the next leaf (the tiles that divide a mode's mixed radix)."""
    out = []
    for m in shape if isinstance(shape, tuple) else (shape,):
        fs = flatten(m)
        k = draw(st.integers(0, len(fs) - 1))
        t = product(fs[:k]) if k else 1
        out.append(t * draw(st.sampled_from([d for d in range(1, fs[k] + 1) if fs[k] % d == 0])))
    return tuple(out)


@settings(max_examples=examples(300))
@given(st.data())
def test_composition_admissible_divide_tile(data):
    """B = the first tile of a divide of A's own (compact) domain: admissible by
    construction, and A o B is the tile mode of zipped_divide(A, tiler)."""
    A = data.draw(layouts(max_size=256, kind="mixed"))
    tiles = data.draw(prefix_tiles(A.shape))
    tiler = tiles if isinstance(A.shape, tuple) else tiles[0]
    B = zipped_divide(Layout(A.shape), tiler)[0]
    R = composition(A, B)  # must not raise
    check_composition(A, B, R)
    np.testing.assert_array_equal(ev(R), ev(zipped_divide(A, tiler)[0]))


@settings(max_examples=examples(200))
@given(layouts(max_size=256), layouts(max_size=64, kind="nonneg"))
def test_composition_identities(A, B):
    # A o (its own compact layout) is A as a function
    R = composition(A, Layout(A.shape))
    np.testing.assert_array_equal(ev(R), ev(A))
    # a compact single mode on the left is the identity, also past its size
    np.testing.assert_array_equal(ev(composition(Layout(8), B)), ev(B))


@settings(max_examples=examples(200))
@given(
    layouts(max_size=128, kind="mixed"),
    layouts(max_size=32, kind="mixed"),
    layouts(max_size=16, kind="nonneg"),
)
def test_composition_associative_in_domain(A, B, C):
    if not (ev(C).max() < B.size and ev(B).min() >= 0 and ev(B).max() < A.size):
        return
    try:
        left = composition(composition(A, B), C)
        right = composition(A, composition(B, C))
    except InadmissibleError:
        return
    np.testing.assert_array_equal(ev(left), ev(right))
    np.testing.assert_array_equal(ev(left), ev(A)[ev(B)[ev(C)]])


SINGLE_MODE_AS = [
    Layout((6, 2), (1, 7)),
    Layout((4, 6), (1, 5)),
    Layout((3, 4), (1, 10)),
    Layout((2, 3, 4), (1, 2, 6)),
    Layout((4, (2, 2)), (2, (1, 8))),
    Layout((2, 2, 2), (0, 1, 4)),
    Layout((3, 5), (7, 1)),
    Layout((4, 8), (8, 1)),
    Layout((2, 4), (1, 0)),
    Layout((5, 3), (2, 30)),
    Layout((2, 3), (-1, 4)),
    Layout(12, 3),
    Layout((2, (3, 2)), (12, (1, 0))),
    Layout((8,), (2,)),
    Layout((4, 6, 4), (0, 4, 0)),
    Layout((5, 3), (9, 3)),
    Layout((4, 6, 8, 10), (2, 3, 5, 7)),
]


def _single_mode_cases():
    for A in SINGLE_MODE_AS:
        for n in range(1, 13):
            for r in range(0, 13):
                yield A, Layout(n, r)


def test_composition_single_mode_exhaustive_soundness():
    """All B = n:r, n, r <= 12, against a fixed set of A: never a wrong layout, and every
    refusal names a condition with a witness in B's domain; a "stride divisibility" witness
    is a point where j -> Ahat(r*j) stops being linear (the one-mode answer n:Ahat(r) is
    wrong there)."""
    refused = 0
    for A, B in _single_mode_cases():
        vals = ahat(A, ev(B))
        try:
            R = composition(A, B)
        except InadmissibleError as e:
            refused += 1
            check_inadmissible(e, COMPOSITION_CONDITIONS, B.size)
            assert e.witness is not None, (A, B)
            if e.condition == "stride divisibility":
                assert vals[e.witness] != e.witness * vals[1], (A, B, e.witness)
            continue
        check_composition(A, B, R)
    assert refused > 0  # the set does exercise refusals


def test_composition_single_mode_exhaustive_completeness():
    """Completeness for one-mode B: composition refuses only when no layout of size n
    reproduces j -> Ahat(r*j) (checked against every layout of size n), e.g. it returns
    (4,6):(1,5) o 2:3 = 2:3, which CuTe's static stride divisibility rejects."""
    assert composition(Layout((4, 6), (1, 5)), Layout(2, 3)) == Layout(2, 3)
    missed = []
    for A, B in _single_mode_cases():
        try:
            composition(A, B)
        except InadmissibleError as e:
            if representable(ahat(A, ev(B))):
                missed.append((str(A), str(B), e.condition))
    assert not missed, f"{len(missed)} needless refusals, e.g. {missed[:5]}"


@settings(max_examples=examples(300))
@given(st.data())
def test_composition_single_mode_random_sound_and_complete(data):
    """The same, on random flat A (stride 0 and negative strides included) and n, r <= 24."""
    k = data.draw(st.integers(1, 4))
    A = Layout(
        tuple(data.draw(st.integers(1, 6)) for _ in range(k)),
        tuple(data.draw(st.integers(-3, 16)) for _ in range(k)),
    )
    B = Layout(data.draw(st.integers(1, 24)), data.draw(st.integers(0, 24)))
    vals = ahat(A, ev(B))
    try:
        R = composition(A, B)
    except InadmissibleError as e:
        check_inadmissible(e, COMPOSITION_CONDITIONS, B.size)
        assert not representable(vals), (A, B, e.condition)
        return
    check_composition(A, B, R)


# ----------------------------------------------------------------------------- complement
def chain_fails(L: Layout) -> str | None:
    """Why no complement exists, from the definition (None when it does)."""
    mods = [(d, s) for s, d in zip(*flat(L)) if s != 1 and d != 0]
    if any(d < 0 for d, _s in mods):
        return "negative"
    mods.sort()
    cur = 1
    for d, s in mods:
        if d % cur:
            return "chain"
        cur = s * d
    return None


def check_complement(L: Layout, M, cover: bool = True) -> Layout | None:
    """The complement post-condition by brute force; returns C (None when refused).
    ``cover``: also check that (L, C) covers [0, M)."""
    why = chain_fails(L)
    try:
        C = complement(L, M)
    except InadmissibleError as e:
        assert why is not None, (L, M, e)
        check_inadmissible(e, COMPLEMENT_CONDITIONS)
        assert e.condition == (
            "non-negative strides" if why == "negative" else "complement admissibility (stride chain)"
        )
        return None
    assert why is None, (L, M, C, why)
    FC = make_layout(filter(L), C)
    assert sorted(ev(FC).tolist()) == list(range(FC.size)), (L, M, C)  # a bijection onto [0, n)
    if cover:  # ... that covers [0, M)
        assert FC.size >= (L.cosize if M is None else size(M)), (L, M, C)
    assert set(ev(C).tolist()) & set(ev(L).tolist()) == {0}
    assert C(0) == 0
    _cs, cd = flat(C)
    assert all(cd[i] < cd[i + 1] for i in range(len(cd) - 1)), C
    assert coalesce(C) == C
    return C


def covered_extent(L: Layout) -> int:
    return max([s * d for s, d in zip(*flat(filter(L)))] + [1])


@settings(max_examples=examples(400))
@given(layouts(max_size=128, kind="mixed"), st.one_of(st.none(), st.integers(1, 600)))
def test_complement(L, M):
    C = check_complement(L, M)
    if C is None:
        return
    Mi = L.cosize if M is None else M
    E = covered_extent(L)
    FC = make_layout(filter(L), C)
    assert FC.size == -(-Mi // E) * E  # M rounded up to a multiple of what L covers
    if M is None:
        assert complement(L) == complement(L, L.cosize)


SHAPE_COTARGETS = st.one_of(
    st.tuples(st.integers(1, 8), st.integers(1, 64)),
    st.tuples(st.integers(1, 6), st.tuples(st.integers(1, 4), st.integers(1, 8))),
)


@settings(max_examples=examples(300))
@given(layouts(max_size=128, kind="mixed"), SHAPE_COTARGETS)
def test_complement_shape_cotarget(L, M):
    """A Shape cotarget that the covered extent divides evenly keeps its structure (C++);
    otherwise its size is rounded up as an integer cotarget's (docs/semantics.md section 3).
    Either way (L, C) fills exactly [0, E * ceil(size(M) / E))."""
    C = check_complement(L, M, cover=False)
    if C is None:
        return
    E = covered_extent(L)
    assert make_layout(filter(L), C).size == E * (-(-product(M) // E)), (L, M, C)


@settings(max_examples=examples(300))
@given(layouts(max_size=128, kind="mixed"), SHAPE_COTARGETS)
def test_complement_shape_cotarget_covers_the_cotarget(L, M):
    """The post-condition: (L, C) fills [0, M') with M' >= size(M)."""
    check_complement(L, M)


def test_complement_shape_cotarget_examples():
    assert complement(Layout(4, 2), (4, 6)) == Layout((2, 3), (1, 8))
    # 2 does not divide (3,4) mode by mode: C++ gives 8:2; the size 12 is rounded up instead
    assert complement(Layout(2, 1), (3, 4)) == Layout(6, 2)
    # 3 does not divide the modes of (2,2): the fold gives (1,1), and (3:1, C) must still
    # cover [0, 4)
    L = Layout(3, 1)
    C = complement(L, (2, 2))
    assert make_layout(L, C).size >= 4, C


# ----------------------------------------------------------------------------- inverses
@settings(max_examples=examples(300))
@given(layouts(max_size=256, kind="mixed"))
def test_right_inverse(L):
    R = right_inverse(L)
    r = ev(R)
    assert ((0 <= r) & (r < L.size)).all(), (L, R)
    np.testing.assert_array_equal(ev(L)[r], np.arange(R.size), err_msg=f"{L} -> {R}")
    if sorted(ev(L).tolist()) == list(range(L.size)):  # a bijection: R is its inverse
        assert R.size == L.size


@settings(max_examples=examples(100))
@given(layouts(max_size=256, kind="compact"))
def test_right_inverse_of_compact_is_total(L):
    R = right_inverse(L)
    assert R.size == L.size
    np.testing.assert_array_equal(ev(L)[ev(R)], np.arange(L.size))
    np.testing.assert_array_equal(ev(R)[ev(L)], np.arange(L.size))


def left_inverse_refusal(L: Layout) -> set:
    """Why left_inverse refuses, from its documented conditions on the sorted non-zero
    strides of coalesce(L): a negative stride, or, at the first offending pair of
    neighbours, overlap (s_k d_k > d_(k+1)) and/or a stride that does not divide the next.
    Empty when it must succeed."""
    cs, cd = ref_coalesce(L)
    mods = sorted((d, s) for s, d in zip(cs, cd) if s != 1 and d != 0)
    if any(d < 0 for d, _s in mods):
        return {"non-negative strides"}
    for (d0, s0), (d1, _s1) in zip(mods, mods[1:]):
        why = set()
        if s0 * d0 > d1:
            why.add("injectivity (non-overlapping modes)")
        if d1 % d0:
            why.add("left-inverse divisibility")
        if why:
            return why
    return set()


def left_inverse_cpp(L: Layout) -> Layout:
    """C++ 2025's construction, (d0, d1/d0, ..., s_last) : (0, p0, p1, ...), coalesced."""
    cs, cd = ref_coalesce(L)
    pp = [1]
    for x in cs[:-1]:
        pp.append(pp[-1] * x)
    mods = sorted((d, s, p) for s, d, p in zip(cs, cd, pp) if s != 1 and d != 0)
    if not mods:
        return Layout(1, 0)
    rs, rd = [mods[0][0]], [0]
    for (d0, _s0, p0), (d1, _s1, _p1) in zip(mods, mods[1:]):
        rs.append(d1 // d0)
        rd.append(p0)
    rs.append(mods[-1][1])
    rd.append(mods[-1][2])
    return coalesce(Layout(tuple(rs), tuple(rd)))


@settings(max_examples=examples(300))
@given(layouts(max_size=256, kind="mixed"))
def test_left_inverse(L):
    why = left_inverse_refusal(L)
    try:
        R = left_inverse(L)
    except InadmissibleError as e:
        assert e.condition in why, (L, e.condition, why)
        return
    if not why:  # C++'s construction applies: its answer (the exact search covers the rest)
        assert R == left_inverse_cpp(L), (L, R)
    lv = ev(L)
    assert lv.max() < R.size, (L, R)
    back = ev(R)[lv]
    np.testing.assert_array_equal(lv[back], lv)
    if is_injective(L):
        np.testing.assert_array_equal(back, np.arange(L.size))


def test_left_inverse_beyond_the_stride_chain():
    """(2,2):(1,3) has no complement, but has a left inverse (CuTe C++ 2025, PyCuTe)."""
    L = Layout((2, 2), (1, 3))
    R = left_inverse(L)
    assert [R(L(i)) for i in range(4)] == [0, 1, 2, 3]


# ----------------------------------------------------------------------------- divides
@settings(max_examples=examples(300))
@given(layouts(max_size=256, kind="mixed"), layouts(max_size=32, kind="mixed", max_depth=2))
def test_logical_divide(A, B):
    try:
        D = logical_divide(A, B)
    except InadmissibleError:
        return
    C = complement(B, A.size)
    assert D == composition(A, make_layout(B, C))
    check_composition(A, B, D[0])
    if is_injective(B) and B.size * C.size == A.size:  # (B, C) permutes A's domain
        assert sorted(ev(D).tolist()) == sorted(ev(A).tolist())
    Z = zipped_divide(A, B)
    np.testing.assert_array_equal(ev(Z), ev(D))
    check_composition(A, B, Z[0])
    T, F = tiled_divide(A, B), flat_divide(A, B)
    np.testing.assert_array_equal(ev(T), ev(Z))
    np.testing.assert_array_equal(ev(F), ev(Z))
    assert T[0] == Z[0] and T.rank == 1 + Z[1].rank
    assert F.rank == Z[0].rank + Z[1].rank


@settings(max_examples=examples(150))
@given(layouts(max_size=256, kind="mixed"), st.integers(1, 16))
def test_integer_tilers_are_compact_layouts(A, n):
    """An integer tiler n means the layout n:1, for every divide and product."""
    for f in (
        logical_divide,
        zipped_divide,
        tiled_divide,
        flat_divide,
        logical_product,
        zipped_product,
        tiled_product,
        flat_product,
    ):
        try:
            got = f(A, n)
        except InadmissibleError as e:
            with pytest.raises(InadmissibleError) as again:
                f(A, Layout(n))
            assert again.value.condition == e.condition
            continue
        assert got == f(A, Layout(n)), f.__name__


@st.composite
def tuple_tilers(draw, A, divide=True):
    k = draw(st.integers(1, A.rank))
    out = []
    for i in range(k):
        n = A[i].size
        t = draw(st.sampled_from(["none", "int", "layout"]))
        if t == "none":
            out.append(None)
        elif t == "int":
            out.append(
                draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
                if divide
                else draw(st.integers(1, 4))
            )
        else:
            out.append(draw(layouts(max_size=8 if divide else 4, kind="mixed", max_depth=1)))
    return tuple(out)


@settings(max_examples=examples(200))
@given(st.data())
def test_divide_tuple_tiler(data):
    A = data.draw(layouts(max_size=256, kind="mixed"))
    assume(isinstance(A.shape, tuple) and A.rank >= 1)
    T = data.draw(tuple_tilers(A))
    k = len(T)
    try:
        D = logical_divide(A, T)
    except InadmissibleError:
        return
    assert D.rank == A.rank
    for i in range(A.rank):
        expect = A[i] if i >= k or T[i] is None else logical_divide(A[i], T[i])
        assert D[i] == expect
    Z = zipped_divide(A, T)
    for i in range(k):
        if T[i] is None:
            np.testing.assert_array_equal(ev(Z[0][i]), [0])  # the tile of a kept mode is 1
            assert Z[1][i] == A[i]
        else:
            assert Z[0][i] == D[i][0] and Z[1][i] == D[i][1]
    for j in range(k, A.rank):
        assert Z[1][j] == A[j]
    assert Z.size == D.size
    np.testing.assert_array_equal(ev(tiled_divide(A, T)), ev(Z))
    np.testing.assert_array_equal(ev(flat_divide(A, T)), ev(Z))


# ----------------------------------------------------------------------------- products
@settings(max_examples=examples(300))
@given(layouts(max_size=64, kind="mixed", max_depth=2), layouts(max_size=16, kind="mixed", max_depth=2))
def test_logical_product(A, B):
    try:
        P = logical_product(A, B)
    except InadmissibleError:
        return
    C = complement(A, A.size * B.cosize)
    assert P == make_layout(A, composition(C, B))
    assert P[0] == A
    check_composition(C, B, P[1])
    for f in (zipped_product, tiled_product, flat_product):
        np.testing.assert_array_equal(ev(f(A, B)), ev(P), err_msg=f.__name__)


@settings(max_examples=examples(150))
@given(layouts(max_size=32, kind="compact", max_depth=2), layouts(max_size=16, kind="compact", max_depth=2))
def test_product_of_compact_layouts_is_a_bijection(A, B):
    n = A.size * B.size
    for f in (logical_product, blocked_product, raked_product):
        P = f(A, B)
        assert sorted(ev(P).tolist()) == list(range(n)), f.__name__
    P = logical_product(A, B)
    idx = np.arange(n)  # P(a, b) == A(a) + size(A) * B(b)
    np.testing.assert_array_equal(ev(P), ev(A)[idx % A.size] + A.size * ev(B)[idx // A.size])


@settings(max_examples=examples(200))
@given(layouts(max_size=64, kind="mixed", max_depth=2), layouts(max_size=16, kind="mixed", max_depth=2))
def test_blocked_and_raked_product(A, B):
    r = max(A.rank, B.rank)
    pad = Layout(1, 0)
    Ap = modes(A) + [pad] * (r - A.rank)
    Bp = modes(B) + [pad] * (r - B.rank)
    try:
        BP = blocked_product(A, B)
        RP = raked_product(A, B)
    except InadmissibleError:
        return
    Apl, Bpl = make_layout(*Ap), make_layout(*Bp)
    CB = composition(complement(Apl, Apl.size * Bpl.cosize), Bpl)
    assert BP.rank == RP.rank == r
    for i in range(r):
        CBi = CB[i] if r > 1 else CB
        np.testing.assert_array_equal(ev(BP[i][0]), ev(Ap[i]))
        np.testing.assert_array_equal(ev(BP[i][1]), ev(CBi))
        np.testing.assert_array_equal(ev(RP[i][0]), ev(CBi))
        np.testing.assert_array_equal(ev(RP[i][1]), ev(Ap[i]))
    image = sorted(ev(logical_product(Apl, Bpl)).tolist())
    assert sorted(ev(BP).tolist()) == sorted(ev(RP).tolist()) == image


@settings(max_examples=examples(150))
@given(st.data())
def test_product_tuple_tiler(data):
    A = data.draw(layouts(max_size=64, kind="mixed", max_depth=2))
    assume(isinstance(A.shape, tuple) and A.rank >= 1)
    T = data.draw(tuple_tilers(A, divide=False))
    k = len(T)
    try:
        P = logical_product(A, T)
    except InadmissibleError:
        return
    assert P.rank == A.rank
    for i in range(A.rank):
        assert P[i] == (A[i] if i >= k or T[i] is None else logical_product(A[i], T[i]))
    Z = zipped_product(A, T)
    for i in range(k):
        if T[i] is not None:
            assert Z[0][i] == P[i][0] and Z[1][i] == P[i][1]
    np.testing.assert_array_equal(ev(tiled_product(A, T)), ev(Z))
    np.testing.assert_array_equal(ev(flat_product(A, T)), ev(Z))


# ----------------------------------------------------------------------------- tile_to_shape
@settings(max_examples=examples(200))
@given(st.data())
def test_tile_to_shape(data):
    block = data.draw(layouts(max_size=32, kind="mixed", max_depth=2))
    r = block.rank
    k = data.draw(st.integers(r, r + 1))
    bpe = [m.size for m in modes(block)] + [1] * (k - r)
    target = [b * data.draw(st.integers(1, 4)) for b in bpe]
    i = data.draw(st.integers(0, k - 1))
    divs = [d for d in range(2, target[i]) if target[i] % d == 0]
    if divs and data.draw(st.booleans()):  # a hierarchical target mode
        d = data.draw(st.sampled_from(divs))
        target[i] = (d, target[i] // d)
    target = tuple(target)
    order = data.draw(st.none() | st.permutations(range(k)).map(tuple))
    compact = sorted(ev(block).tolist()) == list(range(block.size))
    try:
        T = tile_to_shape(block, target, order)
    except InadmissibleError as e:
        assert not compact, (block, target, order, e)  # a compact block always tiles
        check_inadmissible(e, COMPOSITION_CONDITIONS | COMPLEMENT_CONDITIONS)
        return
    assert product_each(T.shape) == product_each(target)
    # the first block of the result is the block itself
    for idx in range(int(np.prod(bpe))):
        crd = idx2crd(idx, tuple(bpe))
        expect = block(*crd[:r]) if r > 1 else block(crd[0])
        got = T(*crd) if k > 1 else T(crd[0])
        assert got == expect, (block, target, order, T, crd)


def test_tile_to_shape_integer_target():
    """An integer target is a rank-1 shape: the result's product_each is that integer (C++
    coalesces with the integer product shape as profile, giving 8:1)."""
    T = tile_to_shape(Layout(2, 1), 8)
    assert T.eval_all().tolist() == list(range(8))
    assert product_each(T.shape) == product_each(8) == 8, T
    assert tile_to_shape(Layout(2, 1), (8,)) == Layout((8,), (1,))


# ----------------------------------------------------------------------------- compatibility
@st.composite
def refinement(draw, s, depth=0):
    """A shape that ``s`` is compatible with: leaves split into factors or wrapped."""
    if isinstance(s, tuple):
        return tuple(draw(refinement(e, depth + 1)) for e in s)
    c = draw(st.integers(0, 3)) if depth < 8 else 0
    if c == 0 or s == 1 and c == 1:
        return s
    if c == 1:
        f = draw(st.sampled_from([d for d in range(1, s + 1) if s % d == 0]))
        return (f, s // f)
    if c == 2:
        return (s,)
    return (draw(refinement(s, depth + 1)),)


@settings(max_examples=examples(300))
@given(st.data())
def test_compatible_partial_order(data):
    a = data.draw(shapes(max_size=64))
    b = data.draw(refinement(a))
    c = data.draw(refinement(b))
    x = data.draw(shapes(max_size=64))
    for s in (a, b, c, x):
        assert compatible(s, s)
        assert compatible(size(s), s)  # integers are minimal
    assert compatible(a, b) and compatible(b, c) and compatible(a, c)
    if a != b:
        assert not compatible(b, a)
    for p, q in itertools.permutations((a, b, c, x), 2):
        if compatible(p, q):
            assert size(p) == size(q)
            if compatible(q, p):
                assert p == q


@settings(max_examples=examples(300))
@given(st.data())
def test_compatible_means_coordinates_carry_over(data):
    """a <= b  iff  every natural coordinate of a is a coordinate of b, at the same index."""
    a = data.draw(shapes(max_size=48))
    b = data.draw(st.one_of(refinement(a), shapes(max_size=48)))
    if data.draw(st.booleans()):
        a, b = b, a
    if size(a) != size(b):
        assert not compatible(a, b)
        return
    Lb = Layout(b)
    carries = True
    for i in range(size(a)):
        try:
            if Lb(idx2crd(i, a)) != i:
                carries = False
                break
        except LayoutError:
            carries = False
            break
    assert compatible(a, b) == carries, (a, b)


# ----------------------------------------------------------------------------- slicing
@st.composite
def slice_coords(draw, shape):
    """A coordinate of ``shape`` in which some modes are wildcards (``_`` or None)."""
    c = draw(st.integers(0, 4))
    if c == 0:
        return draw(st.sampled_from([_, None]))
    if isinstance(shape, tuple) and c >= 2:
        return tuple(draw(slice_coords(e)) for e in shape)
    return draw(st.integers(0, product(shape) - 1))


def _holes(c) -> int:
    if c is _ or c is None:
        return 1
    if isinstance(c, tuple):
        return sum(_holes(e) for e in c)
    return 0


def _fill(c, it):
    if c is _ or c is None:
        return next(it)
    if isinstance(c, tuple):
        return tuple(_fill(e, it) for e in c)
    return c


@settings(max_examples=examples(300))
@given(st.data())
def test_slice_and_offset(data):
    L = data.draw(layouts(max_size=128))
    crd = data.draw(slice_coords(L.shape))
    sub, off = slice_and_offset(crd, L)
    assert slice_(crd, L) == sub
    if crd is _ or crd is None:
        assert (sub, off) == (L, 0)
        assert L(crd) == L
        return
    if not isinstance(crd, tuple):
        assert sub.size == 1 and off == L(crd)
        return
    n = _holes(crd)
    assert sub.rank == n or (n == 0 and sub.size == 1)
    for j in range(sub.size):
        fill = idx2crd(j, sub.shape)  # one coordinate per wildcard, in order
        full = _fill(crd, iter(fill))
        assert L(full) == off + sub(j), (L, crd, j)
    if n:
        assert L(crd) == sub  # a call with wildcards slices (like C++, no offset)
        if len(crd) > 1:
            assert L(*crd) == sub


def test_shape_div_matches_definition_on_small_ints():
    for a in range(1, 25):
        for b in range(1, 25):
            if a % b == 0:
                assert shape_div(a, b) == a // b
            elif b % a == 0:
                assert shape_div(a, b) == 1
            else:
                with pytest.raises(InadmissibleError):
                    shape_div(a, b)


def test_unflatten_inverts_flatten_on_layout_strides():
    L = Layout(((2, 3), (4, (5, 1))), ((1, 2), (6, (24, 0))))
    assert unflatten(flatten(L.stride), L.shape) == L.stride
