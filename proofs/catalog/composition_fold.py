"""Composition's leaf walk and overlap check at every rank of A: induction on the real step code.

``symops.compose_leaf(As, Ad, n, r, ...)`` (A composed with one leaf ``n:r`` of B; ``Â`` =
``As:Ad`` is A coalesced keeping its last mode) is a fold: past the trivial leaves (extent
1, stride 0) and the refusal of a negative stride, ``state = ((), (), (), n, r)``, then
``state = compose_leaf_step(state, i, As[i], Ad[i], ...)`` for every mode ``i`` below the
last, then ``compose_leaf_finish(compose_leaf_close(state, Ad[last]))``.  The state is
(the result's extents so far, its strides so far, the footprint so far, ``rest_n``,
``rest_r``); the step and the close run here on *opaque* first three parts
(:class:`~layoutproof.proofs.catalog.induction.Head`: appending is the only use allowed),
and the mode's index is an opaque label (:class:`ModeLabel`: it may only be stored and
printed), so "the step reads only ``rest_n``, ``rest_r`` and its mode" is machine-checked.

**The invariant** after the modes ``0..i-1`` (``P = As_0 ... As_{i-1}``, ``N`` = the product
of the result's extents so far, every leaf coordinate ``c = c_lo + N c_hi`` with
``c_lo < N``, ``c_hi < rest_n``, the result's digits so far giving ``c_lo`` and the digits
``δ_j`` of Â's modes ``j < i``):

* ``n == N rest_n``, ``rest_n >= 1``, ``rest_r >= 1`` (integers);
* ``rest_n == 1`` or ``N r == P rest_r``;
* ``c_lo r == Σ_{j<i} δ_j P_j`` (so ``c r == Σ_{j<i} δ_j P_j + P rest_r c_hi``), the
  result's value so far is ``Σ_{j<i} δ_j Ad_j``, and ``0 <= δ_j <= occ[j] < As_j`` for a
  mode ``j`` in the footprint, ``δ_j == 0`` for the others.

At the start (``N = P = 1``, ``c_lo = 0``, ``rest_n = n``, ``rest_r = r``) it holds
trivially (``r > 0`` there: the walk returned for ``r == 0`` and refused ``r < 0``).
**Step** (:func:`step_instance`): on every path of the real ``compose_leaf_step`` that
returns, from any state meeting the invariant, the new state meets it at ``i + 1``
(``P' = P As_i``; the appended mode ``t : rest_r Ad_i`` with footprint ``o`` at key ``i``
or nothing; ``c_hi = g + t c'`` with the new digit ``g < t``).  **Close**
(:func:`close_instance`): the last (unbounded) mode takes the rest -- ``rest_n :
rest_r Ad_last`` with ``δ_last = rest_r g``, or nothing when ``rest_n == 1`` -- and
``compose_leaf_finish`` on the empty state gives ``1:0`` only for ``n == 1``.  So after the
fold ``N == n`` and every ``c < n`` has Â-digits ``δ`` in range (the last unbounded) adding
up to ``c r``, with ``R_leaf(c) == Σ δ_j Ad_j`` and the footprint bounding them: the **leaf
lemma** of :mod:`.composition_induction`, at every rank of A.  The base -- the
whole walk at A rank 1, trivial leaves included -- is that module's ``leaf_instance``.

The overlap check (``symops.check_leaves_disjoint``) sums the footprints by a fold of
``footprint_sum_step`` (:func:`sum_step_instances`: per mode, the sum and the number of the
leaves landing there) and then checks each mode on its own with ``check_mode_disjoint``
(:func:`mode_check_instances`: it reads only ``As[i]``, and returning with two or more users
means ``u < As_i``); a mode with one user is bounded by the leaf lemma, a mode with none
sums to 0.  That is the **closure** at every rank of Â and every number of leaves.

Read off the code, not machine-checked: the fold loops (``for i in range(last): state =
step(...)``; ``for leaf in leaves: used = footprint_sum_step(used, occ)``; ``for i in
sorted(used): check_mode_disjoint(...)``), the start state, and ``compose_leaf_finish``'s
conversion of a non-empty state to lists (a concatenation).

>>> [i.label for i in fold_instances()][:2]
['leaf fold: step (opaque finished modes)', 'leaf fold: close (opaque finished modes)']
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof.errors import InadmissibleError, UndecidableConditionError
from layoutproof.symbolic import sympy_module as _sp

from ..symexec import symops_module as _ops
from ..symexec import z3_module as _z3
from . import symbolic as cs
from .induction import Head, HeadRead, appended

__all__ = [
    "ModeLabel",
    "OnlyIndex",
    "step_instance",
    "close_instance",
    "sum_step_instances",
    "mode_check_instances",
    "fold_instances",
]


class ModeLabel:
    """The mode's index, opaque to the step: it may be stored (the footprint's key) and
    printed (where a refusal happened); comparing, hashing or computing with it raises
    :class:`~layoutproof.proofs.catalog.induction.HeadRead`."""

    __slots__ = ()

    def __str__(self) -> str:
        return "i"

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return "i"

    def _read(self, *_a: Any) -> Any:
        raise HeadRead("the step used its mode's index other than as a label")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = _read
    __index__ = __int__ = __bool__ = __add__ = __radd__ = __sub__ = __mul__ = _read


class OnlyIndex:
    """A list of A's extents of which only the entry ``i`` may be read (any other use raises
    :class:`~layoutproof.proofs.catalog.induction.HeadRead`)."""

    __slots__ = ("i", "value")

    def __init__(self, i: int, value: Any) -> None:
        self.i, self.value = i, value

    def __getitem__(self, j: Any) -> Any:
        if type(j) is not int or j != self.i:
            raise HeadRead(f"the mode check read A's extent at {j!r}, not at its mode {self.i}")
        return self.value

    def _read(self, *_a: Any) -> Any:
        raise HeadRead("the mode check used A's extents other than at its mode")

    __len__ = __iter__ = __bool__ = __contains__ = _read


def _pos(name: str) -> Any:
    return cs.extents(name, 1)[0]


def _int(name: str) -> Any:
    return cs.strides(name, 1)[0]


# ----------------------------------------------------------------------------- the leaf fold
#: the quantities of a step's state and mode, and of the invariant's abstract finished part
_STEP_SYMS = ("rn", "rr", "s", "d", "N", "P", "r")


def _step_run(step: Callable[..., Any], rn: Any, rr: Any, s: Any, d: Any) -> Callable[[], Any]:
    """The step on (MS, MD, OCC opaque, rn, rr) and the mode (s, d) labelled by a ModeLabel:
    the appended extents, strides and footprint values, whether every appended footprint
    key is the label, and the new (rest_n, rest_r)."""

    def fn() -> Any:
        label = ModeLabel()
        ms, md, occ, rn2, rr2 = step((Head("MS"), Head("MD"), Head("OCC"), rn, rr), label, s, d)
        new_occ = appended(occ, "OCC")
        keyed = all(type(p) is tuple and len(p) == 2 and p[0] is label for p in new_occ)
        return (
            list(appended(ms, "MS")),
            list(appended(md, "MD")),
            [p[1] for p in new_occ if type(p) is tuple and len(p) == 2],
            keyed,
            rn2,
            rr2,
        )

    return fn


def _step_claims(
    z3: Any, t: Any, md: Any, o: Any, appended_one: bool, v: Dict[str, Any], rn2: Any, rr2: Any
) -> Tuple[List[Any], Callable[[Any, Any, Any, Any], List[Any]]]:
    """The invariant after the step, as Z3 (or integer) terms: the claims on the new state,
    and a function of (g, c', c_lo, X) -- the new digit, the digit left, a coordinate of the
    finished part and its offset c_lo r -- giving the per-coordinate claims."""
    rn, rr, s, d, N, P, r = (v[k] for k in _STEP_SYMS)
    claims = [
        t * rn2 == rn,  # the size: N rest_n is kept
        t >= 1,
        rn2 >= 1,
        rr2 >= 1,
        z3.Or(rn2 == 1, N * t * r == P * s * rr2),  # the chain for the next mode
    ]
    if appended_one:
        claims += [md == rr * d, o >= 0, o < s]  # the mode's stride; the footprint is below As_i

    def per_coordinate(g: Any, cp: Any, clo: Any, X: Any) -> List[Any]:
        delta = g * rr if appended_one else 0
        out = [
            # the high part c_hi = g + t c' at P rest_r splits into the digit delta of mode i
            # and the part left, at P As_i rest_r'
            P * rr * (g + t * cp) == P * delta + P * s * rr2 * cp,
            # the finished part grows by the digit: (c_lo + N g) r == X + P delta, below N t
            (clo + N * g) * r == X + P * delta,
            clo + N * g < N * t,
        ]
        if appended_one:
            out += [delta >= 0, delta <= o, g * md == delta * d]  # the footprint bounds delta
        return out

    return claims, per_coordinate


def step_instance(step: Optional[Callable[..., Any]] = None) -> cs.Instance:
    """``compose_leaf_step`` (or ``step``, a planted bug) on any state meeting the invariant
    (module docstring) and any mode ``s:d`` of Â below the last: on every path that returns,
    the new state meets it at the next mode.  The state's finished parts and the mode's
    index are opaque (a step that read them would make the run refused: unknown)."""
    run_step = step if step is not None else _ops().compose_leaf_step
    rn, rr, s, N, P, r = (_pos(k) for k in ("rn", "rr", "s", "N", "P", "r"))
    d = _int("d")
    syms = dict(zip(_STEP_SYMS, (rn, rr, s, d, N, P, r)))
    fn = _step_run(run_step, rn, rr, s, d)

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        ms, md, occ, keyed, rn2, rr2 = cx.path.value
        if len(ms) > 1 or len(md) != len(ms) or len(occ) != len(ms) or not keyed:
            return [], z3.BoolVal(False)  # at most one mode, with its footprint at key i
        v = {k: e.t(x) for k, x in syms.items()}
        one = len(ms) == 1
        t = e.t(ms[0]) if one else z3.IntVal(1)
        claims, per = _step_claims(
            z3, t, e.t(md[0]) if one else None, e.t(occ[0]) if one else None, one, v, e.t(rn2), e.t(rr2)
        )
        # the invariant before: a coordinate c_lo < N of the finished part, its offset c_lo r;
        # the chain; then every new digit g < t and digit left c' < rest_n'
        clo, X, g, cp = e.fresh("clo"), e.fresh("X"), e.fresh("g"), e.fresh("cp")
        ctx = [
            clo >= 0,
            clo < v["N"],
            X == clo * v["r"],
            z3.Or(v["rn"] == 1, v["N"] * v["r"] == v["P"] * v["rr"]),
        ]
        rng = z3.And(g >= 0, g < t, cp >= 0, cp < e.t(rn2)) if one else z3.And(g == 0, cp >= 0, cp < e.t(rn2))
        claims.append(z3.Implies(rng, z3.And(per(g, cp, clo, X))))
        return ctx, z3.And(claims)

    def confirm(asg: Dict[str, int], _p: Any) -> Optional[str]:
        """The step run on the model's integers (no exploration), its claims checked on
        integers for the model's finished part and every digit pair (up to 4096)."""
        vals = {k: int(asg.get(k + "0", 1)) for k in _STEP_SYMS}
        if min(vals[k] for k in ("rn", "rr", "s", "N", "P", "r")) <= 0:
            return None
        if not (vals["rn"] == 1 or vals["N"] * vals["r"] == vals["P"] * vals["rr"]):
            return None
        at = (
            f"compose_leaf_step on rest_n = {vals['rn']}, rest_r = {vals['rr']} and the mode "
            f"{vals['s']}:{vals['d']}"
        )
        return step_violation(run_step, vals, at)

    return cs.Instance(
        "leaf fold: step (opaque finished modes)", fn, build, confirm, assumptions=(), strict=True
    )


def step_violation(run_step: Callable[..., Any], vals: Dict[str, int], at: str) -> Optional[str]:
    """What the step, run on integers (``vals``: rn, rr, s, d, N, P, r meeting the invariant's
    chain), breaks of the invariant after it; None when nothing (or when it refuses)."""
    z3 = _z3()

    try:
        ms, md, occ, keyed, rn2, rr2 = _step_run(run_step, vals["rn"], vals["rr"], vals["s"], vals["d"])()
    except (InadmissibleError, UndecidableConditionError):
        return None  # a refusal: no result to check
    if len(ms) > 1 or len(md) != len(ms) or len(occ) != len(ms) or not keyed:
        return f"{at} appended {ms}:{md} with footprint {occ}"
    if any(type(x) is not int for x in [*ms, *md, *occ, rn2, rr2]):
        return f"{at} gave non-integers {ms}:{md}, {occ}, rest ({rn2}, {rr2})"
    one = len(ms) == 1
    t = ms[0] if one else 1
    claims, per = _step_claims(z3, t, md[0] if one else 0, occ[0] if one else 0, one, vals, rn2, rr2)
    bad = [k for k, c in enumerate(claims) if not _true(c)]
    if bad:
        return f"{at} gave the mode {ms}:{md}, footprint {occ}, rest ({rn2}, {rr2}): claim {bad[0]} fails"
    N, r = vals["N"], vals["r"]
    for g, cp in itertools.islice(itertools.product(range(t), range(rn2)), 4096):
        for clo in {0, N - 1}:
            if not all(_true(c) for c in per(g, cp, clo, clo * r)):
                return (
                    f"{at} gave the mode {ms}:{md}, footprint {occ}: wrong at the digits g = {g}, c' = {cp}"
                )
    return None


def _true(c: Any) -> bool:
    """An integer claim (a bool, or a Z3 expression built from integers) is true."""
    if isinstance(c, bool):
        return c
    z3 = _z3()
    return bool(z3.is_true(z3.simplify(c)))


def close_instance(empty: bool = False) -> cs.Instance:
    """``compose_leaf_close`` on (MS, MD, OCC opaque, rn, rr) and Â's last stride ``d``: one
    mode ``rn : rr d`` appended -- the last mode is read past its extent, so its digit
    ``δ_last = rr g`` (g < rn) is unbounded and has no footprint -- or nothing, only when
    ``rn == 1``; nothing is left.  ``empty``: the same from the empty state, through
    ``compose_leaf_finish``: the result is that one mode, or ``1:0`` only when ``rn == 1``
    (then ``n == N rn == 1``)."""
    ops = _ops()
    rn, rr = _pos("rn"), _pos("rr")
    d = _int("d")

    def fn() -> Any:
        if empty:
            ms, md, occ = ops.compose_leaf_finish(ops.compose_leaf_close(((), (), (), rn, rr), d))
            return list(ms), list(md), sorted(occ.items()), None, None
        ms, md, occ, rn2, rr2 = ops.compose_leaf_close((Head("MS"), Head("MD"), Head("OCC"), rn, rr), d)
        return list(appended(ms, "MS")), list(appended(md, "MD")), list(appended(occ, "OCC")), rn2, rr2

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        ms, md, occ, rn2, _rr2 = cx.path.value
        zrn = e.t(rn)
        if occ or len(ms) > 1 or len(md) != len(ms):
            return [], z3.BoolVal(False)  # the last mode has no footprint; at most one mode
        if not ms:  # nothing appended: only when nothing is left
            return [], z3.And(zrn == 1, e.t(rn2) == 1)
        took = z3.And(e.t(ms[0]) == zrn, e.t(md[0]) == e.t(rr) * e.t(d))
        if empty:  # through the finish: the one mode, or 1:0 where rn == 1
            return [], z3.Or(took, z3.And(zrn == 1, e.t(ms[0]) == 1, e.t(md[0]) == 0))
        return [], z3.And(took, e.t(rn2) == 1)

    where = "the empty state, with the finish" if empty else "opaque finished modes"
    return cs.Instance(f"leaf fold: close ({where})", fn, build, _no_confirm, strict=True)


def _no_confirm(asg: Any, p: Any) -> Optional[str]:
    return None


# ----------------------------------------------------------------------------- the overlap check
def sum_step_instances(step: Optional[Callable[..., Any]] = None) -> List[cs.Instance]:
    """``footprint_sum_step`` per mode: a mode already used (sum ``u``, ``c`` leaves) and in
    the new leaf's footprint (``o``) gets ``(u + o, c + 1)``; used and not in the footprint:
    unchanged; new in the footprint: ``(o, 1)``.  (Each mode is one dict key; the step
    touches only the keys of the new footprint.)"""
    run = step if step is not None else _ops().footprint_sum_step
    u, o, o2 = _int("u"), _int("o"), _int("p")
    c = 3  # the number of leaves so far at the used mode: any int; the step adds 1

    def fn() -> Any:
        return run({0: (u, c), 1: (u, c)}, {0: o, 2: o2})

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        out = cx.path.value
        if sorted(out) != [0, 1, 2] or any(len(x) != 2 for x in out.values()):
            return [], z3.BoolVal(False)
        counts = out[0][1] == c + 1 and out[1][1] == c and out[2][1] == 1
        return [], z3.And(
            z3.BoolVal(counts),
            e.t(out[0][0]) == e.t(u) + e.t(o),
            e.t(out[1][0]) == e.t(u),
            e.t(out[2][0]) == e.t(o2),
        )

    return [cs.Instance("overlap check: the sums' step, per mode", fn, build, _no_confirm, strict=True)]


def mode_check_instances(check: Optional[Callable[..., Any]] = None) -> List[cs.Instance]:
    """``check_mode_disjoint`` at a mode ``i`` (extent ``S``, footprint sum ``u``, the
    footprints non-negative) read through :class:`OnlyIndex`: with two (or five) users,
    returning means ``u < S``; with one user (its footprint ``u < S`` by the leaf lemma) it
    returns and ``u < S`` holds all the same."""
    run = check if check is not None else _ops().check_mode_disjoint
    sp = _sp()
    S = _pos("S")
    u = cs.strides("u", 1, nonneg=True)[0]
    out = []
    for users in (1, 2, 5):

        def fn(users: int = users) -> Any:
            # a refusal is a value (the statement is about accepting); reading another mode's
            # extent raises HeadRead: the run is refused and the instance (strict) unknown
            return cs.raises(lambda: run(OnlyIndex(3, S), 3, u, users, None))()

        def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
            if cx.path.value[0] == "raises":
                return [], _z3().BoolVal(True)
            return [], cx.enc.t(u) < cx.enc.t(S)

        assume = (sp.Lt(u, S),) if users == 1 else ()
        label = f"overlap check: one mode, {users} user{'s' if users > 1 else ''}"
        out.append(cs.Instance(label, fn, build, _mode_confirm(run, users), assumptions=assume, strict=True))
    return out


def _mode_confirm(run: Callable[..., Any], users: int) -> Callable[[Dict[str, int], Any], Optional[str]]:
    def confirm(asg: Dict[str, int], _p: Any) -> Optional[str]:
        S, u = int(asg.get("S0", 1)), int(asg.get("u0", 0))
        if S <= 0 or u < 0:
            return None
        try:
            run(OnlyIndex(3, S), 3, u, users, None)
        except Exception:  # noqa: BLE001 - refused on the integers: not a counterexample
            return None
        return (
            f"the mode check accepts the footprint sum {u} in the extent {S} ({users} users)"
            if u >= S
            else None
        )

    return confirm


def fold_instances() -> List[cs.Instance]:
    """The every-rank induction's own obligations: the leaf fold's step and close (opaque and
    empty states), the overlap check's sums step and its per-mode check."""
    return [
        step_instance(),
        close_instance(),
        close_instance(empty=True),
        *sum_step_instances(),
        *mode_check_instances(),
    ]


def fold_label_ok(labels: Sequence[str]) -> bool:
    """Every obligation family of the every-rank induction is among ``labels``."""
    want = ("leaf fold: step", "leaf fold: close", "overlap check: the sums", "overlap check: one mode")
    return all(any(lb.startswith(w) for lb in labels) for w in want)
