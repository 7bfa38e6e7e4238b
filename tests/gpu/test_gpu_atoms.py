"""MMA and copy atoms against the independent PTX encoding and the seed talk's tables."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutproof import Layout
from layoutproof.gpu.errors import AtomMismatchError
from layoutproof.gpu.isa import ptx_tables as ptx
from layoutproof.gpu.isa.atoms import (
    COPY_ATOMS,
    MMA_ATOMS,
    ptx_key,
    verify_all,
    verify_atom,
    verify_copy_atom,
    verify_seed_tables,
)
from layoutproof.gpu.proof.record import ProofLog

REQUIRED = [
    "SM80_16x8x16_F32F16F16F32_TN",
    "SM80_16x8x16_F32BF16BF16F32_TN",
    "SM80_16x8x8_F32F16F16F32_TN",
    "SM80_16x8x8_F32TF32TF32F32_TN",
    "SM80_8x8x4_F64F64F64F64_TN",
    "SM70_8x8x4_F32F16F16F32_NT",
    "SM70_8x8x4_F32F16F16F32_TN",
    "UniversalFMA",
]


@pytest.mark.parametrize("name", sorted(MMA_ATOMS))
def test_every_mma_atom_matches_ptx(name):
    atom = MMA_ATOMS[name]
    log = verify_atom(atom)
    assert isinstance(log, ProofLog)
    kinds = [p.kind for p in log]
    assert kinds.count("bijective") == 3
    if name != "UniversalFMA":
        assert kinds.count("atom") == 3
        M, N, K = atom.shape_mnk
        assert log.cases == 2 * (M * K + N * K + M * N)


def test_required_atoms_present():
    for name in REQUIRED:
        assert name in MMA_ATOMS
    a = MMA_ATOMS["SM80_16x8x16_F32F16F16F32_TN"]
    assert a.ptx == "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    assert (a.a_regs, a.b_regs, a.c_regs) == (4, 2, 4)
    assert (a.a_type, a.b_type, a.c_type) == ("f16", "f16", "f32")
    t = MMA_ATOMS["SM80_16x8x8_F32TF32TF32F32_TN"]
    assert (t.a_regs, t.b_regs, t.c_regs) == (4, 2, 4)
    d = MMA_ATOMS["SM80_8x8x4_F64F64F64F64_TN"]
    assert (d.a_regs, d.b_regs, d.c_regs) == (1, 1, 2)
    v = MMA_ATOMS["SM70_8x8x4_F32F16F16F32_NT"]
    assert str(v.thr_id) == "(4,2):(1,16)" and (v.a_regs, v.c_regs) == (2, 8)
    assert [v.lane(t) for t in range(8)] == [0, 1, 2, 3, 16, 17, 18, 19]
    assert ptx_key(MMA_ATOMS["UniversalFMA"]) is None
    assert ptx_key(v) == "m8n8k4.f16.col.row"


@pytest.mark.parametrize("name", sorted(ptx.SEED_TABLES))
def test_seed_tables_agree(name):
    log = verify_seed_tables(MMA_ATOMS[name])
    assert len(log) == 3


def test_seed_tables_agree_with_ptx_directly():
    """The printed tables against the PTX formulas, without the layouts in between."""
    keys = {
        "SM80_16x8x8_F32F16F16F32_TN": "m16n8k8.f16",
        "SM80_8x8x4_F64F64F64F64_TN": "m8n8k4.f64",
        "SM70_8x8x4_F32F16F16F32_NT": "m8n8k4.f16.col.row",
        "SM90_16x8x4_F64F64F64F64_TN": "m16n8k4.f64",
    }
    for name, key in keys.items():
        for op in "ABC":
            for (r, c), (lane, v) in ptx.parse_seed_table(ptx.SEED_TABLES[name][op]).items():
                assert ptx.fragment(key, op)(lane, v) == (r, c), (name, op, lane, v)


def _corrupt(atom, op, layout):
    return dataclasses.replace(atom, **{f"{op.lower()}_layout": layout})


def test_swapped_strides_raise_with_witness():
    atom = MMA_ATOMS["SM80_16x8x16_F32F16F16F32_TN"]
    # ((4,8),(2,2,2)):((32,1),(16,8,128)) with the strides 16 and 8 swapped: still a bijection
    bad = _corrupt(atom, "A", Layout(((4, 8), (2, 2, 2)), ((32, 1), (8, 16, 128))))
    with pytest.raises(AtomMismatchError) as ei:
        verify_atom(bad)
    e = ei.value
    assert e.witness == (0, 1)
    assert e.ours == (8, 0) and e.ptx == (0, 1)
    assert "operand A" in str(e) and "(0, 1)" in str(e)


def test_non_bijective_layout_raises():
    atom = MMA_ATOMS["SM80_16x8x8_F32F16F16F32_TN"]
    bad = _corrupt(atom, "C", Layout(((4, 8), (2, 2)), ((32, 1), (16, 16))))
    with pytest.raises(AtomMismatchError) as ei:
        verify_atom(bad)
    assert ei.value.condition in ("bijective", "bounds")
    assert ei.value.witness is not None


def test_wrong_lane_map_raises():
    atom = MMA_ATOMS["SM70_8x8x4_F32F16F16F32_NT"]
    bad = dataclasses.replace(atom, thr_id=Layout((4, 2), (1, 4)))  # quadpair -> 8 low lanes
    with pytest.raises(AtomMismatchError) as ei:
        verify_atom(bad)
    assert ei.value.witness[0] >= 4


def test_seed_mismatch_detected():
    atom = MMA_ATOMS["SM80_16x8x8_F32F16F16F32_TN"]
    bad = _corrupt(atom, "B", Layout(((8, 4), 2), ((1, 16), 8)))  # lanes transposed
    with pytest.raises(AtomMismatchError):
        verify_seed_tables(bad)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(set(MMA_ATOMS) - {"UniversalFMA"})), data=st.data())
def test_coord_matches_ptx_pointwise(name, data):
    atom = MMA_ATOMS[name]
    key = ptx_key(atom)
    op = data.draw(st.sampled_from("ABC"))
    t = data.draw(st.integers(0, atom.num_threads - 1))
    v = data.draw(st.integers(0, atom.num_values(op) - 1))
    r, c = ptx.fragment(key, op)(atom.lane(t), v)
    assert atom.coord(op, t, v) == ((c, r) if op == "B" else (r, c))
    bits = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "s32": 32}.get(atom.dtype(op), 8)
    assert atom.register(op, v) == ptx.register_of(v, bits)


@pytest.mark.parametrize("name", sorted(COPY_ATOMS))
def test_copy_atoms(name):
    atom = COPY_ATOMS[name]
    log = verify_copy_atom(atom)
    assert len(log) >= 2


def test_ldmatrix_shapes():
    x4 = COPY_ATOMS["SM75_U32x4_LDSM_N"]
    assert x4.bytes_per_thread == 16 and x4.num == 4 and not x4.trans
    assert str(x4.dst_tv(16)) == "(32,(2,4)):(2,(1,64))"
    assert str(x4.src_tv(16)) == "(32,8):(8,1)"
    t8 = COPY_ATOMS["SM75_U16x8_LDSM_T"]
    assert t8.trans and t8.num == 4
    # lane 6, value 3 (register 1, high half): matrix 1, row 2*(6%4)+1 = 5, col 6/4 = 1
    e = int(t8.dst_tv(16)(6 + 32 * 3))
    assert (e // 64, e % 64 // 8, e % 8) == (1, 5, 1)
    cp = COPY_ATOMS["SM80_CP_ASYNC_CACHEGLOBAL_16B"]
    assert cp.ptx.startswith("cp.async.cg") and cp.bytes_per_thread == 16
    assert str(cp.src_tv(16)) == "(1,8):(0,1)"


def test_corrupted_ldmatrix_raises():
    atom = COPY_ATOMS["SM75_U32x2_LDSM_N"]
    bad = dataclasses.replace(atom, trans=True)
    with pytest.raises(AtomMismatchError) as ei:
        verify_copy_atom(bad)
    assert ei.value.witness is not None


def test_verify_all_header():
    log = verify_all()
    assert len(log) > 60
    assert log.header().startswith("// layoutproof:")


def test_tv_table_is_numpy():
    atom = MMA_ATOMS["SM80_16x8x16_F32F16F16F32_TN"]
    tab = atom.tv_table("C")
    assert tab.shape == (32, 4)
    assert sorted(tab.ravel().tolist()) == list(range(128))
    assert np.array_equal(tab[:, 0] % 16, np.arange(32) // 4)


# ----------------------------------------------------------------------------- other types
TYPED = [
    "SM80_16x8x8_F32TF32TF32F32_TN",
    "SM80_16x8x32_S32S8S8S32_TN",
    "SM80_16x8x32_S32U8U8S32_TN",
    "SM89_16x8x32_F32E4M3E4M3F32_TN",
    "SM89_16x8x32_F32E5M2E5M2F32_TN",
    "SM61_DP4A",
]


@pytest.mark.parametrize("name", TYPED)
def test_typed_atoms_checked_against_their_ptx_table(name):
    atom = MMA_ATOMS[name]
    key = ptx_key(atom)
    assert key is not None  # a fragment table exists, so every (thread, value) is compared
    log = verify_atom(atom)
    assert sum(1 for r in log if r.kind == "atom") == 3
    table = ptx.fragment(key, "A")
    assert atom.a_regs == table.registers  # 8-bit: four elements per register


def test_m16n8k32_tables_pointwise():
    # PTX: a5 of lane 6 (group 1, thread 2) is row 1 + 8, col 2*4 + 1; b6 of lane 9 is k 1*4+2+16
    assert ptx.m16n8k32_b8_a(6, 5) == (9, 9)
    assert ptx.m16n8k32_b8_a(6, 10) == (1, 26)
    assert ptx.m16n8k32_b8_b(9, 6) == (22, 2)
    assert ptx.dp4a_a(0, 3) == (0, 3) and ptx.dp4a_b(0, 2) == (2, 0)


def test_planted_8bit_a_layout_caught():
    atom = MMA_ATOMS["SM89_16x8x32_F32E4M3E4M3F32_TN"]
    # the 16-bit m16n8k16 pattern stretched: k advances by 2 per thread instead of 4
    bad = dataclasses.replace(atom, a_layout=Layout.parse("((4,8),(4,2,2)):((32,1),(16,8,256))"))
    with pytest.raises(AtomMismatchError) as ei:
        verify_atom(bad)
    assert ei.value.condition in ("bijective", "operand A equals PTX fragment table")


def test_planted_dp4a_caught():
    atom = MMA_ATOMS["SM61_DP4A"]
    bad = dataclasses.replace(atom, b_layout=Layout.parse("(1,4):(0,0)"))
    with pytest.raises(AtomMismatchError):
        verify_atom(bad)
