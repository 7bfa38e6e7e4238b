"""Split-K (gpu/splitk.py): the split kernel rewritten on the warp-specialized kernel's IR
and its fix-up kernel -- the obligations (unit map, K chunks, workspace planes, the IR's own
accesses and protocol), planted bugs refused by name, the configuration rules, the plan
rule's choice, a plan's two launches (fake CuPy), the sources compiled for sm_90a, and with
a GPU the results against float64."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_plan import _FakeCupy

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, ProofFailedError
from layoutproof.gpu.host import cache, device, runtime
from layoutproof.gpu.host import plan as plan_mod
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.kernels import splitk
from layoutproof.gpu.kernels.splitk import SplitKConfig, generate_splitk, k_chunks
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

WS = dict(loader="tma", schedule="ws")
CFG = SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **WS), 4)
NVCC = shutil.which("nvcc")


# ============================================================================ obligations
@pytest.mark.parametrize(
    "prob", [GemmProblem("k", "n"), GemmProblem("m", "k", out_dtype="bf16", dtype="bf16")]
)
def test_split_kernel_carries_the_split_obligations(prob):
    kk = generate_splitk(CFG, prob)
    src = kk.gemm.source
    lines = [p.line() for p in kk.gemm.proofs]
    assert any("lp_split" in x and "bijection" in x for x in lines)
    assert any("split-K chunks [kb, ke) = [sk * KT / 4, (sk + 1) * KT / 4)" in x for x in lines)
    assert any("split-K workspace W[s, r, c]" in x for x in lines)
    # the base kernel's plan proofs, then the IR's own obligations on the rewritten tree
    assert any("persistent scheduler" in x for x in lines)
    assert any("protocol read from the IR" in x for x in lines)
    assert src.count("//   [") == len(kk.gemm.proofs)
    cov = [x for x in src.splitlines() if x.startswith("// coverage")]
    assert cov and cov[0].startswith("// coverage: 9 of 9 memory accesses")
    assert src.count("for (int kt = kb; kt < ke; ++kt)") == 2  # producer and consumers
    assert src.count("lp_split(t, tiles, tile, sk);") == 2
    assert "lp_out_t* const Cs = C + (long long)sk * M * ldc;" in src
    assert "typedef float lp_out_t;" in src  # the partials are f32 whatever C's type
    red = kk.reduce.source
    assert "coverage: 2 of 2 memory accesses" in red
    cvt = "__float2bfloat16_rn" if prob.out == "bf16" else "__float2half_rn"
    assert f"= {cvt}(acc);" in red and "for (int s = 0; s < 4; ++s)" in red


def test_the_fixup_waits_for_the_split_kernel_first():
    kk = generate_splitk(CFG, GemmProblem("k", "n"))
    assert any(p.kind == "protocol" and "fix-up ordering" in p.statement for p in kk.reduce.proofs)
    body = [x.strip() for x in kk.reduce.source.split("long long ldc) {")[1].splitlines()]
    assert [x for x in body if x and not x.startswith("//")][0] == "lp_griddep_wait();"
    assert kk.gemm.source.count("lp_griddep_launch();") == 1
    # the split kernel waits for the previous grid (the last call's fix-up) first, and is told so
    body = [x.strip() for x in kk.gemm.source.split("int c_vec) {")[1].splitlines()]
    assert [x for x in body if x and not x.startswith("//")][:2] == [
        "lp_griddep_wait();",
        "lp_griddep_launch();",
    ]
    assert any(p.kind == "protocol" and "split kernel ordering" in p.statement for p in kk.gemm.proofs)
    assert kk.reduce.source.count("lp_griddep_launch();") == 1


def test_a_split_kernel_without_the_wait_first_is_refused():
    import dataclasses

    kk = generate_splitk(CFG, GemmProblem("k", "n"))
    k = kk.gemm.ir
    wait = next(st for st in k.body.body if isinstance(st, kir.Eval) and st.e.name == splitk.GRID_WAIT)
    rest = tuple(st for st in k.body.body if st is not wait)
    moved = rest[:4] + (wait,) + rest[4:]  # after the first statements: not first any more
    for body in (rest, moved, (kir.If(kir.THREAD_IDX.lt(32), kir.block(wait)),) + rest):
        bad = dataclasses.replace(k, body=kir.Block(body))
        with pytest.raises(ProofFailedError) as e:
            splitk.prove_split_order(bad, ProofLog())
        assert e.value.condition == "split kernel after the previous grid"
    splitk.prove_split_order(k, ProofLog())


def test_a_fixup_without_the_wait_or_with_a_guarded_wait_is_refused():
    import dataclasses

    k = splitk.reduce_ir(4, "f16", "lp_fix")
    wait = next(st for st in k.body.body if isinstance(st, kir.Eval))
    rest = tuple(st for st in k.body.body if st is not wait)
    for body in (rest, (kir.If(kir.THREAD_IDX.lt(32), kir.block(wait)),) + rest):
        bad = dataclasses.replace(k, body=kir.Block(body))
        with pytest.raises(ProofFailedError) as e:
            splitk.prove_fixup_order(bad, ProofLog())
        assert e.value.condition == "fix-up after the split kernel"
    splitk.prove_fixup_order(k, ProofLog())


@pytest.mark.parametrize("splits", [2, 3, 7, 16])
def test_k_chunks_partition_every_k(splits):
    for kt in range(0, 300):
        ch = k_chunks(kt, splits)
        assert ch[0][0] == 0 and ch[-1][1] == kt
        assert all(a[1] == b[0] for a, b in zip(ch, ch[1:]))
        lens = [e - b for b, e in ch]
        assert min(lens) >= 0 and max(lens) - min(lens) <= 1
        assert kt < splits or min(lens) >= 1


def test_overlapping_chunks_are_refused(monkeypatch):
    def bad(sk, kt, splits):  # each chunk runs one k-block too far: chunks overlap
        return (sk * kt) / splits, ((sk + 1) * kt) / splits + 1

    monkeypatch.setattr(splitk, "k_bounds_ir", bad)
    with pytest.raises(ProofFailedError) as e:
        generate_splitk(CFG, GemmProblem("k", "n"), memo=False)
    assert e.value.condition == "k chunks partition [0, KT)"


def test_a_chunk_that_misses_the_last_k_block_is_refused():
    sk, kt = kir.Var("sk"), kir.Var("KT")
    with pytest.raises(ProofFailedError) as e:
        splitk.prove_k_partition(4, ProofLog(), sk * kt / 4, (sk + 1) * (kt - 1) / 4, sk, kt)
    assert e.value.condition == "k chunks partition [0, KT)"


def test_a_wrong_workspace_plane_is_refused(monkeypatch):
    # plane sk at sk * ldc instead of sk * M * ldc: planes overlap; the stores' claims,
    # written with the proven workspace offset, refute the kernel's address
    monkeypatch.setattr(splitk, "_plane_ptr", lambda C, sk, M, ldc: C + kir.Cast("long long", sk) * ldc)
    with pytest.raises(ProofFailedError) as e:
        generate_splitk(CFG, GemmProblem("k", "n"), memo=False)
    assert e.value.condition == "address equals its layout"


def test_a_wrong_fixup_read_is_refused(monkeypatch):
    monkeypatch.setattr(splitk, "_reduce_index", lambda s, r, c, M, N: (kir.Cast("long long", s) + r) * N + c)
    with pytest.raises(ProofFailedError) as e:
        splitk.generate_splitk(CFG, GemmProblem("k", "n"), memo=False)
    assert e.value.condition == "address equals its layout"


def test_a_broken_unit_map_is_refused(monkeypatch):
    def bad():
        u, tiles = kir.Var("u"), kir.Var("tiles")
        tile, sk = kir.Var("tile"), kir.Var("sk")
        # (u % tiles, u / tiles) with the chunk taken modulo 2: units collide for S > 2
        return (u, tiles, tile, sk), [kir.Assign(tile, u % tiles), kir.Assign(sk, u / tiles % 2)]

    monkeypatch.setattr(splitk, "_split_ir", bad)
    splitk._split_proofs.cache_clear()
    try:
        with pytest.raises(ProofFailedError) as e:
            splitk.prove_split(ProofLog(), max_tiles=8)
        assert e.value.condition == "split map bijective"
    finally:
        splitk._split_proofs.cache_clear()


def test_a_workspace_offset_that_overlaps_is_refused(monkeypatch):
    monkeypatch.setattr(
        splitk, "workspace_offset_ir", lambda s, r, c, m, ldw: kir.Cast("long long", s) * ldw + r * ldw + c
    )
    with pytest.raises(ProofFailedError) as e:
        splitk.prove_workspace(3, ProofLog(), max_mn=4)
    assert e.value.condition == "workspace planes disjoint and in bounds"


def test_splitk_config_rules():
    for bad in (
        SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **WS), 1),
        SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **WS), 17),
        SplitKConfig(Sm90Config(bm=128, bn=256, stages=4, cluster=2, **WS), 2),
        SplitKConfig(Sm90Config(bm=128, bn=128, stages=4, loader="tma"), 2),
        SplitKConfig(GemmConfigError, 2),
    ):
        with pytest.raises(GemmConfigError):
            bad.validate()
    assert CFG.key() == "sm90_64x128x64_s8_g8_tma_ws_sk4"
    assert (CFG.bm, CFG.bn, CFG.threads, CFG.schedule, CFG.cluster) == (64, 128, 256, "ws", 1)


# ============================================================================ the rule
def test_the_rule_splits_k_where_tiles_leave_sms_idle():
    for shape in [(512, 512, 28672), (16, 4096, 4096), (1, 4096, 4096)]:
        cfg = P.choose_config(*shape, hopper=True, tma=True)
        assert isinstance(cfg, SplitKConfig), shape
        tiles = -(-shape[0] // cfg.bm) * -(-shape[1] // cfg.bn)
        assert tiles * cfg.splits <= 132 and -(-shape[2] // 64) >= 4 * cfg.splits
    for shape in [
        (8192, 8192, 8192),
        (1024, 1024, 16384),
        (128, 8192, 8192),
        (4096, 4096, 4096),
        (64, 64, 64),
    ]:
        assert not isinstance(P.choose_config(*shape, hopper=True, tma=True), SplitKConfig), shape
    # off Hopper, without TMA, or with explicit candidates: never split
    assert not isinstance(P.choose_config(16, 4096, 4096, hopper=True, tma=False), SplitKConfig)
    assert not isinstance(P.choose_config(16, 4096, 4096, hopper=False, tma=False), SplitKConfig)
    cands = P.hopper_candidates(True)
    assert P.choose_config(16, 4096, 4096, hopper=True, tma=True, candidates=cands) in cands


def test_splitk_candidates_fill_at_most_one_wave():
    base = P.hopper_candidates(True)
    for m, n, k in [(16, 4096, 4096), (512, 512, 28672), (1, 14336, 4096), (300, 700, 900)]:
        for c in P.splitk_candidates(m, n, k, base):
            c.validate()
            tiles = -(-m // c.bm) * -(-n // c.bn)
            assert tiles < 132 and tiles * c.splits <= 132
            assert -(-k // 64) >= P.SPLITK_MODEL["min_kblocks"] * c.splits
    assert P.splitk_candidates(70000, 64, 65536, base) == ()  # the fix-up grid's row limit
    assert P.splitk_candidates(8192, 8192, 8192, base) == ()  # enough tiles already


# ============================================================================ a plan (fake CuPy)
@pytest.fixture
def fake_tma(monkeypatch, tmp_path):
    cp = _FakeCupy()
    monkeypatch.setenv("LAYOUTPROOF_CACHE", str(tmp_path))
    monkeypatch.setattr(device, "_CUPY", [cp])
    monkeypatch.setattr(device, "_DEVICE_FACTS", {})
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setattr(runtime, "_PLANS", {})
    monkeypatch.setattr(device, "tma_available", lambda: True)
    monkeypatch.setenv("LAYOUTPROOF_PDL", "0")  # the fake has no driver for cuLaunchKernelEx
    cp.box_rows = []  # (operand's major-ness, the rows of its TMA box) per map built

    def prepare(self, dt, k, mn, batch=None, rows=64):
        cp.box_rows.append((self.major, rows))

    monkeypatch.setattr(plan_mod._Operand, "prepare_tma", prepare)
    monkeypatch.setattr(plan_mod._Operand, "tensor_map", lambda self, ptr: np.zeros(128, np.uint8))
    cp.float32 = np.float32

    def empty(shape, dtype, order="C"):
        if isinstance(shape, int):
            shape = (1, shape)
        return _FakeCupy.empty(cp, shape, dtype, order)

    cp.empty = empty
    cp.uint32 = np.uint32
    cp.zeros = empty  # the fake's memory holds nothing: zeros is empty
    device._sm_count_of.cache_clear()
    yield cp
    device._sm_count_of.cache_clear()


def test_fake_splitk_plan_launches_the_split_kernel_then_the_fixup(fake_tma):
    cp = fake_tma
    m, n, k = 16, 4096, 4096
    a, b = cp.array((m, k)), cp.array((k, n))
    c = runtime.gemm(a, b, config=CFG)
    plan = runtime.last_launch["plan"]
    g, f = cp.launches
    assert g["kinds"] == ["tmap", "tmap", "ptr", "i32", "i32", "i32", "i64", "i32"]
    ws = plan._ws.data.ptr
    assert g["values"][2:] == [ws, m, n, k, n, 1]  # partials into the workspace, row stride n
    units = 1 * (n // CFG.bn) * CFG.splits
    assert g["grid"] == (min(units, 132), 1, 1) and g["block"] == (CFG.threads, 1, 1)
    assert f["kinds"] == ["ptr", "ptr", "i32", "i32", "i64"]
    assert f["values"] == [ws, c.data.ptr, m, n, n]
    assert f["grid"] == (n // splitk.REDUCE_THREADS, m, 1) and f["block"] == (splitk.REDUCE_THREADS, 1, 1)
    assert plan._ws.shape == (1, CFG.splits * m * n)
    # the wgmma rule picks split-K for this shape by itself (path='auto' may take the unsplit
    # 16-row mma.sync tile instead: tests/gpu/test_gpu_plan.py)
    runtime.gemm(a, b, path="wgmma")
    assert isinstance(runtime.last_launch["config"], SplitKConfig)


SERIAL = SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **WS), 4, "serial")


def test_fake_serial_splitk_plan_is_one_launch_with_the_output_and_counters(fake_tma):
    cp = fake_tma
    m, n, k = 16, 4096, 4096
    a, b = cp.array((m, k)), cp.array((k, n))
    c = runtime.gemm(a, b, config=SERIAL)
    plan = runtime.last_launch["plan"]
    (g,) = cp.launches  # no fix-up kernel
    assert g["kinds"] == ["tmap", "tmap", "ptr", "i32", "i32", "i32", "i64", "i32", "ptr", "i64", "ptr"]
    ws = plan._ws.data.ptr
    # partials into the workspace (row stride n); the reducer writes C (row stride n); the
    # counters: one per (warpgroup, tile), allocated zeroed once
    assert g["values"][2:] == [ws, m, n, k, n, 1, c.data.ptr, n, plan._counters.data.ptr]
    assert plan._counters.shape == (1, SERIAL.base.warpgroups * (n // SERIAL.bn))
    assert plan._fix is None
    runtime.gemm(a, b, config=SERIAL)
    assert len(cp.launches) == 2 and cp.launches[1]["values"][-1] == plan._counters.data.ptr
    # the rule splits this decode shape by itself: with the fix-up kernel for a plain
    # product (measured faster), and a fused epilogue in that fix-up kernel too (the wgmma
    # rule: path='auto' may take the unsplit mma.sync tile for a plain product)
    runtime.gemm(a, b, path="wgmma")
    got = runtime.last_launch["config"]
    assert isinstance(got, SplitKConfig) and got.reduction == "kernel"
    runtime.gemm(a, b, activation="relu", path="wgmma")
    got = runtime.last_launch["config"]
    assert isinstance(got, SplitKConfig) and got.reduction == "kernel" and got.activation == "relu"
    # gemm's default path ('auto') takes the unsplit 16-row mma.sync tile for the plain product
    # (plan.mma_decode, measured faster than the split on the H100), and the split for the fused one
    runtime.gemm(a, b)
    assert runtime.last_launch["config"] == P.mma_decode(m, n, k)
    assert (
        runtime.last_launch["config"] is not None
        and cp.launches[-1]["grid"][0] * cp.launches[-1]["grid"][1] == n // 32
    )
    # the serial split given as the configuration applies the epilogue in its reducer
    runtime.gemm(a, b, activation="relu", config=SERIAL)
    assert isinstance(runtime.last_launch["config"], SplitKConfig)
    assert cp.launches[-1]["kinds"][8:] == ["ptr", "i64", "ptr", "ptr"]  # D, ldd, counters, bias


def test_fake_serial_splitk_with_the_epilogue_passes_bias_after_the_counters(fake_tma):
    cp = fake_tma
    m, n, k = 16, 4096, 4096
    a, b = cp.array((m, k)), cp.array((k, n))
    bias = cp.empty((1, n), np.float32)
    bias.shape, bias.strides = (n,), (4,)
    runtime.gemm(a, b, config=SERIAL, bias=bias, activation="silu")
    cfg = runtime.last_launch["config"]
    assert cfg == SplitKConfig(SERIAL.base, 4, "serial", "silu")
    g = cp.launches[-1]
    assert g["kinds"][8:] == ["ptr", "i64", "ptr", "ptr"] and g["values"][-1] == bias.data.ptr


def test_serial_config_rules_and_keys():
    assert SERIAL.key() == "sm90_64x128x64_s8_g8_tma_ws_sk4s"
    ep = SplitKConfig(SERIAL.base, 4, "serial", "gelu", True)
    assert ep.validate().key() == "sm90_64x128x64_s8_g8_tma_ws_sk4s_biasgelu_ab"
    for bad in (
        SplitKConfig(SERIAL.base, 4, "tree"),
        SplitKConfig(SERIAL.base, 4, "cluster", "relu"),  # the cluster reduction has no epilogue
        SplitKConfig(SERIAL.base, 4, "serial", "tanh"),
        SplitKConfig(SERIAL.base, 4, "serial", None, True),
    ):
        with pytest.raises(GemmConfigError):
            bad.validate()
    import json

    for cfg in (SERIAL, CFG):
        assert runtime.config_from_entry(json.loads(json.dumps(runtime.config_entry(cfg)))) == cfg


@pytest.mark.parametrize("shape", [(1, 4096, 4096), (16, 4096, 4096), (1, 4096, 11008), (16, 8192, 8192)])
def test_the_rule_splits_decode_shapes_with_the_epilogue_in_the_fixup(shape, monkeypatch):
    # the split rule itself: A's short box (rule.SHORT_A_RULE), which takes a 64-row output's
    # pick for these rows, is off (tests/gpu/test_gpu_plan.py covers it)
    monkeypatch.setitem(P.SHORT_A_RULE, "rows", ())
    plain = P.choose_config(*shape, GemmProblem(), hopper=True, tma=True, cluster=False)
    assert isinstance(plain, SplitKConfig) and plain.reduction == "kernel", plain.key()
    # by default the cluster reduction replaces the plane split where it measured faster
    dflt = P.choose_config(*shape, GemmProblem(), hopper=True, tma=True)
    assert dflt == (P.cluster_split(*shape) or plain), dflt.key()
    # a fused epilogue: the plain split, its fix-up kernel applying the epilogue (the serial
    # reduction measured slower on every split shape)
    ep = P.choose_config(*shape, GemmProblem(), hopper=True, tma=True, epilogue=True)
    assert ep == plain, ep.key()
    # the fused kernels' pick (the rule before the fix-up epilogue) splits serially
    (t, route, cfg), *_ = P.epilogue_routes(*shape, GemmProblem())
    assert route == "fused" and isinstance(cfg, SplitKConfig) and cfg.reduction == "serial", cfg.key()
    assert cfg in P.splitk_candidates(*shape, P.hopper_candidates(True), reduction="serial")
    # the serial reduction's cost: one SM reads the tile's planes, and its excess over the fix-up
    plane = cfg.splits * min(cfg.bm, shape[0]) * cfg.bn * 4
    fix = SplitKConfig(cfg.base, cfg.splits)
    tail = P.SPLITK_MODEL["serial_us"] + P.SPLITK_MODEL["serial_excess_us"]
    tail += plane / (P.SPLITK_MODEL["serial_gbs"] * 1e3)
    base = P.estimate_us(fix, *shape) - P.SPLITK_MODEL["fixup_us"]
    base -= (cfg.splits * 4 + 2) * shape[0] * shape[1] / (P.SPLITK_MODEL["fixup_gbs"] * 1e3)
    assert P.estimate_us(cfg, *shape) == pytest.approx(base + tail)


# ============================================================================ nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_split_and_fixup_sources_compile_for_sm90a_without_spills(tmp_path):
    kk = generate_splitk(SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, **WS), 3), GemmProblem("k", "k"))
    _nvcc_sm90a(kk.gemm.source, tmp_path)
    _nvcc_sm90a(kk.reduce.source, tmp_path)


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    "cfg, prob",
    [
        (SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, **WS), 3, "serial"), GemmProblem("k", "k")),
        (
            SplitKConfig(Sm90Config(bm=64, bn=256, stages=5, **WS), 8, "serial", "gelu", True),
            GemmProblem("k", "n", dtype="bf16", out_dtype="bf16"),
        ),
    ],
)
def test_serial_splitk_sources_compile_for_sm90a_without_spills(tmp_path, cfg, prob):
    kk = generate_splitk(cfg, prob)
    assert kk.reduce is None
    _nvcc_sm90a(kk.gemm.source, tmp_path)


# ============================================================================ on a GPU
gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


def _ints(cp, shape, seed, order="C"):
    x = cp.random.default_rng(seed).integers(-3, 4, size=shape).astype(cp.float16)
    return cp.asfortranarray(x) if order == "F" else x


@gpu
@pytest.mark.parametrize(
    "cfg",
    [
        CFG,
        SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, **WS), 3),
        SplitKConfig(Sm90Config(bm=64, bn=64, stages=8, **WS), 16),
    ],
)
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (37, 45, 51), (130, 260, 1000), (512, 512, 28672 // 8)])
def test_gpu_splitk_matches_float64(cfg, m, n, k):
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("split-K runs the TMA kernels of sm_90")
    for ao, bo, oo in (("C", "C", "C"), ("F", "C", "C"), ("C", "F", "F")):
        a, b = _ints(cp, (m, k), m + k, ao), _ints(cp, (k, n), n, bo)
        c = cp.full((m, n), cp.nan, dtype=cp.float32, order=oo)
        runtime.gemm(a, b, c, config=cfg, out_dtype="f32")
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        assert not bool(cp.isnan(c).any())
        assert float(cp.abs(c - ref).max()) == 0.0, (cfg.key(), m, n, k, ao, bo, oo)
    c16 = runtime.gemm(a, b, config=cfg)
    assert float(cp.abs(c16.astype(cp.float64) - ref).max()) <= 1e-3 * float(cp.abs(ref).max() + 1)


@gpu
def test_gpu_splitk_plan_under_cuda_graph_capture():
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("split-K runs the TMA kernels of sm_90")
    m, n, k = 16, 2048, 4096
    a, b = _ints(cp, (m, k), 3), _ints(cp, (k, n), 4)
    c = cp.full((m, n), cp.nan, dtype=cp.float32)
    plan = runtime.gemm_plan(a, b, c, out_dtype="f32", config=CFG)
    plan(a, b, c)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        plan(a, b, c)
        g = s.end_capture()
    for seed in range(3):
        a[...] = _ints(cp, (m, k), 30 + seed)
        b[...] = _ints(cp, (k, n), 40 + seed)
        c.fill(cp.nan)
        cp.cuda.Device().synchronize()
        g.launch(stream=s)
        s.synchronize()
        assert float(cp.abs(c - a.astype(cp.float64) @ b.astype(cp.float64)).max()) == 0.0, seed


@gpu
@pytest.mark.parametrize(
    "cfg",
    [SERIAL, SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, **WS), 3, "serial")],
)
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (37, 45, 51), (130, 260, 1000)])
def test_gpu_serial_splitk_matches_float64_on_every_call(cfg, m, n, k):
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("split-K runs the TMA kernels of sm_90")
    for call in range(3):  # calls 2 and 3 run on the counters the first left (reset to 0)
        a, b = _ints(cp, (m, k), m + k + call), _ints(cp, (k, n), n + call)
        c = cp.full((m, n), cp.nan, dtype=cp.float32)
        runtime.gemm(a, b, c, config=cfg, out_dtype="f32")
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        assert not bool(cp.isnan(c).any()), (cfg.key(), call)
        assert float(cp.abs(c - ref).max()) == 0.0, (cfg.key(), m, n, k, call)
    plan = runtime.last_launch["plan"]
    assert int(plan._counters.sum()) == 0  # every tile's reducer reset its counter
    bias = cp.arange(n, dtype=cp.float32) - n / 2
    c = cp.full((m, n), cp.nan, dtype=cp.float32)
    runtime.gemm(a, b, c, config=cfg, out_dtype="f32", bias=bias, activation="relu")
    assert float(cp.abs(c - cp.maximum(ref + bias[None, :], 0)).max()) == 0.0


@gpu
def test_gpu_serial_splitk_plan_under_cuda_graph_capture():
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("split-K runs the TMA kernels of sm_90")
    m, n, k = 16, 2048, 4096
    a, b = _ints(cp, (m, k), 3), _ints(cp, (k, n), 4)
    c = cp.full((m, n), cp.nan, dtype=cp.float32)
    plan = runtime.gemm_plan(a, b, c, out_dtype="f32", config=SERIAL)
    plan(a, b, c)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        plan(a, b, c)
        g = s.end_capture()
    for seed in range(3):
        a[...] = _ints(cp, (m, k), 30 + seed)
        b[...] = _ints(cp, (k, n), 40 + seed)
        c.fill(cp.nan)
        cp.cuda.Device().synchronize()
        g.launch(stream=s)
        s.synchronize()
        assert float(cp.abs(c - a.astype(cp.float64) @ b.astype(cp.float64)).max()) == 0.0, seed


# ============================================================================ autotune's table
def test_autotune_entries_round_trip_every_kind():
    import json

    from layoutproof.gpu.config import GemmConfig

    for cfg in (CFG, Sm90Config(bm=128, bn=128, stages=6, **WS), GemmConfig(swizzle=(2, 3, 3))):
        entry = json.loads(json.dumps(runtime.config_entry(cfg)))
        assert runtime.config_from_entry(entry) == cfg
    assert runtime.config_entry(CFG)["kind"] == "splitk"
    for bad in ({"kind": "splitk", "splits": 2}, {"kind": "sm90", "bm": 64, "nope": 1}, {"kind": "?"}, 7):
        assert runtime.config_from_entry(bad) is None


def test_fake_splitk_fixup_launch_is_programmatic_or_falls_back_to_stream_order(fake_tma, monkeypatch):
    cp = fake_tma
    monkeypatch.setenv("LAYOUTPROOF_PDL", "1")
    made, calls = [], []

    def launcher(fn, grid, threads, params, smem=0, cp=None):
        made.append((fn, grid, threads, params, smem))
        return lambda stream: calls.append(stream) or answer[0]

    answer = [True]
    monkeypatch.setattr(plan_mod, "_pdl_launcher", launcher)
    m, n, k = 16, 4096, 4096
    a, b = cp.array((m, k)), cp.array((k, n))
    runtime.gemm(a, b, config=CFG)
    plan = runtime.last_launch["plan"]
    (fn, grid, threads, params, smem) = made[0]
    assert grid == (n // splitk.REDUCE_THREADS, m, 1) and threads == splitk.REDUCE_THREADS
    assert params == plan._fix[1].address and fn == plan._fix_fn and smem == 0
    # the split kernel is a programmatic dependent too (of the previous kernel: the last fix-up)
    (fn, grid, threads, params, smem) = made[1]
    assert (fn, grid, threads, params, smem) == (
        plan._fn,
        plan.grid,
        plan.threads,
        plan._pb.address,
        plan.smem,
    )
    assert calls == [0x5, 0x5] and len(cp.launches) == 0  # both kernels went by PDL
    answer[0] = False  # the driver refuses: this call and later ones launch in stream order
    runtime.gemm(a, b, config=CFG)
    assert plan._pdl is None and plan._pdl_main is None and len(cp.launches) == 2
    assert cp.launches[-1]["kinds"] == ["ptr", "ptr", "i32", "i32", "i64"]
    runtime.gemm(a, b, config=CFG)
    assert calls == [0x5] * 4 and len(cp.launches) == 4  # no more PDL tries
    # more than SPLITK_MODEL["pdl_split_m"] rows: only the fix-up is a programmatic dependent
    answer[0], made[:] = True, []
    m = P.SPLITK_MODEL["pdl_split_m"] + 1
    runtime.gemm(cp.array((m, k)), b, config=CFG)
    plan = runtime.last_launch["plan"]
    assert len(made) == 1 and made[0][1] == (n // splitk.REDUCE_THREADS, m, 1) and plan._pdl_main is None
    assert calls == [0x5] * 5 and len(cp.launches) == 5  # the split kernel in stream order


def test_a_fixup_whose_plane_loop_misses_a_plane_is_refused(monkeypatch):
    real = splitk.reduce_ir

    def short(splits, out, name):
        k = real(splits, out, name)

        def fn(node):
            if isinstance(node, kir.For) and node.var.name == "s":
                return dataclasses.replace(node, stop=kir.Const(splits - 1))
            return None

        return dataclasses.replace(k, body=kir.rewrite(k.body, fn))

    monkeypatch.setattr(splitk, "reduce_ir", short)
    with pytest.raises(ProofFailedError) as e:
        generate_splitk(CFG, GemmProblem("k", "n"), memo=False)
    assert e.value.condition == "reducer reads all planes"
