"""How long an explanation of a refusal takes on concrete layouts of up to ~10^5 elements
(the target: under 1 s).  Run: ``python bench/explain.py``; prints one line per case (the
best of three runs after a warm one, so that a loaded machine's pauses are not counted),
then the slowest."""

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
    # upcast's repairs: a unit stride, or whole wide elements
    "upcast((384,256):(3,1152), 2)",
    # upcast's block condition: the odd extent leaves a partial wide element (98,048 elements)
    "upcast((383,256):(1,384), 2)",
    # tile_to_shape with a target of 102,720 cells that the block does not divide
    "tile_to_shape((3,5):(1,3), (320,321))",
    # GF(2)-linearity of a 98,304-element layout, its witness re-evaluated by XOR
    "to_f2((384,256):(3,1152))",
    # downcast with no stride-1 leaf (98,304 elements)
    "downcast((384,256):(2,768), 2)",
    # a stride chain that breaks: complement of 98,304 elements
    "complement((96,1024):(1,200), 400000)",
    # a left inverse past the exact search's bounds: undecided, and said what settles it
    "left_inverse((256,2,192):(1,200,512))",
]


def main() -> None:
    worst = 0.0
    for expr in CASES:
        explain(expr)  # warm (imports, caches)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            e = explain(expr)
            times.append(time.perf_counter() - t0)
        dt = min(times)
        worst = max(worst, dt)
        rep = "reproduced" if e.reproduction is not None and e.reproduction.holds else "-"
        print(f"{dt:7.3f} s  {e.status:9} {e.rule or '':40.40} {rep:10} {len(e.repairs)} repairs  {expr}")
    print(f"slowest: {worst:.3f} s (target: under 1 s)")


if __name__ == "__main__":
    main()
