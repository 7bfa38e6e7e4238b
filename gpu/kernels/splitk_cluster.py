"""Split-K reduced inside a thread-block cluster through distributed shared memory.

``SplitKConfig(base, S, reduction="cluster")`` (``S`` in 2..:data:`MAX_CLUSTER`, outputs of
at most :data:`CLUSTER_ROWS` rows): a cluster of ``S`` CTAs computes one output tile, CTA
``u`` of the grid being unit ``u`` = (tile ``u / S``, k-chunk ``u % S``), one unit per CTA
(the grid is ``tiles * S`` CTAs, clusters ``(S, 1, 1)``).  There is no workspace in global
memory and no second kernel:

1. each CTA accumulates its k-chunk in registers (the warp-specialized mainloop, unchanged)
   and its staged epilogue stores the f32 partial's first :data:`CLUSTER_ROWS` rows into its
   own shared buffer ``P`` (a region of its own, after the epilogue buffers: it aliases no
   stage);
2. a cluster barrier (``barrier.cluster.arrive.release`` / ``wait.acquire``, every thread of
   every CTA, at the top level) makes every CTA's ``P`` visible to the cluster;
3. CTA rank ``q`` (``%cluster_ctarank``) sums the column slice ``[q * bn / S, (q + 1) * bn /
   S)`` of the tile, reading the ``S`` partials in rank order ``0, 1, ..`` from the peers'
   shared memory (``mapa`` + ``ld.shared::cluster``; a fixed order: deterministic),
   converts and stores its slice of ``C``;
4. a second cluster barrier before any CTA exits: a CTA's shared memory stays alive while
   its peers read it.

What is proven before emission, besides every obligation of the rewritten IR (addresses
and bounds of the ``P`` stores, of the remote loads and of the ``C`` stores, the mbarrier
pipeline, the staged epilogue): the unit map (:func:`prove_cluster_split`), the k-chunk
partition, the slices (:func:`prove_slices`: evaluated from the reduction's own IR
expressions, the slices of the ``S`` ranks partition the tile's ``CLUSTER_ROWS x bn``
elements and each element sums ranks ``0..S-1`` once each), the shared memory budget, and
the ordering (:func:`check_cluster`, an explicit-state model over every interleaving of the
``S`` CTAs, run on the program read from the IR by :func:`cluster_program_ir`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from layoutproof import Layout

from ..config import OUT_DTYPES, SMEM_LIMIT, GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..proof import evaluate, kir
from ..proof.record import ProofLog
from .splitk import (
    CLUSTER_ROWS,
    SplitKKernels,
    cluster_partial_stride,
    float4_sum_ir,
    k_bounds_ir,
    prove_k_partition,
)
from .toolkit import GemmKernel, addr_of, finish
from .variant import base_plan_proofs, find_decl, find_param, unit_rewrite
from .wgmma import generate_sm90
from .wgmma_ws import prove_ws_protocol

_WHAT = "cluster split-K rewrite"

__all__ = [
    "CLUSTER_ROWS",
    "MAX_CLUSTER",
    "PARTIAL_STORE",
    "PARTIAL_READ",
    "OUT_STORE",
    "partial_bytes",
    "cluster_devfn",
    "prove_cluster_split",
    "cluster_ir",
    "cluster_program_ir",
    "check_cluster",
    "prove_slices",
    "prove_cluster_protocol",
]

#: the largest portable cluster
MAX_CLUSTER = 8
#: claim names (the model reads the program by them)
PARTIAL_STORE = "cluster partial store P[r, c] (own shared memory)"
PARTIAL_READ = "cluster partial load P[r, c] of rank s (distributed shared memory)"
OUT_STORE = "cluster split-K C element store C[r, c]"


def partial_bytes(bn: int, S: int) -> int:
    """Bytes of the partial buffer: ``CLUSTER_ROWS`` rows of ``bn`` f32 at the row stride
    :func:`~layoutproof.gpu.kernels.splitk.cluster_partial_stride`."""
    return 4 * CLUSTER_ROWS * cluster_partial_stride(bn, S)


# ============================================================================ the unit map
def _csplit_ir(S: int) -> Tuple[Tuple[kir.Var, ...], List[kir.Stmt]]:
    """``lp_csplit(u, &tile, &sk)``: unit (CTA) u -> (tile u / S, chunk u % S): the ``S``
    CTAs of cluster ``u / S`` (a 1-D grid with clusters ``(S, 1, 1)``) share one tile."""
    u, tile, sk = kir.Var("u"), kir.Var("tile"), kir.Var("sk")
    return (u, tile, sk), [kir.Assign(tile, u / S), kir.Assign(sk, u % S)]


def cluster_devfn(S: int) -> Tuple[str, str, kir.Block]:
    return ("lp_csplit", "int u, int& tile, int& sk", kir.block(*_csplit_ir(S)[1]))


def prove_cluster_split(S: int, log: ProofLog, max_tiles: int = 160) -> None:
    """``lp_csplit`` maps the CTAs ``[0, tiles * S)`` one-to-one onto (tile, chunk) pairs, and
    the ``S`` CTAs of each cluster (``u / S`` equal) have one tile and the chunks ``0..S-1``
    (C semantics, every ``tiles <= max_tiles``)."""
    n = max_tiles * S
    u = np.arange(n)
    env: Dict[str, Any] = {"u": u}
    for st in _csplit_ir(S)[1]:
        if not isinstance(st, kir.Assign) or not isinstance(st.lhs, kir.Var):
            raise ProofFailedError("lp_csplit is not a list of assignments", condition="cluster unit map")
        env[st.lhs.name] = evaluate.ev(st.rhs, env)
    tile, sk = np.asarray(env["tile"]), np.asarray(env["sk"])
    ok = (tile == u // S) & (sk >= 0) & (sk < S)
    pairs = tile * S + sk
    if not ok.all() or np.unique(pairs).size != n:
        i = int(np.flatnonzero(~ok)[0]) if not ok.all() else 0
        raise ProofFailedError(
            f"lp_csplit: CTA {i} -> (tile {int(tile[i])}, chunk {int(sk[i])}) is not its cluster's tile, "
            "or a (tile, chunk) is hit twice",
            condition="cluster unit map",
            witness=(S, i),
        )
    log.add(
        "bijective",
        f"cluster split-K unit map lp_csplit: u -> (u / {S}, u % {S}) is a bijection [0, tiles*{S}) -> "
        f"[0, tiles) x [0, {S}) whose clusters (u / {S}) each hold one tile and chunks 0..{S - 1} "
        f"(every tiles <= {max_tiles}, C semantics)",
        "exhaustive",
        n,
    )


# ============================================================================ helpers
def _without(e: Optional[kir.Expr], v: kir.Var, what: str) -> kir.Expr:
    """``e`` with the variable ``v`` (a term of its sum) replaced by 0; refused unless ``e``
    reads ``v`` exactly once as a term of its top-level sum."""
    terms: List[kir.Expr] = []

    def flat(x: kir.Expr) -> None:
        if isinstance(x, kir.Bin) and x.op == "+":
            flat(x.a)
            flat(x.b)
        else:
            terms.append(x)

    if e is None:
        raise ProofFailedError(
            f"cluster split-K rewrite: {what} has no definition", condition="cluster split-K rewrite"
        )
    flat(e)
    if sum(1 for t in terms if t is v) != 1 or any(n is v for t in terms if t is not v for n in kir.walk(t)):
        raise ProofFailedError(
            f"cluster split-K rewrite: {what} is not {v.name} + an offset in the tile",
            condition="cluster split-K rewrite",
        )
    return kir.rewrite(e, lambda n: kir.Const(0) if n is v else None)


_CVT = {"f16": "__float2half_rn", "bf16": "__float2bfloat16_rn", "f32": None}


# ============================================================================ the rewrite
@dataclass(frozen=True)
class _ClusterEnv:
    """What the phases of :func:`cluster_ir` share: the sizes, the base kernel's variables
    (found once by :func:`_declare_cluster`) and the partial buffer's layout and claims."""

    S: int
    bm: int
    bn: int
    CW: int
    out: str
    ob: int
    tiles: kir.Var
    KT: kir.Var
    wg: kir.Var
    tid: kir.Var
    grid_m: kir.Var
    grid_n: kir.Var
    C: kir.Var
    M: kir.Var
    N: kir.Var
    ldc: kir.Var
    Cd: kir.Var
    units: kir.Var
    PS: int
    PL: Layout
    parena: kir.Expr
    pregion: Tuple[kir.Expr, int]
    pb: kir.Var
    pb_decl: kir.Decl


def _declare_cluster(
    base: kir.Kernel, S: int, bm: int, bn: int, warpgroups: int, e_off: int, out: str
) -> _ClusterEnv:
    """The base kernel's variables the rewrite reads, and the partial buffer: (R, bn) f32,
    row-major, in this CTA's shared memory after the epilogue buffers."""
    if base.cluster != 1:
        raise ProofFailedError(
            "cluster split-K: the base kernel has clusters", condition="cluster split-K rewrite"
        )
    if bn % (4 * S):
        raise GemmConfigError(f"cluster split-K: bn={bn} is not a multiple of 4 * S = {4 * S}")
    R = CLUSTER_ROWS
    tiles, KT = find_decl(base.body, "tiles", _WHAT), find_decl(base.body, "KT", _WHAT)
    smem, sbase, s0 = (
        find_decl(base.body, "lp_smem", _WHAT),
        find_decl(base.body, "sbase", _WHAT),
        find_decl(base.body, "s0", _WHAT),
    )
    wg, tid = find_decl(base.body, "wg", _WHAT), find_decl(base.body, "tid", _WHAT)
    grid_m, grid_n = find_decl(base.body, "grid_m", _WHAT), find_decl(base.body, "grid_n", _WHAT)
    C, M, N, ldc = (find_param(base, x, _WHAT) for x in ("C", "M", "N", "ldc"))
    p_off = e_off + warpgroups * 8192
    PS = cluster_partial_stride(bn, S)
    pb = kir.Var("pb", "float*")
    pb_decl = kir.Decl(
        pb,
        kir.Reinterpret("float*", smem + (s0 - sbase) + p_off),
        const=True,
        comment=f"this CTA's f32 partial: {R} rows x {bn} columns",
    )
    parena = addr_of(smem) + (s0 - sbase) + p_off
    return _ClusterEnv(
        S=S,
        bm=bm,
        bn=bn,
        CW=warpgroups,
        out=out,
        ob=OUT_DTYPES[out][1],
        tiles=tiles,
        KT=KT,
        wg=wg,
        tid=tid,
        grid_m=grid_m,
        grid_n=grid_n,
        C=C,
        M=M,
        N=N,
        ldc=ldc,
        Cd=kir.Var("C", "lp_d_t*"),
        units=kir.Var("units"),
        PS=PS,
        PL=Layout((R, bn), (PS, 1)),
        parena=parena,
        pregion=(parena, partial_bytes(bn, S)),
        pb=pb,
        pb_decl=pb_decl,
    )


def _tile_loops(base: kir.Kernel, E: _ClusterEnv) -> List[kir.For]:
    """The producer's and the consumers' tile loops of the base kernel."""
    loops = [
        n for n in kir.walk(base.body) if isinstance(n, kir.For) and n.stop is E.tiles and n.cond is not None
    ]
    if len(loops) != 2:
        raise ProofFailedError(
            f"cluster split-K rewrite: expected the producer's and the consumers' tile loops, "
            f"found {len(loops)}",
            condition="cluster split-K rewrite",
        )
    return loops


def _partial_stores(body: kir.Block, m0: kir.Var, n0: kir.Var, E: _ClusterEnv) -> kir.Block:
    """The consumers' staged-epilogue store loop, its ``C`` store replaced by the store of the
    tile's first ``R`` rows into this CTA's partial buffer."""
    R = CLUSTER_ROWS
    vloops = [
        n
        for n in kir.walk(body)
        if isinstance(n, kir.For)
        and len(n.body.body) == 4
        and isinstance(n.body.body[3], kir.If)
        and any(
            isinstance(x, kir.Mem) and x.claim.what.startswith("C ") and "store" in x.claim.what
            for x in kir.walk(n.body.body[3])
        )
    ]
    if len(vloops) != 1:
        raise ProofFailedError(
            f"cluster split-K rewrite: expected one staged-epilogue store loop, found {len(vloops)}",
            condition="cluster split-K rewrite",
        )
    vl = vloops[0]
    dr, dc, dv = vl.body.body[0], vl.body.body[1], vl.body.body[2]
    if not (isinstance(dr, kir.Decl) and isinstance(dc, kir.Decl) and isinstance(dv, kir.Decl)):
        raise ProofFailedError(
            "cluster split-K rewrite: the store loop does not declare r, c, val",
            condition="cluster split-K rewrite",
        )
    val = dv.var
    # the element's row and column inside the tile: r's and c's definitions without the
    # tile origin m0, n0 (which then cannot move the offset inside the buffer)
    lr = _without(dr.init, m0, "r")
    lc = _without(dc.init, n0, "c")
    claim = kir.Claim(
        PARTIAL_STORE,
        E.parena + 4 * kir.LayoutApp(E.PL, (lr, lc), "partial buffer (row, col)"),
        region=E.pregion,
        width=16,
    )
    pstore = kir.If(
        lr.lt(R),
        kir.block(kir.Assign(kir.Mem(E.pb + (lr * E.PS + lc), claim, vec="uint4", space="cluster"), val)),
        comment=f"the first {R} rows of the tile (the output has at most {R})",
    )
    new_v = replace(vl, body=kir.Block(vl.body.body[:3] + (pstore,), vl.body.bare))

    def swap(node: Any) -> Any:
        return new_v if node is vl else None

    return kir.rewrite(body, swap)


def _unit_loop(lp: kir.For, E: _ClusterEnv, k_bounds: Any) -> Tuple[kir.For, Tuple[Any, ...], bool]:
    """A tile loop rewritten to one unit per CTA (the loop runs once: ``t = blockIdx.x <
    units``, whatever the grid) over its k-chunk; a consumer loop also stores its partial.
    Returns the loop, the chunk's bounds and whether it is the consumers' loop."""
    t = lp.var
    tile, sk = kir.Var("tile"), kir.Var("sk")
    kb_e, ke_e = k_bounds(sk, E.KT, E.S)
    kb, ke = kir.Var("kb"), kir.Var("ke")
    consumer = any(isinstance(n, kir.NamedBarrier) for n in kir.walk(lp.body))
    m0 = find_decl(lp.body, "m0", _WHAT)
    n0 = find_decl(lp.body, "n0", _WHAT)
    body = kir.rewrite(lp.body, unit_rewrite(t, tile, E.KT, kb, ke, _WHAT))
    if consumer:
        body = _partial_stores(body, m0, n0, E)
    head: List[kir.Stmt] = [
        kir.Decl(tile),
        kir.Decl(sk),
        kir.Eval(kir.Call("lp_csplit", (t, tile, sk), "void")),
        kir.Decl(kb, kb_e, const=True, comment="this CTA's k-blocks [kb, ke)"),
        kir.Decl(ke, ke_e, const=True),
    ]
    new = replace(
        lp, stop=E.units, cond=t.lt(E.units), step=E.units, body=kir.Block(tuple(head) + body.body, body.bare)
    )
    return new, (sk, E.KT, kb_e, ke_e), consumer


def _reduce_loop(
    E: _ClusterEnv,
    q: kir.Var,
    m0: kir.Var,
    n0: kir.Var,
    rt: kir.Var,
    slice_step: Optional[int],
    ranks: Optional[Tuple[int, int]],
) -> kir.For:
    """Rank ``q``'s loop over its column slice: each thread sums 4 columns of a row over the
    ``S`` partials (ranks ``s_lo..s_hi-1``, in order), converts and stores them into ``C``."""
    R, S, M, N = CLUSTER_ROWS, E.S, E.M, E.N
    i, s, j = kir.Var("i"), kir.Var("s"), kir.Var("j")
    e, lr, lc = kir.Var("e"), kir.Var("lr"), kir.Var("lc")
    a = kir.Var("a", "float")
    CS = E.bn // S
    QS = CS // 4
    NT = 128 * E.CW
    ni = -(-R * QS // NT)
    s_lo, s_hi = ranks if ranks is not None else (0, S)
    rclaim = kir.Claim(
        PARTIAL_READ,
        E.parena + 4 * kir.LayoutApp(E.PL, (lr, lc), "partial buffer (row, col)"),
        region=E.pregion,
        width=16,
    )
    cvt = _CVT[E.out]
    x: kir.Expr = kir.Index(a, (j,))
    oval: kir.Expr = x if cvt is None else kir.Call(cvt, (x,), "lp_d_t")
    cidx = kir.Cast("long long", m0 + lr) * E.ldc + n0 + lc + j
    dclaim = kir.Claim(
        OUT_STORE, addr_of(E.Cd) + E.ob * cidx, bounds=((m0 + lr, M), (n0 + lc + j, N)), width=E.ob
    )
    load = kir.Mem(E.pb + (lr * E.PS + lc), rclaim, vec="float4", space="cluster", cta=s)
    read = float4_sum_ir(a, s, s_lo, s_hi, j, load)
    store = kir.For(
        j,
        kir.Const(0),
        kir.Const(4),
        kir.block(
            kir.If(
                (n0 + lc + j).lt(N),
                kir.block(
                    kir.Assign(
                        kir.Mem(E.Cd, dclaim, idx=kir.Cast("long long", m0 + lr) * E.ldc + n0 + lc + j), oval
                    )
                ),
            )
        ),
        unroll=True,
    )
    row = kir.If(
        (m0 + lr).lt(M),
        kir.block(kir.Decl(a, kir.FloatLit("{0.f, 0.f, 0.f, 0.f}"), dims=(4,)), read, store),
    )
    return kir.For(
        i,
        kir.Const(0),
        kir.Const(ni),
        kir.block(
            kir.Decl(e, i * NT + rt, const=True),
            kir.Decl(lr, e / QS, const=True),
            kir.Decl(lc, q * (CS if slice_step is None else slice_step) + 4 * (e % QS), const=True),
            kir.If(lr.lt(R), kir.block(row)),
        ),
        unroll=True,
    )


def _reduce_block(
    E: _ClusterEnv, q: kir.Var, slice_step: Optional[int], ranks: Optional[Tuple[int, int]]
) -> kir.If:
    """The reduction: the consumer warpgroups of rank ``q`` sum its column slice of the tile
    over the ``S`` partials, read in rank order from the peers' shared memory."""
    R, S, CS = CLUSTER_ROWS, E.S, E.bn // E.S
    ctile, csk = kir.Var("tile"), kir.Var("sk")
    tm, tn = kir.Var("tm"), kir.Var("tn")
    m0, n0 = kir.Var("m0"), kir.Var("n0")
    rt = kir.Var("rt")
    return kir.If(
        E.wg.ge(1),
        kir.block(
            kir.If(
                kir.BLOCK_IDX.lt(E.units),
                kir.block(
                    kir.Comment(
                        f"rank q sums columns [q * {CS}, (q + 1) * {CS}) of the tile's first {R} rows\n"
                        "over the "
                        f"{S} partials, read in rank order 0..{S - 1} from the peers' shared memory"
                    ),
                    kir.Decl(ctile),
                    kir.Decl(csk),
                    kir.Eval(kir.Call("lp_csplit", (kir.BLOCK_IDX, ctile, csk), "void")),
                    kir.Decl(tm),
                    kir.Decl(tn),
                    kir.Eval(kir.Call("lp_tile", (ctile, E.grid_m, E.grid_n, tm, tn), "void")),
                    kir.Decl(m0, tm * E.bm, const=True),
                    kir.Decl(n0, tn * E.bn, const=True),
                    kir.Decl(
                        rt, E.tid - 128, const=True, comment="the consumer threads 0..127 (x warpgroups)"
                    ),
                    _reduce_loop(E, q, m0, n0, rt, slice_step, ranks),
                ),
            )
        ),
        comment="the consumer warpgroups",
    )


def _cluster_kernel(
    base: kir.Kernel, E: _ClusterEnv, body: List[kir.Stmt], bare: bool, name: str
) -> kir.Kernel:
    """The rewritten kernel: the f32 output pointer becomes ``C`` of the output type, and the
    cluster's shape, device function, helpers and description are added."""
    R, S, CS, out = CLUSTER_ROWS, E.S, E.bn // E.S, E.out
    params = tuple((d.replace("lp_out_t", "lp_d_t"), E.Cd) if v is E.C else (d, v) for d, v in base.params)
    descr = base.description + (
        f"split-K in a cluster of {S} CTAs: CTA u = (tile u / {S}, chunk u % {S}) stores its f32 partial's",
        f"first {R} rows in its shared memory; after a cluster barrier rank q sums its {CS}-column slice",
        f"over the {S} partials (distributed shared memory, rank order), converts to {out} and stores C",
    )
    return replace(
        base,
        name=name,
        params=params,
        body=kir.Block(tuple(body), bare),
        cluster=S,
        devfns=base.devfns + (cluster_devfn(S),),
        description=descr,
        typedefs=base.typedefs + (("lp_d_t", OUT_DTYPES[out][0]),),
        sizes=dict(base.sizes, lp_d_t=E.ob, float=4, float4=16),
        helpers=base.helpers + ("cluster", "dsmem"),
    )


def cluster_ir(
    base: kir.Kernel,
    S: int,
    bm: int,
    bn: int,
    warpgroups: int,
    e_off: int,
    out: str,
    name: str,
    k_bounds: Any,
    *,
    first_sync: bool = True,
    exit_sync: bool = True,
    slice_step: Optional[int] = None,
    ranks: Optional[Tuple[int, int]] = None,
) -> Tuple[kir.Kernel, List[Tuple[Any, ...]]]:
    """The cluster split-K kernel from the warp-specialized kernel's IR ``base`` (f32
    output, no cluster).  ``e_off`` is the epilogue buffers' offset from ``s0``;
    ``k_bounds(sk, KT, S)`` the chunk bounds.  The keyword arguments exist for the planted
    bugs of the tests (a barrier left out, another slice width, a rank range cut short)."""
    E = _declare_cluster(base, S, bm, bn, warpgroups, e_off, out)
    # -- the tile loops: one unit per CTA; the consumers store their partial
    chunks: List[Tuple[Any, ...]] = []
    new_loops: Dict[int, kir.For] = {}
    stores = 0
    for lp in _tile_loops(base, E):
        new_loops[id(lp)], chunk, consumer = _unit_loop(lp, E, k_bounds)
        chunks.append(chunk)
        stores += consumer
    if stores != 1:
        raise ProofFailedError(
            "cluster split-K rewrite: no consumer tile loop", condition="cluster split-K rewrite"
        )
    body = kir.rewrite(base.body, lambda node: new_loops.get(id(node)))
    if any(n is E.C for n in kir.walk(body)):
        raise ProofFailedError(
            "cluster split-K rewrite: the f32 output pointer is still used",
            condition="cluster split-K rewrite",
        )
    # -- the reduction: rank q sums its column slice over the S partials, in rank order
    rank = kir.Var("rank", "unsigned", values=tuple(range(S)))
    q = kir.Var("crank", values=tuple(range(S)))
    tail: List[kir.Stmt] = []
    if first_sync:
        tail.append(
            kir.ClusterSync("every CTA's partial is stored (release) and the peers' are visible (acquire)")
        )
    tail.append(_reduce_block(E, q, slice_step, ranks))
    if exit_sync:
        tail.append(kir.ClusterSync("no CTA exits (its shared memory freed) while a peer reads its partial"))
    # -- the declarations: units after tiles, the partial buffer and the rank after wg
    out_body: List[kir.Stmt] = []
    for st in body.body:
        out_body.append(st)
        if isinstance(st, kir.Decl) and st.var is E.tiles:
            out_body.append(
                kir.Decl(E.units, E.tiles * S, const=True, comment=f"one CTA per (tile, k chunk), {S} chunks")
            )
        if isinstance(st, kir.Decl) and st.var is E.wg:
            out_body += [E.pb_decl, kir.ClusterRank(rank), kir.Decl(q, kir.Cast("int", rank), const=True)]
    out_body += tail
    return _cluster_kernel(base, E, out_body, body.bare, name), chunks


# ============================================================================ the slices
def _refused(msg: str, condition: str, witness: Any = None) -> ProofFailedError:
    return ProofFailedError(f"{msg} ({condition})", condition=condition, witness=witness)


def prove_slices(k: kir.Kernel, S: int, bn: int, log: ProofLog) -> None:
    """From the reduction's own IR: for every rank ``q < S``, consumer thread and iteration,
    the element ``(lr, lc .. lc + 3)`` it sums (under its guard ``lr < R``), and the rank
    loop around its remote loads.  The slices of the ``S`` ranks must cover every element of
    the ``CLUSTER_ROWS x bn`` partial exactly once, and each element must sum the ranks
    ``0, 1, .., S - 1`` in that order, each once."""
    R = CLUSTER_ROWS
    reads = [n for n in kir.walk(k.body) if isinstance(n, kir.Mem) and n.cta is not None]
    loops = [
        n for n in kir.walk(k.body) if isinstance(n, kir.For) and any(m in reads for m in kir.walk(n.body))
    ]
    rloops = [
        lp for lp in loops if any(isinstance(m, kir.Mem) and m.cta is lp.var for m in kir.walk(lp.body))
    ]
    if len(reads) != 1 or len(rloops) != 1:
        raise _refused(
            f"cluster reduction: {len(reads)} remote loads, {len(rloops)} rank loops (expected 1 and 1)",
            condition="each slice sums every rank",
        )
    rl = rloops[0]
    try:
        lo, hi, st = (int(evaluate.ev(x, {})) for x in (rl.start, rl.stop, rl.step))
    except Exception:
        lo, hi, st = -1, -1, -1
    if (lo, hi, st) != (0, S, 1):
        raise _refused(
            f"cluster reduction: the rank loop runs over range({lo}, {hi}, {st}), "
            f"not ranks 0..{S - 1} in order",
            condition="each slice sums every rank",
            witness=(lo, hi, st),
        )
    # the element each (rank, thread, iteration) sums: evaluate the declarations of e, lr, lc
    outer = [lp for lp in loops if lp is not rl]
    if len(outer) != 1:
        raise _refused(
            "cluster reduction: expected one loop over the slice", condition="slices partition the tile"
        )
    il = outer[0]
    decl = {st.var.name: st for st in il.body.body if isinstance(st, kir.Decl)}
    rt_d = [n for n in kir.walk(k.body) if isinstance(n, kir.Decl) and n.var.name == "rt"]
    if not all(x in decl for x in ("e", "lr", "lc")) or len(rt_d) != 1:
        raise _refused("cluster reduction: e, lr, lc, rt not declared", condition="slices partition the tile")
    guard = [st for st in il.body.body if isinstance(st, kir.If)]
    nt = k.threads - 128
    ii = np.arange(int(evaluate.ev(il.stop, {})))
    qq, tt, iv = np.meshgrid(np.arange(S), np.arange(128, 128 + nt), ii, indexing="ij")
    env: Dict[str, Any] = {"crank": qq, "tid": tt, il.var.name: iv}
    inits = [rt_d[0].init] + [decl[nm].init for nm in ("e", "lr", "lc")]
    if len(guard) != 1 or any(x is None for x in inits):
        raise _refused("cluster reduction: expected one guard", condition="slices partition the tile")
    for nm, x in zip(("rt", "e", "lr", "lc"), inits):
        if x is not None:
            env[nm] = evaluate.ev(x, env)
    lr, lc = np.asarray(env["lr"]), np.asarray(env["lc"])
    # the elements summed: where the slice loop's own guard holds (the IR's condition)
    live = np.broadcast_to(np.asarray(evaluate.ev(guard[0].cond, env), dtype=bool), lr.shape)
    hits = np.zeros((R, bn), dtype=np.int64)
    okc = (lc >= 0) & (lc + 3 < bn)
    if np.any(live & ~okc):
        raise _refused(
            "cluster reduction: a slice element lies outside the tile's columns",
            condition="slices partition the tile",
        )
    for jj in range(4):
        np.add.at(hits, (lr[live], lc[live] + jj), 1)
    bad = np.argwhere(hits != 1)
    if bad.size:
        rr, cc = (int(x) for x in bad[0])
        raise _refused(
            f"cluster reduction: element ({rr}, {cc}) of the tile is summed by {int(hits[rr, cc])} "
            f"(rank, thread) pairs, not 1",
            condition="slices partition the tile",
            witness=(rr, cc, int(hits[rr, cc])),
        )
    log.add(
        "bijective",
        f"cluster reduction slices (the IR's e, lr, lc over rank q < {S}, {nt} threads, "
        f"{ii.size} iterations): "
        f"every element of the {R} x {bn} partial is summed exactly once, over ranks 0..{S - 1} in order",
        "exhaustive",
        int(qq.size) * 4,
    )


# ============================================================================ the ordering model
#: the steps of one CTA's program, in program order (read from the IR)
STEPS = ("store", "sync", "read", "exit")


def cluster_program_ir(k: kir.Kernel) -> Tuple[str, ...]:
    """The CTA's program as the model sees it, read from the IR in program order: a
    ``store`` for the partial stores (the tile loop), ``sync`` for a top-level cluster
    barrier, ``read`` for the remote loads, ``exit`` at the end.  A cluster barrier or a
    remote load under a condition that does not hold in every thread is refused by the
    IR's uniformity obligation; here a barrier must be at the top level."""
    prog: List[str] = []
    for st in k.body.body:
        if isinstance(st, kir.ClusterSync):
            prog.append("sync")
            continue
        inner = list(kir.walk(st))
        if any(isinstance(n, kir.ClusterSync) for n in inner):
            raise ProofFailedError(
                "cluster split-K: a cluster barrier below the top level (cluster barrier at the top level)",
                condition="cluster barrier at the top level",
            )
        kinds = []
        for n in inner:
            if isinstance(n, kir.Mem) and n.claim.what == PARTIAL_STORE:
                kinds.append("store")
            elif isinstance(n, kir.Mem) and n.claim.what == PARTIAL_READ:
                kinds.append("read")
        for kd in kinds:
            if not prog or prog[-1] != kd:
                prog.append(kd)
    return tuple(prog) + ("exit",)


def check_cluster(S: int, program: Sequence[str], slices: Optional[Sequence[Set[int]]] = None) -> int:
    """Every interleaving of ``S`` CTAs running ``program`` (:data:`STEPS`).  A ``sync``
    is ``barrier.cluster.arrive.release`` + ``wait.acquire``: a CTA passes its ``g``-th
    barrier once every CTA that has not exited has arrived at it.  ``read`` reads the
    partial of every rank in ``slices[q]`` (default: all ranks) one at a time.  Properties,
    each by name:

    * ``partial released before a peer reads it``: rank ``s``'s partial is read only after
      ``s`` stored it and a barrier that ``s`` arrived at after its store has completed for
      the reader (release by ``s``, acquire by the reader);
    * ``no CTA exits while a peer reads its partial``;
    * ``each slice sums every rank``: a CTA's read step reads all ``S`` partials;
    * ``deadlock freedom``: every state that is not final has a step.

    Returns the number of states explored."""
    prog = tuple(program)
    if any(p not in STEPS for p in prog):
        raise ProofFailedError(f"cluster model: unknown step in {prog}", condition="cluster model")
    ranks = [set(range(S)) if slices is None else set(slices[q]) for q in range(S)]
    for q in range(S):
        if ranks[q] != set(range(S)):
            raise ProofFailedError(
                f"cluster split-K ({S} CTAs): rank {q} sums the partials of ranks {sorted(ranks[q])}, "
                "not all "
                f"(each slice sums every rank)",
                condition="each slice sums every rank",
                witness=q,
            )
    # state: per CTA (pc, sub, passed barriers, arrived barriers, store generation or -1)

    Start = tuple((0, 0, 0, 0, -1) for _ in range(S))
    seen = {Start}
    todo = [Start]
    order = [sorted(ranks[q]) for q in range(S)]

    def fail(msg: str, cond: str) -> None:
        raise ProofFailedError(
            f"cluster split-K ({S} CTAs): {msg} ({cond})", condition=cond, witness=(S, prog)
        )

    while todo:
        st = todo.pop()
        nxt = []
        for c in range(S):
            pc, sub, passed, arrived, sgen = st[c]
            if pc >= len(prog):
                continue
            step = prog[pc]
            cur = list(st)
            if step == "store":
                cur[c] = (pc + 1, 0, passed, arrived, arrived)
                nxt.append(tuple(cur))
            elif step == "sync":
                if arrived == passed:  # arrive (release)
                    cur[c] = (pc, 0, passed, arrived + 1, sgen)
                    nxt.append(tuple(cur))
                else:  # wait (acquire): every CTA not exited has arrived at this barrier
                    if all(st[d][0] >= len(prog) or st[d][3] >= arrived for d in range(S)):
                        cur[c] = (pc + 1, 0, passed + 1, arrived, sgen)
                        nxt.append(tuple(cur))
            elif step == "read":
                s = order[c][sub]
                ps, _, _, _, gs = st[s]
                if ps >= len(prog):
                    fail(
                        f"CTA {c} reads rank {s}'s partial after rank {s} exited",
                        "no CTA exits while a peer reads its partial",
                    )
                if gs < 0 or passed <= gs:
                    fail(
                        f"CTA {c} reads rank {s}'s partial before a barrier orders rank {s}'s store "
                        "before it",
                        "partial released before a peer reads it",
                    )
                cur[c] = (
                    (pc + 1, 0, passed, arrived, sgen)
                    if sub + 1 == len(order[c])
                    else (pc, sub + 1, passed, arrived, sgen)
                )
                nxt.append(tuple(cur))
            elif step == "exit":
                cur[c] = (len(prog), 0, passed, arrived, sgen)
                nxt.append(tuple(cur))
        if not nxt and any(x[0] < len(prog) for x in st):
            fail(f"no CTA can step in state {st}", "deadlock freedom")
        for ns in nxt:
            if ns not in seen:
                seen.add(ns)
                todo.append(ns)
    if "read" not in prog or "store" not in prog:
        fail(f"the program {prog} has no partial store or no read", "each slice sums every rank")

    return len(seen)


def prove_cluster_protocol(k: kir.Kernel, S: int, bn: int, log: ProofLog) -> None:
    """The ordering read from the IR (:func:`cluster_program_ir`) model-checked with 2, 3
    and 4 CTAs (and ``S``'s own count when it is at most 4), and the slices
    (:func:`prove_slices`)."""
    prog = cluster_program_ir(k)
    n = 0
    for c in sorted({2, 3, 4} | ({S} if S <= 4 else set())):
        n += check_cluster(c, prog)
    prove_slices(k, S, bn, log)
    log.add(
        "protocol",
        f"cluster split-K ordering {' -> '.join(prog)} (read from the IR): every interleaving of 2-4 CTAs "
        "reads each partial after its release and before its owner exits, and never deadlocks",
        "exhaustive",
        n,
    )


def kernel_name(cfg: Any, prob: Any, version: str) -> str:
    h = hashlib.sha256(f"{version}{cfg}{prob}".encode()).hexdigest()[:10]
    return f"lp_gemm_sm90_splitkc_{prob.key()}_{h}"


def check_smem(base_smem: int, bn: int, S: int) -> int:
    """Shared memory of the cluster kernel: the base kernel's plus the partial buffer
    (within :data:`SMEM_LIMIT`, else a :class:`GemmConfigError`)."""
    total = base_smem + partial_bytes(bn, S)
    if total > SMEM_LIMIT:
        raise GemmConfigError(
            f"cluster split-K: {base_smem} + {partial_bytes(bn, S)} bytes of shared memory "
            "(stages, epilogue, "
            f"partial buffer) exceed {SMEM_LIMIT}"
        )
    return total


# ============================================================================ generation
_MEMO: Dict[Tuple[Any, Any], Any] = {}


def generate_cluster(config: Any, problem: Any = None, *, memo: bool = True, **bugs: Any) -> Any:
    """Build, prove and emit the cluster split-K kernel for ``SplitKConfig(base, S,
    reduction="cluster")`` and ``problem`` (its ``out`` type is the kernel's output; the
    base kernel is built with f32 output for the partials).  Returns a
    :class:`~layoutproof.gpu.kernels.splitk.SplitKKernels` with no fix-up kernel."""

    cfg = config.validate()
    if cfg.reduction != "cluster":
        raise GemmConfigError(f"generate_cluster: reduction={cfg.reduction!r}, not 'cluster'")
    prob = (problem or GemmProblem("k", "k")).validate()
    key = (cfg, prob)
    if memo and not bugs and key in _MEMO:
        return _MEMO[key]
    S = cfg.splits
    b = cfg.base
    base_prob = replace(prob, out_dtype="f32")
    base = generate_sm90(b, base_prob, memo=memo)
    smem = check_smem(base.smem_bytes, b.bn, S)
    log = ProofLog(base_plan_proofs(base, b))
    prove_cluster_split(S, log)
    name = kernel_name(cfg, prob, "splitk-cluster-1")
    e_off = b.stages * (b.bm + b.bn) * b.bk * 2
    ir, chunks = cluster_ir(base.ir, S, b.bm, b.bn, b.warpgroups, e_off, prob.out, name, k_bounds_ir, **bugs)
    for sk, KT, kb, ke in chunks[:1]:
        prove_k_partition(S, log, kb, ke, sk, KT)
    if kir.emit_expr(chunks[0][2]) != kir.emit_expr(chunks[1][2]) or kir.emit_expr(
        chunks[0][3]
    ) != kir.emit_expr(chunks[1][3]):
        raise ProofFailedError(
            "cluster split-K: the producer's and the consumers' chunk bounds differ",
            condition="k chunks partition [0, KT)",
        )
    log.add(
        "bounds",
        f"cluster split-K shared memory: stages + epilogue buffers + the {CLUSTER_ROWS} x {b.bn} f32 partial "
        f"(row stride {cluster_partial_stride(b.bn, S)}) at offset {e_off + b.warpgroups * 8192} "
        f"of the aligned arena = {smem} bytes <= {SMEM_LIMIT}; the partial "
        "region is disjoint from the stages and the epilogue buffers (it starts where they end)",
        "exhaustive",
        1,
    )
    txs = [n.nbytes for n in kir.walk(ir.body) if isinstance(n, kir.MbarExpectTx)]
    if len(txs) != 1:
        raise ProofFailedError("cluster split-K: expected one expect_tx", condition="cluster split-K rewrite")
    tx = int(txs[0])

    def protocol(k: kir.Kernel) -> int:
        n = prove_ws_protocol(k, b, tx, log, 1)
        prove_cluster_protocol(k, S, b.bn, log)
        return n

    title = f"proven before emission ({cfg.key()}, {prob.key()})"
    src = finish(ir, log, title, protocol)
    gk = GemmKernel(base.config, prob, src, name, base.threads, smem, log, dict(base.swizzles), ir)
    out = SplitKKernels(cfg, prob, gk, None)
    if memo and not bugs:
        _MEMO[key] = out
    return out
