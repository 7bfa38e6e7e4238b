"""The one-layout folds at every rank: induction on the real step code (issue 15).

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
    "coalesce_instances",
    "filter_instances",
    "complement_instances",
    "left_inverse_instances",
    "right_inverse_instances",
    "sort_instances",
    "sort_scan_instances",
    "rest_tuple_instances",
    "pick_scan_instances",
    "structure_instances",
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


def _pos(name: str) -> Any:
    return cs.extents(name, 1)[0]


def _int(name: str) -> Any:
    return cs.strides(name, 1)[0]


def _no_confirm(asg: Any, p: Any) -> Optional[str]:
    return None


def _ints(asg: Dict[str, int], **defaults: int) -> Dict[str, int]:
    """The model's values of the step's symbols (a symbol the obligation did not mention gets
    its default, chosen inside its assumptions)."""
    return {k: int(asg.get(k + "0", v)) for k, v in defaults.items()}


def _path_ints(asg: Dict[str, int], path: Any, **defaults: int) -> Dict[str, int]:
    """As :func:`_ints`, but a symbol the path's equalities solved away (absent from the
    model) takes the value of its replacement at the model."""
    out = _ints(asg, **defaults)
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


def _at(x: Any, values: Dict[Any, int]) -> Any:
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
    t, s = _pos("t"), _pos("s")
    e_, d = _int("e"), _int("d")
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
        v = _ints(asg, t=2, s=1, e=1, d=1)
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
    t, s = _pos("t"), _pos("s")
    e_, d = _int("e"), _int("d")
    fn = _coalesce_step_run(ops, False, empty, (t, e_), (s, d))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        rs, rd = cx.path.value
        return [], _z3().BoolVal(all(_is_leaf(x) for x in list(rs) + list(rd)))

    def confirm(asg: Dict[str, int], _p: Any) -> Optional[str]:
        """The step run on the model's integers: a new mode that is not a pair of leaves."""
        v = _ints(asg, t=2, s=1, e=1, d=1)
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
    t, s = _pos("t"), _pos("s")
    e_, d = _int("e"), _int("d")

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
    return cs.Instance(label, fn, build, _no_confirm, assumptions=assume, strict=True)


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
    t, s = _pos("t"), _pos("s")
    e_, d = _int("e"), _int("d")
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
        f"{op} {what} step from {where}", fn, build, _no_confirm, assumptions=tuple(assume), strict=True
    )


def structure_instances(op: str, what: str) -> List[cs.Instance]:
    """The ``what`` step of ``op`` from the empty state and from a state with a last mode."""
    return [_structure_step_instance(op, what, True), _structure_step_instance(op, what, False)]


# ----------------------------------------------------------------------------- sorting
def _sort_instance(n: int) -> cs.Instance:
    """symops.sort_modes on n modes with symbolic non-negative strides: a permutation of
    its input, strides non-decreasing, equal strides in index order."""
    ops = _ops()
    ds = cs.strides("d", n, nonneg=True)
    ss = cs.extents("s", n)
    modes = [(ds[k], ss[k], k) for k in range(n)]

    def fn() -> Any:
        return ops.sort_modes(list(modes), "sort")

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        out = cx.path.value
        perm = sorted(m[2] for m in out) == list(range(n)) and all(modes[m[2]] == m for m in out)
        claims = [z3.BoolVal(perm)]
        for a, b in zip(out, out[1:]):
            claims.append(e.t(a[0]) <= e.t(b[0]))
            if a[2] > b[2]:
                claims.append(e.t(a[0]) != e.t(b[0]))
        return [], z3.And(claims)

    return cs.Instance(f"sort_modes, {n} modes", fn, build, _no_confirm, strict=True)


def sort_instances(ranks: Sequence[int]) -> List[cs.Instance]:
    return [_sort_instance(n) for n in ranks]


def _sort_scan_found_instance() -> cs.Instance:
    """sort_scan_step once the scan has found its position: it returns that position and
    reads neither the inserted mode nor the prefix's mode (both opaque)."""
    ops = _ops()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        return [], _z3().BoolVal(cx.path.value == 3)

    return cs.Instance(
        "sort scan: position found (modes opaque)",
        lambda: ops.sort_scan_step(3, 5, Head("m"), Head("o"), "sort"),
        build,
        _no_confirm,
        strict=True,
    )


def _key_before(e: Any, a: Tuple[Any, Any, int], b: Tuple[Any, Any, int]) -> Any:
    """a precedes b in the order (stride, index) (distinct integer indices)."""
    za, zb = e.t(a[0]), e.t(b[0])
    return _z3().Or(za < zb, za == zb) if a[2] < b[2] else za < zb


def _sort_scan_compare_instance(m_first: bool) -> cs.Instance:
    """sort_scan_step before any position is found, on the inserted mode m = (dm, sm, im)
    and the prefix's mode o = (do, so, io) at j (strides any integers; the indices distinct,
    im < io when ``m_first``): it returns j exactly when m precedes o in the order (stride,
    index), None exactly when o precedes m; it raises on no path (each comparison is decided
    on the path)."""
    ops = _ops()
    dm, do, sm, so = _int("dm"), _int("do"), _pos("sm"), _pos("so")
    im, io = (0, 1) if m_first else (1, 0)
    m, o = (dm, sm, im), (do, so, io)

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        r = cx.path.value
        before = _key_before(cx.enc, m, o)
        if r is None:
            return [], z3.Not(before)
        return [], z3.And(z3.BoolVal(r == 5), before)

    def confirm(asg: Dict[str, int], path: Any) -> Optional[str]:
        """The step on the model's integers: refuted when its answer is not the order."""
        v = _path_ints(asg, path, dm=0, do=0)
        a, b = (v["dm"], 2, im), (v["do"], 2, io)
        r = _ops().sort_scan_step(None, 5, a, b, "sort")
        want = (a[0], a[2]) < (b[0], b[2])
        if (r == 5) != want or r not in (None, 5):
            return f"sort_scan_step on m = {a}, o = {b} at 5 gave {r}"
        return None

    return cs.Instance(
        f"sort scan: compare (m index {'<' if m_first else '>'} o index)",
        lambda: ops.sort_scan_step(None, 5, m, o, "sort"),
        build,
        confirm,
        strict=True,
    )


def sort_scan_instances() -> List[cs.Instance]:
    """The sort lemma at every length: the scan step of symops.sort_insert, found and not
    found (both index orders)."""
    return [
        _sort_scan_found_instance(),
        _sort_scan_compare_instance(True),
        _sort_scan_compare_instance(False),
    ]


# ----------------------------------------------------------------------------- complement
def _kept_mode_instance(op: str) -> cs.Instance:
    """symops.kept_mode (which modes complement / left_inverse count) on one mode s:d,
    s > 0, d any integer: False exactly when s == 1 or d == 0; True only with d > 0 and
    s != 1; it raises (inadmissible) only for d < 0."""
    ops = _ops()
    s, d = _pos("s"), _int("d")

    def fn() -> Any:
        return cs.raises(lambda: ops.kept_mode(op, 0, s, d, Layout.trusted(s, d)))()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, v = cx.path.value
        zs, zd = e.t(s), e.t(d)
        if tag == "raises":
            return [], z3.And(zd < 0, zs != 1)
        if v:
            return [], z3.And(zd > 0, zs != 1)
        return [], z3.Or(zs == 1, zd == 0)

    return cs.Instance(f"{op}: kept_mode on one mode", fn, build, _no_confirm, strict=True)


def _complement_step_instance() -> cs.Instance:
    """complement_step on (R, D opaque, cur) and the mode (d, s), d > 0 and s != 1 (a kept
    mode): on a path that returns, cur | d, and the appended complement modes N followed by
    (s, d) form a chain from cur (N[0] has stride cur, each next stride is the previous
    stride times its extent) ending at the new covered extent s*d > cur, every appended
    extent >= 2 and stride cur; on a path that raises, cur does not divide d."""
    sp = _sp()
    ops = _ops()
    cur, s, d = _pos("cur"), _pos("s"), _pos("d")

    def fn() -> Any:
        def run() -> Any:
            rs, rd, cur2 = ops.complement_step((Head("R"), Head("D"), cur), (d, s, 0))
            return list(appended(rs, "R")), list(appended(rd, "D")), cur2

        return cs.raises(run)()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, v = cx.path.value
        divides = e.t(sp.Mod(d, cur)) == 0
        if tag == "raises":
            return [], z3.Not(divides)
        ns, nd, cur2 = v
        chain = list(zip(ns, nd)) + [(s, d)]
        claims = [divides, z3.BoolVal(len(ns) == len(nd) and len(ns) <= 1)]
        stride: Any = e.t(cur)
        for a, b in chain:
            claims.append(e.t(b) == stride)
            stride = e.t(b) * e.t(a)
        claims.append(e.t(cur2) == stride)
        claims += [e.t(a) >= 2 for a in ns] + [e.t(b) == e.t(cur) for b in nd]
        claims.append(e.t(cur2) > e.t(cur))
        return [], z3.And(claims)

    def confirm(asg: Dict[str, int], _p: Any) -> Optional[str]:
        """The step run on the model's integers (the same symops step, no exploration): the
        refutation stands when its result there breaks the claim."""
        v = _ints(asg, cur=1, s=2, d=1)
        c, s_, d_ = v["cur"], v["s"], v["d"]
        if c <= 0 or s_ <= 1 or d_ <= 0:
            return None
        tag, out = cs.raises(lambda: _ops().complement_step((Head("R"), Head("D"), c), (d_, s_, 0)))()
        at = f"complement_step on cur = {c} and the mode {s_}:{d_}"
        if tag == "raises":
            return f"{at} raised although cur | d" if d_ % c == 0 else None
        rs, rd, c2 = out
        ns, nd = appended(rs, "R"), appended(rd, "D")
        if d_ % c:
            return f"{at} returned although cur = {c} does not divide d = {d_} (the stride chain fails)"
        stride = c
        for a, b in list(zip(ns, nd)) + [(s_, d_)]:
            if b != stride:
                return f"{at} appended {list(zip(ns, nd))}: not a chain from {c}"
            stride = a * b
        if c2 != stride or any(a < 2 for a in ns) or c2 <= c:
            return f"{at} gave the covered extent {c2} after {list(zip(ns, nd))}"
        return None

    return cs.Instance(
        "step: (R, D opaque, cur), mode (d, s), s != 1",
        fn,
        build,
        confirm,
        assumptions=(sp.Ne(s, 1),),
        strict=True,
    )


def _complement_rest_instance() -> cs.Instance:
    """complement_rest(cur, M) (M a positive integer): one mode r:cur with r >= 1 and
    M <= r*cur < M + cur."""
    ops = _ops()
    cur, M = _pos("cur"), cs.extents("M", 1)[0]

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = cx.path.value
        if len(rs) != 1 or len(rd) != 1:
            return [], z3.BoolVal(False)
        K = e.t(rs[0]) * e.t(cur)
        return [], z3.And(e.t(rd[0]) == e.t(cur), e.t(rs[0]) >= 1, K >= e.t(M), K < e.t(M) + e.t(cur))

    def confirm(asg: Dict[str, int], p: Any) -> Optional[str]:
        """The path's result with the model substituted (a bug of the symbolic path), else
        complement_rest run on the model's integers, checked on integers."""
        v = _ints(asg, cur=1, M=1)
        c, m = v["cur"], v["M"]
        if c <= 0 or m <= 0:
            return None
        at = {cur: c, M: m}
        for how, (rs, rd) in (
            ("on this path", [[_at(x, at) for x in xs] for xs in p.value]),
            ("on the integers", _ops().complement_rest(c, m)),
        ):
            if any(type(x) is not int for x in rs + rd):
                continue
            if len(rs) != 1 or rd != [c] or not (m <= rs[0] * c < m + c):
                return f"complement_rest({c}, {m}) gives {list(zip(rs, rd))} {how}: not M rounded up to cur"
        return None

    return cs.Instance(
        "finish: complement_rest(cur, M)",
        lambda: ops.complement_rest(cur, M),
        build,
        confirm,
        strict=True,
    )


def _rest_tuple_step_instance() -> cs.Instance:
    """complement_rest_step on (R, D opaque, d, p) and a tuple cotarget's mode x (d, p, x
    positive): it never raises; where it returns a state (e appended at stride p, d' left,
    next stride p'), e >= 1, d' >= 1, d' | d, e d == x d', d' == 1 or e == 1, and p' == p e
    -- the invariant's step; None is the fallback (one mode ceil(M / cur) : cur, the finish
    lemma)."""
    ops = _ops()
    d, p, x = _pos("d"), _pos("p"), _pos("x")

    def fn() -> Any:
        def run() -> Any:
            out = ops.complement_rest_step((Head("R"), Head("D"), d, p), x)
            if out is None:
                return None
            rs, rd, d2, p2 = out
            return list(appended(rs, "R")), list(appended(rd, "D")), d2, p2

        return cs.raises(run)()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, v = cx.path.value
        if tag == "raises":
            return [], z3.BoolVal(False)
        if v is None:
            return [], z3.BoolVal(True)
        ns, nd, d2, p2 = v
        if len(ns) != 1 or len(nd) != 1:
            return [], z3.BoolVal(False)
        ze, zd2, zd = e.t(ns[0]), e.t(d2), e.t(d)
        claims = [e.t(nd[0]) == e.t(p), ze >= 1, zd2 >= 1, e.t(_sp().Mod(d, d2)) == 0]
        claims += [ze * zd == e.t(x) * zd2, z3.Or(zd2 == 1, ze == 1), e.t(p2) == e.t(p) * ze]
        return [], z3.And(claims)

    def confirm(asg: Dict[str, int], path: Any) -> Optional[str]:
        """The step on the model's integers, checked on integers."""
        v = _path_ints(asg, path, d=1, p=1, x=1)
        d_, p_, x_ = v["d"], v["p"], v["x"]
        if min(d_, p_, x_) <= 0:
            return None
        tag, out = cs.raises(lambda: _ops().complement_rest_step(((), (), d_, p_), x_))()
        at = f"complement_rest_step on d = {d_}, p = {p_} and the mode {x_}"
        if tag == "raises":
            return f"{at} raised"
        if out is None:
            return f"{at} failed although one divides the other" if d_ % x_ == 0 or x_ % d_ == 0 else None
        (e_,), (s_,), d2, p2 = out
        if (
            s_ != p_
            or e_ < 1
            or d2 < 1
            or d_ % d2
            or e_ * d_ != x_ * d2
            or (d2 != 1 and e_ != 1)
            or p2 != p_ * e_
        ):
            return f"{at} gave the mode {e_}:{s_}, {d2} left, next stride {p2}"
        return None

    return cs.Instance(
        "tuple cotarget: complement_rest_step on (R, D opaque, d, p) and a mode x",
        fn,
        build,
        confirm,
        strict=True,
    )


def _rest_tuple_failed_instance() -> cs.Instance:
    """complement_rest_step once the fold failed: it stays failed and reads no mode."""
    ops = _ops()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        return [], _z3().BoolVal(cx.path.value is None)

    return cs.Instance(
        "tuple cotarget: complement_rest_step after a failure (mode opaque)",
        lambda: ops.complement_rest_step(None, Head("x")),
        build,
        _no_confirm,
        strict=True,
    )


def _rest_tuple_close_instance() -> cs.Instance:
    """The end of the tuple fold: from the invariant cur P == M D (P the product of the
    remaining extents, M the cotarget's size, D >= 1 the part of cur left) and (D == 1 or
    P == 1), the covered extent K = cur P satisfies M <= K < M + cur -- as the one-mode
    finish."""
    cur, P, M, D = _pos("cur"), _pos("P"), _pos("M"), _pos("D")

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        zc, zP, zM, zD = (e.t(v) for v in (cur, P, M, D))
        hyp = [zc >= 1, zP >= 1, zM >= 1, zD >= 1, zc * zP == zM * zD, z3.Or(zD == 1, zP == 1)]
        return hyp, z3.And(zc * zP >= zM, zc * zP < zM + zc)

    return cs.Instance(
        "tuple cotarget: the fold's end gives M <= K < M + cur",
        lambda: (cur, P, M, D),
        build,
        _no_confirm,
        strict=True,
    )


def rest_tuple_instances() -> List[cs.Instance]:
    """complement_rest with a tuple (Shape) cotarget of any rank: its fold's step, its
    failed state, and the end."""
    return [_rest_tuple_step_instance(), _rest_tuple_failed_instance(), _rest_tuple_close_instance()]


def complement_instances(sort_ranks: Sequence[int]) -> List[cs.Instance]:
    return [
        _kept_mode_instance("complement"),
        *sort_scan_instances(),
        *sort_instances(sort_ranks),
        _complement_step_instance(),
        _complement_rest_instance(),
        *rest_tuple_instances(),
    ]


# ----------------------------------------------------------------------------- left_inverse
def _left_inverse_start_instance() -> cs.Instance:
    """left_inverse_start on the first sorted mode (d, s, p): the inverse so far is d:0 --
    size d, the value 0 -- and the previous mode is (d, s, p)."""
    ops = _ops()
    d, s, p = _pos("d"), _pos("s"), _pos("p")

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd, prev = cx.path.value
        ok = len(rs) == 1 and len(rd) == 1 and prev == (d, s, p)
        if not ok:
            return [], z3.BoolVal(False)
        return [], z3.And(e.t(rs[0]) == e.t(d), e.t(rd[0]) == 0)

    return cs.Instance(
        "base: left_inverse_start", lambda: ops.left_inverse_start((d, s, p)), build, _no_confirm, strict=True
    )


def _left_inverse_step_instance() -> cs.Instance:
    """left_inverse_step on (R, D opaque, previous mode (d0, s0, p0)) and the mode (d1, s1,
    p1), extents != 1 and strides > 0 (kept modes).  The invariant: R's modes so far have
    size d0, and every value X of L's folded lower modes is < d0 with R's modes at X equal
    to its index V.  On a path that returns: d0 | d1, s0 d0 <= d1, one mode q:p is appended
    with d0*q == d1 and p == p0, and for every X < d0 and digit c0 < s0 the digits (X, c0)
    of Y = X + c0 d0 in the radix (d0, q) are in range (c0 < q) -- so the inverse at Y is
    V + c0 p0 -- and Y < d1: the invariant for the next mode.  On a path that raises: the chain
    d0 | d1 and s0 d0 <= d1 fails, and where it raises for injectivity two coordinates
    collide: (d1/d0 in the previous mode) and (1 in this one), d1/d0 < s0, s1 >= 2."""
    sp = _sp()
    ops = _ops()
    d0, s0, p0 = _pos("d0"), _pos("s0"), _pos("p0")
    d1, s1, p1 = _pos("d1"), _pos("s1"), _pos("p1")

    def fn() -> Any:
        def run() -> Any:
            rs, rd, prev = ops.left_inverse_step((Head("R"), Head("D"), (d0, s0, p0)), (d1, s1, p1))
            if prev != (d1, s1, p1):
                raise HeadRead("the step's next previous mode is not the mode it was given")
            return list(appended(rs, "R")), list(appended(rd, "D"))

        return cs.raises(run)()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, v = cx.path.value
        zd0, zd1, zs0, zs1 = e.t(d0), e.t(d1), e.t(s0), e.t(s1)
        chain = z3.And(e.t(sp.Mod(d1, d0)) == 0, zs0 * zd0 <= zd1)
        if tag == "raises":
            claims = [z3.Not(chain)]
            if "injectivity" in str(v):
                q = e.t(sp.floor(d1 / d0))
                claims.append(z3.And(q * zd0 == zd1, q >= 0, q < zs0, zs1 >= 2))
            return [], z3.And(claims)
        ns, nd = v
        if len(ns) != 1 or len(nd) != 1:
            return [], z3.BoolVal(False)
        q, p = e.t(ns[0]), e.t(nd[0])
        X, c0 = cx.dg.new(e, d0, "x"), cx.dg.new(e, s0, "c")
        Y = X + c0 * zd0
        e.monotone(c0, s0, zd0)
        # Y's digits in the radix (d0, q) of the inverse so far and its new mode are (X, c0):
        # in range and adding up to Y (a mixed-radix representation is unique), so the new
        # inverse at Y is (its value at X, i.e. V) + c0 p, which is V + c0 p0
        claims = [chain, zd0 * q == zd1, p == e.t(p0), c0 < q, Y < zd1]
        return [], z3.And(claims)

    def confirm(asg: Dict[str, int], _p: Any) -> Optional[str]:
        """The step run on the model's integers: the refutation stands when its result there
        breaks the claim (a return without the chain, a wrong appended mode, a digit out of
        range, or a raise where the chain holds)."""
        v = _ints(asg, d0=1, s0=2, p0=1, d1=1, s1=2, p1=1)
        a0, b0, q0, a1, b1, q1 = v["d0"], v["s0"], v["p0"], v["d1"], v["s1"], v["p1"]
        if min(a0, q0, a1, q1) <= 0 or b0 <= 1 or b1 <= 1:
            return None
        chain = a1 % a0 == 0 and b0 * a0 <= a1
        tag, out = cs.raises(
            lambda: _ops().left_inverse_step((Head("R"), Head("D"), (a0, b0, q0)), (a1, b1, q1))
        )()
        at = f"left_inverse_step on the previous mode {b0}:{a0} and the mode {b1}:{a1}"
        if tag == "raises":
            return f"{at} raised although the chain holds" if chain else None
        if not chain:
            return f"{at} returned although the chain d0 | d1, s0 d0 <= d1 fails"
        ns, nd = appended(out[0], "R"), appended(out[1], "D")
        if list(ns) != [a1 // a0] or list(nd) != [q0]:
            return f"{at} appended {list(zip(ns, nd))}"
        return None

    return cs.Instance(
        "step: (R, D opaque, (d0, s0, p0)), mode (d1, s1, p1), s0, s1 != 1",
        fn,
        build,
        confirm,
        assumptions=(sp.Ne(s0, 1), sp.Ne(s1, 1)),
        strict=True,
    )


def _left_inverse_close_instance() -> cs.Instance:
    """left_inverse_close on (R, D opaque, last mode (d, s, p)): one mode s:p appended;
    for every X < d (where the inverse so far is V) and digit c < s, Y = X + c d has the
    digits (X, c) in the closed inverse's radix (d, s), below its size d*s, so the closed
    inverse there is V + c p."""
    ops = _ops()
    d, s, p = _pos("d"), _pos("s"), _pos("p")

    def fn() -> Any:
        rs, rd = ops.left_inverse_close((Head("R"), Head("D"), (d, s, p)))
        return list(appended(rs, "R")), list(appended(rd, "D"))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        ns, nd = cx.path.value
        if len(ns) != 1 or len(nd) != 1:
            return [], z3.BoolVal(False)
        zd = e.t(d)
        X, c = cx.dg.new(e, d, "x"), cx.dg.new(e, s, "c")
        Y = X + c * zd
        e.monotone(c, s, zd)
        # Y's digits in (d, s) are (X, c): in range, adding up to Y, below the size d*s; the
        # closed inverse there is V + c * (its last stride), which must be V + c p
        claims = [e.t(ns[0]) == e.t(s), e.t(nd[0]) == e.t(p), Y < zd * e.t(ns[0])]
        return [], z3.And(claims)

    return cs.Instance("finish: left_inverse_close", fn, build, _no_confirm, strict=True)


def left_inverse_instances(sort_ranks: Sequence[int]) -> List[cs.Instance]:
    return [
        _kept_mode_instance("left_inverse"),
        *sort_scan_instances(),
        *sort_instances(sort_ranks),
        _left_inverse_start_instance(),
        _left_inverse_step_instance(),
        _left_inverse_close_instance(),
    ]


# ----------------------------------------------------------------------------- right_inverse
def _right_inverse_pick_instance(n: int, used: Tuple[int, ...]) -> cs.Instance:
    """right_inverse_pick over n strides (symbolic) with the modes ``used`` taken and the
    chain at ``cur``: it returns an unused index whose stride is cur, the first such; None
    only when every unused stride differs from cur."""
    ops = _ops()
    cd = cs.strides("d", n)
    cur = _pos("cur")
    state = ((), (), cur, frozenset(used))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        i = cx.path.value
        free = [k for k in range(n) if k not in used]
        if i is None:
            return [], z3.And([e.t(cd[k]) != e.t(cur) for k in free] or [z3.BoolVal(True)])
        claims = [z3.BoolVal(i in free), e.t(cd[i]) == e.t(cur)]
        claims += [e.t(cd[k]) != e.t(cur) for k in free if k < i]
        return [], z3.And(claims)

    return cs.Instance(
        f"pick: {n} modes, used {sorted(used)}",
        lambda: ops.right_inverse_pick(cd, state),
        build,
        _no_confirm,
        strict=True,
    )


def _pick_scan_instance(kind: str) -> cs.Instance:
    """right_inverse_pick_step on the mode i = 5 (stride d) and the state (R, D opaque, cur,
    used). ``found``: a mode found stays, nothing else read (d, cur, used opaque); ``used``:
    i used (used = {5}) gives None; ``free``: i unused (used = {2}) gives i exactly when
    d == cur, None exactly when d != cur."""
    ops = _ops()
    d, cur = _int("d"), _pos("cur")
    R, D = Head("R"), Head("D")
    if kind == "found":
        args: Tuple[Any, ...] = (2, 5, Head("d"), (R, D, Head("cur"), Head("U")))
    else:
        args = (None, 5, d, (R, D, cur, frozenset({5} if kind == "used" else {2})))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        r = cx.path.value
        if kind == "found":
            return [], z3.BoolVal(r == 2)
        if kind == "used":
            return [], z3.BoolVal(r is None)
        same = cx.enc.t(d) == cx.enc.t(cur)
        if r is None:
            return [], z3.Not(same)
        return [], z3.And(z3.BoolVal(r == 5), same)

    def confirm(asg: Dict[str, int], path: Any) -> Optional[str]:
        """The step on the model's integers: refuted when its answer is not None for a used
        mode, not (d == cur) for an unused one."""
        if kind == "found":
            return None
        v = _path_ints(asg, path, d=1, cur=1)
        if v["cur"] <= 0:
            return None
        used = frozenset({5} if kind == "used" else {2})
        r = _ops().right_inverse_pick_step(None, 5, v["d"], ((), (), v["cur"], used))
        want = 5 if kind == "free" and v["d"] == v["cur"] else None
        if r != want:
            return f"right_inverse_pick_step on d = {v['d']}, cur = {v['cur']}, used {sorted(used)} gave {r}"
        return None

    return cs.Instance(
        f"pick scan: {kind}", lambda: ops.right_inverse_pick_step(*args), build, confirm, strict=True
    )


def pick_scan_instances() -> List[cs.Instance]:
    """The pick lemma at every number of modes: the search step of right_inverse_pick,
    after a find, on a used mode and on an unused one."""
    return [_pick_scan_instance(k) for k in ("found", "used", "free")]


def _right_inverse_step_instance() -> cs.Instance:
    """right_inverse_step on (R, D, used opaque, cur) and the picked mode (s, d, p, i), d ==
    cur (the pick's guarantee): it appends s:p to the inverse, i to the used modes, and the
    chain goes on at s*cur -- so for g < cur and h < s, the inverse at g + cur h is R(g) +
    h p: the coordinate of R(g) with digit h in the (unused) mode i, where L adds h d == h
    cur, keeping L(R(x)) == x."""
    sp = _sp()
    ops = _ops()
    cur, s, d, p = _pos("cur"), _pos("s"), _int("d"), _pos("p")

    def fn() -> Any:
        rs, rd, cur2, used = ops.right_inverse_step((Head("R"), Head("D"), cur, Head("U")), (s, d, p, 7))
        return list(appended(rs, "R")), list(appended(rd, "D")), cur2, list(appended(used, "U"))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        ns, nd, cur2, used = cx.path.value
        if len(ns) != 1 or len(nd) != 1 or used != [7]:
            return [], z3.BoolVal(False)
        g, h = cx.dg.new(e, cur, "g"), cx.dg.new(e, s, "h")
        # L at the new coordinate: L(R(g)) == g (the invariant) plus h times mode i's stride
        x = g + h * e.t(cur)
        claims = [e.t(ns[0]) == e.t(s), e.t(nd[0]) == e.t(p), e.t(cur2) == e.t(s) * e.t(cur)]
        claims.append(g + h * e.t(d) == x)
        return [], z3.And(claims)

    return cs.Instance(
        "step: (R, D, used opaque, cur), picked mode (s, d == cur, p, i)",
        fn,
        build,
        _no_confirm,
        assumptions=(sp.Eq(d, cur),),
        strict=True,
    )


def right_inverse_instances(pick_ranks: Sequence[int]) -> List[cs.Instance]:
    """The pick lemma (its search step: every number of modes; and, at each number of modes
    in ``pick_ranks``, the whole search with every proper subset of them used) and the step."""
    from itertools import combinations

    out = pick_scan_instances()
    for n in pick_ranks:
        for k in range(n):
            out += [_right_inverse_pick_instance(n, used) for used in combinations(range(n), k)]
    out.append(_right_inverse_step_instance())
    return out


# ----------------------------------------------------------------------------- the theorems
#: the whole sort_modes symbolically executed at these ranks as a supplement (the sort lemma
#: at every rank is its scan step's, both jobs): the main job, and `layoutproof prove --all`
SORT_MAIN: Tuple[int, ...] = ()
SORT_ALL = (1, 2, 3, 4)
#: the whole right_inverse_pick at these numbers of modes as a supplement (the pick lemma at
#: every number of modes is its search step's, both jobs): the main job, and with `--all`
PICK_MAIN: Tuple[int, ...] = ()
PICK_ALL = (1, 2, 3, 4)

_EXT = "extents positive integers"
_ANY = "strides arbitrary integers"
_POS = "strides positive integers"
_BY_INSPECTION = (
    "the fold loop `for m in modes: state = step(state, m)` (two lines) and the concatenation of "
)
_FOLD = (
    "Machine-checked on every path of the real symops step functions (opaque finished modes: a step "
    "that read them would make the run refused and the theorem unknown)"
)


def _sort_ranks() -> Sequence[int]:
    return SORT_ALL if cs.full_scope() else SORT_MAIN


def _run(claim: str, make: Callable[[], List[cs.Instance]], direct: Callable[[], List[cs.Instance]]) -> Any:
    """The induction's instances (both jobs) and, with ``--all``, the direct rank-bounded
    runs as a supplement."""

    def check() -> List[Any]:
        out = cs.prove(f"{claim} (induction)", make())
        if cs.full_scope():
            out += cs.prove(claim, direct())
        return out

    return check


def _L(r: int, kind: str = "int") -> Layout:
    return cs.sym_layout("L", r, nonneg=kind == "nonneg", positive=kind == "pos")


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
        + _FOLD
        + ". By inspection: the fold loop, the concatenation of H with the suffix, coalesce_finish"
    )
    sc = (
        "every rank (steps on the real {} code, both jobs); direct symbolic execution at ranks 1-4 as a "
        "supplement with `--all`"
    )
    anyL = f"{_EXT}; {_ANY}"

    def run(
        claim: str, insts: Callable[[], List[cs.Instance]], direct: Callable[[Layout], cs.Instance]
    ) -> Any:
        return _run(claim, insts, lambda: [direct(_L(r)) for r in (1, 2, 3, 4)])

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


def _build() -> List[Theorem]:
    sort_scope = (
        "the sort lemma at every rank (symops.sort_modes returns a permutation of its modes, strides "
        "non-decreasing, equal strides by index): sort_modes is a fold of sort_insert over the modes "
        "(invariant: the list so far is strictly increasing in the order (stride, index); the indices "
        "are the modes' positions, distinct), and "
        "sort_insert a fold of sort_scan_step over that list (invariant: while no position is found, "
        "every mode scanned precedes the inserted m); the real sort_scan_step explored on every path: "
        "a found position stays and neither mode is read (both opaque), else it returns j exactly when "
        "m precedes the mode o at j and None exactly when o precedes m (both index orders; an undecided "
        "comparison raises)"
    )
    sort_insp = (
        "; for the sort, its two fold loops and sort_insert's splice `out[:pos] + [m] + out[pos:]` "
        "(m between a mode that precedes it and one it precedes: the list stays sorted, one mode added)"
    )
    sort_sup = f"sort_modes itself at ranks {SORT_ALL[0]}-{SORT_ALL[-1]}"
    co_stmt = (
        "Induction over coalesce_flat's fold of symops.coalesce_step. Invariant: the state's modes (finished "
        "+ last) have the function and size of L's modes folded so far, the last extent != 1. Base: rank 1 "
        "(the whole fold and coalesce_finish, every path). Steps: coalesce_step from the empty state and "
        "from (H, (t, e)), t != 1, H opaque, on the mode (s, d): the new modes after H have the function "
        "and size of (t, s):(e, d) (of s:d from the empty state), a last extent != 1, and strides a "
        "subsequence of the inputs'. " + _FOLD + ". By inspection: " + _BY_INSPECTION + "H with the "
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
            f"{_EXT}; {_ANY}",
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
            f"{_EXT}; {_ANY}",
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
            f"{_EXT}; {_ANY}",
        ),
        _theorem(
            "sym.coalesce-size",
            "coalesce(L) has L's size, for all extents and strides, at every rank",
            "size(coalesce(L)) == size(L). At every rank by the induction of sym.coalesce-every-rank "
            "(re-run here: its steps keep the size of the modes folded so far); the whole coalesce by "
            "direct symbolic execution at ranks 1-2 (1-4 with `--all`) as a supplement",
            _coalesce_check(su.coalesce_size_instance, "size(coalesce(L)) == size(L)"),
            _CO_SCOPE,
            f"{_EXT}; {_ANY}",
        ),
        _theorem(
            "sym.coalesce-depth",
            "coalesce(L) is flat, for all extents and strides, at every rank",
            "depth(coalesce(L)) <= 1 for every L of any rank. Induction over coalesce_flat's fold of "
            "symops.coalesce_step. Invariant: every mode of the state (finished + last) is a pair of leaves "
            "(an extent and a stride, no tuple). Base: rank 1 (the whole coalesce, every path). Steps: "
            "coalesce_step from the empty state and from (H, (t, e)), H opaque, on the leaf mode (s, d): "
            "every new mode after H is a pair of leaves. "
            + _FOLD
            + ". By inspection: "
            + _BY_INSPECTION
            + "H with the step's suffix, raw_flatten (L's modes are leaves) and coalesce's finish "
            "(_from_modes of coalesce_finish: 1:0, one leaf mode, or a tuple of leaf modes: depth <= 1). "
            "The whole coalesce by direct symbolic execution at ranks 2 (2-4 with `--all`) as a supplement",
            _coalesce_depth_check,
            "every rank (base + steps on the real coalesce_step, both jobs); direct execution at rank 2 in "
            "`layoutproof prove`, ranks 2-4 with `--all`",
            f"{_EXT}; {_ANY}",
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
            "mode of extent != 1 and stride != 0. " + _FOLD + ". By inspection: " + _BY_INSPECTION + "H "
            "with the suffix, and the finish (coalesce_finish: 1:0 when no mode is kept)",
            _run(
                "filter(L)(kept(c)) == L(c)",
                filter_instances,
                lambda: [su.filter_instance(_L(r)) for r in (1, 2, 3)],
            ),
            "every rank (steps on the real filter_step, both jobs); direct symbolic execution at ranks 1-3 "
            "as a supplement with `--all`",
            f"{_EXT}; {_ANY}",
        ),
    ]
    cstep = (
        "Induction over complement's fold of symops.complement_step over L's kept modes sorted by stride. "
        "Kept modes: symops.kept_mode on one mode s:d (every path): dropped exactly when s == 1 or d == 0, "
        "kept only with d > 0, raises only for d < 0. Invariant of the state (C's modes so far, the covered "
        "extent cur): the kept L modes folded so far and C's modes, sorted by stride, form a chain from 1 "
        "(each stride the product of the extents below) ending at cur; C's extents >= 2, C's strides "
        "increase and are < cur. Start: no mode, cur = 1. Step (every path of complement_step on (R, D "
        "opaque, cur) and a kept mode (d, s)): it returns exactly when cur | d; then the appended modes "
        "(at most one, extent d/cur >= 2, stride cur) followed by (s, d) form a chain from cur ending at "
        "the new covered extent s*d > cur -- so cur is always s*d of the last folded mode, the step's "
        "decision is the stride chain s_{k-1} d_{k-1} | d_k, and cur is the largest s_k d_k. Finish: "
        "complement_rest(cur, M) (every path) is one mode r:cur with M <= r*cur < M + cur; for a tuple "
        "(Shape) cotarget M of any rank, complement_rest is a fold of complement_rest_step over M's modes "
        "(start: no mode, the part of cur left D = cur, the next stride p = cur), falling back to that "
        "one mode when the fold fails; invariant: cur * P == size(M's modes so far) * D with P the "
        "product of the modes emitted, D >= 1, D == 1 or P == 1, the emitted modes a chain from cur "
        "ending at p = cur * P; step (every path of complement_rest_step on (R, D opaque, d, p) and a "
        "mode x): it never raises, a failure stays failed without reading the mode, else it emits e:p "
        "with e >= 1, leaves d' | d, d' >= 1, e d == x d', d' == 1 or e == 1, next stride p e; end: "
        "M <= cur * P < M + cur (M the cotarget's size) -- the one-mode finish's conclusion, so the "
        "rest of the argument is the same; then coalesce, which keeps the function and size "
        "(sym.coalesce-every-rank) and keeps strides a subsequence (its step). "
        + _FOLD
        + "; "
        + sort_scope
        + ". By inspection: "
        + _BY_INSPECTION
        + "the fold's C with complement_rest's modes "
        "(complement_finish, one line), complement_rest's fold loop over the tuple (two lines) and its "
        "start state" + sort_insp
    )
    sc_c = (
        "every rank of L, M an integer or a tuple of any rank (kept-mode lemma, sort scan step, "
        "complement step, finish and the tuple cotarget's fold step on the real symops code, both jobs); "
        "direct symbolic execution at ranks 1-2 (integer M) and " + sort_sup + " as supplements with "
        "`--all`"
    )
    Mv = cs.extents("M", 1)[0]
    out += [
        _theorem(
            "sym.complement-post",
            "complement meets its post-condition, for all extents, strides and M, at every rank",
            "Whenever complement(L, M) returns C: the modes of (L, C) other than extent-1 ones, sorted by "
            "stride, have strides 1, s_0, s_0 s_1, ... (so (L, C) is a bijection onto [0, K)), K >= M, "
            "K < M + max(s_k d_k) (M rounded up to L's cover), and C's strides increase. " + cstep,
            _run(
                "(L, complement(L, M)) is a bijection onto [0, K), K = M rounded up",
                lambda: complement_instances(_sort_ranks()),
                lambda: [su.complement_instance(_L(r, "pos"), Mv) for r in (1, 2)],
            ),
            sc_c,
            f"L: {_EXT}, {_POS}; M a positive integer, or a tuple (Shape) of positive integers of any rank "
            "(its size)",
        ),
        _theorem(
            "sym.complement-admissible-iff-chain",
            "complement is admissible exactly when the stride chain holds, at every rank",
            "On every path: complement(L, M) returns iff L's non-trivial modes, sorted by stride, satisfy "
            "s_k d_k | d_{k+1} (the existence condition of a complement); it raises InadmissibleError "
            "exactly where the chain fails. The fold's step returns exactly when cur | d with cur = "
            "s_{k-1} d_{k-1} (1 for the first mode), and nothing else in the fold raises (the finish "
            "returns on every path). " + cstep,
            _run(
                "admissible <=> stride chain",
                lambda: complement_instances(_sort_ranks()),
                lambda: [su.complement_chain_instance(_L(r, "pos"), Mv) for r in (1, 2)],
            ),
            sc_c,
            f"L: {_EXT}, {_POS}; M a positive integer, or a tuple (Shape) of positive integers of any rank "
            "(its size)",
        ),
        _theorem(
            "sym.complement-size",
            "size(L) size(complement(L, M)) >= M, for all extents, strides and M, at every rank",
            "Whenever complement(L, M) returns C: size(L) * size(C) >= M. The chain of the kept L modes and "
            "C's fold modes has product cur (the invariant), the finish multiplies it by r with r*cur >= M, "
            "L's dropped modes have extent >= 1 and coalesce keeps the size. " + cstep,
            _run(
                "size(L) size(C) >= M",
                lambda: complement_instances(_sort_ranks()),
                lambda: [su.complement_size_instance(_L(r, "pos"), Mv) for r in (1, 2)],
            ),
            sc_c,
            f"L: {_EXT}, {_POS}; M a positive integer, or a tuple (Shape) of positive integers of any rank "
            "(its size)",
        ),
    ]
    lstep = (
        "Induction over left_inverse's fold of symops.left_inverse_step over coalesce(L)'s kept modes "
        "(d_k, s_k, p_k: stride, extent, prefix product in coalesce(L)) sorted by stride; coalesce(L) has "
        "L's function (sym.coalesce-every-rank). Kept modes: symops.kept_mode (every path, as for "
        "complement). Invariant of the state (R's modes so far, the previous mode (d0, s0, p0)): R's modes "
        "so far have size d0, and every value X of the folded modes below (digits in range) is < d0 with "
        "R's modes at X equal to its index V = sum c_j p_j. Start: left_inverse_start on the first mode "
        "gives d0:0 (every path). Step (every path of left_inverse_step on (R, D opaque, (d0, s0, p0)) and "
        "(d1, s1, p1), s0, s1 != 1): it returns exactly when d0 | d1 and s0 d0 <= d1; then it appends one "
        "mode q:p with d0 q == d1, p == p0, and for X < d0 and c0 < s0 the digits (X, c0) of Y = X + c0 "
        "d0 are in range (c0 < q) with Y < d1 -- the invariant for the next mode; where it raises for "
        "injectivity, (d1/d0 in the previous mode) and (1 in this one) are two coordinates with the same "
        "value (d1/d0 < s0, s1 >= 2). Close: left_inverse_close appends s:p, every value Y = X + c d is "
        "below the size d*s, at digits (X, c). "
        + _FOLD
        + "; "
        + sort_scope
        + ". By inspection: "
        + _BY_INSPECTION
        + "R's modes with the step's; left_inverse's prefix products of coalesce(L) (a four-line loop), "
        "its 1:0 for no kept mode, and the final coalesce (function-preserving: sym.coalesce-every-rank)"
        + sort_insp
    )
    sc_l = (
        "every rank (kept-mode lemma, sort scan step, left_inverse start, step and close on the real "
        "symops code, both jobs); direct symbolic execution at ranks 1-3 and " + sort_sup + " as "
        "supplements with `--all`"
    )

    def lrun(claim: str, direct: Callable[[Layout], cs.Instance], ranks: Sequence[int] = (1, 2, 3)) -> Any:
        return _run(
            claim,
            lambda: left_inverse_instances(_sort_ranks()),
            lambda: [direct(_L(r, "pos")) for r in ranks],
        )

    out += [
        _theorem(
            "sym.left-inverse-post",
            "left_inverse meets its post-condition, for all extents and strides, at every rank",
            "Whenever left_inverse(L) returns R: R(L(i)) == i for every i (strides positive: every mode of "
            "extent > 1 is kept). From the invariant: R(L(i)) is the index of coalesce(L)'s coordinate "
            "with i's digits, i.e. i. " + lstep,
            lrun("R(L(i)) == i", su.left_inverse_instance),
            sc_l,
            f"{_EXT}; {_POS}",
        ),
        _theorem(
            "sym.left-inverse-admissible-iff-chain",
            "left_inverse is admissible exactly when the sorted modes form its chain, at every rank",
            "On every path: left_inverse(L) returns iff the modes of coalesce(L) other than extent 1, "
            "sorted by stride, satisfy d_k | d_{k+1} and s_k d_k <= d_{k+1}; every path that raises "
            "violates that chain (the step's decision, exact on every path; start and close never raise). "
            + lstep,
            lrun("left_inverse admissible <=> chain", su.left_inverse_chain_instance),
            sc_l,
            f"{_EXT}; {_POS}",
        ),
        _theorem(
            "sym.left-inverse-cover",
            "left_inverse(L)'s domain covers L's image, for all extents and strides, at every rank",
            "Whenever left_inverse(L) returns R: size(R) >= cosize(L) = 1 + sum((s_k - 1) d_k). R's size "
            "is d*s of the last sorted mode (the invariant's size d0, times the close's s) and every value "
            "of L is below it (the close), so cosize(L) = max L + 1 <= size(R). " + lstep,
            lrun("size(left_inverse(L)) >= cosize(L)", su.left_inverse_cover_instance),
            sc_l,
            f"{_EXT}; {_POS}",
        ),
        _theorem(
            "sym.left-inverse-refuses-only-non-injective",
            "left_inverse refuses for injectivity only on layouts that are not injective, at every rank",
            "On every path where left_inverse raises its injectivity condition, two distinct coordinates "
            "of coalesce(L) (which has L's function: sym.coalesce-every-rank) have the same value: "
            "(d_b/d_a in mode a) and (1 in mode b) for two modes a != b with d_a | d_b and s_a d_a > d_b "
            "(the step's claim on its raising paths). " + lstep,
            lrun("injectivity refusal => L not injective", su.left_inverse_overlap_instance, (2, 3)),
            sc_l.replace("ranks 1-3", "ranks 2-3"),
            f"{_EXT}; {_POS}",
        ),
    ]
    rstep = (
        "Induction over right_inverse's fold: `while (i := right_inverse_pick(cd, state)) is not None: "
        "state = right_inverse_step(state, (cs[i], cd[i], pp[i], i))` over coalesce(L)'s modes (cs, cd; pp "
        "their prefix products); coalesce(L) has L's function (sym.coalesce-every-rank) and no mode of "
        "extent 1 (its invariant). Invariant of the state (R's modes, the chain's next stride cur, the "
        "used modes): cur is the product of R's extents, and for every x < cur, R(x) is the index of the "
        "coordinate of coalesce(L) with x's digits in the used modes (in pick order) and 0 elsewhere, "
        "where L is x. Start: no mode, cur = 1, nothing used (R(0) = 0 = L^-1(0)). Pick lemma (every "
        "number of modes): it returns the first unused mode whose stride is proved == cur, None only "
        "when every unused stride is proved != cur. right_inverse_pick is a fold of "
        "right_inverse_pick_step over the modes (invariant: while nothing is found, every unused mode "
        "scanned has a stride != cur); the real step explored on every path: a found mode stays and "
        "nothing else is read (stride, cur, used opaque), a used mode gives None without reading its "
        "stride or cur, an unused one gives its index exactly when d == cur and None exactly when d != "
        "cur (an undecided equality raises). Step (every path of right_inverse_step on (R, D, used opaque, "
        "cur) and a picked mode (s, d == cur, p, i)): it appends s:p and i, the chain goes on at s*cur, "
        "and at x + cur h (h < s) R adds h p -- digit h in the unused mode i -- where L adds h d == h "
        "cur. " + _FOLD + ". By inspection: the loop above (two lines) and the concatenation of R's "
        "modes with the step's, the prefix products (a four-line loop), 1:0 for no step, the final "
        "coalesce (function-preserving), and the pick's fold loop (two lines)"
    )
    sc_r = (
        "every rank (pick search step and right_inverse step on the real symops code, both jobs); "
        "direct symbolic execution at ranks {} and right_inverse_pick itself at "
        f"{PICK_ALL[0]}-{PICK_ALL[-1]} modes (every proper subset of them used) as supplements with "
        "`--all`"
    )

    def rrun(claim: str, direct: Callable[[Layout], cs.Instance], ranks: Sequence[int]) -> Any:
        return _run(
            claim,
            lambda: right_inverse_instances(PICK_ALL if cs.full_scope() else PICK_MAIN),
            lambda: [direct(_L(r)) for r in ranks],
        )

    out += [
        _theorem(
            "sym.right-inverse-post",
            "right_inverse meets its post-condition, for all extents and strides, at every rank",
            "L(R(i)) == i for every i < size(R), R = right_inverse(L) (the invariant at the end). " + rstep,
            rrun("L(right_inverse(L)(i)) == i", su.right_inverse_instance, (1, 2, 3, 4)),
            sc_r.format("1-4"),
            f"{_EXT}; {_ANY}",
        ),
        _theorem(
            "sym.right-inverse-two-sided",
            "a right_inverse of full size is a left inverse too, at every rank",
            "Whenever size(right_inverse(L)) == size(L) (L a bijection onto [0, size(L))): R(L(i)) == i for "
            "every i < size(L), R = right_inverse(L). From the invariant: size(R) is the product of the used "
            "modes' extents, size(L) that of all of coalesce(L)'s modes, none of extent 1, so every mode is "
            "used; x -> R(x) is then onto coalesce(L)'s coordinates with L(R(x)) == x, hence a bijection, "
            "and R(L(i)) == i. " + rstep,
            rrun("size(R) == size(L) => R(L(i)) == i", su.right_inverse_two_sided_instance, (1, 2, 3)),
            sc_r.format("1-3"),
            f"{_EXT}; {_ANY}",
            ("size(right_inverse(L)) == size(L)",),
        ),
        _theorem(
            "sym.right-inverse-image",
            "right_inverse(L) maps into L's domain, for all extents and strides, at every rank",
            "0 <= R(i) < size(L) for every i < size(R), R = right_inverse(L). From the invariant: R(x) is "
            "the index of a coordinate of coalesce(L), whose size is size(L) (sym.coalesce-every-rank). "
            + rstep,
            rrun("0 <= right_inverse(L)(i) < size(L)", su.right_inverse_image_instance, (1, 2, 3, 4)),
            sc_r.format("1-4"),
            f"{_EXT}; {_ANY}",
        ),
        _theorem(
            "sym.right-inverse-size",
            "size(right_inverse(L)) divides size(L), for all extents and strides, at every rank",
            "size(L) mod size(right_inverse(L)) == 0. From the invariant: size(R) is cur, the product of the "
            "extents of the modes used (each step multiplies cur by the picked extent; the pick lemma "
            "takes each mode at most once), which divides the product of all of coalesce(L)'s extents, "
            "size(L). " + rstep,
            rrun("size(right_inverse(L)) | size(L)", su.right_inverse_size_instance, (1, 2, 3, 4)),
            sc_r.format("1-4"),
            f"{_EXT}; {_ANY}",
        ),
        *_structure_theorems(),
        _theorem(
            "sym.filter-size",
            "size(filter(L)) <= size(L), with equality without stride-0 modes, at every rank",
            "size(filter(L)) <= size(L); == when every mode of L has extent 1 or a non-zero stride. Each "
            "filter_step's new modes have the size of the kept modes (the step's claim), so size(filter(L)) "
            "is the product of the kept extents; a dropped mode has extent 1 or stride 0. Induction as in "
            "sym.filter-post: steps from the empty state and from (H, (t, e)) on the real filter_step. "
            + _FOLD,
            _run(
                "size(filter(L)) <= size(L)",
                filter_instances,
                lambda: [su.filter_size_instance(_L(r)) for r in (1, 2, 3, 4)],
            ),
            "every rank (steps on the real filter_step, both jobs); direct symbolic execution at ranks 1-4 "
            "as a supplement with `--all`",
            f"{_EXT}; {_ANY}",
        ),
    ]
    return out


THEOREMS: List[Theorem] = _build()
