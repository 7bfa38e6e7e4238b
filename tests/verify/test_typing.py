"""The verify API as a user's type checker sees it: a script that uses it type-checks with
mypy (through tools/typecheck.py's link tree of the package), and a script with type
errors is reported, error by error -- so the records (Result, Counterexample,
ProofObligation) have real, read-only attribute types, not ``Any``.
"""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_SCRIPT = '''
"""A user's script: checks, records, strategies and a theorem."""

from typing import Any, Dict, List, Optional, Tuple

from hypothesis import given, settings
from hypothesis.strategies import SearchStrategy

from layoutproof import Layout, composition, size
from layoutproof import verify
from layoutproof.verify import Counterexample, ProofObligation, Result, strategies
from layoutproof.verify.theorem import Family, theorem

A = Layout((4, 2), (2, 1))
B = Layout((4, 2), (1, 4))

r: Result = verify.equal(A, B)
status: str = r.status
method: str = r.method
claim: str = r.claim
seconds: float = r.seconds
accepted: bool = bool(r) or r.ok or r.proved or r.refuted
cex: Optional[Counterexample] = r.counterexample
if cex is not None:
    coordinate: Any = cex.coordinate
    detail: Optional[str] = cex.detail
    assignment: Optional[Dict[str, int]] = cex.assignment
    where: str = str(cex)
    cex_fields: Dict[str, Any] = cex.as_dict()
reason: Optional[str] = r.reason
bounds: Optional[Dict[str, Tuple[int, int]]] = r.bounds
cases: Optional[int] = r.cases
notes: Tuple[str, ...] = r.notes
assumptions: Tuple[str, ...] = r.assumptions
obligations: Tuple[ProofObligation, ...] = r.obligations
for ob in obligations:
    purpose: str = ob.purpose
    verdict: str = ob.verdict
    facts: Tuple[Any, ...] = ob.facts
explained: str = r.explain()
record: Dict[str, Any] = r.as_dict()
renamed: Result = r.replace(claim="A == B")

adm: Result = verify.admissible("composition", A, B)
condition: Optional[str] = adm.condition
post: Result = verify.postcondition("composition", composition(A, B), A, B)

layouts: SearchStrategy[Layout] = strategies.layouts(max_size=16, kind="nonneg")
pairs: SearchStrategy[Tuple[Layout, Layout]] = strategies.composition_pairs(max_size=16)
drawn: List[Any] = strategies.sample(layouts, 5)


@settings(max_examples=5, database=None)
@given(pairs)
def test_composition_keeps_the_size_of_b(pair: Tuple[Layout, Layout]) -> None:
    a, b = pair
    assert size(composition(a, b)) == size(b)


@theorem(Family.layouts(rank=2, extent=2, stride=2), examples=0)
def test_equal_to_itself(L: Layout) -> None:
    assert verify.equal(L, L)


test_composition_keeps_the_size_of_b()
test_equal_to_itself()
RESULT = (status, adm.status, post.status, len(drawn))
'''

# (line, error code, a piece of mypy's message) for each deliberate error
BAD_SCRIPT = """
from layoutproof import Layout
from layoutproof import verify

r = verify.equal(Layout(4, 1), Layout(4, 1))
r.statuss
n: int = r.status
r.status = "proved"
r.counterexample.coordinate
ob = r.obligations[0]
ob.verdict = "unsat"
"""
EXPECTED = [
    (6, "attr-defined", '"Result" has no attribute "statuss"'),
    (
        7,
        "assignment",
        "expression has type \"Literal['proved', 'checked', 'refuted', 'unknown', 'vacuous']\", "
        'variable has type "int"',
    ),
    (8, "misc", '"status" defined in "Result" is read-only'),
    (9, "union-attr", 'Item "None" of'),
    (11, "misc", '"verdict" defined in "ProofObligation" is read-only'),
]

ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<msg>.*?)\s+\[(?P<code>[a-z-]+)\]$")


def _mypy(*files: Path) -> dict:
    """mypy over ``files`` with the package importable (tools/typecheck.py), the package's
    own modules checked but not reported (a user's view): file name -> [(line, code, msg)]."""
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "typecheck.py"),
            "--follow-imports=silent",
            "--",
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    out: dict = {f.name: [] for f in files}
    for line in proc.stdout.splitlines():
        m = ERROR.match(line.strip())
        if m:
            name = Path(m["file"]).name
            assert name in out, f"an error outside the scripts: {line}"
            out[name].append((int(m["line"]), m["code"], m["msg"]))
    # mypy exits 1 with errors, 0 without; anything else (2: a crash, bad config) is a failure
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return out


@pytest.mark.slow
def test_a_users_script_type_checks_and_a_wrong_one_is_reported(tmp_path):
    good = tmp_path / "user_script.py"
    good.write_text(textwrap.dedent(USER_SCRIPT))
    bad = tmp_path / "user_mistakes.py"
    bad.write_text(textwrap.dedent(BAD_SCRIPT))
    errors = _mypy(good, bad)
    assert errors["user_script.py"] == []
    got = errors["user_mistakes.py"]
    for line, code, piece in EXPECTED:
        assert any(ln == line and c == code and piece in msg for ln, c, msg in got), (
            f"mypy did not report line {line} [{code}] {piece!r}; it reported {got}"
        )
    assert len(got) == len(EXPECTED), got
    # the script the type checker accepted is a working program too
    ns = runpy.run_path(str(good))
    assert ns["RESULT"] == ("refuted", "proved", "proved", 5)
