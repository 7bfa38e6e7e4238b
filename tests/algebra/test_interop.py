"""Layouts in and out (layoutproof.interop): CuTe C++ export compile-tested against the
CuTe headers of the nvidia-cutlass wheel (skipped without a compiler or the headers),
round trips through every form, the CuTe DSL's printed forms, legacy pycute objects,
Triton linear layouts, and the CLI's ``eval`` / ``check`` on these forms."""

from __future__ import annotations

import re
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import cutlass_include, cxx_compiler

from layoutproof import (
    ComposedLayout,
    F2Layout,
    Layout,
    LayoutError,
    MalformedLayoutError,
    Swizzle,
    assuming,
    composition,
    make_tensor,
    symbols,
    tile_to_shape,
    to_f2,
)
from layoutproof.interop import (
    Imported,
    from_cpp,
    from_dsl,
    from_pycute,
    from_triton,
    import_layout,
    rewrite_foreign,
    to_cpp,
    to_dsl,
    to_pycute,
    to_triton,
)
from layoutproof.verify.strategies import layouts, sample

ATOM = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))

FIXED = [
    Layout(1, 0),
    Layout(8, 1),
    Layout((4, 8), (1, 4)),
    Layout((4, 8), (8, 1)),
    Layout(((2, 4), 8), ((1, 16), 2)),
    Layout((3, (2, 5)), (0, (-1, 7))),
    Layout((2, 3, 4), (12, 4, 1)),
]
SWIZZLED = [
    ATOM,
    tile_to_shape(ATOM, (128, 64)),
    ComposedLayout(Swizzle(2, 4, 3), 0, Layout((8, 32), (32, 1))),
    ComposedLayout(Swizzle(1, 0, -1), 4, Layout((2, 2), (1, 2))),
    ComposedLayout(Layout(8, 3), 2, Layout((2, 3), (3, 1))),
]


def _equal_values(a, b) -> bool:
    return a.size == b.size and a.eval_all().tolist() == b.eval_all().tolist()


# ----------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("L", FIXED + SWIZZLED, ids=str)
def test_cpp_and_dsl_round_trip_fixed(L):
    assert from_cpp(to_cpp(L)).value == L
    assert from_dsl(to_dsl(L)).value == L
    assert import_layout(to_cpp(L)).value == L
    assert import_layout(to_dsl(L)).value == L


@settings(max_examples=60, deadline=None)
@given(layouts(max_size=512, kind="any"))
def test_cpp_dsl_round_trip_property(L):
    assert from_cpp(to_cpp(L)).value == L
    assert from_dsl(to_dsl(L)).value == L
    assert from_cpp(to_cpp(L, name="x")).value == L


@settings(max_examples=60, deadline=None)
@given(layouts(max_size=512, kind="any"))
def test_cpp_print_form_round_trip_property(L):
    """C++'s ``print`` writes static leaves as ``_4``: layoutproof's notation with underscores."""

    def cxx(t):
        return "(" + ",".join(cxx(e) for e in t) + ")" if type(t) is tuple else f"_{t}"  # _-1 too

    text = cxx(L.shape) + ":" + cxx(L.stride)
    assert from_cpp(text).value == L
    assert from_cpp(text.replace("_-", "-")).value == L


def test_symbolic_export():
    M, N = symbols("M N")
    with assuming("N % 8 == 0"):
        L = Layout((M, (8, N / 8)), (1, (M, 8 * M)))
        cpp = to_cpp(L)
        assert cpp == (
            "make_layout(make_shape(M, make_shape(Int<8>{}, (N)/8)), "
            "make_stride(Int<1>{}, make_stride(M, 8*M)))"
        )
        dsl = to_dsl(L)
        assert dsl == "cute.make_layout((M, (8, (N)//8)), stride=(1, (M, 8*M)))"
        assert from_cpp(cpp).value == L
        assert from_dsl(dsl).value == L


def test_tensor_and_f2_export():
    t = make_tensor(list(range(32)), Layout((4, 8), (8, 1)))
    assert to_cpp(t) == to_cpp(t.layout)
    assert to_dsl(to_f2(ATOM)) == to_dsl(ATOM)


def test_basis_strides_export_cpp():
    from layoutproof import make_identity_layout

    L = make_identity_layout((4, (2, 3)))
    text = to_cpp(L)
    assert "E<0>{}" in text and "E<1, 0>{}" in text
    assert from_cpp(text).value == L
    with pytest.raises(MalformedLayoutError, match="basis stride"):
        to_dsl(L)


# ----------------------------------------------------------------------------- C++ types
def test_cpp_type_spellings():
    r = from_cpp("cute::Layout<cute::tuple<cute::C<4>, int>, cute::tuple<cute::C<1>, cute::C<4> > >")
    S0 = symbols("S0")
    assert r.value == Layout((4, S0), (1, 4)) and r.assumptions == ()
    r = from_cpp("Layout<tuple<tuple<C<2>, C<4>>, long>, tuple<tuple<C<1>, long>, C<0>>>")
    assert str(r.value) == "((2,4),S0):((1,D1),0)"
    r = from_cpp(
        "cute::Layout<cute::tuple<cute::integral_constant<int, 8>, cute::C<2l>>, "
        "cute::tuple<cute::_1, cute::C<-8>>>"
    )
    assert r.value == Layout((8, 2), (1, -8))
    r = from_cpp(
        "cute::ComposedLayout<cute::Swizzle<2, 4, 3>, cute::C<0>, cute::Layout<cute::tuple<"
        "cute::C<8>, cute::C<32>>, cute::tuple<cute::C<32>, cute::C<1>>>>"
    )
    assert r.value == SWIZZLED[2]


@pytest.mark.parametrize(
    "bad",
    [
        "cute::Layout<cute::tuple<cute::C<4>, int>",  # unbalanced
        "cute::Layout<cute::tuple<cute::C<4>>, cute::tuple<cute::C<1>, cute::C<2>>>",  # not congruent
        "cute::Swizzle<3, 3>",
        "make_layout(make_shape(Int<4>{}, foo))",
        "cute::Layout<cute::tuple<cute::C<4>>> trailing",
        "Sw<3,3,3> o x o 4:1",
        "",
        "(" * 500 + "4" + ")" * 500,
    ],
)
def test_cpp_bad_input_is_typed(bad):
    with pytest.raises(LayoutError):
        from_cpp(bad)


# ----------------------------------------------------------------------------- CuTe DSL
def test_dsl_printed_forms():
    r = from_dsl("(?,?{div=16}):(?{i64 div=8},1)")
    S0, S1, D2 = symbols("S0 S1 D2")
    assert r.value == Layout((S0, S1), (D2, 1))
    assert r.assumptions == ("S1 % 16 == 0", "D2 % 8 == 0")
    r = from_dsl('!cute.composed_layout<"S<3,4,3> o 0 o ((8,16),(64,1)):((64,512),(1,0))">')
    assert r.value == ComposedLayout(Swizzle(3, 4, 3), 0, Layout(((8, 16), (64, 1)), ((64, 512), (1, 0))))
    r = from_dsl('!cute.coord_tensor<"(0,0)", "(?,?{div=8192}):(1@1,1@0)">')
    assert str(r.value) == "(S0,S1):(1@1,1@0)" and r.assumptions == ("S1 % 8192 == 0",)
    r = from_dsl("4:1")
    assert r == Imported(Layout(4, 1), ())


def test_dsl_divisibility_is_an_assumption_the_algebra_uses():
    """``?{div=16}`` makes a symbol with the assumption: composition needing it goes through."""
    r = from_dsl("(?{div=16},?):(1,?)")
    with assuming(*r.assumptions):
        C = composition(r.value, Layout(16, 1))
    assert str(C) == "16:1"
    with pytest.raises(LayoutError):  # without the assumption it cannot be decided
        composition(r.value, Layout(16, 1))


@pytest.mark.parametrize(
    "bad",
    [
        "(?{div=x},4):(1,4)",
        "!cute.layout<>",
        "(4,?):(1,?",
        "cute.make_layout(eval('1'))",
        "cute.make_layout((4, 8), stride=(1, foo))",
        "S<3,4> o 0 o 4:1",
    ],
)
def test_dsl_bad_input_is_typed(bad):
    with pytest.raises(LayoutError):
        from_dsl(bad)


# ----------------------------------------------------------------------------- pycute
def test_pycute_round_trip():
    pycute = pytest.importorskip("pycute")
    for L in FIXED + SWIZZLED:
        p = to_pycute(L)
        assert from_pycute(p) == L
        assert import_layout(p).value == L
        for i in range(L.size):
            assert p(i) == L(i)
    assert from_pycute(pycute.Swizzle(3, 3, 3)) == Swizzle(3, 3, 3)
    with pytest.raises(MalformedLayoutError):
        from_pycute((4, 1))
    with pytest.raises(MalformedLayoutError):
        to_pycute(Layout(symbols("M"), 1))


# ----------------------------------------------------------------------------- Triton
def test_triton_round_trip_and_values():
    bases = {
        "register": [[0, 1], [0, 2]],
        "lane": [[1, 0], [2, 0], [4, 0], [0, 4], [0, 8]],
        "warp": [[8, 0]],
        "block": [],
    }
    L = from_triton(bases, [16, 16])
    assert isinstance(L, F2Layout)
    assert to_triton(L, out_dims=[16, 16]) == bases
    # the value of an input is the XOR of the bases of its set bits, dim0 least significant
    for reg in range(4):
        for lane in range(32):
            for warp in range(2):
                d0 = d1 = 0
                for j, (b0, b1) in enumerate(bases["register"]):
                    if reg >> j & 1:
                        d0, d1 = d0 ^ b0, d1 ^ b1
                for j, (b0, b1) in enumerate(bases["lane"]):
                    if lane >> j & 1:
                        d0, d1 = d0 ^ b0, d1 ^ b1
                if warp:
                    d0 ^= 8
                assert L(reg, lane, warp, 0) == d0 + 16 * d1


def test_triton_from_swizzled_layout():
    """A swizzled smem layout as Triton bases and back (through to_f2 / from_f2)."""
    bases = to_triton(ATOM, in_dims=["offset_row", "offset_col"])
    back = from_triton(bases, [ATOM.cosize])
    assert _equal_values(back, ATOM)
    assert import_layout(bases).value == back


@pytest.mark.parametrize(
    "bad, out",
    [
        ({}, None),
        ({"register": [[1, 2], [3]]}, None),
        ({"register": [[-1]]}, None),
        ({"register": [[4]]}, [3]),
        ({"register": [[4]]}, [4]),
        ({"register": "x"}, None),
    ],
)
def test_triton_bad_input_is_typed(bad, out):
    with pytest.raises(LayoutError):
        from_triton(bad, out)


def test_to_triton_refuses_non_power_of_two():
    with pytest.raises(LayoutError, match="power of two"):
        to_triton(Layout(3, 1))


# ----------------------------------------------------------------------------- the CLI's rewriter
def test_rewrite_foreign():
    assert rewrite_foreign("composition(8:1, 4:2)") == ("composition(8:1, 4:2)", ())
    text, facts = rewrite_foreign(
        "composition(cute::Layout<cute::tuple<cute::C<4>, int>, cute::tuple<cute::C<1>, cute::C<4>>>, "
        "(?,2):(1,?))"
    )
    assert text == "composition((4,S0):(1,4), (S1,2):(1,D2))" and facts == ()
    text, _ = rewrite_foreign(
        '!cute.layout<"(4,8):(1,4)"> == make_layout(make_shape(Int<4>{}, 8), make_stride(Int<1>{}, Int<4>{}))'
    )
    assert text == "(4,8):(1,4) == (4,8):(1,4)"
    text, _ = rewrite_foreign("Sw<3,3,3> o _0 o (_8,_64):(_64,_1) == S<3,3,3> o 0 o (8,64):(64,1)")
    assert text.count("make_composed_layout(Swizzle(3,3,3),0,(8,64):(64,1))") == 2
    text, _ = rewrite_foreign('{"offset": [[1], [2]], "block": [[4]]} == 8:1')
    assert text == "((2,2),2):((1,2),4) == 8:1"
    # names already in the statement are not reused for '?' leaves
    text, _ = rewrite_foreign("(S0,?):(1,S0) == (S0,4):(1,S0)")
    assert text.startswith("(S0,S1):(1,S0)")


# ----------------------------------------------------------------------------- compile test
@pytest.mark.slow
def test_cpp_export_compiles_and_agrees_with_cute(tmp_path):
    """Every exported layout compiles against CuTe; CuTe's print of it reads back as the
    same layout, CuTe evaluates it to the same values everywhere, and the compiler's type
    spelling (with a dynamic leaf) reads back with a symbol in that place."""
    inc = cutlass_include()
    if inc is None:
        pytest.skip("no CuTe headers (the nvidia-cutlass wheel ships them)")
    cc = cxx_compiler(inc)
    if cc is None:
        pytest.skip("no C++ compiler (g++ with CUDA's CCCL headers, or nvcc)")
    cases = FIXED + SWIZZLED + sample(layouts(max_size=64, kind="any"), 12, seed=3)
    M, N = symbols("M N")
    dyn = Layout((4, M), (M, 1))
    with assuming("N % 8 == 0"):
        symbolic = [
            Layout((M, (8, N / 8)), (1, (M, 8 * M))),
            Layout((2 * M + 1, N), (N, 1)),
            Layout(((N / 8, 2), M), ((2 * M, M), 1)),
        ]
    lines = [
        "#include <cute/layout.hpp>",
        "#include <cute/swizzle_layout.hpp>",
        "#include <cstdio>",
        "using namespace cute;",
        'template <class T> void type_of(T const&) { printf("TYPE %s\\n", __PRETTY_FUNCTION__); }',
        "int main() {",
    ]
    for k, L in enumerate(cases):
        lines.append("  {")
        lines.append("    " + to_cpp(L, name="L"))
        lines.append(f'    printf("CASE {k} "); print(L); printf("\\n");')
        lines.append(
            f'    printf("VALS {k}"); for (int i = 0; i < int(size(L)); ++i) printf(" %d", int(L(i)));'
        )
        lines.append('    printf("\\n");')
        lines.append("  }")
    lines.append("  int M = 6;")
    lines.append("  int N = 16;")
    lines.append("  " + to_cpp(dyn, name="D"))
    for k, L in enumerate(symbolic):
        lines.append("  {")
        lines.append("    " + to_cpp(L, name="L"))
        lines.append(f'    printf("SYM {k}");')
        lines.append('    for (int i = 0; i < int(size(L)); ++i) printf(" %d", int(L(i)));')
        lines.append('    printf("\\n");')
        lines.append("  }")
    lines.append('  printf("DYN "); print(D); printf("\\n"); type_of(D);')
    lines.append("  return 0;\n}")
    src = tmp_path / "export.cpp"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "export"
    if cc[0].endswith("nvcc"):
        src = src.rename(tmp_path / "export.cu")
    res = subprocess.run(cc + [str(src), "-o", str(exe)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    printed = {int(l.split()[1]): l.split(" ", 2)[2] for l in out if l.startswith("CASE ")}
    vals = {int(l.split()[1]): [int(v) for v in l.split()[2:]] for l in out if l.startswith("VALS ")}
    for k, L in enumerate(cases):
        back = from_cpp(printed[k]).value
        assert back == L, (k, printed[k], str(L))
        assert vals[k] == [int(v) for v in L.eval_all().tolist()], (k, str(L))
    syms = {int(l.split()[1]): [int(v) for v in l.split()[2:]] for l in out if l.startswith("SYM ")}
    for k, L in enumerate(symbolic):  # dynamic leaves: CuTe's values are ours at M = 6, N = 16
        assert syms[k] == [int(v) for v in L.subs(M=6, N=16).eval_all().tolist()], (k, str(L))
    dyn_line = next(l for l in out if l.startswith("DYN "))
    assert from_cpp(dyn_line[4:]).value == Layout((4, 6), (6, 1))  # print shows the values
    type_line = next(l for l in out if l.startswith("TYPE "))
    m = re.search(r"\[with T = (.*)\]$", type_line) or re.search(r"T = (cute::Layout<.*>)", type_line)
    assert m, type_line
    r = from_cpp(m.group(1))
    S0, D1 = symbols("S0 D1")
    assert r.value == Layout((4, S0), (D1, 1)), (m.group(1), str(r.value))


@pytest.mark.parametrize(
    "bad",
    [
        "ScaledBasis<> o M<{}",
        "cute.make_layout(1e)",
        "cute.make_layout(0x_1)",
        "{'register': [[1e]]}",
        "{1: 2}",
    ],
)
def test_fuzz_findings_are_typed(bad):
    """Inputs that once escaped as IndexError or SyntaxWarning (a random-text fuzz of
    from_cpp / from_dsl / import_layout / rewrite_foreign)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for f in (from_cpp, from_dsl, import_layout, rewrite_foreign):
            try:
                f(bad)
            except LayoutError:
                pass


# Spellings copied from real compiler messages ("cannot convert ... to 'int'") for
#   L = make_layout(make_shape(Int<4>{}, M), make_stride(M, Int<1>{}))        (M an int)
#   C = composition(Swizzle<3,3,3>{}, make_layout((_8,_64), (_64,_1)))
#   I = make_identity_layout(make_shape(Int<4>{}, make_shape(Int<2>{}, Int<3>{})))
GCC_13 = [
    "cute::Layout<cute::tuple<cute::C<4>, int>, cute::tuple<int, cute::C<1> > >",
    "cute::ComposedLayout<cute::Swizzle<3, 3, 3>, cute::C<0>, "
    "cute::Layout<cute::tuple<cute::C<8>, cute::C<64> >, cute::tuple<cute::C<64>, cute::C<1> > > >",
    "cute::Layout<cute::tuple<cute::C<4>, cute::tuple<cute::C<2>, cute::C<3> > >, "
    "cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, "
    "cute::tuple<cute::ScaledBasis<cute::C<1>, 1, 0>, cute::ScaledBasis<cute::C<1>, 1, 1> > > >",
]
NVCC_13 = [
    "cute::Layout<cute::Shape<cute::Int<4>, int>, cute::Stride<int, cute::Int<1>>>",
    "cute::ComposedLayout<cute::Swizzle<3, 3, 3>, cute::Int<0>, cute::Layout<cute::Shape<cute::Int<8>, "
    "cute::Int<64>>, cute::Stride<cute::Int<64>, cute::Int<1>>>>",
    "cute::Layout<cute::Shape<cute::Int<4>, cute::Shape<cute::Int<2>, cute::Int<3>>>, "
    "cute::tuple<cute::E<0>, cute::tuple<cute::E<1, 0>, cute::E<1, 1>>>>",
]


def test_cpp_qualified_types():
    """Compiler messages often show ``const T&``."""
    base = GCC_13[0]
    for text in (f"const {base}&", f"{base} const &", f"const {base}", f"{base}&&"):
        assert from_cpp(text).value == from_cpp(base).value


@pytest.mark.parametrize("spellings", [GCC_13, NVCC_13], ids=["g++", "nvcc"])
def test_compiler_message_spellings(spellings):
    from layoutproof import make_identity_layout

    S0, D1 = symbols("S0 D1")
    want = [Layout((4, S0), (D1, 1)), ATOM, make_identity_layout((4, (2, 3)))]
    for text, w in zip(spellings, want):
        assert from_cpp(text).value == w, text
        assert import_layout(text).value == w


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_triton_round_trip_property(data):
    """Random dicts of bases: from_triton then to_triton gives them back, and the F2
    layout's value at every input is the XOR of the bases of its set bits."""
    widths = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3), label="out dim bits")
    sizes = [1 << w for w in widths]
    names = data.draw(
        st.lists(st.sampled_from(["register", "lane", "warp", "block"]), min_size=1, max_size=4, unique=True),
        label="in dims",
    )
    coord = st.tuples(*[st.integers(0, s - 1) for s in sizes]).map(list)
    bases = {n: data.draw(st.lists(coord, max_size=3), label=n) for n in names}
    L = from_triton(bases, sizes)
    assert to_triton(L, out_dims=sizes, in_dims=names) == bases
    shifts = [sum(widths[:k]) for k in range(len(widths))]
    flat = [v for n in names for v in bases[n]]
    for i in range(L.size):
        want = 0
        for j, vec in enumerate(flat):
            if i >> j & 1:
                want ^= sum(c << sh for c, sh in zip(vec, shifts))
        assert L(i) == want
