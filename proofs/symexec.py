"""Symbolic execution of the library's own symbolic algebra, one Z3 obligation per path.

An operation of :mod:`layoutproof.symbolic.symops` is run on layouts whose every extent and stride is
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
path's divisibility facts become products (``b == q*a``).  A quotient outside
``floor``/``ceiling`` read that way is its value only where the remainder is zero: an
unsatisfiable query counts only after Z3 shows the path's facts imply every such
exactness guard (:meth:`Enc.inexact`), else the path is unknown with the quotient named.
A layout is evaluated at an offset through an explicit digit *placement* (:func:`place`),
never by asking the solver to find the digits of a mixed radix.  The placement is a hint:
the obligation checks that the digits are in range and add up to the offset, so a wrong
hint can only make the proof fail, never make a false claim proved.  Unsat is "proved on this path"; sat is a
counterexample, confirmed by substituting the model into the symbolic result and
evaluating with integers before it counts as a refutation; anything else is unknown, with
the path condition.

>>> import sympy as sp
>>> from layoutproof.symbolic import symops
>>> s0, s1 = sp.symbols("s0 s1", integer=True, positive=True)
>>> d0, d1 = sp.symbols("d0 d1", integer=True)
>>> from layoutproof import Layout
>>> paths, complete = explore(lambda: symops.coalesce(Layout.trusted((s0, s1), (d0, d1))))
>>> complete, sorted(str(p.value) for p in paths)
(True, ['(s0,s1):(d0,d1)', '1:0', 's0*s1:d0', 's0:d0', 's1:d1'])
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof.budget import BudgetExceeded, deadline, expired
from layoutproof.errors import InadmissibleError, LayoutError
from layoutproof.inttuple import raw_flatten
from layoutproof.layout import Layout
from layoutproof.symbolic import assuming, condition, exploring, pretty
from layoutproof.symbolic import sympy_module as _sp

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
    "PATH_SECONDS",
    "EXACT_MS",
]

#: paths explored per run before the tree is declared too large (the theorem is then unknown)
MAX_PATHS = 400
#: Z3 time limit per path obligation, in milliseconds (generous: the machines that run the
#: catalog are often shared, and an obligation that times out is only ever unknown)
TIMEOUT_MS = 15000
#: choice points allowed on one path
MAX_DEPTH = 200
#: seconds of work per path (one run of the operation; the path's normalization, SymPy
#: simplification and obligations), under :func:`layoutproof.budget.deadline`: past it the
#: path is undecided / unknown with the reason "timeout", never proved
PATH_SECONDS = 300.0
#: Z3 time limit, in milliseconds, of each check that a quotient read as a floor quotient is
#: exact under the path's facts (short: such a quotient follows from a divisibility fact at
#: once; one not shown exact leaves the path unknown, never proved)
EXACT_MS = 3000


def z3_module() -> Any:
    """The ``z3`` module, imported on first use (the proofs' one lazy accessor)."""
    import z3

    return z3


def symops_module() -> Any:
    """``layoutproof.symbolic.symops``, imported on first use."""
    from layoutproof.symbolic import symops

    return symops


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
    """One path of a run: its choices, its facts (assumptions + choices), how it ended and
    the value (a result, or the exception).  ``end`` is ``"result"``, ``"inadmissible"``
    (InadmissibleError), ``"refused"`` (another LayoutError: the operation gives no result
    there, e.g. a condition it cannot decide) or ``"undecided"`` (the exploration itself
    gave up: too many choice points)."""

    choices: List[Tuple[Any, bool]]
    facts: Tuple[Any, ...]
    end: str
    value: Any

    def condition_text(self) -> str:

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
                    with deadline(PATH_SECONDS):
                        end, value = "result", fn()
                except InadmissibleError as e:
                    end, value = "inadmissible", e
                except PathTooDeep as e:
                    end, value = "undecided", e
                except LayoutError as e:  # the operation refuses (undecidable to it, or malformed)
                    # a time budget that ran out cut the run short: its subtree is unexplored
                    if isinstance(e, BudgetExceeded) and expired(e):
                        raise  # an enclosing deadline: not this path's
                    end, value = ("undecided" if isinstance(e, BudgetExceeded) else "refused"), e
        for j in range(len(ex.trace) - 1, len(prefix) - 1, -1):
            stack.append([o for _c, o in ex.trace[:j]] + [False])
        facts = pre + tuple(c if o else sp.Not(c) for c, o in ex.trace)
        paths.append(Path(list(ex.trace), facts, end, value))
    return paths, True


# ----------------------------------------------------------------------------- Z3 encoding
def _fractional(e: Any) -> bool:
    """Whether ``e`` holds a non-integer rational number (``M/2`` is a polynomial, but no
    integer one)."""
    return any(not x.is_Integer for x in e.atoms(_sp().Rational))


def _frac(e: Any) -> Tuple[Any, Any]:
    """``e`` as one fraction ``(n, d)``: common factors cancelled, rational coefficients
    brought over the common denominator (``M/2 - 2`` is ``(M - 4, 2)``)."""
    sp = _sp()
    return sp.fraction(sp.together(sp.cancel(e)))


class Enc:
    """SymPy -> Z3 with division and remainder as fresh quotient/remainder variables.

    ``Mod(a, b)`` and ``floor(a/b)`` (and an exact quotient ``a/b`` the library built after
    proving ``b | a``) become ``q``, ``r`` with ``a == q*b + r`` and Python's range for
    ``r`` (``0 <= r < b`` when ``b > 0``, ``b < r <= 0`` when ``b < 0``): a total
    definition, so it never makes an obligation vacuous; divisibility facts then read
    ``r == 0``, i.e. ``a == q*b``.

    A quotient ``a/b`` outside ``floor``/``ceiling`` (a non-polynomial fraction, or a
    polynomial with a non-integer coefficient) read as that floor quotient equals ``a/b``
    only where ``b != 0`` and ``r == 0``: each such reading records that *exactness guard*
    (:attr:`quotients`; :meth:`t_guarded` also returns the guards one term met), and
    :meth:`inexact` is the check that the path's facts imply them, which :func:`discharge`
    and :func:`implied` require before an unsatisfiable query counts.
    """

    def __init__(self, subs: Optional[Dict[Any, Any]] = None) -> None:
        z3 = z3_module()

        self.z3 = z3
        self.subs: Dict[Any, Any] = dict(subs or {})
        self.env: Dict[Any, Any] = {}
        self.defs: List[Any] = []
        self._qr: Dict[Any, Tuple[Any, Any, Any]] = {}
        self._n = 0
        #: every exactness guard met (keys ``(n, d)`` of quotients read as ``n // d``)
        self.quotients: Dict[Any, None] = {}
        self._inner: Dict[Any, List[Any]] = {}  # guards met inside a divmod's operands
        self._sinks: List[List[Any]] = []
        self._settled: Dict[Any, Optional[str]] = {}

    def fresh(self, name: str) -> Any:
        self._n += 1
        return self.z3.Int(f"{name}!{self._n}")

    def _emit(self, keys: Sequence[Any]) -> None:
        """Record the exactness guards ``keys`` as met by every term being translated."""
        for k in keys:
            self.quotients.setdefault(k, None)
        for sink in self._sinks:
            sink.extend(keys)

    def _divmod(self, a: Any, b: Any) -> Tuple[Any, Any]:
        key = (a, b)
        hit = self._qr.get(key)
        if hit is None:
            z3 = self.z3
            inner: List[Any] = []
            self._sinks.append(inner)
            try:
                za, zb = self.t(a), self.t(b)
            finally:
                self._sinks.pop()
            q, r = self.fresh("q"), self.fresh("r")
            self.defs.append(za == q * zb + r)
            self.defs.append(z3.Implies(zb > 0, z3.And(r >= 0, r < zb)))
            self.defs.append(z3.Implies(zb < 0, z3.And(r <= 0, r > zb)))
            self.defs.append(z3.Implies(zb == 0, z3.And(q == 0, r == za)))
            self._multiples(a, b, q, r)
            hit = self._qr[key] = (q, r, zb)
            self._inner[key] = inner
        self._emit(self._inner[key])
        return hit[0], hit[1]

    def _multiples(self, a: Any, b: Any, q: Any, r: Any) -> None:
        """For each division by ``b`` met before whose dividend ``a1`` divides ``a``
        polynomially (``a == a1*m``), or the other way round, add the valid lemma
        ``b | a1  ->  b | a  and  a // b == (a1 // b)*m`` (the nonlinear solver does not
        always find it: ``Bd0 | As0*As1`` gives ``Bd0 | As0*As1*k``)."""
        sp = _sp()
        z3 = self.z3
        if a == 0:
            return
        for (a1, b1), (q1, r1, _zb) in list(self._qr.items()):
            if b1 != b or a1 == 0:
                continue
            for (x, qx, rx), (y, qy, ry) in (((a1, q1, r1), (a, q, r)), ((a, q, r), (a1, q1, r1))):
                m = sp.cancel(y / x)
                if m.is_polynomial() and not _fractional(m) and not m.has(sp.Mod, sp.floor, sp.ceiling):
                    zm = self.t(m)
                    self.defs.append(z3.Implies(rx == 0, z3.And(ry == 0, qy == qx * zm)))

    def _quotient(self, n: Any, d: Any) -> Any:
        """The quotient ``n/d`` read as the floor quotient of ``n`` by ``d``, its exactness
        guard (``d != 0`` and ``d | n``) recorded."""
        q, _r = self._divmod(n, d)
        self._emit([(n, d)])
        return self._qr_symbol(q)

    def guard(self, key: Any) -> Any:
        """The exactness guard of the quotient ``key`` as a Z3 formula."""
        _q, r, zb = self._qr[key]
        return self.z3.And(zb != 0, r == 0)

    def t_guarded(self, e: Any) -> Tuple[Any, List[Any]]:
        """:meth:`t` and the exactness guards (keys of :attr:`quotients`) the term met."""
        sink: List[Any] = []
        self._sinks.append(sink)
        try:
            out = self.t(e)
        finally:
            self._sinks.pop()
        return out, list(dict.fromkeys(sink))

    def _holds(self, keys: Sequence[Any], premises: List[Any], ms: int) -> bool:
        from layoutproof.symbolic import solver

        if not keys:
            return True
        goal = self.z3.And([self.guard(k) for k in keys])
        v = solver.prove(goal, premises, timeout_s=ms / 1000.0, check_facts=False)
        return v.status == "proved"

    def inexact(self, facts: Sequence[Any], guards: Sequence[Sequence[Any]], ms: int = 3000) -> Optional[str]:
        """None when every quotient this encoding read as a floor quotient is exact at every
        point the facts admit; else the reason (a quotient Z3 did not show exact within
        ``ms`` per check).  ``facts`` are the facts' Z3 terms, ``guards`` the guards each met
        (:meth:`t_guarded`).  A fact's own guards are shown from facts already known exact
        (those with no quotient first), so a fact the floor reading makes false at some point
        is never a premise there; the remaining guards (of the claim and the context) are
        then shown from all the facts.  Unsatisfiable facts make every guard hold (there are
        no points)."""
        known = [f for f, g in zip(facts, guards) if not g]
        pending = [(f, list(g)) for f, g in zip(facts, guards) if g]
        key = (tuple(map(str, facts)), tuple(self.quotients))
        if key in self._settled:
            return self._settled[key]
        base = list(self.defs) + self.domains()
        why: Optional[str] = None
        if pending and self._holds(list(dict.fromkeys(k for _f, g in pending for k in g)), known + base, ms):
            known += [f for f, _g in pending]
            pending = []
        while pending:
            left = [(f, g) for f, g in pending if not self._holds(g, known + base, ms)]
            if len(left) == len(pending):
                break
            known += [f for f, _g in pending if all(f is not x for x, _h in left)]
            pending = left
        if pending:
            n, d = pending[0][1][0]
            why = f"the path's fact {pending[0][0]} reads ({n})/({d}) as a floor quotient, not shown exact"
        else:
            met = {k for g in guards for k in g}
            rest = [k for k in self.quotients if k not in met]
            if not self._holds(rest, list(facts) + base, ms):
                for k in rest:
                    if not self._holds([k], list(facts) + base, ms):
                        why = f"the quotient ({k[0]})/({k[1]}) is read as a floor quotient, not shown exact"
                        break
                else:
                    why = "the quotients read as floor quotients are not shown exact together"
        self._settled[key] = why
        return why

    def t(self, e: Any) -> Any:
        """An integer expression or a condition as a Z3 term (after the path's
        substitution, :func:`normalize`)."""
        sp = _sp()
        if self.subs and isinstance(e, sp.Basic) and e.free_symbols & self.subs.keys():
            e = e.xreplace(self.subs)
            if isinstance(e, sp.Expr):
                e = sp.cancel(e)
        return self._t(e)

    def _t(self, e: Any) -> Any:
        """Every division and remainder of ``e`` abstracted to its quotient/remainder
        variable (:meth:`_abstract`), the rest translated by the solver driver's
        :func:`~layoutproof.symbolic.solver.to_z3` (one SymPy -> Z3 translation in the
        package)."""
        from layoutproof.symbolic import solver

        if isinstance(e, (bool, int)):
            return solver.to_z3(e)
        return solver.to_z3(self._abstract(e), self.env)

    def _qr_symbol(self, v: Any) -> Any:
        """A SymPy stand-in for the Z3 variable ``v`` (a quotient or remainder), bound to it
        in ``env`` so the driver translates it to ``v`` itself."""
        sym = _sp().Symbol(str(v), integer=True)
        self.env[sym] = v
        return sym

    def _abstract(self, e: Any) -> Any:
        sp = _sp()
        if isinstance(e, sp.Rel):
            a, b = e.lhs, e.rhs
            if (
                isinstance(a, sp.Expr)
                and isinstance(b, sp.Expr)
                and (not a.is_polynomial() or not b.is_polynomial() or _fractional(a) or _fractional(b))
            ):
                n, d = _frac(a - b)
                # a - b = n/d with d > 0 by the symbols' declared ranges (the scope): n vs 0
                if n.is_polynomial() and not _fractional(n) and (d == 1 or d.is_positive):
                    return e.func(self._abstract(n), 0, evaluate=False)
            return e.func(self._abstract(e.lhs), self._abstract(e.rhs), evaluate=False)
        if not isinstance(e, sp.Basic) or e.is_Atom:
            return e
        if isinstance(e, (sp.And, sp.Or, sp.Not)):
            return e.func(*[self._abstract(a) for a in e.args], evaluate=False)
        if isinstance(e, sp.Mod):
            return self._qr_symbol(self._divmod(e.args[0], e.args[1])[1])
        if isinstance(e, sp.floor):
            n, d = sp.fraction(sp.together(e.args[0]))
            return self._qr_symbol(self._divmod(n, d)[0])
        if isinstance(e, sp.ceiling):
            n, d = sp.fraction(sp.together(e.args[0]))
            return -self._qr_symbol(self._divmod(-n, d)[0])
        if isinstance(e, (sp.Add, sp.Mul, sp.Pow)) and (not e.is_polynomial() or _fractional(e)):
            n, d = _frac(e)
            if d != 1:
                return self._quotient(n, d)
            if n.is_polynomial() and not _fractional(n):
                return sp.expand(n)
        if isinstance(e, (sp.Add, sp.Mul, sp.Pow, sp.Min, sp.Max)):
            return e.func(*[self._abstract(a) for a in e.args], evaluate=False)
        raise LayoutError(f"cannot encode {type(e).__name__} {str(e)[:80]} for the path obligation")

    def monotone(self, g: Any, bound: Any, m: Any) -> None:
        """Add the valid lemma ``0 <= g < bound  ->  g*m`` lies between ``0`` and
        ``(bound-1)*m``: monotonicity of the product, which the nonlinear solver does not
        always find by itself (a true statement about integers, so adding it is sound)."""
        z3 = self.z3
        ub = self.t(bound) - 1
        rng = z3.And(g >= 0, g <= ub)
        self.defs.append(z3.Implies(z3.And(rng, m >= 0), z3.And(g * m >= 0, g * m <= ub * m)))
        self.defs.append(z3.Implies(z3.And(rng, m < 0), z3.And(g * m <= 0, g * m >= ub * m)))

    def model(self, m: Any) -> Dict[str, int]:
        """The values of the original symbols in a Z3 model or in the solver driver's model
        (a name -> value mapping), the substituted ones computed."""
        sp = _sp()
        val: Dict[Any, int] = {}
        for sym, v in self.env.items():
            if "!" not in sym.name or sym.name.startswith("k!"):
                val[sym] = (
                    int(m.get(sym.name, 0))
                    if isinstance(m, dict)
                    else m.eval(v, model_completion=True).as_long()
                )
        out = {sym.name: x for sym, x in val.items() if not sym.name.startswith("k!")}
        for sym, e in self.subs.items():
            r = sp.sympify(e).xreplace({k: sp.Integer(val.get(k, 1)) for k in sp.sympify(e).free_symbols})
            if r.is_Integer:
                out[sym.name] = int(r)
        return out

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


def normalize(facts: Sequence[Any]) -> Tuple[Dict[Any, Any], Tuple[Any, ...]]:
    """Solve the path's equalities and divisibilities for a symbol where one side is a
    lone symbol: ``d1 == d0*s0`` gives ``d1 := d0*s0``, ``s0 == 1`` gives ``s0 := 1``,
    ``b | a`` with ``a`` a symbol gives ``a := b*k`` (``k`` fresh).  Each substituted
    symbol's range (``a > 0``) is kept as a fact on its replacement, so the substituted
    obligation is satisfiable exactly when the original one is.  Returns the substitution
    and the facts to add; the path's own facts are translated through it."""
    sp = _sp()
    subs: Dict[Any, Any] = {}
    extra: List[Any] = []
    n = 0

    def apply(e: Any) -> Any:
        if not subs:
            return e
        e = e.xreplace(subs)
        return sp.cancel(e) if isinstance(e, sp.Expr) else e

    def bind(sym: Any, e: Any) -> None:
        for k in list(subs):
            subs[k] = sp.cancel(subs[k].xreplace({sym: e}))
        subs[sym] = e
        if sym.is_positive:
            extra.append(sp.Gt(e, 0))
        elif sym.is_nonnegative:
            extra.append(sp.Ge(e, 0))

    def exact_quotient(y: Any) -> bool:
        """``y`` is a polynomial, or a quotient ``P/Q`` of polynomials whose divisibility
        ``Q | P`` is one of the path's facts (so ``y*k`` is the integer the fact names, and
        the quotient/remainder encoding of ``y`` is exact)."""
        if y.is_polynomial():
            return True
        num, den = sp.fraction(sp.cancel(y))
        if not (num.is_polynomial() and den.is_polynomial()):
            return False
        want = sp.Eq(sp.Mod(num, den), 0)
        return any(isinstance(g, sp.Eq) and apply(g.lhs) == want.lhs and apply(g.rhs) == 0 for g in facts)

    for f in facts:
        if not isinstance(f, sp.Eq):
            continue
        a, b = apply(f.lhs), apply(f.rhs)
        if b == 0 and isinstance(a, sp.Mul):  # x*y == 0 with x > 0: y == 0 (an implied fact)
            rest = [g for g in a.args if not g.is_positive]
            if len(rest) < len(a.args):
                a = sp.Mul(*rest)
                extra.append(sp.Eq(a, 0))
        if isinstance(a, sp.Mod) and b == 0:
            x, y = a.args
            if isinstance(x, sp.Symbol) and x not in y.free_symbols and y != 0 and exact_quotient(y):
                n += 1
                pos = bool(x.is_positive and y.is_positive) or bool(x.is_nonnegative and y.is_positive)
                k = (
                    sp.Symbol(f"k!{n}", integer=True, positive=True)
                    if x.is_positive and y.is_positive
                    else sp.Symbol(f"k!{n}", integer=True, nonnegative=True)
                    if pos
                    else sp.Symbol(f"k!{n}", integer=True)
                )
                bind(x, sp.expand(y * k))
            continue
        for x, y in ((a, b), (b, a)):
            if (
                isinstance(x, sp.Symbol)
                and x not in sp.sympify(y).free_symbols
                and sp.sympify(y).is_polynomial()
            ):
                bind(x, sp.sympify(y))
                break
    # a factor of a divisor divides too: Mod(X, g*h) == 0 gives g | X; when X is 1 modulo a
    # positive symbol g, g == 1 (as the path implies it, e.g. Bd0 | Ad0 and Ad0 | Bd0*(Bs0-1) + 1)
    done = False
    while not done:
        done = True
        for f in list(facts) + extra:
            if not isinstance(f, sp.Eq):
                continue
            a, b = apply(f.lhs), apply(f.rhs)
            if b != 0 or not isinstance(a, sp.Mod):
                continue
            x, y = a.args
            for g in sp.Mul.make_args(y):
                if (
                    isinstance(g, sp.Symbol)
                    and g.is_positive
                    and g not in subs
                    and sp.Mod(x, g) == sp.Mod(1, g)
                ):
                    bind(g, sp.Integer(1))
                    done = False
                    break
            if not done:
                break
    return subs, tuple(extra)


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
    fs, fd = raw_flatten(L.shape), raw_flatten(L.stride)
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


_IMPLIED: Dict[Any, bool] = {}


def implied(
    cond: Any, facts: Tuple[Any, ...], timeout_ms: int = 3000, subs: Optional[Dict[Any, Any]] = None
) -> bool:
    """Do ``facts`` imply ``cond``?  (Z3 on the quotient/remainder encoding; False when it
    cannot tell.)  Used to choose placements only: a wrong choice fails the obligation."""
    from layoutproof.symbolic import solver

    sp = _sp()
    if cond in facts:
        return True
    if sp.Not(cond) in facts:
        return False
    if subs:
        cond = cond.xreplace(subs)
    if cond is sp.true or cond is sp.false:
        return cond is sp.true
    key = (cond, facts, tuple(sorted((subs or {}).items(), key=str)))
    hit = _IMPLIED.get(key)
    if hit is not None:
        return hit
    enc = Enc(subs)
    goal = enc.t(cond)
    zf, zg = [], []
    for f in facts:
        z, g = enc.t_guarded(f)
        zf.append(z)
        zg.append(g)
    v = solver.prove(goal, [*zf, *enc.defs, *enc.domains()], timeout_s=timeout_ms / 1000.0, check_facts=False)
    out = v.status == "proved" and enc.inexact(zf, zg, timeout_ms) is None
    if len(_IMPLIED) > 50_000:
        _IMPLIED.clear()
    _IMPLIED[key] = out
    return out


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
            if p == 1 or implied(sp.Eq(sp.Mod(w, p), 0), facts, subs=enc.subs):
                at = i
                break
        if at is None:  # pragma: no cover - P_0 = 1 always divides
            raise NoPlacement(f"no digit for the weight {w}")
        m = enc.t(sp.cancel(w / pref[at]))
        digits[at] = digits[at] + g * m
        enc.monotone(g, _bound, m)
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
    """A path obligation as the solver driver ran it: ``smt2()`` (as
    :class:`ProofObligation` expects) is the comment lines and the driver's SMT-LIB2 script."""

    def __init__(self, verdict: Any, comment: str) -> None:
        self.verdict = verdict
        self.comment = comment

    def smt2(self) -> str:
        lines = "".join(f"; {ln}\n" for ln in self.comment.splitlines())
        return lines + str(self.verdict.smtlib)


def discharge(
    enc: Enc,
    facts: Tuple[Any, ...],
    context: List[Any],
    claim: Any,
    comment: str,
    timeout_ms: Optional[int] = None,
) -> PathOutcome:
    """Ask Z3, through the solver driver (:func:`layoutproof.symbolic.solver.prove`), whether
    ``facts and context and not claim`` is satisfiable (``claim`` a Z3 formula, ``context``
    the digit domains).  A path whose facts and context are themselves unsatisfiable is
    reported ``vacuous`` (it has no values; nothing to prove).  Either verdict stands only
    where the quotients read as floor quotients are exact under the facts
    (:meth:`Enc.inexact`); otherwise the outcome is ``unknown`` with the quotient named.  A
    ``sat`` model is one of the floor reading: the caller confirms it with integers."""
    from layoutproof.symbolic import solver

    tmo = TIMEOUT_MS if timeout_ms is None else timeout_ms
    zf, zg = [], []
    for f in facts:
        z, g = enc.t_guarded(f)
        zf.append(z)
        zg.append(g)
    assertions = zf + list(context) + enc.defs + enc.domains()
    v = solver.prove(
        claim, assertions, timeout_s=tmo / 1000.0, name=comment.splitlines()[0] if comment else ""
    )
    ob = _Ob(v, comment)
    if v.status in ("proved", "vacuous"):
        # the floor reading of each quotient must be its value wherever the facts hold
        t0 = time.perf_counter()
        why = enc.inexact(zf, zg, min(tmo, EXACT_MS))
        secs = v.seconds + time.perf_counter() - t0
        if why is not None:
            return PathOutcome("unknown", secs, ob, reason=why)
        return PathOutcome("unsat" if v.status == "proved" else "vacuous", secs, ob)
    if v.status == "refuted":
        return PathOutcome("sat", v.seconds, ob, model=enc.model(dict(v.model or {})))
    return PathOutcome("unknown", v.seconds, ob, reason=v.reason or "unknown")
