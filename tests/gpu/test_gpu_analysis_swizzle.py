"""Swizzle synthesis (layoutproof.gpu.analysis.swizzle): the least swizzle against a brute
force over the family with banks() on every composed layout, the fast per-candidate count
against banks() candidate by candidate, the refutations confirmed over the whole family,
the storage bijection, the TMA and wgmma families, the emitted C++ compiled against the CuTe
headers and the emitted DSL run in the CuTe DSL, and bad input refused by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from oracles import cutlass_include, cxx_compiler, dsl_env

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof.errors import InadmissibleError, LayoutError, MalformedLayoutError
from layoutproof.gpu.analysis import AccessError, banks
from layoutproof.gpu.analysis.swizzle import (
    TMA_SWIZZLES,
    SwizzleReport,
    swizzle_family,
    synthesize_swizzle,
)
from layoutproof.gpu.isa.atoms import COPY_ATOMS
from layoutproof.gpu.isa.gmma import smem_atom, tile_to_shape
from layoutproof.gpu.isa.tiled import TiledCopy
from layoutproof.symbolic import symbols

# ----------------------------------------------------------------------------- accesses of the examples
SM80_TILE = Layout((8, 64), (64, 1))  # one 128-byte row of f16 per row
SM80_WRITER = Layout(((8, 4), 8, 2), ((64, 1), 8, 4))  # cp.async.16: 8 lanes per row
SM80_READER = Layout(((8, 4), 8, 2), ((1, 64), 8, 256))  # ldmatrix.x4: matrix j = chunk j of 8 rows
TILE64 = Layout((64, 64), (64, 1))
ROWS64 = Layout(((8, 4), 8, (1, 16)), ((512, 1), 64, (4096, 4)))  # 8 lanes per 128-byte tile row
A_READER64 = Layout(((16, 2), 8, (4, 4)), ((1, 512), 64, (16, 1024)))  # ldmatrix.x4, A of m16n8k16
COLUMN = Layout(32, 1)  # 32 lanes down column 0 of a 32x32 tile
ROW_V4 = Layout((32, 4), (1, 32))  # lane t: row t of a (32,4) f32 tile, one 16-byte vector
MN_TILE = Layout((64, 64), (1, 64))  # MN-major: contiguous along MN
MN_WRITER = Layout(((8, 4), 8, 16), ((8, 64), 1, 256))  # 8 lanes per 128-byte MN column
MN_READER = Layout(((8, 4), 8, (2, 8)), ((64, 8), 1, (32, 512)))  # 8 k-rows x 16 bytes per matrix


# ----------------------------------------------------------------------------- the brute force
def family_by_hand(n: int):
    """The documented free family, enumerated independently: no swizzle, then Sw<B,M,S>
    with 1 <= B <= S, M + B + S <= n, by (B, M + B + S, S)."""
    out = [None]
    keys = []
    for b in range(1, n + 1):
        for m in range(0, n + 1):
            for s in range(b, n + 1):
                if m + b + s <= n:
                    keys.append((b, m + b + s, s, m))
    out += [Swizzle(b, m, s) for b, _, s, m in sorted(keys)]
    return out


def brute(tile, accesses, bits, cands):
    """(index of the first candidate all of whose accesses banks() proves on the composed
    layout, that keeps the storage; per candidate the total wavefronts or None)."""
    storage = np.sort(np.asarray(tile.eval_all()))
    first, totals = None, []
    for k, sw in enumerate(cands):
        L = tile if sw is None else ComposedLayout(sw, 0, tile)
        if not np.array_equal(np.sort(np.asarray(L.eval_all())), storage):
            totals.append(None)
            continue
        try:
            rs = [banks(L, a, i, element_bits=bits) for a, i in accesses]
        except AccessError:  # a vector broken by the swizzle
            totals.append(None)
            continue
        totals.append(sum(r.total for r in rs))
        if first is None and all(r.status == "proved" for r in rs):
            first = k
    return first, totals


def address_bits(tile):
    return (int(tile.cosize) - 1).bit_length()


CASES = [
    ("column", Layout((32, 32), (32, 1)), [(COLUMN, "ld.shared.b32")], 32),
    ("sm80", SM80_TILE, [(SM80_WRITER, "cp.async.16"), (SM80_READER, "ldmatrix.x4")], 16),
    (
        "64x32",
        Layout((64, 32), (32, 1)),
        [(Layout(((16, 2), 8, (4, 2)), ((1, 512), 64, (16, 1024))), "ldmatrix.x4")],
        16,
    ),
    (
        "v2",
        Layout((16, 64), (64, 1)),
        [(Layout(((16, 2), 4, 8), ((1, 64), 16, 128)), "ld.shared.v2.b32")],
        16,
    ),
    ("none", Layout((32, 4), (4, 1)), [(ROW_V4, "st.shared.v4.b32"), (ROW_V4, "ld.shared.b32")], 32),
    (
        "fa2",
        Layout((32, 64), (64, 1)),
        [(Layout(((8, 2, 2), 8, (2, 4)), ((1, 8, 256), 32, (16, 512))), "ldmatrix.x4.trans")],
        16,
    ),
]


@pytest.mark.parametrize("name,tile,accesses,bits", CASES, ids=[c[0] for c in CASES])
def test_least_swizzle_is_the_brute_force_first(name, tile, accesses, bits):
    r = synthesize_swizzle(tile, accesses, element_bits=bits)
    cands = family_by_hand(address_bits(tile))
    assert [str(s) for s in swizzle_family(address_bits(tile))] == [str(s) for s in cands[1:]]
    first, totals = brute(tile, accesses, bits, cands)
    if first is None:
        assert r.status == "refuted" and r.candidates == len(cands)
        best = min(t for t in totals if t is not None)
        assert r.total == best and r.total > r.minimum
        assert cands[totals.index(best)] == r.swizzle
        assert r.witness is not None and r.witness.ways > 1
    else:
        assert r.status == "proved", r.line()
        assert r.swizzle == cands[first] and r.candidates == first + 1
        assert all(x.status == "proved" for x in r.reports) and r.total == r.minimum
        assert r.storage is not None and r.storage.status == "proved"


@pytest.mark.parametrize("name,tile,accesses,bits", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_fast_count_is_banks_on_the_composed_layout(name, tile, accesses, bits):
    """The search counts wavefronts from the unswizzled layout's coordinates with the XOR
    applied in numpy; for every candidate it equals banks() on the composed layout (or both
    refuse the vectors)."""
    from layoutproof.gpu.analysis.swizzle import _prepare, _wavefronts

    prepared = _prepare(tile, accesses, bits, 0)
    table0 = np.asarray(tile.eval_all(), dtype=np.int64)
    for sw in family_by_hand(address_bits(tile)):
        L = tile if sw is None else ComposedLayout(sw, 0, tile)
        table = table0 if sw is None else np.asarray(sw(table0), dtype=np.int64)
        for a in prepared:
            fast = _wavefronts(table, a, bits, 0)
            try:
                want = banks(L, a.access, a.ins, element_bits=bits).wavefronts
            except AccessError:
                want = None
            if want is None:
                assert fast is None, (sw, a.ins.name)
            else:
                assert fast is not None and np.array_equal(fast, want), (sw, a.ins.name)


def test_a_fast_count_that_lies_is_caught_by_the_certificate(monkeypatch):
    """Planted bug: the fast count calls every candidate conflict-free.  The certificate
    (banks() on the composed layout) still rejects each wrong one, so the answer is the same."""
    import layoutproof.gpu.analysis.swizzle as mod

    def liar(table, a, bits, base):
        return np.ones((1, 1, a.ins.phases), dtype=np.int64)

    monkeypatch.setattr(mod, "_wavefronts", liar)
    r = synthesize_swizzle(
        SM80_TILE, [(SM80_WRITER, "cp.async.16"), (SM80_READER, "ldmatrix.x4")], element_bits=16
    )
    assert r.status == "proved" and r.swizzle == Swizzle(3, 3, 3)
    assert r.rejected == {"refuted by the certificate": 64}


# ----------------------------------------------------------------------------- the worked examples
def test_column_read_fixed_by_five_bits():
    r = synthesize_swizzle(Layout((32, 32), (32, 1)), [(COLUMN, "ld.shared.b32")], element_bits=32)
    assert r.status == "proved" and r.swizzle == Swizzle(5, 0, 5)
    assert r.before[0].max_ways == 32 and r.reports[0].max_ways == 1


def test_sm80_writer_and_ldmatrix_reader_give_333():
    r = synthesize_swizzle(
        SM80_TILE, [(SM80_WRITER, "cp.async.16"), (SM80_READER, "ldmatrix.x4")], element_bits=16
    )
    assert r.status == "proved" and r.swizzle == Swizzle(3, 3, 3)
    assert [b.max_ways for b in r.before] == [1, 8] and [x.max_ways for x in r.reports] == [1, 1]
    assert r.canonical == "GMMA K-major SW128 atom tiled to (8, 64)"
    assert r.rejected["vectors broken"] > 0 and r.rejected["bank conflict"] > 0
    assert sum(r.rejected.values()) == r.candidates - 1


def test_tiled_copy_writer_on_a_64x64_tile():
    tc = TiledCopy(
        COPY_ATOMS["SM80_CP_ASYNC_CACHEALWAYS_16B"], Layout((16, 8), (8, 1)), Layout((1, 8)), elem_bits=16
    )
    r = synthesize_swizzle(TILE64, [tc, (A_READER64, "ldmatrix.x4")], element_bits=16)
    assert (
        r.status == "proved" and r.swizzle == Swizzle(3, 3, 3) and r.reports[0].instruction == "cp.async.16"
    )


def test_tma_family_128B_rows_give_sw128():
    r = synthesize_swizzle(SM80_TILE, [(SM80_READER, "ldmatrix.x4")], element_bits=16, tma=True)
    assert r.status == "proved" and r.swizzle == Swizzle(3, 3, 3)
    assert r.tma_mode == "CU_TENSOR_MAP_SWIZZLE_128B" and TMA_SWIZZLES[r.tma_mode] == 3
    assert r.rejected == {"bank conflict": 1, "TMA cannot write it": 2}  # 32B, 64B: box of 128 bytes


def test_tma_family_64B_rows_give_sw64():
    tile = Layout((64, 32), (32, 1))
    reader = Layout(((16, 2), 8, (4, 2)), ((1, 512), 64, (16, 1024)))
    r = synthesize_swizzle(tile, [(reader, "ldmatrix.x4")], element_bits=16, tma=True)
    assert (
        r.status == "proved" and r.swizzle == Swizzle(2, 3, 3) and r.tma_mode == "CU_TENSOR_MAP_SWIZZLE_64B"
    )


def test_tma_family_cannot_fix_a_32_row_column_read():
    """TMA's swizzles move whole 16-byte chunks and repeat every 8 rows: a 32-row column
    read stays 4-way under the best of them (the free family's Sw<5,0,5> fixes it)."""
    tile = Layout((32, 32), (32, 1))
    r = synthesize_swizzle(tile, [(COLUMN, "ld.shared.b32")], element_bits=32, tma=True)
    assert r.status == "refuted" and r.candidates == 4
    assert r.swizzle == Swizzle(3, 2, 3) and r.tma_mode == "CU_TENSOR_MAP_SWIZZLE_128B"
    assert r.witness.ways == 4 and r.total == 4 and r.minimum == 1
    for b in range(4):  # confirmed candidate by candidate
        L = tile if b == 0 else composition(Swizzle(b, 2, 3), tile)
        assert banks(L, COLUMN, "ld.shared.b32", element_bits=32).status == "refuted"


def test_none_in_the_family_when_vectors_pin_the_bank_bits():
    """16-byte row writes of a (32,4) f32 tile keep the two low offset bits; a column of 32
    rows then has 3 free bank bits: every candidate leaves the read 4-way."""
    tile = Layout((32, 4), (4, 1))
    r = synthesize_swizzle(tile, [(ROW_V4, "st.shared.v4.b32"), (ROW_V4, "ld.shared.b32")], element_bits=32)
    assert r.status == "refuted" and r.candidates == len(family_by_hand(7))
    assert r.swizzle is None and r.reports[1].max_ways == 4 and r.witness.ways == 4
    assert "best in the family: no swizzle, 20 wavefronts where 8 suffice" in r.text()
    # the read alone is fixable: the writer's vectors are what forbids it
    alone = synthesize_swizzle(tile, [(ROW_V4, "ld.shared.b32")], element_bits=32)
    assert alone.status == "proved" and alone.swizzle.base < 2


def test_wgmma_k_major_with_row_writer_is_sw128():
    r = synthesize_swizzle(
        TILE64, [(ROWS64, "cp.async.16"), (A_READER64, "ldmatrix.x4")], element_bits=16, wgmma="K"
    )
    assert r.status == "proved" and r.atom == "K_SW128" and r.candidates == 4
    assert np.array_equal(
        np.asarray(r.layout.eval_all()),
        np.asarray(tile_to_shape(smem_atom("K", "SW128"), (64, 64)).layout.eval_all()),
    )
    # the ldmatrix reader alone is served by the interleaved atom (8x8 core matrices of 128 bytes)
    inter = synthesize_swizzle(TILE64, [(A_READER64, "ldmatrix.x4")], element_bits=16, wgmma="K")
    assert inter.atom == "K_INTER" and inter.swizzle is None
    assert (
        inter.cpp()
        == "auto smem = tile_to_shape(GMMA::Layout_K_INTER_Atom<half_t>{}, make_shape(Int<64>{}, Int<64>{}));"
    )


def test_wgmma_mn_major():
    r = synthesize_swizzle(
        MN_TILE, [(MN_WRITER, "cp.async.16"), (MN_READER, "ldmatrix.x4.trans")], element_bits=16, wgmma="MN"
    )
    assert r.status == "proved" and r.atom == "MN_SW128", r.text()
    assert r.canonical == "GMMA MN-major SW128 atom tiled to (64, 64)"
    assert [b.max_ways for b in r.before] == [1, 8]


def test_wgmma_atom_that_does_not_tile_is_rejected():
    """K = 16 halves: only the INTER (8) and SW32 (16) atoms tile (64, 16).  Row writes
    need SW32; a 32-row column read no atom fixes, and the two wider ones do not tile."""
    tile = Layout((64, 16), (16, 1))
    rows = Layout(((2, 16), 8, 4), ((512, 1), 64, 16))  # 2 lanes per 32-byte row
    r = synthesize_swizzle(tile, [(rows, "cp.async.16")], element_bits=16, wgmma="K")
    assert r.status == "proved" and r.atom == "K_SW32" and r.swizzle == Swizzle(1, 3, 3)
    column = Layout((32, 2), (1, 64))  # lane t: row t, columns 0-1 (one 32-bit word)
    bad = synthesize_swizzle(
        tile, [(rows, "cp.async.16"), (column, "ld.shared.b32")], element_bits=16, wgmma="K"
    )
    assert bad.status == "refuted" and bad.rejected["the atom does not tile the shape"] == 2
    assert bad.atom == "K_SW32" and bad.witness.ways == 4


# ----------------------------------------------------------------------------- storage
def test_padded_layout_keeps_its_storage():
    """On a padded tile only swizzles that map the used offsets onto themselves qualify."""
    tile = Layout((8, 32), (40, 1))
    r = synthesize_swizzle(tile, [(Layout(((8, 4), 8), ((1, 64), 8)), "ldmatrix.x4")], element_bits=16)
    assert r.status == "proved"
    assert np.array_equal(np.sort(np.asarray(r.layout.eval_all())), np.sort(np.asarray(tile.eval_all())))
    moved = synthesize_swizzle(
        tile, [(Layout(((8, 4), 8), ((1, 64), 8)), "ldmatrix.x4")], element_bits=16, family=[Swizzle(3, 3, 3)]
    )
    assert moved.status == "refuted" and moved.rejected == {"not the same storage": 1}
    assert "keeps the storage" in str(moved.witness)


def test_storage_proof_names_the_offsets():
    r = synthesize_swizzle(SM80_TILE, [(SM80_READER, "ldmatrix.x4")], element_bits=16)
    assert r.storage.line() == (
        "[proved] Sw<3,3,3> o 0 o (8,64):(64,1) maps the tile's 512 coordinates one-to-one onto [0, 512) "
        "-- exhaustive, 512 cases"
    )


def test_padded_alternative():
    col = synthesize_swizzle(
        Layout((32, 32), (32, 1)), [(COLUMN, "ld.shared.b32")], element_bits=32, padding=True
    )
    assert (
        col.padded.status == "proved"
        and col.padded.pad == 1
        and col.padded.layout == Layout((32, 32), (33, 1))
    )
    assert (
        col.padded.cpp()
        == "auto smem = make_layout(make_shape(Int<32>{}, Int<32>{}), make_stride(Int<33>{}, Int<1>{}));"
    )
    # 16-byte rows keep every row start on a multiple of 4 words: no pad gives 32 banks either
    none = synthesize_swizzle(
        Layout((32, 4), (4, 1)),
        [(ROW_V4, "st.shared.v4.b32"), (ROW_V4, "ld.shared.b32")],
        element_bits=32,
        padding=True,
    )
    assert none.padded.status == "refuted" and none.padded.cases == 8 and none.padded.witness.ways == 4
    for p in range(4, 36, 4):  # confirmed pad by pad
        L = Layout((32, 4), (4 + p, 1))
        assert banks(L, ROW_V4, "ld.shared.b32", element_bits=32).status == "refuted"
    sm80 = synthesize_swizzle(
        SM80_TILE, [(SM80_WRITER, "cp.async.16"), (SM80_READER, "ldmatrix.x4")], element_bits=16, padding=True
    )
    assert sm80.padded.pad == 8 and sm80.padded.extra_bytes == 112  # one 16-byte vector per row
    assert synthesize_swizzle(SM80_TILE, [(SM80_READER, "ldmatrix.x4")], element_bits=16).padded is None
    odd = synthesize_swizzle(
        Layout((8, 8, 8), (64, 1, 8)), [(Layout(32, 1), "ld.shared.b32")], element_bits=32, padding=True
    )
    assert odd.padded.status == "unknown" and "2-D" in odd.padded.reason
    json.dumps(sm80.as_dict())


# ----------------------------------------------------------------------------- output
def test_report_dict_is_json_and_text_has_the_code():
    r = synthesize_swizzle(
        SM80_TILE, [(SM80_WRITER, "cp.async.16"), (SM80_READER, "ldmatrix.x4")], element_bits=16
    )
    d = json.loads(json.dumps(r.as_dict()))
    assert d["status"] == "proved" and d["swizzle"] == "Sw<3,3,3>" and len(d["reports"]) == 2
    assert d["cpp"].startswith("auto smem = make_composed_layout(Swizzle<3, 3, 3>{}")
    assert r.dsl() == (
        "smem = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, "
        "cute.make_layout((8, 64), stride=(64, 1)))"
    )
    assert r.cpp() in r.text() and r.dsl() in r.text()
    refuted = synthesize_swizzle(
        Layout((32, 32), (32, 1)), [(COLUMN, "ld.shared.b32")], element_bits=32, tma=True
    )
    d = json.loads(json.dumps(refuted.as_dict()))
    assert d["witness"]["ways"] == 4 and d["status"] == "refuted"


def _reports():
    return [
        synthesize_swizzle(
            SM80_TILE, [(SM80_WRITER, "cp.async.16"), (SM80_READER, "ldmatrix.x4")], element_bits=16
        ),
        synthesize_swizzle(Layout((32, 32), (32, 1)), [(COLUMN, "ld.shared.b32")], element_bits=32),
        synthesize_swizzle(
            TILE64, [(ROWS64, "cp.async.16"), (A_READER64, "ldmatrix.x4")], element_bits=16, wgmma="K"
        ),
        synthesize_swizzle(TILE64, [(A_READER64, "ldmatrix.x4")], element_bits=16, wgmma="K"),
        synthesize_swizzle(
            MN_TILE,
            [(MN_WRITER, "cp.async.16"), (MN_READER, "ldmatrix.x4.trans")],
            element_bits=16,
            wgmma="MN",
        ),
        synthesize_swizzle(
            Layout((64, 32), (32, 1)),
            [(Layout(((16, 2), 8, (4, 2)), ((1, 512), 64, (16, 1024))), "ldmatrix.x4")],
            element_bits=16,
            tma=True,
        ),
    ]


@pytest.mark.slow
def test_cpp_compiles_and_addresses_agree(tmp_path):
    """The emitted C++ compiles against CuTe; a tensor on a 1024-byte aligned shared-memory
    pointer with that layout puts every tile coordinate at the offset the report's layout
    gives (for a GMMA atom: the byte swizzle applied to the pointer, as TMA and wgmma see it)."""
    inc = cutlass_include()
    if inc is None:
        pytest.skip("no CuTe headers (the nvidia-cutlass wheel ships them)")
    cc = cxx_compiler(inc)
    if cc is None:
        pytest.skip("no C++ compiler (g++ with CUDA's CCCL headers, or nvcc)")
    reports = _reports()
    lines = [
        "#include <cute/tensor.hpp>",
        "#include <cute/atom/mma_traits_sm90_gmma.hpp>",
        "#include <cstdio>",
        "using namespace cute;",
        "alignas(1024) static half_t hbuf[1 << 14];",
        "alignas(1024) static float fbuf[1 << 14];",
        "int main() {",
    ]
    for k, r in enumerate(reports):
        buf = "hbuf" if r.element_bits == 16 else "fbuf"
        lines += [
            "  {",
            "    " + r.cpp(),
            f"    auto t = make_tensor(make_smem_ptr({buf}), smem);",
            f'    printf("CASE {k}");',
            f'    for (int i = 0; i < int(size(t)); ++i) printf(" %d", int(&t(i) - {buf}));',
            '    printf("\\n");',
            "  }",
        ]
    lines.append("  return 0;\n}")
    src = tmp_path / "swz.cpp"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "swz"
    res = subprocess.run(cc + [str(src), "-o", str(exe)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    got = {
        int(line.split()[1]): [int(x) for x in line.split()[2:]] for line in out if line.startswith("CASE")
    }
    for k, r in enumerate(reports):
        assert got[k] == np.asarray(r.layout.eval_all()).tolist(), (k, r.cpp())


@pytest.mark.slow
def test_dsl_runs_in_the_cute_dsl_and_builds_the_same_layout(tmp_path):
    """The emitted DSL runs inside ``@cute.jit`` (on the CPU); the layout it prints reads back
    as the report's layout (a GMMA atom: its swizzle on byte addresses of the printed element
    layout gives the report's element offsets)."""
    env, why = dsl_env()  # installed from PyPI into a cache folder on first use
    if env is None:
        pytest.skip(why)
    from layoutproof.interop import from_dsl

    reports = _reports()
    body = "".join(f"    {r.dsl(name=f'L{k}')}\n    print('CASE {k}', L{k})\n" for k, r in enumerate(reports))
    src = "import cutlass\nimport cutlass.cute as cute\n\n@cute.jit\ndef f():\n" + body + "\nf()\n"
    f = tmp_path / "snippet.py"  # @cute.jit reads its function's source from a file
    f.write_text(src)
    res = subprocess.run([sys.executable, str(f)], capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    printed = {
        int(line.split()[1]): line.split(None, 2)[2]
        for line in res.stdout.splitlines()
        if line.startswith("CASE")
    }
    for k, r in enumerate(reports):
        got = from_dsl(printed[k]).value
        want = np.asarray(r.layout.eval_all())
        if r.atom is None:
            assert np.array_equal(np.asarray(got.eval_all()), want), (k, printed[k])
        else:  # S<B,4,3> o 0 o L: the swizzle acts on byte addresses of L's element offsets
            nbytes = r.element_bits // 8
            inner = np.asarray(got.layout_b.eval_all()) * nbytes
            assert np.array_equal(np.asarray(got.layout_a(inner)) // nbytes, want), (k, printed[k])


# ----------------------------------------------------------------------------- bad input
def test_bad_input_is_refused_by_name():
    reader = [(SM80_READER, "ldmatrix.x4")]
    with pytest.raises(MalformedLayoutError, match="unswizzled"):
        synthesize_swizzle(composition(Swizzle(3, 3, 3), SM80_TILE), reader, element_bits=16)
    with pytest.raises(InadmissibleError) as e:
        synthesize_swizzle(Layout((8, 64), (0, 1)), reader, element_bits=16)
    assert e.value.condition == "tile layout one-to-one"
    with pytest.raises(AccessError) as e:  # reads the second half, the writer writes the first
        synthesize_swizzle(
            SM80_TILE, [(Layout(((8, 4), 8), ((64, 1), 8)), "cp.async.16")] + reader, element_bits=16
        )
    assert e.value.condition == "reads covered by the writes"
    with pytest.raises(AccessError) as e:
        synthesize_swizzle(SM80_TILE, reader, element_bits=64, wgmma="K")
    assert e.value.condition == "wgmma element width"
    with pytest.raises(AccessError) as e:
        synthesize_swizzle(SM80_TILE, reader, element_bits=16, tma=True, base=16)
    assert e.value.condition == "TMA alignment"
    with pytest.raises(AccessError) as e:
        synthesize_swizzle(SM80_TILE, reader, element_bits=4, tma=True)
    assert e.value.condition == "TMA element width"
    with pytest.raises(AccessError) as e:
        synthesize_swizzle(SM80_TILE, reader, element_bits=12)
    assert e.value.condition == "element width"
    with pytest.raises(AccessError) as e:
        synthesize_swizzle(Layout((8, 8, 8), (64, 1, 8)), reader, element_bits=16, wgmma="K")
    with pytest.raises(AccessError):  # two lanes write one element
        synthesize_swizzle(
            SM80_TILE, [(Layout(((8, 4), 8, 2), ((64, 0), 8, 4)), "cp.async.16")], element_bits=16
        )
    with pytest.raises(AccessError):  # not a shared-memory instruction
        synthesize_swizzle(SM80_TILE, [(SM80_READER, "ld.global.v4.b32")], element_bits=16)
    with pytest.raises(MalformedLayoutError):
        synthesize_swizzle(SM80_TILE, [], element_bits=16)
    with pytest.raises(MalformedLayoutError):
        synthesize_swizzle(SM80_TILE, [(SM80_READER, "ldmatrix.x4", 3)], element_bits=16)
    with pytest.raises(MalformedLayoutError):
        synthesize_swizzle(SM80_TILE, reader, element_bits=16, family=["Sw<3,3,3>"])
    with pytest.raises(MalformedLayoutError):
        synthesize_swizzle(SM80_TILE, reader, element_bits=16, wgmma="K", family=[Swizzle(3, 3, 3)])
    with pytest.raises(MalformedLayoutError):
        synthesize_swizzle(SM80_TILE, reader, element_bits=16, wgmma="T")
    with pytest.raises(LayoutError):
        synthesize_swizzle("(8,64):(64,1)", reader, element_bits=16)


def test_symbolic_tile_is_unknown_with_the_reason():
    M = symbols("M")
    r = synthesize_swizzle(Layout((M, 64), (64, 1)), [(SM80_READER, "ldmatrix.x4")], element_bits=16)
    assert isinstance(r, SwizzleReport) and r.status == "unknown" and "symbolic" in r.reason


def test_docs_analysis_swizzle_examples_run():
    import doctest

    path = Path(__file__).resolve().parents[2] / "docs" / "analysis-swizzle.md"
    res = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS, encoding="utf-8")
    assert res.failed == 0 and res.attempted >= 15, (res.failed, res.attempted)


def test_cli_analyze_swizzle(capsys):
    from layoutproof.cli import main

    argv = ["analyze", "swizzle", "(8,64):(64,1)", "--bits", "16"]
    argv += [
        "--access",
        "((8,4),8,2):((64,1),8,4):cp.async.16",
        "--access",
        "((8,4),8,2):((1,64),8,256):ldmatrix.x4",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Sw<3,3,3>" in out and "cute.make_swizzle(3, 3, 3)" in out
    assert main(["analyze", "swizzle", "(8,64):(64,1)", "--bits", "16", "--access", "ldmatrix.x4"]) == 2
    assert "TV:INSTR" in capsys.readouterr().err
