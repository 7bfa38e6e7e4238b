"""The fp8 GEMM with block scales (DeepGEMM's convention), proven like every other kernel.

``C = alpha * sum_kb (scale_a[m, kb] * scale_b[n / 128, kb]) * (A[m, kb-block] @ B[kb-block, n])``
for e4m3/e5m2 operands (both K-major), f32 accumulation, a bf16/f16/f32 output:

* ``scale_a`` is ``M x ceil(K / 128)`` f32: one scale per row and 128-wide block of K (1 x 128
  per-token-group scales); ``scale_b`` is ``ceil(N / 128) x ceil(K / 128)`` f32: one scale per
  128 x 128 block of B.  Each is a strided layout ``(rows, k blocks) : (s_rows, s_k)`` with
  runtime strides (row-major, MN-major as DeepGEMM stores ``scale_a`` for its TMA, or a
  stride-0 broadcast of a per-tensor or per-row scale): :class:`ScaleLayout`.
* The kernel is the warp-specialized persistent wgmma kernel of
  :mod:`layoutproof.gpu.kernels.wgmma_ws` (its producer, scheduler, mbarrier ring and staged
  epilogue, imported), with the consumer's main loop rebuilt: one k-tile is 64 16-bit units
  = 128 fp8 elements of K = one scale block.  Per k-tile each consumer thread zeroes a
  partial accumulator, issues the k-tile's four ``k32`` wgmmas into it, waits for them, and
  *promotes*: ``acc[i] += part[i] * scale_a[row(i), kt] * scale_b[n0 / 128, kt]`` into the
  f32 accumulator the epilogue stores (Hopper's fp8 wgmma accumulates with reduced
  precision; the promotion keeps each partial sum to one block).
* The same kernel takes s8/u8 operands (``GemmProblem("k", "k", "s8", "bf16")``): the
  partial sums are exact s32, converted and promoted into f32 with their scales -- int8 into
  bf16/f16/f32 with per-block, per-row or per-tensor scales (the plain kernel has no
  ``alpha``: fold it into a scale, or take the epilogue's).
* The fused epilogue (``generate_blockscale(..., epilogue=EpilogueConfig(...))``): the
  f16 kernels' rewrite (:func:`~layoutproof.gpu.kernels.epilogue.epilogue_ir`) on this
  kernel's IR, ``C = act(alpha * sum_kb scale_a * scale_b * (A_kb @ B_kb) + beta * Cin +
  bias)`` in f32 -- a bias along N or M (f32/f16/bf16), relu/silu/gelu, alpha/beta with a C
  input; one ``alpha``: the fp8 kernels' per-tensor ``scale``, the integer kernels'
  epilogue ``alpha``.

What is proven before the source is printed, beyond the ws kernel's own obligations:

* :func:`prove_scale_layouts`: the offset the kernel's claims give every scale read,
  ``row * s_rows + kb * s_k``, is the algebra's layout at (row, kb) for row-major,
  MN-major (padded) and broadcast scale tensors, and the element -> scale-block map of
  each operand is the convention's (1 x 128 for A, 128 x 128 for B);
* :func:`prove_scale_columns`: every column of a block tile lies in scale block ``n0 / 128``
  (``bn`` divides 128), so one ``scale_b`` per k-tile serves the whole tile;
* :func:`prove_k_tail`: the kernel's k-tile count is ``ceil(K / 128)`` (the scale tensors'
  block count) for every K the host accepts, and the tail past K lies inside the last
  block, read as zeros (the tensor maps' fill), so a K that is not a multiple of 128 is
  exact with the last block's scale;
* :func:`prove_promotion`, read from the IR: the k-tile loop (start 0, step 1) promotes
  exactly once per iteration, after a ``wgmma.wait_group 0``, every register once, each
  register with the scale of its own C row (the lowered row map ``lp_sa_row`` against the
  verified accumulator map) and of k block ``kt`` (the claims' coordinate); each scale
  register ``sc[h]`` is this iteration's scale_a read of row half ``h`` times its scale_b
  read, set before the promotion reads it; the partial accumulator is zeroed before the
  iteration's first wgmma; the wgmmas between two promotions read ``4 x 32 = 128``
  elements of K -- the promotion interval equals the scale block;
* the scale reads themselves are accesses of the IR: their addresses equal their claims
  (the layout's offset) for every thread and every runtime value, and their coordinates
  are in range (``row < M``, ``tn < NB`` -- ``n0 / 128 = tn`` with ``bn = 128`` --, ``kt < KB``:
  the guards around them).

>>> k = generate_blockscale()
>>> k.threads, "lp_sa_row" in k.source, any("promotion interval" in r.statement for r in k.proofs)
(384, True, True)
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from layoutproof import Layout

from ..config import GemmConfig, GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..isa import gmma
from ..proof import evaluate, kir, lower
from ..proof.record import ProofLog
from .epilogue import EPILOGUE_VERSION, EpilogueConfig, check_compute, epilogue_ir
from .toolkit import GemmKernel, OperandPlan, addr_of, finish, ir_const, ir_var
from .wgmma import (
    c_map,
    check_typed,
    plan_c_map,
    plan_descriptors,
    plan_stage,
    prove_typed_descriptors,
)
from .wgmma_core import GENERATOR_VERSION, Sm90Config, kernel90, wgmma_batch_ir
from .wgmma_ws import (
    ConsumerVars,
    WsFrame,
    _prove_cluster_tx,
    consumer_ir,
    plan_epilogue,
    prove_ws_protocol,
    schedule_devfn,
    schedule_proofs,
    ws_body_ir,
)

__all__ = [
    "SCALE_K",
    "BLOCKSCALE_TYPES",
    "BLOCKSCALE_DEFAULT",
    "ScaleLayout",
    "SCALE_A",
    "SCALE_B",
    "scale_row_layout",
    "prove_scale_layouts",
    "prove_scale_columns",
    "prove_k_tail",
    "prove_promotion",
    "prove_promotion_pipelined",
    "check_blockscale",
    "generate_blockscale",
]

#: the K extent of one scale block (elements), for both operands
SCALE_K = 128
#: the operand types the block-scaled kernel takes: fp8 (f32 partial sums) and the 8-bit
#: integers (exact s32 partial sums, promoted to f32 with their scales)
BLOCKSCALE_TYPES: Tuple[str, ...] = ("e4m3", "e5m2", "s8", "u8")
#: the integer types among them and the outputs a scaled integer product takes
INT_TYPES: Tuple[str, ...] = ("s8", "u8")
SCALED_OUTS: Tuple[str, ...] = ("bf16", "f16", "f32")
#: 128 x 128 tiles (two consumer warpgroups), 6 stages, persistent and warp-specialized
BLOCKSCALE_DEFAULT = Sm90Config(bm=128, bn=128, stages=6, loader="tma", schedule="ws")


# ============================================================================ scale layouts
@dataclass(frozen=True)
class ScaleLayout:
    """The scale tensor of operand ``name``: one f32 per ``rows_per_block`` rows (M for A,
    N for B) and :data:`SCALE_K` elements of K; a strided ``(row blocks, k blocks)``
    layout whose strides (elements) are runtime values.

    >>> SCALE_B.shape(300, 1000), SCALE_A.shape(300, 1000)
    ((3, 8), (300, 8))
    >>> SCALE_A.block_of(5, 300)
    (5, 2)
    """

    name: str
    rows_per_block: int

    def shape(self, rows: int, k: int) -> Tuple[int, int]:
        """(row blocks, k blocks) of an operand with ``rows`` rows (M or N) and ``k`` K."""
        return (-(-rows // self.rows_per_block), -(-k // SCALE_K))

    def block_of(self, row: int, k: int) -> Tuple[int, int]:
        """The scale coordinate of operand element (row, k)."""
        return (row // self.rows_per_block, k // SCALE_K)

    def layout(self, rows: int, k: int, strides: Tuple[int, int]) -> Layout:
        """The tensor's layout for concrete extents and strides (elements)."""
        return Layout(self.shape(rows, k), tuple(strides))

    def offset_ir(self, r: kir.Expr, kb: kir.Expr, s_r: kir.Expr, s_k: kir.Expr) -> kir.Expr:
        """The offset (elements) of scale (r, kb) under runtime strides, as IR."""
        return kir.Cast("long long", r) * s_r + kir.Cast("long long", kb) * s_k


SCALE_A = ScaleLayout("a", 1)
SCALE_B = ScaleLayout("b", 128)


def scale_row_layout() -> Layout:
    """(thread of the warpgroup, h) -> the warpgroup-local C row of the thread's registers
    with ``(i >> 1) & 1 == h``: warp ``t / 32`` owns rows 16w..16w+15, lane ``l`` rows
    ``l / 4`` and ``l / 4 + 8`` (the wgmma accumulator layout)."""
    return Layout(((4, 8, 4), 2), ((0, 1, 16), 8))


def _layout_cases() -> List[Tuple[ScaleLayout, int, int, Tuple[int, int], str]]:
    out: List[Tuple[ScaleLayout, int, int, Tuple[int, int], str]] = []
    for sl in (SCALE_A, SCALE_B):
        for rows, k in ((1, 16), (7, 128), (129, 400), (300, 1000), (257, 7168)):
            R, KB = sl.shape(rows, k)
            pad = -(-R // 4) * 4  # DeepGEMM's MN-major scale_a: rows padded to 16 bytes
            for strides, what in (((KB, 1), "row-major"), ((1, pad), "MN-major"), ((0, 0), "broadcast")):
                out.append((sl, rows, k, strides, what))
            out.append((sl, rows, k, (1, 0), "per-row broadcast"))
    return out


def prove_scale_layouts(log: ProofLog) -> None:
    """The scale reads' offsets are the layouts', and each operand element's scale is the
    convention's block: for every case of :func:`_layout_cases` (row-major, MN-major with
    padded rows, broadcasts), the IR offset :meth:`ScaleLayout.offset_ir` evaluated at every
    (row block, k block) equals the algebra's layout there, and every element (row, k) of the
    operand maps to block (row / rows_per_block, k / 128), its scale at the layout's offset
    of that block."""
    r, kb, sr, sk = kir.Var("r"), kir.Var("kb"), kir.Var("s_r", "long long"), kir.Var("s_k", "long long")
    cases = 0
    for sl, rows, k, strides, what in _layout_cases():
        L = sl.layout(rows, k, strides)
        R, KB = sl.shape(rows, k)
        rr, kk = np.meshgrid(np.arange(R), np.arange(KB), indexing="ij")
        got = evaluate.ev(
            sl.offset_ir(r, kb, sr, sk), {"r": rr, "kb": kk, "s_r": strides[0], "s_k": strides[1]}
        )
        want = np.array(L.eval_all(), dtype=np.int64).reshape(KB, R).T  # colexicographic: rows fastest
        if not np.array_equal(got, want):
            i, j = (int(v) for v in np.argwhere(got != want)[0])
            raise ProofFailedError(
                f"scale_{sl.name} ({what}, {rows} x {k}): the read of block ({i}, {j}) is at "
                f"{int(got[i, j])}, the layout {L} says {int(want[i, j])}",
                condition="scale read offset equals the layout",
                witness=(sl.name, rows, k, i, j),
            )
        # every element's block: rows / rows_per_block, k / 128 -- inside the tensor's shape
        # every element's block (rows / rows_per_block, k / 128): a product of two maps, one per
        # dimension, each onto the tensor's extent
        br, bk = np.arange(rows) // sl.rows_per_block, np.arange(k) // SCALE_K
        if br.max() >= R or bk.max() >= KB or np.unique(br).size != R or np.unique(bk).size != KB:
            raise ProofFailedError(
                f"scale_{sl.name}: the blocks of a {rows} x {k} operand are not the {R} x {KB} scale tensor",
                condition="every scale block serves its elements",
                witness=(rows, k),
            )
        cases += int(got.size) + rows + k
    log.add(
        "equal",
        "scale reads: offset row * s_rows + kb * s_k equals the scale layout (rows, k blocks) : "
        f"(s_rows, s_k) at every block of {len(_layout_cases())} tensors (5 shapes x row-major, MN-major "
        "padded, per-row and full broadcast, per operand), and element "
        "(m, k) of A takes block (m, k / 128), element (n, k) of B block (n / 128, k / 128)",
        "exhaustive",
        cases,
    )


def prove_scale_columns(cfg: Sm90Config, log: ProofLog) -> None:
    """Every accumulator column of a tile at ``n0 = tn * bn`` lies in scale block ``tn * bn /
    128`` = the block the kernel reads (``tn`` when ``bn == 128``).  The difference
    ``(tn bn + c) / 128 - tn bn / 128`` is periodic in ``tn`` with period ``128 / bn``, so one
    period of ``tn`` covers every tile."""
    if SCALE_K % cfg.bn:
        raise ProofFailedError(
            f"block N {cfg.bn} does not divide the scale block {SCALE_K}: a tile spans two scale_b blocks",
            condition="one scale_b block per tile",
            witness=cfg.bn,
        )
    cm = c_map(cfg)
    cols = np.array(cm.eval_all(), dtype=np.int64) // cfg.bm
    q = SCALE_K // cfg.bn
    tn = np.arange(q)[:, None]
    blk = (tn * cfg.bn + cols[None, :]) // SCALE_K
    read = tn * cfg.bn // SCALE_K
    if np.any(blk != read):
        raise ProofFailedError(
            "an accumulator column lies outside the tile's scale_b block",
            condition="one scale_b block per tile",
            witness=cfg.bn,
        )
    log.add(
        "equal",
        f"every one of the {cols.size} accumulators of a {cfg.bm}x{cfg.bn} tile at n0 = tn * {cfg.bn} "
        f"is in scale_b block n0 / {SCALE_K} (one period of tn)",
        "exhaustive",
        int(blk.size),
    )


def prove_k_tail(bk_units: int, log: ProofLog, k_max: int = 1 << 14) -> None:
    """K tails: for every K the host accepts (a multiple of 16 one-byte elements, the
    tensor maps' row rule) up to ``k_max``, the kernel's k-tile count ``ceil(K_units /
    bk_units)`` (``K_units = K / 2``, the k-tile's ``bk_units`` 16-bit units) is the scale
    tensors' block count ``ceil(K / 128)``; the k-tiles read elements ``[0, 128 KT)`` of
    which ``[K, 128 KT)`` -- fewer than 128, all in the last block -- lie past K and are
    the tensor maps' zero fill (in A and in B, so their products are zero whatever the
    scale).  Both counts are periodic in K with period 128 (each grows by one), so the range
    is a proof for every K."""
    K = np.arange(16, k_max + 1, 16, dtype=np.int64)
    Kv, KUv = kir.Var("K"), kir.Var("KU")
    kt = evaluate.ev((KUv + (bk_units - 1)) / bk_units, {"KU": K // 2})
    kb = evaluate.ev((Kv + (SCALE_K - 1)) / SCALE_K, {"K": K})
    elems = 2 * bk_units
    if elems != SCALE_K or np.any(kt != kb):
        i = int(np.flatnonzero(kt != kb)[0]) if np.any(kt != kb) else 0
        raise ProofFailedError(
            f"K = {int(K[i])}: {int(kt[i])} k-tiles of {elems} elements, {int(kb[i])} scale blocks",
            condition="one k-tile per scale block",
            witness=int(K[i]),
        )
    tail = elems * kt - K
    if np.any((tail < 0) | (tail >= SCALE_K)) or np.any((K - 1) // SCALE_K != kb - 1):
        raise ProofFailedError("the K tail leaves the last scale block", condition="tail in the last block")
    log.add(
        "equal",
        f"K tails: for every K = 16j <= {k_max} (period {SCALE_K}: every K) the kernel's k-tiles "
        f"ceil(K/2 / {bk_units}) = ceil(K / {SCALE_K}) scale blocks; the zero-filled tail "
        f"[K, {SCALE_K} KT) has < {SCALE_K} elements, all in block KT - 1",
        "exhaustive",
        int(K.size),
    )


@functools.cache
def _scale_layout_records() -> Tuple[Any, ...]:
    """:func:`prove_scale_layouts`'s records, once per process (every kernel shares them)."""
    log = ProofLog()
    prove_scale_layouts(log)
    return tuple(log.proofs)


# ============================================================================ the kernel
def check_blockscale(cfg: Sm90Config, prob: GemmProblem) -> None:
    """The configurations the block-scaled kernel is built for: 8-bit operands (fp8 or
    int8, both K-major) into bf16/f16/f32, the warp-specialized TMA schedule (alone or in
    2-CTA clusters sharing B), ``bn == 128`` (one scale_b per tile and a k-tile of 128
    elements), no batch."""
    if prob.dtype not in BLOCKSCALE_TYPES:
        raise GemmConfigError(
            f"generate_blockscale: block scales are for 8-bit operands {BLOCKSCALE_TYPES}, got {prob.dtype!r}"
        )
    if prob.out not in SCALED_OUTS:
        raise GemmConfigError(
            f"generate_blockscale: a scaled product is stored as one of {SCALED_OUTS}, not {prob.out!r}"
        )
    if prob.batch:
        raise GemmConfigError("generate_blockscale: batched block-scaled products are not built")
    if cfg.schedule != "ws" or cfg.loader != "tma":
        raise GemmConfigError(
            "generate_blockscale: the block-scaled kernel is the warp-specialized TMA kernel "
            f"(schedule='ws', loader='tma'), got {cfg.key()}"
        )
    if cfg.bn != 128:
        raise GemmConfigError(
            f"generate_blockscale: bn={cfg.bn}: the tile's N must be the scale block (128), so that one "
            "scale_b block serves the tile"
        )
    if cfg.bn + 40 > (232 if cfg.warpgroups == 2 else 240):
        raise GemmConfigError("generate_blockscale: two accumulator sets of bn / 2 registers do not fit")
    check_typed(cfg, prob)


@dataclass
class _Scales:
    """The scale parameters of the kernel."""

    SA: kir.Var
    SB: kir.Var
    sa_m: kir.Var
    sa_k: kir.Var
    sb_n: kir.Var
    sb_k: kir.Var
    KB: kir.Var
    NB: kir.Var

    def params(self) -> Tuple[Tuple[str, kir.Var], ...]:
        return (
            ("const float* __restrict__", self.SA),
            ("const float* __restrict__", self.SB),
            ("long long", self.sa_m),
            ("long long", self.sa_k),
            ("long long", self.sb_n),
            ("long long", self.sb_k),
            ("int", self.KB),
            ("int", self.NB),
        )


def _scales() -> _Scales:
    return _Scales(
        kir.Var("SA", "const float*"),
        kir.Var("SB", "const float*"),
        kir.Var("sa_m", "long long"),
        kir.Var("sa_k", "long long"),
        kir.Var("sb_n", "long long"),
        kir.Var("sb_k", "long long"),
        kir.Var("KB"),
        kir.Var("NB"),
    )


def _batch_ir(
    F: WsFrame, stage: kir.Expr, part: kir.Var, ks_range: Tuple[int, int], wait: int = 0
) -> List[kir.Stmt]:
    """wgmma k steps ``ks_range`` of the k-tile on ``stage`` into ``part``, committed and
    waited for: the ws kernel's batch (:func:`~layoutproof.gpu.kernels.wgmma_core.
    wgmma_batch_ir`, the same proven descriptor starts) with wait depth ``wait`` (0: this
    batch is complete after it; 1: the batch before it is)."""
    return wgmma_batch_ir(
        F.E, F.cfg, F.desc, F.a, F.b, stage, F.E.cg, part, steps=ks_range, wait=wait, step_name="k step"
    )


def _zero_ir(v: kir.Var, n: int) -> kir.Stmt:
    i = ir_var("i")
    zero: kir.Expr = kir.Const(0) if v.ctype == "int" else kir.FloatLit("0.f")
    return kir.For(
        i, kir.Const(0), kir.Const(n), kir.block(kir.Assign(kir.Index(v, (i,)), zero)), unroll=True
    )


def _scale_read_ir(
    v: kir.Var,
    declare: bool,
    what: str,
    ptr: kir.Var,
    lay: ScaleLayout,
    strides: Tuple[kir.Var, kir.Var],
    claim_at: Tuple[kir.Expr, kir.Expr],
    read_at: Tuple[kir.Expr, kir.Expr],
    rows: kir.Expr,
    KB: kir.Var,
) -> List[kir.Stmt]:
    """``v = scale[read_at]`` of the scale tensor at ``ptr`` (layout ``lay``, element
    strides ``strides``; ``rows`` x ``KB`` blocks), 0 where a coordinate is past the
    tensor; its claim stated at ``claim_at`` (the coordinates as the proof reads them).
    ``declare``: ``v`` is declared here (else reset)."""
    claim = kir.Claim(
        what,
        addr_of(ptr) + 4 * lay.offset_ir(claim_at[0], claim_at[1], *strides),
        bounds=((claim_at[0], rows), (claim_at[1], KB)),
        width=4,
    )
    zero = kir.FloatLit("0.f")
    return [
        kir.Decl(v, zero) if declare else kir.Assign(v, zero),
        kir.If(
            read_at[0].lt(rows).and_(read_at[1].lt(KB)),
            kir.block(
                kir.Assign(v, kir.Mem(ptr, claim, idx=lay.offset_ir(read_at[0], read_at[1], *strides)))
            ),
        ),
    ]


def _scale_b_ir(
    Sc: _Scales, sbv: kir.Var, tn: kir.Var, kx: kir.Expr, nb: kir.Expr, kb: kir.Expr, declare: bool
) -> List[kir.Stmt]:
    """``sbv = scale_b[nb, kb]``, its claim stated at the tile's ``(tn, kx)``."""
    what = "scale_b read (n block of the tile, k block kt)"
    return _scale_read_ir(
        sbv, declare, what, Sc.SB, SCALE_B, (Sc.sb_n, Sc.sb_k), (tn, kx), (nb, kb), Sc.NB, Sc.KB
    )


def _scale_a_ir(
    F: WsFrame,
    Sc: _Scales,
    srow: kir.ProvenFn,
    sv: kir.Var,
    h: kir.Expr,
    kx: kir.Expr,
    kb: kir.Expr,
    rname: str,
    declare: bool,
) -> List[kir.Stmt]:
    """``sv = scale_a[row_h, kb]`` with ``row_h = m0 + 64 cg + lp_sa_row(wt, h)`` (the
    constant ``rname``), its claim stated at ``kx`` and the row map's ``LayoutApp``."""
    E = F.E
    row_claim = E.m0 + 64 * E.cg + kir.LayoutApp(scale_row_layout(), (E.wt, h), "scale_a row map")
    r, dr = ir_const(rname, E.m0 + 64 * E.cg + kir.call(srow, t=E.wt, h=h))
    what = "scale_a read (the thread's C row h, k block kt)"
    strides = (Sc.sa_m, Sc.sa_k)
    return [
        dr,
        *_scale_read_ir(sv, declare, what, Sc.SA, SCALE_A, strides, (row_claim, kx), (r, kb), E.M, Sc.KB),
    ]


def _k_tile_scale_b_ir(
    Sc: _Scales, kt: kir.Var, tn: kir.Var, kb_of: Callable[[kir.Var], kir.Expr]
) -> Tuple[kir.Var, kir.Var, List[kir.Stmt]]:
    """The k-tile's scale block ``kb`` and ``sbv = scale_b[tn, kb]``: ``(kb, sbv, the
    statements)``."""
    kb, dkb = ir_const("kb", kb_of(kt), comment="the scale block of this k-tile")
    sbv = kir.Var("sbv", "float")
    nb, dnb = ir_const("nb", tn, comment="the tile's scale_b row block (bn == 128)")
    return kb, sbv, [dkb, dnb, *_scale_b_ir(Sc, sbv, tn, kt, nb, kb, True)]


def _scale_loads_ir(
    F: WsFrame,
    Sc: _Scales,
    sc: kir.Var,
    kt: kir.Var,
    tn: kir.Var,
    srow: kir.ProvenFn,
    kb_of: Callable[[kir.Var], kir.Expr],
) -> List[kir.Stmt]:
    """The k-tile's scales: ``sbv = scale_b[tn, kt]`` (one per tile: ``bn == 128``) and for
    ``h = 0, 1`` ``sc[h] = scale_a[row_h, kt] * sbv`` with ``row_h = m0 + 64 cg +
    lp_sa_row(wt, h)`` -- each read guarded by its coordinates' ranges (rows past M and
    blocks past the tensor read as 0; their outputs are not stored)."""
    kb, sbv, head = _k_tile_scale_b_ir(Sc, kt, tn, kb_of)
    h = ir_var("h")
    sv = kir.Var("sv", "float")
    return [
        *head,
        kir.For(
            h,
            kir.Const(0),
            kir.Const(2),
            kir.block(
                *_scale_a_ir(F, Sc, srow, sv, h, kt, kb, "r", True), kir.Assign(kir.Index(sc, (h,)), sv * sbv)
            ),
            unroll=True,
        ),
    ]


def _scale_loads_split_ir(
    F: WsFrame,
    Sc: _Scales,
    sc: kir.Var,
    kt: kir.Var,
    tn: kir.Var,
    srow: kir.ProvenFn,
    kb_of: Callable[[kir.Var], kir.Expr],
) -> Tuple[List[kir.Stmt], List[kir.Stmt]]:
    """:func:`_scale_loads_ir` split in two (``late_scales``): the reads (``sbv`` and, per
    row half ``h = 0, 1``, ``sv{h} = scale_a[row_h, kt]``; the same claims and guards), and
    the products ``sc[h] = sv{h} * sbv`` -- placed by the consumer after the k-tile's
    wgmmas are issued, so that no instruction between the stage's barrier wait and the
    wgmmas waits for a global load."""
    kb, sbv, loads = _k_tile_scale_b_ir(Sc, kt, tn, kb_of)
    products: List[kir.Stmt] = []
    for hh in (0, 1):
        sv = kir.Var(f"sv{hh}", "float")
        loads += _scale_a_ir(F, Sc, srow, sv, kir.Const(hh), kt, kb, f"r{hh}", True)
        products.append(kir.Assign(kir.Index(sc, (kir.Const(hh),)), sv * sbv))
    return loads, products


def _scale_prefetch_ir(
    F: WsFrame,
    Sc: _Scales,
    kx: kir.Expr,
    tn: kir.Var,
    srow: kir.ProvenFn,
    regs: Tuple[kir.Var, kir.Var, kir.Var],
    tag: str,
) -> List[kir.Stmt]:
    """The scale reads of k block ``kx`` (``kt`` or ``kt + 1``) into the registers ``regs =
    (sb, sa0, sa1)`` that live across k-tiles (``prefetch_scales``): each reset to 0, then
    read under its coordinates' guards (the same claims as :func:`_scale_loads_ir`'s, at
    ``kx``).  ``tag`` keeps the declarations' names apart."""
    sbr, sa0, sa1 = regs
    kb, dkb = ir_const(f"kb{tag}", kx, comment="the scale block read")
    out: List[kir.Stmt] = [dkb, *_scale_b_ir(Sc, sbr, tn, kx, tn, kb, False)]
    for hh, sv in ((0, sa0), (1, sa1)):
        out += _scale_a_ir(F, Sc, srow, sv, kir.Const(hh), kx, kb, f"r{hh}{tag}", False)
    return out


def _promote_ir(acc: kir.Var, part: kir.Var, sc: kir.Var, n: int) -> kir.Stmt:
    """``acc[i] += part[i] * sc[(i >> 1) & 1]`` for every register: the promotion (an s32
    partial converted to f32 first)."""
    i = ir_var("i")
    val: kir.Expr = kir.Index(part, (i,))
    if part.ctype == "int":
        val = kir.Cast("float", val)
    return kir.For(
        i,
        kir.Const(0),
        kir.Const(n),
        kir.block(kir.Assign(kir.Index(acc, (i,)), val * kir.Index(sc, ((i >> 1) & 1,)), op="+=")),
        unroll=True,
    )


def _consumer_bs_ir(
    F: WsFrame,
    Sc: _Scales,
    srow: kir.ProvenFn,
    segments: int = 1,
    kb_of: Optional[Callable[[kir.Var], kir.Expr]] = None,
    early_release: bool = False,
    late_scales: bool = False,
    prefetch_scales: bool = False,
) -> kir.Block:
    """The consumer warpgroups (the ws kernel's ring protocol, :func:`~layoutproof.gpu.
    kernels.wgmma_ws.consumer_ir`): per tile, per k-tile: the scales, the stage's wgmmas
    into ``part`` (in ``segments`` promoted pieces; 1 is the kernel, more only to test the
    proof), promotion into ``acc``; then the per-tensor ``alpha`` and the staged epilogue.
    ``early_release``: the k-tile's own stage goes back to the producer right after its
    ``wgmma.wait_group 0``, before the promotion (``consumer_ir(release="same")``).
    ``late_scales``: the scale products after the wgmmas' commit
    (:func:`_scale_loads_split_ir`).  ``prefetch_scales``: k-tile ``kt + 1``'s scales are
    read during k-tile ``kt`` into registers that live across k-tiles (the first k-tile's
    at ``kt == 0``), and k-tile ``kt``'s products are taken from them after its wgmmas'
    commit: a read has a whole k-tile to land (:func:`_scale_prefetch_ir`); its promotion
    is proven by :func:`prove_promotion_pipelined`."""
    cfg = F.cfg
    R = cfg.bn // 2
    part = kir.Var("part", "int" if F.prob.dtype in INT_TYPES else "float")
    sc = kir.Var("sc", "float")
    nk = cfg.bk // 16
    pre = (kir.Var("psb", "float"), kir.Var("psa0", "float"), kir.Var("psa1", "float"))
    pre_decls = tuple(kir.Decl(v, kir.FloatLit("0.f")) for v in pre) if prefetch_scales else ()
    if segments < 1 or nk % segments:
        raise GemmConfigError(f"blockscale: {segments} segments do not split {nk} k steps")

    def k_tile(c: ConsumerVars) -> Tuple[List[kir.Stmt], ...]:
        kbf = kb_of or (lambda v: v)
        late: List[kir.Stmt] = []  # between the wgmmas' issue and their commit
        if prefetch_scales:
            first = kir.If(
                c.kt.eq(0),
                kir.block(_scale_prefetch_ir(F, Sc, kbf(c.kt), c.tn, srow, pre, "f")),
                comment="the tile's first k-tile: its scales now",
            )
            scales: List[kir.Stmt] = [first]
            late = [kir.Assign(kir.Index(sc, (kir.Const(hh),)), pre[1 + hh] * pre[0]) for hh in (0, 1)]
            late += _scale_prefetch_ir(F, Sc, kbf(c.kt) + 1, c.tn, srow, pre, "n")
        elif late_scales:  # the reads first, their products between the commit and the wait
            scales, late = _scale_loads_split_ir(F, Sc, sc, c.kt, c.tn, srow, kbf)
        else:
            scales = _scale_loads_ir(F, Sc, sc, c.kt, c.tn, srow, kbf)
            if not early_release:  # in ``segments`` pieces, each promoted
                pieces: List[kir.Stmt] = []
                for s in range(segments):
                    lo, hi = s * nk // segments, (s + 1) * nk // segments
                    pieces += [
                        _zero_ir(part, R),
                        *_batch_ir(F, c.st, part, (lo, hi)),
                        _promote_ir(c.acc, part, sc, R),
                    ]
                return scales, pieces
        batch = _batch_ir(F, c.st, part, (0, nk))
        issue = [_zero_ir(part, R), *batch[:-1], *late, batch[-1]]
        promote = [_promote_ir(c.acc, part, sc, R)]
        if early_release:  # the wgmmas, the release of the stage, then the promotion
            return scales, issue, promote
        return scales, issue + promote

    if early_release:
        what, note = (
            "wgmma into part, the stage released, part promoted into acc",
            ("its wgmmas are complete: this k-tile's stage goes back to the producer"),
        )
    else:
        what, note = "wgmma into part, promoted into acc", "the previous stage goes back to the producer"
    return consumer_ir(
        F,
        f"consumers: per k-tile (one 128-element scale block) {what}",
        "f32",
        k_tile,
        release_note=note,
        decls=(kir.Decl(part, dims=(R,)), kir.Decl(sc, dims=(2,))) + pre_decls,
        release="same" if early_release else "next",
    )


def _consumer_bs2_ir(
    F: WsFrame,
    Sc: _Scales,
    srow: kir.ProvenFn,
    kb_of: Optional[Callable[[kir.Var], kir.Expr]] = None,
    early_release: bool = False,
    late_scales: bool = False,
) -> kir.Block:
    """The consumer with two partial accumulators (``partials=2``): k-tile ``kt``'s
    wgmmas go into ``part`` (``kt`` even) or ``part1`` (odd), committed and followed by
    ``wgmma.wait_group 1`` -- k-tile ``kt - 1``'s batch, in the other partial, is then
    complete and is promoted (with its scales, kept in ``scp`` since the previous
    iteration) while ``kt``'s wgmmas run; ``scp = sc`` (this k-tile's scales) follows.
    After the k-tiles, ``wait_group 0`` and the last k-tile's promotion (the drain).  The
    ring protocol is :func:`~layoutproof.gpu.kernels.wgmma_ws.consumer_ir`'s: the previous
    stage goes back to the producer after ``wait_group 1`` completed its wgmmas: after the
    promotion, or with ``early_release`` right after the wait, before the promotion."""
    cfg = F.cfg
    R = cfg.bn // 2
    ct = "int" if F.prob.dtype in INT_TYPES else "float"
    p0, p1 = kir.Var("part", ct), kir.Var("part1", ct)
    sc, scp = kir.Var("sc", "float"), kir.Var("scp", "float")
    nk = cfg.bk // 16
    odd_ = lambda e: (e & 1).eq(1)  # noqa: E731

    # the drain needs the accumulators consumer_ir declares: filled in by k_tile, which
    # consumer_ir calls before it places the drain
    drain: List[kir.Stmt] = []

    def promote_other(acc: kir.Var, parity: kir.Expr) -> kir.Stmt:
        """The partial of the k-tile before: ``part`` when ``parity`` is odd, else ``part1``."""
        return kir.If(
            odd_(parity), kir.block(_promote_ir(acc, p0, scp, R)), kir.block(_promote_ir(acc, p1, scp, R))
        )

    def k_tile(c: ConsumerVars) -> Tuple[List[kir.Stmt], ...]:
        h = ir_var("h")
        odd_batch = _batch_ir(F, c.st, p1, (0, nk), wait=1)
        even_batch = _batch_ir(F, c.st, p0, (0, nk), wait=1)
        # the branches issue the wgmmas; the commit and the wait (the batch's last two
        # statements) follow them, outside the branches (ptxas then keeps the wgmma
        # pipeline across the promotion of the other partial)
        issue = [
            kir.If(
                odd_(c.kt),
                kir.block(_zero_ir(p1, R), *odd_batch[:-2]),
                kir.block(_zero_ir(p0, R), *even_batch[:-2]),
                comment="this k-tile's wgmmas into the partial of its parity",
            ),
            *even_batch[-2:],
        ]
        keep = kir.For(
            h,
            kir.Const(0),
            kir.Const(2),
            kir.block(kir.Assign(kir.Index(scp, (h,)), kir.Index(sc, (h,)))),
            unroll=True,
        )
        promote = [
            kir.If(c.kt.ge(1), kir.block(promote_other(c.acc, c.kt)), comment="promote the previous k-tile"),
            keep,
        ]
        drain[:] = [
            kir.WgmmaWait(0),
            kir.If(F.KT.ge(1), kir.block(promote_other(c.acc, F.KT)), comment="promote the last k-tile"),
        ]
        kbf = kb_of or (lambda v: v)
        if late_scales:  # the products between the commit and the wait
            scales, prods = _scale_loads_split_ir(F, Sc, sc, c.kt, c.tn, srow, kbf)
            issue = issue[:-1] + prods + issue[-1:]
        else:
            scales = _scale_loads_ir(F, Sc, sc, c.kt, c.tn, srow, kbf)
        if early_release:
            return scales, issue, promote
        return scales, issue + promote

    return consumer_ir(
        F,
        "consumers: per k-tile (one 128-element scale block) wgmma into part / part1 by parity, "
        "the previous k-tile promoted into acc while it runs",
        "f32",
        k_tile,
        release_note="the previous k-tile's wgmmas are complete: its stage goes back to the producer"
        if early_release
        else "the previous stage goes back to the producer",
        decls=(
            kir.Decl(p0, dims=(R,)),
            kir.Decl(p1, dims=(R,)),
            kir.Decl(sc, dims=(2,)),
            kir.Decl(scp, dims=(2,)),
        ),
        drain=drain,
    )


def _source_bs_ir(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    ep: Dict[str, Any],
    desc: Dict[str, Tuple[int, int, int]],
    tx: int,
    name: str,
    srow: kir.ProvenFn,
    segments: int = 1,
    kb_of: Optional[Callable[[kir.Var], kir.Expr]] = None,
    partials: int = 1,
    early_release: bool = False,
    late_scales: bool = False,
    prefetch_scales: bool = False,
) -> kir.Kernel:
    """The ws kernel's prologue, producer and protocol with the block-scaled consumer
    (``partials=2``: :func:`_consumer_bs2_ir`)."""
    Sc = _scales()

    def consumer(Fr: WsFrame) -> kir.Block:
        if partials == 2:
            return _consumer_bs2_ir(Fr, Sc, srow, kb_of, early_release, late_scales)
        return _consumer_bs_ir(Fr, Sc, srow, segments, kb_of, early_release, late_scales, prefetch_scales)

    F, body = ws_body_ir(cfg, prob, a, b, ep, desc, tx, consumer)
    descr: Tuple[str, ...] = (
        "",
        f"block-scaled wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: "
        f"C[M,N] = {'alpha * ' if prob.dtype not in INT_TYPES else ''}"
        "sum_kb sa[m,kb] sb[n/128,kb] (A @ B)[kb block]",
        f"A row-major, B column-major (K-major), {prob.dtype} in, "
        f"{'s32' if prob.dtype in INT_TYPES else 'f32'} block sums + f32 promotion per "
        f"{SCALE_K}-element k block, {prob.out} out",
        f"persistent, warp-specialized: 1 producer + {F.CW} consumer warpgroup(s); block "
        f"{cfg.bm}x{cfg.bn}x{SCALE_K} (fp8), {F.S}-stage full/empty mbarrier pipeline",
        "scale_a: (M, ceil(K/128)) f32 at SA[m * sa_m + kb * sa_k]; scale_b: (ceil(N/128), ceil(K/128)) "
        "f32 at SB[nb * sb_n + kb * sb_k]",
    )
    if partials == 2:
        descr += ("two partial accumulators: k-tile kt's wgmmas run while k-tile kt - 1 is promoted",)
    if early_release:
        descr += ("a stage goes back to the producer as soon as its wgmmas completed, before the promotion",)
    if late_scales:
        descr += ("the scale products after the k-tile's wgmmas are issued",)
    if prefetch_scales:
        descr += ("k-tile kt + 1's scales read during k-tile kt",)
    k = kernel90(
        cfg,
        prob,
        a,
        b,
        desc,
        name,
        F.E,
        body,
        descr,
        tuple(ep["fns"].values()) + (srow,),
        ("tma",) + (("cluster",) if cfg.cluster > 1 else ()) + ("named_sync", "wgmma"),
        tma=True,
        devfns=(schedule_devfn(cfg.group_m),),
    )
    return dataclasses.replace(k, params=k.params + Sc.params())


# ============================================================================ promotion proof
def _loops_with(node: Any, kind: type) -> List[kir.For]:
    return [
        n
        for n in kir.walk(node)
        if isinstance(n, kir.For) and any(isinstance(x, kind) for x in kir.walk(n.body))
    ]


def _events(
    stmts: Tuple[kir.Stmt, ...],
    env: Dict[str, int],
    out: List[Tuple[Any, ...]],
    accs: Tuple[kir.Var, kir.Var, kir.Var],
) -> None:
    """The k-tile body's effects in program order, unrolled loops expanded: ("zero", i),
    ("mma",), ("wait", n), ("promote", i, part index, scale index), ("load", variable,
    claim, loop values), ("sc", h, the two factors)."""
    acc, part, sc = accs
    for s in stmts:
        if isinstance(s, kir.Block):
            _events(s.body, env, out, accs)
        elif isinstance(s, kir.For):
            if not (
                isinstance(s.start, kir.Const)
                and isinstance(s.stop, kir.Const)
                and isinstance(s.step, kir.Const)
            ):
                raise ProofFailedError(
                    "a loop inside the k-tile loop has runtime bounds", condition="promotion structure"
                )
            for v in range(s.start.value, s.stop.value, s.step.value):
                _events(s.body.body, {**env, s.var.name: v}, out, accs)
        elif isinstance(s, kir.If):
            if any(isinstance(n, (kir.Wgmma, kir.WgmmaWait, kir.For)) for n in kir.walk(s)) or any(
                isinstance(n, kir.Assign) and isinstance(n.lhs, kir.Index) for n in kir.walk(s)
            ):
                raise ProofFailedError(
                    "a wgmma, loop or register-array write under a condition in the k-tile loop",
                    condition="promotion structure",
                )
            _events(s.then.body, env, out, accs)  # the guarded loads (else: the value stays 0)
        elif isinstance(s, kir.Assign) and isinstance(s.lhs, kir.Var) and isinstance(s.rhs, kir.Mem):
            out.append(("load", s.lhs, s.rhs.claim, dict(env)))
        elif isinstance(s, kir.Wgmma):
            if s.acc is not part:
                raise ProofFailedError(
                    "a wgmma of the k-tile loop accumulates outside part", condition="promotion structure"
                )
            out.append(("mma",))
        elif isinstance(s, kir.WgmmaWait):
            out.append(("wait", s.n))
        elif isinstance(s, kir.Assign) and isinstance(s.lhs, kir.Index):
            base = s.lhs.base
            i = int(evaluate.ev(s.lhs.idx[0], env))
            if base is part:
                zero = (isinstance(s.rhs, kir.FloatLit) and s.rhs.text in ("0.f", "0.0f")) or (
                    isinstance(s.rhs, kir.Const) and s.rhs.value == 0
                )
                if not zero or s.op != "=":
                    raise ProofFailedError(
                        "part is written other than zeroed", condition="promotion structure"
                    )
                out.append(("zero", i))
            elif base is sc:
                r = _scale_product(s)
                out.append(("sc", i, r.a, r.b))
            elif base is acc:
                rhs = s.rhs
                if isinstance(rhs, kir.Bin) and isinstance(rhs.a, kir.Cast) and rhs.a.ctype == "float":
                    rhs = kir.Bin(rhs.op, rhs.a.a, rhs.b)  # an s32 partial converted to f32
                if not (
                    s.op == "+="
                    and isinstance(rhs, kir.Bin)
                    and rhs.op == "*"
                    and isinstance(rhs.a, kir.Index)
                    and rhs.a.base is part
                    and isinstance(rhs.b, kir.Index)
                    and rhs.b.base is sc
                ):
                    raise ProofFailedError(
                        "an accumulator update other than acc[i] += part[j] * sc[h]",
                        condition="promotion structure",
                    )
                out.append(
                    ("promote", i, int(evaluate.ev(rhs.a.idx[0], env)), int(evaluate.ev(rhs.b.idx[0], env)))
                )


def prove_promotion(k: kir.Kernel, cfg: Sm90Config, dtype: str, srow: kir.ProvenFn, log: ProofLog) -> None:
    """The promotion, read from the IR ``k``: the k-tile loop (the non-unrolled loop whose
    body issues the wgmmas; start 0, step 1) accumulates into ``part`` and promotes into
    ``acc``.  In one iteration, in program order: every register of ``part`` is zeroed
    before each run of wgmmas, each promotion follows a ``wgmma.wait_group 0`` after the
    last wgmma, updates every register of ``acc`` once from the same register of ``part``
    and the scale ``sc[h]`` of that register's C row (``64 g + lp_sa_row(t, h)`` equals the
    accumulator map's row at (t, i, g) for every thread, register and warpgroup: the
    lowered body evaluated), and the wgmmas between promotions read :data:`SCALE_K`
    elements of K (instructions x k per instruction): the interval equals the scale block.
    The scale reads of the iteration claim k block ``kt``, the loop's own variable."""
    L = _kt_loop(k, to_kt=False)
    names = {n.name: n for n in kir.walk(k.body) if isinstance(n, kir.Var)}
    acc, part, sc = names.get("acc"), names.get("part"), names.get("sc")
    if acc is None or part is None or sc is None:
        raise ProofFailedError("no acc / part / sc registers in the kernel", condition="promotion structure")
    ev: List[Tuple[Any, ...]] = []
    _events(L.body.body, {}, ev, (acc, part, sc))
    R = cfg.bn // 2
    kin = gmma.WGMMA_TYPES[dtype][1]
    intervals: List[int] = []
    zeroed: set = set()
    mma, waited, promoted = 0, False, []
    loaded: Dict[int, Tuple[kir.Claim, Dict[str, int]]] = {}
    sc_set: Dict[int, bool] = {}
    for e in ev:
        if e[0] == "load":
            loaded[id(e[1])] = (e[2], e[3])
        elif e[0] == "sc":
            _check_scale_factors(e[1], loaded.get(id(e[2])), loaded.get(id(e[3])), L.var)
            sc_set[e[1]] = True
        elif e[0] == "zero":
            zeroed.add(e[1])
        elif e[0] == "mma":
            if mma == 0 and zeroed != set(range(R)):
                raise ProofFailedError(
                    f"part is not zeroed before the wgmmas (register {min(set(range(R)) - zeroed)} is not)",
                    condition="partial accumulator zeroed per block",
                )
            mma, waited = mma + 1, False
        elif e[0] == "wait":
            waited = waited or (e[1] == 0 and mma > 0)
        elif e[0] == "promote":
            if not waited:
                raise ProofFailedError(
                    "a promotion reads part before wgmma.wait_group 0",
                    condition="promotion after the wgmmas complete",
                )
            if not sc_set.get(e[3]):
                raise ProofFailedError(
                    f"register {e[1]} is promoted with sc[{e[3]}] before this k-tile's scales set it",
                    condition="promotion with the k-tile's scales",
                    witness=(e[1], e[3]),
                )
            promoted.append(e[1:])
            if len(promoted) == R:
                if sorted(p[0] for p in promoted) != list(range(R)) or any(p[0] != p[1] for p in promoted):
                    raise ProofFailedError(
                        "a promotion does not add every register of part to its own register of acc once",
                        condition="promotion covers the registers",
                    )
                _check_rows(cfg, srow, {p[0]: p[2] for p in promoted})
                intervals.append(mma * kin)
                mma, zeroed, promoted = 0, set(), []
    if promoted or mma:
        raise ProofFailedError(
            "wgmmas or register updates left unpromoted at the end of the k-tile",
            condition="promotion structure",
        )
    if intervals != [SCALE_K]:
        raise ProofFailedError(
            f"promotion interval(s) {intervals} elements of K per k-tile; the scale block is {SCALE_K}",
            condition="promotion interval equals the scale block",
            witness=tuple(intervals),
        )
    log.add(
        "equal",
        f"promotion interval: the k-tile loop promotes once per iteration, after wgmma.wait_group 0, "
        f"{R} registers each from its own partial register and its C row's scale, the partial zeroed "
        f"before; {SCALE_K // kin} wgmma k{kin} between promotions = {SCALE_K} elements = the scale "
        "block; the scales read are k block kt",
        "exhaustive",
        len(ev),
    )


def _kt_loop(k: kir.Kernel, to_kt: bool = True) -> kir.For:
    """The k-tile loop: the one innermost non-unrolled loop whose body issues wgmma,
    walking ``kt = 0, 1, ...`` (``to_kt``: up to a variable ``KT``)."""
    loops = [f for f in _loops_with(k.body, kir.Wgmma) if not f.unroll]
    inner = [f for f in loops if not any(g is not f and any(x is g for x in kir.walk(f.body)) for g in loops)]
    if len(inner) != 1:
        raise ProofFailedError(
            f"{len(inner)} k-tile loops issue wgmma (need exactly one)", condition="promotion structure"
        )
    L = inner[0]
    if not (
        isinstance(L.start, kir.Const)
        and L.start.value == 0
        and isinstance(L.step, kir.Const)
        and L.step.value == 1
        and (isinstance(L.stop, kir.Var) or not to_kt)
    ):
        raise ProofFailedError(
            "the k-tile loop does not walk kt = 0, 1, ..." + (", KT - 1" if to_kt else ""),
            condition="promotion structure",
        )
    return L


def _drain_of(k: kir.Kernel, L: kir.For) -> Tuple[kir.Stmt, ...]:
    """The statements after the k-tile loop ``L`` in its block up to the accumulators'
    last use by the consumer's own code: the drain and the release of the last stage,
    stopping at the first statement that rescales ``acc`` (``acc[i] = ...``), synchronizes
    the warpgroup or touches shared memory (the epilogue)."""

    def end(x: kir.Stmt) -> bool:
        for n in kir.walk(x):
            if isinstance(n, kir.Assign) and isinstance(n.lhs, kir.Index) and n.op == "=":
                if isinstance(n.lhs.base, kir.Var) and n.lhs.base.name == "acc":
                    return True
            if isinstance(n, (kir.NamedBarrier, kir.SyncThreads)) or (
                isinstance(n, kir.Mem) and n.space == "shared"
            ):
                return True
        return False

    for blk in kir.walk(k.body):
        if isinstance(blk, kir.Block) and any(x is L for x in blk.body):
            i = next(j for j, x in enumerate(blk.body) if x is L)
            out: List[kir.Stmt] = []
            for x in blk.body[i + 1 :]:
                if end(x):
                    break
                out.append(x)
            return tuple(out)
    raise ProofFailedError("the k-tile loop is in no block", condition="promotion structure")


def _parity_or_first(c: kir.Expr) -> bool:
    """``c`` is ``(v & 1) == 1``, ``v >= 1`` or ``v == 0`` for a variable ``v``: the only
    conditions on ``kt`` / ``KT`` the pipelined consumers may take (their effects then
    repeat with period 2 from ``kt = 1`` on)."""
    one = lambda e: isinstance(e, kir.Const) and e.value == 1  # noqa: E731
    if isinstance(c, kir.Bin) and c.op == "==" and isinstance(c.a, kir.Var) and isinstance(c.b, kir.Const):
        return c.b.value == 0  # v == 0: the first k-tile only
    if not (isinstance(c, kir.Bin) and one(c.b)):
        return False
    if c.op == ">=":
        return isinstance(c.a, kir.Var)
    a = c.a
    return c.op == "==" and isinstance(a, kir.Bin) and a.op == "&" and isinstance(a.a, kir.Var) and one(a.b)


def _pipe_events(
    stmts: Tuple[kir.Stmt, ...],
    env: Dict[str, int],
    out: List[Tuple[Any, ...]],
    arrays: Dict[int, str],
    acc: kir.Var,
) -> None:
    """The effects of ``stmts`` in program order for loop values ``env`` (the k-tile ``kt``
    or the k-tile count ``KT`` among them): unrolled loops expanded, a condition on those
    values evaluated (its branch taken), any other condition a guarded load (its value
    stays 0 otherwise: nothing else may stand under it).  Events: ("zero", array, i),
    ("mma", array), ("commit",), ("wait", n), ("load", variable, claim, env), ("sc",
    array, h, the two factors), ("copy", array, h, source array, h'), ("promote", i,
    array, j, scale array, h)."""
    for s in stmts:
        if isinstance(s, kir.Block):
            _pipe_events(s.body, env, out, arrays, acc)
        elif isinstance(s, kir.For):
            lo, hi, step = s.start, s.stop, s.step
            if not (isinstance(lo, kir.Const) and isinstance(hi, kir.Const) and isinstance(step, kir.Const)):
                raise ProofFailedError(
                    "a loop inside the k-tile loop has runtime bounds", condition="promotion structure"
                )
            for v in range(lo.value, hi.value, step.value):
                _pipe_events(s.body.body, {**env, s.var.name: v}, out, arrays, acc)
        elif isinstance(s, kir.If):
            names = {n.name for n in kir.walk(s.cond) if isinstance(n, kir.Var)}
            if names and names <= set(env):
                if not _parity_or_first(s.cond):
                    raise ProofFailedError(
                        f"a condition on the loop values other than (v & 1) == 1 or v >= 1: "
                        f"{kir.emit_expr_safe(s.cond)}",
                        condition="promotion structure",
                    )
                taken = int(evaluate.ev(s.cond, env)) != 0
                br = s.then if taken else s.orelse
                if br is not None:
                    _pipe_events(br.body, env, out, arrays, acc)
                continue
            if (
                s.orelse is not None
                or any(
                    isinstance(n, (kir.Wgmma, kir.WgmmaWait, kir.WgmmaCommit, kir.For)) for n in kir.walk(s)
                )
                or any(isinstance(n, kir.Assign) and isinstance(n.lhs, kir.Index) for n in kir.walk(s))
            ):
                raise ProofFailedError(
                    "a wgmma, loop or register-array write under a runtime condition in the k-tile loop",
                    condition="promotion structure",
                )
            _pipe_events(s.then.body, env, out, arrays, acc)
        elif isinstance(s, kir.Assign) and isinstance(s.lhs, kir.Var) and isinstance(s.rhs, kir.Mem):
            out.append(("load", s.lhs, s.rhs.claim, dict(env)))
        elif isinstance(s, kir.Assign) and isinstance(s.lhs, kir.Var):
            out.append(("clear", s.lhs))  # a scale register reset (to the guarded read's 0)
        elif isinstance(s, kir.Wgmma):
            if id(s.acc) not in arrays or arrays[id(s.acc)] not in ("part", "part1"):
                raise ProofFailedError(
                    "a wgmma of the k-tile loop accumulates outside the partials",
                    condition="promotion structure",
                )
            out.append(("mma", arrays[id(s.acc)]))
        elif isinstance(s, kir.WgmmaCommit):
            out.append(("commit",))
        elif isinstance(s, kir.WgmmaWait):
            out.append(("wait", s.n))
        elif isinstance(s, kir.Assign) and isinstance(s.lhs, kir.Index):
            base, i = s.lhs.base, int(evaluate.ev(s.lhs.idx[0], env))
            name = arrays.get(id(base))
            r = s.rhs
            if name in ("part", "part1"):
                zero = (isinstance(r, kir.FloatLit) and r.text in ("0.f", "0.0f")) or (
                    isinstance(r, kir.Const) and r.value == 0
                )
                if not zero or s.op != "=":
                    raise ProofFailedError(
                        "a partial is written other than zeroed", condition="promotion structure"
                    )
                out.append(("zero", name, i))
            elif name in ("sc", "scp") and s.op == "=" and isinstance(r, kir.Index) and id(r.base) in arrays:
                out.append(("copy", name, i, arrays[id(r.base)], int(evaluate.ev(r.idx[0], env))))
            elif name in ("sc", "scp"):
                p = _scale_product(s)
                out.append(("sc", name, i, p.a, p.b))
            elif base is acc:
                if isinstance(r, kir.Bin) and isinstance(r.a, kir.Cast) and r.a.ctype == "float":
                    r = kir.Bin(r.op, r.a.a, r.b)  # an s32 partial converted to f32
                if not (
                    s.op == "+="
                    and isinstance(r, kir.Bin)
                    and r.op == "*"
                    and isinstance(r.a, kir.Index)
                    and arrays.get(id(r.a.base)) in ("part", "part1")
                    and isinstance(r.b, kir.Index)
                    and arrays.get(id(r.b.base)) in ("sc", "scp")
                ):
                    raise ProofFailedError(
                        "an accumulator update other than acc[i] += partial[j] * scale[h]",
                        condition="promotion structure",
                    )
                out.append(
                    (
                        "promote",
                        i,
                        arrays[id(r.a.base)],
                        int(evaluate.ev(r.a.idx[0], env)),
                        arrays[id(r.b.base)],
                        int(evaluate.ev(r.b.idx[0], env)),
                    )
                )
            else:
                raise ProofFailedError(
                    f"an unexpected register-array write in the k-tile loop ({kir.emit_expr_safe(s.lhs)})",
                    condition="promotion structure",
                )


def _simulate_pipeline(
    ev: List[Tuple[Any, ...]],
    KT: int,
    cfg: Sm90Config,
    kin: int,
    srow: kir.ProvenFn,
    kt_var: kir.Var,
    rows_checked: set,
) -> None:
    """Run the events of one tile of ``KT`` k-tiles (("iter", kt) marks each iteration)
    against the wgmma group semantics and check the promotion's obligations (see
    :func:`prove_promotion_pipelined`)."""
    R = cfg.bn // 2
    st: Dict[str, Dict[str, Any]] = {
        p: dict(kt=None, mmas=0, zeroed=set(), done={}) for p in ("part", "part1")
    }
    open_: List[str] = []
    groups: List[List[str]] = []
    holds: Dict[Tuple[str, int], int] = {}
    loaded: Dict[int, Tuple[kir.Claim, Dict[str, int]]] = {}
    promoted: List[int] = []
    cur = -1

    def fail(msg: str, cond: str) -> None:
        raise ProofFailedError(f"KT = {KT}, k-tile {cur}: {msg}", condition=cond, witness=(KT, cur))

    def busy(p: str) -> bool:
        return p in open_ or any(p in g for g in groups)

    for e in ev:
        kind = e[0]
        if kind == "iter":
            cur = e[1]
        elif kind == "load":
            loaded[id(e[1])] = (e[2], e[3])
        elif kind == "clear":
            loaded.pop(id(e[1]), None)
        elif kind == "sc":
            holds[(e[1], e[2])] = _scale_block_of(e[2], loaded.get(id(e[3])), loaded.get(id(e[4])), kt_var)
        elif kind == "copy":
            if (e[3], e[4]) not in holds:
                fail(
                    f"{e[1]}[{e[2]}] copies {e[3]}[{e[4]}] before it is set",
                    "promotion with the k-tile's scales",
                )
            holds[(e[1], e[2])] = holds[(e[3], e[4])]
        elif kind == "zero":
            p = st[e[1]]
            if busy(e[1]):
                fail(f"{e[1]} is zeroed while a wgmma writes it", "no register write under a wgmma in flight")
            if p["kt"] is not None:
                fail(
                    f"{e[1]} is zeroed before k-tile {p['kt']}'s sum in it is promoted",
                    "every partial promoted",
                )
            p["zeroed"].add(e[2])
        elif kind == "mma":
            p = st[e[1]]
            if p["kt"] is None:
                if p["zeroed"] != set(range(R)):
                    fail(
                        f"{e[1]} is not zeroed before the k-tile's first wgmma",
                        "partial accumulator zeroed per block",
                    )
                p.update(kt=cur, mmas=0, zeroed=set())
            elif p["kt"] != cur or p["done"]:
                fail(
                    f"{e[1]} takes k-tile {cur}'s wgmma while it holds k-tile {p['kt']}'s sum",
                    "one k-tile per partial",
                )
            p["mmas"] += 1
            open_.append(e[1])
        elif kind == "commit":
            groups.append(open_)
            open_ = []
        elif kind == "wait":
            groups = groups[len(groups) - e[1] :] if e[1] else []
        elif kind == "promote":
            _i, pn, j, sn, h = e[1:]
            p = st[pn]
            if busy(pn):
                fail(
                    f"a promotion reads {pn} while its wgmmas are in flight",
                    "promotion after the wgmmas complete",
                )
            if p["kt"] is None:
                fail(f"a promotion reads {pn}, which holds no k-tile's sum", "promotion structure")
            if _i != j or _i in p["done"]:
                fail(
                    f"acc[{_i}] takes {pn}[{j}] (each register once, from its own partial register)",
                    "promotion covers the registers",
                )
            if p["mmas"] * kin != SCALE_K:
                fail(
                    f"promotion interval {p['mmas'] * kin} elements of K; the scale block is {SCALE_K}",
                    "promotion interval equals the scale block",
                )
            if holds.get((sn, h)) != p["kt"]:
                fail(
                    f"register {_i} of k-tile {p['kt']} is promoted with {sn}[{h}], which holds "
                    f"the scales of k-tile {holds.get((sn, h))}",
                    "promotion with the k-tile's scales",
                )
            p["done"][_i] = h
            if len(p["done"]) == R:
                key = tuple(sorted(p["done"].items()))
                if key not in rows_checked:
                    _check_rows(cfg, srow, dict(p["done"]))
                    rows_checked.add(key)
                promoted.append(p["kt"])
                p.update(kt=None, mmas=0, zeroed=set(), done={})
    if promoted != list(range(KT)) or open_ or any(p["kt"] is not None for p in st.values()):
        raise ProofFailedError(
            f"KT = {KT}: the k-tiles promoted are {promoted}, not each of 0..{KT - 1} once in order",
            condition="every partial promoted",
            witness=(KT, tuple(promoted)),
        )


def prove_promotion_pipelined(
    k: kir.Kernel, cfg: Sm90Config, dtype: str, srow: kir.ProvenFn, log: ProofLog, kt_max: int = 8
) -> None:
    """The promotion of the two-partial consumer (``partials=2``), read from the IR ``k``:
    the k-tile loop's body and the drain after it are run, for every tile of ``KT = 0 ..
    kt_max`` k-tiles, against the wgmma group semantics (a commit closes a group;
    ``wait_group n`` completes all but the ``n`` newest), conditions on ``kt`` and ``KT``
    evaluated.  Checked: a partial is zeroed (every register) before the first wgmma of
    its k-tile, takes the wgmmas of one k-tile only, and is never written while a wgmma
    on it is in flight; each promotion reads a partial whose wgmmas are complete, adds
    every register once to its own accumulator register with the scale of its C row
    (:func:`_check_rows`) and of its own k-tile (the scale register was set in that
    k-tile's iteration from reads claiming k block ``kt``: :func:`_check_scale_factors`,
    then copied), the wgmmas summed are ``SCALE_K`` elements of K; the k-tiles
    ``0 .. KT - 1`` are promoted once each, in order, nothing left in flight.  The body's
    conditions read ``kt`` only through ``kt & 1`` and ``kt >= 1`` (any other variable
    is refused), so from ``kt = 1`` on its effects repeat with period 2 and the drain's
    depend on ``KT``'s parity: ``kt_max >= 4`` covers every ``KT``."""
    L = _kt_loop(k)
    drain = _drain_of(k, L)
    names = {n.name: n for n in kir.walk(k.body) if isinstance(n, kir.Var)}
    if any(n not in names for n in ("acc", "part", "sc")):
        raise ProofFailedError("no acc / part / sc registers in the kernel", condition="promotion structure")
    arrays: Dict[int, str] = {id(names[n]): n for n in ("part", "part1", "sc", "scp") if n in names}
    kin = gmma.WGMMA_TYPES[dtype][1]
    KTv = L.stop
    if not isinstance(KTv, kir.Var):  # _kt_loop checked it
        raise ProofFailedError(
            "the k-tile loop's bound is not the k-tile count", condition="promotion structure"
        )
    rows_checked: set = set()
    n_ev = 0
    for KT in range(kt_max + 1):
        ev: List[Tuple[Any, ...]] = []
        for kt in range(KT):
            ev.append(("iter", kt))
            _pipe_events(L.body.body, {L.var.name: kt}, ev, arrays, names["acc"])
        ev.append(("iter", KT))
        _pipe_events(drain, {KTv.name: KT}, ev, arrays, names["acc"])
        _simulate_pipeline(ev, KT, cfg, kin, srow, L.var, rows_checked)
        n_ev += len(ev)
    R = cfg.bn // 2
    how = (
        "two partials, k-tile kt's wgmmas in flight while kt - 1 is promoted"
        if "part1" in names
        else "scales read one k-tile ahead"
    )
    log.add(
        "equal",
        f"promotion interval ({how}): for every tile of KT = 0..{kt_max} k-tiles (period 2 "
        f"in kt), run against the wgmma group semantics, each k-tile's sum is zeroed, takes "
        f"{SCALE_K // kin} wgmma k{kin} = {SCALE_K} elements = the scale block, is promoted once "
        f"after its group completed, {R} registers each from its own partial register with its "
        "C row's scale and its own k block's (the claims' k block evaluated where each read ran), "
        "no partial written while a wgmma on it is in flight",
        "exhaustive",
        n_ev,
    )


def _scale_block_of(
    h: int,
    fa: Optional[Tuple[kir.Claim, Dict[str, int]]],
    fb: Optional[Tuple[kir.Claim, Dict[str, int]]],
    kt: kir.Var,
) -> int:
    """``sc[h] = x * y`` with ``x`` the value of a scale_a read whose row map is taken at
    ``h`` and ``y`` of a scale_b read (the reads as the loop values were when they ran, in
    this k-tile or an earlier one): the k block both claim, evaluated there (they must
    agree).  Returns it."""
    blocks = []
    for f, name in ((fa, "scale_a"), (fb, "scale_b")):
        if f is None or not f[0].what.startswith(name) or not f[0].bounds:
            raise ProofFailedError(
                f"sc[{h}] is not the product of a scale_a and a scale_b read",
                condition="promotion with the k-tile's scales",
                witness=h,
            )
        names = {n.name for n in kir.walk(f[0].bounds[-1][0]) if isinstance(n, kir.Var)}
        if not names <= {kt.name} or not names:
            raise ProofFailedError(
                f"{f[0].what}: its k block is not a function of the k-tile loop's kt",
                condition="scale block of the k-tile",
            )
        blocks.append(int(evaluate.ev(f[0].bounds[-1][0], f[1])))
    _check_row_half(fa, h)  # type: ignore[arg-type]
    if blocks[0] != blocks[1]:
        raise ProofFailedError(
            f"sc[{h}] multiplies scale_a of k block {blocks[0]} by scale_b of k block {blocks[1]}",
            condition="promotion with the k-tile's scales",
            witness=tuple(blocks),
        )
    return blocks[0]


def _check_scale_factors(
    h: int,
    fa: Optional[Tuple[kir.Claim, Dict[str, int]]],
    fb: Optional[Tuple[kir.Claim, Dict[str, int]]],
    kt: kir.Var,
) -> None:
    """``sc[h] = x * y`` in the k-tile: ``x`` loaded in this iteration by the scale_a read
    whose row map is taken at ``h`` (its claim's ``LayoutApp`` of the row map), ``y`` by the
    scale_b read, both claiming k block ``kt`` (the loop's variable itself)."""
    for f, name in ((fa, "scale_a"), (fb, "scale_b")):
        if f is None or not f[0].what.startswith(name):
            raise ProofFailedError(
                f"sc[{h}] is not the product of this k-tile's scale_a and scale_b reads",
                condition="promotion with the k-tile's scales",
                witness=h,
            )
        if not f[0].bounds or f[0].bounds[-1][0] is not kt:
            raise ProofFailedError(
                f"{f[0].what}: its k block is not the k-tile loop's kt", condition="scale block of the k-tile"
            )
    if fa is None:  # checked above: the loop raises for a missing factor
        raise ProofFailedError(f"sc[{h}]: no scale_a read", condition="promotion with the k-tile's scales")
    _check_row_half(fa, h)


def _check_row_half(fa: Tuple[kir.Claim, Dict[str, int]], h: int) -> None:
    """The scale_a read ``fa`` (its claim and environment) takes the row map at row half
    ``h``: its claim's one ``LayoutApp`` of the row map evaluates to ``h``."""
    claim, env = fa
    rows = [n for n in kir.walk(claim.addr) if isinstance(n, kir.LayoutApp)]
    if len(rows) != 1 or int(evaluate.ev(rows[0].coords[1], env)) != h:
        raise ProofFailedError(
            f"sc[{h}] multiplies the scale_a of another row half",
            condition="scale row of every register",
            witness=h,
        )


def _scale_product(s: kir.Assign) -> kir.Bin:
    """The right side of ``sc[h] = x * y`` (two scalar registers), else refused."""
    r = s.rhs
    if not (
        s.op == "="
        and isinstance(r, kir.Bin)
        and r.op == "*"
        and isinstance(r.a, kir.Var)
        and isinstance(r.b, kir.Var)
    ):
        raise ProofFailedError(
            "a scale register set other than sc[h] = scale_a value * scale_b value",
            condition="promotion structure",
        )
    return r


def _check_rows(cfg: Sm90Config, srow: kir.ProvenFn, h_of: Dict[int, int]) -> None:
    """Register i of thread t in warpgroup g takes scale row ``64 g + lp_sa_row(t, h_of[i])``:
    equal to the accumulator map's row of (t, i, g) for all of them."""
    cm = c_map(cfg)
    R = cfg.bn // 2
    # the map's values colexicographically: thread fastest, then register, then warpgroup
    want = (
        (np.array(cm.eval_all(), dtype=np.int64) % cfg.bm).reshape(cfg.warpgroups, R, 128).transpose(2, 1, 0)
    )
    t = np.arange(128)[:, None, None]
    g = np.arange(cfg.warpgroups)[None, None, :]
    hs = np.array([h_of[int(x)] for x in range(cfg.bn // 2)], dtype=np.int64)[None, :, None]
    got = 64 * g + evaluate.ev(
        srow.body, {"t": np.broadcast_to(t, want.shape), "h": np.broadcast_to(hs, want.shape)}
    )
    got = np.broadcast_to(got, want.shape)
    if np.any(got != want):
        tt, ii, gg = (int(v) for v in np.argwhere(got != want)[0])
        raise ProofFailedError(
            f"register {ii} of thread {tt} (warpgroup {gg}) is promoted with the scale of row "
            f"{int(got[tt, ii, gg])}, its C row is {int(want[tt, ii, gg])}",
            condition="scale row of every register",
            witness=(tt, ii, gg),
        )


# ============================================================================ generator
_MEMO: Dict[Tuple[Any, ...], GemmKernel] = {}


def _epilogue_base(config: Optional[Sm90Config], epilogue: Optional[EpilogueConfig]) -> Sm90Config:
    """The tile configuration of a kernel: ``config``, or the epilogue's base (the two must
    agree where both are given)."""
    if epilogue is None:
        return (config or BLOCKSCALE_DEFAULT).validate()
    if not isinstance(epilogue, EpilogueConfig):
        raise GemmConfigError(
            f"generate_blockscale: epilogue must be an EpilogueConfig, got {type(epilogue).__name__}"
        )
    epilogue.validate()
    if config is not None and config != epilogue.base:
        raise GemmConfigError(
            f"generate_blockscale: config {config.key()} and the epilogue's base {epilogue.base.key()} "
            "differ: pass one of them (the epilogue's base is the kernel's tile)"
        )
    return epilogue.base


def generate_blockscale(
    config: Optional[Sm90Config] = None,
    problem: Optional[GemmProblem] = None,
    *,
    epilogue: Optional[EpilogueConfig] = None,
    memo: bool = True,
    partials: int = 1,
    early_release: bool = False,
    late_scales: bool = False,
    prefetch_scales: bool = False,
    _segments: int = 1,
    _kb_of: Optional[Callable[[kir.Var], kir.Expr]] = None,
) -> GemmKernel:
    """Build, prove and emit the block-scaled kernel (default :data:`BLOCKSCALE_DEFAULT`,
    e4m3 -> bf16).  Its parameters: the ws kernel's (tensor maps, C, M, N, K in 16-bit
    units, ldc, c_vec, the fp8 kernels' per-tensor ``scale``), then ``SA, SB`` (f32
    pointers), ``sa_m, sa_k, sb_n, sb_k`` (the scale layouts' strides, elements) and ``KB,
    NB`` (the scale tensors' k blocks and scale_b's row blocks).

    ``epilogue`` (an :class:`~layoutproof.gpu.kernels.epilogue.EpilogueConfig` whose base
    is the tile; ``config`` may then be left out) fuses the epilogue options, rewritten on
    this kernel's IR by :func:`~layoutproof.gpu.kernels.epilogue.epilogue_ir` -- where the
    promoted f32 accumulators are packed into the staging buffer -- so that every output is
    ``C = act(alpha * sum_kb scale_a * scale_b * (A_kb @ B_kb) + beta * Cin + bias)`` in f32
    arithmetic, with the bias along N or M (f32, f16 or bf16) and ``act`` one of relu, silu,
    gelu.  There is one ``alpha``: for fp8 it is the kernel's per-tensor ``scale`` (applied
    to the promoted accumulators before the epilogue; the host passes the epilogue's own
    ``alpha`` parameter as 1); the integer kernels have no ``scale`` and take ``alpha``
    through the epilogue (``alpha_only`` without a C input).  The epilogue's parameters
    follow the scales' (``bias``, then ``alpha`` or ``alpha, beta, Cin, ldci``).  Every
    obligation is discharged on the rewritten tree: the promotion proof, the ws protocol,
    the scale reads' and the epilogue loads' claims, the epilogue's data flow.  Kernels are
    memoized per (config, problem, epilogue), each variant's name distinct.

    ``partials=2`` builds the consumer with two partial accumulators
    (:func:`_consumer_bs2_ir`: k-tile ``kt``'s wgmmas run while ``kt - 1`` is promoted),
    its promotion proven by :func:`prove_promotion_pipelined`; 1 (the default) is the
    kernel with one partial, waited for before each promotion.  ``early_release=True``
    gives a stage back to the producer as soon as its wgmmas completed, before the
    promotion (one partial: the k-tile's own stage right after its ``wait_group 0``,
    ``consumer_ir(release="same")``, the protocol model-checked for that order; two: the
    previous stage right after the ``wait_group 1``).  ``late_scales=True`` reads the
    scales before the stage's barrier wait as before but multiplies them after the
    wgmmas' commit (:func:`_scale_loads_split_ir`), keeping global-load latency off the
    path from the barrier to the wgmma issue.  ``prefetch_scales=True`` (one partial)
    reads k-tile ``kt + 1``'s scales during k-tile ``kt`` (:func:`_consumer_bs_ir`), its
    promotion proven by :func:`prove_promotion_pipelined`.

    ``_segments`` / ``_kb_of`` build deliberately wrong kernels for the proofs' tests
    (promotion every ``128 / _segments`` elements; a scale block other than ``kt``).

    >>> from layoutproof.gpu.kernels.epilogue import EpilogueConfig
    >>> e = generate_blockscale(epilogue=EpilogueConfig(BLOCKSCALE_DEFAULT, "relu", bias_axis="m"))
    >>> e.name != generate_blockscale().name, "lp_act_relu(" in e.source
    (True, True)
    """
    cfg = _epilogue_base(config, epilogue)
    prob = problem or GemmProblem("k", "k", "e4m3")
    if prob.dtype in INT_TYPES:  # s32 partials into a scaled float output (check_blockscale)
        GemmProblem(prob.a_major, prob.b_major, "f16", "f32", prob.batch).validate()
    else:
        prob = prob.validate()
    if partials not in (1, 2):
        raise GemmConfigError(f"generate_blockscale: partials={partials!r} must be 1 or 2")
    plain = _segments == 1 and _kb_of is None
    if prefetch_scales and (partials != 1 or late_scales):
        raise GemmConfigError("generate_blockscale: prefetch_scales is for partials=1 without late_scales")
    key = (cfg, prob, epilogue, partials, early_release, late_scales, prefetch_scales)
    if memo and plain and key in _MEMO:
        return _MEMO[key]
    check_blockscale(cfg, prob)
    if epilogue is not None:
        check_compute(epilogue, prob)
    log = ProofLog()
    threads = cfg.threads
    a = OperandPlan("a", cfg.bm, cfg.bk, cfg.stages, True, threads, cfg.warpgroups, 64)
    b = OperandPlan("b", cfg.bn, cfg.bk, cfg.stages, True, threads, 1, cfg.bn)
    # the tensor maps the host encodes: 16-bit units of the 8-bit operands (tma_dtype)
    smems = {p.name: plan_stage(cfg, p, log, prob) for p in (a, b)}
    desc = {
        "a": plan_descriptors(a, smems["a"], 64, cfg.warpgroups, log),
        "b": plan_descriptors(b, smems["b"], cfg.bn, 1, log),
    }
    prove_typed_descriptors(a, smems["a"], desc["a"], prob.dtype, 64, cfg.warpgroups, log)
    prove_typed_descriptors(b, smems["b"], desc["b"], prob.dtype, cfg.bn, 1, log)
    plan_c_map(cfg, prob, log)
    log.extend(ProofLog(list(schedule_proofs(cfg.group_m, cfg.cluster))))
    ep = plan_epilogue(prob, log)
    # in a 2-CTA cluster each CTA loads its A tile and half of the shared B tile, multicast
    tx = _prove_cluster_tx(a, b, cfg.cluster, log) if cfg.cluster > 1 else 2 * (a.stage_elems + b.stage_elems)
    srow = kir.from_lowered(lower.lower(scale_row_layout(), ("t", "h"), name="lp_sa_row", log=log))
    log.extend(ProofLog(list(_scale_layout_records())))
    prove_scale_columns(cfg, log)
    prove_k_tail(cfg.bk, log)
    pv = ("" if partials == 1 else f"partials{partials}") + ("early" if early_release else "")
    pv += "late_scales" if late_scales else ""
    pv += "prefetch_scales" if prefetch_scales else ""
    if epilogue is None:
        h = hashlib.sha256(f"blockscale{GENERATOR_VERSION}{cfg}{prob}{pv}".encode()).hexdigest()[:10]
        name = f"lp_gemm_sm90_bs_{prob.key()}_{h}"
    else:
        tag = f"blockscale{GENERATOR_VERSION}{EPILOGUE_VERSION}{epilogue.key()}{prob}{pv}"
        name = f"lp_gemm_sm90_bsep_{prob.key()}_{hashlib.sha256(tag.encode()).hexdigest()[:10]}"
    ir = _source_bs_ir(
        cfg,
        prob,
        a,
        b,
        ep,
        desc,
        tx,
        name,
        srow,
        _segments,
        _kb_of,
        partials,
        early_release,
        late_scales,
        prefetch_scales,
    )
    if epilogue is not None:  # the fused epilogue, its data flow proven on the rewritten tree
        ir, _col = epilogue_ir(ir, epilogue, prob, log, name)
    if partials == 2 or prefetch_scales:
        prove_promotion_pipelined(ir, cfg, prob.dtype, srow, log)
    else:
        prove_promotion(ir, cfg, prob.dtype, srow, log)
    what = (cfg.key() if epilogue is None else epilogue.key()) + ("" if partials == 1 else ", two partials")
    what += ", early release" if early_release else ""
    what += ", late scales" if late_scales else ""
    what += ", prefetched scales" if prefetch_scales else ""
    title = f"proven before emission (block-scaled {what}, {prob.key()})"
    src = finish(ir, log, title, lambda kk: prove_ws_protocol(kk, cfg, tx, log, cfg.cluster))
    gcfg = GemmConfig(
        bm=cfg.bm,
        bn=cfg.bn,
        bk=cfg.bk,
        stages=cfg.stages,
        group_m=cfg.group_m,
        warps_m=cfg.warpgroups * 4,
        warps_n=1,
    )
    kern = GemmKernel(
        gcfg, prob, src, name, threads, cfg.smem_bytes, log, {"a": (3, 3, 3), "b": (3, 3, 3)}, ir
    )
    kern.config = cfg
    if memo and plain:
        _MEMO[key] = kern
    return kern
