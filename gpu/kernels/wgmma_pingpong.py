"""The ping-pong warp-specialized wgmma kernel (``Sm90Config(schedule="pingpong")``).

The persistent warp-specialized kernel of :mod:`layoutproof.gpu.kernels.wgmma_ws` with
the consumers reorganized: the two consumer warpgroups own whole 64 x ``bn`` tiles --
warpgroup ``cg`` computes the CTA's walk tiles ``t0 + (cg + 2i) * step`` -- so one
warpgroup's epilogue runs while the other's main loop keeps the tensor cores busy.  The
producer is unchanged: it loads the walk's tiles' k-tiles into the full/empty ring in
order, so the k-tiles of walk tile ``w`` occupy ring positions ``w * KT ..``; each
consumer's ring counter starts ``cg * KT`` positions in and skips the other's ``KT``
positions after each of its tiles, and each stage use has ONE consumer warpgroup (the
empty barriers expect one warpgroup's four warps).

A consumer that skips ahead must not wait on a stage whose previous fill has not happened
yet (``mbarrier.try_wait.parity`` would pass on the phase before, the parity alias): two
order mbarriers alternate the main loops -- warpgroup ``cg`` waits on ``order[1 - cg]``
before its tile's k-tiles (the first wait of warpgroup 0 passes on the fresh barrier) and
arrives on ``order[cg]`` once it has acquired its last k-tile -- so every ring position
before a consumer's first one has been acquired when it starts.

Proven before the source is printed, besides everything the IR obligations cover
(addresses, bounds, descriptors, TMA boxes, the staged epilogue's maps): the scheduler's
bijection (:func:`~layoutproof.gpu.kernels.wgmma_ws.prove_schedule`), the consumers'
cover of the walk (:func:`prove_pingpong_cover`, from the tile loops of the IR), and the
ring protocol read back from the IR (:func:`pingpong_protocol_ir`) and model-checked
(:func:`~layoutproof.gpu.proof.pingpong_model.prove_pingpong`).  A batched problem walks the
batches' tile grids end to end, split and proven as the warp-specialized kernel's
(:func:`~layoutproof.gpu.kernels.wgmma_ws.prove_batch_schedule`,
:func:`~layoutproof.gpu.kernels.wgmma_ws.check_batch_coordinates`): the grouped kernel's
ping-pong base.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..config import GemmConfig, GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..proof import evaluate, kir, obligations
from ..proof.pingpong_model import prove_pingpong
from ..proof.record import ProofLog
from .epilogue import EpilogueConfig, check_compute, epilogue_ir
from .toolkit import GemmKernel, OperandPlan, finish, ir_const, ir_var
from .variant import base_plan_proofs, expect_tx_bytes
from .wgmma import plan_operands
from .wgmma_core import GENERATOR_VERSION, Sm90Config, acc_ir, acc_type, kernel90, scale_ir, wgmma_batch_ir
from .wgmma_ws import (
    WsFrame,
    barrier_init_ir,
    check_batch_coordinates,
    declare_ws,
    epilogue_order,
    epilogue_ws_ir,
    plan_epilogue,
    producer_ir,
    prove_batch_schedule,
    release_ir,
    ring_of,
    schedule_devfn,
    schedule_proofs,
    tile_lines_ir,
    wait_parity,
)

__all__ = [
    "PINGPONG_DEFAULT",
    "PingpongEpilogueConfig",
    "generate_pingpong",
    "generate_pingpong_epilogue",
    "pingpong_ir",
    "pingpong_protocol_ir",
    "prove_pingpong_cover",
    "prove_pingpong_protocol",
]

#: a ping-pong configuration: 64 x 256 tiles, five stages
PINGPONG_DEFAULT = Sm90Config(bm=64, bn=256, stages=5, loader="tma", schedule="pingpong")

_REGS = 232  # consumers: 40 x 128 (producer) + 232 x 256 <= 65536 registers
_RINGS = {"full0": "full", "empty0": "empty", "order0": "order"}


def _check(cfg: Sm90Config, prob: GemmProblem) -> None:
    if cfg.schedule != "pingpong":
        raise GemmConfigError(f"generate_pingpong: schedule={cfg.schedule!r}, expected 'pingpong'")


# ============================================================================ IR
@dataclass
class _Mutants:
    """Planted faults for the tests (each must be refused by the proofs): ``parity``
    swaps the consumers' tiles (warpgroup cg starts at walk tile 1 - cg, its ring counter
    unchanged), ``early_release`` releases a stage before the wgmma wait that completes its
    batch, ``no_skip`` leaves out the ring skip after a tile, ``no_order`` leaves out the
    order barriers."""

    parity: bool = False
    early_release: bool = False
    no_skip: bool = False
    no_order: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)


def _skip_ir(st: kir.Var, ph: kir.Var, S: int, n: kir.Expr, name: str) -> kir.For:
    """Advance the ring counter ``(st, ph)`` by ``n`` positions, one at a time."""
    j = ir_var(name)
    return kir.For(j, kir.Const(0), n, kir.block(kir.RingAdvance(st, S, ph)))


def _consumer_pp_ir(F: WsFrame, order0: kir.Var, mut: _Mutants) -> kir.Block:
    """The consumer warpgroups' branch: per own tile, the order wait, the k-tiles (full
    wait, wgmma batch, release of the previous stage), the order arrival, the drain, the
    last release, the staged epilogue, and the ring skip over the other warpgroup's tile."""
    E, cfg, S = F.E, F.cfg, F.S
    st, ph = ir_var("st", values=tuple(range(S))), kir.Var("ph", "unsigned", values=(0, 1))
    cg, dcg = ir_const("cg", E.wg - 1)
    lane0, dl0 = ir_const("lane0", (E.tid & 31).eq(0), "bool")
    op = kir.Var("op", "unsigned")
    t = ir_var("t")
    tl, _m0, n0 = tile_lines_ir(F, t)
    tm = next(s.var for s in tl if isinstance(s, kir.Decl) and s.var.name == "tm")
    # the staged epilogue stores warpgroup cg's rows at m0 + 64 cg: with the tile's origin
    # less 64 cg they land on the tile's own 64 rows
    m0, dm0 = ir_const("m0", tm * cfg.bm - 64 * cg, comment="the tile's origin less the epilogue's 64 cg")
    tl = [s for s in tl if not (isinstance(s, kir.Decl) and s.var.name == "m0")]
    tl.insert(len(tl) - 1, dm0)
    E.add(cg=cg, m0=m0, n0=n0)
    acc, ad = acc_ir(cfg, acc_type(F.prob))
    prev = ir_var("prev", values=tuple(range(-1, S)))
    kt = ir_var("kt")
    batch = wgmma_batch_ir(E, cfg, F.desc, F.a, F.b, st, kir.Const(0), acc)
    release = release_ir(F, prev, lane0)
    if mut.early_release:  # before the wait_group that completes the previous batch
        body_k = [
            kir.MbarWait(kir.MbarRef(F.full0, st), ph, "stage st's bytes have landed"),
            batch[:-1],
            release,
            batch[-1],
        ]
    else:
        body_k = [
            kir.MbarWait(kir.MbarRef(F.full0, st), ph, "stage st's bytes have landed"),
            batch,
            kir.Comment("the previous batch is complete: its stage goes back to the producer"),
            release,
        ]
    mainloop = kir.For(
        kt, kir.Const(0), F.KT, kir.block(*body_k, kir.Assign(prev, st), kir.RingAdvance(st, S, ph))
    )
    other = kir.Const(1) - cg
    order_wait = kir.block(
        kir.MbarWait(kir.MbarRef(order0, other), op, "the other warpgroup acquired its tile's last k-tile"),
        kir.Assign(op, op ^ kir.Const(1, "unsigned")),
    )
    order_arrive = kir.If(lane0, kir.block(kir.MbarArrive(kir.MbarRef(order0, cg))))
    start = F.t0 + (kir.Const(1) - cg if mut.parity else cg) * F.tstep
    tile_loop = kir.For(
        t,
        start,
        F.tiles,
        kir.block(
            tl,
            ad,
            kir.Decl(prev, kir.Const(-1)),
            None if mut.no_order else order_wait,
            mainloop,
            None if mut.no_order else order_arrive,
            kir.WgmmaWait(0),
            release_ir(F, prev, lane0),
            scale_ir(E, cfg, acc),
            epilogue_ws_ir(E, cfg, F.prob, F.ep, acc, F.e_off),
            None if mut.no_skip else kir.Comment("skip the other warpgroup's k-tiles in the ring"),
            None if mut.no_skip else _skip_ir(st, ph, S, F.KT, "j"),
        ),
        step=2 * F.tstep,
        cond=t.lt(F.tiles),
    )
    return kir.block(
        kir.Comment("consumers: warpgroup cg owns the walk's tiles cg, cg + 2, ... (64 rows each)"),
        kir.SetMaxNReg(True, _REGS),
        dcg,
        dl0,
        kir.Decl(st, kir.Const(0)),
        kir.Decl(ph, kir.Const(0, "unsigned")),
        kir.Decl(op, kir.Cast("unsigned", cg ^ 1)),
        _skip_ir(st, ph, S, cg * F.KT, "j0"),
        tile_loop,
    )


def pingpong_ir(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    ep: Dict[str, Any],
    desc: Dict[str, Tuple[int, int, int]],
    tx: int,
    name: str,
    mutants: Optional[_Mutants] = None,
) -> kir.Kernel:
    """The ping-pong kernel's IR: :func:`~layoutproof.gpu.kernels.wgmma_ws.declare_ws`'s
    prologue, the ring barriers and the two order barriers initialized, warpgroup 0 the
    producer (:func:`~layoutproof.gpu.kernels.wgmma_ws.producer_ir`, unchanged), warpgroups
    1 and 2 the consumers.  ``mutants`` plants faults (tests only)."""
    mut = mutants or _Mutants()
    F, body = declare_ws(cfg, prob, a, b, ep, desc, tx)
    F = replace(F, regs=_REGS)
    order = kir.Var("lp_order", "unsigned long long*")
    body.append(kir.Decl(order, dims=(2,), prefix="__shared__ __align__(8)", tname="unsigned long long"))
    order0, d = ir_const(
        "order0", kir.Cast("unsigned", kir.Call("__cvta_generic_to_shared", (order,), "unsigned")), "unsigned"
    )
    body.append(d)
    init, sync = barrier_init_ir(F)
    s = ir_var("s")
    order_init = kir.If(
        F.E.tid.eq(0),
        kir.block(
            kir.For(s, kir.Const(0), kir.Const(2), kir.block(kir.MbarInit(kir.MbarRef(order0, s), 4))),
            kir.Fence("mbarrier_init"),
        ),
    )
    body += [init, order_init, sync]
    producer = producer_ir(F)
    body.append(kir.If(F.E.wg.eq(0), producer, _consumer_pp_ir(F, order0, mut)))
    descr = (
        "",
        f"wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]",
        f"A {prob.a_major}-major, B {prob.b_major}-major (TMA tensor maps);",
        f"{prob.dtype} in, {acc_type(prob)} accumulate, {prob.out} out",
        "persistent, warp-specialized ping-pong: 1 producer warpgroup (TMA, 40 registers) + 2 consumer",
        f"warpgroups ({_REGS} registers) owning alternate {cfg.bm}x{cfg.bn} tiles; {F.S}-stage full/empty",
        "mbarrier ring, order barriers alternating the main loops, staged epilogue",
    )
    return kernel90(
        cfg,
        prob,
        a,
        b,
        desc,
        name,
        F.E,
        body,
        descr,
        tuple(ep["fns"].values()),
        ("tma", "named_sync", "wgmma"),
        tma=True,
        devfns=(schedule_devfn(cfg.group_m),),
    )


# ============================================================================ protocol
def _fail(msg: str, cond: str, witness: Any = None) -> ProofFailedError:
    return ProofFailedError(msg, condition=cond, witness=witness)


def _eval(e: kir.Expr, env: Dict[str, Any]) -> np.ndarray:
    return np.asarray(evaluate.ev(e, env))


def _multiplier(e: kir.Expr, cg: int, what: str) -> int:
    """``e`` (over ``cg`` and ``KT``) as ``m * KT`` for consumer ``cg``: ``m``."""
    kts = np.arange(1, 10)
    got = _eval(e, {"cg": cg, "KT": kts}) * np.ones_like(kts)
    m = int(got[0])
    if not np.array_equal(got, m * kts):
        raise _fail(f"{what} of consumer {cg} is not a whole number of tiles' k-tiles", "ring skip", what)
    return m


def _walk(loop: kir.For, cg: int, what: str) -> Tuple[int, int]:
    """The tile loop of consumer ``cg`` as (first walk index, walk stride): start
    ``blockIdx + o * gridDim``, step ``d * gridDim``, checked for many (block, grid)."""
    P = np.array([1, 2, 3, 7, 66, 132, 144])[:, None]
    b = np.arange(144)[None, :]
    env = {"blockIdx.x": b, "gridDim.x": P, "cg": cg}
    start = _eval(loop.start, env) * np.ones_like(b * P)
    step = _eval(loop.step, env) * np.ones_like(P)
    o, dd = int(start[0, 0]), int(step[0, 0])
    if not (np.array_equal(start, b + o * P) and np.array_equal(step, dd * P)) or dd < 1:
        raise _fail(f"{what}: the tile loop does not walk blockIdx + (o + d i) gridDim", "tile walk", what)
    return o, dd


def pingpong_protocol_ir(
    k: kir.Kernel, cfg: Sm90Config, tx: int, log: ProofLog
) -> Tuple[Dict[str, Any], int]:
    """The ping-pong kernel's barrier protocol read from its IR: the init counts (full 1
    + ``tx`` bytes; empty and order barriers the threads of ONE consumer warpgroup that pass
    the arrive guards), the wait parities on the ring counters, the consumers' tile loops
    (first walk tile and stride per warpgroup), their ring counters' start and skip (the
    advance loops, as multiples of the k-tile count), the order barriers' wait index,
    first parity and arrive index per warpgroup, and the order of each k-tile's statements
    (full wait, wgmmas, the wait_group that completes the previous batch, then its release;
    after the k-loop the order arrival, wait_group 0, the last release).  Returns the
    model's parameters and the number of mbarrier operations read."""
    ops = obligations.mbarrier_ops(k)
    an = obligations.analysis(k)
    inits: Dict[str, List[int]] = {"full": [], "empty": [], "order": []}
    waits: Dict[str, List[Any]] = {"full": [], "empty": [], "order": []}
    arrives: Dict[str, List[Any]] = {"empty": [], "order": []}
    txs: List[int] = []
    rings = [n for n in kir.walk(k.body) if isinstance(n, kir.RingAdvance)]
    for s, guards, loops in ops:
        if isinstance(s, kir.MbarInit):
            name, idx = ring_of(k, s.bar, _RINGS)
            n = cfg.stages if name != "order" else 2
            if not (
                loops
                and idx is loops[-1].var
                and isinstance(loops[-1].stop, kir.Const)
                and loops[-1].stop.value == n
            ):
                raise _fail(
                    f"{name} barriers are not initialized for each of their {n} slots", "barrier init", name
                )
            inits[name].append(s.count)
        elif isinstance(s, kir.MbarWait):
            name, idx = ring_of(k, s.bar, _RINGS)
            waits[name].append((s, idx, loops))
        elif isinstance(s, kir.MbarExpectTx):
            name, _ = ring_of(k, s.bar, _RINGS)
            if name != "full":
                raise _fail("expect_tx on a barrier other than full", "protocol of the IR", name)
            txs.append(s.nbytes)
        elif isinstance(s, kir.MbarArrive):
            name, idx = ring_of(k, s.bar, _RINGS)
            if name == "full" or s.cta is not None:
                raise _fail(f"an arrive on {name} (remote: {s.cta is not None})", "protocol of the IR", name)
            arrives[name].append((s, guards, loops, idx))
        else:
            raise _fail(f"unexpected mbarrier operation {type(s).__name__}", "protocol of the IR")
    if any(len(v) != 1 for v in inits.values()) or txs != [tx]:
        raise _fail(
            f"inits {inits}, expect_tx {txs} (one init per barrier kind, {tx} bytes)", "protocol of the IR"
        )
    if len(waits["full"]) != 1 or len(waits["empty"]) != 1 or len(arrives["empty"]) != 2:
        raise _fail("expected one full wait, one empty wait and two releases", "protocol of the IR")

    def ring_wait(name: str) -> Tuple[int, kir.RingAdvance, Tuple[kir.For, ...]]:
        s, idx, loops = waits[name][0]
        rg = [r for r in rings if r.stage is idx and loops and any(x is r for x in kir.walk(loops[-1].body))]
        if len(rg) != 1 or rg[0].n != cfg.stages or rg[0].phase is None:
            raise _fail(
                f"the wait on {name} is not on a ring counter advanced once in its k-loop",
                "protocol of the IR",
                name,
            )
        return wait_parity(s.parity, rg[0].phase), rg[0], loops

    pp, _prg, ploops = ring_wait("empty")
    cp, crg, cloops = ring_wait("full")
    kloop = cloops[-1]
    if len(cloops) < 2:
        raise _fail("the consumers' k-loop is not inside a tile loop", "tile walk")
    tloop = cloops[-2]
    # the consumer ring counter starts at 0 and moves only by its k-loop advance and by
    # whole-loop skips: one before the tile loop, one after the k-loop inside it
    for v in (crg.stage, crg.phase):
        init = an.defs.get(id(v))
        if v is None or not (isinstance(init, kir.Const) and init.value == 0):
            nm = "phase" if v is None else v.name
            raise _fail(f"the consumers' ring counter {nm} does not start at 0", "ring skip", nm)
    pre: List[kir.For] = []
    post: List[kir.For] = []
    for lp in kir.walk(k.body):
        if not isinstance(lp, kir.For) or lp is kloop:
            continue
        adv = [x for x in kir.walk(lp.body) if isinstance(x, kir.RingAdvance) and x.stage is crg.stage]
        if not adv or any(x is kloop for x in kir.walk(lp.body)):
            continue
        if (
            len(lp.body.body) != 1
            or lp.body.body[0] is not adv[0]
            or not (isinstance(lp.start, kir.Const) and lp.start.value == 0)
            or adv[0].phase is not crg.phase
        ):
            raise _fail(
                "a ring skip that is not a loop of single advances of the consumers' counter", "ring skip"
            )
        (post if any(x is lp for x in kir.walk(tloop.body)) else pre).append(lp)
    others = [
        r
        for r in rings
        if r.stage is crg.stage and r is not crg and not any(r is lp.body.body[0] for lp in pre + post)
    ]
    if len(pre) != 1 or len(post) > 1 or others:
        raise _fail(
            f"ring skips: {len(pre)} before the tiles, {len(post)} after a tile (expected 1 and 1)",
            "ring skip",
        )
    tbody = list(tloop.body.body)
    korder = tbody.index(kloop)
    if post and not any(x is post[0] for s2 in tbody[korder + 1 :] for x in kir.walk(s2)):
        raise _fail("the ring skip is not after the tile's k-loop", "ring skip")
    owners = tuple(_walk(tloop, c, "consumer") for c in (0, 1))
    ring = tuple(
        (_multiplier(pre[0].stop, c, "ring start"), _multiplier(post[0].stop, c, "ring skip") if post else 0)
        for c in (0, 1)
    )
    prod = _walk(ploops[-2], 0, "producer") if len(ploops) >= 2 else (-1, -1)
    if prod != (0, 1):
        raise _fail(f"the producer walks {prod}, not every tile of the CTA in order", "tile walk", prod)
    # program order inside the k-loop: full wait < wgmmas < wait_group n <= 1 < release
    order_k = list(kir.walk(kloop.body))
    rel_in = [a for a in arrives["empty"] if a[2] and a[2][-1] is kloop]
    rel_after = [a for a in arrives["empty"] if a[2] and a[2][-1] is tloop]
    if len(rel_in) != 1 or len(rel_after) != 1:
        raise _fail("release sites: expected one in the k-loop and one after it", "release sites")
    for a in arrives["empty"]:
        if not (isinstance(a[3], kir.Var) and a[3].name == "prev"):
            raise _fail("a release is not of the previous stage", "release sites")

    def pos(seq: List[Any], node: Any) -> int:
        return next(i for i, x in enumerate(seq) if x is node)

    ia = pos(order_k, rel_in[0][0])
    iw = pos(order_k, waits["full"][0][0])
    mm = [i for i, x in enumerate(order_k) if isinstance(x, kir.Wgmma)]
    gw = [i for i, x in enumerate(order_k) if isinstance(x, kir.WgmmaWait) and x.n <= 1 and mm and i > mm[-1]]
    if not (mm and iw < mm[0] and gw and gw[0] < ia):
        raise _fail(
            "a k-tile releases the previous stage before the wgmma.wait_group that completes its batch "
            "(or reads the stage before its full wait)",
            "release after the previous batch completed",
        )
    seq_t = list(kir.walk(tloop.body))
    ia2 = pos(seq_t, rel_after[0][0])
    w0 = [
        i for i, x in enumerate(seq_t) if isinstance(x, kir.WgmmaWait) and x.n == 0 and i > pos(seq_t, kloop)
    ]
    if not (w0 and w0[0] < ia2):
        raise _fail(
            "the tile's last stage is released before wgmma.wait_group 0",
            "release after the previous batch completed",
        )
    # the order barriers: wait before the k-loop, arrive after it, per warpgroup
    order: Optional[Tuple[Tuple[int, int, int], ...]] = None
    if waits["order"] or arrives["order"]:
        if len(waits["order"]) != 1 or len(arrives["order"]) != 1:
            raise _fail("expected one order wait and one order arrive", "order barriers")
        ow, oidx, oloops = waits["order"][0]
        oa = arrives["order"][0]
        if not (oloops and oloops[-1] is tloop and oa[2] and oa[2][-1] is tloop):
            raise _fail("the order barriers are not used once per tile", "order barriers")
        if not (pos(seq_t, ow) < pos(seq_t, kloop) < pos(seq_t, oa[0])):
            raise _fail("the order wait is not before the k-loop and its arrival after it", "order barriers")
        opv = ow.parity
        init = an.defs.get(id(opv)) if isinstance(opv, kir.Var) else None
        flips = an.assigned.get(id(opv), []) if isinstance(opv, kir.Var) else []
        flip_ok = (
            len(flips) == 1
            and isinstance(flips[0], kir.Bin)
            and flips[0].op == "^"
            and flips[0].a is opv
            and isinstance(flips[0].b, kir.Const)
            and flips[0].b.value == 1
        )
        flip_at = [x for x in kir.walk(tloop.body) if isinstance(x, kir.Assign) and x.lhs is opv]
        if any(x is y for x in flip_at for y in kir.walk(kloop.body)):
            flip_at = []
        if init is None or not flip_ok or len(flip_at) != 1:
            raise _fail("the order wait's parity is not a bit flipped once per tile", "order barriers")
        order = tuple(
            (int(_eval(oidx, {"cg": c})), int(_eval(init, {"cg": c})) & 1, int(_eval(oa[3], {"cg": c})))
            for c in (0, 1)
        )

    # arrival counts: full 1; empty and order the arriving threads of one warpgroup
    def per_wg(guards: Any) -> Tuple[int, ...]:
        ok = _threads_mask(k, guards)
        return tuple(int(ok[128 * w : 128 * (w + 1)].sum()) for w in range(k.threads // 128))

    counts = {per_wg(a[1]) for a in arrives["empty"]}
    if len(counts) != 1:
        raise _fail("the two release sites arrive from different threads", "arrival counts", tuple(counts))
    made = counts.pop()
    if made[0] != 0 or len(set(made[1:])) != 1:
        raise _fail(
            f"releases per warpgroup {made}: the producer must not, the consumers equally",
            "arrival counts",
            made,
        )
    if inits["full"][0] != 1 or inits["empty"][0] != made[1]:
        raise _fail(
            f"full expects {inits['full'][0]} (1), empty {inits['empty'][0]} arrivals; "
            f"one consumer warpgroup makes {made[1]}",
            "arrival counts",
            (inits["empty"][0], made[1]),
        )
    if order is not None:
        om = per_wg(arrives["order"][0][1])
        if om[0] != 0 or len(set(om[1:])) != 1 or inits["order"][0] != om[1]:
            raise _fail(
                f"order barriers expect {inits['order'][0]} arrivals, a warpgroup makes {om}",
                "arrival counts",
                om,
            )
    proto = {"owners": owners, "ring": ring, "order": order, "producer_parity": pp, "consumer_parity": cp}
    log.add(
        "equal",
        f"ping-pong protocol read from the IR: producer waits empty with ph ^ {pp}, consumers wait "
        f"full with ph ^ {cp} (ring counters advanced once per k-tile); consumer warpgroups walk "
        f"tiles {owners} (first, stride), their ring counters start {[r[0] for r in ring]} tiles in "
        f"and skip {[r[1] for r in ring]} after each tile; order barriers {order} (wait, first "
        f"parity, arrive); full expects 1 arrival (+ {tx} TMA bytes), empty {inits['empty'][0]} = "
        "one warpgroup's releasing threads; each release after the wait_group that completes the "
        "batch reading the stage",
        "exhaustive",
        len(ops),
    )
    return proto, len(ops)


def _threads_mask(k: kir.Kernel, guards: Any) -> np.ndarray:
    """Which threads of the CTA pass the thread-only conjuncts of ``guards``."""
    an = obligations.analysis(k)
    tid = next(
        x for x in kir.walk(k.body) if isinstance(x, kir.Var) and x.builtin and x.name == "threadIdx.x"
    )
    t = np.arange(k.threads)
    ok = np.ones(k.threads, dtype=bool)
    for g, sense in guards:
        for p in _conj(g) if sense else [g]:
            fv = obligations.free_vars(p, an)
            if fv and all(v is tid for v in fv):
                ctx = evaluate.Ctx(
                    {id(tid): t},
                    {i: e for i, e in an.defs.items() if an.inlinable(an.vars[i])},
                    an.tables,
                    k.sizes,
                )
                val = np.broadcast_to(evaluate.eval_expr(p, ctx)[0] != 0, t.shape)
                ok &= val if sense else ~val
    return ok


def _conj(g: kir.Expr) -> List[kir.Expr]:
    if isinstance(g, kir.Bin) and g.op == "&&":
        return _conj(g.a) + _conj(g.b)
    return [g]


def prove_pingpong_protocol(k: kir.Kernel, cfg: Sm90Config, tx: int, log: ProofLog) -> int:
    """The protocol read from the IR (:func:`pingpong_protocol_ir`), the staged epilogue's
    order, and the ring model-checked with the parameters read
    (:func:`~layoutproof.gpu.proof.pingpong_model.prove_pingpong`).  Returns the mbarrier
    operations covered."""
    proto, n = pingpong_protocol_ir(k, cfg, tx, log)
    epilogue_order(k, log)
    prove_pingpong(cfg.stages, log, **proto)
    return n


def prove_pingpong_cover(k: kir.Kernel, log: ProofLog) -> None:
    """The consumers' tile loops of the IR (start, step and condition evaluated on the
    nodes): for every CTA count ``P`` and tile count in scope, the tiles warpgroup ``c`` of
    CTA ``b`` visits are exactly the walk's tiles ``b + i P`` with ``i % 2 == c``, and
    together the (CTA, warpgroup) pairs visit every tile of ``[0, tiles)`` once."""
    an = obligations.analysis(k)
    fulls = [
        (s, loops)
        for s, _g, loops in obligations.mbarrier_ops(k)
        if isinstance(s, kir.MbarWait) and ring_of(k, s.bar, _RINGS)[0] == "full"
    ]
    if len(fulls) != 1 or len(fulls[0][1]) < 2:
        raise _fail("no consumer tile loop around the full wait", "tile walk")
    tloop = fulls[0][1][-2]
    del an
    cases = 0
    for P in (1, 2, 3, 7, 66, 114, 132, 144):
        for tiles in sorted({1, 2, 3, 5, P - 1, P, P + 1, 2 * P, 2 * P + 1, 3 * P + 2, 4 * P + 3, 2048}):
            if tiles < 1:
                continue
            seen: List[np.ndarray] = []
            for c in (0, 1):
                for b in range(P):
                    env = {"blockIdx.x": b, "gridDim.x": P, "cg": c, "tiles": tiles}
                    t = int(_eval(tloop.start, env))
                    step = int(_eval(tloop.step, env))
                    got = []
                    while bool(
                        _eval(
                            tloop.cond if tloop.cond is not None else tloop.var.lt(tloop.stop),
                            {**env, "t": t},
                        )
                    ):
                        got.append(t)
                        t += step
                        if len(got) > tiles:
                            raise _fail("a consumer's tile loop does not end", "schedule cover", (P, tiles))
                    walk = np.arange(b, tiles, P)
                    own = walk[c::2]
                    if not np.array_equal(np.array(got, dtype=np.int64), own):
                        raise _fail(
                            f"consumer warpgroup {c} of CTA {b} (of {P}) over {tiles} tiles takes "
                            f"{got[:6]}..., "
                            f"not the walk's tiles of parity {c} {own[:6].tolist()}...",
                            "schedule cover",
                            (P, tiles, b, c),
                        )
                    seen.append(own)
            allv = np.concatenate(seen) if seen else np.zeros(0, dtype=np.int64)
            if allv.size != tiles or np.unique(allv).size != tiles:
                raise _fail(
                    f"{P} CTAs x 2 consumers do not cover {tiles} tiles once", "schedule cover", (P, tiles)
                )
            cases += tiles
    log.add(
        "bijective",
        "ping-pong cover (tile loops of the IR evaluated): consumer warpgroup c of CTA b visits "
        "exactly the walk's tiles b + i P with i % 2 == c, and the (CTA, warpgroup) pairs visit "
        "every tile once, for 8 CTA counts x up to 12 tile counts",
        "exhaustive",
        cases,
    )


# ============================================================================ generation
_MEMO: Dict[Tuple[Any, GemmProblem], GemmKernel] = {}


def generate_pingpong(
    config: Optional[Sm90Config] = None,
    problem: Optional[GemmProblem] = None,
    *,
    memo: bool = True,
    _mutants: Optional[_Mutants] = None,
) -> GemmKernel:
    """Build, prove and emit the ping-pong kernel (default :data:`PINGPONG_DEFAULT`).

    >>> k = generate_pingpong()
    >>> k.threads, "lp_order" in k.source
    (384, True)
    """
    cfg = (config or PINGPONG_DEFAULT).validate()
    prob = (problem or GemmProblem("k", "k")).validate()
    _check(cfg, prob)
    if memo and _mutants is None and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    log = ProofLog()
    a, b, desc, _ = plan_operands(cfg, prob, log)
    log.extend(ProofLog(list(schedule_proofs(cfg.group_m, 1))))
    if prob.batch:  # the batches' tile grids end to end, split as the ws kernel's
        prove_batch_schedule(cfg.group_m, log)
    ep = plan_epilogue(prob, log)
    tx = 2 * (a.stage_elems + b.stage_elems)
    h = hashlib.sha256(f"{GENERATOR_VERSION}pingpong{cfg}{prob}".encode()).hexdigest()[:10]
    name = f"lp_gemm_sm90pp_{prob.key()}_{h}"
    ir = pingpong_ir(cfg, prob, a, b, ep, desc, tx, name, _mutants)
    prove_pingpong_cover(ir, log)
    check_batch_coordinates(ir, prob, log)
    title = f"proven before emission ({cfg.key()}, {prob.key()})"
    src = finish(ir, log, title, lambda kk: prove_pingpong_protocol(kk, cfg, tx, log))
    gcfg = GemmConfig(
        bm=cfg.bm, bn=cfg.bn, bk=cfg.bk, stages=cfg.stages, group_m=cfg.group_m, warps_m=4, warps_n=1
    )
    k = GemmKernel(
        gcfg, prob, src, name, cfg.threads, cfg.smem_bytes, log, {"a": (3, 3, 3), "b": (3, 3, 3)}, ir
    )
    k.config = cfg
    if memo and _mutants is None:
        _MEMO[(cfg, prob)] = k
    return k


# ============================================================================ fused epilogue
@dataclass(frozen=True)
class PingpongEpilogueConfig(EpilogueConfig):
    """:class:`~layoutproof.gpu.kernels.epilogue.EpilogueConfig` on a ping-pong base
    (``Sm90Config(schedule="pingpong")``): the same fused bias + activation, the same
    rewrite of the staged epilogue's buffer write."""

    def validate(self) -> "PingpongEpilogueConfig":
        if not isinstance(self.base, Sm90Config):
            raise GemmConfigError(
                f"PingpongEpilogueConfig: base must be an Sm90Config, got {type(self.base).__name__}"
            )
        self.base.validate()
        if self.base.schedule != "pingpong":
            raise GemmConfigError("PingpongEpilogueConfig: the base must be a ping-pong configuration")
        # every other field as the ws epilogue checks it
        EpilogueConfig(
            replace(self.base, schedule="ws"),
            self.activation,
            self.alpha_beta,
            self.bias_axis,
            self.bias_dtype,
            self.alpha_only,
        ).validate()
        return self


_EP_MEMO: Dict[Tuple[Any, GemmProblem], GemmKernel] = {}


def generate_pingpong_epilogue(
    config: PingpongEpilogueConfig, problem: Optional[GemmProblem] = None, *, memo: bool = True
) -> GemmKernel:
    """The ping-pong kernel with the fused bias + activation: the base kernel's IR
    rewritten by :func:`~layoutproof.gpu.kernels.epilogue.epilogue_ir`, every IR obligation
    and the ping-pong protocol proven again on the rewritten tree."""
    cfg = config.validate()
    prob = (problem or GemmProblem("k", "k")).validate()
    if memo and (cfg, prob) in _EP_MEMO:
        return _EP_MEMO[(cfg, prob)]
    check_compute(cfg, prob)
    base = generate_pingpong(cfg.base, prob, memo=memo)
    # the base's plan proofs: its log less the IR obligations and protocol finish appended
    tx = expect_tx_bytes(base.ir)
    log = ProofLog(base_plan_proofs(base, None, lambda kk, lg: prove_pingpong_protocol(kk, cfg.base, tx, lg)))
    h = hashlib.sha256(f"pingpong-epilogue{cfg}{cfg.key()}{prob}".encode()).hexdigest()[:10]
    name = f"lp_gemm_sm90pp_ep_{prob.key()}_{h}"
    ir, _fn = epilogue_ir(base.ir, cfg, prob, log, name)
    src = finish(
        ir,
        log,
        f"proven before emission ({cfg.key()}, {prob.key()})",
        lambda kk: prove_pingpong_protocol(kk, cfg.base, tx, log),
    )
    k = GemmKernel(base.config, prob, src, name, base.threads, base.smem_bytes, log, dict(base.swizzles), ir)
    if memo:
        _EP_MEMO[(cfg, prob)] = k
    return k
