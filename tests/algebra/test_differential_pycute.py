"""Differential tests: layoutproof against legacy pycute (``nvidia-cutlass==4.2.0.0``).

Every case is drawn from ``random.Random(seed)`` with a fixed seed per operation, so each CI
run compares exactly the same cases (more than 10,000 in all; the last test asserts it).

For each case both libraries are called.  The results are compared as *functions*: same
size, and the same offset at every 1-D coordinate of the domain (computed here with numpy
from the result's flattened shape and stride, independently of either library).  Shapes
are also compared structurally, but a structural mismatch is only recorded, never a
failure (see docs/semantics.md, section 8).

Where the two differ, or one of them rejects the case, a brute-force check of the
operation's post-condition decides who is right:

* layoutproof returns and its result violates the post-condition  -> failure (a bug);
* layoutproof raises InadmissibleError and pycute returns a layout that *satisfies* the
  post-condition -> "incompleteness" (collected and reported by ``test_no_incompleteness``);
* layoutproof raises anything but InadmissibleError -> failure;
* pycute asserts, or returns a layout violating the post-condition -> a recorded, expected
  difference (legacy pycute is unsound there).

Post-conditions (A-hat is A with its last flat mode unbounded, CuTe C++'s semantics):

* composition(A, B):  size(R) == size(B) and R(c) == A-hat(B(c)) for every c (defined only
  when B(c) >= 0 for every c);
* complement(L, M):   with F = L without its stride-0 / extent-1 modes, (F, C) is a
  bijection onto [0, N), C is strictly increasing, and N == cur * ceil(M / cur) where cur is
  the extent covered by F's stride chain;
* right_inverse(L):   L(R(i)) == i for i < size(R) (and layoutproof's R is not smaller);
* left_inverse(L):    R(L(i)) == i for every i when L is injective, L(R(L(i))) == L(i) else;
* logical_divide(A, B) == A-hat o (B, C) with C a valid complement(B, size(A));
* logical_product(A, B) == (A, C-hat o B) with C a valid complement(A, size(A)*cosize(B));
* zipped / tiled divides and products: the same, mode by mode, after regrouping.
"""

from __future__ import annotations

import functools
import random
import zlib
from collections import Counter

import numpy as np
import pycute as pc  # the legacy oracle; installed by the README's test command

import layoutproof as lp
from layoutproof import InadmissibleError, Layout

# ----------------------------------------------------------------------------- case counts
N_EVAL = 1500  # layouts; every 1-D coordinate, size, cosize
N_HIER = 1000  # layouts; hierarchical / n-D coordinates and slices
N_INTTUPLE = 500  # shapes; 7 int-tuple functions each
N_COALESCE = 1200
N_FILTER = 800
N_COMPOSE = 6000
N_COMPOSE_TUPLE = 1500
N_COMPLEMENT = 2500
N_RINV = 1500
N_LINV = 1500
N_LDIV = 2000
N_LDIV_TUPLE = 800
N_ZDIV = 800
N_TDIV = 800
N_LPROD = 2000
N_LPROD_TUPLE = 600
N_ZPROD = 700
N_TPROD = 700
N_LPROD_INT = 100

MIN_TOTAL_CASES = 10_000


def _seed(op: str) -> int:
    return zlib.crc32(op.encode()) ^ 0x5EED


# ----------------------------------------------------------------------------- int-tuple helpers
def _flat(t):
    if type(t) is tuple:
        out = []
        for e in t:
            out.extend(_flat(e))
        return out
    return [t]


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def _congruent(a, b):
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))
    return type(b) is not tuple


def _unflatten(flat, profile):
    it = iter(flat)

    def walk(p):
        if type(p) is tuple:
            return tuple(walk(e) for e in p)
        return next(it)

    return walk(profile)


def _modes(shape, stride):
    if type(shape) is tuple:
        return list(zip(shape, stride))
    return [(shape, stride)]


def _valid(shape, stride):
    """A well-formed layout (every extent an int >= 1, congruent stride)?"""
    if not _congruent(shape, stride):
        return False
    return all(type(s) is int and s >= 1 for s in _flat(shape)) and all(type(d) is int for d in _flat(stride))


def _offsets(shape, stride):
    """Every offset of shape:stride in colexicographic order of the 1-D domain."""
    out = np.zeros(1, dtype=np.int64)
    for s, d in zip(_flat(shape), _flat(stride)):
        if s == 1:
            continue
        out = (np.arange(s, dtype=np.int64)[:, None] * d + out[None, :]).reshape(-1)
    return out


def _coalesce_flat(shape, stride):
    rs, rd = [], []
    for s, d in zip(_flat(shape), _flat(stride)):
        if s == 1:
            continue
        if rs and rs[-1] * rd[-1] == d:
            rs[-1] *= s
        else:
            rs.append(s)
            rd.append(d)
    return (rs, rd) if rs else ([1], [0])


def _ahat(shape, stride, x):
    """shape:stride at every x >= 0 of the array x, its last flat mode unbounded (CuTe C++:
    the layout's own last mode extends, a trailing extent-1 mode included)."""
    cs, cd = list(_flat(shape)), list(_flat(stride))
    off = np.zeros_like(x)
    for s, d in zip(cs[:-1], cd[:-1]):
        off += (x % s) * d
        x = x // s
    return off + x * cd[-1]


def _lo(x):
    """A layoutproof Layout for a tiler element (Layout, int or None)."""
    if x is None or isinstance(x, Layout):
        return x
    return Layout(x)


def _to_pc(x):
    """The pycute twin of a Layout, an int, None, or a tuple of those."""
    if isinstance(x, Layout):
        return pc.Layout(x.shape, x.stride)
    if type(x) is tuple:
        return tuple(_to_pc(e) for e in x)
    return x


def _show(x):
    if isinstance(x, (Layout, pc.Layout)) or (hasattr(x, "shape") and hasattr(x, "stride")):
        return f"{_fmt(x.shape)}:{_fmt(x.stride)}"
    if type(x) is tuple:
        return "(" + ", ".join(_show(e) for e in x) + ")"
    return repr(x)


def _fmt(t):
    if type(t) is tuple:
        return "(" + ",".join(_fmt(e) for e in t) + ")"
    return str(t)


# ----------------------------------------------------------------------------- the report
class Report:
    """Outcome counts of one operation's cases, with the shortest example of each kind."""

    def __init__(self, op: str) -> None:
        self.op = op
        self.cases = 0
        self.kinds: Counter = Counter()
        self.examples: dict = {}
        self.failures: list = []
        self.incomplete: list = []
        self.extra: Counter = Counter()
        self.neg_rhs: list = []

    def note(self, kind: str, example: str) -> None:
        self.kinds[kind] += 1
        old = self.examples.get(kind)
        if old is None or len(example) < len(old):
            self.examples[kind] = example

    def fail(self, msg: str) -> None:
        self.failures.append(msg)
        self.note("FAILURE: layoutproof wrong or raised an unexpected error", msg)


# Post-conditions return None when they hold, else a short reason (the category) and a detail.
def _same_fn(a, b):
    """Same size and the same function: a and b are (shape, stride) pairs."""
    oa, ob = _offsets(*a), _offsets(*b)
    return oa.shape == ob.shape and np.array_equal(oa, ob)


NEG_RHS = "B has negative offsets, A o B undefined"


def _run_case(rep, ex, lp_call, pc_call, post, same=None, struct=True, post_pc=None, peer="pycute"):
    """One differential case; see the module docstring for the decision rules.

    ``post(shape, stride)`` checks a layoutproof result, ``post_pc`` (default ``post``) the
    peer's (``peer`` names it in the report: pycute, CuTe C++); ``same(R, P)`` compares two
    results (default: function and size).  Returns ``(R, lp_error, P)`` for callers that
    look further.
    """
    rep.cases += 1
    post_pc = post_pc or post
    try:
        R = lp_call()
        lp_err = None
    except InadmissibleError as e:
        R, lp_err = None, e
    except Exception as e:  # noqa: BLE001 - any other error is a bug
        rep.fail(f"{ex}: layoutproof raised {type(e).__name__}: {e}")
        return None, None, None
    try:
        P = pc_call()
        pc_err = None
        if not _valid(P.shape, P.stride):
            ex = f"{ex} [{peer}: {_show(P)}]"
            P, pc_err = None, "returns a malformed layout, extent < 1"
    except AssertionError:
        P, pc_err = None, "AssertionError"
    except Exception as e:  # noqa: BLE001 - pycute's other crashes are recorded
        P, pc_err = None, type(e).__name__
    if R is not None:
        why = post(R.shape, R.stride)
        if why and why[0] == NEG_RHS:
            # layoutproof documents InadmissibleError for a rhs with negative strides
            rep.neg_rhs.append(f"{ex} -> layoutproof {_show(R)}")
            rep.note(
                "layoutproof RETURNS although the rhs has negative offsets (it raises "
                "for the same rhs elsewhere)",
                f"{ex} -> layoutproof {_show(R)}, {peer} {_show(P) if P is not None else pc_err}",
            )
            return R, None, P
        if why:
            rep.fail(f"{ex}: layoutproof returns {_show(R)}, which violates the post-condition: {why}")
            return R, None, P
        if P is None:
            rep.note(
                f"{peer} fails ({pc_err}), layoutproof returns a verified result",
                f"{ex} -> layoutproof {_show(R)}",
            )
            return R, None, P
        if (same or (lambda r, p: _same_fn((r.shape, r.stride), (p.shape, p.stride))))(R, P):
            rep.note("agree", ex)
            if struct and R.shape != P.shape:
                rep.note(
                    "STRUCTURE: agree as functions, shapes differ",
                    f"{ex} -> layoutproof {_show(R)}, {peer} {_show(P)}",
                )
            elif struct and R.stride != P.stride:
                rep.note(
                    "STRUCTURE: same shape, strides differ (only at extent-1 leaves)",
                    f"{ex} -> layoutproof {_show(R)}, {peer} {_show(P)}",
                )
            return R, None, P
        pwhy = post_pc(P.shape, P.stride)
        if pwhy:
            rep.note(
                f"{peer} returns a wrong layout [{pwhy[0]}], layoutproof verified",
                f"{ex} -> layoutproof {_show(R)}, {peer} {_show(P)} ({pwhy[1]})",
            )
        else:
            rep.note(
                "both satisfy the post-condition but differ",
                f"{ex} -> layoutproof {_show(R)}, {peer} {_show(P)}",
            )
        return R, None, P
    cond = lp_err.condition
    if P is None:
        rep.note(f"both reject: layoutproof [{cond}], {peer} {pc_err}", ex)
        return None, lp_err, None
    pwhy = post_pc(P.shape, P.stride)
    if pwhy:
        rep.note(
            f"layoutproof raises [{cond}]; {peer} returns a wrong layout [{pwhy[0]}]",
            f"{ex} -> {peer} {_show(P)} ({pwhy[1]})",
        )
    else:
        rep.incomplete.append(f"{ex}: layoutproof raises [{cond}] but {peer}'s {_show(P)} is correct")
        rep.note(
            f"INCOMPLETENESS: layoutproof raises, {peer}'s answer is correct", f"{ex} -> {peer} {_show(P)}"
        )
    return None, lp_err, P


# ----------------------------------------------------------------------------- generators
_EXT = (1, 2, 2, 2, 2, 3, 3, 4, 4, 4, 5, 6, 7, 8, 8)
_STRIDES = (0, 1, 1, 1, 2, 2, 2, 3, 4, 4, 5, 6, 8, 8, 12, 16, 16, 24, 32)


def _nest(rng, leaves):
    """Group a flat list (<= 9 items) into a nested tuple of rank <= 3 and depth <= 2,
    or return the single item itself."""
    n = len(leaves)
    if n == 1 and rng.random() < 0.6:
        return leaves[0]
    ranks = [r for r in (1, 2, 3) if r <= n and n <= 3 * r]
    r = rng.choice(ranks)
    # split n leaves into r non-empty consecutive groups of <= 3
    while True:
        cuts = sorted(rng.sample(range(1, n), r - 1)) if r > 1 else []
        bounds = [0] + cuts + [n]
        groups = [leaves[bounds[i] : bounds[i + 1]] for i in range(r)]
        if all(len(g) <= 3 for g in groups):
            break
    out = []
    for g in groups:
        if len(g) == 1 and rng.random() < 0.8:
            out.append(g[0])
        else:
            out.append(tuple(g))
    return tuple(out)


def _layout_from(rng, pairs):
    """A Layout of the (extent, stride) leaves, randomly nested."""
    idx = _nest(rng, list(range(len(pairs))))
    shape = _map(idx, lambda i: pairs[i][0])
    stride = _map(idx, lambda i: pairs[i][1])
    return Layout(shape, stride)


def _map(t, f):
    if type(t) is tuple:
        return tuple(_map(e, f) for e in t)
    return f(t)


def _extents(rng, max_size=256, max_leaves=6):
    for _ in range(50):
        n = rng.choice((1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 5, 6))
        n = min(n, max_leaves)
        ext = [rng.choice(_EXT) for _ in range(n)]
        if _prod(ext) <= max_size:
            return ext
    return [rng.choice((2, 3, 4))]


def _neg(rng, d, p=0.06):
    return -d if d and rng.random() < p else d


def g_layout(rng, kind=None, max_size=256, neg=0.06):
    """A random valid layout: rank 1-3, depth <= 2, extents 1-8, size <= max_size.

    kinds: random strides in 0..32; compact with a random order; chained ("gappy") strides
    with gaps and some stride-0 leaves (complement-admissible); column-major.
    """
    kind = kind or rng.choice(("random", "random", "compact", "gappy", "gappy", "colmajor"))
    ext = _extents(rng, max_size)
    n = len(ext)
    if kind == "random":
        strides = [_neg(rng, rng.choice(_STRIDES), neg) for _ in range(n)]
    elif kind == "colmajor":
        strides = []
        cur = 1
        for e in ext:
            strides.append(cur)
            cur *= e
    else:
        order = list(range(n))
        rng.shuffle(order)
        strides = [0] * n
        cur = 1
        for i in order:
            if kind == "gappy":
                cur *= rng.choice((1, 1, 1, 2, 3))
            strides[i] = cur
            cur *= ext[i]
        if kind == "gappy":
            strides = [0 if rng.random() < 0.08 else _neg(rng, d, neg / 2) for d in strides]
    return _layout_from(rng, list(zip(ext, strides)))


def _split(rng, s):
    """A random factorization of s into factors > 1 (in a random order)."""
    out = []
    while s > 1:
        divs = [d for d in range(2, s + 1) if s % d == 0]
        d = rng.choice(divs) if rng.random() < 0.5 else s
        out.append(d)
        s //= d
    return out


def g_admissible_B(rng, A, max_size=512, beyond=True):
    """A layout B whose leaves are disjoint runs of digits of A's coalesced mixed radix (in
    a random order, randomly nested), so that A o B is admissible; optionally some stride-0
    and extent-1 leaves and leaves reaching into A's unbounded last mode."""
    As, _ = _coalesce_flat(A.shape, A.stride)
    factors = []
    for s in As:
        factors.extend(_split(rng, s))
    pos = [1]
    for f in factors:
        pos.append(pos[-1] * f)
    leaves = []
    i = 0
    while i < len(factors):
        if rng.random() < 0.25:
            i += 1
            continue
        j = min(len(factors), i + rng.choice((1, 1, 2, 3)))
        n = _prod(factors[i:j])
        if beyond and j == len(factors) and rng.random() < 0.25:
            n *= rng.choice((2, 3))
        leaves.append((n, pos[i]))
        i = j
    if beyond and rng.random() < 0.12:
        leaves.append((rng.choice((2, 3, 4)), pos[-1]))
    if rng.random() < 0.12:
        leaves.append((rng.choice((2, 3)), 0))
    if rng.random() < 0.08:
        leaves.append((1, rng.choice((0, 1, 5))))
    rng.shuffle(leaves)
    while len(leaves) > 6 or (len(leaves) > 1 and _prod(n for n, _ in leaves) > max_size):
        leaves.pop()
    if not leaves:
        leaves = [(rng.choice((1, 2)), 0)] if rng.random() < 0.5 else [(1, 1)]
    return _layout_from(rng, leaves)


def g_random_B(rng, max_size=64, neg=0.05):
    ext = _extents(rng, max_size, 4)
    strides = [_neg(rng, rng.choice((0, 1, 1, 2, 2, 3, 4, 4, 6, 8, 12, 16)), neg) for _ in ext]
    return _layout_from(rng, list(zip(ext, strides)))


def g_tile_B(rng, A):
    """A CuTe-style tile Layout(n, r), n*r usually dividing size(A)."""
    size = A.size
    divs = [d for d in range(1, size + 1) if size % d == 0]
    if rng.random() < 0.7:
        n = rng.choice(divs)
        r = rng.choice([d for d in divs if (size // n) % d == 0])
    else:
        n, r = rng.randint(1, 12), rng.randint(1, 6)
    return Layout(n, r)


def g_compact_B(rng, A):
    ext = _extents(rng, max(2, 2 * A.size), 4)
    return _layout_from(rng, list(zip(ext, _colmajor(ext))))


def _colmajor(ext):
    out, cur = [], 1
    for e in ext:
        out.append(cur)
        cur *= e
    return out


def g_B(rng, A):
    k = rng.random()
    if k < 0.45:
        return "structured", g_admissible_B(rng, A)
    if k < 0.58:
        return "tile", g_tile_B(rng, A)
    if k < 0.68:
        return "compact", g_compact_B(rng, A)
    if k < 0.80:
        return "overlapping", g_overlap_B(rng, A)
    if k < 0.84:
        return "int", rng.choice([d for d in range(1, A.size + 1) if A.size % d == 0] + [rng.randint(1, 12)])
    return "random", g_random_B(rng)


# ----------------------------------------------------------------------------- post-conditions
def post_composition(A, B):
    """R(c) == A-hat(B(c)) for every c of B, size(R) == size(B)."""
    if B is None:

        def post_none(s, d):
            return None if _same_fn((s, d), (A.shape, A.stride)) else ("values", "R != A")

        return post_none
    ob = _offsets(B.shape, B.stride)
    if ob.size and ob.min() < 0:

        def post_neg(s, d):
            return (NEG_RHS, f"B({int(np.argmin(ob))}) < 0")

        return post_neg
    want = _ahat(A.shape, A.stride, ob)

    def post(s, d):
        o = _offsets(s, d)
        if o.shape != want.shape:
            return ("size", f"size {o.size} != size(B) = {want.size}")
        bad = np.nonzero(o != want)[0]
        if bad.size:
            c = int(bad[0])
            return ("values", f"at c={c}: R(c)={int(o[c])} but A(B(c))={int(want[c])}")
        return None

    return post


def _complement_cur(L):
    """The extent covered by the sorted stride chain of L's non-trivial modes (or None)."""
    modes = sorted((d, s) for s, d in zip(_flat(L.shape), _flat(L.stride)) if s != 1 and d != 0)
    cur = 1
    for d, s in modes:
        cur = s * d
    return cur, modes


def post_complement(L, M):
    cur, modes = _complement_cur(L)
    fo = _offsets(tuple(s for _, s in modes), tuple(d for d, _ in modes))
    if M is None:
        M = L.cosize
    n_want = cur * -(-M // cur) if cur > 0 else None

    def post(s, d):
        co = _offsets(s, d)
        if co.size > 1 and not np.all(np.diff(co) > 0):
            return ("not strictly increasing", f"C = {_fmt(s)}:{_fmt(d)}")
        tot = np.sort((fo[:, None] + co[None, :]).reshape(-1))
        if not np.array_equal(tot, np.arange(tot.size)):
            return ("(L, C) is not a bijection onto [0, N)", f"image of (L, C) = {tot[:12].tolist()}...")
        if tot.size != n_want:
            return ("size", f"(L, C) covers [0, {tot.size}) instead of [0, {n_want})")
        return None

    return post


def post_right_inverse(L):
    ol = _offsets(L.shape, L.stride)

    def post(s, d):
        r = _offsets(s, d)
        if r.size and (r.min() < 0 or r.max() >= ol.size):
            return ("R leaves L's domain", f"R values in [{r.min()}, {r.max()}]")
        bad = np.nonzero(ol[r] != np.arange(r.size))[0]
        if bad.size:
            i = int(bad[0])
            return ("L(R(i)) != i", f"L(R({i})) = {int(ol[r[i]])}")
        return None

    return post


def post_left_inverse(L):
    ol = _offsets(L.shape, L.stride)
    injective = np.unique(ol).size == ol.size

    def post(s, d):
        r = _offsets(s, d)
        if ol.min() < 0 or ol.max() >= r.size:
            return ("L(i) outside R's domain", f"size(R) = {r.size}, L's offsets in [{ol.min()}, {ol.max()}]")
        y = r[ol]
        if injective:
            bad = np.nonzero(y != np.arange(ol.size))[0]
            if bad.size:
                i = int(bad[0])
                return ("R(L(i)) != i", f"R(L({i})) = {int(y[i])}")
            return None
        if y.min() < 0 or y.max() >= ol.size:
            return ("R(L(i)) outside L's domain", "")
        bad = np.nonzero(ol[y] != ol)[0]
        if bad.size:
            return ("L(R(L(i))) != L(i)", f"i = {int(bad[0])}")
        return None

    return post


def _valid_complement(B, M):
    """A complement of B for cotarget M that satisfies the post-condition: layoutproof's,
    or pycute's when layoutproof rejects (None when neither is valid)."""
    post = post_complement(B, M)
    try:
        C = lp.complement(B, M)
        return C if post(C.shape, C.stride) is None else None
    except InadmissibleError:
        pass
    try:
        P = pc.complement(_to_pc(B), M)
    except Exception:  # noqa: BLE001
        return None
    if _valid(P.shape, P.stride) and post(P.shape, P.stride) is None:
        return Layout(P.shape, P.stride)
    return None


def post_logical_divide(A, B):
    if B is None:
        return post_composition(A, None)
    C = _valid_complement(B, A.size)
    if C is None:

        def post_noc(s, d):
            return ("B has no valid complement", f"complement({_show(B)}, {A.size})")

        return post_noc
    return post_composition(A, Layout((B.shape, C.shape), (B.stride, C.stride)))


def post_logical_product(A, B):
    if B is None:
        return post_composition(A, None)
    M = A.size * B.cosize
    C = _valid_complement(A, M)
    if C is None:

        def post_noc(s, d):
            return ("A has no valid complement", f"complement({_show(A)}, {M})")

        return post_noc
    inner = post_composition(C, B)

    def post(s, d):
        if type(s) is not tuple or len(s) != 2:
            return ("rank", "not rank 2")
        if not _same_fn((s[0], d[0]), (A.shape, A.stride)):
            return ("mode 0 != A", f"{_fmt(s[0])}:{_fmt(d[0])}")
        return inner(s[1], d[1])

    return post


def _tuple_tiler_post(A, tiler, mode_post, keep_rest=True):
    """Mode by mode: mode i (i < len(tiler)) satisfies mode_post(A[i], tiler[i]); the rest are
    A's modes (keep_rest) or absent."""
    am = _modes(A.shape, A.stride)
    posts = [mode_post(Layout(*am[i]), _lo(t)) for i, t in enumerate(tiler)]

    def post(s, d):
        if type(s) is not tuple:
            return ("rank", "not a tuple shape")
        want_rank = len(am) if keep_rest else len(tiler)
        if len(s) != want_rank:
            return ("rank", f"rank {len(s)} != {want_rank}")
        for i, p in enumerate(posts):
            w = p(s[i], d[i])
            if w:
                return (w[0], f"mode {i}: {w[1]}")
        for i in range(len(tiler), len(s)):
            if not _same_fn((s[i], d[i]), am[i]):
                return ("extra mode changed", f"mode {i}")
        return None

    return post


def _unzip_post(A, tiler, mode_post, tiled):
    """Post-condition of zipped_* / tiled_*: regroup into per-mode (tile, rest) pairs."""
    if type(tiler) is not tuple:
        base = mode_post(A, _lo(tiler))
        if not tiled:
            return base

        def post_t(s, d):
            return base((s[0], tuple(s[1:])), (d[0], tuple(d[1:])))

        return post_t
    am = _modes(A.shape, A.stride)
    k = len(tiler)
    posts = [mode_post(Layout(*am[i]), _lo(t)) for i, t in enumerate(tiler)]

    def post(s, d):
        if tiled:
            s, d = (s[0], tuple(s[1:])), (d[0], tuple(d[1:]))
        if type(s) is not tuple or len(s) != 2 or type(s[0]) is not tuple or type(s[1]) is not tuple:
            return ("rank", "not ((tiles...), (rests...))")
        if len(s[0]) != k or len(s[1]) != len(am):
            return ("rank", f"ranks {len(s[0])}, {len(s[1])}")
        for i, p in enumerate(posts):
            w = p((s[0][i], s[1][i]), (d[0][i], d[1][i]))
            if w:
                return (w[0], f"mode {i}: {w[1]}")
        for i in range(k, len(am)):
            if not _same_fn((s[1][i], d[1][i]), am[i]):
                return ("extra mode changed", f"mode {i}")
        return None

    return post


def _divide_mode_post(A, t):
    if t is None:

        def post_none(s, d):  # (1:0, A)
            return None if _same_fn((s, d), ((1, A.shape), (0, A.stride))) else ("values", "")

        return post_none
    return post_logical_divide(A, t)


def _product_mode_post(A, t):
    if t is None:

        def post_none(s, d):
            return None if _same_fn((s, d), ((1, A.shape), (0, A.stride))) else ("values", "")

        return post_none
    return post_logical_product(A, t)


# ----------------------------------------------------------------------------- the operations
def _op_eval(rep, rng):
    for _ in range(N_EVAL):
        L = g_layout(rng, neg=0.12)
        P = _to_pc(L)
        ex = f"L = {_show(L)}"
        rep.cases += 1
        want = [P(i) for i in range(L.size)]
        mine = L.eval_all().tolist()
        ok = mine == want and [L(i) for i in range(L.size)] == want
        ok = ok and _offsets(L.shape, L.stride).tolist() == want
        if ok:
            rep.note("agree", ex)
        else:
            rep.fail(f"{ex}: L(i) differs from pycute's")
        # size
        rep.cases += 1
        if L.size == pc.size(P) == lp.size(L):
            rep.note("size: agree", ex)
        else:
            rep.fail(f"{ex}: size {L.size} != pycute {pc.size(P)}")
        # cosize
        rep.cases += 1
        if lp.cosize(L) == pc.cosize(P):
            rep.note("cosize: agree", ex)
        elif any(d < 0 for s, d in zip(_flat(L.shape), _flat(L.stride)) if s > 1):
            o = _offsets(L.shape, L.stride)
            if lp.cosize(L) == int(o.max() - o.min()) + 1 or lp.cosize(L) == 1 + sum(
                (s - 1) * abs(d) for s, d in zip(_flat(L.shape), _flat(L.stride))
            ):
                rep.note(
                    "cosize with negative strides: pycute gives L(size-1)+1, layoutproof 1+sum((s-1)*|d|)",
                    f"{ex}: layoutproof {lp.cosize(L)}, pycute {pc.cosize(P)}",
                )
            else:
                rep.fail(f"{ex}: cosize {lp.cosize(L)} vs pycute {pc.cosize(P)}")
        else:
            rep.fail(f"{ex}: cosize {lp.cosize(L)} != pycute {pc.cosize(P)}")


def _rand_crd(rng, shape, natural_p=0.6):
    """A coordinate of shape: per mode either a 1-D int of the mode or a natural sub-coordinate."""
    if type(shape) is tuple:
        return tuple(
            _rand_crd(rng, s, natural_p) if rng.random() < natural_p else rng.randrange(lp.product(s))
            for s in shape
        )
    return rng.randrange(shape)


def _rand_slice(rng, shape):
    return tuple(None if rng.random() < 0.45 else _rand_crd(rng, s) for s in shape)


def _op_hier(rep, rng):
    for _ in range(N_HIER):
        L = g_layout(rng, neg=0.1)
        P = _to_pc(L)
        ex = f"L = {_show(L)}"
        rep.cases += 1
        bad = []
        for _k in range(8):
            c = _rand_crd(rng, L.shape)
            a, b = L(c), P(c)
            a2 = lp.crd2idx(c, L.shape, L.stride)
            b2 = pc.crd2idx(c, L.shape, L.stride)
            if not (a == b == a2 == b2):
                bad.append((c, a, b, a2, b2))
            if type(c) is tuple and len(c) > 1 and L(*c) != a:
                bad.append((c, "L(*c)"))
        if bad:
            rep.fail(f"{ex}: coordinates {bad[:3]}")
        else:
            rep.note("agree", ex)
        # out of the domain: pycute wraps on the last mode, layoutproof raises
        if rng.random() < 0.1:
            rep.cases += 1
            c = L.size + rng.randrange(L.size)
            try:
                L(c)
                rep.fail(f"{ex}: L({c}) is out of the domain but layoutproof returns")
            except lp.OutOfDomainError:
                rep.note(
                    "out-of-domain 1-D coordinate: layoutproof raises OutOfDomainError, "
                    "pycute wraps it onto the last mode",
                    f"{ex}: pycute L({c}) = {P(c)}",
                )
        if type(L.shape) is tuple:
            rep.cases += 1
            crd = _rand_slice(rng, L.shape)
            sl, off = lp.slice_and_offset(crd, L)
            psl, poff = pc.slice_and_offset(crd, P)
            if (sl.shape, sl.stride, off) == (psl.shape, psl.stride, poff):
                rep.note("slice_and_offset: agree", ex)
            else:
                rep.fail(f"{ex}: slice_and_offset({crd}) = {_show(sl)}, {off} vs pycute {_show(psl)}, {poff}")


def _inttuple_pairs(rng, S, D):
    """(name, example, layoutproof call, pycute call) for the int-tuple functions on S, D."""
    n = lp.product(S)
    crds = [_rand_crd(rng, S) for _k in range(6)] + [rng.randrange(n)]
    q = rng.choice((1, 2, 2, 3, 4, 4, 6, 8, 16))
    ex = f"shape {_fmt(S)}, stride {_fmt(D)}"
    # idx2crd divides by the stride: both libraries raise ZeroDivisionError on a 0 there
    Dq = D if 0 not in _flat(D) else lp.prefix_product(S)
    return [
        ("product", ex, lambda: lp.product(S), lambda: pc.product(S)),
        ("prefix_product", ex, lambda: lp.prefix_product(S), lambda: pc.prefix_product(S)),
        ("flatten", ex, lambda: lp.flatten(S), lambda: pc.flatten(S)),
        ("inner_product", ex, lambda: lp.inner_product(S, D), lambda: pc.inner_product(S, D)),
        (
            "idx2crd",
            ex,
            lambda: [lp.idx2crd(i, S) for i in range(n)] + [lp.idx2crd(i, S, Dq) for i in range(n)],
            lambda: [pc.idx2crd(i, S) for i in range(n)] + [pc.idx2crd(i, S, Dq) for i in range(n)],
        ),
        (
            "crd2idx",
            f"{ex}, coordinates {crds}",
            lambda: [lp.crd2idx(c, S, D) for c in crds] + [lp.crd2idx(c, S) for c in crds],
            lambda: [pc.crd2idx(c, S, D) for c in crds] + [pc.crd2idx(c, S) for c in crds],
        ),
        ("shape_div", f"shape_div({_fmt(S)}, {q})", lambda: lp.shape_div(S, q), lambda: pc.shape_div(S, q)),
    ]


def _op_inttuple(rep, rng):
    for _ in range(N_INTTUPLE):
        L = g_layout(rng)
        for name, ex, f, g in _inttuple_pairs(rng, L.shape, L.stride):
            rep.cases += 1
            try:
                a = f()
            except InadmissibleError as e:
                a = ("raises", e.condition)
            try:
                b = g()
            except AssertionError:
                b = ("raises", "AssertionError")
            if a == b:
                rep.note(f"{name}: agree", ex)
            elif (
                name == "shape_div"
                and type(a) is tuple
                and type(b) is tuple
                and a[:1] == b[:1] == ("raises",)
            ):
                rep.note("shape_div: both reject (layoutproof InadmissibleError, pycute assert)", ex)
            else:
                rep.fail(f"{name}({ex}): layoutproof {a!r} vs pycute {b!r}")


def _op_coalesce(rep, rng):
    for _ in range(N_COALESCE):
        L = g_layout(rng)
        if rng.random() < 0.3 and type(L.shape) is tuple:
            prof = tuple(rng.choice((1, None, 1)) for _ in range(rng.randint(1, len(L.shape))))
            prof = tuple(1 if p is None else p for p in prof)
            ex = f"coalesce({_show(L)}, {prof})"
            _run_case(
                rep,
                ex,
                lambda L=L, p=prof: lp.coalesce(L, p),
                lambda L=L, p=prof: pc.coalesce(_to_pc(L), p),
                _post_same_as(L),
            )
        else:
            ex = f"coalesce({_show(L)})"
            _run_case(
                rep, ex, lambda L=L: lp.coalesce(L), lambda L=L: pc.coalesce(_to_pc(L)), _post_coalesce(L)
            )


def _post_same_as(L):
    def post(s, d):
        return None if _same_fn((s, d), (L.shape, L.stride)) else ("values", "not L's function")

    return post


def _post_coalesce(L):
    same = _post_same_as(L)

    def post(s, d):
        w = same(s, d)
        if w:
            return w
        if any(type(e) is tuple for e in (s if type(s) is tuple else ())):
            return ("depth", "depth > 1")
        if type(s) is tuple and any(a * b == c for a, b, c in zip(s, d, d[1:])):
            return ("not maximal", "two modes could merge")
        return None

    return post


def _op_filter(rep, rng):
    for _ in range(N_FILTER):
        L = g_layout(rng)
        ol = _offsets(L.shape, L.stride)
        img = np.unique(ol)

        def post(s, d, img=img):
            if 0 in _flat(d) and max(_flat(s)) > 1:
                return ("stride-0 mode left", "")
            o = _offsets(s, d)
            if not np.array_equal(np.unique(o), img):
                return ("image changed", "")
            return None

        _run_case(
            rep, f"filter({_show(L)})", lambda L=L: lp.filter(L), lambda L=L: pc.filter(_to_pc(L)), post
        )


def _linear_answer(A, B):
    """B's shape with strides A-hat(B(unit_k)), when that layout is A o B (brute force):
    a correct answer that needs no refinement of B's shape.  None when it is not."""
    fd = _flat(B.stride)
    ob = _offsets(B.shape, B.stride)
    if ob.size and ob.min() < 0:
        return None
    steps = [int(_ahat(A.shape, A.stride, np.array([d], dtype=np.int64))[0]) for d in fd]
    cand = (B.shape, _unflatten(steps, B.shape))
    if np.array_equal(_offsets(*cand), _ahat(A.shape, A.stride, ob)):
        return Layout(*cand)
    return None


def _op_compose(rep, rng):
    for _ in range(N_COMPOSE):
        A = g_layout(rng)
        kind, rhs = g_B(rng, A)
        B = _lo(rhs)  # an int rhs n is the layout n:1 for both libraries
        ex = f"composition({_show(A)}, {_show(rhs)})"
        R, err, P = _run_case(
            rep,
            ex,
            lambda A=A, t=rhs: lp.composition(A, t),
            lambda A=A, t=rhs: pc.composition(_to_pc(A), _to_pc(t)),
            post_composition(A, B),
        )
        rep.extra[f"{kind} B"] += 1
        rep.extra[f"{kind} B admissible"] += R is not None
        rep.extra["admissible"] += R is not None
        if err is None:
            continue
        # the witness: a coordinate of B where a naive result is wrong
        w = err.witness
        cond = err.condition
        if P is not None and w is not None and cond != "non-negative strides of B":
            want = _ahat(A.shape, A.stride, _offsets(B.shape, B.stride))
            po = _offsets(P.shape, P.stride)
            if not 0 <= w < want.size:
                rep.fail(f"{ex}: witness {w} is outside B's domain")
            elif w < po.size and po[w] == want[w]:
                rep.note(
                    f"witness [{cond}]: pycute's wrong layout is right at the witness"
                    + (" (its size is wrong)" if po.size != want.size else " (SAME SIZE)"),
                    f"{ex} -> pycute {_show(P)}, witness {w}",
                )
            else:
                rep.note(f"witness [{cond}]: pycute's wrong layout is wrong at the witness", ex)
        elif w is None:
            rep.note(f"witness [{cond}]: none given", ex)
        # a correct answer with B's own shape may exist although CuTe's condition fails
        if cond != "non-negative strides of B":
            lin = _linear_answer(A, B)
            if lin is not None:
                rep.extra["layoutproof raises, a correct layout exists"] += 1
                trivial = all(e <= 2 for e in _flat(B.shape))
                rep.note(
                    f"NOTE: layoutproof raises [{cond}] although a correct A o B exists "
                    + (
                        "(every leaf of B has extent <= 2, so any values are linear)"
                        if trivial
                        else "(a leaf of B has extent >= 3)"
                    ),
                    f"{ex} -> {_show(lin)}",
                )
    rep.extra["total"] = N_COMPOSE


def g_overlap_B(rng, A):
    """Like g_admissible_B but with independently drawn (possibly overlapping) digit runs."""
    As, _ = _coalesce_flat(A.shape, A.stride)
    factors = []
    for s in As:
        factors.extend(_split(rng, s))
    if not factors:
        return g_random_B(rng)
    pos = [1]
    for f in factors:
        pos.append(pos[-1] * f)
    leaves = []
    for _ in range(rng.randint(2, 3)):
        i = rng.randrange(len(factors))
        j = min(len(factors), i + rng.choice((1, 1, 2)))
        leaves.append((_prod(factors[i:j]), pos[i]))
    while len(leaves) > 1 and _prod(n for n, _ in leaves) > 512:
        leaves.pop()
    return _layout_from(rng, leaves)


def _rand_tiler(rng, A, mode_gen, allow_int=True, allow_none=True):
    am = _modes(A.shape, A.stride)
    k = rng.randint(1, len(am))
    out = []
    for i in range(k):
        Ai = Layout(*am[i])
        r = rng.random()
        if allow_none and r < 0.12:
            out.append(None)
        elif allow_int and r < 0.35:
            sz = Ai.size
            divs = [d for d in range(1, sz + 1) if sz % d == 0]
            out.append(rng.choice(divs) if rng.random() < 0.8 else rng.randint(1, 9))
        else:
            out.append(mode_gen(rng, Ai))
    return tuple(out)


def _op_compose_tuple(rep, rng):
    for _ in range(N_COMPOSE_TUPLE):
        A = g_layout(rng)
        if type(A.shape) is not tuple:
            A = Layout((A.shape,), (A.stride,)) if rng.random() < 0.3 else A
        tiler = _rand_tiler(rng, A, lambda r, Ai: g_B(r, Ai)[1])
        k = len(tiler)
        ex = f"composition({_show(A)}, {_show(tiler)})"

        def pc_covered(A=A, tiler=tiler, k=k):
            P = pc.composition(_to_pc(A), _to_pc(tiler))
            # pycute keeps A's uncovered modes; compare the covered ones only
            return pc.Layout(tuple(P.shape[:k]), tuple(P.stride[:k])) if type(P.shape) is tuple else P

        post = _tuple_tiler_post(A, tiler, post_composition, keep_rest=False)
        _run_case(rep, ex, lambda A=A, t=tiler: lp.composition(A, t), pc_covered, post)
        if type(A.shape) is tuple and k < len(A.shape):
            rep.note(
                "tuple tiler shorter than A: layoutproof drops the uncovered modes, pycute "
                "keeps them (compared on the covered modes)",
                ex,
            )


def _op_complement(rep, rng):
    for _ in range(N_COMPLEMENT):
        L = g_layout(rng, rng.choice(("gappy", "gappy", "gappy", "compact", "random", "random")))
        r = rng.random()
        cos = max(1, L.cosize)
        if r < 0.1:
            M = None
        elif r < 0.4:
            M = cos * rng.choice((1, 2, 3, 4))
        elif r < 0.6:
            M = L.size * rng.choice((1, 2, 4))
        else:
            M = rng.randint(1, 2 * cos + 8)
        ex = f"complement({_show(L)}, {M})" if M is not None else f"complement({_show(L)})"
        if M is None:
            # pycute's default cotarget is 1, layoutproof's is cosize(L): the same result when
            # cosize(L) <= the covered extent, which holds for admissible L
            pcall = lambda L=L: pc.complement(_to_pc(L))  # noqa: E731
            lcall = lambda L=L: lp.complement(L)  # noqa: E731
        else:
            pcall = lambda L=L, M=M: pc.complement(_to_pc(L), M)  # noqa: E731
            lcall = lambda L=L, M=M: lp.complement(L, M)  # noqa: E731
        _run_case(rep, ex, lcall, pcall, post_complement(L, M))


def _op_right_inverse(rep, rng):
    for _ in range(N_RINV):
        L = g_layout(rng, rng.choice(("gappy", "compact", "compact", "random", "colmajor")), neg=0.1)
        post = post_right_inverse(L)
        before = rep.kinds.copy()

        def same(R, P):
            return _same_fn((R.shape, R.stride), (P.shape, P.stride))

        _run_case(
            rep,
            f"right_inverse({_show(L)})",
            lambda L=L: lp.right_inverse(L),
            lambda L=L: pc.right_inverse(_to_pc(L)),
            post,
            same=same,
        )
        best = _longest_chain(L)
        if best > lp.right_inverse(L).size:
            rep.note(
                "right_inverse: layoutproof (like CuTe C++) follows the first mode of the "
                "right stride, so its R is not always the largest",
                f"right_inverse({_show(L)}) -> layoutproof {_show(lp.right_inverse(L))}, "
                f"a chain of size {best} exists",
            )
        if (rep.kinds - before)["both satisfy the post-condition but differ"]:
            R, P = lp.right_inverse(L), pc.right_inverse(_to_pc(L))
            ro, po = _offsets(R.shape, R.stride), _offsets(P.shape, P.stride)
            if R.size < pc.size(P):
                rep.fail(
                    f"right_inverse({_show(L)}): layoutproof's {_show(R)} is smaller than "
                    f"pycute's valid {_show(P)}"
                )
            elif np.array_equal(ro[: po.size], po):
                fs = [(s, d) for s, d in zip(_flat(L.shape), _flat(L.stride)) if s > 1]
                why = (
                    "a stride-0 mode"
                    if any(d == 0 for _, d in fs)
                    else "a negative stride"
                    if any(d < 0 for _, d in fs)
                    else "a smaller stride that is off the chain, or equal strides sorted by extent"
                )
                rep.note(
                    f"right_inverse: pycute stops early ({why}); layoutproof's is larger and "
                    "extends pycute's",
                    f"right_inverse({_show(L)}) -> layoutproof {_show(R)}, pycute {_show(P)}",
                )
            else:
                rep.note(
                    "right_inverse: both valid, different functions (pycute sorts equal "
                    "strides by extent and stops; layoutproof's is larger)",
                    f"right_inverse({_show(L)}) -> layoutproof {_show(R)}, pycute {_show(P)}",
                )


def _longest_chain(L):
    """The largest size of a stride chain 1, s0*d0, ... through the coalesced modes of L (all
    choices among equal strides tried): a right inverse of that size exists."""
    cs, cd = _coalesce_flat(L.shape, L.stride)

    def dfs(cur, used):
        best = 1
        for i, d in enumerate(cd):
            if not used >> i & 1 and d == cur and cs[i] > 1:
                best = max(best, cs[i] * dfs(cs[i] * d, used | 1 << i))
        return best

    return dfs(1, 0)


def _op_left_inverse(rep, rng):
    for _ in range(N_LINV):
        L = g_layout(rng, rng.choice(("gappy", "gappy", "compact", "random", "colmajor")), neg=0.08)
        ol = _offsets(L.shape, L.stride)
        post = post_left_inverse(L)

        def same(R, P, ol=ol):
            ro, po = _offsets(R.shape, R.stride), _offsets(P.shape, P.stride)
            if ol.min() < 0 or ol.max() >= min(ro.size, po.size):
                return False
            return np.array_equal(ro[ol], po[ol])  # compared on the image of L only

        before = rep.kinds.copy()
        _run_case(
            rep,
            f"left_inverse({_show(L)})",
            lambda L=L: lp.left_inverse(L),
            lambda L=L: pc.left_inverse(_to_pc(L)),
            post,
            same=same,
            struct=False,
        )
        if (rep.kinds - before)["agree"]:
            R, P = lp.left_inverse(L), pc.left_inverse(_to_pc(L))
            if not _same_fn((R.shape, R.stride), (P.shape, P.stride)):
                rep.note(
                    "left_inverse: equal on the image of L, different in the gaps "
                    "(layoutproof maps gaps through stride-0 modes)",
                    f"left_inverse({_show(L)}) -> layoutproof {_show(R)}, pycute {_show(P)}",
                )


def _divide_tile(rng, A):
    r = rng.random()
    if r < 0.45:
        return g_admissible_B(rng, A, beyond=False)
    if r < 0.75:
        return g_tile_B(rng, A)
    if r < 0.85:
        return g_layout(rng, "gappy", max_size=max(2, A.size))
    return g_random_B(rng, 32)


def _op_logical_divide(rep, rng):
    for _ in range(N_LDIV):
        A = g_layout(rng)
        B = _divide_tile(rng, A)
        _run_case(
            rep,
            f"logical_divide({_show(A)}, {_show(B)})",
            lambda A=A, B=B: lp.logical_divide(A, B),
            lambda A=A, B=B: pc.logical_divide(_to_pc(A), _to_pc(B)),
            post_logical_divide(A, B),
        )
    for _ in range(N_LDIV_TUPLE):
        A = _rank_ge2(rng)
        tiler = _rand_tiler(rng, A, _divide_tile)
        _run_case(
            rep,
            f"logical_divide({_show(A)}, {_show(tiler)})",
            lambda A=A, t=tiler: lp.logical_divide(A, t),
            lambda A=A, t=tiler: pc.logical_divide(_to_pc(A), _to_pc(t)),
            _tuple_tiler_post(A, tiler, _divide_mode_post),
        )


def _rank_ge2(rng):
    for _ in range(20):
        A = g_layout(rng)
        if type(A.shape) is tuple and len(A.shape) >= 2:
            return A
    return Layout((4, 6), (1, 4))


def _op_unzip(rep, rng, n, which):
    lp_fn = getattr(lp, which)
    pc_fn = getattr(pc, which)
    divide = "divide" in which
    tiled = which.startswith("tiled")
    for _ in range(n):
        A = _rank_ge2(rng) if rng.random() < 0.8 else g_layout(rng)
        if divide:
            tiler = _rand_tiler(rng, A, _divide_tile) if rng.random() < 0.7 else _divide_tile(rng, A)
        else:
            tiler = (
                _rand_tiler(rng, A, _product_tile, allow_int=False)
                if rng.random() < 0.7
                else _product_tile(rng, A)
            )
        mode_post = _divide_mode_post if divide else _product_mode_post
        _run_case(
            rep,
            f"{which}({_show(A)}, {_show(tiler)})",
            lambda A=A, t=tiler: lp_fn(A, t),
            lambda A=A, t=tiler: pc_fn(_to_pc(A), _to_pc(t)),
            _unzip_post(A, tiler, mode_post, tiled),
        )


def _product_tile(rng, A):
    r = rng.random()
    if r < 0.35:
        ext = _extents(rng, 32, 3)
        return _layout_from(rng, list(zip(ext, _colmajor(ext))))
    if r < 0.65:
        return g_layout(rng, "gappy", max_size=32, neg=0.0)
    if r < 0.85:
        return g_random_B(rng, 32, neg=0.0)
    return g_random_B(rng, 32, neg=0.3)


def _product_block(rng):
    return g_layout(
        rng, rng.choice(("gappy", "compact", "compact", "colmajor", "random")), max_size=64, neg=0.04
    )


def _op_logical_product(rep, rng):
    for _ in range(N_LPROD):
        A = _product_block(rng)
        B = _product_tile(rng, A)
        _run_case(
            rep,
            f"logical_product({_show(A)}, {_show(B)})",
            lambda A=A, B=B: lp.logical_product(A, B),
            lambda A=A, B=B: pc.logical_product(_to_pc(A), _to_pc(B)),
            post_logical_product(A, B),
        )
    for _ in range(N_LPROD_TUPLE):
        A = _product_block(rng)
        tiler = _rand_tiler(rng, A, _product_tile, allow_int=False)
        _run_case(
            rep,
            f"logical_product({_show(A)}, {_show(tiler)})",
            lambda A=A, t=tiler: lp.logical_product(A, t),
            lambda A=A, t=tiler: pc.logical_product(_to_pc(A), _to_pc(t)),
            _tuple_tiler_post(A, tiler, _product_mode_post),
        )


def _op_logical_product_int(rep, rng):
    """logical_product(A, n): layoutproof takes n as the layout n:1 (checked by brute force);
    legacy pycute computes logical_divide(A, n) there (recorded, not compared)."""
    for _ in range(N_LPROD_INT):
        A = _product_block(rng)
        n = rng.randint(1, 8)
        ex = f"logical_product({_show(A)}, {n})"
        rep.cases += 1
        try:
            R = lp.logical_product(A, n)
        except InadmissibleError as e:
            R = e
        try:
            R2 = lp.logical_product(A, Layout(n))
        except InadmissibleError as e:
            R2 = e
        post = post_logical_product(A, Layout(n))
        if isinstance(R, Exception):
            if isinstance(R2, Exception) and R.condition == R2.condition:
                rep.note("int tiler: layoutproof raises, as for the tiler n:1", ex)
            else:
                rep.fail(f"{ex}: layoutproof raises {R} but not for Layout({n})")
            continue
        if isinstance(R2, Exception) or R != R2:
            rep.fail(f"{ex}: layoutproof's result differs from logical_product(A, Layout({n}))")
            continue
        w = post(R.shape, R.stride)
        if w:
            rep.fail(f"{ex}: layoutproof {_show(R)} violates the post-condition: {w}")
            continue
        try:
            P = pc.logical_product(_to_pc(A), n)
            Q = pc.logical_divide(_to_pc(A), n)
            is_div = (P.shape, P.stride) == (Q.shape, Q.stride)
        except AssertionError:
            P, is_div = None, True
        if P is not None and _same_fn((R.shape, R.stride), (P.shape, P.stride)):
            rep.note("int tiler: agree (pycute's divide happens to coincide)", ex)
        elif is_div:
            rep.note(
                "int tiler: pycute computes logical_divide(A, n); layoutproof A x (n:1) (verified)",
                f"{ex} -> layoutproof {_show(R)}, pycute {_show(P)}",
            )
        else:
            rep.fail(f"{ex}: pycute {_show(P)} is neither the product nor the divide")


_OPS = {
    "evaluation": _op_eval,
    "coordinates": _op_hier,
    "int_tuple": _op_inttuple,
    "coalesce": _op_coalesce,
    "filter": _op_filter,
    "composition": _op_compose,
    "composition_tuple": _op_compose_tuple,
    "complement": _op_complement,
    "right_inverse": _op_right_inverse,
    "left_inverse": _op_left_inverse,
    "logical_divide": _op_logical_divide,
    "zipped_divide": lambda rep, rng: _op_unzip(rep, rng, N_ZDIV, "zipped_divide"),
    "tiled_divide": lambda rep, rng: _op_unzip(rep, rng, N_TDIV, "tiled_divide"),
    "logical_product": _op_logical_product,
    "logical_product_int": _op_logical_product_int,
    "zipped_product": lambda rep, rng: _op_unzip(rep, rng, N_ZPROD, "zipped_product"),
    "tiled_product": lambda rep, rng: _op_unzip(rep, rng, N_TPROD, "tiled_product"),
}


@functools.cache
def run_op(op: str) -> Report:
    rep = Report(op)
    _OPS[op](rep, random.Random(_seed(op)))
    return rep


def summary() -> str:
    lines = []
    total = 0
    for op in _OPS:
        rep = run_op(op)
        total += rep.cases
        lines.append(f"== {op}: {rep.cases} cases")
        for k, v in sorted(rep.kinds.items(), key=lambda kv: -kv[1]):
            lines.append(f"   {v:6d}  {k}\n           e.g. {rep.examples[k][:400]}")
        if rep.extra:
            lines.append(f"   extra: {dict(rep.extra)}")
    lines.append(f"TOTAL {total} cases")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the tests
def _check(op):
    rep = run_op(op)
    assert rep.cases > 0
    assert not rep.failures, f"{op}: {len(rep.failures)} failure(s) of layoutproof:\n  " + "\n  ".join(
        rep.failures[:15]
    )


def test_evaluation():
    _check("evaluation")


def test_coordinates_and_slices():
    _check("coordinates")


def test_int_tuple_functions():
    _check("int_tuple")


def test_coalesce():
    _check("coalesce")


def test_filter():
    _check("filter")


def test_composition():
    _check("composition")
    rep = run_op("composition")
    # the differential comparison needs teeth: most generated compositions are admissible
    assert rep.extra["admissible"] >= 0.5 * N_COMPOSE, dict(rep.extra)
    assert rep.kinds["agree"] >= 0.4 * N_COMPOSE, dict(rep.kinds)


def test_composition_tuple_tiler():
    _check("composition_tuple")


def test_complement():
    _check("complement")


def test_right_inverse():
    _check("right_inverse")


def test_left_inverse():
    _check("left_inverse")


def test_logical_divide():
    _check("logical_divide")


def test_zipped_divide():
    _check("zipped_divide")


def test_tiled_divide():
    _check("tiled_divide")


def test_logical_product():
    _check("logical_product")


def test_logical_product_int_tiler():
    _check("logical_product_int")


def test_zipped_product():
    _check("zipped_product")


def test_tiled_product():
    _check("tiled_product")


def test_no_incompleteness():
    """Where layoutproof raises InadmissibleError, pycute's answer (if any) must be wrong."""
    found = [m for op in _OPS for m in run_op(op).incomplete]
    assert not found, f"{len(found)} case(s) where layoutproof rejects a correct answer:\n  " + "\n  ".join(
        found[:20]
    )


def test_negative_rhs_rejected():
    """layoutproof documents InadmissibleError for a composition rhs with negative strides
    (B maps into negative offsets, outside A's domain); every such case must raise."""
    found = [m for op in _OPS for m in run_op(op).neg_rhs]
    # the minimal form: the rank-1 fast path (coalesce(A) has one mode, B an integer shape)
    for A, B in (
        (Layout(15, 8), Layout(8, -2)),
        (Layout((3, 5), (8, 24)), Layout(8, -2)),
        (Layout(15, 8), Layout((8,), (-2,))),
    ):
        try:
            R = lp.composition(A, B)
            found.insert(0, f"composition({_show(A)}, {_show(B)}) -> layoutproof {_show(R)}")
        except InadmissibleError:
            pass
    assert not found, (
        f"{len(found)} case(s) where layoutproof composes with a rhs of negative "
        "offsets instead of raising:\n  " + "\n  ".join(found[:20])
    )


def test_case_count():
    counts = {op: run_op(op).cases for op in _OPS}
    assert sum(counts.values()) >= MIN_TOTAL_CASES, counts
    agreeing = sum(v for op in _OPS for k, v in run_op(op).kinds.items() if "agree" in k)
    assert agreeing >= MIN_TOTAL_CASES // 2, counts


if __name__ == "__main__":  # pragma: no cover - a human-readable summary of every outcome
    print(summary())
