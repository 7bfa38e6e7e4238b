"""The large adversarial fuzz: 100,000 seeded cases (``tools/adversarial.py``).

    python bench/fuzz.py                 # 100,000 cases, seed 1, 400 symbolic
    python bench/fuzz.py --cases 200000 --seed 7 --symbolic 1000 --wide

Prints a table by class and by function, the throughput, and for every bad class its count
and the shortest reproductions (one line each).  Exit status 1 when any case is bad.
The figures of a run go to bench/RESULTS.md (section "Adversarial fuzz").
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "tools" / "adversarial.py"
_spec = importlib.util.spec_from_file_location("layoutproof_adversarial", _PATH)
adv = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = adv
_spec.loader.exec_module(adv)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--symbolic", type=int, default=400, help="symbolic cases (about 0.1 s each)")
    ap.add_argument("--assumptions", type=int, default=100, help="hostile assuming() facts")
    ap.add_argument("--examples", type=int, default=3, help="reproductions shown per (class, function)")
    ap.add_argument("--wide", action="store_true", help="symbolic facts from WIDE_FACTS, values up to M = 64")
    a = ap.parse_args(argv)
    mix = adv.Mix(symbolic=a.symbolic, assumptions=a.assumptions, wide=a.wide)
    t0 = time.time()
    rep = adv.run(a.seed, a.cases, mix, progress=True)
    print(rep.table())
    n = len(rep.outcomes)
    print(
        f"\n{n} cases in {rep.seconds:.1f} s ({n / rep.seconds:.0f} cases/s), seed {a.seed}, "
        f"{a.symbolic} symbolic{' (wide facts)' if a.wide else ''}; {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t0))}"
    )
    slowest = sorted(rep.outcomes, key=lambda o: -o.seconds)[:5]
    print("slowest calls: " + "; ".join(f"{o.seconds:.2f} s {o.func}" for o in slowest))
    groups = defaultdict(list)
    for o in rep.bad():
        groups[(o.cls, o.func)].append(o)
    for (cls, fn), os_ in sorted(groups.items()):
        print(f"\n[{cls}] {fn}: {len(os_)}")
        for o in sorted(os_, key=lambda o: len(o.repro))[: a.examples]:
            print(f"    {o.repro}  -- {o.detail[:300]}")
    return 1 if rep.bad() else 0


if __name__ == "__main__":
    sys.exit(main())
