"""The leaf lemma of composition: the real leaf walk on one leaf of B, and the every-rank induction.

``symops.composition`` runs the leaf walk (``compose_leaf``) once per flat leaf ``n:r`` of B on
Â (A coalesced keeping its last mode).  :func:`leaf_instance` explores the real walk at a
fixed rank of A (the leaf lemma, and the step over B's leaves); :func:`every_rank_results`
is the induction at every rank of A (its base, the walk at rank 1, and the fold obligations
of :mod:`.composition_fold`), explored once per process.  Both the post-condition theorems
(:mod:`.composition_induction`) and the exactness of the refusals (:mod:`.composition_exact`)
rest on it, so it sits below both.

>>> [i.label for i in leaf_instances((1, 2))]
['leaf lemma + step, A rank 1', 'leaf lemma + step, A rank 2']
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Sequence, Tuple

from layoutproof import ops
from layoutproof.errors import UndecidableConditionError
from layoutproof.layout import Layout
from layoutproof.symbolic import assumptions, complete_assignment, symops
from layoutproof.symbolic import sympy_module as _sp
from layoutproof.verify import Result

from .. import symexec as sx
from ..symexec import z3_module as _z3
from . import composition_fold as cf
from . import symbolic as cs

__all__ = [
    "leaf_walk",
    "integer_composition",
    "leaf_operands",
    "leaf_instance",
    "leaf_instances",
    "every_rank_instances",
    "every_rank_results",
    "EVERY_RANK_CLAIM",
]


def leaf_walk() -> Callable[..., Tuple[List[Any], List[Any], Dict[int, Any]]]:
    """The leaf walk of ``symops.composition`` (the function it calls once per leaf of B)."""

    return symops.compose_leaf


def integer_composition(A: Layout, B: Layout) -> Callable[[Dict[str, int]], Any]:
    """The integer composition on the operands with an assignment substituted (completed to
    every symbol under the active assumptions): the leaf walk's confirmation of a refusal."""

    def run(asg: Dict[str, int]) -> Any:

        syms = set(A.free_symbols) | set(B.free_symbols)
        full = complete_assignment(asg, syms, assumptions())
        if full is None:  # nothing to confirm with: the walk reports the condition undecided
            raise UndecidableConditionError(
                "composition: no assignment of the other symbols found to confirm the refusal on integers",
                condition="an assignment of every symbol under the assumptions",
            )
        asg.clear()
        asg.update(full)
        return ops.composition(A.subs(full), B.subs(full))

    return run


def leaf_instance(A: Layout, n: Any, r: Any, what: str = "step") -> cs.Instance:
    """For A and one leaf ``n:r``, on every path of the real ``coalesce_flat`` (keep_last)
    and leaf walk: the leaf lemma and the induction step (``what == "step"``), the leaf
    lemma alone (``"lemma"``), or only the leaf result's size (``"size"``)."""

    fa, da = sx.flat_modes(A)
    Bleaf = Layout.trusted(n, r)
    walk = leaf_walk()
    conc = integer_composition(A, Bleaf)

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
        terms = [(g, s, sp.expand(p * r)) for g, s, p in zip(gs, ms, cs.prefixes(ms))]
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
        pref = [e.t(p) for p in cs.prefixes(list(As))]
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


def leaf_operands(a: int) -> Tuple[Layout, Any, Any]:
    """A of rank ``a`` (symbolic extents, arbitrary strides) and one leaf ``Bs0:Bd0`` (a
    positive extent, a stride of any sign)."""
    A = cs.sym_layout("A", a)
    n = cs.extents("Bs", 1)[0]
    r = cs.strides("Bd", 1)[0]
    return A, n, r


def leaf_instances(ranks: Sequence[int], what: str = "step") -> List[cs.Instance]:
    """One leaf instance per A rank: A with symbolic extents and arbitrary strides, the leaf
    ``Bs0:Bd0`` with a positive extent and an arbitrary stride (the walk refuses a negative
    one: no result there)."""
    out = []
    for a in ranks:
        A, n, r = leaf_operands(a)
        out.append(leaf_instance(A, n, r, what))
    return out


def every_rank_instances() -> List[cs.Instance]:
    """The induction at every rank of A: the base (the whole real leaf walk -- trivial leaves,
    no step, the close -- with the step over B's leaves, at A rank 1) and the every-rank
    obligations of :mod:`.composition_fold` (the leaf walk's step and close, the
    overlap check's sums step and per-mode check)."""
    return leaf_instances((1,), "step") + cf.fold_instances()


#: the claim the every-rank induction's results carry
EVERY_RANK_CLAIM = "leaf lemma + closure at every rank of A (induction over Â's modes, B's leaves)"


@functools.lru_cache(maxsize=1)
def _every_rank_cached() -> Tuple[Result, ...]:
    return tuple(cs.prove(EVERY_RANK_CLAIM, every_rank_instances()))


def every_rank_results() -> List[Result]:
    """The every-rank induction's results, explored once per process: every theorem that rests
    on it (composition's post-condition and size, the divides, the products, the right
    identity, associativity) reports them as part of its proof."""
    return list(_every_rank_cached())
