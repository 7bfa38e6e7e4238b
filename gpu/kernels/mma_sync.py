"""The proven mma.sync GEMM: layouts of the algebra -> proofs -> CUDA C source.

:func:`generate` builds one kernel for a :class:`~layoutproof.gpu.config.GemmConfig` and a
:class:`~layoutproof.gpu.config.GemmProblem`.  Every index map in the emitted source is a
layout of the algebra, lowered to a C expression by :mod:`layoutproof.gpu.proof.lower`, and the
obligations below are discharged *before* any source text is produced; they are listed in
the comment header of the ``.cu`` file:

* the shared-memory buffers ``Sw<B,3,S> o (tile, stages)`` are bijections onto their
  allocations, and every cp.async destination and ldmatrix row address lies inside its
  buffer, 16-byte aligned;
* the swizzle is chosen by the algebra: the smallest ``Swizzle<B,3,S>`` for which every
  16-byte cp.async write phase and every ldmatrix phase of the kernel is proven free of
  bank conflicts, chosen and certified by the analysis API
  (:func:`layoutproof.gpu.analysis.synthesize_swizzle` and :func:`~layoutproof.gpu.analysis.banks`
  on the stage layout and the accesses' thread-value layouts);
* every emitted expression (the cp.async thread -> tile maps, the global offsets with a
  runtime leading dimension, the ldmatrix lane -> address maps in the exact hoisted form
  the kernel uses, the accumulator -> C coordinate maps) equals its layout on the whole
  domain (exhaustively; for all leading dimensions by SymPy);
* the cp.async copies cover each tile exactly once, the accumulator map covers the C
  tile exactly once, and the A / B fragments of every warp cover its sub-tile;
* fragment delivery: for every lane, register and half, the element that ``ldmatrix``
  (PTX semantics, :mod:`layoutproof.gpu.isa.ptx_tables`) brings from the swizzled buffer is
  the element the ``mma.sync`` atom (:mod:`layoutproof.gpu.isa.atoms`, itself checked against
  the PTX fragment tables) expects in that register.

The kernel itself is kernel IR (:func:`_kernel_ir`, nodes of :mod:`layoutproof.gpu.proof.kir`),
printed by the IR's one printer after :func:`finish` discharged the IR's obligations: every
``cp.async`` source and destination, ``ldmatrix`` row address and C store equal to the
layout it claims over every index value (bounds included), bank conflicts on the IR's own
shared addresses, and no barrier under a thread-dependent condition; the header ends with
the coverage line (``N of N memory accesses, M of M barrier operations covered``).

>>> from layoutproof.gpu.kernels.mma_sync import generate
>>> k = generate(GemmConfig(bm=64, bn=64, bk=32, warps_m=2, warps_n=2, stages=3))
>>> k.source.startswith("// layoutproof")
True
>>> k.threads, k.smem_bytes
(128, 24576)
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from layoutproof import Layout, MalformedLayoutError, Swizzle, composition, take
from layoutproof.inttuple import raw_product
from layoutproof.layout import top_modes
from layoutproof.outcome import PROVED

from ..analysis import SwizzleReport, synthesize_swizzle
from ..config import DTYPES, OUT_DTYPES, GemmConfig, GemmProblem, operand_storage
from ..errors import BankConflictError, GemmConfigError, LoweringError, ProofFailedError
from ..isa import atoms, ptx_tables, tiled
from ..proof import kir, lower
from ..proof.record import ProofLog
from .toolkit import (
    Env,
    GemmKernel,
    OperandPlan,
    base_env,
    buffer_map,
    cp_prologue_ir,
    cp_setup_ir,
    eval_map,
    finish,
    grid_wait_head,
    ir_const,
    ir_var,
    k_tiles_ir,
    kernel_params,
    load_tile_ir,
    plan_copy,
    prove_aligned,
    prove_banks,
    prove_c_atom_part,
    raster_ir,
    store_pair_ir,
    swizzled,
    type_sizes,
)

__all__ = ["GemmKernel", "generate", "choose_swizzle", "OperandPlan"]

GENERATOR_VERSION = "1"


# ============================================================================ swizzle choice
def _candidates(plan: OperandPlan) -> List[Swizzle]:
    """No swizzle, then Swizzle<B,3,S> by fewest XOR bits, then smallest shift, with
    S + 3 >= log2(row) (the source bits are row bits).  M = 3 keeps each 16-byte chunk
    (8 halves) whole."""
    shift_min = int(math.log2(plan.row_len))
    cands = [Swizzle(0, 0, 0)]
    for b in (1, 2, 3):
        for s in range(max(b, shift_min - 3), shift_min + 4):
            try:
                cands.append(Swizzle(b, 3, s))
            except MalformedLayoutError:
                continue
    return cands


def _accesses(plan: OperandPlan) -> List[Tuple[Layout, str]]:
    """The stage's writer and reader: the cp.async 16-byte copies and the ldmatrix.x4 reads."""
    return [(plan.copy_access(), "cp.async.16"), (plan.ldsm_access(), plan.ldsm_instruction)]


def synthesize(plan: OperandPlan) -> SwizzleReport:
    """The least candidate swizzle (:func:`_candidates`, in order) of the plan's stage
    that makes every cp.async write and ldmatrix read conflict-free, by
    :func:`layoutproof.gpu.analysis.synthesize_swizzle` on the stage and access layouts
    (``proved`` with the per-access certificates, or ``refuted`` with the best candidate's
    remaining conflict)."""
    return synthesize_swizzle(plan.stage_layout(), _accesses(plan), element_bits=16, family=_candidates(plan))


def choose_swizzle(plan: OperandPlan) -> Optional[Swizzle]:
    """The smallest Swizzle<B,3,S> (fewest XOR bits, then smallest shift) whose buffer makes
    every cp.async write and ldmatrix read of the plan conflict-free, or None if the
    unswizzled buffer already is (:func:`synthesize`)."""
    rep = synthesize(plan)
    if rep.status != PROVED:
        raise BankConflictError(
            f"no Swizzle<B,3,S> makes the {plan.name.upper()} buffer conflict-free (rows of "
            f"{plan.row_len} elements): {rep.witness if rep.witness is not None else rep.reason}",
            condition="bank-conflict-free swizzle exists",
            witness=rep.witness,
        )
    return rep.swizzle


def _sw_tuple(sw: Optional[Swizzle]) -> Optional[Tuple[int, int, int]]:
    if sw is None:
        return None
    return (sw.bits, sw.base, sw.shift)


def _plans(cfg: GemmConfig, prob: GemmProblem) -> Tuple[OperandPlan, OperandPlan]:
    tm, tn = cfg.warp_tile
    a = OperandPlan("a", cfg.bm, cfg.bk, cfg.stages, prob.a_major == "k", cfg.threads, cfg.warps_m, tm)
    b = OperandPlan("b", cfg.bn, cfg.bk, cfg.stages, prob.b_major == "k", cfg.threads, cfg.warps_n, tn)
    for p in (a, b):
        if p.stage_elems % (8 * p.threads):
            raise GemmConfigError(
                f"GemmConfig: the {p.name.upper()} tile ({p.x_extent}x{p.bk}) is not a whole "
                f"number of 16-byte chunks per thread ({p.threads} threads)"
            )
        if p.warp_x % 16:
            raise GemmConfigError(f"GemmConfig: warp tile along {p.name} must be a multiple of 16")
    return a, b


def _plan_operand(p: OperandPlan, log: ProofLog, sw_req: Any) -> None:
    """Choose the swizzle, build and prove every map of operand ``p``."""
    P = p.name.upper()
    if sw_req == "auto":
        p.swizzle = choose_swizzle(p)
    else:
        p.swizzle = Swizzle(*sw_req)
    data = swizzled(p.swizzle, p.stage_layout())
    swname = str(p.swizzle) if p.swizzle is not None else "no swizzle"
    whats = (f"{P} cp.async 16B writes into {swname} buffer", f"{P} ldmatrix.x4 reads of {swname} buffer")
    for (access, ins), what in zip(_accesses(p), whats):
        prove_banks(data, access, ins, what, log)
    plan_copy(p, log)
    _plan_ldsm(p, log)


def _plan_ldsm(p: OperandPlan, log: ProofLog) -> None:
    """ldmatrix: (lane, warp, xi, ki) -> buffer offset, in the hoisted form the kernel uses."""
    P = p.name.upper()
    lmap = p.ldsm_map()
    full = buffer_map(p, lmap, with_stage=False)
    args = ("lane", "w", "xi", "ki")
    lower.prove_bounds(
        full, 0, p.stage_elems - 7, what=f"{P} ldmatrix row address + 16 bytes inside one stage", log=log
    )
    prove_aligned(full, 8, f"{P} ldmatrix row addresses are 16-byte aligned", log)
    chosen = None
    for table_var, add_var in (("ki", "xi"), ("xi", "ki")):
        const = _unit_step(full, lmap, args.index(add_var))
        sub = buffer_map(p, _fix_mode(lmap, args.index(add_var)), with_stage=False)
        sub_args = tuple(a for a in args if a != add_var)
        try:
            low = lower.lower(sub, sub_args, name=f"lp_{p.name}_ldsm", log=None)
            expr = f"({low.c_expr}) + {add_var} * {const}"
            lower.check_c_expr(full, args, expr)
        except LoweringError:
            continue
        chosen = (table_var, add_var, const, low, expr)
        break
    if chosen is None:
        low = lower.lower(full, args, name=f"lp_{p.name}_ldsm", log=log)
        p.lowered["ldsm"] = low
        p.ld_table_var, p.ld_add_var, p.ld_add_const = "", "", 0
    else:
        table_var, add_var, const, low, expr = chosen
        proof = lower.check_c_expr(full, args, expr)
        call = f"{low.name}({', '.join(low.args)})"
        log.add(
            "equal",
            f"{P} ldmatrix address {call} + {add_var} * {const} == {full} "
            f"[{table_var} hoisted into a per-thread table; {call} = {low.c_expr}]",
            proof.method,
            proof.cases,
        )
        p.lowered["ldsm"] = low
        p.ld_table_var, p.ld_add_var, p.ld_add_const = table_var, add_var, const
    # the stage offset is a translation of the swizzled buffer (period divides the stage)
    stage_map = buffer_map(p, lmap, with_stage=True)
    expr_stage = f"({_ldsm_expr(p)}) + st * {p.stage_elems}"
    proof = lower.check_c_expr(stage_map, args + ("st",), expr_stage)
    log.add(
        "equal", f"{P} ldmatrix address with stage: {expr_stage} == {stage_map}", proof.method, proof.cases
    )
    p.fns["ldsm"] = kir.from_lowered(p.lowered["ldsm"])
    p.maps["ldsm_stage"] = stage_map


def _ldsm_expr(p: OperandPlan) -> str:
    low = p.lowered["ldsm"]
    if not p.ld_add_var:
        return low.c_expr
    return f"({low.c_expr}) + {p.ld_add_var} * {p.ld_add_const}"


def _unit_step(full: Any, L: Layout, i: int) -> int:
    """full(e_i) - full(0): the offset step of one unit of mode i (a candidate constant
    stride; whether it is one everywhere is then proven)."""
    v = eval_map(full)
    pos = 1
    for s in top_modes(L)[0][:i]:
        pos *= raw_product(s)
    return int(v[pos] - v[0])


def _fix_mode(L: Layout, i: int) -> Layout:
    """L with mode i pinned at coordinate 0 (extent 1, so lowering keeps the argument list
    aligned minus that argument): returns the layout of the remaining modes."""
    shape, stride = top_modes(L)
    shp = tuple(s for j, s in enumerate(shape) if j != i)
    std = tuple(d for j, d in enumerate(stride) if j != i)
    return Layout(shp, std)


# ---------------------------------------------------------------- accumulators / C tile
def _c_map(cfg: GemmConfig) -> Layout:
    """(lane, v, wm, wn, mi, ni) -> C tile index m + BM*n (the TiledMMA's C partition):
    the SM80 16x8 C atom (lane (4,8) -> n = 2 (l%4), m = l//4; value (2,2) -> n+1, m+8),
    tiled over the warp tile (mi 16-row, ni 8-column blocks) and the warp layout."""
    BM = cfg.bm
    tm, tn = cfg.warp_tile
    return Layout(
        ((4, 8), (2, 2), cfg.warps_m, cfg.warps_n, tm // 16, tn // 8),
        ((2 * BM, 1), (BM, 8), tm, tn * BM, 16, 8 * BM),
    )


def _a_frag_map(cfg: GemmConfig, atom_a: Layout) -> Layout:
    """(lane, v, wm, mi, ki) -> A tile index m + BM*k from the atom's A layout."""
    BM = cfg.bm
    tm, _ = cfg.warp_tile
    rs, rd = top_modes(composition(Layout((16, 16), (1, BM)), atom_a))  # atom index -> tile index
    return Layout(
        (rs[0], rs[1], cfg.warps_m, tm // 16, cfg.bk // 16),
        (rd[0], rd[1], tm, 16, 16 * BM),
    )


def _b_frag_map(cfg: GemmConfig, atom_b: Layout) -> Layout:
    """(lane, v, wn, ni, ki) -> B tile index n + BN*k from the atom's B layout (n8 x k16)."""
    BN = cfg.bn
    _, tn = cfg.warp_tile
    rs, rd = top_modes(composition(Layout((8, 16), (1, BN)), atom_b))
    return Layout(
        (rs[0], rs[1], cfg.warps_n, tn // 8, cfg.bk // 16),
        (rd[0], rd[1], tn, 8, 16 * BN),
    )


def _prove_fragments(p: OperandPlan, cfg: GemmConfig, atom: Any, log: ProofLog) -> None:
    """Fragment delivery: the element ldmatrix brings into (lane, register, half) is the
    element the mma atom expects there -- for every warp, block and k step."""
    P = p.name.upper()
    X = p.x_extent
    trans = not p.kmajor
    inv = _inverse_table(p)  # buffer offset -> tile index (stage 0)
    full = buffer_map(p, p.ldsm_map(), with_stage=False)
    addr = eval_map(full).reshape(p.ki, p.xi, p.warps_x, 32)  # [ki, xi, w, lane]
    if p.name == "a":
        want = eval_map(_a_frag_map(cfg, atom.a_layout))  # [ki, mi, wm, v, lane]
        want = want.reshape(p.ki, p.xi, p.warps_x, 8, 32)
    else:
        want = eval_map(_b_frag_map(cfg, atom.b_layout))  # [ki, ni, wn, v, lane]
        want = want.reshape(p.ki, 2 * p.xi, p.warps_x, 4, 32)
    cases = 0
    for lane in range(32):
        for j in range(4):
            for h in range(2):
                mat, row, col = ptx_tables.ldmatrix_dst(lane, j, h, trans=trans)
                # the lane that supplied row `row` of matrix `mat` (PTX: lanes 8j..8j+7)
                src_lane = next(q for q in range(32) if ptx_tables.ldmatrix_src(q, 4) == (mat, row))
                got = inv[addr[:, :, :, src_lane] + col]  # [ki, xi, w]
                if p.name == "a":
                    exp = want[:, :, :, 2 * j + h, lane]
                else:  # register j of the x4: n-block 2*xi + j//2, B value 2*(j%2) + h
                    sel = want[:, :, :, 2 * (j % 2) + h, lane]  # [ki, ni, w]
                    exp = sel[:, 2 * np.arange(p.xi) + j // 2, :]
                bad = np.argwhere(got != exp)
                if bad.size:
                    kq, xq, wq = (int(v) for v in bad[0])
                    raise ProofFailedError(
                        f"{P} fragment delivery fails: lane {lane} register {j} half {h} "
                        f"(warp {wq}, block {xq}, k step {kq}) receives tile element "
                        f"{_xk(int(got[kq, xq, wq]), X)} but the mma expects "
                        f"{_xk(int(exp[kq, xq, wq]), X)}",
                        condition="ldmatrix delivers the mma fragment",
                        witness=(lane, j, h, wq, xq, kq),
                    )
                cases += got.size
    log.add(
        "fragment",
        f"{P}: ldmatrix{'.trans' if trans else ''}.x4 from the swizzled buffer "
        f"delivers exactly {atom.name}'s {P} fragment in every register",
        "exhaustive",
        cases,
    )


def _xk(idx: int, X: int) -> Tuple[int, int]:
    return (idx % X, idx // X)


def _inverse_table(p: OperandPlan) -> np.ndarray:
    """Stage-0 buffer offset -> tile index x + X*k (the buffer is a bijection)."""
    one = swizzled(p.swizzle, take(p.tile(), 0, 2))
    v = eval_map(one)
    inv = np.full(v.size, -1, dtype=np.int64)
    inv[v] = np.arange(v.size)
    return inv


def _frag_load_ir(E: Env, p: OperandPlan, buf: kir.Expr, ki: kir.Expr) -> kir.Stmt:
    """ldmatrix.x4 of every x-block of operand p at k step ``ki`` into buffer ``buf``."""
    P = p.name
    xi = ir_var("xi")
    w = E.wm if P == "a" else E.wn
    stv = E.stA if P == "a" else E.stB
    if p.ld_add_var == "xi":  # the per-thread table of _ld_table_ir
        off = stv + kir.Index(getattr(E, f"{P}_ld"), (ki,)) + xi * p.ld_add_const
    elif p.ld_add_var == "ki":
        off = stv + kir.Index(getattr(E, f"{P}_ld"), (xi,)) + ki * p.ld_add_const
    else:
        off = stv + kir.call(p.fns["ldsm"], lane=E.lane, w=w, xi=xi, ki=ki)
    base = E.sA if P == "a" else E.sB
    addr = base + kir.Const(2, "unsigned") * kir.Cast("unsigned", off)
    claim = kir.Claim(
        f"{P.upper()} ldmatrix row address (lane, warp, block, k step, stage)",
        base
        + 2
        * kir.LayoutApp(
            p.maps["ldsm_stage"], (E.lane, w, xi, ki, stv / p.stage_elems), f"{P.upper()} ldmatrix map"
        ),
        region=(base, 2 * p.stages * p.stage_elems),
        width=16,
    )
    trans = not p.kmajor
    if P == "a":
        body = kir.block(kir.LdMatrix(kir.Index(E.af, (buf, xi)), addr, trans, claim))
    else:
        r = kir.Var("r", "unsigned")
        sets = []
        for q in range(4):
            row = 2 * xi + 1 if q // 2 else 2 * xi
            sets.append(
                kir.Assign(kir.Index(E.bfr, (buf, row, kir.Const(q % 2))), kir.Index(r, (kir.Const(q),)))
            )
        body = kir.block(kir.Decl(r, dims=(4,)), kir.LdMatrix(r, addr, trans, claim), *sets)
    return kir.For(xi, kir.Const(0), kir.Const(p.xi), body, unroll=True)


def _ld_table_ir(E: Env, p: OperandPlan) -> List[kir.Stmt]:
    P = p.name
    if not p.ld_table_var:
        return []
    n = p.ki if p.ld_table_var == "ki" else p.xi
    j = ir_var("j")
    w = E.wm if P == "a" else E.wn
    tv = ir_var(f"{P}_ld")
    args = {"lane": E.lane, "w": w, p.ld_table_var: j}
    E.add(**{f"{P}_ld": tv})
    return [kir.TableDecl(tv, n, j, kir.call(p.fns["ldsm"], **args))]


@dataclass(frozen=True)
class _MmaFrame:
    """What the phases of :func:`_kernel_ir` share: the configuration, the kernel's
    variables ``E`` (extended by the phases: fragments, stage offsets), the k-tile count, the
    accumulator and its loop variables, the cp.async destination (``sbase``, ``region``) and
    the ring's read and write stages."""

    cfg: GemmConfig
    prob: GemmProblem
    a: OperandPlan
    b: OperandPlan
    cm: Dict[str, Any]
    E: Env
    KT: kir.Var
    acc: kir.Var
    mi: kir.Var
    ni: kir.Var
    sbase: Any
    region: Any
    rd: kir.Var
    wr: kir.Var

    @property
    def S(self) -> int:
        return self.cfg.stages

    @property
    def MI(self) -> int:
        return self.cfg.warp_tile[0] // 16

    @property
    def NI(self) -> int:
        return self.cfg.warp_tile[1] // 8

    @property
    def KI(self) -> int:
        return self.cfg.bk // 16


def _declare_mma_ir(E: Env, cfg: GemmConfig, a: OperandPlan, b: OperandPlan) -> Tuple[List[Any], kir.Var]:
    """The declarations: the shared arena and the operands' stage bases, the thread and warp
    coordinates, the block rasterization, the cp.async and ldmatrix tables, and the k-tile
    count; returns the statements and ``KT``."""
    smem = kir.Var("lp_smem", "unsigned char*")
    body: List[Any] = [
        kir.Decl(smem, dims=(0,), prefix="extern __shared__ __align__(128)", tname="unsigned char")
    ]
    sA, d = ir_const(
        "sA", kir.Cast("unsigned", kir.Call("__cvta_generic_to_shared", (smem,), "unsigned")), "unsigned"
    )
    body.append(d)
    sB, d = ir_const("sB", sA + kir.Const(2 * a.stages * a.stage_elems, "unsigned"), "unsigned")
    body.append(d)
    tid, d1 = ir_const("tid", E.threadIdx)
    lane, d2 = ir_const("lane", tid & 31)
    warp, d3 = ir_const("warp", tid >> 5)
    wm, d4 = ir_const("wm", warp % cfg.warps_m)
    wn, d5 = ir_const("wn", warp / cfg.warps_m)
    body += [d1, d2, d3, d4, d5]
    E.add(sA=sA, sB=sB, tid=tid, lane=lane, wm=wm, wn=wn)
    body.append(
        kir.Comment(f"block rasterization: groups of {cfg.group_m} block rows share the B panel in L2")
    )
    body += raster_ir(E, cfg.bm, cfg.bn, cfg.group_m)
    body += cp_setup_ir(E, a) + cp_setup_ir(E, b)
    body += _ld_table_ir(E, a) + _ld_table_ir(E, b)
    KT, d = k_tiles_ir(E, cfg.bk)
    body.append(d)
    return body, KT


def _acc_zero_ir(acc: kir.Var, mi: kir.Var, ni: kir.Var, MI: int, NI: int) -> List[kir.Stmt]:
    """The accumulators ``acc[MI][NI][4]``, declared and zeroed."""
    vv = ir_var("v")
    z: kir.Expr = kir.Const(0) if acc.ctype == "int" else kir.FloatLit("0.f")
    zero = kir.For(
        vv,
        kir.Const(0),
        kir.Const(4),
        kir.block(kir.Assign(kir.Index(acc, (mi, ni, vv)), z)),
        unroll=True,
    )
    return [
        kir.Decl(acc, dims=(MI, NI, 4)),
        kir.For(
            mi,
            kir.Const(0),
            kir.Const(MI),
            kir.block(kir.For(ni, kir.Const(0), kir.Const(NI), kir.block(zero), unroll=True)),
            unroll=True,
        ),
    ]


def _pipeline_start_ir(F: _MmaFrame) -> List[kir.Stmt]:
    """After the cp.async prologue: the fragment registers, the wait for stage 0, the ring's
    stage variables and the first k step's fragments."""
    E, a, b, S = F.E, F.a, F.b, F.S
    st_vals = tuple(range(S))
    af = kir.Var("af", "unsigned")
    bfr = kir.Var("bfr", "unsigned")
    E.add(af=af, bfr=bfr)
    body: List[kir.Stmt] = [kir.Decl(af, dims=(2, F.MI, 4)), kir.Decl(bfr, dims=(2, F.NI, 2))]
    body.append(
        kir.Comment(
            "software pipeline (after CUTLASS's multistage main loop): the "
            "barrier of tile kt sits\nbefore its last k step, so the next "
            "tile's first fragments load under that step's MMAs"
        )
    )
    body += [kir.CpWait(S - 2), kir.SyncThreads()]
    stA = ir_var("stA", values=tuple(s * a.stage_elems for s in st_vals))
    stB = ir_var("stB", values=tuple(s * b.stage_elems for s in st_vals))
    E.add(stA=stA, stB=stB)
    body += [
        kir.Decl(F.rd, kir.Const(0)),
        kir.Decl(F.wr, kir.Const(S - 1)),
        kir.Decl(stA, kir.Const(0)),
        kir.Decl(stB, kir.Const(0)),
    ]
    zero = kir.Const(0)
    return body + [_frag_load_ir(E, a, zero, zero), _frag_load_ir(E, b, zero, zero)]


def _mainloop_ir(F: _MmaFrame) -> kir.For:
    """The main loop over the k-tiles and their k steps: at the last step the next stage is
    waited for; each step loads the next step's fragments, at the first step the tile ``S -
    1`` ahead is issued, and the MMAs run in a serpentine order over the warp tile."""
    E, a, b, S, KI, NI, mi = F.E, F.a, F.b, F.S, F.KI, F.NI, F.mi
    kt0 = ir_var("kt0")
    ki = ir_var("ki")
    kt1, dkt1 = ir_const("kt", kt0 + (S - 1))
    st1, dst1 = ir_const("st", F.wr)
    nj = ir_var("nj")
    nisel, dni = ir_const("ni", kir.Cond(mi & 1, kir.Const(NI - 1) - nj, nj))
    mma = kir.Mma(
        kir.Index(F.acc, (mi, nisel)),
        kir.Index(E.af, (ki & 1, mi)),
        kir.Index(E.bfr, (ki & 1, nisel)),
    )
    step = kir.block(
        kir.If(
            ki.eq(KI - 1),
            kir.block(
                kir.RingAdvance(F.rd, S, style="ternary"),
                kir.Assign(E.stA, F.rd * a.stage_elems),
                kir.Assign(E.stB, F.rd * b.stage_elems),
                kir.CpWait(S - 2),
                kir.SyncThreads(),
            ),
        ),
        _frag_load_ir(E, a, (ki + 1) & 1, (ki + 1) % KI),
        _frag_load_ir(E, b, (ki + 1) & 1, (ki + 1) % KI),
        kir.If(
            ki.eq(0),
            kir.block(
                dkt1,
                dst1,
                kir.If(kt1.lt(F.KT), kir.block(load_tile_ir(E, a, b, kt1, st1, F.sbase, F.region))),
                kir.CpCommit(),
                kir.RingAdvance(F.wr, S, style="ternary"),
            ),
        ),
        kir.For(
            mi,
            kir.Const(0),
            kir.Const(F.MI),
            kir.block(kir.For(nj, kir.Const(0), kir.Const(NI), kir.block(dni, mma), unroll=True)),
            unroll=True,
        ),
    )
    return kir.For(
        kt0, kir.Const(0), F.KT, kir.block(kir.For(ki, kir.Const(0), kir.Const(KI), step, unroll=True))
    )


def _epilogue_mma_ir(F: _MmaFrame) -> kir.For:
    """The epilogue: each accumulator pair stored to its C coordinate (the proven maps)."""
    E, cm, mi, ni, acc = F.E, F.cm, F.mi, F.ni, F.acc
    h = ir_var("h")
    args = dict(lane=E.lane, v=2 * h, wm=E.wm, wn=E.wn, mi=mi, ni=ni)
    coords = (E.lane, 2 * h, E.wm, E.wn, mi, ni)
    r, dr = ir_const("r", E.m0 + kir.call(cm["row_fn"], **args))
    c, dc = ir_const("c", E.n0 + kir.call(cm["col_fn"], **args))
    row = E.m0 + kir.LayoutApp(cm["row"], coords, "C row map")
    col = E.n0 + kir.LayoutApp(cm["col"], coords, "C column map")
    store = store_pair_ir(
        E,
        F.prob,
        r,
        c,
        kir.Index(acc, (mi, ni, 2 * h)),
        kir.Index(acc, (mi, ni, 2 * h + 1)),
        row,
        col,
        "C accumulator store",
    )
    pair = kir.For(h, kir.Const(0), kir.Const(2), kir.block(dr, dc, store), unroll=True)
    return kir.For(
        mi,
        kir.Const(0),
        kir.Const(F.MI),
        kir.block(kir.For(ni, kir.Const(0), kir.Const(F.NI), kir.block(pair), unroll=True)),
        unroll=True,
    )


def _mma_description(cfg: GemmConfig, prob: GemmProblem, a: OperandPlan, b: OperandPlan) -> Tuple[str, ...]:
    tm, tn = cfg.warp_tile
    swz = ", ".join(f"{p.name.upper()}: {p.swizzle if p.swizzle is not None else 'none'}" for p in (a, b))
    amaj = "k" if a.kmajor else "m"
    bmaj = "k" if b.kmajor else "n"
    return (
        "",
        f"mma.sync GEMM generated by layoutproof {GENERATOR_VERSION}:",
        "  C[M,N] (row-major, ldc) = A[M,K] @ B[K,N]",
        f"A {amaj}-major (lda), B {bmaj}-major (ldb); {prob.dtype} in, "
        f"{'s32' if prob.dtype in ('s8', 'u8') else 'f32'} accumulate, {prob.out} out",
        f"block {cfg.bm}x{cfg.bn}x{cfg.bk}, warps {cfg.warps_m}x{cfg.warps_n} (warp tile {tm}x{tn}),",
        f"{cfg.stages}-stage cp.async pipeline",
        f"shared-memory swizzles chosen by the algebra: {swz}",
        "contract: A, B 16-byte aligned, lda % 8 == 0, ldb % 8 == 0 (the runtime pads otherwise);",
        "          any M, N, K >= 1 (tails are predicated, partial chunks zero-filled)",
    )


def _kernel_ir(
    cfg: GemmConfig, prob: GemmProblem, a: OperandPlan, b: OperandPlan, cm: Dict[str, Any], name: str
) -> kir.Kernel:
    """The mma.sync kernel as IR (the printer writes it, :func:`obligations.discharge` proves it):
    declarations, zeroed accumulators, the cp.async prologue (stages 0 .. S-2), the
    software-pipelined main loop, the epilogue."""
    S = cfg.stages
    E = base_env()
    body, KT = _declare_mma_ir(E, cfg, a, b)
    int_acc = prob.dtype in ("s8", "u8")
    acc, mi, ni = kir.Var("acc", "int" if int_acc else "float"), ir_var("mi"), ir_var("ni")
    body += _acc_zero_ir(acc, mi, ni, cfg.warp_tile[0] // 16, cfg.warp_tile[1] // 8)
    # prologue: stages 0 .. S-2
    sbase, region, prologue = cp_prologue_ir(E, a, b, (E.sA, E.sB), S, S - 1, KT)
    body.append(prologue)
    st_vals = tuple(range(S))
    F = _MmaFrame(
        cfg=cfg,
        prob=prob,
        a=a,
        b=b,
        cm=cm,
        E=E,
        KT=KT,
        acc=acc,
        mi=mi,
        ni=ni,
        sbase=sbase,
        region=region,
        rd=ir_var("rd", values=st_vals),
        wr=ir_var("wr", values=st_vals),
    )
    body += _pipeline_start_ir(F)
    body.append(_mainloop_ir(F))
    body.append(kir.CpWait(0))
    body.append(kir.Comment("epilogue: accumulator (lane, value, warp, block) -> C coordinate, proven maps"))
    body.append(_epilogue_mma_ir(F))
    fns = tuple(p.fns[k] for p in (a, b) for k in ("cp_smem", "cp_x", "cp_k"))
    fns += (a.fns["ldsm"], b.fns["ldsm"], cm["row_fn"], cm["col_fn"], a.fns["cp_gmem"], b.fns["cp_gmem"])
    return kir.Kernel(
        name,
        kernel_params(E, prob),
        kir.block(*grid_wait_head(), *body),
        cfg.threads,
        min_blocks=cfg.min_blocks,
        typedefs=(("lp_in_t", operand_storage(prob.dtype)[0]), ("lp_out_t", OUT_DTYPES[prob.out][0])),
        sizes=type_sizes(prob),
        functions=fns,
        description=_mma_description(cfg, prob, a, b),
        helpers=("griddep", "cp_async", "ldsm", "mma"),
        mma_dtype=prob.dtype,
    )


def _prove_against_tiled_mma(cfg: GemmConfig, atom: Any, log: ProofLog) -> None:
    """The kernel's thread-value maps are CuTe's partitioning: for every thread, the A, B and
    C elements it holds are exactly ``TiledMMA(atom, (WM, WN), permutation).get_slice(t)
    .partition_A/B/C`` of the block tile (composition, then slicing), with the permutation
    that makes each warp's 64x64 sub-tile contiguous."""
    tm, tn = cfg.warp_tile
    WM, WN = cfg.warps_m, cfg.warps_n
    perm = (Layout((16, WM, tm // 16), (1, tm, 16)), Layout((8, WN, tn // 8), (1, tn, 8)), None)
    tmma = tiled.TiledMMA(atom, Layout((WM, WN), (1, WM)), permutation=perm)
    BM, BN, BK = cfg.bm, cfg.bn, cfg.bk
    c = eval_map(_c_map(cfg)).reshape(tn // 8, tm // 16, WN, WM, 4, 32)  # [ni,mi,wn,wm,v,l]
    a = eval_map(_a_frag_map(cfg, atom.a_layout)).reshape(BK // 16, tm // 16, WM, 8, 32)
    b = eval_map(_b_frag_map(cfg, atom.b_layout)).reshape(BK // 16, tn // 8, WN, 4, 32)
    tiles = {"A": Layout((BM, BK), (1, BM)), "B": Layout((BN, BK), (1, BN)), "C": Layout((BM, BN), (1, BM))}
    cases = 0
    for tid in range(cfg.threads):
        lane, warp = tid % 32, tid // 32
        wm, wn = warp % WM, warp // WM
        sl = tmma.get_slice(tid)
        mine = {"A": a[:, :, wm, :, lane], "B": b[:, :, wn, :, lane], "C": c[:, :, wn, wm, :, lane]}
        for op, part in (("A", sl.partition_A), ("B", sl.partition_B), ("C", sl.partition_C)):
            got = np.sort(np.asarray(part(tiles[op]).to_numpy(), dtype=np.int64).ravel())
            exp = np.sort(mine[op].ravel())
            if got.shape != exp.shape or not np.array_equal(got, exp):
                raise ProofFailedError(
                    f"thread {tid}'s {op} elements differ from TiledMMA's partition_{op}",
                    condition="kernel maps == TiledMMA partition",
                    witness=(tid, op),
                )
            cases += got.size
    log.add(
        "equal",
        f"per thread, the kernel's A/B/C elements == TiledMMA({atom.name}, "
        f"{Layout((WM, WN), (1, WM))}, permutation {perm[0]}, {perm[1]})"
        f".get_slice(t).partition_A/B/C of the block tiles",
        "exhaustive",
        cases,
    )


# ============================================================================ generate
_MEMO: Dict[Tuple[GemmConfig, GemmProblem], GemmKernel] = {}


#: the mma.sync atom of each other type; its kernel moves operands as 16-bit units (K-major)
#: and issues this atom, whose registers :func:`~layoutproof.gpu.isa.atoms.prove_same_register_bytes`
#: proves to hold the bytes the 16-bit atom's do (``e4m3``/``e5m2`` need sm_89)
TYPED_ATOMS: Dict[str, str] = {
    "tf32": "SM80_16x8x8_F32TF32TF32F32_TN",
    "s8": "SM80_16x8x32_S32S8S8S32_TN",
    "u8": "SM80_16x8x32_S32U8U8S32_TN",
    "e4m3": "SM89_16x8x32_F32E4M3E4M3F32_TN",
    "e5m2": "SM89_16x8x32_F32E5M2E5M2F32_TN",
}


def generate(
    config: Optional[GemmConfig] = None, problem: Optional[GemmProblem] = None, *, memo: bool = True
) -> GemmKernel:
    """Build, prove and emit one kernel (memoized per process on (config, problem))."""
    cfg = (config or GemmConfig()).validate()
    prob = (problem or GemmProblem()).validate()
    if prob.dtype not in DTYPES and prob.dtype not in TYPED_ATOMS:
        raise GemmConfigError(
            f"mma_sync.generate: no mma.sync kernel for .{prob.dtype} (one of "
            f"{list(DTYPES) + list(TYPED_ATOMS)})"
        )
    if prob.dtype in TYPED_ATOMS and (prob.a_major, prob.b_major) != ("k", "k"):
        raise GemmConfigError(
            f"mma_sync.generate: .{prob.dtype} operands are loaded as 16-bit units by ldmatrix, "
            f"which transposes 16-bit units only: A and B must be K-major (got A "
            f"{prob.a_major}-major, B {prob.b_major}-major)"
        )
    if memo and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    atom = atoms.MMA_ATOMS[
        "SM80_16x8x16_F32BF16BF16F32_TN" if prob.dtype == "bf16" else "SM80_16x8x16_F32F16F16F32_TN"
    ]
    log = ProofLog()
    for pr in atoms.verify_atom(atom):
        log.proofs.append(pr)
    if prob.dtype in TYPED_ATOMS:
        # the kernel fills the 16-bit atom's registers; the typed instruction reads them
        log.extend(atoms.prove_same_register_bytes(atom, atoms.MMA_ATOMS[TYPED_ATOMS[prob.dtype]]))
    a, b = _plans(cfg, prob)
    sw = cfg.swizzle
    _plan_operand(a, log, sw)
    _plan_operand(b, log, sw)
    _prove_fragments(a, cfg, atom, log)
    _prove_fragments(b, cfg, atom, log)
    # the A and B thread-value maps (one warp row / column of the warp grid; the others hold
    # copies) cover their block tiles exactly once
    lower.prove_bijective(
        _a_frag_map(cfg, atom.a_layout),
        cfg.bm * cfg.bk,
        what=f"A (lane, value, warp_m, block, k step) -> {cfg.bm}x{cfg.bk} tile",
        log=log,
    )
    lower.prove_bijective(
        _b_frag_map(cfg, atom.b_layout),
        cfg.bn * cfg.bk,
        what=f"B (lane, value, warp_n, block, k step) -> {cfg.bn}x{cfg.bk} tile",
        log=log,
    )

    _prove_against_tiled_mma(cfg, atom, log)

    # the accumulators: a bijection onto the C tile; row/col maps lowered and proven
    cm = _c_map(cfg)
    lower.prove_bijective(
        cm, cfg.bm * cfg.bn, what=f"C (lane, value, warp, block) -> {cfg.bm}x{cfg.bn} tile", log=log
    )
    prove_c_atom_part(cm, atom, (16, 8), cfg.bm, log)
    cargs = ("lane", "v", "wm", "wn", "mi", "ni")
    rows = lower.lower(composition(Layout((cfg.bm, cfg.bn), (1, 0)), cm), cargs, name="lp_c_row", log=log)
    cols = lower.lower(composition(Layout((cfg.bm, cfg.bn), (0, 1)), cm), cargs, name="lp_c_col", log=log)
    # the kernel evaluates the maps at even v only and stores v and v + 1 as a pair
    cs, cd = top_modes(cm)
    pair = Layout(
        ((4, 8), 2, cfg.warps_m, cfg.warps_n, cs[4], cs[5]),
        ((2 * cfg.bm, 1), 8, cd[2], cd[3], cd[4], cd[5]),
    )
    cover = np.concatenate([eval_map(pair), eval_map(pair) + cfg.bm])
    if np.unique(cover).size != cfg.bm * cfg.bn:
        raise ProofFailedError(
            "the pair stores of the epilogue do not cover the C tile once", condition="epilogue covers C once"
        )
    log.add(
        "bijective",
        "epilogue: (r, c) and (r, c+1) pair stores cover the C tile exactly once",
        "exhaustive",
        int(cover.size),
    )
    h = hashlib.sha256(f"{GENERATOR_VERSION}{cfg}{prob}".encode()).hexdigest()[:10]
    name = f"lp_gemm_{prob.key()}_{h}"
    cmaps = {
        "row": rows.layout,
        "col": cols.layout,
        "row_fn": kir.from_lowered(rows),
        "col_fn": kir.from_lowered(cols),
    }
    ir = _kernel_ir(cfg, prob, a, b, cmaps, name)
    src = finish(ir, log, f"proven before emission ({cfg.key()}, {prob.key()})")
    k = GemmKernel(
        cfg,
        prob,
        src,
        name,
        cfg.threads,
        cfg.smem_bytes,
        log,
        {"a": _sw_tuple(a.swizzle), "b": _sw_tuple(b.swizzle)},
        ir,
    )
    if memo:
        _MEMO[(cfg, prob)] = k
    return k
