"""The fused epilogue (gpu/epilogue.py): C = act(A @ B + bias[n]) in the warp-specialized
kernel, rewritten on its IR -- the bias column proven from the wgmma atom's C layout, the
data flow checked on the tree, a planted wrong column refused, the configuration rules, a
plan's parameters (fake CuPy), the source compiled for sm_90a, and with a GPU the results
against float64."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a
from test_gpu_plan import _FakeArray
from test_gpu_splitk import fake_tma  # noqa: F401  (the fixture)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import operands, runtime
from layoutproof.gpu.kernels import epilogue
from layoutproof.gpu.kernels.epilogue import EpilogueConfig, generate_epilogue
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

WS = dict(loader="tma", schedule="ws")
BASE = Sm90Config(bm=128, bn=128, stages=6, **WS)
NVCC = shutil.which("nvcc")


@pytest.mark.parametrize(
    "act, prob", [("relu", GemmProblem("k", "n")), ("gelu", GemmProblem("m", "k", "bf16"))]
)
def test_epilogue_kernel_carries_the_bias_and_data_flow_obligations(act, prob):
    k = generate_epilogue(EpilogueConfig(BASE, act), prob)
    lines = [p.line() for p in k.proofs]
    assert any(x.startswith("[equal] lp_bias_col(t, v) ==") for x in lines)
    assert any("fused epilogue data flow" in x and f"lp_act_{act}" in x for x in lines)
    assert sum("bias load bias[n0 + col(thread, register)]" in x for x in lines) == 2
    assert k.source.count("//   [") == len(k.proofs)
    assert "// coverage: 14 of 14 memory accesses, 10 of 10 barrier operations covered" in k.source
    # the chunk's bias is read once per column pair (epilogue.BIAS_PAIRS): a vector where
    # aligned and in bounds, each register reading the slot of its own column
    assert any(x.startswith("[equal] bias pair slots: register pair p of each chunk") for x in lines)
    assert sum("bias pair load bias[n0 + col(thread, register) .. + 1]" in x for x in lines) == 1
    assert "const bool bfull = (reinterpret_cast<unsigned long long>(bias) & 7ull) == 0" in k.source
    # the tile's bias lines are prefetched into L1 before its main loop, in bounds like the loads
    assert sum("global load: bias prefetch bias[n0 + min(t * 128 / bw, 127)]" in x for x in lines) == 1
    body = k.source[k.source.index("consumers") :]
    assert body.index("lp_prefetch_l1(&bias[pfb])") < body.index("lp_wgmma(acc")
    assert f"lp_act_{act}(acc[" in k.source and "const float* __restrict__ bias" in k.source
    # the column function is the PTX D fragment's column: (i / 4) * 8 + (t % 4) * 2 + i % 2
    src = [x for x in k.source.splitlines() if x.startswith("__device__ __forceinline__ int lp_bias_col")]
    assert src == [
        "__device__ __forceinline__ int lp_bias_col(int t, int v) "
        "{ return 2 * (t & 3) + (v & 1) + 8 * (v >> 2); }"
    ]


def test_a_bias_from_the_wrong_column_is_refused(monkeypatch):
    # the kernel reads the bias of the pair's other register: a valid address, wrong column
    monkeypatch.setattr(epilogue, "_code_register", lambda e: e ^ 1)
    with pytest.raises(ProofFailedError) as e:
        generate_epilogue(EpilogueConfig(BASE, "relu"), GemmProblem("k", "n"), memo=False)
    assert e.value.condition == "address equals its layout"


def _paired(act="relu", prob=None):
    """The base kernel's IR rewritten with the bias pairs, and what the flow proof takes."""
    from layoutproof.gpu.kernels.wgmma import generate_sm90

    cfg = EpilogueConfig(BASE, act).validate()
    prob = prob or GemmProblem("k", "n")
    base = generate_sm90(BASE, prob)
    F = epilogue._declare_epilogue(base.ir, cfg, prob, ProofLog())
    body, slots, pname, qname = epilogue._paired_epilogue(F, base.ir.body, ProofLog())
    return F, body, (slots, pname, qname)


def _has_var(e, name):
    return any(isinstance(v, kir.Var) and v.name == name for v in kir.walk(e))


def test_a_register_reading_the_other_columns_slot_is_refused():
    F, body, (slots, pname, qname) = _paired()
    epilogue._prove_pair_flow(F, body, slots, pname, qname, ProofLog())  # as built

    def swap(n):  # the write's bvs[2 (p / 2) + j] -> bvs[2 (p / 2) + 1 - j]
        if isinstance(n, kir.Index) and n.base.name == "bvs" and _has_var(n.idx[0], pname):
            a, j = n.idx[0].a, n.idx[0].b.value
            return kir.Index(n.base, (a + (1 - j),))
        return None

    with pytest.raises(ProofFailedError) as e:
        epilogue._prove_pair_flow(F, kir.rewrite(body, swap), slots, pname, qname, ProofLog())
    assert e.value.condition == "fused epilogue data flow"


def test_a_slot_load_into_the_wrong_slot_is_refused():
    F, body, (slots, pname, qname) = _paired()

    def misplace(n):  # the element load of a slot's first column stored in its second
        if (
            isinstance(n, kir.Assign)
            and isinstance(n.lhs, kir.Index)
            and n.lhs.base.name == "bvs"
            and isinstance(n.rhs, kir.Mem)
            and not n.rhs.claim.what.endswith("+ 1")
        ):
            return kir.Assign(kir.Index(n.lhs.base, (n.lhs.idx[0] + 1,)), n.rhs)
        return None

    with pytest.raises(ProofFailedError) as e:
        epilogue._prove_pair_flow(F, kir.rewrite(body, misplace), slots, pname, qname, ProofLog())
    assert e.value.condition == "fused epilogue data flow"


def test_the_per_register_bias_loads_stay_behind_the_switch(monkeypatch):
    monkeypatch.setattr(epilogue, "BIAS_PAIRS", False)
    k = generate_epilogue(EpilogueConfig(BASE, "relu"), GemmProblem("k", "n"), memo=False)
    assert "bvs[" not in k.source and "bv0 = bias[bc0];" in k.source
    assert "// coverage: 13 of 13 memory accesses" in k.source


def test_epilogue_config_rules():
    for bad in (
        EpilogueConfig(BASE, "tanh"),
        EpilogueConfig(Sm90Config(bm=128, bn=128, stages=4, loader="tma"), "relu"),
        EpilogueConfig(Sm90Config(bm=128, bn=128, stages=4), "relu"),
    ):
        with pytest.raises(GemmConfigError):
            bad.validate()
    assert EpilogueConfig(BASE, "silu").key() == "sm90_128x128x64_s6_g8_tma_ws_biassilu"


def test_fake_plan_passes_the_bias_pointer_after_c_vec(fake_tma):  # noqa: F811
    cp = fake_tma
    m, n, k = 256, 512, 1024
    a, b = cp.array((m, k)), cp.array((k, n))
    bias = _FakeArray(cp, (n,), (4,), np.float32, cp._alloc(4 * n))
    runtime.gemm(a, b, bias=bias, activation="relu", config=BASE)
    (ln,) = cp.launches
    assert ln["kinds"] == ["tmap", "tmap", "ptr", "i32", "i32", "i32", "i64", "i32", "ptr"]
    assert ln["values"][-1] == bias.data.ptr and ln["values"][-2] in (0, 1)
    plan = runtime.last_launch["plan"]
    assert isinstance(plan.config, EpilogueConfig) and plan.config.activation == "relu"
    with pytest.raises(GemmInputError, match="with a bias"):
        plan(a, b)
    # an activation alone: a kept zero bias; the rule's split-K pick runs it in the unsplit
    # kernel's epilogue or in split-K's serial reducer (gpu/splitk.py)
    runtime.gemm(cp.array((16, 4096)), cp.array((4096, 4096)), activation="silu")
    cfg = runtime.last_launch["plan"].config
    assert getattr(cfg, "activation", None) == "silu"
    assert cp.launches[-1]["values"][-1] == runtime.last_launch["plan"]._zero_bias.data.ptr
    with pytest.raises(GemmInputError, match="contiguous float32"):
        runtime.gemm(a, b, bias=cp.array((1, n), np.float32))


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_epilogue_source_compiles_for_sm90a_without_spills(tmp_path):
    _nvcc_sm90a(generate_epilogue(EpilogueConfig(BASE, "gelu"), GemmProblem("k", "k")).source, tmp_path)


gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


@gpu
@pytest.mark.parametrize("act", ["none", "relu", "silu", "gelu"])
@pytest.mark.parametrize("m, n, k", [(37, 45, 51), (300, 520, 136), (16, 4096, 4096)])
def test_gpu_epilogue_matches_float64(act, m, n, k):
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("the fused epilogue runs the TMA kernels of sm_90")
    import math

    rng = cp.random.default_rng(m + n)
    a = rng.integers(-3, 4, size=(m, k)).astype(cp.float16)
    b = rng.integers(-3, 4, size=(k, n)).astype(cp.float16)
    bias = rng.standard_normal(n, dtype=cp.float32)
    for oo in ("C", "F"):
        c = cp.full((m, n), cp.nan, dtype=cp.float32, order=oo)
        runtime.gemm(a, b, c, out_dtype="f32", bias=bias, activation=act)
        x = a.astype(cp.float64) @ b.astype(cp.float64) + bias.astype(cp.float64)
        ref = {
            "none": x,
            "relu": cp.maximum(x, 0),
            "silu": x / (1 + cp.exp(-x)),
            "gelu": 0.5 * x * (1 + cp.asarray(np.vectorize(math.erf)(cp.asnumpy(x / math.sqrt(2))))),
        }[act]
        assert not bool(cp.isnan(c).any())
        err = float(cp.abs(c - ref).max() / (cp.abs(ref).max() + 1))
        assert err < (1e-6 if act in ("none", "relu") else 1e-4), (act, m, n, k, oo, err)


@gpu
@pytest.mark.parametrize("bdt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("m, n, k", [(70, 520, 64), (130, 45, 128), (64, 129, 64)])
def test_gpu_bias_pairs_at_any_alignment_and_ragged_n(bdt, offset, m, n, k):
    # the pair loads where the bias is aligned to two elements and the chunk is inside N;
    # element loads at an odd offset (a view one element in) and in the last, partial chunk
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("the fused epilogue runs the TMA kernels of sm_90")
    rng = cp.random.default_rng(m + n + offset)
    a = rng.integers(-3, 4, size=(m, k)).astype(cp.float32)
    b = rng.integers(-3, 4, size=(k, n)).astype(cp.float32)
    store = rng.integers(-4, 5, size=n + 2).astype(cp.float32)
    ref = cp.maximum(a.astype(cp.float64) @ b.astype(cp.float64) + store[offset : offset + n][None, :], 0)
    if bdt == "bf16":  # bf16 as raw bits (small integers are exact)
        bits = lambda x: (cp.ascontiguousarray(x).view(cp.uint32) >> 16).astype(cp.uint16)  # noqa: E731
        a2, b2, full, dt = bits(a), bits(b), bits(store), "bf16"
    else:
        a2, b2, dt = a.astype(cp.float16), b.astype(cp.float16), None
        full = store.astype(cp.float16 if bdt == "f16" else cp.float32)
    bias = full[offset : offset + n]
    assert (bias.data.ptr % (2 * bias.itemsize) == 0) == (offset == 0)
    out = cp.full((m, n), cp.nan, dtype=cp.float32)
    runtime.gemm(a2, b2, out, dtype=dt, bias=bias, activation="relu")
    assert float(cp.abs(out - ref).max()) == 0.0, (bdt, offset, m, n, k)


# ============================================================================ alpha, beta, C input
def test_alpha_beta_kernel_reads_c_at_each_registers_row_and_column():
    k = generate_epilogue(EpilogueConfig(BASE, "none", True), GemmProblem("k", "n"))
    lines = [p.line() for p in k.proofs]
    assert any(x.startswith("[equal] lp_acc_row(t, v) ==") for x in lines)
    assert sum("C input load Cin[m0 + row(thread, register)" in x for x in lines) == 2
    assert any("alpha * acc[i] + beta * Cin" in x for x in lines)
    assert "// coverage: 15 of 15 memory accesses, 10 of 10 barrier operations covered" in k.source
    src = [x for x in k.source.splitlines() if x.startswith("__device__ __forceinline__ int lp_acc_row")]
    # PTX's D fragment row: (t % 32) / 4 + 16 * (t / 32) + 8 * ((i / 2) % 2)
    assert src == [
        "__device__ __forceinline__ int lp_acc_row(int t, int v) "
        "{ return ((t >> 2) & 7) + 16 * (t >> 5) + 8 * ((v >> 1) & 1); }"
    ]


def test_a_c_input_from_the_wrong_row_is_refused(monkeypatch):
    monkeypatch.setattr(epilogue, "_code_row_register", lambda e: e ^ 2)  # 8 rows off
    with pytest.raises(ProofFailedError) as e:
        generate_epilogue(EpilogueConfig(BASE, "none", True), GemmProblem("k", "n"), memo=False)
    assert e.value.condition in ("address equals its layout", "global access in bounds")


def test_fake_plan_passes_alpha_beta_and_c(fake_tma):  # noqa: F811
    cp = fake_tma
    m, n, k = 256, 512, 1024
    a, b = cp.array((m, k)), cp.array((k, n))
    c = cp.empty((m, n), np.float16)
    runtime.gemm(a, b, alpha=0.5, beta=2.0, c=c, config=BASE)
    ln = cp.launches[-1]
    assert ln["kinds"][-5:] == ["ptr", "f32", "f32", "ptr", "i64"]
    assert ln["values"][-4:] == [0.5, 2.0, c.data.ptr, n]
    plan = runtime.last_launch["plan"]
    assert plan.config.alpha_beta and plan.config.key().endswith("_biasnone_ab")
    with pytest.raises(GemmInputError, match="without alpha/beta"):
        runtime.gemm_plan(a, b)(a, b, beta=1.0, c=c)
    with pytest.raises(GemmInputError, match="needs the C input"):
        runtime.gemm(a, b, beta=1.0)
    with pytest.raises(GemmInputError, match="row-major"):
        runtime.gemm(a, b, beta=1.0, c=cp.empty((m, n), np.float32))
    # gemm_plan keeps a plan with alpha/beta: made with c, called with c, alpha and beta
    kept = runtime.gemm_plan(a, b, c=c, config=BASE)
    assert isinstance(kept, runtime.GemmPlan) and kept.alpha_beta
    c2 = cp.empty((m, n), np.float16)
    kept(a, b, c=c2, alpha=-1.0, beta=0.25)
    assert cp.launches[-1]["values"][-4:] == [-1.0, 0.25, c2.data.ptr, n]
    with pytest.raises(GemmInputError, match="c differs"):
        kept(a, b)


@gpu
@pytest.mark.parametrize("od", ["f32", "f16"])
@pytest.mark.parametrize("m, n, k", [(37, 45, 51), (300, 520, 136)])
def test_gpu_alpha_beta_bias_relu_matches_float64(od, m, n, k):
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("the fused epilogue runs the TMA kernels of sm_90")
    rng = cp.random.default_rng(m * n)
    a = rng.integers(-3, 4, size=(m, k)).astype(cp.float16)
    b = rng.integers(-3, 4, size=(k, n)).astype(cp.float16)
    dt = cp.float32 if od == "f32" else cp.float16
    c_in = rng.integers(-4, 5, size=(m, n)).astype(dt)
    bias = rng.integers(-2, 3, size=n).astype(cp.float32)
    ref = cp.maximum(0.5 * (a.astype(cp.float64) @ b.astype(cp.float64)) - 2.0 * c_in + bias, 0)
    out = cp.full((m, n), cp.nan, dtype=dt)
    runtime.gemm(a, b, out, alpha=0.5, beta=-2.0, c=c_in, bias=bias, activation="relu")
    tol = 0 if od == "f32" else 1e-3
    assert float(cp.abs(out.astype(cp.float64) - ref).max()) <= tol * float(cp.abs(ref).max() + 1)
    # in place: c is out (each element is read before its tile's chunk is stored)
    out2 = c_in.copy()
    runtime.gemm(a, b, out2, alpha=0.5, beta=-2.0, c=out2, bias=bias, activation="relu")
    assert float(cp.abs(out2.astype(cp.float64) - ref).max()) <= tol * float(cp.abs(ref).max() + 1)


# ============================================================================ bias along M, f16 / bf16 bias
@pytest.mark.parametrize("axis, bdt", [("m", "f32"), ("n", "f16"), ("m", "bf16")])
def test_bias_along_m_and_in_half_precision_is_proven_at_its_row_or_column(axis, bdt):
    cfg = EpilogueConfig(BASE, "relu", False, axis, bdt)
    assert cfg.key().endswith(("_biasm" if axis == "m" else "") + ("" if bdt == "f32" else f"_b{bdt}"))
    k = generate_epilogue(cfg, GemmProblem("k", "n"))
    lines = [p.line() for p in k.proofs]
    at = (
        "bias load bias[m0 + row(thread, register)]"
        if axis == "m"
        else "bias load bias[n0 + col(thread, register)]"
    )
    assert sum(at in x for x in lines) == 2
    assert any("fused epilogue data flow" in x and f"the bias {bdt}" in x for x in lines)
    ctype, _, conv = epilogue.BIAS_DTYPES[bdt]
    assert f"const {ctype}* __restrict__ bias" in k.source
    if axis == "m":  # per register, at its row
        assert (f"bv0 = {conv}(bias[rr0]);" if conv else "bv0 = bias[rr0];") in k.source
    else:  # per column pair: the vector's halves, or each column under < N
        pair = {"f16": "__half2", "bf16": "__nv_bfloat162", "f32": "float2"}[bdt]
        assert f"const {pair} bp = *reinterpret_cast<const {pair}*>(bias + bcs);" in k.source
        assert (f"bvs[2 * s] = {conv}(bias[bcs]);" if conv else "bvs[2 * s] = bias[bcs];") in k.source
    if axis == "m":
        assert "if (rr0 < M)" in k.source
    # a different kernel (and name) than the f32 bias along N
    assert k.name != generate_epilogue(EpilogueConfig(BASE, "relu"), GemmProblem("k", "n")).name


def test_a_bias_from_the_wrong_row_is_refused(monkeypatch):
    monkeypatch.setattr(epilogue, "_code_row_register", lambda e: e ^ 2)  # 8 rows off
    with pytest.raises(ProofFailedError) as e:
        generate_epilogue(EpilogueConfig(BASE, "relu", False, "m"), GemmProblem("k", "n"), memo=False)
    assert e.value.condition in ("address equals its layout", "global access in bounds")


def test_bias_axis_and_dtype_rules():
    for bad in (EpilogueConfig(BASE, "relu", False, "k"), EpilogueConfig(BASE, "relu", False, "n", "f64")):
        with pytest.raises(GemmConfigError):
            bad.validate()


def test_fake_plan_takes_a_bias_along_m_in_f16(fake_tma):  # noqa: F811
    cp = fake_tma
    m, n, k = 256, 512, 1024
    a, b = cp.array((m, k)), cp.array((k, n))
    bias = _FakeArray(cp, (m,), (2,), np.float16, cp._alloc(2 * m))
    runtime.gemm(a, b, bias=bias, activation="relu", config=BASE, bias_along="m")
    plan = runtime.last_launch["plan"]
    assert (plan.config.bias_axis, plan.config.bias_dtype) == ("m", "f16")
    assert cp.launches[-1]["values"][-1] == bias.data.ptr
    with pytest.raises(GemmInputError, match=r"shape \(256,\)"):  # a bias of N along M
        runtime.gemm(a, b, bias=_FakeArray(cp, (n,), (2,), np.float16, cp._alloc(2 * n)), bias_along="m")
    with pytest.raises(GemmInputError, match="bias_along"):
        runtime.gemm(a, b, bias=bias, bias_along="k")
    runtime.gemm(a, b, activation="gelu", config=BASE, bias_along="m")  # a kept zero bias of M
    assert runtime.last_launch["plan"]._zero_bias.shape[-1] == m


@gpu
@pytest.mark.parametrize(
    "axis, bdt", [("m", "f32"), ("n", "f16"), ("m", "f16"), ("n", "bf16"), ("m", "bf16")]
)
@pytest.mark.parametrize("m, n, k", [(37, 45, 51), (300, 520, 136)])
def test_gpu_bias_along_m_and_half_bias_match_float64(axis, bdt, m, n, k):
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("the fused epilogue runs the TMA kernels of sm_90")
    rng = cp.random.default_rng(m + n + k)
    a = rng.integers(-3, 4, size=(m, k)).astype(cp.float32)
    b = rng.integers(-3, 4, size=(k, n)).astype(cp.float32)
    bv = rng.integers(-4, 5, size=m if axis == "m" else n).astype(cp.float32)
    ref = a.astype(cp.float64) @ b.astype(cp.float64)
    ref = cp.maximum(ref + (bv[:, None] if axis == "m" else bv[None, :]), 0)
    if bdt == "bf16":  # bf16 inputs and bias as raw bits (small integers are exact in bf16)
        bits = lambda x: (x.view(cp.uint32) >> 16).astype(cp.uint16)  # noqa: E731
        a2, b2, bias, dt = bits(cp.ascontiguousarray(a)), bits(cp.ascontiguousarray(b)), bits(bv), "bf16"
    else:
        a2, b2, dt = a.astype(cp.float16), b.astype(cp.float16), None
        bias = bv.astype(cp.float16 if bdt == "f16" else cp.float32)
    for oo in ("C", "F"):
        out = cp.full((m, n), cp.nan, dtype=cp.float32, order=oo)
        runtime.gemm(a2, b2, out, dtype=dt, bias=bias, activation="relu", bias_along=axis)
        assert float(cp.abs(out - ref).max()) == 0.0, (axis, bdt, oo)


def test_bias_dtype_rules_name_the_condition(fake_tma):  # noqa: F811
    cp = fake_tma
    kinds = {np.float32: "f32", np.float16: "f16"}
    for dt, name in kinds.items():
        v = _FakeArray(cp, (64,), (np.dtype(dt).itemsize,), dt, cp._alloc(256))
        assert operands.bias_dtype(cp, v, 64, 32, 0, "m", "f16") == name
    bits = _FakeArray(cp, (32,), (2,), np.uint16, cp._alloc(64))
    assert operands.bias_dtype(cp, bits, 64, 32, 0, "n", "bf16") == "bf16"  # raw bf16 bits
    for bad, along in (
        (bits, "n"),  # uint16 with f16 inputs: not a bias type
        (_FakeArray(cp, (32,), (8,), np.float32, cp._alloc(256)), "n"),  # not contiguous
        (_FakeArray(cp, (32,), (8,), np.float64, cp._alloc(256)), "n"),
    ):
        with pytest.raises(GemmInputError, match="contiguous float32, float16 or bfloat16"):
            operands.bias_dtype(cp, bad, 64, 32, 0, along, "f16")


def _gelu_as_emitted(x: np.ndarray) -> np.ndarray:
    """The emitted ``lp_act_gelu`` evaluated in float32, its constants read from the helper's
    own text (each ``fmaf`` and product rounded once; the reciprocal and the exponential
    exact, ``ex2`` flushing results below the normal range to 0 as ``.ftz`` does)."""
    import re

    from layoutproof.gpu.proof import kir

    src = kir._HELPERS["act"]
    body = src[src.index("float lp_act_gelu") :]
    body = body[: body.index("\n}\n")]
    f = np.float32
    scale = re.search(r"fmaf\(([-0-9.]+)f, ax, 1\.f\)", body)
    first = re.search(r"float p = fmaf\(t, ([-0-9.]+)f, ([-0-9.]+)f\)", body)
    steps = [float(c) for c in re.findall(r"p = fmaf\(t, p, ([-0-9.]+)f\)", body)]
    k = re.search(r"x \* \(x \* ([-0-9.]+)f\)", body)
    assert scale and first and k and len(steps) == 5, body

    def fma(a, b, c):
        return (np.asarray(a, np.float64) * b + c).astype(f)

    ax = np.abs(x)
    t = (1.0 / fma(f(float(scale.group(1))), ax, f(1.0)).astype(np.float64)).astype(f)
    p = fma(t, f(float(first.group(1))), f(float(first.group(2))))
    for c in steps:
        p = fma(t, p, f(c))
    arg = (x * (x * f(float(k.group(1))))).astype(f)
    e = np.exp2(arg.astype(np.float64))
    e = np.where(e < np.finfo(np.float32).tiny, 0.0, e).astype(f)
    h = ((t * p).astype(f) * e).astype(f)
    return fma(-ax, h, np.maximum(x, f(0)))


def test_the_emitted_gelu_constants_are_the_fit_of_tools_gelu_fit():
    # the helper's scale and polynomial are tools/gelu_fit.py's degree-6 fit, rounded to f32
    import importlib.util
    import re
    from pathlib import Path

    from layoutproof.gpu.proof import kir

    path = Path(__file__).resolve().parents[2] / "tools" / "gelu_fit.py"
    spec = importlib.util.spec_from_file_location("gelu_fit", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import mpmath

    mpmath.mp.dps = 30
    err, c = mod.fit(6, 0.5)
    assert err < 1e-6
    body = kir._HELPERS["act"][kir._HELPERS["act"].index("float lp_act_gelu") :]
    scale = float(re.search(r"fmaf\(([-0-9.]+)f, ax, 1\.f\)", body).group(1))
    first = re.search(r"float p = fmaf\(t, ([-0-9.]+)f, ([-0-9.]+)f\)", body)
    rest = [float(x) for x in re.findall(r"p = fmaf\(t, p, ([-0-9.]+)f\)", body)]
    emitted = [float(first.group(1)), float(first.group(2))] + rest  # highest power first
    assert np.float32(scale) == np.float32(0.5 / np.sqrt(2))
    assert [np.float32(x) for x in emitted] == [np.float32(x) for x in c[::-1]]


def test_a_bias_prefetch_without_its_guard_is_refused(monkeypatch):
    # the prefetch of the tile's last bias line past N (no `< N` guard) is an access out of
    # bounds, refused like a load
    real = epilogue._prefetch_ir

    def unguarded(F):
        stmts = real(F)
        outer = stmts[0]
        decl, guarded = outer.then.body
        return [type(outer)(outer.cond, type(outer.then)((decl, *guarded.then.body)), comment=outer.comment)]

    monkeypatch.setattr(epilogue, "_prefetch_ir", unguarded)
    with pytest.raises(ProofFailedError) as e:
        generate_epilogue(EpilogueConfig(BASE, "relu"), GemmProblem("k", "n"), memo=False)
    assert "bias prefetch" in str(e.value)


def test_the_emitted_gelu_is_within_float32_rounding_of_the_erf_form():
    import math

    x = np.linspace(-14, 14, 40_001, dtype=np.float32)
    got = _gelu_as_emitted(x).astype(np.float64)
    xd = x.astype(np.float64)
    ref = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2.0)) for v in xd])
    err = np.abs(got - ref)
    # absolute: a few float32 ulps of the result where gelu(x) ~ x, the tail fit beyond
    assert err.max() < 5e-7, (float(err.max()), float(x[err.argmax()]))
    big = np.abs(ref) > 1e-3
    assert (err[big] / np.abs(ref[big])).max() < 3e-6
    # the negative tail keeps its relative accuracy (no 1 + erf(x) cancellation)
    tail = (np.abs(ref) > 1e-30) & (x < 0)
    assert (err[tail] / np.abs(ref[tail])).max() < 5e-5
    assert got[x == 0].tolist() == [0.0] and np.all(np.diff(got[x > 0]) >= 0)
