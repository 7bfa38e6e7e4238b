"""gpu.analysis.wgmma_operand: a layout is readable by wgmma exactly when some descriptor
mode reads every element where the layout puts it."""

import pytest

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof.errors import LayoutError
from layoutproof.gpu.analysis.wgmma_operand import wgmma_operand
from layoutproof.gpu.isa.gmma import SWIZZLES, decode_descriptor, make_descriptor, smem_atom, tile_to_shape


@pytest.mark.parametrize("swz", SWIZZLES)
@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("order", [None, (1, 0)])
def test_canonical_stages_are_proved_with_the_generators_descriptors(swz, major, order):
    stage = tile_to_shape(smem_atom(major, swz), (128, 64), order)
    r = wgmma_operand(stage.layout, element_bits=16, mn_block=64)
    assert r.status == "proved" and r.mode == f"{major}-major {swz}"
    assert len(r.descriptors) == 2 * 4
    want = decode_descriptor(make_descriptor(stage, 0, mn_offset=64, k_offset=16))
    got = next(d for d in r.descriptors if (d["mn_offset"], d["k_offset"]) == (64, 16))
    assert all(got[k] == v for k, v in want.items())


@pytest.mark.parametrize("bits", [8, 32])
def test_8_and_32_bit_are_k_major_only(bits):
    k = tile_to_shape(smem_atom("K", "SW128", bits), (64, 2048 // bits)).layout
    assert wgmma_operand(k, element_bits=bits).status == "proved"
    mn = tile_to_shape(smem_atom("MN", "SW64", bits), (64, 64)).layout
    r = wgmma_operand(mn, element_bits=bits)
    assert r.status == "refuted" and "must be K-major" in r.witness


def test_padded_rows_are_not_canonical():
    r = wgmma_operand(Layout((64, 64), (72, 1)), element_bits=16)
    assert r.status == "refuted" and r.reason.startswith("not a canonical wgmma layout")
    assert len(r.tried) == 8


def test_a_wrong_swizzle_and_swapped_rows_are_caught():
    inner = tile_to_shape(smem_atom("K", "INTER"), (64, 64)).layout
    wrong = composition(Swizzle(2, 3, 3), inner)  # the SW64 swizzle on an interleaved tile
    assert wgmma_operand(wrong, element_bits=16).status == "refuted"
    good = tile_to_shape(smem_atom("K", "SW128"), (64, 64)).layout
    assert isinstance(good, ComposedLayout)
    # the same function written another way is the same operand
    same = ComposedLayout(good.layout_a, 0, composition(good.layout_b, Layout((64, 64), (1, 64))))
    assert wgmma_operand(same, element_bits=16).status == "proved"
    # rows exchanged pairwise: still a bijection onto the stage, not a canonical layout
    perm = Layout(((2, 32), 64), ((64, 1), 2 * 64))
    moved = ComposedLayout(good.layout_a, 0, composition(good.layout_b, perm))
    r = wgmma_operand(moved, element_bits=16)
    assert r.status == "refuted" and "element (" in r.witness


@pytest.mark.parametrize(
    "layout, bits, kw, match",
    [
        (Layout((64, 64), (64, 1)), 12, {}, "8-, 16- or 32-bit"),
        (Layout((64, 24), (24, 1)), 16, {}, "multiple of one wgmma k-step"),
        (Layout((64, 64), (64, 1)), 16, {"mn_block": 48}, "does not divide"),
        (Layout((64, 64), (64, 1)), 16, {"base": 8}, "multiple of 16 bytes"),
        (Layout(64, 1), 16, {}, "rank-2"),
        (Layout((64, 64), (64, 1)), 16, {"major": "T"}, "major must be"),
    ],
)
def test_bad_input_is_a_layout_error(layout, bits, kw, match):
    with pytest.raises(LayoutError, match=match):
        wgmma_operand(layout, element_bits=bits, **kw)


def test_symbols_are_refused():
    from layoutproof import symbols

    K = symbols("K")
    with pytest.raises(LayoutError, match="numbers"):
        wgmma_operand(Layout((64, K), (K, 1)), element_bits=16)


def test_cli(capsys):
    from layoutproof.cli import main

    assert main(["analyze", "wgmma", "Sw<3,3,3> o (64,64):(64,1)", "--bits", "16", "--mn-block", "64"]) == 0
    out = capsys.readouterr().out
    assert "K-major SW128" in out and "LBO 16 SBO 1024 SW128" in out
    assert main(["analyze", "wgmma", "(64,64):(72,1)", "--bits", "16", "--json"]) == 1
    assert '"status": "refuted"' in capsys.readouterr().out
