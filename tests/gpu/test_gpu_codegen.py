"""The proven GEMM generator on the CPU: proofs, planted bugs caught, emitted source
compiled by nvcc for sm_90a with no spills, the CLI, and the GPU runtime's input errors.

GPU execution is tested on the GPU machine (bench/gemm.py); here a missing GPU is a skip.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from layoutproof import Layout, LayoutError
from layoutproof.gpu.analysis import BoxMismatch, banks
from layoutproof.gpu.config import GemmConfig, GemmProblem
from layoutproof.gpu.errors import (
    BankConflictError,
    GemmConfigError,
    LoweringError,
    ProofFailedError,
)
from layoutproof.gpu.kernels import mma_sync, toolkit, wgmma
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof import lower
from layoutproof.gpu.proof.record import ProofLog

PROBLEMS = [
    GemmProblem(a, b, d, o)
    for a, b, d, o in (
        ("k", "n", "f16", "f16"),
        ("k", "k", "f16", "f32"),
        ("m", "n", "bf16", "bf16"),
        ("m", "k", "bf16", "f32"),
    )
]
CONFIGS = [
    GemmConfig(),
    GemmConfig(bm=128, bn=256, bk=32, warps_m=2, warps_n=4, stages=3),
    GemmConfig(bm=64, bn=64, bk=64, warps_m=2, warps_n=2, stages=3),
    GemmConfig(bm=256, bn=128, bk=32, warps_m=4, warps_n=2, stages=3),
]


@pytest.mark.parametrize("prob", PROBLEMS, ids=lambda p: p.key())
def test_every_variant_generates_with_all_obligations(prob):
    k = mma_sync.generate(GemmConfig(), prob)
    kinds = {p.kind for p in k.proofs}
    assert {"atom", "banks", "bijective", "bounds", "equal", "fragment"} <= kinds
    # the header lists every obligation, one line each
    assert k.source.count("//   [") == len(k.proofs)
    assert all(p.method in ("exhaustive", "sympy", "z3") for p in k.proofs)
    assert sum(p.kind == "fragment" for p in k.proofs) == 2
    # K-major operands get ldmatrix, M/N-major ones ldmatrix.trans
    uses_trans = prob.a_major == "m" or prob.b_major == "n"
    assert ("lp_ldsm_x4_t(" in k.source.split("__global__")[1]) == uses_trans


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.key())
def test_configs_generate_and_swizzles_are_cute_canonical(cfg):
    k = mma_sync.generate(cfg, GemmProblem("k", "k"))
    # 64-byte rows take Sw<2,3,3>, 128-byte rows Sw<3,3,3> (CuTe's SM80 choices), found
    # here by the bank-conflict proofs rather than written down
    want = {32: (2, 3, 3), 64: (3, 3, 3)}[cfg.bk]
    assert k.swizzles == {"a": want, "b": want}


def test_every_emitted_index_function_is_the_proven_expression():
    k = mma_sync.generate(GemmConfig(), GemmProblem("m", "n"))
    funcs = re.findall(
        r"__device__ __forceinline__ (?:int|long long) (lp_\w+)\(([^)]*)\) "
        r"\{ return (.*); \}",
        k.source,
    )
    assert len(funcs) == 12
    stated = "\n".join(p.statement for p in k.proofs)
    for name, _params, _expr in funcs:
        assert name in stated, name


def test_swizzle_choice_is_the_smallest_conflict_free_one():
    a, _ = mma_sync._plans(GemmConfig(), GemmProblem("k", "n"))
    sw = mma_sync.choose_swizzle(a)
    assert (sw.bits, sw.base, sw.shift) == (2, 3, 3)
    rep = mma_sync.synthesize(a)  # the analysis API's synthesis, with its certificates
    assert rep.status == "proved" and rep.swizzle == sw and len(rep.reports) == 2
    assert all(r.status == "proved" for r in rep.reports)
    assert rep.candidates > 1 and rep.rejected.get("bank conflict", 0) >= 1
    # without it the ldmatrix reads conflict: the analysis refutes the plain buffer
    r = banks(a.stage_layout(), a.ldsm_access(), a.ldsm_instruction, element_bits=16)
    assert r.status == "refuted" and r.max_ways > 1
    with pytest.raises(BankConflictError):
        toolkit.prove_banks(a.stage_layout(), a.ldsm_access(), a.ldsm_instruction, "unswizzled", None)


def test_swizzle_choice_agrees_with_the_raw_address_model():
    """The access layouts the analysis reads give, on every candidate swizzle, the same
    verdicts as the raw byte addresses of the kernel's own maps (buffer_map) checked by the
    bank model of gpu/proof/banks.py: the layouts are the kernel's accesses."""
    from layoutproof.gpu.proof import banks as model

    def raw_ok(p, sw):
        p.swizzle = None if sw.is_identity() else sw
        cp = toolkit.eval_map(toolkit.buffer_map(p, p.copy_tv(), with_stage=False)) * 2
        ld = toolkit.eval_map(toolkit.buffer_map(p, p.ldsm_map(), with_stage=False)) * 2
        try:
            model.prove_conflict_free(cp.reshape(-1, 32), 16, what="cp")  # thread fastest
            model.prove_ldmatrix_conflict_free(ld.reshape(-1, 32), 4, what="ld")
            return True
        except BankConflictError:
            return False

    for cfg, prob in ((GemmConfig(), GemmProblem("k", "n")), (GemmConfig(), GemmProblem("m", "k"))):
        for p in mma_sync._plans(cfg, prob):
            for sw in mma_sync._candidates(p):
                data = toolkit.swizzled(None if sw.is_identity() else sw, p.stage_layout())
                got = all(
                    banks(data, acc, ins, element_bits=16).status == "proved"
                    for acc, ins in mma_sync._accesses(p)
                )
                assert got == raw_ok(p, sw), (p.name, p.kmajor, sw)


def test_explicit_swizzle_that_conflicts_is_refused():
    with pytest.raises(BankConflictError):
        mma_sync.generate(GemmConfig(swizzle=(1, 3, 3)), GemmProblem(), memo=False)


def test_a_planted_ldmatrix_bug_is_caught(monkeypatch):
    """Swap the two 8x8 k-halves of the A ldmatrix lane map: every map is still a fine
    layout, banks are still conflict-free, but the registers no longer hold what the mma
    expects -- the fragment-delivery proof names the lane and register."""
    orig = toolkit.OperandPlan.ldsm_map

    def wrong(self):
        L = orig(self)
        if self.name != "a":
            return L
        (ls, (s0, s1, s2)) = (L.shape[0], L.stride[0])
        return Layout((ls,) + L.shape[1:], ((s0, s2, s1),) + L.stride[1:])

    monkeypatch.setattr(toolkit.OperandPlan, "ldsm_map", wrong)
    with pytest.raises(ProofFailedError) as ei:
        mma_sync.generate(GemmConfig(), GemmProblem("k", "n"), memo=False)
    assert ei.value.condition == "ldmatrix delivers the mma fragment"
    assert ei.value.witness[1] in (1, 2)


def test_kernel_maps_are_tiled_mma_partitions():
    """The generator's A/B/C thread-value maps are proven equal, thread by thread, to
    TiledMMA's partition_A/B/C of the block tiles (with the contiguous-warp-tile permutation)."""
    for cfg in CONFIGS[:2]:
        k = mma_sync.generate(cfg, GemmProblem("m", "n"))
        assert any("partition_A/B/C" in p.statement for p in k.proofs)


def test_a_planted_epilogue_bug_is_caught(monkeypatch):
    orig = mma_sync._c_map

    def wrong(cfg):
        L = orig(cfg)
        return Layout(L.shape, ((L.stride[0][0], 1), (L.stride[1][0], 4)) + L.stride[2:])

    monkeypatch.setattr(mma_sync, "_c_map", wrong)
    with pytest.raises(LayoutError):
        mma_sync.generate(GemmConfig(), GemmProblem(), memo=False)


def test_a_tampered_expression_is_refuted_with_a_witness():
    a, _ = mma_sync._plans(GemmConfig(), GemmProblem("k", "n"))
    a.swizzle = mma_sync.choose_swizzle(a)
    full = toolkit.buffer_map(a, a.ldsm_map(), with_stage=False)
    low = lower.lower(full, ("lane", "w", "xi", "ki"), name="t")
    bad = low.c_expr.replace("& 24", "& 16")
    with pytest.raises(LoweringError) as ei:
        lower.check_c_expr(full, ("lane", "w", "xi", "ki"), bad)
    assert ei.value.witness is not None


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(bm=96), "bm=96"),
        (dict(bk=48), "bk=48"),
        (dict(stages=1), "stages=1"),
        (dict(bm=128, bn=256, bk=128, stages=4, warps_m=2, warps_n=4), "shared memory"),
        (dict(bm=256, bn=256, warps_m=4, warps_n=4, stages=3), "registers per thread"),
        (dict(warps_m=3), "powers of two"),
        (dict(swizzle="yes"), "swizzle"),
        (dict(bm=128, bn=128, warps_m=1, warps_n=1), "accumulators"),
    ],
)
def test_bad_configs_are_refused_by_name(kw, msg):
    with pytest.raises(GemmConfigError, match=msg):
        mma_sync.generate(GemmConfig(**kw), GemmProblem(), memo=False)


def test_bad_problems_are_refused():
    with pytest.raises(GemmConfigError, match="a_major"):
        GemmProblem(a_major="x").validate()
    with pytest.raises(GemmConfigError, match="dtype"):
        GemmProblem(dtype="f8").validate()


NVCC = shutil.which("nvcc")


def _nvcc_sm90a(source: str, tmp_path) -> str:
    """Compile ``source`` to an sm_90a cubin with ptxas -v; return ptxas's report after
    checking the compile succeeded with no spill stores or loads."""
    src = tmp_path / "k.cu"
    src.write_text(source)
    r = subprocess.run(
        [
            NVCC,
            "-gencode=arch=compute_90a,code=sm_90a",
            "-cubin",
            "-std=c++17",
            "-Xptxas",
            "-v",
            "-o",
            str(tmp_path / "k.cubin"),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    info = r.stderr + r.stdout
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", info)
    assert spills and all(int(s) == 0 and int(lo) == 0 for s, lo in spills), info
    return info


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    "cfg, prob",
    [
        (GemmConfig(), GemmProblem("k", "n", "f16", "f16")),
        (
            GemmConfig(bm=256, bn=128, bk=32, warps_m=4, warps_n=2, stages=3),
            GemmProblem("m", "k", "bf16", "f32"),
        ),
    ],
    ids=["default-128x256x32-f16", "256x128x32-bf16-f32out"],
)
def test_emitted_source_compiles_for_sm90a_without_spills(tmp_path, cfg, prob):
    k = mma_sync.generate(cfg, prob)
    info = _nvcc_sm90a(k.source, tmp_path)
    regs = re.search(r"Used (\d+) registers", info)
    assert regs and int(regs.group(1)) <= 255, info
    assert re.search(r"(\d+) bytes stack frame", info).group(1) == "0", info
    # the SASS holds tensor-core and ldmatrix instructions (cuobjdump when present)
    objdump = shutil.which("cuobjdump")
    if objdump:
        sass = subprocess.run(
            [objdump, "-sass", str(tmp_path / "k.cubin")], capture_output=True, text=True, timeout=120
        ).stdout
        assert "HMMA.16816.F32" in sass and "LDSM" in sass and "LDGSTS" in sass


def test_cli_emits_a_proven_kernel_without_gpu(tmp_path, capsys):
    from layoutproof.cli import main

    out = tmp_path / "kernel.cu"
    rc = main(
        [
            "gemm",
            "--m",
            "4096",
            "--n",
            "4096",
            "--k",
            "4096",
            "--dtype",
            "f16",
            "--emit",
            str(out),
            "--no-run",
        ]
    )
    assert rc == 0
    text = out.read_text()
    assert text.startswith("// layoutproof:") and "wgmma.mma_async.sync.aligned.m64n256k16" in text
    assert "proved" in capsys.readouterr().out
    rc = main(["gemm", "--path", "mma.sync", "--emit", str(out), "--no-run"])
    assert rc == 0 and "mma.sync.aligned.m16n8k16" in out.read_text()
    assert main(["gemm", "--path", "mma.sync", "--config", "96x128x32/2x2/4", "--no-run"]) == 2
    assert main(["gemm", "--sm90-config", "128x100/4", "--no-run"]) == 2


def test_gemm_without_gpu_or_with_bad_input_raises_typed_errors():
    from layoutproof.gpu.errors import GemmInputError, NoGPUError
    from layoutproof.gpu.host import runtime

    if not runtime.gpu_available():
        with pytest.raises(NoGPUError):
            runtime.gemm(np.zeros((2, 2)), np.zeros((2, 2)))
        return
    cupy = pytest.importorskip("cupy")  # only reached with a GPU, where CuPy is present

    with pytest.raises(GemmInputError, match="cupy.ndarray"):
        runtime.gemm(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(GemmInputError, match="inner dimensions"):
        runtime.gemm(cupy.zeros((2, 3), cupy.float16), cupy.zeros((2, 3), cupy.float16))
    with pytest.raises(GemmInputError, match="unsupported dtype"):
        runtime.gemm(cupy.zeros((2, 2), cupy.float64), cupy.zeros((2, 2), cupy.float64))


# ----------------------------------------------------------------------------- the wgmma kernel


@pytest.mark.parametrize("prob", PROBLEMS, ids=lambda p: p.key())
def test_sm90_every_variant_generates_with_descriptor_proofs(prob):
    k = wgmma.generate_sm90(Sm90Config(), prob)
    stated = "\n".join(p.statement for p in k.proofs)
    assert "wgmma desc" in stated and "descriptor start" in stated
    assert {"atom", "banks", "bijective", "bounds", "equal"} <= {p.kind for p in k.proofs}
    # the transpose flags follow the operands' major-ness
    flags = re.search(r"p, 1, 1, (\d), (\d);", k.source).groups()
    assert flags == (str(int(prob.a_major == "m")), str(int(prob.b_major == "n")))
    assert k.source.count("//   [") == len(k.proofs)


def test_sm90_a_wrong_descriptor_stride_is_caught(monkeypatch):
    """Shift the MN-major B stage layout's k-block stride: the copies still tile the
    buffer, but the descriptors the kernel would form no longer read it."""
    from layoutproof.gpu.isa import gmma

    orig = gmma.make_descriptor

    def wrong(smem, base, **kw):
        d = orig(smem, base, **kw)
        f = gmma.decode_descriptor(d)
        return gmma.encode_descriptor(
            f["start_address"], f["leading_byte_offset"], f["stride_byte_offset"] + 1024, swizzle=f["swizzle"]
        )

    monkeypatch.setattr(gmma, "make_descriptor", wrong)
    with pytest.raises(ProofFailedError) as ei:
        wgmma.generate_sm90(Sm90Config(), GemmProblem("k", "n"), memo=False)
    assert ei.value.witness is not None


def test_sm90_bad_configs_are_refused():
    with pytest.raises(GemmConfigError, match="bm"):
        wgmma.generate_sm90(Sm90Config(bm=96), memo=False)
    with pytest.raises(GemmConfigError, match="bk"):
        wgmma.generate_sm90(Sm90Config(bk=32), memo=False)
    with pytest.raises(GemmConfigError, match="bn='256' must be a positive int"):
        wgmma.generate_sm90(Sm90Config(bn="256"), memo=False)
    with pytest.raises(GemmConfigError, match="shared memory"):
        wgmma.generate_sm90(Sm90Config(bm=256, bn=256, stages=4), memo=False)


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_sm90_source_compiles_for_sm90a_without_spills(tmp_path):
    k = wgmma.generate_sm90(Sm90Config(), GemmProblem("m", "n", "bf16", "bf16"))
    _nvcc_sm90a(k.source, tmp_path)
    objdump = shutil.which("cuobjdump")
    if objdump:
        sass = subprocess.run(
            [objdump, "-sass", str(tmp_path / "k.cubin")], capture_output=True, text=True, timeout=120
        ).stdout
        assert "HGMMA" in sass and "LDGSTS" in sass


def test_planted_tma_box_and_swizzle_bugs_fail_the_generation(monkeypatch):
    """The TMA obligations go through the analysis API's pre-flight: a tensor map whose box
    is not the one the kernel's loads assume (32 rows, the loads still 8192 bytes apart), a
    stage layout with the wrong swizzle, and a plan that admits a leading dimension the
    driver refuses all fail the generation."""
    from layoutproof import Swizzle, composition

    cfg, prob = Sm90Config(loader="tma"), GemmProblem("k", "k")
    monkeypatch.setattr(wgmma, "TMA_BOX", 32)
    with pytest.raises(ProofFailedError) as ei:
        wgmma.generate_sm90(cfg, prob, memo=False)
    assert ei.value.condition == "the issued TMA boxes are the proved ones"
    monkeypatch.undo()
    orig = wgmma.tma_stage_layout
    for sw, why in ((Swizzle(3, 3, 4), None), (Swizzle(2, 3, 3), "inner box bytes <= swizzle span")):
        monkeypatch.setattr(
            wgmma, "tma_stage_layout", lambda x, kmajor, sw=sw: composition(sw, orig(x, kmajor).layout_b)
        )
        with pytest.raises(ProofFailedError) as ei:
            wgmma.generate_sm90(cfg, prob, memo=False)
        w = ei.value.witness
        assert isinstance(w, BoxMismatch) if why is None else why in str(w)
        monkeypatch.undo()
    loose = ("X <= 2**31 - 1", "K <= 2**31 - 1", "ld >= K")  # no ld % 8 == 0
    monkeypatch.setattr(wgmma, "tma_assumptions", lambda kmajor, batched=False: loose)
    with pytest.raises(ProofFailedError, match="globalStrides multiple of 16"):
        wgmma.generate_sm90(cfg, prob, memo=False)


def test_sm90_tma_kernel_proves_boxes_and_compiles(tmp_path):
    """The TMA loader: the 64x64 swizzled boxes write exactly the stage layout (both
    major-nesses), the descriptors read it, and the source compiles for sm_90a."""
    for prob in (GemmProblem("k", "k"), GemmProblem("m", "n", "bf16", "f32")):
        k = wgmma.generate_sm90(Sm90Config(loader="tma"), prob)
        stated = "\n".join(p.statement for p in k.proofs)
        assert "cuTensorMapEncodeTiled accepts the map and its boxes write exactly the tile" in stated
        assert "ld % 8 == 0" in stated and "wgmma desc" in stated
        assert "cp.async.bulk.tensor.2d" in k.source and "mbarrier.try_wait.parity" in k.source
    # a stage layout the boxes do not write is refused with the pre-flight's witness
    with pytest.raises(ProofFailedError) as ei:
        wgmma.prove_tma(
            toolkit.OperandPlan("b", 128, 64, 4, False, 256, 1, 128),
            wgmma.tma_stage_layout(128, True),
            ProofLog(),
        )
    assert isinstance(ei.value.witness, BoxMismatch)
    with pytest.raises(GemmConfigError, match="multiple of 64"):
        Sm90Config(bn=96, loader="tma").validate()
    if NVCC is not None:
        _nvcc_sm90a(k.source, tmp_path)


def test_host_tensor_maps_are_the_proved_ones(monkeypatch):
    """The host encodes the tensor map the generator proved (wgmma.tensor_map_args, symbolic
    in the operand's extents and leading dimension) with its values substituted: through a
    recording driver, the arguments are the literal ones of the 64x64-box, 128-byte-swizzle
    map, rank 2 and rank 3 (batched), for both major-nesses and both 16-bit types."""
    import sys
    import types

    from layoutproof.gpu.host import plan as plan_mod

    calls = []

    class Enum:
        def __init__(self, kind):
            self.kind = kind

        def __getattr__(self, name):
            return (self.kind, name)

    def encode(*args):
        calls.append(args)
        return 0, types.SimpleNamespace(opaque=[0] * 16)

    drv = types.SimpleNamespace(
        cuuint32_t=lambda v: ("u32", int(v)),
        cuuint64_t=lambda v: ("u64", int(v)),
        CUtensorMapDataType=Enum("dtype"),
        CUtensorMapInterleave=Enum("il"),
        CUtensorMapSwizzle=Enum("sw"),
        CUtensorMapL2promotion=Enum("l2"),
        CUtensorMapFloatOOBfill=Enum("oob"),
        CUresult=types.SimpleNamespace(CUDA_SUCCESS=0),
        cuTensorMapEncodeTiled=encode,
    )
    monkeypatch.setitem(sys.modules, "cuda", types.ModuleType("cuda"))
    monkeypatch.setitem(sys.modules, "cuda.bindings", types.SimpleNamespace(driver=drv))
    for major, dt, k, mn, ld, batch in (
        ("k", "f16", 1000, 300, 1008, None),
        ("m", "bf16", 64, 4097, 4104, None),
        ("k", "bf16", 72, 128, 72, (5, 72 * 130)),
        ("n", "f16", 8, 8, 8, (3, 64)),
    ):
        op = plan_mod._Operand.__new__(plan_mod._Operand)
        op.major, op.ld, op.maps = major, ld, {}
        op.prepare_tma(dt, k, mn, batch)
        op.tensor_map(0x7F0000001000)
        inner, outer = (k, mn) if major == "k" else (mn, k)
        u32 = lambda v: ("u32", v)  # noqa: E731
        u64 = lambda v: ("u64", v)  # noqa: E731
        dims, strides, box = [u64(inner), u64(outer)], [u64(2 * ld)], [u32(64), u32(64)]
        if batch is not None:
            dims, strides, box = dims + [u64(batch[0])], strides + [u64(2 * batch[1])], box + [u32(1)]
        want = (
            ("dtype", "CU_TENSOR_MAP_DATA_TYPE_" + ("FLOAT16" if dt == "f16" else "BFLOAT16")),
            u32(len(dims)),
            0x7F0000001000,
            dims,
            strides,
            box,
            [u32(1)] * len(dims),
            ("il", "CU_TENSOR_MAP_INTERLEAVE_NONE"),
            ("sw", "CU_TENSOR_MAP_SWIZZLE_128B"),
            ("l2", "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"),
            ("oob", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"),
        )
        assert calls[-1] == want, (major, dt, batch)
