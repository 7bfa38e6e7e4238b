"""The ``layoutproof`` command.

Sub-commands:
  eval EXPR   evaluate an expression of layouts in CuTe notation and print the result,
              e.g. ``layoutproof eval "composition((4,(2,2)):(2,(1,8)), (2,4):(1,2))"``
  show EXPR   draw a layout: CuTe's print_layout table by default; --svg/--tikz/--png
              write pictures; --tv TILE draws a thread-value layout over an (M,N) tile
  check STMT  prove or refute "EXPR == EXPR" or "admissible EXPR" (layoutproof.verify)
  prove       run the theorem catalog (layoutproof.proofs)
  gemm        emit a proven GEMM kernel (Hopper wgmma, or mma.sync); run, check and time it
              where a GPU is present
  demo        a short tour: evaluate, compose, divide, print, and a rejected composition

``eval``, ``show`` and ``check`` also read layouts written in CuTe C++ (type spellings
from compiler messages, ``print`` output, ``make_layout(make_shape(Int<4>{}, 8), ...)``),
in the CuTe DSL's printed forms (``(?,?{div=16}):(1,?)``, ``!cute.layout<"...">``) and
Triton's dict of bases, anywhere in the expression (:mod:`layoutproof.interop`).

This module is the top layer (the import contract in pyproject.toml): it may import every
layer.  The sub-commands implemented in the higher layers (``check``, ``prove``, ``gemm``) are
listed in ``EXTERNAL`` with a function that imports their module -- a plain import, inside the
function so that ``layoutproof --help`` loads none of them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Dict, List, Tuple

from .composed import ComposedLayout
from .errors import InadmissibleError, LayoutError
from .layout import Layout
from .notation import evaluate

#: what ``show`` draws at most unless told otherwise (``--max-cells``)
SHOW_MAX_CELLS = 16384


def eval_names() -> Dict[str, Callable[..., Any]]:
    """The names an expression may call (``layoutproof eval``, ``show``, ``check``): every
    public function and class of :mod:`layoutproof`."""
    import layoutproof as lp

    table: Dict[str, Callable[..., Any]] = {}
    for n in lp.__all__:
        obj = getattr(lp, n)
        if callable(obj) and not n.startswith("_") and not isinstance(obj, type(lp._)):
            table[n] = obj
    return table


def format_value(v: Any) -> str:
    """CuTe notation for layouts, recursively for tuples; ``str`` otherwise."""
    if isinstance(v, Layout):
        return str(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(format_value(e) for e in v) + ")"
    return str(v)


def read_foreign(text: str) -> tuple:
    """``(text in layoutproof notation, assumptions)``: CuTe C++, CuTe DSL and Triton
    layouts inside ``text`` rewritten (:func:`layoutproof.interop.rewrite_foreign`); a note
    on standard error says what was read, where anything was."""
    if not any(c in text for c in "<?{@!") and ".make_" not in text:
        return text, ()  # nothing foreign: no need to load the importers
    from .interop import rewrite_foreign

    native, facts = rewrite_foreign(text)
    if native != text:
        note = f"note: read as {native}"
        if facts:
            note += f" (assuming {', '.join(facts)})"
        print(note, file=sys.stderr)
    return native, facts


def _evaluate(text: str) -> Any:
    native, facts = read_foreign(text)
    if facts:
        from .symbolic import assuming

        with assuming(*facts):
            return evaluate(native, eval_names())
    return evaluate(native, eval_names())


def _cmd_eval(args: argparse.Namespace) -> int:
    try:
        v = _evaluate(args.expr)
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


def _cmd_show(args: argparse.Namespace) -> int:
    from . import draw

    def write(path: str, text: str) -> None:
        if path == "-":
            sys.stdout.write(text)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)

    try:
        if args.max_cells < 0:
            raise LayoutError("--max-cells must be >= 0 (0: no limit)")
        L = _evaluate(args.expr)
        if not isinstance(L, (Layout, ComposedLayout)):
            try:  # a bare shape, e.g. "(4,8)", is its compact column-major layout
                L = Layout.parse(args.expr)
            except LayoutError:
                raise LayoutError(f"show draws a layout; {args.expr!r} is {format_value(L)}") from None
        color = args.color

        def limit(M: int, N: int) -> None:
            if args.max_cells and M * N > args.max_cells:
                raise LayoutError(
                    f"{L} has {M}x{N} = {M * N} cells, more than --max-cells {args.max_cells}: pass a "
                    "larger --max-cells (0: no limit) to draw it anyway"
                )

        if args.tv is not None:
            if not isinstance(L, Layout):
                raise LayoutError(f"--tv draws a thread-value layout; {L} is a swizzled layout")
            color = color or "thread"
            if color not in ("thread", "value", "none"):
                raise LayoutError(f"--color {color} is for layouts; a TV picture takes thread, value or none")
            thr = Layout.parse(args.thr_id) if args.thr_id else None
            tile = draw.as_tile(args.tv)
            limit(tile[0].size, tile[1].size)
            table = draw.tv_layout_table(L, args.tv, thr_id=thr)
            svg = lambda: draw.tv_layout_svg(L, args.tv, color=color, thr_id=thr, max_cells=None)
            tikz = lambda: draw.tv_layout_tikz(L, args.tv, color=color, thr_id=thr)
        else:
            if args.thr_id:
                raise LayoutError("--thr-id goes with --tv")
            color = color or "offset"
            if color not in ("offset", "bank", "none"):
                raise LayoutError(
                    f"--color {color} is for TV layouts (--tv); a layout takes offset, bank or none"
                )
            if color == "bank":
                draw.smem_bank(0, args.bytes)  # refuses a non-positive element size
            limit(*draw.rank2_extents(L))
            table = draw.layout_table(L)
            svg = lambda: draw.layout_svg(L, color=color, elem_bytes=args.bytes, max_cells=None)
            tikz = lambda: draw.layout_tikz(L, color=color, elem_bytes=args.bytes)
        if args.png == "-":
            raise LayoutError("--png writes a file; give it a path")
        outputs = [(p, k) for p, k in ((args.svg, "svg"), (args.tikz, "tikz"), (args.png, "png")) if p]
        if not outputs:
            sys.stdout.write(table)
            return 0
        for path, kind in outputs:
            if kind == "svg":
                write(path, svg())
            elif kind == "tikz":
                write(path, tikz())
            else:
                draw.svg_to_png(svg(), path)
        if all(path != "-" for path, _ in outputs):
            for path, _ in outputs:
                print(f"wrote {path}")
    except InadmissibleError as e:
        print(f"inadmissible ({e.condition}): {e}", file=sys.stderr)
        if e.witness is not None:
            print(f"witness: {e.witness}", file=sys.stderr)
        return 2
    except LayoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: cannot write {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run

    run()
    return 0


def _check(argv: List[str]) -> int:
    from .verify.cli import main as check_main

    return check_main(argv)


def _prove(argv: List[str]) -> int:
    from .proofs.cli import main as prove_main

    return prove_main(argv)


def _explain(argv: List[str]) -> int:
    from .explain import main as explain_main

    return explain_main(argv)


def _gemm(argv: List[str]) -> int:
    from .gpu.cli import main as gemm_main

    return gemm_main(argv)


def _analyze(argv: List[str]) -> int:
    from .gpu.cli import analyze_main

    return analyze_main(argv)


def _serve(argv: List[str]) -> int:
    from .serve import serve_main

    return serve_main(argv)


#: sub-command -> (its ``main(argv) -> int``, one-line help): the higher layers' commands,
#: each imported when run
EXTERNAL: Dict[str, Tuple[Callable[[List[str]], int], str]] = {
    "check": (
        _check,
        'prove or refute "EXPR == EXPR" or "admissible EXPR" (symbols, assumptions, Z3)',
    ),
    "explain": (
        _explain,
        "why an expression is refused: the condition, a witness, a picture, repairs proven first "
        "(--steps, --emit dsl|cpp|python, --json)",
    ),
    "prove": (_prove, "check the theorem catalog and write a report (layoutproof-report/)"),
    "gemm": (
        _gemm,
        "generate a proven GEMM kernel (Hopper wgmma by default, or --path mma.sync; --emit FILE); "
        "run, check and time it on a GPU",
    ),
    "analyze": (
        _analyze,
        "your own layouts: bank conflicts per instruction phase, coalescing, wgmma operands, the "
        "least conflict-free swizzle, index width, TMA pre-flight -- proved, or the witness (--json)",
    ),
    "serve": (
        _serve,
        "the web playground on http://127.0.0.1:8765/: draw, prove, analyse, explain, export, share "
        "by URL (--host, --port)",
    ),
}


def main(argv: List[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:  # `layoutproof ... | head`: the reader left; no traceback
        import os

        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor
            pass
        return 1


def _main(argv: List[str] | None) -> int:
    args_in = sys.argv[1:] if argv is None else list(argv)
    if args_in and args_in[0] in EXTERNAL:
        run, _help = EXTERNAL[args_in[0]]
        return int(run(args_in[1:]))
    from . import __version__

    p = argparse.ArgumentParser(prog="layoutproof", description="The CuTe layout algebra, sound and fast.")
    p.add_argument("--version", action="version", version=f"layoutproof {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    pe = sub.add_parser("eval", help="evaluate a layout expression, print it in CuTe notation")
    pe.add_argument(
        "expr",
        help='e.g. "composition((4,(2,2)):(2,(1,8)), (2,4):(1,2))"; CuTe C++, CuTe DSL '
        "and Triton layouts are read too",
    )
    pe.set_defaults(fn=_cmd_eval)
    ps = sub.add_parser(
        "show",
        help="draw a layout: the print_layout table, or SVG / TikZ / PNG pictures",
        description="Print CuTe's print_layout table of a rank-2 layout (or, with --tv, the "
        "thread-value table of a TV layout); --svg, --tikz and --png write pictures instead "
        "('-' writes SVG or TikZ to standard output).",
    )
    ps.add_argument(
        "expr",
        help="a layout in CuTe notation or an expression giving one, "
        'e.g. "(4,8):(1,4)" or "blocked_product((2,2):(1,2), (4,4))"',
    )
    ps.add_argument("--svg", metavar="OUT", help="write an SVG picture to OUT")
    ps.add_argument("--tikz", metavar="OUT", help="write a standalone LaTeX/TikZ document to OUT")
    ps.add_argument("--png", metavar="OUT", help="write a PNG picture to OUT (needs cairosvg)")
    ps.add_argument(
        "--tv",
        metavar="TILE",
        help="draw EXPR as a (thread, value) -> index layout over "
        'the tile TILE: an (M,N) shape "(16,8)", "16x8", or a layout "(16,8):(8,1)"',
    )
    ps.add_argument(
        "--thr-id",
        metavar="LAYOUT",
        help='with --tv: the thread ids shown, as CuTe\'s ThrID, e.g. "(4,2):(1,16)" for SM70',
    )
    ps.add_argument(
        "--color",
        choices=["offset", "bank", "thread", "value", "none"],
        help="cell colors: offset (default) or bank for layouts; thread (default) or value for TV layouts",
    )
    ps.add_argument(
        "--bytes", type=int, default=4, metavar="N", help="element size in bytes for --color bank (default 4)"
    )
    ps.add_argument(
        "--max-cells",
        type=int,
        default=SHOW_MAX_CELLS,
        metavar="N",
        help=f"refuse to draw more than N cells (default {SHOW_MAX_CELLS}; 0: no limit)",
    )
    ps.set_defaults(fn=_cmd_show)
    pd = sub.add_parser("demo", help="a short tour of the algebra")
    pd.set_defaults(fn=_cmd_demo)
    for name, (_run, text) in EXTERNAL.items():  # listed in --help; run by the dispatch above
        sub.add_parser(name, help=text, add_help=False)
    args = p.parse_args(args_in)
    return int(args.fn(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
