"""The grouped GEMM kernel (mixture-of-experts): one persistent launch over every group's
tiles, C_g = A_g @ B_g for groups of rows of one stacked A.

Group ``g`` owns the rows ``[rbeg[g], rend[g])`` of the stacked A (``T x K``) and of the
stacked C (``T x N``) and multiplies them by its own B (expert ``g`` of a ``G x K x N``
tensor, read through a rank-3 tensor map at batch coordinate ``g``).  The kernel reads one
``int32`` table of ``3 G + 1`` entries from global memory (:func:`group_table`):

* ``ptile[g]`` -- the first global tile row of group ``g`` (prefix sums of
  ``ceil((rend - rbeg) / bm)``; zero-sized groups own no tile row);
* ``rbeg[g]``, ``rend[g]`` -- the group's rows;
* the count of tile rows, last.

The contiguous form (``rbeg[g] = offs[g - 1]``, ``rend[g] = offs[g]``) and the masked form
of a decode step (``rbeg[g] = g * max_m``, ``rend[g] = rbeg[g] + min(masked_m[g], max_m)``)
are the same kernel with another table, and so is a host that knows the sizes (the table
built on the host) or a device that alone knows them (the table built by device tensor
operations, no synchronization: the launch then walks an upper bound of tile rows, the
ones past the last group empty -- ``ceil(T / bm) + G`` for the contiguous form,
``G ceil(max_m / bm)`` for the masked one, whose prefix counts its groups' rows alone).

The base is the warp-specialized kernel (both consumer warpgroups on one tile of ``bm``
rows) or the ping-pong kernel (each consumer warpgroup on its own 64-row tile: a group's
rows are padded to 64, and one warpgroup's epilogue overlaps the other's main loop).  The
persistent CTAs walk the ``rtiles x grid_n`` grid of (global tile row, tile column)
with the warp-specialized kernel's scheduler ``lp_tile`` (on the ping-pong base
``rtiles`` capped by the table's count, so that no tile is empty); the device function ``lp_group``
(a branch-free binary search over ``ptile``) maps the global tile row to its group, the
tile's first row and the group's end.  An empty tile (past its group's end) runs no k-tile
on either side of the pipeline and skips the epilogue (its condition is the same for every
thread of the CTA, so its named barriers stay uniform, proven with the other obligations);
every C store is guarded by the group's end *and* by ``M`` (the stacked rows), so no
table content makes a store leave C.

Proven before the source is printed (:func:`generate_grouped`):

* the cover (:func:`prove_group_cover`): the emitted statements of ``lp_tile`` and
  ``lp_group``, evaluated with C semantics on the tables :func:`group_table` builds, take
  every output element of every group exactly once, in a tile of its own group (the B
  expert it is multiplied by), every table read inside the table, and only padding tiles
  empty -- for every group-size vector of a stated family (exhaustive for small group
  counts, sizes around the tile edges and zeros; listed larger MoE vectors), in the
  contiguous and the masked forms (on the ping-pong base with no tile empty), with the
  exact and the upper-bound tile-row counts;
* the binary search, for every table of up to ``max_groups`` groups
  (:func:`prove_search_monotone`: it sees the tile prefix only through ``ptile[j] <= tm``,
  true on a prefix ``j < c``, so the pairs (G, c) are every case), and its row and end
  formulas over every prefix vector of up to 6 groups of up to 3 tile rows and every tile
  row (:func:`prove_group_search`);
* on the IR: each B box is read at the expert ``g`` that ``lp_group`` gave the tile
  (:func:`check_group_coordinates`); on the warp-specialized base the producer and the
  consumers skip the same empty tiles (no ring operation in either), on the ping-pong
  base every tile runs its whole k-loop and the consumers' walk is proven again
  (:func:`~layoutproof.gpu.kernels.wgmma_pingpong.prove_pingpong_cover`);
* the base kernel's proofs (buffers, TMA boxes, descriptors, epilogue), the IR
  obligations of the rewritten tree (every access's address and bounds, uniform barriers)
  and its mbarrier protocol read back from the IR and model-checked.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..config import GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..proof import kir, obligations
from ..proof.record import ProofLog
from .toolkit import GemmKernel, finish, ir_var
from .variant import WsVariantFields, base_plan_proofs, expect_tx_bytes, find_decl, find_param
from .wgmma_core import GENERATOR_VERSION, HOPPER_DEFAULT, Sm90Config
from .wgmma_ws import prove_ws_protocol, schedule_devfn

__all__ = [
    "GroupedConfig",
    "group_table",
    "table_entries",
    "upper_tile_rows",
    "group_search_devfn",
    "prove_group_search",
    "prove_search_monotone",
    "prove_group_cover",
    "generate_grouped",
    "check_group_coordinates",
    "check_group_maps",
    "group_map_devfn",
    "GROUPED_DEFAULT",
]


# ============================================================================ configuration
@dataclass(frozen=True)
class GroupedConfig(WsVariantFields):
    """The grouped kernel: the persistent TMA kernel ``base`` (no cluster) walking every
    group's tiles.  ``base`` is the warp-specialized kernel (``schedule="ws"``: both
    consumer warpgroups on one tile of ``bm`` rows) or the ping-pong kernel
    (``schedule="pingpong"``: each consumer warpgroup on its own 64-row tile, so a group
    pads its rows to 64, not to ``bm``; the launch walks the table's exact tile-row count,
    so every tile holds rows).  ``max_groups`` (a power of two) bounds the group count the
    search of ``lp_group`` resolves (its number of halving steps); ``per_group_maps`` reads
    A and B through one tensor map per group (device arrays ``tmAs[g]``, ``tmBs[g]``: the
    pointer array form, every group's matrices anywhere in memory) instead of one map each;
    ``skip_slices``: a consumer warpgroup whose 64 rows of the tile all lie
    past the group's end issues no wgmma (its rows are not stored; ws base only).  Off by
    default: the wgmma batches then sit on two divergent paths, and the compiler serializes
    the wgmma pipeline (on an H200 the grouped bf16 MoE shapes took 1.1-1.3x the time,
    bench/gemm_grouped.py --sweep)."""

    base: Sm90Config = HOPPER_DEFAULT
    max_groups: int = 1024
    per_group_maps: bool = False
    skip_slices: bool = False

    @property
    def cluster(self) -> int:
        return 1

    @property
    def pingpong(self) -> bool:
        """Whether the base is the ping-pong kernel."""
        return self.base.schedule == "pingpong"

    def key(self) -> str:
        pm = "_pm" if self.per_group_maps else ""
        ns = "" if self.skip_slices else "_ns"
        return f"grouped{self.max_groups}{pm}{ns}_{self.base.key()}"

    def validate(self) -> "GroupedConfig":
        self.base.validate()
        if self.base.schedule not in ("ws", "pingpong") or self.base.loader != "tma":
            raise GemmConfigError(
                f"GroupedConfig: the base must be the warp-specialized or ping-pong TMA kernel "
                f"(schedule='ws' or 'pingpong', loader='tma'), not {self.base.key()}"
            )
        if self.base.cluster != 1:
            raise GemmConfigError(f"GroupedConfig: the base must have cluster=1, not {self.base.cluster}")
        if self.base.a_rows != 64:
            raise GemmConfigError(
                f"GroupedConfig: the groups' rows are not bounded by the base's a_rows={self.base.a_rows}: "
                "the base must load whole 64-row A tiles (a_rows=64)"
            )
        if self.pingpong and self.skip_slices:
            raise GemmConfigError(
                "GroupedConfig: skip_slices takes the warp-specialized base (schedule='ws'); each "
                "ping-pong consumer holds one 64-row slice, never past its group's end"
            )
        g = self.max_groups
        if not (isinstance(g, int) and 1 <= g <= 1 << 10 and g & (g - 1) == 0):
            raise GemmConfigError(f"GroupedConfig: max_groups={g!r} must be a power of two in [1, 1024]")
        return self


GROUPED_DEFAULT = GroupedConfig()


# ============================================================================ the group table
def table_entries(G: int) -> int:
    """The entries of a table of ``G`` groups: ``[ptile | rbeg | rend | count]``."""
    return 3 * G + 1


def upper_tile_rows(form: str, G: int, rows: int, bm: int) -> int:
    """The tile rows a launch whose group sizes are on the device only walks (the bound the
    cover is proven with): ``ceil(rows / bm) + G`` for the contiguous form (``rows`` the
    stacked rows), ``G ceil(rows / bm)`` for the masked form (``rows`` = ``max_m``).

    >>> upper_tile_rows("contiguous", 3, 300, 128), upper_tile_rows("masked", 3, 130, 128)
    (6, 6)
    """
    return -(-rows // bm) + G if form == "contiguous" else G * -(-rows // bm)


def group_table(rbeg: Any, rend: Any, bm: int) -> Tuple[np.ndarray, int]:
    """The kernel's ``int32`` table ``[ptile | rbeg | rend | count]`` (``3 G + 1``
    entries) for groups of rows ``[rbeg[g], rend[g])`` and tile height ``bm``, and the
    exact count of tile rows (also its last entry).  ``ptile`` is the exclusive prefix sum
    of ``ceil((rend - rbeg) / bm)``.

    >>> tab, rt = group_table([0, 5, 5], [5, 5, 300], 128)
    >>> tab.tolist(), rt
    ([0, 1, 1, 0, 5, 5, 5, 5, 300, 4], 4)
    """
    b = np.asarray(rbeg, dtype=np.int64)
    e = np.asarray(rend, dtype=np.int64)
    tiles = (np.maximum(e - b, 0) + bm - 1) // bm
    ptile = np.concatenate([[0], np.cumsum(tiles)[:-1]]) if tiles.size else tiles
    count = int(tiles.sum())
    return np.concatenate([ptile, b, e, [count]]).astype(np.int32), count


def grid_rows_devfn() -> Tuple[str, str, kir.Block]:
    """``lp_grid_rows(rtiles, gtab, G, &rows)``: the tile rows the ping-pong grouped kernel
    walks, ``min(rtiles, gtab[3 G])`` -- the launch's ``rtiles`` (exact, or an upper bound
    where the sizes are on the device only) capped by the table's count (its last entry,
    exact wherever the table was built), so that no tile is empty: each consumer's ring
    counter skips the other's tile by a whole tile's k-tiles.  (The warp-specialized base
    walks ``rtiles`` tile rows, the ones past the groups' rows empty.)"""
    rtiles, gtab, G, rows = kir.Var("rtiles"), kir.Var("gtab", "const int*"), kir.Var("G"), kir.Var("rows")
    return (
        "lp_grid_rows",
        "int rtiles, const int* __restrict__ gtab, int G, int& rows",
        kir.block(kir.Assign(rows, kir.Call("min", (rtiles, kir.Index(gtab, (3 * G,)))))),
    )


# ============================================================================ the group search
def _search_stmts(bm: int, max_groups: int, plant: str = "") -> Tuple[Tuple[kir.Var, ...], List[kir.Stmt]]:
    """``lp_group``'s statements: the largest ``g < G`` with ``ptile[g] <= tm`` by halving
    steps (``max_groups`` = 2^L: L steps), then the tile's first row and the group's end.
    ``plant`` plants a bug for the tests (``"lt"``: ``<`` for ``<=``; ``"prefix"``: the
    tile row counted from ``ptile[g] + 1``; ``"step"``: one halving step left out)."""
    tm, gtab, G = kir.Var("tm"), kir.Var("gtab", "const int*"), kir.Var("G")
    g, m0, rend = kir.Var("g"), kir.Var("m0"), kir.Var("rend")
    out: List[kir.Stmt] = [kir.Assign(g, kir.Const(0))]
    steps = []
    s = max_groups // 2
    while s >= 1:
        steps.append(s)
        s //= 2
    if plant == "step" and steps:
        steps = steps[:-1]
    for s in steps:
        probe = kir.Index(gtab, (g + s,))
        cmp = probe.lt(tm) if plant == "lt" else probe.le(tm)
        out.append(kir.If((g + s).lt(G).and_(cmp), kir.block(kir.Assign(g, g + s))))
    first: kir.Expr = kir.Index(gtab, (g,))
    if plant == "prefix":
        first = first + 1
    out.append(kir.Assign(m0, kir.Index(gtab, (G + g,)) + (tm - first) * bm))
    out.append(kir.Assign(rend, kir.Index(gtab, (2 * G + g,))))
    return (tm, gtab, G, g, m0, rend), out


def group_search_devfn(bm: int, max_groups: int) -> Tuple[str, str, kir.Block]:
    """The search as the device function ``lp_group(tm, gtab, G, &g, &m0, &rend)``."""
    _v, stmts = _search_stmts(bm, max_groups)
    return (
        "lp_group",
        "int tm, const int* __restrict__ gtab, int G, int& g, int& m0, int& rend",
        kir.block(*stmts),
    )


_I32 = (-(1 << 31), (1 << 31) - 1)


def _ev(e: kir.Expr, env: Dict[str, np.ndarray], tab: Any, mask: np.ndarray, reads: List[Any]) -> np.ndarray:
    """``e`` with C semantics on ``int`` values (non-negative operands of ``/`` and ``%`` are
    checked; a result outside 32 bits fails): the subset of the IR the schedulers use.
    Table reads (``gtab[i]``) are recorded with the mask under which they happen."""
    if isinstance(e, kir.Const):
        return np.full(mask.shape, int(e.value), dtype=np.int64)
    if isinstance(e, kir.Var):
        if e.name not in env:
            raise ProofFailedError(f"scheduler IR: {e.name} has no value", condition="scheduler IR")
        return np.broadcast_to(env[e.name], mask.shape).astype(np.int64)
    if isinstance(e, kir.Index):
        if tab is None or not isinstance(e.base, kir.Var) or e.base.name != "gtab":
            raise ProofFailedError("scheduler IR: a read of an unknown array", condition="scheduler IR")
        i = _ev(e.idx[0], env, tab, mask, reads)
        reads.append((i.copy(), mask.copy()))
        if callable(tab):  # a table given by its entries' formula: tab(case, index)
            return np.asarray(tab(np.broadcast_to(env["__case"], mask.shape), i), dtype=np.int64)
        if tab.ndim == 2:  # one table per case: row env["__case"]
            case = np.broadcast_to(env["__case"], mask.shape)
            safe = np.where(mask & (i >= 0) & (i < tab.shape[1]), i, 0)
            return tab[case, safe].astype(np.int64)
        safe = np.where(mask & (i >= 0) & (i < tab.size), i, 0)
        return tab[safe].astype(np.int64)
    if isinstance(e, kir.Call) and e.name in ("min", "max"):
        a, b = (_ev(x, env, tab, mask, reads) for x in e.args)
        return np.minimum(a, b) if e.name == "min" else np.maximum(a, b)
    if isinstance(e, kir.Bin):
        a = _ev(e.a, env, tab, mask, reads)
        if e.op == "&&":  # short-circuit: the right side only where the left holds
            return (a != 0) & (_ev(e.b, env, tab, mask & (a != 0), reads) != 0)
        b = _ev(e.b, env, tab, mask, reads)
        if e.op in ("/", "%"):
            if np.any(mask & ((a < 0) | (b <= 0))):
                raise ProofFailedError("scheduler IR: / or % of a negative value", condition="C semantics")
            bb = np.where(b <= 0, 1, b)
            r = a // bb if e.op == "/" else a % bb
        else:
            ops: Dict[str, Callable[[Any, Any], Any]] = {
                "+": np.add,
                "-": np.subtract,
                "*": np.multiply,
                "<": np.less,
                "<=": np.less_equal,
                ">": np.greater,
                ">=": np.greater_equal,
                "==": np.equal,
                "!=": np.not_equal,
            }
            if e.op not in ops:
                raise ProofFailedError(f"scheduler IR: operator {e.op}", condition="scheduler IR")
            r = ops[e.op](a, b).astype(np.int64)
        if np.any(mask & ((r < _I32[0]) | (r > _I32[1]))):
            raise ProofFailedError("scheduler IR: a value leaves 32 bits", condition="C semantics")
        return r
    raise ProofFailedError(f"scheduler IR: cannot evaluate {type(e).__name__}", condition="scheduler IR")


def _run(
    stmts: Sequence[kir.Stmt],
    env: Dict[str, np.ndarray],
    tab: Any,
    mask: np.ndarray,
    reads: List[Any],
) -> None:
    """Execute declarations, assignments and conditionals of variables (vectorized: an
    ``if`` assigns where its condition holds)."""
    for st in stmts:
        if isinstance(st, kir.Decl) and st.init is not None:
            env[st.var.name] = _ev(st.init, env, tab, mask, reads)
        elif isinstance(st, kir.Assign) and isinstance(st.lhs, kir.Var) and st.op == "=":
            v = _ev(st.rhs, env, tab, mask, reads)
            old = env.get(st.lhs.name)
            env[st.lhs.name] = v if old is None else np.where(mask, v, old)
        elif isinstance(st, kir.If) and st.orelse is None:
            c = _ev(st.cond, env, tab, mask, reads) != 0
            _run(st.then.body, env, tab, mask & c, reads)
        else:
            raise ProofFailedError(
                f"scheduler IR: cannot execute a {type(st).__name__}", condition="scheduler IR"
            )


def _search(
    stmts: Sequence[kir.Stmt], tm: np.ndarray, tab: np.ndarray, G: int, case: Optional[np.ndarray] = None
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``lp_group``'s statements run on tile rows ``tm`` and table ``tab`` (2-D: one table
    per case, ``case`` the row of each ``tm``); every read is checked inside ``[0, 3 G)``
    (the search never reads the count).
    Returns (g, m0, rend)."""
    mask = np.ones(tm.shape, dtype=bool)
    env: Dict[str, Any] = {"tm": tm.astype(np.int64), "G": np.int64(G)}
    if case is not None:
        env["__case"] = case
    reads: List[Any] = []
    _run(stmts, env, tab, mask, reads)
    for i, m in reads:
        bad = m & ((i < 0) | (i >= 3 * G))
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ProofFailedError(
                f"lp_group reads gtab[{int(i[j])}] outside its {3 * G} entries (tile row {int(tm[j])})",
                condition="group table read in range",
                witness=(G, int(tm[j])),
            )
    return env["g"], env["m0"], env["rend"]


def prove_group_search(
    bm: int, max_groups: int, log: ProofLog, stmts: Optional[Sequence[kir.Stmt]] = None
) -> None:
    """The emitted search, for every non-decreasing tile prefix of ``G`` = 1..6 groups with
    0..3 tile rows each and every tile row ``tm`` below the total: ``g`` is the group of
    ``tm`` (``ptile[g] <= tm < ptile[g] + tiles[g]``, a non-empty group), its row is
    ``rbeg[g] + (tm - ptile[g]) * bm``, its end ``rend[g]``; and every read lies in the
    table."""
    st = stmts if stmts is not None else _search_stmts(bm, max_groups)[1]
    cases = 0
    for G in range(1, min(6, max_groups) + 1):
        tv = np.array(list(itertools.product(range(4), repeat=G)), dtype=np.int64)  # tiles per group
        tv = tv[tv.sum(axis=1) > 0]
        rb = np.broadcast_to(np.arange(G, dtype=np.int64) * 1000, tv.shape)
        re = rb + tv * bm
        pt = np.concatenate(
            [np.zeros((tv.shape[0], 1), dtype=np.int64), np.cumsum(tv, axis=1)[:, :-1]], axis=1
        )
        tabs = np.stack([group_table(rb[i], re[i], bm)[0] for i in range(tv.shape[0])])
        if not np.array_equal(tabs[:, :G], pt):
            raise ProofFailedError(
                "group_table: ptile is not the prefix of the tile rows", condition="group table"
            )
        tot = tv.sum(axis=1)
        case = np.repeat(np.arange(tv.shape[0]), tot)
        tm = _ranges(tot)
        g, m0, rend = _search(st, tm, tabs, G, case)
        ends = (pt + tv)[case]
        want = (ends <= tm[:, None]).sum(axis=1)  # the first group whose tile rows end past tm
        wrow = rb[case, want] + (tm - pt[case, want]) * bm
        bad = (g != want) | (m0 != wrow) | (rend != re[case, want])
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ProofFailedError(
                f"lp_group: tile row {int(tm[j])} of tiles per group {tv[case[j]].tolist()} goes to group "
                f"{int(g[j])}, row {int(m0[j])} (group {int(want[j])}, row {int(wrow[j])})",
                condition="group search",
                witness=(tuple(tv[case[j]].tolist()), int(tm[j])),
            )
        cases += int(tm.size)
    log.add(
        "equal",
        f"lp_group (halving search, {max_groups.bit_length() - 1} steps, bm={bm}): every tile row of every "
        "tile-prefix vector of 1..6 groups with 0..3 tile rows each goes to its own non-empty group, at "
        "row rbeg + (tm - ptile) * bm with end rend, every table read in range (the emitted statements, "
        "C semantics)",
        "exhaustive",
        cases,
    )


def prove_search_monotone(max_groups: int, log: ProofLog, stmts: Optional[Sequence[kir.Stmt]] = None) -> None:
    """The search's group for *every* table the kernel can be given, up to ``max_groups``
    groups: its path depends on ``ptile`` only through the comparisons ``ptile[j] <= tm``
    (its one use of the ptile entries), and for a non-decreasing ``ptile`` with ``ptile[0] =
    0 <= tm`` those are true exactly for ``j < c``, some ``1 <= c <= G``.  So the pairs
    ``(G, c)``, ``1 <= c <= G <= max_groups``, are every case; in each the emitted
    statements must give ``g = c - 1`` (the largest ``g`` with ``ptile[g] <= tm``) and read
    ptile only at indices below ``G``."""
    st = list(stmts if stmts is not None else _search_stmts(1, max_groups)[1])
    # the ptile reads are the If conditions; m0 / rend (after them) read the other parts
    search = [
        x
        for x in st
        if isinstance(x, kir.If) or (isinstance(x, kir.Assign) and getattr(x.lhs, "name", "") == "g")
    ]
    for x in search:  # the reduction's premise: every ptile read is compared as ptile[j] <= tm
        for n in kir.walk(x):
            if isinstance(n, kir.Bin) and (isinstance(n.a, kir.Index) or isinstance(n.b, kir.Index)):
                if not (n.op == "<=" and isinstance(n.a, kir.Index) and getattr(n.b, "name", "") == "tm"):
                    raise ProofFailedError(
                        f"lp_group: a ptile read is compared as {kir.emit_expr_safe(n)}, not ptile[j] <= tm",
                        condition="group search",
                        witness=kir.emit_expr_safe(n),
                    )
    Gs = np.repeat(np.arange(1, max_groups + 1, dtype=np.int64), np.arange(1, max_groups + 1))
    cs = _ranges(np.arange(1, max_groups + 1, dtype=np.int64)) + 1
    case = np.arange(Gs.size)

    def tab(cse: np.ndarray, i: np.ndarray) -> np.ndarray:
        return np.where(i < cs[cse], 0, 1)

    env: Dict[str, Any] = {"tm": np.zeros(Gs.size, dtype=np.int64), "G": Gs, "__case": case}
    reads: List[Any] = []
    mask = np.ones(Gs.size, dtype=bool)
    _run(search, env, tab, mask, reads)
    for i, m in reads:
        bad = m & ((i < 0) | (i >= Gs))
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ProofFailedError(
                f"lp_group reads ptile[{int(i[j])}] of {int(Gs[j])} groups",
                condition="group search reads in range",
                witness=(int(Gs[j]), int(cs[j])),
            )
    g = env["g"]
    if not np.array_equal(g, cs - 1):
        j = int(np.flatnonzero(g != cs - 1)[0])
        raise ProofFailedError(
            f"lp_group: {int(Gs[j])} groups, ptile[j] <= tm exactly for j < {int(cs[j])}: it finds group "
            f"{int(g[j])}, not {int(cs[j]) - 1}",
            condition="group search",
            witness=(int(Gs[j]), int(cs[j])),
        )
    log.add(
        "equal",
        f"lp_group, for every non-decreasing tile prefix of up to {max_groups} groups: the search sees ptile "
        "only through ptile[j] <= tm, true exactly on a prefix j < c (1 <= c <= G), and for every (G, c) the "
        "emitted statements give g = c - 1, the largest group with ptile[g] <= tm, reading ptile below G "
        "only",
        "exhaustive",
        int(Gs.size),
    )


# ============================================================================ the cover
def _family(bm: int, max_groups: int) -> List[Tuple[str, np.ndarray, int]]:
    """The group-size vectors the cover is proven for: (form, sizes, max_m)."""
    edge = (0, 1, bm - 1, bm, bm + 1, 2 * bm + 5)
    out: List[Tuple[str, np.ndarray, int]] = []
    for G in (1, 2, 3):
        for v in itertools.product(edge, repeat=G):
            out.append(("contiguous", np.array(v, dtype=np.int64), 0))
    for v in itertools.product((0, 1, bm, bm + 1), repeat=4):
        out.append(("contiguous", np.array(v, dtype=np.int64), 0))
    rng = np.random.default_rng(2024)
    for G in (8, 64, 128, 256):
        if G > max_groups:
            continue
        for _ in range(2):
            rv = rng.integers(0, 3 * bm, size=G)
            rv[rng.random(G) < 0.25] = 0  # zero-sized experts
            out.append(("contiguous", rv.astype(np.int64), 0))
    for max_m in (1, bm, 2 * bm + 3):
        for v in itertools.product((0, 1, max_m), repeat=3):
            out.append(("masked", np.array(v, dtype=np.int64), max_m))
    return [x for x in out if x[1].size <= max_groups]


def _tables(
    form: str, sizes: np.ndarray, max_m: int, bm: int
) -> Tuple[np.ndarray, int, int, np.ndarray, np.ndarray]:
    """(table, exact tile rows, upper-bound tile rows, rbeg, rend) of a size vector: the
    masked form's groups ``max_m`` rows apart, its prefix over their rows as the contiguous
    form's, and its upper bound ``G ceil(max_m / bm)`` (what a launch whose counts are on
    the device walks)."""
    G = sizes.size
    if form == "contiguous":
        ends = np.cumsum(sizes)
        rb, re = ends - sizes, ends
        upper = upper_tile_rows(form, G, int(ends[-1]), bm)
    else:
        rb = np.arange(G, dtype=np.int64) * max_m
        re = rb + np.minimum(sizes, max_m)
        upper = upper_tile_rows(form, G, max_m, bm)
    tab, rt = group_table(rb, re, bm)
    return tab, rt, upper, rb, re


def prove_group_cover(
    cfg: GroupedConfig,
    log: ProofLog,
    grid_ns: Tuple[int, ...] = (1, 3),
    search: Optional[Sequence[kir.Stmt]] = None,
    table: Optional[Callable[..., Tuple[np.ndarray, int, int, np.ndarray, np.ndarray]]] = None,
) -> None:
    """End to end, on the emitted statements of ``lp_tile`` and ``lp_group``: for every
    size vector of the family (:func:`_family`), both tile-row counts the host may pass
    (exact, and the upper bound of a launch whose sizes are only on the device) and each
    ``grid_n``, the tiles ``t < grid_m * grid_n`` (``grid_m`` the kernel's ``rtiles``, or
    on the ping-pong base :func:`grid_rows_devfn` evaluated on the table) take every
    element (row, tile column) of every group exactly once, each in a tile of its own
    group (``bidx = g``: the B expert), every non-empty tile's first row inside its group,
    every table read in range;
    on the ping-pong base (the contiguous form only) no tile is empty."""
    bm, bn_, gm = cfg.base.bm, cfg.base.bn, cfg.base.group_m
    rows_stmts = list(grid_rows_devfn()[2].body) if cfg.pingpong else []
    st = search if search is not None else _search_stmts(bm, cfg.max_groups)[1]
    mk = table if table is not None else _tables
    tile_stmts = list(schedule_devfn(gm)[2].body)
    cases = 0
    fam = _family(bm, cfg.max_groups)
    batches: Dict[Tuple[str, int], List[Tuple[np.ndarray, int]]] = {}
    for form, sizes, max_m in fam:
        batches.setdefault((form, sizes.size), []).append((sizes, max_m))
    for (form, G), vecs in batches.items():
        tabs, rts, rbs, res, totals, names = [], [], [], [], [], []
        for sizes, max_m in vecs:
            tab, rt, upper, rb, re = mk(form, sizes, max_m, bm)
            total_rows = int(re[-1]) if form == "contiguous" else G * max_m
            for rtiles in sorted({rt, upper} - {0}):
                tabs.append(tab)
                rts.append(rtiles)
                rbs.append(rb)
                res.append(re)
                totals.append(total_rows)
                names.append(tuple(sizes.tolist()))
        if not tabs:
            continue
        tab2, rb2, re2 = np.stack(tabs), np.stack(rbs), np.stack(res)
        rt_a, tot_a = np.array(rts, dtype=np.int64), np.array(totals, dtype=np.int64)
        cases_i = np.arange(len(tabs))
        reads: List[Any] = []
        env0: Dict[str, Any] = {"rtiles": rt_a, "rows": rt_a, "G": np.int64(G), "__case": cases_i}
        _run(rows_stmts, env0, tab2, np.ones(len(tabs), dtype=bool), reads)
        grid_m = np.maximum(env0["rows"], 0)  # a negative count walks no tile (t < tiles)
        for i, m in reads:
            if (m & ((i < 0) | (i >= table_entries(G)))).any():
                raise ProofFailedError(
                    f"grouped kernel: its tile rows read the table outside its {table_entries(G)} entries",
                    condition="group table read in range",
                )
        for gn in grid_ns:
            n_t = grid_m * gn
            case = np.repeat(cases_i, n_t)
            t = _ranges(n_t)
            env: Dict[str, Any] = {"t": t, "grid_m": grid_m[case], "grid_n": np.int64(gn)}
            _run(tile_stmts, env, None, np.ones(t.shape, dtype=bool), [])
            tm, tn = env["tm"], env["tn"]
            g, m0, rend = _search(st, tm, tab2, G, case)
            live = m0 < rend
            if cfg.pingpong and not live.all():
                j = int(np.flatnonzero(~live)[0])
                i = int(case[j])
                raise ProofFailedError(
                    f"grouped cover ({form}, sizes {list(names[i])[:8]}, rtiles={rts[i]}, grid_n={gn}): "
                    f"tile row {int(tm[j])} is empty on the ping-pong base",
                    condition="no empty tile",
                    witness=(form, names[i], rts[i], gn),
                )
            cnt = np.where(live, np.minimum(rend - m0, bm), 0)
            rows = np.repeat(m0[live], cnt[live]) + _ranges(cnt[live])
            rc = np.repeat(case[live], cnt[live])
            cols = np.repeat(tn[live], cnt[live])
            grp = np.repeat(g[live], cnt[live])
            base = np.concatenate([[0], np.cumsum(tot_a * gn)[:-1]])
            outside = (rows < 0) | (rows >= tot_a[rc]) | (cols < 0) | (cols >= gn)
            in_grp = (rows >= rb2[rc, np.clip(grp, 0, G - 1)]) & (rows < re2[rc, np.clip(grp, 0, G - 1)])
            first_ok = ~live | (m0 >= rb2[case, np.clip(g, 0, G - 1)])
            key = base[rc] + np.where(outside, 0, rows) * gn + cols
            cover = np.bincount(key[~outside], minlength=int((tot_a * gn).sum()))
            want = np.zeros_like(cover)
            for i in range(len(tabs)):
                for gi in range(G):
                    lo, hi = int(rb2[i, gi]), int(re2[i, gi])
                    want[base[i] + lo * gn : base[i] + hi * gn] = 1
            if outside.any() or not in_grp.all() or not first_ok.all() or not np.array_equal(cover, want):
                if outside.any() or not in_grp.all():
                    j = int(np.flatnonzero(outside | ~in_grp)[0])
                    i, where = int(rc[j]), f"row {int(rows[j])} goes to group {int(grp[j])}'s tile"
                elif not first_ok.all():
                    j = int(np.flatnonzero(~first_ok)[0])
                    i, where = int(case[j]), f"tile row {int(tm[j])} starts before its group"
                else:
                    k0 = int(np.flatnonzero(cover != want)[0])
                    i = int(np.searchsorted(base, k0, side="right") - 1)
                    r, c = divmod(k0 - int(base[i]), gn)
                    where = (
                        f"element (row {r}, tile column {c}) is taken {int(cover[k0])} times "
                        f"(want {int(want[k0])})"
                    )
                raise ProofFailedError(
                    f"grouped cover ({form}, sizes {list(names[i])[:8]}, rtiles={rts[i]}, "
                    f"grid_n={gn}): {where}",
                    condition="grouped cover",
                    witness=(form, names[i], rts[i], gn),
                )
            cases += int(t.size)
    vectors = len(fam)
    walk = (
        "min(rtiles, the table's count) tile rows, no tile empty"
        if cfg.pingpong
        else "rtiles tile rows, padding tiles empty"
    )
    log.add(
        "bijective",
        f"grouped schedule (bm={bm}, bn={bn_}, group_m={gm}, up to {cfg.max_groups} groups): lp_tile then "
        f"lp_group (the emitted statements) take every output element of every group exactly once, in a "
        f"tile of its own group (B expert bidx = g), no non-empty tile before its group, every table read in "
        f"range, walking {walk} -- for {vectors} size vectors (contiguous: every vector of 1-3 groups "
        f"over sizes {{0, 1, bm-1, bm, bm+1, 2bm+5}}, of 4 groups over {{0, 1, bm, bm+1}}, 8 MoE vectors of "
        f"8-256 groups with zeros; masked: 3 groups, three max_m), exact and upper-bound tile-row counts, "
        f"grid_n in {list(grid_ns)}",
        "exhaustive",
        cases,
    )


def _ranges(cnt: np.ndarray) -> np.ndarray:
    """0..c-1 for each c of ``cnt``, concatenated."""
    if cnt.size == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(cnt) - cnt, cnt)
    return np.arange(int(cnt.sum()), dtype=np.int64) - starts


@functools.cache
def _cover_proofs(cfg: GroupedConfig) -> Tuple[Any, ...]:
    log = ProofLog()
    prove_search_monotone(cfg.max_groups, log)
    prove_group_search(cfg.base.bm, cfg.max_groups, log)
    prove_group_cover(cfg, log)
    return tuple(log.proofs)


# ============================================================================ the kernel
def _rewrite(k: kir.Kernel, cfg: GroupedConfig, name: str) -> kir.Kernel:
    """The batched (``batch="b"``) warp-specialized kernel rewritten into the grouped one."""
    what, cond = "grouped rewrite", "grouped rewrite"
    M = find_param(k, "M", what, cond)
    KT = find_decl(k.body, "KT", what, cond)
    tpb = find_decl(k.body, "tpb", what, cond)
    gtab = kir.Var("gtab", "const int*")
    G = kir.Var("G")
    rtiles = kir.Var("rtiles")
    cg = find_decl(k.body, "cg", what, cond)
    tmA, tmB = find_param(k, "tmA", what, cond), find_param(k, "tmB", what, cond)
    tmAs = kir.Var("tmAs", "const unsigned long long*")
    tmBs = kir.Var("tmBs", "const unsigned long long*")
    seen = {"tile": 0, "guard": 0, "epilogue": 0, "skip": 0, "maps": 0}

    def tile_block(b: kir.Block) -> Optional[kir.Block]:
        names = [s.var.name for s in b.body if isinstance(s, kir.Decl)]
        if "bidx" not in names or "tb" not in names:
            return None
        bidx = next(s.var for s in b.body if isinstance(s, kir.Decl) and s.var.name == "bidx")
        tb = next(s for s in b.body if isinstance(s, kir.Decl) and s.var.name == "tb")
        if not (isinstance(tb.init, kir.Bin) and tb.init.op == "%"):
            raise ProofFailedError(f"{what}: tb is not t % tpb", condition=cond)
        t = tb.init.a
        g, gm0, rend = kir.Var("g"), kir.Var("gm0"), kir.Var("rend")
        kte = ir_var("kte")
        out: List[kir.Stmt] = []
        tms: List[Any] = []
        for s in b.body:
            if isinstance(s, kir.Decl) and s.var.name in ("bidx", "tb"):
                continue
            if isinstance(s, kir.Eval) and isinstance(s.e, kir.Call) and s.e.name == "lp_tile":
                tm = s.e.args[3]
                tms.append(tm)
                out.append(replace(s, e=replace(s.e, args=(t,) + s.e.args[1:])))
                out += [
                    kir.Decl(g),
                    kir.Decl(gm0),
                    kir.Decl(rend),
                    kir.Eval(kir.Call("lp_group", (tm, gtab, G, g, gm0, rend), "void")),
                    kir.Decl(bidx, g, const=True, comment="the tile's group: its B expert"),
                ]
                if cfg.per_group_maps and any(isinstance(n, kir.TmaLoad) for n in kir.walk(b)):
                    out += _group_maps_ir(g, tmAs, tmBs, tmA, tmB)
                    seen["maps"] += 1
                continue
            if isinstance(s, kir.Decl) and s.var.name == "m0":
                # the tile's origin tm * bm (less the ping-pong epilogue's 64 cg) becomes the
                # group's row gm0
                if s.init is None:
                    raise ProofFailedError(f"{what}: m0 has no value", condition=cond)
                out.append(replace(s, init=_origin(s.init, tms, gm0)))
                if cfg.pingpong:  # every tile holds rows (grid_rows_devfn): whole k-loops
                    continue
                out.append(
                    kir.Decl(
                        kte,
                        kir.Cond(gm0.lt(rend), KT, kir.Const(0)),
                        const=True,
                        comment="an empty tile (past its group's rows) runs no k-tile",
                    )
                )
                continue
            out.append(s)
        seen["tile"] += 1

        def inner(n: Any) -> Any:
            if isinstance(n, kir.For) and n.stop is KT and not cfg.pingpong:
                return replace(n, stop=kte)
            if (
                isinstance(n, kir.If)
                and isinstance(n.cond, kir.Bin)
                and n.cond.op == "<"
                and isinstance(n.cond.a, kir.Var)
                and n.cond.a.name == "r"
                and n.cond.b is M
            ):
                seen["guard"] += 1
                return replace(n, cond=n.cond.a.lt(rend).and_(n.cond), comment="the group's rows, inside C")
            if (
                cfg.skip_slices
                and cfg.base.warpgroups > 1
                and isinstance(n, kir.For)
                and any(isinstance(x, kir.Wgmma) for x in n.body.body)
            ):
                # a warpgroup whose 64-row slice lies past the group's end multiplies nothing;
                # one branch per warpgroup keeps each condition free of the thread index
                # (warpgroup 0 always holds rows of a non-empty tile)
                seen["skip"] += 1
                branches: List[kir.Stmt] = [kir.If(cg.eq(0), kir.block(n))]
                for c in range(1, cfg.base.warpgroups):
                    body_c = kir.rewrite(n, lambda x: None)
                    branches.append(
                        kir.If(
                            cg.eq(c),
                            kir.block(
                                kir.If(
                                    (gm0 + 64 * c).lt(rend),
                                    kir.block(body_c),
                                    comment=f"rows {64 * c}.. of the tile hold some of the group's",
                                )
                            ),
                        )
                    )
                return kir.Block(tuple(branches), True)
            return None

        stmts = [kir.rewrite(x, inner) for x in out]
        for i, x in enumerate(stmts):  # the consumers' epilogue chunk loop: skipped by an empty tile
            if cfg.pingpong:
                break
            if isinstance(x, kir.For) and any(isinstance(y, kir.NamedBarrier) for y in kir.walk(x.body)):
                stmts[i] = kir.If(kte.gt(0), kir.block(kir.Comment("an empty tile has nothing to store"), x))
                seen["epilogue"] += 1
        return kir.Block(tuple(stmts), b.bare)

    def fn(n: Any) -> Any:
        if isinstance(n, kir.Decl) and n.var.name == "grid_m":
            if not cfg.pingpong:
                return replace(
                    n, init=rtiles, comment="tile rows of all groups (host: exact or an upper bound)"
                )
            return kir.block(
                replace(n, init=None, const=False, comment="tile rows of all groups: no tile empty"),
                kir.Eval(kir.Call("lp_grid_rows", (rtiles, gtab, G, n.var), "void")),
            )
        if isinstance(n, kir.Decl) and n.var.name == "tiles":
            return replace(n, init=tpb)
        if isinstance(n, kir.Block):
            return tile_block(n)
        return None

    body = kir.rewrite(k.body, fn)
    want_maps = 1 if cfg.per_group_maps else 0
    want_skip = 1 if cfg.skip_slices and cfg.base.warpgroups > 1 else 0
    want_ep = 0 if cfg.pingpong else 1
    if (
        seen["tile"] != 2
        or seen["guard"] != 1
        or seen["epilogue"] != want_ep
        or seen["skip"] != want_skip
        or seen["maps"] != want_maps
    ):
        raise ProofFailedError(
            f"{what}: {seen['tile']} tile loops, {seen['guard']} C row guards, {seen['epilogue']} "
            f"epilogue loops, {seen['skip']} wgmma batches and {seen['maps']} map selections rewritten "
            f"(expected 2, 1, {want_ep}, {want_skip} and {want_maps})",
            condition=cond,
        )
    params = k.params + (("const int* __restrict__", gtab), ("int", G), ("int", rtiles))
    devfns = k.devfns + (group_search_devfn(cfg.base.bm, cfg.max_groups),)
    if cfg.pingpong:
        devfns = devfns + (grid_rows_devfn(),)
    if cfg.per_group_maps:
        arr = "const unsigned long long* __restrict__"  # 16 words (one tensor map) per group
        swap = {"tmA": (arr, tmAs), "tmB": (arr, tmBs)}
        params = tuple(swap.get(v.name, (t, v)) for t, v in params)
        devfns = devfns + (group_map_devfn(),)
    desc = k.description + (
        "grouped (MoE): group g = lp_group(tile row) owns rows [rbeg, rend) of the stacked A and C and",
        f"multiplies them by B expert g; up to {cfg.max_groups} groups; "
        "table gtab = [ptile | rbeg | rend | count]",
    )
    return replace(
        k,
        name=name,
        params=params,
        body=body,
        devfns=devfns,
        description=desc
        + (
            ("per-group tensor maps: the producer reads group g's A and B through tmAs[g] and tmBs[g]",)
            if cfg.per_group_maps
            else ()
        ),
    )


def _origin(init: kir.Expr, tms: Sequence[Any], gm0: kir.Var) -> kir.Expr:
    """``init`` (a tile's ``m0``) with its origin ``tm * bm`` (``tm`` the block's ``lp_tile``
    row) replaced by the group's row ``gm0``; exactly one such term."""
    hits = [0]

    def fn(n: Any) -> Any:
        if isinstance(n, kir.Bin) and n.op == "*" and any(n.a is t for t in tms):
            hits[0] += 1
            return gm0
        return None

    out = kir.rewrite(init, fn)
    if hits[0] != 1:
        raise ProofFailedError(
            f"grouped rewrite: m0 = {kir.emit_expr_safe(init)} has {hits[0]} tile origins tm * bm "
            "(expected one)",
            condition="grouped rewrite",
        )
    return out


def group_map_devfn() -> Tuple[str, str, kir.Block]:
    """``lp_gmap(maps, g, &p)``: ``p = maps + 16 g``, the address of group ``g``'s tensor
    map in a device array of maps, 16 64-bit words (128 bytes) each (the pointer-array
    form)."""
    maps, g = kir.Var("maps", "const unsigned long long*"), kir.Var("g")
    p = kir.Var("p", "const unsigned long long*")
    return (
        "lp_gmap",
        "const unsigned long long* __restrict__ maps, int g, const unsigned long long*& p",
        kir.block(kir.Assign(p, maps + 16 * g)),
    )


def _group_maps_ir(g: kir.Var, tmAs: kir.Var, tmBs: kir.Var, tmA: kir.Var, tmB: kir.Var) -> List[kir.Stmt]:
    """The producer's maps of the tile's group: ``tmA`` / ``tmB`` (the names the TMA loads
    print) become references to ``tmAs[g]`` / ``tmBs[g]``."""
    out: List[kir.Stmt] = []
    for arr, ref in ((tmAs, tmA), (tmBs, tmB)):
        ptr = kir.Var(f"p{ref.name}", "const unsigned long long*")
        out += [
            kir.Decl(ptr),
            kir.Eval(kir.Call("lp_gmap", (arr, g, ptr), "void")),
            kir.Decl(
                ref,
                kir.Un("*", kir.Reinterpret("const lp_tmap_t*", ptr)),
                const=True,
                tname="lp_tmap_t&",
                comment=f"group g's own map ({arr.name}[g])",
            ),
        ]
    return out


def _check_grid_m(k: kir.Kernel, cfg: GroupedConfig) -> None:
    """The kernel's tile-row count is the one the cover proof evaluated: ``rtiles`` (the
    warp-specialized base), or set by the one call of ``lp_grid_rows`` (the ping-pong base,
    :func:`grid_rows_devfn`) with the kernel's ``rtiles``, ``gtab`` and ``G``."""
    decls = [n for n in kir.walk(k.body) if isinstance(n, kir.Decl) and n.var.name == "grid_m"]
    calls = [
        n.e
        for n in kir.walk(k.body)
        if isinstance(n, kir.Eval) and isinstance(n.e, kir.Call) and n.e.name == "lp_grid_rows"
    ]
    if cfg.pingpong:
        ok = (
            len(decls) == 1
            and decls[0].init is None
            and len(calls) == 1
            and [getattr(x, "name", "") for x in calls[0].args] == ["rtiles", "gtab", "G", "grid_m"]
            and calls[0].args[3] is decls[0].var
        )
    else:
        ok = len(decls) == 1 and not calls and getattr(decls[0].init, "name", "") == "rtiles"
    if not ok:
        raise ProofFailedError(
            f"grouped kernel: its tile rows are not the proven "
            f"{'lp_grid_rows(rtiles, gtab, G, grid_m)' if cfg.pingpong else 'rtiles'}",
            condition="grouped cover",
        )


def _check_empty_tiles(k: kir.Kernel, log: ProofLog) -> None:
    """On the IR: the producer's and the consumers' tile loops walk the same tiles (same
    start, step and bound), map them by the same calls (``lp_tile`` then ``lp_group`` of its
    row), and run their k-loops to ``kte = gm0 < rend ? KT : 0``: both sides skip the same
    (empty) tiles, so the ring sees the non-empty tiles' k-tiles only -- the schedules the
    pipeline model check covers.  (Every mbarrier wait and ring advance is inside a k-loop;
    the consumers' release after a tile is guarded by ``prev >= 0``, ``prev = -1`` at the
    tile's start: an empty tile releases nothing.)"""
    loops = [
        n
        for n in kir.walk(k.body)
        if isinstance(n, kir.For)
        and any(isinstance(d, kir.Decl) and d.var.name == "kte" for d in n.body.body)
    ]

    def facts(lp: kir.For) -> Tuple[Any, ...]:
        calls = [
            s.e
            for s in lp.body.body
            if isinstance(s, kir.Eval) and isinstance(s.e, kir.Call) and s.e.name != "lp_gmap"
        ]
        kte = next(d for d in lp.body.body if isinstance(d, kir.Decl) and d.var.name == "kte")
        inner = [n for n in kir.walk(lp.body) if isinstance(n, kir.For) and n.stop is kte.var]
        init = kte.init
        ok = (
            isinstance(init, kir.Cond)
            and isinstance(init.c, kir.Bin)
            and init.c.op == "<"
            and len(calls) == 2
            and calls[0].name == "lp_tile"
            and calls[1].name == "lp_group"
            and calls[0].args[0] is lp.var
            and calls[1].args[0] is calls[0].args[3]
            and init.c.a is calls[1].args[4]
            and init.c.b is calls[1].args[5]
            and isinstance(init.b, kir.Const)
            and init.b.value == 0
            and len(inner) == 1
        )
        waits = [n for n in kir.walk(lp.body) if isinstance(n, (kir.MbarWait, kir.RingAdvance))]
        in_k = (
            [n for n in kir.walk(inner[0].body) if isinstance(n, (kir.MbarWait, kir.RingAdvance))]
            if inner
            else []
        )
        ok = ok and len(waits) == len(in_k) and len(waits) > 0
        return ok, kir.emit_expr_safe(lp.start), kir.emit_expr_safe(lp.step), kir.emit_expr_safe(lp.stop)

    fs = [facts(lp) for lp in loops]
    if len(fs) != 2 or not all(f[0] for f in fs) or fs[0][1:] != fs[1][1:]:
        raise ProofFailedError(
            "grouped kernel: the producer and the consumers do not skip the same empty tiles "
            "(tile loops, lp_tile / lp_group calls or kte k-loops differ)",
            condition="empty tiles skipped alike",
            witness=tuple(f[1:] for f in fs),
        )
    log.add(
        "protocol",
        "grouped, read from the IR: producer and consumers walk the same tiles through lp_tile and lp_group "
        "and run kte = (gm0 < rend ? KT : 0) k-tiles, every mbarrier wait and ring advance inside that "
        "k-loop: an empty tile makes no ring operation on either side (the consumers' tile-end release is "
        "guarded by prev >= 0), so the ring runs the non-empty tiles' schedule the model check covers",
        "exhaustive",
        2,
    )


def check_group_coordinates(k: kir.Kernel, log: ProofLog) -> None:
    """On the IR: every B box is loaded at batch coordinate ``bidx``, declared equal to the
    ``g`` that ``lp_group`` returned for the tile (the expert of the tile's group, the one
    the cover proof pairs with its rows), and no A box has a batch coordinate (A is the
    stacked rows)."""
    an = obligations.analysis(k)
    group_outs = {
        id(n.e.args[3])
        for n in kir.walk(k.body)
        if isinstance(n, kir.Eval) and isinstance(n.e, kir.Call) and n.e.name == "lp_group"
    }
    n = 0
    for node in kir.walk(k.body):
        if not isinstance(node, kir.TmaLoad):
            continue
        op = node.claim.what[:1].upper()
        c2 = node.c2
        init = an.defs.get(id(c2)) if isinstance(c2, kir.Var) else None
        ok = (
            c2 is None
            if op == "A"
            else (isinstance(c2, kir.Var) and init is not None and id(init) in group_outs)
        )
        if not ok:
            raise ProofFailedError(
                f"grouped kernel: {node.claim.what} is loaded at batch coordinate "
                f"{kir.emit_expr_safe(c2) if c2 is not None else 'none'} (B: the tile's group g; A: none)",
                condition="group coordinate",
                witness=node.claim.what,
            )
        n += 1
    log.add(
        "equal",
        f"grouped TMA loads (read from the IR): each of the {n} B box loads reads expert bidx = g, the group "
        "lp_group gave the tile; the A boxes read the stacked rows (no batch coordinate)",
        "exhaustive",
        n,
    )


def check_group_maps(k: kir.Kernel, log: ProofLog) -> None:
    """On the IR of the per-group-map kernel: every TMA load reads through ``tmA`` or
    ``tmB``, and in the tile loop that issues it those names are references to
    ``*p``, ``p`` set by ``lp_gmap(tmAs, g, p)`` (``tmBs`` for B) with ``g`` the group
    ``lp_group`` gave the tile -- the same ``g`` whose expert the B box reads
    (:func:`check_group_coordinates`): a tile of group ``g`` reads group ``g``'s maps only."""
    n = 0
    loops = [  # the producer's tile loop: the one whose body maps its tile by lp_group
        lp
        for lp in kir.walk(k.body)
        if isinstance(lp, kir.For)
        and any(isinstance(x, kir.TmaLoad) for x in kir.walk(lp.body))
        and any(
            isinstance(x, kir.Eval) and isinstance(x.e, kir.Call) and x.e.name == "lp_group"
            for x in lp.body.body
        )
    ]
    for lp in loops:
        stmts = lp.body.body
        grp = [
            s.e
            for s in stmts
            if isinstance(s, kir.Eval) and isinstance(s.e, kir.Call) and s.e.name == "lp_group"
        ]
        sel = {
            id(s.e.args[2]): s.e
            for s in stmts
            if isinstance(s, kir.Eval) and isinstance(s.e, kir.Call) and s.e.name == "lp_gmap"
        }
        refs = {}
        for d in stmts:
            if (
                isinstance(d, kir.Decl)
                and isinstance(d.init, kir.Un)
                and d.init.op == "*"
                and isinstance(d.init.a, kir.Reinterpret)
                and d.init.a.ctype == "const lp_tmap_t*"
            ):
                call = sel.get(id(d.init.a.a))
                if call is not None:
                    refs[d.var.name] = call
        for node in kir.walk(lp.body):
            if not isinstance(node, kir.TmaLoad):
                continue
            want = "tmAs" if node.claim.what[:1].upper() == "A" else "tmBs"
            call = refs.get(node.tmap.name)
            ok = (
                len(grp) == 1
                and call is not None
                and isinstance(call.args[0], kir.Var)
                and call.args[0].name == want
                and call.args[1] is grp[0].args[3]
            )
            if not ok:
                raise ProofFailedError(
                    f"grouped kernel: {node.claim.what} is read through {node.tmap.name}, not through "
                    f"{want}[g] of the tile's group g",
                    condition="per-group tensor map",
                    witness=node.claim.what,
                )
            n += 1
    if n == 0:
        raise ProofFailedError(
            "grouped kernel: no TMA load reads a per-group map", condition="per-group tensor map"
        )
    log.add(
        "equal",
        f"per-group tensor maps (read from the IR): each of the {n} TMA box loads of a tile reads through "
        "tmAs[g] (A) or tmBs[g] (B), g the group lp_group gave the tile; the host's map g describes "
        "group g's own matrices (group_map_plan), so a tile reads its own group's A rows and B expert only",
        "exhaustive",
        n,
    )


_MEMO: Dict[Tuple[GroupedConfig, GemmProblem], GemmKernel] = {}


def generate_grouped(
    config: Optional[GroupedConfig] = None, problem: Optional[GemmProblem] = None
) -> GemmKernel:
    """Build, prove and emit the grouped kernel: the batched warp-specialized kernel of
    ``config.base`` with B batched (one expert per group) rewritten to walk the groups'
    tiles (module docstring).  ``problem`` gives the majors and types (f16/bf16); its
    ``batch`` is set to ``"b"``.  Parameters: the base's ``(tmA, tmB, C, M, N, K, ldc,
    c_vec, batch, ldcb)`` -- ``M`` the stacked rows, ``batch`` the group count, ``ldcb`` 0
    -- then ``gtab, G, rtiles``.
    """
    from .wgmma import generate_sm90
    from .wgmma_pingpong import generate_pingpong, prove_pingpong_cover, prove_pingpong_protocol

    cfg = (config or GROUPED_DEFAULT).validate()
    prob = replace((problem or GemmProblem("k", "n", "bf16")), batch="b").validate()
    if prob.dtype not in ("f16", "bf16"):
        raise GemmConfigError(f"generate_grouped: dtype={prob.dtype!r}: the grouped kernel takes f16 or bf16")
    if (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    if cfg.pingpong:
        base = generate_pingpong(cfg.base, prob)
        tx0 = expect_tx_bytes(base.ir)

        def protocol(kk: kir.Kernel, lg: ProofLog) -> Any:
            return prove_pingpong_protocol(kk, cfg.base, tx0, lg)

        plan = base_plan_proofs(base, None, protocol)
    else:
        base = generate_sm90(cfg.base, prob)
        plan = base_plan_proofs(base, cfg.base)

        def protocol(kk: kir.Kernel, lg: ProofLog) -> Any:
            return prove_ws_protocol(kk, cfg.base, expect_tx_bytes(kk), lg, 1)

    # the base's plan proofs, less those of its batch split (t / tpb) and tile walk, which the
    # rewrite replaces (the walk is proven again on the rewritten tree)
    log = ProofLog([p for p in plan if not p.statement.startswith(("batched", "ping-pong cover"))])
    log.extend(ProofLog(list(_cover_proofs(cfg))))
    h = hashlib.sha256(f"{GENERATOR_VERSION}{cfg}{prob}grouped".encode()).hexdigest()[:10]
    name = f"lp_gemm_grouped_{prob.key()}_{h}"
    ir = _rewrite(base.ir, cfg, name)
    _check_grid_m(ir, cfg)
    if cfg.pingpong:
        prove_pingpong_cover(ir, log)
    else:
        _check_empty_tiles(ir, log)
    check_group_coordinates(ir, log)
    if cfg.per_group_maps:
        check_group_maps(ir, log)
    title = f"proven before emission ({cfg.key()}, {prob.key()})"
    src = finish(ir, log, title, lambda kk: protocol(kk, log))
    out = GemmKernel(
        config=cfg,
        problem=prob,
        source=src,
        name=name,
        threads=base.threads,
        smem_bytes=base.smem_bytes,
        proofs=log,
        swizzles=base.swizzles,
        ir=ir,
    )
    _MEMO[(cfg, prob)] = out
    return out
