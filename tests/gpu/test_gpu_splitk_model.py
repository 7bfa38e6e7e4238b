"""The serial split-K reduction's protocol (gpu/splitk_model.py): the explicit-state model
over every interleaving of S units and two launches, its planted bugs each refused with the
property they break, and the program read from the kernel's IR (the statements in the order
the model assumes, found by name; IR mutations refused by name)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import ProofFailedError
from layoutproof.gpu.kernels.splitk import SplitKConfig, generate_splitk, serial_ir, splitk_ir
from layoutproof.gpu.kernels.wgmma import Sm90Config, generate_sm90
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog
from layoutproof.gpu.proof.splitk_model import (
    DEFAULT_PROGRAM,
    FLAG_WRITE,
    PLANE_STORE,
    check_serial,
    plane_read_loops_ir,
    prove_serial_protocol,
    serial_program_ir,
)

ST = ("store", False, None)
BAR = ("bar", False, None)
FENCE = ("fence", False, None)
RESET = ("reset", True, None)
READ = ("read", True, None)


def atomic(sem):
    return ("atomic", False, sem)


@pytest.mark.parametrize("S", [1, 2, 3, 4, 5])
def test_the_kernels_protocol_holds_for_every_interleaving(S):
    assert check_serial(S) > 0
    # a fence before the acq_rel atomic (CUDA's __threadfence() habit) changes nothing
    assert check_serial(S, program=(ST, BAR, FENCE, atomic("acq_rel"), RESET, BAR, READ)) > 0
    # the fence-based variant: relaxed atomic between a release and an acquire fence
    assert check_serial(S, program=(ST, BAR, FENCE, atomic("relaxed"), FENCE, RESET, BAR, READ)) > 0


BUGS = {
    # atomicAdd (relaxed) without __threadfence(): nothing released, nothing acquired
    "no fence, relaxed atomic": (
        (ST, BAR, atomic("relaxed"), RESET, BAR, READ),
        None,
        "reducer reads each plane after its writer's release",
    ),
    # the writer's side released, the reducer never acquires
    "release only": (
        (ST, BAR, FENCE, atomic("relaxed"), RESET, BAR, READ),
        None,
        "reducer reads each plane after its writer's release",
    ),
    "release atomic, no acquire": (
        (ST, BAR, atomic("release"), RESET, BAR, READ),
        None,
        "reducer reads each plane after its writer's release",
    ),
    "reset missing": ((ST, BAR, atomic("acq_rel"), BAR, READ), None, "counter reset at launch end"),
    "threshold S": (DEFAULT_PROGRAM, "S", "one reducer per tile per launch"),
    # an early reducer: a second one later, or reading planes not yet stored (whichever the
    # search meets first)
    "threshold S - 2": (
        DEFAULT_PROGRAM,
        "S-2",
        ("one reducer per tile per launch", "reducer reads each plane after its writer's release"),
    ),
    "reducer reads before the atomic": (
        (ST, BAR, ("read", False, None), atomic("acq_rel"), RESET),
        None,
        "reducer reads each plane after its writer's release",
    ),
    # thread 0 releases before the other threads' stores are ordered before it
    "no barrier before the atomic": (
        (ST, atomic("acq_rel"), RESET, BAR, READ),
        None,
        "reducer reads each plane after its writer's release",
    ),
    # the other threads read without the barrier that orders them after thread 0's acquire
    "no barrier after the atomic": (
        (ST, BAR, atomic("acq_rel"), RESET, READ),
        None,
        "reducer reads each plane after its writer's release",
    ),
    "every unit resets": (
        (ST, BAR, atomic("acq_rel"), ("reset", False, None), BAR, READ),
        None,
        "one reducer per tile per launch",
    ),
}


@pytest.mark.parametrize("name", sorted(BUGS))
@pytest.mark.parametrize("S", [2, 3, 4])
def test_planted_bugs_fail_with_the_property_they_break(name, S):
    prog, thr, cond = BUGS[name]
    t = {None: None, "S": S, "S-2": S - 2}[thr]
    with pytest.raises(ProofFailedError) as e:
        check_serial(S, program=prog, threshold=t)
    assert e.value.condition in ((cond,) if isinstance(cond, str) else cond), (name, str(e.value))


def test_a_reset_missing_also_leaves_the_second_launch_without_a_reducer():
    with pytest.raises(ProofFailedError) as e:
        check_serial(3, program=(ST, BAR, atomic("acq_rel"), BAR, READ), start=3, launches=1)
    assert e.value.condition == "one reducer per tile per launch"


def test_bad_programs_are_refused():
    with pytest.raises(ProofFailedError, match="one atomic per unit"):
        check_serial(2, program=(ST, BAR, READ))
    with pytest.raises(ProofFailedError, match="bad program step") as e:
        check_serial(2, program=(("jump", False, None), atomic("acq_rel")))
    assert e.value.condition == "model parameters"
    with pytest.raises(ProofFailedError) as e:
        check_serial(0)
    assert e.value.condition == "model parameters"


# ============================================================================ from the IR
WS = dict(loader="tma", schedule="ws")
CFG = SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **WS), 4, "serial")
PROB = GemmProblem("k", "k")


def _split_ir(**kw):
    base = generate_sm90(CFG.base, replace(PROB, out_dtype="f32"))
    k, _ = splitk_ir(base.ir, CFG.splits, "lp_test", fixup_kernel=False)
    return serial_ir(k, CFG, PROB.out, **kw)


def test_the_kernel_carries_the_model_checked_protocol():
    kk = generate_splitk(CFG, PROB)
    assert kk.reduce is None
    st = [p.statement for p in kk.gemm.proofs if p.kind == "protocol" and "serial split-K" in p.statement]
    assert len(st) == 1 and "atomic.acq_rel" in st[0]
    src = kk.gemm.source
    assert "atom.add.acq_rel.gpu.global.u32" in src
    # no fix-up follows it: it waits for the previous grid first, and triggers nothing
    assert "lp_griddep_wait();" in src and "lp_griddep_launch();" not in src
    prog, thr = serial_program_ir(kk.gemm.ir)
    assert thr == CFG.splits - 1
    kinds = [k for k, _, _ in prog]
    assert kinds.index("store") < kinds.index("bar") < kinds.index("atomic") < kinds.index("read")
    assert ("reset", True, None) in prog and ("read", True, None) in prog


@pytest.mark.parametrize(
    "kw, cond",
    [
        (dict(sem="relaxed"), "reducer reads each plane after its writer's release"),
        (dict(sem="relaxed", fence=True), "reducer reads each plane after its writer's release"),
        (dict(sem="release"), "reducer reads each plane after its writer's release"),
    ],
)
def test_a_kernel_with_a_weaker_atomic_is_refused_by_the_model(kw, cond):
    k = _split_ir(**kw)
    with pytest.raises(ProofFailedError) as e:
        prove_serial_protocol(k, CFG.splits, ProofLog())
    assert e.value.condition == cond
    prove_serial_protocol(_split_ir(), CFG.splits, ProofLog())  # the kernel's own passes


def _drop(k, pred):
    def fn(node):
        if isinstance(node, kir.Block) and any(pred(s) for s in node.body):
            return kir.Block(tuple(s for s in node.body if not pred(s)), node.bare)
        return None

    return replace(k, body=kir.rewrite(k.body, fn))


def _is_reset(s):
    return isinstance(s, kir.If) and any(
        isinstance(n, kir.Mem) and n.claim.what.startswith("split-K tile counter reset") for n in kir.walk(s)
    )


def test_a_kernel_without_the_reset_is_refused_by_the_model():
    with pytest.raises(ProofFailedError) as e:
        prove_serial_protocol(_drop(_split_ir(), _is_reset), CFG.splits, ProofLog())
    assert e.value.condition == "counter reset at launch end"


def test_a_kernel_without_the_barrier_after_the_atomic_is_refused_by_the_model():
    k = _split_ir()
    loop = next(n for n in kir.walk(k.body) if isinstance(n, kir.If) and n.comment.startswith("always"))
    bars = [s for s in loop.then.body if isinstance(s, kir.NamedBarrier)]
    second = bars[1]
    with pytest.raises(ProofFailedError) as e:
        prove_serial_protocol(_drop(k, lambda s: s is second), CFG.splits, ProofLog())
    assert e.value.condition == "reducer reads each plane after its writer's release"


def test_a_wrong_threshold_in_the_kernel_is_refused():
    def fn(node):
        if isinstance(node, kir.Const) and node.ctype == "unsigned" and node.value == CFG.splits - 1:
            return kir.Const(CFG.splits, "unsigned")
        return None

    k = _split_ir()
    k = replace(k, body=kir.rewrite(k.body, fn))
    with pytest.raises(ProofFailedError) as e:
        prove_serial_protocol(k, CFG.splits, ProofLog())
    assert e.value.condition == "one reducer per tile per launch"


def test_missing_pieces_fail_by_name():
    k = _split_ir()

    def unname(node):  # the plane stores lose their split-K name: no store step is found
        if isinstance(node, kir.Mem) and node.claim.what.startswith(PLANE_STORE):
            return replace(node, claim=replace(node.claim, what=node.claim.what[len(PLANE_STORE) :]))
        return None

    with pytest.raises(ProofFailedError, match="no store step") as e:
        serial_program_ir(replace(k, body=kir.rewrite(k.body, unname)))
    assert e.value.condition == "serial reduction in the IR"

    def two_thresholds(node):  # the flag says S-2, the reset S-1
        if (
            isinstance(node, kir.Assign)
            and isinstance(node.lhs, kir.Mem)
            and node.lhs.claim.what == FLAG_WRITE
        ):
            c = node.rhs
            return replace(node, rhs=replace(c, c=replace(c.c, b=kir.Const(CFG.splits - 2, "unsigned"))))
        return None

    with pytest.raises(ProofFailedError, match="compare the atomic's result") as e:
        serial_program_ir(replace(k, body=kir.rewrite(k.body, two_thresholds)))
    assert e.value.condition == "serial reduction in the IR"


def test_the_plane_loop_must_cover_every_plane_in_order():
    k = _split_ir()
    assert set(plane_read_loops_ir(k)) == {(0, CFG.splits, 1)}  # the vector and the edge path

    def short(node):  # the reducer's plane loops stop one plane early
        if isinstance(node, kir.For) and isinstance(node.stop, kir.Const) and node.stop.value == CFG.splits:
            if node.var.name == "s":
                return replace(node, stop=kir.Const(CFG.splits - 1))
        return None

    bad = replace(k, body=kir.rewrite(k.body, short))
    with pytest.raises(ProofFailedError) as e:
        prove_serial_protocol(bad, CFG.splits, ProofLog())
    assert e.value.condition == "reducer reads all planes"
