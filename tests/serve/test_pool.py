"""The worker lanes: a worker that stops answering is killed at the budget and replaced; a
worker that dies mid-request is replaced; a full queue answers at once; the lane serves
again right after each."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import pytest

from layoutproof.serve.pool import Busy, LaneSpec


def run(coro):
    return asyncio.run(coro)


class Pool:
    """The pool under test, its answers' JSON read back."""

    def __init__(self, specs, mem_bytes):
        from layoutproof.serve.pool import Pool as Real

        self.real = Real(specs, mem_bytes=mem_bytes)
        self.lanes = self.real.lanes

    async def run(self, lane, name, payload):
        status, body = await self.real.run(lane, name, payload)
        return status, json.loads(body)

    def stats(self):
        return self.real.stats()

    def close(self):
        self.real.close()


async def _with_pool(spec, body):
    pool = Pool([spec], mem_bytes=2 << 30)
    try:
        return await body(pool, pool.lanes[spec.name])
    finally:
        pool.close()


def test_a_stopped_worker_is_killed_at_the_budget_and_replaced():
    async def body(pool, lane):
        ok = await pool.run("fast", "eval", {"expr": "(4,2):(1,4)"})
        assert ok[0] == 200 and ok[1]["value"] == "(4,2):(1,4)"
        worker = lane.workers[0]
        old = worker.proc.pid

        os.kill(old, signal.SIGSTOP)  # no answer will come, whatever the request
        t0 = time.perf_counter()
        status, err = await pool.run("fast", "eval", {"expr": "(4,2):(1,4)"})
        took = time.perf_counter() - t0
        assert status == 422 and err["error"]["type"] == "BudgetExceeded"
        assert err["error"]["condition"] == "time budget" and took < lane.spec.budget_s + 1.0
        assert lane.stats["killed"] == 1 and worker.proc.pid != old
        again = await pool.run("fast", "eval", {"expr": "8:1"})
        assert again[0] == 200 and again[1]["value"] == "8:1"

    run(_with_pool(LaneSpec("fast", 1, 1.5), body))


def test_a_worker_that_dies_is_replaced():
    async def body(pool, lane):
        await pool.run("fast", "eval", {"expr": "8:1"})
        worker = lane.workers[0]
        old = worker.proc.pid

        async def crash():
            await asyncio.sleep(0.05)
            os.kill(old, signal.SIGKILL)

        async def slow_request():
            # a check that runs for a while in the worker (an exhaustive domain of 2^24)
            return await pool.run(
                "fast",
                "check",
                {"kind": "equal", "expr": "(4096,4096):(1,4096)", "other": "(4096,4096):(1,4096)"},
            )

        (status, err), _ = await asyncio.gather(slow_request(), crash())
        if status == 200:  # it finished before the kill landed: then the next request meets the dead pipe
            status, err = await pool.run("fast", "eval", {"expr": "8:1"})
        assert status == 422 and err["error"]["type"] == "WorkerExhausted"
        assert lane.stats["died"] == 1 and worker.proc.pid != old
        again = await pool.run("fast", "eval", {"expr": "8:1"})
        assert again[0] == 200

    run(_with_pool(LaneSpec("fast", 1, 5.0), body))


def test_a_full_queue_answers_busy_at_once():
    async def body(pool, lane):
        lane.waiting = lane.spec.queue  # as if that many were waiting
        with pytest.raises(Busy):
            await pool.run("fast", "eval", {"expr": "8:1"})
        lane.waiting = 0
        assert (await pool.run("fast", "eval", {"expr": "8:1"}))[0] == 200
        assert pool.stats()["fast"]["busy"] == 1

    run(_with_pool(LaneSpec("fast", 1, 5.0, queue=4), body))
