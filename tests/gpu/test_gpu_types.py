"""The tensor-core types beyond f16/bf16: tf32, fp8 (e4m3, e5m2) and int8 (s8, u8) -- their
wgmma atoms against PTX, the kernels generated and proven for them, planted bugs caught."""

import dataclasses
import re
import shutil

import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)

from layoutproof import Layout
from layoutproof.errors import MalformedLayoutError
from layoutproof.gpu.config import TC_TYPES, GemmProblem, operand_storage
from layoutproof.gpu.errors import AtomMismatchError, GemmConfigError, ProofFailedError
from layoutproof.gpu.isa import gmma
from layoutproof.gpu.kernels import wgmma
from layoutproof.gpu.kernels.epilogue import EpilogueConfig, generate_epilogue
from layoutproof.gpu.kernels.toolkit import OperandPlan
from layoutproof.gpu.kernels.wgmma import HOPPER_DEFAULT, Sm90Config, generate_sm90
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

TYPES = ("tf32", "e4m3", "e5m2", "s8", "u8")


# ----------------------------------------------------------------------------- atoms
@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("source", ["SS", "RS"])
def test_wgmma_atoms_of_every_type_match_ptx(dtype, source):
    for n in (8, 24, 48, 128, 256):  # every N: gmma.verify_all_sm90
        atom = gmma.sm90_atom(n, dtype, source)
        log = gmma.verify_gmma_atom(atom)
        assert atom.shape_mnk[2] * gmma.WGMMA_TYPES[dtype][0] == 256  # 32 bytes of K
        assert atom.ptx == kir.wgmma_ptx(n, dtype)
        assert len(log) == (5 if source == "RS" else 4)


def test_integer_n_set_and_names():
    assert gmma.WGMMA_TYPES["s8"][3] == (
        8,
        16,
        24,
        32,
        48,
        64,
        80,
        96,
        112,
        128,
        144,
        160,
        176,
        192,
        208,
        224,
        240,
        256,
    )
    with pytest.raises(MalformedLayoutError, match="N must be one of"):
        gmma.sm90_atom(40, "s8")
    assert gmma.sm90_atom(40, "e4m3").name == "SM90_64x40x32_F32E4M3E4M3_SS_TN"
    assert gmma.sm90_atom(8, "tf32", "RS").name == "SM90_64x8x8_F32TF32TF32_RS_TN"
    assert gmma.sm90_atom(256, "u8").c_type == "s32"


def test_register_a_fragments_pointwise():
    # tf32: a1 of thread 37 (warp 1, lane 5: group 1, thread 1) is row 16+1+8, col 1
    assert gmma.wgmma_a_tf32(37, 1) == (25, 1)
    # 8-bit: a13 of thread 37 is row 16+1+8, col 1*4+1+16
    assert gmma.wgmma_a_b8(37, 13) == (25, 21)


def test_planted_wgmma_atom_bugs_caught():
    atom = gmma.sm90_atom(64, "e4m3", "RS")
    with pytest.raises(AtomMismatchError):  # the f16 register pattern on an 8-bit atom
        gmma.verify_gmma_atom(dataclasses.replace(atom, a_layout=gmma._c_layout(16)))
    with pytest.raises(AtomMismatchError, match="m64nNk32"):  # k16 for an 8-bit type
        gmma.verify_gmma_atom(dataclasses.replace(atom, shape_mnk=(64, 64, 16)))
    with pytest.raises(AtomMismatchError, match="accumulator"):
        gmma.verify_gmma_atom(dataclasses.replace(gmma.sm90_atom(64, "s8"), c_type="f32"))
    tf = gmma.sm90_atom(64, "tf32", "RS")
    swapped = Layout(((4, 8, 4), (2, 2)), ((64, 1, 16), (256, 8)))  # v0 and v1 exchanged
    with pytest.raises(AtomMismatchError):
        gmma.verify_gmma_atom(dataclasses.replace(tf, a_layout=swapped))


def test_8bit_and_32bit_smem_atoms_verified():
    for bits in (8, 32):
        for major in ("K", "MN"):
            log = gmma.verify_smem_atom(gmma.smem_atom(major, "SW128", bits))
            assert [r.kind for r in log] == ["bijective", "equal"]


# ----------------------------------------------------------------------------- problems
def test_problem_rules():
    assert GemmProblem("k", "k", "e4m3").validate().out == "bf16"
    assert GemmProblem("k", "k", "s8").validate().out == "s32"
    assert GemmProblem("k", "k", "tf32").validate().out == "f32"
    assert GemmProblem("k", "k", "s8", "bf16").validate().out == "bf16"  # converted, scaled
    with pytest.raises(GemmConfigError, match="accumulates in s32"):
        GemmProblem("k", "k", "s8", "e4m3").validate()
    with pytest.raises(GemmConfigError, match="out_dtype"):
        GemmProblem("k", "n", "f16", "s32").validate()
    assert operand_storage("tf32") == ("unsigned short", 2)
    assert set(TC_TYPES) == set(TYPES)


# ----------------------------------------------------------------------------- kernels
CONFIGS = {
    "ws": HOPPER_DEFAULT,
    "mono-cp": Sm90Config(),
    "mono-tma": Sm90Config(loader="tma"),
}


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_typed_kernels_generate_and_prove(dtype, kind):
    k = generate_sm90(CONFIGS[kind], GemmProblem("k", "k", dtype))
    src = k.source
    inst = kir.wgmma_ptx(CONFIGS[kind].bn, dtype)
    assert inst in src
    assert "typedef unsigned short lp_in_t;" in src
    bits, kk = gmma.WGMMA_TYPES[dtype][:2]
    # the descriptors proven in the type's own elements, one per instruction and slice
    typed = [r for r in k.proofs if f"wgmma k{kk} .{dtype} instructions" in r.statement]
    assert len(typed) == 2
    assert any(f"({bits}-bit elements)" in r.statement for r in k.proofs)
    if dtype in ("s8", "u8"):
        assert "int acc[" in src and "lp_wgmma(int* d" in src and re.search(r"%\d+, p;", src)
    else:
        assert "float acc[" in src and "p, 1, 1;" in src
    assert ", 1, 1, 0, 0;" not in src  # no transpose immediates outside f16/bf16


def test_typed_kernels_refuse_what_the_instruction_cannot_do():
    with pytest.raises(GemmConfigError, match="only K-major"):
        generate_sm90(HOPPER_DEFAULT, GemmProblem("k", "n", "e4m3"), memo=False)
    with pytest.raises(GemmConfigError, match="only K-major"):
        generate_sm90(HOPPER_DEFAULT, GemmProblem("m", "k", "tf32"), memo=False)
    # every block N the configs allow (multiples of 16) is an integer wgmma N too
    assert all(bn in gmma.WGMMA_TYPES["s8"][3] for bn in range(16, 257, 16))
    with pytest.raises(GemmConfigError, match="s32"):
        generate_epilogue(EpilogueConfig(HOPPER_DEFAULT, alpha_beta=True), GemmProblem("k", "k", "s8"))


def test_fp8_scale_through_the_fused_epilogue():
    k = generate_epilogue(
        EpilogueConfig(HOPPER_DEFAULT, alpha_beta=True), GemmProblem("k", "k", "e4m3", "bf16")
    )
    assert "float alpha" in k.source and kir.wgmma_ptx(256, "e4m3") in k.source


# ----------------------------------------------------------------------------- planted bugs
def _plan(dtype: str):
    cfg = HOPPER_DEFAULT
    a = OperandPlan("a", cfg.bm, cfg.bk, cfg.stages, True, cfg.threads, cfg.warpgroups, 64)
    log = ProofLog()
    smem = wgmma.plan_stage(cfg, a, log)
    desc = wgmma.plan_descriptors(a, smem, 64, cfg.warpgroups, log)
    return a, smem, desc


@pytest.mark.parametrize("dtype", ["e4m3", "s8", "tf32"])
def test_typed_descriptor_proof_passes_and_catches_a_wrong_k(dtype):
    a, smem, desc = _plan(dtype)
    log = ProofLog()
    wgmma.prove_typed_descriptors(a, smem, desc, dtype, 64, 2, log)
    assert len(log) >= 10
    wrong_k = 16 if dtype != "tf32" else 16  # the f16 k per instruction
    with pytest.raises(ProofFailedError, match="instructions per k-tile read"):
        wgmma.prove_typed_descriptors(a, smem, desc, dtype, 64, 2, ProofLog(), k_inst=wrong_k)


@pytest.mark.parametrize("dtype", ["e4m3", "s8"])
def test_typed_descriptor_proof_catches_a_wrong_stride(dtype):
    a, smem, (fields, s_step, k_step) = _plan(dtype)
    f = gmma.decode_descriptor(fields)
    # the stride byte offset of 8 rows halved (as if rows were 64 bytes: a 16-bit K of 32)
    bad = gmma.encode_descriptor(0, f["leading_byte_offset"], f["stride_byte_offset"] // 2, 0, f["swizzle"])
    with pytest.raises(ProofFailedError, match="descriptor addresses equal layout|reads element"):
        wgmma.prove_typed_descriptors(a, smem, (bad, s_step, k_step), dtype, 64, 2, ProofLog())
    # and a k step of 16 bytes (k16 of 8-bit elements) instead of 32
    with pytest.raises(ProofFailedError):
        wgmma.prove_typed_descriptors(a, smem, (fields, s_step, k_step // 2), dtype, 64, 2, ProofLog())


def test_typed_descriptor_proof_catches_a_wrong_element_width():
    # an e4m3 operand laid out as if 16-bit: the bytes of the 8-bit atom do not match
    a, smem, desc = _plan("e4m3")
    wrong = gmma.tile_to_shape(gmma.smem_atom("K", "SW64"), smem.shape)
    with pytest.raises(ProofFailedError):
        wgmma.prove_typed_descriptors(a, wrong, desc, "e4m3", 64, 2, ProofLog())


# ----------------------------------------------------------------------------- nvcc
NVCC = shutil.which("nvcc")


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("dtype", ["tf32", "e4m3", "s8"])
def test_typed_ws_kernels_compile_for_sm90a_without_spills(tmp_path, dtype):
    k = generate_sm90(HOPPER_DEFAULT, GemmProblem("k", "k", dtype))
    _nvcc_sm90a(k.source, tmp_path)


# ----------------------------------------------------------------------------- host rule
def test_typed_operand_accepts_k_major_and_names_the_fix():
    from layoutproof.gpu.errors import GemmInputError
    from layoutproof.gpu.host import typed

    assert typed.typed_operand("a", (100, 64), (64, 1), 1, 256, "s8") == (100, 64, 64)
    assert typed.typed_operand("b", (64, 30), (1, 64), 1, 0, "e4m3") == (30, 64, 64)
    assert typed.typed_operand("a", (8, 12), (48, 4), 4, 0, "tf32") == (8, 12, 48)
    with pytest.raises(GemmInputError, match="K-major operands only.*column-major"):
        typed.typed_operand("b", (64, 32), (32, 1), 1, 0, "s8")  # row-major B
    with pytest.raises(GemmInputError, match="K-major operands only.*row-major"):
        typed.typed_operand("a", (64, 32), (1, 64), 1, 0, "e4m3")  # column-major A
    with pytest.raises(GemmInputError, match="4-byte elements"):
        typed.typed_operand("a", (64, 32), (64, 2), 2, 0, "tf32")
    with pytest.raises(GemmInputError, match="multiple of 16 bytes"):
        typed.typed_operand("a", (64, 40), (40, 1), 1, 0, "e4m3")  # 40-byte rows
    with pytest.raises(GemmInputError, match="16-byte aligned"):
        typed.typed_operand("a", (64, 64), (64, 1), 1, 8, "s8")
    with pytest.raises(GemmInputError, match="not one of"):
        typed.typed_operand("a", (64, 64), (64, 1), 1, 0, "f8")


def test_decide_typed():
    from layoutproof.gpu.errors import GemmInputError
    from layoutproof.gpu.host import typed

    d = typed.decide_typed(8192, 8192, 8192, "tf32", None, 132)
    assert d.k_units == 16384 and not d.scaled and d.problem.out == "f32"
    assert d.config == typed.TF32_TILE  # where the f16 model picks 128 x 256 (measured)
    assert typed.decide_typed(8192, 8192, 8192, "e4m3", None, 132).config.bn == 256  # fp8 keeps it
    assert typed.decide_typed(64, 4096, 4096, "tf32", None, 132).config.bm == 64  # small M: the model's
    small = typed.decide_typed(512, 4096, 4096, "s8", None, 132)
    assert small.config.bm * small.config.bn <= 128 * 128  # more tiles than 128x256 gives
    with pytest.raises(GemmInputError, match="accumulates in s32"):
        typed.decide_typed(64, 64, 64, "s8", "tf32", 132)
    with pytest.raises(GemmInputError, match="warp-specialized"):
        typed.decide_typed(64, 64, 64, "e4m3", None, 132, Sm90Config())


# ----------------------------------------------------------------------------- mma.sync
def test_typed_mma_sync_atoms_read_the_16bit_registers():
    from layoutproof.gpu.isa import atoms
    from layoutproof.gpu.kernels.mma_sync import TYPED_ATOMS

    unit = atoms.MMA_ATOMS["SM80_16x8x16_F32F16F16F32_TN"]
    for dtype, name in TYPED_ATOMS.items():
        log = atoms.prove_same_register_bytes(unit, atoms.MMA_ATOMS[name])
        assert sum(1 for r in log if "every register byte" in r.statement) == 2, dtype
    # m16n8k8 f16 has half the A registers: refused, not silently accepted
    with pytest.raises(AtomMismatchError, match="registers"):
        atoms.prove_same_register_bytes(
            atoms.MMA_ATOMS["SM80_16x8x8_F32F16F16F32_TN"], atoms.MMA_ATOMS[TYPED_ATOMS["s8"]]
        )
    # a 16-bit unit atom whose A registers are permuted (a0,a1 <-> a2,a3) feeds wrong bytes
    bad = dataclasses.replace(unit, a_layout=Layout.parse("((4,8),(2,2,2)):((32,1),(16,128,8))"))
    with pytest.raises(AtomMismatchError):
        atoms.prove_same_register_bytes(bad, atoms.MMA_ATOMS[TYPED_ATOMS["e4m3"]])


def test_typed_mma_sync_kernel():
    from layoutproof.gpu.config import GemmConfig
    from layoutproof.gpu.kernels import mma_sync

    cfg = GemmConfig(bm=64, bn=64, bk=32, warps_m=2, warps_n=2, stages=3)
    k = mma_sync.generate(cfg, GemmProblem("k", "k", "s8"))
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in k.source and "int acc[" in k.source
    assert any("every register byte" in r.statement for r in k.proofs)
    with pytest.raises(GemmConfigError, match="K-major"):
        mma_sync.generate(cfg, GemmProblem("k", "n", "tf32"))
