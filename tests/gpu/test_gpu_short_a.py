"""A's TMA box of 16 or 32 rows (``Sm90Config.a_rows``): the configuration's rules, the
proofs the generator adds (the partial box's layout, the transaction bytes, the host's
row limit), the kernels built on such a base, the rule that takes it for outputs of at most
32 rows, the plan's tensor map and, on a Hopper GPU, the numbers against float64."""

from __future__ import annotations

import dataclasses
import re
import shutil

import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_splitk import fake_tma  # noqa: F401  (the fake device with TMA)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, ProofFailedError
from layoutproof.gpu.host import cache, runtime
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.kernels import wgmma
from layoutproof.gpu.kernels.epilogue import EpilogueConfig
from layoutproof.gpu.kernels.grouped import GroupedConfig
from layoutproof.gpu.kernels.splitk import FixupEpilogueConfig, SplitKConfig
from layoutproof.gpu.kernels.toolkit import OperandPlan
from layoutproof.gpu.kernels.wgmma import Sm90Config, generate_sm90
from layoutproof.gpu.kernels.wgmma_core import a_box_rows, sm90_base
from layoutproof.gpu.proof import kir

NVCC = shutil.which("nvcc")
WS = dict(loader="tma", schedule="ws")


def short(rows: int = 16, bn: int = 64, stages: int = 8) -> Sm90Config:
    return Sm90Config(bm=64, bn=bn, stages=stages, a_rows=rows, **WS).validate()


def _tx(source: str) -> list:
    return [int(v) for v in re.findall(r'"r"\(bar\), "r"\((\d+)\)', source)]


# ============================================================================ the configuration
def test_a_rows_is_in_the_key_and_the_repr_only_when_short():
    full = Sm90Config(bm=64, bn=64, stages=8, **WS)
    assert full.key() == "sm90_64x64x64_s8_g8_tma_ws" and "a_rows" not in repr(full)
    assert short(16).key() == "sm90_64x64x64_s8_g8_tma_ws_r16" and repr(short(16)).endswith("a_rows=16)")
    assert short(32) != short(16) != full and hash(short(32)) != hash(short(16))


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(bm=128, bn=256, a_rows=16, **WS), "needs bm=64"),
        (dict(bm=64, bn=64, a_rows=16, loader="tma", schedule="mono"), "schedule='ws'"),
        (dict(bm=64, bn=64, a_rows=16, loader="tma", schedule="pingpong"), "schedule='ws'"),
        (dict(bm=64, bn=128, a_rows=32, cluster=2, **WS), "cluster=1"),
        (dict(bm=64, bn=64, a_rows=8, **WS), "must be one of"),
        (dict(bm=64, bn=64, a_rows=48, **WS), "must be one of"),
        (dict(bm=64, bn=64, a_rows="16", **WS), "must be one of"),
    ],
)
def test_configurations_a_short_box_cannot_serve_are_refused(bad, match):
    with pytest.raises(GemmConfigError, match=match):
        Sm90Config(**bad).validate()


@pytest.mark.parametrize(
    "prob, match",
    [
        (GemmProblem("m", "n"), "a_major='m'"),
        (GemmProblem("m", "n", batch="ab"), "a_major='m'"),
        (GemmProblem("k", "k", "tf32", "f32"), "dtype='tf32'"),
        (GemmProblem("k", "k", "e4m3", "bf16"), "dtype='e4m3'"),
    ],
)
def test_problems_a_short_box_cannot_serve_are_refused(prob, match):
    with pytest.raises(GemmConfigError, match=match):
        generate_sm90(short(16), prob)


def test_a_grouped_base_must_load_whole_tiles():
    with pytest.raises(GemmConfigError, match="a_rows=64"):
        GroupedConfig(base=short(16)).validate()


def test_the_base_of_every_derived_configuration_is_found():
    b = short(32, bn=128)
    for cfg in (b, SplitKConfig(b, 4), EpilogueConfig(b, "gelu"), FixupEpilogueConfig(b, "relu")):
        assert sm90_base(cfg) == b and a_box_rows(cfg) == 32
    assert a_box_rows(P.mma_decode(16, 4096, 4096)) == 64 and sm90_base(P.mma_decode(16, 4096, 4096)) is None


# ============================================================================ the kernels
@pytest.mark.parametrize("rows", [16, 32])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("bn", [64, 128, 256])
def test_the_kernel_loads_its_rows_and_expects_their_bytes(rows, dtype, bn):
    cfg = short(rows, bn=bn, stages=5 if bn == 256 else 8)
    k = generate_sm90(cfg, GemmProblem("k", "n", dtype, dtype))
    # one A box of `rows` x 128 bytes and B's whole stage: the one transaction count
    assert _tx(k.source) == [rows * 128 + bn * 128]
    loads = [n for n in kir.walk(k.ir.body) if isinstance(n, kir.TmaLoad)]
    a = [n for n in loads if n.tmap.name == "tmA"]
    assert len(a) == 1 and a[0].claim.width == rows * 128
    assert all(n.claim.width == 64 * 128 for n in loads if n.tmap.name == "tmB")
    lines = [p.statement for p in k.proofs]
    assert any(f"the {rows}-row TMA box's stage layout equals the 64-row stage layout" in s for s in lines)
    assert any(f"1 TMA boxes of 64x{rows}" in s for s in lines)
    assert [p.method for p in k.proofs if p.kind == "config"] == ["host check"]
    # the full-box kernel of the same tiles differs in these alone
    full = generate_sm90(dataclasses.replace(cfg, a_rows=64), GemmProblem("k", "n", dtype, dtype))
    assert _tx(full.source) == [64 * 128 + bn * 128] and full.name != k.name


def test_kernels_built_on_a_short_base_carry_its_box():
    b = short(16, bn=128)
    prob = GemmProblem("k", "n")
    for cfg in (
        SplitKConfig(b, 4),
        SplitKConfig(b, 4, "serial", activation="gelu"),
        SplitKConfig(b, 2, "cluster"),
        EpilogueConfig(b, "silu"),
        FixupEpilogueConfig(b, "relu"),
    ):
        main = cache.kernels_for(cfg.validate(), prob, disk=False)[0]
        assert _tx(main.source) == [16 * 128 + 128 * 128], cfg.key()
        assert "_r16" in cfg.key() and any(p.kind == "config" for p in main.proofs), cfg.key()


def test_a_wrong_transaction_count_is_refused(monkeypatch):
    # the kernel would announce the full stage for a 16-row box: the TMA pre-flight's bytes disagree
    monkeypatch.setattr(OperandPlan, "loaded_elems", property(lambda self: self.stage_elems))
    with pytest.raises(ProofFailedError, match="the pre-flight derived") as e:
        generate_sm90(short(16, bn=128, stages=7), GemmProblem("k", "n"), memo=False)
    assert e.value.condition == "the issued TMA boxes are the proved ones"


def test_a_box_that_lands_elsewhere_is_refused(monkeypatch):
    orig = wgmma.tma_stage_layout

    def shifted(x_extent, kmajor):  # the partial box's rows laid out without the swizzle
        from layoutproof import Layout

        return Layout((x_extent, 64), (64, 1)) if x_extent < 64 else orig(x_extent, kmajor)

    monkeypatch.setattr(wgmma, "tma_stage_layout", shifted)
    with pytest.raises(
        ProofFailedError, match=r"box's layout differs from the stage's at \(x, k\) = \(1, 0\)"
    ) as e:
        generate_sm90(short(32, bn=64, stages=6), GemmProblem("k", "n"), memo=False)
    assert e.value.condition == "a partial box writes the stage's own rows"


def test_the_tensor_map_of_a_short_box():
    full, a16, a32 = (wgmma.tensor_map_args(True, "bf16", rows=r) for r in (64, 16, 32))
    assert (full.box_dim, a16.box_dim, a32.box_dim) == ((64, 64), (64, 16), (64, 32))
    assert a16.global_dim == full.global_dim and a16.swizzle == full.swizzle == "128B"
    with pytest.raises(GemmConfigError, match="K-major"):
        wgmma.tensor_map_args(False, "f16", rows=16)


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_short_box_sources_compile_for_sm90a_without_spills(tmp_path):
    b = short(16, bn=128)
    prob = GemmProblem("k", "n", "bf16", "bf16")
    _nvcc_sm90a(generate_sm90(b, prob).source, tmp_path)
    _nvcc_sm90a(cache.kernels_for(SplitKConfig(b, 4), prob, disk=False)[0].source, tmp_path)


# ============================================================================ the rule
#: (n, k) -> the short-box pick's (bn, splits): one wave of 64x64 units where the columns'
#: 64x64 tiles fit on the SMs (split while a wave still fits and chunks keep 4 k-blocks),
#: else the 64-row output's pick with the box cut
SHORT_PICKS = {
    (6144, 4096): (64, 1),  # 96 tiles: no split fits one wave
    (5120, 13824): (64, 1),
    (8192, 8192): (64, 1),  # 128 tiles
    (4096, 14336): (64, 2),  # 64 tiles x 2
    (4096, 4096): (64, 2),
    (2048, 4096): (64, 4),
    (1024, 4096): (64, 8),
    (512, 1024): (64, 4),  # 8 tiles: 16 k-blocks leave chunks of 4 at most 4 ways
    (11008, 4096): (128, 1),  # 172 tiles: the 64-row pick
    (28672, 8192): (256, 1),
}


@pytest.mark.parametrize("m", [1, 7, 17, 24])
@pytest.mark.parametrize("shape", list(SHORT_PICKS))
def test_the_rule_takes_one_wave_of_short_box_units(m, shape):
    n, k = shape
    for dt in ("f16", "bf16"):
        prob = GemmProblem("k", "n", dt, dt)
        rows = 16 if m <= 16 else 32
        assert P.short_a_rows(m, prob) == rows
        got = P.choose_config(m, n, k, prob, hopper=True, tma=True)
        assert a_box_rows(got) == rows and sm90_base(got).bm == 64
        assert (sm90_base(got).bn, getattr(got, "splits", 1)) == SHORT_PICKS[shape], got.key()
        if sm90_base(got).bn == 64:  # one wave of units, the largest split that keeps it
            units = -(-n // 64) * getattr(got, "splits", 1)
            assert units <= 132
        else:
            want = P.with_a_rows(P.choose_config(64, n, k, prob, hopper=True, tma=True), rows)
            assert got == want
        # the fused epilogue's routes get the box too (the fused kernel splits serially)
        ep = P.choose_config(m, n, k, prob, hopper=True, tma=True, epilogue=True)
        assert a_box_rows(ep) == rows
        assert getattr(ep, "splits", 1) == getattr(got, "splits", 1)


def test_the_fill_switch_restores_the_64_row_pick(monkeypatch):
    monkeypatch.setitem(P.SHORT_A_RULE, "fill", False)
    for n, k in SHORT_PICKS:
        want = P.with_a_rows(P.choose_config(64, n, k, GemmProblem(), hopper=True, tma=True), 16)
        assert P.choose_config(9, n, k, GemmProblem(), hopper=True, tma=True) == want


def test_the_rule_keeps_full_boxes_where_it_must():
    # 33 rows and more, an M-major A, the other number types, no TMA
    assert P.short_a_rows(33, None) is None
    for prob in (
        GemmProblem("m", "n"),
        GemmProblem("k", "k", "tf32", "f32"),
    ):
        assert P.short_a_rows(16, prob) is None
    assert a_box_rows(P.choose_config(48, 6144, 4096, GemmProblem(), hopper=True, tma=True)) == 64
    assert a_box_rows(P.choose_config(16, 6144, 4096, GemmProblem("m", "n"), hopper=True, tma=True)) == 64
    assert isinstance(P.choose_config(16, 6144, 4096, GemmProblem(), hopper=True, tma=False), Sm90Config)
    assert a_box_rows(P.choose_config(16, 6144, 4096, GemmProblem(), hopper=True, tma=False)) == 64
    # where a decode tile takes the shape (path="auto"), it still does
    assert P.choose_config(16, 8192, 8192, GemmProblem(), hopper=True, tma=True, mma=True) == P.mma_decode(
        16, 8192, 8192
    )
    # the switch turns the rule off
    saved = P.SHORT_A_RULE["rows"]
    try:
        P.SHORT_A_RULE["rows"] = ()
        assert P.short_a_rows(1, None) is None
        assert a_box_rows(P.choose_config(16, 6144, 4096, GemmProblem(), hopper=True, tma=True)) == 64
    finally:
        P.SHORT_A_RULE["rows"] = saved


@pytest.mark.parametrize("batch", ["ab", "a"])
def test_a_batched_kernel_reads_each_matrix_through_a_short_rank_3_box(batch):
    k = generate_sm90(short(16, bn=256, stages=5), GemmProblem("k", "n", batch=batch))
    assert _tx(k.source) == [16 * 128 + 256 * 128]
    lines = [p.statement for p in k.proofs]
    assert any("A: 1 TMA boxes of 64x16" in s and "X,K,B" in s for s in lines), lines
    assert any(p.kind == "config" for p in k.proofs)
    assert wgmma.tensor_map_args(True, "f16", True, rows=16).box_dim == (64, 16, 1)


def _breq(batch, m, n, k, **kw):
    """A batched f16 request of row-major, contiguous batches (``kw``: its options)."""
    a = P.OperandFacts((m, k), (k * 2, 2), 2, 0, batch, m * k * 2)
    b = P.OperandFacts((k, n), (n * 2, 2), 2, 0, batch, k * n * 2)
    return P.GemmRequest(a, b, "f16", "f16", 2, batch=batch, **kw)


def test_the_batched_rule_takes_64_row_tiles_with_the_box():
    dev = P.DeviceFacts(cc="90", sms=132, tma=True)
    for (batch, m, n, k), rows in (
        ((8, 16, 4096, 14336), 16),
        ((64, 1, 128, 4096), 16),
        ((16, 32, 2048, 4096), 32),
    ):
        d = P.decide_batched(_breq(batch, m, n, k), dev)
        if d.mode != "kernel":  # the kernel path needs rank-3 TMA loads in the kernel IR
            continue
        cfg = d.launch.config
        assert (cfg.bm, cfg.a_rows) == (64, rows) and d.launch.problem.batch == "ab"
    d = P.decide_batched(_breq(8, 33, 4096, 4096), dev)
    assert d.mode != "kernel" or a_box_rows(d.launch.config) == 64
    with pytest.raises(GemmConfigError, match="M=33 must be at most 32"):
        P.decide_batched(_breq(8, 33, 4096, 4096), dev, short(32))


def test_the_host_refuses_more_rows_than_the_box(fake_tma):  # noqa: F811
    cp = fake_tma
    a, b = cp.array((33, 4096)), cp.array((4096, 6144))
    with pytest.raises(GemmConfigError, match="M=33 must be at most 32"):
        runtime.gemm(a, b, config=short(32))
    with pytest.raises(GemmConfigError, match="M=17 must be at most 16"):
        runtime.gemm(cp.array((17, 4096)), b, config=SplitKConfig(short(16, bn=128), 4))


def test_the_plan_builds_the_short_map_for_a_only(fake_tma):  # noqa: F811
    cp = fake_tma
    a, b = cp.array((24, 4096)), cp.array((4096, 6144))
    runtime.gemm(a, b)
    assert a_box_rows(runtime.last_launch["config"]) == 32
    assert cp.box_rows == [("k", 32), ("n", 64)]


# ============================================================================ on a Hopper GPU
def _hopper() -> bool:
    try:
        from layoutproof.gpu.host import device

        return runtime.gpu_available() and device.cupy().cuda.Device().compute_capability == "90"
    except Exception:
        return False


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with CuPy")
@pytest.mark.parametrize("m, rows", [(1, 16), (7, 16), (16, 16), (17, 32), (32, 32)])
def test_gpu_short_box_matches_float64(m, rows):
    cp = pytest.importorskip("cupy")

    n, k = 1000, 1536
    rng = cp.random.default_rng(m)
    a = rng.integers(-3, 4, size=(m, k)).astype(cp.float16)
    b = rng.integers(-3, 4, size=(k, n)).astype(cp.float16)
    ref = a.astype(cp.float64) @ b.astype(cp.float64)
    base = short(rows)
    for cfg in (base, SplitKConfig(short(rows, bn=128), 3)):
        c = cp.full((m, n), cp.nan, dtype=cp.float32)
        runtime.gemm(a, b, c, out_dtype="f32", config=cfg)
        assert not bool(cp.isnan(c).any()) and float(cp.abs(c - ref).max()) == 0.0, cfg.key()
    bias = rng.integers(-3, 4, size=(n,)).astype(cp.float16)
    c = runtime.gemm(a, b, bias=bias, activation="relu", config=base)
    want = cp.maximum(ref + bias.astype(cp.float64)[None, :], 0)
    assert float(cp.abs(c.astype(cp.float64) - want).max() / cp.abs(want).max()) < 1e-3


def test_autotune_entries_keep_the_box():
    import json

    for cfg in (short(16), SplitKConfig(short(32, bn=128), 4)):
        entry = json.loads(json.dumps(runtime.config_entry(cfg)))
        assert runtime.config_from_entry(entry) == cfg
    # an entry written before the field reads as the full box
    old = {k: v for k, v in runtime.config_entry(short(16)).items() if k != "a_rows"}
    assert runtime.config_from_entry(old) == dataclasses.replace(short(16), a_rows=64)


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with CuPy")
@pytest.mark.parametrize("batch, m", [(4, 7), (3, 16), (5, 29)])
def test_gpu_batched_short_box_matches_float64(batch, m):
    cp = pytest.importorskip("cupy")
    n, k = 520, 776
    rng = cp.random.default_rng(batch + m)
    a = rng.integers(-3, 4, size=(batch, m, k)).astype(cp.float16)
    b = rng.integers(-3, 4, size=(batch, k, n)).astype(cp.float16)
    ref = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
    for cfg in (None, short(16 if m <= 16 else 32, bn=128)):
        c = cp.full((batch, m, n), cp.nan, dtype=cp.float16)
        runtime.gemm(a, b, c, config=cfg)
        got = runtime.last_launch["config"]
        assert runtime.last_launch["mode"] == "kernel" and a_box_rows(got) == (16 if m <= 16 else 32)
        assert not bool(cp.isnan(c).any()) and float(cp.abs(c.astype(cp.float64) - ref).max()) == 0.0


def test_autotune_times_the_short_box_variants_of_short_outputs(monkeypatch):
    from layoutproof.gpu.host import device

    monkeypatch.setattr(device, "tma_available", lambda: True)
    prob = GemmProblem()
    for m, rows in ((1, 16), (9, 16), (16, 16), (17, 32), (32, 32)):
        cands = runtime.tune_candidates(m, 4096, 4096, prob, "wgmma", 132)
        short_ones = [c for c in cands if a_box_rows(c) != 64]
        assert short_ones and all(a_box_rows(c) == rows for c in short_ones)
        # each is a full-box candidate with the box cut (M's bucket never exceeds the rows)
        for c in short_ones:
            assert (
                P.with_a_rows(
                    dataclasses.replace(c, a_rows=64)
                    if isinstance(c, Sm90Config)
                    else dataclasses.replace(c, base=dataclasses.replace(c.base, a_rows=64)),
                    rows,
                )
                == c
            )
            assert any(isinstance(c, SplitKConfig) for c in short_ones)
    assert all(a_box_rows(c) == 64 for c in runtime.tune_candidates(33, 4096, 4096, prob, "wgmma", 132))
    assert all(a_box_rows(c) == 64 for c in runtime.tune_candidates(16, 4096, 4096, prob, "wgmma", 0))
    assert runtime.tune_candidates(16, 4096, 4096, prob, "mma.sync", 132) == tuple(runtime.DEFAULT_CONFIGS)
