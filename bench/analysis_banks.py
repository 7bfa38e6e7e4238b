"""Bank-conflict and coalescing analyses (layoutproof.gpu.analysis) against tensor-layouts
on the same concrete cases, in the same process, interleaved: microseconds per call and the
ratio tensor-layouts / ours (the speed-up; target >= 10 on whole-tile cases, >= 1 on every
case).

Each case is given to both sides as they take it: ours the data layout, the TV layout and
the instruction; tensor-layouts ``compose(data, tv)`` built in its own algebra (the swizzle
on top).  Both sides' counts are printed too; where the quantities differ by design (the
instruction's phases, every warp rather than the first) the row says so.

    python bench/analysis_banks.py [--repeat 7] [--markdown]
"""

from __future__ import annotations

import argparse
import platform
import sys
from typing import Any, Callable, List, Tuple

from _timing import interleaved_min

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof.gpu.analysis import banks, coalescing

try:
    import tensor_layouts as tl
    from tensor_layouts import analysis as tla
except ImportError:  # pragma: no cover
    sys.exit("tensor-layouts is needed: pip install tensor-layouts==0.3.2")


def to_tl(L: Layout) -> Any:
    return tl.Layout(L.shape, L.stride)


def tl_map(data: Any, tv: Layout) -> Any:
    if isinstance(data, ComposedLayout):
        sw = data.layout_a
        return tl.compose(tl.Swizzle(sw.bits, sw.base, sw.shift), tl.compose(to_tl(data.layout_b), to_tl(tv)))
    return tl.compose(to_tl(data), to_tl(tv))


#: (name, data layout, TV layout, instruction or None for coalescing, element bits, whole tile?)
Case = Tuple[str, Any, Layout, Any, int, bool]


def cases() -> List[Case]:
    sw128 = composition(Swizzle(3, 3, 3), Layout((64, 64), (64, 1)))
    sw64 = composition(Swizzle(2, 3, 3), Layout((64, 32), (32, 1)))
    col = Layout((32, 32), (32, 1))
    return [
        ("128-bit load, 32 lanes", Layout(256, 1), Layout((32, 8), (8, 1)), "ld.shared.v4.b32", 16, False),
        ("column read, 32 lanes", col, Layout(32, 1), "ld.shared.b32", 32, False),
        ("32x32 f32, every column", col, Layout((32, 32), (1, 32)), "ld.shared.b32", 32, True),
        (
            "Sw<5,0,5> 32x32 f32, every column",
            composition(Swizzle(5, 0, 5), col),
            Layout((32, 32), (1, 32)),
            "ld.shared.b32",
            32,
            True,
        ),
        (
            "SM80 Sw<3,3,3> 64x64 ldmatrix.x4",
            sw128,
            Layout(((16, 2), 8, (4, 4)), ((1, 512), 64, (16, 1024))),
            "ldmatrix.x4",
            16,
            True,
        ),
        (
            "SM80 Sw<2,3,3> 64x32 ldmatrix.x4",
            sw64,
            Layout(((16, 2), 8, (4, 2)), ((1, 512), 64, (16, 1024))),
            "ldmatrix.x4",
            16,
            True,
        ),
        (
            "SM80 Sw<3,3,3> 64x64 cp.async 16B, 4 warps",
            sw128,
            Layout(((8, 16), 8, 4), ((512, 1), 64, 16)),
            "cp.async.16",
            16,
            True,
        ),
        (
            "128x64 f16 rows, 4 warps, ld.shared.b32",
            Layout((128, 64), (64, 1)),
            Layout(((32, 4), 2, (1, 32)), ((256, 1), 128, (0, 4))),
            "ld.shared.b32",
            16,
            True,
        ),
        (
            "coalesce: 64x64 f16 row-major, 16B",
            Layout((64, 64), (64, 1)),
            Layout(((8, 4), 8, 16), ((512, 1), 64, 4)),
            None,
            16,
            True,
        ),
        (
            "coalesce: 64x64 f16, a row per lane, 4 warps",
            Layout((64, 64), (64, 1)),
            Layout(((64, 2), 8, 4), ((1, 512), 64, 1024)),
            None,
            16,
            True,
        ),
    ]


def pair(case: Case) -> Tuple[Callable[[], Any], Callable[[], Any], str, str]:
    name, data, tv, ins, bits, _whole = case
    m = tl_map(data, tv)
    e = bits // 8
    if ins is None:

        def ours() -> Any:
            return coalescing(data, tv, element_bits=bits)

        def theirs() -> Any:
            return tla.per_group_coalescing(m, element_bytes=e)

        r = ours()
        t = tla.segment_analysis(m, element_bytes=e)
        return (
            ours,
            theirs,
            f"{int(r.sectors.sum())} sectors, {r.status}",
            f"{t['segments']} segments (warp 0, all values)",
        )

    def ours_b() -> Any:
        return banks(data, tv, ins, element_bits=bits)

    def theirs_b() -> Any:
        return tla.per_group_bank_conflicts(m, element_bytes=e)

    r = ours_b()
    t = theirs_b()
    return ours_b, theirs_b, f"{r.max_ways}-way, {r.total} wavefronts", f"{t['worst_max_ways']}-way"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    print(
        f"# {platform.machine()}, Python {platform.python_version()}, tensor-layouts {tl.version('tensor-layouts')}"
    )
    rows = []
    for case in cases():
        ours, theirs, oc, tc = pair(case)
        t_ours, t_theirs = interleaved_min([ours, theirs], args.repeat)
        rows.append((case[0], case[5], t_ours, t_theirs, oc, tc))
    if args.markdown:
        print("| case | whole tile | ours µs | tensor-layouts µs | speed-up | ours | tensor-layouts |")
        print("|---|:-:|---:|---:|---:|---|---|")
        for name, whole, a, b, oc, tc in rows:
            print(f"| {name} | {'yes' if whole else ''} | {a:.0f} | {b:.0f} | {b / a:.1f} | {oc} | {tc} |")
    else:
        for name, whole, a, b, oc, tc in rows:
            print(
                f"{name:48s} {'W' if whole else ' '} ours {a:9.1f} us  tl {b:9.1f} us  x{b / a:6.1f}  [{oc} | {tc}]"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
