"""The split-K fix-up kernel's CTA shape, and the proof that its grid covers the output once.

The fix-up (:func:`layoutproof.gpu.kernels.splitk.reduce_ir`) sums the ``S`` f32 planes of the
workspace into ``C``.  Its CTA shape is a :class:`FixupShape`: ``threads`` per CTA, ``cols``
columns per thread (at stride ``threads``: each load of a warp stays one coalesced 128-byte
row segment, whatever ``N``), ``rows`` rows per CTA (the CTA loops over them), and a
register cap per thread (``__launch_bounds__(threads, 65536 / (threads * regs))``).  The
default, ``FIXUP_SHAPES["t256"]`` (256 threads, one element each), is the kernel of
sessions 20-22, emitted unchanged.

Why other shapes (issue 17, session 22): the split kernel's CTA (64x256 s5 ws) holds 61,440
of an SM's 65,536 registers, so a fix-up CTA of 256 threads at 24 registers (6,144) cannot
be resident beside it; under programmatic dependent launch only the idle SMs host fix-up
CTAs before the split CTAs exit.  A CTA of at most 4,096 registers (128 threads at <= 32,
64 threads at <= 64) can be; fewer, fatter CTAs (``cols``, ``rows`` > 1) make all of them fit.

What each shape must satisfy is checked on the kernel's own IR (:func:`prove_fixup_grid`):
with the launch grid :func:`fixup_grid`, the C stores' coordinates ``(r, c)`` -- the claim's
bound coordinates, evaluated with C semantics at every block index, thread and loop index
of the store, under the guards that enclose it -- hit every cell of ``[0, M) x [0, N)``
exactly once and nothing outside.  The plane reads and the C store are claims discharged
like every kernel's (address = the workspace/C layout, in bounds under the guards).

>>> FIXUP_SHAPES["t128c2"]
FixupShape(threads=128, cols=2, rows=1, regs=32, carveout=-1)
>>> fixup_grid(16, 4096, FIXUP_SHAPES["t128c2"]), fixup_grid(16, 4096, FIXUP_SHAPES["t128c2r2"])
((16, 16, 1), (16, 8, 1))
>>> FIXUP_SHAPES["t128"].registers(), FIXUP_SHAPES["t256"].registers() is None
(4096, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..errors import GemmConfigError, ProofFailedError
from ..proof import kir
from ..proof.record import ProofLog

__all__ = [
    "FixupShape",
    "FIXUP_SHAPES",
    "FIXUP_DEFAULT",
    "fixup_grid",
    "prove_fixup_grid",
    "C_STORE",
]

#: the claim name of the fix-up's C store (:func:`layoutproof.gpu.kernels.splitk.reduce_ir`)
C_STORE = "C element store C[r, c]"
#: registers of one SM (sm_90)
SM_REGISTERS = 65536


@dataclass(frozen=True)
class FixupShape:
    """The fix-up CTA: ``threads`` (a multiple of 32, <= 1024), ``cols`` columns per thread
    at stride ``threads`` (1..8), ``rows`` rows per CTA (1..16), ``regs`` the register cap
    per thread (0: none, ``__launch_bounds__(threads, 1)``; else ``threads * regs`` divides
    65,536 and the kernel asks for ``65536 / (threads * regs)`` resident CTAs per SM);
    ``carveout`` the shared-memory carveout the runtime asks for (percent, the function
    attribute; -1: the driver's choice) -- the split kernel's CTA runs at the largest."""

    threads: int = 256
    cols: int = 1
    rows: int = 1
    regs: int = 0
    carveout: int = -1

    def validate(self) -> "FixupShape":
        t, c, r, g, cv = self.threads, self.cols, self.rows, self.regs, self.carveout
        ok = (
            all(isinstance(x, int) and not isinstance(x, bool) for x in (t, c, r, g, cv))
            and -1 <= cv <= 100
            and 32 <= t <= 1024
            and t % 32 == 0
            and 1 <= c <= 8
            and 1 <= r <= 16
        )
        if ok and g:
            ok = 16 <= g <= 255 and SM_REGISTERS % (t * g) == 0 and t * (SM_REGISTERS // (t * g)) <= 2048
        if not ok:
            raise GemmConfigError(
                f"split-K fix-up shape {self}: threads a multiple of 32 in 32..1024, cols 1..8, rows "
                "1..16, regs 0 or 16..255 with threads * regs dividing 65536 (at most 2048 threads/SM), "
                "carveout -1 or 0..100"
            )
        return self

    @property
    def min_blocks(self) -> int:
        """The ``__launch_bounds__`` minimum of resident CTAs per SM (the register cap)."""
        return SM_REGISTERS // (self.threads * self.regs) if self.regs else 1

    def registers(self) -> Optional[int]:
        """The registers one CTA holds at most (``threads * regs``), None without a cap."""
        return self.threads * self.regs if self.regs else None

    @property
    def tag(self) -> str:
        """The shape's name in kernel names: ``t128c2r1g32`` (``cv100`` appended with a carveout)."""
        cv = f"cv{self.carveout}" if self.carveout >= 0 else ""
        return f"t{self.threads}c{self.cols}r{self.rows}g{self.regs}{cv}"


#: the default (the kernel of sessions 20-22, byte for byte)
FIXUP_DEFAULT = FixupShape()
#: the named shapes: all but ``t256`` hold at most 4,096 registers per CTA
FIXUP_SHAPES: Dict[str, FixupShape] = {
    "t256": FIXUP_DEFAULT,
    "t128": FixupShape(128, 1, 1, 32),
    "t128c2": FixupShape(128, 2, 1, 32),
    "t128c4": FixupShape(128, 4, 1, 32),
    "t128c2r2": FixupShape(128, 2, 2, 32),
    "t64c4": FixupShape(64, 4, 1, 64),
    "t128c2cv": FixupShape(128, 2, 1, 32, 100),
}


def fixup_grid(m: int, n: int, shape: FixupShape = FIXUP_DEFAULT) -> Tuple[int, int, int]:
    """The fix-up kernel's launch grid for an ``m x n`` output: ``(ceil(n / (threads *
    cols)), ceil(m / rows), 1)`` -- for the default ``(ceil(n / 256), m, 1)``."""
    shape.validate()
    if m < 1 or n < 1:
        raise GemmConfigError(f"split-K fix-up grid: the output must be at least 1 x 1, got {m} x {n}")
    return (-(-n // (shape.threads * shape.cols)), -(-m // shape.rows), 1)


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
            if isinstance(node.lhs, kir.Mem) and node.lhs.claim.what == C_STORE:
                out.append((node.lhs, loops, guards))
            for x in kir.walk(node.rhs):
                if isinstance(x, kir.Mem) and x.claim.what == C_STORE:
                    out.append((x, loops, guards))

    go(body, [], [])
    return out


def prove_fixup_grid(
    k: kir.Kernel, shape: FixupShape, log: ProofLog, max_n: int = 160, max_m: int = 5
) -> None:
    """The fix-up's C stores cover ``[0, M) x [0, N)`` exactly once with the grid
    :func:`fixup_grid`: ``(r, c)`` are the C store claim's bound coordinates, evaluated with C
    semantics (the kernel's own declarations inlined) at every ``(blockIdx.x, blockIdx.y,
    threadIdx.x)`` of the grid and every index of the constant loops around the store, kept
    where the ``if`` conditions around it hold.  Exhaustive for ``M <= max_m`` and every ``N
    <= max_n``, every ``N`` within 2 of a multiple ``q * threads`` (``q <= 2 * cols + 1``: each
    column loop step and block edge) and of ``q * threads * cols`` (``q <= 3``), ``M <= max_m``
    and a few large ``N`` (the map is affine in the block indices); the kernel's ``threads``
    must be the shape's."""
    shape.validate()
    cond = "fix-up covers the output once"
    if k.threads != shape.threads:
        raise ProofFailedError(
            f"fix-up kernel {k.name}: {k.threads} threads per CTA, the shape {shape.tag} launches "
            f"{shape.threads}",
            condition=cond,
            witness=(k.threads, shape.threads),
        )
    sites = _store_sites(k.body)
    if len(sites) != 1:
        raise ProofFailedError(
            f"fix-up kernel {k.name}: {len(sites)} C store sites, expected one", condition=cond
        )
    mem, loops, guards = sites[0]
    if len(mem.claim.bounds) != 2:
        raise ProofFailedError(
            f"fix-up kernel {k.name}: the C store claim bounds {len(mem.claim.bounds)} coordinates, "
            "not (r, c)",
            condition=cond,
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
                condition=cond,
                witness=lp.var.name,
            )
        bounds.append((lp.var, np.arange(a.value, z.value, st.value)))
    by = kir.Var("blockIdx.y", builtin=True)
    names = {"blockIdx.x": kir.BLOCK_IDX, "blockIdx.y": by, "threadIdx.x": kir.THREAD_IDX}
    ids_by_name: Dict[str, List[int]] = {}
    for n in kir.walk(k.body):
        if isinstance(n, kir.Var) and n.name in names:
            ids_by_name.setdefault(n.name, []).append(id(n))
    for n in kir.walk(mem.claim):
        if isinstance(n, kir.Var) and n.name in names:
            ids_by_name.setdefault(n.name, []).append(id(n))
    mn_ids: Dict[str, List[int]] = {"M": [], "N": []}  # the parameters M, N wherever they are named
    for n in list(kir.walk(k.body)) + list(kir.walk(mem.claim)):
        if isinstance(n, kir.Var) and n.name in mn_ids:
            mn_ids[n.name].append(id(n))
    cases = 0
    T, TJ = shape.threads, shape.threads * shape.cols
    edges = {q * T + d for q in range(1, 2 * shape.cols + 2) for d in range(-2, 3)}
    edges |= {q * TJ + d for q in range(1, 4) for d in range(-2, 3)}
    ns = sorted(set(range(1, max_n + 1)) | edges | {4095, 4096, 4097, 8192, 11008})
    for M in range(1, max_m + 1):
        for N in ns:
            gx, gy, _ = fixup_grid(M, N, shape)
            axes = [np.arange(gx), np.arange(gy), np.arange(shape.threads)] + [b for _, b in bounds]
            grids = np.meshgrid(*axes, indexing="ij")
            env: Dict[int, np.ndarray] = {}
            for nm, g in zip(("blockIdx.x", "blockIdx.y", "threadIdx.x"), grids[:3]):
                for i in ids_by_name.get(nm, []):
                    env[i] = g.ravel()
            for (v, _), g in zip(bounds, grids[3:]):
                env[id(v)] = g.ravel()
            for ext, val in ((mvar, M), (nvar, N)):
                if isinstance(ext, kir.Var):
                    env[id(ext)] = np.int64(val)
            for i in mn_ids["M"]:
                env.setdefault(i, np.int64(M))
            for i in mn_ids["N"]:
                env.setdefault(i, np.int64(N))
            ctx = kir.Ctx(env, defs, {}, {})
            size = grids[0].size
            try:
                r = np.broadcast_to(kir.eval_expr(rexp, ctx)[0], (size,))
                c = np.broadcast_to(kir.eval_expr(cexp, ctx)[0], (size,))
                keep = np.ones(size, dtype=bool)
                for gd in guards:
                    keep &= np.broadcast_to(kir.eval_expr(gd, ctx)[0], (size,)) != 0
            except Exception as ex:  # an unknown variable: the map is not closed
                raise ProofFailedError(
                    f"fix-up kernel {k.name}: the C store's (r, c) cannot be evaluated ({ex})",
                    condition=cond,
                ) from None
            inside = (r >= 0) & (r < M) & (c >= 0) & (c < N)
            if np.any(keep & ~inside):
                i = int(np.flatnonzero(keep & ~inside)[0])
                raise ProofFailedError(
                    f"fix-up kernel {k.name}: with grid ({gx}, {gy}) a store lands at ({int(r[i])}, "
                    f"{int(c[i])}) outside the {M} x {N} output",
                    condition=cond,
                    witness=(M, N, int(r[i]), int(c[i])),
                )
            hits = np.bincount((r[keep] * N + c[keep]).astype(np.int64), minlength=M * N)
            if hits.size != M * N or not np.all(hits == 1):
                bad = int(np.flatnonzero(hits != 1)[0])
                raise ProofFailedError(
                    f"fix-up kernel {k.name}: with grid ({gx}, {gy}) cell ({bad // N}, {bad % N}) of a "
                    f"{M} x {N} output is stored {int(hits[bad])} times, not once",
                    condition=cond,
                    witness=(M, N, bad // N, bad % N),
                )
            cases += M * N
    loops_txt = ", ".join(f"{v.name} < {len(b)}" for v, b in bounds) or "no loop"

    def shown(e: kir.Expr) -> str:  # a coordinate and, for a declared variable, its definition
        d = defs.get(id(e))
        return kir.emit_expr(e) + (f" = {kir.emit_expr(d)}" if d is not None else "")

    log.add(
        "bijective",
        f"fix-up cells ({shape.tag}): grid (ceil(N/{shape.threads * shape.cols}), ceil(M/{shape.rows})) x "
        f"{shape.threads} threads x ({loops_txt}) -> C store ({shown(rexp)}, "
        f"{shown(cexp)}) under its guards covers [0, M) x [0, N) once (every N <= {max_n}, N within 2 "
        f"of q * {T} and of q * {TJ}, 4095..4097, 8192, 11008; M <= {max_m}; C semantics)",
        "exhaustive",
        cases,
    )
