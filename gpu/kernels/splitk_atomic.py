"""Split-K with one f32 plane and atomic reductions: the model of its two kernels, checked.

With ``SplitKConfig(base, S, reduction="atomic")`` (:func:`layoutproof.gpu.kernels.splitk.splitk_ir`
with ``atomic=True``) every unit adds its f32 partial into ONE plane ``W[M, N]`` with
``red.global.add`` (16-byte ``.v4.f32`` vectors where the row allows), and the fix-up kernel
(:func:`layoutproof.gpu.kernels.splitk.atomic_reduce_ir`) reads each cell, writes it back as 0 and
stores the converted value into C.  The plane is zeroed once when the plan is made; each
fix-up leaves it zero for the next call, so no memset runs per call.  The sum's order is
that of the reductions' arrival: the f32 result is not deterministic (rounding only).

Nothing but the grid dependencies orders the launches: the split kernel and the fix-up each
begin with ``griddepcontrol.wait`` (the previous grid of the stream has completed and its
memory operations are visible) and trigger their dependents (``launch_dependents``), so
with programmatic dependent launch a kernel may be *scheduled* while the previous one runs.
This module explores every interleaving of an exact model of one plane cell over two
consecutive calls: ``S`` units per call (each a thread adding to the cell) and the fix-up
thread of the cell, with

* ``red`` -- the cell gains the unit's partial atomically (no update is lost);
* ``store`` -- a plain store: the cell becomes the unit's partial (what a unit storing into
  the shared plane would do; a planted bug);
* ``read`` / ``zero`` / ``out`` -- the fix-up reads the cell, writes 0, writes C;
* ``trigger`` -- the next grid may be scheduled once every agent of this grid triggered
  (or finished); ``wait`` -- enabled once the previous grid has finished every step;
* the cell starts at 0 (the plan's memset); the cell's value is the set of partials it
  holds (exact: which partials, of which call, were added).

Checked: the fix-up of call ``L`` reads exactly the ``S`` partials of call ``L``
(``fix-up reads every partial of its call once``: a partial missing -- lost to a plain
store or read before its unit ran -- or one of the previous call left in the plane fails);
the plane is 0 after the last call (``plane zeroed for the next call``); no state short of
the end is stuck (``deadlock freedom``).  The programs are read from the kernels' IR
(:func:`split_program_ir`, :func:`fixup_program_ir`): the order of the waits, triggers and
plane accesses, which fail by name when missing or misplaced.

>>> check_atomic(3) > 0
True
>>> check_atomic(2, fixup=("wait", "trigger", "read", "out"))   # the fix-up does not zero
Traceback (most recent call last):
...
layoutproof.gpu.errors.ProofFailedError: atomic split-K (2 units): ... of its call once)
"""

from __future__ import annotations

import functools
from typing import Any, Dict, FrozenSet, List, Sequence, Tuple

import numpy as np

from ..errors import ProofFailedError
from ..proof import kir
from ..proof.record import ProofLog

__all__ = [
    "ATOMIC_RED",
    "ATOMIC_READ",
    "ATOMIC_ZERO",
    "ATOMIC_OUT",
    "GRID_WAIT",
    "GRID_TRIGGER",
    "SPLIT_PROGRAM",
    "FIXUP_PROGRAM",
    "MODEL_UNITS",
    "check_atomic",
    "split_program_ir",
    "fixup_program_ir",
    "prove_atomic_protocol",
    "prove_fixup_cover",
]

#: the claim names of the atomic reduction's accesses (the kernels' and the model's)
ATOMIC_RED = "split-K plane reduction (red.add): "
ATOMIC_READ = "split-K plane read W[r, c]"
ATOMIC_ZERO = "split-K plane zeroed W[r, c] = 0"
ATOMIC_OUT = "C element store C[r, c]"
#: the grid dependency calls (PTX griddepcontrol.wait / .launch_dependents)
GRID_WAIT = "lp_griddep_wait"
GRID_TRIGGER = "lp_griddep_launch"

#: the programs of the kernels as built (read back from the IR by the proof)
SPLIT_PROGRAM = ("wait", "trigger", "red")
FIXUP_PROGRAM = ("wait", "trigger", "read", "zero", "out")
#: the unit counts the proof explores exhaustively (two calls each)
MODEL_UNITS = (1, 2, 3, 4)

_SPLIT_OPS = ("wait", "trigger", "red", "store")
_FIX_OPS = ("wait", "trigger", "read", "zero", "out")

_Tag = Tuple[int, int]  # (call, unit)


def _fail(S: int, cond: str, msg: str, witness: Any) -> ProofFailedError:
    return ProofFailedError(f"atomic split-K ({S} units): {msg} ({cond})", condition=cond, witness=witness)


def check_atomic(
    units: int,
    *,
    split: Sequence[str] = SPLIT_PROGRAM,
    fixup: Sequence[str] = FIXUP_PROGRAM,
    calls: int = 2,
    max_states: int = 2_000_000,
) -> int:
    """Explore every interleaving of ``calls`` calls (split kernel of ``units`` agents running
    ``split``, then the fix-up agent running ``fixup``, in stream order with programmatic
    dependent launch) on one plane cell.  Returns the number of reachable states; raises
    :class:`ProofFailedError` naming the violated property."""
    S = units
    for nm, v in (("units", S), ("calls", calls)):
        if type(v) is not int or v < 1:
            raise ProofFailedError(
                f"check_atomic: {nm}={v!r} must be an int >= 1", condition="model parameters"
            )
    sp, fp = tuple(split), tuple(fixup)
    if any(op not in _SPLIT_OPS for op in sp) or any(op not in _FIX_OPS for op in fp):
        raise ProofFailedError(
            f"check_atomic: unknown step in {sp} / {fp}", condition="model parameters", witness=(sp, fp)
        )
    # grids in stream order: 2L = call L's split kernel (S agents), 2L+1 its fix-up (1 agent)
    grids = [(sp, S) if g % 2 == 0 else (fp, 1) for g in range(2 * calls)]
    progs = [p for p, _ in grids]
    # state: the cell (a set of tags), the pcs of every agent of every grid, the fix-ups'
    # reads (None until read); a grid's agents exist once it is scheduled
    pcs0 = tuple(tuple(0 for _ in range(n)) for _, n in grids)
    init: Tuple[FrozenSet[_Tag], Tuple[Tuple[int, ...], ...], Tuple[Any, ...]] = (
        frozenset(),
        pcs0,
        tuple(None for _ in range(calls)),
    )
    seen = {init}
    stack: List[Any] = [init]

    def done(pcs: Tuple[Tuple[int, ...], ...], g: int) -> bool:
        return all(pc >= len(progs[g]) for pc in pcs[g])

    def triggered(pcs: Tuple[Tuple[int, ...], ...], g: int) -> bool:
        p = progs[g]
        t = p.index("trigger") if "trigger" in p else len(p)
        return all(pc > t or pc >= len(p) for pc in pcs[g])

    def scheduled(pcs: Tuple[Tuple[int, ...], ...], g: int) -> bool:
        return g == 0 or triggered(pcs, g - 1) or done(pcs, g - 1)

    while stack:
        cell, pcs, reads = stack.pop()
        succ = []
        for g in range(len(grids)):
            if not scheduled(pcs, g):
                continue
            prog = progs[g]
            call = g // 2
            for a, pc in enumerate(pcs[g]):
                if pc >= len(prog):
                    continue
                op = prog[pc]
                ncell: FrozenSet[_Tag] = cell
                nreads = reads
                if op == "wait":
                    if g > 0 and not done(pcs, g - 1):
                        continue
                elif op == "red":
                    ncell = cell | {(call, a)}
                elif op == "store":
                    ncell = frozenset({(call, a)})
                elif op == "read":
                    want = frozenset((call, u) for u in range(S))
                    if cell != want:
                        lost = sorted(want - cell)
                        stale = sorted(cell - want)
                        raise _fail(
                            S,
                            "fix-up reads every partial of its call once",
                            f"call {call + 1}: the fix-up reads a cell holding {sorted(cell)}"
                            + (f"; partials {lost} missing" if lost else "")
                            + (f"; {stale} not of this call" if stale else ""),
                            (call, sorted(cell)),
                        )
                    nreads = reads[:call] + (cell,) + reads[call + 1 :]
                elif op == "zero":
                    ncell = frozenset()
                npcs = pcs[:g] + (pcs[g][:a] + (pc + 1,) + pcs[g][a + 1 :],) + pcs[g + 1 :]
                succ.append((ncell, npcs, nreads))
        if not succ:
            if not all(done(pcs, g) for g in range(len(grids))):
                raise _fail(
                    S,
                    "deadlock freedom",
                    f"stuck with the agents at steps {[list(p) for p in pcs]}",
                    [list(p) for p in pcs],
                )
            if any(r is None for r in reads):
                raise _fail(
                    S,
                    "fix-up reads every partial of its call once",
                    f"a fix-up never reads the plane ({fp})",
                    fp,
                )
            if cell:
                raise _fail(
                    S,
                    "plane zeroed for the next call",
                    f"after {calls} calls the plane holds {sorted(cell)}",
                    sorted(cell),
                )
            continue
        for n in succ:
            if n not in seen:
                seen.add(n)
                if len(seen) > max_states:
                    raise _fail(S, "model size", f"more than {max_states} states", max_states)
                stack.append(n)
    return len(seen)


# ============================================================================ from the IR
def _top_calls(k: kir.Kernel) -> Dict[str, List[int]]:
    """Positions of the grid dependency calls among the kernel's top-level statements; a
    call anywhere else (under a condition, in a loop) is refused by name."""
    pos: Dict[str, List[int]] = {GRID_WAIT: [], GRID_TRIGGER: []}
    top = set()
    for i, st in enumerate(x for x in k.body.body if not isinstance(x, kir.Comment)):
        if isinstance(st, kir.Eval) and isinstance(st.e, kir.Call) and st.e.name in pos:
            pos[st.e.name].append(i)
            top.add(id(st.e))
    for n in kir.walk(k.body):
        if isinstance(n, kir.Call) and n.name in pos and id(n) not in top:
            raise ProofFailedError(
                f"kernel {k.name}: {n.name} is not a top-level statement (under a condition or in a loop)",
                condition="grid dependency at the top level",
                witness=n.name,
            )
    if len(pos[GRID_WAIT]) > 1 or len(pos[GRID_TRIGGER]) > 1:
        raise ProofFailedError(
            f"kernel {k.name}: more than one grid dependency wait or trigger",
            condition="grid dependency at the top level",
        )
    return pos


def _program(k: kir.Kernel, steps: List[Tuple[int, str]]) -> Tuple[str, ...]:
    """The program: the top-level grid calls and ``steps`` (plane accesses with the index of
    the top-level statement they are in), in program order."""
    pos = _top_calls(k)
    ev = [(i, "wait") for i in pos[GRID_WAIT]] + [(i, "trigger") for i in pos[GRID_TRIGGER]]
    # a grid call and an access in the same top-level statement cannot happen: calls are
    # statements of their own; sort by statement, then by the order the accesses were found
    order = sorted(ev + steps, key=lambda x: x[0])
    return tuple(op for _, op in order)


def _top_index(k: kir.Kernel, node: Any) -> int:
    body = [x for x in k.body.body if not isinstance(x, kir.Comment)]
    for i, st in enumerate(body):
        if any(n is node for n in kir.walk(st)):
            return i
    raise ProofFailedError(
        f"kernel {k.name}: an access outside the body", condition="atomic split-K in the IR"
    )


def split_program_ir(k: kir.Kernel) -> Tuple[Tuple[str, ...], int]:
    """The split kernel's model program read from its IR: the top-level wait and trigger, and
    one step for its plane accesses -- ``red`` when every access to the plane is a
    :class:`~layoutproof.gpu.proof.kir.Red` with an :data:`ATOMIC_RED` claim, ``store`` when any
    plain store writes the plane (claims named ``C ... store``).  Returns the program and
    the number of plane accesses."""
    reds = [n for n in kir.walk(k.body) if isinstance(n, kir.Red)]
    bad_red = [r for r in reds if not r.mem.claim.what.startswith(ATOMIC_RED)]
    if bad_red:
        raise ProofFailedError(
            f"kernel {k.name}: a reduction whose claim is not a plane reduction "
            f"({bad_red[0].mem.claim.what})",
            condition="atomic split-K in the IR",
        )
    stores = [
        n
        for n in kir.walk(k.body)
        if isinstance(n, kir.Assign)
        and isinstance(n.lhs, kir.Mem)
        and n.lhs.space == "global"
        and (n.lhs.claim.what.startswith("C ") or n.lhs.claim.what.startswith(ATOMIC_RED))
    ]
    if not reds and not stores:
        raise ProofFailedError(f"kernel {k.name}: no plane access", condition="atomic split-K in the IR")
    first = min(_top_index(k, n) for n in reds + stores)
    return _program(k, [(first, "store" if stores else "red")]), len(reds) + len(stores)


def fixup_program_ir(k: kir.Kernel) -> Tuple[Tuple[str, ...], Tuple[kir.Mem, ...]]:
    """The fix-up's model program read from its IR: the top-level wait and trigger, the plane
    read (claim :data:`ATOMIC_READ`), the zero store (claim :data:`ATOMIC_ZERO`, value the
    literal 0) and the output store, in program order (one each).  Returns the program and
    the read's and the zero store's Mem nodes."""
    steps: List[Tuple[int, int, str]] = []
    mems: Dict[str, kir.Mem] = {}
    seq = 0
    for n in kir.walk(k.body):
        m = None
        if isinstance(n, kir.Assign) and isinstance(n.lhs, kir.Mem):
            m = n.lhs
            w = m.claim.what
            if w == ATOMIC_ZERO:
                if not (isinstance(n.rhs, kir.FloatLit) and float(n.rhs.text.rstrip("f")) == 0.0):
                    raise ProofFailedError(
                        f"kernel {k.name}: the plane cell is written with {kir.emit_expr(n.rhs)}, not 0",
                        condition="plane zeroed for the next call",
                    )
                op = "zero"
            elif w == ATOMIC_OUT:
                op = "out"
            else:
                continue
        elif isinstance(n, kir.Mem) and n.claim.what == ATOMIC_READ:
            m, op = n, "read"
        else:
            continue
        if op in mems:
            raise ProofFailedError(
                f"kernel {k.name}: more than one {op} step", condition="atomic split-K in the IR", witness=op
            )
        mems[op] = m
        steps.append((_top_index(k, n), seq, op))
        seq += 1
    prog = _program(k, [(i, op) for i, _, op in sorted(steps)])
    if "read" in mems and "zero" in mems:
        r, z = mems["read"], mems["zero"]
        ri, zi = r.idx, z.idx
        same = (
            kir.emit_expr(r.ptr) == kir.emit_expr(z.ptr)
            and (ri is None) == (zi is None)
            and (ri is None or zi is None or kir.emit_expr(ri) == kir.emit_expr(zi))
            and kir.emit_expr(r.claim.addr) == kir.emit_expr(z.claim.addr)
        )
        if not same:
            raise ProofFailedError(
                f"kernel {k.name}: the zero store writes another cell than the one read",
                condition="plane zeroed for the next call",
            )
    return prog, tuple(mems[x] for x in ("read", "zero") if x in mems)


@functools.cache
def _checked(units: int, split: Tuple[str, ...], fixup: Tuple[str, ...]) -> int:
    return check_atomic(units, split=split, fixup=fixup)


def prove_atomic_protocol(split_k: kir.Kernel, fix_k: kir.Kernel, splits: int, log: ProofLog) -> int:
    """Read both programs from the IR and model-check them for every unit count in
    :data:`MODEL_UNITS` up to ``splits`` (and ``splits`` itself when larger is not needed:
    the model's units are symmetric), two calls each.  Returns the states explored."""
    sp, n_acc = split_program_ir(split_k)
    fp, _ = fixup_program_ir(fix_k)
    ns = sorted(
        set(n for n in MODEL_UNITS if n <= splits) | ({splits} if splits <= max(MODEL_UNITS) else set())
    )
    total = sum(_checked(n, sp, fp) for n in ns)
    log.add(
        "protocol",
        f"atomic split-K (programs read from the IR: split {' -> '.join(sp)} ({n_acc} plane accesses); "
        f"fix-up {' -> '.join(fp)}): each fix-up reads exactly its call's partials (none lost, "
        f"none stale), the plane is 0 after each call, no deadlock -- all interleavings of "
        f"{', '.join(map(str, ns))} units over 2 calls with programmatic dependent launch (the "
        f"kernel's {splits} units run one program and their reductions commute)",
        "exhaustive",
        total,
    )
    return total


def prove_fixup_cover(k: kir.Kernel, threads: int, log: ProofLog, max_n: int = 600, max_m: int = 3) -> None:
    """The fix-up's cells cover the plane once: with the launch grid ``(ceil(N / threads), M)``,
    the thread ``(blockIdx.x, threadIdx.x, blockIdx.y)`` handles ``(r, c)`` (the kernel's
    own declarations of ``r`` and ``c``, evaluated with C semantics) under the guards
    ``r < M``, ``c < N``: every cell of ``[0, M) x [0, N)`` exactly once -- so every cell a
    unit adds into (the reductions' claims are bounded by ``r < M``, ``c < N``) is read and
    zeroed by one thread.  Exhaustive for ``N <= max_n``, ``M <= max_m`` (the map is affine
    in the block indices: rows do not interact)."""
    decl = {
        n.var.name: n.init
        for n in kir.walk(k.body)
        if isinstance(n, kir.Decl) and n.var.name in ("r", "c") and n.init is not None
    }
    if set(decl) != {"r", "c"}:
        raise ProofFailedError(
            f"kernel {k.name}: no declarations of r and c", condition="fix-up covers the plane once"
        )
    cases = 0
    for M in range(1, max_m + 1):
        for N in range(1, max_n + 1):
            gx = -(-N // threads)
            bx, by, tx = np.meshgrid(np.arange(gx), np.arange(M), np.arange(threads), indexing="ij")
            env = {"blockIdx.x": bx.ravel(), "blockIdx.y": by.ravel(), "threadIdx.x": tx.ravel()}
            r = np.asarray(kir.ev(decl["r"], env)) * np.ones(bx.size, dtype=np.int64)
            c = np.asarray(kir.ev(decl["c"], env)) * np.ones(bx.size, dtype=np.int64)
            keep = (r >= 0) & (r < M) & (c >= 0) & (c < N)
            hits = np.bincount((r[keep] * N + c[keep]).astype(np.int64), minlength=M * N)
            if hits.size != M * N or not np.all(hits == 1):
                raise ProofFailedError(
                    f"kernel {k.name}: with grid ({gx}, {M}) the cells of a {M} x {N} plane are not "
                    "each handled once",
                    condition="fix-up covers the plane once",
                    witness=(M, N),
                )
            cases += M * N
    log.add(
        "bijective",
        f"fix-up cells: grid (ceil(N/{threads}), M) x {threads} threads -> (r, c) = "
        f"({kir.emit_expr(decl['r'])}, {kir.emit_expr(decl['c'])}) under r < M, c < N "
        f"covers [0, M) x [0, N) once (every N <= {max_n}, M <= {max_m}, C semantics)",
        "exhaustive",
        cases,
    )
