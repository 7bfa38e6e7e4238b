"""Explanations of the algebra's refusals, with repairs that are proven before they are offered.

:func:`explain` runs an expression of the ``layoutproof eval`` language (or a zero-argument
callable).  Where the algebra refuses (:class:`~layoutproof.errors.InadmissibleError`) or
cannot decide (:class:`~layoutproof.errors.UndecidableConditionError`), the
:class:`Explanation` says which operation refused, on which operands, which condition of
the CuTe algebra failed, the witness coordinate (re-evaluated here: both sides are computed
at it), a picture with the witness marked, and repairs -- each one run and checked against
the operation's post-condition (:func:`layoutproof.verify.postcondition`) before it is
offered, ranked by how little it changes.  For symbolic operands the repairs are
assumptions, proved sufficient by Z3; an undecided condition comes with a model where it
holds and one where it fails, each confirmed by running the integer operation.
:data:`CONDITIONS` states every condition the algebra raises in its own terms;
:func:`rule_of` names the entry an error is an instance of.

Shah's example (the by-mode composition of CuTe C++, PyCuTe and pycute is wrong at 5):

>>> e = explain("composition((6,2):(1,7), (3,2):(2,3))")
>>> e.status, e.operation, e.condition, e.witness
('refused', 'composition', "disjointness of B's modes in A", 5)
>>> e.reproduction.holds, e.reproduction.text
(True, 'at coordinate 5 = (2,1) of B: A(B(5)) = A(7) = 8, but composing B mode by mode gives 7')
>>> e.repairs[0].text, e.repairs[0].expression
('pad extent 6 of operand 1 (leaf 0) to 7', 'composition((7,2):(1,7), (3,2):(2,3))')

A success explains itself step by step with ``steps=True``:

>>> for s in explain("logical_divide(16:1, 4:2)", steps=True).steps:
...     print(s.text)
complement(4:2, 16) = (2,2):(1,8)
make_layout(4:2, (2,2):(1,8)) = (4,(2,2)):(2,(1,8))
composition(16:1, (4,(2,2)):(2,(1,8))) = (4,(2,2)):(2,(1,8))
"""

from __future__ import annotations

import inspect
import itertools
import json
import re
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import layoutproof
from layoutproof import ops, symbolic
from layoutproof.draw import layout_grid
from layoutproof.errors import (
    InadmissibleError,
    LayoutError,
    MalformedLayoutError,
    UndecidableConditionError,
    show,
)
from layoutproof.inttuple import raw_product
from layoutproof.layout import Layout, group_layout, make_layout, top_modes
from layoutproof.notation import evaluate
from layoutproof.verify import postcondition
from layoutproof.verify.emit import CODE_EMITS, render_assumptions

__all__ = [
    "explain",
    "CONDITIONS",
    "rule_of",
    "Explanation",
    "Repair",
    "Step",
    "Reproduction",
    "Model",
    "main",
    "EMITS",
    "render_assumptions",
]

#: the renderings :meth:`Explanation.render` knows (the code ones are
#: :func:`layoutproof.verify.emit.render_assumptions`, shared with verify's results)
EMITS = ("text",) + CODE_EMITS

#: the time (seconds) the repair search may take for one explanation
REPAIR_BUDGET_S = 0.6
#: how many repairs an explanation offers at most
MAX_REPAIRS = 6
#: the largest grid drawn in full; larger ones are drawn as a window around the witness
PICTURE_CELLS = 256

# Every condition the algebra (layoutproof, layoutproof.symbolic) refuses or leaves undecided,
# stated in the algebra's own terms (Cecka, "CuTe Layout Representation and Algebra", numbers
# the sections).  The keys are the ``condition`` names of the errors; the symbolic
# undecidables, whose ``condition`` is the formula to assume, are keyed by what they decide
# (see :func:`rule_of`).  tests/explain/test_explain_conditions.py scans the library's raise
# sites and fails on a condition that has no entry here.
CONDITIONS: Dict[str, str] = {
    # composition (Cecka §3.3.1)
    "stride divisibility": "composition's stride divisibility (Cecka §3.3.1: the stride of B's leaf divides, "
    "or is divided by, the extent of A's mode it reaches)",
    "shape divisibility": "composition's shape divisibility (Cecka §3.3.1: once B's leaf starts in a mode "
    "of A, its remaining size is a multiple of the steps left there, or fits)",
    "disjointness of B's modes in A": "left distributivity of composition over B's modes (Cecka §3.3.1): "
    "the images of B's modes, as digits of A's mixed radix, must not carry",
    "non-negative strides of B": "composition: B's offsets lie in A's domain, which starts at 0",
    "basis strides: one codomain": "composition with basis strides in B: a leaf's stride is a coordinate "
    "(a sum of v@i) or an integer, not both -- an integer plus a coordinate is undefined",
    "basis strides: the sum over modes is a layout": "composition with basis strides in B: a leaf that "
    "walks several modes of A is the sum of its compositions with each, which must be a layout",
    "basis strides: one mode per leaf": "composition with basis strides in B: each leaf of B walks one "
    "mode of A (v@i) or has stride 0, and no leaf walks a mode and one of its sub-modes",
    # complement (Cecka §3.3.2), inverses
    "complement admissibility (stride chain)": "complement admissibility (Cecka §3.3.2: sorted by stride, "
    "s_(i-1) d_(i-1) divides d_i)",
    "non-negative strides": "a non-negative stride (offsets below 0 are in no layout's domain)",
    "left-inverse divisibility": "the left inverse's divisibility (sorted strides divide each other)",
    "injectivity (non-overlapping modes)": "injectivity: the modes of the layout do not overlap "
    "(sorted by stride, s_(i-1) d_(i-1) <= d_i)",
    # products, tiling
    "block divides target": "tile_to_shape: each mode of the target shape is a multiple of the block's "
    "mode (the block repeats a whole number of times)",
    # upcast / downcast (CuTe's recast of element widths)
    "upcast stride divisibility": "upcast: each stride divides, or is divided by, the width",
    "upcast block condition": "upcast: the wide elements hold exactly the narrow ones (each wide element "
    "the layout addresses is n whole narrow elements of it)",
    "downcast: no stride -1 leaf": "downcast: the parts of an element are stored in increasing order, so "
    "the leaf that holds them has stride +1, not -1",
    "downcast: exactly one stride-1 leaf": "downcast: one stride-1 (or size-1) leaf holds the n adjacent "
    "parts of each element",
    "integer strides": "integer strides: coordinate (basis) strides have no order and no divisibility, "
    "so operations that sort or divide strides do not apply (CuTe C++ rejects them too)",
    # layout_add, refinement, coarsening (the shape lattice)
    "layout_add: equal sizes": "layout_add: the two layouts have the same size (the sum is taken "
    "coordinate by coordinate)",
    "layout_add: the sum is a layout": "layout_add: i -> A(i) + B(i) is the function of some layout "
    "(PyCuTe asks for a common refinement of the coalesced shapes; decided here by evaluation)",
    "common refinement: equal ranks": "common refinement: at each mode both shapes are tuples of one rank "
    "(a tuple refines only tuples of its rank)",
    "common refinement: equal sizes": "common refinement: at each mode both shapes have the same size",
    "common coarsening: equal sizes": "common coarsening: both shapes have the same size",
    "enumeration size limit": "the domain to enumerate is at most layoutproof.layout.EVAL_LIMIT values "
    "(a resource limit, not a condition of the algebra: raise the limit where memory allows)",
    # swizzles and composed layouts (CuTe's swizzle_layout.hpp)
    "swizzle passes through the layout": "composition(L, Sw): L o Sw is Sw' o L for a swizzle Sw' whose "
    "fields are L's images of Sw's bit masks (C++'s make_swizzle), or a plain layout",
    "swizzle passes through the layout (undecided)": "composition(L, Sw) or L o (Sw o 0 o B): the candidate "
    "result is checked by evaluation up to swizzle.VERIFY_LIMIT coordinates",
    "representable as A o offset o Layout": "a composed layout is Swizzle o offset o Layout; the "
    "composite must keep that form (a layout-valued outer function does not absorb a swizzle)",
    "offset == 0": "composition(L, A o off o B) is composition(composition(L, A), B) only for offset 0 "
    "(C++ static_assert 'Require offset == 0')",
    "non-negative offsets of B": "composition with a composed layout: its offsets lie in L's domain, "
    "which starts at 0",
    "swizzle o 0 o layout": "right_inverse / left_inverse of a composed layout: C++ inverts Swizzle o 0 o B "
    "only",
    "right_inverse of a composed layout": "right_inverse(Sw o 0 o B) = right_inverse(B) o Sw, checked: "
    "C(R(i)) == i for every i",
    "left_inverse of a composed layout": "left_inverse(Sw o 0 o B) = left_inverse(B) o Sw, checked: "
    "R(C(i)) == i for every i",
    "right_inverse of a composed layout (undecided)": "the candidate right inverse of a composed layout is "
    "checked by evaluation up to swizzle.VERIFY_LIMIT coordinates",
    "left_inverse of a composed layout (undecided)": "the candidate left inverse of a composed layout is "
    "checked by evaluation up to swizzle.VERIFY_LIMIT coordinates",
    "cosize decidable by evaluation": "the cosize of a swizzled or GF(2) layout that does not keep its image "
    "in place is found by evaluation, up to swizzle.COSIZE_EVAL_LIMIT coordinates",
    "composite of swizzles is a swizzle": "composition(Sw1, Sw2): the bit images of the composite are those "
    "of one swizzle (C++'s make_swizzle static_assert)",
    "ldm * kFactor a power of two": "a CUTLASS 2.x crosswise TensorOp layout is Swizzle o offset o Layout "
    "only when ldm * kFactor is a power of two no smaller than the tile's lines",
    "one XOR distance": "a CUTLASS 2.x bit-permuting layout is one Swizzle o offset o Layout only when every "
    "coordinate bit XORed onto another is at the same distance (a CuTe swizzle XORs at one); "
    "cutlass2_factors gives it otherwise, with F2 strides",
    "line pitch a power of two": "a CUTLASS 2.x bit-permuting layout with a leading dimension is "
    "Swizzle o offset o Layout only when the line pitch (ldm times the class's factor) is a power of "
    "two above the largest column",
    # left_inverse with basis strides
    "basis strides: one axis per leaf": "left_inverse of a layout with basis strides: each leaf moves "
    "along one axis of the codomain (the inverse reads each index digit back from one axis)",
    "basis strides: each axis inverted alone": "left_inverse with basis strides: each axis of the codomain "
    "is inverted by a layout that reads back its own modes' index digits",
    "axis inverse checked by evaluation": "left_inverse with basis strides: each axis's inverse is checked "
    "by evaluation, up to ops.EXACT_LIMIT coordinates",
    # GF(2) layouts
    "GF(2)-linearity": "to_f2: the layout is linear over GF(2): the value at c is the XOR of the values "
    "at c's bits",
    "GF(2)-linearity (zero at the origin)": "to_f2: a GF(2)-linear map sends coordinate 0 to 0",
    "GF(2)-linearity (non-negative values)": "to_f2: GF(2) values are bit vectors, so no value is negative",
    "GF(2)-linearity (undecided)": "to_f2: GF(2)-linearity is checked by evaluation up to "
    "swizzle.VERIFY_LIMIT coordinates",
    "F2 composition checked by evaluation": "composition with F2 (XOR) strides: the candidate is checked "
    "against A(B(c)) at every coordinate of B, up to ops.EXACT_LIMIT of them",
    "one codomain": "composition with F2 strides: B's strides are F2 bit patterns or integers, not "
    "coordinates as well",
    "F2 composition: XOR-linear": "composition with F2 strides: the result built leaf by leaf agrees with "
    "A(B(c)) -- the integer steps of B add without carries where A is XOR-linear",
    "F2 composition: non-negative values": "composition with F2 strides in B: A's values at B's strides are "
    "bit patterns, so none is negative",
    "F2 inverse decided by evaluation": "the inverse of a layout with F2 strides and an extent that is no "
    "power of two is found by evaluation, up to ops.EXACT_LIMIT coordinates",
    "F2 inverse: power-of-two extents": "left_inverse of a layout with F2 strides: every extent is a power "
    "of two (the inverse works bit by bit)",
    "swizzle form": "from_f2: the GF(2) layout equals a plain layout or Swizzle o Layout",
    # thread-value layouts (print_latex / tv_layout drawings)
    "tile injective": "the tile layout (M,N) -> index is injective",
    "tv in tile": "the TV layout maps every (thread, value) into the M x N tile",
    "tv injective": "the TV layout gives each cell of the tile to at most one (thread, value)",
    "tv surjective": "the TV layout gives every cell of the tile to some (thread, value)",
    "thr_id injective": "the thread-id layout maps distinct threads to distinct ids",
    # tensors
    "size(src) == size(dst)": "copy: source and destination have the same size",
    "operand ranks (M,K)x(N,K)->(M,N) or (M)x(N)->(M,N)": "gemm: A is (M,K) and B (N,K) with C (M,N), or "
    "A (M) and B (N) with C (M,N)",
    "size<0>(A) == size<0>(C)": "gemm: A and C have the same M extent",
    "size<0>(B) == size<1>(C)": "gemm: B's first extent is C's N extent",
    "size<1>(A) == size<1>(B)": "gemm: A and B have the same K extent",
    # symbolic operands: what an undecided formula decides
    "integer leaf": "a symbolic leaf (a quotient of symbols) is an integer: its numerator is divisible "
    "by its denominator",
    "extent >= 1": "a symbolic extent is at least 1",
    "coordinate in the domain": "a symbolic coordinate lies in [0, size)",
    "which case of shape divisibility": "composition's shape divisibility (Cecka §3.3.1) holds, but the "
    "result's shape depends on which of its two cases (the rest fits, or divides) holds",
    "order of the strides": "complement / left_inverse sort the modes by stride: the order of two symbolic "
    "strides must be decided",
    "extent 1 or stride 0": "complement / left_inverse ignore modes of extent 1 or stride 0: whether a "
    "symbolic mode is one must be decided",
    "right-inverse chain": "right_inverse follows the chain of strides 1, s0*d0, ...: whether a symbolic "
    "stride continues it must be decided",
    "compatible shapes": "shape compatibility: a leaf's extent equals the size of the mode it stands for",
}

# the spec of each condition, by name (kept for callers of the earlier name)
_SPEC = CONDITIONS

# the function an undecided symbolic formula is raised in -> what it decides
_FRAME_RULES = {
    "compose_leaf_step": "which case of shape divisibility",
    "sort_scan_step": "order of the strides",
    "kept_mode": "extent 1 or stride 0",
    "right_inverse_pick_step": "right-inverse chain",
    "compatible": "compatible shapes",
    "check_extent": "extent >= 1",
    "_in_range": "coordinate in the domain",
}


def rule_of(err: LayoutError) -> str:
    """The :data:`CONDITIONS` entry an InadmissibleError or UndecidableConditionError is an
    instance of ("" when none is): its condition name, or, for a symbolic formula, what the
    formula decides (the function that raised it, or the condition named in its message).

    >>> from layoutproof import Layout, composition
    >>> try:
    ...     composition(Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3)))
    ... except InadmissibleError as e:
    ...     print(rule_of(e))
    disjointness of B's modes in A
    """
    cond = getattr(err, "condition", None)
    name = str(cond) if cond is not None else ""
    if name in CONDITIONS:
        return name
    if re.search(r" leaf .* is an integer$", name):
        return "integer leaf"
    tb = err.__traceback__
    inner = ""
    while tb is not None:
        mod = tb.tb_frame.f_globals.get("__name__", "")
        if mod.startswith("layoutproof") and mod != __name__:
            inner = tb.tb_frame.f_code.co_name
        tb = tb.tb_next
    if inner in _FRAME_RULES:
        return _FRAME_RULES[inner]
    # require()/need(): the message names the condition in parentheses, with its place
    msg = str(err)
    for key in sorted(CONDITIONS, key=len, reverse=True):
        if f"({key})" in msg or f"({key} of " in msg:
            return key
    if re.search(r"\([^()]* leaf .* is an integer\)", msg):
        return "integer leaf"
    return ""


# ----------------------------------------------------------------------------- results
@dataclass
class Reproduction:
    """The witness re-evaluated: ``holds`` is True when both sides were computed at the
    witness and differ as the condition says (``text`` says how); False when they did not."""

    holds: bool
    text: str


@dataclass
class Repair:
    """A change that makes the operation admissible, run and checked before it is offered.

    Attributes:
        kind: ``"coalesce"``, ``"shrink"``, ``"pad"``, ``"stride"``, ``"reorder"``,
            ``"operation"`` or ``"assume"``.
        text: what changes, in words.
        expression: the repaired call in the ``layoutproof eval`` language.
        result: the repaired call's value (CuTe notation).
        cost: how much it changes (smaller first).
        check: the post-condition's status (``"proved"``), and for assumptions Z3's.
        assumptions: the assumptions a symbolic repair needs (Python syntax).
    """

    kind: str
    text: str
    expression: str
    result: str
    cost: float
    check: str
    assumptions: Tuple[str, ...] = ()


@dataclass
class Step:
    """One step of a derivation: the sub-operation, its operands and its value."""

    op: str
    args: Tuple[str, ...]
    value: str

    @property
    def text(self) -> str:
        return f"{self.op}({', '.join(self.args)}) = {self.value}"


@dataclass
class Model:
    """Values of the symbols where a condition holds (or fails), confirmed by running the
    integer operation there (``confirmed`` says what that gave)."""

    values: Dict[str, int]
    condition_holds: bool
    confirmed: str


@dataclass
class Explanation:
    """What :func:`explain` found.  ``status`` is ``"ok"``, ``"refused"`` or ``"undecided"``.

    For a refusal: ``operation`` and ``operands`` of the call that refused (``chain``: the
    public calls from the outermost down to it), ``condition`` and its place in the
    specification (``spec``), ``message`` (the error's text), ``witness``, ``reproduction``,
    ``picture`` and ``repairs``.  ``rule`` is the :data:`CONDITIONS` entry the condition is
    an instance of, ``spec`` its statement.  For an undecided condition: also
    ``holds``/``fails`` (models), ``named`` (the condition as the message names it, with its
    place), ``assumptions`` and ``settle`` (what settles it).  For a success: ``result`` and, with
    ``steps=True``, ``steps``.
    """

    expression: str
    status: str
    result: Optional[str] = None
    operation: Optional[str] = None
    operands: Tuple[str, ...] = ()
    chain: Tuple[str, ...] = ()
    condition: Optional[str] = None
    spec: str = ""
    message: str = ""
    witness: Any = None
    reproduction: Optional[Reproduction] = None
    picture: str = ""
    repairs: List[Repair] = field(default_factory=list)
    steps: List[Step] = field(default_factory=list)
    holds: Optional[Model] = None
    fails: Optional[Model] = None
    assumptions: Tuple[str, ...] = ()
    used: Tuple[str, ...] = ()
    rule: str = ""
    named: str = ""
    settle: str = ""
    no_repairs: str = ""
    seconds: float = 0.0
    drawn: Optional[Tuple[Any, Any]] = field(default=None, repr=False, compare=False)

    def svg(self) -> str:
        """The picture as SVG (:func:`layoutproof.draw.layout_svg`), the witness cell filled
        red and given the class ``witness``; a LayoutError when there is no picture."""
        if self.drawn is None:
            raise MalformedLayoutError(
                "explain: this explanation has no picture (no concrete witness to draw)"
            )
        return picture_svg(*self.drawn)

    def __str__(self) -> str:
        return self.render("text")

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready dictionary (what ``--json`` prints)."""

        def conv(x: Any) -> Any:
            if isinstance(x, (Reproduction, Repair, Model)):
                return {k: conv(v) for k, v in x.__dict__.items()}
            if isinstance(x, Step):
                return {"op": x.op, "args": list(x.args), "value": x.value}
            if isinstance(x, (list, tuple)):
                return [conv(v) for v in x]
            if isinstance(x, dict):
                return {str(k): conv(v) for k, v in x.items()}
            if x is None or isinstance(x, (bool, int, float, str)):
                return x
            return str(x)

        return {k: conv(v) for k, v in self.__dict__.items() if k != "drawn"}

    def render(self, emit: str = "text", *, static: Sequence[str] = ()) -> str:
        """The explanation as text, or the assumptions it uses and needs as code:
        ``"dsl"`` (CuTe DSL ``cute.assume``), ``"cpp"`` (``CUTE_STATIC_ASSERT_V`` for the
        symbols in ``static``, a runtime check for dynamic ones), ``"python"`` (a guard
        function).  For an undecided condition a comment first names it and what settles
        it: the assumption, rendered below, or -- where no formula on the symbols settles
        it -- why not.

        >>> e = explain("zipped_divide((M,N):(1,M), (64,32))", assume=["M % 64 == 0"])
        >>> e.result
        '((64,32),(M/64,ceiling(N/32))):((1,M),(64,32*M))'
        >>> print(e.render("dsl"))
        M = cute.assume(M, divby=64)
        >>> print(explain("composition((M,4):(1,M+1), 128:1)").render("dsl"))
        # undecided: shape divisibility of A's mode 0 -- assume 128 <= M, the weakest found
        # check on the host, before the kernel is traced:
        if not (128 <= M):
            raise ValueError("composition: shape divisibility of A's mode 0: needs 128 <= M")
        """
        if emit not in EMITS:
            raise MalformedLayoutError(f"render: emit must be one of {', '.join(EMITS)}, got {show(emit)}")
        if emit == "text":
            return _text(self)
        code = render_assumptions(self.needed(), emit, what=self._label(), static=tuple(static))
        if self.status != "undecided":
            return code
        mark = "//" if emit == "cpp" else "#"
        more = [a for a in self.needed() if a not in self.used]
        if more:
            how = (
                "the weakest found"
                if self.repairs and self.repairs[0].assumptions
                else "the condition itself"
            )
            head = f"{mark} undecided: {self.named or self.condition} -- assume {' and '.join(more)}, {how}"
        else:
            head = f"{mark} undecided: {self.named or self.condition} -- {self.settle}"
        return head + "\n" + code

    def needed(self) -> List[str]:
        """The assumptions it used, then those it needs: the first repair's (the weakest
        found), else the undecided condition."""
        conds = list(self.used)
        more = (
            self.repairs[0].assumptions if self.repairs and self.repairs[0].assumptions else self.assumptions
        )
        return conds + [a for a in more if a not in conds]

    def _label(self) -> str:
        if self.status == "undecided" and self.named:
            return f"{self.operation or 'the operation'}: {self.named}"
        if self.condition:
            return f"{self.operation or 'the operation'}: {self.condition}"
        return self.operation or "assumption"


# ----------------------------------------------------------------------------- names
def _names() -> Dict[str, Callable[..., Any]]:
    table: Dict[str, Callable[..., Any]] = {}
    for n in layoutproof.__all__:
        obj = getattr(layoutproof, n)
        if callable(obj) and not n.startswith("_") and not isinstance(obj, type(layoutproof._)):
            table[n] = obj
    return table


def _codes(names: Dict[str, Callable[..., Any]]) -> Dict[types.CodeType, Tuple[str, Callable[..., Any]]]:
    out: Dict[types.CodeType, Tuple[str, Callable[..., Any]]] = {}
    for n, f in names.items():
        if isinstance(f, type):
            continue
        g = inspect.unwrap(f)
        code = getattr(g, "__code__", None)
        if code is not None:
            out.setdefault(code, (n, g))
    return out


@dataclass
class _Call:
    name: str
    fn: Callable[..., Any]
    args: Tuple[Any, ...]
    kwargs: Dict[str, Any] = field(default_factory=dict)


def _calls_in(
    tb: Optional[types.TracebackType], codes: Dict[types.CodeType, Tuple[str, Callable[..., Any]]]
) -> List[_Call]:
    """The public algebra calls on the traceback, outermost first, with their arguments."""
    out: List[_Call] = []
    while tb is not None:
        fr = tb.tb_frame
        hit = codes.get(fr.f_code)
        if hit is not None:
            name, fn = hit
            loc = fr.f_locals
            args: List[Any] = []
            kw: Dict[str, Any] = {}
            positional = True
            for p in inspect.signature(fn).parameters.values():
                if p.kind == p.KEYWORD_ONLY:
                    if p.name in loc and loc[p.name] is not p.default:
                        kw[p.name] = loc[p.name]
                    continue
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name not in loc:
                    positional = False
                    continue
                v = loc[p.name]
                if p.default is not p.empty and v is p.default:
                    positional = False
                    continue
                if positional:
                    args.append(v)
                else:  # given after a defaulted one: passed by name
                    kw[p.name] = v
            out.append(_Call(name, fn, tuple(args), kw))
        tb = tb.tb_next
    return out


def _fmt(x: Any) -> str:
    if isinstance(x, (tuple, list)):
        return "(" + ",".join(_fmt(e) for e in x) + ")"
    return str(x)


def _call_text(name: str, args: Sequence[Any]) -> str:
    return f"{name}({', '.join(_fmt(a) for a in args)})"


def _is_concrete(x: Any) -> bool:
    if isinstance(x, Layout):
        return all(type(v) is int for v in x._flat()[0] + x._flat()[1])
    if isinstance(x, (tuple, list)):
        return all(_is_concrete(e) for e in x)
    return type(x) is int or x is None


# ----------------------------------------------------------------------------- entry
def explain(
    expr: Any,
    *,
    steps: bool = False,
    assume: Sequence[Any] = (),
    repairs: bool = True,
    budget_s: float = REPAIR_BUDGET_S,
) -> Explanation:
    """Run ``expr`` (an expression string of the ``layoutproof eval`` language, or a
    zero-argument callable) and explain the outcome (see the module docstring).

    ``assume``: facts on the symbols (``"M % 64 == 0"``), active while it runs.  ``steps``:
    for a successful divide, product or composition, the derivation.  ``repairs=False``
    skips the repair search; ``budget_s`` bounds it.  Bad input (a parse error, a
    malformed layout) raises its :class:`~layoutproof.errors.LayoutError`.
    """
    t0 = time.perf_counter()
    names = _names()
    facts = tuple(str(a) if not isinstance(a, str) else a for a in assume)
    if isinstance(expr, str):
        text, read = _native(expr)
        facts += tuple(f for f in read if f not in facts)
        run: Callable[[], Any] = lambda: evaluate(text, names)  # noqa: E731
    elif callable(expr):
        text = getattr(expr, "__name__", "<callable>")
        run = expr
    else:
        raise MalformedLayoutError(f"explain: expected an expression string or a callable, got {show(expr)}")
    codes = _codes(names)
    try:
        with symbolic.assuming(*facts) if facts else _nothing():
            value = run()
    except (InadmissibleError, UndecidableConditionError) as e:
        calls = _calls_in(e.__traceback__, codes)
        ex = _explain_error(text, e, calls, facts, repairs, budget_s)
        if ex.reproduction is None and ex.status == "refused" and not calls:
            ex.reproduction = _rerun(run, facts, ex.condition or "", ex.witness)
        ex.used = facts
        ex.seconds = time.perf_counter() - t0
        return ex
    head = text.split("(", 1)[0].strip() if isinstance(expr, str) else ""
    ex = Explanation(text, "ok", result=_fmt(value), used=facts, operation=head if head in names else None)
    if steps:
        with symbolic.assuming(*facts) if facts else _nothing():
            ex.steps = derivation(text, names) if isinstance(expr, str) else []
    ex.seconds = time.perf_counter() - t0
    return ex


def _native(text: str) -> Tuple[str, Tuple[str, ...]]:
    """``text`` in layoutproof's notation: CuTe C++ types and prints, CuTe DSL prints
    (``?{div=8}``, ``1@0``) and Triton layouts rewritten (``layoutproof.interop``), with the
    assumptions their dynamic leaves carry."""
    if not any(c in text for c in "<?{@!") and ".make_" not in text:
        return text, ()
    from layoutproof.interop import rewrite_foreign

    out, facts = rewrite_foreign(text)
    basis = re.search(r"[(,]\s*-?\d+@\d+", out)
    if basis is not None:
        raise MalformedLayoutError(
            f"explain: {show(out)} has basis strides ({basis.group(0).lstrip('(,').strip()}), which the eval "
            "language does not write; where the layout they index is compact, write k@i as the "
            "offset of k steps along its mode i"
        )
    return out, facts


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


def _explain_error(
    text: str, e: LayoutError, calls: List[_Call], facts: Tuple[str, ...], want_repairs: bool, budget_s: float
) -> Explanation:
    undecided = isinstance(e, UndecidableConditionError)
    cond = getattr(e, "condition", None)
    cond_name = str(cond) if cond is not None else ""
    ex = Explanation(text, "undecided" if undecided else "refused", message=str(e))
    outer = calls[0] if calls else None
    site = calls[-1] if calls else None
    if site is not None:
        ex.operation = site.name
        ex.operands = tuple(_fmt(a) for a in site.args)
        ex.chain = tuple(_call_text(c.name, c.args) for c in calls)
    ex.rule = rule_of(e)
    ex.spec = CONDITIONS.get(ex.rule, "")
    ex.condition = cond_name
    if isinstance(e, UndecidableConditionError):
        ex.named = _named(str(e), ex.rule)
        formula = getattr(e, "expr", None)
        if formula is not None and (formula is True or formula is False or str(formula) in ("True", "False")):
            formula = None  # a constant: the symbolic walk itself cannot go on
        if "decided only by evaluation" in str(e):
            ex.settle = (
                "no assumption settles it symbolically: the symbolic derivation needs a condition that "
                "fails, yet the integer operation succeeds at some values -- substitute values for the "
                "symbols (Layout.subs) to decide it"
            )
        elif formula is not None:
            ex.assumptions = (cond_name,)
            ex.settle = f"assume {cond_name} (or its negation)"
        else:
            limit = re.search(r"([A-Za-z_.]*(?:LIMIT|BUDGET))\b", str(e))
            ex.settle = "no assumption on the operands settles it: it is decided by evaluation, past " + (
                f"the bound {limit.group(1)}; raise that bound" if limit else "a bound the message names"
            )
        if site is not None:
            _models(ex, e, site, facts)
        if want_repairs and outer is not None and ex.assumptions:
            ex.repairs = _assumption_repairs(outer, e, facts, budget_s)
        elif want_repairs and not ex.assumptions:
            ex.no_repairs = (
                "an undecided condition is settled by an assumption, and none on the operands settles it"
            )
        return ex
    ex.witness = e.witness if isinstance(e, InadmissibleError) else None
    if site is not None:
        ex.reproduction, pic_layout, mark, caption = reproduce(site, cond_name, ex.witness)
        if pic_layout is not None and _is_concrete(pic_layout):
            try:
                ex.picture = picture(pic_layout, mark, caption)
                ex.drawn = (pic_layout, mark)
            except LayoutError:  # a layout the drawing does not take (too large to draw, say)
                ex.picture = ""
    if want_repairs and outer is not None and outer.kwargs:
        ex.no_repairs = (
            f"{outer.name} was called with keyword arguments, which the repair search does not vary"
        )
    elif want_repairs and outer is not None and not _is_concrete(outer.args):
        ex.no_repairs = (
            f"the repair search varies layouts of integers; {outer.name}'s operands here are "
            + ", ".join(sorted({type(a).__name__ for a in outer.args}))
        )
    elif want_repairs and outer is not None:
        ex.repairs = find_repairs(outer, budget_s)
        if not ex.repairs and outer.name not in _post_ops():
            ex.no_repairs = (
                f"{outer.name} has no post-condition in layoutproof.verify to prove a repair by, so none "
                "is offered"
            )
    return ex


def _named(msg: str, rule: str) -> str:
    """The condition as the message names it in parentheses (``rule`` with its place,
    e.g. "shape divisibility of A's mode 0"); ``rule`` when it does not."""
    i = msg.find(f"({rule}") if rule else -1
    if i < 0:
        return rule
    depth = 0
    for j in range(i, len(msg)):
        depth += {"(": 1, ")": -1}.get(msg[j], 0)
        if depth == 0:
            return msg[i + 1 : j]
    return rule


def _post_ops() -> Tuple[str, ...]:
    from layoutproof.verify.post import OPERATIONS

    return tuple(OPERATIONS)


# ----------------------------------------------------------------------------- witness
def _extend(A: Layout, x: int) -> int:
    return int(A(x, extend=True))


def reproduce(call: _Call, condition: str, witness: Any) -> Tuple[Reproduction, Optional[Layout], Any, str]:
    """Re-evaluate the witness of ``condition`` at the operands of ``call``: the
    reproduction, and what to draw (a layout, the coordinate to mark, a caption)."""
    name, args = call.name, call.args
    try:
        if (
            name == "composition"
            and len(args) == 2
            and all(isinstance(a, Layout) for a in args)
            and _is_concrete(args)
        ):
            return _repro_composition(args[0], args[1], condition, witness)
        L = args[0] if args and isinstance(args[0], Layout) and _is_concrete(args[0]) else None
        direct_l = (
            "non-negative strides",
            "complement admissibility (stride chain)",
            "injectivity (non-overlapping modes)",
            "upcast stride divisibility",
        )
        if L is not None and type(witness) is int and 0 <= witness < L.size and condition in direct_l:
            y = int(L(witness))
            if condition == "non-negative strides":
                return Reproduction(y < 0, f"{name}: L({witness}) = {y} is negative"), L, witness, "L"
            if condition == "complement admissibility (stride chain)":
                return _repro_chain(L, witness)
            if condition == "injectivity (non-overlapping modes)":
                v = L.eval_all().tolist()
                other = [i for i, z in enumerate(v) if z == y and i != witness]
                txt = f"L({witness}) = {y}" + (f" = L({other[0]})" if other else "")
                return Reproduction(bool(other), txt + ": two coordinates share an offset"), L, witness, "L"
            if condition == "upcast stride divisibility" and len(args) > 1 and type(args[1]) is int:
                n = args[1]
                d = y - int(L(0))
                ok = d % n != 0 and n % d != 0 if d else False
                return (
                    Reproduction(ok, f"L({witness}) - L(0) = {d}: neither {d} nor {n} divides the other"),
                    L,
                    witness,
                    "L",
                )
        direct = _repro_other(name, args, condition, witness)
        if direct is not None:
            return direct
    except LayoutError:
        pass
    # no direct evaluation: the operation itself, run again, refuses with the same condition
    # and the same witness
    try:
        call.fn(*args, **call.kwargs)
        return Reproduction(False, f"{name} succeeds when run again"), None, None, ""
    except InadmissibleError as e2:
        same = e2.condition == condition and e2.witness == witness
        return (
            Reproduction(
                same,
                f"{name} refuses again: {e2.condition}"
                + (f" (witness {_fmt(e2.witness)})" if e2.witness is not None else "")
                + ("" if same else f", not {condition} (witness {_fmt(witness)})"),
            ),
            None,
            None,
            "",
        )
    except LayoutError as e2:
        return Reproduction(False, f"{name} raises {type(e2).__name__} when run again"), None, None, ""


def _rerun(run: Callable[[], Any], facts: Tuple[str, ...], condition: str, witness: Any) -> Reproduction:
    """The whole expression run again (no public call of the algebra to re-run alone)."""
    try:
        with symbolic.assuming(*facts) if facts else _nothing():
            run()
        return Reproduction(False, "the expression succeeds when run again")
    except InadmissibleError as e2:
        same = e2.condition == condition and e2.witness == witness
        return Reproduction(
            same,
            f"run again, it refuses again: {e2.condition}"
            + (f" (witness {_fmt(e2.witness)})" if e2.witness is not None else ""),
        )
    except LayoutError as e2:
        return Reproduction(False, f"run again, it raises {type(e2).__name__}")


def _path_get(x: Any, path: Any) -> Any:
    for k in path if isinstance(path, tuple) else ():
        x = x[k]
    return x


def _repro_other(
    name: str, args: Tuple[Any, ...], condition: str, w: Any
) -> Optional[Tuple[Reproduction, Optional[Layout], Any, str]]:
    """Direct evaluations of the witness for the conditions outside composition."""
    from layoutproof.arith import ArithTuple

    if condition == "integer strides" and args and isinstance(args[0], Layout) and w is not None:
        L = args[0]
        try:
            v = L(w)
        except LayoutError:
            return None
        return (
            Reproduction(
                isinstance(v, ArithTuple), f"L({_fmt(w)}) = {v}: a coordinate, not an integer offset"
            ),
            None,
            None,
            "",
        )
    if condition == "layout_add: equal sizes" and len(args) == 2 and all(isinstance(a, Layout) for a in args):
        A, B = args
        return Reproduction(A.size != B.size, f"size(A) = {A.size}, size(B) = {B.size}"), None, None, ""
    if (
        condition == "layout_add: the sum is a layout"
        and type(w) is int
        and len(args) == 2
        and all(isinstance(a, Layout) for a in args)
    ):
        A, B = args
        v = A.eval_all() + B.eval_all()
        rec, first = ops.recognize_layout_fn(v)
        lo = max(0, w - 3)
        shown = ", ".join(f"A({i}) + B({i}) = {int(v[i])}" for i in range(lo, w + 1))
        return (
            Reproduction(
                rec is None and first == w,
                f"i -> A(i) + B(i) agrees with no layout of size {A.size} on 0..{w} ({shown})",
            ),
            Layout(A.shape, A.stride),
            w,
            f"A; * marks {w}, where the sum stops being a layout",
        )
    if condition.startswith("common refinement: ") and isinstance(w, tuple) and len(args) == 2:
        a, b = (x.shape if isinstance(x, Layout) else x for x in args)
        try:
            x, y = _path_get(a, w), _path_get(b, w)
        except (IndexError, TypeError, LayoutError):
            return None
        if condition.endswith("ranks"):
            ok = isinstance(x, tuple) and isinstance(y, tuple) and len(x) != len(y)
            rx, ry = (len(t) if isinstance(t, tuple) else 1 for t in (x, y))
            txt = f"at mode {_fmt(w)}: {_fmt(x)} has rank {rx}, {_fmt(y)} rank {ry}"
        else:
            ok = raw_product(x) != raw_product(y)
            txt = f"at mode {_fmt(w)}: size({_fmt(x)}) = {raw_product(x)}, size({_fmt(y)}) = {raw_product(y)}"
        return Reproduction(ok, txt), None, None, ""
    if condition == "common coarsening: equal sizes" and len(args) == 2:
        a, b = (x.shape if isinstance(x, Layout) else x for x in args)
        pa, pb = raw_product(a), raw_product(b)
        return Reproduction(pa != pb, f"size({_fmt(a)}) = {pa}, size({_fmt(b)}) = {pb}"), None, None, ""
    if condition == "GF(2)-linearity" and type(w) is int and args and isinstance(args[0], Layout):
        L = args[0]
        if not 0 <= w < L.size or any(s & (s - 1) for s in L._flat()[0]):
            return None  # the bits of a 1-D coordinate are the index bits only for power-of-two extents
        bits = [1 << j for j in range(w.bit_length()) if w >> j & 1]
        xor = 0
        for b in bits:
            xor ^= int(L(b))
        y = int(L(w))
        return (
            Reproduction(
                xor != y,
                f"L({w}) = {y}, but the XOR of L at its bits ({', '.join(str(b) for b in bits)}) is {xor}",
            ),
            L,
            w,
            "L",
        )
    return None


def _repro_composition(
    A: Layout, B: Layout, condition: str, w: Any
) -> Tuple[Reproduction, Optional[Layout], Any, str]:
    fs, fd = B._flat()
    if type(w) is not int or not 0 <= w < B.size:
        return Reproduction(False, f"no witness coordinate ({w})"), B, None, "B"
    crd: List[int] = []
    p = 1
    for s in fs:
        crd.append((w // p) % s)
        p *= s
    nat = _fmt(_unflat(tuple(crd), B.shape)) if len(fs) > 1 else str(w)
    bx = int(B(w))
    if condition == "non-negative strides of B":
        return Reproduction(bx < 0, f"B({w}) = {bx} is negative: outside A's domain"), B, w, "B"
    if condition == "disjointness of B's modes in A":
        truth = _extend(A, bx)
        naive = sum(_extend(A, c * d) for c, d in zip(crd, fd))
        by_mode = make_layout(*[ops.composition(A, Layout(s, d)) for s, d in zip(fs, fd)])
        pic = Layout(_unflat(by_mode.shape, B.shape), _unflat(by_mode.stride, B.shape))
        return (
            Reproduction(
                truth != naive,
                f"at coordinate {w} = {nat} of B: A(B({w})) = A({bx}) = {truth}, but composing B mode by "
                f"mode gives {naive}",
            ),
            pic,
            w,
            f"B composed mode by mode (CuTe C++, PyCuTe, pycute); * marks {w}, where A(B({w})) = {truth}",
        )
    if condition in ("stride divisibility", "shape divisibility"):
        ks = [k for k, c in enumerate(crd) if c]
        k = ks[0] if len(ks) == 1 else 0
        n, r, j = fs[k], fd[k], crd[k]
        import numpy as np

        v = np.array([_extend(A, r * i) for i in range(n)], dtype=np.int64)
        rec, first = ops.recognize_layout_fn(v)
        nonlin = next((i for i in range(1, n) if int(v[i]) != i * int(v[1])), None)
        lo = max(0, j - 2)
        shown = ", ".join(f"A({r * i}) = {int(v[i])}" for i in range(lo, min(n, j + 2)))
        leaf = f"leaf {k} ({n}:{r}) of B" if len(fs) > 1 else f"B = {n}:{r}"
        where = f"j = {j} is where it stops being linear" if j == nonlin else f"it breaks at j = {j}"
        if first is not None and first != j:
            where += f"; no layout agrees with it on 0..{first}"
        return (
            Reproduction(
                rec is None and (first == j or nonlin == j),
                f"{leaf}: j -> A({r}*j) is the function of no layout of size {n}: {where} ({shown})",
            ),
            Layout(n, r),
            j,
            f"the leaf {n}:{r} of B; * marks j = {j}",
        )
    return Reproduction(False, f"no evaluation for {condition}"), B, w, "B"


def _unflat(flat: Any, profile: Any) -> Any:
    it = iter(flat if isinstance(flat, tuple) else (flat,))

    def go(p: Any) -> Any:
        if isinstance(p, tuple):
            return tuple(go(q) for q in p)
        return next(it)

    return go(profile)


def _repro_chain(L: Layout, w: int) -> Tuple[Reproduction, Optional[Layout], Any, str]:
    fs, fd = L._flat()
    pp = [1]
    for s in fs:
        pp.append(pp[-1] * s)
    modes = sorted((d, s, k) for k, (s, d) in enumerate(zip(fs, fd)) if s != 1 and d != 0)
    cur, d_w = 1, 0
    for d, s, k in modes:
        if pp[k] == w:
            d_w = d
            break
        cur = s * d
    ok = d_w > 0 and d_w % cur != 0
    small = sorted({int(x) for x in L.eval_all().tolist() if 0 <= x < d_w})
    missing = next((g for g in range(d_w) if g not in small), None)
    txt = f"L({w}) = {d_w} is not a multiple of {cur}, the extent the modes of smaller stride cover" + (
        f"; offset {missing} lies below it and is not in L's image, so C(1) = {missing}, and then "
        f"(L, C) is not injective"
        if missing is not None
        else ""
    )
    return Reproduction(ok, txt), L, w, "L"


# ----------------------------------------------------------------------------- picture
def picture(L: Layout, mark: Any, caption: str = "") -> str:
    """The offsets of ``L`` as CuTe's ``print_layout`` draws them, the cell of the 1-D
    coordinate ``mark`` written ``*v*``; past :data:`PICTURE_CELLS` a window around it.

    >>> print(picture(Layout((2, 3), (1, 2)), 3, "demo"))
    demo
    (2,3):(1,2)
           0   1   2
         +---+---+---+
      0  | 0 | 2 | 4 |
         +---+---+---+
      1  | 1 |*3*| 5 |
         +---+---+---+
    """
    D = L
    if type(L.shape) is tuple and L.rank > 2:
        D = group_layout(L, 1, L.rank)
    if type(D.shape) is not tuple or D.rank == 1:
        M, N = 1, D.size
    else:
        M, N = D[0].size, D[1].size
    m0, n0 = (mark % M, mark // M) if type(mark) is int else (0, 0)
    r0, r1, c0, c1 = 0, M, 0, N
    if M * N > PICTURE_CELLS:
        r0, r1 = max(0, m0 - 3), min(M, m0 + 4)
        c0, c1 = max(0, n0 - 3), min(N, n0 + 4)
    import numpy as np

    if M * N <= PICTURE_CELLS:
        grid = layout_grid(D)
    else:
        grid = np.array([[int(D(m + n * M)) for n in range(c0, c1)] for m in range(r0, r1)])
        grid = np.pad(grid, ((r0, 0), (c0, 0)))
    w = max(len(str(int(v))) for v in grid[r0:r1, c0:c1].ravel()) + 2
    out = [caption] if caption else []
    out.append(str(L) + (f"  (rows {r0}..{r1 - 1}, columns {c0}..{c1 - 1})" if M * N > PICTURE_CELLS else ""))
    out.append("      " + " ".join(f"{n:>{w - 1}} " for n in range(c0, c1)).rstrip())
    rule = "     +" + "+".join("-" * w for _ in range(c0, c1)) + "+"
    out.append(rule)
    for m in range(r0, r1):
        cells = []
        for n in range(c0, c1):
            v = str(int(grid[m, n]))
            cells.append(
                f"{'*' + v + '*':>{w}}" if (m, n) == (m0, n0) and type(mark) is int else f"{v:>{w - 1}} "
            )
        out.append(f"{m:>3}  |" + "|".join(cells) + "|")
        out.append(rule)
    return "\n".join(out)


def picture_svg(L: Layout, mark: Any) -> str:
    """``layout_svg`` of ``L`` (grouped to rank 2) with the cell of the 1-D coordinate
    ``mark`` filled red and of class ``"cell witness"``.

    >>> s = picture_svg(Layout((3, 2), (2, 3)), 5)
    >>> 'class="cell witness" data-row="2" data-col="1"' in s, s.count('fill="#f4a0a0"')
    (True, 1)
    """
    from layoutproof.draw import layout_svg

    D = group_layout(L, 1, L.rank) if type(L.shape) is tuple and L.rank > 2 else L
    svg = layout_svg(D, color="none")
    if type(mark) is not int:
        return svg
    M = D[0].size if type(D.shape) is tuple and D.rank == 2 else 1
    key = f'<g class="cell" data-row="{mark % M}" data-col="{mark // M}"'
    i = svg.find(key)
    if i < 0:
        return svg
    j = svg.find('fill="#ffffff"', i)
    svg = svg[:j] + 'fill="#f4a0a0"' + svg[j + len('fill="#ffffff"') :]
    return svg[:i] + key.replace('class="cell"', 'class="cell witness"') + svg[i + len(key) :]


# ----------------------------------------------------------------------------- repairs
def _admissible(fn: Callable[..., Any], name: str, args: Tuple[Any, ...]) -> Optional[Tuple[Any, str]]:
    """The value and the post-condition's status when ``fn(*args)`` is admissible and meets
    its post-condition, else None."""
    try:
        v = fn(*args)
    except LayoutError:
        return None
    try:
        r = postcondition(name, v, *args)
    except LayoutError:
        return None
    return (v, r.status) if r.status == "proved" else None


def _variants(call: _Call) -> Iterator[Tuple[float, str, str, str, Tuple[Any, ...]]]:
    """Candidate repairs ``(cost, kind, text, operation, args)``, cheapest first per kind."""
    name, args = call.name, call.args
    # 1. coalesce an operand first (same function, fewer modes)
    for i, a in enumerate(args):
        if isinstance(a, Layout):
            c = ops.coalesce(a)
            if str(c) != str(a):
                yield 1.0, "coalesce", f"coalesce operand {i + 1} first: {a} -> {c}", name, _put(args, i, c)
    # 2. a different operation that likely means what was wanted
    alt = {"logical_divide": ("zipped_divide", "tiled_divide"), "zipped_divide": ("logical_divide",)}
    if name in ("logical_divide", "zipped_divide") and len(args) == 2 and isinstance(args[1], Layout):
        T = args[1]
        s, _d = top_modes(T)
        A0 = args[0]
        fits = isinstance(A0, Layout) and len(s) <= A0.rank
        if fits:  # a tile larger than its mode would reach past the mode: not offered
            sa = top_modes(A0)[0]
            fits = all(type(t) is int and type(m) is int and t <= m for t, m in zip(_sizes(s), _sizes(sa)))
        if fits:
            yield (
                1.5,
                "operation",
                f"divide mode by mode with the tuple tiler {_fmt(s)} (shape only)",
                name,
                (args[0], s),
            )
    for other in alt.get(name, ()):
        yield 2.5, "operation", f"use {other} instead of {name}", other, args
    # the block tiled to the product's shape, its tiles in column-major order (tile_to_shape)
    if name in _PRODUCTS and len(args) == 2 and all(isinstance(a, Layout) for a in args):
        A, B = args
        r = max(A.rank, B.rank)
        ma: List[Any] = list(top_modes(A)[0]) + [1] * (r - A.rank)
        mb: List[Any] = list(top_modes(B)[0]) + [1] * (r - B.rank)
        trg = tuple(raw_product(a) * raw_product(b) for a, b in zip(ma, mb))
        yield (
            2.6,
            "operation",
            f"tile the block {A} to the shape {_fmt(trg)} with tile_to_shape (tiles in column-major order)",
            "tile_to_shape",
            (A, trg),
        )
    # the target of tile_to_shape rounded to whole blocks, down or up
    if (
        name == "tile_to_shape"
        and len(args) >= 2
        and isinstance(args[0], Layout)
        and isinstance(args[1], tuple)
    ):
        blk = _sizes(top_modes(args[0])[0])
        trg = args[1]
        if len(blk) <= len(trg) and all(type(t) is int for t in trg) and all(type(b) is int for b in blk):
            bs = blk + [1] * (len(trg) - len(blk))
            down = tuple(max(b, t // b * b) for t, b in zip(trg, bs))
            up = tuple(-(-t // b) * b for t, b in zip(trg, bs))
            for t2, kind in ((down, "shrink"), (up, "pad")):
                if t2 != trg:
                    rel = sum(abs(a - b) / b for a, b in zip(t2, trg))
                    yield (
                        (2.0 if kind == "pad" else 2.2) + rel,
                        kind,
                        f"{kind} the target {_fmt(trg)} to {_fmt(t2)}, whole blocks of {_fmt(tuple(bs))}",
                        name,
                        _put(args, 1, t2),
                    )
    # 1b. split or merge a mode: the same function, other modes (what by-mode operations see)
    for i, a in enumerate(args):
        if isinstance(a, Layout):
            for cost, kind, text, L2 in _regroupings(a):
                yield cost, kind, f"{text} of operand {i + 1}: {a} -> {L2}", name, _put(args, i, L2)
    # 3. change one extent (the nearest admissible value, smaller or larger)
    for i, a in enumerate(args):
        if isinstance(a, Layout):
            fs, fd = a._flat()
            for k, s in enumerate(fs):
                for t, kind in _near(s):
                    fs2 = fs[:k] + (t,) + fs[k + 1 :]
                    L2 = Layout(_unflat(fs2, a.shape), a.stride)
                    rel = abs(t - s) / s
                    yield (
                        2.0 + rel if kind == "pad" else 2.2 + rel,
                        kind,
                        f"{kind} extent {s} of operand {i + 1} (leaf {k}) to {t}",
                        name,
                        _put(args, i, L2),
                    )
        elif type(a) is int and i > 0:
            for t, kind in _near(a):
                if t == 1 or (name in ("upcast", "downcast") and t & (t - 1)):
                    continue  # a factor or tile of 1 changes nothing; element widths are powers of 2
                yield (
                    2.0 + abs(t - a) / a,
                    "pad" if kind == "pad" else "shrink",
                    f"use {t} instead of {a}",
                    name,
                    _put(args, i, t),
                )
        elif isinstance(a, tuple) and i > 0 and all(type(x) is int for x in a):
            for k, x in enumerate(a):
                for t, kind in _near(x):
                    yield (
                        2.0 + abs(t - x) / x,
                        kind,
                        f"tiler entry {k}: {t} instead of {x}",
                        name,
                        _put(args, i, a[:k] + (t,) + a[k + 1 :]),
                    )
    # 4. change one stride (the nearest admissible value)
    for i, a in enumerate(args):
        if isinstance(a, Layout):
            fs, fd = a._flat()
            for k, d in enumerate(fd):
                if fs[k] == 1 or d == 0:
                    continue
                near = {d + 1, d - 1, _next_pow2(abs(d))}
                if name == "upcast" and len(args) > 1 and type(args[1]) is int and args[1] > 1:
                    w = args[1]  # upcast wants a unit stride, or whole wide elements
                    near |= {1, w * max(1, round(d / w))}
                for t in sorted(near - {d, 0}, key=lambda t: abs(t - d)):
                    if t < 0 <= d:
                        continue
                    fd2 = fd[:k] + (t,) + fd[k + 1 :]
                    L2 = Layout(a.shape, _unflat(fd2, a.shape))
                    yield (
                        3.0 + abs(t - d) / max(1, abs(d)),
                        "stride",
                        f"stride {d} of operand {i + 1} (leaf {k}) -> {t}",
                        name,
                        _put(args, i, L2),
                    )
    # 5. reorder the top modes of an operand
    for i, a in enumerate(args):
        if isinstance(a, Layout) and type(a.shape) is tuple and 2 <= a.rank <= 4:
            s, d = top_modes(a)
            for perm in itertools.permutations(range(a.rank)):
                if list(perm) == sorted(perm):
                    continue
                L2 = Layout(tuple(s[p] for p in perm), tuple(d[p] for p in perm))
                yield (
                    4.0,
                    "reorder",
                    f"reorder the modes of operand {i + 1}: {a} -> {L2}",
                    name,
                    _put(args, i, L2),
                )


_PRODUCTS = (
    "logical_product",
    "blocked_product",
    "raked_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
)


def _sizes(modes: Any) -> List[Any]:
    return [raw_product(m) for m in (modes if isinstance(modes, tuple) else (modes,))]


def _smallest_factor(s: int) -> int:
    p = 2
    while p * p <= s:
        if s % p == 0:
            return p
        p += 1
    return s


def _splitter(p: int) -> Callable[[Any, Any], Tuple[Any, Any]]:
    def f(s: Any, d: Any) -> Tuple[Any, Any]:
        return (p, s // p), (d, p * d)

    return f


def _regroupings(L: Layout) -> Iterator[Tuple[float, str, str, Layout]]:
    """``L`` with one leaf split in two (``s:d`` -> ``(p,s/p):(d,p*d)``) or two sibling
    leaves merged (``(s,t):(d,s*d)`` -> ``s*t:d``): the same function, other modes."""
    leaves = L._flat()
    n = len(leaves[0])

    def rebuild(
        shape: Any, stride: Any, k: int, f: Callable[[Any, Any], Tuple[Any, Any]]
    ) -> Tuple[Any, Any, int]:
        if isinstance(shape, tuple):
            out_s, out_d = [], []
            for a, b in zip(shape, stride):
                x, y, k = rebuild(a, b, k, f)
                out_s.append(x)
                out_d.append(y)
            return tuple(out_s), tuple(out_d), k
        if k == 0:
            x, y = f(shape, stride)
            return x, y, -1
        return shape, stride, k - 1

    for k in range(n):
        s, d = leaves[0][k], leaves[1][k]
        if type(s) is int and s >= 4 and type(d) is int:
            p = _smallest_factor(s)
            if p < s:
                sh, st, _ = rebuild(L.shape, L.stride, k, _splitter(p))
                yield (
                    1.2,
                    "split",
                    f"split mode {s}:{d} (leaf {k}) into ({p},{s // p}):({d},{p * d})",
                    Layout(sh, st),
                )

    def merges(shape: Any, stride: Any) -> Iterator[Tuple[Any, Any, str]]:
        if not isinstance(shape, tuple):
            return
        for j in range(len(shape) - 1):
            a, b, x, y = shape[j], shape[j + 1], stride[j], stride[j + 1]
            if all(type(v) is int for v in (a, b, x, y)) and a > 1 and b > 1 and y == a * x:
                ns = shape[:j] + (a * b,) + shape[j + 2 :]
                nd = stride[:j] + (x,) + stride[j + 2 :]
                yield (
                    (ns[0] if len(ns) == 1 else ns),
                    (nd[0] if len(nd) == 1 else nd),
                    f"merge the modes ({a},{b}):({x},{y}) into {a * b}:{x}",
                )
        for j, (a, x) in enumerate(zip(shape, stride)):
            for ns, nd, text in merges(a, x):
                yield shape[:j] + (ns,) + shape[j + 1 :], stride[:j] + (nd,) + stride[j + 1 :], text

    for ns, nd, text in merges(L.shape, L.stride):
        yield 0.9, "merge", text, Layout(ns, nd)


def _next_pow2(x: int) -> int:
    p = 1
    while p < x:
        p *= 2
    return p


def _near(s: int, span: int = 64) -> List[Tuple[int, str]]:
    """Nearby extents: every value below (largest first) and above (smallest first), up to
    ``span`` away, interleaved by distance, so that the first admissible one each side is
    found first."""
    out: List[Tuple[int, str]] = []
    for k in range(1, span + 1):
        if s + k <= 2 * s + 64:
            out.append((s + k, "pad"))
        if s - k >= 1:
            out.append((s - k, "shrink"))
    return out


def _put(args: Tuple[Any, ...], i: int, v: Any) -> Tuple[Any, ...]:
    return args[:i] + (v,) + args[i + 1 :]


def find_repairs(call: _Call, budget_s: float = REPAIR_BUDGET_S, limit: int = MAX_REPAIRS) -> List[Repair]:
    """Repairs of the refused ``call``: each candidate of :func:`_variants` is run, and
    kept when admissible and its post-condition is proved; at most one per (kind, place),
    the nearest; ranked by cost."""
    names = _names()
    t_end = time.perf_counter() + budget_s
    found: Dict[Tuple[str, str], Repair] = {}
    seen: set = set()
    for cost, kind, text, op, args in _variants(call):
        if time.perf_counter() > t_end:
            break
        key = (kind, text.split(" to ")[0].split(" instead")[0].split(" -> ")[0])
        if key in found:
            continue
        expr = _call_text(op, args)
        if expr in seen:
            continue
        seen.add(expr)
        fn = names.get(op)
        if fn is None:
            continue
        got = _admissible(fn, op, args)
        if got is None:
            continue
        found[key] = Repair(kind, text, expr, _fmt(got[0]), round(cost, 3), got[1])
    out = sorted(found.values(), key=lambda r: r.cost)
    return out[:limit]


# ----------------------------------------------------------------------------- symbolic
def _sub(x: Any, values: Dict[str, int]) -> Any:
    if isinstance(x, Layout):
        return x.subs(**{k: v for k, v in values.items() if k in {s.name for s in _free(x)}})
    if isinstance(x, tuple):
        return tuple(_sub(e, values) for e in x)
    if hasattr(x, "free_symbols") and hasattr(x, "subs"):
        return x.subs({s: values[s.name] for s in x.free_symbols if s.name in values})
    return x


def _free(x: Any) -> set:
    if isinstance(x, Layout):
        fs, fd = x._flat()
        out: set = set()
        for v in fs + fd:
            out |= set(getattr(v, "free_symbols", ()))
        return out
    if isinstance(x, tuple):
        o: set = set()
        for e in x:
            o |= _free(e)
        return o
    return set(getattr(x, "free_symbols", ()))


def _models(ex: Explanation, e: UndecidableConditionError, site: _Call, facts: Tuple[str, ...]) -> None:
    """A model of the facts where the condition holds and one where it fails, found by
    search over small values and confirmed by running the integer operation."""
    c = e.expr
    if c is None:
        return
    syms = sorted(c.free_symbols | _free(site.args), key=lambda s: s.name)
    if not syms or len(syms) > 3:
        return
    fx = [symbolic.parse_expr(f) for f in facts]
    names = [s.name for s in syms]
    for vals in itertools.product(range(1, 130), repeat=len(syms)):
        if ex.holds is not None and ex.fails is not None:
            break
        asg = dict(zip(names, vals))
        if not all(symbolic.exact_value(f, asg) is True for f in fx):
            continue
        v = symbolic.exact_value(c, asg)
        if v is True and ex.holds is None:
            ex.holds = Model(asg, True, _run_at(site, asg))
        elif v is False and ex.fails is None:
            ex.fails = Model(asg, False, _run_at(site, asg))


def _run_at(site: _Call, asg: Dict[str, int]) -> str:
    try:
        r = site.fn(*_sub(site.args, asg), **site.kwargs)
        return f"{_call_text(site.name, _sub(site.args, asg))} = {_fmt(r)}"
    except InadmissibleError as e2:
        return f"{_call_text(site.name, _sub(site.args, asg))} refuses: {e2.condition} (witness {e2.witness})"
    except LayoutError as e2:
        return f"{_call_text(site.name, _sub(site.args, asg))}: {type(e2).__name__}"


def _assumption_repairs(
    outer: _Call, e: UndecidableConditionError, facts: Tuple[str, ...], budget_s: float
) -> List[Repair]:
    """The weakest assumption (the undecided condition itself, and what the operation asks
    for next under it), then simpler sufficient ones (``M % k == 0``, ``M >= k``), each
    proved by Z3 to imply the condition and checked by running the operation and its
    post-condition under it."""
    from layoutproof.symbolic import solver

    t_end = time.perf_counter() + max(budget_s, 2.0)
    out: List[Repair] = []
    need: List[str] = []
    err: Optional[UndecidableConditionError] = e
    value: Any = None
    for _ in range(4):  # the condition, and those it uncovers
        if err is None or err.expr is None:
            break
        need.append(str(err.condition))
        try:
            with symbolic.assuming(*facts, *need):
                value = outer.fn(*outer.args, **outer.kwargs)
            err = None
        except UndecidableConditionError as e2:
            err = e2
        except LayoutError:
            break
    if err is None and value is not None and len(need) > 1:
        for c in list(need):
            rest = [symbolic.parse_expr(x) for x in need if x != c]
            if (
                solver.prove(symbolic.parse_expr(c), [*rest, *[symbolic.parse_expr(f) for f in facts]]).status
                == "proved"
            ):
                need.remove(c)
    if err is None and value is not None:
        status = _post_under(outer, value, facts + tuple(need))
        if status == "proved":
            words = (
                "the condition the operation needs"
                if len(need) == 1
                else "the conditions it asks for, in turn"
            )
            out.append(
                Repair(
                    "assume",
                    f"assume {' and '.join(need)} ({words})",
                    _call_text(outer.name, outer.args),
                    _fmt(value),
                    0.0,
                    status,
                    tuple(need),
                )
            )
    # simpler candidates (x % k == 0, x >= k for the numbers of the conditions), each run with
    # its post-condition proved under it
    sp = symbolic.sympy_module()
    exprs = [c for c in (e.expr, err.expr if err is not None else None) if c is not None]
    nums = {int(abs(n)) for c in exprs for n in c.atoms(sp.Integer) if abs(n) > 1}
    nums |= {
        v
        for a in outer.args
        if isinstance(a, Layout)
        for v in a._flat()[0]
        if type(v) is int and 1 < v <= 4096
    }
    nums |= {
        v
        for a in outer.args
        for v in (a if isinstance(a, tuple) else (a,))
        if type(v) is int and 1 < v <= 4096
    }
    syms = sorted({x.name for c in exprs for x in c.free_symbols})
    for x in syms:
        for k in sorted(nums):
            for cand in (f"{x} % {k} == 0", f"{x} >= {k}"):
                if time.perf_counter() > t_end:
                    break
                try:
                    with symbolic.assuming(*facts, cand):
                        val = outer.fn(*outer.args, **outer.kwargs)
                except LayoutError:
                    continue
                st = _post_under(outer, val, facts + (cand,))
                if st == "proved":
                    out.append(
                        Repair(
                            "assume",
                            f"assume {cand}",
                            _call_text(outer.name, outer.args),
                            _fmt(val),
                            1.0,
                            st,
                            (cand,),
                        )
                    )
    # weakest first: a repair whose assumption Z3 proves to follow from another's is weaker;
    # of two that Z3 proves equivalent only the first (the simpler) stays
    fx = [symbolic.parse_expr(f) for f in facts]
    conj = [sp.And(*[symbolic.parse_expr(c) for c in r.assumptions]) for r in out]

    def implies(i: int, j: int) -> bool:
        return i == j or solver.prove(conj[j], [conj[i], *fx]).status == "proved"

    imp = {(i, j): implies(i, j) for i in range(len(out)) for j in range(len(out))}
    keep = [i for i in range(len(out)) if not any(imp[(i, j)] and imp[(j, i)] for j in range(i))]
    ranked: List[Tuple[float, Repair, bool]] = []
    for i in keep:
        weaker = sum(1 for j in keep if j != i and imp[(j, i)])
        ranked.append(
            (
                float(len(keep) - weaker) + (0.0 if out[i].cost == 0.0 else 0.5),
                out[i],
                weaker == len(keep) - 1,
            )
        )
    ranked.sort(key=lambda t: t[0])
    for cost, r, _w in ranked:
        r.cost = cost
    if len(ranked) > 1 and ranked[0][2]:
        ranked[0][1].text += " -- the weakest found: Z3 proves it follows from each of the others"
    out = [r for _c, r, _w in ranked]
    return out[:MAX_REPAIRS]


def _post_under(call: _Call, value: Any, facts: Tuple[str, ...]) -> str:
    try:
        with symbolic.assuming(*facts):
            return postcondition(call.name, value, *call.args, assume=facts).status
    except LayoutError as e:
        return f"error: {e}"


# ----------------------------------------------------------------------------- steps
def derivation(text: str, names: Optional[Dict[str, Callable[..., Any]]] = None) -> List[Step]:
    """The steps of the outermost divide, product or composition in ``text``, each
    intermediate layout computed (the complement, the concatenation, the composition, the
    regrouping); the last step's value is the expression's value."""
    from layoutproof.notation import parse_call

    names = names or _names()
    fn, args = parse_call(text, names)
    name = fn.__name__
    return _steps(name, list(args), names)


def _steps(name: str, args: List[Any], names: Dict[str, Callable[..., Any]]) -> List[Step]:
    S: List[Step] = []

    def step(op: str, xs: Sequence[Any], v: Any) -> Any:
        S.append(Step(op, tuple(_fmt(x) for x in xs), _fmt(v)))
        return v

    if name in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide") and len(args) == 2:
        L, T = args
        if isinstance(T, (tuple, list)):
            for i, t in enumerate(T):
                sub = Layout(top_modes(L)[0][i], top_modes(L)[1][i])
                S.extend(_steps("logical_divide", [sub, t], names))
        else:
            B = ops._tiler_layout(T, name) if not isinstance(T, Layout) else T
            C = step("complement", [B, L.size], ops.complement(B, L.size))
            BC = step("make_layout", [B, C], make_layout(B, C))
            step("composition", [L, BC], ops.composition(L, BC))
        if name != "logical_divide":
            step(name, args, names[name](*args))
        return S
    if (
        name
        in (
            "logical_product",
            "zipped_product",
            "tiled_product",
            "flat_product",
            "blocked_product",
            "raked_product",
        )
        and len(args) == 2
    ):
        A, T = args
        if isinstance(T, (tuple, list)) or name in ("blocked_product", "raked_product"):
            step(name, args, names[name](*args))
            return S
        B = ops._tiler_layout(T, name) if not isinstance(T, Layout) else T
        C = step("complement", [A, A.size * B.cosize], ops.complement(A, A.size * B.cosize))
        CB = step("composition", [C, B], ops.composition(C, B))
        step("make_layout", [A, CB], make_layout(A, CB))
        if name != "logical_product":
            step(name, args, names[name](*args))
        return S
    if name == "composition" and len(args) == 2 and all(isinstance(a, Layout) for a in args):
        A, B = args
        cA = step("coalesce", [A], ops.coalesce(A))
        fs, fd = B._flat()
        if len(fs) > 1:
            for s, d in zip(fs, fd):
                step("composition", [cA, Layout(s, d)], ops.composition(A, Layout(s, d)))
        step("composition", [A, B], ops.composition(A, B))
        return S
    step(name, args, names[name](*args))
    return S


# ----------------------------------------------------------------------------- text
def _text(ex: Explanation) -> str:
    out: List[str] = [f"expression: {ex.expression}"]
    if ex.status == "ok":
        out.append(f"result: {ex.result}")
        if ex.used:
            out.append(f"assuming: {', '.join(ex.used)}")
        if ex.steps:
            out.append("steps:")
            out += [f"  {i + 1}. {s.text}" for i, s in enumerate(ex.steps)]
        return "\n".join(out)
    out.append(f"{ex.status}: {ex.operation}({', '.join(ex.operands)})" if ex.operation else ex.status)
    if len(ex.chain) > 1:
        out.append("inside: " + " -> ".join(ex.chain))
    out.append(f"condition: {ex.condition}")
    if ex.spec:
        out.append(f"  ({ex.spec})")
    if ex.named and ex.named != ex.condition:
        out.append(f"  (named: {ex.named})")
    out.append(f"why: {ex.message}")
    if ex.witness is not None:
        out.append(f"witness: {ex.witness}")
    if ex.reproduction is not None:
        out.append(
            f"checked: {ex.reproduction.text}" + ("" if ex.reproduction.holds else " (NOT reproduced)")
        )
    if ex.picture:
        out += ["", ex.picture, ""]
    if ex.holds is not None:
        out.append(f"holds at {_vals(ex.holds.values)}: {ex.holds.confirmed}")
    if ex.fails is not None:
        out.append(f"fails at {_vals(ex.fails.values)}: {ex.fails.confirmed}")
    if ex.assumptions:
        out.append("to settle it, assume: " + " and ".join(ex.assumptions))
    elif ex.settle:
        out.append(f"to settle it: {ex.settle}")
    if ex.repairs:
        out.append("repairs (each run and its post-condition proved):")
        for i, r in enumerate(ex.repairs):
            out.append(f"  {i + 1}. [{r.kind}] {r.text}")
            out.append(f"     {r.expression} = {r.result}")
    elif ex.no_repairs:
        out.append(f"repairs: none -- {ex.no_repairs}")
    else:
        out.append("repairs: none found within the budget")
    return "\n".join(out)


def _vals(v: Dict[str, int]) -> str:
    return ", ".join(f"{k} = {x}" for k, x in sorted(v.items()))


# ----------------------------------------------------------------------------- CLI
def main(argv: Optional[List[str]] = None) -> int:
    """``layoutproof explain "<expr>" [--steps] [--emit dsl|cpp|python] [--assume C] [--json]``.
    Exit status: 0 the expression evaluates, 1 refused or undecided (explained), 2 errors."""
    import argparse
    import sys

    p = argparse.ArgumentParser(
        prog="layoutproof explain",
        description="Explain why an expression is refused (condition, witness, picture) and offer "
        "repairs that are run and proven first. Exit status: 0 ok, 1 refused or undecided, 2 errors.",
    )
    p.add_argument("expr", help='e.g. "composition((6,2):(1,7), (3,2):(2,3))"')
    p.add_argument("--steps", action="store_true", help="for a success: the derivation step by step")
    p.add_argument("--emit", choices=EMITS[1:], help="print the assumptions used or needed as code")
    p.add_argument(
        "--static",
        action="append",
        default=[],
        metavar="NAME",
        help="a symbol that is static in C++ (repeatable)",
    )
    p.add_argument(
        "--assume", action="append", default=[], metavar="COND", help='e.g. "M %% 64 == 0" (repeatable)'
    )
    p.add_argument("--json", action="store_true", help="print the explanation as JSON")
    p.add_argument("--svg", metavar="FILE", help="also write the picture, witness marked, as SVG to FILE")
    args = p.parse_args(argv)
    try:
        ex = explain(args.expr, steps=args.steps, assume=args.assume)
        if args.emit:
            text = ex.render(args.emit, static=args.static)
        elif args.json:
            text = json.dumps(ex.to_dict(), indent=2)
        else:
            text = ex.render("text")
        if args.svg:
            with open(args.svg, "w", encoding="utf-8") as fh:
                fh.write(ex.svg())
    except LayoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(text)
    return 0 if ex.status == "ok" else 1
