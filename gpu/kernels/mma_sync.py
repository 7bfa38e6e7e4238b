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
  bank conflicts (:mod:`layoutproof.gpu.proof.banks`);
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
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Tuple

import numpy as np

from layoutproof import Layout, MalformedLayoutError, Swizzle, composition, symbols, take
from layoutproof.inttuple import raw_product
from layoutproof.layout import top_modes

from ..config import DTYPES, OUT_DTYPES, GemmConfig, GemmProblem
from ..errors import BankConflictError, GemmConfigError, LoweringError, ProofFailedError
from ..isa import atoms, ptx_tables, tiled
from ..proof import banks, kir, lower
from ..proof.record import ProofLog

__all__ = ["GemmKernel", "generate", "choose_swizzle", "OperandPlan"]

GENERATOR_VERSION = "1"


# ============================================================================ the plan
@dataclass
class OperandPlan:
    """Everything about one operand (A or B) of the kernel: its layouts and lowered maps.

    The operand tile is indexed by (x, k) where x is m for A and n for B; ``kmajor`` says
    whether k is the contiguous dimension in global and shared memory.
    """

    name: str  # "a" or "b"
    x_extent: int  # BM or BN
    bk: int
    stages: int
    kmajor: bool
    threads: int
    warps_x: int  # warps along x (warps_m for A, warps_n for B)
    warp_x: int  # warp tile extent along x
    swizzle: Optional[Swizzle] = None
    lowered: Dict[str, Any] = field(default_factory=dict)
    ld_table_var: str = ""  # the loop variable enumerated into a per-thread table
    ld_add_var: str = ""  # the loop variable added as a constant multiple
    ld_add_const: int = 0
    tile_layout: Any = None  # overrides tile(): e.g. wgmma's canonical atoms, tiled
    fns: Dict[str, Any] = field(default_factory=dict)  # proven IR functions
    maps: Dict[str, Any] = field(default_factory=dict)  # layouts the IR's claims apply

    # ------------------------------------------------------------------ shapes
    @property
    def row_len(self) -> int:
        """Elements per shared-memory row (the contiguous extent of the tile)."""
        return self.bk if self.kmajor else self.x_extent

    @property
    def stage_elems(self) -> int:
        return self.x_extent * self.bk

    @property
    def cpr(self) -> int:
        """16-byte chunks per contiguous row."""
        return self.row_len // 8

    @property
    def cp_iters(self) -> int:
        return self.stage_elems // 8 // self.threads

    @property
    def xi(self) -> int:
        """ldmatrix x4 loads per warp per k16 step along x: 16-row blocks (A) or pairs of
        8-column blocks (B) -- both 16 wide."""
        return self.warp_x // 16

    @property
    def ki(self) -> int:
        return self.bk // 16

    # ------------------------------------------------------------------ layouts
    def tile(self) -> Layout:
        """(X, BK, STAGES) -> element offset in the unswizzled buffer."""
        if self.tile_layout is not None:
            return self.tile_layout
        X, BK, S = self.x_extent, self.bk, self.stages
        if self.kmajor:
            return Layout((X, BK, S), (BK, 1, X * BK))
        return Layout((X, BK, S), (1, X, X * BK))

    def tile_index(self) -> Layout:
        """(X, BK) -> column-major tile index x + X*k (the coordinate space of the maps)."""
        return Layout((self.x_extent, self.bk), (1, self.x_extent))

    def copy_tv(self) -> Layout:
        """(thread, iteration) -> tile index of the first element of the 16-byte chunk the
        thread copies (consecutive threads take consecutive chunks of a contiguous row)."""
        X, T, C = self.x_extent, self.threads, self.cpr
        if T % C:
            raise GemmConfigError(
                f"GemmConfig: {T} threads do not tile rows of {C} 16-byte chunks ({self.name})"
            )
        rows_per_iter = T // C
        if self.kmajor:  # a chunk = 8 consecutive k of one row x
            return Layout(((C, rows_per_iter), self.cp_iters), ((8 * X, 1), rows_per_iter))
        return Layout(((C, rows_per_iter), self.cp_iters), ((8, X), X * rows_per_iter))

    def ldsm_map(self) -> Layout:
        """(lane, warp_x, xi, ki) -> tile index of the 16-byte row segment whose address
        ``lane`` supplies to ``ldmatrix.x4`` (``.trans`` when x is contiguous).

        A (x = m), k-major, plain ldmatrix: matrices j = 0..3 are (m 0-7 | 8-15) x (k 0-7 |
        8-15) in the order of the mma A registers a0a1, a2a3, a4a5, a6a7: lane l gives row
        m = l % 16 at k = 8 * (l // 16).  B (x = n), k-major: registers b0b1, b2b3 of the
        n-block 2p, then of 2p + 1: n = l % 8 + 8 * (l // 16), k = 8 * ((l // 8) % 2).
        With x contiguous (.trans), lane l = i + 8 j gives the k row i + 8 * (k-part of j)
        at x-chunk (x-part of j)."""
        X, W = self.x_extent, self.warp_x
        lane: Tuple[Tuple[int, ...], Tuple[int, ...]]
        if self.name == "a":
            if self.kmajor:  # l = (i, j0, j1): m = i + 8 j0, k = 8 j1
                lane = ((8, 2, 2), (1, 8, 8 * X))
            else:  # .trans: k = i + 8 j1, m = 8 j0
                lane = ((8, 2, 2), (X, 8, 8 * X))
        else:
            if self.kmajor:  # n = i + 8 j1, k = 8 j0
                lane = ((8, 2, 2), (1, 8 * X, 8))
            else:  # .trans: k = i + 8 j0, n = 8 j1
                lane = ((8, 2, 2), (X, 8 * X, 8))
        return Layout((lane[0], self.warps_x, self.xi, self.ki), (lane[1], W, 16, 16 * X))


def _swizzled(sw: Optional[Swizzle], L: Layout) -> Any:
    return L if sw is None else composition(sw, L)


def buffer_map(plan: OperandPlan, tile_map: Layout, with_stage: bool = True) -> Any:
    """The composed map (coordinates[, stage]) -> buffer element offset."""
    X, BK = plan.x_extent, plan.bk
    tile2d = plan.tile()  # (X, BK, S)
    flat = Layout((X * BK, plan.stages), (1, X * BK))  # tile index (+ stage) -> (x, k, s) index
    base = composition(tile2d, flat)
    if with_stage:
        shp, std = top_modes(tile_map)
        m = Layout(shp + (plan.stages,), std + (X * BK,))
    else:
        m = tile_map
    return _swizzled(plan.swizzle, composition(base, m))


# ============================================================================ swizzle choice
def _phase_ok(addrs: np.ndarray, kind: str) -> bool:
    try:
        if kind == "ldsm":
            banks.prove_ldmatrix_conflict_free(addrs, 4, what="probe")
        else:
            banks.prove_conflict_free(addrs, 16, what="probe")
        return True
    except (BankConflictError, ProofFailedError):
        return False


def eval_map(L: Any) -> np.ndarray:
    """All values of a layout / composed layout, in colexicographic coordinate order."""
    return np.asarray(L.eval_all(), dtype=np.int64)


def warp_rows(vals: np.ndarray, threads: int) -> np.ndarray:
    """Rearrange per-(thread, rest...) values (thread fastest) into (instructions, 32)."""
    per_thread = vals.reshape(-1, threads)  # rows: the other coordinates
    w = threads // 32
    return per_thread.reshape(-1, w, 32).reshape(-1, 32)


def _access_sets(plan: OperandPlan, sw: Optional[Swizzle]) -> Tuple[np.ndarray, np.ndarray]:
    """Byte addresses of (a) every cp.async 16-byte write instruction (n, 32) and (b) every
    ldmatrix.x4 instruction (n, 32) of one stage, under swizzle ``sw``."""
    saved = plan.swizzle
    plan.swizzle = sw
    try:
        cp = eval_map(buffer_map(plan, plan.copy_tv(), with_stage=False)) * 2
        cp_rows = warp_rows(cp, plan.threads)
        ld = eval_map(buffer_map(plan, plan.ldsm_map(), with_stage=False)) * 2
        ld_rows = ld.reshape(-1, 32)  # lane is the fastest coordinate
    finally:
        plan.swizzle = saved
    return cp_rows, ld_rows


def choose_swizzle(plan: OperandPlan) -> Optional[Swizzle]:
    """The smallest Swizzle<B,3,S> (fewest XOR bits, then smallest shift) whose buffer makes
    every cp.async write and ldmatrix read of the plan conflict-free, or None if the
    unswizzled buffer already is.  M = 3 keeps each 16-byte chunk (8 halves) whole."""
    row = plan.row_len
    shift_min = int(math.log2(row))  # S + M >= log2(row): the source bits are row bits
    cands: List[Optional[Swizzle]] = [None]
    for b in (1, 2, 3):
        for s in range(max(b, shift_min - 3), shift_min + 4):
            try:
                cands.append(Swizzle(b, 3, s))
            except MalformedLayoutError:
                continue
    for sw in cands:
        cp, ld = _access_sets(plan, sw)
        if _phase_ok(cp, "cp") and _phase_ok(ld, "ldsm"):
            return sw
    raise BankConflictError(
        f"no Swizzle<B,3,S> makes the {plan.name.upper()} buffer conflict-free (rows of {row} elements)",
        condition="bank-conflict-free swizzle exists",
    )


# ============================================================================ the kernel
class KernelTile(Protocol):
    """What a :class:`GemmKernel` reads of its configuration: a :class:`GemmConfig`
    (mma.sync) and a :class:`~layoutproof.gpu.kernels.wgmma.Sm90Config` (wgmma) both are."""

    @property
    def bm(self) -> int: ...

    @property
    def bn(self) -> int: ...

    def key(self) -> str: ...


@dataclass
class GemmKernel:
    """A generated, proven kernel: source, entry name, launch facts and its proof log."""

    config: KernelTile
    problem: GemmProblem
    source: str
    name: str
    threads: int
    smem_bytes: int
    proofs: ProofLog
    swizzles: Dict[str, Optional[Tuple[int, int, int]]]
    ir: Any = None  # the kernel IR (layoutproof.gpu.proof.kir.Kernel) the source was printed from

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def grid(self, m: int, n: int) -> Tuple[int, int, int]:
        gm = -(-m // self.config.bm)
        gn = -(-n // self.config.bn)
        return (gm * gn, 1, 1)


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
    cp, ld = _access_sets(p, p.swizzle)
    swname = str(p.swizzle) if p.swizzle is not None else "no swizzle"
    banks.prove_conflict_free(cp, 16, what=f"{P} cp.async 16B writes into {swname} buffer", log=log)
    banks.prove_ldmatrix_conflict_free(ld, 4, what=f"{P} ldmatrix.x4 reads of {swname} buffer", log=log)
    plan_copy(p, log)
    _plan_ldsm(p, log)


def plan_copy(p: OperandPlan, log: ProofLog) -> None:
    """Build and prove the buffer and every cp.async map of operand ``p`` (swizzle set)."""
    P = p.name.upper()
    # the buffer: a bijection onto [0, stages * X * BK)
    buf = _swizzled(p.swizzle, p.tile())
    total = p.stages * p.stage_elems
    lower.prove_bijective(buf, total, what=f"{P} smem buffer {buf} onto [0,{total})", log=log)

    # cp.async: thread/iteration -> chunk is a bijection onto the tile's chunks
    ctv = p.copy_tv()
    chunk_idx = Layout(ctv.shape, _div_stride(ctv.stride, p))
    lower.prove_bijective(
        chunk_idx,
        p.stage_elems // 8,
        what=f"{P} cp.async (thread, iter) -> 16B chunk of the {p.x_extent}x{p.bk} tile",
        log=log,
    )
    # lowered maps: smem destination (thread, iter, stage), x and k coordinates, global offset
    dst = buffer_map(p, ctv)  # (thread, iter, stage) -> offset
    low = lower.lower(
        buffer_map(p, ctv, with_stage=False), ("tid", "it"), name=f"lp_{p.name}_cp_smem", log=log
    )
    p.lowered["cp_smem"] = low
    expr = f"({low.c_expr}) + st * {p.stage_elems}"
    proof = lower.check_c_expr(dst, ("tid", "it", "st"), expr)
    log.add("equal", f"{P} cp.async destination with stage: {expr} == {dst}", proof.method, proof.cases)
    lower.prove_bounds(
        dst, 0, total - 7, what=f"{P} cp.async destination + 16 bytes inside the buffer", log=log
    )
    _prove_aligned(dst, 8, f"{P} cp.async destinations are 16-byte aligned", log)
    xcoord = composition(Layout((p.x_extent, p.bk), (1, 0)), ctv)
    kcoord = composition(Layout((p.x_extent, p.bk), (0, 1)), ctv)
    p.lowered["cp_x"] = lower.lower(xcoord, ("tid", "it"), name=f"lp_{p.name}_cp_x", log=log)
    p.lowered["cp_k"] = lower.lower(kcoord, ("tid", "it"), name=f"lp_{p.name}_cp_k", log=log)
    ld_sym = symbols(f"ld{p.name}")
    glob = Layout((p.x_extent, p.bk), (ld_sym, 1) if p.kmajor else (1, ld_sym))
    gmap = composition(glob, ctv)
    low = lower.lower(gmap, ("tid", "it"), name=f"lp_{p.name}_cp_gmem", log=log)
    p.lowered["cp_gmem"] = low
    # (the stepped pointer the kernel keeps per thread is proven on the IR, against the
    # coordinate maps below, for every leading dimension)
    for k in ("cp_smem", "cp_x", "cp_k"):
        p.fns[k] = kir.from_lowered(p.lowered[k])
    p.fns["cp_gmem"] = kir.from_lowered(low, ret="long long")
    p.maps["cp_x"], p.maps["cp_k"], p.maps["cp_dst"] = xcoord, kcoord, dst


def _plan_ldsm(p: OperandPlan, log: ProofLog) -> None:
    """ldmatrix: (lane, warp, xi, ki) -> buffer offset, in the hoisted form the kernel uses."""
    P = p.name.upper()
    lmap = p.ldsm_map()
    full = buffer_map(p, lmap, with_stage=False)
    args = ("lane", "w", "xi", "ki")
    lower.prove_bounds(
        full, 0, p.stage_elems - 7, what=f"{P} ldmatrix row address + 16 bytes inside one stage", log=log
    )
    _prove_aligned(full, 8, f"{P} ldmatrix row addresses are 16-byte aligned", log)
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


def _div_stride(stride: Any, p: OperandPlan) -> Any:
    """Tile-index strides -> chunk-index strides (the contiguous dimension counts chunks)."""
    X = p.x_extent

    def conv(d: int) -> int:
        x, k = d % X, d // X
        if p.kmajor:
            return x * p.cpr + k // 8  # chunk index = x * cpr + k/8
        return k * p.cpr + x // 8  # chunk index = k * cpr + x/8

    def walk(s: Any) -> Any:
        if isinstance(s, tuple):
            return tuple(walk(e) for e in s)
        return conv(s)

    return walk(stride)


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


def _prove_aligned(L: Any, elems: int, what: str, log: ProofLog) -> None:
    v = eval_map(L)
    bad = np.flatnonzero(v % elems)
    if bad.size:
        raise ProofFailedError(
            f"{what}: offset {int(v[bad[0]])} at coordinate {int(bad[0])} "
            f"is not a multiple of {elems} elements",
            condition="16-byte alignment",
            witness=int(bad[0]),
        )
    log.add("bounds", what, "exhaustive", int(v.size))


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
    one = _swizzled(p.swizzle, take(p.tile(), 0, 2))
    v = eval_map(one)
    inv = np.full(v.size, -1, dtype=np.int64)
    inv[v] = np.arange(v.size)
    return inv


# ============================================================================ the kernel IR
#: per output dtype: (the two-element vector type, the packing of two floats into it, the
#: conversion of one float; None where the element is a float already)
STORE2: Dict[str, Tuple[str, str, Optional[str]]] = {
    "f16": ("__half2", "__floats2half2_rn", "__float2half_rn"),
    "bf16": ("__nv_bfloat162", "__floats2bfloat162_rn", "__float2bfloat16_rn"),
    "f32": ("float2", "make_float2", None),
}


#: element sizes of the pointer types the kernels use (bytes)
def type_sizes(prob: GemmProblem) -> Dict[str, int]:
    return {
        "lp_in_t": DTYPES[prob.dtype][1],
        "lp_out_t": OUT_DTYPES[prob.out][1],
        "__half2": 4,
        "__nv_bfloat162": 4,
        "float2": 8,
        "uint4": 16,
        "unsigned char": 1,
        "float": 4,
        "void": 1,
    }


def addr_of(ptr: kir.Expr) -> kir.Expr:
    """A pointer's byte address (claims count bytes)."""
    return kir.Cast("long long", ptr)


def _pack(name: Optional[str], *xs: kir.Expr) -> kir.Expr:
    return xs[0] if name is None else kir.Call(name, tuple(xs), "lp_out_t")


class Env:
    """The variables of one kernel under construction (kernel IR nodes by name).

    The names the generators read as attributes are declared below (an attribute exists
    once :func:`base_env` or a generator step has added it); per-operand names such as
    ``a_ptr`` or ``B_ld`` are added and read by name (``getattr``)."""

    # the kernel parameters and CUDA builtins (base_env)
    A: kir.Var
    B: kir.Var
    C: kir.Var
    M: kir.Var
    N: kir.Var
    K: kir.Var
    lda: kir.Var
    ldb: kir.Var
    ldc: kir.Var
    c_vec: kir.Var
    threadIdx: kir.Var
    blockIdx: kir.Var
    gridDim: kir.Var
    tmA: kir.Var  # the TMA tensor maps (sm90, loader "tma")
    tmB: kir.Var
    # thread / warp / warpgroup coordinates
    tid: kir.Var
    lane: kir.Var
    wm: kir.Var
    wn: kir.Var
    wg: kir.Var
    wt: kir.Var
    cg: kir.Var
    # the block tile's origin (raster_ir) and whether it lies inside M x N
    m0: kir.Var
    n0: kir.Var
    interior: kir.Var
    # shared memory: the arena, its aligned start, the operand / epilogue buffers, barriers
    smem: kir.Var
    sbase: Optional[kir.Var]
    s0: kir.Var
    sA: kir.Var
    sB: kir.Var
    sE: kir.Var
    full0: kir.Var
    empty0: kir.Var
    # the mma.sync fragments and the stage indices of the cp.async pipeline
    af: kir.Var
    bfr: kir.Var
    stA: kir.Var
    stB: kir.Var

    def __init__(self, **vs: Optional[kir.Var]) -> None:
        self.__dict__.update(vs)

    def add(self, **vs: Optional[kir.Var]) -> None:
        self.__dict__.update(vs)


def ir_var(name: str, ctype: str = "int", values: Optional[Tuple[int, ...]] = None) -> kir.Var:
    """A kernel-IR variable (``values``: the values a loop variable takes, when known)."""
    return kir.Var(name, ctype, values)


def ir_const(name: str, init: Any, ctype: str = "int", **kw: Any) -> Tuple[kir.Var, kir.Decl]:
    """A ``const`` kernel-IR variable and its declaration ``const ctype name = init;``."""
    v = kir.Var(name, ctype)
    return v, kir.Decl(v, kir.lift(init), const=True, **kw)


def raster_ir(E: Env, bm: int, bn: int, group_m: int) -> List[kir.Stmt]:
    """Block rasterization: groups of ``group_m`` block rows walk the grid together (they
    share the B panel in L2); defines m0, n0 and ``interior`` (the tile is inside M, N)."""
    out: List[kir.Stmt] = []
    grid_m, d1 = ir_const("grid_m", (E.M + (bm - 1)) / bm)
    grid_n, d2 = ir_const("grid_n", (E.N + (bn - 1)) / bn)
    pid, d3 = ir_const("pid", E.blockIdx)
    per_group, d4 = ir_const("per_group", group_m * grid_n)
    first_m, d5 = ir_const("first_m", (pid / per_group) * group_m)
    gsize, d6 = ir_const("gsize", kir.Call("min", (grid_m - first_m, kir.Const(group_m))))
    bmv, d7 = ir_const("bm", first_m + (pid % per_group) % gsize)
    bnv, d8 = ir_const("bn", (pid % per_group) / gsize)
    m0, d9 = ir_const("m0", bmv * bm)
    n0, d10 = ir_const("n0", bnv * bn)
    interior, d11 = ir_const("interior", (m0 + bm).le(E.M).and_((n0 + bn).le(E.N)), "bool")
    out += [d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11]
    E.add(m0=m0, n0=n0, interior=interior)
    return out


def store_pair_ir(
    E: Env,
    prob: GemmProblem,
    r: kir.Var,
    c: kir.Var,
    x: kir.Expr,
    y: kir.Expr,
    row: kir.Expr,
    col: kir.Expr,
    what: str,
) -> kir.Stmt:
    """Store accumulators ``x`` (row r, column c) and ``y`` (column c + 1) to C in the output
    precision: one 2-element vector store when ``c_vec`` (ldc even, C aligned) and both
    columns are inside N, else predicated scalar stores; nothing when r >= M.  ``row`` and
    ``col`` are the claimed coordinates (layout applications)."""
    v2t, pack2, pack1 = STORE2[prob.out]
    ob = OUT_DTYPES[prob.out][1]
    p = kir.Var("p", "lp_out_t*")

    def claim(e: int, width: int) -> kir.Claim:
        return kir.Claim(
            f"{what} element (r, c + {e})",
            addr_of(E.C) + ob * (kir.Cast("long long", row) * E.ldc + col + e),
            bounds=((row, E.M), (col + (e + width - 1), E.N)),
            width=width * ob,
        )

    vec = kir.Mem(p, claim(0, 2), vec=v2t)
    s0 = kir.Mem(p, claim(0, 1), idx=kir.Const(0))
    s1 = kir.Mem(p, claim(1, 1), idx=kir.Const(1))
    return kir.If(
        r.lt(E.M),
        kir.block(
            kir.Decl(p, E.C + kir.Cast("long long", r) * E.ldc + c),
            kir.If(
                E.c_vec.and_((c + 1).lt(E.N)),
                kir.block(kir.Assign(vec, _pack(pack2, x, y))),
                kir.block(
                    kir.If(c.lt(E.N), kir.block(kir.Assign(s0, _pack(pack1, x)))),
                    kir.If((c + 1).lt(E.N), kir.block(kir.Assign(s1, _pack(pack1, y)))),
                ),
            ),
        ),
    )


def cp_setup_ir(E: Env, p: OperandPlan) -> List[kir.Stmt]:
    """Per-thread cp.async state: one global pointer (iteration ``it`` adds ``it * step``),
    the stepping of one tile, and the destination offsets of each iteration."""
    P = p.name
    gm = p.fns["cp_gmem"]
    ld = getattr(E, f"ld{P}")
    src = getattr(E, P.upper())
    o0 = E.m0 if P == "a" else E.n0
    blk = kir.Cast("long long", o0) * ld if p.kmajor else kir.Cast("long long", o0)
    adv = kir.Const(p.bk, "long long") if p.kmajor else kir.Cast("long long", kir.Const(p.bk)) * ld
    ptr, d1 = ir_const(
        f"{P}_ptr", src + blk + kir.call(gm, tid=E.tid, it=0, **{f"ld{P}": ld}), "const lp_in_t*"
    )
    its, d2 = ir_const(
        f"{P}_its",
        kir.call(gm, tid=0, it=1, **{f"ld{P}": ld}) - kir.call(gm, tid=0, it=0, **{f"ld{P}": ld}),
        "long long",
    )
    advv, d3 = ir_const(f"{P}_adv", adv, "long long")
    s = ir_var(f"{P}_s")
    i = ir_var("i")
    tab = kir.TableDecl(s, p.cp_iters, i, kir.call(p.fns["cp_smem"], tid=E.tid, it=i))
    E.add(**{f"{P}_ptr": ptr, f"{P}_its": its, f"{P}_adv": advv, f"{P}_s": s})
    return [d1, d2, d3, tab]


def load_tile_ir(
    E: Env,
    a: OperandPlan,
    b: OperandPlan,
    kt: kir.Expr,
    st: kir.Expr,
    sbase: Mapping[str, kir.Expr],
    region: Mapping[str, Tuple[kir.Expr, int]],
) -> kir.Block:
    """Issue tile ``kt`` of both operands into stage ``st``: a branch-free path for tiles
    inside M, N and K, and a predicated one (partial chunks zero-filled) at the edges."""
    srcs = {}
    decls = []
    for p in (a, b):
        v, d = ir_const(
            f"{p.name}_src",
            getattr(E, f"{p.name}_ptr") + kir.Cast("long long", kt) * getattr(E, f"{p.name}_adv"),
            "const lp_in_t*",
        )
        srcs[p.name] = v
        decls.append(d)

    def ops(p: OperandPlan, full: bool) -> kir.Stmt:
        P = p.name
        i = ir_var("i")
        X, o0 = (E.M, E.m0) if P == "a" else (E.N, E.n0)
        ld = getattr(E, f"ld{P}")
        base = getattr(E, P.upper())
        tab = getattr(E, f"{P}_s")
        dst = sbase[P] + kir.Const(2, "unsigned") * kir.Cast(
            "unsigned", kir.Index(tab, (i,)) + st * p.stage_elems
        )
        src = srcs[P] + i * getattr(E, f"{P}_its")
        xl = kir.LayoutApp(p.maps["cp_x"], (E.tid, i), f"{P.upper()} copy x")
        kl = kir.LayoutApp(p.maps["cp_k"], (E.tid, i), f"{P.upper()} copy k")
        xg = o0 + xl
        kg = kt * p.bk + kl
        elem = (kir.Cast("long long", xg) * ld + kg) if p.kmajor else (kir.Cast("long long", kg) * ld + xg)
        sz = DTYPES["f16"][1]
        dclaim = kir.Claim(
            f"{P.upper()} cp.async destination (thread, iteration, stage)",
            sbase[P] + 2 * kir.LayoutApp(p.maps["cp_dst"], (E.tid, i, st), f"{P.upper()} smem stages"),
            region=region[P],
            width=16,
        )
        what = f"{P.upper()} cp.async source (tile element (x, k) of the operand)"
        if full:
            last = ((xg, X), (kg + 7, E.K)) if p.kmajor else ((kg, E.K), (xg + 7, X))
            sclaim = kir.Claim(what, addr_of(base) + sz * elem, bounds=last, width=16)
            body = kir.block(kir.CpAsync(dst, src, kir.Const(16), dclaim, sclaim))
        else:
            kk, dkk = ir_const("kk", kt * p.bk + kir.call(p.fns["cp_k"], tid=E.tid, it=i))
            xx = o0 + kir.call(p.fns["cp_x"], tid=E.tid, it=i)
            edge: Tuple[kir.Expr, kir.Expr]
            bounds: Tuple[Tuple[kir.Expr, kir.Expr], Tuple[kir.Expr, kir.Expr]]
            if p.kmajor:  # the chunk runs along k: partial chunks at the K edge zero-fill
                nbe = kir.Cond(
                    xx.lt(X).and_(kk.lt(E.K)), kir.Call("min", (E.K - kk, kir.Const(8))) * 2, kir.Const(0)
                )
                edge = (kk, E.K)
                bounds = ((xg, X), (kk, E.K))
            else:  # the chunk runs along x: partial chunks at the X edge zero-fill
                nbe = kir.Cond(
                    kk.lt(E.K).and_(xx.lt(X)), kir.Call("min", (X - xx, kir.Const(8))) * 2, kir.Const(0)
                )
                edge = (xx, X)
                bounds = ((kk, E.K), (xx, X))
            nb, dnb = ir_const("nb", nbe)
            sclaim = kir.Claim(what, addr_of(base) + sz * elem, bounds=bounds, width=16)
            body = kir.block(dkk, dnb, kir.CpAsync(dst, src, nb, dclaim, sclaim, src_empty=base, edge=edge))
        return kir.For(i, kir.Const(0), kir.Const(p.cp_iters), body, unroll=True)

    cond = E.interior.and_(((kt + 1) * a.bk).le(E.K))
    return kir.Block(
        tuple(decls)
        + (kir.If(cond, kir.block(ops(a, True), ops(b, True)), kir.block(ops(a, False), ops(b, False))),),
        bare=True,
    )


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


def kernel_params(E: Env, prob: Optional[GemmProblem]) -> Tuple[Tuple[str, kir.Var], ...]:
    return (
        ("const lp_in_t* __restrict__", E.A),
        ("const lp_in_t* __restrict__", E.B),
        ("lp_out_t* __restrict__", E.C),
        ("int", E.M),
        ("int", E.N),
        ("int", E.K),
        ("long long", E.lda),
        ("long long", E.ldb),
        ("long long", E.ldc),
        ("int", E.c_vec),
    )


def base_env() -> Env:
    return Env(
        A=ir_var("A", "const lp_in_t*"),
        B=ir_var("B", "const lp_in_t*"),
        C=ir_var("C", "lp_out_t*"),
        M=ir_var("M"),
        N=ir_var("N"),
        K=ir_var("K"),
        lda=ir_var("lda", "long long"),
        ldb=ir_var("ldb", "long long"),
        ldc=ir_var("ldc", "long long"),
        c_vec=ir_var("c_vec"),
        threadIdx=kir.THREAD_IDX,
        blockIdx=kir.BLOCK_IDX,
        gridDim=kir.GRID_DIM,
    )


def _kernel_ir(
    cfg: GemmConfig, prob: GemmProblem, a: OperandPlan, b: OperandPlan, cm: Dict[str, Any], name: str
) -> kir.Kernel:
    """The mma.sync kernel as IR (the printer writes it, :func:`kir.discharge` proves it)."""
    tin = DTYPES[prob.dtype][0]
    tout = OUT_DTYPES[prob.out][0]
    tm, tn = cfg.warp_tile
    MI, NI = tm // 16, tn // 8
    KI = cfg.bk // 16
    S = cfg.stages
    E = base_env()
    smem = kir.Var("lp_smem", "unsigned char*")
    st_vals = tuple(range(S))
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
    KT, d = ir_const("KT", (E.K + (cfg.bk - 1)) / cfg.bk)
    body.append(d)
    acc = kir.Var("acc", "float")
    mi, ni, vv = ir_var("mi"), ir_var("ni"), ir_var("v")
    body.append(kir.Decl(acc, dims=(MI, NI, 4)))
    body.append(
        kir.For(
            mi,
            kir.Const(0),
            kir.Const(MI),
            kir.block(
                kir.For(
                    ni,
                    kir.Const(0),
                    kir.Const(NI),
                    kir.block(
                        kir.For(
                            vv,
                            kir.Const(0),
                            kir.Const(4),
                            kir.block(kir.Assign(kir.Index(acc, (mi, ni, vv)), kir.FloatLit("0.f"))),
                            unroll=True,
                        )
                    ),
                    unroll=True,
                )
            ),
            unroll=True,
        )
    )
    sbase = {"a": sA, "b": sB}
    region = {"a": (sA, 2 * S * a.stage_elems), "b": (sB, 2 * S * b.stage_elems)}
    # prologue: stages 0 .. S-2
    st = ir_var("st")
    kt0v, dkt = ir_const("kt", st)
    body.append(
        kir.For(
            st,
            kir.Const(0),
            kir.Const(S - 1),
            kir.block(
                kir.If(st.lt(KT), kir.block(dkt, load_tile_ir(E, a, b, kt0v, st, sbase, region))),
                kir.CpCommit(),
            ),
            unroll=True,
        )
    )
    af = kir.Var("af", "unsigned")
    bfr = kir.Var("bfr", "unsigned")
    E.add(af=af, bfr=bfr)
    body += [kir.Decl(af, dims=(2, MI, 4)), kir.Decl(bfr, dims=(2, NI, 2))]
    body.append(
        kir.Comment(
            "software pipeline (after CUTLASS's multistage main loop): the "
            "barrier of tile kt sits\nbefore its last k step, so the next "
            "tile's first fragments load under that step's MMAs"
        )
    )
    body += [kir.CpWait(S - 2), kir.SyncThreads()]
    rd = ir_var("rd", values=st_vals)
    wr = ir_var("wr", values=st_vals)
    stA = ir_var("stA", values=tuple(s * a.stage_elems for s in st_vals))
    stB = ir_var("stB", values=tuple(s * b.stage_elems for s in st_vals))
    E.add(stA=stA, stB=stB)
    body += [
        kir.Decl(rd, kir.Const(0)),
        kir.Decl(wr, kir.Const(S - 1)),
        kir.Decl(stA, kir.Const(0)),
        kir.Decl(stB, kir.Const(0)),
    ]
    zero = kir.Const(0)
    body += [_frag_load_ir(E, a, zero, zero), _frag_load_ir(E, b, zero, zero)]
    kt0 = ir_var("kt0")
    ki = ir_var("ki")
    kt1, dkt1 = ir_const("kt", kt0 + (S - 1))
    st1, dst1 = ir_const("st", wr)
    nj = ir_var("nj")
    nisel, dni = ir_const("ni", kir.Cond(mi & 1, kir.Const(NI - 1) - nj, nj))
    step = kir.block(
        kir.If(
            ki.eq(KI - 1),
            kir.block(
                kir.RingAdvance(rd, S, style="ternary"),
                kir.Assign(stA, rd * a.stage_elems),
                kir.Assign(stB, rd * b.stage_elems),
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
                kir.If(kt1.lt(KT), kir.block(load_tile_ir(E, a, b, kt1, st1, sbase, region))),
                kir.CpCommit(),
                kir.RingAdvance(wr, S, style="ternary"),
            ),
        ),
        kir.For(
            mi,
            kir.Const(0),
            kir.Const(MI),
            kir.block(
                kir.For(
                    nj,
                    kir.Const(0),
                    kir.Const(NI),
                    kir.block(
                        dni,
                        kir.Mma(
                            kir.Index(acc, (mi, nisel)),
                            kir.Index(af, (ki & 1, mi)),
                            kir.Index(bfr, (ki & 1, nisel)),
                        ),
                    ),
                    unroll=True,
                )
            ),
            unroll=True,
        ),
    )
    body.append(
        kir.For(kt0, kir.Const(0), KT, kir.block(kir.For(ki, kir.Const(0), kir.Const(KI), step, unroll=True)))
    )
    body.append(kir.CpWait(0))
    body.append(kir.Comment("epilogue: accumulator (lane, value, warp, block) -> C coordinate, proven maps"))
    h = ir_var("h")
    args = dict(lane=lane, v=2 * h, wm=wm, wn=wn, mi=mi, ni=ni)
    coords = (lane, 2 * h, wm, wn, mi, ni)
    r, dr = ir_const("r", E.m0 + kir.call(cm["row_fn"], **args))
    c, dc = ir_const("c", E.n0 + kir.call(cm["col_fn"], **args))
    row = E.m0 + kir.LayoutApp(cm["row"], coords, "C row map")
    col = E.n0 + kir.LayoutApp(cm["col"], coords, "C column map")
    store = store_pair_ir(
        E,
        prob,
        r,
        c,
        kir.Index(acc, (mi, ni, 2 * h)),
        kir.Index(acc, (mi, ni, 2 * h + 1)),
        row,
        col,
        "C accumulator store",
    )
    body.append(
        kir.For(
            mi,
            kir.Const(0),
            kir.Const(MI),
            kir.block(
                kir.For(
                    ni,
                    kir.Const(0),
                    kir.Const(NI),
                    kir.block(kir.For(h, kir.Const(0), kir.Const(2), kir.block(dr, dc, store), unroll=True)),
                    unroll=True,
                )
            ),
            unroll=True,
        )
    )
    swz = ", ".join(f"{p.name.upper()}: {p.swizzle if p.swizzle is not None else 'none'}" for p in (a, b))
    amaj = "k" if a.kmajor else "m"
    bmaj = "k" if b.kmajor else "n"
    desc = (
        "",
        f"mma.sync GEMM generated by layoutproof {GENERATOR_VERSION}:",
        "  C[M,N] (row-major, ldc) = A[M,K] @ B[K,N]",
        f"A {amaj}-major (lda), B {bmaj}-major (ldb); {prob.dtype} in, f32 accumulate, {prob.out} out",
        f"block {cfg.bm}x{cfg.bn}x{cfg.bk}, warps {cfg.warps_m}x{cfg.warps_n} (warp tile {tm}x{tn}),",
        f"{S}-stage cp.async pipeline",
        f"shared-memory swizzles chosen by the algebra: {swz}",
        "contract: A, B 16-byte aligned, lda % 8 == 0, ldb % 8 == 0 (the runtime pads otherwise);",
        "          any M, N, K >= 1 (tails are predicated, partial chunks zero-filled)",
    )
    fns = tuple(p.fns[k] for p in (a, b) for k in ("cp_smem", "cp_x", "cp_k"))
    fns += (a.fns["ldsm"], b.fns["ldsm"], cm["row_fn"], cm["col_fn"], a.fns["cp_gmem"], b.fns["cp_gmem"])
    return kir.Kernel(
        name,
        kernel_params(E, prob),
        kir.block(*body),
        cfg.threads,
        min_blocks=cfg.min_blocks,
        typedefs=(("lp_in_t", tin), ("lp_out_t", tout)),
        sizes=type_sizes(prob),
        functions=fns,
        description=desc,
        helpers=("cp_async", "ldsm", "mma"),
        mma_dtype=prob.dtype,
    )


def finish(
    k: kir.Kernel, log: ProofLog, title: str, protocol: Optional[Callable[[kir.Kernel], int]] = None
) -> str:
    """Discharge the kernel's IR obligations into ``log`` and print it with its header (the
    obligations and the coverage line).  ``protocol`` reads the mbarrier operations from the
    IR and proves them, returning how many it covered."""
    rep = kir.discharge(k, log)
    if protocol is not None:
        rep.barriers_covered += protocol(k)
    if rep.accesses_covered != rep.accesses or rep.barriers_covered != rep.barriers:
        raise ProofFailedError(f"kernel {k.name}: {rep.line()}", condition="coverage")
    return kir.emit(k, log.header(title) + f"// {rep.line()}\n")


def prove_c_atom_part(cm: Layout, atom: Any, atom_tile: Tuple[int, int], bm: int, log: ProofLog) -> None:
    """The (thread, value) part of a kernel's C map (its first two modes) is the atom's C
    layout, re-indexed from the atom tile to the block tile (column-major, ``bm`` rows)."""
    got = eval_map(take(cm, 0, 2))
    exp = eval_map(composition(Layout(atom_tile, (1, bm)), atom.c_layout))
    if not np.array_equal(got, exp):
        bad = int(np.flatnonzero(got != exp)[0])
        raise ProofFailedError(
            f"the C map disagrees with {atom.name}'s C layout at (thread, value) index {bad}",
            condition="C map == atom C layout",
            witness=bad,
        )
    log.add(
        "equal",
        f"C map's (thread, value) part == {atom.name} C layout {atom.c_layout}",
        "exhaustive",
        int(got.size),
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


def generate(
    config: Optional[GemmConfig] = None, problem: Optional[GemmProblem] = None, *, memo: bool = True
) -> GemmKernel:
    """Build, prove and emit one kernel (memoized per process on (config, problem))."""
    cfg = (config or GemmConfig()).validate()
    prob = (problem or GemmProblem()).validate()
    if memo and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    atom = atoms.MMA_ATOMS[
        "SM80_16x8x16_F32F16F16F32_TN" if prob.dtype == "f16" else "SM80_16x8x16_F32BF16BF16F32_TN"
    ]
    log = ProofLog()
    for pr in atoms.verify_atom(atom):
        log.proofs.append(pr)
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
