"""The algebra over symbolic layouts: every step's condition decided from the assumptions.

The functions of :mod:`layoutproof.ops` send a layout with a SymPy leaf here.  Each
routine follows the integer routine of ``ops`` step by step (the same mixed-radix walk,
the same conditions), with every test of a side condition replaced by a decision under
the active :func:`~layoutproof.symbolic.assuming` facts:

* a test that picks between two correct continuations (is this extent 1? can these two
  modes merge?) is taken only when it is *proved*; otherwise the continuation that is
  correct either way is taken (keep the mode, do not merge);
* a test that the operation needs (C++'s divisibility conditions, disjointness, the
  complement's stride chain) must be proved: when the facts contradict it the operation
  raises :class:`~layoutproof.errors.InadmissibleError` with an assignment of the
  symbols and, from that assignment, a witness coordinate; when they do neither it raises
  :class:`~layoutproof.errors.UndecidableConditionError` naming the condition to assume.

Every routine also runs on integers (each decision is then plain arithmetic), and the
tests check that it agrees there with the tuned integer routines of ``ops``.

Composition, complement and the two inverses run within the default deadline
(:func:`layoutproof.budget.get_deadline`; an enclosing earlier one stays in force): past
it they raise :class:`~layoutproof.budget.BudgetExceeded` (reason ``"timeout"``).

>>> from layoutproof import Layout, symbols, assuming, logical_divide
>>> M, N = symbols("M N")
>>> with assuming("M % 64 == 0", "N % 32 == 0"):
...     str(logical_divide(Layout((M, N), (1, M)), (64, 32)))
'((64,M/64),(32,N/32)):((1,64),(M,32*M))'
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .. import budget
from ..errors import InadmissibleError, LayoutError, MalformedLayoutError, UndecidableConditionError
from ..inttuple import raw_flatten, raw_product, raw_unflatten
from ..layout import Layout
from . import (
    EXPLORER,
    as_python,
    assuming,
    assumptions,
    complete_assignment,
    decide,
    free_symbols,
    is_sym,
    is_symbolic,
    layout_expr,
    pretty,
    require,
)
from . import sympy_module as _sympy

_make = Layout.trusted


# ----------------------------------------------------------------------------- decisions
def _num(x: Any) -> Any:
    """Numbers as int (SymPy Integers included), expressions as they are."""
    if type(x) is int:
        return x
    if is_sym(x) and x.is_Integer:
        return int(x)
    return x


def _both_int(*xs: Any) -> bool:
    return all(type(x) is int for x in xs)


def _tri(cond: Any) -> Optional[bool]:
    """Decide quickly (SymPy) and then fully (Z3)."""
    d = decide(cond, use_z3=False)
    if d.value is not None:
        return d.value
    return decide(cond).value


def eq(a: Any, b: Any) -> Optional[bool]:
    a, b = _num(a), _num(b)
    if _both_int(a, b):
        return a == b
    if a == b:
        return True
    return _tri(_sympy().Eq(a, b))


def dvd(a: Any, b: Any) -> Optional[bool]:
    """Does ``a`` divide ``b``?"""
    a, b = _num(a), _num(b)
    if _both_int(a, b):
        return b % a == 0 if a != 0 else b == 0
    sp = _sympy()
    if a == b or a == 1:
        return True
    return _tri(sp.Eq(sp.Mod(b, a), 0))


def le(a: Any, b: Any) -> Optional[bool]:
    a, b = _num(a), _num(b)
    if _both_int(a, b):
        return a <= b
    return _tri(_sympy().Le(a, b))


def lt(a: Any, b: Any) -> Optional[bool]:
    a, b = _num(a), _num(b)
    if _both_int(a, b):
        return a < b
    return _tri(_sympy().Lt(a, b))


def xdiv(a: Any, b: Any) -> Any:
    """``a / b`` where ``b`` is known to divide ``a``."""
    a, b = _num(a), _num(b)
    if _both_int(a, b):
        return a // b
    return _num(_sympy().cancel(a / b))


def ceil_div(a: Any, b: Any) -> Any:
    if dvd(b, a) is True:
        return xdiv(a, b)
    a, b = _num(a), _num(b)
    if _both_int(a, b):
        return -(-a // b)
    return _num(_sympy().ceiling(a / b))


def _dvd_cond(a: Any, b: Any) -> Any:
    sp = _sympy()
    return sp.Eq(sp.Mod(b, a), 0)


def need(
    cond: Any,
    *,
    op: str,
    condition_name: str,
    where: str = "",
    concrete: Optional[Callable[[dict], Any]] = None,
) -> None:
    """:func:`~layoutproof.symbolic.require`, and on a refutation: complete the
    counterexample assignment to every symbol of the operands (satisfying the
    assumptions), substitute it and run the integer operation (``concrete``).  Only when the
    integer operation is inadmissible there does the refutation stand (an
    InadmissibleError with ``.assignment`` and the integer operation's witness); otherwise
    -- the integer operation succeeds (the condition was only sufficient), or no such
    assignment is found -- the condition is undecidable, never inadmissible.

    ``cond`` may be a plain bool (the condition on integer leaves, already evaluated)."""
    if cond is True:
        return
    place = f" of {where}" if where else ""
    if cond is False:
        err = InadmissibleError(f"{op}: {condition_name}{place} fails", condition=condition_name)
        asg: dict = {}
    else:
        try:
            require(cond, op=op, condition_name=condition_name, where=where)
            return
        except InadmissibleError as e:
            err = e
            asg = dict(getattr(e, "assignment", None) or {})
    if concrete is None:
        raise err
    text = str(cond) if isinstance(cond, bool) else pretty(cond)
    try:
        done = concrete(asg)
    except InadmissibleError as ce:
        at = ", ".join(f"{k} = {v}" for k, v in sorted(asg.items()))
        out = InadmissibleError(
            f"{op}: {condition_name}{place} fails"
            + (f" for {at}" if at else "")
            + f" (the integer operation there: {ce})",
            condition=condition_name,
            witness=ce.witness,
        )
        out.assignment = dict(asg) or None  # type: ignore[attr-defined]
        raise out from None
    except (MalformedLayoutError, UndecidableConditionError):
        done = _STILL_SYMBOLIC
    # a plain-bool condition has no symbolic form to assume: name it in words
    named = f"{condition_name}{place}" if isinstance(cond, bool) else as_python(cond)
    if done is _STILL_SYMBOLIC:
        raise UndecidableConditionError(
            f"{op} needs {text} ({condition_name}{place}); the assumptions refute it, but no assignment "
            "of the symbols was found at which the integer operation confirms the failure -- state "
            "stronger assumptions",
            condition=named,
            expr=None if isinstance(cond, bool) else cond,
        )
    if isinstance(cond, bool):
        head = f"{op}: the symbolic walk needs {condition_name}{place}, which fails on these leaves"
    else:
        head = f"{op} needs {text} ({condition_name}{place}) to follow its proof; the assumptions refute it"
    raise UndecidableConditionError(
        head
        + ", yet for "
        + (", ".join(f"{k} = {v}" for k, v in sorted(asg.items())) or "these integers")
        + " the integer operation succeeds -- the result is decided only by evaluation",
        condition=named,
        expr=None if isinstance(cond, bool) else cond,
    )


_STILL_SYMBOLIC = object()


def _concrete(fn: Callable[..., Any], asg: dict, *xs: Any) -> Any:
    """Run the integer operation on the operands with ``asg`` substituted -- ``asg`` is
    first completed (in place) with values for the operands' other symbols that satisfy
    the assumptions; when none are found nothing can be confirmed."""
    syms: set = set()
    for x in xs:
        syms |= set(x.free_symbols) if isinstance(x, Layout) else set(free_symbols(x))
    full = complete_assignment(asg, syms, assumptions())
    if full is None:
        return _STILL_SYMBOLIC
    asg.clear()
    asg.update(full)
    vals = _subs_all(asg, *xs)
    if any(is_symbolic(v) for v in vals):
        return _STILL_SYMBOLIC
    return fn(*vals)


def _subs_all(asg: dict, *xs: Any) -> List[Any]:
    out: List[Any] = []
    for x in xs:
        if isinstance(x, Layout):
            out.append(x.subs(asg))
        elif type(x) is tuple:
            from . import free_symbols, subs_tuple, symbol_map

            out.append(subs_tuple(x, symbol_map(asg, free_symbols(x))))
        elif is_sym(x):
            from . import symbol_map

            v = x.subs(symbol_map(asg, frozenset(x.free_symbols)))
            out.append(int(v) if v.is_Integer else v)
        else:
            out.append(x)
    return out


# ----------------------------------------------------------------------------- both branches
def _same_layout(X: Layout, Y: Layout, facts: tuple, shape: bool = True) -> bool:
    """Whether X and Y have equal sizes and equal values at every coordinate (and, with
    ``shape``, equal shapes leaf by leaf), proved under ``facts``."""
    sp = _sympy()
    sx, sy = X.shape, Y.shape
    if not shape:
        sx, sy = X.size, Y.size
    stack = [(sx, sy)]
    while stack:
        a, b = stack.pop()
        if type(a) is tuple or type(b) is tuple:
            if type(a) is not tuple or type(b) is not tuple or len(a) != len(b):
                return False
            stack.extend(zip(a, b))
            continue
        if _num(a) == _num(b):
            continue
        if decide(sp.Eq(a, b), facts).value is not True:
            return False
    i = sp.Symbol("_lp_coord", integer=True, nonnegative=True)
    claim = sp.Eq(layout_expr(X, i), layout_expr(Y, i))
    if claim is sp.true:
        return True
    return decide(claim, facts + (sp.Lt(i, X.size),)).value is True


_SPLIT_MAX = 2  # nested case splits (at most 2 + 4 extra runs of an operation)
_SPLIT_DEPTH: "contextvars.ContextVar[int]" = contextvars.ContextVar("layoutproof_split_depth", default=0)


def _either_branch(shape: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``fn`` (a symbolic operation); when it stops at an undecided condition ``c``, the
    operation is run under ``c`` and under ``not c``: if the two results are the same layout
    on the region of the other branch -- the same function, and with ``shape`` the same
    shape (composition: the result's shape is part of its specification; complement and
    the inverses: their specification is the function) -- that result is correct for every
    assignment and is returned (``complement(N:1)`` does not depend on ``N >= 2``).
    Otherwise the original UndecidableConditionError stands."""
    return functools.partial(_branching, shape=shape)


def _branching(fn: Callable[..., Any], shape: bool) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        # the whole operation, its SymPy simplifications and case splits included, within
        # the default deadline (an enclosing, earlier one stays in force); past it:
        # BudgetExceeded, a LayoutError with the reason "timeout" -- never a hang
        with budget.deadline():
            return either_branch(fn, *args, shape=shape)

    return run


def either_branch(fn: Callable[..., Any], *args: Any, shape: bool = True) -> Any:
    """``fn(*args)`` (an operation on symbolic layouts, returning a layout) under the
    two-branch rule of :func:`_either_branch`: an undecided condition ``c`` that stops it
    is split (``c`` and ``not c``, nested up to two splits), and a result that is the same
    layout on both branches is returned; otherwise the UndecidableConditionError stands.
    For composite operations (``logical_product`` is a complement and a composition)
    whose parts' branches differ while the whole does not."""
    try:
        return fn(*args)
    except UndecidableConditionError as e:
        c = e.expr
        depth = _SPLIT_DEPTH.get()
        if c is None or depth >= _SPLIT_MAX or EXPLORER.get() is not None:
            raise
        if not hasattr(c, "free_symbols"):
            raise
        if _refused_at(fn, args, e.counterexample):
            raise  # no layout is right on both branches: the operation fails at a point of one
        sp = _sympy()
        facts = assumptions()
        if e.counterexample and getattr(e, "example", None) is None and _no_model(facts + (c,)):
            # neither Z3 nor small values found a point where c holds: the branch under c
            # would spend the deadline on assumptions Z3 cannot even show consistent
            raise
        tok = _SPLIT_DEPTH.set(depth + 1)
        try:
            with assuming(c):
                r1 = either_branch(fn, *args, shape=shape)
            with assuming(sp.Not(c)):
                r2 = either_branch(fn, *args, shape=shape)
        except (LayoutError, TypeError, ValueError):
            raise e from None
        finally:
            _SPLIT_DEPTH.reset(tok)
        if not (isinstance(r1, Layout) and isinstance(r2, Layout)):
            raise
        try:
            if _same_layout(r1, r2, facts + (sp.Not(c),), shape):
                return r1
            if _same_layout(r2, r1, facts + (c,), shape):
                return r2
        except (LayoutError, TypeError, ValueError):
            pass
        raise


def _no_model(conds: Tuple[Any, ...]) -> bool:
    from . import solver

    try:
        return solver.search_model(conds) is None
    except (LayoutError, TypeError, ValueError):
        return False


def _refused_at(fn: Callable[..., Any], args: Tuple[Any, ...], assignment: Any) -> bool:
    """Whether the integer operation of ``fn`` refuses (InadmissibleError) the arguments at
    ``assignment`` (values of every symbol, satisfying the active facts).  Then no result
    of :func:`either_branch`'s split can be right for every assignment -- the branch that
    holds ``assignment`` must refuse -- and the split, which may spend the whole deadline
    on nonlinear conditions, would end in the same error."""
    from .. import ops

    op = getattr(ops, fn.__name__, None)
    if not assignment or op is None:
        return False
    try:
        sp = _sympy()
        vals: List[Any] = []
        for a in args:
            if isinstance(a, Layout):
                if a.is_symbolic and any(x.name not in assignment for x in a.free_symbols):
                    return False
                a = a.subs(assignment) if a.is_symbolic else a
            elif is_sym(a):
                if any(x.name not in assignment for x in a.free_symbols):
                    return False
                a = a.xreplace({x: sp.Integer(assignment[x.name]) for x in a.free_symbols})
                if not a.is_Integer:
                    return False
                a = int(a)
            vals.append(a)
        op(*vals)
    except InadmissibleError:
        return True
    except LayoutError:
        return False
    return False


# ----------------------------------------------------------------------------- coalesce / filter
#: the state of coalesce's fold: (the finished modes, the last accumulated mode or None).
#: The step reads only the last accumulated mode; the finished modes are passed on (and
#: appended to) untouched -- the induction of the proof catalog runs the step with an
#: opaque object there, which fails on any other use.
CoalesceState = Tuple[Any, Optional[Tuple[Any, Any]]]
COALESCE_START: CoalesceState = ((), None)


def coalesce_step(state: CoalesceState, mode: Tuple[Any, Any], keep: bool = False) -> CoalesceState:
    """One step of ``ops.coalesce_modes``'s fold with proved tests: the mode ``(s, d)`` is
    dropped only when ``s == 1`` is proved (and ``keep`` is false), and it merges into the
    last accumulated mode ``(t, e)`` only when ``t*e == d`` is proved."""
    done, last = state
    s, d = mode
    if not keep and eq(s, 1) is True:
        return state
    if last is not None and eq(last[0] * last[1], d) is True:
        return done, (_num(last[0] * s), last[1])
    return (done if last is None else done + (last,)), (s, d)


def coalesce_finish(state: CoalesceState) -> Tuple[List[Any], List[Any]]:
    """The fold's state as (extents, strides); ``1:0`` when no mode was kept."""
    done, last = state
    if last is None:
        return [1], [0]
    modes = list(done) + [last]
    return [m[0] for m in modes], [m[1] for m in modes]


def coalesce_flat(fs: tuple, fd: tuple, keep_last: bool = False) -> Tuple[List[Any], List[Any]]:
    """``ops.coalesce_modes`` with proved tests: a fold of :func:`coalesce_step` over the
    modes (``keep_last``: the last mode is kept even with extent 1)."""
    state = COALESCE_START
    last = len(fs) - 1 if keep_last else -1
    for k, mode in enumerate(zip(fs, fd)):
        state = coalesce_step(state, mode, keep=k == last)
    return coalesce_finish(state)


def _from_modes(ms: List[Any], md: List[Any]) -> Layout:
    if len(ms) == 1:
        return _make(ms[0], md[0])
    return _make(tuple(ms), tuple(md))


def coalesce(L: Layout) -> Layout:
    fs, fd = raw_flatten(L.shape), raw_flatten(L.stride)
    return _from_modes(*coalesce_flat(fs, fd))


def filter_step(state: CoalesceState, mode: Tuple[Any, Any]) -> CoalesceState:
    """One step of filter's fold: a mode proved to have extent 1 or stride 0 is left out,
    any other goes through :func:`coalesce_step`."""
    s, d = mode
    if eq(s, 1) is True or eq(d, 0) is True:
        return state
    return coalesce_step(state, mode)


def filter_(L: Layout) -> Layout:
    """coalesce over the modes that are not proved extent 1 or stride 0: a fold of
    :func:`filter_step`."""
    state = COALESCE_START
    for mode in zip(raw_flatten(L.shape), raw_flatten(L.stride)):
        state = filter_step(state, mode)
    return _from_modes(*coalesce_finish(state))


# ----------------------------------------------------------------------------- composition
def _where(k: int, i: Optional[int] = None) -> str:
    if k < 0:
        return "" if i is None else f"A's mode {i}"
    return f"mode {k} of B" + ("" if i is None else f" at A's mode {i}")


def compose_leaf(
    As: List[Any], Ad: List[Any], n: Any, r: Any, k: int, conc: Callable[[dict], Any]
) -> Tuple[List[Any], List[Any], dict]:
    """A composed with the leaf n:r of B (the walk of ``ops._compose_leaf_cute``), ``As``/``Ad``
    the coalesced A (last mode kept), ``k`` the leaf's index (-1 for a single leaf): the
    result's modes and, per mode ``i`` of A the leaf lands in, the largest offset it uses
    there (the footprint :func:`check_leaves_disjoint` sums).  Past the trivial leaves
    (extent 1, stride 0) a fold of :func:`compose_leaf_step` over A's modes below the last,
    closed by :func:`compose_leaf_close` (the last, unbounded mode) and
    :func:`compose_leaf_finish`."""
    if eq(n, 1) is True:
        return [1], [0], {}
    if eq(r, 0) is True:
        return [n], [0], {}
    need(
        _sympy().Ge(r, 0) if type(r) is not int else r >= 0,
        op="composition",
        condition_name="non-negative strides of B",
        where=_where(k),
        concrete=conc,
    )
    state: ComposeLeafState = ((), (), (), n, r)
    last = len(As) - 1
    for i in range(last):
        state = compose_leaf_step(state, i, As[i], Ad[i], k, conc)
    return compose_leaf_finish(compose_leaf_close(state, Ad[last]))


#: the state of compose_leaf's fold over A's modes below the last: (the result's extents so
#: far, its strides so far, the footprint so far as (mode, largest offset) pairs, the leaf's
#: points left ``rest_n``, the stride left ``rest_r``).  The step reads only ``rest_n`` and
#: ``rest_r``; the other three are appended to, never read -- the induction of the proof
#: catalog runs the step with opaque objects there, which fail on any other use.
ComposeLeafState = Tuple[Any, Any, Any, Any, Any]


def compose_leaf_step(
    state: ComposeLeafState,
    i: Any,
    s: Any,
    d: Any,
    k: int = -1,
    conc: Optional[Callable[[dict], Any]] = None,
) -> ComposeLeafState:
    """One step of :func:`compose_leaf`'s fold: A's mode ``i`` (extent ``s``, stride ``d``).
    Nothing left (``rest_n == 1`` proved): unchanged.  The remaining stride steps over the
    whole mode (``s | rest_r``): the stride left is ``rest_r / s``.  Every remaining point
    lands inside the mode without a carry (``(rest_n - 1) rest_r < s``): one mode
    ``rest_n : rest_r d``, nothing left.  Else the stride must divide the mode (CuTe's stride
    divisibility) and the mode takes ``take`` points -- all of them when they fit
    (``rest_n <= s / rest_r``), else ``s / rest_r`` of them, which must divide ``rest_n``
    (shape divisibility) -- as one mode ``take : rest_r d``; ``rest_n / take`` points are
    left, at stride 1 of the next mode.  ``i`` only names the mode (the footprint's key and
    where a refusal happened)."""
    ms, md, occ, rest_n, rest_r = state
    if eq(rest_n, 1) is True:
        return ms, md, occ, 1, rest_r
    skip = dvd(s, rest_r)  # the remaining stride steps over this whole mode
    if skip is True:
        return ms, md, occ, rest_n, xdiv(rest_r, s)
    inside = dvd(rest_r, s)  # the remaining stride lands inside this mode
    if inside is not True and lt(_num((rest_n - 1) * rest_r), s) is True:
        # CuTe's divisibility is not known, but every remaining point of B lands inside
        # this mode (c * rest_r < s for c < rest_n): no carry, the result is exact
        return ms + (rest_n,), md + (_num(rest_r * d),), occ + ((i, _num(rest_r * (rest_n - 1))),), 1, rest_r
    if inside is not True:
        sp = _sympy()
        need(
            sp.Or(_dvd_cond(s, rest_r), _dvd_cond(rest_r, s)) if not _both_int(s, rest_r) else False,
            op="composition",
            condition_name="stride divisibility",
            where=_where(k, i),
            concrete=conc,
        )
    m = xdiv(s, rest_r)
    fits = le(rest_n, m)
    if fits is True:
        take = rest_n
    else:
        even = dvd(m, rest_n)
        if even is not True:
            sp = _sympy()
            cond = sp.Or(sp.Le(rest_n, m), _dvd_cond(m, rest_n)) if not _both_int(rest_n, m) else False
            need(
                cond,
                op="composition",
                condition_name="shape divisibility",
                where=_where(k, i),
                concrete=conc,
            )
            # proved: one of the two holds; which one decides the extent taken
            if fits is None and even is None:
                raise UndecidableConditionError(
                    f"composition needs to know which of {pretty(sp.Le(rest_n, m))} and "
                    f"{pretty(_dvd_cond(m, rest_n))} holds (shape divisibility of {_where(k, i) or 'B'}: "
                    "the result's shape depends on it); assume one of them",
                    condition=as_python(sp.Le(rest_n, m)),
                    expr=sp.Le(rest_n, m),
                )
            take = rest_n if le(rest_n, m) is True else m
        else:
            take = m
    md2 = md + (_num(rest_r * d),)
    occ2 = occ + ((i, _num(rest_r * (take - 1))),)
    return ms + (take,), md2, occ2, xdiv(rest_n, take), 1


def compose_leaf_close(state: ComposeLeafState, d: Any) -> ComposeLeafState:
    """The last mode of A (stride ``d``, read past its extent) takes what is left of the leaf:
    one mode ``rest_n : rest_r d`` unless ``rest_n == 1`` is proved; nothing is left."""
    ms, md, occ, rest_n, rest_r = state
    if eq(rest_n, 1) is not True:
        return ms + (rest_n,), md + (_num(rest_r * d),), occ, 1, rest_r
    return ms, md, occ, 1, rest_r


def compose_leaf_finish(state: ComposeLeafState) -> Tuple[List[Any], List[Any], dict]:
    """The fold's modes (extents, strides) and footprint (mode -> largest offset); ``1:0`` and
    no footprint when no mode was taken."""
    ms, md, occ = state[0], state[1], state[2]
    if not ms:
        return [1], [0], {}
    return list(ms), list(md), dict(occ)


def check_leaves_disjoint(
    As: List[Any],
    leaves: List[Tuple[List[Any], List[Any], dict]],
    conc: Optional[Callable[[dict], Any]] = None,
) -> None:
    """Composition with several leaves of B: where two or more leaves land in the same mode
    ``i`` of A, their footprints (the largest offsets :func:`compose_leaf` reports) must add
    up to less than that mode's extent (disjointness; else inadmissible).  The sums are a fold
    of :func:`footprint_sum_step` over the leaves; each mode is then checked on its own
    (:func:`check_mode_disjoint`)."""
    if len(leaves) > 1 and len(As) > 1:
        used: dict = {}
        for _ms, _md, occ in leaves:
            used = footprint_sum_step(used, occ)
        for i, (u, users) in sorted(used.items(), key=lambda kv: kv[0]):
            check_mode_disjoint(As, i, u, users, conc)


def footprint_sum_step(used: dict, occ: dict) -> dict:
    """One step of the overlap check's sums: a leaf's footprint ``occ`` (mode -> largest
    offset) added to ``used`` (mode -> (the footprints' sum, how many leaves land there))."""
    out = dict(used)
    for i, dmax in occ.items():
        u, users = out.get(i, (0, 0))
        out[i] = (u + dmax, users + 1)
    return out


def check_mode_disjoint(
    As: Sequence[Any], i: int, u: Any, users: int, conc: Optional[Callable[[dict], Any]] = None
) -> None:
    """The overlap check at A's mode ``i``: used by two or more leaves, their footprints' sum
    ``u`` must be below the mode's extent ``As[i]`` (else inadmissible); reads only ``As[i]``."""
    if users < 2:
        return
    sp = _sympy()
    need(
        sp.Lt(u, As[i]) if not _both_int(u, As[i]) else u < As[i],
        op="composition",
        condition_name="disjointness of B's modes in A",
        where=f"A's mode {i}",
        concrete=conc,
    )


@_either_branch(shape=True)
def composition(A: Layout, B: Layout) -> Layout:
    """``A ∘ B`` with symbolic leaves (see the module docstring)."""
    from .. import ops

    fa, da = raw_flatten(A.shape), raw_flatten(A.stride)
    As, Ad = coalesce_flat(fa, da, keep_last=True)
    fbs, fbd = raw_flatten(B.shape), raw_flatten(B.stride)

    def conc(asg: dict) -> Any:
        return _concrete(ops.composition, asg, A, B)

    multi = len(fbs) > 1
    leaves = [compose_leaf(As, Ad, n, r, k if multi else -1, conc) for k, (n, r) in enumerate(zip(fbs, fbd))]
    check_leaves_disjoint(As, leaves, conc)
    ps = [lf[0][0] if len(lf[0]) == 1 else tuple(lf[0]) for lf in leaves]
    pd = [lf[1][0] if len(lf[1]) == 1 else tuple(lf[1]) for lf in leaves]
    if type(B.shape) is not tuple:
        return _make(ps[0], pd[0])
    return _make(raw_unflatten(tuple(ps), B.shape), raw_unflatten(tuple(pd), B.stride))


# ----------------------------------------------------------------------------- complement
def sort_modes(modes: List[Tuple[Any, Any, int]], op: str) -> List[Tuple[Any, Any, int]]:
    """Sort (stride, extent, index) by stride, equal strides by index: insertion sort, a fold
    of :func:`sort_insert`; each comparison must be decided."""
    out: List[Tuple[Any, Any, int]] = []
    for m in modes:
        out = sort_insert(out, m, op)
    return out


def sort_insert(
    out: List[Tuple[Any, Any, int]], m: Tuple[Any, Any, int], op: str
) -> List[Tuple[Any, Any, int]]:
    """``out`` (sorted) with the mode ``m`` inserted before the first mode it precedes, at the
    end when none: a fold of :func:`sort_scan_step` over ``out``."""
    pos: Optional[int] = None
    for j, o in enumerate(out):
        pos = sort_scan_step(pos, j, m, o, op)
    if pos is None:
        return out + [m]
    return out[:pos] + [m] + out[pos:]


def sort_scan_step(
    pos: Optional[int], j: int, m: Tuple[Any, Any, int], o: Tuple[Any, Any, int], op: str
) -> Optional[int]:
    """One step of the insertion's scan: a position found stays (nothing more is compared);
    else ``j`` when ``m`` precedes the mode ``o`` at ``j`` (a smaller stride, or an equal
    one and a smaller index), None when not.  Each comparison must be decided."""
    if pos is not None:
        return pos
    sp = _sympy()
    v = le(m[0], o[0])
    if v is None:
        raise UndecidableConditionError(
            f"{op} needs the order of the strides {m[0]} and {o[0]}; neither "
            f"{pretty(sp.Le(m[0], o[0]))} nor {pretty(sp.Le(o[0], m[0]))} follows from the "
            "assumptions",
            condition=as_python(sp.Le(m[0], o[0])),
            expr=sp.Le(m[0], o[0]),
        )
    if not v:
        return None
    if m[2] < o[2]:
        return j
    same = eq(m[0], o[0])
    if same is None:  # equal strides go by index: undecided, so is the order
        raise UndecidableConditionError(
            f"{op} needs the order of the strides {m[0]} and {o[0]}: {pretty(sp.Le(m[0], o[0]))} "
            f"holds, but not {pretty(sp.Lt(m[0], o[0]))} (equal strides are ordered by index)",
            condition=as_python(sp.Lt(m[0], o[0])),
            expr=sp.Lt(m[0], o[0]),
        )
    return None if same else j


def kept_mode(
    op: str, k: int, s: Any, d: Any, L: Layout, conc: Optional[Callable[[dict], Any]] = None
) -> bool:
    """Does the mode ``k`` (``s:d``) of ``L`` count for ``op`` (complement, left_inverse)?
    False when extent 1 or stride 0 is proved; True when both are proved false and the
    stride is non-negative; a negative stride is inadmissible (``need``), an undecided
    extent-1 / stride-0 status an UndecidableConditionError (an ignored mode changes the
    result)."""
    unit, zero = eq(s, 1), eq(d, 0)
    if unit is True or zero is True:
        return False
    if unit is None or zero is None:  # an ignored mode changes the result
        sp = _sympy()
        c = sp.Ge(s, 2) if unit is None else sp.Ne(d, 0)
        raise UndecidableConditionError(
            f"{op} needs to know whether mode {k} ({s}:{d}) of {L} is ignored (extent 1 or "
            f"stride 0); assume {pretty(c)}",
            condition=as_python(c),
            expr=c,
        )
    if lt(d, 0) is not False:
        if op == "complement":
            need(
                _sympy().Ge(d, 0) if type(d) is not int else d >= 0,
                op="complement",
                condition_name="non-negative strides",
                where=f"mode {k}",
                concrete=conc,
            )
        else:
            need(_sympy().Ge(d, 0), op=op, condition_name="non-negative strides", concrete=conc)
    return True


@_either_branch(shape=False)
def complement(L: Layout, cot: Any) -> Layout:
    """``complement(L, cot)`` with symbolic leaves or cotarget."""
    from .. import ops

    def conc(asg: dict) -> Any:
        return _concrete(ops.complement, asg, L, cot)

    fs, fd = raw_flatten(L.shape), raw_flatten(L.stride)
    modes = []
    for k, (s, d) in enumerate(zip(fs, fd)):
        if not kept_mode("complement", k, s, d, L, conc):
            continue
        modes.append((d, s, k))
    state = COMPLEMENT_START
    for mode in sort_modes(modes, "complement"):
        state = complement_step(state, mode, conc)
    return complement_finish(state, cot)


#: the state of complement's fold over L's modes sorted by stride: (the complement's
#: extents so far, its strides so far, the extent covered so far).  The step reads only
#: the covered extent; the two tuples are appended to, never read.
ComplementState = Tuple[Any, Any, Any]
COMPLEMENT_START: ComplementState = ((), (), 1)


def complement_step(
    state: ComplementState, mode: Tuple[Any, Any, int], conc: Optional[Callable[[dict], Any]] = None
) -> ComplementState:
    """One step of complement's fold: the next mode ``(d, s, k)`` of L (stride, extent,
    index; sorted by stride) must start on a multiple of the covered extent ``cur`` (the
    stride chain: else inadmissible); the gap ``d / cur`` below it, unless 1, becomes a mode
    ``d/cur : cur`` of the complement, and ``s*d`` is covered."""
    rs, rd, cur = state
    d, s, k = mode
    if dvd(cur, d) is not True:
        need(
            _dvd_cond(cur, d) if not _both_int(cur, d) else False,
            op="complement",
            condition_name="complement admissibility (stride chain)",
            where=f"mode {k}",
            concrete=conc,
        )
    q = xdiv(d, cur)
    if eq(q, 1) is not True:
        rs, rd = rs + (q,), rd + (cur,)
    return rs, rd, _num(s * d)


def complement_rest(cur: Any, cot: Any) -> Tuple[List[Any], List[Any]]:
    """The complement's modes above the covered extent ``cur``, up to the cotarget ``cot``:
    for a tuple cotarget that ``cur`` divides exactly (a fold of :func:`complement_rest_step`
    over its modes), its remaining modes; else one mode ``ceil(size(cot) / cur) : cur`` (the
    cotarget rounded up to a multiple of ``cur``)."""
    if type(cot) is tuple:
        state: RestState = ((), (), cur, cur)
        for x in raw_flatten(cot):
            state = complement_rest_step(state, x)
        if state is not None:
            return list(state[0]), list(state[1])
    return [ceil_div(raw_product(cot), cur)], [cur]


#: the state of complement_rest's fold over a tuple cotarget's modes: (the remaining modes'
#: extents so far, their strides so far, the part of ``cur`` not divided out yet, the next
#: stride); None once a mode is found that neither divides nor is divided by that part.
RestState = Optional[Tuple[Any, Any, Any, Any]]


def complement_rest_step(state: RestState, x: Any) -> RestState:
    """One step of :func:`complement_rest` over a tuple cotarget: the cotarget's mode ``x``
    divides the part ``d`` of ``cur`` left (the mode is used up: extent 1 remains, ``d/x``
    left), or ``d`` divides it (extent ``x/d`` remains, nothing left); else (or undecided) the
    fold fails.  The remaining extent becomes a mode at the next stride."""
    if state is None:
        return None
    rs, rd, d, p = state
    if dvd(x, d) is True:
        e, d = 1, xdiv(d, x)
    elif dvd(d, x) is True:
        e, d = xdiv(x, d), 1
    else:
        return None
    return rs + (e,), rd + (p,), d, _num(p * e)


def complement_finish(state: ComplementState, cot: Any) -> Layout:
    """The fold's modes and :func:`complement_rest`, coalesced."""
    rs, rd = complement_rest(state[2], cot)
    return _from_modes(*coalesce_flat(tuple(state[0]) + tuple(rs), tuple(state[1]) + tuple(rd)))


# ----------------------------------------------------------------------------- inverses
@_either_branch(shape=False)
def right_inverse(L: Layout) -> Layout:
    fs, fd = raw_flatten(L.shape), raw_flatten(L.stride)
    cs, cd = coalesce_flat(fs, fd)
    pp: List[Any] = []
    p: Any = 1
    for s in cs:
        pp.append(p)
        p = _num(p * s)
    state = RIGHT_INVERSE_START
    while (i := right_inverse_pick(cd, state)) is not None:
        state = right_inverse_step(state, (cs[i], cd[i], pp[i], i))
    if not state[0]:
        return _make(1, 0)
    return _from_modes(*coalesce_flat(state[0], state[1]))


#: the state of right_inverse's fold: (the inverse's extents so far, its strides so far,
#: the next stride the chain needs, the indices of the modes used).
RightInverseState = Tuple[Any, Any, Any, frozenset]
RIGHT_INVERSE_START: RightInverseState = ((), (), 1, frozenset())


def right_inverse_pick(cd: Sequence[Any], state: RightInverseState) -> Optional[int]:
    """The first unused mode of coalesce(L) (strides ``cd``) whose stride is proved to be
    the chain's next stride; None when every unused stride is proved different: a fold of
    :func:`right_inverse_pick_step` over the modes."""
    found: Optional[int] = None
    for i, d in enumerate(cd):
        found = right_inverse_pick_step(found, i, d, state)
    return found


def right_inverse_pick_step(found: Optional[int], i: int, d: Any, state: RightInverseState) -> Optional[int]:
    """One step of the pick's search: a mode found stays (nothing more is read); else ``i``
    when the mode ``i`` (stride ``d``) is unused and ``d`` is the chain's next stride, None
    when it is used or ``d`` is proved different; an undecided equality raises."""
    if found is not None:
        return found
    cur, used = state[2], state[3]
    if i in used:
        return None
    v = eq(d, cur)
    if v is None:
        raise UndecidableConditionError(
            f"right_inverse needs to know whether the stride {d} continues the chain at {cur}",
            condition=as_python(_sympy().Eq(d, cur)),
            expr=_sympy().Eq(d, cur),
        )
    return i if v else None


def right_inverse_step(state: RightInverseState, mode: Tuple[Any, Any, Any, int]) -> RightInverseState:
    """One step of right_inverse's fold: the mode ``(s, d, p, i)`` of coalesce(L) (extent,
    stride == the chain's next stride, its coordinate's prefix product, its index) becomes
    the inverse's next mode ``s : p``; the chain goes on at ``s*d``."""
    rs, rd, _cur, used = state
    s, d, p, i = mode
    return rs + (s,), rd + (p,), _num(s * d), used | {i}


@_either_branch(shape=False)
def left_inverse(L: Layout) -> Layout:
    from .. import ops

    def conc(asg: dict) -> Any:
        return _concrete(ops.left_inverse, asg, L)

    fs, fd = raw_flatten(L.shape), raw_flatten(L.stride)
    cs, cd = coalesce_flat(fs, fd)
    pp: List[Any] = []
    p: Any = 1
    for s in cs:
        pp.append(p)
        p = _num(p * s)
    modes = []
    for i, (s, d) in enumerate(zip(cs, cd)):
        if not kept_mode("left_inverse", i, s, d, L, conc):
            continue
        modes.append((d, cs[i], pp[i]))
    if not modes:
        return _make(1, 0)
    order = sort_modes([(d, s, k) for k, (d, s, _p) in enumerate(modes)], "left_inverse")
    modes = [modes[k] for _d, _s, k in order]
    state = left_inverse_start(modes[0])
    for mode in modes[1:]:
        state = left_inverse_step(state, mode, conc)
    return left_inverse_finish(state)


#: the state of left_inverse's fold over coalesce(L)'s modes sorted by stride: (the
#: inverse's extents so far, its strides so far, the previous mode (d, s, p)).  The step
#: reads only the previous mode; the two tuples are appended to, never read.
LeftInverseState = Tuple[Any, Any, Tuple[Any, Any, Any]]


def left_inverse_start(mode: Tuple[Any, Any, Any]) -> LeftInverseState:
    """The fold's first state: the offsets below the smallest stride ``d`` map to 0."""
    return (mode[0],), (0,), mode


def left_inverse_step(
    state: LeftInverseState, mode: Tuple[Any, Any, Any], conc: Optional[Callable[[dict], Any]] = None
) -> LeftInverseState:
    """One step of left_inverse's fold: the next mode ``(d1, s1, p1)`` (stride, extent,
    prefix product; sorted by stride) must have a stride that the previous mode's ``d0``
    divides and that ``s0*d0`` does not exceed (else inadmissible); the previous mode's
    digit is then read off the offset as the mode ``d1/d0 : p0`` of the inverse."""
    rs, rd, (d0, s0, p0) = state
    d1 = mode[0]
    sp = _sympy()
    if dvd(d0, d1) is not True:
        need(
            _dvd_cond(d0, d1) if not _both_int(d0, d1) else False,
            op="left_inverse",
            condition_name="left-inverse divisibility",
            concrete=conc,
        )
    if le(s0 * d0, d1) is not True:
        need(
            sp.Le(s0 * d0, d1) if not _both_int(s0 * d0, d1) else False,
            op="left_inverse",
            condition_name="injectivity (non-overlapping modes)",
            concrete=conc,
        )
    return rs + (xdiv(d1, d0),), rd + (p0,), mode


def left_inverse_close(state: LeftInverseState) -> Tuple[Any, Any]:
    """The last mode's digit (extent ``s``, prefix product ``p``) closes the inverse: its
    modes (extents, strides)."""
    rs, rd, (_d, s, p) = state
    return rs + (s,), rd + (p,)


def left_inverse_finish(state: LeftInverseState) -> Layout:
    """The closed inverse (:func:`left_inverse_close`), coalesced."""
    return _from_modes(*coalesce_flat(*left_inverse_close(state)))


# ----------------------------------------------------------------------------- the rest
def compatible(a: Any, b: Any) -> bool:
    """Shape compatibility; each size equality must be decided."""
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(compatible(x, y) for x, y in zip(a, b))
    v = eq(a, raw_product(b))
    if v is None:
        sp = _sympy()
        raise UndecidableConditionError(
            f"compatible needs to know whether {pretty(sp.Eq(a, raw_product(b)))}",
            condition=as_python(sp.Eq(a, raw_product(b))),
            expr=sp.Eq(a, raw_product(b)),
        )
    return v


def block_divides(t: Any, b: Any, i: int) -> None:
    """tile_to_shape: the block's extent must divide the target's, mode ``i``."""
    if dvd(b, t) is not True:
        need(
            _dvd_cond(b, t) if not _both_int(b, t) else False,
            op="tile_to_shape",
            condition_name="block divides target",
            where=f"mode {i}",
        )
