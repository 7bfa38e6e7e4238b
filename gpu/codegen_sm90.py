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
major-ness (:func:`layoutproof.gpu.sm90.smem_atom` tiled to the stage): K-major for
row-major A / column-major B, MN-major (read with wgmma's transpose flag) for column-major
A / row-major B -- no operand is copied.  What is proven before the source is emitted:

* the stage buffers (the atoms tiled, ``stages`` deep) are bijections, every cp.async
  destination lies inside them, 16-byte aligned, every cp.async write phase is free of
  bank conflicts, and each copy map covers its tile once; every emitted index expression
  equals its layout;
* the descriptors: for every element (row, k) a warpgroup's wgmma reads in every k16 step,
  the address the hardware forms from the descriptor
  (:func:`layoutproof.gpu.sm90.prove_descriptor`: start, leading and stride byte offsets,
  the 128-byte swizzle) is the element's address in the buffer layout, and the emitted
  start offsets ``base + wg * step + ks * step`` are those descriptors' start addresses;
* the accumulator map (thread, register) -> (m, n) of the warpgroup atoms covers the C
  tile exactly once and its lowered row/column expressions equal it;
* for ``ws``: the TMA boxes write exactly the stage layout; the scheduler is a bijection
  onto the tile grid (:func:`prove_schedule`); the epilogue's swizzle is conflict-free and
  its data flow puts every accumulator at its C coordinate (:func:`_plan_epilogue`); the
  mbarrier protocol, read off the emitted text (:func:`protocol_of`), is model-checked over
  every interleaving (:mod:`layoutproof.gpu.pipeline`); in a cluster, the multicast boxes
  partition B and each CTA's transaction count is the bytes that land in it.

>>> k = generate_sm90(Sm90Config(bn=128, stages=4))
>>> k.threads, k.smem_bytes, "wgmma.mma_async" in k.source
(256, 132096, True)
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

from layoutproof import Layout, Swizzle, composition

from . import banks, lower
from .codegen import (
    _STORE2,
    CP_ASYNC_HELPERS,
    GemmKernel,
    OperandPlan,
    _buffer_map,
    _cfun,
    _cp_setup_code,
    _eval_map,
    _load_tile_code,
    _warp_rows,
    pair_store_code,
    plan_copy,
    prove_c_atom_part,
    raster_code,
)
from .config import DTYPES, OUT_DTYPES, SMEM_LIMIT, GemmConfig, GemmProblem
from .errors import GemmConfigError, ProofFailedError
from .pipeline import prove_pipeline
from .proofrec import ProofLog

__all__ = ["Sm90Config", "HOPPER_DEFAULT", "generate_sm90"]

GENERATOR_VERSION = "sm90-2"
SW128 = Swizzle(3, 3, 3)   # on 2-byte elements: 16-byte chunk index ^= row % 8 in 128-byte rows


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
            raise GemmConfigError(f"Sm90Config: the TMA loader moves 64-row boxes: bn={self.bn} "
                                  f"must be a multiple of 64")
        if self.loader not in ("cp.async", "tma"):
            raise GemmConfigError(f"Sm90Config: loader={self.loader!r} must be 'cp.async' or 'tma'")
        if self.schedule not in ("mono", "ws"):
            raise GemmConfigError(f"Sm90Config: schedule={self.schedule!r} must be 'mono' or 'ws'")
        if self.schedule == "ws" and self.loader != "tma":
            raise GemmConfigError("Sm90Config: the warp-specialized schedule ('ws') is fed by "
                                  "the TMA producer: it needs loader='tma'")
        if self.cluster not in (1, 2):
            raise GemmConfigError(f"Sm90Config: cluster={self.cluster} must be 1 or 2")
        if self.cluster == 2 and (self.schedule != "ws" or (self.bn // 64) % 2):
            raise GemmConfigError("Sm90Config: a 2-CTA cluster multicasts half of the B tile's "
                                  "64-row boxes from each CTA: it needs schedule='ws' and bn "
                                  f"a multiple of 128 (bn={self.bn})")
        if self.schedule == "ws" and self.bm > 128:
            raise GemmConfigError(f"Sm90Config: schedule='ws' runs one producer and at most two "
                                  f"consumer warpgroups (register budget): bm={self.bm} > 128")
        if self.bk != 64:
            raise GemmConfigError("Sm90Config: bk must be 64 (one 128-byte swizzled row)")
        if not 3 <= self.stages <= 8:
            raise GemmConfigError(f"Sm90Config: stages={self.stages} must be in [3, 8]")
        if self.smem_bytes > SMEM_LIMIT:
            raise GemmConfigError(f"Sm90Config: {self.smem_bytes} bytes of shared memory exceed "
                                  f"{SMEM_LIMIT}")
        if self.bn // 2 + 40 > 255:
            raise GemmConfigError("Sm90Config: too many accumulators")
        return self


HOPPER_DEFAULT = Sm90Config(loader="tma", schedule="ws")
"""The kernel ``gemm`` runs on sm_90 (where cuda-python can encode tensor maps) and
``generate_sm90()`` emits: 128x256x64 tiles, 4 stages, a TMA producer warpgroup and two
consumer warpgroups, persistent."""


# ============================================================================ descriptors
def _plan_descriptors(p: OperandPlan, smem: Any, rows: int, slices: int,
                      log: ProofLog) -> Tuple[int, int, int]:
    """The descriptors of operand ``p``: one ``rows``-row slice per warpgroup (A) or the
    whole tile (B), one per k16 step.  Returns (constant fields, slice step, k16 step) in
    bytes, after proving that every descriptor ``fields | (start >> 4)`` with start =
    slice * slice_step + ks * k_step reads exactly its elements of the layout."""
    from . import sm90

    P = p.name.upper()
    fields, starts = None, {}
    for sl in range(slices):
        for ks in range(p.bk // 16):
            d = sm90.make_descriptor(smem, 0, mn_offset=sl * rows, k_offset=16 * ks)
            if fields is None:        # the template: slice 0, k step 0 (a field another
                fields = d & ~0x3FFF  # slice does not reach may differ; the proof decides)
            starts[(sl, ks)] = (d & 0x3FFF) << 4
            # the descriptor the kernel forms: the template with this start address
            emitted = fields | (d & 0x3FFF)
            log.extend(sm90.prove_descriptor(smem, emitted, base_addr=0, mn_offset=sl * rows,
                                             k_offset=16 * ks, mn_extent=rows, k_extent=16))
    s_step = starts.get((1, 0), 0) - starts[(0, 0)] if slices > 1 else 0
    k_step = starts.get((0, 1), 0) - starts[(0, 0)]
    for (sl, ks), st in starts.items():
        if st != starts[(0, 0)] + sl * s_step + ks * k_step:
            raise ProofFailedError(f"{P} descriptor start of slice {sl}, k step {ks} is not "
                                   f"affine", condition="affine descriptor starts",
                                   witness=(sl, ks))
    log.add("equal", f"{P} descriptor start = base + slice * {s_step} + ks * {k_step} bytes for "
                     f"all {slices} slice(s) x {p.bk // 16} k16 steps (fields {fields:#x})",
            "exhaustive", len(starts))
    return int(fields), s_step, k_step


# ============================================================================ TMA
TMA_BOX = 64          # a box is 64 x 64 elements: 64 along the contiguous dimension = 128 B


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
    if kmajor:            # inner = k, outer = x % 64, box = x // 64
        lin = (x // 64) * 8192 + (x % 64) * 128 + 2 * k
    else:                 # inner = x % 64, outer = k, box = x // 64
        lin = (x // 64) * 8192 + k * 128 + 2 * (x % 64)
    return lin ^ (((lin >> 7) & 7) << 4)


def _prove_tma(p: OperandPlan, layout: Any, log: ProofLog) -> None:
    P = p.name.upper()
    want = _eval_map(layout).reshape(p.bk, p.x_extent).T * 2
    got = tma_box_addresses(p.x_extent, p.kmajor)
    bad = np.argwhere(got != want)
    if bad.size:
        x, k = (int(v) for v in bad[0])
        raise ProofFailedError(f"{P}: the TMA box puts element (x {x}, k {k}) at byte "
                               f"{int(got[x, k])}, the stage layout {layout} at {int(want[x, k])}",
                               condition="TMA boxes write the stage layout", witness=(x, k))
    if np.unique(got).size != got.size or got.min() != 0 or got.max() != 2 * got.size - 2:
        raise ProofFailedError(f"{P}: the TMA boxes do not fill the stage exactly once",
                               condition="TMA boxes tile the stage")
    log.add("equal", f"{P}: {p.x_extent // 64} TMA boxes of 64x64 (128B swizzle, "
                     f"{'k' if p.kmajor else 'x'} innermost) write exactly the stage layout "
                     f"{layout}, each element once", "exhaustive", int(got.size))


# ============================================================================ C map
def _c_map(cfg: Sm90Config) -> Layout:
    """(thread in warpgroup, register, warpgroup) -> C tile index m + BM*n for
    wgmma m64nNk16 f32 accumulators: warp w = t//32 owns rows 16w..16w+15; lane l, register
    i: row 16w + l//4 + 8*((i//2)%2), column 8*(i//4) + 2*(l%4) + i%2."""
    BM = cfg.bm
    return Layout((((4, 8, 4)), (2, 2, cfg.bn // 8), cfg.warpgroups),
                  (((2 * BM, 1, 16)), (BM, 8, 8 * BM), 64))


# ============================================================================ source
def _wgmma_fn(n: int, dtype: str, tnsp_a: int = 0, tnsp_b: int = 0) -> str:
    regs = n // 2
    ptx = f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dtype}.{dtype}"
    dlist = ", ".join(f"%{i}" for i in range(regs))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return f"""__device__ __forceinline__ void lp_wgmma(float* d, unsigned long long da,
                                         unsigned long long db) {{
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"
               "{ptx} {{{dlist}}}, %{regs}, %{regs + 1}, p, 1, 1, {tnsp_a}, {tnsp_b};\\n}}\\n"
               : {outs}
               : "l"(da), "l"(db), "r"(1));
}}
"""


def _mma_helpers(cfg: Sm90Config, prob: GemmProblem, a: OperandPlan, b: OperandPlan,
                 desc: Dict[str, Tuple[int, int, int]]) -> str:
    """The descriptor builders (proven constant fields) and the wgmma wrapper."""
    return f"""// descriptors: start address >> 4 | the proven constant fields (LBO, SBO, 128B swizzle)
__device__ __forceinline__ unsigned long long lp_desc_a(unsigned saddr) {{
  return (unsigned long long)((saddr & 0x3FFFFu) >> 4) | {desc['a'][0]:#x}ull;
}}
__device__ __forceinline__ unsigned long long lp_desc_b(unsigned saddr) {{
  return (unsigned long long)((saddr & 0x3FFFFu) >> 4) | {desc['b'][0]:#x}ull;
}}
{_wgmma_fn(cfg.bn, prob.dtype, 0 if a.kmajor else 1, 0 if b.kmajor else 1)}"""


def _epilogue(cfg: Sm90Config, prob: GemmProblem, cmaps: Dict[str, Any]) -> str:
    """Accumulators -> C through the proven (thread, register, warpgroup) maps."""
    return f"""  // epilogue: (thread, register, warpgroup) -> C coordinate, proven maps
#pragma unroll
  for (int j = 0; j < {cfg.bn // 8}; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {{
      const int r = m0 + {cmaps['row'].name}(wt, 4 * j + 2 * h, wg);
      const int c = n0 + {cmaps['col'].name}(wt, 4 * j + 2 * h, wg);
{pair_store_code(prob.out, "acc[4 * j + 2 * h]", "acc[4 * j + 2 * h + 1]", 6)}
    }}
}}"""


def _wgmma_batch(cfg: Sm90Config, desc: Dict[str, Tuple[int, int, int]], a: OperandPlan,
                 b: OperandPlan, stage: str, slice_: str, indent: int) -> str:
    """One k-tile's wgmma batch on stage ``stage`` for warpgroup slice ``slice_``: the
    proven descriptor starts, ``bk / 16`` wgmmas, commit, and a wait that leaves this batch
    in flight (the previous one is complete after it)."""
    sp = " " * indent
    lines = [f"const unsigned a_base = sA + {stage} * {2 * a.stage_elems}u + {slice_} * "
             f"{desc['a'][1]}u;",
             f"const unsigned b_base = sB + {stage} * {2 * b.stage_elems}u;",
             'asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");',
             "#pragma unroll",
             f"for (int ks = 0; ks < {cfg.bk // 16}; ++ks)",
             f"  lp_wgmma(acc, lp_desc_a(a_base + {desc['a'][2]}u * ks),",
             f"           lp_desc_b(b_base + {desc['b'][2]}u * ks));",
             'asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");',
             'asm volatile("wgmma.wait_group.sync.aligned 1;\\n" ::: "memory");']
    return "\n".join(ln if ln.startswith("#") else sp + ln for ln in lines)


def _source(cfg: Sm90Config, prob: GemmProblem, a: OperandPlan, b: OperandPlan,
            cmaps: Dict[str, Any], desc: Dict[str, Tuple[int, int, int]], log: ProofLog,
            name: str) -> str:
    tin = DTYPES[prob.dtype][0]
    tout = OUT_DTYPES[prob.out][0]
    S = cfg.stages
    R = cfg.bn // 2
    funcs = "".join(_cfun(low) for low in (
        a.lowered["cp_smem"], a.lowered["cp_x"], a.lowered["cp_k"],
        b.lowered["cp_smem"], b.lowered["cp_x"], b.lowered["cp_k"], cmaps["row"], cmaps["col"]))
    funcs += _cfun(a.lowered["cp_gmem"], ret="long long")
    funcs += _cfun(b.lowered["cp_gmem"], ret="long long")
    header = log.header(f"proven before emission ({cfg.key()}, {prob.key()})")
    a_stage_b = 2 * a.stage_elems
    return f"""{header}//
// wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]
// A {prob.a_major}-major (lda), B {prob.b_major}-major (ldb); {prob.dtype} in, f32 accumulate, {prob.out} out
// block {cfg.bm}x{cfg.bn}x{cfg.bk}, {cfg.warpgroups} consumer warpgroups, {S}-stage cp.async pipeline,
// operands in CuTe's 128-byte-swizzled GMMA layouts, read by wgmma through descriptors
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef {tin} lp_in_t;
typedef {tout} lp_out_t;

{funcs}
{CP_ASYNC_HELPERS}{_mma_helpers(cfg, prob, a, b, desc)}
extern "C" __global__ void __launch_bounds__({cfg.threads}, 1)
{name}(const lp_in_t* __restrict__ A, const lp_in_t* __restrict__ B, lp_out_t* __restrict__ C,
       int M, int N, int K, long long lda, long long ldb, long long ldc, int c_vec) {{
  extern __shared__ __align__(1024) unsigned char lp_smem[];
  const unsigned s0 = ((unsigned)__cvta_generic_to_shared(lp_smem) + 1023u) & ~1023u;
  const unsigned sA = s0;
  const unsigned sB = s0 + {S * a_stage_b}u;
  const int tid = threadIdx.x, wg = tid >> 7, wt = tid & 127;

{raster_code(cfg.bm, cfg.bn, cfg.group_m)}
{_cp_setup_code(a)}
{_cp_setup_code(b)}

  const int KT = (K + {cfg.bk - 1}) / {cfg.bk};
  float acc[{R}];
#pragma unroll
  for (int i = 0; i < {R}; ++i) acc[i] = 0.f;

#pragma unroll
  for (int st = 0; st < {S - 2}; ++st) {{
    if (st < KT) {{
      const int kt = st;
      {_load_tile_code(a, b)}
    }}
    lp_cp_commit();
  }}
  for (int kt0 = 0; kt0 < KT; ++kt0) {{
    lp_cp_wait<{S - 3}>();
    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
    __syncthreads();
    {{
      const int kt = kt0 + {S - 2};
      const int st = kt % {S};
      if (kt < KT) {_load_tile_code(a, b)}
      lp_cp_commit();
    }}
    const int rs = kt0 % {S};
{_wgmma_batch(cfg, desc, a, b, "rs", "wg", 4)}
  }}
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
  lp_cp_wait<0>();

{_epilogue(cfg, prob, cmaps)}
"""


def _tma_loads(p: OperandPlan, tm: str, base: str, indent: int) -> str:
    """The TMA box loads of tile ``kt`` of operand ``p`` into stage ``st`` on barrier ``bar``
    (the boxes :func:`_prove_tma` proved to write exactly the stage layout)."""
    o0 = "m0" if p.name == "a" else "n0"
    lines = []
    for j in range(p.x_extent // TMA_BOX):
        x = f"{o0} + {TMA_BOX * j}"
        c0, c1 = ("kt * 64", x) if p.kmajor else (x, "kt * 64")
        lines.append(f"lp_tma_load({base} + st * {2 * p.stage_elems}u + {8192 * j}u, &{tm}, "
                     f"{c0}, {c1}, bar);")
    return ("\n" + " " * indent).join(lines)


# the TMA box load and the mbarrier phase wait both TMA kernels use
TMA_HELPERS = r"""struct __align__(64) lp_tmap_t { unsigned long long v[16]; };
__device__ __forceinline__ void lp_tma_load(unsigned dst, const lp_tmap_t* tm, int c0, int c1,
                                            unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1),
                  "r"(bar) : "memory");
}
__device__ __forceinline__ void lp_bar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nLAB_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@p bra.uni DONE;\nbra.uni LAB_WAIT;\nDONE:\n}\n"
               :: "r"(bar), "r"(parity) : "memory");
}
"""


def _source_tma(cfg: Sm90Config, prob: GemmProblem, a: OperandPlan, b: OperandPlan,
                cmaps: Dict[str, Any], desc: Dict[str, Tuple[int, int, int]], log: ProofLog,
                name: str) -> str:
    """The kernel with TMA loads: thread 0 issues ``cp.async.bulk.tensor`` boxes completing
    on one mbarrier per stage; every thread waits on the stage's phase before its wgmma."""
    tin = DTYPES[prob.dtype][0]
    tout = OUT_DTYPES[prob.out][0]
    S = cfg.stages
    R = cfg.bn // 2
    funcs = "".join(_cfun(low) for low in (cmaps["row"], cmaps["col"]))
    header = log.header(f"proven before emission ({cfg.key()}, {prob.key()})")
    a_stage_b = 2 * a.stage_elems
    b_stage_b = 2 * b.stage_elems

    return f"""{header}//
// wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]
// A {prob.a_major}-major, B {prob.b_major}-major (TMA tensor maps);
// {prob.dtype} in, f32 accumulate, {prob.out} out
// block {cfg.bm}x{cfg.bn}x{cfg.bk}, {cfg.warpgroups} consumer warpgroups, {S}-stage TMA pipeline
// (64x64 boxes, 128-byte swizzle, one mbarrier per stage), wgmma through descriptors
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef {tin} lp_in_t;
typedef {tout} lp_out_t;

{funcs}
{TMA_HELPERS}{_mma_helpers(cfg, prob, a, b, desc)}
extern "C" __global__ void __launch_bounds__({cfg.threads}, 1)
{name}(const __grid_constant__ lp_tmap_t tmA, const __grid_constant__ lp_tmap_t tmB,
       lp_out_t* __restrict__ C, int M, int N, int K, long long ldc, int c_vec) {{
  extern __shared__ __align__(1024) unsigned char lp_smem[];
  __shared__ __align__(8) unsigned long long lp_full[{S}];
  const unsigned s0 = ((unsigned)__cvta_generic_to_shared(lp_smem) + 1023u) & ~1023u;
  const unsigned sA = s0;
  const unsigned sB = s0 + {S * a_stage_b}u;
  const unsigned full0 = (unsigned)__cvta_generic_to_shared(lp_full);
  const int tid = threadIdx.x, wg = tid >> 7, wt = tid & 127;
{raster_code(cfg.bm, cfg.bn, cfg.group_m)}
  const int KT = (K + {cfg.bk - 1}) / {cfg.bk};
  if (tid == 0) {{
    for (int st = 0; st < {S}; ++st)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\\n" :: "r"(full0 + 8u * st));
    asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
  }}
  __syncthreads();
  float acc[{R}];
#pragma unroll
  for (int i = 0; i < {R}; ++i) acc[i] = 0.f;

  if (tid == 0) {{
    for (int kt = 0; kt < {S - 1} && kt < KT; ++kt) {{
      const int st = kt;
      const unsigned bar = full0 + 8u * st;
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n"
                   :: "r"(bar), "r"({a_stage_b + b_stage_b}) : "memory");
      {_tma_loads(a, "tmA", "sA", 6)}
      {_tma_loads(b, "tmB", "sB", 6)}
    }}
  }}
  for (int kt0 = 0; kt0 < KT; ++kt0) {{
    const int rs = kt0 % {S};
    lp_bar_wait(full0 + 8u * rs, (unsigned)((kt0 / {S}) & 1));
{_wgmma_batch(cfg, desc, a, b, "rs", "wg", 4)}
    __syncthreads();   // every warpgroup's batch kt0 - 1 is done: its stage may be refilled
    if (tid == 0) {{
      const int kt = kt0 + {S - 1};
      if (kt < KT) {{
        const int st = kt % {S};
        const unsigned bar = full0 + 8u * st;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n"
                     :: "r"(bar), "r"({a_stage_b + b_stage_b}) : "memory");
        {_tma_loads(a, "tmA", "sA", 8)}
        {_tma_loads(b, "tmB", "sB", 8)}
      }}
    }}
  }}
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");

{_epilogue(cfg, prob, cmaps)}
"""


# ============================================================================ persistent schedule
# The tile scheduler of the persistent kernel, as statements (name, C expression) that are
# both emitted and proven: "min(x, y)" is written as ("min", x, y).  Tile t of the
# grid_m x grid_n tiles -> (tm, tn): groups of GROUP_M tile rows are walked column by
# column (the A panels of a group and one B panel stay in L2 together).
def _schedule(group_m: int) -> Tuple[Tuple[str, Any], ...]:
    return (("per_group", f"{group_m} * grid_n"),
            ("first_m", f"t / per_group * {group_m}"),
            ("gsize", ("min", "grid_m - first_m", f"{group_m}")),
            ("tm", "first_m + t % per_group % gsize"),
            ("tn", "t % per_group / gsize"))


def schedule_code(group_m: int) -> str:
    """The scheduler as a C function ``lp_tile(t, grid_m, grid_n, &tm, &tn)``."""
    body = []
    for name, e in _schedule(group_m):
        expr = f"min({e[1]}, {e[2]})" if isinstance(e, tuple) else e
        if name in ("tm", "tn"):
            body.append(f"  {name} = {expr};")
        else:
            body.append(f"  const int {name} = {expr};")
    return ("__device__ __forceinline__ void lp_tile(int t, int grid_m, int grid_n, int& tm, "
            "int& tn) {\n" + "\n".join(body) + "\n}\n")


def _eval_schedule(group_m: int, t: np.ndarray, gm: np.ndarray, gn: np.ndarray
                   ) -> Tuple[np.ndarray, np.ndarray]:
    env: Dict[str, Any] = {"t": t, "grid_m": gm, "grid_n": gn}
    for name, e in _schedule(group_m):
        if isinstance(e, tuple):
            env[name] = np.minimum(lower.c_expr_eval(e[1], env, int_bits=32),
                                   lower.c_expr_eval(e[2], env, int_bits=32))
        else:
            env[name] = lower.c_expr_eval(e, env, int_bits=32)
    return env["tm"], env["tn"]


def cluster_tm_expr(cluster: int) -> str:
    """The tile row of CTA ``crank`` of a cluster given the scheduler's row group ``tp``."""
    return f"{cluster} * tp + crank"


def prove_schedule(group_m: int, log: ProofLog, max_grid: int = 40,
                   extra: Tuple[Tuple[int, int], ...] = ((64, 32), (32, 64), (65, 33),
                                                          (1, 700), (700, 1), (129, 66)),
                   cluster: int = 1) -> None:
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
    tm = tp if cl == 1 else lower.c_expr_eval(cluster_tm_expr(cl), {"tp": tp, "crank": crank},
                                               int_bits=32)
    out = (tp < 0) | (tp >= gmp) | (tn < 0) | (tn >= gn) | (tm >= cl * gmp)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise ProofFailedError(f"scheduler (group_m={group_m}, cluster={cl}): tile {int(t[i])} "
                               f"of a {int(gm[i])}x{int(gn[i])} grid goes to ({int(tm[i])}, "
                               f"{int(tn[i])}), outside the grid", condition="tile in grid",
                               witness=(int(gm[i]), int(gn[i]), int(t[i])))
    key = (gid * (1 << 22) + tm * gn + tn)
    u, first, cnt = np.unique(key, return_index=True, return_counts=True)
    inside = tm < gm
    if u.size != key.size or int(inside.sum()) != sum(m * n for m, n in grids):
        i = int(first[np.flatnonzero(cnt > 1)[0]]) if u.size != key.size else 0
        raise ProofFailedError(f"scheduler (group_m={group_m}, cluster={cl}): two tiles of a "
                               f"{int(gm[i])}x{int(gn[i])} grid go to ({int(tm[i])}, "
                               f"{int(tn[i])}) or a tile is missed",
                               condition="scheduler bijective",
                               witness=(int(gm[i]), int(gn[i]), int(t[i])))
    what = (f"maps (tile t, CTA rank) -> ({cluster_tm_expr(cl)}, tn), every tile once, "
            f"padding rows only past grid_m," if cl > 1 else "maps tile t -> (tm, tn) one-to-one "
            "onto the grid,")
    cl_s = f", cluster={cl}" if cl > 1 else ""
    log.add("bijective", f"persistent scheduler (group_m={group_m}{cl_s}) "
                         f"{what} for all {len(grids)} grids up to {max_grid}x{max_grid} and "
                         f"{len(extra)} larger ones (C semantics)", "exhaustive", int(t.size))
    # the strided persistent loop partitions [0, tiles): t = b + i * P, b < P
    cases = 0
    for P in (1, 2, 3, 7, 66, 114, 132, 144):
        for tiles in (1, 5, P - 1, P, P + 1, 2 * P + 3, 2048):
            if tiles < 1:
                continue
            seen = np.concatenate([np.arange(b, tiles, P) for b in range(P)])
            if seen.size != tiles or np.unique(seen).size != tiles:
                raise ProofFailedError(f"persistent loop over {tiles} tiles with {P} CTAs does "
                                       f"not visit each tile once", condition="tile partition",
                                       witness=(P, tiles))
            cases += tiles
    log.add("bijective", "persistent loop t = first + i * step (t < tiles) visits "
                         "each tile exactly once", "exhaustive", cases)


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
    return (Swizzle(0, m, 3), Swizzle(3, m, 3), Swizzle(2, m + 1, 2), Swizzle(2, m, 3),
            Swizzle(2, m, 2), Swizzle(3, m, 4))


def _plan_epilogue(prob: GemmProblem, log: ProofLog) -> Dict[str, Any]:
    """The accumulators of one consumer warpgroup leave through a 64-row x 128-byte buffer,
    one column chunk (128 bytes of C per row) at a time: each thread writes its register
    pairs, then each thread reads four 16-byte row vectors and stores them to C.  The XOR
    swizzle of the buffer is chosen by the bank proofs (both the pair writes and the vector
    reads conflict-free); proven: the write map is a bijection onto the buffer, pairs are
    contiguous and aligned, the read map covers the buffer once with aligned 16-byte
    vectors, and every accumulator (thread, register) reaches exactly its C coordinate."""
    ob = OUT_DTYPES[prob.out][1]
    rw = 128 // ob                  # elements per buffer row = columns per chunk
    ev = 16 // ob                   # elements per 16-byte vector
    rc = rw // 2                    # registers per chunk: rw / 8 column blocks x 4
    # (thread, register) -> (row, col) of the warpgroup's 64 x rw chunk, column-major index
    cmap = Layout(((4, 8, 4), (2, 2, rw // 8)), ((2 * 64, 1, 16), (64, 8, 8 * 64)))
    cval = _eval_map(cmap)
    crow, ccol = cval % 64, cval // 64
    rshape = ((8, 16), 4)           # (t % 8, t // 8), vector v
    grow = _eval_map(Layout(rshape, ((0, 1), 16)))
    gcol = _eval_map(Layout(rshape, ((ev, 0), 0)))
    chosen = None
    for sw in _epilogue_swizzles(ob):
        buf = composition(sw, Layout((64, rw), (rw, 1)))
        wmap = composition(buf, cmap)
        rmap = composition(sw, Layout(rshape, ((ev, rw), 16 * rw)))
        w = _eval_map(wmap).reshape(rc, 128).T          # [thread, register]
        r = _eval_map(rmap).reshape(4, 128).T           # [thread, vector]
        wr = np.stack([w[32 * q:32 * q + 32, 2 * p] * ob for q in range(4)
                       for p in range(rc // 2)])
        rd = np.stack([r[32 * q:32 * q + 32, v] * ob for q in range(4) for v in range(4)])
        try:
            sub = ProofLog()
            banks.prove_conflict_free(wr, 2 * ob, what=f"epilogue {2 * ob}-byte pair writes "
                                      f"into the {sw}-swizzled buffer", log=sub)
            banks.prove_conflict_free(rd, 16, what=f"epilogue 16-byte row reads from the "
                                      f"{sw}-swizzled buffer", log=sub)
        except (ProofFailedError, banks.BankConflictError):
            continue
        chosen = (sw, wmap, rmap, w, r, sub)
        break
    if chosen is None:
        raise ProofFailedError("no candidate epilogue swizzle is conflict-free",
                               condition="epilogue banks")
    sw, wmap, rmap, w, r, sub = chosen
    log.extend(sub)
    n = 64 * rw
    lower.prove_bijective(wmap, n, what=f"epilogue (thread, register) -> {sw}-swizzled "
                                        f"64x{rw} buffer", log=log)
    if (w[:, 1::2] != w[:, 0::2] + 1).any() or (w[:, 0::2] % 2).any():
        raise ProofFailedError("epilogue register pairs are not aligned adjacent elements",
                               condition="pair contiguity")
    reads = (r[:, :, None] + np.arange(ev)).reshape(-1)
    if (r % ev).any() or np.unique(reads).size != n or reads.min() != 0 or reads.max() != n - 1:
        raise ProofFailedError("epilogue 16-byte reads do not cover the buffer once, aligned",
                               condition="read cover")
    # data flow: the reader of the element an accumulator was written to stores it at the
    # accumulator's C coordinate (row, column within the chunk)
    where = np.empty(n, dtype=np.int64)
    where[reads] = np.arange(reads.size)
    src = where[w.T.reshape(-1)]                    # register-major, like cval
    t_r, rest = src // (4 * ev), src % (4 * ev)
    v_r, e_r = rest // ev, rest % ev
    idx = v_r * 128 + t_r                           # reader (thread, vector) flat index
    orow, ocol = grow[idx], gcol[idx] + e_r
    bad = np.flatnonzero((orow != crow) | (ocol != ccol))
    if bad.size:
        i = int(bad[0])
        raise ProofFailedError(f"epilogue: accumulator {i} (register-major) belongs at "
                               f"({int(crow[i])}, {int(ccol[i])}) but is stored at "
                               f"({int(orow[i])}, {int(ocol[i])})", condition="epilogue data flow",
                               witness=i)
    log.add("equal", f"epilogue data flow: every accumulator (thread, register) of a chunk, "
                     f"written to the buffer and read back as 16-byte vectors, is stored at "
                     f"its C coordinate ({sw})", "exhaustive", int(cval.size))
    low = {
        "w": lower.lower(wmap, ("t", "i"), name="lp_ep_w", log=log),
        "r": lower.lower(rmap, ("t", "v"), name="lp_ep_r", log=log),
        "row": lower.lower(Layout(rshape, ((0, 1), 16)), ("t", "v"), name="lp_ep_row", log=log),
        "col": lower.lower(Layout(rshape, ((ev, 0), 0)), ("t", "v"), name="lp_ep_col", log=log),
    }
    return {"low": low, "sw": sw, "rw": rw, "ev": ev, "rc": rc}


def _epilogue_ws(cfg: Sm90Config, prob: GemmProblem, ep: Dict[str, Any]) -> str:
    v2t, pack2, _ = _STORE2[prob.out]
    rw, ev, rc = ep["rw"], ep["ev"], ep["rc"]
    low = ep["low"]
    return f"""      // epilogue through shared memory (proven maps lp_ep_*), one 128-byte column
      // chunk at a time: register pairs -> swizzled buffer -> 16-byte row vectors -> C
      lp_out_t* const eb = reinterpret_cast<lp_out_t*>(lp_smem + (sE - sbase) + cg * 8192);
#pragma unroll
      for (int q = 0; q < {cfg.bn // rw}; ++q) {{
#pragma unroll
        for (int p = 0; p < {rc // 2}; ++p)
          *reinterpret_cast<{v2t}*>(eb + {low['w'].name}(wt, 2 * p)) =
              {pack2.format(x=f"acc[{rc} * q + 2 * p]", y=f"acc[{rc} * q + 2 * p + 1]")};
        lp_named_sync(1 + cg, 128);
#pragma unroll
        for (int v = 0; v < 4; ++v) {{
          const int r = m0 + 64 * cg + {low['row'].name}(wt, v);
          const int c = n0 + {rw} * q + {low['col'].name}(wt, v);
          const uint4 val = *reinterpret_cast<const uint4*>(eb + {low['r'].name}(wt, v));
          if (r < M) {{
            lp_out_t* p = C + (long long)r * ldc + c;
            if (c_vec && c + {ev} <= N) {{
              *reinterpret_cast<uint4*>(p) = val;
            }} else {{
              const lp_out_t* e = reinterpret_cast<const lp_out_t*>(&val);
#pragma unroll
              for (int i = 0; i < {ev}; ++i)
                if (c + i < N) p[i] = e[i];
            }}
          }}
        }}
        lp_named_sync(1 + cg, 128);
      }}"""


NAMED_SYNC = r"""__device__ __forceinline__ void lp_named_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(n) : "memory");
}
"""


CLUSTER_HELPERS = r"""__device__ __forceinline__ void lp_tma_load_mc(unsigned dst, const lp_tmap_t* tm,
                                               int c0, int c1, unsigned bar,
                                               unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1),
                  "r"(bar), "h"(mask) : "memory");
}
__device__ __forceinline__ void lp_arrive_cta(unsigned bar, unsigned cta) {
  asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n"
               :: "r"(bar), "r"(cta) : "memory");
}
__device__ __forceinline__ void lp_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
"""


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
        raise ProofFailedError(f"cluster: the B boxes issued by the CTAs are {issued}, not each "
                               f"of the {b.x_extent // TMA_BOX} boxes once",
                               condition="multicast boxes partition B", witness=tuple(issued))
    box = TMA_BOX * 64 * 2
    # into each CTA: its own A boxes (not multicast) and every multicast B box
    landed = [(a.x_extent // TMA_BOX) * box + sum(len(boxes[r]) * box for r in range(ctas))
              for _dest in range(ctas)]
    want = 2 * (a.stage_elems + b.stage_elems)
    if any(n != want for n in landed):
        raise ProofFailedError(f"cluster: {landed} bytes land per CTA and stage, the stage holds "
                               f"{want}", condition="transaction bytes", witness=tuple(landed))
    log.add("equal", f"{ctas}-CTA cluster: the B boxes {boxes} (CTA -> boxes, multicast to "
                     f"every CTA) partition the B tile; each CTA's full barrier receives "
                     f"{want} bytes per stage = its A tile + the whole B tile", "exhaustive",
            ctas * (a.x_extent // TMA_BOX + b.x_extent // TMA_BOX))
    return want


def _source_ws(cfg: Sm90Config, prob: GemmProblem, a: OperandPlan, b: OperandPlan,
               ep: Dict[str, Any], desc: Dict[str, Tuple[int, int, int]], tx: int,
               name: str) -> str:
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
    barriers).  ``tx`` is the proven per-stage transaction count.  Returns the source
    without its obligation header (the generator reads the protocol off it first)."""
    tin = DTYPES[prob.dtype][0]
    tout = OUT_DTYPES[prob.out][0]
    S = cfg.stages
    R = cfg.bn // 2
    CW = cfg.warpgroups
    CL = cfg.cluster
    funcs = "".join(_cfun(low) for low in ep["low"].values())
    a_stage_b = 2 * a.stage_elems
    b_stage_b = 2 * b.stage_elems
    regs = 232 if CW == 2 else 240
    if CL == 1:
        attrs = ""
        cl_helpers = ""
        sync0 = "__syncthreads();"
        sync_end = ""
        rank_code = ""
        tiles_code = "const int tiles = grid_m * grid_n;"
        t0, tstep = "blockIdx.x", "gridDim.x"
        tile_lines = ["int tm, tn;", "lp_tile(t, grid_m, grid_n, tm, tn);"]
        b_loads = _tma_loads(b, "tmB", "sB", 10)
        release_lines = ["if (prev >= 0 && lane0)",
                         '  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n"',
                         '               :: "r"(empty0 + 8u * prev) : "memory");']
    else:
        attrs = f" __cluster_dims__({CL}, 1, 1)"
        cl_helpers = CLUSTER_HELPERS
        sync0 = "lp_cluster_sync();   // every CTA's barriers are initialized before any use"
        sync_end = """
  lp_cluster_sync();     // no CTA leaves while a peer may still arrive on its barriers"""
        rank_code = """
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\\n" : "=r"(rank));
  const int crank = (int)rank;"""
        tiles_code = (f"const int grid_mp = (grid_m + {CL - 1}) / {CL};   // tile-row groups of "
                      f"the cluster\n  const int tiles = grid_mp * grid_n;")
        t0, tstep = f"blockIdx.x / {CL}", f"gridDim.x / {CL}"
        tile_lines = ["int tp, tn;", "lp_tile(t, grid_mp, grid_n, tp, tn);",
                      f"const int tm = {cluster_tm_expr(CL)};   // may pass grid_m: "
                      f"zero-filled, not stored"]
        boxes = _cluster_boxes(b, CL)
        lines = []
        for r in range(CL):
            ls = []
            for j in boxes[r]:
                x = f"n0 + {TMA_BOX * j}"
                c0, c1 = ("kt * 64", x) if b.kmajor else (x, "kt * 64")
                ls.append(f"lp_tma_load_mc(sB + st * {b_stage_b}u + {8192 * j}u, &tmB, {c0}, "
                          f"{c1}, bar, (unsigned short){(1 << CL) - 1});")
            lines.append(f"if (rank == {r}u) {{  // B boxes {boxes[r]}, multicast to the "
                         f"cluster\n            " + "\n            ".join(ls) + "\n          }")
        b_loads = "\n          ".join(lines)
        release_lines = ["if (prev >= 0 && lane0) {   // this CTA's barrier, then the peer's",
                         '  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n"',
                         '               :: "r"(empty0 + 8u * prev) : "memory");',
                         "  lp_arrive_cta(empty0 + 8u * prev, rank ^ 1u);", "}"]

    def block(lines: list, indent: int) -> str:   # lines after the first, indented
        return ("\n" + " " * indent).join(lines)
    return f"""//
// wgmma GEMM generated by layoutproof {GENERATOR_VERSION}: C[M,N] (row-major) = A[M,K] @ B[K,N]
// A {prob.a_major}-major, B {prob.b_major}-major (TMA tensor maps);
// {prob.dtype} in, f32 accumulate, {prob.out} out
// persistent, warp-specialized: 1 producer warpgroup (TMA, 40 registers) + {CW} consumer
// warpgroup(s) (wgmma, {regs} registers); block {cfg.bm}x{cfg.bn}x{cfg.bk}, {S}-stage
// full/empty mbarrier pipeline, epilogue through a swizzled shared-memory buffer
// {f"{CL}-CTA clusters: the B tile is multicast, each CTA loading half of it" if CL > 1 else "no cluster"}
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef {tin} lp_in_t;
typedef {tout} lp_out_t;

{funcs}{schedule_code(cfg.group_m)}{TMA_HELPERS}{cl_helpers}{NAMED_SYNC}
{_mma_helpers(cfg, prob, a, b, desc)}
extern "C" __global__ void __launch_bounds__({cfg.threads}, 1){attrs}
{name}(const __grid_constant__ lp_tmap_t tmA, const __grid_constant__ lp_tmap_t tmB,
       lp_out_t* __restrict__ C, int M, int N, int K, long long ldc, int c_vec) {{
  extern __shared__ __align__(1024) unsigned char lp_smem[];
  __shared__ __align__(8) unsigned long long lp_full[{S}], lp_empty[{S}];
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(lp_smem);
  const unsigned s0 = (sbase + 1023u) & ~1023u;
  const unsigned sA = s0;
  const unsigned sB = s0 + {S * a_stage_b}u;
  const unsigned sE = sB + {S * b_stage_b}u;
  const unsigned full0 = (unsigned)__cvta_generic_to_shared(lp_full);
  const unsigned empty0 = (unsigned)__cvta_generic_to_shared(lp_empty);
  const int tid = threadIdx.x, wg = tid >> 7, wt = tid & 127;{rank_code}
  const int grid_m = (M + {cfg.bm - 1}) / {cfg.bm}, grid_n = (N + {cfg.bn - 1}) / {cfg.bn};
  {tiles_code}
  const int KT = (K + {cfg.bk - 1}) / {cfg.bk};
  if (tid == 0) {{
    for (int s = 0; s < {S}; ++s) {{
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\\n" :: "r"(full0 + 8u * s));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], {4 * CW * CL};\\n" :: "r"(empty0 + 8u * s));
    }}
    asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
  }}
  {sync0}
  if (wg == 0) {{
    // producer: one thread keeps up to {S} stages in flight
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\\n");
    if (wt == 0) {{
      int st = 0;
      unsigned ph = 0;
      for (int t = {t0}; t < tiles; t += {tstep}) {{
        {block(tile_lines, 8)}
        const int m0 = tm * {cfg.bm}, n0 = tn * {cfg.bn};
        for (int kt = 0; kt < KT; ++kt) {{
          lp_bar_wait(empty0 + 8u * st, ph ^ 1u);     // the consumers released stage st
          const unsigned bar = full0 + 8u * st;
          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n"
                       :: "r"(bar), "r"({tx}) : "memory");
          {_tma_loads(a, "tmA", "sA", 10)}
          {b_loads}
          if (++st == {S}) {{ st = 0; ph ^= 1u; }}
        }}
      }}
    }}
  }} else {{
    // consumers: wgmma on this warpgroup's 64-row slice, one batch in flight
    asm volatile("setmaxnreg.inc.sync.aligned.u32 {regs};\\n");
    const int cg = wg - 1;
    const bool lane0 = (tid & 31) == 0;
    int st = 0;
    unsigned ph = 0;
    for (int t = {t0}; t < tiles; t += {tstep}) {{
      {block(tile_lines, 6)}
      const int m0 = tm * {cfg.bm}, n0 = tn * {cfg.bn};
      float acc[{R}];
#pragma unroll
      for (int i = 0; i < {R}; ++i) acc[i] = 0.f;
      int prev = -1;
      for (int kt = 0; kt < KT; ++kt) {{
        lp_bar_wait(full0 + 8u * st, ph);             // stage st's bytes have landed
{_wgmma_batch(cfg, desc, a, b, "st", "cg", 8)}
        // the previous batch is complete: its stage goes back to the producer(s)
        {block(release_lines, 8)}
        prev = st;
        if (++st == {S}) {{ st = 0; ph ^= 1u; }}
      }}
      asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
      {block(release_lines, 6)}
{_epilogue_ws(cfg, prob, ep)}
    }}
  }}{sync_end}
}}
"""


def check_epilogue_order(src: str, log: ProofLog) -> None:
    """The staged epilogue's synchronization, read off the emitted text: one shared buffer
    per consumer warpgroup is written (register pairs) and read (16-byte vectors) chunk
    after chunk, so the loop body must be *writes, barrier, reads, barrier* -- no read
    before its chunk is fully written (read-after-write), no write before the previous
    chunk is fully read (write-after-read) -- with both warpgroup barriers unconditional
    (at the top level of the loop body, after a complete statement)."""
    start = src.find("for (int q = 0;")
    if start < 0:
        raise ProofFailedError("emitted kernel: no epilogue chunk loop",
                               condition="epilogue order")
    i = src.index("{", start)
    depth, end = 0, -1
    for j in range(i, len(src)):
        if src[j] == "{":
            depth += 1
        elif src[j] == "}":
            depth -= 1
            if depth == 0:
                end = j
                break
    body = src[i + 1:end]
    seq: list = []
    depth = 0
    for m in re.finditer(r"eb \+ lp_ep_w\(|eb \+ lp_ep_r\(|lp_named_sync\(1 \+ cg, 128\)|[{}]",
                         body):
        t = m.group()
        if t in "{}":
            depth += 1 if t == "{" else -1
            continue
        if t.startswith("lp_named_sync"):
            before = body[:m.start()].rstrip()
            if depth != 0 or not before or before[-1] not in ";{}":
                raise ProofFailedError("emitted kernel: an epilogue barrier is conditional or "
                                       "nested", condition="epilogue order", witness=m.start())
            ev = "S"
        else:
            ev = "W" if "lp_ep_w" in t else "R"
        if not seq or seq[-1] != ev:
            seq.append(ev)
    if seq != ["W", "S", "R", "S"]:
        raise ProofFailedError(f"emitted kernel: the epilogue chunk loop does "
                               f"{' '.join(seq)}, not writes, barrier, reads, barrier",
                               condition="epilogue order", witness="".join(seq))
    log.add("protocol", "epilogue buffer (order read off the emitted text): each chunk is "
                        "written, a warpgroup barrier, read, a barrier -- no read before its "
                        "chunk is written, no write before the previous chunk is read; both "
                        "barriers unconditional", "exhaustive", len(seq))


def protocol_of(src: str, cfg: Sm90Config, log: ProofLog) -> Dict[str, Any]:
    """The mbarrier protocol of an emitted warp-specialized kernel, read off its text: the
    parities of the producer's wait on ``empty`` and the consumers' wait on ``full``, the
    arrival counts the barriers are initialized with, and whether the consumers release on
    the peer CTA's barrier.  Checked: ``full`` expects the producer's one arrival, and
    ``empty`` expects exactly the arrivals the consumer warps make (4 per consumer
    warpgroup, from each CTA that releases into it).  Returns the parameters for
    :func:`~layoutproof.gpu.pipeline.prove_pipeline`."""
    def one(pattern: str, what: str) -> Any:
        found = re.findall(pattern, src)
        if len(found) != 1:
            raise ProofFailedError(f"emitted kernel: expected one {what}, found {len(found)}",
                                   condition="protocol of the emitted text", witness=what)
        return found[0]

    pp = one(r"lp_bar_wait\(empty0 \+ 8u \* st, ph(?: \^ (\d+)u)?\)", "producer wait on empty")
    cp = one(r"lp_bar_wait\(full0 \+ 8u \* st, ph(?: \^ (\d+)u)?\)", "consumer wait on full")
    e_init = int(one(r'mbarrier\.init\.shared::cta\.b64 \[%0\], (\d+);\\n" :: "r"\(empty0',
                     "empty barrier init"))
    f_init = int(one(r'mbarrier\.init\.shared::cta\.b64 \[%0\], (\d+);\\n" :: "r"\(full0',
                     "full barrier init"))
    local = len(re.findall(r'mbarrier\.arrive\.shared::cta\.b64 _, \[%0\];\\n"\s*'
                           r'::\s*"r"\(empty0 \+ 8u \* prev\)', src))
    remote = len(re.findall(r"lp_arrive_cta\(empty0 \+ 8u \* prev, rank \^ 1u\)", src))
    if local != 2 or remote not in (0, 2):
        raise ProofFailedError(f"emitted kernel: {local} local and {remote} remote release "
                               f"sites (expected 2 and 0 or 2: after each batch, at the tile end)",
                               condition="protocol of the emitted text", witness=(local, remote))
    remote_release = remote == 2
    if f_init != 1:
        raise ProofFailedError(f"emitted kernel: full barriers expect {f_init} arrivals, the "
                               f"producer makes 1", condition="arrival counts", witness=f_init)
    made = 4 * cfg.warpgroups * (cfg.cluster if remote_release else 1)
    if e_init != made:
        raise ProofFailedError(f"emitted kernel: empty barriers expect {e_init} arrivals per "
                               f"phase, the consumer warps make {made}",
                               condition="arrival counts", witness=(e_init, made))
    proto = {"producer_parity": int(pp or 0), "consumer_parity": int(cp or 0),
             "remote_release": remote_release}
    log.add("equal", f"protocol read off the emitted text: producer waits empty with parity "
                     f"ph ^ {proto['producer_parity']}, consumers wait full with ph ^ "
                     f"{proto['consumer_parity']}; full expects 1 arrival (+ the TMA bytes), "
                     f"empty expects {e_init} = {4 * cfg.warpgroups} consumer warps x "
                     f"{cfg.cluster if remote_release else 1} CTA(s) releasing into it",
            "exhaustive", 4 + local + remote)
    return proto


_MEMO: Dict[Tuple[Sm90Config, GemmProblem], GemmKernel] = {}


def generate_sm90(config: Optional[Sm90Config] = None, problem: Optional[GemmProblem] = None,
                  *, memo: bool = True) -> GemmKernel:
    """Build, prove and emit the wgmma kernel (any operand major-ness); the default config
    is :data:`HOPPER_DEFAULT` (the warp-specialized persistent kernel)."""
    from . import sm90

    cfg = (config or HOPPER_DEFAULT).validate()
    prob = (problem or GemmProblem("k", "k")).validate()
    if memo and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    log = ProofLog()
    threads = cfg.threads
    a = OperandPlan("a", cfg.bm, cfg.bk, cfg.stages, prob.a_major == "k", threads,
                    cfg.warpgroups, 64)
    b = OperandPlan("b", cfg.bn, cfg.bk, cfg.stages, prob.b_major == "k", threads, 1, cfg.bn)
    smems = {}
    for p in (a, b):
        if cfg.loader == "tma":
            lay = tma_stage_layout(p.x_extent, p.kmajor)
            smems[p.name] = sm90.GmmaSmemLayout(lay, "K" if p.kmajor else "MN", "SW128")
            stack = Layout((lay.layout_b.shape[0], lay.layout_b.shape[1], p.stages),
                           (lay.layout_b.stride[0], lay.layout_b.stride[1], p.stage_elems))
            total = p.stages * p.stage_elems
            lower.prove_bijective(composition(SW128, stack), total,
                                  what=f"{p.name.upper()} smem stages onto [0,{total})", log=log)
            _prove_tma(p, lay, log)
            continue
        if p.stage_elems % (8 * threads):
            raise GemmConfigError(f"Sm90Config: the {p.name.upper()} tile is not a whole number "
                                  f"of 16-byte chunks per thread")
        smem = sm90.tile_to_shape(sm90.smem_atom("K" if p.kmajor else "MN", "SW128"),
                                  (p.x_extent, p.bk))
        smems[p.name] = smem
        if smem.layout.swizzle != SW128 or smem.layout.offset != 0:
            raise ProofFailedError(f"{smem.layout} is not {SW128} o 0 o B",
                                   condition="SW128 atom", witness=str(smem.layout))
        L2 = smem.layout.layout_b
        p.tile_layout = Layout((L2.shape[0], L2.shape[1], p.stages),
                               (L2.stride[0], L2.stride[1], p.stage_elems))
        p.swizzle = SW128
        plan_copy(p, log)
        cp = _eval_map(_buffer_map(p, p.copy_tv(), with_stage=False)) * 2
        banks.prove_conflict_free(_warp_rows(cp, threads), 16,
                                  what=f"{p.name.upper()} cp.async 16B writes into the "
                                       f"{smem.major}-major SW128 stage", log=log)
    desc = {"a": _plan_descriptors(a, smems["a"], 64, cfg.warpgroups, log),
            "b": _plan_descriptors(b, smems["b"], cfg.bn, 1, log)}
    cm = _c_map(cfg)
    # the atom (verified against the PTX fragment encoding of layoutproof.gpu.sm90) is the
    # (thread, register) part of the C map; the warpgroup mode is covered by the bijection
    atom = sm90.sm90_atom(cfg.bn, prob.dtype, "SS")
    log.extend(sm90.verify_gmma_atom(atom))
    prove_c_atom_part(cm, atom, (64, cfg.bn), cfg.bm, log)
    lower.prove_bijective(cm, cfg.bm * cfg.bn,
                          what=f"C (thread, register, warpgroup) -> {cfg.bm}x{cfg.bn} tile", log=log)
    cargs = ("t", "i", "g")
    rows = lower.lower(composition(Layout((cfg.bm, cfg.bn), (1, 0)), cm), cargs,
                       name="lp_c_row", log=log)
    cols = lower.lower(composition(Layout((cfg.bm, cfg.bn), (0, 1)), cm), cargs,
                       name="lp_c_col", log=log)
    h = hashlib.sha256(f"{GENERATOR_VERSION}{cfg}{prob}".encode()).hexdigest()[:10]
    name = f"lp_gemm_sm90_{prob.key()}_{h}"
    if cfg.schedule == "ws":
        log.extend(ProofLog(list(_schedule_proofs(cfg.group_m, cfg.cluster))))
        ep = _plan_epilogue(prob, log)
        tx = (_prove_cluster_tx(a, b, cfg.cluster, log) if cfg.cluster > 1
              else 2 * (a.stage_elems + b.stage_elems))
        # the protocol is read off the emitted text and model-checked before the source,
        # with every obligation in its header, is released
        body = _source_ws(cfg, prob, a, b, ep, desc, tx, name)
        proto = protocol_of(body, cfg, log)
        check_epilogue_order(body, log)
        prove_pipeline(cfg.stages, cfg.warpgroups, log, ctas=cfg.cluster, **proto)
        src = log.header(f"proven before emission ({cfg.key()}, {prob.key()})") + body
    else:
        emit = _source_tma if cfg.loader == "tma" else _source
        src = emit(cfg, prob, a, b, {"row": rows, "col": cols}, desc, log, name)
    gcfg = GemmConfig(bm=cfg.bm, bn=cfg.bn, bk=cfg.bk, stages=cfg.stages, group_m=cfg.group_m,
                      warps_m=cfg.warpgroups * 4, warps_n=1)
    k = GemmKernel(gcfg, prob, src, name, threads, cfg.smem_bytes, log,
                   {"a": (3, 3, 3), "b": (3, 3, 3)})
    k.config = cfg
    if memo:
        _MEMO[(cfg, prob)] = k
    return k
