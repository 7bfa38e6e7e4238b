"""Index width of a user's layout: every offset and coordinate expression fits the index type.

CuTe computes a layout's offsets in the integer type of its shapes, strides and coordinates
(``int`` unless a stride or coordinate is 64-bit): ``crd2idx`` multiplies each leaf
coordinate by its stride and adds the products, a 1-D index is split into coordinates by
dividing by products of the shape, ``size`` and ``cosize`` are products and sums, a
composed layout adds its offset and applies its swizzle.  An intermediate value past the
type's range is undefined behaviour in C++ and a wrong address in practice (NVIDIA/cutlass
issues #2312, #3327, #3604).  :func:`index_width` names every such expression of a layout --
one :class:`Term` each -- and proves that all of them fit a ``bits``-wide signed (or
unsigned) integer over the whole domain, or refutes it with the overflowing expression, its
value and the coordinate (and, for symbolic layouts, the symbol values) where it is reached.

The expressions, in the order CuTe computes them:

* ``size``: the products of the shape's leaves (the 1-D index and the quotients of its
  division into coordinates lie below it);
* ``stride i``: each stride as stored;
* ``coordinate i * stride``: each leaf's product, ``(s_i - 1) * d_i`` at its extreme;
* ``partial sum`` of leaves: the running sums of ``crd2idx`` -- the left fold of a natural
  (tuple) coordinate, ``((t0 + t1) + t2)``, and the right fold of an integer coordinate
  split over a tuple shape, ``t0 + (t1 + t2)``, at every level of the shape;
* ``offset``: the whole sum; ``base + offset`` when the tensor has an offset;
* ``cosize``: ``L(size - 1) + 1`` as CuTe computes it;
* composed layouts ``A o o o B``: ``o + B(c)`` and the swizzle's output (an XOR changes only
  the swizzle's target bits: the output lies within ``x +- mask`` and below the next power of
  two above both), or the outer layout's own expressions.

Each leaf coordinate ranges over ``[0, s_i)`` independently of the others, so a sum of
leaf products is largest (smallest) with every positive-stride (negative-stride) leaf of
the sum at its last coordinate and every other leaf at 0: the extremes are exact, found
without enumerating the domain.  (Every leaf product can be 0, so every partial sum lies
within the range of the whole offset; the strides, ``size``, ``cosize`` and the additions
of composed layouts and bases are what can overflow although every offset fits.)

Symbolic extents and strides are bounded by the active assumptions
(:func:`layoutproof.symbolic.assuming`): each expression is proved by interval arithmetic
over the bounds the assumptions state (``M <= 2**20``), else decided by Z3 under its time
limit; a refutation comes with symbol values that satisfy every assumption (checked
exactly) and is confirmed on the concrete layout at those values; a symbol without an upper
bound leaves the answer unknown, naming it.  When a refuted expression's symbols are
bounded, :attr:`WidthReport.fits_if` gives, for each symbol, the largest upper bound under
which every expression fits (proved), the others keeping theirs.

>>> from layoutproof import Layout
>>> r = index_width(Layout((65384, 65384), (65384, 1)))
>>> r.status, r.cases
('refuted', 7)
>>> print(r.witness)
size: 65384*65384 reaches 4275067456 > 2147483647
>>> print(r.overflows[1])
coordinate 0 * stride: 65383*65384 reaches 4275002072 > 2147483647 at coordinate (65383, 0) (index 65383)
>>> index_width(Layout((65384, 65384), (65384, 1)), bits=64).status
'proved'
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple

from layoutproof import ComposedLayout, Layout, Swizzle
from layoutproof.errors import InadmissibleError, LayoutError, show
from layoutproof.layout import is_coordinate
from layoutproof.outcome import PROVED, REFUTED, UNKNOWN, Outcome

__all__ = ["WidthError", "Term", "Overflow", "WidthReport", "index_width", "type_range"]

#: composed layouts past this size are not evaluated to settle a swizzle's exact output
EVAL_LIMIT = 1 << 22


class WidthError(InadmissibleError):
    """Input the width analysis cannot take: a width outside 8..64 bits, a value that is
    not a layout, a stride that is not an integer.  ``condition`` names what is wrong,
    ``witness`` the value."""


def type_range(bits: int, signed: bool = True) -> Tuple[int, int]:
    """The values of a ``bits``-wide integer: ``[-2**(bits-1), 2**(bits-1) - 1]`` signed,
    ``[0, 2**bits - 1]`` unsigned.

    >>> type_range(32), type_range(8, signed=False)
    ((-2147483648, 2147483647), (0, 255))
    """
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


@dataclass(frozen=True)
class Term:
    """One expression the index arithmetic computes, with its range over the domain.

    Attributes:
        kind: ``"size"``, ``"stride"``, ``"product"``, ``"partial sum"``, ``"offset"``,
            ``"base + offset"``, ``"cosize"``, ``"composed offset"``, ``"swizzle"`` (or one
            of these prefixed ``"outer "``: the outer layout of a composed layout).
        name: the expression in words (``"coordinate 1 * stride"``).
        expr: its value at the extreme, as a formula (``"(K - 1)*M"``, ``"127*8"``).
        low, high: the least and greatest value over the domain (ints; SymPy expressions
            for a symbolic layout).
        exact: True when both are reached; False when they are bounds (a swizzle's output).
        leaves: for offsets, the flat leaves whose products it adds.
    """

    kind: str
    name: str
    expr: str
    low: Any
    high: Any
    exact: bool = True
    leaves: Optional[Tuple[int, ...]] = None

    def as_dict(self) -> Dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "expr": self.expr,
            "low": _jsonable(self.low),
            "high": _jsonable(self.high),
            "exact": self.exact,
            "leaves": list(self.leaves) if self.leaves is not None else None,
        }


@dataclass(frozen=True)
class Overflow:
    """An expression that leaves the type's range: ``value`` past ``limit``, reached at
    ``coordinate`` (natural, and ``index`` as a 1-D index) -- None for the size, a stride
    or cosize, which do not depend on it -- with ``values`` of the symbols (symbolic
    layouts)."""

    term: str
    expr: str
    value: int
    limit: int
    coordinate: Any = None
    index: Optional[int] = None
    values: Optional[Dict[str, int]] = None

    def __str__(self) -> str:
        rel = ">" if self.value > self.limit else "<"
        text = f"{self.term}: {self.expr} reaches {self.value} {rel} {self.limit}"
        if self.coordinate is not None:
            text += f" at coordinate {self.coordinate}"
            if self.index is not None:
                text += f" (index {self.index})"
        if self.values:
            text += (" with " if self.coordinate is not None else " at ") + ", ".join(
                f"{k} = {v}" for k, v in sorted(self.values.items())
            )
        return text

    def as_dict(self) -> Dict[str, Any]:
        return {
            "term": self.term,
            "expr": self.expr,
            "value": self.value,
            "limit": self.limit,
            "coordinate": _jsonable(self.coordinate),
            "index": self.index,
            "values": dict(self.values) if self.values else None,
        }


@dataclass(frozen=True, eq=False)
class WidthReport(Outcome):
    """The width analysis of one layout: an :class:`~layoutproof.outcome.Outcome` (proved:
    every expression in :attr:`terms` fits; refuted: ``witness`` is the first
    :class:`Overflow` in evaluation order, :attr:`overflows` all of them; unknown:
    ``reason``), with the type (``bits``, ``signed``), the :attr:`largest` expression and,
    for a refuted symbolic layout, :attr:`fits_if`: per symbol, the largest upper bound
    under which every expression fits (proved), the other symbols keeping their bounds."""

    bits: int = 32
    signed: bool = True
    terms: Tuple[Term, ...] = ()
    overflows: Tuple[Overflow, ...] = ()
    largest: Optional[Term] = None
    fits_if: Optional[Dict[str, int]] = None
    fits_note: str = ""

    @property
    def type_name(self) -> str:
        """``int32``, ``uint64``, ..."""
        return f"{'' if self.signed else 'u'}int{self.bits}"

    @property
    def range(self) -> Tuple[int, int]:
        """The type's least and greatest value."""
        return type_range(self.bits, self.signed)

    def table(self) -> str:
        """Every expression on one line: name, formula, range (``!`` marks those that do
        not fit; ``~`` bounds that are not reached)."""
        lo, hi = self.range
        out = []
        bad = {o.term for o in self.overflows}
        for t in self.terms:
            mark = "!" if t.name in bad else ("~" if not t.exact else " ")
            out.append(f"{mark} {t.name}: {t.expr} in [{t.low}, {t.high}]")
        out.append(f"  {self.type_name}: [{lo}, {hi}]")
        return "\n".join(out)

    def as_dict(self) -> Dict[str, Any]:
        d = self.outcome_dict()
        d["witness"] = self.witness.as_dict() if isinstance(self.witness, Overflow) else self.witness
        d.update(
            type=self.type_name,
            bits=self.bits,
            signed=self.signed,
            range=list(self.range),
            terms=[t.as_dict() for t in self.terms],
            overflows=[o.as_dict() for o in self.overflows],
            largest=self.largest.as_dict() if self.largest is not None else None,
            fits_if=dict(self.fits_if) if self.fits_if else None,
            fits_note=self.fits_note,
        )
        return d


def _jsonable(x: Any) -> Any:
    if x is None or type(x) in (int, bool, str):
        return x
    if type(x) is tuple:
        return [_jsonable(e) for e in x]
    return str(x)


# ----------------------------------------------------------------------------- input
def _is_sym(x: Any) -> bool:
    from layoutproof.layout import holds_symbols

    return holds_symbols(x)


def _read_input(layout: Any, base: Any) -> Tuple[Any, Any]:
    """``(layout, base)`` from a Layout, a ComposedLayout or a Tensor (its offset added)."""
    from layoutproof.tensor import Tensor

    if isinstance(layout, Tensor):
        off = layout.offset
        if not isinstance(off, int) and not _is_sym(off):
            raise WidthError(
                f"index_width: the tensor's offset must be an integer, got {show(off)}",
                condition="integer offset",
                witness=off,
            )
        base = base + off
        layout = layout.layout
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise WidthError(
            f"index_width takes a Layout, a ComposedLayout or a Tensor, got {type(layout).__name__} "
            f"{show(layout)}",
            condition="a layout",
            witness=layout,
        )
    for L in _plain_parts(layout):
        for d in L.flat_modes()[1]:
            if is_coordinate(d):
                raise WidthError(
                    f"index_width: {L} has the coordinate stride {d}; its offsets are not integers",
                    condition="integer strides",
                    witness=d,
                )
    return layout, base


def _plain_parts(L: Any) -> List[Layout]:
    if isinstance(L, ComposedLayout):
        out = [L.layout_b]
        if isinstance(L.layout_a, Layout):
            out.append(L.layout_a)
        return out
    return [L]


# ----------------------------------------------------------------------------- the expressions
def _leaf_tree(shape: Any, counter: List[int]) -> Any:
    if type(shape) is tuple:
        return tuple(_leaf_tree(s, counter) for s in shape)
    counter[0] += 1
    return counter[0] - 1


def _leaves_of(t: Any) -> Tuple[int, ...]:
    if type(t) is tuple:
        return tuple(i for c in t for i in _leaves_of(c))
    return (t,)


def _sum_groups(tree: Any) -> List[Tuple[int, ...]]:
    """The leaf sets of the running sums of ``crd2idx``, at every level: the prefixes
    (a tuple coordinate, left fold) and suffixes (an integer coordinate, right fold) of
    two or more modes of every tuple node."""
    out: List[Tuple[int, ...]] = []
    seen = set()

    def add(g: Tuple[int, ...]) -> None:
        if len(g) >= 2 and g not in seen:
            seen.add(g)
            out.append(g)

    def walk(t: Any) -> None:
        if type(t) is not tuple:
            return
        for c in t:
            walk(c)
        kids = [_leaves_of(c) for c in t]
        for k in range(2, len(kids) + 1):
            add(tuple(i for c in kids[:k] for i in c))
        for k in range(len(kids) - 2, -1, -1):
            add(tuple(i for c in kids[k:] for i in c))

    walk(tree)
    return sorted(out, key=lambda g: (len(g), g))


class _Arith:
    """Integer or SymPy arithmetic for the extremes of leaf products."""

    def __init__(self, symbolic: bool) -> None:
        self.symbolic = symbolic
        self.sp: Any = None
        if symbolic:
            import sympy

            self.sp = sympy

    def _sign(self, d: Any) -> int:
        """1 or -1 when the stride's sign is known (0 counts as either), else 0; a leaf's
        extent is at least 1, so ``(s - 1) * d`` has the sign of ``d``."""
        d = self.sp.sympify(d)
        if d.is_nonnegative:
            return 1
        if d.is_nonpositive:
            return -1
        return 0

    def pos(self, s: Any, d: Any) -> Any:
        """``max(0, (s - 1) * d)``."""
        p = (s - 1) * d
        if not self.symbolic:
            return max(0, p)
        sign = self._sign(d)
        return self.sp.sympify(p) if sign > 0 else self.sp.Integer(0) if sign < 0 else self.sp.Max(0, p)

    def neg(self, s: Any, d: Any) -> Any:
        """``min(0, (s - 1) * d)``."""
        p = (s - 1) * d
        if not self.symbolic:
            return min(0, p)
        sign = self._sign(d)
        return self.sp.Integer(0) if sign > 0 else self.sp.sympify(p) if sign < 0 else self.sp.Min(0, p)

    def total(self, xs: Sequence[Any]) -> Any:
        out: Any = 0
        for x in xs:
            out = out + x
        return out


def _product_text(s: Any, d: Any, symbolic: bool) -> str:
    if not symbolic:
        return f"{s - 1}*{d}"
    import sympy

    return str(sympy.factor_terms((s - 1) * d))


def _terms_of_layout(L: Layout, base: Any, prefix: str = "") -> List[Term]:
    """The expressions of a plain layout (and ``base + offset`` when ``base`` is not 0)."""
    fs, fd = L.flat_modes()
    symbolic = L.is_symbolic or _is_sym(base)
    ar = _Arith(symbolic)
    n = len(fs)
    tree = _leaf_tree(L.shape, [0])
    pos = [ar.pos(s, d) for s, d in zip(fs, fd)]
    neg = [ar.neg(s, d) for s, d in zip(fs, fd)]
    out: List[Term] = []
    # size: the prefix products of the shape (each one a loop bound or divisor)
    prod: Any = 1
    for k, s in enumerate(fs):
        prod = prod * s
        txt = str(prod) if symbolic else "*".join(str(x) for x in fs[: k + 1])
        if k == n - 1:
            if prefix:  # an outer layout's 1-D input is split by its modes' products only
                continue
            out.append(Term(prefix + "size", prefix + "size", txt, prod, prod))
        elif k >= 1:
            out.append(Term(prefix + "size", f"{prefix}shape product 0..{k}", txt, prod, prod))
    for i, d in enumerate(fd):
        out.append(Term(prefix + "stride", f"{prefix}stride {i}", str(d), d, d))
    for i, (s, d) in enumerate(zip(fs, fd)):
        nm = f"{prefix}coordinate {i} * stride"
        out.append(Term(prefix + "product", nm, _product_text(s, d, symbolic), neg[i], pos[i], leaves=(i,)))
    everything = tuple(range(n))
    for g in _sum_groups(tree):
        if g == tuple(sorted(everything)) and len(g) == n:
            continue
        nm = f"{prefix}partial sum of leaves {', '.join(str(i) for i in g)}"
        txt = " + ".join(_product_text(fs[i], fd[i], symbolic) for i in g)
        out.append(
            Term(
                prefix + "partial sum",
                nm,
                txt,
                ar.total([neg[i] for i in g]),
                ar.total([pos[i] for i in g]),
                leaves=g,
            )
        )
    lo, hi = ar.total(neg), ar.total(pos)
    txt = " + ".join(_product_text(s, d, symbolic) for s, d in zip(fs, fd))
    out.append(Term(prefix + "offset", prefix + "offset", txt, lo, hi, leaves=everything))
    if not (type(base) is int and base == 0):
        out.append(
            Term(
                prefix + "base + offset",
                prefix + "base + offset",
                f"{base} + offset",
                base + lo,
                base + hi,
                leaves=everything,
            )
        )
    if prefix:  # C++ takes a composed layout's cosize from its inner layout
        return out
    last = ar.total([(s - 1) * d for s, d in zip(fs, fd)]) + 1
    out.append(Term(prefix + "cosize", prefix + "cosize", "L(size - 1) + 1", last, last))
    return out


def _swizzle_bounds(sw: Swizzle, lo: Any, hi: Any, symbolic: bool) -> Tuple[Any, Any, int]:
    """Bounds of ``sw(x)`` for ``x`` in ``[lo, hi]``: an XOR changes only the target bits
    (``mask``), so ``|sw(x) - x| <= mask``; a nonnegative ``x`` stays nonnegative and below
    the next power of two above both ``x`` and ``mask``."""
    y, rs, ls = sw.xor_parts
    mask = (y >> rs) << ls
    if symbolic:
        import sympy

        low = sympy.Integer(0) if sympy.sympify(lo).is_nonnegative else lo - mask
        return low, hi + mask, mask
    if lo >= 0:
        top = (1 << max(int(hi).bit_length(), mask.bit_length())) - 1
        return max(0, lo - mask), min(hi + mask, top), mask
    return lo - mask, hi + mask, mask


def _terms(layout: Any, base: Any) -> List[Term]:
    """Every expression of ``layout``; ``base`` is added to its value (a tensor's offset:
    after a composed layout's outer function)."""
    if isinstance(layout, Layout):
        return _terms_of_layout(layout, base)
    B = layout.layout_b
    o = layout.offset
    out = _terms_of_layout(B, 0)
    off = next(t for t in out if t.kind == "offset")
    lo, hi = off.low + o, off.high + o
    if o != 0:
        out.append(Term("composed offset", "offset + B(c)", f"{o} + B(c)", lo, hi, leaves=off.leaves))
    A = layout.layout_a
    has_base = not (type(base) is int and base == 0)
    if isinstance(A, Swizzle):
        slo, shi, mask = _swizzle_bounds(A, lo, hi, B.is_symbolic)
        name = f"{A}(offset + B(c))"
        out.append(
            Term(
                "swizzle", name, f"at most (offset + B(c)) + {mask}", slo, shi, exact=False, leaves=off.leaves
            )
        )
        if has_base:
            out.append(
                Term(
                    "base + swizzle",
                    f"base + {name}",
                    f"{base} + {name}",
                    base + slo,
                    base + shi,
                    exact=False,
                )
            )
        return out
    outer = _terms_of_layout(A, base, prefix="outer ")
    out.extend(outer)
    return out


# ----------------------------------------------------------------------------- coordinates
def _unflatten(shape: Any, flat: List[int]) -> Any:
    it = iter(flat)

    def walk(s: Any) -> Any:
        if type(s) is tuple:
            return tuple(walk(x) for x in s)
        return next(it)

    return walk(shape)


def _extreme_coordinate(L: Layout, leaves: Sequence[int], up: bool) -> Tuple[Any, int]:
    """The natural coordinate (and 1-D index) where the sum of ``leaves``' products is
    greatest (``up``) or least: those leaves with a stride of that sign at their last
    coordinate, every other leaf at 0."""
    fs, fd = L.flat_modes()
    flat = [0] * len(fs)
    for i in leaves:
        if (fd[i] > 0) if up else (fd[i] < 0):
            flat[i] = fs[i] - 1
    idx, p = 0, 1
    for c, s in zip(flat, fs):
        idx += c * p
        p *= s
    return _unflatten(L.shape, flat), idx


# ----------------------------------------------------------------------------- concrete
def _concrete(
    layout: Any, base: int, bits: int, signed: bool
) -> Tuple[List[Term], List[Overflow], List[str]]:
    """Every expression, the overflows (confirmed) and the reasons of undecided ones."""
    tmin, tmax = type_range(bits, signed)
    terms = _terms(layout, base)
    inner = layout.layout_b if isinstance(layout, ComposedLayout) else layout
    overflows: List[Overflow] = []
    undecided: List[str] = []
    final: List[Term] = []
    A = layout.layout_a if isinstance(layout, ComposedLayout) else None
    if isinstance(A, Layout):
        off = next(t for t in terms if t.kind in ("offset", "composed offset") and t.leaves is not None)
        x_lo, x_hi = (
            (off.low, off.high)
            if layout.offset == 0
            else next((t.low, t.high) for t in terms if t.kind == "composed offset")
        )
        if x_lo < 0 or x_hi >= A.size:
            undecided.append(
                f"offset + B(c) ranges over [{x_lo}, {x_hi}], beyond the outer layout's domain [0, {A.size})"
            )
    for t in terms:
        if t.kind in ("swizzle", "base + swizzle") and (t.high > tmax or t.low < tmin):
            t, ov, why = _swizzle_exact(layout, base if t.kind == "base + swizzle" else 0, t, tmin, tmax)
            final.append(t)
            if ov is not None:
                overflows.append(ov)
            elif why:
                undecided.append(why)
            continue
        final.append(t)
        if t.high <= tmax and t.low >= tmin:
            continue
        up = t.high > tmax
        value, limit = (t.high, tmax) if up else (t.low, tmin)
        if t.kind.startswith("outer ") and t.leaves is not None:
            ov, why = _outer_reach(layout, base, t, up, value, limit)
            if ov is not None:
                overflows.append(ov)
            elif why:
                undecided.append(why)
            continue
        coord: Any = None
        index: Optional[int] = None
        if t.leaves is not None:
            coord, index = _extreme_coordinate(inner, t.leaves, up)
            _confirm(inner, t, coord, index, value, layout, base)
        overflows.append(Overflow(t.name, t.expr, int(value), limit, coord, index))
    return final, overflows, undecided


def _confirm(L: Layout, t: Term, coord: Any, index: int, value: int, layout: Any, base: int) -> None:
    """The extreme value, recomputed from the coordinate (the layout's own evaluation for
    the whole offset); a mismatch is an internal error, never a silent witness."""
    fs, fd = L.flat_modes()
    flat = []

    def walk(c: Any) -> None:
        if type(c) is tuple:
            for x in c:
                walk(x)
        else:
            flat.append(c)

    walk(coord)
    got = sum(flat[i] * fd[i] for i in t.leaves or ())
    if t.kind == "offset":
        got = L(index)
    elif t.kind == "base + offset":
        got = L(index) + base
    elif t.kind == "composed offset":
        got = L(index) + layout.offset
    if got != value:
        raise LayoutError(
            f"index_width: {t.name} is {got} at {coord}, not the extreme {value} (internal error)"
        )


def _swizzle_exact(
    layout: ComposedLayout, base: int, t: Term, tmin: int, tmax: int
) -> Tuple[Term, Optional[Overflow], str]:
    """The swizzle's exact output range by evaluation (its bound did not fit)."""
    if layout.size > EVAL_LIMIT:
        return (
            t,
            None,
            (
                f"{t.name} may reach {t.high} (a bound): the layout has {layout.size} points, more than "
                f"{EVAL_LIMIT} to evaluate"
            ),
        )
    v = [int(x) + base for x in layout.eval_all().tolist()]
    hi, lo = max(v), min(v)
    exact = Term(t.kind, t.name, "evaluated", lo, hi, exact=True, leaves=t.leaves)
    if hi <= tmax and lo >= tmin:
        return exact, None, ""
    up = hi > tmax
    i = v.index(hi if up else lo)
    from layoutproof.inttuple import idx2crd

    coord = idx2crd(i, layout.shape)
    return exact, Overflow(t.name, f"{layout}", hi if up else lo, tmax if up else tmin, coord, i), ""


def _outer_reach(
    layout: ComposedLayout, base: int, t: Term, up: bool, value: int, limit: int
) -> Tuple[Optional[Overflow], str]:
    """An outer layout's expression leaves the range somewhere in its domain: its values at
    the inputs ``offset + B(c)`` actually reach decide (``B`` evaluated): an overflow at
    one of them, or none (``(None, "")``); past the evaluation limit, undecided."""
    A, B, o = layout.layout_a, layout.layout_b, layout.offset
    a_coord, a_idx = _extreme_coordinate(A, t.leaves or (), up)
    if B.size > EVAL_LIMIT // 64:
        return None, (
            f"{t.name} reaches {value} at the outer coordinate {a_coord} (index {a_idx}); whether "
            f"offset + B(c) reaches it is not decided ({B.size} points, more than {EVAL_LIMIT // 64} "
            "to evaluate)"
        )
    from layoutproof.inttuple import idx2crd

    fs, fd = A.flat_modes()
    add = base if t.kind == "outer base + offset" else 0
    tmin, tmax = (limit, None) if not up else (None, limit)
    for i, x in enumerate(int(v) + o for v in B.eval_all().tolist()):
        rest, flat = x, []
        for s in fs:
            flat.append(rest % s)
            rest //= s
        v = add + sum(flat[k] * fd[k] for k in (t.leaves or ()))
        if (tmax is not None and v > tmax) or (tmin is not None and v < tmin):
            return Overflow(t.name, t.expr, v, limit, idx2crd(i, B.shape), i), ""
    return None, ""


def _largest(terms: Sequence[Term]) -> Optional[Term]:
    best: Optional[Term] = None
    bv = -1
    for t in terms:
        if type(t.high) is not int or type(t.low) is not int:
            continue
        m = max(abs(t.high), abs(t.low))
        if m > bv:
            best, bv = t, m
    return best


# ----------------------------------------------------------------------------- symbolic
_INF = float("inf")


def _fact_bounds(facts: Sequence[Any], syms: Sequence[Any]) -> Dict[Any, List[Any]]:
    """``{symbol: [low, high]}`` from the symbols' own assumptions and the facts that
    compare one symbol with a number (``M <= 2**20``, ``K >= 64``, ``N == 128``, and such
    facts inside ``and``); ``-inf`` / ``inf`` where none is stated."""
    import sympy as sp

    out: Dict[Any, List[Any]] = {}
    for x in syms:
        lo: Any = -_INF
        if x.is_positive:
            lo = 1
        elif x.is_nonnegative:
            lo = 0
        out[x] = [lo, _INF]

    def tighten(x: Any, lo: Any = None, hi: Any = None) -> None:
        if x not in out:
            return
        if lo is not None and lo > out[x][0]:
            out[x][0] = lo
        if hi is not None and hi < out[x][1]:
            out[x][1] = hi

    products: List[Tuple[Any, int, type, bool]] = []
    stack = list(facts)
    while stack:
        f = stack.pop()
        if isinstance(f, sp.And):
            stack.extend(f.args)
            continue
        if not isinstance(f, sp.core.relational.Relational) or isinstance(f, sp.Ne):
            continue
        a, b = f.lhs, f.rhs
        flip = False
        if a.is_Integer and not b.is_Integer:
            a, b, flip = b, a, True
        if isinstance(a, sp.Mul) and b.is_Integer:
            products.append((a, int(b), type(f), flip))
            continue
        if not (isinstance(a, sp.Symbol) and b.is_Integer):
            continue
        c = int(b)
        if isinstance(f, sp.Eq):
            tighten(a, c, c)
            continue
        kind = {
            sp.LessThan: "le",
            sp.StrictLessThan: "lt",
            sp.GreaterThan: "ge",
            sp.StrictGreaterThan: "gt",
        }.get(type(f))
        if kind is None:
            continue
        if flip:
            kind = {"le": "ge", "lt": "gt", "ge": "le", "gt": "lt"}[kind]
        if kind == "le":
            tighten(a, hi=c)
        elif kind == "lt":
            tighten(a, hi=c - 1)
        elif kind == "ge":
            tighten(a, lo=c)
        else:
            tighten(a, lo=c + 1)
    # c0 * x1**k1 * ... <= c with c0 > 0 and every x_i >= 1: each x_i <= c // (c0 * the
    # others' lower bounds)
    for m, c, rel, flip in products:
        le = (rel in (sp.LessThan, sp.StrictLessThan)) != flip
        if not le or rel not in (sp.LessThan, sp.StrictLessThan, sp.GreaterThan, sp.StrictGreaterThan):
            continue
        c = c - 1 if rel in (sp.StrictLessThan, sp.StrictGreaterThan) else c
        coef, factors = m.as_coeff_mul()
        pows = [f.as_base_exp() for f in factors]
        if coef <= 0 or not all(isinstance(x, sp.Symbol) and e.is_Integer and int(e) >= 1 for x, e in pows):
            continue
        if not all(x in out and out[x][0] >= 1 for x, _e in pows):
            continue
        for x, e in pows:
            rest = Fraction(int(coef.p), int(coef.q))
            for y, k in pows:
                rest *= Fraction(out[y][0]) ** (int(k) - (int(e) if y == x else 0))
            cap = int(Fraction(c) / rest)
            root = int(round(cap ** (1.0 / int(e)))) + 1
            while root > 0 and root ** int(e) > cap:
                root -= 1
            tighten(x, hi=root)
    return out


def _upper_facts(facts: Sequence[Any]) -> List[Tuple[Any, int]]:
    """``(e, c)`` for every fact ``e <= c`` (``e < c`` as ``e <= c - 1``, either side)."""
    import sympy as sp

    out: List[Tuple[Any, int]] = []
    stack = list(facts)
    while stack:
        f = stack.pop()
        if isinstance(f, sp.And):
            stack.extend(f.args)
            continue
        if isinstance(f, (sp.LessThan, sp.StrictLessThan)) and f.rhs.is_Integer:
            out.append((f.lhs, int(f.rhs) - (1 if isinstance(f, sp.StrictLessThan) else 0)))
        elif isinstance(f, (sp.GreaterThan, sp.StrictGreaterThan)) and f.lhs.is_Integer:
            out.append((f.rhs, int(f.lhs) - (1 if isinstance(f, sp.StrictGreaterThan) else 0)))
    return out


def _imul(a: Any, b: Any) -> Any:
    if a == 0 or b == 0:
        return 0
    return a * b


def _interval(e: Any, bounds: Dict[Any, List[Any]]) -> Tuple[Any, Any]:
    """A sound enclosure ``[lo, hi]`` of the SymPy integer expression ``e`` when every
    symbol lies within ``bounds`` (Fractions, ``-inf``/``inf``); ``(-inf, inf)`` for what
    it cannot bound."""
    import math

    import sympy as sp

    if isinstance(e, int):
        return e, e
    if e.is_Integer:
        return int(e), int(e)
    if e.is_Rational:
        q = Fraction(int(e.p), int(e.q))
        return q, q
    if isinstance(e, sp.Symbol):
        b = bounds.get(e)
        return (b[0], b[1]) if b is not None else (-_INF, _INF)
    if isinstance(e, sp.Add):
        lo: Any = 0
        hi: Any = 0
        for a in e.args:
            l1, h1 = _interval(a, bounds)
            lo, hi = lo + l1, hi + h1
        return lo, hi
    if isinstance(e, sp.Mul):
        lo, hi = 1, 1
        for a in e.args:
            l1, h1 = _interval(a, bounds)
            ps = [_imul(x, y) for x in (lo, hi) for y in (l1, h1)]
            lo, hi = min(ps), max(ps)
        return lo, hi
    if isinstance(e, sp.Pow) and e.exp.is_Integer and 0 <= int(e.exp) <= 64:
        l1, h1 = _interval(e.base, bounds)
        lo, hi = 1, 1
        for _ in range(int(e.exp)):
            ps = [_imul(x, y) for x in (lo, hi) for y in (l1, h1)]
            lo, hi = min(ps), max(ps)
        return lo, hi
    if isinstance(e, (sp.Max, sp.Min)):
        iv = [_interval(a, bounds) for a in e.args]
        f = max if isinstance(e, sp.Max) else min
        return f(i[0] for i in iv), f(i[1] for i in iv)
    if isinstance(e, (sp.floor, sp.ceiling)):
        l1, h1 = _interval(e.args[0], bounds)
        g = math.floor if isinstance(e, sp.floor) else math.ceil
        return (l1 if l1 in (-_INF, _INF) else g(l1)), (h1 if h1 in (-_INF, _INF) else g(h1))
    if isinstance(e, sp.Mod):
        l2, h2 = _interval(e.args[1], bounds)
        if l2 > 0 and h2 != _INF:
            return 0, h2 - 1
    return -_INF, _INF


class _Symbolic:
    """The decision of each expression of a symbolic layout under the active facts."""

    def __init__(self, layout: Any, base: Any, bits: int, signed: bool) -> None:
        import sympy as sp

        from layoutproof.symbolic import assumptions

        self.sp = sp
        self.layout, self.base, self.bits, self.signed = layout, base, bits, signed
        self.tmin, self.tmax = type_range(bits, signed)
        self.facts = assumptions()
        syms = set()
        for L in _plain_parts(layout):
            syms |= set(L.free_symbols)
        if _is_sym(base):
            syms |= set(sp.sympify(base).free_symbols)
        self.syms = sorted(syms, key=lambda s: s.name)
        self.bounds = _fact_bounds(self.facts, self.syms)
        self.upper_facts = _upper_facts(self.facts)
        self.methods: set = set()
        empty = [x.name for x in self.syms if self.bounds[x][0] > self.bounds[x][1]]
        if empty or (self.facts and _consistent(self.facts) is False):
            raise LayoutError(
                "index_width: the assumptions contradict each other"
                + (f" ({', '.join(empty)} has no value)" if empty else "")
                + "; every claim would follow from them"
            )

    def fits_by_interval(
        self, t: Term, bounds: Optional[Dict[Any, List[Any]]] = None
    ) -> Tuple[bool, Any, Any]:
        b = self.bounds if bounds is None else bounds
        lo, _ = _interval(self.sp.sympify(t.low), b)
        _, hi = _interval(self.sp.sympify(t.high), b)
        return lo >= self.tmin and hi <= self.tmax, lo, hi

    def fits_by_fact(self, t: Term) -> bool:
        """``t`` fits because a fact bounds an expression SymPy proves at least as large:
        ``e <= c`` with ``c`` in range and ``e - high >= 0`` (from the symbols' signs),
        and ``low >= 0`` or in range."""
        sp = self.sp
        low = sp.sympify(t.low)
        if low.is_number:
            lo_ok = int(low) >= self.tmin
        else:
            lo_ok = bool(low.is_nonnegative) or (
                self.tmin <= 0 and bool(_interval(low, self.bounds)[0] >= self.tmin)
            )
        if not lo_ok:
            return False
        high = sp.sympify(t.high)
        for e, c in self.upper_facts:
            if c <= self.tmax and sp.expand(e - high).is_nonnegative:
                return True
        return False

    def unbounded(self, t: Term) -> List[str]:
        names = set()
        for e in (t.low, t.high):
            for x in getattr(self.sp.sympify(e), "free_symbols", ()):
                b = self.bounds.get(x)
                if b is None or b[1] == _INF:
                    names.add(x.name)
        return sorted(names)

    def corner_overflow(self, t: Term, fixed: Optional[Dict[Any, int]] = None) -> Optional[Dict[str, int]]:
        """Symbol values at the corners of the bounds where ``t`` leaves the range and every
        fact holds (checked exactly), the worst first; None when no corner does."""
        from layoutproof.symbolic import complete_assignment, exact_value

        hi_e, lo_e = self.sp.sympify(t.high), self.sp.sympify(t.low)
        syms = sorted(hi_e.free_symbols | lo_e.free_symbols, key=lambda s: s.name)
        fixed = fixed or {}
        free = [x for x in syms if x not in fixed]
        if len(free) > 8 or any(self.bounds[x][1] == _INF or self.bounds[x][0] == -_INF for x in free):
            return None
        found = []
        for combo in itertools.product(
            *[sorted({int(self.bounds[x][0]), int(self.bounds[x][1])}) for x in free]
        ):
            asg = {x.name: int(v) for x, v in fixed.items()}
            asg.update({x.name: v for x, v in zip(free, combo)})
            vh, vl = exact_value(hi_e, asg), exact_value(lo_e, asg)
            if vh is None or vl is None:
                continue
            if vh > self.tmax:
                found.append((vh - self.tmax, asg))
            elif vl < self.tmin:
                found.append((self.tmin - vl, asg))
        for _gap, asg in sorted(found, key=lambda p: -p[0]):
            full = complete_assignment(asg, self.syms, self.facts)
            if full is not None:
                return full
        return None

    def z3_overflow(self, t: Term) -> Tuple[Optional[bool], Optional[Dict[str, int]], str]:
        """Z3 under the facts: ``(True, None, "")`` proved; ``(False, values, "")`` an
        overflow at confirmed values; ``(None, values?, reason)`` undecided."""
        from layoutproof.symbolic import complete_assignment, decide, exact_value

        sp = self.sp
        reason = ""
        cex = None
        for _e, claim in (
            (t.high, sp.Le(sp.sympify(t.high), self.tmax)),
            (t.low, sp.Ge(sp.sympify(t.low), self.tmin)),
        ):
            if claim is sp.true:
                continue
            if claim is sp.false:
                return None, None, "the expression is constant and out of range"
            d = decide(claim)
            self.methods.add(d.method)
            if d.value is True:
                continue
            if d.counterexample:
                full = complete_assignment(d.counterexample, self.syms, self.facts)
                if full is not None and exact_value(claim, full) is False:
                    return False, full, ""
            cex = cex or d.counterexample
            reason = reason or (d.reason or "not implied by the assumptions")
        if reason:
            return None, cex, reason
        return True, None, ""


def _consistent(facts: Sequence[Any]) -> Any:
    from layoutproof.symbolic import get_timeout
    from layoutproof.symbolic.solver import facts_consistent

    return facts_consistent(facts, timeout_s=get_timeout() / 1000.0)


def _substituted(layout: Any, base: Any, values: Dict[str, int]) -> Tuple[Any, int]:
    import sympy as sp

    if isinstance(layout, ComposedLayout):
        B = layout.layout_b.subs(values)
        A = layout.layout_a.subs(values) if isinstance(layout.layout_a, Layout) else layout.layout_a
        lay: Any = ComposedLayout(A, layout.offset, B)
    else:
        lay = layout.subs(values)
    if _is_sym(base):
        b = sp.sympify(base).subs({sp.Symbol(k, integer=True, positive=True): v for k, v in values.items()})
        base = int(b)
    return lay, int(base)


def _symbolic(
    layout: Any, base: Any, bits: int, signed: bool
) -> Tuple[List[Term], List[Overflow], List[str], str, Optional[Dict[str, int]], str, Optional[Term]]:
    S = _Symbolic(layout, base, bits, signed)
    terms = _terms(layout, base)
    overflows: List[Overflow] = []
    undecided: List[str] = []
    concrete_cache: Dict[Tuple[Tuple[str, int], ...], Dict[str, Overflow]] = {}

    def confirm(t: Term, values: Dict[str, int]) -> Optional[Overflow]:
        key = tuple(sorted(values.items()))
        if key not in concrete_cache:
            lay, b = _substituted(layout, base, values)
            _t, ovs, _u = _concrete(lay, b, bits, signed)
            concrete_cache[key] = {o.term: o for o in ovs}
        ov = concrete_cache[key].get(t.name)
        if ov is None:
            return None
        return Overflow(
            ov.term, t.expr, ov.value, ov.limit, ov.coordinate, ov.index, dict(sorted(values.items()))
        )

    for t in terms:
        ok, _lo, _hi = S.fits_by_interval(t)
        if ok or S.fits_by_fact(t):
            S.methods.add("interval")
            continue
        values = S.corner_overflow(t)
        if values is not None:
            ov = confirm(t, values)
            if ov is not None:
                S.methods.add("exact")
                overflows.append(ov)
                continue
        free = S.unbounded(t)
        mentioned = {x.name for f in S.facts for x in f.free_symbols}
        if free and not mentioned & set(free):  # no fact bounds them: nothing for Z3 to prove
            verdict, cex, why = None, None, ""
        else:
            verdict, cex, why = S.z3_overflow(t)
        if verdict is True:
            continue
        if verdict is False and cex is not None and not free:
            ov = confirm(t, cex)
            if ov is not None:
                overflows.append(ov)
                continue
            why = "the solver's overflow is not confirmed on the concrete layout"
        if free:
            eg = f" (e.g. assuming('{free[0]} <= 2**20'))"
            verb = "is" if len(free) == 1 else "are"
            msg = (
                f"{t.name} ({t.expr}): {', '.join(free)} {verb} unbounded in the assumptions: "
                f"assume an upper bound{eg}"
            )
            if cex:
                msg += "; it overflows at " + ", ".join(f"{k} = {v}" for k, v in sorted(cex.items()))
        else:
            msg = f"{t.name} ({t.expr}): {why}"
        undecided.append(msg)
    fits: Optional[Dict[str, int]] = None
    note = ""
    if overflows and not undecided:
        fits, note = _weakest_bounds(S, terms)
    method = "+".join(sorted(m for m in S.methods if m)) or "interval"
    return terms, overflows, undecided, method, fits, note, _largest_symbolic(S, terms)


def _largest_symbolic(S: _Symbolic, terms: Sequence[Term]) -> Optional[Term]:
    """The expression with the greatest magnitude bound under the assumptions (None when
    an unbounded symbol leaves every bound infinite)."""
    best: Optional[Term] = None
    bv: Any = -1
    for t in terms:
        _ok, lo, hi = S.fits_by_interval(t)
        m = max(abs(lo), abs(hi))
        if m == _INF:
            return None
        if m > bv:
            best, bv = t, m
    return best


def _weakest_bounds(S: _Symbolic, terms: Sequence[Term]) -> Tuple[Optional[Dict[str, int]], str]:
    """Per symbol with finite bounds: the largest upper bound under which interval
    arithmetic proves every expression fits (the others keeping their bounds), and
    whether one more overflows (a corner that satisfies the facts, checked exactly)."""
    out: Dict[str, int] = {}
    notes: List[str] = []
    for x in S.syms:
        lo, hi = S.bounds[x]
        if hi == _INF or lo == -_INF:
            continue
        lo, hi = int(lo), int(hi)

        def fits(v: int, x: Any = x, lo: int = lo) -> bool:
            b = {k: list(v2) for k, v2 in S.bounds.items()}
            b[x] = [lo, v]
            return all(S.fits_by_interval(t, b)[0] for t in terms)

        if not fits(lo):
            continue
        a, z = lo, hi
        while a < z:
            m = (a + z + 1) // 2
            if fits(m):
                a = m
            else:
                z = m - 1
        if a >= hi:
            continue
        out[x.name] = a
        tight = ""
        for t in terms:
            if t.high is None:
                continue
            v = S.corner_overflow(t, fixed={x: a + 1})
            if v is not None:
                tight = (
                    f"; {x.name} = {a + 1} overflows ({t.name} at "
                    + ", ".join(f"{k} = {w}" for k, w in sorted(v.items()))
                    + ")"
                )
                break
        notes.append(f"{x.name} <= {a} makes every expression fit (proved){tight}")
    return (out or None), "; ".join(notes)


# ----------------------------------------------------------------------------- the analysis
def index_width(layout: Any, *, bits: int = 32, signed: bool = True, base: Any = 0) -> WidthReport:
    """Prove that every offset and coordinate expression of ``layout`` fits a ``bits``-wide
    integer, or name the one that does not.

    Args:
        layout: a Layout, a ComposedLayout (swizzled or with an outer layout) or a Tensor
            (its offset is added); symbolic extents and strides allowed, bounded by the
            active :func:`layoutproof.symbolic.assuming` facts.
        bits: the width of the index type, 8 to 64 (32: ``int``, 64: ``int64_t``).
        signed: a signed type (``int``) or an unsigned one.
        base: an offset added to every value (a tile's start inside its tensor); an
            integer or a SymPy expression.

    Returns a :class:`WidthReport`: proved (every expression fits for every coordinate and
    every admitted value of the symbols), refuted (``witness``: the first :class:`Overflow`
    in evaluation order, confirmed on the concrete layout), or unknown with the reason.
    Bad input raises :class:`WidthError`.
    """
    t0 = time.perf_counter()
    if type(bits) is not int or not 8 <= bits <= 64:
        raise WidthError(
            f"index_width: bits must be an integer from 8 to 64, got {show(bits)}",
            condition="bits in 8..64",
            witness=bits,
        )
    if type(signed) is not bool:
        raise WidthError(
            f"index_width: signed must be True or False, got {show(signed)}",
            condition="signed",
            witness=signed,
        )
    if type(base) is not int and not _is_sym(base):
        from layoutproof.inttuple import is_int

        if not is_int(base):
            raise WidthError(
                f"index_width: base must be an integer, got {show(base)}",
                condition="integer base",
                witness=base,
            )
        base = int(base)
    layout, base = _read_input(layout, base)
    tname = f"{'' if signed else 'u'}int{bits}"
    stmt = (
        f"every index expression of {layout}"
        + (f" (base {base})" if not (type(base) is int and base == 0) else "")
        + f" fits {tname}"
    )
    symbolic = any(L.is_symbolic for L in _plain_parts(layout)) or _is_sym(base)
    if symbolic and isinstance(layout, ComposedLayout) and isinstance(layout.layout_a, Layout):
        return WidthReport(
            UNKNOWN,
            stmt,
            "interval",
            seconds=time.perf_counter() - t0,
            reason="a symbolic composed layout with an outer layout: substitute values (Layout.subs)",
            bits=bits,
            signed=signed,
        )
    fits: Optional[Dict[str, int]] = None
    note = ""
    if symbolic:
        from layoutproof.symbolic import assumptions, pretty

        terms, overflows, undecided, method, fits, note, largest = _symbolic(layout, base, bits, signed)
        facts = ", ".join(pretty(f) for f in assumptions())
        scope = "every coordinate and every value of the symbols" + (
            f" with {facts}" if facts else " (no assumptions)"
        )
    else:
        terms, overflows, undecided = _concrete(layout, base, bits, signed)
        method = "exact"
        largest = _largest(terms)
        scope = f"every coordinate of the domain ({layout.size} points)"
    common: Dict[str, Any] = dict(
        scope=scope,
        cases=len(terms),
        bits=bits,
        signed=signed,
        terms=tuple(terms),
        overflows=tuple(overflows),
        largest=largest,
        fits_if=fits,
        fits_note=note,
    )
    seconds = time.perf_counter() - t0
    if overflows:
        return WidthReport(REFUTED, stmt, method, seconds=seconds, witness=overflows[0], **common)
    if undecided:
        return WidthReport(UNKNOWN, stmt, method, seconds=seconds, reason=undecided[0], **common)
    return WidthReport(PROVED, stmt, method, seconds=seconds, **common)
