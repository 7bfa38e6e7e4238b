"""The symbolic layer answers for symbolic layouts: its registration with the core.

The algebra core (:mod:`layoutproof.layout`, :mod:`layoutproof.inttuple`,
:mod:`layoutproof.ops`) handles integer layouts and never imports this package.  When an
argument holds SymPy leaves it calls ``kinds.call_symbolic(op, ...)``; this module
registers the implementations under :data:`layoutproof.kinds.SYMBOLIC`, with the names
and the argument lists of the core's calls.  ``import layoutproof`` imports it (the
façade), so the registrations exist whenever the package is loaded; importing it loads
neither SymPy nor Z3.

>>> from layoutproof import kinds
>>> kinds.lookup("coalesce", kinds.SYMBOLIC) is symops.coalesce
True
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

from .. import kinds
from ..layout import Layout
from . import (
    as_int,
    check_extent,
    eval_parts,
    eval_symbolic,
    free_symbols,
    layout_expr,
    norm_leaf,
    subs_layout,
    symops,
)

__all__ = ["slice_and_offset", "IMPLEMENTATIONS"]


def slice_and_offset(crd: Any, layout: Layout) -> Tuple[Layout, Any]:
    """``slice_and_offset`` when the layout or the coordinate is symbolic: the kept modes
    and the offset of the fixed coordinates (an expression, an ``int`` when it is one)."""
    ks, kd, off = eval_parts(crd, layout.shape, layout.stride, crd)
    return Layout.trusted(tuple(ks), tuple(kd)), as_int(off)


#: op name (as the core calls it) -> the symbolic implementation
IMPLEMENTATIONS: Dict[str, Callable[..., Any]] = {
    # leaves and layouts (layoutproof.inttuple, layoutproof.layout)
    "norm_leaf": norm_leaf,
    "check_extent": check_extent,
    "eval": eval_symbolic,
    "free_symbols": free_symbols,
    "layout_expr": layout_expr,
    "subs_layout": subs_layout,
    "slice_and_offset": slice_and_offset,
    # the algebra (layoutproof.ops)
    "coalesce": symops.coalesce,
    "filter": symops.filter_,
    "composition": symops.composition,
    "complement": symops.complement,
    "right_inverse": symops.right_inverse,
    "left_inverse": symops.left_inverse,
    "compatible": symops.compatible,
    "block_divides": symops.block_divides,
    "xdiv": symops.xdiv,
}

for _op, _fn in IMPLEMENTATIONS.items():
    kinds.register(_op, kinds.SYMBOLIC, _fn)
