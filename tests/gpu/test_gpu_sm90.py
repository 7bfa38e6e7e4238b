"""SM90 wgmma atoms, canonical shared-memory layouts and matrix descriptors (CPU only)."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof.errors import InadmissibleError, MalformedLayoutError
from layoutproof.gpu.errors import AtomMismatchError, ProofFailedError
from layoutproof.gpu.isa import gmma
from layoutproof.gpu.isa.gmma import (
    N_VALUES,
    SM90_ATOMS,
    SWIZZLES,
    GmmaSmemLayout,
    decode_descriptor,
    descriptor_address,
    encode_descriptor,
    make_descriptor,
    prove_descriptor,
    prove_k_advance,
    sm90_atom,
    smem_atom,
    tile_to_shape,
    verify_gmma_atom,
    verify_smem_atom,
    wgmma_a_f16,
    wgmma_d_f32,
)
from layoutproof.gpu.proof.record import ProofLog

# ----------------------------------------------------------------------------- atoms


def test_registry_complete():
    assert N_VALUES == tuple(range(8, 257, 8))
    assert len(SM90_ATOMS) == 32 * 2 * 2
    for n in N_VALUES:
        for dtype in ("f16", "bf16"):
            for src in ("SS", "RS"):
                a = sm90_atom(n, dtype, src)
                assert a.shape_mnk == (64, n, 16) and a.num_threads == 128
                assert a.ptx == f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dtype}.{dtype}"
                assert a.a_source == src and a.c_regs == n // 2
                assert a.a_regs == (4 if src == "RS" else 0) and a.b_regs == 0
    assert sm90_atom(64, "bf16", "SS").name == "SM90_64x64x16_F32BF16BF16_SS"
    for bad in [dict(n=12), dict(n=264), dict(n=64, dtype="f32"), dict(n=64, a_source="SR")]:
        with pytest.raises(MalformedLayoutError):
            sm90_atom(**bad)


@pytest.mark.parametrize("src", ["SS", "RS"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_every_atom_matches_ptx(dtype, src):
    for n in N_VALUES:
        atom = sm90_atom(n, dtype, src)
        log = verify_gmma_atom(atom)
        assert isinstance(log, ProofLog)
        kinds = [p.kind for p in log]
        assert kinds.count("bijective") == (2 if src == "RS" else 1)
        assert kinds.count("atom") == 3
        # C is checked point by point: 64*N pairs (plus as many for the bijection)
        assert any(p.cases == 64 * n and "C == PTX" in p.statement for p in log)


def test_c_layout_is_cutes_clayout_64xN():
    for n in N_VALUES:
        C = sm90_atom(n).c_layout
        assert str(C) == f"((4,8,4),(2,2,{n // 8})):((128,1,16),(64,8,512))"
    # RS A is CuTe's ALayout_64x16 (== CLayout_64x16)
    assert str(sm90_atom(64, a_source="RS").a_layout) == "((4,8,4),(2,2,2)):((128,1,16),(64,8,512))"
    assert str(sm90_atom(96).b_layout) == "(128,(96,16)):(0,(1,96))"
    assert str(sm90_atom(96).a_layout) == "(128,(64,16)):(0,(1,64))"


def test_n8_exact_and_profile():
    """N = 8: the PTX table point by point, and the value mode keeps its trailing 1."""
    atom = sm90_atom(8, "f16", "SS")
    for t in range(128):
        for v in range(4):
            assert atom.c(t, v) == wgmma_d_f32(t, v, 8)
    # spot values written down by hand from the PTX figure: warp 2, lane 13 (group 3, tig 1)
    assert atom.c(64 + 13, 0) == (32 + 3, 2)
    assert atom.c(64 + 13, 3) == (32 + 3 + 8, 3)
    # cutlass#3254: the same function with value profile (2,2) is rejected
    wrong = Layout(((4, 8, 4), (2, 2)), ((128, 1, 16), (64, 8)))
    assert np.array_equal(wrong.eval_all(), atom.c_layout.eval_all())
    bad = dataclasses.replace(atom, c_layout=wrong)
    with pytest.raises(AtomMismatchError) as ei:
        verify_gmma_atom(bad)
    assert ei.value.condition == "C profile" and "3254" in str(ei.value)


def test_ptx_encoding_independent_spot_values():
    # D: d_i for i%4 in {2,3} is 8 rows down; slab i//4 is 8 columns right
    assert wgmma_d_f32(0, 0, 16) == (0, 0)
    assert wgmma_d_f32(0, 1, 16) == (0, 1)
    assert wgmma_d_f32(0, 2, 16) == (8, 0)
    assert wgmma_d_f32(0, 5, 16) == (0, 9)
    assert wgmma_d_f32(3, 0, 16) == (0, 6)
    assert wgmma_d_f32(4, 0, 16) == (1, 0)
    assert wgmma_d_f32(32, 0, 16) == (16, 0)
    assert wgmma_d_f32(127, 127, 256) == (63, 255)
    # A: m16n8k16 A pattern per warp
    assert [wgmma_a_f16(1, i) for i in range(8)] == [
        (0, 2),
        (0, 3),
        (8, 2),
        (8, 3),
        (0, 10),
        (0, 11),
        (8, 10),
        (8, 11),
    ]
    assert wgmma_a_f16(96, 0) == (48, 0)
    with pytest.raises(MalformedLayoutError):
        wgmma_d_f32(0, 4, 8)
    with pytest.raises(MalformedLayoutError):
        wgmma_a_f16(128, 0)


@pytest.mark.parametrize("which", ["C", "A"])
def test_corrupted_atom_caught(which):
    atom = sm90_atom(64, "f16", "RS")
    if which == "C":  # swap the +8-row and column-parity value strides
        bad = dataclasses.replace(atom, c_layout=Layout(((4, 8, 4), (2, 2, 8)), ((128, 1, 16), (8, 64, 512))))
    else:  # warps stacked in the wrong order of rows
        bad = dataclasses.replace(atom, a_layout=Layout(((4, 8, 4), (2, 2, 2)), ((128, 1, 16), (512, 8, 64))))
    with pytest.raises(AtomMismatchError) as ei:
        verify_gmma_atom(bad)
    e = ei.value
    t, v = e.witness
    assert 0 <= t < 128 and e.ours != e.ptx
    table = gmma.wgmma_d_f32 if which == "C" else gmma.wgmma_a_f16
    assert e.ptx == (table(t, v, 64) if which == "C" else table(t, v))


def test_corrupted_descriptor_operand_and_bijection_caught():
    atom = sm90_atom(32)
    with pytest.raises(AtomMismatchError) as ei:
        verify_gmma_atom(dataclasses.replace(atom, b_layout=Layout((128, (32, 16)), (1, (1, 32)))))
    assert ei.value.condition == "operand B is a descriptor tile"
    # a non-injective C of the right profile
    dup = Layout(((4, 8, 4), (2, 2, 4)), ((128, 1, 16), (64, 8, 0)))
    with pytest.raises(AtomMismatchError) as ei:
        verify_gmma_atom(dataclasses.replace(atom, c_layout=dup))
    assert ei.value.condition in ("bijective", "bounds")


# ----------------------------------------------------------------------------- smem atoms

CUTE_SHAPES_16 = {
    ("K", "INTER"): (8, 8),
    ("K", "SW32"): (8, 16),
    ("K", "SW64"): (8, 32),
    ("K", "SW128"): (8, 64),
    ("MN", "INTER"): (8, 8),
    ("MN", "SW32"): (16, 8),
    ("MN", "SW64"): (32, 8),
    ("MN", "SW128"): (64, 8),
}


@pytest.mark.parametrize("major,sw", sorted(CUTE_SHAPES_16))
def test_canonical_atoms(major, sw):
    atom = smem_atom(major, sw)
    assert atom.shape == CUTE_SHAPES_16[(major, sw)]
    log = verify_smem_atom(atom)
    assert [p.kind for p in log] == ["bijective", "equal"]
    vals = np.sort(atom.layout.eval_all())
    assert np.array_equal(vals, np.arange(atom.shape[0] * atom.shape[1]))  # onto its span
    if sw == "INTER":
        assert isinstance(atom.layout, Layout)
    else:
        assert isinstance(atom.layout, ComposedLayout)
        assert atom.layout.swizzle == Swizzle({"SW32": 1, "SW64": 2, "SW128": 3}[sw], 3, 3)


def test_canonical_atom_strings_and_other_widths():
    assert str(smem_atom("K", "SW128").layout) == "Sw<3,3,3> o 0 o (8,64):(64,1)"
    assert str(smem_atom("MN", "SW32").layout) == "Sw<1,3,3> o 0 o (16,8):(1,16)"
    assert str(smem_atom("K", "SW128", 32).layout) == "Sw<3,2,3> o 0 o (8,32):(32,1)"
    assert str(smem_atom("K", "SW128", 8).layout) == "Sw<3,4,3> o 0 o (8,128):(128,1)"
    for bits in (8, 32):
        for major in ("K", "MN"):
            for sw in SWIZZLES:
                verify_smem_atom(smem_atom(major, sw, bits))
    with pytest.raises(MalformedLayoutError):
        smem_atom("KM", "SW128")
    with pytest.raises(MalformedLayoutError):
        smem_atom("K", "SW16")


def test_wrong_atom_caught():
    # the bit-unit swizzle read as an element swizzle (Sw<3,4,3> on 16-bit offsets) is wrong
    bad = GmmaSmemLayout(composition(Swizzle(3, 4, 3), Layout((8, 64), (64, 1))), "K", "SW128")
    with pytest.raises(ProofFailedError) as ei:
        verify_smem_atom(bad)
    assert ei.value.condition == "equals CuTe bit-unit atom"  # a bijection, but not CuTe's
    bad = GmmaSmemLayout(composition(Swizzle(3, 3, 3), Layout((8, 64), (1, 8))), "K", "SW128")
    with pytest.raises(ProofFailedError) as ei:
        verify_smem_atom(bad)
    assert ei.value.condition == "equals CuTe bit-unit atom" and len(ei.value.witness) == 2
    with pytest.raises(ProofFailedError):
        verify_smem_atom(GmmaSmemLayout(Layout((8, 32), (32, 1)), "K", "SW128"))


def test_tile_to_shape():
    s = tile_to_shape(smem_atom("K", "SW128"), (128, 64))
    assert s.shape == (128, 64) and str(s.layout) == "Sw<3,3,3> o 0 o (128,64):(64,1)"
    s = tile_to_shape(smem_atom("K", "SW64"), (64, 64))
    assert s.shape == (64, 64)
    assert np.array_equal(np.sort(s.layout.eval_all()), np.arange(64 * 64))
    with pytest.raises(InadmissibleError):
        tile_to_shape(smem_atom("K", "SW128"), (128, 32))


# ----------------------------------------------------------------------------- descriptors


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, (1 << 14) - 1),
    st.integers(0, (1 << 14) - 1),
    st.integers(0, (1 << 14) - 1),
    st.integers(0, 7),
    st.sampled_from(SWIZZLES),
)
def test_descriptor_roundtrip(a, lbo, sbo, base, sw):
    d = encode_descriptor(16 * a, 16 * lbo, 16 * sbo, base, sw)
    f = decode_descriptor(d)
    assert (
        f["start_address"],
        f["leading_byte_offset"],
        f["stride_byte_offset"],
        f["base_offset"],
        f["swizzle"],
    ) == (16 * a, 16 * lbo, 16 * sbo, base, sw)
    assert d == encode_descriptor(**{k: v for k, v in f.items() if k != "layout_type"})
    assert d < 1 << 64


def test_descriptor_bit_positions():
    d = encode_descriptor(0x10, 0x20, 0x30, 5, "SW32")
    assert d & 0x3FFF == 1 and (d >> 16) & 0x3FFF == 2 and (d >> 32) & 0x3FFF == 3
    assert (d >> 49) & 7 == 5 and d >> 62 == 3
    assert {sw: encode_descriptor(0, 0, 0, 0, sw) >> 62 for sw in SWIZZLES} == {
        "INTER": 0,
        "SW128": 1,
        "SW64": 2,
        "SW32": 3,
    }
    for bad in [dict(start_address=8), dict(start_address=1 << 18), dict(stride_byte_offset=-16)]:
        args = dict(start_address=0, leading_byte_offset=0, stride_byte_offset=0) | bad
        with pytest.raises(ProofFailedError):
            encode_descriptor(**args)


STAGES = [(64, 64), (128, 64), (256, 64), (64, 128)]


@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("sw", SWIZZLES)
def test_prove_descriptor_canonical(major, sw):
    for shape in STAGES:
        s = tile_to_shape(smem_atom(major, sw), shape)
        for mext in (64, shape[0]):  # an A tile (64 rows) or a B tile (N = BN rows)
            for mn0 in range(0, shape[0], mext):
                d = make_descriptor(s, 0x2000, mn_offset=mn0)
                log = prove_descriptor(s, d, base_addr=0x2000, mn_offset=mn0, mn_extent=mext)
                assert log.cases == mext * 16
            klog = prove_k_advance(s, 0x2000, mn_extent=mext)
            assert len(klog) == 1 + shape[1] // 16


def test_k_major_sw128_advance_is_32_bytes():
    s = tile_to_shape(smem_atom("K", "SW128"), (128, 64))
    d0 = make_descriptor(s, 0x400)
    f = decode_descriptor(d0)
    assert (f["start_address"], f["leading_byte_offset"], f["stride_byte_offset"], f["swizzle"]) == (
        0x400,
        16,
        1024,
        "SW128",
    )
    for j in range(4):
        assert make_descriptor(s, 0x400, k_offset=16 * j) == d0 + 2 * j  # +32 bytes >> 4
    log = prove_k_advance(s, 0x400, mn_extent=64)
    assert log.proofs[0].statement.startswith("k-advance +0/+32/+64/+96 bytes")


def _with(desc, **fields):
    f = decode_descriptor(desc)
    f.update(fields)
    f.pop("layout_type")
    return encode_descriptor(**f)


def test_prove_descriptor_fails_wrong_sbo():
    s = tile_to_shape(smem_atom("K", "SW128"), (128, 64))
    d = make_descriptor(s, 0x400)
    with pytest.raises(ProofFailedError) as ei:
        prove_descriptor(s, _with(d, stride_byte_offset=512), base_addr=0x400, mn_extent=64)
    e = ei.value
    assert e.condition == "descriptor addresses equal layout"
    mn, k = e.witness
    assert mn >= 8 and 0 <= k < 16  # the first 8 rows are right


def test_prove_descriptor_fails_wrong_lbo():
    s = tile_to_shape(smem_atom("K", "INTER"), (64, 64))
    d = make_descriptor(s, 0)
    with pytest.raises(ProofFailedError) as ei:
        prove_descriptor(s, _with(d, leading_byte_offset=128), mn_extent=64)
    assert ei.value.witness[1] >= 8  # the second 16-byte K column
    s = tile_to_shape(smem_atom("MN", "SW128"), (128, 64))
    d = make_descriptor(s, 0)
    prove_descriptor(s, d)  # B tile, N = 128: uses LBO
    with pytest.raises(ProofFailedError) as ei:
        prove_descriptor(s, _with(d, leading_byte_offset=2048))
    assert ei.value.witness[0] >= 64


@pytest.mark.parametrize("wrong", ["SW64", "SW32", "INTER"])
def test_prove_descriptor_fails_wrong_swizzle(wrong):
    s = tile_to_shape(smem_atom("K", "SW128"), (64, 64))
    d = make_descriptor(s, 0)
    with pytest.raises(ProofFailedError) as ei:
        prove_descriptor(s, _with(d, swizzle=wrong))
    assert len(ei.value.witness) == 2


def test_prove_descriptor_fails_misaligned_base_and_wrong_major():
    s = tile_to_shape(smem_atom("K", "SW128"), (64, 64))
    d = make_descriptor(s, 0x480)  # not on the 1024-byte pattern boundary
    with pytest.raises(ProofFailedError):
        prove_descriptor(s, d, base_addr=0x480)
    mn = dataclasses.replace(s, major="MN")  # instruction transposes the operand
    with pytest.raises(ProofFailedError):
        prove_descriptor(mn, d)
    with pytest.raises(ProofFailedError):  # non-zero base offset is not modelled
        prove_descriptor(s, _with(d, base_offset=1))
    with pytest.raises(ProofFailedError):  # tile outside the layout
        prove_descriptor(s, d, mn_offset=32, mn_extent=64)


def test_make_descriptor_rejects_wrong_swizzle_declaration():
    s = tile_to_shape(smem_atom("K", "SW128"), (64, 64))
    with pytest.raises(ProofFailedError) as ei:
        make_descriptor(dataclasses.replace(s, swizzle="SW64"), 0)
    assert ei.value.condition == "canonical swizzle"


def test_descriptor_address_model_spot_values():
    # K-major SW128, start 0, SBO 1024: (row 1, k 0) is byte 128 with chunk 0 ^ 1 -> 144
    d = encode_descriptor(0, 16, 1024, 0, "SW128")
    assert descriptor_address(d, "K", 0, 0) == 0
    assert descriptor_address(d, "K", 1, 0) == 128 + 16
    assert descriptor_address(d, "K", 8, 0) == 1024
    assert descriptor_address(d, "K", 7, 9) == 7 * 128 + ((1 ^ 7) << 4) + 2
    # interleave: core matrix rows 16 bytes apart, LBO for the next 8 k
    d = encode_descriptor(0, 1024, 128, 0, "INTER")
    assert descriptor_address(d, "K", 3, 8) == 3 * 16 + 1024
    assert descriptor_address(d, "MN", 9, 3) == 128 + 3 * 16 + 2


# ----------------------------------------------------------------------------- the kernel's descriptors
def test_wgmma_operand_proves_the_descriptors_a_kernel_forms():
    """wgmma_operand(descriptors=...) proves the descriptors given (a kernel's own) instead
    of building them; a field the block does not use may differ (the MN-major A slice 1
    keeps slice 0's LBO), a wrong stride or swizzle field is refuted, a key that is no
    block is refused."""
    from layoutproof.gpu.analysis import AccessError, wgmma_operand

    s = tile_to_shape(smem_atom("MN", "SW128"), (128, 64))
    built = {(m0, k0): make_descriptor(s, 0, mn_offset=m0, k_offset=k0) for m0 in (0, 64) for k0 in (0, 16)}
    template = built[(0, 0)] & ~0x3FFF
    formed = {key: template | (d & 0x3FFF) for key, d in built.items()}
    assert formed[(64, 0)] != built[(64, 0)]  # the kernel's slice-1 descriptor is not the built one
    r = wgmma_operand(s.layout, element_bits=16, major="MN", mn_block=64, descriptors=formed)
    assert r.status == "proved" and r.mode == "MN-major SW128"
    assert {int(f["descriptor"], 16) for f in r.descriptors} >= set(formed.values())
    default = wgmma_operand(s.layout, element_bits=16, major="MN", mn_block=64)
    assert int(default.descriptors[4]["descriptor"], 16) == built[(64, 0)]  # unchanged without
    k = tile_to_shape(smem_atom("K", "SW128"), (128, 64))
    d = make_descriptor(k, 0)
    bad = wgmma_operand(
        k.layout, element_bits=16, major="K", descriptors={(0, 0): _with(d, stride_byte_offset=512)}
    )
    assert bad.status == "refuted"
    wrong_mode = wgmma_operand(
        k.layout, element_bits=16, major="K", descriptors={(0, 0): _with(d, swizzle="SW64")}
    )
    assert wrong_mode.status == "refuted"
    assert any("mode SW64" in t for t in wrong_mode.tried)
    with pytest.raises(AccessError) as ei:
        wgmma_operand(k.layout, element_bits=16, descriptors={(8, 0): d})
    assert ei.value.condition == "descriptor keys"


def test_a_planted_descriptor_bug_fails_the_generation(monkeypatch):
    """The Hopper generator's descriptors go through wgmma_operand: a descriptor encoding
    with the wrong stride byte offset fails the generation with the element it misreads."""
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.kernels import wgmma

    orig = gmma.make_descriptor
    monkeypatch.setattr(gmma, "make_descriptor", lambda *a, **k: _with(orig(*a, **k), stride_byte_offset=512))
    with pytest.raises(ProofFailedError) as ei:
        wgmma.generate_sm90(wgmma.Sm90Config(), GemmProblem("k", "k"), memo=False)
    assert "K-major SW128" in str(ei.value) and "element" in str(ei.value.witness)
