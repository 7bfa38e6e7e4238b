"""Symbolic execution of the library's own symbolic algebra, one Z3 obligation per path.

An operation of :mod:`layoutproof.symops` is run on layouts whose every extent and stride is
a fresh SymPy symbol.  Inside :func:`~layoutproof.symbolic.exploring`, every condition the
path's facts leave undecided is a *choice point*: the :class:`Explorer` picks an outcome,
the outcome joins the facts, and the operation goes on.  :func:`explore` enumerates the
tree depth first by re-running the operation with a recorded prefix of choices, within a
path budget.  Each path ends with a symbolic result, an inadmissible verdict
(:class:`~layoutproof.errors.InadmissibleError`) or an undecided one.

For each path with a result, the theorem's post-condition becomes one Z3 query
(:func:`discharge`): the path facts, the domain of the quantified coordinate digits, and
the negated claim.  Division and remainder by symbolic values are encoded with fresh
quotient/remainder variables (``a == q*b + r``, ``0 <= r < b`` for ``b > 0``), so the
path's divisibility facts become products (``b == q*a``); a layout is evaluated at an
offset through an explicit digit *placement* (:func:`place`), never by asking the solver
to find the digits of a mixed radix.  The placement is a hint: the obligation checks that
the digits are in range and add up to the offset, so a wrong hint can only make the proof
fail, never make a false claim proved.  Unsat is "proved on this path"; sat is a
counterexample, confirmed by substituting the model into the symbolic result and
evaluating with integers before it counts as a refutation; anything else is unknown, with
the path condition.

>>> import sympy as sp
>>> from layoutproof import symops
>>> s0, s1 = sp.symbols("s0 s1", integer=True, positive=True)
>>> d0, d1 = sp.symbols("d0 d1", integer=True)
>>> from layoutproof import Layout
>>> paths, complete = explore(lambda: symops.coalesce(Layout._make((s0, s1), (d0, d1))))
>>> complete, len(paths), [str(p.value) for p in paths][-2:]
(True, 5, ['s0*s1:d0', '(s0,s1):(d0,d1)'])
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof.errors import InadmissibleError, LayoutError, UndecidableConditionError
from layoutproof.layout import Layout

__all__ = [
    "Explorer",
    "Path",
    "explore",
    "Enc",
    "place",
    "discharge",
    "PathOutcome",
    "MAX_PATHS",
    "TIMEOUT_MS",
]

#: paths explored per run before the tree is declared too large (the theorem is then unknown)
MAX_PATHS = 400
#: Z3 time limit per path obligation, in milliseconds
TIMEOUT_MS = 4000
#: choice points allowed on one path
MAX_DEPTH = 200


def _sp() -> Any:
    import sympy

    return sympy


# ----------------------------------------------------------------------------- exploration
class PathTooDeep(LayoutError):
    """A path met more choice points than :data:`MAX_DEPTH`."""


class Explorer:
    """Follows a recorded prefix of choices, then takes ``True`` at every new choice point,
    recording each condition and the outcome taken."""

    def __init__(self, prefix: Sequence[bool]) -> None:
        self.prefix = list(prefix)
        self.trace: List[Tuple[Any, bool]] = []

    def branch(self, cond: Any, decision: Any = None) -> bool:
        k = len(self.trace)
        if k >= MAX_DEPTH:
            raise PathTooDeep(f"more than {MAX_DEPTH} choice points on one path")
        out = self.prefix[k] if k < len(self.prefix) else True
        self.trace.append((cond, out))
        return out


@dataclass
class Path:
    """One path of a run: its choices, its facts (assumptions + choices), how it ended
    (``"result"``, ``"inadmissible"``, ``"undecided"``) and the value (a result, or the
    exception)."""

    choices: List[Tuple[Any, bool]]
    facts: Tuple[Any, ...]
    end: str
    value: Any

    def condition_text(self) -> str:
        from layoutproof.symbolic import pretty

        sp = _sp()
        if not self.facts:
            return "True"
        return " and ".join(
            pretty(f) if not isinstance(f, sp.Not) else f"not ({pretty(f.args[0])})" for f in self.facts
        )


def explore(
    fn: Callable[[], Any], assumptions: Sequence[Any] = (), max_paths: int = MAX_PATHS
) -> Tuple[List[Path], bool]:
    """Every path of ``fn()`` under ``assumptions`` (depth first); ``complete`` is False when
    the budget ran out before the tree was exhausted."""
    from layoutproof.symbolic import assuming, condition, exploring

    sp = _sp()
    pre = tuple(condition(a) for a in assumptions)
    stack: List[List[bool]] = [[]]
    paths: List[Path] = []
    while stack:
        if len(paths) >= max_paths:
            return paths, False
        prefix = stack.pop()
        ex = Explorer(prefix)
        with assuming(*pre):
            with exploring(ex):
                try:
                    end, value = "result", fn()
                except InadmissibleError as e:
                    end, value = "inadmissible", e
                except (UndecidableConditionError, PathTooDeep) as e:
                    end, value = "undecided", e
        for j in range(len(ex.trace) - 1, len(prefix) - 1, -1):
            stack.append([o for _c, o in ex.trace[:j]] + [False])
        facts = pre + tuple(c if o else sp.Not(c) for c, o in ex.trace)
        paths.append(Path(list(ex.trace), facts, end, value))
    return paths, True


# ----------------------------------------------------------------------------- Z3 encoding
class Enc:
    """SymPy -> Z3 with division and remainder as fresh quotient/remainder variables.

    ``Mod(a, b)`` and ``floor(a/b)`` (and an exact quotient ``a/b`` the library built after
    proving ``b | a``) become ``q``, ``r`` with ``a == q*b + r`` and Python's range for
    ``r`` (``0 <= r < b`` when ``b > 0``, ``b < r <= 0`` when ``b < 0``): a total
    definition, so it never makes an obligation vacuous; divisibility facts then read
    ``r == 0``, i.e. ``a == q*b``.
    """

    def __init__(self) -> None:
        import z3

        self.z3 = z3
        self.env: Dict[Any, Any] = {}
        self.defs: List[Any] = []
        self._qr: Dict[Any, Tuple[Any, Any]] = {}
        self._n = 0

    def fresh(self, name: str) -> Any:
        self._n += 1
        return self.z3.Int(f"{name}!{self._n}")

    def _divmod(self, a: Any, b: Any) -> Tuple[Any, Any]:
        key = (a, b)
        hit = self._qr.get(key)
        if hit is not None:
            return hit
        z3 = self.z3
        za, zb = self.t(a), self.t(b)
        q, r = self.fresh("q"), self.fresh("r")
        self.defs.append(za == q * zb + r)
        self.defs.append(z3.Implies(zb > 0, z3.And(r >= 0, r < zb)))
        self.defs.append(z3.Implies(zb < 0, z3.And(r <= 0, r > zb)))
        self.defs.append(z3.Implies(zb == 0, z3.And(q == 0, r == za)))
        self._qr[key] = (q, r)
        return q, r

    def t(self, e: Any) -> Any:
        """An integer expression or a condition as a Z3 term."""
        sp = _sp()
        z3 = self.z3
        if isinstance(e, bool):
            return z3.BoolVal(e)
        if isinstance(e, int):
            return z3.IntVal(e)
        if e is sp.true:
            return z3.BoolVal(True)
        if e is sp.false:
            return z3.BoolVal(False)
        if isinstance(e, sp.Integer):
            return z3.IntVal(int(e))
        if isinstance(e, sp.Symbol):
            v = self.env.get(e)
            if v is None:
                v = self.env[e] = z3.Int(e.name)
            return v
        if isinstance(e, sp.Rel):
            a, b = self.t(e.lhs), self.t(e.rhs)
            op = e.rel_op
            return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        if isinstance(e, sp.And):
            return z3.And([self.t(a) for a in e.args])
        if isinstance(e, sp.Or):
            return z3.Or([self.t(a) for a in e.args])
        if isinstance(e, sp.Not):
            return z3.Not(self.t(e.args[0]))
        if isinstance(e, sp.Mod):
            return self._divmod(e.args[0], e.args[1])[1]
        if isinstance(e, sp.floor):
            n, d = sp.fraction(sp.together(e.args[0]))
            return self._divmod(n, d)[0]
        if isinstance(e, sp.ceiling):
            n, d = sp.fraction(sp.together(e.args[0]))
            return -self._divmod(-n, d)[0]
        if isinstance(e, (sp.Add, sp.Mul, sp.Pow)):
            n, d = sp.fraction(sp.together(e))
            if d != 1:
                return self._divmod(n, d)[0]
            if isinstance(e, sp.Add):
                return z3.Sum([self.t(a) for a in e.args])
            if isinstance(e, sp.Mul):
                out = self.t(e.args[0])
                for a in e.args[1:]:
                    out = out * self.t(a)
                return out
            b, x = e.args
            if isinstance(x, sp.Integer) and 0 <= int(x) <= 64:
                out = z3.IntVal(1)
                for _ in range(int(x)):
                    out = out * self.t(b)
                return out
        if isinstance(e, (sp.Min, sp.Max)):
            args = [self.t(a) for a in e.args]
            out = args[0]
            for a in args[1:]:
                out = z3.If(a < out, a, out) if isinstance(e, sp.Min) else z3.If(a > out, a, out)
            return out
        raise LayoutError(f"cannot encode {type(e).__name__} {str(e)[:80]} for the path obligation")

    def domains(self) -> List[Any]:
        """What each SymPy symbol's assumptions say about its range."""
        out = []
        for sym, v in self.env.items():
            if sym.is_positive:
                out.append(v > 0)
            elif sym.is_nonnegative:
                out.append(v >= 0)
            elif sym.is_negative:
                out.append(v < 0)
        return out


# ----------------------------------------------------------------------------- digits
@dataclass
class Digits:
    """Quantified coordinate digits: Z3 variables with ``0 <= g < bound``."""

    vars: List[Any] = field(default_factory=list)
    bounds: List[Any] = field(default_factory=list)  # SymPy extents

    def new(self, enc: Enc, bound: Any, name: str = "g") -> Any:
        v = enc.fresh(name)
        self.vars.append(v)
        self.bounds.append(bound)
        return v

    def constraints(self, enc: Enc) -> List[Any]:
        out = []
        for v, b in zip(self.vars, self.bounds):
            out += [v >= 0, v < enc.t(b)]
        return out


def flat_modes(L: Layout) -> Tuple[List[Any], List[Any]]:
    fs, fd = L._flat()
    return list(fs), list(fd)


def natural(enc: Enc, dg: Digits, L: Layout, name: str = "c") -> Tuple[List[Any], Any, Any]:
    """Fresh digits for every mode of ``L``: (digits, the 1-D index, the offset)."""
    fs, fd = flat_modes(L)
    cs = [dg.new(enc, s, name) for s in fs]
    idx: Any = 0
    val: Any = 0
    p: Any = 1
    for c, s, d in zip(cs, fs, fd):
        idx = idx + c * p
        val = val + c * enc.t(d)
        p = p * enc.t(s)
    return cs, idx, val


def index_of(enc: Enc, shape: Sequence[Any], digits: Sequence[Any]) -> Any:
    out: Any = 0
    p: Any = 1
    for c, s in zip(digits, shape):
        out = out + c * p
        p = p * enc.t(s)
    return out


def value_of(enc: Enc, stride: Sequence[Any], digits: Sequence[Any]) -> Any:
    out: Any = 0
    for c, d in zip(digits, stride):
        out = out + c * enc.t(d)
    return out


class NoPlacement(LayoutError):
    """The offset's terms could not be placed in the layout's digits."""


def _implied(cond: Any, facts: Tuple[Any, ...]) -> bool:
    from layoutproof.symbolic import decide

    if cond is True:
        return True
    d = decide(cond, facts)
    return d.value is True


def place(
    enc: Enc,
    shape: Sequence[Any],
    terms: Sequence[Tuple[Any, Any, Any]],
    facts: Tuple[Any, ...],
    unbounded_last: bool,
) -> List[Any]:
    """Digits of ``sum(g * w)`` in the mixed radix ``shape`` (Z3 terms), for terms
    ``(g, bound, w)`` with ``0 <= g < bound`` and ``w`` a SymPy weight: each term goes to
    the highest digit ``i`` whose prefix product divides ``w`` (decided under ``facts``),
    with multiplier ``w / P_i``.  The caller's obligation checks that the result is the
    offset's representation (the digits in range, the sum equal)."""
    sp = _sp()
    n = len(shape)
    pref = [sp.Integer(1)]
    for s in shape[:-1]:
        pref.append(pref[-1] * s)
    digits: List[Any] = [0] * n
    for g, _bound, w in terms:
        w = sp.sympify(w)
        if w == 0:
            continue
        at = None
        for i in range(n - 1, -1, -1):
            p = pref[i]
            if p == 1 or _implied(sp.Eq(sp.Mod(w, p), 0), facts):
                at = i
                break
        if at is None:  # pragma: no cover - P_0 = 1 always divides
            raise NoPlacement(f"no digit for the weight {w}")
        digits[at] = digits[at] + g * enc.t(sp.cancel(w / pref[at]))
    return digits


# ----------------------------------------------------------------------------- obligations
@dataclass
class PathOutcome:
    """The verdict of one path obligation."""

    verdict: str  # unsat (proved) / sat / unknown / vacuous
    seconds: float
    obligation: Any
    model: Optional[Dict[str, int]] = None
    reason: str = ""


class _Ob:
    """An SMT-LIB2-exportable query (``smt2()`` as :class:`ProofObligation` expects)."""

    def __init__(self, assertions: List[Any], goal_negation: Any, comment: str) -> None:
        self.assertions = assertions
        self.goal_negation = goal_negation
        self.comment = comment

    def solver(self, timeout_ms: int) -> Any:
        import z3

        s = z3.Solver()
        s.set("timeout", int(timeout_ms))
        for a in self.assertions:
            s.add(a)
        s.add(self.goal_negation)
        return s

    def smt2(self) -> str:
        lines = "".join(f"; {ln}\n" for ln in self.comment.splitlines())
        return lines + "(set-logic ALL)\n" + self.solver(1000).to_smt2()


def discharge(
    enc: Enc,
    facts: Tuple[Any, ...],
    context: List[Any],
    claim: Any,
    comment: str,
    timeout_ms: Optional[int] = None,
) -> PathOutcome:
    """Ask Z3 whether ``facts and context and not claim`` is satisfiable (``claim`` a Z3
    formula, ``context`` the digit domains).  A path whose facts and context are themselves
    unsatisfiable is reported ``vacuous`` (it has no values; nothing to prove)."""
    import z3

    tmo = TIMEOUT_MS if timeout_ms is None else timeout_ms
    zf = [enc.t(f) for f in facts]
    assertions = zf + list(context) + enc.defs + enc.domains()
    ob = _Ob(assertions, z3.Not(claim), comment)
    t0 = time.perf_counter()
    s = ob.solver(tmo)
    r = s.check()
    dt = time.perf_counter() - t0
    if r == z3.unsat:
        feas = z3.Solver()
        feas.set("timeout", int(tmo))
        feas.add(*assertions)
        if feas.check() == z3.unsat:
            return PathOutcome("vacuous", time.perf_counter() - t0, ob)
        return PathOutcome("unsat", dt, ob)
    if r == z3.sat:
        m = s.model()
        model = {}
        for sym, v in enc.env.items():
            model[sym.name] = m.eval(v, model_completion=True).as_long()
        return PathOutcome("sat", dt, ob, model=model)
    return PathOutcome("unknown", dt, ob, reason=s.reason_unknown() or "unknown")
