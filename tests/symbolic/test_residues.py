"""Conditions that depend on their symbols only through residues (every symbol inside
Mod(p, k), p an integer polynomial) are decided by evaluating every residue: proved,
refuted or undecided with a model each way, in milliseconds where Z3's nonlinear modular
arithmetic could spend the whole budget.  Every verdict is checked against brute force."""

import itertools
import random
import time

import pytest
import sympy as sp

from layoutproof import Layout, logical_divide, symbols
from layoutproof.errors import UndecidableConditionError
from layoutproof.symbolic import assuming, decide

M, N = symbols("M N")


def brute(cond, facts, lo=1, hi=37):
    """(holds somewhere the facts hold, fails somewhere the facts hold) over a box."""
    syms = sorted(set().union(cond.free_symbols, *(f.free_symbols for f in facts)), key=str)
    yes = no = False
    for vals in itertools.product(range(lo, hi), repeat=len(syms)):
        at = dict(zip(syms, vals))
        if all(bool(f.xreplace(at)) for f in facts):
            if bool(cond.xreplace(at)):
                yes = True
            else:
                no = True
    return yes, no


def test_a_quadratic_residue_is_proved():
    d = decide(sp.Mod(M**2 + 1, 3) >= 1)  # M^2 mod 3 is 0 or 1
    assert d.value is True and d.method == "residues"
    d = decide(N * sp.Mod(M**2 + 1, 3) >= 1)  # a Mod never 0 times a positive symbol
    assert d.value is True and d.method == "residues"
    d = decide(sp.Eq(sp.Mod(M * (M + 1) * (M + 2), 6), 0))
    assert d.value is True


def test_undecided_with_both_models_quickly():
    t0 = time.perf_counter()
    with pytest.raises(UndecidableConditionError) as ei:
        logical_divide(Layout(((M**2 + 1) % 3, N), (1, M)), Layout(M + 1, 3))
    assert time.perf_counter() - t0 < 10  # the budget (20 s) no longer sets the time
    e = ei.value
    assert e.example is not None and e.counterexample is not None


@pytest.mark.parametrize("seed", range(6))
def test_random_periodic_conditions_against_brute_force(seed):
    rng = random.Random(seed)
    for _ in range(25):
        k = rng.choice([2, 3, 4, 5, 6])
        p = rng.randint(0, 3) * M**2 + rng.randint(0, 3) * M * N + rng.randint(0, 3) * N + rng.randint(0, 5)
        rel = rng.choice([sp.Eq, sp.Ne, sp.Ge, sp.Lt])
        cond = rel(sp.Mod(p, k), rng.randint(0, k - 1))
        if cond in (sp.true, sp.false):
            continue
        facts = []
        if rng.random() < 0.5:
            facts = [sp.Eq(sp.Mod(M + rng.randint(0, 3), rng.choice([2, 3, 4])), 0)]
        with assuming(*facts):
            d = decide(cond)
        yes, no = brute(cond, facts)
        if d.value is True:
            assert not no, (cond, facts)
        elif d.value is False:
            assert not yes, (cond, facts)
        else:
            assert yes and no, (cond, facts, d.method)
        for model in (d.example, d.counterexample):
            if model and d.method == "residues":
                at = {
                    s: model[str(s)]
                    for s in cond.free_symbols | set().union(*(f.free_symbols for f in facts))
                }
                assert all(bool(f.xreplace(at)) for f in facts)
        if d.example and d.method == "residues":
            assert bool(cond.xreplace({s: d.example[str(s)] for s in cond.free_symbols}))
        if d.counterexample and d.method == "residues":
            assert not bool(cond.xreplace({s: d.counterexample[str(s)] for s in cond.free_symbols}))


def test_a_symbol_outside_every_mod_is_left_to_the_solver():
    with assuming("M % 8 == 0", N >= 16):
        d = decide(M * N >= 128)
    assert d.value is True and d.method == "z3"


def test_only_integer_symbols_and_integer_polynomials_are_read_by_residues():
    from layoutproof.symbolic import _mod_abstraction_value, _residue_value

    x = sp.Symbol("x", real=True)  # x**2 + 1 is 3 at x = sqrt(2): never 0 mod 3 only on integers
    assert _residue_value(sp.Ne(sp.Mod(x**2 + 1, 3), 0)) is None
    half = sp.Mod(M / 2, 3)  # not an integer: 1/2 at M = 1
    assert _residue_value(half >= 0) is None
    claim = sp.Ne(half, sp.Rational(1, 2))  # false at M = 1
    assert _mod_abstraction_value(claim) is None


def test_nested_mods_are_periodic_too() -> None:
    """A symbol inside a Mod around another Mod (``Mod(M**2 + Mod(N, 3), 6)``) is periodic:
    decided by residues at once, even where a bound in the facts keeps Z3 busy."""
    M, N = symbols("M N")
    c = sp.Ge(sp.Mod(M**2 + sp.Mod(N, 3), 6), sp.Mod(M, 2))  # odd M: M**2 % 6 is 1 or 3
    d = decide(c, (sp.Ge(N, 8), sp.Eq(sp.Mod(N, 8), 2)))
    assert (d.value, d.method) == (True, "residues")
    d = decide(sp.Eq(sp.Mod(M**2 + 5 * sp.Mod(M, 3), 2), 0))
    assert d.value is None and d.counterexample is not None and d.example is not None
    # a quotient or a symbolic modulus inside is not periodic: left to the solver
    assert decide(sp.Eq(sp.Mod(sp.Mod(M, N) + M, 4), 0), use_z3=False).method != "residues"
    assert decide(sp.Eq(sp.Mod(sp.Mod(M / 2, 3) * 2, 4), 0), use_z3=False).method != "residues"


def test_a_rational_inside_a_mod_is_periodic() -> None:
    """``Mod(K*N + 3/2, 3)`` is a half-integer, never 2: periodic with period 2*3."""
    K = sp.Symbol("K", integer=True)
    N = sp.Symbol("N", integer=True, nonnegative=True)
    d = decide(sp.Ne(sp.Mod(K * N + sp.Rational(3, 2), 3), 2), (sp.Eq(sp.Mod(N, 3), 0), sp.Le(K, 3)))
    assert (d.value, d.method) == (True, "residues")
    M = symbols("M")
    d = decide(sp.Ne(sp.Mod(M / 2, 3), sp.Rational(1, 2)))
    assert (d.value, d.counterexample, d.example) == (None, {"M": 1}, {"M": 2})


def test_an_equation_with_no_solution_modulo_k() -> None:
    M, N, K = symbols("M N K")
    d = decide(sp.Eq((M - N) ** 2, 3))  # a square is 0 or 1 mod 4
    assert (d.value, d.method) == (False, "residues") and d.counterexample is not None
    assert decide(sp.Ne(M**2 + N**2, 4 * K + 3)).value is True
    assert decide(sp.Ne(M**2, 2 * N**2), use_z3=False).value is None  # 0 mod every k: not this way
