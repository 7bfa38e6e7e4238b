"""Refit the coefficients of the emitted GELU (``lp_act_gelu`` in ``gpu/proof/kir.py``).

The kernels evaluate ``gelu(x) = relu(x) - |x| h`` with ``h = Phi(-|x|) = erfc(z) / 2``,
``z = |x| / sqrt 2``, written as ``h = t P(t) exp(-z^2)``, ``t = 1 / (1 + p z)``.  ``P`` is a
polynomial in ``t`` of degree ``--degree`` whose relative error against ``erfcx(z) / (2 t)``
is minimised where ``h > 1e-30`` (``|x| < 11.3``; below that the float32 exponential is
flushed to 0 anyway) by Lawson's iteration on a weighted least-squares fit at Chebyshev
nodes in ``t``, values from mpmath.  Prints the largest relative error, the float32
constants in the helper's order (highest power first) and the scale ``p / sqrt 2``.

    python tools/gelu_fit.py [--degree 6] [--p 0.5]
"""

from __future__ import annotations

import argparse

import mpmath as mp
import numpy as np


def _target(t: float, p: float):
    z = (1 / mp.mpf(t) - 1) / p
    return float(mp.erfc(z) * mp.exp(z * z) / (2 * t)), mp.erfc(z) / 2 > mp.mpf("1e-30")


def fit(degree: int, p: float, nodes: int = 1500, iters: int = 300):
    t = np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes) * 0.5 + 0.5
    t = np.concatenate([t, [1.0]])
    vals = [_target(v, p) for v in t]
    keep = np.array([k for _, k in vals])
    t, y = t[keep], np.array([v for v, _ in vals])[keep]
    V = np.vander(t, degree + 1, increasing=True)
    w = np.ones_like(t)
    best = (np.inf, None)
    for _ in range(iters):
        c, *_ = np.linalg.lstsq(V / y[:, None] * np.sqrt(w)[:, None], np.sqrt(w), rcond=None)
        r = np.abs(V @ c / y - 1)
        if r.max() < best[0]:
            best = (float(r.max()), c)
        w = w * (r + 1e-300)
        w /= w.sum()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--degree", type=int, default=6)
    ap.add_argument("--p", type=float, default=0.5)
    args = ap.parse_args()
    mp.mp.dps = 30
    err, c = fit(args.degree, args.p)
    print(f"degree {args.degree}, p {args.p}: largest relative error {err:.2e}")
    print("scale", repr(np.float32(args.p / np.sqrt(2))))
    print("coefficients (highest first):", ", ".join(repr(float(np.float32(v))) for v in c[::-1]))


if __name__ == "__main__":
    main()
