"""The drawn cases shared by the differential tests against tensor-layouts and the CuTe DSL:
the algebra every peer implements (composition, complement, coalesce, right and left
inverses, logical divide and product), drawn with the generators of the legacy-pycute
differential from fixed seeds, each with layoutproof's call and the post-conditions that
decide a difference (``test_differential_pycute._run_case``)."""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import test_differential_pycute as pyd

import layoutproof as lp


@dataclass
class Case:
    op: str
    args: Tuple[Any, ...]  # Layouts and ints, as the operation takes them
    ex: str
    ours: Callable[[], Any]
    post: Callable[..., Any]
    post_peer: Optional[Callable[..., Any]] = None


def _seed(op: str, salt: int) -> int:
    return zlib.crc32(op.encode()) ^ salt


def _binary(op, A, B, post, post_peer=None):
    return Case(
        op, (A, B), f"{op}({pyd._show(A)}, {pyd._show(B)})", lambda: getattr(lp, op)(A, B), post, post_peer
    )


def draw(counts: Dict[str, int], salt: int) -> List[Case]:
    """``counts[op]`` cases of each operation named there."""
    out: List[Case] = []
    n = counts.get
    rng = random.Random(_seed("composition", salt))
    for _ in range(n("composition", 0)):
        A = pyd.g_layout(rng)
        _k, rhs = pyd.g_B(rng, A)
        B = pyd._lo(rhs)
        out.append(_binary("composition", A, B, pyd.post_composition(A, B)))
    rng = random.Random(_seed("complement", salt))
    for _ in range(n("complement", 0)):
        L = pyd.g_layout(rng, max_size=64)
        M = rng.choice((1, 8, 16, 32, 64, 100, 128, 256, 512))
        out.append(_binary("complement", L, M, pyd.post_complement(L, M)))
    rng = random.Random(_seed("coalesce", salt))
    for _ in range(n("coalesce", 0)):
        L = pyd.g_layout(rng)
        out.append(
            Case(
                "coalesce",
                (L,),
                f"coalesce({pyd._show(L)})",
                lambda L=L: lp.coalesce(L),
                pyd._post_coalesce(L),
                pyd._post_same_as(L),
            )
        )
    for op, post in (("right_inverse", pyd.post_right_inverse), ("left_inverse", pyd.post_left_inverse)):
        rng = random.Random(_seed(op, salt))
        for _ in range(n(op, 0)):
            L = pyd.g_layout(rng, max_size=128)
            out.append(
                Case(op, (L,), f"{op}({pyd._show(L)})", lambda L=L, op=op: getattr(lp, op)(L), post(L))
            )
    rng = random.Random(_seed("logical_divide", salt))
    for _ in range(n("logical_divide", 0)):
        A = pyd.g_layout(rng)
        B = pyd.g_tile_B(rng, A) if rng.random() < 0.6 else pyd.g_random_B(rng, 16)
        out.append(_binary("logical_divide", A, B, pyd.post_logical_divide(A, B)))
    rng = random.Random(_seed("logical_product", salt))
    for _ in range(n("logical_product", 0)):
        A = pyd.g_layout(rng, max_size=16)
        B = pyd.g_layout(rng, max_size=16)
        out.append(_binary("logical_product", A, B, pyd.post_logical_product(A, B)))
    return out


def decide(cases: List[Case], peer_calls: List[Callable[[], Any]], peer: str) -> Dict[str, Any]:
    """The decision rules over every case: one ``Report`` per operation."""
    reports: Dict[str, Any] = {}
    for c, theirs in zip(cases, peer_calls):
        rep = reports.setdefault(c.op, pyd.Report(c.op))
        pyd._run_case(rep, c.ex, c.ours, theirs, c.post, struct=False, post_pc=c.post_peer, peer=peer)
    return reports


def check(reports: Dict[str, Any], min_total: int, min_agree: float) -> None:
    """No layoutproof failure, no refusal of a correct answer, enough cases and agreement."""
    total = sum(r.cases for r in reports.values())
    failures = [f for r in reports.values() for f in r.failures]
    incomplete = [f for r in reports.values() for f in r.incomplete]
    assert not failures, "\n".join(failures[:10])
    assert not incomplete, "\n".join(incomplete[:10])
    assert total >= min_total, total
    agree = sum(r.kinds["agree"] for r in reports.values())
    assert agree >= min_agree * total, {op: dict(r.kinds) for op, r in reports.items()}


def summary(reports: Dict[str, Any]) -> str:
    lines = []
    for op, rep in reports.items():
        lines.append(f"== {op}: {rep.cases} cases")
        for kind, k in rep.kinds.most_common():
            lines.append(f"   {k:5d}  {kind}\n          e.g. {rep.examples[kind][:300]}")
    return "\n".join(lines)
