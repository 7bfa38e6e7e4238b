"""The demo tour printed by ``layoutproof demo``."""

from __future__ import annotations

from .errors import InadmissibleError
from .layout import Layout, _, slice_and_offset
from .ops import complement, composition, logical_divide, zipped_divide


def table(L: Layout) -> str:
    """A rank-2 layout as a grid of offsets (rows: mode 0, columns: mode 1)."""
    rows = L[0].size
    cols = L[1].size
    w = max(len(str(L(i, j))) for i in range(rows) for j in range(cols))
    return "\n".join(" ".join(str(L(i, j)).rjust(w) for j in range(cols)) for i in range(rows))


def run() -> None:
    A = Layout.parse("(8,(2,2)):(2,(1,16))")
    print("A =", A, " (the talk's hierarchical layout)")
    print(table(A))
    print(f"A(17) = {A(17)}, A(1,2) = {A(1, 2)}, A(1,(0,1)) = {A(1, (0, 1))}")
    sub, off = slice_and_offset((3, _), A)
    print(f"A(3,_) = offset {off} + {sub}: {[off + int(x) for x in sub.eval_all()]}")
    print()
    B = Layout.parse("(4,(2,2)):(2,(1,8))")
    T = Layout.parse("(2,4):(1,2)")
    print(f"composition({B}, {T}) = {composition(B, T)}")
    print(f"complement((2,4):(1,2), 16) = {complement(Layout((2, 4), (1, 2)), 16)}")
    M = Layout((8, 6))
    print(f"logical_divide(16:1, 4:2) = {logical_divide(Layout(16, 1), Layout(4, 2))}")
    print(f"zipped_divide({M}, (4,3)) = {zipped_divide(M, (4, 3))}")
    print()
    bad_a, bad_b = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    print(f"composition({bad_a}, {bad_b}):  (CuTe C++, pycute and PyCuTe return {bad_b})")
    try:
        composition(bad_a, bad_b)
    except InadmissibleError as e:
        print(f"  rejected: {e.condition}; witness coordinate {e.witness}")
        print(f"  {e}")
