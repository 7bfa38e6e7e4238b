"""Post-conditions: the specification of each operation of the algebra, checked on a result.

``postcondition(op, result, *args)`` checks that ``result`` is a correct value of
``op(*args)`` -- by the operation's own post-condition, not by recomputing it:

=================  ===========================================================================
coalesce           same size, same function, depth <= 1 (per mode of a tuple profile)
filter             same image, no stride-0 modes, depth <= 1
composition        B's shape compatible with R's, and R(c) == A(B(c)) for every c in B's
                   domain (A extended past its size along its last mode, as CuTe)
complement         (L, C) injective and onto [0, K) (L's stride-0 and size-1 modes ignored),
                   C ordered, K = M rounded up to a multiple of L's extent
right_inverse      L(R(i)) == i for i < size(R)
left_inverse       R(L(i)) == i (L injective), else L(R(L(i))) == L(i)
logical_divide     R == L o (T, complement(T, size(L))): the composition post-condition with
                   that complement (itself checked); by mode for tuple tilers
zipped/tiled/flat  the same per tiled mode, rearranged: ((tiles), (rests)), (tiles, rest...),
  _divide          (tile..., rest...)
logical_product    mode 0 equals the block, mode 1 == complement(A, size(A)*cosize(B)) o B
zipped/tiled/flat  the same per mode, rearranged
  raw_product
blocked/raked      mode i is (block_i, arrangement_i) (raked: swapped) of the logical product
  raw_product         of the rank-padded operands
tile_to_shape      mode sizes equal the target's; the function is the blocked product of the
                   block by the ordered arrangement (itself checked)
upcast             R congruent with L; the wide elements R addresses hold exactly L's elements
                   ({n*R(c') + k : 0 <= k < n} == image(L)); each starts at one of L's
                   elements (n*R(c') == L(c), c = c' with the small-stride leaves scaled)
=================  ===========================================================================

Concrete operands: exhaustive (numpy).  Symbolic operands: the same statements as SymPy
claims proved by Z3 under the assumptions; where Z3 cannot settle one (or the statement has
no symbolic form, e.g. image equality), every parameter assignment in a box is checked
("checked", with the bounds).

>>> from layoutproof import Layout, composition, complement
>>> A, B = Layout((4, (2, 2)), (2, (1, 8))), Layout((2, 4), (1, 2))
>>> postcondition("composition", composition(A, B), A, B).status
'proved'
>>> r = postcondition("complement", Layout(2, 4), Layout((2, 2), (1, 8)), 32)
>>> print(r.counterexample)
complement: (L, C) = (2,2,2):(1,8,4) does not map onto [0, 8): it reaches 13 at coordinate 7 = (1,1,1)
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional, Tuple

from layoutproof import ops
from layoutproof.errors import InadmissibleError, LayoutError, MalformedLayoutError, show
from layoutproof.inttuple import raw_depth, raw_product
from layoutproof.layout import Layout, Underscore, make_layout, make_ordered_layout, top_modes

from ._bounded import MAX_CASES
from ._concrete import is_symbolic, lifted
from ._engine import Fail, NotExpressible, as_layout
from ._run import call_budgeted, guard_args, run
from .equal import layoutish
from .identity import resolve_op
from .result import Counterexample, Result

__all__ = ["postcondition", "OPERATIONS"]


def _op(fn: Callable[..., Any], *args: Any) -> Any:
    """A sub-operation the post-condition is stated with; inadmissible there means the
    result under test cannot be right."""
    try:
        return fn(*args)
    except InadmissibleError as e:
        raise Fail(
            Counterexample(detail=f"{fn.__name__} in the specification is inadmissible ({e.condition}): {e}")
        ) from None


def _none(t: Any) -> bool:
    return t is None or isinstance(t, Underscore)


def _keep(eng: Any, R: Layout, L: Layout, what: str) -> None:
    eng.same_shape(R.shape, L.shape, what)
    eng.same_function(R, L, what)


def _padded(L: Layout, n: int) -> Layout:
    return make_layout(*L, *(Layout(1, 0),) * (n - L.rank))


# ----------------------------------------------------------------------------- per operation
def _coalesce(eng: Any, R: Layout, L: Layout, profile: Any = None) -> None:
    eng.same_function(R, L, "coalesce: same function")
    if type(profile) is list:
        profile = tuple(profile)

    def depth(X: Layout, p: Any, where: str) -> None:
        if type(p) is tuple:
            eng.require(
                X.rank == len(top_modes(X)[0]) and len(p) <= X.rank,
                f"coalesce: {where}{X} has fewer modes than the profile",
            )
            for k, q in enumerate(p):
                depth(X[k], q, f"{where}mode {k} ")
            return
        eng.require(raw_depth(X.shape) <= 1, f"coalesce: {where}{X} has depth {raw_depth(X.shape)} > 1")

    if type(profile) is tuple:
        eng.require(R.rank == L.rank, f"coalesce: {R} has {R.rank} modes, {L} has {L.rank}")
    depth(R, profile, "")


def _filter(eng: Any, R: Layout, L: Layout, profile: Any = None) -> None:
    eng.image_equal(R, L, "filter: same image")
    if profile is None or isinstance(profile, Underscore):
        from layoutproof.inttuple import raw_flatten

        for s, d in zip(raw_flatten(R.shape), raw_flatten(R.stride)):
            eng.require(not (d == 0 and s != 1), f"filter: {R} keeps the stride-0 mode {s}:{d}")
        eng.require(raw_depth(R.shape) <= 1, f"filter: {R} has depth > 1")


def _composition(eng: Any, R: Any, A: Any, B: Any) -> None:
    if _none(B):
        _keep(eng, R, A, "composition with _")
        return
    if type(B) is tuple or type(B) is list:
        sA = top_modes(A)[0]
        eng.require(len(B) <= len(sA), f"composition: the tiler has more modes than {A}")
        eng.require(R.rank == len(B), f"composition: {R} has {R.rank} modes, the tiler {len(B)}")
        for k, t in enumerate(B):
            _composition(eng, R[k], A[k], t)
        return
    eng.composes(R, A, as_layout(B), "composition")


def _complement(eng: Any, C: Layout, L: Layout, cotarget: Any = None) -> None:
    L = as_layout(L)
    M = L.cosize if cotarget is None else raw_product(cotarget) if type(cotarget) is tuple else cotarget
    eng.complement_ok(C, L, M, "complement")


def _right_inverse(eng: Any, R: Layout, L: Any) -> None:
    eng.right_inverse_ok(R, as_layout(L), "right_inverse")


def _left_inverse(eng: Any, R: Layout, L: Any) -> None:
    eng.left_inverse_ok(R, as_layout(L), "left_inverse")


def _logical_divide(eng: Any, R: Layout, L: Layout, tiler: Any) -> None:
    if _none(tiler):
        _keep(eng, R, L, "logical_divide by _")
        return
    if type(tiler) is tuple or type(tiler) is list:
        sL = top_modes(L)[0]
        eng.require(len(tiler) <= len(sL), f"logical_divide: the tiler has more modes than {L}")
        eng.require(R.rank == len(sL), f"logical_divide: {R} has {R.rank} modes, {L} has {len(sL)}")
        for k in range(len(sL)):
            if k < len(tiler):
                _logical_divide(eng, R[k], L[k], tiler[k])
            else:
                _keep(eng, R[k], L[k], f"logical_divide: mode {k} kept")
        return
    T = as_layout(tiler)
    C = _op(ops.complement, T, L.size)
    eng.complement_ok(C, T, L.size, "logical_divide: complement(T, size(L))")
    eng.composes(R, L, make_layout(T, C), "logical_divide: R == L o (T, complement(T, size(L)))")


def _logical_product(eng: Any, R: Layout, A: Layout, tiler: Any) -> None:
    if _none(tiler):
        _keep(eng, R, A, "logical_product by _")
        return
    if type(tiler) is tuple or type(tiler) is list:
        sA = top_modes(A)[0]
        eng.require(len(tiler) <= len(sA), f"logical_product: the tiler has more modes than {A}")
        eng.require(R.rank == len(sA), f"logical_product: {R} has {R.rank} modes, {A} has {len(sA)}")
        for k in range(len(sA)):
            if k < len(tiler):
                _logical_product(eng, R[k], A[k], tiler[k])
            else:
                _keep(eng, R[k], A[k], f"logical_product: mode {k} kept")
        return
    B = as_layout(tiler)
    eng.require(R.rank == 2, f"logical_product: {R} does not have 2 modes")
    _keep(eng, R[0], A, "logical_product: mode 0 is the block")
    M = A.size * B.cosize
    C = _op(ops.complement, A, M)
    eng.complement_ok(C, A, M, "logical_product: complement(A, size(A)*cosize(B))")
    eng.composes(R[1], C, B, "logical_product: mode 1 == complement(A, size(A)*cosize(B)) o B")


def _zipped(base: Callable[..., None], name: str) -> Callable[..., None]:
    def check(eng: Any, R: Layout, L: Layout, tiler: Any) -> None:
        if _none(tiler):
            eng.require(R.rank == 2, f"{name}: {R} does not have 2 modes")
            eng.require(R[0].size == 1, f"{name}: mode 0 of {R} is not empty")
            _keep(eng, R[1], L, f"{name}: mode 1 is the layout")
            return
        if type(tiler) is tuple or type(tiler) is list:
            eng.require(R.rank == 2, f"{name}: {R} does not have 2 modes")
            tile, rest = R[0], R[1]
            sL = top_modes(L)[0]
            k = len(tiler)
            eng.require(k <= len(sL), f"{name}: the tiler has more modes than {L}")
            eng.require(len(top_modes(tile)[0]) == k, f"{name}: mode 0 of {R} does not have {k} modes")
            eng.require(
                len(top_modes(rest)[0]) == len(sL), f"{name}: mode 1 of {R} does not have {len(sL)} modes"
            )
            for i in range(len(sL)):
                if i < k:
                    check(eng, make_layout(tile[i], rest[i]), L[i], tiler[i])
                else:
                    _keep(eng, rest[i], L[i], f"{name}: mode {i} kept")
            return
        base(eng, R, L, tiler)

    return check


def _rearranged(
    zipped_op: Callable[..., Any], zipped_check: Callable[..., None], name: str, flat: bool
) -> Callable[..., None]:
    def check(eng: Any, R: Layout, L: Layout, tiler: Any) -> None:
        Z = _op(zipped_op, L, tiler)
        zipped_check(eng, Z, L, tiler)
        if flat:
            E = make_layout(*Z[0], *Z[1])
        else:
            E = make_layout(Z[0], *Z[1])
        _keep(eng, R, E, f"{name}: the modes of {zipped_op.__name__} rearranged")

    return check


def _blocked(raked: bool) -> Callable[..., None]:
    name = "raked_product" if raked else "blocked_product"

    def check(eng: Any, R: Layout, A: Layout, tiler: Any) -> None:
        B = as_layout(tiler)
        r = max(A.rank, B.rank)
        eng.require(R.rank == r, f"{name}: {R} does not have {r} modes")
        for k in range(r):
            eng.require(len(top_modes(R[k])[0]) == 2, f"{name}: mode {k} of {R} is not a pair")
        first = make_layout(*[R[k][1 if raked else 0] for k in range(r)])
        second = make_layout(*[R[k][0 if raked else 1] for k in range(r)])
        _logical_product(eng, make_layout(first, second), _padded(A, r), _padded(B, r))

    return check


def _tile_to_shape(eng: Any, R: Layout, block: Layout, trg: Any, order: Any = None) -> None:
    if type(trg) is list:
        trg = tuple(trg)
    ts = trg if type(trg) is tuple else (trg,)
    eng.require(block.rank <= len(ts), f"tile_to_shape: {block} has more modes than the target")
    pb = _padded(block, len(ts))
    bsz = [raw_product(e) for e in top_modes(pb)[0]]
    tsz = [raw_product(e) for e in ts]
    if any(is_symbolic(x) for x in bsz + tsz):
        raise NotExpressible("tile_to_shape with symbolic sizes")
    for k, (t, b) in enumerate(zip(tsz, bsz)):
        eng.require(
            t % b == 0, f"tile_to_shape: mode {k} of the target ({t}) is not a multiple of the block's ({b})"
        )
    O = make_ordered_layout(tuple(t // b for t, b in zip(tsz, bsz)), order)
    BP = _op(ops.blocked_product, pb, O)
    _blocked(False)(eng, BP, pb, O)
    E = BP if type(trg) is tuple else BP[0]
    eng.same_function(R, E, "tile_to_shape: the blocked product of the block by the arrangement")
    if type(trg) is tuple:
        eng.require(R.rank == len(ts), f"tile_to_shape: {R} does not have {len(ts)} modes")
        for k, t in enumerate(tsz):
            eng.require(R[k].size == t, f"tile_to_shape: mode {k} of {R} does not have size {t}")
    else:
        eng.require(R.size == tsz[0], f"tile_to_shape: {R} does not have size {tsz[0]}")


def _upcast(eng: Any, R: Layout, L: Layout, n: Any) -> None:
    """CuTe's ``upcast<n>``: ``R`` is ``L`` in units of ``n`` elements (concrete operands)."""
    import numpy as np

    from layoutproof.inttuple import raw_flatten

    if is_symbolic(n) or any(is_symbolic(x) for x in raw_flatten((R.shape, R.stride, L.shape, L.stride))):
        raise NotExpressible("upcast with symbolic operands")
    eng.require(type(n) is int and n >= 1, f"upcast: the factor {n} is not a positive integer")

    def profile(x: Any) -> Any:
        return tuple(profile(e) for e in x) if type(x) is tuple else 0

    eng.require(profile(R.shape) == profile(L.shape), f"upcast: {R} is not congruent with {L}")
    fs, fd = L.flat_modes()
    rs, rd = R.flat_modes()
    # the leaves whose stride divides n: n/|d| consecutive coordinates share a wide element
    scale = [n // abs(d) if d != 0 and s > 1 and d % n != 0 and n % d == 0 else 1 for s, d in zip(fs, fd)]
    for k, (s, t, c) in enumerate(zip(fs, rs, scale)):
        want = -(-s // c) if c > 1 else (1 if s == 1 else s)
        eng.require(t == want, f"upcast: leaf {k} of {R} has extent {t}, not {want}")
    idx = np.arange(R.size, dtype=np.int64)
    coords = np.unravel_index(idx, rs, order="F") if rs else ()
    r_off = sum((c.astype(np.int64) * int(d) for c, d in zip(coords, rd)), np.zeros_like(idx))
    l_off = sum(
        (c.astype(np.int64) * int(k) * int(d) for c, k, d in zip(coords, scale, fd)), np.zeros_like(idx)
    )
    bad = np.nonzero(n * r_off != l_off)[0]
    eng.require(
        bad.size == 0,
        f"upcast: the wide element {int(r_off[bad[0]])} at coordinate {int(bad[0])} of {R} starts at "
        f"{n * int(r_off[bad[0]])}, not at L's element {int(l_off[bad[0]])}"
        if bad.size
        else "",
    )
    wide = {int(x) for x in ((n * np.unique(r_off))[:, None] + np.arange(n)[None, :]).ravel()}
    image = {int(x) for x in np.unique(np.asarray(L.eval_all())).ravel()}
    extra = sorted(wide - image)
    missing = sorted(image - wide)
    eng.require(
        not extra and not missing,
        "upcast: block condition: "
        + (
            f"the wide elements reach {extra[0]}, which L does not hold"
            if extra
            else f"L's element {missing[0] if missing else ''} is in no wide element"
        ),
    )


_zdiv = _zipped(_logical_divide, "zipped_divide")
_zprod = _zipped(_logical_product, "zipped_product")

#: operation name -> (check(engine, result, *args), the post-condition in words)
OPERATIONS: Dict[str, Tuple[Callable[..., None], str]] = {
    "coalesce": (_coalesce, "same size, same function, depth <= 1"),
    "filter": (_filter, "same image, no stride-0 modes, depth <= 1"),
    "composition": (_composition, "B compatible with R, R(c) == A(B(c)) on B's domain"),
    "complement": (_complement, "(L, C) injective onto [0, M) rounded up, C ordered"),
    "right_inverse": (_right_inverse, "L(R(i)) == i for i < size(R)"),
    "left_inverse": (_left_inverse, "R(L(i)) == i (L injective)"),
    "logical_divide": (_logical_divide, "R == L o (T, complement(T, size(L)))"),
    "zipped_divide": (_zdiv, "((tiles), (rests)) of L o (T, complement(T, size(L))) per mode"),
    "tiled_divide": (
        _rearranged(ops.zipped_divide, _zdiv, "tiled_divide", False),
        "(tiles, rest...) of zipped_divide",
    ),
    "flat_divide": (
        _rearranged(ops.zipped_divide, _zdiv, "flat_divide", True),
        "(tile..., rest...) of zipped_divide",
    ),
    "logical_product": (_logical_product, "(A, complement(A, size(A)*cosize(B)) o B)"),
    "zipped_product": (_zprod, "((blocks), (products)) of the logical product per mode"),
    "tiled_product": (
        _rearranged(ops.zipped_product, _zprod, "tiled_product", False),
        "(blocks, product...) of zipped_product",
    ),
    "flat_product": (
        _rearranged(ops.zipped_product, _zprod, "flat_product", True),
        "(block..., product...) of zipped_product",
    ),
    "blocked_product": (_blocked(False), "mode i == (block_i, arrangement_i) of the logical product"),
    "raked_product": (_blocked(True), "mode i == (arrangement_i, block_i) of the logical product"),
    "tile_to_shape": (_tile_to_shape, "the blocked product reaching the target shape"),
    "upcast": (_upcast, "R congruent with L, its wide elements hold exactly L's elements"),
}


def _norm_arg(a: Any) -> Any:
    if type(a) is list:
        return tuple(_norm_arg(e) for e in a)
    if type(a) is tuple:
        return tuple(_norm_arg(e) for e in a)
    return a


def _text(a: Any) -> str:
    if type(a) is tuple:
        return "(" + ", ".join(_text(e) for e in a) + ")"
    return str(a)


def postcondition(
    op: Any,
    result: Any,
    *args: Any,
    assume: Any = (),
    timeout_ms: Optional[int] = None,
    bounds: Any = None,
    max_cases: int = MAX_CASES,
    deadline: Optional[float] = None,
) -> Result:
    """Check that ``result`` satisfies the post-condition of ``op(*args)`` (see the table
    in the module docstring).  ``op`` is an algebra function or its name.

    Concrete: exhaustive ("proved"/"refuted" at the first failing coordinate).  Symbolic:
    Z3 under the active assumptions plus ``assume`` (each call limited to ``timeout_ms``);
    where Z3 cannot settle a claim, every assignment in ``bounds`` (None: the default box;
    False: none, "unknown" instead) is checked.

    >>> from layoutproof import Layout
    >>> postcondition("right_inverse", Layout((2, 4), (4, 1)), Layout((4, 2), (2, 1))).status
    'proved'
    >>> print(postcondition("left_inverse", Layout(4, 1), Layout(4, 2)).counterexample)
    left_inverse: L(i) = 4 is outside R's domain [0, 4) at coordinate 2
    """
    return call_budgeted(
        _postcondition, "postcondition", deadline, op, result, args, assume, timeout_ms, bounds, max_cases
    )


def _postcondition(
    op: Any, result: Any, args: tuple, assume: Any, timeout_ms: Optional[int], bounds: Any, max_cases: int
) -> Result:
    guard_args(result, *args)
    fn = resolve_op(op)
    name = getattr(fn, "__name__", str(op))
    entry = OPERATIONS.get(name)
    if entry is None:
        raise MalformedLayoutError(f"no post-condition for {show(name)}; known: {', '.join(OPERATIONS)}")
    check, words = entry
    args = tuple(_norm_arg(a) for a in args)
    try:
        inspect.signature(check).bind(None, result, *args)
    except TypeError:
        ps = list(inspect.signature(check).parameters.values())[2:]
        hi = len(ps)
        lo = sum(1 for p in ps if p.default is p.empty)
        want = f"{lo}" if lo == hi else f"{lo} to {hi}"
        raise MalformedLayoutError(
            f"postcondition({name}): the result and {want} operands are expected "
            f"({name}'s own arguments), got the result and {len(args)}"
        ) from None
    result = layoutish(result, f"postcondition({name}): the result")
    if args:
        args = (layoutish(args[0], f"postcondition({name}): the first operand"),) + args[1:]
    swizzled = [x for x in (result, *args) if lifted(x)]
    claim = f"{name}({', '.join(_text(a) for a in args)}) = {result}: {words}"
    if swizzled and name != "composition":
        return Result(
            "unknown",
            "exhaustive",
            claim=claim,
            reason=f"the post-condition of {name} is stated for plain layouts; compare swizzled "
            "or composed layouts with verify.equal",
        )
    try:
        return run(
            claim,
            check,
            [result, *args],
            assume=assume,
            timeout_ms=timeout_ms,
            bounds=bounds,
            max_cases=max_cases,
        )
    except (AttributeError, TypeError, NotImplementedError, IndexError, KeyError) as e:
        if isinstance(e, LayoutError):
            raise
        raise MalformedLayoutError(
            f"postcondition({name}): the operands do not have the kinds {name} takes "
            f"({type(e).__name__}: {show(str(e))})"
        ) from None
