"""SM100 tcgen05 (UMMA), SM120 mma.sync (block-scaled included) and SM90 stmatrix atoms.

None of these run here (tcgen05 needs sm_100a, the SM120 kinds sm_120a; stmatrix is not
emitted by the project's kernels): the atoms are checked against the independent encoding
of the PTX ISA's tables in their modules, planted bugs must be caught, and the atoms are
compared as functions with tensor-layouts' atoms where it has the same one.
"""

import dataclasses

import numpy as np
import pytest

from layoutproof import Layout
from layoutproof.errors import MalformedLayoutError
from layoutproof.gpu.errors import AtomMismatchError
from layoutproof.gpu.isa import copy_sm90, sm100, sm120
from layoutproof.gpu.isa.atoms import COPY_ATOMS, verify_copy_atom
from layoutproof.gpu.proof.record import ProofLog


# ----------------------------------------------------------------------------- SM100
@pytest.mark.parametrize("dtype", ["f16", "bf16", "tf32", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1"])
def test_sm100_atoms_verify_sample(dtype):
    """Each kind at both ends of N and both M, for both CTA groups (the whole set is slow)."""
    kind = {"f16": "f16", "bf16": "f16", "tf32": "tf32"}.get(dtype, "f8f6f4")
    for cg, (ms, ns, k) in sm100.TCGEN05_SHAPES[kind].items():
        for m in ms:
            for n in (ns[0], ns[len(ns) // 2], ns[-1]):
                log = sm100.verify_umma_atom(sm100.umma_atom(dtype, m, n, cg))
                assert [p.kind for p in log] == ["config", "atom", "atom", "atom"]
                assert log.cases == 1 + m * k + n * k + m * n


@pytest.mark.slow
def test_sm100_all_verify():
    log = sm100.verify_all_sm100()
    assert isinstance(log, ProofLog)
    assert all(p.status == "proved" for p in log)
    # every atom: shape + A, B, C
    assert sum(p.kind == "config" for p in log) == len(sm100.SM100_ATOMS)
    assert len(sm100.SM100_ATOMS) == 9 * (2 * 32 + 2 * 16)  # 8 input types + .f16 accumulators


def test_sm100_shapes_from_the_isa_table():
    assert sm100.TCGEN05_SHAPES["f16"][1] == ((64, 128), tuple(range(8, 257, 8)), 16)
    assert sm100.TCGEN05_SHAPES["tf32"][2][2] == 8
    assert sm100.umma_atom("bf16", 64, 8).name == "SM100_64x8x16_F32BF16BF16_SS"
    with pytest.raises(MalformedLayoutError):
        sm100.umma_atom("f16", 64, 8, cta_group=2)  # M = 64 is not a cta_group::2 shape
    with pytest.raises(MalformedLayoutError):
        sm100.umma_atom("f16", 128, 24, cta_group=2)  # N step is 16 for cta_group::2
    with pytest.raises(MalformedLayoutError):
        sm100.umma_atom("s8", 128, 64)  # i8 row of the table not transcribed: no atom
    with pytest.raises(MalformedLayoutError):
        sm100.umma_atom("bf16", 128, 64, acc="f16")  # PTX: .f16 accumulators need .f16 inputs
    bad = dataclasses.replace(sm100.umma_atom("f16", 128, 64), a_type="bf16", b_type="bf16", c_type="f16")
    with pytest.raises(AtomMismatchError):
        sm100.verify_umma_atom(bad)


def test_sm100_cta_pair_split():
    a = sm100.umma_atom("f16", 256, 64, cta_group=2)
    assert str(a.thr_id) == "2:1"
    assert a.a(1, 0) == (128, 0)  # CTA 1's first value is row 128
    assert a.b(1, 0) == (32, 0)  # CTA 1 holds columns 32..63 of B
    assert a.c(0, 127 + 128 * 5) == (127, 5)


def test_tmem_layouts_small_cases():
    for letter in ("D", "F", "A", "B"):
        assert len(sm100.verify_tmem_layout(letter, 32)) == 1
    L = sm100.tmem_c_layout("F", 64, 8)
    # rows 16..31 are warp 1: lanes 32..47
    assert {L(m, 0) >> 16 for m in range(16, 32)} == set(range(32, 48))
    with pytest.raises(MalformedLayoutError):
        sm100.tmem_d_address("D", 8, 128, 0)
    with pytest.raises(MalformedLayoutError):
        sm100.datapath_layout(64, 2)


def test_sm100_planted_stride_caught():
    a = sm100.umma_atom("f16", 128, 64)
    bad = dataclasses.replace(a, c_layout=Layout((1, (128, 64)), (0, (1, 129))))
    with pytest.raises(AtomMismatchError):
        sm100.verify_umma_atom(bad)
    # bijective, but CTA 0 would own the even rows of A, not the first half
    a2 = sm100.umma_atom("f16", 256, 64, cta_group=2)
    bad2 = dataclasses.replace(a2, a_layout=Layout((2, (128, 16)), (1, (2, 256))))
    with pytest.raises(AtomMismatchError) as e:
        sm100.verify_umma_atom(bad2)
    assert e.value.witness == (0, 1)


def test_tmem_planted_stride_caught():
    # the common mistake: M = 64 rows in 64 consecutive lanes
    bad = Layout(((16, 4), 32), ((1 << 16, 16 << 16), 1))
    with pytest.raises(AtomMismatchError) as e:
        sm100.verify_tmem_layout("F", 32, bad)
    assert e.value.witness == (16, 0)
    bad_b = Layout((64, 64), (1 << 16, 1))  # layout D's form for a cta_group::2 M = 128 D
    with pytest.raises(AtomMismatchError):
        sm100.verify_tmem_layout("B", 64, bad_b)


def test_sm100_planted_table_entry_caught(monkeypatch):
    real = sm100.tmem_d_address

    def wrong(layout, n_cols, m, n):
        lane, col = real(layout, n_cols, m, n)
        return (lane + 16 * (layout == "F") * ((np.asarray(m) // 16) % 2), col)

    monkeypatch.setattr(sm100, "tmem_d_address", wrong)
    with pytest.raises(AtomMismatchError):
        sm100.verify_tmem_layout("F", 16)
    monkeypatch.undo()
    shapes = dict(sm100.TCGEN05_SHAPES)
    shapes["f16"] = {1: ((64, 128), tuple(range(16, 257, 8)), 16), 2: shapes["f16"][2]}
    monkeypatch.setattr(sm100, "TCGEN05_SHAPES", shapes)
    with pytest.raises(AtomMismatchError):
        sm100.verify_umma_atom(sm100.SM100_ATOMS["SM100_64x8x16_F32F16F16_SS"])


def test_scale_factor_layouts():
    for (kind, _sv), vs in sm100.SCALE_VEC.items():
        k = sm100.TCGEN05_K[kind]
        assert sm100.verify_scale_factor_layout(128, k, vs).cases == 128 * k
    bad = Layout((128, (16, 4)), (1, (0, 128)))  # VS 16 layout claimed for VS 32
    with pytest.raises(AtomMismatchError):
        sm100.verify_scale_factor_layout(128, 64, 32, bad)
    with pytest.raises(MalformedLayoutError):
        sm100.scale_factor_layout(128, 64, 24)


def test_sw128_32b_atom_is_a_bijection_on_its_bits():
    for bits in (8, 16, 32):
        L = sm100.smem_atom_mn_sw128_32b(bits)
        per = 1024 // bits
        vals = sorted(L(i, j) for i in range(per) for j in range(4))
        assert vals == list(range(4 * per))


# ----------------------------------------------------------------------------- SM120
def test_sm120_all_verify():
    log = sm120.verify_all_sm120()
    assert all(p.status == "proved" for p in log)
    assert "SM120_16x8x32_F32E4M3E4M3F32_TN" in sm120.SM120_ATOMS
    assert "SM120_16x8x32_F16E2M1E3M2F16_TN" in sm120.SM120_ATOMS
    assert "SM120_16x8x32_F32E5M2E2M3F32_TN_VS32" in sm120.SM120_ATOMS
    a = sm120.SM120_ATOMS["SM120_16x8x64_F32E2M1E2M1F32_TN_VS16_UE4M3"]
    assert (a.kind, a.vs, a.sf_type) == ("mxf4nvf4", 16, "ue4m3")


def test_sm120_sf_ownership_matches_the_selector_reading():
    # thread-id-a = 0: lanes with threadID_in_group 0 and 1 supply rows g and g + 8
    assert [sm120.sf_a_lane(ln) for ln in (0, 1, 2, 3, 29)] == [0, 8, None, None, 15]
    assert [sm120.sf_a_lane(ln, 1) for ln in (2, 3)] == [0, 8]
    assert [sm120.sf_b_lane(ln) for ln in (0, 1, 4, 28)] == [0, None, 1, 7]
    with pytest.raises(MalformedLayoutError):
        sm120.sf_a_lane(0, 2)


def test_sm120_planted_bugs_caught(monkeypatch):
    a = sm120.SM120_ATOMS["SM120_16x8x64_F32E2M1E2M1F32_TN_VS32"]
    # A with the two column halves swapped (stride 512 -> 8 and 8 -> 512 exchanged)
    bad = dataclasses.replace(a, a_layout=Layout(((4, 8), (8, 2, 2)), ((128, 1), (16, 512, 8))))
    with pytest.raises(AtomMismatchError):
        sm120.verify_sm120_atom(bad)
    # SFA naming rows 2g + t0 instead of g + 8 t0
    bad_sf = dataclasses.replace(a, sf_a_layout=Layout(((2, 2, 8), 64), ((1, 0, 2), 16)))
    with pytest.raises(AtomMismatchError) as e:
        sm120.verify_sm120_atom(bad_sf)
    assert e.value.condition.startswith("SFA")
    # a VS that is not a PTX combination for mxf4
    with pytest.raises(AtomMismatchError):
        sm120.verify_sm120_atom(dataclasses.replace(a, vs=16))

    # a wrong table entry: the m16n8k64 A table with the +32 column offset from i >= 8
    def wrong_a(lane, i):
        r, c = sm120.m16n8k64_e2m1_a(lane, i)
        return r, (c % 32) + (32 if 8 <= i < 16 or i >= 24 else 0)

    tables = dict(sm120._TABLES)
    tables[64] = (wrong_a,) + tables[64][1:]
    monkeypatch.setattr(sm120, "_TABLES", tables)
    with pytest.raises(AtomMismatchError):
        sm120.verify_sm120_atom(a)


# ----------------------------------------------------------------------------- stmatrix
def test_stsm_all_verify_and_refused_by_ldmatrix_checker():
    log = copy_sm90.verify_all_stsm()
    assert len(log) == 18
    assert not set(copy_sm90.STSM_ATOMS) & set(COPY_ATOMS)
    with pytest.raises(AtomMismatchError):
        verify_copy_atom(copy_sm90.STSM_ATOMS["SM90_U32x4_STSM_N"])


def test_stsm_planted_bugs_caught(monkeypatch):
    t = copy_sm90.STSM_ATOMS["SM90_U16x4_STSM_T"]
    n = copy_sm90.STSM_ATOMS["SM90_U32x2_STSM_N"]
    with pytest.raises(AtomMismatchError):  # the non-transposed fragment under .trans
        copy_sm90.verify_stsm_atom(dataclasses.replace(t, src_layout=n.src_layout))
    with pytest.raises(AtomMismatchError):  # row addresses in the wrong lane order
        bad_dst = Layout(((8, 2, 2), 128), ((256, 128, 0), 1))
        copy_sm90.verify_stsm_atom(dataclasses.replace(n, dst_layout=bad_dst))
    real = copy_sm90.stmatrix_src
    monkeypatch.setattr(copy_sm90, "stmatrix_src", lambda ln, r, h, trans=False: real(ln, r, h, not trans))
    with pytest.raises(AtomMismatchError):
        copy_sm90.verify_stsm_atom(n)


# ----------------------------------------------------------------------------- tensor-layouts
try:
    import tensor_layouts.atoms_nv as tl
except ImportError:  # the differential tests below skip; the ISA checks above still run
    tl = None

_NO_PEER = pytest.mark.skipif(tl is None, reason="tensor-layouts is not installed")


def _ours(L) -> Layout:
    return Layout.parse(str(L).replace(" ", ""))


def _same_function(a: Layout, b: Layout) -> bool:
    return a.size == b.size and np.array_equal(a.eval_all(), b.eval_all())


def _sm100_peer_pairs():
    out = []
    for peer in tl.MMA_ATOMS_SM100_UMMA if tl is not None else []:
        m, n, k = peer.shape_mnk
        tag = peer.name.split("_")[2]  # e.g. F32BF16BF16 / F16F16F16 / F32TF32TF32F32
        ab = "tf32" if "TF32" in tag else "bf16" if "BF16" in tag else "f16"
        acc = tag[:3]
        # tensor-layouts has F16BF16BF16 (.f16 accumulator, .bf16 inputs), which the PTX table
        # does not list: compare its layouts with the .f32 atom and record the difference
        ok = acc == "F32" or ab == "f16"
        out.append(
            (peer, sm100.umma_atom(ab, m, n, acc=acc.lower() if ok else "f32"), acc if ok else "not in PTX")
        )
    return out


@_NO_PEER
@pytest.mark.parametrize("peer,ours,acc", _sm100_peer_pairs(), ids=lambda x: getattr(x, "name", str(x)))
def test_sm100_against_tensor_layouts(peer, ours, acc):
    assert peer.shape_mnk == ours.shape_mnk
    for op in ("a_layout", "b_layout", "c_layout"):
        assert _same_function(_ours(getattr(peer, op)), getattr(ours, op)), (peer.name, op)
    if acc != "not in PTX":
        assert ours.name == peer.name.replace("TF32TF32F32", "TF32TF32")


_SM120_MAP = {
    "SM120_16x8x32_F32E4M3E4M3F32_TN": "SM120_16x8x32_F32E4M3E4M3F32_TN",
    "SM120_16x8x32_F16E4M3E4M3F16_TN": "SM120_16x8x32_F16E4M3E4M3F16_TN",
    # tensor-layouts labels the k64 atom e4m3; PTX's m16n8k64 block-scaled kinds take e2m1
    "SM120_16x8x64_F32E4M3E4M3F32_TN": "SM120_16x8x64_F32E2M1E2M1F32_TN_VS32",
    "SM120_16x8x64_F16E4M3E4M3F16_TN": "SM120_16x8x64_F32E2M1E2M1F32_TN_VS32",
}


@_NO_PEER
@pytest.mark.parametrize("peer", tl.MMA_ATOMS_SM120 if tl is not None else [], ids=lambda a: a.name)
def test_sm120_against_tensor_layouts(peer):
    if peer.name.endswith("_SPARSE"):
        pytest.skip(f"{peer.name}: sparse mma.sp atoms are not modelled here")
    ours = sm120.SM120_ATOMS[_SM120_MAP[peer.name]]
    assert peer.shape_mnk == ours.shape_mnk
    for op in ("a_layout", "b_layout", "c_layout"):
        assert _same_function(_ours(getattr(peer, op)), getattr(ours, op)), (peer.name, op)


@_NO_PEER
@pytest.mark.parametrize("peer", tl.COPY_ATOMS_SM90 if tl is not None else [], ids=lambda a: a.name)
def test_stsm_against_tensor_layouts(peer):
    ours = copy_sm90.STSM_ATOMS[peer.name]
    assert _same_function(_ours(peer.src_layout_bits), ours.src_layout)
    assert _same_function(_ours(peer.dst_layout_bits), ours.dst_layout)


# ----------------------------------------------------------------------------- CUTLASS
@pytest.mark.parametrize(
    "letter,m,atom",
    [
        # CuTe's UMMA TMEM allocator atoms (M, N) -> virtual address dp + 128 * col, for
        # 32-bit accumulators; transcribed constants, read as a second source for the ISA.
        ("D", 128, lambda n: Layout((128, n), (1, 128))),
        ("F", 64, lambda n: Layout(((16, 4), n), ((1, 32), 128))),
        ("B", 128, lambda n: Layout((64, (n // 2, 2)), (1, (128, 64)))),
        ("A", 256, lambda n: Layout((128, n), (1, 128))),
    ],
)
def test_tmem_layouts_agree_with_cutlass_allocator(letter, m, atom):
    from layoutproof import composition

    restride = Layout((128, 16384), (1 << 16, 1))  # virtual (dp, col) -> (lane << 16) | col
    for n in (16, 64, 256):
        theirs = composition(restride, atom(n))
        assert _same_function(theirs, sm100.tmem_c_layout(letter, m, n)), (letter, n)
        assert len(sm100.verify_tmem_layout(letter, n, theirs)) == 1
