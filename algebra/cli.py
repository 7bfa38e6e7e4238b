"""The ``layoutproof`` command.

Sub-commands:
  eval EXPR   evaluate an expression of layouts in CuTe notation and print the result,
              e.g. ``layoutproof eval "composition((4,(2,2)):(2,(1,8)), (2,4):(1,2))"``
  demo        the short tour: evaluate, compose, divide, print, and a rejected composition
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Dict, List

from .errors import InadmissibleError, LayoutError


def _names() -> Dict[str, Callable[..., Any]]:
    import layoutproof as lp

    table: Dict[str, Callable[..., Any]] = {}
    for n in lp.__all__:
        obj = getattr(lp, n)
        if callable(obj) and not n.startswith("_") and not isinstance(obj, type(lp._)):
            table[n] = obj
    return table


def format_value(v: Any) -> str:
    """CuTe notation for layouts, recursively for tuples; ``str`` otherwise."""
    from .layout import Layout

    if isinstance(v, Layout):
        return str(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(format_value(e) for e in v) + ")"
    return str(v)


def _cmd_eval(args: argparse.Namespace) -> int:
    from .notation import evaluate

    try:
        v = evaluate(args.expr, _names())
    except InadmissibleError as e:
        print(f"inadmissible ({e.condition}): {e}", file=sys.stderr)
        if e.witness is not None:
            print(f"witness: {e.witness}", file=sys.stderr)
        return 2
    except LayoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_value(v))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run

    run()
    return 0


def main(argv: List[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="layoutproof", description="The CuTe layout algebra, sound and fast.")
    sub = p.add_subparsers(dest="cmd", required=True)
    pe = sub.add_parser("eval", help="evaluate a layout expression, print it in CuTe notation")
    pe.add_argument("expr", help='e.g. "composition((4,(2,2)):(2,(1,8)), (2,4):(1,2))"')
    pe.set_defaults(fn=_cmd_eval)
    pd = sub.add_parser("demo", help="a short tour of the algebra (the main job for now)")
    pd.set_defaults(fn=_cmd_demo)
    args = p.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
