"""Shared hypothesis set-up for the layoutproof tests.

The strategies are the shipped testing kit's (:mod:`layoutproof.verify.strategies`);
``shapes``, ``strides_for`` and ``layouts`` here are thin calls of them with the tests'
defaults (import them with ``from conftest import ...``): hierarchical shapes with small
extents (size <= ``max_size``), strides of a chosen kind, and layouts from the two.  Every
test run is deterministic: the profile loaded below derandomizes hypothesis (CI gives the
same examples every time).

For a longer, randomized hunt set ``LAYOUTPROOF_EXAMPLES_SCALE`` (e.g. ``20``): every
``examples(n)`` budget is multiplied by it and hypothesis is no longer derandomized.

The native torch front (``gpu/host/torch_native.py``) in the GPU back end's tests
(``tests/gpu``): outside of tests, a torch call's first entry starts building the front in
a background thread, and it serves the later calls once it is loaded.  Tests do not leave
that to timing: no background build starts, and the front serves exactly where a test says
so -- with a GPU, in every test (built once for the session, a fresh ``Dispatch`` per test),
so the torch GPU tests run their kept signatures through it; without one, where a test sets
``torch_op.HOT`` itself (test_gpu_torch's ``fake`` fixture runs each of its tests both ways).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from layoutproof.verify import strategies as S

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

# The testing kit's own strategies (layoutproof.verify.strategies) make the values; the three
# names below keep the tests' conventions (a shape's leaves up to ``max_leaf``, stride kinds
# "chain" and "mixed", strides among small and "nice" values) as thin calls of them.
NICE_STRIDES = (0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 64)
# kind "any": the nice strides and every stride in -12..12
ANY_STRIDES = tuple(sorted(set(NICE_STRIDES) | set(range(-12, 13)), key=lambda v: (abs(v), v)))
# this file's kind -> the kit's kind: "chain" (permuted compact with gaps and a scale:
# injective, the strides chain) is the kit's "injective"
KINDS = {"any": "any", "nonneg": "nonneg", "compact": "compact", "chain": "injective", "mixed": "mixed"}


def _kit_kind(kind):
    if kind not in KINDS:
        raise ValueError(f"stride kind must be one of {sorted(KINDS)}, got {kind!r}")
    return KINDS[kind]


def _values(kind):
    # "nonneg" draws the nice strides only; "any" (and "mixed", through its "any" draws)
    # the nice strides and -12..12
    return NICE_STRIDES if kind == "nonneg" else ANY_STRIDES


def shapes(max_size=512, max_leaf=8, max_depth=3, max_rank=4, allow_empty=False):
    """A hierarchical shape (int or nested tuple of positive ints) of size <= max_size."""
    return S.shapes(
        max_size=max_size,
        max_extent=max_leaf,
        max_depth=max_depth,
        max_rank=max_rank,
        allow_empty=allow_empty,
    )


def strides_for(shape, kind="any"):
    """A stride congruent with ``shape``.

    kind: ``"any"`` (small strides, 0 included, sometimes negative), ``"nonneg"``,
    ``"compact"`` (a permuted compact layout: injective, image = [0, size)),
    ``"chain"`` (permuted compact with gaps and a scale: injective, strides chain),
    ``"mixed"`` (one of the kit's kinds, drawn).
    """
    return S.strides(shape, _kit_kind(kind), values=_values(kind))


def layouts(max_size=512, kind="mixed", max_depth=3, max_rank=4, allow_empty=False):
    """A layout: a shape from :func:`shapes`, a stride of ``kind`` from :func:`strides_for`."""
    return S.layouts(
        max_size=max_size,
        max_depth=max_depth,
        max_rank=max_rank,
        kind=_kit_kind(kind),
        values=_values(kind),
        allow_empty=allow_empty,
    )


# ============================================================================ the native torch front
_GPU_TESTS = Path(__file__).resolve().parent / "gpu"


@pytest.fixture(scope="session")
def native_build_dir(tmp_path_factory):
    """The one folder the session builds the native front in."""
    return tmp_path_factory.mktemp("torch_native")


@pytest.fixture(scope="session")
def torch_native_module(native_build_dir):
    """The native front's extension module, built once for the session; None without torch
    or where it cannot be built (``torch_native.status()`` says why)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    from layoutproof.gpu.host import torch_native

    return torch_native.module(native_build_dir)


@pytest.fixture(scope="session")
def gpu_native_front(request):
    """The native front's module where a GPU is present and it builds, else None."""
    try:
        import torch
    except ImportError:
        return None
    from layoutproof.gpu.host import runtime

    if not (torch.cuda.is_available() and runtime.gpu_available()):
        return None
    return request.getfixturevalue("torch_native_module")


@pytest.fixture(autouse=True)
def _native_front_by_test(request, monkeypatch):
    """In tests/gpu: no background build; with a GPU, a fresh Dispatch of the session's
    module serves the test's torch calls (entries kept by earlier tests do not)."""
    if _GPU_TESTS not in Path(str(request.node.path)).resolve().parents:
        yield
        return
    gpu_native_front = request.getfixturevalue("gpu_native_front")
    from layoutproof.gpu.host import torch_op

    monkeypatch.setattr(torch_op, "_start_native", lambda: None)
    saved = list(torch_op.HOT)
    torch_op.HOT.clear()
    if gpu_native_front is not None:
        torch_op.HOT[:] = [gpu_native_front.Dispatch(), torch_op._compiling_fn(sys.modules["torch"])]
    yield
    torch_op.HOT[:] = saved
