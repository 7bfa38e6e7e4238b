"""The tools the catalog's checks are written with.

* :func:`for_all` checks a predicate on every member of a family and returns a
  ``"checked"`` :class:`~layoutproof.verify.Result` (with the family's bounds and the
  number of cases) or a ``"refuted"`` one naming the first failing member;
* :func:`fact` turns one concrete, completely evaluated statement into a ``"proved"`` (or
  ``"refuted"``) result, :func:`sympy_equal` a polynomial identity proved by SymPy;
* independent oracles the theorems compare the algebra with: :func:`bymode` (C++'s
  mode-by-mode composition, without the disjointness check), :func:`reproducing_layout`
  (brute force: is there *any* layout with these values?), :func:`greedy_tiling` (can
  translates of a set tile an interval?), the divisibility predicates of T2/T3 and C++'s
  composition conditions (T5), :func:`chain_permutation` (a stride chain: compactness);
* :class:`BVObligation`, a Z3 bit-vector query exported as SMT-LIB2 like the verifier's
  own obligations.

>>> from layoutproof import Layout
>>> r = for_all("L(0) == 0", [Layout(2, 1), Layout(3, 5)], lambda L: None if L(0) == 0 else "L(0) != 0",
...             family="two layouts", bounds={"members": (1, 2)})
>>> r.status, r.cases
('checked', 2)
>>> str(bymode(Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))))
'(3,2):(2,3)'
>>> print(reproducing_layout([0, 1, 2, 3, 5, 6]))
None
>>> print(reproducing_layout([0, 2, 1, 3]))
(2,2):(2,1)
"""

from __future__ import annotations

import functools
import itertools
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from layoutproof import Layout, LayoutError, budget, coalesce, composition, make_layout
from layoutproof.inttuple import raw_flatten
from layoutproof.verify import Counterexample, ProofObligation, Result
from layoutproof.verify.families import SKIP, extended_values, for_all, label, offsets, values

__all__ = [
    "for_all",
    "fact",
    "sympy_equal",
    "label",
    "attempt",
    "bymode",
    "reproducing_layout",
    "ordered_factorizations",
    "greedy_tiling",
    "weakly_left_divisible",
    "left_divisible",
    "shape_quotient",
    "cpp_conditions",
    "coalesce_keep_last",
    "chain_permutation",
    "flat",
    "BVObligation",
    "z3_claim",
    "extended_values",
    "offsets",
    "values",
    "SKIP",
]


# ----------------------------------------------------------------------------- results
# The family runner, its SKIP marker and the member labels are verify's (one family runner
# in the package); they are re-exported here for the catalog's checks.


def flat(L: Layout) -> Tuple[tuple, tuple]:
    """``L``'s flat shape and stride as tuples (rank-1 layouts too).

    >>> flat(Layout((2, (3, 4)), (1, (2, 6)))), flat(Layout(4, 2))
    (((2, 3, 4), (1, 2, 6)), ((4,), (2,)))
    """
    return raw_flatten(L.shape), raw_flatten(L.stride)


def fact(claim: str, ok: bool, detail: str = "", **cex: Any) -> Result:
    """A concrete statement evaluated completely: "proved" (exhaustive) when ``ok``, else
    "refuted" with ``detail`` (and the Counterexample fields in ``cex``).

    >>> fact("1 + 1 == 2", 1 + 1 == 2).status
    'proved'
    """
    if ok:
        return Result("proved", "exhaustive", claim=claim)
    return Result(
        "refuted", "exhaustive", claim=claim, counterexample=Counterexample(detail=detail or claim, **cex)
    )


def sympy_equal(claim: str, lhs: Any, rhs: Any, *, timeout_s: Optional[float] = None) -> Result:
    """``lhs == rhs`` as a polynomial identity in its symbols, proved by SymPy
    (``expand(lhs - rhs) == 0``); "unknown" when the difference does not expand to 0 (it
    may still vanish on the domain: that is for Z3), or when the expansion runs past
    ``timeout_s`` (default: :func:`layoutproof.budget.get_deadline`; reason "timeout").

    >>> import sympy as sp
    >>> i, M = sp.symbols("i M")
    >>> sympy_equal("distributivity", M * (i + 1), M * i + M).status
    'proved'
    """
    import sympy as sp

    t0 = time.perf_counter()
    mine = None
    try:
        with budget.deadline(timeout_s) as mine:
            diff = sp.expand(sp.sympify(lhs) - sp.sympify(rhs))
    except budget.BudgetExceeded as e:
        if e.at != mine:  # an enclosing deadline: the caller's
            raise
        return Result("unknown", "sympy", claim=claim, reason="timeout", seconds=time.perf_counter() - t0)
    if diff == 0:
        return Result("proved", "sympy", claim=claim, seconds=time.perf_counter() - t0)
    return Result(
        "unknown",
        "sympy",
        claim=claim,
        reason=f"lhs - rhs expands to {diff}, not 0",
        seconds=time.perf_counter() - t0,
    )


def attempt(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, or the :class:`~layoutproof.LayoutError` it raises (as a value):
    inadmissible operations are data in the theorems."""
    try:
        return fn(*args)
    except LayoutError as e:
        return e.with_traceback(None)


# ----------------------------------------------------------------------------- oracles
def bymode(A: Layout, B: Layout) -> Layout:
    """C++'s composition of a multi-mode ``B``: ``A`` composed with each flat leaf of ``B``
    separately, the results concatenated (right distributivity, no disjointness check).
    Each single-leaf composition is layoutproof's (exact); only the concatenation is
    unchecked.  Raises when a leaf is inadmissible."""
    fs, fd = flat(B)
    parts = [composition(A, Layout.trusted(s, d)) for s, d in zip(fs, fd)]
    return parts[0] if len(parts) == 1 else make_layout(*parts)


def ordered_factorizations(n: int) -> List[Tuple[int, ...]]:
    """Every way to write ``n`` as an ordered product of extents >= 2 (``()`` for 1).

    >>> ordered_factorizations(8)
    [(2, 2, 2), (2, 4), (4, 2), (8,)]
    """
    return list(_factorizations(n))


@functools.cache
def _factorizations(n: int) -> Tuple[Tuple[int, ...], ...]:
    if n == 1:
        return ((),)
    out = []
    for f in range(2, n + 1):
        if n % f == 0:
            for rest in _factorizations(n // f):
                out.append((f,) + rest)
    return tuple(sorted(out))


def reproducing_layout(vals: Sequence[int]) -> Optional[Layout]:
    """A layout ``R`` of size ``len(vals)`` with ``R(j) == vals[j]`` for every ``j``, or
    None when there is none.  Brute force, independent of the algebra: for each ordered
    factorization ``(t0, t1, ...)`` of the size the strides are forced (``e_k`` is the value
    at ``t0*...*t(k-1)``), so trying every factorization decides existence."""
    v = [int(x) for x in vals]
    n = len(v)
    if n == 0 or v[0] != 0:
        return None
    if n == 1:
        return Layout.trusted(1, 0)
    for shape in _factorizations(n):
        strides = []
        p = 1
        for t in shape:
            strides.append(v[p])
            p *= t
        L = Layout.trusted(shape, tuple(strides)) if len(shape) > 1 else Layout.trusted(shape[0], strides[0])
        if offsets(L) == v:
            return L
    return None


def greedy_tiling(vals: Sequence[int], limit: int) -> Tuple[str, int]:
    """Can translates ``t + V`` (``V`` = ``vals``, containing 0) partition an interval
    ``[0, K)``?  Every translate set of such a tiling contains 0, and the smallest point
    not yet covered can only be covered by the translate placed exactly there; so the
    tiling, if any, is forced, and placing translates greedily decides it:

    * ``("collides", u)``: the translate forced at ``u`` overlaps an earlier one -- no set
      ``T`` (a layout's image or not) makes ``(V, T)`` a bijection onto any ``[0, K)``;
    * ``("tiles", K)``: ``[0, K)`` is tiled (``K <= limit``);
    * ``("open", limit)``: neither decided below ``limit``.

    >>> greedy_tiling([0, 1, 3, 4], 64)
    ('collides', 2)
    >>> greedy_tiling([0, 1, 4, 5], 64)
    ('tiles', 8)
    """
    V = sorted(set(int(x) for x in vals))
    if len(V) != len(vals):
        return ("collides", 0)
    top = V[-1]
    covered = bytearray(limit + top + 1)
    u = 0
    while u < limit:
        for x in V:
            if covered[u + x]:
                return ("collides", u)
        for x in V:
            covered[u + x] = 1
        while u < limit and covered[u]:
            u += 1
        if not any(covered[u : u + top + 1]):
            return ("tiles", u)
    return ("open", limit)


def shape_quotient(S: Sequence[int], d: int) -> Optional[Tuple[int, ...]]:
    """``S / d`` per REFERENCES T2/T3 (``(s_i/c, s_(i+1), ..., s_a)``) when ``S`` is left
    divisible by ``d``, else None.

    >>> shape_quotient((4, 6, 8, 10), 12), shape_quotient((6, 4), 4)
    ((2, 8, 10), None)
    """
    S = tuple(S)
    a = len(S) - 1
    p = 1
    for i, s in enumerate(S):
        if d % p == 0:
            c = d // p
            if (i == a or c < s) and s % c == 0:
                return (s // c,) + S[i + 1 :]
        p *= s
    return None


def left_divisible(S: Sequence[int], d: int) -> bool:
    """T2: some ``i`` with ``s0...s(i-1) | d``, ``c = d/(s0...s(i-1))``, ``c < s_i`` when
    ``i < a``, and ``c | s_i``.

    >>> left_divisible((4, 6), 8), left_divisible((6, 4), 4)
    (True, False)
    """
    return d >= 1 and shape_quotient(S, d) is not None


def weakly_left_divisible(S: Sequence[int], N: int) -> bool:
    """T2 without the last clause: some ``i`` with ``s0...s(i-1) | N`` and, when ``i < a``,
    ``N/(s0...s(i-1)) < s_i``.

    >>> weakly_left_divisible((4, 6), 3), weakly_left_divisible((4, 6), 6), weakly_left_divisible((4, 6), 8)
    (True, False, True)
    """
    S = tuple(S)
    a = len(S) - 1
    p = 1
    for i, s in enumerate(S):
        if N % p == 0 and (i == a or N // p < s):
            return True
        p *= s
    return False


def coalesce_keep_last(A: Layout) -> Layout:
    """``A`` coalesced except that its own last flat mode stays the last mode (its stride
    is the direction composition extends ``A`` in, even when its extent is 1).

    >>> str(coalesce_keep_last(Layout((2, 1), (0, 1)))), str(coalesce_keep_last(Layout((2, 3), (1, 2))))
    ('(2,1):(0,1)', '6:1')
    """

    fs, fd = flat(A)
    if len(fs) == 1:
        return A
    head = coalesce(Layout.trusted(fs[:-1], fd[:-1]))
    hs, hd = flat(head)
    modes = [(s, d) for s, d in zip(hs, hd) if s != 1]
    last = (fs[-1], fd[-1])
    if modes and modes[-1][0] * modes[-1][1] == last[1]:
        s, d = modes.pop()
        last = (s * last[0], d)
    modes.append(last)
    if len(modes) == 1:
        return Layout.trusted(modes[0][0], modes[0][1])
    return Layout.trusted(tuple(m[0] for m in modes), tuple(m[1] for m in modes))


def cpp_conditions(A: Layout, n: int, r: int) -> Optional[str]:
    """C++ (2024) composition's static conditions for ``A o n:r`` (REFERENCES T5), on ``A``
    coalesced with its own last mode kept (:func:`coalesce_keep_last`, C++'s
    ``coalesce_x``), with modes ``s_0 .. s_a``.  Two folds over the modes but the last,
    each step a C++ ``shape_div`` that asserts ``x % y == 0 or y % x == 0``:

    * *stride divisibility*: ``s'_k = shape_div(s_k, r_k)``, ``r_(k+1) = shape_div(r_k, s_k)``
      from ``r_0 = r``;
    * *shape divisibility*: ``n_(k+1) = shape_div(n_k, s'_k)`` from ``n_0 = n``.

    (``shape_div(x, y)`` is ``x / y``, or 1 when ``x`` divides ``y``.)  None when both
    hold, else the name of the first that fails.

    >>> cpp_conditions(Layout((4, 6, 8, 10), (2, 3, 5, 7)), 6, 12)
    'shape divisibility'
    >>> cpp_conditions(Layout((4, 6), (1, 5)), 2, 3), cpp_conditions(Layout((4, 6), (1, 5)), 2, 4)
    ('stride divisibility', None)
    """

    def div(x: int, y: int) -> Optional[int]:
        if x % y and y % x:
            return None
        return x // y if x >= y else 1

    fs, _fd = flat(coalesce_keep_last(A))
    reduced = []
    rest = r
    for s in fs[:-1]:
        q, rest2 = div(s, rest) if rest else None, div(rest, s) if rest else None
        if q is None or rest2 is None:
            return "stride divisibility"
        reduced.append(q)
        rest = rest2
    rest_n = n
    for s in reduced:
        q = div(rest_n, s)
        if q is None:
            return "shape divisibility"
        rest_n = q
    return None


def chain_permutation(shape: Sequence[Any], stride: Sequence[Any]) -> Optional[List[int]]:
    """An order ``p`` of the modes with ``stride[p0] == 1`` and ``stride[p(k+1)] ==
    shape[pk]*stride[pk]``: the layout is then compact, a bijection onto ``[0, size)``
    (mixed radix).  Works on SymPy expressions (equality after expansion); None when no
    mode order chains.

    >>> chain_permutation((4, 2, 3), (6, 1, 2))
    [1, 2, 0]
    """
    import sympy as sp

    n = len(shape)

    def same(a: Any, b: Any) -> bool:
        if type(a) is int and type(b) is int:
            return a == b
        return sp.expand(sp.sympify(a) - sp.sympify(b)) == 0

    for p in itertools.permutations(range(n)):
        if not same(stride[p[0]], 1):
            continue
        if all(same(stride[p[k + 1]], shape[p[k]] * stride[p[k]]) for k in range(n - 1)):
            return list(p)
    return None


# ----------------------------------------------------------------------------- bit-vector obligations
class BVObligation:
    """A Z3 bit-vector query ``facts and not claim`` with the interface of the verifier's
    obligations (``smt2()``), so that the report exports it and cvc5 re-checks it.  It is
    decided by :func:`layoutproof.symbolic.solver.prove` (logic QF_BV)."""

    def __init__(self, claim: Any, facts: Sequence[Any] = ()) -> None:
        self.claim = claim
        self.facts = tuple(facts)

    def assertions(self) -> List[Any]:
        """The facts and ``not claim`` (Z3 terms)."""
        import z3

        return [*self.facts, z3.Not(self.claim)]

    def solver(self, timeout_ms: int = 10_000) -> Any:
        """An unstarted Z3 solver holding :meth:`assertions` (``decide`` runs the query)."""
        from layoutproof.symbolic import solver

        return solver.make_solver(self.assertions(), timeout_ms)

    def smt2(self) -> str:
        from layoutproof.symbolic import solver

        return solver.smtlib_text(self.assertions(), "QF_BV")

    def decide(self, purpose: str, timeout_ms: int = 10_000) -> ProofObligation:
        """Ask Z3; the :class:`~layoutproof.verify.ProofObligation` with its verdict."""
        from layoutproof.symbolic import solver

        v = solver.prove(
            self.claim,
            self.facts,
            timeout_s=timeout_ms / 1000.0,
            name=purpose,
            logic="QF_BV",
            check_facts=False,
        )
        verdict = v.z3_answer
        return ProofObligation(
            purpose,
            self.claim,
            self.facts,
            verdict,
            self,
            v.seconds,
            reason=None if verdict != "unknown" else v.reason,
        )


def z3_claim(purpose: str, claim: Any, facts: Sequence[Any] = (), timeout_ms: int = 10_000) -> Result:
    """A SymPy ``claim`` proved by Z3 from the SymPy ``facts``
    (:func:`layoutproof.symbolic.solver.prove`, Python integer semantics): "proved" when
    ``facts and not claim`` is unsatisfiable; "refuted" when Z3's model, substituted into
    the claim by SymPy, makes it false; "unknown" otherwise (a timeout, or a model SymPy
    does not confirm).  Facts that contradict each other give "unknown" (they would prove
    anything).  The query is kept as an obligation (SMT-LIB export, cvc5 cross-check).

    >>> import sympy as sp
    >>> x = sp.Symbol("x", integer=True, nonnegative=True)
    >>> z3_claim("x < 4 implies 2x < 8", sp.Implies(x < 4, 2 * x < 8)).status
    'proved'
    >>> r = z3_claim("x < 4 implies 3x < 8", sp.Implies(x < 4, 3 * x < 8))
    >>> r.status, r.counterexample.assignment
    ('refuted', {'x': 3})
    """
    import sympy as sp

    from layoutproof.symbolic import solver

    t0 = time.perf_counter()
    facts = tuple(facts)
    v = solver.prove(claim, facts, timeout_s=timeout_ms / 1000.0, name=purpose)
    if v.status == "vacuous":
        return Result(
            "unknown",
            "z3",
            claim=purpose,
            seconds=time.perf_counter() - t0,
            reason="the assumptions contradict each other (every claim would follow from them)",
        )
    po = ProofObligation(
        purpose,
        claim,
        facts,
        v.z3_answer,
        v,
        v.seconds,
        reason=v.reason if v.status == "unknown" else None,
    )
    text = [str(f) for f in facts]
    if v.status == "proved":
        return Result(
            "proved",
            "z3",
            claim=purpose,
            obligations=[po],
            assumptions=text,
            seconds=time.perf_counter() - t0,
        )
    if v.status == "refuted":
        model = v.model or {}
        syms: set = set(getattr(claim, "free_symbols", ()))
        for f in facts:
            syms |= set(getattr(f, "free_symbols", ()))
        env = {s: int(model[s.name]) for s in syms if s.name in model}
        value = claim.subs(env) if hasattr(claim, "subs") else None
        if value is sp.false or value is False:
            asg = {k.name: val for k, val in sorted(env.items(), key=lambda kv: kv[0].name)}
            return Result(
                "refuted",
                "z3",
                claim=purpose,
                obligations=[po],
                assumptions=text,
                counterexample=Counterexample(assignment=asg, detail="the claim is false"),
                seconds=time.perf_counter() - t0,
            )
        return Result(
            "unknown",
            "z3",
            claim=purpose,
            obligations=[po],
            assumptions=text,
            reason="Z3's model is not confirmed by substitution",
            seconds=time.perf_counter() - t0,
        )
    return Result(
        "unknown",
        "z3",
        claim=purpose,
        obligations=[po],
        assumptions=text,
        reason=v.reason,
        seconds=time.perf_counter() - t0,
    )
