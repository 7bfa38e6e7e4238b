"""Shared-memory bank-conflict proofs (layoutproof.gpu.proof.banks)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof.gpu.errors import BankConflictError, ProofFailedError
from layoutproof.gpu.proof.banks import (
    prove_conflict_free,
    prove_ldmatrix_conflict_free,
    smem_addresses,
    wavefronts,
)
from layoutproof.gpu.proof.lower import lower
from layoutproof.gpu.proof.record import ProofLog

LANES = np.arange(32)


def brute_wavefronts(addr, width):
    """Independent model: per phase, per bank, the number of distinct words."""
    addr = np.atleast_2d(addr)
    k = width // 4
    per = 32 // k
    total = 0
    for row in addr:
        for p in range(k):
            banks = {}
            for lane in range(p * per, (p + 1) * per):
                for j in range(k):
                    w = int(row[lane]) // 4 + j
                    banks.setdefault(w % 32, set()).add(w)
            total += max(len(v) for v in banks.values())
    return total


def test_classic_column_conflict():
    col = LANES * 32 * 4  # lane i reads A[i][0], A is 32x32 float, row-major
    with pytest.raises(BankConflictError) as e:
        prove_conflict_free(col, 4, what="column")
    assert e.value.condition == "bank conflict"
    assert e.value.witness == (0, 0, 0, 1, 0)
    assert wavefronts(col, 4) == 32
    padded = LANES * 33 * 4
    log = ProofLog()
    p = prove_conflict_free(padded, 4, what="padded column", log=log)
    assert p.kind == "banks" and p.method == "exhaustive" and p.cases == 32 and list(log) == [p]
    assert wavefronts(padded, 4) == 1


def test_broadcast():
    same = np.full(32, 128)
    assert prove_conflict_free(same, 4, what="broadcast").cases == 32
    with pytest.raises(BankConflictError):
        prove_conflict_free(same, 4, what="broadcast", broadcast_ok=False)
    assert wavefronts(same, 4) == 1 and wavefronts(same, 4, broadcast_ok=False) == 32


def test_phases_and_widths():
    # 8-byte lanes, consecutive: 2 phases of 16 lanes, each covering all 32 banks once
    assert prove_conflict_free(LANES * 8, 8, what="v2").cases == 32
    assert wavefronts(LANES * 8, 8) == 2
    # 16-byte lanes with a 256-byte stride: every lane uses banks 0..3; lanes 0 and 1 collide
    with pytest.raises(BankConflictError) as e:
        prove_conflict_free(LANES * 256, 16, what="v4 strided")
    i, phase, a, b, bank = e.value.witness
    assert (i, phase) == (0, 0) and (a, b) == (0, 1) and bank == 0
    assert wavefronts(LANES * 256, 16) == 4 * 8
    # conflicts in later instructions are found, and the witness names the instruction
    many = np.stack([LANES * 4, LANES * 4, LANES * 128])
    with pytest.raises(BankConflictError) as e:
        prove_conflict_free(many, 4, what="three")
    assert e.value.witness[0] == 2
    assert prove_conflict_free(many[:2], 4, what="two").cases == 64


def test_alignment_and_input_errors():
    with pytest.raises(ProofFailedError) as e:
        prove_conflict_free(LANES * 16 + 4, 16, what="misaligned")
    assert e.value.condition == "alignment" and e.value.witness == (0, 0)
    with pytest.raises(ProofFailedError) as e:
        prove_conflict_free(LANES * 4, 12, what="w")
    assert e.value.condition == "access width"
    with pytest.raises(ProofFailedError):
        prove_conflict_free(np.arange(16) * 4, 4, what="half warp")
    with pytest.raises(ProofFailedError):
        prove_conflict_free(LANES * 4.0, 4, what="floats")
    with pytest.raises(ProofFailedError):
        prove_conflict_free(LANES * 4 - 4, 4, what="negative")


@settings(max_examples=examples(80))
@given(
    st.sampled_from([4, 8, 16]),
    st.lists(st.integers(0, 63), min_size=32, max_size=32),
    st.sampled_from([1, 2, 4, 8, 16, 32, 33]),
)
def test_property_matches_brute_model(width, slots, scale):
    addr = np.array(slots) * scale * width
    want = brute_wavefronts(addr, width)
    assert wavefronts(addr, width) == want
    if want == width // 4:
        prove_conflict_free(addr, width, what="p")
    else:
        with pytest.raises(BankConflictError) as e:
            prove_conflict_free(addr, width, what="p")
        _i, phase, a, b, bank = e.value.witness
        per = 32 // (width // 4)
        assert a // per == phase and b // per == phase and a != b
        wa = {int(addr[a]) // 4 + j for j in range(width // 4)}
        wb = {int(addr[b]) // 4 + j for j in range(width // 4)}
        in_a = {x for x in wa if x % 32 == bank}
        in_b = {y for y in wb if y % 32 == bank}
        assert in_a and in_b and in_a != in_b  # both lanes use the bank, at different words


# ----------------------------------------------------------------------------- ldmatrix on swizzled tiles


def _ldmatrix_rows(layout, chunk):
    """Lane 8j+r gives row r of matrix j: rows 0..7 (j adds 8 rows) at column 8*chunk
    (8 halves = 16 bytes) of an (rows, 64) half-precision tile."""
    rows = LANES % 8 + 8 * (LANES // 8)
    crd = np.stack([rows % layout.shape[0], np.full(32, 8 * chunk)], axis=-1)
    return smem_addresses(layout, crd, 2)


def test_ldmatrix_swizzle_333_vs_plain():
    plain = Layout((32, 64), (64, 1))
    swz = ComposedLayout(Swizzle(3, 3, 3), 0, plain)
    low = lower(swz, ("row", "col"), name="smem")
    log = ProofLog()
    for chunk in range(8):
        addr = _ldmatrix_rows(swz, chunk)
        # the same rows as the plain layout, with the 16-byte chunks permuted within each row
        assert (addr // 128 == _ldmatrix_rows(plain, chunk) // 128).all()
        assert (
            smem_addresses(low, np.stack([LANES, np.full(32, 8 * chunk)], -1), 2)
            == smem_addresses(swz, np.stack([LANES, np.full(32, 8 * chunk)], -1), 2)
        ).all()
        prove_ldmatrix_conflict_free(addr, 4, what=f"ldmatrix chunk {chunk}", log=log)
        with pytest.raises(BankConflictError) as e:
            prove_ldmatrix_conflict_free(_ldmatrix_rows(plain, chunk), 4, what="plain")
        assert e.value.witness == (0, 0, 0, 1, chunk)
    assert len(log) == 8 and log.cases == 8 * 32


def test_ldmatrix_errors():
    with pytest.raises(ProofFailedError) as e:
        prove_ldmatrix_conflict_free(LANES * 128 + 8, 1, what="misaligned")
    assert e.value.condition == "alignment"
    with pytest.raises(ProofFailedError):
        prove_ldmatrix_conflict_free(LANES * 16, 3, what="x3")
    # x1 ignores lanes 8..31
    rows = LANES * 16
    rows[8:] = 0
    assert prove_ldmatrix_conflict_free(rows, 1, what="x1").cases == 8
    with pytest.raises(BankConflictError) as e:
        prove_ldmatrix_conflict_free(rows, 2, what="x2")
    assert e.value.witness[1] == 1


def test_cp_async_16B_rows():
    """32 threads, each a 16-byte cp.async into a row-major tile with 128-byte rows."""
    tile = Layout((8, 64), (64, 1))  # halves
    t = LANES
    crd = np.stack([t // 8, 8 * (t % 8)], axis=-1)
    addr = smem_addresses(tile, crd, 2)
    assert prove_conflict_free(addr, 16, what="cp.async A").cases == 32
    swz = composition(Swizzle(3, 3, 3), tile)
    assert prove_conflict_free(smem_addresses(swz, crd, 2), 16, what="cp.async A swizzled").cases == 32
    # a row padded by 8 bytes (136 bytes) misaligns the 16-byte stores of odd rows
    padded = Layout((8, 64), (68, 1))
    with pytest.raises(ProofFailedError) as e:
        prove_conflict_free(smem_addresses(padded, crd, 2), 16, what="padded")
    assert e.value.condition == "alignment"
    # a column-of-chunks mapping (thread t -> row t % 8, chunk t // 8) with no swizzle conflicts
    crd2 = np.stack([t % 8, 8 * (t // 8)], axis=-1)
    with pytest.raises(BankConflictError):
        prove_conflict_free(smem_addresses(tile, crd2, 2), 16, what="column chunks")
    prove_conflict_free(smem_addresses(swz, crd2, 2), 16, what="column chunks swizzled")


def test_smem_addresses_forms():
    L = Layout((4, 8), (8, 1))
    assert smem_addresses(L, np.array([[1, 2], [3, 7]]), 4).tolist() == [40, 124]
    low = lower(L, ("i",), name="f")
    assert smem_addresses(low, np.arange(4), 2).tolist() == [2 * L(i) for i in range(4)]
    assert smem_addresses(Layout(16, 2), np.arange(3), 4).tolist() == [0, 8, 16]
    with pytest.raises(ProofFailedError):
        smem_addresses(L, np.array([[4, 0]]), 4)
    with pytest.raises(ProofFailedError):
        smem_addresses(L, np.array([1, 2, 3]), 4)
