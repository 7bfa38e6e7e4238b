"""Bounded checking: every parameter assignment in a box that satisfies the assumptions.

The default box is ``1 <= P <= 64`` for each parameter ``P``, widened where the
assumptions ask for it (``P % 64 == 0`` widens it to ``4*64``; ``P >= 100`` moves it up)
and narrowed by upper bounds (``P <= 16``).  Congruences select the candidate values
directly; the other assumptions are evaluated exactly at each assignment.  When the box
holds more than ``max_cases`` candidates, the largest ranges are cut (from above) until it
fits, and the box reported is the one actually enumerated: a "checked" result covers every
assignment in it.

>>> from layoutproof import symbols
>>> M, N = symbols("M N")
>>> envs, box = assignments([M, N], (parse("M % 16 == 0"), parse("N <= 3")), None, 4096)
>>> box, len(envs), envs[:2]
({'M': (1, 64), 'N': (1, 3)}, 12, [{'M': 16, 'N': 1}, {'M': 16, 'N': 2}])
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Dict, List, Optional, Tuple

from layoutproof.errors import MalformedLayoutError
from layoutproof.symbolic import condition

from ._concrete import holds

__all__ = ["assignments", "DEFAULT_HI", "MAX_CASES", "parse", "user_bounds"]

DEFAULT_HI = 64
MAX_CASES = 4096
_WIDEN = 4  # a congruence modulo m widens the default box to _WIDEN * m
_HI_CAP = 1 << 16


def parse(text: str) -> Any:
    return condition(text)


def _simple(fact: Any) -> Optional[Tuple[str, str, int, int]]:
    """A fact about one symbol: ("mod", name, m, r), ("ge"/"le", name, c, 0); else None."""
    import sympy as sp

    if isinstance(fact, sp.Eq):
        a, b = fact.args
        if isinstance(b, sp.Mod):
            a, b = b, a
        if isinstance(a, sp.Mod) and b.is_Integer and a.args[0].is_Symbol and a.args[1].is_Integer:
            m = int(a.args[1])
            if m > 0:
                return ("mod", a.args[0].name, m, int(b) % m)
        return None
    if isinstance(fact, sp.core.relational.Relational) and not isinstance(fact, sp.Ne):
        lhs, rhs = fact.lhs, fact.rhs
        strict = isinstance(fact, (sp.StrictGreaterThan, sp.StrictLessThan))
        greater = isinstance(fact, (sp.GreaterThan, sp.StrictGreaterThan))
        if lhs.is_Symbol and rhs.is_Integer:
            sym, c = lhs, int(rhs)
        elif rhs.is_Symbol and lhs.is_Integer:
            sym, c = rhs, int(lhs)
            greater = not greater
        else:
            return None
        if greater:
            return ("ge", sym.name, c + 1 if strict else c, 0)
        return ("le", sym.name, c - 1 if strict else c, 0)
    return None


def user_bounds(bounds: Any, names: List[str]) -> Dict[str, Tuple[int, int]]:
    """The caller's ``bounds`` (None, ``hi``, ``(lo, hi)`` or a dict of them per parameter)
    as ``name -> (lo, hi)``; anything else, or ``lo > hi``, is a MalformedLayoutError.  The
    checks call it on entry, so a wrong box is refused even when no bounded check runs."""
    user: Dict[str, Tuple[int, int]] = {}
    if bounds is None or bounds is False:
        return user
    if type(bounds) is int:
        user = {n: (1, bounds) for n in names}
        if bounds < 1:
            raise MalformedLayoutError(f"bounds as an int is the largest value (>= 1), got {bounds!r}")
    elif type(bounds) is tuple and len(bounds) == 2 and all(type(b) is int for b in bounds):
        user = {n: (bounds[0], bounds[1]) for n in names}
        if bounds[0] > bounds[1]:
            raise MalformedLayoutError(f"bounds (lo, hi) needs lo <= hi, got {bounds!r}")
    elif isinstance(bounds, dict):
        for k, v in bounds.items():
            name = k if isinstance(k, str) else getattr(k, "name", None)
            if not isinstance(name, str):
                raise MalformedLayoutError(f"bounds: each key is a parameter's name or symbol, got {k!r:.60}")
            if type(v) is int:
                user[name] = (1, v)
            elif type(v) in (tuple, list) and len(v) == 2 and all(type(b) is int for b in v):
                user[name] = (int(v[0]), int(v[1]))
            else:
                raise MalformedLayoutError(f"bounds for {name} must be an int or (lo, hi), got {v!r:.60}")
            if user[name][0] > user[name][1]:
                raise MalformedLayoutError(f"bounds for {name} need lo <= hi, got {v!r}")
    else:
        raise MalformedLayoutError(
            f"bounds must be an int, (lo, hi), a dict of them or False, got {bounds!r:.60}"
        )
    return user


def _box(
    params: List[Any], facts: tuple, bounds: Any, cap: int = MAX_CASES
) -> Tuple[Dict[str, List[int]], Dict[str, Tuple[int, int]]]:
    names = [p.name for p in params]
    user = user_bounds(bounds, names)
    mods: Dict[str, List[Tuple[int, int]]] = {n: [] for n in names}
    los: Dict[str, int] = {}
    his: Dict[str, int] = {}
    for f in facts:
        s = _simple(f)
        if s is None or s[1] not in mods:
            continue
        kind, name, a, b = s
        if kind == "mod":
            mods[name].append((a, b))
        elif kind == "ge":
            los[name] = max(los.get(name, a), a)
        else:
            his[name] = min(his.get(name, a), a)
    cands: Dict[str, List[int]] = {}
    box: Dict[str, Tuple[int, int]] = {}
    for p, n in zip(params, names):
        floor = 1 if p.is_positive else 0
        if n in user:
            lo, hi = user[n]
        else:
            lo, hi = floor, DEFAULT_HI
            for m, _r in mods[n]:
                hi = max(hi, min(_WIDEN * m, _HI_CAP))
            if n in los and los[n] > lo:
                hi = max(hi, los[n] + (hi - lo))
        lo = max(lo, floor, los.get(n, lo))
        hi = min(hi, his.get(n, hi))
        step = 1
        for m, _r in mods[n]:
            step = step * m // math.gcd(step, m)
        if hi - lo >= cap * step:  # never enumerate more candidates than can be checked
            hi = lo + cap * step - 1
        vals = [v for v in range(lo, hi + 1) if all(v % m == r for m, r in mods[n])] if hi >= lo else []
        cands[n] = vals
        box[n] = (lo, hi)
    return cands, box


def _related(params: List[Any], facts: tuple) -> Tuple[List[Any], tuple]:
    """The facts that constrain the parameters (sharing a symbol, transitively), and the
    parameters extended by the other symbols of those facts (``M == 2*K`` brings ``K``)."""
    syms = set(params)
    used: List[Any] = []
    rest = list(facts)
    changed = True
    while changed:
        changed = False
        for f in list(rest):
            fs = f.free_symbols
            if fs & syms or not fs:
                syms |= fs
                used.append(f)
                rest.remove(f)
                changed = True
    return sorted(syms, key=lambda s: s.name), tuple(used)


def assignments(
    params: List[Any], facts: tuple, bounds: Any, max_cases: int = MAX_CASES
) -> Tuple[List[Dict[str, int]], Dict[str, Tuple[int, int]]]:
    """The assignments (dicts name -> int) in the box that satisfy ``facts``, smallest
    first, and the box (name -> (lo, hi)) they cover completely."""
    params, facts = _related(params, facts)
    if not params:
        return [{}], {}
    if type(max_cases) is not int or max_cases < 1:
        raise MalformedLayoutError(f"max_cases must be a positive int, got {max_cases!r:.40}")
    cands, box = _box(params, facts, bounds, max_cases)
    names = list(cands)

    def total() -> int:
        t = 1
        for n in names:
            t *= max(1, len(cands[n]))
        return t

    while total() > max_cases:
        n = max(names, key=lambda k: len(cands[k]))
        keep = max(1, len(cands[n]) // 2)
        cands[n] = cands[n][:keep]
        box[n] = (box[n][0], cands[n][-1])
    out = []
    for combo in itertools.product(*(cands[n] for n in names)):
        env = dict(zip(names, combo))
        if all(holds(f, env) for f in facts):
            out.append(env)
    out.sort(key=lambda e: (sum(e.values()), tuple(e.values())))
    return out, box
