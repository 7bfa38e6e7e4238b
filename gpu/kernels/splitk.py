"""Split-K for the warp-specialized wgmma kernel: problems with fewer output tiles than SMs.

A GEMM whose ``M x N`` output has fewer ``bm x bn`` tiles than the GPU has SMs (decode
shapes like ``16 x 4096 x 4096``, or ``512 x 512 x 28672``) leaves SMs idle however fast
one tile runs.  Split-K cuts the ``K`` loop into ``S`` chunks: the persistent kernel walks
``tiles x S`` work units, unit ``u`` being tile ``u % tiles`` over the k-blocks of chunk
``u / tiles``, and each unit stores its f32 partial sum into its own plane of a workspace
``W[S, M, N]``; a second small kernel sums the ``S`` planes of each element in a fixed
order and converts to the output type.  The two kernels are ordered by the stream, so the
fix-up needs no counter, flag or fence between CTAs (and the result is deterministic).

The split kernel is the warp-specialized kernel of
:func:`~layoutproof.gpu.kernels.wgmma.generate_sm90` (f32 output), rewritten on its IR
(:func:`splitk_ir`): the work-unit decomposition is the device function ``lp_split``, each
tile loop declares its chunk's bounds ``kb``, ``ke`` and runs its k-loop over them, and
the consumers' C pointer is the unit's workspace plane.  Then every obligation of the IR is
discharged again on the rewritten tree (addresses, bounds, barriers, the mbarrier protocol
model-checked with the rewritten loops) before the source is printed.  What split-K adds
is proven here, before emission:

* :func:`prove_split` -- ``lp_split`` maps units ``[0, tiles * S)`` one-to-one onto
  (tile, chunk) pairs ``[0, tiles) x [0, S)`` (C semantics);
* :func:`prove_k_partition` -- the chunks ``[kb(s), ke(s))`` emitted in the kernel (the
  very IR expressions, evaluated with C semantics) partition ``[0, KT)`` for every ``KT``
  up to a bound and some large ones, so every (m, n, k-block) is accumulated by exactly one
  unit; with ragged ``K`` the last k-block is zero-filled past ``K`` by the TMA boxes (the
  base kernel's proof), and a chunk that is empty (``KT < S``) stores zeros;
* :func:`prove_workspace` -- the planes ``(chunk, row, col) -> chunk * M * ldw + row * ldw
  + col`` (``row < M``, ``col < N <= ldw``) are distinct and inside ``[0, S * M * ldw)``;
* the reduction kernel's accesses (IR claims, discharged like every kernel's) read
  ``W[s, r, c]`` for ``s < S`` inside the guards ``r < M``, ``c < N`` and write ``C[r, c]``
  once per element; the reduction order is program order (a fixed sum).

``SplitKConfig(base, S, reduction="serial")`` needs no second kernel (:func:`serial_ir`):
the last unit of each tile to finish -- counted by ``atom.add.acq_rel.gpu`` on a counter
per (warpgroup, tile) -- sums the planes in the same fixed order, applies the fused
epilogue when asked, writes C and resets its counter for the next launch.  That protocol
is model-checked from the IR (:mod:`layoutproof.gpu.proof.splitk_model`).

>>> from layoutproof.gpu.kernels.wgmma import Sm90Config
>>> cfg = SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, loader="tma", schedule="ws"), 4)
>>> cfg.key()
'sm90_64x128x64_s8_g8_tma_ws_sk4'
>>> SplitKConfig(cfg.base, 4, "serial", "relu").key()
'sm90_64x128x64_s8_g8_tma_ws_sk4s_biasrelu'
>>> k_chunks(10, 4)
[(0, 2), (2, 5), (5, 7), (7, 10)]
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, NoReturn, Optional, Tuple

import numpy as np

from ..config import OUT_DTYPES, SMEM_LIMIT, GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..proof import evaluate, kir
from ..proof.record import ProofLog
from ..proof.splitk_model import (
    COUNTER,
    COUNTER_RESET,
    FLAG_READ,
    FLAG_WRITE,
    OUT_STORE,
    PLANE_READ,
    PLANE_STORE,
    plane_read_loops_ir,
    prove_serial_protocol,
)
from .epilogue import BIAS_DTYPES, check_epilogue_fields
from .toolkit import (
    GRID_WAIT,
    GemmKernel,
    addr_of,
    after_grid_wait,
    finish,
    grid_wait_first,
)
from .variant import (
    BaseKernelFields,
    WsVariantFields,
    base_plan_proofs,
    expect_tx_bytes,
    find_decl,
    find_param,
    unit_rewrite,
)
from .wgmma import Sm90Config, generate_sm90
from .wgmma_ws import prove_ws_protocol

__all__ = [
    "SplitKConfig",
    "SplitKKernels",
    "generate_splitk",
    "splitk_ir",
    "reduce_ir",
    "reduce_epilogue_ir",
    "FixupEpilogue",
    "FixupEpilogueConfig",
    "generate_fixup",
    "prove_fixup_data_flow",
    "FIXUP_BIAS_DTYPES",
    "split_devfn",
    "eval_split",
    "k_bounds_ir",
    "k_chunks",
    "prove_split",
    "prove_k_partition",
    "prove_workspace",
    "prove_fixup_order",
    "prove_split_order",
    "workspace_offset_ir",
    "fixup_grid",
    "prove_fixup_grid",
    "FixupShape",
    "FIXUP_DEFAULT",
    "GRID_WAIT",
    "MAX_SPLITS",
    "REDUCE_THREADS",
    "REDUCTIONS",
    "SERIAL_ACTIVATIONS",
    "serial_ir",
    "CLUSTER_ROWS",
    "cluster_partial_stride",
]

MAX_SPLITS = 16
REDUCE_THREADS = 256
SPLITK_VERSION = "splitk-2"


#: how the partial planes are summed: ``"kernel"`` -- a second (fix-up) kernel launched
#: after the split kernel; ``"serial"`` -- in the split kernel, by the last unit of each
#: tile to finish (a counter per tile, release/acquire at GPU scope; :func:`serial_ir`);
#: ``"cluster"`` -- the ``S`` units of a tile are one thread-block cluster that sums the
#: partials through distributed shared memory, no workspace and no second kernel
#: (:mod:`layoutproof.gpu.kernels.splitk_cluster`; outputs of at most 16 rows, ``S <= 8``)
REDUCTIONS = ("kernel", "serial", "cluster")
#: the rows of the tile the cluster reduction's partial buffer holds (its outputs have at most
#: this many rows; :mod:`layoutproof.gpu.kernels.splitk_cluster`)
CLUSTER_ROWS = 16


def cluster_partial_stride(bn: int, splits: int) -> int:
    """The row stride (f32 elements) of the cluster reduction's partial buffer: ``bn``, or
    ``bn + 16`` when a rank's slice has fewer than 8 16-byte vectors per row (then the
    next row's vectors start 16 banks further: the slice loads are conflict-free)."""
    return bn if (bn // splits // 4) % 8 == 0 else bn + 16


#: the activations the serial reduction's fused epilogue applies (the fused epilogue's)
SERIAL_ACTIVATIONS = ("none", "relu", "silu", "gelu")


@dataclass(frozen=True)
class SplitKConfig(WsVariantFields):
    """The warp-specialized kernel ``base`` (TMA loads, no cluster) with K split ``splits``
    ways (2 .. :data:`MAX_SPLITS`), the planes summed by a fix-up kernel (``reduction=
    "kernel"``) or in the kernel by the last unit of each tile (``"serial"``); either may
    apply the fused epilogue ``act(alpha * acc + beta * Cin + bias)`` (``activation`` not
    None; ``alpha_beta``: the C input).  The serial reduction's bias is f32 along N; the
    fix-up kernel's (:func:`reduce_epilogue_ir`) is along ``bias_axis`` (``"n"`` or
    ``"m"``) of ``bias_dtype`` (f32, f16, bf16).  (The two bias fields are not in the repr:
    the names of the kernels without them stay what they were.)"""

    base: Sm90Config
    splits: int
    reduction: str = "kernel"
    activation: Optional[str] = None
    alpha_beta: bool = False
    bias_axis: str = field(default="n", repr=False)
    bias_dtype: str = field(default="f32", repr=False)

    # the fields the planner and the runtime read from a kernel configuration

    @property
    def cluster(self) -> int:
        return self.splits if self.reduction == "cluster" else 1

    @property
    def smem_bytes(self) -> int:
        # the cluster reduction adds its partial buffer: 16 rows x bn f32 (splitk_cluster)
        if self.reduction != "cluster":
            return self.base.smem_bytes
        return self.base.smem_bytes + 4 * CLUSTER_ROWS * cluster_partial_stride(self.base.bn, self.splits)

    def key(self) -> str:
        k = f"{self.base.key()}_sk{self.splits}" + {"serial": "s", "cluster": "c"}.get(self.reduction, "")
        if self.activation is not None:
            k += f"_bias{self.activation}" + ("_ab" if self.alpha_beta else "")
            k += ("_biasm" if self.bias_axis == "m" else "") + (
                f"_b{self.bias_dtype}" if self.bias_dtype != "f32" else ""
            )
        return k

    def fixup_epilogue(self) -> Optional["FixupEpilogue"]:
        """The fix-up kernel's fused epilogue (the fix-up reduction with an activation), or None."""
        if self.activation is None or self.reduction != "kernel":
            return None
        return FixupEpilogue(self.activation, self.alpha_beta, self.bias_axis, self.bias_dtype)

    def validate(self) -> "SplitKConfig":
        if not isinstance(self.base, Sm90Config):
            raise GemmConfigError(f"SplitKConfig: base must be an Sm90Config, got {type(self.base).__name__}")
        self.base.validate()
        if self.base.schedule != "ws" or self.base.loader != "tma" or self.base.cluster != 1:
            raise GemmConfigError(
                "SplitKConfig: split-K rewrites the warp-specialized TMA kernel without clusters "
                "(schedule='ws', loader='tma', cluster=1)"
            )
        if type(self.splits) is not int or not 2 <= self.splits <= MAX_SPLITS:
            raise GemmConfigError(f"SplitKConfig: splits={self.splits!r} must be an int in [2, {MAX_SPLITS}]")
        if self.reduction not in REDUCTIONS:
            raise GemmConfigError(f"SplitKConfig: reduction={self.reduction!r} must be one of {REDUCTIONS}")
        if self.activation is not None and self.activation not in SERIAL_ACTIVATIONS:
            raise GemmConfigError(
                f"SplitKConfig: activation={self.activation!r} must be None or one of {SERIAL_ACTIVATIONS}"
            )
        if (self.activation is not None or self.alpha_beta) and self.reduction == "cluster":
            raise GemmConfigError(
                "SplitKConfig: the fused epilogue (activation, alpha_beta) runs in the serial "
                "reduction (reduction='serial') or in the fix-up kernel (reduction='kernel'), "
                "not in the cluster reduction"
            )
        if (self.bias_axis, self.bias_dtype) != ("n", "f32") and self.reduction != "kernel":
            raise GemmConfigError(
                f"SplitKConfig: a bias along {self.bias_axis!r} of {self.bias_dtype} is added by "
                "the fix-up kernel (reduction='kernel'); the serial reduction adds an f32 bias along N"
            )
        if self.reduction == "kernel" and self.activation is not None:
            FixupEpilogue(self.activation, self.alpha_beta, self.bias_axis, self.bias_dtype).validate()
        if self.reduction == "cluster" and not (self.splits <= 8 and self.smem_bytes <= SMEM_LIMIT):
            raise GemmConfigError(
                f"SplitKConfig: the cluster reduction needs splits <= 8 (a portable cluster) and "
                f"{self.smem_bytes} <= {SMEM_LIMIT} bytes of shared memory with its partial buffer"
            )
        if self.alpha_beta and self.activation is None:
            raise GemmConfigError("SplitKConfig: alpha_beta needs the fused epilogue (an activation)")
        return self


# ============================================================================ the pieces
def _split_ir() -> Tuple[Tuple[kir.Var, ...], List[kir.Stmt]]:
    """``lp_split(u, tiles, &tile, &sk)``: unit u -> (tile u % tiles, chunk u / tiles)."""
    u, tiles = kir.Var("u"), kir.Var("tiles")
    tile, sk = kir.Var("tile"), kir.Var("sk")
    return (u, tiles, tile, sk), [kir.Assign(tile, u % tiles), kir.Assign(sk, u / tiles)]


def split_devfn() -> Tuple[str, str, kir.Block]:
    """The work-unit decomposition as the device function ``lp_split``."""
    return ("lp_split", "int u, int tiles, int& tile, int& sk", kir.block(*_split_ir()[1]))


def eval_split(u: np.ndarray, tiles: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``lp_split`` evaluated elementwise from the statements the device function is printed
    from (:func:`split_devfn`): work units ``u`` of a grid of ``tiles`` output tiles ->
    ``(tile, sk)`` arrays.  Assumes integer arrays of one shape (or broadcastable), ``u >=
    0`` and ``tiles >= 1``; raises ``ProofFailedError`` if the split is not a list of
    assignments.

    >>> import numpy as np
    >>> [a.tolist() for a in eval_split(np.array([0, 5, 7]), np.array([3, 3, 3]))]
    [[0, 2, 1], [0, 1, 2]]
    """
    env: Dict[str, Any] = {"u": u, "tiles": tiles}
    for st in _split_ir()[1]:
        if not isinstance(st, kir.Assign) or not isinstance(st.lhs, kir.Var):
            raise ProofFailedError("lp_split is not a list of assignments", condition="split map")
        env[st.lhs.name] = evaluate.ev(st.rhs, env)
    return env["tile"], env["sk"]


def k_bounds_ir(sk: kir.Expr, kt: kir.Expr, splits: int) -> Tuple[kir.Expr, kir.Expr]:
    """Chunk ``sk``'s k-blocks ``[kb, ke)`` of ``kt``: ``kb = sk * kt / S``,
    ``ke = (sk + 1) * kt / S`` (the chunks differ in length by at most one k-block)."""
    return (sk * kt) / splits, ((sk + 1) * kt) / splits


def k_chunks(kt: int, splits: int) -> List[Tuple[int, int]]:
    """The chunks ``[(kb, ke), ...]`` the kernel runs for ``kt`` k-blocks, evaluated from
    :func:`k_bounds_ir` with C semantics."""
    s = np.arange(splits)
    kb, ke = k_bounds_ir(kir.Var("sk"), kir.Var("KT"), splits)
    env = {"sk": s, "KT": np.full(splits, kt)}
    return [(int(a), int(b)) for a, b in zip(evaluate.ev(kb, env), evaluate.ev(ke, env))]


def prove_split(log: ProofLog, max_tiles: int = 160) -> None:
    """``lp_split`` maps the units ``[0, tiles * S)`` one-to-one onto ``[0, tiles) x [0, S)``
    for every ``tiles <= max_tiles`` and ``S <= MAX_SPLITS`` (C semantics); with the
    persistent loop's own proof (each unit visited once), every (tile, chunk) runs once."""
    log.extend(ProofLog(list(_split_proofs(max_tiles))))


@functools.cache
def _split_proofs(max_tiles: int) -> Tuple[Any, ...]:
    cases = 0
    for S in range(2, MAX_SPLITS + 1):
        sizes = np.arange(1, max_tiles + 1)
        n = sizes * S
        tiles = np.repeat(sizes, n)
        first = np.repeat(np.cumsum(n) - n, n)
        u = np.arange(tiles.size) - first
        tile, sk = eval_split(u, tiles)
        bad = (tile < 0) | (tile >= tiles) | (sk < 0) | (sk >= S)
        # (tile, chunk) -> its slot of the group; a bijection iff every slot is hit once
        slot = first + np.where(bad, 0, sk * tiles + tile)
        hits = np.bincount(slot, minlength=tiles.size)
        if bad.any() or not np.all(hits == 1):
            i = int(np.flatnonzero(bad)[0]) if bad.any() else int(np.flatnonzero(hits != 1)[0])
            raise ProofFailedError(
                f"lp_split: {int(tiles[i])} tiles x {S} chunks: unit {int(u[i])} goes to (tile "
                f"{int(tile[i])}, chunk {int(sk[i])}) outside the grid, or a (tile, chunk) is hit twice",
                condition="split map bijective",
                witness=(int(tiles[i]), S, int(u[i])),
            )
        cases += int(u.size)
    log = ProofLog()
    log.add(
        "bijective",
        f"split-K unit map lp_split: u -> (u % tiles, u / tiles) is a bijection [0, tiles*S) -> "
        f"[0, tiles) x [0, S) for all tiles <= {max_tiles}, S in [2, {MAX_SPLITS}] (C semantics)",
        "exhaustive",
        cases,
    )
    return tuple(log.proofs)


def prove_k_partition(
    splits: int,
    log: ProofLog,
    kb: Optional[kir.Expr] = None,
    ke: Optional[kir.Expr] = None,
    sk: Optional[kir.Var] = None,
    kt: Optional[kir.Var] = None,
    max_kt: int = 4096,
) -> None:
    """The emitted chunk bounds partition the k-blocks: for every ``KT`` in ``[0, max_kt]``
    and a few large ones (up to the largest ``KT`` of a 32-bit ``K``), ``kb(0) = 0``,
    ``ke(s) = kb(s + 1)``, ``ke(S - 1) = KT`` and ``kb(s) <= ke(s)`` -- so each k-block lies
    in exactly one chunk -- and every chunk is non-empty when ``KT >= S``.  ``kb``/``ke``
    are the kernel's own expressions over ``sk`` and ``kt`` (default: :func:`k_bounds_ir`)."""
    if sk is None or kt is None or kb is None or ke is None:
        sk, kt = kir.Var("sk"), kir.Var("KT")
        kb, ke = k_bounds_ir(sk, kt, splits)
    kts = np.concatenate([np.arange(max_kt + 1), np.array([65535, 1 << 20, (2**31 - 1 + 63) // 64])])
    S = splits
    s = np.tile(np.arange(S), kts.size)
    K = np.repeat(kts, S)
    env = {sk.name: s, kt.name: K}
    try:
        b = np.asarray(evaluate.ev(kb, env)).reshape(kts.size, S)
        e = np.asarray(evaluate.ev(ke, env)).reshape(kts.size, S)
    except Exception as ex:  # an intermediate that overflows int, a bad node
        raise ProofFailedError(
            f"split-K chunk bounds ({S} splits) cannot be evaluated with C semantics: {ex}",
            condition="k chunks partition [0, KT)",
        ) from None
    ok = (b[:, 0] == 0) & (e[:, -1] == kts) & np.all(b <= e, axis=1)
    ok &= np.all(e[:, :-1] == b[:, 1:], axis=1)
    ok &= ~((kts >= S) & np.any(e - b < 1, axis=1))
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ProofFailedError(
            f"split-K chunks of KT={int(kts[i])} k-blocks into {S}: "
            f"{list(zip(b[i].tolist(), e[i].tolist()))} do not partition [0, {int(kts[i])})",
            condition="k chunks partition [0, KT)",
            witness=(int(kts[i]), S),
        )
    log.add(
        "bijective",
        f"split-K chunks [kb, ke) = [{kir.emit_expr(kb)}, {kir.emit_expr(ke)}) for sk < {S} partition "
        f"[0, KT) (each k-block in exactly one chunk; non-empty when KT >= {S}) for all KT <= {max_kt} "
        f"and 3 larger up to the 32-bit K limit (C semantics)",
        "exhaustive",
        int(s.size),
    )


def workspace_offset_ir(s: kir.Expr, r: kir.Expr, c: kir.Expr, m: kir.Expr, ldw: kir.Expr) -> kir.Expr:
    """Element offset of ``W[s, r, c]`` in the workspace: ``s * M * ldw + r * ldw + c`` (64-bit);
    the claims of the split kernel's stores and of the fix-up's reads are written with it,
    and :func:`prove_workspace` proves it injective and in bounds."""
    ll = "long long"
    return kir.Cast(ll, s) * m * ldw + kir.Cast(ll, r) * ldw + c


def prove_workspace(splits: int, log: ProofLog, max_mn: int = 16) -> None:
    """The workspace planes are disjoint and in bounds: ``(s, r, c) -> s * M * ldw + r * ldw
    + c`` for ``s < S``, ``r < M``, ``c < N <= ldw`` is injective into ``[0, S * M * ldw)``.

    Exhaustive for every ``M, N <= max_mn`` and ``ldw`` in ``N .. N + 2``; the map is the
    layout ``(N, M, S):(1, ldw, M * ldw)``, whose strides each exceed the reach of the
    modes before them (``(N - 1) < ldw``, ``(M - 1) * ldw + (N - 1) < M * ldw``), which
    makes it injective for every size, the checked grid being its witness cases."""
    log.extend(ProofLog(list(_workspace_proofs(splits, max_mn))))


@functools.cache
def _workspace_proofs(splits: int, max_mn: int) -> Tuple[Any, ...]:
    log = ProofLog()
    S = splits
    cases = 0
    expr = workspace_offset_ir(
        kir.Var("s"), kir.Var("r"), kir.Var("c"), kir.Var("M"), kir.Var("ldw", "long long")
    )
    for M in range(1, max_mn + 1):
        for N in range(1, max_mn + 1):
            for ldw in (N, N + 1, N + 2):
                s, r, c = np.meshgrid(np.arange(S), np.arange(M), np.arange(N), indexing="ij")
                off = np.asarray(evaluate.ev(expr, {"s": s, "r": r, "c": c, "M": M, "ldw": ldw})).ravel()
                if off.min() < 0 or off.max() >= S * M * ldw or np.unique(off).size != off.size:
                    raise ProofFailedError(
                        f"split-K workspace planes overlap or leave [0, S*M*ldw) at M={M}, N={N}, ldw={ldw}",
                        condition="workspace planes disjoint and in bounds",
                        witness=(M, N, ldw, S),
                    )
                cases += off.size
    log.add(
        "bijective",
        f"split-K workspace W[s, r, c] at {kir.emit_expr(expr)} is injective into "
        f"[0, {S}*M*ldw) for row < M, col < N <= ldw (every M, N <= {max_mn}, ldw in N..N+2)",
        "exhaustive",
        cases,
    )
    return tuple(log.proofs)


# ============================================================================ the rewrite
def _plane_ptr(C: kir.Var, sk: kir.Expr, M: kir.Expr, ldc: kir.Expr) -> kir.Expr:
    """The kernel's pointer to workspace plane ``sk`` (checked against the claims)."""
    return C + kir.Cast("long long", sk) * M * ldc


def splitk_ir(
    base: kir.Kernel, splits: int, name: str, *, fixup_kernel: bool = True
) -> Tuple[kir.Kernel, List[Tuple[Any, ...]]]:
    """The split-K kernel from the warp-specialized kernel's IR ``base`` (f32 output):

    * ``units = tiles * S`` after the tile count; both persistent tile loops run over the
      units, and each unit is decomposed by ``lp_split(t, tiles, tile, sk)`` -- the tile
      (passed to the scheduler ``lp_tile`` in place of ``t``) and its chunk ``sk``;
    * each k-loop ``for (kt = 0; kt < KT; ...)`` inside a tile loop runs over
      ``[kb, ke)`` (:func:`k_bounds_ir`, declared in that tile loop);
    * in the consumers' tile loop, ``C`` becomes ``Cs = C + sk * M * ldc`` (the unit's
      workspace plane), in the code and in the claims its stores carry.

    Returns the kernel and, per rewritten tile loop, ``(sk, KT, kb, ke)`` for the
    partition proof."""
    if base.cluster != 1:
        raise ProofFailedError("split-K: the base kernel has clusters", condition="split-K rewrite")
    tiles = find_decl(base.body, "tiles")
    KT = find_decl(base.body, "KT")
    out_c = (find_param(base, "C"), find_param(base, "M"), find_param(base, "ldc"))
    units = kir.Var("units")
    chunks: List[Tuple[Any, ...]] = []
    new_loops: Dict[int, kir.For] = {}
    for lp in _tile_loops(base.body, tiles):
        new_loops[id(lp)], chunk = _split_tile_loop(lp, tiles, KT, units, out_c, splits)
        chunks.append(chunk)
    body = kir.rewrite(base.body, lambda node: new_loops.get(id(node)))
    out = _with_units(body.body, tiles, units, splits)
    if fixup_kernel:
        out = _with_trigger(out)
    descr = base.description + (
        f"split-K: {splits} chunks of the k-blocks; unit u = (tile u % tiles, chunk u / tiles)",
        "stores its f32 partial into workspace plane chunk (C + chunk*M*ldc); a second kernel",
        "sums the planes",
    )
    k = replace(
        base,
        name=name,
        body=kir.Block(tuple(out), body.bare),
        devfns=base.devfns + (split_devfn(),),
        description=descr,
        helpers=(("griddep",) if fixup_kernel and "griddep" not in base.helpers else ()) + base.helpers,
    )
    return k, chunks


def _tile_loops(body: kir.Block, tiles: kir.Var) -> List[kir.For]:
    """The producer's and the consumers' persistent tile loops (``for (t ...; t < tiles; ...)``)."""
    loops = [n for n in kir.walk(body) if isinstance(n, kir.For) and n.stop is tiles and n.cond is not None]
    if len(loops) != 2:
        raise ProofFailedError(
            f"split-K rewrite: expected the producer's and the consumers' tile loops, found {len(loops)}",
            condition="split-K rewrite",
        )
    return loops


def _check_one_k_loop(lp: kir.For, KT: kir.Var) -> None:
    kloops = [
        n
        for n in kir.walk(lp.body)
        if isinstance(n, kir.For) and n.stop is KT and isinstance(n.start, kir.Const) and n.start.value == 0
    ]
    if len(kloops) != 1:
        raise ProofFailedError(
            f"split-K rewrite: expected one k-loop over [0, KT) in a tile loop, found {len(kloops)}",
            condition="split-K rewrite",
        )


def _split_tile_loop(
    lp: kir.For,
    tiles: kir.Var,
    KT: kir.Var,
    units: kir.Var,
    out_c: Tuple[kir.Var, kir.Var, kir.Var],
    splits: int,
) -> Tuple[kir.For, Tuple[Any, ...]]:
    """One tile loop rewritten over the units: the unit's (tile, chunk) and k-blocks declared
    first, ``lp_tile`` called with the tile, the k-loop over ``[kb, ke)``, and in the
    consumers' loop (the one with named barriers) C replaced by the unit's workspace plane
    ``Cs`` -- in the code and, written with the proven workspace offset, in the claims.
    Returns the loop and ``(sk, KT, kb, ke)``."""
    C, M, ldc = out_c
    t = lp.var
    tile, sk = kir.Var("tile"), kir.Var("sk")
    kb_e, ke_e = k_bounds_ir(sk, KT, splits)
    kb, ke = kir.Var("kb"), kir.Var("ke")
    consumer = any(isinstance(n, kir.NamedBarrier) for n in kir.walk(lp.body))
    Cs = kir.Var("Cs", C.ctype) if consumer else None
    _check_one_k_loop(lp, KT)

    unit = unit_rewrite(t, tile, KT, kb, ke)

    def fn(node: Any) -> Any:
        if Cs is not None and node is C:
            return Cs
        return unit(node)

    body = kir.rewrite(lp.body, fn)
    if Cs is not None:
        # the claims: the byte address of C's element is now that of the same element in
        # workspace plane sk, written with the proven workspace offset (not with Cs)
        plane = 4 * workspace_offset_ir(sk, kir.Const(0), kir.Const(0), M, ldc)

        def claims(node: Any) -> Any:
            if isinstance(node, kir.Cast) and node.a is Cs and node.ctype == "long long":
                return addr_of(C) + plane
            return None

        body = kir.rewrite(body, claims)
    head: List[kir.Stmt] = [
        kir.Decl(tile),
        kir.Decl(sk),
        kir.Eval(kir.Call("lp_split", (t, tiles, tile, sk), "void")),
        kir.Decl(kb, kb_e, const=True, comment="this unit's k-blocks [kb, ke)"),
        kir.Decl(ke, ke_e, const=True),
    ]
    if Cs is not None:
        head.append(
            kir.Decl(Cs, _plane_ptr(C, sk, M, ldc), const=True, comment="this unit's f32 workspace plane")
        )
    new = replace(lp, stop=units, cond=t.lt(units), body=kir.Block(tuple(head) + body.body, body.bare))
    return new, (sk, KT, kb_e, ke_e)


def _with_trigger(body: List[kir.Stmt]) -> List[kir.Stmt]:
    """The split kernel's top-level statements when a fix-up kernel follows it: right after
    the base kernel's grid dependency wait, let the fix-up be scheduled (a base without the
    wait gets the trigger first, which :func:`prove_split_order` then refuses)."""
    trigger = (
        kir.Comment(
            "the fix-up kernel may launch now (programmatic dependent launch): it waits for\n"
            "this grid's completion (griddepcontrol.wait) before its first read"
        ),
        kir.Eval(kir.Call("lp_griddep_launch", (), "void")),
    )
    return list(after_grid_wait(tuple(body), trigger))


def _with_units(body: Tuple[kir.Stmt, ...], tiles: kir.Var, units: kir.Var, splits: int) -> List[kir.Stmt]:
    """The top-level statements with ``units = tiles * S`` declared right after ``tiles``."""
    out: List[kir.Stmt] = []
    for st in body:
        out.append(st)
        if isinstance(st, kir.Decl) and st.var is tiles:
            out.append(
                kir.Decl(units, tiles * splits, const=True, comment=f"(tile, k chunk) units, {splits} chunks")
            )
    if not any(isinstance(s, kir.Decl) and s.var is units for s in out):
        raise ProofFailedError(
            "split-K rewrite: tiles is not declared at the top level", condition="split-K rewrite"
        )
    return out


# ============================================================================ reduction
def prove_fixup_order(k: kir.Kernel, log: ProofLog) -> None:
    """The fix-up kernel reads the workspace only after the split kernel has finished: its
    first statement (at the top level, under no condition and in no loop) is the grid
    dependency wait, and every memory access of the kernel comes after it.  With the stream
    order (or the programmatic dependency the runtime launches it with), each workspace
    plane is read after every unit stored it; the workspace is written and read by these
    two kernels only, so no counter or flag has to be reset for the next launch."""
    n, _ = grid_wait_first(
        k,
        "fix-up kernel",
        "a workspace read could run before the split kernel's stores",
        "fix-up after the split kernel",
    )
    log.add(
        "protocol",
        f"fix-up ordering: griddepcontrol.wait is the kernel's first statement (top level, "
        f"unconditional), before all {n} memory accesses: every workspace read follows the "
        f"split kernel's completion; nothing to reset between launches",
        "exhaustive",
        n,
    )


def prove_split_order(k: kir.Kernel, log: ProofLog) -> None:
    """The split kernel (fix-up reduction) may be launched as a programmatic dependent of the
    previous kernel of the stream -- the last call's fix-up, which reads the workspace this
    kernel writes: its first statement (top level, unconditional) is the one grid dependency
    wait, so every memory access (the TMA loads of A and B included: A may be the previous
    kernel's output) and every workspace store comes after that kernel's completion.  The
    trigger ``griddepcontrol.launch_dependents`` only lets the fix-up be scheduled early; the
    fix-up's own first statement waits for this grid (:func:`prove_fixup_order`)."""
    n, t = grid_wait_first(
        k,
        "split kernel",
        "a workspace store could run while the previous call's fix-up reads it",
        "split kernel after the previous grid",
    )
    log.add(
        "protocol",
        f"split kernel ordering: griddepcontrol.wait is the kernel's first statement (top level, "
        f"unconditional), before all {n} memory accesses and {t} TMA load sites: launched as a "
        f"programmatic dependent, it writes the workspace only after the previous grid (the last "
        f"fix-up) completed",
        "exhaustive",
        n + t,
    )


def _prove_plane_loop(k: kir.Kernel, splits: int, log: ProofLog) -> None:
    """The fix-up's loop over the plane index of its workspace reads runs over ``0, 1, ..,
    S - 1`` in order (the claims do not bound the plane index)."""
    loops = plane_read_loops_ir(k, whole=True)
    if any(b != (0, splits, 1) for b in loops):
        raise ProofFailedError(
            f"fix-up kernel {k.name}: its plane loop runs over {loops}, not planes 0..{splits - 1} in order",
            condition="reducer reads all planes",
            witness=tuple(loops),
        )
    log.add(
        "bijective",
        f"fix-up plane loop: each workspace read's plane index runs over 0..{splits - 1} in order (IR)",
        "exhaustive",
        len(loops) * splits,
    )


def _reduce_index(s: kir.Expr, r: kir.Expr, c: kir.Expr, M: kir.Expr, N: kir.Expr) -> kir.Expr:
    """The fix-up kernel's element index of ``W[s, r, c]`` (checked against the claims)."""
    return (kir.Cast("long long", s) * M + r) * N + c


# ============================================================================ fix-up grid
#: the claim name of the fix-up's C store (:func:`reduce_ir`)
FIXUP_C_STORE = "C element store C[r, c]"


@dataclass(frozen=True)
class FixupShape:
    """The fix-up CTA's geometry: ``threads`` per CTA (a multiple of 32, <= 1024), one
    output column per thread, one row per CTA (``blockIdx.y``).  :data:`FIXUP_DEFAULT` is
    the kernel :func:`reduce_ir` builds; :func:`fixup_grid` its launch grid, and
    :func:`prove_fixup_grid` checks on a kernel's IR that the grid covers the output once."""

    threads: int = REDUCE_THREADS

    def validate(self) -> "FixupShape":
        t = self.threads
        if not (isinstance(t, int) and not isinstance(t, bool) and 32 <= t <= 1024 and t % 32 == 0):
            raise GemmConfigError(f"split-K fix-up shape {self}: threads a multiple of 32 in 32..1024")
        return self


#: the fix-up kernel's CTA (256 threads, one element each)
FIXUP_DEFAULT = FixupShape()


def fixup_grid(m: int, n: int, shape: FixupShape = FIXUP_DEFAULT) -> Tuple[int, int, int]:
    """The fix-up kernel's launch grid for an ``m x n`` output: ``(ceil(n / threads), m, 1)``.

    >>> fixup_grid(16, 4096), fixup_grid(3, 257)
    ((16, 16, 1), (2, 3, 1))
    """
    shape.validate()
    if m < 1 or n < 1:
        raise GemmConfigError(f"split-K fix-up grid: the output must be at least 1 x 1, got {m} x {n}")
    return (-(-n // shape.threads), m, 1)


def _store_sites(body: kir.Block) -> List[Tuple[kir.Mem, List[kir.For], List[kir.Expr]]]:
    """Every C store of the fix-up with the loops and the ``if`` conditions that enclose it
    (program structure; an ``else`` branch's condition negated)."""
    out: List[Tuple[kir.Mem, List[kir.For], List[kir.Expr]]] = []

    def go(node: Any, loops: List[kir.For], guards: List[kir.Expr]) -> None:
        if isinstance(node, kir.Block):
            for st in node.body:
                go(st, loops, guards)
        elif isinstance(node, kir.For):
            go(node.body, loops + [node], guards)
        elif isinstance(node, kir.If):
            go(node.then, loops, guards + [node.cond])
            if node.orelse is not None:
                go(node.orelse, loops, guards + [kir.Un("!", node.cond)])
        elif isinstance(node, kir.Assign):
            if isinstance(node.lhs, kir.Mem) and node.lhs.claim.what == FIXUP_C_STORE:
                out.append((node.lhs, loops, guards))
            for x in kir.walk(node.rhs):
                if isinstance(x, kir.Mem) and x.claim.what == FIXUP_C_STORE:
                    out.append((x, loops, guards))

    go(body, [], [])
    return out


_COVER = "fix-up covers the output once"
_BLOCK_NAMES = ("blockIdx.x", "blockIdx.y", "threadIdx.x")


@dataclass
class _StoreSite:
    """The fix-up's one C store: its claim's coordinates ``(r, c)`` and their bounds
    ``(M, N)``, the guards and constant loops around it, the kernel's declarations, and the
    ids of the block/thread indices and of ``M``, ``N`` wherever they are named."""

    rexp: kir.Expr
    cexp: kir.Expr
    mvar: kir.Expr
    nvar: kir.Expr
    guards: List[kir.Expr]
    bounds: List[Tuple[kir.Var, np.ndarray]]
    defs: Dict[int, kir.Expr]
    ids_by_name: Dict[str, List[int]]
    mn_ids: Dict[str, List[int]]


def prove_fixup_grid(
    k: kir.Kernel, shape: FixupShape, log: ProofLog, max_n: int = 160, max_m: int = 5
) -> None:
    """The fix-up's C stores cover ``[0, M) x [0, N)`` exactly once with the grid
    :func:`fixup_grid`: ``(r, c)`` are the C store claim's bound coordinates, evaluated with C
    semantics (the kernel's own declarations inlined) at every ``(blockIdx.x, blockIdx.y,
    threadIdx.x)`` of the grid and every index of the constant loops around the store, kept
    where the ``if`` conditions around it hold.  Exhaustive for ``M <= max_m`` and every ``N
    <= max_n``, every ``N`` within 2 of a multiple ``q * threads`` (``q <= 3``: each block
    edge), ``M <= max_m`` and a few large ``N`` (the map is affine in the block indices); the
    kernel's ``threads`` must be the shape's."""
    shape.validate()
    site = _store_site(k, shape)
    cases = 0
    T = shape.threads
    edges = {q * T + d for q in range(1, 4) for d in range(-2, 3)}
    ns = sorted(set(range(1, max_n + 1)) | edges | {4095, 4096, 4097, 8192, 11008})
    for M in range(1, max_m + 1):
        for N in ns:
            _check_cells_once(k, site, shape, M, N)
            cases += M * N
    loops_txt = ", ".join(f"{v.name} < {len(b)}" for v, b in site.bounds) or "no loop"

    def shown(e: kir.Expr) -> str:  # a coordinate and, for a declared variable, its definition
        d = site.defs.get(id(e))
        return kir.emit_expr(e) + (f" = {kir.emit_expr(d)}" if d is not None else "")

    log.add(
        "bijective",
        f"fix-up cells: grid (ceil(N/{T}), M) x {T} threads x ({loops_txt}) -> C store "
        f"({shown(site.rexp)}, {shown(site.cexp)}) under its guards covers [0, M) x [0, N) once (every N <= "
        f"{max_n}, N within 2 of q * {T}, 4095..4097, 8192, 11008; M <= {max_m}; C semantics)",
        "exhaustive",
        cases,
    )


def _store_site(k: kir.Kernel, shape: FixupShape) -> _StoreSite:
    """The fix-up's one C store site, read from the IR; refused by name when the kernel's
    threads are not the shape's, when there is not exactly one C store, or when a loop
    around it is not constant."""
    if k.threads != shape.threads:
        raise ProofFailedError(
            f"fix-up kernel {k.name}: {k.threads} threads per CTA, the shape launches {shape.threads}",
            condition=_COVER,
            witness=(k.threads, shape.threads),
        )
    sites = _store_sites(k.body)
    if len(sites) != 1:
        raise ProofFailedError(
            f"fix-up kernel {k.name}: {len(sites)} C store sites, expected one", condition=_COVER
        )
    mem, loops, guards = sites[0]
    if len(mem.claim.bounds) != 2:
        raise ProofFailedError(
            f"fix-up kernel {k.name}: the C store claim bounds {len(mem.claim.bounds)} coordinates, "
            "not (r, c)",
            condition=_COVER,
        )
    (rexp, mvar), (cexp, nvar) = mem.claim.bounds
    defs = {id(n.var): n.init for n in kir.walk(k.body) if isinstance(n, kir.Decl) and n.init is not None}
    bounds = []
    for lp in loops:
        a, z, st = lp.start, lp.stop, lp.step
        if not (isinstance(a, kir.Const) and isinstance(z, kir.Const) and isinstance(st, kir.Const)) or (
            lp.cond is not None
        ):
            raise ProofFailedError(
                f"fix-up kernel {k.name}: the loop over {lp.var.name} around the C store is not constant",
                condition=_COVER,
                witness=lp.var.name,
            )
        bounds.append((lp.var, np.arange(a.value, z.value, st.value)))
    named = list(kir.walk(k.body)) + list(kir.walk(mem.claim))
    ids_by_name: Dict[str, List[int]] = {}
    for n in named:
        if isinstance(n, kir.Var) and n.name in _BLOCK_NAMES:
            ids_by_name.setdefault(n.name, []).append(id(n))
    mn_ids: Dict[str, List[int]] = {"M": [], "N": []}  # the parameters M, N wherever they are named
    for n in named:
        if isinstance(n, kir.Var) and n.name in mn_ids:
            mn_ids[n.name].append(id(n))
    return _StoreSite(rexp, cexp, mvar, nvar, guards, bounds, defs, ids_by_name, mn_ids)


def _check_cells_once(k: kir.Kernel, site: _StoreSite, shape: FixupShape, M: int, N: int) -> None:
    """With the grid :func:`fixup_grid` ``(M, N)``: every kept store lands inside the
    ``M x N`` output and every cell is stored once (C semantics, all threads at once)."""
    gx, gy, _ = fixup_grid(M, N, shape)
    axes = [np.arange(gx), np.arange(gy), np.arange(shape.threads)] + [b for _, b in site.bounds]
    grids = np.meshgrid(*axes, indexing="ij")
    env: Dict[int, np.ndarray] = {}
    for nm, g in zip(_BLOCK_NAMES, grids[:3]):
        for i in site.ids_by_name.get(nm, []):
            env[i] = g.ravel()
    for (v, _), g in zip(site.bounds, grids[3:]):
        env[id(v)] = g.ravel()
    for ext, val in ((site.mvar, M), (site.nvar, N)):
        if isinstance(ext, kir.Var):
            env[id(ext)] = np.int64(val)
    for i in site.mn_ids["M"]:
        env.setdefault(i, np.int64(M))
    for i in site.mn_ids["N"]:
        env.setdefault(i, np.int64(N))
    ctx = evaluate.Ctx(env, site.defs, {}, {})
    size = grids[0].size
    try:
        r = np.broadcast_to(evaluate.eval_expr(site.rexp, ctx)[0], (size,))
        c = np.broadcast_to(evaluate.eval_expr(site.cexp, ctx)[0], (size,))
        keep = np.ones(size, dtype=bool)
        for gd in site.guards:
            keep &= np.broadcast_to(evaluate.eval_expr(gd, ctx)[0], (size,)) != 0
    except Exception as ex:  # an unknown variable: the map is not closed
        raise ProofFailedError(
            f"fix-up kernel {k.name}: the C store's (r, c) cannot be evaluated ({ex})", condition=_COVER
        ) from None
    inside = (r >= 0) & (r < M) & (c >= 0) & (c < N)
    if np.any(keep & ~inside):
        i = int(np.flatnonzero(keep & ~inside)[0])
        raise ProofFailedError(
            f"fix-up kernel {k.name}: with grid ({gx}, {gy}) a store lands at ({int(r[i])}, "
            f"{int(c[i])}) outside the {M} x {N} output",
            condition=_COVER,
            witness=(M, N, int(r[i]), int(c[i])),
        )
    hits = np.bincount((r[keep] * N + c[keep]).astype(np.int64), minlength=M * N)
    if hits.size != M * N or not np.all(hits == 1):
        bad = int(np.flatnonzero(hits != 1)[0])
        raise ProofFailedError(
            f"fix-up kernel {k.name}: with grid ({gx}, {gy}) cell ({bad // N}, {bad % N}) of a "
            f"{M} x {N} output is stored {int(hits[bad])} times, not once",
            condition=_COVER,
            witness=(M, N, bad // N, bad % N),
        )


#: the f32 -> output conversion the reduction kernel calls, per output type
_CVT = {"f16": "__float2half_rn", "bf16": "__float2bfloat16_rn", "f32": None}


def reduce_ir(splits: int, out: str, name: str) -> kir.Kernel:
    """The fix-up kernel: ``C[r, c] = cvt(sum_{s < S} W[s, r, c])`` for ``r < M``,
    ``c < N``, the planes summed in order ``s = 0, 1, ...`` (deterministic).  Its CTA is
    :data:`FIXUP_DEFAULT`: block ``(x, y)`` = (256 columns, row ``y``), one element per
    thread; its grid is :func:`fixup_grid` ``(m, n)``."""
    return _reduce_kernel(splits, out, name, None, {})


def _reduce_kernel(splits: int, out: str, name: str, value: Any, ev: Dict[str, kir.Var]) -> kir.Kernel:
    """:func:`reduce_ir`'s kernel; ``value(acc, r, c)``: the f32 value stored (converted)
    in place of the sum ``acc`` (None: the sum); ``ev``: the variables it reads (``M``,
    ``N`` shared with the kernel's)."""
    if out not in _CVT:
        raise GemmConfigError(f"split-K reduction: output {out!r} must be one of {sorted(_CVT)}")
    W = kir.Var("W", "const float*")
    C = kir.Var("C", "lp_out_t*")
    M, N = ev.get("M", kir.Var("M")), ev.get("N", kir.Var("N"))
    ldc = kir.Var("ldc", "long long")
    tid = kir.THREAD_IDX
    bx = kir.BLOCK_IDX
    by = kir.Var("blockIdx.y", builtin=True)
    c, r = kir.Var("c"), kir.Var("r")
    s = kir.Var("s")
    acc = kir.Var("acc", "float")
    w_off = _reduce_index(s, r, c, M, N)
    wclaim = kir.Claim(
        PLANE_READ,
        addr_of(W) + 4 * workspace_offset_ir(s, r, c, M, N),
        bounds=((r, M), (c, N)),
        width=4,
    )
    ob = OUT_DTYPES[out][1]
    cclaim = kir.Claim(
        FIXUP_C_STORE,
        addr_of(C) + ob * (kir.Cast("long long", r) * ldc + c),
        bounds=((r, M), (c, N)),
        width=ob,
    )
    cvt = _CVT[out]
    x: kir.Expr = acc if value is None else value(acc, r, c)
    val: kir.Expr = x if cvt is None else kir.Call(cvt, (x,), "lp_out_t")
    element = kir.block(
        kir.Decl(acc, kir.FloatLit("0.0f")),
        kir.For(
            s,
            kir.Const(0),
            kir.Const(splits),
            kir.block(kir.Assign(acc, kir.Mem(W, wclaim, idx=w_off), op="+=")),
            unroll=True,
        ),
        kir.Assign(kir.Mem(C, cclaim, idx=kir.Cast("long long", r) * ldc + c), val),
    )
    T = FIXUP_DEFAULT.threads
    cells = (
        kir.Decl(c, bx * T + tid, const=True),
        kir.Decl(r, by, const=True),
        kir.If(r.lt(M), kir.block(kir.If(c.lt(N), element))),
    )
    body = kir.block(
        kir.Comment("the split kernel's grid has completed and its stores are visible"),
        kir.Eval(kir.Call(GRID_WAIT, (), "void")),
        kir.Comment(
            "the next call's split kernel may be scheduled now (programmatic dependent launch):\n"
            "its first statement waits for this grid's completion before its workspace stores"
        ),
        kir.Eval(kir.Call("lp_griddep_launch", (), "void")),
        *cells,
    )
    params = (
        ("const float* __restrict__", W),
        ("lp_out_t* __restrict__", C),
        ("int", M),
        ("int", N),
        ("long long", ldc),
    )
    geometry = f"block ({REDUCE_THREADS} columns, row blockIdx.y)"
    return kir.Kernel(
        name,
        params,
        body,
        T,
        typedefs=(("lp_out_t", OUT_DTYPES[out][0]),),
        helpers=("griddep",),
        sizes={"lp_out_t": ob, "float": 4},
        description=(
            "",
            f"split-K fix-up generated by layoutproof {SPLITK_VERSION}: C[r, c] = {cvt or '(float)'}"
            f"(sum of W[s, r, c], s = 0..{splits - 1}) in order",
            f"W: {splits} f32 planes of M x N (row stride N); C row-major, row stride ldc; {geometry}",
        ),
    )


# ============================================================================ fix-up epilogue
#: the bias element types the fix-up epilogue reads (converted to f32 as the fused
#: epilogue does: :data:`layoutproof.gpu.kernels.epilogue.BIAS_DTYPES`)
FIXUP_BIAS_DTYPES = ("f32", "f16", "bf16")
#: the claim names of the fix-up epilogue's loads (:func:`reduce_epilogue_ir`)
FIXUP_BIAS_LOAD = "fix-up epilogue bias load"
FIXUP_CIN_LOAD = "fix-up epilogue C input load Cin[r, c]"
_FLOW = "fix-up epilogue data flow"


@dataclass(frozen=True)
class FixupEpilogue:
    """The fused epilogue the fix-up kernel applies to each summed element: ``C[r, c] =
    act(alpha * acc + beta * Cin[r, c] + bias)`` (``alpha_beta``) or ``act(acc + bias)``,
    the bias ``bias[c]`` (``bias_axis="n"``) or ``bias[r]`` (``"m"``) of ``bias_dtype``
    converted to f32 -- the activations and the arithmetic of the fused epilogue
    (:mod:`layoutproof.gpu.kernels.epilogue`), in f32.

    >>> FixupEpilogue("gelu", True, "m", "bf16").validate().key()
    'biasgelu_ab_biasm_bbf16'
    """

    activation: str = "none"
    alpha_beta: bool = False
    bias_axis: str = "n"
    bias_dtype: str = "f32"

    def key(self) -> str:
        return (
            f"bias{self.activation}"
            + ("_ab" if self.alpha_beta else "")
            + ("_biasm" if self.bias_axis == "m" else "")
            + (f"_b{self.bias_dtype}" if self.bias_dtype != "f32" else "")
        )

    def validate(self) -> "FixupEpilogue":
        check_epilogue_fields(
            "FixupEpilogue", self.activation, self.bias_axis, self.bias_dtype, FIXUP_BIAS_DTYPES
        )
        if type(self.alpha_beta) is not bool:
            raise GemmConfigError(f"FixupEpilogue: alpha_beta={self.alpha_beta!r} must be a bool")
        return self


@dataclass(frozen=True)
class FixupEpilogueConfig(BaseKernelFields):
    """An unsplit kernel ``base`` -- the 16-row mma.sync decode tile (a ``GemmConfig``) or
    a wgmma one (an ``Sm90Config``) -- storing its f32 product into one workspace plane
    (row stride N), then the fix-up kernel as a one-plane reduction applying the fused
    epilogue (:func:`reduce_epilogue_ir` with one plane): the plain product's kernel with
    the epilogue moved into the fix-up.

    >>> from layoutproof.gpu.config import GemmConfig
    >>> dec = GemmConfig(bm=16, bn=32, bk=128, warps_m=1, warps_n=2, stages=8)
    >>> FixupEpilogueConfig(dec, "silu").key()
    '16x32x128_w1x2_s8_auto_g8_fx_biassilu'
    """

    base: Any
    activation: str = "none"
    alpha_beta: bool = False
    bias_axis: str = "n"
    bias_dtype: str = "f32"

    #: one plane, summed by the fix-up kernel
    splits = 1
    reduction = "kernel"

    def fixup_epilogue(self) -> FixupEpilogue:
        return FixupEpilogue(self.activation, self.alpha_beta, self.bias_axis, self.bias_dtype)

    def key(self) -> str:
        return f"{self.base.key()}_fx_{self.fixup_epilogue().key()}"

    def validate(self) -> "FixupEpilogueConfig":
        from ..config import GemmConfig

        if not isinstance(self.base, (GemmConfig, Sm90Config)):
            raise GemmConfigError(
                "FixupEpilogueConfig: base must be a GemmConfig or an Sm90Config, got "
                f"{type(self.base).__name__}"
            )
        self.base.validate()
        if getattr(self.base, "cluster", 1) != 1:
            raise GemmConfigError("FixupEpilogueConfig: the base kernel must not use clusters")
        self.fixup_epilogue().validate()
        return self


def _fixup_bias_index(r: kir.Var, c: kir.Var, axis: str) -> kir.Expr:
    """The fix-up's bias element index in its code (checked against the load's claim)."""
    return r if axis == "m" else c


def _fixup_cin_index(r: kir.Var, c: kir.Var, ldci: kir.Var) -> kir.Expr:
    """The fix-up's C input element index in its code (checked against the load's claim)."""
    return kir.Cast("long long", r) * ldci + c


def _fixup_value(
    acc: kir.Var, ep: FixupEpilogue, out: str, r: kir.Var, c: kir.Var, ev: Dict[str, kir.Var]
) -> kir.Expr:
    """``act(alpha * acc + beta * Cin[r, c] + bias)`` (or ``act(acc + bias)``) in f32: the
    bias at the element's column (row), the loads claimed at its own coordinates."""
    btype, bw, bconv = BIAS_DTYPES[ep.bias_dtype]
    coord, ext = (r, ev["M"]) if ep.bias_axis == "m" else (c, ev["N"])
    bclaim = kir.Claim(
        f"{FIXUP_BIAS_LOAD} bias[{'r' if ep.bias_axis == 'm' else 'c'}]",
        addr_of(ev["bias"]) + bw * coord,
        bounds=((coord, ext),),
        width=bw,
    )
    bval: kir.Expr = kir.Mem(ev["bias"], bclaim, idx=_fixup_bias_index(r, c, ep.bias_axis))
    if bconv is not None:
        bval = kir.Call(bconv, (bval,), "float")
    x: kir.Expr = acc
    if ep.alpha_beta:
        ob = OUT_DTYPES[out][1]
        cclaim = kir.Claim(
            FIXUP_CIN_LOAD,
            addr_of(ev["Cin"]) + ob * (kir.Cast("long long", r) * ev["ldci"] + c),
            bounds=((r, ev["M"]), (c, ev["N"])),
            width=ob,
        )
        cin: kir.Expr = kir.Mem(ev["Cin"], cclaim, idx=_fixup_cin_index(r, c, ev["ldci"]))
        tof = BIAS_DTYPES[out][2]  # the output type's conversion to float (f32: none)
        if tof is not None:
            cin = kir.Call(tof, (cin,), "float")
        x = ev["alpha"] * x + ev["beta"] * cin + bval
    else:
        x = x + bval
    return kir.Call(f"lp_act_{ep.activation}", (x,), "float")


def reduce_epilogue_ir(splits: int, out: str, name: str, ep: FixupEpilogue) -> kir.Kernel:
    """The fix-up kernel with the fused epilogue: ``C[r, c] = cvt(act(alpha * sum_s W[s, r,
    c] + beta * Cin[r, c] + bias))`` (``act(sum + bias)`` without ``alpha_beta``), the
    bias ``bias[c]`` or ``bias[r]`` (``ep.bias_axis``) converted to f32, for ``r < M``, ``c
    < N``; ``splits`` may be 1 (an unsplit kernel's one f32 plane).  The CTA, grid, plane
    order and ordering after the GEMM kernel are :func:`reduce_ir`'s; the parameters after
    ``ldc`` are the bias and, with ``alpha_beta``, ``alpha``, ``beta``, ``Cin`` and its row
    stride ``ldci``."""
    ep = ep.validate()
    if type(splits) is not int or not 1 <= splits <= MAX_SPLITS:
        raise GemmConfigError(f"fix-up epilogue: splits={splits!r} must be an int in [1, {MAX_SPLITS}]")
    btype = BIAS_DTYPES[ep.bias_dtype][0]
    ev = dict(
        M=kir.Var("M"),
        N=kir.Var("N"),
        bias=kir.Var("bias", f"const {btype}*"),
        alpha=kir.Var("alpha", "float"),
        beta=kir.Var("beta", "float"),
        Cin=kir.Var("Cin", "const lp_out_t*"),
        ldci=kir.Var("ldci", "long long"),
    )
    k = _reduce_kernel(splits, out, name, lambda acc, r, c: _fixup_value(acc, ep, out, r, c, ev), ev)
    params = k.params + (("const " + btype + "* __restrict__", ev["bias"]),)
    if ep.alpha_beta:
        params += (
            ("float", ev["alpha"]),
            ("float", ev["beta"]),
            ("const lp_out_t* __restrict__", ev["Cin"]),
            ("long long", ev["ldci"]),
        )
    bname = "bias[r]" if ep.bias_axis == "m" else "bias[c]"
    what = f"alpha * sum + beta * Cin[r, c] + {bname}" if ep.alpha_beta else f"sum + {bname}"
    return replace(
        k,
        params=params,
        helpers=("act",) + k.helpers,
        sizes={**k.sizes, btype: BIAS_DTYPES[ep.bias_dtype][1]},
        description=k.description
        + (f"fused epilogue in the fix-up: C = {ep.activation}({what}) in f32, bias {ep.bias_dtype}",),
    )


def _store_rhs(k: kir.Kernel) -> Tuple[Any, Any]:
    """The fix-up's one C store and its value."""
    stores = [
        n
        for n in kir.walk(k.body)
        if isinstance(n, kir.Assign) and isinstance(n.lhs, kir.Mem) and n.lhs.claim.what == FIXUP_C_STORE
    ]
    if len(stores) != 1:
        raise ProofFailedError(
            f"fix-up kernel {k.name}: {len(stores)} C stores, expected one", condition=_FLOW
        )
    return stores[0].lhs, stores[0].rhs


def prove_fixup_data_flow(k: kir.Kernel, ep: FixupEpilogue, out: str, log: ProofLog) -> None:
    """The fix-up epilogue's data flow, on the tree: the one C store at ``(r, c)`` (its
    claim's coordinates) writes ``cvt(act(alpha * acc + beta * Cin + bias))`` (or
    ``cvt(act(acc + bias))``) where ``acc`` is the variable the plane loop sums the
    workspace reads of ``(s, r, c)`` into, the bias load is claimed at ``bias + bytes *
    c`` (``* r`` along M) and the C input load at ``Cin + bytes * (r * ldci + c)`` -- the
    store's own ``r`` and ``c`` -- so each stored value is that of its own cell (the claims
    themselves are discharged against the code's addresses by the obligations)."""
    store, rhs = _store_rhs(k)
    (r, _), (c, _) = store.claim.bounds
    cvt = _CVT[out]

    def fail(why: str) -> NoReturn:
        raise ProofFailedError(
            f"fix-up kernel {k.name}: the stored value is not {ep.activation}(... + bias) of its own "
            f"cell: {why}",
            condition=_FLOW,
            witness=why,
        )

    v: Any = rhs
    if cvt is not None:
        if not (isinstance(v, kir.Call) and v.name == cvt and len(v.args) == 1):
            fail(f"the store does not convert with {cvt}")
        v = v.args[0]
    if not (isinstance(v, kir.Call) and v.name == f"lp_act_{ep.activation}" and len(v.args) == 1):
        fail(f"the store does not apply lp_act_{ep.activation}")
    t = v.args[0]
    if not (isinstance(t, kir.Bin) and t.op == "+"):
        fail("the activation's argument is not a sum with the bias")
    body: Any = t.a
    bval: Any = t.b

    def load_of(e: Any, conv: Optional[str]) -> Optional[kir.Mem]:
        if conv is not None:
            if not (isinstance(e, kir.Call) and e.name == conv and len(e.args) == 1):
                return None
            e = e.args[0]
        return e if isinstance(e, kir.Mem) else None

    bw, bconv = BIAS_DTYPES[ep.bias_dtype][1], BIAS_DTYPES[ep.bias_dtype][2]
    bload = load_of(bval, bconv)
    coord, cname = (r, "r") if ep.bias_axis == "m" else (c, "c")
    if bload is None or not bload.claim.what.startswith(FIXUP_BIAS_LOAD):
        fail("the added term is not the bias load")
    bias_v = bload.ptr
    want = kir.emit_expr(addr_of(bias_v) + bw * coord)
    bc = bload.claim.bounds
    if kir.emit_expr(bload.claim.addr) != want or len(bc) != 1 or bc[0][0] is not coord:
        fail(f"the bias load is claimed at {kir.emit_expr(bload.claim.addr)}, not bias[{cname}] ({want})")
    if ep.alpha_beta:
        ok = (
            isinstance(body, kir.Bin)
            and body.op == "+"
            and isinstance(body.a, kir.Bin)
            and body.a.op == "*"
            and isinstance(body.b, kir.Bin)
            and body.b.op == "*"
        )
        if not ok:
            fail("the sum is not alpha * acc + beta * Cin")
        alpha, acc_e, beta = body.a.a, body.a.b, body.b.a
        if not (isinstance(alpha, kir.Var) and alpha.name == "alpha" and isinstance(beta, kir.Var)):
            fail("the factors are not alpha and beta")
        if beta.name != "beta":
            fail("the C input's factor is not beta")
        cload = load_of(body.b.b, BIAS_DTYPES[out][2])
        if cload is None or cload.claim.what != FIXUP_CIN_LOAD:
            fail("beta's factor is not the C input load")
        cwant = kir.emit_expr(
            addr_of(cload.ptr) + OUT_DTYPES[out][1] * (kir.Cast("long long", r) * kir.Var("ldci") + c)
        )
        cb = cload.claim.bounds
        if kir.emit_expr(cload.claim.addr) != cwant or len(cb) != 2 or cb[0][0] is not r or cb[1][0] is not c:
            fail(f"the C input load is claimed at {kir.emit_expr(cload.claim.addr)}, not Cin[r, c] ({cwant})")
    else:
        acc_e = body
    reads: List[Any] = [
        n
        for n in kir.walk(k.body)
        if isinstance(n, kir.Assign)
        and n.op == "+="
        and isinstance(n.rhs, kir.Mem)
        and n.rhs.claim.what == PLANE_READ
    ]
    if not isinstance(acc_e, kir.Var) or len(reads) != 1 or reads[0].lhs is not acc_e:
        fail("the summed term is not the variable the plane loop accumulates")
    wb = reads[0].rhs.claim.bounds
    if len(wb) != 2 or wb[0][0] is not r or wb[1][0] is not c:
        fail("the planes summed are not read at the store's (r, c)")
    form = "alpha * acc + beta * Cin[r, c] + " if ep.alpha_beta else "acc + "
    log.add(
        "equal",
        f"fix-up epilogue data flow: C[r, c] = {cvt or '(float)'}(lp_act_{ep.activation}({form}"
        f"bias[{cname}])), acc the sum of W[s, r, c]; every load claimed at the store's own (r, c), "
        f"bias {ep.bias_dtype}" + (f" converted by {bconv}" if bconv else ""),
        "exhaustive",
        1,
    )


_FIXUPS: Dict[Tuple[int, GemmProblem, Optional[FixupEpilogue]], GemmKernel] = {}


def generate_fixup(
    splits: int, problem: GemmProblem, ep: Optional[FixupEpilogue] = None, *, memo: bool = True
) -> GemmKernel:
    """The fix-up kernel summing ``splits`` f32 planes into ``problem.out`` -- with the
    fused epilogue ``ep`` (:func:`reduce_epilogue_ir`), else the plain sum
    (:func:`reduce_ir`) -- proven and emitted: the ordering after the GEMM kernel
    (:func:`prove_fixup_order`), the plane loop, every access's claim, and with ``ep`` the
    grid's cover of the output (:func:`prove_fixup_grid`) and the data flow
    (:func:`prove_fixup_data_flow`)."""
    prob = problem.validate()
    if memo and (splits, prob, ep) in _FIXUPS:
        return _FIXUPS[(splits, prob, ep)]
    if ep is None:
        k = _plane_fixup(None, splits, prob)
    else:
        rlog = ProofLog()
        rname = f"lp_splitk_reduce_{prob.out}_s{splits}_{ep.validate().key()}"
        rir = reduce_epilogue_ir(splits, prob.out, rname, ep)
        prove_fixup_order(rir, rlog)
        _prove_plane_loop(rir, splits, rlog)
        prove_fixup_grid(rir, FIXUP_DEFAULT, rlog, max_n=80, max_m=3)
        prove_fixup_data_flow(rir, ep, prob.out, rlog)
        title = (
            f"proven before emission (split-K fix-up with epilogue {ep.key()}, {splits} planes, "
            f"{prob.out} out)"
        )
        rsrc = finish(rir, rlog, title)
        no_tile: Any = None  # the fix-up has no tile configuration
        k = GemmKernel(no_tile, prob, rsrc, rname, FIXUP_DEFAULT.threads, 0, rlog, {}, rir)
    if memo:
        _FIXUPS[(splits, prob, ep)] = k
    return k


# ============================================================================ generation
@dataclass
class SplitKKernels:
    """The two kernels of a split-K GEMM: ``gemm`` (the rewritten warp-specialized kernel,
    f32 partials into the workspace) and ``reduce`` (the fix-up), with their proof logs."""

    config: SplitKConfig
    problem: GemmProblem
    gemm: GemmKernel
    reduce: Optional[GemmKernel]  # None for the serial reduction (in the split kernel)

    @property
    def proofs(self) -> ProofLog:
        return ProofLog(list(self.gemm.proofs) + (list(self.reduce.proofs) if self.reduce else []))


_MEMO: Dict[Tuple[SplitKConfig, GemmProblem], SplitKKernels] = {}


def generate_splitk(
    config: SplitKConfig, problem: Optional[GemmProblem] = None, *, memo: bool = True
) -> SplitKKernels:
    """Build, prove and emit the split-K kernel pair for ``problem`` (its ``out`` type is the
    reduction's; the GEMM kernel stores f32 partials)."""
    cfg = config.validate()
    prob = (problem or GemmProblem("k", "k")).validate()
    if memo and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    if cfg.reduction == "cluster":
        raise GemmConfigError(
            "generate_splitk: the cluster reduction is generated by "
            "layoutproof.gpu.kernels.splitk_cluster.generate_cluster"
        )
    S = cfg.splits
    ep = cfg.fixup_epilogue()
    if ep is not None:  # the plain split kernel, then the fix-up with the fused epilogue
        plain = replace(cfg, activation=None, alpha_beta=False, bias_axis="n", bias_dtype="f32")
        kk = generate_splitk(plain, prob, memo=memo)
        pair = SplitKKernels(cfg, prob, kk.gemm, generate_fixup(S, prob, ep, memo=memo))
        if memo:
            _MEMO[(cfg, prob)] = pair
        return pair
    base_prob = replace(prob, out_dtype="f32")
    base = generate_sm90(cfg.base, base_prob, memo=memo)
    log = ProofLog(base_plan_proofs(base, cfg.base))
    prove_split(log)
    prove_workspace(S, log)
    h = hashlib.sha256(f"{SPLITK_VERSION}{cfg}{prob}".encode()).hexdigest()[:10]
    name = f"lp_gemm_sm90_splitk_{prob.key()}_{h}"
    serial = cfg.reduction == "serial"
    ir, chunks = splitk_ir(base.ir, S, name, fixup_kernel=not serial)
    if serial:
        ir = serial_ir(ir, cfg, prob.out)
    if not serial:
        prove_split_order(ir, log)
    for sk, KT, kb, ke in chunks[:1]:  # both loops carry the same expressions (checked below)
        prove_k_partition(S, log, kb, ke, sk, KT)
    if kir.emit_expr(chunks[0][2]) != kir.emit_expr(chunks[1][2]) or kir.emit_expr(
        chunks[0][3]
    ) != kir.emit_expr(chunks[1][3]):
        raise ProofFailedError(
            "split-K: the producer's and the consumers' chunk bounds differ",
            condition="k chunks partition [0, KT)",
        )
    tx = expect_tx_bytes(ir)

    def protocol(k: kir.Kernel) -> int:
        n = prove_ws_protocol(k, cfg.base, tx, log, 1)
        if serial:  # the fence and the atomic are not barrier operations: nothing to add
            prove_serial_protocol(k, S, log)
        return n

    title = f"proven before emission ({cfg.key()}, {base_prob.key()})"
    src = finish(ir, log, title, protocol)
    gk = GemmKernel(
        base.config, base_prob, src, name, base.threads, base.smem_bytes, log, dict(base.swizzles), ir
    )
    if serial:
        out = SplitKKernels(cfg, prob, gk, None)
        if memo:
            _MEMO[(cfg, prob)] = out
        return out
    out = SplitKKernels(cfg, prob, gk, _plane_fixup(base.config, S, prob))
    if memo:
        _MEMO[(cfg, prob)] = out
    return out


def _plane_fixup(base_config: Any, S: int, prob: GemmProblem) -> GemmKernel:
    """The plane reduction's fix-up kernel (:func:`reduce_ir`), proven and emitted: the
    ordering (:func:`prove_fixup_order`), the plane loop and every access's claim."""
    rlog = ProofLog()
    rname = f"lp_splitk_reduce_{prob.out}_s{S}"
    rir = reduce_ir(S, prob.out, rname)
    prove_fixup_order(rir, rlog)
    _prove_plane_loop(rir, S, rlog)
    title = f"proven before emission (split-K fix-up, {S} planes, {prob.out} out)"
    rsrc = finish(rir, rlog, title)
    return GemmKernel(base_config, prob, rsrc, rname, FIXUP_DEFAULT.threads, 0, rlog, {}, rir)


# ============================================================================ serial reduction
_SERIAL = "split-K serial rewrite"


@dataclass(frozen=True)
class _SerialEnv:
    """What the phases of :func:`serial_ir` share: the configuration, the consumers' tile
    loop and the variables of the split kernel it reads (found once by
    :func:`_declare_serial`), and the parameters and shared flag the reduction adds."""

    S: int
    CW: int
    bn: int
    out: str
    ob: int
    activation: Optional[str]
    ab: bool
    lp: kir.For
    tile: kir.Var
    m0: kir.Var
    n0: kir.Var
    cg: kir.Var
    wt: kir.Var
    tiles: kir.Var
    W: kir.Var
    M: kir.Var
    N: kir.Var
    ldw: kir.Var
    cvec: kir.Var
    D: kir.Var
    ldd: kir.Var
    counters: kir.Var
    flag: kir.Var
    bias: kir.Var
    alpha: kir.Var
    beta: kir.Var
    Cin: kir.Var
    ldci: kir.Var

    @property
    def ep(self) -> bool:
        return self.activation is not None


def _declare_serial(k: kir.Kernel, cfg: SplitKConfig, out: str) -> _SerialEnv:
    """The consumers' tile loop of ``k`` and the variables the serial reduction reads."""
    loops = [
        n
        for n in kir.walk(k.body)
        if isinstance(n, kir.For)
        and n.cond is not None
        and any(isinstance(x, kir.NamedBarrier) for x in kir.walk(n.body))
    ]
    if len(loops) != 1:
        raise ProofFailedError(
            f"split-K serial rewrite: expected the consumers' tile loop, found {len(loops)}",
            condition="split-K rewrite",
        )
    lp = loops[0]
    tile, m0, n0 = (
        find_decl(lp.body, "tile", _SERIAL),
        find_decl(lp.body, "m0", _SERIAL),
        find_decl(lp.body, "n0", _SERIAL),
    )
    cg, wt, tiles = (
        find_decl(k.body, "cg", _SERIAL),
        find_decl(k.body, "wt", _SERIAL),
        find_decl(k.body, "tiles", _SERIAL),
    )
    W, M, N, ldw, cvec = (find_param(k, x) for x in ("C", "M", "N", "ldc", "c_vec"))
    return _SerialEnv(
        S=cfg.splits,
        CW=cfg.base.warpgroups,
        bn=cfg.base.bn,
        out=out,
        ob=OUT_DTYPES[out][1],
        activation=cfg.activation,
        ab=cfg.alpha_beta,
        lp=lp,
        tile=tile,
        m0=m0,
        n0=n0,
        cg=cg,
        wt=wt,
        tiles=tiles,
        W=W,
        M=M,
        N=N,
        ldw=ldw,
        cvec=cvec,
        D=kir.Var("D", "lp_d_t*"),
        ldd=kir.Var("ldd", "long long"),
        counters=kir.Var("counters", "unsigned*"),
        flag=kir.Var("lp_last", "unsigned*"),
        bias=kir.Var("bias", "const float*"),
        alpha=kir.Var("alpha", "float"),
        beta=kir.Var("beta", "float"),
        Cin=kir.Var("Cin", "const lp_d_t*"),
        ldci=kir.Var("ldci", "long long"),
    )


def _plane_store_name(node: Any) -> Any:
    """The plane stores of the staged epilogue get their split-K name."""
    if (
        isinstance(node, kir.Mem)
        and node.claim.what.startswith("C ")
        and "store" in node.claim.what
        and not node.claim.what.startswith(PLANE_STORE)
    ):
        return replace(node, claim=replace(node.claim, what=PLANE_STORE + node.claim.what))
    return None


def _arrive_ir(E: _SerialEnv, fence: bool, sem: str) -> kir.If:
    """Step 2, thread 0 of the warpgroup: the counter's atomic (release of its plane, acquire
    of the planes counted before), the last-unit flag, and the counter's reset."""
    counters, flag, cg, tile, tiles = E.counters, E.flag, E.cg, E.tile, E.tiles
    cidx = kir.Cast("long long", cg) * tiles + tile
    cclaim = kir.Claim(COUNTER, addr_of(counters) + 4 * cidx, bounds=((tile, tiles),), width=4)
    rclaim = kir.Claim(COUNTER_RESET, addr_of(counters) + 4 * cidx, bounds=((tile, tiles),), width=4)
    fw = kir.Claim(FLAG_WRITE, addr_of(flag) + 4 * cg, region=(addr_of(flag), 4 * E.CW), width=4)
    prev = kir.Var("prev", "unsigned")
    T = kir.Const(E.S - 1, "unsigned")
    return kir.If(
        E.wt.eq(0),
        kir.block(
            kir.Comment(
                "release this warpgroup's plane (the barrier above ordered every thread's stores)\n"
                "and acquire the planes of the units counted before, in one atomic"
            ),
            kir.Fence("acq_rel_gpu") if fence else None,
            kir.Decl(prev),
            kir.Assign(
                prev, kir.AtomicAdd(kir.Mem(counters, cclaim, idx=cidx), kir.Const(1, "unsigned"), sem)
            ),
            kir.Assign(
                kir.Mem(flag, fw, idx=cg, space="shared"),
                kir.Cond(prev.eq(T), kir.Const(1, "unsigned"), kir.Const(0, "unsigned")),
            ),
            kir.If(
                prev.eq(T),
                kir.block(kir.Assign(kir.Mem(counters, rclaim, idx=cidx), kir.Const(0, "unsigned"))),
                comment="the last of the tile's S units: ready for the next launch",
            ),
        ),
    )


def float4_sum_ir(a: kir.Var, s: kir.Var, lo: int, hi: int, j: kir.Var, load: kir.Mem) -> kir.For:
    """``a[0..3] += load`` for ``s`` in ``[lo, hi)``: the ``float4`` ``load`` (which reads
    ``s``: a plane, a rank) into ``w4``, added element by element."""
    w4 = kir.Var("w4", "float4")
    wv = kir.Var("wv", "const float*")
    return kir.For(
        s,
        kir.Const(lo),
        kir.Const(hi),
        kir.block(
            kir.Decl(w4, load, const=True),
            kir.Decl(wv, kir.Reinterpret("const float*", kir.AddrOf(w4)), const=True),
            kir.For(
                j,
                kir.Const(0),
                kir.Const(4),
                kir.block(kir.Assign(kir.Index(a, (j,)), kir.Index(wv, (j,)), op="+=")),
                unroll=True,
            ),
        ),
        unroll=True,
    )


def _plane_sums_ir(
    E: _SerialEnv, a: kir.Var, s: kir.Var, j: kir.Var, rr: kir.Var, cc: kir.Var
) -> Tuple[kir.For, kir.For]:
    """The sums of the ``S`` planes into ``a[0..3]``: one ``float4`` load per plane (the
    vector path) and one bounded load per element (the ragged edge)."""
    W, M, N, ldw = E.W, E.M, E.N, E.ldw

    def wclaim(col: kir.Expr, width: int, ext: kir.Expr) -> kir.Claim:
        return kir.Claim(
            PLANE_READ,
            addr_of(W) + 4 * workspace_offset_ir(s, rr, col, M, ldw),
            bounds=((rr, M), (ext, N)),
            width=4 * width,
        )

    woff = workspace_offset_ir(s, rr, cc, M, ldw)
    vec_read = float4_sum_ir(a, s, 0, E.S, j, kir.Mem(W + woff, wclaim(cc, 4, cc + 3), vec="const float4"))
    one = kir.Assign(kir.Index(a, (j,)), kir.Mem(W, wclaim(cc + j, 1, cc + j), idx=woff + j), op="+=")
    one_read = kir.For(
        s,
        kir.Const(0),
        kir.Const(E.S),
        kir.block(
            kir.For(
                j, kir.Const(0), kir.Const(4), kir.block(kir.If((cc + j).lt(N), kir.block(one))), unroll=True
            )
        ),
        unroll=True,
    )
    return vec_read, one_read


def _serial_value_ir(E: _SerialEnv, a: kir.Var, j: kir.Var, rr: kir.Var, cc: kir.Var) -> kir.Expr:
    """The stored value of element ``j``: the sum, through the fused epilogue if asked
    (``alpha * acc + beta * Cin + bias``, the activation), converted to the output type."""
    x: kir.Expr = kir.Index(a, (j,))
    if E.ep:
        bclaim = kir.Claim(
            "split-K epilogue bias load bias[c]",
            addr_of(E.bias) + 4 * (cc + j),
            bounds=((cc + j, E.N),),
            width=4,
        )
        bval = kir.Mem(E.bias, bclaim, idx=cc + j)
        if E.ab:
            ciclaim = kir.Claim(
                "split-K epilogue C input load Cin[r, c]",
                addr_of(E.Cin) + E.ob * (kir.Cast("long long", rr) * E.ldci + cc + j),
                bounds=((rr, E.M), (cc + j, E.N)),
                width=E.ob,
            )
            cin: kir.Expr = kir.Mem(E.Cin, ciclaim, idx=kir.Cast("long long", rr) * E.ldci + cc + j)
            tof = {"f16": "__half2float", "bf16": "__bfloat162float"}.get(E.out)
            if tof is not None:
                cin = kir.Call(tof, (cin,), "float")
            x = E.alpha * x + E.beta * cin + bval
        else:
            x = x + bval
        x = kir.Call(f"lp_act_{E.activation}", (x,), "float")
    cvt = _CVT[E.out]
    return x if cvt is None else kir.Call(cvt, (x,), "lp_d_t")


def _serial_reduce_ir(E: _SerialEnv) -> kir.For:
    """Step 3: the reduction of the warpgroup's 64-row slice, 4 columns per thread: the
    ``S`` planes summed in order, the value stored into ``D``."""
    M, N, D, ldd = E.M, E.N, E.D, E.ldd
    q = E.bn // 4  # float4 column groups of a row
    ni = 64 * q // 128
    i, s, j = kir.Var("i"), kir.Var("s"), kir.Var("j")
    e, rr, cc = kir.Var("e"), kir.Var("rr"), kir.Var("cc")
    a = kir.Var("a", "float")
    vec_read, one_read = _plane_sums_ir(E, a, s, j, rr, cc)
    val = _serial_value_ir(E, a, j, rr, cc)
    dclaim = kir.Claim(
        OUT_STORE,
        addr_of(D) + E.ob * (kir.Cast("long long", rr) * ldd + cc + j),
        bounds=((rr, M), (cc + j, N)),
        width=E.ob,
    )
    store = kir.Assign(kir.Mem(D, dclaim, idx=kir.Cast("long long", rr) * ldd + cc + j), val)
    return kir.For(
        i,
        kir.Const(0),
        kir.Const(ni),
        kir.block(
            kir.Decl(e, i * 128 + E.wt, const=True),
            kir.Decl(rr, E.m0 + 64 * E.cg + e / q, const=True),
            kir.Decl(cc, E.n0 + 4 * (e % q), const=True),
            kir.If(
                rr.lt(M),
                kir.block(
                    kir.Decl(a, kir.FloatLit("{0.f, 0.f, 0.f, 0.f}"), dims=(4,)),
                    kir.If(E.cvec.and_((cc + 4).le(N)), kir.block(vec_read), kir.block(one_read)),
                    kir.For(
                        j,
                        kir.Const(0),
                        kir.Const(4),
                        kir.block(kir.If((cc + j).lt(N), kir.block(store))),
                        unroll=True,
                    ),
                ),
            ),
        ),
        unroll=8,  # the loads of 8 row groups in flight together (a decode tile's valid rows)
    )


def _serial_section_ir(E: _SerialEnv, fence: bool, sem: str) -> kir.If:
    """The section appended to the consumers' tile loop: barrier, arrive, barrier, flag read,
    and the reduction of the last unit."""
    last = kir.Var("last", "unsigned")
    fr = kir.Claim(FLAG_READ, addr_of(E.flag) + 4 * E.cg, region=(addr_of(E.flag), 4 * E.CW), width=4)
    section: List[kir.Stmt] = [
        kir.Comment(
            "split-K, serial reduction: the last of the tile's units to finish sums the planes\n"
            "(plane stores -> barrier -> atomic (release + acquire) -> barrier -> the last one reads)"
        ),
        kir.NamedBarrier(1 + E.cg, 128),
        _arrive_ir(E, fence, sem),
        kir.NamedBarrier(1 + E.cg, 128),
        kir.Decl(last),
        kir.Assign(last, kir.Mem(E.flag, fr, idx=E.cg, space="shared")),
        kir.If(
            last.ne(kir.Const(0, "unsigned")),
            kir.block(
                kir.Comment(f"the planes of this 64-row slice, summed in the order s = 0..{E.S - 1}"),
                _serial_reduce_ir(E),
            ),
        ),
    ]
    return kir.If(E.tile.lt(E.tiles), kir.block(*section), comment="always (tile = unit % tiles)")


def _serial_params(E: _SerialEnv) -> Tuple[Tuple[str, kir.Var], ...]:
    """The parameters the serial reduction adds: D, its row stride, the counters, and the
    fused epilogue's operands."""
    params: Tuple[Tuple[str, kir.Var], ...] = (
        ("lp_d_t* __restrict__", E.D),
        ("long long", E.ldd),
        ("unsigned* __restrict__", E.counters),
    )
    if E.ep:
        params += (("const float* __restrict__", E.bias),)
        if E.ab:
            params += (
                ("float", E.alpha),
                ("float", E.beta),
                ("const lp_d_t* __restrict__", E.Cin),
                ("long long", E.ldci),
            )
    return params


def serial_ir(
    k: kir.Kernel, cfg: SplitKConfig, out: str, *, fence: bool = False, sem: str = "acq_rel"
) -> kir.Kernel:
    """The serial reduction, added to the split kernel ``k`` (:func:`splitk_ir` without the
    fix-up kernel): after the consumers' staged epilogue has stored a unit's partial into its
    plane, each consumer warpgroup ``cg`` (its own 64-row slice of the tile) does

    1. ``bar.sync`` (its 128 threads: every thread's plane stores are done);
    2. thread 0: ``prev = atom.add.acq_rel.gpu(&counters[cg * tiles + tile], 1)`` -- the
       release of the warpgroup's plane (cumulative over the stores the barrier ordered
       before it) and the acquire of the planes released before it in one operation (with
       ``fence=True`` a ``fence.acq_rel.gpu`` comes first; ``sem`` is the atomic's order,
       the kernel's ``acq_rel``: the other values exist for the model's planted bugs);
       it writes ``prev == S - 1`` to the shared flag ``lp_last[cg]``
       and, when it is the last, resets the counter to 0 (the next launch starts from 0: the
       counters are zeroed once, when the plan is made);
    3. ``bar.sync``; every thread reads the flag; when set, the warpgroup sums the ``S``
       planes of its slice in the order ``s = 0, 1, ..`` (deterministic whichever unit is
       last), applies the fused epilogue if asked, converts, and stores ``D``.

    The protocol (release by the fence and the atomic, acquire by the atomic, the barriers
    carrying both across the warpgroup) is model-checked from this IR by
    :func:`layoutproof.gpu.proof.splitk_model.prove_serial_protocol`."""
    E = _declare_serial(k, cfg, out)
    lp = E.lp
    new_lp = replace(lp, body=kir.Block(lp.body.body + (_serial_section_ir(E, fence, sem),), lp.body.bare))
    body = kir.rewrite(kir.rewrite(k.body, lambda node: new_lp if node is lp else None), _plane_store_name)
    body = kir.Block(
        after_grid_wait(body.body, (kir.Decl(E.flag, dims=(E.CW,), prefix="__shared__", tname="unsigned"),)),
        body.bare,
    )
    ep, ab, S = E.ep, E.ab, E.S
    what = "C = " + (
        f"{cfg.activation}({'alpha * acc + beta * Cin' if ab else 'acc'} + bias[n])" if ep else "acc"
    )
    descr = tuple(x for x in k.description if "second kernel" not in x and x != "sums the planes") + (
        f"stores its f32 partial into workspace plane chunk (C + chunk*M*ldc); the last of a tile's {S}",
        f"units (counter per tile and warpgroup, acq_rel at GPU scope) sums the planes in order: {what},",
        f"converted to {out} into D (row stride ldd)",
    )
    return replace(
        k,
        body=body,
        params=k.params + _serial_params(E),
        typedefs=k.typedefs + (("lp_d_t", OUT_DTYPES[out][0]),),
        sizes=dict(k.sizes, lp_d_t=E.ob, float=4, unsigned=4, float4=16),
        helpers=(("act",) if ep else ()) + k.helpers + ("atomic",),
        description=descr,
    )
