"""``layoutproof explain``: the sub-command, its exit statuses and renderings."""

from __future__ import annotations

import json
import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "layoutproof", "explain", *args], capture_output=True, text=True, timeout=120
    )


def test_refusal_text_exit_1(tmp_path):
    svg = tmp_path / "why.svg"
    r = run("composition((6,2):(1,7), (3,2):(2,3))", "--svg", str(svg))
    assert 'class="cell witness" data-row="2" data-col="1"' in svg.read_text()
    assert r.returncode == 1, r.stderr
    assert "condition: disjointness of B's modes in A" in r.stdout
    assert "witness: 5" in r.stdout and "*7*" in r.stdout
    assert "composition((7,2):(1,7), (3,2):(2,3)) = (3,2):(2,3)" in r.stdout


def test_json_and_steps():
    r = run("logical_divide(16:1, 4:2)", "--steps", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["status"] == "ok" and d["result"] == "(4,(2,2)):(2,(1,8))"
    assert [s["op"] for s in d["steps"]] == ["complement", "make_layout", "composition"]


def test_emit_and_assume():
    r = run("zipped_divide((M,N):(1,M), (64,32))", "--assume", "M % 64 == 0", "--emit", "dsl")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "M = cute.assume(M, divby=64)"
    r = run(
        "zipped_divide((M,N):(1,M), (64,32))", "--assume", "M % 64 == 0", "--emit", "cpp", "--static", "M"
    )
    assert r.stdout.strip() == "CUTE_STATIC_ASSERT_V((M % Int<64>{}) == Int<0>{});"
    r = run("composition((M,4):(1,M+1), 128:1)", "--emit", "python")
    assert r.returncode == 1
    ns: dict = {}
    exec(r.stdout, ns)
    ns["guard"](128)


def test_bad_input_exit_2():
    r = run("composition((6,2):(1,7), ")
    assert r.returncode == 2 and r.stderr.startswith("error:") and "Traceback" not in r.stderr
    r = run("composition((0,2):(1,7), 2:1)")
    assert r.returncode == 2 and "Traceback" not in r.stderr
