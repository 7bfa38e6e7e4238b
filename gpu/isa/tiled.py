"""TiledMMA, ThrMMA and TiledCopy, built with the layout algebra (partition = compose + slice).

A :class:`TiledMMA` repeats an :class:`~layoutproof.gpu.isa.atoms.MMAAtom` over an *atom
layout* (e.g. ``(2,2)`` warps) and optionally a permutation / larger tile per mode
(CuTe's ``PermutationMNK``).  For operand C the thread-fragment layout of a tensor is made
exactly as in the talk:

1. ``logical_divide`` the tensor by the permutation tile (one tile = one TiledMMA step);
2. ``zipped_divide`` by the atom's ``(M, N)`` -> ``((AtomM,AtomN), (RestM,RestN))``;
3. compose the atom mode with the atom's C TV layout -> ``((ThrV,FrgV), (RestM,RestN))``;
4. ``zipped_divide`` the rest by the atom layout ``(AM, AN)`` and regroup
   -> ``((ThrV,(AM,AN)), (FrgV,(RestM',RestN')))``.

The thread mode is indexed by the *logical* thread ``v + V*(m + AM*n)``;
``right_inverse(thr_layout_vmnk)`` turns a hardware thread index into it (for SM70's
quadpairs the two differ).  A thread's partition is the value mode with the thread mode
fixed: composition followed by slicing.

>>> from layoutproof.gpu.isa.atoms import MMA_ATOMS
>>> tm = TiledMMA(MMA_ATOMS["SM80_16x8x16_F32F16F16F32_TN"], (2, 2))
>>> tm.tile_mnk, tm.size
((32, 16, 16), 128)
>>> tC = tm.get_slice(37).partition_C(Layout((128, 128)))
>>> tC.shape                                   # (FrgV, RestM, RestN)
((2, 2), 4, 8)
>>> [(o % 128, o // 128) for o in (tC(0, 0, 0), tC(1, 0, 0), tC(2, 0, 0))]
[(17, 2), (17, 3), (25, 2)]
>>> len(prove_tiled_mma(tm))
3
"""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np

from layoutproof import (
    Layout,
    Tensor,
    composition,
    logical_divide,
    logical_product,
    make_layout,
    raked_product,
    right_inverse,
    zipped_divide,
)
from layoutproof.errors import InadmissibleError, MalformedLayoutError, OutOfDomainError
from layoutproof.inttuple import raw_product
from layoutproof.tensor import CoordinateEngine

from ..errors import ProofFailedError
from ..proof.record import ProofLog
from .atoms import CopyAtom, MMAAtom

__all__ = ["TiledMMA", "ThrMMA", "TiledCopy", "ThrCopy", "prove_tiled_mma", "prove_tiled_copy"]

LayoutOrTensor = Union[Layout, Tensor]


def _modes(L: Layout) -> Tuple[Layout, ...]:
    return tuple(L[i] for i in range(L.rank)) if isinstance(L.shape, tuple) else (L,)


def _as_atom_layout(x: Any) -> Layout:
    L = x if isinstance(x, Layout) else Layout(tuple(x) if isinstance(x, (tuple, list)) else x)
    ms = list(_modes(L))
    if len(ms) > 3:
        raise MalformedLayoutError(f"atom layout {L} has rank {len(ms)}; at most 3 (M, N, K)")
    while len(ms) < 3:
        ms.append(Layout(1, 0))
    return make_layout(*ms)


def _apply(x: LayoutOrTensor, fn: Any) -> Tensor:
    """Apply a partition (layout -> (sub-layout, offset)) to a Tensor (same engine), or to a
    bare Layout: then the result is a Tensor over the offsets themselves
    (``t(c) == offset + sub(c)``, the index into the partitioned layout's codomain)."""
    if isinstance(x, Tensor):
        L, off = fn(x.layout)
        return Tensor(L, x.engine, x.offset + off)
    if not isinstance(x, Layout):
        raise MalformedLayoutError(f"partition: a Layout or Tensor, got {type(x).__name__}")
    L, off = fn(x)
    return Tensor(L, CoordinateEngine(), off)


class TiledMMA:
    """An MMA atom tiled over an atom layout (``(AM, AN[, AK])`` or a Layout) and a tile.

    ``permutation``: ``None`` (tile = atom shape x atom layout), or a triple whose entries
    are ``None``, an int (a larger tile, the atom layout repeated), or a Layout (CuTe's
    permutation: the order in which the tile's rows / cols are visited).
    """

    def __init__(
        self, atom: MMAAtom, atom_layout: Any = (1, 1, 1), permutation: Optional[Tuple[Any, Any, Any]] = None
    ) -> None:
        self.atom = atom
        self.atom_layout = _as_atom_layout(atom_layout)
        # (ThrV, ThrM, ThrN, ThrK) -> thread index: the atom's thr_id repeated over the atom
        # layout (a logical product: thr_id, then complement(thr_id) o atom_layout).
        P = logical_product(atom.thr_id, self.atom_layout)
        self.thr_layout_vmnk = make_layout(P[0], *_modes(P[1]))
        self.thr_shape_vmnk: Tuple[int, int, int, int] = tuple(  # type: ignore[assignment]
            m.size for m in _modes(self.thr_layout_vmnk)
        )
        perm = permutation if permutation is not None else (None, None, None)
        if len(perm) != 3:
            raise MalformedLayoutError(f"permutation must have 3 entries (M, N, K), got {perm}")
        self.perm: Tuple[Layout, Layout, Layout] = tuple(  # type: ignore[assignment]
            self._perm_mode(i, p) for i, p in enumerate(perm)
        )
        self.tile_mnk: Tuple[int, int, int] = tuple(p.size for p in self.perm)  # type: ignore
        # hardware thread index -> colex index of (v, m, n, k)
        self._thr_inv = right_inverse(self.thr_layout_vmnk)
        if self._thr_inv.size != self.size:
            raise InadmissibleError(
                f"TiledMMA: thread layout {self.thr_layout_vmnk} is not a bijection onto [0, {self.size})",
                condition="thread layout bijective",
                witness=None,
            )

    def _perm_mode(self, i: int, p: Any) -> Layout:
        base = self.atom.shape_mnk[i] * self.thr_shape_vmnk[i + 1]
        if p is None:
            return Layout(base, 1)
        L = p if isinstance(p, Layout) else Layout(int(p), 1)
        if L.size % base != 0:
            raise InadmissibleError(
                f"TiledMMA: the {'MNK'[i]} tile {L} (size {L.size}) is not a multiple of "
                f"atom {self.atom.shape_mnk[i]} x atom layout {self.thr_shape_vmnk[i + 1]}",
                condition="tile divisibility",
                witness=i,
            )
        return L

    # ------------------------------------------------------------------ sizes
    @property
    def size(self) -> int:
        """Threads in the TiledMMA."""
        return self.thr_layout_vmnk.size

    def __repr__(self) -> str:
        return (
            f"TiledMMA({self.atom.name}, atom_layout={self.atom_layout}, "
            f"tile={self.tile_mnk}, threads={self.size})"
        )

    # ------------------------------------------------------------------ thread fragments
    _SPEC = {
        "A": (0, 2, "a_layout", (0, 2)),
        "B": (1, 2, "b_layout", (1, 2)),
        "C": (0, 1, "c_layout", (0, 1)),
    }

    def thrfrg(self, operand: str, L: Layout) -> Layout:
        """``((ThrV,(ThrX,ThrY)), (FrgV,(RestX,RestY)))`` of a rank-2 layout ``L`` of operand
        ``operand`` (``(M,K)`` for A, ``(N,K)`` for B, ``(M,N)`` for C)."""
        i, j, attr, _ = self._SPEC[operand]
        atom_tv = getattr(self.atom, attr)
        t = logical_divide(L, (self.perm[i], self.perm[j]))
        z = zipped_divide(t, (Layout(self.atom.shape_mnk[i]), Layout(self.atom.shape_mnk[j])))
        tv = composition(z[0], atom_tv)  # (ThrV, FrgV) -> offset
        rest = zipped_divide(z[1], (Layout(self.thr_shape_vmnk[i + 1]), Layout(self.thr_shape_vmnk[j + 1])))
        thr = make_layout(tv[0], rest[0])
        val = make_layout(tv[1], *_modes(rest[1]))
        return make_layout(thr, val)

    def _thr_select(self, operand: str) -> Layout:
        """(v, m, n, k) colex index -> the logical index of the operand's thread mode
        (the mode that does not index the operand gets stride 0)."""
        V, AM, AN, AK = self.thr_shape_vmnk
        strides = {"A": (1, V, 0, V * AM), "B": (1, 0, V, V * AN), "C": (1, V, V * AM, 0)}
        return Layout((V, AM, AN, AK), strides[operand])

    def thread_map(self, operand: str) -> Layout:
        """Hardware thread index -> logical index in the operand's thread mode."""
        return composition(self._thr_select(operand), self._thr_inv)

    def get_layout_TV(self, operand: str) -> Layout:  # noqa: N802 - CuTe's name
        """``(thread, value)`` -> column-major index in the operand's TiledMMA tile."""
        op = operand.upper()
        i, j, _, _ = self._SPEC[op]
        ref = Layout((self.tile_mnk[i], self.tile_mnk[j]))
        F = self.thrfrg(op, ref)
        thr = composition(F[0], self.thread_map(op))
        return make_layout(thr, F[1])

    def get_layoutA_TV(self) -> Layout:  # noqa: N802 - CuTe's name
        """``(thread, value)`` -> ``m + TM*k`` in the ``(TM, TK)`` tile."""
        return self.get_layout_TV("A")

    def get_layoutB_TV(self) -> Layout:  # noqa: N802 - CuTe's name
        """``(thread, value)`` -> ``n + TN*k`` in the ``(TN, TK)`` tile."""
        return self.get_layout_TV("B")

    def get_layoutC_TV(self) -> Layout:  # noqa: N802 - CuTe's name
        """``(thread, value)`` -> ``m + TM*n`` in the ``(TM, TN)`` tile."""
        return self.get_layout_TV("C")

    def tile_shape(self, operand: str) -> Tuple[int, int]:
        i, j, _, _ = self._SPEC[operand.upper()]
        return self.tile_mnk[i], self.tile_mnk[j]

    def get_slice(self, thr_idx: int) -> "ThrMMA":
        """The thread ``thr_idx``'s view (CuTe's ``get_slice`` / ``get_thread_slice``)."""
        if not 0 <= thr_idx < self.size:
            raise OutOfDomainError(f"thread {thr_idx} outside [0, {self.size}) of {self}")
        return ThrMMA(self, thr_idx)

    get_thread_slice = get_slice


class ThrMMA:
    """One thread's slice of a :class:`TiledMMA`: ``partition_A/B/C`` give the values the
    thread holds, shaped ``(FrgV, RestX, RestY)``."""

    def __init__(self, tiled: TiledMMA, thr_idx: int) -> None:
        self.tiled = tiled
        self.thr_idx = thr_idx

    def _partition(self, operand: str, x: LayoutOrTensor) -> Tensor:
        t = self.tiled
        logical = t.thread_map(operand)(self.thr_idx)

        def fn(L: Layout) -> Tuple[Layout, int]:
            if L.rank != 2:
                raise MalformedLayoutError(f"partition_{operand}: a rank-2 layout, got {L}")
            F = t.thrfrg(operand, L)
            return F[1], F[0](logical)

        return _apply(x, fn)

    def partition_A(self, x: LayoutOrTensor) -> Tensor:  # noqa: N802 - CuTe's name
        """The thread's values of an ``(M, K)`` tensor or layout: ``(FrgV, RestM, RestK)``."""
        return self._partition("A", x)

    def partition_B(self, x: LayoutOrTensor) -> Tensor:  # noqa: N802 - CuTe's name
        """The thread's values of an ``(N, K)`` tensor or layout: ``(FrgV, RestN, RestK)``."""
        return self._partition("B", x)

    def partition_C(self, x: LayoutOrTensor) -> Tensor:  # noqa: N802 - CuTe's name
        """The thread's values of an ``(M, N)`` tensor or layout: ``(FrgV, RestM, RestN)``."""
        return self._partition("C", x)


def _coverage(L: Layout, n: int) -> np.ndarray:
    idx = L.eval_all()
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(np.nonzero((idx < 0) | (idx >= n))[0][0])
        raise ProofFailedError(
            f"{L}: point {bad} maps to {int(idx[bad])}, outside [0, {n})", condition="bounds", witness=bad
        )
    return np.bincount(idx, minlength=n)


def prove_tiled_mma(tiled: TiledMMA) -> ProofLog:
    """Prove (exhaustively, numpy) that the C TV layout covers the C tile, each element
    exactly ``ThrK`` times (once when the atom layout has no K split); that A and B TV
    layouts cover their tiles, every element held by exactly ``ThrN`` (A) / ``ThrM`` (B)
    threads -- the warps that share it.  Raises ProofFailedError with a witness element."""
    log = ProofLog()
    _V, AM, AN, AK = tiled.thr_shape_vmnk
    want = {"A": AN, "B": AM, "C": AK}
    names = {"A": "(m,k)", "B": "(n,k)", "C": "(m,n)"}
    for op in ("C", "A", "B"):
        L = tiled.get_layout_TV(op)
        tile = tiled.tile_shape(op)
        n = tile[0] * tile[1]
        if L[0].size != tiled.size:
            raise ProofFailedError(
                f"{op} TV layout {L} has {L[0].size} threads, not {tiled.size}",
                condition="thread count",
                witness=None,
            )
        cnt = _coverage(L, n)
        bad = np.nonzero(cnt != want[op])[0]
        if bad.size:
            e = int(bad[0])
            raise ProofFailedError(
                f"{tiled}: {op} element {names[op]} = {(e % tile[0], e // tile[0])} is held by "
                f"{int(cnt[e])} (thread, value) pairs, expected {want[op]}",
                condition=f"{op} coverage",
                witness=(e % tile[0], e // tile[0]),
            )
        what = "exactly once (bijective)" if want[op] == 1 else f"exactly {want[op]} times"
        log.add(
            "bijective" if want[op] == 1 else "fragment",
            f"{tiled.atom.name} x {tiled.atom_layout}: {op} TV {L} covers {tile} {what}",
            "exhaustive",
            L.size,
        )
    return log


# ----------------------------------------------------------------------------- TiledCopy
class TiledCopy:
    """A copy atom repeated over threads: CuTe's ``make_tiled_copy(atom, thr_layout,
    val_layout)``.  ``thr_layout`` maps ``(m, n)`` thread coordinates to thread indices,
    ``val_layout`` each thread's values; the tile is ``thr x val`` (raked product) and the
    TV layout ``(thread, value) -> m + TM*n`` its right inverse.

    >>> from layoutproof.gpu.isa.atoms import COPY_ATOMS
    >>> tc = TiledCopy(COPY_ATOMS["SM80_CP_ASYNC_CACHEALWAYS_16B"],
    ...                Layout((16, 8), (8, 1)), Layout((1, 8)), elem_bits=16)
    >>> tc.tile_shape, str(tc.layout_tv)
    ((16, 64), '((8,16),8):((128,1),16)')
    >>> tc.get_slice(1).partition_S(Layout((16, 64), (64, 1))).shape   # 8 halves, 1 x 1 tiles
    (8, 1, 1)
    """

    def __init__(
        self, atom: CopyAtom, thr_layout: Layout, val_layout: Layout, elem_bits: Optional[int] = None
    ) -> None:
        self.atom = atom
        self.thr_layout = thr_layout
        self.val_layout = val_layout
        self.elem_bits = elem_bits or atom.elem_bits
        vbits = val_layout.size * self.elem_bits
        abits = 8 * atom.bytes_per_thread
        if atom.num_threads == 1 and vbits % abits != 0:
            raise InadmissibleError(
                f"TiledCopy: {val_layout.size} values of {self.elem_bits} bits per thread is not "
                f"a multiple of the atom's {abits} bits",
                condition="value divisibility",
                witness=val_layout.size,
            )
        mn = raked_product(thr_layout, val_layout)
        self.layout_mn = mn
        self.tile_shape: Tuple[int, ...] = tuple(m.size for m in _modes(mn))
        inv = right_inverse(mn)
        T, V = thr_layout.size, val_layout.size
        if inv.size != T * V:
            raise InadmissibleError(
                f"TiledCopy: raked_product(thr, val) = {mn} is not a bijection onto [0, {T * V})",
                condition="thr x val bijective",
                witness=None,
            )
        self.layout_tv = composition(inv, Layout((T, V)))

    @property
    def size(self) -> int:
        return self.thr_layout.size

    def tidfrg(self, L: Layout) -> Layout:
        """``((Thr, Val), (RestM, RestN, ...))`` of a layout tiled by the copy tile."""
        z = zipped_divide(L, tuple(Layout(s) for s in self.tile_shape))
        return make_layout(composition(z[0], self.layout_tv), z[1])

    def get_slice(self, thr_idx: int) -> "ThrCopy":
        if not 0 <= thr_idx < self.size:
            raise OutOfDomainError(f"thread {thr_idx} outside [0, {self.size})")
        return ThrCopy(self, thr_idx)

    get_thread_slice = get_slice

    def __repr__(self) -> str:
        return (
            f"TiledCopy({self.atom.name}, thr={self.thr_layout}, val={self.val_layout}, "
            f"tile={self.tile_shape})"
        )


class ThrCopy:
    """One thread's slice of a :class:`TiledCopy`: ``(Val, RestM, RestN)``."""

    def __init__(self, tiled: TiledCopy, thr_idx: int) -> None:
        self.tiled = tiled
        self.thr_idx = thr_idx

    def _partition(self, x: LayoutOrTensor) -> Tensor:
        def fn(L: Layout) -> Tuple[Layout, int]:
            F = self.tiled.tidfrg(L)
            tv = F[0]
            return make_layout(tv[1], *_modes(F[1])), tv[0](self.thr_idx)

        return _apply(x, fn)

    def partition_S(self, x: LayoutOrTensor) -> Tensor:  # noqa: N802 - CuTe's name
        """The thread's source values."""
        return self._partition(x)

    def partition_D(self, x: LayoutOrTensor) -> Tensor:  # noqa: N802 - CuTe's name
        """The thread's destination values."""
        return self._partition(x)


def prove_tiled_copy(tc: TiledCopy, src: Optional[Layout] = None) -> ProofLog:
    """Prove the TV layout a bijection onto the tile and, given the source layout of one
    tile (``src``, element offsets), that each thread's values split into runs of the
    atom's width that are contiguous and aligned in memory (vectorizable)."""
    log = ProofLog()
    n = raw_product(tc.tile_shape)
    cnt = _coverage(tc.layout_tv, n)
    bad = np.nonzero(cnt != 1)[0]
    if bad.size:
        raise ProofFailedError(
            f"{tc}: tile element {int(bad[0])} covered {int(cnt[bad[0]])} times",
            condition="copy TV bijective",
            witness=int(bad[0]),
        )
    log.add("bijective", f"{tc.atom.name}: TV {tc.layout_tv} bijective onto {tc.tile_shape}", "exhaustive", n)
    if src is None:
        return log
    per = max(1, 8 * tc.atom.bytes_per_thread // tc.elem_bits) if tc.atom.num_threads == 1 else 1
    T, V = tc.size, tc.val_layout.size
    tile_idx = tc.layout_tv.eval_all().reshape((T, V), order="F")
    offs = src.eval_all()[tile_idx]  # (T, V) memory offsets
    runs = offs.reshape(T, V // per, per)
    ok = (np.diff(runs, axis=2) == 1).all(axis=2) & (runs[:, :, 0] % per == 0)
    if not ok.all():
        t, r = (int(a[0]) for a in np.nonzero(~ok))
        raise ProofFailedError(
            f"{tc}: thread {t}'s values {r * per}..{r * per + per - 1} sit at offsets "
            f"{runs[t, r].tolist()}, not one aligned run of {per}",
            condition="vectorizable",
            witness=(t, r * per),
        )
    log.add(
        "bounds",
        f"{tc.atom.name}: every thread's values are aligned runs of {per} elements in {src}",
        "exhaustive",
        T * V,
    )
    return log
