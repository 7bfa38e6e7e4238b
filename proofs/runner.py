"""Running the catalog: in this process or in worker processes, with progress reports and
an optional cvc5 cross-check of every Z3 obligation.

>>> from layoutproof.proofs.catalog import select
>>> outs = run(select("neg.sorting"))
>>> [(o.id, o.status, o.verdict) for o in outs]
[('neg.sorting-preserves-function', 'refuted', 'ok')]
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import importlib.util
import multiprocessing
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Dict, List, Optional, Sequence

from layoutproof.errors import LayoutError
from layoutproof.verify.smtlib import run_cvc5

from .catalog import THEOREMS
from .catalog.shared import clear_caches
from .theorem import Theorem, TheoremOutcome, evaluate

__all__ = ["run", "load_extra", "cross_check_outcome", "default_jobs"]

Progress = Callable[[TheoremOutcome, int, int], None]


def default_jobs() -> int:
    """Worker processes for ``--jobs 0`` (automatic): the usable CPUs, at most 4."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(4, n))


def load_extra(spec: str) -> List[Theorem]:
    """The theorems a module or a Python file adds to the catalog: its ``THEOREMS`` list.
    ``spec`` is a dotted module name or a path to a ``.py`` file."""
    if spec.endswith(".py") or os.sep in spec:
        path = os.path.abspath(spec)
        name = "layoutproof_extra_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
        s = importlib.util.spec_from_file_location(name, path)
        if s is None or s.loader is None:
            raise LayoutError(f"cannot load theorems from {spec!r}")
        mod = importlib.util.module_from_spec(s)
        sys.modules[name] = mod
        try:
            s.loader.exec_module(mod)
        except FileNotFoundError:
            raise LayoutError(f"no such file: {spec}") from None
    else:
        try:
            mod = importlib.import_module(spec)
        except ImportError as e:
            raise LayoutError(f"cannot import {spec!r}: {e}") from None
    ths = getattr(mod, "THEOREMS", None)
    if not isinstance(ths, (list, tuple)) or not all(isinstance(t, Theorem) for t in ths):
        raise LayoutError(f"{spec}: expected a THEOREMS list of layoutproof.proofs.Theorem")
    return list(ths)


# ----------------------------------------------------------------------------- cross-check
def cross_check_outcome(
    o: TheoremOutcome, solver: str = "cvc5", timeout_ms: int = 5000
) -> List[Dict[str, Any]]:
    """Give every exported obligation of ``o`` to ``solver`` (cvc5) and compare verdicts.
    Each entry: ``purpose``, ``z3``, ``cvc5``, ``agree`` (True, False, or None when either
    solver left it undecided -- a timeout is reported as such, never as a disagreement)."""
    if solver != "cvc5":
        raise LayoutError(f"unknown solver {solver!r} (supported: cvc5)")
    entries: List[Dict[str, Any]] = []
    for s in o.smt2:
        t0 = time.perf_counter()
        note = ""
        try:
            answers = run_cvc5(s["text"], timeout_ms)
            other = answers[-1] if answers else "unknown"
        except ImportError:
            other, note = "unavailable", "cvc5 is not installed (pip install cvc5)"
        except Exception as e:  # noqa: BLE001 - a parse failure is reported, not raised
            other, note = "error", f"{type(e).__name__}: {e}"
        z3v = s["verdict"]
        decided = {"sat", "unsat"}
        agree: Optional[bool] = None
        if z3v in decided and other in decided:
            agree = z3v == other
        elif other == "unknown":
            note = note or f"cvc5 undecided within {timeout_ms} ms (timeout, not a disagreement)"
        entries.append(
            {
                "purpose": s["purpose"],
                "z3": z3v,
                "cvc5": other,
                "agree": agree,
                "note": note,
                "seconds": time.perf_counter() - t0,
            }
        )
    return entries


def _evaluate(th: Theorem, cross: Optional[str], cross_ms: int) -> TheoremOutcome:

    # the families allocate many small objects: collect less often while a theorem runs,
    # and drop the memoized operations afterwards (a large heap makes every collection slow)
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], 50_000), old[1], old[2])
    try:
        o = evaluate(th)
    finally:
        gc.set_threshold(*old)
        clear_caches()
    if cross and o.smt2:
        o = dataclasses.replace(o, cross_check=cross_check_outcome(o, cross, cross_ms))
    elif cross:
        o = dataclasses.replace(o, cross_check=[])
    return o


# ----------------------------------------------------------------------------- workers
_REGISTRY: Dict[str, Theorem] = {}


def _init_worker(extras: Sequence[str]) -> None:

    if not _REGISTRY:
        for t in THEOREMS:
            _REGISTRY[t.id] = t
        for spec in extras:
            for t in load_extra(spec):
                _REGISTRY[t.id] = t


def _work(theorem_id: str, cross: Optional[str], cross_ms: int) -> TheoremOutcome:
    return _evaluate(_REGISTRY[theorem_id], cross, cross_ms)


def run(
    theorems: Sequence[Theorem],
    *,
    jobs: int = 1,
    cross_check: Optional[str] = None,
    cross_check_ms: int = 5000,
    progress: Optional[Progress] = None,
    extras: Sequence[str] = (),
) -> List[TheoremOutcome]:
    """Check every theorem and return the outcomes in the order given.

    ``jobs`` > 1 runs them in that many worker processes (a theorem is the unit of work);
    the workers rebuild the catalog, plus the ``extras`` modules or files, and look the
    theorems up by id, so only registered theorems can run in parallel (others run here).
    ``cross_check="cvc5"`` re-checks every Z3 obligation with cvc5; ``progress(outcome, done,
    total)`` is called as each theorem finishes."""
    n = len(theorems)
    out: Dict[str, TheoremOutcome] = {}
    done = 0

    def finish(o: TheoremOutcome) -> None:
        nonlocal done
        done += 1
        out[o.id] = o
        if progress is not None:
            progress(o, done, n)

    jobs = max(1, int(jobs))
    if jobs == 1 or n <= 1:
        for th in theorems:
            finish(_evaluate(th, cross_check, cross_check_ms))
        return [out[t.id] for t in theorems]

    known = {t.id for t in THEOREMS}
    extra_ids = set()
    for spec in extras:
        extra_ids |= {t.id for t in load_extra(spec)}
    remote = [t for t in theorems if t.id in known or t.id in extra_ids]
    local = [t for t in theorems if t not in remote]
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods and sys.platform != "darwin" else "spawn")
    # the symbolic theorems import SymPy and Z3 and take a second or two each: start them first
    remote.sort(key=lambda t: 0 if ("z3" in t.method or "sympy" in t.method) else 1)
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(remote) or 1),
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(tuple(extras),),
    ) as pool:
        pending: Dict[Future, Theorem] = {
            pool.submit(_work, t.id, cross_check, cross_check_ms): t for t in remote
        }
        for th in local:
            finish(_evaluate(th, cross_check, cross_check_ms))
        while pending:
            ready, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for f in ready:
                th = pending.pop(f)
                try:
                    finish(f.result())
                except Exception as e:  # noqa: BLE001 - a crashed worker is an error outcome
                    finish(
                        TheoremOutcome(
                            th.id,
                            th.title,
                            th.expected,
                            "unknown",
                            "error",
                            (),
                            0.0,
                            message=f"worker failed: {type(e).__name__}: {e}",
                        )
                    )
    return [out[t.id] for t in theorems]
