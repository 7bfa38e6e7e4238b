"""The kernel toolkit every generator builds on: operand plans, kernel IR helpers, the
kernel record and the last step of every generator.

* :class:`OperandPlan` -- one operand's shared-memory tile, its swizzled buffer map
  (:func:`buffer_map`) and the cp.async copy plan (:func:`plan_copy`, proven to cover the
  tile once, 16-byte aligned);
* :class:`Env` and :func:`base_env` -- the kernel's named variables; :func:`ir_var`,
  :func:`ir_const`, :func:`addr_of` -- IR nodes as the generators write them;
  :func:`kernel_params`, :func:`type_sizes` -- the GEMM kernels' parameter list and type
  sizes;
* IR builders shared by the mma.sync and the wgmma kernels: the rasterized tile order
  (:func:`raster_ir`), the cp.async setup and tile loads (:func:`cp_setup_ir`,
  :func:`load_tile_ir`), the pair stores of C (:func:`store_pair_ir`);
* :func:`eval_map` -- a layout (or swizzled layout) evaluated over its domain;
* :func:`prove_banks`, :func:`record_banks` -- the bank-conflict obligations of the
  operands' shared-memory accesses, decided by :func:`layoutproof.gpu.analysis.banks` on
  the layouts (:meth:`OperandPlan.stage_layout` and the thread-value layouts
  :meth:`OperandPlan.copy_access`, :meth:`OperandPlan.ldsm_access`);
* :func:`prove_c_atom_part` -- the accumulator -> C map is the MMA atom's partition;
* :class:`GemmKernel` -- a generated kernel (source, launch geometry, proofs, IR), and
  :func:`finish` -- discharge the IR's obligations and print the source with its header.

The generators (:mod:`.mma_sync`, :mod:`.wgmma`, :mod:`.wgmma_ws`, the split-K and fused
epilogue variants) import from here; this module imports no generator.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Tuple

import numpy as np

from layoutproof import Layout, Swizzle, composition, symbols, take
from layoutproof.layout import top_modes

from ..analysis import BankReport, banks
from ..config import DTYPES, OUT_DTYPES, GemmProblem, operand_storage
from ..errors import BankConflictError, GemmConfigError, ProofFailedError
from ..proof import kir, lower, obligations
from ..proof.record import ProofLog

__all__ = [
    "OperandPlan",
    "buffer_map",
    "plan_copy",
    "prove_aligned",
    "swizzled",
    "eval_map",
    "prove_banks",
    "record_banks",
    "KernelTile",
    "GemmKernel",
    "STORE2",
    "type_sizes",
    "addr_of",
    "Env",
    "ir_var",
    "ir_const",
    "raster_ir",
    "store_pair_ir",
    "cp_setup_ir",
    "load_tile_ir",
    "cp_prologue_ir",
    "k_tiles_ir",
    "kernel_params",
    "base_env",
    "finish",
    "prove_c_atom_part",
    "GRID_WAIT",
    "GRID_ORDER",
    "grid_wait_head",
    "after_grid_wait",
    "waits_first",
    "grid_wait_first",
    "prove_grid_order",
]


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
    # the rows (along x) one TMA box loads into a stage when fewer than x_extent: the box
    # covers rows [0, box_rows) of the stage; None: the boxes cover the whole stage
    box_rows: Optional[int] = None

    # ------------------------------------------------------------------ shapes
    @property
    def row_len(self) -> int:
        """Elements per shared-memory row (the contiguous extent of the tile)."""
        return self.bk if self.kmajor else self.x_extent

    @property
    def stage_elems(self) -> int:
        return self.x_extent * self.bk

    @property
    def loaded_rows(self) -> int:
        """Rows (along x) a stage's TMA boxes deliver: all of them, or ``box_rows``."""
        return self.x_extent if self.box_rows is None else self.box_rows

    @property
    def loaded_elems(self) -> int:
        """Elements a stage's TMA boxes deliver."""
        return self.loaded_rows * self.bk

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

    def stage_layout(self) -> Layout:
        """Tile index ``x + X*k`` -> element offset of one stage, unswizzled: the data layout
        of the stage's bank analyses (the swizzle, when there is one, composed outside)."""
        return composition(self.tile(), Layout(self.stage_elems, 1))

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

    def copy_access(self) -> Layout:
        """The cp.async writes as a thread-value layout: (thread, element of the 16-byte
        chunk, iteration) -> tile index (:meth:`copy_tv` with the chunk's 8 elements, which
        run along the contiguous dimension)."""
        (ts, its), (td, itd) = top_modes(self.copy_tv())
        return Layout((ts, 8, its), (td, self.x_extent if self.kmajor else 1, itd))

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

    def ldsm_access(self) -> Layout:
        """The ldmatrix.x4 reads as a thread-value layout: ((lane, warp_x), element of the
        lane's 16-byte row, xi, ki) -> tile index (:meth:`ldsm_map` with the row's 8
        elements, which run along the contiguous dimension)."""
        (ls, ws, xs, ks), (ld, wd, xd, kd) = top_modes(self.ldsm_map())
        return Layout(((ls, ws), 8, xs, ks), ((ld, wd), self.x_extent if self.kmajor else 1, xd, kd))

    @property
    def ldsm_instruction(self) -> str:
        """``ldmatrix.x4``, ``.trans`` when x is the contiguous dimension."""
        return "ldmatrix.x4" if self.kmajor else "ldmatrix.x4.trans"


def swizzled(sw: Optional[Swizzle], L: Layout) -> Any:
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
    return swizzled(plan.swizzle, composition(base, m))


def eval_map(L: Any) -> np.ndarray:
    """All values of a layout / composed layout, in colexicographic coordinate order."""
    return np.asarray(L.eval_all(), dtype=np.int64)


def record_banks(report: BankReport, what: str, log: Optional[ProofLog]) -> BankReport:
    """Record the bank analysis ``report`` of ``what`` in ``log``, or raise
    :class:`~layoutproof.gpu.errors.BankConflictError` with its witness (the first
    conflict) or its reason."""
    if report.status != "proved":
        why = report.witness if report.witness is not None else report.reason
        raise BankConflictError(
            f"{what}: {report.statement} is {report.status}: {why}",
            condition="bank conflict",
            witness=report.witness,
        )
    if log is not None:
        log.add("banks", f"{what}: {report.statement}", report.method, report.cases)
    return report


def prove_banks(
    smem: Any, access: Layout, instruction: str, what: str, log: Optional[ProofLog], element_bits: int = 16
) -> BankReport:
    """Every phase of every ``instruction`` of ``access`` (a thread-value layout onto the
    tile) on the shared-memory layout ``smem`` takes one wavefront, by
    :func:`layoutproof.gpu.analysis.banks`; recorded in ``log`` (:func:`record_banks`)."""
    return record_banks(banks(smem, access, instruction, element_bits=element_bits), what, log)


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
    def programmatic(self) -> bool:
        """The kernel may be launched as a programmatic dependent: its proof log holds the
        launch-ordering claim (:func:`prove_grid_order`), which survives the disk cache."""
        return any(p.statement.startswith(GRID_ORDER + ":") for p in self.proofs)

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def grid(self, m: int, n: int) -> Tuple[int, int, int]:
        gm = -(-m // self.config.bm)
        gn = -(-n // self.config.bn)
        return (gm * gn, 1, 1)


def plan_copy(p: OperandPlan, log: ProofLog) -> None:
    """Build and prove the buffer and every cp.async map of operand ``p`` (swizzle set)."""
    P = p.name.upper()
    # the buffer: a bijection onto [0, stages * X * BK)
    buf = swizzled(p.swizzle, p.tile())
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
    prove_aligned(dst, 8, f"{P} cp.async destinations are 16-byte aligned", log)
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


def prove_aligned(L: Any, elems: int, what: str, log: ProofLog) -> None:
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


# ============================================================================ the kernel IR
#: per output dtype: (the two-element vector type, the packing of two floats into it, the
#: conversion of one float; None where the element is a float already)
STORE2: Dict[str, Tuple[str, str, Optional[str]]] = {
    "f16": ("__half2", "__floats2half2_rn", "__float2half_rn"),
    "bf16": ("__nv_bfloat162", "__floats2bfloat162_rn", "__float2bfloat16_rn"),
    "f32": ("float2", "make_float2", None),
    "s32": ("int2", "make_int2", None),  # from s32 accumulators (the integer types)
}


#: element sizes of the pointer types the kernels use (bytes)
def type_sizes(prob: GemmProblem) -> Dict[str, int]:
    return {
        "lp_in_t": operand_storage(prob.dtype)[1],
        "lp_out_t": OUT_DTYPES[prob.out][1],
        "__half2": 4,
        "__nv_bfloat162": 4,
        "float2": 8,
        "int2": 8,
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
    elementwise: str = "",
) -> kir.Block:
    """Issue tile ``kt`` of both operands into stage ``st``: a branch-free path for tiles
    inside M, N and K, and a predicated one (partial chunks zero-filled) at the edges.
    ``elementwise`` names the operands (``"a"``, ``"b"``) whose chunks are read by two-byte
    loads (:class:`~layoutproof.gpu.proof.kir.CpAsync`'s ``elementwise``: any leading
    dimension, any 2-byte-aligned base)."""
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
            ew = P in elementwise
            body = kir.block(kir.CpAsync(dst, src, kir.Const(16), dclaim, sclaim, elementwise=ew))
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
            ew = P in elementwise
            cp = kir.CpAsync(dst, src, nb, dclaim, sclaim, src_empty=base, edge=edge, elementwise=ew)
            body = kir.block(dkk, dnb, cp)
        return kir.For(i, kir.Const(0), kir.Const(p.cp_iters), body, unroll=True)

    cond = E.interior.and_(((kt + 1) * a.bk).le(E.K))
    return kir.Block(
        tuple(decls)
        + (kir.If(cond, kir.block(ops(a, True), ops(b, True)), kir.block(ops(a, False), ops(b, False))),),
        bare=True,
    )


def k_tiles_ir(E: Env, bk: int) -> Tuple[kir.Var, kir.Decl]:
    """``KT = ceil(K / bk)``, the kernel's number of k-tiles (the last one zero-filled past
    ``K``), and its declaration."""
    return ir_const("KT", (E.K + (bk - 1)) / bk)


def cp_prologue_ir(
    E: Env,
    a: OperandPlan,
    b: OperandPlan,
    smem: Tuple[kir.Expr, kir.Expr],
    stages: int,
    depth: int,
    KT: kir.Expr,
    elementwise: str = "",
) -> Tuple[Dict[str, kir.Expr], Dict[str, Tuple[kir.Expr, int]], kir.Stmt]:
    """The cp.async pipeline's stage buffers and its prologue: the A and B stage bases
    ``smem``, their regions (bytes, all ``stages``), and the loop that loads k-tiles
    ``0 .. depth - 1`` (those below ``KT``) into stages of the same index, one commit group
    each (``elementwise``: as :func:`load_tile_ir`'s).  Returns ``(bases, regions, loop)``
    for the main loop's loads."""
    sA, sB = smem
    sbase = {"a": sA, "b": sB}
    region = {"a": (sA, 2 * stages * a.stage_elems), "b": (sB, 2 * stages * b.stage_elems)}
    st = ir_var("st")
    kt0v, dkt = ir_const("kt", st)
    loop = kir.For(
        st,
        kir.Const(0),
        kir.Const(depth),
        kir.block(
            kir.If(st.lt(KT), kir.block(dkt, load_tile_ir(E, a, b, kt0v, st, sbase, region, elementwise))),
            kir.CpCommit(),
        ),
        unroll=True,
    )
    return sbase, region, loop


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


# ============================================================================ grid order
#: the grid dependency wait (PTX ``griddepcontrol.wait``): returns once every grid this one
#: depends on -- the previous kernel of the stream, under a programmatic dependent launch --
#: has completed with its memory operations visible; without such a launch the stream has
#: already ordered the kernels and it returns at once
GRID_WAIT = "lp_griddep_wait"

#: the opening words of the proof a kernel carries when every memory access it makes follows
#: its grid dependency wait: the runtime launches a kernel as a programmatic dependent (its
#: launch overlapping the previous kernel of the stream) only where its proof log holds it
GRID_ORDER = "launch ordering"


def grid_wait_head() -> List[kir.Stmt]:
    """A kernel's first statements when it may be launched as a programmatic dependent."""
    return [
        kir.Comment(
            "this kernel may be launched as a programmatic dependent of the previous kernel of\n"
            "the stream: wait until that grid has completed and its memory is visible, before\n"
            "any memory access (A and B may be its output, C its input)"
        ),
        kir.Eval(kir.Call(GRID_WAIT, (), "void")),
    ]


def after_grid_wait(body: Tuple[kir.Stmt, ...], new: Tuple[kir.Stmt, ...]) -> Tuple[kir.Stmt, ...]:
    """Top-level statements ``body`` with ``new`` put right after the grid dependency wait
    (at the front where there is none): how a rewrite adds declarations or statements at a
    kernel's start without moving the wait from first place."""
    for i, st in enumerate(body):
        if isinstance(st, kir.Eval) and isinstance(st.e, kir.Call) and st.e.name == GRID_WAIT:
            return tuple(body[: i + 1]) + tuple(new) + tuple(body[i + 1 :])
    return tuple(new) + tuple(body)


def waits_first(k: kir.Kernel) -> int:
    """The number of grid dependency waits in ``k`` if its first statement (at the top
    level, under no condition and in no loop) is one and it is the only one, else minus one
    minus the number of waits (so 0 waits reads -1)."""
    first = next((st for st in k.body.body if not isinstance(st, kir.Comment)), None)
    ok = (
        isinstance(first, kir.Eval)
        and isinstance(first.e, kir.Call)
        and first.e.name == GRID_WAIT
        and "griddep" in k.helpers
    )
    waits = [n for n in kir.walk(k.body) if isinstance(n, kir.Call) and n.name == GRID_WAIT]
    return len(waits) if ok and len(waits) == 1 else -len(waits) - 1


def grid_wait_first(k: kir.Kernel, what: str, hazard: str, condition: str) -> Tuple[int, int]:
    """Require the grid dependency wait to be ``k``'s one first statement (top level,
    unconditional); returns the kernel's memory accesses and TMA load sites, all after it.
    Else :class:`ProofFailedError` naming ``what`` (the kernel's role), the ``hazard`` a
    misplaced wait opens and ``condition``, with the number of waits found as witness."""
    w = waits_first(k)
    if w < 0:
        raise ProofFailedError(
            f"{what} {k.name}: its first statement is not the one grid dependency wait (found "
            f"{-w - 1} wait(s)): {hazard}",
            condition=condition,
            witness=-w - 1,
        )
    n = sum(1 for x in kir.walk(k.body) if isinstance(x, kir.Mem))
    t = sum(1 for x in kir.walk(k.body) if isinstance(x, kir.TmaLoad))
    return n, t


def prove_grid_order(k: kir.Kernel, log: ProofLog) -> bool:
    """Where ``k`` waits for the previous grid at all, the wait is its first statement (top
    level, unconditional) and its only one, so every memory access and TMA load of the
    kernel follows the completion of the grid it depends on: launched as a programmatic
    dependent, it reads no operand that kernel still writes and writes nothing that kernel
    still reads.  Records the claim (:data:`GRID_ORDER`) and returns True; False for a
    kernel without a wait (launched in stream order only); a misplaced or repeated wait is
    refused."""
    if waits_first(k) == -1:
        return False
    n, t = grid_wait_first(
        k,
        "kernel",
        "a memory access could run before the previous grid completes",
        "grid dependency wait first",
    )
    log.add(
        "protocol",
        f"{GRID_ORDER}: griddepcontrol.wait is the kernel's first statement (top level, "
        f"unconditional, the only one), before all {n} memory accesses and {t} TMA load sites: "
        "it may be launched as a programmatic dependent of the stream's previous kernel",
        "exhaustive",
        n + t,
    )
    return True


def finish(
    k: kir.Kernel, log: ProofLog, title: str, protocol: Optional[Callable[[kir.Kernel], int]] = None
) -> str:
    """Discharge the kernel's IR obligations into ``log`` and print it with its header (the
    obligations and the coverage line).  ``protocol`` reads the mbarrier operations from the
    IR and proves them, returning how many it covered.  A kernel that waits for the previous
    grid gets its launch-ordering proof (:func:`prove_grid_order`)."""
    prove_grid_order(k, log)
    rep = obligations.discharge(k, log)
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
