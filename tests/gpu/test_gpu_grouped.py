"""The grouped (MoE) GEMM: the kernel's generation and proofs, the group search and the
cover (planted bugs caught: an off-by-one in the group prefix, a strict comparison, a
missing halving step), the IR rewrite's safety (planted: a store guarded by the group end
only, consumers that do not skip empty tiles), the host's tables equal to the proven ones,
bad input refused by name, the nvcc build; the numerics on a GPU (skipped without one)."""

from __future__ import annotations

import contextlib
import ctypes
import re
import shutil
import types
from dataclasses import replace

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import grouped as hg
from layoutproof.gpu.kernels import grouped as kg
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.kernels.wgmma_core import HOPPER_DEFAULT
from layoutproof.gpu.kernels.wgmma_pingpong import PINGPONG_DEFAULT
from layoutproof.gpu.proof import kir, obligations
from layoutproof.gpu.proof.record import ProofLog

NVCC = shutil.which("nvcc")
CFG = kg.GroupedConfig(max_groups=256)
PP = kg.GroupedConfig(base=PINGPONG_DEFAULT, max_groups=256)  # the ping-pong base


@pytest.fixture(scope="module")
def kern():
    return kg.generate_grouped(CFG, GemmProblem("k", "n", "bf16"))


# ---------------------------------------------------------------------------- generation
def _all_covered(src):
    """The source header says every memory access and barrier operation was covered."""
    m = re.search(r"(\d+) of (\d+) memory accesses, (\d+) of (\d+) barrier operations covered", src)
    return bool(m) and m.group(1) == m.group(2) and m.group(3) == m.group(4)


def test_grouped_kernel_carries_every_proof(kern):
    src = kern.source
    assert "lp_group(tm, gtab, G, g, gm0, rend);" in src
    assert "if (r < rend && r < M)" in src
    assert src.count("kt < kte") == 2  # producer and consumers skip empty tiles alike
    assert "if (kte > 0) {" in src  # and the consumers skip their epilogue
    for stmt in ("lp_group (halving search", "grouped schedule", "grouped, read from the IR", "persistent"):
        assert stmt in src, stmt
    assert _all_covered(src)
    assert tuple(v.name for _, v in kern.ir.params) == hg.KERNEL_ARGS  # the host's argument order


def test_grouped_config_refuses_by_name():
    with pytest.raises(GemmConfigError, match="power of two"):
        kg.GroupedConfig(max_groups=100).validate()
    with pytest.raises(GemmConfigError, match="cluster=1"):
        kg.GroupedConfig(base=Sm90Config(loader="tma", schedule="ws", cluster=2)).validate()
    with pytest.raises(GemmConfigError, match="f16 or bf16"):
        kg.generate_grouped(CFG, GemmProblem("k", "k", "e4m3"))


# ---------------------------------------------------------------------------- the search
def test_group_search_proven():
    log = ProofLog()
    kg.prove_group_search(128, 1024, log)
    assert log.proofs[-1].cases > 40000


@pytest.mark.parametrize("plant", ["lt", "prefix", "step"])
def test_group_search_planted_bugs_caught(plant):
    stmts = kg._search_stmts(128, 1024, plant)[1]
    with pytest.raises(ProofFailedError, match="lp_group"):
        kg.prove_group_search(128, 1024, ProofLog(), stmts)


def test_search_proven_for_every_table_and_planted_bugs_caught():
    log = ProofLog()
    kg.prove_search_monotone(1024, log)
    assert log.proofs[-1].cases == 1024 * 1025 // 2
    with pytest.raises(ProofFailedError, match="not ptile"):
        kg.prove_search_monotone(64, ProofLog(), kg._search_stmts(128, 64, "lt")[1])
    with pytest.raises(ProofFailedError, match="finds group"):
        kg.prove_search_monotone(64, ProofLog(), kg._search_stmts(128, 64, "step")[1])
    # fewer steps than the groups need: 3 steps resolve 8 groups, not 9
    with pytest.raises(ProofFailedError, match="finds group"):
        kg.prove_search_monotone(16, ProofLog(), kg._search_stmts(128, 8)[1])


def test_group_search_read_outside_table_caught():
    # the bound check g + s < G dropped: the search reads past the ptile part of the table
    tm, gtab, G = kir.Var("tm"), kir.Var("gtab", "const int*"), kir.Var("G")
    g, m0, rend = kir.Var("g"), kir.Var("m0"), kir.Var("rend")
    stmts = [kir.Assign(g, kir.Const(0))]
    for s in (4, 2, 1):
        stmts.append(kir.If(kir.Index(gtab, (g + s,)).le(tm), kir.block(kir.Assign(g, g + s))))
    stmts += [
        kir.Assign(m0, kir.Index(gtab, (G + g,)) + (tm - kir.Index(gtab, (g,))) * 128),
        kir.Assign(rend, kir.Index(gtab, (2 * G + g,))),
    ]
    with pytest.raises(ProofFailedError):
        kg.prove_group_search(128, 8, ProofLog(), stmts)
    with pytest.raises(ProofFailedError, match="reads ptile"):
        kg.prove_search_monotone(8, ProofLog(), stmts)


# ---------------------------------------------------------------------------- the cover
def test_group_cover_proven():
    log = ProofLog()
    kg.prove_group_cover(CFG, log)
    assert log.proofs[-1].kind == "bijective" and log.proofs[-1].cases > 10000


def _prefix_off_by_one(form, sizes, max_m, bm):
    tab, rt, up, rb, re_ = kg._tables(form, sizes, max_m, bm)
    tab[1 : sizes.size] += 1  # ptile[g] one too many for every group after the first
    return tab, rt, up, rb, re_


def _end_short(form, sizes, max_m, bm):
    tab, rt, up, rb, re_ = kg._tables(form, sizes, max_m, bm)
    n = sizes.size
    tab[2 * n : 3 * n] -= 1  # rend one short: the last row of each group is never stored
    return tab, rt, up, rb, re_


def _tiles_floor(form, sizes, max_m, bm):
    tab, rt, up, rb, re_ = kg._tables(form, sizes, max_m, bm)
    n = sizes.size
    if form == "contiguous":  # tile rows counted floor(size / bm): a tail tile lost
        tiles = (re_ - rb) // bm
        tab[:n] = np.concatenate([[0], np.cumsum(tiles)[:-1]])
        rt = int(tiles.sum())
    return tab, rt, up, rb, re_


def _count_over(form, sizes, max_m, bm):
    tab, rt, up, rb, re_ = kg._tables(form, sizes, max_m, bm)
    tab[3 * sizes.size] += 1  # one tile row more than the groups own: an empty tile
    return tab, rt, up, rb, re_


def _count_under(form, sizes, max_m, bm):
    tab, rt, up, rb, re_ = kg._tables(form, sizes, max_m, bm)
    tab[3 * sizes.size] -= 1  # one tile row short: the last group's last tile row never runs
    return tab, rt, up, rb, re_


def _masked_fixed_prefix(form, sizes, max_m, bm):
    """The masked table with a fixed prefix, ceil(max_m / bm) tile rows a group whatever its
    count: a valid cover on the ws base (the tiles past a count are empty), not on ping-pong."""
    tab, rt, up, rb, re_ = kg._tables(form, sizes, max_m, bm)
    if form == "masked":
        G = sizes.size
        tab[:G] = np.arange(G) * -(-max_m // bm)
        tab[3 * G] = rt = up
    return tab, rt, up, rb, re_


@pytest.mark.parametrize("cfg", [CFG, PP], ids=["ws", "pingpong"])
@pytest.mark.parametrize("bad", [_prefix_off_by_one, _end_short, _tiles_floor], ids=lambda f: f.__name__)
def test_group_cover_planted_table_bugs_caught(bad, cfg):
    with pytest.raises(ProofFailedError, match="grouped cover"):
        kg.prove_group_cover(cfg, ProofLog(), table=bad)


def test_pingpong_cover_proven_and_planted_counts_caught():
    log = ProofLog()
    kg.prove_group_cover(PP, log)
    p = log.proofs[-1]
    assert p.kind == "bijective" and p.cases > 10000 and "no tile empty" in p.statement
    assert "masked: 3 groups" in p.statement  # the masked form's compact prefix, on ping-pong too
    # a masked prefix fixed at ceil(max_m / bm) tile rows a group leaves tiles empty
    with pytest.raises(ProofFailedError, match="empty on the ping-pong base"):
        kg.prove_group_cover(PP, ProofLog(), table=_masked_fixed_prefix)
    kg.prove_group_cover(CFG, ProofLog(), table=_masked_fixed_prefix)
    with pytest.raises(ProofFailedError, match="empty on the ping-pong base") as e:
        kg.prove_group_cover(PP, ProofLog(), table=_count_over)
    assert e.value.condition == "no empty tile"
    with pytest.raises(ProofFailedError, match="taken 0 times"):
        kg.prove_group_cover(PP, ProofLog(), table=_count_under)
    # the warp-specialized base walks rtiles and never reads the count
    kg.prove_group_cover(CFG, ProofLog(), table=_count_over)


def test_group_cover_planted_search_bug_caught():
    with pytest.raises(ProofFailedError, match="grouped cover"):
        kg.prove_group_cover(CFG, ProofLog(), search=kg._search_stmts(CFG.bm, CFG.max_groups, "lt")[1])


# ---------------------------------------------------------------------------- the rewrite
def test_store_guarded_by_group_end_only_is_refused(kern):
    # without r < M, a garbage table could send a store past C: the bound obligation fails
    def drop_m(n):
        if isinstance(n, kir.If) and isinstance(n.cond, kir.Bin) and n.cond.op == "&&":
            return replace(n, cond=n.cond.a)
        return None

    bad = replace(kern.ir, body=kir.rewrite(kern.ir.body, drop_m))
    with pytest.raises(ProofFailedError, match="no enclosing guard"):
        obligations.discharge(bad, ProofLog())


def test_consumers_not_skipping_empty_tiles_is_refused(kern):
    KT = next(n.var for n in kir.walk(kern.ir.body) if isinstance(n, kir.Decl) and n.var.name == "KT")
    done = []

    def consumer_full_k(n):  # the consumers' k-loop back to KT (the producer still skips)
        if isinstance(n, kir.For) and getattr(n.stop, "name", "") == "kte" and not done:
            if any(isinstance(x, kir.Wgmma) for x in kir.walk(n.body)):
                done.append(1)
                return replace(n, stop=KT)
        return None

    bad = replace(kern.ir, body=kir.rewrite(kern.ir.body, consumer_full_k))
    assert done
    with pytest.raises(ProofFailedError, match="empty tiles"):
        kg._check_empty_tiles(bad, ProofLog())


def test_b_box_at_another_expert_is_refused(kern):
    log = ProofLog()
    kg.check_group_coordinates(kern.ir, log)
    assert log.proofs[-1].cases == 6  # 2 A boxes + 4 B boxes

    def tm_as_expert(n):  # bidx = tm (the tile row) instead of the group
        if isinstance(n, kir.Decl) and n.var.name == "bidx":
            call = next(
                x for x in kir.walk(kern.ir.body) if isinstance(x, kir.Eval) and x.e.name == "lp_group"
            )
            return replace(n, init=call.e.args[0])
        return None

    bad = replace(kern.ir, body=kir.rewrite(kern.ir.body, tm_as_expert))
    with pytest.raises(ProofFailedError, match="batch coordinate"):
        kg.check_group_coordinates(bad, ProofLog())


# ---------------------------------------------------------------------------- the ping-pong base
@pytest.fixture(scope="module")
def kern_pp():
    return kg.generate_grouped(PP, GemmProblem("k", "n", "bf16"))


def test_pingpong_grouped_kernel_carries_every_proof(kern_pp):
    src = kern_pp.source
    assert "lp_grid_rows(rtiles, gtab, G, grid_m);" in src
    assert src.count("lp_group(tm, gtab, G, g, gm0, rend);") == 2  # producer and consumers
    assert "const int m0 = gm0 - 64 * cg;" in src  # a consumer's own 64-row tile
    assert "if (r < rend && r < M)" in src
    assert "kte" not in src  # every tile holds rows: whole k-loops on both sides
    said = [p.statement for p in kern_pp.proofs]
    assert sum(x.startswith("ping-pong cover") for x in said) == 1  # on the rewritten tree
    for stmt in ("no tile empty", "ping-pong mbarrier ring", "grouped TMA loads", "lp_group (halving search"):
        assert any(stmt in x for x in said), stmt
    assert _all_covered(src)
    assert tuple(v.name for _, v in kern_pp.ir.params) == hg.KERNEL_ARGS
    assert (kern_pp.threads, kern_pp.config.bm) == (384, 64)


def test_pingpong_grouped_config_refuses_by_name():
    replace(PP, per_group_maps=True).validate()  # the list form reads per-group maps on it too
    with pytest.raises(GemmConfigError, match="warp-specialized base"):
        replace(PP, skip_slices=True).validate()
    with pytest.raises(GemmConfigError, match="warp-specialized or ping-pong"):
        kg.GroupedConfig(base=Sm90Config(loader="tma", schedule="mono")).validate()


def test_pingpong_tile_rows_not_the_proven_ones_refused(kern_pp):
    def rtiles_only(n):  # grid_m = rtiles on the ping-pong base: empty tiles desync the ring
        if isinstance(n, kir.Eval) and isinstance(n.e, kir.Call) and n.e.name == "lp_grid_rows":
            return kir.Assign(n.e.args[3], n.e.args[0])
        return None

    bad = replace(kern_pp.ir, body=kir.rewrite(kern_pp.ir.body, rtiles_only))
    with pytest.raises(ProofFailedError, match="lp_grid_rows"):
        kg._check_grid_m(bad, PP)
    kg._check_grid_m(kern_pp.ir, PP)


def test_default_grouped_configs():
    assert hg.grouped_config(5, "contiguous").pingpong and hg.grouped_config(5, "contiguous").bm == 64
    assert hg.grouped_config(5, "masked").pingpong  # the masked form: the same rule, its allocated rows
    assert not hg.grouped_config(128, "masked", 128 * 128, 4096).pingpong
    assert hg.grouped_config(5, "maps", 5000, 8192).pingpong  # the list form: the same rule
    assert not hg.grouped_config(128, "maps", 128 * 128, 4096).pingpong
    assert hg.grouped_config(129, "contiguous").max_groups == 256
    # the contiguous form: the ws base for a long K and groups of 65-511 rows on average
    k, (lo, hi) = hg.GROUPED_RULE["k"], hg.GROUPED_RULE["rows"]
    for G, rows, K, pp in (
        (128, 128 * 128, k, False),  # qwen3-up: 128 rows a group, K = 4096
        (128, 128 * 128, k - 1, True),  # a shorter K
        (8, 8 * 1024, k, True),  # mixtral: 1024 rows a group
        (128, 128 * 32, 7168, True),  # 32 rows a group: one 64-row tile each
        (10, 10 * lo, k, False),
        (10, 10 * lo - 1, k, True),
        (10, 10 * hi - 1, k, False),
        (10, 10 * hi, k, True),
    ):
        assert hg.grouped_config(G, "contiguous", rows, K).pingpong == pp, (G, rows, K)


# ---------------------------------------------------------------------------- host tables
@pytest.mark.parametrize("seed", range(5))
def test_host_tables_are_the_proven_tables(seed):
    rng = np.random.default_rng(seed)
    G = int(rng.integers(1, 130))
    sizes = rng.integers(0, 400, size=G)
    sizes[rng.random(G) < 0.3] = 0
    ends = np.cumsum(sizes).astype(np.int32)
    tab, rt = hg.moe_table(np, ends, 128, int(ends[-1]))
    want, rt_exact, upper, _, _ = kg._tables("contiguous", sizes.astype(np.int64), 0, 128)
    assert tab.dtype == np.int32 and np.array_equal(tab, want) and rt == upper >= rt_exact
    max_m = int(rng.integers(1, 600))
    mm = rng.integers(-3, max_m + 50, size=G).astype(np.int32)
    tab2, rt2 = hg.masked_table(np, mm, max_m, 128)
    want2, rtm, upm, _, _ = kg._tables("masked", np.clip(mm, 0, None).astype(np.int64), max_m, 128)
    # the compact prefix; the launch walks the upper bound, the table's count caps it
    assert np.array_equal(tab2, want2) and rt2 == upm >= rtm == tab2[-1]


# ---------------------------------------------------------------------------- bad input
class _FakeTensor:
    """Just enough of a torch tensor for the checks made before any device work."""

    def __init__(self, shape, dtype="torch.bfloat16", cuda=True, dev=0, stride=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.is_cuda = cuda
        self.device = type("D", (), {"index": dev})()
        st, acc = [], 1
        for n in reversed(self.shape):
            st.append(acc)
            acc *= n
        self._stride = tuple(stride) if stride else tuple(reversed(st))

    def data_ptr(self):
        return 1 << 20

    def stride(self):
        return self._stride


_FakeTensor.__module__ = "torch"


@pytest.mark.parametrize(
    "args, kw, match",
    [
        (((8, 64), (2, 64, 32)), dict(cuda_a=False), "CPU tensor"),
        (((8, 64), (2, 48, 32)), {}, "share one K"),
        (((8, 64), (2, 64, 32)), dict(offs_dtype="torch.int64"), "int32"),
        (((8, 64), (2, 64, 32)), dict(offs_stride=(2,)), "contiguous int32"),
        (((8, 64), (2, 64, 32)), dict(dev_b=1), "devices"),
        (((8, 64), (2, 64, 32)), dict(sizes=[5, 5]), "summing to at most"),
        (((8, 64), (2, 64, 32)), dict(a_dtype="torch.float16"), "both float16 or both bfloat16"),
    ],
)
def test_bad_input_refused_by_name(args, kw, match):
    a = _FakeTensor(args[0], dtype=kw.get("a_dtype", "torch.bfloat16"), cuda=kw.get("cuda_a", True))
    b = _FakeTensor(args[1], dev=kw.get("dev_b", 0))
    if "sizes" in kw:
        with pytest.raises(GemmInputError, match=match):
            hg.gemm_moe(a, b, sizes=kw["sizes"])
        return
    offs = _FakeTensor((2,), dtype=kw.get("offs_dtype", "torch.int32"), stride=kw.get("offs_stride"))
    with pytest.raises(GemmInputError, match=match):
        hg.gemm_moe(a, b, offs)


def test_numpy_and_mismatched_groups_refused():
    with pytest.raises(GemmInputError, match="CuPy array or a CUDA torch tensor"):
        hg.gemm_moe(np.zeros((4, 8)), np.zeros((1, 8, 8)), sizes=[4])
    with pytest.raises(GemmInputError, match="one of each per group"):
        hg.gemm_grouped([_FakeTensor((4, 64))], [])
    with pytest.raises(GemmInputError, match="one K and one N"):
        hg.gemm_grouped(
            [_FakeTensor((4, 64)), _FakeTensor((4, 64))], [_FakeTensor((64, 32)), _FakeTensor((64, 16))]
        )
    with pytest.raises(GemmInputError, match="one shape"):
        hg.gemm_array([_FakeTensor((4, 64)), _FakeTensor((5, 64))], [_FakeTensor((64, 32))] * 2)


def test_consecutive_blocks_detected():
    assert hg.consecutive([0, 0, 12, 12], [0, 3, 0, 5], 4)  # empty blocks anywhere
    assert not hg.consecutive([0, 16], [3, 5], 4)  # a gap
    assert not hg.consecutive([0, 8], [3, 5], 4)  # an overlap


# ---------------------------------------------------------------------------- nvcc
@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("cfg", [CFG, PP], ids=["ws", "pingpong"])
@pytest.mark.parametrize(
    "prob", [GemmProblem("k", "n", "bf16"), GemmProblem("k", "k", "f16")], ids=lambda p: p.key()
)
def test_grouped_source_compiles_without_spills(tmp_path, prob, cfg):
    k = kg.generate_grouped(cfg, prob)
    info = _nvcc_sm90a(k.source, tmp_path)
    assert "C7508" not in info, info
    assert re.search(r"(\d+) bytes stack frame", info).group(1) == "0", info


# ---------------------------------------------------------------------------- GPU
def _gpu() -> bool:
    try:
        from layoutproof.gpu.host import device

        return device.gpu_available() and device.tma_available()
    except Exception:
        return False


gpu = pytest.mark.skipif(not _gpu(), reason="no CUDA GPU / CuPy / cuda-python")


@gpu
@pytest.mark.parametrize("base", ["pingpong", "ws"])
@pytest.mark.parametrize("sizes", [[0, 130, 1, 0, 257], [64], [0, 0, 3], [65, 63, 0, 1, 700]])
def test_gemm_moe_matches_float64_on_gpu(sizes, base):
    cp = pytest.importorskip("cupy")  # the gpu extra; present wherever _gpu() holds

    rng = np.random.default_rng(1)
    T, K, N, G = int(sum(sizes)) + 5, 192, 320, len(sizes)
    a = rng.standard_normal((T, K)).astype(np.float16)
    b = rng.standard_normal((G, K, N)).astype(np.float16)
    ends = np.cumsum(sizes).astype(np.int32)
    cfg = None if base == "pingpong" else kg.GroupedConfig(max_groups=8)  # the default: ping-pong
    c1 = hg.gemm_moe(cp.asarray(a), cp.asarray(b), cp.asarray(ends), config=cfg).get()
    assert hg.last_grouped_launch["config"].pingpong == (base == "pingpong")
    c2 = hg.gemm_moe(cp.asarray(a), cp.asarray(b), sizes=sizes, config=cfg).get()
    beg = 0
    for g, s in enumerate(sizes):
        ref = a[beg : beg + s].astype(np.float64) @ b[g].astype(np.float64)
        for c in (c1, c2):
            np.testing.assert_allclose(c[beg : beg + s], ref, rtol=2e-2, atol=2e-1)
        beg += s


@gpu
def test_device_table_in_one_launch_is_moe_table():
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(4)
    for G in (1, 2, 7, 64, 128, 1000, 1024):
        sizes = rng.integers(0, 400, size=G)
        sizes[rng.random(G) < 0.3] = 0
        ends = np.cumsum(sizes).astype(np.int32)
        src = hg._arr(cp.asarray(ends), "offs", False)
        for bm in (64, 128):
            tab, _ = hg._device_table(src, G, bm, 0, 0, None)
            assert np.array_equal(tab.get(), hg.moe_table(np, ends, bm, int(ends[-1]))[0]), (G, bm)
        mm = rng.integers(-3, 300, size=G).astype(np.int32)
        srcm = hg._arr(cp.asarray(mm), "masked_m", False)
        for max_m in (1, 128, 257):
            tab, _ = hg._device_table(srcm, G, 128, 1, max_m, None)
            assert np.array_equal(tab.get(), hg.masked_table(np, mm, max_m, 128)[0]), (G, max_m)


@gpu
def test_sizes_table_by_value_is_group_table():
    """The host-sizes table kernel (sizes in the launch's parameters) builds group_table's
    table, for group counts up to its bound and sizes with zeros."""
    cp = pytest.importorskip("cupy")
    from layoutproof.gpu.host import device
    from layoutproof.gpu.host.rule import ParamBuffer

    lk, fn = hg._sizes_kernel(0, cp)
    if lk is None:
        pytest.skip("CuPy's driver module has no launchKernel")
    rng = np.random.default_rng(8)
    pb = ParamBuffer((f"i32x{hg.SIZES_BY_VALUE}", "i32", "i32", "ptr"))
    for G in (1, 2, 7, 64, 128, 511, hg.SIZES_BY_VALUE):
        sizes = rng.integers(0, 400, size=G)
        sizes[rng.random(G) < 0.3] = 0
        ends = np.cumsum(sizes)
        for bm in (64, 128):
            tab = cp.full(3 * G + 1, -1, dtype=cp.int32)
            pb.view(0)[:] = 0
            pb.view(0)[:G] = sizes
            pb.set(1, G)
            pb.set(2, bm)
            pb.set(3, int(tab.data.ptr))
            stream = cp.cuda.get_current_stream()
            lk(fn, 1, 1, 1, hg.SIZES_BY_VALUE, 1, 1, 0, stream.ptr, pb.address, 0)
            stream.synchronize()
            assert np.array_equal(tab.get(), hg.group_table(ends - sizes, ends, bm)[0]), (G, bm)
    assert device.launch_kernel(cp) is lk


# ---------------------------------------------------------------------------- a fake device
# CuPy stood in by numpy memory (arrays that say they are CuPy's), the tensor maps recorded
# as what they describe, and the launch carried out by an emulator of the kernel: the
# emitted scheduler statements (lp_tile, lp_group) run on the table the host built, and
# each non-empty tile's rows computed from the operands the tensor maps describe.  So the
# host's tables, arguments, extents and stacking are checked end to end without a GPU.
class _CpArr(np.ndarray):
    @property
    def data(self):
        root = self
        while isinstance(root.base, np.ndarray):
            root = root.base
        mem = types.SimpleNamespace(ptr=root.__array_interface__["data"][0], size=root.nbytes)
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0], mem=mem)

    @property
    def device(self):
        return types.SimpleNamespace(id=0)


_CpArr.__module__ = "cupy"


class _FakeCp:
    def __init__(self):
        self.launches = []
        dev = types.SimpleNamespace(id=0, compute_capability="90", __enter__=None)
        self.cuda = types.SimpleNamespace(Device=lambda i=0: contextlib.nullcontext(dev))

    def ndarray(self, shape, dtype, memptr, strides):
        it = np.dtype(dtype).itemsize
        span = it + sum((n - 1) * s for n, s in zip(shape, strides))
        buf = (ctypes.c_char * span).from_address(memptr.ptr)
        return np.ndarray(shape, dtype, buffer=buf, strides=strides).view(_CpArr)

    def __getattr__(self, name):
        f = getattr(np, name)
        if callable(f) and not isinstance(f, type):

            def wrapped(*a, **k):
                r = f(*a, **k)
                return r.view(_CpArr) if isinstance(r, np.ndarray) else r

            return wrapped
        return f


def _mem(ptr, n, ctype):
    return np.ctypeslib.as_array((ctype * n).from_address(ptr))


#: the fake device's per-group map arrays: fake address -> list of map records
GROUP_MAPS = {}


def _map_rows(ta, lo, hi):
    """Rows ``[lo, hi)`` of a 2-D map (zero past its extent), read row by row from memory."""
    out = np.zeros((hi - lo, ta["inner"]))
    n = min(hi, ta["outer"]) - lo
    if n > 0:
        flat = _mem(ta["ptr"] + 2 * lo * ta["ld"], (n - 1) * ta["ld"] + ta["inner"], ctypes.c_uint16)
        rows = np.lib.stride_tricks.as_strided(flat, (n, ta["inner"]), (2 * ta["ld"], 2))
        out[:n] = rows.view(np.float16)
    return out


def _map_expert(tb, g, b_major):
    """Expert ``g`` of a rank-3 map (K x N), read from memory at its batch coordinate."""
    Gb, sb = tb["batch"]
    assert 0 <= g < Gb
    x = _mem(tb["ptr"] + 2 * g * sb, tb["outer"] * tb["ld"], ctypes.c_uint16).view(np.float16)
    x = x.reshape(tb["outer"], tb["ld"])[:, : tb["inner"]]
    return (x if b_major == "n" else x.T).astype(np.float64)


def _emulate(kern, args, cfg):
    """Carry out one launch of the grouped kernel as its proven schedule says (through the
    one stacked map of A and of B, or through group g's own maps)."""
    pm = cfg.per_group_maps
    v = dict(zip(hg.KERNEL_ARGS_MAPS if pm else hg.KERNEL_ARGS, args))
    M, N, K, G, rt = (int(v[n]) for n in ("M", "N", "K", "G", "rtiles"))
    tab = _mem(int(v["gtab"]), 3 * G + 1, ctypes.c_int32).astype(np.int64)
    if pm:
        amaps, bmaps = GROUP_MAPS[int(v["tmAs"])], GROUP_MAPS[int(v["tmBs"])]
        assert len(amaps) == len(bmaps) == G
    else:
        amaps, bmaps = [v["tmA"]] * G, [v["tmB"]] * G
    bmat = {}
    c = _mem(int(v["C"]), M * int(v["ldc"]), ctypes.c_uint16).view(np.float16).reshape(M, int(v["ldc"]))
    bm, bn = cfg.bm, cfg.bn
    grid_n = -(-N // bn)
    if cfg.pingpong:  # the tile rows the kernel walks: rtiles capped by the table's count
        e0 = {"rtiles": np.array([rt]), "rows": np.array([rt]), "G": np.int64(G)}
        kg._run(list(kg.grid_rows_devfn()[2].body), e0, tab, np.ones(1, bool), [])
        rt = int(e0["rows"][0])
    t = np.arange(rt * grid_n, dtype=np.int64)
    env = {"t": t, "grid_m": np.int64(rt), "grid_n": np.int64(grid_n)}
    kg._run(list(kg.schedule_devfn(cfg.base.group_m)[2].body), env, None, np.ones(t.shape, bool), [])
    g, m0, rend = kg._search(kg._search_stmts(bm, cfg.max_groups)[1], env["tm"], tab, G)
    for i in range(t.size):
        if m0[i] >= rend[i]:
            continue
        r1 = min(int(m0[i]) + bm, int(rend[i]), M)
        c0 = int(env["tn"][i]) * bn
        c1 = min(c0 + bn, N)
        lo, gi = int(m0[i]), int(g[i])
        assert lo >= tab[G + gi]  # a tile never reads rows before its group's (its map's base)
        rows = _map_rows(amaps[gi], lo, lo + bm)  # rows past the map's extent are zero-filled
        if gi not in bmat:
            bmat[gi] = _map_expert(bmaps[gi], gi, kern.problem.b_major)
        c[lo:r1, c0:c1] = (rows @ bmat[gi][:, c0:c1])[: r1 - lo].astype(np.float16)


@pytest.fixture
def fake_gpu(monkeypatch):
    from layoutproof.gpu.host import cache, device

    cp = _FakeCp()
    monkeypatch.setattr(device, "cupy", lambda: cp)
    monkeypatch.setattr(device, "sm_count", lambda _cp: 132)
    # the host's caches of device objects start empty: on a machine with a GPU an earlier
    # real launch may have left a device table (a device pointer) under the same sizes
    for name in ("_TABLES", "_MAPS", "_GROUP_MAPS", "_TABLE_KERNELS", "_SIZES_KERNELS"):
        monkeypatch.setattr(hg, name, {})

    def fake_map(ptr, dt, inner, outer, ld, batch):
        return dict(ptr=ptr, inner=inner, outer=outer, ld=ld, batch=batch)

    monkeypatch.setattr(hg, "_tensor_map", fake_map)

    def fake_group_maps(plan, dt, K, N, like):
        major, amaps, bmaps = plan
        G = len(amaps)
        A = [fake_map(ab, dt, K, re if re > rb else 1, lda, None) for ab, rb, re, lda in amaps]
        B = [
            fake_map(bb, dt, N, K, ldb, (G, bs)) if major == "n" else fake_map(bb, dt, K, N, ldb, (G, bs))
            for bb, ldb, bs in bmaps
        ]
        base = 1 << 20 + len(GROUP_MAPS)
        GROUP_MAPS[base], GROUP_MAPS[base + 128 * G] = A, B
        return None, base, base + 128 * G

    monkeypatch.setattr(hg, "_group_maps_device", fake_group_maps)

    def fake_table(src, G, bm, kind, arg, torch_mod):  # the one-launch table, as moe_table builds it
        x = np.asarray(src.x)
        tab = hg.moe_table(np, x, bm, 0)[0] if kind == 0 else hg.masked_table(np, x, arg, bm)[0]
        tab = tab.view(_CpArr)
        return tab, tab.data.ptr

    monkeypatch.setattr(hg, "_device_table", fake_table)

    def compile_kernel(kern):
        def run(grid, block, args, shared_mem=0):
            names = hg.KERNEL_ARGS_MAPS if kern.config.per_group_maps else hg.KERNEL_ARGS
            cp.launches.append(dict(zip(names, args)))
            _emulate(kern, args, kern.config)

        return run

    monkeypatch.setattr(cache, "compile_kernel", compile_kernel)
    return cp


def _cp(x):
    return np.ascontiguousarray(x).view(_CpArr)


def _ref(a, b, sizes):
    out, beg = [], 0
    for g, s in enumerate(sizes):
        out.append(a[beg : beg + s].astype(np.float64) @ b[g].astype(np.float64))
        beg += s
    return out


@pytest.mark.parametrize("b_major", ["n", "k"])
@pytest.mark.parametrize("sizes", [[0, 130, 1, 0, 257], [64], [0, 0, 3], [300, 0]])
def test_host_moe_end_to_end_on_a_fake_device(fake_gpu, sizes, b_major):
    rng = np.random.default_rng(len(sizes))
    G, K, N = len(sizes), 64, 72
    T = sum(sizes) + 3
    a = rng.standard_normal((T, K)).astype(np.float16)
    b = rng.standard_normal((G, K, N)).astype(np.float16)
    bd = _cp(b) if b_major == "n" else _cp(b.transpose(0, 2, 1)).transpose(0, 2, 1)
    ends = np.cumsum(sizes).astype(np.int32)
    for kw in (dict(offs=_cp(ends)), dict(sizes=sizes)):
        c = np.asarray(hg.gemm_moe(_cp(a), bd, **kw))
        beg = 0
        for g, ref in enumerate(_ref(a, b, sizes)):
            np.testing.assert_allclose(c[beg : beg + sizes[g]], ref, rtol=1e-2, atol=5e-2)
            beg += sizes[g]
    assert hg.last_grouped_launch["groups"] == G and fake_gpu.launches


def _masked_on_fake(rng, config=None):
    """The masked form on a fake device against float64; returns its B and K."""
    G, max_m, K, N = 3, 140, 64, 40
    a = rng.standard_normal((G, max_m, K)).astype(np.float16)
    b = rng.standard_normal((G, K, N)).astype(np.float16)
    mm = np.array([0, 140, 5], dtype=np.int32)
    c = np.asarray(hg.gemm_moe_masked(_cp(a), _cp(b), _cp(mm), config=config))
    for g in range(G):
        ref = a[g, : mm[g]].astype(np.float64) @ b[g].astype(np.float64)
        np.testing.assert_allclose(c[g, : mm[g]], ref, rtol=1e-2, atol=5e-2)
    return b, K


def test_host_masked_and_lists_on_a_fake_device(fake_gpu):
    rng = np.random.default_rng(7)
    b, K = _masked_on_fake(rng)
    # the masked form follows the contiguous form's rule (here a short K: the ping-pong base),
    # its compact prefix walking no empty tile; on the ws base too
    assert hg.last_grouped_launch["config"].pingpong
    _masked_on_fake(rng, config=replace(PP, base=HOPPER_DEFAULT))
    assert not hg.last_grouped_launch["config"].pingpong
    sizes = [3, 0, 129]
    stacked = _cp(rng.standard_normal((sum(sizes), K)).astype(np.float16))
    a_list = [stacked[0:3], stacked[3:3], stacked[3:]]
    b_list = [_cp(b[g]) for g in range(3)]
    outs = hg.gemm_grouped(a_list, b_list)
    assert fake_gpu.launches[-1]["tmA"]["ptr"] == stacked.data.ptr  # consecutive blocks: read in place
    for g, ref in enumerate(_ref(np.asarray(stacked), b, sizes)):
        np.testing.assert_allclose(np.asarray(outs[g]), ref, rtol=1e-2, atol=5e-2)
    same = [_cp(rng.standard_normal((5, K)).astype(np.float16)) for _ in range(3)]
    outs = hg.gemm_array(same, b_list)
    for g in range(3):
        ref = np.asarray(same[g]).astype(np.float64) @ b[g].astype(np.float64)
        np.testing.assert_allclose(np.asarray(outs[g]), ref, rtol=1e-2, atol=5e-2)


# ---------------------------------------------------------------------------- the direct launch
_KIND_OF = {"C": "ptr", "gtab": "ptr", "tmAs": "ptr", "tmBs": "ptr", "ldc": "i64", "ldcb": "i64"}


def _read_params(names, addr):
    """The values a ``cuLaunchKernel`` reads from the ``void*`` array at ``addr``: tensor maps
    decoded back into what they describe (the fake encoder's words), the rest by kind."""
    table = (ctypes.c_uint64 * len(names)).from_address(addr)
    out = []
    for i, n in enumerate(names):
        if n in ("tmA", "tmB"):
            w = np.ctypeslib.as_array((ctypes.c_uint64 * 16).from_address(table[i]))
            out.append(
                dict(
                    ptr=int(w[0]),
                    inner=int(w[1]),
                    outer=int(w[2]),
                    ld=int(w[3]),
                    batch=None if w[4] == 0 else (int(w[4]), int(w[5])),
                )
            )
            continue
        kind = _KIND_OF.get(n, "i32")
        ct = {"ptr": ctypes.c_uint64, "i64": ctypes.c_int64, "i32": ctypes.c_int32}[kind]
        out.append(ct.from_address(table[i]).value)
    return out


@pytest.fixture
def fake_direct(fake_gpu, monkeypatch):
    """The fake device with CuPy's driver ``launchKernel``: the grouped kernel and the table
    kernel launch from their packed parameter blocks, decoded and carried out here."""
    from layoutproof.gpu.host import cache

    cp = fake_gpu
    kernels, table_fn, sizes_fn = {}, 7, 8
    cp.direct = []
    encoded = []

    def encode(ptr, dt, inner, outer, ld, batch):
        encoded.append(ptr)
        w = np.zeros(16, dtype=np.uint64)
        w[:6] = [ptr, inner, outer, ld] + (list(batch) if batch else [0, 0])
        return w.view(hg._TMAP_REC)[0]

    monkeypatch.setattr(hg, "_tensor_map", encode)

    def launch_kernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        if fn == sizes_fn:  # the host-sizes table kernel: 512 sizes by value, G, bm, tab
            table = (ctypes.c_uint64 * 4).from_address(params)
            G, bm = (ctypes.c_int32.from_address(table[i]).value for i in (1, 2))
            tab = ctypes.c_uint64.from_address(table[3]).value
            sz = _mem(table[0], hg.SIZES_BY_VALUE, ctypes.c_int32)[:G].astype(np.int64)
            assert bx == hg.SIZES_BY_VALUE and (sz >= 0).all()
            ends = np.cumsum(sz)
            _mem(tab, 3 * G + 1, ctypes.c_int32)[:] = hg.group_table(ends - sz, ends, bm)[0]
            cp.direct.append(("sizes table", stream))
            return
        if fn == table_fn:  # the group table kernel: src, G, bm, kind, arg, tab
            src, G, bm, kind, arg, tab = _read_params(("C", "G", "K", "M", "N", "C"), params)
            x = _mem(src, G, ctypes.c_int32)
            t = hg.moe_table(np, x, bm, 0)[0] if kind == 0 else hg.masked_table(np, x, arg, bm)[0]
            _mem(tab, 3 * G + 1, ctypes.c_int32)[:] = t
            cp.direct.append(("table", stream))
            return
        kern = kernels[fn]
        names = hg.KERNEL_ARGS_MAPS if kern.config.per_group_maps else hg.KERNEL_ARGS
        args = _read_params(names, params)
        cp.direct.append((dict(zip(names, args)), stream, (gx, bx, smem)))
        _emulate(kern, args, kern.config)

    cp.cuda.driver = types.SimpleNamespace(launchKernel=launch_kernel)
    cp.cuda.runtime = types.SimpleNamespace(getDevice=lambda: 0)
    cp.cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=0x5)
    cp.encoded = encoded

    def compile_kernel(kern):
        fn = 100 + len(kernels)
        kernels[fn] = kern
        return types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=fn))

    monkeypatch.setattr(cache, "compile_kernel", compile_kernel)

    class _RawKernel:
        def __init__(self, src, name, options=()):
            assert name in ("lp_group_table", "lp_group_table_sizes")
            self.kernel = types.SimpleNamespace(ptr=table_fn if name == "lp_group_table" else sizes_fn)

        def compile(self):
            return None

    cp.RawKernel = _RawKernel
    monkeypatch.setattr(hg, "_device_table", _REAL_DEVICE_TABLE)
    monkeypatch.setattr(hg, "_LAUNCHES", {})
    return cp


_REAL_DEVICE_TABLE = hg._device_table


@pytest.mark.parametrize("b_major", ["n", "k"])
def test_host_moe_direct_launch_on_a_fake_device(fake_direct, b_major):
    """A repeated call launches from the kept parameter block on the current stream: the
    per-call values (C, the table, the tile rows) set, a tensor map encoded only for a new
    base address, the table built by one launch of its own; the results are the product."""
    rng = np.random.default_rng(3)
    sizes = [0, 130, 1, 0, 257]
    G, K, N = len(sizes), 64, 72
    T = sum(sizes) + 3
    a = rng.standard_normal((T, K)).astype(np.float16)
    b = rng.standard_normal((G, K, N)).astype(np.float16)
    bd = _cp(b) if b_major == "n" else _cp(b.transpose(0, 2, 1)).transpose(0, 2, 1)
    ad = _cp(a)
    ends = _cp(np.cumsum(sizes).astype(np.int32))
    for kw in (dict(offs=ends), dict(sizes=sizes), dict(offs=ends)):
        c = np.asarray(hg.gemm_moe(ad, bd, **kw))
        beg = 0
        for g, ref in enumerate(_ref(a, b, sizes)):
            np.testing.assert_allclose(c[beg : beg + sizes[g]], ref, rtol=1e-2, atol=5e-2)
            beg += sizes[g]
        launch, stream, (grid, threads, smem) = fake_direct.direct[-1]
        assert stream == 0x5 and threads == 384 and smem > 0
        assert launch["C"] == c.__array_interface__["data"][0] and launch["M"] == T
        bm = hg.grouped_config(G, "contiguous", T, K).bm
        exact = sum(-(-n // bm) for n in sizes)
        assert launch["rtiles"] == (-(-T // bm) + G if "offs" in kw else exact)  # bound or exact
        assert grid == min(launch["rtiles"] * 1, 132)
    assert not fake_direct.launches  # never CuPy's own launcher
    assert [x for x, *_ in fake_direct.direct].count("table") == 2  # the device-offsets calls
    assert len(hg._LAUNCHES) == 1  # one kept launch for the three calls
    assert (
        sorted(set(fake_direct.encoded)) == sorted({ad.data.ptr, bd.data.ptr})
        and len(fake_direct.encoded) == 2
    )


class _TDt:
    """A torch dtype as the host reads it (its name) with the numpy type behind it."""

    def __init__(self, name, np_type):
        self.name, self.np = name, np.dtype(np_type)

    def __str__(self):
        return "torch." + self.name


_T_F16, _T_I32 = _TDt("float16", np.float16), _TDt("int32", np.int32)
_T_DEV = types.SimpleNamespace(index=0, type="cuda")


class _DevTensor:
    """A CUDA tensor of the fake device: numpy memory read through its address."""

    is_cuda = True
    device = _T_DEV

    def __init__(self, x, dtype=None):
        self.np = x
        self.dtype = dtype or {np.dtype(np.float16): _T_F16, np.dtype(np.int32): _T_I32}[x.dtype]
        self.shape = tuple(x.shape)

    def stride(self):
        return tuple(s // self.np.itemsize for s in self.np.strides)

    def data_ptr(self):
        return self.np.__array_interface__["data"][0]

    def get_device(self):
        return 0

    def is_neg(self):  # torch's negative bit (never set on the fake device's tensors)
        return False

    def pin_memory(self):
        return self

    def to(self, dev, non_blocking=False):
        assert non_blocking  # the table upload never blocks the host
        return _DevTensor(self.np.copy())


_DevTensor.__module__ = "torch"


@pytest.fixture
def fake_torch(fake_direct, monkeypatch):
    """torch on the fake device: tensors of numpy memory, ``empty``, a capture flag, the
    current stream 0x77; ``calls`` counts the general path's operand reads."""
    ft = types.SimpleNamespace(int32=_T_I32, capturing=False, reads=0)
    ft.empty = lambda shape, dtype, device: _DevTensor(np.zeros(shape, dtype=dtype.np), dtype)
    ft.from_numpy = lambda x: _DevTensor(np.ascontiguousarray(x))
    ft.cuda = types.SimpleNamespace(is_current_stream_capturing=lambda: ft.capturing)
    monkeypatch.setattr(hg, "_torch", lambda: ft)
    monkeypatch.setattr(hg, "_RAW_STREAM", [lambda dev: 0x77])
    monkeypatch.setattr(hg, "_CALLS", {})
    real_arr = hg._arr

    def counted(x, what, bf16):
        ft.reads += 1
        return real_arr(x, what, bf16)

    monkeypatch.setattr(hg, "_arr", counted)
    return ft


def _t(x):
    return _DevTensor(np.ascontiguousarray(x))


@pytest.mark.parametrize("form", ["offs", "sizes", "masked"])
def test_torch_call_signature_is_kept_on_a_fake_device(fake_torch, fake_direct, form):
    """The first torch call checks the operands and keeps the signature; the next calls
    (new data, new base addresses, host sizes that change per call) launch from the kept
    blocks on torch's stream without reading the operands again, with the right products."""
    rng = np.random.default_rng(5)
    G, K, N, T = 4, 64, 72, 300
    b = rng.standard_normal((G, K, N)).astype(np.float16)
    bt = _t(b)
    size_sets = [[0, 130, 1, 160], [200, 0, 0, 3], [0, 130, 1, 160], [1, 1, 1, 1]]
    for i, sizes in enumerate(size_sets):
        if form == "masked":
            max_m = 140
            a = rng.standard_normal((G, max_m, K)).astype(np.float16)
            c = hg.gemm_moe_masked(_t(a), bt, _t(np.array(sizes, dtype=np.int32)))
            assert c.shape == (G, max_m, N)
            for g in range(G):
                m = min(sizes[g], max_m)
                ref = a[g, :m].astype(np.float64) @ b[g].astype(np.float64)
                np.testing.assert_allclose(c.np[g, :m], ref, rtol=1e-2, atol=5e-2)
        else:
            a = rng.standard_normal((T, K)).astype(np.float16)
            kw = dict(offs=_t(np.cumsum(sizes).astype(np.int32))) if form == "offs" else dict(sizes=sizes)
            c = hg.gemm_moe(_t(a), bt, **kw)
            assert c.shape == (T, N)
            beg = 0
            for g, ref in enumerate(_ref(a, b, sizes)):
                np.testing.assert_allclose(c.np[beg : beg + sizes[g]], ref, rtol=1e-2, atol=5e-2)
                beg += sizes[g]
        if i == 0:
            reads = fake_torch.reads
            assert reads >= 2 and len(hg._CALLS) == 1
        launch, stream, _ = fake_direct.direct[-1]
        assert stream == 0x77 and launch["C"] == c.data_ptr()
        assert hg.last_grouped_launch["out"] is c and hg.last_grouped_launch["groups"] == G
    assert fake_torch.reads == reads  # the kept calls read no operand again
    assert len(hg._CALLS) == 1 and len(hg._LAUNCHES) == 1
    kinds = [x for x, *_ in fake_direct.direct]
    if form == "sizes":  # one table launch per new size vector (the repeated one is kept)
        assert kinds.count("sizes table") == 3 and kinds.count("table") == 0
    else:
        assert kinds.count("table") == len(size_sets) and kinds.count("sizes table") == 0
    assert all(s == 0x77 for _, s, *_ in fake_direct.direct)
    assert not fake_direct.launches


def test_torch_sizes_past_the_by_value_bound_are_uploaded(fake_torch, fake_direct, monkeypatch):
    """More groups than the sizes kernel takes by value: the table is built on the host and
    copied without blocking (the fake's copy asserts ``non_blocking``), once per size vector."""
    monkeypatch.setattr(hg, "SIZES_BY_VALUE", 2)
    rng = np.random.default_rng(7)
    G, K, N, T = 4, 64, 72, 300
    a = rng.standard_normal((T, K)).astype(np.float16)
    b = rng.standard_normal((G, K, N)).astype(np.float16)
    for sizes in ([0, 130, 1, 160], [0, 130, 1, 160], [7, 0, 0, 0]):
        c = hg.gemm_moe(_t(a), _t(b), sizes=sizes)
        beg = 0
        for g, ref in enumerate(_ref(a, b, sizes)):
            np.testing.assert_allclose(c.np[beg : beg + sizes[g]], ref, rtol=1e-2, atol=5e-2)
            beg += sizes[g]
    kinds = [x for x, *_ in fake_direct.direct]
    assert "sizes table" not in kinds and len(hg._TABLES) == 2


def test_host_tables_of_torch_calls_are_refused_under_capture(fake_torch):
    """Every torch route to a host-built table (gemm_grouped's lists too) refuses a capture:
    the graph would read a table this module keeps, or frees."""
    sz = np.array([1, 200], dtype=np.int64)
    fake_torch.capturing = True
    with pytest.raises(GemmInputError, match="CUDA-graph capture; stack the groups' rows"):
        hg._host_table(0, _T_DEV, sz, 128)
    fake_torch.capturing = False
    tab, ptr, rt = hg._host_table(0, _T_DEV, sz, 128)
    assert tab.np.tolist() == hg.group_table([0, 1], [1, 201], 128)[0].tolist() and rt == 3


def test_torch_calls_refusals_and_new_signatures_on_a_fake_device(fake_torch, fake_direct):
    rng = np.random.default_rng(6)
    G, K, N, T = 2, 64, 72, 200
    a = _t(rng.standard_normal((T, K)).astype(np.float16))
    b = _t(rng.standard_normal((G, K, N)).astype(np.float16))
    hg.gemm_moe(a, b, sizes=[100, 50])
    with pytest.raises(GemmInputError, match="at most T = 200"):  # per call, on the kept path too
        hg.gemm_moe(a, b, sizes=[150, 51])
    with pytest.raises(GemmInputError, match="must be integers"):
        hg.gemm_moe(a, b, sizes=[100.5, 50])
    fake_torch.capturing = True
    with pytest.raises(GemmInputError, match="CUDA-graph capture; pass offs"):
        hg.gemm_moe(a, b, sizes=[100, 50])
    hg.gemm_moe(a, b, offs=_t(np.array([100, 150], dtype=np.int32)))  # device offsets replay
    fake_torch.capturing = False
    assert len(hg._CALLS) == 2  # sizes and offs: two signatures
    wide = _t(np.zeros((T, 2 * K), dtype=np.float16))
    a2 = _DevTensor(wide.np[:, :K])  # the same shape, another row stride
    hg.gemm_moe(a2, b, sizes=[100, 50])
    assert len(hg._CALLS) == 3
    with pytest.raises(GemmInputError, match="1-D contiguous int32"):
        hg.gemm_moe(a, b, offs=_t(np.array([100, 150], dtype=np.int64).astype(np.int32)[::1].repeat(2)))


def test_masked_and_per_group_maps_direct_launch_on_a_fake_device(fake_direct):
    rng = np.random.default_rng(11)
    b, K = _masked_on_fake(rng)
    G = 3
    sizes = [3, 0, 129]
    a_list = [_cp(rng.standard_normal((m, K)).astype(np.float16)) for m in sizes]  # separate blocks
    b_list = [_cp(b[g]) for g in range(G)]
    for _ in range(2):
        outs = hg.gemm_grouped(a_list, b_list)
        launch = fake_direct.direct[-1][0]
        assert hg.last_grouped_launch["per_group_maps"] and launch["tmAs"] in GROUP_MAPS
        for g, ref in enumerate(_ref(np.concatenate([np.asarray(x) for x in a_list]), b, sizes)):
            np.testing.assert_allclose(np.asarray(outs[g]), ref, rtol=1e-2, atol=5e-2)
    assert not fake_direct.launches


def test_cupy_bfloat16_arrays_read_as_bf16():
    """CuPy builds with a bfloat16 dtype (ml_dtypes) hand it over as such; raw uint16 bits
    are bf16 only where the caller says so."""

    class _Dt:
        def __init__(self, name):
            self.name, self.itemsize = name, 2

        def __str__(self):
            return self.name

    def arr(name):
        x = type("ndarray", (), {"__module__": "cupy._core.core"})()
        x.dtype, x.shape, x.strides = _Dt(name), (4, 8), (16, 2)
        x.data = types.SimpleNamespace(ptr=0x1000)
        x.device = types.SimpleNamespace(id=0)
        return x

    assert hg._arr(arr("bfloat16"), "a", False).dtype == "bf16"
    assert hg._arr(arr("uint16"), "a", True).dtype == "bf16"
    assert hg._arr(arr("uint16"), "a", False).dtype == "uint16"
    assert hg._arr(arr("float16"), "a", False).dtype == "f16"
