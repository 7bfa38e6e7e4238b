"""The split-K fix-up's CTA (splitk.FixupShape, splitk.reduce_ir, splitk.fixup_grid): its grid
covers the output once (evaluated from the IR), planted bugs are refused by name, and the
plan launches it on that grid (fake CuPy)."""

from __future__ import annotations

import dataclasses

import pytest
from test_gpu_splitk import fake_tma  # noqa: F401 -- the fake-CuPy TMA fixture

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, ProofFailedError
from layoutproof.gpu.host import runtime
from layoutproof.gpu.kernels import splitk
from layoutproof.gpu.kernels.splitk import FIXUP_DEFAULT, FixupShape, SplitKConfig
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

WS = dict(loader="tma", schedule="ws")
PICK = SplitKConfig(Sm90Config(bm=64, bn=256, stages=5, **WS), 8)  # the rule's decode pick
COVER = "fix-up covers the output once"


def _ir(splits=8, out="f16"):
    return splitk.reduce_ir(splits, out, "fx")


# ============================================================================ obligations
@pytest.mark.parametrize("out", ["f16", "bf16", "f32"])
def test_the_fixup_covers_the_output_once(out):
    log = ProofLog()
    splitk.prove_fixup_grid(_ir(out=out), FIXUP_DEFAULT, log, max_n=600, max_m=4)
    (p,) = log
    assert p.kind == "bijective" and "covers [0, M) x [0, N) once" in p.statement and p.cases > 0


def test_the_generated_fixup_is_the_default_cta():
    kk = splitk.generate_splitk(PICK, GemmProblem("k", "n"))
    assert kk.reduce.name == "lp_splitk_reduce_f16_s8" and kk.reduce.threads == splitk.REDUCE_THREADS == 256
    assert FIXUP_DEFAULT.threads == 256
    assert "__launch_bounds__(256, 1)" in kk.reduce.source
    assert "const int c = blockIdx.x * 256 + threadIdx.x;" in kk.reduce.source
    assert splitk.fixup_grid(16, 4096) == (16, 16, 1) == splitk.fixup_grid(16, 4096, FIXUP_DEFAULT)
    assert splitk.fixup_grid(3, 257) == (2, 3, 1)
    with pytest.raises(GemmConfigError):
        splitk.fixup_grid(0, 5, FIXUP_DEFAULT)


@pytest.mark.parametrize("bad", [FixupShape(100), FixupShape(2048), FixupShape(0), FixupShape(True)])
def test_bad_shapes_are_refused(bad):
    with pytest.raises(GemmConfigError):
        bad.validate()
    with pytest.raises(GemmConfigError):
        splitk.fixup_grid(4, 4, bad)


# ---------------------------------------------------------------- planted bugs
def _rewrite_decl(k, name, fn):
    def rw(node):
        if isinstance(node, kir.Decl) and node.var.name == name:
            return dataclasses.replace(node, init=fn(node.init))
        return None

    return dataclasses.replace(k, body=kir.rewrite(k.body, rw))


def _refused(k, shape=FIXUP_DEFAULT):
    with pytest.raises(ProofFailedError) as e:
        splitk.prove_fixup_grid(k, shape, ProofLog(), max_n=300, max_m=3)
    assert e.value.condition == COVER
    return e.value


def test_a_column_stride_that_overlaps_is_refused():
    # c = blockIdx.x * 128 + threadIdx.x: the blocks' column ranges overlap (cells twice)
    k = _rewrite_decl(_ir(), "c", lambda e: kir.BLOCK_IDX * 128 + kir.THREAD_IDX)
    assert "stored 2 times" in str(_refused(k))


def test_a_missing_column_guard_is_refused():
    k = _ir()

    def fn(node):  # drop `if (c < N)`: the last block's threads land past N
        if isinstance(node, kir.If) and kir.emit_expr(node.cond) == "c < N":
            return node.then
        return None

    e = _refused(dataclasses.replace(k, body=kir.rewrite(k.body, fn)))
    assert "outside" in str(e)


def test_a_grid_that_misses_blocks_is_refused(monkeypatch):
    monkeypatch.setattr(splitk, "fixup_grid", lambda m, n, s=FIXUP_DEFAULT: (n // 512 or 1, m, 1))
    e = _refused(_ir())
    assert "stored 0 times" in str(e)


def test_a_kernel_of_other_threads_than_its_shape_is_refused():
    e = _refused(_ir(), FixupShape(128))
    assert "threads per CTA" in str(e)


# ============================================================================ the plan
def test_fake_plan_launches_the_fixup_on_its_grid(fake_tma):  # noqa: F811
    cp = fake_tma
    for m in (16, 17):
        n, k = 4096, 4096
        a, b = cp.array((m, k)), cp.array((k, n))
        c = runtime.gemm(a, b, config=PICK)
        plan = runtime.last_launch["plan"]
        f = cp.launches[-1]
        assert plan.fixup_shape == FIXUP_DEFAULT
        assert f["grid"] == splitk.fixup_grid(m, n) and f["block"] == (256, 1, 1)
        assert f["kinds"] == ["ptr", "ptr", "i32", "i32", "i64"]
        assert f["values"] == [plan._ws.data.ptr, c.data.ptr, m, n, n]
