"""The proven Hopper GEMM: TMA or cp.async into 128-byte-swizzled stages, wgmma.

Two kernel shapes.  ``schedule="mono"``: one CTA of ``bm / 64`` consumer warpgroups
computes a ``bm x bn`` tile of C = A @ B with ``wgmma.mma_async.m64n{bn}k16`` (f16/bf16 ->
f32), both operands read by the tensor cores straight from shared memory through matrix
descriptors; every thread issues cp.async copies (or thread 0 the TMA boxes) and one wgmma
batch stays in flight while the next tile loads.  ``schedule="ws"``
(:data:`HOPPER_DEFAULT`): warp-specialized and persistent -- a producer warpgroup issues
the TMA boxes through a full/empty mbarrier ring, the consumer warpgroups run wgmma, the
CTAs walk the tiles in a proven grouped order, the epilogue goes through a swizzled
shared-memory buffer, and with ``cluster=2`` two CTAs share the B tile by TMA multicast.

Each operand is staged in CuTe's canonical 128-byte-swizzled GMMA layout of its own
major-ness (:func:`layoutproof.gpu.isa.gmma.smem_atom` tiled to the stage): K-major for
row-major A / column-major B, MN-major (read with wgmma's transpose flag) for column-major
A / row-major B -- no operand is copied.  What is proven before the source is emitted:

* the stage buffers (the atoms tiled, ``stages`` deep) are bijections, every cp.async
  destination lies inside them, 16-byte aligned, every cp.async write phase is free of
  bank conflicts, and each copy map covers its tile once; every emitted index expression
  equals its layout;
* the descriptors: for every element (row, k) a warpgroup's wgmma reads in every k16 step,
  the address the hardware forms from the descriptor
  (:func:`layoutproof.gpu.isa.gmma.prove_descriptor`: start, leading and stride byte offsets,
  the 128-byte swizzle) is the element's address in the buffer layout, and the emitted
  start offsets ``base + wg * step + ks * step`` are those descriptors' start addresses;
* the accumulator map (thread, register) -> (m, n) of the warpgroup atoms covers the C
  tile exactly once and its lowered row/column expressions equal it;
* with TMA loads: the tensor map is accepted by the driver for every leading dimension the
  launch admits and its boxes write exactly the stage layout
  (:func:`layoutproof.gpu.analysis.tma_preflight`, in :func:`prove_tma`); for ``ws`` the rest is
  :mod:`layoutproof.gpu.kernels.wgmma_ws`'s (the scheduler, the staged epilogue, the
  mbarrier protocol model-checked over every interleaving, the cluster's multicast).

This module holds the operand plans (descriptors, TMA boxes, the C map), the monolithic
kernels and :func:`generate_sm90`; :mod:`layoutproof.gpu.kernels.wgmma_core` the
configuration and the IR pieces both kernel shapes share.

Every kernel is built as kernel IR (:mod:`layoutproof.gpu.proof.kir`) and printed by its one
printer; the IR's own obligations (every access's address equal to its layout claim with
its bounds, bank conflicts of the threads' shared accesses, barrier uniformity) are
discharged before the source exists, and the header ends with their coverage.

>>> k = generate_sm90(Sm90Config(bn=128, stages=4))
>>> k.threads, k.smem_bytes, "wgmma.mma_async" in k.source
(256, 132096, True)
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from layoutproof import ComposedLayout, Layout, Swizzle, composition, symbols
from layoutproof.layout import top_modes

from ..analysis import TensorMapArgs, tma_preflight, wgmma_operand
from ..config import TC_TYPES, GemmConfig, GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..isa import gmma
from ..proof import evaluate, kir, lower, obligations
from ..proof.record import ProofLog
from .toolkit import (
    Env,
    GemmKernel,
    OperandPlan,
    cp_prologue_ir,
    cp_setup_ir,
    finish,
    ir_const,
    ir_var,
    k_tiles_ir,
    load_tile_ir,
    plan_copy,
    prove_banks,
    prove_c_atom_part,
    raster_ir,
    store_pair_ir,
    swizzled,
)
from .wgmma_core import (
    GENERATOR_VERSION,
    HOPPER_DEFAULT,
    TMA_BOX,
    TMA_BOX_BYTES,
    Sm90Config,
    acc_ir,
    acc_type,
    env90,
    kernel90,
    scale_ir,
    smem_arena,
    stage_bases_ir,
    tid_ir,
    tma_loads_ir,
    wgmma_batch_ir,
)
from .wgmma_ws import build_ws_kernel

__all__ = [
    "Sm90Config",
    "HOPPER_DEFAULT",
    "generate_sm90",
    "plan_operands",
    "plan_stage",
    "plan_descriptors",
    "plan_c_map",
    "c_map",
    "check_typed",
]

SW128 = Swizzle(3, 3, 3)  # on 2-byte elements: 16-byte chunk index ^= row % 8 in 128-byte rows


"""The kernel ``gemm`` runs on sm_90 (where cuda-python can encode tensor maps) and
``generate_sm90()`` emits: 128x256x64 tiles, 4 stages, a TMA producer warpgroup and two
consumer warpgroups, persistent."""


# ============================================================================ descriptors
def plan_descriptors(
    p: OperandPlan, smem: Any, rows: int, slices: int, log: ProofLog
) -> Tuple[int, int, int]:
    """The descriptors of operand ``p``: one ``rows``-row slice per warpgroup (A) or the
    whole tile (B), one per k16 step.  The kernel forms each as ``fields | (start >> 4)``:
    the fields of slice 0, k step 0 (a field another slice does not reach may differ from
    that slice's own encoding) with start = slice * slice_step + ks * k_step.  Those
    descriptors are proved by :func:`layoutproof.gpu.analysis.wgmma_operand` to read
    exactly their elements of the stage layout, in the stage's own mode (major-ness,
    SW128).  Returns (constant fields, slice step, k16 step) in bytes; the records go to
    ``log``.  Assumes ``smem`` is the GMMA layout :func:`plan_stage` returned for ``p``
    (one stage, 16-bit units) and ``p.bk`` a multiple of 16; raises ``ProofFailedError``
    when a descriptor reads other elements or the starts are not affine."""
    P = p.name.upper()
    fields, starts, emitted = None, {}, {}
    for sl in range(slices):
        for ks in range(p.bk // 16):
            d = gmma.make_descriptor(smem, 0, mn_offset=sl * rows, k_offset=16 * ks)
            if fields is None:  # the template: slice 0, k step 0
                fields = d & ~0x3FFF
            starts[(sl, ks)] = (d & 0x3FFF) << 4
            emitted[(sl * rows, 16 * ks)] = fields | (d & 0x3FFF)
    rep = wgmma_operand(
        smem.layout, element_bits=smem.elem_bits, major=smem.major, mn_block=rows, descriptors=emitted
    )
    mode = f"{smem.major}-major {smem.swizzle}"
    if rep.status != "proved" or rep.mode != mode:
        raise ProofFailedError(
            f"{P}: {rep.statement} is {rep.status} ({rep.mode or rep.witness}), the stage is {mode}",
            condition="descriptor addresses equal layout",
            witness=rep.witness,
        )
    for f in rep.descriptors:
        m0, k0 = int(f["mn_offset"]), int(f["k_offset"])
        if (m0, k0) in emitted:
            log.add(
                "equal",
                f"{P} wgmma desc {f['descriptor']} ({mode}, start {f['start_address']}, LBO "
                f"{f['leading_byte_offset']}, SBO {f['stride_byte_offset']}) reads "
                f"[{m0},{m0 + rows})x[{k0},{k0 + 16}) of {smem.layout} at 0 (wgmma_operand)",
                rep.method,
                rows * 16,
            )
    s_step = starts.get((1, 0), 0) - starts[(0, 0)] if slices > 1 else 0
    k_step = starts.get((0, 1), 0) - starts[(0, 0)]
    for (sl, ks), st in starts.items():
        if st != starts[(0, 0)] + sl * s_step + ks * k_step:
            raise ProofFailedError(
                f"{P} descriptor start of slice {sl}, k step {ks} is not affine",
                condition="affine descriptor starts",
                witness=(sl, ks),
            )
    log.add(
        "equal",
        f"{P} descriptor start = base + slice * {s_step} + ks * {k_step} bytes for "
        f"all {slices} slice(s) x {p.bk // 16} k16 steps (fields {fields:#x})",
        "exhaustive",
        len(starts),
    )
    if fields is None:  # no slice or k step was planned (configs validate bk >= 16)
        raise ProofFailedError(f"{P}: no descriptor to plan", condition="descriptor fields")
    return int(fields), s_step, k_step


def check_typed(cfg: Sm90Config, prob: GemmProblem) -> None:
    """The wgmma rules of the K-major-only types (``prob.dtype`` one of ``TC_TYPES``):
    both operands K-major (PTX gives the transpose immediates to ``.f16``/``.bf16`` only),
    the block N one of the instruction's.  Returns nothing when they hold, raises
    ``GemmConfigError`` naming the broken rule otherwise."""
    if prob.a_major != "k" or prob.b_major != "k":
        raise GemmConfigError(
            f"generate_sm90: .{prob.dtype} wgmma reads only K-major operands from shared memory "
            f"(A row-major M x K, B column-major: its K x N columns contiguous); got A "
            f"{prob.a_major}-major, B {prob.b_major}-major: transpose the operand first"
        )
    ns = gmma.WGMMA_TYPES[prob.dtype][3]
    if cfg.bn not in ns:
        raise GemmConfigError(
            f"generate_sm90: wgmma .{prob.dtype} has no m64n{cfg.bn} instruction (N in {list(ns)})"
        )


def prove_typed_descriptors(
    p: OperandPlan,
    smem: Any,
    desc: Tuple[int, int, int],
    dtype: str,
    rows: int,
    slices: int,
    log: ProofLog,
    *,
    k_inst: Optional[int] = None,
) -> None:
    """The descriptors of a ``dtype`` operand, in its own elements.  The kernel moves the
    operand as 16-bit units (``smem``, the stage in units, whose descriptors
    :func:`plan_descriptors` proved); here, with ``T`` the element and ``k`` the K of one
    instruction (:data:`~layoutproof.gpu.isa.gmma.WGMMA_TYPES`; ``k_inst`` overrides it):

    * the canonical K-major SW128 atom of ``T`` (CuTe's ``Layout_K_SW128_Atom<T>``) tiled
      to the stage puts every element's bytes where the unit layout puts them;
    * the kernel's ``bk / 16`` instructions per k-tile read ``k`` elements each and cover
      the stage's K exactly;
    * every descriptor the kernel forms (slice ``s``, instruction ``j``: the proven fields,
      start ``s * slice step + j * k step``) reads exactly elements ``[j k, (j+1) k)`` of
      its slice, by the PTX address model with ``T``'s width (:func:`~layoutproof.gpu.isa.
      gmma.prove_descriptor`).

    Raises ProofFailedError with the witness."""
    bits, k_ptx = gmma.WGMMA_TYPES[dtype][0], gmma.WGMMA_TYPES[dtype][1]
    k = k_ptx if k_inst is None else k_inst
    P = p.name.upper()
    eb = bits // 8
    if not p.kmajor or smem.major != "K":
        raise ProofFailedError(
            f"{P}: .{dtype} operands are read K-major only", condition="K-major operand", witness=p.name
        )
    bk = p.bk * 2 // eb  # elements of T per stage row
    real = gmma.tile_to_shape(gmma.smem_atom("K", "SW128", bits), (p.x_extent, bk))
    unit = smem.table()  # (x, bk units) -> unit offset
    ours = eb * real.table()[:, :, None] + np.arange(eb)[None, None, :]  # byte of each element byte
    byte_col = np.arange(bk)[:, None] * eb + np.arange(eb)[None, :]  # (k, byte) -> byte in the row
    theirs = 2 * unit[:, byte_col // 2] + byte_col % 2
    bad = np.argwhere(ours != theirs)
    if bad.size:
        x, kk, by = (int(v) for v in bad[0])
        raise ProofFailedError(
            f"{P}: byte {by} of .{dtype} element (x {x}, k {kk}) is at {int(ours[x, kk, by])} in "
            f"{real.layout}, at {int(theirs[x, kk, by])} in the unit stage {smem.layout}",
            condition="typed stage layout equals the unit layout",
            witness=(x, kk, by),
        )
    log.add(
        "equal",
        f"{P}: the .{dtype} stage {real.layout} ({bits}-bit elements) puts every byte where the "
        f"16-bit unit stage {smem.layout} does",
        "exhaustive",
        int(ours.size),
    )
    steps = p.bk // 16  # the instructions the kernel issues per k-tile
    if steps * k != bk:
        raise ProofFailedError(
            f"{P}: {steps} wgmma k{k} instructions per k-tile read {steps * k} of the stage's "
            f"{bk} .{dtype} elements of K",
            condition="instructions cover K exactly",
            witness=(steps, k, bk),
        )
    fields, s_step, k_step = desc
    for sl in range(slices):
        for j in range(steps):
            start = sl * s_step + j * k_step
            log.extend(
                gmma.prove_descriptor(
                    real,
                    fields | ((start & 0x3FFFF) >> 4),
                    base_addr=0,
                    mn_offset=sl * rows,
                    k_offset=j * k,
                    mn_extent=rows,
                    k_extent=k,
                )
            )
    log.add(
        "equal",
        f"{P}: {slices} slice(s) x {steps} wgmma k{k} .{dtype} instructions per k-tile, each "
        f"descriptor reading exactly its {rows} x {k} elements",
        "exhaustive",
        slices * steps,
    )


def tma_stage_layout(x_extent: int, kmajor: bool) -> Any:
    """The (x, k) -> element layout of one stage as the TMA writes it: boxes of 64
    contiguous-dimension elements (one 128-byte swizzled row) x 64 rows, one after the
    other along x.  K-major: rows are x, so the boxes simply stack; MN-major: rows are k, a
    box holds all 64 k of 64 x, and 8-row groups of k are 1024 B apart."""
    if kmajor:
        return composition(SW128, Layout((x_extent, 64), (64, 1)))
    return composition(SW128, Layout(((64, x_extent // 64), (8, 8)), ((1, 4096), (64, 512))))


def tma_global_layout(kmajor: bool, batched: bool = False) -> Layout:
    """The operand in global memory as the kernel's tensor maps see it, (x, k) -> element,
    symbolic: ``X`` rows (M or N), ``K`` columns, leading dimension ``ld`` (K-major:
    ``(X, K):(ld, 1)``; MN-major: ``(X, K):(1, ld)``); ``batched``: a third mode of ``B``
    matrices ``bs`` elements apart (the batched kernels' rank-3 maps, one matrix per box)."""
    X, K, ld = symbols("X K ld")
    shape: Tuple[Any, ...] = (X, K)
    stride: Tuple[Any, ...] = (ld, 1) if kmajor else (1, ld)
    if batched:
        B, bs = symbols("B bs")
        shape, stride = shape + (B,), stride + (bs,)
    return Layout(shape, stride)


def tma_assumptions(kmajor: bool, batched: bool = False) -> Tuple[str, ...]:
    """What the launch guarantees of :func:`tma_global_layout`'s symbols (positive integers):
    the extents are ``int`` kernel arguments; the leading dimension covers the contiguous
    extent, is a whole number of 16-byte units (the host copies an operand that breaks this
    into a padded buffer) and, as a byte stride of an allocation, stays below 2^39 elements;
    so does a batch stride."""
    inner = "K" if kmajor else "X"
    facts: Tuple[str, ...] = (
        "X <= 2**31 - 1",
        "K <= 2**31 - 1",
        f"ld >= {inner}",
        "ld % 8 == 0",
        "ld <= 2**39 - 1",
    )
    if batched:
        facts += ("B <= 2**31 - 1", "bs % 8 == 0", "bs <= 2**39 - 1")
    return facts


def tma_dtype(dtype: str) -> str:
    """The element type of the operands' tensor maps: ``f16`` and ``bf16`` as they are, the
    other types as the 16-bit units the kernels move (``u16``)."""
    return dtype if dtype in ("f16", "bf16") else "u16"


def prove_tma(p: OperandPlan, layout: Any, log: ProofLog, dtype: str = "f16", batched: bool = False) -> Any:
    """The TMA pre-flight of operand ``p``'s loads (:func:`layoutproof.gpu.analysis.tma_preflight`):
    for every global operand the assumptions admit (:func:`tma_assumptions`), the driver
    accepts the 64x64-box, 128-byte-swizzle tensor map of ``dtype`` elements (rank 3 with a
    1-deep batch box when ``batched``), and its boxes write exactly the stage ``layout``;
    the boxes are the ones the kernel issues (box ``j`` at (x ``64 j``, k 0),
    ``TMA_BOX_BYTES * j`` bytes into the stage, coordinates contiguous dimension first) and
    deliver the stage's bytes.  Returns the :class:`~layoutproof.gpu.analysis.TmaReport`
    (its ``args``: the encoder's arguments, symbolic); raises ProofFailedError with its
    witness."""
    from layoutproof.symbolic import assuming

    P = p.name.upper()
    rows = p.loaded_rows
    if rows != p.x_extent:
        layout = _partial_box_stage(p, layout, log)
    with assuming(*tma_assumptions(p.kmajor, batched)):
        rep = tma_preflight(
            tma_global_layout(p.kmajor, batched),
            layout,
            (rows, p.bk),
            dtype=dtype,
            box=(min(rows, TMA_BOX), 64),
        )
    if rep.status != "proved" or rep.args is None:
        raise ProofFailedError(
            f"{P}: {rep.statement} is {rep.status}: {rep.witness if rep.witness is not None else rep.reason}",
            condition="TMA boxes write the stage layout",
            witness=rep.witness,
        )
    nb = -(-rows // TMA_BOX)
    issued = (
        tuple((TMA_BOX * j, 0) for j in range(nb)),
        tuple(TMA_BOX_BYTES * j for j in range(nb)),
        ((1, 0) if p.kmajor else (0, 1)) + ((2,) if batched else ()),
        (64, min(rows, TMA_BOX)) + ((1,) if batched else ()),
        "128B",
        2 * p.loaded_elems,
    )
    derived = (rep.box_origins, rep.box_offsets, rep.dims, rep.args.box_dim, rep.args.swizzle, rep.tx_bytes)
    if derived != issued:
        raise ProofFailedError(
            f"{P}: the kernel issues boxes (origins, offsets, dims, boxDim, swizzle, bytes) {issued}, "
            f"the pre-flight derived {derived}",
            condition="the issued TMA boxes are the proved ones",
            witness=(issued, derived),
        )
    log.add(
        "equal",
        f"{P}: {nb} TMA boxes of 64x{min(rows, TMA_BOX)} (128B swizzle, "
        f"{'k' if p.kmajor else 'x'} innermost), as the kernel issues them: {rep.statement} ({rep.scope})",
        rep.method,
        rep.cases,
    )
    return rep


def _partial_box_stage(p: OperandPlan, layout: Any, log: ProofLog) -> Any:
    """The stage layout a box of ``p.box_rows`` rows writes (one K-major 64-row stage): the
    stage ``layout`` restricted to rows ``[0, box_rows)``, proven equal to it there (every
    (x, k) of those rows, exhaustively), so the box lands exactly where the full box would put
    those rows and the descriptors read them unchanged."""
    rows = p.box_rows
    if not p.kmajor or p.x_extent != TMA_BOX or rows is None or not 0 < rows < TMA_BOX or rows % 8:
        raise GemmConfigError(
            f"{p.name.upper()}: a TMA box of {rows} rows needs a K-major 64-row stage and a row "
            f"count that is a multiple of 8 below 64 (x extent {p.x_extent}, "
            f"{'K' if p.kmajor else 'MN'}-major)"
        )
    sub = tma_stage_layout(rows, True)
    bad = [(x, k) for x in range(rows) for k in range(p.bk) if sub(x, k) != layout(x, k)]
    if bad:
        raise ProofFailedError(
            f"{p.name.upper()}: the {rows}-row box's layout differs from the stage's at (x, k) = {bad[0]}",
            condition="a partial box writes the stage's own rows",
            witness=bad[0],
        )
    log.add(
        "equal",
        f"{p.name.upper()}: the {rows}-row TMA box's stage layout equals the 64-row stage layout on rows "
        f"[0, {rows}) (each of the {rows * p.bk} (x, k)); rows [{rows}, 64) of a stage are not loaded",
        "exhaustive",
        rows * p.bk,
    )
    return sub


@functools.cache
def tensor_map_args(kmajor: bool, dtype: str, batched: bool = False, rows: int = TMA_BOX) -> TensorMapArgs:
    """The ``cuTensorMapEncodeTiled`` arguments of an operand's tensor map, as
    :func:`prove_tma` derives and proves them (one box's tile; the map does not depend on the
    block), symbolic in ``X``, ``K``, ``ld`` (and ``B``, ``bs``): the host substitutes its
    operand's values (:meth:`~layoutproof.gpu.analysis.TensorMapArgs.subs`) and encodes.

    >>> a = tensor_map_args(True, "bf16")
    >>> a.dtype, a.global_dim, a.global_strides, a.box_dim, a.swizzle
    ('BFLOAT16', (K, X), (2*ld,), (64, 64), '128B')
    >>> a.subs({"X": 4096, "K": 1024, "ld": 1032}).global_strides
    (2064,)
    >>> tensor_map_args(True, "f16", rows=16).box_dim  # A's box of Sm90Config(a_rows=16)
    (64, 16)

    ``rows`` below 64: the box of :attr:`~layoutproof.gpu.kernels.wgmma_core.Sm90Config.a_rows`
    rows (K-major only)."""
    p = OperandPlan("a", TMA_BOX, 64, 1, kmajor, 128, 1, TMA_BOX, box_rows=None if rows == TMA_BOX else rows)
    rep = prove_tma(p, tma_stage_layout(TMA_BOX, kmajor), ProofLog(), tma_dtype(dtype), batched)
    args: TensorMapArgs = rep.args
    return args


# ============================================================================ C map
def c_map(cfg: Sm90Config) -> Layout:
    """(thread in warpgroup, register, warpgroup) -> C tile index m + BM*n for
    wgmma m64nNk16 f32 accumulators: warp w = t//32 owns rows 16w..16w+15; lane l, register
    i: row 16w + l//4 + 8*((i//2)%2), column 8*(i//4) + 2*(l%4) + i%2.  Assumes a valid
    ``cfg`` (``bm`` = 64 per warpgroup, ``bn`` a multiple of 8); the layout itself is
    unproven here: :func:`plan_c_map` proves it against the verified atom.

    >>> c_map(Sm90Config(bm=64, bn=16)).size
    1024
    """
    BM = cfg.bm
    return Layout(
        (((4, 8, 4)), (2, 2, cfg.bn // 8), cfg.warpgroups), (((2 * BM, 1, 16)), (BM, 8, 8 * BM), 64)
    )


def _epilogue_ir(
    E: Env, cfg: Sm90Config, prob: GemmProblem, cm: Dict[str, Any], acc: kir.Var
) -> List[kir.Stmt]:
    """Accumulators -> C through the proven (thread, register, warpgroup) maps."""
    j, h = ir_var("j"), ir_var("h")
    args = dict(t=E.wt, i=4 * j + 2 * h, g=E.wg)
    coords = (E.wt, 4 * j + 2 * h, E.wg)
    r, dr = ir_const("r", E.m0 + kir.call(cm["row_fn"], **args))
    c, dc = ir_const("c", E.n0 + kir.call(cm["col_fn"], **args))
    row = E.m0 + kir.LayoutApp(cm["row"], coords, "C row map")
    col = E.n0 + kir.LayoutApp(cm["col"], coords, "C column map")
    st = store_pair_ir(
        E,
        prob,
        r,
        c,
        kir.Index(acc, (4 * j + 2 * h,)),
        kir.Index(acc, (4 * j + 2 * h + 1,)),
        row,
        col,
        "C accumulator store",
    )
    return [
        kir.Comment("epilogue: (thread, register, warpgroup) -> C coordinate, proven maps"),
        kir.For(
            j,
            kir.Const(0),
            kir.Const(cfg.bn // 8),
            kir.block(kir.For(h, kir.Const(0), kir.Const(2), kir.block(dr, dc, st), unroll=True)),
            unroll=True,
        ),
    ]


def _elem_note(cfg: Sm90Config) -> str:
    """The header's note of the operands read by two-byte loads (``elem_loads``)."""
    if not cfg.elem_loads:
        return ""
    return f" ({' and '.join(x.upper() for x in cfg.elem_loads)} read by two-byte loads)"


def _source_ir(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    cm: Dict[str, Any],
    desc: Dict[str, Tuple[int, int, int]],
    name: str,
) -> kir.Kernel:
    """The mono kernel with cp.async loads (every thread copies, one batch in flight)."""
    S = cfg.stages
    E = env90(prob, False)
    body: List[Any] = []
    smem_arena(E, body)
    sA, sB, d, d2 = stage_bases_ir(E, S, a)
    body += [d, d2]
    E.add(sA=sA, sB=sB)
    tid_ir(E, body)
    body += raster_ir(E, cfg.bm, cfg.bn, cfg.group_m)
    body += cp_setup_ir(E, a) + cp_setup_ir(E, b)
    KT, d = k_tiles_ir(E, cfg.bk)
    body.append(d)
    acc, ad = acc_ir(cfg, acc_type(prob))
    body += ad
    sbase, region, prologue = cp_prologue_ir(E, a, b, (sA, sB), S, S - 2, KT, cfg.elem_loads)
    body.append(prologue)
    kt0 = ir_var("kt0")
    kt1, dkt1 = ir_const("kt", kt0 + (S - 2))
    st1 = kir.Var("st", "int", tuple(range(S)))
    dst1 = kir.Decl(st1, kt1 % S, const=True)
    rs = kir.Var("rs", "int", tuple(range(S)))
    drs = kir.Decl(rs, kt0 % S, const=True)
    inner = kir.Block(
        (
            dkt1,
            dst1,
            kir.If(kt1.lt(KT), kir.block(load_tile_ir(E, a, b, kt1, st1, sbase, region, cfg.elem_loads))),
            kir.CpCommit(),
        ),
        bare=True,
    )
    body.append(
        kir.For(
            kt0,
            kir.Const(0),
            KT,
            kir.block(
                kir.CpWait(S - 3),
                kir.Fence("proxy_async"),
                kir.SyncThreads(),
                inner,
                drs,
                wgmma_batch_ir(E, cfg, desc, a, b, rs, E.wg, acc),
            ),
        )
    )
    body += [kir.WgmmaWait(0), kir.CpWait(0)]
    body += scale_ir(E, cfg, acc)
    body += _epilogue_ir(E, cfg, prob, cm, acc)
    descr = (
        "",
        f"wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]",
        f"A {prob.a_major}-major (lda), B {prob.b_major}-major (ldb); {prob.dtype} in, "
        f"{acc_type(prob)} accumulate, {prob.out} out",
        f"block {cfg.bm}x{cfg.bn}x{cfg.bk}, {cfg.warpgroups} consumer warpgroups, {S}-stage "
        f"cp.async pipeline{_elem_note(cfg)},",
        "operands in CuTe's 128-byte-swizzled GMMA layouts, read by wgmma through descriptors",
    )
    fns = tuple(p.fns[k] for p in (a, b) for k in ("cp_smem", "cp_x", "cp_k"))
    fns += (cm["row_fn"], cm["col_fn"], a.fns["cp_gmem"], b.fns["cp_gmem"])
    return kernel90(cfg, prob, a, b, desc, name, E, body, descr, fns, ("cp_async", "wgmma"), tma=False)


def _declare_tma_ir(cfg: Sm90Config, prob: GemmProblem, a: OperandPlan) -> Tuple[Env, List[Any], kir.Var]:
    """The mono TMA kernel's prologue: the shared arena, one full barrier per stage, the
    stage bases, the thread coordinates, the block rasterization, the k-tile count, and
    thread 0's barrier initialization followed by a CTA barrier; returns the kernel's
    variables, the statements and ``KT``."""
    S = cfg.stages
    E = env90(prob, True)
    body: List[Any] = []
    smem_arena(E, body)
    full = kir.Var("lp_full", "unsigned long long*")
    body.append(kir.Decl(full, dims=(S,), prefix="__shared__ __align__(8)", tname="unsigned long long"))
    sA, sB, d, d2 = stage_bases_ir(E, S, a)
    full0, d3 = ir_const(
        "full0", kir.Cast("unsigned", kir.Call("__cvta_generic_to_shared", (full,), "unsigned")), "unsigned"
    )
    body += [d, d2, d3]
    E.add(sA=sA, sB=sB, full0=full0)
    tid_ir(E, body)
    body += raster_ir(E, cfg.bm, cfg.bn, cfg.group_m)
    KT, d = k_tiles_ir(E, cfg.bk)
    body.append(d)
    s = ir_var("st")
    body.append(
        kir.If(
            E.tid.eq(0),
            kir.block(
                kir.For(s, kir.Const(0), kir.Const(S), kir.block(kir.MbarInit(kir.MbarRef(full0, s), 1))),
                kir.Fence("mbarrier_init"),
                kir.Fence("proxy_async"),
            ),
        )
    )
    body.append(kir.SyncThreads())
    return E, body, KT


def _tma_issue_ir(E: Env, a: OperandPlan, b: OperandPlan, kt: kir.Expr, st: kir.Expr) -> List[kir.Stmt]:
    """Thread 0's issue of k-tile ``kt`` into stage ``st``: expect the stage's bytes on its
    full barrier, then the A and B boxes."""
    tx = 2 * (a.loaded_elems + b.loaded_elems)
    bar, db = ir_const("bar", kir.MbarRef(E.full0, st), "unsigned")
    return (
        [db, kir.MbarExpectTx(bar, tx)]
        + tma_loads_ir(E, a, E.tmA, E.sA, st, kt, bar)
        + tma_loads_ir(E, b, E.tmB, E.sB, st, kt, bar)
    )


def _tma_prologue_ir(E: Env, a: OperandPlan, b: OperandPlan, S: int, KT: kir.Var) -> kir.If:
    """Thread 0 issues the k-tiles ``0 .. S-2`` (those that exist) into their stages."""
    kt = ir_var("kt")
    st0, dst0 = ir_const("st", kt)
    return kir.If(
        E.tid.eq(0),
        kir.block(
            kir.For(
                kt,
                kir.Const(0),
                kir.Const(S - 1),
                kir.block(dst0, *_tma_issue_ir(E, a, b, kt, st0)),
                cond=kt.lt(S - 1).and_(kt.lt(KT)),
            )
        ),
    )


def _tma_mainloop_ir(
    E: Env,
    cfg: Sm90Config,
    a: OperandPlan,
    b: OperandPlan,
    desc: Dict[str, Tuple[int, int, int]],
    KT: kir.Var,
    acc: kir.Var,
) -> kir.For:
    """Per k-tile: every thread waits on its stage's phase, the wgmma batch, a CTA barrier
    (the stage of the batch before is free), then thread 0 issues the tile ``S - 1`` ahead."""
    S = cfg.stages
    kt0 = ir_var("kt0")
    rs = kir.Var("rs", "int", tuple(range(S)))
    drs = kir.Decl(rs, kt0 % S, const=True)
    kt1, dkt1 = ir_const("kt", kt0 + (S - 1))
    st1 = kir.Var("st", "int", tuple(range(S)))
    dst1 = kir.Decl(st1, kt1 % S, const=True)
    return kir.For(
        kt0,
        kir.Const(0),
        KT,
        kir.block(
            drs,
            kir.MbarWait(kir.MbarRef(E.full0, rs), kir.Cast("unsigned", (kt0 / S) & 1)),
            wgmma_batch_ir(E, cfg, desc, a, b, rs, E.wg, acc),
            kir.SyncThreads("every warpgroup's batch kt0 - 1 is done: its stage may be refilled"),
            kir.If(
                E.tid.eq(0),
                kir.block(dkt1, kir.If(kt1.lt(KT), kir.block(dst1, *_tma_issue_ir(E, a, b, kt1, st1)))),
            ),
        ),
    )


def _source_tma_ir(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    cm: Dict[str, Any],
    desc: Dict[str, Tuple[int, int, int]],
    name: str,
) -> kir.Kernel:
    """The mono kernel with TMA loads: thread 0 issues ``cp.async.bulk.tensor`` boxes
    completing on one mbarrier per stage; every thread waits on the stage's phase before
    its wgmma."""
    S = cfg.stages
    E, body, KT = _declare_tma_ir(cfg, prob, a)
    acc, ad = acc_ir(cfg, acc_type(prob))
    body += ad
    body.append(_tma_prologue_ir(E, a, b, S, KT))
    body.append(_tma_mainloop_ir(E, cfg, a, b, desc, KT, acc))
    body.append(kir.WgmmaWait(0))
    body += scale_ir(E, cfg, acc)
    body += _epilogue_ir(E, cfg, prob, cm, acc)
    descr = (
        "",
        f"wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]",
        f"A {prob.a_major}-major, B {prob.b_major}-major (TMA tensor maps);",
        f"{prob.dtype} in, {acc_type(prob)} accumulate, {prob.out} out",
        f"block {cfg.bm}x{cfg.bn}x{cfg.bk}, {cfg.warpgroups} consumer warpgroups, {S}-stage TMA pipeline",
        "(64x64 boxes, 128-byte swizzle, one mbarrier per stage), wgmma through descriptors",
    )
    return kernel90(
        cfg, prob, a, b, desc, name, E, body, descr, (cm["row_fn"], cm["col_fn"]), ("tma", "wgmma"), tma=True
    )


def _mono_tma_protocol(k: kir.Kernel, cfg: Sm90Config, tx: int, log: ProofLog) -> int:
    """The mono TMA kernel's mbarriers, read from the IR: one barrier per stage initialized
    with 1 arrival (thread 0's expect_tx, which announces the stage's bytes), and the wait of
    k-tile ``kt0`` on stage ``kt0 % S`` uses the parity of that barrier's ``kt0 / S``-th
    phase (checked for every k-tile of four passes over the ring)."""
    ops = obligations.mbarrier_ops(k)
    n = 0
    for s, _guards, loops in ops:
        if isinstance(s, kir.MbarInit):
            if s.count != 1:
                raise ProofFailedError(
                    f"full barriers expect {s.count} arrivals, thread 0 makes 1",
                    condition="arrival counts",
                    witness=s.count,
                )
        elif isinstance(s, kir.MbarExpectTx):
            if s.nbytes != tx:
                raise ProofFailedError(
                    f"expect_tx announces {s.nbytes} bytes, a stage holds {tx}",
                    condition="transaction bytes",
                    witness=s.nbytes,
                )
        elif isinstance(s, kir.MbarWait):
            bar = obligations.resolve(s.bar, k)
            kt0 = loops[-1].var
            t = np.arange(4 * cfg.stages)
            par = evaluate.ev(s.parity, {kt0.name: t})
            stg = (
                evaluate.ev(obligations.resolve(bar.idx, k), {kt0.name: t})
                if isinstance(bar, kir.MbarRef)
                else None
            )
            if stg is None or np.any(stg != t % cfg.stages) or np.any(par != (t // cfg.stages) & 1):
                raise ProofFailedError(
                    "the wait of a k-tile does not use its stage's phase parity",
                    condition="wait parity",
                    witness="mono TMA wait",
                )
        else:
            raise ProofFailedError(
                f"unexpected mbarrier operation {type(s).__name__}", condition="protocol of the IR"
            )
        n += 1
    log.add(
        "protocol",
        f"mono TMA mbarriers (IR): 1 arrival per phase (thread 0's expect_tx of "
        f"{tx} bytes); k-tile kt0 waits stage kt0 % {cfg.stages} with parity "
        f"(kt0 / {cfg.stages}) & 1, its phase",
        "exhaustive",
        4 * cfg.stages,
    )
    return n


def batched_kernels_available() -> bool:
    """True when the kernel IR has rank-3 TMA loads (``TmaLoad.c2``), which the batched
    kernel reads its operands' batches with."""
    return "c2" in getattr(kir.TmaLoad, "__dataclass_fields__", {})


_MEMO: Dict[Tuple[Sm90Config, GemmProblem], GemmKernel] = {}


def plan_operands(
    cfg: Sm90Config, prob: GemmProblem, log: ProofLog
) -> Tuple[OperandPlan, OperandPlan, Dict[str, Any], Tuple[Any, Any]]:
    """The operands of a wgmma kernel with ``cfg``'s tiles (its number type checked first):
    ``(a, b, desc, (rows, cols))`` -- their stage plans, TMA boxes and swizzles
    (:func:`plan_stage`), the descriptors (:func:`plan_descriptors`, and for the other number
    types :func:`prove_typed_descriptors`) and the lowered C maps (:func:`plan_c_map`), each
    proven into ``log`` in that order."""
    if prob.dtype in TC_TYPES:
        check_typed(cfg, prob)
    if cfg.elem_loads and prob.dtype not in ("f16", "bf16"):
        raise GemmConfigError(
            f"generate_sm90: elem_loads={cfg.elem_loads!r} reads two-byte elements: the operands must "
            f"be f16 or bf16, not {prob.dtype}"
        )
    if cfg.stage_in and (prob.dtype not in ("f16", "bf16") or prob.batch):
        raise GemmConfigError(
            f"generate_sm90: stage_in={cfg.stage_in!r} copies two-byte elements of one 2-D product: "
            f"the operands must be f16 or bf16 and not batched (got {prob.dtype}"
            + (f", batched {prob.batch}" if prob.batch else "")
            + ")"
        )
    threads = cfg.threads
    a = OperandPlan("a", cfg.bm, cfg.bk, cfg.stages, prob.a_major == "k", threads, cfg.warpgroups, 64)
    if cfg.a_rows != 64:
        _plan_short_a(cfg, prob, a, log)
    b = OperandPlan("b", cfg.bn, cfg.bk, cfg.stages, prob.b_major == "k", threads, 1, cfg.bn)
    smems = {p.name: plan_stage(cfg, p, log, prob) for p in (a, b)}
    desc = {
        "a": plan_descriptors(a, smems["a"], 64, cfg.warpgroups, log),
        "b": plan_descriptors(b, smems["b"], cfg.bn, 1, log),
    }
    if prob.dtype in TC_TYPES:
        prove_typed_descriptors(a, smems["a"], desc["a"], prob.dtype, 64, cfg.warpgroups, log)
        prove_typed_descriptors(b, smems["b"], desc["b"], prob.dtype, cfg.bn, 1, log)
    return a, b, desc, plan_c_map(cfg, prob, log)


def _plan_short_a(cfg: Sm90Config, prob: GemmProblem, a: OperandPlan, log: ProofLog) -> None:
    """A's box of ``cfg.a_rows`` rows (:attr:`Sm90Config.a_rows`): checks what it needs of the
    problem, sets ``a.box_rows`` (the stage proof, :func:`prove_tma`, then proves the box's
    rows; a batched A's rank-3 box is ``(64, a_rows, 1)``) and records why the rows it leaves
    unloaded reach no output: row ``i`` of a wgmma's D is row ``i`` of A times B, the stores
    write rows below M only (the bounds obligations), and the host launches the kernel only
    with M <= ``a_rows`` (each batch's M)."""
    if prob.a_major != "k" or prob.dtype not in ("f16", "bf16"):
        raise GemmConfigError(
            f"Sm90Config: a_rows={cfg.a_rows} needs a K-major f16/bf16 A "
            f"(got a_major={prob.a_major!r}, dtype={prob.dtype!r})"
        )
    a.box_rows = cfg.a_rows
    log.add(
        "config",
        f"A: each stage loads rows [0, {cfg.a_rows}) of the 64-row tile; accumulator row i depends only "
        f"on A row i (D = A B row by row), the stores write rows < M, and the host launches with "
        f"M <= {cfg.a_rows} only (GemmConfigError otherwise): no unloaded row reaches C",
        "host check",
        1,
    )


def generate_sm90(
    config: Optional[Sm90Config] = None, problem: Optional[GemmProblem] = None, *, memo: bool = True
) -> GemmKernel:
    """Build, prove and emit the wgmma kernel (any operand major-ness); the default config
    is :data:`HOPPER_DEFAULT` (the warp-specialized persistent kernel)."""
    cfg = (config or HOPPER_DEFAULT).validate()
    prob = (problem or GemmProblem("k", "k")).validate()
    if memo and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    if cfg.schedule == "pingpong":
        raise GemmConfigError(
            "generate_sm90: schedule='pingpong' is built by "
            "layoutproof.gpu.kernels.wgmma_pingpong.generate_pingpong (its own ring protocol)"
        )
    if prob.batch and cfg.schedule != "ws":
        raise GemmConfigError(
            f"generate_sm90: a batched problem (batch={prob.batch!r}) runs on the warp-specialized "
            "TMA kernel (schedule='ws')"
        )
    log = ProofLog()
    threads = cfg.threads
    a, b, desc, (rows, cols) = plan_operands(cfg, prob, log)
    h = hashlib.sha256(f"{GENERATOR_VERSION}{cfg}{prob}".encode()).hexdigest()[:10]
    name = f"lp_gemm_sm90_{prob.key()}_{h}"
    title = f"proven before emission ({cfg.key()}, {prob.key()})"
    if cfg.schedule == "ws":
        ir, src = build_ws_kernel(cfg, prob, a, b, desc, name, title, log)
    else:
        cmaps = {
            "row": rows.layout,
            "col": cols.layout,
            "row_fn": kir.from_lowered(rows),
            "col_fn": kir.from_lowered(cols),
        }
        if cfg.loader == "tma":
            ir = _source_tma_ir(cfg, prob, a, b, cmaps, desc, name)
            tx = 2 * (a.loaded_elems + b.loaded_elems)
            src = finish(ir, log, title, lambda k: _mono_tma_protocol(k, cfg, tx, log))
        else:
            ir = _source_ir(cfg, prob, a, b, cmaps, desc, name)
            src = finish(ir, log, title)
    gcfg = GemmConfig(
        bm=cfg.bm,
        bn=cfg.bn,
        bk=cfg.bk,
        stages=cfg.stages,
        group_m=cfg.group_m,
        warps_m=cfg.warpgroups * 4,
        warps_n=1,
    )
    k = GemmKernel(gcfg, prob, src, name, threads, cfg.smem_bytes, log, {"a": (3, 3, 3), "b": (3, 3, 3)}, ir)
    k.config = cfg
    if memo:
        _MEMO[(cfg, prob)] = k
    return k


def plan_stage(cfg: Sm90Config, p: OperandPlan, log: ProofLog, prob: Optional[GemmProblem] = None) -> Any:
    """Operand ``p``'s stage buffer: the TMA box layout (the stages a bijection, the boxes
    writing exactly the stage layout) or the SW128 GMMA atom tiled to the stage with its
    cp.async copies (covering the tile once, free of bank conflicts).  ``prob`` gives the
    tensor maps' element type and whether the operand is batched (default: f16, one
    matrix).  Returns the GMMA shared-memory layout the descriptors read
    (:func:`plan_descriptors`); the proofs go to ``log``.  Assumes a validated ``cfg`` and
    ``p`` planned from it; with ``loader="tma"`` it records ``p.maps["tma"]``, with cp.async
    it sets ``p``'s stage layout and swizzle (both read by the kernel builders)."""
    if cfg.loader == "tma":
        lay = tma_stage_layout(p.x_extent, p.kmajor)
        bs, bd = top_modes(lay.layout_b)
        stack = Layout((bs[0], bs[1], p.stages), (bd[0], bd[1], p.stage_elems))
        total = p.stages * p.stage_elems
        lower.prove_bijective(
            composition(SW128, stack),
            total,
            what=f"{p.name.upper()} smem stages onto [0,{total})",
            log=log,
        )
        dtype, batched = ("f16", False) if prob is None else (tma_dtype(prob.dtype), p.name in prob.batch)
        prove_tma(p, lay, log, dtype, batched)
        p.maps["tma"] = lay
        return gmma.GmmaSmemLayout(lay, "K" if p.kmajor else "MN", "SW128")
    threads = cfg.threads
    if p.stage_elems % (8 * threads):
        raise GemmConfigError(
            f"Sm90Config: the {p.name.upper()} tile is not a whole number of 16-byte chunks per thread"
        )
    smem = gmma.tile_to_shape(gmma.smem_atom("K" if p.kmajor else "MN", "SW128"), (p.x_extent, p.bk))
    sl = smem.layout
    if not isinstance(sl, ComposedLayout) or sl.swizzle != SW128 or sl.offset != 0:
        raise ProofFailedError(f"{sl} is not {SW128} o 0 o B", condition="SW128 atom", witness=str(sl))
    ls, ld = top_modes(sl.layout_b)
    p.tile_layout = Layout((ls[0], ls[1], p.stages), (ld[0], ld[1], p.stage_elems))
    p.swizzle = SW128
    plan_copy(p, log)
    prove_banks(
        swizzled(SW128, p.stage_layout()),
        p.copy_access(),
        "cp.async.16",
        f"{p.name.upper()} cp.async 16B writes into the {smem.major}-major SW128 stage",
        log,
    )
    return smem


def plan_c_map(cfg: Sm90Config, prob: GemmProblem, log: ProofLog) -> Tuple[Any, Any]:
    """The accumulator -> C map: the wgmma atom (verified against the PTX fragment encoding
    of :mod:`layoutproof.gpu.isa.gmma`) is its (thread, register) part, the whole map a
    bijection onto the tile; returns its row and column expressions (``lp_c_row``,
    ``lp_c_col`` of ``(t, i, g)``), lowered and proven, the records in ``log``.  Assumes a
    validated ``cfg`` and ``prob``; raises ``ProofFailedError`` when the kernel's
    instruction is not the verified atom or the map is not a bijection."""
    cm = c_map(cfg)
    # the atom (verified against the PTX fragment encoding of layoutproof.gpu.isa.gmma) is the
    # (thread, register) part of the C map; the warpgroup mode is covered by the bijection
    atom = gmma.sm90_atom(cfg.bn, prob.dtype, "SS")
    log.extend(gmma.verify_gmma_atom(atom))
    if kir.wgmma_ptx(cfg.bn, prob.dtype) != atom.ptx:
        raise ProofFailedError(
            f"the kernel text issues {kir.wgmma_ptx(cfg.bn, prob.dtype)}, the verified atom is {atom.ptx}",
            condition="emitted instruction is the verified atom",
            witness=atom.name,
        )
    prove_c_atom_part(cm, atom, (64, cfg.bn), cfg.bm, log)
    lower.prove_bijective(
        cm, cfg.bm * cfg.bn, what=f"C (thread, register, warpgroup) -> {cfg.bm}x{cfg.bn} tile", log=log
    )
    cargs = ("t", "i", "g")
    rows = lower.lower(composition(Layout((cfg.bm, cfg.bn), (1, 0)), cm), cargs, name="lp_c_row", log=log)
    cols = lower.lower(composition(Layout((cfg.bm, cfg.bn), (0, 1)), cm), cargs, name="lp_c_col", log=log)
    return rows, cols
