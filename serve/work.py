"""What the playground computes, one function per API route: each takes the request's JSON
object and returns a JSON-ready dict, or raises a :class:`~layoutproof.errors.LayoutError`
naming what is wrong.  They run inside the worker processes of :mod:`.pool`, under the
request's time budget (:func:`layoutproof.budget.deadline`).

Nothing here evaluates Python: expressions are read by the notation's parser
(:func:`layoutproof.notation.evaluate`), foreign spellings by :mod:`layoutproof.interop`,
assumptions by :func:`layoutproof.symbolic.parse_expr`.

>>> r = run_task("eval", {"expr": "composition((4,2):(1,4), 8:1)"})
>>> r["value"], r["kind"], 'class="cell"' in r["svg"]
('8:1', 'layout', True)
>>> r = run_task("check", {"kind": "equal", "expr": "(4,2):(2,1)", "other": "(4,2):(1,4)"})
>>> r["status"], r["witness_cell"]
('refuted', [1, 0])
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from layoutproof.errors import LayoutError, MalformedLayoutError, show

__all__ = ["TASKS", "run_task", "error_body", "native_text", "jsonable", "MAX_EXPR", "MAX_DRAW_CELLS"]

#: the longest expression (characters) a request may carry
MAX_EXPR = 4000
#: the most assumptions, and the longest one
MAX_ASSUME, MAX_ASSUME_LEN = 16, 400
#: the most cells a picture of the playground has
MAX_DRAW_CELLS = 4096
#: the most symbol values given for drawing a symbolic layout, and the largest
MAX_VALUES, MAX_VALUE = 16, 1 << 16
#: names of the algebra a request may not call: they write to standard output
_HIDDEN_PREFIX = ("print_",)


# ----------------------------------------------------------------------------- reading
def _text(p: Mapping[str, Any], key: str, *, required: bool = True, limit: int = MAX_EXPR) -> str:
    v = p.get(key)
    if v is None or (v == "" and not required):
        if required:
            raise MalformedLayoutError(f"the request needs {key!r} (text)")
        return ""
    if type(v) is not str:
        raise MalformedLayoutError(f"{key!r} must be text, got {type(v).__name__} {show(v)}")
    if len(v) > limit:
        raise MalformedLayoutError(f"{key!r} is longer than {limit} characters ({len(v)})")
    if required and not v.strip():
        raise MalformedLayoutError(f"{key!r} is empty")
    return v


def _assume(p: Mapping[str, Any]) -> Tuple[str, ...]:
    a = p.get("assume", [])
    if type(a) is str:
        a = [s for s in (x.strip() for x in a.replace(";", "\n").split("\n")) if s]
    if type(a) is not list or len(a) > MAX_ASSUME:
        raise MalformedLayoutError(f"'assume' is a list of at most {MAX_ASSUME} conditions, got {show(a)}")
    out = []
    for c in a:
        if type(c) is not str or not c.strip() or len(c) > MAX_ASSUME_LEN:
            raise MalformedLayoutError(
                f"each assumption is a condition of at most {MAX_ASSUME_LEN} characters, got {show(c)}"
            )
        out.append(c.strip())
    return tuple(out)


def _values(p: Mapping[str, Any]) -> Dict[str, int]:
    from layoutproof.notation import is_symbol_name

    v = p.get("values", {})
    if v is None or v == "":
        return {}
    if type(v) is str:  # "M=8, N=4"
        d: Dict[str, Any] = {}
        for part in v.replace(";", ",").split(","):
            if not part.strip():
                continue
            k, eq, val = part.partition("=")
            if not eq or not val.strip().isdigit() or len(val.strip()) > 7:
                raise MalformedLayoutError(f"'values' reads NAME=INT, ...; got {show(part.strip())}")
            d[k.strip()] = int(val)
        v = d
    if type(v) is not dict or len(v) > MAX_VALUES:
        raise MalformedLayoutError(f"'values' maps at most {MAX_VALUES} symbols to integers, got {show(v)}")
    for k, x in v.items():
        if not is_symbol_name(k) or type(x) is not int or not 1 <= x <= MAX_VALUE:
            raise MalformedLayoutError(
                f"'values': {show(k)} = {show(x)} is not a symbol with a value in [1, {MAX_VALUE}]"
            )
    return dict(v)


def _choice(p: Mapping[str, Any], key: str, choices: Tuple[str, ...], default: str) -> str:
    v = p.get(key, default)
    if v is None or v == "":
        v = default
    if v not in choices:
        raise MalformedLayoutError(f"{key!r} is one of {', '.join(choices)}, got {show(v)}")
    return str(v)


def _int(p: Mapping[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    v = p.get(key, default)
    if v is None or v == "":
        return default
    if type(v) is str and v.strip().isdigit() and len(v) < 12:
        v = int(v)
    if type(v) is not int or not lo <= v <= hi:
        raise MalformedLayoutError(f"{key!r} is an integer in [{lo}, {hi}], got {show(v)}")
    return v


def native_text(text: str) -> Tuple[str, Tuple[str, ...]]:
    """``text`` in layoutproof's notation and the assumptions of its dynamic leaves: CuTe
    C++ and DSL spellings and Triton dicts rewritten (:func:`layoutproof.interop.rewrite_foreign`)."""
    if not any(c in text for c in "<?{@!") and ".make_" not in text:
        return text, ()
    from layoutproof.interop import rewrite_foreign

    native, facts = rewrite_foreign(text)
    return native, tuple(facts)


def names() -> Dict[str, Callable[..., Any]]:
    """The functions an expression may call: the algebra's public names, without the
    printing ones."""
    from layoutproof.cli import eval_names

    return {k: f for k, f in eval_names().items() if not k.startswith(_HIDDEN_PREFIX)}


def _evaluate(text: str, facts: Tuple[str, ...], values: Optional[Dict[str, Any]] = None) -> Any:
    from layoutproof.notation import evaluate
    from layoutproof.symbolic import assuming

    if facts:
        with assuming(*facts):
            return evaluate(text, names(), dict(values) if values else None)
    return evaluate(text, names(), dict(values) if values else None)


# ----------------------------------------------------------------------------- JSON
def jsonable(x: Any, depth: int = 0) -> Any:
    """``x`` with tuples as lists, numpy numbers as ints, other objects as their text."""
    if depth > 40:
        return str(x)
    if x is None or isinstance(x, (bool, str)):
        return x
    if type(x) is int:
        return x if abs(x) < (1 << 53) else str(x)
    if isinstance(x, float):
        return x if x == x and abs(x) != float("inf") else str(x)
    if isinstance(x, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v, depth + 1) for v in x]
    if hasattr(x, "tolist") and hasattr(x, "dtype"):
        return jsonable(x.tolist(), depth + 1)
    if hasattr(x, "as_dict"):
        try:
            return jsonable(x.as_dict(), depth + 1)
        except Exception:  # an object whose as_dict needs arguments: its text
            return str(x)
    return str(x)


def error_body(e: BaseException) -> Dict[str, Any]:
    """The JSON body of an error answer: the error's type, message, and for an
    InadmissibleError or an undecidable condition the condition and the witness."""
    body: Dict[str, Any] = {"type": type(e).__name__, "message": str(e)[:2000]}
    cond = getattr(e, "condition", None)
    if cond is not None:
        body["condition"] = str(cond)[:2000]
    wit = getattr(e, "witness", None)
    if wit is not None:
        body["witness"] = jsonable(wit)
    for k in ("limit", "reason"):
        v = getattr(e, k, None)
        if v is not None:
            body[k] = jsonable(v)
    return body


# ----------------------------------------------------------------------------- pictures
def _rank2(L: Any) -> Tuple[Any, List[str]]:
    """``L`` grouped to rank 2 when its rank is higher (with a note saying so)."""
    from layoutproof.composed import ComposedLayout
    from layoutproof.layout import group_layout

    if type(L.shape) is tuple and L.rank > 2:
        G: Any
        if isinstance(L, ComposedLayout):
            G = ComposedLayout(L.layout_a, L.offset, group_layout(L.layout_b, 1, L.rank))
        else:
            G = group_layout(L, 1, L.rank)
        return G, [f"rank {L.rank}: drawn with modes 1..{L.rank - 1} grouped as columns ({G})"]
    return L, []


def _check_cells(M: int, N: int, what: str) -> None:
    if M * N > MAX_DRAW_CELLS:
        raise MalformedLayoutError(
            f"{what} has {M}x{N} = {M * N} cells; the playground draws at most {MAX_DRAW_CELLS} "
            "(take a tile of it, e.g. with local_tile or a slice)"
        )


def _draw(L: Any, color: str, elem_bytes: int) -> Tuple[str, List[str]]:
    from layoutproof import draw

    from . import svg

    G, notes = _rank2(L)
    M, N = draw.rank2_extents(G)
    _check_cells(M, N, str(L))
    return svg.layout_svg(G, color=color, elem_bytes=elem_bytes), notes


def _concrete(L: Any, values: Dict[str, int], facts: Tuple[str, ...]) -> Tuple[Any, List[str]]:
    """``L`` with ``values`` substituted for its symbols; (None, [why]) when some symbol has
    no value."""
    from layoutproof.composed import ComposedLayout
    from layoutproof.layout import Layout

    free: List[str] = []
    parts = [L.layout_b, L.layout_a] if isinstance(L, ComposedLayout) else [L]
    for part in parts:
        if isinstance(part, Layout) and part.is_symbolic:
            free += [s.name for s in part.free_symbols if s.name not in free]
    if not free:
        return L, []
    missing = sorted(n for n in free if n not in values)
    if missing:
        return None, [
            f"symbolic in {', '.join(sorted(free))}: give values for {', '.join(missing)} to draw it"
        ]
    asg = {n: values[n] for n in free}
    if isinstance(L, ComposedLayout):
        a = L.layout_a.subs(**asg) if isinstance(L.layout_a, Layout) else L.layout_a
        C: Any = ComposedLayout(a, L.offset, L.layout_b.subs(**asg))
    else:
        C = L.subs(**asg)
    return C, [f"drawn at {', '.join(f'{k} = {v}' for k, v in sorted(asg.items()))}: {C}"]


def _op_name(text: str, table: Mapping[str, Any]) -> Optional[str]:
    head = text.strip().split("(", 1)[0].strip()
    return head if head in table and text.strip().endswith(")") else None


# ----------------------------------------------------------------------------- tasks
def task_eval(p: Mapping[str, Any]) -> Dict[str, Any]:
    """``POST /api/eval``: the value of ``expr`` in CuTe notation and its picture."""
    from layoutproof import draw
    from layoutproof.cli import format_value
    from layoutproof.composed import ComposedLayout
    from layoutproof.layout import Layout
    from layoutproof.verify.post import OPERATIONS

    from . import svg

    expr = _text(p, "expr")
    facts = _assume(p)
    values = _values(p)
    tv = _text(p, "tv", required=False, limit=400)
    thr = _text(p, "thr_id", required=False, limit=400)
    elem_bytes = _int(p, "bytes", 4, 1, 64)
    native, read = native_text(expr)
    facts_all = facts + tuple(f for f in read if f not in facts)
    v = _evaluate(native, facts_all)
    out: Dict[str, Any] = {
        "expr": expr,
        "native": native if native != expr else None,
        "facts": list(facts_all),
        "value": format_value(v),
        "notes": [],
    }
    op = _op_name(native, names())
    out["operation"] = op
    out["postcondition"] = op in OPERATIONS if op else False
    if isinstance(v, tuple) and not isinstance(v, Layout):
        try:  # a bare shape, e.g. "(4,8)", is its compact column-major layout (as `show` reads it)
            shaped = Layout.parse(native)
        except LayoutError:
            shaped = None
        if shaped is not None:
            v = shaped
            out["value"] = format_value(v)
            out["notes"].append(f"a shape: drawn as its compact column-major layout {v}")
    if not isinstance(v, (Layout, ComposedLayout)):
        out["kind"] = "value"
        return out
    out["kind"] = "composed" if isinstance(v, ComposedLayout) else "layout"
    syms = sorted(s.name for s in v.free_symbols) if isinstance(v, Layout) and v.is_symbolic else []
    if isinstance(v, ComposedLayout):
        for part in (v.layout_a, v.layout_b):
            if isinstance(part, Layout) and part.is_symbolic:
                syms += [s.name for s in part.free_symbols if s.name not in syms]
    out["symbols"] = sorted(syms)
    C, notes = _concrete(v, values, facts_all)
    out["notes"] += notes
    if C is None:
        return out
    out["drawn"] = str(C)
    if tv:
        if not isinstance(C, Layout):
            raise MalformedLayoutError(f"a TV picture draws a Layout; {C} is a swizzled layout")
        color = _choice(p, "color", ("thread", "value", "none"), "thread")
        tile = draw.as_tile(tv)
        _check_cells(tile[0].size, tile[1].size, f"the tile {tv}")
        thr_id = Layout.parse(thr) if thr else None
        out["svg"] = svg.tv_layout_svg(C, tv, color=color, thr_id=thr_id)
        out["picture"] = "tv"
        return out
    color = _choice(p, "color", ("offset", "bank", "none"), "offset")
    out["svg"], more = _draw(C, color, elem_bytes)
    out["notes"] += more
    out["picture"] = "layout"
    if isinstance(C, ComposedLayout) and C.swizzle is not None:
        out["before_svg"], _ = _draw(C.layout_b, color, elem_bytes)
        out["notes"].append(
            f"before the swizzle: {C.layout_b}"
            + (f" (offset {C.offset} added before it)" if C.offset else "")
        )
    return out


def _witness_picture(out: Dict[str, Any], L: Any, coord: Any, assignment: Optional[Dict[str, int]]) -> None:
    """Add the picture of ``L`` with the cell of ``coord`` marked, and that cell's
    (row, column) for the page to mark on its own picture."""
    from layoutproof import draw
    from layoutproof.explain import picture_svg
    from layoutproof.layout import Layout

    if type(coord) is not int or not isinstance(L, Layout):
        return
    if L.is_symbolic:
        if not assignment:
            return
        L = L.subs(**{k: v for k, v in assignment.items() if any(s.name == k for s in L.free_symbols)})
        if L.is_symbolic:
            return
    G, _ = _rank2(L)
    M, N = draw.rank2_extents(G)
    if M * N > MAX_DRAW_CELLS or not 0 <= coord < M * N:
        return
    out["witness_svg"] = picture_svg(L, coord)
    out["witness_cell"] = [coord % M, coord // M]
    out["witness_layout"] = str(L)


def _refusal_picture(out: Dict[str, Any], expr: str, facts: Tuple[str, ...]) -> None:
    """The picture of the refused operand with the witness marked, as ``explain`` draws it."""
    from layoutproof import draw
    from layoutproof.explain import explain

    ex = explain(expr, assume=facts, repairs=False)
    if ex.drawn is None:
        return
    L, mark = ex.drawn
    G, _ = _rank2(L)
    M, N = draw.rank2_extents(G)
    if type(mark) is not int or M * N > MAX_DRAW_CELLS:
        return
    out["witness_svg"] = ex.svg()
    out["witness_cell"] = [mark % M, mark // M]
    out["witness_layout"] = str(L)


def _result_dict(r: Any) -> Dict[str, Any]:
    d = jsonable(r.as_dict())
    d["text"] = str(r)
    d["explain"] = r.explain()
    return d


def task_check(p: Mapping[str, Any]) -> Dict[str, Any]:
    """``POST /api/check``: ``kind`` ``"equal"`` (``expr == other``), ``"admissible"``
    (the side conditions of the call ``expr``) or ``"post"`` (the post-condition of the
    call's result), each a :class:`~layoutproof.verify.Result`."""
    from layoutproof import budget
    from layoutproof.notation import parse_call
    from layoutproof.verify import postcondition
    from layoutproof.verify.cli import check_statement
    from layoutproof.verify.post import OPERATIONS

    kind = _choice(p, "kind", ("equal", "admissible", "post"), "equal")
    expr = _text(p, "expr")
    facts = _assume(p)
    bound = _int(p, "bound", 16, 0, 64)
    ms = max(100, min(3000, (budget.remaining_ms() or 3000) // 2))
    bounds: Any = False if bound == 0 else bound
    native, read = native_text(expr)
    if kind == "equal":
        other = _text(p, "other")
        r = check_statement(f"{expr} == {other}", assume=list(facts), timeout_ms=ms, bounds=bounds)
        out = _result_dict(r)
        ce = r.counterexample
        if r.status == "refuted" and ce is not None:
            on, rd = native_text(other)
            f = facts + tuple(x for x in read + rd if x not in facts)
            try:
                lhs = _evaluate(native, f, ce.assignment or None)
            except LayoutError:
                lhs = None
            _witness_picture(out, lhs, ce.coordinate, None)
        return out
    if kind == "admissible":
        r = check_statement(f"admissible {expr}", assume=list(facts), timeout_ms=ms, bounds=bounds)
        out = _result_dict(r)
        if r.status == "refuted":
            _refusal_picture(out, expr, facts)
        return out
    op = _op_name(native, names())
    if op is None or op not in OPERATIONS:
        raise MalformedLayoutError(
            f"a post-condition is checked for a call of {', '.join(sorted(OPERATIONS))}; got {show(expr)}"
        )
    from layoutproof.symbolic import assuming

    f = facts + tuple(x for x in read if x not in facts)
    with assuming(*f):
        fn, args = parse_call(native, names(), {})
        value = fn(*args)
        r = postcondition(op, value, *args, timeout_ms=ms, bounds=bounds)
    out = _result_dict(r)
    ce = r.counterexample
    if r.status == "refuted" and ce is not None:
        _witness_picture(out, value, ce.coordinate, ce.assignment)
    return out


def task_explain(p: Mapping[str, Any]) -> Dict[str, Any]:
    """``POST /api/explain``: :func:`layoutproof.explain.explain` with its steps, repairs,
    picture (the witness marked) and the assumptions as code."""
    from layoutproof.explain import explain

    expr = _text(p, "expr")
    facts = _assume(p)
    ex = explain(expr, steps=True, assume=facts, budget_s=0.6)
    out = jsonable(ex.to_dict())
    out["text"] = ex.render("text")
    if ex.drawn is not None:
        try:
            out["svg"] = ex.svg()
        except LayoutError:
            pass
    if ex.needed():
        out["code"] = {k: ex.render(k) for k in ("dsl", "cpp", "python")}
    return out


def task_analyze(p: Mapping[str, Any]) -> Dict[str, Any]:
    """``POST /api/analyze``: ``{"analysis": NAME, "fields": {...}, "assume": [...]}``."""
    from layoutproof.symbolic import assuming

    from .analyses import run_analysis

    name = _text(p, "analysis", limit=64)
    fields = p.get("fields", {})
    if type(fields) is not dict or len(fields) > 32:
        raise MalformedLayoutError(f"'fields' is an object of at most 32 entries, got {show(fields)}")
    facts = _assume(p)
    with assuming(*facts):
        out = run_analysis(name, fields)
    out = jsonable(out)
    out["analysis"] = name
    return out


def _pycute_code(v: Any) -> str:
    """Python source building ``v`` with legacy pycute (integer layouts and swizzles)."""
    from layoutproof.composed import ComposedLayout
    from layoutproof.layout import Layout
    from layoutproof.swizzle import Swizzle

    def tup(t: Any) -> str:
        if type(t) is tuple:
            return "(" + ", ".join(tup(e) for e in t) + ("," if len(t) == 1 else "") + ")"
        if type(t) is not int:
            raise MalformedLayoutError(f"pycute takes integer layouts; {show(t)} is symbolic")
        return str(t)

    def lay(L: Layout) -> str:
        return f"Layout({tup(L.shape)}, {tup(L.stride)})"

    if isinstance(v, Layout):
        return f"from pycute import Layout\n\nL = {lay(v)}"
    if isinstance(v, ComposedLayout):
        a = v.layout_a
        if isinstance(a, Swizzle):
            inner = f"Swizzle({a.bits}, {a.base}, {a.shift})"
        else:
            inner = lay(a)
        return (
            "from pycute import ComposedLayout, Layout, Swizzle\n\n"
            f"L = ComposedLayout({inner}, {v.offset}, {lay(v.layout_b)})"
        )
    raise MalformedLayoutError(f"pycute code is written for layouts, got {show(v)}")


def task_export(p: Mapping[str, Any]) -> Dict[str, Any]:
    """``POST /api/export``: the layout as CuTe C++, CuTe DSL, pycute and Triton code; a
    form that cannot hold it says why instead."""
    import json

    from layoutproof.cli import format_value
    from layoutproof.composed import ComposedLayout
    from layoutproof.interop import to_cpp, to_dsl, to_triton
    from layoutproof.layout import Layout

    expr = _text(p, "expr")
    facts = _assume(p)
    native, read = native_text(expr)
    v = _evaluate(native, facts + tuple(x for x in read if x not in facts))
    if not isinstance(v, (Layout, ComposedLayout)):
        raise MalformedLayoutError(f"export writes layouts; {show(expr)} is {format_value(v)}")
    out: Dict[str, Any] = {"value": format_value(v)}
    makers: Dict[str, Callable[[], str]] = {
        "cpp": lambda: to_cpp(v),
        "dsl": lambda: to_dsl(v),
        "pycute": lambda: _pycute_code(v),
        "triton": lambda: json.dumps(to_triton(v)),
    }
    for k, make in makers.items():
        try:
            out[k] = {"code": make()}
        except LayoutError as e:
            out[k] = {"error": str(e)[:600]}
    return out


TASKS: Dict[str, Callable[[Mapping[str, Any]], Dict[str, Any]]] = {
    "eval": task_eval,
    "check": task_check,
    "explain": task_explain,
    "analyze": task_analyze,
    "export": task_export,
}


def run_task(name: str, payload: Any, budget_s: Optional[float] = None) -> Dict[str, Any]:
    """Run the task ``name`` on ``payload`` under ``budget_s`` seconds
    (:func:`layoutproof.budget.deadline`); a LayoutError for bad input, a
    :class:`~layoutproof.budget.BudgetExceeded` past the budget."""
    from layoutproof import budget

    fn = TASKS.get(name)
    if fn is None:
        raise MalformedLayoutError(f"unknown task {show(name)}")
    if not isinstance(payload, dict):
        raise MalformedLayoutError(f"the request body is a JSON object, got {type(payload).__name__}")
    t0 = time.perf_counter()
    if budget_s is None:
        out = fn(payload)
    else:
        with budget.deadline(budget_s):
            out = fn(payload)
    out["seconds"] = round(time.perf_counter() - t0, 4)
    return out


def safe_run(name: str, payload: Any, budget_s: Optional[float]) -> Tuple[int, Dict[str, Any]]:
    """``(HTTP status, body)`` of a task: 200 with its result; 422 with the error for a
    LayoutError (an inadmissible operation, a malformed layout, the budget spent), a
    recursion too deep or memory exhausted; 500 for anything else (a bug, reported
    by type and message, never with a traceback)."""
    try:
        return 200, run_task(name, payload, budget_s)
    except LayoutError as e:
        return 422, {"error": error_body(e)}
    except RecursionError:
        return 422, {
            "error": {
                "type": "RecursionError",
                "message": "the input is nested too deeply",
                "condition": "nesting depth",
            }
        }
    except MemoryError:
        return 422, {
            "error": {
                "type": "MemoryError",
                "message": "the request needs more memory than its budget",
                "condition": "memory budget",
            }
        }
    except Exception as e:  # noqa: BLE001 - every other failure is a bug: report it as JSON
        return 500, {"error": {"type": type(e).__name__, "message": str(e)[:2000]}}
