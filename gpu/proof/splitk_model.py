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
from .statespace import explore

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
    return _Serial(S, T, prog, launches, start).explore(max_states)


# the model's global state: launch, counter, the set the counter's release sequence carries,
# planes stored in this launch, reducers so far in this launch, then every unit's state
_Shared = Tuple[int, int, FrozenSet[int], FrozenSet[int], int]
_SerialState = Tuple[int, int, FrozenSet[int], FrozenSet[int], int, Tuple[_Unit, ...]]
_FRESH: _Unit = (0, 0, 0, False, _EMPTY, _EMPTY, None, _EMPTY, _EMPTY, -1)


class _Serial:
    """The model behind :func:`check_serial`: the successors of a state (one step of one
    unit), the checks at the end of a launch, and the exhaustive search."""

    def __init__(self, S: int, T: int, prog: Tuple[Op, ...], launches: int, start: int) -> None:
        self.S, self.T, self.prog, self.L = S, T, prog, len(prog)
        self.launches, self.start = launches, start

    def explore(self, max_states: int) -> int:
        """Every reachable state; at a state with no successor the launch has ended (or
        deadlocked), and the next launch starts.  Returns the state count."""
        init: _SerialState = (0, self.start, _EMPTY, _EMPTY, 0, (_FRESH,) * self.S)
        S = self.S
        return explore(
            init,
            self.successors,
            self.launch_end,
            lambda: _fail(S, "model size", f"more than {max_states} states", max_states),
            max_states,
        )

    def skip(self, u: _Unit) -> _Unit:
        """Past the reducer-only steps of a unit that does not reduce."""
        pc = u[0]
        while pc < self.L and self.prog[pc][1] and u[2] == 2:
            pc += 1
        return (pc,) + u[1:]

    def successors(self, state: _SerialState) -> List[_SerialState]:
        """The states after one step of one unit (each unit that can move)."""
        launch, ctr, pub, stored, nred, units = state
        succ: List[_SerialState] = []
        for i, u in enumerate(units):
            pc, role = u[0], u[2]
            if pc >= self.L:
                continue
            kind, only_red, _arg = self.prog[pc]
            if only_red and role != 1:
                if role == 0:
                    raise _fail(
                        self.S,
                        "branch on the atomic's result",
                        f"step {pc} ({kind}) runs only in the reducer but comes before the atomic",
                        pc,
                    )
                continue  # (skip() moves non-reducers past these)
            g, nu = self.step(i, u, (launch, ctr, pub, stored, nred))
            nus = units[:i] + (self.skip(nu),) + units[i + 1 :]
            succ.append(g + (nus,))
        return succ

    def step(self, i: int, u: _Unit, g: _Shared) -> Tuple[_Shared, _Unit]:
        """Unit ``i`` runs its next step: the new shared state and its own."""
        pc, ri, role, pend, t0, allv, rel, obs, reads, bad = u
        launch, ctr, pub, stored, nred = g
        kind = self.prog[pc][0]
        if kind == "store":
            return (launch, ctr, pub, stored | {i}, nred), (
                pc + 1,
                0,
                role,
                True,
                t0,
                allv,
                rel,
                obs,
                reads,
                bad,
            )
        if kind == "bar":
            joined = t0 | allv | (frozenset((i,)) if pend else _EMPTY)
            return g, (pc + 1, 0, role, False, joined, joined, rel, obs, reads, bad)
        if kind == "fence":
            return g, (pc + 1, 0, role, pend, t0 | obs, allv, t0, obs, reads, bad)
        if kind == "atomic":
            return self._atomic(i, u, g)
        if kind == "read":
            return g, self._read(i, u, g)
        # reset
        return (launch, 0, _EMPTY, stored, nred), (pc + 1, 0, role, pend, t0, allv, rel, obs, reads, bad)

    def _atomic(self, i: int, u: _Unit, g: _Shared) -> Tuple[_Shared, _Unit]:
        """The fetch-and-add: its order publishes (release) and observes (acquire) what
        the counter's release sequence carries; the unit reduces iff it read the threshold."""
        pc, _ri, _role, pend, t0, allv, rel, obs, reads, bad = u
        launch, ctr, pub, stored, nred = g
        arg = self.prog[pc][2]
        published = (t0 if arg in _RELEASE else _EMPTY) | (rel if rel is not None else _EMPTY)
        nt0 = t0 | pub if arg in _ACQUIRE else t0
        nobs = pub if arg not in _ACQUIRE else obs
        is_red = ctr == self.T
        nn = nred + (1 if is_red else 0)
        if nn > 1:
            raise _fail(
                self.S,
                "one reducer per tile per launch",
                f"launch {launch + 1}: a second unit (unit {i}) reads {ctr} from the counter and reduces",
                (launch, i, ctr),
            )
        if is_red and bad >= 0:
            raise _fail(
                self.S,
                "reducer reads each plane after its writer's release",
                f"launch {launch + 1}: unit {i} reduces but read plane {bad} before its atomic ordered it",
                (launch, i, bad),
            )
        ng = (launch, ctr + 1, pub | published, stored, nn)
        return ng, self.skip((pc + 1, 0, 1 if is_red else 2, pend, nt0, allv, rel, nobs, reads, bad))

    def _read(self, i: int, u: _Unit, g: _Shared) -> _Unit:
        """A read of plane ``ri``: the reducer may read only planes stored in this launch
        and ordered before it; a unit that may still reduce remembers the first such read."""
        pc, s, role, pend, t0, allv, rel, obs, reads, bad = u
        launch, stored = g[0], g[3]
        nbad = bad
        if not (s in stored and s in allv):
            if role == 1:
                why = (
                    "was not stored in this launch"
                    if s not in stored
                    else "its store is not ordered before the read"
                )
                raise _fail(
                    self.S,
                    "reducer reads each plane after its writer's release",
                    f"launch {launch + 1}: the reducer (unit {i}) reads plane {s}, which {why}",
                    (launch, i, s),
                )
            if bad < 0:
                nbad = s
        nr = reads | {s}
        if s + 1 >= self.S:
            return (pc + 1, 0, role, pend, t0, allv, rel, obs, nr, nbad)
        return (pc, s + 1, role, pend, t0, allv, rel, obs, nr, nbad)

    def launch_end(self, state: _SerialState) -> Optional[_SerialState]:
        """No unit can move: every unit must be done (else a deadlock), with one reducer
        that read every plane and the counter back at 0.  Returns the next launch's start
        state, or None after the last launch."""
        S = self.S
        launch, ctr, _pub, _stored, nred, units = state
        if any(u[0] < self.L for u in units):
            raise _fail(
                S,
                "deadlock freedom",
                f"launch {launch + 1}: stuck with the units at steps {[u[0] for u in units]}",
                [u[0] for u in units],
            )
        if nred != 1:
            raise _fail(
                S,
                "one reducer per tile per launch",
                f"launch {launch + 1} ends with {nred} reducers (counter started at "
                f"{'the previous launch' if launch else self.start}'s value)",
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
        if launch + 1 < self.launches:
            return (launch + 1, ctr, _EMPTY, _EMPTY, 0, (_FRESH,) * S)
        return None


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
    reader = _ProgramReader(k)
    reader.go(_consumer_loop(k).body, False)
    events, thresholds = reader.events, reader.thresholds
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


class _ProgramReader:
    """The walk behind :func:`serial_program_ir`: the steps met in program order, the
    thresholds the atomic's result is compared with, the variables holding that result."""

    def __init__(self, k: kir.Kernel) -> None:
        self.k = k
        self.events: List[Op] = []
        self.prev: List[kir.Var] = []
        self.thresholds: List[int] = []
        self.flag_vars: List[kir.Var] = []

    def _error(self, msg: str) -> ProofFailedError:
        return ProofFailedError(f"kernel {self.k.name}: {msg}", condition="serial reduction in the IR")

    def on_result(self, cond: kir.Expr) -> bool:
        """Does ``cond`` read the atomic's result (or the flag it was written to)?"""
        ids = {id(v) for v in self.prev} | {id(v) for v in self.flag_vars}
        return any(isinstance(n, kir.Var) and id(n) in ids for n in kir.walk(cond))

    def threshold_of(self, e: kir.Expr) -> Optional[int]:
        """``c`` when ``e`` is ``prev == c``."""
        if (
            isinstance(e, kir.Bin)
            and e.op == "=="
            and any(e.a is v for v in self.prev)
            and isinstance(e.b, kir.Const)
        ):
            return int(e.b.value)
        return None

    def add(self, kind: str, red: bool, arg: Any = None) -> None:
        if kind in ("store", "read") and self.events and self.events[-1] == (kind, red, arg):
            return  # one step for all the stores (reads) of a run
        self.events.append((kind, red, arg))

    def go(self, st: Any, red: bool) -> None:
        """The steps of statement ``st`` (``red``: under a condition on the result)."""
        if isinstance(st, kir.Block):
            for x in st.body:
                self.go(x, red)
            return
        if isinstance(st, kir.For):
            self.go(st.body, red)
            return
        if isinstance(st, kir.If):
            r = red or self.on_result(st.cond)
            t = self.threshold_of(st.cond)
            if t is not None:
                self.thresholds.append(t)
            self.go(st.then, r)
            if st.orelse is not None:
                self.go(st.orelse, r)
            return
        if isinstance(st, kir.NamedBarrier):
            self.add("bar", red)
            return
        if isinstance(st, kir.Fence) and st.kind == "acq_rel_gpu":
            self.add("fence", red)
            return
        atomics = [n for n in kir.walk(st) if isinstance(n, kir.AtomicAdd)]
        if atomics:
            self._atomic(st, atomics, red)
            return
        for m in _own_mems(st):
            self._access(st, m, red)

    def _atomic(self, st: Any, atomics: List[kir.AtomicAdd], red: bool) -> None:
        """The one count on the tile counter, its result kept in a variable."""
        a = atomics[0]
        if len(atomics) != 1 or a.mem.claim.what != COUNTER or not isinstance(st, kir.Assign):
            raise self._error("an atomic that is not the one count on the tile counter")
        if not isinstance(st.lhs, kir.Var):
            raise self._error("the atomic's result is not kept in a variable")
        self.prev.append(st.lhs)
        self.add("atomic", red, a.sem)

    def _access(self, st: Any, m: kir.Mem, red: bool) -> None:
        """A memory access of statement ``st``, by its claim's name."""
        w = m.claim.what
        store = isinstance(st, kir.Assign) and st.lhs is m
        if w.startswith(PLANE_STORE) and store:
            self.add("store", red)
        elif w == PLANE_READ:
            self.add("read", red)
        elif w == COUNTER_RESET and store:
            self.add("reset", red)
        elif w == FLAG_WRITE and store:
            t = self.threshold_of(st.rhs.c) if isinstance(st.rhs, kir.Cond) else self.threshold_of(st.rhs)
            if t is None:
                raise self._error("the reducer flag is not the atomic's result compared with a constant")
            self.thresholds.append(t)
        elif w == FLAG_READ and isinstance(st, kir.Assign) and isinstance(st.lhs, kir.Var):
            self.flag_vars.append(st.lhs)
        elif w == COUNTER:
            raise self._error("the tile counter is accessed outside the atomic")


def _own_mems(s: Any) -> List[kir.Mem]:
    """The memory accesses of statement ``s`` itself (not of nested statements)."""
    out = []
    for n in kir.walk(s):
        if isinstance(n, (kir.If, kir.For, kir.Block)) and n is not s:
            break
        if isinstance(n, kir.Mem):
            out.append(n)
    return out


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
