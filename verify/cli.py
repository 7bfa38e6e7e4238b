"""``layoutproof check``: prove or refute a statement about layouts from the command line.

    layoutproof check "EXPR == EXPR" [--assume "M % 8 == 0"]... [--timeout MS] [--bound N]
    layoutproof check "admissible EXPR" [...]
    layoutproof check "..." --assume "M % 64 == 0" --emit dsl|cpp|python [--static M]

``EXPR`` is an expression of the ``layoutproof eval`` language; names that start with an
upper-case letter (``M``, ``N``, ``BLK_K``) are positive integer parameters.  Layouts
written in CuTe C++ or the CuTe DSL (or Triton's dict of bases) may stand anywhere in it
(:func:`layoutproof.interop.rewrite_foreign`): a dynamic leaf (``int``, ``?``) becomes a
parameter, and ``?{div=16}`` adds its divisibility to the assumptions.  ``A == B``
is functional equality of two layouts (or equality of two integer values), for every
parameter assignment satisfying the assumptions (:func:`layoutproof.verify.identity`);
``admissible f(args)`` asks whether the operation's side conditions hold
(:func:`layoutproof.verify.admissible`).

Prints the verdict -- proved, checked (within the printed bounds), refuted (with the
coordinate and the parameter assignment) or unknown (with the reason) -- with the method
and the time.  With ``--emit``, the assumptions the check used are printed as code instead
(:meth:`Result.render`: ``cute.assume`` for the CuTe DSL, ``CUTE_STATIC_ASSERT_V`` or a
runtime ``assert`` for C++, a Python guard) and the verdict goes to stderr.  Exit status:
0 proved or checked, 1 refuted, 3 unknown, 2 on errors.

The top-level ``layoutproof`` command (:mod:`layoutproof.cli`) dispatches ``check`` here;
both belong to the CLI layer, above every other (the import contract in pyproject.toml).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, Dict, List, Optional

from layoutproof.errors import LayoutError
from layoutproof.notation import evaluate, is_symbol_name, parse_call, symbol_names

from .result import Result

__all__ = ["main", "check_statement"]

EXIT = {"proved": 0, "checked": 0, "refuted": 1, "unknown": 3}


def _names() -> Dict[str, Any]:
    from layoutproof.cli import eval_names

    return eval_names()


def _split_eq(text: str) -> Optional[List[str]]:
    depth = 0
    for k, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "=" and depth == 0 and text[k : k + 2] == "==":
            rest = text[k + 2 :]
            if "==" in rest:
                raise LayoutError("a statement has one '==' (EXPR == EXPR)")
            return [text[:k].strip(), rest.strip()]
    return None


def check_statement(
    statement: str, *, assume: Any = (), timeout_ms: Optional[int] = None, bounds: Any = None
) -> Result:
    """Check a statement of the ``check`` command and return the :class:`Result`.

    >>> print(check_statement("coalesce((M,N):(1,M)) == M*N:1"))  # doctest: +ELLIPSIS
    proved (...): coalesce((M,N):(1,M)) == M*N:1
    >>> check_statement("composition((6,2):(1,7), (3,2):(2,3)) == (3,2):(2,3)").status
    'refuted'
    >>> print(check_statement('composition((?{div=16},?):(1,?), 16:1) == 16:1'))  # doctest: +ELLIPSIS
    proved (...): composition((S0,S1):(1,D2), 16:1) == 16:1
    """
    from layoutproof.interop import rewrite_foreign

    from ._run import extra_facts
    from .identity import admissible, identity

    if not isinstance(statement, str):
        raise LayoutError(f"a statement is text, got {type(statement).__name__}")
    text, facts = rewrite_foreign(statement.strip())
    if facts:
        assume = extra_facts(assume) + tuple(facts)
    names = _names()
    if text.startswith("admissible ") or text.startswith("admissible\t"):
        expr = text[len("admissible") :].strip()
        params = symbol_names(expr, names)
        if params:
            from layoutproof.errors import UndecidableConditionError
            from layoutproof.symbolic import assuming

            from ._run import extra_facts

            try:
                with assuming(*extra_facts(assume)):
                    fn, args = parse_call(expr, names, {})
            except UndecidableConditionError as e:
                return Result(
                    "unknown",
                    "z3",
                    claim=f"admissible {expr}",
                    condition=str(e.condition),
                    reason=f"the arguments need {e.condition} (assume it)",
                )
        else:
            fn, args = parse_call(expr, names, {})
        r = admissible(
            fn, *args, assume=assume, timeout_ms=timeout_ms, bounds=False if bounds is None else bounds
        )
        return r.replace(claim=f"admissible {expr}")
    sides = _split_eq(text)
    if sides is None or not sides[0] or not sides[1]:
        raise LayoutError(f"a statement is 'EXPR == EXPR' or 'admissible EXPR', got {statement!r:.200}")
    lhs, rhs = sides
    params = symbol_names(lhs, names)
    params += [p for p in symbol_names(rhs, names) if p not in params]

    def side(src: str) -> Any:
        return lambda *vals: evaluate(src, names, dict(zip(params, vals)))

    return identity(
        side(lhs),
        side(rhs),
        params=params,
        assume=assume,
        bounds=bounds,
        timeout_ms=timeout_ms,
        claim=f"{lhs} == {rhs}",
    )


_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z_0-9]*\b(?!\s*\()")


def _unused_assumptions(statement: str, assume: List[str]) -> List[str]:
    """Warnings for ``--assume`` conditions about a name the statement does not contain."""
    from layoutproof.interop import rewrite_foreign

    try:
        text, _ = rewrite_foreign(statement)
    except LayoutError:
        return []  # the check itself reports the error
    used = {w for w in _IDENT.findall(text) if is_symbol_name(w)}
    out = []
    for a in assume:
        names = sorted({w for w in _IDENT.findall(a) if is_symbol_name(w)} - used)
        if names:
            has = ", ".join(sorted(used)) or "no parameters"
            out.append(
                f"warning: --assume {a!r} names {', '.join(names)}, which the statement does not "
                f"contain (it has {has}); the assumption constrains nothing there"
            )
    return out


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="layoutproof check",
        description="Prove or refute 'EXPR == EXPR' (functional equality of layouts, for all values of the "
        "upper-case parameters satisfying the assumptions) or 'admissible EXPR'. Exit status: "
        "0 proved/checked, 1 refuted, 3 unknown, 2 errors.",
    )
    p.add_argument(
        "statement",
        help='e.g. "composition((M,N):(N,1), 4:1) == 4:N" or "admissible complement((2,2):(1,3), 16)"',
    )
    p.add_argument(
        "--assume",
        action="append",
        default=[],
        metavar="COND",
        help='an assumption on the parameters, e.g. "M %% 8 == 0" (repeatable)',
    )
    p.add_argument("--timeout", type=int, metavar="MS", help="time limit of each Z3 call (milliseconds)")
    p.add_argument(
        "--bound",
        type=int,
        metavar="N",
        help="when Z3 cannot decide, check every parameter value in 1..N (default: 1..64, widened "
        "by congruences; 0: no bounded check)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--smtlib", metavar="OUT", help="write the Z3 obligations as SMT-LIB2 to OUT")
    p.add_argument(
        "--emit",
        choices=("dsl", "cpp", "python"),
        help="print the assumptions the check used as code (CuTe DSL, C++, a Python guard) instead "
        "of the verdict, which goes to stderr",
    )
    p.add_argument(
        "--static",
        action="append",
        default=[],
        metavar="NAME",
        help="with --emit cpp: a parameter that is static in C++ (CUTE_STATIC_ASSERT_V; repeatable)",
    )
    args = p.parse_args(argv)
    if args.timeout is not None and args.timeout <= 0:
        p.error("--timeout must be a positive number of milliseconds")
    bounds: Any = None
    if args.bound is not None:
        if args.bound < 0:
            p.error("--bound must be >= 0")
        bounds = False if args.bound == 0 else args.bound
    for w in _unused_assumptions(args.statement, args.assume):
        print(w, file=sys.stderr)
    try:
        from layoutproof.cli import read_foreign

        read_foreign(args.statement)  # a note of what was read, where a foreign layout was
        r = check_statement(args.statement, assume=args.assume, timeout_ms=args.timeout, bounds=bounds)
        if args.smtlib:
            from .smtlib import to_smtlib

            if r.obligations:
                to_smtlib(r, args.smtlib)
            else:
                print(f"note: no SMT obligations to write (decided by {r.method})", file=sys.stderr)
        code = r.render(args.emit, static=args.static) if args.emit else None
    except LayoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: cannot write {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    if code is not None:
        print(str(r), file=sys.stderr)
        print(code)
    elif args.json:
        print(json.dumps(r.as_dict(), default=str, indent=2))
    else:
        print(r.explain())
    return EXIT[r.status]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
