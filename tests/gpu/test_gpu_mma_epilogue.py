"""The fused epilogue in the mma.sync kernel's own pair stores (mma_epilogue.MmaEpilogueConfig):
the kernel's proofs (each bias load claimed at its store's column or row, the data flow read
back from the tree), planted bugs refused by name, the configuration's rules, the rule's
route and the plan's parameters, an nvcc compile, and with a GPU the results against float64
(NaN-poisoned outputs, tails on M, N and K, both bias axes and types)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_splitk import fake_tma  # noqa: F401 -- the fake-CuPy TMA fixture
from test_gpu_splitk_epilogue import _activate, _bias  # float64 activations; a fake bias vector

from layoutproof.gpu.config import GemmConfig, GemmProblem
from layoutproof.gpu.errors import GemmConfigError, ProofFailedError
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.host import runtime
from layoutproof.gpu.kernels import mma_epilogue as me
from layoutproof.gpu.kernels.mma_epilogue import MmaEpilogueConfig, generate_mma_epilogue
from layoutproof.gpu.kernels.mma_sync import generate
from layoutproof.gpu.kernels.splitk import FixupEpilogueConfig
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof.record import ProofLog

NVCC = shutil.which("nvcc")
D16 = GemmConfig(bm=16, bn=32, bk=128, warps_m=1, warps_n=2, stages=8)
D32 = GemmConfig(bm=32, bn=32, bk=128, warps_m=2, warps_n=2, stages=8)
W32 = GemmConfig(bm=32, bn=128, bk=64, warps_m=2, warps_n=4, stages=6)
FLOW = "fused epilogue data flow (mma.sync pair stores)"


@pytest.mark.parametrize("base", [D16, D32, W32], ids=lambda c: c.key())
@pytest.mark.parametrize(
    "act,axis,bdt,out",
    [("gelu", "n", "f32", "f16"), ("silu", "n", "bf16", "bf16"), ("relu", "m", "f16", "f32")],
)
def test_the_mma_epilogue_is_proven(base, act, axis, bdt, out):
    dt = "bf16" if out == "bf16" else "f16"
    k = generate_mma_epilogue(
        MmaEpilogueConfig(base, act, axis, bdt), GemmProblem("k", "n", dt, out), memo=False
    )
    lines = [p.statement for p in k.proofs]
    flow = [x for x in lines if x.startswith(FLOW)]
    assert len(flow) == 1 and f"lp_act_{act}(acc[2h + e] + bias[" in flow[0]
    loads = [x for x in lines if "global load: bias load" in x]
    assert len(loads) == (1 if axis == "m" else 2)
    assert all("address == claim and in bounds over every index value" in x for x in loads)
    # the base kernel's plan proofs are kept, its IR obligations discharged again
    plain = generate(base, GemmProblem("k", "n", dt, out))
    assert k.source.count("//   [") == len(k.proofs) > len(plain.proofs)
    assert f"const {me.BIAS_DTYPES[bdt][0]}* __restrict__ bias" in k.source
    cov = [x for x in k.source.splitlines() if x.startswith("// coverage:")]
    extra = 1 if axis == "m" else 2
    n_plain = int(next(x for x in plain.source.splitlines() if x.startswith("// coverage:")).split()[2])
    assert cov and cov[0].startswith(f"// coverage: {n_plain + extra} of {n_plain + extra} memory accesses")
    # every store of the pair writes the activation of the accumulator plus its bias
    stores = [x.strip() for x in k.source.splitlines() if "acc[mi][ni][2 * h" in x]
    assert stores and all(f"lp_act_{act}(acc[mi][ni][2 * h" in x for x in stores)
    assert k.threads == base.threads and k.smem_bytes == base.smem_bytes


def test_a_bias_from_the_next_column_is_refused(monkeypatch):
    # the first register of the pair reads the bias of column c + 1: a valid address, but not
    # the one its claim (the store's column) names
    real = me._Fused.load

    def shifted(self, j, idx, coord, bound, what):
        return real(self, j, idx + 1 if j == 0 else idx, coord, bound, what)

    monkeypatch.setattr(me._Fused, "load", shifted)
    with pytest.raises(ProofFailedError) as e:
        generate_mma_epilogue(MmaEpilogueConfig(D32, "relu"), GemmProblem("k", "n"), memo=False)
    assert "bias load" in str(e.value)


def test_swapped_biases_are_refused_by_the_data_flow_check():
    cfg = MmaEpilogueConfig(D32, "gelu")
    base = generate(D32, GemmProblem("k", "n"))
    ir, F, (fx, fy) = me._rewrite(base.ir, cfg)
    me._prove_data_flow(ir, F, (fx, fy), ProofLog())  # the kernel as built
    with pytest.raises(ProofFailedError) as e:
        me._prove_data_flow(ir, F, (fy, fx), ProofLog())
    assert e.value.condition == "fused epilogue data flow"


def test_mma_epilogue_config_rules():
    assert (
        MmaEpilogueConfig(D16, "silu", "m", "bf16").key() == "16x32x128_w1x2_s8_auto_g8_biassilu_biasm_bbf16"
    )
    for bad in (
        MmaEpilogueConfig(Sm90Config(bm=128, bn=128, stages=4, loader="tma", schedule="ws"), "relu"),
        MmaEpilogueConfig(D16, "tanh"),
        MmaEpilogueConfig(D16, "relu", "k"),
        MmaEpilogueConfig(D16, "relu", "n", "s32"),
    ):
        with pytest.raises(GemmConfigError):
            bad.validate()
    with pytest.raises(GemmConfigError, match="f16 or bf16 operands"):
        generate_mma_epilogue(MmaEpilogueConfig(D16, "relu"), GemmProblem("k", "k", "e4m3"), memo=False)


def test_the_rule_runs_the_decode_tiles_epilogue_in_their_stores():
    prob = GemmProblem("k", "n", "bf16")
    for shape in [(32, 4096, 14336), (32, 28672, 8192), (16, 4096, 4096), (1, 14336, 4096)]:
        plain = P.choose_config(*shape, prob, hopper=True, tma=True, mma=True)
        got = P.choose_config(*shape, prob, hopper=True, tma=True, mma=True, epilogue=True)
        assert isinstance(plain, GemmConfig) and got == MmaEpilogueConfig(plain), shape
    # a decision: the bias slot after c_vec in the mma kernel's own parameters, no fix-up
    # launch, no workspace; with a C input the tile stores one plane for the fix-up instead
    dev = P.DeviceFacts(cc="90", sms=132, tma=True)
    for ab, want in ((False, MmaEpilogueConfig), (True, FixupEpilogueConfig)):
        req = _request(32, 4096, 14336, alpha_beta=ab)
        d = P.decide(req, dev)
        assert isinstance(d.config, want), ab
        if not ab:
            assert d.config.activation == "gelu" and d.config.bias_dtype == "bf16"
            assert d.fixup is None and d.workspace == 0 and d.slot("bias") == len(d.kinds) - 1
            assert d.kinds[: d.slot("cvec") + 1] == ("ptr",) * 3 + ("i32",) * 3 + ("i64",) * 3 + ("i32",)
        else:
            assert d.fixup is not None and d.workspace == 32 * 4096


def _request(m, n, k, alpha_beta=False):
    """A checked request of a bf16 product with a bf16 bias along N and a GELU (no arrays)."""
    op = lambda r, c: P.OperandFacts(shape=(r, c), strides=(2 * c, 2), itemsize=2)  # noqa: E731
    return P.GemmRequest(
        a=op(m, k),
        b=op(k, n),
        dtype="bf16",
        out_dtype="bf16",
        out_itemsize=2,
        path="auto",
        activation="gelu",
        bias=True,
        bias_dtype="bf16",
        alpha_beta=alpha_beta,
        c_ld=(n, 0) if alpha_beta else (0, 0),
    )


def test_fake_plan_runs_the_decode_tile_with_the_bias_in_its_own_parameters(fake_tma):  # noqa: F811
    cp = fake_tma
    m, n, k = 32, 4096, 14336
    a, b = cp.array((m, k)), cp.array((k, n))
    bias = _bias(cp, n)
    c = runtime.gemm(a, b, bias=bias, activation="gelu")
    cfg = runtime.last_launch["config"]
    plan = runtime.last_launch["plan"]
    assert cfg == MmaEpilogueConfig(P.mma_decode(m, n, k), "gelu")
    # one launch, no workspace: A, B, C, M, N, K, lda, ldb, ldc, c_vec, then the bias
    assert plan._ws is None and plan._fix is None
    g = cp.launches[-1]
    assert g["kinds"] == ["ptr"] * 3 + ["i32"] * 3 + ["i64"] * 3 + ["i32", "ptr"]
    assert g["values"][2] == c.data.ptr and g["values"][3:6] == [m, n, k]
    assert g["values"][-1] == bias.data.ptr
    # with a C input the tile stores one plane that the fix-up turns into C
    runtime.gemm(a, b, bias=bias, activation="gelu", c=cp.array((m, n)), beta=1.0)
    assert isinstance(runtime.last_launch["config"], FixupEpilogueConfig)


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_the_mma_epilogue_compiles_without_spills(tmp_path):
    k = generate_mma_epilogue(MmaEpilogueConfig(W32, "gelu", "n", "bf16"), GemmProblem("k", "n", "bf16"))
    _nvcc_sm90a(k.source, tmp_path)


# ============================================================================ on a GPU
gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


CASES = [
    # (m, n, k, config or None for the rule, act, axis, bias dtype, out)
    (32, 4096, 8192, None, "gelu", "n", "bf16", "bf16"),
    (16, 4096, 4096, None, "silu", "n", "f32", "f16"),
    (32, 8192, 8192, None, "relu", "m", "f16", "f32"),
    (29, 1000, 520, D32, "gelu", "n", "f32", "f16"),
    (13, 517, 136, D16, "none", "m", "bf16", "f32"),
    (40, 300, 200, W32, "silu", "n", "f16", "bf16"),
]


@gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[2]}_{c[4]}_{c[5]}_{c[6]}_{c[7]}")
def test_gpu_mma_epilogue_matches_float64(case):
    cp = pytest.importorskip("cupy")
    m, n, k, config, act, axis, bdt, od = case
    dt = "bf16" if od == "bf16" else "f16"
    rng = np.random.default_rng(m * 7 + n + k)
    a = rng.integers(-3, 4, size=(m, k)).astype(np.float32)  # exact in f16 and bf16
    b = rng.integers(-3, 4, size=(k, n)).astype(np.float32)
    bv = (rng.integers(-8, 9, size=m if axis == "m" else n) / 4).astype(np.float32)
    ref = _activate(a.astype(np.float64) @ b.astype(np.float64) + (bv[:, None] if axis == "m" else bv), act)
    if dt == "bf16":  # raw bits (the upper halves of the f32 values)
        bits = lambda v: (np.ascontiguousarray(v).view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731
        a2, b2, kw = cp.asarray(bits(a)), cp.asarray(bits(b)), dict(dtype="bf16")
    else:
        a2, b2, kw = cp.asarray(a.astype(np.float16)), cp.asarray(b.astype(np.float16)), {}
    if bdt == "bf16":
        bias = cp.asarray(bits(bv)).view(cp.uint16) if dt == "bf16" else None
        if bias is None:
            pytest.skip("a bf16 bias beside f16 operands is not a combination gemm takes from CuPy")
    else:
        bias = cp.asarray(bv.astype(np.float16 if bdt == "f16" else np.float32))
    onp = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32}[od]
    for _ in range(2):  # a second call on the plan the first made; the output NaN-poisoned each time
        out = cp.full((m, n), 0xFFFF if od == "bf16" else np.nan, dtype=onp)
        runtime.gemm(
            a2, b2, out, out_dtype=od, bias=bias, activation=act, bias_along=axis, config=config, **kw
        )
        cfg = runtime.last_launch["config"]
        got = cp.asnumpy(out)
        if od == "bf16":
            got = (got.astype(np.uint32) << 16).view(np.float32)
        got = got.astype(np.float64)
        assert np.isfinite(got).all(), cfg.key()
        tol = {"f16": 2e-3, "bf16": 1e-2, "f32": 1e-5}[od]
        err = float(np.abs(got - ref).max() / (np.abs(ref).max() + 1))
        assert err < tol, (cfg.key(), err)
    assert isinstance(cfg, MmaEpilogueConfig), cfg.key()
    assert cfg.activation == act and cfg.bias_axis == axis and cfg.bias_dtype == bdt
