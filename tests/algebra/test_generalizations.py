"""PyCuTe's generalizations of the algebra, each checked against its post-condition by
brute force and, where CuTe C++ has the operation, against the C++ compiled from the
nvidia-cutlass wheel's headers:

* evaluating a layout at a coordinate (ArithTuple) value, ``A(B(i))``;
* composition whose right operand has general coordinate strides (``3:(0,0,4,2)``);
* ``evenly_divides`` of a shape by a Tile of layouts (C++'s int_tuple tests);
* ``coprofile`` of coordinate layouts;
* F2-valued strides as leaves of ordinary layouts.
"""

from __future__ import annotations

import itertools
import random
import subprocess

import pytest
from oracles import cutlass_include, cxx_compiler

import layoutproof as lp
from layoutproof import (
    ArithTuple,
    ComposedLayout,
    E,
    InadmissibleError,
    Layout,
    OutOfDomainError,
    Swizzle,
    coalesce,
    complement,
    composition,
    coprofile,
    evenly_divides,
    left_inverse,
    logical_divide,
    make_identity_layout,
    right_inverse,
)
from layoutproof.errors import MalformedLayoutError
from layoutproof.f2 import F2, f2_view, to_f2
from layoutproof.layout import fmt_htuple


def check_composition(A, B):
    """R = A o B satisfies the post-condition at every coordinate of B (A's own last mode
    extends without bound, as in C++ and PyCuTe); returns R."""
    R = composition(A, B)
    assert lp.compatible(B, R)
    for i in range(B.size):
        assert R(i) == A(B(i), extend=True), (str(A), str(B), str(R), i)
    return R


# ----------------------------------------------------------------------------- A at a coordinate
def test_layout_evaluates_at_an_arith_tuple():
    A = Layout((4, (4, 3), 1), (3, (12, 1), 0))
    assert A(ArithTuple(1, (2, 1))) == 3 + 24 + 1
    assert A(ArithTuple(1)) == 3  # missing trailing entries are 0
    assert A(E(1, 1) * 2) == 2
    assert A(ArithTuple(0, 5)) == A(0, 5, 0) == 12 + 1  # an integer against a tuple mode splits
    assert Layout(12, 2)(5 * E(0)) == 10  # (x,) against an integer mode is x
    with pytest.raises(OutOfDomainError):
        Layout((4, 5))(ArithTuple(1, 2, 3))  # more modes than the shape
    with pytest.raises(OutOfDomainError):
        Layout(12, 2)(E(1))  # mode 1 of an integer mode
    with pytest.raises(OutOfDomainError):
        Layout((4, 5))(7 * E(0))  # outside the domain
    assert Layout((4, 5), (5, 1))(7 * E(0), extend=True) == 35  # C++'s unbounded crd2idx


def test_identity_layout_values_are_coordinates_of_the_layout():
    A = Layout((4, (2, 3)), (6, (3, 1)))
    ident = make_identity_layout(A.shape)
    for i in range(A.size):
        assert A(ident(i)) == A(i)
    assert make_identity_layout((4, 5))(7, extend=True) == (3, 1)


# ----------------------------------------------------------------------------- composition, coordinates
PYCUTE_COORD_CASES = [
    # LHS coordinates (NVlabs/CuTe test_composition.py, test_composition_coords)
    (Layout(12, E(0)), Layout((4, 3))),
    (Layout(12, 2 * E(1)), Layout((4, 3))),
    (Layout(12, E(0)), Layout((4, 3), (3, 1))),
    (Layout(12, E(1, 1)), Layout((2, 3), (2, 4))),
    (Layout((4, 3), (E(0), E(1))), Layout(6, 2)),
    (Layout((4, 3), (E(1), E(0))), Layout((6, 2), (2, 1))),
    (Layout((4, 3), (6 * E(1), 2 * E(1))), Layout((6, 2), (2, 1))),
    (Layout((4, 4), (ArithTuple(1, 1), ArithTuple(3, 1))), Layout((4, 2), (2, 1))),
    (Layout((4, 6, 8), (E(0), E(1), E(2))), Layout((2, 2, 2))),
    # RHS coordinates
    (Layout((4, 4), (4, 1)), Layout((4, 4), (E(0), E(1)))),
    (Layout((4, 4), (4, 1)), Layout((4, 4), (E(1), E(0)))),
    (Layout((4, 5), (5, 1)), Layout(30, E(0))),
    (Layout((4, 5), (5, 1)), Layout(12, E(1))),
    (Layout((4, (4, 3), 1), (3, (12, 1), 0)), Layout(12, E(1))),
    (Layout((4, (4, 3), 1), (3, (12, 1), 0)), Layout(12, E(1, 0))),
    (Layout((4, (2, 3)), (6, (3, 1))), Layout((2, 4), (E(1, 1), E(0)))),
    (Layout((4, 6, 8)), Layout((2, 2, 2), (E(2), E(0), E(1)))),
    (Layout((4, 6, 8), (E(0), E(1), E(2))), Layout((2, 2, 2), (E(0), E(1), E(2)))),
    (Layout((3, 5, 7, 11), (E(0), E(1), E(2), E(3))), Layout(3, 4 * E(2))),
    # general coordinate strides (one leaf walks several modes of A)
    (Layout((3, 5, 7, 11), (E(0), E(1), E(2), E(3))), Layout(3, 4 * E(2) + 2 * E(3))),
    (Layout((3, 5, 7, 11), (E(0), E(1), E(2), E(3))), Layout(3, ArithTuple(1, 0, 0, 1))),
    (Layout((4, 4), (3, 42)), Layout(4, ArithTuple(1, 1))),  # the diagonal
    (Layout((4, 8), (3, 42)), Layout(4, ArithTuple(1, 2))),  # a skew diagonal
]


@pytest.mark.parametrize("A,B", PYCUTE_COORD_CASES, ids=lambda x: str(x))
def test_pycute_coordinate_compositions(A, B):
    check_composition(A, B)


def test_general_coordinate_strides_results():
    ident4 = make_identity_layout((3, 5, 7, 11))
    assert str(composition(ident4, Layout(3, ArithTuple(0, 0, 4, 2)))) == "3:(0,0,4,2)"
    assert str(composition(Layout((4, 4), (3, 42)), Layout(4, ArithTuple(1, 1)))) == "4:45"
    assert str(composition(Layout((4, 8), (3, 42)), Layout(4, ArithTuple(1, 2)))) == "4:87"
    # the transpose-and-diagonal of a row-major tile, two leaves at once
    A = Layout((8, 8), (8, 1))
    R = check_composition(A, Layout((2, 4), (ArithTuple(1, 1), ArithTuple(0, 2))))
    assert str(R) == "(2,4):(9,2)"


def test_general_strides_take_the_common_refinement():
    # mode 0 of A is (2,3):(1,10) and mode 1 is (3,2):(100,1000) after composing with
    # 6:1: their prefix products {1,2} and {1,3} are no divisor chain, and the sum is no
    # layout -- refused with a coordinate where no layout agrees
    A = Layout(((2, 3), (3, 2)), ((1, 10), (100, 1000)))
    with pytest.raises(InadmissibleError) as ei:
        composition(A, Layout(6, ArithTuple(1, 1)))
    assert ei.value.condition == "basis strides: the sum over modes is a layout"
    w = ei.value.witness
    assert w is not None and 0 <= w < 6
    # a refinement that exists: (2,6):(1,10) and (4,3):(100,1000) share 1 | 2 | 4 | 12
    A = Layout(((2, 6), (4, 3)), ((1, 10), (100, 1000)))
    R = check_composition(A, Layout(12, ArithTuple(1, 1)))
    assert lp.flatten(R.shape) == (2, 2, 3)


def test_general_strides_refusals():
    A = Layout((4, (2, 2)), (2, (1, 8)))
    with pytest.raises(InadmissibleError) as ei:  # mode 1 and its own sub-mode (1, 0)
        composition(A, Layout((2, 2), (E(1), E(1, 0))))
    assert ei.value.condition == "basis strides: one mode per leaf"
    with pytest.raises(InadmissibleError) as ei:  # an integer beside a coordinate
        composition(A, Layout((2, 2), (1, E(0))))
    assert ei.value.condition == "basis strides: one codomain"
    assert ei.value.witness == 1
    # two leaves whose sums carry inside A's mode 0 = (2,2):(1,100): disjointness
    with pytest.raises(InadmissibleError) as ei:
        composition(Layout(((2, 2), 4), ((1, 100), 7)), Layout((2, 2), (ArithTuple(1, 1), E(0))))
    assert ei.value.witness is not None


def _rand_shape(rng, rank, max_leaf=4):
    out = []
    for _ in range(rank):
        if rng.random() < 0.3:
            out.append(tuple(rng.randint(1, max_leaf) for _ in range(2)))
        else:
            out.append(rng.randint(1, max_leaf + 2))
    return tuple(out)


def _rand_int_layout(rng, rank):
    s = _rand_shape(rng, rank)
    return Layout(s) if rng.random() < 0.3 else Layout(s, _rand_strides(rng, s))


def _rand_strides(rng, s):
    if isinstance(s, tuple):
        return tuple(_rand_strides(rng, e) for e in s)
    return rng.choice([0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32])


def _rand_coord_stride(rng, A):
    """A coordinate stride with up to rank(A) entries, some nested into A's sub-modes."""
    items = []
    for m in A.shape:
        v = rng.choice([0, 0, 1, 1, 2, 3])
        if isinstance(m, tuple) and v and rng.random() < 0.5:
            j = rng.randrange(len(m))
            items.append(tuple(v if t == j else 0 for t in range(len(m))))
        else:
            items.append(v)
    return ArithTuple(tuple(items) + (0,))  # a trailing 0 keeps a 1-tuple of a tuple nested


def test_random_general_coordinate_compositions_hold_their_post_condition():
    """Brute force over random A and random B with general coordinate strides: either a
    layout with R(i) == A(B(i)) at every i, or a refusal naming its condition."""
    rng = random.Random(29)
    done = refused = 0
    for _ in range(400):
        A = _rand_int_layout(rng, rng.randint(1, 3))
        nb = rng.randint(1, 2)
        B = Layout(
            tuple(rng.randint(1, 4) for _ in range(nb)),
            tuple(_rand_coord_stride(rng, A) for _ in range(nb)),
        )
        try:
            B(B.size - 1)
        except lp.LayoutError:
            continue  # B itself adds an integer to a sub-coordinate: no function to compose
        try:
            check_composition(A, B)
            done += 1
        except InadmissibleError as e:
            assert e.condition
            refused += 1
    assert done > 250, (done, refused)


# ----------------------------------------------------------------------------- evenly_divides
def test_evenly_divides_cute_int_tuple_cases():
    """CuTe C++'s test/unit/cute/core/int_tuple.cpp, TEST(CuTe_core, Divides)."""
    a, b, c = 16, 12, 8
    a0, a1, a2, a3 = (16,), (2, 8), ((2, 8),), ((2, (4, 2)),)
    true = [(a, a), (b, b), (c, c), (a, c), (a0, a0), (a, a0), (a0, a), (a0, c)]
    true += [(a1, a1), (a2, a2), (a2, a0), (a3, a3), (a3, a0), (a3, a2)]
    false = [(a, b), (c, a), (c, a0), (b, a0), (a0, b), (a, a1), (a0, a1), (a1, a0)]
    false += [(a1, (2, (2, 4))), (a, a2), (c, a2), (a0, a2), (a, a3), (c, a3), (a0, a3), (a2, a3)]
    for x, y in true:
        assert evenly_divides(x, y) is True, (x, y)
    for x, y in false:
        assert evenly_divides(x, y) is False, (x, y)
    assert evenly_divides((32, 64), 128) is True
    assert evenly_divides((32, 64), (Layout(8, 2), 32)) is True
    assert evenly_divides((32, 64), (Layout(8, 3), 32)) is False


def test_evenly_divides_true_means_whole_tiles():
    """C++'s post-condition: when true, size(logical_divide(make_layout(a), b)) == size(a);
    brute force over small shapes and layout tilers."""
    rng = random.Random(7)
    hits = 0
    for _ in range(300):
        a = _rand_shape(rng, rng.randint(1, 2), 6)
        tiler = Layout(rng.randint(1, 6), rng.randint(0, 4))
        try:
            answer = evenly_divides(a, tiler)
        except InadmissibleError:
            continue
        if answer:
            hits += 1
            assert logical_divide(Layout(a), tiler).size == Layout(a).size
    assert hits > 20


# ----------------------------------------------------------------------------- coprofile
@pytest.mark.parametrize(
    "L,expected",
    [
        (Layout((4, (2, 2)), (2, (1, 8))), 0),
        (make_identity_layout((4, (2, 3))), (0, (0, 0))),
        (Layout((3, 4), (E(1), E(0, 2))), ((0, 0, 0), 0)),  # C++ prints ((_0,_0,_0),_0)
        (Layout(3, ArithTuple(1, 0, 0, 1)), (0, 0, 0, 0)),
    ],
)
def test_coprofile(L, expected):
    assert coprofile(L) == expected
    assert lp.congruent(coprofile(L), _plain(L(L.size - 1)))


def _plain(x):
    return x.to_tuple() if hasattr(x, "to_tuple") else x


# ----------------------------------------------------------------------------- C++ oracle
@pytest.fixture(scope="module")
def cute_lines(tmp_path_factory):
    """Every C++ case of this file compiled into one program (one compile, ~10 s): the
    output lines of each case set, by its tag."""
    inc = cutlass_include()
    if inc is None:
        pytest.skip("no CuTe headers (the nvidia-cutlass wheel ships them)")
    cc = cxx_compiler(inc)
    if cc is None:
        pytest.skip("no C++ compiler (g++ with CUDA's CCCL headers, or nvcc)")
    d = tmp_path_factory.mktemp("cute_gen")
    body = []
    for tag, (cases_fn, body_fn) in CPP_SETS.items():
        body += body_fn(tag, cases_fn())
    # one small function per case: g++ compiles many small bodies faster than one large one
    funcs = [f"static void case_{n}() {{\n{line}\n}}" for n, line in enumerate(body)]
    calls = "".join(f"  case_{n}();\n" for n in range(len(body)))
    src = d / "generalizations.cpp"
    src.write_text(
        "#include <cute/layout.hpp>\n#include <cstdio>\nusing namespace cute;\n"
        + "\n".join(funcs)
        + "\nint main() {\n"
        + calls
        + "  return 0;\n}\n"
    )
    exe = d / "generalizations"
    r = subprocess.run([*cc, str(src), "-o", str(exe)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    return {tag: [ln for ln in lines if ln.startswith(tag + " ")] for tag in CPP_SETS}


def _cpp(t, static, kind):
    """A shape/stride/tuple in C++: static leaves as Int<n>{}, coordinate leaves as
    v*E<i...>{}."""
    if isinstance(t, tuple):
        return f"make_{kind}(" + ",".join(_cpp(e, static, kind) for e in t) + ")"
    if isinstance(t, ArithTuple):
        v, path = t.value, t.path  # a ScaledBasis (C++ has no general ArithTuple stride)
        e = "E<" + ",".join(map(str, path)) + ">{}"
        return f"(Int<{v}>{{}}*{e})" if static else f"({v}*{e})"
    return f"Int<{t}>{{}}" if static else str(t)


def _cpp_layout(L, static=False):
    return f"make_layout({_cpp(L.shape, static, 'shape')}, {_cpp(L.stride, static, 'stride')})"


def _basis_comp_cases():
    rng = random.Random(2929)
    cases = []
    while len(cases) < 120:
        A = _rand_int_layout(rng, rng.randint(1, 3))
        nb = rng.randint(1, 2)
        strides = []
        for _ in range(nb):
            i = rng.randrange(A.rank)
            m = A.shape[i] if A.rank > 1 else A.shape
            path = (i,) if A.rank > 1 else (0,)
            if isinstance(m, tuple) and rng.random() < 0.5:
                path += (rng.randrange(len(m)),)
            strides.append(rng.choice([1, 1, 2, 3]) * E(*path))
        paths = [tuple(d.path) for d in strides]
        if any(p != q and q[: len(p)] == p for p in paths for q in paths):
            continue  # a mode and its own sub-mode: C++ does not compile it (tested above)
        B = Layout(tuple(rng.randint(1, 4) for _ in range(nb)), tuple(strides))
        cases.append((A, B))
    return cases


def _basis_comp_body(tag, cases):
    return [
        f"  {{ auto A = {_cpp_layout(A)}; auto B = {_cpp_layout(B)}; auto R = composition(A, B);"
        f' printf("{tag} {k}"); for (int i = 0; i < int(size(B)); ++i) printf(" %d", int(R(i)));'
        ' printf("\\n"); }'
        for k, (A, B) in enumerate(cases)
    ]


@pytest.mark.slow
def test_basis_compositions_against_cute_cpp(cute_lines):
    """Random A o B with v@i strides in B (the form C++ has): C++'s values against ours,
    adjudicated by the post-condition."""
    cases = _basis_comp_cases()
    lines = cute_lines["BC"]
    assert len(lines) == len(cases)
    agree = refused_right = 0
    for line, (A, B) in zip(lines, cases):
        cpp_vals = [int(x) for x in line.split()[2:]]
        truth = [A(B(i), extend=True) for i in range(B.size)]
        try:
            R = composition(A, B)
        except InadmissibleError:
            assert cpp_vals != truth, f"refused, but C++'s answer holds: {A} o {B}"
            refused_right += 1
            continue
        assert [R(i) for i in range(B.size)] == truth
        if cpp_vals == truth:
            agree += 1
    assert agree > 60, (agree, refused_right)


def _evenly_cases():
    rng = random.Random(4242)
    cases = []
    for _ in range(80):
        a = _rand_shape(rng, rng.randint(1, 2), 8)
        r = rng.random()
        if r < 0.4:
            t = Layout(rng.randint(1, 8), rng.randint(0, 4))
        elif r < 0.7:
            t = tuple(
                Layout(rng.randint(1, 4), rng.randint(1, 3)) if rng.random() < 0.6 else rng.randint(1, 8)
                for _ in range(rng.randint(1, len(a)))
            )
        else:
            t = Layout((rng.randint(1, 4), rng.randint(1, 4)), (rng.randint(0, 3), rng.randint(0, 12)))
            modes = sorted((d, n) for n, d in zip(t.shape, t.stride) if n > 1 and d > 0)
            if any(d2 < d1 * n1 for (d1, n1), (d2, _n2) in zip(modes, modes[1:])):
                continue  # C++'s static complement asserts injectivity: does not compile
        cases.append((a, t))
    return cases


def _evenly_body(tag, cases):
    def tiler_cpp(t):
        if isinstance(t, Layout):
            # rank 1, size > 1, stride > 0: dynamic (C++ allows a dynamic rank-1 complement).
            # Static otherwise: C++'s filter drops size-1 and stride-0 modes only when it
            # sees them statically (a dynamic 1:3 gives 6 // 3 * 3 != 4 for evenly_divides(4, 1:3))
            return _cpp_layout(t, static=not (t.rank == 1 and t.size > 1 and t.stride != 0))
        if isinstance(t, tuple):
            return "make_tile(" + ",".join(tiler_cpp(e) for e in t) + ")"
        return f"Int<{t}>{{}}"

    return [
        f'  printf("{tag} {k} "); print(evenly_divides({_cpp(a, True, "shape")}, {tiler_cpp(t)}));'
        ' printf("\\n");'
        for k, (a, t) in enumerate(cases)
    ]


@pytest.mark.slow
def test_evenly_divides_against_cute_cpp(cute_lines):
    cases = _evenly_cases()
    lines = cute_lines["EV"]
    assert len(lines) == len(cases)
    for line, (a, t) in zip(lines, cases):
        want = line.split()[2] in ("_1", "1", "true")
        assert evenly_divides(a, t) is want, (a, str(t), line)


def _like(s, it):
    return tuple(_like(e, it) for e in s) if isinstance(s, tuple) else next(it)


def _coprofile_cases():
    rng = random.Random(77)
    cases = []
    for _ in range(40):
        s = _rand_shape(rng, rng.randint(1, 3))
        flat = lp.flatten(s)
        strides = []
        for _leaf in flat:
            depth = rng.randint(1, 2)
            strides.append(rng.randint(0, 3) * E(*[rng.randrange(3) for _ in range(depth)]))
        it = iter(strides)
        d = _like(s, it)
        try:
            L = Layout(s, d)
            coprofile(L)
        except lp.LayoutError:
            continue  # mixes an integer and a sub-coordinate in one place
        cases.append(L)
    return cases


def _coprofile_body(tag, cases):
    return [
        f'  printf("{tag} {k} "); print(coprofile({_cpp_layout(L, static=True)})); printf("\\n");'
        for k, L in enumerate(cases)
    ]


@pytest.mark.slow
def test_coprofile_against_cute_cpp(cute_lines):
    cases = _coprofile_cases()
    lines = cute_lines["CP"]
    assert len(lines) == len(cases) > 10
    for line, L in zip(lines, cases):
        text = line.split(" ", 2)[2].replace("_", "")
        assert fmt_htuple(coprofile(L)) == text, (str(L), line)


CPP_SETS = {
    "BC": (_basis_comp_cases, _basis_comp_body),
    "EV": (_evenly_cases, _evenly_body),
    "CP": (_coprofile_cases, _coprofile_body),
}


# ----------------------------------------------------------------------------- F2 strides in layouts


def bits(x):
    """A value of a layout with F2 strides as its bit pattern."""
    return x.val if isinstance(x, F2) else int(x)


def _f2(shape, strides):
    conv = lambda t: tuple(conv(e) for e in t) if isinstance(t, tuple) else F2(t)  # noqa: E731
    return Layout(shape, conv(strides))


@pytest.mark.parametrize(
    "shape,strides,expected",
    [  # NVlabs/CuTe test_coalesce.py, test_coalesce_f2
        ((2, 2, 2, 2), (1, 2, 4, 8), "16:F1"),
        ((4, 4), (1, 4), "16:F1"),
        ((4, 4), (3, 12), "16:F3"),
        ((3, 3), (1, 3), "(3,3):(F1,F3)"),  # 3 is no power of two: no merge
        ((3, 4), (1, 3), "(3,4):(F1,F3)"),
        ((5, 3), (1, 5), "(5,3):(F1,F5)"),
        ((6, 5), (1, 6), "(6,5):(F1,F6)"),
        ((3, 4), (2, 6), "(3,4):(F2,F6)"),
        ((2, 2, 3), (1, 2, 4), "12:F1"),
        ((3, 2, 2), (1, 3, 6), "(3,4):(F1,F3)"),
        ((2, 1, 2), (1, 7, 2), "4:F1"),
        ((3, 1, 3), (1, 7, 3), "(3,3):(F1,F3)"),
        (((2, 2), (3, 2)), ((1, 2), (4, 12)), None),
        ((1, 1), (5, 7), "1:0"),
    ],
)
def test_coalesce_f2_pycute_cases(shape, strides, expected):
    L = _f2(shape, strides)
    R = coalesce(L)
    if expected is not None:
        assert str(R) == expected
    assert R.size == L.size and lp.depth(R) <= 1
    assert all(R(i) == L(i) for i in range(L.size))
    assert coalesce(R) == R


def test_f2_layout_basics():
    L = _f2((8, 8), (1, 9))
    assert L(1, 1) == F2(8) and L(9) == F2(8)
    assert L.cosize == 64 and L.eval_all().tolist() == f2_view(L).eval_all().tolist()
    assert Layout(8, F2(1)) != Layout(8, 1)  # only the zeros of the two algebras agree
    assert str(Layout((4, 2), (F2(1), 0))) == "(4,2):(F1,0)"
    with pytest.raises(MalformedLayoutError):
        Layout((2, 2), (F2(1), 3))  # XOR beside integer addition: no function
    with pytest.raises(MalformedLayoutError):
        Layout((2, 2), (F2(1), E(1)))
    with pytest.raises(MalformedLayoutError):
        ArithTuple(F2(1), 0)  # an F2-valued coordinate axis is not supported
    with pytest.raises(InadmissibleError) as ei:
        complement(Layout(8, F2(1)))
    assert ei.value.condition == "integer strides"
    with pytest.raises(InadmissibleError):
        lp.logical_product(Layout(8, F2(1)), 2)


def _rand_f2(rng, pow2=True):
    rank = rng.randint(1, 3)
    shape = tuple(
        rng.choice([1, 2, 4, 8]) if pow2 or rng.random() < 0.7 else rng.choice([3, 5, 6]) for _ in range(rank)
    )
    strides = tuple(rng.choice([0, 1, 2, 3, 4, 5, 8, 9, 12, 16, 17, 32]) for _ in range(rank))
    return _f2(shape, strides)


def test_f2_random_coalesce_and_inverses_hold_their_post_conditions():
    rng = random.Random(1729)
    for _ in range(300):
        L = _rand_f2(rng, pow2=rng.random() < 0.7)
        vals = [bits(L(i)) for i in range(L.size)]
        R = coalesce(L)
        assert [bits(R(i)) for i in range(L.size)] == vals and lp.depth(R) <= 1
        RI = right_inverse(L)
        for i in range(RI.size):
            assert vals[bits(RI(i))] == i
        image = set(vals)
        m = 0
        while m in image:
            m += 1
        pow2 = all(s & (s - 1) == 0 for s in lp.flatten(L.shape))
        if pow2:
            assert RI.size == m  # the largest: the image is a subspace
            LI = left_inverse(L)
            assert LI.size >= L.cosize
            for i in range(L.size):
                j = bits(LI(vals[i]))
                assert vals[j] == vals[i]
                if len(image) == L.size:
                    assert j == i
        else:
            assert RI.size <= m


def test_f2_inverses_pycute_cases():
    # NVlabs/CuTe test_inverse_right.py: a swizzle is its own right inverse; the
    # transposed one is not
    assert right_inverse(_f2((8, 8), (1, 9))) == _f2((8, 8), (1, 9))
    assert right_inverse(_f2((8, 8), (9, 1))) == _f2((8, 8), (8, 9))
    assert right_inverse(_f2((4, (4, 3)), (1, (5, 16)))).size == 48
    # PyCuTe's chain walk stops at mode 0 of (8,8):(F1,F13) (size 8); the map is a
    # bijection of [0, 64), and so is its inverse here
    R = right_inverse(_f2((8, 8), (1, 13)))
    assert R.size == 64
    # left inverses PyCuTe refuses (a gap between strides that is no integer): returned
    for L in [Layout(8, F2(2)), _f2((8, 8), (1, 9)), _f2((4, 4), (1, 5))]:
        LI = left_inverse(L)
        assert all(bits(LI(bits(L(i)))) == i for i in range(L.size))
    with pytest.raises(InadmissibleError) as ei:
        left_inverse(_f2((4, 3), (1, 4)))
    assert ei.value.condition == "F2 inverse: power-of-two extents"


def test_f2_inverse_agrees_with_the_swizzle_form():
    """The F2 form of a swizzled layout and the swizzled layout itself invert to the same
    function where both answer (C++'s right_inverse of Sw o 0 o B is the swizzle form)."""
    for C in [
        ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1))),
        ComposedLayout(Swizzle(2, 0, 2), 0, Layout((4, 4), (4, 1))),
        ComposedLayout(Swizzle(1, 1, 2), 0, Layout(16, 1)),
    ]:
        F = to_f2(C)
        L = Layout(F.shape, F.stride)
        assert all(bits(L(i)) == C(i) for i in range(C.size))
        R1, R2 = right_inverse(L), right_inverse(C)
        assert R1.size >= R2.size
        assert all(bits(R1(i)) == R2(i) for i in range(R2.size))


def test_f2_compositions_hold_their_post_condition_or_name_a_witness():
    rng = random.Random(31)
    done = refused = 0
    for _ in range(300):
        if rng.random() < 0.5:
            A = _rand_f2(rng)
            B = Layout(tuple(rng.choice([1, 2, 4, 3]) for _ in range(rng.randint(1, 2))))
            B = Layout(B.shape, tuple(rng.choice([0, 1, 2, 4, 8, 3]) for _ in lp.flatten(B.shape)))
        else:
            A = Layout((8, 8), rng.choice([(8, 1), (1, 8), (1, 16)]))
            B = _rand_f2(rng)
        try:
            R = composition(A, B)
        except InadmissibleError as e:
            refused += 1
            assert e.condition and (e.witness is None or 0 <= e.witness < B.size)
            continue
        done += 1
        assert lp.compatible(B, R)
        for c in range(B.size):
            b = B(c)
            assert bits(R(c)) == bits(A(bits(b) if isinstance(b, F2) else b, extend=True))
    assert done > 150, (done, refused)


def test_f2_composition_pycute_style_cases():
    A = _f2((8, 8), (1, 9))
    assert str(composition(A, Layout((4, 4), (1, 8)))) == "(4,4):(F1,F9)"
    assert str(composition(Layout((8, 8), (8, 1)), _f2((8, 8), (1, 9)))) == "(8,8):(F8,F9)"
    with pytest.raises(InadmissibleError) as ei:  # 3 + 3 carries; 3 XOR 3 does not
        composition(A, Layout(6, 3))
    assert ei.value.condition == "F2 composition: XOR-linear" and ei.value.witness is not None
    # the refusal is confirmed: no single F2 stride reproduces A at B's coordinates
    vals = [bits(A(3 * c)) for c in range(6)]
    assert all(vals != [bits(F2(d) * c) for c in range(6)] for d in range(64))
    # divides keep working where the tile's complement is an integer layout
    D = logical_divide(Layout(64, F2(1)), 8)
    assert all(bits(D(i)) == i for i in range(64))


# ----------------------------------------------------------------------------- inverses, coordinates
def _codomain_coords(R, prof):
    """Natural coordinates of the codomain that R's domain covers: one integer per leaf
    of the coprofile, below the size of R's mode there."""

    def walk(p, s):
        if isinstance(p, tuple):
            return list(itertools.product(*[walk(pe, se) for pe, se in zip(p, s)]))
        return list(range(Layout(s).size))

    return walk(prof, R.shape) if isinstance(prof, tuple) else list(range(R.size))


COORD_INVERSE_CASES = [  # NVlabs/CuTe test_inverse_right.py / test_inverse_left.py
    Layout((4, 5), (E(0), E(1))),
    Layout((4, 5), (E(1), E(0))),
    Layout((4, 5), (E(1), E(4, 1))),
    Layout((4, 5), (2 * E(0), 2 * E(1))),
    Layout((3, (2, 2)), (34 * E(0), (2 * E(0), 2 * E(1)))),
    Layout(((2, 2, 2), (2, 2, 2)), ((E(0), 2 * E(1), 4 * E(0)), (E(1), 2 * E(0), 4 * E(1)))),  # SM70 C
    Layout(((2, 2, 2), (2, 2, 2)), ((E(0), 2 * E(1), 5 * E(0)), (E(1), 2 * E(0), 5 * E(1)))),
    Layout(((2, 2, 2), (2, 2, 2)), ((E(0), 2 * E(1), 6 * E(0)), (E(1), 2 * E(0), 4 * E(1)))),
    composition(make_identity_layout((8, 4)), Layout(((4, 2), 4), ((8, 4), 1))),  # SM70 A
    composition(make_identity_layout((16, 8)), Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))),  # SM80
    Layout((4, 4), (ArithTuple(1, 1), E(1))),
]


@pytest.mark.parametrize("L", COORD_INVERSE_CASES, ids=str)
def test_coordinate_inverses_hold_their_post_conditions(L):
    R = right_inverse(L)
    assert lp.weakly_congruent(coprofile(L), R.shape)
    for c in _codomain_coords(R, coprofile(L)):
        assert L(R(c)) == c
    try:
        Li = left_inverse(L)
    except InadmissibleError as e:  # PyCuTe refuses these too (no ordered chain)
        assert e.condition in ("basis strides: one axis per leaf", "basis strides: each axis inverted alone")
        return
    assert lp.weakly_congruent(coprofile(L), Li.shape)
    injective = len({_plain(L(i)) for i in range(L.size)}) == L.size
    for i in range(L.size):
        j = Li(L(i))
        assert L(j) == L(i)
        if injective:
            assert j == i


def test_coordinate_inverses_of_the_identity_layout():
    ident = make_identity_layout((4, (2, 3)))
    assert str(right_inverse(ident)) == "(4,(2,3)):(1,(4,8))"
    assert right_inverse(ident) == left_inverse(ident)
    assert str(right_inverse(Layout((4, 5), (E(1), E(0))))) == "(5,4):(4,1)"  # the transpose


def test_coprofile_of_f2_layouts_is_one_axis():
    assert coprofile(Layout((8, 8), (F2(1), F2(9)))) == 0
    assert lp.weakly_congruent(coprofile(Layout(8, F2(2))), right_inverse(Layout(8, F2(2))).shape)


def test_analysis_operations_refuse_f2_strides():
    L = Layout((8, 8), (F2(1), F2(9)))
    for f in (lambda: lp.upcast(L, 2), lambda: lp.downcast(L, 2), lambda: lp.max_common_vector(L, L)):
        with pytest.raises(InadmissibleError) as ei:
            f()
        assert ei.value.condition == "integer strides"


def test_f2_strides_need_integer_extents():
    sympy = pytest.importorskip("sympy")
    n = sympy.Symbol("N", positive=True, integer=True)
    with pytest.raises(MalformedLayoutError):
        Layout((n, 2), (F2(1), F2(2)))


# ----------------------------------------------------------------------------- planted bugs
def test_a_planted_bug_in_the_sum_over_modes_is_caught(monkeypatch):
    import layoutproof.ops as ops

    real = ops._sum_parts

    def off_by_one(n, parts, unit, B):
        s, d = real(n, parts, unit, B)
        return s, (d + 1 if isinstance(d, int) else d)

    monkeypatch.setattr(ops, "_sum_parts", off_by_one)
    with pytest.raises(AssertionError):
        check_composition(Layout((4, 8), (3, 42)), Layout(4, ArithTuple(1, 2)))


def test_a_planted_bug_in_the_f2_check_is_caught(monkeypatch):
    import layoutproof.f2 as f2

    monkeypatch.setattr(f2, "_verify_composition", lambda A, B, R: None)  # no check
    R = composition(Layout((8, 8), (F2(1), F2(9))), Layout(6, 3))  # returns the bad candidate
    assert any(
        bits(R(c)) != bits(Layout((8, 8), (F2(1), F2(9)))(3 * c)) for c in range(6)
    )  # ... which the post-condition refutes: the check is what makes the refusal sound
