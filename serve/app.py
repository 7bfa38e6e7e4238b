"""The playground's HTTP application (Starlette): the page, its static files, and the JSON API.

Routes (every ``POST`` takes a JSON object, ``Content-Type: application/json``):

=====================  =====  ====================================================
``GET /``                     the page (``static/index.html``); ``/static/*`` its files
``GET /api/health``           ``{"ok": true, "version": ...}``
``GET /api/analyses``         the analyses and the fields of their forms
``GET /api/stats``            requests done, workers replaced, per lane
``POST /api/eval``     fast   ``expr`` [``assume``, ``values``, ``tv``, ``thr_id``, ``color``,
                              ``bytes``]: the value and its SVG picture
``POST /api/export``   fast   ``expr`` [``assume``]: C++, DSL, pycute and Triton code
``POST /api/check``    slow   ``kind`` (equal, admissible, post), ``expr`` [``other``,
                              ``assume``, ``bound``]: a verdict, the counterexample drawn
``POST /api/explain``  slow   ``expr`` [``assume``]: condition, witness, repairs, steps
``POST /api/analyze``  slow   ``analysis``, ``fields`` [``assume``]: an analysis report
=====================  =====  ====================================================

Answers are JSON: 200 with the result; 4xx with ``{"error": {"type", "message",
"condition", "witness"}}`` -- 400 for a body that is not UTF-8 JSON, 413 for one over the
size limit, 415 for another content type, 422 for input the algebra refuses (the
LayoutError's condition and witness) or a request past its time budget; 503 when a lane's
queue is full.  No route evaluates Python; see :mod:`.work` and :mod:`.pool`.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .pool import Busy, LaneSpec, Pool, default_lanes

__all__ = ["create_app", "STATIC", "MAX_BODY", "ROUTES"]

STATIC = Path(__file__).parent / "static"
#: the largest request body (bytes)
MAX_BODY = 64 * 1024
#: the deepest nesting of a request's JSON
MAX_JSON_DEPTH = 8
#: task -> lane
ROUTES = {"eval": "fast", "export": "fast", "check": "slow", "explain": "slow", "analyze": "slow"}

_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def _error(status: int, type_: str, message: str, **more: Any) -> JSONResponse:
    body: Dict[str, Any] = {"type": type_, "message": message}
    body.update({k: v for k, v in more.items() if v is not None})
    return JSONResponse({"error": body}, status_code=status, headers=_HEADERS)


class _BadRequest(Exception):
    def __init__(self, response: JSONResponse) -> None:
        self.response = response


def _depth(x: Any, limit: int) -> int:
    """The nesting depth of a parsed JSON value, stopping past ``limit``."""
    stack = [(x, 1)]
    deepest = 0
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(v, dict):
            stack.extend((e, d + 1) for e in v.values())
        elif isinstance(v, list):
            stack.extend((e, d + 1) for e in v)
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


async def read_json(request: Request, limit: int = MAX_BODY) -> Dict[str, Any]:
    """The request's JSON object, or a _BadRequest carrying the 4xx answer."""
    ctype = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if ctype not in ("application/json", ""):
        raise _BadRequest(_error(415, "UnsupportedMediaType", f"send application/json, not {ctype[:80]}"))
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise _BadRequest(_error(400, "MalformedRequest", "Content-Length is not a number"))
        if int(declared) > limit:
            raise _BadRequest(
                _error(
                    413,
                    "BodyTooLarge",
                    f"the body has {declared} bytes, more than {limit}",
                    condition="body size",
                    witness=int(declared),
                )
            )
    buf = bytearray()
    async for chunk in request.stream():
        buf += chunk
        if len(buf) > limit:
            raise _BadRequest(
                _error(
                    413,
                    "BodyTooLarge",
                    f"the body is longer than {limit} bytes",
                    condition="body size",
                    witness=len(buf),
                )
            )
    try:
        text = bytes(buf).decode("utf-8")
    except UnicodeDecodeError as e:
        raise _BadRequest(
            _error(
                400,
                "MalformedUTF8",
                f"the body is not UTF-8: {e.reason} at byte {e.start}",
                condition="UTF-8",
                witness=e.start,
            )
        ) from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise _BadRequest(
            _error(400, "MalformedJSON", "the JSON is nested too deeply", condition="JSON nesting depth")
        ) from None
    except ValueError as e:
        pos = getattr(e, "pos", None)
        raise _BadRequest(
            _error(
                400, "MalformedJSON", f"the body is not JSON: {str(e)[:200]}", condition="JSON", witness=pos
            )
        ) from None
    if not isinstance(value, dict):
        raise _BadRequest(
            _error(
                400,
                "MalformedJSON",
                f"the body is a JSON object, got a {type(value).__name__}",
                condition="JSON object",
            )
        )
    d = _depth(value, MAX_JSON_DEPTH)
    if d > MAX_JSON_DEPTH:
        raise _BadRequest(
            _error(
                400,
                "MalformedJSON",
                f"the JSON is nested deeper than {MAX_JSON_DEPTH} levels",
                condition="JSON nesting depth",
                witness=d,
            )
        )
    return value


class _HostCheck:
    """Refuse (400, JSON) a request whose Host header is not one of ``allowed``: a page of
    another site cannot reach a loopback server through a rebound DNS name."""

    def __init__(self, app: Any, allowed: Sequence[str]) -> None:
        self.app = app
        self.allowed = {h.lower() for h in allowed}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            host = ""
            for k, v in scope.get("headers", []):
                if k == b"host":
                    host = v.decode("latin-1").lower()
                    break
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name not in self.allowed:
                resp = _error(
                    400,
                    "BadHost",
                    f"the Host header {host[:80]!r} is not one this server answers",
                    condition="Host header",
                )
                await resp(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(
    lanes: Optional[Sequence[LaneSpec]] = None,
    *,
    allowed_hosts: Optional[List[str]] = None,
    mem_bytes: int = 3 << 30,
) -> Starlette:
    """The application.  ``lanes``: the worker lanes (default :func:`.pool.default_lanes`);
    ``allowed_hosts``: the Host headers accepted (None: any), which keeps a page of another
    site from reaching a loopback server through DNS rebinding."""
    specs = list(lanes) if lanes is not None else default_lanes()
    state: Dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state["pool"] = Pool(specs, mem_bytes=mem_bytes)
        try:
            yield
        finally:
            state["pool"].close()

    async def index(request: Request) -> Response:
        return FileResponse(
            STATIC / "index.html", headers=dict(_HEADERS, **{"Content-Security-Policy": _CSP})
        )

    async def health(request: Request) -> Response:
        from layoutproof import __version__

        return JSONResponse({"ok": True, "version": __version__}, headers=_HEADERS)

    async def analyses(request: Request) -> Response:
        from .analyses import describe

        return JSONResponse({"analyses": describe()}, headers=_HEADERS)

    async def stats(request: Request) -> Response:
        return JSONResponse(state["pool"].stats(), headers=_HEADERS)

    async def task(request: Request) -> Response:
        name = request.path_params["task"]
        lane = ROUTES.get(name)
        if lane is None:
            return _error(404, "NotFound", f"no route /api/{name[:40]}; POST to {', '.join(ROUTES)}")
        try:
            payload = await read_json(request)
        except _BadRequest as e:
            return e.response
        try:
            status, body = await state["pool"].run(lane, name, payload)
        except Busy:
            return _error(
                503, "Busy", f"the {lane} lane's queue is full; retry shortly", condition="queue length"
            )
        return Response(body, status_code=status, media_type="application/json", headers=_HEADERS)

    async def http_error(request: Request, exc: Exception) -> Response:
        code = getattr(exc, "status_code", 500)
        detail = getattr(exc, "detail", "") or "error"
        return _error(code, "HTTPError", str(detail))

    async def server_error(request: Request, exc: Exception) -> Response:
        return _error(500, type(exc).__name__, str(exc)[:500])

    middleware = []
    if allowed_hosts:
        middleware.append(Middleware(_HostCheck, allowed=allowed_hosts))
    return Starlette(
        routes=[
            Route("/", index),
            Route("/api/health", health),
            Route("/api/analyses", analyses),
            Route("/api/stats", stats),
            Route("/api/{task}", task, methods=["POST"]),
            Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
        ],
        middleware=middleware,
        exception_handlers={HTTPException: http_error, Exception: server_error},
        lifespan=lifespan,
    )
