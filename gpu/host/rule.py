"""The host side of a GEMM launch, decided once: the default kernel choice, operand layouts,
and the packed kernel-parameter block.

Everything here is plain Python and numpy (no CuPy, no CUDA, no arrays):
:func:`decide` turns a call described as data (:class:`GemmRequest`, :class:`DeviceFacts`)
into one frozen :class:`LaunchDecision` -- kernel, staging, grid, workspace, parameters --
that a :class:`~layoutproof.gpu.host.plan.GemmPlan` carries out; a plan's launch only
rewrites the few bytes of :class:`ParamBuffer` that changed (a base pointer) before one
``cuLaunchKernel``.

* :func:`choose_config` -- the default kernel for a shape without timing anything: a
  wave model (persistent tiles per SM, per-tile compute at a measured per-config rate,
  per-tile operand bytes at a measured per-SM bandwidth, a fixed per-tile cost) over the
  existing generator configurations; :data:`SM90_MODEL` holds the constants, fitted to an
  H100 sweep (bench/RESULTS.md).
* :func:`hybrid_split` -- where the same model takes data-parallel rows plus a split-K tail
  (launched by :mod:`layoutproof.gpu.host.streamk`) over the unsplit pick's partial last wave.
* :func:`operand_layout` -- which dimension of a 2-D operand is contiguous, its leading
  dimension, and whether it breaks the kernels' 16-byte contract (then it is copied).
* :class:`ParamBuffer` -- the ``void*[]`` argument block of ``cuLaunchKernel``, aligned
  storage for every parameter (a 128-byte ``CUtensorMap`` at 64 bytes), written in place.

>>> from layoutproof.gpu.config import GemmProblem
>>> choose_config(8192, 8192, 8192, GemmProblem(), hopper=True, tma=True).key()
'sm90_64x256x64_s5_g16_tma_pp'
>>> choose_config(4096, 4096, 4096, GemmProblem(), hopper=True, tma=True).key()
'sm90_128x256x64_s4_g8_tma_ws'
>>> operand_layout(64, 4096, 8192, 2, 2, 0)     # row-major, 16-byte aligned
('cols', 4096, False)
"""

from __future__ import annotations

import ctypes
import functools
import warnings
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..config import DTYPES, GemmConfig, GemmProblem
from ..errors import GemmConfigError, GemmInputError
from ..kernels.epilogue import EpilogueConfig
from ..kernels.mma_epilogue import MmaEpilogueConfig
from ..kernels.splitk import CLUSTER_ROWS, FIXUP_DEFAULT, FixupEpilogueConfig, SplitKConfig, fixup_grid
from ..kernels.wgmma import Sm90Config, batched_kernels_available
from ..kernels.wgmma_core import a_box_rows
from ..kernels.wgmma_pingpong import PINGPONG_DEFAULT, PingpongEpilogueConfig

__all__ = [
    "SlowPathWarning",
    "warn_slow_path",
    "choose_config",
    "estimate_us",
    "SM90_MODEL",
    "SM80_MODEL",
    "hopper_candidates",
    "default_candidates",
    "WAVE_TILES",
    "ROW64_RULE",
    "splitk_candidates",
    "SPLITK_MODEL",
    "HYBRID_MODEL",
    "HybridSplit",
    "hybrid_split",
    "CLUSTER_RULE",
    "cluster_split",
    "splitk_pdl",
    "epilogue_routes",
    "with_epilogue",
    "EPILOGUE_RULE",
    "MMA_DECODE_RULE",
    "mma_decode",
    "mma_sync_candidates",
    "operand_layout",
    "ParamBuffer",
    "DeviceFacts",
    "OperandFacts",
    "GemmRequest",
    "Staging",
    "FixupLaunch",
    "LaunchDecision",
    "BatchedDecision",
    "staging",
    "STAGE_IN_RULE",
    "stage_in_pick",
    "elem_us",
    "stage_sources",
    "use_wgmma",
    "kernel_operands",
    "launch_grid",
    "decide",
    "decide_batched",
]


# ============================================================================ warning
class SlowPathWarning(UserWarning):
    """``gemm`` runs a slower kernel than this machine could (a missing optional package)."""


_WARNED: Dict[str, bool] = {}


def warn_slow_path(what: str, message: str) -> bool:
    """Warn once per process for ``what``; True when this call warned."""
    if _WARNED.get(what):
        return False
    _WARNED[what] = True
    warnings.warn(message, SlowPathWarning, stacklevel=4)
    return True


# ============================================================================ candidates
def hopper_candidates(tma: bool) -> Tuple[Any, ...]:
    """The wgmma configurations every Hopper rule chooses among (all of them generated and
    proven like any other): warp-specialized persistent TMA kernels of five tile shapes and
    the 2-CTA cluster variant where cuda-python can encode tensor maps, else the cp.async
    kernel's two tile shapes.  The f16/bf16 rule adds :data:`WAVE_TILES`
    (:func:`default_candidates`); the other number types' rule takes these alone."""
    if not tma:
        return (Sm90Config(bm=128, bn=256, stages=4), Sm90Config(bm=128, bn=128, stages=6))
    ws: Dict[str, Any] = dict(loader="tma", schedule="ws")
    return (
        Sm90Config(bm=128, bn=256, stages=4, **ws),
        Sm90Config(bm=128, bn=256, stages=4, cluster=2, **ws),
        Sm90Config(bm=128, bn=128, stages=6, **ws),
        Sm90Config(bm=64, bn=256, stages=5, **ws),
        Sm90Config(bm=64, bn=128, stages=8, **ws),
        Sm90Config(bm=64, bn=64, stages=8, **ws),
    )


#: the schedules of the persistent warp-specialized kernels (at most one CTA per SM, a walk
#: over the tiles, the staged epilogue's 16-byte stores)
PERSISTENT = ("ws", "pingpong")


#: tiles beside :func:`hopper_candidates` for the f16/bf16 products: 128x192 (wgmma N = 192,
#: three 64-row TMA boxes of B per stage).  It removes most of the partial last wave that a
#: 128x256 tile leaves on mid-size outputs (3072^2: 288 tiles of 128x256 are 2.2 waves of 132
#: SMs, so the last wave runs 18% full; 384 tiles of 128x192 are 2.9 waves) and the larger
#: per-tile tail of K-light products; the wave model takes it where that wins
#: (:data:`SM90_MODEL`).  Listed after the others, so a tie keeps the earlier pick.  The batched
#: kernel's rule leaves it out (measured slower there).
WAVE_TILES: Tuple[Any, ...] = (Sm90Config(bm=128, bn=192, stages=4, loader="tma", schedule="ws"),)

#: the 64x192 tile (6 stages) where the unsplit pick of an output of at most ``max_m`` rows
#: is the 64x256 tile (``replaces``): 64x256 tiles fill few of the SMs there (192x8192x28672:
#: 96 tiles on 132 SMs) and 64x192 tiles nearly all (129: 146 us against 190, cuBLAS 162); the
#: wave model weighs the two (:data:`SM90_MODEL`).  Measured on every shape where it changes the
#: pick in a survey of 2010 (26, of 96-512 rows), f16 and bf16, plain and with bias + GELU:
#: faster on all but two shape/type pairs (bf16 96x11008x4096, 3% and 18% slower in two calls;
#: f16 512x2100x8192, 0.3%) (bench/RESULTS.md, "A 64x192 tile for outputs of 96-512 rows").
#: Not weighed against the other picks, where it was not measured better (the 64x64 pick of
#: 512x2100 with K <= 2048: 0.78-1.03 of its speed), nor as split-K's base.
ROW64_RULE: Dict[str, Any] = {
    "tiles": (Sm90Config(bm=64, bn=192, stages=6, loader="tma", schedule="ws"),),
    "replaces": (64, 256),
    "max_m": 512,
}


def default_candidates(tma: bool) -> Tuple[Any, ...]:
    """What :func:`choose_config` chooses among for an f16/bf16 product on Hopper by default:
    :func:`hopper_candidates` and, with TMA, :data:`WAVE_TILES`.

    >>> [c.key() for c in default_candidates(True)[-2:]]
    ['sm90_64x64x64_s8_g8_tma_ws', 'sm90_128x192x64_s4_g8_tma_ws']
    >>> len(default_candidates(False))
    2
    """
    return hopper_candidates(tma) + (WAVE_TILES if tma else ())


#: split-K in the wave model: the fix-up kernel (a launch's fixed time, and its bytes -- S
#: f32 planes read, C written -- at a bandwidth), a floor for the operands' bytes at an
#: effective bandwidth, the gate (split only where the best unsplit pick's tiles fill at
#: most this share of the SMs) and margin (the split must be modelled this much faster),
#: the split counts tried, and the fewest k-blocks (of 64) a chunk may have.  The gate and
#: the floor keep split-K off shapes where it loses (the rule without them picked it 1.16-1.18x
#: slower than the best); fitted to the split-K sweep on the H100 (bench/RESULTS.md, "Split-K
#: for small outputs with a long K": the pick within 1.09x of the fastest candidate).
SPLITK_MODEL: Dict[str, Any] = {
    "fixup_us": 2.5,
    # the serial reduction (reduction="serial": the last unit of each tile sums the planes in
    # the split kernel, one warpgroup per 64-row slice): a fixed tail (plane stores drained,
    # the atomic, the plane loads) and the tile's planes read by one SM at an effective
    # bandwidth, fitted to its tail over the split kernel alone (bench/RESULTS.md, "Split-K's
    # serial reduction, model-checked; the fused epilogue on split-K").  The fix-up kernel was
    # faster on every shape measured there, so plain products take it; the serial reduction
    # is what fuses an epilogue (choose_config(..., epilogue=True)).
    "serial_us": 2.2,
    "serial_gbs": 50.0,
    # what the serial reduction costs beyond its tail over the split kernel, against the
    # fix-up kernel (a PDL launch whose prologue overlaps the split kernel): the median, over
    # the eight split shapes of that section's table, of the measured (serial - fix-up)
    # minus the model's (serial - fix-up) without this term (0.8 .. 5.4 us; every shape
    # measured the serial reduction slower, which the model without it inverted on seven)
    "serial_excess_us": 2.25,
    # decode shapes: split also where the output has at most this many rows (each tile
    # then streams a whole K panel of B; the unsplit pick's tile count does not gate them)
    "decode_m": 16,
    # the split kernel (fix-up reduction) as a programmatic dependent launch of the previous
    # kernel of the stream (the last call's fix-up) where the output has at most this many
    # rows: its launch and prologue overlap that kernel's tail. A large fix-up makes it
    # slower: 512x512x28672 lost 5 us on an H100 (2026-11-24), and 2-3 us in an H200 suite
    # with a 512-row gate (graph replay 0.89-0.93 of cuBLAS, 1.01-1.02 before), while the
    # split shapes of 17-64 rows gained 3-10% back to back (bench/RESULTS.md, "The GEMM
    # kernels as programmatic dependent launches"; the gate was 16 rows before)
    "pdl_split_m": 64,
    "fixup_gbs": 2000.0,
    "hbm_gbs": 8000.0,
    "margin": 1.1,
    "gate": 0.5,
    "splits": (2, 3, 4, 6, 8, 12, 16),
    "min_kblocks": 4,
}


#: split-K reduced inside a thread-block cluster (``SplitKConfig(..., reduction="cluster")``,
#: :mod:`layoutproof.gpu.kernels.splitk_cluster`: no workspace, no fix-up kernel; one CTA per (tile, k
#: chunk)), taken for a plain product with at most ``max_m`` output rows when the ``base``
#: tile (bm, bn, stages) split ``splits`` ways gives between ``fill`` of the SMs and all of
#: them as CTAs, and ``min_k <= K <= max_k``.  The trade: no workspace traffic and no second
#: kernel, against CTAs that must be co-resident in clusters.  64x128 split 2 beat the plane
#: split on the long-K decode shapes up to K = 16384 (not beyond: bf16 at K = 28672 was not
#: faster); clusters of 4 or 8 CTAs cannot keep 128 CTAs resident on 132 SMs (two waves), and
#: splits that leave half the SMs idle lose (bench/RESULTS.md, "Split-K reduced inside a
#: thread-block cluster through distributed shared memory")
CLUSTER_RULE: Dict[str, Any] = {
    "max_m": 16,
    "base": (64, 128, 8),
    "splits": 2,
    "fill": 0.9,
    "min_k": 4096,
    "max_k": 16384,
}


def cluster_split(m: int, n: int, k: int, sms: int = 132) -> Optional[Any]:
    """The cluster split-K configuration :data:`CLUSTER_RULE` takes for an ``m x n x k``
    plain product, or None.

    >>> cluster_split(16, 8192, 8192).key()
    'sm90_64x128x64_s8_g8_tma_ws_sk2c'
    >>> cluster_split(16, 4096, 4096) is None, cluster_split(64, 8192, 8192) is None
    (True, True)
    """
    r = CLUSTER_RULE
    bm, bn, st = r["base"]
    units = -(-m // bm) * -(-n // bn) * r["splits"]
    if m > r["max_m"] or not r["min_k"] <= k <= r["max_k"] or not r["fill"] * sms <= units <= sms:
        return None
    return SplitKConfig(
        Sm90Config(bm=bm, bn=bn, stages=st, loader="tma", schedule="ws"), r["splits"], "cluster"
    )


#: the GEMM kernels without a fix-up launch as programmatic dependents of the stream's
#: previous kernel wherever their proof log holds the launch-ordering claim (every memory
#: access after the grid dependency wait): the launch then overlaps that kernel's tail. Back
#: to back it took 2-20% off the tiled products' calls (1024^3 6.2 -> 5.2 us, 64x11008x4096
#: 28.2 -> 26.6, 4096^3 224 -> 219) and left the host-bound tiny calls as they were
#: (bench/RESULTS.md, "The GEMM kernels as programmatic dependent launches"); False
#: launches them in stream order (the split-K kernels keep :func:`splitk_pdl`)
PDL_PLAIN = True


def splitk_pdl(m: int) -> bool:
    """Whether the runtime launches a split-K kernel with the fix-up reduction as a
    programmatic dependent of the previous kernel of the stream, for an output of ``m`` rows
    (``SPLITK_MODEL["pdl_split_m"]``; the kernel's first statement waits for that grid
    either way: :func:`layoutproof.gpu.kernels.splitk.prove_split_order`).

    >>> splitk_pdl(16), splitk_pdl(64), splitk_pdl(512)
    (True, True, False)
    """
    return m <= SPLITK_MODEL["pdl_split_m"]


#: unsplit mma.sync kernels of 16-row tiles (``GemmConfig(bm=16, ...)``, the cp.async pipeline:
#: one CTA per column tile streams the whole K, no workspace, no second kernel, deterministic) for
#: plain decode products on Hopper, taken by :func:`choose_config` with ``mma=True`` (what
#: ``gemm`` passes for ``path="auto"``), where A is row-major and B row-major (``a_major="k"``,
#: ``b_major="n"``).  ``tiles``: ``(bn, bk, warps_n, stages, partial, per_sm)`` in order; the
#: first whose column tiles number between ``fill`` of the SMs and all of them (one CTA per SM),
#: or, for a tile with ``per_sm = 2``, between ``fill_wide`` of twice the SMs and twice the SMs
#: (two resident CTAs on most SMs), is taken, with ``K >= min_k`` for an output of exactly
#: ``rows`` rows.  Fewer rows (a partial
#: tile: the kernel's guarded, per-chunk loads) take only a tile marked ``partial``, and need
#: ``K >= min_k_partial`` while the tile runs one CTA per SM (``K >= min_k`` where its column
#: tiles put two CTAs on some SMs).
#:
#: The trade: one CTA per column tile streams all of K (no split, no reduction) but only where
#: the column tiles fill the SMs and K is long enough to hide the missing split.  Measured
#: (bench/RESULTS.md, "Unsplit 16-row mma.sync tiles on the decode shapes" on an H100, "The
#: decode rule's picks on the H200"): 16x32x128 s8 beat the split-K pick on the 4096-column
#: shapes with 16 rows (H200 16x4096x11008: 23.5 us against 27.3-27.7), but with fewer rows its
#: two warps' guarded loads lost to the split on the H200 (1x and 4x4096x11008: 31.0-31.4 us
#: against 26.4-27.4; on the H100 the partial tile had been faster), so it takes full tiles only;
#: 16x64x64 (4 warps) s8 beat the cluster pick on the 8192-column shapes, partial tiles
#: included, and with two CTAs per SM on 14336 columns (H200 1x14336x4096: 30.4-30.6 us
#: against the split's 33.2-33.5, 224 CTAs of 80 KB shared memory, two resident per SM).  A
#: partial tile at one CTA per SM needs a long K (1x4096x4096 and 8x4096x4096 were slower than
#: the split-K pick on the H100, where B stays in L2).
#:
#: Outputs of exactly 32 rows with K of at least ``min_k32`` take a 32-row tile of ``tiles32``
#: (``(bn, bk, warps_m, warps_n, stages, per_sm)``) by the same fill tests, and the last
#: (widest) one also where its column tiles number at least ``many`` times the SMs; 17-31 rows
#: take none (their guarded loads lost to the split by 20-25%).  Below ``min_k32`` the wgmma
#: pick with A's 32-row box (:data:`SHORT_A_RULE`) was faster: 32x4096x4096 9.7 us against
#: 10.5, 32x14336x4096 31.2 against 32.3, 32x13824x5120 36.9 against 38.0 (bench/RESULTS.md,
#: "A's TMA box of 16 or 32 rows"); from K = 8192 the tiles held (32x28672x8192 109.3 against
#: 115-118).  Measured on the H200 ("32-row decode tiles", bench/RESULTS.md):
#: 32x32x128 (2x2 warps) s8 on 4096 columns (32x4096x14336 31.9 us against the split's 35.0,
#: 32x4096x11008 25.3 against 28.8), 32x64x64 (1x4) s8 on 8192 (32x8192x8192 33.6 against 45.2)
#: and 32x128x64 (2x4) s6 on 28672 (112.0 against 118.7).
MMA_DECODE_RULE: Dict[str, Any] = {
    "rows": 16,
    "tiles": ((32, 128, 2, 8, False, 1), (64, 64, 4, 8, True, 2)),
    "fill": 0.9,
    "fill_wide": 0.8,
    "min_k": 4096,
    "min_k_partial": 8192,
    "tiles32": ((32, 128, 2, 2, 8, 1), (64, 64, 1, 4, 8, 2), (128, 64, 2, 4, 6, 1)),
    "many": 1.5,
    "min_k32": 8192,
}


def mma_decode(
    m: int, n: int, k: int, problem: Optional[GemmProblem] = None, sms: int = 132
) -> Optional[GemmConfig]:
    """The unsplit 16-row (or 32-row) mma.sync configuration :data:`MMA_DECODE_RULE` takes
    for an ``m x n x k`` plain product, or None.

    >>> mma_decode(16, 4096, 4096).key(), mma_decode(16, 8192, 8192).key()
    ('16x32x128_w1x2_s8_auto_g8', '16x64x64_w1x4_s8_auto_g8')
    >>> mma_decode(1, 4096, 4096) is None, mma_decode(4, 4096, 11008) is None
    (True, True)
    >>> mma_decode(1, 8192, 8192).key(), mma_decode(1, 14336, 4096).key()
    ('16x64x64_w1x4_s8_auto_g8', '16x64x64_w1x4_s8_auto_g8')
    >>> mma_decode(32, 2048, 4096) is None, mma_decode(16, 2048, 4096) is None
    (True, True)
    >>> [mma_decode(32, n, 8192).key() for n in (4096, 8192, 28672)]
    ['32x32x128_w2x2_s8_auto_g8', '32x64x64_w1x4_s8_auto_g8', '32x128x64_w2x4_s6_auto_g8']
    >>> mma_decode(24, 4096, 14336) is None, mma_decode(32, 11008, 4096) is None
    (True, True)
    >>> mma_decode(32, 4096, 4096) is None  # K below min_k32: the wgmma pick, A's box cut
    True
    """
    for nm, v in (("m", m), ("n", n), ("k", k), ("sms", sms)):
        if type(v) is not int or v < 1:
            raise GemmInputError(f"mma_decode: {nm}={v!r} must be a positive int")
    r = MMA_DECODE_RULE
    prob = problem or GemmProblem()
    if (prob.a_major, prob.b_major, prob.batch) != ("k", "n", "") or k < r["min_k"]:
        return None

    def fills(bn: int, per_sm: int) -> Tuple[bool, bool]:
        """Whether the column tiles fill one CTA per SM, or two on most SMs."""
        tiles = -(-n // bn)
        one = r["fill"] * sms <= tiles <= sms
        return one, per_sm >= 2 and r["fill_wide"] * 2 * sms <= tiles <= 2 * sms

    if m == 32:
        if k < r["min_k32"]:
            return None
        last = len(r["tiles32"]) - 1
        for i, (bn, bk, wm, wn, st, per_sm) in enumerate(r["tiles32"]):
            one, two = fills(bn, per_sm)
            if one or two or (i == last and -(-n // bn) >= r["many"] * sms):
                return GemmConfig(bm=32, bn=bn, bk=bk, warps_m=wm, warps_n=wn, stages=st).validate()
        return None
    if m > r["rows"]:
        return None
    full = m == r["rows"]
    for bn, bk, wn, st, partial, per_sm in r["tiles"]:
        one, two = fills(bn, per_sm)
        if not (full or partial) or not (one or two):
            continue
        if full or two or k >= r["min_k_partial"]:
            return GemmConfig(bm=r["rows"], bn=bn, bk=bk, warps_m=1, warps_n=wn, stages=st).validate()
    return None


def splitk_candidates(
    m: int, n: int, k: int, base: Sequence[Any], sms: int = 132, reduction: str = "kernel"
) -> Tuple[Any, ...]:
    """Split-K variants of the warp-specialized, cluster-free configurations in ``base``
    for this shape: only where the output has fewer tiles than ``sms``, the split keeps the
    units (tiles x splits) within one wave, and every chunk has at least
    ``SPLITK_MODEL["min_kblocks"]`` k-blocks.  ``reduction``: ``"serial"`` (the planes
    summed in the split kernel by each tile's last unit) or ``"kernel"`` (a fix-up kernel;
    none when ``m`` exceeds its grid's 65535 rows)."""
    if m > 65535 and reduction == "kernel":
        return ()
    kt = -(-k // 64)
    out: List[Any] = []
    for cfg in base:
        if getattr(cfg, "schedule", "") != "ws" or getattr(cfg, "cluster", 1) != 1:
            continue
        tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
        if tiles >= sms:
            continue
        for sp in SPLITK_MODEL["splits"]:
            if tiles * sp <= sms and kt >= sp * SPLITK_MODEL["min_kblocks"]:
                out.append(SplitKConfig(cfg, sp, reduction))
    return tuple(out)


def mma_sync_candidates() -> Tuple[GemmConfig, ...]:
    """The mma.sync configurations the default rule chooses among (non-Hopper GPUs)."""
    return (
        GemmConfig(bm=128, bn=256, bk=32, warps_m=2, warps_n=4, stages=3),
        GemmConfig(bm=128, bn=128, bk=32, warps_m=2, warps_n=2, stages=4),
        GemmConfig(bm=64, bn=128, bk=32, warps_m=2, warps_n=2, stages=4, min_blocks=2),
        GemmConfig(bm=64, bn=64, bk=32, warps_m=2, warps_n=2, stages=4),
    )


# ============================================================================ the model
# Per configuration key: (dense rate in TFLOP/s with every SM busy, fixed microseconds per
# tile).  Shared: per-SM operand bandwidth in GB/s.  Fitted (least squares on log time) to
# every candidate timed on 24 shapes of the gemm_suite sweep (f16, CUDA-graph replay) on an
# H100 80GB HBM3, 132 SMs: the rule's pick within 1.05x of the fastest candidate on every
# aligned shape (bench/RESULTS.md, "bench/gemm_suite.py — gemm as users call it").
SM90_MODEL: Dict[str, Any] = {
    "bw_sm_gbs": 120.0,
    "rates": {
        "sm90_128x256x64_s4_g8_tma_ws": (805.0, 2.2),
        "sm90_128x256x64_s4_g8_tma_ws_c2": (795.0, 2.6),
        "sm90_128x128x64_s6_g8_tma_ws": (676.0, 1.06),
        "sm90_64x256x64_s5_g8_tma_ws": (709.0, 1.67),
        "sm90_64x128x64_s8_g8_tma_ws": (460.0, 0.58),
        "sm90_64x64x64_s8_g8_tma_ws": (337.0, 0.41),
        # 128x192: measured on an H200 beside 128x256 (bench/RESULTS.md, "Tiles of 192
        # columns against wave quantization"): where both tiles fill their waves alike its rate
        # is 0.94 of 128x256's (6144^3, 5120^3, 3584^3); its fixed cost scales with the tile's
        # area like the others' (2.2 us for 32K outputs, 1.06 for 16K: 1.65 for 24K), which
        # the K-light products (4096x4096x256, 8192x8192x256) confirm
        "sm90_128x192x64_s4_g8_tma_ws": (757.0, 1.3),
        # 64x192: 18 shapes of 96-512 rows in one wave or three, H200 (bench/RESULTS.md, "A
        # 64x192 tile for outputs of 96-512 rows"): 640-760 TFLOP/s where the MMA bounds the
        # tile (192x8192x28672 639, 384x4096x11008 704), 480-600 on the HBM-bound 96-128-row
        # ones, which the model's per-SM bandwidth prices for every tile alike
        "sm90_64x192x64_s6_g8_tma_ws": (680.0, 1.2),
        # the cp.async kernels (no cuda-python): not fitted; below the TMA kernels' rates
        "sm90_128x256x64_s4_g8": (600.0, 2.2),
        "sm90_128x128x64_s6_g8": (520.0, 1.1),
    },
}
# The mma.sync kernel (GPUs other than sm_90, or path="mma.sync"): fitted the same way to the
# four candidates timed on the same 24 shapes on the H100 (pick within 1.06x of the fastest,
# the same section).  Not measured on a GPU
# other than the H100: there the absolute numbers differ, and only their proportions matter
# for ranking the tiles.
SM80_MODEL: Dict[str, Any] = {
    "bw_sm_gbs": 57.5,
    "rates": {
        "128x256x32_w2x4_s3_auto_g8": (438.0, 6.3),
        "128x128x32_w2x2_s4_auto_g8": (350.0, 5.0),
        "64x128x32_w2x2_s4_auto_g8_b2": (284.0, 4.45),
        "64x64x32_w2x2_s4_auto_g8": (232.0, 2.8),
    },
}


def _blocks_per_sm(cfg: Any) -> int:
    """Resident CTAs per SM of a non-persistent kernel (shared memory and registers)."""
    if getattr(cfg, "schedule", "") in PERSISTENT:
        return 1
    smem = cfg.smem_bytes
    by_smem = max(1, (228 * 1024) // max(1, smem + 1024))
    if isinstance(cfg, GemmConfig):
        tm, tn = cfg.warp_tile
        regs = min(255, 64 + tm * tn // 32)
        by_regs = max(1, 65536 // (cfg.threads * regs))
        return max(1, min(by_smem, by_regs, 2048 // cfg.threads))
    return 1  # the wgmma kernels' __launch_bounds__(threads, 1)


def estimate_us(
    cfg: Any,
    m: int,
    n: int,
    k: int,
    *,
    sms: int = 132,
    model: Optional[Dict[str, Any]] = None,
    k_splits: int = 1,
) -> float:
    """The wave model's time for C (m x n) = A (m x k) @ B (k x n) with ``cfg``.

    Tiles are walked in waves of ``sms`` (persistent kernels: one CTA per SM, a cluster of
    ``c`` CTAs takes ``c`` SMs; others: the resident CTAs per SM); a tile costs the larger
    of its MMA time at the config's rate and its operand bytes at the per-SM bandwidth, plus
    a fixed cost (pipeline fill, epilogue).  Unknown configs get the slowest known rate.
    ``k_splits``: the tiles are split ``k_splits`` ways along K (units = tiles x splits);
    a ``SplitKConfig`` adds its fix-up kernel (:data:`SPLITK_MODEL`)."""
    if isinstance(cfg, FixupEpilogueConfig):  # an unsplit kernel, then a one-plane fix-up
        return _plane_route_us(cfg, m, n, k, sms, model)
    if isinstance(cfg, MmaEpilogueConfig):  # the decode tile, at its operands' bytes
        return _operand_floor_us(m, n, k)
    if model is None:
        model = SM90_MODEL if not isinstance(cfg, GemmConfig) else SM80_MODEL
    if getattr(cfg, "schedule", "") == "pingpong":  # modelled as the cooperative tile it replaces
        cfg = replace(cfg, bm=128, stages=4, schedule="ws", group_m=PINGPONG_DEFAULT.group_m)
    splits = getattr(cfg, "splits", 1)
    if splits > 1:  # split-K: tiles x splits units over k / splits each, then the fix-up
        t = estimate_us(cfg.base, m, n, k, sms=sms, model=model, k_splits=splits)
        # the operands cross memory once whatever the split: a floor at an effective
        # bandwidth (fitted: L2 keeps part of them between calls)
        floor = _operand_floor_us(m, n, k)
        if getattr(cfg, "reduction", "kernel") == "serial":  # one SM reads a tile's planes
            plane = splits * min(cfg.bm, m) * min(cfg.bn, n) * 4
            tail = SPLITK_MODEL["serial_us"] + SPLITK_MODEL["serial_excess_us"]
            return max(t, floor) + tail + plane / (SPLITK_MODEL["serial_gbs"] * 1e3)
        fix = (splits * 4 + 2) * m * n / (SPLITK_MODEL["fixup_gbs"] * 1e3)
        return max(t, floor) + SPLITK_MODEL["fixup_us"] + fix
    rates = model["rates"]
    # a short A box (Sm90Config.a_rows) runs at its full-box kernel's fitted rate
    rkey = replace(cfg, a_rows=64).key() if getattr(cfg, "a_rows", 64) != 64 else cfg.key()
    rate, fixed = rates.get(rkey, min(rates.values()))
    cl = getattr(cfg, "cluster", 1)
    gm, gn = -(-m // cfg.bm), -(-n // cfg.bn)
    units = -(-gm // cl) * gn * k_splits  # a cluster's CTAs run side by side
    if k_splits > 1:  # each unit runs one chunk: ceil(KT / splits) k-blocks of 64
        kt = -(-k // 64)
        k = -(-kt // k_splits) * 64
    # CTAs sharing one SM (and its bandwidth): the resident limit, or fewer when the grid
    # is small (the hardware spreads CTAs over the SMs first)
    bps = max(1, min(_blocks_per_sm(cfg), -(-units // max(1, sms // cl))))
    waves = -(-units // max(1, (sms // cl) * bps))
    rows, cols = min(cfg.bm, m), min(cfg.bn, n)
    flops = 2.0 * cfg.bm * cfg.bn * k  # the MMA runs on whole tiles
    t_mma = flops / (rate * 1e12 / (sms * bps)) * 1e6
    t_mem = (rows + cols) * k * 2 / (model["bw_sm_gbs"] * 1e9 / bps) * 1e6
    return waves * (max(t_mma, t_mem) + fixed)


def choose_config(
    m: int,
    n: int,
    k: int,
    problem: Optional[GemmProblem] = None,
    *,
    hopper: bool,
    tma: bool,
    sms: int = 132,
    candidates: Optional[Sequence[Any]] = None,
    epilogue: bool = False,
    cluster: bool = True,
    mma: bool = False,
) -> Any:
    """The default configuration for this shape: the candidate the wave model
    (:func:`estimate_us`) says is fastest; ties go to the earlier (larger-tile) candidate.
    With the default candidates on a Hopper GPU with TMA, a split-K variant
    (:func:`splitk_candidates`) replaces that pick where the pick's tiles fill at most
    ``SPLITK_MODEL["gate"]`` of the SMs and the split's modelled time (with an HBM floor
    and the fix-up) beats it by ``SPLITK_MODEL["margin"]``; outputs of at most
    ``SPLITK_MODEL["decode_m"]`` rows are split by the same test whatever their tile count.
    The split sums its planes with the fix-up kernel, or with ``epilogue=True`` (a fused
    bias / activation / alpha-beta) in the kernel (``reduction="serial"``, its own cost
    in the model).  A plain product that :func:`cluster_split` covers (at most 16 rows,
    measured faster) takes the cluster reduction instead (``cluster=False``: never).  With
    ``mma=True`` (a caller that may run the mma.sync kernel: ``gemm``'s ``path="auto"``), a
    plain product on Hopper that :func:`mma_decode` covers (decode shapes, measured faster)
    takes that unsplit 16-row mma.sync kernel before any of this.  With ``epilogue=True``
    and the default candidates on Hopper with TMA, the pick is the faster (wave model) of
    :func:`epilogue_routes`: the fused kernels above, or the plain product's pick with the
    epilogue moved into the fix-up kernel.  No kernel is generated or timed here."""
    for nm, v in (("m", m), ("n", n), ("k", k), ("sms", sms)):
        if type(v) is not int or v < 1:
            raise GemmInputError(f"choose_config: {nm}={v!r} must be a positive int")
    auto = candidates is None
    if auto and hopper and tma and epilogue and EPILOGUE_RULE["fixup"]:
        return min(epilogue_routes(m, n, k, problem, sms=sms, mma=mma), key=lambda r: r[0])[2]
    return _wave_pick(m, n, k, problem, hopper, tma, sms, candidates, epilogue, cluster, mma)


#: Where the ping-pong kernel (``wgmma_pingpong``: consumer warpgroups owning alternate 64-row
#: tiles, one's epilogue overlapping the other's main loop) replaces the cooperative
#: warp-specialized pick of an unsplit f16/bf16 product (bench/RESULTS.md, "The ping-pong
#: schedule", "The ping-pong schedule at mid K" and "The ping-pong kernel's raster"; H200):
#: per route (a fused epilogue or a plain product), the picks (bm, bn) it replaces and the
#: largest K for each, and past those bounds the wave counts from which it replaces them at
#: any K.  With an epilogue: the 128x256 picks to K = 5120 (1.035-1.086 of the cooperative
#: pick), the 128x192 picks to K = 1024 (the K-light 6144x6144x256 / 8192x8192x256 gain
#: 12-25%; at 3072^3, where the 192-column tile was picked against wave quantization, the
#: swap measured 6-8% slower), where the pick's tiles make at least one wave (2048^3 with
#: bias + GELU, 64 tiles of 128x256: the cooperative kernel 1.12x faster; each ping-pong CTA
#: there holds one 64-row tile, one consumer idle), and past K = ``few_waves_k`` only where
#: they make ``many_waves`` waves (2560^3, 200 tiles: the cooperative kernel 2-3% faster).
#: Plain: the 128x256 and 128x192 picks to K = 512 (4096x4096x256: 1.105; 8192x8192x256
#: 1.5-2% faster; 8192x8192x512 on the 128x192 pick 1.06-1.09); past that, the 128x256 pick
#: of at least one full wave to K = 2048 (4096x4096x1024 1.11, 8192x8192x1024 1.04-1.14,
#: 8192x8192x2048 1.06-1.08), and to K = 6144 where its last wave is less than half full
#: (5120^3, 8 tiles in the last of 7 waves: 1.01-1.10; 4096x11008x4096 1.09).  At any K, the
#: 128x256 pick of ``many_waves`` waves or more (plain) or ``epilogue_waves`` (fused): with
#: the ping-pong raster of ``group_m`` tile rows (16 x 64 rows, the cooperative raster's
#: 8 x 128; with 8 the ping-pong kernel read 38% more from DRAM than the cooperative one at
#: 4096^3) the ping-pong kernel, under sustained load, measured 1-4% faster than the
#: cooperative kernel on 4096^3, 3584^3, 4096x14336x4096, 6144^3 and 8192x8192x4096, and
#: with bias + GELU on 8192^3 and 6144^3; in the suite's short bursts plain 4096^3 and 3584^3
#: (3-4 waves) measured 3% slower, 8192^3 and 4096x14336x4096 (13-16 waves) 2-3% faster.  A
#: plain product of K <= ``light_k`` (4 k-tiles) runs the ping-pong kernel with
#: ``light_stages`` stages: one tile's k-tiles (4096x4096x256 1.04-1.07 of the five-stage
#: kernel, 6144x6144x256 1.04, 8192x8192x256 1.01-1.08; at K = 512 within noise, from
#: K = 1024 4% slower; with a fused epilogue within noise).  A batched
#: product takes the same swap where each batch has at least ``batched_m`` rows and K is past
#: ``light_k`` (8 x [4096x4096x512] 1.04-1.16x faster, 4 x [4096x4096x1024] 1.10, 8 x
#: [4096x2048x2048] 1.05; with 256-2048 rows a batch -- 32 x [512^3], 8 x [2048x2048x128],
#: 16 x [1024^3], 4 x [2048^3], 64 x [256^3] -- and at 4 x [8192x4096x256] the cooperative
#: kernel was 1-18% faster): "Batched products on the ping-pong kernel".
PINGPONG_RULE: Dict[str, Any] = {
    "epilogue": {(128, 256): 5120, (128, 192): 1024},
    "plain": {(128, 256): 512, (128, 192): 512},
    "plain_full_wave": {(128, 256): 2048},
    "plain_part_wave": {(128, 256): 6144},
    "part_wave": 0.5,
    "many_waves": {(128, 256): 8},
    "epilogue_waves": {(128, 256): 2},
    "few_waves_k": 512,
    "group_m": 16,
    "light_k": 256,
    "light_stages": 4,
    "batched_m": 4096,
    "dtypes": ("f16", "bf16"),
}


def pingpong_pick(stages: int = PINGPONG_DEFAULT.stages) -> Sm90Config:
    """The ping-pong configuration the rule swaps in: :data:`PINGPONG_DEFAULT`'s 64x256 tile
    with ``stages`` stages (its five by default) and the raster of
    ``PINGPONG_RULE["group_m"]`` tile rows.

    >>> pingpong_pick(5).key()
    'sm90_64x256x64_s5_g16_tma_pp'
    """
    return replace(PINGPONG_DEFAULT, stages=stages, group_m=PINGPONG_RULE["group_m"])


def pingpong_swap(
    cfg: Any,
    k: int,
    problem: Optional[GemmProblem],
    epilogue: bool,
    waves: Optional[Tuple[int, int]] = None,
) -> Any:
    """``cfg``, or the ping-pong kernel (:func:`pingpong_pick`) where :data:`PINGPONG_RULE`
    says the ping-pong schedule beats that unsplit pick (a batched problem too: the batches'
    tiles walk end to end on either kernel).  ``waves`` is ``(tiles, sms)``: ``cfg``'s tile
    count (over every batch) and the SMs they run on (the wave conditions; without it only
    the K bounds apply).

    >>> ws = Sm90Config(bm=128, bn=256, stages=4, loader="tma", schedule="ws")
    >>> pingpong_swap(ws, 512, None, False).key(), pingpong_swap(ws, 8192, None, True).key()
    ('sm90_64x256x64_s5_g16_tma_pp', 'sm90_128x256x64_s4_g8_tma_ws')
    >>> pingpong_swap(ws, 256, None, False).key(), pingpong_swap(ws, 256, None, True).key()
    ('sm90_64x256x64_s4_g16_tma_pp', 'sm90_64x256x64_s5_g16_tma_pp')

    On 132 SMs: 4096^3 makes 512 tiles of 128x256 (3.9 waves), 8192^3 2048, 2560^3 200 (1.5
    waves, the last half full), 2048^3 64:

    >>> plain = [(4096, 512), (8192, 2048), (2560, 200)]
    >>> [pingpong_swap(ws, k, None, False, (t, 132)).schedule for k, t in plain]
    ['ws', 'pingpong', 'ws']
    >>> fused = [(8192, 2048), (2560, 200), (2048, 64)]
    >>> [pingpong_swap(ws, k, None, True, (t, 132)).schedule for k, t in fused]
    ['pingpong', 'ws', 'ws']
    """
    prob = problem or GemmProblem()
    if (
        not isinstance(cfg, Sm90Config)
        or cfg.schedule != "ws"
        or cfg.loader != "tma"
        or cfg.cluster != 1
        or cfg.a_rows != 64
        or prob.dtype not in PINGPONG_RULE["dtypes"]
    ):
        return cfg
    r, key = PINGPONG_RULE, (cfg.bm, cfg.bn)
    many = r["epilogue_waves" if epilogue else "many_waves"].get(key)
    if epilogue and waves is not None and waves[0] < waves[1]:  # under one wave: the cooperative tile
        return cfg
    few = waves is not None and many is not None and waves[0] < many * waves[1]
    if k <= r["epilogue" if epilogue else "plain"].get(key, 0):
        if epilogue and few and k > r["few_waves_k"]:  # one to two waves past few_waves_k
            return cfg
        if not epilogue and k <= r["light_k"]:
            return pingpong_pick(r["light_stages"])
        return pingpong_pick()
    if waves is None:
        return cfg
    tiles, sms = waves
    if sms < 1 or tiles < sms:  # less than one wave: the cooperative tile
        return cfg
    if many is not None and not few:
        return pingpong_pick()
    if epilogue:
        return cfg
    if k <= r["plain_full_wave"].get(key, 0):
        return pingpong_pick()
    last = tiles % sms
    if 0 < last < r["part_wave"] * sms and k <= r["plain_part_wave"].get(key, 0):
        return pingpong_pick()
    return cfg


def _wave_pick(
    m: int,
    n: int,
    k: int,
    problem: Optional[GemmProblem],
    hopper: bool,
    tma: bool,
    sms: int,
    candidates: Optional[Sequence[Any]],
    epilogue: bool,
    cluster: bool,
    mma: bool,
) -> Any:
    """:func:`choose_config` without the epilogue routes (the fused kernels' pick for
    ``epilogue=True``)."""
    auto = candidates is None
    if auto and hopper and mma and not epilogue:
        dec = mma_decode(m, n, k, problem, sms)
        if dec is not None:
            return dec
    if auto and hopper and tma:
        short = _short_a_pick(m, n, k, problem, sms, epilogue, cluster)
        if short is not None:
            return short
    if candidates is None:
        candidates = default_candidates(tma) if hopper else mma_sync_candidates()
    best = _fastest(candidates, m, n, k, sms)
    if best is None:
        raise GemmInputError("choose_config: no candidate configuration")
    top = (getattr(best[2], "bm", 0), getattr(best[2], "bn", 0))
    if auto and hopper and tma and top == ROW64_RULE["replaces"] and m <= ROW64_RULE["max_m"]:
        row64 = _fastest(ROW64_RULE["tiles"], m, n, k, sms)
        if row64 is not None and row64[0] < best[0]:
            best = row64
    if auto and hopper and tma:
        # split-K where the fastest unsplit kernel leaves most SMs idle (its tiles fill at
        # most SPLITK_MODEL["gate"] of them) and the model says it gains a margin
        cfg = best[2]
        tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
        if tiles <= SPLITK_MODEL["gate"] * sms or m <= SPLITK_MODEL["decode_m"]:
            red = "serial" if epilogue else "kernel"
            sk = _fastest(splitk_candidates(m, n, k, candidates, sms, red), m, n, k, sms)
            if sk is not None and sk[0] * SPLITK_MODEL["margin"] < best[0]:
                cl = cluster_split(m, n, k, sms) if cluster and not epilogue else None
                return sk[2] if cl is None else cl
        return pingpong_swap(best[2], k, problem, epilogue, (tiles, sms))
    return best[2]


#: Outputs of at most 32 rows with a K-major f16/bf16 A take the pick of a 64-row output with
#: A's TMA box cut to 16 or 32 rows (:attr:`Sm90Config.a_rows
#: <layoutproof.gpu.kernels.wgmma_core.Sm90Config.a_rows>`), where that pick is a 64-row
#: warp-specialized kernel (unsplit or split-K) and no mma.sync decode tile took the shape.
#: A batched product whose matrices have at most 32 rows takes the batched kernel's pick
#: among its 64-row tiles with the box cut likewise (H200, 8 shapes of 1-32 rows, f16 and
#: bf16: 8x[16x4096x14336] 233 us against 291 without the box; the others 1-5% faster).
#: A 64-row box over fewer rows zero-fills the rest, and the kernel ran up to twice as long
#: as over 64 rows: the split-K picks for decode rows were that cost's workaround.  Measured
#: on the H200 (bench/RESULTS.md, "A's TMA box of 16 or 32 rows"): 16x6144x4096 13.2 us
#: against the split pick's 19.7 (cuBLAS 13.6), 24x5120x13824 38.4 against 56.0.
#: ``rows``: the box rows offered, smallest first (empty turns the rule off).
#:
#: Where the ``tile``'s columns (``(bn, stages)``, 64 rows) number at most the SMs, the pick is
#: that tile instead, split ``S`` ways for the largest ``S`` of ``SPLITK_MODEL["splits"]``
#: whose units still fit one wave (tiles x S <= SMs; chunks of at least
#: ``SPLITK_MODEL["min_kblocks"]`` k-blocks), unsplit where none does (``fill``; False: the
#: 64-row pick everywhere).  The wave model priced the short box like the full one and split
#: wider tiles further (4096 columns: 64x256 split 8), where one wave of 64x64 units measured
#: fastest on all 12 shapes timed, 1-24 rows of 4096 columns with K 8192-28672 (1x4096x14336
#: 31.4 us against the 64x256 split 8's 33.0, 24x4096x28672 59.9 against 63.8); on 5120-8192
#: columns the unsplit 64x64 tile beat every split (16x5120x5120 15.7 us, the next 17.0).
SHORT_A_RULE: Dict[str, Any] = {"rows": (16, 32), "fill": True, "tile": (64, 8)}

#: Operands read in place (:attr:`Sm90Config.elem_loads`) where the plan would otherwise copy
#: one into a padded buffer each call and :func:`stage_in_pick` does not stage it inside the
#: launch: the mono cp.async kernel ``tile`` (bm, bn, stages)
#: with two-byte loads, taken for plain 2-D products whose estimated time
#: ``us0 + us_kt * k-tiles * waves`` is at most ``max_us``.  The copy costs about 6.6 us of
#: host time per call (``cudaMemcpy2DAsync``) on top of the launch, so a call whose kernel
#: runs shorter than the staged call takes to issue (17.5-20.6 us) is issued sooner in one
#: launch; longer kernels keep the copy, whose TMA kernel runs 1.2-1.9x faster on the shapes
#: below and 2-4x on larger ones.  Fitted on the
#: H200 (bench/RESULTS.md, "Operands read in place"): 512x512x500 9.3 us (8 k-tiles, one
#: wave), 100x3000x777 14.2 (13), 256x1000x1001 17.4 (16), 1000x3000x777 40.3 (13, 3 waves).
#: Where the estimate is at most ``first_us`` the in-place kernel is taken even where the
#: kernel could stage the operand in the launch: a call of so short a kernel is bound by its
#: host time, and the in-place launch issues 1.4-1.7 us sooner (512x512x500 back to back:
#: 10.8 us a call against 12.3; bench/RESULTS.md, "Operands staged in the launch").
ELEM_RULE: Dict[str, Any] = {"tile": (64, 128, 6), "us0": 1.3, "us_kt": 1.0, "max_us": 18.0, "first_us": 10.0}


def _short_a_pick(
    m: int, n: int, k: int, problem: Optional[GemmProblem], sms: int, epilogue: bool, cluster: bool
) -> Any:
    """:data:`SHORT_A_RULE`'s pick for an ``m``-row output, or None where the rule does not
    apply (the caller's rule goes on)."""
    rows = short_a_rows(m, problem)
    if rows is None:
        return None
    bn, stages = SHORT_A_RULE["tile"]
    tiles = -(-n // bn)
    if SHORT_A_RULE["fill"] and tiles <= sms:
        kb = -(-k // 64)
        fit = [
            s for s in SPLITK_MODEL["splits"] if tiles * s <= sms and kb // s >= SPLITK_MODEL["min_kblocks"]
        ]
        base = Sm90Config(bm=64, bn=bn, stages=stages, loader="tma", schedule="ws", a_rows=rows).validate()
        if not fit:
            return base
        return SplitKConfig(base, max(fit), "serial" if epilogue else "kernel").validate()
    # the 64-row output's pick, its A box cut to the output's rows
    return with_a_rows(_wave_pick(64, n, k, problem, True, True, sms, None, epilogue, cluster, False), rows)


def short_a_rows(m: int, problem: Optional[GemmProblem]) -> Optional[int]:
    """The rows of A's box :data:`SHORT_A_RULE` gives an ``m``-row output, or None.

    >>> short_a_rows(1, None), short_a_rows(17, None), short_a_rows(33, None)
    (16, 32, None)
    >>> short_a_rows(8, GemmProblem("m", "n")) is None  # an M-major A: no short box
    True
    >>> short_a_rows(8, GemmProblem("k", "n", batch="ab"))  # each batch's rows (M)
    16
    """
    prob = problem or GemmProblem()
    if prob.a_major != "k" or prob.dtype not in ("f16", "bf16"):
        return None
    return next((r for r in SHORT_A_RULE["rows"] if 0 < r and m <= r), None)


def with_a_rows(cfg: Any, rows: int) -> Any:
    """``cfg`` with A's box of ``rows`` rows: a 64-row warp-specialized :class:`Sm90Config`
    without a cluster, or a split-K configuration on one; None for any other kernel.

    >>> with_a_rows(Sm90Config(bm=64, bn=64, stages=8, loader="tma", schedule="ws"), 16).key()
    'sm90_64x64x64_s8_g8_tma_ws_r16'
    >>> with_a_rows(Sm90Config(bm=128, bn=256, loader="tma", schedule="ws"), 16) is None
    True
    """
    if isinstance(cfg, SplitKConfig):
        base = with_a_rows(cfg.base, rows)
        return None if base is None else replace(cfg, base=base).validate()
    if not isinstance(cfg, Sm90Config):
        return None
    try:  # Sm90Config.validate says which kernels take the short box
        return replace(cfg, a_rows=rows).validate()
    except GemmConfigError:
        return None


#: the epilogue's routes (:func:`epilogue_routes`): ``fixup`` -- weigh the plain product's
#: pick with the epilogue moved into the fix-up kernel (False: only the fused kernels, the
#: rule before it; a switch for benchmarks that measure both); ``dtypes``, ``outs``: the
#: operand and output types the fix-up epilogue takes
EPILOGUE_RULE: Dict[str, Any] = {"fixup": True, "dtypes": tuple(DTYPES), "outs": ("f16", "bf16", "f32")}


def _operand_floor_us(m: int, n: int, k: int) -> float:
    """The operands' bytes at ``SPLITK_MODEL["hbm_gbs"]``: split-K's floor, and the mma.sync
    decode tiles' model time (they are not in the fitted rates; see :func:`_plane_route_us`)."""
    return (m + n) * k * 2 / (SPLITK_MODEL["hbm_gbs"] * 1e3)


def _plane_route_us(cfg: Any, m: int, n: int, k: int, sms: int, model: Optional[Dict[str, Any]]) -> float:
    """The wave model's time of an unsplit kernel storing one f32 plane, then the one-plane
    fix-up (its launch and bytes: the plane read, C written, as the split's fix-up).  The
    mma.sync decode tiles (:data:`MMA_DECODE_RULE`) are not in the fitted rates: where
    the rule takes one, it was measured faster than the split-K pick, whose floor is the
    operands' bytes at ``SPLITK_MODEL["hbm_gbs"]``; it is modelled at that floor."""
    base = cfg.base
    if isinstance(base, GemmConfig):
        t = _operand_floor_us(m, n, k)
    else:
        t = estimate_us(base, m, n, k, sms=sms, model=model)
    return t + SPLITK_MODEL["fixup_us"] + 6 * m * n / (SPLITK_MODEL["fixup_gbs"] * 1e3)


def epilogue_routes(
    m: int, n: int, k: int, problem: Optional[GemmProblem] = None, *, sms: int = 132, mma: bool = False
) -> List[Tuple[float, str, Any]]:
    """The kernels a fused epilogue (bias, activation, alpha/beta) may run on for an ``m x n
    x k`` product on Hopper with TMA, as ``(model us, route, config)``, the configurations
    without the call's epilogue fields (:func:`decide` adds them):

    * ``"fused"`` -- the fused kernels' pick (the epilogue in the GEMM kernel: the unsplit
      epilogue kernel, or split-K with the serial reduction);
    * ``"fixup"`` -- the plain product's pick with the epilogue moved into the fix-up kernel
      (:func:`~layoutproof.gpu.kernels.splitk.reduce_epilogue_ir`): its split-K (the
      cluster reduction's shapes split with the fix-up instead), or its unsplit 16-row
      mma.sync decode tile (``mma=True``) storing one f32 plane that a one-plane fix-up
      turns into C (:class:`~layoutproof.gpu.kernels.splitk.FixupEpilogueConfig`);
    * ``"mma"`` -- that decode tile with the epilogue in its own pair stores
      (:class:`~layoutproof.gpu.kernels.mma_epilogue.MmaEpilogueConfig`: no plane, no
      second kernel), listed first and priced at most at the fused pick's time (the tile
      was measured faster than the wgmma picks on the plain product); a call with
      alpha/beta (a C input) runs the fix-up route's plane instead (:func:`decide`).

    Where the plain pick is an unsplit wgmma kernel the fused kernel does the same work
    without the fix-up: only ``"fused"`` is listed.

    >>> [(r, c.key()) for _, r, c in epilogue_routes(512, 512, 28672)]
    [('fused', 'sm90_64x256x64_s5_g8_tma_ws_sk8s'), ('fixup', 'sm90_64x256x64_s5_g8_tma_ws_sk8')]
    >>> min(epilogue_routes(512, 512, 28672))[1]
    'fixup'
    """
    prob = problem or GemmProblem()
    fused = _wave_pick(m, n, k, prob, True, True, sms, None, True, False, False)
    out = [(estimate_us(fused, m, n, k, sms=sms), "fused", fused)]
    if prob.dtype not in EPILOGUE_RULE["dtypes"] or prob.out not in EPILOGUE_RULE["outs"] or m > 65535:
        return out
    plain = _wave_pick(m, n, k, prob, True, True, sms, None, False, False, mma)
    if isinstance(plain, GemmConfig):
        route: Any = FixupEpilogueConfig(plain)
        # the same tile with the epilogue in its own pair stores (no plane, no second kernel):
        # the decode rule takes the tile only where it measured faster than the wgmma picks,
        # and the stores add only the epilogue's arithmetic, so it is priced at the operands'
        # bytes or the fused pick's model time where that is lower (the wave model has no HBM
        # floor), and listed first: it wins ties
        mma_ep = MmaEpilogueConfig(plain)
        out.insert(0, (min(estimate_us(mma_ep, m, n, k, sms=sms), out[0][0]), "mma", mma_ep))
    elif isinstance(plain, SplitKConfig) and plain.reduction == "kernel":
        route = plain
    else:
        return out
    out.append((estimate_us(route, m, n, k, sms=sms), "fixup", route))
    return out


def _fastest(cands: Sequence[Any], m: int, n: int, k: int, sms: int) -> Optional[Tuple[float, int, Any]]:
    """(model time, index, config) of the fastest candidate; ties go to the earlier one."""
    best: Optional[Tuple[float, int, Any]] = None
    for i, cfg in enumerate(cands):
        t = estimate_us(cfg, m, n, k, sms=sms)
        if best is None or t < best[0] * (1 - 1e-9):
            best = (t, i, cfg)
    return best


# ============================================================================ hybrid
#: Data-parallel rows plus a split-K tail (:func:`hybrid_split`, launched by
#: :class:`layoutproof.gpu.host.streamk.HybridPlan`).  ``gap_us``: the tail launch after the
#: persistent kernel in stream order (a launch and the tail's pipeline fill); ``margin``: the
#: hybrid must be modelled this much faster than the unsplit pick; ``rows_tried``: how many
#: row cuts below the largest one that fills whole waves are weighed.
HYBRID_MODEL: Dict[str, Any] = {
    "gap_us": 3.0,
    "margin": 1.04,
    "rows_tried": 3,
}


@dataclass(frozen=True)
class HybridSplit:
    """C = A @ B as two launches over a row partition of C: the persistent data-parallel
    kernel ``main`` on rows ``[0, rows)`` (``rows`` a multiple of ``main.bm``, its tiles
    fill whole waves or fewer) and the split-K kernel ``tail`` (fix-up reduction) on rows
    ``[rows, m)``, whose few tiles, split along K, fill the SMs that a last partial wave
    of ``main`` would leave idle.  ``model_us``: the wave model's time of both launches;
    ``unsplit_us``: that of the unsplit pick it replaces."""

    main: Any
    rows: int
    tail: Any
    model_us: float
    unsplit_us: float

    def key(self) -> str:
        return f"{self.main.key()}_r{self.rows}+{self.tail.key()}"


def hybrid_split(
    m: int,
    n: int,
    k: int,
    *,
    sms: int = 132,
    candidates: Optional[Sequence[Any]] = None,
    model: Optional[Dict[str, Any]] = None,
) -> Optional[HybridSplit]:
    """The data-parallel + split-K schedule of a plain ``m x n x k`` product (sm_90, TMA)
    where the wave model says it beats the unsplit pick (:func:`choose_config`'s model
    over ``candidates``, default :func:`default_candidates`) by ``HYBRID_MODEL["margin"]``;
    else None.  Only for ``n`` and ``k`` multiples of 8 (16-byte rows of 2-byte operands: a
    row cut of A and C is then a TMA-ready operand again; other shapes are staged, and
    staging two launches would double the copy).

    For each warp-specialized, cluster-free candidate whose tiles overrun a whole number
    of waves (``tiles % sms != 0`` and ``tiles > sms``), the rows are cut at the largest
    multiple ``r`` of its ``bm`` whose tile rows fit those whole waves (and the next
    ``HYBRID_MODEL["rows_tried"] - 1`` smaller cuts); the remaining rows are split along K
    by the fastest of :func:`splitk_candidates` for them.  Time: both launches by
    :func:`estimate_us` plus ``HYBRID_MODEL["gap_us"]``.

    >>> h = hybrid_split(5120, 5120, 5120)
    >>> h.rows, h.main.key(), h.tail.splits > 1
    (4992, 'sm90_128x256x64_s4_g8_tma_ws', True)
    >>> hybrid_split(4096, 4096, 4096) is None   # 128 tiles of 128x256: one full wave
    True
    """
    for nm, v in (("m", m), ("n", n), ("k", k), ("sms", sms)):
        if type(v) is not int or v < 1:
            raise GemmInputError(f"hybrid_split: {nm}={v!r} must be a positive int")
    if n % 8 or k % 8:
        return None
    hm = HYBRID_MODEL if model is None else model
    cands = tuple(default_candidates(True) if candidates is None else candidates)
    unsplit = _fastest(cands, m, n, k, sms)
    if unsplit is None:
        return None
    best: Optional[HybridSplit] = None
    for cfg in cands:
        if getattr(cfg, "schedule", "") != "ws" or getattr(cfg, "cluster", 1) != 1:
            continue
        gm, gn = -(-m // cfg.bm), -(-n // cfg.bn)
        tiles = gm * gn
        if tiles <= sms or tiles % sms == 0:
            continue
        r_top = (tiles // sms) * sms // gn  # tile rows that fit the whole waves
        for r in range(r_top, r_top - hm["rows_tried"], -1):
            if r < 1 or r >= gm:
                continue
            rows = r * cfg.bm
            tails = splitk_candidates(m - rows, n, k, cands, sms, "kernel")
            tail = _fastest(tails, m - rows, n, k, sms)
            if tail is None:
                continue
            t = estimate_us(cfg, rows, n, k, sms=sms) + hm["gap_us"] + tail[0]
            if best is None or t < best.model_us * (1 - 1e-9):
                best = HybridSplit(cfg, rows, tail[2], t, unsplit[0])
    if best is None or best.model_us * hm["margin"] >= unsplit[0]:
        return None
    return best


# ============================================================================ operands
def operand_layout(rows: int, cols: int, s0: int, s1: int, itemsize: int, ptr: int) -> Tuple[str, int, bool]:
    """(contiguous dimension ``"cols"`` or ``"rows"``, leading dimension in elements, copy?)
    for a ``rows x cols`` operand with byte strides ``(s0, s1)`` at address ``ptr``.

    ``copy`` is True when the operand breaks the kernels' contract -- a non-unit inner
    stride, a leading dimension not a multiple of 8 elements (16 bytes), a base address not
    16-byte aligned, or a single element -- and must first be copied into a padded buffer."""
    it = itemsize
    if s1 == it and s0 % it == 0 and s0 // it >= max(cols, 1):
        major, ld = "cols", s0 // it
    elif s0 == it and s1 % it == 0 and s1 // it >= max(rows, 1):
        major, ld = "rows", s1 // it
    elif rows == 1 or cols == 1:
        major, ld = "cols", cols
    else:
        major, ld = "cols", -1
    aligned = ptr % 16 == 0 and ld > 0 and ld % 8 == 0
    return major, ld, (not aligned) or (rows == 1 and cols == 1)


# ============================================================================ parameters
_KINDS = {
    "ptr": (8, 8, "<u8"),
    "i32": (4, 4, "<i4"),
    "i64": (8, 8, "<i8"),
    "f32": (4, 4, "<f4"),
    "tmap": (128, 64, "u1"),
    "i32x512": (2048, 16, "<i4"),  # a struct of 512 ints by value (the host sizes of a table)
}


class ParamBuffer:
    """Host storage for one kernel's parameters and the ``void*`` array that
    ``cuLaunchKernel`` reads: ``kinds`` is the parameter list (``"ptr"``, ``"i32"``,
    ``"i64"``, ``"f32"``, ``"tmap"`` for a 128-byte ``CUtensorMap`` passed by value), each stored at its
    natural alignment (64 bytes for a tensor map).  ``cuLaunchKernel`` copies the values at
    launch, so a buffer may be rewritten right after a launch (a captured graph keeps the
    values it was captured with).

    >>> pb = ParamBuffer(["ptr", "i32", "i64"])
    >>> pb.set(0, 0xDEAD0000); pb.set(1, -7); pb.set(2, 1 << 40)
    >>> pb.values()
    [3735879680, -7, 1099511627776]
    """

    def __init__(self, kinds: Sequence[str]) -> None:
        offs: List[int] = []
        off = 0
        for kd in kinds:
            if kd not in _KINDS:
                raise GemmInputError(f"ParamBuffer: unknown parameter kind {kd!r} (one of {sorted(_KINDS)})")
            size, align, _ = _KINDS[kd]
            off = -(-off // align) * align
            offs.append(off)
            off += size
        self.kinds = tuple(kinds)
        self.offsets = tuple(offs)
        self.size = max(off, 8)
        self._raw = np.zeros(self.size + 64, dtype=np.uint8)
        shift = (-self._raw.ctypes.data) % 64
        self._bytes = self._raw[shift : shift + self.size]
        base = self._bytes.ctypes.data
        self._views = [
            self._bytes[o : o + _KINDS[kd][0]].view(np.dtype(_KINDS[kd][2])) for o, kd in zip(offs, kinds)
        ]
        self._ptrs = np.array([base + o for o in offs] or [0], dtype=np.uint64)
        self.address = int(self._ptrs.ctypes.data)
        """Address of the ``void*[]`` array (``kernelParams``)."""

    def set(self, i: int, value: Any) -> None:
        """Store parameter ``i``: an int for ``ptr``/``i32``/``i64``, 128 bytes (a numpy
        uint8 array, or anything numpy reads as one) for ``tmap``."""
        v = self._views[i]
        if self.kinds[i] in ("tmap", "i32x512"):
            v[:] = value
        else:
            v[0] = value

    def view(self, i: int) -> np.ndarray:
        """Parameter ``i``'s storage as a writable numpy array (one element for a scalar;
        128 bytes for ``tmap``, 512 ints for ``i32x512``)."""
        return self._views[i]

    def get(self, i: int) -> Any:
        """Parameter ``i`` read back through the ``void*`` array (what the driver reads)."""
        addr = int(self._ptrs[i])
        kd = self.kinds[i]
        if kd == "tmap":
            return ctypes.string_at(addr, 128)
        if kd == "i32x512":
            return list((ctypes.c_int32 * 512).from_address(addr))
        if kd == "f32":
            return ctypes.c_float.from_address(addr).value
        ct = {"ptr": ctypes.c_uint64, "i32": ctypes.c_int32, "i64": ctypes.c_int64}[kd]
        return ct.from_address(addr).value

    def values(self) -> List[Any]:
        return [self.get(i) for i in range(len(self.kinds))]


# ============================================================================ the launch decision
@dataclass(frozen=True)
class DeviceFacts:
    """What the rule knows of the device: compute capability (``"90"``), SM count,
    whether cuda-python can encode TMA tensor maps, and whether the runtime can make a
    cooperative launch (``cuLaunchKernelEx`` through CuPy's driver handles: the kernels that
    stage their operands in the launch need one)."""

    cc: str
    sms: int
    tma: bool
    coop: bool = False


@dataclass(frozen=True)
class OperandFacts:
    """One user operand as the rule sees it: per-matrix shape and byte strides, element
    size, base address modulo 16; for a 3-D operand its batch extent and batch stride in
    bytes (``batch=0``: a 2-D operand)."""

    shape: Tuple[int, int]
    strides: Tuple[int, int]
    itemsize: int
    ptr16: int = 0
    batch: int = 0
    batch_stride: int = 0


@dataclass(frozen=True)
class GemmRequest:
    """A checked ``gemm`` call as plain data (no arrays): the operands, the dtypes (names,
    checked), the output's strides in bytes (None: a new array), the options, the C
    input's row and batch strides in elements (alpha/beta), and the batch count."""

    a: OperandFacts
    b: OperandFacts
    dtype: str
    out_dtype: str
    out_itemsize: int
    out_strides: Optional[Tuple[int, ...]] = None
    path: str = "auto"
    activation: Optional[str] = None
    alpha_beta: bool = False
    bias: bool = False
    bias_along: str = "n"
    bias_dtype: str = "f32"
    c_ld: Tuple[int, int] = (0, 0)
    batch: int = 1

    @property
    def epilogue(self) -> bool:
        """A fused bias / activation / alpha-beta (the user's N and M)."""
        return self.bias or self.activation is not None or self.alpha_beta


@dataclass(frozen=True)
class Staging:
    """How the kernel reads one operand: ``transposed`` (the user's operand read as its
    transpose: the column-major output computed as the transposed product), a
    ``rows x cols`` matrix whose contiguous dimension is the columns (``cols_major``) or
    the rows, its leading dimension ``ld`` (of the padded buffer on the copy path),
    ``copy`` (copied into a padded, aligned buffer each call: it breaks the 16-byte
    contract), the operand's contiguous mode's name ``major`` (``"m"``, ``"k"``, ``"n"``),
    and, for a rank-3 tensor map, the batch stride in elements (None: one shared matrix)."""

    transposed: bool
    rows: int
    cols: int
    cols_major: bool
    ld: int
    copy: bool
    major: str
    batch_stride: Optional[int] = None


@dataclass(frozen=True)
class FixupLaunch:
    """The split-K fix-up kernel's launch: grid and threads (the default CTA shape), and its
    parameter list (``kinds``: W, C, M, N, ldc, then the fused epilogue's: the bias; alpha,
    beta, the C input and its row stride), the values the plan fixes (``statics``) and the
    indices each call sets (``slots``: ``bias``, ``alpha``, ``beta``, ``cin``; empty
    without the epilogue)."""

    grid: Tuple[int, int, int]
    threads: int
    kinds: Tuple[str, ...] = ("ptr", "ptr", "i32", "i32", "i64")
    statics: Tuple[Tuple[int, int], ...] = ()
    slots: Tuple[Tuple[str, int], ...] = ()

    @property
    def epilogue(self) -> bool:
        """Whether the fix-up applies the fused epilogue."""
        return bool(self.slots)

    def slot(self, name: str) -> int:
        """The parameter index of ``name`` (-1: none)."""
        return dict(self.slots).get(name, -1)


@dataclass(frozen=True)
class LaunchDecision:
    """Everything a plan carries out, decided from shapes, strides, dtypes and device facts:

    * ``config``, ``problem``: the kernel (and its variant: split-K and its reduction, the
      mma.sync decode tile, a cluster, a fused epilogue); ``m x n x k`` the kernel's product
      (the user's, or its transpose where ``orient == "col"``);
    * ``orient``: ``"row"`` (C as is), ``"col"`` (C^T = B^T A^T, the operands' roles
      swapped), ``"copy"`` (a row-major temporary, copied into the output);
    * ``a``, ``b``: the operands' staging; ``tma``: encode their tensor maps;
    * ``grid`` (threads and shared memory are the generated kernel's own);
    * ``ldc``, ``cvec_align``, ``cvec_ld``: the output's row stride and when the kernel may
      store it in vectors (``cvec_ld`` and a base address aligned to ``cvec_align``);
    * ``workspace`` (f32 elements of split-K planes), ``counters`` (the serial reduction's
      per-tile counters), ``fixup`` (the plane reduction's second launch), ``pdl_split`` (the
      split kernel as a programmatic dependent launch); ``zero_bias``: the elements of the
      zero vector an epilogue without a bias reads;
    * ``kinds``, ``statics``, ``slots``: the kernel's parameter list, the values fixed by the
      plan, and the indices of those each call or the plan's allocations set (``a``, ``b``,
      ``c``, ``cvec``, ``out``, ``counters``, ``bias``, ``alpha``, ``beta``, ``cin``);
    * ``warn_no_tma``: the Hopper kernel runs without TMA for want of cuda-python."""

    config: Any
    problem: GemmProblem
    m: int
    n: int
    k: int
    orient: str
    a: Staging
    b: Staging
    tma: bool
    grid: Tuple[int, int, int]
    ldc: int
    cvec_align: int
    cvec_ld: bool
    kinds: Tuple[str, ...]
    statics: Tuple[Tuple[int, int], ...]
    slots: Tuple[Tuple[str, int], ...]
    splits: int = 1
    workspace: int = 0
    counters: int = 0
    fixup: Optional[FixupLaunch] = None
    pdl_split: bool = False
    activation: Optional[str] = None
    zero_bias: int = 0
    batch: int = 1
    ldcb: int = 0
    warn_no_tma: bool = False

    @functools.cached_property
    def _slot_index(self) -> Dict[str, int]:
        return dict(self.slots)

    def slot(self, name: str) -> int:
        """The parameter index of ``name`` (-1: the kernel has no such parameter); the
        name -> index map is built once per decision (a launch reads it several times)."""
        return self._slot_index.get(name, -1)


@dataclass(frozen=True)
class BatchedDecision:
    """A batched product's path (see :class:`~layoutproof.gpu.host.plan.BatchedGemmPlan`):
    ``"fold"`` (one 2-D product of ``batch * M`` rows), ``"kernel"`` (``launch``: one launch
    of the batched kernel) or ``"loop"`` (one 2-D product per batch)."""

    mode: str
    launch: Optional[LaunchDecision] = None


def staging(op: OperandFacts, transposed: bool, rows: int, cols: int, names: Tuple[str, str]) -> Staging:
    """How the kernel reads ``op`` as a ``rows x cols`` matrix (``transposed``: the user's
    operand is its transpose); ``names``: the (row, column) modes' names."""
    s0, s1 = op.strides
    if transposed:
        s0, s1 = s1, s0
    where, ld, copy = operand_layout(rows, cols, s0, s1, op.itemsize, op.ptr16)
    cols_major = where == "cols"
    if copy:
        ld = max(8, -(-(cols if cols_major else rows) // 8) * 8)
    return Staging(transposed, rows, cols, cols_major, ld, copy, names[1] if cols_major else names[0])


def elem_pick(req: GemmRequest, dev: DeviceFacts, m: int, n: int, k: int, A: Staging, B: Staging) -> Any:
    """:data:`ELEM_RULE`'s kernel for a plain 2-D product on Hopper whose plan would copy an
    operand (``A``, ``B``: the kernel operands' staging): the mono cp.async tile reading
    the copied operands in place, where its estimate is within the rule's bound; else None."""
    if (
        req.epilogue
        or req.path not in ("auto", "wgmma")
        or dev.cc != "90"
        or req.dtype not in ("f16", "bf16")
    ):
        return None
    ops = _copied_rows(req, A, B)
    if ops is None or elem_us(m, n, k, dev.sms) > ELEM_RULE["max_us"]:
        return None
    bm, bn, stages = ELEM_RULE["tile"]
    return Sm90Config(bm=bm, bn=bn, stages=stages, loader="cp.async", schedule="mono", elem_loads=ops)


def elem_us(m: int, n: int, k: int, sms: int) -> float:
    """:data:`ELEM_RULE`'s estimate of the in-place kernel's time on an ``m x n x k`` product:
    ``us0 + us_kt * k-tiles * waves`` of its tile over ``sms`` SMs."""
    bm, bn, _stages = ELEM_RULE["tile"]
    tiles = -(-m // bm) * -(-n // bn)
    return float(ELEM_RULE["us0"] + ELEM_RULE["us_kt"] * -(-k // 64) * -(-tiles // max(sms, 1)))


#: the staging copy inside the launch (:attr:`~layoutproof.gpu.kernels.wgmma_core.Sm90Config.stage_in`):
#: where the rule's pick for a plain f16/bf16 2-D product is the persistent warp-specialized
#: kernel without a cluster and an operand must be staged, the kernel copies it itself before
#: a grid barrier, in place of a ``cudaMemcpy2DAsync`` per operand before the launch (about
#: 6.6 us of host time each on the H200): the same copy and the same TMA kernel, one launch.
#: Needs a cooperative launch (``DeviceFacts.coop``); ``on`` False keeps the copies.
STAGE_IN_RULE: Dict[str, Any] = {"on": True}


def stage_in_pick(req: GemmRequest, dev: DeviceFacts, pick: Any, A: Staging, B: Staging) -> Any:
    """:data:`STAGE_IN_RULE`'s kernel: ``pick`` with ``stage_in`` naming the kernel operands
    (``A``, ``B``: their staging) that are copied, where the rule applies and every copied
    operand's rows are contiguous in the user's array (:func:`stage_sources`); else None."""
    if (
        not STAGE_IN_RULE["on"]
        or not dev.coop
        or not dev.tma
        or req.epilogue
        or req.dtype not in ("f16", "bf16")
        or not isinstance(pick, Sm90Config)
        or pick.schedule != "ws"  # (TMA-fed, no element loads: Sm90Config.validate)
        or pick.cluster != 1
    ):
        return None
    ops = _copied_rows(req, A, B)
    return None if ops is None else replace(pick, stage_in=ops)


def _copied_rows(req: GemmRequest, A: Staging, B: Staging) -> Optional[str]:
    """The kernel operands the plan would copy (``"a"``, ``"b"`` or ``"ab"``), where each
    one's rows can be read where they lie (:func:`read_in_place`); None where none is
    copied, or where one has no contiguous dimension or a base between elements (the copy
    gathers it)."""
    ops = ("a" if A.copy else "") + ("b" if B.copy else "")
    if not ops:
        return None
    try:
        read_in_place(req, A, B, ops)
    except GemmConfigError:
        return None
    return ops


def stage_sources(req: GemmRequest, A: Staging, B: Staging, ops: str) -> Dict[str, int]:
    """The leading dimension (elements) of the user's rows that a ``stage_in`` kernel copies
    for each kernel operand in ``ops`` (:func:`in_place`'s reading of the operand: the rows
    of its contiguous dimension, 2-byte-aligned base).  Raises where an operand named is not
    staged, or where its rows are not contiguous."""
    for P, st in (("a", A), ("b", B)):
        if P in ops and not st.copy:
            raise GemmConfigError(
                f"gemm: stage_in={ops!r} copies the kernel's {P.upper()} in the launch, but that operand "
                f"is read in place (its rows are on the 16-byte grid): leave it out of stage_in"
            )
    inplace = read_in_place(req, A, B, ops, "stage_in")
    return {P: (inplace[0] if P == "a" else inplace[1]).ld for P in ops}


def read_in_place(
    req: GemmRequest, A: Staging, B: Staging, ops: str, option: str = "elem_loads"
) -> Tuple[Staging, Staging]:
    """The kernel operands ``A`` and ``B`` with those named in ``ops`` read in place
    (:func:`in_place`, each from the user's operand it is: after the column-major output's
    swap, the kernel's A is the user's ``b``); ``option``: the configuration field that
    names them, for the errors."""
    swap = A.transposed
    if "a" in ops:
        A = in_place(A, req.b if swap else req.a, "b (the kernel's A)" if swap else "a", option)
    if "b" in ops:
        B = in_place(B, req.a if swap else req.b, "a (the kernel's B)" if swap else "b", option)
    return A, B


def in_place(st: Staging, op: OperandFacts, name: str, option: str = "elem_loads") -> Staging:
    """``st`` read in place by a kernel whose loads take any leading dimension and any
    2-byte-aligned base (:attr:`~layoutproof.gpu.kernels.wgmma_core.Sm90Config.elem_loads`):
    no copy, the operand's own leading dimension.  Raises where no dimension of the operand
    is contiguous (its elements must then be gathered by the copy)."""
    s0, s1 = op.strides
    if st.transposed:
        s0, s1 = s1, s0
    it = op.itemsize
    inner, outer, extent = (s1, s0, st.cols) if st.cols_major else (s0, s1, st.rows)
    if inner != it or outer % it or outer // it < max(extent, 1):
        raise GemmConfigError(
            f"gemm: {option} reads {name} in place along its contiguous dimension, but {name}'s "
            f"byte strides {op.strides} have none (inner stride {inner}, not {it}): leave {name} "
            f"out of {option} (it is then copied into a padded buffer)"
        )
    if op.ptr16 % it:
        raise GemmConfigError(
            f"gemm: {option} reads {name} by {it}-byte loads, but its base address is {op.ptr16} "
            f"modulo 16, not on a {it}-byte boundary: leave {name} out of {option} (it is then copied)"
        )
    return replace(st, ld=outer // it, copy=False)


def use_wgmma(config: Any, path: str, cc: str) -> bool:
    """Whether the call runs a wgmma kernel (Hopper): the path, the configuration's kind and
    the device's compute capability decide."""
    if path not in ("auto", "wgmma", "mma.sync"):
        raise GemmInputError(f"gemm: path={path!r} must be 'auto', 'wgmma' or 'mma.sync'")
    if isinstance(config, GemmConfig) or path == "mma.sync":
        return False
    sm90 = cc == "90"
    if isinstance(config, (Sm90Config, SplitKConfig, EpilogueConfig)) or path == "wgmma":
        if not sm90:
            raise GemmInputError("gemm: the wgmma kernel needs compute capability 9.0 (Hopper)")
        return True
    return sm90


def orientation(req: GemmRequest) -> str:
    """The output's layout: ``"row"`` (computed as is), ``"col"`` (C^T = B^T A^T with the
    operands' roles swapped), anything else ``"copy"`` (a row-major temporary, then copied);
    a fused epilogue needs the kernel's N to be the user's N (no ``"col"``)."""
    (M, _), N = req.a.shape, req.b.shape[1]
    it = req.out_itemsize
    orient = "row"
    if req.out_strides is not None:
        s0, s1 = req.out_strides
        if s1 == it and s0 % it == 0 and s0 // it >= N:
            orient = "row"
        elif s0 == it and s1 % it == 0 and s1 // it >= M:
            orient = "col"
        else:
            orient = "copy"
    return "copy" if orient == "col" and req.epilogue else orient


def kernel_operands(req: GemmRequest) -> Tuple[str, int, int, int, Staging, Staging, GemmProblem]:
    """(orientation, m, n, k, A's staging, B's staging, problem) of a 2-D call: what the
    kernel multiplies, before any configuration is chosen (the autotuner's key too)."""
    orient = orientation(req)
    swap = orient == "col"
    (M, K), N = req.a.shape, req.b.shape[1]
    m, n = (N, M) if swap else (M, N)
    A = staging(req.b if swap else req.a, swap, m, K, ("m", "k"))
    B = staging(req.a if swap else req.b, swap, K, n, ("k", "n"))
    prob = GemmProblem(a_major=A.major, b_major=B.major, dtype=req.dtype, out_dtype=req.out_dtype)
    return orient, m, n, K, A, B, prob


def with_epilogue(cfg: Any, req: GemmRequest, use90: bool, tma: bool) -> Any:
    """``cfg`` (:func:`choose_config`'s pick with ``epilogue=True``, or the caller's) with
    the call's fused epilogue: an mma.sync tile applies it in its own pair stores
    (``MmaEpilogueConfig``; with a C input it stores one plane instead); split-K with the
    fix-up kernel applies it in the fix-up, and so does an unsplit kernel storing one plane
    (``FixupEpilogueConfig``); split-K with the serial reduction applies it in its reducer
    (an f32 bias along N); anything else runs the epilogue kernel.  What ``gemm`` runs for
    a call with a bias, an activation or alpha/beta, and what ``layoutproof gemm
    --activation/--bias`` emits."""
    act = req.activation or "none"
    fields: Dict[str, Any] = dict(
        activation=act, alpha_beta=req.alpha_beta, bias_axis=req.bias_along, bias_dtype=req.bias_dtype
    )
    if isinstance(cfg, GemmConfig) and not req.alpha_beta:  # the mma.sync kernel's own stores
        cfg = MmaEpilogueConfig(cfg)
    if isinstance(cfg, MmaEpilogueConfig):
        if req.out_dtype not in EPILOGUE_RULE["outs"] or req.dtype not in ("f16", "bf16"):
            raise GemmInputError(
                "gemm: the mma.sync kernel's fused epilogue takes f16 or bf16 operands into an "
                f"f16, bf16 or f32 output (got {req.dtype} -> {req.out_dtype})"
            )
        if not req.alpha_beta:
            return replace(
                cfg, activation=act, bias_axis=req.bias_along, bias_dtype=req.bias_dtype
            ).validate()
        cfg = FixupEpilogueConfig(cfg.base)  # a C input: the one-plane fix-up applies it
    if isinstance(cfg, FixupEpilogueConfig) or (
        isinstance(cfg, SplitKConfig) and cfg.reduction == "kernel" and tma and use90
    ):
        if not use90 or req.out_dtype not in EPILOGUE_RULE["outs"]:
            raise GemmInputError(
                "gemm: the fix-up kernel's fused epilogue runs on compute capability 9.0 with an "
                f"f16, bf16 or f32 output (got {req.out_dtype})"
            )
        return replace(cfg, **fields).validate()
    base = cfg.base if isinstance(cfg, (SplitKConfig, EpilogueConfig)) else cfg
    if not (use90 and getattr(base, "schedule", "") in PERSISTENT and tma):
        raise GemmInputError(
            "gemm: the fused bias/activation epilogue runs on the warp-specialized TMA "
            "kernel (compute capability 9.0 with cuda-python; an Sm90Config with "
            "loader='tma', schedule='ws')"
        )
    plain_bias = (req.bias_along, req.bias_dtype) == ("n", "f32")
    if isinstance(cfg, SplitKConfig) and cfg.reduction == "serial" and plain_bias:
        return replace(cfg, activation=act, alpha_beta=req.alpha_beta).validate()
    ep = PingpongEpilogueConfig if getattr(base, "schedule", "") == "pingpong" else EpilogueConfig
    return ep(base, act, req.alpha_beta, req.bias_along, req.bias_dtype).validate()


def _config(
    req: GemmRequest, dev: DeviceFacts, config: Any, m: int, n: int, k: int, prob: GemmProblem
) -> Any:
    """The kernel configuration: the given one, else :func:`choose_config`'s pick."""
    use90 = use_wgmma(config, req.path, dev.cc)
    if config is None:
        cfg = choose_config(
            m,
            n,
            k,
            prob,
            hopper=use90,
            tma=dev.tma,
            sms=dev.sms,
            epilogue=req.epilogue,
            mma=req.path == "auto",
        )
    elif isinstance(
        config, (GemmConfig, Sm90Config, SplitKConfig, EpilogueConfig, FixupEpilogueConfig, MmaEpilogueConfig)
    ):
        cfg = config
    else:
        raise GemmInputError(
            f"gemm: config must be a GemmConfig, an Sm90Config, 'auto' or None, got {config!r}"
        )
    return with_epilogue(cfg, req, use90, dev.tma) if req.epilogue else cfg


def _check_split(cfg: Any, m: int) -> None:
    """The split-K reductions' row limits, and the rows of A's TMA box
    (:attr:`~layoutproof.gpu.kernels.wgmma_core.Sm90Config.a_rows`)."""
    rows = a_box_rows(cfg)
    if rows < 64 and m > rows:
        raise GemmConfigError(
            f"gemm: the kernel loads {rows} rows of A per tile (Sm90Config.a_rows={rows}): the product's "
            f"M={m} must be at most {rows}; use a_rows=64 (the default) for more rows"
        )
    if isinstance(cfg, FixupEpilogueConfig) and m > 65535:
        raise GemmInputError(f"gemm: the fix-up kernel runs one grid row per C row: M={m} > 65535")
    if getattr(cfg, "splits", 1) <= 1:
        return
    if m > 65535 and cfg.reduction not in ("serial", "cluster"):
        raise GemmInputError(f"gemm: split-K's fix-up runs one grid row per C row: M={m} > 65535")
    if cfg.reduction == "cluster" and m > CLUSTER_ROWS:
        raise GemmInputError(
            f"gemm: the cluster split-K reduction holds {CLUSTER_ROWS} rows of a tile: the kernel's M={m}"
        )


def launch_grid(cfg: Any, m: int, n: int, sms: int, batch: int = 1) -> Tuple[int, int, int]:
    """The kernel's grid: one CTA per tile (and k chunk of the cluster reduction), or for a
    persistent (warp-specialized) kernel at most one CTA per SM over tiles x splits x batch
    (clusters of ``cfg.cluster`` CTAs share a tile column)."""
    splits = getattr(cfg, "splits", 1)
    grid_m, grid_n = -(-m // cfg.bm), -(-n // cfg.bn)
    if splits > 1 and cfg.reduction == "cluster":  # clusters of `splits` CTAs (__cluster_dims__)
        return (grid_m * grid_n * splits, 1, 1)
    if getattr(cfg, "schedule", "") in PERSISTENT:
        cl = cfg.cluster
        units = -(-grid_m // cl) * grid_n * splits * batch
        return (cl * max(1, min(units, sms // cl)), 1, 1)
    return (grid_m * grid_n, 1, 1)


def _epilogue_params(
    kinds: List[str], slots: Dict[str, int], statics: Dict[int, int], req: GemmRequest, batched: bool
) -> None:
    """The fused epilogue's parameters after ``c_vec``: the bias pointer; with alpha/beta,
    alpha, beta, the C input and its row stride (a batched kernel: and its batch stride,
    both fixed by the plan: the plan checks the C input's strides on every call)."""
    if req.activation is None and not req.bias and not req.alpha_beta:
        return
    slots["bias"] = len(kinds)
    kinds.append("ptr")
    if req.alpha_beta:
        i = len(kinds)
        slots.update(alpha=i, beta=i + 1, cin=i + 2)
        kinds += ["f32", "f32", "ptr", "i64"]
        statics[i + 3] = req.c_ld[0]
        if batched:
            kinds.append("i64")
            statics[i + 4] = req.c_ld[1]


def _zero_bias(req: GemmRequest) -> int:
    """An epilogue without a bias adds a zero vector of N (M: ``bias_along="m"``)."""
    if not req.epilogue or req.bias:
        return 0
    return req.b.shape[1] if req.bias_along == "n" else req.a.shape[0]


def decide(req: GemmRequest, dev: DeviceFacts, config: Any = None) -> LaunchDecision:
    """The launch of a 2-D product: the kernel (``config``, else :func:`choose_config`'s
    pick for this shape and device; ``"auto"`` is the autotuner's, resolved by the caller),
    the operands' staging, the grid, the workspace and the parameter block.  Nothing runs
    here; :class:`~layoutproof.gpu.host.plan.GemmPlan` carries the decision out."""
    orient, m, n, K, A, B, prob = kernel_operands(req)
    if config is None:
        pick = _config(req, dev, None, m, n, K, prob)
        elem = elem_pick(req, dev, m, n, K, A, B)
        first = elem is not None and elem_us(m, n, K, dev.sms) <= ELEM_RULE["first_us"]
        cfg = (elem if first else None) or stage_in_pick(req, dev, pick, A, B) or elem or pick
    else:
        cfg = _config(req, dev, config, m, n, K, prob)
    _check_split(cfg, m)
    A, B = read_in_place(req, A, B, getattr(cfg, "elem_loads", ""))
    stage_in = getattr(cfg, "stage_in", "")
    sources = stage_sources(req, A, B, stage_in) if stage_in else {}
    splits = getattr(cfg, "splits", 1)
    cluster_red = splits > 1 and cfg.reduction == "cluster"  # no workspace, one unit per CTA
    serial = splits > 1 and cfg.reduction == "serial"
    one_plane = isinstance(cfg, FixupEpilogueConfig)  # an unsplit kernel's one f32 plane
    fx_ep = one_plane or (isinstance(cfg, SplitKConfig) and cfg.fixup_epilogue() is not None)
    tma = getattr(cfg, "loader", "") == "tma"
    if tma and not dev.tma:
        raise GemmInputError(
            "gemm: Sm90Config(loader='tma') needs cuda-python (cuda.bindings.driver) to encode "
            "tensor maps; use loader='cp.async' or install cuda-python"
        )
    ws = getattr(cfg, "schedule", "") in PERSISTENT
    it = req.out_itemsize
    (M, _), N = req.a.shape, req.b.shape[1]
    ldc = N if orient != "col" else M
    if req.out_strides is not None and orient != "copy":
        ldc = (req.out_strides[0] if orient == "row" else req.out_strides[1]) // it
    # c_vec: vector stores where ldc and C's base allow them (ws: 16-byte row vectors);
    # split-K's kernel stores f32 planes of row stride n
    planes = (splits > 1 and not cluster_red) or one_plane
    cvec_ld = (
        ((n * 4) % 16 == 0 if ws else n % 2 == 0)
        if planes
        else ((ldc * it) % 16 == 0 if ws else ldc % 2 == 0)
    )
    slots = {"a": 0, "b": 1, "c": 2}
    if tma:
        kinds = ["tmap", "tmap", "ptr", "i32", "i32", "i32", "i64", "i32"]
        statics = {3: m, 4: n, 5: K, 6: ldc if not planes else n}
    else:
        kinds = ["ptr", "ptr", "ptr", "i32", "i32", "i32", "i64", "i64", "i64", "i32"]
        statics = {3: m, 4: n, 5: K, 6: A.ld, 7: B.ld, 8: ldc if not planes else n}
    slots["cvec"] = len(kinds) - 1
    for P in stage_in:  # the staging copy's source, its ld, the padded buffer, its ld; the barrier
        slots[f"{P}_src"], slots[f"{P}_dst"] = len(kinds), len(kinds) + 2
        statics[len(kinds) + 1] = sources[P]
        statics[len(kinds) + 3] = (A if P == "a" else B).ld
        kinds += ["ptr", "i64", "ptr", "i64"]
    if stage_in:
        slots["gbar"] = len(kinds)
        kinds.append("ptr")
    tiles = -(-m // cfg.bm) * -(-n // cfg.bn)
    if serial:  # the output D, its row stride, the per-(warpgroup, tile) counters
        slots.update(out=len(kinds), counters=len(kinds) + 2)
        statics[len(kinds) + 1] = ldc
        kinds += ["ptr", "i64", "ptr"]
    fixup = None
    if fx_ep:  # the epilogue's parameters go to the fix-up kernel
        fkinds = ["ptr", "ptr", "i32", "i32", "i64"]
        fslots: Dict[str, int] = {}
        fstatics: Dict[int, int] = {2: m, 3: n, 4: ldc}
        _epilogue_params(fkinds, fslots, fstatics, req, batched=False)
        fixup = FixupLaunch(
            fixup_grid(m, n),
            FIXUP_DEFAULT.threads,
            tuple(fkinds),
            tuple(sorted(fstatics.items())),
            tuple(fslots.items()),
        )
    else:
        _epilogue_params(kinds, slots, statics, req, batched=False)
    if planes and not serial and fixup is None:
        fixup = FixupLaunch(fixup_grid(m, n), FIXUP_DEFAULT.threads)
    return LaunchDecision(
        config=cfg,
        problem=prob,
        m=m,
        n=n,
        k=K,
        orient=orient,
        a=A,
        b=B,
        tma=tma,
        grid=launch_grid(cfg, m, n, dev.sms),
        ldc=ldc,
        cvec_align=16 if ws else 2 * (4 if planes else it),
        cvec_ld=cvec_ld,
        kinds=tuple(kinds),
        statics=tuple(sorted(statics.items())),
        slots=tuple(slots.items()),
        splits=splits,
        workspace=max(splits, 1) * m * n if planes else 0,
        counters=cfg.base.warpgroups * tiles if serial else 0,
        fixup=fixup,
        pdl_split=fixup is not None and not one_plane and splitk_pdl(m),
        activation=(req.activation or "none") if req.epilogue else None,
        zero_bias=_zero_bias(req),
        warn_no_tma=config is None and use_wgmma(config, req.path, dev.cc) and not dev.tma,
    )


# ---------------------------------------------------------------------------- batched
def _batch_stride(op: OperandFacts) -> Optional[int]:
    """The operand's batch stride in elements, or None where every batch reads one matrix
    (2-D, batch extent 1, or batch stride 0: numpy broadcasting)."""
    if op.batch > 1 and op.batch_stride != 0:
        return op.batch_stride // op.itemsize
    return None


def _folds(req: GemmRequest, config: Any) -> bool:
    """B shared and A's batches the rows of one (batch * M) x K row-major matrix, with a
    new output: the batched product is that one 2-D product."""
    a, b = req.a, req.b
    (M, K), it = a.shape, a.itemsize
    return (
        (b.batch <= 1 or b.batch_stride == 0)
        and a.batch == req.batch
        and req.out_strides is None
        and not req.alpha_beta
        and a.strides == (K * it, it)
        and a.batch_stride == M * K * it
        and (not req.bias or req.bias_along == "n")
        and (config is None or config == "auto" or not isinstance(config, str))
    )


def _batched_staging(req: GemmRequest) -> Optional[Tuple[Staging, Staging]]:
    """The batched kernel's operands: an operand that breaks the 16-byte contract is staged
    into a padded buffer of the plan (all its batches: batch stride = rows of the buffer x
    padded ld); another operand's batches must start 16-byte aligned (the rank-3 map's
    stride) and not overlap.  None where the kernel cannot take them."""
    (M, K), N = req.a.shape, req.b.shape[1]
    out: List[Staging] = []
    for op, rows, cols, names in ((req.a, M, K, ("m", "k")), (req.b, K, N, ("k", "n"))):
        st = _batch_stride(op)
        s = staging(op, False, rows, cols, names)
        span = (rows if s.cols_major else cols) * s.ld
        if st is not None and s.copy:
            if op.batch_stride < 0:
                return None
            st = span
        elif st is not None and (st * op.itemsize % 16 or op.batch_stride < 0 or st < span):
            return None
        out.append(replace(s, batch_stride=st))
    return out[0], out[1]


def _batched_config(req: GemmRequest, dev: DeviceFacts, config: Any, prob: GemmProblem) -> Any:
    """The batched kernel's configuration (a persistent TMA one: the warp-specialized pick,
    swapped for the ping-pong kernel where :func:`pingpong_swap` says), with the call's
    fused epilogue; None where the given one is not such."""
    (M, K), N = req.a.shape, req.b.shape[1]
    rows = short_a_rows(M, prob)
    if config is None:
        # without WAVE_TILES: the 128x192 tile ran 0.89x (bf16) and 0.92x (f16) of 128x256's
        # speed on 8 x [2048x2048x128] on an H200, where the model had it faster
        ws = tuple(c for c in hopper_candidates(True) if getattr(c, "schedule", "") == "ws")
        if rows is not None:  # SHORT_A_RULE: the tiles that take A's box, cut to each batch's rows
            ws = tuple(s for s in (with_a_rows(c, rows) for c in ws) if s is not None)
        cfg = choose_config(M * req.batch, N, K, prob, hopper=True, tma=True, sms=dev.sms, candidates=ws)
        if M >= PINGPONG_RULE["batched_m"] and K > PINGPONG_RULE["light_k"]:  # large batches, K > 256
            tiles = -(-M // cfg.bm) * -(-N // cfg.bn) * req.batch
            cfg = pingpong_swap(cfg, K, prob, req.epilogue, (tiles, dev.sms))
    elif isinstance(config, Sm90Config) and config.schedule in PERSISTENT and config.loader == "tma":
        cfg = config
    else:
        return None
    if req.epilogue:
        act = req.activation or "none"
        ep = PingpongEpilogueConfig if cfg.schedule == "pingpong" else EpilogueConfig
        cfg = ep(cfg, act, req.alpha_beta, req.bias_along, req.bias_dtype).validate()
    if -(-M // cfg.bm) * -(-N // cfg.bn) * req.batch >= 2**31:
        raise GemmInputError(f"gemm: {req.batch} batches of {M}x{N} have 2**31 tiles or more")
    return cfg


def _batched_output(req: GemmRequest) -> Tuple[int, int, bool]:
    """(row stride, batch stride) in elements of the output's matrices, and whether the
    batched kernel can store them: row-major with unit column stride, batches disjoint."""
    (M, _), N, it = req.a.shape, req.b.shape[1], req.out_itemsize
    if req.out_strides is None:
        return N, M * N, True
    s0, s1, s2 = req.out_strides
    ok = s2 == it and s1 % it == 0 and s0 % it == 0 and s1 // it >= N and s0 >= 0
    ldc, ldcb = s1 // it, s0 // it
    return ldc, ldcb, ok and (req.batch == 1 or ldcb >= (M - 1) * ldc + N)


def decide_batched(req: GemmRequest, dev: DeviceFacts, config: Any = None) -> BatchedDecision:
    """The path of a batched product (``"fold"``, ``"kernel"``, ``"loop"``) and, for the
    one-launch kernel, its launch: the batched kernel where the device has it (Hopper, TMA),
    the operands' batch strides suit a rank-3 tensor map and the output's matrices are
    row-major and disjoint."""
    use90 = use_wgmma(config, req.path, dev.cc) and dev.tma and batched_kernels_available()
    if _folds(req, config):
        return BatchedDecision("fold")
    ldc, ldcb, out_ok = _batched_output(req)
    if not (use90 and out_ok and (config is None or isinstance(config, Sm90Config))):
        return BatchedDecision("loop")
    batched = ("a" if _batch_stride(req.a) is not None else "") + (
        "b" if _batch_stride(req.b) is not None else ""
    )
    ops = _batched_staging(req) if batched else None
    if ops is None:
        return BatchedDecision("loop")
    A, B = ops
    prob = GemmProblem(
        a_major=A.major, b_major=B.major, dtype=req.dtype, out_dtype=req.out_dtype, batch=batched
    )
    cfg = _batched_config(req, dev, config, prob)
    if cfg is None:
        return BatchedDecision("loop")
    (M, K), N = req.a.shape, req.b.shape[1]
    _check_split(cfg, M)  # the rows of A's box
    it = req.out_itemsize
    kinds = ["tmap", "tmap", "ptr", "i32", "i32", "i32", "i64", "i32", "i32", "i64"]
    statics = {3: M, 4: N, 5: K, 6: ldc, 8: req.batch, 9: ldcb}
    slots = {"a": 0, "b": 1, "c": 2, "cvec": 7}
    _epilogue_params(kinds, slots, statics, req, batched=True)
    launch = LaunchDecision(
        config=cfg,
        problem=prob,
        m=M,
        n=N,
        k=K,
        orient="row",
        a=A,
        b=B,
        tma=True,
        grid=launch_grid(cfg, M, N, dev.sms, req.batch),
        ldc=ldc,
        cvec_align=16,
        cvec_ld=(ldc * it) % 16 == 0 and (ldcb * it) % 16 == 0,
        kinds=tuple(kinds),
        statics=tuple(sorted(statics.items())),
        slots=tuple(slots.items()),
        activation=(req.activation or "none") if req.epilogue else None,
        zero_bias=_zero_bias(req),
        batch=req.batch,
        ldcb=ldcb,
    )
    return BatchedDecision("kernel", launch)
