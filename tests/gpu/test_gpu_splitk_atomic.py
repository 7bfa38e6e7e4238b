"""Split-K with the atomic reduction (gpu/splitk.py ``reduction="atomic"``, gpu/splitk_atomic.py):
every unit adds its f32 partial into one plane with ``red.global.add``, the fix-up converts
the plane and zeroes it.  The model of the two kernels over two calls, planted bugs refused
by the property they break (in the model and in the IR), the fix-up's cover of the plane,
the generated sources, a plan's launches (fake CuPy), the nvcc compile, and with a GPU the
results against float64 on every call with the plane left zero."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
from test_gpu_codegen import _nvcc_sm90a  # the shared nvcc + ptxas -v check (no spills)
from test_gpu_splitk import fake_tma  # noqa: F401  (the fixture: a fake CuPy with TMA)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, ProofFailedError
from layoutproof.gpu.host import runtime
from layoutproof.gpu.kernels import splitk
from layoutproof.gpu.kernels import splitk_atomic as A
from layoutproof.gpu.kernels.splitk import SplitKConfig, generate_splitk
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

WS = dict(loader="tma", schedule="ws")
ATOMIC = SplitKConfig(Sm90Config(bm=64, bn=256, stages=5, **WS), 8, "atomic")
NVCC = shutil.which("nvcc")


# ============================================================================ the model
@pytest.mark.parametrize("units", [1, 2, 3, 4])
def test_the_model_of_the_kernels_as_built_holds(units):
    assert A.check_atomic(units) > 0


@pytest.mark.parametrize(
    "split, fixup, cond, needle",
    [
        # a unit storing into the shared plane instead of adding: partials lost
        (
            ("wait", "trigger", "store"),
            A.FIXUP_PROGRAM,
            "fix-up reads every partial of its call once",
            "missing",
        ),
        # the fix-up reading before the split grid completed
        (A.SPLIT_PROGRAM, ("trigger", "read", "zero", "out"), "fix-up reads every partial", "missing"),
        # the fix-up not zeroing the plane: the next call adds onto the last one's sum
        (
            A.SPLIT_PROGRAM,
            ("wait", "trigger", "read", "out"),
            "fix-up reads every partial",
            "not of this call",
        ),
        # zero before read
        (
            A.SPLIT_PROGRAM,
            ("wait", "trigger", "zero", "read", "out"),
            "fix-up reads every partial",
            "missing",
        ),
        # the split kernel adding before the previous fix-up has read and zeroed (no wait)
        (("trigger", "red"), A.FIXUP_PROGRAM, "fix-up reads every partial", "not of this call"),
    ],
)
def test_planted_protocol_bugs_are_refused_by_name(split, fixup, cond, needle):
    with pytest.raises(ProofFailedError) as e:
        A.check_atomic(2, split=split, fixup=fixup)
    assert cond in e.value.condition and needle in str(e.value)


def test_a_fixup_that_never_reads_and_a_plane_left_nonzero_are_refused():
    with pytest.raises(ProofFailedError) as e:
        A.check_atomic(1, fixup=("wait", "trigger", "out"))
    assert e.value.condition == "fix-up reads every partial of its call once"
    with pytest.raises(ProofFailedError) as e:
        # the last call's partials stay (only one call: nothing reads them stale)
        A.check_atomic(1, fixup=("wait", "trigger", "read", "out"), calls=1)
    assert e.value.condition == "plane zeroed for the next call"


def test_model_parameters_are_checked():
    with pytest.raises(ProofFailedError):
        A.check_atomic(0)
    with pytest.raises(ProofFailedError):
        A.check_atomic(2, split=("wait", "atomic"))


# ============================================================================ the kernels
def test_atomic_split_kernel_adds_into_one_plane_and_the_fixup_zeroes_it():
    kk = generate_splitk(ATOMIC, GemmProblem("k", "n"))
    src = kk.gemm.source
    assert "lp_out_t* const Cs = C;" in src and "(long long)sk * M * ldc" not in src
    assert src.count("lp_red_add_f32x4(&*reinterpret_cast<uint4*>(p), val);") == 1
    assert src.count("lp_red_add_f32(&p[i], e[i]);") == 1
    assert "red.global.add.v4.f32" in src
    assert "*reinterpret_cast<uint4*>(p) = val;" not in src and "p[i] = e[i];" not in src
    assert src.splitlines()[0].startswith("//") and "reduction (red.add" in src
    red = kk.reduce.source
    body = red.split("long long ldc) {")[1]
    assert body.index("lp_griddep_wait();") < body.index("= W[") < body.index("= 0.0f;") < body.index("C[")
    lines = [p.line() for p in kk.proofs]
    assert any("atomic split-K (programs read from the IR: split wait -> trigger -> red" in x for x in lines)
    assert any("fix-up wait -> trigger -> read -> zero -> out" in x for x in lines)
    assert any("fix-up cells: grid (ceil(N/256), M)" in x for x in lines)
    assert any("it zeroes the plane for the next call" in x for x in lines)
    # the split-K obligations of the planes hold as before (unit map, chunks, workspace)
    assert any("lp_split" in x and "bijection" in x for x in lines)
    assert ATOMIC.key() == "sm90_64x256x64_s5_g8_tma_ws_sk8a"


def test_atomic_config_rules():
    with pytest.raises(GemmConfigError):
        SplitKConfig(ATOMIC.base, 8, "atomic", "relu").validate()
    with pytest.raises(GemmConfigError):
        SplitKConfig(ATOMIC.base, 8, "atomics").validate()
    assert "atomic" in splitk.REDUCTIONS


def _split_ir():
    return generate_splitk(ATOMIC, GemmProblem("k", "n")).gemm.ir


def _fix_ir():
    return splitk.atomic_reduce_ir("f16", "fx")


def test_a_split_kernel_with_a_plain_store_into_the_plane_is_refused():
    ir = _split_ir()
    done = []

    def back(node):  # the first reduction becomes a plain store again
        if isinstance(node, kir.Red) and not done:
            done.append(1)
            return kir.Assign(node.mem, node.val)
        return None

    bad = kir.rewrite(ir, back)
    with pytest.raises(ProofFailedError) as e:
        A.prove_atomic_protocol(bad, _fix_ir(), 8, ProofLog())
    assert e.value.condition == "fix-up reads every partial of its call once"


def test_a_fixup_without_the_zero_store_is_refused():
    def drop(node):
        if isinstance(node, kir.Block):
            keep = tuple(
                s
                for s in node.body
                if not (
                    isinstance(s, kir.Assign)
                    and isinstance(s.lhs, kir.Mem)
                    and s.lhs.claim.what == A.ATOMIC_ZERO
                )
            )
            return dataclasses.replace(node, body=keep) if len(keep) != len(node.body) else None
        return None

    bad = kir.rewrite(_fix_ir(), drop)
    with pytest.raises(ProofFailedError) as e:
        A.prove_atomic_protocol(_split_ir(), bad, 8, ProofLog())
    assert e.value.condition == "fix-up reads every partial of its call once"


def test_a_fixup_zeroing_another_cell_or_with_another_value_is_refused():
    def shift(node):
        if (
            isinstance(node, kir.Assign)
            and isinstance(node.lhs, kir.Mem)
            and node.lhs.claim.what == A.ATOMIC_ZERO
        ):
            return dataclasses.replace(node, lhs=dataclasses.replace(node.lhs, idx=node.lhs.idx + 1))
        return None

    with pytest.raises(ProofFailedError) as e:
        A.fixup_program_ir(kir.rewrite(_fix_ir(), shift))
    assert e.value.condition == "plane zeroed for the next call"

    def one(node):
        if (
            isinstance(node, kir.Assign)
            and isinstance(node.lhs, kir.Mem)
            and node.lhs.claim.what == A.ATOMIC_ZERO
        ):
            return dataclasses.replace(node, rhs=kir.FloatLit("1.0f"))
        return None

    with pytest.raises(ProofFailedError) as e:
        A.fixup_program_ir(kir.rewrite(_fix_ir(), one))
    assert e.value.condition == "plane zeroed for the next call"


def test_a_fixup_wait_under_a_condition_is_refused():
    def guard(node):
        if isinstance(node, kir.Eval) and isinstance(node.e, kir.Call) and node.e.name == A.GRID_WAIT:
            return kir.If(kir.THREAD_IDX.lt(32), kir.block(node))
        return None

    with pytest.raises(ProofFailedError) as e:
        A.fixup_program_ir(kir.rewrite(_fix_ir(), guard))
    assert e.value.condition == "grid dependency at the top level"


def test_a_fixup_that_misses_cells_is_refused():
    def narrow(node):
        if isinstance(node, kir.Decl) and node.var.name == "c":
            return dataclasses.replace(node, init=kir.BLOCK_IDX * 255 + kir.THREAD_IDX)
        return None

    with pytest.raises(ProofFailedError) as e:
        A.prove_fixup_cover(kir.rewrite(_fix_ir(), narrow), splitk.REDUCE_THREADS, ProofLog(), max_n=300)
    assert e.value.condition == "fix-up covers the plane once"


def test_the_fixup_grid_is_the_covered_one():
    assert splitk.fixup_grid(16, 4096) == (16, 16, 1)
    assert splitk.fixup_grid(3, 257) == (2, 3, 1)


# ============================================================================ the plan (fake CuPy)
def test_fake_atomic_plan_has_one_zeroed_plane_and_launches_split_then_fixup(fake_tma):  # noqa: F811
    cp = fake_tma
    m, n, k = 16, 4096, 4096
    a, b = cp.array((m, k)), cp.array((k, n))
    c = runtime.gemm(a, b, config=ATOMIC)
    plan = runtime.last_launch["plan"]
    g, f = cp.launches
    ws = plan._ws.data.ptr
    assert plan._ws.shape == (1, m * n)  # one plane, not S
    assert g["values"][2:] == [ws, m, n, k, n, 1]
    assert f["values"] == [ws, c.data.ptr, m, n, n]
    assert f["grid"] == splitk.fixup_grid(m, n) and f["block"] == (splitk.REDUCE_THREADS, 1, 1)
    # the wgmma rule does not pick the atomic reduction (measured slower on the decode shapes)
    runtime.gemm(a, b, path="wgmma")
    got = runtime.last_launch["config"]
    assert isinstance(got, SplitKConfig) and got.reduction == "kernel"


# ============================================================================ nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    "cfg, prob",
    [
        (ATOMIC, GemmProblem("k", "n")),
        (
            SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, **WS), 3, "atomic"),
            GemmProblem("m", "k", dtype="bf16", out_dtype="bf16"),
        ),
    ],
)
def test_atomic_sources_compile_for_sm90a_without_spills(tmp_path, cfg, prob):
    kk = generate_splitk(cfg, prob)
    _nvcc_sm90a(kk.gemm.source, tmp_path)
    _nvcc_sm90a(kk.reduce.source, tmp_path)


# ============================================================================ on a GPU
gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


@gpu
@pytest.mark.parametrize(
    "cfg",
    [ATOMIC, SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, **WS), 3, "atomic")],
)
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (16, 4096, 4096), (37, 45, 51), (130, 260, 1000)])
def test_gpu_atomic_splitk_matches_float64_on_every_call(cfg, m, n, k):
    cp = pytest.importorskip("cupy")
    if cp.cuda.Device().compute_capability != "90" or not runtime.tma_available():
        pytest.skip("split-K runs the TMA kernels of sm_90")
    rng = cp.random.default_rng(m + n + k)
    c = cp.empty((m, n), dtype=cp.float32)
    a0 = rng.integers(-3, 4, size=(m, k)).astype(cp.float16)
    b0 = rng.integers(-3, 4, size=(k, n)).astype(cp.float16)
    plan = runtime.gemm_plan(a0, b0, c, config=cfg, out_dtype="f32")
    for call in range(3):  # each call runs on the plane the last fix-up left
        a = rng.integers(-3, 4, size=(m, k)).astype(cp.float16)
        b = rng.integers(-3, 4, size=(k, n)).astype(cp.float16)
        c.fill(cp.nan)
        plan(a, b, c)
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        # small integers: every partial sum is exact in f32, whatever the order
        assert float(cp.abs(c - ref).max()) == 0.0, (cfg.key(), m, n, k, call)
        cp.cuda.Device().synchronize()
        assert float(cp.abs(plan._ws).max()) == 0.0  # the fix-up left the plane zero
    assert np.isfinite(float(cp.abs(c).max()))
