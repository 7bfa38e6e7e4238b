"""Load on the playground over loopback: 50 concurrent clients for 30 s by default, 40
sending cheap requests (evaluate and draw a random small layout, or export it; 0.25-0.75 s
think time), 9 sending proofs, explanations and analyses (1-2 s think time), and 1 sending
only a symbolic equality of six symbols that SymPy cannot settle, decided by a bounded check
over every assignment (seconds of CPU each; stopped at its budget where that is shorter).

    python bench/serve_load.py [--clients 50] [--seconds 30] [--workers N] [--url URL]

Starts ``layoutproof serve`` on a free port (unless --url), runs the load, prints the
figures and writes them as JSON (``bench/out/serve_load/``): requests, failures (an answer
other than the expected one, or none), requests past their budget, the requests stopped at
their budget, and the latency of cheap requests -- p50/p99 overall and of
those sent while an expensive request was in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Any, Dict, List

from _timing import out_dir


def start_server(workers: int | None, budget: float, proof_budget: float) -> tuple:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["--port", str(port), "--budget", str(budget), "--proof-budget", str(proof_budget)]
    if workers:
        args += ["--workers", str(workers)]
    code = f"import sys; from layoutproof.serve import serve_main; sys.exit(serve_main({args!r}))"
    proc = subprocess.Popen([sys.executable, "-c", code])
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/api/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def main() -> int:
    from layoutproof.serve.load import run_load

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=50)
    p.add_argument(
        "--expensive", type=int, default=10, help="clients sending expensive requests (default 10)"
    )
    p.add_argument(
        "--burners", type=int, default=1, help="of those, clients sending budget-spending requests"
    )
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--workers", type=int, default=None, help="worker processes per lane (server default)")
    p.add_argument("--budget", type=float, default=5.0)
    p.add_argument("--proof-budget", type=float, default=10.0)
    p.add_argument("--url", default=None, help="load a running server instead of starting one")
    p.add_argument("--out", default=None)
    p.add_argument(
        "--compare",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="alternate ROUNDS windows of cheap-only load and of the mixed load (each --seconds long) "
        "on the same server, so that both see the same machine load; report each condition",
    )
    a = p.parse_args()
    proc = None
    url = a.url
    if url is None:
        proc, url = start_server(a.workers, a.budget, a.proof_budget)

    def load(expensive: int, burners: int) -> Any:
        return asyncio.run(
            run_load(
                url,
                clients=a.clients,
                seconds=a.seconds,
                expensive_clients=expensive,
                burners=burners,
                fast_budget_s=a.budget,
                slow_budget_s=a.proof_budget,
            )
        )

    try:
        if a.compare:
            return compare(a, load, url, proc)
        rep = load(a.expensive, a.burners)
        with urllib.request.urlopen(url + "/api/stats", timeout=5) as r:
            stats = json.loads(r.read())
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=20)
    fig = rep.figures()
    fig["server"] = stats
    fig["cpus"] = os.cpu_count()
    fig["load_average_after"] = os.getloadavg()
    for k, v in fig.items():
        print(f"{k:32s} {v}")
    for e in rep.errors:
        print("error:", e)
    path = out_dir("serve_load", a.out) / "serve_load.json"
    path.write_text(json.dumps(fig, indent=1))
    print(f"wrote {path}")
    return 0 if rep.failures == 0 and rep.past_budget == 0 else 1


def compare(a: argparse.Namespace, load: Any, url: str, proc: Any) -> int:
    """Alternate cheap-only and mixed windows; the cheap requests' latency per condition."""
    from layoutproof.serve.load import percentile

    cheap: Dict[str, List[float]] = {"cheap only": [], "mixed": []}
    totals: Dict[str, Dict[str, int]] = {k: {"requests": 0, "failures": 0, "past_budget": 0} for k in cheap}
    loads = []
    for r in range(a.compare):
        for cond, (e, b) in (("cheap only", (0, 0)), ("mixed", (a.expensive, a.burners))):
            loads.append(os.getloadavg()[0])
            rep = load(e, b)
            cheap[cond] += rep.cheap
            for k in totals[cond]:
                totals[cond][k] += getattr(rep, k)
            f = rep.figures()
            print(
                f"round {r + 1} {cond:10s}: {f['requests']} requests, {f['failures']} failures, "
                f"{f['past_budget']} past budget; cheap p50 {f['cheap_p50_ms']} ms, p99 {f['cheap_p99_ms']} ms"
            )
    out: Dict[str, Any] = {
        "clients": a.clients,
        "window_s": a.seconds,
        "rounds": a.compare,
        "cpus": os.cpu_count(),
    }
    out["load_average_1min_at_windows"] = [round(x, 2) for x in loads]
    for cond, xs in cheap.items():
        out[cond] = dict(
            totals[cond],
            cheap=len(xs),
            cheap_p50_ms=round(1000 * percentile(xs, 50), 1),
            cheap_p99_ms=round(1000 * percentile(xs, 99), 1),
        )
        print(f"{cond:10s}: {out[cond]}")
    path = out_dir("serve_load", a.out) / "serve_load_compare.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")
    bad = sum(t["failures"] + t["past_budget"] for t in totals.values())
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
