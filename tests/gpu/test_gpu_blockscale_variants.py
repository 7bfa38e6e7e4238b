"""The block-scaled kernel's consumer with two partial accumulators (``partials=2``): it
generates with its pipelined promotion proven, the default kernel is untouched, planted
bugs in the pipeline (promotion before the wgmmas complete, the wrong partial, stale or
current scales, a missing zeroing, copy or drain) are caught, nvcc compiles it without
spills or wgmma serialization, and on a GPU it matches the float64 reference."""

import re
import shutil

import pytest
from test_gpu_blockscale import _hopper  # an sm_90 GPU with torch
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import blockscale as hbs
from layoutproof.gpu.kernels import blockscale as bs
from layoutproof.gpu.kernels.epilogue import EpilogueConfig
from layoutproof.gpu.kernels.wgmma_core import Sm90Config
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.pipeline import check_pipeline
from layoutproof.gpu.proof.record import ProofLog

SMALL = Sm90Config(bm=64, bn=128, stages=8, loader="tma", schedule="ws")
C2 = Sm90Config(bm=128, bn=128, stages=4, loader="tma", schedule="ws", cluster=2)


def _two(cfg=SMALL, dtype="e4m3", out="bf16", **kw):
    return bs.generate_blockscale(cfg, GemmProblem("k", "k", dtype, out), partials=2, **kw)


# ----------------------------------------------------------------------------- generation
@pytest.mark.parametrize("cfg", [bs.BLOCKSCALE_DEFAULT, SMALL], ids=["128x128", "64x128"])
def test_two_partials_generate_with_the_pipelined_promotion_proven(cfg):
    k = _two(cfg)
    st = [r.statement for r in k.proofs]
    assert any("promotion interval (two partials" in s for s in st)
    assert not any(s.startswith("promotion interval: the k-tile loop promotes once") for s in st)
    assert any("mbarrier pipeline" in s for s in st)  # the ring protocol, model-checked as before
    src = k.source
    m = re.search(r"coverage: (\d+) of (\d+) memory accesses, (\d+) of (\d+) barrier", src)
    assert m and m.group(1) == m.group(2) and m.group(3) == m.group(4)
    assert "float part1[64];" in src and "float scp[2];" in src
    assert "acc[i] += part1[i] * scp[(i >> 1) & 1];" in src
    # one wait_group 1 per k-tile (after both branches), one wait_group 0 in the drain
    assert src.count("wgmma.wait_group.sync.aligned 1;") == 1
    assert src.count("wgmma.wait_group.sync.aligned 0;") == 1
    assert "two partials" in src


def test_the_default_kernel_is_not_the_variant():
    one, two = bs.generate_blockscale(), _two(bs.BLOCKSCALE_DEFAULT)
    assert one.name != two.name and "part1" not in one.source
    assert bs.generate_blockscale(partials=1) is one  # the same memoized kernel
    with pytest.raises(GemmConfigError, match="partials=3"):
        bs.generate_blockscale(partials=3)


def test_two_partials_int8_and_with_the_epilogue():
    k = _two(dtype="s8", out="f32")
    assert "int part1[64];" in k.source and "acc[i] += (float)part1[i] * scp[(i >> 1) & 1];" in k.source
    e = bs.generate_blockscale(epilogue=EpilogueConfig(SMALL, "gelu", bias_axis="n"), partials=2)
    assert "lp_act_gelu(" in e.source and "part1" in e.source
    assert any("two partials" in r.statement for r in e.proofs)


# ----------------------------------------------------------------------------- planted bugs
def _srow(k):
    return next(f for f in k.ir.functions if getattr(f, "name", "") == "lp_sa_row")


def _prove(k, ir):
    bs.prove_promotion_pipelined(ir, SMALL, "e4m3", _srow(k), ProofLog())


def _promotion_ifs(node):
    """The parity conditions that choose the partial to promote."""
    return isinstance(node, kir.If) and any(
        isinstance(x, kir.Assign) and x.op == "+=" for x in kir.walk(node.then)
    )


def test_the_pipelined_proof_passes_on_the_kernel_ir():
    k = _two()
    log = ProofLog()
    bs.prove_promotion_pipelined(k.ir, SMALL, "e4m3", _srow(k), log)
    assert log.proofs[-1].cases > 100


def test_planted_promotion_before_the_wgmmas_complete_is_caught(monkeypatch):
    orig = bs._batch_ir
    monkeypatch.setattr(bs, "_batch_ir", lambda *a, **kw: orig(*a, **{**kw, "wait": 2}))
    with pytest.raises(ProofFailedError, match="while its wgmmas are in flight"):
        _two(memo=False)


def test_planted_drain_without_wait_0_is_caught():
    k = _two()
    ir = kir.rewrite(k.ir, lambda n: kir.WgmmaWait(1) if isinstance(n, kir.WgmmaWait) and n.n == 0 else None)
    with pytest.raises(ProofFailedError, match="in flight"):
        _prove(k, ir)


def test_planted_promotion_of_the_wrong_partial_is_caught():
    k = _two()

    def swap(n):
        if _promotion_ifs(n) and n.orelse is not None:
            return kir.If(n.cond, n.orelse, n.then, n.comment)
        return None

    with pytest.raises(ProofFailedError, match="in flight|holds no k-tile"):
        _prove(k, kir.rewrite(k.ir, swap))


def test_planted_promotion_with_this_k_tiles_scales_is_caught():
    k = _two()
    names = {n.name: n for n in kir.walk(k.ir.body) if isinstance(n, kir.Var)}
    sc, scp = names["sc"], names["scp"]

    def current(n):  # acc[i] += part[i] * sc[h]: the scales of the k-tile just issued
        if isinstance(n, kir.Assign) and n.op == "+=" and isinstance(n.rhs, kir.Bin):
            b = n.rhs.b
            if isinstance(b, kir.Index) and b.base is scp:
                return kir.Assign(n.lhs, kir.Bin(n.rhs.op, n.rhs.a, kir.Index(sc, b.idx)), "+=")
        return None

    with pytest.raises(ProofFailedError, match="which holds the scales of k-tile"):
        _prove(k, kir.rewrite(k.ir, current))


def test_planted_missing_scale_copy_zeroing_or_drain_are_caught():
    k = _two()
    names = {n.name: n for n in kir.walk(k.ir.body) if isinstance(n, kir.Var)}
    scp, part1 = names["scp"], names["part1"]

    def drop(pred):
        return kir.rewrite(
            k.ir,
            lambda n: (
                kir.Block(tuple(x for x in n.body if not pred(x))) if isinstance(n, kir.Block) else None
            ),
        )

    def is_copy(x):
        return isinstance(x, kir.For) and any(
            isinstance(a, kir.Assign) and isinstance(a.lhs, kir.Index) and a.lhs.base is scp
            for a in kir.walk(x)
        )

    with pytest.raises(ProofFailedError, match="holds the scales of k-tile None"):
        _prove(k, drop(is_copy))

    def is_zero1(x):
        return isinstance(x, kir.For) and any(
            isinstance(a, kir.Assign) and isinstance(a.lhs, kir.Index) and a.lhs.base is part1 and a.op == "="
            for a in kir.walk(x)
        )

    with pytest.raises(ProofFailedError, match="not zeroed before"):
        _prove(k, drop(is_zero1))

    def is_drain_promotion(x):
        return isinstance(x, kir.If) and "last k-tile" in x.comment

    with pytest.raises(ProofFailedError, match=r"KT = 1: the k-tiles promoted are \[\]"):
        _prove(k, drop(is_drain_promotion))


def test_host_refuses_other_partials():
    with pytest.raises(GemmInputError, match="partials=0"):
        hbs.gemm_fp8_blockscale(None, None, None, None, partials=0)


# ----------------------------------------------------------------------------- nvcc
NVCC = shutil.which("nvcc")


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    "cfg, kw",
    [
        (bs.BLOCKSCALE_DEFAULT, dict(partials=2)),
        (SMALL, dict(partials=2)),
        (bs.BLOCKSCALE_DEFAULT, dict(prefetch_scales=True)),
        (bs.BLOCKSCALE_DEFAULT, dict(prefetch_scales=True, early_release=True)),
        (C2, {}),
    ],
    ids=["two-128x128", "two-64x128", "prefetch", "prefetch-early", "cluster2"],
)
def test_variants_compile_without_spills_or_wgmma_serialization(tmp_path, cfg, kw):
    k = bs.generate_blockscale(cfg, GemmProblem("k", "k", "e4m3"), **kw)
    out = _nvcc_sm90a(k.source, tmp_path)
    assert "serialized" not in out, out[-2000:]


# ----------------------------------------------------------------------------- on a GPU
@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with torch")
@pytest.mark.parametrize("shape", [(200, 300, 400), (64, 256, 7168), (1, 128, 16), (257, 384, 384)])
def test_variants_match_the_current_kernel_and_float64(shape):
    import torch

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
    bt = torch.randn(n, k, device="cuda", generator=g).to(torch.float8_e4m3fn)
    kb = -(-k // 128)
    sa = torch.rand(kb, m, device="cuda", generator=g).T + 0.5
    sb = torch.rand(-(-n // 128), kb, device="cuda", generator=g) + 0.5
    one = hbs.gemm_fp8_blockscale(a, bt.T, sa, sb, out_dtype="f32")
    kk = torch.arange(k, device="cuda") // 128
    nn = torch.arange(n, device="cuda") // 128
    ref = (a.double() * sa.double()[:, kk]) @ (bt.T.double() * sb.double()[nn][:, kk].T)
    scale = max(ref.abs().max().item(), 1e-30)
    for kw in (
        dict(partials=2),
        dict(early_release=True),
        dict(partials=2, early_release=True),
        dict(prefetch_scales=True),
        dict(prefetch_scales=True, early_release=True),
        dict(late_scales=True),
        dict(config=C2),
    ):
        two = hbs.gemm_fp8_blockscale(a, bt.T, sa, sb, out_dtype="f32", **kw)
        assert hbs.last_blockscale_launch["partials"] == kw.get("partials", 1)
        assert (two.double() - ref).abs().max().item() <= 2e-3 * scale, kw
        # the same wgmmas and the same promotions in the same order: bit-identical sums
        assert torch.equal(one, two), kw


# ----------------------------------------------------------------------------- early release
@pytest.mark.parametrize("partials", [1, 2])
def test_early_release_generates_with_its_protocol_proven(partials):
    k = bs.generate_blockscale(SMALL, GemmProblem("k", "k", "e4m3"), partials=partials, early_release=True)
    st = [r.statement for r in k.proofs]
    src = k.source
    if partials == 1:  # the k-tile's own stage, right after its wait_group 0, before the promotion
        assert any("each stage released in its own k-tile" in s for s in st)
        assert any("each k-tile releases its own stage after its wgmma.wait_group 0" in s for s in st)
        assert "int prev" not in src and "empty0 + 8u * st" in src
        body = src[src.index("wgmma.wait_group.sync.aligned 0;") :]
        assert body.index("empty0 + 8u * st") < body.index("acc[i] += part[i]")
    else:  # the previous stage, right after the wait_group 1, before the promotion
        assert any("one wgmma batch in flight" in s for s in st)
        body = src[src.index("wgmma.wait_group.sync.aligned 1;") :]
        assert body.index("empty0 + 8u * prev") < body.index("acc[i] += part")
    assert k.name != bs.generate_blockscale(SMALL, GemmProblem("k", "k", "e4m3"), partials=partials).name


def test_planted_early_release_before_the_wgmmas_complete_is_caught():
    from layoutproof.gpu.kernels import wgmma_ws

    k = bs.generate_blockscale(SMALL, GemmProblem("k", "k", "e4m3"), early_release=True)
    tx = next(n.nbytes for n in kir.walk(k.ir.body) if isinstance(n, kir.MbarExpectTx))
    wgmma_ws.protocol_ir(k.ir, SMALL, tx, ProofLog())  # the kernel's own IR passes
    ir = kir.rewrite(k.ir, lambda n: kir.WgmmaWait(1) if isinstance(n, kir.WgmmaWait) and n.n == 0 else None)
    with pytest.raises(ProofFailedError, match="before wgmma.wait_group 0"):
        wgmma_ws.protocol_ir(ir, SMALL, tx, ProofLog())


def test_the_same_k_tile_release_model():
    from layoutproof.gpu.kernels import wgmma_ws

    assert check_pipeline(3, consumers=2, tiles=2, k_tiles=4, release_lag=0) > 0
    assert check_pipeline(2, consumers=1, tiles=1, k_tiles=3, ctas=2, release_lag=0) > 0
    with pytest.raises(ProofFailedError, match="deadlock"):
        check_pipeline(3, consumers=2, tiles=1, k_tiles=4, producer_parity=0, release_lag=0)
    with pytest.raises(ProofFailedError, match="release_lag=2"):
        check_pipeline(3, consumers=2, tiles=1, k_tiles=4, release_lag=2)
    with pytest.raises(GemmConfigError, match="release='later'"):
        wgmma_ws.consumer_ir(None, "", "f32", lambda c: ([], []), release_note="", release="later")


# ----------------------------------------------------------------------------- prefetched scales
@pytest.mark.parametrize("early", [False, True])
def test_prefetched_scales_generate_with_their_promotion_proven(early):
    k = bs.generate_blockscale(
        SMALL, GemmProblem("k", "k", "e4m3"), prefetch_scales=True, early_release=early
    )
    assert any("promotion interval (scales read one k-tile ahead)" in r.statement for r in k.proofs)
    src = k.source
    assert "float psb = 0.f;" in src and "const int kbn = kt + 1;" in src and "if (kt == 0) {" in src
    # this k-tile's products between the commit and the wait, then the next k-tile's reads
    body = src[src.index("wgmma.commit_group.sync.aligned;") :]
    assert body.index("sc[0] = psa0 * psb;") < body.index("const int kbn = kt + 1;")
    assert body.index("const int kbn = kt + 1;") < body.index("wgmma.wait_group.sync.aligned 0;")
    s8 = bs.generate_blockscale(SMALL, GemmProblem("k", "k", "s8", "f32"), prefetch_scales=True)
    assert "acc[i] += (float)part[i] * sc[(i >> 1) & 1];" in s8.source
    with pytest.raises(GemmConfigError, match="prefetch_scales"):
        bs.generate_blockscale(partials=2, prefetch_scales=True)


def test_planted_prefetch_of_the_wrong_k_block_is_caught(monkeypatch):
    orig = bs._scale_prefetch_ir

    def two_ahead(F, Sc, kx, tn, srow, regs, tag):
        return orig(F, Sc, kx + 1 if tag == "n" else kx, tn, srow, regs, tag)

    monkeypatch.setattr(bs, "_scale_prefetch_ir", two_ahead)
    with pytest.raises(ProofFailedError, match="which holds the scales of k-tile 2"):
        bs.generate_blockscale(SMALL, GemmProblem("k", "k", "e4m3"), prefetch_scales=True, memo=False)


# ----------------------------------------------------------------------------- a 2-CTA cluster


@pytest.mark.slow  # the 2-CTA pipeline model: about 0.4 M states
def test_cluster_of_two_multicasts_b_with_the_scales_proven():
    k = bs.generate_blockscale(C2)
    st = [r.statement for r in k.proofs]
    assert any("2-CTA cluster: the B boxes" in s for s in st)
    assert any("mbarrier pipeline (4 stages, a 2-CTA cluster" in s for s in st)
    assert any(s.startswith("promotion interval: the k-tile loop promotes once") for s in st)
    assert "__cluster_dims__(2, 1, 1)" in k.source and "lp_tma_load_mc(" in k.source
    # the scale_a rows follow the CTA's own tile row (2 tp + crank); one scale_b per tile column
    assert "const int tm = 2 * tp + crank;" in k.source and "const int nb = tn;" in k.source
    with pytest.raises(GemmConfigError, match="multiple of 128"):
        Sm90Config(bm=128, bn=64, stages=4, loader="tma", schedule="ws", cluster=2).validate()
