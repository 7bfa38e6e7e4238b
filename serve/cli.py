"""``layoutproof serve``: start the playground on a loopback port.

    layoutproof serve [--host 127.0.0.1] [--port 8765] [--workers N] [--budget S] [--proof-budget S]

Binds 127.0.0.1 by default: only this machine can reach it.  Another ``--host`` (``0.0.0.0``)
serves every interface, with a warning: the playground has no accounts, and each request may
use a worker for its whole budget.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from typing import List, Optional

__all__ = ["serve_main", "build_parser", "DEFAULT_PORT"]

DEFAULT_PORT = 8765


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="layoutproof serve",
        description="The web playground: type a layout, see it, prove things about it, share the link.",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1: this machine only)"
    )
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the TCP port (default {DEFAULT_PORT}; 0: any free)"
    )
    p.add_argument(
        "--workers", type=int, default=None, help="worker processes per lane (default: CPUs, 2..8)"
    )
    p.add_argument(
        "--budget", type=float, default=5.0, help="seconds per evaluate/draw/export request (default 5)"
    )
    p.add_argument(
        "--proof-budget",
        type=float,
        default=20.0,
        help="seconds per proof, explanation or analysis (default 20)",
    )
    p.add_argument(
        "--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"]
    )
    return p


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_main(argv: Optional[List[str]] = None) -> int:
    """Run the server until interrupted; 0 on a clean stop, 2 on bad arguments."""
    args = build_parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"error: --port must be in 0..65535, got {args.port}", file=sys.stderr)
        return 2
    if args.workers is not None and not 1 <= args.workers <= 64:
        print(f"error: --workers must be in 1..64, got {args.workers}", file=sys.stderr)
        return 2
    if not (0 < args.budget <= 600 and 0 < args.proof_budget <= 600):
        print("error: --budget and --proof-budget are seconds in (0, 600]", file=sys.stderr)
        return 2
    try:
        import uvicorn

        from .app import create_app
        from .pool import default_lanes
    except ImportError as e:
        print(f"error: {e}; install the server with: pip install 'layoutproof[serve]'", file=sys.stderr)
        return 2
    allowed = None
    if _loopback(args.host):
        allowed = ["127.0.0.1", "localhost", "[::1]", args.host]
    else:
        print(
            f"warning: serving on {args.host}: every machine that reaches it can use the playground",
            file=sys.stderr,
        )
    app = create_app(default_lanes(args.workers, args.budget, args.proof_budget), allowed_hosts=allowed)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"layoutproof playground on http://{shown}:{args.port}/ (Ctrl-C stops it)", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, server_header=False)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(serve_main())
