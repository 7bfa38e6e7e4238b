"""The fused epilogue of the tf32, fp8 and int8 kernels: the one EpilogueConfig rewrite on
their IR (f32 arithmetic, or exact s32 for integers stored as s32), what a call may fuse
(decide_typed_epilogue), batches, planted bugs caught -- and on a GPU, the results."""

import shutil
from dataclasses import replace

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import typed
from layoutproof.gpu.kernels import epilogue as ep
from layoutproof.gpu.kernels.epilogue import EpilogueConfig, generate_epilogue
from layoutproof.gpu.kernels.wgmma import HOPPER_DEFAULT as H
from layoutproof.gpu.kernels.wgmma import Sm90Config, generate_sm90
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

SMALL = Sm90Config(bm=64, bn=64, stages=8, loader="tma", schedule="ws")


def _flow(k):
    return [r.statement for r in k.proofs if r.statement.startswith("fused epilogue data flow")]


# ----------------------------------------------------------------------------- generation
@pytest.mark.parametrize(
    "dtype, out, cfg, form",
    [
        ("tf32", "f32", EpilogueConfig(SMALL, "silu", alpha_only=True), "lp_act_silu(alpha * acc[i] + bias"),
        ("tf32", "bf16", EpilogueConfig(SMALL, "gelu", True, "m"), "lp_act_gelu(alpha * acc[i] + beta * Cin"),
        ("e4m3", "f16", EpilogueConfig(SMALL, "relu", bias_dtype="bf16"), "lp_act_relu(acc[i] + bias[n0"),
        ("s8", "s32", EpilogueConfig(SMALL, "relu", True, "m", "s32"), "max(alpha * acc[i] + beta * Cin"),
        ("u8", "s32", EpilogueConfig(SMALL, bias_dtype="s32", alpha_only=True), "alpha * acc[i] + bias[n0"),
        ("s8", "bf16", EpilogueConfig(SMALL, alpha_only=True), "lp_act_none(alpha * acc[i] + bias"),
    ],
)
def test_typed_epilogue_kernels_generate_and_prove(dtype, out, cfg, form):
    k = generate_epilogue(cfg, GemmProblem("k", "k", dtype, out))
    (flow,) = _flow(k)
    assert form in flow
    assert kir.wgmma_ptx(cfg.base.bn, dtype) in k.source
    s32 = out == "s32"
    assert ("in s32 (exact)" in flow) == s32
    assert ("int alpha" in k.source) == (s32 and ("alpha * acc" in form))
    if s32:  # no float function touches an exact value
        assert "lp_act_" not in k.source.split("lp_ep_w(wt, 2 * p)) =")[1].split(";")[0]
    if dtype in ("e4m3", "e5m2"):  # the per-tensor scale stays the kernel's own parameter
        assert "float scale" in k.source


def test_s32_epilogue_refuses_what_is_not_exact():
    p = GemmProblem("k", "k", "s8")
    with pytest.raises(GemmConfigError, match="bias is s32"):
        generate_epilogue(EpilogueConfig(SMALL, "relu"), p)
    with pytest.raises(GemmConfigError, match="not an integer function"):
        generate_epilogue(EpilogueConfig(SMALL, "gelu", bias_dtype="s32"), p)
    with pytest.raises(GemmConfigError, match="s32 bias goes with"):
        generate_epilogue(EpilogueConfig(SMALL, bias_dtype="s32"), GemmProblem("k", "k", "s8", "f32"))
    with pytest.raises(GemmConfigError, match="exclude each other"):
        EpilogueConfig(SMALL, alpha_beta=True, alpha_only=True).validate()


def test_f16_epilogue_names_unchanged_by_the_new_fields():
    # the f16 kernels' names hash the config's repr: the new field is not in it
    assert repr(EpilogueConfig(SMALL, "relu")) == repr(EpilogueConfig(SMALL, "relu", alpha_only=False))
    assert "alpha_only" not in repr(EpilogueConfig(SMALL, "relu"))
    assert EpilogueConfig(SMALL, alpha_only=True).key().endswith("_alpha")


# ----------------------------------------------------------------------------- planted bugs
def _env(cfg, prob):
    base = generate_sm90(cfg.base, prob, memo=False)
    return base, ep._declare_epilogue(base.ir, cfg, prob, ProofLog())


def _spliced(base, F, stmts):
    write = F.write

    def splice(node):
        if isinstance(node, kir.Block) and any(s is write for s in node.body):
            out = []
            for s in node.body:
                out.extend(stmts if s is write else [s])
            return kir.Block(tuple(out), node.bare)
        return None

    return kir.rewrite(base.ir.body, splice)


def test_data_flow_catches_a_swapped_alpha_and_a_float_activation_on_s32():
    cfg = EpilogueConfig(SMALL, "relu", True, "n", "s32")
    prob = GemmProblem("k", "k", "s8", "s32")
    base, F = _env(cfg, prob)
    good = ep._fused_write_ir(F)
    ep._prove_data_flow(F, _spliced(base, F, good), ProofLog())  # the real rewrite passes
    # beta in alpha's place: every value still reads the accumulator, scaled by the wrong one
    G = replace(F, ab={**F.ab, "alpha": F.ab["beta"], "beta": F.ab["alpha"]})
    bad = ep._fused_write_ir(G)
    with pytest.raises(ProofFailedError, match="written value is not"):
        ep._prove_data_flow(F, _spliced(base, F, bad), ProofLog())
    # an s32 value through the float relu (lp_act_relu rounds above 2^24): refused
    Ff = replace(F, ctype="float")
    bad = ep._fused_write_ir(Ff)
    with pytest.raises(ProofFailedError, match="written value is not"):
        ep._prove_data_flow(F, _spliced(base, F, bad), ProofLog())


def test_data_flow_catches_alpha_alone_dropped():
    cfg = EpilogueConfig(SMALL, alpha_only=True)
    prob = GemmProblem("k", "k", "s8", "bf16")
    base, F = _env(cfg, prob)
    bad = ep._fused_write_ir(replace(F, alpha=None))  # acc + bias: the scale lost
    with pytest.raises(ProofFailedError, match="written value is not"):
        ep._prove_data_flow(F, _spliced(base, F, bad), ProofLog())


# ----------------------------------------------------------------------------- the decision
def test_decide_typed_epilogue():
    d = typed.decide_typed_epilogue
    fp8 = d(H, GemmProblem("k", "k", "e4m3"), alpha=0.25)
    assert fp8.config is None and fp8.scale == 0.25  # the kernel's own scale
    fp8c = d(H, GemmProblem("k", "k", "e4m3"), alpha=0.25, beta=1.0, has_c=True)
    assert fp8c.config.alpha_beta and fp8c.scale == 0.25 and fp8c.alpha == 1.0
    t = d(H, GemmProblem("k", "k", "tf32"), alpha=2.0)
    assert t.config.alpha_only and t.alpha == 2.0 and t.config.bias_dtype == "f32"
    assert d(H, GemmProblem("k", "k", "tf32")).config is None
    s = d(H, GemmProblem("k", "k", "s8"), alpha=3, beta=-1, has_c=True, activation="relu")
    assert s.integer and (s.alpha, s.beta) == (3, -1) and isinstance(s.alpha, int)
    assert d(H, GemmProblem("k", "k", "u8"), bias_dtype="s32").config.bias_dtype == "s32"
    with pytest.raises(GemmInputError, match="integer in the int32 range"):
        d(H, GemmProblem("k", "k", "s8"), alpha=0.5)
    with pytest.raises(GemmInputError, match="int32 bias"):
        d(H, GemmProblem("k", "k", "s8"), bias_dtype="f32")
    with pytest.raises(GemmInputError, match="not an integer function"):
        d(H, GemmProblem("k", "k", "s8"), activation="silu")
    with pytest.raises(GemmInputError, match="float32, float16 or bfloat16 bias"):
        d(H, GemmProblem("k", "k", "tf32"), bias_dtype="s32")
    with pytest.raises(GemmInputError, match="needs the C input"):
        d(H, GemmProblem("k", "k", "tf32"), beta=1.0)
    with pytest.raises(GemmInputError, match="activation"):
        d(H, GemmProblem("k", "k", "tf32"), activation="tanh")


def test_decide_typed_launch_batches():
    dd, p, e = typed.decide_typed_launch(512, 512, 256, "e4m3", None, 132, batch="ab", count=8)
    assert p.batch == "ab" and e.config is None
    tiles = -(-512 // dd.config.bm) * -(-512 // dd.config.bn) * 8
    assert dd.grid[0] == min(tiles, 132)


def test_batched_operand_rules():
    op = typed._typed_operand3("a", (4, 100, 64), (6400, 64, 1), 1, 0, "s8")
    assert (op.rows, op.k, op.batch, op.bstride) == (100, 64, 4, 6400)
    assert typed._typed_operand3("a", (1, 100, 64), (6400, 64, 1), 1, 0, "s8").batch == 0  # shared
    with pytest.raises(GemmInputError, match="multiple of 16 bytes"):
        typed._typed_operand3("a", (4, 100, 64), (6408, 64, 1), 1, 0, "s8")


@pytest.mark.parametrize("dtype, out", [("s8", "s32"), ("e4m3", "bf16"), ("tf32", "f32")])
def test_batched_typed_kernels_generate_and_prove(dtype, out):
    """One launch over a strided batch: the batch coordinate and the rank-3 tensor maps'
    boxes are proven like the f16 batched kernels' (the batch schedule's cover, the
    per-batch C address)."""
    k = generate_sm90(H, GemmProblem("k", "k", dtype, out, batch="ab"))
    st = [r.statement for r in k.proofs.proofs]
    assert any("batch" in s_ for s_ in st), st
    assert kir.wgmma_ptx(H.bn, dtype) in k.source


# ----------------------------------------------------------------------------- nvcc
NVCC = shutil.which("nvcc")


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    "dtype, out, cfg, batch",
    [
        ("s8", "s32", EpilogueConfig(H, "relu", True, "m", "s32"), ""),
        ("s8", "bf16", EpilogueConfig(H, "gelu", alpha_only=True), ""),
        ("tf32", "f32", EpilogueConfig(H, "silu", True), ""),
        ("e4m3", "bf16", H, "ab"),  # batched, plain
        ("s8", "s32", EpilogueConfig(H, "relu", True, "m", "s32"), "ab"),  # batched, fused
    ],
)
def test_typed_epilogue_kernels_compile_without_spills(tmp_path, dtype, out, cfg, batch):
    prob = GemmProblem("k", "k", dtype, out, batch=batch)
    k = generate_sm90(cfg, prob) if cfg is H else generate_epilogue(cfg, prob)
    _nvcc_sm90a(k.source, tmp_path)


# ----------------------------------------------------------------------------- on a GPU
def _gpu():
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1 or not torch.cuda.is_available():
            pytest.skip("no GPU")
        if cp.cuda.Device().compute_capability != "90":
            pytest.skip("the typed wgmma kernels need sm_90")
    except Exception:
        pytest.skip("no GPU")
    return cp, torch


def test_gpu_int8_s32_epilogue_exact():
    cp, torch = _gpu()
    g = torch.Generator(device="cuda").manual_seed(1)
    m, n, k = 200, 136, 160
    a = torch.randint(-128, 128, (m, k), generator=g, device="cuda", dtype=torch.int8)
    bt = torch.randint(-128, 128, (n, k), generator=g, device="cuda", dtype=torch.int8)
    bias = torch.randint(-1000, 1000, (m,), generator=g, device="cuda", dtype=torch.int32)
    c = torch.randint(-1000, 1000, (m, n), generator=g, device="cuda", dtype=torch.int32)
    got = typed.typed_gemm(
        a, bt.t(), dtype="s8", scale=3, beta=-2, c=c, bias=bias, bias_along="m", activation="relu"
    )
    a, bt, bias, c = (x.cpu().long() for x in (a, bt, bias, c))  # CUDA has no int64 matmul
    ref = 3 * (a @ bt.t()) - 2 * c + bias[:, None]
    assert got.dtype == torch.int32 and torch.equal(got.cpu().long(), ref.clamp(min=0))
    with pytest.raises(GemmInputError, match="integer"):
        typed.typed_gemm(a.cuda().to(torch.int8), bt.cuda().to(torch.int8).t(), dtype="s8", scale=0.5)


def test_gpu_tf32_and_int8_scaled_epilogue():
    cp, torch = _gpu()
    g = torch.Generator(device="cuda").manual_seed(2)
    m, n, k = 130, 72, 96
    a = torch.randint(-64, 64, (m, k), generator=g, device="cuda").float() / 16
    bt = torch.randint(-64, 64, (n, k), generator=g, device="cuda").float() / 16
    bias = torch.randint(-8, 8, (n,), generator=g, device="cuda").float()
    got = typed.typed_gemm(a, bt.t(), dtype="tf32", scale=0.5, bias=bias, activation="relu")
    ref = torch.relu(0.5 * (a.double() @ bt.double().t()) + bias.double())
    assert torch.equal(got.double(), ref)  # products of 1/16 multiples sum exactly in f32
    ai = torch.randint(-128, 128, (m, k), generator=g, device="cuda", dtype=torch.int8)
    bi = torch.randint(-128, 128, (n, k), generator=g, device="cuda", dtype=torch.int8)
    got = typed.typed_gemm(ai, bi.t(), dtype="s8", out_dtype="f32", scale=0.25)
    assert torch.equal(got.double(), 0.25 * (ai.double() @ bi.double().t()))


def test_gpu_batched_typed():
    cp, torch = _gpu()
    g = torch.Generator(device="cuda").manual_seed(3)
    nb, m, n, k = 3, 100, 72, 64
    a = torch.randint(-128, 128, (nb, m, k), generator=g, device="cuda", dtype=torch.int8)
    bt = torch.randint(-128, 128, (nb, n, k), generator=g, device="cuda", dtype=torch.int8)
    got = typed.typed_gemm(a, bt.transpose(1, 2), dtype="s8")
    a64, b64 = a.cpu().long(), bt.cpu().long()  # CUDA has no int64 matmul
    assert got.shape == (nb, m, n) and torch.equal(got.cpu().long(), a64 @ b64.transpose(1, 2))
    shared = typed.typed_gemm(a, bt[0].t(), dtype="s8")  # B shared by every batch
    np.testing.assert_array_equal(shared.cpu().numpy(), (a64 @ b64[0].t()).numpy())
