"""Operands staged inside the launch (``Sm90Config.stage_in``): an operand whose rows break
the 16-byte contract of the TMA maps is copied into its padded buffer by the GEMM kernel
itself, every CTA a share of the rows, before a grid barrier (``kir.GridSync``), instead of by
a ``cudaMemcpy2DAsync`` per operand before the launch.  The configuration's rules, the
barrier's model check (and what it refutes), the emitted copy and its claims, the nvcc build,
the rule and the decision's parameters and, on a Hopper GPU, the numbers against float64 over
repeated calls, two streams, both launch paths and torch tensors."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_short_a import _hopper  # whether an sm_90 GPU with CuPy is here

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, ProofFailedError
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.host import runtime
from layoutproof.gpu.kernels import wgmma_ws
from layoutproof.gpu.kernels.wgmma import Sm90Config, generate_sm90
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.grid_sync_model import check_grid_sync
from layoutproof.gpu.proof.record import ProofLog

NVCC = shutil.which("nvcc")


def si(ops: str = "a", bm: int = 128, bn: int = 192, stages: int = 4) -> Sm90Config:
    return Sm90Config(bm=bm, bn=bn, stages=stages, loader="tma", schedule="ws", stage_in=ops).validate()


# ============================================================================ the configuration
def test_stage_in_is_in_the_key_and_the_repr_only_when_set():
    plain = Sm90Config(bm=128, bn=192, stages=4, loader="tma", schedule="ws")
    assert "stage_in" not in repr(plain) and not plain.key().endswith("_sia")
    assert si("a").key() == plain.key() + "_sia" and repr(si("ab")).endswith("stage_in='ab')")
    assert len({plain, si("a"), si("b"), si("ab")}) == 4


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(loader="tma", schedule="pingpong", bm=64, stage_in="a"), "schedule='ws'"),
        (dict(loader="tma", schedule="ws", cluster=2, stage_in="a"), "cluster=1"),
        (dict(stage_in="a"), "schedule='ws'"),
        (dict(loader="tma", schedule="ws", stage_in="ba"), "must name operands"),
        (dict(loader="tma", schedule="ws", stage_in="c"), "must name operands"),
    ],
)
def test_configurations_the_staging_cannot_serve_are_refused(bad, match):
    with pytest.raises(GemmConfigError, match=match):
        Sm90Config(**bad).validate()


def test_other_number_types_and_batches_are_refused():
    with pytest.raises(GemmConfigError, match="f16 or bf16"):
        generate_sm90(si("a", bn=128), GemmProblem("k", "k", "tf32", "f32"))
    with pytest.raises(GemmConfigError, match="not batched"):
        generate_sm90(si("a"), GemmProblem("k", "n", batch="ab"))


# ============================================================================ the grid barrier
@pytest.mark.parametrize("ctas", [1, 2, 3, 4])
def test_the_grid_barrier_holds_for_every_interleaving(ctas):
    log = ProofLog()
    n = check_grid_sync(ctas, 3, log)
    assert n > 0 and "no CTA leaves before all arrive" in log.proofs[-1].statement


def test_the_model_refutes_a_barrier_that_reads_the_generation_late():
    # arrive first, read gen after: the last CTA may move gen before another reads it
    with pytest.raises(ProofFailedError, match="never comes"):
        check_grid_sync(2, 1, read_gen_first=False)


def test_the_model_refutes_a_barrier_that_never_resets_its_count():
    with pytest.raises(ProofFailedError, match="ends with count"):
        check_grid_sync(2, 2, reset=False)


def test_a_model_of_no_ctas_is_refused():
    with pytest.raises(ProofFailedError, match="at least 1"):
        check_grid_sync(0, 1)


# ============================================================================ the kernel
@pytest.mark.parametrize("ops, prob", [("a", ("k", "n")), ("b", ("k", "n")), ("ab", ("m", "k"))])
def test_the_named_operands_are_copied_before_one_grid_barrier(ops, prob):
    k = generate_sm90(si(ops), GemmProblem(*prob))
    body = k.ir.body
    syncs = [n for n in kir.walk(body) if isinstance(n, kir.GridSync)]
    assert len(syncs) == 1
    stores = [
        n
        for n in kir.walk(body)
        if isinstance(n, kir.Assign) and isinstance(n.lhs, kir.Mem) and "staging write" in n.lhs.claim.what
    ]
    assert sorted(n.lhs.claim.what[0] for n in stores) == sorted(ops.upper())
    names = [v.name for _, v in k.ir.params]
    for P_ in "ab":
        assert (f"{P_}_src" in names) == (P_ in ops) and (f"{P_}_dld" in names) == (P_ in ops)
    assert names[-1] == "lp_gbar"
    # the barrier comes after every staging store and before the first TMA box
    top = list(body.body)
    at = next(i for i, s in enumerate(top) if isinstance(s, kir.GridSync))
    assert all(not isinstance(n, kir.TmaLoad) for s in top[:at] for n in kir.walk(s))
    assert all(
        not (isinstance(n, kir.Mem) and "staging" in n.claim.what) for s in top[at:] for n in kir.walk(s)
    )
    src = k.source
    assert "lp_grid_sync(&lp_gbar[0], &lp_gbar[1], gridDim.x);" in src
    assert "fence.proxy.async.global" in src and "st.release.gpu.global.u32" in src
    assert "grid barrier (lp_grid_sync) for 4 CTAs" in src
    # the rest of the kernel is the kernel without staging: its claims are the same (the
    # counts of collectives, bounded variables and ordered accesses grow by the staging)
    base = generate_sm90(dataclasses.replace(si(ops), stage_in=""), GemmProblem(*prob))
    extra = {p.statement for p in k.proofs} - {p.statement for p in base.proofs}
    assert any("staging" in s for s in extra) and any("grid barrier" in s for s in extra)
    counted = ("staging", "grid barrier", "collective operations", "value sets", "launch ordering")
    assert all(any(w in s for w in counted) for s in extra), extra


def test_a_staging_store_off_its_claim_is_refused(monkeypatch):
    made = wgmma_ws.stage_in_ir

    def shifted(F):  # the padded buffer written one element further than claimed
        def fn(n):
            if isinstance(n, kir.Mem) and "staging write" in n.claim.what:
                return dataclasses.replace(n, ptr=n.ptr + 1)
            return None

        return [kir.rewrite(s, fn) for s in made(F)]

    monkeypatch.setattr(wgmma_ws, "stage_in_ir", shifted)
    with pytest.raises(ProofFailedError, match="the claim"):
        generate_sm90(si("a"), GemmProblem("k", "n"), memo=False)


def test_a_staging_read_past_the_row_is_refused(monkeypatch):
    made = wgmma_ws.stage_in_ir

    def unguarded(F):  # the eight loads of a chunk without their "c0 + j < extent" guards
        def fn(n):
            if isinstance(n, kir.If) and any(
                isinstance(x, kir.Mem) and "staging read" in x.claim.what for x in kir.walk(n.then)
            ):
                if len(n.then.body) == 1 and isinstance(n.then.body[0], kir.Assign):
                    return n.then.body[0]
            return None

        return [kir.rewrite(s, fn) for s in made(F)]

    monkeypatch.setattr(wgmma_ws, "stage_in_ir", unguarded)
    with pytest.raises(ProofFailedError, match="in bounds|guard"):
        generate_sm90(si("a"), GemmProblem("k", "n"), memo=False)


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_staging_sources_compile_for_sm90a_without_spills(tmp_path):
    for ops, prob in (("a", GemmProblem("k", "n")), ("ab", GemmProblem("m", "k", "bf16", "bf16"))):
        _nvcc_sm90a(generate_sm90(si(ops), prob).source, tmp_path)


# ============================================================================ the rule
_COOP = P.DeviceFacts(cc="90", sms=132, tma=True, coop=True)
_NO_COOP = P.DeviceFacts(cc="90", sms=132, tma=True)


def _req(m, k, n, *, lda=None, ldb=None, a_ptr16=0, **kw):
    a = P.OperandFacts((m, k), ((lda or k) * 2, 2), 2, a_ptr16)
    b = P.OperandFacts((k, n), ((ldb or n) * 2, 2), 2)
    kw.setdefault("out_dtype", "f16")
    return P.GemmRequest(a, b, "f16", out_itemsize=2, **kw)


def test_the_rule_stages_in_the_launch_where_the_pick_is_the_ws_kernel():
    d = P.decide(_req(1000, 777, 3000), _COOP)  # K odd: A's rows are 1554 bytes
    assert d.config.stage_in == "a" and d.config.schedule == "ws" and d.a.copy and not d.b.copy
    kinds, statics, slots = d.kinds, dict(d.statics), dict(d.slots)
    assert kinds[8:] == ("ptr", "i64", "ptr", "i64", "ptr")
    assert (slots["a_src"], slots["a_dst"], slots["gbar"]) == (8, 10, 12)
    assert (statics[9], statics[11]) == (777, 784)  # the user's ld, the padded buffer's
    both = P.decide(_req(1000, 777, 3001), _COOP)
    assert both.config.stage_in == "ab" and dict(both.slots)["gbar"] == 16
    assert dict(both.statics)[13] == 3001 and dict(both.statics)[15] == 3008
    # a column-major output: C^T = B^T A^T, so the user's ragged A is the kernel's B
    col = P.decide(_req(1000, 777, 3000, out_strides=(2, 2000)), _COOP)
    assert col.orient == "col" and col.config.stage_in == "b"


def test_the_shortest_products_keep_the_element_loads(monkeypatch):
    # 512x512x500: 8 k-tiles in one wave, estimated 9.3 us in place, at most first_us: a call
    # is bound by its host time, and the in-place launch issues sooner
    assert P.elem_us(512, 512, 500, 132) == 9.3
    d = P.decide(_req(512, 500, 512), _COOP)
    assert d.config.elem_loads == "a" and not getattr(d.config, "stage_in", "")
    # 100x3000x777: 13 k-tiles, 14.3 us: staged in the launch
    assert P.decide(_req(100, 777, 3000), _COOP).config.stage_in == "a"
    monkeypatch.setitem(P.ELEM_RULE, "first_us", 0.0)
    assert P.decide(_req(512, 500, 512), _COOP).config.stage_in == "a"


def test_the_rule_keeps_the_copy_or_the_element_loads_elsewhere(monkeypatch):
    assert not getattr(P.decide(_req(1000, 777, 3000), _NO_COOP).config, "stage_in", "")
    assert not getattr(P.decide(_req(1000, 777, 3000, activation="relu"), _COOP).config, "stage_in", "")
    assert not getattr(P.decide(_req(1024, 1024, 1024), _COOP).config, "stage_in", "")  # nothing staged
    # no contiguous dimension (every other element of a row): the copy gathers it
    gathered = dataclasses.replace(_req(1000, 777, 3000), a=P.OperandFacts((1000, 777), (3108, 4), 2))
    d = P.decide(gathered, _COOP)
    assert d.a.copy and not getattr(d.config, "stage_in", "")
    # a base between elements: the copy path
    assert not getattr(P.decide(_req(1000, 777, 3000, a_ptr16=3), _COOP).config, "stage_in", "")
    monkeypatch.setitem(P.STAGE_IN_RULE, "on", False)
    assert not getattr(P.decide(_req(1000, 777, 3000), _COOP).config, "stage_in", "")


def test_a_configuration_that_stages_an_aligned_operand_is_refused_by_name():
    with pytest.raises(GemmConfigError, match="leave it out of stage_in"):
        P.decide(_req(1000, 777, 3000), _COOP, si("ab"))
    d = P.decide(_req(1000, 777, 3000), _COOP, si("a"))
    assert d.config.stage_in == "a" and dict(d.slots)["gbar"] == 12
    # rows that are not contiguous, or a base between elements: the copy must gather them
    gathered = dataclasses.replace(_req(1000, 777, 3000), a=P.OperandFacts((1000, 777), (3108, 4), 2))
    with pytest.raises(GemmConfigError, match="leave a out of stage_in"):
        P.decide(gathered, _COOP, si("a"))
    with pytest.raises(GemmConfigError, match="not on a 2-byte boundary: leave a out of stage_in"):
        P.decide(_req(1000, 777, 3000, a_ptr16=3), _COOP, si("a"))


# ============================================================================ the plan
def test_a_stage_in_plan_without_a_cooperative_launch_is_refused_by_name():
    from layoutproof.gpu.host.plan import GemmPlan

    d = P.decide(_req(1000, 777, 3000), _COOP)
    p = GemmPlan.__new__(GemmPlan)  # the launch parts alone: no GPU here
    p._stage_in, p._fn = d.config.stage_in, 1
    with pytest.raises(GemmConfigError, match="needs a cooperative launch"):
        p._setup_stage_in(d, object())  # not CuPy: no cuLaunchKernelEx through its handles
    # a launch the driver refuses (every CTA cannot be resident at once) is an error by name
    p._coop, p.config, p.grid = (lambda sp: False), d.config, d.grid
    with pytest.raises(GemmConfigError, match="refused the cooperative launch of 128 CTAs"):
        p._launch_main(0)
    ran = []
    p._coop = lambda sp: ran.append(sp) or True
    p._launch_main(7)
    assert ran == [7]


# ============================================================================ on a GPU
def _ints(cp, rng, dt, *shape):
    x = rng.integers(-3, 4, size=shape).astype(cp.float32)
    if dt == "bf16":  # exact small integers: the upper halves of their f32 bits
        return (x.view(cp.uint32) >> 16).astype(cp.uint16), x
    return x.astype(cp.float16), x


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with CuPy")
@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_gpu_staged_in_the_launch_matches_float64(dt):
    cp = pytest.importorskip("cupy")
    rng = cp.random.default_rng(11)
    kw = dict(dtype="bf16") if dt == "bf16" else {}
    cases = [  # (m, k, n, base offset of A in elements, the staged operands)
        (1000, 777, 3000, 0, "a"),
        (1000, 3000, 777, 0, "b"),
        (1000, 777, 3001, 0, "ab"),
        (700, 1001, 1536, 1, "a"),  # A's base one element off the 16-byte grid
        (2048, 2047, 2048, 0, "a"),
    ]
    for m, k, n, off, ops in cases:
        a, af = _ints(cp, rng, dt, m * k + off)
        a, af = a[off:].reshape(m, k), af[off:].reshape(m, k)
        b, bf = _ints(cp, rng, dt, k, n)
        ref = af.astype(cp.float64) @ bf.astype(cp.float64)
        for _ in range(3):  # the barrier's generations, call after call
            c = cp.full((m, n), cp.nan, dtype=cp.float32)
            runtime.gemm(a, b, c, out_dtype="f32", **kw)
            assert float(cp.abs(c - ref).max()) == 0.0, (m, k, n, ops)
        cfg = runtime.last_launch["config"]
        assert getattr(cfg, "stage_in", "") == ops, (m, k, n, cfg)
        # the same operands with new values in the same places: the copy is made every call
        a[...] = a[::-1]
        af[...] = af[::-1]
        ref = af.astype(cp.float64) @ bf.astype(cp.float64)
        c = runtime.gemm(a, b, out_dtype="f32", **kw)
        assert float(cp.abs(c - ref).max()) == 0.0


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with CuPy")
def test_gpu_staged_in_the_launch_on_two_streams():
    cp = pytest.importorskip("cupy")
    rng = cp.random.default_rng(3)
    m, k, n = 1000, 777, 3000
    xs = [_ints(cp, rng, "f16", m, k) for _ in range(4)]
    b, bf = _ints(cp, rng, "f16", k, n)
    cp.cuda.Device().synchronize()  # the operands are made on the null stream, which these skip
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    outs = []
    for i, (a, _af) in enumerate(xs):
        with streams[i % 2]:
            outs.append(runtime.gemm(a, b, out_dtype="f32"))
    for s in streams:
        s.synchronize()
    for (_a, af), c in zip(xs, outs):
        assert float(cp.abs(c - af.astype(cp.float64) @ bf.astype(cp.float64)).max()) == 0.0
    assert runtime.last_launch["config"].stage_in == "a"


@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with CuPy")
def test_gpu_torch_tensors_staged_in_the_launch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    from layoutproof.gpu import gemm

    g = torch.Generator(device="cuda").manual_seed(5)
    for dt, (m, k, n) in ((torch.bfloat16, (1000, 777, 2048)), (torch.float16, (513, 1025, 771))):
        a = torch.randint(-3, 4, (m, k), device="cuda", generator=g).to(dt)
        b = torch.randint(-3, 4, (k, n), device="cuda", generator=g).to(dt)
        ref = (a.double() @ b.double()).to(dt)  # exact in f32, then rounded once to the output type
        for _ in range(3):
            c = gemm(a, b)
            assert isinstance(c, torch.Tensor) and c.dtype == dt
            assert torch.equal(c, ref)
        assert runtime.last_launch["config"].stage_in
