"""The block-scaled fp8/int8 kernel with the fused epilogue: bias along N or M (f32, f16, bf16),
relu/silu/gelu, alpha/beta with a C input -- generated and proven on the rewritten IR (the
promotion proof, the ws protocol, the scale reads, the epilogue's data flow), planted bugs
caught, the host's checks with fake arrays, nvcc, and on a GPU the results against a float64
dequantize-and-multiply reference with the epilogue applied."""

import re
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from test_gpu_blockscale import _Arr, _FakeCupy, _hopper, params_by_name  # the fake CuPy; arguments by name
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import blockscale as hbs
from layoutproof.gpu.kernels import blockscale as bs
from layoutproof.gpu.kernels import epilogue as ep
from layoutproof.gpu.kernels.epilogue import EpilogueConfig
from layoutproof.gpu.kernels.wgmma_core import Sm90Config
from layoutproof.gpu.proof import kir

D = bs.BLOCKSCALE_DEFAULT
SMALL = Sm90Config(bm=64, bn=128, stages=8, loader="tma", schedule="ws")


def _flow(k):
    return [r.statement for r in k.proofs if r.statement.startswith("fused epilogue data flow")]


# ----------------------------------------------------------------------------- generation
@pytest.mark.parametrize(
    "dtype, out, cfg, form",
    [
        ("e4m3", "bf16", EpilogueConfig(D, "gelu", True), "lp_act_gelu(alpha * acc[i] + beta * Cin"),
        ("e5m2", "f32", EpilogueConfig(SMALL, "relu", bias_axis="m", bias_dtype="bf16"), "(acc[i] + bias[m0"),
        (
            "s8",
            "f16",
            EpilogueConfig(SMALL, "silu", bias_dtype="f16", alpha_only=True),
            "(alpha * acc[i] + bias[n0",
        ),
        ("u8", "bf16", EpilogueConfig(D, "none", True, "m"), "lp_act_none(alpha * acc[i] + beta * Cin"),
    ],
    ids=["e4m3-gelu-ab", "e5m2-relu-biasm-bf16", "s8-silu-f16-alpha", "u8-ab-biasm"],
)
def test_blockscale_epilogue_kernels_generate_and_prove(dtype, out, cfg, form):
    prob = GemmProblem("k", "k", dtype, out)
    k = bs.generate_blockscale(problem=prob, epilogue=cfg)
    plain = bs.generate_blockscale(cfg.base, prob)
    (flow,) = _flow(k)
    assert form in flow and f"lp_act_{cfg.activation}" in flow
    st = [r.statement for r in k.proofs]
    for want in ("promotion interval", "scale reads: offset", "K tails", "is in scale_b block"):
        assert any(want in s for s in st), want
    assert any("ws pipeline" in s or "protocol" in s for s in st)
    m = re.search(r"coverage: (\d+) of (\d+) memory accesses, (\d+) of (\d+) barrier", k.source)
    assert m and m.group(1) == m.group(2) and m.group(3) == m.group(4)
    # every access of the plain kernel, plus the epilogue's bias (and C input) loads
    m0 = re.search(r"coverage: (\d+) of", plain.source)
    assert int(m.group(1)) > int(m0.group(1))
    assert kir.wgmma_ptx(128, dtype) in k.source and "acc[i] +=" in k.source
    names = [v.name for _, v in k.ir.params]
    base_names = [v.name for _, v in plain.ir.params]
    assert names[: len(base_names)] == base_names  # the epilogue's parameters come after the scales'
    extra = names[len(base_names) :]
    if cfg.alpha_beta:
        assert extra == ["bias", "alpha", "beta", "Cin", "ldci"]
    else:
        assert extra == ["bias"] + (["alpha"] if cfg.alpha_only else [])
    # one alpha: fp8 keeps its per-tensor scale, the integer kernels have none
    assert ("scale" in base_names) == (dtype in ("e4m3", "e5m2"))
    assert k.name != plain.name and k.name.startswith("lp_gemm_sm90_bsep_")
    assert bs.generate_blockscale(problem=prob, epilogue=cfg) is k  # memoized


def test_every_variant_has_its_own_name():
    p = GemmProblem("k", "k", "e4m3", "bf16")
    cfgs = [
        None,
        EpilogueConfig(D),
        EpilogueConfig(D, "relu"),
        EpilogueConfig(D, "relu", bias_axis="m"),
        EpilogueConfig(D, "relu", bias_dtype="f16"),
        EpilogueConfig(D, "relu", True),
        EpilogueConfig(D, alpha_only=True),
    ]
    names = {bs.generate_blockscale(D, p, epilogue=c).name for c in cfgs}
    assert len(names) == len(cfgs)


def test_epilogue_refusals():
    p = GemmProblem("k", "k", "e4m3", "bf16")
    with pytest.raises(GemmConfigError, match="differ: pass one of them"):
        bs.generate_blockscale(SMALL, p, epilogue=EpilogueConfig(D, "relu"))
    with pytest.raises(GemmConfigError, match="must be an EpilogueConfig"):
        bs.generate_blockscale(D, p, epilogue="relu")
    with pytest.raises(GemmConfigError, match="activation='tanh'"):
        bs.generate_blockscale(problem=p, epilogue=EpilogueConfig(D, "tanh"))
    with pytest.raises(GemmConfigError, match="s32 bias goes with"):  # a scaled product is float
        bs.generate_blockscale(
            problem=GemmProblem("k", "k", "s8", "f32"), epilogue=EpilogueConfig(D, bias_dtype="s32")
        )
    with pytest.raises(GemmConfigError, match="scale block"):
        bs.generate_blockscale(
            problem=p, epilogue=EpilogueConfig(Sm90Config(bn=256, loader="tma", schedule="ws"))
        )


# ----------------------------------------------------------------------------- planted bugs
def test_planted_bias_from_the_wrong_column_is_caught(monkeypatch):
    # the kernel reads the bias of the pair's other register: a valid address, the wrong column
    monkeypatch.setattr(ep, "_code_register", lambda e: e ^ 1)
    with pytest.raises(ProofFailedError) as e:
        bs.generate_blockscale(
            SMALL, GemmProblem("k", "k", "e4m3"), epilogue=EpilogueConfig(SMALL, "relu"), memo=False
        )
    assert e.value.condition == "address equals its layout"


def test_planted_c_input_from_the_wrong_row_is_caught(monkeypatch):
    monkeypatch.setattr(ep, "_code_row_register", lambda e: e ^ 2)  # 8 rows off
    with pytest.raises(ProofFailedError) as e:
        bs.generate_blockscale(
            SMALL,
            GemmProblem("k", "k", "s8", "f32"),
            epilogue=EpilogueConfig(SMALL, "none", True),
            memo=False,
        )
    assert e.value.condition in ("address equals its layout", "global access in bounds")


def test_the_promotion_proof_runs_on_the_rewritten_tree(monkeypatch):
    # the promotion with the other row half's scale: caught with the epilogue fused too
    def promote(acc, part, sc, n):
        i = bs.ir_var("i")
        upd = kir.Assign(kir.Index(acc, (i,)), kir.Index(part, (i,)) * kir.Index(sc, (i & 1,)), op="+=")
        return kir.For(i, kir.Const(0), kir.Const(n), kir.block(upd), unroll=True)

    monkeypatch.setattr(bs, "_promote_ir", promote)
    with pytest.raises(ProofFailedError, match="promoted with the scale of row 8"):
        bs.generate_blockscale(
            SMALL, GemmProblem("k", "k", "e4m3"), epilogue=EpilogueConfig(SMALL, "gelu", True), memo=False
        )


def test_the_promotion_proof_reads_the_epilogue_kernel(monkeypatch):
    # a k-tile that promotes every 64 elements, with the epilogue: still refused
    with pytest.raises(ProofFailedError, match=r"promotion interval\(s\) \[64, 64\]"):
        bs.generate_blockscale(
            SMALL,
            GemmProblem("k", "k", "e4m3"),
            epilogue=EpilogueConfig(SMALL, "relu"),
            memo=False,
            _segments=2,
        )


# ----------------------------------------------------------------------------- nvcc
NVCC = shutil.which("nvcc")


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_blockscale_epilogue_kernel_compiles_for_sm90a_without_spills(tmp_path):
    k = bs.generate_blockscale(
        problem=GemmProblem("k", "k", "e4m3", "bf16"), epilogue=EpilogueConfig(D, "gelu", True, "m", "bf16")
    )
    _nvcc_sm90a(k.source, tmp_path)


# ----------------------------------------------------------------------------- the host's decisions
def test_decide_blockscale_epilogue_keeps_one_alpha():
    e8 = hbs.decide_blockscale(300, 520, 1040, "e4m3", "bf16", 132)
    s8 = hbs.decide_blockscale(300, 520, 1040, "s8", "f32", 132)
    e = hbs.decide_blockscale_epilogue(e8, alpha=0.5)
    assert e.config is None and e.scale == 0.5  # fp8: the kernel's own scale, no epilogue
    e = hbs.decide_blockscale_epilogue(e8, alpha=0.5, beta=2.0, has_c=True, activation="relu")
    assert e.config.alpha_beta and (e.scale, e.alpha, e.beta) == (0.5, 1.0, 2.0)
    e = hbs.decide_blockscale_epilogue(s8, alpha=0.5)
    assert e.config.alpha_only and (e.scale, e.alpha) == (1.0, 0.5)  # int8: the epilogue's alpha
    e = hbs.decide_blockscale_epilogue(s8, alpha=0.5, beta=1.0, has_c=True, bias_dtype="bf16", bias_along="m")
    assert e.config.alpha_beta and e.config.bias_axis == "m" and e.config.bias_dtype == "bf16"
    assert (e.scale, e.alpha, e.beta) == (1.0, 0.5, 1.0)
    assert hbs.decide_blockscale_epilogue(s8, activation="none").config is None
    with pytest.raises(GemmInputError, match=r"^gemm_fp8_blockscale: beta != 0 needs the C input c"):
        hbs.decide_blockscale_epilogue(e8, beta=1.0)
    with pytest.raises(GemmInputError, match="activation='tanh' is not one of .*relu"):
        hbs.decide_blockscale_epilogue(e8, activation="tanh")
    with pytest.raises(GemmInputError, match="bias_along='k': pass 'n'"):
        hbs.decide_blockscale_epilogue(e8, bias_along="k")
    with pytest.raises(
        GemmInputError, match="gemm_fp8_blockscale: .*float32, float16 or bfloat16 bias, got s32"
    ):
        hbs.decide_blockscale_epilogue(s8, bias_dtype="s32")


def test_check_c_input_names_what_to_pass():
    hbs.check_c_input((4, 8), (16, 2), 2, "torch.bfloat16", 4, 8, "bf16")
    hbs.check_c_input((4, 8), (64, 4), 4, "float32", 4, 8, "f32")  # padded rows
    with pytest.raises(
        GemmInputError, match="c is float16, the output is bf16: pass c of the output's dtype"
    ):
        hbs.check_c_input((4, 8), (16, 2), 2, "float16", 4, 8, "bf16")
    with pytest.raises(GemmInputError, match=r"c has shape \(8, 4\): pass an 4 x 8 array"):
        hbs.check_c_input((8, 4), (8, 2), 2, "float16", 4, 8, "f16")
    with pytest.raises(GemmInputError, match="row-major c"):
        hbs.check_c_input((4, 8), (2, 8), 2, "float16", 4, 8, "f16")  # column-major


# ----------------------------------------------------------------------------- launch (fake CuPy)
class _CpuTensor:
    """A torch-like tensor on the CPU."""

    is_cuda = False
    dtype = "torch.float32"
    shape = (520,)

    def data_ptr(self):
        return 0

    def element_size(self):
        return 4

    def stride(self):
        return (1,)


@pytest.fixture
def fake(monkeypatch):
    from layoutproof.gpu.host import cache, device, typed

    calls = []
    monkeypatch.setattr(device, "_CUPY", [_FakeCupy])
    monkeypatch.setattr(typed, "_ZERO", {})  # fake zero vectors never reach a real run
    monkeypatch.setattr(typed, "unit_tensor_map", lambda ptr, rows, kb, ld: ("tmap", ptr, rows, kb, ld))
    monkeypatch.setattr(cache, "compile_kernel", lambda k: lambda *a, **kw: calls.append((k, a, kw)))
    m, n, k = 300, 520, 1040
    a = _Arr((m, k), (k, 1), 1, "uint8", 0x10000)
    b = _Arr((k, n), (1, k), 1, "uint8", 0x200000)
    sa = _Arr((m, 9), (9, 1), 4, "float32", 0x400000)
    sb = _Arr((5, 9), (9, 1), 4, "float32", 0x500000)
    return SimpleNamespace(calls=calls, m=m, n=n, k=k, a=a, b=b, sa=sa, sb=sb)


def _launched(f):
    kern, (grid, block, args), kw = f.calls[-1]
    params = kern.ir.params
    assert len(args) == len(params)
    byname = params_by_name(params, args)
    return kern, byname


def test_launch_with_bias_alpha_beta_and_c(fake):
    f = fake
    bias = _Arr((f.m,), (1,), 2, "float16", 0x600000)
    c = _Arr((f.m, f.n), (f.n + 8, 1), 2, "uint16", 0x700000)  # bf16 from CuPy: raw uint16, padded rows
    hbs.gemm_fp8_blockscale(
        f.a,
        f.b,
        f.sa,
        f.sb,
        dtype="e4m3",
        alpha=0.5,
        bias=bias,
        bias_along="m",
        activation="gelu",
        beta=-2.0,
        c=c,
    )
    kern, by = _launched(f)
    e = hbs.last_blockscale_launch["epilogue"]
    assert e.alpha_beta and e.bias_axis == "m" and e.bias_dtype == "f16" and e.activation == "gelu"
    assert kern.name == hbs.last_blockscale_launch["kernel"] and "bsep" in kern.name
    assert by["scale"] == np.float32(0.5) and by["alpha"] == np.float32(1.0)  # one alpha: the scale
    assert by["beta"] == np.float32(-2.0) and by["Cin"][1] == 0x700000 and by["ldci"] == f.n + 8
    assert by["bias"][1] == 0x600000 and (by["KB"], by["NB"]) == (9, 5)


def test_launch_int8_alpha_goes_to_the_epilogue(fake):
    f = fake
    hbs.gemm_fp8_blockscale(f.a, f.b, f.sa, f.sb, dtype="u8", out_dtype="f32", alpha=0.25)
    kern, by = _launched(f)
    assert "scale" not in by and by["alpha"] == np.float32(0.25)
    assert by["bias"][1] == 0x900000  # no bias given: a kept zero vector of N floats
    assert hbs.last_blockscale_launch["epilogue"].alpha_only
    # a plain call launches the plain kernel
    hbs.gemm_fp8_blockscale(f.a, f.b, f.sa, f.sb, dtype="u8", out_dtype="f32")
    kern, by = _launched(f)
    assert "bias" not in by and hbs.last_blockscale_launch["epilogue"] is None


def test_launch_refuses_bad_epilogue_input(fake):
    f = fake
    run = hbs.gemm_fp8_blockscale
    args = (f.a, f.b, f.sa, f.sb)
    with pytest.raises(GemmInputError, match=r"gemm_fp8_blockscale: bias must be a contiguous vector of 520"):
        run(*args, dtype="e4m3", bias=_Arr((f.m,), (1,), 4, "float32", 0x600000))  # M values, along N
    with pytest.raises(GemmInputError, match=r"vector of 300 elements \(bias_along='m'"):
        run(*args, dtype="e4m3", bias=_Arr((f.n,), (1,), 4, "float32", 0x600000), bias_along="m")
    with pytest.raises(GemmInputError, match="contiguous vector"):
        run(*args, dtype="e4m3", bias=_Arr((f.n,), (2,), 4, "float32", 0x600000))  # strided
    with pytest.raises(GemmInputError, match="bias of dtype float64: pass float32, float16, bfloat16"):
        run(*args, dtype="e4m3", bias=_Arr((f.n,), (1,), 8, "float64", 0x600000))
    with pytest.raises(
        GemmInputError, match=r"\.e4m3 -> bf16 adds a float32, float16 or bfloat16 bias, got s32"
    ):
        run(*args, dtype="e4m3", bias=_Arr((f.n,), (1,), 4, "int32", 0x600000))
    with pytest.raises(GemmInputError, match="gemm_fp8_blockscale: a torch operand must be on a CUDA device"):
        run(*args, dtype="e4m3", bias=_CpuTensor())
    with pytest.raises(GemmInputError, match="beta != 0 needs the C input c"):
        run(*args, dtype="e4m3", beta=1.0)
    with pytest.raises(GemmInputError, match="activation='swish' is not one of"):
        run(*args, dtype="e4m3", activation="swish")
    with pytest.raises(GemmInputError, match="bias_along='x'"):
        run(*args, dtype="e4m3", bias=_Arr((f.n,), (1,), 4, "float32", 0x600000), bias_along="x")
    c_ok = (f.m, f.n), (f.n, 1)
    with pytest.raises(GemmInputError, match=r"c has shape \(520, 300\)"):
        run(*args, dtype="e4m3", beta=1.0, c=_Arr((f.n, f.m), (f.m, 1), 2, "uint16", 0x700000))
    with pytest.raises(GemmInputError, match="c is float32, the output is bf16"):
        run(*args, dtype="e4m3", beta=1.0, c=_Arr(*c_ok, 4, "float32", 0x700000))
    with pytest.raises(GemmInputError, match="c is float16, the output is bf16"):
        run(*args, dtype="e4m3", beta=1.0, c=_Arr(*c_ok, 2, "float16", 0x700000))
    with pytest.raises(GemmInputError, match="row-major c"):
        run(*args, dtype="e4m3", out_dtype="f32", beta=1.0, c=_Arr(c_ok[0], (1, f.m), 4, "float32", 0x700000))
    assert not f.calls  # nothing launched


# ----------------------------------------------------------------------------- on a GPU
def _reference(a8, b8, sa, sb, alpha=1.0, beta=0.0, c=None, bias=None, along="n", act=None):
    """float64: act(alpha * (A * sa) @ (B * sb) + beta * c + bias)."""
    import torch

    m, k = a8.shape
    n = b8.shape[1]
    kb = -(-k // 128)
    kk = torch.arange(k, device=a8.device) // 128
    nn = torch.arange(n, device=a8.device) // 128
    sa2 = (sa.reshape(1, 1) if sa.dim() == 1 else sa).double().expand(m, kb)
    sb2 = (sb.reshape(1, 1) if sb.dim() == 1 else sb).double().expand(-(-n // 128), kb)
    r = alpha * ((a8.double() * sa2[:, kk]) @ (b8.double() * sb2[nn][:, kk].T))
    if c is not None:
        r = r + beta * c.double()
    if bias is not None:
        bb = bias.double()
        r = r + (bb[:, None] if along == "m" else bb[None, :])
    if act == "relu":
        r = torch.relu(r)
    elif act == "silu":
        r = torch.nn.functional.silu(r)
    elif act == "gelu":
        r = torch.nn.functional.gelu(r)
    return r


_TOL = {"bf16": 1.5e-2, "f16": 4e-3, "f32": 2e-3}
_CASES = [
    # dtype, out, (m, n, k), options
    ("e4m3", "f32", (200, 300, 400), dict(bias="f32", act="relu")),
    ("e4m3", "bf16", (257, 513, 1040), dict(bias="bf16", along="m", act="gelu", alpha=0.5, beta=-1.5)),
    ("e5m2", "f16", (1, 130, 16), dict(bias="f16", act="silu", beta=2.0)),
    ("e4m3", "f32", (130, 260, 272), dict(alpha=2.0, beta=0.5, inplace=True)),
    ("s8", "f32", (200, 300, 400), dict(bias="f32", along="m", act="silu", alpha=0.25)),
    ("s8", "bf16", (64, 7168, 2112), dict(bias="bf16", act="gelu", alpha=0.5, beta=1.0)),
]


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with torch")
@pytest.mark.parametrize(
    "dtype, out, shape, opt", _CASES, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(_CASES)]
)
def test_blockscale_epilogue_matches_the_float64_reference(dtype, out, shape, opt):
    import torch

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    if dtype == "s8":
        a = torch.randint(-128, 128, (m, k), device="cuda", generator=g, dtype=torch.int8)
        bt = torch.randint(-128, 128, (n, k), device="cuda", generator=g, dtype=torch.int8)
        scale = 1e-3
    else:
        f8 = torch.float8_e4m3fn if dtype == "e4m3" else torch.float8_e5m2
        a = (torch.randn(m, k, device="cuda", generator=g) * 2).to(f8)
        bt = (torch.randn(n, k, device="cuda", generator=g) * 2).to(f8)
        scale = 0.25
    kb = -(-k // 128)
    sa = (torch.rand(kb, m, device="cuda", generator=g).T + 0.5) * scale  # MN-major
    sb = torch.rand(-(-n // 128), kb, device="cuda", generator=g) + 0.5
    tout = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[out]
    along = opt.get("along", "n")
    # the bias and C of the product's magnitude: one read at the wrong place is far off
    mag = min(_reference(a, bt.T, sa, sb).abs().max().item() / 2, 1e3 if out == "f16" else 1e4)
    bias = None
    if "bias" in opt:
        bt_ = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[opt["bias"]]
        bias = (torch.randn(m if along == "m" else n, device="cuda", generator=g) * mag).to(bt_)
    alpha, beta = opt.get("alpha", 1.0), opt.get("beta", 0.0)
    c = (torch.randn(m, n, device="cuda", generator=g) * mag).to(tout) if "beta" in opt else None
    ref = _reference(a, bt.T, sa, sb, alpha, beta, c, bias, along, opt.get("act"))
    out_t = c.clone() if opt.get("inplace") else torch.full((m, n), float("nan"), device="cuda", dtype=tout)
    got = hbs.gemm_fp8_blockscale(
        a,
        bt.T,
        sa,
        sb,
        out_dtype=out,
        alpha=alpha,
        beta=beta,
        c=out_t if opt.get("inplace") else c,
        bias=bias,
        bias_along=along,
        activation=opt.get("act"),
        out=out_t,
    )
    torch.cuda.synchronize()
    assert got is out_t and not torch.isnan(got).any()
    err = (got.double() - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
    assert err < _TOL[out], err
    assert hbs.last_blockscale_launch["epilogue"] is not None


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with torch")
def test_blockscale_epilogue_from_cupy():
    cp = pytest.importorskip("cupy")

    m, n, k = 100, 200, 256
    rng = np.random.default_rng(3)
    a = cp.asarray(rng.integers(-128, 128, (m, k), dtype=np.int8))
    bt = cp.asarray(rng.integers(-128, 128, (n, k), dtype=np.int8))
    sa = cp.asarray(rng.random((m, 2), dtype=np.float32) * 1e-2)
    sb = cp.asarray(rng.random((2, 2), dtype=np.float32) * 1e-2)
    bias = cp.asarray(rng.standard_normal(n).astype(np.float32))
    c = cp.asarray(rng.standard_normal((m, n)).astype(np.float32))
    got = hbs.gemm_fp8_blockscale(
        a, bt.T, sa, sb, out_dtype="f32", alpha=3.0, beta=0.5, c=c, bias=bias, activation="relu"
    )
    A = cp.asnumpy(a).astype(np.float64) * np.repeat(cp.asnumpy(sa), 128, axis=1)[:, :k]
    sbf = np.repeat(np.repeat(cp.asnumpy(sb), 128, axis=0)[:n], 128, axis=1)[:, :k]
    B = (cp.asnumpy(bt).astype(np.float64) * sbf).T
    ref = np.maximum(3.0 * (A @ B) + 0.5 * cp.asnumpy(c) + cp.asnumpy(bias), 0)
    err = np.abs(cp.asnumpy(got) - ref).max() / np.abs(ref).max()
    assert err < 1e-5, err
