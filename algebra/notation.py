"""CuTe notation: parsing ``"(4,(2,2)):(2,(1,8))"`` and the small expression language of
the ``layoutproof eval`` command (``"composition((4,2):(1,4), 8:1)"``)."""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Dict, List

from .errors import MalformedLayoutError, show
from .inttuple import MAX_DEPTH

__all__ = ["parse_layout", "evaluate"]

_TOKEN = re.compile(r"\s*(?:(?P<int>-?_?\d+)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<op>[(),:]))")


def _tokenize(text: str) -> List[tuple]:
    if not isinstance(text, str):
        raise MalformedLayoutError(f"layout notation must be a string, got {type(text).__name__}")
    if len(text) > 100_000:
        raise MalformedLayoutError("layout notation longer than 100000 characters")
    out = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise MalformedLayoutError(f"unexpected character {text[pos]!r} at {pos} in {show(text)}")
        if m.group("int") is not None:
            out.append(("int", int(m.group("int").replace("_", "")), m.start("int")))
        elif m.group("name") is not None:
            out.append(("name", m.group("name"), m.start("name")))
        else:
            out.append((m.group("op"), m.group("op"), m.start("op")))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str, names: Dict[str, Callable[..., Any]] | None) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.names = names

    def peek(self) -> str | None:
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def take(self, kind: str) -> Any:
        if self.peek() != kind:
            where = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)
            got = self.toks[self.i][1] if self.i < len(self.toks) else "end of input"
            raise MalformedLayoutError(f"expected {kind!r} at {where} in {self.text!r:.200}, got {got!r}")
        tok = self.toks[self.i]
        self.i += 1
        return tok[1]

    # An HTuple of integers (shape/stride notation); rank-1 "(8)" is the tuple (8,).
    def htuple(self, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise MalformedLayoutError(f"notation nested deeper than {MAX_DEPTH} levels")
        if self.peek() == "int":
            return self.take("int")
        self.take("(")
        items = []
        if self.peek() != ")":
            items.append(self.htuple(depth + 1))
            while self.peek() == ",":
                self.take(",")
                items.append(self.htuple(depth + 1))
        self.take(")")
        return tuple(items)

    # The expression language: ints, tuples, layouts "a:b", calls "f(x, y)", "_", "None".
    def expr(self, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise MalformedLayoutError(f"expression nested deeper than {MAX_DEPTH} levels")
        from .layout import Layout, _

        k = self.peek()
        if k == "int":
            val: Any = self.take("int")
        elif k == "(":
            val = tuple(self.items(depth))
        elif k == "name":
            name = self.take("name")
            if name == "_":
                return _
            if name == "None":
                return None
            fn = (self.names or {}).get(name)
            if fn is None:
                raise MalformedLayoutError(f"unknown name {name!r} in {self.text!r:.200}")
            args = self.items(depth)
            try:
                inspect.signature(fn).bind(*args)
            except TypeError as e:
                raise MalformedLayoutError(f"{name}: {e}") from None
            val = fn(*args)
        else:
            self.take("expression")  # raises: nothing else can start an expression
            return None
        if self.peek() == ":":
            self.take(":")
            stride = self.expr(depth + 1)
            val = Layout(val, stride)
        while isinstance(val, Layout) and self.peek() == "(":
            # postfix evaluation: "(4,2):(2,1)(3)"
            val = val(*self.items(depth))
        return val

    def items(self, depth: int) -> List[Any]:
        """A parenthesized, comma-separated list of expressions."""
        self.take("(")
        out: List[Any] = []
        if self.peek() != ")":
            out.append(self.expr(depth + 1))
            while self.peek() == ",":
                self.take(",")
                out.append(self.expr(depth + 1))
        self.take(")")
        return out

    def done(self) -> None:
        if self.i != len(self.toks):
            raise MalformedLayoutError(
                f"unexpected {self.toks[self.i][1]!r} at {self.toks[self.i][2]} in {self.text!r:.200}"
            )


def parse_layout(text: str) -> Any:
    """Parse ``shape:stride`` (or a bare shape) in CuTe notation into a Layout."""
    from .layout import Layout

    p = _Parser(text, None)
    s = p.htuple()
    d = None
    if p.peek() == ":":
        p.take(":")
        d = p.htuple()
    p.done()
    return Layout(s, d)


def evaluate(text: str, names: Dict[str, Callable[..., Any]]) -> Any:
    """Evaluate an expression of the ``layoutproof eval`` language with the given
    function table."""
    p = _Parser(text, names)
    v = p.expr()
    p.done()
    return v

