"""Fixtures of the playground's tests: the ASGI app under Starlette's test client, and a
real server on a loopback port (for the browser and the load tests).  The test modules
import the fixtures they use from here (a second conftest.py would shadow the suite's
top-level one, which other folders import as ``conftest``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Iterator

import pytest

pytest.importorskip("starlette", reason="the playground needs starlette (pip install 'layoutproof[serve]')")
pytest.importorskip("httpx", reason="Starlette's test client needs httpx")

#: small budgets, so that the budget tests are quick
FAST_BUDGET_S = 3.0
SLOW_BUDGET_S = 4.0


@pytest.fixture(scope="session")
def client() -> Iterator[object]:
    import warnings

    with warnings.catch_warnings():  # Starlette 1.x prefers httpx2; httpx works the same here
        warnings.filterwarnings("ignore", message=".*httpx.*starlette.testclient.*")
        from starlette.testclient import TestClient

    from layoutproof.serve.app import create_app
    from layoutproof.serve.pool import LaneSpec

    app = create_app(
        [LaneSpec("fast", 1, FAST_BUDGET_S), LaneSpec("slow", 1, SLOW_BUDGET_S, nice=10)],
        allowed_hosts=["testserver", "127.0.0.1", "localhost"],
        mem_bytes=2 << 30,
    )
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """``layoutproof serve`` (through serve_main) on a free loopback port."""
    pytest.importorskip("uvicorn", reason="the server needs uvicorn (pip install 'layoutproof[serve]')")
    port = free_port()
    code = (
        "import sys; from layoutproof.serve import serve_main; "
        f"sys.exit(serve_main(['--port', '{port}', '--workers', '2', '--budget', '{FAST_BUDGET_S}', "
        f"'--proof-budget', '{SLOW_BUDGET_S}']))"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "/api/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.stdout.read().decode() if proc.stdout else ""
            proc.kill()
            pytest.fail(f"the server did not start: {out[-2000:]}")
        time.sleep(0.2)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Where the browser tests keep their screenshots: $LAYOUTPROOF_SERVE_ARTIFACTS, else a
    pytest temporary folder."""
    path = os.environ.get("LAYOUTPROOF_SERVE_ARTIFACTS") or str(tmp_path_factory.mktemp("playground"))
    os.makedirs(path, exist_ok=True)
    return path
