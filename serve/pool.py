"""Worker processes with a hard time budget per request, in lanes.

Every computation of the playground runs in a worker process, never in the server's
event loop: a request that spends its budget has its worker killed (``SIGKILL``) and
replaced, so no input can hang the server or hold a worker past its budget.  Inside the
worker the same budget is set as the solver deadline (:func:`layoutproof.budget.deadline`),
so a symbolic check usually stops by itself with "unknown (timeout)" before the kill.

Workers are grouped in *lanes*: the cheap routes (evaluate and draw, export) have their
own workers, the expensive ones (proofs, explanations, analyses) theirs, at a lower CPU
priority (``nice``), so expensive requests queue behind each other but never in front of
a cheap one.  A lane's queue is bounded: past it the answer is 503 at once.

Workers are started from a fork server that has imported layoutproof, SymPy, Z3 and numpy
once, so a replacement is ready in milliseconds.  Each worker has an address-space limit
(``RLIMIT_AS``): an input that would need more memory gets a MemoryError inside the worker
(a 422 answer), not the machine's memory.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["Lane", "Pool", "LaneSpec", "Busy"]

#: modules the fork server imports once, so each worker starts with them loaded
PRELOAD = [
    "numpy",
    "sympy",
    "z3",
    "drawsvg",
    "layoutproof.cli",
    "layoutproof.interop",
    "layoutproof.explain",
    "layoutproof.verify.cli",
    "layoutproof.gpu.analysis",
    "layoutproof.serve.work",
    "layoutproof.serve.analyses",
]


#: the largest answer (bytes of JSON) a worker sends back
MAX_ANSWER = 8 << 20


def encode(body: Dict[str, Any]) -> bytes:
    """``body`` as compact UTF-8 JSON (numbers JSON cannot write are refused)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


class Busy(Exception):
    """A lane's queue is full."""


@dataclass(frozen=True)
class LaneSpec:
    """A lane: its name, how many workers, the time budget of one request (seconds, queue
    wait included), the workers' ``nice`` increment and how many requests may wait."""

    name: str
    workers: int
    budget_s: float
    nice: int = 0
    queue: int = 256


def _worker_main(conn: Any, nice: int, mem_bytes: int) -> None:  # pragma: no cover - a child process
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops the workers itself
    if nice and hasattr(os, "nice"):
        try:
            os.nice(nice)
        except OSError:
            pass
    if mem_bytes:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        except (ImportError, ValueError, OSError):  # no such limit here (Windows): time budgets only
            pass
    from .work import safe_run

    while True:
        try:
            name, payload, budget_s = conn.recv()
        except (EOFError, OSError):
            return
        status, body = safe_run(name, payload, budget_s)
        try:  # the answer leaves as JSON text: the server's event loop only forwards it
            data = encode(body)
        except (TypeError, ValueError) as e:  # a body that is not JSON is a bug: say so
            status, data = 500, encode({"error": {"type": type(e).__name__, "message": str(e)[:500]}})
        if len(data) > MAX_ANSWER:
            status, data = (
                422,
                encode(
                    {
                        "error": {
                            "type": "AnswerTooLarge",
                            "message": f"the answer has {len(data)} bytes, more than {MAX_ANSWER}: "
                            "ask for less (a smaller tile or layout)",
                            "condition": "answer size",
                            "witness": len(data),
                        }
                    }
                ),
            )
        try:
            conn.send((status, data))
        except (BrokenPipeError, OSError):
            return


class _Worker:
    def __init__(self, ctx: Any, nice: int, mem_bytes: int) -> None:
        self.ctx, self.nice, self.mem = ctx, nice, mem_bytes
        self.proc: Any = None
        self.conn: Any = None
        self.start()

    def start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker_main, args=(child, self.nice, self.mem), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent

    def kill(self) -> None:
        try:
            self.proc.kill()
        except (OSError, AttributeError):
            pass
        self.proc.join(timeout=5)
        try:
            self.conn.close()
        except OSError:
            pass

    def restart(self) -> None:
        self.kill()
        self.start()


class Lane:
    """Workers of one kind and the queue of requests waiting for them."""

    def __init__(self, spec: LaneSpec, ctx: Any, mem_bytes: int) -> None:
        self.spec = spec
        self.ctx = ctx
        self.mem = mem_bytes
        self.workers: List[_Worker] = [_Worker(ctx, spec.nice, mem_bytes) for _ in range(spec.workers)]
        self.idle: "asyncio.Queue[_Worker]" = asyncio.Queue()
        for w in self.workers:
            self.idle.put_nowait(w)
        self.waiting = 0
        self.stats: Dict[str, int] = {"done": 0, "killed": 0, "busy": 0, "died": 0}

    async def run(self, name: str, payload: Any) -> Tuple[int, bytes]:
        """``(status, body)`` of the task, within the lane's budget."""
        spec = self.spec
        if self.waiting >= spec.queue:
            self.stats["busy"] += 1
            raise Busy(spec.name)
        t0 = time.perf_counter()
        self.waiting += 1
        try:
            w = await asyncio.wait_for(self.idle.get(), timeout=spec.budget_s)
        except asyncio.TimeoutError:
            return 422, encode(_budget_error(spec, "waiting for a worker"))
        finally:
            self.waiting -= 1
        loop = asyncio.get_running_loop()
        left = spec.budget_s - (time.perf_counter() - t0)
        if left <= 0.05:
            self.idle.put_nowait(w)
            return 422, encode(_budget_error(spec, "waiting for a worker"))
        fut: "asyncio.Future[Tuple[int, bytes]]" = loop.create_future()
        fd = w.conn.fileno()

        def ready() -> None:
            loop.remove_reader(fd)
            if fut.done():
                return
            try:
                os.set_blocking(fd, True)  # an event loop (uvloop) may have made it non-blocking
                fut.set_result(w.conn.recv())
            except (EOFError, OSError) as e:
                fut.set_exception(e)

        try:
            # the solver deadline inside the worker is a little shorter than the kill
            os.set_blocking(fd, True)
            w.conn.send((name, payload, max(0.05, left - 0.25)))
            loop.add_reader(fd, ready)
            status, body = await asyncio.wait_for(fut, timeout=left)
            self.stats["done"] += 1
            self.idle.put_nowait(w)
            return status, body
        except asyncio.TimeoutError:
            loop.remove_reader(fd)
            self.stats["killed"] += 1
            await asyncio.to_thread(w.restart)
            self.idle.put_nowait(w)
            return 422, encode(_budget_error(spec, "computing"))
        except (EOFError, OSError, BrokenPipeError):
            loop.remove_reader(fd)
            self.stats["died"] += 1
            await asyncio.to_thread(w.restart)
            self.idle.put_nowait(w)
            return 422, encode(
                {
                    "error": {
                        "type": "WorkerExhausted",
                        "message": "the request ended its worker process (memory or a crash of a native "
                        "library); the worker was replaced",
                        "condition": "memory budget",
                    }
                }
            )
        except asyncio.CancelledError:  # the client went away: the worker may still be busy
            loop.remove_reader(fd)
            await asyncio.to_thread(w.restart)
            self.idle.put_nowait(w)
            raise

    def close(self) -> None:
        for w in self.workers:
            w.kill()


def _budget_error(spec: LaneSpec, when: str) -> Dict[str, Any]:
    return {
        "error": {
            "type": "BudgetExceeded",
            "message": f"the request spent its time budget of {spec.budget_s:g} s ({when})",
            "condition": "time budget",
            "limit": spec.budget_s,
            "reason": "timeout",
        }
    }


class Pool:
    """The lanes of the server.  Create it inside the running event loop (the app's
    start-up), close it at shutdown."""

    def __init__(self, specs: List[LaneSpec], *, mem_bytes: int = 3 << 30) -> None:
        ctx: Any
        if "forkserver" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(PRELOAD)
        else:  # Windows: each worker imports what it needs when it starts
            ctx = multiprocessing.get_context("spawn")
        self.lanes: Dict[str, Lane] = {s.name: Lane(s, ctx, mem_bytes) for s in specs}

    async def run(self, lane: str, name: str, payload: Any) -> Tuple[int, bytes]:
        return await self.lanes[lane].run(name, payload)

    def stats(self) -> Dict[str, Any]:
        return {
            n: dict(l.stats, workers=len(l.workers), waiting=l.waiting, budget_s=l.spec.budget_s)
            for n, l in self.lanes.items()
        }

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.close()


def default_lanes(
    workers: Optional[int] = None, fast_budget_s: float = 5.0, slow_budget_s: float = 20.0
) -> List[LaneSpec]:
    """Two lanes: ``fast`` (evaluate, draw, export) and ``slow`` (proofs, explanations,
    analyses; ``nice`` 19), each with ``workers`` processes (default: the CPU count, at
    least 2 and at most 8)."""
    n = workers or max(2, min(8, os.cpu_count() or 2))
    return [
        LaneSpec("fast", n, fast_budget_s, nice=0),
        LaneSpec("slow", n, slow_budget_s, nice=19),
    ]
