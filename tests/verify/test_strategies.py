"""layoutproof.verify.strategies: every strategy keeps its promise, checked by brute force (every
offset evaluated) or by the operation's post-condition (layoutproof.verify), on the values
it generates.  The generation is constructive: the health checks run here unsuppressed
(``STRICT``), so a strategy that filtered too much or generated too slowly would fail.
"""

from __future__ import annotations

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutproof import (
    ComposedLayout,
    Layout,
    LayoutRight,
    MalformedLayoutError,
    Swizzle,
    assuming,
    coalesce,
    complement,
    composition,
    flat_divide,
    logical_divide,
    tiled_divide,
    verify,
    zipped_divide,
)
from layoutproof.inttuple import congruent, flatten, product
from layoutproof.verify import strategies as S

# health checks on (the repository profile suppresses too_slow and filter_too_much)
STRICT = settings(suppress_health_check=[], max_examples=examples(60))


def offsets(L) -> list:
    return [int(v) for v in L.eval_all()]


def depth_of(s) -> int:
    return 0 if type(s) is not tuple else 1 + max((depth_of(e) for e in s), default=0)


def ranks_of(s) -> list:
    if type(s) is not tuple:
        return []
    return [len(s)] + [r for e in s for r in ranks_of(e)]


# ----------------------------------------------------------------------------- shapes, strides
@STRICT
@given(st.data(), st.integers(1, 300), st.integers(1, 4), st.integers(0, 3), st.integers(1, 9))
def test_shapes_respect_their_bounds(data, max_size, max_rank, max_depth, max_extent):
    s = data.draw(S.shapes(max_size=max_size, max_rank=max_rank, max_depth=max_depth, max_extent=max_extent))
    fs = flatten(s)
    assert all(type(e) is int and 1 <= e <= max_extent for e in fs)
    assert product(s) <= max_size
    assert depth_of(s) <= max_depth
    assert all(1 <= r <= max_rank for r in ranks_of(s))
    assert Layout(s).size == product(s)


@STRICT
@given(st.data(), st.sampled_from(S.STRIDE_KINDS))
def test_strides_are_congruent_and_of_their_kind(data, kind):
    s = data.draw(S.shapes(max_size=64))
    d = data.draw(S.strides(s, kind, max_stride=10))
    assert congruent(s, d)
    L = Layout(s, d)
    fd, v = flatten(d), offsets(L)
    if kind == "any":
        assert all(-10 <= x <= 10 for x in fd)
    elif kind == "nonneg":
        assert all(0 <= x <= 10 for x in fd)
    elif kind == "positive":
        assert all(1 <= x <= 10 for x in fd)
    elif kind == "left":
        assert d == Layout(s).stride
    elif kind == "right":
        assert d == LayoutRight(s).stride
    elif kind in ("compact", "bijective"):
        assert sorted(v) == list(range(L.size))
    elif kind == "injective":
        assert len(set(v)) == len(v) and min(v) >= 0


def test_strides_reject_an_unknown_kind():
    with pytest.raises(MalformedLayoutError, match="stride kind"):
        S.strides((2, 2), "diagonal")


# ----------------------------------------------------------------------------- layouts
@STRICT
@given(S.layouts(max_size=128, kind="mixed"))
def test_layouts_are_valid(L):
    assert isinstance(L, Layout) and L.size <= 128
    assert Layout.parse(str(L)) == L  # well-formed: the notation reads back


@STRICT
@given(S.compact_layouts())
def test_compact_layouts_fill_0_to_size(L):
    assert sorted(offsets(L)) == list(range(L.size))


@STRICT
@given(S.compact_layouts(major="left"), S.compact_layouts(major="right"))
def test_compact_layouts_column_and_row_major(L, R):
    assert L == Layout(L.shape)
    assert R == LayoutRight(R.shape)


@STRICT
@given(S.injective_layouts())
def test_injective_layouts_are_injective_by_brute_force(L):
    v = offsets(L)
    assert len(set(v)) == len(v)


@STRICT
@given(S.bijective_layouts())
def test_bijective_layouts_are_bijections_onto_0_size(L):
    assert sorted(offsets(L)) == list(range(L.size))


# ----------------------------------------------------------------------------- admissible pairs
@STRICT
@given(S.complement_pairs())
def test_complement_pairs_are_admissible(pair):
    L, M = pair
    C = complement(L, M)  # raises if not admissible
    assert verify.postcondition("complement", C, L, M)


@settings(max_examples=examples(30))
@given(S.complement_pairs(cotarget="shape"), S.complement_pairs(cotarget="int"))
def test_complement_pairs_cotarget_kinds(p, q):
    assert type(p[1]) is tuple and all(type(e) is int and e >= 1 for e in p[1])
    assert type(q[1]) is int and q[1] >= 1
    assert q[1] >= max([d * s for s, d in zip(flatten(q[0].shape), flatten(q[0].stride)) if d] + [1])


@STRICT
@given(S.composition_pairs())
def test_composition_pairs_are_admissible_and_meet_the_postcondition(pair):
    A, B = pair
    R = composition(A, B)  # raises if not admissible
    assert verify.postcondition("composition", R, A, B)


@settings(max_examples=examples(60))
@given(S.composition_pairs(extend=False, broadcast=False, a_kind="injective"))
def test_composition_pairs_inside_a(pair):
    A, B = pair
    assert max(offsets(B)) < A.size and min(flatten(B.stride)) >= 0
    R = composition(A, B)
    assert offsets(R) == [A(B(i)) for i in range(B.size)]


# ----------------------------------------------------------------------------- tilers
@STRICT
@given(S.tiler_pairs())
def test_tilers_are_admissible_for_the_divides(pair):
    L, T = pair
    R = logical_divide(L, T)
    assert verify.postcondition("logical_divide", R, L, T)
    for op in (zipped_divide, tiled_divide, flat_divide):
        assert op(L, T).size == L.size
    if not isinstance(T, tuple):
        composition(L, T)


@settings(max_examples=examples(40))
@given(st.data(), st.sampled_from([["int"], ["layout"], ["tuple"], ["int", "layout"]]))
def test_tilers_of_each_kind(data, kinds):
    L = data.draw(S.layouts(max_size=64))
    T = data.draw(S.tilers(L, kinds=kinds))
    kind = {int: "int", Layout: "layout", tuple: "tuple"}[type(T)]
    assert kind in kinds
    if kind == "int":
        assert L.size % T == 0
    logical_divide(L, T)


@settings(max_examples=examples(40))
@given(S.tilers())
def test_general_tilers_are_well_formed(T):
    def ok(t):
        return (type(t) is int and t >= 1) or isinstance(t, Layout)

    assert ok(T) or (type(T) is tuple and all(t is None or ok(t) for t in T))


def test_tilers_reject_bad_arguments():
    with pytest.raises(MalformedLayoutError):
        S.tilers(kinds=["diagonal"])
    with pytest.raises(MalformedLayoutError):
        S.tilers((4, 2))


# ----------------------------------------------------------------------------- swizzles
@STRICT
@given(st.data(), st.integers(2, 20), st.booleans())
def test_swizzles_are_valid(data, max_bits, neg):
    sw = data.draw(S.swizzles(max_bits=max_bits, allow_identity=False, negative_shift=neg))
    b, m, s = sw.bits, sw.base, sw.shift
    assert b >= 1 and m >= 0 and abs(s) >= b and m + b + abs(s) <= max_bits
    assert Swizzle(b, m, s) == sw
    if sw.size <= 4096:
        xs = list(range(sw.size))
        assert sorted(sw(x) for x in xs) == xs and all(sw(sw(x)) == x for x in xs)


@STRICT
@given(S.swizzled_layouts())
def test_swizzled_layouts_are_bijections(C):
    assert isinstance(C, ComposedLayout) and C.swizzle is not None
    assert C.layout_b.size % C.swizzle.size == 0
    assert sorted(C(i) for i in range(C.size)) == list(range(C.size))


@settings(max_examples=examples(30))
@given(S.swizzled_layouts(bijective=False, swizzle=S.swizzles(max_bits=6)))
def test_swizzled_layouts_any(C):
    assert isinstance(C, ComposedLayout)
    assert [C(i) for i in range(C.size)] == [C.swizzle(C.layout_b(i)) for i in range(C.size)]


def test_swizzles_reject_bad_bounds():
    with pytest.raises(MalformedLayoutError):
        S.swizzles(max_bits=65)
    with pytest.raises(MalformedLayoutError):
        S.swizzles(max_bits=1, allow_identity=False)


# ----------------------------------------------------------------------------- symbolic layouts
@settings(max_examples=examples(15), suppress_health_check=[])
@given(S.symbolic_layouts())
def test_symbolic_layouts_are_meaningful_under_their_assumptions(triple):
    L, facts, syms = triple
    assert L.is_symbolic and set(syms) == set(L.free_symbols)
    assert all(isinstance(f, str) for f in facts)
    with assuming(*facts):
        assert Layout.parse(str(L)) == L
    # every assignment that satisfies the facts gives a valid concrete layout
    for v in (128, 256, 384):
        C = L.subs({X: v for X in syms})
        assert not C.is_symbolic and C.size == product(flatten(C.shape))
    # proved, or unknown when Z3 meets nonlinear products of one symbol; never refuted
    assert verify.equal(coalesce(L), L, assume=facts, timeout_ms=500).status != "refuted"


def test_symbolic_layouts_options():
    with pytest.raises(MalformedLayoutError):
        S.symbolic_layouts(kind="diagonal")
    with pytest.raises(MalformedLayoutError):
        S.symbolic_layouts(names=("M",), max_symbols=2)
    triples = S.sample(S.symbolic_layouts(names=("BLK",), kind="left"), 10)
    assert all({str(X) for X in syms} == {"BLK"} for _, _, syms in triples)
    for L, facts, _ in triples:
        with assuming(*facts):
            assert L.stride == Layout(L.shape).stride


# ----------------------------------------------------------------------------- sample
def test_sample_is_reproducible():
    a = S.sample(S.layouts(), 20, seed=3)
    assert a == S.sample(S.layouts(), 20, seed=3)
    assert len(a) == 20
    assert S.sample(S.layouts(), 0) == []
    assert len(S.sample(st.just(1), 5)) <= 5


def test_options_are_validated():
    for bad in (dict(max_size=0), dict(max_rank=0), dict(max_depth=-1), dict(max_extent=0)):
        with pytest.raises(MalformedLayoutError):
            S.shapes(**bad)
    with pytest.raises(MalformedLayoutError):
        S.compact_layouts(major="diagonal")
    with pytest.raises(MalformedLayoutError):
        S.complement_pairs(cotarget="float")


def test_import_of_layoutproof_does_not_import_the_strategies():
    import layoutproof

    assert not hasattr(layoutproof, "shapes") and "strategies" not in layoutproof.__all__


@pytest.mark.parametrize(
    "name", [n for n in S.__all__ if n not in ("STRIDE_KINDS", "CONDITION_SYMBOLS", "sample")]
)
def test_every_strategy_is_documented_with_an_example(name):
    doc = getattr(S, name).__doc__ or ""
    assert ">>> " in doc, f"{name} has no example"


# ----------------------------------------------------------------------------- the old import path
def test_the_old_import_path_warns_and_is_the_same_module(monkeypatch):
    import importlib
    import sys

    import layoutproof

    # a fresh import of the alias (another test may have imported it already)
    monkeypatch.delitem(sys.modules, "layoutproof.strategies", raising=False)
    if "strategies" in vars(layoutproof):
        monkeypatch.delattr(layoutproof, "strategies")
    with pytest.warns(DeprecationWarning, match=r"layoutproof\.verify\.strategies"):
        old = importlib.import_module("layoutproof.strategies")
    assert old is S
    assert sys.modules["layoutproof.strategies"] is S
    from layoutproof import strategies as again

    assert again is S
