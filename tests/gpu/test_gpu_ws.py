"""The warp-specialized persistent wgmma kernel on the CPU: its extra obligations (the
tile scheduler, the staged epilogue, the mbarrier pipeline protocol), planted bugs in each
caught, and the emitted source compiled for sm_90a with setmaxnreg honoured.

GPU execution is tested on the GPU machine (bench/gemm.py, bench/gemm_configs.py)."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)

from layoutproof import Swizzle
from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, ProofFailedError
from layoutproof.gpu.kernels import wgmma, wgmma_ws
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof import kir, pipeline
from layoutproof.gpu.proof.record import ProofLog

WS = Sm90Config(loader="tma", schedule="ws")
NVCC = shutil.which("nvcc")
PROBLEMS = [
    GemmProblem(a, b, d, o)
    for a, b, d, o in (
        ("k", "k", "f16", "f16"),
        ("k", "n", "f16", "f32"),
        ("m", "n", "bf16", "bf16"),
        ("m", "k", "bf16", "f32"),
    )
]


@pytest.mark.parametrize("prob", PROBLEMS, ids=lambda p: p.key())
def test_ws_kernel_carries_every_obligation(prob):
    k = wgmma.generate_sm90(WS, prob)
    stated = "\n".join(p.statement for p in k.proofs)
    for needle in (
        "persistent scheduler",
        "persistent loop",
        "epilogue data flow",
        "mbarrier pipeline",
        "TMA boxes of 64x64",
        "wgmma desc",
        "epilogue 16-byte row reads",
        "lp_ep_w(t, i) ==",
    ):
        assert needle in stated, needle
    assert {"protocol", "banks", "bijective", "equal", "atom"} <= {p.kind for p in k.proofs}
    assert k.source.count("//   [") == len(k.proofs)
    assert k.threads == 384 and "setmaxnreg.dec.sync.aligned.u32 40" in k.source
    assert "setmaxnreg.inc.sync.aligned.u32 232" in k.source
    # the full barriers take the producer's one arrival, the empty ones every consumer warp
    assert "mbarrier.init.shared::cta.b64 [%0], 8;" in k.source
    # pair writes use the output type's two-element vector; the f32 buffer has its own swizzle
    sw = re.search(r"epilogue 16-byte row reads from the (Sw<\d,\d,\d>)", stated).group(1)
    assert sw == ("Sw<2,3,2>" if prob.out == "f32" else "Sw<3,3,3>")


def test_ws_config_rules():
    with pytest.raises(GemmConfigError, match="needs loader='tma'"):
        Sm90Config(schedule="ws").validate()
    with pytest.raises(GemmConfigError, match="at most two"):
        Sm90Config(bm=256, bn=128, loader="tma", schedule="ws").validate()
    with pytest.raises(GemmConfigError, match="schedule="):
        Sm90Config(schedule="pingpang").validate()
    with pytest.raises(GemmConfigError, match="bm=64"):  # the ping-pong kernel's own tiles
        Sm90Config(loader="tma", schedule="pingpong").validate()
    c = Sm90Config(bm=64, bn=128, stages=6, loader="tma", schedule="ws").validate()
    assert c.threads == 256 and c.epilogue_bytes == 8192 and c.key().endswith("_tma_ws")
    k = wgmma.generate_sm90(c, GemmProblem("k", "k"))
    assert "setmaxnreg.inc.sync.aligned.u32 240" in k.source
    assert "mbarrier.init.shared::cta.b64 [%0], 4;" in k.source


# ----------------------------------------------------------------------------- scheduler
def _schedule_c_reference(g, t, gm, gn):
    """The grouped order, written directly (independent of the emitted statements)."""
    group = t // (g * gn)
    first = group * g
    size = min(gm - first, g)
    r = t % (g * gn)
    return first + r % size, r // size


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 16), st.integers(1, 300), st.integers(1, 300), st.data())
def test_schedule_statements_equal_the_grouped_order(g, gm, gn, data):
    t = data.draw(st.integers(0, gm * gn - 1))
    tm, tn = wgmma_ws.eval_schedule(g, np.array([t]), np.array([gm]), np.array([gn]))
    assert (int(tm[0]), int(tn[0])) == _schedule_c_reference(g, t, gm, gn)


def test_a_broken_scheduler_is_refused(monkeypatch):
    good = wgmma_ws._schedule_ir

    def broken(g):  # forget the partial last group: tiles past grid_m appear
        vs, stmts = good(g)
        return vs, [
            kir.Decl(s.var, kir.Const(g), const=True)
            if isinstance(s, kir.Decl) and s.var.name == "gsize"
            else s
            for s in stmts
        ]

    monkeypatch.setattr(wgmma_ws, "_schedule_ir", broken)
    with pytest.raises(ProofFailedError) as ei:
        wgmma_ws.prove_schedule(8, ProofLog(), max_grid=12)
    assert ei.value.witness is not None and "outside the grid" in str(ei.value)

    def collide(g):  # the column from the wrong divisor: two tiles share a coordinate
        (t, gm, _gn, _tm, tn), stmts = good(g)
        per_group = stmts[0].var
        return (t, gm, _gn, _tm, tn), [
            kir.Assign(tn, t % per_group / gm) if isinstance(s, kir.Assign) and s.lhs is tn else s
            for s in stmts
        ]

    monkeypatch.setattr(wgmma_ws, "_schedule_ir", collide)
    with pytest.raises(ProofFailedError):
        wgmma_ws.prove_schedule(4, ProofLog(), max_grid=12)


def test_the_emitted_scheduler_is_the_proven_statements():
    code = wgmma.generate_sm90(WS, GemmProblem("k", "k")).source
    assert "const int gsize = min(grid_m - first_m, 8);" in code
    assert "tm = first_m + t % per_group % gsize;" in code


# ----------------------------------------------------------------------------- epilogue
def test_epilogue_without_a_conflict_free_swizzle_is_refused(monkeypatch):
    monkeypatch.setattr(wgmma_ws, "_epilogue_swizzles", lambda ob: (Swizzle(0, 3, 3),))
    with pytest.raises(ProofFailedError, match="epilogue swizzle"):
        wgmma_ws.plan_epilogue(GemmProblem("k", "k", "f16", "f16"), ProofLog())


def test_epilogue_identity_buffer_conflicts_and_swizzle_is_chosen():
    log = ProofLog()
    ep = wgmma_ws.plan_epilogue(GemmProblem("k", "k", "f16", "bf16"), log)
    assert ep["sw"] == Swizzle(3, 3, 3) and ep["rw"] == 64 and ep["ev"] == 8
    ep32 = wgmma_ws.plan_epilogue(GemmProblem("k", "k", "f16", "f32"), ProofLog())
    assert ep32["sw"] == Swizzle(2, 3, 2) and ep32["rw"] == 32 and ep32["rc"] == 16


# ----------------------------------------------------------------------------- pipeline
@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.integers(1, 3), st.integers(0, 3), st.integers(0, 6))
def test_the_kernel_protocol_is_safe_for_any_schedule(stages, consumers, tiles, k_tiles):
    assert pipeline.check_pipeline(stages, consumers=consumers, tiles=tiles, k_tiles=k_tiles) >= 1


def test_one_stage_deadlocks_with_a_batch_in_flight():
    """A consumer holds k-tile j's stage until batch j + 1 is issued: with one stage, k-tile
    j + 1 can never land (the model finds it; Sm90Config requires 3 stages or more)."""
    with pytest.raises(ProofFailedError) as ei:
        pipeline.check_pipeline(1, consumers=1, tiles=1, k_tiles=2)
    assert ei.value.condition == "deadlock freedom"


@pytest.mark.parametrize(
    "kw, condition",
    [
        (dict(producer_parity=0), "deadlock freedom"),
        (dict(consumer_parity=1), "acquire sees its own k-tile"),
        (dict(empty_count=3), "deadlock freedom"),
    ],
)
def test_a_broken_protocol_is_caught(kw, condition):
    with pytest.raises(ProofFailedError) as ei:
        pipeline.check_pipeline(3, consumers=2, tiles=2, k_tiles=4, **kw)
    assert ei.value.condition == condition and ei.value.witness is not None


def test_too_few_empty_arrivals_let_the_producer_overwrite_a_stage_in_use():
    """One arrival completes the empty phase while the other consumer still reads: some
    interleaving overwrites a stage in use or overruns the phase (a deadlock)."""
    with pytest.raises(ProofFailedError) as ei:
        pipeline.check_pipeline(2, consumers=2, tiles=1, k_tiles=5, empty_count=1)
    assert ei.value.condition in ("no write while read", "deadlock freedom")


def test_pipeline_bad_parameters():
    with pytest.raises(ProofFailedError, match="stages=0 must be an int >= 1"):
        pipeline.check_pipeline(0, consumers=1, tiles=1, k_tiles=1)
    with pytest.raises(ProofFailedError, match="clusters of 1 or 2"):
        pipeline.check_pipeline(2, consumers=1, tiles=1, k_tiles=1, ctas=4)
    with pytest.raises(ProofFailedError, match="empty_count"):
        pipeline.check_pipeline(2, consumers=1, tiles=1, k_tiles=1, empty_count=0)


# ----------------------------------------------------------------------------- compile
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    "cfg, prob",
    [
        (WS, GemmProblem("k", "k", "f16", "f16")),
        (
            Sm90Config(bm=128, bn=128, stages=6, loader="tma", schedule="ws"),
            GemmProblem("m", "n", "bf16", "f32"),
        ),
    ],
    ids=["ws-128x256-f16", "ws-128x128-bf16-f32out"],
)
def test_ws_source_compiles_with_setmaxnreg_and_no_spills(tmp_path, cfg, prob):
    k = wgmma.generate_sm90(cfg, prob)
    info = _nvcc_sm90a(k.source, tmp_path)
    assert "C7508" not in info, info  # ptxas did not ignore setmaxnreg
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", info), info
    assert re.search(r"(\d+) bytes stack frame", info).group(1) == "0", info
    # the register cap at entry lets three warpgroups (384 threads) share the register file
    assert int(re.search(r"Used (\d+) registers", info).group(1)) * k.threads <= 65536


# ----------------------------------------------------------------------------- 2-CTA clusters
WS2 = Sm90Config(loader="tma", schedule="ws", cluster=2)


def test_cluster_kernel_carries_the_cluster_obligations():
    k = wgmma.generate_sm90(WS2, GemmProblem("k", "n", "bf16", "f32"))
    stated = "\n".join(p.statement for p in k.proofs)
    assert "2-CTA cluster: the B boxes {0: (0, 2), 1: (1, 3)}" in stated
    assert "49152 bytes per stage" in stated
    assert "cluster=2) maps (tile t, CTA rank) -> (2 * tp + crank, tn)" in stated
    assert "a 2-CTA cluster (TMA multicast" in stated
    src = k.source
    assert "__cluster_dims__(2, 1, 1)" in src and ".multicast::cluster" in src
    assert "mbarrier.init.shared::cta.b64 [%0], 16;" in src  # 8 warps x 2 CTAs
    assert src.count("lp_arrive_cta(empty0 + 8u * prev, rank ^ 1u);") == 2
    assert src.count("lp_cluster_sync();") == 2  # after init, before exit
    assert k.config.key().endswith("_ws_c2")
    assert src.count("//   [") == len(k.proofs)  # the header lists every one


def test_cluster_config_rules():
    with pytest.raises(GemmConfigError, match="needs schedule='ws'"):
        Sm90Config(loader="tma", cluster=2).validate()
    with pytest.raises(GemmConfigError, match="multiple of 128"):
        Sm90Config(bn=192, loader="tma", schedule="ws", cluster=2).validate()
    with pytest.raises(GemmConfigError, match="1 or 2"):
        Sm90Config(loader="tma", schedule="ws", cluster=4).validate()


def test_cluster_boxes_that_do_not_partition_b_are_refused(monkeypatch):
    monkeypatch.setattr(wgmma_ws, "_cluster_boxes", lambda b, ctas: {0: (0, 1), 1: (1, 2, 3)})
    a = wgmma.OperandPlan("a", 128, 64, 4, True, 384, 2, 64)
    b = wgmma.OperandPlan("b", 256, 64, 4, True, 384, 1, 256)
    with pytest.raises(ProofFailedError) as ei:
        wgmma_ws._prove_cluster_tx(a, b, 2, ProofLog())
    assert ei.value.condition == "multicast boxes partition B"


def test_a_cluster_scheduler_that_drops_the_rank_is_refused(monkeypatch):
    monkeypatch.setattr(wgmma_ws, "cluster_tm_ir", lambda c, tp, crank: c * tp)
    with pytest.raises(ProofFailedError) as ei:
        wgmma_ws.prove_schedule(8, ProofLog(), max_grid=10, cluster=2)
    assert ei.value.condition == "scheduler bijective"


def test_cluster_schedule_covers_odd_grids_with_padding_rows_only():
    log = ProofLog()
    wgmma_ws.prove_schedule(4, log, max_grid=15, cluster=2)
    assert "every tile once, padding rows only past grid_m" in log.proofs[0].statement


def test_consumers_that_skip_the_peer_barrier_let_a_multicast_overwrite_a_stage_in_use():
    """The cluster bug class: each CTA's producer writes the peer's stage too, so a consumer
    must release the stage on every CTA's empty barrier; the model finds the race."""
    with pytest.raises(ProofFailedError) as ei:
        pipeline.check_pipeline(3, consumers=1, ctas=2, tiles=1, k_tiles=5, remote_release=False)
    assert ei.value.condition == "no write while read"


@settings(max_examples=12, deadline=None)
@given(st.integers(2, 3), st.integers(0, 2), st.integers(0, 3))
def test_the_cluster_protocol_is_safe(stages, tiles, k_tiles):
    assert pipeline.check_pipeline(stages, consumers=1, ctas=2, tiles=tiles, k_tiles=k_tiles) >= 1


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_cluster_source_compiles_without_spills(tmp_path):
    k = wgmma.generate_sm90(
        Sm90Config(bm=128, bn=128, stages=4, loader="tma", schedule="ws", cluster=2),
        GemmProblem("m", "k", "f16", "f16"),
    )
    info = _nvcc_sm90a(k.source, tmp_path)
    assert "C7508" not in info and "0 bytes spill stores, 0 bytes spill loads" in info


# ----------------------------------------------------------------------------- protocol from the IR
def _tampered(monkeypatch, edit):
    """Make the generator build the ws kernel IR with ``edit`` applied to its nodes
    (``edit(node)`` returns a replacement or None); the edit must hit something."""
    good = wgmma_ws._source_ws_ir

    def bad(*args, **kw):
        k = good(*args, **kw)
        hits = []

        def f(n):
            r = edit(n)
            if r is not None:
                hits.append(n)
            return r

        k.body = kir.rewrite(k.body, f)
        assert hits
        return k

    monkeypatch.setattr(wgmma_ws, "_source_ws_ir", bad)


def test_the_protocol_is_read_from_the_ir():
    k = wgmma.generate_sm90(WS, GemmProblem("k", "k"))
    stated = [p.statement for p in k.proofs]
    assert any(
        s.startswith(
            "protocol read from the IR: producer waits empty with "
            "parity ph ^ 1, consumers wait full with ph ^ 0"
        )
        for s in stated
    )


def test_a_wrong_wait_parity_is_a_deadlock(monkeypatch):
    _tampered(
        monkeypatch,
        lambda n: (
            kir.MbarWait(n.bar, n.parity.a, n.comment)
            if isinstance(n, kir.MbarWait) and isinstance(n.parity, kir.Bin)
            else None
        ),
    )
    with pytest.raises(ProofFailedError) as ei:
        wgmma.generate_sm90(WS, GemmProblem("k", "k"), memo=False)
    assert ei.value.condition == "deadlock freedom"


def test_a_wrong_arrival_count_is_refused(monkeypatch):
    _tampered(
        monkeypatch,
        lambda n: kir.MbarInit(n.bar, 4) if isinstance(n, kir.MbarInit) and n.count == 8 else None,
    )
    with pytest.raises(ProofFailedError) as ei:
        wgmma.generate_sm90(WS, GemmProblem("k", "k"), memo=False)
    assert ei.value.condition == "arrival counts" and ei.value.witness == (4, 8)


def test_a_cluster_kernel_without_the_peer_release_races(monkeypatch):
    """Drop the release on the peer's barrier (and fix the count so it adds up): the
    model finds the peer's multicast overwriting a stage still being read."""

    def edit(n):
        if isinstance(n, kir.MbarArrive) and n.cta is not None:
            return kir.Block(())
        if isinstance(n, kir.MbarInit) and n.count == 16:
            return kir.MbarInit(n.bar, 8)
        return None

    _tampered(monkeypatch, edit)
    with pytest.raises(ProofFailedError) as ei:
        wgmma.generate_sm90(
            Sm90Config(bm=128, bn=128, stages=3, loader="tma", schedule="ws", cluster=2), memo=False
        )
    assert ei.value.condition == "no write while read"


def test_the_cluster_protocol_across_tile_boundaries_at_the_kernels_stage_count():
    """What generation leaves out for time (about 35 s here): the 4-stage, 2-CTA protocol
    over two tiles -- the end-of-tile release, the next tile's first acquisition and the
    parity wrap all interleaved across both CTAs."""
    for k_tiles in (2, 3):
        assert (
            pipeline.check_pipeline(4, consumers=1, ctas=2, tiles=2, k_tiles=k_tiles, max_states=3_000_000)
            > 100_000
        )


@pytest.mark.parametrize(
    "edit, witness",
    [
        (1, "WSR"),  # no barrier before the next chunk's writes: write-after-read race
        (0, "WRS"),  # no barrier between the writes and the reads: read-after-write race
    ],
)
def test_an_epilogue_without_its_barriers_is_refused(monkeypatch, edit, witness):
    def drop(n):
        if isinstance(n, kir.Block) and sum(isinstance(x, kir.NamedBarrier) for x in n.body) == 2:
            at = [i for i, x in enumerate(n.body) if isinstance(x, kir.NamedBarrier)][edit]
            return kir.Block(n.body[:at] + n.body[at + 1 :])
        return None

    _tampered(monkeypatch, drop)
    with pytest.raises(ProofFailedError) as ei:
        wgmma.generate_sm90(WS, GemmProblem("k", "k"), memo=False)
    assert ei.value.condition == "epilogue order" and ei.value.witness == witness


def test_a_conditional_epilogue_barrier_is_refused(monkeypatch):
    def cond(n):
        if isinstance(n, kir.NamedBarrier):
            return kir.If((kir.THREAD_IDX & 127).lt(64), kir.block(n))
        return None

    _tampered(monkeypatch, cond)
    with pytest.raises(ProofFailedError) as ei:
        wgmma.generate_sm90(WS, GemmProblem("k", "k"), memo=False)
    assert ei.value.condition == "barrier not under a thread-dependent condition"
