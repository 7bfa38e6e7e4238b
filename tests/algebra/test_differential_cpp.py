"""Differential tests: layoutproof against CuTe C++ itself (the headers of the
``nvidia-cutlass`` wheel, compiled with g++ and CUDA's CCCL headers, or nvcc).

The cases are drawn with the generators of the legacy-pycute differential
(``test_differential_pycute``), from fixed seeds, and decided by the same rules
(``_run_case``): results compared as functions; where the two differ or one refuses, the
operation's post-condition, checked by brute force, says who is right.  Anything that is
not explained that way -- layoutproof returning a result that breaks the post-condition, or
refusing where C++'s answer satisfies it -- fails the test.

C++ is compiled once for all cases: layouts are built from *dynamic* integers read at run
time, so one instantiation per nesting profile serves every case of that profile (the most
frequent profiles of the drawn cases are kept).  With dynamic integers CuTe checks nothing
at compile time and little at run time, which is where it returns wrong layouts silently;
its operations that need static strides (rank >= 2 complement, left_inverse) are compared
through the rank-1 forms it accepts dynamically.  A case that kills the program (a
division by zero) is recorded as a C++ crash and the run resumes after it.
"""

from __future__ import annotations

import random
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import test_differential_pycute as pyd  # the generators, post-conditions and decision rules
from oracles import Peer, PeerError, cutlass_include, cxx_compiler, parse_layout, run_resuming, source_suffix

import layoutproof as lp
from layoutproof import Layout

pytestmark = pytest.mark.slow

N_COMPOSE = 2000
N_DIVIDE = 600
N_PRODUCT = 400
N_COMPLEMENT = 400
N_RINV = 500
N_COALESCE = 400
MIN_TOTAL = 4000
COMPOSE_PAIRS = 36  # profile pairs compiled for composition
PROFILES = 10  # profiles compiled for the unary operations


# ----------------------------------------------------------------------------- the compiler
# ----------------------------------------------------------------------------- profiles
def profile(t):
    return tuple(profile(e) for e in t) if type(t) is tuple else "x"


def leaves(p) -> int:
    return sum(leaves(e) for e in p) if type(p) is tuple else 1


def _cxx_tuple(p, names):
    if type(p) is tuple:
        return "make_shape(" + ", ".join(_cxx_tuple(e, names) for e in p) + ")"
    return next(names)


def _cxx_layout(p, base: int) -> str:
    n = leaves(p)
    s = iter(f"v[{base + i}]" for i in range(n))
    d = iter(f"v[{base + n + i}]" for i in range(n))
    if type(p) is not tuple:
        return f"make_layout({next(s)}, {next(d)})"
    return f"make_layout({_cxx_tuple(p, s)}, {_cxx_tuple(p, d).replace('make_shape', 'make_stride')})"


def _flat_values(L: Layout):
    return pyd._flat(L.shape) + pyd._flat(L.stride)


# ----------------------------------------------------------------------------- the cases
class Case:
    def __init__(self, op, key, args, lp_call, post, ex, values, post_peer=None):
        self.op, self.key, self.args, self.lp_call, self.post, self.ex = op, key, args, lp_call, post, ex
        self.values, self.post_peer = values, post_peer


def _seed(op: str) -> int:
    return zlib.crc32(op.encode()) ^ 0xC0DE


def _top(counter: Counter, n: int):
    return {k for k, _ in counter.most_common(n)}


def _draw_compositions():
    rng = random.Random(_seed("composition"))
    pool = []
    for _ in range(5 * N_COMPOSE):
        A = pyd.g_layout(rng)
        _kind, rhs = pyd.g_B(rng, A)
        B = pyd._lo(rhs)
        pool.append((A, B))
    freq = Counter((profile(A.shape), profile(B.shape)) for A, B in pool)
    keep = _top(freq, COMPOSE_PAIRS)
    out = []
    for A, B in pool:
        key = (profile(A.shape), profile(B.shape))
        if key in keep and len(out) < N_COMPOSE:
            out.append(
                Case(
                    "composition",
                    key,
                    (A, B),
                    lambda A=A, B=B: lp.composition(A, B),
                    pyd.post_composition(A, B),
                    f"composition({pyd._show(A)}, {pyd._show(B)})",
                    _flat_values(A) + _flat_values(B),
                )
            )
    return out


def _unary_pool(op, n, gen=None):
    rng = random.Random(_seed(op))
    pool = [(gen or pyd.g_layout)(rng) for _ in range(6 * n)]
    keep = _top(Counter(profile(A.shape) for A in pool), PROFILES)
    return rng, [A for A in pool if profile(A.shape) in keep][:n]


def _draw_unary():
    cases = []
    _rng, As = _unary_pool("right_inverse", N_RINV)
    for A in As:
        cases.append(
            Case(
                "right_inverse",
                (profile(A.shape),),
                (A,),
                lambda A=A: lp.right_inverse(A),
                pyd.post_right_inverse(A),
                f"right_inverse({pyd._show(A)})",
                _flat_values(A),
            )
        )
    _rng, As = _unary_pool("coalesce", N_COALESCE)
    for A in As:
        cases.append(
            Case(
                "coalesce",
                (profile(A.shape),),
                (A,),
                lambda A=A: lp.coalesce(A),
                pyd._post_coalesce(A),
                f"coalesce({pyd._show(A)})",
                _flat_values(A),
                post_peer=pyd._post_same_as(A),  # CuTe cannot merge dynamic modes
            )
        )
    rng = random.Random(_seed("complement"))
    for _ in range(N_COMPLEMENT):
        L = Layout(rng.choice(pyd._EXT), rng.choice(pyd._STRIDES))
        M = rng.choice((1, 4, 8, 16, 24, 32, 64, 100, 128))
        cases.append(
            Case(
                "complement",
                ("x",),
                (L, M),
                lambda L=L, M=M: lp.complement(L, M),
                pyd.post_complement(L, M),
                f"complement({pyd._show(L)}, {M})",
                _flat_values(L) + [M],
            )
        )
    rng, As = _unary_pool("logical_divide", N_DIVIDE)
    for A in As:
        B = pyd.g_tile_B(rng, A)
        cases.append(
            Case(
                "logical_divide",
                (profile(A.shape),),
                (A, B),
                lambda A=A, B=B: lp.logical_divide(A, B),
                pyd.post_logical_divide(A, B),
                f"logical_divide({pyd._show(A)}, {pyd._show(B)})",
                _flat_values(A) + _flat_values(B),
            )
        )
    rng, Bs = _unary_pool("logical_product", N_PRODUCT, lambda r: pyd.g_layout(r, max_size=32))
    for B in Bs:
        A = Layout(rng.choice((1, 2, 3, 4, 6, 8)), rng.choice((0, 1, 1, 2, 3, 4)))
        cases.append(
            Case(
                "logical_product",
                (profile(B.shape),),
                (A, B),
                lambda A=A, B=B: lp.logical_product(A, B),
                pyd.post_logical_product(A, B),
                f"logical_product({pyd._show(A)}, {pyd._show(B)})",
                _flat_values(A) + _flat_values(B),
            )
        )
    return cases


# ----------------------------------------------------------------------------- the program
_CALLS = {
    "composition": "composition(A, B)",
    "right_inverse": "right_inverse(A)",
    "coalesce": "coalesce(A)",
    "complement": "complement(A, v[2])",
    "logical_divide": "logical_divide(A, B)",
    "logical_product": "logical_product(A, B)",
}


def _functions(cases):
    keys = sorted({(c.op, c.key) for c in cases}, key=str)
    fns, ids = [], {}
    for i, (op, key) in enumerate(keys):
        ids[(op, key)] = i
        pa = key[0]
        body = [f"  auto A = {_cxx_layout(pa, 0)};"]
        if op == "composition":
            body.append(f"  auto B = {_cxx_layout(key[1], 2 * leaves(pa))};")
        elif op == "logical_divide":
            body.append(f"  auto B = {_cxx_layout('x', 2 * leaves(pa))};")
        elif op == "logical_product":  # A is rank 1 (dynamic complement), B the profile
            body = [f"  auto A = {_cxx_layout('x', 0)};", f"  auto B = {_cxx_layout(pa, 2)};"]
        body.append(f"  show(k, {_CALLS[op]});")
        fns.append(f"void f{i}(long k, const int* v) {{\n" + "\n".join(body) + "\n}")
    return fns, ids


_PRELUDE = r"""
#include <cute/layout.hpp>
#include <cstdio>
#include <iostream>
using namespace cute;
template <class L> void show(long k, L const& l) {
  printf("R %ld ", k); print(l); printf(" |");
  for (int i = 0; i < int(size(l)); ++i) printf(" %d", int(l(i)));
  printf("\n");
  fflush(stdout);
}
"""


def _program(cases):
    fns, ids = _functions(cases)
    table = ", ".join(f"f{i}" for i in range(len(fns)))
    main = (
        "typedef void (*fn_t)(long, const int*);\n"
        f"static fn_t table[] = {{{table}}};\n"
        "int main() {\n"
        "  long k; int f, n;\n"
        "  while (std::cin >> k >> f >> n) {\n"
        "    int v[64];\n"
        "    for (int i = 0; i < n; ++i) std::cin >> v[i];\n"
        '    printf("S %ld\\n", k); fflush(stdout);\n'
        "    table[f](k, v);\n"
        "  }\n"
        "  return 0;\n"
        "}\n"
    )
    return _PRELUDE + "\n".join(fns) + "\n" + main, ids


@pytest.fixture(scope="module")
def cpp_results(tmp_path_factory):
    inc = cutlass_include()
    if inc is None:
        pytest.skip("no CuTe headers (the nvidia-cutlass wheel ships them)")
    cc = cxx_compiler(inc)
    if cc is None:
        pytest.skip("no C++ compiler (g++ with CUDA's CCCL headers, or nvcc)")
    cases = _draw_compositions() + _draw_unary()
    src, ids = _program(cases)
    d = tmp_path_factory.mktemp("cute_oracle")
    ext = source_suffix(cc)
    (d / f"oracle{ext}").write_text(src)
    exe = d / "oracle"
    res = subprocess.run(
        cc + [str(d / f"oracle{ext}"), "-o", str(exe)], capture_output=True, text=True, timeout=900
    )
    assert res.returncode == 0, res.stderr[-4000:]
    lines = []
    for k, c in enumerate(cases):
        vals = c.values
        lines.append(f"{k} {ids[(c.op, c.key)]} {len(vals)} {' '.join(str(v) for v in vals)}\n")
    return cases, run_resuming([str(exe)], lines)


def decide(cases, results):
    """The decision rules over every case: one Report per operation."""
    reports = {}
    for k, c in enumerate(cases):
        rep = reports.setdefault(c.op, pyd.Report(c.op))
        r = results.get(k)

        def peer(r=r):
            if r is None:
                raise PeerError("no output")
            if r[0] != "R":  # named by its signal (SIGFPE: a division by zero)
                raise type(r[1], (PeerError,), {})(f"the C++ program died ({r[1]})")
            printed, _, vals = r[1].partition(" |")
            shape, stride = parse_layout(printed)
            offs = pyd._offsets(shape, stride)
            if pyd._valid(shape, stride) and offs.tolist() != [int(v) for v in vals.split()]:
                raise AssertionError(f"C++ printed {shape}:{stride} but evaluated {vals}")
            return Peer(shape, stride)

        pyd._run_case(rep, c.ex, c.lp_call, peer, c.post, struct=False, post_pc=c.post_peer, peer="CuTe C++")
    return reports


def test_cpp_differential(cpp_results):
    reports = decide(*cpp_results)
    total = sum(r.cases for r in reports.values())
    lines = [f"{op}: {r.cases} cases, {dict(r.kinds)}" for op, r in reports.items()]
    failures = [f for r in reports.values() for f in r.failures]
    incomplete = [f for r in reports.values() for f in r.incomplete]
    assert not failures, "\n".join(failures[:10])
    assert not incomplete, "\n".join(incomplete[:10])
    assert total >= MIN_TOTAL, (total, lines)
    agree = sum(r.kinds["agree"] for r in reports.values())
    assert agree > total // 3, lines  # the comparison is not vacuous


def test_cpp_parse_is_faithful():
    assert parse_layout("(4,2):(_2,_1)") == ((4, 2), (2, 1))
    assert parse_layout("((2,1),(1,2)):((_2,1),(_8,1))") == (((2, 1), (1, 2)), ((2, 1), (8, 1)))
    assert parse_layout("_8:_1") == (8, 1)
    assert parse_layout("(4):(2)") == ((4,), (2,))
    assert np.array_equal(pyd._offsets(*parse_layout("(4,2):(2,1)")), [0, 2, 4, 6, 1, 3, 5, 7])


if (
    __name__ == "__main__"
):  # the categories and an example of each: python tests/algebra/test_differential_cpp.py
    import sys
    import tempfile

    inc = cutlass_include()
    cc = cxx_compiler(inc) if inc else None
    if cc is None:
        sys.exit("no CuTe headers or no compiler")
    cases = _draw_compositions() + _draw_unary()
    src, ids = _program(cases)
    d = Path(tempfile.mkdtemp())
    ext = source_suffix(cc)
    (d / f"oracle{ext}").write_text(src)
    subprocess.run(cc + [str(d / f"oracle{ext}"), "-o", str(d / "oracle")], check=True)
    lines = [
        f"{k} {ids[(c.op, c.key)]} {len(c.values)} {' '.join(map(str, c.values))}\n"
        for k, c in enumerate(cases)
    ]
    for op, rep in decide(cases, run_resuming([str(d / "oracle")], lines)).items():
        print(f"== {op}: {rep.cases} cases")
        for kind, n in rep.kinds.most_common():
            print(f"   {n:5d}  {kind}\n          e.g. {rep.examples[kind][:300]}")
