"""Data-parallel rows plus a split-K tail: a schedule without a partial last wave.

A persistent kernel walks its output tiles in waves of one tile per SM, so an output of
``F * sms + R`` tiles (``0 < R < sms``) runs ``F + 1`` waves, the last one ``R / sms`` full:
5120^2 in 128x256 tiles is 800 tiles on 132 SMs, 6.06 waves run as 7.  The schedule here
cuts C by rows: rows ``[0, rows)`` (``rows`` a multiple of the tile's ``bm``, their tiles
fitting the ``F`` whole waves) run on the persistent data-parallel kernel, and rows
``[rows, m)`` -- a few tiles -- on the split-K kernel, which splits each of them along K so
that all SMs share them, its f32 planes summed by its fix-up kernel.  Both launches are
the existing proven kernels on row views of A and C (B whole); the wave model decides when
(:func:`layoutproof.gpu.host.rule.hybrid_split`).

What is proven for the schedule itself (each kernel's own cover, K partition and reduction
are its own proofs: ``wgmma_ws.prove_schedule``, ``splitk.prove_split``,
``prove_k_partition``, ``prove_workspace``, ``prove_fixup_grid``):

* :func:`prove_row_cut` (Z3, every ``m`` and cut): the two row ranges partition
  ``[0, m)``; the main launch's tile rows are exactly the global tile rows ``[0, r)`` with
  no padding row, and the tail's local tile row ``t`` is the global tile row ``r + t``, its
  padding rows (past ``m - rows``) past ``m`` -- so the two launches' tile grids partition
  the whole grid, each output element computed by exactly one launch;
* :func:`check_composed_cover` (exhaustive up to a bound): the emitted schedulers
  themselves (the persistent scheduler ``lp_tile`` of each launch, the split kernel's unit
  map ``lp_split``), composed with the row cut, visit every global tile once with its
  whole K: once in the main launch, or once per K chunk in the tail.

>>> from layoutproof.gpu.host.streamk import prove_row_cut
>>> prove_row_cut(128).status
'proved'
>>> o = prove_row_cut(128, tail_origin=64)   # a tail placed one half tile too low
>>> o.status, o.witness["m"] > 0
('refuted', True)
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from layoutproof.outcome import CHECKED, PROVED, REFUTED, UNKNOWN, Outcome

from ..errors import GemmInputError, ProofFailedError
from . import rule
from .rule import HybridSplit

__all__ = [
    "prove_row_cut",
    "check_composed_cover",
    "hybrid_proofs",
    "HybridPlan",
    "hybrid_plan",
]


def _ceil(a: Any, b: int) -> Any:
    return (a + b - 1) / b  # Z3 integer division of a non-negative numerator: the floor


def prove_row_cut(bm: int, *, tail_origin: int = 0, timeout_ms: int = 20000) -> Outcome:
    """For every ``m >= 1`` and cut ``rows = r * bm`` with ``0 < rows < m`` (Z3, unbounded
    integers): every row ``i < m`` lies in exactly one of the main launch's rows
    ``[0, rows)`` and the tail's (local row ``i - rows - tail_origin`` in
    ``[0, m - rows)``); the main launch has ``r`` tile rows and no padding row; the tail's
    ``ceil((m - rows) / bm)`` tile rows are the global tile rows ``r ..
    ceil(m / bm) - 1``, its local tile row ``t`` holding the global rows of tile row
    ``r + t`` and nothing below ``m`` of any other.  ``tail_origin``: where the tail's row 0
    is placed relative to the cut (0 in the schedule; another value plants a bug that must
    be refuted).  A counterexample is confirmed with Python integers before it is
    reported."""
    import z3

    if type(bm) is not int or bm < 1:
        raise GemmInputError(f"prove_row_cut: bm={bm!r} must be a positive int")
    t0 = time.perf_counter()
    m, r, i, t = z3.Ints("m r i t")
    rows = r * bm
    mt = m - rows
    org = rows + tail_origin  # the global row of the tail's local row 0
    in_main = z3.And(i >= 0, i < rows)
    in_tail = z3.And(i - org >= 0, i - org < mt)
    hyp = z3.And(m >= 1, r >= 1, rows < m)
    gtiles, ttiles = _ceil(m, bm), _ceil(mt, bm)
    claims = z3.And(
        # rows: exactly one launch owns each row of C (i, t are free: the negated claim
        # asks for any one that fails), and no launch owns a row outside C
        z3.Implies(z3.And(i >= 0, i < m), z3.Xor(in_main, in_tail)),
        z3.Implies(z3.Or(in_main, in_tail), z3.And(i >= 0, i < m)),
        # tiles: r whole tile rows above, the rest below, nothing added or lost
        _ceil(rows, bm) == r,
        r + ttiles == gtiles,
        # the tail's tile row t starts at the global tile row r + t's first row
        z3.Implies(z3.And(t >= 0, t < ttiles), org + t * bm == (r + t) * bm),
    )
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(hyp, z3.Not(claims))
    res = s.check()
    stmt = (
        f"rows [0, r*{bm}) on the data-parallel launch and [r*{bm}, m) on the split-K launch "
        f"(tail row 0 at the cut + {tail_origin}) partition C's rows and its {bm}-row tile rows"
    )
    scope = f"every m >= 1 and r >= 1 with r*{bm} < m"
    secs = time.perf_counter() - t0
    if res == z3.unsat:
        return Outcome(PROVED, stmt, "z3", scope=scope, seconds=secs)
    if res == z3.sat:
        mod = s.model()
        wm, wr = mod.eval(m, model_completion=True).as_long(), mod.eval(r, model_completion=True).as_long()
        bad = _row_cut_violation(bm, wm, wr, tail_origin)
        if bad is not None:
            return Outcome(
                REFUTED, stmt, "z3", scope=scope, seconds=secs, witness={"m": wm, "r": wr, "row": bad}
            )
        return Outcome(
            UNKNOWN, stmt, "z3", scope=scope, seconds=secs, reason="model not confirmed concretely"
        )
    return Outcome(UNKNOWN, stmt, "z3", scope=scope, seconds=secs, reason=str(s.reason_unknown()))


def _row_cut_violation(bm: int, m: int, r: int, tail_origin: int) -> Optional[int]:
    """The first row of ``[0, m)`` (or ``-1`` for a row outside C, or ``m`` for a tile-count
    mismatch) the cut at ``r * bm`` gets wrong with Python integers, or None."""
    rows = r * bm
    org = rows + tail_origin
    tail_rows = set(range(org, org + (m - rows)))
    for i in range(m):
        if (i < rows) == (i in tail_rows):
            return i
    if any(x < 0 or x >= m for x in tail_rows):
        return -1
    if r + -(-(m - rows) // bm) != -(-m // bm) or tail_origin % bm:
        return m
    return None


def check_composed_cover(
    group_m: int = 8,
    max_grid: int = 10,
    splits: Sequence[int] = (2, 3, 4),
    *,
    tail_shift: int = 0,
) -> Outcome:
    """Exhaustively, for every tile grid ``gm x gn`` up to ``max_grid`` a side, every cut
    ``0 < r < gm`` and every split count in ``splits``: the main launch's persistent loop
    (tiles ``[0, r * gn)`` through the emitted scheduler on an ``r x gn`` grid) and the
    tail's units (``[0, (gm - r) * gn * S)`` through the emitted ``lp_split`` and the
    scheduler on a ``(gm - r) x gn`` grid, tile row shifted by ``r``) give every global
    tile either one whole-K visit from the main launch or one visit per K chunk
    ``0 .. S-1`` from the tail, and nothing else.  ``tail_shift`` plants a bug (the tail's
    tile rows shifted by ``r + tail_shift``)."""
    import numpy as np

    from ..kernels.splitk import eval_split
    from ..kernels.wgmma_ws import eval_schedule

    t0 = time.perf_counter()
    cases = 0
    stmt = (
        "the data-parallel launch's scheduler on the first r tile rows and the split-K launch's "
        "unit map and scheduler on the rest visit every tile once, with all of K"
    )
    scope = f"grids up to {max_grid}x{max_grid}, every cut, S in {tuple(splits)}, group_m {group_m}"
    for gm in range(2, max_grid + 1):
        for gn in range(1, max_grid + 1):
            for r in range(1, gm):
                t = np.arange(r * gn)
                tm, tn = eval_schedule(group_m, t, np.full(t.size, r), np.full(t.size, gn))
                main = np.zeros((gm, gn), dtype=np.int64)
                np.add.at(main, (tm, tn), 1)
                for S in splits:
                    tiles = (gm - r) * gn
                    u = np.arange(tiles * S)
                    tile, sk = eval_split(u, np.full(u.size, tiles))
                    um, un = eval_schedule(group_m, tile, np.full(u.size, gm - r), np.full(u.size, gn))
                    gm_row = um + r + tail_shift
                    cases += int(t.size + u.size)
                    ok_rng = (gm_row >= 0) & (gm_row < gm) & (sk >= 0) & (sk < S)
                    if not ok_rng.all():
                        j = int(np.argmin(ok_rng))
                        return _refuted(
                            stmt, scope, cases, t0, gm, gn, r, S, f"unit {j} -> tile row {gm_row[j]}"
                        )
                    chunks = np.zeros((gm, gn, S), dtype=np.int64)
                    np.add.at(chunks, (gm_row, un, sk), 1)
                    above = (np.arange(gm) < r)[:, None] & np.ones((1, gn), dtype=bool)
                    # tile rows above the cut: one whole-K visit by the main launch, no chunk;
                    # below: no main visit, each chunk once
                    bad = (main != above) | (chunks != (~above)[:, :, None]).any(axis=2)
                    if bad.any():
                        a, b = (int(x) for x in np.argwhere(bad)[0])
                        where = f"tile ({a}, {b}): main {int(main[a, b])}, chunks {chunks[a, b].tolist()}"
                        return _refuted(stmt, scope, cases, t0, gm, gn, r, S, where)
    return Outcome(CHECKED, stmt, "exhaustive", scope=scope, cases=cases, seconds=time.perf_counter() - t0)


def _refuted(
    stmt: str, scope: str, cases: int, t0: float, gm: int, gn: int, r: int, S: int, what: str
) -> Outcome:
    return Outcome(
        REFUTED,
        stmt,
        "exhaustive",
        scope=scope,
        cases=cases,
        seconds=time.perf_counter() - t0,
        witness={"grid": (gm, gn), "r": r, "S": S, "where": what},
    )


@functools.cache
def hybrid_proofs(bm: int, group_m: int = 8) -> Tuple[Outcome, ...]:
    """The schedule's obligations for a main tile of ``bm`` rows (cached): the row cut
    (:func:`prove_row_cut`) and the composed cover (:func:`check_composed_cover`)."""
    return (prove_row_cut(bm), check_composed_cover(group_m))


def _require_proofs(bm: int) -> None:
    for o in hybrid_proofs(bm):
        if not o.holds:
            raise ProofFailedError(f"hybrid schedule: {o.line()}", condition="hybrid cover")


class HybridPlan:
    """C = A @ B in two launches on row views (:class:`~layoutproof.gpu.host.rule.HybridSplit`):
    a :class:`~layoutproof.gpu.host.plan.GemmPlan` of the data-parallel configuration on
    ``A[:rows]``, ``C[:rows]`` and one of the split-K configuration on ``A[rows:]``,
    ``C[rows:]``, issued in that order on the current stream (so a CUDA graph captures
    both).  A, B and C must be row-major (C-contiguous) 2-D CuPy arrays of f16 or bf16
    (or 2-byte words with ``dtype``), ``n`` and ``k`` multiples of 8.

    Raises:
        GemmInputError: another layout, a cut not inside ``(0, m)`` or not a multiple of
            the main tile's rows, operands unlike the plan's on a call.
        ProofFailedError: the schedule's obligations (:func:`hybrid_proofs`) fail.
    """

    def __init__(self, a: Any, b: Any, out: Any, split: HybridSplit, *, dtype: Optional[str] = None) -> None:
        from .runtime import gemm_plan

        m, k, n = self._check(a, b, out)
        rows = split.rows
        if not (0 < rows < m) or rows % split.main.bm:
            raise GemmInputError(
                f"HybridPlan: the cut rows={rows} must lie in (0, {m}) and be a multiple of the "
                f"main tile's {split.main.bm} rows"
            )
        if getattr(split.tail, "splits", 1) < 2 or getattr(split.tail, "reduction", "kernel") != "kernel":
            raise GemmInputError(
                "HybridPlan: the tail must be a split-K configuration with the fix-up kernel, "
                f"got {split.tail.key()}"
            )
        _require_proofs(split.main.bm)
        self.split, self.shape, self.rows = split, (m, n), rows
        self._k = k
        self._main = gemm_plan(a[:rows], b, out[:rows], config=split.main, dtype=dtype)
        self._tail = gemm_plan(a[rows:], b, out[rows:], config=split.tail, dtype=dtype)
        self._cupy = self._main._cupy
        self.config = split  # what runtime.last_launch-style logs print (its key())

    @staticmethod
    def _check(a: Any, b: Any, out: Any) -> Tuple[int, int, int]:
        for nm, x in (("a", a), ("b", b), ("out", out)):
            if getattr(x, "ndim", None) != 2 or not getattr(getattr(x, "flags", None), "c_contiguous", False):
                raise GemmInputError(
                    f"HybridPlan: {nm} must be a row-major (C-contiguous) 2-D cupy array; pass "
                    f"cupy.ascontiguousarray({nm}) or call gemm"
                )
        (m, k), (k2, n) = a.shape, b.shape
        if k2 != k or tuple(out.shape) != (m, n):
            raise GemmInputError(f"HybridPlan: shapes a {a.shape}, b {b.shape}, out {out.shape} do not chain")
        if n % 8 or k % 8:
            raise GemmInputError(f"HybridPlan: n={n} and k={k} must be multiples of 8 (16-byte rows)")
        return m, k, n

    def __call__(self, a: Any, b: Any, out: Any) -> Any:
        """C = A @ B into ``out`` for operands like the plan's (each launch checks its views)."""
        m, k, n = self._check(a, b, out)
        if (m, n) != self.shape or k != self._k:
            raise GemmInputError(
                f"HybridPlan: made for {self.shape[0]}x{self.shape[1]}x{self._k}, got {m}x{n}x{k}"
            )
        r = self.rows
        self._main(a[:r], b, out[:r])
        self._tail(a[r:], b, out[r:])
        return out

    def direct(self) -> Optional[Callable[[int, int, int, int], None]]:
        """``launch(a_ptr, b_ptr, c_ptr, stream)`` from base addresses, as
        :meth:`~layoutproof.gpu.host.plan.GemmPlan.direct`: the main launch on the first
        ``rows`` rows, then the tail's at the row offset (row-major A and C, 2-byte
        elements); None where either plan has no direct launch."""
        main = getattr(self._main, "direct", lambda: None)()
        tail = getattr(self._tail, "direct", lambda: None)()
        if main is None or tail is None:
            return None
        ra, rc = self.rows * self._k * 2, self.rows * self.shape[1] * 2

        def launch(pa: int, pb: int, pc: int, sp: int) -> None:
            main(pa, pb, pc, sp)
            tail(pa + ra, pb, pc + rc, sp)

        return launch

    def _run(self, a: Any, b: Any, out: Any, bias: Any, c: Any, alpha: float, beta: float) -> Any:
        """The call as :func:`~layoutproof.gpu.host.runtime.gemm` makes it on a kept plan:
        the plain product only; ``out=None`` allocates the row-major result."""
        if bias is not None or c is not None or alpha != 1 or beta != 0:
            raise GemmInputError(
                "HybridPlan: the plain product only (no bias, c, alpha or beta): make the "
                "epilogue call through gemm_plan"
            )
        if out is None:
            out = self._cupy.empty(self.shape, dtype=a.dtype)
        return self(a, b, out)


def hybrid_plan(
    a: Any,
    b: Any,
    out: Any = None,
    *,
    config: Any = None,
    out_dtype: Optional[str] = None,
    dtype: Optional[str] = None,
    path: str = "auto",
    bias: Any = None,
    activation: Optional[str] = None,
    c: Any = None,
) -> Optional[HybridPlan]:
    """A :class:`HybridPlan` for a call of :func:`~layoutproof.gpu.host.runtime.gemm` with
    these arguments where the schedule applies and the wave model takes it
    (:func:`~layoutproof.gpu.host.rule.hybrid_split`), else None (the caller makes the
    unsplit plan).  It applies to the plain product (no configuration asked for, no
    epilogue, ``path`` ``"auto"`` or ``"wgmma"``) of row-major 2-D CuPy f16 or bf16
    operands into a row-major output of the same type (or ``out=None``), on sm_90 with
    TMA; nothing here raises for a call it does not apply to."""
    if config is not None or bias is not None or activation is not None or c is not None:
        return None
    if path not in ("auto", "wgmma") or dtype is not None:
        return None
    try:
        a_dt, b_dt = str(a.dtype), str(b.dtype)
        ok = a.ndim == 2 and b.ndim == 2 and a.flags.c_contiguous and b.flags.c_contiguous
        if out is not None:
            ok = ok and out.ndim == 2 and out.flags.c_contiguous and str(out.dtype) == a_dt
    except AttributeError:
        return None
    if not ok or a_dt != b_dt or a_dt not in ("float16", "bfloat16"):
        return None
    if out_dtype is not None and out_dtype != {"float16": "f16", "bfloat16": "bf16"}[a_dt]:
        return None
    (m, k), (k2, n) = a.shape, b.shape
    if k2 != k or (out is not None and tuple(out.shape) != (m, n)):
        return None
    from . import device

    cp = device.cupy()
    facts = device.facts(cp)
    if facts.cc != "90" or not facts.tma:
        return None
    split = rule.hybrid_split(m, n, k, sms=facts.sms)
    if split is None:
        return None
    if out is None:
        out = cp.empty((m, n), dtype=a.dtype)
    return HybridPlan(a, b, out, split)


def describe(split: HybridSplit) -> Dict[str, Any]:
    """The schedule as plain data (for logs and benchmarks)."""
    return {
        "main": split.main.key(),
        "rows": split.rows,
        "tail": split.tail.key(),
        "model_us": split.model_us,
        "unsplit_us": split.unsplit_us,
    }
