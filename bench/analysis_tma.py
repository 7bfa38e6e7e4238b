"""Speed of the TMA pre-flight (layoutproof.gpu.analysis.tma): concrete tiles (the GMMA
atoms of CUTLASS's SM90 GEMMs, the project's own stages) in milliseconds per call, and the
symbolic A (every requirement decided by Z3 under the assumptions) in seconds, the first
call of a fresh condition and a repeated one (the decision cache).

    python bench/analysis_tma.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import platform
import time

from _timing import interleaved_min

from layoutproof import Layout, symbols
from layoutproof.gpu.analysis.tma import tma_preflight
from layoutproof.gpu.isa.gmma import smem_atom, tile_to_shape
from layoutproof.symbolic import assuming


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ns = ap.parse_args()
    print(f"python {platform.python_version()}, {platform.processor() or platform.machine()}")
    A_K = Layout((4096, 4096), (4096, 1))
    A_MN = Layout((4096, 4096), (1, 4096))
    cases = []
    for major, sw, shape in (
        ("K", "SW128", (128, 64)),
        ("K", "SW32", (128, 64)),
        ("MN", "SW128", (128, 64)),
        ("MN", "INTER", (128, 64)),
        ("K", "SW128", (256, 64)),
    ):
        s = tile_to_shape(smem_atom(major, sw), shape)
        g = A_K if major == "K" else A_MN
        cases.append(
            (f"{major}-{sw} {shape}", lambda g=g, s=s, shape=shape: tma_preflight(g, s, shape, dtype="f16"))
        )
    us = interleaved_min([f for _n, f in cases], ns.repeat)
    print("concrete tiles (ms per call, whole-tile placement proof included):")
    for (name, f), t in zip(cases, us):
        r = f()
        print(f"  {name:22s} {t / 1000:7.2f} ms  {r.status}, box {r.args.box_dim} x{r.boxes}")
    M, K = symbols("M K")
    s = tile_to_shape(smem_atom("K", "SW128"), (128, 64))
    for facts in (
        ("K % 8 == 0", "M <= 2**31", "K <= 2**31"),
        ("M <= 2**31", "K <= 2**31"),
        ("K % 8 == 0", "M >= 2"),
    ):
        for label in ("first", "again"):
            t0 = time.perf_counter()
            with assuming(*facts):
                r = tma_preflight(Layout((M, K), (K, 1)), s, (128, 64), dtype="f16")
            dt = time.perf_counter() - t0
            print(f"symbolic A under {', '.join(facts)} ({label}): {dt:.3f} s, {r.status}")


if __name__ == "__main__":
    main()
