"""Time budgets for the symbolic and verification paths.

Two limits bound every piece of work on a symbolic claim:

* a **per-call** budget (:func:`layoutproof.symbolic.get_timeout`, default 3000 ms): each
  Z3 call and each decision of one side condition (SymPy's simplification included);
* an **overall deadline** per public verification call (:func:`get_deadline`, default
  20 s): :func:`layoutproof.verify.equal`, ``identity``, ``postcondition``, ``admissible``
  and ``compatible`` run their whole body, the bounded fallback included, inside
  :func:`deadline`.

Past either limit the work stops with :class:`BudgetExceeded`, which the verification
entry points turn into an ``"unknown"`` result with the reason ``"timeout"``.

How the work is stopped: in the main thread a ``SIGALRM`` timer (``setitimer``) raises
:class:`BudgetExceeded` at the next Python bytecode, which interrupts SymPy (pure Python)
wherever it is; Z3 calls get the remaining time as their own ``timeout`` and, as a
backstop, an interrupt of their context from a timer thread; long loops also call
:func:`check`.  Outside the main thread, or when another ``SIGALRM`` handler is installed
(a test runner's timeout, say), only the Z3 limits and the cooperative checks apply.

>>> import time
>>> with deadline(0.05):
...     try:
...         while True:
...             time.sleep(0.001)
...     except BudgetExceeded as e:
...         print(e.reason)
timeout
"""

from __future__ import annotations

import contextvars
import os
import signal
import sysconfig
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Optional, Tuple

from .errors import LayoutError, MalformedLayoutError, show

__all__ = [
    "BudgetExceeded",
    "deadline",
    "check",
    "remaining_ms",
    "set_deadline",
    "get_deadline",
    "call_limit_ms",
    "run_interruptible",
]

_DEFAULT_DEADLINE_S = [20.0]

# The active deadlines, innermost last: each an absolute time.perf_counter() value.
_STACK: contextvars.ContextVar[Tuple[Any, ...]] = contextvars.ContextVar("layoutproof_deadlines", default=())


class BudgetExceeded(LayoutError):
    """A time budget ran out; ``reason`` is ``"timeout"`` and ``limit`` the seconds given."""

    def __init__(self, message: str, *, limit: Optional[float] = None, at: Optional[float] = None) -> None:
        super().__init__(message)
        self.reason = "timeout"
        self.limit = limit
        self.at = at  # the deadline (perf_counter time) that expired


def set_deadline(seconds: float) -> None:
    """Set the default overall deadline of one public verification call, in seconds."""
    if type(seconds) not in (int, float) or not seconds > 0 or seconds != seconds:
        raise MalformedLayoutError(f"the deadline must be a positive number of seconds, got {show(seconds)}")
    _DEFAULT_DEADLINE_S[0] = float(seconds)


def get_deadline() -> float:
    """The default overall deadline of one public verification call, in seconds."""
    return _DEFAULT_DEADLINE_S[0]


def _now() -> float:
    return time.perf_counter()


def _earliest() -> Optional[float]:
    st = _STACK.get()
    return min(st) if st else None


def remaining_ms() -> Optional[int]:
    """Milliseconds left before the earliest active deadline (None when there is none)."""
    e = _earliest()
    if e is None:
        return None
    return max(0, int((e - _now()) * 1000))


def call_limit_ms(per_call_ms: int) -> int:
    """The limit of one solver call: ``per_call_ms``, cut to the time left (at least 1)."""
    r = remaining_ms()
    if r is None:
        return per_call_ms
    return max(1, min(per_call_ms, r))


def check() -> None:
    """Raise :class:`BudgetExceeded` when an active deadline has passed."""
    e = _earliest()
    if e is not None and _now() >= e:
        raise BudgetExceeded("timeout: the time budget ran out", at=e)


# ----------------------------------------------------------------------------- the alarm
_ARMED: List[Optional[float]] = [None]  # the deadline the itimer is set for


def _handler(signum: int, frame: Any) -> None:
    at = _ARMED[0]
    if at is None:
        return
    if _now() + 1e-4 < at:  # woke early (re-armed meanwhile): nothing to do
        return
    # Where an exception would be lost or would break the bookkeeping -- a finalizer
    # (``__del__``: Python ignores its exceptions), this module's own entry and exit, or
    # Z3's Python wrapper (an exception between two of its ctypes calls leaves a half-built
    # object behind, whose next use fails with a raw ctypes error) -- the alarm is not
    # raised there but tried again a moment later.  Z3's own calls are bounded by their
    # timeout and the interrupt backstop, so the retry comes soon after.
    # The exception is never raised inside the standard library (threading, contextlib,
    # importlib, ...) or Z3's wrapper: there it can leave their state half-updated.  The
    # alarm is tried again shortly, once the interrupted code is SymPy's, the library's
    # or the caller's own.
    fn = frame.f_code.co_filename if frame is not None else ""
    if fn.startswith(_STDLIB) and "-packages" not in fn:  # not site-/dist-packages (SymPy)
        signal.setitimer(signal.ITIMER_REAL, 0.005)
        return
    f, k = frame, 0
    while f is not None and k < 16:
        code = f.f_code
        if code.co_name == "__del__" or (f.f_globals is _GLOBALS and code.co_name in ("deadline", "_arm")):
            signal.setitimer(signal.ITIMER_REAL, 0.005)
            return
        mod = f.f_globals.get("__name__", "")
        if type(mod) is str and (
            mod == "z3"
            or mod.startswith("z3.")
            or (mod == "contextlib" and code.co_name in ("__enter__", "__exit__"))
        ):
            # contextlib: the work is done and ``deadline`` itself is being entered or left
            signal.setitimer(signal.ITIMER_REAL, 0.005)
            return
        f, k = f.f_back, k + 1
    _ARMED[0] = None
    raise BudgetExceeded("timeout: the time budget ran out", at=at)


_GLOBALS = globals()
_STDLIB = tuple(
    {
        os.path.join(os.path.realpath(p), "")
        for p in (sysconfig.get_paths()["stdlib"], os.path.dirname(os.__file__))
    }
)


def _can_alarm() -> bool:
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    try:
        h = signal.getsignal(signal.SIGALRM)
    except (ValueError, OSError):  # pragma: no cover - platform without SIGALRM
        return False
    return h in (signal.SIG_DFL, signal.SIG_IGN, None, _handler)


def _arm(at: Optional[float]) -> None:
    """Point the itimer at the deadline ``at`` (None: disarm)."""
    _ARMED[0] = at
    if at is None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return
    signal.setitimer(signal.ITIMER_REAL, max(1e-4, at - _now()))


@contextmanager
def deadline(seconds: Optional[float] = None) -> Iterator[float]:
    """Run the block under a deadline ``seconds`` from now (default :func:`get_deadline`);
    an enclosing, earlier deadline stays in force.  Yields the absolute deadline."""
    if seconds is None:
        seconds = _DEFAULT_DEADLINE_S[0]
    if type(seconds) not in (int, float) or not seconds > 0 or seconds != seconds:
        raise MalformedLayoutError(f"the deadline must be a positive number of seconds, got {show(seconds)}")
    at = _now() + float(seconds)
    outer = _STACK.get()
    tok = _STACK.set(outer + (at,))
    alarm = _can_alarm()
    prev_handler = None
    if alarm:
        prev_handler = signal.getsignal(signal.SIGALRM)
        if prev_handler is not _handler:
            signal.signal(signal.SIGALRM, _handler)
        _arm(min(outer + (at,)))
    try:
        yield at
    finally:
        if alarm:
            rest = min(outer) if outer else None
            _ARMED[0] = None
            if rest is None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                if prev_handler is not _handler:
                    restore = prev_handler if prev_handler is not None else signal.SIG_DFL
                    signal.signal(signal.SIGALRM, restore)
            else:
                _arm(rest)
        _STACK.reset(tok)


def expired(e: BudgetExceeded) -> bool:
    """Whether ``e`` comes from a deadline outside the innermost one (it must propagate)."""
    st = _STACK.get()
    return bool(st) and e.at is not None and e.at < st[-1] - 1e-9


def run_interruptible(fn: Callable[[], Any], interrupt: Callable[[], None], limit_ms: int) -> Any:
    """Call ``fn()``; if it has not returned ``limit_ms`` (plus a grace) after the start,
    call ``interrupt()`` from a timer thread -- a backstop for solver calls that do not
    honour their own timeout.  ``interrupt`` is never called after ``fn`` returned."""
    lock = threading.Lock()
    state = {"done": False}

    def fire() -> None:
        with lock:
            if not state["done"]:
                try:
                    interrupt()
                except Exception:  # noqa: BLE001 - a backstop must never raise in its thread
                    pass

    t = threading.Timer(limit_ms / 1000.0 * 1.2 + 0.01, fire)
    t.daemon = True
    t.start()
    try:
        return fn()
    finally:
        with lock:
            state["done"] = True
        t.cancel()
