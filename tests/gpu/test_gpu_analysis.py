"""The analyses of users' own layouts (layoutproof.gpu.analysis): bank conflicts per
instruction phase and global coalescing, on real kernels' layouts, against an independent
per-lane model, on symbolic extents, and refusing bad input by name."""

from __future__ import annotations

import json
from typing import Dict, List, Set, Tuple

import pytest

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof.errors import LayoutError, UndecidableConditionError
from layoutproof.gpu.analysis import AccessError, banks, coalescing, instruction
from layoutproof.gpu.isa.atoms import COPY_ATOMS
from layoutproof.gpu.isa.gmma import smem_atom, tile_to_shape
from layoutproof.gpu.isa.tiled import TiledCopy
from layoutproof.symbolic import assuming, symbols


# ----------------------------------------------------------------------------- an independent model
def model_wavefronts(smem, tv: Layout, lane_bytes: int, bits: int, phases_used: int = 0) -> List[int]:
    """Per (warp, instruction, phase) in order: the most distinct 4-byte words one bank
    serves, computed lane by lane from the layouts' scalar evaluation (no numpy)."""
    T = tv[0].size
    V = tv[1].size if tv.rank >= 2 else 1
    R = tv.size // (T * V)
    n = lane_bytes * 8 // bits
    per_phase = 32 if lane_bytes <= 4 else 128 // lane_bytes
    out = []
    for w in range(T // 32):
        for r in range(R):
            for c in range(V // n):
                nph = phases_used or 32 // per_phase
                for p in range(nph):
                    words: Dict[int, Set[int]] = {}
                    for lane in range(p * per_phase, (p + 1) * per_phase):
                        t = 32 * w + lane
                        x = tv(t + T * (c * n + V * r))
                        start = smem(x) * bits // 8
                        for b in range(start - start % 4, start + max(lane_bytes, 1), 4):
                            words.setdefault((b // 4) % 32, set()).add(b // 4)
                    out.append(max(len(s) for s in words.values()))
    return out


def rows_tv(rows: int, cols: int, row_threads: int, vec: int, threads: int = 32) -> Layout:
    """Threads reading a row-major (rows, cols) tile in vectors of ``vec`` along the row:
    lane ``l`` takes chunk ``l % row_threads`` of row ``l // row_threads``; the rest modes
    walk the chunks and rows left over.  Values to tile coordinate ``row + rows * col``."""
    per_row = threads // row_threads
    return Layout(
        ((row_threads, per_row), vec, (cols // (vec * row_threads), rows // per_row)),
        ((rows * vec, 1), rows, (rows * vec * row_threads, per_row)),
    )


def ldmatrix_a_tv(rows: int, cols: int) -> Layout:
    """ldmatrix.x4 of the A fragment of m16n8k16 (16 rows x 16 columns of f16): lanes 0-15
    rows 0-15 at column chunk 0, lanes 16-31 the same rows at chunk 1; rest: the 16-row
    blocks, then the 16-column blocks."""
    return Layout(((16, 2), 8, (rows // 16, cols // 16)), ((1, 8 * rows), rows, (16, 16 * rows)))


def check(smem, tv, ins: str, bits: int):
    r = banks(smem, tv, ins, element_bits=bits)
    i = instruction(ins)
    want = model_wavefronts(smem, tv, i.bytes, bits, i.matrices)
    assert r.wavefronts.reshape(-1).tolist() == want
    return r


# ----------------------------------------------------------------------------- the instruction's phases
def test_128_bit_load_is_four_conflict_free_phases():
    r = check(Layout(256, 1), Layout((32, 8), (8, 1)), "ld.shared.v4.b32", 16)
    assert r.status == "proved" and r.wavefronts.tolist() == [[[1, 1, 1, 1]]] and r.total == r.minimum == 4


def test_64_bit_load_two_phases_and_32_bit_one():
    assert check(Layout(128, 1), Layout((32, 4), (4, 1)), "ld.shared.v2.b32", 16).wavefronts.shape == (
        1,
        1,
        2,
    )
    assert check(Layout(64, 1), Layout((32, 2), (2, 1)), "ld.shared.b32", 16).wavefronts.tolist() == [[[1]]]


def test_broadcast_is_not_a_conflict_and_bytes_share_words():
    assert banks(Layout(32, 1), Layout(32, 0), "ld.shared.b32", element_bits=32).status == "proved"
    r = check(Layout(128, 1), Layout(32, 4), "ld.shared.u8", 8)  # lane l reads byte 4l
    assert r.status == "proved"
    r = check(Layout(4096, 1), Layout(32, 128), "ld.shared.b16", 16)  # 256-byte stride
    assert r.max_ways == 32


def test_column_read_32_way_and_the_swizzle_that_fixes_it():
    col = Layout((32, 32), (32, 1))
    r = check(col, Layout(32, 1), "ld.shared.b32", 32)
    assert r.status == "refuted" and r.max_ways == 32
    w = r.witness
    assert (w.warp, w.instruction, w.phase, w.lane_a, w.lane_b, w.bank) == (0, 0, 0, 0, 1, 0)
    assert (w.address_a, w.address_b, w.ways) == (0, 128, 32)
    whole = Layout((32, 32), (1, 32))  # every column, one per step
    fixed = composition(Swizzle(5, 0, 5), col)
    assert check(fixed, whole, "ld.shared.b32", 32).status == "proved"
    assert check(fixed, Layout((32, 32), (32, 1)), "ld.shared.b32", 32).status == "proved"  # rows too
    assert check(Layout((32, 32), (33, 1)), whole, "ld.shared.b32", 32).status == "proved"  # padding


# ----------------------------------------------------------------------------- real kernels' layouts
def test_sm80_k_major_64_byte_rows_swizzle_2_3_3():
    tile = Layout((64, 32), (32, 1))  # Swizzle<2,3,3> o (8,32):(32,1) repeated down the rows
    sw = composition(Swizzle(2, 3, 3), tile)
    assert check(sw, ldmatrix_a_tv(64, 32), "ldmatrix.x4", 16).status == "proved"
    plain = check(tile, ldmatrix_a_tv(64, 32), "ldmatrix.x4", 16)
    assert plain.status == "refuted" and plain.max_ways == 4
    writes = rows_tv(64, 32, 4, 8)  # cp.async 16B: 4 threads per 64-byte row
    assert check(sw, writes, "cp.async.16", 16).status == "proved"


def test_sm80_k_major_128_byte_rows_swizzle_3_3_3():
    tile = Layout((64, 64), (64, 1))
    sw = composition(Swizzle(3, 3, 3), tile)
    assert check(sw, ldmatrix_a_tv(64, 64), "ldmatrix.x4", 16).status == "proved"
    assert check(tile, ldmatrix_a_tv(64, 64), "ldmatrix.x4", 16).max_ways == 8
    assert check(sw, rows_tv(64, 64, 8, 8), "cp.async.16", 16).status == "proved"


def atom_rows_tv(rows: int, cols: int, w: int) -> Layout:
    """16-byte writers that follow a GMMA atom of ``w`` chunks per row: lane ``l`` writes
    chunk ``l % w`` of row ``l // w`` of the atom column; the rest walks the rows, then the
    atom columns."""
    per = 32 // w
    return Layout(((w, per), 8, (rows // per, cols // (8 * w))), ((8 * rows, 1), rows, (per, 8 * w * rows)))


@pytest.mark.parametrize("swz, w, row_writer_ways", [("SW32", 2, 4), ("SW64", 4, 2), ("SW128", 8, 1)])
def test_sm90_gmma_k_major_atoms(swz, w, row_writer_ways):
    """The GMMA K-major atoms of a (64, 64) f16 stage: ldmatrix reads are conflict-free
    for all three; 16-byte writes that follow the atom are; writes of whole 128-byte tile
    rows (8 lanes per row) cross 128 / (16 w) atoms that lie 1, 2 or 4 KiB apart, the
    same banks: 4-way (SW32), 2-way (SW64), conflict-free (SW128)."""
    stage = tile_to_shape(smem_atom("K", swz), (64, 64)).layout
    assert check(stage, ldmatrix_a_tv(64, 64), "ldmatrix.x4", 16).status == "proved"
    assert check(stage, atom_rows_tv(64, 64, w), "cp.async.16", 16).status == "proved"
    assert check(stage, rows_tv(64, 64, 8, 8), "cp.async.16", 16).max_ways == row_writer_ways
    assert check(stage, atom_rows_tv(64, 64, w), "st.shared.v4.b32", 16).wavefronts.shape == (1, 16, 4)


def test_fa2_style_ldmatrix_b_operand_trans():
    """FlashAttention-2's V tile (128 keys x 64, Swizzle<3,3,3> o (8,64):(64,1)) read by
    ldmatrix.x4.trans for the B operand: lanes (l%8) + 8*((l//8)%2) give key rows, l//16
    the column chunk."""
    sw = composition(Swizzle(3, 3, 3), Layout((128, 64), (64, 1)))
    tv = Layout(((8, 2, 2), 8, (8, 4)), ((1, 8, 1024), 128, (16, 2048)))
    assert check(sw, tv, "ldmatrix.x4.trans", 16).status == "proved"
    assert check(Layout((128, 64), (64, 1)), tv, "ldmatrix.x4.trans", 16).max_ways == 8


def test_ldmatrix_x1_x2_read_only_their_lanes():
    sw = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))
    garbage_lanes = Layout(((8, 4), 8), ((1, 0), 8))  # lanes 8.. repeat lanes 0..7
    for ins in ("ldmatrix.x1", "ldmatrix.x2", "stmatrix.x2"):
        r = check(sw, garbage_lanes, ins, 16)
        assert r.status == "proved" and r.wavefronts.shape[-1] == instruction(ins).matrices


def test_tiled_copy_is_an_access_and_its_atom_the_instruction():
    tc = TiledCopy(
        COPY_ATOMS["SM80_CP_ASYNC_CACHEALWAYS_16B"], Layout((16, 8), (8, 1)), Layout((1, 8)), elem_bits=16
    )
    sw = composition(Swizzle(3, 3, 3), Layout((64, 64), (64, 1)))
    r = banks(sw, tc, element_bits=16)
    assert r.status == "proved" and r.instruction == "cp.async.16" and r.wavefronts.shape == (4, 4, 4)
    assert banks(Layout((64, 64), (64, 1)), tc, element_bits=16).status == "proved"  # whole rows per phase


# ----------------------------------------------------------------------------- symbolic extents
def test_symbolic_tile_count_reduced_to_one_period():
    K = symbols("K")
    sm = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64, K), (64, 1, 512)))
    tv = Layout(((8, 4), 8, K), ((1, 64), 8, 512))
    r = banks(sm, tv, "ldmatrix.x4", element_bits=16)
    assert r.status == "proved" and "every value of the symbols" in r.scope and r.seconds < 2
    plain = banks(Layout((8, 64, K), (64, 1, 512)), tv, "ldmatrix.x4", element_bits=16)
    assert plain.status == "refuted" and plain.witness.ways == 8


def test_symbolic_stride_needs_an_assumption():
    K, L = symbols("K L")
    tv = Layout(((8, 4), 8, K), ((1, 64), 8, 512))
    sm = Layout((8, 64, K), (64, 1, L))  # the k-blocks L elements apart
    r = banks(sm, tv, "ldmatrix.x4", element_bits=16)
    assert r.status == "unknown" and "not proved a multiple of 64 elements" in r.reason
    with assuming("L % 64 == 0"):
        r = banks(sm, tv, "ldmatrix.x4", element_bits=16)
    assert r.status == "refuted" and r.witness.ways == 8  # unswizzled rows, in every k-block
    swz = ComposedLayout(Swizzle(3, 3, 3), 0, sm)
    with assuming("L % 64 == 0"):
        assert (
            banks(swz, tv, "ldmatrix.x4", element_bits=16).status == "unknown"
        )  # the swizzle's period is 512
    with assuming("L % 512 == 0"):
        assert banks(swz, tv, "ldmatrix.x4", element_bits=16).status == "proved"


def test_symbolic_composition_without_assumptions_is_refused_by_name():
    M = symbols("M")
    with pytest.raises(UndecidableConditionError):
        banks(Layout((M, 64), (64, 1)), Layout((32, 8, 2), (8, 1, M)), "ld.shared.v4.b32", element_bits=16)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "smem, tv, ins, bits, condition",
    [
        (Layout(64, 1), Layout(32, 4), "ld.shared.b32", 32, "TV into the tile"),
        (Layout(32, 1), Layout((16, 2), (1, 0)), "st.shared.b32", 32, "TV one-to-one"),
        (Layout(64, 1), Layout(32, 1), "ld.shared.b16", 32, "instruction fits the element width"),
        (Layout(256, 1), Layout((32, 8), (1, 32)), "ld.shared.v4.b32", 16, "contiguous vector"),
        (Layout(64, 1), Layout(16, 1), "ld.shared.b32", 32, "whole warps"),
        (Layout(64, 1), Layout((32, 3), (1, 0)), "ld.shared.v2.b32", 16, "values per instruction"),
        (Layout(64, 1), Layout(32, 1), "ld.global.b32", 32, "shared-memory instruction"),
    ],
)
def test_bad_input_is_refused_by_name(smem, tv, ins, bits, condition):
    with pytest.raises(AccessError) as e:
        banks(smem, tv, ins, element_bits=bits)
    assert e.value.condition == condition


def test_misaligned_access_is_refused():
    with pytest.raises(AccessError) as e:
        banks(Layout(512, 1), Layout((32, 8), (8, 1)), "ld.shared.v4.b32", element_bits=16, base=8)
    assert e.value.condition == "alignment"
    with pytest.raises(AccessError) as e:
        banks(Layout(96, 1), Layout((32, 2), (3, 1)), "ld.shared.b32", element_bits=16)
    assert e.value.condition == "alignment" and e.value.witness[0] == 1


def test_unknown_instruction_and_width_are_layout_errors():
    for bad in ("ld.shared.v4.b64", "ldmatrix.x3", "mov.b32"):
        with pytest.raises(LayoutError):
            instruction(bad)


# ----------------------------------------------------------------------------- coalescing
def model_sectors(data, tv, lane_bytes, bits) -> List[Tuple[int, int, int]]:
    """(sectors, lines, minimum sectors) of each request, lane by lane."""
    T, V = tv[0].size, tv[1].size
    n = lane_bytes * 8 // bits
    out = []
    for w in range(T // 32):
        for r in range(tv.size // (T * V)):
            for c in range(V // n):
                starts = {data(tv(32 * w + lane + T * (c * n + V * r))) * bits // 8 for lane in range(32)}
                secs = {a // 32 for a in starts}
                lines = {a // 128 for a in starts}
                out.append((len(secs), len(lines), -(-len(starts) * lane_bytes // 32)))
    return out


@pytest.mark.parametrize(
    "data, tv, bits, widest, status",
    [
        (Layout((64, 64), (64, 1)), rows_tv(64, 64, 8, 8), 16, 16, "proved"),
        (Layout((64, 64), (64, 1)), rows_tv(64, 64, 8, 4), 16, 8, "proved"),
        (Layout((64, 64), (1, 64)), rows_tv(64, 64, 8, 8), 16, 2, "refuted"),
        (Layout((64, 64), (72, 1)), rows_tv(64, 64, 4, 8), 16, 16, "refuted"),  # odd rows off sectors
        (Layout((64, 64), (80, 1)), rows_tv(64, 64, 4, 8), 16, 16, "proved"),
        (Layout((32, 32), (32, 1)), Layout((32, 32), (1, 32)), 32, 16, "refuted"),
        (Layout((64, 64), (64, 1)), rows_tv(64, 64, 8, 8, threads=128), 16, 16, "proved"),
    ],
)
def test_coalescing_against_the_lane_model(data, tv, bits, widest, status):
    r = coalescing(data, tv, element_bits=bits)
    assert (r.widest_bytes, r.status) == (widest, status)
    got = list(
        zip(r.sectors.reshape(-1).tolist(), r.lines.reshape(-1).tolist(), r.min_sectors.reshape(-1).tolist())
    )
    assert got == model_sectors(data, tv, r.vector_bytes, bits)


def test_coalescing_narrow_vector_is_refuted_with_the_request_it_spreads():
    r = coalescing(Layout(1024, 1), Layout((32, 4), (4, 1)), element_bits=32, vector_bytes=4)
    assert r.status == "refuted" and r.widest_bytes == 16
    assert (r.witness.sectors, r.witness.minimum, r.witness.lines) == (16, 4, 4)


def test_coalescing_symbolic_is_unknown():
    M = symbols("M")
    assert coalescing(Layout((32, M), (M, 1)), Layout(32, 1), element_bits=32).status == "unknown"


# ----------------------------------------------------------------------------- the command
def test_cli_analyze_banks_and_coalesce(capsys):
    from layoutproof.cli import main

    rc = main(
        ["analyze", "banks", "(32,32):(32,1)", "32:1", "--instr", "ld.shared.b32", "--bits", "32", "--json"]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["status"] == "refuted" and out["witness"]["ways"] == 32 and out["max_ways"] == 32
    rc = main(
        [
            "analyze",
            "banks",
            "Sw<3,3,3> o (8,64):(64,1)",
            "((8,4),8):((1,64),8)",
            "--instr",
            "ldmatrix.x4",
            "--bits",
            "16",
        ]
    )
    assert rc == 0 and "[proved]" in capsys.readouterr().out
    rc = main(
        ["analyze", "coalesce", "(64,64):(64,1)", "((8,4),8,(1,16)):((512,1),64,(4096,4))", "--bits", "16"]
    )
    assert rc == 0 and "16-byte vectors" in capsys.readouterr().out
    rc = main(["analyze", "banks", "64:1", "16:1", "--instr", "ld.shared.b32", "--bits", "32"])
    assert rc == 2 and "whole warps" in capsys.readouterr().err


def test_docs_analysis_examples_run():
    import doctest
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs" / "analysis.md"
    res = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS, encoding="utf-8")
    assert res.failed == 0 and res.attempted >= 30, (res.failed, res.attempted)


def test_witness_is_the_conflict_the_bank_proof_reports():
    """The first conflict of a report is the one prove_conflict_free names for the same
    instruction's addresses (lowest bank with two words, its first lane, the first lane
    there at another word)."""
    from layoutproof.gpu.analysis.access import lane_addresses
    from layoutproof.gpu.errors import BankConflictError
    from layoutproof.gpu.proof.banks import prove_conflict_free

    cases = [
        (Layout((32, 32), (32, 1)), Layout(32, 1), "ld.shared.b32", 32),
        (Layout((64, 64), (64, 1)), ldmatrix_a_tv(64, 64), "ldmatrix.x4", 16),
        (Layout((64, 64), (64, 1)), Layout((32, 2), (1, 64)), "ld.shared.b32", 16),
        (Layout(4096, 1), Layout((32, 4), (16, 1)), "ld.shared.v2.b32", 16),
        (composition(Swizzle(2, 3, 6), Layout(4096, 1)), Layout(((32, 2),), ((33, 1),)), "ld.shared.b32", 32),
    ]
    for smem, tv, ins, bits in cases:
        r = banks(smem, tv, ins, element_bits=bits)
        assert r.status == "refuted"
        w = r.witness
        i = instruction(ins)
        addr = lane_addresses(smem, tv, i, element_bits=bits).addresses[w.warp, w.instruction]
        width = max(i.bytes, 4)
        rows = addr - addr % 4 if i.bytes < 4 else addr
        with pytest.raises(BankConflictError) as e:
            prove_conflict_free(rows, width, what="x")
        assert e.value.witness[1:] == (w.phase, w.lane_a, w.lane_b, w.bank)


def test_tiled_mma_partition_read_with_ld_shared():
    """A TiledMMA's A partition (2x2 warps of m16n8k16) read from a K-major (32, 16) f16 tile
    with 32-bit loads (each register's two halves): 2-way unpadded, conflict-free swizzled
    or padded by 8; the warps along N read the same A and are counted each."""
    from layoutproof.gpu.isa.atoms import MMA_ATOMS
    from layoutproof.gpu.isa.tiled import TiledMMA

    tm = TiledMMA(MMA_ATOMS["SM80_16x8x16_F32F16F16F32_TN"], (2, 2))
    tv = tm.get_layoutA_TV()
    TM, TK = tm.tile_shape("A")
    plain = check(Layout((TM, TK), (TK, 1)), tv, "ld.shared.b32", 16)
    assert plain.status == "refuted" and plain.max_ways == 2 and plain.wavefronts.shape == (4, 4, 1)
    assert (
        check(composition(Swizzle(1, 3, 3), Layout((TM, TK), (TK, 1))), tv, "ld.shared.b32", 16).status
        == "proved"
    )
    assert check(Layout((TM, TK), (TK + 8, 1)), tv, "ld.shared.b32", 16).status == "proved"
