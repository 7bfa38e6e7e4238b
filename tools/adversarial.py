"""The adversarial fuzz harness of layoutproof.

Seeded generators of random and hostile inputs for the public functions of ``layoutproof``,
``layoutproof.verify`` and the symbolic operations, each case run under a per-case hang
detector and judged by referees that do not trust the library:

* the **brute-force referee** evaluates layouts with its own mixed-radix model (this
  module's :func:`ev`, not ``Layout.__call__``) and checks each operation's post-condition
  over the whole (small) domain; on a refusal it searches small candidates for a correct
  answer (:func:`as_layout`, :func:`find_left_inverse`, the per-leaf search of
  :func:`composition_exists`);
* the **concrete-substitution referee** substitutes random admissible values for the
  symbols of a symbolic case (and the assignment of every symbolic refutation) and
  compares with the concrete algebra.

Each case lands in one class of :data:`CLASSES`:

``ok``                a correct answer, or a typed refusal where no correct answer exists
``wrong``             a result that fails its post-condition (brute force, concrete path)
``unsound``           verify says proved but brute force finds a counterexample; refuted but
                      the counterexample does not reproduce; a symbolic result that differs
                      from the concrete one after substitution; a symbolic refusal whose
                      assignment is admissible on the concrete path (or that has none)
``over_budget``       a call past its limit: concrete calls 2 s of process CPU time (the
                      machine may be shared), budgeted symbolic / verify calls twice the
                      budgets :func:`budgets` sets, in wall time (the hang detector fired, or
                      the call returned late: a Z3 call may not be interruptible)
``untyped``           an exception that is not a ``LayoutError`` (exceptions raised by the
                      caller's own callables excepted: they must pass through unchanged)
``invalid_accepted``  invalid input evaluated instead of refused
``over_rejection``    a ``LayoutError`` where brute force finds a correct answer

The hang detector is ``ITIMER_PROF`` / ``SIGPROF`` (process CPU time), so that the
library's own ``SIGALRM`` budgets stay in force during the run.  Over-rejections are
claimed only when a correct answer was actually constructed and checked (the searches are
sound; they are complete only within the small candidates they try).

Run it: ``python tools/adversarial.py --cases 20000 --seed 1`` prints a table by class and
by function and one line of reproduction per bad case.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import math
import random
import signal
import sys
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import layoutproof as lp
from layoutproof import (
    InadmissibleError,
    Layout,
    LayoutError,
    UndecidableConditionError,
)

CLASSES = ("ok", "wrong", "unsound", "over_budget", "untyped", "invalid_accepted", "over_rejection")
BAD = CLASSES[1:]

#: wall-time limit of one concrete call (seconds); 2 cores shared by many processes
CONCRETE_LIMIT = 2.0
#: the budgets the run sets (layoutproof.symbolic.set_timeout, layoutproof.budget.set_deadline):
#: each Z3 call / side-condition decision, and the overall deadline of one public verify call
#: (symbolic algebra calls run inside ``budget.deadline(DEADLINE_S)`` too)
PER_CALL_MS = 1000
DEADLINE_S = 3.0
#: wall-time limit of one symbolic / verify call: twice its budget ("nothing may exceed twice
#: its budget")
SYMBOLIC_LIMIT = 2 * DEADLINE_S


@contextlib.contextmanager
def budgets(per_call_ms: int = PER_CALL_MS, deadline_s: float = DEADLINE_S) -> Iterator[None]:
    """Set the library's budgets for the run, restoring the previous ones after."""
    from layoutproof import budget, symbolic

    old_t, old_d = symbolic.get_timeout(), budget.get_deadline()
    symbolic.set_timeout(per_call_ms)
    budget.set_deadline(deadline_s)
    try:
        yield
    finally:
        symbolic.set_timeout(old_t)
        budget.set_deadline(old_d)


def within_deadline(fn: Callable[[], Any]) -> Any:
    """Run a symbolic algebra call under the run's overall deadline (the caller's way to
    bound any call: ``with layoutproof.budget.deadline(s)``)."""
    from layoutproof import budget

    with budget.deadline(DEADLINE_S):
        return fn()


class HarnessTimeout(BaseException):
    """Raised in the main thread by the hang detector (a BaseException, so that no
    ``except Exception`` in the library swallows it)."""


class CallerError(Exception):
    """Raised by the callables the harness hands to the library; must pass through."""


@contextlib.contextmanager
def hang_guard(seconds: float) -> Iterator[None]:
    """Raise :class:`HarnessTimeout` in the main thread after ``seconds`` of process CPU time
    (``ITIMER_PROF`` / ``SIGPROF``: the library's own budgets use ``SIGALRM`` and must keep
    it).  CPU time never runs ahead of wall time, so a call it stops is past its wall limit
    too; a call blocked without using CPU is caught by the wall-time measurement after."""

    def fire(signum: int, frame: Any) -> None:
        raise HarnessTimeout(f"past {seconds} s of CPU time")

    old = signal.signal(signal.SIGPROF, fire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


# =============================================================================== the model
# An independent model of the layout function: shapes and strides as nested tuples of ints,
# evaluated colexicographically.  Nothing here calls the library.


def leaves(t: Any) -> List[Any]:
    if isinstance(t, (tuple, list)):
        out: List[Any] = []
        for x in t:
            out.extend(leaves(x))
        return out
    return [t]


def prod(xs: Sequence[int]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def ev(shape: Any, stride: Any, i: int) -> int:
    """The layout ``shape:stride`` at the 1-D coordinate ``i`` (colexicographic)."""
    s, d = leaves(shape), leaves(stride)
    off = 0
    for e, st in zip(s, d):
        off += (i % e) * st
        i //= e
    return off


def values(L: Layout) -> List[int]:
    s, d = leaves(L.shape), leaves(L.stride)
    return [ev(s, d, i) for i in range(prod(s))]


def hat(L: Layout, x: int) -> int:
    """``L`` with its own last flat mode unbounded, at ``x >= 0`` (semantics §2.2)."""
    s, d = leaves(L.shape), leaves(L.stride)
    off = 0
    for e, st in zip(s[:-1], d[:-1]):
        off += (x % e) * st
        x //= e
    return off + x * d[-1]


def size_of(shape: Any) -> int:
    return prod(leaves(shape))


def compatible_shapes(S: Any, T: Any) -> bool:
    """CuTe's shape compatibility: S int and size(S) == size(T), or both tuples of the same
    rank with every mode compatible."""
    if not isinstance(S, tuple):
        return size_of(S) == size_of(T)
    if not isinstance(T, tuple) or len(S) != len(T):
        return False
    return all(compatible_shapes(a, b) for a, b in zip(S, T))


def depth(t: Any) -> int:
    return 1 + max((depth(x) for x in t), default=0) if isinstance(t, tuple) else 0


def text(L: Any) -> str:
    """A reproduction of a layout argument: ``Layout((..), (..))``."""
    if isinstance(L, Layout):
        return f"Layout({L.shape!r}, {L.stride!r})"
    return repr(L)


# --------------------------------------------------------------- small-candidate searches


def _primes(n: int) -> List[int]:
    out, p = [], 2
    while p * p <= n:
        if n % p == 0:
            out.append(p)
            while n % p == 0:
                n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def as_layout(vals: Sequence[int]) -> Optional[Tuple[Tuple[int, ...], Tuple[int, ...]]]:
    """A flat layout whose function is ``vals`` (on ``[0, len(vals))``), or None when there is
    none.  Complete: every layout refines to one with prime extents, and the first prime
    mode of such a refinement is tried for every prime dividing the size."""
    n = len(vals)
    if n == 0 or vals[0] != 0:
        return None
    if n == 1:
        return (1,), (0,)

    def go(v: Tuple[int, ...]) -> Optional[Tuple[List[int], List[int]]]:
        m = len(v)
        if m == 1:
            return [], []
        for p in _primes(m):
            d = v[1] if p > 1 else 0
            if any(v[j] != j * d for j in range(p)):
                continue
            rest = tuple(v[q * p] for q in range(m // p))
            if any(v[r + q * p] != v[r] + rest[q] for q in range(m // p) for r in range(p)):
                continue
            sub = go(rest)
            if sub is not None:
                return [p, *sub[0]], [d, *sub[1]]
        return None

    r = go(tuple(vals))
    return None if r is None else (tuple(r[0]), tuple(r[1]))


def composition_exists(A: Layout, B: Layout) -> Optional[str]:
    """Is there a layout R, B's shape compatible with R's, with R(c) == Â(B(c)) on B's
    domain?  Returns a description of one, or None.  (Each leaf of B must map to a layout
    of its own -- refinements allowed -- and the leaves must add up.)"""
    bs, bd = leaves(B.shape), leaves(B.stride)
    if any(x < 0 for x in values(B)):
        return None  # Â is defined on non-negative arguments only (semantics §2.3)
    n = prod(bs)
    f = [hat(A, ev(bs, bd, i)) for i in range(n)]
    parts = []
    unit = 1
    for e in bs:
        g = [f[j * unit] for j in range(e)]
        r = as_layout([x - g[0] for x in g]) if g[0] == 0 else None
        if r is None:
            return None
        parts.append(r)
        unit *= e
    # additivity across B's leaves
    for i in range(n):
        x, unit, tot = i, 1, 0
        for e in bs:
            tot += f[(x % e) * unit]
            x //= e
            unit *= e
        if tot != f[i]:
            return None
    return " x ".join(f"{s}:{d}" for s, d in parts)


def _factorizations(n: int, max_len: int) -> Iterator[Tuple[int, ...]]:
    if n == 1:
        yield ()
        return
    if max_len == 0:
        return
    for f in range(2, n + 1):
        if n % f == 0:
            for rest in _factorizations(n // f, max_len - 1):
                yield (f, *rest)


def _solve_int(rows: List[List[int]], rhs: List[int]) -> Optional[List[int]]:
    """An integer solution of rows @ x == rhs (free variables 0), by exact elimination."""
    m = len(rows[0]) if rows else 0
    a = [[Fraction(v) for v in r] + [Fraction(b)] for r, b in zip(rows, rhs)]
    piv_cols, r = [], 0
    for c in range(m):
        p = next((i for i in range(r, len(a)) if a[i][c] != 0), None)
        if p is None:
            continue
        a[r], a[p] = a[p], a[r]
        pv = a[r][c]
        a[r] = [x / pv for x in a[r]]
        for i in range(len(a)):
            if i != r and a[i][c] != 0:
                k = a[i][c]
                a[i] = [x - k * y for x, y in zip(a[i], a[r])]
        piv_cols.append(c)
        r += 1
    if any(all(x == 0 for x in row[:-1]) and row[-1] != 0 for row in a):
        return None
    x = [Fraction(0)] * m
    for i, c in enumerate(piv_cols):
        x[c] = a[i][-1]
    if any(v.denominator != 1 for v in x):
        return None
    return [int(v) for v in x]


def find_left_inverse(L: Layout, extra: int = 8) -> Optional[str]:
    """A layout R with R(L(i)) == i for every i, among flat layouts of size
    max(L)+1 .. max(L)+1+extra with at most 4 modes (strides solved exactly); or None."""
    v = values(L)
    if len(set(v)) != len(v) or min(v) < 0:
        return None
    top = max(v) + 1
    for K in range(top, top + extra + 1):
        for shp in _factorizations(K, 4):
            rows = []
            for x in v:
                digs, y = [], x
                for e in shp:
                    digs.append(y % e)
                    y //= e
                rows.append(digs)
            sol = _solve_int(rows, list(range(len(v))))
            if sol is not None and all(ev(shp, tuple(sol), x) == i for i, x in enumerate(v)):
                return f"{shp}:{tuple(sol)}"
    return None


def complement_exists(
    ls: Sequence[int], ld: Sequence[int], M: Optional[int], tries: int = 4
) -> Optional[str]:
    """An increasing layout C with (L, C) a bijection onto [0, K), K >= M (K >= cosize(L)
    when M is None), for the modes ``ls:ld`` of L that are not ignored; or None.  For each K
    the image of C is forced (the least offset not yet covered must be C's next value), so
    the search is complete for the K it tries: the smallest multiples of size(L) past the
    target."""
    n = prod(ls)
    img = [ev(ls, ld, i) for i in range(n)]
    if min(img, default=0) < 0 or len(set(img)) != len(img):
        return None
    target = max(1, M if M is not None else 1 + sum((e - 1) * abs(d) for e, d in zip(ls, ld)))
    K = max(n, -(-target // n) * n, -(-(max(img) + 1) // n) * n)
    for _k in range(tries):
        covered, T, ok = set(), [], True
        for x in range(K):
            if x in covered:
                continue
            new = {x + y for y in img}
            if new & covered or max(new) >= K:
                ok = False
                break
            covered |= new
            T.append(x)
        if ok and len(covered) == K:
            r = as_layout(T)
            if r is not None:
                return f"{r[0]}:{r[1]} (K = {K})"
        K += n
    return None


# ====================================================================== cases and outcomes


@dataclass
class Case:
    func: str
    repro: str
    call: Callable[[], Any]
    check: Optional[Callable[[Any], Tuple[str, str]]] = None
    on_layout_error: Optional[Callable[[LayoutError], Tuple[str, str]]] = None
    limit: float = CONCRETE_LIMIT
    expect_caller_error: bool = False
    #: "cpu": judged on the process's CPU time (concrete work; the machine may be shared);
    #: "wall": on wall time (calls under the library's own wall-clock budgets)
    clock: str = "cpu"


@dataclass
class Outcome:
    cls: str
    func: str
    repro: str
    detail: str = ""
    seconds: float = 0.0

    def line(self) -> str:
        return f"[{self.cls}] {self.func}: {self.repro} -- {self.detail}"


OK = ("ok", "")


def _raised_at_the_call(exc: BaseException) -> bool:
    """Was ``exc`` raised by the call itself (its innermost frame is this harness)?"""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    return last is not None and last.tb_frame.f_code.co_filename == __file__


def run_case(case: Case) -> Outcome:
    """Run one case under the hang detector and classify it."""
    t0, c0 = time.perf_counter(), time.process_time()
    res: Any = None
    exc: Optional[BaseException] = None
    tb = ""
    sink = io.StringIO()
    try:
        with hang_guard(case.limit), contextlib.redirect_stdout(sink):
            res = case.call()
    except HarnessTimeout:
        dt = time.perf_counter() - t0
        cpu = time.process_time() - c0
        return Outcome(
            "over_budget",
            case.func,
            case.repro,
            f"hang detector fired at {cpu:.2f} s CPU ({dt:.2f} s wall)",
            dt,
        )
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 -- classifying everything is the point
        exc = e
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    spent = cpu if case.clock == "cpu" else dt
    if spent > case.limit:
        return Outcome(
            "over_budget",
            case.func,
            case.repro,
            f"{spent:.2f} s {case.clock} > {case.limit} s ({dt:.2f} s wall, {cpu:.2f} s CPU)",
            dt,
        )
    if exc is not None:
        if isinstance(exc, CallerError):
            if case.expect_caller_error:
                return Outcome("ok", case.func, case.repro, "", dt)
            return Outcome("untyped", case.func, case.repro, f"CallerError leaked: {exc}", dt)
        if case.expect_caller_error:
            return Outcome(
                "wrong",
                case.func,
                case.repro,
                f"the caller's exception did not pass through: {type(exc).__name__}: {exc}",
                dt,
            )
        if isinstance(exc, TypeError) and _raised_at_the_call(exc):
            # Python's own arity / keyword check at the call boundary, not the library's code
            return Outcome("ok", case.func, case.repro, "signature mismatch", dt)
        if isinstance(exc, LayoutError):
            if case.on_layout_error is None:
                return Outcome("ok", case.func, case.repro, "", dt)
            try:
                cls, detail = case.on_layout_error(exc)
            except Exception as e:  # noqa: BLE001
                cls, detail = "untyped", f"in the referee of the error: {type(e).__name__}: {e}"
            return Outcome(cls, case.func, case.repro, detail, dt)
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3)
        tb = " | ".join(x.strip() for x in "".join(lines).strip().splitlines()[-6:])
        return Outcome(
            "untyped", case.func, case.repro, f"{type(exc).__name__}: {str(exc)[:160]} @ {tb[-300:]}", dt
        )
    if case.expect_caller_error:
        return Outcome("wrong", case.func, case.repro, "the caller's exception was swallowed", dt)
    if case.check is None:
        return Outcome("ok", case.func, case.repro, "", dt)
    try:
        with hang_guard(max(case.limit, 10.0)):
            cls, detail = case.check(res)
    except HarnessTimeout:
        return Outcome("over_budget", case.func, case.repro, "using the result (str, eval, subs) hung", dt)
    except LayoutError as e:
        cls, detail = "wrong", f"the result cannot be used: {type(e).__name__}: {str(e)[:160]}"
    except Exception as e:  # noqa: BLE001
        cls, detail = "untyped", f"using the result: {type(e).__name__}: {str(e)[:160]}"
    return Outcome(cls, case.func, case.repro, detail, dt)


# ======================================================================== random layouts


def rand_shape(rng: random.Random, max_size: int = 48, max_depth: int = 2) -> Any:
    """A random shape (int or nested tuple) of size <= max_size."""
    r = rng.random()
    if max_depth == 0 or r < 0.3:
        return rng.choice([1, 2, 2, 3, 4, 4, 5, 6, 8, 8, 9, 12, 16][: 1 + max(0, min(12, max_size - 1))])
    n = rng.randint(1, 3)
    out, budget = [], max_size
    for _i in range(n):
        s = rand_shape(rng, max(1, budget // 2), max_depth - 1)
        sz = size_of(s)
        if sz > budget:
            s, sz = 1, 1
        budget //= max(1, sz)
        out.append(s)
    return tuple(out)


def _map_leaves(t: Any, f: Callable[[int], Any]) -> Any:
    if isinstance(t, tuple):
        return tuple(_map_leaves(x, f) for x in t)
    return f(t)


def rand_stride_like(rng: random.Random, shape: Any, neg: float = 0.05) -> Any:
    kind = rng.random()
    if kind < 0.35:
        # compact column-major (possibly permuted)
        ls = leaves(shape)
        order = list(range(len(ls)))
        if rng.random() < 0.5:
            rng.shuffle(order)
        strides = [0] * len(ls)
        acc = rng.choice([1, 1, 1, 2, 3])
        for k in order:
            strides[k] = acc
            acc *= ls[k]
        it = iter(strides)
        return _map_leaves(shape, lambda _s: next(it))

    def one(_s: int) -> int:
        r = rng.random()
        if r < 0.12:
            return 0
        if r < 0.12 + neg:
            return -rng.randint(1, 6)
        if r < 0.8:
            return rng.randint(1, 12)
        return rng.choice([16, 24, 32, 48, 64, 7, 11])

    return _map_leaves(shape, one)


def rand_layout(rng: random.Random, max_size: int = 48, neg: float = 0.05, max_depth: int = 2) -> Layout:
    s = rand_shape(rng, max_size, max_depth)
    return Layout(s, rand_stride_like(rng, s, neg))


def rand_injective(rng: random.Random, max_size: int = 16) -> Layout:
    while True:
        L = rand_layout(rng, max_size, neg=0.0, max_depth=1)
        v = values(L)
        if len(set(v)) == len(v):
            return L


# ====================================================================== concrete referees


def _check_layout(R: Any) -> Optional[str]:
    if not isinstance(R, Layout):
        return f"not a Layout: {type(R).__name__}"
    for x in leaves(R.shape) + leaves(R.stride):
        if type(x) is not int:
            return f"a leaf of type {type(x).__name__}"
    if any(x < 1 for x in leaves(R.shape)):
        return "a non-positive extent"
    return None


def referee_composition(A: Layout, B: Layout) -> Callable[[Any], Tuple[str, str]]:
    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        if R.size != B.size:
            return "wrong", f"size {R.size} != size(B) {B.size}"
        if not compatible_shapes(B.shape, R.shape):
            return "wrong", f"B's shape {B.shape} is not compatible with R's {R.shape}"
        vb, vr = values(B), values(R)
        for c in range(B.size):
            if vb[c] < 0:
                return "wrong", f"returned although B({c}) = {vb[c]} < 0 is outside Â's domain"
            if vr[c] != hat(A, vb[c]):
                return "wrong", f"R({c}) = {vr[c]} != Â(B({c})) = {hat(A, vb[c])}; R = {R}"
        return OK

    return check


def refusal_composition(A: Layout, B: Layout) -> Callable[[LayoutError], Tuple[str, str]]:
    def judge(e: LayoutError) -> Tuple[str, str]:
        if not isinstance(e, InadmissibleError):
            return "over_rejection", f"{type(e).__name__} on well-formed input: {e}"
        ex = composition_exists(A, B)
        if ex is not None:
            return "over_rejection", f"{e.condition}: yet a correct R exists ({ex})"
        return OK

    return judge


def gen_composition(rng: random.Random) -> Case:
    A = rand_layout(rng, 64, neg=0.05)
    B = rand_layout(rng, 24, neg=0.04)
    return Case(
        "composition",
        f"composition({text(A)}, {text(B)})",
        lambda: lp.composition(A, B),
        referee_composition(A, B),
        refusal_composition(A, B),
    )


def _covered_ok(L: Layout) -> Tuple[List[int], List[int]]:
    s, d = leaves(L.shape), leaves(L.stride)
    keep = [(e, st) for e, st in zip(s, d) if e > 1 and st != 0]
    return [e for e, _x in keep], [st for _e, st in keep]


def gen_complement(rng: random.Random) -> Case:
    L = rand_layout(rng, 24, neg=0.04, max_depth=1)
    M = rng.choice([None, None, rng.randint(1, 128), rng.randint(1, 16)])
    ls, ld = _covered_ok(L)

    def check(C: Any) -> Tuple[str, str]:
        bad = _check_layout(C)
        if bad:
            return "wrong", bad
        vl = [ev(ls, ld, i) for i in range(prod(ls))]
        vc = values(C)
        if any(b <= a for a, b in zip(vc, vc[1:])):
            return "wrong", f"C = {C} is not increasing"
        img = sorted(x + y for y in vc for x in vl)
        K = len(img)
        if img != list(range(K)):
            return "wrong", f"(L, C) with C = {C} is not a bijection onto [0, {K})"
        target = M if M is not None else max(1, 1 + sum((e - 1) * abs(d) for e, d in zip(ls, ld)))
        if K < target:
            return "wrong", f"(L, C) fills [0, {K}) short of the cotarget {target}"
        return OK

    def judge(e: LayoutError) -> Tuple[str, str]:
        if not isinstance(e, InadmissibleError):
            return "over_rejection", f"{type(e).__name__} on well-formed input: {e}"
        ex = complement_exists(ls, ld, M)
        if ex is not None:
            return "over_rejection", f"{e.condition}: yet C = {ex} works"
        return OK

    args = f"{text(L)}" + ("" if M is None else f", {M}")
    return Case(
        "complement",
        f"complement({args})",
        (lambda: lp.complement(L)) if M is None else (lambda: lp.complement(L, M)),
        check,
        judge,
    )


def gen_right_inverse(rng: random.Random) -> Case:
    L = rand_layout(rng, 32, neg=0.05)
    vl = values(L)

    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        for i, r in enumerate(values(R)):
            if not 0 <= r < L.size:
                return "wrong", f"R({i}) = {r} outside L's domain; R = {R}"
            if vl[r] != i:
                return "wrong", f"L(R({i})) = {vl[r]} != {i}; R = {R}"
        return OK

    return Case("right_inverse", f"right_inverse({text(L)})", lambda: lp.right_inverse(L), check)


def gen_left_inverse(rng: random.Random) -> Case:
    L = rand_injective(rng, 16) if rng.random() < 0.7 else rand_layout(rng, 16, neg=0.05)
    vl = values(L)
    inj = len(set(vl)) == len(vl)

    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        vr = values(R)
        for i, x in enumerate(vl):
            if not 0 <= x < R.size:
                return "wrong", f"L({i}) = {x} outside R's domain; R = {R}"
            if inj and vr[x] != i:
                return "wrong", f"R(L({i})) = {vr[x]} != {i}; R = {R}"
            if not inj and (not 0 <= vr[x] < L.size or vl[vr[x]] != x):
                return "wrong", f"L(R(L({i}))) != L({i}); R = {R}"
        return OK

    def judge(e: LayoutError) -> Tuple[str, str]:
        if inj and min(vl) >= 0 and len(vl) <= 16 and max(vl) <= 48:
            ex = find_left_inverse(L)
            if ex is not None:
                return "over_rejection", f"{getattr(e, 'condition', type(e).__name__)}: yet R = {ex} works"
        return OK

    return Case("left_inverse", f"left_inverse({text(L)})", lambda: lp.left_inverse(L), check, judge)


def gen_coalesce(rng: random.Random) -> Case:
    L = rand_layout(rng, 64, neg=0.1, max_depth=3)
    vl = values(L)

    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        if R.size != L.size or values(R) != vl:
            return "wrong", f"R = {R} is not the same function"
        if depth(R.shape) > 1:
            return "wrong", f"depth {depth(R.shape)} > 1"
        return OK

    return Case("coalesce", f"coalesce({text(L)})", lambda: lp.coalesce(L), check)


def gen_filter(rng: random.Random) -> Case:
    L = rand_layout(rng, 64, neg=0.1, max_depth=3)
    img = set(values(L))

    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        if set(values(R)) != img:
            return "wrong", f"R = {R} has another image"
        if depth(R.shape) > 1:
            return "wrong", f"depth {depth(R.shape)} > 1"
        if any(d == 0 and s > 1 for s, d in zip(leaves(R.shape), leaves(R.stride))):
            return "wrong", f"R = {R} has a stride-0 mode"
        return OK

    return Case("filter", f"filter({text(L)})", lambda: lp.filter(L), check)


_DIVIDES = ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide")
_PRODUCTS = ("logical_product", "zipped_product", "tiled_product", "flat_product")


def gen_divide(rng: random.Random) -> Case:
    name = rng.choice(_DIVIDES)
    L = rand_layout(rng, 64, neg=0.03)
    T = rand_layout(rng, 16, neg=0.03, max_depth=1)
    f = getattr(lp, name)

    def expected() -> Optional[List[int]]:
        try:
            C = lp.complement(T, L.size)
        except LayoutError:
            return None
        Z = lp.make_layout(T, C)
        return [hat(L, x) if x >= 0 else None for x in values(Z)]

    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        exp = expected()
        if exp is None:
            return "wrong", "returned although complement(T, size(L)) is refused"
        if values(R) != exp:
            return "wrong", f"R = {R} != L o (T, complement(T, size(L)))"
        if name == "logical_divide":
            Z = lp.make_layout(T, lp.complement(T, L.size))
            if not compatible_shapes(Z.shape, R.shape):
                return "wrong", f"(T, C)'s shape {Z.shape} is not compatible with R's {R.shape}"
        if size_of(R.shape[0] if isinstance(R.shape, tuple) else R.shape) != T.size and name != "flat_divide":
            return "wrong", f"first mode of R = {R} has not the tile's size {T.size}"
        return OK

    def judge(e: LayoutError) -> Tuple[str, str]:
        try:
            C = lp.complement(T, L.size)
        except LayoutError:
            return OK
        ex = composition_exists(L, lp.make_layout(T, C))
        if ex is not None and isinstance(e, InadmissibleError):
            return "over_rejection", f"{e.condition}: yet L o (T, C) is a layout ({ex})"
        return OK

    return Case(name, f"{name}({text(L)}, {text(T)})", lambda: f(L, T), check, judge)


def gen_product(rng: random.Random) -> Case:
    name = rng.choice(_PRODUCTS + ("blocked_product", "raked_product"))
    A = rand_layout(rng, 12, neg=0.03, max_depth=1)
    B = rand_layout(rng, 12, neg=0.03, max_depth=1)
    f = getattr(lp, name)

    def expected() -> Optional[List[int]]:
        cos = 1 + sum((s - 1) * abs(d) for s, d in zip(leaves(B.shape), leaves(B.stride)))
        try:
            C = lp.complement(A, A.size * cos)
        except LayoutError:
            return None
        va = values(A)
        out = []
        for b in values(B):
            if b < 0:
                return None
            out.extend(a + hat(C, b) for a in va)
        return out

    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        exp = expected()
        if exp is None:
            return "wrong", "returned although (A, complement(A, size(A)*cosize(B))) o B is undefined"
        got = values(R)
        if name in _PRODUCTS:
            if got != exp:
                return "wrong", f"R = {R} != (A, complement(A, size(A)*cosize(B)) o B)"
            if name == "logical_product" and not (R.rank == 2 and compatible_shapes(B.shape, R.shape[1])):
                return "wrong", f"B's shape {B.shape} is not compatible with mode 1 of R = {R}"
        elif sorted(got) != sorted(exp):
            return "wrong", f"R = {R} is not a rearrangement of the logical product"
        return OK

    return Case(name, f"{name}({text(A)}, {text(B)})", lambda: f(A, B), check)


def gen_downcast(rng: random.Random) -> Case:
    L = rand_layout(rng, 16, neg=0.08, max_depth=1)
    n = rng.choice([2, 2, 3, 4])
    vl = values(L)

    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        if R.size != n * L.size:
            return "wrong", f"size {R.size} != {n} * size(L)"
        if sorted(values(R)) != sorted(n * x + j for x in vl for j in range(n)):
            return "wrong", f"image(R) != {{n*L(c) + j}} for R = {R}"
        return OK

    def judge(e: LayoutError) -> Tuple[str, str]:
        # a layout of L's shape with the stride-1 leaf scaled exists when the parts of each
        # element are adjacent somewhere: search every leaf as the one to widen
        s, d = leaves(L.shape), leaves(L.stride)
        target = sorted(n * x + j for x in vl for j in range(n))
        for k in range(len(s)):
            if d[k] != 1 and s[k] != 1:
                continue
            ns = s[:k] + [s[k] * n] + s[k + 1 :]
            nd = [x * n for x in d[:k]] + [1] + [x * n for x in d[k + 1 :]]
            if sorted(ev(ns, nd, i) for i in range(prod(ns))) == target:
                return "over_rejection", f"{getattr(e, 'condition', '')}: yet {tuple(ns)}:{tuple(nd)} works"
        return OK

    return Case("downcast", f"downcast({text(L)}, {n})", lambda: lp.downcast(L, n), check, judge)


def gen_upcast(rng: random.Random) -> Case:
    L = rand_layout(rng, 32, neg=0.05, max_depth=1)
    n = rng.choice([2, 2, 4, 3])
    img = set(values(L))

    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        blocks = {n * r + k for r in values(R) for k in range(n)}
        if blocks != img:
            return "wrong", f"block condition fails for R = {R}"
        return OK

    return Case("upcast", f"upcast({text(L)}, {n})", lambda: lp.upcast(L, n), check)


def gen_swizzle_composition(rng: random.Random) -> Case:
    b = rng.randint(0, 3)
    m = rng.randint(0, 2)
    s = rng.choice([b, b + 1, -b, -(b + 1)]) if b else rng.randint(-2, 2)
    L = rand_layout(rng, 64, neg=0.0, max_depth=1)
    repro = f"composition({text(L)}, Swizzle({b}, {m}, {s}))"

    def sw_of() -> Any:
        return lp.Swizzle(b, m, s)

    def truth() -> List[int]:
        sw = sw_of()
        return [hat(L, sw(c)) for c in range(L.size)]

    def check(R: Any) -> Tuple[str, str]:
        if R.size != L.size:
            return "wrong", f"size {R.size} != size(L) {L.size}"
        want = truth()
        for c in range(L.size):
            if R(c) != want[c]:
                return "wrong", f"R({c}) = {R(c)} != L(sw({c})) = {want[c]}; R = {R}"
        return OK

    def judge(e: LayoutError) -> Tuple[str, str]:
        try:
            want = truth()
        except LayoutError:
            return OK
        r = as_layout(want)
        if r is not None:
            return (
                "over_rejection",
                f"L o Sw is the plain layout {r[0]}:{r[1]} ({getattr(e, 'condition', '')})",
            )
        return OK

    return Case("composition(L, Swizzle)", repro, lambda: lp.composition(L, sw_of()), check, judge)


def gen_eval(rng: random.Random) -> Case:
    """Evaluation and coordinate functions: valid coordinates agree with the model;
    out-of-range ones must be refused (invalid_accepted otherwise)."""
    L = rand_layout(rng, 48, neg=0.1)
    s, d = L.shape, L.stride
    n = L.size
    kind = rng.randrange(6)
    bad_idx = rng.choice([n, n + rng.randint(0, 5), -1, -rng.randint(1, 5)])
    if kind == 0:
        i = rng.randrange(n)
        return Case(
            "Layout.__call__",
            f"{text(L)}({i})",
            lambda: L(i),
            lambda r: OK if r == ev(s, d, i) else ("wrong", f"{r} != {ev(s, d, i)}"),
        )
    if kind == 1:
        return Case(
            "Layout.__call__",
            f"{text(L)}({bad_idx})",
            lambda: L(bad_idx),
            lambda r: ("invalid_accepted", f"returned {r!r}"),
        )
    if kind == 2:
        return Case(
            "idx2crd",
            f"idx2crd({bad_idx}, {s!r})",
            lambda: lp.idx2crd(bad_idx, s),
            lambda r: ("invalid_accepted", f"returned {r!r}"),
        )
    if kind == 3:
        # a natural coordinate with one leaf pushed out of range
        ls = leaves(s)
        k = rng.randrange(len(ls))
        crd_l = [rng.randrange(e) for e in ls]
        crd_l[k] = rng.choice([ls[k], ls[k] + 1, -1])
        it = iter(crd_l)
        crd = _map_leaves(s, lambda _e: next(it))
        return Case(
            "crd2idx",
            f"crd2idx({crd!r}, {s!r})",
            lambda: lp.crd2idx(crd, s),
            lambda r: ("invalid_accepted", f"returned {r!r}"),
        )
    if kind == 4:
        i = rng.randrange(n)

        def check(c: Any) -> Tuple[str, str]:
            back = lp.crd2idx(c, s)
            return OK if back == i else ("wrong", f"crd2idx(idx2crd({i})) = {back}")

        return Case("idx2crd", f"idx2crd({i}, {s!r})", lambda: lp.idx2crd(i, s), check)
    fn = rng.choice(["append", "prepend"])
    nn = rng.choice([-4, -1, 0])
    t = tuple(rng.randint(1, 4) for _i in range(rng.randint(1, 3)))
    f = getattr(lp, fn)
    # n below the rank (0 included) asks for fewer modes than the tuple has
    return Case(
        fn, f"{fn}({t!r}, 3, {nn})", lambda: f(t, 3, nn), lambda r: ("invalid_accepted", f"returned {r!r}")
    )


# =========================================================================== hostile input


def _deep(n: int, leaf: Any = 2) -> Any:
    x = leaf
    for _i in range(n):
        x = (x,)
    return x


class _Opaque:
    """An object of no expected type, with a stable repr (for reproductions)."""

    def __repr__(self) -> str:
        return "_Opaque()"


class _AnyCallable:
    """A callable returning 1 for any arguments (a function where a layout is expected)."""

    def __call__(self, *a: Any) -> int:
        return 1

    def __repr__(self) -> str:
        return "(lambda *a: 1)"


@functools.cache
def _atoms_cached() -> Tuple[Any, ...]:
    return tuple(_atoms_fresh())


def _atoms() -> List[Any]:
    return list(_atoms_cached())


def _atoms_fresh() -> List[Any]:
    import numpy as np

    return [
        0,
        1,
        2,
        3,
        4,
        -1,
        -3,
        2**70,
        -(2**70),
        2**63,
        1.5,
        2.0,
        float("nan"),
        float("inf"),
        "4",
        "x",
        "",
        None,
        True,
        False,
        {},
        [],
        [2, 3],
        (),
        (2, 3),
        ((2,), (3, 4)),
        (0, 2),
        (2, -1),
        (1,),
        np.int64(3),
        np.int8(-2),
        np.float32(2),
        np.bool_(True),
        b"ab",
        _Opaque(),
        lp._,
        _deep(70),
        _deep(600),
        3 + 1j,
        range(3),
        (2**64, 3),
        (None, 2),
        (lp._, 2),
        slice(0, 2),
        "4:1",
        "(4,2):(1,",
        Layout(8, 1),
        Layout((4, (2, 2)), (2, (1, 8))),
        Layout((2, 3), (0, -1)),
        Layout(1, 0),
        Layout((2, 2), (1, 3)),
        Layout((6, 2), (1, 7)),
        Layout(4, 0),
        lp.Swizzle(2, 0, 3),
        np.array([2, 3]),
        _AnyCallable(),
    ]


def _public_callables() -> Dict[str, Callable[..., Any]]:
    out: Dict[str, Callable[..., Any]] = {}
    for name in lp.__all__:
        obj = getattr(lp, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue
        if callable(obj) and name not in ("assuming",):
            out[name] = obj
    out["filter"], out["zip"], out["copy"] = lp.filter, lp.zip, lp.copy
    out["Layout.parse"] = Layout.parse
    from layoutproof import verify

    for name in (
        "equal",
        "compatible",
        "admissible",
        "identity",
        "postcondition",
        "function",
        "Result",
        "Counterexample",
        "to_smtlib",
    ):
        out[f"verify.{name}"] = getattr(verify, name)
    return out


class Hostile:
    """Wrong types, nesting, huge ints, bools, floats, numpy scalars, strings, None, to every
    public callable (the other arguments valid-looking)."""

    def __init__(self) -> None:
        import inspect

        self.atoms = _atoms()
        self.callables = _public_callables()
        self.names = sorted(self.callables)
        self.arity: Dict[str, Tuple[int, int]] = {}
        for name, f in self.callables.items():
            try:
                params = list(inspect.signature(f).parameters.values())
            except (TypeError, ValueError):
                self.arity[name] = (1, 2)
                continue
            pos = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
            lo = sum(1 for p in pos if p.default is p.empty)
            hi = len(pos) + (2 if any(p.kind == p.VAR_POSITIONAL for p in params) else 0)
            self.arity[name] = (lo, max(lo, hi))
        self.base = [Layout((4, (2, 2)), (2, (1, 8))), Layout((2, 2), (1, 4)), 2, 1]

    def gen(self, rng: random.Random) -> Case:
        name = rng.choice(self.names)
        lo, hi = self.arity[name]
        n = rng.randint(lo, hi)
        if name.startswith("verify.") and rng.random() < 0.5:
            # a valid-looking first argument: the operation name
            args: List[Any] = [rng.choice(["composition", "complement", "coalesce", "bogus"])]
            args += [self._garbage(rng) for _i in range(max(0, n - 1))]
        elif rng.random() < 0.5:
            args = list(self.base[:n]) + [self._garbage(rng) for _i in range(max(0, n - len(self.base)))]
            if args:
                args[rng.randrange(len(args))] = self._garbage(rng)
        else:
            args = [self._garbage(rng) for _i in range(n)]
        f = self.callables[name]
        repro = f"{name}{_short(tuple(args))}"

        def call() -> Any:
            r = f(*args)
            _exercise(r)
            return r

        if name.startswith("verify."):
            return Case(name, repro, call, limit=SYMBOLIC_LIMIT, clock="wall")
        return Case(name, repro, call)

    def _garbage(self, rng: random.Random, d: int = 0) -> Any:
        r = rng.random()
        if d < 2 and r < 0.2:
            return tuple(self._garbage(rng, d + 1) for _i in range(rng.randint(0, 3)))
        if r < 0.35:
            return rand_layout(rng, 16, neg=0.2)
        return rng.choice(self.atoms)


def _short(x: Any) -> str:
    from layoutproof.errors import show

    return show(x)


def _exercise(r: Any) -> None:
    """Use a result as a caller would (print, hash, evaluate when small)."""
    if isinstance(r, Layout):
        str(r)
        hash(r)
        if not r.is_symbolic and r.size <= 4096:
            r.eval_all()
    elif r is not None and type(r).__name__ == "Result":
        str(r)
        bool(r)


# ========================================================================== verify cases


def _same_function(A: Layout, B: Layout) -> Tuple[bool, Optional[int]]:
    va, vb = values(A), values(B)
    if len(va) != len(vb):
        return False, None
    for i, (x, y) in enumerate(zip(va, vb)):
        if x != y:
            return False, i
    return True, None


def _judge_verdict(claim_true: bool, r: Any, reproduces: Callable[[Any], bool]) -> Tuple[str, str]:
    st = getattr(r, "status", None)
    if st not in ("proved", "checked", "refuted", "unknown"):
        return "wrong", f"not a Result: {r!r}"
    if st in ("proved", "checked") and not claim_true:
        return "unsound", f"{st} but brute force refutes it"
    if st == "refuted":
        if claim_true:
            return "unsound", f"refuted ({r.counterexample}) but brute force proves it"
        if not reproduces(r.counterexample):
            return "unsound", f"refuted with a counterexample that does not reproduce: {r.counterexample}"
    return OK


def _variant(rng: random.Random, A: Layout) -> Layout:
    """A layout that is often, but not always, the same function as A."""
    k = rng.random()
    if k < 0.3:
        return lp.coalesce(A)
    if k < 0.5:
        return A
    ls, ld = leaves(A.shape), list(leaves(A.stride))
    j = rng.randrange(len(ld))
    ld[j] += rng.choice([-1, 1, ls[j]])
    return Layout(tuple(ls), tuple(ld))


def gen_verify_equal(rng: random.Random) -> Case:
    from layoutproof import verify

    A = rand_layout(rng, 32, neg=0.1)
    B = _variant(rng, A) if rng.random() < 0.8 else rand_layout(rng, 32)
    same, _w = _same_function(A, B)
    va, vb = values(A), values(B)

    def repro_ok(c: Any) -> bool:
        if c is None:
            return False
        if c.coordinate is None:
            return len(va) != len(vb)
        i = c.coordinate
        return 0 <= i < min(len(va), len(vb)) and va[i] != vb[i]

    return Case(
        "verify.equal",
        f"verify.equal({text(A)}, {text(B)})",
        lambda: verify.equal(A, B),
        lambda r: _judge_verdict(same, r, repro_ok),
        limit=SYMBOLIC_LIMIT,
        clock="wall",
    )


def gen_verify_function(rng: random.Random) -> Case:
    """verify.function with values that are not integers, numpy ints, bools, or raise."""
    import numpy as np

    from layoutproof import verify

    L = rand_layout(rng, 16, neg=0.0)
    va = values(L)
    n = L.size
    bad_at = rng.randrange(n)
    kind = rng.choice(["exact", "float_off", "float_eq", "np", "bool", "str", "none", "raise", "off1", "big"])
    noise = {
        "exact": lambda v: v,
        "float_off": lambda v: v + 0.25,
        "float_eq": lambda v: float(v),
        "np": lambda v: np.int64(v),
        "bool": lambda v: bool(v) if v in (0, 1) else v,
        "str": lambda v: str(v),
        "none": lambda v: None,
        "off1": lambda v: v + 1,
        "big": lambda v: v + 2**64,
        "raise": lambda v: v,
    }[kind]

    def fn(i: int) -> Any:
        if kind == "raise" and i == bad_at:
            raise CallerError("the caller's own function failed")
        if kind in ("exact", "np", "raise") or i == bad_at:
            return noise(va[i])
        return va[i]

    # the claim "fn == L" holds only where every value is an int equal to L's
    def val_ok(i: int) -> bool:
        v = fn(i)
        return type(v) in (int, np.int64) and not isinstance(v, bool) and v == va[i]

    truth = all(val_ok(i) for i in range(n)) if kind != "raise" else False

    def repro_ok(c: Any) -> bool:
        return c is not None and (c.coordinate is None or not val_ok(c.coordinate))

    def check(r: Any) -> Tuple[str, str]:
        if kind in ("float_eq", "bool"):
            # a float or bool equal to the integer: proving it is sound as numbers, refusing
            # it as malformed too; refuting at a coordinate where the values are equal is not
            st = getattr(r, "status", None)
            if st == "refuted" and r.counterexample is not None and r.counterexample.coordinate is not None:
                i = r.counterexample.coordinate
                if fn(i) == va[i]:
                    return "unsound", f"refuted at {i} where the values are equal"
            return OK
        return _judge_verdict(truth, r, repro_ok)

    return Case(
        "verify.function",
        f"verify.equal(verify.function(<{kind} at {bad_at}>, {L.shape!r}), {text(L)})",
        lambda: verify.equal(verify.function(fn, L.shape), L),
        check,
        limit=SYMBOLIC_LIMIT,
        clock="wall",
        expect_caller_error=(kind == "raise"),
    )


_POST_OPS = (
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "coalesce",
    "filter",
    "logical_divide",
    "logical_product",
)


def gen_verify_postcondition(rng: random.Random) -> Case:
    from layoutproof import verify

    op = rng.choice(_POST_OPS)
    if op in ("composition", "logical_divide", "logical_product"):
        args: Tuple[Any, ...] = (
            rand_layout(rng, 16, neg=0.0, max_depth=1),
            rand_layout(rng, 8, neg=0.0, max_depth=1),
        )
    elif op == "complement":
        args = (rand_layout(rng, 16, neg=0.0, max_depth=1), rng.randint(1, 64))
    else:
        args = (rand_injective(rng, 16),)
    try:
        R = getattr(lp, op)(*args)
    except LayoutError:
        R = rand_layout(rng, 16, neg=0.0, max_depth=1)
    if rng.random() < 0.5:
        R = _variant(rng, R)
    # the referee: the post-condition by brute force
    truth = _post_truth(op, R, args)

    def repro_ok(c: Any) -> bool:
        return not truth

    return Case(
        f"verify.postcondition[{op}]",
        f"verify.postcondition({op!r}, {text(R)}, {', '.join(text(a) for a in args)})",
        lambda: verify.postcondition(op, R, *args),
        lambda r: _judge_verdict(truth, r, repro_ok),
        limit=SYMBOLIC_LIMIT,
        clock="wall",
    )


def _post_truth(op: str, R: Layout, args: Tuple[Any, ...], strict: bool = True) -> bool:
    """The post-condition of op(*args) for R, by brute force (the table of semantics.md).
    ``strict=False`` checks the function only (no shape compatibility or depth): what a
    symbolic result substituted must still satisfy (semantics §9)."""
    if op == "composition":
        if not strict:
            A, B = args
            vb = values(B)
            return R.size == B.size and all(x >= 0 for x in vb) and values(R) == [hat(A, x) for x in vb]
        return referee_composition(*args)(R)[0] == "ok"
    if op == "coalesce":
        return values(R) == values(args[0]) and (depth(R.shape) <= 1 or not strict)
    if op == "filter":
        return (
            set(values(R)) == set(values(args[0]))
            and (depth(R.shape) <= 1 or not strict)
            and not any(d == 0 and s > 1 for s, d in zip(leaves(R.shape), leaves(R.stride)))
        )
    if op == "right_inverse":
        vl = values(args[0])
        return all(0 <= r < len(vl) and vl[r] == i for i, r in enumerate(values(R)))
    if op == "left_inverse":
        vl, vr = values(args[0]), values(R)
        if len(set(vl)) != len(vl):  # not injective: L(R(L(i))) == L(i) (semantics.md)
            return all(0 <= x < len(vr) and 0 <= vr[x] < len(vl) and vl[vr[x]] == x for x in vl)
        return all(0 <= x < len(vr) and vr[x] == i for i, x in enumerate(vl))
    if op == "complement":
        L, M = args
        ls, ld = _covered_ok(L)
        vl = [ev(ls, ld, i) for i in range(prod(ls))]
        vc = values(R)
        if any(b <= a for a, b in zip(vc, vc[1:])):
            return False
        img = sorted(x + y for y in vc for x in vl)
        if img != list(range(len(img))):
            return False
        # M rounded up to a multiple of what L covers: the smallest such multiple >= M
        return len(img) >= M and len(img) - M < max(1, len(vl) and _cover(ls, ld))
    L, T = args
    try:
        if op == "logical_divide":
            C = lp.complement(T, L.size)
            exp = [hat(L, x) for x in values(lp.make_layout(T, C))]
            Z = lp.make_layout(T, C)
            return values(R) == exp and (not strict or compatible_shapes(Z.shape, R.shape))
        cos = 1 + sum((s - 1) * abs(d) for s, d in zip(leaves(T.shape), leaves(T.stride)))
        C = lp.complement(L, L.size * cos)
        exp = [a + hat(C, b) for b in values(T) for a in values(L)]
        return (
            values(R) == exp
            and R.rank == 2
            and (not strict or compatible_shapes(L.shape, R.shape[0]))
            and (not strict or compatible_shapes(T.shape, R.shape[1]))
        )
    except LayoutError:
        return False


def _cover(ls: List[int], ld: List[int]) -> int:
    return max((s * d for s, d in zip(ls, ld)), default=1)


def gen_verify_compatible(rng: random.Random) -> Case:
    from layoutproof import verify

    S = rand_shape(rng, 32, 3)
    T = rand_shape(rng, 32, 3) if rng.random() < 0.5 else lp.coalesce(Layout(S)).shape
    if rng.random() < 0.3:
        S, T = T, S
    truth = compatible_shapes(S, T)
    return Case(
        "verify.compatible",
        f"verify.compatible({S!r}, {T!r})",
        lambda: verify.compatible(S, T),
        lambda r: _judge_verdict(truth, r, lambda c: not truth),
        limit=SYMBOLIC_LIMIT,
        clock="wall",
    )


def gen_verify_admissible(rng: random.Random) -> Case:
    from layoutproof import verify

    op = rng.choice(["composition", "complement", "left_inverse", "logical_divide"])
    A = rand_layout(rng, 32, neg=0.05, max_depth=1)
    args: Tuple[Any, ...] = (A,) if op == "left_inverse" else (A, rand_layout(rng, 12, neg=0.05, max_depth=1))
    if op == "complement":
        args = (A, rng.randint(1, 64))
    try:
        getattr(lp, op)(*args)
        truth = True
    except InadmissibleError:
        truth = False
    except LayoutError:
        truth = False
    return Case(
        "verify.admissible",
        f"verify.admissible({op!r}, {', '.join(text(a) for a in args)})",
        lambda: verify.admissible(op, *args),
        lambda r: _judge_verdict(truth, r, lambda c: not truth),
        limit=SYMBOLIC_LIMIT,
        clock="wall",
    )


# ========================================================================== symbolic cases

_FACTS = [
    "M % 2 == 0",
    "M % 4 == 0",
    "M % 8 == 0",
    "M % 16 == 0",
    "M >= 2",
    "M >= 4",
    "M >= 8",
    "N % 2 == 0",
    "N % 4 == 0",
    "N >= 2",
    "N >= 3",
]


#: the wider facts and values of the bench run's symbolic cases (bench/fuzz.py --wide)
WIDE_FACTS = _FACTS + ["M % 3 == 0", "M >= 16", "N % 8 == 0", "M % 32 == 0", "N >= 4"]


def _admissible_values(
    facts: Sequence[str], rng: random.Random, k: int, hi: int = 32
) -> List[Dict[str, int]]:
    """Up to k assignments satisfying the facts: the smallest one (boundaries are where the
    bugs are) and random others, M <= hi, N <= 8 (the referee evaluates every point)."""
    pts = [{"M": m, "N": n} for m in range(1, hi + 1) for n in range(1, 9)]
    ok = [p for p in pts if _facts_hold(facts, p)]
    if not ok:
        return []
    first = ok[0]
    rest = ok[1:]
    rng.shuffle(rest)
    return [first, *rest[: k - 1]]


def _facts_hold(facts: Sequence[str], v: Dict[str, int]) -> bool:
    """The facts that mention only symbols of v, evaluated at v."""
    for f in facts:
        names = {"M", "N"} & set(f.replace("%", " ").replace("=", " ").replace(">", " ").split())
        if names <= set(v) and not eval(f, {}, dict(v)):  # noqa: S307 - our own fact text
            return False
    return True


def _sym_template(rng: random.Random, M: Any, N: Any) -> Layout:
    shapes = [
        ((M, N), (1, M)),
        ((M, N), (N, 1)),
        ((4, M), (M, 1)),
        ((M, 2), (1, M)),
        ((2 * M, N), (1, 2 * M)),
        ((M, 8), (8, 1)),
        ((3, M), (M, 1)),
        ((M,), (1,)),
        (M, 2),
        ((4 * M, N), (M, 8 * M)),
        ((8, 2 * N, M), (2 * M * N, M, 1)),
        ((M, (2, N)), (2, (1, 2 * M))),
        ((N, 4), (4, 1)),
    ]
    s, d = rng.choice(shapes)
    return Layout(s, d)


def _sym_random(rng: random.Random, M: Any, N: Any) -> Layout:
    """A random layout with symbolic extents and strides (compact or arbitrary)."""
    k = rng.randint(1, 3)
    shape = [rng.choice([2, 4, 8, 3, M, M, 2 * M, N, 4 * M]) for _i in range(k)]
    if rng.random() < 0.5:
        order = list(range(k))
        if rng.random() < 0.5:
            rng.shuffle(order)
        stride: List[Any] = [0] * k
        acc: Any = rng.choice([1, 1, 2])
        for j in order:
            stride[j] = acc
            acc = acc * shape[j]
    else:
        stride = [rng.choice([0, 1, 2, 4, 8, M, 2 * M, M * N, 8 * M]) for _i in range(k)]
    if k == 3 and rng.random() < 0.3:
        return Layout((shape[0], (shape[1], shape[2])), (stride[0], (stride[1], stride[2])))
    return Layout(tuple(shape), tuple(stride))


def _concrete_subs(x: Any, v: Dict[str, int]) -> Any:
    if isinstance(x, Layout):
        return (
            x.subs(**{k: val for k, val in v.items() if k in {str(s) for s in x.free_symbols}})
            if x.is_symbolic
            else x
        )
    return x


class Symbolic:
    """Symbolic operations under random facts, checked by substituting admissible values."""

    OPS = (
        "composition",
        "complement",
        "logical_divide",
        "logical_product",
        "left_inverse",
        "right_inverse",
        "coalesce",
        "zipped_divide",
        "postcondition",
        "identity",
        "filter",
        "blocked_product",
        "equal",
        "composition",
        "left_inverse",
        "complement",
        "admissible",
        "compatible",
    )

    def __init__(self, facts: Sequence[str] = (), hi: int = 32) -> None:
        facts = facts or _FACTS
        self.M, self.N = lp.symbols("M N")
        self.facts = list(facts)
        self.hi = hi

    def gen(self, rng: random.Random) -> Case:
        M, N = self.M, self.N
        facts = sorted(set(rng.sample(self.facts, rng.randint(0, 3))))
        op = rng.choice(self.OPS)
        A = _sym_template(rng, M, N) if rng.random() < 0.4 else _sym_random(rng, M, N)
        if op == "equal":
            return self._equal(rng, facts, A)
        if op == "admissible":
            return self._admissible(rng, facts, A)
        if op == "compatible":
            return self._compatible(rng, facts, A)
        if op == "composition" and rng.random() < 0.5:
            args: Tuple[Any, ...] = (
                A,
                _sym_random(rng, M, N) if rng.random() < 0.5 else rand_layout(rng, 16, 0.0, 1),
            )
        elif op in ("composition", "logical_divide", "zipped_divide"):
            B: Any = rng.choice(
                [
                    Layout(rng.choice([2, 4, 8]), rng.choice([1, 2])),
                    Layout(M, 1),
                    Layout((2, 4), (1, 8)),
                    (rng.choice([2, 4, 8]), rng.choice([2, 4])),
                    Layout(2, 2),
                    Layout(N, 1),
                ]
            )
            if op == "composition" and isinstance(B, tuple):
                B = Layout(B[0], 1)
            args = (A, B)
        elif op == "complement":
            args = (A, rng.choice([None, 64, 256, 8 * M * N, 4 * M]))
            if args[1] is None:
                args = (A,)
        elif op in ("logical_product", "blocked_product"):
            args = (A, rng.choice([Layout(M, 1), Layout(4, 1), Layout((2, 2), (2, 1)), Layout(N, 1)]))
        else:
            args = (A,)
        repro_args = ", ".join(str(a) if isinstance(a, Layout) else repr(a) for a in args)
        facts_s = ", ".join(repr(f) for f in facts)
        if op == "postcondition":
            return self._post(rng, facts, A, facts_s)
        if op == "identity":
            if rng.random() < 0.6:
                return self._identity_random(rng, facts, A)
            return self._identity(rng, facts, facts_s)
        f = getattr(lp, op)
        pts = _admissible_values(facts, rng, hi=self.hi, k=3)

        def call() -> Any:
            with lp.assuming(*facts):
                return within_deadline(lambda: f(*args))

        def concrete(v: Dict[str, int]) -> Any:
            return f(*[_concrete_subs(a, v) if isinstance(a, Layout) else _sub_expr(a, v) for a in args])

        def check(R: Any) -> Tuple[str, str]:
            for v in pts:
                try:
                    C = concrete(v)
                except InadmissibleError as e:
                    return "unsound", f"symbolic result {R} but at {v} the concrete op refuses: {e.condition}"
                except LayoutError:
                    continue
                Rs = _concrete_subs(R, v)
                if Rs.size > 50_000 or C.size > 50_000:
                    continue
                if Rs.size != C.size or values(Rs) != values(C):
                    note = ""
                    if op in _POST_OPS:
                        cargs = tuple(
                            _concrete_subs(a, v) if isinstance(a, Layout) else _sub_expr(a, v) for a in args
                        )
                        if op != "complement" or len(cargs) == 2:
                            ok = _post_truth(op, Rs, cargs)
                            note = (
                                " (its post-condition holds there)"
                                if ok
                                else " (its post-condition fails there)"
                            )
                    return "unsound", f"at {v}: {Rs} != concrete {C} (R = {R}){note}"
            return OK

        def judge(e: LayoutError) -> Tuple[str, str]:
            if isinstance(e, UndecidableConditionError):
                return undecided(e)
            if isinstance(e, InadmissibleError):
                asg = getattr(e, "assignment", None)
                if not any(_is_sym(a) for a in args):
                    return OK  # concrete inputs: the concrete refusal needs no assignment
                if not asg:
                    return "unsound", f"symbolic refusal ({e.condition}) without an assignment"
                v = {str(k): int(x) for k, x in asg.items()}
                if not _facts_hold(facts, v):
                    return "unsound", f"assignment {v} violates the facts {facts}"
                try:
                    concrete(v)
                except LayoutError:
                    return OK
                return "unsound", f"{e.condition}: e.g. {v}, but the concrete op succeeds there"
            return OK

        def undecided(e: UndecidableConditionError) -> Tuple[str, str]:
            # over-rejection when the answer does not depend on the condition: the result
            # under the condition is the concrete result at every small admissible value,
            # those that violate the condition included
            cond = e.condition
            if not isinstance(cond, str):
                return OK
            try:
                with lp.assuming(*facts, cond):
                    R1 = within_deadline(lambda: f(*args))
            except (LayoutError, HarnessTimeout):
                return OK
            grid = [p for p in _admissible_values(facts, random.Random(0), 10**6, hi=12) if p["N"] <= 4]
            violating = 0
            for v in grid[:40]:
                try:
                    holds = bool(eval(cond, {"ceiling": math.ceil, "floor": math.floor}, dict(v)))  # noqa: S307
                except Exception:  # noqa: BLE001 - a condition text we cannot evaluate: no verdict
                    return OK
                try:
                    C, R1s = concrete(v), _concrete_subs(R1, v)
                except LayoutError:
                    return OK
                if C.size > 4096 or R1s.size != C.size or values(R1s) != values(C):
                    return OK
                violating += not holds
            if violating:
                return "over_rejection", (
                    f"undecided {cond!r}, yet {R1} (the result under it) is the concrete result at "
                    f"every sampled value, {violating} of them violating it"
                )
            return OK

        return Case(
            f"symbolic.{op}",
            f"with assuming({facts_s}): {op}({repro_args})",
            call,
            check,
            judge,
            limit=SYMBOLIC_LIMIT,
            clock="wall",
        )

    def _compatible(self, rng: random.Random, facts: List[str], A: Layout) -> Case:
        """verify.compatible on symbolic shapes, judged by CuTe's compatibility of the shapes
        at admissible values (proved) and at the refutation's assignment (refuted)."""
        from layoutproof import verify

        M, N = self.M, self.N
        S = A.shape
        T = rng.choice(
            [
                (leaves(S)[0] * (leaves(S)[1] if len(leaves(S)) > 1 else 1),) if len(leaves(S)) else S,
                S,
                _sym_random(rng, M, N).shape,
                (2 * M, N),
                (M * N,),
                M * N,
            ]
        )
        pts = _admissible_values(facts, rng, hi=self.hi, k=4)

        def at(x: Any, v: Dict[str, int]) -> Any:
            return _sub_expr(x, v)

        def holds(v: Dict[str, int]) -> Optional[bool]:
            try:
                Sv, Tv = at(S, v), at(T, v)
            except (TypeError, ValueError):
                return None
            if any(e < 1 for e in leaves(Sv) + leaves(Tv)):
                return None
            return compatible_shapes(Sv, Tv)

        def check(r: Any) -> Tuple[str, str]:
            if r.status in ("proved", "checked"):
                for v in pts:
                    if holds(v) is False:
                        return "unsound", f"{r.status}, but at {v} the shapes are not compatible"
            if r.status == "refuted" and (_is_sym(S) or _is_sym(T)):
                c = r.counterexample
                if c is None or not c.assignment:
                    return "unsound", "symbolic refutation without an assignment"
                v = {str(k): int(x) for k, x in c.assignment.items()}
                v.setdefault("M", 1)
                v.setdefault("N", 1)
                if holds(v) is True:
                    return "unsound", f"refuted at {v}, but the shapes are compatible there"
            return OK

        return Case(
            "symbolic.verify.compatible",
            f"verify.compatible({S}, {T}, assume={facts!r})",
            lambda: verify.compatible(S, T, assume=list(facts)),
            check,
            limit=SYMBOLIC_LIMIT,
            clock="wall",
        )

    def _admissible(self, rng: random.Random, facts: List[str], A: Layout) -> Case:
        """verify.admissible(op, A, ...) under the facts, judged by the concrete operation at
        small admissible values (proved) and at the refutation's assignment (refuted)."""
        from layoutproof import verify

        op = rng.choice(["composition", "complement", "left_inverse", "logical_divide", "right_inverse"])
        extra: Tuple[Any, ...] = ()
        if op in ("composition", "logical_divide"):
            extra = (
                rng.choice(
                    [Layout(2, 1), Layout(4, 2), Layout(3, 1), Layout((2, 2), (1, 4)), Layout(self.M, 1)]
                ),
            )
        elif op == "complement":
            extra = (rng.choice([64, 4 * self.M]),)
        args = (A, *extra)
        f = getattr(lp, op)
        pts = _admissible_values(facts, rng, hi=self.hi, k=4)

        def concrete_ok(v: Dict[str, int]) -> Optional[bool]:
            try:
                cargs = [_concrete_subs(a, v) if isinstance(a, Layout) else _sub_expr(a, v) for a in args]
            except LayoutError:
                return None
            try:
                f(*cargs)
                return True
            except InadmissibleError:
                return False
            except LayoutError:
                return None

        def check(r: Any) -> Tuple[str, str]:
            if r.status in ("proved", "checked"):
                for v in pts:
                    if (
                        r.status == "checked"
                        and r.bounds
                        and not all(lo <= v.get(n, lo) <= hi for n, (lo, hi) in r.bounds.items())
                    ):
                        continue
                    if concrete_ok(v) is False:
                        return "unsound", f"{r.status}, but at {v} the concrete {op} is inadmissible"
            if r.status == "refuted" and any(_is_sym(a) for a in args):
                c = r.counterexample
                if c is None or not c.assignment:
                    return "unsound", f"refuted without an assignment ({r.reason or r.condition})"
                v = {str(k): int(x) for k, x in c.assignment.items()}
                v.setdefault("M", 1)
                v.setdefault("N", 1)
                if concrete_ok(v) is True:
                    return "unsound", f"refuted at {v}, but the concrete {op} is admissible there"
            return OK

        shown = ", ".join(str(a) if isinstance(a, Layout) else repr(a) for a in args)
        return Case(
            f"symbolic.verify.admissible[{op}]",
            f"verify.admissible({op!r}, {shown}, assume={facts!r})",
            lambda: verify.admissible(op, *args, assume=list(facts)),
            check,
            limit=SYMBOLIC_LIMIT,
            clock="wall",
        )

    def _equal(self, rng: random.Random, facts: List[str], A: Layout) -> Case:
        from layoutproof import verify

        ls, ld = list(leaves(A.shape)), list(leaves(A.stride))
        k = rng.random()
        if k < 0.4:
            try:
                with lp.assuming(*facts):
                    B = lp.coalesce(A)
            except LayoutError:
                B = A
        elif k < 0.6:
            B = Layout(tuple(ls), tuple(ld))
        else:
            j = rng.randrange(len(ld))
            ld[j] = ld[j] + rng.choice([1, -1, self.M, 2])
            B = Layout(tuple(ls), tuple(ld))
        pts = _admissible_values(facts, rng, hi=self.hi, k=4)

        def differs(v: Dict[str, int]) -> Optional[bool]:
            try:
                a, b = _concrete_subs(A, v), _concrete_subs(B, v)
            except LayoutError:
                return None
            if a.size > 50_000 or b.size > 50_000:
                return None
            return not _same_function(a, b)[0]

        def check(r: Any) -> Tuple[str, str]:
            if r.status in ("proved", "checked"):
                for v in pts:
                    if (
                        r.status == "checked"
                        and r.bounds
                        and not all(lo <= v.get(n, lo) <= hi for n, (lo, hi) in r.bounds.items())
                    ):
                        continue
                    if differs(v):
                        return "unsound", f"{r.status}, but at {v} the two differ"
            if r.status == "refuted":
                c = r.counterexample
                if not (A.is_symbolic or B.is_symbolic):
                    # concrete layouts: the refutation needs a coordinate, not an assignment
                    return OK if differs({}) else ("unsound", f"refuted ({c}) but the two are equal")
                if c is None or not c.assignment:
                    return "unsound", "symbolic refutation without an assignment"
                v = {str(n): int(x) for n, x in c.assignment.items()}
                if not _facts_hold(facts, v):
                    return "unsound", f"assignment {v} violates the facts"
                if differs(v) is False:
                    return "unsound", f"refuted at {v}, but the two agree there"
            return OK

        return Case(
            "symbolic.verify.equal",
            f"verify.equal({A}, {B}, assume={facts!r})",
            lambda: verify.equal(A, B, assume=list(facts)),
            check,
            limit=SYMBOLIC_LIMIT,
            clock="wall",
        )

    def _post(self, rng: random.Random, facts: List[str], A: Layout, facts_s: str) -> Case:
        from layoutproof import verify

        op = rng.choice(["coalesce", "left_inverse", "logical_product", "composition", "right_inverse"])
        B = Layout(rng.choice([2, 4]), 1) if op == "composition" else Layout(self.M, 1)
        args = (A, B) if op in ("logical_product", "composition") else (A,)
        rs = ", ".join(str(a) for a in args)

        mutate, pick, delta = rng.random() < 0.5, rng.random(), rng.choice([1, 2, self.M])

        def call() -> Any:
            with lp.assuming(*facts):
                try:
                    R = within_deadline(lambda: getattr(lp, op)(*args))
                except LayoutError:
                    return None
                if mutate:  # a wrong result (usually): proving it would be unsound
                    fs, fd = list(leaves(R.shape)), list(leaves(R.stride))
                    fd[int(pick * len(fd))] += delta
                    try:
                        R = Layout(tuple(fs), tuple(fd))
                    except LayoutError:
                        pass
                return R, verify.postcondition(op, R, *args)

        pts = _admissible_values(facts, rng, hi=self.hi, k=3)

        def check(res: Any) -> Tuple[str, str]:
            if res is None:
                return OK
            R, r = res
            if r.status in ("proved", "checked"):
                for v in pts:
                    if (
                        r.status == "checked"
                        and r.bounds
                        and not all(lo <= v.get(k, lo) <= hi for k, (lo, hi) in r.bounds.items())
                    ):
                        continue
                    try:
                        cargs = tuple(_concrete_subs(a, v) for a in args)
                        Rs = _concrete_subs(R, v)
                    except LayoutError:
                        continue
                    if Rs.size > 20_000 or any(a.size > 20_000 for a in cargs):
                        continue
                    if not _post_truth(op, Rs, cargs, strict=False):
                        return "unsound", f"{r.status} but at {v} the post-condition fails for {Rs}"
            if r.status == "refuted":
                c = r.counterexample
                symbolic = R.is_symbolic or any(isinstance(a, Layout) and a.is_symbolic for a in args)
                if symbolic and (c is None or not c.assignment):
                    return "unsound", "symbolic refutation without an assignment"
                if symbolic:
                    v = {str(k): int(x) for k, x in c.assignment.items()}
                    v.setdefault("M", 1)
                    v.setdefault("N", 1)
                    try:
                        cargs = tuple(_concrete_subs(a, v) for a in args)
                        Rs = _concrete_subs(R, v)
                    except LayoutError:
                        return OK
                    if Rs.size <= 20_000 and all(a.size <= 20_000 for a in cargs):
                        if _post_truth(op, Rs, cargs, strict=True):
                            return "unsound", f"refuted at {v}, but the post-condition holds there for {Rs}"
            return OK

        return Case(
            f"symbolic.postcondition[{op}]",
            f"with assuming({facts_s}): verify.postcondition({op!r}, {op}({rs}), {rs})",
            call,
            check,
            limit=2 * SYMBOLIC_LIMIT,  # two budgeted calls: the operation, then its post-condition
            clock="wall",
        )

    def _identity_random(self, rng: random.Random, facts: List[str], A: Layout) -> Case:
        """verify.identity(op(A), R') with R' the library's own symbolic result (a true claim
        unless the library is wrong) or that result with one stride changed."""
        from layoutproof import verify

        M = self.M
        op = rng.choice(
            ["coalesce", "composition", "logical_divide", "complement", "right_inverse", "filter"]
        )
        extra: Tuple[Any, ...] = ()
        if op in ("composition", "logical_divide"):
            extra = (rng.choice([Layout(2, 1), Layout(4, 2), Layout((2, 2), (1, 4)), Layout(8, 1)]),)
        f = getattr(lp, op)
        try:
            with lp.assuming(*facts):
                R = within_deadline(lambda: f(A, *extra))
        except (LayoutError, HarnessTimeout):
            R = None
        mutated = False
        if R is not None and rng.random() < 0.5:
            fs, fd = list(leaves(R.shape)), list(leaves(R.stride))
            j = rng.randrange(len(fd))
            fd[j] = fd[j] + rng.choice([1, M, 2])
            try:
                with lp.assuming(*facts):
                    R = Layout(tuple(fs), tuple(fd))
                mutated = True
            except LayoutError:
                pass
        if R is None:
            R = Layout(M, 1)

        def sub(L: Layout, m: Any, n: Any) -> Layout:
            names = {str(x) for x in L.free_symbols}
            kw = {k: v for k, v in (("M", m), ("N", n)) if k in names}
            return L.subs(**kw) if kw else L

        def lhs(M: Any, N: Any) -> Layout:
            return f(sub(A, M, N), *extra)

        def rhs(M: Any, N: Any) -> Layout:
            return sub(R, M, N)

        pts = _admissible_values(facts, rng, hi=self.hi, k=4)

        def concrete_differs(v: Dict[str, int]) -> Optional[bool]:
            try:
                L1 = lhs(v["M"], v["N"])
            except LayoutError:
                return True  # the left side is inadmissible there: the claim fails there
            try:
                L2 = rhs(v["M"], v["N"])
            except LayoutError:
                return True
            if L1.size > 50_000 or L2.size > 50_000:
                return None
            return not _same_function(L1, L2)[0]

        def check(r: Any) -> Tuple[str, str]:
            if r.status in ("proved", "checked"):
                for v in pts:
                    if (
                        r.status == "checked"
                        and r.bounds
                        and not all(lo <= v.get(n, lo) <= hi for n, (lo, hi) in r.bounds.items())
                    ):
                        continue
                    if concrete_differs(v):
                        return "unsound", f"{r.status}, but at {v} the concrete sides differ"
            if r.status == "refuted":
                c = r.counterexample
                if c is None or not c.assignment:
                    return "unsound", f"refuted without an assignment ({r.reason or c})"
                v = {str(k): int(x) for k, x in c.assignment.items()}
                v.setdefault("M", 1)
                v.setdefault("N", 1)
                if concrete_differs(v) is False:
                    return "unsound", f"refuted at {v}, but the concrete sides agree there"
            return OK

        ex = "".join(f", {text(e)}" for e in extra)
        return Case(
            "symbolic.identity(random)",
            f"verify.identity(lambda M, N: {op}({A}{ex}), lambda M, N: {R}, assume={facts!r})"
            + (" [mutated]" if mutated else ""),
            lambda: verify.identity(lhs, rhs, "M N", assume=list(facts)),
            check,
            limit=SYMBOLIC_LIMIT,
            clock="wall",
        )

    def _identity(self, rng: random.Random, facts: List[str], facts_s: str) -> Case:
        from layoutproof import verify

        cands = [
            ("lambda M: composition(Layout((3, M), (M, 1)), Layout(2, 2))", "lambda M: Layout(2, 2*M)"),
            ("lambda M, N: coalesce(Layout((M, N), (1, M)))", "lambda M, N: Layout(M * N, 1)"),
            ("lambda M: Layout((M, 2), (2, 1))", "lambda M: Layout(2 * M, 1)"),
            ("lambda M: Layout((M, 2), (1, M))", "lambda M: Layout(2 * M, 1)"),
            ("lambda M: composition(Layout((4, M), (M, 1)), Layout(4, M))", "lambda M: Layout(4, 1)"),
            ("lambda M: composition(Layout((M, 4), (1, M)), Layout(2, M))", "lambda M: Layout(2, M)"),
            ("lambda M: right_inverse(Layout((M, 2), (2, 1)))", "lambda M: Layout((2, M), (M, 1))"),
            ("lambda M: left_inverse(Layout(M, 2))", "lambda M: Layout((2, M), (0, 1))"),
            ("lambda M: logical_divide(Layout(8 * M, 1), 8)", "lambda M: Layout((8, M), (1, 8))"),
            ("lambda M, N: complement(Layout(M, N))", "lambda M, N: Layout(N, M)"),
        ]
        ls, rs = rng.choice(cands)
        env = {
            n: getattr(lp, n)
            for n in (
                "Layout",
                "composition",
                "coalesce",
                "right_inverse",
                "left_inverse",
                "logical_divide",
                "complement",
            )
        }
        lhs, rhs = eval(ls, env), eval(rs, env)  # noqa: S307 - our own text
        names = lhs.__code__.co_varnames[: lhs.__code__.co_argcount]
        pts = _admissible_values(facts, rng, hi=self.hi, k=4)

        def concrete_eq(v: Dict[str, int]) -> Optional[bool]:
            a = [v[n] for n in names]
            try:
                L1 = lhs(*a)
            except LayoutError:
                L1 = None
            try:
                L2 = rhs(*a)
            except LayoutError:
                L2 = None
            if L1 is None or L2 is None:
                return None if (L1 is None and L2 is None) else False
            if L1.size > 50_000 or L2.size > 50_000:
                return None
            return _same_function(L1, L2)[0]

        def call() -> Any:
            return verify.identity(lhs, rhs, assume=list(facts))

        def check(r: Any) -> Tuple[str, str]:
            if r.status == "proved":
                for v in pts:
                    if concrete_eq(v) is False:
                        return "unsound", f"proved, but at {v} the concrete sides differ"
            if r.status == "refuted":
                c = r.counterexample
                if c is None or not c.assignment:
                    return "unsound", f"refuted without an assignment ({r.reason or c})"
                v = {str(k): int(x) for k, x in c.assignment.items()}
                if any(n not in v for n in names):
                    return "unsound", f"refuted with a partial assignment {v}"
                if concrete_eq(v) is not False:
                    return "unsound", f"refuted at {v}, but the concrete sides agree there"
            return OK

        return Case(
            "symbolic.identity",
            f"verify.identity({ls}, {rs}, assume={facts!r})",
            call,
            check,
            limit=SYMBOLIC_LIMIT,
            clock="wall",
        )


def _is_sym(x: Any) -> bool:
    if isinstance(x, Layout):
        return x.is_symbolic
    if isinstance(x, tuple):
        return any(_is_sym(y) for y in x)
    return bool(getattr(x, "free_symbols", None))


def _sub_expr(x: Any, v: Dict[str, int]) -> Any:
    if hasattr(x, "free_symbols") and not isinstance(x, Layout):
        return int(x.subs({s: v[str(s)] for s in x.free_symbols}))
    if isinstance(x, tuple):
        return tuple(_sub_expr(y, v) for y in x)
    return x


def gen_hostile_assumptions(rng: random.Random) -> Case:
    bad = rng.choice(
        [
            "M % 4",
            "M",
            "M % 0 == 0",
            "garbage",
            "M +",
            "",
            "M == M == M",
            "1",
            "True",
            "M % 4 == 0 and",
            "M // 0 >= 1",
            "__import__('os')",
            "M ** 99999999 > 1",
            "M >= 2**200",
            "x" * 300,
            "M % -2 == 0",
        ]
    )
    M = lp.symbols("M")
    as_ctx = rng.random() < 0.5
    if as_ctx:

        def call() -> Any:
            with lp.assuming(bad):
                return lp.coalesce(Layout((M, 2), (1, M)))

        repro = f"with assuming({bad!r}): coalesce(Layout((M, 2), (1, M)))"
    else:
        from layoutproof import verify

        def call() -> Any:
            return verify.equal(Layout((M, 2), (1, M)), Layout(2 * M, 1), assume=bad)

        repro = f"verify.equal(Layout((M, 2), (1, M)), Layout(2*M, 1), assume={bad!r})"
    return Case(
        "assuming" if as_ctx else "verify.equal(assume=)", repro, call, limit=SYMBOLIC_LIMIT, clock="wall"
    )


def gen_hostile_symbolic(rng: random.Random) -> Case:
    """Symbolic leaves that are not positive integers, foreign symbols, bad substitutions."""
    import sympy

    M, N = lp.symbols("M N")
    x = sympy.Symbol("x")
    leaf = rng.choice(
        [
            M - 4,
            -M,
            M / 2,
            x,
            sympy.Rational(1, 2),
            sympy.oo,
            sympy.nan,
            sympy.I,
            M**2,
            sympy.Integer(4),
            M - M,
            sympy.Mod(M, 4),
            sympy.floor(M / 3),
            M * N,
            2**M,
        ]
    )
    where = rng.choice(["shape", "stride", "subs", "op"])
    text_ = f"{where} with {leaf}"
    if where == "shape":
        call = lambda: _exercise(Layout((leaf, 2), (1, 2)))  # noqa: E731
    elif where == "stride":
        call = lambda: _exercise(Layout((M, 2), (leaf, 1)))  # noqa: E731
    elif where == "subs":
        val = rng.choice([0, -2, 2.5, "3", None, True, 2**70, x, sympy.Rational(3, 2)])
        text_ = f"Layout((M, N), (1, M)).subs(M={val!r})"
        call = lambda: _exercise(Layout((M, N), (1, M)).subs(M=val))  # noqa: E731
    else:
        op = rng.choice(["coalesce", "complement", "left_inverse", "right_inverse", "logical_divide"])
        f = getattr(lp, op)

        def call() -> Any:
            L = Layout((leaf, M), (1, leaf))
            return within_deadline(lambda: f(L, 4) if op == "logical_divide" else f(L))

        text_ = f"{op}(Layout(({leaf}, M), (1, {leaf})))"
    return Case("symbolic.hostile", text_, call, limit=SYMBOLIC_LIMIT, clock="wall")


# ================================================================================ the run


def gen_tuple_tiler(rng: random.Random) -> Case:
    """composition / logical_divide by a tuple tiler: mode i of the result is A's mode i
    composed with (divided by) the tiler's mode i; modes the tiler does not cover are
    dropped (composition, semantics §2.1) or kept (divide)."""
    r = rng.randint(1, 3)
    modes = [rand_layout(rng, 12, neg=0.03, max_depth=1) for _i in range(r)]
    A = Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes))
    k = rng.randint(1, r)
    tiler = tuple(
        rand_layout(rng, 8, neg=0.03, max_depth=1) if rng.random() < 0.8 else lp._ for _i in range(k)
    )
    name = rng.choice(["composition", "logical_divide"])
    f = getattr(lp, name)

    def mode_ref(i: int) -> Callable[[Any], Tuple[str, str]]:
        Ai, Ti = modes[i], tiler[i]
        if name == "composition":
            return referee_composition(Ai, Ti)

        def check(Ri: Layout) -> Tuple[str, str]:
            C = lp.complement(Ti, Ai.size)
            exp = [hat(Ai, x) for x in values(lp.make_layout(Ti, C))]
            return OK if values(Ri) == exp else ("wrong", f"mode {i}: {Ri} != A_{i} o (T_{i}, C)")

        return check

    def check(R: Any) -> Tuple[str, str]:
        bad = _check_layout(R)
        if bad:
            return "wrong", bad
        want_rank = k if name == "composition" else r
        if R.rank != want_rank:
            return "wrong", f"rank {R.rank} != {want_rank}"
        for i in range(want_rank):
            Ri = Layout(R.shape[i], R.stride[i])
            if i >= k or tiler[i] is lp._:
                if values(Ri) != values(modes[i]):
                    return "wrong", f"mode {i} (not tiled) {Ri} != A's mode {modes[i]}"
                continue
            cls, det = mode_ref(i)(Ri)
            if cls != "ok":
                return cls, f"mode {i}: {det}"
        return OK

    def judge(e: LayoutError) -> Tuple[str, str]:
        if not isinstance(e, InadmissibleError):
            return OK
        for i in range(k):
            if tiler[i] is lp._:
                continue
            Ti = tiler[i]
            if name == "logical_divide":
                try:
                    Ti = lp.make_layout(Ti, lp.complement(Ti, modes[i].size))
                except LayoutError:
                    return OK
            if composition_exists(modes[i], Ti) is None:
                return OK
        return "over_rejection", f"{e.condition}: yet every mode has a correct result"

    tt = "(" + ", ".join("_" if t is lp._ else text(t) for t in tiler) + ",)"
    return Case(f"{name}(tuple tiler)", f"{name}({text(A)}, {tt})", lambda: f(A, tiler), check, judge)


@functools.cache
def _huge_layouts() -> Tuple[Tuple[str, Layout], ...]:
    texts = (
        "Layout((2,) * 64)",
        "Layout((2,) * 200)",
        "Layout((2,) * 2000)",
        "Layout((2,) * 10000)",
        "Layout((2**62, 2**62))",
        "Layout(2**70, 1)",
        "Layout((2**31, 2**31), (1, 2**31))",
        "Layout((3,) * 40)",
        "Layout((2**40, 3), (3, 1))",
        "Layout(((2,) * 30, (2,) * 30))",
    )
    return tuple((t, eval(t, {"Layout": Layout})) for t in texts)  # noqa: S307 - our own text


def gen_slice(rng: random.Random) -> Case:
    """slice_and_offset / L(crd with _): off + sub(i) is L at the coordinate whose kept modes
    take the digits of i (colexicographic over the kept modes); out-of-range fixed
    coordinates must be refused."""
    r = rng.randint(1, 3)
    modes = [rand_layout(rng, 12, neg=0.1, max_depth=1) for _i in range(r)]
    L = Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes))
    crd: List[Any] = []
    bad = rng.random() < 0.15
    for m in modes:
        if rng.random() < 0.5:
            crd.append(lp._)
        else:
            crd.append(rng.randrange(m.size))
    fixed = [j for j, c in enumerate(crd) if c is not lp._]
    if bad and fixed:
        j = rng.choice(fixed)
        crd[j] = rng.choice([modes[j].size, -1, modes[j].size + 3])
    else:
        bad = False
    crd_t = tuple(crd)
    kept = [j for j, c in enumerate(crd) if c is lp._]

    def check(res: Any) -> Tuple[str, str]:
        if bad:
            return "invalid_accepted", f"out-of-range coordinate {crd_t} sliced: {res}"
        sub, off = res
        n = prod([modes[j].size for j in kept])
        if sub.size != n:
            return "wrong", f"sub-layout size {sub.size} != {n}"
        base = sum(values(modes[j])[crd[j]] for j in fixed)
        vs = values(sub)
        for i in range(n):
            x, tot = i, base
            for j in kept:
                tot += values(modes[j])[x % modes[j].size]
                x //= modes[j].size
            if off + vs[i] != tot:
                return "wrong", f"offset {off} + sub({i}) = {off + vs[i]} != L at that coordinate = {tot}"
        return OK

    return Case(
        "slice_and_offset",
        f"slice_and_offset({tuple('_' if c is lp._ else c for c in crd)}, {text(L)})",
        lambda: lp.slice_and_offset(crd_t, L),
        check,
    )


def gen_huge(rng: random.Random) -> Case:
    """Huge or very long layouts: a result fast, or a LayoutError naming the limit."""
    table = _huge_layouts()
    # the very long ones (2,000 and 10,000 modes) are slow to build and use: 1 case in 10
    desc, L = rng.choice(table[2:4]) if rng.random() < 0.1 else rng.choice(table[:2] + table[4:])
    op = rng.choice(
        [
            "compose_rev",
            "compose_odd",
            "complement_big",
            "upcast",
            "downcast",
            "swizzle",
            "tile_to_shape",
            "eval_all",
            "coalesce",
            "complement",
            "right_inverse",
            "left_inverse",
            "compose",
            "divide",
            "str",
            "cosize",
            "filter",
            "call",
            "product",
        ]
    )
    small = Layout(4, 2)
    calls = {
        "eval_all": lambda: L.eval_all(),
        "coalesce": lambda: lp.coalesce(L),
        "complement": lambda: lp.complement(L),
        "right_inverse": lambda: lp.right_inverse(L),
        "left_inverse": lambda: lp.left_inverse(L),
        "compose": lambda: lp.composition(L, small),
        "divide": lambda: lp.logical_divide(L, small),
        "str": lambda: str(L),
        "cosize": lambda: L.cosize,
        "filter": lambda: lp.filter(L),
        "call": lambda: L(L.size - 1),
        "product": lambda: lp.logical_product(small, L),
        "compose_rev": lambda: lp.composition(Layout((4, 6), (1, 5)), L),
        "compose_odd": lambda: lp.composition(L, Layout((3, 2**20), (5, 7))),
        "complement_big": lambda: lp.complement(Layout(4, 2), L.size),
        "upcast": lambda: lp.upcast(L, 2),
        "downcast": lambda: lp.downcast(L, 3),
        "swizzle": lambda: lp.composition(L, lp.Swizzle(3, 3, 3)),
        "tile_to_shape": lambda: lp.tile_to_shape(Layout((2, 2)), (L.size, 2)),
    }
    return Case(f"huge.{op}", f"{op}({desc})", calls[op])


def gen_tensor(rng: random.Random) -> Case:
    """Tensor functions with a valid tensor and hostile other arguments."""
    import numpy as np

    n = rng.choice([8, 12, 16])
    t = lp.make_tensor(np.arange(n, dtype=np.int64), Layout((n // 4, 4)))
    atoms = _atoms()
    other = rng.choice(atoms + [((2, 2), 3), (2, 2), Layout((2, 2)), t, 3.5, "x"])
    name, call = rng.choice(
        [
            ("fill", lambda: lp.fill(t, other)),
            ("clear", lambda: lp.clear(other)),
            ("copy", lambda: lp.copy(t, other)),
            ("copy", lambda: lp.copy(other, t)),
            ("local_tile", lambda: lp.local_tile(t, other, (0, 0))),
            ("local_tile", lambda: lp.local_tile(t, (2, 2), other)),
            ("local_partition", lambda: lp.local_partition(t, other, 0)),
            ("local_partition", lambda: lp.local_partition(t, Layout((2, 2)), other)),
            ("inner_partition", lambda: lp.inner_partition(t, other, (0, 0))),
            ("outer_partition", lambda: lp.outer_partition(t, other, (0, 0))),
            ("make_tensor", lambda: lp.make_tensor(other)),
            ("make_tensor", lambda: lp.make_tensor(np.arange(n), other)),
            ("make_identity_tensor", lambda: lp.make_identity_tensor(other)),
            ("Tensor.__getitem__", lambda: t[other]),
            ("Tensor.__setitem__", lambda: t.__setitem__(other, 1)),
            ("Tensor.__call__", lambda: t(other)),
            ("gemm", lambda: lp.gemm(t, t, other)),
        ]
    )
    return Case(f"tensor.{name}", f"{name}(<tensor {n // 4}x4>, {_short(other)})", call)


_CLI_BAD_ASSUME = ["M % 4", "M", "M % 0 == 0", "garbage", "M +", "", "1", "__import__('os')", "M >= 2 >"]
_CLI_STMTS = [
    "composition((M,N):(N,1), 4:1) == 4:N",
    "(M,2):(1,M) == (2*M):(1)",
    "admissible complement((2,2):(1,3), 16)",
    "(4,2):(1,4) == 8:1",
    "composition((3,M):(M,1), 2:2) == 2:(2*M)",
    "(4,2):(1,4) ==",
    "== 8:1",
    "garbage",
    "(4,2):(1,4) == 8:1 == 8:1",
    "admissible",
    "admissible nothing(4:1)",
    "((((4))))):1 == 4:1",
    "(0,2):(1,0) == 2:1",
    "__import__('os').system('true') == 1:0",
    "(M,2):(1,M) == (2,M):(M,1)",
]


def gen_cli(rng: random.Random) -> Case:
    """The CLI's check / eval with hostile statements and assumptions: an exit status,
    never a traceback; malformed input is status 2, never 1 (= refuted)."""
    from layoutproof.cli import main

    kind = rng.random()
    if kind < 0.5:
        bad = rng.choice(_CLI_BAD_ASSUME)
        argv = ["check", rng.choice(_CLI_STMTS[:5]), "--assume", bad]
        expect2 = True
    elif kind < 0.85:
        stmt = rng.choice(_CLI_STMTS)
        argv = ["check", stmt]
        expect2 = _CLI_STMTS.index(stmt) >= 5 and "(M,2)" not in stmt
    elif kind < 0.9:
        argv = ["gemm", "--emit", rng.choice(["/missing/dir/k.cu", "/proc/no/such/k.cu"])]
        expect2 = True
    else:
        argv = [
            "eval",
            rng.choice(
                [
                    "composition(4:1, 2:2)",
                    "garbage(",
                    "complement((2,2):(1,3), 16)",
                    "left_inverse((2,2):(2,3))",
                    "(4,",
                    "4:1" * 200,
                    "1/0",
                ]
            ),
        ]
        expect2 = None

    def call() -> Any:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code
        return code, err.getvalue()

    def check(res: Any) -> Tuple[str, str]:
        code, err = res
        if "Traceback" in err:
            return "untyped", f"a traceback on stderr (exit {code}): {err.strip().splitlines()[-1][:160]}"
        if code not in (0, 1, 2, 3):
            return "wrong", f"exit status {code!r}"
        if expect2 and code != 2:
            return ("invalid_accepted" if code in (0, 1, 3) else "wrong"), f"malformed input gave exit {code}"
        return OK

    return Case(
        "cli",
        "layoutproof " + " ".join(repr(a) for a in argv),
        call,
        check,
        limit=SYMBOLIC_LIMIT,
        clock="wall",
    )


CONCRETE_GENS: Dict[str, Callable[[random.Random], Case]] = {
    "slice": gen_slice,
    "tuple_tiler": gen_tuple_tiler,
    "huge": gen_huge,
    "tensor": gen_tensor,
    "composition": gen_composition,
    "complement": gen_complement,
    "right_inverse": gen_right_inverse,
    "left_inverse": gen_left_inverse,
    "coalesce": gen_coalesce,
    "filter": gen_filter,
    "divide": gen_divide,
    "product": gen_product,
    "downcast": gen_downcast,
    "upcast": gen_upcast,
    "swizzle": gen_swizzle_composition,
    "eval": gen_eval,
}


def gen_verify_equal_large(rng: random.Random) -> Case:
    """Domains past verify's max_cases (4096): a difference only in the last mode's upper
    coordinates must not be proved away."""
    from layoutproof import verify

    a, b = rng.choice([(4096, 2), (2048, 3), (1024, 5), (5000, 2)])
    A = Layout((a, b), (1, a))
    d = rng.choice([a, a, a + 1, a - 1, 0])
    B = Layout((a, b), (1, d))
    same = d == a
    va, vb = values(A), values(B)

    def reproduces(c: Any) -> bool:
        return c is not None and (c.coordinate is None or va[c.coordinate] != vb[c.coordinate])

    return Case(
        "verify.equal(large)",
        f"verify.equal({text(A)}, {text(B)})",
        lambda: verify.equal(A, B),
        lambda r: _judge_verdict(same, r, reproduces),
        limit=SYMBOLIC_LIMIT,
        clock="wall",
    )


VERIFY_GENS: Dict[str, Callable[[random.Random], Case]] = {
    "verify.equal_large": gen_verify_equal_large,
    "verify.equal": gen_verify_equal,
    "verify.function": gen_verify_function,
    "verify.postcondition": gen_verify_postcondition,
    "verify.compatible": gen_verify_compatible,
    "verify.admissible": gen_verify_admissible,
}


@dataclass
class Mix:
    """Fractions of the run: concrete algebra (with referees), hostile input, verify on
    concrete layouts, and symbolic cases (the slow ones, as a count)."""

    concrete: float = 0.62
    hostile: float = 0.30
    verify: float = 0.08
    symbolic: int = 40
    assumptions: int = 20
    cli: int = 20
    #: symbolic facts drawn from WIDE_FACTS and values up to M = 64 (else _FACTS, M <= 32)
    wide: bool = False


@dataclass
class Report:
    seed: int
    outcomes: List[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def by_class(self) -> Counter:
        return Counter(o.cls for o in self.outcomes)

    def bad(self) -> List[Outcome]:
        return [o for o in self.outcomes if o.cls in BAD]

    def table(self) -> str:
        funcs: Dict[str, Counter] = defaultdict(Counter)
        for o in self.outcomes:
            funcs[o.func][o.cls] += 1
        cols = list(CLASSES)
        head = f"{'function':34s} {'cases':>7s} " + " ".join(f"{c[:9]:>9s}" for c in cols)
        lines = [head, "-" * len(head)]
        for fn in sorted(funcs):
            c = funcs[fn]
            lines.append(f"{fn[:34]:34s} {sum(c.values()):7d} " + " ".join(f"{c[k]:9d}" for k in cols))
        tot = self.by_class()
        lines.append("-" * len(head))
        lines.append(f"{'total':34s} {sum(tot.values()):7d} " + " ".join(f"{tot[k]:9d}" for k in cols))
        return "\n".join(lines)


def _safe(gen: Callable[[random.Random], Case], rng: random.Random, what: str) -> Case:
    """A generator's case; an exception while generating (the library raising on the
    inputs being built) becomes a case that raises it, classified like any other."""
    try:
        return gen(rng)
    except Exception as e:  # noqa: BLE001
        err = e

        def reraise() -> Any:
            raise err

        return Case(
            f"generating {what}", f"{what} (while generating: {type(e).__name__}: {str(e)[:120]})", reraise
        )


def generate(seed: int, n: int, mix: Optional[Mix] = None) -> Iterator[Case]:
    """The seeded stream of ``n`` cases (symbolic ones first, then the rest interleaved)."""
    mix = mix or Mix()
    rng = random.Random(seed)
    hostile = Hostile()
    sym = Symbolic(WIDE_FACTS, 64) if mix.wide else Symbolic()
    n_sym = min(n, mix.symbolic)
    n_ass = min(n - n_sym, mix.assumptions)
    for k in range(n_sym):
        yield _safe(sym.gen, random.Random(f"{seed}-sym-{k}"), "symbolic")
    for k in range(n_ass):
        g = gen_hostile_assumptions if k % 2 == 0 else gen_hostile_symbolic
        yield _safe(g, random.Random(f"{seed}-ass-{k}"), g.__name__)
    n_cli = min(n - n_sym - n_ass, mix.cli)
    for k in range(n_cli):
        yield _safe(gen_cli, random.Random(f"{seed}-cli-{k}"), "cli")
    rest = n - n_sym - n_ass - n_cli
    cg, vg = list(CONCRETE_GENS.values()), list(VERIFY_GENS.values())
    tot = mix.concrete + mix.hostile + mix.verify
    for k in range(rest):
        r = rng.random() * tot
        crng = random.Random(f"{seed}-{k}")
        if r < mix.concrete:
            g = crng.choice(cg)
        elif r < mix.concrete + mix.hostile:
            g = hostile.gen
        else:
            g = crng.choice(vg)
        yield _safe(g, crng, getattr(g, "__name__", "case"))


def run(seed: int, n: int, mix: Optional[Mix] = None, progress: bool = False) -> Report:
    rep = Report(seed)
    t0 = time.perf_counter()
    with budgets():
        for k, case in enumerate(generate(seed, n, mix)):
            rep.outcomes.append(run_case(case))
            if progress and k % 5000 == 4999:
                print(f"  {k + 1} cases, {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    rep.seconds = time.perf_counter() - t0
    return rep


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--symbolic", type=int, default=Mix.symbolic)
    ap.add_argument("--max-lines", type=int, default=60, help="reproduction lines per class")
    a = ap.parse_args(argv)
    rep = run(a.seed, a.cases, Mix(symbolic=a.symbolic), progress=True)
    print(rep.table())
    print(f"\n{len(rep.outcomes)} cases in {rep.seconds:.1f} s (seed {a.seed})")
    per: Dict[str, int] = Counter()
    for o in rep.bad():
        per[o.cls] += 1
        if per[o.cls] <= a.max_lines:
            print(o.line())
    return 1 if rep.bad() else 0


if __name__ == "__main__":
    sys.exit(main())
