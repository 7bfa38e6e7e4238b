"""Timing shared by the benchmarks: batches of each function alternate, and the minimum
per function is the estimate least disturbed by other load on the machine."""

from __future__ import annotations

import time
from typing import Any, Callable, List


def batch(fn: Callable[[], Any], target_s: float) -> int:
    """Calls per batch so that one batch of ``fn`` takes about ``target_s``."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= target_s / 4:
            return max(1, int(n * target_s / max(dt, 1e-9)))
        n *= 2


def interleaved_min(fns: List[Callable[[], Any]], repeat: int, target_s: float = 0.02) -> List[float]:
    """Microseconds per call of each function: ``repeat`` rounds, one batch of each
    function per round (so all see the same machine), the minimum over the rounds."""
    ns = [batch(f, target_s) for f in fns]
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, (f, n) in enumerate(zip(fns, ns)):
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            best[k] = min(best[k], (time.perf_counter() - t0) / n * 1e6)
    return best
