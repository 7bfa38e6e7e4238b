"""The warp-specialized persistent wgmma kernel (``Sm90Config(schedule="ws")``, the default).

A producer warpgroup issues the TMA boxes of A and B through a full/empty mbarrier ring,
the consumer warpgroups run wgmma on the stages, the persistent CTAs walk the output tiles
in a proven grouped order, the epilogue goes through a swizzled shared-memory buffer, and
with ``cluster=2`` two CTAs share the B tile by TMA multicast.  What this module proves
before the source is printed:

* the tile scheduler (:func:`schedule_devfn`, emitted from the same IR statements) is a
  bijection onto the tile grid (:func:`prove_schedule`), and a batched launch's split
  into (batch, tile) is one too (:func:`prove_batch_schedule`,
  :func:`check_batch_coordinates`);
* the staged epilogue's swizzle is conflict-free and its data flow puts every accumulator
  at its C coordinate (:func:`plan_epilogue`);
* in a cluster, the multicast boxes partition B and each CTA's transaction count is the
  bytes that land in it (:func:`_prove_cluster_tx`);
* the mbarrier protocol, read back from the IR's barrier nodes (:func:`protocol_ir`), is
  model-checked over every interleaving, and the epilogue's barriers order its buffer
  (:func:`epilogue_order`) -- :func:`prove_ws_protocol`.

:func:`build_ws_kernel` builds the kernel for
:func:`~layoutproof.gpu.kernels.wgmma.generate_sm90`; the split-K, cluster and fused
epilogue variants rewrite its IR.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from layoutproof import Layout, Swizzle, composition
from layoutproof.layout import top_modes

from ..analysis import synthesize_swizzle
from ..config import OUT_DTYPES, GemmProblem
from ..errors import BankConflictError, GemmConfigError, ProofFailedError
from ..proof import evaluate, kir, lower, obligations
from ..proof.grid_sync_model import check_grid_sync
from ..proof.pipeline import prove_pipeline
from ..proof.record import ProofLog
from .toolkit import (
    STORE2,
    Env,
    OperandPlan,
    addr_of,
    eval_map,
    finish,
    ir_const,
    ir_var,
    k_tiles_ir,
    record_banks,
)
from .wgmma_core import (
    GENERATOR_VERSION,
    TMA_BOX,
    Sm90Config,
    acc_ir,
    acc_type,
    env90,
    env_var,
    kernel90,
    need_var,
    scale_ir,
    smem_arena,
    stage_bases_ir,
    tid_ir,
    tma_loads_ir,
    wgmma_batch_ir,
)

__all__ = [
    "build_ws_kernel",
    "ring_of",
    "wait_parity",
    "WsFrame",
    "declare_ws",
    "barrier_init_ir",
    "tile_lines_ir",
    "producer_ir",
    "release_ir",
    "ConsumerVars",
    "consumer_ir",
    "ws_body_ir",
    "plan_epilogue",
    "epilogue_ws_ir",
    "schedule_proofs",
    "eval_schedule",
    "prove_ws_protocol",
    "protocol_ir",
    "epilogue_order",
    "prove_schedule",
    "schedule_devfn",
    "prove_batch_schedule",
    "check_batch_coordinates",
    "batch_split_ir",
    "batch_c_stride",
    "cluster_tm_ir",
]


# ============================================================================ persistent schedule
# The tile scheduler of the persistent kernel, as statements (name, C expression) that are
# both emitted and proven: "min(x, y)" is written as ("min", x, y).  Tile t of the
# grid_m x grid_n tiles -> (tm, tn): groups of GROUP_M tile rows are walked column by
# column (the A panels of a group and one B panel stay in L2 together).
def _schedule_ir(group_m: int) -> Tuple[Tuple[kir.Var, ...], List[kir.Stmt]]:
    """The tile scheduler as IR: tile t of the grid_m x grid_n tiles -> (tm, tn); groups of
    ``group_m`` tile rows are walked column by column (the A panels of a group and one B
    panel stay in L2 together).  Both emitted (:func:`schedule_devfn`) and proven
    (:func:`prove_schedule` evaluates these nodes)."""
    t, gm, gn = kir.Var("t"), kir.Var("grid_m"), kir.Var("grid_n")
    tm, tn = kir.Var("tm"), kir.Var("tn")
    per_group, d1 = ir_const("per_group", group_m * gn)
    first_m, d2 = ir_const("first_m", t / per_group * group_m)
    gsize, d3 = ir_const("gsize", kir.Call("min", (gm - first_m, kir.Const(group_m))))
    return (t, gm, gn, tm, tn), [
        d1,
        d2,
        d3,
        kir.Assign(tm, first_m + t % per_group % gsize),
        kir.Assign(tn, t % per_group / gsize),
    ]


def schedule_devfn(group_m: int) -> Tuple[str, str, kir.Block]:
    """The scheduler as the device function ``lp_tile(t, grid_m, grid_n, &tm, &tn)``."""
    _vars, stmts = _schedule_ir(group_m)
    return ("lp_tile", "int t, int grid_m, int grid_n, int& tm, int& tn", kir.block(*stmts))


def eval_schedule(
    group_m: int, t: np.ndarray, gm: np.ndarray, gn: np.ndarray
) -> Tuple[np.ndarray, np.ndarray]:
    """The tile scheduler ``lp_tile`` evaluated elementwise from the statements it is
    printed from (:func:`schedule_devfn`): tiles ``t`` of ``gm x gn`` grids -> ``(tm,
    tn)`` arrays, as the kernels walk them.  Assumes integer arrays of one shape (or
    broadcastable), ``0 <= t < gm * gn``, ``group_m >= 1``.

    >>> import numpy as np
    >>> [a.tolist() for a in eval_schedule(8, np.arange(4), np.full(4, 2), np.full(4, 2))]
    [[0, 1, 0, 1], [0, 0, 1, 1]]
    """
    env: Dict[str, Any] = {"t": t, "grid_m": gm, "grid_n": gn}
    for st in _schedule_ir(group_m)[1]:
        if isinstance(st, kir.Decl) and st.init is not None:
            env[st.var.name] = evaluate.ev(st.init, env)
        elif isinstance(st, kir.Assign) and isinstance(st.lhs, kir.Var):
            env[st.lhs.name] = evaluate.ev(st.rhs, env)
        else:  # the scheduler is declarations and assignments of variables only
            raise ProofFailedError(
                f"tile scheduler: cannot evaluate a {type(st).__name__}", condition="scheduler IR"
            )
    return env["tm"], env["tn"]


def cluster_tm_ir(cluster: int, tp: kir.Var, crank: kir.Var) -> kir.Expr:
    """The tile row of CTA ``crank`` of a cluster given the scheduler's row group ``tp``."""
    return cluster * tp + crank


def batch_split_ir(t: kir.Expr, tpb: kir.Expr) -> Tuple[Tuple[kir.Var, kir.Var], List[kir.Stmt]]:
    """Tile ``t`` of a batched launch -> (batch ``bidx``, tile ``tb`` of that batch's grid):
    the batches' tile grids laid end to end (``tpb`` tiles per batch).  Emitted in the
    persistent loop and evaluated by :func:`prove_batch_schedule`."""
    bidx, d1 = ir_const("bidx", t / tpb, comment="the tile's batch")
    tb, d2 = ir_const("tb", t % tpb, comment="the tile within its batch's grid")
    return (bidx, tb), [d1, d2]


def batch_c_stride(E: Env) -> kir.Expr:
    """The batch stride the kernel's C stores use (the claim's is the parameter ``ldcb``;
    the two are checked equal on every store)."""
    return need_var(E, "ldcb")


def prove_batch_schedule(
    group_m: int,
    log: ProofLog,
    cluster: int = 1,
    grids: Tuple[Tuple[int, int], ...] = ((1, 1), (1, 7), (7, 1), (3, 5), (8, 9), (17, 4), (65, 33)),
    batches: Tuple[int, ...] = (1, 2, 3, 5, 64),
) -> None:
    """The batched persistent loop, evaluated on the emitted nodes: tiles
    ``[0, tpb * batch)`` split by :func:`batch_split_ir` and then mapped by the scheduler
    (with ``cluster`` CTAs per row group) reach every (batch, tile row, tile column) of
    ``batch`` grids exactly once, with ``0 <= bidx < batch`` -- the batch index that picks
    the A and B matrices (TMA batch coordinate) and C's matrix (``bidx * ldcb``) -- and
    every tile of a batch stays in that batch."""
    tv, tpv = kir.Var("t"), kir.Var("tpb")
    _vars, split = batch_split_ir(tv, tpv)
    cl = cluster
    cases = 0
    for gm, gn in grids:
        gmp = -(-gm // cl)
        tpb = gmp * gn
        for nb in batches:
            t = np.repeat(np.arange(tpb * nb, dtype=np.int64), cl)
            crank = np.tile(np.arange(cl, dtype=np.int64), tpb * nb)
            env: Dict[str, Any] = {"t": t, "tpb": np.full_like(t, tpb)}
            for st in split:
                if not (isinstance(st, kir.Decl) and st.init is not None):
                    raise ProofFailedError("batch split: not a declaration", condition="batch split IR")
                env[st.var.name] = evaluate.ev(st.init, env)
            bidx, tb = env["bidx"], env["tb"]
            tp, tn = eval_schedule(group_m, tb, np.full_like(t, gmp), np.full_like(t, gn))
            tm = tp * cl + crank
            bad = (bidx < 0) | (bidx >= nb) | (tb < 0) | (tb >= tpb)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ProofFailedError(
                    f"batched schedule: tile {int(t[i])} of {nb} batches of {gm}x{gn} tiles goes to "
                    f"batch {int(bidx[i])}, tile {int(tb[i])}",
                    condition="batch index in range",
                    witness=(gm, gn, nb, int(t[i])),
                )
            inside = tm < gm
            key = (bidx * (cl * gmp) + tm) * gn + tn
            if np.unique(key).size != key.size or int(inside.sum()) != gm * gn * nb:
                raise ProofFailedError(
                    f"batched schedule: {nb} batches of {gm}x{gn} tiles are not each visited once",
                    condition="batched scheduler bijective",
                    witness=(gm, gn, nb),
                )
            # a batch's tiles are the t in [bidx * tpb, (bidx + 1) * tpb)
            if not np.array_equal(bidx, t // tpb):
                raise ProofFailedError(
                    "batched schedule: a tile leaves its batch",
                    condition="batch blocks",
                    witness=(gm, gn, nb),
                )
            cases += int(t.size)
    cl_s = f", cluster={cl}" if cl > 1 else ""
    log.add(
        "bijective",
        f"batched persistent schedule (group_m={group_m}{cl_s}): t -> (bidx = t / tpb, tb = t % tpb) -> "
        f"(bidx, tm, tn) visits every tile of every batch once, 0 <= bidx < batch, for {len(grids)} grids "
        f"x {len(batches)} batch counts (C semantics)",
        "exhaustive",
        cases,
    )
    # the host's condition for disjoint C batches, checked exhaustively on small extents:
    # the element sets {b * ldcb + r * ldc + c : r < M, c < N} of batches b = 0, 1, 2 are
    # pairwise disjoint when ldcb >= (M - 1) * ldc + N (ldc >= N)
    n_cases = 0
    for M in range(1, 6):
        for N in range(1, 6):
            for ldc in range(N, N + 3):
                span = (M - 1) * ldc + N
                r = np.arange(M)[:, None] * ldc + np.arange(N)[None, :]
                for ldcb in range(span, span + 4):
                    sets = [set((b * ldcb + r).ravel().tolist()) for b in range(3)]
                    disjoint = all(not (sets[i] & sets[j]) for i in range(3) for j in range(i + 1, 3))
                    if not disjoint:
                        raise ProofFailedError(
                            f"C batches: ldcb={ldcb}, M={M}, N={N}, ldc={ldc}: disjoint={disjoint}",
                            condition="C batches disjoint when ldcb >= (M - 1) * ldc + N",
                            witness=(M, N, ldc, ldcb),
                        )
                    n_cases += 1
    log.add(
        "bounds",
        "batched C: the batches' element sets {bidx * ldcb + row * ldc + col : row < M, col < N} are "
        "pairwise disjoint when ldcb >= (M - 1) * ldc + N (checked on all extents up to 5x5, 3 batches; "
        "the host refuses any other output); each store is claimed at C + bidx * ldcb + row * ldc + col "
        "with row < M, col < N (checked on the IR), A and B are read through rank-3 tensor maps at batch "
        "coordinate bidx < batch (the batch extent of the map), so a box never reads another batch",
        "exhaustive",
        n_cases,
    )


def check_batch_coordinates(k: kir.Kernel, prob: GemmProblem, log: ProofLog) -> None:
    """On the kernel IR: every TMA box of an operand that carries the batch index is loaded
    at batch coordinate ``bidx``, the variable declared ``t / tpb`` in the persistent loop
    that encloses the load (the split :func:`prove_batch_schedule` proves), and no box of a
    shared operand has a batch coordinate.  (Not batched: no box has one.)"""
    an = obligations.analysis(k)
    n = 0
    for node in kir.walk(k.body):
        if not isinstance(node, kir.TmaLoad):
            continue
        op = node.claim.what[:1].lower()
        batched = op in prob.batch
        c2 = node.c2
        ok = c2 is None
        if batched:
            init = an.defs.get(id(c2)) if isinstance(c2, kir.Var) else None
            ok = (
                isinstance(c2, kir.Var)
                and c2.name == "bidx"
                and isinstance(init, kir.Bin)
                and init.op == "/"
                and isinstance(init.a, kir.Var)
                and init.a.name == "t"
                and isinstance(init.b, kir.Var)
                and init.b.name == "tpb"
            )
        if not ok:
            raise ProofFailedError(
                f"batched kernel: {node.claim.what} is loaded at batch coordinate "
                f"{kir.emit_expr(c2) if c2 is not None else 'none'} (operand {op.upper()} "
                + (
                    "carries the batch index: bidx = t / tpb)"
                    if batched
                    else "is shared: no batch coordinate)"
                ),
                condition="TMA batch coordinate",
                witness=node.claim.what,
            )
        n += 1
    if prob.batch:
        log.add(
            "equal",
            f"batched TMA loads: each of the {n} box loads reads batch bidx = t / tpb of its tile "
            f"(operands {', '.join(x.upper() for x in prob.batch)}; a shared operand's boxes have no batch "
            "coordinate), checked on the IR",
            "exhaustive",
            n,
        )


def prove_schedule(
    group_m: int,
    log: ProofLog,
    max_grid: int = 40,
    extra: Tuple[Tuple[int, int], ...] = ((64, 32), (32, 64), (65, 33), (1, 700), (700, 1), (129, 66)),
    cluster: int = 1,
) -> None:
    """The emitted scheduler maps tiles [0, grid_m * grid_n) one-to-one onto the
    grid_m x grid_n tile coordinates (C semantics, 32-bit int), for every grid up to
    ``max_grid`` x ``max_grid`` and the listed larger ones; and the persistent loop
    ``t = blockIdx.x + i * gridDim.x`` visits every tile exactly once for any grid size.

    With ``cluster = c`` > 1 the scheduler walks groups of ``c`` tile rows (``grid_mp =
    ceil(grid_m / c)``) and CTA ``crank`` of the cluster takes row ``c * tp + crank``:
    proven, every tile of the grid is taken exactly once by one (cluster slot, CTA), and
    the only other rows taken are past ``grid_m`` (a padding tile: its A rows are
    zero-filled by the TMA and its C rows, ``>= M``, are never stored)."""
    grids = [(m, n) for m in range(1, max_grid + 1) for n in range(1, max_grid + 1)]
    grids += list(extra)
    cl = cluster
    units = [(-(-m // cl)) * n for m, n in grids]
    gm = np.concatenate([np.full(u * cl, m) for (m, n), u in zip(grids, units)])
    gn = np.concatenate([np.full(u * cl, n) for (m, n), u in zip(grids, units)])
    gmp = -(-gm // cl)
    t = np.concatenate([np.repeat(np.arange(u), cl) for u in units])
    crank = np.concatenate([np.tile(np.arange(cl), u) for u in units])
    gid = np.concatenate([np.full(u * cl, i) for i, u in enumerate(units)])
    tp, tn = eval_schedule(group_m, t, gmp, gn)
    tm = (
        tp
        if cl == 1
        else evaluate.ev(cluster_tm_ir(cl, kir.Var("tp"), kir.Var("crank")), {"tp": tp, "crank": crank})
    )
    out = (tp < 0) | (tp >= gmp) | (tn < 0) | (tn >= gn) | (tm >= cl * gmp)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise ProofFailedError(
            f"scheduler (group_m={group_m}, cluster={cl}): tile {int(t[i])} "
            f"of a {int(gm[i])}x{int(gn[i])} grid goes to ({int(tm[i])}, "
            f"{int(tn[i])}), outside the grid",
            condition="tile in grid",
            witness=(int(gm[i]), int(gn[i]), int(t[i])),
        )
    key = gid * (1 << 22) + tm * gn + tn
    u, first, cnt = np.unique(key, return_index=True, return_counts=True)
    inside = tm < gm
    if u.size != key.size or int(inside.sum()) != sum(m * n for m, n in grids):
        i = int(first[np.flatnonzero(cnt > 1)[0]]) if u.size != key.size else 0
        raise ProofFailedError(
            f"scheduler (group_m={group_m}, cluster={cl}): two tiles of a "
            f"{int(gm[i])}x{int(gn[i])} grid go to ({int(tm[i])}, "
            f"{int(tn[i])}) or a tile is missed",
            condition="scheduler bijective",
            witness=(int(gm[i]), int(gn[i]), int(t[i])),
        )
    what = (
        f"maps (tile t, CTA rank) -> ({cl} * tp + crank, tn), every tile once, padding rows only past grid_m,"
        if cl > 1
        else "maps tile t -> (tm, tn) one-to-one onto the grid,"
    )
    cl_s = f", cluster={cl}" if cl > 1 else ""
    log.add(
        "bijective",
        f"persistent scheduler (group_m={group_m}{cl_s}) "
        f"{what} for all {len(grids)} grids up to {max_grid}x{max_grid} and "
        f"{len(extra)} larger ones (C semantics)",
        "exhaustive",
        int(t.size),
    )
    # the strided persistent loop partitions [0, tiles): t = b + i * P, b < P
    cases = 0
    for P in (1, 2, 3, 7, 66, 114, 132, 144):
        for tiles in (1, 5, P - 1, P, P + 1, 2 * P + 3, 2048):
            if tiles < 1:
                continue
            seen = np.concatenate([np.arange(b, tiles, P) for b in range(P)])
            if seen.size != tiles or np.unique(seen).size != tiles:
                raise ProofFailedError(
                    f"persistent loop over {tiles} tiles with {P} CTAs does not visit each tile once",
                    condition="tile partition",
                    witness=(P, tiles),
                )
            cases += tiles
    log.add(
        "bijective",
        "persistent loop t = first + i * step (t < tiles) visits each tile exactly once",
        "exhaustive",
        cases,
    )


@functools.cache
def schedule_proofs(group_m: int, cluster: int) -> Tuple[Any, ...]:
    """:func:`prove_schedule`'s records for ``(group_m, cluster)``, computed once per
    process (the kernels of every operand variant share the scheduler): a tuple to extend a
    kernel's log with.  Assumes the arguments of a validated configuration."""
    log = ProofLog()
    prove_schedule(group_m, log, cluster=cluster)
    return tuple(log.proofs)


# ============================================================================ staged epilogue
def _epilogue_swizzles(ob: int) -> Tuple[Swizzle, ...]:
    """Candidate XOR patterns (on element offsets) for the 64 x 128-byte epilogue buffer;
    each keeps a 16-byte vector (the low log2(16/ob) bits) intact."""
    m = {2: 3, 4: 2}[ob]
    return (
        Swizzle(0, m, 3),
        Swizzle(3, m, 3),
        Swizzle(2, m + 1, 2),
        Swizzle(2, m, 3),
        Swizzle(2, m, 2),
        Swizzle(3, m, 4),
    )


def plan_epilogue(prob: GemmProblem, log: ProofLog) -> Dict[str, Any]:
    """The accumulators of one consumer warpgroup leave through a 64-row x 128-byte buffer,
    one column chunk (128 bytes of C per row) at a time: each thread writes its register
    pairs, then each thread reads four 16-byte row vectors and stores them to C.  The XOR
    swizzle of the buffer is the first of :func:`_epilogue_swizzles` that makes both the
    pair writes and the vector reads conflict-free (:func:`layoutproof.gpu.analysis.
    synthesize_swizzle` on their thread-value layouts, with its certificates); proven: the
    write map is a bijection onto the buffer, pairs are contiguous and aligned, the read map
    covers the buffer once with aligned 16-byte vectors, and every accumulator (thread,
    register) reaches exactly its C coordinate.  The records go to ``log``.  Returns the
    plan :func:`epilogue_ws_ir` prints from: ``low`` (the lowered maps ``lp_ep_w``,
    ``lp_ep_r``, ``lp_ep_row``, ``lp_ep_col``), ``fns`` (their device functions), ``maps``
    (their layouts), ``sw`` (the swizzle), ``rw`` (elements per buffer row), ``ev``
    (elements per 16-byte vector), ``rc`` (registers per chunk).  Assumes ``prob.out`` a
    2- or 4-byte output type; raises ``BankConflictError`` / ``ProofFailedError``."""
    ob = OUT_DTYPES[prob.out][1]
    rw = 128 // ob  # elements per buffer row = columns per chunk
    ev = 16 // ob  # elements per 16-byte vector
    rc = rw // 2  # registers per chunk: rw / 8 column blocks x 4
    # (thread, register) -> (row, col) of the warpgroup's 64 x rw chunk, column-major index
    cmap = Layout(((4, 8, 4), (2, 2, rw // 8)), ((2 * 64, 1, 16), (64, 8, 8 * 64)))
    cval = eval_map(cmap)
    crow, ccol = cval % 64, cval // 64
    rshape = ((8, 16), 4)  # (t % 8, t // 8), vector v
    grow = eval_map(Layout(rshape, ((0, 1), 16)))
    gcol = eval_map(Layout(rshape, ((ev, 0), 0)))
    # the two accesses as thread-value layouts onto the chunk's (row + 64 col) coordinates:
    # the register pairs (thread, pair element, pair) and the 16-byte row vectors
    # (thread, element, vector)
    (cts, crs), (ctd, crd) = top_modes(cmap)
    writes = Layout((cts, 2, (2, rw // 8)), (ctd, 64, (crd[1], crd[2])))
    reads = Layout(((8, 16), ev, 4), ((64 * ev, 1), 64, 16))
    pair = "st.shared.b32" if ob == 2 else "st.shared.v2.b32"
    family = _epilogue_swizzles(ob)
    accesses = [(writes, pair), (reads, "ld.shared.v4.b32")]
    rep = synthesize_swizzle(Layout((64, rw), (rw, 1)), accesses, element_bits=8 * ob, family=family)
    if rep.status != "proved":
        raise BankConflictError(
            "no candidate epilogue swizzle is conflict-free: "
            f"{rep.witness if rep.witness is not None else rep.reason}",
            condition="epilogue banks",
            witness=rep.witness,
        )
    sw = rep.swizzle if rep.swizzle is not None else next(f for f in family if f.is_identity())
    whats = (
        f"epilogue {2 * ob}-byte pair writes into the {sw}-swizzled buffer",
        f"epilogue 16-byte row reads from the {sw}-swizzled buffer",
    )
    for r, what in zip(rep.reports, whats):
        record_banks(r, what, log)
    buf = composition(sw, Layout((64, rw), (rw, 1)))
    wmap = composition(buf, cmap)
    rmap = composition(sw, Layout(rshape, ((ev, rw), 16 * rw)))
    w = eval_map(wmap).reshape(rc, 128).T  # [thread, register]
    r = eval_map(rmap).reshape(4, 128).T  # [thread, vector]
    n = 64 * rw
    lower.prove_bijective(
        wmap, n, what=f"epilogue (thread, register) -> {sw}-swizzled 64x{rw} buffer", log=log
    )
    if (w[:, 1::2] != w[:, 0::2] + 1).any() or (w[:, 0::2] % 2).any():
        raise ProofFailedError(
            "epilogue register pairs are not aligned adjacent elements", condition="pair contiguity"
        )
    reads = (r[:, :, None] + np.arange(ev)).reshape(-1)
    if (r % ev).any() or np.unique(reads).size != n or reads.min() != 0 or reads.max() != n - 1:
        raise ProofFailedError(
            "epilogue 16-byte reads do not cover the buffer once, aligned", condition="read cover"
        )
    # data flow: the reader of the element an accumulator was written to stores it at the
    # accumulator's C coordinate (row, column within the chunk)
    where = np.empty(n, dtype=np.int64)
    where[reads] = np.arange(reads.size)
    src = where[w.T.reshape(-1)]  # register-major, like cval
    t_r, rest = src // (4 * ev), src % (4 * ev)
    v_r, e_r = rest // ev, rest % ev
    idx = v_r * 128 + t_r  # reader (thread, vector) flat index
    orow, ocol = grow[idx], gcol[idx] + e_r
    bad = np.flatnonzero((orow != crow) | (ocol != ccol))
    if bad.size:
        i = int(bad[0])
        raise ProofFailedError(
            f"epilogue: accumulator {i} (register-major) belongs at "
            f"({int(crow[i])}, {int(ccol[i])}) but is stored at "
            f"({int(orow[i])}, {int(ocol[i])})",
            condition="epilogue data flow",
            witness=i,
        )
    log.add(
        "equal",
        f"epilogue data flow: every accumulator (thread, register) of a chunk, "
        f"written to the buffer and read back as 16-byte vectors, is stored at "
        f"its C coordinate ({sw})",
        "exhaustive",
        int(cval.size),
    )
    low = {
        "w": lower.lower(wmap, ("t", "i"), name="lp_ep_w", log=log),
        "r": lower.lower(rmap, ("t", "v"), name="lp_ep_r", log=log),
        "row": lower.lower(Layout(rshape, ((0, 1), 16)), ("t", "v"), name="lp_ep_row", log=log),
        "col": lower.lower(Layout(rshape, ((ev, 0), 0)), ("t", "v"), name="lp_ep_col", log=log),
    }
    return {
        "low": low,
        "sw": sw,
        "rw": rw,
        "ev": ev,
        "rc": rc,
        "fns": {k: kir.from_lowered(v) for k, v in low.items()},
        "maps": {k: v.layout for k, v in low.items()},
    }


def _cluster_boxes(b: OperandPlan, ctas: int) -> Dict[int, Tuple[int, ...]]:
    """Which of B's 64-row boxes each CTA of the cluster issues (multicast to all)."""
    nb = b.x_extent // TMA_BOX
    return {r: tuple(j for j in range(nb) if j % ctas == r) for r in range(ctas)}


def _prove_cluster_tx(a: OperandPlan, b: OperandPlan, ctas: int, log: ProofLog) -> int:
    """The bytes that land in each CTA's stage per k-tile, from every issuer: its own A
    boxes and every multicast B box, each B box issued by exactly one CTA.  Returns the
    per-CTA transaction count the producer announces (``arrive.expect_tx``)."""
    boxes = _cluster_boxes(b, ctas)
    issued = sorted(j for r in boxes for j in boxes[r])
    if issued != list(range(b.x_extent // TMA_BOX)):
        raise ProofFailedError(
            f"cluster: the B boxes issued by the CTAs are {issued}, not each "
            f"of the {b.x_extent // TMA_BOX} boxes once",
            condition="multicast boxes partition B",
            witness=tuple(issued),
        )
    box = TMA_BOX * 64 * 2
    # into each CTA: its own A boxes (not multicast) and every multicast B box
    landed = [
        (a.x_extent // TMA_BOX) * box + sum(len(boxes[r]) * box for r in range(ctas)) for _dest in range(ctas)
    ]
    want = 2 * (a.stage_elems + b.stage_elems)
    if any(n != want for n in landed):
        raise ProofFailedError(
            f"cluster: {landed} bytes land per CTA and stage, the stage holds {want}",
            condition="transaction bytes",
            witness=tuple(landed),
        )
    log.add(
        "equal",
        f"{ctas}-CTA cluster: the B boxes {boxes} (CTA -> boxes, multicast to "
        f"every CTA) partition the B tile; each CTA's full barrier receives "
        f"{want} bytes per stage = its A tile + the whole B tile",
        "exhaustive",
        ctas * (a.x_extent // TMA_BOX + b.x_extent // TMA_BOX),
    )
    return want


def _c_batch_address(E: Env) -> Tuple[Optional[kir.Var], kir.Expr, kir.Expr]:
    """The tile's batch ``bidx`` (None unbatched), the claims' batch offset of C (``bidx *
    ldcb``, the parameter) and the code's base pointer of C (``C + bidx *
    batch_c_stride``, checked against the claim)."""
    bidx = env_var(E, "bidx")
    boff: kir.Expr = kir.Const(0, "long long")
    cbase: kir.Expr = E.C
    if bidx is not None:
        boff = kir.Cast("long long", bidx) * need_var(E, "ldcb")
        cbase = E.C + kir.Cast("long long", bidx) * batch_c_stride(E)
    return bidx, boff, cbase


def _epilogue_row_store_ir(
    E: Env,
    prob: GemmProblem,
    ep: Dict[str, Any],
    eb: kir.Var,
    q: kir.Var,
    v: kir.Var,
    region: Tuple[kir.Expr, int],
) -> List[kir.Stmt]:
    """Vector ``v`` of chunk ``q``: its row ``r`` and column ``c``, its 16 bytes read from
    the buffer, stored to C as one row vector, or element by element at the edge."""
    ob = OUT_DTYPES[prob.out][1]
    rw, ev = ep["rw"], ep["ev"]
    fn, lay = ep["fns"], ep["maps"]
    arena = region[0]
    i = ir_var("i")
    rclaim = kir.Claim(
        "epilogue buffer 16-byte read (thread, vector) of this warpgroup",
        arena + ob * kir.LayoutApp(lay["r"], (E.wt, v), "epilogue read map"),
        region=region,
        width=16,
    )
    r, dr = ir_const("r", E.m0 + 64 * E.cg + kir.call(fn["row"], t=E.wt, v=v))
    c, dc = ir_const("c", E.n0 + rw * q + kir.call(fn["col"], t=E.wt, v=v))
    row = E.m0 + 64 * E.cg + kir.LayoutApp(lay["row"], (E.wt, v), "epilogue row map")
    col = E.n0 + rw * q + kir.LayoutApp(lay["col"], (E.wt, v), "epilogue column map")
    val = kir.Var("val", "uint4")
    dval = kir.Decl(
        val,
        kir.Mem(eb + kir.call(fn["r"], t=E.wt, v=v), rclaim, vec="const uint4", space="shared"),
        const=True,
    )
    pv = kir.Var("p", "lp_out_t*")
    e = kir.Var("e", "const lp_out_t*")
    bidx, boff, cbase = _c_batch_address(E)

    def gclaim(off: kir.Expr, width: int, what: str) -> kir.Claim:
        elem = kir.Cast("long long", row) * E.ldc + col + off
        return kir.Claim(
            what,
            addr_of(E.C) + ob * (elem if bidx is None else boff + elem),
            bounds=((row, E.M), (col + off + (width - 1), E.N)),
            width=width * ob,
        )

    vec_store = kir.Assign(
        kir.Mem(pv, gclaim(kir.Const(0), ev, "C 16-byte row vector store"), vec="uint4"), val
    )
    one = kir.Assign(kir.Mem(pv, gclaim(i, 1, "C element store (edge)"), idx=i), kir.Index(e, (i,)))
    edge = kir.For(
        i, kir.Const(0), kir.Const(ev), kir.block(kir.If((c + i).lt(E.N), kir.block(one))), unroll=True
    )
    store = kir.If(
        r.lt(E.M),
        kir.block(
            kir.Decl(pv, cbase + kir.Cast("long long", r) * E.ldc + c),
            kir.If(
                E.c_vec.and_((c + ev).le(E.N)),
                kir.block(vec_store),
                kir.block(kir.Decl(e, kir.Reinterpret("const lp_out_t*", kir.AddrOf(val))), edge),
            ),
        ),
    )
    return [dr, dc, dval, store]


def epilogue_ws_ir(
    E: Env, cfg: Sm90Config, prob: GemmProblem, ep: Dict[str, Any], acc: kir.Var, e_off: int
) -> List[kir.Stmt]:
    """Accumulators -> swizzled shared buffer (register pairs) -> 16-byte row vectors -> C,
    one 128-byte column chunk at a time (the maps :func:`plan_epilogue` proved): a consumer
    warpgroup's statements after its last wgmma completed.  Assumes ``E`` holds the
    consumer's variables (``cg``, ``wt``, ``m0``, ``n0``, ``bidx`` when batched, the shared
    bases ``sE``, ``s0``, ``sbase``), ``ep`` is :func:`plan_epilogue`'s plan for ``prob`` and ``e_off`` the
    epilogue buffers' byte offset in the arena (:attr:`WsFrame.e_off`)."""
    v2t, pack2, _ = STORE2[prob.out]
    ob = OUT_DTYPES[prob.out][1]
    rw, rc = ep["rw"], ep["rc"]
    eb = kir.Var("eb", "lp_out_t*")
    arena = addr_of(E.smem) + (E.s0 - E.sbase) + e_off + E.cg * 8192
    region = (arena, 8192)
    q, p, v = ir_var("q"), ir_var("p"), ir_var("v")
    wclaim = kir.Claim(
        "epilogue buffer write (thread, register pair) of this warpgroup",
        arena + ob * kir.LayoutApp(ep["maps"]["w"], (E.wt, 2 * p), "epilogue write map"),
        region=region,
        width=2 * ob,
    )
    write = kir.Assign(
        kir.Mem(eb + kir.call(ep["fns"]["w"], t=E.wt, i=2 * p), wclaim, vec=v2t, space="shared"),
        kir.Call(
            pack2, (kir.Index(acc, (rc * q + 2 * p,)), kir.Index(acc, (rc * q + 2 * p + 1,))), "lp_out_t"
        ),
    )
    reads = _epilogue_row_store_ir(E, prob, ep, eb, q, v, region)
    return [
        kir.Comment(
            "epilogue through shared memory (proven maps lp_ep_*), one 128-byte column\n"
            "chunk at a time: register pairs -> swizzled buffer -> 16-byte row vectors -> C"
        ),
        kir.Decl(eb, kir.Reinterpret("lp_out_t*", E.smem + (E.sE - E.sbase) + E.cg * 8192), const=True),
        kir.For(
            q,
            kir.Const(0),
            kir.Const(cfg.bn // rw),
            kir.block(
                kir.For(p, kir.Const(0), kir.Const(rc // 2), kir.block(write), unroll=True),
                kir.NamedBarrier(1 + E.cg, 128),
                kir.For(v, kir.Const(0), kir.Const(4), kir.block(*reads), unroll=True),
                kir.NamedBarrier(1 + E.cg, 128),
            ),
            unroll=True,
        ),
    ]


@dataclass(frozen=True)
class WsFrame:
    """What the phases of a warp-specialized kernel share (the ws kernel's and the
    block-scaled kernel's): the configuration, the kernel's variables (``E``, extended by
    the phases as they declare the tile origins) and the ring, barrier, cluster and
    tile-walk variables declared in the prologue.  Built by :func:`declare_ws` only;
    ``regs`` is the consumers' register count, ``e_off`` the epilogue buffers' offset in
    the shared arena, ``t0``/``tstep`` the persistent walk's start and step."""

    cfg: Sm90Config
    prob: GemmProblem
    a: OperandPlan
    b: OperandPlan
    ep: Dict[str, Any]
    desc: Dict[str, Tuple[int, int, int]]
    tx: int
    E: Env
    regs: int
    e_off: int
    full0: kir.Var
    empty0: kir.Var
    rank: kir.Var
    crank: Optional[kir.Var]
    grid_m: kir.Var
    grid_n: kir.Var
    grid_mp: Optional[kir.Var]
    tpb: Optional[kir.Var]
    tiles: kir.Var
    KT: kir.Var
    t0: kir.Expr
    tstep: kir.Expr

    @property
    def S(self) -> int:
        return self.cfg.stages

    @property
    def CW(self) -> int:
        return self.cfg.warpgroups

    @property
    def CL(self) -> int:
        return self.cfg.cluster


def _tile_walk_ir(E: Env, cfg: Sm90Config, prob: GemmProblem, body: List[Any]) -> Tuple[Any, ...]:
    """The tile grid and each CTA's walk over it (in a cluster: over tile-row groups; when
    batched: the batches' grids end to end), declared into ``body``: returns ``grid_m,
    grid_n, grid_mp, tpb, tiles, t0, tstep``."""
    CL = cfg.cluster
    grid_m, dg1 = ir_const("grid_m", (E.M + (cfg.bm - 1)) / cfg.bm)
    grid_n, dg2 = ir_const("grid_n", (E.N + (cfg.bn - 1)) / cfg.bn)
    body += [dg1, dg2]
    grid_mp: Optional[kir.Var] = None
    t0: kir.Expr
    tstep: kir.Expr
    if CL == 1:
        per: kir.Expr = grid_m * grid_n
        t0, tstep = E.blockIdx, E.gridDim
    else:
        grid_mp, dmp = ir_const("grid_mp", (grid_m + (CL - 1)) / CL, comment="tile-row groups of the cluster")
        body.append(dmp)
        per = grid_mp * grid_n
        t0, tstep = E.blockIdx / CL, E.gridDim / CL
    tpb: Optional[kir.Var] = None
    if prob.batch:  # the batches' tile grids end to end: tiles = tiles per batch * batch
        tpb, dtpb = ir_const("tpb", per, comment="tiles per batch")
        tiles, dt = ir_const("tiles", tpb * need_var(E, "batch"))
        body += [dtpb, dt]
    else:
        tiles, dt = ir_const("tiles", per)
        body.append(dt)
    return grid_m, grid_n, grid_mp, tpb, tiles, t0, tstep


def declare_ws(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    ep: Dict[str, Any],
    desc: Dict[str, Tuple[int, int, int]],
    tx: int,
) -> Tuple[WsFrame, List[Any]]:
    """The prologue's declarations: the shared arena, the full/empty barrier arrays, the
    stage bases, the thread coordinates, the cluster rank, the tile grid (tiles per batch
    when batched) and the k-tile count; returns the frame and the statements (the kernel
    body's start, to be extended by :func:`barrier_init_ir` and the roles).  Assumes a
    validated ws ``cfg`` (TMA loader), ``a``, ``b`` and ``desc`` planned for it, ``ep``
    from :func:`plan_epilogue` and ``tx`` the proven bytes per stage."""
    S, CL = cfg.stages, cfg.cluster
    E = env90(prob, True)
    if prob.batch:  # the batch count and C's batch stride (elements) follow c_vec
        E.add(batch=ir_var("batch"), ldcb=ir_var("ldcb", "long long"))
    body: List[Any] = []
    smem_arena(E, body, split=True)
    full = kir.Var("lp_full", "unsigned long long*")
    empty = kir.Var("lp_empty", "unsigned long long*")
    for bv in (full, empty):
        body.append(kir.Decl(bv, dims=(S,), prefix="__shared__ __align__(8)", tname="unsigned long long"))
    sA, sB, d1, d2 = stage_bases_ir(E, S, a)
    sE, d3 = ir_const("sE", sB + kir.Const(S * 2 * b.stage_elems, "unsigned"), "unsigned")

    def cvta(x: kir.Var) -> kir.Expr:
        return kir.Cast("unsigned", kir.Call("__cvta_generic_to_shared", (x,), "unsigned"))

    full0, d4 = ir_const("full0", cvta(full), "unsigned")
    empty0, d5 = ir_const("empty0", cvta(empty), "unsigned")
    body += [d1, d2, d3, d4, d5]
    E.add(sA=sA, sB=sB, sE=sE, full0=full0, empty0=empty0)
    tid_ir(E, body)
    rank = kir.Var("rank", "unsigned")
    crank: Optional[kir.Var] = None
    if CL > 1:
        crank, dcr = ir_const("crank", kir.Cast("int", rank))
        body += [kir.ClusterRank(rank), dcr]
    grid_m, grid_n, grid_mp, tpb, tiles, t0, tstep = _tile_walk_ir(E, cfg, prob, body)
    KT, dkt = k_tiles_ir(E, cfg.bk)
    body.append(dkt)
    F = WsFrame(
        cfg=cfg,
        prob=prob,
        a=a,
        b=b,
        ep=ep,
        desc=desc,
        tx=tx,
        E=E,
        regs=232 if cfg.warpgroups == 2 else 240,
        e_off=S * 2 * (a.stage_elems + b.stage_elems),
        full0=full0,
        empty0=empty0,
        rank=rank,
        crank=crank,
        grid_m=grid_m,
        grid_n=grid_n,
        grid_mp=grid_mp,
        tpb=tpb,
        tiles=tiles,
        KT=KT,
        t0=t0,
        tstep=tstep,
    )
    return F, body


def stage_in_ir(F: WsFrame) -> List[kir.Stmt]:
    """:attr:`~layoutproof.gpu.kernels.wgmma_core.Sm90Config.stage_in`: each warp of the
    grid copies rows ``w, w + W, ...`` (``w`` its index in the grid, ``W`` the grid's
    warps) of each named operand from the user's matrix (``P_src``, leading dimension
    ``P_sld``, any 2-byte-aligned base) into the padded buffer its tensor map reads
    (``P_dst``, leading dimension ``P_dld``: a multiple of 8 elements at a 16-byte-aligned
    base, at least the row rounded up to 8).  Lane ``l`` of the warp takes the row's
    16-byte chunks ``l, l + 32, ...`` (four at a time, unrolled): eight two-byte loads
    (zero past the row's end, so the padding is rewritten with zeros) into one register
    vector, stored as one 16-byte store.  Then the grid barrier
    (:class:`~layoutproof.gpu.proof.kir.GridSync` on ``lp_gbar``), after which the buffers
    are complete for every CTA's boxes.  Statements between :func:`declare_ws`'s and
    :func:`barrier_init_ir`'s; nothing without ``stage_in``."""
    E, cfg = F.E, F.cfg
    if not cfg.stage_in:
        return []
    out: List[kir.Stmt] = [
        kir.Comment(f"staging: {' and '.join(x.upper() for x in cfg.stage_in)} copied by the whole grid")
    ]
    for P in cfg.stage_in:
        p = F.a if P == "a" else F.b
        src, sld = kir.Var(f"{P}_src", "const lp_in_t*"), kir.Var(f"{P}_sld", "long long")
        dst, dld = kir.Var(f"{P}_dst", "lp_in_t*"), kir.Var(f"{P}_dld", "long long")
        E.add(**{f"{P}_src": src, f"{P}_sld": sld, f"{P}_dst": dst, f"{P}_dld": dld})
        X = E.M if P == "a" else E.N
        outer, inner = (X, E.K) if p.kmajor else (E.K, X)
        r, q, j = ir_var(f"{P}_r"), ir_var(f"{P}_q"), ir_var("j")
        row = kir.Cast("long long", r)
        c0, dc0 = ir_const(f"{P}_c0", q * 8)
        chunks, dch = ir_const(f"{P}_chunks", (inner + 7) / 8, comment="16-byte chunks of a row")
        w = kir.Var(f"{P}_w", "uint4")
        wp, dwp = ir_const(f"{P}_wp", kir.Reinterpret("lp_in_t*", kir.AddrOf(w)), "lp_in_t*")
        sclaim = kir.Claim(
            f"{P.upper()} staging read (row r, element c0 + j of the user's operand)",
            addr_of(src) + 2 * (row * sld + c0 + j),
            bounds=((r, outer), (c0 + j, inner)),
            width=2,
        )
        dclaim = kir.Claim(
            f"{P.upper()} staging write (row r, chunk c0 .. c0 + 7 of the padded buffer)",
            addr_of(dst) + 2 * (row * dld + c0),
            bounds=((r, outer), (c0 + 7, dld)),
            width=16,
        )
        load = kir.For(
            j,
            kir.Const(0),
            kir.Const(8),
            kir.block(
                kir.Assign(kir.Index(wp, (j,)), kir.Call("lp_in_t", (), "lp_in_t")),
                kir.If(
                    (c0 + j).lt(inner),
                    kir.block(kir.Assign(kir.Index(wp, (j,)), kir.Mem(src, sclaim, idx=row * sld + c0 + j))),
                ),
            ),
            unroll=True,
        )
        store = kir.Assign(kir.Mem(dst + row * dld + c0, dclaim, vec="uint4"), w)
        chunk = kir.block(
            dc0,
            kir.Decl(w),
            dwp,
            kir.If(r.lt(outer), kir.block(load, kir.If((c0 + 7).lt(dld), kir.block(store)))),
        )
        W = cfg.threads // 32
        out += [
            dch,
            kir.For(
                r,
                E.blockIdx * W + (E.tid >> 5),
                outer,
                kir.block(kir.For(q, E.tid & 31, chunks, chunk, step=kir.Const(32), unroll=4)),
                step=E.gridDim * W,
            ),
        ]
    gbar = kir.Var("lp_gbar", "unsigned*")
    E.add(lp_gbar=gbar)

    def word(i: int, what: str) -> kir.Mem:
        return kir.Mem(gbar, kir.Claim(what, addr_of(gbar) + 4 * i, width=4), idx=kir.Const(i))

    out.append(
        kir.GridSync(
            word(0, "grid barrier arrivals"),
            word(1, "grid barrier generation"),
            "the staged operands are complete before any CTA's first box",
        )
    )
    return out


def barrier_init_ir(F: WsFrame) -> List[kir.Stmt]:
    """Thread 0 initializes the stages' full (one arrival) and empty (every consumer warp
    of the cluster) barriers; then the CTA (or the cluster) synchronizes.  The statements
    that follow :func:`declare_ws`'s, before the roles branch."""
    s = ir_var("s")
    init = kir.If(
        F.E.tid.eq(0),
        kir.block(
            kir.For(
                s,
                kir.Const(0),
                kir.Const(F.S),
                kir.block(
                    kir.MbarInit(kir.MbarRef(F.full0, s), 1),
                    kir.MbarInit(kir.MbarRef(F.empty0, s), 4 * F.CW * F.CL),
                ),
            ),
            kir.Fence("mbarrier_init"),
            kir.Fence("proxy_async"),
        ),
    )
    sync = (
        kir.SyncThreads()
        if F.CL == 1
        else kir.ClusterSync("every CTA's barriers are initialized before any use")
    )
    return [init, sync]


def tile_lines_ir(F: WsFrame, t0_: kir.Var) -> Tuple[List[kir.Stmt], kir.Var, kir.Var]:
    """Tile ``t0_`` of the walk -> its batch (when batched: ``E.bidx``), its tile
    coordinates and its origin ``m0``, ``n0`` (in a cluster: the CTA's tile row of its
    rank).  Returns the statements, ``m0`` and ``n0``; the statements declare ``tn`` (and
    ``tm``, or ``tp`` in a cluster) and call ``lp_tile`` (:func:`schedule_devfn`, which the
    kernel must carry).  Each role calls it once for its own loop variable ``t0_``."""
    E, CL = F.E, F.CL
    tm, tn = kir.Var("tm"), kir.Var("tn")
    pre: List[kir.Stmt] = []
    t: kir.Var = t0_
    E.add(bidx=None)
    if F.tpb is not None:
        (bidx, t), pre = batch_split_ir(t0_, F.tpb)
        E.add(bidx=bidx)
    if CL == 1:
        out = pre + [
            kir.Decl(tm),
            kir.Decl(tn),
            kir.Eval(kir.Call("lp_tile", (t, F.grid_m, F.grid_n, tm, tn), "void")),
        ]
        tmv = tm
    else:
        if F.crank is None or F.grid_mp is None:  # declare_ws declares both for every cluster
            raise GemmConfigError(f"cluster={CL}: the cluster rank and tile-row groups were not declared")
        tp = kir.Var("tp")
        tmv, dtm = ir_const(
            "tm", cluster_tm_ir(CL, tp, F.crank), comment="may pass grid_m: zero-filled, not stored"
        )
        out = pre + [
            kir.Decl(tp),
            kir.Decl(tn),
            kir.Eval(kir.Call("lp_tile", (t, F.grid_mp, F.grid_n, tp, tn), "void")),
            dtm,
        ]
    m0, dm = ir_const("m0", tmv * F.cfg.bm)
    n0, dn = ir_const("n0", tn * F.cfg.bn)
    return out + [dm, dn], m0, n0


def _producer_loads_ir(F: WsFrame, st: kir.Var, kt: kir.Var, bar: kir.Var) -> List[kir.Stmt]:
    """The TMA boxes of stage ``st``: the A tile, and the B tile (in a cluster: this rank's
    B boxes, multicast to every CTA)."""
    E, prob, a, b, CL = F.E, F.prob, F.a, F.b, F.CL
    ca = need_var(E, "bidx") if "a" in prob.batch else None
    cb = need_var(E, "bidx") if "b" in prob.batch else None
    loads = tma_loads_ir(E, a, E.tmA, E.sA, st, kt, bar, c2=ca)
    if CL == 1:
        loads += tma_loads_ir(E, b, E.tmB, E.sB, st, kt, bar, c2=cb)
    else:
        for r, bx in _cluster_boxes(b, CL).items():
            loads.append(
                kir.If(
                    F.rank.eq(kir.Const(r, "unsigned")),
                    kir.block(
                        tma_loads_ir(E, b, E.tmB, E.sB, st, kt, bar, boxes=bx, mask=(1 << CL) - 1, c2=cb)
                    ),
                    comment=f"B boxes {bx}, multicast to the cluster",
                )
            )
    return loads


def producer_ir(F: WsFrame) -> kir.Block:
    """Warpgroup 0: one thread walks the tiles and keeps up to ``S`` stages in flight (wait
    for the stage's release, expect its bytes, issue its boxes).  The producer branch of
    the roles' ``if``; it sets ``E.m0``/``E.n0`` to its own tile origin (the consumer
    sets its own after it).  Assumes ``F`` from :func:`declare_ws` and ``F.tx`` the bytes
    its boxes bring per stage."""
    E, S = F.E, F.S
    st, ph = ir_var("st", values=tuple(range(S))), kir.Var("ph", "unsigned", values=(0, 1))
    t = ir_var("t")
    tl, m0, n0 = tile_lines_ir(F, t)
    E.add(m0=m0, n0=n0)
    kt = ir_var("kt")
    bar, dbar = ir_const("bar", kir.MbarRef(F.full0, st), "unsigned")
    loads = _producer_loads_ir(F, st, kt, bar)
    stage = kir.block(
        kir.MbarWait(
            kir.MbarRef(F.empty0, st), ph ^ kir.Const(1, "unsigned"), "the consumers released stage st"
        ),
        dbar,
        kir.MbarExpectTx(bar, F.tx),
        loads,
        kir.RingAdvance(st, S, ph),
    )
    return kir.block(
        kir.Comment(f"producer: one thread keeps up to {S} stages in flight"),
        kir.SetMaxNReg(False, 40),
        kir.If(
            E.wt.eq(0),
            kir.block(
                kir.Decl(st, kir.Const(0)),
                kir.Decl(ph, kir.Const(0, "unsigned")),
                kir.For(
                    t,
                    F.t0,
                    F.tiles,
                    kir.block(tl, kir.For(kt, kir.Const(0), F.KT, stage)),
                    step=F.tstep,
                    cond=t.lt(F.tiles),
                ),
            ),
        ),
    )


def release_ir(F: WsFrame, prev: kir.Var, lane0: kir.Var, held: bool = False) -> kir.Stmt:
    """Lane 0 of each consumer warp releases stage ``prev`` (in a cluster: on this CTA's
    empty barrier, then on the peer's); nothing while ``prev`` is -1 (no stage held).
    ``lane0`` is the consumer's ``tid % 32 == 0``; every consumer warp must execute it
    once per stage it consumed (the empty barriers count ``4 x`` consumer warpgroups
    ``x cluster`` arrivals).  ``held``: ``prev`` is the stage the k-tile holds (the ring
    counter, always a stage): guarded by ``lane0`` alone."""
    ops = [kir.MbarArrive(kir.MbarRef(F.empty0, prev))]
    if F.CL > 1:
        ops.append(kir.MbarArrive(kir.MbarRef(F.empty0, prev), F.rank ^ kir.Const(1, "unsigned")))
    return kir.If(
        lane0 if held else prev.ge(0).and_(lane0),
        kir.block(*ops),
        comment="this CTA's barrier, then the peer's" if F.CL > 1 else "",
    )


@dataclass(frozen=True)
class ConsumerVars:
    """What a k-tile's statements of :func:`consumer_ir` read: the ring's stage ``st``,
    the k-tile index ``kt``, the tile's column index ``tn`` (declared by
    :func:`tile_lines_ir`) and the warpgroup's accumulators ``acc``; ``F.E`` holds the
    warpgroup index ``cg`` and the tile origin ``m0``, ``n0``."""

    st: kir.Var
    kt: kir.Var
    tn: kir.Var
    acc: kir.Var


def consumer_ir(
    F: WsFrame,
    title: str,
    acc_ctype: str,
    k_tile: Callable[[ConsumerVars], Tuple[List[kir.Stmt], ...]],
    *,
    release_note: str,
    decls: Sequence[kir.Stmt] = (),
    drain: Sequence[kir.Stmt] = (),
    release: str = "next",
) -> kir.Block:
    """The consumer warpgroups' branch (warpgroups 1..), the ring protocol of every
    warp-specialized kernel: per tile of the persistent walk, per k-tile, ``k_tile``'s
    first statements, the wait for stage ``st``'s bytes (its ``full`` barrier), its second
    statements (the wgmmas reading the stage), then the previous stage's release
    (:func:`release_ir`, after the comment ``release_note``) and the ring's advance; after
    the k-tiles ``drain``, the last stage's release, the ``alpha`` scale and the staged
    epilogue (:func:`epilogue_ws_ir`).  ``title`` is the branch's comment, ``acc_ctype``
    the accumulators' type (``"f32"`` or ``"s32"``), ``decls`` declarations ahead of the
    tile loop.  A stage is released right after the next k-tile's statements, so these
    must complete the previous k-tile's wgmmas (``wgmma.wait_group`` 1 or 0 after their
    own commit) and ``drain`` the last one's; the protocol is read back from the IR and
    model-checked (:func:`prove_ws_protocol`).

    ``k_tile`` may return a third list: statements after the release (in the k-tile's
    iteration, before the ring's advance).  ``release="same"`` (default ``"next"``)
    releases the k-tile's *own* stage right after its second statements -- these must
    complete its wgmmas (``wgmma.wait_group 0``) -- and nothing after the k-tiles: the
    protocol read from the IR then has one release site, and the model checks a consumer
    that releases each stage in the k-tile that acquired it
    (:func:`~layoutproof.gpu.proof.pipeline.check_pipeline`, ``release_lag=0``)."""
    if release not in ("next", "same"):
        raise GemmConfigError(f"consumer_ir: release={release!r} must be 'next' or 'same'")
    E, cfg, S = F.E, F.cfg, F.S
    cst, cph = ir_var("st", values=tuple(range(S))), kir.Var("ph", "unsigned", values=(0, 1))
    ct = ir_var("t")
    ctl, cm0, cn0 = tile_lines_ir(F, ct)
    tn = next(s.var for s in ctl if isinstance(s, kir.Decl) and s.var.name == "tn")
    cg, dcg = ir_const("cg", E.wg - 1)
    lane0, dl0 = ir_const("lane0", (E.tid & 31).eq(0), "bool")
    E.add(cg=cg, m0=cm0, n0=cn0)
    acc, ad = acc_ir(cfg, acc_ctype)
    prev = ir_var("prev", values=tuple(range(-1, S)))
    ckt = ir_var("kt")
    parts = k_tile(ConsumerVars(st=cst, kt=ckt, tn=tn, acc=acc))
    before, after = parts[0], parts[1]
    post = parts[2] if len(parts) > 2 else []
    same = release == "same"
    mainloop = kir.For(
        ckt,
        kir.Const(0),
        F.KT,
        kir.block(
            before,
            kir.MbarWait(kir.MbarRef(F.full0, cst), cph, "stage st's bytes have landed"),
            after,
            kir.Comment(release_note),
            release_ir(F, cst, lane0, held=True) if same else release_ir(F, prev, lane0),
            post,
            None if same else kir.Assign(prev, cst),
            kir.RingAdvance(cst, S, cph),
        ),
    )
    return kir.block(
        kir.Comment(title),
        kir.SetMaxNReg(True, F.regs),
        dcg,
        dl0,
        kir.Decl(cst, kir.Const(0)),
        kir.Decl(cph, kir.Const(0, "unsigned")),
        tuple(decls),
        kir.For(
            ct,
            F.t0,
            F.tiles,
            kir.block(
                ctl,
                ad,
                None if same else kir.Decl(prev, kir.Const(-1)),
                mainloop,
                tuple(drain),
                None if same else release_ir(F, prev, lane0),
                scale_ir(E, cfg, acc),
                epilogue_ws_ir(E, cfg, F.prob, F.ep, acc, F.e_off),
            ),
            step=F.tstep,
            cond=ct.lt(F.tiles),
        ),
    )


def _consumer_ir(F: WsFrame) -> kir.Block:
    """Warpgroups 1..: per tile, wgmma over the k-tiles with one batch in flight (a stage
    goes back to the producer once the batch after it was issued), then the staged
    epilogue."""

    def k_tile(c: ConsumerVars) -> Tuple[List[kir.Stmt], List[kir.Stmt]]:
        return [], wgmma_batch_ir(F.E, F.cfg, F.desc, F.a, F.b, c.st, F.E.cg, c.acc)

    return consumer_ir(
        F,
        "consumers: wgmma on this warpgroup's 64-row slice, one batch in flight",
        acc_type(F.prob),
        k_tile,
        release_note="the previous batch is complete: its stage goes back to the producer(s)",
        drain=(kir.WgmmaWait(0),),
    )


def ws_body_ir(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    ep: Dict[str, Any],
    desc: Dict[str, Tuple[int, int, int]],
    tx: int,
    consumer: Callable[[WsFrame], kir.Block],
) -> Tuple[WsFrame, List[Any]]:
    """A warp-specialized kernel's body: the prologue (:func:`declare_ws`), the barriers'
    initialization (:func:`barrier_init_ir`), then warpgroup 0 the producer
    (:func:`producer_ir`) and the others ``consumer(F)`` (:func:`consumer_ir` with the
    kernel's k-tile); in a cluster, a final cluster barrier (no CTA exits while a peer may
    still arrive on its barriers).  Returns the frame and the statements.  The arguments
    are :func:`declare_ws`'s."""
    F, body = declare_ws(cfg, prob, a, b, ep, desc, tx)
    body += stage_in_ir(F)
    body += barrier_init_ir(F)
    producer = producer_ir(F)
    body.append(kir.If(F.E.wg.eq(0), producer, consumer(F)))
    if F.CL > 1:
        body.append(kir.ClusterSync("no CTA leaves while a peer may still arrive on its barriers"))
    return F, body


def _ws_description(F: WsFrame) -> Tuple[str, ...]:
    cfg, prob, CL = F.cfg, F.prob, F.CL
    return (
        "",
        f"wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]",
        f"A {prob.a_major}-major, B {prob.b_major}-major (TMA tensor maps);",
        f"{prob.dtype} in, {acc_type(prob)} accumulate, {prob.out} out",
        f"persistent, warp-specialized: 1 producer warpgroup (TMA, 40 registers) + {F.CW} consumer",
        f"warpgroup(s) (wgmma, {F.regs} registers); block {cfg.bm}x{cfg.bn}x{cfg.bk}, {F.S}-stage",
        "full/empty mbarrier pipeline, epilogue through a swizzled shared-memory buffer",
        f"{CL}-CTA clusters: the B tile is multicast, each CTA loading half of it"
        if CL > 1
        else "no cluster",
    )


def _source_ws_ir(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    ep: Dict[str, Any],
    desc: Dict[str, Tuple[int, int, int]],
    tx: int,
    name: str,
) -> kir.Kernel:
    """The warp-specialized persistent kernel: warpgroup 0 is the producer (one thread
    issues the TMA boxes; registers given back with setmaxnreg.dec), warpgroups 1.. are the
    consumers (setmaxnreg.inc; wgmma on their 64-row slice).  Stages pass through two
    mbarriers each: ``full`` (the TMA transaction bytes landed) and ``empty`` (every
    consumer warp's wgmma reading the stage completed).  Each CTA walks the tiles
    ``blockIdx.x, blockIdx.x + gridDim.x, ...`` in the proven grouped order; the epilogue of
    one tile overlaps the producer's loads of the next.

    With ``cluster=2`` the two CTAs of a cluster take vertically adjacent tiles (rows
    ``2 tp`` and ``2 tp + 1`` of tile column ``tn``) and share the B tile: each loads its
    own A tile and half of B's boxes, multicast into both CTAs' stages; a stage is free
    again once the consumers of *both* CTAs released it (they arrive on both CTAs' empty
    barriers).  ``tx`` is the proven per-stage transaction count."""
    F, body = ws_body_ir(cfg, prob, a, b, ep, desc, tx, _consumer_ir)
    helpers = ("tma",) + (("cluster",) if F.CL > 1 else ()) + ("named_sync", "wgmma")
    return kernel90(
        cfg,
        prob,
        a,
        b,
        desc,
        name,
        F.E,
        body,
        _ws_description(F),
        tuple(ep["fns"].values()),
        helpers,
        tma=True,
        devfns=(schedule_devfn(cfg.group_m),),
    )


def epilogue_order(k: kir.Kernel, log: ProofLog) -> None:
    """The staged epilogue's synchronization, read from the IR: one shared buffer per
    consumer warpgroup is written (register pairs) and read (16-byte vectors) chunk after
    chunk, so the chunk loop's body must be *writes, barrier, reads, barrier* at its top
    level -- no read before its chunk is fully written (read-after-write), no write before
    the previous chunk is fully read (write-after-read); a barrier inside a condition or a
    nested statement does not count (and fails the uniformity proof besides)."""

    def both(n: Any) -> bool:
        kinds = set()
        for x in kir.walk(n):
            if isinstance(x, kir.Assign) and isinstance(x.lhs, kir.Mem) and x.lhs.space == "shared":
                kinds.add("W")
            elif isinstance(x, kir.Decl) and isinstance(x.init, kir.Mem) and x.init.space == "shared":
                kinds.add("R")
        return len(kinds) == 2

    cands = [n for n in kir.walk(k.body) if isinstance(n, kir.For) and both(n.body)]
    loops = [n for n in cands if not any(m is not n and any(x is m for x in kir.walk(n.body)) for m in cands)]
    if len(loops) != 1:
        raise ProofFailedError(
            f"kernel IR: {len(loops)} epilogue chunk loops (expected 1)",
            condition="epilogue order",
            witness=len(loops),
        )
    seq: List[str] = []
    for s in loops[0].body.body:
        if isinstance(s, kir.NamedBarrier):
            ev = "S"
        else:
            kinds = set()
            for n in kir.walk(s):
                if isinstance(n, kir.Assign) and isinstance(n.lhs, kir.Mem) and n.lhs.space == "shared":
                    kinds.add("W")
                elif isinstance(n, kir.Decl) and isinstance(n.init, kir.Mem) and n.init.space == "shared":
                    kinds.add("R")
            if len(kinds) != 1:
                continue
            ev = kinds.pop()
        if not seq or seq[-1] != ev:
            seq.append(ev)
    if seq != ["W", "S", "R", "S"]:
        raise ProofFailedError(
            f"kernel IR: the epilogue chunk loop does {' '.join(seq)}, not writes, barrier, reads, barrier",
            condition="epilogue order",
            witness="".join(seq),
        )
    log.add(
        "protocol",
        "epilogue buffer (order read from the IR): each chunk is written, a "
        "warpgroup barrier, read, a barrier -- no read before its chunk is "
        "written, no write before the previous chunk is read; both barriers "
        "at the top level of the chunk loop",
        "exhaustive",
        len(seq),
    )


_RINGS = {"full0": "full", "empty0": "empty"}


@dataclass
class _MbarOps:
    """The warp-specialized kernel's mbarrier operations, read from its IR: per ring
    (``full``, ``empty``) the init counts and wait parities, the consumers' local and remote
    releases (node, guards, loops), the transaction bytes announced, the loop each wait is
    in, and the number of operations read."""

    inits: Dict[str, List[int]] = field(default_factory=lambda: {"full": [], "empty": []})
    waits: Dict[str, List[int]] = field(default_factory=lambda: {"full": [], "empty": []})
    local: List[Any] = field(default_factory=list)
    remote: List[Any] = field(default_factory=list)
    txs: List[int] = field(default_factory=list)
    waited_in: List[Tuple[str, Any]] = field(default_factory=list)
    n: int = 0
    held: List[bool] = field(default_factory=list)


def protocol_ir(k: kir.Kernel, cfg: Sm90Config, tx: int, log: ProofLog) -> Tuple[Dict[str, Any], int]:
    """The mbarrier protocol of the warp-specialized kernel, read from its IR nodes: the
    parities of the producer's wait on ``empty`` and the consumers' wait on ``full`` (each
    on the stage of a ring counter that advances once per k-tile), the arrival counts the
    barriers are initialized with, the transaction bytes, and the release sites (after each
    batch's ``wait_group 1`` inside the k-loop and after the tile's ``wait_group 0``; local,
    and remote on the peer CTA).  Checked: ``full`` expects the producer's one arrival,
    ``empty`` exactly the arrivals the consumer warps make -- counted from the guards of the
    arrive nodes over every thread of the CTA.  Returns the model's parameters and the
    number of mbarrier operations covered."""
    ops = _read_mbar_ops(k, cfg)
    _check_one_init_and_wait(ops, tx)
    same = bool(ops.held) and all(ops.held)
    remote_release = _check_release_sites_same(k, ops) if same else _check_release_sites(ops)
    e_init = _check_arrival_counts(k, cfg, ops, remote_release)
    proto: Dict[str, Any] = {
        "producer_parity": ops.waits["empty"][0],
        "consumer_parity": ops.waits["full"][0],
        "remote_release": remote_release,
    }
    where = (
        "each k-tile releases its own stage after its wgmma.wait_group 0, none at the tile end"
        if same
        else "releases after each batch and at the tile end"
    )
    log.add(
        "equal",
        f"protocol read from the IR: producer waits empty with parity ph ^ "
        f"{proto['producer_parity']}, consumers wait full with ph ^ "
        f"{proto['consumer_parity']} (stage and phase of ring counters advanced "
        f"once per k-tile); full expects 1 arrival (+ {tx} TMA bytes), empty "
        f"expects {e_init} = the threads passing the release guards x "
        f"{cfg.cluster if remote_release else 1} CTA(s) releasing into it; "
        f"{where}",
        "exhaustive",
        ops.n,
    )
    if same:
        proto["release_lag"] = 0
    return proto, ops.n


def _check_release_sites_same(k: kir.Kernel, ops: _MbarOps) -> bool:
    """``release="same"``: the consumers release in the k-loop only (locally, and in a
    cluster remotely too), each arrive after a ``wgmma.wait_group 0`` that follows every
    wgmma of the loop body before it, and no wgmma after it in the body (the stage is not
    read once released).  Returns whether they release remotely."""
    consumer_loop = [lp for nm, lp in ops.waited_in if nm == "full"][0]
    sites = ops.local + ops.remote
    if (
        len(ops.local) != 1
        or len(ops.remote) not in (0, 1)
        or any(lp[-1] is not consumer_loop for _s, _g, lp in sites)
    ):
        raise ProofFailedError(
            f"release sites: {len(ops.local)} local, {len(ops.remote)} remote, expected one local (and in a "
            "cluster one remote) release in the k-loop and none after it",
            condition="release sites",
            witness=(len(ops.local), len(ops.remote)),
        )
    order = list(kir.walk(consumer_loop.body))  # pre-order: program order of the statements
    for s, _g, _lp in sites:
        at = next(i for i, x in enumerate(order) if x is s)
        waits = [i for i, x in enumerate(order[:at]) if isinstance(x, kir.WgmmaWait)]
        mmas = [i for i, x in enumerate(order) if isinstance(x, kir.Wgmma)]
        if not waits or order[waits[-1]].n != 0 or any(i > waits[-1] for i in mmas):
            raise ProofFailedError(
                "a stage is released in its own k-tile before wgmma.wait_group 0 completed its wgmmas "
                "(or a wgmma follows the release)",
                condition="release after the stage's wgmmas complete",
            )
    return len(ops.remote) == 1


def ring_of(k: kir.Kernel, bar: kir.Expr, rings: Dict[str, str] = _RINGS) -> Tuple[str, kir.Expr]:
    """The ring an mbarrier operation addresses (``rings``: barrier array name -> ring name;
    the ws kernel's ``full`` / ``empty``), and its stage index."""
    r = obligations.resolve(bar, k)
    if not isinstance(r, kir.MbarRef) or r.base.name not in rings:
        raise ProofFailedError(
            "an mbarrier operation on an unknown barrier",
            condition="protocol of the IR",
            witness=kir.emit_expr_safe(bar),
        )
    return rings[r.base.name], r.idx


def wait_parity(e: kir.Expr, ph: kir.Var) -> int:
    """The parity a wait uses relative to its ring's phase ``ph`` (``ph`` or ``ph ^ k``)."""
    if e is ph:
        return 0
    if isinstance(e, kir.Bin) and e.op == "^" and e.a is ph and isinstance(e.b, kir.Const):
        return int(e.b.value) & 1
    raise ProofFailedError(
        f"wait parity {kir.emit_expr_safe(e)} is not the ring phase (^ k)",
        condition="wait parity",
        witness=kir.emit_expr_safe(e),
    )


def _read_mbar_ops(k: kir.Kernel, cfg: Sm90Config) -> _MbarOps:
    """Every mbarrier operation of ``k`` in program order, each checked where it stands: the
    inits once per stage, the waits on a ring counter advanced in their k-loop, expect_tx on
    ``full`` only, the arrives releasing the previous stage of ``empty``."""
    ops = _MbarOps()
    rings = {id(n.stage): n for n in kir.walk(k.body) if isinstance(n, kir.RingAdvance)}
    for s, guards, loops in obligations.mbarrier_ops(k):
        ops.n += 1
        if isinstance(s, kir.MbarInit):
            name, idx = ring_of(k, s.bar)
            if not (
                loops
                and idx is loops[-1].var
                and isinstance(loops[-1].stop, kir.Const)
                and loops[-1].stop.value == cfg.stages
            ):
                raise ProofFailedError(
                    f"{name} barriers are not initialized for each of the {cfg.stages} stages",
                    condition="barrier init",
                    witness=name,
                )
            ops.inits[name].append(s.count)
        elif isinstance(s, kir.MbarWait):
            name, idx = ring_of(k, s.bar)
            rg = rings.get(id(idx))
            if (
                rg is None
                or rg.n != cfg.stages
                or rg.phase is None
                or not loops
                or not any(x is rg for x in kir.walk(loops[-1].body))
            ):
                raise ProofFailedError(
                    f"the wait on {name} is not on a stage ring counter that advances in its k-loop",
                    condition="protocol of the IR",
                    witness=name,
                )
            ops.waits[name].append(wait_parity(s.parity, rg.phase))
            ops.waited_in.append((name, loops[-1]))
        elif isinstance(s, kir.MbarExpectTx):
            name, _ = ring_of(k, s.bar)
            if name != "full":
                raise ProofFailedError(
                    "expect_tx on an empty barrier", condition="protocol of the IR", witness=name
                )
            ops.txs.append(s.nbytes)
        elif isinstance(s, kir.MbarArrive):
            name, idx = ring_of(k, s.bar)
            # the previous stage (``prev``), or the stage the k-tile holds: the ring counter
            # of the consumers' full wait in the same loop (consumer_ir(release="same"))
            held = (
                isinstance(idx, kir.Var)
                and id(idx) in rings
                and bool(loops)
                and any(
                    isinstance(w, kir.MbarWait)
                    and ring_of(k, w.bar)[0] == "full"
                    and ring_of(k, w.bar)[1] is idx
                    for w in kir.walk(loops[-1].body)
                )
            )
            if name != "empty" or not isinstance(idx, kir.Var) or (idx.name != "prev" and not held):
                raise ProofFailedError(
                    "a consumer arrive is not a release of the previous stage",
                    condition="protocol of the IR",
                    witness=name,
                )
            ops.held.append(held)
            (ops.remote if s.cta is not None else ops.local).append((s, guards, loops))
    return ops


def _check_one_init_and_wait(ops: _MbarOps, tx: int) -> None:
    """One init and one wait per ring, and the announced bytes are the bytes that land."""
    for name in ("full", "empty"):
        if len(ops.inits[name]) != 1 or len(ops.waits[name]) != 1:
            raise ProofFailedError(
                f"expected one init and one wait of the {name} barriers, found "
                f"{len(ops.inits[name])} and {len(ops.waits[name])}",
                condition="protocol of the IR",
                witness=name,
            )
    if ops.txs != [tx]:
        raise ProofFailedError(
            f"the producer announces {ops.txs} bytes per stage, {tx} land",
            condition="transaction bytes",
            witness=tuple(ops.txs),
        )


def _check_release_sites(ops: _MbarOps) -> bool:
    """The consumers release in the k-loop (after the batch's wait_group 1) and once after
    it, locally and -- in a cluster -- remotely too.  Returns whether they release remotely."""
    consumer_loop = [lp for nm, lp in ops.waited_in if nm == "full"][0]

    def sites(lst: List[Any]) -> Tuple[int, int]:
        inside = sum(1 for _s, _g, lp in lst if lp and lp[-1] is consumer_loop)
        after = sum(
            1
            for _s, _g, lp in lst
            if lp and lp[-1] is not consumer_loop and any(x is consumer_loop for x in kir.walk(lp[-1].body))
        )
        return inside, after

    li, la = sites(ops.local)
    ri, ra = sites(ops.remote)
    if (
        (li, la) != (1, 1)
        or len(ops.local) != 2
        or (ri, ra) not in ((0, 0), (1, 1))
        or len(ops.remote) not in (0, 2)
    ):
        raise ProofFailedError(
            f"release sites: {li} local in the k-loop, {la} after it, "
            f"{len(ops.remote)} remote (expected 1, 1 and 0 or 2)",
            condition="release sites",
            witness=(li, la, len(ops.remote)),
        )
    return len(ops.remote) == 2


def _check_arrival_counts(k: kir.Kernel, cfg: Sm90Config, ops: _MbarOps, remote_release: bool) -> int:
    """``full`` expects the producer's one arrival, ``empty`` the arrivals the consumer warps
    make per phase (the threads passing the release guards, times the CTAs releasing into
    it).  Returns ``empty``'s init count."""
    made = None
    tid = next(
        x for x in kir.walk(k.body) if isinstance(x, kir.Var) and x.builtin and x.name == "threadIdx.x"
    )
    for _s, guards, _lp in ops.local:
        cnt = _threads_passing(k, guards, tid)
        made = cnt if made is None else made
        if cnt != made:
            raise ProofFailedError(
                "the two release sites arrive from different threads",
                condition="arrival counts",
                witness=(cnt, made),
            )
    if made is None:  # the site count was checked above: one local release in the k-loop
        raise ProofFailedError("no release site arrives", condition="release sites")
    made = int(made) * (cfg.cluster if remote_release else 1)
    f_init, e_init = ops.inits["full"][0], ops.inits["empty"][0]
    if f_init != 1:
        raise ProofFailedError(
            f"full barriers expect {f_init} arrivals, the producer makes 1",
            condition="arrival counts",
            witness=f_init,
        )
    if e_init != made:
        raise ProofFailedError(
            f"empty barriers expect {e_init} arrivals per phase, the consumer warps make {made}",
            condition="arrival counts",
            witness=(e_init, made),
        )
    return e_init


def _threads_passing(k: kir.Kernel, guards: Any, tid: kir.Var) -> int:
    """How many threads of the CTA pass the thread-only conjuncts of ``guards``."""
    t = np.arange(k.threads)
    ok = np.ones(k.threads, dtype=bool)
    an = obligations.analysis(k)
    for g, sense in guards:
        parts = _conjuncts(g, an) if sense else [g]
        for p in parts:
            fv = obligations.free_vars(p, an)
            if fv and all(v is tid for v in fv):
                val = (
                    evaluate.eval_expr(
                        p,
                        evaluate.Ctx(
                            {id(tid): t},
                            {i: e for i, e in an.defs.items() if an.inlinable(an.vars[i])},
                            an.tables,
                            k.sizes,
                        ),
                    )[0]
                    != 0
                )
                ok &= val if sense else ~val
    return int(ok.sum())


def _conjuncts(g: kir.Expr, an: obligations.Analysis) -> List[kir.Expr]:
    if isinstance(g, kir.Bin) and g.op == "&&":
        return _conjuncts(g.a, an) + _conjuncts(g.b, an)
    return [g]


def prove_ws_protocol(k: kir.Kernel, cfg: Sm90Config, tx: int, log: ProofLog, ctas: int) -> int:
    """The warp-specialized kernel's protocol, read from the IR ``k``: the mbarrier
    operations (:func:`protocol_ir`) model-checked over every interleaving for ``ctas``
    CTAs per cluster, and the epilogue's order (:func:`epilogue_order`).  Returns the
    barrier operations covered (``finish``'s ``protocol``)."""
    proto, n = protocol_ir(k, cfg, tx, log)
    epilogue_order(k, log)
    prove_pipeline(cfg.stages, cfg.warpgroups, log, ctas=ctas, **proto)
    return n


def build_ws_kernel(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    desc: Dict[str, Any],
    name: str,
    title: str,
    log: ProofLog,
) -> Tuple[kir.Kernel, str]:
    """The warp-specialized persistent kernel of ``cfg`` as IR and its source: the
    scheduler's, the batch schedule's and the staged epilogue's proofs, the cluster's
    transaction count, then the IR built, its protocol read back and model-checked and its
    accesses proven before the source is printed (:func:`finish`)."""
    log.extend(ProofLog(list(schedule_proofs(cfg.group_m, cfg.cluster))))
    if prob.batch:
        prove_batch_schedule(cfg.group_m, log, cluster=cfg.cluster)
    ep = plan_epilogue(prob, log)
    tx = (
        _prove_cluster_tx(a, b, cfg.cluster, log)
        if cfg.cluster > 1
        else 2 * (a.loaded_elems + b.loaded_elems)
    )
    if cfg.stage_in:  # the grid barrier's protocol, for grids of 1-4 CTAs over 3 launches
        for ctas in range(1, 5):
            check_grid_sync(ctas, 3, log)
    ir = _source_ws_ir(cfg, prob, a, b, ep, desc, tx, name)
    check_batch_coordinates(ir, prob, log)
    src = finish(ir, log, title, lambda k: prove_ws_protocol(k, cfg, tx, log, cfg.cluster))
    return ir, src
