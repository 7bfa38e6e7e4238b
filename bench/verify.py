"""layoutproof.verify: exhaustive equality, Z3 proofs of the symbolic examples, and the cost
of ``import layoutproof``.

Exhaustive equality is timed at 2^10, 2^16 and 2^20 elements (target: 2^20 under 50 ms),
best of ``--repeat`` runs.  Each symbolic check is run ``--repeat`` times: the first run
(cold: SymPy and Z3 imported earlier, but nothing cached) and the median of the others are
reported, with the status and the method; every one must come out as expected or the
benchmark stops.  Import times are medians of fresh interpreters.

Then the soundness of decisions over drawn conditions (``--conditions`` of them, from
:func:`layoutproof.verify.strategies.conditions`: quotients that need not be exact, ``Mod`` of
quotients, ``floor``/``ceiling``, rational constants, negative powers, products of 1-3
symbols): each is decided (``decide``, and the solver driver's ``prove`` on the condition as
drawn) and checked against exhaustive exact evaluation at every value in ``[-10, 10]`` the
symbols' ranges allow (:func:`~layoutproof.verify.strategies.check_decision`); any fault stops
the benchmark.  The decision times are reported with the number that ran to within 80 % of
their time limit (the budget, not the question, setting the time), and the known hard
conditions (true nonlinear facts Z3 cannot prove) are timed as the list of what is left.

    python bench/verify.py [--repeat 5] [--markdown] [--conditions 400]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, List, Tuple

import numpy as np

import layoutproof as lp
from layoutproof import Layout, assuming, symbols
from layoutproof import verify as v


def _best(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def exhaustive_cases() -> List[Tuple[str, Callable[[], Any], str]]:
    out = []
    for k in (10, 16, 20):
        A = Layout((2,) * k, tuple(2**j for j in range(k)))  # k modes of 2: the worst case for eval_all
        B = Layout((1 << (k // 2), 1 << (k - k // 2)), (1, 1 << (k // 2)))
        C = Layout((1 << (k // 2), 1 << (k - k // 2)), (1 << (k - k // 2), 1))
        out.append((f"equal 2^{k} (proved: {k} modes vs 2 modes)", lambda A=A, B=B: v.equal(A, B), "proved"))
        out.append((f"equal 2^{k} (refuted at coordinate 1)", lambda A=A, C=C: v.equal(A, C), "refuted"))
    sw = lp.tile_to_shape(lp.composition(lp.Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), (128, 64))
    out.append(("equal swizzled 128x64 tile vs itself (2^13)", lambda: v.equal(sw, sw), "proved"))
    return out


def symbolic_cases() -> List[Tuple[str, Callable[[], Any], str]]:
    M, N, K = symbols("M N K")
    comp = lambda M, N: lp.composition(Layout((M, N), (N, 1)), Layout(4, 1))  # noqa: E731

    def post(op: str, facts: Tuple[str, ...], L: Any, *args: Any) -> Callable[[], Any]:
        def run() -> Any:
            with assuming(*facts):
                R = getattr(lp, op)(L, *args)
                return v.postcondition(op, R, L, *args)

        return run

    mat = Layout((M, N), (1, M))
    return [
        (
            "identity: (M,N):(N,1) o 4:1 == 4:N  [M%4==0]",
            lambda: v.identity(comp, lambda M, N: Layout(4, N), assume="M % 4 == 0"),
            "proved",
        ),
        (
            "post: composition((M,N):(N,1), 4:1)  [M%4==0]",
            post("composition", ("M % 4 == 0",), Layout((M, N), (N, 1)), Layout(4, 1)),
            "proved",
        ),
        (
            "post: logical_divide((M,N):(1,M), (64,32))",
            post("logical_divide", ("M % 64 == 0", "N % 32 == 0"), mat, (64, 32)),
            "proved",
        ),
        (
            "identity: logical_divide (64,32) == its closed form",
            lambda: v.identity(
                lambda M, N: lp.logical_divide(Layout((M, N), (1, M)), (64, 32)),
                lambda M, N: Layout(((64, M / 64), (32, N / 32)), ((1, 64), (M, 32 * M))),
                assume=["M % 64 == 0", "N % 32 == 0"],
            ),
            "proved",
        ),
        ("post: complement(4:2, 8*K)", post("complement", (), Layout(4, 2), 8 * K), "proved"),
        (
            "post: zipped_divide((M,N):(1,M), (8,4))",
            post("zipped_divide", ("M % 8 == 0", "N % 4 == 0"), mat, (8, 4)),
            "proved",
        ),
        (
            "post: zipped_divide((M,N):(1,M), 64:1)",
            post("zipped_divide", ("M % 64 == 0",), mat, Layout(64, 1)),
            "proved",
        ),
        ("post: left_inverse((M,N):(N,1))", post("left_inverse", (), Layout((M, N), (N, 1))), "proved"),
        (
            "equal: (M,N,K):(1,M,MN) == MNK:1 (digits, SymPy)",
            lambda: v.equal(Layout((M, N, K), (1, M, M * N)), Layout(M * N * K, 1)),
            "proved",
        ),
        ("equal: (M,N):(1,M) == M*N:1", lambda: v.equal(Layout((M, N), (1, M)), Layout(M * N, 1)), "proved"),
        ("refute: (M,2):(2,1) == 2M:1", lambda: v.equal(Layout((M, 2), (2, 1)), Layout(2 * M, 1)), "refuted"),
        (
            "refute: (M,N):(1,M) == (M,N):(N,1)",
            lambda: v.equal(Layout((M, N), (1, M)), Layout((M, N), (N, 1))),
            "refuted",
        ),
        (
            "refute: identity without M%4==0 (bounded)",
            lambda: v.identity(comp, lambda M, N: Layout(4, N)),
            "refuted",
        ),
        (
            "check: filter((M,N):(1,M)) bounded 1..16",
            lambda: v.postcondition("filter", Layout(M * N, 1), mat, bounds=16),
            "checked",
        ),
        (
            "cvc5 cross-check: logical_divide (64,32) obligations",
            _cross_checked(post("logical_divide", ("M % 64 == 0", "N % 32 == 0"), mat, (64, 32))),
            "proved",
        ),
    ]


def _cross_checked(fn: Callable[[], Any]) -> Callable[[], Any]:
    r = fn()

    def run() -> Any:
        cc = v.cross_check(r)
        if cc.agree is not True:
            sys.exit(f"cvc5 disagrees: {cc}")
        return r

    return run


#: true (or refuted) nonlinear conditions Z3 cannot settle: they run to the time limit and
#: come back undecided ("timeout"), with a model of the claim where one is small
HARD_CONDITIONS = (
    "Mod(M*N, K) == 0 given Mod(M, K) == 0",
    "M**2 != 2*N**2",
    "Mod(Mod(K**2, 3), K) != 2*M",
    "N**2 - K**2 != 4",
)


def _hard_cases() -> List[Tuple[str, Any, Tuple[Any, ...]]]:
    import sympy as sp

    M, N, K = (sp.Symbol(x, integer=True, positive=True) for x in "MNK")
    return [
        (HARD_CONDITIONS[0], sp.Eq(sp.Mod(M * N, K), 0), (sp.Eq(sp.Mod(M, K), 0),)),
        (HARD_CONDITIONS[1], sp.Ne(M**2, 2 * N**2), ()),
        (HARD_CONDITIONS[2], sp.Ne(sp.Mod(sp.Mod(K**2, 3), K), 2 * M), ()),
        (HARD_CONDITIONS[3], sp.Ne(N**2 - K**2, 4), ()),
    ]


def soundness(n: int, timeout_ms: int, seed: int = 0) -> Tuple[List[str], Any]:
    """Decide ``n`` drawn conditions, check each verdict exhaustively; the lines to print
    and the faults found."""
    import collections

    from layoutproof.errors import LayoutError
    from layoutproof.symbolic import Decision, decide, solver
    from layoutproof.verify.strategies import check_decision, conditions, sample

    pairs = sample(conditions(), n, seed=seed)
    verdicts: collections.Counter = collections.Counter()
    faults: List[str] = []
    times: List[float] = []
    stuck: List[str] = []
    checked = 0
    for cond, facts in pairs:
        t0 = time.perf_counter()
        try:
            d = decide(cond, facts, timeout_ms=timeout_ms)
        except LayoutError as e:
            verdicts["refused (facts contradict)" if "contradict" in str(e) else "refused"] += 1
            if check_decision(Decision(False, "z3"), sympy_true(), facts) or "contradict" not in str(e):
                faults.append(f"decide({cond}, {facts}) refused: {e}")
            continue
        dt = time.perf_counter() - t0
        times.append(dt)
        if dt > 0.8 * timeout_ms / 1000.0:
            stuck.append(f"{cond} given {facts}: {dt:.2f} s, {d.value} ({d.reason})")
        verdicts[{True: "proved", False: "refuted", None: "undecided"}[d.value]] += 1
        faults += [f"decide({cond}, {facts}) = {d}: {p}" for p in check_decision(d, cond, facts, radius=10)]
        v = solver.prove(cond, facts, timeout_s=timeout_ms / 1000.0, small_model=True)
        dd = None
        if v.status == "proved":
            dd = Decision(True, "z3")
        elif v.status == "refuted":
            dd = Decision(None, "z3", counterexample=dict(v.model or {}))
        if dd is not None:
            faults += [
                f"prove({cond}, {facts}) {v.status}: {p}" for p in check_decision(dd, cond, facts, radius=10)
            ]
        checked += 2
    times.sort()
    lines = [
        f"{len(pairs)} drawn conditions, {checked} verdicts checked exhaustively "
        f"({', '.join(f'{k}: {c}' for k, c in sorted(verdicts.items()))}); faults: {len(faults)}",
        f"decide times: median {statistics.median(times) * 1e3:.1f} ms, 90th percentile "
        f"{times[int(0.9 * (len(times) - 1))] * 1e3:.1f} ms, max {times[-1] * 1e3:.0f} ms; "
        f"{len(stuck)} ran to within 80 % of the {timeout_ms} ms limit",
    ]
    lines += [f"  near the limit: {x}" for x in stuck]
    for name, cond, facts in _hard_cases():
        t0 = time.perf_counter()
        d = decide(cond, facts, timeout_ms=timeout_ms)
        lines.append(
            f"  known hard: {name}: {d.value} ({d.reason}) in {time.perf_counter() - t0:.2f} s"
            + (f", example {d.example}" if d.example else "")
        )
        faults += [f"decide({cond}) = {d}: {p}" for p in check_decision(d, cond, facts, radius=10)]
    return lines, faults


def sympy_true() -> Any:
    import sympy

    return sympy.true


def import_time(module: str, runs: int) -> float:
    env = {k: val for k, val in os.environ.items() if not k.startswith("PYTHON")}
    code = f"import time; t0 = time.perf_counter(); import {module}; print(time.perf_counter() - t0)"
    times = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        times.append(float(r.stdout.strip()))
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--conditions", type=int, default=400, help="drawn conditions checked exhaustively")
    ap.add_argument("--condition-timeout-ms", type=int, default=1000)
    args = ap.parse_args()
    import sympy
    import z3

    print(
        f"# {platform.node()} | {platform.processor() or platform.machine()} | Python {platform.python_version()} "
        f"| numpy {np.__version__} | sympy {sympy.__version__} | z3 {z3.get_version_string()} "
        f"| layoutproof {lp.__version__}"
    )
    rows = []
    for name, fn, want in exhaustive_cases():
        r = fn()
        if r.status != want:
            sys.exit(f"{name}: expected {want}, got {r}")
        rows.append((name, _best(fn, args.repeat) * 1e3, r.status, r.method))
    if args.markdown:
        print("| exhaustive equality | best ms | status | method |")
        print("|---|---:|---|---|")
        for name, ms, st, me in rows:
            print(f"| {name} | {ms:.2f} | {st} | {me} |")
    else:
        print(f"{'exhaustive equality':52s} {'best ms':>9s}  status")
        for name, ms, st, me in rows:
            print(f"{name:52s} {ms:9.2f}  {st} ({me})")
    big = max(ms for name, ms, *_ in rows if "2^20" in name)
    if args.markdown:
        print()
    print(f"2^20 elements: {big:.1f} ms (target < 50 ms)")

    srows = []
    for name, fn, want in symbolic_cases():
        times = []
        r = None
        for _ in range(max(2, args.repeat)):
            t0 = time.perf_counter()
            r = fn()
            times.append(time.perf_counter() - t0)
        if r.status != want:
            sys.exit(f"{name}: expected {want}, got {r.explain()}")
        srows.append(
            (name, times[0] * 1e3, statistics.median(times[1:]) * 1e3, r.status, r.method, len(r.obligations))
        )
    if args.markdown:
        print()
        print("| symbolic check | first ms | median ms | status | method | Z3 obligations |")
        print("|---|---:|---:|---|---|---:|")
        for name, a, b, st, me, n in srows:
            print(f"| {name} | {a:.1f} | {b:.1f} | {st} | {me} | {n} |")
    else:
        print()
        print(f"{'symbolic check':52s} {'first ms':>9s} {'median ms':>10s}  status (method, obligations)")
        for name, a, b, st, me, n in srows:
            print(f"{name:52s} {a:9.1f} {b:10.1f}  {st} ({me}, {n})")

    if args.conditions:
        lines, faults = soundness(args.conditions, args.condition_timeout_ms)
        print()
        for line in lines:
            print(line)
        if faults:
            for f in faults[:20]:
                print("FAULT:", f)
            sys.exit(f"{len(faults)} unsound verdicts or false witnesses")

    runs = max(5, args.repeat)
    t_lp = import_time("layoutproof", runs)
    t_v = import_time("layoutproof.verify", runs)
    print()
    print(
        f"import layoutproof: {t_lp * 1e3:.1f} ms; import layoutproof.verify: {t_v * 1e3:.1f} ms "
        f"(median of {runs} fresh interpreters; neither loads numpy, SymPy or Z3)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
