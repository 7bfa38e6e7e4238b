"""What the benchmarks share: where raw output goes, CPU timing (batches of each function
alternate, the minimum per function is the estimate least disturbed by other load), and the
GPU operands and timers of the GEMM benchmarks (CUDA events around back-to-back calls, CUDA
graph replay, torch's cuBLAS replayed from a torch graph as the device-time reference).

The scripts import it as ``from _timing import ...`` (a script's folder is first on
``sys.path``).  CuPy and torch are imported by the caller or lazily here, so the CPU
benchmarks load neither.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

#: every raw log, JSON file and scratch file of the benchmarks goes below this folder
#: (ignored by git; bench/RESULTS.md keeps the figures that matter).  ``$OUT`` overrides it:
#: the GPU machine's runner collects what a call writes there.
OUT_ROOT = Path(__file__).resolve().parent / "out"


def out_dir(name: str, given: Optional[str] = None) -> Path:
    """The folder a benchmark writes to: ``given`` (its ``--out``) if set, else
    ``$OUT/name`` or ``bench/out/name``; created on demand."""
    root = Path(os.environ["OUT"]) if os.environ.get("OUT") else OUT_ROOT
    path = Path(given) if given else root / name
    path.mkdir(parents=True, exist_ok=True)
    return path


# ---------------------------------------------------------------- CPU: interleaved batches
def batch(fn: Callable[[], Any], target_s: float) -> int:
    """Calls per batch so that one batch of ``fn`` takes about ``target_s``."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= target_s / 4:
            return max(1, int(n * target_s / max(dt, 1e-9)))
        n *= 2


def interleaved_min(fns: List[Callable[[], Any]], repeat: int, target_s: float = 0.02) -> List[float]:
    """Microseconds per call of each function: ``repeat`` rounds, one batch of each
    function per round (so all see the same machine), the minimum over the rounds."""
    ns = [batch(f, target_s) for f in fns]
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, (f, n) in enumerate(zip(fns, ns)):
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            best[k] = min(best[k], (time.perf_counter() - t0) / n * 1e6)
    return best


# ---------------------------------------------------------------- GPU: operands and checks
def shapes_arg(text: str) -> List[Tuple[int, ...]]:
    """``MxNxK,MxNxK,...`` as a list of integer tuples."""
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",")]


def make(cp: Any, shape: Sequence[int], dtype: str, rng: Any) -> Any:
    """Fresh N(0, 1) operand of ``shape`` in f16 or bf16 (never zeros: a dropped term shows)."""
    x = rng.standard_normal(shape, dtype=cp.float32)
    return x.astype(cp.float16 if dtype == "f16" else "bfloat16")


def rel_err(cp: Any, x: Any, ref: Any) -> float:
    """Relative Frobenius error of ``x`` against ``ref`` (in f32)."""
    d = x.astype(cp.float32) - ref.astype(cp.float32)
    return float(cp.linalg.norm(d) / max(float(cp.linalg.norm(ref.astype(cp.float32))), 1e-30))


def max_rel_err(cp: Any, x: Any, ref64: Any) -> float:
    """Largest element error of ``x`` relative to ``max |ref64|`` (a float64 reference);
    infinite if a NaN survived (outputs are poisoned with NaN before a call)."""
    if bool(cp.isnan(x.astype(cp.float32)).any()):
        return float("inf")
    d = cp.abs(x.astype(cp.float64) - ref64)
    return float(d.max()) / max(float(cp.abs(ref64).max()), 1e-30)


def tol(dtype: str) -> float:
    """The element tolerance of :func:`max_rel_err` for an f16 or a bf16 product."""
    return 2e-3 if dtype == "f16" else 1.6e-2


# ---------------------------------------------------------------- GPU: timers
def event_batch(cp: Any, fn: Callable[[], Any], reps: int) -> Tuple[float, float]:
    """Seconds per call of ``reps`` back-to-back calls between two events, and the host
    seconds per call to issue them."""
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    host = (time.perf_counter() - t0) / reps
    e.record()
    e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / 1e3 / reps, host


def graph_of(cp: Any, fn: Callable[[], Any], reps: int) -> Optional[Tuple[Any, Any]]:
    """A CUDA graph of ``reps`` calls of ``fn`` and its stream (None where capture fails)."""
    st = cp.cuda.Stream(non_blocking=True)
    try:
        with st:
            st.begin_capture()
            for _ in range(reps):
                fn()
            g = st.end_capture()
        g.upload(st)
        return g, st
    except Exception as ex:  # cuBLAS or the pool may refuse capture: say so, keep going
        try:
            st.end_capture()
        except Exception:
            pass
        print(f"  graph capture failed: {type(ex).__name__}: {ex}", flush=True)
        return None


def graph_time(cp: Any, gs: Tuple[Any, Any], reps: int, n: int = 3) -> float:
    """Seconds per call of a :func:`graph_of` graph: the median of ``n`` replays."""
    g, st = gs
    s, e = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(n):
        s.record(st)
        g.launch(st)
        e.record(st)
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / 1e3 / reps)
    return statistics.median(ts)


def torch_graph_time(cp: Any, a: Any, b: Any, c: Any, reps: int) -> Optional[float]:
    """Seconds per call of ``torch.matmul(a, b, out=c)`` (torch's cuBLAS) replayed from a CUDA
    graph -- the device-time reference, since CuPy refuses cuBLAS calls under capture."""
    try:
        import torch

        ta, tb, tc = torch.from_dlpack(a), torch.from_dlpack(b), torch.from_dlpack(c)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                torch.matmul(ta, tb, out=tc)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(reps):
                torch.matmul(ta, tb, out=tc)
        ts = []
        for _ in range(3):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) / 1e3 / reps)
        cp.cuda.Device().synchronize()
        return statistics.median(ts)
    except Exception as ex:
        print(f"  torch graph reference failed: {type(ex).__name__}: {ex}", flush=True)
        return None


def rotated(order: List[Any], rnd: int) -> List[Any]:
    """``order`` rotated by ``rnd``: each round times the variants in another order, so no
    variant always runs right after cuBLAS or first on a cold clock."""
    if not order:
        return []
    r = rnd % len(order)
    return order[r:] + order[:r]


def graph_rounds(
    cp: Any,
    graphs: Dict[str, Any],
    eager: Dict[str, Callable[[], Any]],
    operands: Tuple[Any, Any, Any],
    reps: int,
    rounds: int,
) -> Tuple[Dict[str, List[float]], List[float], Dict[str, List[float]]]:
    """Variants against cuBLAS in the same rounds.  Each round replays every graph of
    ``graphs`` (name -> :func:`graph_of`; the order rotated each round), replays
    ``torch.matmul(a, b, out=c)`` from a torch graph, then times ``cupy.matmul`` and every
    function of ``eager`` as :func:`event_batch` es.  ``operands`` is ``(a, b, c)``.

    Returns the µs per call of each graph per round, cuBLAS's graph µs per round, and each
    eager function's ratio (cuBLAS time / its time) per round."""
    a, b, c = operands
    t: Dict[str, List[float]] = {nm: [] for nm in graphs}
    t_ref: List[float] = []
    ratio: Dict[str, List[float]] = {nm: [] for nm in eager}
    for rnd in range(rounds):
        for nm in rotated(list(graphs), rnd):
            if graphs[nm]:
                t[nm].append(graph_time(cp, graphs[nm], reps) * 1e6)
        x = torch_graph_time(cp, a, b, c, reps)
        if x:
            t_ref.append(x * 1e6)
        t2, _ = event_batch(cp, lambda: cp.matmul(a, b, out=c), reps)
        for nm in rotated(list(eager), rnd):
            t1, _ = event_batch(cp, eager[nm], reps)
            ratio[nm].append(t2 / t1)
    return t, t_ref, ratio
