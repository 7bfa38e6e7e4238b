"""Operands staged inside the launch (``Sm90Config.stage_in``) against the routes it replaced
and ``torch.matmul``, on torch tensors whose rows break the 16-byte contract (K or N odd).

For each shape and dtype, the routes of ``--routes`` (a new output each call), each in its
own plan, interleaved over ``--rounds`` rounds in one process:

* ``in launch``: ``gemm(a, b)`` as shipped: the rule as it is (``rule.STAGE_IN_RULE["on"]``:
  where its pick is the warp-specialized kernel, that kernel copies the ragged operand
  itself before a grid barrier, one cooperative launch), the kept signature served by the
  native torch front (:mod:`layoutproof.gpu.host.torch_native`, built before the timing);
* ``python``: the same plans with the front set aside: the Python path alone;
* ``before``: the rule with in-launch staging off: a ``cudaMemcpy2DAsync`` per ragged
  operand into the stream's padded buffer and the TMA kernel, or for short products the
  kernel that reads them in place by two-byte loads (``rule.ELEM_RULE``);
* ``torch``: ``torch.matmul(a, b)``.

Three times per call: **host** (CPU microseconds to issue ``--reps`` calls after a
synchronize, the minimum over the rounds), **device** (CUDA events around ``--reps`` calls
queued behind ``torch.cuda._sleep``, so the host's issue rate is not timed; the median of
three per round, then over the rounds; ``bench/gemm_torch.py``'s timers) and
**stream** (the same events with no sleep before the calls: the larger of the host and the
device time, what a loop of calls sees).  Every route's result is
checked against float64 first.  Run on the GPU machine after ``source bench/device_env.sh``::

    python3 bench/gemm_stage_in.py [--shapes 1000x3000x777,...] [--dtypes f16,bf16]
        [--routes "in launch,python,torch"] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_torch import _gpu_us, _host_us  # noqa: E402  (the same host and device timers)

SHAPES = (
    "1000x3000x777,1000x777x3000,1000x3001x777,512x512x500,100x3000x777,256x1000x1001,"
    "300x2000x999,2048x2048x2047,4096x4096x4095,4095x4097x4093"
)


def main() -> int:
    import torch

    from layoutproof.gpu import gemm
    from layoutproof.gpu.host import rule, runtime, torch_native, torch_op

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--routes", default="in launch,python,torch", help="of: in launch, python, before, torch")
    ap.add_argument("--out", default=None, help="write the rows as JSON under this folder")
    args = ap.parse_args()
    types = {"f16": torch.float16, "bf16": torch.bfloat16}
    on = rule.STAGE_IN_RULE["on"]

    def fresh(inside: bool) -> None:
        rule.STAGE_IN_RULE["on"] = inside
        torch_op.forget_entries()
        runtime._PLANS.clear()

    routes = args.routes.split(",")
    x = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    gemm(x, x)  # a first torch entry starts building the native front; wait for it
    torch_native.wait(900)
    hot = list(torch_op.HOT)
    print(f"native torch front: {torch_native.status()}", flush=True)

    rows, bad = [], 0
    for dn in args.dtypes.split(","):
        dt = types[dn]
        for s in args.shapes.split(","):
            m, n, k = (int(x) for x in s.split("x"))
            a = torch.randn(m, k, device="cuda", dtype=dt)
            b = torch.randn(k, n, device="cuda", dtype=dt)
            ref = a.double() @ b.double()
            times = {r: {"host": [], "device": [], "stream": []} for r in routes}
            kernels = {}
            for _ in range(args.rounds):
                for route in times:
                    torch_op.HOT[:] = [] if route == "python" else hot
                    if route == "torch":

                        def f():
                            return torch.matmul(a, b)

                    else:
                        fresh(route != "before")

                        def f():
                            return gemm(a, b)

                        c = f()
                        torch.cuda.synchronize()
                        err = float((c.double() - ref).norm() / ref.norm())
                        if not err < (1e-2 if dn == "f16" else 3e-2):
                            bad += 1
                            print(f"MISMATCH {dn} {s} {route}: relative error {err:.2e}", flush=True)
                        kernels[route] = runtime.last_launch["config"].key()
                    t = times[route]
                    t["host"].append(_host_us(torch, {route: f}, args.reps, 1)[route])
                    t["device"].append(_gpu_us(torch, {route: f}, args.reps)[route])
                    t["stream"].append(_gpu_us(torch, {route: f}, args.reps, sleep=False)[route])
            torch_op.HOT[:] = hot
            fresh(on)
            row = {"dtype": dn, "shape": s, "kernels": kernels}
            for route, t in times.items():
                row[route] = {
                    "host": min(t["host"]),
                    "device": statistics.median(t["device"]),
                    "stream": statistics.median(t["stream"]),
                }
            rows.append(row)
            cells = " | ".join(
                f"{q} " + " / ".join(f"{row[r][q]:.1f}" for r in routes) for q in ("host", "device", "stream")
            )
            picks = " | ".join(str(v) for v in kernels.values())
            print(f"{dn:4s} {s:16s} {cells}  [{picks}]", flush=True)
    print(f"(each cell: {' / '.join(routes)}, microseconds per call)")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "gemm_stage_in.json").write_text(json.dumps(rows, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
