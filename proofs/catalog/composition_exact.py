"""Exactness of composition's admissibility decision: ``sym.composition-exact``.

Composition is admissible iff some layout R compatible with B satisfies ``R(c) == Â(B(c))``
for every coordinate ``c`` of B.  ``symops.composition`` refuses in three places, and each is
treated here:

* **shape divisibility** (the leaf walk ``compose_leaf``): on every path of the real walk where
  it refuses, the path implies the certificate of Lemma L1 (:func:`exact_instance`); no layout
  of the leaf's size reproduces ``j -> Â(r j)``.
* **overlap** (``check_leaves_disjoint``, any number ``k >= 2`` of leaves landing in a mode
  ``i`` of Â with footprint sum ``>= As_i``): every leaf reaches its footprint in mode ``i`` at
  a coordinate whose other Â-digits are all 0 (the **witness lemma**,
  :func:`witness_instance`, on every path of the real walk; the coordinate is read off the
  walk's result), so the shortest prefix of those leaves whose footprints reach ``As_i``
  gives a point where the by-mode sum differs from ``Â(B(c))`` (:func:`overlap_instance`, on
  every refusing path of the real check with k = 2, 3, 4 leaves).
* **stride divisibility**: the symbolic walk never claims it is inadmissible without an
  integer assignment at which the integer composition refuses; the integer composition
  decides it exactly by evaluation up to ``ops.EXACT_LIMIT`` (Lemma L1 makes the greedy
  recognition exact) and, past that bound, refuses only where the first-break lemma decides
  it (the first break of linearity does not divide the leaf's extent), else raises an
  UndecidableConditionError (no refusal).  So every InadmissibleError composition raises is
  exact.

>>> from layoutproof.proofs.catalog.composition_exact import witness_instances
>>> [i.label for i in witness_instances((1, 2))]
['witness lemma, A rank 1', 'witness lemma, A rank 2']
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof import ops
from layoutproof.errors import InadmissibleError, UndecidableConditionError
from layoutproof.layout import Layout
from layoutproof.symbolic import as_python, symops
from layoutproof.symbolic import sympy_module as _sp
from layoutproof.verify import Result, postcondition

from .. import symexec as sx
from ..symexec import symops_module as _symops
from ..symexec import z3_module as _z3
from ..theorem import Theorem
from . import composition_leaf as cl
from . import symbolic as cs
from .composition_fold import ModeLabel, OnlyIndex
from .composition_leaf import leaf_operands
from .induction import Head, appended

__all__ = [
    "NeedProbe",
    "witness_instance",
    "witness_instances",
    "witness_coordinates",
    "overlap_instance",
    "overlap_instances",
    "exact_instance",
    "exact_instances",
    "first_break_lemma_check",
    "exact_theorem",
    "DISJOINT",
]

SOURCE = "proofs/catalog/composition_exact.py"
_theorem = functools.partial(cs.all_values_theorem, source=SOURCE)

#: the condition name ``symops.check_leaves_disjoint`` refuses with
DISJOINT = "disjointness of B's modes in A"


def _walk_and_conc(A: Layout, n: Any, r: Any) -> Tuple[Callable[..., Any], Callable[[Dict[str, int]], Any]]:
    """The real leaf walk and the integer composition that confirms its refusals."""
    return cl.leaf_walk(), cl.integer_composition(A, Layout.trusted(n, r))


class NeedProbe:
    """Records each side condition a symbolic operation hands to ``need`` (its name, the SymPy
    condition and where), then lets the real ``need`` decide.  Read-only: the operation runs
    unchanged (``need`` is looked up in the operation's module, which the probe patches for
    the duration of one run); the proofs use the recorded values of the refusal's stage."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.calls: List[Tuple[str, Any, str]] = []
        self._module: Dict[str, Any] = fn.__globals__

    def __enter__(self) -> "NeedProbe":
        real = self._real = self._module["need"]

        def need(cond: Any, *, op: str, condition_name: str, where: str = "", concrete: Any = None) -> None:
            self.calls.append((condition_name, cond, where))
            real(cond, op=op, condition_name=condition_name, where=where, concrete=concrete)

        self._module["need"] = need
        return self

    def __exit__(self, *exc: Any) -> None:
        self._module["need"] = self._real


# ----------------------------------------------------------------------------- witness lemma
def witness_coordinates(ms: Sequence[Any], occ: Dict[int, Any]) -> Dict[int, Tuple[List[Any], Any]]:
    """Per mode ``i`` of Â in the walk's footprint ``occ``: the leaf coordinate that reaches
    it, read off the walk's result, as ``(factors, last)`` -- the coordinate is
    ``prod(factors) * (last - 1)``.  The walk appends one result mode per entry of ``occ``,
    in the order of Â's modes (the entry of mode ``i`` takes ``take`` points at the
    remaining stride), and at most one more mode for Â's last mode; so the coordinate of the
    p-th entry's last point is ``ms_0 ... ms_(p-1) * (ms_p - 1)``.  (Kept as factors so the
    encoding reuses each extent's own quotient variable.)"""
    keys = sorted(occ)
    if len(keys) > len(ms):
        raise sx.NoPlacement(f"the walk reports {len(keys)} footprints but its result has {len(ms)} modes")
    return {i: (list(ms[:p]), ms[p]) for p, i in enumerate(keys)}


def _witness_goal(cx: cs.Ctx, n: Any, r: Any, As: List[Any], Rl: Layout, occ: Dict[int, Any]) -> Any:
    """The witness lemma on one returning path of the walk (see :func:`exact_instance`)."""
    z3 = _z3()
    e = cx.enc
    ms, _md = sx.flat_modes(Rl)
    goal: List[Any] = []
    for i, (below, top) in witness_coordinates(ms, occ).items():
        # each extent encoded on its own (a product of quotients is not a quotient)
        zc, o = cs.zprod(e, below) * (e.t(top) - 1), e.t(occ[i])
        goal += [zc >= 0, zc < e.t(n), o >= 0, o < e.t(As[i]), zc * e.t(r) == o * cs.zprod(e, As[:i])]
    return z3.And(goal) if goal else z3.BoolVal(True)


def _witness_confirm(
    walk: Callable[..., Any], A: Layout, n: Any, r: Any, asg: Dict[str, int]
) -> Optional[str]:
    """The walk itself on the model's integers: a footprint it reports that none of the
    leaf's coordinates reaches with every other Â-digit 0 (a real counterexample to the
    witness lemma), or None."""

    for s in set(A.free_symbols) | set(Layout.trusted(n, r).free_symbols):
        asg.setdefault(s.name, 1)  # symbols the model leaves free: 1 (the assignment reported)
    A2, B2 = A.subs(asg), Layout.trusted(n, r).subs(asg)
    fs, fd = sx.flat_modes(A2)
    (bs,), (bd,) = sx.flat_modes(B2)
    ni, ri = int(bs), int(bd)
    try:
        As, Ad = symops.coalesce_flat(tuple(int(x) for x in fs), tuple(int(x) for x in fd), keep_last=True)
        _ms, _md, occ = walk(As, Ad, ni, ri, -1, lambda a: None)
    except (InadmissibleError, UndecidableConditionError):
        return None
    P = cs.prefixes(As)
    for i, o in sorted(occ.items()):
        if not any(j * ri == int(o) * int(P[i]) for j in range(ni)):
            return (
                f"on Â = {As}:{Ad} and the leaf {ni}:{ri} the walk reports footprint {o} in Â's mode {i}, "
                f"yet no coordinate j < {ni} has j*{ri} == {o}*{P[i]} (Â-digits {o} e_{i} and 0 elsewhere)"
            )
    return None


#: the quantities of the every-rank witness step: the state's rest_n, rest_r, Â's mode s:d, and
#: the invariant's N (the product of the result's extents so far), P (Â's prefix product at the
#: mode) and r (the leaf's stride)
_STEP = ("rn", "rr", "s", "d", "N", "P", "r")


def step_instance(
    step: Optional[Callable[..., Any]] = None, claims: Sequence[str] = ("shape", "witness")
) -> cs.Instance:
    """The leaf walk's fold step at every rank of A: the real ``compose_leaf_step`` (or
    ``step``, a planted bug) on a state whose finished parts are opaque (``Head``) and whose
    mode index is an opaque label (``ModeLabel``), any ``rest_n, rest_r >= 1`` and mode
    ``s:d``; one exploration, the obligation by the path's kind:

    * refusing for shape divisibility (``"shape"``): the condition it tests (``rest_n <= m`` or
      ``m | rest_n``, ``m = s / rest_r``) fails: ``rest_n > m`` and ``m`` does not divide
      ``rest_n`` -- Lemma L1's certificate, with Â's non-merge of modes i, i+1
      (sym.coalesce-maximal's step and :func:`coalesce_keep_instance`);
    * appending ``t`` points with footprint ``o`` (``"witness"``), from any state meeting the
      fold invariant's chain (``rest_n == 1`` or ``N r == P rest_r``; proved at every rank by
      sym.composition-post's every-rank induction): ``t >= 1``, ``o == rest_r (t - 1)`` (the
      footprint is the digit of the mode's last point), and ``c = N (t - 1)`` --
      :func:`witness_coordinates`' ``ms_0 ... ms_(p-1) (ms_p - 1)`` -- has ``0 <= c < N rest_n``
      (= n, by the invariant) and ``c r == o P``.  With ``0 <= o < As_i`` (the fold's step
      claim) that is the witness lemma for the footprint appended at every mode."""

    sp = _sp()
    run_step = step if step is not None else _symops().compose_leaf_step
    rn, rr, s, N, P, r = (cs.extents(k, 1)[0] for k in ("rn", "rr", "s", "N", "P", "r"))
    d = cs.strides("d", 1)[0]
    syms = dict(zip(_STEP, (rn, rr, s, d, N, P, r)))

    def fn() -> Any:
        label = ModeLabel()
        with NeedProbe(run_step) as probe:
            try:
                ms, _md, occ, _rn2, _rr2 = run_step(
                    (Head("MS"), Head("MD"), Head("OCC"), rn, rr), label, s, d
                )
            except (InadmissibleError, UndecidableConditionError):
                if probe.calls and probe.calls[-1][0] == "shape divisibility":
                    return "shape", probe.calls[-1][1]
                return "refused", None  # another condition: outside the statement
        new_occ = appended(occ, "OCC")
        keyed = all(type(q) is tuple and len(q) == 2 and q[0] is label for q in new_occ)
        feet = [q[1] for q in new_occ if type(q) is tuple and len(q) == 2]
        return "returned", (list(appended(ms, "MS")), feet, keyed)

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, got = cx.path.value
        if tag == "shape" and "shape" in claims:
            les = [x for x in (got.args if isinstance(got, sp.Or) else (got,)) if isinstance(x, sp.Le)]
            if not les:
                raise sx.NoPlacement(f"the refusal's stage is not readable from {got!r}")
            rest_n, m = les[0].lhs, les[0].rhs
            return [], z3.And(
                e.t(rest_n) == e.t(rn),
                e.t(m) * e.t(rr) == e.t(s),
                e.t(m) >= 2,  # L1's 2 <= m < rest_n
                e.t(rest_n) > e.t(m),
                e.t(sp.Mod(rest_n, m)) != 0,
            )
        if tag != "returned" or "witness" not in claims:
            return [], z3.BoolVal(True)
        ms, occ, keyed = got
        if not ms and not occ:
            return [], z3.BoolVal(True)  # nothing appended: no footprint to reach
        if len(ms) != 1 or len(occ) != 1 or not keyed:
            return [], z3.BoolVal(False)  # one mode, its footprint at the mode's label
        v = {k: e.t(x) for k, x in syms.items()}
        t, o = e.t(ms[0]), e.t(occ[0])
        c = v["N"] * (t - 1)
        ctx = [z3.Or(v["rn"] == 1, v["N"] * v["r"] == v["P"] * v["rr"])]
        goal = [t >= 1, o == v["rr"] * (t - 1), c >= 0, c < v["N"] * v["rn"], c * v["r"] == o * v["P"]]
        return ctx, z3.And(goal)

    def confirm(asg: Dict[str, int], p: Any) -> Optional[str]:
        """The step on the model's integers (no exploration): a shape refusal whose test
        passes, or an appended footprint its last point does not reach."""
        vals = {k: int(asg.get(k + "0", 1)) for k in _STEP}
        if min(vals[k] for k in ("rn", "rr", "s", "N", "P", "r")) <= 0:
            return None
        at = (
            f"compose_leaf_step on rest_n = {vals['rn']}, rest_r = {vals['rr']} and the mode "
            f"{vals['s']}:{vals['d']}"
        )
        try:
            ms, _md, occ, _a, _b = run_step(((), (), (), vals["rn"], vals["rr"]), 0, vals["s"], vals["d"])
        except InadmissibleError as err:
            if getattr(err, "condition", None) != "shape divisibility" or vals["s"] % vals["rr"]:
                return None
            m = vals["s"] // vals["rr"]
            if vals["rn"] <= m or vals["rn"] % m == 0:
                return f"{at} refuses for shape divisibility, yet m = {m} passes the test"
            return None
        except UndecidableConditionError:
            return None
        if p.value[0] != "returned" or len(ms) != 1 or len(occ) != 1:
            return None
        if not (vals["rn"] == 1 or vals["N"] * vals["r"] == vals["P"] * vals["rr"]):
            return None
        t, o = ms[0], occ[0][1]
        c = vals["N"] * (t - 1)
        if o == vals["rr"] * (t - 1) and 0 <= c < vals["N"] * vals["rn"] and c * vals["r"] == o * vals["P"]:
            return None
        return (
            f"{at} appends {t} points with footprint {o}, which its last point (digit "
            f"{vals['rr'] * (t - 1)}) does not reach"
        )

    names: Dict[Tuple[str, ...], str] = {("shape",): "shape refusals", ("witness",): "witness lemma"}
    what = names.get(tuple(claims), "shape refusals + witness lemma")
    return cs.Instance(
        f"{what}: fold step (opaque finished modes)",
        fn,
        build,
        confirm,
        need_result=False,
        skip_trivial=True,
        strict=True,
    )


def witness_step_instance(step: Optional[Callable[..., Any]] = None) -> cs.Instance:
    """The witness lemma alone as a fold step (:func:`step_instance`)."""
    return step_instance(step, ("witness",))


def shape_step_instance(step: Optional[Callable[..., Any]] = None) -> cs.Instance:
    """The shape-divisibility refusals alone as a fold step (:func:`step_instance`)."""
    return step_instance(step, ("shape",))


# ----------------------------------------------------------------------------- overlap refusals
def _prefix_sums(xs: Sequence[Any]) -> List[Any]:
    out: List[Any] = []
    acc: Any = 0
    for x in xs:
        acc = acc + x
        out.append(acc)
    return out


def overlap_instance(a: int, k: int = 2, check: Optional[Callable[..., Any]] = None) -> cs.Instance:
    """Exactness of the overlap check's refusals at A rank ``a`` with ``k`` leaves: Â from the
    real ``coalesce_flat`` (keep_last) on A's symbolic modes, then the real
    ``check_leaves_disjoint`` on ``k`` leaves landing in every mode of Â below the last with
    symbolic footprints ``o{j}_{t}`` (``0 <= o < As_t``: the leaf lemma's bound).  On every
    path where the check refuses at mode ``i``: let ``S_q`` be the sum of the first ``q``
    leaves' footprints in mode ``i``; some ``q`` in 2..k has ``S_(q-1) < As_i <= S_q`` (the
    shortest prefix reaching the extent), and for it the points of those ``q`` leaves at their
    witness coordinates (digits ``o_j e_i``, the witness lemma) add up to digits ``D = S_q e_i``
    whose by-mode sum ``Σ D_t Ad_t`` differs from Â at ``Σ D_t P_t``: the digits ``D'`` (``S_q -
    As_i`` in mode ``i``, 1 in mode ``i + 1``) are in range and represent the same point, and
    ``Σ (D - D') Ad = As_i Ad_i - Ad_(i+1) != 0`` (Â's modes ``i``, ``i+1`` do not merge)."""

    sp = _sp()
    run_check = check if check is not None else symops.check_leaves_disjoint
    A = cs.sym_layout("A", a)
    fa, da = sx.flat_modes(A)

    def fn() -> Any:
        As, Ad = symops.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
        occ = [
            {t: sp.Symbol(f"o{j}_{t}", integer=True, nonnegative=True) for t in range(len(As) - 1)}
            for j in range(k)
        ]
        with NeedProbe(run_check) as probe:
            try:
                run_check(list(As), [([1], [0], oc) for oc in occ], None)
            except (InadmissibleError, UndecidableConditionError):
                # refused at the overlap condition (with no integer operation to confirm on,
                # the explorer's refuted branch reports it undecided); any other refusal is
                # outside the statement
                if probe.calls and probe.calls[-1][0] == DISJOINT:
                    return "refused", list(As), list(Ad), occ, list(probe.calls)
                raise
        return "accepted", list(As), list(Ad), occ, []

    def stage(calls: List[Tuple[str, Any, str]]) -> int:

        hit = re.search(r"A's mode (\d+)", calls[-1][2]) if calls else None
        if hit is None:
            raise sx.NoPlacement(f"the refusing mode is not readable from {calls[-1:]!r}")
        return int(hit.group(1))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        tag, As, Ad, occ, calls = cx.path.value
        if tag != "refused":
            return [], z3.BoolVal(True)  # the statement is about the refusals
        i = stage(calls)
        e = cx.enc
        last = len(As) - 1
        ctx: List[Any] = []
        for oc in occ:
            for t in range(last):
                ctx += [e.t(oc[t]) >= 0, e.t(oc[t]) < e.t(As[t])]
        zA = [e.t(x) for x in As]
        zAd = [e.t(x) for x in Ad]
        pref = [e.t(p) for p in cs.prefixes(list(As))]
        S = _prefix_sums([e.t(oc[i]) for oc in occ])

        def gap(Sq: Any) -> Any:
            D = [Sq if t == i else z3.IntVal(0) for t in range(last + 1)]
            D2 = [
                Sq - zA[i] if t == i else z3.IntVal(1) if t == i + 1 else z3.IntVal(0)
                for t in range(last + 1)
            ]
            inrange = [d >= 0 for d in D2] + [D2[t] < zA[t] for t in range(last)]
            same = sum((d * p for d, p in zip(D2, pref)), z3.IntVal(0)) == sum(
                (d * p for d, p in zip(D, pref)), z3.IntVal(0)
            )
            differ = sum((d * x for d, x in zip(D, zAd)), z3.IntVal(0)) != sum(
                (d * x for d, x in zip(D2, zAd)), z3.IntVal(0)
            )
            return z3.And(inrange + [same, differ])

        shortest = [z3.And(S[q - 2] < zA[i], S[q - 1] >= zA[i]) for q in range(2, k + 1)]
        goal = [z3.Or(shortest)] + [z3.Implies(sh, gap(S[q])) for q, sh in enumerate(shortest, start=1)]
        return ctx, z3.And(goal)

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:
        tag, As, Ad, occ, calls = p.value
        if tag != "refused":
            return None
        i = stage(calls)
        v: Dict[Any, Any] = {s: sp.Integer(asg.get(s.name, 1)) for s in set(fa) | set(da)}
        v.update({s: sp.Integer(asg.get(s.name, 0)) for oc in occ for s in oc.values()})
        A_int = [int(x.xreplace(v)) for x in As]
        Ad_int = [int(x.xreplace(v)) for x in Ad]
        ls = [([1], [0], {t: int(o.xreplace(v)) for t, o in oc.items()}) for oc in occ]
        try:
            run_check(A_int, ls, None)
            return None  # accepted on the integers: no refusal to contradict
        except InadmissibleError as err:
            if getattr(err, "condition", None) != DISJOINT:
                return None
        sums = _prefix_sums([lf[2][i] for lf in ls])
        q = next((q for q, s in enumerate(sums, start=1) if s >= A_int[i]), len(sums))
        X = sums[q - 1] * int(cs.prefixes(A_int)[i])  # B(c) at the first q leaves' witnesses
        digits, rest = [], X
        for s in A_int[:-1]:
            digits.append(rest % s)
            rest //= s
        digits.append(rest)
        byrep = sum(d * x for d, x in zip(digits, Ad_int))
        bymode = sums[q - 1] * Ad_int[i]
        if byrep != bymode:
            return None
        return (
            f"the overlap check refuses footprints {[lf[2] for lf in ls]} in extents {A_int}, yet at the "
            f"witnesses of the first {q} leaves (B(c) = {X}) the by-mode sum {bymode} equals Â({X}) = {byrep}"
        )

    return cs.Instance(
        f"overlap refusals, A rank {a}, {k} leaves", fn, build, confirm, need_result=False, skip_trivial=True
    )


def overlap_instances(ranks: Sequence[int], leaves: Sequence[int] = (2, 3, 4)) -> List[cs.Instance]:
    return [overlap_instance(a, k) for a in ranks for k in leaves]


def overlap_mode_instance(
    k: int, next_is_last: bool, check: Optional[Callable[..., Any]] = None
) -> cs.Instance:
    """The overlap refusals at every rank of Â, one mode at a time: ``k`` leaves' footprints
    ``o_j`` (``0 <= o_j < S``) at a mode ``i`` of extent ``S`` summed by the real
    ``footprint_sum_step`` fold, then the real ``check_mode_disjoint`` at that mode (Â's
    extents read through ``OnlyIndex``: only ``As[i]``).  On every path where it refuses: the
    shortest prefix ``q`` of the leaves whose footprint sum ``S_q`` reaches ``S`` exists, and
    with Â's next mode of extent ``T`` (``T >= 2``; unbounded when ``next_is_last``) and the
    strides ``a``, ``b`` of modes ``i``, ``i + 1`` (``S a != b``: they do not merge), prefix
    product ``P``: the digits ``S_q - S`` at ``i`` and 1 at ``i + 1`` are in range, represent
    ``S_q P``, and give ``(S_q - S) a + b != S_q a``.  Those facts about Â -- its modes below the
    last have extents != 1 and no two neighbours merge -- hold at every rank: sym.coalesce-maximal's
    fold steps (keep = False) and :func:`coalesce_keep_instance` (the last step, keep = True)."""

    sp = _sp()
    ops = _symops()
    sum_step = ops.footprint_sum_step
    run_check = check if check is not None else ops.check_mode_disjoint
    S, T, P = (cs.extents(x, 1)[0] for x in ("S", "T", "P"))
    a, b = cs.strides("a", 1)[0], cs.strides("b", 1)[0]
    os_ = [sp.Symbol(f"o{j}", integer=True, nonnegative=True) for j in range(k)]
    at = 3  # the mode's index: any label; only As[at] is readable

    def fn() -> Any:
        used: Dict[int, Any] = {}
        for o in os_:
            used = sum_step(used, {at: o})
        u, users = used[at]
        with NeedProbe(run_check) as probe:
            try:
                run_check(OnlyIndex(at, S), at, u, users, None)
            except (InadmissibleError, UndecidableConditionError):
                if probe.calls and probe.calls[-1][0] == DISJOINT:
                    return "refused", u, users
                raise
        return "accepted", u, users

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, u, users = cx.path.value
        if tag != "refused":
            return [], z3.BoolVal(True)  # the statement is about the refusals
        zS, zT, zP, za, zb = (e.t(x) for x in (S, T, P, a, b))
        zo = [e.t(o) for o in os_]
        ctx = [o < zS for o in zo] + [zS * za != zb] + ([] if next_is_last else [zT != 1])
        sums = _prefix_sums(zo)

        def gap(Sq: Any) -> Any:
            digit = Sq - zS
            inrange = [digit >= 0, digit < zS] + ([] if next_is_last else [z3.IntVal(1) < zT])
            same = digit * zP + 1 * (zS * zP) == Sq * zP
            differ = Sq * za != digit * za + 1 * zb
            return z3.And(inrange + [same, differ])

        shortest = [z3.And(sums[q - 2] < zS, sums[q - 1] >= zS) for q in range(2, k + 1)]
        goal = [users == k, e.t(u) == sums[-1], z3.Or(shortest)]
        goal += [z3.Implies(sh, gap(sums[q])) for q, sh in enumerate(shortest, start=1)]
        return ctx, z3.And(goal)

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:
        vals = {x: int(asg.get(x.name, 1 if x in (S, T, P) else 0)) for x in (S, T, P, a, b, *os_)}
        o_int = [vals[o] for o in os_]
        Si, Ti = vals[S], vals[T]
        if min(Si, Ti, vals[P]) <= 0 or any(not 0 <= o < Si for o in o_int) or Si * vals[a] == vals[b]:
            return None
        if not next_is_last and Ti == 1:
            return None
        used: Dict[int, Any] = {}
        for o in o_int:
            used = sum_step(used, {at: o})
        try:
            run_check([0] * at + [Si], at, used[at][0], used[at][1], None)
            return None
        except InadmissibleError:
            pass
        sums = _prefix_sums(o_int)
        q = next((q for q, x in enumerate(sums, start=1) if x >= Si), k)
        Sq = sums[q - 1]
        if Sq >= Si and Sq - Si < Si:
            return None  # the gap is there: (S_q - S) a + b != S_q a by the non-merge fact
        return (
            f"check_mode_disjoint refuses footprints {o_int} in the extent {Si}, yet no prefix sum lies in "
            f"[{Si}, {2 * Si}): at the leaves' witnesses the digits fit, and the by-mode sum is Â's value"
        )

    where = "the last" if next_is_last else "not the last"
    return cs.Instance(
        f"overlap refusal at one mode, {k} leaves, the next mode {where}",
        fn,
        build,
        confirm,
        assumptions=tuple(sp.Lt(o, S) for o in os_),
        need_result=False,
        skip_trivial=True,
        strict=True,
    )


def overlap_mode_instances(leaves: Sequence[int] = (2, 3, 4, 5)) -> List[cs.Instance]:
    return [overlap_mode_instance(k, last) for k in leaves for last in (False, True)]


def coalesce_keep_instance() -> cs.Instance:
    """The last step of ``coalesce_flat(keep_last=True)``: the real ``coalesce_step`` with
    ``keep=True`` on a state (H opaque, last mode (t, e), t != 1) and A's last mode (s, d).  On
    every path: the modes it finishes (all but the new last one) have extents != 1, the first
    new mode keeps the stride e (so it does not merge with H's last mode, by the fold's
    invariant), and two new modes do not merge (d' != t' e').  With sym.coalesce-maximal's
    step for the other modes (keep = False), Â's modes below the last have extents != 1 and no
    two neighbours merge, at every rank."""

    sp = _sp()
    step = _symops().coalesce_step
    t, s = cs.extents("t", 1)[0], cs.extents("s", 1)[0]
    e_, d = cs.strides("e", 1)[0], cs.strides("d", 1)[0]

    def fn() -> Any:
        done, last = step((Head("H"), (t, e_)), (s, d), keep=True)
        modes = appended(done, "H") + ((last,) if last is not None else ())
        return [m[0] for m in modes], [m[1] for m in modes]

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = cx.path.value
        if not rs:
            return [], z3.BoolVal(False)  # keep: the last mode is never dropped
        claims = [e.t(x) != 1 for x in rs[:-1]] + [e.t(rd[0]) == e.t(e_)]
        if len(rs) == 2:
            claims.append(e.t(rd[1]) != e.t(rs[0]) * e.t(rd[0]))
        return [], z3.And(claims)

    return cs.Instance(
        "coalesce_flat's last step (keep)",
        fn,
        build,
        lambda asg, p: None,
        assumptions=(sp.Ne(t, 1),),
        strict=True,
    )


# ----------------------------------------------------------------------------- shape divisibility
def _shape_stage(cond: Any, where: str) -> Optional[Tuple[Any, Any, int]]:
    """(rest_n, m, i) of a refused shape-divisibility condition ``rest_n <= m or ...`` at
    A's mode i (the left operand of the condition's ``<=``); None when it has another form."""

    sp = _sp()
    hit = re.search(r"A's mode (\d+)", where)
    if hit is None:
        return None
    les = [a for a in (cond.args if isinstance(cond, sp.Or) else (cond,)) if isinstance(a, sp.Le)]
    if not les:
        return None
    return les[0].lhs, les[0].rhs, int(hit.group(1))


def _refused_for_shape(tag: str, err: Any, calls: List[Tuple[str, Any, str]]) -> bool:
    """Did the walk stop at its shape-divisibility condition?  Inadmissible (the integer
    path confirmed a failure), or undecided because the integer path succeeded at the
    assignment tried (then the condition was refuted on the path all the same)."""

    if tag == "inadmissible":
        return getattr(err, "condition", None) == "shape divisibility"
    if tag == "undecided" and calls and calls[-1][0] == "shape divisibility":
        return getattr(err, "condition", None) == as_python(calls[-1][1])
    return False


SHAPE = "shape"
WITNESS = "witness"


def exact_instance(
    A: Layout,
    n: Any,
    r: Any,
    walk: Optional[Callable[..., Any]] = None,
    claims: Sequence[str] = (SHAPE, WITNESS),
) -> cs.Instance:
    """One exploration of the real ``coalesce_flat`` (keep_last) and leaf walk on A and the
    leaf ``n:r``, every path, with the obligation of its kind:

    * a path refusing for shape divisibility (``SHAPE``) at A's mode i, ``rest_n`` steps
      left, ``m`` of them inside the mode: the path implies the certificate of Lemma L1
      (:data:`EXACT_STATEMENT`): ``rest_n > m``, ``m`` does not divide ``rest_n``, and the
      function breaks at ``m``: ``Ad_{i+1} != As_i Ad_i`` (A's modes i and i+1 do not merge);
    * a returning path (``WITNESS``, the witness lemma): for every mode ``i`` in the returned
      footprint ``occ``, the coordinate ``c_i`` of :func:`witness_coordinates` is one of the
      leaf's (``0 <= c_i < n``), ``0 <= occ[i] < As_i`` and ``c_i * r == occ[i] * P_i``
      (``P_i`` = As_0 ... As_(i-1)).  Mixed-radix digits in range are unique (the last one
      unbounded), so the Â-digits of ``c_i * r`` are ``occ[i]`` in mode ``i`` and 0 in every
      other mode, the last included: the leaf reaches its footprint with no other digit."""

    fa, da = sx.flat_modes(A)
    Bleaf = Layout.trusted(n, r)
    real, conc = _walk_and_conc(A, n, r)
    run_walk = walk if walk is not None else real

    def fn() -> Any:
        As, Ad = symops.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
        with NeedProbe(run_walk) as probe:
            try:
                ms, md, occ = run_walk(As, Ad, n, r, -1, conc)
            except InadmissibleError as e:
                return "inadmissible", As, Ad, e, list(probe.calls)
            except UndecidableConditionError as e:  # a refusal the integer path does not confirm
                return "undecided", As, Ad, e, list(probe.calls)
        return "admissible", As, Ad, (cs.lay(ms, md), dict(occ)), []

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        sp = _sp()
        tag, As, Ad, got, calls = cx.path.value
        if tag == "admissible":
            return [], _witness_goal(cx, n, r, As, *got) if WITNESS in claims else z3.BoolVal(True)
        if SHAPE not in claims or not _refused_for_shape(tag, got, calls):
            return [], z3.BoolVal(True)  # the statement is about shape-divisibility refusals
        _name, cond, where = calls[-1]
        stage = _shape_stage(cond, where)
        if stage is None:
            raise sx.NoPlacement(f"the refusal's stage is not readable from {cond!r} at {where!r}")
        rest_n, m, i = stage
        e = cx.enc
        return [], z3.And(
            e.t(m) >= 2,  # L1's 2 <= m < rest_n
            e.t(rest_n) > e.t(m),
            e.t(sp.Mod(rest_n, m)) != 0,
            e.t(Ad[i + 1]) != e.t(As[i]) * e.t(Ad[i]),
        )

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:

        if p.value[0] == "admissible":
            return _witness_confirm(run_walk, A, n, r, asg)
        try:
            A2, B2 = A.subs(asg), Bleaf.subs(asg)
            R = ops.composition(A2, B2)
        except Exception:  # noqa: BLE001 - refused on the integers too: not a counterexample
            return None
        if postcondition("composition", R, A2, B2).status == "refuted":
            return None
        return f"the walk refused composition({A2}, {B2}) for shape divisibility, yet {R} is that composition"

    names: Dict[Tuple[str, ...], str] = {(SHAPE,): "shape refusals", (WITNESS,): "witness lemma"}
    what = names.get(tuple(claims), "leaf walk")
    return cs.Instance(f"{what}, A rank {len(fa)}", fn, build, confirm, need_result=False, skip_trivial=True)


def exact_instances(ranks: Sequence[int], claims: Sequence[str] = (SHAPE, WITNESS)) -> List[cs.Instance]:
    return [exact_instance(*leaf_operands(a), claims=claims) for a in ranks]


def witness_instance(A: Layout, n: Any, r: Any, walk: Optional[Callable[..., Any]] = None) -> cs.Instance:
    """The witness lemma alone (:func:`exact_instance` with the returning paths' claim)."""
    return exact_instance(A, n, r, walk, claims=(WITNESS,))


def witness_instances(ranks: Sequence[int]) -> List[cs.Instance]:
    return exact_instances(ranks, (WITNESS,))


def first_break_lemma_check(
    extents: Sequence[int] = (1, 2, 3, 4), rank: int = 3, strides: Sequence[int] = tuple(range(-3, 4))
) -> Tuple[int, List[str]]:
    """Lemma L1, exhaustively on small layouts (a supplement to its proof in the statement):
    for every flat layout R of rank <= ``rank`` and every m with 2 <= m < size(R), if
    R(j) == j R(1) for j < m and R(m) != m R(1), then m is a product of R's first extents
    (its unit modes left out), so m divides size(R).  Returns (cases where the premise
    holds, violations)."""

    cases = 0
    bad: List[str] = []
    for k in range(1, rank + 1):
        for shape in itertools.product(extents, repeat=k):
            for stride in itertools.product(strides, repeat=k):
                R = Layout(shape, stride) if k > 1 else Layout(shape[0], stride[0])
                n = R.size
                v = [R(j) for j in range(n)]
                pref = {1}
                p = 1
                for t in shape:
                    p *= t
                    pref.add(p)
                for m in range(2, n):
                    if all(v[j] == j * v[1] for j in range(m)) and v[m] != m * v[1]:
                        cases += 1
                        if m not in pref or n % m:
                            bad.append(f"{R}, m = {m}")
    return cases, bad


# ----------------------------------------------------------------------------- the theorem
#: A ranks of the leaf walk's exploration (shape refusals + witness lemma): main job, --all
EXACT_MAIN = (1, 2)
EXACT_ALL = (1, 2, 3, 4)
#: leaf counts of the every-rank overlap refusals (one mode of Â): main job, --all
MODE_LEAVES_MAIN = (2, 3)
MODE_LEAVES_ALL = (2, 3, 4, 5)
#: A ranks and leaf counts of the whole real overlap check on the real Â (--all, a supplement)
OVERLAP_ALL = (2, 3, 4)
OVERLAP_LEAVES = (2, 3, 4)

EXACT_STATEMENT = (
    "composition(A, B) is admissible iff some layout R compatible with B has R(c) == Â(B(c)) for every "
    "coordinate c of B. Each refusal of the symbolic composition that is a decision is exact: where it "
    "refuses for shape divisibility or for overlap, no such R exists. Two facts of layouts are used: R "
    "compatible with B is additive across B's leaves (a layout's value is the sum of its modes' values at "
    "the coordinate's digits), and on B's j-th leaf alone (other coordinates 0) R must be that leaf's "
    "function c_j -> Â(B_j(c_j)); so R exists only if each leaf's function is a layout and the by-mode sum "
    "Σ_j Â(B_j(c_j)) equals Â(B(c)) at every c. "
    "(1) Shape divisibility. Where the leaf walk of composition(A, n:r) refuses for shape divisibility "
    "(at A's mode i, rest_n steps of the leaf left, m of them inside the mode), no layout R of size n has "
    "R(j) == Â(r j) for every j < n. Machine-checked at every rank of A as a step of the leaf walk's "
    "fold (the real compose_leaf_step, finished modes opaque, the mode index an opaque label; the "
    "refusal's rest_n and m read from the condition it tests): 2 <= m < rest_n and m does not divide rest_n; "
    "and Ad_{i+1} != As_i Ad_i (Â's modes i and i+1 do not merge, so the function breaks at m: see (2) "
    "for where that comes from). As a direct check, on every path of the whole real walk on the real Â "
    "at fixed ranks, all three from the path. By hand: Lemma L1 -- if a "
    "layout R of size N has R(j) == j*R(1) for j < m and R(m) != m*R(1), 2 <= m < N, then m is a product "
    "of R's first extents (else m = a P_k + b with P_k < m < P_(k+1), 0 < a, b < P_k, and R(m) = a R(P_k) "
    "+ R(b) = m R(1)), so m divides N; checked exhaustively as a supplement (every flat R of rank <= 3, "
    "extents 1-4, strides -3..3: first_break_lemma_check). The walk's stages: below the refusing mode "
    "each full take of m_k < rest_n_k points breaks at m_k (the same non-merge fact), so by L1 R splits "
    "there and its upper part R'(j) = R(m_k j) has size rest_n_k / m_k and the function of the walk's next "
    "stage; skipped modes leave R as it is; at the refusing stage the function is j -> j r' Ad_i for j < m "
    "and Ad_{i+1} at m, and L1 gives m | rest_n: a contradiction. The stages' structure is read off "
    "compose_leaf_step (the fold's invariant, sym.composition-post, gives N r == P rest_r at each stage). "
    "(2) Overlap: the check refuses at a mode i of Â below the last where k >= 2 leaves L_1..L_k (in B's "
    "order) land with footprints o_j summing to >= As_i. Witness lemma: for each mode i in the footprint "
    "occ a leaf's walk returns, the leaf coordinate c_i = ms_0 ... ms_(p-1) (ms_p - 1) (ms the walk's "
    "result, p the position of mode i among occ's modes: the walk appends one result mode per footprint, "
    "in Â's order) has 0 <= c_i < n, 0 <= occ[i] < As_i and c_i r == occ[i] P_i, so (mixed-radix digits "
    "in range being unique, the last unbounded) Â's digits of B_j(c_i) are occ[i] in mode i and 0 in every "
    "other mode. Proved at every rank of A on the same fold step as (1): on every path of the real "
    "compose_leaf_step that appends t points with footprint o, o == rest_r (t - 1) and c = N (t - 1) has "
    "0 <= c < N rest_n = n and c r == o P, given the fold invariant's chain N r == P rest_r "
    "(sym.composition-post's every-rank induction, reported here); and, as a direct check, on every path "
    "of the whole real walk on the real Â (the exploration of (1)). Prefix argument, for every k: each "
    "o_j < As_i (the leaf lemma), so the "
    "shortest prefix L_1..L_q whose footprint sum S reaches As_i has q >= 2 and As_i <= S < 2 As_i. At "
    "c = (the prefix leaves at their witness coordinates, every other coordinate 0), B(c) = S P_i, whose "
    "digits in Â are (S - As_i) e_i + e_(i+1) -- in range because As_(i+1) >= 2 when i+1 is not the last "
    "mode and the last mode is unbounded; the by-mode sum is S Ad_i and Â(B(c)) is (S - As_i) Ad_i + "
    "Ad_(i+1): they differ by As_i Ad_i - Ad_(i+1) != 0. Both facts about Â come from coalesce_flat: it "
    "drops a unit mode below the last and merges neighbours i, i+1 exactly where As_i Ad_i == Ad_(i+1) "
    "is proved, so on the paths where it keeps them apart the path condition carries As_i Ad_i != "
    "Ad_(i+1); at every rank, sym.coalesce-maximal's fold step (no unit mode, no mergeable neighbours) "
    "and the keep step of the last mode (coalesce_keep_instance: it finishes no unit mode and no "
    "mergeable pair) give it. Machine-checked at every rank of Â on the real footprint_sum_step fold and "
    "check_mode_disjoint at one mode (only As_i readable) with k = 2, 3 leaves (2-5 with --all), the next "
    "mode the last or not: on every refusing path the shortest prefix exists and its digits are in range, "
    "represent S P_i and give a value other than S Ad_i; with --all also on every refusing path of the "
    "whole real check_leaves_disjoint on the real Â (A rank 2-4, k = 2-4 leaves landing in every mode "
    "below the last). A leaf that does not land in mode i does not enter the argument at mode i (a "
    "smaller k). Read off the code: the check's loops (the sum over the leaves, one check per mode in "
    "order). "
    "(3) Stride divisibility is not decided by the symbolic walk: it refuses there only through the "
    "integer composition (an InadmissibleError carries an assignment at which the integer composition "
    "refuses, whose message it carries; else the condition is undecided). CuTe's condition is "
    "only sufficient: A = (4,8):(1,5), B = 4:6 fails it, yet A o B = (2,2):(7,15). The integer composition "
    "(ops._exact_leaf) decides a leaf failing CuTe's conditions exactly by evaluation when n <= "
    "EXACT_LIMIT = 2^16: it evaluates v_j = Â(r j) for j < n and recognises v greedily "
    "(ops.recognize_layout_fn): the first break of linearity at m must divide the size and splits off the "
    "mode m:v_1, then the same on v_(m j). That is exact by L1: if a layout reproduces v, its first break "
    "m is a product of its first extents, so it splits there into m:v_1 and a layout reproducing v_(m j); "
    "a failure is therefore a proof that no layout exists, and a success is evaluated against v. Checked "
    "exhaustively on the integer path by T3.single-mode-exact (admissible iff brute force over every "
    "ordered factorization of n finds a layout, both ways; its family has 2300 leaves failing CuTe's "
    "stride divisibility, 1036 of them admissible), while T5.composition-postcondition checks the results "
    "returned and T5.cpp-conditions-sufficient only that CuTe's conditions suffice. Past EXACT_LIMIT the "
    "integer composition refuses only where L1 alone decides: it finds the first break m of linearity "
    "(evaluating j -> Â(r j) up to 2^14) and refuses when m does not divide n (witness m); otherwise it "
    "raises an UndecidableConditionError, which is no refusal (A = (4,8):(1,5), B = 2^17:6 has "
    "(2,2^16):(7,15)), and verify reports such a query unknown. So every InadmissibleError for stride "
    "divisibility is exact too"
)


def _ranks(xs: Sequence[int]) -> str:
    return f"{xs[0]}-{xs[-1]}" if len(xs) > 1 else str(xs[0])


def _exact_check() -> List[Result]:
    full = cs.full_scope()
    out = (
        # the leaf fold's invariant (its chain N r == P rest_r is the witness step's premise):
        # sym.composition-post's every-rank induction, explored once per process
        cl.every_rank_results()
        + cs.prove(
            "at every rank of A, each step of the leaf fold: a shape-divisibility refusal fails its test "
            "(L1's certificate); an appended footprint is reached by the coordinate N (t - 1) with no "
            "other digit (the witness lemma)",
            [step_instance()],
        )
        + cs.prove(
            "overlap refusal at every rank of Â: a refusing mode's shortest prefix of leaves reaching "
            "its extent gives a point where the by-mode sum differs from Â(B(c))",
            overlap_mode_instances(MODE_LEAVES_ALL if full else MODE_LEAVES_MAIN),
        )
        + cs.prove(
            "coalesce_flat keeping the last mode: its last step finishes no unit mode and no mergeable "
            "neighbours",
            [coalesce_keep_instance()],
        )
        + cs.prove(
            "shape-divisibility refusal => no layout is A o B; returning walk => every footprint is "
            "reached by a leaf coordinate with no other digit (witness lemma, the whole walk)",
            exact_instances(EXACT_ALL if full else EXACT_MAIN),
        )
    )
    if full:
        out += cs.prove(
            "overlap refusal (k leaves, the whole real check on the real Â) => the by-mode sum differs "
            "from Â(B(c)) at the shortest prefix's witnesses",
            overlap_instances(OVERLAP_ALL, OVERLAP_LEAVES),
        )
    return out


def exact_theorem() -> Theorem:
    """``sym.composition-exact`` (built here, listed by the leaf induction's module)."""
    return _theorem(
        "sym.composition-exact",
        "composition refuses (shape divisibility, overlap) only where no layout is A o B",
        EXACT_STATEMENT,
        _exact_check,
        "every rank of A and B (induction: the leaf walk's fold step for shape refusals and the witness "
        "lemma; the overlap refusal at one mode of Â with "
        f"k = {_ranks(MODE_LEAVES_MAIN)} leaves in `layoutproof prove`, {_ranks(MODE_LEAVES_ALL)} with "
        "`--all`, every k by the prefix argument, by hand); by the leaves, every B whose refusal is a "
        f"leaf's. Direct checks: the whole walk at A rank {_ranks(EXACT_MAIN)} ({_ranks(EXACT_ALL)} with "
        f"`--all`) and, with `--all`, the whole check at A rank {_ranks(OVERLAP_ALL)} with "
        f"k = {_ranks(OVERLAP_LEAVES)} leaves. Read off the code: the fold loops (walk, sums, per-mode "
        "checks). Refusals for stride divisibility are decided by the integer path (by evaluation up to "
        "EXACT_LIMIT = 2^16 coordinates of a leaf, by L1's first break past it, else undecided), not by "
        "the symbolic walk: by hand (L1) with the exhaustive T3.single-mode-exact, not machine-checked here",
        "A: extents positive integers, strides arbitrary integers; the leaf: extent a positive integer, "
        "stride any integer; footprints: integers 0 <= o < As_t",
    )
