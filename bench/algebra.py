"""layoutproof vs legacy pycute (nvidia-cutlass==4.2.0.0), same suite, same process.

Prints per-operation microseconds for both and the ratio ours/pycute (target: <= 0.5).
Batches of the two libraries alternate and the minimum per library is reported, so
background load disturbs both alike.  Construction is reported only: ours validates its
input, pycute does not.

    python bench/algebra.py [--repeat 25] [--markdown]
"""

from __future__ import annotations

import argparse
import platform
import sys
from typing import Any, Callable, List, Optional, Tuple

from _timing import interleaved_min

import layoutproof as lp

try:
    import pycute as pc
except ImportError:  # pragma: no cover
    sys.exit("legacy pycute is needed: pip install --no-deps nvidia-cutlass==4.2.0.0")


def cases() -> List[Tuple[str, Callable[[], Any], Optional[Callable[[], Any]], bool]]:
    """(name, ours, pycute, counted-in-target)."""
    L, P = lp.Layout, pc.Layout
    # Operands built once: the suite times the operations, not the operands' construction.
    a_flat, p_flat = L((4, 6, 8), (1, 4, 24)), P((4, 6, 8), (1, 4, 24))
    b_flat, q_flat = L((2, 3), (2, 8)), P((2, 3), (2, 8))
    a_nest, p_nest = L((4, (2, 2)), (2, (1, 8))), P((4, (2, 2)), (2, (1, 8)))
    b_nest, q_nest = L((2, 4), (1, 2)), P((2, 4), (1, 2))
    a_big, p_big = L(((8, 8), (4, 16)), ((1, 8), (64, 256))), P(((8, 8), (4, 16)), ((1, 8), (64, 256)))
    t_big, u_big = L((4, 8), (1, 8)), P((4, 8), (1, 8))
    c_in, d_in = L((2, 4), (1, 8)), P((2, 4), (1, 8))
    r_in, s_in = L((4, (2, 4)), (8, (1, 32))), P((4, (2, 4)), (8, (1, 32)))
    m_mat, n_mat = L((128, 64), (64, 1)), P((128, 64), (64, 1))
    tile_l, tile_p = L((16, 8)), P((16, 8))
    e_ev, f_ev = L((4, (2, 2)), (2, (1, 8))), P((4, (2, 2)), (2, (1, 8)))
    prod_a, prod_p = L((2, 2), (4, 1)), P((2, 2), (4, 1))
    prod_b, prod_q = L(6, 1), P(6, 1)
    sw, sw_p = lp.Swizzle(3, 3, 3), pc.Swizzle(3, 3, 3)
    sw_atom = lp.composition(sw, L((8, 64), (64, 1)))
    sw_tile = lp.tile_to_shape(sw_atom, (128, 64))
    # pycute has no tile_to_shape: its composed layout is built over our tiled inner layout
    sw_tile_p = pc.ComposedLayout(sw_p, 0, P((128, 64), (64, 1)))
    return [
        (
            "composition (flat)",
            lambda: lp.composition(a_flat, b_flat),
            lambda: pc.composition(p_flat, q_flat),
            True,
        ),
        (
            "composition (nested)",
            lambda: lp.composition(a_nest, b_nest),
            lambda: pc.composition(p_nest, q_nest),
            True,
        ),
        (
            "composition (rank-4 A, 2-D tile)",
            lambda: lp.composition(a_big, t_big),
            lambda: pc.composition(p_big, u_big),
            True,
        ),
        ("complement", lambda: lp.complement(c_in, 64), lambda: pc.complement(d_in, 64), True),
        (
            "logical_divide",
            lambda: lp.logical_divide(m_mat, tile_l),
            lambda: pc.logical_divide(n_mat, tile_p),
            True,
        ),
        (
            "zipped_divide (tuple tiler)",
            lambda: lp.zipped_divide(m_mat, (L(16), L(8))),
            lambda: pc.zipped_divide(n_mat, (P(16), P(8))),
            True,
        ),
        ("right_inverse", lambda: lp.right_inverse(r_in), lambda: pc.right_inverse(s_in), True),
        ("left_inverse", lambda: lp.left_inverse(c_in), lambda: pc.left_inverse(d_in), True),
        ("coalesce", lambda: lp.coalesce(a_big), lambda: pc.coalesce(p_big), True),
        (
            "logical_product",
            lambda: lp.logical_product(prod_a, prod_b),
            lambda: pc.logical_product(prod_p, prod_q),
            True,
        ),
        ("evaluate A(13)", lambda: e_ev(13), lambda: f_ev(13), True),
        ("evaluate A(3,(1,1))", lambda: e_ev(3, (1, 1)), lambda: f_ev(3, (1, 1)), True),
        (
            "construct Layout((4,(2,2)),(2,(1,8)))",
            lambda: L((4, (2, 2)), (2, (1, 8))),
            lambda: P((4, (2, 2)), (2, (1, 8))),
            False,
        ),
        # swizzles: a swizzled shared-memory tile evaluated, the raw swizzle
        ("swizzled tile C(37,21)", lambda: sw_tile(37, 21), lambda: sw_tile_p(37, 21), True),
        ("swizzled tile C(300)", lambda: sw_tile(300), lambda: sw_tile_p(300), True),
        ("Swizzle(3,3,3)(12345)", lambda: sw(12345), lambda: sw_p(12345), False),
        (
            "tile_to_shape(Sw<3,3,3> o (8,64):(64,1), (128,64))",
            lambda: lp.tile_to_shape(sw_atom, (128, 64)),
            None,
            False,
        ),
        (
            "max_common_vector((128,64):(64,1), 8192:1)",
            lambda: lp.max_common_vector(m_mat, L(8192)),
            lambda: _pc_max_common_vector(n_mat, P(8192)),
            True,
        ),
    ]


def _pc_max_common_vector(a: Any, b: Any) -> int:
    """C++'s max_common_vector written with pycute's primitives (pycute lacks it)."""
    common = pc.coalesce(pc.composition(a, pc.right_inverse(b)))
    s0 = common.shape[0] if isinstance(common.shape, tuple) else common.shape
    d0 = common.stride[0] if isinstance(common.stride, tuple) else common.stride
    return s0 if d0 == 1 else 1


def check_agreement() -> None:
    """The benchmarked results must be the same functions in both libraries."""
    for name, ours, theirs, _counted in cases():
        if theirs is None:
            continue
        a, b = ours(), theirs()
        if name == "left_inverse":
            # left inverses agree on the image of the layout; the gaps are free
            src = lp.Layout((2, 4), (1, 8))
            if any(a(src(i)) != b(src(i)) for i in range(src.size)):
                raise SystemExit(f"benchmark case {name!r} disagrees: {a} vs {b}")
            continue
        if isinstance(a, (lp.Layout, lp.ComposedLayout)):
            pa = [b(i) for i in range(a.size)]
            if list(a.eval_all()) != pa:
                raise SystemExit(f"benchmark case {name!r} disagrees: {a} vs {b}")
        elif a != b:
            raise SystemExit(f"benchmark case {name!r} disagrees: {a} vs {b}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=25)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    check_agreement()
    rows = []
    for name, ours, theirs, counted in cases():
        if theirs is None:  # the peer lacks the operation: µs only
            (t_ours,) = interleaved_min([ours], args.repeat)
            rows.append((name, t_ours, None, None, False))
            continue
        t_ours, t_theirs = interleaved_min([ours, theirs], args.repeat)
        rows.append((name, t_ours, t_theirs, t_ours / t_theirs, counted))
    print(
        f"# {platform.node()} | {platform.processor() or platform.machine()} | Python {platform.python_version()} "
        f"| layoutproof {lp.__version__} vs pycute (nvidia-cutlass 4.2.0.0)"
    )
    if args.markdown:
        print("| operation | layoutproof µs | pycute µs | ratio |")
        print("|---|---:|---:|---:|")
        for name, a, b, r, counted in rows:
            if b is None:
                print(f"| {name} (pycute lacks it) | {a:.2f} | — | — |")
            else:
                print(f"| {name}{'' if counted else ' (reported only)'} | {a:.2f} | {b:.2f} | {r:.2f} |")
    else:
        print(f"{'operation':54s} {'ours µs':>9s} {'pycute µs':>10s} {'ratio':>6s}")
        for name, a, b, r, counted in rows:
            if b is None:
                print(f"{name:54s} {a:9.2f} {'—':>10s} {'—':>6s}  (pycute lacks it)")
            else:
                print(f"{name:54s} {a:9.2f} {b:10.2f} {r:6.2f}{'' if counted else '  (reported only)'}")
    worst = max(r for *_x, r, c in rows if c)
    print(f"worst ratio over the counted operations: {worst:.2f} (target <= 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
