"""The fp8 GEMM with DeepGEMM's block scales: the kernel generated and proven (scale layouts,
promotion interval, K tails, the scale reads as IR accesses), planted bugs caught, the
configurations refused, the host's checks of scales and operands, nvcc, and on a GPU the
result against a float64 dequantize-and-multiply reference."""

import re
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import blockscale as hbs
from layoutproof.gpu.kernels import blockscale as bs
from layoutproof.gpu.kernels.wgmma_core import Sm90Config
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

SMALL = Sm90Config(bm=64, bn=128, stages=8, loader="tma", schedule="ws")


# ----------------------------------------------------------------------------- generation
@pytest.mark.parametrize("cfg", [bs.BLOCKSCALE_DEFAULT, SMALL], ids=["128x128", "64x128"])
def test_blockscale_kernel_generates_with_every_proof(cfg):
    k = bs.generate_blockscale(cfg, GemmProblem("k", "k", "e4m3", "bf16"))
    st = [r.statement for r in k.proofs]
    for want in (
        "promotion interval",
        "scale reads: offset row * s_rows + kb * s_k",
        "K tails",
        "is in scale_b block",
        "scale_a read (the thread's C row h, k block kt)",
        "scale_b read (n block of the tile, k block kt)",
        "wgmma k32 .e4m3 instructions",
    ):
        assert any(want in s for s in st), want
    src = k.source
    m = re.search(r"coverage: (\d+) of (\d+) memory accesses, (\d+) of (\d+) barrier", src)
    assert m and m.group(1) == m.group(2) and m.group(3) == m.group(4)
    assert "acc[i] += part[i] * sc[(i >> 1) & 1];" in src
    assert src.count("wgmma.wait_group.sync.aligned 0;") == 1
    assert kir.wgmma_ptx(128, "e4m3") in src
    for p in ("const float* __restrict__ SA", "long long sa_m", "int KB", "int NB", "float scale"):
        assert p in src


def test_e5m2_and_f32_output():
    k = bs.generate_blockscale(SMALL, GemmProblem("k", "k", "e5m2", "f32"))
    assert kir.wgmma_ptx(128, "e5m2") in k.source and "typedef float lp_out_t;" in k.source


@pytest.mark.parametrize("dtype", ["s8", "u8"])
def test_int8_with_scales_promotes_exact_s32_partials(dtype):
    k = bs.generate_blockscale(SMALL, GemmProblem("k", "k", dtype, "bf16"))
    src = k.source
    assert "int part[64];" in src and "acc[i] += (float)part[i] * sc[(i >> 1) & 1];" in src
    assert "float acc[64];" in src and "float scale" not in src  # no alpha: fold it into a scale
    assert kir.wgmma_ptx(128, dtype) in src
    assert any("promotion interval" in r.statement for r in k.proofs)
    with pytest.raises(GemmConfigError, match="stored as one of"):
        bs.check_blockscale(SMALL, GemmProblem("k", "k", dtype))  # s32 out: the typed kernel's


def test_configurations_refused_by_name():
    e4 = GemmProblem("k", "k", "e4m3")
    with pytest.raises(GemmConfigError, match="scale block"):
        bs.check_blockscale(Sm90Config(bn=256, loader="tma", schedule="ws"), e4)
    with pytest.raises(GemmConfigError, match="warp-specialized"):
        bs.check_blockscale(Sm90Config(bn=128), e4)
    with pytest.raises(GemmConfigError, match="8-bit operands"):
        bs.check_blockscale(bs.BLOCKSCALE_DEFAULT, GemmProblem("k", "k", "tf32"))
    with pytest.raises(GemmConfigError, match="only K-major"):
        bs.check_blockscale(bs.BLOCKSCALE_DEFAULT, GemmProblem("k", "n", "e4m3"))


# ----------------------------------------------------------------------------- the proofs alone
def test_scale_layout_conventions():
    assert bs.SCALE_A.shape(300, 1000) == (300, 8) and bs.SCALE_B.shape(300, 1000) == (3, 8)
    assert bs.SCALE_B.block_of(255, 128) == (1, 1) and bs.SCALE_A.block_of(255, 127) == (255, 0)
    assert bs.SCALE_A.layout(4, 256, (1, 4))(3, 1) == 7  # MN-major: (m, kb) at m + 4 kb
    log = ProofLog()
    bs.prove_scale_layouts(log)
    assert log.proofs[-1].cases > 1000


def test_scale_columns_need_bn_dividing_the_block():
    bs.prove_scale_columns(bs.BLOCKSCALE_DEFAULT, ProofLog())
    with pytest.raises(ProofFailedError, match="two scale_b blocks"):
        bs.prove_scale_columns(Sm90Config(bn=192, loader="tma", schedule="ws"), ProofLog())


def test_k_tail_proof_and_a_wrong_k_tile():
    log = ProofLog()
    bs.prove_k_tail(64, log)
    assert "K tails" in log.proofs[-1].statement
    with pytest.raises(ProofFailedError, match="K = 80: 2 k-tiles of 64 elements, 1 scale blocks"):
        bs.prove_k_tail(32, ProofLog())  # 64-element k-tiles: two per scale block


# ----------------------------------------------------------------------------- planted bugs
def _gen(**kw):
    return bs.generate_blockscale(SMALL, GemmProblem("k", "k", "e4m3"), memo=False, **kw)


def test_planted_promotion_every_64_is_caught():
    with pytest.raises(ProofFailedError, match=r"promotion interval\(s\) \[64, 64\]"):
        _gen(_segments=2)


@pytest.mark.parametrize(
    "kb_of", [lambda v: v + 1, lambda v: v * 0, lambda v: v / 2], ids=["next", "first", "half"]
)
def test_planted_scale_at_the_wrong_k_block_is_caught(kb_of):
    with pytest.raises(ProofFailedError, match="scale_[ab] read"):
        _gen(_kb_of=kb_of)


def test_planted_scale_of_the_wrong_row_is_caught(monkeypatch):
    def promote(acc, part, sc, n):
        i = bs.ir_var("i")
        upd = kir.Assign(kir.Index(acc, (i,)), kir.Index(part, (i,)) * kir.Index(sc, (i & 1,)), op="+=")
        return kir.For(i, kir.Const(0), kir.Const(n), kir.block(upd), unroll=True)

    monkeypatch.setattr(bs, "_promote_ir", promote)
    with pytest.raises(ProofFailedError, match="promoted with the scale of row 8, its C row is 0"):
        _gen()


def test_planted_promotion_with_stale_scales_is_caught(monkeypatch):
    # the scale loads dropped from the k-tile: sc would hold an earlier block's (or no) scales
    monkeypatch.setattr(bs, "_scale_loads_ir", lambda *a, **kw: [])
    with pytest.raises(ProofFailedError, match=r"promoted with sc\[0\] before this k-tile's scales"):
        _gen()


def test_planted_unzeroed_partial_and_early_promotion_are_caught(monkeypatch):
    monkeypatch.setattr(bs, "_zero_ir", lambda v, n: kir.Comment("no reset"))
    with pytest.raises(ProofFailedError, match="not zeroed"):
        _gen()
    monkeypatch.undo()
    orig = bs._batch_ir

    def early(*a, **kw):
        return orig(*a, **kw)[:-1] + [kir.WgmmaWait(1)]

    monkeypatch.setattr(bs, "_batch_ir", early)
    with pytest.raises(ProofFailedError, match="before wgmma.wait_group 0"):
        _gen()


# ----------------------------------------------------------------------------- host checks
def test_scale_strides_accepts_the_layouts_and_names_the_fix():
    A, B = bs.SCALE_A, bs.SCALE_B
    assert hbs.scale_strides(A, 300, 1000, (300, 8), (8, 1), "float32") == (8, 1)  # row-major
    assert hbs.scale_strides(A, 300, 1000, (300, 8), (1, 304), "float32") == (1, 304)  # MN-major padded
    assert hbs.scale_strides(A, 300, 1000, (300, 1), (1, 1), "float32") == (1, 0)  # per row
    assert hbs.scale_strides(B, 300, 1000, (1,), (1,), "float32") == (0, 0)  # per tensor
    assert hbs.scale_strides(B, 300, 1000, (3, 8), (0, 0), "float32") == (0, 0)  # expanded
    with pytest.raises(GemmInputError, match=r"scale_a is missing.*\(300, 8\) = \(M, ceil\(K / 128\)\)"):
        hbs.scale_strides(A, 300, 1000, None, (), "")
    with pytest.raises(GemmInputError, match=r"must be float32.*scale_b.float\(\)"):
        hbs.scale_strides(B, 300, 1000, (3, 8), (8, 1), "bfloat16")
    with pytest.raises(GemmInputError, match=r"shape \(2, 8\); it must be \(3, 8\) = \(ceil\(N / 128\)"):
        hbs.scale_strides(B, 300, 1000, (2, 8), (8, 1), "float32")
    with pytest.raises(GemmInputError, match=r"\(300, 8\)"):  # K blocks of 64 instead of 128
        hbs.scale_strides(A, 300, 1000, (300, 16), (16, 1), "float32")
    with pytest.raises(GemmInputError, match="negative stride"):
        hbs.scale_strides(A, 300, 1000, (300, 8), (-8, 1), "float32")
    with pytest.raises(GemmInputError, match="2-D"):
        hbs.scale_strides(A, 300, 1000, (300, 8, 1), (8, 1, 1), "float32")


def test_operand_kind_and_decision():
    assert hbs.operand_kind("torch.float8_e5m2", None) == "e5m2"
    assert hbs.operand_kind("torch.int8", None) == "s8" and hbs.operand_kind("uint8", "u8") == "u8"
    with pytest.raises(GemmInputError, match="int8 but dtype='e4m3'"):
        hbs.operand_kind("int8", "e4m3")
    with pytest.raises(GemmInputError, match="pass dtype='e4m3' or 'e5m2' .* or 'u8'"):
        hbs.operand_kind("uint8", None)
    with pytest.raises(GemmInputError, match="quantize them first"):
        hbs.operand_kind("float16", None)
    with pytest.raises(GemmInputError, match="but dtype='e5m2'"):
        hbs.operand_kind("float8_e4m3fn", "e5m2")
    d = hbs.decide_blockscale(64, 7168, 2112, "e4m3", None, 132)
    assert (d.config.bm, d.config.bn, d.kb, d.nb, d.k_units) == (64, 128, 17, 56, 1056)
    assert d.problem.out == "bf16" and d.grid[0] <= 132
    with pytest.raises(GemmInputError, match="multiple of 16"):
        hbs.decide_blockscale(64, 256, 200, "e4m3", None, 132)
    with pytest.raises(GemmInputError, match="scale block"):
        hbs.decide_blockscale(
            256, 256, 256, "e4m3", None, 132, Sm90Config(bn=256, loader="tma", schedule="ws")
        )
    with pytest.raises(GemmInputError, match="out_dtype"):
        hbs.decide_blockscale(256, 256, 256, "e4m3", "s32", 132)
    with pytest.raises(GemmInputError, match="out_dtype='s32'"):
        hbs.decide_blockscale(256, 256, 256, "s8", "s32", 132)
    assert hbs.decide_blockscale(256, 256, 256, "s8", None, 132).problem.out == "bf16"
    with pytest.raises(GemmInputError, match="Sm90Config"):
        hbs.decide_blockscale(256, 256, 256, "s8", None, 132, config="128x128")


# ----------------------------------------------------------------------------- nvcc
NVCC = shutil.which("nvcc")


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("cfg", [bs.BLOCKSCALE_DEFAULT, SMALL], ids=["128x128", "64x128"])
def test_blockscale_kernel_compiles_for_sm90a_without_spills(tmp_path, cfg):
    k = bs.generate_blockscale(cfg, GemmProblem("k", "k", "e4m3"))
    _nvcc_sm90a(k.source, tmp_path)


# ----------------------------------------------------------------------------- on a GPU
def _hopper() -> bool:
    try:
        import torch

        return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
    except Exception:
        return False


def reference(a8, b8, sa, sb, alpha=1.0):
    """float64 dequantize-and-multiply: A[m,k] sa[m,k/128], B[k,n] sb[n/128,k/128]."""
    import torch

    m, k = a8.shape
    n = b8.shape[1]
    kk = torch.arange(k, device=a8.device)
    nn = torch.arange(n, device=a8.device)
    sa = (
        sa.double().expand(m, -(-k // 128))
        if sa.dim() == 2
        else sa.double().reshape(1, 1).expand(m, -(-k // 128))
    )
    sb = (
        sb.double().expand(-(-n // 128), -(-k // 128))
        if sb.dim() == 2
        else sb.double().reshape(1, 1).expand(-(-n // 128), -(-k // 128))
    )
    A = a8.double() * sa[:, kk // 128]
    B = b8.double() * sb[nn // 128][:, kk // 128].T
    return alpha * (A @ B)


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with torch")
@pytest.mark.parametrize("shape", [(128, 256, 256), (200, 300, 400), (64, 7168, 2112), (1, 128, 16)])
def test_blockscale_gemm_matches_the_float64_reference(shape):
    import torch

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
    bt = torch.randn(n, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
    kb = -(-k // 128)
    sa = torch.rand(kb, m, device="cuda", generator=g).T + 0.5  # MN-major, as DeepGEMM stores it
    sb = torch.rand(-(-n // 128), kb, device="cuda", generator=g) + 0.5
    c = hbs.gemm_fp8_blockscale(a, bt.T, sa, sb, out_dtype="f32")
    ref = reference(a, bt.T, sa, sb)
    err = (c.double() - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
    assert err < 2e-3, err  # the fp8 wgmma accumulates a block with reduced precision
    # per-tensor scales from device memory
    s1 = torch.tensor([0.25], device="cuda")
    c1 = hbs.gemm_fp8_blockscale(a, bt.T, s1, s1, out_dtype="f32")
    r1 = reference(a, bt.T, s1, s1)
    assert (c1.double() - r1).abs().max().item() <= 2e-3 * max(r1.abs().max().item(), 1e-30)


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with torch")
def test_int8_blockscale_gemm_matches_the_float64_reference():
    import torch

    m, n, k = 200, 300, 400
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randint(-128, 128, (m, k), device="cuda", generator=g, dtype=torch.int8)
    bt = torch.randint(-128, 128, (n, k), device="cuda", generator=g, dtype=torch.int8)
    sa = torch.rand(m, 1, device="cuda", generator=g) * 1e-2  # per token
    sb = torch.rand(-(-n // 128), -(-k // 128), device="cuda", generator=g) * 1e-2
    c = hbs.gemm_fp8_blockscale(a, bt.T, sa, sb, out_dtype="f32")
    ref = reference(a, bt.T, sa.expand(m, -(-k // 128)), sb)
    # s32 partial sums are exact: only the f32 promotion rounds
    assert (c.double() - ref).abs().max().item() <= 1e-5 * ref.abs().max().item()
    # int8 has no per-tensor scale parameter: alpha goes through the epilogue (alpha_only)
    c2 = hbs.gemm_fp8_blockscale(a, bt.T, sa, sb, alpha=2.0, out_dtype="f32")
    assert hbs.last_blockscale_launch["epilogue"].alpha_only
    assert (c2.double() - 2 * ref).abs().max().item() <= 2e-5 * ref.abs().max().item()


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with torch")
def test_blockscale_gemm_bad_input_on_the_device():
    import torch

    a = torch.zeros(128, 256, device="cuda").to(torch.float8_e4m3fn)
    b = torch.zeros(256, 128, device="cuda").to(torch.float8_e4m3fn)  # row-major B: not K-major
    sa = torch.ones(128, 2, device="cuda")
    sb = torch.ones(1, 2, device="cuda")
    with pytest.raises(GemmInputError, match="K-major operands only"):
        hbs.gemm_fp8_blockscale(a, b, sa, sb)
    bt = b.T.contiguous().T
    with pytest.raises(GemmInputError, match="scale_b is missing"):
        hbs.gemm_fp8_blockscale(a, bt, sa, None)
    with pytest.raises(GemmInputError, match="float32"):
        hbs.gemm_fp8_blockscale(a, bt, sa.half(), sb)
    np.testing.assert_equal(hbs.gemm_fp8_blockscale(a, bt, sa, sb).float().cpu().numpy(), 0)


# ----------------------------------------------------------------------------- launch (fake CuPy)
class _Arr:
    """A CuPy-like array: shape, strides (given in elements, kept in bytes), itemsize, dtype, pointer."""

    def __init__(self, shape, strides, itemsize, dtype, ptr):
        self.shape, self.itemsize, self.dtype = tuple(shape), itemsize, dtype
        self.strides = tuple(s * itemsize for s in strides)
        self.data = SimpleNamespace(ptr=ptr)
        self.ndim = len(shape)


class _FakeCupy:
    class cuda:
        class Device:
            attributes = {"MultiProcessorCount": 132}

        class runtime:
            @staticmethod
            def getDevice():
                return 0

        @staticmethod
        def UnownedMemory(ptr, size, owner):
            return ("mem", ptr, size)

        @staticmethod
        def MemoryPointer(mem, off):
            return (mem, off)

    @staticmethod
    def ndarray(shape, dtype, memptr):
        return ("ptr", memptr[0][1], dtype, shape)

    @staticmethod
    def empty(shape, dtype):
        return _Arr(shape, (shape[1], 1), 2 if dtype in ("uint16", "float16") else 4, dtype, 1 << 30)

    @staticmethod
    def zeros(n, dtype):
        return _Arr((n,), (1,), 4, dtype, 0x900000)


def params_by_name(params, args):
    """The launch's arguments by parameter name, each checked against its parameter's C
    type (tensor maps, pointers, int, long long, float)."""
    byname = {}
    for (ctype, var), arg in zip(params, args):
        if "lp_tmap_t" in ctype:
            assert arg[0] == "tmap"
        elif ctype.rstrip().endswith("*") or "* __restrict__" in ctype:
            assert arg[0] == "ptr", (var.name, arg)
        elif ctype == "int":
            assert isinstance(arg, np.int32), var.name
        elif ctype == "long long":
            assert isinstance(arg, np.int64), var.name
        elif ctype == "float":
            assert isinstance(arg, np.float32), var.name
        else:
            raise AssertionError(ctype)
        byname[var.name] = arg
    return byname


def test_launch_arguments_match_the_kernel_parameters(monkeypatch):
    """The host's arguments, in the kernel's parameter order, with the parameter's C type:
    tensor maps, pointers (C, then the scales at their own addresses), 32/64-bit integers
    and the f32 alpha; the values the claims assume (K in 16-bit units, the scale strides,
    KB and NB)."""
    from layoutproof.gpu.host import cache, device, typed

    calls = []
    monkeypatch.setattr(device, "_CUPY", [_FakeCupy])
    monkeypatch.setattr(typed, "unit_tensor_map", lambda ptr, rows, kb, ld: ("tmap", ptr, rows, kb, ld))
    monkeypatch.setattr(cache, "compile_kernel", lambda k: lambda *a, **kw: calls.append((k, a, kw)))
    m, n, k = 300, 520, 1040
    a = _Arr((m, k), (k, 1), 1, "uint8", 0x10000)
    b = _Arr((k, n), (1, k), 1, "uint8", 0x200000)  # K x N with K contiguous
    sa = _Arr((m, 9), (1, 304), 4, "float32", 0x400000)  # MN-major, rows padded to 304
    sb = _Arr((1, 1), (1, 1), 4, "float32", 0x500000)  # per-tensor, broadcast
    out = hbs.gemm_fp8_blockscale(a, b, sa, sb, dtype="e4m3", alpha=0.5)
    (kern, (grid, block, args), kw) = calls[0]
    params = kern.ir.params
    assert len(args) == len(params) and block == (kern.threads, 1, 1) and kw["shared_mem"] == kern.smem_bytes
    byname = params_by_name(params, args)
    assert byname["tmA"][1:] == (0x10000, m, k, k) and byname["tmB"][1:] == (0x200000, n, k, k)
    assert (byname["M"], byname["N"], byname["K"]) == (m, n, k // 2)
    assert byname["SA"][1] == 0x400000 and byname["SB"][1] == 0x500000 and byname["C"][1] == 1 << 30
    assert (byname["sa_m"], byname["sa_k"], byname["sb_n"], byname["sb_k"]) == (1, 304, 0, 0)
    assert (byname["KB"], byname["NB"], byname["scale"]) == (9, 5, np.float32(0.5))
    assert out.shape == (m, n) and hbs.last_blockscale_launch["k"] == k
    # int8 kernels take no alpha: the parameter list is one shorter and the host follows it
    calls.clear()
    hbs.gemm_fp8_blockscale(a, b, sa, sb, dtype="u8", out_dtype="f32")
    kern, (grid, block, args), _ = calls[0]
    assert len(args) == len(kern.ir.params) and not any(v.name == "scale" for _, v in kern.ir.params)
