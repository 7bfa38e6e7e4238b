"""symbolic.as_python writes a Mod inside a sum or a product with Python's own operator, so the
text runs as Python and means the condition."""

import sympy as sp

from layoutproof.symbolic import as_python


def test_mod_inside_sums_and_products_is_python():
    M, N = sp.symbols("M N", integer=True, positive=True)
    cases = [
        sp.Eq(M * sp.Mod(2, M + 1), 0),
        sp.Eq(M * sp.Mod(2, M + 1) + 3 * sp.Mod(N, 4) - 1, 0),
        sp.Eq(sp.Mod(M * N + 1, 8), 0),
    ]
    for c in cases:
        text = as_python(c)
        assert "Mod(" not in text, text
        for m in range(1, 7):
            for n in range(1, 7):
                assert bool(c.subs({M: m, N: n})) == eval(text, {"M": m, "N": n}), (text, m, n)
