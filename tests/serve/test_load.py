"""A bounded load on loopback: 20 clients for a few seconds, cheap and expensive requests and
one client whose requests spend their whole budget.  No request fails and none outlasts its
budget; the latencies are measured by bench/serve_load.py, not asserted here."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest
from serve_fixtures import FAST_BUDGET_S, SLOW_BUDGET_S, server_url  # noqa: F401 (server_url: a fixture)

pytestmark = pytest.mark.slow


def test_mixed_load_no_failure_none_past_budget(server_url):
    from layoutproof.serve.load import run_load

    rep = asyncio.run(
        run_load(
            server_url,
            clients=20,
            seconds=3.0,
            expensive_clients=4,
            burners=1,
            fast_budget_s=FAST_BUDGET_S,
            slow_budget_s=SLOW_BUDGET_S,
            slack_s=1.0,
        )
    )
    assert rep.failures == 0, rep.errors
    assert rep.past_budget == 0
    assert rep.by_kind.get("cheap", 0) > 20 and rep.by_kind.get("expensive", 0) > 0
    assert rep.by_kind.get("burner", 0) >= 1 and rep.stopped_at_budget + rep.by_kind["burner"] >= 1
    with urllib.request.urlopen(server_url + "/api/stats", timeout=5) as r:
        stats = json.loads(r.read())
    assert stats["fast"]["died"] == 0 and stats["slow"]["died"] == 0
    # the server answers at once after the load
    with urllib.request.urlopen(server_url + "/api/health", timeout=5) as r:
        assert json.loads(r.read())["ok"] is True
