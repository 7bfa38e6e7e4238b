"""Identities between layout expressions for all parameter values, and admissibility.

:func:`identity` proves ``lhs(*params) == rhs(*params)`` (functional equality) for every
assignment of the parameters that satisfies the assumptions:

1. both sides are computed once with the parameters as SymPy symbols, under the
   assumptions (the algebra decides its side conditions there);
2. the two symbolic layouts are compared by :func:`~layoutproof.verify.equal` (SymPy, then
   Z3: "proved" or "refuted" with a confirmed counterexample);
3. when Z3 cannot settle it, or an operation's side condition is undecidable with the
   parameters symbolic, or a side cannot run on symbols (``range(M)`` raises a
   ``TypeError``), both sides are computed concretely at every assignment in a box
   (``bounds``) and compared exhaustively: "checked" with the box, or "refuted" with the
   assignment and the coordinate.

Mistakes in the call (parameters that do not fit the functions or are named twice, a side
that is neither a function nor a layout or returns something else, symbols in the sides
that are not parameters, assumptions that are not conditions) raise
:class:`~layoutproof.errors.MalformedLayoutError` naming them; an exception the caller's own
code raises at concrete values passes through unchanged.

>>> from layoutproof import Layout, composition
>>> r = identity(lambda M, N: composition(Layout((M, N), (N, 1)), Layout(4, 1)),
...              lambda M, N: Layout(4, N), assume="M % 4 == 0")
>>> r.status
'proved'
>>> r = identity(lambda: composition(Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))),
...              lambda: Layout((3, 2), (2, 3)))
>>> r.status, r.condition, r.counterexample.coordinate
('refuted', "disjointness of B's modes in A", 5)
"""

from __future__ import annotations

import inspect
import time
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from layoutproof.errors import (
    InadmissibleError,
    LayoutError,
    MalformedLayoutError,
    UndecidableConditionError,
    show,
)
from layoutproof.layout import Layout
from layoutproof.symbolic import timeout

from ._bounded import MAX_CASES, assignments, user_bounds
from ._concrete import IllFormed, concretize, is_sym, is_symbolic, lifted
from ._engine import Concrete, Fail, TooLarge
from ._run import (
    bounded,
    call_budgeted,
    check_arity,
    extra_facts,
    falsify,
    guard_args,
    run,
    split_params,
)
from ._solve import facts_for, facts_text, params_of, timeout_of
from .equal import layoutish
from .result import Counterexample, ProofObligation, Result

__all__ = ["identity", "admissible", "resolve_op"]


def _layout_like(x: Any) -> bool:
    """A layout, swizzle, composed or F2 layout: a value of a side, not a function of the
    parameters (they are callable too, on coordinates)."""
    return (
        isinstance(x, Layout)
        or lifted(x)
        or hasattr(x, "eval_all")
        or hasattr(x, "as_layout")
        or isinstance(x, type)
    )


def _call(fn: Any, args: Sequence[Any]) -> Any:
    """``fn(*args)`` for a function of the parameters (a layout stands for itself).  An
    exception of the caller's own code passes through unchanged."""
    return fn(*args) if callable(fn) and not _layout_like(fn) else fn


class _NoSymbols(Exception):
    """A side raised a non-layout exception when called with SymPy symbols (``range(M)``):
    it is checked at concrete values only."""


def _call_symbolic(fn: Any, args: Sequence[Any], what: str) -> Any:
    try:
        return _call(fn, args)
    except LayoutError:
        raise
    except Exception as e:  # the caller's code may need ints: the concrete values tell
        raise _NoSymbols(f"{what} raised {type(e).__name__} with symbolic parameters: {e}") from e


def infer_params(lhs: Any) -> List[str]:
    if not callable(lhs) or isinstance(lhs, Layout):
        return []
    try:
        sig = inspect.signature(lhs)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]


def _scalar(x: Any) -> bool:
    return type(x) is int or (
        is_sym(x) and getattr(x, "is_integer", False) is not False and not hasattr(x, "rel_op")
    )


def _side(x: Any, what: str) -> Any:
    """A side of an identity: a layout, or an integer value (``size(...) == M*N``)."""
    if _scalar(x):
        return int(x) if getattr(x, "is_Integer", False) else x
    return layoutish(x, what)


def _compare(eng: Any, a: Any, b: Any) -> None:
    if _scalar(a) or _scalar(b):
        if not (_scalar(a) and _scalar(b)):
            raise Fail(Counterexample(detail=f"a value ({a if _scalar(a) else b}) is compared with a layout"))
        eng.same_value(a, b, "")
        return
    eng.same_function(a, b, "")


def _inadmissible(e: InadmissibleError, side: str) -> Counterexample:
    w = e.witness
    return Counterexample(
        coordinate=w if type(w) is int else None,
        natural=w if type(w) is tuple else None,
        detail=f"{side} is inadmissible ({e.condition})",
    )


def identity(
    lhs: Any,
    rhs: Any,
    params: Any = None,
    *,
    assume: Any = (),
    bounds: Any = None,
    timeout_ms: Optional[int] = None,
    max_cases: int = MAX_CASES,
    claim: Optional[str] = None,
    deadline: Optional[float] = None,
) -> Result:
    """Prove ``lhs(*params) == rhs(*params)`` as functions, for all parameter values
    satisfying the assumptions (the active :func:`~layoutproof.assuming` facts and
    ``assume``).

    ``lhs`` and ``rhs`` are functions of the parameters returning layouts (or layouts).
    ``params`` is ``"M N"``, a list of symbols or names, or None (the names of ``lhs``'s
    positional parameters).  ``bounds`` is the box of the bounded fallback (an int ``hi``
    for ``1..hi``, ``(lo, hi)``, or a dict per parameter; None: 1..64 per parameter,
    widened by the assumptions' congruences; False: no fallback, "unknown" instead).  At
    most ``max_cases`` assignments are enumerated (the box shrinks to fit and is reported).
    ``timeout_ms`` limits each Z3 call, ``deadline`` (seconds) the whole check.

    A refutation is confirmed on the concrete path: both functions called with the
    counterexample's integers and compared exhaustively (or the concrete operation
    inadmissible there); a proof is tested on a few random admissible assignments the same
    way before it is returned.

    >>> from layoutproof import Layout, coalesce
    >>> identity(lambda M, N: coalesce(Layout((M, N), (1, M))), lambda M, N: Layout(M * N, 1)).status
    'proved'
    >>> r = identity(lambda M: Layout((M, 2), (2, 1)), lambda M: Layout(2 * M, 1))
    >>> r.status, r.counterexample.assignment, r.counterexample.coordinate
    ('refuted', {'M': 2}, 1)
    """
    return call_budgeted(
        _identity, "identity", deadline, lhs, rhs, params, assume, bounds, timeout_ms, max_cases, claim
    )


def _identity(
    lhs: Any,
    rhs: Any,
    params: Any,
    assume: Any,
    bounds: Any,
    timeout_ms: Optional[int],
    max_cases: int,
    claim: Optional[str],
) -> Result:
    t0 = time.perf_counter()
    tmo = timeout_of(timeout_ms)
    if type(max_cases) is not int or max_cases < 1:
        raise MalformedLayoutError(f"identity: max_cases must be a positive int, got {max_cases!r:.40}")
    syms, names = split_params(params if params is not None else infer_params(lhs))
    for fn, side in ((lhs, "lhs"), (rhs, "rhs")):
        if callable(fn) and not _layout_like(fn):
            check_arity(fn, names, f"identity: the {side}")
    user_bounds(bounds, names)
    extra_facts(assume)  # the assumptions' types, checked even where nothing parses them
    facts = facts_for(assume) if syms or assume else ()
    ftext = facts_text(facts) if facts else ()
    notes: List[str] = []
    L = R = None
    why: Optional[str] = None

    def case(env: Dict[str, int]) -> Optional[Counterexample]:
        """The concrete path: both functions at the integers ``env``, compared exhaustively."""
        vals = _values(env, names)
        try:
            a = _side(_call(lhs, vals), "identity (lhs)")
        except InadmissibleError as e:
            return _inadmissible(e, "lhs")
        try:
            b = _side(_call(rhs, vals), "identity (rhs)")
        except InadmissibleError as e:
            return _inadmissible(e, "rhs")
        if is_symbolic(a) or is_symbolic(b):
            raise MalformedLayoutError(f"identity: the sides still have symbols at {env}: {a}, {b}")
        try:
            _compare(Concrete(), a, b)
        except Fail as f:
            return f.counterexample
        return None

    def confirmed(env: Optional[Dict[str, int]]) -> Optional[Counterexample]:
        """The concrete counterexample at ``env`` (a complete assignment), else None."""
        if not env or any(n not in env for n in names):
            return None
        try:
            cex = _guarded(case)({n: env[n] for n in names})
        except (IllFormed, TooLarge):
            return None
        return None if cex is None else cex.with_assignment({n: env[n] for n in names})

    try:
        if syms or assume:
            from layoutproof.symbolic import assuming

            with assuming(*extra_facts(assume)), op_timeout(timeout_ms):
                L = _side(_call_symbolic(lhs, syms, "the lhs"), "identity (lhs)")
                R = _side(_call_symbolic(rhs, syms, "the rhs"), "identity (rhs)")
        else:
            L = _side(_call(lhs, ()), "identity (lhs)")
            R = _side(_call(rhs, ()), "identity (rhs)")
    except InadmissibleError as e:
        side = "lhs" if L is None else "rhs"
        cex: Optional[Counterexample] = _inadmissible(e, side)
        asg = getattr(e, "assignment", None)
        if syms:  # the symbolic refutation stands only where the concrete functions confirm it
            cex = confirmed(asg)
            if cex is None:
                found = _find_inadmissible(lhs if L is None else rhs, syms, names, facts, bounds, max_cases)
                if found is not None:
                    cex, asg = found
                    cex = cex.with_assignment(asg)
        if cex is not None:
            return Result(
                "refuted",
                "z3" if syms else "exhaustive",
                claim=claim or "lhs == rhs",
                counterexample=cex,
                condition=e.condition,
                reason=str(e),
                assumptions=ftext,
                seconds=time.perf_counter() - t0,
            )
        why = f"{side} is inadmissible symbolically ({e.condition}), not confirmed at any concrete assignment"
    except UndecidableConditionError as e:
        why = f"a side condition is undecided with symbolic parameters: {e.condition}"
    except _NoSymbols as e:
        # the function cannot run on SymPy symbols (range(M), ...): only concrete values
        # (where an error of the caller's code passes through)
        why = str(e)
    text = claim or (f"{L} == {R}" if L is not None and R is not None else "lhs == rhs")
    obligations: List[ProofObligation] = []
    if why is None:
        extra = set(params_of(L, R)) - set(syms)
        if extra:
            raise MalformedLayoutError(
                f"identity: the sides use the symbols {sorted(s.name for s in extra)}, not parameters "
                f"({names}); name them in params"
            )
        r = run(text, _compare, [L, R], assume=assume, timeout_ms=tmo, bounds=False)
        obligations = list(r.obligations)
        if r.status == "proved" and syms:
            bad = falsify(_guarded(case), syms, facts)
            if bad is not None:
                return Result(
                    "refuted",
                    "bounded",
                    claim=text,
                    counterexample=bad,
                    obligations=obligations,
                    assumptions=ftext,
                    seconds=time.perf_counter() - t0,
                    notes=["the symbolic sides were proved equal, but the concrete functions differ there"],
                )
        if r.status == "refuted" and syms:
            c = r.counterexample
            conf = confirmed(c.assignment if c is not None else None)
            if conf is not None:
                return r.replace(counterexample=conf, seconds=time.perf_counter() - t0)
            r = r.replace(
                status="unknown",
                counterexample=None,
                reason=f"the symbolic refutation ({c}) is not confirmed by the concrete functions",
            )
        if r.status != "unknown":
            return r.replace(seconds=time.perf_counter() - t0)
        why = r.reason or "unknown"
    if bounds is False or not syms:
        return Result(
            "unknown",
            "z3",
            claim=text,
            reason=why,
            obligations=obligations,
            assumptions=ftext,
            seconds=time.perf_counter() - t0,
        )
    notes.append(f"bounded check because {why}")
    res = bounded(text, _guarded(case), syms, facts, bounds, max_cases, t0)
    return res.replace(obligations=obligations, assumptions=ftext, notes=notes + list(res.notes))


@contextmanager
def op_timeout(timeout_ms: Optional[int]) -> Iterator[None]:
    """The algebra's own side-condition decisions (layoutproof.symbolic) use ``timeout_ms``
    inside the block when it is given (the global setting is restored after)."""
    with timeout(timeout_ms):
        yield


def _values(env: Dict[str, int], names: List[str]) -> List[Any]:
    import sympy as sp

    return [sp.Integer(env[n]) for n in names]  # exact arithmetic in the user's functions (M/64)


def _guarded(case: Callable[[Dict[str, int]], Optional[Counterexample]]) -> Callable[..., Any]:
    """Ill-formed assignments (a layout leaf not an integer there) are skipped, not failures."""

    def run_case(env: Dict[str, int]) -> Optional[Counterexample]:
        try:
            return case(env)
        except (MalformedLayoutError, UndecidableConditionError) as e:
            raise IllFormed(str(e)) from None

    return run_case


def _find_inadmissible(
    fn: Any, syms: List[Any], names: List[str], facts: tuple, bounds: Any, max_cases: int
) -> Any:
    """A concrete assignment at which ``fn`` raises InadmissibleError (and its error)."""
    envs, _box = assignments(syms, facts, bounds, min(max_cases, 512))
    for env in envs:
        try:
            _call(fn, _values(env, names))
        except InadmissibleError as e:
            return _inadmissible(e, "the statement"), env
        except LayoutError:
            continue
    return None


# ----------------------------------------------------------------------------- admissibility
def resolve_op(op: Any) -> Any:
    """An algebra function from itself or its name (``"composition"``)."""
    if isinstance(op, Layout) or lifted(op):
        raise MalformedLayoutError(f"expected an operation or its name, got the layout {op}")
    if callable(op):
        return op
    if isinstance(op, str):
        import layoutproof as lp

        fn = getattr(lp, op, None)
        if fn is None:
            from layoutproof import ops

            fn = getattr(ops, op, None)
        if callable(fn):
            return fn
    raise MalformedLayoutError(f"unknown operation {show(op)}")


def admissible(
    op: Any,
    *args: Any,
    assume: Any = (),
    bounds: Any = False,
    timeout_ms: Optional[int] = None,
    max_cases: int = MAX_CASES,
    deadline: Optional[float] = None,
) -> Result:
    """Is ``op(*args)`` admissible: do its side conditions hold (for all parameter values
    satisfying the assumptions, when the arguments are symbolic)?

    Runs the operation under the assumptions: success is "proved"; an InadmissibleError is
    "refuted" with the violated ``condition``, the witness coordinate and, for symbolic
    arguments, an assignment; an UndecidableConditionError is "unknown" with the
    condition to assume (or, with ``bounds``, a bounded check of every assignment in the
    box).

    >>> from layoutproof import Layout, symbols
    >>> r = admissible("complement", Layout((2, 2), (1, 3)), 16)
    >>> r.status, r.condition
    ('refuted', 'complement admissibility (stride chain)')
    >>> M = symbols("M")
    >>> admissible("composition", Layout((M, 8), (1, M)), Layout(4, 1), assume="M % 4 == 0").status
    'proved'
    """
    return call_budgeted(_admissible, "admissible", deadline, op, args, assume, bounds, timeout_ms, max_cases)


def _admissible(
    op: Any, args: tuple, assume: Any, bounds: Any, timeout_ms: Optional[int], max_cases: int
) -> Result:
    t0 = time.perf_counter()
    guard_args(*args)
    user_bounds(bounds, [])
    extra_facts(assume)
    fn = resolve_op(op)
    name = getattr(fn, "__name__", str(op))
    try:
        inspect.signature(fn).bind(*args)
    except TypeError as e:
        raise MalformedLayoutError(
            f"admissible({name}): the arguments do not fit its signature: {e}"
        ) from None
    except ValueError:  # no signature to check (a builtin): the call itself says
        pass
    claim = f"{name}({', '.join(_arg_text(a) for a in args)}) is admissible"
    symbolic = any(is_symbolic(a) for a in args)
    ftext: tuple = ()
    timeout_of(timeout_ms)  # validates
    undecided: Optional[Tuple[str, Any, Any]] = None
    try:
        if symbolic or assume:
            from layoutproof.symbolic import assuming

            facts = facts_for(assume)
            ftext = facts_text(facts)
            with assuming(*extra_facts(assume)), op_timeout(timeout_ms):
                _call(fn, args)
        else:
            _call(fn, args)
    except InadmissibleError as e:
        cex: Optional[Counterexample] = _inadmissible(e, name)
        asg = getattr(e, "assignment", None)
        if symbolic:  # confirmed by the concrete operation at the assignment, or not at all
            cex = _inadmissible_at(fn, name, args, asg)
        if cex is not None:
            return Result(
                "refuted",
                "z3" if symbolic else "exhaustive",
                claim=claim,
                condition=e.condition,
                counterexample=cex,
                reason=str(e),
                assumptions=ftext,
                seconds=time.perf_counter() - t0,
            )
        why = f"{e.condition} (refuted symbolically, not confirmed by the concrete operation)"
        undecided = (why, None, None)
    except UndecidableConditionError as e:
        undecided = (str(e.condition), getattr(e, "counterexample", None), e)
    except TooLarge as e:  # pragma: no cover - the algebra does not raise it
        return Result("unknown", "exhaustive", claim=claim, reason=str(e), seconds=time.perf_counter() - t0)
    params = params_of(*args)

    def case(env: Dict[str, int]) -> Optional[Counterexample]:
        try:
            cargs = [concretize(a, env) for a in args]
            _call(fn, cargs)
        except InadmissibleError as err:
            return _inadmissible(err, name)
        except (MalformedLayoutError, UndecidableConditionError) as err:
            raise IllFormed(str(err)) from None
        return None

    if undecided is None:
        bad = falsify(case, params, facts_for(assume)) if symbolic else None
        if bad is not None:
            return Result(
                "refuted",
                "bounded",
                claim=claim,
                counterexample=bad,
                assumptions=ftext,
                notes=["the symbolic operation succeeded, but the concrete one is inadmissible there"],
                seconds=time.perf_counter() - t0,
            )
        return Result(
            "proved",
            "z3" if symbolic else "exhaustive",
            claim=claim,
            assumptions=ftext,
            seconds=time.perf_counter() - t0,
        )
    cond, ce, err = undecided
    notes = []
    if ce:
        notes.append("it fails for " + ", ".join(f"{k} = {v}" for k, v in sorted(ce.items())))
    obligations = _obligation_of(err, facts_for(assume)) if err is not None else []
    if bounds is False:
        return Result(
            "unknown",
            "z3",
            claim=claim,
            condition=cond,
            reason=f"undecided: {cond} (assume it, or its negation)",
            assumptions=ftext,
            obligations=obligations,
            notes=notes,
            seconds=time.perf_counter() - t0,
        )
    res = bounded(claim, case, params, facts_for(assume), bounds, max_cases, t0)
    return res.replace(
        condition=cond,
        assumptions=ftext,
        obligations=obligations,
        notes=[f"bounded check because {cond} is undecided"] + notes + list(res.notes),
    )


def _inadmissible_at(
    fn: Any, name: str, args: tuple, asg: Optional[Dict[str, int]]
) -> Optional[Counterexample]:
    """The concrete operation's InadmissibleError at ``asg`` as a counterexample (with the
    assignment), or None when it is admissible there or ``asg`` does not make it concrete."""
    if not asg:
        return None
    try:
        cargs = [concretize(a, asg) for a in args]
    except LayoutError:
        return None
    if any(is_symbolic(a) for a in cargs):
        return None
    try:
        _call(fn, cargs)
    except InadmissibleError as err:
        return _inadmissible(err, name).with_assignment(asg)
    except LayoutError:
        return None
    return None


def _obligation_of(e: UndecidableConditionError, facts: tuple) -> List[ProofObligation]:
    """The undecided condition as an obligation (for SMT-LIB export), when it parses."""
    try:
        from layoutproof.symbolic import parse_expr, smt

        c = parse_expr(str(e.condition))
        return [
            ProofObligation(f"side condition {e.condition}", c, facts, "unknown", smt.Obligation(c, facts))
        ]
    except (LayoutError, TypeError, ValueError, AttributeError):
        return []


def _arg_text(a: Any) -> str:
    if isinstance(a, Layout):
        return str(a)
    if type(a) is tuple:
        return "(" + ", ".join(_arg_text(e) for e in a) + ")"
    return str(a)
