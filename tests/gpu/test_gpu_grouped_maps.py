"""The grouped kernel's pointer-array form and its warpgroup skip: per-group tensor maps
(every group's A and B anywhere in memory, read in place), proven on the IR (planted: a map
of another group, a skip condition that splits a warpgroup), the host's map plan (each
group's map base and extent describe its own matrix; layouts the TMA cannot read copied,
with the reason), the list forms end to end on a fake device, the nvcc build, and the
numerics on a GPU (skipped without one)."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_grouped import _all_covered, _cp, _gpu, _ref, fake_gpu  # noqa: F401  (the fake device fixture)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmInputError, ProofFailedError
from layoutproof.gpu.host import grouped as hg
from layoutproof.gpu.kernels import grouped as kg
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

NVCC = shutil.which("nvcc")
PM = kg.GroupedConfig(max_groups=16, per_group_maps=True)
gpu = pytest.mark.skipif(not _gpu(), reason="no CUDA GPU / CuPy / cuda-python")


@pytest.fixture(scope="module")
def kern_pm():
    return kg.generate_grouped(PM, GemmProblem("k", "n", "bf16"))


# ---------------------------------------------------------------------------- the kernel
def test_per_group_map_kernel_carries_every_proof(kern_pm):
    src = kern_pm.source
    assert tuple(v.name for _, v in kern_pm.ir.params) == hg.KERNEL_ARGS_MAPS
    assert "const unsigned long long* __restrict__ tmAs" in src and "__grid_constant__" not in src
    assert "lp_gmap(tmAs, g, ptmA);" in src
    assert "const lp_tmap_t& tmA = *reinterpret_cast<const lp_tmap_t*>(ptmA);" in src
    assert "per-group tensor maps (read from the IR)" in src
    assert _all_covered(src)
    assert kern_pm.name != kg.generate_grouped(replace(PM, per_group_maps=False), kern_pm.problem).name


def test_per_group_maps_on_the_pingpong_base():
    from layoutproof.gpu.kernels.wgmma_pingpong import PINGPONG_DEFAULT

    k = kg.generate_grouped(replace(PM, base=PINGPONG_DEFAULT), GemmProblem("k", "k", "bf16"))
    src = k.source
    assert tuple(v.name for _, v in k.ir.params) == hg.KERNEL_ARGS_MAPS
    assert "lp_gmap(tmAs, g, ptmA);" in src and "lp_grid_rows(rtiles, gtab, G, grid_m);" in src
    said = [p.statement for p in k.proofs]
    assert any(x.startswith("per-group tensor maps (read from the IR)") for x in said)
    assert any(x.startswith("ping-pong cover") for x in said)
    assert _all_covered(src)

    with pytest.raises(ProofFailedError, match="tmAs\\[g\\] of the tile's group"):
        kg.check_group_maps(_next_group_map(k, "tmAs"), ProofLog())


def test_warpgroup_skip_is_in_both_forms_when_asked(kern_pm):
    assert (
        "if (cg == 1) {" not in kern_pm.source and kern_pm.source.count("lp_wgmma(acc,") == 1
    )  # default off
    for pm in (True, False):
        k = kg.generate_grouped(replace(PM, per_group_maps=pm, skip_slices=True), kern_pm.problem)
        assert "if (cg == 1) {" in k.source and "if (gm0 + 64 < rend)" in k.source
        assert k.source.count("lp_wgmma(acc,") == 2  # warpgroup 0 always, warpgroup 1 when it has rows


def _next_group_map(k, arr):
    """``k``'s IR with ``lp_gmap(arr, g + 1, ...)``: a tile reads the next group's map."""

    def next_group(n):
        if isinstance(n, kir.Eval) and isinstance(n.e, kir.Call) and n.e.name == "lp_gmap":
            if n.e.args[0].name == arr:
                return replace(n, e=replace(n.e, args=(n.e.args[0], n.e.args[1] + 1, n.e.args[2])))
        return None

    return replace(k.ir, body=kir.rewrite(k.ir.body, next_group))


def test_map_of_another_group_is_refused(kern_pm):
    with pytest.raises(ProofFailedError, match="tmBs\\[g\\] of the tile's group"):
        kg.check_group_maps(_next_group_map(kern_pm, "tmBs"), ProofLog())
    kg.check_group_maps(kern_pm.ir, ProofLog())  # the emitted one passes


def test_skip_condition_on_the_thread_is_refused(kern_pm):
    from layoutproof.gpu.proof import obligations

    kern_pm = kg.generate_grouped(replace(PM, skip_slices=True), kern_pm.problem)

    tid = next(d.var for d in kir.walk(kern_pm.ir.body) if isinstance(d, kir.Decl) and d.var.name == "tid")

    def by_tid(n):  # the skip decided per thread instead of per warpgroup
        if isinstance(n, kir.If) and "rows 64" in n.comment:
            return replace(n, cond=n.cond.and_(tid.lt(200)))
        return None

    bad = replace(kern_pm.ir, body=kir.rewrite(kern_pm.ir.body, by_tid))
    with pytest.raises(ProofFailedError, match="Wgmma under the condition"):
        obligations.discharge(bad, ProofLog())


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    "prob", [GemmProblem("k", "n", "bf16"), GemmProblem("k", "k", "f16")], ids=lambda p: p.key()
)
@pytest.mark.parametrize("schedule", ["ws", "pingpong"])
def test_per_group_map_source_compiles_without_spills(tmp_path, prob, schedule):
    from layoutproof.gpu.kernels.wgmma_pingpong import PINGPONG_DEFAULT

    k = kg.generate_grouped(PM if schedule == "ws" else replace(PM, base=PINGPONG_DEFAULT), prob)
    info = _nvcc_sm90a(k.source, tmp_path)
    assert "C7508" not in info, info
    assert re.search(r"(\d+) bytes stack frame", info).group(1) == "0", info


# ---------------------------------------------------------------------------- the map plan
class _A:
    """An operand as the plan reads it (pointer, shape, element strides)."""

    def __init__(self, ptr, shape, strides):
        self.ptr, self.shape, self.strides = ptr, shape, strides


def test_map_plan_bases_point_at_each_groups_own_matrix():
    rng = np.random.default_rng(3)
    K, N = 96, 40
    sizes = [3, 0, 130, 1, 0, 64]
    As, Bs, ptr = [], [], 1 << 40
    for m in sizes:
        lda = K + 8 * int(rng.integers(0, 3))  # per-group row strides
        As.append(_A(ptr, (m, K), (lda, 1)))
        ptr += 16 * int(rng.integers(1000, 5000))
        Bs.append(_A(ptr, (K, N), (N + 8, 1)))
        ptr += 16 * int(rng.integers(1000, 5000))
    (major, amaps, bmaps), why = hg.group_map_plan(As, Bs, K, N)
    assert why == "" and major == "n"
    beg = 0
    for g, (m, (abase, rb, re_, lda), (bbase, ldb, bs)) in enumerate(zip(sizes, amaps, bmaps)):
        assert (rb, re_) == (beg, beg + m)
        if m:  # row r of the row space, r in [rbeg, rend), is row r - rbeg of a_g
            assert abase + 2 * rb * lda == As[g].ptr and lda == As[g].strides[0]
        assert bbase + 2 * g * bs == Bs[g].ptr and ldb == N + 8  # expert g of map g is b_g
        beg += m


@pytest.mark.parametrize(
    "a_strides, b_strides, why",
    [
        ((1, 64), (40, 1), "no contiguous row"),
        ((100, 1), (40, 1), "multiple of 16 bytes"),
        ((96, 1), (1, 96), "mix N-major and K-major"),
        ((96, 1), (7, 7), "no contiguous dimension"),
    ],
)
def test_map_plan_names_why_a_layout_is_copied(a_strides, b_strides, why):
    K, N = 96, 40
    As = [_A(1 << 40, (4, K), (K, 1)), _A(1 << 41, (4, K), a_strides)]
    Bs = [_A(1 << 42, (K, N), (N, 1)), _A(1 << 43, (K, N), b_strides)]
    plan, reason = hg.group_map_plan(As, Bs, K, N)
    assert plan is None and why in reason


# ---------------------------------------------------------------------------- a fake device
@pytest.mark.parametrize("b_major", ["n", "k"])
def test_lists_read_in_place_through_group_maps_on_a_fake_device(fake_gpu, b_major):  # noqa: F811
    rng = np.random.default_rng(11)
    K, N = 64, 72
    sizes = [3, 0, 129, 1, 200]
    pads = [0, 8, 16, 0, 8]
    a_list, a_np = [], []
    for m, p in zip(sizes, pads):  # separate buffers, per-group row strides (padded rows)
        full = rng.standard_normal((m, K + p)).astype(np.float16)
        a_np.append(full[:, :K])
        a_list.append(_cp(full)[:, :K])
    b = rng.standard_normal((len(sizes), K, N)).astype(np.float16)
    if b_major == "n":
        b_list = [_cp(b[g]) for g in range(len(sizes))]
    else:
        b_list = [_cp(b[g].T).T for g in range(len(sizes))]
    outs = hg.gemm_grouped(a_list, b_list)
    assert hg.last_grouped_launch["per_group_maps"] and hg.last_grouped_launch["copied"] == ""
    assert "tmAs" in fake_gpu.launches[-1]
    for g, ref in enumerate(_ref(np.concatenate(a_np), b, sizes)):
        assert outs[g].shape == (sizes[g], N)
        np.testing.assert_allclose(np.asarray(outs[g]), ref, rtol=1e-2, atol=5e-2)
    same = [_cp(rng.standard_normal((5, K)).astype(np.float16)) for _ in range(3)]
    outs = hg.gemm_array(same, b_list[:3])
    assert hg.last_grouped_launch["per_group_maps"]
    for g in range(3):
        ref = np.asarray(same[g]).astype(np.float64) @ b[g].astype(np.float64)
        np.testing.assert_allclose(np.asarray(outs[g]), ref, rtol=1e-2, atol=5e-2)


def test_a_layout_the_tma_cannot_read_is_copied_with_its_reason(fake_gpu):  # noqa: F811
    rng = np.random.default_rng(5)
    K, N = 64, 40
    a0 = rng.standard_normal((5, K)).astype(np.float16)
    a1 = rng.standard_normal((K, 4)).astype(np.float16)  # a1.T: rows not contiguous
    b = rng.standard_normal((2, K, N)).astype(np.float16)
    outs = hg.gemm_grouped([_cp(a0), _cp(a1).T], [_cp(b[0]), _cp(b[1])])
    assert "no contiguous row" in hg.last_grouped_launch["copied"]
    assert not hg.last_grouped_launch["per_group_maps"]
    np.testing.assert_allclose(np.asarray(outs[1]), a1.T.astype(np.float64) @ b[1], rtol=1e-2, atol=5e-2)


def test_lists_on_two_devices_are_refused():
    from test_gpu_grouped import _FakeTensor

    with pytest.raises(GemmInputError, match="one device"):
        hg.gemm_grouped(
            [_FakeTensor((4, 64)), _FakeTensor((4, 64), dev=1)],
            [_FakeTensor((64, 32)), _FakeTensor((64, 32))],
        )
    with pytest.raises(GemmInputError, match="move it to the GPU"):
        hg.gemm_grouped([_FakeTensor((4, 64), cuda=False)], [_FakeTensor((64, 32))])


# ---------------------------------------------------------------------------- GPU
@gpu
@pytest.mark.parametrize("base", ["rule", "ws"])
@pytest.mark.parametrize("b_major", ["n", "k"])
def test_gpu_lists_through_group_maps_match_float64(b_major, base):
    torch = pytest.importorskip("torch")
    g = torch.Generator(device="cuda").manual_seed(0)
    K, N = 320, 264
    sizes = [0, 300, 1, 64, 0, 129, 700]
    a_list = [
        torch.randn(m, K + 8 * (i % 3), device="cuda", generator=g, dtype=torch.bfloat16)[:, :K]
        for i, m in enumerate(sizes)
    ]
    if b_major == "n":
        b_list = [torch.randn(K, N, device="cuda", generator=g, dtype=torch.bfloat16) for _ in sizes]
    else:
        b_list = [torch.randn(N, K, device="cuda", generator=g, dtype=torch.bfloat16).t() for _ in sizes]
    cfg = None if base == "rule" else kg.GroupedConfig(max_groups=8)  # the rule: ping-pong here
    outs = hg.gemm_grouped(a_list, b_list, config=cfg)
    torch.cuda.synchronize()
    assert hg.last_grouped_launch["per_group_maps"] and hg.last_grouped_launch["copied"] == ""
    assert hg.last_grouped_launch["config"].pingpong == (base == "rule")
    for x, y, c in zip(a_list, b_list, outs):
        if x.shape[0]:
            ref = x.double() @ y.double()
            assert float((c.double() - ref).norm() / ref.norm()) < 1e-2
    # the warpgroup skip: groups whose last tile holds 1..64 rows, in the stacked form too
    sizes2 = [1, 63, 64, 65, 127, 128, 129, 193]
    a = torch.randn(sum(sizes2), K, device="cuda", generator=g, dtype=torch.bfloat16)
    b = torch.randn(len(sizes2), K, N, device="cuda", generator=g, dtype=torch.bfloat16)
    offs = torch.tensor(np.cumsum(sizes2), device="cuda", dtype=torch.int32)
    c = hg.gemm_moe(a, b, offs)
    torch.cuda.synchronize()
    beg = 0
    for i, m in enumerate(sizes2):
        ref = a[beg : beg + m].double() @ b[i].double()
        assert float((c[beg : beg + m].double() - ref).norm() / ref.norm()) < 1e-2, (i, m)
        beg += m
