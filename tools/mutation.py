"""Mutation testing of the layout algebra: how many hand-written bugs do the tests and the
theorem catalog catch?  (a measurement, never run in CI)

Each mutation below is a named, hand-written, semantically meaningful edit of one source
file of the algebra (an off-by-one in a prefix product, swapped operands, a dropped
admissibility check, a wrong stride in the complement, ...): the exact original snippet
(which must occur exactly once in the file), its replacement, a description and a
category.  The runner

1. copies the repository into a workspace (``shutil.copytree``; ``.git``, virtual
   environments, caches and build folders are left out) and gives it an isolated Python
   environment: a fresh venv whose site-packages links every package of the development
   venv (``/tmp/venvA`` by default) *except* layoutproof, plus an editable install of the
   workspace, so that ``import layoutproof`` in a mutant run imports the workspace's
   ``algebra/`` (checked by printing ``layoutproof.__file__``).  The source repository is
   never written to;
2. checks that every mutation applies (snippet found exactly once, the mutant compiles)
   and that the unmutated workspace passes the kill command (the baseline);
3. for each mutant: applies it, runs the kill command with a per-mutant time limit,
   reverts it.  A mutant is *killed* when a stage exits non-zero, *timeout* when it runs
   past the limit (counted as killed, reported separately), *survived* otherwise.

The kill command has two stages, run in order, stopping at the first failure:

* ``tests``: ``python -m pytest -x -q -p no:cacheprovider`` over the test files, the
  quickest and strongest first (``TEST_ORDER``), so that most mutants die in seconds;
* ``catalog``: ``python -m layoutproof prove`` (exit status non-zero = killed), included
  automatically when the workspace's ``layoutproof`` command has a ``prove`` sub-command
  (the theorem catalog of ``proofs/``).

Score = killed (timeouts included) / (mutants - surviving mutants declared equivalent).
A mutation may carry an ``equivalent`` justification: it is then excluded from the
denominator *only if it survives* (a killed "equivalent" is reported, since then either
the justification or a test is wrong).

Run (from the repository root; takes minutes, use the background for full runs)::

    /tmp/venvA/bin/python tools/mutation.py --list
    /tmp/venvA/bin/python tools/mutation.py                     # tests + catalog, 2 jobs
    /tmp/venvA/bin/python tools/mutation.py --tests-only        # the tests' share
    /tmp/venvA/bin/python tools/mutation.py --catalog-only      # the catalog's share
    /tmp/venvA/bin/python tools/mutation.py --all-stages        # every stage on every mutant:
                                                                # tests-only, catalog-only and
                                                                # combined scores in one run
    /tmp/venvA/bin/python tools/mutation.py --only coalesce-merge-stride --only swizzle-shift-direction
    /tmp/venvA/bin/python tools/mutation.py --check             # do the snippets still apply?

Options: ``--jobs N`` (mutants in parallel, each in its own workspace copy; default 2),
``--timeout S`` (per mutant; default 3x the baseline, at least 120 s), ``--out DIR``
(report folder, default ``build/mutation``: ``report.json`` and ``report.md``),
``--workdir DIR`` and ``--keep`` (keep the workspaces), ``--venv DIR`` (the development
venv whose packages are linked), ``--catalog-args "..."`` (extra arguments of ``prove``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import fnmatch
import json
import os
import platform
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VENV = Path("/tmp/venvA")


# ============================================================================= the mutations
@dataclass(frozen=True)
class Mutation:
    """One hand-written bug: ``original`` (exactly once in ``file``) becomes ``replacement``."""

    name: str
    category: str
    file: str
    original: str
    replacement: str
    description: str
    # A written justification that the mutant changes no observable behaviour; it is then
    # excluded from the score's denominator when it survives.
    equivalent: str = ""


M = Mutation
OPS, INT, LAY, SYM, SYMB, SWZ, CMP, F2M = (
    "algebra/ops.py",
    "algebra/inttuple.py",
    "algebra/layout.py",
    "algebra/symbolic/symops.py",
    "algebra/symbolic/__init__.py",
    "algebra/swizzle.py",
    "algebra/composed.py",
    "algebra/f2.py",
)

MUTATIONS: Tuple[Mutation, ...] = (
    # ------------------------------------------------------------------ prefix / suffix products
    M(
        "prefix-init-ignored",
        "prefix/suffix products",
        INT,
        "        out = []\n        cur = init\n",
        "        out = []\n        cur = 1\n",
        "prefix_product restarts every nested mode at 1 instead of the running product "
        "((2,(3,4)) -> (1,(1,3)) instead of (1,(2,6)))",
    ),
    M(
        "prefix-inclusive",
        "prefix/suffix products",
        INT,
        "            out.append(raw_prefix_product(e, cur))\n            cur = cur * raw_product(e)\n",
        "            cur = cur * raw_product(e)\n            out.append(raw_prefix_product(e, cur))\n",
        "off-by-one: inclusive instead of exclusive prefix products (compact strides start at s0)",
    ),
    M(
        "prefix-tuple-init",
        "prefix/suffix products",
        INT,
        "        return tuple(raw_prefix_product(a, b) for a, b in _bzip(t, init))",
        "        return tuple(raw_prefix_product(a, 1) for a, b in _bzip(t, init))",
        "a tuple init is ignored mode by mode (CuTe applies it to each mode)",
    ),
    M(
        "suffix-inclusive",
        "prefix/suffix products",
        LAY,
        "        cur[0] = v * x\n        return v\n",
        "        cur[0] = v * x\n        return cur[0]\n",
        "off-by-one in LayoutRight's suffix product: inclusive instead of exclusive",
    ),
    M(
        "suffix-direction",
        "prefix/suffix products",
        LAY,
        "            return tuple(reversed([walk(e) for e in reversed(x)]))",
        "            return tuple([walk(e) for e in x])",
        "LayoutRight walks the modes left to right: it becomes column-major",
    ),
    # ------------------------------------------------------------------ coalesce
    M(
        "coalesce-merge-cond",
        "coalesce",
        OPS,
        "        if rs and rs[-1] * rd[-1] == d:\n",
        "        if rs and rd[-1] == d:\n",
        "coalesce merges two modes when their strides are equal instead of when s_prev*d_prev == d",
    ),
    M(
        "coalesce-merge-stride",
        "coalesce",
        OPS,
        "        if rs and rs[-1] * rd[-1] == d:\n            rs[-1] *= s\n",
        "        if rs and rs[-1] * rd[-1] == d:\n            rs[-1] *= s\n            rd[-1] = d\n",
        "a merged mode takes the stride of the second mode instead of keeping the first's",
    ),
    M(
        "coalesce-keep-unit",
        "coalesce",
        OPS,
        "        if s == 1 and k != last:\n            continue\n",
        "        if s == 1 and k == last:\n            continue\n",
        "coalesce keeps extent-1 modes (and drops a trailing one that keep_last must keep)",
    ),
    M(
        "coalesce-empty-stride",
        "coalesce",
        OPS,
        "    if not rs:\n        return [1], [0]\n    return rs, rd\n\n\ndef coalesced_modes(",
        "    if not rs:\n        return [1], [1]\n    return rs, rd\n\n\ndef coalesced_modes(",
        "the coalesced trivial layout is 1:1 instead of CuTe's 1:0",
    ),
    M(
        "filter-keeps-zero-stride",
        "coalesce",
        OPS,
        "    keep = [(s, d) for s, d in zip(fs, fd) if s != 1 and d != 0]",
        "    keep = [(s, d) for s, d in zip(fs, fd) if s != 1]",
        "filter keeps stride-0 modes",
    ),
    # ------------------------------------------------------------------ composition
    M(
        "compose-swapped-divisibility",
        "composition",
        OPS,
        "        if rest_r % s == 0:\n            rest_r //= s\n            continue\n"
        "        if s % rest_r == 0:\n",
        "        if s % rest_r == 0:\n            rest_r //= s\n            continue\n"
        "        if rest_r % s == 0:\n",
        "the walk's two divisibility tests are swapped (skip a mode when the stride lands "
        "inside it, and vice versa)",
    ),
    M(
        "compose-stride-original",
        "composition",
        OPS,
        "            md.append(rest_r * Ad[i])\n",
        "            md.append(r * Ad[i])\n",
        "wrong stride multiplication: the leaf's original stride r instead of the remaining "
        "stride rest_r scales A's stride",
    ),
    M(
        "compose-last-stride",
        "composition",
        OPS,
        "        md.append(rest_r * Ad[last])\n",
        "        md.append(Ad[last])\n",
        "the part of a leaf that reaches A's unbounded last mode forgets its remaining stride",
    ),
    M(
        "compose-fits-strict",
        "composition",
        OPS,
        "            if rest_n <= m:\n",
        "            if rest_n < m:\n",
        "off-by-one: a leaf that exactly fills the rest of A's mode goes to the m | n branch",
        equivalent="when rest_n == m the next branch tests m | rest_n, which holds, and takes "
        "m == rest_n: the same extent, stride and digit record",
    ),
    M(
        "compose-drop-shape-divisibility",
        "composition",
        OPS,
        "            elif rest_n % m == 0:\n",
        "            elif True:\n",
        "dropped shape-divisibility check: a leaf wrapping around A's mode takes m steps and "
        "truncates n // m",
    ),
    M(
        "compose-drop-disjointness",
        "composition",
        OPS,
        "    if multi:\n        _check_disjoint(A, B, As, Ad, fbs, fbd, leaves)\n",
        "    if False:\n        _check_disjoint(A, B, As, Ad, fbs, fbd, leaves)\n",
        "dropped disjointness check: B's modes may overlap inside A (the by-mode "
        "concatenation is returned although it is not A o B)",
    ),
    M(
        "compose-disjoint-off-by-one",
        "composition",
        OPS,
        "    bad = [i for i in range(last) if used.get(i, 0) >= As[i]]",
        "    bad = [i for i in range(last) if used.get(i, 0) > As[i]]",
        "off-by-one in the disjointness test: summed digits equal to the extent do not count as a carry",
    ),
    M(
        "compose-digit-record",
        "composition",
        OPS,
        "            occ[i] = (rest_r * (take - 1), done * (take - 1))",
        "            occ[i] = (take - 1, done * (take - 1))",
        "the walk records the leaf's step count instead of its largest digit of A's mode "
        "(the disjointness test underestimates)",
    ),
    M(
        "compose-exact-accepts-any",
        "composition",
        OPS,
        "    diff = np.flatnonzero(got != v)\n    if diff.size:\n",
        "    diff = np.flatnonzero(got != v)\n    if False:\n",
        "the exact fallback accepts the greedily recognized layout without checking that it "
        "reproduces A(r*j) (wrong layouts returned where CuTe's conditions fail)",
    ),
    M(
        "compose-exact-no-period-check",
        "composition",
        OPS,
        "        if len(cur) % n != 0:\n            return None, n * scale\n",
        "        if False:\n            return None, n * scale\n",
        "the exact fallback accepts a first extent that does not divide the domain",
    ),
    M(
        "compose-exact-no-fallback",
        "composition",
        OPS,
        '        if e.condition not in ("stride divisibility", "shape divisibility"):\n',
        "        if True:\n",
        "no exact fallback: every failed C++ divisibility condition raises (CuTe-complete "
        "cases such as (4,2):(2,1) o 2:3 are refused)",
    ),
    M(
        "compose-negative-stride-silent",
        "errors",
        OPS,
        "    if r < 0:\n        raise InadmissibleError(\n",
        "    if r < -(1 << 62):\n        raise InadmissibleError(\n",
        "the check that B's strides are non-negative becomes silent",
    ),
    M(
        "compose-witness-unscaled",
        "errors",
        OPS,
        "            e.witness = e.witness * raw_prefix_product(fbs)[k]\n",
        "            e.witness = e.witness\n",
        "the witness of a failing leaf of a multi-mode B is not converted to a 1-D coordinate of B",
    ),
    M(
        "compose-no-extension-mode",
        "composition",
        OPS,
        "    As, Ad = coalesced_modes_x(A)\n",
        "    As, Ad = coalesced_modes(A)\n",
        "A's trailing size-1 mode is dropped before composing, so A extends past its size "
        "with the wrong stride ((4,1):(1,0) o 8:1)",
    ),
    M(
        "compose-scale-unit-stride",
        "composition",
        OPS,
        "d * a if s != 1 else 0 for s, d in zip(fbs, fbd)",
        "d * a for s, d in zip(fbs, fbd)",
        "the single-mode fast path keeps scaled strides on extent-1 modes (C++ gives 0)",
    ),
    M(
        "compose-scale-forgotten",
        "composition",
        OPS,
        "            if B._stride >= 0:\n                return _make(B._shape, B._stride * a)\n",
        "            if B._stride >= 0:\n                return _make(B._shape, B._stride)\n",
        "wrong stride multiplication in the single-mode fast path: A's stride is not applied",
    ),
    # ------------------------------------------------------------------ complement
    M(
        "complement-wrong-stride",
        "complement",
        OPS,
        "            rs.append(d // cur)\n            rd.append(cur)\n",
        "            rs.append(d // cur)\n            rd.append(d)\n",
        "wrong stride in the complement: a gap mode gets the next mode's stride instead of "
        "the covered extent",
    ),
    M(
        "complement-drop-chain",
        "complement",
        OPS,
        "        if d % cur != 0:\n            raise InadmissibleError(\n"
        '                f"complement: admissibility',
        "        if False:\n            raise InadmissibleError(\n"
        '                f"complement: admissibility',
        "dropped stride-chain check: a complement is returned for (2,2):(1,3), where none exists",
    ),
    M(
        "complement-floor-cotarget",
        "complement",
        OPS,
        "        rs.append(ceil_div_int(cot, cur))\n",
        "        rs.append(cot // cur)\n",
        "wrong rounding: the last mode rounds the cotarget down instead of up",
    ),
    M(
        "ceil-div-floor",
        "complement",
        INT,
        "    return -(-a // b)\n",
        "    return a // b\n",
        "ceil_div rounds down (used by the complement and the public ceil_div)",
    ),
    M(
        "complement-sort-key",
        "complement",
        OPS,
        "        modes.append((d, s, k))\n    modes.sort()\n",
        "        modes.append((d, s, k))\n    modes.sort(key=lambda m: m[2])\n",
        "wrong sort key: the complement walks the modes in index order instead of by stride",
    ),
    M(
        "complement-covered-extent",
        "complement",
        OPS,
        "        cur = s * d\n    rest = _exact_shape_div",
        "        cur = (s - 1) * d\n    rest = _exact_shape_div",
        "off-by-one: the extent covered by a mode is (s-1)*d instead of s*d",
    ),
    M(
        "complement-negative-silent",
        "errors",
        OPS,
        '        if d < 0:\n            raise InadmissibleError(\n                f"complement: mode',
        '        if d < -(1 << 62):\n            raise InadmissibleError(\n                f"complement: mode',  # noqa: E501
        "the complement's non-negative-stride check becomes silent",
    ),
    M(
        "complement-shape-cotarget",
        "complement",
        OPS,
        "            out.append(x // d)\n            d = 1\n",
        "            out.append(x)\n            d = 1\n",
        "a Shape cotarget is not divided by the covered extent where the extent falls inside a "
        "mode (the complement is too large)",
    ),
    # ------------------------------------------------------------------ inverses
    M(
        "right-inverse-prefix",
        "inverses",
        OPS,
        "                rs.append(cs[i])\n                rd.append(pp[i])\n",
        "                rs.append(cs[i])\n                rd.append(cd[i])\n",
        "right_inverse uses the mode's stride instead of its prefix product (its coordinate "
        "scale in the domain)",
    ),
    M(
        "right-inverse-skip",
        "inverses",
        OPS,
        "            if not used[i] and d == cur:\n",
        "            if not used[i] and d % cur == 0:\n",
        "wrong skip: right_inverse follows any stride that is a multiple of the chain, not just "
        "the one that continues it",
    ),
    M(
        "right-inverse-chain",
        "inverses",
        OPS,
        "                cur = cs[i] * d\n",
        "                cur = cs[i]\n",
        "right_inverse continues its chain at the extent instead of extent*stride",
    ),
    M(
        "left-inverse-prefix",
        "inverses",
        OPS,
        "        rs.append(d1 // d0)\n        rd.append(p0)\n",
        "        rs.append(d1 // d0)\n        rd.append(p1)\n",
        "left_inverse maps the gap between two strides with the upper mode's prefix product",
    ),
    M(
        "left-inverse-first-stride",
        "inverses",
        OPS,
        "    rs: List[int] = [modes[0][0]]\n    rd: List[int] = [0]\n",
        "    rs: List[int] = [modes[0][0]]\n    rd: List[int] = [1]\n",
        "left_inverse's first mode (offsets below the smallest stride) gets stride 1 instead of 0",
    ),
    M(
        "left-inverse-drop-overlap",
        "inverses",
        OPS,
        "        if s0 * d0 > d1:\n",
        "        if False:\n",
        "dropped injectivity check: left_inverse of overlapping modes returns a non-inverse",
    ),
    M(
        "left-inverse-drop-divisibility",
        "inverses",
        OPS,
        "        if d1 % d0 != 0:\n",
        "        if False:\n",
        "dropped divisibility check in left_inverse (d1 // d0 truncates)",
    ),
    M(
        "left-inverse-last-prefix",
        "inverses",
        OPS,
        "    rd.append(modes[-1][2])\n    ms, md = coalesce_modes",
        "    rd.append(modes[0][2])\n    ms, md = coalesce_modes",
        "left_inverse's last mode takes the prefix product of the smallest-stride mode",
    ),
    # ------------------------------------------------------------------ divides / products
    M(
        "divide-cotarget-cosize",
        "divides/products",
        OPS,
        "    C = complement(B, layout.size)\n",
        "    C = complement(B, layout.cosize)\n",
        "wrong complement cotarget in logical_divide: cosize(layout) instead of size(layout)",
    ),
    M(
        "divide-swapped",
        "divides/products",
        OPS,
        "    return composition(layout, _make((B._shape, C._shape), (B._stride, C._stride)))",
        "    return composition(layout, _make((C._shape, B._shape), (C._stride, B._stride)))",
        "swapped operands: logical_divide puts the rest first and the tile second",
    ),
    M(
        "product-cotarget-size",
        "divides/products",
        OPS,
        "    C = complement(block, block.size * B.cosize)\n",
        "    C = complement(block, block.size * B.size)\n",
        "wrong complement cotarget in logical_product: size(tiler) instead of cosize(tiler)",
    ),
    M(
        "product-swapped",
        "divides/products",
        OPS,
        "    R = composition(C, B)\n",
        "    R = composition(B, C)\n",
        "swapped operands: logical_product composes the tiler with the complement",
    ),
    M(
        "zipped-rest-order",
        "divides/products",
        OPS,
        "        s1 = tuple([p._shape[1] for p in split]) + s[len(tiler) :]\n"
        "        d1 = tuple([p._stride[1] for p in split]) + d[len(tiler) :]\n",
        "        s1 = s[len(tiler) :] + tuple([p._shape[1] for p in split])\n"
        "        d1 = d[len(tiler) :] + tuple([p._stride[1] for p in split])\n",
        "zipped regrouping: the modes beyond the tiler come before the rest modes",
    ),
    M(
        "tiled-not-unpacked",
        "divides/products",
        OPS,
        "    return _make((Z._shape[0],) + s1, (Z._stride[0],) + d1)",
        "    return _make((Z._shape[0], Z._shape[1]), (Z._stride[0], Z._stride[1]))",
        "tiled regrouping: the rest modes stay grouped (tiled == zipped)",
    ),
    M(
        "flat-regroup",
        "divides/products",
        OPS,
        "    return _make(s0 + s1, d0 + d1)",
        "    return _make(s1 + s0, d1 + d0)",
        "flat regrouping: the rest modes come before the tile modes",
    ),
    M(
        "raked-swapped",
        "divides/products",
        OPS,
        "    firsts, seconds = (A1, A0) if raked else (A0, A1)",
        "    firsts, seconds = (A0, A1) if raked else (A1, A0)",
        "blocked and raked products swapped",
    ),
    M(
        "zip-product-rank",
        "divides/products",
        OPS,
        "    r = max(block.rank, B.rank)\n",
        "    r = block.rank\n",
        "blocked/raked product pads to the block's rank only (a higher-rank tiler fails)",
    ),
    # ------------------------------------------------------------------ tile_to_shape
    M(
        "tile-to-shape-divides-swapped",
        "tile_to_shape",
        OPS,
        "        if t % b != 0:\n",
        "        if b % t != 0:\n",
        "swapped operands in tile_to_shape's check: the target must divide the block",
    ),
    M(
        "tile-to-shape-order-ignored",
        "tile_to_shape",
        OPS,
        "    pshape = tuple(t // b for t, b in zip(tshape, bshape))\n"
        "    R = coalesce(blocked_product(pb, make_ordered_layout(pshape, order)), pshape)",
        "    pshape = tuple(t // b for t, b in zip(tshape, bshape))\n"
        "    R = coalesce(blocked_product(pb, make_ordered_layout(pshape)), pshape)",
        "tile_to_shape ignores the order of the repetitions",
    ),
    # ------------------------------------------------------------------ compatible
    M(
        "compatible-le",
        "compatible",
        OPS,
        "    return bool(a == raw_product(b))\n",
        "    return bool(a <= raw_product(b))\n",
        "wrong comparison: an integer mode is compatible with any mode at least as large",
    ),
    M(
        "compatible-rank",
        "compatible",
        OPS,
        "        return type(b) is tuple and len(a) == len(b) and all(_compat(x, y)",
        "        return type(b) is tuple and len(a) <= len(b) and all(_compat(x, y)",
        "a tuple is compatible with a longer tuple (zip truncates)",
    ),
    # ------------------------------------------------------------------ idx2crd / crd2idx
    M(
        "idx2crd-quotient-remainder",
        "idx2crd/crd2idx",
        INT,
        "    return (idx // stride) % shape\n",
        "    return (idx % shape) // stride\n",
        "idx2crd takes the remainder before the quotient",
    ),
    M(
        "crd2idx-last-mode-bounded",
        "idx2crd/crd2idx",
        INT,
        "            if i == n - 1:\n",
        "            if False:\n",
        "crd2idx wraps the last mode instead of letting it take the remainder unbounded",
    ),
    M(
        "crd2idx-split-swapped",
        "idx2crd/crd2idx",
        INT,
        "                s = s + raw_crd2idx(crd % p, sh, d)\n                crd = crd // p\n",
        "                s = s + raw_crd2idx(crd // p, sh, d)\n                crd = crd % p\n",
        "crd2idx splits an integer coordinate with quotient and remainder swapped",
    ),
    # ------------------------------------------------------------------ evaluation / slicing / cosize
    M(
        "eval-int-order",
        "evaluation/slicing",
        LAY,
        "            off += (c % s) * d\n            c //= s\n        return off\n",
        "            c //= s\n            off += (c % s) * d\n        return off\n",
        "1-D evaluation divides before taking the digit (off-by-one in the mixed radix)",
    ),
    M(
        "eval-domain-off-by-one",
        "errors",
        LAY,
        "                if 0 <= c < self.size:\n",
        "                if 0 <= c <= self.size:\n",
        "the 1-D domain check accepts c == size",
    ),
    M(
        "eval-tuple-bound",
        "errors",
        LAY,
        "            if 0 <= ci < si:\n                off += ci * di\n                continue\n"
        "        elif tc is tuple",
        "            if 0 <= ci <= si:\n                off += ci * di\n                continue\n"
        "        elif tc is tuple",
        "the n-D fast path accepts a coordinate equal to its mode's extent",
    ),
    M(
        "slice-offset-overwritten",
        "evaluation/slicing",
        LAY,
        "            ks.extend(a)\n            kd.extend(b)\n            off += o\n",
        "            ks.extend(a)\n            kd.extend(b)\n            off = o\n",
        "slice_and_offset keeps only the last fixed mode's offset",
    ),
    M(
        "cosize-negative-stride",
        "cosize",
        LAY,
        "                c += (s - 1) * abs(d)\n",
        "                c += (s - 1) * d\n",
        "cosize ignores the sign of negative strides",
    ),
    M(
        "layout-congruence-silent",
        "errors",
        LAY,
        "            if not raw_congruent(s, d):\n",
        "            if False:\n",
        "Layout() accepts a stride that is not congruent with the shape",
    ),
    M(
        "layout-extent-zero",
        "errors",
        LAY,
        "        if s <= 0:\n",
        "        if s < 0:\n",
        "Layout() accepts extent 0",
    ),
    # ------------------------------------------------------------------ swizzles
    M(
        "swizzle-yyy-mask",
        "swizzle",
        SWZ,
        "        self._y = msk << (m + max(0, s))\n",
        "        self._y = msk << (m + abs(s))\n",
        "the YYY mask sits |S| above M also for negative S (it should sit at M)",
    ),
    M(
        "swizzle-zzz-mask",
        "swizzle",
        SWZ,
        "        self._z = msk << (m - min(0, s))\n",
        "        self._z = msk << m\n",
        "the ZZZ mask ignores a negative shift",
    ),
    M(
        "swizzle-mask-width",
        "swizzle",
        SWZ,
        "        msk = (1 << b) - 1\n",
        "        msk = (2 << b) - 1\n",
        "off-by-one in the swizzle's bit mask: B+1 bits wide",
    ),
    M(
        "swizzle-shift-direction",
        "swizzle",
        SWZ,
        "            return x ^ ((x & self._y) >> self._rs)\n",
        "            return x ^ ((x & self._y) << self._rs)\n",
        "wrong shift direction for S > 0 (integer fast path)",
    ),
    M(
        "swizzle-left-shift-direction",
        "swizzle",
        SWZ,
        "            return x ^ ((x & self._y) << self._ls)\n",
        "            return x ^ ((x & self._y) >> self._ls)\n",
        "wrong shift direction for S < 0 (integer fast path)",
    ),
    M(
        "swizzle-overlap-check",
        "errors",
        SWZ,
        "        if abs(s) < b:\n",
        "        if s < -b:\n",
        "|S| >= B checked only for negative S (PyCuTe's bug: overlapping fields, no involution)",
    ),
    M(
        "swizzle-block-closed",
        "swizzle",
        CMP,
        "    return cur % blk == 0 and all(d % blk == 0 for d in rest)\n",
        "    return cur % blk == 0\n",
        "the cosize fast path of a composed layout trusts unaligned extra strides",
    ),
    # ------------------------------------------------------------------ symbolic path
    M(
        "symops-dvd-order",
        "symbolic",
        SYM,
        "        return b % a == 0 if a != 0 else b == 0\n",
        "        return a % b == 0 if b != 0 else a == 0\n",
        "dvd(a, b) with its arguments swapped (integer path)",
    ),
    M(
        "symops-dvd-order-symbolic",
        "symbolic",
        SYM,
        "    return _tri(sp.Eq(sp.Mod(b, a), 0))\n",
        "    return _tri(sp.Eq(sp.Mod(a, b), 0))\n",
        "dvd(a, b) with its arguments swapped (symbolic path)",
    ),
    M(
        "symops-xdiv-inverted",
        "symbolic",
        SYM,
        "    return _num(_sympy().cancel(a / b))\n",
        "    return _num(_sympy().cancel(b / a))\n",
        "wrong xdiv: b / a on symbolic leaves",
    ),
    M(
        "symops-drop-need-shape",
        "symbolic",
        SYM,
        "            need(\n"
        "                cond,\n"
        '                op="composition",\n'
        '                condition_name="shape divisibility",\n'
        "                where=_where(k, i),\n"
        "                concrete=conc,\n"
        "            )\n",
        "            pass\n",
        "dropped need() for shape divisibility in the symbolic composition walk",
    ),
    M(
        "symops-drop-need-chain",
        "symbolic",
        SYM,
        "        need(\n            _dvd_cond(cur, d) if not _both_int(cur, d) else False,\n",
        "        (lambda *a, **k: None)(\n"
        "            _dvd_cond(cur, d) if not _both_int(cur, d) else False,\n",
        "dropped need() for the complement's stride chain (symbolic)",
    ),
    M(
        "symops-drop-disjointness",
        "symbolic",
        SYM,
        "    if len(leaves) > 1 and len(As) > 1:\n",
        "    if False:\n",
        "dropped disjointness check in the symbolic composition",
    ),
    M(
        "symops-merge-unproved",
        "symbolic",
        SYM,
        "    if last is not None and eq(last[0] * last[1], d) is True:\n",
        "    if last is not None and eq(last[0] * last[1], d) is not False:\n",
        "symbolic coalesce merges modes when the merge condition is unknown (not proved)",
    ),
    M(
        "symops-unknown-ignored-mode",
        "symbolic",
        SYM,
        "    if unit is None or zero is None:  # an ignored mode changes the result\n",
        "    if False:  # an ignored mode changes the result\n",
        "the symbolic complement and left_inverse keep a mode whose extent-1/stride-0 status is undecided "
        "instead of raising",
    ),
    M(
        "require-unknown-proves",
        "errors",
        SYMB,
        "    d = decide(cond)\n    if d.value is True:\n        return\n",
        "    d = decide(cond)\n    if d.value is not False:\n        return\n",
        "require() treats an undecided condition as proved (UndecidableConditionError silent)",
    ),
    M(
        "symops-tile-block-divides",
        "symbolic",
        SYM,
        "    if dvd(b, t) is not True:\n",
        "    if dvd(t, b) is not True:\n",
        "symbolic tile_to_shape checks that the target divides the block",
    ),
    # ------------------------------------------------------------------ second batch: subtler edits
    M(
        "make-ordered-tiebreak",
        "prefix/suffix products",
        LAY,
        "    idx = sorted(range(len(fs)), key=lambda i: (fo[i], i))",
        "    idx = sorted(range(len(fs)), key=lambda i: (fo[i], -i))",
        "make_ordered_layout breaks ties of the order right to left (CuTe: left to right)",
    ),
    M(
        "make-layout-like-abs",
        "prefix/suffix products",
        LAY,
        "key=lambda i: (abs(fd[i]), i))",
        "key=lambda i: (fd[i], i))",
        "make_layout_like orders negative strides by value instead of magnitude",
    ),
    M(
        "coalesce-by-mode-drops-rest",
        "coalesce",
        OPS,
        "    parts += [_make(s[i], d[i]) for i in range(len(profile), len(s))]\n",
        "",
        "coalesce/filter with a profile drop the modes beyond the profile instead of keeping them",
    ),
    M(
        "divide-by-mode-drops-rest",
        "divides/products",
        OPS,
        "    parts += [_make(s[i], d[i]) for i in range(len(tiler), len(s))]\n",
        "",
        "a tuple tiler of the divides/products drops the layout's modes beyond the tiler",
    ),
    M(
        "compose-tiler-keeps-rest",
        "composition",
        OPS,
        "        return _make(tuple(p._shape for p in parts), tuple(p._stride for p in parts))\n"
        '    return _compose_layout(lhs, layout_arg(rhs, "composition"))',
        "        return _make(tuple(p._shape for p in parts) + s[len(rhs):],\n"
        "                     tuple(p._stride for p in parts) + d[len(rhs):])\n"
        '    return _compose_layout(lhs, layout_arg(rhs, "composition"))',
        "composition with a tuple tiler keeps lhs's modes beyond the tiler (C++ drops them)",
    ),
    M(
        "compose-exact-int64-overflow",
        "composition",
        OPS,
        "    return a if bound < (1 << 62) else a.astype(object)\n",
        "    return a\n",
        "the exact fallback and the witness search evaluate in int64 even where offsets overflow",
    ),
    M(
        "compose-disjoint-all-leaves",
        "composition",
        OPS,
        "        if i in occ and reach < As[i]:\n",
        "        if i in occ:\n",
        "the overlap witness puts every leaf landing in the mode at its footprint instead of the "
        "shortest prefix reaching the extent (a double carry can hide the difference there)",
    ),
    M(
        "swizzle-block-closed-chain",
        "swizzle",
        CMP,
        "        if d == cur and not rest:\n",
        "        if d == cur:\n",
        "the block test of a composed layout's cosize resumes the stride chain after a gap",
        equivalent="every layout the weaker test newly accepts still fills whole aligned swizzle "
        "blocks (the resumed chain covers [0, cur) and cur is a block multiple), so the "
        "shortcut's answer is the exact cosize: 2,090,880 exhaustive + 200,000 random "
        "cases agree with brute force; it only answers some inputs over the evaluation "
        "limit that the original refuses",
    ),
    M(
        "f2-coalesce-shift",
        "swizzle",
        F2M,
        "d == pd << (ps.bit_length() - 1)):",
        "d == pd << ps.bit_length()):",
        "off-by-one in the F2 merge condition (2**k:F(d), n:F(d << k))",
    ),
    M(
        "symops-left-inverse-overlap",
        "symbolic",
        SYM,
        "    if le(s0 * d0, d1) is not True:\n",
        "    if False:\n",
        "dropped injectivity check in the symbolic left_inverse",
    ),
    M(
        "symops-ceil-div-floor",
        "symbolic",
        SYM,
        "    return _num(_sympy().ceiling(a / b))\n",
        "    return _num(_sympy().floor(a / b))\n",
        "symbolic ceil_div rounds down (the complement of a symbolic cotarget is too small)",
    ),
    M(
        "symops-sort-unknown-order",
        "errors",
        SYM,
        "    v = le(m[0], o[0])\n    if v is None:\n",
        "    v = le(m[0], o[0])\n    if False:\n",
        "the symbolic complement/left_inverse sort an undecided pair of strides silently",
    ),
    M(
        "symops-sort-ties-reversed",
        "symbolic",
        SYM,
        "    if m[2] < o[2]:\n        return j\n",
        "    if m[2] > o[2]:\n        return j\n",
        "the symbolic sort puts a mode before an equal-stride mode of smaller index",
    ),
    M(
        "symops-pick-takes-used-mode",
        "symbolic",
        SYM,
        "    if i in used:\n        return None\n",
        "    if i in used and i < 0:\n        return None\n",
        "right_inverse's search for the next mode may pick a mode it has used already",
    ),
    M(
        "symops-rest-extent-undivided",
        "symbolic",
        SYM,
        "        e, d = xdiv(x, d), 1\n",
        "        e, d = x, 1\n",
        "the complement of a tuple cotarget keeps a cotarget mode whole where cur covers part of it",
    ),
    M(
        "smt-ceiling-as-floor",
        "symbolic",
        "algebra/symbolic/solver.py",
        "        n, d = _quotient(-e.args[0], env)\n        return -_floordiv(n, d)\n",
        "        n, d = _quotient(e.args[0], env)\n        return _floordiv(n, d)\n",
        "the Z3 translation of ceiling(x) rounds down (conditions on ceil_div extents decided wrong)",
    ),
)


# ============================================================================= workspaces
IGNORE = shutil.ignore_patterns(
    ".git",
    ".hypothesis",
    ".ruff_cache",
    ".pytest_cache",
    ".mypy_cache",
    "__pycache__",
    "build",
    "dist",
    "site",
    "*.egg-info",
    ".venv*",
    "venv",
    ".tox",
    ".nox",
    "*.pyc",
)

# Quickest and strongest first: most mutants die in the first seconds.  Files not listed
# run between HEAD and TAIL (alphabetically); TAIL holds slow, broad files.
TEST_HEAD = (
    "test_mutation_kills.py",
    "test_seeds.py",
    "test_composition_exact.py",
    "test_doctests.py",
    "test_inttuple.py",
    "test_arith.py",
    "test_tensor.py",
    "test_differential_pycute.py",
    "test_properties.py",
    "test_symbolic.py",
    "test_errors_fuzz.py",
    "test_swizzle.py",
)
TEST_TAIL = (
    "test_verify_smt.py",
    "test_verify.py",
    "test_analysis.py",
    "test_draw.py",
    "test_cli.py",
    "test_packaging.py",
)


@dataclass
class Workspace:
    root: Path
    venv: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def env(self) -> Dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
        }
        env["PATH"] = str(self.venv / "bin") + os.pathsep + env.get("PATH", "")
        env["VIRTUAL_ENV"] = str(self.venv)
        env["PYTHONHASHSEED"] = "0"
        env["LAYOUTPROOF_EXAMPLES_SCALE"] = "1"
        return env


def _site_packages(venv: Path) -> Path:
    found = sorted((venv / "lib").glob("python3*/site-packages"))
    if not found:
        raise SystemExit(f"no site-packages under {venv}")
    return found[0]


def _export_git(src: Path, rev: str, repo: Path) -> None:
    """The tree of commit ``rev`` (``git archive``: reads the repository, writes nothing there)."""
    repo.mkdir(parents=True)
    with tempfile.TemporaryFile() as tmp:
        subprocess.run(["git", "-C", str(src), "archive", "--format=tar", rev], stdout=tmp, check=True)
        tmp.seek(0)
        with tarfile.open(fileobj=tmp) as tar:
            tar.extractall(repo, filter="data")


def make_workspace(
    src: Path, dest: Path, dev_venv: Path, rev: Optional[str] = None, overlay: Sequence[str] = ()
) -> Workspace:
    """Copy ``src`` (its working tree, or the commit ``rev`` plus the working-tree paths of
    ``overlay``) to ``dest/repo`` and build ``dest/venv``: the dev venv's packages (linked,
    layoutproof left out) plus an editable install of the copy."""
    repo = dest / "repo"
    if rev is None:
        shutil.copytree(src, repo, ignore=IGNORE, symlinks=True)
    else:
        _export_git(src, rev, repo)
        for rel in overlay:
            s, d = src / rel, repo / rel
            if s.is_dir():
                shutil.copytree(s, d, ignore=IGNORE, dirs_exist_ok=True)
            elif s.is_file():
                d.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(s, d)
            else:
                raise SystemExit(f"--overlay {rel}: no such path in {src}")
    venv = dest / "venv"
    base = Path(os.path.realpath(sys.base_prefix)) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True)
    sp_dev, sp_new = _site_packages(dev_venv), _site_packages(venv)
    for entry in sorted(sp_dev.iterdir()):
        low = entry.name.lower()
        if "layoutproof" in low or low == "__pycache__":
            continue
        os.symlink(entry, sp_new / entry.name)
    ws = Workspace(repo, venv)
    r = subprocess.run(
        [
            ws.python,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-e",
            str(repo),
        ],
        cwd=repo,
        env=ws.env(),
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise SystemExit(f"editable install of the workspace failed:\n{r.stdout}\n{r.stderr}")
    r = subprocess.run(
        [
            ws.python,
            "-c",
            "import layoutproof, layoutproof.verify;"
            "print(layoutproof.__file__); print(layoutproof.verify.__file__)",
        ],
        cwd=repo,
        env=ws.env(),
        capture_output=True,
        text=True,
    )
    files = r.stdout.split()
    if (
        r.returncode != 0
        or len(files) != 2
        or not all(Path(f).resolve().is_relative_to(repo.resolve()) for f in files)
    ):
        raise SystemExit(f"the workspace imports the wrong layoutproof: {r.stdout}{r.stderr}")
    return ws


def test_files(repo: Path, exclude: Sequence[str] = ()) -> List[str]:
    # tests are arranged by layer (tests/<layer>/test_*.py); the names stay unique
    where = {
        p.name: p.relative_to(repo).as_posix()
        for p in (repo / "tests").rglob("test_*.py")
        if not any(fnmatch.fnmatchcase(p.name, x) for x in exclude)
    }
    present = sorted(where)
    head = [f for f in TEST_HEAD if f in present]
    tail = [f for f in TEST_TAIL if f in present]
    middle = [f for f in present if f not in head and f not in tail]
    return [where[f] for f in head + middle + tail]


def catalog_available(ws: Workspace) -> bool:
    """Does the workspace's ``layoutproof`` command have a ``prove`` sub-command?"""
    r = subprocess.run(
        [ws.python, "-c", "import layoutproof.cli as c; print('prove' in getattr(c, 'EXTERNAL', {}))"],
        cwd=ws.root,
        env=ws.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.returncode == 0 and r.stdout.strip() == "True"


@dataclass
class Stage:
    name: str
    argv: List[str]


def make_stages(
    ws: Workspace, mode: str, catalog_args: Sequence[str], exclude: Sequence[str] = ()
) -> List[Stage]:
    stages: List[Stage] = []
    if mode in ("both", "tests"):
        stages.append(
            Stage(
                "tests",
                [
                    ws.python,
                    "-m",
                    "pytest",
                    "-x",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "--no-header",
                    "-o",
                    "addopts=",
                ]
                + test_files(ws.root, exclude),
            )
        )
    if mode in ("both", "catalog"):
        if catalog_available(ws):
            stages.append(Stage("catalog", [ws.python, "-m", "layoutproof", "prove", *catalog_args]))
        elif mode == "catalog":
            raise SystemExit("--catalog-only: the workspace has no 'layoutproof prove' (proofs/ catalog)")
    return stages


# ============================================================================= running
@dataclass
class StageRun:
    stage: str
    rc: Optional[int]  # None: timed out
    seconds: float
    tail: str


# Process groups of the stages running now (each stage runs in a session of its own), so
# that an interrupted run ends exactly the processes it started.
_LIVE: set = set()
_STOP = threading.Event()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _on_signal(signum: int, _frame: object) -> None:
    _STOP.set()
    for pgid in list(_LIVE):
        _kill_group(pgid)
    raise SystemExit(128 + signum)


def run_stage(ws: Workspace, st: Stage, timeout: float) -> StageRun:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        st.argv,
        cwd=ws.root,
        env=ws.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    _LIVE.add(proc.pid)
    try:
        out, _ = proc.communicate(timeout=max(1.0, timeout))
        rc: Optional[int] = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)  # the stage's own process group only
        out, _ = proc.communicate()
        rc = None
    finally:
        _LIVE.discard(proc.pid)
    lines = [ln for ln in (out or "").splitlines() if ln.strip()]
    return StageRun(st.name, rc, time.monotonic() - t0, "\n".join(lines[-6:]))


@dataclass
class Outcome:
    name: str
    category: str
    status: str  # killed / timeout / survived / error
    killed_by: Optional[str]
    seconds: float
    stages: List[StageRun] = field(default_factory=list)


def _drop_pyc(path: Path) -> None:
    for pyc in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
        pyc.unlink(missing_ok=True)


def apply(ws: Workspace, m: Mutation) -> str:
    """Apply ``m`` in the workspace; returns the original text for :func:`revert`."""
    path = ws.root / m.file
    text = path.read_text()
    if text.count(m.original) != 1:
        raise RuntimeError(f"{m.name}: the snippet occurs {text.count(m.original)} times in {m.file}")
    path.write_text(text.replace(m.original, m.replacement))
    _drop_pyc(path)
    return text


def revert(ws: Workspace, m: Mutation, text: str) -> None:
    path = ws.root / m.file
    path.write_text(text)
    _drop_pyc(path)


def run_kill(
    ws: Workspace, stages: List[Stage], timeout: float, all_stages: bool, name: str = "", category: str = ""
) -> Outcome:
    t0 = time.monotonic()
    runs: List[StageRun] = []
    killed_by: Optional[str] = None
    status = "survived"
    for st in stages:
        left = timeout - (time.monotonic() - t0) if not all_stages else timeout
        if left <= 0:
            status = "timeout" if status == "survived" else status
            break
        r = run_stage(ws, st, left)
        runs.append(r)
        if r.rc is None:
            if status == "survived":
                status, killed_by = "timeout", st.name
        elif r.rc != 0 and status == "survived":
            status, killed_by = "killed", st.name
        if status != "survived" and not all_stages:
            break
    return Outcome(name, category, status, killed_by, time.monotonic() - t0, runs)


def check_mutations(src: Path, mutations: Sequence[Mutation]) -> List[str]:
    """Problems with the mutation list against the source tree (empty when all apply)."""
    problems = []
    names = [m.name for m in mutations]
    for n in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"duplicate mutation name {n}")
    for m in mutations:
        path = src / m.file
        if not path.is_file():
            problems.append(f"{m.name}: no file {m.file}")
            continue
        text = path.read_text()
        c = text.count(m.original)
        if c != 1:
            problems.append(f"{m.name}: snippet occurs {c} times in {m.file}")
            continue
        if m.original == m.replacement:
            problems.append(f"{m.name}: replacement equals the original")
            continue
        try:
            compile(text.replace(m.original, m.replacement), str(path), "exec")
        except SyntaxError as e:
            problems.append(f"{m.name}: the mutant does not compile: {e}")
    return problems


def select(mutations: Sequence[Mutation], only: Sequence[str]) -> List[Mutation]:
    if not only:
        return list(mutations)
    pats = [p for o in only for p in o.split(",") if p]
    out = [m for m in mutations if any(fnmatch.fnmatchcase(m.name, p) for p in pats)]
    missing = [p for p in pats if not any(fnmatch.fnmatchcase(m.name, p) for m in mutations)]
    if missing:
        raise SystemExit(f"no mutation named {', '.join(missing)} (see --list)")
    return out


# ============================================================================= reports
def score(
    outcomes: Sequence[Outcome], by_name: Dict[str, Mutation], killed_fn: Optional[object] = None
) -> Dict[str, object]:
    """Killed / (all - surviving declared equivalents)."""

    def is_killed(o: Outcome) -> bool:
        if killed_fn is not None:
            return bool(killed_fn(o))  # type: ignore[operator]
        return o.status in ("killed", "timeout")

    killed = [o.name for o in outcomes if is_killed(o)]
    equiv = [o.name for o in outcomes if not is_killed(o) and by_name[o.name].equivalent]
    survivors = [o.name for o in outcomes if not is_killed(o) and not by_name[o.name].equivalent]
    denom = len(outcomes) - len(equiv)
    return {
        "killed": len(killed),
        "equivalent_survivors": equiv,
        "survivors": survivors,
        "denominator": denom,
        "score": (len(killed) / denom) if denom else None,
    }


def _stage_killed(stage: str) -> object:
    def f(o: Outcome) -> bool:
        return any(r.stage == stage and (r.rc is None or r.rc != 0) for r in o.stages)

    return f


def build_report(
    outcomes: List[Outcome],
    mutations: Dict[str, Mutation],
    meta: Dict[str, object],
    all_stages: bool,
    stage_names: List[str],
) -> Dict[str, object]:
    report: Dict[str, object] = {"meta": meta, "combined": score(outcomes, mutations)}
    if all_stages:
        for st in stage_names:
            report[f"{st}_only"] = score(outcomes, mutations, _stage_killed(st))
    report["killed_by_stage"] = {st: sum(1 for o in outcomes if o.killed_by == st) for st in stage_names}
    report["timeouts"] = [o.name for o in outcomes if o.status == "timeout"]
    report["equivalents_killed"] = [
        o.name for o in outcomes if mutations[o.name].equivalent and o.status != "survived"
    ]
    report["mutants"] = [
        {
            **asdict(o),
            "file": mutations[o.name].file,
            "description": mutations[o.name].description,
            "equivalent": mutations[o.name].equivalent,
        }
        for o in outcomes
    ]
    return report


def _pct(x: object) -> str:
    return "n/a" if x is None else f"{100 * float(x):.1f}%"  # type: ignore[arg-type]


def markdown(report: Dict[str, object], mutations: Dict[str, Mutation]) -> str:
    meta: Dict[str, Any] = report["meta"]  # type: ignore[assignment]
    lines = [
        "# Mutation run",
        "",
        f"- date: {meta['date']}; machine: {meta['machine']}; wall time {meta['wall_seconds']:.0f} s",
        f"- command: `{meta['command']}`",
        f"- stages: {', '.join(meta['stages']) or 'none'}; per-mutant limit {meta['timeout']:.0f} s; "
        f"baseline {meta['baseline_seconds']:.1f} s",
        f"- mutants: {meta['mutants']}",
        "",
    ]
    lines += ["| measure | killed | denominator | score |", "|---|---:|---:|---:|"]
    for key in ("combined", "tests_only", "catalog_only"):
        s = report.get(key)
        if isinstance(s, dict):
            lines.append(f"| {key} | {s['killed']} | {s['denominator']} | {_pct(s['score'])} |")
    lines.append("")
    lines.append(f"Killed by stage: {report['killed_by_stage']}; timeouts: {report['timeouts'] or 'none'}")
    comb: Dict[str, Any] = report["combined"]  # type: ignore[assignment]
    lines += ["", "## Survivors", ""]
    for n in comb["survivors"]:
        lines.append(f"- `{n}` ({mutations[n].file}): {mutations[n].description}")
    if not comb["survivors"]:
        lines.append("none")
    lines += ["", "## Equivalent mutants (surviving, excluded from the denominator)", ""]
    for n in comb["equivalent_survivors"]:
        lines.append(f"- `{n}`: {mutations[n].equivalent}")
    if not comb["equivalent_survivors"]:
        lines.append("none")
    if report["equivalents_killed"]:
        lines += ["", f"Declared equivalent but killed: {report['equivalents_killed']}"]
    lines += [
        "",
        "## All mutants",
        "",
        "| mutant | category | status | stage | s |",
        "|---|---|---|---|---:|",
    ]
    muts: List[Dict[str, Any]] = report["mutants"]  # type: ignore[assignment]
    for o in muts:
        lines.append(
            f"| {o['name']} | {o['category']} | {o['status']} | {o['killed_by'] or ''} | {o['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


# ============================================================================= main
def _machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def _git_head(src: Path) -> str:
    try:
        r = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return r.stdout.strip()
    except OSError:
        return ""


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        description="Mutation testing of the layoutproof algebra (a measurement; see the module docstring)."
    )
    p.add_argument("--list", action="store_true", help="list the mutations and exit")
    p.add_argument("--check", action="store_true", help="check that every mutation applies, and exit")
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="run only these mutations (repeatable, comma-separated, glob patterns)",
    )
    p.add_argument("--jobs", type=int, default=2, help="mutants in parallel (default 2)")
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per mutant (default: 3x the baseline, at least 120)",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--tests-only", action="store_true", help="kill command: the test suite only")
    g.add_argument("--catalog-only", action="store_true", help="kill command: layoutproof prove only")
    p.add_argument(
        "--all-stages",
        action="store_true",
        help="run every stage on every mutant (per-stage scores in one run)",
    )
    p.add_argument("--catalog-args", default="", help="extra arguments of 'layoutproof prove'")
    p.add_argument(
        "--exclude-test",
        action="append",
        default=[],
        metavar="FILE",
        help="leave a test file out of the kill command (glob; e.g. work in progress "
        "that fails on the unmutated tree)",
    )
    p.add_argument("--src", type=Path, default=REPO, help="the repository to copy (never written)")
    p.add_argument(
        "--from-git",
        metavar="REV",
        default=None,
        help="copy the tree of this commit instead of the working tree (a stable "
        "snapshot while others edit); add working-tree paths with --overlay",
    )
    p.add_argument(
        "--overlay",
        action="append",
        default=[],
        metavar="PATH",
        help="with --from-git: working-tree files or folders copied over the snapshot",
    )
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="the development venv to link")
    p.add_argument("--workdir", type=Path, default=None, help="where the workspaces go (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the workspaces")
    p.add_argument("--out", type=Path, default=REPO / "build" / "mutation", help="report folder")
    args = p.parse_args(argv)

    if args.list:
        for m in MUTATIONS:
            eq = "  [declared equivalent]" if m.equivalent else ""
            print(f"{m.name:36s} {m.category:20s} {m.file:22s} {m.description}{eq}")
        cats: Dict[str, int] = {}
        for m in MUTATIONS:
            cats[m.category] = cats.get(m.category, 0) + 1
        print(f"\n{len(MUTATIONS)} mutations: " + ", ".join(f"{k} {v}" for k, v in cats.items()))
        return 0
    src = args.src.resolve()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            ref = src
            if args.from_git:
                ref = Path(tmp) / "repo"
                _export_git(src, args.from_git, ref)
            problems = check_mutations(ref, MUTATIONS)
        if problems:
            print("mutations that do not apply:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 2
        at = f" @ {args.from_git}" if args.from_git else ""
        print(f"all {len(MUTATIONS)} mutations apply to {src}{at}")
        return 0
    chosen = select(MUTATIONS, args.only)
    mode = "tests" if args.tests_only else "catalog" if args.catalog_only else "both"
    started = time.monotonic()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="layoutproof-mut-"))
    workdir.mkdir(parents=True, exist_ok=True)
    jobs = max(1, min(args.jobs, len(chosen)))
    print(f"workspaces in {workdir} ({jobs})", flush=True)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    workspaces = [
        make_workspace(src, workdir / f"ws{i}", args.venv, args.from_git, args.overlay) for i in range(jobs)
    ]
    ws_stages = {
        ws.root: make_stages(ws, mode, shlex.split(args.catalog_args), args.exclude_test) for ws in workspaces
    }
    stages = ws_stages[workspaces[0].root]
    if not stages:
        print("no kill command: no tests stage and no catalog", file=sys.stderr)
        return 2
    problems = check_mutations(workspaces[0].root, MUTATIONS)
    if problems:
        print("mutations that do not apply:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    pristine = {m.file: (workspaces[0].root / m.file).read_text() for m in chosen}
    print("stages: " + "; ".join(f"{s.name}: {' '.join(s.argv[1:7])} ..." for s in stages), flush=True)
    base = run_kill(workspaces[0], stages, 3600, all_stages=True, name="baseline")
    if base.status != "survived":
        print("the unmutated workspace fails the kill command (baseline):", file=sys.stderr)
        for r in base.stages:
            print(f"--- {r.stage}: rc={r.rc}\n{r.tail}", file=sys.stderr)
        return 2
    timeout = args.timeout or max(120.0, 3 * base.seconds)
    print(
        f"baseline passes in {base.seconds:.1f} s; per-mutant limit {timeout:.0f} s; {len(chosen)} mutants",
        flush=True,
    )

    free: "queue.Queue[Workspace]" = queue.Queue()
    for ws in workspaces:
        free.put(ws)
    lock = threading.Lock()
    done: List[Outcome] = []

    def one(m: Mutation) -> Outcome:
        if _STOP.is_set():
            return Outcome(m.name, m.category, "cancelled", None, 0.0)
        ws = free.get()
        try:
            st = ws_stages[ws.root]
            text = apply(ws, m)
            try:
                o = run_kill(ws, st, timeout, args.all_stages, m.name, m.category)
            finally:
                revert(ws, m, text)
            with lock:
                done.append(o)
                print(
                    f"[{len(done):3d}/{len(chosen)}] {m.name:36s} {o.status:8s} "
                    f"{o.killed_by or '':8s} {o.seconds:6.1f} s",
                    flush=True,
                )
            return o
        finally:
            free.put(ws)

    stage_names = [s.name for s in stages]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        outcomes = list(ex.map(one, chosen))
    # the workspaces must be back to the source text
    for ws in workspaces:
        for m in chosen:
            if (ws.root / m.file).read_text() != pristine[m.file]:
                print(f"error: {m.file} was not restored in {ws.root}", file=sys.stderr)
                break
    by_name = {m.name: m for m in MUTATIONS}
    meta: Dict[str, object] = {
        "date": datetime.date.today().isoformat(),
        "machine": _machine(),
        "command": "python tools/mutation.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "source": str(src),
        "git_head": _git_head(src),
        "from_git": args.from_git,
        "overlay": args.overlay,
        "stages": stage_names,
        "mode": mode,
        "all_stages": args.all_stages,
        "timeout": timeout,
        "baseline_seconds": base.seconds,
        "mutants": len(chosen),
        "jobs": jobs,
        "wall_seconds": time.monotonic() - started,
    }
    report = build_report(outcomes, by_name, meta, args.all_stages, stage_names)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    md = markdown(report, by_name)
    (args.out / "report.md").write_text(md)
    print("\n" + md.split("## All mutants")[0])
    print(f"reports: {args.out / 'report.json'}, {args.out / 'report.md'}")
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
