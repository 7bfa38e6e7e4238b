"""The analyses the playground offers, as a registry: each one a small :class:`Analysis`
entry -- its name, the fields of its form, and a function from the validated fields to a
JSON-ready report.  The page builds its form from :func:`describe`; ``POST /api/analyze``
runs :func:`run_analysis` in a worker.

>>> sorted(ANALYSES)[:2]
['banks', 'coalesce']
>>> [f.name for f in ANALYSES["banks"].fields]
['data', 'access', 'instruction', 'bits', 'base']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from layoutproof.errors import LayoutError, MalformedLayoutError, show

__all__ = ["Field", "Analysis", "ANALYSES", "register", "describe", "run_analysis", "read_layout"]

#: the largest integer a numeric field accepts
MAX_FIELD_INT = 1 << 20


@dataclass(frozen=True)
class Field:
    """One input of an analysis form.

    Attributes:
        name: the JSON key.
        label: what the page writes beside it.
        kind: ``"layout"`` (an expression giving a layout), ``"text"``, ``"int"`` or
            ``"choice"``.
        default: the value the form starts with (``None``: required, no default).
        choices: for ``"choice"``, the allowed values.
        help: one line shown on hover.
    """

    name: str
    label: str
    kind: str
    default: Any = None
    choices: Tuple[str, ...] = ()
    help: str = ""
    optional: bool = False

    def read(self, raw: Any) -> Any:
        """The validated value of ``raw`` (a LayoutError naming the field when it is not one)."""
        if raw is None or raw == "":
            if self.default is not None:
                raw = self.default
            elif self.optional:
                return None
            else:
                raise MalformedLayoutError(f"the field {self.name!r} is required")
        if self.kind == "int":
            if type(raw) is str and raw.strip().lstrip("-").isdigit() and len(raw) < 12:
                raw = int(raw)
            if type(raw) is not int or not -MAX_FIELD_INT <= raw <= MAX_FIELD_INT:
                raise MalformedLayoutError(
                    f"the field {self.name!r} takes an integer in [-{MAX_FIELD_INT}, {MAX_FIELD_INT}], "
                    f"got {show(raw)}"
                )
            return raw
        if type(raw) is not str:
            raise MalformedLayoutError(f"the field {self.name!r} takes text, got {show(raw)}")
        if len(raw) > 4000:
            raise MalformedLayoutError(f"the field {self.name!r} is longer than 4000 characters")
        if self.kind == "choice" and raw not in self.choices:
            raise MalformedLayoutError(
                f"the field {self.name!r} is one of {', '.join(self.choices)}, got {show(raw)}"
            )
        if self.kind == "layout":
            return read_layout(raw, self.name)
        return raw

    def as_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "kind": self.kind,
            "default": self.default,
            "choices": list(self.choices),
            "help": self.help,
            "optional": self.optional,
        }


@dataclass(frozen=True)
class Analysis:
    """A registry entry: ``run`` takes the fields read by :meth:`Field.read` and returns a
    JSON-ready dict with at least ``status``, ``line`` (one line of text) and, where it
    has one, ``svg`` (a picture)."""

    name: str
    title: str
    fields: Tuple[Field, ...]
    run: Callable[[Dict[str, Any]], Dict[str, Any]]
    doc: str = ""
    notes: List[str] = field(default_factory=list)

    def as_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "doc": self.doc,
            "fields": [f.as_dict() for f in self.fields],
        }


ANALYSES: Dict[str, Analysis] = {}


def register(analysis: Analysis) -> Analysis:
    """Add ``analysis`` to the registry (a later entry of the same name replaces it)."""
    ANALYSES[analysis.name] = analysis
    return analysis


def describe() -> List[Dict[str, Any]]:
    """The registry as the page reads it (``GET /api/analyses``)."""
    return [a.as_dict() for a in ANALYSES.values()]


def read_layout(text: str, what: str = "layout") -> Any:
    """A layout (plain or swizzled) from an expression: CuTe notation, C++ and DSL prints,
    calls of the algebra; parsed, never executed as Python."""
    from layoutproof import ComposedLayout, Layout
    from layoutproof.cli import eval_names
    from layoutproof.notation import evaluate

    from .work import native_text

    native, facts = native_text(text)
    if facts:
        from layoutproof.symbolic import assuming

        with assuming(*facts):
            v = evaluate(native, eval_names())
    else:
        v = evaluate(native, eval_names())
    if not isinstance(v, (Layout, ComposedLayout)):
        raise MalformedLayoutError(f"the field {what!r} must give a layout; {show(text)} gives {show(v)}")
    return v


def run_analysis(name: str, raw: Mapping[str, Any]) -> Dict[str, Any]:
    """Validate ``raw`` against the form of the analysis ``name`` and run it."""
    a = ANALYSES.get(name) if isinstance(name, str) else None
    if a is None:
        raise MalformedLayoutError(f"unknown analysis {show(name)}; known: {', '.join(ANALYSES)}")
    unknown = sorted(set(raw) - {f.name for f in a.fields})
    if unknown:
        raise MalformedLayoutError(f"{name}: unknown field(s) {', '.join(map(show, unknown))}")
    vals = {f.name: f.read(raw.get(f.name)) for f in a.fields}
    return a.run(vals)


# ----------------------------------------------------------------------------- entries
_DATA_HELP = "the tile's layout: tile coordinate -> element offset (a swizzle as Sw<B,M,S> o LAYOUT)"
_ACCESS_HELP = "the thread-value layout (thread, value, rest...) -> tile coordinate"


def _bank_picture(rep: Any) -> Optional[str]:
    """The wavefronts of the first warp's instructions, phase by phase, as a grid picture:
    one row per instruction, one column per phase; red where a phase takes more than one."""
    from layoutproof.draw import grid_svg

    w = rep.wavefronts
    if w is None or w.ndim != 3 or w.shape[1] * w.shape[2] > 4096:
        return None
    first = w[0]
    labels = [[[f"{int(x)}"] for x in row] for row in first]
    fills = [["#cfeecf" if int(x) == 1 else "#f4a0a0" for x in row] for row in first]
    tips = [
        [f"instruction {i}, phase {p}: {int(x)} wavefront(s)" for p, x in enumerate(row)]
        for i, row in enumerate(first)
    ]
    return str(grid_svg("wavefronts of warp 0: instruction (row) x phase (column)", labels, fills, tips))


def _banks(v: Dict[str, Any]) -> Dict[str, Any]:
    from layoutproof.gpu.analysis import banks

    rep = banks(v["data"], v["access"], v["instruction"], element_bits=v["bits"], base=v["base"])
    d = rep.as_dict()
    d["line"] = rep.line()
    if rep.wavefronts is not None:
        d["summary"] = f"wavefronts {rep.total} (minimum {rep.minimum}), worst phase {rep.max_ways}-way"
        d["svg"] = _bank_picture(rep)
    return d


def _coalesce(v: Dict[str, Any]) -> Dict[str, Any]:
    from layoutproof.gpu.analysis import coalescing

    rep = coalescing(v["data"], v["access"], element_bits=v["bits"], vector_bytes=v["vector"], base=v["base"])
    d = rep.as_dict()
    d["line"] = rep.line()
    if rep.sectors is not None:
        d["summary"] = (
            f"{rep.vector_bytes}-byte vectors (widest legal {rep.widest_bytes}); sectors "
            f"{int(rep.sectors.sum())} (minimum {int(rep.min_sectors.sum())}), lines "
            f"{int(rep.lines.sum())}, efficiency {rep.efficiency:.2f}"
        )
    return d


register(
    Analysis(
        "banks",
        "Shared-memory bank conflicts per instruction phase",
        (
            Field("data", "shared-memory layout", "layout", "Sw<3,3,3> o (8,64):(64,1)", help=_DATA_HELP),
            Field("access", "thread-value access", "layout", "((8,4),8):((1,64),8)", help=_ACCESS_HELP),
            Field(
                "instruction",
                "instruction",
                "text",
                "ldmatrix.x4",
                help="ld.shared.b32, ld.shared.v4.b32, ldmatrix.x4, cp.async.16, ...",
            ),
            Field("bits", "element bits", "int", 16),
            Field("base", "base address mod 128", "int", 0),
        ),
        _banks,
        doc="proved: every phase takes one wavefront; refuted: the first conflicting pair of lanes",
    )
)
register(
    Analysis(
        "coalesce",
        "Global-memory coalescing",
        (
            Field("data", "global layout", "layout", "(32,32):(32,1)", help=_DATA_HELP),
            Field("access", "thread-value access", "layout", "(32,32):(32,1)", help=_ACCESS_HELP),
            Field("bits", "element bits", "int", 32),
            Field(
                "vector",
                "bytes per lane",
                "int",
                None,
                help="default: the widest legal vector",
                optional=True,
            ),
            Field("base", "base address mod 128", "int", 0),
        ),
        _coalesce,
        doc="proved: every warp request touches its minimum of sectors; refuted: the most wasteful",
    )
)


def _check_registry() -> None:
    for a in ANALYSES.values():
        if not a.fields or not callable(a.run):
            raise LayoutError(f"analysis {a.name!r} has no fields or no run function")


_check_registry()
