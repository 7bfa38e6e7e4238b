"""Batched GEMM: C[i] = A[i] @ B[i] in one launch of the warp-specialized TMA
kernel -- the batch index split off the persistent tile index and proven to reach every
(batch, tile) once, rank-3 TMA loads at the batch coordinate, C's stores claimed at
``C + bidx * ldcb + row * ldc + col``; a planted wrong batch stride refused by name; the
source compiled for sm_90a; and with a GPU the results against float64 (NaN-poisoned
outputs) for strided, broadcast and folded batches, with a fused bias and activation."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a
from test_gpu_plan import _FakeArray, _FakeCupy
from test_gpu_splitk import fake_tma  # noqa: F401  (the fixture)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import cache, operands, runtime
from layoutproof.gpu.host import plan as plan_mod
from layoutproof.gpu.kernels import epilogue, wgmma_ws
from layoutproof.gpu.kernels.epilogue import EpilogueConfig, generate_epilogue
from layoutproof.gpu.kernels.wgmma import Sm90Config, generate_sm90
from layoutproof.gpu.kernels.wgmma_ws import prove_batch_schedule
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

WS = dict(loader="tma", schedule="ws")
BASE = Sm90Config(bm=128, bn=128, stages=6, **WS)
NVCC = shutil.which("nvcc")
HAS_3D = "c2" in getattr(kir.TmaLoad, "__dataclass_fields__", {})
needs_3d = pytest.mark.skipif(not HAS_3D, reason="kernel IR without rank-3 TMA loads (TmaLoad.c2)")


# ============================================================================ the problem
def test_batched_problem_key_and_validation():
    assert GemmProblem("k", "n", batch="ab").key() == "ak_bn_f16_f16_batchab"
    assert GemmProblem("k", "n").key() == "ak_bn_f16_f16"  # unbatched keys unchanged
    # the repr (and so every unbatched kernel's name hash) is unchanged
    assert "batch" not in repr(GemmProblem("k", "n", batch="a"))
    assert GemmProblem(batch="ab") != GemmProblem()
    with pytest.raises(GemmConfigError, match="batch="):
        GemmProblem(batch="c").validate()


def test_batched_problem_needs_the_warp_specialized_kernel():
    with pytest.raises(GemmConfigError, match="warp-specialized"):
        generate_sm90(Sm90Config(bm=128, bn=128, stages=6, loader="tma"), GemmProblem(batch="ab"))
    with pytest.raises(GemmConfigError, match="warp-specialized"):
        cache.kernel_for(runtime.DEFAULT_CONFIG, GemmProblem(batch="ab"), disk=False)


# ============================================================================ the proofs
def test_batch_schedule_is_proven_on_the_emitted_split():
    for cl in (1, 2):
        log = ProofLog()
        prove_batch_schedule(8, log, cluster=cl)
        lines = [p.line() for p in log.proofs]
        assert any(
            "batched persistent schedule" in x and "every tile of every batch once" in x for x in lines
        )
        assert any("batched C" in x and "disjoint" in x for x in lines)


def test_a_batch_split_that_skips_tiles_is_refused(monkeypatch):
    real = wgmma_ws.batch_split_ir

    def wrong(t, tpb):  # the batch from t / (tpb + 1): tiles of two batches collide
        (bidx, tb), stmts = real(t, tpb)
        d1 = kir.Decl(bidx, t / (tpb + 1), const=True)
        return (bidx, tb), [d1, stmts[1]]

    monkeypatch.setattr(wgmma_ws, "batch_split_ir", wrong)
    with pytest.raises(ProofFailedError) as e:
        prove_batch_schedule(8, ProofLog())
    assert e.value.condition in ("batched scheduler bijective", "batch index in range", "batch blocks")


@needs_3d
@pytest.mark.parametrize("batch, cluster", [("ab", 1), ("a", 2), ("b", 1)])
def test_batched_kernel_reads_at_the_batch_coordinate_and_stores_at_its_matrix(batch, cluster):
    cfg = Sm90Config(
        bm=128, bn=256 if cluster == 2 else 128, stages=4 if cluster == 2 else 6, cluster=cluster, **WS
    )
    k = generate_sm90(cfg, GemmProblem("k", "n", batch=batch))
    src = k.source
    assert "int batch," in src and "long long ldcb" in src
    assert "const int tiles = tpb * batch;" in src
    assert "const int bidx = t / tpb;" in src and "const int tb = t % tpb;" in src
    assert "lp_out_t* p = C + (long long)bidx * ldcb + (long long)r * ldc + c;" in src
    load3 = "lp_tma_load_3d_mc(" if cluster == 2 else "lp_tma_load_3d("
    a3 = "&tmA, kt * 64, m0 + 0, bidx" in src
    b3 = "&tmB, n0 + 0, kt * 64, bidx" in src
    assert (a3, b3) == ("a" in batch, "b" in batch), (a3, b3)
    assert load3 in src
    lines = [p.line() for p in k.proofs]
    assert any("batched persistent schedule" in x for x in lines)
    assert sum("C 16-byte row vector store" in x for x in lines) >= 1
    assert k.source.count("//   [") == len(k.proofs)


@needs_3d
def test_a_wrong_batch_stride_is_refused(monkeypatch):
    # the stores use ldc as the batch stride: the claim (C + bidx * ldcb + ...) fails by name
    monkeypatch.setattr(wgmma_ws, "batch_c_stride", lambda E: E.ldc)
    with pytest.raises(ProofFailedError, match="C 16-byte row vector store"):
        generate_sm90(BASE, GemmProblem("k", "n", batch="ab"), memo=False)


@needs_3d
def test_batched_kernel_with_fused_bias():
    k = generate_epilogue(EpilogueConfig(BASE, "relu"), GemmProblem("k", "k", batch="ab"))
    assert "long long ldcb,\n" in k.source and "const float* __restrict__ bias" in k.source
    assert k.source.index("long long ldcb") < k.source.index("const float* __restrict__ bias")
    # alpha/beta with a C input is fused too (it was refused before the C input had a batch
    # stride): the parameters follow the bias, the C input's batch stride last
    src = generate_epilogue(EpilogueConfig(BASE, "none", True), GemmProblem("k", "k", batch="ab")).source
    order = [
        "long long ldcb",
        "bias,",
        "float alpha",
        "float beta",
        "Cin,",
        "long long ldci,",
        "long long ldcib)",
    ]
    assert [src.index(x) for x in order] == sorted(src.index(x) for x in order)


@needs_3d
@pytest.mark.parametrize("batch", ["ab", "a", "b"])
def test_batched_kernel_reads_each_batchs_c_input_at_its_batch_stride(batch):
    k = generate_epilogue(
        EpilogueConfig(BASE, "relu", True), GemmProblem("k", "n", "f16", "f32", batch=batch)
    )
    src = k.source
    for j in (0, 1):
        assert f"Cin[(long long)bidx * ldcib + ((long long)rr{j} * ldci + bc{j})]" in src
    # the C stores and the C input read the same bidx (one declaration in the consumers' loop)
    assert "lp_out_t* p = C + (long long)bidx * ldcb + (long long)r * ldc + c;" in src
    lines = [p.line() for p in k.proofs]
    cin = [x for x in lines if "C input load Cin[bidx]" in x]
    assert len(cin) == 2 and all("address == claim and in bounds" in x for x in cin), cin
    assert any(
        "fused epilogue data flow" in x and "Cin[bidx * ldcib + (m0 + row(t, i)) * ldci" in x for x in lines
    )
    # not batched: no batch stride (the 2-D kernel's parameters are unchanged)
    k2 = generate_epilogue(EpilogueConfig(BASE, "relu", True), GemmProblem("k", "n", "f16", "f32"))
    assert "ldcib" not in k2.source and "Cin[(long long)rr0 * ldci + bc0]" in k2.source


@needs_3d
@pytest.mark.parametrize("wrong", ["row stride", "no batch offset"])
def test_a_wrong_c_input_batch_stride_is_refused(monkeypatch, wrong):
    # the code reads batch bidx's C input at bidx * ldci (or at batch 0's): the claim
    # Cin + bidx * ldcib + row * ldci + col fails by name
    bad = (
        (lambda ldci, ldcib: ldci)
        if wrong == "row stride"
        else (lambda ldci, ldcib: kir.Const(0, "long long"))
    )
    monkeypatch.setattr(epilogue, "c_input_batch_stride", bad)
    with pytest.raises(ProofFailedError, match=r"C input load Cin\[bidx\]") as e:
        generate_epilogue(EpilogueConfig(BASE, "none", True), GemmProblem("k", "n", batch="a"), memo=False)
    assert e.value.condition == "address equals its layout"


@needs_3d
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_batched_kernel_with_alpha_beta_compiles_for_sm90a_without_spills(tmp_path):
    cfg = EpilogueConfig(BASE, "silu", True, "m", "f16")
    _nvcc_sm90a(generate_epilogue(cfg, GemmProblem("k", "n", "f16", "f16", batch="ab")).source, tmp_path)


@needs_3d
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("batch, cluster", [("ab", 1), ("b", 2)])
def test_batched_source_compiles_for_sm90a_without_spills(batch, cluster, tmp_path):
    cfg = Sm90Config(bm=128, bn=256, stages=4, cluster=cluster, **WS)
    _nvcc_sm90a(generate_sm90(cfg, GemmProblem("k", "n", batch=batch)).source, tmp_path)


# ============================================================================ host checks
def test_batch_extents_follow_matmul_broadcasting():
    class X:
        def __init__(self, shape):
            self.shape, self.ndim = shape, len(shape)

    assert operands.batch_dims(X((4, 8, 8)), X((4, 8, 8))) == (4, 4, 4)
    assert operands.batch_dims(X((4, 8, 8)), X((8, 8))) == (4, 4, 1)
    assert operands.batch_dims(X((1, 8, 8)), X((5, 8, 8))) == (5, 1, 5)
    with pytest.raises(GemmInputError, match="batch extents differ"):
        operands.batch_dims(X((3, 8, 8)), X((4, 8, 8)))
    with pytest.raises(GemmInputError, match="2-D or 3-D"):
        operands.batch_dims(X((2, 3, 8, 8)), X((8, 8)))


# ============================================================================ on the GPU
gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


def _ref(a, b):
    cp = pytest.importorskip("cupy")
    return cp.matmul(a.astype(cp.float64), b.astype(cp.float64))


def _operands(cp, shape_a, shape_b, seed, dt=None):
    rng = cp.random.default_rng(seed)
    dt = dt or cp.float16
    return (
        rng.integers(-3, 4, size=shape_a).astype(dt),
        rng.integers(-3, 4, size=shape_b).astype(dt),
    )


@gpu
@pytest.mark.parametrize(
    "sa, sb",
    [
        ((4, 37, 51), (4, 51, 45)),  # ragged
        ((3, 300, 136), (3, 136, 520)),
        ((8, 128, 64), (8, 64, 128)),
        ((5, 200, 64), (64, 72)),  # B shared (2-D): folded into one product
        ((6, 64, 128), (1, 128, 200)),  # B of batch extent 1
        ((200, 64), (6, 64, 136)),  # A shared
        ((1, 96, 64), (7, 64, 136)),  # A of batch extent 1
    ],
)
@pytest.mark.parametrize("od", ["f16", "f32"])
def test_gpu_batched_matches_float64(sa, sb, od):
    cp = pytest.importorskip("cupy")
    a, b = _operands(cp, sa, sb, sum(sa) + sum(sb))
    ref = _ref(a, b)
    batch = ref.shape[0]
    out = cp.full(ref.shape, cp.nan, dtype=cp.float16 if od == "f16" else cp.float32)
    got = runtime.gemm(a, b, out, out_dtype=od)
    assert got is out and not bool(cp.isnan(out).any())
    # small integers, K <= 136: every sum is exact in f32 and in f16 (|C| <= 1224 < 2048)
    assert float(cp.abs(out.astype(cp.float64) - ref).max()) == 0.0
    got2 = runtime.gemm(a, b, out_dtype=od)  # a new output
    assert got2.shape == ref.shape and bool(cp.allclose(got2.astype(cp.float64), out.astype(cp.float64)))
    info = runtime.last_launch
    assert info["batch"] == batch
    if cp.cuda.Device().compute_capability == "90" and runtime.tma_available():
        assert info["mode"] in ("kernel", "fold"), info["mode"]


@gpu
def test_gpu_batched_strided_batches_and_views():
    cp = pytest.importorskip("cupy")
    a, b = _operands(cp, (6, 130, 96), (3, 96, 144), 7)
    # every other A matrix (batch stride 2 * 130 * 96), B transposed matrices (column-major B)
    av = a[::2]
    bt = cp.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)
    out = cp.full((3, 130, 144), cp.nan, dtype=cp.float32)
    runtime.gemm(av, bt, out, out_dtype="f32")
    assert float(cp.abs(out - _ref(av, bt)).max()) == 0.0
    if cp.cuda.Device().compute_capability == "90" and runtime.tma_available():
        assert runtime.last_launch["mode"] == "kernel"
    # an output with padded rows and batches (ldc 160, batch stride 140 * 160)
    big = cp.full((3, 140, 160), cp.nan, dtype=cp.float32)
    view = big[:, :130, :144]
    runtime.gemm(av, bt, view, out_dtype="f32")
    assert float(cp.abs(view - _ref(av, bt)).max()) == 0.0
    assert bool(cp.isnan(big[:, 130:, :]).all()) and bool(cp.isnan(big[:, :, 144:]).all())
    # a batch stride the TMA cannot take (not a multiple of 16 bytes): one product per batch
    flat = cp.full(3 * 130 * 96 + 3, 1, dtype=cp.float16)
    odd = cp.lib.stride_tricks.as_strided(flat, (3, 130, 96), ((130 * 96 + 1) * 2, 96 * 2, 2))
    odd[...] = av
    r = runtime.gemm(odd, bt, out_dtype="f32")
    assert float(cp.abs(r - _ref(av, bt)).max()) == 0.0 and runtime.last_launch["mode"] == "loop"


@gpu
@pytest.mark.parametrize("act", ["none", "relu", "gelu"])
def test_gpu_batched_bias_and_activation(act):
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("the fused epilogue runs the TMA kernels of sm_90")
    import math

    a, b = _operands(cp, (4, 100, 72), (4, 72, 136), 3)
    bias = cp.random.default_rng(1).standard_normal(136, dtype=cp.float32)
    out = cp.full((4, 100, 136), cp.nan, dtype=cp.float32)
    runtime.gemm(a, b, out, out_dtype="f32", bias=bias, activation=act)
    x = _ref(a, b) + bias.astype(cp.float64)
    ref = {
        "none": x,
        "relu": cp.maximum(x, 0),
        "gelu": 0.5 * x * (1 + cp.asarray(np.vectorize(math.erf)(cp.asnumpy(x / math.sqrt(2))))),
    }[act]
    assert runtime.last_launch["mode"] == "kernel"
    err = float(cp.abs(out - ref).max() / (cp.abs(ref).max() + 1))
    assert err < (1e-6 if act in ("none", "relu") else 1e-4), (act, err)


def _sm90_tma(cp):
    return cp.cuda.Device().compute_capability == "90" and runtime.tma_available()


def _ints(cp, shape, seed, dt, lo=-4, hi=5):
    return cp.random.default_rng(seed).integers(lo, hi, size=shape).astype(dt)


@gpu
@pytest.mark.parametrize(
    "cform", ["batched", "shared-2d", "extent-1", "stride-0", "every-other", "padded", "in-place"]
)
@pytest.mark.parametrize("od", ["f32", "f16"])
def test_gpu_batched_alpha_beta_in_one_launch(cform, od):
    cp = pytest.importorskip("cupy")
    if not _sm90_tma(cp):
        pytest.skip("alpha/beta runs the TMA kernels of sm_90")
    odt = cp.float16 if od == "f16" else cp.float32
    nb, M, N, K = 3, 100, 136, 72
    a, b = _operands(cp, (nb, M, K), (nb, K, N), 5)
    full = _ints(cp, (nb, M, N), 6, odt)
    one = _ints(cp, (M, N), 7, odt)
    out = cp.full((nb, M, N), cp.nan, dtype=odt)
    c, cref = full, full
    if cform == "shared-2d":
        c, cref = one, one[None]
    elif cform == "extent-1":
        c, cref = one[None], one[None]
    elif cform == "stride-0":
        c, cref = cp.broadcast_to(one, (nb, M, N)), one[None]
        assert c.strides[0] == 0
    elif cform == "every-other":
        big = _ints(cp, (2 * nb, M, N), 8, odt)
        c = cref = big[::2]
    elif cform == "padded":
        big = _ints(cp, (nb, M, N + 8), 9, odt)
        c = cref = big[:, :, :N]
    elif cform == "in-place":
        out[...] = full
        c = out
    # small integers: 2 * A @ B - 3 * C is an integer below 2048 in magnitude, exact in f16
    ref = 2.0 * _ref(a, b) - 3.0 * cref.astype(cp.float64)
    got = runtime.gemm(a, b, out, out_dtype=od, c=c, alpha=2.0, beta=-3.0)
    assert got is out and not bool(cp.isnan(out).any())
    assert float(cp.abs(out.astype(cp.float64) - ref).max()) == 0.0, cform
    info = runtime.last_launch
    assert info["mode"] == "kernel" and info["config"].alpha_beta, info["mode"]


@gpu
@pytest.mark.parametrize("act", ["none", "relu"])
def test_gpu_batched_alpha_beta_with_a_bias_along_m(act):
    cp = pytest.importorskip("cupy")
    if not _sm90_tma(cp):
        pytest.skip("the fused epilogue runs the TMA kernels of sm_90")
    nb, M, N, K = 4, 130, 200, 64
    a, b = _operands(cp, (nb, M, K), (nb, K, N), 12)
    c = _ints(cp, (nb, M, N), 13, cp.float32)
    bias = _ints(cp, M, 14, cp.float16)
    out = cp.full((nb, M, N), cp.nan, dtype=cp.float32)
    runtime.gemm(
        a, b, out, out_dtype="f32", c=c, alpha=-1.0, beta=2.0, bias=bias, activation=act, bias_along="m"
    )
    x = -_ref(a, b) + 2.0 * c.astype(cp.float64) + bias.astype(cp.float64)[None, :, None]
    ref = cp.maximum(x, 0) if act == "relu" else x
    assert float(cp.abs(out - ref).max()) == 0.0
    assert runtime.last_launch["mode"] == "kernel"


@gpu
def test_gpu_batched_alpha_beta_loop_path():
    cp = pytest.importorskip("cupy")
    if not _sm90_tma(cp):
        pytest.skip("alpha/beta runs the TMA kernels of sm_90")
    # a batch stride that is not a multiple of 16 bytes: one product per batch, each with its C
    av, b = _operands(cp, (3, 130, 96), (3, 96, 144), 15)
    flat = cp.full(3 * 130 * 96 + 3, 1, dtype=cp.float16)
    odd = cp.lib.stride_tricks.as_strided(flat, (3, 130, 96), ((130 * 96 + 1) * 2, 96 * 2, 2))
    odd[...] = av
    full, one = _ints(cp, (3, 130, 144), 16, cp.float32), _ints(cp, (130, 144), 17, cp.float32)
    for c, cref in ((full, full), (one, one[None])):  # a C per batch, one shared C
        out = cp.full((3, 130, 144), cp.nan, dtype=cp.float32)
        runtime.gemm(odd, b, out, out_dtype="f32", c=c, alpha=2.0, beta=0.5)
        ref = 2.0 * _ref(av, b) + 0.5 * cref.astype(cp.float64)
        assert float(cp.abs(out - ref).max()) == 0.0 and runtime.last_launch["mode"] == "loop"


@gpu
def test_gpu_batched_stride_zero_shared_overlapping_batches_and_output_checks():
    cp = pytest.importorskip("cupy")
    fast = _sm90_tma(cp)
    a, b2 = _operands(cp, (4, 130, 96), (96, 144), 21)
    _a2, b3 = _operands(cp, (130, 96), (4, 96, 144), 22)
    # B of batch stride 0 (numpy broadcasting): shared -- the kernel with a given output,
    # one folded product without
    bb = cp.broadcast_to(b2, (4, 96, 144))
    assert bb.strides[0] == 0
    out = cp.full((4, 130, 144), cp.nan, dtype=cp.float32)
    runtime.gemm(a, bb, out, out_dtype="f32")
    assert float(cp.abs(out - _ref(a, bb)).max()) == 0.0
    if fast:
        assert runtime.last_launch["mode"] == "kernel" and runtime.last_launch["problem"].batch == "a"
    r = runtime.gemm(a, bb, out_dtype="f32")
    assert float(cp.abs(r - _ref(a, bb)).max()) == 0.0
    if fast:
        assert runtime.last_launch["mode"] == "fold"
    # A of batch stride 0: only B carries the batch
    ab_ = cp.broadcast_to(a[1], (4, 130, 96))
    out.fill(cp.nan)
    runtime.gemm(ab_, b3, out, out_dtype="f32")
    assert float(cp.abs(out - _ref(ab_, b3)).max()) == 0.0
    if fast:
        assert runtime.last_launch["mode"] == "kernel" and runtime.last_launch["problem"].batch == "b"
    # overlapping batches (a sliding window: batch i starts 32 rows after batch i - 1)
    base = _ints(cp, (130 + 3 * 32, 96), 23, cp.float16, -3, 4)
    win = cp.lib.stride_tricks.as_strided(base, (4, 130, 96), (32 * 96 * 2, 96 * 2, 2))
    r = runtime.gemm(win, b3, out_dtype="f32")
    assert float(cp.abs(r - _ref(win, b3)).max()) == 0.0 and runtime.last_launch["mode"] == "loop"
    # a plan made for a new output refuses an output of other strides; one made for that
    # output (padded rows and batches) writes only its view
    plan = runtime.gemm_plan(a, b3, out_dtype="f32")
    big = cp.full((4, 140, 160), cp.nan, dtype=cp.float32)
    view = big[:, :130, :144]
    with pytest.raises(GemmInputError, match="new output"):
        plan(a, b3, view)
    plan2 = runtime.gemm_plan(a, b3, view, out_dtype="f32")
    assert plan2(a, b3, view) is view
    assert float(cp.abs(view - _ref(a, b3)).max()) == 0.0
    assert bool(cp.isnan(big[:, 130:, :]).all()) and bool(cp.isnan(big[:, :, 144:]).all())
    if fast:
        assert plan.mode == plan2.mode == "kernel"


@gpu
@pytest.mark.parametrize("case", ["plain", "epilogue", "ragged"])
def test_gpu_batched_plan_replays_in_a_cuda_graph(case):
    cp = pytest.importorskip("cupy")
    if not _sm90_tma(cp):
        pytest.skip("the batched kernel runs on sm_90 with cuda-python")
    nb, M, N = 4, 130, 136
    K = 100 if case == "ragged" else 96  # K = 100: A's rows are not 16-byte multiples (staged)
    a, b = _operands(cp, (nb, M, K), (nb, K, N), 31)
    out = cp.full((nb, M, N), cp.nan, dtype=cp.float32)
    c = _ints(cp, (nb, M, N), 32, cp.float32)
    bias = _ints(cp, M, 33, cp.float32)
    if case == "epilogue":
        plan = runtime.gemm_plan(
            a, b, out, out_dtype="f32", bias=bias, activation="relu", bias_along="m", c=c
        )

        def call():
            return plan(a, b, out, bias, c=c, alpha=2.0, beta=-1.0)

        def want():
            x = 2.0 * _ref(a, b) - c.astype(cp.float64) + bias.astype(cp.float64)[None, :, None]
            return cp.maximum(x, 0)
    else:
        plan = runtime.gemm_plan(a, b, out, out_dtype="f32")

        def call():
            return plan(a, b, out)

        def want():
            return _ref(a, b)

    assert isinstance(plan, runtime.BatchedGemmPlan) and plan.mode == "kernel"
    cp.cuda.Device().synchronize()  # the operands were written on the legacy default stream
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        # compiled, maps encoded and (ragged) this stream's staging buffer made, outside the capture
        call()
        s.synchronize()
        s.begin_capture()
        call()
        g = s.end_capture()
    for seed in range(3):  # new data in the same buffers, replayed
        a[...] = _ints(cp, (nb, M, K), 40 + seed, cp.float16, -3, 4)
        b[...] = _ints(cp, (nb, K, N), 50 + seed, cp.float16, -3, 4)
        c[...] = _ints(cp, (nb, M, N), 60 + seed, cp.float32)
        bias[...] = _ints(cp, M, 70 + seed, cp.float32)
        out.fill(cp.nan)
        # the writes above ran on the legacy default stream, which a non-blocking stream
        # does not wait for
        cp.cuda.Device().synchronize()
        g.launch(stream=s)
        s.synchronize()
        assert float(cp.abs(out - want()).max()) == 0.0, (case, seed)


# ============================================================================ a plan (fake CuPy)
class _Fake3(_FakeArray):
    """The fake array of test_gpu_plan with a batch axis: ``x[i]`` is matrix ``i``."""

    def __getitem__(self, i):
        if not isinstance(i, int) or self.ndim != 3:
            raise TypeError("the fake takes x[i] of a 3-D array only")
        return _FakeArray(
            self._cp, self.shape[1:], self.strides[1:], self.dtype, self.data.ptr + i * self.strides[0]
        )

    def reshape(self, *shape):
        if len(shape) == 1:
            shape = tuple(shape[0])
        if len(shape) == 2:  # (batch * rows, cols) of contiguous matrices
            return _FakeArray(
                self._cp, shape, (shape[1] * self.itemsize, self.itemsize), self.dtype, self.data.ptr
            )
        return _Fake3(
            self._cp,
            shape,
            (shape[1] * shape[2] * self.itemsize,) + self.strides[-2:],
            self.dtype,
            self.data.ptr,
        )


def _arr3(cp, shape, dtype=np.float16, bstride=None):
    b, r, c = shape
    it = np.dtype(dtype).itemsize
    bs = bstride if bstride is not None else r * c * it
    return _Fake3(cp, shape, (bs, c * it, it), dtype, cp._alloc(bs * b + r * c * it))


@pytest.fixture
def fake3(fake_tma, monkeypatch):  # noqa: F811
    cp = fake_tma
    enc = []
    monkeypatch.setattr(
        plan_mod._Operand,
        "prepare_tma",
        lambda self, dt, k, mn, batch=None, rows=64: enc.append((self.major, batch)),
    )
    cp.enc = enc

    def empty(shape, dtype, order="C"):
        if isinstance(shape, int):  # a vector (the kept zero bias)
            shape = (1, shape)
        if len(shape) == 3:
            return _arr3(cp, shape, dtype)
        x = _FakeCupy.empty(cp, shape, dtype, order)
        return _Fake3(cp, x.shape, x.strides, x.dtype, x.data.ptr)

    cp.empty = empty
    cp.zeros = lambda shape, dtype: empty(shape, dtype)
    return cp


@needs_3d
def test_fake_batched_plan_is_one_launch_with_the_batch_parameters(fake3):
    cp = fake3
    a, b = _arr3(cp, (6, 256, 512)), _arr3(cp, (6, 512, 384))
    c = runtime.gemm(a, b)
    assert c.shape == (6, 256, 384)
    (ln,) = cp.launches
    assert ln["kinds"] == ["tmap", "tmap", "ptr", "i32", "i32", "i32", "i64", "i32", "i32", "i64"]
    assert ln["values"][2:] == [c.data.ptr, 256, 384, 512, 384, 1, 6, 256 * 384]
    info = runtime.last_launch
    assert info["mode"] == "kernel" and info["problem"].batch == "ab"
    # rank-3 maps at each operand's batch stride (elements)
    assert cp.enc == [("k", (6, 256 * 512)), ("n", (6, 512 * 384))]
    cfg = info["config"]
    tiles = -(-256 // cfg.bm) * -(-384 // cfg.bn) * 6
    assert ln["grid"][0] == cfg.cluster * min(-(-tiles // cfg.cluster), 132 // cfg.cluster)


@needs_3d
def test_fake_batched_plan_broadcasts_and_falls_back(fake3):
    cp = fake3
    # A shared (2-D): only B carries the batch; a rank-2 map for A
    a, b = cp.array((256, 512)), _arr3(cp, (4, 512, 384))
    runtime.gemm(a, b)
    assert runtime.last_launch["problem"].batch == "b" and cp.enc[-2:] == [("k", None), ("n", (4, 512 * 384))]
    # B of batch extent 1: shared too (with a given output: not folded into one 2-D product)
    runtime.gemm(_arr3(cp, (4, 256, 512)), _arr3(cp, (1, 512, 384)), cp.empty((4, 256, 384), np.float16))
    assert runtime.last_launch["mode"] == "kernel" and runtime.last_launch["problem"].batch == "a"
    # a batch stride that is not a multiple of 16 bytes: one 2-D gemm per batch
    n0 = len(cp.launches)
    odd = _arr3(cp, (3, 256, 512), bstride=256 * 512 * 2 + 8)
    runtime.gemm(odd, _arr3(cp, (3, 512, 384)))
    assert runtime.last_launch["mode"] == "loop" and len(cp.launches) == n0 + 3
    # an output whose batches overlap is not taken by the kernel
    out = _Fake3(cp, (3, 256, 384), (384 * 2, 384 * 2, 2), np.float16, cp._alloc(1 << 22))
    n0 = len(cp.launches)
    runtime.gemm(_arr3(cp, (3, 256, 512)), _arr3(cp, (3, 512, 384)), out)
    assert runtime.last_launch["mode"] == "loop" and len(cp.launches) == n0 + 3
    with pytest.raises(GemmInputError, match="batch extents differ"):
        runtime.gemm(_arr3(cp, (3, 256, 512)), _arr3(cp, (4, 512, 384)))
    with pytest.raises(GemmInputError, match="out must be"):
        runtime.gemm(_arr3(cp, (3, 256, 512)), _arr3(cp, (3, 512, 384)), cp.empty((2, 256, 384), np.float16))


@needs_3d
def test_fake_batched_plan_with_bias_passes_it_after_the_batch_stride(fake3):
    cp = fake3
    a, b = _arr3(cp, (2, 128, 256)), _arr3(cp, (2, 256, 256))
    bias = _FakeArray(cp, (128,), (4,), np.float32, cp._alloc(512))
    runtime.gemm(a, b, bias=bias, activation="relu", bias_along="m")
    ln = cp.launches[-1]
    assert ln["kinds"][-3:] == ["i32", "i64", "ptr"] and ln["values"][-1] == bias.data.ptr
    cfg = runtime.last_launch["config"]
    assert isinstance(cfg, EpilogueConfig) and cfg.bias_axis == "m"


@needs_3d
def test_fake_batched_plan_folds_a_shared_b_into_one_product(fake3):
    cp = fake3
    a, b = _arr3(cp, (4, 100, 512)), cp.array((512, 384))
    c = runtime.gemm(a, b)
    assert runtime.last_launch["mode"] == "fold" and c.shape == (4, 100, 384)
    ln = cp.launches[-1]
    assert ln["values"][0] != 0 and ln["values"][3:6] == [400, 384, 512]  # M = batch * 100


@needs_3d
def test_fake_batched_plan_stages_a_ragged_operand_with_one_memcpy2d(fake3):
    cp = fake3
    calls = []
    cp.cuda.runtime.memcpy2DAsync = lambda *a: calls.append(a)
    # K = 100: A's rows are not 16-byte multiples; its 5 contiguous batches are staged into one
    # kept (5, 256, 104) buffer, read through a rank-3 map of batch stride 256 * 104
    a, b = _arr3(cp, (5, 256, 100)), _arr3(cp, (5, 100, 384))
    for _ in range(3):
        runtime.gemm(a, b)
    info = runtime.last_launch
    assert info["mode"] == "kernel" and info["problem"].batch == "ab"
    assert cp.enc[-2:] == [("k", (5, 256 * 104)), ("n", (5, 100 * 384))]
    assert len(calls) == 3  # one 2-D copy per call, the buffer kept
    dst, dpitch, src, spitch, width, height, kind, _stream = calls[-1]
    assert (dpitch, src, spitch, width, height, kind) == (104 * 2, a.data.ptr, 200, 200, 5 * 256, 3)
    assert {ln["values"][0] for ln in cp.launches[-3:]} == {cp.launches[-1]["values"][0]}


@needs_3d
def test_a_tma_load_of_the_wrong_batch_is_refused(monkeypatch):
    real = wgmma_ws.tma_loads_ir

    def first_batch(*args, **kw):  # every batched box read from batch 0
        if kw.get("c2") is not None:
            kw["c2"] = kir.Const(0)
        return real(*args, **kw)

    monkeypatch.setattr(wgmma_ws, "tma_loads_ir", first_batch)
    with pytest.raises(ProofFailedError) as e:
        generate_sm90(BASE, GemmProblem("k", "n", batch="ab"), memo=False)
    assert e.value.condition == "TMA batch coordinate" and "A TMA box" in str(e.value)


@needs_3d
def test_batched_kernel_logs_its_batch_coordinates():
    k = generate_sm90(BASE, GemmProblem("k", "n", batch="b"))
    line = next(p.line() for p in k.proofs if "batched TMA loads" in p.line())
    assert "operands B" in line and "reads batch bidx = t / tpb" in line


@needs_3d
def test_fake_batched_gemm_plan_is_kept_and_checks_its_arguments(fake3):
    cp = fake3
    a, b = _arr3(cp, (3, 128, 256)), _arr3(cp, (3, 256, 128))
    plan = runtime.gemm_plan(a, b)
    assert isinstance(plan, runtime.BatchedGemmPlan) and plan.mode == "kernel"
    n0 = len(cp.launches)
    out = plan(a, b)
    plan(a, b, out)
    assert len(cp.launches) == n0 + 2 and cp.launches[-1]["values"][2] == out.data.ptr
    with pytest.raises(GemmInputError, match="differ from the plan"):
        plan(_arr3(cp, (4, 128, 256)), _arr3(cp, (4, 256, 128)))
    # gemm keeps one plan per signature
    runtime.gemm(a, b)
    p1 = runtime.last_launch["plan"]
    runtime.gemm(a, b)
    assert runtime.last_launch["plan"] is p1
    with pytest.raises(GemmInputError, match="new output"):
        plan(a, b, _Fake3(cp, (3, 128, 128), (128 * 136 * 2, 136 * 2, 2), np.float16, cp._alloc(1 << 20)))


@needs_3d
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_batched_kernel_with_a_bf16_bias_along_m_compiles_for_sm90a(tmp_path):
    cfg = EpilogueConfig(BASE, "gelu", False, "m", "bf16")
    _nvcc_sm90a(generate_epilogue(cfg, GemmProblem("m", "k", "bf16", "f32", batch="ab")).source, tmp_path)


@needs_3d
def test_fake_batched_plan_reads_a_batch_stride_of_zero_as_shared(fake3):
    cp = fake3
    a = _arr3(cp, (4, 256, 512))
    b = _Fake3(cp, (4, 512, 384), (0, 384 * 2, 2), np.float16, cp._alloc(512 * 384 * 2))  # one B
    runtime.gemm(a, b, cp.empty((4, 256, 384), np.float16))
    info = runtime.last_launch
    assert info["mode"] == "kernel" and info["problem"].batch == "a"
    assert cp.enc[-2:] == [("k", (4, 256 * 512)), ("n", None)]
    assert runtime.gemm(a, b).shape == (4, 256, 384) and runtime.last_launch["mode"] == "fold"


@needs_3d
def test_fake_batched_plan_takes_overlapping_batches_one_at_a_time(fake3):
    cp = fake3
    # batch i starts 64 rows after batch i - 1 (a sliding window over one 448 x 512 array)
    a = _Fake3(cp, (4, 256, 512), (64 * 512 * 2, 512 * 2, 2), np.float16, cp._alloc(448 * 512 * 2))
    n0 = len(cp.launches)
    runtime.gemm(a, _arr3(cp, (4, 512, 384)))
    assert runtime.last_launch["mode"] == "loop" and len(cp.launches) == n0 + 4


# ============================================================================ alpha/beta, one launch (fake)
_BASE_KINDS = ["tmap", "tmap", "ptr", "i32", "i32", "i32", "i64", "i32", "i32", "i64"]


@needs_3d
def test_fake_batched_plan_fuses_alpha_beta_in_one_launch(fake3):
    cp = fake3
    a, b = _arr3(cp, (3, 128, 256)), _arr3(cp, (3, 256, 128))
    c = _arr3(cp, (3, 128, 128))
    n0 = len(cp.launches)
    out = runtime.gemm(a, b, c=c, alpha=2.0, beta=0.5)
    assert len(cp.launches) == n0 + 1 and out.shape == (3, 128, 128)
    ln = cp.launches[-1]
    # the bias (a kept zero vector), alpha, beta, the C input, its row and batch strides
    assert ln["kinds"] == _BASE_KINDS + ["ptr", "f32", "f32", "ptr", "i64", "i64"]
    assert ln["values"][2] == out.data.ptr and ln["values"][8:10] == [3, 128 * 128]
    assert ln["values"][10] != 0 and ln["values"][11:] == [2.0, 0.5, c.data.ptr, 128, 128 * 128]
    info = runtime.last_launch
    assert info["mode"] == "kernel" and info["problem"].batch == "ab"
    cfg = info["config"]
    assert isinstance(cfg, EpilogueConfig) and cfg.alpha_beta and cfg.activation == "none"
    # the kept plan takes new alpha, beta and another C of the same signature
    c2 = _arr3(cp, (3, 128, 128))
    runtime.gemm(a, b, out, c=c2, alpha=-1.0, beta=3.0)
    assert cp.launches[-1]["values"][11:14] == [-1.0, 3.0, c2.data.ptr]
    # in place: c is the output
    runtime.gemm(a, b, out, c=out, alpha=1.0, beta=1.0)
    assert cp.launches[-1]["values"][2] == cp.launches[-1]["values"][13] == out.data.ptr


@needs_3d
def test_fake_batched_plan_shares_a_broadcast_c_with_batch_stride_zero(fake3):
    cp = fake3
    a, b = _arr3(cp, (4, 128, 256)), _arr3(cp, (4, 256, 192))
    padded = cp.array((128, 192), ld=200)  # a 2-D C with padded rows: ldci 200
    cases = [
        (cp.array((128, 192)), 192),
        (padded, 200),
        (_arr3(cp, (1, 128, 192)), 192),
        (_Fake3(cp, (4, 128, 192), (0, 192 * 2, 2), np.float16, cp._alloc(128 * 192 * 2)), 192),
    ]
    for c, ldci in cases:
        runtime.gemm(a, b, c=c, beta=1.0, activation="relu")
        ln = cp.launches[-1]
        assert runtime.last_launch["mode"] == "kernel"
        assert ln["values"][-3:] == [c.data.ptr, ldci, 0], (c.shape, c.strides)
    # batches of C further apart than one matrix (every other matrix of a bigger array)
    c = _Fake3(cp, (4, 128, 192), (2 * 128 * 192 * 2, 192 * 2, 2), np.float16, cp._alloc(1 << 21))
    runtime.gemm(a, b, c=c, beta=1.0)
    assert cp.launches[-1]["values"][-2:] == [192, 2 * 128 * 192]


@needs_3d
def test_fake_batched_plan_checks_its_c_input(fake3):
    cp = fake3
    a, b = _arr3(cp, (2, 128, 256)), _arr3(cp, (2, 256, 128))
    for bad in (
        _arr3(cp, (2, 128, 128), np.float32),  # not the output's dtype
        _arr3(cp, (3, 128, 128)),  # another batch extent
        cp.array((128, 128), order="F"),  # columns not of unit stride
        _arr3(cp, (2, 128, 64)),
    ):
        with pytest.raises(GemmInputError, match=r"c \(beta's input\)"):
            runtime.gemm(a, b, c=bad, beta=1.0)
    with pytest.raises(GemmInputError, match="needs the C input"):
        runtime.gemm(a, b, alpha=2.0)
    c = _arr3(cp, (2, 128, 128))
    plan = runtime.gemm_plan(a, b, c=c)
    assert isinstance(plan, runtime.BatchedGemmPlan) and plan.mode == "kernel" and plan.alpha_beta
    plan(a, b, c=c, alpha=0.25, beta=4.0)
    assert cp.launches[-1]["values"][11:14] == [0.25, 4.0, c.data.ptr]
    with pytest.raises(GemmInputError, match="pass c"):
        plan(a, b)
    with pytest.raises(GemmInputError, match="differ from the plan"):
        plan(a, b, c=_arr3(cp, (2, 128, 128), bstride=128 * 136 * 2))
    # a plan without alpha/beta refuses them (it would drop them silently otherwise)
    plain = runtime.gemm_plan(a, b)
    with pytest.raises(GemmInputError, match="without alpha/beta"):
        plain(a, b, alpha=2.0)


@needs_3d
def test_fake_batched_loop_path_passes_each_batchs_c(fake3):
    cp = fake3
    cp.cuda.runtime.memcpy2DAsync = lambda *a: None  # (an unaligned batch is staged)
    # a batch stride the TMA cannot take: one 2-D gemm per batch, each with its batch's C
    odd = _arr3(cp, (3, 256, 512), bstride=256 * 512 * 2 + 8)
    b = _arr3(cp, (3, 512, 384))
    c = _arr3(cp, (3, 256, 384))
    n0 = len(cp.launches)
    runtime.gemm(odd, b, c=c, alpha=2.0, beta=0.5)
    assert runtime.last_launch["mode"] == "loop"
    lns = cp.launches[n0:]
    assert len(lns) == 3
    # the 2-D epilogue's parameters end with alpha, beta, Cin, ldci
    assert [ln["values"][-2] for ln in lns] == [c.data.ptr + i * 256 * 384 * 2 for i in range(3)]
    assert all(ln["values"][-4:-2] == [2.0, 0.5] for ln in lns)
    shared = cp.array((256, 384))
    n0 = len(cp.launches)
    runtime.gemm(odd, b, c=shared, beta=1.0)
    assert [ln["values"][-2] for ln in cp.launches[n0:]] == [shared.data.ptr] * 3


# ======================================================== the batched plan's later additions (CPU)
@needs_3d
def test_a_shared_operand_read_at_a_batch_coordinate_is_refused(monkeypatch):
    # B is shared (batch="a"): a box of B given a batch coordinate is refused by name
    real = wgmma_ws.tma_loads_ir

    def shared_with_batch(*args, **kw):
        if kw.get("c2") is None:
            kw["c2"] = kir.Const(0)
        return real(*args, **kw)

    monkeypatch.setattr(wgmma_ws, "tma_loads_ir", shared_with_batch)
    with pytest.raises(ProofFailedError) as e:
        generate_sm90(BASE, GemmProblem("k", "n", batch="a"), memo=False)
    assert e.value.condition == "TMA batch coordinate" and "B TMA box" in str(e.value)
    assert "is shared: no batch coordinate" in str(e.value)


@needs_3d
def test_fake_batched_plan_reads_an_a_of_batch_stride_zero_as_shared(fake3):
    cp = fake3
    a = _Fake3(cp, (4, 256, 512), (0, 512 * 2, 2), np.float16, cp._alloc(256 * 512 * 2))  # one A
    b = _arr3(cp, (4, 512, 384))
    runtime.gemm(a, b)
    info = runtime.last_launch
    assert info["mode"] == "kernel" and info["problem"].batch == "b"
    assert cp.enc[-2:] == [("k", None), ("n", (4, 512 * 384))]


@needs_3d
def test_fake_batched_plan_stages_a_ragged_shared_operand_once(fake3):
    cp = fake3
    calls = []
    cp.cuda.runtime.memcpy2DAsync = lambda *a: calls.append(a)
    # A shared by batch stride 0, K = 100 (rows not 16-byte multiples): its one matrix is
    # staged into a kept (256, 104) buffer read through a rank-2 map; B carries the batch
    a = _Fake3(cp, (3, 256, 100), (0, 200, 2), np.float16, cp._alloc(256 * 200))
    b = _arr3(cp, (3, 100, 384))
    for _ in range(3):
        runtime.gemm(a, b)
    info = runtime.last_launch
    assert info["mode"] == "kernel" and info["problem"].batch == "b"
    assert cp.enc[-2:] == [("k", None), ("n", (3, 100 * 384))]
    # the first call makes the buffer (an element-wise copy), later calls one 2-D copy each
    assert len(calls) == 2
    dst, dpitch, src, spitch, width, height, kind, _stream = calls[-1]
    assert (dpitch, src, spitch, width, height, kind) == (104 * 2, a.data.ptr, 200, 200, 256, 3)


@needs_3d
def test_fake_batched_plan_takes_an_overlapping_b_one_batch_at_a_time(fake3):
    cp = fake3
    # B's batch i starts 64 rows after batch i - 1: overlapping, so not through a rank-3 map
    b = _Fake3(cp, (3, 512, 384), (64 * 384 * 2, 384 * 2, 2), np.float16, cp._alloc(640 * 384 * 2))
    n0 = len(cp.launches)
    runtime.gemm(_arr3(cp, (3, 256, 512)), b)
    assert runtime.last_launch["mode"] == "loop" and len(cp.launches) == n0 + 3
