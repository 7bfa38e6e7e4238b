"""Index-width analysis (layoutproof.gpu.analysis.width.index_width): microseconds per call
on concrete layouts (exact extremes, no enumeration), and seconds per symbolic proof under
the default solver budget (target: within 2 s each), cold (first call, empty caches) and
warm.

No peer tool answers this question (tensor-layouts, the CuTe visualizers and Gluon have no
index-width check); the only baseline is enumerating the layout: numpy's ``eval_all`` of
every offset (which sees the final offsets only, not the strides, products, running sums,
size and cosize, and cannot take symbolic or 2^32-point layouts), timed where it fits in
memory.

    python bench/analysis_width.py [--repeat 7] [--markdown]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from typing import Any, Callable, List, Optional, Tuple

from _timing import interleaved_min

from layoutproof import ComposedLayout, Layout, Swizzle, assuming, composition, symbols, zipped_divide
from layoutproof.gpu.analysis.width import index_width


def concrete_cases() -> List[Tuple[str, Any, int, bool]]:
    """(name, layout, bits, enumerable baseline?)"""
    return [
        ("#2312 elementwise 65384x65384", Layout((65384, 65384), (65384, 1)), 32, False),
        ("#3604 (2^29+1,4):(4,1)", Layout((2**29 + 1, 4), (4, 1)), 32, False),
        ("#3327 [1,N,H,D] N=2^20", Layout((1, 2**20, 16, 128), (2**31, 2048, 128, 1)), 32, False),
        ("GEMM A 4096x4096 int32", Layout((4096, 4096), (4096, 1)), 32, False),
        ("GEMM A 1024x1024 int32", Layout((1024, 1024), (1024, 1)), 32, True),
        ("tiled ((128,64),(32,64))", zipped_divide(Layout((4096, 4096), (4096, 1)), (128, 64)), 32, False),
        ("SW128 atom Sw<3,3,3> o (8,64)", composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), 16, True),
        (
            "SW128 tile Sw<3,3,3> o (128,64)",
            composition(Swizzle(3, 3, 3), Layout((128, 64), (64, 1))),
            16,
            True,
        ),
        (
            "swizzle evaluated (bound misses)",
            ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 56), (64, 1))),
            9,
            True,
        ),
        ("nested 4-level", Layout(((2, 4), (8, (2, 4)), 16), ((1, 2), (16, (8, 256)), 2048)), 16, True),
    ]


def symbolic_cases() -> List[Tuple[str, Callable[[], Any]]]:
    M, K, L, bm = symbols("M K L bm")

    def run(layout: Any, facts: Tuple[str, ...], bits: int = 32, base: Any = 0) -> Callable[[], Any]:
        def f() -> Any:
            with assuming(*facts):
                return index_width(layout, bits=bits, base=base)

        return f

    with assuming("M % 128 == 0", "K % 64 == 0"):
        tiles = zipped_divide(Layout((M, K), (K, 1)), (128, 64))
    return [
        (
            "(M,K):(K,1) M,K <= 2^15 [proved, interval]",
            run(Layout((M, K), (K, 1)), ("M <= 2**15", "K <= 2**15")),
        ),
        (
            "(M,K):(K,1) M <= 65536, K <= 32769 [refuted + fits_if]",
            run(Layout((M, K), (K, 1)), ("M <= 65536", "K <= 32769")),
        ),
        (
            "(M,K,L):(K,1,MK) batched, int32 [refuted + fits_if]",
            run(Layout((M, K, L), (K, 1, M * K)), ("M <= 49152", "K <= 65536", "L <= 4")),
        ),
        (
            "(M,K,L):(K,1,MK) batched, int64 [proved]",
            run(Layout((M, K, L), (K, 1, M * K)), ("M <= 49152", "K <= 65536", "L <= 4"), bits=64),
        ),
        (
            "(M,K):(K,1) M*K <= 2^31-1 [proved from the fact]",
            run(Layout((M, K), (K, 1)), ("M*K <= 2**31 - 1",)),
        ),
        (
            "(M,K,2):(K,1,MK) M*K <= 2^20, int23 [proved, z3]",
            run(Layout((M, K, 2), (K, 1, M * K)), ("M*K <= 2**20",), bits=23),
        ),
        (
            "zipped_divide (M,K) by (128,64) [proved]",
            run(tiles, ("M % 128 == 0", "K % 64 == 0", "M <= 2**15", "K <= 2**15")),
        ),
        (
            "tile base bm*128*K [refuted + fits_if]",
            run(Layout((128, 64), (K, 1)), ("bm <= 256", "K <= 65536"), base=bm * 128 * K),
        ),
        ("(M,K):(1,M) no assumptions [unknown]", run(Layout((M, K), (1, M)), ())),
    ]


def clear_caches() -> None:
    """Empty the solver's decision caches, so a timing is a first call's."""
    import layoutproof.symbolic as S
    from layoutproof.symbolic import solver

    S._CACHE.clear()
    S._CHECKED.clear()
    for name in ("_CONSISTENT", "_TRANSLATED"):
        c = getattr(solver, name, None)
        if isinstance(c, dict):
            c.clear()


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    print(f"python {platform.python_version()} on {platform.machine()}; no peer exists for this analysis")
    print()
    print("concrete layouts (exact; us per call, min of interleaved batches)")
    if a.markdown:
        print("| case | bits | status | cases | us | eval_all us (final offsets only) |")
        print("|---|---|---|---|---|---|")
    for name, lay, bits, enum in concrete_cases():
        r = index_width(lay, bits=bits)
        fns: List[Callable[[], Any]] = [lambda lay=lay, bits=bits: index_width(lay, bits=bits)]
        if enum:
            fns.append(lambda lay=lay: lay.eval_all())
        us = interleaved_min(fns, a.repeat)
        base = f"{us[1]:.0f}" if enum else f"- ({lay.size} points)"
        if a.markdown:
            print(f"| {name} | {bits} | {r.status} | {r.cases} | {us[0]:.0f} | {base} |")
        else:
            print(
                f"  {name:38s} int{bits:<3d} {r.status:8s} {r.cases:3d} cases {us[0]:9.0f} us   eval_all {base}"
            )
    print()
    print("symbolic layouts (default budget; seconds: cold = first call with empty caches, warm = min of 5)")
    if a.markdown:
        print("| case | status | method | cold s | warm s |")
        print("|---|---|---|---|---|")
    worst = 0.0
    for name, f in symbolic_cases():
        clear_caches()
        t0 = time.perf_counter()
        r = f()
        cold = time.perf_counter() - t0
        warm = min(_timed(f) for _ in range(5))
        worst = max(worst, cold)
        if a.markdown:
            print(f"| {name} | {r.status} | {r.method} | {cold:.3f} | {warm:.3f} |")
        else:
            print(f"  {name:58s} {r.status:8s} {r.method:22s} cold {cold:6.3f} s  warm {warm:6.3f} s")
    print()
    print(f"slowest symbolic case (cold): {worst:.3f} s (target 2 s): {'met' if worst <= 2.0 else 'MISSED'}")


def _timed(f: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main())
