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
* for ``ws``: the TMA boxes write exactly the stage layout; the scheduler is a bijection
  onto the tile grid (:func:`prove_schedule`); the epilogue's swizzle is conflict-free and
  its data flow puts every accumulator at its C coordinate (:func:`_plan_epilogue`); the
  mbarrier protocol, read from the kernel IR's barrier nodes (:func:`protocol_ir`), is
  model-checked over every interleaving (:mod:`layoutproof.gpu.proof.pipeline`); in a cluster,
  the multicast boxes partition B and each CTA's transaction count is the bytes that land
  in it.

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
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof.layout import top_modes

from ..config import DTYPES, OUT_DTYPES, SMEM_LIMIT, GemmConfig, GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..isa import gmma
from ..proof import banks, kir, lower
from ..proof.pipeline import prove_pipeline
from ..proof.record import ProofLog
from .toolkit import (
    STORE2,
    Env,
    GemmKernel,
    OperandPlan,
    addr_of,
    base_env,
    buffer_map,
    cp_setup_ir,
    eval_map,
    finish,
    ir_const,
    ir_var,
    kernel_params,
    load_tile_ir,
    plan_copy,
    prove_c_atom_part,
    raster_ir,
    store_pair_ir,
    type_sizes,
    warp_rows,
)

__all__ = ["Sm90Config", "HOPPER_DEFAULT", "generate_sm90"]

GENERATOR_VERSION = "sm90-2"
SW128 = Swizzle(3, 3, 3)  # on 2-byte elements: 16-byte chunk index ^= row % 8 in 128-byte rows


@dataclass(frozen=True)
class Sm90Config:
    """Block tile of the wgmma kernel: ``bm`` = 64 x consumer warpgroups, ``bn`` the wgmma
    N (8..256, a multiple of 8 that the copies tile), ``bk`` = 64 (one 128-byte row);
    ``loader`` ``"cp.async"`` or ``"tma"``; ``schedule`` ``"mono"`` (every warpgroup
    computes) or ``"ws"`` (a TMA producer warpgroup, persistent grid; needs ``"tma"``);
    ``cluster`` 1 or 2 (CTAs sharing the B tile by multicast; ``"ws"`` only)."""

    bm: int = 128
    bn: int = 256
    bk: int = 64
    stages: int = 4
    group_m: int = 8
    loader: str = "cp.async"
    schedule: str = "mono"
    cluster: int = 1

    @property
    def warpgroups(self) -> int:
        """Consumer (wgmma) warpgroups: one per 64 rows of the block."""
        return self.bm // 64

    @property
    def threads(self) -> int:
        # the warp-specialized kernel adds one producer warpgroup in front of the consumers
        return 128 * (self.warpgroups + (self.schedule == "ws"))

    @property
    def epilogue_bytes(self) -> int:
        """Shared memory of the staged epilogue: 64 rows x 128 bytes per consumer warpgroup."""
        return 8192 * self.warpgroups if self.schedule == "ws" else 0

    @property
    def smem_bytes(self) -> int:
        # + 1024 to align the stages to the 128-byte swizzle's 1024-byte period
        return self.stages * (self.bm + self.bn) * self.bk * 2 + self.epilogue_bytes + 1024

    def key(self) -> str:
        ld = "_tma" if self.loader == "tma" else ""
        ws = "_ws" if self.schedule == "ws" else ""
        cl = f"_c{self.cluster}" if self.cluster != 1 else ""
        return f"sm90_{self.bm}x{self.bn}x{self.bk}_s{self.stages}_g{self.group_m}{ld}{ws}{cl}"

    def validate(self) -> "Sm90Config":
        for k in ("bm", "bn", "bk", "stages", "group_m", "cluster"):
            v = getattr(self, k)
            if type(v) is not int or v < 1:
                raise GemmConfigError(f"Sm90Config: {k}={v!r} must be a positive int")
        if self.bm not in (64, 128, 192, 256):
            raise GemmConfigError(f"Sm90Config: bm={self.bm} must be 64 x (1..4 warpgroups)")
        if self.bn % 16 or not 16 <= self.bn <= 256:
            raise GemmConfigError(f"Sm90Config: bn={self.bn} must be a multiple of 16 in [16, 256]")
        if self.loader == "tma" and self.bn % 64:
            raise GemmConfigError(
                f"Sm90Config: the TMA loader moves 64-row boxes: bn={self.bn} must be a multiple of 64"
            )
        if self.loader not in ("cp.async", "tma"):
            raise GemmConfigError(f"Sm90Config: loader={self.loader!r} must be 'cp.async' or 'tma'")
        if self.schedule not in ("mono", "ws"):
            raise GemmConfigError(f"Sm90Config: schedule={self.schedule!r} must be 'mono' or 'ws'")
        if self.schedule == "ws" and self.loader != "tma":
            raise GemmConfigError(
                "Sm90Config: the warp-specialized schedule ('ws') is fed by "
                "the TMA producer: it needs loader='tma'"
            )
        if self.cluster not in (1, 2):
            raise GemmConfigError(f"Sm90Config: cluster={self.cluster} must be 1 or 2")
        if self.cluster == 2 and (self.schedule != "ws" or (self.bn // 64) % 2):
            raise GemmConfigError(
                "Sm90Config: a 2-CTA cluster multicasts half of the B tile's "
                "64-row boxes from each CTA: it needs schedule='ws' and bn "
                f"a multiple of 128 (bn={self.bn})"
            )
        if self.schedule == "ws" and self.bm > 128:
            raise GemmConfigError(
                f"Sm90Config: schedule='ws' runs one producer and at most two "
                f"consumer warpgroups (register budget): bm={self.bm} > 128"
            )
        if self.bk != 64:
            raise GemmConfigError("Sm90Config: bk must be 64 (one 128-byte swizzled row)")
        if not 3 <= self.stages <= 8:
            raise GemmConfigError(f"Sm90Config: stages={self.stages} must be in [3, 8]")
        if self.smem_bytes > SMEM_LIMIT:
            raise GemmConfigError(f"Sm90Config: {self.smem_bytes} bytes of shared memory exceed {SMEM_LIMIT}")
        if self.bn // 2 + 40 > 255:
            raise GemmConfigError("Sm90Config: too many accumulators")
        return self


HOPPER_DEFAULT = Sm90Config(loader="tma", schedule="ws")
"""The kernel ``gemm`` runs on sm_90 (where cuda-python can encode tensor maps) and
``generate_sm90()`` emits: 128x256x64 tiles, 4 stages, a TMA producer warpgroup and two
consumer warpgroups, persistent."""


# ============================================================================ descriptors
def _plan_descriptors(
    p: OperandPlan, smem: Any, rows: int, slices: int, log: ProofLog
) -> Tuple[int, int, int]:
    """The descriptors of operand ``p``: one ``rows``-row slice per warpgroup (A) or the
    whole tile (B), one per k16 step.  Returns (constant fields, slice step, k16 step) in
    bytes, after proving that every descriptor ``fields | (start >> 4)`` with start =
    slice * slice_step + ks * k_step reads exactly its elements of the layout."""
    P = p.name.upper()
    fields, starts = None, {}
    for sl in range(slices):
        for ks in range(p.bk // 16):
            d = gmma.make_descriptor(smem, 0, mn_offset=sl * rows, k_offset=16 * ks)
            if fields is None:  # the template: slice 0, k step 0 (a field another
                fields = d & ~0x3FFF  # slice does not reach may differ; the proof decides)
            starts[(sl, ks)] = (d & 0x3FFF) << 4
            # the descriptor the kernel forms: the template with this start address
            emitted = fields | (d & 0x3FFF)
            log.extend(
                gmma.prove_descriptor(
                    smem,
                    emitted,
                    base_addr=0,
                    mn_offset=sl * rows,
                    k_offset=16 * ks,
                    mn_extent=rows,
                    k_extent=16,
                )
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


# ============================================================================ TMA
TMA_BOX = 64  # a box is 64 x 64 elements: 64 along the contiguous dimension = 128 B


def tma_stage_layout(x_extent: int, kmajor: bool) -> Any:
    """The (x, k) -> element layout of one stage as the TMA writes it: boxes of 64
    contiguous-dimension elements (one 128-byte swizzled row) x 64 rows, one after the
    other along x.  K-major: rows are x, so the boxes simply stack; MN-major: rows are k, a
    box holds all 64 k of 64 x, and 8-row groups of k are 1024 B apart."""
    if kmajor:
        return composition(SW128, Layout((x_extent, 64), (64, 1)))
    return composition(SW128, Layout(((64, x_extent // 64), (8, 8)), ((1, 4096), (64, 512))))


def tma_box_addresses(x_extent: int, kmajor: bool) -> np.ndarray:
    """Byte offset (within the stage) where the tensor-memory accelerator puts tile element
    (x, k), from the PTX/CUDA model of a 2-D tiled load with 128-byte swizzle: box j lands
    at j * 8192; its element (inner i, outer o) at ``o * 128 + 2 i``, then the 128-byte
    swizzle XORs address bits [4, 7) with bits [7, 10).  Returns an (x_extent, 64) array."""
    x = np.arange(x_extent)[:, None]
    k = np.arange(64)[None, :]
    if kmajor:  # inner = k, outer = x % 64, box = x // 64
        lin = (x // 64) * 8192 + (x % 64) * 128 + 2 * k
    else:  # inner = x % 64, outer = k, box = x // 64
        lin = (x // 64) * 8192 + k * 128 + 2 * (x % 64)
    return lin ^ (((lin >> 7) & 7) << 4)


def _prove_tma(p: OperandPlan, layout: Any, log: ProofLog) -> None:
    P = p.name.upper()
    want = eval_map(layout).reshape(p.bk, p.x_extent).T * 2
    got = tma_box_addresses(p.x_extent, p.kmajor)
    bad = np.argwhere(got != want)
    if bad.size:
        x, k = (int(v) for v in bad[0])
        raise ProofFailedError(
            f"{P}: the TMA box puts element (x {x}, k {k}) at byte "
            f"{int(got[x, k])}, the stage layout {layout} at {int(want[x, k])}",
            condition="TMA boxes write the stage layout",
            witness=(x, k),
        )
    if np.unique(got).size != got.size or got.min() != 0 or got.max() != 2 * got.size - 2:
        raise ProofFailedError(
            f"{P}: the TMA boxes do not fill the stage exactly once", condition="TMA boxes tile the stage"
        )
    log.add(
        "equal",
        f"{P}: {p.x_extent // 64} TMA boxes of 64x64 (128B swizzle, "
        f"{'k' if p.kmajor else 'x'} innermost) write exactly the stage layout "
        f"{layout}, each element once",
        "exhaustive",
        int(got.size),
    )


# ============================================================================ C map
def _c_map(cfg: Sm90Config) -> Layout:
    """(thread in warpgroup, register, warpgroup) -> C tile index m + BM*n for
    wgmma m64nNk16 f32 accumulators: warp w = t//32 owns rows 16w..16w+15; lane l, register
    i: row 16w + l//4 + 8*((i//2)%2), column 8*(i//4) + 2*(l%4) + i%2."""
    BM = cfg.bm
    return Layout(
        (((4, 8, 4)), (2, 2, cfg.bn // 8), cfg.warpgroups), (((2 * BM, 1, 16)), (BM, 8, 8 * BM), 64)
    )


# ============================================================================ kernel IR
def _env90(prob: GemmProblem, tma: bool) -> Env:
    E = base_env()
    if tma:
        E.add(tmA=kir.Var("tmA", "lp_tmap_t"), tmB=kir.Var("tmB", "lp_tmap_t"))
    return E


def env_var(E: Env, name: str) -> Optional[kir.Var]:
    """A kernel variable added to ``E`` by name (the batched kernel's ``batch``, ``ldcb``,
    ``bidx``), or None where the kernel has none."""
    v = E.__dict__.get(name)
    return v if isinstance(v, kir.Var) else None


def need_var(E: Env, name: str) -> kir.Var:
    """:func:`env_var` where the kernel must have it."""
    v = env_var(E, name)
    if v is None:
        raise GemmConfigError(f"kernel IR: no variable {name!r} in this kernel")
    return v


def _params90(E: Env, tma: bool) -> Tuple[Tuple[str, kir.Var], ...]:
    if not tma:
        return kernel_params(E, None)
    params: Tuple[Tuple[str, kir.Var], ...] = (
        ("const __grid_constant__ lp_tmap_t", E.tmA),
        ("const __grid_constant__ lp_tmap_t", E.tmB),
        ("lp_out_t* __restrict__", E.C),
        ("int", E.M),
        ("int", E.N),
        ("int", E.K),
        ("long long", E.ldc),
        ("int", E.c_vec),
    )
    if env_var(E, "batch") is not None:  # batched: the batch count, C's batch stride
        params += (("int", need_var(E, "batch")), ("long long", need_var(E, "ldcb")))
    return params


def _smem_arena(E: Env, body: List[Any], aligned_name: str = "s0", split: bool = False) -> None:
    """``lp_smem`` (1024-byte aligned start ``s0``), ``sA``, ``sB``."""
    smem = kir.Var("lp_smem", "unsigned char*")
    body.append(kir.Decl(smem, dims=(0,), prefix="extern __shared__ __align__(1024)", tname="unsigned char"))
    cvta = kir.Cast("unsigned", kir.Call("__cvta_generic_to_shared", (smem,), "unsigned"))
    if split:
        sbase, d = ir_const("sbase", cvta, "unsigned")
        body.append(d)
        s0, d = ir_const(aligned_name, kir.AlignUp(sbase, 1024), "unsigned")
    else:
        sbase = None
        s0, d = ir_const(aligned_name, kir.AlignUp(cvta, 1024), "unsigned")
    body.append(d)
    E.add(smem=smem, sbase=sbase, s0=s0)


def _wgmma_batch_ir(
    E: Env,
    cfg: Sm90Config,
    desc: Dict[str, Tuple[int, int, int]],
    a: OperandPlan,
    b: OperandPlan,
    stage: kir.Expr,
    slice_: kir.Expr,
    acc: kir.Var,
) -> List[kir.Stmt]:
    """One k-tile's wgmma batch on stage ``stage`` for warpgroup slice ``slice_``: the
    proven descriptor starts, ``bk / 16`` wgmmas, commit, and a wait that leaves this batch
    in flight (the previous one is complete after it)."""
    S = cfg.stages
    a_base, d1 = ir_const(
        "a_base",
        E.sA
        + stage * kir.Const(2 * a.stage_elems, "unsigned")
        + slice_ * kir.Const(desc["a"][1], "unsigned"),
        "unsigned",
    )
    b_base, d2 = ir_const("b_base", E.sB + stage * kir.Const(2 * b.stage_elems, "unsigned"), "unsigned")
    ks = ir_var("ks")
    nk = cfg.bk // 16
    # the descriptor starts _plan_descriptors proved: (slice, k step, stage) -> byte offset
    la = Layout((cfg.warpgroups, nk, S), (desc["a"][1], desc["a"][2], 2 * a.stage_elems))
    lb = Layout((nk, S), (desc["b"][2], 2 * b.stage_elems))
    ca = kir.Claim(
        "A descriptor start address (warpgroup slice, k16 step, stage)",
        E.sA + kir.LayoutApp(la, (slice_, ks, stage), "A descriptor starts"),
        region=(E.sA, 2 * S * a.stage_elems),
        width=1,
    )
    cb = kir.Claim(
        "B descriptor start address (k16 step, stage)",
        E.sB + kir.LayoutApp(lb, (ks, stage), "B descriptor starts"),
        region=(E.sB, 2 * S * b.stage_elems),
        width=1,
    )
    return [
        d1,
        d2,
        kir.WgmmaFence(),
        kir.For(
            ks,
            kir.Const(0),
            kir.Const(nk),
            kir.block(
                kir.Wgmma(
                    acc,
                    a_base + kir.Const(desc["a"][2], "unsigned") * ks,
                    b_base + kir.Const(desc["b"][2], "unsigned") * ks,
                    ca,
                    cb,
                )
            ),
            unroll=True,
        ),
        kir.WgmmaCommit(),
        kir.WgmmaWait(1),
    ]


def _acc_ir(cfg: Sm90Config) -> Tuple[kir.Var, List[kir.Stmt]]:
    R = cfg.bn // 2
    acc = kir.Var("acc", "float")
    i = ir_var("i")
    return acc, [
        kir.Decl(acc, dims=(R,)),
        kir.For(
            i,
            kir.Const(0),
            kir.Const(R),
            kir.block(kir.Assign(kir.Index(acc, (i,)), kir.FloatLit("0.f"))),
            unroll=True,
        ),
    ]


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


def _tid_ir(E: Env, body: List[Any]) -> None:
    tid, d1 = ir_const("tid", E.threadIdx)
    wg, d2 = ir_const("wg", tid >> 7)
    wt, d3 = ir_const("wt", tid & 127)
    body += [d1, d2, d3]
    E.add(tid=tid, wg=wg, wt=wt)


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
    E = _env90(prob, False)
    body: List[Any] = []
    _smem_arena(E, body)
    sA, d = ir_const("sA", E.s0, "unsigned")
    sB, d2 = ir_const("sB", E.s0 + kir.Const(S * 2 * a.stage_elems, "unsigned"), "unsigned")
    body += [d, d2]
    E.add(sA=sA, sB=sB)
    _tid_ir(E, body)
    body += raster_ir(E, cfg.bm, cfg.bn, cfg.group_m)
    body += cp_setup_ir(E, a) + cp_setup_ir(E, b)
    KT, d = ir_const("KT", (E.K + (cfg.bk - 1)) / cfg.bk)
    body.append(d)
    acc, ad = _acc_ir(cfg)
    body += ad
    sbase = {"a": sA, "b": sB}
    region = {"a": (sA, 2 * S * a.stage_elems), "b": (sB, 2 * S * b.stage_elems)}
    st = ir_var("st")
    kt0v, dkt = ir_const("kt", st)
    body.append(
        kir.For(
            st,
            kir.Const(0),
            kir.Const(S - 2),
            kir.block(
                kir.If(st.lt(KT), kir.block(dkt, load_tile_ir(E, a, b, kt0v, st, sbase, region))),
                kir.CpCommit(),
            ),
            unroll=True,
        )
    )
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
            kir.If(kt1.lt(KT), kir.block(load_tile_ir(E, a, b, kt1, st1, sbase, region))),
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
                _wgmma_batch_ir(E, cfg, desc, a, b, rs, E.wg, acc),
            ),
        )
    )
    body += [kir.WgmmaWait(0), kir.CpWait(0)]
    body += _epilogue_ir(E, cfg, prob, cm, acc)
    descr = (
        "",
        f"wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]",
        f"A {prob.a_major}-major (lda), B {prob.b_major}-major (ldb); {prob.dtype} in, f32 "
        f"accumulate, {prob.out} out",
        f"block {cfg.bm}x{cfg.bn}x{cfg.bk}, {cfg.warpgroups} consumer warpgroups, {S}-stage "
        f"cp.async pipeline,",
        "operands in CuTe's 128-byte-swizzled GMMA layouts, read by wgmma through descriptors",
    )
    fns = tuple(p.fns[k] for p in (a, b) for k in ("cp_smem", "cp_x", "cp_k"))
    fns += (cm["row_fn"], cm["col_fn"], a.fns["cp_gmem"], b.fns["cp_gmem"])
    return _kernel90(cfg, prob, a, b, desc, name, E, body, descr, fns, ("cp_async", "wgmma"), tma=False)


def _kernel90(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    desc: Dict[str, Tuple[int, int, int]],
    name: str,
    E: Env,
    body: List[Any],
    descr: Tuple[str, ...],
    fns: Tuple[Any, ...],
    helpers: Tuple[str, ...],
    *,
    tma: bool,
    devfns: Tuple[Any, ...] = (),
) -> kir.Kernel:
    tin = DTYPES[prob.dtype][0]
    tout = OUT_DTYPES[prob.out][0]
    return kir.Kernel(
        name,
        _params90(E, tma),
        kir.block(*body),
        cfg.threads,
        min_blocks=1,
        cluster=cfg.cluster,
        typedefs=(("lp_in_t", tin), ("lp_out_t", tout)),
        sizes=type_sizes(prob),
        functions=fns,
        devfns=devfns,
        description=descr,
        helpers=helpers,
        desc_fields={"a": desc["a"][0], "b": desc["b"][0]},
        wgmma=(cfg.bn, prob.dtype, 0 if a.kmajor else 1, 0 if b.kmajor else 1),
    )


def _tma_loads_ir(
    E: Env,
    p: OperandPlan,
    tmap: kir.Var,
    base: kir.Var,
    st: kir.Expr,
    kt: kir.Expr,
    bar: kir.Expr,
    boxes: Optional[Tuple[int, ...]] = None,
    mask: Optional[int] = None,
    c2: Optional[kir.Expr] = None,
) -> List[kir.Stmt]:
    """The TMA box loads of tile ``kt`` of operand ``p`` into stage ``st`` on barrier ``bar``
    (the boxes :func:`_prove_tma` proved to write exactly the stage layout).  In a batched
    kernel an operand that carries the batch index reads through a rank-3 tensor map at
    batch coordinate ``c2`` (the tile's batch, :func:`batch_split_ir`)."""
    o0 = E.m0 if p.name == "a" else E.n0
    lay = p.maps["tma"]
    out: List[kir.Stmt] = []
    for j in boxes if boxes is not None else range(p.x_extent // TMA_BOX):
        x = o0 + TMA_BOX * j
        k0 = kt * 64
        c0, c1 = (k0, x) if p.kmajor else (x, k0)
        xc = o0 + kir.Const(TMA_BOX * j)
        kc = kt * kir.Const(64)
        claim = kir.Claim(
            f"{p.name.upper()} TMA box {j} (stage, box origin (x {TMA_BOX * j}, k 0))",
            base
            + 2
            * (
                st * p.stage_elems
                + kir.LayoutApp(
                    lay, (kir.Const(TMA_BOX * j), kir.Const(0)), f"{p.name.upper()} TMA stage layout"
                )
            ),
            region=(base, 2 * p.stages * p.stage_elems),
            width=2 * TMA_BOX * 64,
        )
        dst = base + st * kir.Const(2 * p.stage_elems, "unsigned") + kir.Const(8192 * j, "unsigned")
        cc = (kc, xc) if p.kmajor else (xc, kc)
        if c2 is None:
            out.append(kir.TmaLoad(dst, tmap, c0, c1, bar, claim, cc, mask=mask))
        else:
            out.append(kir.TmaLoad(dst, tmap, c0, c1, bar, claim, cc, mask=mask, c2=c2))
    return out


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
    E = _env90(prob, True)
    body: List[Any] = []
    _smem_arena(E, body)
    full = kir.Var("lp_full", "unsigned long long*")
    body.append(kir.Decl(full, dims=(S,), prefix="__shared__ __align__(8)", tname="unsigned long long"))
    sA, d = ir_const("sA", E.s0, "unsigned")
    sB, d2 = ir_const("sB", E.s0 + kir.Const(S * 2 * a.stage_elems, "unsigned"), "unsigned")
    full0, d3 = ir_const(
        "full0", kir.Cast("unsigned", kir.Call("__cvta_generic_to_shared", (full,), "unsigned")), "unsigned"
    )
    body += [d, d2, d3]
    E.add(sA=sA, sB=sB, full0=full0)
    _tid_ir(E, body)
    body += raster_ir(E, cfg.bm, cfg.bn, cfg.group_m)
    KT, d = ir_const("KT", (E.K + (cfg.bk - 1)) / cfg.bk)
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
    acc, ad = _acc_ir(cfg)
    body += ad
    tx = 2 * (a.stage_elems + b.stage_elems)

    def issue(kt: kir.Expr, st: kir.Expr) -> List[kir.Stmt]:
        bar, db = ir_const("bar", kir.MbarRef(full0, st), "unsigned")
        return (
            [db, kir.MbarExpectTx(bar, tx)]
            + _tma_loads_ir(E, a, E.tmA, sA, st, kt, bar)
            + _tma_loads_ir(E, b, E.tmB, sB, st, kt, bar)
        )

    kt = ir_var("kt")
    st0, dst0 = ir_const("st", kt)
    body.append(
        kir.If(
            E.tid.eq(0),
            kir.block(
                kir.For(
                    kt,
                    kir.Const(0),
                    kir.Const(S - 1),
                    kir.block(dst0, *issue(kt, st0)),
                    cond=kt.lt(S - 1).and_(kt.lt(KT)),
                )
            ),
        )
    )
    kt0 = ir_var("kt0")
    rs = kir.Var("rs", "int", tuple(range(S)))
    drs = kir.Decl(rs, kt0 % S, const=True)
    kt1, dkt1 = ir_const("kt", kt0 + (S - 1))
    st1 = kir.Var("st", "int", tuple(range(S)))
    dst1 = kir.Decl(st1, kt1 % S, const=True)
    body.append(
        kir.For(
            kt0,
            kir.Const(0),
            KT,
            kir.block(
                drs,
                kir.MbarWait(kir.MbarRef(full0, rs), kir.Cast("unsigned", (kt0 / S) & 1)),
                _wgmma_batch_ir(E, cfg, desc, a, b, rs, E.wg, acc),
                kir.SyncThreads("every warpgroup's batch kt0 - 1 is done: its stage may be refilled"),
                kir.If(E.tid.eq(0), kir.block(dkt1, kir.If(kt1.lt(KT), kir.block(dst1, *issue(kt1, st1))))),
            ),
        )
    )
    body.append(kir.WgmmaWait(0))
    body += _epilogue_ir(E, cfg, prob, cm, acc)
    descr = (
        "",
        f"wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]",
        f"A {prob.a_major}-major, B {prob.b_major}-major (TMA tensor maps);",
        f"{prob.dtype} in, f32 accumulate, {prob.out} out",
        f"block {cfg.bm}x{cfg.bn}x{cfg.bk}, {cfg.warpgroups} consumer warpgroups, {S}-stage TMA pipeline",
        "(64x64 boxes, 128-byte swizzle, one mbarrier per stage), wgmma through descriptors",
    )
    return _kernel90(
        cfg, prob, a, b, desc, name, E, body, descr, (cm["row_fn"], cm["col_fn"]), ("tma", "wgmma"), tma=True
    )


def _mono_tma_protocol(k: kir.Kernel, cfg: Sm90Config, tx: int, log: ProofLog) -> int:
    """The mono TMA kernel's mbarriers, read from the IR: one barrier per stage initialized
    with 1 arrival (thread 0's expect_tx, which announces the stage's bytes), and the wait of
    k-tile ``kt0`` on stage ``kt0 % S`` uses the parity of that barrier's ``kt0 / S``-th
    phase (checked for every k-tile of four passes over the ring)."""
    ops = kir.mbarrier_ops(k)
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
            bar = kir.resolve(s.bar, k)
            kt0 = loops[-1].var
            t = np.arange(4 * cfg.stages)
            par = kir.ev(s.parity, {kt0.name: t})
            stg = kir.ev(kir.resolve(bar.idx, k), {kt0.name: t}) if isinstance(bar, kir.MbarRef) else None
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


def _eval_schedule(
    group_m: int, t: np.ndarray, gm: np.ndarray, gn: np.ndarray
) -> Tuple[np.ndarray, np.ndarray]:
    env: Dict[str, Any] = {"t": t, "grid_m": gm, "grid_n": gn}
    for st in _schedule_ir(group_m)[1]:
        if isinstance(st, kir.Decl) and st.init is not None:
            env[st.var.name] = kir.ev(st.init, env)
        elif isinstance(st, kir.Assign) and isinstance(st.lhs, kir.Var):
            env[st.lhs.name] = kir.ev(st.rhs, env)
        else:  # the scheduler is declarations and assignments of variables only
            raise ProofFailedError(
                f"tile scheduler: cannot evaluate a {type(st).__name__}", condition="scheduler IR"
            )
    return env["tm"], env["tn"]


def cluster_tm_ir(cluster: int, tp: kir.Var, crank: kir.Var) -> kir.Expr:
    """The tile row of CTA ``crank`` of a cluster given the scheduler's row group ``tp``."""
    return cluster * tp + crank


def batched_kernels_available() -> bool:
    """True when the kernel IR has rank-3 TMA loads (``TmaLoad.c2``), which the batched
    kernel reads its operands' batches with."""
    return "c2" in getattr(kir.TmaLoad, "__dataclass_fields__", {})


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
                env[st.var.name] = kir.ev(st.init, env)
            bidx, tb = env["bidx"], env["tb"]
            tp, tn = _eval_schedule(group_m, tb, np.full_like(t, gmp), np.full_like(t, gn))
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
    an = kir.analysis(k)
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
    tp, tn = _eval_schedule(group_m, t, gmp, gn)
    tm = (
        tp
        if cl == 1
        else kir.ev(cluster_tm_ir(cl, kir.Var("tp"), kir.Var("crank")), {"tp": tp, "crank": crank})
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
def _schedule_proofs(group_m: int, cluster: int) -> Tuple[Any, ...]:
    """prove_schedule's records, once per process for each (group_m, cluster): the kernels
    of every operand variant share the scheduler."""
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


def _plan_epilogue(prob: GemmProblem, log: ProofLog) -> Dict[str, Any]:
    """The accumulators of one consumer warpgroup leave through a 64-row x 128-byte buffer,
    one column chunk (128 bytes of C per row) at a time: each thread writes its register
    pairs, then each thread reads four 16-byte row vectors and stores them to C.  The XOR
    swizzle of the buffer is chosen by the bank proofs (both the pair writes and the vector
    reads conflict-free); proven: the write map is a bijection onto the buffer, pairs are
    contiguous and aligned, the read map covers the buffer once with aligned 16-byte
    vectors, and every accumulator (thread, register) reaches exactly its C coordinate."""
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
    chosen = None
    for sw in _epilogue_swizzles(ob):
        buf = composition(sw, Layout((64, rw), (rw, 1)))
        wmap = composition(buf, cmap)
        rmap = composition(sw, Layout(rshape, ((ev, rw), 16 * rw)))
        w = eval_map(wmap).reshape(rc, 128).T  # [thread, register]
        r = eval_map(rmap).reshape(4, 128).T  # [thread, vector]
        wr = np.stack([w[32 * q : 32 * q + 32, 2 * p] * ob for q in range(4) for p in range(rc // 2)])
        rd = np.stack([r[32 * q : 32 * q + 32, v] * ob for q in range(4) for v in range(4)])
        try:
            sub = ProofLog()
            banks.prove_conflict_free(
                wr, 2 * ob, what=f"epilogue {2 * ob}-byte pair writes into the {sw}-swizzled buffer", log=sub
            )
            banks.prove_conflict_free(
                rd, 16, what=f"epilogue 16-byte row reads from the {sw}-swizzled buffer", log=sub
            )
        except (ProofFailedError, banks.BankConflictError):
            continue
        chosen = (sw, wmap, rmap, w, r, sub)
        break
    if chosen is None:
        raise ProofFailedError("no candidate epilogue swizzle is conflict-free", condition="epilogue banks")
    sw, wmap, rmap, w, r, sub = chosen
    log.extend(sub)
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


def _epilogue_ws_ir(
    E: Env, cfg: Sm90Config, prob: GemmProblem, ep: Dict[str, Any], acc: kir.Var, e_off: int
) -> List[kir.Stmt]:
    """Accumulators -> swizzled shared buffer (register pairs) -> 16-byte row vectors -> C,
    one 128-byte column chunk at a time (the maps :func:`_plan_epilogue` proved)."""
    v2t, pack2, _ = STORE2[prob.out]
    ob = OUT_DTYPES[prob.out][1]
    rw, ev, rc = ep["rw"], ep["ev"], ep["rc"]
    fn, lay = ep["fns"], ep["maps"]
    eb = kir.Var("eb", "lp_out_t*")
    arena = addr_of(E.smem) + (E.s0 - E.sbase) + e_off + E.cg * 8192
    region = (arena, 8192)
    q, p, v, i = ir_var("q"), ir_var("p"), ir_var("v"), ir_var("i")
    wclaim = kir.Claim(
        "epilogue buffer write (thread, register pair) of this warpgroup",
        arena + ob * kir.LayoutApp(lay["w"], (E.wt, 2 * p), "epilogue write map"),
        region=region,
        width=2 * ob,
    )
    rclaim = kir.Claim(
        "epilogue buffer 16-byte read (thread, vector) of this warpgroup",
        arena + ob * kir.LayoutApp(lay["r"], (E.wt, v), "epilogue read map"),
        region=region,
        width=16,
    )
    write = kir.Assign(
        kir.Mem(eb + kir.call(fn["w"], t=E.wt, i=2 * p), wclaim, vec=v2t, space="shared"),
        kir.Call(
            pack2, (kir.Index(acc, (rc * q + 2 * p,)), kir.Index(acc, (rc * q + 2 * p + 1,))), "lp_out_t"
        ),
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

    bidx = env_var(E, "bidx")
    # batched: the tile's batch enters C's address as bidx * ldcb (the claim's batch
    # stride is the parameter ldcb; the code's is batch_c_stride's, checked against it)
    boff: kir.Expr = kir.Const(0, "long long")
    cbase: kir.Expr = E.C
    if bidx is not None:
        boff = kir.Cast("long long", bidx) * need_var(E, "ldcb")
        cbase = E.C + kir.Cast("long long", bidx) * batch_c_stride(E)

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
    store = kir.If(
        r.lt(E.M),
        kir.block(
            kir.Decl(pv, cbase + kir.Cast("long long", r) * E.ldc + c),
            kir.If(
                E.c_vec.and_((c + ev).le(E.N)),
                kir.block(vec_store),
                kir.block(
                    kir.Decl(e, kir.Reinterpret("const lp_out_t*", kir.AddrOf(val))),
                    kir.For(
                        i,
                        kir.Const(0),
                        kir.Const(ev),
                        kir.block(kir.If((c + i).lt(E.N), kir.block(one))),
                        unroll=True,
                    ),
                ),
            ),
        ),
    )
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
                kir.For(v, kir.Const(0), kir.Const(4), kir.block(dr, dc, dval, store), unroll=True),
                kir.NamedBarrier(1 + E.cg, 128),
            ),
            unroll=True,
        ),
    ]


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
    S = cfg.stages
    CW = cfg.warpgroups
    CL = cfg.cluster
    regs = 232 if CW == 2 else 240
    E = _env90(prob, True)
    if prob.batch:  # the batch count and C's batch stride (elements) follow c_vec
        E.add(batch=ir_var("batch"), ldcb=ir_var("ldcb", "long long"))
    body: List[Any] = []
    _smem_arena(E, body, split=True)
    full = kir.Var("lp_full", "unsigned long long*")
    empty = kir.Var("lp_empty", "unsigned long long*")
    for bv in (full, empty):
        body.append(kir.Decl(bv, dims=(S,), prefix="__shared__ __align__(8)", tname="unsigned long long"))
    sA, d1 = ir_const("sA", E.s0, "unsigned")
    sB, d2 = ir_const("sB", E.s0 + kir.Const(S * 2 * a.stage_elems, "unsigned"), "unsigned")
    e_off = S * 2 * (a.stage_elems + b.stage_elems)
    sE, d3 = ir_const("sE", sB + kir.Const(S * 2 * b.stage_elems, "unsigned"), "unsigned")

    def cvta(x: kir.Var) -> kir.Expr:
        return kir.Cast("unsigned", kir.Call("__cvta_generic_to_shared", (x,), "unsigned"))

    full0, d4 = ir_const("full0", cvta(full), "unsigned")
    empty0, d5 = ir_const("empty0", cvta(empty), "unsigned")
    body += [d1, d2, d3, d4, d5]
    E.add(sA=sA, sB=sB, sE=sE, full0=full0, empty0=empty0)
    _tid_ir(E, body)
    rank = kir.Var("rank", "unsigned")
    if CL > 1:
        crank, dcr = ir_const("crank", kir.Cast("int", rank))
        body += [kir.ClusterRank(rank), dcr]
    grid_m, dg1 = ir_const("grid_m", (E.M + (cfg.bm - 1)) / cfg.bm)
    grid_n, dg2 = ir_const("grid_n", (E.N + (cfg.bn - 1)) / cfg.bn)
    body += [dg1, dg2]
    t0: kir.Expr
    tstep: kir.Expr
    per: kir.Expr
    if CL == 1:
        per = grid_m * grid_n
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
    KT, dkt = ir_const("KT", (E.K + (cfg.bk - 1)) / cfg.bk)
    body.append(dkt)
    s = ir_var("s")
    body.append(
        kir.If(
            E.tid.eq(0),
            kir.block(
                kir.For(
                    s,
                    kir.Const(0),
                    kir.Const(S),
                    kir.block(
                        kir.MbarInit(kir.MbarRef(full0, s), 1),
                        kir.MbarInit(kir.MbarRef(empty0, s), 4 * CW * CL),
                    ),
                ),
                kir.Fence("mbarrier_init"),
                kir.Fence("proxy_async"),
            ),
        )
    )
    body.append(
        kir.SyncThreads()
        if CL == 1
        else kir.ClusterSync("every CTA's barriers are initialized before any use")
    )

    def tile_lines(t0_: kir.Var) -> Tuple[List[kir.Stmt], kir.Var, kir.Var]:
        tm, tn = kir.Var("tm"), kir.Var("tn")
        pre: List[kir.Stmt] = []
        t: kir.Var = t0_
        E.add(bidx=None)
        if tpb is not None:
            (bidx, t), pre = batch_split_ir(t0_, tpb)
            E.add(bidx=bidx)
        if CL == 1:
            out = pre + [
                kir.Decl(tm),
                kir.Decl(tn),
                kir.Eval(kir.Call("lp_tile", (t, grid_m, grid_n, tm, tn), "void")),
            ]
            tmv = tm
        else:
            tp = kir.Var("tp")
            tmv, dtm = ir_const(
                "tm", cluster_tm_ir(CL, tp, crank), comment="may pass grid_m: zero-filled, not stored"
            )
            out = pre + [
                kir.Decl(tp),
                kir.Decl(tn),
                kir.Eval(kir.Call("lp_tile", (t, grid_mp, grid_n, tp, tn), "void")),
                dtm,
            ]
        m0, dm = ir_const("m0", tmv * cfg.bm)
        n0, dn = ir_const("n0", tn * cfg.bn)
        return out + [dm, dn], m0, n0

    # -- the producer
    st, ph = ir_var("st", values=tuple(range(S))), kir.Var("ph", "unsigned", values=(0, 1))
    t = ir_var("t")
    tl, m0, n0 = tile_lines(t)
    E.add(m0=m0, n0=n0)
    kt = ir_var("kt")
    bar, dbar = ir_const("bar", kir.MbarRef(full0, st), "unsigned")
    ca = need_var(E, "bidx") if "a" in prob.batch else None
    cb = need_var(E, "bidx") if "b" in prob.batch else None
    loads = _tma_loads_ir(E, a, E.tmA, sA, st, kt, bar, c2=ca)
    if CL == 1:
        loads += _tma_loads_ir(E, b, E.tmB, sB, st, kt, bar, c2=cb)
    else:
        for r, bx in _cluster_boxes(b, CL).items():
            loads.append(
                kir.If(
                    rank.eq(kir.Const(r, "unsigned")),
                    kir.block(
                        _tma_loads_ir(E, b, E.tmB, sB, st, kt, bar, boxes=bx, mask=(1 << CL) - 1, c2=cb)
                    ),
                    comment=f"B boxes {bx}, multicast to the cluster",
                )
            )
    producer = kir.block(
        kir.Comment(f"producer: one thread keeps up to {S} stages in flight"),
        kir.SetMaxNReg(False, 40),
        kir.If(
            E.wt.eq(0),
            kir.block(
                kir.Decl(st, kir.Const(0)),
                kir.Decl(ph, kir.Const(0, "unsigned")),
                kir.For(
                    t,
                    t0,
                    tiles,
                    kir.block(
                        tl,
                        kir.For(
                            kt,
                            kir.Const(0),
                            KT,
                            kir.block(
                                kir.MbarWait(
                                    kir.MbarRef(empty0, st),
                                    ph ^ kir.Const(1, "unsigned"),
                                    "the consumers released stage st",
                                ),
                                dbar,
                                kir.MbarExpectTx(bar, tx),
                                loads,
                                kir.RingAdvance(st, S, ph),
                            ),
                        ),
                    ),
                    step=tstep,
                    cond=t.lt(tiles),
                ),
            ),
        ),
    )
    # -- the consumers
    cst, cph = ir_var("st", values=tuple(range(S))), kir.Var("ph", "unsigned", values=(0, 1))
    ct = ir_var("t")
    ctl, cm0, cn0 = tile_lines(ct)
    cg, dcg = ir_const("cg", E.wg - 1)
    lane0, dl0 = ir_const("lane0", (E.tid & 31).eq(0), "bool")
    E.add(cg=cg, m0=cm0, n0=cn0)
    acc, ad = _acc_ir(cfg)
    prev = ir_var("prev", values=tuple(range(-1, S)))
    ckt = ir_var("kt")

    def release() -> kir.Stmt:
        ops = [kir.MbarArrive(kir.MbarRef(empty0, prev))]
        if CL > 1:
            ops.append(kir.MbarArrive(kir.MbarRef(empty0, prev), rank ^ kir.Const(1, "unsigned")))
        return kir.If(
            prev.ge(0).and_(lane0),
            kir.block(*ops),
            comment="this CTA's barrier, then the peer's" if CL > 1 else "",
        )

    consumer = kir.block(
        kir.Comment("consumers: wgmma on this warpgroup's 64-row slice, one batch in flight"),
        kir.SetMaxNReg(True, regs),
        dcg,
        dl0,
        kir.Decl(cst, kir.Const(0)),
        kir.Decl(cph, kir.Const(0, "unsigned")),
        kir.For(
            ct,
            t0,
            tiles,
            kir.block(
                ctl,
                ad,
                kir.Decl(prev, kir.Const(-1)),
                kir.For(
                    ckt,
                    kir.Const(0),
                    KT,
                    kir.block(
                        kir.MbarWait(kir.MbarRef(full0, cst), cph, "stage st's bytes have landed"),
                        _wgmma_batch_ir(E, cfg, desc, a, b, cst, cg, acc),
                        kir.Comment("the previous batch is complete: its stage goes back to the producer(s)"),
                        release(),
                        kir.Assign(prev, cst),
                        kir.RingAdvance(cst, S, cph),
                    ),
                ),
                kir.WgmmaWait(0),
                release(),
                _epilogue_ws_ir(E, cfg, prob, ep, acc, e_off),
            ),
            step=tstep,
            cond=ct.lt(tiles),
        ),
    )
    body.append(kir.If(E.wg.eq(0), producer, consumer))
    if CL > 1:
        body.append(kir.ClusterSync("no CTA leaves while a peer may still arrive on its barriers"))
    descr = (
        "",
        f"wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]",
        f"A {prob.a_major}-major, B {prob.b_major}-major (TMA tensor maps);",
        f"{prob.dtype} in, f32 accumulate, {prob.out} out",
        f"persistent, warp-specialized: 1 producer warpgroup (TMA, 40 registers) + {CW} consumer",
        f"warpgroup(s) (wgmma, {regs} registers); block {cfg.bm}x{cfg.bn}x{cfg.bk}, {S}-stage",
        "full/empty mbarrier pipeline, epilogue through a swizzled shared-memory buffer",
        f"{CL}-CTA clusters: the B tile is multicast, each CTA loading half of it"
        if CL > 1
        else "no cluster",
    )
    helpers = ("tma",) + (("cluster",) if CL > 1 else ()) + ("named_sync", "wgmma")
    return _kernel90(
        cfg,
        prob,
        a,
        b,
        desc,
        name,
        E,
        body,
        descr,
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
    names = {"full0": "full", "empty0": "empty"}
    inits: Dict[str, List[int]] = {"full": [], "empty": []}
    waits: Dict[str, List[int]] = {"full": [], "empty": []}
    local: List[Any] = []
    remote: List[Any] = []
    txs: List[int] = []
    n = 0

    def ring(bar: kir.Expr) -> Tuple[str, kir.Expr]:
        r = kir.resolve(bar, k)
        if not isinstance(r, kir.MbarRef) or r.base.name not in names:
            raise ProofFailedError(
                "an mbarrier operation on an unknown barrier",
                condition="protocol of the IR",
                witness=kir.emit_expr_safe(bar),
            )
        return names[r.base.name], r.idx

    def parity(e: kir.Expr, ph: kir.Var) -> int:
        if e is ph:
            return 0
        if isinstance(e, kir.Bin) and e.op == "^" and e.a is ph and isinstance(e.b, kir.Const):
            return int(e.b.value) & 1
        raise ProofFailedError(
            f"wait parity {kir.emit_expr_safe(e)} is not the ring phase (^ k)",
            condition="wait parity",
            witness=kir.emit_expr_safe(e),
        )

    rings = {id(n.stage): n for n in kir.walk(k.body) if isinstance(n, kir.RingAdvance)}
    waited_in: List[Tuple[str, Any]] = []
    for s, guards, loops in kir.mbarrier_ops(k):
        n += 1
        if isinstance(s, kir.MbarInit):
            name, idx = ring(s.bar)
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
            inits[name].append(s.count)
        elif isinstance(s, kir.MbarWait):
            name, idx = ring(s.bar)
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
            waits[name].append(parity(s.parity, rg.phase))
            waited_in.append((name, loops[-1]))
        elif isinstance(s, kir.MbarExpectTx):
            name, _ = ring(s.bar)
            if name != "full":
                raise ProofFailedError(
                    "expect_tx on an empty barrier", condition="protocol of the IR", witness=name
                )
            txs.append(s.nbytes)
        elif isinstance(s, kir.MbarArrive):
            name, idx = ring(s.bar)
            if name != "empty" or not isinstance(idx, kir.Var) or idx.name != "prev":
                raise ProofFailedError(
                    "a consumer arrive is not a release of the previous stage",
                    condition="protocol of the IR",
                    witness=name,
                )
            (remote if s.cta is not None else local).append((s, guards, loops))
    for name in ("full", "empty"):
        if len(inits[name]) != 1 or len(waits[name]) != 1:
            raise ProofFailedError(
                f"expected one init and one wait of the {name} barriers, found "
                f"{len(inits[name])} and {len(waits[name])}",
                condition="protocol of the IR",
                witness=name,
            )
    if txs != [tx]:
        raise ProofFailedError(
            f"the producer announces {txs} bytes per stage, {tx} land",
            condition="transaction bytes",
            witness=tuple(txs),
        )
    # release sites: one in the k-loop (after the batch's wait_group 1), one after it
    consumer_loop = [lp for nm, lp in waited_in if nm == "full"][0]

    def sites(lst: List[Any]) -> Tuple[int, int]:
        inside = sum(1 for _s, _g, lp in lst if lp and lp[-1] is consumer_loop)
        after = sum(
            1
            for _s, _g, lp in lst
            if lp and lp[-1] is not consumer_loop and any(x is consumer_loop for x in kir.walk(lp[-1].body))
        )
        return inside, after

    li, la = sites(local)
    ri, ra = sites(remote)
    if (li, la) != (1, 1) or len(local) != 2 or (ri, ra) not in ((0, 0), (1, 1)) or len(remote) not in (0, 2):
        raise ProofFailedError(
            f"release sites: {li} local in the k-loop, {la} after it, "
            f"{len(remote)} remote (expected 1, 1 and 0 or 2)",
            condition="release sites",
            witness=(li, la, len(remote)),
        )
    remote_release = len(remote) == 2
    # arrivals per phase: threads whose (thread-only) guards hold, per CTA
    made = None
    tid = next(
        x for x in kir.walk(k.body) if isinstance(x, kir.Var) and x.builtin and x.name == "threadIdx.x"
    )
    for _s, guards, _lp in local:
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
    f_init, e_init = inits["full"][0], inits["empty"][0]
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
    proto = {
        "producer_parity": waits["empty"][0],
        "consumer_parity": waits["full"][0],
        "remote_release": remote_release,
    }
    log.add(
        "equal",
        f"protocol read from the IR: producer waits empty with parity ph ^ "
        f"{proto['producer_parity']}, consumers wait full with ph ^ "
        f"{proto['consumer_parity']} (stage and phase of ring counters advanced "
        f"once per k-tile); full expects 1 arrival (+ {tx} TMA bytes), empty "
        f"expects {e_init} = the threads passing the release guards x "
        f"{cfg.cluster if remote_release else 1} CTA(s) releasing into it; "
        f"releases after each batch and at the tile end",
        "exhaustive",
        n,
    )
    return proto, n


def _threads_passing(k: kir.Kernel, guards: Any, tid: kir.Var) -> int:
    """How many threads of the CTA pass the thread-only conjuncts of ``guards``."""
    t = np.arange(k.threads)
    ok = np.ones(k.threads, dtype=bool)
    an = kir.analysis(k)
    for g, sense in guards:
        parts = _conjuncts(g, an) if sense else [g]
        for p in parts:
            fv = kir.free_vars(p, an)
            if fv and all(v is tid for v in fv):
                val = (
                    kir.eval_expr(
                        p,
                        kir.Ctx(
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


def _conjuncts(g: kir.Expr, an: kir.Analysis) -> List[kir.Expr]:
    if isinstance(g, kir.Bin) and g.op == "&&":
        return _conjuncts(g.a, an) + _conjuncts(g.b, an)
    return [g]


_MEMO: Dict[Tuple[Sm90Config, GemmProblem], GemmKernel] = {}


def generate_sm90(
    config: Optional[Sm90Config] = None, problem: Optional[GemmProblem] = None, *, memo: bool = True
) -> GemmKernel:
    """Build, prove and emit the wgmma kernel (any operand major-ness); the default config
    is :data:`HOPPER_DEFAULT` (the warp-specialized persistent kernel)."""
    cfg = (config or HOPPER_DEFAULT).validate()
    prob = (problem or GemmProblem("k", "k")).validate()
    if memo and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    if prob.batch and cfg.schedule != "ws":
        raise GemmConfigError(
            f"generate_sm90: a batched problem (batch={prob.batch!r}) runs on the warp-specialized "
            "TMA kernel (schedule='ws')"
        )
    log = ProofLog()
    threads = cfg.threads
    a = OperandPlan("a", cfg.bm, cfg.bk, cfg.stages, prob.a_major == "k", threads, cfg.warpgroups, 64)
    b = OperandPlan("b", cfg.bn, cfg.bk, cfg.stages, prob.b_major == "k", threads, 1, cfg.bn)
    smems = {}
    for p in (a, b):
        if cfg.loader == "tma":
            lay = tma_stage_layout(p.x_extent, p.kmajor)
            smems[p.name] = gmma.GmmaSmemLayout(lay, "K" if p.kmajor else "MN", "SW128")
            bs, bd = top_modes(lay.layout_b)
            stack = Layout((bs[0], bs[1], p.stages), (bd[0], bd[1], p.stage_elems))
            total = p.stages * p.stage_elems
            lower.prove_bijective(
                composition(SW128, stack),
                total,
                what=f"{p.name.upper()} smem stages onto [0,{total})",
                log=log,
            )
            _prove_tma(p, lay, log)
            p.maps["tma"] = lay
            continue
        if p.stage_elems % (8 * threads):
            raise GemmConfigError(
                f"Sm90Config: the {p.name.upper()} tile is not a whole number of 16-byte chunks per thread"
            )
        smem = gmma.tile_to_shape(gmma.smem_atom("K" if p.kmajor else "MN", "SW128"), (p.x_extent, p.bk))
        smems[p.name] = smem
        sl = smem.layout
        if not isinstance(sl, ComposedLayout) or sl.swizzle != SW128 or sl.offset != 0:
            raise ProofFailedError(f"{sl} is not {SW128} o 0 o B", condition="SW128 atom", witness=str(sl))
        ls, ld = top_modes(sl.layout_b)
        p.tile_layout = Layout((ls[0], ls[1], p.stages), (ld[0], ld[1], p.stage_elems))
        p.swizzle = SW128
        plan_copy(p, log)
        cp = eval_map(buffer_map(p, p.copy_tv(), with_stage=False)) * 2
        banks.prove_conflict_free(
            warp_rows(cp, threads),
            16,
            what=f"{p.name.upper()} cp.async 16B writes into the {smem.major}-major SW128 stage",
            log=log,
        )
    desc = {
        "a": _plan_descriptors(a, smems["a"], 64, cfg.warpgroups, log),
        "b": _plan_descriptors(b, smems["b"], cfg.bn, 1, log),
    }
    cm = _c_map(cfg)
    # the atom (verified against the PTX fragment encoding of layoutproof.gpu.isa.gmma) is the
    # (thread, register) part of the C map; the warpgroup mode is covered by the bijection
    atom = gmma.sm90_atom(cfg.bn, prob.dtype, "SS")
    log.extend(gmma.verify_gmma_atom(atom))
    prove_c_atom_part(cm, atom, (64, cfg.bn), cfg.bm, log)
    lower.prove_bijective(
        cm, cfg.bm * cfg.bn, what=f"C (thread, register, warpgroup) -> {cfg.bm}x{cfg.bn} tile", log=log
    )
    cargs = ("t", "i", "g")
    rows = lower.lower(composition(Layout((cfg.bm, cfg.bn), (1, 0)), cm), cargs, name="lp_c_row", log=log)
    cols = lower.lower(composition(Layout((cfg.bm, cfg.bn), (0, 1)), cm), cargs, name="lp_c_col", log=log)
    h = hashlib.sha256(f"{GENERATOR_VERSION}{cfg}{prob}".encode()).hexdigest()[:10]
    name = f"lp_gemm_sm90_{prob.key()}_{h}"
    title = f"proven before emission ({cfg.key()}, {prob.key()})"
    if cfg.schedule == "ws":
        log.extend(ProofLog(list(_schedule_proofs(cfg.group_m, cfg.cluster))))
        if prob.batch:
            prove_batch_schedule(cfg.group_m, log, cluster=cfg.cluster)
        ep = _plan_epilogue(prob, log)
        tx = (
            _prove_cluster_tx(a, b, cfg.cluster, log)
            if cfg.cluster > 1
            else 2 * (a.stage_elems + b.stage_elems)
        )
        # the protocol is read from the IR's barrier nodes and model-checked, the epilogue's
        # order checked, before the IR's accesses are proven and the source printed
        ir = _source_ws_ir(cfg, prob, a, b, ep, desc, tx, name)
        check_batch_coordinates(ir, prob, log)

        def protocol(k: kir.Kernel) -> int:
            proto, n = protocol_ir(k, cfg, tx, log)
            epilogue_order(k, log)
            prove_pipeline(cfg.stages, cfg.warpgroups, log, ctas=cfg.cluster, **proto)
            return n

        src = finish(ir, log, title, protocol)
    else:
        cmaps = {
            "row": rows.layout,
            "col": cols.layout,
            "row_fn": kir.from_lowered(rows),
            "col_fn": kir.from_lowered(cols),
        }
        if cfg.loader == "tma":
            ir = _source_tma_ir(cfg, prob, a, b, cmaps, desc, name)
            tx = 2 * (a.stage_elems + b.stage_elems)
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
