"""F2 (XOR) strides, as in PyCuTe: the bit-matrix linear algebra of swizzled layouts.

A layout whose strides are added with XOR, and multiplied carry-less, writes a swizzled
layout as a plain-looking layout:

>>> from layoutproof import Layout, Swizzle, composition
>>> atom = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))
>>> print(to_f2(atom))
(8,64):(F72,F1)
>>> print(from_f2(to_f2(atom)))
Sw<3,3,3> o 0 o (8,64):(64,1)

F2 values are also strides of ordinary layouts (PyCuTe's generalization): the algebra
(coalesce, composition, the inverses) works on them, each result checked:

>>> from layoutproof import coalesce, right_inverse
>>> L = Layout((8, 8), (F2(1), F2(9)))
>>> L(1, 1)
F8
>>> print(right_inverse(L), coalesce(Layout((2, 4), (F2(1), F2(2)))))
(8,8):(F1,F9) 8:F1

This module registers ``to_f2`` for Swizzles and composed layouts with
:mod:`layoutproof.kinds` (``Swizzle.to_f2``, ``ComposedLayout.to_f2``), and the
operations on layouts with F2 strides under ``kinds.STRIDE_SCALARS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from . import kinds, swizzle
from .arith import Unordered
from .composed import ComposedLayout
from .errors import InadmissibleError, MalformedLayoutError, OutOfDomainError, UndecidableConditionError, show
from .inttuple import raw_flatten, raw_prefix_product, raw_unflatten
from .layout import Layout, check_enumerable, checked_shape, concrete_only, fmt_htuple
from .ops import coalesce_modes
from .swizzle import Swizzle, bits_of, int_arg, popcount, swizzle_from_yz

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["F2", "F2Layout", "to_f2", "from_f2", "f2_layout", "f2_view"]

# from_f2 tries every swizzle whose fields lie below this many bits (about t**3/6 of them).
_F2_SEARCH_BITS = 24


class F2(Unordered):
    """An F2 (XOR) stride scalar, as in PyCuTe: ``+`` is XOR and ``n * F2(d)`` the
    carry-less product (each set bit ``j`` of ``n`` contributes ``d << j``).

    >>> F2(0b1010) + F2(0b1100), F2(0b1010) * 2, 3 * F2(0b1010), F2(7) + F2(7) == 0
    (F6, F20, F30, True)
    """

    __slots__ = ("val",)
    val: int
    _WHAT = "F2 strides"
    _NEEDS = (
        "An operation that orders strides (complement, the products, the chain of an inverse) needs "
        "integer strides"
    )
    _lp_stride_scalar = True  # lets the core algebra accept F2 strides without importing us

    def __init__(self, value: Any) -> None:
        v = value.val if isinstance(value, F2) else int_arg(value, "F2 value")
        if v < 0:
            raise MalformedLayoutError(f"F2 values are bit patterns (>= 0), got {v}")
        self.val = v

    def __int__(self) -> int:
        return self.val

    def __index__(self) -> int:
        return self.val

    def __eq__(self, other: object) -> bool:
        if isinstance(other, F2):
            return self.val == other.val
        if type(other) is int:  # only the zeros of the two algebras coincide
            return self.val == 0 and other == 0
        return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.val)  # F2(v) == v

    def __add__(self, other: Any) -> "F2":
        if isinstance(other, F2):
            return F2(self.val ^ other.val)
        if type(other) is int and other == 0:
            return self
        raise MalformedLayoutError(f"F2 + non-F2: {self} + {show(other)}")

    __radd__ = __add__

    def __mul__(self, other: Any) -> "F2":
        if isinstance(other, F2):
            return F2(_clmul(self.val, other.val))
        n = int_arg(other, "F2 multiplier")
        if n < 0:
            raise MalformedLayoutError(f"F2 * negative integer: {self} * {n}")
        return F2(_clmul(n, self.val))

    __rmul__ = __mul__

    def __abs__(self) -> "F2":
        return self  # a bit pattern

    def __str__(self) -> str:
        return f"F{self.val}"

    __repr__ = __str__


def _clmul(a: int, b: int) -> int:
    r = 0
    j = 0
    while a:
        if a & 1:
            r ^= b << j
        a >>= 1
        j += 1
    return r


def _clmul_np(c: Any, d: int, nbits: int) -> Any:
    import numpy as np

    out = np.zeros(c.shape, dtype=c.dtype)
    for j in range(nbits):
        out ^= ((c >> j) & 1) * (d << j)
    return out


def _f2_coalesce(fs: List[int], fd: List[int]) -> Tuple[List[int], List[int]]:
    """Merge F2 modes: ``2**k:F(d), n:F(d << k)`` is ``2**k * n:F(d)``; size-1 modes go."""
    rs: List[int] = []
    rd: List[int] = []
    for s, d in zip(fs, fd):
        if s == 1:
            continue
        if rs:
            ps, pd = rs[-1], rd[-1]
            if (pd == 0 and d == 0) or (ps & (ps - 1) == 0 and d == pd << (ps.bit_length() - 1)):
                rs[-1] = ps * s
                continue
        rs.append(s)
        rd.append(d)
    if not rs:
        return [1], [0]
    return rs, rd


def _one_or_tuple(xs: List[int]) -> Any:
    return xs[0] if len(xs) == 1 else tuple(xs)


def _check_f2_stride(d: Any, depth: int = 0) -> Any:
    if type(d) is tuple or type(d) is list:
        if depth >= 64:
            raise MalformedLayoutError("F2 stride is nested too deeply")
        return tuple(_check_f2_stride(e, depth + 1) for e in d)
    if isinstance(d, F2):
        return d.val
    v = int_arg(d, "F2 stride leaf")
    if v < 0:
        raise MalformedLayoutError(f"F2 strides are bit patterns (>= 0), got {v}")
    return v


class F2Layout:
    """A layout whose strides are F2 (XOR) strides, as PyCuTe writes swizzles:
    ``L(c) = XOR_i c_i * F(d_i)`` with the carry-less product of :class:`F2`.  Stride
    leaves are non-negative integers or ``F2`` values (both mean the bit pattern).

    >>> L = F2Layout((4, 8), (F2(1), F2(8)))
    >>> L(2, 1), L(3, 3), str(L)
    (10, 27, '(4,8):(F1,F8)')
    """

    __slots__ = ("_shape", "_stride", "_L", "_hash")
    _shape: Any
    _stride: Any
    _L: Layout  # the same shape and stride as a plain layout (its flat modes, its checks)
    _hash: Optional[int]

    def __init__(self, shape: Any, stride: Any) -> None:
        s = checked_shape(shape, "F2 layout shape")
        d = _check_f2_stride(stride)
        self._L = Layout(s, d)  # congruence (and depth) checked by Layout
        self._shape = s
        self._stride = d
        self._hash = None

    @classmethod
    def _make(cls, shape: Any, stride: Any) -> "F2Layout":
        obj = object.__new__(cls)
        obj._shape, obj._stride = shape, stride
        obj._L = Layout.trusted(shape, stride)
        obj._hash = None
        return obj

    @property
    def shape(self) -> Any:
        return self._shape

    @property
    def stride(self) -> Any:
        """The strides as :class:`F2` values."""

        def wrap(t: Any) -> Any:
            return tuple(wrap(e) for e in t) if type(t) is tuple else F2(t)

        return wrap(self._stride)

    @property
    def size(self) -> int:
        return self._L.size

    @property
    def rank(self) -> int:
        return self._L.rank

    def __len__(self) -> int:
        return self._L.rank

    def __getitem__(self, i: Any) -> "F2Layout":
        m = self._L[i]
        return F2Layout._make(m.shape, m.stride)

    @property
    def cosize(self) -> int:
        """``1 +`` the largest value (values are bit patterns and ``L(0) == 0``), exact.

        >>> F2Layout((8, 64), (72, 1)).cosize
        512
        """
        fs, fd = self._L.flat_modes()
        if all(s & (s - 1) == 0 for s in fs):
            # the values are the GF(2) span of the bit images: its largest element, greedily
            basis: List[int] = []
            for v in self._bit_images():
                for b in basis:
                    v = min(v, v ^ b)
                if v:
                    basis.append(v)
                    basis.sort(reverse=True)
            best = 0
            for b in basis:
                best = max(best, best ^ b)
            return best + 1
        if self.size > swizzle.COSIZE_EVAL_LIMIT:
            raise UndecidableConditionError(
                f"cosize({self}): a non-power-of-two extent and a domain ({self.size}) too large "
                f"to evaluate (limit {swizzle.COSIZE_EVAL_LIMIT})",
                condition="cosize decidable by evaluation",
            )
        return int(self.eval_all().max()) + 1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, F2Layout):
            return False
        return bool(self._shape == other._shape and self._stride == other._stride)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(("F2Layout", self._shape, self._stride))
        return h

    def __str__(self) -> str:
        def f(t: Any) -> str:
            if type(t) is tuple:
                return "(" + ",".join(f(e) for e in t) + ")"
            return f"F{t}"

        return fmt_htuple(self._shape) + ":" + f(self._stride)

    def __repr__(self) -> str:
        return f"F2Layout({self._shape!r}, {self._stride!r})"

    def __call__(self, *args: Any) -> int:
        if len(args) == 1 and type(args[0]) is int:
            i = args[0]
            if not 0 <= i < self.size:
                raise OutOfDomainError(f"coordinate {i} is outside the domain [0, {self.size}) of {self}")
        else:
            i = Layout.trusted(self._shape, raw_prefix_product(self._shape))(*args)
            if isinstance(i, Layout):
                raise MalformedLayoutError("slicing an F2 layout is not supported")
        fs, fd = self._L.flat_modes()
        v = 0
        for s, d in zip(fs, fd):
            v ^= _clmul(i % s, d)
            i //= s
        return v

    def eval_all(self) -> "np.ndarray":
        """Every value in colexicographic order, vectorized.

        >>> F2Layout((2, 2), (3, 1)).eval_all().tolist()
        [0, 3, 1, 2]
        """
        check_enumerable(self.size, "eval_all of an F2 layout")
        import numpy as np

        fs, fd = self._L.flat_modes()
        top = max([d.bit_length() + max(0, (s - 1).bit_length()) for s, d in zip(fs, fd)] + [0])
        dtype: Any = np.int64 if top < 62 else object
        out = np.zeros(1, dtype=dtype)
        for s, d in zip(fs, fd):
            if s == 1:
                continue
            c = np.arange(s, dtype=np.int64).astype(dtype)
            col = _clmul_np(c, d, (s - 1).bit_length())
            out = (col[:, None] ^ out[None, :]).reshape(-1)
        return out

    def _bit_images(self) -> List[int]:
        fs, fd = self._L.flat_modes()
        return [d << j for s, d in zip(fs, fd) for j in range(max(0, (s - 1).bit_length()))]


# ----------------------------------------------------------------------------- conversions
@concrete_only
def to_f2(x: Any) -> F2Layout:
    """The F2-stride form of a Swizzle, a ComposedLayout or a Layout, where one exists.

    A Swizzle becomes its bit images on ``[0, size)``.  A layout (composed or plain) keeps
    its shape; a power-of-two leaf whose values are not ``c * F(d)`` for one ``d`` is
    refined into single bits (so the result's shape is a refinement of the input's, and
    1-D coordinates mean the same).  The result equals the input everywhere, which is
    proven structurally (bit-disjoint strides) or checked by evaluation (domains up to
    :data:`swizzle.VERIFY_LIMIT`).  Where the function is not GF(2)-linear in the bits of its
    coordinates -- a non-zero offset, a plain stride that carries -- InadmissibleError
    names the condition and a witness coordinate.

    >>> from layoutproof import Layout
    >>> print(to_f2(ComposedLayout(Swizzle(2, 0, 2), 0, Layout((4, 4), (4, 1)))))
    (4,4):(F5,F1)
    >>> print(to_f2(Layout((2, 4), (4, 1))))
    (2,4):(F4,F1)
    >>> to_f2(Layout(4, 3))
    Traceback (most recent call last):
      ...
    layoutproof.errors.InadmissibleError: to_f2(4:3): not GF(2)-linear: at coordinate 3 ...
    """
    if isinstance(x, Swizzle):
        return _swizzle_to_f2(x)
    if isinstance(x, ComposedLayout):
        return _to_f2_composed(x)
    if isinstance(x, F2Layout):
        return x
    if isinstance(x, Layout):
        return _to_f2_generic(x, None, x)
    raise MalformedLayoutError(
        f"to_f2 takes a Swizzle, a ComposedLayout or a Layout, got {type(x).__name__} {show(x)}"
    )


def _to_f2_composed(C: ComposedLayout) -> F2Layout:
    sw = C.swizzle
    if sw is not None and C.offset != 0 and sw(C.offset) != 0:
        raise InadmissibleError(
            f"to_f2({C}): the value at coordinate 0 is {sw(C.offset)}; an F2 layout maps 0 to 0 "
            "(a non-zero offset makes the function affine, not linear)",
            condition="GF(2)-linearity (zero at the origin)",
            witness=0,
        )
    if sw is not None and _linear_layout(C.layout_b):
        return _to_f2_generic(C, sw, C.layout_b)
    return _to_f2_generic(C, None, C.layout_b)


def _to_f2_generic(f: Any, sw: Optional[Swizzle], B: Layout) -> F2Layout:
    """F2 strides of the function ``f`` on B's domain.  With ``sw`` given, f = sw o B and
    B is bit-disjoint: f is GF(2)-linear and the strides follow from the bit images
    (no evaluation); otherwise candidate strides are read off the values and checked."""
    import numpy as np

    fs, fd = B.flat_modes()
    pp = raw_flatten(raw_prefix_product(B.shape))
    if sw is not None:

        def unit(k: int, j: int) -> int:
            v: int = sw(fd[k] << j)
            return v

        vals = None
    elif B.size == 1 or (isinstance(f, Layout) and _linear_layout(f)):
        vals = None

        def unit(k: int, j: int) -> int:
            v: int = fd[k] << j
            return v
    else:
        n = B.size
        if n > swizzle.VERIFY_LIMIT:
            raise UndecidableConditionError(
                f"to_f2({f}): no structural proof applies and the domain ({n}) is larger than "
                f"swizzle.VERIFY_LIMIT ({swizzle.VERIFY_LIMIT})",
                condition="GF(2)-linearity (undecided)",
            )
        vals = f.eval_all()
        if int(vals[0]) != 0:
            raise InadmissibleError(
                f"to_f2({f}): the value at coordinate 0 is {int(vals[0])}; an F2 layout maps 0 to 0",
                condition="GF(2)-linearity (zero at the origin)",
                witness=0,
            )

        def unit(k: int, j: int) -> int:
            return int(vals[pp[k] << j])

    leaves_s: List[Any] = []
    leaves_d: List[Any] = []
    for k, s in enumerate(fs):
        nb = max(0, (s - 1).bit_length())
        imgs = [unit(k, j) for j in range(nb)]
        if any(v < 0 for v in imgs):
            j = next(j for j, v in enumerate(imgs) if v < 0)
            raise InadmissibleError(
                f"to_f2({f}): the value {imgs[j]} at coordinate {pp[k] << j} is negative; F2 "
                "values are bit patterns",
                condition="GF(2)-linearity (non-negative values)",
                witness=pp[k] << j,
            )
        d = imgs[0] if imgs else 0
        if all(v == d << j for j, v in enumerate(imgs)):
            leaves_s.append(s)
            leaves_d.append(d)
        elif s & (s - 1) == 0:
            ms, md = _f2_coalesce([2] * nb, imgs)
            leaves_s.append(_one_or_tuple(ms))
            leaves_d.append(_one_or_tuple(md))
        else:
            j = next(j for j, v in enumerate(imgs) if v != d << j)
            raise InadmissibleError(
                f"to_f2({f}): not GF(2)-linear: mode {k} has extent {s} (not a power of two), "
                f"and its values are not c * F{d}: at coordinate {pp[k] << j} the value is "
                f"{imgs[j]}, F-stride form gives {d << j}",
                condition="GF(2)-linearity",
                witness=pp[k] << j,
            )
    shape = raw_unflatten(tuple(leaves_s), B.shape) if type(B.shape) is tuple else leaves_s[0]
    stride = raw_unflatten(tuple(leaves_d), B.stride) if type(B.stride) is tuple else leaves_d[0]
    R = F2Layout._make(shape, stride)
    if vals is not None:
        got = R.eval_all()
        bad = np.flatnonzero(got != vals)
        if bad.size:
            w = int(bad[0])
            raise InadmissibleError(
                f"to_f2({f}): not GF(2)-linear: at coordinate {w} the value is {int(vals[w])}, "
                f"but the XOR of its bits' images is {int(got[w])}",
                condition="GF(2)-linearity",
                witness=w,
            )
    return R


@concrete_only
def from_f2(L: Any) -> Any:
    """A plain Layout, or ``Swizzle o 0 o Layout``, equal to the F2 layout ``L`` on its
    domain; InadmissibleError where none is found.

    A plain Layout is returned when the strides never overlap (XOR is then +).  Else the
    swizzle read off the bit images that are pairs of bits at one distance ``|S|`` (the
    read and the flipped bit of one swizzle) is tried with either sign, then every swizzle
    whose fields lie within the images' bits (up to 24 bits), smallest first.  For a
    swizzle ``sw`` the inner layout is forced, ``P(c) = sw(L(c))`` (a swizzle is an
    involution): its strides are ``sw(image)`` per leaf, or per bit where a leaf's images
    are not one stride's multiples (the leaf is then refined).  Every answer is checked:
    structurally when P's strides are bit-disjoint (then sw o P is GF(2)-linear and agrees
    with L on every bit), else by evaluation up to :data:`swizzle.VERIFY_LIMIT`.

    >>> print(from_f2(F2Layout((2, 2), (3, 1))))
    Sw<1,0,1> o 0 o (2,2):(2,1)
    >>> print(from_f2(Swizzle(2, 1, -3).to_f2()))
    Sw<2,1,-3> o 0 o (2,4,8):(1,2,8)
    >>> print(from_f2(F2Layout((4, 2), (1, 4))))
    (4,2):(1,4)
    """
    if not isinstance(L, F2Layout):
        raise MalformedLayoutError(f"from_f2 takes an F2Layout, got {type(L).__name__} {show(L)}")
    fs, fd = L._L.flat_modes()
    plain = Layout.trusted(L._shape, L._stride)
    if _layout_bit_disjoint(fs, fd):
        return plain
    imgs = L._bit_images()
    found: List[Tuple[int, int]] = []
    pairs: Optional[List[Tuple[int, int]]] = found
    for v in imgs:
        pc = popcount(v)
        if pc > 2:
            pairs = None
            break
        if pc == 2:
            bs = bits_of(v)
            found.append((bs[0], bs[1]))
    tried: List[Swizzle] = []
    if pairs:
        for sign in (1, -1):
            ys = [hi if sign > 0 else lo for lo, hi in pairs]
            zs = [lo if sign > 0 else hi for lo, hi in pairs]
            sw = swizzle_from_yz(ys, zs)
            if sw is None or sw.is_identity():
                continue
            tried.append(sw)
            R = _try_inner(L, sw, fs, fd)
            if R is not None:
                return R
    # every swizzle within the images' bits, smallest first, each decided structurally
    t = max((v.bit_length() for v in imgs), default=0)
    if t <= _F2_SEARCH_BITS:
        for b in range(1, t // 2 + 1):
            for a in range(b, t - b + 1):
                for sgn in (1, -1):
                    for m in range(0, t - b - a + 1):
                        sw = Swizzle(b, m, sgn * a)
                        R = _try_inner(L, sw, fs, fd, allow_eval=False)
                        if R is not None:
                            return R
    n = L.size
    if n <= swizzle.VERIFY_LIMIT:
        got = L.eval_all()
        plain_vals = plain.eval_all()
        if bool((got == plain_vals).all()):
            return plain
    raise InadmissibleError(
        f"from_f2({L}): no plain layout and no swizzle o layout equals it"
        + (f" (tried {', '.join(map(str, tried))})" if tried else "")
        + "; its bit images "
        + str(imgs[:16])
        + ("..." if len(imgs) > 16 else "")
        + (f" (every swizzle within bit {t} tried)" if t <= _F2_SEARCH_BITS else ""),
        condition="swizzle form",
        witness=None,
    )


def _linear_layout(L: Layout) -> bool:
    """Non-negative strides whose bit images never overlap: L is GF(2)-linear."""
    fs, fd = L.flat_modes()
    return all(d >= 0 for d in fd) and _layout_bit_disjoint(fs, fd)


def _layout_bit_disjoint(fs: Tuple[Any, ...], fd: Tuple[Any, ...]) -> bool:
    """All images ``d << j`` (j below the bit length of s-1) pairwise bit-disjoint: then
    XOR equals + for the plain layout with the same strides."""
    seen = 0
    for s, d in zip(fs, fd):
        for j in range(max(0, (s - 1).bit_length())):
            v = d << j
            if v & seen:
                return False
            seen |= v
    return True


def _try_inner(
    L: F2Layout, sw: Swizzle, fs: Tuple[Any, ...], fd: Tuple[Any, ...], allow_eval: bool = True
) -> Optional[ComposedLayout]:

    leaves_s: List[Any] = []
    leaves_d: List[Any] = []
    for s, d in zip(fs, fd):
        nb = max(0, (s - 1).bit_length())
        p = sw(d)
        ps = [sw(d << j) for j in range(nb)]
        if all(q == p << j for j, q in enumerate(ps)):
            leaves_s.append(s)
            leaves_d.append(p)
        elif s & (s - 1) == 0:
            ms, md = coalesce_modes(tuple([2] * nb), tuple(ps))
            leaves_s.append(_one_or_tuple(ms))
            leaves_d.append(_one_or_tuple(md))
        else:
            return None
    prof_s, prof_d = L._shape, L._stride
    shape = raw_unflatten(tuple(leaves_s), prof_s) if type(prof_s) is tuple else leaves_s[0]
    stride = raw_unflatten(tuple(leaves_d), prof_d) if type(prof_d) is tuple else leaves_d[0]
    inner = Layout.trusted(shape, stride)
    R = ComposedLayout.trusted(sw, 0, inner)
    ifs, ifd = inner.flat_modes()
    if _layout_bit_disjoint(ifs, ifd) and all(d >= 0 for d in ifd):
        # inner is GF(2)-linear and sw(inner(bit)) == L(bit) for every bit: equal
        ok = all(sw(q) == v for q, v in zip(_f2_like_images(ifs, ifd), _refined_images(L, ifs)))
        return R if ok else None
    if not allow_eval or L.size > swizzle.VERIFY_LIMIT:
        return None
    return R if bool((R.eval_all() == L.eval_all()).all()) else None


def _f2_like_images(fs: Tuple[Any, ...], fd: Tuple[Any, ...]) -> List[int]:
    return [d << j for s, d in zip(fs, fd) for j in range(max(0, (s - 1).bit_length()))]


def _refined_images(L: F2Layout, ifs: Tuple[Any, ...]) -> List[int]:
    """L's values at the coordinates that are one bit of one leaf of the refined shape
    ``ifs`` (a refinement of L's flat shape, same 1-D coordinates)."""
    out = []
    p = 1
    for s in ifs:
        for j in range(max(0, (s - 1).bit_length())):
            out.append(L(p << j))
        p *= s
    return out


def _swizzle_to_f2(sw: Swizzle) -> F2Layout:
    """The swizzle on ``[0, size)`` as a layout with F2 strides (the image of each bit)."""
    imgs = [sw(1 << j) for j in range(sw.size.bit_length() - 1)]
    ms, md = _f2_coalesce([2] * len(imgs), imgs)
    return F2Layout._make(_one_or_tuple(ms), _one_or_tuple(md))


# ----------------------------------------------------------------------------- F2 strides in Layouts
# A plain Layout may hold F2 strides as its leaves (PyCuTe's generalization): ``L(c) = sum_i
# c_i * d_i`` with the F2 algebra's + (XOR) and carry-less product.  Zero integer strides may
# stand beside them, nothing else (layoutproof.layout refuses the mix).  The core algebra
# hands every operation on such a layout to the functions below (kinds.STRIDE_SCALARS).


def _leaf_bits(x: Any) -> int:
    return x.val if isinstance(x, F2) else int(x)


def f2_view(L: Layout) -> F2Layout:
    """The F2Layout with the shape and the strides (as bit patterns) of a Layout whose
    strides are F2 values (or zeros)."""

    if not isinstance(L, Layout):
        raise MalformedLayoutError(f"f2_view takes a Layout with F2 strides, got {show(L)}")

    def conv(t: Any) -> Any:
        return tuple(conv(e) for e in t) if type(t) is tuple else _leaf_bits(t)

    return F2Layout._make(L.shape, conv(L.stride))


def f2_layout(shape: Any, bits: Any) -> Layout:
    """The Layout with F2 strides ``F2(b)`` for the bit patterns ``bits`` (congruent with
    ``shape``)."""

    shape = checked_shape(shape)  # extents >= 1, nesting bounded

    def conv(s: Any, t: Any) -> Any:
        if type(s) is tuple:
            if type(t) not in (tuple, list) or len(t) != len(s):
                raise MalformedLayoutError(
                    f"f2_layout: bits {show(bits)} are not congruent with shape {show(shape)}"
                )
            return tuple(conv(a, b) for a, b in zip(s, t))
        if type(t) is not int or t < 0:
            raise MalformedLayoutError(
                f"f2_layout: a stride's bit pattern is a non-negative int, got {show(t)} in {show(bits)}"
            )
        return F2(t)

    return Layout.trusted(shape, conv(shape, bits))


def _as_f2_layout(R: F2Layout) -> Layout:
    return f2_layout(R.shape, R._stride)


def _bits_of_value(x: Any) -> int:
    """A value of an F2 layout (an F2 or the integer 0) as its bit pattern."""
    return x.val if isinstance(x, F2) else int(x)


def _verify_composition(A: Layout, B: Layout, R: Layout) -> Optional[int]:
    """The first coordinate of B where R(c) != A(B(c)) (A's last mode unbounded), else
    None.  Values compare as bit patterns (an F2 value and an integer offset name the
    same element when their bits agree)."""
    for c in range(B.size):
        b = B(c)
        a = A(_bits_of_value(b) if isinstance(b, F2) else b, extend=True)
        if _bits_of_value(R(c)) != _bits_of_value(a):
            return c
    return None


def _f2_composition(A: Layout, B: Layout) -> Layout:
    """``A o B`` where A or B has F2 strides: a candidate built from the structure, checked
    against ``A(B(c))`` at every coordinate of B (up to ops.EXACT_LIMIT of them).

    * F2 strides in A, integer strides in B: B is first composed with A's identity layout
      (every checked condition of the integer algebra applies), which says which leaf of
      A each leaf of B walks and by how much; the leaf's F2 stride is A's value there.
      That is right where the integer steps add without carries (powers of two do), and
      the check finds the coordinate where they do not.
    * F2 strides in B: B's values are bit patterns used as A's 1-D coordinates; the leaf
      strides are A's values at B's strides, right where A is XOR-linear on B's image.
    """
    from .arith import make_identity_layout
    from .ops import EXACT_LIMIT, composition

    if B.size > EXACT_LIMIT:
        raise UndecidableConditionError(
            f"composition({A}, {B}) with F2 strides is checked at every coordinate of B, and B "
            f"has {B.size} > EXACT_LIMIT ({EXACT_LIMIT})",
            condition="F2 composition checked by evaluation",
        )
    b_f2 = any(isinstance(d, F2) for d in B.flat_modes()[1])
    if any(type(d) is not int and not isinstance(d, F2) for d in B.flat_modes()[1]):
        raise InadmissibleError(
            f"composition({A}, {B}): B mixes coordinate strides with an F2 layout",
            condition="one codomain",
            witness=None,
        )
    if not b_f2:
        P = composition(make_identity_layout(A.shape), B)  # where each leaf of B walks in A
        fs, fd = P.flat_modes()
        strides = [A(d, extend=True) if (type(d) is not int or d != 0) else 0 for d in fd]
        bits = [_bits_of_value(v) for v in strides]
        R = f2_layout(P.shape, raw_unflatten(tuple(bits), P.stride) if type(P.stride) is tuple else bits[0])
    else:
        fs, fd = B.flat_modes()
        vals = []
        for d in fd:
            v = A(_bits_of_value(d), extend=True) if _bits_of_value(d) != 0 else 0
            if not isinstance(v, F2) and v < 0:
                raise InadmissibleError(
                    f"composition({A}, {B}): A's value {v} at B's stride {d} is negative; an F2 "
                    "stride is a bit pattern",
                    condition="F2 composition: non-negative values",
                    witness=None,
                )
            vals.append(_bits_of_value(v))
        R = f2_layout(B.shape, raw_unflatten(tuple(vals), B.stride) if type(B.stride) is tuple else vals[0])
    w = _verify_composition(A, B, R)
    if w is not None:
        raise InadmissibleError(
            f"composition({A}, {B}): the F2 layout built leaf by leaf does not agree with "
            f"A(B(c)) -- the candidate {R} differs at coordinate {w} (the integer and XOR "
            "additions of A's and B's codomains do not commute there)",
            condition="F2 composition: XOR-linear",
            witness=w,
        )
    return R


def _echelon(vectors: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """A fully reduced echelon basis over GF(2) of ``(vector, tag)`` pairs (tags carried
    along by XOR), as ``(pivot vector, tag)`` sorted by the pivot (highest) bit."""
    basis: List[Tuple[int, int]] = []
    for v, t in vectors:
        for b, bt in basis:
            if v ^ b < v:
                v, t = v ^ b, t ^ bt
        if v:
            hb = v.bit_length() - 1
            basis = [(b ^ v, bt ^ t) if (b >> hb) & 1 else (b, bt) for b, bt in basis]
            basis.append((v, t))
    basis.sort()
    return basis


def _index_bit_images(L: F2Layout) -> Optional[List[Tuple[int, int]]]:
    """``(L(2**j), 2**j)`` for every bit j of the 1-D index, when every extent is a power
    of two (then L is GF(2)-linear in the index bits); None otherwise."""
    fs, fd = L._L.flat_modes()
    if not all(s & (s - 1) == 0 for s in fs):
        return None
    out: List[Tuple[int, int]] = []
    off = 0
    for s, d in zip(fs, fd):
        nb = s.bit_length() - 1
        out.extend((d << j, 1 << (off + j)) for j in range(nb))
        off += nb
    return out


def _f2_right_inverse(L: Layout) -> Layout:
    """The largest right inverse of a layout with F2 strides: ``L(R(i)) == i`` for every
    ``i < size(R)``.  Power-of-two extents: L is linear in its index bits; R takes the
    bits ``e_0, e_1, ...`` of the codomain in order while they lie in L's image (reduced
    echelon form over GF(2)), each to the index bits of a preimage, so R has F2 strides
    (exact, any size).  Other extents: the smallest preimages of ``0, 1, ...`` are
    recognized as an F2 layout (the map to the smallest preimage is linear where L is),
    trying the whole prefix of the image, then shorter power-of-two ones (up to
    ops.EXACT_LIMIT coordinates)."""
    V = f2_view(L)
    imgs = _index_bit_images(V)
    if imgs is not None:
        basis = _echelon(imgs)
        strides: List[int] = []
        for t in range(len(basis)):
            v, tag = 1 << t, 0
            for b, bt in reversed(basis):
                if (v >> (b.bit_length() - 1)) & 1:
                    v, tag = v ^ b, tag ^ bt
            if v:
                break
            strides.append(tag)
        if not strides:
            return Layout.trusted(1, 0)
        ms, md = _f2_coalesce([2] * len(strides), strides)
        return f2_layout(_one_or_tuple(ms), _one_or_tuple(md))
    return _f2_inverse_by_values(L, V)


class _Values:
    """A function given by its table (what ``_to_f2_generic`` reads off)."""

    def __init__(self, vals: Any, text: str) -> None:
        self.vals = vals
        self.text = text

    def eval_all(self) -> Any:
        return self.vals

    def __str__(self) -> str:
        return self.text


def _f2_inverse_by_values(L: Layout, V: F2Layout) -> Layout:
    from .ops import EXACT_LIMIT

    if V.size > EXACT_LIMIT:
        raise UndecidableConditionError(
            f"right_inverse({L}): a non-power-of-two extent, and the domain ({V.size}) is larger "
            f"than EXACT_LIMIT ({EXACT_LIMIT})",
            condition="F2 inverse decided by evaluation",
        )
    import numpy as np

    vals = V.eval_all()
    first: Dict[int, int] = {}
    for i, v in enumerate(vals.tolist()):
        first.setdefault(v, i)
    m = 0
    while m in first:
        m += 1
    tries = [m] + [1 << k for k in range(max(m, 1).bit_length() - 1, -1, -1) if (1 << k) < m]
    for n in tries:
        if n <= 1:
            break
        p = np.array([first[i] for i in range(n)], dtype=np.int64)
        k = (n & -n).bit_length() - 1
        o = n >> k
        shape = tuple([2] * k + ([o] if o > 1 else []))
        B = Layout(shape if len(shape) > 1 else shape[0])

        try:
            R = _to_f2_generic(_Values(p, f"the smallest preimages under {L}"), None, B)
        except InadmissibleError:
            continue
        return _as_f2_layout(R)
    return Layout.trusted(1, 0)


def _f2_left_inverse(L: Layout) -> Layout:
    """A left inverse of a layout with F2 strides and power-of-two extents:
    ``R(L(i)) == i`` for every ``i`` when L is injective, ``L(R(L(i))) == L(i)`` always.
    R is linear over GF(2) on the bits of ``[0, cosize(L))``: a bit that leads a vector of
    L's image (reduced echelon form) goes to that vector's index bits, every other bit to
    0.  Other extents raise InadmissibleError."""
    V = f2_view(L)
    imgs = _index_bit_images(V)
    if imgs is None:
        fs = V._L.flat_modes()[0]
        k = next(i for i, s in enumerate(fs) if s & (s - 1))
        raise InadmissibleError(
            f"left_inverse({L}): leaf {k} has the extent {fs[k]}, not a power of two; an F2 "
            "layout is then not linear in the bits of its index, and no F2 layout inverts it "
            "bit by bit",
            condition="F2 inverse: power-of-two extents",
            witness=None,
        )
    basis = _echelon(imgs)
    nb = max(0, (V.cosize - 1).bit_length())
    lead = {b.bit_length() - 1: bt for b, bt in basis}
    strides = [lead.get(j, 0) for j in range(nb)]
    if not strides:
        return Layout.trusted(1, 0)
    ms, md = _f2_coalesce([2] * nb, strides)
    return f2_layout(_one_or_tuple(ms), _one_or_tuple(md))


def _f2_complement(L: Layout, *args: Any) -> Layout:
    raise InadmissibleError(
        f"complement({L}): F2 strides are not ordered, and complement follows the strides in "
        "increasing order (as do the products and the divides built on it)",
        condition="integer strides",
        witness=None,
    )


kinds.register("composition", kinds.STRIDE_SCALARS, _f2_composition)
kinds.register("right_inverse", kinds.STRIDE_SCALARS, _f2_right_inverse)
kinds.register("left_inverse", kinds.STRIDE_SCALARS, _f2_left_inverse)
kinds.register("complement", kinds.STRIDE_SCALARS, _f2_complement)
kinds.register_hook("scalar_cosize", lambda L: f2_view(L).cosize)
kinds.register_hook("scalar_eval_all", lambda L: f2_view(L).eval_all())

kinds.register("to_f2", Swizzle, _swizzle_to_f2)
kinds.register("to_f2", ComposedLayout, to_f2)
