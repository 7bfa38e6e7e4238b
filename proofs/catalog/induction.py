"""The one-layout folds at every rank: induction on the real step code.

coalesce, filter, complement, right_inverse and left_inverse of
:mod:`layoutproof.symbolic.symops` are folds: ``state = start; for m in modes: state =
step(state, m); finish(state)``.  The step of each is a named function of ``symops``
(``coalesce_step``, ``filter_step``, ``complement_step``, ``left_inverse_step``, ...), and
this module explores *that function* on a symbolic state, one Z3 obligation per path
(:mod:`.symbolic`'s engine): the invariant before the step, the step's path, the
invariant after it.  What the state holds that the step must not read -- the modes a fold
has finished -- is an opaque :class:`Head`: the step may append to it and nothing else (any
other use raises :class:`HeadRead`, which makes the run refused and the instance unknown),
so "the step reads only the last accumulated mode" is machine-checked, not read off the
code.  What remains by inspection is the fold loop itself (two lines per operation) and the
concatenation of the finished modes with the step's suffix (a layout's function is the
mixed-radix sum of its modes: replacing a suffix of modes by modes of the same size and
function keeps the function).

Where a fold runs over the modes sorted by stride (complement, left_inverse), the step is
proved for any state and mode; the sort is a separate lemma (``symops.sort_modes``: its
output is a permutation of its input with non-decreasing strides, ties by index), itself a
fold (insertion sort: ``sort_insert`` per mode, a fold of ``sort_scan_step`` over the sorted
prefix) whose scan step is explored the same way (:func:`sort_scan_instances`); so is
right_inverse's search for the next mode (``right_inverse_pick``, a fold of
``right_inverse_pick_step``: :func:`pick_scan_instances`).  The whole sort and search run at
ranks 1-4 with ``--all`` as a supplement.

This module holds the opaque state and the coalesce and filter folds (their theorems, and the
structure theorems -- maximality, cosize, idempotence -- built on them);
:mod:`.induction_inverse` holds the sort and search lemmas and the complement, left_inverse and
right_inverse folds.

>>> [i.label for i in coalesce_instances()][:2]
['base: rank 1', 'step from the empty state']
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof.errors import LayoutError
from layoutproof.layout import Layout
from layoutproof.symbolic import sympy_module as _sp

from .. import symexec as sx
from ..symexec import symops_module as _ops
from ..symexec import z3_module as _z3
from ..theorem import Theorem
from . import symbolic as cs
from . import symbolic_unary as su

# every theorem here is built by the group's one builder, naming this file as its source
_theorem = functools.partial(cs.all_values_theorem, source="proofs/catalog/induction.py")

__all__ = [
    "Head",
    "HeadRead",
    "appended",
    "coalesce_instances",
    "coalesce_depth_instances",
    "filter_instances",
    "structure_instances",
    "induction_check",
    "FOLD_THEOREMS",
    "STRUCTURE_THEOREMS",
    "THEOREMS",
]


# ----------------------------------------------------------------------------- opaque state
class HeadRead(LayoutError):
    """A fold step used the opaque part of its state other than by appending to it."""


class Head:
    """The finished part of a fold's state, opaque to the step: ``head + (x, ...)`` gives a
    Head with those items appended (:attr:`tail`); every other use -- truth value, length,
    indexing, iteration, comparison, arithmetic -- raises :class:`HeadRead`."""

    __slots__ = ("name", "tail")

    def __init__(self, name: str, tail: Tuple[Any, ...] = ()) -> None:
        self.name = name
        self.tail = tail

    def __add__(self, other: Any) -> "Head":
        if type(other) is not tuple:
            raise HeadRead(f"the step added {type(other).__name__} to the opaque part {self.name}")
        return Head(self.name, self.tail + other)

    def __or__(self, other: Any) -> "Head":
        if not isinstance(other, (set, frozenset)) or len(other) != 1:
            raise HeadRead(f"the step joined {type(other).__name__} to the opaque part {self.name}")
        return Head(self.name, self.tail + tuple(other))

    def _read(self, *_a: Any) -> Any:
        raise HeadRead(f"the step read the opaque part {self.name} of its state")

    __bool__ = __len__ = __iter__ = __getitem__ = __contains__ = _read
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _read
    __radd__ = __mul__ = __rmul__ = __hash__ = _read

    def __repr__(self) -> str:
        return f"Head({self.name}, +{len(self.tail)})"


def appended(x: Any, name: str) -> Tuple[Any, ...]:
    """What the step appended to the opaque part ``name``: it must still be that Head."""
    if type(x) is not Head or x.name != name:
        raise HeadRead(f"the step replaced the opaque part {name} of its state")
    return x.tail


def pos_symbol(name: str) -> Any:
    return cs.extents(name, 1)[0]


def int_symbol(name: str) -> Any:
    return cs.strides(name, 1)[0]


def no_confirm(asg: Any, p: Any) -> Optional[str]:
    return None


def ints_of(asg: Dict[str, int], **defaults: int) -> Dict[str, int]:
    """The model's values of the step's symbols (a symbol the obligation did not mention gets
    its default, chosen inside its assumptions)."""
    return {k: int(asg.get(k + "0", v)) for k, v in defaults.items()}


def path_ints(asg: Dict[str, int], path: Any, **defaults: int) -> Dict[str, int]:
    """As :func:`_ints`, but a symbol the path's equalities solved away (absent from the
    model) takes the value of its replacement at the model."""
    out = ints_of(asg, **defaults)
    subs, _extra = sx.normalize(path.facts)
    for sym, e in subs.items():
        k = str(sym)[:-1]
        if k in defaults and str(sym) not in asg:
            r = (
                _sp()
                .sympify(e)
                .xreplace(
                    {x: _sp().Integer(asg.get(str(x), defaults.get(str(x)[:-1], 1))) for x in e.free_symbols}
                )
            )
            if r.is_Integer:
                out[k] = int(r)
    return out


def at_values(x: Any, values: Dict[Any, int]) -> Any:
    """A SymPy expression at integer values of its symbols (an int when it is one)."""
    sp = _sp()
    r = sp.sympify(x).xreplace({k: sp.Integer(v) for k, v in values.items()})
    return int(r) if r.is_Integer else r


def _value(modes: Sequence[Tuple[int, int]], i: int, extended: bool = False) -> int:
    """A flat layout's value at the index ``i`` (integers; ``extended``: read past its last
    mode)."""
    out = 0
    for k, (s, d) in enumerate(modes):
        if extended and k == len(modes) - 1:
            c = i
        else:
            c, i = i % s, i // s
        out += c * d
    return out


# ----------------------------------------------------------------------------- coalesce
def _function_claims(
    cx: cs.Ctx,
    src: Sequence[Tuple[Any, Any]],
    rs: Sequence[Any],
    rd: Sequence[Any],
    extended: bool = False,
) -> List[Any]:
    """The modes ``rs:rd`` have the function and size of the modes ``src`` (``extended``:
    both read past their last mode, the last digit any non-negative integer)."""
    z3 = _z3()
    e = cx.enc
    ss = [m[0] for m in src]
    digits = [cx.dg.new(e, s, "c") for s in ss[:-1]]
    top = e.fresh("c") if extended else cx.dg.new(e, ss[-1], "c")
    digits.append(top)
    idx = sx.index_of(e, ss, digits)
    val = sx.value_of(e, [m[1] for m in src], digits)
    claims, rval = cs.eval_at_offset(cx, list(rs), list(rd), _terms(digits, ss), idx, unbounded_last=extended)
    body = z3.And(claims + [rval == val])
    out = [z3.Implies(top >= 0, body) if extended else body]
    out.append(cs.zprod(e, rs) == cs.zprod(e, ss))
    return out


def _terms(digits: Sequence[Any], shape: Sequence[Any]) -> List[Tuple[Any, Any, Any]]:
    sp = _sp()
    out = []
    p: Any = sp.Integer(1)
    for c, s in zip(digits, shape):
        out.append((c, s, p))
        p = p * s
    return out


def _coalesce_step_run(
    ops: Any, keep: bool, empty: bool, last: Tuple[Any, Any], mode: Tuple[Any, Any]
) -> Callable[[], Any]:
    """The real coalesce_step from the empty state or from (H, last), H opaque, on ``mode``:
    the new modes after H as (extents, strides)."""

    def fn() -> Any:
        if empty:
            done, new_last = ops.coalesce_step(ops.COALESCE_START, mode, keep=keep)
            if type(done) is not tuple or done:
                raise HeadRead("the step from the empty state finished a mode")
            modes: Tuple[Any, ...] = () if new_last is None else (new_last,)
        else:
            done, new_last = ops.coalesce_step((Head("H"), last), mode, keep=keep)
            modes = appended(done, "H") + ((new_last,) if new_last is not None else ())
        return [m[0] for m in modes], [m[1] for m in modes]

    return fn


def _coalesce_step_instance(keep: bool, empty: bool) -> cs.Instance:
    """coalesce_step on the state (opaque finished modes H, last mode (t, e)) -- or on the
    empty state -- and the mode (s, d); ``keep``: the last step of the keep-last fold."""
    sp = _sp()
    ops = _ops()
    t, s = pos_symbol("t"), pos_symbol("s")
    e_, d = int_symbol("e"), int_symbol("d")
    src = [(s, d)] if empty else [(t, e_), (s, d)]
    fn = _coalesce_step_run(ops, keep, empty, (t, e_), (s, d))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = cx.path.value
        if not rs:  # the state stays empty: the mode has extent 1 (size 1, the value 0)
            return [], z3.And(e.t(s) == 1, z3.BoolVal(not keep and empty))
        claims = _function_claims(cx, src, rs, rd, extended=keep)
        if not keep:
            claims.append(e.t(rs[-1]) != 1)  # the invariant: the last extent is not 1
        # the strides are a subsequence of the inputs' (C's order survives coalesce)
        claims.append(z3.BoolVal(len(rs) <= len(src)))
        firsts = [m[1] for m in src]
        claims.append(e.t(rd[0]) == e.t(firsts[0]))
        if len(rs) == 2:
            claims.append(e.t(rd[1]) == e.t(firsts[1]))
        return [], z3.And(claims)

    def confirm(asg: Dict[str, int], _p: Any) -> Optional[str]:
        """The step run on the model's integers, its new modes evaluated at every index of
        (t, s):(e, d) (twice that range when extended; up to 2^16 points)."""
        v = ints_of(asg, t=2, s=1, e=1, d=1)
        src_i = ([] if empty else [(v["t"], v["e"])]) + [(v["s"], v["d"])]
        n = 1
        for a, _b in src_i:
            n *= a
        if min(a for a, _b in src_i) <= 0 or (not empty and v["t"] == 1) or n > 1 << 15:
            return None
        state = _ops().COALESCE_START if empty else (Head("H"), src_i[0])
        done, last = _ops().coalesce_step(state, src_i[-1], keep=keep)
        modes = ([] if empty else list(appended(done, "H"))) + ([last] if last is not None else [])
        got = modes or [(1, 0)]
        for i in range(2 * n if keep else n):
            if _value(got, i, keep) != _value(src_i, i, keep):
                return f"coalesce_step gave {got} for {src_i}: they differ at index {i}"
        return None

    where = "the empty state" if empty else "(H, (t, e)), t != 1"
    label = f"{'last step (kept)' if keep else 'step'} from {where}"
    return cs.Instance(label, fn, build, confirm, assumptions=() if empty else (sp.Ne(t, 1),), strict=True)


def coalesce_instances(keep_last: bool = False) -> List[cs.Instance]:
    """Base (rank 1, the whole fold with its finish), the step from the empty state and from
    a state with a last mode; for ``keep_last`` also the kept last step from both."""
    base = (
        su.coalesce_keep_last_instance(cs.sym_layout("L", 1))
        if keep_last
        else su.coalesce_function_instance(cs.sym_layout("L", 1))
    )
    base = cs.Instance("base: rank 1", base.fn, base.build, base.confirm)
    out = [base, _coalesce_step_instance(False, True), _coalesce_step_instance(False, False)]
    if keep_last:
        out += [_coalesce_step_instance(True, True), _coalesce_step_instance(True, False)]
    return out


def _is_leaf(x: Any) -> bool:
    """A scalar extent or stride: an int or a sympy expression, not a tuple (a nested mode)."""
    return type(x) is int or isinstance(x, _sp().Expr)


def _coalesce_depth_step_instance(empty: bool) -> cs.Instance:
    """coalesce_step from the empty state or from (H, (t, e)), leaves, on the leaf mode (s, d):
    every new mode after H is a pair of leaves (so coalesce_finish's modes, and coalesce(L),
    have depth <= 1)."""
    ops = _ops()
    t, s = pos_symbol("t"), pos_symbol("s")
    e_, d = int_symbol("e"), int_symbol("d")
    fn = _coalesce_step_run(ops, False, empty, (t, e_), (s, d))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        rs, rd = cx.path.value
        return [], _z3().BoolVal(all(_is_leaf(x) for x in list(rs) + list(rd)))

    def confirm(asg: Dict[str, int], _p: Any) -> Optional[str]:
        """The step run on the model's integers: a new mode that is not a pair of leaves."""
        v = ints_of(asg, t=2, s=1, e=1, d=1)
        rs, rd = _coalesce_step_run(_ops(), False, empty, (v["t"], v["e"]), (v["s"], v["d"]))()
        bad = [m for m in zip(rs, rd) if not all(_is_leaf(x) for x in m)]
        return f"coalesce_step gave the nested mode {bad[0]}" if bad else None

    where = "the empty state" if empty else "(H, (t, e)), H opaque"
    return cs.Instance(f"step from {where}: new modes are leaves", fn, build, confirm, strict=True)


def coalesce_depth_instances() -> List[cs.Instance]:
    """Base (rank 1: the whole coalesce is flat) and the steps from the empty state and from
    a state with a last mode (every new mode a pair of leaves)."""
    base = su.coalesce_depth_instance(cs.sym_layout("L", 1))
    base = cs.Instance("base: rank 1", base.fn, base.build, base.confirm)
    return [base, _coalesce_depth_step_instance(True), _coalesce_depth_step_instance(False)]


# ----------------------------------------------------------------------------- filter
def _decided(cx: cs.Ctx, cond: Any) -> Optional[bool]:
    sp = _sp()
    if sx.implied(cond, cx.facts, subs=cx.enc.subs):
        return True
    if sx.implied(sp.Not(cond), cx.facts, subs=cx.enc.subs):
        return False
    return None


def _filter_step_instance(empty: bool) -> cs.Instance:
    """filter_step on (H, (t, e)) -- t != 1, e != 0: the invariant of filter's state, no
    finished or last mode of extent 1 or stride 0 -- or on the empty state, and the mode
    (s, d): the state's new modes have the function of the kept modes of (t, s):(e, d) on
    their coordinates (a dropped mode adds 0: c*d == 0 for every c < s), and keep the
    invariant."""
    sp = _sp()
    ops = _ops()
    t, s = pos_symbol("t"), pos_symbol("s")
    e_, d = int_symbol("e"), int_symbol("d")

    def fn() -> Any:
        if empty:
            done, last = ops.filter_step(ops.COALESCE_START, (s, d))
            if type(done) is not tuple or done:
                raise HeadRead("the step from the empty state finished a mode")
            modes: Tuple[Any, ...] = () if last is None else (last,)
        else:
            done, last = ops.filter_step((Head("H"), (t, e_)), (s, d))
            modes = appended(done, "H") + ((last,) if last is not None else ())
        return [m[0] for m in modes], [m[1] for m in modes]

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = cx.path.value
        unit = _decided(cx, sp.Eq(s, 1))
        zero = None if unit else _decided(cx, sp.Eq(d, 0))
        if unit is None or (not unit and zero is None):
            raise sx.NoPlacement("whether the mode is dropped is not decided on this path")
        kept = not (unit or zero)
        src = ([] if empty else [(t, e_)]) + ([(s, d)] if kept else [])
        claims: List[Any] = []
        if not kept:  # the dropped mode adds nothing to L's value
            c = cx.dg.new(e, s, "c")
            claims.append(c * e.t(d) == 0)
        if not src:
            claims.append(z3.BoolVal(not rs))
        else:
            claims += _function_claims(cx, src, rs, rd)
            # the invariant: no mode of extent 1 or stride 0 (so none of extent > 1 and stride 0)
            claims += [z3.And(e.t(a) != 1, e.t(b) != 0) for a, b in zip(rs, rd)]
        return [], z3.And(claims)

    label = "step from the empty state" if empty else "step from (H, (t, e)), t != 1, e != 0"
    assume = () if empty else (sp.Ne(t, 1), sp.Ne(e_, 0))
    return cs.Instance(label, fn, build, no_confirm, assumptions=assume, strict=True)


def filter_instances() -> List[cs.Instance]:
    """filter = coalesce_finish of the fold of filter_step: the step from the empty state
    and from a state with a last mode (the finish is coalesce's: 1:0 for no mode)."""
    return [_filter_step_instance(True), _filter_step_instance(False)]


# ----------------------------------------------------------------------------- structure
def _structure_step_instance(op: str, what: str, empty: bool) -> cs.Instance:
    """The step of coalesce (``op == "coalesce"``) or filter on (H, (t, e)) -- the state's
    invariant: t != 1 (and e != 0 for filter) -- or on the empty state, and the mode (s, d):

    * ``"maximal"``: the new modes have extents != 1 (and strides != 0 for filter), the first
      keeps the stride e (so it still cannot merge with H's last mode), and two new modes
      cannot merge (d' != t' e');
    * ``"cosize"``: the new modes' 1 + sum((s-1)|d|) terms add up to those of (t, s):(e, d)
      (a dropped mode's term is 0);
    * ``"identity"``: on a maximal state and mode (s != 1, d != t e, and d != 0 for filter)
      the step appends the mode unchanged -- so the fold reproduces a maximal layout."""
    sp = _sp()
    ops = _ops()
    step = ops.coalesce_step if op == "coalesce" else ops.filter_step
    t, s = pos_symbol("t"), pos_symbol("s")
    e_, d = int_symbol("e"), int_symbol("d")
    src = [(s, d)] if empty else [(t, e_), (s, d)]
    assume: List[Any] = [] if empty else [sp.Ne(t, 1)]
    if op == "filter" and not empty:
        assume.append(sp.Ne(e_, 0))
    if what == "identity":
        assume.append(sp.Ne(s, 1))
        if not empty:
            assume.append(sp.Ne(d, t * e_))
        if op == "filter":
            assume.append(sp.Ne(d, 0))

    def fn() -> Any:
        if empty:
            done, last = step(ops.COALESCE_START, (s, d))
            if type(done) is not tuple or done:
                raise HeadRead("the step from the empty state finished a mode")
            modes: Tuple[Any, ...] = () if last is None else (last,)
        else:
            done, last = step((Head("H"), (t, e_)), (s, d))
            modes = appended(done, "H") + ((last,) if last is not None else ())
        return [m[0] for m in modes], [m[1] for m in modes]

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = cx.path.value
        dropped = e.t(s) == 1 if op == "coalesce" else z3.Or(e.t(s) == 1, e.t(d) == 0)
        if what == "identity":
            same = len(rs) == len(src)
            return [], z3.And(
                [z3.BoolVal(same)]
                + [e.t(a) == e.t(b) for a, b in zip(rs + rd, [m[0] for m in src] + [m[1] for m in src])]
                if same
                else [z3.BoolVal(False)]
            )
        if what == "cosize":
            return [], cs.zcosize(e, cs.lay(rs, rd) if rs else Layout.trusted(1, 0)) == cs.zcosize(
                e, cs.lay([m[0] for m in src], [m[1] for m in src])
            )
        if not rs:
            return [], z3.And(dropped, z3.BoolVal(empty))
        claims = [e.t(a) != 1 for a in rs]
        if op == "filter":
            claims += [e.t(b) != 0 for b in rd]
        claims.append(e.t(rd[0]) == e.t(src[0][1]))
        if len(rs) == 2:
            claims.append(e.t(rd[1]) != e.t(rs[0]) * e.t(rd[0]))
        return [], z3.And(claims)

    where = "the empty state" if empty else "(H, (t, e))"
    return cs.Instance(
        f"{op} {what} step from {where}", fn, build, no_confirm, assumptions=tuple(assume), strict=True
    )


def structure_instances(op: str, what: str) -> List[cs.Instance]:
    """The ``what`` step of ``op`` from the empty state and from a state with a last mode."""
    return [_structure_step_instance(op, what, True), _structure_step_instance(op, what, False)]


# ----------------------------------------------------------------------------- the theorems
BY_INSPECTION = "the fold loop `for m in modes: state = step(state, m)` (two lines) and the concatenation of "
FOLD = (
    "Machine-checked on every path of the real symops step functions (opaque finished modes: a step "
    "that read them would make the run refused and the theorem unknown)"
)


def induction_check(
    claim: str, make: Callable[[], List[cs.Instance]], direct: Callable[[], List[cs.Instance]]
) -> Any:
    """The induction's instances (both jobs) and, with ``--all``, the direct rank-bounded
    runs as a supplement."""

    def check() -> List[Any]:
        out = cs.prove(f"{claim} (induction)", make())
        if cs.full_scope():
            out += cs.prove(claim, direct())
        return out

    return check


def _structure_theorems() -> List[Theorem]:
    """coalesce's and filter's maximality, cosize and idempotence at every rank."""
    inv = (
        "Induction over the fold (as sym.coalesce-every-rank / sym.filter-post), steps from the empty "
        "state and from (H, (t, e)) on the real coalesce_step / filter_step, H opaque: "
    )
    maxi = (
        "the maximal step: the new modes after H have extents != 1 (filter: and strides != 0), the "
        "first keeps the stride e of the last mode before (so it still cannot merge with H's last "
        "mode) and two new modes cannot merge (d' != t' e')"
    )
    ident = (
        "the identity step: on a maximal state and a mode (s, d) with s != 1 and d != t e (filter: and "
        "d != 0) the step appends the mode unchanged, so the fold reproduces a maximal layout; 1:0 "
        "gives 1:0 (its mode of extent 1 is dropped, the finish gives 1:0)"
    )
    tail = (
        ". "
        + FOLD
        + ". By inspection: the fold loop, the concatenation of H with the suffix, coalesce_finish"
    )
    sc = (
        "every rank (steps on the real {} code, both jobs); direct symbolic execution at ranks 1-4 as a "
        "supplement with `--all`"
    )
    anyL = f"{cs.EXTENTS}; {cs.STRIDES_ANY}"

    def run(
        claim: str, insts: Callable[[], List[cs.Instance]], direct: Callable[[Layout], cs.Instance]
    ) -> Any:
        return induction_check(claim, insts, lambda: [direct(cs._L(r)) for r in (1, 2, 3, 4)])

    def two(*pairs: Tuple[str, str]) -> Callable[[], List[cs.Instance]]:
        return lambda: [i for op, what in pairs for i in structure_instances(op, what)]

    return [
        _theorem(
            "sym.coalesce-cosize",
            "coalesce(L) has L's cosize, for all extents and strides, at every rank",
            "cosize(coalesce(L)) == cosize(L), cosize = 1 + sum((s_k - 1) |d_k|) (negative strides "
            "included). A sum of one term per mode, so it is enough that each step's new modes have the "
            "terms of (t, s):(e, d) (a dropped mode's term is 0). " + inv + "the cosize step" + tail,
            run("cosize(coalesce(L)) == cosize(L)", two(("coalesce", "cosize")), su.coalesce_cosize_instance),
            sc.format("coalesce_step"),
            anyL,
        ),
        _theorem(
            "sym.coalesce-maximal",
            "coalesce(L) is maximal: no unit mode, no mergeable neighbours, at every rank",
            "Every mode of coalesce(L) has an extent != 1 (unless the result is 1:0, L of size 1 or all "
            "modes extent 1), and no two neighbouring modes could merge: d_{k+1} != s_k d_k. "
            + inv
            + maxi
            + tail,
            run(
                "coalesce(L) has no unit mode and no mergeable pair",
                two(("coalesce", "maximal")),
                su.coalesce_maximal_instance,
            ),
            sc.format("coalesce_step"),
            anyL,
        ),
        _theorem(
            "sym.coalesce-idempotent",
            "coalesce is idempotent, for all extents and strides, at every rank",
            "coalesce(coalesce(L)) == coalesce(L) (same shape and strides): coalesce(L) is maximal ("
            + maxi
            + ") "
            "and coalesce reproduces a maximal layout (" + ident + "). " + inv.rstrip(": ") + tail,
            run(
                "coalesce(coalesce(L)) == coalesce(L)",
                two(("coalesce", "maximal"), ("coalesce", "identity")),
                su.coalesce_idempotent_instance,
            ),
            sc.format("coalesce_step"),
            anyL,
        ),
        _theorem(
            "sym.filter-cosize",
            "filter(L) has L's cosize, for all extents and strides, at every rank",
            "cosize(filter(L)) == cosize(L): the modes filter drops (extent 1 or stride 0) have the term 0 "
            "in 1 + sum((s_k - 1) |d_k|), and each filter_step's new modes have the terms of (t, s):(e, d). "
            + inv
            + "the cosize step"
            + tail,
            run("cosize(filter(L)) == cosize(L)", two(("filter", "cosize")), su.filter_cosize_instance),
            sc.format("filter_step"),
            anyL,
        ),
        _theorem(
            "sym.filter-idempotent",
            "filter is idempotent, for all extents and strides, at every rank",
            "filter(filter(L)) == filter(L) (same shape and strides): filter(L) is maximal with no stride 0 "
            "(" + maxi + ") and filter reproduces such a layout (" + ident + "). " + inv.rstrip(": ") + tail,
            run(
                "filter(filter(L)) == filter(L)",
                two(("filter", "maximal"), ("filter", "identity")),
                su.filter_idempotent_instance,
            ),
            sc.format("filter_step"),
            anyL,
        ),
        _theorem(
            "sym.filter-coalesced",
            "filter's result is already coalesced, at every rank",
            "coalesce(filter(L)) == filter(L) (same shape and strides): filter(L) is maximal (the filter "
            "maximal step) and coalesce reproduces a maximal layout ("
            + ident
            + "). "
            + inv.rstrip(": ")
            + tail,
            run(
                "coalesce(filter(L)) == filter(L)",
                two(("filter", "maximal"), ("coalesce", "identity")),
                su.filter_coalesced_instance,
            ),
            sc.format("coalesce_step and filter_step"),
            anyL,
        ),
    ]


_CO_SCOPE = (
    "every rank (the induction of sym.coalesce-every-rank, both jobs); direct execution at ranks 1-2 in "
    "`layoutproof prove`, ranks 1-4 with `--all`"
)


def _coalesce_check(
    make: Callable[[Layout], cs.Instance], claim: str, first: int = 1
) -> Callable[[], List[Any]]:
    """``claim`` at every rank by coalesce's induction, plus the whole coalesce run directly at
    ranks ``first``-2 (``first``-4 with ``--all``; ``first`` 2 where the induction's base, rank 1,
    already is the claim)."""

    def check() -> List[Any]:
        ranks = range(first, 5 if cs.full_scope() else 3)
        direct = cs.prove(claim, [make(cs.sym_layout("L", r)) for r in ranks])
        return cs.prove("coalesce by induction", coalesce_instances(False)) + direct

    return check


def _coalesce_depth_check() -> List[Any]:
    """The depth induction (its base is rank 1), plus the whole coalesce at rank 2 (2-4 with
    ``--all``)."""
    ranks = (2, 3, 4) if cs.full_scope() else (2,)
    direct = cs.prove(
        "depth(coalesce(L)) <= 1", [su.coalesce_depth_instance(cs.sym_layout("L", r)) for r in ranks]
    )
    return cs.prove("coalesce is flat by induction", coalesce_depth_instances()) + direct


def _fold_theorems() -> List[Theorem]:
    """coalesce's and filter's post-conditions at every rank."""
    co_stmt = (
        "Induction over coalesce_flat's fold of symops.coalesce_step. Invariant: the state's modes (finished "
        "+ last) have the function and size of L's modes folded so far, the last extent != 1. Base: rank 1 "
        "(the whole fold and coalesce_finish, every path). Steps: coalesce_step from the empty state and "
        "from (H, (t, e)), t != 1, H opaque, on the mode (s, d): the new modes after H have the function "
        "and size of (t, s):(e, d) (of s:d from the empty state), a last extent != 1, and strides a "
        "subsequence of the inputs'. " + FOLD + ". By inspection: " + BY_INSPECTION + "H with the "
        "step's suffix (a layout's value is the sum of its modes' terms, so a suffix of equal size and "
        "function keeps the function), and coalesce_finish (1:0 for no mode, else the modes)"
    )
    out = [
        _theorem(
            "sym.coalesce-every-rank",
            "coalesce(L) has L's function and size at every rank (induction over the modes)",
            "For every flat L of any rank: coalesce(L) has L's size and function. " + co_stmt,
            lambda: cs.prove("coalesce by induction", coalesce_instances(False)),
            "every rank (base + steps on the real coalesce_step, both jobs)",
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
        _theorem(
            "sym.coalesce-extended-every-rank",
            "coalesce keeping the last mode preserves the extended function at every rank (induction)",
            "For every flat L of any rank: coalesce_flat(L, keep_last) extended along its last mode is L "
            "extended along its last mode. As sym.coalesce-every-rank, plus the kept last step "
            "(coalesce_step with keep, from the empty state and from (H, (t, e))): the new modes after H, "
            "read past their last mode, have the function of (t, s):(e, d) read past s. " + co_stmt,
            lambda: cs.prove("keep-last coalesce by induction", coalesce_instances(True)),
            "every rank (base + steps on the real coalesce_step, both jobs)",
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
        _theorem(
            "sym.coalesce-function",
            "coalesce(L) has L's function, for all extents and strides, at every rank",
            "For every flat L = (s_0..s_{n-1}):(d_0..d_{n-1}) and every coordinate c: coalesce(L)(idx(c)) "
            "== L(c), the index's digits in coalesce(L)'s shape in range. At every rank by the induction "
            "of sym.coalesce-every-rank (re-run here); the whole coalesce by direct symbolic execution at "
            "rank 2 (2-4 with `--all`; rank 1 is the induction's base) as a supplement",
            _coalesce_check(su.coalesce_function_instance, "coalesce(L)(i) == L(i)", first=2),
            "every rank (the induction of sym.coalesce-every-rank, both jobs); direct execution at rank 2 "
            "in `layoutproof prove`, ranks 2-4 with `--all`",
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
        _theorem(
            "sym.coalesce-size",
            "coalesce(L) has L's size, for all extents and strides, at every rank",
            "size(coalesce(L)) == size(L). At every rank by the induction of sym.coalesce-every-rank "
            "(re-run here: its steps keep the size of the modes folded so far); the whole coalesce by "
            "direct symbolic execution at ranks 1-2 (1-4 with `--all`) as a supplement",
            _coalesce_check(su.coalesce_size_instance, "size(coalesce(L)) == size(L)"),
            _CO_SCOPE,
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
        _theorem(
            "sym.coalesce-depth",
            "coalesce(L) is flat, for all extents and strides, at every rank",
            "depth(coalesce(L)) <= 1 for every L of any rank. Induction over coalesce_flat's fold of "
            "symops.coalesce_step. Invariant: every mode of the state (finished + last) is a pair of leaves "
            "(an extent and a stride, no tuple). Base: rank 1 (the whole coalesce, every path). Steps: "
            "coalesce_step from the empty state and from (H, (t, e)), H opaque, on the leaf mode (s, d): "
            "every new mode after H is a pair of leaves. "
            + FOLD
            + ". By inspection: "
            + BY_INSPECTION
            + "H with the step's suffix, raw_flatten (L's modes are leaves) and coalesce's finish "
            "(_from_modes of coalesce_finish: 1:0, one leaf mode, or a tuple of leaf modes: depth <= 1). "
            "The whole coalesce by direct symbolic execution at ranks 2 (2-4 with `--all`) as a supplement",
            _coalesce_depth_check,
            "every rank (base + steps on the real coalesce_step, both jobs); direct execution at rank 2 in "
            "`layoutproof prove`, ranks 2-4 with `--all`",
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
        _theorem(
            "sym.filter-post",
            "filter meets its post-condition, for all extents and strides, at every rank",
            "filter(L) has no stride-0 mode of extent > 1, its domain is L's coordinates with the "
            "extent-1 and stride-0 modes left out (sizes equal), and filter(L) at that coordinate == "
            "L(c). Induction over filter_'s fold of symops.filter_step. Invariant: the state's modes have "
            "the function and size of the kept modes folded so far, and none has extent 1 or stride 0. "
            "Steps (every path): from the empty state and from (H, (t, e)), t != 1, e != 0, H opaque, on "
            "(s, d): a dropped mode (s == 1 or d == 0 decided) adds c*d == 0 and leaves the state's "
            "function, a kept one gives new modes with the function and size of (t, s):(e, d), every new "
            "mode of extent != 1 and stride != 0. " + FOLD + ". By inspection: " + BY_INSPECTION + "H "
            "with the suffix, and the finish (coalesce_finish: 1:0 when no mode is kept)",
            induction_check(
                "filter(L)(kept(c)) == L(c)",
                filter_instances,
                lambda: [su.filter_instance(cs._L(r)) for r in (1, 2, 3)],
            ),
            "every rank (steps on the real filter_step, both jobs); direct symbolic execution at ranks 1-3 "
            "as a supplement with `--all`",
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
    ]
    return out


def _structure_theorems_and_size() -> List[Theorem]:
    return [
        *_structure_theorems(),
        _theorem(
            "sym.filter-size",
            "size(filter(L)) <= size(L), with equality without stride-0 modes, at every rank",
            "size(filter(L)) <= size(L); == when every mode of L has extent 1 or a non-zero stride. Each "
            "filter_step's new modes have the size of the kept modes (the step's claim), so size(filter(L)) "
            "is the product of the kept extents; a dropped mode has extent 1 or stride 0. Induction as in "
            "sym.filter-post: steps from the empty state and from (H, (t, e)) on the real filter_step. "
            + FOLD,
            induction_check(
                "size(filter(L)) <= size(L)",
                filter_instances,
                lambda: [su.filter_size_instance(cs._L(r)) for r in (1, 2, 3, 4)],
            ),
            "every rank (steps on the real filter_step, both jobs); direct symbolic execution at ranks 1-4 "
            "as a supplement with `--all`",
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
    ]


#: coalesce and filter by induction (listed before :mod:`.induction_inverse`'s theorems)
FOLD_THEOREMS: List[Theorem] = _fold_theorems()
#: maximality, cosize, idempotence and filter's size (listed after them)
STRUCTURE_THEOREMS: List[Theorem] = _structure_theorems_and_size()
THEOREMS: List[Theorem] = FOLD_THEOREMS + STRUCTURE_THEOREMS
