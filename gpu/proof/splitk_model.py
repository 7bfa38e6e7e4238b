"""Model checking of split-K's serial reduction: the last unit of a tile sums the planes.

In the serial split-K kernel (:func:`layoutproof.gpu.kernels.splitk.serial_ir`) the ``S`` units
(CTAs, one consumer warpgroup each in this model) of one output tile each store an f32
partial into their own workspace plane, then count themselves on a per-tile counter; the
unit that reads ``S - 1`` from the counter reads every plane, writes the output and sets the
counter back to 0 for the next launch.  Nothing orders these CTAs but the counter, so the
protocol rests on the PTX memory model; this module explores *every* interleaving of an
exact model of it, for two consecutive launches (the second starting from the counter the
first left), with the semantics of the pieces it uses:

* a unit is two agents in one: *thread 0* (fence, atomic, counter reset) and *every thread*
  (plane stores, plane reads); a ``bar.sync`` of the warpgroup joins what the two have seen
  (the barrier's CTA-scope synchronization, cumulative);
* happens-before across units is tracked as the set of planes whose stores a point has
  seen: ``fence.acq_rel.gpu`` captures what thread 0 has seen (a release fence: a later
  atomic publishes it) and adds what an earlier atomic observed (an acquire fence); an
  atomic with ``.release``/``.acq_rel`` publishes what thread 0 has seen, one with
  ``.acquire``/``.acq_rel`` adds what the counter's release sequence carried; an atomic
  read-modify-write continues the release sequence, a plain store (the reset) starts a new
  one; a kernel boundary (stream order) orders everything;
* a plane read is correct only if the plane was stored in this launch *and* that store is
  in the reading point's set.

Checked in every reachable state: exactly one unit of the tile reduces in each launch
(``one reducer per tile per launch``); every plane the reducer reads was stored in this
launch and its store is ordered before the read by a release/acquire edge (``reducer reads
each plane after its writer's release``); the reducer reads every plane (``reducer reads
all planes``); the counter is 0 when a launch ends (``counter reset at launch end``); and
no state short of the end is stuck (``deadlock freedom``).

The programs are read from the kernel's IR (:func:`serial_program_ir`): the statements of
the consumers' tile loop in program order, found by the names of their claims and node
types, fail by name when missing or out of order; :func:`prove_serial_protocol` reads them
and runs the model.

>>> check_serial(3) > 0
True
>>> no_fence = (("store", False, None), ("bar", False, None), ("atomic", False, "relaxed"),
...             ("reset", True, None), ("bar", False, None), ("read", True, None))
>>> check_serial(3, program=no_fence)   # atomicAdd (relaxed) without __threadfence()
Traceback (most recent call last):
...
layoutproof.gpu.errors.ProofFailedError: serial split-K (3 units): ... after its writer's release)
"""

from __future__ import annotations

import functools
from typing import Any, FrozenSet, List, Optional, Sequence, Tuple

from ..errors import ProofFailedError
from . import kir
from .record import ProofLog

__all__ = [
    "Op",
    "DEFAULT_PROGRAM",
    "check_serial",
    "serial_program_ir",
    "prove_serial_protocol",
    "plane_read_loops_ir",
    "PLANE_STORE",
    "PLANE_READ",
    "COUNTER",
    "COUNTER_RESET",
    "FLAG_WRITE",
    "FLAG_READ",
    "OUT_STORE",
    "MODEL_SPLITS",
]

#: the claim names of the serial reduction's accesses (the kernel's and the model's)
PLANE_STORE = "split-K plane store: "
PLANE_READ = "split-K workspace read W[s, r, c]"
COUNTER = "split-K tile counter counters[cg * tiles + tile]"
COUNTER_RESET = "split-K tile counter reset counters[cg * tiles + tile]"
FLAG_WRITE = "split-K reducer flag write lp_last[cg]"
FLAG_READ = "split-K reducer flag read lp_last[cg]"
OUT_STORE = "split-K output store D[r, c]"

#: the unit counts the proof explores exhaustively (every interleaving, two launches)
MODEL_SPLITS = (2, 3, 4)

#: one step of a unit's program: (kind, reducer only, argument).  Kinds: ``store`` (every
#: thread stores its part of the unit's plane), ``bar`` (the warpgroup barrier),
#: ``fence`` (thread 0: fence.acq_rel.gpu), ``atomic`` (thread 0: fetch-and-add 1 on the
#: counter with order ``argument``; the unit reduces iff it read the threshold),
#: ``read`` (every thread reads the planes s = 0 .. S-1, one step each), ``reset``
#: (thread 0: the counter := 0).  ``reducer only``: the step runs in the unit that reduces.
Op = Tuple[str, bool, Any]

DEFAULT_PROGRAM: Tuple[Op, ...] = (
    ("store", False, None),
    ("bar", False, None),
    ("fence", False, None),
    ("atomic", False, "acq_rel"),
    ("reset", True, None),
    ("bar", False, None),
    ("read", True, None),
)

_KINDS = ("store", "bar", "fence", "atomic", "read", "reset")
_RELEASE = ("release", "acq_rel")
_ACQUIRE = ("acquire", "acq_rel")

# a unit's state: pc, read index within a read step, role (0 unknown, 1 reducer, 2 not),
# stored (its plane stores done, not yet joined by a barrier), thread 0's set, every
# thread's set, the set its last fence released (or None), the set its atomic observed,
# the planes it read, the first plane read before it was ordered (-1 none)
_Unit = Tuple[
    int,
    int,
    int,
    bool,
    FrozenSet[int],
    FrozenSet[int],
    Optional[FrozenSet[int]],
    FrozenSet[int],
    FrozenSet[int],
    int,
]
_EMPTY: FrozenSet[int] = frozenset()


def _fail(S: int, cond: str, msg: str, witness: Any) -> ProofFailedError:
    return ProofFailedError(f"serial split-K ({S} units): {msg} ({cond})", condition=cond, witness=witness)


def check_serial(
    splits: int,
    *,
    program: Sequence[Op] = DEFAULT_PROGRAM,
    threshold: Optional[int] = None,
    launches: int = 2,
    start: int = 0,
    max_states: int = 2_000_000,
) -> int:
    """Explore every interleaving of ``splits`` units running ``program`` against one tile
    counter (initially ``start``), for ``launches`` launches in stream order; a unit reduces
    iff its atomic read ``threshold`` (default ``splits - 1``).  Returns the number of
    reachable states; raises :class:`ProofFailedError` naming the violated property."""
    S = splits
    T = S - 1 if threshold is None else threshold
    for nm, v, lo in (("splits", S, 1), ("launches", launches, 1)):
        if type(v) is not int or v < lo:
            raise ProofFailedError(
                f"check_serial: {nm}={v!r} must be an int >= {lo}", condition="model parameters"
            )
    prog = tuple(program)
    for op in prog:
        if not (isinstance(op, tuple) and len(op) == 3 and op[0] in _KINDS):
            raise ProofFailedError(f"check_serial: bad program step {op!r}", condition="model parameters")
    if sum(1 for op in prog if op[0] == "atomic") != 1:
        raise _fail(S, "one atomic per unit", "a unit's program must count itself once on the counter", prog)
    L = len(prog)
    fresh: _Unit = (0, 0, 0, False, _EMPTY, _EMPTY, None, _EMPTY, _EMPTY, -1)
    # global: launch, counter, the set the counter's release sequence carries, planes
    # stored in this launch, reducers so far in this launch
    init = (0, start, _EMPTY, _EMPTY, 0, (fresh,) * S)
    seen = {init}
    stack = [init]

    def skip(u: _Unit) -> _Unit:
        """Past the reducer-only steps of a unit that does not reduce."""
        pc = u[0]
        while pc < L and prog[pc][1] and u[2] == 2:
            pc += 1
        return (pc,) + u[1:]

    while stack:
        launch, ctr, pub, stored, nred, units = stack.pop()
        succ = []
        for i, u in enumerate(units):
            pc, ri, role, pend, t0, allv, rel, obs, reads, bad = u
            if pc >= L:
                continue
            kind, only_red, arg = prog[pc]
            if only_red and role != 1:
                if role == 0:
                    raise _fail(
                        S,
                        "branch on the atomic's result",
                        f"step {pc} ({kind}) runs only in the reducer but comes before the atomic",
                        pc,
                    )
                continue  # (skip() moves non-reducers past these)
            g = (launch, ctr, pub, stored, nred)
            nu: Optional[_Unit] = None
            if kind == "store":
                g = (launch, ctr, pub, stored | {i}, nred)
                nu = (pc + 1, 0, role, True, t0, allv, rel, obs, reads, bad)
            elif kind == "bar":
                joined = t0 | allv | (frozenset((i,)) if pend else _EMPTY)
                nu = (pc + 1, 0, role, False, joined, joined, rel, obs, reads, bad)
            elif kind == "fence":
                nt0 = t0 | obs
                nu = (pc + 1, 0, role, pend, nt0, allv, t0, obs, reads, bad)
            elif kind == "atomic":
                published = (t0 if arg in _RELEASE else _EMPTY) | (rel if rel is not None else _EMPTY)
                nt0 = t0 | pub if arg in _ACQUIRE else t0
                nobs = pub if arg not in _ACQUIRE else obs
                is_red = ctr == T
                nn = nred + (1 if is_red else 0)
                if nn > 1:
                    raise _fail(
                        S,
                        "one reducer per tile per launch",
                        f"launch {launch + 1}: a second unit (unit {i}) reads {ctr} from the counter "
                        "and reduces",
                        (launch, i, ctr),
                    )
                if is_red and bad >= 0:
                    raise _fail(
                        S,
                        "reducer reads each plane after its writer's release",
                        f"launch {launch + 1}: unit {i} reduces but read plane {bad} before its "
                        "atomic ordered it",
                        (launch, i, bad),
                    )
                g = (launch, ctr + 1, pub | published, stored, nn)
                nu = skip((pc + 1, 0, 1 if is_red else 2, pend, nt0, allv, rel, nobs, reads, bad))
            elif kind == "read":
                s = ri
                ok = s in stored and s in allv
                nbad = bad
                if not ok:
                    if role == 1:
                        why = (
                            "was not stored in this launch"
                            if s not in stored
                            else "its store is not ordered before the read"
                        )
                        raise _fail(
                            S,
                            "reducer reads each plane after its writer's release",
                            f"launch {launch + 1}: the reducer (unit {i}) reads plane {s}, which {why}",
                            (launch, i, s),
                        )
                    if bad < 0:
                        nbad = s
                nr = reads | {s}
                nu = (
                    (pc + 1, 0, role, pend, t0, allv, rel, obs, nr, nbad)
                    if s + 1 >= S
                    else (pc, s + 1, role, pend, t0, allv, rel, obs, nr, nbad)
                )
            else:  # reset
                g = (launch, 0, _EMPTY, stored, nred)
                nu = (pc + 1, 0, role, pend, t0, allv, rel, obs, reads, bad)
            nus = units[:i] + (skip(nu),) + units[i + 1 :]
            succ.append(g + (nus,))
        if not succ:
            if any(u[0] < L for u in units):
                raise _fail(
                    S,
                    "deadlock freedom",
                    f"launch {launch + 1}: stuck with the units at steps {[u[0] for u in units]}",
                    [u[0] for u in units],
                )
            # the launch has ended
            if nred != 1:
                raise _fail(
                    S,
                    "one reducer per tile per launch",
                    f"launch {launch + 1} ends with {nred} reducers (counter started at "
                    f"{'the previous launch' if launch else start}'s value)",
                    (launch, nred),
                )
            red = next(u for u in units if u[2] == 1)
            if red[8] != frozenset(range(S)):
                raise _fail(
                    S,
                    "reducer reads all planes",
                    f"launch {launch + 1}: the reducer read the planes {sorted(red[8])} of {S}",
                    (launch, sorted(red[8])),
                )
            if ctr != 0:
                raise _fail(
                    S,
                    "counter reset at launch end",
                    f"launch {launch + 1} ends with the counter at {ctr}",
                    (launch, ctr),
                )
            if launch + 1 < launches:
                n = (launch + 1, ctr, _EMPTY, _EMPTY, 0, (fresh,) * S)
                if n not in seen:
                    seen.add(n)
                    stack.append(n)
            continue
        for n in succ:
            if n not in seen:
                seen.add(n)
                if len(seen) > max_states:
                    raise _fail(S, "model size", f"more than {max_states} states", max_states)
                stack.append(n)
    return len(seen)


# ============================================================================ from the IR
def _consumer_loop(k: kir.Kernel) -> kir.For:
    loops = [
        n
        for n in kir.walk(k.body)
        if isinstance(n, kir.For)
        and n.cond is not None
        and any(isinstance(x, kir.Mem) and x.claim.what == FLAG_READ for x in kir.walk(n.body))
    ]
    if len(loops) != 1:
        raise ProofFailedError(
            f"kernel {k.name}: expected one tile loop with the serial reduction, found {len(loops)}",
            condition="serial reduction in the IR",
        )
    return loops[0]


def serial_program_ir(k: kir.Kernel) -> Tuple[Tuple[Op, ...], int]:
    """A unit's program and the reducer's threshold, read from the serial split-K kernel's
    consumer tile loop in program order: the plane stores (claims named
    :data:`PLANE_STORE`), the warpgroup barriers, the GPU-scope fences, the atomic on the
    tile counter (:data:`COUNTER`), the counter reset (:data:`COUNTER_RESET`) and the plane
    reads (:data:`PLANE_READ`); a step is *reducer only* when it sits under a condition on
    the atomic's result (``prev`` compared with a constant, or the flag the result was
    written to and read back from).  Fails by name when a piece is missing or ambiguous."""
    lp = _consumer_loop(k)
    events: List[Op] = []
    prev: List[kir.Var] = []
    thresholds: List[int] = []
    flag_vars: List[kir.Var] = []

    def on_result(cond: kir.Expr) -> bool:
        ids = {id(v) for v in prev} | {id(v) for v in flag_vars}
        return any(isinstance(n, kir.Var) and id(n) in ids for n in kir.walk(cond))

    def threshold_of(e: kir.Expr) -> Optional[int]:
        if (
            isinstance(e, kir.Bin)
            and e.op == "=="
            and any(e.a is v for v in prev)
            and isinstance(e.b, kir.Const)
        ):
            return int(e.b.value)
        return None

    def add(kind: str, red: bool, arg: Any = None) -> None:
        if kind in ("store", "read") and events and events[-1] == (kind, red, arg):
            return  # one step for all the stores (reads) of a run
        events.append((kind, red, arg))

    def mems(s: Any) -> List[kir.Mem]:
        out = []
        for n in kir.walk(s):
            if isinstance(n, (kir.If, kir.For, kir.Block)) and n is not s:
                break
            if isinstance(n, kir.Mem):
                out.append(n)
        return out

    def go(st: Any, red: bool) -> None:
        if isinstance(st, kir.Block):
            for x in st.body:
                go(x, red)
            return
        if isinstance(st, kir.For):
            go(st.body, red)
            return
        if isinstance(st, kir.If):
            r = red or on_result(st.cond)
            t = threshold_of(st.cond)
            if t is not None:
                thresholds.append(t)
            go(st.then, r)
            if st.orelse is not None:
                go(st.orelse, r)
            return
        if isinstance(st, kir.NamedBarrier):
            add("bar", red)
            return
        if isinstance(st, kir.Fence) and st.kind == "acq_rel_gpu":
            add("fence", red)
            return
        atomics = [n for n in kir.walk(st) if isinstance(n, kir.AtomicAdd)]
        if atomics:
            a = atomics[0]
            if len(atomics) != 1 or a.mem.claim.what != COUNTER or not isinstance(st, kir.Assign):
                raise ProofFailedError(
                    f"kernel {k.name}: an atomic that is not the one count on the tile counter",
                    condition="serial reduction in the IR",
                )
            if not isinstance(st.lhs, kir.Var):
                raise ProofFailedError(
                    f"kernel {k.name}: the atomic's result is not kept in a variable",
                    condition="serial reduction in the IR",
                )
            prev.append(st.lhs)
            add("atomic", red, a.sem)
            return
        for m in mems(st):
            w = m.claim.what
            store = isinstance(st, kir.Assign) and st.lhs is m
            if w.startswith(PLANE_STORE) and store:
                add("store", red)
            elif w == PLANE_READ:
                add("read", red)
            elif w == COUNTER_RESET and store:
                add("reset", red)
            elif w == FLAG_WRITE and store:
                t = threshold_of(st.rhs.c) if isinstance(st.rhs, kir.Cond) else threshold_of(st.rhs)
                if t is None:
                    raise ProofFailedError(
                        f"kernel {k.name}: the reducer flag is not the atomic's result compared "
                        "with a constant",
                        condition="serial reduction in the IR",
                    )
                thresholds.append(t)
            elif w == FLAG_READ and isinstance(st, kir.Assign) and isinstance(st.lhs, kir.Var):
                flag_vars.append(st.lhs)
            elif w == COUNTER:
                raise ProofFailedError(
                    f"kernel {k.name}: the tile counter is accessed outside the atomic",
                    condition="serial reduction in the IR",
                )

    go(lp.body, False)
    kinds = [e[0] for e in events]
    for need in ("store", "atomic", "read"):  # a missing reset is the model's to find
        if need not in kinds:
            raise ProofFailedError(
                f"kernel {k.name}: the serial reduction has no {need} step",
                condition="serial reduction in the IR",
                witness=need,
            )
    if len(set(thresholds)) != 1:
        raise ProofFailedError(
            f"kernel {k.name}: the reducer's conditions compare the atomic's result "
            f"with {sorted(set(thresholds))}",
            condition="serial reduction in the IR",
            witness=tuple(sorted(set(thresholds))),
        )
    # the epilogue's staged stores come with barriers of their own before the protocol:
    # keep the program from the first plane store on
    first = kinds.index("store")
    return tuple(events[first:]), thresholds[0]


def plane_read_loops_ir(k: kir.Kernel, *, whole: bool = False) -> List[Tuple[int, int, int]]:
    """For each plane read of the serial reduction (claims named :data:`PLANE_READ`), the
    ``(start, stop, step)`` of the loop whose counter is the plane index of its claim (the
    one loop counter its claimed address reads and its bounds do not): the
    model's reducer reads planes ``0, 1, .., S - 1`` in that order, so each must be
    ``(0, S, 1)`` (:func:`prove_serial_protocol` checks it).  Fails by name when the plane
    index is not the counter of one enclosing loop with constant bounds.  ``whole``: the
    whole kernel body (the fix-up kernel), not the serial kernel's consumer tile loop."""
    out: List[Tuple[int, int, int]] = []

    def go(st: Any, loops: Tuple[kir.For, ...]) -> None:
        if isinstance(st, kir.For):
            loops = loops + (st,)
        for n in _children_stmts(st):
            go(n, loops)
        for m in (x for x in kir.walk(st) if isinstance(x, kir.Mem) and x.claim.what == PLANE_READ):
            if not _direct(st, m):
                continue
            # the plane index: a counter the claimed address reads and its bounds do not
            bounded = {id(v) for b in m.claim.bounds for v in kir.walk(b[0]) if isinstance(v, kir.Var)}
            used = {id(v) for v in kir.walk(m.claim.addr) if isinstance(v, kir.Var)} - bounded
            own = [f for f in loops if id(f.var) in used]
            bounds = [(f.start, f.stop, f.step) for f in own]
            consts = [(a, b, c) for a, b, c in bounds if all(isinstance(x, kir.Const) for x in (a, b, c))]
            if len(own) != 1 or len(consts) != 1:
                raise ProofFailedError(
                    f"kernel {k.name}: a plane read's plane index is not the counter of one "
                    f"constant loop ({len(own)} loop(s) found)",
                    condition="serial reduction in the IR",
                )
            a, b, c = consts[0]
            if isinstance(a, kir.Const) and isinstance(b, kir.Const) and isinstance(c, kir.Const):
                out.append((int(a.value), int(b.value), int(c.value)))

    go(k.body if whole else _consumer_loop(k).body, ())
    if not out:
        raise ProofFailedError(f"kernel {k.name}: no plane read", condition="serial reduction in the IR")
    return out


def _children_stmts(st: Any) -> List[Any]:
    if isinstance(st, kir.Block):
        return list(st.body)
    if isinstance(st, kir.For):
        return [st.body]
    if isinstance(st, kir.If):
        return [st.then] + ([st.orelse] if st.orelse is not None else [])
    return []


def _direct(st: Any, m: kir.Mem) -> bool:
    """``m`` belongs to statement ``st`` itself, not to a nested statement."""
    if isinstance(st, (kir.Block, kir.For, kir.If)):
        return False
    return any(x is m for x in kir.walk(st))


@functools.cache
def _checked(splits: int, program: Tuple[Op, ...], threshold: int) -> int:
    return check_serial(splits, program=program, threshold=threshold)


def prove_serial_protocol(k: kir.Kernel, splits: int, log: ProofLog) -> int:
    """Read the serial reduction's program from the IR (:func:`serial_program_ir`), check
    that its threshold is ``splits - 1``, and model-check it for every unit count in
    :data:`MODEL_SPLITS` (and ``splits`` itself when it is smaller), two launches each.
    Returns the number of protocol operations covered."""
    prog, T = serial_program_ir(k)
    if T != splits - 1:
        raise ProofFailedError(
            f"kernel {k.name}: the reducer is the unit reading {T} from the counter, not {splits - 1}",
            condition="one reducer per tile per launch",
            witness=T,
        )
    bad = [b for b in plane_read_loops_ir(k) if b != (0, splits, 1)]
    if bad:
        raise ProofFailedError(
            f"kernel {k.name}: the reducer's plane loop runs over {bad[0]}, not planes 0..{splits - 1} "
            "in order",
            condition="reducer reads all planes",
            witness=bad[0],
        )
    total = 0
    ns = sorted(
        set(n for n in MODEL_SPLITS if n <= splits) | ({splits} if splits <= max(MODEL_SPLITS) else set())
    )
    for n in ns:
        total += _checked(n, prog, n - 1)
    text = " -> ".join(f"{kind}{'*' if red else ''}{'.' + arg if arg else ''}" for kind, red, arg in prog)
    log.add(
        "protocol",
        f"serial split-K reduction (program read from the IR: {text}; * = reducer only): one "
        f"reducer per tile per launch, it reads every plane after its writer's release "
        f"(release/acquire at GPU scope), the counter is 0 when a launch ends, no deadlock -- "
        f"all interleavings of {', '.join(map(str, ns))} units over 2 launches",
        "exhaustive",
        total,
    )
    return sum(1 for e in prog if e[0] in ("bar", "fence", "atomic", "reset"))
