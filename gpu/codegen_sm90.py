"""The proven Hopper GEMM (first version): cp.async into 128-byte-swizzled stages, wgmma.

One CTA of ``bm / 64`` consumer warpgroups computes a ``bm x bn`` tile of C = A @ B with
``wgmma.mma_async.m64n{bn}k16`` (f16/bf16 -> f32), both operands read by the tensor cores
straight from shared memory through matrix descriptors.  All threads issue the cp.async
copies (no producer warp yet); one wgmma batch stays in flight while the next tile loads.

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
  tile exactly once and its lowered row/column expressions equal it.

>>> k = generate_sm90(Sm90Config(bn=128, stages=4))
>>> k.threads, k.smem_bytes, "wgmma.mma_async" in k.source
(256, 132096, True)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

from layoutproof import Layout, Swizzle, composition

from . import banks, lower
from .codegen import (
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
from .proofrec import ProofLog

__all__ = ["Sm90Config", "generate_sm90"]

GENERATOR_VERSION = "sm90-1"
SW128 = Swizzle(3, 3, 3)   # on 2-byte elements: 16-byte chunk index ^= row % 8 in 128-byte rows


@dataclass(frozen=True)
class Sm90Config:
    """Block tile of the wgmma kernel: ``bm`` = 64 x consumer warpgroups, ``bn`` the wgmma
    N (8..256, a multiple of 8 that the copies tile), ``bk`` = 64 (one 128-byte row)."""

    bm: int = 128
    bn: int = 256
    bk: int = 64
    stages: int = 4
    group_m: int = 8
    loader: str = "cp.async"

    @property
    def warpgroups(self) -> int:
        return self.bm // 64

    @property
    def threads(self) -> int:
        return 128 * self.warpgroups

    @property
    def smem_bytes(self) -> int:
        return self.stages * (self.bm + self.bn) * self.bk * 2 + 1024   # + 1024 to align

    def key(self) -> str:
        ld = "_tma" if self.loader == "tma" else ""
        return f"sm90_{self.bm}x{self.bn}x{self.bk}_s{self.stages}_g{self.group_m}{ld}"

    def validate(self) -> "Sm90Config":
        for k in ("bm", "bn", "bk", "stages", "group_m"):
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
    b_stage_b = 2 * b.stage_elems
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
    const unsigned a_base = sA + rs * {a_stage_b}u + wg * {desc['a'][1]}u;
    const unsigned b_base = sB + rs * {b_stage_b}u;
    asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < {cfg.bk // 16}; ++ks)
      lp_wgmma(acc, lp_desc_a(a_base + {desc['a'][2]}u * ks), lp_desc_b(b_base + {desc['b'][2]}u * ks));
    asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\\n" ::: "memory");
  }}
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
  lp_cp_wait<0>();

{_epilogue(cfg, prob, cmaps)}
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

    def loads(p: OperandPlan, tm: str, base: str) -> str:
        o0 = "m0" if p.name == "a" else "n0"
        lines = []
        for j in range(p.x_extent // TMA_BOX):
            x = f"{o0} + {TMA_BOX * j}"
            c0, c1 = ("kt * 64", x) if p.kmajor else (x, "kt * 64")
            lines.append(f"lp_tma_load({base} + st * {2 * p.stage_elems}u + {8192 * j}u, &{tm}, "
                         f"{c0}, {c1}, bar);")
        return "\n      ".join(lines)

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
struct __align__(64) lp_tmap_t {{ unsigned long long v[16]; }};

{funcs}
__device__ __forceinline__ void lp_tma_load(unsigned dst, const lp_tmap_t* tm, int c0, int c1,
                                            unsigned bar) {{
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {{%2, %3}}], [%4];\\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1),
                  "r"(bar) : "memory");
}}
__device__ __forceinline__ void lp_bar_wait(unsigned bar, unsigned parity) {{
  asm volatile("{{\\n.reg .pred p;\\nLAB_WAIT:\\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\\n"
               "@p bra.uni DONE;\\nbra.uni LAB_WAIT;\\nDONE:\\n}}\\n"
               :: "r"(bar), "r"(parity) : "memory");
}}
{_mma_helpers(cfg, prob, a, b, desc)}
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
      {loads(a, "tmA", "sA")}
      {loads(b, "tmB", "sB")}
    }}
  }}
  for (int kt0 = 0; kt0 < KT; ++kt0) {{
    const int rs = kt0 % {S};
    lp_bar_wait(full0 + 8u * rs, (unsigned)((kt0 / {S}) & 1));
    const unsigned a_base = sA + rs * {a_stage_b}u + wg * {desc['a'][1]}u;
    const unsigned b_base = sB + rs * {b_stage_b}u;
    asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < {cfg.bk // 16}; ++ks)
      lp_wgmma(acc, lp_desc_a(a_base + {desc['a'][2]}u * ks),
               lp_desc_b(b_base + {desc['b'][2]}u * ks));
    asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\\n" ::: "memory");
    __syncthreads();   // every warpgroup's batch kt0 - 1 is done: its stage may be refilled
    if (tid == 0) {{
      const int kt = kt0 + {S - 1};
      if (kt < KT) {{
        const int st = kt % {S};
        const unsigned bar = full0 + 8u * st;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n"
                     :: "r"(bar), "r"({a_stage_b + b_stage_b}) : "memory");
        {loads(a, "tmA", "sA")}
        {loads(b, "tmB", "sB")}
      }}
    }}
  }}
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");

{_epilogue(cfg, prob, cmaps)}
"""


_MEMO: Dict[Tuple[Sm90Config, GemmProblem], GemmKernel] = {}


def generate_sm90(config: Optional[Sm90Config] = None, problem: Optional[GemmProblem] = None,
                  *, memo: bool = True) -> GemmKernel:
    """Build, prove and emit the wgmma kernel (any operand major-ness)."""
    from . import sm90

    cfg = (config or Sm90Config()).validate()
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
