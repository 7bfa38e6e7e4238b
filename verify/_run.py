"""One driver for every check written against the engines (layoutproof.verify._engine).

``run(claim, check, objs, ...)`` decides ``check(engine, *objs)``:

1. concrete objects: the :class:`~._engine.Concrete` engine, exhaustively (complete);
   domains past the exhaustive limit go to Z3 like symbolic ones;
2. symbolic objects: the :class:`~._engine.Symbolic` engine's claims, each proved by SymPy
   or Z3 under the assumptions (every Z3 call with a time limit).  A Z3 model is confirmed
   by substituting its parameter values and running the concrete check there: only a
   confirmed counterexample refutes;
3. otherwise (a claim Z3 cannot settle, a statement with no symbolic form): bounded
   checking over every parameter assignment in a box (``bounds``), or "unknown" when
   ``bounds`` is False.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof import budget
from layoutproof.errors import (
    InadmissibleError,
    LayoutError,
    MalformedLayoutError,
    UndecidableConditionError,
    show,
)
from layoutproof.inttuple import check_depth
from layoutproof.layout import Layout
from layoutproof.outcome import REFUTED
from layoutproof.symbolic import assuming, is_sym, symbols

from ._bounded import MAX_CASES, assignments, user_bounds
from ._concrete import IllFormed, concretize, int_eval, is_symbolic, natural
from ._engine import Concrete, Fail, NotExpressible, Symbolic, TooLarge
from ._solve import facts_consistent, facts_for, facts_text, params_of, prove, timeout_of
from .result import Counterexample, ProofObligation, Result

__all__ = [
    "run",
    "bounded",
    "extra_facts",
    "call_budgeted",
    "check_arity",
    "guard_args",
    "falsify",
    "FALSIFY_CASES",
]

#: How many random admissible assignments a symbolic "proved" is tested on before it is returned.
FALSIFY_CASES = 6


def guard_args(*objs: Any) -> None:
    """Refuse, as MalformedLayoutError and without recursing, an argument nested deeper
    than the algebra allows (a hostile tuple must not become a RecursionError)."""
    for o in objs:
        check_depth(o, "an argument")


def check_arity(fn: Any, names: Sequence[str], what: str) -> None:
    """Refuse, as MalformedLayoutError, a function of the parameters (``fn``, one side of a
    check) that cannot be called with one argument per parameter (``names``): the mistake
    would otherwise surface as a bare TypeError from inside the check."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to check (a builtin): the call itself says
        return
    try:
        sig.bind(*names)
    except TypeError as e:
        ps = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        takes = ", ".join(p.name for p in ps) or "no positional parameters"
        given = ", ".join(names) if names else "none"
        raise MalformedLayoutError(
            f"{what} takes ({takes}) but is called with one value per parameter, "
            f"{len(names)} ({given}): {e}; pass params that match the functions"
        ) from None


def call_budgeted(
    fn: Callable[..., Result], name: str, deadline: Optional[float], *args: Any, **kw: Any
) -> Result:
    """``fn(*args, **kw)`` -- a public check -- under the overall deadline (seconds;
    None: :func:`layoutproof.budget.get_deadline`) and in a copy of the context (nothing
    it sets leaks out); past the deadline the result is "unknown" with the reason
    "timeout"."""
    import contextvars

    t0 = time.perf_counter()
    with budget.deadline(deadline) as mine:
        try:
            return contextvars.copy_context().run(fn, *args, **kw)
        except budget.BudgetExceeded as e:
            if e.at is not None and e.at < mine - 1e-9:  # an enclosing call's deadline
                raise
    return Result(
        "unknown",
        "z3",
        claim=f"{name}(...)",
        reason="timeout",
        notes=(f"the overall deadline of {mine - t0:.3g} s ran out",),
        seconds=time.perf_counter() - t0,
    )


def extra_facts(assume: Any) -> tuple:
    """``assume`` as a tuple of conditions (for ``assuming(*...)``)."""
    if assume is None:
        return ()
    if isinstance(assume, str) or not hasattr(assume, "__iter__"):
        out: tuple = (assume,)
    else:
        out = tuple(assume)
    for a in out:  # checked here too, where concrete layouts never parse them
        if not (isinstance(a, (str, bool)) or hasattr(a, "free_symbols")):
            raise MalformedLayoutError(
                f"assume: each assumption is a string or a SymPy relation, got {show(a)}"
            )
    return out


def _concrete_check(check: Callable[..., None], objs: Sequence[Any]) -> Optional[Counterexample]:
    try:
        check(Concrete(), *objs)
    except Fail as f:
        return f.counterexample
    return None


def run(
    claim: str,
    check: Callable[..., None],
    objs: Sequence[Any],
    *,
    assume: Any = (),
    timeout_ms: Optional[int] = None,
    bounds: Any = None,
    max_cases: int = MAX_CASES,
) -> Result:
    t0 = time.perf_counter()
    tmo = timeout_of(timeout_ms)
    if type(max_cases) is not int or max_cases < 1:
        raise MalformedLayoutError(f"max_cases must be a positive int, got {show(max_cases)}")
    user_bounds(bounds, [])
    extra_facts(assume)  # the assumptions' types, checked even where nothing parses them
    symbolic = any(is_symbolic(o) for o in objs)
    if not symbolic:
        try:
            cex = _concrete_check(check, objs)
        except TooLarge as e:
            return _solve(claim, check, objs, assume, tmo, False, max_cases, t0, note=f"{e}: decided by Z3")
        except NotExpressible as e:
            return Result(
                "unknown", "exhaustive", claim=claim, reason=str(e), seconds=time.perf_counter() - t0
            )
        if cex is None:
            return Result("proved", "exhaustive", claim=claim, seconds=time.perf_counter() - t0)
        return Result(
            "refuted", "exhaustive", claim=claim, counterexample=cex, seconds=time.perf_counter() - t0
        )
    return _solve(claim, check, objs, assume, tmo, bounds, max_cases, t0)


def _solve(
    claim: str,
    check: Callable[..., None],
    objs: Sequence[Any],
    assume: Any,
    tmo: int,
    bounds: Any,
    max_cases: int,
    t0: float,
    note: Optional[str] = None,
) -> Result:
    facts = facts_for(assume)
    ftext = facts_text(facts)
    notes: List[str] = [note] if note else []
    consistent = facts_consistent(facts, tmo)
    if consistent is False:
        return Result(
            "unknown",
            "z3",
            claim=claim,
            reason="the assumptions contradict each other (every claim would follow from them)",
            assumptions=ftext,
            seconds=time.perf_counter() - t0,
        )
    params = params_of(*objs)
    taken = set(params)
    for f in facts:
        taken |= getattr(f, "free_symbols", set())
    eng = Symbolic(taken=taken)  # coordinate symbols get names no parameter or fact uses
    obligations: List[ProofObligation] = []
    why: Optional[str] = None
    try:
        with assuming(*extra_facts(assume)):
            check(eng, *objs)
    except Fail as f:  # structural: fails for every assignment -- confirmed at one
        found = _confirm_somewhere(claim, check, objs, params, facts) if params else f.counterexample
        if found is not None:
            return Result(
                "refuted",
                "sympy",
                claim=claim,
                counterexample=found,
                assumptions=ftext,
                seconds=time.perf_counter() - t0,
            )
        why = f"{f.counterexample}: not confirmed by the concrete check at any assignment tried"
    except (NotExpressible, UndecidableConditionError) as e:
        why = (
            f"no symbolic form: {e}"
            if isinstance(e, NotExpressible)
            else f"undecided symbolically: {e.condition}"
        )
    if why is None:
        methods = set()
        for purpose, c, extra, _coord in eng.claims:
            v, ob = prove(purpose, c, facts + extra, tmo)
            if ob is not None:
                obligations.append(ob)
            methods.add(v.method)
            if v.holds:
                continue
            if v.status == REFUTED:
                env = {p.name: v.model[p.name] for p in params if v.model and p.name in v.model}
                if len(env) < len(params):  # the claim does not mention every parameter
                    small = bounded(
                        claim,
                        lambda e: _concrete_check(check, [concretize(o, e) for o in objs]),
                        params,
                        facts,
                        None,
                        256,
                        time.perf_counter(),
                    )
                    cex, huge = (small.counterexample if small.status == "refuted" else None), False
                else:
                    cex, huge = _confirm(check, objs, env)
                if cex is not None:
                    cex = _smaller(claim, check, objs, params, facts, cex)
                elif huge:  # too large to evaluate exhaustively: a small counterexample, else Z3's
                    # coordinate evaluated on the concrete objects there
                    cex = _smaller(claim, check, objs, params, facts, None) if params else None
                    if cex is None:
                        cex = _at_point(objs, env, dict(v.model or {}), _coord, purpose)
                if cex is not None:
                    return Result(
                        "refuted",
                        v.method,
                        claim=claim,
                        counterexample=cex,
                        obligations=obligations,
                        assumptions=ftext,
                        seconds=time.perf_counter() - t0,
                        notes=notes,
                    )
                why = (
                    f"{purpose}: Z3's model ({_env_text(env)}) is too large to confirm by the concrete check"
                    if huge
                    else f"{purpose}: Z3's model ({_env_text(env)}) is not a counterexample once substituted"
                )
                break
            why = f"{purpose}: {v.reason}"
            break
        else:
            method = "z3" if "z3" in methods else "sympy"
            bad = falsify(lambda e: _concrete_check(check, [concretize(o, e) for o in objs]), params, facts)
            whole = any(c[0] == "same value at every coordinate" for c in eng.claims)
            if bad is None and not params and whole:
                bad = _sample_points(objs)  # a domain too large to evaluate: random coordinates
            if bad is not None:
                return Result(
                    "refuted",
                    "bounded",
                    claim=claim,
                    counterexample=bad,
                    obligations=obligations,
                    assumptions=ftext,
                    seconds=time.perf_counter() - t0,
                    notes=notes
                    + ["the solver proved the claim, but the concrete check refutes it (an encoding error)"],
                )
            return Result(
                "proved",
                method,
                claim=claim,
                obligations=obligations,
                assumptions=ftext,
                seconds=time.perf_counter() - t0,
                notes=notes,
            )
    if bounds is False:
        return Result(
            "unknown",
            "z3",
            claim=claim,
            reason=why,
            obligations=obligations,
            assumptions=ftext,
            seconds=time.perf_counter() - t0,
            notes=notes,
        )
    notes.append(f"bounded check because {why}")
    r = bounded(
        claim,
        lambda env: _concrete_check(check, [concretize(o, env) for o in objs]),
        params,
        facts,
        bounds,
        max_cases,
        t0,
    )
    return r.replace(obligations=obligations, assumptions=ftext, notes=notes + list(r.notes))


def _smaller(
    claim: str,
    check: Callable[..., None],
    objs: Sequence[Any],
    params: List[Any],
    facts: tuple,
    cex: Optional[Counterexample],
) -> Optional[Counterexample]:
    """A counterexample with the smallest parameter values found in a small default box
    (Z3's models are correct but often large); ``cex`` when the box has none."""
    small = bounded(
        claim,
        lambda env: _concrete_check(check, [concretize(o, env) for o in objs]),
        params,
        facts,
        None,
        256,
        time.perf_counter(),
    )
    if small.status == "refuted" and small.counterexample is not None:
        return small.counterexample
    return cex


def falsify(
    case: Callable[[Dict[str, int]], Optional[Counterexample]],
    params: List[Any],
    facts: tuple,
    n: Optional[int] = None,
) -> Optional[Counterexample]:
    """The falsification pass of a symbolic proof: ``case`` (the concrete check) at the
    smallest and at a few random admissible assignments (seeded; they satisfy the
    assumptions); a counterexample found there (with its assignment), else None."""
    import random

    if not params:
        return None
    n = FALSIFY_CASES if n is None else n
    envs, _box = assignments(params, facts, None, 512)
    if not envs:
        return None
    rng = random.Random(len(envs))
    pick = [envs[0]] + rng.sample(envs[1:], min(n - 1, len(envs) - 1))
    for env in pick:
        budget.check()
        try:
            cex = case(env)
        except (IllFormed, TooLarge, NotExpressible):
            continue
        except InadmissibleError as e:
            w = e.witness if type(e.witness) is int else None
            cex = Counterexample(coordinate=w, detail=f"inadmissible ({e.condition})")
        except (MalformedLayoutError, UndecidableConditionError):
            continue
        if cex is not None:
            return cex.with_assignment(env)
    return None


def _confirm_somewhere(
    claim: str, check: Callable[..., None], objs: Sequence[Any], params: List[Any], facts: tuple
) -> Optional[Counterexample]:
    """A structural failure of the symbolic engine (one for every assignment) confirmed by
    the concrete check at the first admissible assignments that evaluate."""
    envs, _box = assignments(params, facts, None, 64)
    tried = 0
    for env in envs:
        budget.check()
        try:
            cex, huge = _confirm(check, objs, env)
        except LayoutError:
            continue
        if huge:
            continue
        tried += 1
        if cex is not None:
            return cex
        if tried >= 8:
            break
    return None


def _env_text(env: Dict[str, int]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(env.items()))


def _confirm(
    check: Callable[..., None], objs: Sequence[Any], env: Dict[str, int]
) -> Tuple[Optional[Counterexample], bool]:
    """The concrete counterexample at ``env`` if the check fails there; and whether the
    domain was too large to evaluate."""
    try:
        cobjs = [concretize(o, env) for o in objs]
        if any(is_symbolic(o) for o in cobjs):
            return None, False
        cex = _concrete_check(check, cobjs)
    except TooLarge:
        return None, True
    except (IllFormed, NotExpressible, LayoutError):
        return None, False
    return (None if cex is None else cex.with_assignment(env)), False


def _sample_points(objs: Sequence[Any], n: int = 64) -> Optional[Counterexample]:
    """The falsification pass of a solver's proof that two concrete layouts too large to
    evaluate are the same function: both evaluated at ``n`` random coordinates (seeded)."""
    import random

    if len(objs) != 2 or not all(isinstance(o, Layout) and not o.is_symbolic for o in objs):
        return None
    a, b = objs
    if a.size != b.size:
        return None
    rng = random.Random(a.size)
    for k in [0, a.size - 1] + [rng.randrange(a.size) for _ in range(n)]:
        budget.check()
        va, vb = a(k), b(k)
        if va != vb:
            return Counterexample(coordinate=k, natural=natural(k, a), lhs=va, rhs=vb)
    return None


def _at_point(
    objs: Sequence[Any], env: Dict[str, int], model: Dict[str, int], coord: Any, purpose: str
) -> Optional[Counterexample]:
    """For a claim that two layouts are the same function (equal, identity) whose domain is
    too large to evaluate exhaustively: the 1-D coordinate of Z3's model, both concrete
    layouts evaluated there (the concrete path, one coordinate); a counterexample only when
    the values differ."""
    # only the whole claim "objs[0] and objs[1] are the same function" (equal, identity):
    # a sub-claim of a post-condition compares other layouts than the operands
    if len(objs) != 2 or coord is None or purpose != "same value at every coordinate":
        return None
    try:
        a, b = (concretize(o, env) for o in objs)
        if not (isinstance(a, Layout) and isinstance(b, Layout)) or a.is_symbolic or b.is_symbolic:
            return None
        k = int_eval(coord, model)
        if type(k) is not int or not 0 <= k < a.size or a.size != b.size:
            return None
        va, vb = a(k), b(k)
    except LayoutError:
        return None
    if va == vb:
        return None
    return Counterexample(
        coordinate=k, natural=natural(k, a), lhs=va, rhs=vb, detail=None, assignment=env or None
    )


def bounded(
    claim: str,
    case: Callable[[Dict[str, int]], Optional[Counterexample]],
    params: List[Any],
    facts: tuple,
    bounds: Any,
    max_cases: int,
    t0: float,
) -> Result:
    """Run ``case(env)`` (a counterexample or None) for every assignment in the box."""
    envs, box = assignments(params, facts, bounds, max_cases)
    done = skipped = 0
    notes: List[str] = []
    for env in envs:
        budget.check()
        try:
            cex = case(env)
        except (IllFormed, TooLarge) as e:
            skipped += 1
            if skipped == 1:
                notes.append(
                    f"skipped assignments where the statement is not well formed, e.g. {_env_text(env)}: {e}"
                )
            continue
        except InadmissibleError as e:
            cex = Counterexample(
                coordinate=e.witness if type(e.witness) is int else None,
                detail=f"inadmissible ({e.condition})",
            )
        done += 1
        if cex is not None:
            return Result(
                "refuted",
                "bounded",
                claim=claim,
                counterexample=cex.with_assignment(env),
                bounds=box,
                cases=done,
                seconds=time.perf_counter() - t0,
                notes=notes,
            )
    if done == 0:
        return Result(
            "unknown",
            "bounded",
            claim=claim,
            bounds=box,
            cases=0,
            notes=notes,
            reason="no parameter assignment within the bounds satisfies the assumptions",
            seconds=time.perf_counter() - t0,
        )
    if skipped:
        notes.append(f"{skipped} assignment(s) skipped")
    return Result(
        "checked",
        "bounded",
        claim=claim,
        bounds=box,
        cases=done,
        seconds=time.perf_counter() - t0,
        notes=notes,
    )


def split_params(params: Any) -> Tuple[List[Any], List[str]]:
    """``params`` ("M N", a list of symbols or names) as (symbols, names)."""
    if params is None:
        return [], []
    if isinstance(params, str):
        names = params.replace(",", " ").split()
    elif type(params) in (list, tuple):
        names = []
        for p in params:
            if isinstance(p, str):
                names.append(p)
            elif is_sym(p) and getattr(p, "is_Symbol", False):
                names.append(p.name)
            else:
                raise MalformedLayoutError(f"params: each parameter is a name or a symbol, got {show(p)}")
    elif is_sym(params) and getattr(params, "is_Symbol", False):
        names = [params.name]
        params = [params]
    else:
        raise MalformedLayoutError(
            f"params is a string of names or a list of names or symbols, got {show(params)}"
        )
    if not names:
        return [], []
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise MalformedLayoutError(
            f"params: each parameter is named once, got {', '.join(twice)} more than once"
        )
    syms = symbols(" ".join(names))
    if not isinstance(syms, tuple):
        syms = (syms,)
    given = {} if isinstance(params, str) else {p.name: p for p in params if not isinstance(p, str)}
    out = [given.get(n, s) for n, s in zip(names, syms)]
    return out, names
