"""The 192-column warp-specialized tiles (``Sm90Config(bn=192, ...)``): three 64-row TMA
boxes of B per stage, wgmma N = 192.  On the CPU: every obligation the other tiles carry is
stated and proven for them (plain, batched, fused epilogue, split-K), the source compiles for
sm_90a without spills, and the wave model takes them where a 256-column tile leaves a partial
last wave.  On a GPU (skipped without one): the kernels against a float64 reference on
awkward shapes, every operand order, batched and with the fused epilogue."""

from __future__ import annotations

import shutil

import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_short_a import _breq  # a batched request of contiguous batches

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.host import rule, runtime
from layoutproof.gpu.kernels import wgmma
from layoutproof.gpu.kernels.epilogue import EpilogueConfig, generate_epilogue
from layoutproof.gpu.kernels.splitk import SplitKConfig, generate_splitk
from layoutproof.gpu.kernels.wgmma import Sm90Config

NVCC = shutil.which("nvcc")
WS = dict(loader="tma", schedule="ws")
T192 = Sm90Config(bm=128, bn=192, stages=4, **WS)  # the default rule's
T64_192 = Sm90Config(bm=64, bn=192, stages=6, **WS)
PROBLEMS = [
    GemmProblem("k", "n", "f16", "f16"),
    GemmProblem("m", "k", "bf16", "f32"),
]


def _no_plain_swap(monkeypatch):
    """The wave model's pick as it is: no ping-pong swap of a plain product (rule.PINGPONG_RULE)."""
    for key in ("plain", "plain_full_wave", "plain_part_wave"):
        monkeypatch.setitem(rule.PINGPONG_RULE, key, {})


# ----------------------------------------------------------------------------- CPU
@pytest.mark.parametrize("cfg", [T192, T64_192], ids=lambda c: c.key())
@pytest.mark.parametrize("prob", PROBLEMS, ids=lambda p: p.key())
def test_192_column_tile_carries_every_obligation(cfg, prob):
    k = wgmma.generate_sm90(cfg, prob, memo=False)
    stated = "\n".join(p.statement for p in k.proofs)
    for needle in (
        "persistent scheduler",
        "mbarrier pipeline",
        "TMA boxes of 64x64",
        "wgmma desc",
        "epilogue data flow",
    ):
        assert needle in stated, needle
    assert {"protocol", "banks", "bijective", "equal", "atom"} <= {p.kind for p in k.proofs}
    assert all(p.status == "proved" for p in k.proofs)
    # one stage is A's bm x 64 and B's 192 x 64 elements, announced to the full barrier
    assert str(2 * 64 * (cfg.bm + 192)) in k.source
    assert "n192" in k.source  # the wgmma instruction of N = 192


def test_192_column_tile_validates_and_refuses_a_cluster():
    assert T192.smem_bytes <= 227 * 1024 and T192.threads == 384
    with pytest.raises(Exception, match="multiple of 128"):
        Sm90Config(bm=128, bn=192, stages=4, cluster=2, **WS).validate()


def test_192_column_tile_batched_epilogue_and_split_variants_are_proven():
    prob = GemmProblem("k", "n", "f16", "f16")
    kb = wgmma.generate_sm90(T192, GemmProblem("k", "n", "f16", "f16", batch="a"), memo=False)
    ke = generate_epilogue(EpilogueConfig(T192, "gelu", False, "n", "f32").validate(), prob)
    ks = generate_splitk(SplitKConfig(T192, 3, "serial").validate(), prob)
    for k in (kb, ke, ks):
        assert k.proofs and all(p.status == "proved" for p in k.proofs)


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("cfg", [T192, T64_192], ids=lambda c: c.key())
def test_192_column_tile_compiles_for_sm90a_without_spills(cfg, tmp_path):
    _nvcc_sm90a(wgmma.generate_sm90(cfg, PROBLEMS[0]).source, tmp_path)


# ----------------------------------------------------------------------------- the rule
def _pick(m, n, k, **kw):
    return rule.choose_config(m, n, k, GemmProblem("k", "n"), hopper=True, tma=True, mma=True, **kw)


def test_default_candidates_add_the_192_tile_for_f16_and_bf16_alone():
    assert T192 in rule.default_candidates(True) and T192 in rule.WAVE_TILES
    # the 64x192 tile is weighed against 64-row picks only (rule.ROW64_RULE)
    assert T64_192 not in rule.default_candidates(True) and T64_192 in rule.ROW64_RULE["tiles"]
    # the other number types' rule (and the autotuner's base list) keeps the six tiles
    assert all(c.bn != 192 for c in rule.hopper_candidates(True) + rule.default_candidates(False))
    assert rule.default_candidates(True)[: len(rule.hopper_candidates(True))] == rule.hopper_candidates(True)


@pytest.mark.parametrize(
    "shape, bn",
    [
        ((3072, 3072, 3072), 192),  # 288 tiles of 128x256: 2.2 waves; 384 of 128x192: 2.9
        ((6144, 6144, 256), 192),  # K-light: the per-tile tail dominates
        ((8192, 8192, 256), 192),
        ((8192, 8192, 8192), 256),  # full waves either way: the larger tile's rate wins
        ((4096, 4096, 4096), 256),  # 128x192: 704 tiles, 5.3 waves against 3.9
        ((6144, 6144, 6144), 256),
        ((3584, 3584, 3584), 256),
    ],
)
def test_the_wave_model_takes_the_192_tile_where_it_removes_a_partial_wave(shape, bn, monkeypatch):
    _no_plain_swap(monkeypatch)  # the wave model's pick, before the swap
    assert _pick(*shape).bn == bn


def test_the_192_tile_wins_by_the_model_at_3072_and_loses_at_4096():
    def t(cfg, s):
        return rule.estimate_us(cfg, s, s, s)

    t256 = rule.hopper_candidates(True)[0]
    assert t(T192, 3072) < 0.8 * t(t256, 3072)
    assert t(T192, 4096) > 1.1 * t(t256, 4096)


@pytest.mark.parametrize(
    "shape, tile",
    [
        ((192, 8192, 28672), (64, 192)),  # 96 tiles of 64x256 (0.73 of the SMs) against 129
        ((384, 4096, 14336), (64, 192)),  # 6 x 22 = 132 tiles: one full wave
        ((128, 11008, 4096), (64, 192)),  # 116 tiles against 86
        ((64, 9216, 4096), (64, 128)),  # one row of tiles: 72 of 64x128 keep their pick
        ((64, 11008, 4096), (64, 128)),
        ((32, 11008, 4096), (64, 128)),  # A's short box keeps its 64x128 pick
        ((1024, 4096, 4096), (128, 256)),  # enough rows for the 128-row tiles
        ((2000, 2100, 1000), (128, 192)),  # over ROW64_RULE["max_m"] rows: not weighed
        ((192, 14336, 4096), (128, 256)),  # a 128-row pick: not weighed against it
    ],
)
def test_the_64x192_tile_takes_the_outputs_of_96_to_512_rows(shape, tile, monkeypatch):
    _no_plain_swap(monkeypatch)  # the wave model's pick, before the swap
    cfg = _pick(*shape)
    assert (cfg.bm, cfg.bn) == tile and getattr(cfg, "splits", 1) == 1, cfg
    if tile == (64, 192):  # the fused epilogue takes the same tile
        ep = _pick(*shape, epilogue=True)
        assert (ep.bm, ep.bn, ep.schedule) == (64, 192, "ws"), ep


def test_split_k_never_takes_the_64x192_base():
    for m, n, k in ((64, 4096, 11008), (48, 4096, 14336), (16, 1024, 8192), (128, 2048, 28672)):
        splits = rule.splitk_candidates(m, n, k, rule.default_candidates(True))
        assert splits and all((c.base.bm, c.base.bn) != (64, 192) for c in splits)
        pick = _pick(m, n, k)
        assert (getattr(pick, "base", pick).bm, getattr(pick, "base", pick).bn) != (64, 192) or not getattr(
            pick, "splits", 0
        )


def test_the_64x192_tile_stays_off_without_its_rows(monkeypatch):
    _no_plain_swap(monkeypatch)
    monkeypatch.setitem(rule.ROW64_RULE, "max_m", 0)
    assert (_pick(192, 8192, 28672).bm, _pick(192, 8192, 28672).bn) == (64, 256)


def test_the_batched_rule_leaves_the_192_tile_out(monkeypatch):
    _no_plain_swap(monkeypatch)  # the wave model's 2-D pick, unswapped
    dev = rule.DeviceFacts(cc="90", sms=132, tma=True)
    req = _breq(8, 2048, 2048, 128)
    assert _pick(8 * 2048, 2048, 128).bn == 192  # the 2-D rule on the stacked rows takes it
    d = rule.decide_batched(req, dev)
    if d.mode == "kernel":  # the kernel path needs rank-3 TMA loads in the kernel IR
        assert d.launch.config.bn == 256


def test_the_rule_is_the_fastest_modelled_default_candidate(monkeypatch):
    shapes = ((3072, 3072, 3072), (1000, 3000, 777), (5120, 5120, 5120), (2047, 5003, 1000))
    swapped = {s: rule.choose_config(*s, hopper=True, tma=True) for s in shapes}
    _no_plain_swap(monkeypatch)
    for m, n, k in shapes:
        best = min(rule.default_candidates(True), key=lambda c: rule.estimate_us(c, m, n, k))
        assert rule.choose_config(m, n, k, hopper=True, tma=True) == best
        # the ping-pong swap replaces it at 5120^3 only (its 128x256 tiles' last wave is 8 of 132)
        assert (swapped[(m, n, k)] == best) == ((m, n, k) != (5120, 5120, 5120))


# ----------------------------------------------------------------------------- GPU
def _hopper() -> None:
    if not runtime.gpu_available():
        pytest.skip("no CUDA GPU / CuPy")
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("needs compute capability 9.0 and cuda-python's tensor maps")


SHAPES = [(1, 1, 1), (37, 45, 51), (130, 260, 200), (129, 577, 1000), (1000, 3, 77), (256, 384, 256)]


@pytest.mark.parametrize("cfg", [T192, T64_192], ids=lambda c: c.key())
@pytest.mark.parametrize("ao, bo", [("C", "C"), ("C", "F"), ("F", "C"), ("F", "F")])
def test_gpu_192_column_tile_matches_float64(cfg, ao, bo):
    _hopper()
    cp = pytest.importorskip("cupy")

    for m, n, k in SHAPES:
        for od in ("f32", "f16"):
            rng = cp.random.default_rng(m * 7 + n * 3 + k)
            a = rng.integers(-3, 4, size=(m, k)).astype(cp.float16)
            b = rng.integers(-3, 4, size=(k, n)).astype(cp.float16)
            a = cp.asfortranarray(a) if ao == "F" else a
            b = cp.asfortranarray(b) if bo == "F" else b
            c = cp.full((m, n), cp.nan, dtype=cp.float32 if od == "f32" else cp.float16)
            runtime.gemm(a, b, c, config=cfg, out_dtype=od)
            ref = a.astype(cp.float64) @ b.astype(cp.float64)
            got = c.astype(cp.float64)
            err = float(cp.abs(got - ref).max() / max(1.0, float(cp.abs(ref).max())))
            assert not bool(cp.isnan(got).any()) and err <= (0 if od == "f32" else 1e-3), (cfg, m, n, k, err)


@pytest.mark.parametrize("act", ["gelu", "silu"])
def test_gpu_192_column_tile_fused_epilogue_and_batched(act):
    _hopper()
    cp = pytest.importorskip("cupy")

    rng = cp.random.default_rng(3)
    m, n, k = 300, 500, 260
    a = rng.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
    b = rng.standard_normal((k, n), dtype=cp.float32).astype(cp.float16)
    bias = rng.standard_normal(n, dtype=cp.float32)
    c = runtime.gemm(a, b, config=T192, bias=bias, activation=act, out_dtype="f32")
    x = a.astype(cp.float64) @ b.astype(cp.float64) + bias
    if act == "silu":
        ref = x / (1 + cp.exp(-x))
    else:
        erf = pytest.importorskip("cupyx.scipy.special").erf

        ref = 0.5 * x * (1 + erf(x / 2**0.5))
    err = float(cp.abs(c - ref).max() / cp.abs(ref).max())
    assert err < 1e-5, err
    # batched: three batches of A against one B, the one-launch kernel on the 192 tile
    a3 = rng.standard_normal((3, 130, k), dtype=cp.float32).astype(cp.float16)
    b3 = rng.standard_normal((3, k, 200), dtype=cp.float32).astype(cp.float16)
    c3 = runtime.gemm(a3, b3, config=T192, out_dtype="f32")
    ref3 = cp.matmul(a3.astype(cp.float64), b3.astype(cp.float64))
    assert float(cp.abs(c3 - ref3).max() / cp.abs(ref3).max()) < 1e-5


def test_gpu_192_column_split_k_matches_float64():
    _hopper()
    cp = pytest.importorskip("cupy")

    rng = cp.random.default_rng(4)
    for cfg in (SplitKConfig(T192, 3, "kernel"), SplitKConfig(T192, 2, "serial")):
        a = rng.standard_normal((200, 4096), dtype=cp.float32).astype(cp.float16)
        b = rng.standard_normal((4096, 400), dtype=cp.float32).astype(cp.float16)
        c = cp.full((200, 400), cp.nan, dtype=cp.float32)
        runtime.gemm(a, b, c, config=cfg.validate(), out_dtype="f32")
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        assert float(cp.abs(c - ref).max() / cp.abs(ref).max()) < 1e-5, cfg.key()
