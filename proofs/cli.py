"""``layoutproof prove``: check the theorem catalog and write a report.

    layoutproof prove                       # every theorem; report in layoutproof-report/
    layoutproof prove --filter T1           # the theorems whose id/title/group match
    layoutproof prove --list                # list the catalog, check nothing
    layoutproof prove --cross-check cvc5    # re-check every Z3 obligation with cvc5
    layoutproof prove --jobs 4              # four worker processes (0: automatic)
    layoutproof prove --all                 # symbolic-execution theorems at every rank in scope
    layoutproof prove --extra my_theorems.py  # add a module's THEOREMS to the catalog
    layoutproof prove --write-docs docs/theorems.md

One progress line per theorem goes to standard error; the table and the summary line to
standard output.  Exit status: 0 when every theorem reached its declared status (negative
theorems refuted by their expected counterexample); 1 when a positive theorem is refuted,
a negative one is not (or by another counterexample), a check raised, or cvc5 disagrees
with Z3; 3 when some theorem stayed unknown or weaker than declared; 2 on usage errors.

>>> main(["--list", "--filter", "neg.sorting"])
neg.sorting-preserves-function  refuted  exhaustive  Sorting a layout's modes changes its function
1 theorem
0
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Tuple

from layoutproof.errors import LayoutError

from . import runner
from .catalog import THEOREMS, select
from .theorem import Theorem, TheoremOutcome

__all__ = ["main"]

DEFAULT_REPORT = "layoutproof-report"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="layoutproof prove",
        description="Check the theorem catalog of the CuTe layout algebra (SymPy, Z3, exhaustive families) "
        "and write a report: report.md, report.json and smt2/<theorem>-<k>.smt2 for every Z3 obligation.",
    )
    p.add_argument(
        "--filter",
        "-k",
        metavar="TEXT",
        help="only theorems whose id, title or group contains "
        "TEXT (case-insensitive) or matches it as a regular expression",
    )
    p.add_argument(
        "--list", action="store_true", help="list the theorems (id, expected status, method, title)"
    )
    p.add_argument(
        "--report",
        metavar="DIR",
        default=DEFAULT_REPORT,
        help=f"the report directory (default: {DEFAULT_REPORT})",
    )
    p.add_argument("--no-report", action="store_true", help="write no report directory")
    p.add_argument(
        "--kernel",
        choices=["auto", "yes", "no"],
        default="auto",
        help="also generate the default proven GEMM kernels (layoutproof.gpu: wgmma and mma.sync) "
        "and write them to the report as kernel_sm90.cu / kernel.cu with their obligations; "
        "auto: when no --filter is given",
    )
    p.add_argument(
        "--cross-check",
        metavar="SOLVER",
        choices=["cvc5"],
        help="re-check every Z3 obligation with SOLVER (cvc5)",
    )
    p.add_argument(
        "--cross-check-timeout",
        metavar="MS",
        type=int,
        default=5000,
        help="time limit per obligation for the cross-check (default 5000 ms)",
    )
    p.add_argument(
        "--jobs",
        "-j",
        metavar="N",
        type=int,
        default=0,
        help="worker processes (default 0: automatic, the usable CPUs up to 4; 1: this process)",
    )
    p.add_argument(
        "--extra",
        metavar="MODULE_OR_FILE",
        action="append",
        default=[],
        help="add the THEOREMS list of a module or a .py file to the catalog (repeatable)",
    )
    p.add_argument(
        "--write-docs", metavar="PATH", help="write the catalog's Markdown page (docs/theorems.md) and exit"
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="the symbolic-execution theorems at every rank of their stated bound "
        "(the default run checks a stated subset of ranks, to stay under a minute)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    return p


def _progress(o: TheoremOutcome, k: int, n: int) -> None:
    cases = f", {o.cases:,} cases" if o.cases is not None else ""
    mark = "ok" if o.verdict == "ok" else o.verdict.upper()
    line = f"[{k:>{len(str(n))}}/{n}] {mark:<7} {o.id}: {o.status} ({o.method}{cases}, {o.seconds:.2f} s)"
    if o.verdict != "ok":
        line += f" -- {o.message}"
        if o.counterexample:
            line += f"; counterexample: {o.counterexample}"
    print(line, file=sys.stderr, flush=True)


def _listing(ths: Sequence[Theorem]) -> str:
    w0 = max((len(t.id) for t in ths), default=0)
    w2 = max((len(t.method) for t in ths), default=0)
    return "\n".join(f"{t.id:<{w0}}  {t.expected:<8} {t.method:<{w2}}  {t.title}" for t in ths)


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    from . import docs, report

    try:
        pool: List[Theorem] = list(THEOREMS)
        for spec in args.extra:
            extra = runner.load_extra(spec)
            ids = {t.id for t in pool}
            clash = [t.id for t in extra if t.id in ids]
            if clash:
                raise LayoutError(f"{spec}: theorem ids already in the catalog: {', '.join(clash)}")
            pool.extend(extra)
        if args.write_docs:
            changed = docs.write(args.write_docs, pool if args.extra else None)
            print(f"{'wrote' if changed else 'unchanged'} {args.write_docs}")
            return 0
        ths = select(args.filter, pool)
    except LayoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not ths:
        print(
            f"error: no theorem matches {args.filter!r} (layoutproof prove --list shows them)",
            file=sys.stderr,
        )
        return 2
    if args.list:
        print(_listing(ths))
        print(f"{len(ths)} theorem{'s' if len(ths) != 1 else ''}")
        return 0
    if args.jobs < 0:
        print("error: --jobs must be >= 0", file=sys.stderr)
        return 2
    if args.cross_check == "cvc5" and importlib.util.find_spec("cvc5") is None:
        print(
            "error: --cross-check cvc5 needs cvc5, which is not installed "
            "(pip install cvc5, or the layoutproof[test] extra)",
            file=sys.stderr,
        )
        return 2
    if args.all:
        # read by layoutproof.proofs.catalog.symbolic, here and in the worker processes
        os.environ["LAYOUTPROOF_PROVE_ALL"] = "1"
    elif not args.filter:
        heavy = [t for t in ths if t.heavy]
        if heavy:
            ths = [t for t in ths if not t.heavy]
            print(
                f"note: {len(heavy)} heavy theorem{'s' if len(heavy) != 1 else ''} left to "
                f"`layoutproof prove --all`: {', '.join(t.id for t in heavy)}",
                file=sys.stderr,
            )
    jobs = runner.default_jobs() if args.jobs == 0 else args.jobs
    jobs = min(jobs, len(ths))
    t0 = time.perf_counter()
    outcomes = runner.run(
        ths,
        jobs=jobs,
        cross_check=args.cross_check,
        cross_check_ms=args.cross_check_timeout,
        progress=None if args.quiet else _progress,
        extras=args.extra,
    )
    seconds = time.perf_counter() - t0
    print(report.table(outcomes))
    print()
    print(report.summary_line(outcomes, seconds))
    if args.cross_check:
        entries = [e for o in outcomes for e in (o.cross_check or ())]
        agree = sum(1 for e in entries if e["agree"] is True)
        disagree = [(o.id, e) for o in outcomes for e in (o.cross_check or ()) if e["agree"] is False]
        undecided = sum(1 for e in entries if e["agree"] is None)
        print(
            f"{args.cross_check}: {len(entries)} obligations, {agree} agree, {len(disagree)} disagree, "
            f"{undecided} undecided (timeouts or unknowns, not disagreements)"
        )
        for tid, entry in disagree:
            print(
                f"  DISAGREEMENT {tid}: {entry['purpose']}: z3 {entry['z3']}, "
                f"{args.cross_check} {entry['cvc5']}"
            )
    bad = [o for o in outcomes if o.verdict != "ok"]
    for o in bad:
        print(
            f"  {o.verdict}: {o.id} -- {o.message}"
            + (f"; counterexample: {o.counterexample}" if o.counterexample else "")
        )
    if not args.no_report:
        try:
            report.write_report(args.report, outcomes, pool, seconds, jobs, args.cross_check)
        except OSError as e:
            print(f"error: cannot write the report to {args.report}: {e}", file=sys.stderr)
            return 2
        print(
            f"report: {args.report}/report.md, {args.report}/report.json, "
            f"{sum(len(o.smt2) for o in outcomes)} SMT-LIB files in {args.report}/smt2/"
        )
    code = report.exit_code(outcomes)
    if args.kernel == "yes" or (args.kernel == "auto" and not args.filter):
        code = max(code, _emit_kernel(None if args.no_report else args.report))
    return code


def _emit_kernel(report_dir: Optional[str]) -> int:
    """The main job's second half: the default proven GEMM kernels -- wgmma (Hopper) and
    mma.sync (SM80 and later) -- every obligation discharged before the source is written.
    This module is a command of the CLI layer, which may import every layer; the catalog
    itself (layoutproof.proofs) never imports layoutproof.gpu."""
    from layoutproof.gpu.kernels.mma_sync import generate
    from layoutproof.gpu.kernels.wgmma import generate_sm90

    code = 0
    makers: Sequence[Tuple[str, Callable[[], Any]]] = (("kernel_sm90", generate_sm90), ("kernel", generate))
    for fname, make in makers:
        t0 = time.perf_counter()
        try:
            kern = make()
        except LayoutError as e:
            print(f"kernel: FAILED -- {type(e).__name__}: {e}")
            code = 1
            continue
        dt = time.perf_counter() - t0
        kinds: dict = {}
        for p in kern.proofs:
            kinds[p.kind] = kinds.get(p.kind, 0) + 1
        by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        where = ""
        if report_dir:
            try:
                d = Path(report_dir)
                d.mkdir(parents=True, exist_ok=True)
                (d / f"{fname}.cu").write_text(kern.source)
                lines = [
                    f"# Proven kernel `{kern.name}`",
                    "",
                    f"{kern.config.key()}, {kern.problem.key()}: {len(kern.proofs)} "
                    f"obligations ({kern.proofs.cases} cases), proven in {dt:.2f} s before "
                    f"the source was written.",
                    "",
                    "| kind | statement | method | cases |",
                    "|---|---|---|---|",
                ]
                lines += [
                    f"| {p.kind} | {p.statement.replace('|', '/')} | {p.method} | {p.cases} |"
                    for p in kern.proofs
                ]
                (d / f"{fname}.md").write_text("\n".join(lines) + "\n")
                where = f" -> {d / (fname + '.cu')}"
            except OSError as e:
                print(f"error: cannot write the kernel to {report_dir}: {e}", file=sys.stderr)
                return 2
        print(
            f"kernel: {kern.name} ({kern.config.key()}), {len(kern.proofs)} obligations proven "
            f"({by_kind}; {kern.proofs.cases} cases) in {dt:.2f} s{where}"
        )
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
