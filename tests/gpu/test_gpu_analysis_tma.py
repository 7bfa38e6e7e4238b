"""The TMA pre-flight (layoutproof.gpu.analysis.tma): the arguments it derives for CUTLASS's
GMMA shared-memory atoms and the GEMM's own stages, its placement claim against an
independent model written from the PTX swizzle tables, its driver requirements against an
independent reading of the driver documentation, symbolic shapes, the literal C++ and
Python calls, and bad input refused by name."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

from layoutproof import ComposedLayout, Layout, Swizzle, composition, symbols
from layoutproof.errors import LayoutError
from layoutproof.gpu.analysis.tma import (
    DATA_TYPES,
    BoxMismatch,
    TensorMapArgs,
    TmaError,
    check_args,
    data_type,
    tma_preflight,
)
from layoutproof.gpu.isa.gmma import smem_atom, tile_to_shape
from layoutproof.symbolic import assuming

ROOT = Path(__file__).resolve().parents[2]
A_K = Layout((1024, 512), (512, 1))  # (m, k), k contiguous
A_MN = Layout((1024, 512), (1, 1024))  # (m, k), m contiguous

# PTX ISA 5.5.7: the 16-byte chunk at position x of 128-byte line y holds chunk table[y % n][x]
_PTX_TABLE = {
    "32B": [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6]],
    "64B": [
        [0, 1, 2, 3, 4, 5, 6, 7],
        [1, 0, 3, 2, 5, 4, 7, 6],
        [2, 3, 0, 1, 6, 7, 4, 5],
        [3, 2, 1, 0, 7, 6, 5, 4],
    ],
    "128B": [
        [0, 1, 2, 3, 4, 5, 6, 7],
        [1, 0, 3, 2, 5, 4, 7, 6],
        [2, 3, 0, 1, 6, 7, 4, 5],
        [3, 2, 1, 0, 7, 6, 5, 4],
        [4, 5, 6, 7, 0, 1, 2, 3],
        [5, 4, 7, 6, 1, 0, 3, 2],
        [6, 7, 4, 5, 2, 3, 0, 1],
        [7, 6, 5, 4, 3, 2, 1, 0],
    ],
}


def ptx_swizzled(addr: int, mode: str) -> int:
    """Where the byte the box puts at (unswizzled) ``addr`` lands: row ``line % period`` of
    the table lists, for each 16-byte position of the line, the chunk stored there."""
    if mode == "NONE":
        return addr
    line, chunk, byte = addr // 128, (addr // 16) % 8, addr % 16
    row = _PTX_TABLE[mode][line % len(_PTX_TABLE[mode])]
    return line * 128 + row.index(chunk) * 16 + byte  # the table lists, per position, the chunk there


def independent_placement(rep, smem, tile) -> Tuple[int, List[Tuple[int, ...]]]:
    """Per tile element, scalar loops: the box holding it (box origins from the report), its
    offset in that box (dimension 0 fastest, a swizzled row padded to the span), the PTX
    table's swizzle; compared with
    the layout's own value.  Returns (mismatches, first few coordinates)."""
    E = DATA_TYPES[rep.args.dtype][1]
    r = len(tile)
    box = rep.box[:r]
    order = [d for d in rep.dims if d < r]
    bad: List[Tuple[int, ...]] = []
    n = int(np.prod(tile))
    origins = {o: off for o, off in zip(rep.box_origins, rep.box_offsets)}
    for i in range(n):
        c = []
        rest = i
        for t in tile:
            c.append(rest % t)
            rest //= t
        o = tuple(c[k] - c[k] % box[k] for k in range(r))
        dense, pitch = 0, 1
        for k, d in enumerate(order):
            dense += (c[d] % box[d]) * pitch
            pitch *= box[d]
            if k == 0 and rep.args.swizzle != "NONE":  # a swizzled row takes the whole span
                pitch = max(pitch, int(rep.args.swizzle[:-1]) // E)
        got = ptx_swizzled(origins[o] + dense * E, rep.args.swizzle)
        if got != int(smem(i)) * E:
            bad.append(tuple(c))
    return len(bad), bad[:3]


# ----------------------------------------------------------------------------- real tiles
@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("sw", ["INTER", "SW32", "SW64", "SW128"])
@pytest.mark.parametrize("shape", [(64, 64), (128, 64)])
def test_gmma_atoms_f16(major: str, sw: str, shape: Tuple[int, int]) -> None:
    s = tile_to_shape(smem_atom(major, sw), shape)
    r = tma_preflight(A_K if major == "K" else A_MN, s, shape, dtype="f16")
    assert r.status == "proved", r.text()
    W = {"INTER": 16, "SW32": 32, "SW64": 64, "SW128": 128}[sw]  # bytes of a swizzle row
    a = r.args
    assert a.dtype == "FLOAT16" and a.rank == 2 and a.element_strides == (1, 1)
    assert a.swizzle == {"INTER": "NONE", "SW32": "32B", "SW64": "64B", "SW128": "128B"}[sw]
    assert a.box_dim[0] * 2 == W  # the inner box is one swizzle row
    assert r.dims == ((1, 0) if major == "K" else (0, 1))
    assert a.global_dim == ((512, 1024) if major == "K" else (1024, 512))
    assert a.global_strides == ((1024,) if major == "K" else (2048,))
    assert r.boxes * int(np.prod(a.box_dim)) == shape[0] * shape[1] and r.tx_bytes == 2 * shape[0] * shape[1]
    assert r.smem_align == max(128, 8 * W) if sw != "INTER" else r.smem_align == 128
    n, first = independent_placement(r, s.layout, shape)
    assert n == 0, first
    json.dumps(r.as_dict())


@pytest.mark.parametrize("sw", ["SW32", "SW64", "SW128"])
def test_gmma_k_atoms_tf32_and_bf16(sw: str) -> None:
    for bits, dt, want in ((32, "tf32", "TFLOAT32"), (16, "bf16", "BFLOAT16")):
        s = tile_to_shape(smem_atom("K", sw, bits), (64, 64))
        r = tma_preflight(A_K, s, (64, 64), dtype=dt)
        assert r.status == "proved" and r.args.dtype == want
        assert r.args.box_dim[0] * bits // 8 == int(sw[2:])
        assert independent_placement(r, s.layout, (64, 64))[0] == 0


def _kernel_box_model(x_extent: int, kmajor: bool) -> np.ndarray:
    """The GEMM's former model of its 64x64 boxes, (x, k) -> byte: box j at 8192 j, its
    element (inner i, outer o) at o * 128 + 2 i, then the 128-byte swizzle."""
    x = np.arange(x_extent)[:, None]
    k = np.arange(64)[None, :]
    inner, outer = (k, x % 64) if kmajor else (x % 64, k)
    lin = (x // 64) * 8192 + outer * 128 + 2 * inner
    return lin ^ (((lin >> 7) & 7) << 4)


def test_the_gemm_stage_boxes_agree_with_the_kernels_own_model() -> None:
    """The GEMM's stage layout (which its generator proves with this pre-flight) equals an
    independent model of the TMA boxes; with the kernel's 64x64 box the pre-flight proves
    the same layout from its own model: three models of one placement agree.  A planted
    wrong stage is refuted by both."""
    from layoutproof.gpu.kernels.wgmma import tma_stage_layout

    for x in (64, 128, 256):
        for kmajor in (True, False):
            stage = tma_stage_layout(x, kmajor)
            g = Layout((4096, 4096), (4096, 1)) if kmajor else Layout((4096, 4096), (1, 4096))
            r = tma_preflight(g, stage, (x, 64), dtype="f16", box=(64, 64))
            assert r.status == "proved", r.text()
            assert r.boxes == x // 64 and r.args.box_dim == (64, 64) and r.args.swizzle == "128B"
            assert sorted(r.box_offsets) == [8192 * j for j in range(x // 64)]
            want = _kernel_box_model(x, kmajor)  # (x, k) -> byte
            ours = np.asarray(stage.eval_all()).reshape(x, 64, order="F") * 2
            assert np.array_equal(ours, want)
            bad = composition(Swizzle(3, 3, 4), stage.layout_b)
            rb = tma_preflight(g, bad, (x, 64), dtype="f16", box=(64, 64))
            assert rb.status == "refuted" and isinstance(rb.witness, BoxMismatch)
            xw, kw = rb.witness.coordinate
            assert int(bad(xw + x * kw)) * 2 != int(want[xw, kw])
            assert rb.witness.tma_byte == int(want[xw, kw])


def test_default_box_is_the_largest_and_explicit_boxes_split() -> None:
    s = tile_to_shape(smem_atom("K", "SW128"), (128, 64))
    assert tma_preflight(A_K, s, (128, 64), dtype="f16").args.box_dim == (64, 128)
    r = tma_preflight(A_K, s, (128, 64), dtype="f16", box=(64, 64))
    assert r.status == "proved" and r.boxes == 2 and r.box_offsets == (0, 8192)
    r4 = tma_preflight(A_K, s, (128, 64), dtype="f16", box=(32, 64))
    assert r4.status == "proved" and r4.box_offsets == (0, 4096, 8192, 12288)
    r5 = tma_preflight(A_K, s, (128, 64), dtype="f16", box=(128, 32))  # half a swizzle row: wrong
    assert r5.status == "refuted" and "box destination alignment" in str(r5.witness)
    big = tma_preflight(Layout((4096, 4096), (4096, 1)), Layout((512, 64), (64, 1)), (512, 64), dtype="f16")
    assert big.status == "proved" and big.args.box_dim == (64, 256) and big.boxes == 2


# ----------------------------------------------------------------------------- refutations
def _refuted(r, constraint: str) -> None:
    assert r.status == "refuted", r.text()
    assert any(c.constraint == constraint and c.status == "refuted" for c in r.checks), r.text()
    first = next(c for c in r.checks if c.status == "refuted")  # the witness names the first
    assert first.constraint in str(r.witness) or isinstance(r.witness, BoxMismatch)


def test_planted_bad_tiles_are_refuted_with_the_constraint_named() -> None:
    f16 = dict(dtype="f16")
    r = tma_preflight(A_K, composition(Swizzle(3, 3, 3), Layout((64, 128), (128, 1))), (64, 128), **f16)
    _refuted(r, "inner box bytes <= swizzle span")  # a 256-byte inner box under 128B swizzle
    assert "256 bytes" in str(r.witness)
    _refuted(tma_preflight(A_K, Layout((64, 64), (72, 1)), (64, 64), **f16), "box destination alignment")
    _refuted(tma_preflight(A_K, Layout((8, 12), (12, 1)), (8, 12), **f16), "inner box multiple of 16 bytes")
    big = tma_preflight(Layout((64, 4096), (4096, 1)), Layout((8, 512), (512, 1)), (8, 512), **f16)
    _refuted(big, "boxDim range")
    six = Layout((2, 2, 2, 2, 2, 64), (2048, 1024, 512, 256, 128, 1))
    _refuted(tma_preflight(six, six, (2, 2, 2, 2, 2, 64), **f16), "tensorRank")
    nan = tma_preflight(
        A_K, Layout((64, 64), (64, 1)), (64, 64), dtype="u16", oob_fill="NAN_REQUEST_ZERO_FMA"
    )
    _refuted(nan, "NaN fill needs a floating-point type")
    al = tma_preflight(A_K, Layout((64, 64), (64, 1)), (64, 64), dtype="f16", base_align=8)
    _refuted(al, "globalAddress alignment")
    odd = tma_preflight(Layout((64, 100), (100, 1)), Layout((64, 64), (64, 1)), (64, 64), **f16)
    _refuted(odd, "globalStrides multiple of 16")  # 200-byte rows


def test_layouts_tma_cannot_write_are_refuted_with_the_coordinate() -> None:
    t = tma_preflight(A_K, Layout((64, 64), (1, 64)), (64, 64), dtype="f16")  # transposed
    assert t.status == "refuted" and isinstance(t.witness, BoxMismatch)
    assert t.witness.coordinate == (1, 0) and t.witness.tma_byte == 128 and t.witness.layout_byte == 2
    assert "fastest" in t.failed()[0].hint
    sw = tma_preflight(A_K, composition(Swizzle(3, 4, 3), Layout((64, 64), (64, 1))), (64, 64), dtype="f16")
    assert sw.status == "refuted" and isinstance(sw.witness, BoxMismatch)
    assert "Sw<3,5,3> on bytes" in sw.failed()[0].hint
    w = sw.witness
    s = composition(Swizzle(3, 4, 3), Layout((64, 64), (64, 1)))
    assert int(s(w.coordinate[0] + 64 * w.coordinate[1])) * 2 == w.layout_byte != w.tma_byte
    # a swizzled layout with an offset that keeps boxes on 128-byte lines is fine
    ok = tma_preflight(
        A_K, ComposedLayout(Swizzle(3, 3, 3), 64, Layout((64, 64), (64, 1))), (64, 64), dtype="f16"
    )
    assert ok.status == "proved" and ok.box_offsets == (128,)


def test_interleave() -> None:
    g = Layout((8, 16, 16, 4), (1, 8, 128, 2048))
    r = tma_preflight(g, Layout((8, 16, 16), (1, 8, 128)), (8, 16, 16), dtype="f16", interleave="16B")
    assert r.status == "unknown" and "interleaved" in r.reason
    r2 = tma_preflight(g, Layout((8, 16, 16), (1, 8, 128)), (8, 16, 16), dtype="f16", interleave="32B")
    _refuted(r2, "INTERLEAVE_32B needs SWIZZLE_32B")
    flat = tma_preflight(A_K, Layout((64, 64), (64, 1)), (64, 64), dtype="f16", interleave="16B")
    _refuted(flat, "tensorRank")  # interleaved maps have rank 3 to 5


# ----------------------------------------------------------------------------- symbolic
def test_symbolic_a_proved_and_refuted_with_the_needed_assumption() -> None:
    M, K = symbols("M K")
    A = Layout((M, K), (K, 1))
    s = tile_to_shape(smem_atom("K", "SW128"), (128, 64))
    with assuming("K % 8 == 0", "M <= 2**31", "K <= 2**31"):
        r = tma_preflight(A, s, (128, 64), dtype="f16")
    assert r.status == "proved", r.text()
    assert r.args.global_dim == (K, M) and r.args.global_strides == (2 * K,)
    assert "K % 8 == 0" in r.scope and "z3" in r.method
    with assuming("M <= 2**31", "K <= 2**31"):
        bad = tma_preflight(A, s, (128, 64), dtype="f16")
    assert bad.status == "refuted"
    c = next(c for c in bad.checks if c.status == "refuted")
    assert c.constraint == "globalStrides multiple of 16" and c.hint == "K % 8 == 0"
    k = c.witness["K"]
    assert (2 * k) % 16 != 0 and c.witness["globalStrides[0]"] == 2 * k  # confirmed by substitution
    conc = bad.args.subs({"M": 5, "K": k})
    assert [x.constraint for x in check_args(conc) if x.status == "refuted"] == [
        "globalStrides multiple of 16"
    ]
    with assuming("K % 8 == 0", "M >= 2"):
        big = tma_preflight(A, s, (128, 64), dtype="f16")  # no upper bound on the extents
    assert big.status == "refuted" and "2^32" in str(big.witness)


def test_symbolic_leading_dimension() -> None:
    M, K, ld = symbols("M K ldA")
    A = Layout((M, K), (ld, 1))
    s = tile_to_shape(smem_atom("K", "SW64"), (64, 64))
    with assuming("ldA % 8 == 0", "ldA >= K", "ldA <= 2**30", "M <= 2**30", "K <= 2**30"):
        r = tma_preflight(A, s, (64, 64), dtype="bf16")
    assert r.status == "proved" and r.args.global_strides == (2 * ld,) and r.boxes == 2
    with assuming("ldA % 4 == 0", "ldA <= 2**30", "M <= 2**30", "K <= 2**30"):
        r2 = tma_preflight(A, s, (64, 64), dtype="bf16")
    assert r2.status == "refuted" and "ldA % 8 == 0" in str(r2.witness)


def test_symbols_without_assumptions_are_refused() -> None:
    M, K = symbols("M K")
    with pytest.raises(TmaError) as e:
        tma_preflight(Layout((M, K), (K, 1)), Layout((64, 64), (64, 1)), (64, 64), dtype="f16")
    assert e.value.condition == "assumptions for symbols" and e.value.witness == ("K", "M")
    with assuming("M <= 2**31"), pytest.raises(TmaError) as e2:
        tma_preflight(Layout((M, K), (K, 1)), Layout((64, 64), (64, 1)), (64, 64), dtype="f16")
    assert e2.value.witness == ("K",)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "call, condition",
    [
        (
            lambda: tma_preflight(A_K, Layout((64, 64), (64, 1)), (64, 32), dtype="f16"),
            "shared-memory layout matches the tiler",
        ),
        (
            lambda: tma_preflight(A_K, Layout(4096, 1), (64, 64), dtype="f16"),
            "shared-memory layout matches the tiler",
        ),
        (
            lambda: tma_preflight(
                Layout((64, 64), (128, 2)), Layout((64, 64), (64, 1)), (64, 64), dtype="f16"
            ),
            "unit-stride mode",
        ),
        (
            lambda: tma_preflight(
                Layout(((8, 8), 64), ((1, 8), 64)), Layout((64, 64), (1, 64)), (64, 64), dtype="f16"
            ),
            "flat global layout",
        ),
        (
            lambda: tma_preflight(A_K, Layout((64, 64), (64, 1)), (64, 64), dtype="f16", box=(48, 64)),
            "box divides the tile",
        ),
        (lambda: tma_preflight(A_K, Layout((64, 64), (64, 1)), (64, 64), dtype="f13"), "data type"),
        (
            lambda: tma_preflight(A_K, Layout((64, 64), (64, 1)), (64, 64, 2), dtype="f16"),
            "tiler fits the tensor",
        ),
        (lambda: tma_preflight(A_K, Layout((64, 64), (64, 1)), (64, 0), dtype="f16"), "tiler"),
        (
            lambda: tma_preflight(A_K, Layout((64, 64), (64, 1)), (64, 64), dtype="f16", interleave="8B"),
            "interleave",
        ),
        (
            lambda: tma_preflight(A_K, Layout((64, 64), (64, 1)), (64, 64), dtype="f16", l2_promotion="512B"),
            "l2_promotion",
        ),
        (
            lambda: tma_preflight(
                A_K, tile_to_shape(smem_atom("K", "SW128", 32), (64, 64)), (64, 64), dtype="f16"
            ),
            "element width",
        ),
        (
            lambda: tma_preflight(
                composition(Swizzle(3, 3, 3), A_K), Layout((64, 64), (64, 1)), (64, 64), dtype="f16"
            ),
            "global layout",
        ),
        (lambda: tma_preflight(A_K, "(64,64):(64,1)", (64, 64), dtype="f16"), "shared-memory layout"),
        (
            lambda: TensorMapArgs("FLOAT16", 1, (symbols("M"),), (), (8,), (1,)).driver_args(None, 0),
            "concrete arguments",
        ),
    ],
)
def test_bad_input_raises_a_layout_error_naming_the_condition(call: Any, condition: str) -> None:
    with pytest.raises(TmaError) as e:
        call()
    assert isinstance(e.value, LayoutError) and e.value.condition == condition


def test_data_type_names() -> None:
    assert [data_type(x) for x in ("f16", "bf16", "tf32", "e4m3", "i8", "f64", "int32", "UINT16")] == [
        "FLOAT16",
        "BFLOAT16",
        "TFLOAT32",
        "UINT8",
        "UINT8",
        "FLOAT64",
        "INT32",
        "UINT16",
    ]
    assert data_type(np.dtype("float16")) == "FLOAT16"


# ----------------------------------------------------------------------------- the driver's rules
def reference_accepts(a: TensorMapArgs) -> bool:
    """The driver documentation's requirements, written again independently (one
    predicate per bullet of cuTensorMapEncodeTiled's description)."""
    E = DATA_TYPES[a.dtype][1]
    r = a.rank
    if not (1 <= r <= 5) or (a.interleave != "NONE" and r < 3):
        return False
    if a.address_align is not None and a.address_align % (32 if a.interleave == "32B" else 16):
        return False
    if any(not (0 < d <= 1 << 32) for d in a.global_dim):
        return False
    m = 32 if a.interleave == "32B" else 16
    if any(s % m or s >= 1 << 40 or s < 0 for s in a.global_strides):
        return False
    if any(not (0 < b <= 256) for b in a.box_dim) or any(not (0 < e <= 8) for e in a.element_strides):
        return False
    if a.interleave == "NONE" and (a.box_dim[0] * E) % 16:
        return False
    if (
        a.interleave == "NONE"
        and a.swizzle != "NONE"
        and a.box_dim[0] * E > {"32B": 32, "64B": 64, "128B": 128}[a.swizzle]
    ):
        return False
    if a.interleave == "32B" and a.swizzle != "32B":
        return False
    if a.oob_fill != "NONE" and not (
        a.dtype.startswith("FLOAT") or a.dtype.startswith("TFLOAT") or a.dtype == "BFLOAT16"
    ):
        return False
    return True


def test_check_args_against_an_independent_reading_of_the_driver_docs() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import tma_driver_check as bench
    finally:
        sys.path.pop(0)
    rng = random.Random(7)
    seen = {True: 0, False: 0}
    for _ in range(300):
        a, _off = bench.draw(rng, p_bad=0.08)
        if not 1 <= a.rank <= 5:
            continue
        ours = all(c.status == "proved" for c in check_args(a))
        assert ours == reference_accepts(a), (a, [c.line() for c in check_args(a) if c.status != "proved"])
        seen[ours] += 1
    assert seen[True] > 50 and seen[False] > 50


def test_literal_python_call_is_the_driver_call() -> None:
    """The printed cuda.bindings call, run against a recording stand-in for the driver,
    passes exactly driver_args."""

    class Enum:
        def __getattr__(self, name: str) -> str:
            return name

    class FakeDriver:
        CUtensorMapDataType = CUtensorMapInterleave = CUtensorMapSwizzle = Enum()
        CUtensorMapL2promotion = CUtensorMapFloatOOBfill = Enum()

        @staticmethod
        def cuuint32_t(v: int) -> Tuple[str, int]:
            return ("u32", int(v))

        @staticmethod
        def cuuint64_t(v: int) -> Tuple[str, int]:
            return ("u64", int(v))

        calls: List[Tuple[Any, ...]] = []

        @classmethod
        def cuTensorMapEncodeTiled(cls, *args: Any) -> Tuple[int, str]:
            cls.calls.append(args)
            return 0, "map"

    s = tile_to_shape(smem_atom("MN", "SW64"), (128, 64))
    r = tma_preflight(A_MN, s, (128, 64), dtype="bf16", oob_fill="NAN_REQUEST_ZERO_FMA")
    code = r.python(ptr="ptr").replace("from cuda.bindings import driver\n", "")
    env: Dict[str, Any] = {"driver": FakeDriver, "ptr": 0x7F0000000000}
    exec(code, env)
    assert FakeDriver.calls[-1] == r.args.driver_args(FakeDriver, 0x7F0000000000)
    assert env["tensor_map"] == "map"
    M, K = symbols("M K")
    with assuming("K % 8 == 0", "M <= 2**31", "K <= 2**31"):
        rs = tma_preflight(
            Layout((M, K), (K, 1)), tile_to_shape(smem_atom("K", "SW128"), (64, 64)), (64, 64), dtype="f16"
        )
    env = {"driver": FakeDriver, "ptr": 0, "M": 300, "K": 72}
    exec(rs.python().replace("from cuda.bindings import driver\n", ""), env)
    assert FakeDriver.calls[-1] == rs.args.subs({"M": 300, "K": 72}).driver_args(FakeDriver, 0)
    assert FakeDriver.calls[-1][4] == [("u64", 144)]


@pytest.mark.skipif(
    shutil.which("g++") is None or not Path("/usr/local/cuda/include/cuda.h").exists(),
    reason="no g++ or cuda.h",
)
def test_literal_cpp_call_compiles_against_cuda_h(tmp_path: Path) -> None:
    M, K = symbols("M K")
    with assuming("K % 8 == 0", "M <= 2**31", "K <= 2**31"):
        rs = tma_preflight(
            Layout((M, K), (K, 1)), tile_to_shape(smem_atom("K", "SW128"), (64, 64)), (64, 64), dtype="f16"
        )
    r1 = tma_preflight(Layout(4096, 1), Layout(256, 1), (256,), dtype="u8")
    body = []
    for i, rep in enumerate((rs, r1)):
        body.append(f"CUresult f{i}(void* ptr, cuuint64_t M, cuuint64_t K) {{\n{rep.cpp()}\nreturn res; }}")
    src = tmp_path / "call.cpp"
    src.write_text("#include <cuda.h>\n" + "\n".join(body) + "\n")
    out = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", "-I/usr/local/cuda/include", str(src)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr


def test_report_text_and_json() -> None:
    s = tile_to_shape(smem_atom("K", "SW32"), (64, 64))
    r = tma_preflight(A_K, s, (64, 64), dtype="f16", base_align=256)
    t = r.text()
    assert t.splitlines()[0] == r.line() and "cuTensorMapEncodeTiled(&tensor_map" in t and "4 box(es)" in t
    d = json.loads(json.dumps(r.as_dict()))
    assert d["status"] == "proved" and d["args"]["box_dim"] == [16, 64] and d["boxes"] == 4
    assert any(c["constraint"] == "globalAddress alignment" for c in d["checks"])
    assert all(c["source"] for c in d["checks"])


# ----------------------------------------------------------------------------- docs and bench
def test_docs_analysis_tma_examples_run() -> None:
    import doctest

    path = ROOT / "docs" / "analysis-tma.md"
    res = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS, encoding="utf-8")
    assert res.failed == 0 and res.attempted >= 15, (res.failed, res.attempted)


def test_driver_check_bench_dry_run_and_mocked_driver(
    capsys: pytest.CaptureFixture, monkeypatch: Any
) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import tma_driver_check as bench
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(sys, "argv", ["tma_driver_check.py", "--n", "40", "--dry-run"])
    monkeypatch.delenv("OUT", raising=False)
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert "we accept" in out and "we refuse" in out and "maps derived by the pre-flight" in out

    class Stand:  # a driver that accepts exactly what the reference reading accepts, but rank 5
        def __init__(self) -> None:
            self.driver = None

        def encode(self, args: TensorMapArgs, off: int) -> Tuple[bool, str]:
            ok = 1 <= args.rank <= 4 and reference_accepts(replace_align(args, off))
            return ok, "CUDA_SUCCESS" if ok else "CUDA_ERROR_INVALID_VALUE"

    def replace_align(a: TensorMapArgs, off: int) -> TensorMapArgs:
        from dataclasses import replace

        return replace(a, address_align=bench._align(off))

    monkeypatch.setattr(bench, "Device", Stand)
    monkeypatch.setattr(bench, "rank1_probe", lambda dev: ["  rank 1 probe stand-in"])
    monkeypatch.setattr(sys, "argv", ["tma_driver_check.py", "--n", "200", "--placement", "skip"])
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert "both accept" in out and "both refuse" in out and "we accept, driver refuses" in out
    assert "we refuse, driver accepts" not in out and "what makes the driver accept" in out


def test_swizzled_rows_narrower_than_the_span_are_padded() -> None:
    """Seen on an H200 (bench/tma_driver_check.py --placement only): a box row narrower than
    the swizzle span occupies the whole span; dense narrow rows are refuted at the second
    row, where the hardware wrote byte 144."""
    dense = composition(Swizzle(3, 3, 3), Layout((64, 32), (32, 1)))
    r = tma_preflight(A_K, dense, (64, 32), dtype="f16")
    assert r.status == "refuted" and r.witness.coordinate == (1, 0) and r.witness.tma_byte == 144
    for swz, span, cols in (
        (Swizzle(3, 3, 3), 64, 32),
        (Swizzle(2, 3, 3), 32, 16),
        (Swizzle(1, 3, 3), 16, 8),
    ):
        padded = composition(swz, Layout((64, cols), (span, 1)))
        p = tma_preflight(A_K, padded, (64, cols), dtype="f16")
        assert p.status == "proved" and p.args.box_dim == (cols, 64) and p.tx_bytes == 64 * cols * 2
        assert independent_placement(p, padded, (64, cols))[0] == 0


def test_tile_too_big_for_shared_memory_and_budget_exhausted() -> None:
    big = tma_preflight(
        Layout((4096, 4096), (4096, 1)), Layout((256, 512), (512, 1)), (256, 512), dtype="f32", box=(128, 64)
    )
    _refuted(big, "tile fits in shared memory")
    M, K = symbols("M K")
    with assuming("K % 8 == 0", "M <= 2**31", "K <= 2**31"):
        r = tma_preflight(
            Layout((M, K), (K, 1)), Layout((64, 64), (64, 1)), (64, 64), dtype="f16", budget_s=0.0
        )
    assert r.status == "unknown" and "timeout" in r.reason


def test_cli_analyze_tma(capsys):
    from layoutproof.cli import main

    base = ["analyze", "tma", "(M,K):(K,1)", "gmma:K:SW128", "--tile", "128,64", "--dtype", "f16"]
    bounds = ["--assume", "1 <= M", "--assume", "M <= 2**31", "--assume", "8 <= K", "--assume", "K <= 2**20"]
    assert main(base + bounds + ["--assume", "K % 8 == 0"]) == 0
    out = capsys.readouterr().out
    assert "CU_TENSOR_MAP_SWIZZLE_128B" in out and "globalStrides[1] = {2 * K}" in out
    assert main(base + bounds) == 1
    assert "K % 8 == 0" in capsys.readouterr().out
    assert main(base + bounds + ["--assume", "K % 8 == 0", "--python"]) == 0
    assert "driver.cuTensorMapEncodeTiled(" in capsys.readouterr().out
    assert main(["analyze", "tma", "(64,64):(64,1)", "gmma:K", "--tile", "64,64", "--dtype", "f16"]) == 2
