"""Split-K reduced inside a thread-block cluster (gpu/kernels/splitk_cluster.py): the
generated kernel, the ordering model and its planted bugs, the slices read from the IR, the
unit map, the rule, a plan's launch (fake CuPy), the nvcc compile, and with a GPU the
results against float64."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_splitk import fake_tma  # noqa: F401  (the fixture: a fake CuPy with TMA)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.host import runtime
from layoutproof.gpu.kernels import splitk_cluster as SC
from layoutproof.gpu.kernels.splitk import SplitKConfig, generate_splitk
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

WS = dict(loader="tma", schedule="ws")
NVCC = shutil.which("nvcc")
C8 = SplitKConfig(Sm90Config(bm=64, bn=256, stages=5, **WS), 8, "cluster")
C2 = SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **WS), 2, "cluster")
SMALL = SplitKConfig(Sm90Config(bm=64, bn=64, stages=4, **WS), 2, "cluster")
GOOD = ("store", "sync", "read", "sync", "exit")


# ============================================================================ the kernel
@pytest.mark.parametrize("cfg", [C8, C2])
def test_cluster_kernel_reads_peers_through_dsmem_between_two_cluster_barriers(cfg):
    kk = SC.generate_cluster(cfg, GemmProblem("k", "n"))
    src = kk.gemm.source
    S = cfg.splits
    assert kk.reduce is None
    assert f"__cluster_dims__({S}, 1, 1)" in src
    assert "mapa.shared::cluster.u32" in src and "ld.shared::cluster.v4.f32" in src
    assert src.count("lp_cluster_sync();") == 2
    assert "lp_d_t* __restrict__ C" in src and "typedef __half lp_d_t;" in src
    assert SC.cluster_program_ir(kk.gemm.ir) == GOOD
    kinds = {p.kind for p in kk.proofs}
    assert {"protocol", "bijective", "bounds"} <= kinds
    stm = " ".join(p.statement for p in kk.proofs)
    assert "every element of the 16 x" in stm and f"over ranks 0..{S - 1} in order" in stm
    assert kk.gemm.smem_bytes == cfg.smem_bytes <= 227 * 1024
    # the partial's shared stores and remote loads are claimed and discharged like any access
    line = [x for x in src.splitlines() if x.startswith("// coverage")][0]
    a, b = line.split(": ")[1].split(" memory")[0].split(" of ")
    assert a == b


def test_generate_splitk_refers_the_cluster_reduction_to_its_module():
    with pytest.raises(GemmConfigError, match="splitk_cluster"):
        generate_splitk(C2, GemmProblem("k", "n"))


def test_cluster_config_rules():
    assert C8.key() == "sm90_64x256x64_s5_g8_tma_ws_sk8c" and C8.cluster == 8
    with pytest.raises(GemmConfigError, match="splits <= 8"):
        SplitKConfig(C8.base, 12, "cluster").validate()
    with pytest.raises(GemmConfigError, match="exceed"):
        SC.check_smem(220000, 256, 8)
    # 8 ranks of a 128-column tile: 4 vectors per row of a slice, rows padded by 16 floats
    assert SC.partial_bytes(128, 8) == 4 * 16 * 144 and SC.partial_bytes(256, 8) == 4 * 16 * 256


def test_the_unit_map_gives_each_cluster_one_tile_and_every_chunk():
    log = ProofLog()
    for S in range(2, 9):
        SC.prove_cluster_split(S, log, max_tiles=40)
    assert len(log) == 7


# ============================================================================ the model
@pytest.mark.parametrize("S", [2, 3, 4])
def test_the_model_of_the_kernel_as_built_holds(S):
    assert SC.check_cluster(S, GOOD) > 0


@pytest.mark.parametrize(
    "program, cond",
    [
        (("store", "read", "sync", "exit"), "partial released before a peer reads it"),  # no first barrier
        (("store", "sync", "read", "exit"), "no CTA exits while a peer reads its partial"),  # no exit barrier
        (("sync", "store", "read", "sync", "exit"), "partial released before a peer reads it"),
        (("store", "sync", "sync", "exit"), "each slice sums every rank"),  # no reads at all
    ],
)
def test_planted_ordering_bugs_are_refused_by_name(program, cond):
    with pytest.raises(ProofFailedError, match=cond):
        SC.check_cluster(3, program)


def test_a_slice_missing_a_rank_is_refused():
    with pytest.raises(ProofFailedError, match="each slice sums every rank"):
        SC.check_cluster(3, GOOD, slices=[{0, 1, 2}, {0, 2}, {0, 1, 2}])


# ============================================================================ planted IR bugs
@pytest.mark.parametrize(
    "bug, cond",
    [
        (dict(first_sync=False), "partial released before a peer reads it"),
        (dict(exit_sync=False), "no CTA exits while a peer reads its partial"),
        (dict(slice_step=16), "slices partition the tile"),  # overlapping slices (half width)
        (dict(ranks=(0, 1)), "each slice sums every rank"),  # a slice misses rank 1
        (dict(ranks=(1, 2)), "each slice sums every rank"),  # ... rank 0
    ],
)
def test_planted_kernel_bugs_are_refused_by_name(bug, cond):
    with pytest.raises(ProofFailedError, match=cond):
        SC.generate_cluster(SMALL, GemmProblem("k", "n"), **bug)


def test_slices_read_from_the_ir_partition_the_tile():
    kk = SC.generate_cluster(SMALL, GemmProblem("k", "n"))
    log = ProofLog()
    SC.prove_slices(kk.gemm.ir, 2, 64, log)
    (p,) = log.proofs
    assert p.kind == "bijective" and "16 x 64 partial" in p.statement
    # the same IR against another cluster size or tile width is refused
    with pytest.raises(ProofFailedError):
        SC.prove_slices(kk.gemm.ir, 4, 64, ProofLog())
    with pytest.raises(ProofFailedError, match="slices partition the tile"):
        SC.prove_slices(kk.gemm.ir, 2, 128, ProofLog())


def test_a_cluster_barrier_below_the_top_level_is_refused():
    kk = SC.generate_cluster(SMALL, GemmProblem("k", "n"))
    k = kk.gemm.ir
    body = list(k.body.body)
    i = next(j for j, s in enumerate(body) if isinstance(s, kir.ClusterSync))
    body[i] = kir.If(kir.Var("wg").eq(0), kir.block(body[i]))
    bad = dataclasses.replace(k, body=kir.Block(tuple(body), k.body.bare))
    with pytest.raises(ProofFailedError, match="cluster barrier at the top level"):
        SC.cluster_program_ir(bad)


# ============================================================================ the rule, a plan
def test_the_rule_takes_the_cluster_reduction_only_where_it_measured_faster():
    # a row-major A of at most 32 rows takes the 64-row pick with A's box cut (P.SHORT_A_RULE,
    # unsplit here); the decode splits and their reductions are an M-major A's
    assert P.choose_config(16, 8192, 8192, GemmProblem(), hopper=True, tma=True).key() == (
        "sm90_64x64x64_s8_g8_tma_ws_r16"
    )
    am = GemmProblem("m", "n")
    got = P.choose_config(16, 8192, 8192, am, hopper=True, tma=True)
    assert got.key() == "sm90_64x128x64_s8_g8_tma_ws_sk2c"
    for shape in [(1, 4096, 4096), (16, 4096, 4096), (1, 4096, 11008), (64, 8192, 8192), (16, 8192, 28672)]:
        for prob in (GemmProblem(), am):
            cfg = P.choose_config(*shape, prob, hopper=True, tma=True)
            assert getattr(cfg, "reduction", "") != "cluster", shape
    plain = P.choose_config(16, 8192, 8192, am, hopper=True, tma=True, cluster=False)
    assert plain.reduction == "kernel"
    # a fused epilogue: the plain split with the epilogue in its fix-up kernel (the cluster
    # reduction has no fix-up)
    ep = P.choose_config(16, 8192, 8192, am, hopper=True, tma=True, epilogue=True)
    assert ep.reduction == "kernel" and ep == plain


def test_fake_cluster_plan_launches_one_kernel_one_cta_per_unit(fake_tma):  # noqa: F811
    cp = fake_tma
    m, n, k = 16, 8192, 8192
    a, b = cp.array((m, k)), cp.array((k, n))
    c = runtime.gemm(a, b, config=C2)  # the rule's pick for an M-major A of this shape
    assert C2 == P.choose_config(m, n, k, GemmProblem("m", "n"), hopper=True, tma=True)
    plan = runtime.last_launch["plan"]
    assert plan.config.reduction == "cluster" and plan._ws is None and plan._fix is None
    (g,) = cp.launches
    assert g["grid"] == (64 * 2, 1, 1) and g["block"] == (256, 1, 1)
    assert g["values"][2:7] == [c.data.ptr, m, n, k, n]
    with pytest.raises(GemmInputError, match="16 rows"):
        runtime.gemm(cp.array((17, k)), b, config=C2)


# ============================================================================ nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    "cfg, prob",
    [(C8, GemmProblem("k", "n")), (C2, GemmProblem("k", "n", dtype="bf16", out_dtype="bf16"))],
)
def test_cluster_sources_compile_for_sm90a_without_spills(tmp_path, cfg, prob):
    _nvcc_sm90a(SC.generate_cluster(cfg, prob).gemm.source, tmp_path)


# ============================================================================ on a GPU
gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


@gpu
@pytest.mark.parametrize("cfg", [C8, C2, SMALL])
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (16, 8192, 4096), (13, 1000, 3000), (16, 100, 130)])
def test_gpu_cluster_splitk_matches_float64_on_every_call(cfg, m, n, k):
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("split-K runs the TMA kernels of sm_90")
    rng = cp.random.default_rng(m + n + k)
    c = cp.empty((m, n), dtype=cp.float32)
    a0 = rng.integers(-3, 4, size=(m, k)).astype(cp.float16)
    b0 = rng.integers(-3, 4, size=(k, n)).astype(cp.float16)
    plan = runtime.gemm_plan(a0, b0, c, config=cfg, out_dtype="f32")
    for call in range(3):
        a = rng.integers(-3, 4, size=(m, k)).astype(cp.float16)
        b = rng.integers(-3, 4, size=(k, n)).astype(cp.float16)
        c.fill(cp.nan)
        plan(a, b, c)
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        # small integers: every partial sum is exact in f32
        assert float(cp.abs(c - ref).max()) == 0.0, (cfg.key(), m, n, k, call)
    assert np.isfinite(float(cp.abs(c).max()))
