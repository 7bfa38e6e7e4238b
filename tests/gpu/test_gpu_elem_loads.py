"""Operands read in place by two-byte loads (``Sm90Config.elem_loads``): an operand whose
leading dimension or base breaks the 16-byte contract is read where it lies instead of being
copied into a padded buffer each call.  The configuration's rules, the emitted loads (the
cp.async claims they keep, a planted address error refused), the nvcc build, the rule that
takes them for short products, the plan's launch with the user's pointers and, on a Hopper
GPU, the numbers against float64."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_plan import fake  # noqa: F401  (the fixture)
from test_gpu_short_a import _hopper  # whether an sm_90 GPU with CuPy is here

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, ProofFailedError
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.host import runtime
from layoutproof.gpu.kernels import wgmma
from layoutproof.gpu.kernels.wgmma import Sm90Config, generate_sm90
from layoutproof.gpu.proof import kir

NVCC = shutil.which("nvcc")


def elem(ops: str = "a", bm: int = 64, bn: int = 128, stages: int = 6) -> Sm90Config:
    return Sm90Config(bm=bm, bn=bn, stages=stages, loader="cp.async", elem_loads=ops).validate()


# ============================================================================ the configuration
def test_elem_loads_is_in_the_key_and_the_repr_only_when_set():
    plain = Sm90Config(bm=64, bn=128, stages=6)
    assert plain.key() == "sm90_64x128x64_s6_g8" and "elem_loads" not in repr(plain)
    assert elem("a").key() == "sm90_64x128x64_s6_g8_ea" and repr(elem("ab")).endswith("elem_loads='ab')")
    assert len({plain, elem("a"), elem("b"), elem("ab")}) == 4


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(loader="tma", elem_loads="a"), "loader='cp.async'"),
        (dict(loader="tma", schedule="ws", elem_loads="b"), "schedule='mono'"),
        (dict(elem_loads="c"), "must name operands"),
        (dict(elem_loads="ba"), "must name operands"),
        (dict(elem_loads=1), "must name operands"),
    ],
)
def test_configurations_the_loads_cannot_serve_are_refused(bad, match):
    with pytest.raises(GemmConfigError, match=match):
        Sm90Config(**bad).validate()


# ============================================================================ the kernel
@pytest.mark.parametrize("ops, prob", [("a", ("k", "n")), ("b", ("k", "n")), ("ab", ("m", "k"))])
def test_the_named_operands_are_loaded_by_elements(ops, prob):
    k = generate_sm90(elem(ops), GemmProblem(*prob))
    nodes = [n for n in kir.walk(k.ir.body) if isinstance(n, kir.CpAsync)]
    for name in "ab":
        # a full-chunk and an edge-chunk copy of each operand, in the prologue and the main loop
        mine = [n for n in nodes if n.dst_claim.what.startswith(name.upper())]
        assert mine and all(n.elementwise == (name in ops) for n in mine), name
    assert ("lp_ld16_elems(" in k.source) and ("two-byte loads" in k.source)
    assert ("lp_cp_async16(" in k.source.split("__global__")[1]) == (ops != "ab")
    # the same obligations as the cp.async kernel: the claims did not change with the loads
    base = generate_sm90(dataclasses.replace(elem(ops), elem_loads=""), GemmProblem(*prob))
    assert [p.statement for p in k.proofs] == [p.statement for p in base.proofs]
    assert "lp_ld16_elems" not in base.source


def test_an_element_load_off_its_claim_is_refused(monkeypatch):
    made = wgmma._source_ir

    def shifted(*args, **kw):  # A's element loads read one element further than claimed
        ir = made(*args, **kw)

        def fn(n):
            if isinstance(n, kir.CpAsync) and n.elementwise:
                return dataclasses.replace(n, src=n.src + 1)
            return None

        return kir.rewrite(ir, fn)

    monkeypatch.setattr(wgmma, "_source_ir", shifted)
    with pytest.raises(ProofFailedError, match="the claim"):
        generate_sm90(elem("a"), GemmProblem("k", "n"), memo=False)


def test_other_number_types_are_refused():
    for dt in ("tf32", "e4m3", "s8"):
        with pytest.raises(GemmConfigError, match="must be f16 or bf16"):
            generate_sm90(elem("a", bn=128), GemmProblem("k", "k", dt, "f32" if dt != "s8" else "s32"))


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_element_load_sources_compile_for_sm90a_without_spills(tmp_path):
    for ops, prob in (("a", GemmProblem("k", "n")), ("ab", GemmProblem("m", "k", "bf16", "bf16"))):
        _nvcc_sm90a(generate_sm90(elem(ops), prob).source, tmp_path)


# ============================================================================ the rule
_H200 = P.DeviceFacts(cc="90", sms=132, tma=True)


def _req(m, k, n, *, lda=None, ldb=None, a_ptr16=0, a_order="C", **kw):
    lda = lda or (k if a_order == "C" else m)
    a = P.OperandFacts((m, k), (lda * 2, 2) if a_order == "C" else (2, lda * 2), 2, a_ptr16)
    b = P.OperandFacts((k, n), ((ldb or n) * 2, 2), 2)
    kw.setdefault("out_dtype", "f16")
    return P.GemmRequest(a, b, "f16", out_itemsize=2, **kw)


@pytest.mark.parametrize(
    "m, n, k, ops",
    [(512, 512, 500, "a"), (100, 3000, 777, "a"), (256, 1000, 1001, "a"), (64, 777, 320, "b")],
)
def test_the_rule_reads_short_products_in_place(m, n, k, ops):
    d = P.decide(_req(m, k, n), _H200)
    assert d.config == elem(ops) and not d.tma
    st = d.a if ops == "a" else d.b
    assert not st.copy and st.ld == (k if ops == "a" else n)  # the operand's own leading dimension
    assert dict(d.statics)[6 if ops == "a" else 7] == st.ld


def test_a_column_major_output_reads_the_users_a_as_the_kernels_b():
    # C^T = B^T A^T: the user's ragged A (K = 500) is the kernel's B, read in place at ld 500
    d = P.decide(_req(512, 500, 512, out_strides=(2, 1024)), _H200)
    assert d.orient == "col" and d.config == elem("b")
    assert (d.b.copy, d.b.ld, d.a.copy) == (False, 500, False)
    with pytest.raises(GemmConfigError, match=r"a \(the kernel's B\)"):
        P.decide(_req(512, 500, 512, out_strides=(2, 1024), a_ptr16=3), _H200, elem("b"))


def test_the_rule_reads_a_misaligned_base_in_place():
    d = P.decide(_req(128, 512, 512, a_ptr16=2), _H200)
    assert d.config == elem("a") and not d.a.copy and d.a.ld == 512 and not d.b.copy


def test_the_rule_keeps_the_copy_where_it_must(monkeypatch):
    cases = [
        _req(1000, 777, 3000),  # 13 k-tiles in 3 waves: the copy's TMA kernel is faster
        _req(16, 4095, 4096),  # 64 k-tiles
        _req(512, 500, 512, activation="relu"),  # an epilogue
        _req(512, 500, 512, path="mma.sync"),
    ]
    for req in cases:
        d = P.decide(req, _H200)
        assert d.a.copy and not getattr(d.config, "elem_loads", ""), req
    # aligned operands: nothing to copy, nothing read in place
    assert not getattr(P.decide(_req(512, 512, 512), _H200).config, "elem_loads", "")
    # no contiguous dimension (every other element of a row): the copy gathers it
    gathered = dataclasses.replace(_req(512, 500, 512), a=P.OperandFacts((512, 500), (2000, 4), 2))
    d = P.decide(gathered, _H200)
    assert d.a.copy and not getattr(d.config, "elem_loads", "")
    # other number types keep their copy (two-byte loads read f16 and bf16 only)
    assert (
        P.elem_pick(dataclasses.replace(_req(512, 500, 512), dtype="tf32"), _H200, 512, 512, 500, d.a, d.b)
        is None
    )
    # the switch: a bound of zero keeps every copy
    assert P.decide(_req(512, 500, 512), _H200).config == elem("a")
    monkeypatch.setitem(P.ELEM_RULE, "max_us", 0.0)
    assert P.decide(_req(512, 500, 512), _H200).a.copy


def test_an_operand_without_a_contiguous_dimension_is_refused_by_name():
    req = dataclasses.replace(_req(512, 500, 512), a=P.OperandFacts((512, 500), (2000, 4), 2))
    with pytest.raises(GemmConfigError, match="leave a out of elem_loads"):
        P.decide(req, _H200, elem("a"))
    # a base between elements: the two-byte loads would be misaligned; the rule copies it
    odd = _req(512, 512, 512, a_ptr16=3)
    with pytest.raises(GemmConfigError, match="not on a 2-byte boundary"):
        P.decide(odd, _H200, elem("a"))
    d = P.decide(odd, _H200)
    assert d.a.copy and not getattr(d.config, "elem_loads", "")


# ============================================================================ the plan
def test_the_plan_launches_with_the_users_pointer_and_copies_nothing(fake):  # noqa: F811
    a = fake.array((256, 201), offset=2)  # ld 201 at an odd address (too large for the tiny kernel)
    b = fake.array((201, 256))
    for _ in range(3):
        c = runtime.gemm(a, b)
        pa, pb, pc, m, n, k, lda, ldb, ldc, _cvec = fake.launches[-1]["values"]
        assert (pa, pb, pc) == (a.data.ptr, b.data.ptr, c.data.ptr)
        assert (m, n, k, lda, ldb, ldc) == (256, 256, 201, 201, 256, 256)
    assert fake.copies == [] and runtime.last_launch["config"] == elem("a")


# ============================================================================ on a GPU
@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU with CuPy")
@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_gpu_in_place_operands_match_float64(dt):
    cp = pytest.importorskip("cupy")
    rng = cp.random.default_rng(7)

    def ints(*shape):
        x = rng.integers(-3, 4, size=shape).astype(cp.float32)
        if dt == "bf16":  # exact small integers: the upper halves of their f32 bits
            return (x.view(cp.uint32) >> 16).astype(cp.uint16), x
        return x.astype(cp.float16), x

    kw = dict(dtype="bf16") if dt == "bf16" else {}
    cases = [
        ((200, 500), (500, 300), None, "a"),  # K = 500: A's rows 1000 bytes
        ((1300, 96), (96, 77), None, "b"),  # N = 77: B's rows 154 bytes
        ((99, 501), (501, 135), None, "ab"),
        ((256, 128), (128, 256), 1, "a"),  # a base one element off the 16-byte grid
    ]  # (each above the tiny kernel's volume, so the rule's route is the in-place kernel)
    for (m, k), (_, n), off, ops in cases:
        a, af = ints(m * k + (off or 0))
        a = a[off or 0 :].reshape(m, k)
        af = af[off or 0 :].reshape(m, k)
        b, bf = ints(k, n)
        ref = af.astype(cp.float64) @ bf.astype(cp.float64)
        for cfg in (elem(ops), elem(ops, bm=128, bn=256, stages=3), None):
            c = cp.full((m, n), cp.nan, dtype=cp.float32)
            runtime.gemm(a, b, c, out_dtype="f32", config=cfg, **kw)
            assert not bool(cp.isnan(c).any()) and float(cp.abs(c - ref).max()) == 0.0, (m, n, k, cfg)
        # the rule read them in place too, or staged them in the launch (Sm90Config.stage_in)
        cfg = runtime.last_launch["config"]
        assert cfg.elem_loads or getattr(cfg, "stage_in", "")
    # A column-major (M-major: read along M) with an odd leading dimension: 96 x 77, ld 97
    a, af = ints(77, 97)
    a, af = a.T[:96], af.T[:96]
    b, bf = ints(77, 128)
    ref = af.astype(cp.float64) @ bf.astype(cp.float64)
    c = cp.full((96, 128), cp.nan, dtype=cp.float32)
    runtime.gemm(a, b, c, out_dtype="f32", config=elem("a"), **kw)
    assert float(cp.abs(c - ref).max()) == 0.0
