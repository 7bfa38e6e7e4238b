"""A load generator for the playground: concurrent clients on one event loop (httpx), each
a closed loop of requests with a think time, mixing cheap requests (evaluate and draw a
random small layout, export it) with expensive ones (symbolic proofs, explanations with
repairs, analyses) and, optionally, heavy ones: a symbolic equality SymPy cannot settle,
which falls back to a bounded check over every assignment of its six symbols (seconds of
CPU; stopped at the budget where the budget is shorter).

:func:`run_load` returns a :class:`LoadReport`: requests, failures (an answer other than the
one expected, or none), requests past their lane's budget, and latency percentiles of the
cheap requests -- all of them, and those sent while an expensive request was in flight.
``bench/serve_load.py`` runs it against a fresh server and prints the figures.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["LoadReport", "run_load", "percentile"]

#: a symbolic equality SymPy cannot settle: a bounded check over every assignment (seconds)
BURNER = {
    "kind": "equal",
    "expr": "(floor(M/3)*ceiling(N/7)+Mod(M*N*K,11)+Mod(P*Q,13),Min(M,N)*Max(K,P)*Min(Q,R))"
    ":(1,floor(M/3)*ceiling(N/7)+Mod(M*N*K,11)+Mod(P*Q,13))",
    "other": "(floor(M/3)*ceiling(N/7)+Mod(K*N*M,11)+Mod(P*Q,13),Min(N,M)*Max(K,P)*Min(Q,R))"
    ":(1,floor(M/3)*ceiling(N/7)+Mod(K*N*M,11)+Mod(P*Q,13))",
    "bound": 64,
}

_PROOFS: List[Tuple[str, Dict[str, Any]]] = [
    ("check", {"kind": "equal", "expr": "coalesce((M,N):(1,M))", "other": "M*N:1"}),
    (
        "check",
        {
            "kind": "equal",
            "expr": "composition((M,N):(1,M), (4,2):(1,4))",
            "other": "(4,2):(1,4)",
            "assume": ["M % 8 == 0"],
        },
    ),
    (
        "check",
        {"kind": "admissible", "expr": "composition((M,N):(1,M), (4,2):(1,8))", "assume": ["M % 8 == 0"]},
    ),
    ("check", {"kind": "post", "expr": "complement((4,2):(1,16), 128)"}),
    ("check", {"kind": "equal", "expr": "(M,N):(1,M)", "other": "(M,N):(N,1)"}),
    ("explain", {"expr": "composition((6,2):(1,7), (3,2):(2,3))"}),
    ("explain", {"expr": "zipped_divide((M,N):(1,M), (64,32))"}),
    ("analyze", {"analysis": "banks", "fields": {}}),
    (
        "analyze",
        {
            "analysis": "banks",
            "fields": {
                "data": "(32,32):(32,1)",
                "access": "(32,32):(1,32)",
                "instruction": "ld.shared.b32",
                "bits": 32,
            },
        },
    ),
    ("analyze", {"analysis": "coalesce", "fields": {}}),
]


def percentile(xs: List[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``xs``; 0.0 for none."""
    if not xs:
        return 0.0
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(q / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


@dataclass
class LoadReport:
    """What a load run measured (latencies in seconds)."""

    clients: int
    seconds: float
    requests: int = 0
    failures: int = 0
    past_budget: int = 0
    stopped_at_budget: int = 0
    by_kind: Dict[str, int] = field(default_factory=dict)
    cheap: List[float] = field(default_factory=list)
    cheap_during_expensive: List[float] = field(default_factory=list)
    expensive: List[float] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)

    def figures(self) -> Dict[str, Any]:
        ms = lambda x: round(1000 * x, 1)  # noqa: E731
        return {
            "clients": self.clients,
            "seconds": round(self.seconds, 1),
            "requests": self.requests,
            "requests_per_s": round(self.requests / self.seconds, 1) if self.seconds else 0.0,
            "failures": self.failures,
            "past_budget": self.past_budget,
            "stopped_at_budget": self.stopped_at_budget,
            "by_kind": dict(self.by_kind),
            "cheap_p50_ms": ms(percentile(self.cheap, 50)),
            "cheap_p99_ms": ms(percentile(self.cheap, 99)),
            "cheap_max_ms": ms(max(self.cheap, default=0.0)),
            "cheap_during_expensive": len(self.cheap_during_expensive),
            "cheap_during_expensive_p50_ms": ms(percentile(self.cheap_during_expensive, 50)),
            "cheap_during_expensive_p99_ms": ms(percentile(self.cheap_during_expensive, 99)),
            "expensive_p50_ms": ms(percentile(self.expensive, 50)),
            "expensive_p99_ms": ms(percentile(self.expensive, 99)),
        }


def _random_layout(rng: random.Random) -> str:
    m, n = rng.randint(1, 16), rng.randint(1, 16)
    if rng.random() < 0.5:
        return f"({m},{n}):(1,{m})" if rng.random() < 0.5 else f"({m},{n}):({n},1)"
    return f"({m},{n}):({rng.randint(0, 9)},{rng.randint(0, 40)})"


async def run_load(
    url: str,
    *,
    clients: int = 50,
    seconds: float = 20.0,
    expensive_clients: int = 10,
    burners: int = 1,
    cheap_think: Tuple[float, float] = (0.25, 0.75),
    expensive_think: Tuple[float, float] = (1.0, 2.0),
    fast_budget_s: float = 5.0,
    slow_budget_s: float = 20.0,
    slack_s: float = 0.5,
    seed: int = 0,
) -> LoadReport:
    """Run ``clients`` clients against ``url`` for ``seconds``: ``expensive_clients`` of them
    send proofs, explanations and analyses (``burners`` of those send only requests that
    spend their whole budget), the rest cheap requests.  A request is past its budget when
    its answer took longer than its lane's budget plus ``slack_s``."""
    import httpx

    rep = LoadReport(clients, seconds)
    inflight = {"expensive": 0}
    stop_at = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients + 8, max_keepalive_connections=clients + 8)

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=slow_budget_s + 30) as http:

        async def one(
            route: str, body: Dict[str, Any], kind: str, expect: Tuple[int, ...], budget: float
        ) -> None:
            during = inflight["expensive"] > 0
            if kind != "cheap":
                inflight["expensive"] += 1
            t0 = time.perf_counter()
            try:
                r = await http.post("/api/" + route, json=body)
                status: Optional[int] = r.status_code
                data = r.json()
            except Exception as e:  # noqa: BLE001 - a request that got no answer is a failure
                status, data = None, {"error": {"type": type(e).__name__, "message": str(e)}}
            dt = time.perf_counter() - t0
            if kind != "cheap":
                inflight["expensive"] -= 1
            rep.requests += 1
            rep.by_kind[kind] = rep.by_kind.get(kind, 0) + 1
            if status not in expect:
                rep.failures += 1
                if len(rep.errors) < 20:
                    rep.errors.append(f"{route} {status}: {str(data)[:200]}")
            if (
                status == 422
                and isinstance(data, dict)
                and data.get("error", {}).get("type") == "BudgetExceeded"
            ):
                rep.stopped_at_budget += 1
            if dt > budget + slack_s:
                rep.past_budget += 1
            if kind == "cheap":
                rep.cheap.append(dt)
                if during or inflight["expensive"] > 0:
                    rep.cheap_during_expensive.append(dt)
            else:
                rep.expensive.append(dt)

        async def client(i: int) -> None:
            rng = random.Random(seed * 1000 + i)
            burner = i < burners
            expensive = i < expensive_clients
            await asyncio.sleep(rng.uniform(0, 0.5))
            while time.perf_counter() < stop_at:
                if burner:
                    await one("check", BURNER, "burner", (200, 422), slow_budget_s)
                    think = expensive_think
                elif expensive:
                    route, body = rng.choice(_PROOFS)
                    await one(route, body, "expensive", (200,), slow_budget_s)
                    think = expensive_think
                else:
                    expr = _random_layout(rng)
                    if rng.random() < 0.8:
                        await one("eval", {"expr": expr}, "cheap", (200,), fast_budget_s)
                    else:
                        await one("export", {"expr": expr}, "cheap", (200,), fast_budget_s)
                    think = cheap_think
                await asyncio.sleep(rng.uniform(*think))

        t0 = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        rep.seconds = time.perf_counter() - t0
    return rep
