"""CUTLASS 2.x layout classes as CuTe layouts (layoutproof.cutlass2).

The oracle is the 2.x headers themselves: one C++ program, compiled against the
nvidia-cutlass wheel's ``cutlass/layout/*.h``, builds every case's class (with the case's
stride, or the class's ``packed(extent)``) and prints its ``operator()`` at every coordinate
of the extent; each case's layout must give the same value at every coordinate.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, List, Optional, Tuple

import pytest
from oracles import cutlass_include, cxx_compiler

from layoutproof import (
    ComposedLayout,
    Cutlass2Error,
    Cutlass2UnrepresentableError,
    Layout,
    LayoutError,
    UndecidableConditionError,
    assuming,
    cutlass2_factors,
    from_cpp,
    from_cutlass2,
    symbols,
)
from layoutproof.cutlass2 import CUTLASS2_CLASSES, parse_cutlass2

Case = Tuple[str, Tuple[int, ...], Optional[Tuple[int, ...]]]

# the coordinate type of each class (the C++ program builds it from the loop indices)
_MATRIX = "matrix"
_PITCH = "pitch"
_T4 = "t4"
_T5 = "t5"


def _coord_kind(name: str) -> str:
    if name.startswith(("TensorN", "TensorC")):
        return _T5 if name == "TensorNDHWC" else _T4
    if name == "PitchLinear" or name.startswith(("TensorOp", "VoltaTensorOp")):
        return _PITCH
    return _MATRIX


def _cases() -> List[Case]:
    cases: List[Case] = []
    for M, N in [(1, 1), (3, 5), (8, 4), (7, 1), (2, 9)]:
        cases += [("RowMajor", (M, N), None), ("RowMajor", (M, N), (N + 3,)), ("RowMajor", (M, N), (0,))]
        cases += [("ColumnMajor", (M, N), None), ("ColumnMajor", (M, N), (M + 5,))]
        cases += [("PitchLinear", (M, N), None), ("PitchLinear", (M, N), (M + 2,))]
        cases += [("AffineRank2RowMajor", (M, N), None), ("AffineRank2RowMajor", (M, N), (7, 3))]
        cases += [("AffineRank2ColumnMajor", (M, N), None), ("AffineRank2ColumnMajor", (M, N), (2, 11))]
    for k in (1, 2, 4, 32):
        for a in sorted({1, 3, k, 2 * k, 3 * k} - ({3} if k < 3 else set())):
            if a > k and a % k:
                continue
            cases += [(f"RowMajorInterleaved<{k}>", (a, 3), None)]
            cases += [(f"RowMajorInterleaved<{k}>", (a, 3), (3 * k + 5,))]
            cases += [(f"ColumnMajorInterleaved<{k}>", (3, a), None)]
            cases += [(f"ColumnMajorInterleaved<{k}>", (3, a), (3 * k + 7,))]
    for br, bc in [(2, 4), (4, 2), (1, 3), (3, 1)]:
        for M, N in [(br, bc), (2 * br, 3 * bc), (br * 3, bc)]:
            for cls in ("ColumnMajorBlockLinear", "RowMajorBlockLinear"):
                cases += [(f"{cls}<{br}, {bc}>", (M, N), None)]
                cases += [(f"{cls}<{br}, {bc}>", (M, N), (M * N * br * bc + 5,))]
    nhwc = [(1, 1, 1, 1), (2, 3, 4, 5), (3, 2, 2, 8)]
    for e in nhwc:
        n, h, w, c = e
        cases += [
            ("TensorNHWC", e, None),
            ("TensorNHWC", e, (c + 1, (c + 1) * w + 2, ((c + 1) * w + 2) * h + 3)),
        ]
        cases += [
            ("TensorNCHW", e, None),
            ("TensorNCHW", e, (w + 1, (w + 1) * h + 2, ((w + 1) * h + 2) * c + 3)),
        ]
    for k in (1, 4, 32):
        for e in [(2, 3, 2, k), (1, 2, 3, 2 * k), (2, 1, 1, 3 * k)]:
            n, h, w, c = e
            cases += [
                (f"TensorNCxHWx<{k}>", e, None),
                (f"TensorNCxHWx<{k}>", e, (k * w + 1, (k * w + 1) * h + 2, 5000)),
            ]
            cases += [
                (f"TensorCxRSKx<{k}>", e, None),
                (f"TensorCxRSKx<{k}>", e, (k * n + 3, (k * n + 3) * w + 1, 7000)),
            ]
    for e5 in [(1, 1, 1, 1, 1), (2, 2, 3, 2, 5)]:
        cases += [("TensorNDHWC", e5, None), ("TensorNDHWC", e5, (6, 6 * 2 + 1, 13 * 3 + 2, 41 * 2 + 1))]
    cases += _tensor_op_cases()
    return cases


def _tensor_op_cases() -> List[Case]:
    out: List[Case] = []
    for bits in (4, 8, 16, 32, 64):
        v = 128 // bits
        ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256) if v <= k <= 8 * v]
        for K in ks:
            F = 8 * v // K
            row = v * 8 // F  # elements of one row in a line
            extents = [(row, F * 8), (2 * row, F * 4), (v, F), (min(row, 2 * v), 3 * F)]
            if F > 1:
                extents.append((row, 1))
            for C, S in extents:
                if C * S > 8192:
                    continue
                strides: List[Optional[Tuple[int, ...]]] = [None, (2 * C,), (C + row,)]
                for st in strides:
                    for base in ("TensorOpMultiplicandCongruous", "TensorOpMultiplicandCrosswise"):
                        out.append((f"{base}<{bits}, {K}>", (C, S), st))
                    out.append((f"ColumnMajorTensorOpMultiplicandCongruous<{bits}, {K}>", (C, S), st))
                    out.append((f"RowMajorTensorOpMultiplicandCrosswise<{bits}, {K}>", (S, C), st))
                out.append((f"TensorOpMultiplicand<{bits}, {K}>", (C, S), None))
                out.append((f"RowMajorTensorOpMultiplicandCongruous<{bits}, {K}>", (S, C), None))
                out.append((f"ColumnMajorTensorOpMultiplicandCrosswise<{bits}, {K}>", (C, S), (4 * C,)))
    return out


def _variants(base: str, C: int, S: int, st: Optional[Tuple[int, ...]]) -> List[Case]:
    """The pitch-linear class and its ColumnMajor / RowMajor variants over one extent."""
    return [
        (base, (C, S), st),
        ("ColumnMajor" + base, (C, S), st),
        ("RowMajor" + base, (S, C), st),
    ]


def _bitwise_cases() -> List[Case]:
    """The SM80 64-/128-bit, Volta and interleaved multiplicands: extents below, at and
    beyond the tile, strides packed, a power of two, and neither (the factored form)."""
    out: List[Case] = []
    sm80 = {
        "TensorOpMultiplicandCongruous64b": (16, 4),
        "TensorOpMultiplicand64bCrosswise": (16, 16),
        "TensorOpMultiplicandCongruous128b": (8, 4),
        "TensorOpMultiplicandCrosswise128x4": (8, 8),
    }
    volta = {
        f"VoltaTensorOpMultiplicand{k}<{b}>": (8 * 128 // b, 4)
        for k in ("Congruous", "BCongruous")
        for b in (16, 32, 8)
    }
    volta.update(
        {
            f"VoltaTensorOpMultiplicandCrosswise<{b}, {kb}>": (8 * 64 // b, 32)
            for b, kb in ((16, 32), (16, 64), (32, 32))
        }
    )
    for base, (Tc, Ts) in {**sm80, **volta}.items():
        for C in sorted({1, 2, Tc // 2, Tc, 2 * Tc, 3 * Tc}):
            for S in sorted({1, 2, Ts // 2, Ts, 2 * Ts, 3 * Ts}):
                if C * S > 4096 or C * S < 2:
                    continue
                big = 1 << (max(C, S) * 64).bit_length()
                for st in (None, (big,), (C + S + 24,)):
                    out += _variants(base, C, S, st)
    for bits in (4, 8, 16):
        for K in (4, 16, 32, 64, 128):
            for C in sorted({1, 4, K // 2, K} - {0}):
                for S in sorted({1, 3, 128 // K, 2 * 128 // K, 6 * 128 // K}):
                    for cls in (
                        "TensorOpMultiplicandColumnMajorInterleaved",
                        "TensorOpMultiplicandRowMajorInterleaved",
                    ):
                        out += [(f"{cls}<{bits}, {K}>", (C, S), None), (f"{cls}<{bits}, {K}>", (C, S), (77,))]
    return out


def _splits(name: str, ext: Tuple[int, ...]) -> bool:
    """Whether the extent is one the class's layout accepts (the others are refused)."""
    try:
        cutlass2_factors(name, ext)
    except Cutlass2Error:
        return False
    return True


BITWISE = [c for c in _bitwise_cases() if _splits(c[0], c[1])]
CASES = _cases() + BITWISE  # one compilation


# ----------------------------------------------------------------------------- the C++ program
_PRELUDE = r"""
#include <cutlass/layout/matrix.h>
#include <cutlass/layout/pitch_linear.h>
#include <cutlass/layout/tensor.h>
#include <cutlass/layout/tensor_op_multiplicand_sm75.h>
#include <cutlass/layout/tensor_op_multiplicand_sm70.h>
#include <cutlass/layout/tensor_op_multiplicand_sm80.h>
#include <cstdio>
#include <initializer_list>
using namespace cutlass;
using namespace cutlass::layout;

template <class L> L with_stride(std::initializer_list<long long> s) {
  typename L::Stride st;
  int k = 0;
  for (long long x : s) st[k++] = typename L::Stride::Index(x);
  return L(st);
}
template <class L> void dump2(int id, L const& l, int e0, int e1) {
  printf("V %d", id);
  for (int j = 0; j < e1; ++j)
    for (int i = 0; i < e0; ++i) printf(" %lld", (long long)l(typename L::TensorCoord(i, j)));
  printf("\n");
}
template <class L> void dump4(int id, L const& l, int n, int h, int w, int c) {
  printf("V %d", id);
  for (int d = 0; d < c; ++d) for (int z = 0; z < w; ++z) for (int y = 0; y < h; ++y)
    for (int x = 0; x < n; ++x) printf(" %lld", (long long)l(Tensor4DCoord(x, y, z, d)));
  printf("\n");
}
template <class L> void dump5(int id, L const& l, int n, int dd, int h, int w, int c) {
  printf("V %d", id);
  for (int e = 0; e < c; ++e) for (int z = 0; z < w; ++z) for (int y = 0; y < h; ++y)
    for (int q = 0; q < dd; ++q) for (int x = 0; x < n; ++x)
      printf(" %lld", (long long)l(Tensor5DCoord(x, q, y, z, e)));
  printf("\n");
}
"""


def _cpp_body(cases: List[Case]) -> str:
    """main()'s body: per class and constructor (packed, ldm, stride vector) one table of
    (case index, extent..., stride...) rows and one loop over it, so that the program's size
    (and its compile time) grows with the classes, not with the cases."""
    groups: dict = {}
    for k, (name, ext, stride) in enumerate(cases):
        how = "packed" if stride is None else "ldm" if len(stride) == 1 else "vector"
        groups.setdefault((name, how), []).append((k, ext, stride or ()))
    coord = {_MATRIX: "MatrixCoord", _PITCH: "PitchLinearCoord", _T4: "Tensor4DCoord", _T5: "Tensor5DCoord"}
    dump = {_MATRIX: "dump2", _PITCH: "dump2", _T4: "dump4", _T5: "dump5"}
    out = []
    for (name, how), rows in groups.items():
        kind = _coord_kind(name)
        ne = len(rows[0][1])
        ns = max(1, len(rows[0][2]))
        table = ", ".join(
            "{" + ", ".join(str(x) for x in (k, *ext, *(st or (0,)))) + "}" for k, ext, st in rows
        )
        e = ", ".join(f"int(r[{1 + i}])" for i in range(ne))
        st = [f"r[{1 + ne + i}]" for i in range(ns)]
        make = {
            "packed": f"{name}::packed({coord[kind]}({e}))",
            "ldm": f"{name}(typename {name}::Index({st[0]}))",
            "vector": f"with_stride<{name}>({{{', '.join(st)}}})",
        }[how]
        out.append(
            f"  {{ static const long long T[][{1 + ne + ns}] = {{{table}}};\n"
            f"    for (auto const& r : T) {{ auto l = {make}; {dump[kind]}(int(r[0]), l, {e}); }} }}"
        )
    return "\n".join(out)


def _values(L: Any) -> List[int]:
    return [int(x) for x in L.eval_all().tolist()]


def _oracle(cases: List[Case], tmp: Path) -> dict:
    """Compile one program printing every case's operator() values; {case index: values}."""
    inc = cutlass_include("cutlass/layout/matrix.h")
    if inc is None:
        pytest.skip("no CUTLASS headers (the nvidia-cutlass wheel ships them)")
    cc = cxx_compiler(inc)
    if cc is None:
        pytest.skip("no C++ compiler (g++ with CUDA's headers, or nvcc)")
    body = _cpp_body(cases)
    src = tmp / ("oracle.cu" if cc[0].endswith("nvcc") else "oracle.cpp")
    src.write_text(_PRELUDE + "int main() {\n" + body + "\n  return 0;\n}\n")
    exe = tmp / "oracle"
    res = subprocess.run(cc + [str(src), "-o", str(exe)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, check=True).stdout
    vals = {}
    for line in out.splitlines():
        if line.startswith("V "):
            parts = line.split()
            vals[int(parts[1])] = [int(x) for x in parts[2:]]
    assert len(vals) == len(cases)
    return vals


@pytest.fixture(scope="module")
def cpp_values(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _oracle(CASES, tmp_path_factory.mktemp("cutlass2"))


def _compare(cases: List[Case], cpp: dict) -> Tuple[int, int, set, list]:
    """(single layouts, factored, classes, mismatches): every case's layout (or, where no
    single swizzled layout exists, its exact factors outer o inner) against operator()."""
    direct = factored = 0
    classes = set()
    bad = []
    for k, (name, ext, stride) in enumerate(cases):
        st = stride[0] if stride is not None and len(stride) == 1 else stride
        truth = cpp[k]
        classes.add(parse_cutlass2(name)[0])
        if "TensorOp" in name:
            outer, inner = cutlass2_factors(name, ext, stride=st)
            iv, ov = inner.eval_all(), outer.eval_all()
            got = [int(x) for x in ov[iv].tolist()] if int(iv.max()) < ov.size else None
            if got != truth:
                bad.append((k, name, ext, stride, "factors"))
            factored += 1
        try:
            L = from_cutlass2(name, ext, stride=st)
        except Cutlass2UnrepresentableError:
            assert "TensorOp" in name, name
            continue
        assert isinstance(L, (Layout, ComposedLayout)), (name, L)
        if _values(L) != truth:
            bad.append((k, name, ext, stride, str(L)))
        direct += 1
    return direct, factored, classes, bad


def test_every_class_equals_the_headers_operator(cpp_values: dict) -> None:
    """Every case's layout (or, where no single swizzled layout exists, its exact factors
    outer o inner) gives the class's own operator() value at every coordinate."""
    direct, factored, classes, bad = _compare(CASES, cpp_values)
    assert not bad, bad[:5]
    assert classes == set(CUTLASS2_CLASSES), set(CUTLASS2_CLASSES) - classes
    assert direct > 3500 and factored > 5000 and len(BITWISE) > 4000, (direct, factored, len(BITWISE))
    print(f"\ncutlass2: {len(CASES)} cases, {direct} single layouts, {factored} factored, all equal")


# ----------------------------------------------------------------------------- quick tests
@pytest.mark.parametrize(
    "name, extent, stride, text",
    [
        ("ColumnMajorInterleaved<32>", (4, 64), None, "(4,(32,2)):(32,(1,128))"),
        ("RowMajorInterleaved<2>", (6, 3), 10, "((2,3),3):((1,10),2)"),
        ("RowMajor", (4, 8), 16, "(4,8):(16,1)"),
        ("cutlass::layout::ColumnMajor", (4, 8), None, "(4,8):(1,4)"),
        ("PitchLinear", (8, 2), 12, "(8,2):(1,12)"),
        ("TensorNHWC", (2, 3, 4, 5), None, "(2,3,4,5):(60,20,5,1)"),
        ("TensorNCHW", (2, 3, 4, 5), None, "(2,3,4,5):(60,4,1,12)"),
        ("TensorNCxHWx<4>", (1, 2, 3, 8), None, "(1,2,3,(4,2)):(48,12,4,(1,24))"),
        ("TensorCxRSKx<4>", (2, 3, 2, 8), None, "(2,3,2,(4,2)):(4,16,8,(1,48))"),
        ("TensorNDHWC", (1, 2, 2, 2, 3), None, "(1,2,2,2,3):(24,12,6,3,1)"),
        ("TensorOpMultiplicandCongruous<16, 64>", (64, 8), None, "Sw<3,3,3> o 0 o ((8,8),8):((1,8),64)"),
        (
            "TensorOpMultiplicandCongruous<16, 64>",
            (128, 8),
            None,
            "Sw<3,3,4> o 0 o ((8,8,2),8):((1,8,64),128)",
        ),
        (
            "TensorOpMultiplicandCrosswise<16, 32>",
            (32, 16),
            None,
            "Sw<2,3,3> o 0 o ((8,4),(2,8)):((1,8),(32,64))",
        ),
        ("TensorOpMultiplicandCongruous<32, 32>", (32, 8), None, "Sw<2,3,2> o 0 o (32,8):(1,32)"),
        (
            "TensorOpMultiplicandCrosswise<8, 64>",
            (64, 8),
            None,
            "Sw<2,4,3> o 0 o ((16,4),(2,4)):((1,16),(64,128))",
        ),
        ("TensorOpMultiplicandCongruous64b", (16, 4), None, "Sw<2,1,3> o 0 o ((8,2),4):((8,1),2)"),
        (
            "RowMajorTensorOpMultiplicandCongruous64b",
            (8, 32),
            64,
            "Sw<2,1,5> o 0 o ((4,2),(2,4,2,2)):((2,256),(8,64,1,16))",
        ),
        ("TensorOpMultiplicandCongruous128b", (8, 4), None, "Sw<2,0,3> o 0 o (8,4):(4,1)"),
        (
            "ColumnMajorTensorOpMultiplicandCrosswise128x4",
            (8, 8),
            None,
            "Sw<1,2,3> o 0 o ((4,2),8):((1,32),4)",
        ),
        ("VoltaTensorOpMultiplicandCongruous<16>", (64, 4), None, "Sw<2,3,3> o 0 o ((8,8),4):((1,32),8)"),
        (
            "RowMajorVoltaTensorOpMultiplicandBCongruous<16>",
            (4, 64),
            None,
            "Sw<2,3,3> o 0 o (4,(8,4,2)):(8,(1,64,32))",
        ),
        (
            "VoltaTensorOpMultiplicandCrosswise<16, 32>",
            (32, 16),
            None,
            "Sw<2,2,5> o 0 o ((4,8),(4,4)):((1,64),(16,4))",
        ),
        (
            "TensorOpMultiplicandRowMajorInterleaved<8, 32>",
            (32, 8),
            None,
            "Sw<1,4,3> o 0 o ((16,2),8):((0,16),32)",
        ),
    ],
)
def test_known_forms(name: str, extent: Any, stride: Any, text: str) -> None:
    assert str(from_cutlass2(name, extent, stride=stride)) == text


def test_tensor_op_is_a_swizzled_layout_and_the_factors_agree() -> None:
    L = from_cutlass2("TensorOpMultiplicandCrosswise<16, 64>", (64, 16), stride=64)
    assert isinstance(L, ComposedLayout) and str(L.layout_a) == "Sw<3,3,3>"
    outer, inner = cutlass2_factors("TensorOpMultiplicandCrosswise<16, 64>", (64, 16), stride=64)
    assert [outer(x) for x in _values(inner)] == _values(L)
    # the row-major variant is the transpose of the pitch-linear class
    R = from_cutlass2("RowMajorTensorOpMultiplicandCrosswise<16, 64>", (16, 64), stride=64)
    assert all(R(s, c) == L(c, s) for s in range(16) for c in range(64))


def test_ldm_that_is_no_power_of_two_is_factored() -> None:
    """ldm = kCrosswise * stages (3 stages): the XOR's source is not at fixed bits of the
    offset, so no single swizzled layout; the factors are exact."""
    name = "TensorOpMultiplicandCrosswise<16, 64>"
    with pytest.raises(Cutlass2UnrepresentableError, match="power of two"):
        from_cutlass2(name, (192, 4), stride=192)
    outer, inner = cutlass2_factors(name, (192, 4), stride=192)
    assert str(outer) == "(64,8,3):(1,192,64)"  # 8 canonical rows: the XOR reads 3 row bits
    assert str(inner) == "Sw<3,3,3> o 0 o ((8,8,3),4):((1,8,512),64)"


def test_symbolic_extents_and_leading_dimension() -> None:
    M, N, LD = symbols("M N LD")
    assert from_cutlass2("ColumnMajor", (M, N), stride=LD) == Layout((M, N), (1, LD))
    assert from_cutlass2("RowMajor", (M, N)) == Layout((M, N), (N, 1))
    L = from_cutlass2("TensorNHWC", (N, 3, 3, M))
    assert L.subs(N=2, M=8) == from_cutlass2("TensorNHWC", (2, 3, 3, 8))
    with pytest.raises(UndecidableConditionError, match="M % 32 == 0"):
        from_cutlass2("RowMajorInterleaved<32>", (M, N), stride=LD)
    with assuming("M % 32 == 0"):
        L = from_cutlass2("RowMajorInterleaved<32>", (M, N), stride=LD)
        assert L.subs(M=64, N=3, LD=100) == from_cutlass2("RowMajorInterleaved<32>", (64, 3), stride=100)
    with pytest.raises(Cutlass2Error, match="must be an integer here"):
        from_cutlass2("TensorOpMultiplicandCongruous<16, 64>", (64, 8), stride=LD)
    with pytest.raises(Cutlass2Error, match="must be an integer here"):
        from_cutlass2("TensorOpMultiplicandCongruous64b", (M, 8))
    with pytest.raises(Cutlass2Error, match="must be an integer here"):
        from_cutlass2("VoltaTensorOpMultiplicandCongruous<16>", (64, 8), stride=LD)


def test_from_cpp_reads_the_class_spellings() -> None:
    r = from_cpp("cutlass::layout::ColumnMajorInterleaved<32>", extent=(4, 64))
    assert str(r.value) == "(4,(32,2)):(32,(1,128))" and r.assumptions == ()
    r = from_cpp(
        "cutlass::layout::TensorOpMultiplicandCongruous<cutlass::sizeof_bits<cutlass::half_t>::value, 64>",
        extent=(64, 8),
    )
    assert str(r.value) == "Sw<3,3,3> o 0 o ((8,8),8):((1,8),64)"
    assert str(from_cpp("layout::RowMajor", extent=(2, 3), stride=8).value) == "(2,3):(8,1)"
    with pytest.raises(Cutlass2Error, match="needs its extent"):
        from_cpp("cutlass::layout::RowMajor")
    with pytest.raises(LayoutError, match="CUTLASS 2.x"):
        from_cpp("Layout<Shape<_4>, Stride<_1>>", extent=(4,))
    assert str(from_cpp("Sw<3,4,3> o _0 o (_8,_64):(_64,_1)").value) == "Sw<3,4,3> o 0 o (8,64):(64,1)"


def test_two_xor_distances_are_factored_with_f2_strides() -> None:
    """TensorOpMultiplicand64bCrosswise XORs line bit 2 into column bit 0 and line bit 3 into
    column bit 3 (distances w + 2 and w): no single swizzle; the factors are exact."""
    name = "TensorOpMultiplicand64bCrosswise"
    with pytest.raises(Cutlass2UnrepresentableError, match="different distances") as ei:
        from_cutlass2(name, (16, 16))
    assert ei.value.condition == "one XOR distance"
    outer, inner = cutlass2_factors(name, (16, 16))
    assert str(outer) == "(16,16):(1,16)"
    assert str(inner) == "((4,2,2),(2,4,2)):((F2,F65,F136),(F8,F16,F1))"
    vals = [outer(x) for x in _values(inner)]
    assert sorted(vals) == list(range(256))  # a permutation of the 16 x 16 tile
    # Volta's crosswise layout: one distance up to 16 strided vectors, two beyond
    V = "VoltaTensorOpMultiplicandCrosswise<16, 32>"
    L = from_cutlass2(V, (32, 16))
    outer, inner = cutlass2_factors(V, (32, 16))
    assert [outer(x) for x in _values(inner)] == _values(L)
    with pytest.raises(Cutlass2UnrepresentableError, match="different distances"):
        from_cutlass2(V, (32, 32))


@pytest.mark.parametrize(
    "name, extent",
    [
        ("TensorOpMultiplicand64bCrosswise", (16, 16)),
        ("TensorOpMultiplicand64bCrosswise", (32, 32)),
        ("VoltaTensorOpMultiplicandCrosswise<16, 32>", (16, 32)),
        ("VoltaTensorOpMultiplicandCrosswise<16, 64>", (64, 64)),
        ("VoltaTensorOpMultiplicandCrosswise<32, 32>", (8, 64)),
    ],
)
def test_the_f2_search_finds_no_swizzle_where_the_two_distances_are_refused(name: str, extent: Any) -> None:
    """An independent check of the refusal: from_f2 tries every swizzle within the images'
    bits and finds none equal to the exact inner factor."""
    from layoutproof.f2 import F2Layout, from_f2

    def ints(x: Any) -> Any:
        return tuple(ints(e) for e in x) if isinstance(x, tuple) else int(x)

    with pytest.raises(Cutlass2UnrepresentableError, match="different distances"):
        from_cutlass2(name, extent)
    _outer, inner = cutlass2_factors(name, extent)
    with pytest.raises(LayoutError):
        from_f2(F2Layout(inner.shape, ints(inner.stride)))
    # one size smaller in the strided extent, a single XOR distance remains and both agree
    small = (extent[0], 8)
    L = from_cutlass2(name, small, stride=1024)
    outer, inner = cutlass2_factors(name, small, stride=1024)
    assert isinstance(L, (Layout, ComposedLayout))
    assert [outer(x) for x in _values(inner)] == _values(L)


def test_pitch_that_is_no_power_of_two_is_factored_for_the_new_classes() -> None:
    name = "RowMajorTensorOpMultiplicandCrosswise128x4"
    with pytest.raises(Cutlass2UnrepresentableError, match="power of two") as ei:
        from_cutlass2(name, (16, 8), stride=24)
    assert ei.value.condition == "line pitch a power of two"
    outer, inner = cutlass2_factors(name, (16, 8), stride=24)
    assert str(outer) == "(16,8):(1,24)"
    # the interleaved classes' operator() ignores the leading dimension
    a = from_cutlass2("TensorOpMultiplicandColumnMajorInterleaved<8, 32>", (32, 8), stride=77)
    assert a == from_cutlass2("TensorOpMultiplicandColumnMajorInterleaved<8, 32>", (32, 8))


def test_from_cpp_reads_the_new_class_spellings() -> None:
    r = from_cpp("cutlass::layout::ColumnMajorTensorOpMultiplicandCongruous128b", extent=(8, 4))
    assert str(r.value) == "Sw<2,0,3> o 0 o (8,4):(4,1)"
    r = from_cpp(
        "cutlass::layout::VoltaTensorOpMultiplicandCongruous<cutlass::sizeof_bits<cutlass::half_t>::value>",
        extent=(64, 4),
    )
    assert str(r.value) == "Sw<2,3,3> o 0 o ((8,8),4):((1,32),8)"
    r = from_cpp("layout::TensorOpMultiplicandRowMajorInterleaved<8, 32>", extent=(32, 8))
    assert str(r.value) == "Sw<1,4,3> o 0 o ((16,2),8):((0,16),32)"


@pytest.mark.parametrize(
    "name, extent, stride, what, match",
    [
        ("RowMajorInterleved<32>", (32, 4), None, "class", "is not a CUTLASS 2.x layout class"),
        ("cute::Layout", (4,), None, "class", "is not a CUTLASS 2.x layout class"),
        ("ColumnMajorInterleaved<32>", (4, 48), None, "extent", "does not divide the extent 48"),
        ("TensorNCxHWx<32>", (1, 1, 1, 40), None, "extent", "does not divide the extent 40"),
        ("ColumnMajorInterleaved", (4, 48), None, "template", "takes 1 template argument"),
        ("ColumnMajorInterleaved<0>", (4, 48), None, "template", "must be positive"),
        ("ColumnMajorInterleaved<x>", (4, 48), None, "template", "not an integer"),
        ("TensorOpMultiplicandCrosswise<16, 128>", (64, 8), None, "template", "forbids this crosswise"),
        ("TensorOpMultiplicandCrosswise<16, 48>", (64, 8), None, "template", "power of two"),
        ("TensorOpMultiplicandCrosswise<16, 4>", (64, 8), None, "template", "power of two"),
        ("TensorOpMultiplicandCongruous<24, 64>", (64, 8), None, "template", "element size"),
        ("TensorOpMultiplicandCongruous<16, 64>", (60, 8), None, "extent", "not a multiple"),
        ("RowMajor", (4,), None, "extent", "the extent is 2 numbers"),
        ("RowMajor", (4, 0), None, "extent", "positive"),
        ("RowMajor", (4, 2), (1, 2), "stride", "stride vector has 1 entry"),
        ("TensorNHWC", (1, 2, 3, 4), 5, "stride", "3 entries"),
        ("RowMajor", (4, 2), 1.5, "stride", "integer or a SymPy"),
        ("TensorOpMultiplicandCongruous64b<16>", (16, 4), None, "template", "takes 0 template"),
        ("TensorOpMultiplicandCongruous64b", (24, 4), None, "extent", "not a multiple of the 16"),
        ("TensorOpMultiplicandCongruous64b", (12, 4), None, "extent", "does not split"),
        ("TensorOpMultiplicandCrosswise128x4", (8, 5), None, "extent", "does not split"),
        ("VoltaTensorOpMultiplicandCongruous<24>", (64, 4), None, "template", "power of two"),
        ("VoltaTensorOpMultiplicandCrosswise<16, 0>", (32, 4), None, "template", "KBlock"),
        ("VoltaTensorOpMultiplicandCrosswise<128, 32>", (32, 4), None, "template", "at most 64 bits"),
        ("TensorOpMultiplicandColumnMajorInterleaved<8, 48>", (32, 4), None, "template", "InterleavedK"),
        ("TensorOpMultiplicandColumnMajorInterleaved<8, 256>", (32, 4), None, "template", "InterleavedK"),
        ("TensorOpMultiplicandColumnMajorInterleaved<8, 32>", (64, 4), None, "extent", "exceeds 32"),
        (
            "TensorOpMultiplicandRowMajorInterleaved<8, 32>",
            (32, 12),
            None,
            "extent",
            "not a multiple of the 8",
        ),
        ("RowMajorTensorOpMultiplicandCongruous128b", (4, 8), 8.0, "stride", "integer or a SymPy"),
    ],
)
def test_bad_input_is_named(name: str, extent: Any, stride: Any, what: str, match: str) -> None:
    with pytest.raises(Cutlass2Error, match=match) as ei:
        from_cutlass2(name, extent, stride=stride)
    assert ei.value.what == what


def test_garbage_gives_layout_errors() -> None:
    for args in [
        (None, (1, 2)),
        (3, (1, 2)),
        ("RowMajor", None),
        ("RowMajor", "ab"),
        ("RowMajor", (True, 2)),
    ]:
        with pytest.raises(LayoutError):
            from_cutlass2(*args)
    with pytest.raises(LayoutError):
        cutlass2_factors("RowMajor", (2, 2))


# ----------------------------------------------------------------------------- symbolic proofs
def _z3_eval(L: Layout, crd: List[Any], env: dict) -> Any:
    """L at the natural coordinate ``crd`` (one Z3 integer per top-level mode), through the
    layout's own shape and strides: colexicographic digits of each mode, times the strides."""
    import sympy
    import z3

    def term(x: Any) -> Any:
        return (
            z3.IntVal(int(x))
            if isinstance(x, int)
            else sympy.lambdify(sorted(env), x, modules=[{}])(*[env[k] for k in sorted(env)])
        )

    def flat(t: Any) -> List[Any]:
        return [y for e in t for y in flat(e)] if isinstance(t, tuple) else [t]

    total: Any = z3.IntVal(0)
    shapes = L.shape if isinstance(L.shape, tuple) else (L.shape,)
    strides = L.stride if isinstance(L.stride, tuple) else (L.stride,)
    for x, sh, st in zip(crd, shapes, strides):
        fs, fd = flat(sh), flat(st)
        div: Any = z3.IntVal(1)
        for i, (s, d) in enumerate(zip(fs, fd)):
            digit = x / div if i == len(fs) - 1 else (x / div) % term(s)
            total = total + digit * term(d)
            div = div * term(s)
    return total


# the headers' operator() (cutlass/layout/matrix.h, pitch_linear.h, tensor.h), transcribed
_HEADER = {
    "RowMajor": lambda c, s: c[0] * s[0] + c[1],
    "ColumnMajor": lambda c, s: c[1] * s[0] + c[0],
    "PitchLinear": lambda c, s: c[0] + c[1] * s[0],
    "RowMajorInterleaved<32>": lambda c, s: (c[0] / 32) * s[0] + c[1] * 32 + c[0] % 32,
    "ColumnMajorInterleaved<32>": lambda c, s: (c[1] / 32) * s[0] + c[0] * 32 + c[1] % 32,
    "TensorNHWC": lambda c, s: c[3] + s[0] * c[2] + s[1] * c[1] + s[2] * c[0],
    "TensorNCHW": lambda c, s: c[2] + s[0] * c[1] + s[1] * c[3] + s[2] * c[0],
    "TensorNCxHWx<32>": lambda c, s: c[3] % 32 + 32 * c[2] + s[0] * c[1] + s[1] * (c[3] / 32) + s[2] * c[0],
    "TensorCxRSKx<32>": lambda c, s: c[3] % 32 + 32 * c[0] + s[0] * c[2] + s[1] * c[1] + s[2] * (c[3] / 32),
    "TensorNDHWC": lambda c, s: c[4] + s[0] * c[3] + s[1] * c[2] + s[2] * c[1] + s[3] * c[0],
}


@pytest.mark.parametrize("name", list(_HEADER))
def test_symbolic_extents_equal_the_header_formula_for_all_values(name: str) -> None:
    """With every extent and stride a symbol, the layout equals the header's operator() at
    every coordinate of the extent, for all values (Z3: the negation is unsatisfiable)."""
    z3 = pytest.importorskip("z3")
    rank = 5 if name == "TensorNDHWC" else 4 if name.startswith("Tensor") else 2
    nst = {2: 1, 4: 3, 5: 4}[rank]
    E = symbols(" ".join(f"E{i}" for i in range(rank)))
    D = symbols(" ".join(f"D{i}" for i in range(nst)))
    E = E if isinstance(E, tuple) else (E,)
    D = D if isinstance(D, tuple) else (D,)
    env = {str(s): z3.Int(str(s)) for s in (*E, *D)}
    split = {"RowMajorInterleaved<32>": 0, "ColumnMajorInterleaved<32>": 1}.get(name)
    split = 3 if name in ("TensorNCxHWx<32>", "TensorCxRSKx<32>") else split
    facts = [f"{E[split]} % 32 == 0"] if split is not None else []
    with assuming(*facts):
        L = from_cutlass2(name, E, stride=D[0] if nst == 1 else D)
    crd = [z3.Int(f"x{i}") for i in range(rank)]
    s = z3.Solver()
    for i, x in enumerate(crd):
        s.add(0 <= x, x < env[str(E[i])])
    for d in D:
        s.add(env[str(d)] >= 0)
    if split is not None:
        s.add(env[str(E[split])] % 32 == 0)
    s.add(_z3_eval(L, crd, env) != _HEADER[name](crd, [env[str(d)] for d in D]))
    assert s.check() == z3.unsat, s.model()


# ----------------------------------------------------------------------------- refusals checked
def _swizzled(B: int, M: int, S: int, x: Any) -> Any:
    if S >= 0:
        return x ^ ((x >> S) & (((1 << B) - 1) << M))
    return x ^ ((x << -S) & (((1 << B) - 1) << (M - S)))


def _is_layout_1d(g: List[int]) -> bool:
    """Whether g(i) is a layout's function of one index: digits of some factorization of
    len(g), each with the stride read at its first step."""
    import numpy as np

    def facs(n: int) -> List[List[int]]:
        return [[]] if n == 1 else [[d] + r for d in range(2, n + 1) if n % d == 0 for r in facs(n // d)]

    idx = np.arange(len(g))
    for fac in facs(len(g)):
        val = np.zeros(len(g), dtype=np.int64)
        p = 1
        for d in fac:
            val += ((idx // p) % d) * g[p]
            p *= d
        if (val == np.array(g)).all():
            return True
    return len(g) == 1


@pytest.mark.parametrize(
    "name, extent, ldm",
    [
        ("TensorOpMultiplicandCongruous128b", (8, 8), 12),
        ("TensorOpMultiplicandCongruous64b", (16, 8), 24),
        ("TensorOpMultiplicandCrosswise128x4", (8, 16), 24),
    ],
)
def test_no_small_swizzle_fits_a_pitch_that_is_no_power_of_two(name: str, extent: Any, ldm: int) -> None:
    """Brute force behind the refusal: no Swizzle<B, M, S> (B <= 4, M <= 8, |S| <= 10) turns
    the class's offsets into a layout's (sw is an involution: f = sw o L iff sw o f = L)."""
    with pytest.raises(Cutlass2UnrepresentableError, match="power of two"):
        from_cutlass2(name, extent, stride=ldm)

    def fitting(stride: int) -> List[Tuple[int, int, int]]:
        outer, inner = cutlass2_factors(name, extent, stride=stride)
        F = outer.eval_all()[inner.eval_all()].reshape(extent[1], extent[0]).T  # F[c, s]
        found = []
        for B in range(1, 5):
            for M in range(9):
                for S in [*range(-10, -B + 1), *range(B, 11)]:
                    G = _swizzled(B, M, S, F)
                    if G[0, 0] == 0 and (G == G[:, :1] + G[:1, :]).all():
                        if _is_layout_1d(list(G[:, 0])) and _is_layout_1d(list(G[0, :])):
                            found.append((B, M, S))
        return found

    assert fitting(ldm) == []
    # the search does find the swizzle where the pitch is a power of two
    sw = from_cutlass2(name, extent, stride=32).layout_a
    assert (sw.bits, sw.base, sw.shift) in fitting(32)
