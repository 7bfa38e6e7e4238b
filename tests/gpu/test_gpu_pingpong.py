"""The ping-pong warp-specialized kernel (``Sm90Config(schedule="pingpong")``): generation
and proofs, the cover and ring proofs, planted faults refused by name, the host's decision,
an nvcc compile without spills; on a Hopper GPU, numerics against float64 (f16, bf16, tails
on M, N and K, with and without the fused bias + GELU), outputs NaN-poisoned first."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_short_a import _breq  # a batched request of contiguous batches

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, ProofFailedError
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.host import runtime
from layoutproof.gpu.kernels import wgmma_pingpong as pp
from layoutproof.gpu.kernels.epilogue import EpilogueConfig
from layoutproof.gpu.kernels.wgmma_core import HOPPER_DEFAULT, Sm90Config
from layoutproof.gpu.proof.pingpong_model import check_pingpong

NVCC = shutil.which("nvcc")
PP128 = Sm90Config(bm=64, bn=128, stages=8, loader="tma", schedule="pingpong")


def _statements(k):
    return [p.statement for p in k.proofs.proofs]


@pytest.mark.parametrize(
    "cfg, prob",
    [
        (pp.PINGPONG_DEFAULT, GemmProblem("k", "k")),
        (PP128, GemmProblem("m", "k", dtype="bf16")),
        (pp.PINGPONG_DEFAULT, GemmProblem("k", "n", out_dtype="f32")),
    ],
)
def test_generated_and_proven(cfg, prob):
    k = pp.generate_pingpong(cfg, prob, memo=False)
    assert (k.threads, k.smem_bytes) == (384, cfg.smem_bytes)
    st = _statements(k)
    assert any(s.startswith("ping-pong cover") for s in st)
    assert any(s.startswith("ping-pong protocol read from the IR") and "((0, 2), (1, 2))" in s for s in st)
    assert any(s.startswith(f"ping-pong mbarrier ring ({cfg.stages} stages") for s in st)
    assert any(s.startswith("persistent scheduler") for s in st)
    assert "setmaxnreg.inc.sync.aligned.u32 232" in k.source and "lp_order" in k.source
    # the empty barriers expect one warpgroup's four warps
    assert "empty 4 = one warpgroup's releasing threads" in " ".join(st)


def test_config_validation_and_defaults():
    assert pp.PINGPONG_DEFAULT.key() == "sm90_64x256x64_s5_g8_tma_pp"
    assert (HOPPER_DEFAULT.key(), HOPPER_DEFAULT.threads, HOPPER_DEFAULT.epilogue_bytes) == (
        "sm90_128x256x64_s4_g8_tma_ws",
        384,
        16384,
    )
    for bad in (
        dict(bm=128),
        dict(loader="cp.async"),
        dict(cluster=2),
    ):
        fields = dict(bm=64, bn=256, stages=5, loader="tma", schedule="pingpong")
        fields.update(bad)
        with pytest.raises(GemmConfigError, match="ping-pong|cluster"):
            Sm90Config(**fields).validate()
    with pytest.raises(GemmConfigError, match="schedule"):
        Sm90Config(schedule="pong").validate()
    # batched: the batches' grids end to end, as the ws kernel's (the grouped kernel's base)
    kb = pp.generate_pingpong(pp.PINGPONG_DEFAULT, GemmProblem("k", "k", batch="ab"))
    said = [p.statement for p in kb.proofs]
    assert any(x.startswith("batched persistent schedule") for x in said)
    assert any(x.startswith("batched TMA loads: each of the 5 box loads") for x in said)
    assert "bidx * ldcb" in kb.source or "(long long)bidx" in kb.source
    with pytest.raises(GemmConfigError, match="pingpong"):
        pp.generate_pingpong(HOPPER_DEFAULT)


@pytest.mark.parametrize(
    "kw, cond",
    [
        (dict(owners=((1, 2), (0, 2))), "acquire sees its own k-tile"),  # the wrong parity of tiles
        (dict(ring=((0, 0), (1, 0))), "acquire sees its own k-tile"),  # no skip over the other's tile
        (dict(order=None), "acquire sees its own k-tile"),  # the parity alias without order barriers
        (dict(order=((1, 0, 0), (0, 0, 1))), "deadlock freedom"),  # both wait first
        (dict(consumer_parity=1), "acquire sees its own k-tile"),
        (dict(producer_parity=0), "deadlock freedom"),
    ],
)
def test_model_refuses_wrong_orders(kw, cond):
    assert check_pingpong(4, tiles=3, k_tiles=5, agents=2) > 0
    with pytest.raises(ProofFailedError) as e:
        check_pingpong(4, tiles=3, k_tiles=5, agents=2, **kw)
    assert e.value.condition == cond


@pytest.mark.parametrize(
    "mutant, cond",
    [
        ("parity", "schedule cover"),  # a consumer taking the other parity of tiles
        ("early_release", "release after the previous batch completed"),  # release before the wait
        ("no_skip", "acquire sees its own k-tile"),
        ("no_order", "acquire sees its own k-tile"),
    ],
)
def test_planted_ir_faults_refused(mutant, cond):
    with pytest.raises(ProofFailedError) as e:
        pp.generate_pingpong(PP128, memo=False, _mutants=pp._Mutants(**{mutant: True}))
    assert e.value.condition == cond


def test_fused_epilogue_on_pingpong():
    cfg = pp.PingpongEpilogueConfig(pp.PINGPONG_DEFAULT, "gelu")
    k = pp.generate_pingpong_epilogue(cfg, GemmProblem("k", "k"))
    assert "lp_act_gelu" in k.source and "lp_order" in k.source
    st = _statements(k)
    assert any(s.startswith("ping-pong mbarrier ring") for s in st)
    assert cfg.key() == "sm90_64x256x64_s5_g8_tma_pp_biasgelu"
    with pytest.raises(GemmConfigError, match="ping-pong"):
        pp.PingpongEpilogueConfig(HOPPER_DEFAULT, "gelu").validate()
    with pytest.raises(GemmConfigError, match="activation"):
        pp.PingpongEpilogueConfig(pp.PINGPONG_DEFAULT, "tanh").validate()
    with pytest.raises(GemmConfigError, match="schedule='ws'"):
        EpilogueConfig(pp.PINGPONG_DEFAULT, "gelu").validate()


def _req(m, k, n, **kw):
    def facts(r, c):
        return P.OperandFacts((r, c), (c * 2, 2), 2, 0)

    return P.GemmRequest(
        facts(m, k), facts(k, n), "f16", out_itemsize=2, out_strides=None, out_dtype="f16", **kw
    )


def test_host_decides_pingpong_when_given():
    dev = P.DeviceFacts(cc="90", sms=132, tma=True)
    d = P.decide(_req(8192, 8192, 8192), dev, pp.PINGPONG_DEFAULT)
    assert (d.config.key(), d.grid) == ("sm90_64x256x64_s5_g8_tma_pp", (132, 1, 1))
    d = P.decide(_req(100, 64, 300), dev, pp.PINGPONG_DEFAULT)  # 2 x 2 tiles: 4 CTAs
    assert d.grid == (4, 1, 1)
    d = P.decide(_req(1000, 512, 1000, activation="gelu", bias=True), dev, PP128)
    assert isinstance(d.config, pp.PingpongEpilogueConfig)
    assert d.config.key() == "sm90_64x128x64_s8_g8_tma_pp_biasgelu"
    # the rule picks the 64x256 ping-pong tile with its own raster, never the 64x128 one
    assert P.decide(_req(8192, 8192, 8192), dev).config == P.pingpong_pick(5)
    assert "_pp" not in P.decide(_req(2048, 2048, 2048), dev).config.key()


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("which", ["plain", "gelu"])
def test_compiles_without_spills(tmp_path, which):
    if which == "plain":
        k = pp.generate_pingpong(pp.PINGPONG_DEFAULT)
    else:
        k = pp.generate_pingpong_epilogue(pp.PingpongEpilogueConfig(PP128, "gelu"))
    info = _nvcc_sm90a(k.source, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in info, info


# ---------------------------------------------------------------------------- GPU
def _hopper_tma() -> bool:
    if not runtime.gpu_available():
        return False
    cp = pytest.importorskip("cupy")
    return cp.cuda.Device().compute_capability == "90" and runtime.tma_available()


gpu = pytest.mark.skipif(not _hopper_tma(), reason="needs a Hopper GPU with TMA (cuda-python)")


@gpu
@pytest.mark.parametrize(
    "cfg, dtype, act",
    [
        (pp.PINGPONG_DEFAULT, "f16", None),
        (pp.PINGPONG_DEFAULT, "f16", "gelu"),
        (pp.PINGPONG_DEFAULT, "bf16", None),
        (pp.PINGPONG_DEFAULT, "bf16", "gelu"),
        (PP128, "f16", None),
        (PP128, "bf16", "gelu"),
        (P.pingpong_pick(4), "bf16", None),  # the rule's K-light pick
        (P.pingpong_pick(5), "f16", "gelu"),  # the rule's pick: the raster of 16 tile rows
        (P.pingpong_pick(5), "bf16", None),
    ],
)
@pytest.mark.parametrize("shape", [(1000, 700, 1333), (64, 128, 64), (777, 2048, 100), (3000, 520, 4100)])
def test_numerics_against_float64(cfg, dtype, act, shape):
    torch = pytest.importorskip("torch")
    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n + k)
    td = torch.float16 if dtype == "f16" else torch.bfloat16
    a = torch.randn((m, k), device="cuda", generator=g).to(td)
    b = torch.randn((k, n), device="cuda", generator=g).to(td)
    bias = torch.randn((n,), device="cuda", generator=g).to(td) if act else None
    out = torch.full((m, n), float("nan"), device="cuda", dtype=td)
    runtime.gemm(a, b, out, config=cfg, bias=bias, activation=act)
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    if act:
        ref = torch.nn.functional.gelu(ref + bias.double())
    got = out.double()
    assert not torch.isnan(got).any()
    err = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
    assert err < (1e-2 if dtype == "f16" else 2e-2), err
    plan = runtime.last_launch["plan"]
    assert "_pp" in plan.config.key()


@gpu
@pytest.mark.parametrize("dtype, act", [("f16", None), ("bf16", "gelu"), ("f16", "silu")])
@pytest.mark.parametrize("shape", [(3, 300, 520, 200), (5, 64, 256, 64), (2, 777, 300, 1333)])
def test_batched_numerics_against_float64(dtype, act, shape):
    """The batched ping-pong kernel (a given configuration): every batch's product, tails on
    M, N and K, with and without the fused bias + activation; one launch."""
    torch = pytest.importorskip("torch")
    nb, m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(nb + m * 7 + n + k)
    td = torch.float16 if dtype == "f16" else torch.bfloat16
    a = torch.randn((nb, m, k), device="cuda", generator=g).to(td)
    b = torch.randn((nb, k, n), device="cuda", generator=g).to(td)
    bias = torch.randn((n,), device="cuda", generator=g).to(td) if act else None
    out = torch.full((nb, m, n), float("nan"), device="cuda", dtype=td)
    runtime.gemm(a, b, out, config=pp.PINGPONG_DEFAULT, bias=bias, activation=act)
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    if act:
        f = torch.nn.functional.gelu if act == "gelu" else torch.nn.functional.silu
        ref = f(ref + bias.double())
    got = out.double()
    assert not torch.isnan(got).any()
    err = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
    assert err < (1e-2 if dtype == "f16" else 2e-2), err
    info = runtime.last_launch
    assert info["mode"] == "kernel" and "_pp" in info["plan"].config.key()


# ============================================================================ the rule
def test_rule_takes_pingpong_where_measured_faster_only():
    f16 = GemmProblem()
    pick = lambda m, n, k, ep, prob=f16: P.choose_config(  # noqa: E731
        m, n, k, prob, hopper=True, tma=True, mma=True, epilogue=ep
    )
    swapped, light = P.pingpong_pick(5), P.pingpong_pick(4)
    assert swapped == replace(pp.PINGPONG_DEFAULT, group_m=16)  # the raster of 16 tile rows
    assert light == replace(swapped, stages=4)
    # with a fused epilogue: K up to 5120 on the 128x256 / 128x192 picks, and at any K where
    # the 128x256 pick makes two waves or more (8192^3: 2048 tiles)
    for shape in [
        (8192, 8192, 1024),
        (5120, 5120, 5120),
        (4096, 14336, 4096),
        (8192, 8192, 256),
        (4096, 4096, 4096),
        (8192, 8192, 8192),
        (6144, 6144, 6144),
    ]:
        assert pick(*shape, True) == swapped, shape
    # ... where the pick's tiles make a wave: 2048^3 (64 tiles of 128x256) keeps its tile, and
    # past K = 512 two: 2560^3 (200 tiles) keeps it
    assert pick(2048, 2048, 2048, True).schedule == "ws"
    assert pick(2560, 2560, 2560, True).schedule == "ws"
    assert P.pingpong_swap(HOPPER_DEFAULT, 512, f16, True, (200, 132)) == swapped
    # plain: past K = 2048 the cooperative tile stays where the 128x256 pick makes fewer than
    # eight waves and its last wave is at least half full (4096^3: 512 tiles, 116 in the last
    # wave; 3584^3: 392, 128), or under one wave (2048^3)
    kept = [(4096, 4096, 4096), (3584, 3584, 3584), (4096, 4096, 11008), (2048, 2048, 2048)]
    kept.append((2560, 2560, 2560))
    for shape in kept:
        assert pick(*shape, False).schedule == "ws", shape
    # plain: the 128x256 pick of a full wave to K = 2048, to K = 6144 with a last wave under
    # half full (5120^3: 8 of 132 tiles; 4096x11008x4096: 56), and at any K from eight waves
    for shape in [
        (8192, 8192, 1024),
        (8192, 8192, 2048),
        (4096, 4096, 2048),
        (5120, 5120, 5120),
        (4096, 11008, 4096),
        (4096, 14336, 4096),
        (6144, 6144, 6144),
        (8192, 8192, 8192),
        (8192, 8192, 28672),
    ]:
        assert pick(*shape, False) == swapped, shape
    ws = Sm90Config(bm=128, bn=256, stages=4, loader="tma", schedule="ws")
    assert P.pingpong_swap(ws, 1024, f16, False) == ws  # no wave facts: the K bound only
    assert P.pingpong_swap(ws, 1024, f16, False, (512, 0)) == ws
    assert P.pingpong_swap(ws, 8192, f16, False, (1055, 132)) == ws  # just under eight waves
    assert P.pingpong_swap(ws, 8192, f16, False, (1056, 132)) == swapped
    # with an epilogue, the 128x192 picks to K = 1024 only (3072^3 keeps its tile)
    assert pick(6144, 6144, 256, True) == swapped
    assert pick(3072, 3072, 3072, True).key() == "sm90_128x192x64_s4_g8_tma_ws"
    # plain: the 128x256 and 128x192 picks at K <= 512, with four stages at K <= 256 (one
    # tile's k-tiles)
    assert pick(4096, 4096, 256, False) == light
    assert pick(8192, 8192, 256, False) == light
    assert pick(6144, 6144, 256, False) == light
    assert pick(4096, 4096, 192, False) == light
    assert pick(4096, 4096, 512, False) == swapped
    assert pick(8192, 8192, 512, False) == swapped  # the 128x192 pick, K <= 512
    assert pick(3072, 3072, 3072, False).key() == "sm90_128x192x64_s4_g8_tma_ws"
    # never for the other types' rule, batches, clusters or explicit candidates
    assert (
        P.pingpong_swap(HOPPER_DEFAULT, 256, GemmProblem(dtype="tf32", out_dtype="f32"), False)
        == HOPPER_DEFAULT
    )
    # a batched problem swaps as a 2-D one (the batches' tiles walk end to end), A's short
    # box (a_rows < 64) never
    assert P.pingpong_swap(HOPPER_DEFAULT, 256, GemmProblem(batch="ab"), False) == light
    assert P.pingpong_swap(HOPPER_DEFAULT, 2048, GemmProblem(batch="ab"), True, (64, 132)) == HOPPER_DEFAULT
    short = replace(HOPPER_DEFAULT, a_rows=32)
    assert P.pingpong_swap(short, 256, f16, False) == short
    cl = Sm90Config(bm=128, bn=256, stages=4, loader="tma", schedule="ws", cluster=2)
    assert P.pingpong_swap(cl, 256, f16, False) == cl
    given = P.choose_config(4096, 4096, 256, f16, hopper=True, tma=True, candidates=[HOPPER_DEFAULT])
    assert given == HOPPER_DEFAULT
    # modelled as the cooperative tile it replaces (the epilogue routes compare like with like)
    for cfg in (pp.PINGPONG_DEFAULT, P.pingpong_pick(5)):  # whatever its raster
        assert P.estimate_us(cfg, 4096, 4096, 256) == P.estimate_us(HOPPER_DEFAULT, 4096, 4096, 256)


def test_generate_sm90_refuses_pingpong_by_name():
    from layoutproof.gpu.kernels.wgmma import generate_sm90

    with pytest.raises(GemmConfigError, match="generate_pingpong"):
        generate_sm90(pp.PINGPONG_DEFAULT)


@gpu
@pytest.mark.parametrize(
    "form",
    ["bias n f32 relu", "bias m bf16 silu", "alpha beta c gelu", "alpha beta c in place", "plain k256"],
)
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_rule_routes_through_pingpong_with_every_epilogue_form(form, dtype):
    torch = pytest.importorskip("torch")
    td = torch.float16 if dtype == "f16" else torch.bfloat16
    m, n, k = (4000, 4000, 300) if form == "plain k256" else (2000, 2100, 1000)
    g = torch.Generator(device="cuda").manual_seed(len(form) + m)
    a = torch.randn((m, k), device="cuda", generator=g).to(td)
    b = torch.randn((k, n), device="cuda", generator=g).to(td)
    ref = a.double() @ b.double()
    out = torch.full((m, n), float("nan"), device="cuda", dtype=td)
    kw: dict = {}
    if form.startswith("bias"):
        along = form.split()[1]
        bt = {"f32": torch.float32, "bf16": torch.bfloat16}[form.split()[2]]
        bias = torch.randn((m if along == "m" else n,), device="cuda", generator=g).to(bt)
        act = form.split()[3]
        kw = dict(bias=bias, bias_along=along, activation=act)
        ref = ref + (bias.double()[:, None] if along == "m" else bias.double())
        ref = {"relu": torch.relu, "silu": torch.nn.functional.silu}[act](ref)
    elif form.startswith("alpha"):
        c = torch.randn((m, n), device="cuda", generator=g).to(td)
        ref = torch.nn.functional.gelu(0.5 * ref + 2.0 * c.double())
        if form.endswith("in place"):
            out = c  # C read and written in place
        kw = dict(c=c, alpha=0.5, beta=2.0, activation="gelu")
    runtime.gemm(a, b, out, **kw)
    torch.cuda.synchronize()
    assert "_pp" in runtime.last_launch["plan"].config.key(), form
    got = out.double()
    assert not torch.isnan(got).any(), form
    err = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
    assert err < (1e-2 if dtype == "f16" else 2e-2), (form, err)


def test_batched_rule_takes_pingpong_as_the_2d_rule_does():
    """The batched kernel's pick is swapped by the same rule, over the tiles of every batch,
    where each batch has at least ``batched_m`` rows and K > 256: to K = 512, a full wave
    to K = 2048; with a fused epilogue the ping-pong epilogue kernel; smaller batches, the
    K-light ones and a pick of 64-row tiles keep the cooperative kernel."""
    dev = P.DeviceFacts(cc="90", sms=132, tma=True)
    big = P.PINGPONG_RULE["batched_m"]
    assert big == 4096
    for (batch, m, n, k), want in (
        ((8, 4096, 4096, 512), P.pingpong_pick(5)),
        ((4, 4096, 4096, 1024), P.pingpong_pick(5)),
        ((2, 8192, 4096, 2048), P.pingpong_pick(5)),
    ):
        d = P.decide_batched(_breq(batch, m, n, k), dev)
        assert d.mode == "kernel" and d.launch.config == want, (batch, m, n, k)
        assert d.launch.grid[0] == min(132, -(-m // 64) * -(-n // 256) * batch)
    shapes = ((32, 512, 512, 512), (8, 2048, 2048, 128), (4, 2048, 2048, 2048), (64, 128, 128, 64))
    for shape in shapes + ((4, 8192, 4096, 256), (2, 4096, 4096, 4096)):  # K-light; a part wave
        d = P.decide_batched(_breq(*shape), dev)
        assert d.launch.config.schedule == "ws", shape
    d = P.decide_batched(_breq(2, 4096, 4096, 1024, activation="gelu", bias=True), dev)
    assert isinstance(d.launch.config, pp.PingpongEpilogueConfig)
    assert d.launch.config.base == P.pingpong_pick(5)
    # a given ping-pong configuration runs batched too
    d = P.decide_batched(_breq(4, 256, 512, 256), dev, pp.PINGPONG_DEFAULT)
    assert d.mode == "kernel" and d.launch.config == pp.PINGPONG_DEFAULT
