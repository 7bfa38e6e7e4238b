"""The web playground (``layoutproof serve``): a local HTTP server (Starlette on uvicorn)
serving a page -- an editor for layout expressions, their pictures, verdicts with the
counterexample drawn, analyses, explanations with repairs, export as code, the state in
the URL -- and the JSON API the page uses.

Every computation runs in a worker process under a time budget (:mod:`.pool`); requests
are parsed by the notation's reader, never evaluated as Python (:mod:`.work`).

:func:`create_app` builds the ASGI application, :func:`serve_main` is the command.
The server's dependencies (``pip install 'layoutproof[serve]'``) are imported only here
and in :mod:`.app`, never by ``import layoutproof``.
"""

from __future__ import annotations

from typing import Any, List, Optional

__all__ = ["create_app", "serve_main"]


def create_app(*args: Any, **kwargs: Any) -> Any:
    """The Starlette application (:func:`layoutproof.serve.app.create_app`)."""
    from .app import create_app as make

    return make(*args, **kwargs)


def serve_main(argv: Optional[List[str]] = None) -> int:
    """``layoutproof serve [--host H] [--port P] ...`` (:mod:`layoutproof.serve.cli`)."""
    from .cli import serve_main as run

    return run(argv)
