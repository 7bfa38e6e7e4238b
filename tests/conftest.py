"""Shared hypothesis strategies for the layoutproof tests.

The strategies are plain functions (import them with ``from conftest import ...``):
they build hierarchical shapes with small extents (size <= ``max_size``), strides of a
chosen kind, and layouts from the two.  Every test run is deterministic: the profile
loaded below derandomizes hypothesis (CI gives the same examples every time).

For a longer, randomized hunt set ``LAYOUTPROOF_EXAMPLES_SCALE`` (e.g. ``20``): every
``examples(n)`` budget is multiplied by it and hypothesis is no longer derandomized.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from layoutproof import Layout
from layoutproof.inttuple import flatten, product, unflatten

SCALE = float(os.environ.get("LAYOUTPROOF_EXAMPLES_SCALE", "1"))


def examples(n: int) -> int:
    """The example budget for a test that asks for ``n`` (scaled for long hunts)."""
    return max(1, int(n * SCALE))


settings.register_profile(
    "layoutproof",
    derandomize=SCALE == 1,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile("layoutproof")

NICE_STRIDES = (0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 64)


@st.composite
def shapes(draw, max_size=512, max_leaf=8, max_depth=3, max_rank=4, allow_empty=False):
    """A hierarchical shape (int or nested tuple of positive ints) of size <= max_size."""

    def build(budget, depth):
        if depth < max_depth and draw(st.integers(0, 9)) < (5 if depth == 0 else 3):
            n = draw(st.integers(0 if allow_empty else 1, max_rank))
            out = []
            for _ in range(n):
                sub = build(budget, depth + 1)
                budget = max(1, budget // product(sub))
                out.append(sub)
            return tuple(out)
        return draw(st.integers(1, max(1, min(max_leaf, budget))))

    return build(max_size, 0)


@st.composite
def strides_for(draw, shape, kind="any"):
    """A stride congruent with ``shape``.

    kind: ``"any"`` (small strides, 0 included, sometimes negative), ``"nonneg"``,
    ``"compact"`` (a permuted compact layout: injective, image = [0, size)),
    ``"chain"`` (permuted compact with gaps and a scale: injective, strides chain),
    ``"mixed"`` (one of the above).
    """
    if kind == "mixed":
        kind = draw(st.sampled_from(["any", "nonneg", "compact", "chain", "chain"]))
    fs = flatten(shape)
    n = len(fs)
    if kind in ("any", "nonneg"):
        leaf = st.sampled_from(NICE_STRIDES)
        if kind == "any":
            leaf = leaf | st.integers(-12, 12)
        fd = tuple(draw(leaf) for _ in range(n))
    else:
        order = draw(st.permutations(range(n))) if n else []
        fd = [0] * n
        cur = 1 if kind == "compact" else draw(st.sampled_from([1, 1, 2, 3]))
        for i in order:
            fd[i] = cur
            cur *= fs[i] * (1 if kind == "compact" else draw(st.sampled_from([1, 1, 1, 2, 3])))
        fd = tuple(fd)
    return unflatten(fd, shape) if isinstance(shape, tuple) else fd[0]


@st.composite
def layouts(draw, max_size=512, kind="mixed", max_depth=3, max_rank=4, allow_empty=False):
    s = draw(shapes(max_size=max_size, max_depth=max_depth, max_rank=max_rank, allow_empty=allow_empty))
    return Layout(s, draw(strides_for(s, kind)))
