"""The primitive claims every check is made of, in two engines with one interface.

* :class:`Concrete` checks each primitive at once, exhaustively with numpy, and raises
  :class:`Fail` with a :class:`~layoutproof.verify.result.Counterexample` at the first
  coordinate where it does not hold.
* :class:`Symbolic` turns each primitive into SymPy claims over fresh coordinate symbols
  (collected in ``claims``), to be proved by SymPy or Z3; structural facts (ranks,
  nesting) are decided at once, as in the concrete engine.

The post-conditions (:mod:`layoutproof.verify.post`) and functional equality are written
once against this interface.

Primitives: ``require`` (a structural fact), ``same_shape``, ``same_function`` (same size,
same value at every coordinate), ``composes`` (``R(c) == A(B(c))`` over B's domain, A
extended past its size along its last mode, and B compatible with R), ``complement_ok``,
``right_inverse_ok``, ``left_inverse_ok``, ``image_equal``.
"""

from __future__ import annotations

from typing import Any, List, NoReturn, Optional, Tuple

from layoutproof.errors import LayoutError
from layoutproof.inttuple import raw_flatten, raw_product
from layoutproof.layout import Layout, flatten_layout, fmt_htuple, layout_arg, make_layout
from layoutproof.ops import compatible
from layoutproof.symbolic import decide

from ._concrete import EXHAUSTIVE_LIMIT, is_sym, lifted, natural, py, size_of, values
from .result import Counterexample

__all__ = ["Fail", "NotExpressible", "TooLarge", "Concrete", "Symbolic", "as_layout"]


class Fail(Exception):
    """A primitive does not hold: ``counterexample`` says where."""

    def __init__(self, counterexample: Counterexample) -> None:
        super().__init__(str(counterexample))
        self.counterexample = counterexample


class NotExpressible(LayoutError):
    """The claim cannot be put to a solver (the symbolic engine): check it bounded."""


class TooLarge(LayoutError):
    """A concrete domain beyond :data:`EXHAUSTIVE_LIMIT` elements."""


# ----------------------------------------------------------------------------- layout helpers
def as_layout(x: Any) -> Any:
    """A tiler or shape argument as a layout (an int ``n`` is ``n:1``); swizzled and
    composed layouts pass as they are."""
    return x if lifted(x) else layout_arg(x, "verify")


def _w(what: str) -> str:
    """The prefix of a message about part ``what`` of a claim ("" for the whole claim)."""
    return f"{what}: " if what else ""


def _flat_modes(L: Layout) -> Tuple[tuple, tuple]:
    return raw_flatten(L.shape), raw_flatten(L.stride)


def _flat_leaves(L: Layout) -> List[Layout]:
    """The flat modes of ``L``, each as a rank-1 layout ``s:d`` (built from ``L``'s own
    leaves: nothing to validate again)."""
    return list(flatten_layout(L))


def fail(
    detail: Optional[str] = None,
    *,
    at: Optional[int] = None,
    of: Any = None,
    lhs: Any = None,
    rhs: Any = None,
) -> NoReturn:
    """Raise :class:`Fail`: the claim does not hold -- ``detail`` says which part; ``at``,
    when given, is the 1-D coordinate of ``of``'s domain where it fails (its natural
    coordinate is added); ``lhs`` and ``rhs`` are the two values that differ."""
    natural_at = None if at is None else natural(at, of)
    raise Fail(Counterexample(coordinate=at, natural=natural_at, lhs=lhs, rhs=rhs, detail=detail))


class _Engine:
    """What both engines do alike: a structural fact is decided at once."""

    def require(self, ok: bool, detail: str) -> None:
        if not ok:
            fail(detail)


# ----------------------------------------------------------------------------- the concrete engine
class Concrete(_Engine):
    """Exhaustive numpy checks; raises :class:`Fail` at the first failure."""

    symbolic = False

    def _guard(self, *objs: Any) -> None:
        for o in objs:
            n = size_of(o)
            if type(n) is int and n > EXHAUSTIVE_LIMIT:
                raise TooLarge(f"a domain of {n} elements (exhaustive limit {EXHAUSTIVE_LIMIT})")

    def same_shape(self, a: Any, b: Any, what: str) -> None:
        if a != b:
            detail = f"{_w(what)}shape {fmt_htuple(a)} != {fmt_htuple(b)}"
            fail(detail, lhs=a, rhs=b)

    def same_value(self, a: Any, b: Any, what: str) -> None:
        if a != b:
            fail(what or "the values differ", lhs=a, rhs=b)

    def same_function(self, X: Any, Y: Any, what: str) -> None:
        nx, ny = size_of(X), size_of(Y)
        if nx != ny:
            fail(f"{_w(what)}sizes differ", lhs=nx, rhs=ny)
        self._guard(X)
        vx, vy = values(X), values(Y)
        k = _first_diff(vx, vy)
        if k is not None:
            fail(what or None, at=k, of=X, lhs=py(vx[k]), rhs=py(vy[k]))

    def composes(self, R: Any, A: Any, B: Layout, what: str) -> None:
        if not compatible(B.shape, R.shape):
            fail(
                f"{_w(what)}B's shape {fmt_htuple(B.shape)} is not compatible with R's shape "
                f"{fmt_htuple(R.shape)}"
            )
        self._guard(B, R)
        import numpy as np

        x = values(B)
        if len(x) and x.min() < 0:
            k = int(np.flatnonzero(x < 0)[0])
            fail(f"{_w(what)}B(c) = {py(x[k])} is outside A's domain", at=k, of=B, rhs=py(x[k]))
        want = _ext_values(A, x)
        got = values(R)
        at = _first_diff(got, want)
        if at is not None:
            fail(f"{_w(what)}R(c) != A(B(c))", at=at, of=B, lhs=py(got[at]), rhs=py(want[at]))

    def complement_ok(self, C: Layout, L: Layout, M: Any, what: str) -> None:
        import numpy as np

        fs, fd = _flat_modes(L)
        keep = [k for k in range(len(fs)) if fs[k] != 1 and fd[k] != 0]
        for k in keep:
            if fd[k] < 0:
                fail(f"{_w(what)}{L} has the negative stride {fd[k]}; no complement exists")
        leaves = _flat_leaves(L)
        X = make_layout(*(leaves[k] for k in keep), *_flat_leaves(C))
        self._guard(X)
        v = values(X)
        K = len(v)
        order = np.argsort(v, kind="stable")
        sv = v[order]
        dup = np.flatnonzero(sv[1:] == sv[:-1]) if K > 1 else np.array([], dtype=np.int64)
        if len(dup):
            a, b = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
            fail(
                f"{_w(what)}(L, C) = {X} is not injective: coordinates {a} and {b} both give {py(v[b])}",
                at=b,
                of=X,
                lhs=py(v[b]),
            )
        if K and (sv[0] < 0 or sv[-1] >= K):
            k = int(order[0]) if sv[0] < 0 else int(order[-1])
            fail(
                f"{_w(what)}(L, C) = {X} does not map onto [0, {K}): it reaches {py(v[k])}",
                at=k,
                of=X,
                lhs=py(v[k]),
            )
        vc = values(C)
        if len(vc) > 1:
            bad = np.flatnonzero(vc[1:] <= vc[:-1])
            if len(bad):
                k = int(bad[0]) + 1
                fail(
                    f"{_w(what)}C = {C} is not ordered: C({k}) <= C({k - 1})",
                    at=k,
                    of=C,
                    lhs=py(vc[k]),
                    rhs=py(vc[k - 1]),
                )
        ext = max([fs[k] * fd[k] for k in keep], default=1)
        want = -(-M // ext) * ext
        if K != want:
            fail(
                f"{_w(what)}(L, C) fills [0, {K}), not [0, {M}) rounded up to a multiple of {ext}",
                lhs=K,
                rhs=want,
            )

    def right_inverse_ok(self, R: Layout, L: Layout, what: str) -> None:
        import numpy as np

        self._guard(R, L)
        vr = values(R)
        n = size_of(L)
        _within(vr, n, R, f"{_w(what)}R(i)", f"L's domain [0, {n})")
        got = values(L)[vr.astype(np.int64)]
        want = np.arange(len(vr), dtype=np.int64)
        at = _first_diff(got, want)
        if at is not None:
            fail(f"{_w(what)}L(R(i)) != i", at=at, of=R, lhs=py(got[at]), rhs=at)

    def left_inverse_ok(self, R: Layout, L: Layout, what: str) -> None:
        import numpy as np

        self._guard(R, L)
        vl = values(L)
        n = size_of(R)
        _within(vl, n, L, f"{_w(what)}L(i)", f"R's domain [0, {n})")
        back = values(R)[vl.astype(np.int64)]
        injective = len(np.unique(vl)) == len(vl)
        if injective:
            want = np.arange(len(vl), dtype=np.int64)
            at = _first_diff(back, want)
            if at is not None:
                fail(f"{_w(what)}R(L(i)) != i", at=at, of=L, lhs=py(back[at]), rhs=at)
            return
        _within(back, len(vl), L, f"{_w(what)}R(L(i))", "L's domain")
        again = vl[back.astype(np.int64)]
        at = _first_diff(again, vl)
        if at is not None:
            fail(f"{_w(what)}L(R(L(i))) != L(i)", at=at, of=L, lhs=py(again[at]), rhs=py(vl[at]))

    def image_equal(self, R: Layout, L: Layout, what: str) -> None:
        import numpy as np

        self._guard(R, L)
        a, b = np.unique(values(R)), np.unique(values(L))
        if len(a) != len(b) or not np.array_equal(a, b):
            only = np.setdiff1d(a, b)
            other = np.setdiff1d(b, a)
            v = py(only[0]) if len(only) else py(other[0])
            fail(f"{_w(what)}the images differ (e.g. at offset {v})")


def _within(v: Any, n: int, X: Any, name: str, domain: str) -> None:
    """Fail at the first coordinate of ``X``'s domain where the values ``v`` (numpy) leave
    ``[0, n)``: "``name`` = value is outside ``domain``"."""
    import numpy as np

    bad = np.flatnonzero((v < 0) | (v >= n))
    if len(bad):
        k = int(bad[0])
        fail(f"{name} = {py(v[k])} is outside {domain}", at=k, of=X, lhs=py(v[k]))


def _first_diff(a: Any, b: Any) -> Optional[int]:
    import numpy as np

    if a.dtype != object and b.dtype != object:
        if np.array_equal(a, b):
            return None
        return int(np.flatnonzero(a != b)[0])
    for k in range(len(a)):  # object arrays (huge offsets, coordinate values)
        if a[k] != b[k]:
            return k
    return None


def _ext_values(A: Any, x: Any) -> Any:
    """``A`` at the offsets ``x`` (numpy), its last mode unbounded (CuTe's composition)."""
    import numpy as np

    if isinstance(A, Layout):
        fs, fd = _flat_modes(A)
        big = A.cosize + (int(x.max()) if len(x) else 0) * max(abs(d) for d in fd)
        if x.dtype != object and big >= 2**62:
            x = x.astype(object)
        off = np.zeros(len(x), dtype=x.dtype)
        y = x
        last = len(fs) - 1
        for k in range(last):
            off = off + (y % fs[k]) * fd[k]
            y = y // fs[k]
        return off + y * fd[last]
    if hasattr(A, "as_layout") and not hasattr(A, "eval_all"):  # a bare Swizzle: any integer
        return A(x.astype(np.int64) if x.dtype != object else x)
    n = size_of(A)
    if len(x) and int(x.max()) >= n:
        raise NotExpressible(f"B reaches past the domain of {A}")
    return values(A)[x.astype(np.int64)]


# ----------------------------------------------------------------------------- the symbolic engine
class Symbolic(_Engine):
    """Collects SymPy claims ``(purpose, claim, extra facts, 1-D coordinate)``; structural facts are checked
    at once (a :class:`Fail` for all parameter values)."""

    symbolic = True

    def __init__(self, taken: Any = ()) -> None:
        self.claims: List[Tuple[str, Any, tuple, Any]] = []
        self.taken = set(taken)

    def _sp(self) -> Any:
        import sympy as sp

        return sp

    def coord(self, name: str = "i") -> Any:
        from ._solve import coord_symbol

        s = coord_symbol(name, self.taken)
        self.taken.add(s)
        return s

    def add(self, purpose: str, claim: Any, facts: tuple = (), coord: Any = None) -> None:
        """Record ``claim`` (under the extra ``facts``); ``coord`` is the 1-D coordinate of
        the domain as an expression of the claim's coordinate symbols, when it has one."""
        sp = self._sp()
        if claim is True or claim is sp.true:
            return
        self.claims.append((purpose, claim, facts, coord))

    def _layout(self, X: Any, what: str) -> Layout:
        if not isinstance(X, Layout):
            raise NotExpressible(f"{_w(what)}{type(X).__name__} has no symbolic form")
        return X

    def same_shape(self, a: Any, b: Any, what: str) -> None:
        sp = self._sp()
        if type(a) is tuple or type(b) is tuple:
            if type(a) is not tuple or type(b) is not tuple or len(a) != len(b):
                fail(f"{_w(what)}shape {fmt_htuple(a)} != {fmt_htuple(b)}")
            for x, y in zip(a, b):
                self.same_shape(x, y, what)
            return
        if a != b:
            self.add(f"{_w(what)}shape leaf {a} == {b}", sp.Eq(a, b))

    def same_value(self, a: Any, b: Any, what: str) -> None:
        self.add(what or "the values are equal", self._sp().Eq(a, b))

    def same_function(self, X: Any, Y: Any, what: str) -> None:
        sp = self._sp()
        X = self._layout(X, what)
        Y = self._layout(Y, what)
        nx, ny = X.size, Y.size
        self.add(f"{_w(what)}sizes", sp.Eq(nx, ny))
        if X == Y:
            return
        fx, fy = _flat_modes(X), _flat_modes(Y)
        ref = radix_refinement(fx[0], fy[0])
        if ref is not None:  # both as polynomials of the digits of a common refinement
            extents, gx, gy = ref
            c = [self.coord(f"c{k}") for k in range(len(extents))]
            dom = tuple(sp.Lt(ck, e) for ck, e in zip(c, extents))
            flat_index: Any = sp.Integer(0)
            step: Any = sp.Integer(1)
            for ck, e in zip(c, extents):
                flat_index += ck * step
                step = step * e
            self.add(
                f"{_w(what)}same value at every coordinate",
                sp.Eq(_digit_value(fx[1], gx, extents, c), _digit_value(fy[1], gy, extents, c)),
                dom,
                flat_index,
            )
            return
        i = self.coord("i")
        self.add(f"{_w(what)}same value at every coordinate", sp.Eq(X.expr(i), Y.expr(i)), (sp.Lt(i, nx),), i)

    def _compat(self, b: Any, r: Any, what: str) -> None:
        sp = self._sp()
        if type(b) is tuple:
            if type(r) is not tuple or len(r) != len(b):
                fail(f"{_w(what)}B's shape {fmt_htuple(b)} is not compatible with R's shape {fmt_htuple(r)}")
            for x, y in zip(b, r):
                self._compat(x, y, what)
            return
        self.add(f"{_w(what)}B compatible with R ({b} == size {fmt_htuple(r)})", sp.Eq(b, raw_product(r)))

    def composes(self, R: Any, A: Any, B: Layout, what: str) -> None:
        sp = self._sp()
        R = self._layout(R, what)
        A = self._layout(A, what)
        self._compat(B.shape, R.shape, what)
        i = self.coord("i")
        x = B.expr(i)
        dom = (sp.Lt(i, B.size),)
        self.add(f"{_w(what)}B(c) >= 0", sp.Ge(x, 0), dom, i)
        self.add(f"{_w(what)}R(c) == A(B(c))", sp.Eq(R.expr(i), ext_expr(A, x)), dom, i)

    def _nonzero(self, d: Any) -> bool:
        """Whether a stride leaf is non-zero (decided; undecidable is NotExpressible)."""
        if type(d) is int:
            return d != 0
        v = decide(self._sp().Ne(d, 0)).value
        if v is None:
            raise NotExpressible(f"cannot decide whether the stride {d} is zero")
        return v

    def complement_ok(self, C: Layout, L: Layout, M: Any, what: str) -> None:
        sp = self._sp()
        fs, fd = _flat_modes(L)
        keep = [k for k in range(len(fs)) if fs[k] != 1 and self._nonzero(fd[k])]
        leaves = _flat_leaves(L)
        X = make_layout(*(leaves[k] for k in keep), *_flat_leaves(C))
        K = X.size
        i, j = self.coord("i"), self.coord("j")
        xi = X.expr(i)
        self.add(
            f"{_w(what)}(L, C) maps [0, K) into [0, K)", sp.And(sp.Ge(xi, 0), sp.Lt(xi, K)), (sp.Lt(i, K),)
        )
        self.add(f"{_w(what)}(L, C) is injective", sp.Ne(xi, X.expr(j)), (sp.Lt(i, j), sp.Lt(j, K)))
        if C.size != 1:
            self.add(f"{_w(what)}C is ordered", sp.Lt(C.expr(i), C.expr(i + 1)), (sp.Lt(i + 1, C.size),))
        ext = sp.Max(*[fs[k] * fd[k] for k in keep]) if keep else sp.Integer(1)
        self.add(f"{_w(what)}(L, C) fills [0, M) rounded up", sp.And(sp.Ge(K, M), sp.Lt(K, M + ext)))

    def right_inverse_ok(self, R: Layout, L: Layout, what: str) -> None:
        sp = self._sp()
        i = self.coord("i")
        x = R.expr(i)
        self.add(
            f"{_w(what)}L(R(i)) == i",
            sp.And(sp.Ge(x, 0), sp.Lt(x, L.size), sp.Eq(_expr_at(L, x), i)),
            (sp.Lt(i, R.size),),
            i,
        )

    def left_inverse_ok(self, R: Layout, L: Layout, what: str) -> None:
        sp = self._sp()
        rs, rd = _flat_modes(R)
        live = [(s, d) for s, d in zip(rs, rd) if not _same(s, 1)]
        if len(live) == 1 and _same(live[0][1], 1):
            # R is n:1, the identity on [0, n): R(L(i)) == i for every i < size(L) is exactly
            # "L is the function i -> i" and size(L) <= n -- which SymPy proves by a common
            # refinement where Z3's nonlinear div/mod gives up
            self.same_function(L, Layout.trusted(L.size, 1), f"{_w(what)}R is the identity, so L(i) == i")
            self.add(f"{_w(what)}size(L) <= size(R)", sp.Le(L.size, R.size))
            return
        i = self.coord("i")
        y = L.expr(i)
        self.add(
            f"{_w(what)}R(L(i)) == i",
            sp.And(sp.Ge(y, 0), sp.Lt(y, R.size), sp.Eq(_expr_at(R, y), i)),
            (sp.Lt(i, L.size),),
            i,
        )

    def image_equal(self, R: Layout, L: Layout, what: str) -> None:
        raise NotExpressible(f"{_w(what)}image equality is checked bounded")


def _divides(a: Any, b: Any) -> Optional[Any]:
    """``b / a`` when it is an integer polynomial (``a`` divides ``b`` for every value of the
    symbols), else None."""
    if type(a) is int and type(b) is int:
        return b // a if a and b % a == 0 else None
    import sympy as sp

    q = sp.cancel(sp.sympify(b) / sp.sympify(a))
    num, den = sp.fraction(q)
    if den != 1:
        return None
    try:
        poly = sp.Poly(num, *sorted(num.free_symbols, key=lambda s: s.name)) if num.free_symbols else None
    except sp.PolynomialError:
        return None
    if poly is not None and not all(getattr(co, "is_Integer", False) for co in poly.coeffs()):
        return None
    if poly is None and not getattr(num, "is_Integer", False):
        return None
    return int(num) if getattr(num, "is_Integer", False) else num


def _same(a: Any, b: Any) -> bool:
    if type(a) is int and type(b) is int:
        return a == b
    import sympy as sp

    return sp.expand(sp.sympify(a) - sp.sympify(b)) == 0


def radix_refinement(fa: tuple, fb: tuple) -> Optional[Tuple[List[Any], List[List[int]], List[List[int]]]]:
    """A common refinement of the mixed radices of two flat shapes of one size, whose extents
    divide polynomially: (extents, the refined digits of each mode of ``fa``, the same for
    ``fb``); None when the greedy split does not work out (e.g. ``(4, M)`` against
    ``(M, 4)``).  ``(4, 6)`` and ``(8, 3)`` give the digits ``(4, 2, 3)``.

    Not :func:`layoutproof.analysis.common_refinement`, which refines hierarchical shapes
    mode by mode (the join of the compatibility order: ``(4, 6)`` and ``(8, 3)`` have none)
    and takes integer shapes only; this one splits the 1-D domain of two flat, symbolic
    shapes into digits both read, so that two layout functions become polynomials of the
    same digits."""
    ext: List[Any] = []
    ga: List[List[int]] = [[] for _ in fa]
    gb: List[List[int]] = [[] for _ in fb]
    ia = ib = 0
    ra: Any = fa[0] if fa else 1
    rb: Any = fb[0] if fb else 1
    while ia < len(fa) or ib < len(fb):
        if ia < len(fa) and _same(ra, 1):
            ia += 1
            ra = fa[ia] if ia < len(fa) else 1
            continue
        if ib < len(fb) and _same(rb, 1):
            ib += 1
            rb = fb[ib] if ib < len(fb) else 1
            continue
        if ia >= len(fa) or ib >= len(fb):
            return None
        if _same(ra, rb):
            piece, ra, rb = ra, 1, 1
        else:
            q = _divides(ra, rb)
            if q is not None:
                piece, ra, rb = ra, 1, q
            else:
                q = _divides(rb, ra)
                if q is None:
                    return None
                piece, ra, rb = rb, q, 1
        ga[ia].append(len(ext))
        gb[ib].append(len(ext))
        ext.append(piece)
    return ext, ga, gb


def _digit_value(strides: tuple, groups: List[List[int]], extents: List[Any], c: List[Any]) -> Any:
    """The offset of the coordinate whose refined digits are ``c``: per mode, the mode's own
    coordinate (its digits in mixed radix) times its stride."""
    import sympy as sp

    out: Any = sp.Integer(0)
    for d, g in zip(strides, groups):
        idx: Any = sp.Integer(0)
        p: Any = sp.Integer(1)
        for j in g:
            idx += c[j] * p
            p = p * extents[j]
        out += idx * d
    return sp.expand(out)


def _expr_at(L: Layout, x: Any) -> Any:
    """``L`` at the (symbolic) 1-D coordinate ``x``, its last mode unbounded."""
    return ext_expr(L, x)


def ext_expr(A: Layout, x: Any) -> Any:
    """``A(x)`` as a SymPy expression, ``A``'s last flat mode unbounded (exact for every
    ``x >= 0``: CuTe's extension of A in composition)."""
    import sympy as sp

    fs, fd = _flat_modes(A)
    out: Any = sp.Integer(0)
    p: Any = sp.Integer(1)
    last = len(fs) - 1
    for k, (s, d) in enumerate(zip(fs, fd)):
        if k == last:
            out += sp.floor(x / p) * d
            break
        if s == 1:
            continue
        out += sp.Mod(sp.floor(x / p), s) * d
        p = p * s
    return out


def symbolic_leaf(x: Any) -> bool:
    return is_sym(x) and not x.is_Number
