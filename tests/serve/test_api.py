"""The playground's JSON API through Starlette's test client: answers checked against the
library computed directly (values, pictures, verdicts, counterexamples, exports)."""

from __future__ import annotations

import re

import pytest
from serve_fixtures import client  # noqa: F401 (fixtures)

from layoutproof import Layout, composition, verify
from layoutproof.cli import eval_names
from layoutproof.interop import to_cpp, to_dsl, to_pycute
from layoutproof.notation import evaluate


def post(client, route, body):
    return client.post("/api/" + route, json=body)


def cells(svg):
    return [
        {k: int(v) for k, v in re.findall(r'data-(\w+)="(-?\d+)"', g)}
        for g in re.findall(r'<g class="cell[^"]*"([^>]*)>', svg)
    ]


def test_page_and_static_files(client):
    r = client.get("/")
    assert r.status_code == 200 and "layoutproof playground" in r.text
    assert "script-src 'self'" in r.headers["content-security-policy"]
    for f in ("app.js", "style.css"):
        assert client.get("/static/" + f).status_code == 200
    # no CDN, no external resource: the page works offline
    for f in ("/", "/static/app.js", "/static/style.css"):
        assert not re.search(r"https?://", client.get(f).text)


def test_health_and_analyses(client):
    assert client.get("/api/health").json()["ok"] is True
    names = [a["name"] for a in client.get("/api/analyses").json()["analyses"]]
    assert {"banks", "coalesce"} <= set(names)


@pytest.mark.parametrize(
    "expr",
    [
        "composition((4,(2,2)):(2,(1,8)), (2,4):(1,2))",
        "logical_divide(16:1, 4:2)",
        "blocked_product((2,2):(1,2), (4,4))",
        "(8,4):(4,1)",
        "complement((2,2):(1,6), 24)",
    ],
)
def test_eval_matches_the_library_and_draws_every_offset(client, expr):
    r = post(client, "eval", {"expr": expr})
    assert r.status_code == 200, r.text
    d = r.json()
    L = evaluate(expr, eval_names())
    assert d["value"] == str(L)
    cs = cells(d["svg"])
    assert len(cs) == L.size
    # every cell's offset is the layout's value at coordinate row + col * rows
    rows = max(c["row"] for c in cs) + 1
    for c in cs:
        assert c["offset"] == L(c["row"] + c["col"] * rows)


def test_eval_symbolic_drawn_at_values(client):
    d = post(client, "eval", {"expr": "(M,N):(1,M)"}).json()
    assert d["symbols"] == ["M", "N"] and "svg" not in d and "give values" in d["notes"][0]
    d = post(client, "eval", {"expr": "(M,N):(1,M)", "values": "M=4, N=3"}).json()
    assert sorted(c["offset"] for c in cells(d["svg"])) == list(range(12))


def test_eval_assumptions_and_foreign_spellings(client):
    d = post(client, "eval", {"expr": "zipped_divide((M,N):(1,M), (64,32))", "assume": "M % 64 == 0"}).json()
    assert d["value"].startswith("((64,32),(M/64,")
    r = post(client, "eval", {"expr": "zipped_divide((M,N):(1,M), (64,32))"})
    assert r.status_code in (200, 422)
    d = post(
        client,
        "eval",
        {"expr": "cute::Layout<cute::tuple<cute::C<4>, cute::C<2>>, cute::tuple<cute::C<1>, cute::C<4>>>"},
    ).json()
    assert d["value"] == "(4,2):(1,4)" and d["native"]


def test_eval_tv_and_swizzle(client):
    tv = Layout(((2, 2), 2), ((2, 4), 1))
    d = post(client, "eval", {"expr": str(tv), "tv": "(2,4)"}).json()
    cs = cells(d["svg"])
    assert d["picture"] == "tv" and len(cs) == 8
    for c in cs:  # the cell of (thread, value) is the tile index tv(t, v)
        assert tv(c["thread"], c["value"]) == c["row"] + 2 * c["col"] == c["index"]
    d = post(client, "eval", {"expr": "Sw<3,3,3> o (8,64):(64,1)"}).json()
    assert d["kind"] == "composed" and "before_svg" in d
    before = {(c["row"], c["col"]): c["offset"] for c in cells(d["before_svg"])}
    after = {(c["row"], c["col"]): c["offset"] for c in cells(d["svg"])}
    assert before[(1, 0)] == 64 and after[(1, 0)] == 64 ^ (1 << 3)
    assert sorted(after.values()) == sorted(before.values())  # a swizzle permutes


def test_check_equal_refuted_marks_the_first_difference(client):
    A, B = Layout((4, 8), (8, 1)), Layout((4, 8), (1, 4))
    d = post(client, "check", {"kind": "equal", "expr": str(A), "other": str(B)}).json()
    first = next(i for i in range(32) if A(i) != B(i))
    assert d["status"] == "refuted" and d["counterexample"]["coordinate"] == first
    assert d["witness_cell"] == [first % 4, first // 4] and d["witness_layout"] == str(A)
    assert d["witness_svg"].count('class="cell witness"') == 1


def test_check_equal_symbolic_proved_and_unknown_never_claimed(client):
    d = post(client, "check", {"kind": "equal", "expr": "coalesce((M,N):(1,M))", "other": "M*N:1"}).json()
    assert d["status"] == "proved"
    d = post(client, "check", {"kind": "equal", "expr": "(M,N):(1,M)", "other": "(M,N):(N,1)"}).json()
    assert d["status"] == "refuted" and d["counterexample"]["assignment"]
    asg = d["counterexample"]["assignment"]
    L1 = Layout((asg["M"], asg["N"]), (1, asg["M"]))
    L2 = Layout((asg["M"], asg["N"]), (asg["N"], 1))
    assert L1(d["counterexample"]["coordinate"]) != L2(d["counterexample"]["coordinate"])
    # the counterexample drawn at its values: the left side, its cell marked
    assert d["witness_layout"] == str(L1) and d["witness_svg"].count('class="cell witness"') == 1


def test_check_admissible_and_postcondition(client):
    shah = "composition((6,2):(1,7), (3,2):(2,3))"
    d = post(client, "check", {"kind": "admissible", "expr": shah}).json()
    assert d["status"] == "refuted" and d["condition"] == "disjointness of B's modes in A"
    assert d["witness_cell"] == [2, 1] and d["witness_layout"] == "(3,2):(2,3)"
    d = post(client, "check", {"kind": "admissible", "expr": "composition((4,2):(1,4), 8:1)"}).json()
    assert d["status"] == "proved"
    d = post(client, "check", {"kind": "post", "expr": "right_inverse((4,2):(2,1))"}).json()
    assert d["status"] == "proved"
    ref = verify.postcondition("right_inverse", Layout((2, 4), (4, 1)), Layout((4, 2), (2, 1)))
    assert ref.status == "proved"
    r = post(client, "check", {"kind": "post", "expr": shah})  # refused: the error's condition and witness
    assert r.status_code == 422
    e = r.json()["error"]
    assert (
        e["type"] == "InadmissibleError"
        and e["condition"] == "disjointness of B's modes in A"
        and e["witness"] == 5
    )
    r = post(client, "check", {"kind": "post", "expr": "(4,2):(1,4)"})
    assert r.status_code == 422 and "post-condition" in r.json()["error"]["message"]


def test_explain_with_repairs(client):
    d = post(client, "explain", {"expr": "composition((6,2):(1,7), (3,2):(2,3))"}).json()
    assert d["status"] == "refused" and d["witness"] == 5 and d["repairs"]
    rep = d["repairs"][0]
    # the offered repair runs and meets the post-condition
    fixed = evaluate(rep["expression"], eval_names())
    assert rep["result"] == str(fixed)
    assert 'class="cell witness"' in d["svg"]
    d = post(client, "explain", {"expr": "logical_divide(16:1, 4:2)"}).json()
    assert d["status"] == "ok" and len(d["steps"]) == 3


def test_analyses(client):
    d = post(client, "analyze", {"analysis": "banks", "fields": {}}).json()
    assert d["status"] == "proved" and d["max_ways"] == 1
    bad = {"data": "(32,32):(32,1)", "access": "(32,32):(1,32)", "instruction": "ld.shared.b32", "bits": 32}
    d = post(client, "analyze", {"analysis": "banks", "fields": bad}).json()
    assert d["status"] == "refuted" and d["max_ways"] == 32 and d["witness"]["bank"] == 0
    assert "svg" in d
    d = post(client, "analyze", {"analysis": "coalesce", "fields": {"access": "(32,32):(1,32)"}}).json()
    assert d["status"] == "refuted" and d["efficiency"] < 1
    r = post(client, "analyze", {"analysis": "nope", "fields": {}})
    assert r.status_code == 422 and "unknown analysis" in r.json()["error"]["message"]
    r = post(client, "analyze", {"analysis": "banks", "fields": {"bits": "x"}})
    assert r.status_code == 422


@pytest.mark.parametrize("expr", ["(4,8):(1,4)", "((2,2),(4,2)):((1,16),(2,4))", "Sw<2,1,3> o (4,16):(16,1)"])
def test_export_round_trips(client, expr):
    pytest.importorskip("pycute")
    d = post(client, "export", {"expr": expr}).json()
    from layoutproof.interop import rewrite_foreign

    L = evaluate(rewrite_foreign(expr)[0], eval_names())
    assert d["cpp"]["code"] == to_cpp(L) and d["dsl"]["code"] == to_dsl(L)
    ns: dict = {}
    exec(d["pycute"]["code"], ns)  # the test runs the generated code; the server never does
    ref = to_pycute(L)
    assert (
        [ns["L"](i) for i in range(L.size)]
        == [ref(i) for i in range(L.size)]
        == [L(i) for i in range(L.size)]
    )
    assert "code" in d["triton"] or "error" in d["triton"]


def test_export_symbolic_says_why(client):
    d = post(client, "export", {"expr": "(M,8):(1,M)"}).json()
    assert "M" in d["cpp"]["code"] and "error" in d["pycute"] and "error" in d["triton"]


def test_composition_value_matches(client):
    A, B = Layout((4, (2, 2)), (2, (1, 8))), Layout((2, 4), (1, 2))
    d = post(client, "eval", {"expr": f"composition({A}, {B})"}).json()
    assert d["value"] == str(composition(A, B))


def test_stats(client):
    s = client.get("/api/stats").json()
    assert set(s) == {"fast", "slow"} and s["fast"]["done"] >= 0


def test_registry_entries_run_with_their_defaults(client):
    """Every registered analysis runs on its form's defaults (with the facts a symbolic one
    needs) and answers with an Outcome status and its one-line summary."""
    facts = ["K % 64 == 0", "M % 64 == 0", "M <= 65536", "N <= 65536"]
    for a in client.get("/api/analyses").json()["analyses"]:
        r = post(client, "analyze", {"analysis": a["name"], "fields": {}, "assume": facts})
        assert r.status_code == 200, (a["name"], r.text[:300])
        d = r.json()
        assert d["status"] in ("proved", "refuted", "unknown") and d["line"].startswith(f"[{d['status']}]")


def test_width_and_tma_entries(client):
    names = {a["name"] for a in client.get("/api/analyses").json()["analyses"]}
    if "width" in names:
        d = post(
            client, "analyze", {"analysis": "width", "fields": {}, "assume": ["M <= 65536", "N <= 65536"]}
        ).json()
        assert d["status"] == "refuted" and "4294967296" in d["line"]
        d = post(
            client, "analyze", {"analysis": "width", "fields": {}, "assume": ["M <= 1024", "N <= 1024"]}
        ).json()
        assert d["status"] == "proved"
    if "tma" in names:
        facts = ["K % 64 == 0", "M % 64 == 0"]
        d = post(client, "analyze", {"analysis": "tma", "fields": {}, "assume": facts}).json()
        assert d["status"] == "refuted" and "K <= 2**32" in d["line"]  # an unbounded extent
        facts += ["K <= 65536", "M <= 65536"]
        d = post(client, "analyze", {"analysis": "tma", "fields": {}, "assume": facts}).json()
        assert d["status"] == "proved" and "cuTensorMapEncodeTiled" in d["cpp"]


def test_a_bare_shape_is_its_compact_layout_and_a_number_is_a_value(client):
    d = post(client, "eval", {"expr": "(4,8)"}).json()
    assert d["value"] == "(4,8):(1,4)" and len(cells(d["svg"])) == 32
    d = post(client, "eval", {"expr": "size((4,8):(1,4))"}).json()
    assert d["value"] == "32" and d["kind"] == "value" and "svg" not in d
