"""Data-parallel rows plus a split-K tail (``rule.hybrid_split``, ``host.streamk``).

On the CPU: the schedule's cover is proven (Z3, every m and cut) and checked with the emitted
schedulers (exhaustive, small grids); planted bugs are refuted with confirmed witnesses; the
wave model takes the schedule where the unsplit pick leaves a partial last wave, and never
where the tiles fill their waves.  On a GPU (skipped without one): the two launches against
a float64 reference and against the unsplit plan."""

from __future__ import annotations

import pytest

from layoutproof.gpu.errors import GemmInputError
from layoutproof.gpu.host import rule, streamk
from layoutproof.gpu.kernels.splitk import SplitKConfig
from layoutproof.gpu.kernels.wgmma import Sm90Config

WS = dict(loader="tma", schedule="ws")


# ----------------------------------------------------------------------------- proofs
@pytest.mark.parametrize("bm", [64, 128])
def test_row_cut_is_proven_for_every_shape(bm):
    o = streamk.prove_row_cut(bm)
    assert o.status == "proved" and o.method == "z3", o.line()


@pytest.mark.parametrize("origin", [-1, 1, 64, 128, -128])
def test_row_cut_refutes_a_misplaced_tail_with_a_confirmed_witness(origin):
    o = streamk.prove_row_cut(128, tail_origin=origin)
    assert o.status == "refuted", o.line()
    w = o.witness
    # the witness is a real shape where the cut goes wrong, checked again here
    assert streamk._row_cut_violation(128, w["m"], w["r"], origin) is not None
    assert streamk._row_cut_violation(128, w["m"], w["r"], 0) is None


def test_composed_cover_with_the_emitted_schedulers():
    o = streamk.check_composed_cover(max_grid=7, splits=(2, 3))
    assert o.status == "checked" and o.cases > 10000, o.line()


@pytest.mark.parametrize("shift", [1, -1])
def test_composed_cover_catches_a_shifted_tail(shift):
    o = streamk.check_composed_cover(max_grid=5, splits=(2,), tail_shift=shift)
    assert o.status == "refuted" and o.witness["r"] >= 1, o.line()


def test_brute_force_row_cut_agrees_with_the_proof():
    # every small shape and cut: each row in exactly one launch, the tiles partitioned
    for bm in (64, 128):
        for m in range(bm + 1, 4 * bm + 3):
            for r in range(1, -(-m // bm)):
                if r * bm < m:
                    assert streamk._row_cut_violation(bm, m, r, 0) is None, (bm, m, r)


# ----------------------------------------------------------------------------- the model
def test_model_takes_the_hybrid_at_5120_cubed():
    h = rule.hybrid_split(5120, 5120, 5120)
    assert h is not None
    # 800 tiles of 128x256 = 6.06 waves: 39 tile rows (780 tiles) fill 6 waves
    assert h.main.key() == "sm90_128x256x64_s4_g8_tma_ws" and h.rows == 39 * 128
    assert isinstance(h.tail, SplitKConfig) and h.tail.reduction == "kernel"
    tail_tiles = -(-(5120 - h.rows) // h.tail.bm) * -(-5120 // h.tail.bn)
    assert tail_tiles * h.tail.splits <= 132
    assert h.model_us * rule.HYBRID_MODEL["margin"] < h.unsplit_us
    assert h.unsplit_us == pytest.approx(
        rule.estimate_us(rule.choose_config(5120, 5120, 5120, hopper=True, tma=True), 5120, 5120, 5120)
    )


@pytest.mark.parametrize(
    "shape",
    [(4096, 4096, 4096), (8192, 8192, 8192), (6144, 6144, 6144), (2048, 2048, 2048), (16, 4096, 4096)],
)
def test_model_keeps_the_unsplit_pick_where_waves_fill(shape):
    assert rule.hybrid_split(*shape) is None


def test_model_leaves_unaligned_shapes_alone():
    # rows of 4093 or 4097 halves are not 16-byte aligned: the operands would be staged twice
    assert rule.hybrid_split(4095, 4097, 4093) is None
    assert rule.hybrid_split(5120, 5120, 5124) is None


def test_hybrid_split_refuses_bad_sizes():
    with pytest.raises(GemmInputError, match="m=0"):
        rule.hybrid_split(0, 8, 8)
    with pytest.raises(GemmInputError, match="k=2.5"):
        rule.hybrid_split(8, 8, 2.5)  # type: ignore[arg-type]


def test_hybrid_proofs_hold_for_the_rule_tiles():
    for cfg in rule.default_candidates(True):
        assert all(o.holds for o in streamk.hybrid_proofs(cfg.bm)), cfg.key()


# ----------------------------------------------------------------------------- bad input
class _Fake:
    def __init__(self, shape, contiguous=True):
        self.shape, self.ndim = shape, len(shape)
        self.flags = type("F", (), {"c_contiguous": contiguous})()


def test_plan_refuses_other_layouts_and_cuts():
    a, b, c = _Fake((512, 256)), _Fake((256, 512)), _Fake((512, 512))
    with pytest.raises(GemmInputError, match="row-major"):
        streamk.HybridPlan._check(_Fake((512, 256), contiguous=False), b, c)
    with pytest.raises(GemmInputError, match="do not chain"):
        streamk.HybridPlan._check(a, _Fake((255, 512)), c)
    with pytest.raises(GemmInputError, match="multiples of 8"):
        streamk.HybridPlan._check(_Fake((512, 260)), _Fake((260, 512)), c)
    main = Sm90Config(bm=128, bn=256, stages=4, **WS)
    tail = SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, **WS), 3)
    with pytest.raises(GemmInputError, match="multiple of the main tile"):
        streamk.HybridPlan(a, b, c, rule.HybridSplit(main, 200, tail, 1.0, 2.0))
    with pytest.raises(GemmInputError, match="lie in"):
        streamk.HybridPlan(a, b, c, rule.HybridSplit(main, 512, tail, 1.0, 2.0))
    with pytest.raises(GemmInputError, match="split-K configuration"):
        streamk.HybridPlan(a, b, c, rule.HybridSplit(main, 256, main, 1.0, 2.0))


# ----------------------------------------------------------------------------- GPU
def _gpu():
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no GPU")
        cc = cp.cuda.Device().compute_capability
    except Exception:
        pytest.skip("no GPU")
    if cc != "90":
        pytest.skip("needs sm_90")
    pytest.importorskip("cuda.bindings.driver")
    return cp


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize(
    "shape,rows",
    [((5120, 5120, 5120), None), ((1000, 1032, 520), 768), ((300, 264, 1024), 128)],
)
def test_gpu_hybrid_matches_float64(dtype, shape, rows):
    cp = _gpu()
    m, n, k = shape
    rng = cp.random.default_rng(3)
    dt = cp.float16 if dtype == "f16" else "bfloat16"
    a = rng.standard_normal((m, k), dtype=cp.float32).astype(dt)
    b = rng.standard_normal((k, n), dtype=cp.float32).astype(dt)
    c = cp.full((m, n), cp.nan, dtype=dt)
    if rows is None:
        plan = streamk.hybrid_plan(a, b, c)
        assert plan is not None
    else:
        split = rule.HybridSplit(
            Sm90Config(bm=128, bn=256, stages=4, **WS),
            rows,
            SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **WS), 3),
            0.0,
            0.0,
        )
        plan = streamk.HybridPlan(a, b, c, split)
    plan(a, b, c)
    ref = a.astype(cp.float64) @ b.astype(cp.float64)
    assert not bool(cp.isnan(c).any())
    err = float(cp.linalg.norm(c.astype(cp.float64) - ref) / cp.linalg.norm(ref))
    assert err < (2e-3 if dtype == "f16" else 1.2e-2), err
    # every row of both parts written: rows next to the cut agree with the reference
    r = plan.rows
    for i in (r - 1, r, m - 1):
        row_err = float(cp.abs(c[i].astype(cp.float64) - ref[i]).max() / cp.abs(ref[i]).max())
        assert row_err < 0.05, (i, row_err)


def test_hybrid_plan_gate_declines_calls_it_does_not_apply_to():
    # decided from the arguments alone, before any device query: None, never an error
    class _Arr(_Fake):
        def __init__(self, shape, dtype="float16", contiguous=True):
            super().__init__(shape, contiguous)
            self.dtype = dtype

    a, b, c = _Arr((5120, 5120)), _Arr((5120, 5120)), _Arr((5120, 5120))
    cfg = Sm90Config(bm=128, bn=256, stages=4, **WS)
    assert streamk.hybrid_plan(a, b, c, config=cfg) is None
    assert streamk.hybrid_plan(a, b, c, bias=object()) is None
    assert streamk.hybrid_plan(a, b, c, activation="relu") is None
    assert streamk.hybrid_plan(a, b, c, path="mma.sync") is None
    assert streamk.hybrid_plan(a, b, c, out_dtype="f32") is None
    assert streamk.hybrid_plan(a, b, _Arr((5120, 5120), contiguous=False)) is None
    assert streamk.hybrid_plan(a, b, _Arr((5120, 5120), dtype="float32")) is None
    assert streamk.hybrid_plan(_Arr((5120, 5120), "float32"), _Arr((5120, 5120), "float32"), None) is None
    assert streamk.hybrid_plan(a, _Arr((5112, 5120)), c) is None
    assert streamk.hybrid_plan(object(), b, c) is None


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_gpu_gemm_routes_5120_cubed_to_the_hybrid(dtype):
    """``gemm`` itself takes the schedule where the model does, on CuPy arrays and on torch
    tensors (the direct launch from base addresses: the main rows, then the tail at the row
    offset), and both agree with float64."""
    cp = _gpu()
    from layoutproof.gpu.host import runtime

    m = n = k = 5120
    rng = cp.random.default_rng(5)
    dt = cp.float16 if dtype == "f16" else "bfloat16"
    a = rng.standard_normal((m, k), dtype=cp.float32).astype(dt)
    b = rng.standard_normal((k, n), dtype=cp.float32).astype(dt)
    assert isinstance(runtime.plan_for(a, b), streamk.HybridPlan)
    ref = a.astype(cp.float64) @ b.astype(cp.float64)
    tol = 2e-3 if dtype == "f16" else 1.2e-2
    c = runtime.gemm(a, b)
    err = float(cp.linalg.norm(c.astype(cp.float64) - ref) / cp.linalg.norm(ref))
    assert err < tol, err
    torch = pytest.importorskip("torch")
    ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
    tc = runtime.gemm(ta, tb)
    tc = runtime.gemm(ta, tb)  # the kept entry's direct launch
    torch.cuda.synchronize()
    got = cp.from_dlpack(tc.float()).astype(cp.float64)
    err = float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref))
    assert err < tol, err
    # rows on both sides of the cut were written by their own launch
    for i in (4991, 4992, m - 1):
        row = float(cp.abs(got[i] - ref[i]).max() / cp.abs(ref[i]).max())
        assert row < 0.05, (i, row)
