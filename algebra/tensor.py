"""Tensors: a layout over an engine, and the algorithms of Cecka's CuTe talk.

A :class:`Tensor` pairs a :class:`~layoutproof.layout.Layout` with an *engine* (storage
indexed by integers: a 1-D numpy array, a list, any object with ``__getitem__`` /
``__setitem__``) and an offset: ``t(c) == engine[offset + layout(c)]``.  Slicing a tensor
slices its layout and adds the slice's offset, so a slice is a *view* of the same engine.

* :func:`make_tensor` -- over a storage (a numpy array alone brings its own layout).
* :func:`make_identity_tensor` -- the engine is "the coordinates themselves": ``t(c)``
  is the natural coordinate of ``c`` (CuTe's ``ArithmeticTupleIterator`` over
  :func:`~layoutproof.arith.make_identity_layout`).  Tiled and partitioned like any other
  tensor, it tells which element of the original each tile element is.
* :func:`local_tile`, :func:`local_partition` (C++ ``inner_partition`` /
  ``outer_partition``): partitioning is composition (a divide) followed by slicing.
* :func:`copy` (rank-1: ``dst(i) = src(i)`` for every ``i``) and :func:`gemm`
  (``C(m,n) += A(m,k) * B(n,k)``), for any layouts.

>>> import numpy as np
>>> A = make_tensor(list(range(32)), Layout((4, 8), (8, 1)))  # row-major 4x8
>>> A(1, 2), A[1, 2], A(10)                                    # 10 is (2, 2)
(10, 10, 18)
>>> print(A(1, _).layout); list(A(1, _))
(8):(1)
[8, 9, 10, 11, 12, 13, 14, 15]
>>> T = local_tile(A, (2, 4), (1, 0))                          # the tile at block (1, 0)
>>> T.to_numpy()
array([[16, 17, 18, 19],
       [24, 25, 26, 27]])
>>> I = make_identity_tensor((4, 8))
>>> local_tile(I, (2, 4), (1, 0))(1, 3)                        # where that element came from
ArithTuple(3, 3)
"""

from __future__ import annotations

from typing import Any, Iterator, List, Tuple

from .arith import ArithTuple, make_identity_layout
from .composed import ComposedLayout
from .draw import tensor_html, tensor_svg
from .errors import InadmissibleError, LayoutError, MalformedLayoutError, OutOfDomainError, show
from .inttuple import MAX_DEPTH, is_int, raw_flatten, raw_product
from .layout import Layout, Underscore, _, concrete_only, layout_arg, slice_and_offset
from .ops import composition as _c

__all__ = [
    "Tensor",
    "CoordinateEngine",
    "make_tensor",
    "make_identity_tensor",
    "composition",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "inner_partition",
    "outer_partition",
    "local_tile",
    "local_partition",
    "copy",
    "copy_if",
    "fill",
    "clear",
    "gemm",
]


class CoordinateEngine:
    """The engine of an identity tensor: element ``x`` *is* ``x`` (a coordinate).

    Read-only; C++'s ``ArithmeticTupleIterator``."""

    __slots__ = ()

    def __getitem__(self, x: Any) -> Any:
        return x

    def __setitem__(self, x: Any, v: Any) -> None:
        raise MalformedLayoutError("an identity (coordinate) tensor is read-only")

    def __repr__(self) -> str:
        return "CoordinateEngine()"


def _is_wild(c: Any) -> bool:
    return c is None or c is _ or isinstance(c, Underscore)


def _has_wild(c: Any) -> bool:
    if type(c) is tuple or type(c) is list:
        return any(_has_wild(e) for e in c)
    return _is_wild(c)


def _np() -> Any:
    import numpy as np

    return np


def _is_ndarray(x: Any) -> bool:
    import sys

    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _has_coord(L: Any) -> bool:
    if isinstance(L, ComposedLayout):
        return False
    return any(isinstance(d, ArithTuple) for d in L.flat_modes()[1])


def _as_tensor_layout(layout: Any, op: str) -> Any:
    """A Layout, a ComposedLayout (a swizzled layout: C++ tensors take them too), or a
    shape (its compact column-major layout)."""
    if isinstance(layout, (Layout, ComposedLayout)):
        return layout
    return layout_arg(layout, op)


def _value_error(e: Exception, engine: Any, value: Any) -> MalformedLayoutError:
    return MalformedLayoutError(
        f"the tensor's storage ({_engine_str(engine)}) rejected the value {show(value)}: {e}"
    )


def _engine_len(engine: Any) -> Any:
    try:
        return len(engine)
    except TypeError:
        return None


class Tensor:
    """A layout over an engine: ``t(c) = engine[offset + layout(c)]``.

    ``Tensor(layout, storage, offset=0)``: ``layout`` is a Layout, a swizzled
    (:class:`~layoutproof.composed.ComposedLayout`) layout, or a shape (compact
    column-major); ``storage`` is a 1-D numpy array (a C-contiguous n-D array is viewed
    flat), a list, or anything indexable by integers.  Every offset the layout reaches
    must lie inside a storage that has a length (else OutOfDomainError).

    Indexing: ``t(c)``, ``t(i, j)``, ``t[c]``, ``t[i, j]`` give an element; with ``_``
    (``None``, or ``:`` inside ``[]``) they give a sub-tensor (a view).  Iteration and
    ``t(i)`` with an integer follow the colexicographic order of the domain.

    >>> t = Tensor(Layout((2, 3), (3, 1)), list(range(6)))
    >>> t(1, 2), t[1, :].to_numpy().tolist(), [x for x in t]
    (5, [3, 4, 5], [0, 3, 1, 4, 2, 5])
    >>> t[1, 2] = 50
    >>> t.storage[5], t.shape, t.size
    (50, (2, 3), 6)
    """

    __slots__ = ("_layout", "_engine", "_offset")

    def __init__(self, layout: Any, storage: Any, offset: Any = 0) -> None:
        L = _as_tensor_layout(layout, "Tensor")
        engine = _as_engine(storage)
        if isinstance(offset, ArithTuple):
            off: Any = offset
        else:
            if not is_int(offset):
                raise MalformedLayoutError(
                    f"Tensor offset must be an integer, got {type(offset).__name__} {show(offset)}"
                )
            off = int(offset)
        coord = _has_coord(L) or isinstance(off, ArithTuple)
        if coord and not isinstance(engine, CoordinateEngine):
            raise MalformedLayoutError(
                f"the layout {L} has coordinate strides: its values are coordinates, which only "
                "a CoordinateEngine (make_identity_tensor) takes as indices"
            )
        if not coord:
            _check_bounds(L, engine, off)
        self._layout = L
        self._engine = engine
        self._offset = off

    @classmethod
    def _make(cls, layout: "Layout | ComposedLayout", engine: Any, offset: Any) -> "Tensor":
        obj = object.__new__(cls)
        obj._layout = layout
        obj._engine = engine
        obj._offset = offset
        return obj

    # ------------------------------------------------------------------ properties
    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def shape(self) -> Any:
        return self._layout.shape

    @property
    def stride(self) -> Any:
        return self._layout.stride

    @property
    def size(self) -> int:
        return self._layout.size

    @property
    def rank(self) -> int:
        return self._layout.rank

    @property
    def depth(self) -> int:
        return self._layout.depth

    @property
    def engine(self) -> Any:
        """The storage the tensor indexes (shared by every view of it)."""
        return self._engine

    storage = engine
    data = engine

    @property
    def offset(self) -> Any:
        """The engine index of the tensor's coordinate 0 (a coordinate for identity tensors)."""
        return self._offset

    def __len__(self) -> int:
        return self._layout.size

    def __iter__(self) -> Iterator[Any]:
        L, e, o = self._layout, self._engine, self._offset
        ev = L._eval_int if isinstance(L, Layout) else L
        for i in range(L.size):
            yield e[o + ev(i)]

    # ------------------------------------------------------------------ access
    def __call__(self, *args: Any) -> Any:
        if not args:
            raise MalformedLayoutError("a tensor is indexed by a coordinate; none given")
        c = args[0] if len(args) == 1 else args
        res = self._layout(*args)
        if isinstance(res, ComposedLayout):  # a slice: its offset is inside the layout
            return Tensor._make(res, self._engine, self._offset)
        if isinstance(res, Layout):
            sub, off = slice_and_offset(c, self._layout)
            return Tensor._make(sub, self._engine, self._offset + off)
        return self._engine[self._offset + res]

    def __getitem__(self, key: Any) -> Any:
        key = _key(key)
        if type(key) is tuple:
            return self(*key) if key else self(key)
        return self(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        key = _key(key)
        if _has_wild(key):
            raise MalformedLayoutError(
                f"t[{show(key)}] = ... needs a full coordinate; to set a slice, use "
                "fill(t(...), value) or copy(src, t(...))"
            )
        c = key if type(key) is tuple else (key,)
        off = self._layout(*c)
        try:
            self._engine[self._offset + off] = value
        except (TypeError, ValueError, OverflowError) as e:  # an immutable storage, a bad value
            raise _value_error(e, self._engine, value) from None

    # ------------------------------------------------------------------ algebra on the layout
    def compose(self, tiler: Any) -> "Tensor":
        """The tensor with layout ``composition(layout, tiler)`` (same engine and offset)."""
        return Tensor._make(_c(self._layout, tiler), self._engine, self._offset)

    def with_layout(self, layout: Any) -> "Tensor":
        """The same engine and offset under another layout (checked like the constructor)."""
        return Tensor(layout, self._engine, self._offset)

    # ------------------------------------------------------------------ materialization
    def to_numpy(self) -> Any:
        """The elements as a dense numpy array of shape ``(size(mode0), size(mode1), ...)``
        (``a[m, n] == t(m, n)`` with 1-D coordinates per mode).  Identity tensors give an
        object array of coordinate tuples.

        >>> import numpy as np
        >>> make_tensor(np.arange(6), (2, 3)).to_numpy()
        array([[0, 2, 4],
               [1, 3, 5]])
        """
        np = _np()
        L = self._layout
        sizes = tuple(raw_product(s) for s in L.shape) if type(L.shape) is tuple else (L.shape,)
        offs = L.eval_all()
        e, o = self._engine, self._offset
        if isinstance(e, CoordinateEngine):
            vals = _object_array([_plain(o + v) for v in offs])
        elif _is_ndarray(e) and e.ndim == 1 and offs.dtype != object:
            vals = e[o + offs]
        else:
            items = [e[o + int(x)] for x in offs]
            try:
                vals = np.array(items)
            except (ValueError, TypeError):
                vals = None
            if vals is None or vals.shape != (len(items),):
                vals = _object_array(items)
        return vals.reshape(sizes, order="F")

    numpy = to_numpy

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        return f"Tensor({_engine_str(self._engine)}+{self._offset} o {self._layout})"

    __str__ = __repr__

    # ------------------------------------------------------------------ notebooks
    def _repr_html_(self) -> str:
        return tensor_html(self)

    def _repr_svg_(self) -> "str | None":
        try:
            return tensor_svg(self, max_cells=1024)
        except (LayoutError, ImportError):
            return None


def _plain(x: Any) -> Any:
    return x.to_tuple() if isinstance(x, ArithTuple) else x


def _object_array(items: List[Any]) -> Any:
    np = _np()
    out = np.empty(len(items), dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out


def _engine_str(e: Any) -> str:
    if isinstance(e, CoordinateEngine):
        return "ArithTuple"
    if _is_ndarray(e):
        return f"{e.dtype}[{e.shape[0] if e.ndim == 1 else e.shape}]"
    n = _engine_len(e)
    return f"{type(e).__name__}[{n}]" if n is not None else type(e).__name__


def _key(key: Any, depth: int = 0) -> Any:
    """numpy-style keys: ``:`` is the wildcard; other slices are refused."""
    if depth > MAX_DEPTH:
        raise MalformedLayoutError(f"a tensor key nested deeper than {MAX_DEPTH} levels")
    if type(key) is slice:
        if key == slice(None):
            return _
        raise MalformedLayoutError(
            f"tensor keys take integers, coordinates and ':' (the wildcard _); got the slice {key}"
            " (use local_tile or a divide for ranges)"
        )
    if type(key) is tuple or type(key) is list:
        return tuple(_key(k, depth + 1) for k in key)
    if key is Ellipsis:
        raise MalformedLayoutError("tensor keys do not take '...'")
    return key


def _as_engine(storage: Any) -> Any:
    if isinstance(storage, (Tensor, Layout)):
        raise MalformedLayoutError(
            f"a tensor's storage is an indexable engine, got a {type(storage).__name__}"
        )
    if _is_ndarray(storage):
        if storage.ndim == 1:
            return storage
        if storage.ndim == 0:
            raise MalformedLayoutError("a 0-d numpy array is not a tensor storage")
        if storage.flags.c_contiguous:
            return storage.reshape(-1)
        raise MalformedLayoutError(
            "a numpy storage with an explicit layout must be 1-D or C-contiguous (it is read "
            "as flat memory); pass the array alone to make_tensor to use its own strides"
        )
    if isinstance(storage, (str, bytes)) or not hasattr(storage, "__getitem__"):
        raise MalformedLayoutError(
            f"a tensor's storage must be indexable by integers (numpy array, list, ...), got "
            f"{type(storage).__name__}"
        )
    return storage


def _check_bounds(L: Any, engine: Any, off: int) -> None:
    n = _engine_len(engine)
    if n is None:
        return
    if isinstance(L, ComposedLayout):
        lo, hi = _composed_range(L)
        lo, hi = off + lo, off + hi
    else:
        fs, fd = L.flat_modes()
        lo = hi = off
        for s, d in zip(fs, fd):
            if d < 0:
                lo += (s - 1) * d
            else:
                hi += (s - 1) * d
    if lo < 0 or hi >= n:
        bad = lo if lo < 0 else hi
        raise OutOfDomainError(
            f"the tensor's layout {L} at offset {off} reaches index {bad}, outside the storage [0, {n})"
        )


def _layout_range(L: Layout) -> Tuple[int, int]:
    fs, fd = L.flat_modes()
    lo = hi = 0
    for s, d in zip(fs, fd):
        if d < 0:
            lo += (s - 1) * d
        else:
            hi += (s - 1) * d
    return lo, hi


#: composed layouts up to this size are bounded exactly, by evaluation
_EXACT_RANGE_LIMIT = 1 << 20


def _composed_range(C: ComposedLayout) -> Tuple[int, int]:
    """``(least, largest)`` value of a composed layout: exact by evaluation for small
    domains; for larger ones a bound that evaluates nothing (a swizzle changes only the bits
    below its top bit ``t``, so it keeps each aligned ``2**t`` block; an outer layout is
    bounded over its whole domain)."""
    if C.size <= _EXACT_RANGE_LIMIT:
        v = C.eval_all()
        return int(v.min()), int(v.max())
    lo, hi = _layout_range(C.layout_b)
    lo, hi = lo + C.offset, hi + C.offset
    a = C.layout_a
    if isinstance(a, Layout):
        return _layout_range(a)
    t = max(a.yyy_msk, a.zzz_msk, 1).bit_length()
    return (lo >> t) << t, (((hi >> t) + 1) << t) - 1


# ----------------------------------------------------------------------------- constructors
def _ndarray_tensor(arr: Any) -> Tensor:
    np = _np()
    if arr.ndim == 0 or arr.size == 0:
        raise MalformedLayoutError("make_tensor: a numpy array needs at least one element and one mode")
    item = arr.itemsize
    if any(s % item for s in arr.strides):
        raise MalformedLayoutError("make_tensor: the array's strides are not whole elements")
    el = [s // item for s in arr.strides]
    off = sum((n - 1) * -e for n, e in zip(arr.shape, el) if e < 0)
    span = 1 + sum((n - 1) * abs(e) for n, e in zip(arr.shape, el))
    base = arr[tuple(slice(None, None, -1) if e < 0 else slice(None) for e in el)]
    flat = np.lib.stride_tricks.as_strided(
        base, shape=(span,), strides=(item,), writeable=bool(arr.flags.writeable)
    )
    return Tensor._make(Layout(tuple(int(s) for s in arr.shape), tuple(el)), flat, off)


@concrete_only
def make_tensor(storage: Any, layout_or_shape: Any = None, stride: Any = None, offset: Any = 0) -> Tensor:
    """A tensor over ``storage``.

    * ``make_tensor(storage, layout)``, ``make_tensor(storage, shape[, stride])``; the
      layout may be swizzled (a :class:`~layoutproof.composed.ComposedLayout`, as C++'s
      shared-memory tensors);
    * ``make_tensor(ndarray)``: the array's own shape and strides (in elements), so
      ``t(i, j) == a[i, j]`` for any view (transposed, sliced, negative strides);
    * ``make_tensor(list_or_1d)``: the compact layout of its length.

    >>> import numpy as np
    >>> a = np.arange(12).reshape(3, 4)
    >>> t = make_tensor(a.T)
    >>> print(t.layout); int(t(3, 2)) == int(a.T[3, 2])
    (4,3):(1,4)
    True
    >>> from layoutproof import Swizzle, composition
    >>> s = make_tensor(np.arange(16), composition(Swizzle(1, 0, 2), Layout((4, 4), (4, 1))))
    >>> [int(s(1, j)) for j in range(4)], s(1, _).layout
    ([5, 4, 7, 6], ComposedLayout(Swizzle(1, 0, 2), 4, Layout((4,), (1,))))
    """
    if layout_or_shape is None:
        if stride is not None:
            raise MalformedLayoutError("make_tensor: a stride needs a shape")
        if _is_ndarray(storage):
            t = _ndarray_tensor(storage)
            if offset:
                return Tensor(t.layout, t.engine, t.offset + offset)
            return t
        n = _engine_len(_as_engine(storage))
        if n is None or n == 0:
            raise MalformedLayoutError("make_tensor: a storage without a length needs a layout")
        return Tensor(Layout(n), storage, offset)
    if isinstance(layout_or_shape, (Layout, ComposedLayout)):
        if stride is not None:
            raise MalformedLayoutError("make_tensor: give a layout or a shape and stride, not both")
        L = layout_or_shape
    else:
        L = Layout(layout_or_shape, stride)
    return Tensor(L, storage, offset)


@concrete_only
def make_identity_tensor(shape: Any) -> Tensor:
    """The tensor whose element at ``c`` is the natural coordinate of ``c`` (an
    :class:`~layoutproof.arith.ArithTuple`): C++ ``make_identity_tensor``.

    >>> I = make_identity_tensor((4, (2, 3)))
    >>> I(13), I(1, 3), I(2, (1, 1)) == (2, (1, 1))
    (ArithTuple(1, (1, 1)), ArithTuple(1, (1, 1)), True)
    """
    L = make_identity_layout(shape)
    return Tensor._make(L, CoordinateEngine(), _zeros_like(L.shape))


def _zeros_like(s: Any) -> Any:
    if type(s) is tuple:
        from .arith import make_arith_tuple

        return make_arith_tuple(tuple(_zeros_like(e) for e in s))
    return 0


# ----------------------------------------------------------------------------- algebra
def _need_tensor(t: Any, op: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise MalformedLayoutError(f"{op} needs a Tensor, got {type(t).__name__} {show(t)}")
    return t


def _ops() -> Any:
    from . import ops

    return ops


def composition(x: Any, tiler: Any) -> Any:
    """``composition`` on a Tensor (its layout; same engine and offset) or a Layout."""
    f = _ops().composition
    return Tensor._make(f(x._layout, tiler), x._engine, x._offset) if isinstance(x, Tensor) else f(x, tiler)


def logical_divide(x: Any, tiler: Any) -> Any:
    """``logical_divide`` on a Tensor (its layout; same engine and offset) or a Layout."""
    f = _ops().logical_divide
    return Tensor._make(f(x._layout, tiler), x._engine, x._offset) if isinstance(x, Tensor) else f(x, tiler)


def zipped_divide(x: Any, tiler: Any) -> Any:
    """``zipped_divide`` on a Tensor (its layout; same engine and offset) or a Layout."""
    f = _ops().zipped_divide
    return Tensor._make(f(x._layout, tiler), x._engine, x._offset) if isinstance(x, Tensor) else f(x, tiler)


def tiled_divide(x: Any, tiler: Any) -> Any:
    """``tiled_divide`` on a Tensor (its layout; same engine and offset) or a Layout."""
    f = _ops().tiled_divide
    return Tensor._make(f(x._layout, tiler), x._engine, x._offset) if isinstance(x, Tensor) else f(x, tiler)


def flat_divide(x: Any, tiler: Any) -> Any:
    """``flat_divide`` on a Tensor (its layout; same engine and offset) or a Layout."""
    f = _ops().flat_divide
    return Tensor._make(f(x._layout, tiler), x._engine, x._offset) if isinstance(x, Tensor) else f(x, tiler)


# ----------------------------------------------------------------------------- partitioning
def _dice_lift(a: Any, b: Any) -> tuple:
    if type(a) is tuple or type(a) is list:
        return _dice_tuple(tuple(a), b)
    if _is_wild(a):
        return ()
    return (b,)


def _dice_tuple(a: tuple, b: Any) -> tuple:
    if type(b) is not tuple or len(a) != len(b):
        raise MalformedLayoutError(f"dice: the projection {show(a)} and {show(b)} differ in rank")
    out: tuple = ()
    for x, y in zip(a, b):
        out += _dice_lift(x, y)
    return out


def _dice(proj: Any, x: Any) -> Any:
    """Keep the modes of ``x`` where ``proj`` is not ``_`` (C++ ``dice``), for projections
    inside the partitioning functions: unlike the public :func:`layoutproof.analysis.dice`
    the leaves of ``x`` may be anything, wildcards included.

    >>> _dice((1, _, 1), (32, 64, 4)), _dice((1, _, 1), (0, 1, _))
    ((32, 4), (0, _))
    """
    if isinstance(x, Layout):
        s, d = x.shape, x.stride
        if type(proj) is tuple or type(proj) is list:
            return Layout.trusted(_dice_tuple(tuple(proj), s), _dice_tuple(tuple(proj), d))
        return x if not _is_wild(proj) else Layout.trusted((), ())
    if type(proj) is tuple or type(proj) is list:
        return _dice_tuple(tuple(proj), tuple(x) if type(x) is list else x)
    if _is_wild(proj):
        return ()
    return x


def _mode_ranks(L: Layout) -> Tuple[int, int]:
    return L[0].rank, L[1].rank


def inner_partition(tensor: Tensor, tiler: Any, coord: Any) -> Tensor:
    """``zipped_divide(tensor, tiler)`` with the tile modes kept and the rest modes sliced
    at ``coord`` (a tuple is padded with ``_`` to the rest rank; an integer indexes the
    rest modes 1-D).  C++ ``inner_partition``."""
    t = _need_tensor(tensor, "inner_partition")
    z = zipped_divide(t, tiler)
    r0, r1 = _mode_ranks(z._layout)
    c0 = (_,) * r0 if r0 > 1 else _
    if type(coord) is tuple or type(coord) is list:
        coord = tuple(coord)
        if len(coord) > r1:
            raise MalformedLayoutError(
                f"inner_partition: the coordinate {show(coord)} has more modes than the "
                f"{r1} rest modes of {z._layout}"
            )
        c1: Any = coord + (_,) * (r1 - len(coord))
    else:
        c1 = coord
    return z(c0, c1)


def outer_partition(tensor: Tensor, tiler: Any, coord: Any) -> Tensor:
    """``zipped_divide(tensor, tiler)`` with the tile modes sliced at ``coord`` and the rest
    modes kept: every ``size(tiler)``-th element.  C++ ``outer_partition``."""
    t = _need_tensor(tensor, "outer_partition")
    z = zipped_divide(t, tiler)
    r0, r1 = _mode_ranks(z._layout)
    if type(coord) is tuple or type(coord) is list:
        coord = tuple(coord)
        if len(coord) > r0:
            raise MalformedLayoutError(
                f"outer_partition: the coordinate {show(coord)} has more modes than the "
                f"{r0} tile modes of {z._layout}"
            )
        c0: Any = coord + (_,) * (r0 - len(coord))
    else:
        c0 = coord
    c1 = (_,) * r1 if r1 > 1 else _
    return z(c0, c1)


def local_tile(tensor: Tensor, tiler: Any, coord: Any, proj: Any = None) -> Tensor:
    """The tile of ``tensor`` at ``coord`` (C++ ``local_tile`` = :func:`inner_partition`):
    ``local_tile(mC, (BM, BN), (i, j))`` is ``mC[i*BM:(i+1)*BM, j*BN:(j+1)*BN]``.

    ``proj`` (C++ ``Step``) first keeps the modes of ``tiler`` and ``coord`` where it is
    not ``_``: ``local_tile(mA, (BM, BN, BK), (i, j, _), (1, _, 1))`` is A's
    ``(BM, BK, k)`` tiles of row block ``i``.

    >>> import numpy as np
    >>> mA = make_tensor(np.arange(64).reshape(8, 8))
    >>> gA = local_tile(mA, (4, 2, 4), (1, 3, _), proj=(1, _, 1))
    >>> gA.shape, int(gA(0, 0, 1)) == int(mA(4, 4))
    ((4, 4, 2), True)
    """
    if proj is not None:
        tiler = _dice(proj, tiler)
        coord = _dice(proj, coord)
    return inner_partition(tensor, tiler, coord)


def _flat_coord(thr: Layout, idx: int, op: str) -> Any:
    """C++ ``thr.get_flat_coord(idx)``: each leaf's coordinate is ``(idx // d) % s`` (0 for
    a stride-0 or size-1 leaf), folded to one 1-D index per top-level mode.  Raises when
    ``thr`` does not map that coordinate back to ``idx``."""
    s, d = thr.shape, thr.stride
    total = 0

    def leaf(sh: int, st: int) -> int:
        nonlocal total
        c = 0 if (sh == 1 or st == 0) else (idx // st) % sh
        total += c * st
        return c

    def mode(sh: Any, st: Any) -> int:
        if type(sh) is not tuple:
            return leaf(sh, st)
        out, p = 0, 1
        for a, b in zip(raw_flatten(sh), raw_flatten(st)):
            out += leaf(a, b) * p
            p *= a
        return out

    # a Layout's shape and stride are congruent: both tuples or both leaves
    coord = tuple(mode(a, b) for a, b in zip(s, d)) if type(s) is tuple and type(d) is tuple else mode(s, d)
    if total != idx:
        raise OutOfDomainError(
            f"{op}: thread index {idx} is not inverted by the thread layout {thr} (its "
            f"coordinate {coord} maps to {total}); the index must lie in the image of an "
            "injective thread layout"
        )
    return coord


def local_partition(tensor: Tensor, thr_layout: Any, thr_idx: Any, proj: Any = None) -> Tensor:
    """Thread ``thr_idx``'s elements of ``tensor`` when the threads are arranged by
    ``thr_layout`` (C++ ``local_partition`` = :func:`outer_partition` by the thread
    layout's shape at the thread's coordinate): every thread gets the elements congruent
    to its coordinate modulo the thread shape, and each element goes to exactly one
    thread.  ``proj`` (C++ ``Step``) keeps the thread modes where it is not ``_``.

    >>> data = make_identity_tensor((16, 64))
    >>> thr = local_partition(data, Layout((2, 16), (16, 1)), 17)
    >>> thr.shape, thr(0, 0), thr(1, 2)
    ((8, 4), ArithTuple(1, 1), ArithTuple(3, 33))
    """
    t = _need_tensor(tensor, "local_partition")
    thr = thr_layout if isinstance(thr_layout, Layout) else layout_arg(thr_layout, "local_partition")
    if any(isinstance(d, ArithTuple) for d in thr.flat_modes()[1]):
        raise MalformedLayoutError("local_partition: the thread layout needs integer strides")
    if not is_int(thr_idx):
        raise MalformedLayoutError(
            f"local_partition: the thread index must be an integer, got {show(thr_idx)}"
        )
    coord = _flat_coord(thr, int(thr_idx), "local_partition")
    if proj is not None:
        thr = _dice(proj, thr)
        coord = _dice(proj, coord)
    tiler = tuple(raw_product(e) for e in thr.shape) if type(thr.shape) is tuple else thr.shape
    return outer_partition(t, tiler, coord)


# ----------------------------------------------------------------------------- algorithms
def _flat_np(t: Tensor) -> Any:
    """(engine, absolute offsets) for a numpy 1-D engine with integer offsets, else None."""
    e = t._engine
    if not (_is_ndarray(e) and e.ndim == 1) or isinstance(t._offset, ArithTuple):
        return None
    offs = t._layout.eval_all()
    if offs.dtype == object:
        return None
    return e, offs + t._offset


def _offsets(t: Tensor) -> List[Any]:
    L = t._layout
    o = t._offset
    ev = L._eval_int if isinstance(L, Layout) else L
    return [o + ev(i) for i in range(L.size)]


def copy(src: Tensor, dst: Tensor) -> None:
    """``dst(i) = src(i)`` for every ``i < size(dst)``, in order: copy is a rank-1
    algorithm whatever the tensors' ranks and layouts (gather, scatter, broadcast,
    transpose are layouts).  The sizes must agree.

    >>> import numpy as np
    >>> src = make_tensor(np.arange(6.0), Layout((2, 3), (3, 1)))
    >>> dst = make_tensor(np.zeros(6), (2, 3))
    >>> copy(src, dst); dst.storage.tolist()                   # a transpose
    [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    """
    _need_tensor(src, "copy")
    _need_tensor(dst, "copy")
    if src.size != dst.size:
        raise InadmissibleError(
            f"copy: size(src) = {src.size} differs from size(dst) = {dst.size} "
            f"(src layout {src.layout}, dst layout {dst.layout})",
            condition="size(src) == size(dst)",
            witness=min(src.size, dst.size),
        )
    np = _np()
    fs, fd = _flat_np(src), _flat_np(dst)
    if fs is not None and fd is not None:
        (se, so), (de, do) = fs, fd
        if not np.may_share_memory(se, de) and np.unique(do).size == do.size:
            try:
                de[do] = se[so]
            except (TypeError, ValueError, OverflowError) as err:
                raise _value_error(err, de, f"{se.dtype} elements") from None
            return
    _copy_loop(src, dst, None)


def _copy_loop(src: Tensor, dst: Tensor, pred: Any) -> None:
    so, do = _offsets(src), _offsets(dst)
    se, de = src._engine, dst._engine
    for i, (a, b) in enumerate(zip(so, do)):
        if pred is None or pred(i):
            v = se[a]
            try:
                de[b] = v
            except (TypeError, ValueError, OverflowError) as err:
                raise _value_error(err, de, v) from None


def copy_if(pred: Any, src: Tensor, dst: Tensor) -> None:
    """:func:`copy` of the elements ``i`` for which ``pred(i)`` is true (``pred`` a
    callable or a tensor of booleans, indexed 1-D)."""
    _need_tensor(src, "copy_if")
    _need_tensor(dst, "copy_if")
    if src.size != dst.size:
        raise InadmissibleError(
            f"copy_if: size(src) = {src.size} differs from size(dst) = {dst.size}",
            condition="size(src) == size(dst)",
            witness=min(src.size, dst.size),
        )
    if not callable(pred):
        raise MalformedLayoutError("copy_if: the predicate must be callable (a function or a Tensor)")
    _copy_loop(src, dst, pred)


def fill(t: Tensor, value: Any) -> None:
    """Set every element of ``t`` to ``value``.  A value the storage cannot hold (a tuple
    for a numpy array of floats, anything for an immutable storage) raises
    :class:`~layoutproof.MalformedLayoutError`; a numpy storage is then left unchanged.

    >>> import numpy as np
    >>> t = make_tensor(np.zeros(4), (2, 2))
    >>> fill(t, 7); t.storage.tolist()
    [7.0, 7.0, 7.0, 7.0]
    >>> fill(t, ((2, 2), 3))
    Traceback (most recent call last):
      ...
    layoutproof.errors.MalformedLayoutError: the tensor's storage (float64[4]) rejected the value ...
    """
    _need_tensor(t, "fill")
    f = _flat_np(t)
    e = t._engine
    try:
        if f is not None:
            f[0][f[1]] = value
            return
        for o in _offsets(t):
            e[o] = value
    except (TypeError, ValueError, OverflowError) as err:
        raise _value_error(err, e, value) from None


def clear(t: Tensor) -> None:
    """Set every element of ``t`` to 0."""
    fill(t, 0)


def _dense(t: Tensor, sizes: Tuple[int, ...]) -> Any:
    f = _flat_np(t)
    return f[0][f[1]].reshape(sizes, order="F")


def gemm(A: Tensor, B: Tensor, C: Tensor) -> None:
    """``C(m,n) += sum_k A(m,k) * B(n,k)`` over ``(M,K) x (N,K) -> (M,N)`` tensors of any
    layouts (C++ reference ``gemm``, the loop of the talk: ``k`` outermost, then ``m``,
    then ``n``); ``(M) x (N) -> (M,N)`` is the outer product.  Modes may be hierarchical
    (GETT, CONV): each mode is indexed 1-D.  The mode sizes must agree.

    >>> import numpy as np
    >>> A = make_tensor(np.arange(6.0).reshape(2, 3))              # (M,K) = (2,3)
    >>> B = make_tensor(np.ones((4, 3)))                           # (N,K) = (4,3)
    >>> C = make_tensor(np.zeros((2, 4)))
    >>> gemm(A, B, C); C.to_numpy().tolist()
    [[3.0, 3.0, 3.0, 3.0], [12.0, 12.0, 12.0, 12.0]]
    """
    for t, n in ((A, "A"), (B, "B"), (C, "C")):
        _need_tensor(t, f"gemm operand {n}")
    ranks = (A.rank, B.rank, C.rank)
    if ranks not in ((2, 2, 2), (1, 1, 2)):
        raise InadmissibleError(
            f"gemm: operand ranks {ranks}; the reference gemm takes (M,K) x (N,K) -> (M,N) or "
            "(M) x (N) -> (M,N)",
            condition="operand ranks (M,K)x(N,K)->(M,N) or (M)x(N)->(M,N)",
        )

    def msize(t: Tensor, i: int) -> int:
        return raw_product(t.shape[i]) if type(t.shape) is tuple else t.size

    M, N = msize(C, 0), msize(C, 1)
    K = msize(A, 1) if ranks[0] == 2 else 1
    checks = [
        ("size<0>(A) == size<0>(C)", msize(A, 0), M, "M"),
        ("size<0>(B) == size<1>(C)", msize(B, 0), N, "N"),
    ]
    if ranks[0] == 2:
        checks.append(("size<1>(A) == size<1>(B)", K, msize(B, 1), "K"))
    for cond, a, b, what in checks:
        if a != b:
            raise InadmissibleError(
                f"gemm: {cond} fails ({what}: {a} vs {b}) for A {A.layout}, B {B.layout}, C {C.layout}",
                condition=cond,
            )
    np = _np()
    fa, fb, fc = _flat_np(A), _flat_np(B), _flat_np(C)
    if fa is not None and fb is not None and fc is not None:
        ce, co = fc
        if (
            np.unique(co).size == co.size
            and not np.may_share_memory(ce, fa[0])
            and not np.may_share_memory(ce, fb[0])
        ):
            a = _dense(A, (M, K))
            b = _dense(B, (N, K))
            cd = ce[co].reshape((M, N), order="F")
            np.add(cd, a @ b.T, out=cd, casting="unsafe")
            ce[co] = cd.reshape(-1, order="F")
            return
    _gemm_loop(A, B, C, M, N, K, ranks[0] == 2)


def _gemm_loop(A: Tensor, B: Tensor, C: Tensor, M: int, N: int, K: int, two: bool) -> None:
    ae, be, ce = A._engine, B._engine, C._engine
    ao, bo, co = _offsets(A), _offsets(B), _offsets(C)
    for k in range(K):
        for m in range(M):
            x = ae[ao[m + M * k]]
            for n in range(N):
                ce[co[m + M * n]] = ce[co[m + M * n]] + x * be[bo[n + N * k]]
