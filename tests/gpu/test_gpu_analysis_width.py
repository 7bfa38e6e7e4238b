"""Index width of users' layouts (gpu/analysis/width.py): a brute-force differential over
every coordinate form and every intermediate value CuTe's crd2idx computes, symbolic
proofs and refutations under assumptions, planted overflows, bad input and the doc page."""

from __future__ import annotations

import random
from typing import Any, Callable, List

import pytest

from layoutproof import ComposedLayout, Layout, Swizzle, assuming, symbols
from layoutproof.errors import LayoutError
from layoutproof.gpu.analysis.width import Overflow, WidthError, index_width, type_range


# ----------------------------------------------------------------------------- brute force
def _prod(s: Any) -> int:
    if type(s) is tuple:
        p = 1
        for x in s:
            p *= _prod(x)
        return p
    return s


def _crd2idx(c: Any, s: Any, d: Any, rec: Callable[[int], None]) -> int:
    """CuTe's crd2idx, literally: a tuple coordinate is a left fold of its modes'
    offsets; an integer coordinate on a tuple shape is split by divmod and summed as a right
    fold ``t0 + (t1 + ...)``; a leaf is ``c * d``.  Every intermediate value goes to ``rec``."""
    if type(s) is tuple:
        if type(c) is tuple:
            acc = None
            for ci, si, di in zip(c, s, d):
                v = _crd2idx(ci, si, di, rec)
                acc = v if acc is None else acc + v
                rec(acc)
            return acc if acc is not None else 0
        return _itt(c, s, d, 0, rec)
    v = c * d
    rec(v)
    return v


def _itt(c: int, s: tuple, d: tuple, k: int, rec: Callable[[int], None]) -> int:
    if k == len(s) - 1:
        return _crd2idx(c, s[k], d[k], rec)
    p = _prod(s[k])
    rec(p)
    q, r = c // p, c % p
    rec(q)
    rec(r)
    a = _crd2idx(r, s[k], d[k], rec)
    b = _itt(q, s, d, k + 1, rec)
    rec(a + b)
    return a + b


def _coords(s: Any) -> List[Any]:
    """Every coordinate of every form: at each tuple node either a tuple of the modes'
    coordinates or one integer in [0, size)."""
    out: List[Any] = list(range(_prod(s)))
    if type(s) is tuple:
        parts = [_coords(x) for x in s]
        combos: List[Any] = [()]
        for p in parts:
            combos = [c + (x,) for c in combos for x in p]
        out += combos
    return out


def _brute_values(layout: Any, base: int = 0) -> List[int]:
    """Every value the index arithmetic of ``layout`` computes, over every coordinate."""
    vals: List[int] = []
    rec = vals.append
    B = layout.layout_b if isinstance(layout, ComposedLayout) else layout
    s, d = B.shape, B.stride
    fs, fd = B.flat_modes()
    p = 1
    for x in fs:
        p *= x
        rec(p)
    vals.extend(fd)
    outs = []
    for c in _coords(s):
        v = _crd2idx(c, s, d, rec)
        if isinstance(layout, ComposedLayout):
            x = layout.offset + v
            if layout.offset != 0:
                rec(x)
            y = layout.layout_a(x)
            rec(y)
            if base:
                rec(base + y)
        elif base:
            rec(base + v)
        outs.append(v)
    last = _crd2idx(_prod(s) - 1, s, d, rec)
    rec(last + 1)
    return vals


def _random_shape(rng: random.Random, depth: int = 0) -> Any:
    n = rng.randint(1, 3)
    out = []
    for _ in range(n):
        if depth < 1 and rng.random() < 0.3:
            out.append(_random_shape(rng, depth + 1))
        else:
            out.append(rng.randint(1, 4))
    return tuple(out) if n > 1 or rng.random() < 0.5 else out[0]


def _random_stride(rng: random.Random, s: Any) -> Any:
    if type(s) is tuple:
        return tuple(_random_stride(rng, x) for x in s)
    return rng.randint(-24, 24)


def _fits(vals: List[int], bits: int, signed: bool) -> bool:
    lo, hi = type_range(bits, signed)
    return all(lo <= v <= hi for v in vals)


def test_differential_against_brute_force_plain():
    """300 random small layouts at 8-10 bits: proved exactly when every intermediate value
    of every coordinate form fits; the extremes found are the brute force's extremes; a
    witness is one of those values, out of range."""
    rng = random.Random(25)
    seen = {"proved": 0, "refuted": 0}
    for _ in range(300):
        s = _random_shape(rng)
        L = Layout(s, _random_stride(rng, s))
        bits = rng.choice((8, 9, 10))
        signed = rng.random() < 0.7
        base = rng.choice((0, 0, rng.randint(-60, 60)))
        vals = _brute_values(L, base)
        r = index_width(L, bits=bits, signed=signed, base=base)
        truth = _fits(vals, bits, signed)
        assert r.status == ("proved" if truth else "refuted"), (L, bits, signed, base, r.line())
        seen[r.status] += 1
        assert r.cases == len(r.terms)
        assert max(t.high for t in r.terms) == max(vals), (L, base)
        assert min(t.low for t in r.terms) == min(vals), (L, base)
        if not truth:
            w = r.witness
            assert isinstance(w, Overflow) and w.value in vals
            lo, hi = type_range(bits, signed)
            assert not lo <= w.value <= hi
            if w.index is not None and w.term == "offset":
                assert L(w.index) == w.value and L(w.coordinate) == w.value
    assert seen["proved"] > 50 and seen["refuted"] > 50, seen


def test_differential_against_brute_force_swizzled():
    rng = random.Random(7)
    for _ in range(120):
        s = _random_shape(rng)
        B = Layout(s, _random_stride(rng, s))
        b = rng.randint(1, 2)
        sh = rng.choice((b, b + 1, -b))
        sw = Swizzle(b, rng.randint(0, 2), sh)
        C = ComposedLayout(sw, rng.choice((0, 0, rng.randint(-40, 40))), B)
        bits = rng.choice((8, 9))
        signed = rng.random() < 0.7
        base = rng.choice((0, 0, rng.randint(-60, 60)))
        vals = _brute_values(C, base)
        r = index_width(C, bits=bits, signed=signed, base=base)
        assert r.status == ("proved" if _fits(vals, bits, signed) else "refuted"), (
            C,
            bits,
            signed,
            base,
            r.line(),
        )
        if r.status == "refuted":
            assert r.witness.value in vals


def test_swizzle_at_tight_widths():
    """Widths just above the offsets before the swizzle, where the XOR alone can overflow."""
    rng = random.Random(11)
    only_swizzle = 0
    for _ in range(300):
        s = _random_shape(rng)
        B = Layout(s, _random_stride(rng, s))
        fs, fd = B.flat_modes()
        B = Layout(fs, tuple(abs(d) * 8 + 1 for d in fd))
        sw = Swizzle(rng.randint(1, 3), rng.randint(0, 3), rng.choice((3, 4, -3, -4)))
        C = ComposedLayout(sw, 0, B)
        vals = _brute_values(C)
        pre = max(B(i) for i in range(B.size))
        bits = max(8, pre.bit_length())
        r = index_width(C, bits=bits, signed=False)
        assert r.status == ("proved" if _fits(vals, bits, False) else "refuted"), (C, bits, r.line())
        if [o.term for o in r.overflows] == [f"{sw}(offset + B(c))"]:
            only_swizzle += 1
    assert only_swizzle >= 5, only_swizzle


def test_partial_sums_lie_within_the_offset():
    """Every leaf product can be 0, so each running sum's range lies within the whole
    offset's: what overflows without the offset overflowing is a stride, size, cosize or a
    composed/base addition."""
    rng = random.Random(3)
    for _ in range(200):
        s = _random_shape(rng)
        r = index_width(Layout(s, _random_stride(rng, s)), bits=64)
        off = next(t for t in r.terms if t.kind == "offset")
        for t in r.terms:
            if t.kind in ("product", "partial sum"):
                assert off.low <= t.low <= t.high <= off.high


# ----------------------------------------------------------------------------- the issues' cases
def test_elementwise_add_65384_squared_overflows_int32_not_int64():
    """NVIDIA/cutlass #2312: elementwise_add with M = N = 65384 and int32 strides."""
    L = Layout((65384, 65384), (65384, 1))
    r = index_width(L)
    assert r.status == "refuted" and r.witness.term == "size"
    names = {o.term: o for o in r.overflows}
    prod = names["coordinate 0 * stride"]
    assert prod.value == 65383 * 65384 and prod.coordinate == (65383, 0) and prod.index == 65383
    assert "offset" in names and "coordinate 1 * stride" not in names
    assert r.largest is not None and r.largest.name == "size"
    assert index_width(L, bits=64).status == "proved"


def test_domain_offset_row_times_stride():
    """NVIDIA/cutlass #3604: (2**29 + 1, 4):(4, 1), row 2**29 times stride 4 is 2**31."""
    r = index_width(Layout((2**29 + 1, 4), (4, 1)))
    prod = next(o for o in r.overflows if o.term == "coordinate 0 * stride")
    assert prod.value == 2**31 and prod.coordinate == (2**29, 0)


def test_planted_size_one_mode_with_a_huge_stride():
    """NVIDIA/cutlass #3327: a contiguous [1, N, H, D] tensor: every offset fits int32, but
    the size-1 mode's stride N*H*D does not (nor size, nor cosize)."""
    L = Layout((1, 2**20, 16, 128), (2**31, 2048, 128, 1))
    r = index_width(L)
    bad = {o.term for o in r.overflows}
    assert r.status == "refuted"
    assert {"stride 0", "size", "cosize"} <= bad
    assert "offset" not in bad and not any(n.startswith(("coordinate", "partial")) for n in bad)


def test_planted_composed_inner_offset_overflows_though_the_sum_fits():
    """A composed layout with a negative offset: B(c) leaves int8 though o + B(c) fits."""
    C = ComposedLayout(Swizzle(1, 0, 1), -100, Layout((2,), (150,)))
    r = index_width(C, bits=8)
    bad = {o.term for o in r.overflows}
    assert "offset" in bad and "offset + B(c)" not in bad
    w = next(o for o in r.overflows if o.term == "offset")
    assert w.value == 150 and w.coordinate == (1,)


def test_planted_broadcast_size_overflows_offsets_fit():
    r = index_width(Layout((2**16, 2**16), (0, 1)))
    assert [o.term for o in r.overflows] == ["size"]


def test_cosize_one_past_the_largest_offset():
    """The largest offset is the type's maximum: it fits, cosize = max + 1 does not."""
    r = index_width(Layout(128, 1), bits=8)
    assert [o.term for o in r.overflows] == ["size", "cosize"]
    r = index_width(Layout(64, 2), bits=8)
    assert r.status == "proved"
    r = index_width(Layout(128, 1), bits=8, signed=False)
    assert r.status == "proved"


def test_negative_strides_signed_and_unsigned():
    L = Layout((4, 8), (-32, 1))
    assert index_width(L, bits=8).status == "proved"  # [-96, 7]
    r = index_width(L, bits=8, signed=False)
    assert r.status == "refuted"
    w = next(o for o in r.overflows if o.term == "coordinate 0 * stride")
    assert w.value == -96 and w.limit == 0 and w.coordinate == (3, 0)


def test_swizzle_output_bounded_then_evaluated():
    C = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1)))
    r = index_width(C, bits=11)
    assert r.status == "proved"
    sw = next(t for t in r.terms if t.kind == "swizzle")
    assert sw.exact is False and sw.high == 511
    # the swizzle moves the offset 0..447 of 8 rows of 56 onto 0..511
    C2 = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 56), (64, 1)))
    r2 = index_width(C2, bits=9, signed=True)
    sw2 = next(t for t in r2.terms if t.kind == "swizzle")
    assert sw2.exact is True and sw2.high == max(C2(i) for i in range(C2.size))
    assert r2.status == "refuted" and any(o.term == sw2.name for o in r2.overflows)


def test_outer_layout_reached_or_not():
    """An outer layout's expressions count at the inputs offset + B(c) reaches."""
    A = Layout((4, 4), (1, 100))
    r = index_width(ComposedLayout(A, 0, Layout(4, 4)), bits=9)  # inputs 0, 4, 8, 12
    assert r.status == "refuted"
    w = next(o for o in r.overflows if o.term == "outer coordinate 1 * stride")
    assert w.value == 300 and w.coordinate == 3  # B's coordinate 3 -> input 12 -> A's (0, 3)
    r2 = index_width(ComposedLayout(A, 0, Layout(2, 1)), bits=9)  # inputs 0, 1: A is 0, 1
    assert r2.status == "proved"
    r3 = index_width(ComposedLayout(A, 10, Layout(4, 4)), bits=16)  # inputs up to 22 >= 16
    assert r3.status == "unknown" and "beyond the outer layout's domain" in r3.reason
    r4 = index_width(ComposedLayout(A, 0, Layout(4, 4)), bits=9, base=-50)
    assert any(o.term == "outer base + offset" for o in r4.overflows) is False


def test_tensor_offset_is_the_base():
    from layoutproof import make_tensor

    t = make_tensor(list(range(300)), Layout((4, 8), (8, 1)), offset=100)
    r = index_width(t, bits=8)
    assert r.status == "refuted" and r.witness.term == "base + offset" and r.witness.value == 131


# ----------------------------------------------------------------------------- symbolic
def test_symbolic_proved_by_intervals():
    M, K = symbols("M K")
    with assuming("M <= 2**15", "K <= 2**15"):
        r = index_width(Layout((M, K), (K, 1)))
    assert r.status == "proved" and r.method == "interval" and r.cases == 7
    assert "M <= 32768" in r.scope


def test_symbolic_refuted_with_values_confirmed_and_the_product_named():
    M, K = symbols("M K")
    L = Layout((M, K), (K, 1))
    with assuming("M <= 65536", "K <= 32769"):
        r = index_width(L)
    assert r.status == "refuted"
    w = r.witness
    assert w.values == {"K": 32769, "M": 65536}
    prod = next(o for o in r.overflows if o.term == "coordinate 0 * stride")
    assert prod.expr == "K*(M - 1)" and prod.value == 65535 * 32769 and prod.coordinate == (65535, 0)
    assert "coordinate 0 * stride: K*(M - 1) reaches 2147516415 > 2147483647" in str(prod)
    concrete = index_width(L.subs(w.values))
    assert concrete.status == "refuted" and concrete.witness.value == w.value
    assert r.fits_if == {"K": 32767, "M": 65534}
    for name, bound in r.fits_if.items():
        other = {"M": "M <= 65536", "K": "K <= 32769"}
        facts = [f"{name} <= {bound}"] + [f for k, f in other.items() if k != name]
        with assuming(*facts):
            assert index_width(L).status == "proved"
        facts = [f"{name} <= {bound + 1}"] + [f for k, f in other.items() if k != name]
        with assuming(*facts):
            assert index_width(L).status == "refuted"


def test_symbolic_unbounded_is_unknown_naming_the_symbol():
    M, K = symbols("M K")
    r = index_width(Layout((M, K), (K, 1)))
    assert r.status == "unknown" and "unbounded" in r.reason and "assume an upper bound" in r.reason
    with assuming("M <= 2**10"):
        r = index_width(Layout((M, K), (K, 1)))
    assert r.status == "unknown" and "K is unbounded" in r.reason


def test_symbolic_int64_batched_gemm_stride():
    """The batch stride M*K of a packed (M, K, L) operand (cutlass PR #3307's product)."""
    M, K, B = symbols("M K L")
    L = Layout((M, K, B), (K, 1, M * K))
    with assuming("M <= 49152", "K <= 65536", "L <= 4"):
        r32 = index_width(L)
        r64 = index_width(L, bits=64)
    assert r32.status == "refuted" and r64.status == "proved"
    assert any(o.term == "stride 2" and o.value == 49152 * 65536 for o in r32.overflows)


def test_symbolic_coupled_assumption_decided_by_z3():
    """Bounds on a product: each factor's bound follows (the other >= 1), the expressions
    at most the product are proved from the fact, the rest (2*M*K - 1) by Z3."""
    M, K = symbols("M K")
    with assuming("M * K <= 2**20"):
        r = index_width(Layout((M, K), (K, 1)), bits=22)
        assert r.status == "proved" and r.method == "interval"
        r = index_width(Layout((M, K, 2), (K, 1, M * K)), bits=23)
        assert r.status == "proved" and "z3" in r.method
        r = index_width(Layout((M, K, 2), (K, 1, M * K)), bits=22)
        assert r.status == "refuted" and r.witness.term == "size" and r.witness.value == 2**21


def test_symbolic_base_of_a_tile():
    """local_tile's block offset as a base: bm * 128 * K for the row block bm."""
    bm, K = symbols("bm K")
    tile = Layout((128, 64), (K, 1))
    with assuming("bm <= 255", "K <= 65536"):  # the last tile ends at 2147418175
        assert index_width(tile, base=bm * 128 * K).status == "proved"
    with assuming("bm <= 256", "K <= 65536"):
        r = index_width(tile, base=bm * 128 * K)
    assert r.status == "refuted" and r.witness.term == "base + offset"
    assert r.witness.values == {"K": 65536, "bm": 256} and r.witness.value == 2**31 + 127 * 65536 + 63
    assert r.fits_if is not None and r.fits_if["bm"] == 255
    with assuming("bm <= 255", "K <= 512"):
        assert index_width(tile, base=bm * 128 * K).status == "proved"


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bits", [7, 65, 0, True, "32", 32.0])
def test_bad_bits(bits):
    with pytest.raises(WidthError) as e:
        index_width(Layout(4, 1), bits=bits)
    assert e.value.condition == "bits in 8..64"


@pytest.mark.parametrize("x", [(4, 1), "4:1", Swizzle(3, 3, 3), None, 3])
def test_not_a_layout(x):
    with pytest.raises(LayoutError):
        index_width(x)


def test_coordinate_strides_are_refused():
    from layoutproof.arith import make_identity_layout

    with pytest.raises(WidthError) as e:
        index_width(make_identity_layout((4, 8)))
    assert e.value.condition == "integer strides"


def test_bad_signed_and_base():
    with pytest.raises(WidthError):
        index_width(Layout(4, 1), signed=1)
    with pytest.raises(WidthError):
        index_width(Layout(4, 1), base=1.5)


def test_contradictory_assumptions_raise():
    M, K = symbols("M K")
    with assuming("M <= 2", "M >= 3"), pytest.raises(LayoutError):
        index_width(Layout((M, K), (K, 1)))


def test_report_as_dict_and_table():
    import json

    r = index_width(Layout((65384, 65384), (65384, 1)))
    d = r.as_dict()
    json.dumps(d)
    assert d["type"] == "int32" and d["witness"]["term"] == "size" and len(d["terms"]) == r.cases
    assert r.table().splitlines()[0].startswith("! size")


# ----------------------------------------------------------------------------- docs
def test_docs_analysis_width_examples_run():
    import doctest
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs" / "analysis-width.md"
    res = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS, encoding="utf-8")
    assert res.failed == 0 and res.attempted >= 15, (res.failed, res.attempted)


def test_symbolic_agrees_with_the_concrete_layout_at_the_bounds():
    """With nonnegative strides every expression grows with each symbol, so the layout at
    the symbols' upper bounds decides the truth: the symbolic verdict must agree with the
    concrete one there, and a refutation's values must be admitted and overflow concretely."""
    M, K = symbols("M K")
    templates = [
        Layout((M, K), (K, 1)),
        Layout((M, K), (1, M)),
        Layout((M, K, 2), (K, 1, M * K)),
        Layout(((M, 4), K), ((4, 1), 4 * M)),
        Layout((8, (M, K)), (M * K, (1, M))),
    ]
    rng = random.Random(5)
    for _ in range(40):
        L = rng.choice(templates)
        um, uk = 2 ** rng.randint(3, 16), 2 ** rng.randint(3, 16) + rng.randint(0, 3)
        bits = rng.choice((16, 20, 24, 32))
        with assuming(f"M <= {um}", f"K <= {uk}"):
            r = index_width(L, bits=bits)
        top = index_width(L.subs(M=um, K=uk), bits=bits)
        assert r.status == top.status, (L, um, uk, bits, r.line(), top.line())
        if r.status == "refuted":
            v = r.witness.values
            assert 1 <= v["M"] <= um and 1 <= v["K"] <= uk
            c = index_width(L.subs(v), bits=bits)
            assert any(o.term == r.witness.term and o.value == r.witness.value for o in c.overflows)


def test_cli_analyze_width(capsys):
    from layoutproof.cli import main

    argv = ["analyze", "width", "(M,K):(K,1)", "--assume", "M <= 65536", "--assume", "K <= 32769"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "overflows:" in out and "K <= 32767 makes every expression fit (proved)" in out
    assert main(["analyze", "width", "(65384,65384):(65384,1)", "--bits", "64"]) == 0
    capsys.readouterr()
    assert main(["analyze", "width", "(4,4):(4,1)", "--bits", "7"]) == 2
