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


def _report(rep: Any) -> Dict[str, Any]:
    """The JSON of an analysis report: its dict, its one line and its text where it has one."""
    d = dict(rep.as_dict())
    d["line"] = rep.line()
    text = getattr(rep, "text", None)
    if callable(text):
        d["text"] = text()
    return d


def _banks(v: Dict[str, Any]) -> Dict[str, Any]:
    from layoutproof.gpu.analysis import banks

    rep = banks(v["data"], v["access"], v["instruction"], element_bits=v["bits"], base=v["base"])
    d = _report(rep)
    if rep.wavefronts is not None:
        d["summary"] = f"wavefronts {rep.total} (minimum {rep.minimum}), worst phase {rep.max_ways}-way"
        d["svg"] = _bank_picture(rep)
        try:  # the bank pattern of the first conflicting instruction, phase by bank
            from layoutproof.gpu.analysis.bank_picture import bank_pattern
        except ImportError:  # pragma: no cover - an older analysis room
            return d
        try:
            pic = bank_pattern(
                v["data"], v["access"], v["instruction"], element_bits=v["bits"], base=v["base"]
            )
        except LayoutError as e:
            d.setdefault("notes", []).append(f"no bank pattern: {e}")
        else:
            d["svg"] = pic.svg()
            d["pattern"] = pic.text()
    return d


def _coalesce(v: Dict[str, Any]) -> Dict[str, Any]:
    from layoutproof.gpu.analysis import coalescing

    rep = coalescing(v["data"], v["access"], element_bits=v["bits"], vector_bytes=v["vector"], base=v["base"])
    d = _report(rep)
    if rep.sectors is not None and rep.min_sectors is not None and rep.lines is not None:
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


def _wgmma(v: Dict[str, Any]) -> Dict[str, Any]:
    from layoutproof.gpu.analysis.wgmma_operand import wgmma_operand

    major = None if v["major"] == "either" else v["major"]
    rep = wgmma_operand(
        v["data"], element_bits=v["bits"], major=major, mn_block=v["mn_block"], base=v["base"]
    )
    d = _report(rep)
    d["summary"] = "\n".join(
        f"{x['mn_offset']:>4},{x['k_offset']:>4}: {x['descriptor']} start {x['start_address']} "
        f"LBO {x['leading_byte_offset']} SBO {x['stride_byte_offset']} {x['swizzle']}"
        for x in (rep.descriptors or [])[:64]
    )
    return d


def _accesses(text: str) -> list:
    """``TV:INSTR`` entries separated by ``;`` or new lines (the instruction after the last ':')."""
    out = []
    for spec in (x.strip() for x in text.replace(";", "\n").splitlines()):
        if not spec:
            continue
        tv, sep, ins = spec.rpartition(":")
        if not sep or not tv.strip() or not ins.strip():
            raise MalformedLayoutError(
                f"access {show(spec)}: expected TV:INSTR (the instruction after the last ':')"
            )
        out.append((read_layout(tv, "accesses"), ins.strip()))
    if not out or len(out) > 8:
        raise MalformedLayoutError("the field 'accesses' lists 1 to 8 accesses TV:INSTR")
    return out


def _swizzle(v: Dict[str, Any]) -> Dict[str, Any]:
    from layoutproof.gpu.analysis.swizzle import synthesize_swizzle
    from layoutproof.layout import Layout

    if not isinstance(v["data"], Layout):
        raise MalformedLayoutError("swizzle synthesis starts from the unswizzled layout (a plain Layout)")
    rep = synthesize_swizzle(
        v["data"],
        _accesses(v["accesses"]),
        element_bits=v["bits"],
        tma=v["family"] == "tma",
        wgmma={"wgmma-K": "K", "wgmma-MN": "MN"}.get(v["family"]),
        base=v["base"],
    )
    d = _report(rep)
    for k in ("cpp", "dsl"):
        f = getattr(rep, k, None)
        if callable(f):
            try:
                d[k] = f()
            except LayoutError:
                pass
    return d


def _tuple_of_ints(text: str, what: str) -> tuple:
    from layoutproof.notation import evaluate

    t = evaluate(text, {})
    if type(t) is int:
        t = (t,)
    if type(t) is not tuple or not 1 <= len(t) <= 5 or any(type(x) is not int or x < 1 for x in t):
        raise MalformedLayoutError(
            f"the field {what!r} is a tuple of 1 to 5 positive integers, got {show(text)}"
        )
    return t


def _tma(v: Dict[str, Any]) -> Dict[str, Any]:
    from layoutproof.gpu.analysis.tma import tma_preflight

    rep = tma_preflight(
        v["gmem"],
        v["smem"],
        _tuple_of_ints(v["tiler"], "tiler"),
        dtype=v["dtype"],
        box=_tuple_of_ints(v["box"], "box") if v["box"] else None,
        budget_s=5.0,
    )
    d = _report(rep)
    for k in ("cpp", "python"):
        f = getattr(rep, k, None)
        if callable(f):
            try:
                d[k] = f()
            except LayoutError:
                pass
    return d


def _width(v: Dict[str, Any]) -> Dict[str, Any]:
    from layoutproof.gpu.analysis.width import index_width

    rep = index_width(v["data"], bits=v["bits"], signed=v["signed"] == "signed")
    return _report(rep)


def _optional_entries() -> None:
    """The analyses of the analysis room that this installation has."""
    import importlib.util

    def has(mod: str) -> bool:
        try:
            return importlib.util.find_spec(mod) is not None
        except ImportError:
            return False

    if has("layoutproof.gpu.analysis.wgmma_operand"):
        register(
            Analysis(
                "wgmma",
                "wgmma operand: can descriptors read this tile?",
                (
                    Field(
                        "data",
                        "operand tile (MN, K)",
                        "layout",
                        "Sw<3,3,3> o (64,64):(64,1)",
                        help=_DATA_HELP,
                    ),
                    Field("bits", "element bits", "int", 16),
                    Field("major", "major-ness", "choice", "either", choices=("either", "K", "MN")),
                    Field("mn_block", "rows per descriptor", "int", None, optional=True, help="64 for A"),
                    Field("base", "base address mod 128", "int", 0),
                ),
                _wgmma,
                doc="proved with the swizzle mode and every descriptor, or refuted with the closest "
                "mode's wrong element",
            )
        )
    if has("layoutproof.gpu.analysis.swizzle"):
        register(
            Analysis(
                "swizzle",
                "Swizzle synthesis: the least swizzle making every access conflict-free",
                (
                    Field(
                        "data", "unswizzled shared-memory layout", "layout", "(8,64):(64,1)", help=_DATA_HELP
                    ),
                    Field(
                        "accesses",
                        "accesses TV:INSTR; ...",
                        "text",
                        "((8,4),8,2):((64,1),8,4):cp.async.16; ((8,4),8,2):((1,64),8,256):ldmatrix.x4",
                        help="writers and readers, each a TV layout and its instruction after the last ':'",
                    ),
                    Field("bits", "element bits", "int", 16),
                    Field(
                        "family", "family", "choice", "free", choices=("free", "tma", "wgmma-K", "wgmma-MN")
                    ),
                    Field("base", "base address mod 128", "int", 0),
                ),
                _swizzle,
                doc="proved: the least swizzle of the family, certified conflict-free and a bijection "
                "on the storage",
            )
        )
    if has("layoutproof.gpu.analysis.tma"):
        register(
            Analysis(
                "tma",
                "TMA pre-flight: the cuTensorMapEncodeTiled arguments, checked",
                (
                    Field(
                        "gmem", "global tensor", "layout", "(M,K):(K,1)", help="one flat mode per dimension"
                    ),
                    Field("smem", "shared-memory tile", "layout", "Sw<3,3,3> o (64,64):(64,1)"),
                    Field("tiler", "tile extents", "text", "(64,64)"),
                    Field("dtype", "element type", "text", "f16", help="f16, bf16, tf32, f32, u8, e4m3, ..."),
                    Field("box", "box (optional)", "text", None, optional=True),
                ),
                _tma,
                doc="every documented driver requirement decided, symbolic extents under the "
                "assumptions (e.g. K % 64 == 0; K <= 65536)",
            )
        )
    if has("layoutproof.gpu.analysis.width"):
        register(
            Analysis(
                "width",
                "Index width: does every offset fit the index type?",
                (
                    Field("data", "layout", "layout", "(M,N):(N,1)"),
                    Field("bits", "index bits", "int", 32),
                    Field("signed", "signedness", "choice", "signed", choices=("signed", "unsigned")),
                ),
                _width,
                doc="proved for every admitted value of the symbols (state bounds, e.g. M <= 65536), "
                "or the first expression that overflows",
            )
        )


_optional_entries()


def _check_registry() -> None:
    for a in ANALYSES.values():
        if not a.fields or not callable(a.run):
            raise LayoutError(f"analysis {a.name!r} has no fields or no run function")


_check_registry()
