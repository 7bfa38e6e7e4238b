"""The split-K fix-up's CTA shapes (gpu/splitk_fixup.py, splitk.reduce_ir / fixup_kernel):
every shape's grid covers the output once (evaluated from the IR), its obligations are
discharged before emission, planted bugs are refused by name, the register cap holds under
ptxas, the plan launches the rule's shape (fake CuPy), and with a GPU the results match
float64 with NaN-poisoned outputs."""

from __future__ import annotations

import dataclasses
import re
import shutil

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_splitk import fake_tma  # noqa: F401 -- the fake-CuPy TMA fixture

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.host import runtime
from layoutproof.gpu.kernels import splitk, splitk_fixup
from layoutproof.gpu.kernels.splitk import FIXUP_DEFAULT, FIXUP_SHAPES, FixupShape, SplitKConfig, fixup_kernel
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

WS = dict(loader="tma", schedule="ws")
PICK = SplitKConfig(Sm90Config(bm=64, bn=256, stages=5, **WS), 8)  # the rule's decode pick
NVCC = shutil.which("nvcc")
COVER = "fix-up covers the output once"


def _ir(shape, splits=8, out="f16"):
    return splitk.reduce_ir(splits, out, "fx", shape)


# ============================================================================ obligations
@pytest.mark.parametrize("name", sorted(FIXUP_SHAPES))
def test_every_shape_covers_the_output_once(name):
    shape = FIXUP_SHAPES[name]
    log = ProofLog()
    splitk_fixup.prove_fixup_grid(_ir(shape), shape, log, max_n=300, max_m=4)
    (p,) = log
    assert p.kind == "bijective" and shape.tag in p.statement and p.cases > 0


@pytest.mark.parametrize("name", sorted(set(FIXUP_SHAPES) - {"t256"}))
@pytest.mark.parametrize(
    "prob", [GemmProblem("k", "n"), GemmProblem("m", "k", dtype="bf16", out_dtype="bf16")]
)
def test_every_shape_is_proven_before_emission(name, prob):
    shape = FIXUP_SHAPES[name]
    k = fixup_kernel(PICK, prob, shape)
    assert k.threads == shape.threads and k.name.endswith(shape.tag)
    lines = [p.line() for p in k.proofs]
    assert any("fix-up ordering: griddepcontrol.wait is the kernel's first statement" in x for x in lines)
    assert any("fix-up plane loop: each workspace read's plane index runs over 0..7" in x for x in lines)
    assert any(f"fix-up cells ({shape.tag})" in x and "covers [0, M) x [0, N) once" in x for x in lines)
    assert any("split-K workspace read W[s, r, c]: address == claim and in bounds" in x for x in lines)
    assert any("C element store C[r, c]: address == claim and in bounds" in x for x in lines)
    src = k.source
    assert "// coverage: 2 of 2 memory accesses" in src
    assert f"__launch_bounds__({shape.threads}, {shape.min_blocks})" in src
    assert shape.threads * shape.regs <= 4096  # resident beside a split CTA (61,440 registers)
    # the ordering: the wait is the first statement, the trigger follows, before any access
    entry = src[src.index(f"\n{k.name}(") :].split(") {\n", 1)[1]
    body = [ln.strip() for ln in entry.splitlines() if ln.strip() and not ln.strip().startswith("//")]
    assert body[:2] == ["lp_griddep_wait();", "lp_griddep_launch();"]


def test_the_default_shape_is_the_generated_fixup_unchanged():
    kk = splitk.generate_splitk(PICK, GemmProblem("k", "n"))
    assert fixup_kernel(PICK, GemmProblem("k", "n")) is kk.reduce
    assert fixup_kernel(PICK, GemmProblem("k", "n"), FIXUP_DEFAULT) is kk.reduce
    assert kk.reduce.name == "lp_splitk_reduce_f16_s8" and kk.reduce.threads == splitk.REDUCE_THREADS == 256
    assert "__launch_bounds__(256, 1)" in kk.reduce.source
    assert "const int c = blockIdx.x * 256 + threadIdx.x;" in kk.reduce.source
    assert splitk.fixup_grid(16, 4096) == (16, 16, 1) == splitk.fixup_grid(16, 4096, FIXUP_DEFAULT)
    assert splitk.fixup_grid(3, 257) == (2, 3, 1)


def test_grids_of_the_shapes():
    g = {nm: splitk.fixup_grid(16, 4096, s) for nm, s in FIXUP_SHAPES.items()}
    assert g == {
        "t256": (16, 16, 1),
        "t128": (32, 16, 1),
        "t128c2": (16, 16, 1),
        "t128c4": (8, 16, 1),
        "t128c2r2": (16, 8, 1),
        "t64c4": (16, 16, 1),
        "t128c2cv": (16, 16, 1),
    }
    assert splitk.fixup_grid(1, 11008, FIXUP_SHAPES["t128c4"]) == (22, 1, 1)
    assert splitk.fixup_grid(17, 100, FIXUP_SHAPES["t128c2r2"]) == (1, 9, 1)
    with pytest.raises(GemmConfigError):
        splitk.fixup_grid(0, 5, FIXUP_DEFAULT)


@pytest.mark.parametrize(
    "bad",
    [
        FixupShape(100, 1, 1, 0),  # not a multiple of 32
        FixupShape(2048, 1, 1, 0),
        FixupShape(128, 0, 1, 32),
        FixupShape(128, 9, 1, 32),
        FixupShape(128, 1, 17, 32),
        FixupShape(128, 1, 1, 24),  # 128 * 24 does not divide 65536
        FixupShape(32, 1, 1, 16),  # 128 CTAs of 32 threads: 4096 threads per SM
        FixupShape(128, True, 1, 32),
        FixupShape(128, 2, 1, 32, 101),  # a carveout is a percentage
        FixupShape(128, 2, 1, 32, -2),
    ],
)
def test_bad_shapes_are_refused(bad):
    with pytest.raises(GemmConfigError):
        bad.validate()
    with pytest.raises(GemmConfigError):
        splitk.fixup_grid(4, 4, bad)


def test_only_the_plane_reduction_has_fixup_shapes():
    with pytest.raises(GemmConfigError):
        fixup_kernel(
            dataclasses.replace(PICK, reduction="atomic"), GemmProblem("k", "n"), FIXUP_SHAPES["t128"]
        )


# ---------------------------------------------------------------- planted bugs
def _rewrite_decl(k, name, fn):
    def rw(node):
        if isinstance(node, kir.Decl) and node.var.name == name:
            return dataclasses.replace(node, init=fn(node.init))
        return None

    return dataclasses.replace(k, body=kir.rewrite(k.body, rw))


def _refused(k, shape):
    with pytest.raises(ProofFailedError) as e:
        splitk_fixup.prove_fixup_grid(k, shape, ProofLog(), max_n=300, max_m=3)
    assert e.value.condition == COVER
    return e.value


def test_a_column_stride_that_overlaps_is_refused():
    shape = FIXUP_SHAPES["t128c2"]
    # c0 = blockIdx.x * 128 + threadIdx.x: the blocks' column ranges overlap (each cell twice)
    k = _rewrite_decl(_ir(shape), "c0", lambda e: kir.BLOCK_IDX * 128 + kir.THREAD_IDX)
    assert "stored 2 times" in str(_refused(k, shape)) or "outside" in str(_refused(k, shape))


def test_a_column_loop_that_skips_columns_is_refused():
    shape = FIXUP_SHAPES["t128c4"]
    k = _ir(shape)

    def fn(node):  # j < 3: the last column of each thread is never stored
        if isinstance(node, kir.For) and node.var.name == "j":
            return dataclasses.replace(node, stop=kir.Const(3))
        return None

    e = _refused(dataclasses.replace(k, body=kir.rewrite(k.body, fn)), shape)
    assert "stored 0 times" in str(e)


def test_a_row_map_that_ignores_the_rows_per_block_is_refused():
    shape = FIXUP_SHAPES["t128c2r2"]
    k = _rewrite_decl(_ir(shape), "r0", lambda e: kir.Var("blockIdx.y", builtin=True))
    _refused(k, shape)


def test_a_missing_row_guard_is_refused():
    shape = FIXUP_SHAPES["t128c2r2"]
    k = _ir(shape)

    def fn(node):  # drop `if (r < M)`: the second row of the last block lands past M when M is odd
        if isinstance(node, kir.If) and kir.emit_expr(node.cond) == "r < M":
            return node.then
        return None

    e = _refused(dataclasses.replace(k, body=kir.rewrite(k.body, fn)), shape)
    assert "outside" in str(e)


def test_a_grid_that_misses_blocks_is_refused(monkeypatch):
    shape = FIXUP_SHAPES["t128c2"]
    real = splitk_fixup.fixup_grid
    monkeypatch.setattr(splitk_fixup, "fixup_grid", lambda m, n, s=FIXUP_DEFAULT: (n // 256 or 1, m, 1))
    e = _refused(_ir(shape), shape)
    assert "stored 0 times" in str(e)
    monkeypatch.setattr(splitk_fixup, "fixup_grid", real)


def test_a_kernel_of_other_threads_than_its_shape_is_refused():
    e = _refused(_ir(FIXUP_SHAPES["t128"]), FIXUP_SHAPES["t64c4"])
    assert "threads per CTA" in str(e)


def test_a_shape_whose_kernel_drops_its_wait_is_refused_at_generation(monkeypatch):
    real = splitk.reduce_ir

    def no_wait(splits, out, name, shape=FIXUP_DEFAULT):
        k = real(splits, out, name, shape)
        body = tuple(
            s
            for s in k.body.body
            if not (isinstance(s, kir.Eval) and isinstance(s.e, kir.Call) and s.e.name == "lp_griddep_wait")
        )
        return dataclasses.replace(k, body=kir.Block(body, k.body.bare))

    monkeypatch.setattr(splitk, "reduce_ir", no_wait)
    monkeypatch.setattr(splitk, "_FIXUP_MEMO", {})
    with pytest.raises(ProofFailedError) as e:
        fixup_kernel(PICK, GemmProblem("k", "n"), FIXUP_SHAPES["t128c2"])
    assert e.value.condition == "fix-up after the split kernel"


# ============================================================================ the rule
def test_choose_fixup_follows_its_rule(monkeypatch):
    assert P.choose_fixup(4096, 4096, 2) == "t256"
    monkeypatch.setitem(P.FIXUP_RULE, "max_m", 16)
    monkeypatch.setitem(P.FIXUP_RULE, "shape", "t128c2")
    assert P.choose_fixup(16, 4096, 8) == "t128c2" and P.choose_fixup(17, 4096, 8) == "t256"
    assert P.FIXUP_RULE["shape"] in FIXUP_SHAPES
    for bad in ((0, 4, 2), (4, 4, 0), (4.0, 4, 2), (True, 4, 2)):
        with pytest.raises(GemmInputError):
            P.choose_fixup(*bad)


def test_the_shipped_rule_names_a_shape():
    assert P.FIXUP_RULE["shape"] in FIXUP_SHAPES and isinstance(P.FIXUP_RULE["max_m"], int)


@pytest.mark.parametrize("name", sorted(FIXUP_SHAPES))
def test_fake_plan_launches_the_rules_fixup_shape(fake_tma, monkeypatch, name):  # noqa: F811
    cp = fake_tma
    shape = FIXUP_SHAPES[name]
    monkeypatch.setitem(P.FIXUP_RULE, "max_m", 16)
    monkeypatch.setitem(P.FIXUP_RULE, "shape", name)
    for m in (16, 17):
        n, k = 4096, 4096
        a, b = cp.array((m, k)), cp.array((k, n))
        c = runtime.gemm(a, b, config=PICK)
        plan = runtime.last_launch["plan"]
        f = cp.launches[-1]
        want = shape if m <= 16 else FIXUP_DEFAULT
        assert plan.fixup_shape == want
        assert f["grid"] == splitk.fixup_grid(m, n, want) and f["block"] == (want.threads, 1, 1)
        assert f["kinds"] == ["ptr", "ptr", "i32", "i32", "i64"]
        assert f["values"] == [plan._ws.data.ptr, c.data.ptr, m, n, n]
        cv = getattr(plan._fix[0], "preferred_shared_memory_carveout", None)
        assert cv == (want.carveout if want.carveout >= 0 else None)


# ============================================================================ ptxas
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize("name", sorted(set(FIXUP_SHAPES) - {"t256"}))
def test_shapes_compile_within_their_register_cap(tmp_path, name):
    shape = FIXUP_SHAPES[name]
    for prob in (GemmProblem("k", "n"), GemmProblem("k", "n", dtype="bf16", out_dtype="bf16")):
        info = _nvcc_sm90a(fixup_kernel(PICK, prob, shape).source, tmp_path)
        regs = [int(x) for x in re.findall(r"Used (\d+) registers", info)]
        assert regs and max(regs) <= shape.regs, info
        # allocated per warp in units of 256: the CTA holds at most 4,096 of the SM's registers
        per_warp = -(-max(regs) * 32 // 256) * 256
        assert per_warp * (shape.threads // 32) <= 4096, info


# ============================================================================ on a GPU
gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


@gpu
@pytest.mark.parametrize("name", sorted(FIXUP_SHAPES))
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (16, 4096, 4096), (5, 300, 2048), (16, 1000, 3000)])
def test_gpu_fixup_shapes_match_float64(monkeypatch, name, m, n, k):
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("split-K runs the TMA kernels of sm_90")
    monkeypatch.setitem(P.FIXUP_RULE, "max_m", 16)
    monkeypatch.setitem(P.FIXUP_RULE, "shape", name)
    rng = np.random.default_rng(m * 7 + n)
    a = cp.asarray(rng.integers(-3, 4, size=(m, k)).astype(np.float16))
    b = cp.asarray(rng.integers(-3, 4, size=(k, n)).astype(np.float16))
    ref = a.astype(cp.float64) @ b.astype(cp.float64)
    c = cp.full((m, n), cp.nan, dtype=cp.float32)
    plan = runtime.gemm_plan(a, b, c, config=PICK, out_dtype="f32")
    assert plan.fixup_shape == FIXUP_SHAPES[name]
    for _ in range(3):
        c.fill(cp.nan)
        plan(a, b, c)
        cp.cuda.Device().synchronize()
        assert not bool(cp.isnan(c).any())
        assert float(cp.abs(c - ref).max()) == 0.0, (name, m, n, k)
