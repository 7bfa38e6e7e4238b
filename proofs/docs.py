"""docs/theorems.md, generated from the catalog.

    python -m layoutproof.proofs.docs docs/theorems.md          # write it
    python -m layoutproof.proofs.docs --check docs/theorems.md  # exit 1 when stale
    layoutproof prove --write-docs docs/theorems.md             # the same as the first

The page holds no timings or results, only the catalog's declarations (statement,
parameters, assumptions, family, method, expected status, references), so it changes only
when the catalog does; a test fails when the committed page is stale.

>>> text = render()
>>> text.startswith("# Theorem catalog")
True
>>> "neg.shah-bymode-composition" in text
True
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence, Tuple

from .catalog import THEOREMS
from .theorem import Theorem

__all__ = ["render", "write", "main", "every_rank"]

_STATUS_WORDS = {
    "proved": "proved — for every value of the parameters, or over a complete concrete domain",
    "checked": "checked — exhaustively, for every member of the stated bounded family",
    "refuted": "refuted — the claim is false; the counterexample below must be found",
}


def _anchorless(text: str) -> str:
    return text.replace("\n", " ").strip()


_SYMBOLIC_INTRO = [
    "These theorems are proved for *every value* of the symbols (extents, strides, M; B, M, S of a "
    "swizzle) by symbolic execution of the library's own symbolic path (`symops`): each operand's "
    "every extent and stride is a fresh symbol, each condition the path's facts leave undecided is a "
    "choice point (both outcomes are explored, depth first, within a path budget), and every path that "
    "returns a result gets one Z3 obligation: its path condition, the quantified coordinate digits, and "
    "the negated post-condition. Division and remainder are quotient/remainder variables, the path's "
    "equalities and divisibilities are solved by substitution (`b | a` becomes `a = b*k`), and a layout "
    "is evaluated through an explicit digit placement whose correctness is part of the obligation. "
    "Paths where the operation raises (inadmissible, or a condition it refuses to decide) return "
    "nothing and need no obligation; the report counts them -- except in the admissibility theorems "
    "(`*-admissible-iff-chain`), whose raising paths get the obligation that the chain is violated, "
    "and where a path refused for any other reason makes the theorem unknown. A path Z3 leaves "
    "undecided makes the theorem *unknown*, never proved; a satisfiable obligation is a refutation "
    "only when its model, substituted into the operands, fails the post-condition on integers. Every "
    "Z3 call goes through the package's one solver driver (`layoutproof.symbolic.solver`), and every "
    "path (the operation's run, the SymPy simplification of its facts, its obligations) runs under a "
    "time budget (`symexec.PATH_SECONDS`): past it the path is unknown with the reason *timeout*.",
    "",
    "Scope: the flat rank of each operand is fixed per run, unless the theorem is proved by "
    "induction over the operation's fold; *Family* below names what each job proves "
    "(`layoutproof prove`, which must finish within a minute, and `layoutproof prove --all`).",
]


def every_rank(theorems: Sequence[Theorem]) -> Tuple[List[str], List[str]]:
    """The ids of ``theorems`` proved at every rank, read from their declared scope
    (*Family*): those whose family begins with "every rank" (induction over the whole
    operation), and those where one operand is "of every rank" and the others are bounded.

    >>> from .catalog import THEOREMS
    >>> whole, one = every_rank(THEOREMS)
    >>> "sym.coalesce-every-rank" in whole, "sym.coalesce-extended" in whole + one
    (True, False)
    """
    whole = [t.id for t in theorems if t.family.startswith("every rank")]
    one = [t.id for t in theorems if t.id not in whole and "of every rank" in t.family]
    return whole, one


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(f"`{i}`" for i in ids)


def _symbolic_intro(theorems: Sequence[Theorem]) -> List[str]:
    """The group's preamble; its list of every-rank theorems comes from their Family."""
    whole, one = every_rank(theorems)
    text = [
        f"Proved for every rank ({len(whole)}; induction over the operation's fold, its step "
        "function explored on a symbolic state; the Family line names the lemmas and what remains "
        f"by inspection): {_ids(whole) or 'none'}."
    ]
    if one:
        text.append(
            f"Proved for one operand of every rank, the others' ranks bounded as the Family line says "
            f"({len(one)}): {_ids(one)}."
        )
    text.append(
        "The others are proved for the ranks (or values) their Family line states. The bounded "
        "exhaustive theorems of the other groups stay as a supplement (concrete layouts, nested "
        "profiles, zero strides), reported as *checked*."
    )
    return _SYMBOLIC_INTRO + ["", " ".join(text), ""]


def render(theorems: Optional[Sequence[Theorem]] = None) -> str:
    """The Markdown page for ``theorems`` (the whole catalog by default)."""

    ths = list(THEOREMS if theorems is None else theorems)
    groups: List[str] = list(dict.fromkeys(t.group for t in ths))
    n_pos = sum(1 for t in ths if not t.negative)
    L: List[str] = []
    L.append("# Theorem catalog")
    L.append("")
    L.append(
        "<!-- Generated by `python -m layoutproof.proofs.docs docs/theorems.md` from the catalog in "
        "proofs/catalog/; do not edit by hand (tests/proofs/test_proofs.py fails when it is stale). -->"
    )
    L.append("")
    L.append(
        f"The catalog holds {len(ths)} theorems of the CuTe layout algebra: {n_pos} positive theorems, "
        f"each expected *proved* or *checked*, and {len(ths) - n_pos} negative theorems, false claims "
        "each expected to be *refuted* by a named counterexample. `layoutproof prove` checks them all "
        "and writes a report (`report.md`, `report.json` and the SMT-LIB2 file of every Z3 obligation); "
        "`layoutproof prove --filter TEXT` checks some, `--cross-check cvc5` re-checks the obligations "
        "with cvc5."
    )
    L.append("")
    L.append("What the statuses promise:")
    L.append("")
    L.append(
        "- **proved**: for every value of the parameters allowed by the assumptions (SymPy, or Z3 with "
        "its query exported), or exhaustively over a concrete domain, which is complete;"
    )
    L.append(
        "- **checked**: exhaustively, for every member of the bounded family stated with the theorem — "
        "nothing is claimed outside it, and random testing never counts;"
    )
    L.append(
        "- **refuted**: the claim is false; the check finds a counterexample and the catalog compares it "
        "with the one named here."
    )
    L.append("")
    L.append(
        "Â denotes A with its last mode unbounded (how CuTe composition reads past size(A)); "
        "`∘` is composition, `≤` compatibility of shapes. The references T1–T12 are the theorems "
        "with side conditions listed in the project's REFERENCES; the seeds are the documents the "
        "project was created from. The semantics behind each statement are in "
        "[Semantics](semantics.md), and the verifier in [Verification](verify.md)."
    )
    L.append("")
    L.append("| group | theorems | proved | checked | refuted |")
    L.append("|---|--:|--:|--:|--:|")
    for g in groups:
        gs = [t for t in ths if t.group == g]
        c = {s: sum(1 for t in gs if t.expected == s) for s in ("proved", "checked", "refuted")}
        L.append(f"| {g} | {len(gs)} | {c['proved']} | {c['checked']} | {c['refuted']} |")
    L.append("")
    for g in groups:
        L.append(f"## {g}")
        L.append("")
        if g.startswith("All values"):
            L += _symbolic_intro([t for t in ths if t.group == g])
        L.append("| id | title | expected | method |")
        L.append("|---|---|---|---|")
        for t in ths:
            if t.group == g:
                L.append(f"| `{t.id}` | {t.title} | {t.expected} | {t.method} |")
        L.append("")
        for t in ths:
            if t.group != g:
                continue
            L.append(f"### `{t.id}`")
            L.append("")
            L.append(f"**{t.title}.** {_anchorless(t.statement)}")
            L.append("")
            if t.parameters:
                L.append(f"- Parameters: {t.parameters}")
            if t.assumptions:
                L.append("- Assumptions: " + "; ".join(f"`{a}`" for a in t.assumptions))
            if t.family:
                L.append(f"- Family: {t.family}")
            L.append(f"- Method: {t.method}")
            L.append(f"- Expected: {_STATUS_WORDS[t.expected]}")
            if t.expect is not None:
                L.append(f"- Expected counterexample: {t.expect.describe()}")
            if t.references:
                L.append("- References: " + "; ".join(t.references))
            L.append("")
    return "\n".join(L).rstrip("\n") + "\n"


def write(path: str, theorems: Optional[Sequence[Theorem]] = None) -> bool:
    """Write the page to ``path``; True when its content changed."""
    text = render(theorems)
    try:
        with open(path, encoding="utf-8") as f:
            old = f.read()
    except FileNotFoundError:
        old = None
    if old == text:
        return False
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return True


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m layoutproof.proofs.docs",
        description="Write docs/theorems.md from the theorem catalog.",
    )
    p.add_argument("path", nargs="?", default="docs/theorems.md")
    p.add_argument(
        "--check", action="store_true", help="exit 1 when the file is not up to date; write nothing"
    )
    a = p.parse_args(argv)
    if a.check:
        try:
            with open(a.path, encoding="utf-8") as f:
                ok = f.read() == render()
        except FileNotFoundError:
            ok = False
        print(f"{a.path}: {'up to date' if ok else 'stale (regenerate it)'}")
        return 0 if ok else 1
    changed = write(a.path)
    print(f"{'wrote' if changed else 'unchanged'} {a.path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
