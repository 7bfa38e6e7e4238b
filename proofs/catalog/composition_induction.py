"""Composition for every rank of A and of B: induction over Â's modes and B's leaves.

``symops.composition(A, B)`` coalesces A (keeping its last mode: Â), runs the leaf walk
(``compose_leaf``) once per flat leaf ``n:r`` of B -- each call receives Â and that leaf
only -- then checks that the leaves' digit footprints in Â do not overflow a mode (the
overlap check: for every mode of Â used by two or more leaves, the sum of their largest
digits there is below the mode's extent) and concatenates the leaves' results in B's
profile.

The post-condition ``R(c) == Â(B(c))`` for a B of any rank follows from one statement
about a single leaf:

* **leaf lemma**: for every coordinate ``c < n`` (quantified through the leaf result's own
  digits), the digits ``δ`` of ``c*r`` in Â are in range and add up to ``c*r``, the leaf
  result at ``c`` is ``Σ δ_i Ad_i``, the leaf result has size ``n``, and the footprint
  ``occ`` the walk returns bounds the digits: ``δ_i <= occ[i] < As_i`` for every mode ``i``
  in ``occ`` and ``δ_i == 0`` for every other mode but the last;
* **step** over B's leaves: for any accumulated state of k leaves -- digits ``D``
  (``0 <= D_i <= U_i``, ``U_i`` the sum of the footprints so far), ``Σ D_i P_i == X`` (the
  part of B(c) so far) and ``Σ D_i Ad_i == V`` (the result's value so far) -- adding the next
  leaf keeps the invariant with ``D + δ``, ``U + occ``, ``X + c*r``, ``V + R_leaf(c)`` (a
  mode-wise sum: by hand at every rank, and machine-checked on the real walk's paths at
  fixed ranks of A, :func:`.composition_leaf.leaf_instance`).

The leaf lemma holds at **every rank of A**: the leaf walk is a fold of the real
``compose_leaf_step`` over Â's modes, and :mod:`.composition_fold` proves its
invariant's step and close on every path with the finished modes opaque; the base is the
whole walk at A rank 1 (:func:`.composition_leaf.every_rank_instances`).  At the end every mode below the last
has ``U_i < As_i`` (**closure**): the overlap check sums the footprints by a fold of
``footprint_sum_step`` and checks each mode alone (``check_mode_disjoint``), both explored
there per mode, so for any rank of Â and any number of leaves a mode used by two or more
leaves is what the check accepts and a mode used by one is the leaf lemma's
``occ[i] < As_i``.  So ``D`` is in range and adds up to ``X = B(c)``: it is Â's
representation of ``B(c)``, and ``Â(B(c)) == V == R(c)`` (R's modes are the leaves' modes,
concatenated).  Read off the code rather than machine-checked: that ``composition`` passes
each call of the leaf walk only Â and its own leaf, that it hands the overlap check exactly
the returned footprints, the fold loops, and the concatenation.  The fixed-rank leaf
induction (A ranks 1-4, the closure with two and three leaves on the real
``check_leaves_disjoint``) stays as a supplement with ``--all``.

>>> from layoutproof.proofs.catalog.composition_induction import closure_instances
>>> [i.label for i in closure_instances((2,))][0]
'closure, A rank 2, leaves using modes [[0], [0]]'
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof.layout import Layout
from layoutproof.symbolic import symops
from layoutproof.symbolic import sympy_module as _sp
from layoutproof.verify import Result

from .. import symexec as sx
from ..symexec import z3_module as _z3
from ..theorem import Theorem
from . import induction_inverse
from . import symbolic as cs
from . import symbolic_binary as sb
from .composition_exact import exact_theorem
from .composition_leaf import every_rank_results, leaf_instances

# every theorem here is built by the group's one builder, naming this file as its source
_theorem = functools.partial(cs.all_values_theorem, source="proofs/catalog/composition_induction.py")

__all__ = ["closure_instance", "closure_instances", "post_instances", "THEOREMS"]


def closure_instance(
    m: int, uses: Sequence[Sequence[int]], check: Optional[Callable[..., Any]] = None
) -> cs.Instance:
    """The induction's closing step on the real overlap check: ``symops.check_leaves_disjoint``
    run on Â with ``m`` symbolic extents and one leaf per entry of ``uses`` (the modes below
    the last that leaf lands in, with a symbolic footprint ``o < As_i`` each: the leaf lemma's
    bound); on every path where it accepts, every mode's summed footprint ``U_i`` is below
    ``As_i`` -- what makes the accumulated digits Â's representation of B(c)."""

    sp = _sp()
    run_check = check if check is not None else symops.check_leaves_disjoint
    As = cs.extents("As", m)
    occ = [
        {i: sp.Symbol(f"o{j}_{i}", integer=True, nonnegative=True) for i in modes}
        for j, modes in enumerate(uses)
    ]
    facts = tuple(sp.Lt(o, As[i]) for oc in occ for i, o in oc.items())
    leaves = [([1], [0], oc) for oc in occ]

    def fn() -> Any:
        run_check(list(As), leaves, None)
        return "accepted"

    def sums() -> List[Tuple[int, Any]]:
        return [(i, sp.Add(*[oc[i] for oc in occ if i in oc])) for i in range(m - 1)]

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        e = cx.enc
        return [], _z3().And([e.t(u) < e.t(As[i]) for i, u in sums()] or [_z3().BoolVal(True)])

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:
        syms = list(As) + [o for oc in occ for o in oc.values()]
        v = {x: sp.Integer(asg.get(x.name, 1 if x in As else 0)) for x in syms}
        A_int = [int(a.xreplace(v)) for a in As]
        ls = [([1], [0], {i: int(o.xreplace(v)) for i, o in oc.items()}) for oc in occ]
        try:
            run_check(A_int, ls, None)
        except Exception:  # noqa: BLE001 - refused on the integers: not a counterexample
            return None
        over = [(i, int(u.xreplace(v)), A_int[i]) for i, u in sums() if int(u.xreplace(v)) >= A_int[i]]
        return f"the overlap check accepts footprints {ls} in extents {A_int}: {over}" if over else None

    label = f"closure, A rank {m}, leaves using modes {[list(u) for u in uses]}"
    return cs.Instance(label, fn, build, confirm, assumptions=facts)


def closure_instances(ranks: Sequence[int]) -> List[cs.Instance]:
    """Two and three leaves landing in every mode below the last, and two leaves of which
    the second lands only in mode 0 (a mode with one user is left to the leaf lemma)."""
    out = []
    for m in ranks:
        every = list(range(m - 1))
        for uses in ([every, every], [every, every, every], [every, every[:1]]):
            out.append(closure_instance(m, uses))
    return out


def post_instances(ranks: Sequence[int]) -> List[cs.Instance]:
    """The whole induction for composition's post-condition at these ranks of A: the leaf
    lemma + step per rank, and the closure on the overlap check per rank of Â above 1."""
    return leaf_instances(ranks, "step") + closure_instances([a for a in ranks if a > 1])


# ----------------------------------------------------------------------------- the theorems
#: A ranks of the fixed-rank leaf lemma + step (a supplement to the every-rank induction), run
#: with `layoutproof prove --all`
LEAF_ALL = (1, 2, 3, 4)
#: A ranks of the fixed-rank leaf induction that logical_divide's theorems and associativity
#: re-run with --all (a supplement)
COR_ALL = (1, 2, 3)

_LEAVES = "strides arbitrary integers (the walk refuses a negative one)"
_AB_PARAMS = (
    f"A: {cs.EXTENTS}, {cs.STRIDES_ANY}; B: {cs.EXTENTS}, {_LEAVES} (the induction; direct runs: "
    f"{cs.STRIDES_POS})"
)


def _direct(pairs: Sequence[Tuple[int, int]]) -> List[Tuple[Layout, Layout]]:
    return [(cs.sym_layout("A", a), cs.sym_layout("B", b, positive=True)) for a, b in pairs]


def _post_check() -> List[Result]:
    full = cs.full_scope()
    # the main job's direct runs: one leaf and two leaves through the whole composition;
    # every one with --all, and the fixed-rank leaf induction as a supplement
    pairs = ((1, 1), (2, 1), (3, 1), (1, 2), (2, 2)) if full else ((1, 1), (1, 2))
    direct = [sb.composition_instance(A, B) for A, B in _direct(pairs)]
    out = every_rank_results() + cs.prove("R(c) == A(B(c))", direct)
    if full:
        out += cs.prove(
            "R(c) == Â(B(c)) for a B of every rank (leaf induction at a fixed A rank)",
            post_instances(LEAF_ALL),
        )
    return out


def _size_check() -> List[Result]:
    direct = [sb.composition_size_instance(A, B) for A, B in _direct(((1, 1), (2, 1), (1, 2)))]
    out = every_rank_results() + cs.prove("size(A o B) == size(B)", direct)
    if cs.full_scope():
        out += cs.prove(
            "size of every leaf's result == its extent (fixed A rank)", leaf_instances(LEAF_ALL, "size")
        )
    return out


# ----------------------------------------------------------------------------- corollaries
# logical_divide, logical_product and associativity are compositions: each theorem re-runs the
# leaf induction (with `--all`) for the first operand it composes with, and keeps its direct
# execution of the whole operation as the machine check of how the operation calls composition.


def _pos(name: str, r: int = 1) -> Layout:
    return cs.sym_layout(name, r, positive=True)


def _logical_divide_def_check() -> List[Result]:
    direct = cs.prove("logical_divide(L, T) == L o (T, T*)", [sb.logical_divide_instance(_L1(), _pos("T"))])
    out = direct + every_rank_results()
    if cs.full_scope():
        out += cs.prove(
            "R(c) == L^(B(c)) for every B (leaf induction, L as A, fixed rank)", post_instances(COR_ALL)
        )
    return out


def _L1() -> Layout:
    return cs.sym_layout("L", 1)


def _other_theorem(tid: str) -> List[Result]:
    """Run another catalog theorem's check here (its results become part of this proof)."""
    t = next(t for t in induction_inverse.THEOREMS if t.id == tid)
    out = t.check()
    return [out] if isinstance(out, Result) else list(out)


def _logical_divide_size_check() -> List[Result]:
    direct = cs.prove(
        "size(L / T) == size(T) size(T*) >= size(L)", [sb.logical_divide_size_instance(_L1(), _pos("T"))]
    )
    out = direct + every_rank_results()
    if not cs.full_scope():
        return out
    return (
        out
        + cs.prove(
            "size of every leaf's result == its extent (L as A, fixed rank)", leaf_instances(COR_ALL, "size")
        )
        + _other_theorem("sym.complement-size")
    )


def _logical_product_def_check() -> List[Result]:
    out = (
        cs.prove(
            "logical_product(A, B) == (A, complement(A, size(A) cosize(B)) o B)",
            [sb.logical_product_instance(_pos("A"), _pos("B"))],
        )
        + every_rank_results()
    )
    if cs.full_scope():
        out += cs.prove(
            "mode 1: R1(c) == C^(B(c)) for every B (leaf induction, C as A, fixed rank)",
            post_instances(LEAF_ALL),
        )
    return out


def _logical_product_size_check() -> List[Result]:
    direct = cs.prove(
        "size(A x B) == size(A) size(B)", [sb.logical_product_size_instance(_pos("A"), _pos("B"))]
    )
    out = direct + every_rank_results()
    if cs.full_scope():
        out += cs.prove(
            "size of every leaf's result == its extent (C as A, fixed rank)", leaf_instances(LEAF_ALL, "size")
        )
    return out


def _left_identity_check() -> List[Result]:
    ranks = (1, 2, 3) if cs.full_scope() else (1, 2)
    direct = cs.prove("(N:1 o B)(c) == B(c)", [sb.left_identity_instance(_pos("B", r)) for r in ranks])
    return direct + cs.prove("R(c) == Â(B(c)) for every B (leaf induction, A = N:1)", post_instances((1,)))


def _right_identity_check() -> List[Result]:
    full = cs.full_scope()
    direct = cs.prove(
        "(A o size(A):1)(i) == A(i)",
        [sb.right_identity_instance(cs.sym_layout("A", r)) for r in ((1, 2, 3) if full else (1, 2))],
    )
    out = direct + every_rank_results()
    if full:
        out += cs.prove(
            "R(c) == Â(B(c)) for every B (leaf induction, fixed A rank)", post_instances(LEAF_ALL)
        )
    return out


def _associativity_check() -> List[Result]:
    direct = cs.prove(
        "(A o B) o C == A o (B o C)",
        [sb.associativity_instance(cs.sym_layout("A", 1), _pos("B"), _pos("C"))],
    )
    out = direct + every_rank_results()
    if cs.full_scope():
        out += cs.prove("R(c) == Â(B(c)) for every B (leaf induction, fixed A rank)", post_instances(COR_ALL))
    return out


def _ranks(xs: Sequence[int]) -> str:
    return f"{xs[0]}-{xs[-1]}" if len(xs) > 1 else str(xs[0])


_BY_INSPECTION = (
    "Read off symops.composition, not machine-checked: each leaf walk receives only Â and its own "
    "leaf, the overlap check receives exactly the walks' footprints, R concatenates the leaves' results "
    "in B's profile"
)

#: the every-rank induction, as the theorems built on it state it
_EVERY_RANK = (
    "The leaf lemma at every rank of A, by induction over Â's modes on the real code: compose_leaf is a "
    "fold of compose_leaf_step over Â's modes below the last, closed by compose_leaf_close (the last, "
    "unbounded mode); invariant after modes 0..i-1 (P their product, N the product of the result's extents "
    "so far): n == N rest_n, rest_n and rest_r positive integers, rest_n == 1 or N r == P rest_r, and every "
    "leaf coordinate c = c_lo + N c_hi (c_lo < N, c_hi < rest_n) has c_lo r == sum_(j<i) δ_j P_j with "
    "0 <= δ_j <= occ[j] < As_j for the modes in the footprint, δ_j == 0 for the others, and the result's "
    "value so far sum_(j<i) δ_j Ad_j; step = on every path of the real compose_leaf_step from any state "
    "meeting it (the finished modes and the mode's index opaque: a step that read them would be refused) "
    "the next state meets it at i+1; close = the last mode takes the rest, rest_n : rest_r Ad_last (δ_last "
    "unbounded, no footprint), or nothing only when rest_n == 1, and the finish gives 1:0 only for n == 1; "
    "base = every path of the whole real walk at A rank 1 (trivial leaves included). Closure at every rank "
    "of Â and any number of leaves: check_leaves_disjoint sums the footprints by a fold of "
    "footprint_sum_step (explored per mode: the sum and the number of leaves landing there) and checks each "
    "mode alone with check_mode_disjoint (explored reading only As[i]: returning with >= 2 users means "
    "U_i < As_i); a mode with one user is bounded by the leaf lemma, one with none sums to 0. Read off the "
    "code: the fold loops, the start state ((), (), (), n, r) (N = P = 1; r > 0 there, the walk having "
    "returned for r == 0 and refused r < 0) and the finish's list conversion"
)


def _build() -> List["Theorem"]:
    post = _theorem(
        "sym.composition-post",
        "composition meets its post-condition, for all extents and strides and every rank of A and B",
        "Whenever composition(A, B) returns R: B is compatible with R and R(c) == Â(B(c)) for every "
        "coordinate c of B, Â = A extended along its last mode (through coalesce: sym.coalesce-extended). "
        "By induction over B's leaves: the leaf lemma (every path of the leaf walk on one leaf n:r: the "
        "digits δ of c*r in Â are in range, add up to c*r, give the leaf result's value, and are bounded by "
        "the footprint occ the walk returns, occ[i] < As_i; the leaf result has size n); step = any "
        "accumulated state (digits D <= the footprint sums U, sum D_i P_i == B(c) so far, sum D_i Ad_i == "
        "R(c) so far) plus the next leaf's lemma keeps it (D + δ, U + occ: a mode-wise sum, by hand at "
        "every rank, machine-checked on the leaf's real paths at A rank 1, 1-4 with --all); closure = at "
        "the end U_i < As_i for every mode below the last, so D is Â's representation of B(c) and "
        "R(c) == Â(B(c)). " + _EVERY_RANK + ". " + _BY_INSPECTION + ". "
        "Supplements: direct symbolic execution of the whole composition at small ranks, and (--all) the "
        "leaf lemma + step on the real walk at A ranks 1-4 with the closure on the real check with 2 and 3 "
        "leaves",
        _post_check,
        "every rank: A of every rank x B of every rank (induction over Â's modes and B's leaves) and direct "
        "execution "
        "at A x B 1x1, 1x2 in `layoutproof prove`; with `layoutproof prove --all` also, as supplements, the "
        f"fixed-rank leaf induction at A rank {_ranks(LEAF_ALL)} and direct execution at 1x1, 2x1, 3x1, "
        "1x2, 2x2",
        _AB_PARAMS,
    )
    size = _theorem(
        "sym.composition-size",
        "size(A o B) == size(B), for all extents and strides and every rank of A and B",
        "Whenever composition(A, B) returns R: size(R) == size(B). Every leaf result has size n (its "
        "leaf's extent) at every rank of A: the leaf fold's step keeps n == N rest_n (the result's extents "
        "so far times the points left) and the close takes the rest (the every-rank induction of "
        "sym.composition-post, re-run here); R's modes are the leaves' results concatenated (read off "
        "symops.composition), so size(R) is the product of B's extents. Direct execution at small ranks "
        "and (--all) the fixed-rank leaf size lemma at A ranks 1-4 are supplements",
        _size_check,
        "every rank: A of every rank x B of every rank (induction) and direct execution at A x B 1x1, 2x1, "
        "1x2 in "
        f"`layoutproof prove`; with `--all` also the fixed-rank leaf size lemma at A rank {_ranks(LEAF_ALL)}",
        _AB_PARAMS,
    )
    exact = exact_theorem()  # stated in .composition_exact, listed here in catalog order
    ld = _theorem(
        "sym.logical-divide-def",
        "logical_divide(L, T) is L o (T, complement(T, size(L)))",
        "Whenever logical_divide(L, T) returns R: R meets composition's post-condition against "
        "B = (T, complement(T, size(L))) computed on the same path: R(c) == L^(B(c)) for every c. "
        "logical_divide(L, T) returns composition(L, B) for that B (ops.logical_divide, read off the code; "
        "the direct symbolic execution checks the whole claim at L rank 1 x T rank 1), so for L and T of "
        "every rank it is sym.composition-post with L as A and that B: its every-rank induction is re-run "
        "here (and with `--all` the fixed-rank leaf induction at L rank 1-3)",
        _logical_divide_def_check,
        "every rank: L of every rank x T of every rank (the every-rank induction) and L rank 1 x T rank 1 "
        "(direct "
        "execution) in `layoutproof prove`; with `--all` also the fixed-rank leaf induction at L rank "
        f"{_ranks(COR_ALL)} as a supplement",
        f"L: {cs.EXTENTS}, {cs.STRIDES_ANY}; T: {cs.EXTENTS}, {cs.STRIDES_POS} (the induction: T any layout)",
    )
    lds = _theorem(
        "sym.logical-divide-size",
        "size(logical_divide(L, T)) == size(T) size(complement(T, size(L))) >= size(L)",
        "Whenever logical_divide(L, T) returns R: size(R) == size(T) * size(complement(T, size(L))) and "
        "size(R) >= size(L). The first is sym.composition-size for B = (T, complement(T, size(L))) at every "
        "rank of L and B (its every-rank induction re-run here, L as A), the second is sym.complement-size "
        "with M = size(L) (proved at every rank in the same catalog run; its check re-run here with "
        "`--all`); logical_divide is composition(L, B) (ops.logical_divide, read off the code; the direct "
        "execution checks both at L rank 1 x T rank 1)",
        _logical_divide_size_check,
        "every rank: L of every rank x T of every rank (the every-rank induction + sym.complement-size) and "
        "L rank 1 x "
        "T rank 1 (direct execution) in `layoutproof prove`; with `--all` also the fixed-rank leaf size "
        f"lemma at L rank {_ranks(COR_ALL)} and sym.complement-size's check re-run here",
        f"L: {cs.EXTENTS}, {cs.STRIDES_ANY}; T: {cs.EXTENTS}, {cs.STRIDES_POS}",
    )
    lp = _theorem(
        "sym.logical-product-def",
        "logical_product(A, B) is (A, complement(A, size(A) cosize(B)) o B)",
        "Whenever logical_product(A, B) returns R: mode 0 of R is A, and mode 1 meets composition's "
        "post-condition against C = complement(A, size(A)*cosize(B)) and B. Direct symbolic execution of "
        "the real logical_product at A rank 1 x B rank 1 proves the whole claim (the path where "
        "Ad0 | Bd0*(Bs0-1)+1 and Bd0 | Ad0, which timed out before, closes once the path's facts give "
        "Bd0 == 1: symexec.normalize derives a positive symbol == 1 from X == 1 modulo it). For every rank: "
        "logical_product(A, B) is (A, composition(C, B)) (ops.logical_product, read off the code), so mode 1 "
        "is sym.composition-post with C as A, whatever C's rank: its every-rank induction is re-run here; "
        "the induction holds for all values of the state and of Â's modes, so for C's expressions too (the "
        "decisions on each explored path are those of the fresh-symbol path its values follow). With "
        "`--all` the fixed-rank leaf induction at A' rank 1-4 is a supplement",
        _logical_product_def_check,
        "every rank, not in the default run (heavy: its exploration takes about 10 s); A of every rank x "
        "B of every rank "
        "(the every-rank induction) and the direct execution at A rank 1 x B rank 1 when selected with "
        "`--filter` or with `--all` (which adds the fixed-rank leaf induction at A' rank 1-4)",
        f"{cs.EXTENTS}; {cs.STRIDES_POS}",
        heavy=True,
    )
    lps = _theorem(
        "sym.logical-product-size",
        "size(logical_product(A, B)) == size(A) size(B)",
        "Whenever logical_product(A, B) returns R: size(R) == size(A) * size(B): mode 0 is A and mode 1 is "
        "composition(C, B), whose size is size(B) by sym.composition-size at every rank (its every-rank "
        "induction re-run here, C as A); the direct execution at A rank 1 x B rank 1 checks the whole claim "
        "on the real code",
        _logical_product_size_check,
        "every rank, not in the default run (heavy: the direct run takes about a minute); A of every rank "
        "x B of every "
        "rank (the every-rank induction) when selected with `--filter` or with `--all` (which adds the "
        "fixed-rank leaf size lemma at A' rank 1-4)",
        f"{cs.EXTENTS}; {cs.STRIDES_POS}",
        heavy=True,
    )
    assoc = _theorem(
        "sym.composition-associative",
        "composition is associative inside the domains, at every rank",
        "(A o B) o C == A o (B o C) at every coordinate c of C with 0 <= C(c) < size(B) and "
        "0 <= B(C(c)) < size(A), on every path where both sides are admissible, for A, B, C of every rank: "
        "a corollary of sym.composition-post at every rank of both operands (its every-rank induction "
        "re-run here), used three times. Left side: (A o B) o C at c is (A o B)^(C(c)) (post with the first "
        "operand A o B, of any rank -- up to rank(A) rank(B) flat modes); C(c) < size(B) == size(A o B) "
        "(sym.composition-size), so the extension along the last mode is not reached and (A o B)^(C(c)) == "
        "(A o B)(C(c)) (sym.coalesce-extended: the extended coalesced layout agrees with the layout below "
        "its size); A o B is compatible with B and equals Â(B(x)) at every coordinate x of B, so at the "
        "index C(c) it is Â(B(C(c))), and B(C(c)) < size(A) makes that A(B(C(c))). Right side: A o (B o C) "
        "at c is Â((B o C)(c)) (post with A first) and (B o C)(c) == B^(C(c)) == B(C(c)) (post with B first, "
        "C(c) < size(B)), so it is Â(B(C(c))) == A(B(C(c))) (B(C(c)) < size(A)). Inside the domains every "
        "argument stays below the size of the layout it is read in: that is how the extension semantics is "
        "avoided (outside them the two sides may differ). Both results are compatible with C (post). Read "
        "off the argument, not machine-checked as one formula: the chaining of the three post-conditions. "
        "Direct symbolic execution of both sides at A, B, C of rank 1 is a supplement, and with `--all` the "
        "fixed-rank leaf induction at A rank 1-3",
        _associativity_check,
        "every rank: A, B, C of every rank (corollary of the every-rank induction) and A, B, C of rank 1 "
        "(direct "
        "execution) in `layoutproof prove`; with `--all` also the fixed-rank leaf induction at A rank "
        f"{_ranks(COR_ALL)} as a supplement",
        f"A: {cs.EXTENTS}, {cs.STRIDES_ANY}; B, C: {cs.EXTENTS}, {cs.STRIDES_POS}",
        ("0 <= C(c) < size(B)", "0 <= B(C(c)) < size(A)"),
    )
    left = _theorem(
        "sym.composition-left-identity",
        "N:1 o B has B's function, for all extents, strides and N, at every rank of B",
        "Whenever composition(N:1, B) returns R: B is compatible with R and R(c) == B(c) for every "
        "coordinate c of B (N:1 read past N along its last mode, as composition does). Every rank of B: "
        "sym.composition-post's leaf induction at A rank 1 (re-run here; N:1 is an A of rank 1) gives "
        "R(c) == Â(B(c)) with Â the identity extended; the direct symbolic execution at small ranks of B "
        "is a supplement",
        _left_identity_check,
        "B of every rank (leaf induction at A rank 1, both jobs); direct execution at B ranks 1-2 in "
        "`layoutproof prove`, 1-3 with `layoutproof prove --all`",
        f"{cs.EXTENTS}; {cs.STRIDES_POS} (the leaf induction: any strides); N a positive integer",
    )
    right = _theorem(
        "sym.composition-right-identity",
        "A o size(A):1 has A's function, for all extents and strides, at every rank",
        "Whenever composition(A, size(A):1) returns R: R(i) == A(i) for every i < size(A). A of every rank: "
        "a corollary of sym.composition-post at every rank of A (its every-rank induction re-run here): "
        "R(i) == Â(size(A):1 at i) == Â(i) == A(i) for i < size(A) (below its size the extended Â is A: "
        "sym.coalesce-extended). Direct symbolic execution at A ranks 1-2 (1-3 with `--all`) is a "
        f"supplement, and with `--all` the fixed-rank leaf induction at A rank {_ranks(LEAF_ALL)}",
        _right_identity_check,
        "every rank: A of every rank (the every-rank induction) and ranks 1-2 (direct execution) in "
        "`layoutproof prove`; "
        f"with `--all` also the fixed-rank leaf induction at A rank {_ranks(LEAF_ALL)} and direct execution "
        "at 1-3",
        f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
    )
    return [post, size, exact, ld, lds, lp, lps, assoc, left, right]


THEOREMS = _build()
