"""The bank picture (gpu.analysis.bank_picture) shows what the bank model counts: per phase,
the distinct words of the busiest bank are the phase's wavefronts, on every case."""

import random

import pytest

from layoutproof import Layout, Swizzle, composition
from layoutproof.errors import LayoutError
from layoutproof.gpu.analysis import banks
from layoutproof.gpu.analysis.bank_picture import bank_pattern

CASES = [
    (Layout((32, 32), (32, 1)), Layout(32, 1), "ld.shared.b32", 32),
    (
        composition(Swizzle(5, 0, 5), Layout((32, 32), (32, 1))),
        Layout((32, 32), (1, 32)),
        "ld.shared.b32",
        32,
    ),
    (Layout(256, 1), Layout((32, 8), (8, 1)), "ld.shared.v4.b32", 16),
    (Layout((64, 64), (64, 1)), Layout(((8, 4), 8), ((1, 512), 64)), "ldmatrix.x4", 16),
    (
        composition(Swizzle(3, 3, 3), Layout((64, 64), (64, 1))),
        Layout(((8, 4), 8), ((1, 512), 64)),
        "ldmatrix.x4",
        16,
    ),
    (Layout((16, 32), (32, 1)), Layout(((16, 2), 2), ((1, 32), 16)), "ld.shared.v2.b32", 32),
    (Layout((64, 64), (64, 1)), Layout((32, 2), (64, 1)), "ld.shared.b16", 16),
    (
        composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))),
        Layout(((8, 4), 8), ((1, 0), 8)),
        "ldmatrix.x1",
        16,
    ),
]


def check_pattern(smem, tv, ins, bits, **where):
    p = bank_pattern(smem, tv, ins, element_bits=bits, **where)
    for ph in range(len(p.lanes)):
        worst = max(p.ways(ph, b) for b in range(32))
        assert worst == p.wavefronts[ph], (p.title, ph)
    return p


@pytest.mark.parametrize("smem, tv, ins, bits", CASES)
def test_picture_counts_are_the_models(smem, tv, ins, bits):
    p = check_pattern(smem, tv, ins, bits)
    r = banks(smem, tv, ins, element_bits=bits)
    assert p.wavefronts == r.wavefronts[p.warp, p.instruction].tolist()
    if r.status == "refuted":  # the default picture is the first conflicting instruction
        assert (p.warp, p.instruction) == (r.witness.warp, r.witness.instruction)
        assert max(p.wavefronts) > 1
    svg = p.svg()
    assert svg.count('class="cell"') == 32 * len(p.lanes)
    assert p.as_dict()["wavefronts"] == p.wavefronts


def test_random_rows_every_instruction_and_phase():
    rng = random.Random(7)
    for _ in range(60):
        bits = rng.choice([16, 32])
        vec = rng.choice([1, 2, 4]) if bits == 32 else rng.choice([2, 4, 8])
        ins = {4: "ld.shared.b32", 8: "ld.shared.v2.b32", 16: "ld.shared.v4.b32"}[vec * bits // 8]
        cols = 8 * vec * rng.choice([1, 2, 4])
        rows = 32 * vec * 8 // cols * rng.choice([1, 2])
        pad = rng.choice([0, 0, vec, 4 * vec])
        smem = Layout((rows, cols), (cols + pad, 1))
        tv = Layout(((cols // vec, 32 * vec // cols), vec), ((rows * vec, 1), rows))
        r = banks(smem, tv, ins, element_bits=bits)
        for i in range(r.wavefronts.shape[1]):
            check_pattern(smem, tv, ins, bits, warp=0, index=i)


def test_text_marks_the_conflicting_bank():
    p = bank_pattern(Layout((32, 32), (32, 1)), Layout(32, 1), "ld.shared.b32", element_bits=32)
    lines = p.text().splitlines()
    assert lines[1] == "phase 0 (lanes 0-31): 32 wavefronts, 32-way on bank 0"
    assert lines[2].startswith("  bank  0: lanes 0,1,2") and lines[2].endswith("<-")


def test_bad_requests_are_layout_errors():
    from layoutproof import symbols

    M = symbols("M")
    with pytest.raises(LayoutError, match="instruction 5 does not exist"):
        bank_pattern(Layout((32, 32), (32, 1)), Layout(32, 1), "ld.shared.b32", element_bits=32, index=5)
    with pytest.raises(LayoutError, match="concrete"):
        bank_pattern(Layout((32, M), (M, 1)), Layout(32, 1), "ld.shared.b32", element_bits=32)
    with pytest.raises(LayoutError, match="shared"):
        bank_pattern(Layout(32, 1), Layout(32, 1), "ld.global.b32", element_bits=32)


def test_cli_show_and_svg(tmp_path, capsys):
    from layoutproof.cli import main

    out = tmp_path / "banks.svg"
    rc = main(
        ["analyze", "banks", "(32,32):(32,1)", "32:1", "--instr", "ld.shared.b32", "--bits", "32"]
        + ["--show", "--svg", str(out)]
    )
    text = capsys.readouterr().out
    assert rc == 1 and "phase 0 (lanes 0-31): 32 wavefronts, 32-way on bank 0" in text
    assert out.read_text().count('class="cell"') == 32
