"""SMT-LIB2 export of the Z3 obligations behind a result, and their cross-check by cvc5.

Each obligation is the script ``facts and not claim`` in logic ALL (integer ``div`` and
``mod`` included): ``unsat`` means the claim holds, ``sat`` that a counterexample exists.
:func:`to_smtlib` writes one script, or several separated by ``(reset)``;
:func:`cross_check` gives each obligation of a result to another solver (cvc5, through
its Python API) and reports whether the verdicts agree.

>>> from layoutproof import Layout, symbols
>>> from layoutproof.verify import postcondition
>>> M, N = symbols("M N")
>>> r = postcondition("composition", Layout(4, N), Layout((M, N), (N, 1)), Layout(4, 1), assume="M % 4 == 0")
>>> r.status, r.method, [o.verdict for o in r.obligations]
('proved', 'z3', ['unsat'])
>>> text = to_smtlib(r)
>>> "(set-logic ALL)" in text and "(check-sat)" in text
True
>>> cross_check(r).agree
True
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

from layoutproof.errors import LayoutError

from .result import ProofObligation, Result

__all__ = ["to_smtlib", "cross_check", "CrossCheck", "run_cvc5"]


def _obligations(x: Any) -> List[Any]:
    if isinstance(x, Result):
        return list(x.obligations)
    if isinstance(x, (list, tuple)):
        out: List[Any] = []
        for e in x:
            out.extend(_obligations(e))
        return out
    if hasattr(x, "smt2"):
        return [x]
    raise LayoutError(
        "to_smtlib: expected a Result, a ProofObligation, a solver Verdict or a "
        f"layoutproof.symbolic.smt.Obligation, got {type(x).__name__}"
    )


def _script(ob: Any) -> str:
    text = ob.smt2()
    if isinstance(ob, ProofObligation):
        head = f"; {ob.purpose}\n; z3: {ob.verdict} (unsat: the claim holds)\n"
        return head + text
    return text


def to_smtlib(x: Any, path: Optional[str] = None) -> str:
    """The SMT-LIB2 text of an obligation (``layoutproof.symbolic.smt.Obligation``, a
    :class:`layoutproof.symbolic.solver.Verdict` or a
    :class:`~layoutproof.verify.ProofObligation`), or of every obligation of a
    :class:`~layoutproof.verify.Result` (scripts separated by ``(reset)``); written to
    ``path`` too when given.  A result decided without Z3 (exhaustively, or by SymPy
    alone) has no obligations: that raises LayoutError."""
    obs = _obligations(x)
    if not obs:
        how = f" (decided by {x.method})" if isinstance(x, Result) else ""
        raise LayoutError(f"no SMT obligations to export{how}")
    text = "\n(reset)\n".join(_script(o).rstrip("\n") for o in obs) + "\n"
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return text


def run_cvc5(text: str, timeout_ms: int = 10_000) -> List[str]:
    """Run an SMT-LIB2 script with cvc5's Python API; the answers of its ``check-sat``
    commands ("sat", "unsat", "unknown")."""
    import cvc5

    if hasattr(cvc5, "TermManager"):
        tm = cvc5.TermManager()
        slv = cvc5.Solver(tm)
        sm = cvc5.SymbolManager(tm)
    else:  # pragma: no cover - cvc5 < 1.2
        slv = cvc5.Solver()
        sm = cvc5.SymbolManager(slv)
    slv.setOption("tlimit-per", str(int(timeout_ms)))
    parser = cvc5.InputParser(slv, sm)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "layoutproof")
    answers: List[str] = []
    while True:
        cmd = parser.nextCommand()
        if cmd.isNull():
            break
        out = cmd.invoke(slv, sm)
        if cmd.getCommandName() == "check-sat":
            answers.append((str(out).split() or ["unknown"])[0])
    return answers


class CrossCheck:
    """The verdicts of a second solver on a result's obligations.

    Attributes:
        solver: the second solver's name.
        entries: one dict per obligation: ``purpose``, ``z3`` and ``other`` verdicts.
        agree: True when every obligation both solvers decided got the same verdict and
            none was left undecided by the second solver; False when some verdicts
            differ; None when the second solver decided none of them.
        seconds: the second solver's total time.
    """

    __slots__ = ("solver", "entries", "agree", "seconds")

    def __init__(self, solver: str, entries: List[Dict[str, str]], seconds: float) -> None:
        self.solver = solver
        self.entries = tuple(entries)
        self.seconds = seconds
        decided = [e for e in self.entries if e["other"] in ("sat", "unsat") and e["z3"] in ("sat", "unsat")]
        if any(e["z3"] != e["other"] for e in decided):
            self.agree: Optional[bool] = False
        elif decided and len(decided) == sum(1 for e in self.entries if e["z3"] in ("sat", "unsat")):
            self.agree = True
        else:
            self.agree = None

    def __bool__(self) -> bool:
        return self.agree is True

    def __str__(self) -> str:
        verdict = {True: "agrees", False: "DISAGREES", None: "undecided"}[self.agree]
        lines = [
            f"{self.solver} {verdict} on {len(self.entries)} obligation(s) ({self.seconds * 1e3:.1f} ms)"
        ]
        for e in self.entries:
            lines.append(f"  {e['purpose']}: z3 {e['z3']}, {self.solver} {e['other']}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"CrossCheck({self.solver!r}, agree={self.agree!r}, obligations={len(self.entries)})"


def cross_check(x: Any, solver: str = "cvc5", *, timeout_ms: Optional[int] = None) -> CrossCheck:
    """Re-check every Z3 obligation of ``x`` (a Result, an obligation or a list of them)
    with another solver; ``.agree`` says whether the verdicts are the same.  Only cvc5 is
    supported."""
    if solver != "cvc5":
        raise LayoutError(f"cross_check: unknown solver {solver!r} (supported: cvc5)")
    from ._solve import timeout_of

    tmo = max(timeout_of(timeout_ms), 1000)
    entries = []
    t0 = time.perf_counter()
    for ob in _obligations(x):
        answers = run_cvc5(ob.smt2(), tmo)
        other = answers[-1] if answers else "unknown"
        z3v = getattr(ob, "verdict", "unknown")
        entries.append({"purpose": getattr(ob, "purpose", "obligation"), "z3": z3v, "other": other})
    return CrossCheck(solver, entries, time.perf_counter() - t0)
