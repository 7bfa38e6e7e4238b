"""The outcome of a catalog run as text: the terminal table and summary, and the report
directory (``report.md``, ``report.json``, ``smt2/<theorem-id>-<k>.smt2``).

>>> from layoutproof.proofs.theorem import TheoremOutcome
>>> o = TheoremOutcome("T0.demo", "Demo", "proved", "proved", "ok", ("z3",), 0.25)
>>> print(summary_line([o], 0.3))
1 theorem: 1 proved — all as declared (0.3 s)
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from typing import Any, Dict, List, Optional, Sequence

import layoutproof

from .theorem import Theorem, TheoremOutcome

__all__ = ["table", "summary_line", "counts", "write_report", "exit_code"]


def _cases(o: TheoremOutcome) -> str:
    return f"{o.cases:,}" if o.cases is not None else "-"


def _time(s: float) -> str:
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.1f} s"


def table(outcomes: Sequence[TheoremOutcome]) -> str:
    """A fixed-width table: theorem, expected, status, verdict, method, cases, time."""
    rows = [("theorem", "expected", "status", "verdict", "method", "cases", "time")]
    for o in outcomes:
        rows.append((o.id, o.expected, o.status, o.verdict, o.method, _cases(o), _time(o.seconds)))
    w = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = []
    for i, r in enumerate(rows):
        cells = [r[k].rjust(w[k]) if k in (5, 6) else r[k].ljust(w[k]) for k in range(len(r))]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * x for x in w))
    return "\n".join(lines)


def counts(outcomes: Sequence[TheoremOutcome]) -> Dict[str, Any]:
    """Counts by status, verdict and method."""
    by_status: Dict[str, int] = {}
    by_verdict: Dict[str, int] = {}
    by_method: Dict[str, int] = {}
    for o in outcomes:
        by_status[o.status] = by_status.get(o.status, 0) + 1
        by_verdict[o.verdict] = by_verdict.get(o.verdict, 0) + 1
        by_method[o.method] = by_method.get(o.method, 0) + 1
    return {
        "theorems": len(outcomes),
        "status": by_status,
        "verdict": by_verdict,
        "method": by_method,
        "cases": sum(o.cases or 0 for o in outcomes),
        "obligations": sum(len(o.smt2) for o in outcomes),
    }


def summary_line(outcomes: Sequence[TheoremOutcome], seconds: float) -> str:
    c = counts(outcomes)
    n = c["theorems"]
    parts = [
        f"{c['status'][s]} {s}" for s in ("proved", "checked", "refuted", "unknown") if c["status"].get(s)
    ]
    head = f"{n} theorem{'s' if n != 1 else ''}: " + ", ".join(parts)
    bad = {v: k for v, k in c["verdict"].items() if v != "ok"}
    if not bad:
        tail = "all as declared"
    else:
        tail = "; ".join(f"{k} {v}" for v, k in sorted(bad.items()))
    neg = sum(1 for o in outcomes if o.expected == "refuted")
    if neg and not bad:
        tail += f" ({neg} refutations expected)"
    return f"{head} — {tail} ({seconds:.1f} s)"


def exit_code(outcomes: Sequence[TheoremOutcome]) -> int:
    """0: every theorem as declared; 1: a positive theorem refuted, a negative one not
    refuted (or by another counterexample), a check that raised, or a cross-check
    disagreement; 3: otherwise some theorem unknown or weaker than declared."""
    verdicts = {o.verdict for o in outcomes}
    disagree = any(e.get("agree") is False for o in outcomes for e in (o.cross_check or ()))
    if "FAILED" in verdicts or "error" in verdicts or disagree:
        return 1
    if verdicts & {"unknown", "weaker"}:
        return 3
    return 0


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(
    outdir: str,
    outcomes: Sequence[TheoremOutcome],
    theorems: Sequence[Theorem],
    seconds: float,
    jobs: int,
    cross: Optional[str] = None,
) -> Dict[str, Any]:
    """Write ``report.md``, ``report.json`` and ``smt2/<id>-<k>.smt2`` into ``outdir``
    (created; files of an earlier report there are replaced, other files left alone).
    Returns the JSON document."""

    os.makedirs(os.path.join(outdir, "smt2"), exist_ok=True)
    smtdir = os.path.join(outdir, "smt2")
    for f in os.listdir(smtdir):
        if f.endswith(".smt2"):
            os.remove(os.path.join(smtdir, f))
    by_id = {t.id: t for t in theorems}
    files: Dict[str, List[str]] = {}
    for o in outcomes:
        names = []
        for k, s in enumerate(o.smt2, 1):
            name = f"{o.id}-{k}.smt2"
            with open(os.path.join(smtdir, name), "w", encoding="utf-8") as fh:
                fh.write(f"; layoutproof theorem {o.id}, obligation {k}: {s['purpose']}\n")
                fh.write(f"; z3: {s['verdict']} (unsat: the claim holds)\n")
                fh.write(s["text"] if s["text"].endswith("\n") else s["text"] + "\n")
            names.append(f"smt2/{name}")
        files[o.id] = names
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    doc: Dict[str, Any] = {
        "layoutproof": layoutproof.__version__,
        "created": now,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "jobs": jobs,
        "seconds": seconds,
        "cross_check": cross,
        "summary": counts(outcomes),
        "summary_line": summary_line(outcomes, seconds),
        "exit_code": exit_code(outcomes),
        "theorems": [],
    }
    for o in outcomes:
        t = by_id.get(o.id)
        d = o.as_dict()
        d.pop("smt2", None)
        d["smt2_files"] = files[o.id]
        d["obligations"] = [{"purpose": s["purpose"], "verdict": s["verdict"]} for s in o.smt2]
        if t is not None:
            d.update(
                statement=t.statement,
                parameters=t.parameters,
                assumptions=list(t.assumptions),
                references=list(t.references),
                family=t.family,
                declared_method=t.method,
                group=t.group,
                expected_counterexample=t.expect.describe() if t.expect else None,
            )
        doc["theorems"].append(d)
    with open(os.path.join(outdir, "report.json"), "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    with open(os.path.join(outdir, "report.md"), "w", encoding="utf-8") as fh:
        fh.write(_markdown(doc, outcomes, by_id, files))
    return doc


def _markdown(
    doc: Dict[str, Any],
    outcomes: Sequence[TheoremOutcome],
    by_id: Dict[str, Theorem],
    files: Dict[str, List[str]],
) -> str:
    L: List[str] = []
    L.append("# layoutproof theorem report")
    L.append("")
    L.append(
        f"layoutproof {doc['layoutproof']}, Python {doc['python']}, {doc['platform']}; "
        f"{doc['created']}; {doc['jobs']} job(s)."
    )
    L.append("")
    L.append(f"**{doc['summary_line']}**")
    L.append("")
    s = doc["summary"]
    L.append(
        f"{s['cases']:,} exhaustive cases; {s['obligations']} SMT obligations (in `smt2/`)."
        + (f" Cross-checked with {doc['cross_check']}." if doc["cross_check"] else "")
    )
    L.append("")
    L.append(
        "Statuses: *proved* — for every value of the parameters (SymPy/Z3) or over a complete concrete "
        "domain; *checked* — exhaustively for every member of the stated bounded family (nothing claimed "
        "outside it); *refuted* — false, with a counterexample (expected for the negative theorems)."
    )
    L.append("")
    L.append("| theorem | expected | status | verdict | method | cases | time |")
    L.append("|---|---|---|---|---|--:|--:|")
    for o in outcomes:
        L.append(
            f"| `{o.id}` | {o.expected} | {o.status} | {o.verdict} | {o.method} | {_cases(o)} | "
            f"{_time(o.seconds)} |"
        )
    L.append("")
    for o in outcomes:
        t = by_id.get(o.id)
        L.append(f"## `{o.id}` — {_md_escape(o.title)}")
        L.append("")
        if t is not None:
            L.append(t.statement)
            L.append("")
        L.append(
            f"- **{o.status}** ({o.method}, {_time(o.seconds)}); expected {o.expected}: **{o.verdict}** — "
            f"{_md_escape(o.message)}"
        )
        if o.counterexample:
            L.append(f"- counterexample: {_md_escape(o.counterexample)}")
        if t is not None and t.family:
            L.append(f"- family: {_md_escape(t.family)}")
        for line in o.summaries:
            L.append(f"- {_md_escape(line)}")
        for r in o.results:  # symbolic execution: paths, obligations, unknowns and times per scope
            for note in r.get("notes", ()):
                L.append(f"  - {_md_escape(str(note))}")
        if files.get(o.id):
            L.append("- SMT-LIB: " + ", ".join(f"[{os.path.basename(f)}]({f})" for f in files[o.id]))
        if o.cross_check:
            for e in o.cross_check:
                agree = {True: "agrees", False: "**DISAGREES**", None: "undecided"}[e["agree"]]
                note = f" ({e['note']})" if e.get("note") else ""
                L.append(f"- cvc5 {agree}: z3 {e['z3']}, cvc5 {e['cvc5']} — {_md_escape(e['purpose'])}{note}")
        L.append("")
    return "\n".join(L)
