"""Swizzle synthesis (layoutproof.gpu.analysis.swizzle) on the worked examples of
docs/analysis-swizzle.md: microseconds per synthesis, candidates examined, the answer; and
the same search done the plain way -- banks() on every composed candidate layout in family
order until all accesses are proved (or the family is exhausted) -- with the speed-up of the
cached, vectorized search over it.  Both must give the same answer (checked here).  The
synthesis also computes what the plain search does not (each access on the unswizzled tile,
the certificates on the answer, the storage proof, the canonical-layout check, and for a
refutation the best candidate): with a handful of candidates (the TMA family) that fixed cost
dominates and the plain loop is faster.

    python bench/analysis_swizzle.py [--repeat 5] [--markdown]
"""

from __future__ import annotations

import argparse
import platform
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from _timing import interleaved_min

from layoutproof import ComposedLayout, Layout, Swizzle
from layoutproof.gpu.analysis import AccessError, banks
from layoutproof.gpu.analysis.swizzle import swizzle_family, synthesize_swizzle
from layoutproof.gpu.isa.atoms import COPY_ATOMS
from layoutproof.gpu.isa.tiled import TiledCopy

#: (name, tile, accesses, element bits, keyword options)
Case = Tuple[str, Layout, List[Any], int, Dict[str, Any]]


def cases() -> List[Case]:
    col = Layout((32, 32), (32, 1))
    atom = Layout((8, 64), (64, 1))
    writer = Layout(((8, 4), 8, 2), ((64, 1), 8, 4))
    reader = Layout(((8, 4), 8, 2), ((1, 64), 8, 256))
    stage = Layout((64, 64), (64, 1))
    a_reader = Layout(((16, 2), 8, (4, 4)), ((1, 512), 64, (16, 1024)))
    rows = Layout(((8, 4), 8, (1, 16)), ((512, 1), 64, (4096, 4)))
    gmem = TiledCopy(
        COPY_ATOMS["SM80_CP_ASYNC_CACHEALWAYS_16B"], Layout((16, 8), (8, 1)), Layout((1, 8)), elem_bits=16
    )
    small = Layout((32, 4), (4, 1))
    row_v4 = Layout((32, 4), (1, 32))
    return [
        ("32x32 f32 column read", col, [(Layout(32, 1), "ld.shared.b32")], 32, {}),
        ("32x32 f32 every column", col, [(Layout((32, 32), (1, 32)), "ld.shared.b32")], 32, {}),
        (
            "SM80 (8,64) cp.async + ldmatrix.x4",
            atom,
            [(writer, "cp.async.16"), (reader, "ldmatrix.x4")],
            16,
            {},
        ),
        ("SM80 64x64 TiledCopy + ldmatrix.x4", stage, [gmem, (a_reader, "ldmatrix.x4")], 16, {}),
        ("64x64 rows + ldmatrix.x4", stage, [(rows, "cp.async.16"), (a_reader, "ldmatrix.x4")], 16, {}),
        ("(8,64) ldmatrix.x4, TMA", atom, [(reader, "ldmatrix.x4")], 16, {"tma": True}),
        ("32x32 column, TMA (none exists)", col, [(Layout(32, 1), "ld.shared.b32")], 32, {"tma": True}),
        (
            "(32,4) f32 v4 rows + column (none)",
            small,
            [(row_v4, "st.shared.v4.b32"), (row_v4, "ld.shared.b32")],
            32,
            {},
        ),
        (
            "64x64 wgmma K, rows + ldmatrix",
            stage,
            [(rows, "cp.async.16"), (a_reader, "ldmatrix.x4")],
            16,
            {"wgmma": "K"},
        ),
    ]


def plain_search(tile: Layout, accesses: List[Any], bits: int, opts: Dict[str, Any]) -> Optional[Swizzle]:
    """The search without the cache: banks() on each composed layout in family order (the
    free or the TMA family; wgmma cases are skipped); the first all-proved swizzle, or None."""
    if opts.get("tma"):
        m = (128 // bits).bit_length() - 1
        fam: List[Optional[Swizzle]] = [None] + [Swizzle(b, m, 3) for b in (1, 2, 3)]
    else:
        fam = [None] + list(swizzle_family((int(tile.cosize) - 1).bit_length()))
    storage = np.sort(np.asarray(tile.eval_all()))
    pairs = [a if isinstance(a, tuple) else (a, None) for a in accesses]
    for sw in fam:
        L = tile if sw is None else ComposedLayout(sw, 0, tile)
        if not np.array_equal(np.sort(np.asarray(L.eval_all())), storage):
            continue
        try:
            if all(banks(L, a, i, element_bits=bits).status == "proved" for a, i in pairs):
                return sw
        except AccessError:
            continue
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    print(f"# {platform.python_version()} on {platform.machine()}, repeat {args.repeat}")
    rows = []
    for name, tile, acc, bits, opts in cases():
        r = synthesize_swizzle(tile, acc, element_bits=bits, **opts)
        answer = r.atom or (str(r.swizzle) if r.swizzle is not None else "no swizzle")
        fns = [lambda t=tile, a=acc, b=bits, o=opts: synthesize_swizzle(t, a, element_bits=b, **o)]
        plain_us: Optional[float] = None
        if "wgmma" not in opts:
            want = plain_search(tile, acc, bits, opts)
            if (want if r.status == "proved" else None) != (r.swizzle if r.status == "proved" else None):
                raise SystemExit(f"{name}: the plain search gives {want}, the synthesis {r.swizzle}")
            fns.append(lambda t=tile, a=acc, b=bits, o=opts: plain_search(t, a, b, o))
        times = interleaved_min(fns, args.repeat)
        ours = times[0]
        plain_us = times[1] if len(times) > 1 else None
        rows.append((name, r.status, answer, r.candidates, ours, plain_us))
    if args.markdown:
        print("| case | status | answer | candidates | ours (µs) | banks() per candidate (µs) | speed-up |")
        print("|---|---|---|---:|---:|---:|---:|")
    for name, status, answer, n, ours, plain in rows:
        speed = f"{plain / ours:.1f}x" if plain else "-"
        plain_s = f"{plain:.0f}" if plain else "-"
        if args.markdown:
            print(f"| {name} | {status} | {answer} | {n} | {ours:.0f} | {plain_s} | {speed} |")
        else:
            print(
                f"{name:40s} {status:8s} {answer:10s} {n:4d}  {ours:9.0f} us  plain {plain_s:>9s} us  {speed}"
            )


if __name__ == "__main__":
    main()
