"""The kernel IR (layoutproof.gpu.proof.kir): the printer, C semantics of the evaluator, the
coverage header, and planted bugs in the IR of the generated kernels -- each fails
generation with a named obligation."""

from __future__ import annotations

import dataclasses
import pathlib
import re
from dataclasses import replace

import numpy as np
import pytest

from layoutproof import Layout
from layoutproof.gpu.config import GemmConfig, GemmProblem
from layoutproof.gpu.errors import LoweringError, ProofFailedError
from layoutproof.gpu.kernels import mma_sync, wgmma_ws
from layoutproof.gpu.kernels import wgmma as wgmma
from layoutproof.gpu.kernels.wgmma import Sm90Config
from layoutproof.gpu.proof import evaluate, kir, lower, obligations
from layoutproof.gpu.proof.record import ProofLog

MMA = GemmConfig(bm=64, bn=64, bk=32, warps_m=2, warps_n=2, stages=3)
MMA_PROB = GemmProblem("k", "n")
WS = Sm90Config(loader="tma", schedule="ws")


# ----------------------------------------------------------------------------- printer, semantics
def test_printer_follows_c_precedence():
    i, j = kir.Var("i"), kir.Var("j")
    assert kir.emit_expr((i + 1) * 4) == "(i + 1) * 4"
    assert kir.emit_expr(i - (j - 1)) == "i - (j - 1)"
    assert kir.emit_expr(i + j * 2 >> 3) == "(i + j * 2) >> 3"
    assert kir.emit_expr(kir.Cond(i & 1, 7 - j, j)) == "(i & 1) ? (7 - j) : j"
    assert kir.emit_expr(kir.Cast("long long", i + 1) * j) == "(long long)(i + 1) * j"
    assert kir.emit_expr(kir.Const(3, "unsigned") * i) == "3u * i"


def test_evaluator_has_c_semantics():
    assert evaluate.ev(kir.Bin("/", kir.Const(-7), kir.Const(2)), {}).tolist() == -3
    assert evaluate.ev(kir.Bin("%", kir.Const(-7), kir.Const(2)), {}).tolist() == -1
    assert evaluate.ev(kir.Const(0, "unsigned") - 1, {}).tolist() == 2**32 - 1
    i = kir.Var("i")
    assert evaluate.ev(i * 3 + 1, {"i": np.arange(4)}).tolist() == [1, 4, 7, 10]
    with pytest.raises(ProofFailedError) as ei:
        evaluate.ev(kir.Const(1 << 30) * 4, {})
    assert ei.value.condition == "no signed overflow"
    with pytest.raises(ProofFailedError) as ei:
        evaluate.ev(kir.Const(-8) >> 1, {})
    assert ei.value.condition == "no shift of a negative value"


def test_calls_of_proven_functions_name_every_argument_once():
    fn = kir.from_lowered(lower.lower(Layout((4, 8), (8, 1)), ("r", "c"), name="f"))
    r, c = kir.Var("r"), kir.Var("c")
    assert kir.emit_expr(kir.call(fn, c=c, r=r + 1)) == "f(r + 1, c)"
    with pytest.raises(ProofFailedError) as ei:
        kir.call(fn, r=r, k=c)
    assert ei.value.condition == "call arguments by name"


def test_no_regular_expression_in_the_kernel_generators():
    gpu = pathlib.Path(mma_sync.__file__).parent.parent
    kernels = sorted(f"kernels/{p.name}" for p in (gpu / "kernels").glob("*.py"))
    for name in ("proof/kir.py", *kernels, "proof/pipeline.py", "proof/lower.py"):
        text = (gpu / name).read_text()
        assert not re.search(r"^\s*import re\b|^\s*from re import", text, re.M), name


# ----------------------------------------------------------------------------- coverage
@pytest.mark.parametrize("gen", ["mma", "ws"])
def test_header_states_full_coverage(gen):
    k = mma_sync.generate(MMA, MMA_PROB) if gen == "mma" else wgmma.generate_sm90(WS, GemmProblem("k", "k"))
    m = re.search(
        r"// coverage: (\d+) of (\d+) memory accesses, (\d+) of (\d+) barrier "
        r"operations covered",
        k.source,
    )
    assert m is not None
    a, na, b, nb = (int(x) for x in m.groups())
    assert a == na > 0 and b == nb > 0
    # every access obligation is in the header (one line each)
    assert sum("address == claim" in p.statement for p in k.proofs) == na


# ----------------------------------------------------------------------------- planted bugs
def _tampered(monkeypatch, module, builder, edit):
    """Build the kernel IR with ``edit`` applied (a replacement node or None); the edit
    must hit at least one node."""
    good = getattr(module, builder)

    def bad(*args, **kw):
        k = good(*args, **kw)
        hits = []

        def f(n):
            r = edit(n)
            if r is not None:
                hits.append(n)
            return r

        k.body = kir.rewrite(k.body, f)
        assert hits, "the planted edit did not apply"
        return k

    monkeypatch.setattr(module, builder, bad)


def _mma_fails(monkeypatch, edit) -> ProofFailedError:
    _tampered(monkeypatch, mma_sync, "_kernel_ir", edit)
    with pytest.raises(ProofFailedError) as ei:
        mma_sync.generate(MMA, MMA_PROB, memo=False)
    return ei.value


def _ws_fails(monkeypatch, edit) -> ProofFailedError:
    _tampered(monkeypatch, wgmma_ws, "_source_ws_ir", edit)
    with pytest.raises(ProofFailedError) as ei:
        wgmma.generate_sm90(WS, GemmProblem("k", "k"), memo=False)
    return ei.value


def test_planted_wrong_address_term(monkeypatch):
    e = _mma_fails(
        monkeypatch,
        lambda n: (
            dataclasses.replace(n, dst=n.dst + kir.Const(16, "unsigned"))
            if isinstance(n, kir.CpAsync)
            else None
        ),
    )
    assert e.condition == "address equals its layout" and "cp.async destination" in str(e)


def test_planted_swapped_call_arguments(monkeypatch):
    def swap(n):
        if isinstance(n, kir.FnCall) and n.fn.name == "lp_c_row":
            a = dict(n.args)
            a["wm"], a["wn"] = a["wn"], a["wm"]
            return kir.FnCall(n.fn, tuple(a.items()))
        return None

    e = _mma_fails(monkeypatch, swap)
    assert e.condition == "address equals its layout" and "C accumulator store" in str(e)


def test_planted_off_by_one_guard(monkeypatch):
    def loosen(n):  # c + 1 < N  ->  c + 1 <= N: the second column may be N
        if (
            isinstance(n, kir.Bin)
            and n.op == "<"
            and isinstance(n.a, kir.Bin)
            and n.a.op == "+"
            and isinstance(n.a.b, kir.Const)
            and n.a.b.value == 1
            and isinstance(n.b, kir.Var)
            and n.b.name == "N"
        ):
            return kir.Bin("<=", n.a, n.b)
        return None

    e = _mma_fails(monkeypatch, loosen)
    assert e.condition == "global access in bounds" and "C accumulator store" in str(e)


def test_planted_off_by_one_loop_bound(monkeypatch):
    def longer(n):  # one copy iteration too many
        if (
            isinstance(n, kir.For)
            and n.var.name == "i"
            and any(isinstance(x, kir.CpAsync) for x in kir.walk(n.body))
        ):
            return dataclasses.replace(n, stop=kir.Const(n.stop.value + 1))
        return None

    e = _mma_fails(monkeypatch, longer)
    assert e.condition == "table index in range" and "a_s[...] read outside [0, 2)" in str(e)


def test_planted_barrier_under_a_thread_condition(monkeypatch):
    e = _mma_fails(
        monkeypatch,
        lambda n: kir.If(kir.THREAD_IDX.lt(64), kir.block(n)) if isinstance(n, kir.SyncThreads) else None,
    )
    assert e.condition == "barrier not under a thread-dependent condition"


def test_planted_wrong_wait_parity(monkeypatch):
    e = _ws_fails(
        monkeypatch,
        lambda n: (
            kir.MbarWait(n.bar, n.parity ^ kir.Const(1, "unsigned"), n.comment)
            if isinstance(n, kir.MbarWait) and not isinstance(n.parity, kir.Bin)
            else None
        ),
    )
    # the consumers' wait on full with ph ^ 1: the first acquisition passes before any data
    assert e.condition == "acquire sees its own k-tile"


def test_planted_missing_arrive(monkeypatch):
    seen = []

    def drop_last(n):  # the release after the tile's last batch
        if isinstance(n, kir.If) and any(isinstance(x, kir.MbarArrive) for x in n.then.body):
            seen.append(n)
            if len(seen) == 2:
                return kir.Block(())
        return None

    e = _ws_fails(monkeypatch, drop_last)
    assert e.condition == "release sites"


def test_an_address_not_multilinear_in_a_runtime_value_is_refused(monkeypatch):
    def square(n):  # C + r * ldc + c  ->  C + r * ldc * ldc + c: no 0/1-corner argument
        if isinstance(n, kir.Decl) and n.var.name == "p" and n.init is not None:
            ldc = next(x for x in kir.walk(n.init) if isinstance(x, kir.Var) and x.name == "ldc")
            return kir.Decl(n.var, n.init + ldc * ldc)
        return None

    e = _mma_fails(monkeypatch, square)
    assert e.condition == "address multilinear in the runtime values"


def test_an_unclaimed_memory_access_is_refused(monkeypatch):
    def bare(n):  # p[0] = ... written as a plain index: a store with no claim
        if isinstance(n, kir.Mem) and n.idx is not None and n.space == "global":
            return kir.Index(n.ptr, (n.idx,))
        return None

    e = _mma_fails(monkeypatch, bare)
    assert e.condition == "coverage" and "p[0]" in str(e)


# ----------------------------------------------------------------------------- atomics, unroll, rank-3 TMA
def _counter_kernel(sem="acq_rel", idx=None):
    """A small kernel: thread 0 of each block counts itself on counters[blockIdx.x]."""
    c, n = kir.Var("counters", "unsigned*"), kir.Var("n")
    prev = kir.Var("prev", "unsigned")
    bx = kir.BLOCK_IDX
    claim = kir.Claim("counter", kir.Cast("long long", c) + 4 * bx, bounds=((bx, n),), width=4)
    mem = kir.Mem(c, claim, idx=bx if idx is None else idx)
    body = kir.block(
        kir.If(
            bx.lt(n),
            kir.block(
                kir.If(
                    kir.THREAD_IDX.eq(0),
                    kir.block(
                        kir.Decl(prev), kir.Assign(prev, kir.AtomicAdd(mem, kir.Const(1, "unsigned"), sem))
                    ),
                )
            ),
        )
    )
    return kir.Kernel(
        "lp_count", (("unsigned*", c), ("int", n)), body, 128, helpers=("atomic",), sizes={"unsigned": 4}
    )


@pytest.mark.parametrize("sem", kir.ATOMIC_SEMS)
def test_atomics_print_their_order_and_are_claimed_accesses(sem):
    k = _counter_kernel(sem)
    src = kir.emit(k)
    assert f"prev = lp_atom_add_{sem}(&counters[blockIdx.x], 1u);" in src
    ptx = "atom.add" + ("" if sem == "relaxed" else f".{sem}") + ".gpu.global.u32"
    assert ptx in src
    log = ProofLog()
    rep = obligations.discharge(k, log)
    assert rep.accesses == rep.accesses_covered == 1
    assert any("global atomic read-modify-write: counter" in p.statement for p in log)
    # an atomic on the wrong element is refuted like any access
    with pytest.raises(ProofFailedError) as e:
        obligations.discharge(_counter_kernel(sem, idx=kir.BLOCK_IDX + 1), ProofLog())
    assert e.value.condition == "address equals its layout"


def test_an_atomic_with_an_unknown_order_is_not_printed():
    with pytest.raises(LoweringError):
        kir.emit(_counter_kernel("seq_cst"))


def test_a_loop_prints_its_unroll_count():
    i = kir.Var("i")
    body = kir.block(kir.Eval(kir.Call("f", (i,), "void")))

    def text(u):
        loop = kir.For(i, kir.Const(0), kir.Const(8), body, unroll=u)
        return kir.emit(kir.Kernel("lp_loop", (), kir.block(loop), 32))

    assert "#pragma unroll\n" in text(True)
    assert "#pragma unroll 4\n" in text(4)
    assert "#pragma" not in text(False)


def test_a_third_tma_coordinate_prints_the_rank3_load_and_only_then_its_helper():
    k = wgmma.generate_sm90(WS, GemmProblem("k", "k"))
    assert "lp_tma_load_3d" not in k.source
    body = kir.rewrite(
        k.ir.body, lambda n: replace(n, c2=kir.Const(0)) if isinstance(n, kir.TmaLoad) else None
    )
    src = kir.emit(replace(k.ir, body=body))
    assert "lp_tma_load_3d(unsigned dst" in src and re.search(r"lp_tma_load_3d\([^;]*, 0, [^;]*\);", src)
