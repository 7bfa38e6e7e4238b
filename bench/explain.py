"""How long an explanation of a refusal takes on concrete layouts of up to ~10^5 elements
(the target: under 1 s).  Run: ``python bench/explain.py``; prints one line per case."""

from __future__ import annotations

import time

from layoutproof.explain import explain

CASES = [
    # Shah's carry, scaled: B has 96*1024 = 98,304 coordinates
    "composition((96,2048):(1,97), (48,2048):(2,48))",
    # a disjointness refusal on a 64x1536 B (98,304 coordinates)
    "composition((384,512):(1,385), (192,512):(2,192))",
    # a stride-chain refusal of a complement: L has 98,304 elements
    "complement((384,256):(1,385), 400000)",
    # a tiler that does not divide: logical_divide of a 320x320 (102,400) layout
    "logical_divide((320,320):(1,321), 96:2)",
    # one leaf of 98,304 coordinates that is no layout's function (stride divisibility)
    "composition((300,400):(1,301), 98304:3)",
    # upcast has no post-condition to check repairs by: the search runs to its budget
    "upcast((384,256):(3,1152), 2)",
]


def main() -> None:
    for expr in CASES:
        explain(expr)  # warm (imports, caches)
        t0 = time.perf_counter()
        e = explain(expr)
        dt = time.perf_counter() - t0
        rep = "reproduced" if e.reproduction is not None and e.reproduction.holds else "-"
        print(
            f"{dt:7.3f} s  {e.status:9} {e.condition or '':40.40} {rep:10} {len(e.repairs)} repairs  {expr}"
        )


if __name__ == "__main__":
    main()
