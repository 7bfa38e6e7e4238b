"""Swizzles and composed layouts: layoutproof vs legacy pycute (nvidia-cutlass==4.2.0.0),
same process, same inputs.

Prints per-case microseconds for both and the ratio ours/pycute (target <= 0.5, never
above 1).  Cases pycute lacks (tile_to_shape, divides and slices of composed layouts, F2
conversions, vectorized evaluation) report ours only.  Batches of the two libraries
alternate and the minimum per library is taken (bench/_timing.py), which keeps the ratio
stable on a loaded machine.

    python bench/swizzle.py [--repeat 9] [--markdown]
"""

from __future__ import annotations

import argparse
import functools
import platform
import sys
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
from _timing import interleaved_min

import layoutproof as lp
from layoutproof.swizzle import ComposedLayout, Swizzle, from_f2, to_f2

try:
    import pycute as pc
except ImportError:  # pragma: no cover
    sys.exit("legacy pycute is needed: pip install --no-deps nvidia-cutlass==4.2.0.0")


Case = Tuple[str, Callable[[], Any], Optional[Callable[[], Any]], str]


def cases() -> List[Case]:
    """(name, ours, pycute or None, note)."""
    ours_sw, their_sw = Swizzle(3, 3, 3), pc.Swizzle(3, 3, 3)
    x8k = np.arange(8192, dtype=np.int64)
    x1m = np.arange(1 << 20, dtype=np.int64)
    atom_b = lp.Layout((8, 64), (64, 1))
    atom = lp.composition(ours_sw, atom_b)
    tile = lp.tile_to_shape(atom, (128, 64))
    tile_b = tile.layout_b
    their_tile = pc.ComposedLayout(their_sw, 0, pc.Layout(tile_b.shape, tile_b.stride))
    ours_c = ComposedLayout(ours_sw, 0, tile_b)
    f2 = to_f2(tile)
    seed_b = lp.Layout(((2, 4, 2), (8, 2)), ((8, 64, 32), (1, 16)))
    p = functools.partial
    return [
        ("Swizzle(3,3,3)(12345)", p(ours_sw, 12345), p(their_sw, 12345), "scalar"),
        ("Swizzle(3,3,3)(np.arange(8192))", p(ours_sw, x8k), p(their_sw, x8k), "int64 array"),
        ("Swizzle(3,3,3)(np.arange(2**20))", p(ours_sw, x1m), p(their_sw, x1m), "int64 array"),
        ("composed (128,64) tile: C(300)", p(ours_c, 300), p(their_tile, 300), "1-D coordinate"),
        ("composed (128,64) tile: C(37, 21)", p(ours_c, 37, 21), p(their_tile, 37, 21), "2-D coordinate"),
        (
            "composed (128,64) tile: all 8192 values",
            ours_c.eval_all,
            lambda: [their_tile(i) for i in range(8192)],
            "pycute: Python loop (no eval_all)",
        ),
        ("composition(Sw<3,3,3>, (8,64):(64,1))", p(lp.composition, ours_sw, atom_b), None, ""),
        ("tile_to_shape(atom, (128,64))", p(lp.tile_to_shape, atom, (128, 64)), None, "pycute: absent"),
        (
            "tile_to_shape(seed atom, (128,64))",
            p(lp.tile_to_shape, lp.composition(ours_sw, seed_b), (128, 64)),
            None,
            "pycute: absent",
        ),
        ("zipped_divide(tile, (16,16))", p(lp.zipped_divide, tile, (16, 16)), None, "pycute: absent"),
        ("slice tile(5, _)", p(tile, 5, lp._), None, "pycute: absent"),
        (
            "cosize(tile) (fresh object)",
            lambda: ComposedLayout(ours_sw, 0, tile_b).cosize,
            None,
            "exact; pycute's is cosize(swizzle)",
        ),
        ("to_f2(tile)", p(to_f2, tile), None, "pycute: absent"),
        ("from_f2(to_f2(tile))", p(from_f2, f2), None, "pycute: absent"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--target-ms", type=float, default=20.0, help="time per batch")
    args = ap.parse_args()

    cs = cases()
    for name, ours, theirs, _note in cs:  # same answers before timing anything
        if theirs is not None:
            a, b = ours(), theirs()
            same = np.array_equal(np.asarray(a), np.asarray(b))
            if not same:
                sys.exit(f"{name}: layoutproof {a!r} != pycute {b!r}")
    rows = []
    for name, ours, theirs, note in cs:
        fns = [ours] if theirs is None else [ours, theirs]
        t = interleaved_min(fns, args.repeat, args.target_ms / 1000)
        mt = t[1] if theirs is not None else None
        rows.append((name, t[0], mt, (t[0] / mt) if mt else None, note))

    print(
        f"# layoutproof {lp.__version__} vs legacy pycute, Python {platform.python_version()}, "
        f"numpy {np.__version__}, {platform.machine()}"
    )
    if args.markdown:
        print("| case | ours (µs) | pycute (µs) | ours/pycute | note |")
        print("|---|---:|---:|---:|---|")
        for name, mo, mt, r, note in rows:
            ms = f"{mt:.2f}" if mt is not None else "—"
            rs = f"{r:.2f}" if r is not None else "—"
            print(f"| {name} | {mo:.2f} | {ms} | {rs} | {note} |")
    else:
        print(f"{'case':44s} {'ours µs':>10s} {'pycute µs':>11s} {'ratio':>7s}  note")
        for name, mo, mt, r, note in rows:
            ms = f"{mt:11.2f}" if mt is not None else f"{'—':>11s}"
            rs = f"{r:7.2f}" if r is not None else f"{'—':>7s}"
            print(f"{name:44s} {mo:10.2f} {ms} {rs}  {note}")
    worst = max((r for *_x, r, _n in rows if r is not None), default=None)
    if worst is not None:
        print(f"worst ratio: {worst:.2f} (target <= 0.5; never above 1)")


if __name__ == "__main__":
    main()
