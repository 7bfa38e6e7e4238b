"""The layoutproof pytest plugin (entry point ``pytest11``): theorem-style tests over layouts.

It is loaded by every pytest run in an environment where layoutproof is installed, so it
imports nothing heavy at load time: pytest and, as the parents of this module, the light
packages ``layoutproof`` and ``layoutproof.verify`` (no numpy, SymPy, Z3 or hypothesis;
``tests/verify/test_plugin.py`` checks it).  Tests that do not use
:func:`layoutproof.verify.theorem.theorem` run exactly as without it.  It adds:

* the ``theorem`` marker (the decorator applies it: ``pytest -m theorem`` selects the
  theorems);
* the option ``--layoutproof-scale F`` (also the ini key ``layoutproof_scale`` and the
  environment variable ``LAYOUTPROOF_SCALE``; the option wins, then the variable, then
  the ini key): hypothesis example budgets and exhaustive bounds (extents, strides) are
  multiplied by ``F`` -- ``0.5`` for a quick run, ``4`` for a long hunt;
* a report section "layoutproof counterexample" on a failed theorem: the counterexample in
  CuTe notation with its pictures.

>>> state = current()
>>> state is None or set(state) >= {"active", "scale"}
True
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import pytest

SECTION = "layoutproof counterexample"

# One entry per configured pytest session (pytester runs sessions inside sessions).
_SESSIONS: List[Dict[str, Any]] = []
# The test functions being called by a session with this plugin, innermost last.
_RUNNING: List[Any] = []


def current() -> Optional[Dict[str, Any]]:
    """The innermost active session's settings ``{"active": True, "scale": F}``, or None
    outside pytest."""
    return _SESSIONS[-1] if _SESSIONS else None


def running(fn: Any) -> bool:
    """True when ``fn`` is the test function a session with this plugin is calling now
    (then a failure of ``fn`` gets the report section)."""
    if not _RUNNING:
        return False
    top = _RUNNING[-1]
    return getattr(top, "__func__", top) is fn


def _parse_scale(text: Any, where: str) -> float:
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{where}: a positive number is expected, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise pytest.UsageError(f"{where}: a positive number is expected, got {text!r}")
    return v


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("layoutproof", "layoutproof theorems")
    group.addoption(
        "--layoutproof-scale",
        dest="layoutproof_scale",
        default=None,
        metavar="F",
        help="multiply the hypothesis examples and the exhaustive bounds (extent, stride) of "
        "layoutproof theorems by F (default 1; env LAYOUTPROOF_SCALE)",
    )
    parser.addini("layoutproof_scale", "default --layoutproof-scale for layoutproof theorems", default="")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "theorem: a layoutproof theorem (layoutproof.verify.theorem.theorem): checked exhaustively "
        "within a bound, with hypothesis beyond it, by Z3 where symbolic",
    )
    scale = 1.0
    opt = config.getoption("layoutproof_scale", default=None)
    env = os.environ.get("LAYOUTPROOF_SCALE", "")
    ini = config.getini("layoutproof_scale")
    if opt is not None:
        scale = _parse_scale(opt, "--layoutproof-scale")
    elif env:
        scale = _parse_scale(env, "LAYOUTPROOF_SCALE")
    elif ini:
        scale = _parse_scale(ini, "layoutproof_scale (ini)")
    _SESSIONS.append({"active": True, "scale": scale, "config": config})


def pytest_unconfigure(config: Any) -> None:
    for i in range(len(_SESSIONS) - 1, -1, -1):
        if _SESSIONS[i].get("config") is config:
            del _SESSIONS[i]
            break


def pytest_report_header(config: Any) -> Optional[str]:
    for s in _SESSIONS:
        if s.get("config") is config and s["scale"] != 1.0:
            return f"layoutproof: theorem scale {s['scale']:g}"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: Any) -> Any:
    _RUNNING.append(pyfuncitem.obj)
    try:
        yield
    finally:
        _RUNNING.pop()


def _report_of(exc: Optional[BaseException]) -> Optional[str]:
    seen = 0
    while exc is not None and seen < 8:
        text = getattr(exc, "layoutproof_report", None)
        if isinstance(text, str) and text:
            return text
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    if call.excinfo is None:
        return
    rep = outcome.get_result()
    if not rep.failed:
        return
    text = _report_of(call.excinfo.value)
    if text is None:
        return
    longrepr = rep.longrepr
    if hasattr(longrepr, "addsection"):
        longrepr.addsection(SECTION, text.rstrip("\n"))
    else:
        rep.sections.append((SECTION, text))
