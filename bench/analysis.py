"""Analysis operations (layoutproof.analysis): microseconds per call, and the ratio
ours/pycute where legacy pycute (nvidia-cutlass==4.2.0.0) can compute the same thing.

Legacy pycute has none of these operations.  For max_common_vector and max_common_layout
it is timed on C++'s formula built from its own primitives
(``coalesce(composition(a, right_inverse(b)))``, then ``composition(right_inverse(b),
N:1)``), after checking that both give the same answer; target ratio <= 0.5.  The other
operations are reported in microseconds only.

    python bench/analysis.py [--repeat 15] [--markdown]
"""

from __future__ import annotations

import argparse
import platform
import sys
from typing import Any, Callable, List, Optional, Tuple

from _timing import interleaved_min

import layoutproof as lp
from layoutproof import _
from layoutproof import analysis as an

try:
    import pycute as pc
except ImportError:  # pragma: no cover
    sys.exit("legacy pycute is needed: pip install --no-deps nvidia-cutlass==4.2.0.0")


def _pc_common(a: Any, b: Any) -> Tuple[int, Any]:
    inv = pc.right_inverse(b)
    common = pc.coalesce(pc.composition(a, inv))
    s0 = common.shape if isinstance(common.shape, int) else common.shape[0]
    d0 = common.stride if isinstance(common.stride, int) else common.stride[0]
    return (s0, inv) if d0 == 1 else (1, inv)


def pc_max_common_vector(a: Any, b: Any) -> int:
    return _pc_common(a, b)[0]


def pc_max_common_layout(a: Any, b: Any) -> Any:
    n, inv = _pc_common(a, b)
    if n == 1:
        return pc.Layout(1, 0)
    return pc.composition(inv, pc.Layout(n, 1))


Case = Tuple[str, Callable[[], Any], Optional[Callable[[], Any]]]


def cases() -> List[Case]:
    L, P = lp.Layout, pc.Layout
    # copy of a 2-D tile: source column-major, destination column-major / row-major
    col, pcol = L((32, 16), (1, 32)), P((32, 16), (1, 32))
    row, prow = L((32, 16), (16, 1)), P((32, 16), (16, 1))
    # register fragment vs a swizzle-free smem tile: ((2,2),(4,2)) values
    frag, pfrag = L(((2, 2), (4, 2)), ((1, 8), (2, 16))), P(((2, 2), (4, 2)), ((1, 8), (2, 16)))
    flat32, pflat32 = L(32, 1), P(32, 1)
    nested, pnested = L((8, (4, 4)), (1, (8, 32))), P((8, (4, 4)), (1, (8, 32)))
    bcast = L((8, (4, 4), 2), (1, (0, 8), 0))
    tile16 = L((64, (4, 8)), (1, (64, 256)))
    a_add, b_add = L((5, 3, 4), (1, 5, 15)), L((10, 6), (1, 10))
    c_add, d_add = L((2, (3, 4)), (12, (4, 1))), L((6, 4), (4, 1))
    return [
        (
            "max_common_vector (col, col)",
            lambda: an.max_common_vector(col, col),
            lambda: pc_max_common_vector(pcol, pcol),
        ),
        (
            "max_common_vector (row, col)",
            lambda: an.max_common_vector(row, col),
            lambda: pc_max_common_vector(prow, pcol),
        ),
        (
            "max_common_vector (fragment, 32:1)",
            lambda: an.max_common_vector(frag, flat32),
            lambda: pc_max_common_vector(pfrag, pflat32),
        ),
        (
            "max_common_vector (nested, 128:1)",
            lambda: an.max_common_vector(nested, L(128, 1)),
            lambda: pc_max_common_vector(pnested, P(128, 1)),
        ),
        (
            "max_common_layout (col, col)",
            lambda: an.max_common_layout(col, col),
            lambda: pc_max_common_layout(pcol, pcol),
        ),
        (
            "max_common_layout (fragment, 32:1)",
            lambda: an.max_common_layout(frag, flat32),
            lambda: pc_max_common_layout(pfrag, pflat32),
        ),
        ("nullspace (broadcast modes)", lambda: an.nullspace(bcast), None),
        ("upcast<2> 16-bit tile", lambda: an.upcast(tile16, 2), None),
        ("downcast<2>", lambda: an.downcast(tile16, 2), None),
        ("recast_layout 16 -> 128 bits", lambda: an.recast_layout(tile16, 16, 128), None),
        ("recast_layout 16 -> 24 bits", lambda: an.recast_layout(L((6, 2), (1, 6)), 16, 24), None),
        ("layout_add (different shapes)", lambda: an.layout_add(a_add, b_add), None),
        ("layout_add (nested)", lambda: an.layout_add(c_add, d_add), None),
        ("greatest_common_domain", lambda: an.greatest_common_domain((6, 35), (15, 14)), None),
        ("common_refinement", lambda: an.common_refinement(((2, 3), 20), (6, (4, 5))), None),
        ("common_coarsening", lambda: an.common_coarsening((4, (3, 5)), ((2, 2), 15)), None),
        ("dice", lambda: an.dice((1, _, 1), L((32, 16, 8))), None),
        ("domain_offset", lambda: an.domain_offset((3, (1, 2)), nested), None),
        ("coprofile", lambda: an.coprofile(nested), None),
    ]


def check_agreement() -> None:
    for name, ours, theirs in cases():
        if theirs is None:
            continue
        a, b = ours(), theirs()
        if isinstance(a, lp.Layout):
            if [int(x) for x in a.eval_all()] != [b(i) for i in range(a.size)] or a.size != pc.size(b):
                raise SystemExit(f"benchmark case {name!r} disagrees: {a} vs {b}")
        elif a != b:
            raise SystemExit(f"benchmark case {name!r} disagrees: {a} vs {b}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    check_agreement()
    rows = []
    for name, ours, theirs in cases():
        if theirs is None:
            rows.append((name, interleaved_min([ours], args.repeat)[0], None))
        else:
            a, b = interleaved_min([ours, theirs], args.repeat)
            rows.append((name, a, b))
    print(
        f"# {platform.node()} | {platform.processor() or platform.machine()} | Python "
        f"{platform.python_version()} | layoutproof {lp.__version__} vs pycute (nvidia-cutlass 4.2.0.0; "
        "C++'s formula from its primitives)"
    )
    if args.markdown:
        print("| operation | layoutproof µs | pycute µs | ratio |")
        print("|---|---:|---:|---:|")
        for name, a, b in rows:
            print(
                f"| {name} | {a:.2f} | {'—' if b is None else f'{b:.2f}'} | "
                f"{'—' if b is None else f'{a / b:.2f}'} |"
            )
    else:
        print(f"{'operation':38s} {'ours µs':>9s} {'pycute µs':>10s} {'ratio':>6s}")
        for name, a, b in rows:
            print(
                f"{name:38s} {a:9.2f} {'—' if b is None else f'{b:.2f}':>10s} "
                f"{'—' if b is None else f'{a / b:.2f}':>6s}"
            )
    ratios = [a / b for _n, a, b in rows if b is not None]
    print(f"worst ratio over the compared operations: {max(ratios):.2f} (target <= 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
