"""Assumptions as code for the user's stack: CuTe DSL, C++ and a Python guard.

:func:`render_assumptions` turns conditions on a layout's parameters (Python syntax, as the
assumptions of a :class:`~layoutproof.verify.Result` or the condition of an
:class:`~layoutproof.errors.UndecidableConditionError`) into

* ``"dsl"`` -- ``x = cute.assume(x, divby=k)`` for a divisibility, a host-side check that
  raises ``ValueError`` before the kernel is traced otherwise;
* ``"cpp"`` -- ``CUTE_STATIC_ASSERT_V`` when every symbol is static, otherwise a runtime
  check that throws ``std::invalid_argument`` (``<stdexcept>``; CuTe has no runtime-check
  macro of its own, and ``assert`` would vanish under ``NDEBUG``, as Python's does under
  ``-O``);
* ``"python"`` -- a guard function that raises ``ValueError`` where a condition fails.

``Result.render(emit)`` and ``layoutproof check --emit`` use it for the assumptions a
check used; ``layoutproof.explain`` for those an explanation uses or needs.
"""

from __future__ import annotations

import json
import re
from typing import Any, List, Optional, Sequence, Tuple

from layoutproof import symbolic
from layoutproof.errors import MalformedLayoutError, show

__all__ = ["render_assumptions", "CODE_EMITS"]

#: the code renderings
CODE_EMITS = ("dsl", "cpp", "python")


def _cpp(c: Any, static: bool) -> str:
    sp = symbolic.sympy_module()

    def go(x: Any) -> str:
        if isinstance(x, sp.Integer):
            return f"Int<{int(x)}>{{}}" if static else str(int(x))
        if isinstance(x, sp.Symbol):
            return x.name
        if isinstance(x, sp.Mod):
            return f"({go(x.args[0])} % {go(x.args[1])})"
        if isinstance(x, sp.Add):
            return "(" + " + ".join(go(a) for a in x.args) + ")"
        if isinstance(x, sp.Mul):
            return "(" + " * ".join(go(a) for a in x.args) + ")"
        rel = {sp.Eq: "==", sp.Ne: "!=", sp.Le: "<=", sp.Lt: "<", sp.Ge: ">=", sp.Gt: ">"}
        for k, op in rel.items():
            if isinstance(x, k):
                return f"({go(x.args[0])} {op} {go(x.args[1])})"
        if isinstance(x, sp.And):
            return "(" + " && ".join(go(a) for a in x.args) + ")"
        if isinstance(x, sp.Or):
            return "(" + " || ".join(go(a) for a in x.args) + ")"
        if isinstance(x, sp.Not):
            return f"!{go(x.args[0])}"
        if isinstance(x, (sp.floor, sp.ceiling)):  # of non-negative values (extents, coordinates)
            n, d = sp.fraction(sp.together(x.args[0]))
            if isinstance(x, sp.floor):
                return f"({go(n)} / {go(d)})"
            return f"(({go(n)} + {go(d)} - {go(sp.Integer(1))}) / {go(d)})"
        raise MalformedLayoutError(f"no C++ form for {show(x)}")

    return go(c)


def _py(c: Any, exact: bool = True) -> str:
    """``c`` as plain Python over the symbols: :func:`layoutproof.symbolic.as_python` where
    that has no SymPy function in it (``Mod(...)`` inside a product, ``floor``), else
    written out with Python's operators (``%``, ``//``), so the code runs without SymPy.
    With ``exact`` a quotient is a ``Fraction`` (the caller imports it), never a float;
    without, ``/`` (the CuTe DSL host check, whose quotients the library built exact)."""
    text = symbolic.as_python(c)
    if not re.search(r"\b[A-Za-z_]\w*\(", text) and (not exact or "/" not in text):
        return text
    sp = symbolic.sympy_module()

    def go(x: Any) -> str:
        if x is sp.true or x is sp.false:
            return str(bool(x))
        if isinstance(x, sp.Integer):
            return str(int(x))
        if isinstance(x, sp.Rational):  # exact: a float would round past 2**53
            return f"Fraction({int(x.p)}, {int(x.q)})" if exact else f"({int(x.p)} / {int(x.q)})"
        if isinstance(x, sp.Symbol):
            return x.name
        if isinstance(x, sp.Mod):
            return f"({go(x.args[0])} % {go(x.args[1])})"
        if isinstance(x, sp.Add):
            return "(" + " + ".join(go(a) for a in x.args) + ")"
        if isinstance(x, sp.Mul):
            return "(" + " * ".join(go(a) for a in x.args) + ")"
        if isinstance(x, sp.Pow) and isinstance(x.args[1], sp.Integer):
            e = int(x.args[1])
            if e >= 0:
                return f"({go(x.args[0])} ** {e})"
            return f"Fraction(1, {go(x.args[0])} ** {-e})" if exact else f"(1 / {go(x.args[0])} ** {-e})"
        if isinstance(x, (sp.floor, sp.ceiling)):
            n, d = sp.fraction(sp.together(x.args[0]))
            if isinstance(x, sp.floor):
                return f"({go(n)} // {go(d)})"
            return f"(-((-{go(n)}) // {go(d)}))"
        if isinstance(x, (sp.Min, sp.Max)):
            return f"{type(x).__name__.lower()}(" + ", ".join(go(a) for a in x.args) + ")"
        rel = {sp.Eq: "==", sp.Ne: "!=", sp.Le: "<=", sp.Lt: "<", sp.Ge: ">=", sp.Gt: ">"}
        for k, op in rel.items():
            if isinstance(x, k):
                return f"({go(x.args[0])} {op} {go(x.args[1])})"
        if isinstance(x, sp.And):
            return "(" + " and ".join(go(a) for a in x.args) + ")"
        if isinstance(x, sp.Or):
            return "(" + " or ".join(go(a) for a in x.args) + ")"
        if isinstance(x, sp.Not):
            return f"(not {go(x.args[0])})"
        raise MalformedLayoutError(f"no Python form for {show(x)}")

    return go(c)


def _with_fraction(code: str) -> str:
    """``code`` after the import of ``Fraction`` where it uses one (a quotient in a
    condition is the rational it is, never a float)."""
    return "from fractions import Fraction\n" + code if "Fraction(" in code else code


def _divby(c: Any) -> Optional[Tuple[str, int]]:
    """``(name, k)`` when ``c`` says ``name % k == 0``."""
    sp = symbolic.sympy_module()
    if isinstance(c, sp.Eq) and c.args[1] == 0 and isinstance(c.args[0], sp.Mod):
        a, b = c.args[0].args
        if isinstance(a, sp.Symbol) and isinstance(b, sp.Integer):
            return a.name, int(b)
    return None


def render_assumptions(
    conds: Sequence[str], emit: str, *, what: str = "assumption", static: Sequence[str] = ()
) -> str:
    """Assumptions (Python syntax, as ``UndecidableConditionError.condition``) as code:
    ``"dsl"`` -- ``x = cute.assume(x, divby=k)`` for divisibility, a host-side check raising
    ``ValueError`` otherwise; ``"cpp"`` -- ``CUTE_STATIC_ASSERT_V`` when every symbol is in
    ``static``, else a runtime check throwing ``std::invalid_argument``; ``"python"`` -- a
    guard function raising ``ValueError``.

    >>> print(render_assumptions(["M % 64 == 0"], "dsl"))
    M = cute.assume(M, divby=64)
    >>> print(render_assumptions(["M % 64 == 0"], "cpp", static=["M"]))
    CUTE_STATIC_ASSERT_V((M % Int<64>{}) == Int<0>{});
    >>> print(render_assumptions(["M % 64 == 0"], "cpp"))
    if (!((M % 64) == 0)) throw std::invalid_argument("assumption: needs M % 64 == 0");  // <stdexcept>
    """
    if emit not in CODE_EMITS:
        raise MalformedLayoutError(f"render_assumptions: emit must be dsl, cpp or python, got {show(emit)}")
    if not conds:
        return {
            "dsl": "# no assumptions needed",
            "cpp": "// no assumptions needed",
            "python": "# no assumptions needed",
        }[emit]
    parsed = [(t, symbolic.parse_expr(t)) for t in conds]
    lines: List[str] = []
    if emit == "python":
        syms = sorted({s.name for _t, c in parsed for s in c.free_symbols})
        lines.append(f"def guard({', '.join(f'{s}: int' for s in syms)}) -> None:")
        lines.append(f'    """Raise ValueError unless the assumptions of {what} hold."""')
        for t, c in parsed:
            lines.append(f"    if not ({_py(c)}):")
            lines.append(f"        raise ValueError({(what + ': needs ' + t)!r})")
        return _with_fraction("\n".join(lines))
    for t, c in parsed:
        need = f"{what}: needs {t}"
        if emit == "dsl":
            dv = _divby(c)
            if dv is not None:
                lines.append(f"{dv[0]} = cute.assume({dv[0]}, divby={dv[1]})")
            else:
                lines.append("# check on the host, before the kernel is traced:")
                lines.append(f"if not ({_py(c, exact=False)}):")
                lines.append(f"    raise ValueError({need!r})")
        else:
            names = {s.name for s in c.free_symbols}
            if names and names <= set(static):
                dv = _divby(c)
                if dv is not None:
                    lines.append(f"CUTE_STATIC_ASSERT_V(({dv[0]} % Int<{dv[1]}>{{}}) == Int<0>{{}});")
                else:
                    lines.append(f"CUTE_STATIC_ASSERT_V({_cpp(c, True)});")
            else:
                msg = json.dumps(need)  # a C string literal (JSON's escapes are C's)
                lines.append(f"if (!{_cpp(c, False)}) throw std::invalid_argument({msg});  // <stdexcept>")
    return "\n".join(lines)
