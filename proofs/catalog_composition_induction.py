"""Composition for every rank of B: induction over B's leaves (issue 15).

``symops.composition(A, B)`` coalesces A (keeping its last mode: Â), runs the leaf walk
(``compose_leaf``) once per flat leaf ``n:r`` of B -- each call receives Â and that leaf
only -- then checks that the leaves' digit footprints in Â do not overflow a mode (the
overlap check: for every mode of Â used by two or more leaves, the sum of their largest
digits there is below the mode's extent) and concatenates the leaves' results in B's
profile.

The post-condition ``R(c) == Â(B(c))`` for a B of any rank then follows from one statement
about a single leaf, proved by symbolic execution of the real leaf walk at every A rank in
scope, every path:

* **leaf lemma** (base): for every coordinate ``c < n`` (quantified through the leaf
  result's own digits), the digits ``δ`` of ``c*r`` in Â are in range and add up to
  ``c*r``, the leaf result at ``c`` is ``Σ δ_i Ad_i``, the leaf result has size ``n``, and
  the footprint ``occ`` the walk returns bounds the digits: ``δ_i <= occ[i] < As_i`` for
  every mode ``i`` in ``occ`` and ``δ_i == 0`` for every other mode but the last;
* **step**: for any accumulated state of k leaves -- digits ``D`` (``0 <= D_i <= U_i``,
  ``U_i`` the sum of the footprints so far), ``Σ D_i P_i == X`` (the part of B(c) so far)
  and ``Σ D_i Ad_i == V`` (the result's value so far) -- adding the next leaf (its path of
  the real walk) keeps the invariant with ``D + δ``, ``U + occ``, ``X + c*r``,
  ``V + R_leaf(c)``.

At the end every mode below the last has ``U_i < As_i``: for a mode used by two or more
leaves this is what the overlap check accepts, for a mode used by one leaf it is the leaf
lemma's ``occ[i] < As_i``.  So ``D`` is in range and adds up to ``X = B(c)``: it is Â's
representation of ``B(c)``, and ``Â(B(c)) == V == R(c)`` (R's modes are the leaves'
modes, concatenated).  What is read off the code rather than machine-checked: that
``composition`` passes each call of the leaf walk only Â and its own leaf, that the
overlap check sums exactly the returned footprints, and the concatenation.

>>> from layoutproof.proofs.catalog_composition_induction import leaf_instances
>>> [i.label for i in leaf_instances((1, 2))]
['leaf lemma + step, A rank 1', 'leaf lemma + step, A rank 2']
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence, Tuple

from layoutproof.layout import Layout
from layoutproof.verify import Result

from . import catalog_symbolic as cs
from . import symexec as sx
from .theorem import Theorem

__all__ = ["leaf_walk", "leaf_instances", "leaf_instance"]


def _sp() -> Any:
    import sympy

    return sympy


def _z3() -> Any:
    import z3

    return z3


def leaf_walk() -> Callable[..., Tuple[List[Any], List[Any], Dict[int, Any]]]:
    """The leaf walk of ``symops.composition`` (the function it calls once per leaf of B)."""
    from layoutproof.symbolic import symops

    fn = getattr(symops, "compose_leaf", None)
    if fn is None:  # before the public name: the same function under its module-private name
        fn = getattr(symops, "_leaf")  # noqa: B009 - read once, see the module docstring
    return fn  # type: ignore[no-any-return]  # a module attribute read by name is Any to mypy


def _prefixes(shape: Sequence[Any]) -> List[Any]:
    sp = _sp()
    out = [sp.Integer(1)]
    for s in shape[:-1]:
        out.append(out[-1] * s)
    return out


def _integer_composition(A: Layout, B: Layout) -> Callable[[Dict[str, int]], Any]:
    """The integer composition on the operands with an assignment substituted (completed to
    every symbol under the active assumptions): the leaf walk's confirmation of a refusal."""

    def run(asg: Dict[str, int]) -> Any:
        from layoutproof import ops
        from layoutproof.symbolic import assumptions, complete_assignment

        syms = set(A.free_symbols) | set(B.free_symbols)
        full = complete_assignment(asg, syms, assumptions())
        if full is None:  # nothing to confirm with: the walk reports the condition undecided
            return None
        asg.clear()
        asg.update(full)
        return ops.composition(A.subs(full), B.subs(full))

    return run


def leaf_instance(A: Layout, n: Any, r: Any, what: str = "step") -> cs.Instance:
    """For A and one leaf ``n:r``, on every path of the real ``coalesce_flat`` (keep_last)
    and leaf walk: the leaf lemma and the induction step (``what == "step"``), the leaf
    lemma alone (``"lemma"``), or only the leaf result's size (``"size"``)."""
    from layoutproof.symbolic import symops

    fa, da = sx.flat_modes(A)
    Bleaf = Layout.trusted(n, r)
    walk = leaf_walk()
    conc = _integer_composition(A, Bleaf)

    def fn() -> Any:
        As, Ad = symops.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
        ms, md, occ = walk(As, Ad, n, r, -1, conc)
        return As, Ad, cs.lay(ms, md), dict(occ)

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        sp = _sp()
        e = cx.enc
        As, Ad, Rl, occ = cx.path.value
        ms, md = sx.flat_modes(Rl)
        last = len(As) - 1
        # the leaf result's own digits: every coordinate c < n of the leaf, c = idx(gs)
        gs = [cx.dg.new(e, s, "g") for s in ms]
        c = sx.index_of(e, ms, gs)
        rval = sx.value_of(e, md, gs)
        terms = [(g, s, sp.expand(p * r)) for g, s, p in zip(gs, ms, _prefixes(ms))]
        delta = sx.place(e, list(As), terms, cx.facts, unbounded_last=True)
        rt = e.t(r)
        lemma: List[Any] = [cs.zprod(e, ms) == e.t(n)]  # the leaf result has size n
        if what == "size":
            return [], lemma[0]
        lemma += cs.bounded(e, list(As), delta, last=False)  # δ in range (the last unbounded)
        lemma.append(sx.index_of(e, list(As), delta) == c * rt)  # δ represents c*r
        lemma.append(sx.value_of(e, list(Ad), delta) == rval)  # R_leaf(c) == Â(c*r)
        for i in range(last):  # the footprint bounds the digits
            if i in occ:
                o = e.t(occ[i])
                lemma += [delta[i] <= o, o >= 0, o < e.t(As[i])]
            else:
                lemma.append(delta[i] == 0)
        if what == "lemma":
            return [], z3.And(lemma)
        # the induction step: any accumulated state of k leaves, extended by this leaf
        D = [e.fresh("D") for _ in As]
        U = [e.fresh("U") for _ in range(last)]
        X, V = e.fresh("X"), e.fresh("V")
        pref = [e.t(p) for p in _prefixes(list(As))]
        ctx = [d >= 0 for d in D]
        ctx += [D[i] <= U[i] for i in range(last)]
        ctx.append(sum((d * p for d, p in zip(D, pref)), z3.IntVal(0)) == X)
        ctx.append(sum((d * e.t(a) for d, a in zip(D, Ad)), z3.IntVal(0)) == V)
        D2 = [D[i] + delta[i] for i in range(len(As))]
        U2 = [U[i] + (e.t(occ[i]) if i in occ else 0) for i in range(last)]
        stepc = [d >= 0 for d in D2]
        stepc += [D2[i] <= U2[i] for i in range(last)]
        stepc.append(sum((d * p for d, p in zip(D2, pref)), z3.IntVal(0)) == X + c * rt)
        stepc.append(sum((d * e.t(a) for d, a in zip(D2, Ad)), z3.IntVal(0)) == V + rval)
        # the lemma is a conjunct of the claim (proved on this path); the step's conjuncts
        # hold given it
        return ctx, z3.And(lemma + [z3.Implies(z3.And(lemma), z3.And(stepc))])

    label = {"step": "leaf lemma + step", "lemma": "leaf lemma", "size": "leaf size"}[what]
    label = f"{label}, A rank {len(fa)}"
    return cs.Instance(label, fn, build, cs.confirm_post("composition", lambda p: p.value[2], A, Bleaf))


def _leaf_operands(a: int) -> Tuple[Layout, Any, Any]:
    A = cs.sym_layout("A", a)
    n = cs.extents("Bs", 1)[0]
    r = cs.strides("Bd", 1, nonneg=True)[0]
    return A, n, r


def leaf_instances(ranks: Sequence[int], what: str = "step") -> List[cs.Instance]:
    """One leaf instance per A rank: A with symbolic extents and arbitrary strides, the leaf
    ``Bs0:Bd0`` with a positive extent and a non-negative stride."""
    out = []
    for a in ranks:
        A, n, r = _leaf_operands(a)
        out.append(leaf_instance(A, n, r, what))
    return out


# ----------------------------------------------------------------------------- the theorems
#: A ranks of the leaf lemma + step: the main job, and `layoutproof prove --all`
LEAF_MAIN = (1, 2)
LEAF_ALL = (1, 2, 3)

_EXT = "extents positive integers"
_ANY = "strides arbitrary integers"
_POS = "strides positive integers"
_NONNEG = "strides non-negative integers"


def _direct(pairs: Sequence[Tuple[int, int]]) -> List[Tuple[Layout, Layout]]:
    return [(cs.sym_layout("A", a), cs.sym_layout("B", b, positive=True)) for a, b in pairs]


def _post_check() -> List[Result]:
    full = cs.full_scope()
    leaf = leaf_instances(LEAF_ALL if full else LEAF_MAIN, "step")
    pairs = ((1, 1), (2, 1), (3, 1), (1, 2), (2, 2)) if full else ((1, 1), (2, 1), (1, 2))
    direct = [cs.composition_instance(A, B) for A, B in _direct(pairs)]
    return cs.prove("R(c) == Â(B(c)) for a B of every rank (leaf induction)", leaf) + cs.prove(
        "R(c) == A(B(c))", direct
    )


def _size_check() -> List[Result]:
    leaf = leaf_instances(LEAF_ALL if cs.full_scope() else LEAF_MAIN, "size")
    direct = [cs.composition_size_instance(A, B) for A, B in _direct(((1, 1), (2, 1), (1, 2)))]
    return cs.prove("size of every leaf's result == its extent", leaf) + cs.prove(
        "size(A o B) == size(B)", direct
    )


def _ranks(xs: Sequence[int]) -> str:
    return f"{xs[0]}-{xs[-1]}" if len(xs) > 1 else str(xs[0])


_BY_INSPECTION = (
    "Read off symops.composition, not machine-checked: each leaf walk receives only Â and its own "
    "leaf, the overlap check sums exactly the walks' footprints, R concatenates the leaves' results "
    "in B's profile"
)


def _theorem(
    tid: str, title: str, statement: str, check: Callable[[], List[Result]], scope: str, params: str
) -> "Theorem":
    return Theorem(
        tid,
        title,
        statement,
        check,
        expected="proved",
        method="z3",
        parameters=params,
        references=cs.REF + ("proofs/catalog_composition_induction.py",),
        family=scope,
        group=cs.GROUP,
    )


def _build() -> List["Theorem"]:
    post = _theorem(
        "sym.composition-post",
        "composition meets its post-condition, for all extents and strides and every rank of B",
        "Whenever composition(A, B) returns R: B is compatible with R and R(c) == Â(B(c)) for every "
        "coordinate c of B, Â = A extended along its last mode (through coalesce: sym.coalesce-extended). "
        "For a B of any rank by induction over B's leaves: base = the leaf lemma (every path of the real "
        "leaf walk on one leaf n:r: the digits of c*r in Â are in range, add up to c*r, give the leaf "
        "result's value, and are bounded by the footprint occ the walk returns, occ[i] < As_i); step = any "
        "accumulated state (digits D <= the footprint sums U, sum D_i P_i == B(c) so far, sum D_i Ad_i == "
        "R(c) so far) extended by the next leaf's path keeps that invariant; at the end U_i < As_i for "
        "every mode below the last (the overlap check for modes used by >= 2 leaves, the leaf lemma for "
        "one), so D is Â's representation of B(c) and R(c) == Â(B(c)). " + _BY_INSPECTION + ". "
        "Direct symbolic execution of the whole composition at small ranks is a supplement",
        _post_check,
        f"A rank {_ranks(LEAF_MAIN)} x B of every rank (leaf induction; B's leaves: {_NONNEG}) and direct "
        "execution at A x B 1x1, 2x1, 1x2 in `layoutproof prove`; A rank "
        f"{_ranks(LEAF_ALL)} x B of every rank (so 3x3 included) and direct execution at 1x1, 2x1, 3x1, "
        "1x2, 2x2 with `layoutproof prove --all`",
        f"A: {_EXT}, {_ANY}; B: {_EXT}, {_NONNEG} (leaf induction; direct runs: {_POS})",
    )
    size = _theorem(
        "sym.composition-size",
        "size(A o B) == size(B), for all extents and strides and every rank of B",
        "Whenever composition(A, B) returns R: size(R) == size(B). Every rank of B: on every path of the "
        "real leaf walk the leaf's result has size n (its leaf's extent), and R's modes are the leaves' "
        "results concatenated (read off symops.composition), so size(R) is the product of B's extents. "
        "Direct execution at small ranks is a supplement",
        _size_check,
        f"A rank {_ranks(LEAF_MAIN)} x B of every rank (by leaves) and direct execution at A x B 1x1, 2x1, "
        f"1x2 in `layoutproof prove`; A rank {_ranks(LEAF_ALL)} x B of every rank and the same direct "
        "runs with `layoutproof prove --all`",
        f"A: {_EXT}, {_ANY}; B: {_EXT}, {_NONNEG} (by leaves; direct runs: {_POS})",
    )
    return [post, size]


THEOREMS = _build()
